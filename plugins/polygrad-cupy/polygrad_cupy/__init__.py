"""polygrad backend plugin for CuPy (CUDA GPUs).

Thin bindings: the namespace is ``array_api_compat.cupy``; cupy is imported
inside the hooks only. ``polygrad_check_usable`` says precisely why the
backend cannot run: cupy not installed (without importing anything), or
installed but no CUDA driver or device (``cupy.cuda.runtime.getDeviceCount()``
raises ``CUDARuntimeError`` where a first allocation would). It allocates
nothing.

What the standard lacks: random numbers (``cupy.random.default_rng``),
scatter-add with repeated indices summed (``cupy.add.at``), a device
synchronize for timing, and memory statistics from cupy's default memory pool.
Where cupy departs from the standard, a kernel says so: ``linalg.solve``
broadcasts the batch dimensions.
"""

from __future__ import annotations

import importlib.util

from polygrad.hookspecs import BackendInfo, hookimpl

NAME = "cupy"
INSTALL_HINT = "pip install 'polygrad-cupy[cuda12]', or [cuda13] or [cuda11] for CUDA 13 or 11"


@hookimpl
def polygrad_backend_info():
    return BackendInfo(name=NAME, module="cupy", device="gpu", lazy=False, inplace=True, priority=50)


def usable() -> tuple[bool, str]:
    """``(True, "")`` when cupy imports and sees a CUDA device, else ``(False, why)``."""
    if importlib.util.find_spec("cupy") is None:
        return (False, f"no usable GPU: cupy is not installed; {INSTALL_HINT}")
    try:
        import cupy
    except Exception as exc:  # a broken install: missing CUDA libraries, wrong wheel for the driver
        return (False, f"no usable GPU: cupy is installed but cannot be imported ({type(exc).__name__}: {exc})")
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # CUDARuntimeError: no driver, no device, driver too old
        return (False, f"no usable GPU: cupy is installed but CUDA reports no usable device "
                       f"({type(exc).__name__}: {exc})")
    if count < 1:
        return (False, "no usable GPU: cupy is installed but CUDA reports 0 devices")
    return (True, "")


@hookimpl
def polygrad_check_usable():
    return usable()


@hookimpl
def polygrad_array_namespace():
    import array_api_compat.cupy as xp

    return xp


@hookimpl
def polygrad_array_types():
    import cupy

    return (cupy.ndarray,)


class _Generator:
    def __init__(self, seed):
        import cupy

        self._rng = cupy.random.default_rng(seed)

    def normal(self, shape, *, dtype, mean=0.0, std=1.0):
        x = self._rng.standard_normal(size=tuple(shape), dtype=dtype)
        return x * std + mean if (mean, std) != (0.0, 1.0) else x

    def uniform(self, shape, *, dtype, low=0.0, high=1.0):
        x = self._rng.random(size=tuple(shape), dtype=dtype)
        return x * (high - low) + low if (low, high) != (0.0, 1.0) else x


@hookimpl
def polygrad_random_generator(seed):
    return _Generator(seed)


def scatter_add(x, key, values):
    """A copy of ``x`` with ``values`` added at ``x[key]``, repeated indices summed."""
    import cupy
    import cupyx

    out = cupy.array(x, copy=True)
    add_at = getattr(cupy.add, "at", None)  # cupy >= 14; cupyx.scatter_add is deprecated there
    if add_at is not None:
        add_at(out, key, values)
    else:
        cupyx.scatter_add(out, key, values)
    return out


def solve(x1, x2):
    """``linalg.solve`` with the standard's broadcasting of the batch dimensions (cupy's own
    needs them equal: ``solve(a[2, 3, 3], b[3, 2])`` raises). Written with the standard."""
    from array_api_compat import array_namespace

    from polygrad import broadcast_shapes

    xp = array_namespace(x1, x2)
    if x2.ndim >= 2 and tuple(x1.shape[:-2]) != tuple(x2.shape[:-2]):
        batch = broadcast_shapes(tuple(x1.shape[:-2]), tuple(x2.shape[:-2]))
        x1 = xp.broadcast_to(x1, batch + tuple(x1.shape[-2:]))
        x2 = xp.broadcast_to(x2, batch + tuple(x2.shape[-2:]))
    return xp.linalg.solve(x1, x2)


@hookimpl
def polygrad_kernels():
    return {"linalg_solve": solve}


@hookimpl
def polygrad_scatter_add():
    return scatter_add


@hookimpl
def polygrad_synchronize():
    import cupy

    cupy.cuda.Stream.null.synchronize()
    cupy.cuda.Device().synchronize()
    return True


@hookimpl
def polygrad_memory_stats():
    import cupy

    pool = cupy.get_default_memory_pool()
    return {"used": int(pool.used_bytes()), "total": int(pool.total_bytes())}


@hookimpl
def polygrad_fuse_elementwise(nodes, inputs, outputs):
    """The group as one ElementwiseKernel (``polygrad_cupy.fuse``)."""
    from polygrad_cupy import fuse

    return fuse.build(nodes, inputs, outputs)

"""polygrad backend plugin for NumPy (CPU).

Thin bindings: the namespace is ``array_api_compat.numpy``; numpy is imported
inside the hooks only, so registering this plugin imports nothing heavy.
"""

from __future__ import annotations

from polygrad.hookspecs import BackendInfo, hookimpl

NAME = "numpy"


@hookimpl
def polygrad_backend_info():
    return BackendInfo(name=NAME, module="numpy", device="cpu", lazy=False, inplace=True, priority=100)


@hookimpl
def polygrad_check_usable():
    import importlib.util

    if importlib.util.find_spec("numpy") is None:  # cheap: does not import numpy
        return (False, "numpy is not installed")
    return (True, "")


@hookimpl
def polygrad_array_namespace():
    import array_api_compat.numpy as xp

    return xp


@hookimpl
def polygrad_array_types():
    import numpy as np

    # numpy scalars (np.float64(1.0)) come out of reductions; they are arrays to us.
    return (np.ndarray, np.generic)


class _Generator:
    """Draws of float32 and narrower dtypes are made in float32 and scaled in place: a float64 draw
    cast down took three times the result's memory (F.dropout of a 4 MB batch peaked at 12 MB).
    Other dtypes are drawn in float64. A uniform draw rounded up to ``high`` is brought below it
    by the host (polygrad._registry._HalfOpen), for every plugin."""

    def __init__(self, seed):
        import numpy as np

        self._np = np
        self._rng = np.random.default_rng(seed)
        self._f32_max = float(np.finfo(np.float32).max)

    def _narrow(self, dtype):
        dt = self._np.dtype(dtype)
        return dt.kind == "f" and dt.itemsize <= 4

    def normal(self, shape, *, dtype, mean=0.0, std=1.0):
        if not self._narrow(dtype) or std < 0:  # (numpy's normal refuses a negative std)
            return self._rng.normal(mean, std, size=shape).astype(dtype, copy=False)
        out = self._rng.standard_normal(shape, dtype=self._np.float32)
        out *= std
        out += mean
        return out.astype(dtype, copy=False)

    def uniform(self, shape, *, dtype, low=0.0, high=1.0):
        if not self._narrow(dtype) or not abs(high - low) <= self._f32_max:  # (a range past float32's: in float64)
            return self._rng.uniform(low, high, size=shape).astype(dtype, copy=False)
        out = self._rng.random(shape, dtype=self._np.float32)
        out *= high - low
        out += low
        return out.astype(dtype, copy=False)


@hookimpl
def polygrad_random_generator(seed):
    return _Generator(seed)


def _scatter_add(x, key, values):
    import numpy as np

    out = np.array(x, copy=True)
    np.add.at(out, key, values)
    return out


@hookimpl
def polygrad_scatter_add():
    return _scatter_add


@hookimpl
def polygrad_save_npz(file, arrays, compressed):
    import numpy as np

    (np.savez_compressed if compressed else np.savez)(file, **{k: np.asarray(v) for k, v in arrays.items()})
    return True


class _NoFile:
    """What polygrad_load_npz answers for file=None: 'yes, this backend reads .npz'."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@hookimpl
def polygrad_load_npz(file):
    if file is None:
        return _NoFile()
    import numpy as np

    return np.load(file, allow_pickle=False)


@hookimpl
def polygrad_memory_stats():
    """Bytes traced by tracemalloc (numpy reports its buffers to it), while it traces."""
    import tracemalloc

    if not tracemalloc.is_tracing():
        return None
    used, peak = tracemalloc.get_traced_memory()
    return {"used": used, "peak": peak}


def _owns_memory(a):
    return getattr(a, "base", 1) is None and a.flags.writeable


@hookimpl
def polygrad_owns_memory():
    return _owns_memory


def _sum(x, /, *, axis=None, dtype=None, keepdims=False):
    """``numpy.sum`` as the array's method: the function's own Python path costs about 2 us
    a call (numpy.sum calls this very method, or a subclass's)."""
    return x.sum(axis=axis, dtype=dtype, keepdims=keepdims)


def _matrix_transpose(x, /):
    """The view with the last two axes swapped (ValueError below two dimensions), without
    array_api_compat's wrapper: 0.2 us against 1.4 us. Every matmul backward calls it."""
    return x.mT


@hookimpl
def polygrad_kernels():
    import numpy as np

    # array_api_compat.numpy hands out numpy's own ufuncs (exp, log, sin, ...), so
    # those need no entry; its matmul is a Python wrapper that calls np.matmul, and
    # sum and matrix_transpose (which the gradient rules call often) have cheaper forms.
    return {"matmul": np.matmul, "sum": _sum, "matrix_transpose": _matrix_transpose}


@hookimpl
def polygrad_fuse_elementwise(nodes, inputs, outputs):
    """A fused kernel with numexpr (see ``polygrad_numpy.fuse``); declined without numexpr,
    for small arrays, or where no step would compute more than one node."""
    from polygrad_numpy import fuse

    numexpr = fuse.numexpr_module()
    if numexpr is None:
        return None
    return fuse.build(nodes, inputs, outputs, numexpr=numexpr)

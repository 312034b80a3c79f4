"""polygrad backend plugin for array_api_strict: a complete out-of-tree example.

array_api_strict implements the Python Array API standard and nothing else,
which makes it the smallest honest backend: everything polygrad needs beyond
the standard (random numbers, scatter-add) is provided here. Copy this file
and rename it to wrap your own array library (see conformance/README.md).

Rules kept (polygrad/hookspecs.py): nothing heavy is imported at module level;
every hook answers only for this plugin's backend name and returns None
otherwise.
"""

from __future__ import annotations

import importlib.util

from polygrad.backends import BackendInfo
from polygrad.hookspecs import hookimpl

NAME = "strict_v0_1"


@hookimpl
def polygrad_backend_info():
    # Static facts, answered without importing the library. A negative
    # priority: never the default backend, only used when asked for by name.
    return BackendInfo(name=NAME, module="array_api_strict", device="cpu", lazy=False, inplace=True, priority=-10)


@hookimpl
def polygrad_check_usable(backend):
    if backend != NAME:
        return None
    if importlib.util.find_spec("array_api_strict") is None:  # cheap: no import
        return (False, "array_api_strict is not installed (pip install array-api-strict)")
    return (True, "")


@hookimpl
def polygrad_array_namespace(backend):
    if backend != NAME:
        return None
    import array_api_strict

    return array_api_strict


@hookimpl
def polygrad_array_types(backend):
    if backend != NAME:
        return None
    import array_api_strict

    return (type(array_api_strict.asarray(0.0)),)


# ---------------------------------------------------------------------------
# What the standard lacks. array_api_strict is built on numpy, so numpy does
# the work and DLPack carries the arrays across without copies.
# ---------------------------------------------------------------------------


class _Generator:
    """Seeded random arrays (normal, uniform) of the strict backend."""

    def __init__(self, seed):
        import numpy as np

        self._rng = np.random.default_rng(seed)

    def _wrap(self, values, dtype):
        import array_api_strict as xp

        return xp.astype(xp.asarray(values), dtype)

    def normal(self, shape, *, dtype, mean=0.0, std=1.0):
        return self._wrap(self._rng.normal(mean, std, size=tuple(shape)), dtype)

    def uniform(self, shape, *, dtype, low=0.0, high=1.0):
        return self._wrap(self._rng.uniform(low, high, size=tuple(shape)), dtype)


@hookimpl
def polygrad_random_generator(backend, seed):
    if backend != NAME:
        return None
    return _Generator(seed)


def _to_numpy_key(key):
    import numpy as np

    import array_api_strict as xp

    keys = key if isinstance(key, tuple) else (key,)
    out = tuple(np.from_dlpack(k) if isinstance(k, type(xp.asarray(0))) else k for k in keys)
    return out if isinstance(key, tuple) else out[0]


def scatter_add(x, key, values):
    """A copy of ``x`` with ``values`` added at ``x[key]``, repeated indices summed."""
    import numpy as np

    import array_api_strict as xp

    out = np.array(np.from_dlpack(x), copy=True)
    vals = np.from_dlpack(values) if isinstance(values, type(x)) else values
    np.add.at(out, _to_numpy_key(key), vals)
    return xp.asarray(out)


@hookimpl
def polygrad_scatter_add(backend):
    if backend != NAME:
        return None
    return scatter_add

"""Shared fixtures. Registers array_api_strict as a backend through a test-only
plugin (like a third party would), so the core's tests prove it uses only the
Array API standard."""

from __future__ import annotations

import pytest

import polygrad as pg
from polygrad.backends import BackendInfo
from polygrad.hookspecs import hookimpl


class StrictPlugin:
    """A minimal plugin for array_api_strict: no scatter-add hook (the
    standard-only fallback is used) and random numbers made from Python's."""

    @hookimpl
    def polygrad_backend_info(self):
        return BackendInfo(name="array_api_strict", module="array_api_strict", device="cpu", priority=-1)

    @hookimpl
    def polygrad_array_namespace(self, backend):
        if backend == "array_api_strict":
            import array_api_strict

            return array_api_strict

    @hookimpl
    def polygrad_array_types(self, backend):
        if backend == "array_api_strict":
            import array_api_strict

            return (type(array_api_strict.asarray(0.0)),)

    @hookimpl
    def polygrad_random_generator(self, backend, seed):
        if backend == "array_api_strict":
            return _StrictRandom(seed)


class _StrictRandom:
    def __init__(self, seed):
        import random

        self._r = random.Random(seed)

    def _make(self, shape, dtype, draw):
        import math

        import array_api_strict as xp

        n = math.prod(shape)
        return xp.reshape(xp.asarray([draw() for _ in range(n)], dtype=dtype), tuple(shape))

    def normal(self, shape, *, dtype, mean=0.0, std=1.0):
        return self._make(shape, dtype, lambda: self._r.gauss(mean, std))

    def uniform(self, shape, *, dtype, low=0.0, high=1.0):
        return self._make(shape, dtype, lambda: self._r.uniform(low, high))


STRICT_PLUGIN = StrictPlugin()
pg.register_plugin(STRICT_PLUGIN, name="array_api_strict-test")

BACKENDS = ["numpy", "array_api_strict"]


@pytest.fixture(autouse=True)
def _unseed():
    """Tests may call pg.seed; every test starts and ends with the global seed unset."""
    yield
    pg.seed(None)


@pytest.fixture(params=BACKENDS)
def backend_name(request):
    """Each test using this runs on numpy and on array_api_strict."""
    return request.param


@pytest.fixture
def xp(backend_name):
    """The Array API namespace of the backend under test, made current."""
    with pg.using_backend(backend_name) as b:
        yield b.xp


@pytest.fixture
def rng():
    import numpy as np

    return np.random.default_rng(0)


def arr(xp, values, dtype="float64"):
    """Build an array of the backend under test from nested lists or numpy data."""
    import numpy as np

    return xp.asarray(np.asarray(values).tolist(), dtype=getattr(xp, dtype))


def to_np(a):
    """A numpy copy of an array of any backend, of a Variable's data, or of a scalar."""
    import numpy as np

    if isinstance(a, pg.Variable):
        a = a.data
    if isinstance(a, (bool, int, float, complex, np.generic)):
        return np.asarray(a)
    return np.array(np.from_dlpack(a), copy=True)


def assert_close(got, want, rtol=1e-7, atol=1e-10):
    """Same shape, same dtype, same values (NaNs in the same places); tuples
    (multi-output ops) entry by entry."""
    import numpy as np

    if isinstance(want, tuple):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert_close(g, w, rtol, atol)
        return
    g, w = to_np(got), to_np(want)
    assert g.shape == w.shape, f"shape {g.shape} != expected {w.shape}"
    assert g.dtype == w.dtype, f"dtype {g.dtype} != expected {w.dtype}"
    np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def assert_values_close(got, want, rtol=1e-7, atol=1e-10):
    """Same shape and values; the dtype of ``want`` (a numpy reference) may differ."""
    import numpy as np

    g, w = to_np(got), np.asarray(want)
    assert g.shape == w.shape, f"shape {g.shape} != expected {w.shape}"
    np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)

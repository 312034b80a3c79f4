"""Shared fixtures and helpers. Registers array_api_strict as a backend through a
test-only plugin (like a third party would), so the core's tests prove it uses
only the Array API standard.

This is not the example plugin of the conformance suite
(``conformance/examples/polygrad-strict``, backend ``strict``), on purpose: that
one is a template for third parties and does what the standard cannot with
numpy (``np.add.at`` for scatter-add, numpy's random numbers). This one leaves
both to polygrad: with no scatter-add hook every gradient through indexing takes
the standard-only fallback, and its random numbers come from Python's.
"""

from __future__ import annotations

import gc
import zlib

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
def no_cyclic_gc():
    """Python's cyclic collector off for the test: what it frees is what reference counting alone
    does not (a reference cycle lives until a full collection, which never sees GPU memory)."""
    gc.collect()
    gc.disable()
    yield
    gc.enable()


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


def sample(xp, shape, kind="any", key=0):
    """A float64 array (complex128 for the complex kinds) of ``shape`` with values of one of the op
    table's kinds (``any``, ``pos``, ``nonzero``, ``distinct``, ... of polygrad_conformance.cases), fixed by ``key``."""
    from polygrad_conformance.cases import F

    seed = zlib.crc32(key.encode()) if isinstance(key, str) else key
    return F(tuple(shape), kind).make(xp, xp.float64, seed)


def normal(shape, seed=0):
    """Standard normal numpy data."""
    import numpy as np

    return np.random.default_rng(seed).standard_normal(shape)


def away_from_zero(shape, seed=0):
    """|x| in [0.3, 2] with random signs: no input sits on a kink."""
    import numpy as np

    r = np.random.default_rng(seed)
    return r.uniform(0.3, 2.0, shape) * r.choice([-1.0, 1.0], shape)


def distinct(shape, seed=0):
    """Values at least 0.1 apart (no ties, so max is differentiable)."""
    import numpy as np

    n = int(np.prod(shape))
    return (np.random.default_rng(seed).permutation(n) * 0.1 - 0.05 * n).reshape(shape)


def ints(xp, values):
    """An int64 array of the backend under test."""
    import numpy as np

    return xp.asarray(np.asarray(values).tolist(), dtype=xp.int64)


def plain_signature(fn):
    """(name, kind, default) of each parameter: annotations dropped, array_api_strict's private
    "not given" default (astype's device, from_dlpack's) read as the standard's None."""
    import inspect

    return [(p.name, p.kind, None if type(p.default).__name__ == "Undef" else p.default)
            for p in inspect.signature(fn).parameters.values()]

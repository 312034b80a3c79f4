"""Compiled functions on the backend: a chain of elementwise operations large enough to be
offered to the plugin's ``polygrad_fuse_elementwise`` (where it has one) gives eager mode's
values and gradients, at every call, and writes into no array the caller passed."""

from __future__ import annotations

import pytest

import polygrad as pg
from polygrad_conformance._util import assert_same
from polygrad_conformance.plugin import dtype_name, float_dtype_names, tolerance_for

N = 20_000  # elements: above the size under which a fusion group is declined (64 KiB of float32)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "dtype_name" in metafunc.fixturenames:
        metafunc.parametrize("dtype_name", float_dtype_names(metafunc.config))


def _program(x, y, w):
    h = pg.exp(x * 0.5) + pg.tanh(y) * x - 1.0
    return pg.sum(h * w), h


def _inputs(xp, dtype, seed):
    import random

    r = random.Random(seed)
    return [xp.asarray([r.uniform(-1, 1) for _ in range(N)], dtype=dtype) for _ in range(3)]


def test_a_fusable_chain_agrees_with_eager_at_every_call(pg_backend, xp, dtype_name):
    """Values and gradients of a compiled elementwise chain (fused where the plugin fuses) against
    eager mode, at two calls with different inputs; the caller's arrays are left as they were. A
    fused kernel that wrote into an input it was not given, or computed float64 through float32,
    passed every other test."""
    from polygrad import symbolic as T

    dtype = getattr(xp, dtype_name)
    tol = tolerance_for(xp, dtype)
    x, y, w = (T.tensor(dtype_name, (N,), name) for name in "xyw")
    cost, h = _program(x, y, w)
    f = pg.function([x, y, w], [cost, h, *T.grad(cost, [x, y])])
    for seed in (1, 2):
        args = _inputs(xp, dtype, seed)
        before = [xp.asarray(a, copy=True) for a in args]
        got = pg.compute(*f(*args))
        ex, ey = pg.Variable(args[0]), pg.Variable(args[1])
        ecost, eh = _program(ex, ey, pg.Variable(args[2], requires_grad=False))
        ecost.backward()
        want = pg.compute(ecost, eh, ex.grad, ey.grad)
        for what, g, e in zip(("cost", "h", "x's gradient", "y's gradient"), got, want):
            assert_same(pg.asarray(g, backend=pg_backend.name), pg.asarray(e, backend=pg_backend.name),
                        backend=pg_backend, rtol=tol.rtol, atol=tol.atol * N if what == "cost" else tol.atol,
                        what=f"call {seed}: {what}")
        for name, a, b in zip("xyw", args, before):
            assert bool(xp.all(a == b)), f"call {seed}: the compiled function wrote into the caller's {name}"

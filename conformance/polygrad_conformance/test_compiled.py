"""Compiled functions on the backend: a chain of elementwise operations large enough to be
offered to the plugin's ``polygrad_fuse_elementwise`` (where it has one) gives eager mode's
values and gradients, at every call, and writes into no array the caller passed."""

from __future__ import annotations

import pytest

import polygrad as pg
from polygrad_conformance.plugin import float_dtype_names, tolerance_for

N = 5 * 2**18  # elements: 5 MiB of float32, above the sizes under which the numpy plugin's fusion declines


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "dtype_name" in metafunc.fixturenames:
        metafunc.parametrize("dtype_name", float_dtype_names(metafunc.config))


def _program(x, y, w):
    h = pg.exp(x * 0.5) + pg.tanh(y) * x - 1.0
    return pg.sum(h * w), h


def _close(xp, got, want, rtol, atol, what):
    """One line per failure: the worst element, not every value."""
    got, want = pg.asarray(got), pg.asarray(want)
    assert tuple(got.shape) == tuple(want.shape) and got.dtype == want.dtype, (
        f"{what}: shape {tuple(got.shape)}, dtype {got.dtype}; eager mode's {tuple(want.shape)}, {want.dtype}")
    excess = pg.compute(pg.max(pg.abs(got - want) - (atol + rtol * pg.abs(want))))[0]
    assert float(excess) <= 0.0, f"{what}: differs from eager mode by up to {float(excess)} beyond rtol={rtol}, atol={atol}"


def test_a_fusable_chain_agrees_with_eager_at_every_call(pg_backend, xp, dtype_name):
    """Values and gradients of a compiled elementwise chain (fused where the plugin fuses: the
    numpy plugin's numexpr kernels, the dask plugin's per-block kernels) against eager mode, at
    two calls with different inputs; the caller's arrays are left as they were. A fused kernel
    that wrote into an input it was not given, or computed float64 through float32, passed every
    other test."""
    from polygrad import symbolic as T

    dtype = getattr(xp, dtype_name)
    tol = tolerance_for(xp, dtype)
    x, y, w = (T.tensor(dtype_name, (N,), name) for name in "xyw")
    cost, h = _program(x, y, w)
    f = pg.function([x, y, w], [cost, h, *T.grad(cost, [x, y])])
    for seed in (1, 2):
        gen = pg_backend.random_generator(seed)
        args = [gen.uniform((N,), dtype=dtype, low=-1.0, high=1.0) for _ in range(3)]
        before = [xp.asarray(a, copy=True) for a in args]
        got = f(*args)
        ex, ey = pg.Variable(args[0]), pg.Variable(args[1])
        ecost, eh = _program(ex, ey, pg.Variable(args[2], requires_grad=False))
        ecost.backward()
        for what, g, e in zip(("cost", "h", "x's gradient", "y's gradient"), got, (ecost, eh, ex.grad, ey.grad)):
            _close(xp, g, e, tol.rtol, tol.atol * (N if what == "cost" else 1), f"call {seed}: {what}")
        for name, a, b in zip("xyw", args, before):
            assert bool(xp.all(a == b)), f"call {seed}: the compiled function wrote into the caller's {name}"

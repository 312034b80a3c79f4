"""Algebraic simplification and in-place reuse in compiled programs (polygrad.compile.rewrite,
polygrad.compile.inplace): fewer kernels, the same values, never an alias of the caller's arrays."""

from __future__ import annotations

import math

import numpy as np
import pytest

import polygrad as pg
from polygrad import symbolic as T
from polygrad.compile import fusion
from polygrad.core.op import REGISTRY


@pytest.fixture(autouse=True)
def unfused(monkeypatch):
    """These tests read the kernels of the program: no fusion."""
    monkeypatch.setattr(fusion, "ENABLED", False)


def kernels(fn):
    (program,) = fn._programs.values()
    return [op.name for op, *_ in program.instrs]


@pytest.mark.parametrize("make", [lambda x: x * 1, lambda x: 1.0 * x, lambda x: x + (-0.0), lambda x: -0.0 + x,
                                  lambda x: x - 0, lambda x: x / 1, lambda x: x ** 1, lambda x: -(-x)],
                         ids=["x*1", "1*x", "x+(-0.0)", "(-0.0)+x", "x-0", "x/1", "x**1", "--x"])
def test_identities_cost_no_kernel(make):
    """x*1, x+(-0.0), x-0, x/1, x**1 and -(-x) compile to no kernel, and the output is a copy of x
    (the sign of a zero included)."""
    x = T.vector("x")
    fn = pg.function([x], make(x))
    xv = np.array([1.5, -0.0, 0.0, np.nan, np.inf])
    r = fn(xv)
    assert kernels(fn) == []
    assert r is not xv and not np.shares_memory(r, xv)
    np.testing.assert_array_equal(r, xv)
    np.testing.assert_array_equal(np.signbit(r), np.signbit(xv))


def test_times_minus_one_is_a_negation():
    """x * -1 and x / -1 become one negative."""
    x = T.vector("x")
    fn = pg.function([x], [x * -1, x / -1])
    a, b = fn(np.array([1.0, -2.0, 0.0]))
    assert kernels(fn) == ["negative"]
    np.testing.assert_array_equal(a, [-1.0, 2.0, -0.0])
    np.testing.assert_array_equal(np.signbit(b), [True, False, True])


@pytest.mark.parametrize("make", [lambda x: x + 0, lambda x: 0.0 + x, lambda x: 0 - x, lambda x: 1 / (0 - x),
                                  lambda x: pg.atan2(0 - x, -1.0 + 0 * x), lambda x: x - (-0.0)],
                         ids=["x+0", "0+x", "0-x", "1/(0-x)", "atan2(0-x,-1)", "x-(-0.0)"])
def test_no_rewrite_changes_the_sign_of_a_zero(make):
    """0 - x became -x and x + 0 became x: at x = 0.0 compiled 1 / (0 - x) gave -inf where eager
    gives +inf, and atan2(0 - x, -1) gave -pi for pi (found against NumPy in stop 25)."""
    x = T.vector("x")
    fn = pg.function([x], make(x))
    xv = np.array([0.0, -0.0, 2.0])
    with np.errstate(divide="ignore"):  # 1 / 0 is the point
        eager = make(pg.Variable(xv)).data
        r = fn(xv)
    np.testing.assert_array_equal(r, eager)
    np.testing.assert_array_equal(np.signbit(r), np.signbit(eager))


def test_promoting_identity_is_kept():
    """An int array times 1.5 or a float32 array times a float64 one is no identity: the dtype changes."""
    i = T.tensor("int64", (None,), "i")
    fn = pg.function([i], i * 1.0)
    r = fn(np.array([1, 2]))
    assert r.dtype == np.float64 and kernels(fn) == ["multiply"]


def test_sum_gradient_seed_is_not_multiplied():
    """The folded seed of sum's gradient (ones broadcast to x's shape) is never multiplied by."""
    x = T.vector("x")
    cost = pg.sum(pg.tanh(x) * x + pg.exp(-x * x))
    fn = pg.function([x], T.grad(cost, x))
    xv = np.linspace(-2, 2, 7)
    g = fn(xv)
    (program,) = fn._programs.values()
    arrays = [a for _, _, args, _, _ in program.instrs for k, a in args if k == "c" and getattr(a, "ndim", 0) > 0]
    assert arrays == []
    t, e = np.tanh(xv), np.exp(-xv * xv)
    np.testing.assert_allclose(g, xv * (1 - t * t) + t - 2 * xv * e, rtol=1e-15, atol=1e-15)


@pytest.mark.filterwarnings("ignore:invalid value encountered in log")
def test_exp_of_log_of_a_non_negative_value():
    """exp(log(y)) is y where y is known non-negative (y = exp(x)); kept for any x (log of a negative is NaN)."""
    x = T.vector("x")
    fn = pg.function([x], pg.exp(pg.log(pg.exp(x))))
    xv = np.array([-1.0, 0.0, 3.0])
    np.testing.assert_allclose(fn(xv), np.exp(xv))
    assert kernels(fn) == ["exp"]
    keep = pg.function([x], pg.exp(pg.log(x)))
    r = keep(np.array([-1.0, 2.0]))
    assert kernels(keep) == ["log", "exp"] and np.isnan(r[0])


@pytest.mark.filterwarnings("ignore:invalid value encountered", "ignore:divide by zero")
def test_exp_of_log_of_a_square_root_keeps_the_sign_of_zero():
    """sqrt(-0.0) is -0.0 and exp(log(-0.0)) +0.0: dropping the pair made 1 / exp(log(sqrt(x)))
    -inf at x = -0.0 where eager gives +inf."""
    x = T.vector("x")
    fn = pg.function([x], 1.0 / pg.exp(pg.log(pg.sqrt(x))))
    xv = np.array([-0.0, 0.0, 4.0])
    eager = (1.0 / pg.exp(pg.log(pg.sqrt(pg.asarray(xv))))).data
    np.testing.assert_array_equal(fn(xv), eager)
    assert np.array_equal(np.signbit(fn(xv)), np.signbit(eager))


def test_complex_identity_is_kept():
    """(inf + nan j) * 1 is not the identity in complex arithmetic: the rule is for real dtypes only."""
    z = T.tensor("complex128", (None,), "z")
    fn = pg.function([z], z * 1)
    fn(np.array([1 + 2j]))
    assert kernels(fn) == ["multiply"]


def test_dead_intermediates_are_written_in_place():
    """(x*2)*3 + x: the second multiply and the add reuse the first product's array; x is untouched."""
    x = T.vector("x")
    fn = pg.function([x], (x * 2) * 3 + x)
    xv = np.linspace(-1, 1, 5)
    keep = xv.copy()
    r = fn(xv)
    assert fn.program_source().count("in place") == 2
    np.testing.assert_array_equal(r, xv * 2 * 3 + xv)
    np.testing.assert_array_equal(xv, keep)


def test_no_in_place_on_inputs_outputs_or_views():
    """An input, an output and the base of a live view are never written."""
    x = T.vector("x")
    h = x * 2
    fn = pg.function([x], [h, h + 1, pg.reshape(x * 3, (-1, 1)) + 0.5])
    xv = np.arange(4.0)
    a, b, c = fn(xv)
    assert "in place" not in fn.program_source()
    np.testing.assert_array_equal(a, xv * 2)
    np.testing.assert_array_equal(b, xv * 2 + 1)
    np.testing.assert_array_equal(c, (xv * 3).reshape(-1, 1) + 0.5)


def test_no_in_place_on_a_backend_without_writes():
    """dask (BackendInfo.inplace False) gets no in-place reuse."""
    da = pytest.importorskip("dask.array")
    x = T.vector("x")
    fn = pg.function([x], (x * 2) * 3 + x)
    r = fn(da.from_array(np.arange(4.0), chunks=2))
    assert "in place" not in fn.program_source()
    np.testing.assert_array_equal(r, np.arange(4.0) * 7)


def test_shared_values_are_never_written():
    """A shared variable's value read by an in-place candidate stays as it was."""
    w = pg.shared(np.arange(3.0), name="w")
    x = T.vector("x")
    fn = pg.function([x], (w * x) * 2 + w)
    before = w.get_value()
    fn(np.ones(3))
    np.testing.assert_array_equal(w.get_value(borrow=True), before)


def test_python_scalars_are_converted_once():
    """x * 0.01 on a float32 array: the scalar becomes a float32 0-d constant at compile time
    (as the standard converts it at every call), the values and the dtype are the same."""
    x = T.tensor("float32", (None,), "x")
    fn = pg.function([x], [x * 0.01 + 1, 2 - x])
    xv = np.linspace(-1, 1, 7, dtype=np.float32)
    a, b = fn(xv)
    (program,) = fn._programs.values()
    constants = [a for _, _, args, _, _ in program.instrs for k, a in args if k == "c"]
    assert all(getattr(c, "dtype", None) == np.float32 and c.ndim == 0 for c in constants)
    assert a.dtype == b.dtype == np.float32
    np.testing.assert_array_equal(a, xv * 0.01 + 1)
    np.testing.assert_array_equal(b, 2 - xv)


def test_operator_rows_are_written_as_operators():
    """A row whose kernel is a Python operator is generated as the operator (no call)."""
    x, y = T.vectors("xy")
    fn = pg.function([x, y], [x * y, x - y])
    fn(np.ones(2), np.ones(2))
    assert " * " in fn.program_source() and " - " in fn.program_source()


@pytest.mark.parametrize("fusion_on", [True, False])
def test_signed_zero_constants_stay_apart(fusion_on, monkeypatch):
    """-0.0 == 0.0 and they hash alike: merging kernels by their constants, the cache of typed
    scalars and numexpr's literals each took one for the other (copysign(x, -0.0) gave |x|,
    (x + 1) / -0.0 gave inf, (-0.0) ** -1 gave inf)."""
    monkeypatch.setattr(fusion, "ENABLED", fusion_on)
    x = T.vector("x")
    exprs = [pg.copysign(x, 0.0), pg.copysign(x, -0.0), x / 0.0, (x + 1) / -0.0, x * 0.0 + (-0.0) ** x,
             pg.atan2(x * -0.0, -1.0) - pg.atan2(x * 0.0, -1.0)]
    f = pg.function([x], exprs)
    a = np.array([1.0, -3.0])
    with np.errstate(divide="ignore"):
        got = f(a)
        want = [e.data for e in [pg.copysign(pg.asarray(a), 0.0), pg.copysign(pg.asarray(a), -0.0), pg.asarray(a) / 0.0,
                                 (pg.asarray(a) + 1) / -0.0, pg.asarray(a) * 0.0 + (-0.0) ** pg.asarray(a),
                                 pg.atan2(pg.asarray(a) * -0.0, -1.0) - pg.atan2(pg.asarray(a) * 0.0, -1.0)]]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(np.signbit(g), np.signbit(w))


def test_integer_zero_identities_cost_no_kernel():
    """Integers have no -0: x + 0 and 0 + x are x, 0 - x is -x (stop 25 had dropped these with
    the floating rules)."""
    i = T.tensor("int64", (None,), "i")
    for make, want in ((lambda v: v + 0, []), (lambda v: 0 + v, []), (lambda v: 0 - v, ["negative"])):
        fn = pg.function([i], make(i))
        np.testing.assert_array_equal(fn(np.array([1, -2, 0])), make(np.array([1, -2, 0])))
        assert kernels(fn) == want


def test_a_negative_zero_constant_keeps_its_sign():
    """A one-element constant of -0.0 and the negative of a folded float zeros were both read as
    the integer 0, so x - c would have been dropped as x - 0 (x - (-0.0) is +0.0 at x = -0.0)."""
    from polygrad.compile import rewrite

    u = rewrite._read_small(np.array([-0.0]))
    assert u == 0 and math.copysign(1.0, u) < 0
    facts = rewrite.Facts([])
    zeros = np.zeros(3)
    facts.note_folded(REGISTRY["zeros"], (), None, zeros)
    negated = -zeros
    facts.note_folded(REGISTRY["negative"], (("c", zeros),), None, negated)
    u = facts.uniform_of(("c", negated))
    assert u == 0 and math.copysign(1.0, u) < 0

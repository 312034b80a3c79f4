"""polygrad.functions' activations (relu, sigmoid, the softmax family, leaky_relu,
elu, erf, gelu, softplus, tanh) and logsumexp: forward values against
hand-written numpy, numerical stability, and gradients by check_grads in float64
(order 2), on numpy and array_api_strict."""

from __future__ import annotations

import math

import numpy as np
import pytest

import polygrad as pg
import polygrad.functions as F
from polygrad.testing import check_grads

from conftest import arr, away_from_zero, normal
from conftest import to_np, assert_values_close as assert_close


def np_log_softmax(a, axis=1):
    m = a.max(axis=axis, keepdims=True)
    return a - m - np.log(np.exp(a - m).sum(axis=axis, keepdims=True))


X = np.array([[0.5, -1.0, 2.0, 0.1], [-0.3, 0.8, -1.5, 1.2], [1.1, 0.7, -0.4, -2.2]])
XA = away_from_zero((3, 4))


# ---------------------------------------------------------------------------
# relu, sigmoid and the softmax family
# ---------------------------------------------------------------------------


def test_relu_forward(xp):
    """relu is max(x, 0)."""
    assert_close(F.relu(arr(xp, X)), np.maximum(X, 0))


def test_sigmoid_forward(xp):
    """sigmoid is 1 / (1 + exp(-x)), also for large |x|."""
    x = np.array([-30.0, -1.0, 0.0, 2.0, 30.0])
    assert_close(F.sigmoid(arr(xp, x)), 1 / (1 + np.exp(-x)), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("axis", [1, 0, -1])
def test_softmax_forward(xp, axis):
    """softmax along ``axis`` (default 1) matches exp / sum(exp) and sums to one."""
    y = F.softmax(arr(xp, X)) if axis == 1 else F.softmax(arr(xp, X), axis=axis)
    e = np.exp(X)
    assert_close(y, e / e.sum(axis=axis, keepdims=True))
    assert_close(pg.sum(y, axis=axis), np.ones(X.shape[1 - axis % 2]))


@pytest.mark.parametrize("axis", [1, 0])
def test_log_softmax_forward(xp, axis):
    """log_softmax along ``axis`` matches x - logsumexp(x)."""
    assert_close(F.log_softmax(arr(xp, X), axis=axis), np_log_softmax(X, axis))


def test_log_softmax_is_stable_for_large_inputs(xp):
    """log_softmax of [1000, 0] is [0, -1000], with no inf or nan."""
    assert_close(F.log_softmax(arr(xp, [[1000.0, 0.0]])), np.array([[0.0, -1000.0]]))


def test_softmax_is_stable_for_large_inputs(xp):
    """softmax of [1000, 1000] is [0.5, 0.5]."""
    assert_close(F.softmax(arr(xp, [[1000.0, 1000.0]])), np.array([[0.5, 0.5]]))


@pytest.mark.parametrize("name", ["relu", "sigmoid", "softmax", "log_softmax"])
def test_relu_sigmoid_and_softmax_family_gradients(xp, name):
    """Gradients of relu, sigmoid, softmax and log_softmax agree with central differences, to second order."""
    check_grads(getattr(F, name), [arr(xp, X)], order=2)


def test_softmax_gradient_along_axis_0(xp):
    """softmax / log_softmax along axis 0 of a 3-D array have the right gradient."""
    x = arr(xp, np.random.default_rng(0).standard_normal((3, 2, 2)))
    check_grads(lambda v: F.softmax(v, axis=0) * F.log_softmax(v, axis=0), [x], order=2)


# ---------------------------------------------------------------------------
# leaky_relu, elu, erf, gelu, softplus, tanh
# ---------------------------------------------------------------------------


def test_leaky_relu_forward(xp):
    """leaky_relu is x for x >= 0, else slope * x (default slope 0.2)."""
    assert_close(F.leaky_relu(arr(xp, XA)), np.where(XA >= 0, XA, 0.2 * XA))
    assert_close(F.leaky_relu(arr(xp, XA), slope=0.5), np.where(XA >= 0, XA, 0.5 * XA))


def test_leaky_relu_gradient_at_zero_is_the_slope(xp):
    """At x = 0 the gradient is the slope, as in Chainer 7.8.1 (``gy[y <= 0] *= slope``) and
    PyTorch; it was 1, and this test said that was Chainer's."""
    x = pg.Variable(arr(xp, [0.0, -1.0, 2.0]))
    pg.sum(F.leaky_relu(x, slope=0.3)).backward()
    assert_close(x.grad, np.array([0.3, 0.3, 1.0]))


def test_elu_forward(xp):
    """elu is x for x >= 0, else alpha * (exp(x) - 1)."""
    assert_close(F.elu(arr(xp, XA)), np.where(XA >= 0, XA, np.expm1(XA)), rtol=1e-12)
    assert_close(F.elu(arr(xp, XA), alpha=2.0), np.where(XA >= 0, XA, 2.0 * np.expm1(XA)), rtol=1e-12)


def test_elu_keeps_precision_near_zero(xp):
    """elu(-1e-10) has full relative precision (exp(x) - 1 would lose about 7 digits)."""
    x = np.array([-1e-10, -1e-5, -40.0])
    assert_close(F.elu(arr(xp, x)), np.expm1(x), rtol=1e-14, atol=0)


@pytest.mark.parametrize("dtype, low", [("float64", -700.0), ("float32", -85.0), ("float16", -9.0)])
def test_elu_value_and_gradient_keep_relative_precision_in_the_tail(xp, dtype, low):
    """The gradient for x < 0 is alpha exp(x) to a few ulps, as Chainer's and PyTorch's: it was
    alpha (1 + t) / (1 - t) with t = tanh(x / 2), which cancels as t nears -1 (float16 27 % off at
    -8 and 0 from -10, float32 44 % off at -17); the value stays alpha expm1(x) to a few ulps."""
    if not hasattr(xp, dtype):
        pytest.skip(f"no {dtype} on this backend")
    xs = np.concatenate([np.linspace(low, -1e-3, 400), -np.logspace(-8, 0, 50)]).astype(dtype)
    x = pg.Variable(xp.asarray(xs.tolist(), dtype=getattr(xp, dtype)))
    y = F.elu(x, alpha=1.5)
    pg.sum(y).backward()
    x64, eps = xs.astype(np.float64), np.finfo(dtype).eps
    normal = np.abs(np.expm1(x64)) >= np.finfo(dtype).tiny  # (a subnormal result has fewer digits to keep)
    np.testing.assert_allclose(to_np(x.grad).astype(np.float64), 1.5 * np.exp(x64), rtol=4 * eps, atol=0)
    np.testing.assert_allclose(to_np(y).astype(np.float64)[normal], 1.5 * np.expm1(x64[normal]), rtol=4 * eps, atol=0)


def test_elu_large_positive_input_has_finite_gradient(xp):
    """The unused negative branch never sees a large positive x: no nan in the gradient."""
    x = pg.Variable(arr(xp, [1000.0, -1000.0]))
    pg.sum(F.elu(x)).backward()
    assert_close(x.grad, np.array([1.0, 0.0]))


def test_erf_matches_math_erf(xp):
    """erf agrees with math.erf to 1e-7 from -6 to 6, and erf(+-inf) = +-1."""
    x = np.linspace(-6.0, 6.0, 2401)
    want = np.array([math.erf(v) for v in x])
    assert np.abs(to_np(F.erf(arr(xp, x))) - want).max() < 1e-7
    assert_close(F.erf(arr(xp, [-np.inf, 0.0, np.inf])), np.array([-1.0, 0.0, 1.0]))


@pytest.mark.parametrize("dtype, erf_ulps, erfc_ulps", [("float64", 4, 8), ("float32", 4, 12), ("float16", 1, 1)])
def test_erf_and_erfc_are_good_to_a_few_ulps(xp, dtype, erf_ulps, erfc_ulps):
    """erf and erfc agree with math.erf and math.erfc to a few ulps of the dtype, from -27 to 27 (where
    erfc is not subnormal): they were Numerical Recipes' erfcc fit, 1.2e-7 relative in every dtype
    (10^8 float64 ulps, 119 float32 ulps of erfc at 8.3). Cody's approximations now, float16 in float32."""
    if not hasattr(xp, dtype):
        pytest.skip(f"no {dtype} on this backend")
    xs = np.concatenate([np.linspace(-27, 27, 3001), [0.0, 1e-300, 0.46875, np.nextafter(0.46875, 1), 4.0,
                                                       np.nextafter(4.0, 5)]]).astype(dtype)
    x64 = xs.astype(np.float64)
    for fn, ref, ulps in ((F.erf, math.erf, erf_ulps), (F.erfc, math.erfc, erfc_ulps)):
        got = fn(xp.asarray(xs.tolist(), dtype=getattr(xp, dtype)))
        assert got.dtype == getattr(xp, dtype)
        want = np.array([ref(v) for v in x64])
        normal = np.abs(want) >= np.finfo(dtype).tiny
        spacing = np.spacing(np.abs(want[normal]).astype(dtype)).astype(np.float64)
        err = np.abs(to_np(got).astype(np.float64)[normal] - want[normal]) / spacing
        assert err.max() <= ulps, (fn.__name__, x64[normal][err.argmax()], err.max())


def test_erf_is_odd_and_keeps_float32(xp):
    """erf(-x) = -erf(x), and a float32 input gives float32."""
    x = np.linspace(0.0, 3.0, 31)
    assert_close(F.erf(arr(xp, -x)), -to_np(F.erf(arr(xp, x))), rtol=0, atol=0)
    assert F.erf(arr(xp, x, "float32")).dtype == xp.float32


def test_erf_gradient_is_exact(xp):
    """The gradient of erf is 2/sqrt(pi) exp(-x^2) exactly, not the approximation's slope."""
    xs = np.array([-2.0, -0.3, 0.0, 0.49, 0.51, 4.0])
    x = pg.Variable(arr(xp, xs))
    pg.sum(F.erf(x)).backward()
    assert_close(x.grad, 2 / np.sqrt(np.pi) * np.exp(-xs ** 2), rtol=1e-14)


def test_gelu_forward(xp):
    """gelu is x Phi(x); approximate=True is the tanh form."""
    x = np.linspace(-5.0, 5.0, 41)
    exact = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x])
    assert_close(F.gelu(arr(xp, x)), exact, rtol=0, atol=2e-7)
    approx = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    assert_close(F.gelu(arr(xp, x), approximate=True), approx, rtol=1e-12)


def test_gelu_takes_pytorchs_approximate_strings_and_refuses_other_values(xp):
    """approximate="none" (PyTorch's exact GELU) was tested for truth and gave the tanh form;
    "none" and "tanh" are taken for False and True now, and other strings or non-bools refused."""
    x = arr(xp, [-3.0, -1.5, 1.0, 2.5])
    assert_close(F.gelu(x, approximate="none"), to_np(F.gelu(x)), rtol=0, atol=0)
    assert_close(F.gelu(x, approximate="tanh"), to_np(F.gelu(x, approximate=True)), rtol=0, atol=0)
    assert_close(F.gelu(x, approximate=np.True_), to_np(F.gelu(x, approximate=True)), rtol=0, atol=0)
    with pytest.raises(ValueError, match=r"gelu: approximate must be one of 'none', 'tanh', got 'exact'"):
        F.gelu(x, approximate="exact")
    with pytest.raises(TypeError, match=r"gelu: approximate must be a bool, got 1"):
        F.gelu(x, approximate=1)


@pytest.mark.parametrize("dtype, big", [("float16", 300.0), ("float32", 1e20), ("float64", 1e200)])
def test_tanh_gelu_has_a_finite_gradient_where_the_cube_would_overflow(xp, dtype, big):
    """The cube in the tanh form overflowed (float16's from 256): tanh' was 0 times inf, a NaN
    gradient; it is 0 and 1 there now, as the exact form's and PyTorch's (which computes in float32)."""
    if not hasattr(xp, dtype):
        pytest.skip(f"no {dtype} on this backend")
    x = pg.Variable(xp.asarray([-big, -20.0, 20.0, big], dtype=getattr(xp, dtype)))
    y = F.gelu(x, approximate=True)
    pg.sum(y).backward()
    np.testing.assert_array_equal(to_np(x.grad), [0.0, 0.0, 1.0, 1.0])
    np.testing.assert_array_equal(to_np(y), np.array([0.0, 0.0, 20.0, big], dtype=dtype))


def test_tanh_gelu_gradients_across_the_clipped_cube(xp):
    """The cube is taken of x clipped to [-10, 10], where tanh is +-1 already: value and gradients
    (to second order) are those of the unclipped form on both sides of the clip."""
    xs = np.array([-14.0, -10.5, -9.5, -3.0, 0.4, 2.0, 9.5, 10.5, 14.0])
    k = math.sqrt(2 / math.pi)
    assert_close(F.gelu(arr(xp, xs), approximate=True), 0.5 * xs * (1 + np.tanh(k * (xs + 0.044715 * xs ** 3))),
                 rtol=1e-15, atol=0)
    check_grads(lambda v: F.gelu(v, approximate=True), [arr(xp, xs)], order=2)


def test_softplus_forward_is_stable(xp):
    """softplus(x, beta) = log(1 + exp(beta x)) / beta, with no overflow at +-800."""
    x = np.array([-800.0, -30.0, -1.0, 0.0, 2.0, 30.0, 800.0])
    assert_close(F.softplus(arr(xp, x)), np.logaddexp(0, x), rtol=1e-12, atol=0)
    assert_close(F.softplus(arr(xp, x), beta=2.0), np.logaddexp(0, 2 * x) / 2, rtol=1e-12, atol=0)


def test_softplus_gradient_is_sigmoid(xp):
    """d softplus(x, beta) / dx = sigmoid(beta x), also at 0 and at +-800."""
    xs = np.array([-800.0, -1.0, 0.0, 3.0, 800.0])
    x = pg.Variable(arr(xp, xs))
    pg.sum(F.softplus(x, beta=2.0)).backward()
    with np.errstate(over="ignore"):
        want = 1 / (1 + np.exp(-2 * xs))
    assert_close(x.grad, want, rtol=1e-12)


@pytest.mark.parametrize("beta, error", [(0, ValueError), (0.0, ValueError), (np.float64(0), ValueError),
                                         (math.inf, ValueError), (math.nan, ValueError), (True, TypeError),
                                         ("2", TypeError), (np.array(2.0), TypeError)])
def test_softplus_refuses_a_beta_that_is_zero_or_not_a_real_number(xp, beta, error):
    """beta=0 gave inf with a gradient of 0.5 (Chainer raises ZeroDivisionError), and a bool, a string
    or an array passed float(); each is refused now, naming softplus and beta."""
    with pytest.raises(error, match="softplus: beta must be"):
        F.softplus(arr(xp, [-1.0, 0.0, 2.0]), beta=beta)


def test_softplus_takes_numpy_and_negative_betas(xp):
    """A NumPy scalar beta keeps a float32 result float32; a negative beta is log(1 + exp(beta x)) / beta."""
    x = np.array([-1.0, 0.0, 2.0])
    assert F.softplus(arr(xp, x, "float32"), beta=np.float64(2.0)).dtype == xp.float32
    assert_close(F.softplus(arr(xp, x), beta=-0.5), np.logaddexp(0, -0.5 * x) / -0.5, rtol=1e-12, atol=0)


def test_tanh_is_exported():
    """F.tanh is the differentiable tanh op."""
    assert F.tanh is pg.ops.tanh


@pytest.mark.parametrize("name, kwargs", [
    ("leaky_relu", {}), ("leaky_relu", {"slope": 0.5}), ("elu", {}), ("elu", {"alpha": 1.5}), ("gelu", {}),
    ("gelu", {"approximate": True}), ("erf", {}), ("softplus", {}), ("softplus", {"beta": 0.5}), ("tanh", {}),
])
def test_activation_gradients(xp, name, kwargs):
    """Gradients of the activations agree with central differences, to second order."""
    fn = getattr(F, name)
    check_grads(lambda v: fn(v, **kwargs), [arr(xp, XA * 1.5)], order=2)


# ---------------------------------------------------------------------------
# logsumexp
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [None, 1, -1, (0, 2)])
def test_logsumexp_forward(xp, axis):
    """logsumexp(x, axis) = log(sum(exp(x), axis))."""
    x = normal((2, 3, 4))
    assert_close(F.logsumexp(arr(xp, x), axis=axis), np.log(np.exp(x).sum(axis=axis)), rtol=1e-12)


@pytest.mark.parametrize("axis", [[0, 1], 1.0, (0, 1.5), True])
def test_logsumexp_refuses_an_axis_that_is_not_an_int_or_tuple(xp, axis):
    """A list axis was "unsupported operand type(s) for %: 'list' and 'int'", naming nothing; axis
    is None, an int (NumPy's too) or a tuple of them, as the standard's reductions take it."""
    with pytest.raises(TypeError, match=r"functions.logsumexp: axis must be None, an int or a tuple of ints"):
        F.logsumexp(arr(xp, normal((2, 2))), axis=axis)


def test_logsumexp_is_stable(xp):
    """logsumexp of [1000, 1000] is 1000 + log 2; of [-1000, -1000] is -1000 + log 2."""
    x = np.array([[1000.0, 1000.0], [-1000.0, -1000.0]])
    assert_close(F.logsumexp(arr(xp, x), axis=1), np.array([1000.0, -1000.0]) + np.log(2), rtol=1e-14)


@pytest.mark.parametrize("shape, axis", [((4, 0), 1), ((0, 4), None), ((2, 0, 3), (0, 1)), ((0, 4), 1),
                                         ((4, 0), np.int64(1))])
def test_logsumexp_over_axes_of_no_elements_is_minus_inf(xp, shape, axis):
    """The log of an empty sum is -inf, as jax and torch give, with an empty gradient: logsumexp over
    an axis of no elements raised from max ("zero-size array to reduction operation maximum")."""
    x = pg.Variable(xp.zeros(shape, dtype=xp.float64))
    with np.errstate(divide="ignore"):  # (log 0, and 1 / 0 in its backward: numpy's warnings)
        y = F.logsumexp(x, axis=axis)
        pg.sum(y).backward()
    assert_close(y, np.full(np.zeros(shape).sum(axis=axis).shape, -np.inf), rtol=0)
    assert to_np(x.grad).shape == shape


def test_logsumexp_of_a_0d_array_along_axis_0_is_itself(xp):
    """sum and max take axis 0 of a 0-d array (as NumPy's do); logsumexp raised ZeroDivisionError."""
    x = pg.Variable(xp.asarray(0.5, dtype=xp.float64))
    y = F.logsumexp(x, axis=0)
    y.backward()
    assert_close(y, np.asarray(0.5), rtol=1e-15)
    assert_close(x.grad, np.asarray(1.0), rtol=1e-15)


@pytest.mark.parametrize("axis", [None, 0, (1, 2)])
def test_logsumexp_gradients(xp, axis):
    """Gradients of logsumexp agree with central differences, to second order."""
    check_grads(lambda v: F.logsumexp(v, axis=axis), [arr(xp, normal((2, 3, 2)))], order=2)


def test_logsumexp_gradient_is_softmax(xp):
    """d logsumexp(x) / dx along axis 1 is softmax(x)."""
    xs = normal((2, 3))
    x = pg.Variable(arr(xp, xs))
    pg.sum(F.logsumexp(x, axis=1)).backward()
    e = np.exp(xs)
    assert_close(x.grad, e / e.sum(axis=1, keepdims=True), rtol=1e-12)


def test_logsumexp_of_infinite_slices(xp):
    """A slice of all -inf gives -inf and one holding +inf gives +inf (scipy's and jax's values);
    the shift by the maximum made both NaN."""
    x = np.array([[-np.inf, -np.inf], [np.inf, 0.0], [0.0, 1.0]])
    with np.errstate(divide="ignore"):
        got = to_np(F.logsumexp(arr(xp, x), axis=1))
    np.testing.assert_array_equal(got[:2], [-np.inf, np.inf])
    assert got[2] == pytest.approx(np.log(1 + np.e))


@pytest.mark.parametrize("dtype, xs", [("float32", [-10.0, -20.0, -40.0, 0.0, 30.0]),
                                       ("float64", [-30.0, -40.0, -100.0, 0.0, 40.0])])
def test_sigmoid_is_precise_in_both_tails(xp, dtype, xs):
    """sigmoid was 0.5 tanh(x / 2) + 0.5, which cancels for negative x: sigmoid(-20) was 0 in
    float32 (2.06e-9 is right), so log(sigmoid(x)) was -inf with a NaN gradient (JAX: -x and 1),
    and softplus's gradient, written the same way, was 0."""
    x64 = np.array(xs)
    exact = np.exp(np.minimum(x64, 0)) / (1 + np.exp(-np.abs(x64)))
    x = pg.Variable(xp.asarray(np.array(xs, dtype=dtype)))
    s = F.sigmoid(x)
    np.testing.assert_allclose(to_np(s.data), exact, rtol=4e-7 if dtype == "float32" else 1e-15)
    pg.sum(pg.log(s)).backward()  # 1 - sigmoid(x): to the dtype's precision near 1 (s (1 - s) / s)
    np.testing.assert_allclose(to_np(x.grad), 1 - exact, rtol=4e-7 if dtype == "float32" else 1e-15,
                               atol=np.finfo(dtype).eps)
    y = pg.Variable(xp.asarray(np.array(xs, dtype=dtype)))
    pg.sum(F.softplus(y)).backward()
    np.testing.assert_allclose(to_np(y.grad), exact, rtol=4e-7 if dtype == "float32" else 1e-15)


def test_sigmoid_keeps_its_output_and_differentiates_complex_inputs():
    """sigmoid saves its output, as Chainer and PyTorch (for a short while it saved its input for
    the tails' precision: the pre-activation stayed alive beside the output, and writing into it
    after sigmoid was refused); a complex x's gradient lacked tanh's conj (check_grads failed)."""
    a = pg.Variable(np.array([0.5, -1.0, 2.0]))
    h = a * 1.0
    y = F.sigmoid(h)
    h *= 2.0  # the input may change: backward reads the output
    pg.sum(y).backward()
    s = 1 / (1 + np.exp(-np.array([0.5, -1.0, 2.0])))
    np.testing.assert_allclose(a.grad, s * (1 - s), rtol=1e-15)
    check_grads(F.sigmoid, [np.array([0.3, -1.0, 0.0, 5.0])], order=2)
    check_grads(F.sigmoid, [np.array([0.3 + 0.2j, -1.0 + 0.5j])])

"""Every element-wise function of the Array API standard: values against the
backend's own function, gradients against central differences (float64, real
and complex), the conventions at non-differentiable points, and signatures
against array_api_strict's, on numpy and array_api_strict.
"""

from __future__ import annotations

import inspect
import math
import zlib

import array_api_strict
import numpy as np
import pytest

import polygrad as pg
from polygrad.ops import REGISTRY, elementwise
from polygrad.testing import check_grads

from conftest import arr
from conftest import assert_close

#: The standard's element-wise functions (2024.12 / 2025.12).
STANDARD = (
    "abs", "acos", "acosh", "add", "asin", "asinh", "atan", "atan2", "atanh", "bitwise_and", "bitwise_invert",
    "bitwise_left_shift", "bitwise_or", "bitwise_right_shift", "bitwise_xor", "ceil", "clip", "conj", "copysign",
    "cos", "cosh", "divide", "equal", "exp", "expm1", "floor", "floor_divide", "greater", "greater_equal", "hypot",
    "imag", "isfinite", "isinf", "isnan", "less", "less_equal", "log", "log10", "log1p", "log2", "logaddexp",
    "logical_and", "logical_not", "logical_or", "logical_xor", "maximum", "minimum", "multiply", "negative",
    "nextafter", "not_equal", "positive", "pow", "real", "reciprocal", "remainder", "round", "sign", "signbit", "sin",
    "sinh", "sqrt", "square", "subtract", "tan", "tanh", "trunc",
)

# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------


DOMAINS = {
    "n": lambda r, s: r.standard_normal(s),  # anywhere
    "p": lambda r, s: r.uniform(0.5, 2.0, s),  # positive
    "a": lambda r, s: r.uniform(0.5, 2.0, s) * r.choice([-1.0, 1.0], s),  # away from 0
    "u": lambda r, s: r.uniform(-0.9, 0.9, s),  # inside (-1, 1)
    "g": lambda r, s: r.uniform(1.2, 3.0, s),  # above 1
    # complex, off the branch cuts of log, sqrt, asin, acos, atanh (real axis) and asinh, atan (imaginary axis)
    "c": lambda r, s: r.uniform(0.2, 0.8, s) * r.choice([-1.0, 1.0], s) + 1j * r.uniform(0.3, 0.8, s),
}


def make(xp, kind, shape, key):
    """A float64 (complex128 for kind 'c') array of ``shape`` from DOMAINS[kind], seeded by ``key``."""
    values = DOMAINS[kind](np.random.default_rng(zlib.crc32(key.encode())), shape)
    return xp.reshape(arr(xp, values, "complex128" if kind == "c" else "float64"), shape)


def check_complex_grads(f, inputs, order=1, eps=1e-6, rtol=1e-5, atol=1e-6):
    """Dot-product test in PyTorch's convention: for L = Re sum conj(u) f(z), the gradient G of each input
    satisfies dL = Re sum conj(G) dz; checked along a random complex direction, then (order 2) on the vjp."""
    xp = inputs[0].__array_namespace__()
    r = np.random.default_rng(order)
    zs = [pg.Variable(z) for z in inputs]
    ys = f(*zs)
    ys = tuple(ys) if isinstance(ys, (tuple, list)) else (ys,)

    def direction(a):
        shape = tuple(a.shape)
        if xp.isdtype(a.dtype, "complex floating"):
            return arr(xp, r.standard_normal(shape) + 1j * r.standard_normal(shape), "complex128")
        return arr(xp, r.standard_normal(shape))

    us = [direction(y.data) for y in ys]
    vs = [direction(z) for z in inputs]

    def loss(shift):
        out = f(*[pg.Variable(z + shift * v, requires_grad=False) for z, v in zip(inputs, vs)])
        out = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        return sum(float(xp.sum(xp.real(xp.conj(u) * y.data))) for u, y in zip(us, out))

    numeric = (loss(eps) - loss(-eps)) / (2 * eps)
    grads = pg.grad(list(ys), zs, grad_outputs=us, allow_unused=True)
    analytic = sum(float(xp.sum(xp.real(xp.conj(g.data) * v))) for g, v in zip(grads, vs) if g is not None)
    assert abs(analytic - numeric) <= atol + rtol * abs(numeric), f"order {order}: {analytic} != numeric {numeric}"
    if order > 1:
        def vjp(*args):
            args = [a if a.requires_grad else pg.Variable(a.data) for a in args]
            out = f(*args)
            gs = pg.grad(list(out) if len(ys) > 1 else [out], args, grad_outputs=us, create_graph=True, allow_unused=True)
            return tuple(g if g is not None else pg.Variable(xp.zeros_like(a.data)) for g, a in zip(gs, args))

        check_complex_grads(vjp, inputs, order - 1, eps, rtol, atol)


def plain_signature(fn):
    """(name, kind, default) of each parameter: the signature without annotations, array_api_strict's
    private "not given" default (astype's device) read as the standard's None."""
    return [(p.name, p.kind, None if type(p.default).__name__ == "Undef" else p.default)
            for p in inspect.signature(fn).parameters.values()]


# ---------------------------------------------------------------------------
# Differentiable unary functions: value, gradient (order 2) on 2-D, 0-d and empty arrays
# ---------------------------------------------------------------------------

UNARY = {  # name: domain of the real inputs
    "negative": "n", "positive": "n", "square": "n", "reciprocal": "a", "exp": "n", "expm1": "n", "log": "p",
    "log1p": "p", "log2": "p", "log10": "p", "sqrt": "p", "sin": "n", "cos": "n", "tan": "u", "asin": "u",
    "acos": "u", "atan": "n", "sinh": "n", "cosh": "n", "tanh": "n", "asinh": "n", "acosh": "g", "atanh": "u",
    "real": "n", "conj": "n", "abs": "a",
}
SHAPES = [(2, 3), (), (0,)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_value_matches_backend(xp, name, shape):
    """The value equals the backend's own function, with the same dtype and shape."""
    a = make(xp, UNARY[name], shape, name)
    assert_close(getattr(pg.ops, name)(pg.Variable(a)), getattr(xp, name)(a))


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_gradient_matches_numerical(xp, name, shape):
    """First and second derivatives agree with central differences in float64."""
    check_grads(getattr(pg.ops, name), [make(xp, UNARY[name], shape, name)], order=2)


@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "tanh", "atan", "reciprocal", "abs"])
def test_unary_gradient_keeps_float32(xp, name):
    """A float32 input gets a float32 gradient."""
    x = pg.Variable(arr(xp, [0.5, 1.5], "float32"))
    pg.sum(getattr(pg.ops, name)(x)).backward()
    assert x.grad.dtype == xp.float32


# ---------------------------------------------------------------------------
# Differentiable binary functions: broadcasting, 0-d, Python scalars on either side
# ---------------------------------------------------------------------------

BINARY = {  # name: domains of x1 and x2
    "atan2": "nn", "hypot": "nn", "logaddexp": "nn", "minimum": "nn", "copysign": "aa", "nextafter": "nn",
    "remainder": "na",
}
PAIRS = [((2, 3), (2, 3)), ((3, 1), (4,)), ((), (2, 3)), ((2, 1, 3), (0, 1))]


@pytest.mark.parametrize("shapes", PAIRS, ids=str)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_value_and_gradient(xp, name, shapes):
    """Value equals the backend's; gradients (order 2) of both inputs agree with central differences."""
    a, b = (make(xp, k, s, f"{name}{i}") for i, (k, s) in enumerate(zip(BINARY[name], shapes)))
    fn = getattr(pg.ops, name)
    assert_close(fn(pg.Variable(a), pg.Variable(b)), getattr(xp, name)(a, b))
    check_grads(fn, [a, b], order=2)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_with_python_scalar_on_either_side(xp, name):
    """f(x, 1.5) and f(1.5, x) give the backend's values and right gradients."""
    a = make(xp, BINARY[name][0], (4,), name)
    fn = getattr(pg.ops, name)
    assert_close(fn(pg.Variable(a), 1.5), getattr(xp, name)(a, 1.5))
    assert_close(fn(1.5, pg.Variable(a)), getattr(xp, name)(1.5, a))
    check_grads(lambda v: fn(v, 1.5) * fn(-1.5, v), [a], order=2)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_on_two_python_scalars_gives_0d_variable(xp, name):
    """f(0.5, 1.5) gives a 0-d Variable of the current backend with the backend's value."""
    got = getattr(pg.ops, name)(0.5, 1.5)
    assert got.shape == ()
    assert_close(got, getattr(xp, name)(xp.asarray(0.5), xp.asarray(1.5)))


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_mixed_precision_gradients_keep_input_dtypes(xp, name):
    """float32 with float64: each input's gradient has its own dtype."""
    a = pg.Variable(arr(xp, [0.7, -1.2], "float32"))
    b = pg.Variable(arr(xp, [1.3, 0.6], "float64"))
    pg.sum(getattr(pg.ops, name)(a, b)).backward()
    assert a.grad.dtype == xp.float32
    assert b.grad is None or b.grad.dtype == xp.float64


def test_remainder_and_floor_divide_operators(xp):
    """x % y is differentiable (1 and -floor(x / y)); x // y has the backend's value and no gradient."""
    a, b = arr(xp, [5.5, -3.5, 7.0]), arr(xp, [2.0, 2.0, -3.0])
    x, y = pg.Variable(a), pg.Variable(b)
    assert_close(x // y, xp.floor_divide(a, b))
    assert (x // y).requires_grad is False
    pg.sum(x % y).backward()
    assert_close(x % y, xp.remainder(a, b))
    assert_close(x.grad, np.array([1.0, 1.0, 1.0]))
    assert_close(y.grad, np.array([-2.0, 2.0, 3.0]))


# ---------------------------------------------------------------------------
# clip
# ---------------------------------------------------------------------------

CLIPS = {  # id: (x shape, min, max) -- "arr" is an array bound of the given shape
    "scalars": ((2, 3), -0.5, 0.5),
    "arrays": ((2, 3), ("arr", (3,)), ("arr", (2, 1))),
    "min_array_only": ((2, 3), ("arr", (2, 3)), None),
    "max_array_only": ((2, 3), None, ("arr", (3,))),
    "max_scalar_only": ((4,), None, 0.2),
    "min_scalar_only": ((4,), -0.2, None),
    "no_bounds": ((4,), None, None),
    "0d": ((), -0.1, ("arr", ())),
    "bounds_broadcast_x": ((3,), ("arr", (2, 1)), None),
}


def _clip_args(xp, name):
    shape, lo, hi = CLIPS[name]
    x = make(xp, "n", shape, name)
    lo = -make(xp, "p", lo[1], name + "lo") if isinstance(lo, tuple) else lo  # in [-2, -0.5]
    hi = make(xp, "p", hi[1], name + "hi") if isinstance(hi, tuple) else hi  # in [0.5, 2]
    return x, lo, hi


@pytest.mark.parametrize("name", sorted(CLIPS))
def test_clip_value_matches_backend(xp, name):
    """clip(x, min, max) equals xp.clip for scalar, array, one-sided and absent bounds."""
    x, lo, hi = _clip_args(xp, name)
    assert_close(pg.clip(pg.Variable(x), lo, hi), xp.clip(x, lo, hi))
    assert_close(pg.clip(pg.Variable(x), min=lo, max=hi), xp.clip(x, min=lo, max=hi))


@pytest.mark.parametrize("name", sorted(CLIPS))
def test_clip_gradient_matches_numerical(xp, name):
    """Gradients w.r.t. x and each array bound (order 2) agree with central differences."""
    x, lo, hi = _clip_args(xp, name)
    arrays = [x] + [b for b in (lo, hi) if not isinstance(b, (float, type(None)))]
    has_lo, has_hi = not isinstance(lo, (float, type(None))), not isinstance(hi, (float, type(None)))

    def f(v, *bounds):
        bounds = list(bounds)
        low = bounds.pop(0) if has_lo else lo
        high = bounds.pop(0) if has_hi else hi
        return pg.clip(v, low, high)

    check_grads(f, arrays, order=2)


def test_clip_gradient_at_the_bounds_goes_to_x(xp):
    """x == min or x == max: the gradient passes to x (bounds included), not to the bound."""
    x = pg.Variable(arr(xp, [-1.0, -0.5, 0.0, 0.5, 1.0]))
    lo, hi = pg.Variable(arr(xp, -0.5)), pg.Variable(arr(xp, 0.5))
    pg.sum(pg.clip(x, lo, hi) * arr(xp, [1.0, 2.0, 3.0, 4.0, 5.0])).backward()
    assert_close(x.grad, np.array([0.0, 2.0, 3.0, 4.0, 0.0]))
    assert_close(lo.grad, np.asarray(1.0))
    assert_close(hi.grad, np.asarray(5.0))


def test_clip_keeps_x_dtype_and_gives_bound_its_dtype(xp):
    """clip(x32, min=array64) is float32, like xp.clip; the bound's gradient is float64."""
    x = pg.Variable(arr(xp, [0.0, 2.0], "float32"))
    lo = pg.Variable(arr(xp, [1.0, 1.0]))
    y = pg.clip(x, lo)
    assert y.dtype == xp.clip(x.data, lo.data).dtype
    pg.sum(y).backward()
    assert x.grad.dtype == xp.float32 and lo.grad.dtype == xp.float64
    assert_close(lo.grad, np.array([1.0, 0.0]))


def test_clip_integer_array_has_backend_value(xp):
    """clip on an integer array with integer bounds equals xp.clip (no gradient involved)."""
    a = arr(xp, [-3, 0, 4, 9], "int64")
    assert_close(pg.clip(a, 0, 5), xp.clip(a, 0, 5))
    assert_close(pg.clip(pg.Variable(a), max=2), xp.clip(a, max=2))


# ---------------------------------------------------------------------------
# Conventions at non-differentiable points
# ---------------------------------------------------------------------------


def test_minimum_tie_sends_gradient_to_first(xp):
    """minimum(x, y) at x == y gives the whole gradient to x, like maximum."""
    x, y = pg.Variable(arr(xp, [1.0, 2.0])), pg.Variable(arr(xp, [1.0, 0.0]))
    pg.sum(pg.minimum(x, y)).backward()
    assert_close(x.grad, np.array([1.0, 0.0]))
    assert_close(y.grad, np.array([0.0, 1.0]))


@pytest.mark.parametrize("name", ["hypot", "atan2"])
def test_hypot_and_atan2_gradient_at_origin_is_zero(xp, name):
    """At (0, 0) the gradient is 0 (not NaN), and finite at second order."""
    x, y = pg.Variable(arr(xp, [0.0, 3.0])), pg.Variable(arr(xp, [0.0, 4.0]))
    gx, gy = pg.grad(pg.sum(getattr(pg.ops, name)(x, y)), [x, y], create_graph=True)
    want = {"hypot": ([0.0, 0.6], [0.0, 0.8]), "atan2": ([0.0, 0.16], [0.0, -0.12])}[name]
    assert_close(gx, np.array(want[0]))
    assert_close(gy, np.array(want[1]))
    (h,) = pg.grad(pg.sum(gx + gy), [x], allow_unused=True)
    assert bool(xp.all(xp.isfinite(h.data)))


def test_copysign_gradient_is_sign_agreement_and_none_for_sign_source(xp):
    """d copysign(x, y)/dx is +1 where the signs agree and -1 where not; y gets no gradient."""
    x, y = pg.Variable(arr(xp, [2.0, -2.0, 3.0, -0.0])), pg.Variable(arr(xp, [1.0, 1.0, -1.0, -1.0]))
    pg.sum(pg.copysign(x, y)).backward()
    assert_close(x.grad, np.array([1.0, -1.0, -1.0, 1.0]))
    assert y.grad is None


def test_nextafter_gradient_is_one_for_x1_and_none_for_x2(xp):
    """nextafter(x1, x2) moves x1 by one ulp: gradient 1 w.r.t. x1, none w.r.t. x2."""
    x, y = pg.Variable(arr(xp, [1.0, -2.0])), pg.Variable(arr(xp, [2.0, -3.0]))
    pg.sum(pg.nextafter(x, y) * arr(xp, [3.0, 4.0])).backward()
    assert_close(x.grad, np.array([3.0, 4.0]))
    assert y.grad is None


def test_abs_gradient_at_zero_is_zero_real_and_complex(xp):
    """abs'(0) = 0 for real and complex inputs (no NaN)."""
    x = pg.Variable(arr(xp, [0.0, -2.0]))
    pg.sum(pg.abs(x)).backward()
    assert_close(x.grad, np.array([0.0, -1.0]))
    z = pg.Variable(arr(xp, [0j, 3 + 4j], "complex128"))
    pg.sum(pg.abs(z)).backward()
    assert_close(z.grad, np.array([0j, 0.6 + 0.8j]))


def test_pow_exponent_gradient_is_zero_where_base_is_zero(xp):
    """d/dy 0**y = 0 (not NaN), for an array base and a Python scalar base."""
    y = pg.Variable(arr(xp, [2.0, 0.5]))
    pg.sum(pg.pow(arr(xp, [0.0, 4.0]), y)).backward()
    assert_close(y.grad, np.array([0.0, 2.0 * math.log(4.0)]))
    y.cleargrad()
    pg.sum(pg.pow(0.0, y)).backward()
    assert_close(y.grad, np.array([0.0, 0.0]))


def test_pow_exponent_gradient_with_scalar_base(xp):
    """2.0 ** y has gradient log(2) 2**y w.r.t. y, at first and second order."""
    check_grads(lambda v: pg.pow(2.0, v), [arr(xp, [0.3, -1.2])], order=2)


# ---------------------------------------------------------------------------
# Functions without gradient: values, and outputs that never require grad
# ---------------------------------------------------------------------------

F = [[1.5, -2.5, 0.5], [-0.0, 2.0, -0.7]]
SPECIAL = [1.0, -math.inf, math.nan, -0.0, 3.5]
I = [[5, -3, 12], [7, 0, -8]]
B = [[True, False, True], [False, False, True]]
NOGRAD = {  # name: (dtype, values, second operand or None)
    "floor": ("float64", F, None), "ceil": ("float64", F, None), "trunc": ("float64", F, None),
    "round": ("float64", F, None), "sign": ("float64", F, None), "floor_divide": ("float64", F, [2.0, -1.5, 0.25]),
    "isfinite": ("float64", SPECIAL, None), "isinf": ("float64", SPECIAL, None), "isnan": ("float64", SPECIAL, None),
    "signbit": ("float64", SPECIAL, None), "equal": ("float64", F, [1.5, 0.0, 0.5]),
    "less": ("float64", F, [1.5, 0.0, 0.5]), "greater_equal": ("float64", F, [1.5, 0.0, 0.5]),
    "logical_and": ("bool", B, [True, False, False]), "logical_or": ("bool", B, [True, False, False]),
    "logical_xor": ("bool", B, [True, False, False]), "logical_not": ("bool", B, None),
    "bitwise_and": ("int64", I, [3, 6, 1]), "bitwise_or": ("int64", I, [3, 6, 1]),
    "bitwise_xor": ("int64", I, [3, 6, 1]), "bitwise_invert": ("int64", I, None),
    "bitwise_left_shift": ("int64", I, [1, 2, 3]), "bitwise_right_shift": ("int64", I, [1, 2, 3]),
}


@pytest.mark.parametrize("name", sorted(NOGRAD))
def test_function_without_gradient_value_and_no_grad(xp, name):
    """The backend's value; the output never requires grad, even from an input that does."""
    dtype, values, other = NOGRAD[name]
    a = arr(xp, values, dtype)
    args = (a,) if other is None else (a, arr(xp, other, dtype))
    x = pg.Variable(a, requires_grad=xp.isdtype(a.dtype, "real floating"))
    out = getattr(pg.ops, name)(x, *args[1:])
    assert out.requires_grad is False
    assert_close(out, getattr(xp, name)(*args))


@pytest.mark.parametrize("name", sorted(NOGRAD))
def test_function_without_gradient_is_declared_so(name):
    """Each such function is a row of REGISTRY declared without a gradient."""
    assert REGISTRY[name].differentiable is False


def test_integer_and_bool_operators_on_variables(xp):
    """&, |, ^, ~, <<, >> on Variables call the standard's bitwise functions."""
    a, b = arr(xp, I, "int64"), arr(xp, [1, 2, 3], "int64")
    x, y = pg.Variable(a), pg.Variable(b)
    for got, want in [(x & y, xp.bitwise_and(a, b)), (x | y, xp.bitwise_or(a, b)), (x ^ y, xp.bitwise_xor(a, b)),
                      (~x, xp.bitwise_invert(a)), (x << y, xp.bitwise_left_shift(a, b)),
                      (x >> y, xp.bitwise_right_shift(a, b))]:
        assert_close(got, want)
    m = pg.Variable(arr(xp, B, "bool"))
    assert_close(~m, xp.logical_not(arr(xp, B, "bool")))


def test_rounding_feeds_a_differentiable_op(xp):
    """floor(x) * x: floor contributes a constant factor (zero derivative almost everywhere)."""
    f = lambda v: pg.floor(v) * v + pg.round(v) * pg.trunc(v) - pg.ceil(v)  # noqa: E731
    check_grads(f, [arr(xp, [1.3, -2.6, 0.4])], order=2)


# ---------------------------------------------------------------------------
# Complex inputs (PyTorch's convention: the gradient of z = a + ib is dL/da + i dL/db)
# ---------------------------------------------------------------------------

COMPLEX_UNARY = ["negative", "positive", "square", "reciprocal", "exp", "expm1", "log", "log1p", "log2", "log10",
                 "sqrt", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh",
                 "atanh", "real", "imag", "conj", "abs"]


@pytest.mark.parametrize("name", COMPLEX_UNARY)
def test_complex_unary_value_and_gradient(xp, name):
    """On complex128: the backend's value, and gradients (order 2) by the complex dot-product test."""
    z = make(xp, "c", (2, 3), name)
    fn = getattr(pg.ops, name)
    assert_close(fn(pg.Variable(z)), getattr(xp, name)(z))
    check_complex_grads(fn, [z], order=2)


COMPLEX_BINARY = {
    "add": lambda a, b: a + b, "subtract": lambda a, b: a - b, "multiply": lambda a, b: a * b,
    "divide": lambda a, b: a / b, "pow": lambda a, b: a ** b,
    "pow_scalar_exponent": lambda a, b: a ** 3 * b ** 0.5,
    "pow_scalar_base": lambda a, b: 2.0 ** a + (1 + 1j) ** b,
    "where": lambda a, b: pg.where(pg.real(a) > 0, a * b, b),
}


@pytest.mark.parametrize("name", sorted(COMPLEX_BINARY))
def test_complex_binary_gradient(xp, name):
    """Arithmetic on two complex arrays: gradients (order 2) by the complex dot-product test."""
    a, b = make(xp, "c", (2, 3), name + "a"), make(xp, "c", (3,), name + "b")
    check_complex_grads(COMPLEX_BINARY[name], [a, b], order=2)


MIXED = {
    "multiply": lambda a, b: a * b, "divide": lambda a, b: b / a, "add": lambda a, b: a + b,
    "pow_real_base": lambda a, b: a ** b, "pow_complex_base": lambda a, b: b ** a,
    "abs_real_part": lambda a, b: pg.abs(a * b) * a + pg.real(b) * a,
}


@pytest.mark.parametrize("name", sorted(MIXED))
def test_real_and_complex_operands_gradient(xp, name):
    """A real operand of a complex result gets the real part of its gradient (order 2)."""
    a, b = make(xp, "p", (3,), name + "a"), make(xp, "c", (2, 3), name + "b")
    check_complex_grads(MIXED[name], [a, b], order=2)


def test_complex_gradient_of_squared_modulus_is_2z(xp):
    """L = sum |z|**2 has gradient 2z (PyTorch's convention), through abs and through z * conj(z)."""
    z = pg.Variable(arr(xp, [1 + 2j, -3 + 0.5j], "complex128"))
    (g1,) = pg.grad(pg.sum(pg.abs(z) ** 2), [z])
    (g2,) = pg.grad(pg.sum(pg.real(z * pg.conj(z))), [z])
    assert_close(g1, np.array([2 + 4j, -6 + 1j]))
    assert_close(g2, np.array([2 + 4j, -6 + 1j]))


def test_complex_gradients_of_real_and_imag(xp):
    """d sum(real(z)) = 1 and d sum(imag(z)) = i."""
    z = pg.Variable(arr(xp, [1 + 2j, -3 + 0.5j], "complex128"))
    (gr,) = pg.grad(pg.sum(pg.real(z)), [z])
    (gi,) = pg.grad(pg.sum(pg.imag(z)), [z])
    assert_close(gr, np.array([1 + 0j, 1 + 0j]))
    assert_close(gi, np.array([1j, 1j]))


def test_astype_real_to_complex_gradient_is_real_part(xp):
    """astype(x, complex128): x's gradient is the real part, in x's dtype."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    y = pg.astype(x, xp.complex128) * arr(xp, [1j, 2 + 1j], "complex128")
    (g,) = pg.grad(pg.sum(pg.imag(y)), [x])
    assert_close(g, np.array([1.0, 1.0]))
    check_grads(lambda v: pg.imag(pg.astype(v, xp.complex128) * arr(xp, [1j, 2 + 1j], "complex128")) * v,
                [arr(xp, [1.0, 2.0])], order=2)


# ---------------------------------------------------------------------------
# Signatures and the namespace
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", STANDARD + ("where", "zeros_like", "ones_like", "astype"))
def test_signature_matches_array_api_strict(name):
    """Parameter names, kinds and defaults equal array_api_strict's (annotations aside)."""
    assert plain_signature(getattr(elementwise, name)) == plain_signature(getattr(array_api_strict, name))


@pytest.mark.parametrize("name", STANDARD)
def test_namespace_uses_polygrad_function(xp, name):
    """x.__array_namespace__().<name> is polygrad's own function (a row of the table), not a fallback."""
    ns = pg.Variable(arr(xp, [1.0])).__array_namespace__()
    assert getattr(ns, name) is getattr(elementwise, name)
    assert name in REGISTRY

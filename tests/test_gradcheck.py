"""polygrad.testing: the gradient checks pass for right gradients and fail,
saying where, for wrong ones."""

from __future__ import annotations

import numpy as np
import pytest

import polygrad as pg
from polygrad.testing import check_backward, check_double_backward, check_grads, numerical_grad

from conftest import arr
from conftest import to_np


class Cube(pg.Function):
    """x ** 3 with a right backward."""

    def forward(self, inputs):
        (x,) = inputs
        return (x * x * x,)

    def backward(self, inputs, grad_outputs):
        (x,) = inputs
        (gy,) = grad_outputs
        return (3 * x * x * gy,)


class WrongCube(Cube):
    """x ** 3 whose backward forgets the factor 3."""

    def backward(self, inputs, grad_outputs):
        (x,) = inputs
        (gy,) = grad_outputs
        return (x * x * gy,)


class MulAdd(pg.Function):
    """(x * y, x + y): two inputs, two outputs, right backward."""

    def forward(self, inputs):
        x, y = inputs
        return x * y, x + y

    def backward(self, inputs, grad_outputs):
        x, y = inputs
        g0, g1 = grad_outputs
        return g0 * y + g1, g0 * x + g1


class MulAddWrongY(MulAdd):
    """Like MulAdd, but the gradient of input 1 (y) is wrong."""

    def backward(self, inputs, grad_outputs):
        x, y = inputs
        g0, g1 = grad_outputs
        return g0 * y + g1, g0 * y + g1


class Scale3(pg.Function):
    """3 * x: linear, so its vjp does not depend on x and its second derivative is 0."""

    def forward(self, inputs):
        return (3.0 * inputs[0],)

    def backward(self, inputs, grad_outputs):
        return (3.0 * grad_outputs[0],)


def cube(x):
    return Cube()(x)


def wrong_cube(x):
    return WrongCube()(x)


def mul_add(x, y):
    return MulAdd()(x, y)


def mul_add_wrong_y(x, y):
    return MulAddWrongY()(x, y)


def scale3(x):
    return Scale3()(x)


XS = [0.5, -1.2, 2.0]


# ---------------------------------------------------------------------------
# numerical_grad
# ---------------------------------------------------------------------------


def test_numerical_grad_of_square(xp):
    """numerical_grad of x**2 with output gradient g is 2 x g."""
    x = arr(xp, XS)
    g = arr(xp, [1.0, 2.0, -1.0])
    (gx,) = numerical_grad(lambda v: v * v, [x], [g])
    np.testing.assert_allclose(to_np(gx), 2 * np.array(XS) * np.array([1.0, 2.0, -1.0]), rtol=1e-6)


def test_numerical_grad_of_two_inputs(xp):
    """numerical_grad of x * y gives (g y, g x), with the inputs' shapes."""
    x, y = arr(xp, [[1.0, 2.0], [3.0, 4.0]]), arr(xp, [5.0, -6.0])
    gx, gy = numerical_grad(lambda a, b: a * b, [x, y], [xp.ones((2, 2), dtype=xp.float64)])
    np.testing.assert_allclose(to_np(gx), [[5.0, -6.0], [5.0, -6.0]], rtol=1e-6)
    np.testing.assert_allclose(to_np(gy), [4.0, 6.0], rtol=1e-6)


def test_numerical_grad_of_several_outputs(xp):
    """With two outputs the numerical gradient sums both contributions."""
    x = arr(xp, [1.0, 2.0])
    (gx,) = numerical_grad(lambda v: (pg.sin(v), v * 3.0), [x], [arr(xp, [1.0, 1.0]), arr(xp, [2.0, 0.0])])
    np.testing.assert_allclose(to_np(gx), np.cos([1.0, 2.0]) + [6.0, 0.0], rtol=1e-6)


def test_numerical_grad_does_not_modify_input(xp):
    """numerical_grad leaves its input arrays unchanged."""
    x = arr(xp, XS)
    numerical_grad(lambda v: v * v, [x], [arr(xp, [1.0, 1.0, 1.0])])
    np.testing.assert_array_equal(to_np(x), XS)


# ---------------------------------------------------------------------------
# check_grads
# ---------------------------------------------------------------------------


def test_check_grads_passes_for_right_function(xp):
    """check_grads (order 1) accepts a user Function with a right backward."""
    check_grads(cube, [arr(xp, XS)])


def test_check_grads_passes_for_two_outputs(xp):
    """check_grads accepts a right two-input, two-output user Function."""
    check_grads(mul_add, [arr(xp, XS), arr(xp, [1.0, 2.0, 3.0])])


def test_check_grads_fails_for_wrong_backward(xp):
    """check_grads raises AssertionError naming the function and showing both values."""
    with pytest.raises(AssertionError) as info:
        check_grads(wrong_cube, [arr(xp, XS)])
    msg = str(info.value)
    assert "wrong_cube" in msg
    assert "analytic" in msg and "numeric" in msg
    assert "order 1" in msg


def test_check_grads_order2_passes_for_ops(xp):
    """check_grads order 2 accepts functions built of ops (differentiable twice)."""
    check_grads(lambda v: pg.sin(v) * v ** 3, [arr(xp, XS)], order=2)


@pytest.mark.parametrize("fn", [cube, scale3], ids=["nonlinear", "linear"])
def test_check_grads_order2_of_a_user_function_raises(xp, fn):
    """A user Function is differentiable once: its backward runs on arrays. A second derivative
    through it raises (PyTorch's once_differentiable), linear or not: polygrad cannot tell, and
    taking it as zero, as it did, was wrong for a nonlinear one."""
    with pytest.raises(RuntimeError, match="differentiable once"):
        check_grads(fn, [arr(xp, XS)], order=2)


@pytest.fixture
def two_faced():
    """An op 2 * x whose create_graph rule is right but whose plain (raw-array) rule says 3."""
    from polygrad.ops import REGISTRY, Op, apply, defvjp

    name = "test_gradcheck_two_faced"
    op = defvjp(Op(name, lambda xp, x: 2.0 * x),
                lambda o, g, ans, x: g * 2.0 if isinstance(g, pg.Variable) else g * 3.0)
    try:
        yield lambda x: apply(op, (x,))
    finally:
        REGISTRY.pop(name, None)


def test_check_grads_order1_catches_wrong_plain_backward(xp, two_faced):
    """order 1 checks the plain backward: the wrong raw-array rule is caught."""
    with pytest.raises(AssertionError):
        check_grads(two_faced, [arr(xp, XS)], order=1)


def test_check_grads_order2_also_checks_plain_backward(xp, two_faced):
    """order 2 checks everything order 1 does: a wrong plain backward fails it too."""
    with pytest.raises(AssertionError):
        check_grads(two_faced, [arr(xp, XS)], order=2)


def test_check_grads_wrt_checks_only_chosen_inputs(xp):
    """wrt=[0] checks input 0 only: a wrong gradient of input 1 passes unnoticed, wrt=[1] catches it."""
    x, y = arr(xp, XS), arr(xp, [1.0, 2.0, 3.0])
    check_grads(mul_add_wrong_y, [x, y], wrt=[0])
    with pytest.raises(AssertionError, match="input 1"):
        check_grads(mul_add_wrong_y, [x, y], wrt=[1])


def test_check_grads_accepts_variables(xp):
    """Inputs may be Variables as well as arrays."""
    check_grads(cube, [pg.Variable(arr(xp, XS))])


# ---------------------------------------------------------------------------
# check_backward
# ---------------------------------------------------------------------------


def test_check_backward_passes_for_right_function(xp):
    """check_backward accepts a right user Function (random and given y_grad)."""
    check_backward(cube, arr(xp, XS))
    check_backward(cube, arr(xp, XS), arr(xp, [1.0, -2.0, 0.5]))


def test_check_backward_passes_for_two_inputs_two_outputs(xp):
    """check_backward accepts a tuple of inputs and of output gradients."""
    check_backward(mul_add, (arr(xp, XS), arr(xp, [1.0, 2.0, 3.0])), (arr(xp, [1.0, 1.0, 1.0]), arr(xp, [0.5, 0.5, 0.5])))


def test_check_backward_fails_for_wrong_backward(xp):
    """check_backward raises AssertionError saying which input and element differ, with both values."""
    with pytest.raises(AssertionError) as info:
        check_backward(wrong_cube, arr(xp, XS), arr(xp, [1.0, 1.0, 1.0]))
    msg = str(info.value)
    assert "input 0" in msg
    assert "3 of 3 elements differ" in msg
    assert "flat index 0" in msg
    # analytic x^2 = 0.25, numeric 3 x^2 = 0.75 at the first element
    assert "analytic 0.25" in msg and "numeric 0.75" in msg


def test_check_backward_names_the_wrong_input(xp):
    """Only input 1 is wrong: the message names input 1."""
    with pytest.raises(AssertionError, match="input 1"):
        check_backward(mul_add_wrong_y, (arr(xp, XS), arr(xp, [1.0, 2.0, 3.0])))


def test_check_backward_detects_a_single_wrong_element(xp):
    """A gradient wrong in one element only is caught, at that element."""

    class OneOff(pg.Function):
        def forward(self, inputs):
            return (inputs[0] * 2.0,)

        def backward(self, inputs, grad_outputs):
            g = 2.0 * grad_outputs[0]
            return (g + self.xp.asarray([0.0, 0.0, 1.0], dtype=g.dtype),)

    with pytest.raises(AssertionError, match="1 of 3 elements differ; first at flat index 2"):
        check_backward(lambda v: OneOff()(v), arr(xp, XS), arr(xp, [1.0, 1.0, 1.0]))


def test_check_backward_on_ops(xp):
    """check_backward also works on functions made of ops."""
    check_backward(lambda v: pg.sum(pg.exp(v) * v, axis=0), arr(xp, [[0.1, 0.2], [0.3, -0.4]]))


# ---------------------------------------------------------------------------
# check_double_backward
# ---------------------------------------------------------------------------


def test_check_double_backward_passes_for_ops(xp):
    """check_double_backward accepts a function made of ops."""
    check_double_backward(lambda v: pg.tanh(v) * v * v, arr(xp, XS))


@pytest.mark.parametrize("fn", [cube, scale3], ids=["nonlinear", "linear"])
def test_check_double_backward_of_a_user_function_raises(xp, fn):
    """A user Function (backward on arrays) cannot be differentiated twice: check_double_backward
    raises naming it, as Chainer's does for a Function without double backprop."""
    with pytest.raises(RuntimeError, match="differentiable once"):
        check_double_backward(fn, arr(xp, XS))


def test_check_double_backward_fails_for_wrong_second_derivative(xp):
    """A function whose first derivative is right but second is wrong (detached factor) fails."""

    def f(v):
        # value v**2 / 2 and first derivative v, but the derivative is the detached
        # copy d, so the second derivative comes out 0 instead of 1.
        d = v.detach()
        return v * d - 0.5 * d * d

    check_backward(f, arr(xp, XS))
    with pytest.raises(AssertionError, match="vjp of f"):
        check_double_backward(f, arr(xp, XS))


# ---------------------------------------------------------------------------
# Integer inputs (findings S13) and float32 precision (findings U10)
# ---------------------------------------------------------------------------


class WrongExp(pg.Function):
    """exp whose backward forgets the factor exp(x)."""

    def forward(self, inputs):
        return (self.xp.exp(inputs[0]),)

    def backward(self, inputs, grad_outputs):
        return (grad_outputs[0],)


def wrong_exp(x):
    return WrongExp()(x)


@pytest.mark.parametrize("dtype", ["int64", "int32", "bool"])
def test_check_grads_refuses_integer_and_bool_inputs(xp, dtype):
    """An integer or bool input is a TypeError naming the checker, the input and its dtype (it passed a wrong gradient)."""
    x = xp.asarray([1, 0, 1], dtype=getattr(xp, dtype))
    with pytest.raises(TypeError, match=rf"check_grads: input 0 is of dtype \S*{dtype}; only floating-point inputs"):
        check_grads(wrong_exp, [x])


@pytest.mark.parametrize("checker", [check_backward, check_double_backward])
def test_check_backward_refuses_integer_inputs(xp, checker):
    """check_backward and check_double_backward refuse an integer input and say how to leave it out."""
    with pytest.raises(TypeError, match=rf"{checker.__name__}: input 0 is of dtype \S*int64.*no_grads="):
        checker(wrong_exp, xp.asarray([1, 2, 0], dtype=xp.int64))


def test_integer_inputs_left_out_are_accepted(xp):
    """Integer labels are fine when not differentiated: wrt= for check_grads, no_grads= for check_backward."""
    import polygrad.functions as F

    x, t = arr(xp, [[0.5, -1.0, 2.0], [1.0, 0.0, -0.5]]), xp.asarray([2, 0], dtype=xp.int64)
    check_grads(F.softmax_cross_entropy, [x, t], wrt=[0])
    check_backward(F.softmax_cross_entropy, (x, t), no_grads=[False, True])
    check_double_backward(F.softmax_cross_entropy, (x, t), no_grads=[False, True])


def test_float32_right_gradients_pass_with_the_defaults(xp):
    """Right gradients in float32 pass every checker with the default eps and tolerances (they failed at eps=1e-6)."""
    rng = np.random.default_rng(0)
    x = arr(xp, rng.standard_normal((20, 20)), "float32")
    check_grads(lambda v: pg.sum(pg.exp(v) * v), [x], order=2)
    check_grads(lambda v: pg.tanh(v) * 3.0, [x])
    small = arr(xp, rng.standard_normal((3, 2)), "float32")
    check_backward(lambda v: pg.exp(v) * v, small)
    check_double_backward(lambda v: pg.tanh(v) * v, small)


def test_float32_wrong_gradients_still_fail_and_name_the_dtype(xp):
    """A wrong float32 gradient fails, and the message says the dtype's precision may be the cause."""
    x = arr(xp, XS, "float32")
    with pytest.raises(AssertionError, match=r"float32 \(machine epsilon 1.2e-07\).*if the gradient passes in float64"):
        check_grads(wrong_exp, [x])
    with pytest.raises(AssertionError, match=r"check_backward failed for input 0.*float32"):
        check_backward(wrong_exp, x)


def test_float64_failures_do_not_blame_the_dtype(xp):
    """In float64 the message has no precision hint."""
    with pytest.raises(AssertionError) as info:
        check_grads(wrong_exp, [arr(xp, XS)])
    assert "precision" not in str(info.value)


def test_explicit_eps_and_tolerances_are_used(xp):
    """eps/atol/rtol given by the caller are not replaced: eps=1e-6 on float32 makes a right gradient fail, as before."""
    x = arr(xp, np.random.default_rng(1).standard_normal((30, 30)), "float32")
    with pytest.raises(AssertionError, match="float32"):
        check_grads(lambda v: pg.sum(pg.exp(v)), [x], eps=1e-6, atol=1e-5, rtol=1e-4)


def test_sums_use_the_widest_float_the_namespace_has():
    """No float64 is assumed: a namespace whose widest real floating dtype is float32 gets float32."""
    from polygrad.testing.gradcheck import _widest_float

    class Info:
        def dtypes(self, kind=None):
            return {"float32": "f4"}

    class NoFloat64:
        __array_namespace_info__ = Info

    assert _widest_float(NoFloat64()) == "f4"
    import array_api_strict as sx

    assert _widest_float(sx) == sx.float64


def test_testing_names_no_dtype_unconditionally():
    """polygrad/testing never spells xp.float64 or xp.int64 (a backend may lack them)."""
    import pathlib

    import polygrad.testing

    for path in pathlib.Path(polygrad.testing.__file__).parent.glob("*.py"):
        text = path.read_text()
        assert "xp.float64" not in text and "xp.int64" not in text, path


@pytest.mark.parametrize("checker", ["check_grads", "check_backward", "check_double_backward"])
def test_an_unknown_size_is_a_clear_error_naming_it(checker):
    """An output whose size is unknown until computed (dask's NaN after a boolean mask) is a
    ValueError naming the checker, the output and its shape, not whatever the generator raised
    on the size (int(None), dask's rechunking error)."""
    da = pytest.importorskip("dask.array")
    x = da.from_array(np.array([1.0, -2.0, 3.0]), chunks=2)
    fn = {"check_grads": check_grads, "check_backward": check_backward,
          "check_double_backward": check_double_backward}[checker]
    with pytest.raises(ValueError, match=rf"polygrad\.testing\.{checker}: output 0 has shape \(nan,\), with a size "
                                         r"unknown until it is computed"):
        fn(lambda v: v[v > 0], [x] if checker == "check_grads" else x)


def test_the_standards_unknown_size_none_is_named_too():
    """The standard writes an unknown size as None: the same error, naming the shape."""
    import types

    from polygrad.testing.gradcheck import known_shape

    assert known_shape(types.SimpleNamespace(shape=[2, 3]), "check", "input 0") == (2, 3)
    with pytest.raises(ValueError, match=r"check: input 1 has shape \(2, None\), with a size unknown"):
        known_shape(types.SimpleNamespace(shape=(2, None)), "check", "input 1")


# ---------------------------------------------------------------------------
# Checkers that must fail (mutation tests, stop 25)
# ---------------------------------------------------------------------------
def _mutated_sin():
    """sin whose rule is right in value and in x, but doubles its dependence on the incoming
    gradient g (through a product whose gradient in its first factor is doubled)."""
    from polygrad.extend import Op, apply, binary, defvjp

    mulw = defvjp(Op("test_gradcheck_mulw", lambda xp, a, b: a * b),
                  lambda o, g, ans, a, b: 2 * g * b, lambda o, g, ans, a, b: g * a, saves="xy")
    binary(mulw)
    sin = defvjp(Op("test_gradcheck_sin", lambda xp, x: xp.sin(x)),
                 lambda o, g, ans, x: o.test_gradcheck_mulw(g, o.cos(x)), saves="x")
    return lambda v: apply(sin, (v,))


def test_second_order_checks_see_the_dependence_on_the_output_gradient():
    """Each second-order check held the output gradient u fixed, so a rule wrong only in how it
    depends on it passed them all (and the conformance suite), while sin(sin(x))'' came out
    -1.218 for -0.866. The vjp is checked as a function of x and u now, as Chainer's
    check_double_backward does."""
    from polygrad.core.op import REGISTRY
    from polygrad_conformance.gradcheck import check_vjp

    f = _mutated_sin()
    try:
        x = np.random.default_rng(2).normal(size=(3, 4))
        check_backward(f, x)  # first order: right
        check_grads(f, [x])
        for check in (lambda: check_double_backward(f, x), lambda: check_grads(f, [x], order=2),
                      lambda: check_vjp(f, [x], order=2)):
            with pytest.raises(AssertionError):
                check()
    finally:
        REGISTRY.pop("test_gradcheck_sin")
        REGISTRY.pop("test_gradcheck_mulw")


def test_check_backward_fails_on_nan():
    """A NaN gradient passed check_backward: abs(nan - n) > tol is False."""
    class NaNGrad(pg.Function):
        def forward(self, inputs):
            return inputs[0] * 2.0,

        def backward(self, inputs, grad_outputs):
            return grad_outputs[0] * float("nan"),

    with pytest.raises(AssertionError, match="analytic nan"):
        check_backward(lambda v: NaNGrad()(v), np.array([1.0, 2.0, 3.0]))


def test_check_double_backward_checks_the_first_order():
    """A function without any gradient passed: its vjp is zeros, whose derivatives are zero."""
    class NoGrad(pg.Function):
        def forward(self, inputs):
            return inputs[0] * inputs[0],

        def backward(self, inputs, grad_outputs):
            return None,

    with pytest.raises(AssertionError, match="check_backward failed for input 0"):
        check_double_backward(lambda v: NoGrad()(v), np.array([1.0, 2.0, 3.0]))


def test_float32_checks_divide_by_the_step_taken():
    """x + eps rounds in float32: near 1500 the step is 0.79% short, which the measured error
    (the same fraction at half the step) did not show, so right gradients failed."""
    x = np.array([1500.3, 1700.7, 2049.1], dtype=np.float32)
    check_backward(lambda v: pg.sin(v), x)
    check_double_backward(lambda v: (v - 1500.0) * (v - 1500.0), x)


# ---------------------------------------------------------------------------
# Complex inputs: the checkers see imaginary parts (stop 26, against JAX)
# ---------------------------------------------------------------------------


class _Square(pg.Function):
    """z * z with a vjp given by ``rule``."""

    def __init__(self, rule):
        self.rule = rule

    def forward(self, inputs):
        z, = inputs
        return z * z,

    def backward(self, inputs, grad_outputs):
        return self.rule(inputs[0], grad_outputs[0]),


_Z = np.array([1.0 + 2.0j, -0.5 + 0.3j, 0.7 - 1.1j])


def test_checkers_pass_a_right_complex_gradient():
    """The right vjp of z^2 is g conj(2z) (polygrad's convention, PyTorch's); check_backward failed
    it (its numerical gradient stepped only the real part), and pg.exp's too."""
    right = lambda z, g: g * np.conj(2 * z)  # noqa: E731
    check_grads(lambda a: _Square(right)(a), [_Z])
    check_backward(lambda a: _Square(right)(a), _Z)
    check_backward(pg.exp, _Z)
    check_double_backward(pg.exp, _Z)


@pytest.mark.parametrize("wrong", [lambda z, g: g * 2 * z, lambda z, g: g * np.conj(2 * z) + 1000j],
                         ids=["no conj", "imaginary junk"])
def test_checkers_fail_a_wrong_complex_gradient(wrong):
    """check_grads passed a vjp missing its conj and one adding 1000j: it dropped imaginary parts
    and drew real directions only."""
    with pytest.raises(AssertionError, match="gradient check failed"):
        check_grads(lambda a: _Square(wrong)(a), [_Z])
    with pytest.raises(AssertionError, match=r"analytic .*[+-][0-9.e+-]+j, numeric"):
        check_backward(lambda a: _Square(wrong)(a), _Z)


class ShiftZero(pg.Function):
    """x + 273.15 whose backward forgets the gradient (returns zeros)."""

    def forward(self, inputs):
        return (inputs[0] + 273.15,)

    def backward(self, inputs, grad_outputs):
        return (grad_outputs[0] * 0.0,)


def test_float32_rounding_allowance_does_not_excuse_a_zero_gradient(xp):
    """The float32 allowance for rounding counts only the outputs an element moves (check_backward)
    and adds the rounding of a random sum as one (check_grads): summing every output's rounding
    passed a zero gradient of x + 273.15 over 100 values (check_backward) and 10,000 (check_grads),
    while the right gradient still passes both."""
    rng = np.random.default_rng(0)
    small, large = (arr(xp, rng.standard_normal(n), "float32") for n in (100, 10_000))
    with pytest.raises(AssertionError, match="100 of 100 elements differ"):
        check_backward(lambda v: ShiftZero()(v), small)
    with pytest.raises(AssertionError, match="analytic <vjp"):
        check_grads(lambda v: ShiftZero()(v), [large])
    check_backward(lambda v: v + 273.15, small)
    check_grads(lambda v: v + 273.15, [large])
    # an output a small step moves by less than its rounding (a mean of large values) still counts
    big = arr(xp, rng.standard_normal(100) * 100, "float32")
    check_backward(lambda v: pg.sum(pg.tanh(v / 100)) * 100, big)


def test_output_gradients_must_cover_every_output(xp):
    """One output gradient for two outputs is refused by pg.grad, and so by check_backward: the
    second output was dropped, and the check passed whatever its gradient was."""
    x = arr(xp, XS)
    a, b = pg.Variable(x) * 2, pg.Variable(x) * 3
    with pytest.raises(ValueError, match="got 1 output gradients for 2 outputs"):
        pg.grad([a, b], [a], grad_outputs=[xp.ones_like(x)])
    with pytest.raises(ValueError, match="got 1 output gradients for 2 outputs"):
        check_backward(lambda v: (v * 2, v * 3), x, (xp.ones_like(x),))


@pytest.mark.parametrize("call, match", [
    (lambda x: check_grads(lambda v: v * 2, [x], wrt=[]), "wrt leaves no input"),
    (lambda x: check_grads(lambda v: v * 2, [x], wrt=[5]), "wrt names input 5, but the function has 1 input"),
    (lambda x: check_backward(lambda v: v * 2, x, no_grads=[True]), "no_grads leaves no input"),
    (lambda x: check_double_backward(lambda v: v * 2, x, no_grads=[True]), "no_grads leaves no input"),
])
def test_a_check_of_no_input_or_a_missing_one_is_refused(xp, call, match):
    """A check left with nothing to differentiate passed silently; an index past the inputs was an IndexError."""
    with pytest.raises(ValueError, match=match):
        call(arr(xp, XS))


def test_an_input_listed_twice_in_wrt_is_checked_once(xp):
    """wrt=[0, 0] checks input 0 (a right gradient failed: its direction counted twice)."""
    check_grads(lambda v: pg.exp(v), [arr(xp, XS)], wrt=[0, 0])
    with pytest.raises(AssertionError):
        check_grads(wrong_exp, [arr(xp, XS)], wrt=[0, 0])


def test_float64_failure_says_when_a_smaller_step_agrees_better(xp):
    """Chainer's eps=1e-3 is too large for sin(50 x): the message says a smaller step moves toward
    the analytic value; a wrong gradient gets no such hint."""
    x = arr(xp, XS)
    with pytest.raises(AssertionError, match=r"eps=0.001 may be too large"):
        check_backward(lambda v: pg.sin(50 * v), x)
    check_backward(lambda v: pg.sin(50 * v), x, eps=1e-5)
    with pytest.raises(AssertionError) as info:
        check_backward(wrong_exp, x)
    assert "too large" not in str(info.value)


def test_a_failing_check_backward_on_dask_reports_where():
    """On dask a failure is an AssertionError naming the element (building the message used
    nonzero, whose size dask does not know: a ValueError about unknown chunks)."""
    da = pytest.importorskip("dask.array")
    x = da.from_array(np.asarray(XS, dtype=np.float64), chunks=2)
    with pg.using_backend("dask"):
        with pytest.raises(AssertionError, match=r"check_backward failed for input 0.* of \d+ elements differ"):
            check_backward(wrong_exp, x)


def test_conformance_check_vjp_steps_by_the_dtype_and_bounds_its_extrapolation():
    """The conformance suite's check_vjp: a float32 input gets a float32 step (at 1e-6 the central
    difference was rounding noise: a right gradient failed, -122 for 4.7), and with
    extrapolate=True two estimates that disagree past the tolerance make the check fail as
    inconclusive (their difference was allowed in full, whatever its size)."""
    from polygrad_conformance.gradcheck import check_vjp

    x = np.random.default_rng(0).standard_normal(100).astype(np.float32)
    check_vjp(lambda v: v * 3.0 + 2.0, [x], rtol=1e-3, atol=1e-3)
    with pytest.raises(AssertionError, match="gradient check failed"):
        check_vjp(lambda v: ShiftZero()(v), [x], rtol=1e-3, atol=1e-3)

    class Noisy(pg.Function):  # not smooth at any scale: 0.1 * sign(sin(1e4 x))
        def forward(self, inputs):
            return (np.sign(np.sin(inputs[0] * 1e4)) * 0.1,)

        def backward(self, inputs, grad_outputs):
            return (grad_outputs[0] * 0.0,)

    with pytest.raises(AssertionError, match="inconclusive"):
        check_vjp(lambda v: Noisy()(v), [np.linspace(0.1, 1.0, 50)], eps=1e-3, extrapolate=True, seed=8)


def test_float64_checks_evaluate_the_function_only_near_the_point():
    """The large step that tells which outputs an element moves is taken for the float32 rounding
    allowance only, and where the function fails there every output counts as moved: in float64
    it made a cholesky of a symmetrised matrix fail (not positive definite there)."""
    a = np.array([[1.0, 0.9], [0.9, 1.0]])
    check_backward(lambda m: pg.linalg.cholesky((m + m.mT) / 2), a)

    def bounded(v):
        if float(pg.max(v).data) > 1:
            raise ValueError("outside the domain")
        return pg.asin(v)

    check_backward(bounded, np.array([0.3, 0.4], dtype=np.float32))


def test_numpy_integers_name_inputs_and_grad_outputs_may_be_any_iterable():
    x = np.array([0.5, 1.5])
    check_grads(lambda a, b: a * b, [x, x], wrt=np.arange(2))
    v = pg.Variable(x)
    (g,) = pg.grad([v * 2], [v], grad_outputs=(np.ones(2) for _ in range(1)))
    np.testing.assert_allclose(g.data, [2.0, 2.0])


def test_conformance_check_vjp_steps_by_the_narrowest_output_too():
    """A float64 input with a float32 output got float64's step of 1e-6 (0.7987 for 0.7153)."""
    from polygrad_conformance.gradcheck import check_vjp

    x = np.random.default_rng(1).standard_normal(20)
    check_vjp(lambda v: pg.sin(pg.astype(v, pg.float32)), [x], rtol=1e-3, atol=1e-3)


# ---------------------------------------------------------------------------
# What the checkers compare, and what they can tell (hunt_t)
# ---------------------------------------------------------------------------


class ShiftedSin(pg.Function):
    """sin(x) + offset, whose backward returns factor * cos(x) * g (right for factor 1)."""

    def __init__(self, offset, factor=1.0):
        self.offset, self.factor = offset, factor

    def forward(self, inputs):
        return (self.xp.sin(inputs[0]) + self.offset,)

    def backward(self, inputs, grad_outputs):
        return (self.factor * self.xp.cos(inputs[0]) * grad_outputs[0],)


def _shifted_sin(offset, factor=1.0):
    return lambda v: ShiftedSin(offset, factor)(v)


def test_float32_check_grads_passes_no_zero_or_flipped_gradient_it_cannot_resolve():
    """In float32 the values of sin(x) + 1e4 round by more than the step moves them: the rounding
    allowance (4 times the derivative) passed a zero and a sign-flipped gradient. Such a gradient
    now fails, or the check says it is inconclusive and how to decide it; a larger eps does."""
    x = np.random.default_rng(0).normal(size=20).astype(np.float32)
    for factor in (0.0, -1.0):
        with pytest.raises(AssertionError, match="gradient check failed|inconclusive"):
            check_grads(_shifted_sin(1e4, factor), [x], seed=1)
    with pytest.raises(AssertionError, match=r"inconclusive: in float32 .* zero gradient would pass .*float64.*eps"):
        check_grads(_shifted_sin(1e4), [x], seed=1)  # the right gradient: undecided, not passed
    check_grads(_shifted_sin(1e4), [x], seed=1, eps=0.05)
    for factor in (0.0, -1.0):
        with pytest.raises(AssertionError, match="gradient check failed"):
            check_grads(_shifted_sin(1e4, factor), [x], seed=1, eps=0.05)
    # at 1e3 the default step resolves it
    check_grads(_shifted_sin(1e3), [x], seed=1)
    for factor in (0.0, -1.0):
        with pytest.raises(AssertionError, match="gradient check failed"):
            check_grads(_shifted_sin(1e3, factor), [x], seed=1)


def test_float32_check_backward_passes_no_zero_gradient_it_cannot_resolve():
    """check_backward's allowance for sin(x) + 1e5 (an ulp is 0.0078, the step moves it 0.0098)
    passed a zero gradient in every element: now the check is inconclusive."""
    x = np.random.default_rng(0).normal(size=5).astype(np.float32)
    for factor in (0.0, 1.0):
        with pytest.raises(AssertionError, match=r"check_backward of <lambda> is inconclusive.*float64"):
            check_backward(_shifted_sin(1e5, factor), x)
    with pytest.raises(AssertionError, match="check_backward failed"):
        check_backward(_shifted_sin(1e2, 0.0), x)
    check_backward(_shifted_sin(1e2), x)


def test_float32_rounding_allowance_covers_more_than_the_last_rounding():
    """The allowance bounds each value's rounding by 2 e |y|, not the e |y| / 2 of its last rounding
    alone: a float32 sum of 10,000 values near 1000 rounds by more inside (its partial sums), and
    a right gradient failed (numeric 0 for -106). The step moves it by less than an ulp: the check
    cannot tell, and says so."""
    x = np.random.default_rng(4).normal(size=10_000).astype(np.float32)
    with pytest.raises(AssertionError, match="inconclusive"):
        check_grads(lambda v: pg.sum(v + 1000.0), [x], seed=4)
    check_grads(lambda v: pg.sum(v + 1000.0), [x.astype(np.float64)], seed=4)


def test_float32_functions_that_do_not_move_are_decided():
    """Where no output moves at all (a function constant there), the error is zero: only a zero
    gradient passes, and the check is not inconclusive."""
    x = np.array([-1.5, -0.5, -2.0], dtype=np.float32)
    check_grads(lambda v: pg.maximum(v, 0.0), [x])
    check_backward(lambda v: pg.maximum(v, 0.0), x)
    check_double_backward(lambda v: pg.maximum(v, 0.0) * 3.0, x)


@pytest.fixture
def graph_faced():
    """An op x ** 3 whose plain (raw-array) rule is right but whose create_graph rule is 5% off."""
    from polygrad.ops import REGISTRY, Op, apply, defvjp

    name = "test_gradcheck_graph_faced"
    op = defvjp(Op(name, lambda xp, x: x * x * x),
                lambda o, g, ans, x: g * 3 * x * x * (1.05 if isinstance(x, pg.Variable) else 1.0), saves="x")
    try:
        yield lambda x: apply(op, (x,))
    finally:
        REGISTRY.pop(name, None)


def test_second_order_checks_compare_the_create_graph_vjp_with_numerics(xp, graph_faced):
    """order 2 checked the plain vjp's values and only the consistency of the create_graph vjp with
    its own derivatives: a create_graph vjp 5% off everywhere (what gradient penalties and
    Hessian-vector products read) passed check_grads(order=2) and check_double_backward."""
    x = arr(xp, XS)
    check_grads(graph_faced, [x])
    check_backward(graph_faced, x)
    with pytest.raises(AssertionError, match=r"order 1, the vjp taken with create_graph=True"):
        check_grads(graph_faced, [x], order=2)
    with pytest.raises(AssertionError, match=r"check_backward failed for input 0 of .*create_graph=True"):
        check_double_backward(graph_faced, x)


def _with_sign(v):
    """sin(v), differentiable at any order, and its sign as integers, which have no gradient."""
    return pg.sin(v), pg.astype(v > 0, pg.int64)


def test_second_order_checks_skip_non_differentiable_outputs(xp):
    """The direction drawn for an integer output (or None given for it) became an input of the
    second-order check, refused as "input 2 is of dtype int64" (an input the caller never passed):
    it is held fixed now, as check_backward holds it."""
    x, gy = arr(xp, XS), arr(xp, [0.3, -1.0, 2.0])
    check_double_backward(_with_sign, x)
    check_double_backward(_with_sign, x, (gy, None))
    check_grads(_with_sign, [x], order=2)


def test_checkers_refuse_a_gradient_of_another_backend():
    """A rule returning numpy for a dask input (or dask for a numpy one) gave the right numbers
    paired with a direction, and both checkers passed it (hunt_t 6): the gradient must be an
    array of the input's backend, dtype and shape (the checker says so, if the engine has not,
    in the engine's words)."""
    da = pytest.importorskip("dask.array")
    from polygrad.ops import REGISTRY, Op, apply, defvjp

    to_np = defvjp(Op("test_gradcheck_to_np", lambda xp, a: 2 * a), lambda o, g, ans, a: np.asarray(g) * 2.0)
    to_da = defvjp(Op("test_gradcheck_to_da", lambda xp, a: 2 * a),
                   lambda o, g, ans, a: da.from_array(np.asarray(g)) * 2.0)
    try:
        for op, x, got in ((to_np, da.from_array(np.asarray(XS), chunks=2), "'numpy', expected float64 .* 'dask'"),
                           (to_da, np.asarray(XS), "'dask', expected float64 .* 'numpy'")):
            for check in (lambda: check_grads(lambda v: apply(op, (v,)), [x]),
                          lambda: check_backward(lambda v: apply(op, (v,)), x)):
                with pytest.raises((AssertionError, TypeError), match=rf"float64 \(3,\) on {got}"):
                    check()
    finally:
        REGISTRY.pop("test_gradcheck_to_np", None)
        REGISTRY.pop("test_gradcheck_to_da", None)


def test_conformance_check_vjp_compares_the_create_graph_vjp_with_numerics(graph_faced):
    """The conformance suite's check_vjp at order 2 had the same gap: it checked the create_graph
    vjp only against its own derivatives, so one 5% off everywhere passed."""
    from polygrad_conformance.gradcheck import check_vjp

    x = np.asarray(XS, dtype=np.float64)
    check_vjp(graph_faced, [x])
    with pytest.raises(AssertionError, match=r"order 2, the gradient made with create_graph=True"):
        check_vjp(graph_faced, [x], order=2)

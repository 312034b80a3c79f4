"""polygrad.functions (F): nn functions against hand-written numpy, their
gradients, ``pg.grad`` semantics, and the errors bad input gets."""

from __future__ import annotations

import numpy as np
import pytest

import polygrad as pg
import polygrad.functions as F
from polygrad.testing import check_grads

from conftest import arr
from conftest import assert_values_close as assert_close


def np_log_softmax(a, axis=1):
    m = a.max(axis=axis, keepdims=True)
    return a - m - np.log(np.exp(a - m).sum(axis=axis, keepdims=True))


X = np.array([[0.5, -1.0, 2.0, 0.1], [-0.3, 0.8, -1.5, 1.2], [1.1, 0.7, -0.4, -2.2]])
T = np.array([2, 1, 0])


# ---------------------------------------------------------------------------
# Activations and the softmax family
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
def test_activation_gradients(xp, name):
    """Gradients of the activations agree with central differences, to second order."""
    check_grads(getattr(F, name), [arr(xp, X)], order=2)


def test_softmax_gradient_along_axis_0(xp):
    """softmax / log_softmax along axis 0 of a 3-D array have the right gradient."""
    x = arr(xp, np.random.default_rng(0).standard_normal((3, 2, 2)))
    check_grads(lambda v: F.softmax(v, axis=0) * F.log_softmax(v, axis=0), [x], order=2)


# ---------------------------------------------------------------------------
# linear
# ---------------------------------------------------------------------------

W = np.array([[0.1, -0.2, 0.3, 0.4], [0.5, 0.6, -0.7, 0.8]])
B = np.array([0.25, -0.5])


def test_linear_forward(xp):
    """linear(x, W, b) is x @ W.T + b with W of shape (out, in)."""
    y = F.linear(arr(xp, X), pg.Variable(arr(xp, W)), pg.Variable(arr(xp, B)))
    assert_close(y, X @ W.T + B)


def test_linear_without_bias(xp):
    """linear(x, W) is x @ W.T."""
    assert_close(F.linear(arr(xp, X), arr(xp, W)), X @ W.T)


def test_linear_flattens_inputs_of_more_than_two_dims(xp):
    """An (N, 2, 2) input is flattened to (N, 4) before the product."""
    x3 = X.reshape(3, 2, 2)
    assert_close(F.linear(pg.Variable(arr(xp, x3)), arr(xp, W), arr(xp, B)), X @ W.T + B)


def test_linear_gradients(xp):
    """Gradients of linear in x, W and b agree with central differences."""
    check_grads(F.linear, [arr(xp, X), arr(xp, W), arr(xp, B)], order=2)


def test_linear_gradient_of_flattened_input_has_input_shape(xp):
    """The gradient of a 3-D input of linear has the 3-D shape."""
    x = pg.Variable(arr(xp, X.reshape(3, 2, 2)))
    pg.sum(F.linear(x, arr(xp, W))).backward()
    assert x.grad.shape == (3, 2, 2)
    assert_close(x.grad, np.broadcast_to(W.sum(axis=0), (3, 4)).reshape(3, 2, 2))


# ---------------------------------------------------------------------------
# Losses
# ---------------------------------------------------------------------------


def _labels(xp, t):
    return xp.asarray(np.asarray(t).tolist(), dtype=xp.int64)


def test_softmax_cross_entropy_forward(xp):
    """The mean over the batch of -log softmax(x)[i, t_i]."""
    loss = F.softmax_cross_entropy(arr(xp, X), _labels(xp, T))
    assert loss.shape == ()
    assert_close(loss, -np_log_softmax(X)[np.arange(3), T].mean())


def test_softmax_cross_entropy_ignore_label_default(xp):
    """Labels equal to -1 are ignored, and the mean is over the others."""
    t = np.array([2, -1, 0])
    loss = F.softmax_cross_entropy(arr(xp, X), _labels(xp, t))
    assert_close(loss, -(np_log_softmax(X)[0, 2] + np_log_softmax(X)[2, 0]) / 2)


def test_softmax_cross_entropy_custom_ignore_label(xp):
    """ignore_label=1 drops the rows labelled 1."""
    loss = F.softmax_cross_entropy(arr(xp, X), _labels(xp, T), ignore_label=1)
    assert_close(loss, -(np_log_softmax(X)[0, 2] + np_log_softmax(X)[2, 0]) / 2)


def test_softmax_cross_entropy_normalize_false_divides_by_batch(xp):
    """normalize=False averages over the whole batch, ignored rows included."""
    t = np.array([2, -1, 0])
    loss = F.softmax_cross_entropy(arr(xp, X), _labels(xp, t), normalize=False)
    assert_close(loss, -(np_log_softmax(X)[0, 2] + np_log_softmax(X)[2, 0]) / 3)


def test_softmax_cross_entropy_reduce_no(xp):
    """reduce='no' gives one loss per example, 0 for ignored ones."""
    t = np.array([2, -1, 0])
    loss = F.softmax_cross_entropy(arr(xp, X), _labels(xp, t), reduce="no")
    assert_close(loss, np.array([-np_log_softmax(X)[0, 2], 0.0, -np_log_softmax(X)[2, 0]]))


def test_softmax_cross_entropy_all_ignored_is_zero(xp):
    """With every label ignored the loss is 0 (not nan) and so is the gradient."""
    x = pg.Variable(arr(xp, X))
    loss = F.softmax_cross_entropy(x, _labels(xp, [-1, -1, -1]))
    loss.backward()
    assert_close(loss, np.array(0.0))
    assert_close(x.grad, np.zeros_like(X))


def test_softmax_cross_entropy_gradient_is_softmax_minus_onehot(xp):
    """d loss / dx = (softmax(x) - onehot(t)) / N."""
    x = pg.Variable(arr(xp, X))
    F.softmax_cross_entropy(x, _labels(xp, T)).backward()
    e = np.exp(X)
    want = e / e.sum(axis=1, keepdims=True)
    want[np.arange(3), T] -= 1
    assert_close(x.grad, want / 3)


@pytest.mark.parametrize("kwargs", [{}, {"reduce": "no"}, {"normalize": False}, {"ignore_label": 0}],
                         ids=["mean", "reduce_no", "normalize_false", "ignore_label"])
def test_softmax_cross_entropy_gradients(xp, kwargs):
    """Gradients of softmax_cross_entropy in x agree with central differences, to second order."""
    t = _labels(xp, [2, 0, 1] if "ignore_label" in kwargs else [2, -1, 0])  # -1 is no class when 0 is the ignored label
    check_grads(lambda v: F.softmax_cross_entropy(v, t, **kwargs), [arr(xp, X)], order=2)


def test_softmax_cross_entropy_float32(xp):
    """float32 logits give a float32 loss."""
    loss = F.softmax_cross_entropy(arr(xp, X, "float32"), _labels(xp, T))
    assert loss.dtype == xp.float32


def test_mean_squared_error_forward(xp):
    """mean((x0 - x1) ** 2)."""
    y = X[::-1] * 0.5
    assert_close(F.mean_squared_error(arr(xp, X), arr(xp, y)), ((X - y) ** 2).mean())


def test_mean_squared_error_gradients(xp):
    """Gradients of mean_squared_error in both inputs agree with central differences."""
    check_grads(F.mean_squared_error, [arr(xp, X), arr(xp, X[::-1] * 0.5)], order=2)


# ---------------------------------------------------------------------------
# Identity (a Function subclass)
# ---------------------------------------------------------------------------


def test_identity_returns_same_values(xp):
    """identity(x) has x's values; identity(x, y) returns a tuple of two Variables."""
    x = pg.Variable(arr(xp, X))
    y = F.identity(x)
    assert isinstance(y, pg.Variable) and y is not x
    assert_close(y, X)
    a, b = F.identity(x, pg.Variable(arr(xp, W)))
    assert_close(a, X)
    assert_close(b, W)


def test_identity_passes_gradient_unchanged(xp):
    """The gradient of identity's input is the output's gradient."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    F.identity(x).backward(arr(xp, [3.0, -4.0]))
    assert_close(x.grad, np.array([3.0, -4.0]))
    check_grads(lambda v, w: F.identity(v, w), [arr(xp, X), arr(xp, W)], order=1)


def test_identity_class_is_a_function():
    """F.Identity is a Function subclass whose instances are applied once."""
    assert issubclass(F.Identity, pg.Function)
    f = F.Identity()
    f(pg.Variable(np.array([1.0])))
    with pytest.raises(RuntimeError, match="already been applied"):
        f(pg.Variable(np.array([1.0])))


# ---------------------------------------------------------------------------
# pg.grad
# ---------------------------------------------------------------------------


def test_grad_returns_gradients_without_touching_dot_grad(xp):
    """pg.grad returns d out / d inputs and leaves every .grad as it was."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    w = pg.Variable(arr(xp, [3.0, 4.0]))
    w.grad = arr(xp, [7.0, 7.0])
    gx, gw = pg.grad(pg.sum(x * w), [x, w])
    assert_close(gx, np.array([3.0, 4.0]))
    assert_close(gw, np.array([1.0, 2.0]))
    assert x.grad is None
    assert_close(w.grad, np.array([7.0, 7.0]))


def test_grad_leaves_grad_of_other_leaves_alone(xp):
    """Leaves not asked for get no .grad from pg.grad."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    other = pg.Variable(arr(xp, [5.0, 6.0]))
    pg.grad(pg.sum(x * other), [x])
    assert other.grad is None


def test_grad_none_for_unused_input(xp):
    """An input the output does not depend on gets None."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    unused = pg.Variable(arr(xp, [1.0]))
    gx, gu = pg.grad(pg.sum(x * x), [x, unused])
    assert_close(gx, np.array([2.0, 4.0]))
    assert gu is None


def test_grad_of_single_variable_returns_list(xp):
    """pg.grad(y, x) with one Variable input returns a one-element list of Variables."""
    x = pg.Variable(arr(xp, 3.0))
    out = pg.grad(x * x, x)
    assert isinstance(out, list) and len(out) == 1
    assert isinstance(out[0], pg.Variable)
    assert_close(out[0], np.array(6.0))


def test_grad_with_grad_outputs(xp):
    """grad_outputs weights a non-scalar output."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    (g,) = pg.grad(x * x, [x], grad_outputs=[arr(xp, [10.0, 100.0])])
    assert_close(g, np.array([20.0, 400.0]))


def test_grad_with_respect_to_intermediate(xp):
    """The gradient with respect to an intermediate Variable is the one flowing into it."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    h = x * 3.0
    (gh,) = pg.grad(pg.sum(h * h), [h])
    assert_close(gh, np.array([6.0, 12.0]))


def test_grad_several_outputs_sum(xp):
    """With several outputs the gradients add up."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    (g,) = pg.grad([pg.sum(x * x), pg.sum(3.0 * x)], [x])
    assert_close(g, np.array([5.0, 7.0]))


def test_grad_without_create_graph_has_no_graph(xp):
    """Without create_graph the gradients are Variables that do not require grad."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    (g,) = pg.grad(pg.sum(x ** 3), [x])
    assert g.requires_grad is False
    assert g.creator is None


def test_grad_create_graph_second_derivative(xp):
    """With create_graph, d/dx of d(x**3)/dx is 6x."""
    x = pg.Variable(arr(xp, [1.0, -2.0, 3.0]))
    (g,) = pg.grad(pg.sum(x ** 3), [x], create_graph=True)
    assert g.requires_grad is True
    assert_close(g, 3 * np.array([1.0, 4.0, 9.0]))
    (h,) = pg.grad(pg.sum(g), [x])
    assert_close(h, 6 * np.array([1.0, -2.0, 3.0]))


def test_grad_create_graph_third_derivative(xp):
    """Three nested pg.grad calls give d3(x**3)/dx3 = 6."""
    x = pg.Variable(arr(xp, [1.0, -2.0, 3.0]))
    (g,) = pg.grad(pg.sum(x ** 3), [x], create_graph=True)
    (h,) = pg.grad(pg.sum(g), [x], create_graph=True)
    (k,) = pg.grad(pg.sum(h), [x])
    assert_close(k, np.full(3, 6.0))


def test_grad_create_graph_through_nn_functions(xp):
    """Second derivative of sum(sigmoid(x)) is s (1 - s) (1 - 2 s)."""
    xs = np.array([-1.0, 0.5, 2.0])
    x = pg.Variable(arr(xp, xs))
    (g,) = pg.grad(pg.sum(F.sigmoid(x)), [x], create_graph=True)
    (h,) = pg.grad(pg.sum(g), [x])
    s = 1 / (1 + np.exp(-xs))
    assert_close(h, s * (1 - s) * (1 - 2 * s))


def test_grad_frees_graph_unless_retained(xp):
    """A second pg.grad through the same graph fails unless retain_graph=True was given."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    y = pg.sum(x * x * x)
    pg.grad(y, [x], retain_graph=True)
    (g,) = pg.grad(y, [x])
    assert_close(g, np.array([3.0, 12.0]))
    with pytest.raises(RuntimeError):
        pg.grad(y, [x])


def test_grad_refuses_non_variable_inputs(xp):
    """Inputs must be Variables."""
    x = pg.Variable(arr(xp, [1.0]))
    with pytest.raises(TypeError, match="Variable"):
        pg.grad(pg.sum(x), [arr(xp, [1.0])])


# ---------------------------------------------------------------------------
# Errors on bad input
# ---------------------------------------------------------------------------


def test_matmul_shape_mismatch_error_names_everything(xp, backend_name):
    """matmul of (2, 3) and (4, 5) raises naming matmul, both shapes, the dtypes and the backend."""
    a = pg.Variable(xp.ones((2, 3), dtype=xp.float64))
    b = xp.ones((4, 5), dtype=xp.float32)
    with pytest.raises(Exception) as info:
        pg.matmul(a, b)
    msg = str(info.value)
    for part in ("matmul", "(2, 3)", "(4, 5)", "float64", "float32", backend_name):
        assert part in msg, f"{part!r} not in {msg!r}"


def test_matmul_error_leaves_no_graph(xp):
    """A failed matmul leaves the inputs' gradients and graph untouched."""
    a = pg.Variable(xp.ones((2, 3), dtype=xp.float64))
    with pytest.raises(Exception):
        a @ xp.ones((4, 5), dtype=xp.float64)
    pg.sum(a).backward()
    assert_close(a.grad, np.ones((2, 3)))


def test_add_broadcast_mismatch_error_names_op_and_shapes(xp):
    """(2, 3) + (4,) raises naming add and both shapes."""
    with pytest.raises(Exception, match=r"add.*\(2, 3\).*\(4,\)"):
        pg.Variable(xp.ones((2, 3), dtype=xp.float64)) + xp.ones((4,), dtype=xp.float64)


@pytest.mark.parametrize("xshape,tshape", [((2, 3), (3,)), ((2, 3), (2, 1)), ((6,), (6,))])
def test_softmax_cross_entropy_wrong_shapes(xp, xshape, tshape):
    """x not (N, C) or t not (N,) raises ValueError naming the function and both shapes."""
    x = pg.Variable(xp.zeros(xshape, dtype=xp.float64))
    t = xp.zeros(tshape, dtype=xp.int64)
    with pytest.raises(ValueError) as info:
        F.softmax_cross_entropy(x, t)
    msg = str(info.value)
    assert "softmax_cross_entropy" in msg
    assert str(xshape) in msg and str(tshape) in msg

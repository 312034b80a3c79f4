"""The define-by-run API's documented examples, from Chainer's and PyTorch's
documentation, in polygrad's names: a Function (Identity) building the graph,
no_backprop_mode / force_backprop_mode, TimerHook and PrintHook, Variable
hooks, backward accumulation, detach, and extending with a Function subclass."""

from __future__ import annotations

import io

import numpy as np
import pytest

import polygrad as pg
import polygrad.functions as F
import polygrad.links as L


# ---------------------------------------------------------------------------
# Chainer Function: the Identity example
# ---------------------------------------------------------------------------
def test_identity_creates_backward_references():
    """x = Variable(zeros(10)); f = F.Identity(); y = f(x) gives x.node < f < y.node."""
    x = pg.Variable(np.zeros(10))
    f = F.Identity()
    y = f(x)
    assert y.creator is f
    assert f.inputs == (x,)
    assert f.outputs[0]() is y
    np.testing.assert_array_equal(y.data, np.zeros(10))


def test_identity_branch_accumulates():
    """g = F.Identity(); z = g(x) branches the graph; gradients of f and g are accumulated into x."""
    x = pg.Variable(np.zeros(10))
    f = F.Identity()
    y = f(x)
    g = F.Identity()
    z = g(x)
    assert z.creator is g
    pg.sum(y + z * 2.0).backward()
    np.testing.assert_array_equal(x.grad, np.full(10, 3.0))


# ---------------------------------------------------------------------------
# Chainer no_backprop_mode / force_backprop_mode
# ---------------------------------------------------------------------------
def test_no_backprop_mode():
    """x = Variable(array([1,], 'f')); with no_backprop_mode(): y = x + 1 -> y has no graph."""
    x = pg.Variable(np.array([1], "f"))
    with pg.no_backprop_mode():
        y = x + 1
    assert y.creator is None
    np.testing.assert_array_equal(y.data, np.array([2], "f"))
    with pytest.raises(RuntimeError, match="nothing to differentiate"):  # "you cannot call backward()"
        y.backward()
    assert x.grad is None


def test_force_backprop_mode():
    """with no_backprop_mode(): with force_backprop_mode(): y = x + 1 -> y.backward computes gradients."""
    x = pg.Variable(np.array([1], "f"))
    with pg.no_backprop_mode():
        with pg.force_backprop_mode():
            y = x + 1
    assert y.creator is not None
    y.backward()
    np.testing.assert_array_equal(x.grad, np.array([1], "f"))
    assert x.grad.dtype == np.float32


# ---------------------------------------------------------------------------
# Chainer FunctionHook: TimerHook and PrintHook examples
# ---------------------------------------------------------------------------
class Model(pg.Chain):
    def __call__(self, x1):
        return F.exp(self.l(x1))


def test_timer_hook_example():
    """The TimerHook example: model1 and model2 inside `with TimerHook() as m` are measured, model3 after is not."""
    model1 = Model(l=L.Linear(10, 10))
    model2 = Model(l=L.Linear(10, 10))
    x = pg.Variable(np.zeros((1, 10), "f"))
    out = io.StringIO()
    with pg.function_hooks.TimerHook() as m:
        _ = model1(x)
        y = model2(x)
        print("Total time : " + str(m.total_time()), file=out)
    model3 = Model(l=L.Linear(10, 10))
    z = model3(y)
    assert out.getvalue().startswith("Total time : ")
    float(out.getvalue().split(":")[1])
    measured = {f.label for f, _ in m.call_history}
    assert "exp" in measured and "linear" in measured
    # two models, each Linear + exp: as many exp calls as models
    assert [f.label for f, _ in m.call_history].count("exp") == 2
    # model3 ran after the hook was left: its linear is not in the history
    assert [f.label for f, _ in m.call_history].count("linear") == 2
    assert z.dtype == np.float32


def test_print_hook_example():
    """The PrintHook example: Linear, F.sum and z.backward() print forward and backward information."""
    l = L.Linear(10, 10)
    x = pg.Variable(np.zeros((1, 10), "f"))
    buf = io.StringIO()
    with pg.function_hooks.PrintHook(file=buf):
        y = l(x)
        z = F.sum(y)
        z.backward()
    text = buf.getvalue()
    assert "sum" in text and "linear" in text
    assert "output gradient" in text
    assert l.W.grad is not None and l.W.grad.shape == (10, 10)


def test_print_hook_to_stdout(capsys):
    """PrintHook() without file prints to stdout."""
    l = L.Linear(10, 10)
    x = pg.Variable(np.zeros((1, 10), "f"))
    with pg.function_hooks.PrintHook():
        y = l(x)
        z = F.sum(y)
        z.backward()
    out = capsys.readouterr().out
    assert "sum" in out and "output gradient" in out


# ---------------------------------------------------------------------------
# PyTorch Variable: register_hook, backward, detach
# ---------------------------------------------------------------------------
def test_register_hook_doubles_gradient():
    """v.register_hook(lambda grad: grad * 2); v.backward([1, 1, 1]) -> v.grad == [2, 2, 2]; h.remove()."""
    v = pg.Variable(pg.asarray([0, 0, 0], "float32"), requires_grad=True)
    h = v.register_hook(lambda grad: grad * 2)
    v.backward(pg.asarray([1, 1, 1], "float32"))
    np.testing.assert_array_equal(v.grad, [2.0, 2.0, 2.0])
    h.remove()
    v.cleargrad()
    v.backward(pg.asarray([1, 1, 1], "float32"))
    np.testing.assert_array_equal(v.grad, [1.0, 1.0, 1.0])


def test_hook_returning_none_keeps_gradient(capsys):
    """A hook printing 'hello' and returning None leaves w1.grad == [1, 1, 1]."""

    def w_hook(grad):
        print("hello")
        return None

    w1 = pg.Variable(pg.asarray([1, 1, 1], "float32"), requires_grad=True)
    w1.register_hook(w_hook)
    w1.backward(gradient=pg.asarray([1, 1, 1], "float32"))
    assert capsys.readouterr().out == "hello\n"
    np.testing.assert_array_equal(w1.grad, [1.0, 1.0, 1.0])


def test_backward_accumulates_into_leaves():
    """backward accumulates leaf gradients: zero them (cleargrad) before a fresh backward."""
    x = pg.Variable(pg.asarray([1.0, 2.0]))
    y = x * 3.0
    y.backward(pg.asarray([1.0, 1.0]), retain_variables=True)
    y.backward(pg.asarray([1.0, 1.0]))
    np.testing.assert_array_equal(x.grad, [6.0, 6.0])
    x.cleargrad()
    (x * 3.0).backward(pg.asarray([1.0, 1.0]))
    np.testing.assert_array_equal(x.grad, [3.0, 3.0])


def test_detach_shares_data_and_flags():
    """detach(): new Variable, requires_grad False, volatile if the input is, same data (in-place shows in both)."""
    x = pg.Variable(pg.asarray([1.0, 2.0]))
    y = x * 2.0
    d = y.detach()
    assert d.requires_grad is False
    assert d.data is y.data
    d.data[0] = 10.0
    assert y.data[0] == 10.0
    v = pg.Variable(pg.asarray([1.0]), volatile=True)
    assert v.detach().volatile is True


def test_detach_in_place_makes_leaf():
    """detach_() detaches the Variable from the graph that created it, making it a leaf."""
    x = pg.Variable(pg.asarray([1.0, 2.0]))
    y = x * 2.0
    y.detach_()
    assert y.creator is None and y.is_leaf


def test_requires_grad_and_volatile_keyword_only_flags():
    """requires_grad and volatile are keyword arguments of Variable."""
    v = pg.Variable(pg.asarray([1.0]), requires_grad=False)
    assert v.requires_grad is False
    w = pg.Variable(pg.asarray([1.0]), volatile=True)
    assert w.volatile is True


def test_non_scalar_backward_needs_gradient():
    """For a non-scalar Variable requiring grad, backward needs the gradient argument."""
    x = pg.Variable(pg.asarray([1.0, 2.0]))
    y = x * 2.0
    try:
        y.backward()
    except RuntimeError:
        pass
    else:
        raise AssertionError("backward of a non-scalar without gradient should raise")
    y.backward(pg.asarray([1.0, 1.0]))
    np.testing.assert_array_equal(x.grad, [2.0, 2.0])


def test_pytorch_function_extension():
    """Subclassing Function with forward/backward, save_for_backward and saved_tensors (the PyTorch way, Chainer signature)."""

    class MyReLU(pg.Function):
        def forward(self, inputs):
            (x,) = inputs
            self.save_for_backward(x)
            return np.maximum(x, 0),

        def backward(self, inputs, grad_outputs):
            (x,) = self.saved_tensors
            (gy,) = grad_outputs
            return gy * (x > 0),

    x = pg.Variable(pg.asarray([-1.0, 2.0]))
    y = MyReLU()(x)
    pg.sum(y).backward()
    np.testing.assert_array_equal(y.data, [0.0, 2.0])
    np.testing.assert_array_equal(x.grad, [0.0, 1.0])

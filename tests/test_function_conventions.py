"""User Functions in both seeds' conventions (Chainer's tuples, PyTorch 0.x's unpacked
arrays), the rules of the calls forward may make, and the graph attributes every
node has (findings P51-P53, P58, P60, P63, P67, F16, F21, F22, F38, F2, F30, P47, P50)."""

from __future__ import annotations

import numpy as np
import pytest

import polygrad as pg


# ---------------------------------------------------------------------------
# PyTorch 0.x's convention
# ---------------------------------------------------------------------------
class TorchMul(pg.Function):
    """PyTorch 0.x's example shape: forward(*input), backward(*grad_output), saved_tensors."""

    def forward(self, a, b):
        self.save_for_backward(a, b)
        return a * b

    def backward(self, grad_output):
        a, b = self.saved_tensors
        return grad_output * b, grad_output * a


def test_pytorch_style_function_takes_and_returns_arrays_unpacked():
    """forward(self, a, b) returning one array gives one Variable; backward(grad_output) its gradients."""
    a, b = pg.Variable(np.array([2.0, 3.0])), pg.Variable(np.array([5.0, 7.0]))
    y = TorchMul()(a, b)
    assert isinstance(y, pg.Variable)
    pg.sum(y).backward()
    np.testing.assert_allclose(a.grad, [5.0, 7.0])
    np.testing.assert_allclose(b.grad, [2.0, 3.0])


def test_pytorch_style_one_input_function_returns_one_variable():
    """forward(self, x): return x * 2 is one output, never the input tuple repeated (P52)."""

    class Double(pg.Function):
        def forward(self, x):
            return x * 2

        def backward(self, grad_output):
            return grad_output * 2

    x = pg.Variable(np.array([1.0, 2.0]))
    y = Double()(x)
    np.testing.assert_allclose(y.data, [2.0, 4.0])
    pg.sum(y).backward()
    np.testing.assert_allclose(x.grad, [2.0, 2.0])


def test_pytorch_style_starred_signatures():
    """forward(self, *input) / backward(self, *grad_output) work for any count."""

    class Sum2(pg.Function):
        def forward(self, *inputs):
            return inputs[0] + inputs[1], inputs[0] - inputs[1]

        def backward(self, *grad_outputs):
            g1, g2 = grad_outputs
            return g1 + g2, g1 - g2

    a, b = pg.Variable(np.array([1.0])), pg.Variable(np.array([2.0]))
    s, d = Sum2()(a, b)
    pg.sum(s * 3 + d).backward()
    np.testing.assert_allclose(a.grad, [4.0])
    np.testing.assert_allclose(b.grad, [2.0])


def test_pytorch_style_output_without_gradient_gets_zeros():
    """An output that got no gradient reaches a PyTorch-style backward as zeros (not None)."""
    seen = []

    class Two(pg.Function):
        def forward(self, *xs):
            return xs[0] * 1, xs[0] * 2

        def backward(self, *gs):
            seen.append(gs)
            return gs[0] + 2 * gs[1]

    x = pg.Variable(np.array([1.0, 1.0]))
    first, _ = Two()(x)
    pg.sum(first).backward()
    np.testing.assert_allclose(seen[0][1], [0.0, 0.0])
    np.testing.assert_allclose(x.grad, [1.0, 1.0])


def test_style_can_be_said_where_the_signatures_are_ambiguous():
    """One input, two outputs (forward(self, x), backward(self, g1, g2)): style = 'pytorch' chooses."""

    class Split(pg.Function):
        style = "pytorch"

        def forward(self, x):
            return x * 1, x * 3

        def backward(self, g1, g2):
            return g1 + 3 * g2

    x = pg.Variable(np.array([1.0]))
    a, b = Split()(x)
    pg.sum(a + b).backward()
    np.testing.assert_allclose(x.grad, [4.0])


def test_chainer_style_forward_computing_with_the_input_tuple_says_why():
    """A forward(self, x) with no backward reads as Chainer's: arithmetic on the tuple raises a
    message naming both conventions (not a silent second output)."""

    class Double(pg.Function):
        def forward(self, x):
            return x * 2

    with pytest.raises(TypeError, match="style = 'pytorch'"):
        Double()(pg.Variable(np.array([1.0])))


def test_unknown_style_is_refused():
    """style must be 'chainer' or 'pytorch'."""
    with pytest.raises(ValueError, match="style must be"):
        class Bad(pg.Function):
            style = "jax"


# ---------------------------------------------------------------------------
# The calls forward may make: once each, inside forward, with forward's arrays
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("call", [
    lambda f: f.retain_inputs(()),
    lambda f: f.retain_outputs(()),
    lambda f: f.save_for_backward(),
    lambda f: f.mark_dirty(),
    lambda f: f.mark_non_differentiable(),
    lambda f: f.mark_shared_storage(),
])
def test_declarations_outside_forward_are_refused(call):
    """retain_*, save_for_backward and mark_* may only be called inside forward (F16, P58...)."""

    class Id(pg.Function):
        def forward(self, inputs):
            return inputs[0] * 1,

    with pytest.raises(RuntimeError, match="only be called inside forward"):
        call(Id())


def test_declaration_made_twice_is_refused():
    """save_for_backward twice in one forward raises (P67)."""

    class Twice(pg.Function):
        def forward(self, inputs):
            self.save_for_backward(inputs[0])
            self.save_for_backward(inputs[0])
            return inputs[0] * 1,

    with pytest.raises(RuntimeError, match="at most once"):
        Twice()(pg.Variable(np.array([1.0])))


@pytest.mark.parametrize("declare, match", [
    (lambda f, x, y: f.mark_dirty(np.zeros(1)), "mark_dirty was given an array that is not an input"),
    (lambda f, x, y: f.mark_non_differentiable(x), "mark_non_differentiable was given an array that forward did not"),
    (lambda f, x, y: f.mark_shared_storage(x), "takes \\(input, output\\) pairs"),
])
def test_declarations_name_forward_arrays(declare, match):
    """mark_dirty takes inputs, mark_non_differentiable outputs, mark_shared_storage (input, output) pairs."""

    class F(pg.Function):
        def forward(self, inputs):
            x, = inputs
            y = x * 2
            declare(self, x, y)
            return y,

    with pytest.raises(ValueError, match=match):
        F()(pg.Variable(np.array([1.0])))


# ---------------------------------------------------------------------------
# Graph attributes of every node
# ---------------------------------------------------------------------------
def test_builtin_nodes_walk_like_chainer_and_pytorch_graphs():
    """pg.exp(x).creator has inputs, num_inputs, num_outputs, needs_input_grad, previous_functions, rank."""
    x = pg.Variable(np.array([1.0]))
    c = pg.Variable(np.array([2.0]), requires_grad=False)
    h = pg.exp(x)
    y = h * c
    node = y.creator
    assert node.inputs[0] is h and node.inputs[1] is None
    assert node.num_inputs == 2 and node.num_outputs == 1
    assert node.needs_input_grad == (True, False)
    assert node.previous_functions == ((h.creator, 0), None)
    assert h.creator.previous_functions == ((x, 0),)
    assert h.creator.rank == 0 and node.rank == 1


def test_function_inputs_given_as_arrays_stay_visible():
    """A raw array input shows in f.inputs as a Variable while its data is kept (F22)."""

    class Sq(pg.Function):
        def forward(self, inputs):
            return inputs[0] ** 2,

    f = Sq()
    f(np.array([2.0]))
    assert isinstance(f.inputs[0], pg.Variable)
    np.testing.assert_allclose(f.inputs[0].data, [2.0])


def test_output_arrays_is_output_data():
    """Chainer's output_arrays names the same as output_data (F21)."""

    class Keep(pg.Function):
        def forward(self, inputs):
            self.retain_outputs((0,))
            return inputs[0] * 3,

    f = Keep()
    f(pg.Variable(np.array([1.0])))
    np.testing.assert_allclose(f.output_arrays[0], [3.0])


def test_unchain_makes_outputs_roots_and_forgets_inputs():
    """f.unchain(): y.creator is None, f.inputs is empty, backprop stops (F38)."""
    x = pg.Variable(np.array([1.0]))
    h = x * 2
    node = h.creator
    node.unchain()
    assert h.creator is None and node.inputs == ()
    pg.sum(h * 3).backward()
    assert x.grad is None
    np.testing.assert_allclose(h.grad, [3.0])

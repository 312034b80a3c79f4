"""The engine's one apply path and its backward pass: every node kind (op rows,
stochastic draws, user Functions) resolves backends, records, links outputs and
runs hooks the same way."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest

import polygrad as pg
import polygrad.functions as F
from polygrad.core import config, engine, primitive


class Phases(pg.FunctionHook):
    name = "phases"

    def __init__(self):
        self.seen = []

    def forward_preprocess(self, function, in_data):
        self.seen.append(("forward_preprocess", function.label))

    def forward_postprocess(self, function, in_data):
        self.seen.append(("forward_postprocess", function.label))

    def backward_preprocess(self, function, in_data, out_grad):
        self.seen.append(("backward_preprocess", function.label))

    def backward_postprocess(self, function, in_data, out_grad):
        self.seen.append(("backward_postprocess", function.label))


ALL_PHASES = ["forward_preprocess", "forward_postprocess", "backward_preprocess", "backward_postprocess"]


def _phases(hook, label):
    return [phase for phase, seen in hook.seen if seen == label]


@pytest.mark.parametrize("draw, label", [
    (lambda p: F.bernoulli(p), "bernoulli"),
    (lambda p: F.categorical(pg.reshape(p, (1, 3))), "categorical"),
    (lambda p: F.multinomial(pg.reshape(p, (1, 3))), "multinomial"),
    (lambda p: F.normal(p, 1.0), "normal"),
])
def test_with_hook_sees_every_phase_of_a_stochastic_function(draw, label):
    """A `with hook:` block sees the forward and the backward of each stochastic draw."""
    pg.seed(0)
    p = pg.Variable(np.array([0.2, 0.5, 0.3]))
    with Phases() as hook:
        s = draw(p)
        s.reinforce(1.0)
        pg.backward([s])
    assert _phases(hook, label) == ALL_PHASES
    assert p.grad is not None


def test_with_hook_sees_every_phase_of_a_user_function():
    """A user Function goes through the same path: all four phases, in order."""

    class Double(pg.Function):
        def forward(self, inputs):
            return inputs[0] * 2,

        def backward(self, inputs, grad_outputs):
            return grad_outputs[0] * 2,

    x = pg.Variable(np.array([1.0, 2.0]))
    with Phases() as hook:
        pg.sum(Double()(x)).backward()
    assert _phases(hook, "Double") == ALL_PHASES


def test_forward_hooks_see_the_node_with_its_outputs_linked():
    """forward_postprocess sees the node with its outputs already linked, for every node kind."""
    outputs = {}

    class Look(pg.FunctionHook):
        name = "look"

        def forward_postprocess(self, function, in_data):
            outputs[function.label] = [r() is not None for r in function.outputs]

    class Same(pg.Function):
        def forward(self, inputs):
            return inputs[0] + 0,

    pg.seed(0)
    x = pg.Variable(np.array([0.5, 0.5]))
    with Look():
        pg.sin(x), Same()(x), F.bernoulli(x)
    assert outputs == {"sin": [True], "Same": [True], "bernoulli": [True]}


def test_mixed_backends_error_is_the_same_for_ops_and_functions():
    """An op and a user Function name the same backends in the same words."""
    pytest.importorskip("array_api_strict")
    import array_api_strict as xs

    class Add(pg.Function):
        def forward(self, inputs):
            return inputs[0] + inputs[1],

    a, b = np.array([1.0]), xs.asarray([1.0])
    with pytest.raises(TypeError) as op_error:
        pg.add(pg.Variable(a), pg.Variable(b))
    with pytest.raises(TypeError) as fn_error:
        Add()(a, b)
    for err, label in ((op_error, "add"), (fn_error, "Add")):
        text = str(err.value)
        assert f"polygrad: {label} got arrays of two backends, 'numpy' and " in text
        assert "move one with pg.to_backend(x, 'numpy')" in text


def test_function_whose_forward_raised_can_be_applied_again():
    """A Function instance is 'used' only once its forward succeeded: a retry works."""

    class Flaky(pg.Function):
        calls = 0

        def forward(self, inputs):
            Flaky.calls += 1
            if Flaky.calls == 1:
                raise ValueError("transient")
            return inputs[0] * 2,

    f = Flaky()
    x = pg.Variable(np.array([1.0]))
    with pytest.raises(ValueError, match="transient"):
        f(x)
    np.testing.assert_allclose(f(x).data, [2.0])
    with pytest.raises(RuntimeError, match="already been applied"):
        f(x)


def test_dirty_input_not_returned_still_counts_as_changed():
    """mark_dirty on an input that forward changed but did not return is refused (as PyTorch: its
    Variable would keep the graph of its old values), and still bumps its version (the write happened)."""

    class Touch(pg.Function):
        def forward(self, inputs):
            x, = inputs
            x += 1
            self.mark_dirty(x)
            return x * 2,

    with pg.no_backprop_mode():
        h = pg.Variable(np.array([1.0, 2.0]), requires_grad=False) * 1
    with pytest.raises(ValueError, match="did not return"):
        Touch()(h)
    assert h.version == 1


def test_local_function_hooks_is_an_ordered_dict_before_any_add_hook():
    """A fresh node's local_function_hooks is an empty OrderedDict (Chainer), for every kind."""
    x = pg.Variable(np.array([1.0]))
    assert pg.exp(x).creator.local_function_hooks == OrderedDict()

    class Id(pg.Function):
        def forward(self, inputs):
            return inputs[0],

    assert Id().local_function_hooks == OrderedDict()


def test_function_subclass_need_not_call_init():
    """A Function subclass whose __init__ skips Function.__init__ has every field of a node."""

    class Scale(pg.Function):
        def __init__(self, k):
            self.k = k

        def forward(self, inputs):
            return inputs[0] * self.k,

        def backward(self, inputs, grad_outputs):
            return grad_outputs[0] * self.k,

    x = pg.Variable(np.array([1.0, 2.0]))
    f = Scale(3.0)
    assert f.inputs == () and f.outputs == () and not f.requires_grad
    pg.sum(f(x)).backward()
    np.testing.assert_allclose(x.grad, [3.0, 3.0])


def test_variable_of_a_variable_without_graph_is_a_leaf_sharing_its_data():
    """pg.Variable(v) for a Variable v made by no function: a new leaf over the same data and counter."""
    a = pg.Variable(np.array([1.0, 2.0]), requires_grad=False)
    v = pg.Variable(a)
    assert v.requires_grad and v.creator is None and v.data is a.data
    with pg.no_backprop_mode():
        a += 1
    assert v.version == 1


def test_debug_inplace_site_lives_on_the_version_counter():
    """Debug mode remembers where each in-place change happened on the variable's own
    counter (no process-wide table keyed by id() that could name another variable)."""
    assert not hasattr(config, "inplace_sites")
    with pg.debug_mode():
        for _ in range(50):  # discarded variables changed in place: nothing accumulates anywhere
            with pg.no_backprop_mode():
                d = pg.Variable(np.zeros(2), requires_grad=False) * 1
                d += 1
        x = pg.Variable(np.array([1.0, 2.0]))
        h = x * 2
        y = pg.sum(h * h)
        with pg.no_backprop_mode():
            h += 1  # the line the error must name
        with pytest.raises(RuntimeError) as err:
            y.backward()
    text = str(err.value)
    assert "the in-place += at" in text and "test_engine.py" in text and "in test_debug_inplace_site" in text
    assert h._vbox.site[1] == "+="


def test_backward_loop_reads_in_one_screen():
    """Every function of the engine is at most 60 lines (the backward loop included)."""
    import ast
    import inspect

    tree = ast.parse(inspect.getsource(engine))
    long = [f"{f.name}: {f.end_lineno - f.lineno + 1} lines" for f in ast.walk(tree)
            if isinstance(f, ast.FunctionDef) and f.end_lineno - f.lineno + 1 > 60]
    assert not long, long


def test_one_apply_path_for_every_node_kind():
    """Ops, stochastic draws and user Functions all enter the engine through primitive.apply."""
    calls = []
    real = primitive.apply

    def counting(op, args, params=None, node=None):
        calls.append(getattr(node, "label", getattr(op, "name", None)))
        return real(op, args, params, node)

    class Id(pg.Function):
        def forward(self, inputs):
            return inputs[0],

    import polygrad.core.function as function_module
    import polygrad.ops._export as export_module
    import polygrad.ops.random as random_module

    mp = pytest.MonkeyPatch()
    for module in (function_module, random_module, export_module):
        mp.setattr(module, "apply", counting)
    try:
        x = pg.Variable(np.array([0.5]))
        pg.sin(x), F.bernoulli(x), Id()(x)
    finally:
        mp.undo()
    assert calls == ["sin", "bernoulli", "Id"]


# ---------------------------------------------------------------------------
# .grad at the edge: 0-d gradients, a .grad of another shape, failed deliveries, pg.grad's message
# ---------------------------------------------------------------------------


def test_a_0d_gradient_is_an_array_that_writes_in_place():
    """x.grad of a 0-d leaf was a NumPy scalar: `g = x.grad; g *= 0.5` left x.grad as it was
    (a (1,)-shaped one changes), and x.grad[...] = 0 raised."""
    x = pg.Variable(np.array(2.0))
    (x * x).backward()
    (x * x).backward()  # accumulated: the sum is an array too
    g = x.grad
    g *= 0.5
    assert float(x.grad) == 4.0
    x.grad[...] = 0
    assert float(x.grad) == 0.0


def test_a_retained_0d_gradient_is_an_array_that_writes_in_place():
    """The same for a retained intermediate: y.grad of a 0-d y was a NumPy scalar."""
    x = pg.Variable(np.array([1.0, 2.0]))
    y = pg.sum(x * 2)
    (y * 3).backward(retain_grad=True)
    g = y.grad
    g *= 0.5
    assert float(y.grad) == 1.5
    y.grad[...] = 0
    assert float(y.grad) == 0.0


def test_accumulating_into_a_grad_of_another_shape_raises():
    """After x.data changed shape, backward broadcast the new gradient into the stale (3, 2)
    .grad silently (the .grad setter refuses that shape). Nothing is written."""
    x = pg.Variable(np.ones((3, 2)))
    pg.sum(x).backward()
    x.data = np.ones(2)
    w = pg.Variable(np.ones(2))
    with pytest.raises(ValueError, match=r"\.grad has shape \(3, 2\), the gradient \(2,\).*cleargrad"):
        pg.sum(x * w).backward()
    assert x.grad.shape == (3, 2) and w.grad is None


def test_a_pass_that_failed_in_a_leaf_hook_says_so_when_repeated():
    """The repeat said the arrays 'were freed after the first backward' (as if it had succeeded)."""
    x = pg.Variable(np.array([1.0, 2.0]))
    x.register_hook(lambda g: 1 / 0)
    y = pg.sum(x * x)
    with pytest.raises(ZeroDivisionError):
        y.backward()
    with pytest.raises(RuntimeError, match="then failed delivering the leaves' gradients: ZeroDivisionError"):
        y.backward()


def test_grad_of_an_input_that_does_not_require_grad_says_so():
    """'is not used to compute the outputs' was said of a constant that is used."""
    c = pg.Variable(np.array([1.0, 2.0]), requires_grad=False)
    x = pg.Variable(np.array([3.0, 4.0]))
    with pytest.raises(RuntimeError, match=r"input 1 .* does not require grad"):
        pg.grad([pg.sum(x * c)], [x, c])


def test_backward_from_a_complex_scalar_needs_a_gradient():
    """backward() of a complex scalar started from 1, silently the gradient of Re(y); PyTorch and
    JAX refuse it. A given gradient, or pg.real(y), says which."""
    z = pg.Variable(np.array([1.0 + 2.0j, 3.0 - 1.0j]))
    y = pg.sum(z * z)
    with pytest.raises(RuntimeError, match="complex128 needs a gradient argument.*only for real outputs"):
        y.backward()
    pg.real(y).backward()
    np.testing.assert_allclose(z.grad, 2 * np.conj(z.data))


def test_backward_refuses_a_gradient_of_the_backend_a_leaf_left():
    """link.to_backend between forward and backward left a numpy gradient in a dask leaf's .grad (which the
    .grad setter refuses), and a second pass added a dask one to it: backward refuses, naming both backends."""
    pytest.importorskip("dask.array")
    W = pg.Variable(pg.asarray([1.0, 2.0]), name="W")
    link = pg.Link(W=W)
    y = pg.sum(W * W)
    link.to_backend("dask")
    with pytest.raises(TypeError, match=r"'W'.*on 'numpy', expected float64 \(2,\) on 'dask'"):
        y.backward()
    assert W.grad is None


def test_backward_refuses_to_accumulate_into_a_grad_of_another_backend():
    """.grad written on numpy, then the data replaced by a dask array: the next gradient is not added to it."""
    pytest.importorskip("dask.array")
    W = pg.Variable(pg.asarray([1.0, 2.0]), name="W")
    pg.sum(W * W).backward()
    W.data = pg.to_backend(W.data, "dask")
    with pytest.raises(TypeError, match=r"\.grad is on backend 'numpy', the gradient on 'dask'.*cleargrad"):
        pg.sum(W * W).backward()
    assert isinstance(W.grad, np.ndarray)


@pytest.mark.parametrize("seed", [np.array([5.0, 6.0]), pg.Variable(np.array([5.0, 6.0])), [np.array([5.0, 6.0])]])
def test_backward_of_one_variable_takes_one_gradient_as_it_is(seed):
    """pg.backward(y, g) (PyTorch 0.x's autograd.backward with one tensor) iterated g: its rows were
    taken for gradients ("got 2 gradients for 1 variables", or a shape the user never gave)."""
    x = pg.Variable(np.array([1.0, 2.0]))
    pg.backward(x * 2, seed)
    np.testing.assert_array_equal(x.grad, [10.0, 12.0])
    x0 = pg.Variable(np.array(1.0))
    pg.backward(x0 * 2, np.array(5.0))
    assert float(x0.grad) == 10.0
    with pytest.raises(ValueError, match="got 2 gradients for 1 variables"):
        pg.backward(x * 2, [np.array([1.0, 1.0]), np.array([1.0, 1.0])])


def test_backward_of_a_list_of_one_variable_takes_one_array_gradient_as_it_is():
    """pg.backward([y], g) with g one array: PyTorch 0.x wraps a tensor gradient whatever the form of
    the variables; its rows were taken for gradients ("got 3 gradients for 1 variables")."""
    x = pg.Variable(np.array([1.0, 2.0, 3.0]))
    pg.backward([x * 2], np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(x.grad, [2.0, 4.0, 6.0])
    (gx,) = pg.grad([x * 3], [x], pg.Variable(np.array([1.0, 1.0, 2.0])))
    np.testing.assert_array_equal(gx.data, [3.0, 3.0, 6.0])


def test_backward_of_a_list_takes_a_lone_number_as_one_gradient_and_names_what_it_cannot_read():
    """pg.backward([y], 1.0) raised a bare "'float' object is not iterable", and a lone symbolic array
    "'SymbolicArray' object is not iterable": a number is one gradient, as an array is; what is neither
    one gradient nor a list of them is refused naming the function and the argument."""
    from polygrad import symbolic as T

    x = pg.Variable(np.array(3.0))
    pg.backward([x * 2], 1.5)
    assert float(x.grad) == 3.0
    (gx,) = pg.grad([x * x], [x], np.float64(2.0))
    assert float(gx.data) == 12.0
    with pytest.raises(ValueError, match="got 1 gradients for 2 variables"):
        pg.backward([x * 2, x * 3], 1.0)
    v = T.vector("v")
    with pytest.raises(TypeError, match=r"^polygrad\.grad: output gradients must be one gradient or a list or tuple "
                                        r"of them, one per output; got SymbolicArray"):
        pg.grad([pg.sum(v)], [v], T.scalar("s").data)

"""Variable: attributes, backward, graph surgery, hooks, flags and operators."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import polygrad as pg
from conftest import arr


def npa(a):
    """Any backend's array (or None) as a numpy array, for comparisons."""
    if a is None:
        return None
    return np.asarray(pg.to_backend(a, "numpy"))


def close(a, expected):
    np.testing.assert_allclose(npa(a), np.asarray(expected, dtype=float), rtol=1e-6, atol=1e-12)


# ---------------------------------------------------------------------------
# attributes
# ---------------------------------------------------------------------------
def test_data_is_the_wrapped_array(xp):
    """.data is the very array the Variable was built from."""
    a = arr(xp, [1.0, 2.0])
    assert pg.Variable(a).data is a


def test_assigning_data_of_another_shape_or_none_is_allowed(xp):
    """x.data = array replaces the array (another shape too); None makes it uninitialized."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    x.data = arr(xp, [3.0, 4.0, 5.0])
    pg.sum(x * 2.0).backward()
    close(x.grad, [2.0, 2.0, 2.0])
    x.data = None
    assert x.data is None


def test_array_is_settable_as_data_is(xp):
    """x.array had no setter, so Chainer's `p.array -= lr * p.grad` subtracted in place and then raised
    (the step applied and an error: a retry applied it twice); it is data under Chainer's name."""
    p = pg.Variable(arr(xp, [1.0, 2.0]))
    p.grad = arr(xp, [1.0, 1.0])
    p.array -= 0.5 * p.grad
    close(p.data, [0.5, 1.5])
    p.array = arr(xp, [9.0, 9.0, 9.0])
    assert p.array is p.data and p.shape == (3,)
    with pytest.raises(TypeError, match=r"only floating"):  # the data setter's checks
        p.array = arr(xp, [1, 2], dtype="int64")


def test_assigning_integer_data_to_a_variable_that_requires_grad_is_refused(xp):
    """x.data = an integer array, while x requires grad, is refused as the constructor refuses it
    (gradients came out truncated to integers: [0, 0, 0] for sum(x / 4))."""
    x = pg.Variable(arr(xp, [1.0, 2.0, 3.0]), name="w")
    with pytest.raises(TypeError, match=r"variable 'w' \(shape \(3,\)\).*int64.*only floating"):
        x.data = arr(xp, [1, 2, 3], dtype="int64")
    close(x.data, [1.0, 2.0, 3.0])  # left as it was
    c = pg.Variable(arr(xp, [1.0, 2.0]), requires_grad=False)
    c.data = arr(xp, [1, 2], dtype="int64")  # a constant may hold integers
    assert npa(c.data).tolist() == [1, 2]


def test_assigning_data_that_is_no_array_is_refused(xp):
    """x.data = a list (no array of a registered backend) is refused where it is assigned,
    not at the next function that reads it."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    with pytest.raises(TypeError, match=r"variable \(shape \(2,\)\).*list.*pg.asarray"):
        x.data = [1.0, 2.0]
    close(x.data, [1.0, 2.0])


def test_grad_is_none_until_backprop(xp):
    """.grad is None until backprop reaches the variable."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    y = pg.sum(x * x)
    assert x.grad is None and y.grad is None
    y.backward()
    close(x.grad, [2.0, 4.0])


def test_creator_is_none_for_user_variables(xp):
    """A Variable made by the user is a root: creator is None."""
    x = pg.Variable(arr(xp, [1.0]))
    assert x.creator is None
    assert x.is_leaf


def test_creator_is_the_function_that_made_it(xp):
    """A Variable made by an op has that op's node as creator."""
    x = pg.Variable(arr(xp, [1.0]))
    y = pg.exp(x)
    assert y.creator is not None
    assert y.creator.label == "exp"
    assert not y.is_leaf


def test_requires_grad_defaults_to_true(xp):
    """Variables require grad by default; requires_grad=False turns it off."""
    assert pg.Variable(arr(xp, [1.0])).requires_grad is True
    assert pg.Variable(arr(xp, [1.0]), requires_grad=False).requires_grad is False


def test_volatile_defaults_to_false_and_implies_no_grad(xp):
    """volatile is False by default; a volatile Variable does not require grad."""
    assert pg.Variable(arr(xp, [1.0])).volatile is False
    v = pg.Variable(arr(xp, [1.0]), volatile=True)
    assert v.volatile is True and v.requires_grad is False


def test_name_is_kept(xp):
    """The name passed to Variable is kept in .name."""
    assert pg.Variable(arr(xp, [1.0]), name="weight").name == "weight"
    assert pg.Variable(arr(xp, [1.0])).name is None


def test_shape_dtype_ndim_size(xp):
    """shape, dtype, ndim and size mirror the data array."""
    a = arr(xp, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype="float32")
    v = pg.Variable(a)
    assert v.shape == (2, 3)
    assert v.dtype == xp.float32
    assert v.ndim == 2
    assert v.size == 6


def test_len_is_number_of_elements(xp):
    """len(x) is the number of elements of the data array (as the Chainer seed says)."""
    assert len(pg.Variable(arr(xp, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))) == 6
    assert len(pg.Variable(arr(xp, [1.0, 2.0, 3.0]))) == 3
    assert len(pg.Variable(arr(xp, 4.0))) == 1


def test_repr_shows_variable_and_values():
    """repr is 'variable(...)' with the values, and the name when there is one."""
    x = pg.Variable(np.array([1.0, 2.0, 3.0]))
    assert repr(x) == "variable([1., 2., 3.])"
    assert repr(pg.Variable(np.array([1.0]), name="w")) == "variable w([1.])"


def test_repr_on_strict_backend_mentions_values():
    """repr of an array_api_strict Variable starts with 'variable(' and shows the values."""
    x = pg.Variable(pg.asarray([1.0, 2.0], backend="array_api_strict"))
    r = repr(x)
    assert r.startswith("variable(") and "1." in r and "2." in r


def test_truth_value_of_one_element_comparison_follows_the_data():
    """bool(x < 0) for x = [5.] must not be True (it must be False, or raise as ambiguous)."""
    x = pg.Variable(np.array([5.0]))
    try:
        truth = bool(x < 0)
    except (TypeError, ValueError, RuntimeError):
        return
    assert truth is False


# ---------------------------------------------------------------------------
# backward
# ---------------------------------------------------------------------------
def test_backward_seeds_size_one_output_with_one(xp):
    """backward() on a one-element output starts from a gradient of 1."""
    x = pg.Variable(arr(xp, [3.0]))
    y = x * 5.0
    y.backward()
    close(x.grad, [5.0])


def test_backward_seeds_zero_dim_output(xp):
    """backward() on a 0-d output (a scalar loss) starts from 1."""
    x = pg.Variable(arr(xp, [1.0, 2.0, 3.0]))
    loss = pg.sum(x * x) / 2.0
    loss.backward()
    close(x.grad, [1.0, 2.0, 3.0])


@pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")  # (all that told of the dropped part)
def test_a_numpy_complex_scalar_seed_of_a_real_output_is_refused():
    """np.complex128 subclasses complex (and np.float64 float): admit took such a seed for a weak Python
    number and converted it to float32, dropping its imaginary part, where a Python 1+2j and a 0-d complex
    array were refused. Only Python's own numbers are converted; a NumPy scalar is an array of its dtype."""
    x = pg.Variable(np.array([1.0, 2.0], np.float32))
    seeds = [np.complex128(1 + 2j), np.complex64(1 + 2j), [np.complex128(1 + 2j)], 1 + 2j, np.array(1 + 2j)]
    for seed in seeds:
        with pytest.raises((TypeError, ValueError), match=r"gradient given to backward .* is .*, (which is no "
                                                          r"float32 array|expected float32 \(\))"):
            pg.sum(x * x).backward(seed)
        with pytest.raises((TypeError, ValueError), match="gradient given to backward"):
            pg.grad([pg.sum(x * x)], [x], grad_outputs=[seed])
        s = pg.sum(x * x)
        with pytest.raises((TypeError, ValueError), match=r"gradient assigned to variable \(shape \(\)\)"):
            s.grad = seed
    assert x.grad is None
    pg.sum(x * x).backward(np.float64(2.0))  # a real one of another precision is cast, as documented
    assert x.grad.dtype == np.float32 and x.grad.tolist() == [4.0, 8.0]
    assert pg.core.variable.kind_of(np.complex128(1j)) == "complex floating"
    assert pg.core.variable.kind_of(np.float64(1.0)) == "real floating"
    assert pg.core.variable.kind_of(True) == "bool" and pg.core.variable.kind_of(2) == "integral"


def test_backward_of_larger_output_without_gradient_is_clear_error(xp):
    """backward() on an output of several elements without a gradient raises RuntimeError saying so."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    y = x * 2.0
    with pytest.raises(RuntimeError, match="gradient"):
        y.backward()


def test_backward_with_explicit_gradient(xp):
    """backward(gradient) uses the given gradient for a non-scalar output."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    y = x * 3.0
    y.backward(arr(xp, [1.0, 10.0]))
    close(x.grad, [3.0, 30.0])


def test_backward_gradient_of_wrong_shape_is_error(xp):
    """A gradient of a shape other than the output's is rejected with ValueError."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    y = x * 3.0
    with pytest.raises(ValueError, match="shape"):
        y.backward(arr(xp, [1.0, 1.0, 1.0]))


def test_manual_grad_is_initial_gradient(xp):
    """Setting y.grad before y.backward() makes it the initial error."""
    x = pg.Variable(arr(xp, [1.0, 2.0, 3.0]))
    y = x * 2.0
    y.grad = arr(xp, [1.0, 0.0, 2.0])
    y.backward()
    close(x.grad, [2.0, 0.0, 4.0])


def test_backward_from_a_leaf_adds_one_to_its_grad(xp):
    """backward() from a one-element leaf adds 1 to its .grad (PyTorch): 4 then 5, and a loop gives 1, 2, 3."""
    x = pg.Variable(arr(xp, 2.0))
    (x * x).backward()
    x.backward()
    assert float(x.grad) == 5.0
    w = pg.Variable(arr(xp, 0.5))
    seen = []
    for _ in range(3):
        w.backward()
        seen.append(float(w.grad))
    assert seen == [1.0, 2.0, 3.0]


def test_leaf_grads_accumulate_over_two_backward_calls(xp):
    """Two backward calls add into the leaf's grad."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    pg.sum(x * x).backward()
    pg.sum(x * 3.0).backward()
    close(x.grad, [2.0 + 3.0, 4.0 + 3.0])


@pytest.mark.filterwarnings("ignore:.*a reference cycle")
def test_a_grad_accumulated_after_the_data_changed_precision_takes_the_datas_dtype(xp):
    """After x.data was cast from float64 to float32, backward summed into the old .grad and left a float64
    .grad on float32 data (old + g promoted); the sum is cast to the data's dtype, as every gradient from
    backward is, and the .grad of another kind (complex on real data) is refused like another shape."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    pg.sum(x * 5.0).backward()
    x.data = arr(xp, [1.0, 2.0], dtype="float32")
    pg.sum(x * 1.0).backward()
    assert x.grad.dtype == x.dtype == xp.float32
    close(x.grad, [6.0, 6.0])
    h = pg.Variable(arr(xp, [1.0, 2.0]))  # with create_graph: .grad_var stays a Variable in the graph
    pg.sum(h * h).backward(create_graph=True)
    h.data = arr(xp, [1.0, 2.0], dtype="float32")
    pg.sum(h * h).backward(create_graph=True)
    assert h.grad_var.dtype == xp.float32
    close(h.grad, [4.0, 8.0])
    c = pg.Variable(arr(xp, [1.0, 2.0]))
    pg.sum(c * 2.0).backward()
    c.data = xp.astype(arr(xp, [1.0, 2.0]), xp.complex128)
    with pytest.raises(ValueError, match=r"cannot accumulate the gradient of variable \(shape \(2,\)\) into its "
                                         r"\.grad: \.grad has dtype \S*float64, the variable \S*complex128 \(the data "
                                         r"changed dtype since \.grad was written\); call cleargrad\(\) first"):
        pg.sum(pg.real(c * 1.0)).backward()
    assert c.grad.dtype == xp.float64


def test_branching_gradients_are_summed(xp):
    """A variable used twice receives the sum of both gradients."""
    x = pg.Variable(arr(xp, [2.0]))
    y = x * x + pg.exp(x) + x
    y.backward()
    close(x.grad, [4.0 + math.exp(2.0) + 1.0])


def test_intermediate_grads_released_by_default(xp):
    """Intermediate variables keep no grad after backward without retain_grad."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    h = x * x
    loss = pg.sum(h)
    loss.backward()
    assert h.grad is None
    assert x.grad is not None


def test_retain_grad_keeps_intermediate_grads(xp):
    """backward(retain_grad=True) keeps the gradients of intermediate variables."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    h = x * x
    k = h * 3.0
    pg.sum(k).backward(retain_grad=True)
    close(k.grad, [1.0, 1.0])
    close(h.grad, [3.0, 3.0])
    close(x.grad, [6.0, 12.0])


def test_retain_grad_sums_intermediate_used_twice(xp):
    """An intermediate used twice keeps the summed gradient under retain_grad."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    h = x * 2.0
    pg.sum(h * h + h).backward(retain_grad=True)
    close(h.grad, [2 * 2.0 + 1, 2 * 4.0 + 1])


def test_second_backward_through_freed_graph_mentions_retain_graph(xp):
    """A second backward through freed saved arrays raises RuntimeError mentioning retain_graph."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    loss = pg.sum(pg.exp(x))
    loss.backward()
    with pytest.raises(RuntimeError, match="retain_graph"):
        loss.backward()


def test_retain_graph_allows_second_backward(xp):
    """backward(retain_graph=True) lets a second backward run and accumulate."""
    x = pg.Variable(arr(xp, [0.0, 1.0]))
    loss = pg.sum(pg.exp(x) * x)
    loss.backward(retain_graph=True)
    loss.backward()
    expected = [2 * (math.exp(v) * (1 + v)) for v in (0.0, 1.0)]
    close(x.grad, expected)


def test_retain_variables_is_alias_of_retain_graph(xp):
    """backward(retain_variables=True) (PyTorch 0.x spelling) keeps the graph too."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    loss = pg.sum(x * x)
    loss.backward(retain_variables=True)
    loss.backward()
    close(x.grad, [4.0, 8.0])


def test_backward_stops_at_variables_not_requiring_grad(xp):
    """Inputs with requires_grad=False get no gradient."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    c = pg.Variable(arr(xp, [3.0, 4.0]), requires_grad=False)
    pg.sum(x * c).backward()
    assert c.grad is None
    close(x.grad, [3.0, 4.0])


def test_cleargrad_sets_grad_to_none(xp):
    """cleargrad() resets the gradient so the next backward starts fresh."""
    x = pg.Variable(arr(xp, [1.0]))
    (x * 2.0).backward()
    x.cleargrad()
    assert x.grad is None
    (x * 5.0).backward()
    close(x.grad, [5.0])


def test_dropping_intermediate_variable_keeps_backward_working(xp):
    """Deleting the user's handle of an intermediate does not break backward."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    h = x * x
    loss = pg.sum(pg.exp(h))
    del h
    loss.backward()
    close(x.grad, [2 * 1.0 * math.exp(1.0), 2 * 2.0 * math.exp(4.0)])


# ---------------------------------------------------------------------------
# detach, detach_, unchain_backward, set_creator
# ---------------------------------------------------------------------------
def test_detach_shares_data_and_does_not_require_grad(xp):
    """detach() returns a new leaf with the same data array and requires_grad False."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    y = x * 2.0
    d = y.detach()
    assert d is not y
    assert d.data is y.data
    assert d.requires_grad is False
    assert d.creator is None


def test_detach_propagates_volatile(xp):
    """detach() of a volatile variable is volatile."""
    v = pg.Variable(arr(xp, [1.0]), volatile=True)
    assert v.detach().volatile is True
    assert pg.Variable(arr(xp, [1.0])).detach().volatile is False


def test_detach_blocks_gradient(xp):
    """Gradients do not flow through a detached variable."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    y = x * 2.0
    z = pg.sum(y.detach() * x)
    z.backward()
    close(x.grad, [2.0, 4.0])


def test_detach_in_place_makes_leaf(xp):
    """detach_() cuts the variable from its creator: it becomes a leaf not requiring grad."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    h = x * x
    out = h.detach_()
    assert out is h
    assert h.creator is None and h.requires_grad is False
    pg.sum(h * x).backward()
    close(x.grad, [1.0, 4.0])


def test_unchain_backward_makes_root(xp):
    """After unchain_backward the variable has no creator and backprop stops there."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    h = x * x
    h2 = h * 3.0
    h2.unchain_backward()
    assert h2.creator is None
    pg.sum(h2 * x).backward()
    close(x.grad, npa(h2.data))  # only the direct path: d(h2*x)/dx with h2 constant


def test_unchain_backward_truncated_bptt(xp):
    """Truncated BPTT: after unchaining the state, gradients reach only the last segment's inputs."""
    w = pg.Variable(arr(xp, [0.5]))
    state = pg.Variable(arr(xp, [1.0]), requires_grad=False)
    for _ in range(3):
        state = state * w
    state.unchain_backward()
    w.cleargrad()
    loss = pg.sum(state * w)  # one step after the cut
    loss.backward()
    close(w.grad, npa(state.data))  # 0.125, not 4 * 0.5**3


def test_backward_from_intermediate_behind_unchain_backward_stops_there(xp):
    """An intermediate behind an unchained variable is cut off too: backward from it reaches nothing."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    h = x * x
    h2 = h * 3.0
    h2.unchain_backward()
    pg.sum(h).backward()
    assert x.grad is None


def test_set_creator_links_variable_to_function(xp):
    """set_creator(f) makes f the creator, and backward goes through f."""

    class Square(pg.Function):
        def forward(self, inputs):
            return inputs[0] * inputs[0],

        def backward(self, inputs, grad_outputs):
            return 2 * inputs[0] * grad_outputs[0],

    x = pg.Variable(arr(xp, [1.0, 3.0]))
    f = Square()
    y = f(x)
    v = pg.Variable(y.data)
    v.set_creator(f)
    assert v.creator is f
    pg.sum(v).backward()
    close(x.grad, [2.0, 6.0])


# ---------------------------------------------------------------------------
# register_hook
# ---------------------------------------------------------------------------
def test_register_hook_doubles_gradient_seed_example(xp):
    """The PyTorch seed: a hook returning grad * 2 doubles v.grad."""
    v = pg.Variable(arr(xp, [0.0, 0.0, 0.0]))
    v.register_hook(lambda grad: grad * 2)
    v.backward(arr(xp, [1.0, 1.0, 1.0]))
    close(v.grad, [2.0, 2.0, 2.0])


def test_register_hook_returning_none_keeps_gradient(xp):
    """A hook returning None leaves the gradient as computed."""
    calls = []
    w1 = pg.Variable(arr(xp, [1.0, 1.0, 1.0]))
    w1.register_hook(lambda grad: calls.append(grad))
    w1.backward(arr(xp, [1.0, 1.0, 1.0]))
    assert len(calls) == 1
    close(w1.grad, [1.0, 1.0, 1.0])


def test_register_hook_handle_remove(xp):
    """handle.remove() unregisters the hook."""
    v = pg.Variable(arr(xp, [1.0]))
    h = v.register_hook(lambda grad: grad * 2)
    h.remove()
    (v * 3.0).backward()
    close(v.grad, [3.0])


def test_register_hook_receives_gradient_array(xp):
    """The hook receives the gradient computed for that variable."""
    seen = []
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    x.register_hook(lambda g: seen.append(npa(g)))
    pg.sum(x * 3.0).backward()
    np.testing.assert_allclose(seen[0], [3.0, 3.0])


def test_register_hook_called_on_every_backward(xp):
    """The hook runs each time the gradient is computed."""
    calls = []
    x = pg.Variable(arr(xp, [1.0]))
    x.register_hook(lambda g: calls.append(1))
    (x * 2.0).backward()
    (x * 2.0).backward()
    assert len(calls) == 2


def test_register_hook_on_intermediate_changes_upstream_gradient(xp):
    """A hook on an intermediate variable replaces the gradient that flows on to its inputs."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    h = x * 3.0
    h.register_hook(lambda g: g * 10)
    pg.sum(h).backward()
    close(x.grad, [30.0, 30.0])


def test_hook_on_a_copy_of_a_leaf_is_the_copys_own(xp):
    """copy.copy of a leaf with a hook: a hook added to the copy leaves the original's gradient alone."""
    import copy

    w = pg.Variable(arr(xp, [1.0, 2.0]))
    w.register_hook(lambda g: None)
    c = copy.copy(w)
    c.register_hook(lambda g: g * 100)  # changed w's gradient too: [100, 100]
    pg.sum(w * 1.0).backward()
    close(w.grad, [1.0, 1.0])


def test_hooks_of_a_copy_of_an_intermediate_fire_for_both(xp):
    """A copy of an intermediate stands at the same place in the graph: the hooks of both fire
    there, also when none was registered before the copy (the copy's replaced the original's)."""
    import copy

    x = pg.Variable(arr(xp, [1.0, 2.0]))
    h = x * 1.0
    c = copy.copy(h)
    seen = []
    h.register_hook(lambda g: seen.append("h"))
    c.register_hook(lambda g: seen.append("c"))
    pg.sum(h).backward()
    assert sorted(seen) == ["c", "h"]


# ---------------------------------------------------------------------------
# flags
# ---------------------------------------------------------------------------
def test_requires_grad_settable_on_leaf(xp):
    """requires_grad can be changed on a leaf."""
    x = pg.Variable(arr(xp, [1.0]))
    x.requires_grad = False
    assert x.requires_grad is False
    y = x * 2.0
    assert y.requires_grad is False and y.creator is None


def test_requires_grad_not_settable_on_non_leaf(xp):
    """Changing requires_grad of a variable made by a function raises RuntimeError."""
    y = pg.Variable(arr(xp, [1.0])) * 2.0
    with pytest.raises(RuntimeError, match="leaf"):
        y.requires_grad = False


def test_volatile_settable_on_leaf_only(xp):
    """volatile can be set on a leaf; on a non-leaf it raises RuntimeError."""
    x = pg.Variable(arr(xp, [1.0]))
    y = x * 2.0
    with pytest.raises(RuntimeError, match="leaf"):
        y.volatile = True
    x.volatile = True
    assert x.volatile is True and x.requires_grad is False


def test_volatile_variable_cannot_require_grad(xp):
    """Turning on requires_grad of a volatile variable raises RuntimeError."""
    x = pg.Variable(arr(xp, [1.0]), volatile=True)
    with pytest.raises(RuntimeError, match="volatile"):
        x.requires_grad = True


def test_volatile_masks_requires_grad_and_gives_it_back(xp):
    """volatile = True then False left a leaf that never required grad again: its gradient was silently
    lost (PyTorch 0.x, Chainer v1: volatile is a flag of its own that masks requires_grad)."""
    w = pg.Variable(arr(xp, [1.0, 1.0]))
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    x.volatile = True
    assert x.requires_grad is False and (x * 2.0).creator is None
    x.volatile = False
    assert x.requires_grad is True
    pg.sum(x * 3.0 + w).backward()
    close(x.grad, [3.0, 3.0])
    c = pg.Variable(arr(xp, [1.0]), requires_grad=False)  # a constant stays one
    c.volatile = True
    c.volatile = False
    assert c.requires_grad is False
    v = pg.Variable(arr(xp, [1.0]), volatile=True)  # the default requires_grad, given back
    v.volatile = False
    assert v.requires_grad is True
    v.volatile = True
    v.requires_grad = False  # while masked: what volatile = False gives back
    v.volatile = False
    assert v.requires_grad is False


def test_volatile_with_requires_grad_is_refused_by_constructor_and_setter(xp):
    """Variable(requires_grad=True, volatile=True) silently dropped requires_grad, where the setter refused
    the same pair: both refuse it (PyTorch 0.x's constructor does)."""
    with pytest.raises(RuntimeError, match=r"Variable\(requires_grad=True, volatile=True\): a volatile variable "
                                           r"cannot require grad"):
        pg.Variable(arr(xp, [1.0]), volatile=True, requires_grad=True)
    x = pg.Variable(arr(xp, [1.0]), volatile=True, requires_grad=False)
    with pytest.raises(RuntimeError, match=r"requires_grad = True on variable \(shape \(1,\)\): a volatile"):
        x.requires_grad = True
    x.volatile = False
    assert x.requires_grad is False


def test_volatile_takes_bools_and_chainer_v1_flags_and_refuses_the_rest(xp):
    """Variable(x, volatile='off') was volatile (bool('off') is True), so a Chainer v1 training input
    recorded no graph; the flags are read as Chainer v1 does, numpy bools as bools, the rest refused."""
    for flag, expected in [("on", True), ("ON", True), ("off", False), ("OFF", False), ("auto", False),
                           (None, False), (np.bool_(True), True), (np.False_, False)]:
        assert pg.Variable(arr(xp, [1.0]), volatile=flag).volatile is expected, flag
        x = pg.Variable(arr(xp, [1.0]))
        x.volatile = flag
        assert x.volatile is expected and x.requires_grad is not expected, flag
    for bad in ["False", "yes", 1, 0.0, [True]]:
        with pytest.raises(TypeError, match=rf"polygrad.Variable: volatile is {re.escape(repr(bad))} "):
            pg.Variable(arr(xp, [1.0]), volatile=bad)
        x = pg.Variable(arr(xp, [1.0]))
        with pytest.raises(TypeError, match=r"setting volatile of variable \(shape \(1,\)\): volatile is .*'on' "
                                            r"\(True\), 'off' or 'auto' \(False\)"):
            x.volatile = bad
        assert x.volatile is False and x.requires_grad is True


def test_volatile_inputs_build_no_graph(xp):
    """Functions applied to a volatile variable keep no reference to themselves."""
    x = pg.Variable(arr(xp, [1.0, 2.0]), volatile=True)
    y = pg.exp(x) * 2.0
    assert y.creator is None
    assert y.volatile is True
    assert y.requires_grad is False


def test_volatile_input_wins_over_grad_requiring_input(xp):
    """Mixing a volatile input with one requiring grad builds no graph (output volatile)."""
    x = pg.Variable(arr(xp, [1.0]), volatile=True)
    w = pg.Variable(arr(xp, [2.0]))
    y = x * w
    assert y.creator is None and y.volatile is True


def test_no_backprop_mode_builds_no_graph(xp):
    """In no_backprop_mode the result has no creator; backward from it says it cannot reach anything."""
    x = pg.Variable(arr(xp, [1.0], dtype="float32"))
    with pg.no_backprop_mode():
        y = x + 1
    assert y.creator is None
    assert y.requires_grad is False
    with pytest.raises(RuntimeError, match="does not require grad and was made by no function"):
        y.backward()
    assert x.grad is None


def test_force_backprop_mode_inside_no_backprop_mode(xp):
    """force_backprop_mode inside no_backprop_mode builds the graph again."""
    x = pg.Variable(arr(xp, [1.0], dtype="float32"))
    with pg.no_backprop_mode():
        with pg.force_backprop_mode():
            y = x + 1
        assert not pg.is_backprop_enabled()
    assert y.creator is not None
    y.backward()
    close(x.grad, [1.0])


def test_force_backprop_mode_outside_changes_nothing(xp):
    """force_backprop_mode outside no_backprop_mode changes nothing."""
    x = pg.Variable(arr(xp, [2.0]))
    with pg.force_backprop_mode():
        y = x * x
    assert pg.is_backprop_enabled()
    y.backward()
    close(x.grad, [4.0])


def test_no_backprop_mode_restores_after_exception():
    """An exception inside no_backprop_mode still restores backprop."""
    with pytest.raises(KeyError):
        with pg.no_backprop_mode():
            raise KeyError
    assert pg.is_backprop_enabled()


# ---------------------------------------------------------------------------
# operators
# ---------------------------------------------------------------------------
BINARY = [
    ("x + 2", lambda x: x + 2, lambda v: 1.0),
    ("2 + x", lambda x: 2 + x, lambda v: 1.0),
    ("x - 2", lambda x: x - 2, lambda v: 1.0),
    ("2 - x", lambda x: 2 - x, lambda v: -1.0),
    ("x * 3", lambda x: x * 3, lambda v: 3.0),
    ("3 * x", lambda x: 3 * x, lambda v: 3.0),
    ("x / 2", lambda x: x / 2, lambda v: 0.5),
    ("2 / x", lambda x: 2 / x, lambda v: -2.0 / v**2),
    ("x ** 2", lambda x: x**2, lambda v: 2 * v),
    ("x ** 0.5", lambda x: x**0.5, lambda v: 0.5 / math.sqrt(v)),
    ("2 ** x", lambda x: 2**x, lambda v: math.log(2.0) * 2**v),
    ("2.0 ** x", lambda x: 2.0**x, lambda v: math.log(2.0) * 2**v),
    ("x ** x", lambda x: x**x, lambda v: v**v * (math.log(v) + 1)),
    ("-x", lambda x: -x, lambda v: -1.0),
    ("+x", lambda x: +x, lambda v: 1.0),
    ("abs(-x)", lambda x: abs(-x), lambda v: 1.0),
    ("x * x", lambda x: x * x, lambda v: 2 * v),
    ("x / x * x", lambda x: x / x * x, lambda v: 1.0),
]


@pytest.mark.parametrize("text,fn,deriv", BINARY, ids=[b[0] for b in BINARY])
def test_operator_value_and_gradient(xp, text, fn, deriv):
    """Each arithmetic operator (incl. reflected forms with Python scalars) gives value and gradient."""
    values = [1.5, 2.0]
    x = pg.Variable(arr(xp, values))
    y = fn(x)
    assert isinstance(y, pg.Variable)
    pg.sum(y).backward()
    close(y.data, [fn(v) for v in values])
    close(x.grad, [deriv(v) for v in values])


def test_matmul_operator_gradients(xp):
    """a @ b is differentiable in both operands."""
    a = pg.Variable(arr(xp, [[1.0, 2.0], [3.0, 4.0]]))
    b = pg.Variable(arr(xp, [[1.0], [-1.0]]))
    y = a @ b
    close(y.data, [[-1.0], [-1.0]])
    pg.sum(y).backward()
    close(a.grad, [[1.0, -1.0], [1.0, -1.0]])
    close(b.grad, [[4.0], [6.0]])


def test_vector_matmul_gives_scalar_and_gradient(xp):
    """x @ x for a vector is its squared norm, gradient 2x."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    y = x @ x
    y.backward()
    close(y.data, 5.0)
    close(x.grad, [2.0, 4.0])


def test_raw_numpy_array_on_left_of_matmul_gives_variable():
    """np_array @ w returns a Variable and backprops into w."""
    w = pg.Variable(np.array([[1.0], [2.0]]))
    a = np.array([[1.0, 1.0], [2.0, 3.0]])
    y = a @ w
    assert isinstance(y, pg.Variable)
    np.testing.assert_allclose(y.data, [[3.0], [8.0]])
    pg.sum(y).backward()
    np.testing.assert_allclose(w.grad, [[3.0], [4.0]])


@pytest.mark.parametrize("op", ["+", "-", "*", "/", "**"])
def test_raw_numpy_array_on_left_gives_variable(op):
    """np_array <op> x returns a Variable (numpy defers to the Variable) with correct gradient."""
    x = pg.Variable(np.array([1.0, 2.0]))
    a = np.array([3.0, 4.0])
    y = eval(f"a {op} x")
    assert isinstance(y, pg.Variable)
    np.testing.assert_allclose(y.data, eval(f"a {op} x.data"))
    pg.sum(y).backward()
    eps = 1e-6
    numeric = (eval(f"a {op} (x.data + eps)") - eval(f"a {op} (x.data - eps)")) / (2 * eps)
    np.testing.assert_allclose(x.grad, numeric, rtol=1e-5)


@pytest.mark.parametrize("op", ["<", "<=", ">", ">=", "==", "!="])
def test_comparisons_give_variables_not_requiring_grad(xp, op):
    """Comparison operators give boolean Variables with no graph."""
    x = pg.Variable(arr(xp, [1.0, 2.0, 3.0]))
    y = eval(f"x {op} 2.0")
    assert isinstance(y, pg.Variable)
    assert y.requires_grad is False
    assert y.creator is None
    assert y.dtype == xp.bool
    np.testing.assert_array_equal(npa(y.data), eval(f"np.array([1.0, 2.0, 3.0]) {op} 2.0"))


def test_getitem_basic_is_differentiable(xp):
    """x[1, 1:] selects values and scatters the gradient back."""
    x = pg.Variable(arr(xp, [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]))
    y = x[1, 1:]
    close(y.data, [4.0, 5.0])
    pg.sum(y * y).backward()
    close(x.grad, [[0.0, 0.0, 0.0], [0.0, 8.0, 10.0]])


def test_getitem_scalar_index_is_differentiable(xp):
    """x[1] of a vector is a scalar whose gradient lands at index 1."""
    x = pg.Variable(arr(xp, [1.0, 2.0, 3.0]))
    y = x[1]
    y.backward()
    close(x.grad, [0.0, 1.0, 0.0])


def test_getitem_integer_array_repeated_indices_sum(xp):
    """Indexing a vector with an integer array repeating an index sums the gradients there."""
    x = pg.Variable(arr(xp, [1.0, 2.0, 3.0]))
    idx = xp.asarray([0, 0, 2])
    y = x[idx]
    close(y.data, [1.0, 1.0, 3.0])
    pg.sum(y * arr(xp, [1.0, 10.0, 100.0])).backward()
    close(x.grad, [11.0, 0.0, 100.0])


def test_getitem_integer_array_on_first_axis_of_matrix():
    """x[idx] picking rows of a matrix (numpy) sums gradients of repeated rows."""
    x = pg.Variable(np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))
    y = x[np.array([0, 0, 2])]
    pg.sum(y).backward()
    np.testing.assert_allclose(x.grad, [[2.0, 2.0], [0.0, 0.0], [1.0, 1.0]])


def test_getitem_two_integer_arrays_is_differentiable(xp):
    """x[rows, cols] with integer arrays gathers elements and scatters gradients back (repeats summed)."""
    x = pg.Variable(arr(xp, [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]))
    rows = xp.asarray([0, 0, 1])
    cols = xp.asarray([1, 1, 2])
    y = x[rows, cols]
    close(y.data, [1.0, 1.0, 5.0])
    pg.sum(y).backward()
    close(x.grad, [[0.0, 2.0, 0.0], [0.0, 0.0, 1.0]])


def test_getitem_with_numpy_boolean_mask():
    """x[mask] with a boolean mask (numpy) is differentiable."""
    x = pg.Variable(np.array([1.0, -2.0, 3.0]))
    y = x[np.array([True, False, True])]
    pg.sum(y).backward()
    np.testing.assert_allclose(x.grad, [1.0, 0.0, 1.0])


def test_reshape_and_transpose_methods(xp):
    """x.reshape(...) and x.T are differentiable."""
    x = pg.Variable(arr(xp, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]))
    y = x.reshape(2, 3).T
    assert y.shape == (3, 2)
    pg.sum(y * arr(xp, [[1.0, 0.0], [0.0, 0.0], [0.0, 2.0]])).backward()
    close(x.grad, [1.0, 0.0, 0.0, 0.0, 0.0, 2.0])


def test_backward_positional_retain_grad_chainer_signature(xp):
    """y.backward(True) is Chainer's backward(retain_grad=True): intermediate grads are kept."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    h = x * 3.0
    loss = pg.sum(h)
    loss.backward(True)
    close(h.grad, [1.0, 1.0])
    close(x.grad, [3.0, 3.0])


def test_zerograd_sets_zeros_then_backward_accumulates(xp):
    """zerograd() sets the gradient to zeros of the data's shape; backward adds to it."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    x.zerograd()
    close(x.grad, [0.0, 0.0])
    pg.sum(x * 2.0).backward()
    close(x.grad, [2.0, 2.0])


def test_zerograd_of_an_uninitialized_variable_does_nothing():
    """pg.Variable().zerograd() raised "got None where an array or a number was expected", naming neither
    zerograd nor the uninitialized variable; Chainer 7 returns without doing anything."""
    v = pg.Variable()
    v.zerograd()
    assert v.grad is None and v.data is None


def test_leaf_grads_of_two_leaves_are_independent_arrays():
    """After backward through a + b, changing a.grad in place (e.g. weight decay) leaves b.grad alone (numpy)."""
    a = pg.Variable(np.array([1.0, 2.0]))
    b = pg.Variable(np.array([3.0, 4.0]))
    c = np.array([10.0, 20.0])
    pg.sum((a + b) * c).backward()
    np.testing.assert_array_equal(b.grad, [10.0, 20.0])
    a.grad += 0.5 * a.data
    np.testing.assert_array_equal(a.grad, [10.5, 21.0])
    np.testing.assert_array_equal(b.grad, [10.0, 20.0])


def test_leaf_grad_is_a_writable_array():
    """A leaf's grad can be scaled in place (gradient clipping), e.g. after pg.sum(x).backward() (numpy)."""
    x = pg.Variable(np.array([1.0, 2.0, 3.0]))
    pg.sum(x).backward()
    x.grad *= 0.5
    np.testing.assert_array_equal(x.grad, [0.5, 0.5, 0.5])


def test_grad_var_is_the_variable_that_holds_the_gradient():
    """x.grad_var made a new Variable at each access, so x.grad_var.data = v, an in-place operation on it and
    pg.persist(x.grad_var) changed nothing, silently. As Chainer's, it is one Variable whose data is x.grad while
    the gradient is that array, checked as x.grad = v is; a copy (or pickle) of it is a Variable of its own."""
    import copy
    import pickle

    x = pg.Variable(np.array([1.0, 2.0, 3.0]))
    pg.sum(x * x).backward()
    gv = x.grad_var
    assert x.grad_var is gv and gv.data is x.grad and not gv.requires_grad and gv.creator is None
    gv.data = np.zeros(3)
    assert x.grad.tolist() == [0.0, 0.0, 0.0] and x.grad_var is gv and gv.data is x.grad  # it follows the new array
    gv += 1.0
    x.grad_var *= 3.0  # (assigns x.grad_var back: its own array)
    assert x.grad.tolist() == [3.0, 3.0, 3.0] and gv.data is x.grad and x.grad_var is gv
    with pytest.raises(ValueError, match=r"gradient assigned to variable \(shape \(3,\)\) is float64 \(2,\)"):
        gv.data = np.zeros(2)
    with pytest.raises(ValueError, match=r"is complex128 \(3,\) on 'numpy', expected float64"):
        gv.array = np.array([1j, 1j, 1j])
    for other in (copy.copy(gv), copy.deepcopy(gv), pickle.loads(pickle.dumps(gv))):
        assert isinstance(other, pg.Variable) and x.grad_var is gv
        other.data = np.ones(3)
    np.testing.assert_array_equal(x.grad, [3.0, 3.0, 3.0])
    assert copy.copy(x).grad_var is not gv and copy.deepcopy(x).grad_var is not gv


def test_a_held_grad_var_keeps_its_gradient_once_x_has_another():
    """x.grad_var read x.grad live: held across cleargrad() and backward it read the last gradient (or None), so
    gradients kept step by step all came out equal; its name and requires_grad carried over to later gradients.
    As Chainer's, it is the Variable of one gradient: once x.grad is another array it keeps its own."""
    x = pg.Variable(np.array([1.0, 2.0]))
    kept = []
    for k in (1.0, 2.0, 3.0):
        x.cleargrad()
        pg.sum(x * k).backward()
        kept.append(x.grad_var)
        kept[-1].name = f"g{k:g}"
    x.cleargrad()
    assert [g.data.tolist() for g in kept] == [[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]] and x.grad_var is None
    pg.sum(x * 4.0).backward()
    gv = x.grad_var
    assert gv.name is None and gv is not kept[-1]
    pg.sum(x * 5.0).backward()  # summed into a new array
    gv *= 10.0
    assert gv.data.tolist() == [40.0, 40.0] and x.grad.tolist() == [9.0, 9.0] and x.grad_var is not gv
    x.grad = np.array([7.0, 7.0])
    old = x.grad_var
    x.grad = np.array([8.0, 8.0])
    old.data = np.zeros(2)
    assert x.grad.tolist() == [8.0, 8.0] and old.data.tolist() == [0.0, 0.0]


def test_grad_var_outlives_its_variable():
    """grad_var read x.grad through a weak reference: returned from a function whose x was local (an input
    gradient, a saliency map), it read None. It holds its gradient."""
    import gc

    def input_gradient(a):
        x = pg.Variable(np.array(a))
        pg.sum(x * x).backward()
        return x.grad_var

    g = input_gradient([1.0, 2.0])
    gc.collect()
    np.testing.assert_array_equal(g.data, [2.0, 4.0])
    g *= 2.0
    np.testing.assert_array_equal(g.data, [4.0, 8.0])


def test_a_view_of_grad_var_writes_into_its_gradient_only(backend_name):
    """A view of x.grad_var, written in place after x.grad was replaced, put a sum computed from the old gradient
    into the new one (x.grad [3, 7] for [7, 7]). Written while the gradient is still x's, it is x's."""
    xp = pg.get_backend(backend_name).xp
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    pg.sum(x * 2.0).backward()
    gv = x.grad_var
    v = gv[0:1]
    v += 1.0
    close(x.grad, [3.0, 2.0])
    w = gv[1:2]
    x.grad = arr(xp, [7.0, 7.0])
    w += 1.0
    close(x.grad, [7.0, 7.0])
    close(gv.data, [3.0, 3.0])


def test_x_and_its_grad_var_copied_together_stay_tied():
    """copy.deepcopy / pickle of x with x.grad_var (in either order) give a copy of x whose grad_var is the copied
    one, as Chainer's; one copied alone is a Variable of its own."""
    import copy
    import pickle

    x = pg.Variable(np.array([1.0, 2.0]))
    pg.sum(x * x).backward()
    for make in (copy.deepcopy, lambda o: pickle.loads(pickle.dumps(o))):
        for keys in (("x", "g"), ("g", "x")):
            box = make(dict(zip(keys, (x, x.grad_var) if keys[0] == "x" else (x.grad_var, x))))
            xc, gc = box["x"], box["g"]
            assert xc.grad_var is gc and gc.data is xc.grad
            gc.data = np.array([5.0, 5.0])
            assert xc.grad.tolist() == [5.0, 5.0] and x.grad.tolist() == [2.0, 4.0]


def test_cleargrad_frees_the_gradient_grad_var_was_read_of():
    """x keeps its grad_var while the gradient is that array; cleargrad frees both."""
    import gc
    import weakref

    x = pg.Variable(np.array([1.0, 2.0]))
    pg.sum(x * x).backward()
    assert x.grad_var is x.grad_var
    gone = weakref.ref(x.grad)
    x.cleargrad()
    gc.collect()
    assert gone() is None


def test_persist_of_grad_var_persists_the_gradient_on_dask():
    """docs/dask.md: pg.persist the .grads between backward calls; pg.persist(x.grad_var) persisted a wrapper
    thrown away at once, and x.grad kept its whole lazy graph."""
    da = pytest.importorskip("dask.array")
    x = pg.Variable(da.from_array(np.arange(4.0), chunks=2))
    pg.sum(x * x).backward()
    tasks = len(x.grad.dask)
    (gv,) = pg.persist(x.grad_var)
    assert gv is x.grad_var and len(x.grad.dask) < tasks
    np.testing.assert_array_equal(np.asarray(x.grad), [0.0, 2.0, 4.0, 6.0])


@pytest.mark.filterwarnings("ignore:polygrad. backward.create_graph=True. made:UserWarning")  # (the cycle's)
def test_create_graph_leaf_grads_are_writable_arrays_of_their_own():
    """Under create_graph each leaf's .grad is its own writable array: not another leaf's, not the seed, not a view."""
    a = pg.Variable(np.array([1.0, 2.0]))
    b = pg.Variable(np.array([3.0, 4.0]))
    seed = np.array([1.0, 1.0])
    (a + b).backward(seed, create_graph=True)
    assert a.grad_var is not b.grad_var
    a.grad[...] *= 0.5
    np.testing.assert_array_equal(b.grad, [1.0, 1.0])
    np.testing.assert_array_equal(seed, [1.0, 1.0])
    d = pg.Variable(np.array([1.0, 2.0]))
    pg.sum(d + 0.0).backward(create_graph=True)  # the gradient is a read-only broadcast of the seed
    d.grad *= 0.5
    np.testing.assert_array_equal(d.grad, [0.5, 0.5])
    s = pg.Variable(np.asarray(2.0))
    (s * s).backward(create_graph=True)
    s.grad[...] = 1.0  # a 0-d .grad too (NumPy's arithmetic gives read-only scalars)
    assert float(s.grad) == 1.0


@pytest.mark.filterwarnings("ignore:polygrad. backward.create_graph=True. made:UserWarning")  # (the cycle's)
def test_create_graph_grad_copy_stays_differentiable(xp):
    """The .grad_var a create_graph backward writes (copied) is still differentiated: d/ds of 3 s^2 is 6 s."""
    s = pg.Variable(arr(xp, [2.0, 3.0]))
    pg.sum(s ** 3).backward(create_graph=True)
    g = s.grad_var
    assert g.creator is not None
    s.cleargrad()
    pg.sum(g).backward()
    assert float(s.grad[0]) == 12.0 and float(s.grad[1]) == 18.0


def test_create_graph_retained_grad_is_its_own_array():
    """Under create_graph, a retained intermediate .grad is not the array that flows on (nor the seed)."""
    x = pg.Variable(np.array([1.0, 2.0]))
    h = x * 1.0
    seed = np.array([1.0, 1.0])
    (h + 0.0).backward(seed, retain_grad=True, create_graph=True)
    h.grad[...] = 7.0
    np.testing.assert_array_equal(x.grad, [1.0, 1.0])
    np.testing.assert_array_equal(seed, [1.0, 1.0])


def test_weight_grad_after_broadcast_add_is_writable():
    """W.grad after pg.sum(W + b).backward() is writable and holds ones (numpy)."""
    W = pg.Variable(np.ones((2, 3)))
    b = pg.Variable(np.zeros(3))
    pg.sum(W + b).backward()
    W.grad[0, 0] = 5.0
    np.testing.assert_array_equal(W.grad, [[5.0, 1.0, 1.0], [1.0, 1.0, 1.0]])
    np.testing.assert_array_equal(b.grad, [2.0, 2.0, 2.0])


def test_backward_without_retain_grad_clears_an_intermediate_grad_kept_before(xp):
    """A pass with retain_grad=True keeps h.grad; a later pass without it sets h.grad to None (Chainer, V18)."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    h = x * 2
    y = pg.sum(h * h)
    y.backward(retain_grad=True, retain_graph=True)
    assert h.grad is not None
    y.backward()
    assert h.grad is None


def test_multi_line_repr_is_aligned_under_variable():
    """Continuation lines of a matrix's repr line up under the first row (issue 14)."""
    text = repr(pg.Variable(np.arange(6.0).reshape(2, 3), name="w"))
    first, second = text.splitlines()
    assert second.index("[") == first.index("[") + 1


def test_unknown_backend_name_suggests_the_close_one():
    """pg.set_backend("numpyy") asks: did you mean 'numpy'?"""
    with pytest.raises(ValueError, match="did you mean 'numpy'"):
        pg.set_backend("numpyy")


def test_the_freed_graph_error_says_the_second_positional_parameter_is_retain_grad():
    """y.backward(g, True) is PyTorch 0.x's retain_variables, polygrad's (documented) retain_grad:
    the second backward's error told the user to pass retain_graph=True, which they believed they had."""
    x = pg.Variable(np.array([1.0, 2.0]))
    y = x * x * 2.0
    y.backward(np.ones(2), True)
    with pytest.raises(RuntimeError, match=r"retain_graph=True .*by keyword: backward's second positional parameter "
                                           r"is Chainer's retain_grad"):
        y.backward(np.ones(2))


def test_a_grad_var_made_to_require_grad_stays_in_the_graph_as_a_seed():
    """x.grad_var made to require grad and given as grad_outputs of a create_graph pass was turned back
    into its raw array (the unwrap meant for x.grad_var *= 2): d loss/dv lost the path through the seed,
    [4, 8] for [10, 18] (PyTorch's grad_outputs, jax's cotangent, are differentiable)."""
    x = pg.Variable(np.array([1.0, 2.0]))
    pg.sum(x * x).backward()
    v = x.grad_var
    v.requires_grad = True
    w = pg.Variable(np.array([3.0, 5.0]))
    (gw,) = pg.grad([w * w], [w], [v], create_graph=True)
    (gv,) = pg.grad([pg.sum(gw) + pg.sum(v * v)], [v])
    np.testing.assert_array_equal(gv.data, [10.0, 18.0])


def test_a_grad_made_to_require_grad_is_summed_outside_the_graph_without_create_graph():
    """x.grad_var made to require grad and assigned back (a gradient penalty's setup): every later backward
    without create_graph summed into it with a recorded add, a graph growing by one node per pass and keeping
    every gradient alive (PyTorch's AccumulateGrad records nothing there)."""
    x = pg.Variable(np.array([1.0, 2.0]))
    pg.sum(x * x).backward()
    v = x.grad_var
    v.requires_grad = True
    x.grad_var = v
    for _ in range(3):
        pg.sum(x * x).backward()
    np.testing.assert_array_equal(x.grad, [8.0, 16.0])
    assert getattr(x._grad, "_node", None) is None

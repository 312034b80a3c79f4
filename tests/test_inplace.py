"""In-place operations on Variables: rebased history, version counters, and correctness checks."""

from __future__ import annotations

import numpy as np
import pytest

import polygrad as pg
from conftest import arr


def npa(a):
    if a is None:
        return None
    return np.asarray(pg.to_backend(a, "numpy"))


def close(a, expected):
    np.testing.assert_allclose(npa(a), np.asarray(expected, dtype=float), rtol=1e-6, atol=1e-12)


# ---------------------------------------------------------------------------
# gradients after in-place ops
# ---------------------------------------------------------------------------
def test_iadd_gradient(xp):
    """h += 1 keeps the graph: d(sum(3w + 1))/dw = 3."""
    w = pg.Variable(arr(xp, [1.0, 2.0]))
    h = w * 3.0
    h += 1.0
    close(h.data, [4.0, 7.0])
    pg.sum(h).backward()
    close(w.grad, [3.0, 3.0])


def test_isub_gradient(xp):
    """h -= w gives d(sum(3w - w))/dw = 2."""
    w = pg.Variable(arr(xp, [1.0, 2.0]))
    h = w * 3.0
    h -= w
    pg.sum(h).backward()
    close(w.grad, [2.0, 2.0])


def test_imul_gradient(xp):
    """h *= w after h = 3w + 1 gives the gradient 6w + 1."""
    w = pg.Variable(arr(xp, [1.0, 2.0]))
    h = w * 3.0
    h += 1.0
    h *= w
    close(h.data, [4.0, 14.0])
    pg.sum(h).backward()
    close(w.grad, [7.0, 13.0])


def test_itruediv_gradient(xp):
    """h /= w after h = w * w gives h = w and gradient 1."""
    w = pg.Variable(arr(xp, [2.0, 4.0]))
    h = w * w
    h /= w
    close(h.data, [2.0, 4.0])
    pg.sum(h).backward()
    close(w.grad, [1.0, 1.0])


def test_chain_of_inplace_ops_gradient(xp):
    """A chain of += -= *= /= gives the gradient of the composed expression."""
    w = pg.Variable(arr(xp, [1.0, 2.0]))
    h = w * 3.0
    h += 1.0
    h *= w
    h -= 1.0
    h /= 2.0
    pg.sum(h).backward()
    close(w.grad, [(6 * 1.0 + 1) / 2, (6 * 2.0 + 1) / 2])


def test_inplace_rebases_history(xp):
    """After h += 1, h's creator is the add node, whose input is h's old creator."""
    w = pg.Variable(arr(xp, [1.0]))
    h = w * 3.0
    old = h.creator
    h += 1.0
    assert h.creator is not old
    assert h.creator.label == "add"
    assert h.creator.edges[0][0] is old


def test_inplace_on_non_grad_variable_with_grad_operand(xp):
    """c += w on a Variable not requiring grad makes c require grad and routes the gradient to w."""
    c = pg.Variable(arr(xp, [10.0, 20.0]), requires_grad=False)
    w = pg.Variable(arr(xp, [1.0, 2.0]))
    c *= w
    assert c.requires_grad is True
    pg.sum(c).backward()
    close(w.grad, [10.0, 20.0])


def test_setitem_gradient_to_untouched_elements(xp):
    """a[0] = 7 cuts the gradient at index 0 only."""
    w = pg.Variable(arr(xp, [1.0, 2.0, 3.0]))
    a = w * 1.0
    a[0] = 7.0
    close(a.data, [7.0, 2.0, 3.0])
    pg.sum(a * a).backward()
    close(w.grad, [0.0, 4.0, 6.0])


def test_setitem_gradient_to_value(xp):
    """a[1:] = v sends the gradient of those elements to v (broadcast summed)."""
    w = pg.Variable(arr(xp, [1.0, 2.0, 3.0]))
    v = pg.Variable(arr(xp, [5.0]))
    a = w * 1.0
    a[1:] = v
    close(a.data, [1.0, 5.0, 5.0])
    pg.sum(a * a).backward()
    close(w.grad, [2.0, 0.0, 0.0])
    close(v.grad, [20.0])


def test_setitem_numpy_integer_array_key():
    """a[idx] = v with an integer array key (numpy) is differentiable in a and v."""
    w = pg.Variable(np.array([1.0, 2.0, 3.0]))
    v = pg.Variable(np.array([10.0, 20.0]))
    a = w * 1.0
    a[np.array([0, 2])] = v
    np.testing.assert_allclose(a.data, [10.0, 2.0, 20.0])
    pg.sum(a * np.array([1.0, 2.0, 3.0])).backward()
    np.testing.assert_allclose(w.grad, [0.0, 2.0, 0.0])
    np.testing.assert_allclose(v.grad, [1.0, 3.0])


def test_inplace_changing_dtype_is_value_error():
    """An in-place op that would change the dtype (int /= 2, numpy) raises ValueError."""
    i = pg.Variable(np.array([1, 2]), requires_grad=False)
    with pytest.raises(ValueError, match="in-place"):
        i /= 2


# ---------------------------------------------------------------------------
# version counter
# ---------------------------------------------------------------------------
def test_version_counter_increments(xp):
    """Every in-place op and setitem bumps the version by one."""
    w = pg.Variable(arr(xp, [1.0, 2.0]))
    h = w * 1.0
    assert h.version == 0
    h += 1.0
    assert h.version == 1
    h *= 2.0
    assert h.version == 2
    h[0] = 0.0
    assert h.version == 3


def test_out_of_place_op_does_not_bump_version(xp):
    """h + 1 (out of place) leaves h's version unchanged."""
    h = pg.Variable(arr(xp, [1.0])) * 2.0
    _ = h + 1.0
    assert h.version == 0


def test_detach_shares_version_counter(xp):
    """An in-place op on a detached variable bumps the original's version too."""
    w = pg.Variable(arr(xp, [1.0, 2.0]))
    h = w * 1.0
    d = h.detach()
    d += 1.0
    assert d.version == 1
    assert h.version == 1


def test_inplace_on_detached_view_caught_in_backward(xp):
    """Modifying a detached copy of a saved array is caught at backward."""
    w = pg.Variable(arr(xp, [1.0, 2.0]))
    h = w * 1.0
    z = h * h
    d = h.detach()
    d += 1.0
    close(h.data, [2.0, 3.0])
    with pytest.raises(RuntimeError, match="in-place"):
        pg.sum(z).backward()


# ---------------------------------------------------------------------------
# leaves
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("stmt", ["w += 1.0", "w -= 1.0", "w *= 2.0", "w /= 2.0", "w[0] = 5.0"])
def test_inplace_on_leaf_requiring_grad_raises(xp, stmt):
    """An in-place op on a leaf that requires grad raises RuntimeError."""
    w = pg.Variable(arr(xp, [1.0, 2.0]))
    with pytest.raises(RuntimeError, match="leaf"):
        exec(stmt)


def test_inplace_on_leaf_allowed_in_no_backprop_mode(xp):
    """Under pg.no_backprop_mode an in-place update of a leaf is allowed and stays a leaf."""
    w = pg.Variable(arr(xp, [1.0, 2.0]))
    with pg.no_backprop_mode():
        w -= 0.5
    close(w.data, [0.5, 1.5])
    assert w.creator is None and w.requires_grad is True
    assert w.version == 1
    pg.sum(w * w).backward()
    close(w.grad, [1.0, 3.0])


def test_inplace_on_leaf_not_requiring_grad_is_allowed(xp):
    """A leaf that does not require grad can be changed in place."""
    c = pg.Variable(arr(xp, [1.0]), requires_grad=False)
    c += 1.0
    close(c.data, [2.0])


def test_sgd_update_in_no_backprop_mode_then_backward_again(xp):
    """Updating a parameter in place under no_backprop_mode, then a fresh forward/backward, works."""
    w = pg.Variable(arr(xp, [1.0]))
    for _ in range(3):
        w.cleargrad()
        loss = pg.sum(w * w)
        loss.backward()
        with pg.no_backprop_mode():
            w -= 0.25 * pg.Variable(w.grad, requires_grad=False)
    close(w.data, [0.125])


# ---------------------------------------------------------------------------
# saved arrays modified in place
# ---------------------------------------------------------------------------
def test_modified_saved_output_raises_naming_op_output_shape_versions(xp):
    """exp saves its output; changing it in place makes backward raise naming exp, output, shape, versions."""
    w = pg.Variable(arr(xp, [1.0, 2.0]))
    a = w * 1.0
    e = pg.exp(a)
    e += 1.0
    with pytest.raises(RuntimeError) as info:
        pg.sum(e).backward()
    msg = str(info.value)
    assert "exp" in msg
    assert "output" in msg
    assert "(2,)" in msg
    assert "version 0" in msg and "version 1" in msg


def test_modified_saved_input_raises_naming_op_input_shape_versions(xp):
    """multiply saves its inputs; changing one in place makes backward raise naming multiply and input 0."""
    w = pg.Variable(arr(xp, [1.0, 2.0, 3.0]))
    a = w * 1.0
    m = a * w
    a += 1.0
    with pytest.raises(RuntimeError) as info:
        pg.sum(m).backward()
    msg = str(info.value)
    assert "multiply" in msg
    assert "input 0" in msg
    assert "(3,)" in msg
    assert "version 0" in msg and "version 1" in msg


def test_modified_saved_input_twice_reports_current_version(xp):
    """Two in-place changes after saving show the saved version 0 and the current version 2."""
    w = pg.Variable(arr(xp, [1.0]))
    a = w * 1.0
    m = a * a
    a += 1.0
    a += 1.0
    with pytest.raises(RuntimeError, match="version 2"):
        m.backward()


def test_setitem_on_saved_array_raises(xp):
    """x[0] = ... on an array saved by sin makes backward raise RuntimeError naming sin."""
    w = pg.Variable(arr(xp, [1.0, 2.0]))
    a = w * 1.0
    s = pg.sin(a)
    a[0] = 0.0
    with pytest.raises(RuntimeError, match="sin"):
        pg.sum(s).backward()


def test_inplace_on_unsaved_input_is_fine(xp):
    """Changing in place an input that no backward needs (add saves nothing) gives correct gradients."""
    w = pg.Variable(arr(xp, [1.0, 2.0]))
    a = w * 1.0
    b = a + 5.0
    a += 100.0
    pg.sum(b).backward()
    close(b.data, [6.0, 7.0])
    close(w.grad, [1.0, 1.0])


def test_inplace_after_backward_is_fine(xp):
    """Modifying a saved array after backward does not affect the gradients already computed."""
    w = pg.Variable(arr(xp, [1.0, 2.0]))
    a = w * 1.0
    m = a * a
    pg.sum(m).backward()
    a += 1.0
    close(w.grad, [2.0, 4.0])


def test_inplace_result_used_by_later_op_is_correct(xp):
    """The in-place op's own saved copy: h *= h uses the old h on both sides."""
    w = pg.Variable(arr(xp, [3.0]))
    h = w * 1.0
    h *= h
    close(h.data, [9.0])
    h.backward()
    close(w.grad, [6.0])


def test_user_function_saved_tensor_modified_raises(xp):
    """A user Function's saved input changed in place makes backward raise RuntimeError naming it."""

    class Twice(pg.Function):
        def forward(self, inputs):
            self.retain_inputs(())
            self.save_for_backward(inputs[0])
            return inputs[0] * 2,

        def backward(self, inputs, grad_outputs):
            (x,) = self.saved_tensors
            return grad_outputs[0] * 2,

    w = pg.Variable(arr(xp, [1.0]))
    a = w * 1.0
    y = Twice()(a)
    a += 1.0
    with pytest.raises(RuntimeError, match="Twice"):
        y.backward()


# ---------------------------------------------------------------------------
# shared data (numpy writes in place)
# ---------------------------------------------------------------------------
def test_inplace_writes_into_existing_array():
    """h += 1 writes into h's array: another reference to h.data sees the change (numpy)."""
    w = pg.Variable(np.array([1.0, 2.0]))
    h = w * 1.0
    ref = h.data
    h += 1.0
    assert h.data is ref
    np.testing.assert_array_equal(ref, [2.0, 3.0])


def test_detach_sees_inplace_changes():
    """A detached variable shares data: in-place changes to either are seen by both (numpy)."""
    w = pg.Variable(np.array([1.0, 2.0]))
    h = w * 1.0
    d = h.detach()
    h *= 2.0
    np.testing.assert_array_equal(d.data, [2.0, 4.0])
    d += 1.0
    np.testing.assert_array_equal(h.data, [3.0, 5.0])


def test_setitem_writes_into_existing_array():
    """h[0] = 9 writes into h's array (numpy)."""
    h = pg.Variable(np.array([1.0, 2.0])) * 1.0
    ref = h.data
    h[0] = 9.0
    np.testing.assert_array_equal(ref, [9.0, 2.0])


@pytest.mark.parametrize(
    "make_view",
    [
        lambda x: x.reshape((2,)),
        lambda x: x[0:2],
        lambda x: x.T,
        lambda x: pg.expand_dims(x, axis=0),
    ],
    ids=["reshape", "slice", "T", "expand_dims"],
)
def test_inplace_on_base_of_view_saved_elsewhere_is_detected(make_view):
    """A view made by an op shares memory with its base (numpy): changing the base in place must be caught
    when the view was saved for backward (or the gradient must stay right)."""
    w = pg.Variable(np.array([1.0, 2.0]))
    x = w * 1.0
    v = make_view(x)
    z = v * v  # saves v, which shares memory with x
    x += 1.0
    try:
        pg.sum(z).backward()
    except RuntimeError as exc:
        assert "in-place" in str(exc)
        return
    np.testing.assert_allclose(w.grad, [2.0, 4.0])  # 2 * old x, not 2 * new x


def test_inplace_on_view_changes_saved_base_is_detected():
    """Changing in place a view (x[0:2]) of an array saved for backward must be caught (or not corrupt the gradient)."""
    w = pg.Variable(np.array([1.0, 2.0]))
    x = w * 1.0
    z = x * x  # saves x
    v = x[0:2]
    v += 1.0  # writes into x's memory (numpy)
    try:
        pg.sum(z).backward()
    except RuntimeError as exc:
        assert "in-place" in str(exc)
        return
    np.testing.assert_allclose(w.grad, [2.0, 4.0])


def test_product_by_a_constant_saves_only_the_constant():
    """h * 3 keeps 3, not h (its rule for h reads only the other factor): h may change in place later."""
    x = pg.Variable(np.array([1.0, 2.0]))
    h = x * 1.0
    y = pg.sum(h * 3.0)
    with pg.no_backprop_mode():
        h += 1
    y.backward()
    np.testing.assert_allclose(x.grad, [3.0, 3.0])


def test_power_by_a_constant_does_not_save_its_output():
    """s = h**2; s *= h (scipy's skew / moment(3) idiom) differentiates: pow by a constant
    keeps only its base, so the in-place change of its output breaks nothing (S17)."""
    x = pg.Variable(np.array([1.0, 2.0, 3.0]))
    h = x * 1.0
    s = h ** 2
    s *= h
    pg.sum(s).backward()
    np.testing.assert_allclose(x.grad, 3 * np.array([1.0, 2.0, 3.0]) ** 2)


def test_first_linear_layer_keeps_only_its_input():
    """linear(x, W, b) with a constant x keeps x for W's gradient, not W (which no rule of a needed input reads)."""
    x = pg.asarray(np.ones((2, 3)))
    W = pg.Variable(np.ones((4, 3)))
    y = pg.functions.linear(x, W)
    node = y.creator
    assert node.saved[0] is x.data and node.saved[1] is None
    pg.sum(y).backward()
    np.testing.assert_allclose(W.grad, np.full((4, 3), 2.0))


def test_item_assignment_with_repeated_indices_refuses_the_values_gradient():
    """h[[0, 0]] = v keeps one of v's values at position 0 (the backend's choice), so v has no
    gradient there: backward raises. It used to give each of v's values the gradient of
    position 0 (v.grad [1, 1] where numpy kept v[1]: [0, 1] would have been right). x's
    gradient and the values' gradient without repeats are unchanged."""
    x = pg.Variable(np.array([1.0, 2.0, 3.0]))
    v = pg.Variable(np.array([10.0, 20.0]))
    h = x * 1.0
    h[np.array([0, 0])] = v
    with pytest.raises(ValueError, match=r"more than once \(repeated indices\)"):
        pg.sum(h * np.array([1.0, 2.0, 3.0])).backward()
    x.cleargrad()
    h = x * 1.0
    h[np.array([0, 2])] = v
    pg.sum(h * np.array([1.0, 2.0, 3.0])).backward()
    np.testing.assert_array_equal(v.grad, [1.0, 3.0])
    np.testing.assert_array_equal(x.grad, [0.0, 2.0, 0.0])
    x.cleargrad()
    h = x * 1.0
    h[np.array([0, 0])] = np.array([10.0, 20.0])  # values that need no gradient: fine
    pg.sum(h).backward()
    np.testing.assert_array_equal(x.grad, [0.0, 1.0, 1.0])


def test_an_index_variable_changed_before_backward_is_refused():
    """An index array given as a Variable is an input of the getitem node, kept for backward
    and checked like any other: a refilled index buffer is refused instead of moving W's
    gradient to the new rows (a raw index array is a parameter: docs/inplace.md)."""
    W = pg.Variable(np.arange(6.0).reshape(3, 2))
    ids = pg.Variable(np.array([0, 1]), requires_grad=False)
    loss = pg.sum(W[ids])
    ids[...] = pg.asarray(np.array([2, 2]))
    with pytest.raises(RuntimeError, match="getitem_at saved its input 1"):
        loss.backward()
    W.cleargrad()
    ids = pg.Variable(np.array([2, 2, 0]), requires_grad=False)
    pg.sum(W[ids]).backward()
    np.testing.assert_array_equal(W.grad, [[1.0, 1.0], [0.0, 0.0], [2.0, 2.0]])


def test_an_inplace_operation_with_a_volatile_operand_makes_the_variable_volatile():
    """`h += vol` left h a non-volatile constant (out of place, `h + vol` is volatile), so a loss built on it
    backpropagated as if h were a constant: x.grad [3, 5] for [5, 9]. As out of place, backward refuses."""
    x = pg.Variable(np.array([1.0, 2.0]))
    vol = pg.Variable(np.array([1.0, 1.0]), volatile=True)
    h = x * 2
    h += vol
    assert h.volatile and not h.requires_grad
    with pytest.raises(RuntimeError, match="nothing to differentiate"):
        pg.sum(h * x).backward()
    assert x.grad is None


def test_a_volatile_value_written_into_a_view_makes_the_base_and_its_views_volatile():
    """`h[0] = vol[0]` dropped the path of h[1] too (x.grad [1, 4] for [1, 8]), silently."""
    x = pg.Variable(np.array([1.0, 2.0]))
    vol = pg.Variable(np.array([1.0, 1.0]), volatile=True)
    h = x * 2
    v, w = h[0:1], h[1:2]
    h[0] = vol[0]
    assert h.volatile and v.volatile and w.volatile
    with pytest.raises(RuntimeError, match="nothing to differentiate"):
        pg.sum(h * x).backward()
    c = pg.Variable(np.array([1.0, 2.0]), requires_grad=False)
    r = c[0:1]  # a view made outside recording
    v = c[1:2]
    v += vol[0:1]
    assert c.volatile and r.volatile and v.volatile
    np.testing.assert_array_equal(c.data, [1.0, 3.0])


def test_a_write_into_a_view_of_a_leaf_is_refused_naming_the_view():
    """`v = x[:3, :3]; v *= 2` (sklearn's svd_flip on a slice) was reported as if the view were the leaf:
    "variable (shape (8, 3)) is a leaf ...". As PyTorch's, the message says a view of the leaf was written."""
    x = pg.Variable(np.arange(24.0).reshape(8, 3))
    v = x[:3, :3]
    with pytest.raises(RuntimeError, match=r"^polygrad: variable \(shape \(8, 3\)\) is a leaf that requires grad "
                                           r"and is used in an in-place operation \(\*=\) through a view of it "
                                           r"\(shape \(3, 3\)\); its gradient would be lost"):
        v *= 2.0
    with pytest.raises(RuntimeError, match=r"^polygrad: variable \(shape \(8, 3\)\) is a leaf that requires grad "
                                           r"and is used in an in-place operation \(\+=\); its gradient"):
        x += 1.0
    assert x.data[0].tolist() == [0.0, 1.0, 2.0] and x.version == 0


def test_an_inplace_change_of_dtype_or_shape_names_what_changes_and_the_operand_once():
    """"in-place += would change variable (shape (2,)) (shape (2,), dtype int32) to shape (2,), dtype int64"
    printed the shape twice and not the operand that promoted it (scipy's nsum: int32 += int64)."""
    v = pg.asarray(np.array([1, 2], dtype=np.int32))
    with pytest.raises(ValueError, match=r"^polygrad: in-place \+= of variable \(shape \(2,\)\) with an operand of "
                                         r"dtype int64 and shape \(2,\) would change its dtype from int32 to int64; "
                                         r"use the out-of-place form$"):
        v += pg.asarray(np.array([1, 2], dtype=np.int64))
    f = pg.Variable(np.array([1.0, 2.0]), requires_grad=False)
    with pytest.raises(ValueError, match=r"of variable \(shape \(2,\)\) with an operand of dtype float64 and shape "
                                         r"\(3, 2\) would change its shape from \(2,\) to \(3, 2\); use the out-of"):
        f += np.ones((3, 2))
    assert v.dtype == np.int32 and f.data.tolist() == [1.0, 2.0]


def test_an_inplace_write_whose_symbolic_shape_is_not_inferred_says_so():
    """Where the symbolic shape of the result could not be inferred, the message said the write "would
    change variable (shape (None, None)) ... to shape unknown, dtype None": say it was not inferred, and
    what to do. (The value's shape is not inferred: reshape(v, (2, -1)) fits only even sizes. A value of
    (None, 5) now gives the write a shape: h's second size must be 5.)"""
    from polygrad import symbolic as T

    h = T.tensor("float64", (None, None)) * 2.0
    with pytest.raises(ValueError, match=r"^polygrad: in-place x\[key\] = value of variable \(shape \(None, None\)\), "
                                         r"dtype float64: the shape of the result could not be inferred from the "
                                         r"symbolic shapes.*declare the sizes you know with T\.tensor\(dtype, shape\)"):
        h[::-1] = pg.reshape(T.vector("v"), (2, -1))
    h[::-1] = T.tensor("float64", (None, 5))
    assert h.shape == (None, 5)


@pytest.mark.parametrize("write", ["h += 1.0", "h[0] = 1.0"])
def test_an_inplace_write_into_a_symbolic_variable_of_uninferred_shape_says_so(write):
    """h = pg.reshape(x, (2, 2)) of x of (None,) has no inferred shape (only sizes 4 fit); an in-place write
    into it raised a bare "'NoneType' object is not iterable"."""
    from polygrad import symbolic as T

    h = pg.reshape(T.tensor("float64", (None,), "x"), (2, 2))
    with pytest.raises(ValueError, match=r"^polygrad: in-place .* of variable \(shape \?\): the shape of the variable "
                                         r"could not be inferred .*T\.tensor\(dtype, shape\)"):
        exec(write, {"h": h})

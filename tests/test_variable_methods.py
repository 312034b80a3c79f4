"""The tensor methods of Variables (PyTorch 0.x and Chainer spellings, polygrad/variable_methods.py):
each gives numpy's values, and the differentiable ones the right gradient; the in-place ones
move the version and keep the graph; the ambiguous and impossible calls are refused clearly."""

from __future__ import annotations

import numpy as np
import pytest

import polygrad as pg
from polygrad.testing import check_grads
from polygrad.variable_methods import METHODS

A = np.array([[0.5, -1.5, 2.0], [1.0, 0.25, -0.75]])
P = np.array([[0.5, 1.5, 2.0], [1.0, 0.25, 0.75]])  # positive, for log and sqrt
V = np.array([1.0, -2.0, 0.5])

# (method call on x, numpy of the same, input): values and gradients
DIFFERENTIABLE = {
    "sum()": (lambda x: x.sum(), lambda a: a.sum(), A),
    "sum(dim, keepdim)": (lambda x: x.sum(1, keepdim=True), lambda a: a.sum(1, keepdims=True), A),
    "sum([dims])": (lambda x: x.sum([0, 1]), lambda a: a.sum((0, 1)), A),
    "mean(dim)": (lambda x: x.mean(0), lambda a: a.mean(0), A),
    "prod(dim)": (lambda x: x.prod(1), lambda a: a.prod(1), A),
    "var()": (lambda x: x.var(), lambda a: a.var(ddof=1), A),
    "var(dim, unbiased=False)": (lambda x: x.var(1, unbiased=False), lambda a: a.var(1), A),
    "std(dim)": (lambda x: x.std(0), lambda a: a.std(0, ddof=1), A),
    "norm()": (lambda x: x.norm(), lambda a: np.linalg.norm(a.ravel()), A),
    "norm(1, dim)": (lambda x: x.norm(1, 1), lambda a: np.abs(a).sum(1), A),
    "max()": (lambda x: x.max(), lambda a: a.max(), A),
    "max(dim)[0]": (lambda x: x.max(1)[0], lambda a: a.max(1), A),
    "min(dim, keepdim)[0]": (lambda x: x.min(0, keepdim=True)[0], lambda a: a.min(0, keepdims=True), A),
    "exp": (lambda x: x.exp(), np.exp, A),
    "log": (lambda x: x.log(), np.log, P),
    "sin": (lambda x: x.sin(), np.sin, A),
    "cos": (lambda x: x.cos(), np.cos, A),
    "tan": (lambda x: x.tan(), np.tan, A),
    "tanh": (lambda x: x.tanh(), np.tanh, A),
    "sqrt": (lambda x: x.sqrt(), np.sqrt, P),
    "abs": (lambda x: x.abs(), np.abs, A),
    "neg": (lambda x: x.neg(), np.negative, A),
    "reciprocal": (lambda x: x.reciprocal(), np.reciprocal, P),
    "pow": (lambda x: x.pow(3.0), lambda a: a ** 3.0, A),
    "clamp": (lambda x: x.clamp(-1.2, 1.2), lambda a: np.clip(a, -1.2, 1.2), A),
    "clamp(min=)": (lambda x: x.clamp(min=0.0), lambda a: np.maximum(a, 0.0), A),
    "sigmoid": (lambda x: x.sigmoid(), lambda a: 1 / (1 + np.exp(-a)), A),
    "add": (lambda x: x.add(2.0), lambda a: a + 2.0, A),
    "sub": (lambda x: x.sub(x * x), lambda a: a - a * a, A),
    "mul": (lambda x: x.mul(3.0), lambda a: a * 3.0, A),
    "div": (lambda x: x.div(2.0), lambda a: a / 2.0, A),
    "dot": (lambda x: x.dot(x), lambda a: a @ a, V),
    "mm": (lambda x: x.mm(x.t()), lambda a: a @ a.T, A),
    "matmul": (lambda x: x.matmul(x.T), lambda a: a @ a.T, A),
    "view": (lambda x: x.view(3, 2), lambda a: a.reshape(3, 2), A),
    "view((sizes))": (lambda x: x.view((6,)), lambda a: a.reshape(6), A),
    "reshape(-1, 2)": (lambda x: x.reshape(-1, 2), lambda a: a.reshape(-1, 2), A),
    "view_as": (lambda x: x.view_as(pg.zeros((3, 2))), lambda a: a.reshape(3, 2), A),
    "unsqueeze": (lambda x: x.unsqueeze(1), lambda a: a[:, None], A),
    "squeeze()": (lambda x: x.unsqueeze(0).unsqueeze(2).squeeze(), lambda a: a, A),
    "squeeze(dim)": (lambda x: x.unsqueeze(0).squeeze(0), lambda a: a, A),
    "expand": (lambda x: x.unsqueeze(0).expand(4, -1), lambda a: np.broadcast_to(a, (4, 3)), V),
    "expand_as": (lambda x: x.expand_as(pg.zeros((2, 3))), lambda a: np.broadcast_to(a, (2, 3)), V),
    "t": (lambda x: x.t(), lambda a: a.T, A),
    "t() of a vector": (lambda x: x.t(), lambda a: a, V),
    "transpose()": (lambda x: x.transpose(), lambda a: a.T, A),
    "transpose(1, 0)": (lambda x: x.transpose(1, 0), lambda a: a.T, A),
    "swapaxes": (lambda x: x.swapaxes(0, 1), lambda a: a.swapaxes(0, 1), A),
    "permute": (lambda x: x.permute(1, 0), lambda a: a.transpose(1, 0), A),
    "repeat": (lambda x: x.repeat(2, 1), lambda a: np.tile(a, (2, 1)), A),
    "flatten": (lambda x: x.flatten(), lambda a: a.ravel(), A),
    "contiguous": (lambda x: x.contiguous(), lambda a: a, A),
    "clone": (lambda x: x.clone(), lambda a: a.copy(), A),
    "double": (lambda x: x.double(), lambda a: a.astype(np.float64), A),
}


@pytest.mark.parametrize("name", list(DIFFERENTIABLE))
def test_method_values_and_gradients(name):
    method, reference, data = DIFFERENTIABLE[name]
    x = pg.Variable(np.array(data))
    y = method(x)
    np.testing.assert_allclose(y.data, reference(np.array(data)), rtol=1e-12)
    check_grads(method, [np.array(data)])


@pytest.mark.parametrize("name, method, want", [
    ("argmax()", lambda x: x.argmax(), 2),
    ("argmax(dim)", lambda x: x.argmax(1), [2, 0]),
    ("argmin(dim, keepdim)", lambda x: x.argmin(0, keepdim=True), [[0, 0, 1]]),
    ("max(dim)[1]", lambda x: x.max(1)[1], [2, 0]),
    ("min(dim)[1]", lambda x: x.min(1)[1], [1, 2]),
    ("sign", lambda x: x.sign(), np.sign(A)),
    ("floor", lambda x: x.floor(), np.floor(A)),
    ("ceil", lambda x: x.ceil(), np.ceil(A)),
    ("round", lambda x: x.round(), np.round(A)),
], ids=lambda v: v if isinstance(v, str) else "")
def test_methods_without_a_useful_gradient(name, method, want):
    np.testing.assert_array_equal(method(pg.Variable(A.copy())).data, want)


def test_shapes_dtypes_and_python_values():
    x = pg.Variable(A.copy())
    assert x.dim() == 2 and x.numel() == 6 and x.nelement() == 6
    assert x.float().dtype == pg.float32 and x.long().dtype == pg.int64 and x.int().dtype == pg.int32
    assert x.float().requires_grad and not x.long().requires_grad  # integers carry no gradient
    assert x.tolist() == A.tolist() and pg.sum(x).item() == pytest.approx(A.sum())
    assert isinstance(pg.asarray([True]).item(), bool) and isinstance(pg.asarray([3]).item(), int)
    assert pg.asarray([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    assert isinstance(pg.asarray([1 + 2j]).item(), complex)
    with pytest.raises(ValueError, match=r"item\(\) needs one element; variable \(shape \(2, 3\)\) has 6"):
        x.item()
    np.testing.assert_array_equal(x.detach().numpy(), A)


@pytest.mark.parametrize("name, method, reference", [
    ("add_", lambda x: x.add_(1.0), lambda a: a + 1.0),
    ("sub_", lambda x: x.sub_(1.0), lambda a: a - 1.0),
    ("mul_", lambda x: x.mul_(2.0), lambda a: a * 2.0),
    ("div_", lambda x: x.div_(2.0), lambda a: a / 2.0),
    ("pow_", lambda x: x.pow_(2.0), lambda a: a ** 2.0),
    ("clamp_", lambda x: x.clamp_(-1.0, 1.0), lambda a: np.clip(a, -1.0, 1.0)),
    ("neg_", lambda x: x.neg_(), np.negative),
    ("exp_", lambda x: x.exp_(), np.exp),
    ("zero_", lambda x: x.zero_(), np.zeros_like),
    ("fill_", lambda x: x.fill_(7.0), lambda a: np.full_like(a, 7.0)),
], ids=lambda v: v if isinstance(v, str) else "")
def test_in_place_methods_keep_the_graph(name, method, reference):
    """x.op_() on a result holds the new value, moves the version, and backward goes through it."""
    leaf = pg.Variable(A.copy())
    h = leaf * 1.5
    version = h.version
    assert method(h) is h
    np.testing.assert_allclose(h.data, reference(A * 1.5))
    assert h.version == version + 1
    (g,) = pg.grad(pg.sum(h * h), [leaf], allow_unused=True)
    eps, w = 1e-6, np.zeros_like(A)
    for i in np.ndindex(A.shape):  # finite differences of sum(op(1.5 a) ** 2)
        d = np.zeros_like(A)
        d[i] = eps
        w[i] = (np.sum(reference((A + d) * 1.5) ** 2) - np.sum(reference((A - d) * 1.5) ** 2)) / (2 * eps)
    np.testing.assert_allclose(np.zeros_like(A) if g is None else g.data, w, rtol=1e-5, atol=1e-6)


def test_in_place_method_on_a_leaf_that_requires_grad_is_refused():
    x = pg.Variable(A.copy())
    with pytest.raises(RuntimeError, match=r"leaf that requires grad and is used in an in-place operation \(add_\)"):
        x.add_(1.0)
    np.testing.assert_array_equal(x.data, A)  # unchanged
    with pg.no_backprop_mode():
        x.add_(1.0)
    np.testing.assert_array_equal(x.data, A + 1.0)


def test_refusals_name_the_reason():
    x = pg.Variable(A.copy())
    with pytest.raises(ValueError, match=r"transpose\(0, 1\) is ambiguous"):
        x.transpose(0, 1)
    with pytest.raises(ValueError, match=r"t\(\) transposes a matrix or vector; .* has 3 dimensions"):
        x.unsqueeze(0).t()


def test_devices_move_data_and_gradient():
    x = pg.Variable(A.copy())
    x.grad = np.ones_like(A)
    assert x.to_cpu() is x and x.cpu() is x  # already on the cpu backend of highest priority
    if not pg.backends()["cupy"].usable:
        with pytest.raises(RuntimeError, match="no usable gpu backend is installed"):
            x.to_gpu()
        with pytest.raises(RuntimeError, match="no usable gpu backend is installed"):
            x.cuda()


def test_to_cpu_moves_a_variable_of_another_cpu_backend():
    """A Variable on a cpu backend other than the one of highest priority moves there, with its grad."""
    strict = [n for n, s in pg.backends().items() if s.usable and s.device == "cpu" and not s.lazy and n != "numpy"]
    if not strict:
        pytest.skip("no second eager cpu backend installed")
    x = pg.Variable(pg.asarray(A, backend=strict[0]))
    x.grad = pg.asarray(np.ones_like(A), backend=strict[0]).data
    target = max((pg.get_backend(n) for n in strict + ["numpy"]), key=lambda b: b.info.priority)
    y = x.cpu()
    assert y.backend is target and (y is x) == (x.backend is target)
    x.to_cpu()
    assert x.backend is target and type(x.grad) in target.array_types


def test_addgrad_accumulates_across_backends():
    a = pg.Variable(V.copy())
    b = pg.Variable(V.copy())
    a.addgrad(b)  # b has no gradient: nothing happens
    assert a.grad is None
    b.grad = np.ones(3)
    a.addgrad(b)
    a.addgrad(b)
    np.testing.assert_array_equal(a.grad, [2.0, 2.0, 2.0])


def test_every_method_is_tested_here():
    """A method added to the table without a test here fails this test."""
    import re
    from pathlib import Path

    text = Path(__file__).read_text()
    untested = [name for name in METHODS if not re.search(rf"\.{name}\(", text)]
    assert not untested, untested


# --- Found by an adversarial pass: methods that silently did something else ------------------


def test_transpose_with_negative_axes_is_seen_as_the_ambiguous_pair():
    m = pg.Variable(np.arange(6.0).reshape(2, 3))
    for axes in ((-2, -1), (0, -1)):  # both (0, 1) on a matrix: used to change nothing, silently
        with pytest.raises(ValueError, match=r"x\.transpose\(.*\) is ambiguous"):
            m.transpose(*axes)
    assert m.transpose(1, 0).shape == (3, 2) and m.transpose(-1, 0).shape == (3, 2)


def test_transpose_refuses_out_of_range_axes_instead_of_wrapping_them():
    """transpose(*axes) reduced each axis modulo ndim before any check: transpose(5, 3, 4) of 3 dimensions
    was transpose(2, 0, 1), and transpose(3, 2) of a matrix transposed it (numpy and pg.permute_dims raise)."""
    y = pg.Variable(np.arange(24.0).reshape(2, 3, 4))
    for axes, bad in [((5, 3, 4), 5), ((-4, 0, 1), -4)]:
        with pytest.raises(ValueError, match=rf"Variable\.transpose: axis {bad} is out of bounds for an array of 3 "
                                             rf"dimensions"):
            y.transpose(*axes)
    m = pg.Variable(np.arange(6.0).reshape(2, 3))
    with pytest.raises(ValueError, match=r"Variable\.transpose: axis 3 is out of bounds for an array of 2 dimensions"):
        m.transpose(3, 2)
    assert y.transpose(-1, 0, 1).shape == (4, 2, 3)


def test_transpose_none_reverses_and_the_ambiguity_is_only_for_a_matrix():
    """transpose(None) (Chainer 7: reverse the axes) raised a TypeError comparing None; on 3 dimensions
    transpose(0, 1) gave the matrix-only "ambiguous ... write x.T" message, where x.T reverses all three."""
    y = pg.Variable(np.arange(24.0).reshape(2, 3, 4))
    assert y.transpose(None).shape == y.transpose().shape == (4, 3, 2)
    with pytest.raises(ValueError, match=r"x\.transpose\(0, 1\) permutes all the axes .* has 3 dimensions: give 3 "
                                         r"axes, or none to reverse them; PyTorch's transpose\(dim0, dim1\), a swap, "
                                         r"is x\.swapaxes\(0, 1\)") as info:
        y.transpose(0, 1)
    assert "ambiguous" not in str(info.value)


def test_swapaxes_refuses_out_of_range_axes_clearly():
    """x.swapaxes(0, 5) raised a bare IndexError (list index out of range); the same axis twice is no swap."""
    y = pg.Variable(np.arange(24.0).reshape(2, 3, 4))
    with pytest.raises(ValueError, match=r"Variable\.swapaxes: axis 5 is out of bounds for an array of 3 dimensions"):
        y.swapaxes(0, 5)
    with pytest.raises(ValueError, match=r"Variable\.swapaxes: axis -4 is out of bounds"):
        y.swapaxes(-4, 0)
    with pytest.raises(ValueError, match=r"Variable\.swapaxes: variable \(shape \(\)\) has no axes to swap"):
        pg.Variable(np.array(1.0)).swapaxes(0, 0)
    assert y.swapaxes(1, 1).shape == (2, 3, 4) and y.swapaxes(-1, 0).shape == (4, 3, 2)


def test_iteration_and_reversed_go_along_the_first_axis():
    m = pg.Variable(np.arange(6.0).reshape(2, 3))
    assert [r.data.tolist() for r in m] == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert [r.data.tolist() for r in reversed(m)] == [[3.0, 4.0, 5.0], [0.0, 1.0, 2.0]]  # was []
    with pytest.raises(TypeError, match="no dimensions"):
        list(pg.Variable(np.array(3.0)))  # was [], silently
    assert len(m) == 6  # the number of elements, as the Chainer seed specifies


def test_dot_is_pytorchs():
    c = pg.Variable(np.array([1 + 1j, 2 - 1j]))
    assert complex(c.dot(c).data) == 3 - 2j  # no conjugation (vecdot's gave 7)
    with pytest.raises(ValueError, match="two vectors"):
        pg.Variable(np.ones((2, 2))).dot(pg.Variable(np.ones((2, 2))))


def test_expand_minus_one_in_a_new_leading_dimension_raises():
    v = pg.Variable(np.arange(3.0))
    with pytest.raises(ValueError, match="new leading"):
        v.expand(-1, 3)  # took v's length for the new dimension
    assert v.expand(2, -1).shape == (2, 3)


def test_a_shallow_copy_shares_the_version_counter():
    import copy

    a = pg.Variable(np.array([1.0, 2.0]))
    h = a * 2.0
    hc = copy.copy(h)
    e = h * h  # saves h
    hc.add_(1.0)  # writes the array h and e share
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        pg.sum(e).backward()  # gave [12, 20] for [8, 16], silently


def test_max_dim_sends_the_gradient_to_the_returned_index():
    """PyTorch's max(dim): the values are x at the indices, so ties do not split the gradient."""
    x = pg.Variable(np.array([[1.0, 3.0, 3.0], [5.0, 2.0, 5.0]]))
    values, idx = x.max(1)
    np.testing.assert_array_equal(values.data, [3.0, 5.0])
    np.testing.assert_array_equal(idx.data, [1, 0])
    pg.sum(values).backward()
    np.testing.assert_array_equal(x.grad, [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])  # was [0, .5, .5], [.5, 0, .5]
    x.cleargrad()
    values, idx = x.min(1, keepdim=True)
    assert values.shape == (2, 1) and idx.shape == (2, 1)
    pg.sum(values).backward()
    np.testing.assert_array_equal(x.grad, [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])


def test_addgrad_gives_a_gradient_of_its_own():
    a, b = pg.Variable(np.zeros(2)), pg.Variable(np.zeros(2))
    b.grad = np.array([1.0, 2.0])
    a.addgrad(b)
    assert a.grad is not b.grad and not np.shares_memory(a.grad, b.grad)  # was the same array
    np.testing.assert_array_equal(a.grad, [1.0, 2.0])


def test_numpys_reductions_of_a_variable_are_polygrads():
    """np.sum(x), np.mean(x, axis=0), np.var(x) ... call the method with numpy's keywords (axis,
    dtype, out, ddof, keepdims): they failed with '_sum() got an unexpected keyword argument
    axis' (scikit-learn's r_regression, KMeans, ... on Variables). numpy's meaning: np.var is
    biased (ddof=0), np.max(x, axis=0) the values alone; the graph is kept."""
    a = np.array([[1.0, 2.0], [3.0, 5.0]])
    x = pg.Variable(a)
    for fn in (np.sum, np.mean, np.var, np.std, np.prod, np.max, np.min):
        for kw in ({}, {"axis": 0}, {"axis": 1, "keepdims": True}):
            np.testing.assert_allclose(np.asarray(fn(x, **kw).data), fn(a, **kw), err_msg=f"{fn.__name__} {kw}")
    np.testing.assert_allclose(np.asarray(np.var(x, ddof=1).data), np.var(a, ddof=1))
    assert np.sum(x, dtype=np.float32).dtype == np.float32
    np.sum(x * x).backward()
    np.testing.assert_array_equal(x.grad, 2 * a)
    with pytest.raises(TypeError, match=r"sum\(out=...\) is not supported"):
        np.sum(x, out=np.zeros(()))
    values, indices = x.max(0)  # PyTorch's spelling keeps its (values, indices)
    np.testing.assert_array_equal(indices.data, [1, 1])


def test_numpys_reduction_keywords_the_methods_lack_are_refused_by_name():
    """np.sum(x, where=m), np.max(x, initial=v), np.var(x, mean=m) pass keywords the methods do not take:
    they raised Python's "_sum() got an unexpected keyword argument 'where'" (a private function, no
    way out); as out= is, they are refused naming the method and the keyword, with what to write."""
    a = np.array([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]])
    x, mask = pg.Variable(a), a > 0
    calls = [(lambda: np.sum(x, where=mask), r"sum\(where=\.\.\.\) is not supported; reduce pg\.where\(mask, x, n\)"),
             (lambda: np.mean(x, where=mask), r"mean\(where=\.\.\.\).* a masked mean is"),
             (lambda: np.prod(x, where=mask), r"prod\(where="), (lambda: np.std(x, where=mask), r"std\(where="),
             (lambda: np.sum(x, initial=5.0), r"sum\(initial=\.\.\.\) is not supported; combine the result"),
             (lambda: np.max(x, initial=10.0), r"max\(initial="), (lambda: np.min(x, axis=0, initial=0.0), r"min\(in"),
             (lambda: np.var(x, axis=1, mean=np.mean(a, axis=1, keepdims=True)), r"var\(mean=\.\.\.\).*leave mean="),
             (lambda: x.max(pg.Variable(a), where=mask), r"max\(where="),
             (lambda: x.sum(dims=0), r"sum\(dims=\.\.\.\) is not supported; see help\(Variable\.sum\)")]
    for call, message in calls:
        with pytest.raises(TypeError, match=r"^polygrad: Variable\." + message):
            call()
    assert float(np.sum(pg.where(mask, x, 0.0))) == np.sum(a, where=mask)  # what the message says to write


def test_axis_and_keepdims_are_pytorchs_aliases_outside_numpys_calls():
    """x.max(axis=1) is PyTorch's (values, indices) (it gave the values alone, which unpacked into
    rows silently); numpy's np.max passes out= and gets the values alone. A mean in an integer
    dtype is refused (numpy's truncates)."""
    x = pg.Variable(np.array([[1.0, 7.0], [9.0, 3.0]]))
    values, indices = x.max(axis=1)
    np.testing.assert_array_equal(values.data, [7.0, 9.0])
    np.testing.assert_array_equal(indices.data, [1, 0])
    np.testing.assert_array_equal(np.max(x, axis=0).data, [9.0, 7.0])
    with pytest.raises(TypeError, match="floating dtype"):
        np.mean(x, dtype=np.int64)


def test_max_over_all_or_several_axes_and_mean_dtype_spellings():
    """x.max(keepdims=True) gave a 0-d result (numpy: (1, 1)); x.max(axis=(0, 1)) failed in argmax;
    np.mean(x, dtype=float) and dtype='f8' raised numpy's 'must be a NumPy dtype' (the dtype was
    checked before it was resolved)."""
    x = pg.Variable(np.array([[1.0, 7.0], [9.0, 3.0]]))
    assert x.max(keepdims=True).shape == (1, 1)
    assert float(x.max(axis=(0, 1))) == 9.0
    np.testing.assert_array_equal(x.min(axis=(0,)).data, [1.0, 3.0])
    for dtype in (float, "float64", "f8"):
        assert float(np.mean(x, dtype=dtype)) == 5.0
    with pytest.raises(TypeError, match="floating dtype"):
        np.var(x, dtype=int)


# ---------------------------------------------------------------------------
# Found by a hunt: copies that were none, copies on another backend, writes into integers
# ---------------------------------------------------------------------------
def test_contiguous_of_a_view_is_a_copy_and_of_a_base_the_variable_itself():
    """x.t().contiguous() returned the view itself: zero_() on it zeroed x (PyTorch copies a
    tensor that is not contiguous); with a graph the base's gradient came out all zeros."""
    x = pg.Variable(np.arange(6.0).reshape(2, 3), requires_grad=False)
    x.t().contiguous().zero_()
    x[:, 1:].contiguous().fill_(-1.0)
    np.testing.assert_array_equal(x.data, np.arange(6.0).reshape(2, 3))
    assert x.contiguous() is x
    w = pg.Variable(np.arange(6.0).reshape(2, 3))
    h = w * 1.0
    h.t().contiguous().mul_(0.0)
    (h * h).sum().backward()
    np.testing.assert_array_equal(w.grad, 2 * np.arange(6.0).reshape(2, 3))


@pytest.mark.parametrize("name", ["dask", "array_api_strict"])
def test_clone_stays_on_the_variables_backend(name):
    """clone() copied onto the current backend: a dask Variable came back a numpy one (the whole
    graph computed), and one that requires grad was refused as 'crossing backends'."""
    x = pg.Variable(pg.asarray(np.arange(3.0), backend=name), requires_grad=False)
    assert x.clone().backend.name == name
    w = pg.Variable(pg.asarray(np.arange(3.0), backend=name))
    c = (w * 2).clone()
    assert c.backend.name == name and c.data is not (w * 2).data
    c.sum().backward()
    np.testing.assert_array_equal(np.from_dlpack(pg.to_backend(w.grad, "numpy")), [2.0, 2.0, 2.0])


def test_max_and_min_of_another_variable_are_element_wise():
    """x.max(y) (PyTorch's element-wise maximum) failed in argmax with y taken for an axis."""
    x, y = pg.Variable(np.array([1.0, 5.0, 3.0])), pg.Variable(np.array([2.0, 4.0, 3.5]))
    np.testing.assert_array_equal(x.max(y).data, [2.0, 5.0, 3.5])
    np.testing.assert_array_equal(x.min(np.array([0.0, 9.0, 3.0])).data, [0.0, 5.0, 3.0])
    x.max(y).sum().backward()
    np.testing.assert_array_equal(x.grad, [0.0, 1.0, 0.0])
    m = pg.Variable(np.array([[1.0, 5.0], [3.0, 2.0]]))
    for axis in (np.int64(1), np.intp(1)):  # a NumPy integer is an axis (is_array says it is an array)
        values, indices = m.max(axis)
        np.testing.assert_array_equal(values.data, [5.0, 3.0])
        np.testing.assert_array_equal(m.min(axis)[1].data, [0, 1])


def test_writing_a_variable_that_requires_grad_into_integers_is_refused_or_gives_no_gradient():
    """c[0:2] = w into an int64 c made c an integer Variable requiring grad: its gradient, truncated
    to integers, was added into w's (3 for 1 + int(2.5)); int() has zero derivative. A float value
    is now refused (the standard writes only values whose dtype promotes to x's); cast first, and
    the integers carry no gradient."""
    w = pg.Variable(np.array([1.5, 2.5]))
    c = pg.Variable(np.zeros(2, np.int64), requires_grad=False)
    with pytest.raises(TypeError, match=r"setitem.*float64.*int64"):
        c[0:2] = w
    c[0:2] = pg.astype(w, np.int64)
    assert c.dtype == np.int64 and not c.requires_grad
    np.testing.assert_array_equal(c.data, [1, 2])
    ((c * 2.5).sum() + (w * 1.0).sum()).backward()
    np.testing.assert_array_equal(w.grad, [1.0, 1.0])
    k = pg.Variable(np.zeros(3, np.int64), requires_grad=False)
    with pytest.raises(TypeError, match=r"setitem.*float64.*int64"):
        k[np.array([0, 2])] = w
    assert not k.requires_grad and k.version == 0


def test_clip_of_integers_by_a_floating_bound_is_refused(xp):
    """numpy's namespace cast the bound to x's dtype (clip([1, 5, 9], 1.7, 8) gave [1, 5, 8]),
    array_api_strict refused: the standard leaves mixing kinds unspecified."""
    x = pg.Variable(xp.asarray([1, 5, 9]), requires_grad=False)
    w = pg.Variable(xp.asarray(1.7, dtype=xp.float64))
    for call in (lambda: pg.clip(x, 1.7, 8), lambda: x.clamp(w, 8), lambda: pg.clip(x, max=2.5)):
        with pytest.raises(TypeError, match=r"clip: x is \S*int64 \(3,\) and the bound (min|max) is floating"):
            call()
    np.testing.assert_array_equal(np.from_dlpack(pg.clip(x, 2, 8).data), [2, 5, 8])


def test_to_cpu_of_a_variable_made_by_a_function_is_refused():
    """h.to_cpu() on a child of a dask leaf moved h in place: backward then gave the dask leaf a
    numpy .grad without a word (Chainer fails later, in the creator's backward)."""
    w = pg.Variable(pg.asarray(np.array([1.0, 2.0]), backend="dask"))
    h = w * 2.0
    with pytest.raises(RuntimeError, match=r"to_cpu\(\) of variable .*made by multiply on backend 'dask'"):
        h.to_cpu()
    assert h.backend.name == "dask"
    (h * h).sum().backward()
    assert w.grad is not None and pg.get_array_namespace(w.grad) is pg.get_backend("dask").xp
    w.to_cpu()  # a leaf moves, with its gradient
    assert w.backend.name == "numpy" and isinstance(w.grad, np.ndarray)


@pytest.mark.parametrize("backend_name", ["numpy", "dask", "array_api_strict"])
def test_only_a_0d_variable_converts_to_a_python_number(backend_name):
    """int(), float() and __index__ of a (1,) Variable gave a number on dask (numpy's and
    array_api_strict's arrays refuse, as the standard does), and __index__ of a boolean one 1."""
    def v(a):
        return pg.Variable(pg.asarray(np.asarray(a), backend=backend_name).data, requires_grad=False)

    for call, how in [(lambda: int(v([3])), "int"), (lambda: float(v([3.0])), "float"),
                      (lambda: v([2]).__index__(), "index")]:
        with pytest.raises(TypeError, match=rf"{how}\(\) of variable \(shape \(1,\)\): only a 0-d variable"):
            call()
    with pytest.raises(TypeError, match="is not an index"):
        v(True).__index__()
    assert (int(v(3)), float(v(2.5)), v(2).__index__(), [10, 11, 12][v(1)]) == (3, 2.5, 2, 11)

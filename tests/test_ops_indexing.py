"""Indexing and its gradients, on numpy and array_api_strict: repeated indices
add up, masks route gradients, in-place writes on intermediates, keys the
standard does not specify (numpy), and the standard-only scatter-add fallback
that backends without a ``polygrad_scatter_add`` hook use (array_api_strict
here always does; a numpy copy without the hook shows it on NumPy's keys).
"""

from __future__ import annotations

import numpy as np
import pytest

import polygrad as pg
from polygrad import ops as P
from polygrad.backends import BackendInfo
from polygrad.hookspecs import hookimpl
from polygrad.testing import check_grads

from conftest import arr, assert_close, ints

# ---------------------------------------------------------------------------
# Repeated indices add up
# ---------------------------------------------------------------------------


def test_getitem_repeated_indices_sum_gradients(xp):
    """x[[0, 2, 0, 0]]: the gradient of x[0] is the sum of the three picks."""
    x = pg.Variable(arr(xp, [1.0, 2.0, 3.0]))
    y = x[ints(xp, [0, 2, 0, 0])]
    y.backward(arr(xp, [1.0, 10.0, 100.0, 1000.0]))
    assert_close(x.grad, np.array([1101.0, 0.0, 10.0]))


def test_getitem_repeated_pairs_all_axes_sum_gradients(xp):
    """x[i, j] with a repeated (i, j) pair adds both gradients into that element."""
    x = pg.Variable(xp.zeros((2, 3), dtype=xp.float64))
    y = x[ints(xp, [0, 1, 0]), ints(xp, [2, 0, 2])]
    y.backward(arr(xp, [1.0, 2.0, 4.0]))
    assert_close(x.grad, np.array([[0.0, 0.0, 5.0], [2.0, 0.0, 0.0]]))


def test_take_repeated_indices_sum_gradients(xp):
    """take with a repeated index adds the gradients of the repeats."""
    x = pg.Variable(arr(xp, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
    P.take(x, ints(xp, [2, 2, 0]), axis=1).backward(arr(xp, [[1.0, 10.0, 100.0], [1.0, 1.0, 1.0]]))
    assert_close(x.grad, np.array([[100.0, 0.0, 11.0], [1.0, 0.0, 2.0]]))


def test_bool_mask_getitem_gradient(xp):
    """x[mask]: the selected elements get their gradient, the others 0."""
    x = pg.Variable(arr(xp, [[1.0, -2.0], [-3.0, 4.0]]))
    x[x.data > 0.0].backward(arr(xp, [10.0, 20.0]))
    assert_close(x.grad, np.array([[10.0, 0.0], [0.0, 20.0]]))


def test_double_backward_through_getitem_and_matmul(xp):
    """create_graph through getitem and matmul gives the right second derivative."""
    x = pg.Variable(arr(xp, [1.0, 2.0, 3.0]))
    y = pg.sum(x[ints(xp, [0, 0, 2])] ** 3) + x @ x
    (g,) = pg.grad(y, x, create_graph=True)
    assert_close(g, np.array([6.0 + 2.0, 4.0, 27.0 + 6.0]))
    (h,) = pg.grad(pg.sum(g), x)
    assert_close(h, np.array([2 * 6.0 * 1.0 + 2.0, 2.0, 6.0 * 3.0 + 2.0]))


def test_inplace_setitem_on_intermediate_backpropagates(xp):
    """``y[0, :] = v`` on an intermediate: y's overwritten entries get no gradient, v gets theirs."""
    x = pg.Variable(arr(xp, [[1.0, 2.0], [3.0, 4.0]]))
    v = pg.Variable(arr(xp, [5.0, 6.0]))
    y = x * 1.0
    y[0, :] = v
    pg.sum(y * arr(xp, [[1.0, 2.0], [3.0, 4.0]])).backward()
    assert_close(y, np.array([[5.0, 6.0], [3.0, 4.0]]))
    assert_close(x.grad, np.array([[0.0, 0.0], [3.0, 4.0]]))
    assert_close(v.grad, np.array([1.0, 2.0]))


def test_setitem_with_an_index_array_into_a_complex_array_backpropagates(xp):
    """h[idx, 1] = v into a complex h: the repeated-position check counted the writes in h's dtype
    and compared the counts with > 1, which the standard refuses for complex (array_api_strict)."""
    xn = np.arange(8.0).reshape(2, 4) * (1 + 1j)
    vn = np.array([1 + 2j, 3 - 1j])
    x = pg.Variable(arr(xp, xn, "complex128"))
    v = pg.Variable(arr(xp, vn, "complex128"))
    h = x * 1
    h[ints(xp, [1, 0]), 1] = v
    pg.sum(pg.real(h * pg.conj(h))).backward()
    expected = 2 * xn
    expected[:, 1] = 0
    assert_close(x.grad, expected)
    assert_close(v.grad, 2 * vn)


def test_setitem_refuses_a_value_of_more_axes_than_the_part_it_writes(xp):
    """h[1:3] = v with v of shape (1, 1, 4): numpy dropped v's leading axes and took it, and v's
    gradient then failed in backward (cannot reshape); the standard broadcasts v to h[1:3]'s shape."""
    x = pg.Variable(arr(xp, np.arange(20.0).reshape(5, 4)))
    v = pg.Variable(arr(xp, np.full((1, 1, 4), 2.0)))
    h = x * 1
    with pytest.raises(ValueError, match=r"shape \(1, 1, 4\) does not broadcast to x\[key\]'s shape \(2, 4\)"):
        h[1:3, ...] = v
    h[1:3, ...] = pg.reshape(v, (1, 4))
    pg.sum(h * h).backward()
    assert_close(v.grad, np.full((1, 1, 4), 8.0))  # 2 * h summed over the two rows written


@pytest.mark.parametrize("backend_name", ["numpy", "dask", "array_api_strict"])
def test_setitem_refuses_a_value_whose_dtype_does_not_promote_to_xs(backend_name):
    """x[key] = value cast the value silently on numpy and dask (array_api_strict refuses, as
    the standard does): 2.7 into int8 wrote 2, an int16 300 wrote 44, a float64 1e40 into
    float32 wrote inf, a complex128 array into float64 dropped the imaginary part."""
    def v(a, dtype):
        return pg.asarray(np.asarray(a, dtype), backend=backend_name)

    refused = [("int8", 2.7), ("bool", 0.5), ("bool", 5), ("int8", v(300, np.int16)), ("int8", v(200, np.uint8)),
               ("uint8", v(-1, np.int8)), ("int32", v(1.5, np.float32)), ("float32", v(1e40, np.float64)),
               ("float64", v(1 + 2j, np.complex128))]
    for dtype, value in refused:
        w = pg.Variable(v([1, 0], dtype)) * 1 if dtype != "bool" else pg.Variable(v([True, False], dtype))
        with pytest.raises(TypeError, match=rf"setitem.*dtype \S*{dtype} and shape \(2,\)"):
            w[0] = value
    # what promotes to x's dtype is written
    w = pg.Variable(v([1, 2], np.int16)) * 1
    w[0] = v(-100, np.int8)
    w[1] = v(200, np.uint8)
    w = pg.Variable(v([1.0, 2.0], np.float64)) * 1
    w[0] = v(3.0, np.float32)
    w[1] = 4
    assert np.asarray(pg.to_backend(w.data, "numpy")).tolist() == [3.0, 4.0]


def test_setitem_refuses_a_numpy_scalar_value_whose_dtype_does_not_promote_to_xs():
    """A NumPy scalar (the 0-d result of a reduction or of an integer index; np.float64 is a
    float, np.complex128 a complex) is an array, not a weak Python number: a complex128 sum lost
    its imaginary part into float32, a float64 1e40 wrote inf, an int64 value was cast into int8."""
    z = pg.Variable(np.array([1 + 2j, 3 + 4j]))
    refused = [("float32", pg.sum(z)), ("float32", pg.sum(pg.Variable(np.array([1e40])))),
               ("float16", pg.sum(pg.Variable(np.array([7e4], np.float32)))), ("int8", pg.asarray(np.array([3, 4]))[0]),
               ("float32", np.complex128(1 + 2j)), ("float32", np.float64(0.5)), ("int8", np.int64(3))]
    for dtype, value in refused:
        assert type(getattr(value, "data", value)) is not np.ndarray  # (a NumPy scalar, not a 0-d array)
        w = pg.Variable(np.array([1, 2], dtype)) * 1
        with pytest.raises(TypeError, match=rf"setitem.*dtype {dtype} and shape \(2,\)"):
            w[0] = value
        assert w.data.tolist() == [1, 2]
    w = pg.Variable(np.array([1.0, 2.0], np.float64)) * 1
    w[0] = pg.sum(pg.Variable(np.array([3.0], np.float32)))  # what promotes is written
    w[1] = 4.0
    assert w.data.tolist() == [3.0, 4.0]


# ---------------------------------------------------------------------------
# NumPy's keys (not in the standard)
# ---------------------------------------------------------------------------


def test_getitem_row_gather_repeated_numpy():
    """On numpy, x[idx] on a matrix (rows gathered, as an embedding) sums the gradient of repeated rows."""
    with pg.using_backend("numpy") as b:
        x = pg.Variable(b.xp.reshape(b.xp.arange(6, dtype=b.xp.float64), (3, 2)))
        y = x[np.array([2, 0, 2])]
        y.backward(np.ones((3, 2)))
        assert_close(x.grad, np.array([[1.0, 1.0], [0.0, 0.0], [2.0, 2.0]]))
        check_grads(lambda v: v[np.array([2, 0, 2])] * v[np.array([1, 1, 0])], [x.data], order=2)


def test_getitem_with_mixed_array_and_slice_numpy():
    """On numpy, x[idx, 1:] (integer array plus slice) has the right gradient."""
    with pg.using_backend("numpy"):
        data = np.random.default_rng(0).standard_normal((3, 4))
        check_grads(lambda v: v[np.array([0, 0, 2]), 1:], [data], order=2)


def test_mixed_advanced_and_basic_keys_numpy():
    """On numpy, keys mixing arrays, masks, slices, None and ... have the right gradient."""
    r = np.random.default_rng(0)
    data = r.standard_normal((3, 4, 5))
    mask = np.array([True, False, True, True])
    keys = [(np.array([0, 2, 0]), slice(1, None)), (slice(None), mask), (None, 1, mask, ...), (..., np.array([[4, 0], [0, 0]]))]
    with pg.using_backend("numpy"):
        for key in keys:
            assert_close(pg.Variable(data)[key], data[key])
            check_grads(lambda v: v[key], [data], order=2)


def test_take_without_axis_flattens_numpy():
    """On numpy, take(x, i) without axis on a matrix picks from the flattened x; repeats add in the gradient."""
    with pg.using_backend("numpy"):
        x = pg.Variable(np.arange(6.0).reshape(2, 3))
        y = P.take(x, np.array([4, 0, 4]))
        assert_close(y, np.array([4.0, 0.0, 4.0]))
        y.backward(np.array([1.0, 10.0, 100.0]))
        assert_close(x.grad, np.array([[10.0, 0.0, 0.0], [0.0, 101.0, 0.0]]))


def test_setitem_with_int_array_numpy():
    """On numpy (the standard has no integer-array __setitem__), setitem at x[[0, 3]] is differentiable in x and v."""
    with pg.using_backend("numpy"):
        r = np.random.default_rng(1)
        x, v = r.standard_normal(5), r.standard_normal(2)
        y = pg.ops.setitem(pg.Variable(x), np.array([0, 3]), pg.Variable(v))
        want = x.copy()
        want[[0, 3]] = v
        assert_close(y, want)
        check_grads(lambda a, b: pg.ops.setitem(a, np.array([0, 3]), b), [x, v], order=2)


# ---------------------------------------------------------------------------
# The standard-only scatter-add, on NumPy's keys
# ---------------------------------------------------------------------------


class NumpyWithoutScatterAdd:
    """The numpy backend without a polygrad_scatter_add hook. Registered by hand, it owns numpy's
    arrays (the last plugin registered wins them), so their gradients take the standard-only fallback."""

    name = "numpy_without_scatter_add"

    @hookimpl
    def polygrad_backend_info(self):
        return BackendInfo(name=self.name, module="numpy", device="cpu", priority=-100)

    @hookimpl
    def polygrad_array_namespace(self, backend):
        return pg.get_backend("numpy").xp if backend == self.name else None

    @hookimpl
    def polygrad_array_types(self, backend):
        return pg.get_backend("numpy").array_types if backend == self.name else None


@pytest.fixture
def without_scatter_add():
    """numpy's arrays owned by a backend with no scatter-add hook, for the test's duration (a claim on
    numpy's arrays registered by hand on purpose: polygrad warns about the overlap, and that is expected)."""
    plugin = NumpyWithoutScatterAdd()
    pg.register_plugin(plugin, name=plugin.name)
    try:
        yield pg.get_backend(plugin.name)
    finally:
        pg.unregister_plugin(plugin)


@pytest.mark.filterwarnings("ignore:.*claimed by backend 'numpy_without_scatter_add':polygrad.hookspecs.PluginWarning")
def test_getitem_grad_without_a_scatter_hook_handles_mixed_keys(without_scatter_add):
    """With only the standard's scatter-add, a key it cannot take goes through flat positions."""
    g = np.arange(6.0).reshape(3, 2)
    key = (np.array([0, 2, 0]), slice(1, None))
    want = np.zeros((3, 3))
    np.add.at(want, key, g)
    got = P.getitem_grad(g, key, (3, 3))
    assert got.backend is without_scatter_add
    assert_close(got, want)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_writing_negative_zero_keeps_its_sign_where_arrays_are_not_written_in_place(dtype):
    """On dask a basic-key write added the values into zeros: 0.0 + -0.0 is +0.0, so x[1] = -0.0
    stored +0.0 (1 / x then gave +inf for -inf; numpy, array_api_strict and dask keep -0.0)."""
    nz = complex(-0.0, -0.0) if dtype is np.complex128 else -0.0
    x = pg.Variable(pg.asarray(np.arange(4.0).astype(dtype), backend="dask").data, requires_grad=False)
    x[1] = nz
    x[2:] = pg.asarray(np.array([nz, 5.0], dtype), backend="dask")
    got = np.asarray(pg.to_backend(x, "numpy").data)
    np.testing.assert_array_equal(got, np.array([0, 0, 0, 5], dtype))
    parts = [got.real, got.imag] if dtype is np.complex128 else [got]
    for part, signs in zip(parts, [[False, True, True, False], [False, True, True, False]]):
        assert np.signbit(part).tolist() == signs
    m = pg.Variable(pg.asarray(np.ones((2, 2), dtype), backend="dask").data, requires_grad=False)
    m[:, 0] = nz
    assert np.signbit(np.asarray(pg.to_backend(m, "numpy").data).real).tolist() == [[True, False], [True, False]]

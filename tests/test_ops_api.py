"""The op functions as an API, on numpy and array_api_strict: signatures as the
standard's (array_api_strict's), the Variable namespace serving polygrad's
functions, which rows are declared without gradient, creation on the right
backend, asarray / from_dlpack, operands that are raw arrays or Python scalars,
and error messages. The linalg and fft extensions' API lives in
test_ops_linalg.py and test_ops_fft.py.
"""

from __future__ import annotations

import array_api_strict
import numpy as np
import pytest

import polygrad as pg
from polygrad import ops as P
from polygrad.array_api import FUNCTIONS
from polygrad.ops import REGISTRY, creation, elementwise, indexing, manipulation, searching, sets, sorting, statistical, utility

from conftest import arr, assert_close, plain_signature

#: The standard's element-wise functions (2024.12 / 2025.12).
ELEMENTWISE = (
    "abs", "acos", "acosh", "add", "asin", "asinh", "atan", "atan2", "atanh", "bitwise_and", "bitwise_invert",
    "bitwise_left_shift", "bitwise_or", "bitwise_right_shift", "bitwise_xor", "ceil", "clip", "conj", "copysign",
    "cos", "cosh", "divide", "equal", "exp", "expm1", "floor", "floor_divide", "greater", "greater_equal", "hypot",
    "imag", "isfinite", "isinf", "isnan", "less", "less_equal", "log", "log10", "log1p", "log2", "logaddexp",
    "logical_and", "logical_not", "logical_or", "logical_xor", "maximum", "minimum", "multiply", "negative",
    "nextafter", "not_equal", "positive", "pow", "real", "reciprocal", "remainder", "round", "sign", "signbit", "sin",
    "sinh", "sqrt", "square", "subtract", "tan", "tanh", "trunc",
)
CHAPTERS = (creation, manipulation, searching, sets, sorting, statistical, utility, indexing)
OTHER_CHAPTERS = sorted(n for m in CHAPTERS for n in m.__all__ if n in FUNCTIONS)

# ---------------------------------------------------------------------------
# Signatures and the Variable namespace
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ELEMENTWISE + ("where", "zeros_like", "ones_like", "astype"))
def test_elementwise_signature_matches_array_api_strict(name):
    """Parameter names, kinds and defaults equal array_api_strict's (annotations aside)."""
    assert plain_signature(getattr(elementwise, name)) == plain_signature(getattr(array_api_strict, name))


@pytest.mark.parametrize("name", OTHER_CHAPTERS)
def test_namespace_signature_matches_array_api_strict(name):
    """Each function of the other chapters, as the Variable namespace serves it, has array_api_strict's signature."""
    ns = pg.Variable(np.zeros(1)).__array_namespace__()
    assert plain_signature(getattr(ns, name)) == plain_signature(getattr(array_api_strict, name))


def test_chapters_cover_their_part_of_the_standard():
    """Every function of these chapters in the standard is defined here (broadcast_shapes
    and where live elsewhere; zeros_like/ones_like are element-wise rows)."""
    wanted = {
        "arange", "asarray", "empty", "empty_like", "eye", "from_dlpack", "full", "full_like", "linspace", "meshgrid", "ones",
        "tril", "triu", "zeros", "broadcast_arrays", "broadcast_to", "concat", "expand_dims", "flip", "moveaxis", "permute_dims",
        "repeat", "reshape", "roll", "squeeze", "stack", "tile", "unstack", "argmax", "argmin", "count_nonzero", "nonzero",
        "searchsorted", "isin", "unique_all", "unique_counts", "unique_inverse", "unique_values", "argsort", "sort",
        "cumulative_prod", "cumulative_sum", "max", "mean", "min", "prod", "std", "sum", "var", "all", "any", "diff", "take",
        "take_along_axis",
    }
    assert wanted - set(OTHER_CHAPTERS) == set()


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_namespace_uses_polygrad_elementwise_function(xp, name):
    """x.__array_namespace__().<name> is polygrad's own function (a row of the table), not a fallback."""
    ns = pg.Variable(arr(xp, [1.0])).__array_namespace__()
    assert getattr(ns, name) is getattr(elementwise, name)
    assert name in REGISTRY


@pytest.mark.parametrize("name", OTHER_CHAPTERS)
def test_namespace_uses_the_op_table(backend_name, name):
    """The Variable namespace's function is polygrad's (wrapped only to create on its backend)."""
    with pg.using_backend(backend_name) as b:
        ns = pg.Variable(b.xp.zeros(1)).__array_namespace__()
    fn = getattr(ns, name)
    assert getattr(fn, "__wrapped__", fn) is getattr(P, name)


def test_composed_functions_have_no_row():
    """broadcast_arrays, meshgrid, moveaxis and diff are built from rows and declare none of their own."""
    assert {"broadcast_arrays", "meshgrid", "moveaxis", "diff"} & set(REGISTRY) == set()


WITHOUT_GRADIENT = sorted({
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "sign", "zeros_like", "ones_like",
    "floor", "ceil", "trunc", "round", "floor_divide", "isfinite", "isinf", "isnan", "signbit",
    "logical_and", "logical_or", "logical_xor", "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor",
    "bitwise_invert", "bitwise_left_shift", "bitwise_right_shift",
    "argmax", "argmin", "count_nonzero", "nonzero", "searchsorted", "isin", "argsort", "all", "any",
    "arange", "empty", "empty_like", "eye", "from_dlpack", "full", "full_like", "linspace", "ones", "zeros",
})


@pytest.mark.parametrize("name", WITHOUT_GRADIENT)
def test_function_without_gradient_is_declared_so(name):
    """Comparisons, rounding, logic, bits, index-valued results and creation are rows declared without a gradient."""
    assert REGISTRY[name].differentiable is False


@pytest.mark.parametrize("backend_name", [
    "numpy",
    pytest.param("array_api_strict", marks=pytest.mark.xfail(strict=True, reason="array_api_strict 2.6.1's isin ignores invert=")),
])
def test_isin_invert_is_the_complement(xp, backend_name):
    """isin(x1, x2, invert=True) is the complement of isin(x1, x2), without gradient."""
    x1, x2 = xp.asarray([[1, 2, 3], [3, 0, 1]]), xp.asarray([0, 3])
    got = P.isin(pg.Variable(x1), x2, invert=True)
    assert got.requires_grad is False
    assert_close(got, np.array([[True, True, False], [False, False, True]]))


def test_integer_and_bool_operators_on_variables(xp):
    """&, |, ^, ~, <<, >> on Variables call the standard's bitwise functions."""
    values, bools = [[5, -3, 12], [7, 0, -8]], [[True, False, True], [False, False, True]]
    a, b = arr(xp, values, "int64"), arr(xp, [1, 2, 3], "int64")
    x, y = pg.Variable(a), pg.Variable(b)
    for got, want in [(x & y, xp.bitwise_and(a, b)), (x | y, xp.bitwise_or(a, b)), (x ^ y, xp.bitwise_xor(a, b)),
                      (~x, xp.bitwise_invert(a)), (x << y, xp.bitwise_left_shift(a, b)),
                      (x >> y, xp.bitwise_right_shift(a, b))]:
        assert_close(got, want)
    m = pg.Variable(arr(xp, bools, "bool"))
    assert_close(~m, xp.logical_not(arr(xp, bools, "bool")))


# ---------------------------------------------------------------------------
# Creation: on the current backend, or the namespace's own
# ---------------------------------------------------------------------------

CREATE = {
    "arange": (lambda m, xp: m.arange(1.0, 3.0, 0.5, dtype=xp.float64), lambda xp: xp.arange(1.0, 3.0, 0.5, dtype=xp.float64)),
    "arange_stop": (lambda m, xp: m.arange(4), lambda xp: xp.arange(4)),
    "zeros": (lambda m, xp: m.zeros((2, 3)), lambda xp: xp.zeros((2, 3))),
    "ones": (lambda m, xp: m.ones(3, dtype=xp.int32), lambda xp: xp.ones(3, dtype=xp.int32)),
    "full": (lambda m, xp: m.full((2,), 7.5, dtype=xp.float32), lambda xp: xp.full((2,), 7.5, dtype=xp.float32)),
    "eye": (lambda m, xp: m.eye(3, 4, k=1), lambda xp: xp.eye(3, 4, k=1)),
    "linspace": (lambda m, xp: m.linspace(0.0, 1.0, 5, endpoint=False), lambda xp: xp.linspace(0.0, 1.0, 5, endpoint=False)),
    "asarray": (lambda m, xp: m.asarray([[1, 2], [3, 4]], dtype=xp.float32), lambda xp: xp.asarray([[1, 2], [3, 4]], dtype=xp.float32)),
}


@pytest.mark.parametrize("name", sorted(CREATE))
def test_namespace_creates_on_its_own_backend(name):
    """A backend's namespace creates on that backend even while another one is current."""
    ns = pg.Variable(array_api_strict.zeros(1)).__array_namespace__()
    fn, ref = CREATE[name]
    with pg.using_backend("numpy"):
        out = fn(ns, array_api_strict)
    assert out.backend.name == "array_api_strict"
    assert_close(out, ref(array_api_strict))


def test_asarray_of_a_variable_is_the_variable(xp):
    """asarray(v) returns v itself; copy=True gives a new array whose gradient reaches v."""
    v = pg.Variable(arr(xp, [1.0, 2.0]))
    assert P.asarray(v) is v
    assert P.asarray(v, dtype=xp.float64, copy=False) is v
    c = P.asarray(v, copy=True)
    assert c is not v and c.data is not v.data
    pg.sum(c * arr(xp, [3.0, 4.0])).backward()
    assert_close(v.grad, np.array([3.0, 4.0]))


def test_asarray_copy_false_with_a_new_dtype_raises(xp):
    """asarray(v, dtype=other, copy=False) cannot avoid a copy: ValueError."""
    with pytest.raises(ValueError, match="copy=False"):
        P.asarray(pg.Variable(arr(xp, [1.0])), dtype=xp.float32, copy=False)


def test_asarray_moves_a_foreign_array_to_the_current_backend():
    """asarray of a numpy array while array_api_strict is current gives a strict Variable."""
    with pg.using_backend("array_api_strict"):
        out = P.asarray(np.array([1.0, 2.0]))
    assert out.backend.name == "array_api_strict"
    assert_close(out, np.array([1.0, 2.0]))


def test_asarray_refuses_to_move_a_variable_needing_grad_across_backends():
    """A Variable that requires grad is not silently detached onto another backend."""
    v = pg.Variable(np.array([1.0]))
    with pg.using_backend("array_api_strict"), pytest.raises(TypeError, match="no gradient crosses backends"):
        P.asarray(v)


def test_asarray_moves_a_variable_without_grad_to_the_current_backend():
    """A numpy Variable that does not require grad moves onto the current backend (array_api_strict)."""
    with pg.using_backend("array_api_strict"):
        out = P.asarray(pg.Variable(np.array([1.0, 2.0]), requires_grad=False))
    assert out.backend.name == "array_api_strict"
    assert_close(out, np.array([1.0, 2.0]))


def test_from_dlpack_of_a_numpy_array_on_strict():
    """from_dlpack takes another library's array onto the current backend, without grad."""
    with pg.using_backend("array_api_strict"):
        out = P.from_dlpack(np.arange(3.0))
    assert out.backend.name == "array_api_strict" and out.requires_grad is False
    assert_close(out, np.arange(3.0))


def test_from_dlpack_of_a_variable_keeps_its_graph(xp):
    """from_dlpack of a Variable of the current backend is the Variable (gradient flows)."""
    v = pg.Variable(arr(xp, [1.0, 2.0]))
    assert P.from_dlpack(v) is v


# ---------------------------------------------------------------------------
# Raw arrays and Python scalars as operands
# ---------------------------------------------------------------------------


def test_op_on_raw_array_returns_variable_without_grad(xp):
    """pg.exp on a raw backend array gives a Variable (requires_grad False) with exp's value."""
    a = arr(xp, [0.0, 1.0])
    y = pg.exp(a)
    assert isinstance(y, pg.Variable)
    assert y.requires_grad is False
    assert_close(y, xp.exp(a))


def test_ops_on_python_scalars_only_use_current_backend(xp, backend_name):
    """pg.add(1.0, 2.0) and pg.exp(0.0) give 0-d Variables of the current backend."""
    y = pg.add(1.0, 2.0)
    assert isinstance(y, pg.Variable)
    assert y.shape == ()
    assert y.backend.name == backend_name
    assert_close(y, xp.asarray(3.0))
    assert_close(pg.exp(0.0), xp.asarray(1.0))


def test_raw_array_on_right_of_variable(xp):
    """Variable * raw array records a graph for the Variable."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    pg.sum(x * arr(xp, [3.0, 4.0])).backward()
    assert_close(x.grad, np.array([3.0, 4.0]))


def test_numpy_array_on_left_of_variable_defers_to_variable():
    """On numpy, ndarray * Variable and ndarray @ Variable give Variables with graphs."""
    with pg.using_backend("numpy"):
        x = pg.Variable(np.array([1.0, 2.0]))
        y = np.array([3.0, 4.0]) * x
        z = np.eye(2) @ x
        assert isinstance(y, pg.Variable) and isinstance(z, pg.Variable)
        pg.sum(y + z).backward()
        assert_close(x.grad, np.array([4.0, 5.0]))


def test_scalar_operand_records_gradient_only_for_variable(xp):
    """In 3.0 * x, x gets 3, and no other leaf gets a gradient."""
    x = pg.Variable(arr(xp, 2.0))
    y = 3.0 * x - x / 2.0
    y.backward()
    assert_close(x.grad, xp.asarray(2.5, dtype=xp.float64))


# ---------------------------------------------------------------------------
# Error messages name the op and the offending thing
# ---------------------------------------------------------------------------


def test_mixed_backends_refused_with_both_names():
    """An op on numpy and array_api_strict arrays raises TypeError naming both backends."""
    x = pg.Variable(np.array([1.0]))
    with pytest.raises(TypeError, match="numpy.*array_api_strict|array_api_strict.*numpy"):
        x + array_api_strict.asarray([1.0], dtype=array_api_strict.float64)


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


BAD_ARGUMENTS = {
    "meshgrid: indexing must be 'xy' or 'ij'": lambda xp: P.meshgrid(xp.zeros(2), indexing="zz"),
    r"broadcast_arrays: shapes \(2,\), \(3,\) do not broadcast": lambda xp: P.broadcast_arrays(xp.zeros(2), xp.zeros(3)),
    "moveaxis: source .* and destination .* differ in length": lambda xp: P.moveaxis(xp.zeros((2, 3)), (0, 1), 0),
}


@pytest.mark.parametrize("message", list(BAD_ARGUMENTS))
def test_composed_functions_name_themselves_in_errors(xp, message):
    """meshgrid, broadcast_arrays and moveaxis refuse bad arguments with ValueError naming the function."""
    with pytest.raises(ValueError, match=message):
        BAD_ARGUMENTS[message](xp)


# --- Found by a differential pass against array_api_strict -----------------------------------


def test_diff_refuses_an_axis_out_of_range_and_a_negative_n(xp):
    x = pg.Variable(arr(xp, [[1.0, 2.0, 4.0], [10.0, 20.0, 40.0]]))
    for axis in (2, -3):  # wrapped around: differences along another axis, silently
        with pytest.raises(ValueError, match=f"diff: axis {axis} is out of bounds"):
            pg.diff(x, axis=axis)
    with pytest.raises(ValueError, match="n must be a non-negative int"):
        pg.diff(x, n=-1)  # returned x unchanged
    assert pg.diff(x, n=4).shape == (2, 0)  # past the length: empty (strict refused the slice)
    assert pg.diff(pg.Variable(arr(xp, [1.0, 4.0, 9.0])), n=4).shape == (0,)


def test_moveaxis_refuses_repeated_axes(xp):
    a = pg.Variable(arr(xp, np.zeros((2, 3, 4))))
    with pytest.raises(ValueError, match="repeat an axis"):
        pg.moveaxis(a, (0, 1), (2, 2))  # gave shape (4, 2, 3)
    assert pg.moveaxis(a, (0, 1), (2, 1)).shape == (4, 3, 2)


@pytest.mark.parametrize("reduce, expected", [
    (lambda t, d: pg.sum(t, dtype=d), [1.0, 1.0, 1.0, 1.0]),
    (lambda t, d: pg.prod(t, dtype=d), [24.0, 12.0, 8.0, 6.0]),
    (lambda t, d: pg.sum(pg.cumulative_sum(t, dtype=d)), [4.0, 3.0, 2.0, 1.0]),
], ids=["sum", "prod", "cumulative_sum"])
def test_a_real_input_reduced_in_a_complex_dtype_has_a_real_gradient(xp, reduce, expected):
    """The gradient comes out complex; the input's is its real part. The rules cast complex to
    real, which array_api_strict refuses (backward raised a TypeError there)."""
    t = pg.Variable(arr(xp, [1.0, 2.0, 3.0, 4.0]))
    (g,) = pg.grad(pg.real(reduce(t, xp.complex128)), [t])
    assert g.dtype == xp.float64
    assert_close(g, np.array(expected))


def test_vecdot_with_an_axis_counted_from_the_front(xp):
    a = pg.Variable(arr(xp, np.ones((2, 2, 3))))
    b = pg.Variable(arr(xp, np.arange(12.0).reshape(2, 2, 3)))
    pg.sum(pg.vecdot(a, b, axis=1)).backward()  # backward failed: shapes (1, 2, 3) and (2, 2, 3)
    assert_close(a.grad, np.arange(12.0).reshape(2, 2, 3))
    with pytest.raises(ValueError, match="ambiguous"):
        pg.vecdot(pg.Variable(arr(xp, np.ones((2, 3)))), b, axis=1)
    for axis in (3, 5):  # axis - ndim contracted axis 0 (or 2) silently
        with pytest.raises(ValueError, match=rf"vecdot: axis {axis} is out of bounds for arrays of 3 dimensions"):
            pg.vecdot(a, b, axis=axis)


def test_astype_without_a_copy_to_the_same_dtype_is_the_input(xp):
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    assert pg.astype(x, x.dtype, copy=False) is x  # the standard's rule
    assert pg.astype(x, x.dtype) is not x


def test_isin_on_a_namespace_without_it():
    """isin is the standard's since 2025.12: a backend whose namespace is older raised a bare
    AttributeError. The row computes it with 2024.12's functions there, the same values."""
    from polygrad.ops.sets import _isin_kernel

    class Older:  # numpy's namespace less isin
        def __getattr__(self, name):
            if name == "isin":
                raise AttributeError(name)
            return getattr(np, name)

    x1, x2 = np.array([[1, 2, 3], [3, 0, 1]]), np.array([0, 3])
    for invert in (False, True):
        np.testing.assert_array_equal(_isin_kernel(Older(), x1, x2, invert=invert), np.isin(x1, x2, invert=invert))
        np.testing.assert_array_equal(_isin_kernel(Older(), x1, 2, invert=invert), np.isin(x1, 2, invert=invert))


def test_isin_on_array_api_strict_set_to_2024_12():
    """array_api_strict set to the version polygrad claims keeps an isin that raises a
    RuntimeError when called: pg.isin failed there. It computes isin itself instead."""
    xs = pytest.importorskip("array_api_strict")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        xs.set_array_api_strict_flags(api_version="2024.12")
    try:
        a, b = xs.asarray([1, 2, 3]), xs.asarray([2])
        got = pg.isin(pg.Variable(a, requires_grad=False), pg.Variable(b, requires_grad=False))
        assert [bool(v) for v in got.array] == [False, True, False]
    finally:
        xs.reset_array_api_strict_flags()


def test_clip_refuses_a_bool_x(xp):
    """pg.clip of a bool x on numpy cast the bounds to bool (clip(False, 0.5) was True); strict refused it with its
    own words. One rule, shared with F.clip: the standard's clip takes numbers."""
    x = pg.asarray([True, False], dtype="bool")
    with pytest.raises(TypeError, match=r"^polygrad: clip: x must be an array of numbers, got \S*bool \(2,\)"):
        pg.clip(x, 0.5)

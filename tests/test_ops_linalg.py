"""The standard's linalg extension (and tensordot / vecdot), beyond the op table:
the API (signatures as array_api_strict's, names, the Variable namespace), the
gradient at non-differentiable points and ties, what has no gradient, complex
gradients (PyTorch's convention, by the complex dot-product test) and the
errors for what polygrad does not differentiate, on numpy and array_api_strict.
Forward values and real gradients of every function are cases of the op table
(``polygrad_conformance/cases_extensions.py``, run by test_op_cases.py).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import polygrad as pg
import polygrad.array_api  # noqa: F401
from polygrad.ops import GRAPH_OPS, REGISTRY
from polygrad.ops import linalg as L
from polygrad.testing import check_grads
from polygrad_conformance.gradcheck import check_vjp

from conftest import arr, assert_close, plain_signature, sample

INF = math.inf


def spd(xp, x):
    """A symmetric positive-definite matrix (stack) made from ``x``: x x^T + n I."""
    n = x.shape[-1]
    return x @ x.mT + xp.eye(n, dtype=xp.float64) * float(n)


def _svd_parts(xp, u, s, vh):
    """The singular values, U diag(1, 2, ...) Vh and the projector U U^T (sign-free)."""
    k = s.shape[-1]
    u, vh = u[..., :k], vh[..., :k, :]
    return s, (u * arr(xp, list(range(1, k + 1)))) @ vh, u @ u.mT


# ---------------------------------------------------------------------------
# The API: signatures, names, namespace
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", L.__all__ + list(L.EXTENSION))
def test_signature_matches_the_standard(name):
    """Each function has array_api_strict's signature (names, kinds, defaults)."""
    import array_api_strict

    assert plain_signature(getattr(L, name)) == plain_signature(getattr(array_api_strict.linalg, name))


def test_top_level_and_extension_names():
    """matmul, tensordot, vecdot are top-level (``__all__``); the extension's names are in EXTENSION only."""
    assert set(L.__all__) == {"matmul", "tensordot", "vecdot"}
    assert set(L.EXTENSION) | {"matmul", "matrix_transpose", "tensordot", "vecdot"} == set(pg.array_api.LINALG)
    assert pg.ops.tensordot is L.tensordot and pg.ops.vecdot is L.vecdot
    assert not any(hasattr(pg.ops, n) for n in ("inv", "det", "svd", "cholesky"))


@pytest.mark.parametrize("name", L.EXTENSION)
def test_extension_rows_are_reached_by_op_name(name):
    """The row of ``name`` is ``linalg_<name>``, reached in rules as ``o.linalg_<name>`` (raw and graph)."""
    assert f"linalg_{name}" in REGISTRY
    assert getattr(GRAPH_OPS, f"linalg_{name}") is getattr(L, name)


@pytest.mark.parametrize("name", L.__all__ + list(L.EXTENSION))
def test_namespace_linalg_is_differentiable(xp, name):
    """``x.__array_namespace__().linalg.<name>`` is polygrad's function (with a gradient), not the backend's."""
    ns = pg.Variable(xp.ones((2, 2), dtype=xp.float64)).__array_namespace__()
    assert getattr(ns.linalg, name) is getattr(L, name)


# ---------------------------------------------------------------------------
# Conventions at non-differentiable points, and what has no gradient
# ---------------------------------------------------------------------------
@pytest.mark.filterwarnings("ignore:divide by zero")  # the backend's own forward, ord=-1 at 0
@pytest.mark.parametrize("fn", [lambda x: L.vector_norm(x), lambda x: L.vector_norm(x, ord=0.5),
                                lambda x: L.vector_norm(x, ord=-1), lambda x: L.vector_norm(x, ord=INF),
                                lambda x: L.matrix_norm(x)], ids=["ord_2", "ord_half", "ord_minus_1", "ord_inf", "fro"])
def test_norm_gradient_at_zero_is_zero(xp, fn):
    """At x = 0 the norms' gradient is 0 (not nan)."""
    x = pg.Variable(xp.zeros((2, 3), dtype=xp.float64))
    fn(x).backward()
    assert_close(x.grad, np.zeros((2, 3)))


@pytest.mark.parametrize("fn", [lambda x: L.vector_norm(x, axis=(-2, -1)), lambda x: L.matrix_norm(x)],
                         ids=["ord_2", "fro"])
def test_norm_second_derivative_at_zero_is_zero(xp, fn):
    """Their rule g x / |x| took |x| as 1 at x = 0, which left g x: the Hessian there was g I
    (PyTorch's is 0). Beside it, an ordinary matrix keeps (I - x x^T / |x|^2) / |x|."""
    x = pg.Variable(arr(xp, [[[0.0, 0.0], [0.0, 0.0]], [[1.0, 2.0], [2.0, 0.0]]]))
    g, = pg.grad(pg.sum(fn(x)), [x], create_graph=True)
    hv, = pg.grad(pg.sum(g), [x])  # the Hessian times ones
    assert_close(hv, np.array([[[0.0, 0.0], [0.0, 0.0]], [[4.0, -1.0], [-1.0, 9.0]]]) / 27)


def test_vector_norm_zero_entries_with_small_ord_get_zero_gradient(xp):
    """ord < 1: the entries at 0 get gradient 0, the others the usual one."""
    x = pg.Variable(arr(xp, [0.0, 4.0, 1.0]))
    L.vector_norm(x, ord=0.5).backward()
    n = (2.0 + 1.0) ** 2
    assert_close(x.grad, np.array([0.0, (4.0 / n) ** -0.5, (1.0 / n) ** -0.5]))


def test_vector_norm_inf_ties_share_the_gradient(xp):
    """The entries tying for the max |x| share the gradient, with their signs."""
    x = pg.Variable(arr(xp, [1.0, -3.0, 3.0]))
    L.vector_norm(x, ord=INF).backward()
    assert_close(x.grad, np.array([0.0, -0.5, 0.5]))


def test_matrix_norm_1_column_ties_share(xp):
    """ord=1: columns tying for the largest absolute sum share the gradient."""
    x = pg.Variable(arr(xp, [[1.0, -2.0], [2.0, 1.0]]))
    L.matrix_norm(x, ord=1).backward()
    assert_close(x.grad, np.array([[0.5, -0.5], [0.5, 0.5]]))


@pytest.mark.parametrize("ord", [2, -2])
def test_matrix_norm_2_tied_singular_values_share(xp, ord):
    """ord 2 / -2 took one singular pair u1 v1^T, LAPACK's pick among tied ones ([[0.6, 0], [0.8,
    0]] for a rotation), where max / min(svdvals(x)) and ord 1 / inf share ties: a rotation now
    gives x / 2, I_3 gives I_3 / 3; where the max / min is 0 (U, V arbitrary) the gradient is 0."""
    x = pg.Variable(arr(xp, [[[0.6, -0.8], [0.8, 0.6]], [[3.0, 0.0], [0.0, 1.0]],
                             [[1.0, 0.0], [0.0, 0.0]], [[0.0, 0.0], [0.0, 0.0]]]))
    pg.sum(L.matrix_norm(x, ord=ord)).backward()
    distinct = [[1.0, 0.0], [0.0, 0.0]] if ord == 2 else [[0.0, 0.0], [0.0, 1.0]]
    last = [[1.0, 0.0], [0.0, 0.0]] if ord == 2 else [[0.0, 0.0], [0.0, 0.0]]
    assert_close(x.grad, np.array([[[0.3, -0.4], [0.4, 0.3]], distinct, last, [[0.0, 0.0], [0.0, 0.0]]]))
    eye = pg.Variable(xp.eye(3, dtype=xp.float64))
    L.matrix_norm(eye, ord=ord).backward()
    assert_close(eye.grad, np.eye(3) / 3)


def test_eigvalsh_gradient_at_repeated_eigenvalues_is_finite(xp):
    """A loss of the eigenvalues alone is differentiable even where they repeat (here 2 I)."""
    x = pg.Variable(xp.eye(3, dtype=xp.float64) * 2.0)
    pg.sum(L.eigvalsh(x)).backward()
    assert_close(x.grad, np.eye(3))


def test_slogdet_sign_has_no_gradient(xp):
    """A loss of the sign alone gives no gradient (None)."""
    x = pg.Variable(sample(xp, (3, 3), "wellcond", 0))
    (g,) = pg.grad([L.slogdet(x)[0]], [x], grad_outputs=[xp.ones((), dtype=xp.float64)], allow_unused=True)
    assert g is None


def test_matrix_rank_has_no_gradient(xp):
    """matrix_rank is an integer: its result never requires grad."""
    x = pg.Variable(sample(xp, (3, 2), "any", 0))
    r = L.matrix_rank(x)
    assert not r.requires_grad
    assert int(r.data) == 2
    assert xp.isdtype(r.dtype, "integral")


def test_qr_complete_with_more_rows_raises(xp):
    """mode='complete' for a tall matrix has no gradient: backward says so."""
    x = pg.Variable(sample(xp, (3, 2), "any", 0))
    q, r = L.qr(x, mode="complete")
    with pytest.raises(NotImplementedError, match="complete"):
        pg.sum(q).backward()


def test_svd_full_matrices_uses_the_first_columns(xp):
    """With full_matrices=True, the gradient through U[:, :k] equals the reduced SVD's."""
    a = sample(xp, (4, 2), "any", 1)
    full, red = pg.Variable(a), pg.Variable(a)
    pg.sum(_svd_parts(xp, *L.svd(full))[2]).backward()
    pg.sum(_svd_parts(xp, *L.svd(red, full_matrices=False))[2]).backward()
    assert_close(full.grad, red.grad)


@pytest.mark.parametrize("name", ["cholesky", "eigvalsh", "svdvals", "qr"])
def test_complex_decomposition_gradient_raises_clearly(xp, name):
    """Complex decompositions compute forward; their gradient raises NotImplementedError naming the function."""
    a = xp.asarray([[3.0 + 0.0j, 0.5 - 1.0j], [0.5 + 1.0j, 2.0 + 0.0j]], dtype=xp.complex128)
    x = pg.Variable(a)
    y = getattr(L, name)(x)
    assert_close(y, getattr(xp.linalg, name)(a))
    y = y[0] if isinstance(y, tuple) else y
    with pytest.raises(NotImplementedError, match=f"linalg.{name}"):
        y.backward(xp.ones_like(y.data))


def test_complex_slogdet_sign_gradient_raises(xp):
    """The phase of a complex determinant has a gradient polygrad does not compute: it says so."""
    x = pg.Variable(xp.asarray([[1.0 + 1.0j, 0.5], [0.0, 2.0 - 1.0j]], dtype=xp.complex128))
    sign, _ = L.slogdet(x)
    with pytest.raises(NotImplementedError, match="sign"):
        sign.backward(xp.ones_like(sign.data))


def _cw(xp, x):
    """A well-conditioned complex matrix (stack) from ``x``: x + n I."""
    return x + xp.eye(x.shape[-1], dtype=xp.complex128) * float(x.shape[-1])


#: Complex inputs (PyTorch's convention), checked by the complex dot-product test to order 2.
COMPLEX = {
    "matmul": (lambda xp, x, y: x @ y, [(2, 3), (3, 2)]),
    "matmul_vector": (lambda xp, x, y: L.matmul(x, y), [(2, 3), (3,)]),
    "tensordot": (lambda xp, x, y: L.tensordot(x, y, axes=([1], [0])), [(2, 3), (3, 2)]),
    "vecdot": (lambda xp, x, y: L.vecdot(x, y), [(2, 3), (3,)]),
    "outer": (lambda xp, x, y: L.outer(x, y), [(3,), (2,)]),
    "cross": (lambda xp, x, y: L.cross(x, y), [(2, 3), (2, 3)]),
    "inv": (lambda xp, x: L.inv(_cw(xp, x)), [(3, 3)]),
    "det": (lambda xp, x: L.det(_cw(xp, x)), [(2, 3, 3)]),
    "slogdet_logabsdet": (lambda xp, x: L.slogdet(_cw(xp, x))[1], [(3, 3)]),
    "solve": (lambda xp, x, y: L.solve(_cw(xp, x), y), [(3, 3), (3, 2)]),
    "solve_vector": (lambda xp, x, y: L.solve(_cw(xp, x), y), [(2, 3, 3), (3,)]),
    "pinv": (lambda xp, x: L.pinv(x), [(3, 2)]),
    "matrix_power": (lambda xp, x: L.matrix_power(x, 3), [(2, 2)]),
    "matrix_power_negative": (lambda xp, x: L.matrix_power(_cw(xp, x), -1), [(2, 2)]),
    "vector_norm": (lambda xp, x: L.vector_norm(x, axis=-1), [(2, 3)]),
    "vector_norm_ord_3": (lambda xp, x: L.vector_norm(x, ord=3), [(3,)]),
    "vector_norm_ord_1": (lambda xp, x: L.vector_norm(x, ord=1), [(3,)]),
    "matrix_norm_fro": (lambda xp, x: L.matrix_norm(x), [(2, 3)]),
    "matrix_norm_inf": (lambda xp, x: L.matrix_norm(x, ord=INF), [(2, 3)]),
    "diagonal": (lambda xp, x: L.diagonal(x, offset=1), [(3, 3)]),
    "trace": (lambda xp, x: L.trace(x), [(3, 3)]),
}
#: First order only: the second derivative goes through svd, whose rule is real-only.
COMPLEX_FIRST_ORDER = {
    "matrix_norm_nuc": (lambda xp, x: L.matrix_norm(x, ord="nuc"), [(3, 2)]),
    "matrix_norm_2": (lambda xp, x: L.matrix_norm(x, ord=2), [(2, 3)]),
}


@pytest.mark.parametrize("name", list(COMPLEX) + list(COMPLEX_FIRST_ORDER))
def test_complex_gradients(xp, name):
    """Complex inputs: the gradient (and, where the rules compose, its derivative) matches central differences."""
    order = 2 if name in COMPLEX else 1
    fn, shapes = COMPLEX.get(name) or COMPLEX_FIRST_ORDER[name]
    arrays = [sample(xp, s, "complex", f"{name}{i}") for i, s in enumerate(shapes)]
    check_vjp(lambda *vs: fn(xp, *vs), arrays, order=order, eps=1e-5, rtol=1e-5, atol=1e-7)


def test_diagonal_and_trace_take_complex_gradients(xp):
    """The real-coefficient linear maps pass complex gradients through unchanged."""
    x = pg.Variable(xp.zeros((2, 3), dtype=xp.complex128))
    L.diagonal(x, offset=1).backward(xp.asarray([1.0 + 2.0j, 3.0 - 1.0j]))
    assert_close(x.grad, np.array([[0, 1 + 2j, 0], [0, 0, 3 - 1j]]))
    y = pg.Variable(xp.zeros((2, 2), dtype=xp.complex128))
    L.trace(y).backward(xp.asarray(2.0 - 1.0j))
    assert_close(y.grad, np.array([[2 - 1j, 0], [0, 2 - 1j]]))


def test_det_of_spd_second_order_with_graph_rules(xp):
    """Rules built with polygrad ops differentiate again: d/dX of grad(det) vs central differences."""
    a = sample(xp, (2, 2), "any", 3)
    check_grads(lambda x: L.det(spd(xp, x)) * L.trace(L.inv(spd(xp, x))), [a], order=2)


@pytest.mark.parametrize("shape, ord", [((3, 0), 1), ((3, 0), math.inf), ((0, 0), 1), ((2, 0, 0), math.inf)])
def test_matrix_norm_of_an_empty_matrix_has_an_empty_gradient(shape, ord):
    """ord 1 / inf of a matrix with no entries is 0 forward; its backward took the max of no
    column sums and raised NumPy's zero-size reduction error. The gradient is empty (JAX's)."""
    x = pg.Variable(np.zeros(shape))
    pg.sum(pg.linalg.matrix_norm(x, ord=ord)).backward()
    assert x.grad.shape == shape


# ---------------------------------------------------------------------------
# Against JAX (stop 26)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["tensordot", "outer"])
@pytest.mark.parametrize("complex_first", [True, False])
def test_a_real_operand_of_a_complex_product_gets_the_real_part(op, complex_first):
    """tensordot and outer of one complex and one real operand failed in backward ('complex128
    ..., expected float64'), where matmul, vecdot and * give the real operand the real part."""
    rng = np.random.default_rng(0)
    c = rng.standard_normal((3, 2)) + 1j * rng.standard_normal((3, 2))
    r = rng.standard_normal((3, 2)) if op == "tensordot" else rng.standard_normal(4)
    c = c if op == "tensordot" else c[:, 0]
    a, b = (pg.Variable(c), pg.Variable(r)) if complex_first else (pg.Variable(r), pg.Variable(c))
    fn = (lambda p, q: pg.tensordot(p, q, axes=2)) if op == "tensordot" else pg.linalg.outer
    out = fn(a, b)
    u = rng.standard_normal(out.shape) + 1j * rng.standard_normal(out.shape)
    pg.sum(pg.real(out * pg.asarray(np.conj(u)))).backward()
    real = b if complex_first else a
    assert real.grad.dtype == np.float64
    # its gradient is the real part of the complex one: through the product with the real
    # operand cast to complex, which the rules handle already
    a2, b2 = pg.Variable(a.data.astype(complex)), pg.Variable(b.data.astype(complex))
    pg.sum(pg.real(fn(a2, b2) * pg.asarray(np.conj(u)))).backward()
    np.testing.assert_allclose(real.grad, np.real((b2 if complex_first else a2).grad))


def test_outer_refuses_operands_that_are_not_vectors():
    """numpy's outer flattens other ranks: outer of a (2, 2) and a (3,) gave (4, 3), whose
    gradient then failed inside matmul. The standard's outer takes vectors: refused at the call."""
    for x1, x2, name in ((np.ones((2, 2)), np.ones(3), "x1"), (np.ones(2), np.asarray(3.0), "x2")):
        with pytest.raises(ValueError, match=rf"linalg.outer: {name} must be 1-D.*got shape"):
            pg.linalg.outer(pg.Variable(x1), pg.Variable(x2))


def test_qr_refuses_modes_outside_the_standard():
    """mode='r' returned R's rows unpacked as (Q, R); 'raw' numpy's (h, tau) labelled Q and R."""
    for mode in ("r", "raw", "economic"):
        with pytest.raises(ValueError, match="mode must be 'reduced' or 'complete'"):
            pg.linalg.qr(pg.Variable(np.eye(3)), mode=mode)


def test_cross_refuses_vectors_of_another_size():
    """2-vectors gave numpy's deprecated scalar 'cross' and an obscure error in backward."""
    with pytest.raises(ValueError, match="x1 must have size 3 along axis -1"):
        pg.linalg.cross(pg.Variable(np.array([1.0, 2.0])), pg.Variable(np.array([3.0, 4.0])))
    with pytest.raises(ValueError, match="x2 must have size 3 along axis 0"):
        pg.linalg.cross(pg.Variable(np.ones((3, 2))), pg.Variable(np.ones((2, 2))), axis=0)


def test_pinv_gradient_where_rtol_cuts_a_real_singular_value_is_refused():
    """With rtol cutting off a singular value that is not zero (0.27 of 2.62 at rtol=0.5) the
    rule, the whole matrix's formula (JAX's too), was off by 1.4x: refused. A cut-off that only
    drops zeros (a rank-deficient matrix) keeps its exact gradient."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 3))
    x = pg.Variable(a)
    with pytest.raises(NotImplementedError, match="rtol cuts off a singular value that is not small beside those kept .*times the smallest kept"):
        pg.sum(pg.linalg.pinv(x, rtol=0.5)).backward()
    low = a[:, :2] @ rng.standard_normal((2, 3))  # rank 2: its third singular value is zero
    check_grads(lambda m: pg.linalg.pinv(m, rtol=1e-3), [low])  # (the step stays below the cut-off)
    u, _, vt = np.linalg.svd(a, full_matrices=False)
    tiny = pg.Variable((u * np.array([2.6, 1.5, 1e-12])) @ vt)  # a cut value small beside those kept
    pg.sum(pg.linalg.pinv(tiny, rtol=0.01)).backward()
    everything = pg.Variable(a)  # rtol >= 1 cuts every value: P = 0, its gradient 0
    pg.sum(pg.linalg.pinv(everything, rtol=2.0)).backward()
    assert not np.any(everything.grad)
    batch = pg.Variable(np.stack([a, a]))
    pg.sum(pg.linalg.pinv(batch, rtol=[1e-3, 1e-3])).backward()  # a list rtol, as numpy takes
    # a zero value as computed (2.6e-17) beside a small kept one (1e-9): no refusal
    zero = pg.Variable((u * np.array([1.0, 1e-9, 0.0])) @ vt)
    pg.sum(pg.linalg.pinv(zero, rtol=1e-12)).backward()


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (2, 0, 3)])
def test_matrix_norm_2_of_an_empty_matrix_has_a_zero_gradient_on_strict(shape):
    """The rule sliced the first singular pair, u[..., :, :1], of no singular vectors: an
    IndexError on array_api_strict (numpy gave zeros)."""
    for backend in ("numpy", "strict"):
        x = pg.Variable(pg.asarray(np.ones(shape), backend=backend))
        pg.sum(pg.linalg.matrix_norm(x, ord=2)).backward()
        assert tuple(x.grad.shape) == shape and pg.to_backend(x.grad, "numpy").size == 0



@pytest.mark.parametrize("axes, np_axes, b_shape", [((1, 0), (1, 0), (3, 4)), ((np.int64(1), [0]), ([1], [0]), (3, 4)),
                                                    (([1], 0), ([1], [0]), (3, 4)), ((-1, -2), (-1, -2), (4, 3, 2))])
def test_tensordot_takes_an_int_for_a_side_of_axes(xp, axes, np_axes, b_shape):
    """axes=(1, 0), a pair of ints as numpy, dask and jax take it, computed the value, then the
    backward raised "'int' object is not iterable"; the gradient now checks numerically."""
    a, b = sample(xp, (2, 3), "any", 0), sample(xp, b_shape, "any", 1)
    assert_close(L.tensordot(pg.Variable(a), pg.Variable(b), axes=axes),
                 np.tensordot(np.from_dlpack(a), np.from_dlpack(b), axes=np_axes))
    check_grads(lambda p, q: L.tensordot(p, q, axes=axes), [a, b])


def test_det_gradient_at_a_singular_matrix_is_the_cofactor_matrix(xp):
    """The rule det * inv(x)^-H raised LinAlgError at an exactly singular matrix, whose gradient is
    its cofactor matrix (JAX's): rank n - 1, rank n - 2 (all cofactors 0), and a stack mixing both."""
    for a, cofactors in (([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], [[-3, 6, -3], [6, -12, 6], [-3, 6, -3]]),
                         ([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [3.0, 6.0, 9.0]], np.zeros((3, 3))),
                         ([[[1.0, 2.0], [2.0, 4.0]], [[2.0, 1.0], [1.0, 3.0]]],
                          [[[4, -2], [-2, 1]], [[3, -1], [-1, 2]]])):
        x = pg.Variable(arr(xp, a))
        pg.sum(L.det(x)).backward()
        assert_close(x.grad, np.asarray(cofactors, dtype=np.float64), atol=1e-12)
    check_grads(L.det, [arr(xp, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])], order=2)


def test_complex_det_gradient_at_a_singular_matrix():
    """At a singular complex matrix the gradient is the conjugate cofactor matrix (PyTorch's convention)."""
    x = pg.Variable(np.array([[1 + 1j, 2.0], [2 + 2j, 4.0]]))
    pg.real(L.det(x)).backward()
    assert_close(x.grad, np.conj(np.array([[4.0, -2 - 2j], [-2.0, 1 + 1j]])), atol=1e-12)

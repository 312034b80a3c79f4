"""The standard's tensordot / vecdot and the linalg extension: forward against the
backend's own functions, gradients (order 2) against central differences in float64,
on numpy and array_api_strict.

``CASES`` is the table, one row per (op, situation); ``test_every_linalg_op_has_a_case``
makes a new linalg row without a case fail. Decompositions are checked through
functions their derivative is defined for: symmetric positive-definite inputs
(``spd``), and for eigh / svd quantities that do not depend on the eigenvectors' or
singular vectors' signs.
"""

from __future__ import annotations

import inspect
import math
import zlib

import numpy as np
import pytest

import polygrad as pg
import polygrad.array_api  # noqa: F401
from polygrad.ops import GRAPH_OPS, REGISTRY
from polygrad.ops import linalg as L
from polygrad.testing import check_grads

from conftest import arr
from conftest import assert_close
from test_ops_fft import check_vjp


def make_input(xp, spec, seed):
    """('n', shape) normal, ('w', shape) normal plus n*I (well conditioned), or literal values."""
    r = np.random.default_rng(seed)
    if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], str):
        kind, shape = spec
        v = r.standard_normal(shape)
        if kind == "w":
            v = v + shape[-1] * np.eye(shape[-1])
        return arr(xp, v)
    return arr(xp, spec)


def spd(xp, x):
    """A symmetric positive-definite matrix (stack) made from ``x``: x x^T + n I."""
    n = x.shape[-1]
    return x @ x.mT + xp.eye(n, dtype=xp.float64) * float(n)


def const(xp, values):
    return arr(xp, values)


class Case:
    """One row: ``fn(xp, *vars)`` with polygrad, ``ref(xp, *arrays)`` with the backend."""

    def __init__(self, op, name, fn, ref, inputs, order=2, **tol):
        self.op, self.name, self.fn, self.ref, self.inputs, self.order, self.tol = op, name, fn, ref, inputs, order, tol

    @property
    def id(self):
        return f"{self.op}-{self.name}"

    def arrays(self, xp):
        return [make_input(xp, s, zlib.crc32(f"{self.id}/{i}".encode())) for i, s in enumerate(self.inputs)]


def _eigh_parts(xp, w, v):
    """The eigenvalues and V diag(1, 2, ...) V^T (independent of the eigenvectors' signs)."""
    n = w.shape[-1]
    return w, (v * const(xp, list(range(1, n + 1)))) @ v.mT


def _svd_parts(xp, u, s, vh):
    """The singular values, U diag(1, 2, ...) Vh and the projector U U^T (sign-free)."""
    k = s.shape[-1]
    u, vh = u[..., :k], vh[..., :k, :]
    return s, (u * const(xp, list(range(1, k + 1)))) @ vh, u @ u.mT


INF = math.inf
C = Case
CASES = [
    # --- tensordot / vecdot (top level) ----------------------------------------
    C("tensordot", "axes_2", lambda xp, x, y: L.tensordot(x, y), lambda xp, a, b: xp.tensordot(a, b),
      [("n", (2, 3, 4)), ("n", (3, 4, 2))]),
    C("tensordot", "axes_1", lambda xp, x, y: L.tensordot(x, y, axes=1), lambda xp, a, b: xp.tensordot(a, b, axes=1),
      [("n", (2, 3)), ("n", (3, 4))]),
    C("tensordot", "axes_0_outer", lambda xp, x, y: L.tensordot(x, y, axes=0), lambda xp, a, b: xp.tensordot(a, b, axes=0),
      [("n", (2,)), ("n", (3,))]),
    C("tensordot", "crossed_pairs", lambda xp, x, y: L.tensordot(x, y, axes=([2, 0], [0, 1])),
      lambda xp, a, b: xp.tensordot(a, b, axes=([2, 0], [0, 1])), [("n", (2, 3, 4)), ("n", (4, 2, 3))]),
    C("tensordot", "negative_axes", lambda xp, x, y: L.tensordot(x, y, axes=([-1], [-2])),
      lambda xp, a, b: xp.tensordot(a, b, axes=([2], [0])), [("n", (2, 3, 4)), ("n", (4, 2))]),
    C("vecdot", "same_shape", lambda xp, x, y: L.vecdot(x, y), lambda xp, a, b: xp.vecdot(a, b), [("n", (2, 3)), ("n", (2, 3))]),
    C("vecdot", "broadcast", lambda xp, x, y: L.vecdot(x, y), lambda xp, a, b: xp.vecdot(a, b), [("n", (2, 1, 3)), ("n", (4, 3))]),
    C("vecdot", "axis_minus_2", lambda xp, x, y: L.vecdot(x, y, axis=-2), lambda xp, a, b: xp.vecdot(a, b, axis=-2),
      [("n", (3, 2)), ("n", (3, 2))]),
    C("vecdot", "vectors_to_0d", lambda xp, x, y: L.vecdot(x, y), lambda xp, a, b: xp.vecdot(a, b), [("n", (4,)), ("n", (4,))]),
    # --- linear maps -------------------------------------------------------------
    C("linalg_diagonal", "square", lambda xp, x: L.diagonal(x), lambda xp, a: xp.linalg.diagonal(a), [("n", (3, 3))]),
    C("linalg_diagonal", "offset_1_wide", lambda xp, x: L.diagonal(x, offset=1), lambda xp, a: xp.linalg.diagonal(a, offset=1),
      [("n", (2, 4))]),
    C("linalg_diagonal", "offset_minus_1_batched", lambda xp, x: L.diagonal(x, offset=-1),
      lambda xp, a: xp.linalg.diagonal(a, offset=-1), [("n", (2, 4, 3))]),
    C("linalg_diagonal", "empty", lambda xp, x: L.diagonal(x, offset=5), lambda xp, a: xp.linalg.diagonal(a, offset=5),
      [("n", (2, 3))]),
    C("linalg_trace", "square", lambda xp, x: L.trace(x), lambda xp, a: xp.linalg.trace(a), [("n", (3, 3))]),
    C("linalg_trace", "offset_batched", lambda xp, x: L.trace(x, offset=-1), lambda xp, a: xp.linalg.trace(a, offset=-1),
      [("n", (2, 3, 4))]),
    C("linalg_trace", "dtype_float64", lambda xp, x: L.trace(x, dtype=xp.float64), lambda xp, a: xp.linalg.trace(a, dtype=xp.float64),
      [("n", (3, 2))]),
    # --- products of vectors ------------------------------------------------------
    C("linalg_cross", "vectors", lambda xp, x, y: L.cross(x, y), lambda xp, a, b: xp.linalg.cross(a, b), [("n", (3,)), ("n", (3,))]),
    C("linalg_cross", "broadcast", lambda xp, x, y: L.cross(x, y), lambda xp, a, b: xp.linalg.cross(a, b),
      [("n", (2, 3)), ("n", (3,))]),
    C("linalg_cross", "axis_minus_2", lambda xp, x, y: L.cross(x, y, axis=-2), lambda xp, a, b: xp.linalg.cross(a, b, axis=-2),
      [("n", (3, 2)), ("n", (3, 2))]),
    C("linalg_outer", "vectors", lambda xp, x, y: L.outer(x, y), lambda xp, a, b: xp.linalg.outer(a, b), [("n", (3,)), ("n", (2,))]),
    # --- inverses, determinants, solves --------------------------------------------
    C("linalg_inv", "square", lambda xp, x: L.inv(x), lambda xp, a: xp.linalg.inv(a), [("w", (3, 3))]),
    C("linalg_inv", "batched", lambda xp, x: L.inv(x), lambda xp, a: xp.linalg.inv(a), [("w", (2, 3, 3))]),
    C("linalg_det", "square", lambda xp, x: L.det(x), lambda xp, a: xp.linalg.det(a), [("w", (3, 3))]),
    C("linalg_det", "batched", lambda xp, x: L.det(x), lambda xp, a: xp.linalg.det(a), [("n", (2, 2, 2))]),
    C("linalg_slogdet", "negative_det", lambda xp, x: L.slogdet(x), lambda xp, a: xp.linalg.slogdet(a),
      [[[0.5, 2.0, 0.1], [1.5, 0.3, -0.4], [0.2, -0.7, 1.1]]]),
    C("linalg_slogdet", "batched_logabsdet_only", lambda xp, x: L.slogdet(x)[1], lambda xp, a: xp.linalg.slogdet(a)[1],
      [("w", (2, 3, 3))]),
    C("linalg_solve", "matrix_rhs", lambda xp, x, y: L.solve(x, y), lambda xp, a, b: xp.linalg.solve(a, b),
      [("w", (3, 3)), ("n", (3, 2))]),
    C("linalg_solve", "vector_rhs", lambda xp, x, y: L.solve(x, y), lambda xp, a, b: xp.linalg.solve(a, b),
      [("w", (3, 3)), ("n", (3,))]),
    C("linalg_solve", "batched_matrix_broadcast_rhs", lambda xp, x, y: L.solve(x, y), lambda xp, a, b: xp.linalg.solve(a, b),
      [("w", (2, 3, 3)), ("n", (3, 2))]),
    C("linalg_solve", "batched_matrix_vector_rhs", lambda xp, x, y: L.solve(x, y), lambda xp, a, b: xp.linalg.solve(a, b),
      [("w", (2, 3, 3)), ("n", (3,))]),
    C("linalg_pinv", "tall", lambda xp, x: L.pinv(x), lambda xp, a: xp.linalg.pinv(a), [("n", (4, 3))]),
    C("linalg_pinv", "wide", lambda xp, x: L.pinv(x), lambda xp, a: xp.linalg.pinv(a), [("n", (2, 4))]),
    C("linalg_pinv", "square_batched", lambda xp, x: L.pinv(x), lambda xp, a: xp.linalg.pinv(a), [("w", (2, 3, 3))]),
    C("linalg_matrix_power", "n_3", lambda xp, x: L.matrix_power(x, 3), lambda xp, a: xp.linalg.matrix_power(a, 3),
      [("n", (3, 3))]),
    C("linalg_matrix_power", "n_1", lambda xp, x: L.matrix_power(x, 1), lambda xp, a: xp.linalg.matrix_power(a, 1),
      [("n", (2, 2))]),
    C("linalg_matrix_power", "n_0", lambda xp, x: L.matrix_power(x, 0) * x, lambda xp, a: xp.linalg.matrix_power(a, 0) * a,
      [("n", (2, 2))]),
    C("linalg_matrix_power", "n_minus_2_batched", lambda xp, x: L.matrix_power(x, -2),
      lambda xp, a: xp.linalg.matrix_power(a, -2), [("w", (2, 3, 3))]),
    # --- decompositions ---------------------------------------------------------------
    C("linalg_cholesky", "lower", lambda xp, x: L.cholesky(spd(xp, x)), lambda xp, a: xp.linalg.cholesky(spd(xp, a)),
      [("n", (3, 3))]),
    C("linalg_cholesky", "upper_batched", lambda xp, x: L.cholesky(spd(xp, x), upper=True),
      lambda xp, a: xp.linalg.cholesky(spd(xp, a), upper=True), [("n", (2, 3, 3))]),
    C("linalg_eigh", "values_and_vectors", lambda xp, x: _eigh_parts(xp, *L.eigh(spd(xp, x))),
      lambda xp, a: _eigh_parts(xp, *xp.linalg.eigh(spd(xp, a))), [("n", (3, 3))]),
    C("linalg_eigh", "batched", lambda xp, x: _eigh_parts(xp, *L.eigh(spd(xp, x))),
      lambda xp, a: _eigh_parts(xp, *xp.linalg.eigh(spd(xp, a))), [("n", (2, 3, 3))]),
    C("linalg_eigh", "symmetric_indefinite_vectors_only", lambda xp, x: _eigh_parts(xp, *L.eigh(x + x.mT))[1],
      lambda xp, a: _eigh_parts(xp, *xp.linalg.eigh(a + a.mT))[1], [("n", (3, 3))]),
    C("linalg_eigvalsh", "spd", lambda xp, x: L.eigvalsh(spd(xp, x)), lambda xp, a: xp.linalg.eigvalsh(spd(xp, a)),
      [("n", (3, 3))]),
    C("linalg_eigvalsh", "symmetric_batched", lambda xp, x: L.eigvalsh(x + x.mT), lambda xp, a: xp.linalg.eigvalsh(a + a.mT),
      [("n", (2, 3, 3))]),
    C("linalg_svd", "square", lambda xp, x: _svd_parts(xp, *L.svd(x)), lambda xp, a: _svd_parts(xp, *xp.linalg.svd(a)),
      [("n", (3, 3))]),
    C("linalg_svd", "tall_reduced", lambda xp, x: _svd_parts(xp, *L.svd(x, full_matrices=False)),
      lambda xp, a: _svd_parts(xp, *xp.linalg.svd(a, full_matrices=False)), [("n", (4, 3))]),
    C("linalg_svd", "wide_reduced_batched", lambda xp, x: _svd_parts(xp, *L.svd(x, full_matrices=False))[:2],
      lambda xp, a: _svd_parts(xp, *xp.linalg.svd(a, full_matrices=False))[:2], [("n", (2, 2, 4))]),
    C("linalg_svd", "wide_reduced_vh_projector", lambda xp, x: (lambda vh: vh.mT @ vh)(L.svd(x, full_matrices=False)[2]),
      lambda xp, a: (lambda vh: vh.mT @ vh)(xp.linalg.svd(a, full_matrices=False)[2]), [("n", (2, 4))]),
    C("linalg_svd", "tall_full_matrices", lambda xp, x: _svd_parts(xp, *L.svd(x)),
      lambda xp, a: _svd_parts(xp, *xp.linalg.svd(a)), [("n", (4, 2))]),
    C("linalg_svdvals", "tall", lambda xp, x: L.svdvals(x), lambda xp, a: xp.linalg.svdvals(a), [("n", (4, 3))]),
    C("linalg_svdvals", "wide_batched", lambda xp, x: L.svdvals(x), lambda xp, a: xp.linalg.svdvals(a), [("n", (2, 2, 3))]),
    C("linalg_qr", "square", lambda xp, x: tuple(L.qr(x)), lambda xp, a: tuple(xp.linalg.qr(a)), [("n", (3, 3))]),
    C("linalg_qr", "tall_batched", lambda xp, x: tuple(L.qr(x)), lambda xp, a: tuple(xp.linalg.qr(a)), [("n", (2, 4, 3))]),
    C("linalg_qr", "wide", lambda xp, x: tuple(L.qr(x)), lambda xp, a: tuple(xp.linalg.qr(a)), [("n", (2, 4))]),
    C("linalg_qr", "r_only", lambda xp, x: L.qr(x)[1], lambda xp, a: xp.linalg.qr(a)[1], [("n", (4, 3))]),
    C("linalg_qr", "complete_square", lambda xp, x: tuple(L.qr(x, mode="complete")),
      lambda xp, a: tuple(xp.linalg.qr(a, mode="complete")), [("n", (3, 3))]),
    # --- norms ----------------------------------------------------------------------------
    C("linalg_vector_norm", "ord_2", lambda xp, x: L.vector_norm(x), lambda xp, a: xp.linalg.vector_norm(a), [("n", (2, 3))]),
    C("linalg_vector_norm", "ord_1_axis", lambda xp, x: L.vector_norm(x, axis=1, ord=1),
      lambda xp, a: xp.linalg.vector_norm(a, axis=1, ord=1), [("n", (2, 3))]),
    C("linalg_vector_norm", "ord_inf_axes_keepdims", lambda xp, x: L.vector_norm(x, axis=(0, 2), keepdims=True, ord=INF),
      lambda xp, a: xp.linalg.vector_norm(a, axis=(0, 2), keepdims=True, ord=INF), [("n", (2, 3, 2))]),
    C("linalg_vector_norm", "ord_minus_inf", lambda xp, x: L.vector_norm(x, axis=-1, ord=-INF),
      lambda xp, a: xp.linalg.vector_norm(a, axis=-1, ord=-INF), [("n", (2, 4))]),
    C("linalg_vector_norm", "ord_3", lambda xp, x: L.vector_norm(x, ord=3), lambda xp, a: xp.linalg.vector_norm(a, ord=3),
      [("n", (4,))]),
    C("linalg_vector_norm", "ord_half", lambda xp, x: L.vector_norm(x, axis=0, ord=0.5),
      lambda xp, a: xp.linalg.vector_norm(a, axis=0, ord=0.5), [("n", (3, 2))]),
    C("linalg_vector_norm", "ord_minus_1", lambda xp, x: L.vector_norm(x, ord=-1), lambda xp, a: xp.linalg.vector_norm(a, ord=-1),
      [("n", (3,))]),
    C("linalg_vector_norm", "ord_0", lambda xp, x: L.vector_norm(x, ord=0) * x, lambda xp, a: xp.linalg.vector_norm(a, ord=0) * a,
      [("n", (3,))]),
    C("linalg_vector_norm", "0d", lambda xp, x: L.vector_norm(x), lambda xp, a: xp.linalg.vector_norm(a), [("n", ())]),
    C("linalg_matrix_norm", "fro", lambda xp, x: L.matrix_norm(x), lambda xp, a: xp.linalg.matrix_norm(a), [("n", (2, 3))]),
    C("linalg_matrix_norm", "fro_keepdims_batched", lambda xp, x: L.matrix_norm(x, keepdims=True),
      lambda xp, a: xp.linalg.matrix_norm(a, keepdims=True), [("n", (2, 3, 2))]),
    *[
        C("linalg_matrix_norm", f"ord_{name}", lambda xp, x, o=o: L.matrix_norm(x, ord=o),
          lambda xp, a, o=o: xp.linalg.matrix_norm(a, ord=o), [("n", (3, 3) if name in ("2", "-2", "nuc") else (2, 3))])
        for name, o in [("nuc", "nuc"), ("2", 2), ("-2", -2), ("1", 1), ("-1", -1), ("inf", INF), ("-inf", -INF)]
    ],
    C("linalg_matrix_norm", "ord_2_batched_keepdims", lambda xp, x: L.matrix_norm(x, ord=2, keepdims=True),
      lambda xp, a: xp.linalg.matrix_norm(a, ord=2, keepdims=True), [("n", (2, 3, 2))]),
]
IDS = [c.id for c in CASES]


# ---------------------------------------------------------------------------
# The table: forward and gradients of every case
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_forward_matches_backend(xp, case):
    """The op's value equals the backend's own function on the same arrays."""
    arrays = case.arrays(xp)
    got = case.fn(xp, *[pg.Variable(a) for a in arrays])
    assert_close(got, case.ref(xp, *arrays))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_gradient_matches_numerical(xp, case):
    """The vjp and (with create_graph) the vjp's own vjp agree with central differences in float64."""
    check_grads(lambda *vs: case.fn(xp, *vs), case.arrays(xp), order=case.order, **case.tol)


def test_every_linalg_op_has_a_case():
    """Every differentiable linalg row of REGISTRY has a case in CASES."""
    ours = {n for n, op in REGISTRY.items() if op.differentiable and (n.startswith("linalg_") or n in ("tensordot", "vecdot"))}
    assert ours - {c.op for c in CASES} == set()
    assert len(set(IDS)) == len(IDS), "duplicate case ids"


# ---------------------------------------------------------------------------
# The API: signatures, names, namespace
# ---------------------------------------------------------------------------
def _plain(fn):
    """A signature without annotations (array_api_strict annotates, polygrad does not)."""
    sig = inspect.signature(fn)
    params = [p.replace(annotation=inspect.Parameter.empty) for p in sig.parameters.values()]
    return sig.replace(parameters=params, return_annotation=inspect.Signature.empty)


@pytest.mark.parametrize("name", L.__all__ + list(L.EXTENSION))
def test_signature_matches_the_standard(name):
    """Each function has array_api_strict's signature (names, kinds, defaults)."""
    import array_api_strict

    assert _plain(getattr(L, name)) == _plain(getattr(array_api_strict.linalg, name))


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


def test_eigvalsh_gradient_at_repeated_eigenvalues_is_finite(xp):
    """A loss of the eigenvalues alone is differentiable even where they repeat (here 2 I)."""
    x = pg.Variable(xp.eye(3, dtype=xp.float64) * 2.0)
    pg.sum(L.eigvalsh(x)).backward()
    assert_close(x.grad, np.eye(3))


def test_slogdet_sign_has_no_gradient(xp):
    """A loss of the sign alone gives no gradient (None)."""
    x = pg.Variable(make_input(xp, ("w", (3, 3)), 0))
    (g,) = pg.grad([L.slogdet(x)[0]], [x], grad_outputs=[xp.ones((), dtype=xp.float64)], allow_unused=True)
    assert g is None


def test_matrix_rank_has_no_gradient(xp):
    """matrix_rank is an integer: its result never requires grad."""
    x = pg.Variable(make_input(xp, ("n", (3, 2)), 0))
    r = L.matrix_rank(x)
    assert not r.requires_grad
    assert int(r.data) == 2
    assert xp.isdtype(r.dtype, "integral")


def test_qr_complete_with_more_rows_raises(xp):
    """mode='complete' for a tall matrix has no gradient: backward says so."""
    x = pg.Variable(make_input(xp, ("n", (3, 2)), 0))
    q, r = L.qr(x, mode="complete")
    with pytest.raises(NotImplementedError, match="complete"):
        pg.sum(q).backward()


def test_svd_full_matrices_uses_the_first_columns(xp):
    """With full_matrices=True, the gradient through U[:, :k] equals the reduced SVD's."""
    a = make_input(xp, ("n", (4, 2)), 1)
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
    r = np.random.default_rng(zlib.crc32(name.encode()))
    arrays = [arr(xp, r.standard_normal(s) + 1j * r.standard_normal(s), "complex128") for s in shapes]
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
    a = make_input(xp, ("n", (2, 2)), 3)
    check_grads(lambda x: L.det(spd(xp, x)) * L.trace(L.inv(spd(xp, x))), [a], order=2)

"""The op cases of linear algebra (the main namespace's matmul, tensordot and
vecdot, and the linalg extension), of the fft extension, and of polygrad's own
rows (neural-network functions, private rows): the rest of
:mod:`polygrad_conformance.cases`, appended to its ``CASES``.

Decompositions are checked through quantities their derivative is defined
for: symmetric positive-definite or symmetric inputs, and for eigh / svd
values that do not depend on the signs of the eigenvectors or singular
vectors; the raw decompositions are marked ``up_to_sign`` (another backend's
library may flip a vector's sign).
"""

from __future__ import annotations

import math

import polygrad.functions as F_
import polygrad.ops as O
import polygrad.ops.fft as FFT
import polygrad.ops.linalg as LA
import polygrad.ops.nn as NN
from polygrad_conformance._util import index_dtype
from polygrad.ops import REGISTRY, apply
from polygrad_conformance.cases import F, _onehot, case, depth, ints, lit, mirror

INF = math.inf
_CPLX = ("complex",)


def _spd(m, x):
    """A well-conditioned symmetric positive definite matrix from ``x`` (works on arrays and Variables)."""
    return m.matmul(x, m.matrix_transpose(x)) + 3.0 * m.eye(x.shape[-1], dtype=x.dtype)


def _sym(m, x):
    return (x + m.matrix_transpose(x)) * 0.5 + m.asarray([[2.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, -2.0]], dtype=x.dtype)


def _scaled(m, v):
    """V diag(1, 2, ..., k) V^T for the columns of ``v``: unchanged by the columns' signs."""
    k = v.shape[-1]
    return m.matmul(v * m.asarray([float(i) for i in range(1, k + 1)], dtype=v.dtype), m.matrix_transpose(v))


def _eigh_invariant(m, res):
    """Eigenvalues and the squared eigenvector entries: unchanged by eigenvector signs."""
    w, v = res
    return m.concat([w, m.reshape(v * v, (-1,))], axis=0)


def _eigh_parts(m, res):
    """The eigenvalues and V diag(1, 2, ...) V^T."""
    w, v = res
    return w, _scaled(m, v)


def _svd_invariant(m, res):
    u, s, vh = res
    return m.concat([s, m.reshape(u * u, (-1,)), m.reshape(vh * vh, (-1,))], axis=0)


def _svd_parts(m, res):
    """The singular values, U diag(1, 2, ...) Vh and the projector U U^T (sign-free)."""
    u, s, vh = res
    k = s.shape[-1]
    u, vh = u[..., :k], vh[..., :k, :]
    ranks = m.asarray([float(i) for i in range(1, k + 1)], dtype=s.dtype)
    return s, m.matmul(u * ranks, vh), m.matmul(u, m.matrix_transpose(u))


# ---------------------------------------------------------------------------
# matmul, tensordot, vecdot (main namespace)
# ---------------------------------------------------------------------------
for _variant, _sx, _sy in [("mat_mat", (2, 3), (3, 4)), ("batch_mat", (2, 2, 3), (3, 4)),
                           ("batch_batch", (2, 2, 3), (2, 3, 4)), ("bcast_batch", (1, 2, 3), (3, 3, 2)),
                           ("vec_mat", (3,), (3, 4)), ("mat_vec", (2, 3), (3,)), ("vec_vec", (3,), (3,))]:
    case("matmul", _variant, lambda xp, x, y: x @ y, lambda xp, x, y: xp.matmul(x, y), F(_sx), F(_sy))
with depth:
    for _variant, _sx, _sy in [("batch_vec", (5, 2, 3), (3,)), ("vec_batch", (3,), (5, 3, 2)), ("mat_batch", (2, 3), (5, 3, 4)),
                               ("bcast_4d", (5, 1, 2, 3), (4, 3, 2))]:
        case("matmul", _variant, lambda xp, x, y: x @ y, lambda xp, x, y: xp.matmul(x, y), F(_sx), F(_sy))
with depth:
    case("matmul", "function", lambda xp, x, y: O.matmul(x, y), lambda xp, x, y: x @ y, F((2, 3)), F((3, 2)))
    case("matmul", "raw_left_function", lambda xp, a, y: O.matmul(a, y), lambda xp, a, y: xp.matmul(a, y),
         F((3,), raw=True), F((3,)))
mirror("tensordot", "axes1", "tensordot", F((2, 3)), F((3, 4)), kw={"axes": 1})
mirror("tensordot", "axes2", "tensordot", F((2, 3, 4)), F((3, 4, 2)), kw={"axes": 2})
with depth:
    mirror("tensordot", "axes0_outer", "tensordot", F((2,)), F((3,)), kw={"axes": 0})
    mirror("tensordot", "crossed_pairs", "tensordot", F((2, 3, 4)), F((4, 2, 3)), kw={"axes": ([2, 0], [0, 1])})
    case("tensordot", "negative_axes", lambda xp, x, y: LA.tensordot(x, y, axes=([-1], [-2])),
         lambda xp, x, y: xp.tensordot(x, y, axes=([2], [0])), F((2, 3, 4)), F((4, 2)))
mirror("vecdot", "bcast", "vecdot", F((2, 3)), F((3,)))
# complex: the standard's vecdot conjugates its first argument (the reference written so: a
# namespace that does not is its own reference)
case("vecdot", "complex", lambda xp, x, y: LA.vecdot(x, y), lambda xp, x, y: xp.sum(xp.conj(x) * y, axis=-1),
     F((2, 3), "complex"), F((3,), "complex"), requires=_CPLX)
with depth:
    mirror("vecdot", "same_shape", "vecdot", F((2, 3)), F((2, 3)))
    mirror("vecdot", "bcast_batch", "vecdot", F((2, 1, 3)), F((4, 3)))
    mirror("vecdot", "axis_minus_2", "vecdot", F((3, 2)), F((3, 2)), kw={"axis": -2})
    mirror("vecdot", "vectors_to_0d", "vecdot", F((4,)), F((4,)))

# ---------------------------------------------------------------------------
# The linalg extension: linear maps and products
# ---------------------------------------------------------------------------
mirror("linalg_outer", "vec", "linalg.outer", F((3,)), F((2,)))
mirror("linalg_cross", "3vec", "linalg.cross", F((2, 3)), F((2, 3)))
with depth:
    mirror("linalg_cross", "vectors", "linalg.cross", F((3,)), F((3,)))
    mirror("linalg_cross", "bcast", "linalg.cross", F((2, 3)), F((3,)))
    mirror("linalg_cross", "axis_minus_2", "linalg.cross", F((3, 2)), F((3, 2)), kw={"axis": -2})
mirror("linalg_diagonal", "offset", "linalg.diagonal", F((2, 3, 3)), kw={"offset": 1})
with depth:
    mirror("linalg_diagonal", "square", "linalg.diagonal", F((3, 3)))
    mirror("linalg_diagonal", "offset_1_wide", "linalg.diagonal", F((2, 4)), kw={"offset": 1})
    mirror("linalg_diagonal", "offset_minus_1_batched", "linalg.diagonal", F((2, 4, 3)), kw={"offset": -1})
    mirror("linalg_diagonal", "empty", "linalg.diagonal", F((2, 3)), kw={"offset": 5})
mirror("linalg_trace", "batch", "linalg.trace", F((2, 3, 3)))
with depth:
    mirror("linalg_trace", "square", "linalg.trace", F((3, 3)))
    mirror("linalg_trace", "offset_batched", "linalg.trace", F((2, 3, 4)), kw={"offset": -1})
    case("linalg_trace", "dtype_float64", lambda xp, x: LA.trace(x, dtype=xp.float64), lambda xp, x: xp.linalg.trace(x, dtype=xp.float64),
           F((3, 2)), requires=("float64",))

# ---------------------------------------------------------------------------
# The linalg extension: norms
# ---------------------------------------------------------------------------
mirror("linalg_vector_norm", "all", "linalg.vector_norm", F((2, 3), "nonzero"))
mirror("linalg_vector_norm", "ord1_axis", "linalg.vector_norm", F((2, 3), "nonzero"), kw={"axis": 1, "ord": 1})
with depth:
    for _variant, _shape, _kw in [("ord_inf_axes_keepdims", (2, 3, 2), {"axis": (0, 2), "keepdims": True, "ord": INF}),
                                  ("ord_minus_inf", (2, 4), {"axis": -1, "ord": -INF}), ("ord_3", (4,), {"ord": 3}),
                                  ("ord_half", (3, 2), {"axis": 0, "ord": 0.5}), ("ord_minus_1", (3,), {"ord": -1}),
                                  ("0d", (), {})]:
        mirror("linalg_vector_norm", _variant, "linalg.vector_norm", F(_shape, "distinct"), kw=_kw)
    case("linalg_vector_norm", "ord_0", lambda xp, x: LA.vector_norm(x, ord=0) * x, lambda xp, x: xp.linalg.vector_norm(x, ord=0) * x,
           F((3,), "nonzero"))
mirror("linalg_matrix_norm", "fro", "linalg.matrix_norm", F((2, 3, 3)))
with depth:
    mirror("linalg_matrix_norm", "fro_keepdims_batched", "linalg.matrix_norm", F((2, 3, 2)), kw={"keepdims": True})
    for _name, _ord in [("nuc", "nuc"), ("2", 2), ("-2", -2), ("1", 1), ("-1", -1), ("inf", INF), ("-inf", -INF)]:
        mirror("linalg_matrix_norm", f"ord_{_name}", "linalg.matrix_norm", F((3, 3) if _name in ("2", "-2", "nuc") else (2, 3), "distinct"),
               kw={"ord": _ord})
    mirror("linalg_matrix_norm", "ord_2_batched_keepdims", "linalg.matrix_norm", F((2, 3, 2), "distinct"),
           kw={"ord": 2, "keepdims": True})

# ---------------------------------------------------------------------------
# The linalg extension: inverses, determinants, solves, powers
# ---------------------------------------------------------------------------
case("linalg_matrix_power", "3", lambda xp, x: LA.matrix_power(x, 3), lambda xp, x: xp.linalg.matrix_power(x, 3), F((3, 3)))
case("linalg_matrix_power", "neg", lambda xp, x: LA.matrix_power(_spd(O, x), -2),
       lambda xp, x: xp.linalg.matrix_power(_spd(xp, x), -2), F((3, 3)))
with depth:
    case("linalg_matrix_power", "1", lambda xp, x: LA.matrix_power(x, 1), lambda xp, x: xp.linalg.matrix_power(x, 1), F((2, 2)))
    case("linalg_matrix_power", "0", lambda xp, x: LA.matrix_power(x, 0) * x, lambda xp, x: xp.linalg.matrix_power(x, 0) * x, F((2, 2)))
    case("linalg_matrix_power", "minus_2_batched", lambda xp, x: LA.matrix_power(x, -2), lambda xp, x: xp.linalg.matrix_power(x, -2),
           F((2, 3, 3), "wellcond"))
mirror("linalg_svdvals", "2d", "linalg.svdvals", F((3, 2), "distinct"))
with depth:
    mirror("linalg_svdvals", "wide_batched", "linalg.svdvals", F((2, 2, 3)))
case("linalg_inv", "spd", lambda xp, x: LA.inv(_spd(O, x)), lambda xp, x: xp.linalg.inv(_spd(xp, x)), F((3, 3)))
with depth:
    mirror("linalg_inv", "general", "linalg.inv", F((3, 3), "wellcond"))
    mirror("linalg_inv", "batched", "linalg.inv", F((2, 3, 3), "wellcond"))
case("linalg_det", "spd", lambda xp, x: LA.det(_spd(O, x)), lambda xp, x: xp.linalg.det(_spd(xp, x)), F((3, 3)))
case("linalg_det", "general", lambda xp, x: LA.det(x), lambda xp, x: xp.linalg.det(x), F((2, 3, 3)))
with depth:
    mirror("linalg_det", "wellcond", "linalg.det", F((3, 3), "wellcond"))
case("linalg_slogdet", "spd", lambda xp, x: LA.slogdet(_spd(O, x)), lambda xp, x: xp.linalg.slogdet(_spd(xp, x)),
       F((3, 3)), order=0)
case("linalg_slogdet", "grad", lambda xp, x: LA.slogdet(_spd(O, x))[1], lambda xp, x: xp.linalg.slogdet(_spd(xp, x))[1],
       F((3, 3)))
with depth:
    mirror("linalg_slogdet", "negative_det", "linalg.slogdet", lit([[0.5, 2.0, 0.1], [1.5, 0.3, -0.4], [0.2, -0.7, 1.1]]))
    case("linalg_slogdet", "batched_logabsdet", lambda xp, x: LA.slogdet(x)[1], lambda xp, x: xp.linalg.slogdet(x)[1],
           F((2, 3, 3), "wellcond"))
case("linalg_solve", "matrix", lambda xp, a, b: LA.solve(_spd(O, a), b), lambda xp, a, b: xp.linalg.solve(_spd(xp, a), b),
       F((3, 3)), F((3, 2)))
with depth:
    for _variant, _sa, _sb in [("general_matrix_rhs", (3, 3), (3, 2)), ("vector_rhs", (3, 3), (3,)),
                               ("batched_bcast_rhs", (2, 3, 3), (3, 2)), ("batched_vector_rhs", (2, 3, 3), (3,))]:
        mirror("linalg_solve", _variant, "linalg.solve", F(_sa, "wellcond"), F(_sb))
case("linalg_cholesky", "spd", lambda xp, x: LA.cholesky(_spd(O, x)), lambda xp, x: xp.linalg.cholesky(_spd(xp, x)), F((3, 3)))
with depth:
    case("linalg_cholesky", "upper_batched", lambda xp, x: LA.cholesky(_spd(O, x), upper=True),
           lambda xp, x: xp.linalg.cholesky(_spd(xp, x), upper=True), F((2, 3, 3)))
case("linalg_pinv", "tall", lambda xp, x: LA.pinv(x), lambda xp, x: xp.linalg.pinv(x), F((3, 2), "distinct"))
with depth:
    mirror("linalg_pinv", "wide", "linalg.pinv", F((2, 4)))
    mirror("linalg_pinv", "square_batched", "linalg.pinv", F((2, 3, 3), "wellcond"))
case("linalg_matrix_rank", "spd", lambda xp, x: LA.matrix_rank(_spd(O, x)), lambda xp, x: xp.linalg.matrix_rank(_spd(xp, x)),
       F((3, 3)), order=0)

# ---------------------------------------------------------------------------
# The linalg extension: decompositions
# ---------------------------------------------------------------------------
case("linalg_eigvalsh", "sym", lambda xp, x: LA.eigvalsh(_sym(O, x)), lambda xp, x: xp.linalg.eigvalsh(_sym(xp, x)), F((3, 3)))
with depth:
    case("linalg_eigvalsh", "spd", lambda xp, x: LA.eigvalsh(_spd(O, x)), lambda xp, x: xp.linalg.eigvalsh(_spd(xp, x)), F((3, 3)))
    case("linalg_eigvalsh", "symmetric_batched", lambda xp, x: LA.eigvalsh(x + O.matrix_transpose(x)),
           lambda xp, x: xp.linalg.eigvalsh(x + xp.matrix_transpose(x)), F((2, 3, 3)))
case("linalg_eigh", "sym", lambda xp, x: LA.eigh(_sym(O, x)), lambda xp, x: xp.linalg.eigh(_sym(xp, x)), F((3, 3)), order=0,
     up_to_sign=True)
case("linalg_eigh", "grad", lambda xp, x: _eigh_invariant(O, LA.eigh(_sym(O, x))),
       lambda xp, x: _eigh_invariant(xp, xp.linalg.eigh(_sym(xp, x))), F((3, 3)))
with depth:
    case("linalg_eigh", "values_and_vectors", lambda xp, x: _eigh_parts(O, LA.eigh(_spd(O, x))),
           lambda xp, x: _eigh_parts(xp, xp.linalg.eigh(_spd(xp, x))), F((3, 3)))
    case("linalg_eigh", "batched", lambda xp, x: _eigh_parts(O, LA.eigh(_spd(O, x))),
           lambda xp, x: _eigh_parts(xp, xp.linalg.eigh(_spd(xp, x))), F((2, 3, 3)))
    case("linalg_eigh", "symmetric_indefinite_vectors", lambda xp, x: _scaled(O, LA.eigh(x + O.matrix_transpose(x))[1]),
           lambda xp, x: _scaled(xp, xp.linalg.eigh(x + xp.matrix_transpose(x))[1]), F((3, 3)))
case("linalg_svd", "tall", lambda xp, x: LA.svd(x, full_matrices=False), lambda xp, x: xp.linalg.svd(x, full_matrices=False),
       F((3, 2), "distinct"), order=0, up_to_sign=True)
case("linalg_svd", "grad", lambda xp, x: _svd_invariant(O, LA.svd(x, full_matrices=False)),
       lambda xp, x: _svd_invariant(xp, xp.linalg.svd(x, full_matrices=False)), F((3, 2), "distinct"))
with depth:
    case("linalg_svd", "square", lambda xp, x: _svd_parts(O, LA.svd(x)), lambda xp, x: _svd_parts(xp, xp.linalg.svd(x)), F((3, 3)))
    case("linalg_svd", "tall_reduced", lambda xp, x: _svd_parts(O, LA.svd(x, full_matrices=False)),
           lambda xp, x: _svd_parts(xp, xp.linalg.svd(x, full_matrices=False)), F((4, 3)))
    case("linalg_svd", "wide_reduced_batched", lambda xp, x: _svd_parts(O, LA.svd(x, full_matrices=False))[:2],
           lambda xp, x: _svd_parts(xp, xp.linalg.svd(x, full_matrices=False))[:2], F((2, 2, 4)))
    case("linalg_svd", "wide_reduced_vh_projector", lambda xp, x: (lambda vh: O.matrix_transpose(vh) @ vh)(LA.svd(x, full_matrices=False)[2]),
           lambda xp, x: (lambda vh: xp.matrix_transpose(vh) @ vh)(xp.linalg.svd(x, full_matrices=False)[2]), F((2, 4)))
    case("linalg_svd", "tall_full_matrices", lambda xp, x: _svd_parts(O, LA.svd(x)), lambda xp, x: _svd_parts(xp, xp.linalg.svd(x)),
           F((4, 2)))
    case("linalg_svd", "wide_full_matrices", lambda xp, x: _svd_parts(O, LA.svd(x)), lambda xp, x: _svd_parts(xp, xp.linalg.svd(x)),
           F((2, 4)))
case("linalg_qr", "tall", lambda xp, x: LA.qr(x), lambda xp, x: xp.linalg.qr(x), F((3, 2), "distinct"), up_to_sign=True)
with depth:
    case("linalg_qr", "square", lambda xp, x: tuple(LA.qr(x)), lambda xp, x: tuple(xp.linalg.qr(x)), F((3, 3)), up_to_sign=True)
    case("linalg_qr", "tall_batched", lambda xp, x: tuple(LA.qr(x)), lambda xp, x: tuple(xp.linalg.qr(x)), F((2, 4, 3)), up_to_sign=True)
    case("linalg_qr", "wide", lambda xp, x: tuple(LA.qr(x)), lambda xp, x: tuple(xp.linalg.qr(x)), F((2, 4)), up_to_sign=True)
    case("linalg_qr", "r_only", lambda xp, x: LA.qr(x)[1], lambda xp, x: xp.linalg.qr(x)[1], F((4, 3)), up_to_sign=True)
    case("linalg_qr", "complete_square", lambda xp, x: tuple(LA.qr(x, mode="complete")),
           lambda xp, x: tuple(xp.linalg.qr(x, mode="complete")), F((3, 3)), up_to_sign=True)


# ---------------------------------------------------------------------------
# FFT: complex results through their real and imaginary parts...
# ---------------------------------------------------------------------------
def _parts(m, z):
    return m.concat([m.reshape(m.real(z), (-1,)), m.reshape(m.imag(z), (-1,))], axis=0)


for _name, _shape, _kw in [("rfft", (2, 5), {}), ("rfftn", (2, 4), {}), ("ihfft", (2, 5), {"norm": "ortho"})]:
    case("fft_" + _name, "real_input", lambda xp, x, _n=_name, _kw=_kw: _parts(O, getattr(FFT, _n)(x, **_kw)),
         lambda xp, x, _n=_name, _kw=_kw: _parts(xp, getattr(xp.fft, _n)(x, **_kw)), F(_shape), requires=_CPLX)
for _name, _kw in [("fft", {}), ("ifft", {"axis": 0}), ("fftn", {}), ("ifftn", {"axes": (1,)}), ("fft", {"n": 4, "norm": "ortho"})]:
    case("fft_" + _name, "complex_input" + ("_n" if "n" in _kw else ""),
         lambda xp, x, _n=_name, _kw=_kw: _parts(O, getattr(FFT, _n)(FFT.rfft(x), **_kw)),
         lambda xp, x, _n=_name, _kw=_kw: _parts(xp, getattr(xp.fft, _n)(xp.fft.rfft(x), **_kw)), F((2, 5)), requires=_CPLX)
# NumPy also takes real input to the complex transforms (not the standard: a backend may xfail these).
for _name in ("fft", "ifft", "fftn", "ifftn"):
    case("fft_" + _name, "np_real_input", lambda xp, x, _n=_name: _parts(O, getattr(FFT, _n)(x)),
         lambda xp, x, _n=_name: _parts(xp, getattr(xp.fft, _n)(x)), F((2, 4)), requires=_CPLX)
case("fft_irfft", "of_rfft", lambda xp, x: FFT.irfft(FFT.rfft(x) * 2.0, n=5),
     lambda xp, x: xp.fft.irfft(xp.fft.rfft(x) * 2.0, n=5), F((2, 5)), requires=_CPLX)
case("fft_irfftn", "of_rfftn", lambda xp, x: FFT.irfftn(FFT.rfftn(x), s=(2, 4), axes=(0, 1)),
     lambda xp, x: xp.fft.irfftn(xp.fft.rfftn(x), s=(2, 4), axes=(0, 1)), F((2, 4)), requires=_CPLX)
case("fft_hfft", "of_ihfft", lambda xp, x: FFT.hfft(FFT.ihfft(x) * 3.0, n=5),
     lambda xp, x: xp.fft.hfft(xp.fft.ihfft(x) * 3.0, n=5), F((2, 5)), requires=_CPLX)
mirror("fft_fftshift", "axes", "fft.fftshift", F((3, 4)), kw={"axes": (1,)})
mirror("fft_ifftshift", "all", "fft.ifftshift", F((3, 4)))
case("fft_fftfreq", "8", lambda xp: FFT.fftfreq(8, d=0.5, dtype=xp.float32),
     lambda xp: xp.fft.fftfreq(8, d=0.5, dtype=xp.float32), order=0)
case("fft_rfftfreq", "8", lambda xp: FFT.rfftfreq(8, dtype=xp.float32), lambda xp: xp.fft.rfftfreq(8, dtype=xp.float32), order=0)

# ... and each transform directly, on complex inputs where the standard asks for them. A
# transform is linear: its gradient is checked by the complex dot-product test, and its
# vjp as a function of the output gradient (it must be the transform's own adjoint's adjoint).
_ADJOINT = {"order": 1, "grad_of_vjp": True, "tol": {"eps": 1e-4, "grad_rtol": 1e-6, "grad_atol": 1e-8}}
with depth:
    for _name, _variant, _spec, _kw in [
        ("fft", "default", F((4,), "complex"), {}), ("fft", "n_pads", F((4,), "complex"), {"n": 6}),
        ("fft", "n_crops_axis_0", F((5, 2), "complex"), {"n": 3, "axis": 0}), ("fft", "ortho", F((2, 3), "complex"), {"norm": "ortho"}),
        ("fft", "forward", F((3,), "complex"), {"norm": "forward"}),
        ("ifft", "default", F((5,), "complex"), {}), ("ifft", "n_crops_forward", F((5,), "complex"), {"n": 3, "norm": "forward"}),
        ("ifft", "n_pads_ortho", F((2, 3), "complex"), {"n": 4, "norm": "ortho"}),
        ("fftn", "default", F((2, 3), "complex"), {}), ("fftn", "s_pads", F((2, 3), "complex"), {"s": (3, 4), "axes": (0, 1)}),
        ("fftn", "axes_0", F((2, 3), "complex"), {"axes": (0,)}),
        ("fftn", "s_crops_reordered_axes_ortho", F((3, 4), "complex"), {"s": (2, 2), "axes": (-1, -2), "norm": "ortho"}),
        ("ifftn", "default", F((2, 3), "complex"), {}),
        ("ifftn", "s_forward", F((2, 3), "complex"), {"s": (3, 2), "axes": (0, 1), "norm": "forward"}),
        ("rfft", "odd", F((5,)), {}), ("rfft", "even", F((4,)), {}), ("rfft", "n_pads", F((4,)), {"n": 7}),
        ("rfft", "n_crops_ortho", F((5,)), {"n": 4, "norm": "ortho"}), ("rfft", "axis_0_forward", F((4, 2)), {"axis": 0, "norm": "forward"}),
        ("irfft", "default_even", F((3,), "complex"), {}), ("irfft", "n_odd", F((3,), "complex"), {"n": 5}),
        ("irfft", "n_pads", F((3,), "complex"), {"n": 8}),
        ("irfft", "n_crops_axis_0_forward", F((4, 2), "complex"), {"n": 3, "axis": 0, "norm": "forward"}),
        ("irfft", "ortho", F((2, 4), "complex"), {"norm": "ortho"}),
        ("rfftn", "default", F((2, 4)), {}), ("rfftn", "s_pads_odd", F((2, 4)), {"s": (3, 5), "axes": (0, 1)}),
        ("rfftn", "axes_0_ortho", F((3, 2)), {"axes": (0,), "norm": "ortho"}), ("rfftn", "two_of_three_axes", F((3, 4, 2)), {"axes": (0, 1)}),
        ("irfftn", "default", F((2, 3), "complex"), {}), ("irfftn", "s_odd", F((2, 3), "complex"), {"s": (3, 5), "axes": (0, 1)}),
        ("irfftn", "axes_0_forward", F((3, 2), "complex"), {"axes": (0,), "norm": "forward"}),
        ("hfft", "default", F((3,), "complex"), {}), ("hfft", "n_odd", F((3,), "complex"), {"n": 5}),
        ("hfft", "n_crops_ortho", F((4,), "complex"), {"n": 2, "norm": "ortho"}),
        ("hfft", "axis_0_forward", F((3, 2), "complex"), {"axis": 0, "norm": "forward"}),
        ("ihfft", "odd", F((5,)), {}), ("ihfft", "even_n_pads", F((4,)), {"n": 6}), ("ihfft", "forward", F((2, 4)), {"norm": "forward"}),
        ("fftshift", "default", F((5,)), {}), ("fftshift", "axes_1", F((2, 3)), {"axes": (1,)}),
        ("fftshift", "complex_axis_0", F((3, 2), "complex"), {"axes": 0}),
        ("ifftshift", "complex_axes_0", F((4, 3), "complex"), {"axes": (0,)}),
    ]:
        mirror("fft_" + _name, _variant, "fft." + _name, _spec, kw=_kw, requires=_CPLX, **_ADJOINT)


def private(name, variant, fn, ref, *args, **kw):
    """A case for a private row, called through the table (only while the row exists)."""
    if name in REGISTRY:
        case(name, variant, lambda xp, *a: fn(xp, lambda *xs, **p: apply(REGISTRY[name], xs, p or None), *a), ref, *args, **kw)


# The private rows between a real input and complex gradients, directly.
private("fft_as_complex", "parts", lambda xp, row, x: _parts(O, row(x)),
        lambda xp, x: _parts(xp, xp.astype(x, xp.complex128 if x.dtype == xp.float64 else xp.complex64)), F((2, 3)),
        requires=_CPLX)
private("fft_real_part", "of_rfft", lambda xp, row, x: row(FFT.rfft(x)), lambda xp, x: xp.real(xp.fft.rfft(x)), F((2, 4)),
        requires=_CPLX)


# ---------------------------------------------------------------------------
# Neural-network functions (rows of the table) and composed losses
# ---------------------------------------------------------------------------
def _softmax(xp, x, axis):
    e = xp.exp(x - xp.max(x, axis=axis, keepdims=True))
    return e / xp.sum(e, axis=axis, keepdims=True)


def _log_softmax(xp, x, axis):
    s = x - xp.max(x, axis=axis, keepdims=True)
    return s - xp.log(xp.sum(xp.exp(s), axis=axis, keepdims=True))


case("relu", "2d", lambda xp, x: F_.relu(x), lambda xp, x: xp.where(x > 0, x, xp.zeros_like(x)), F((2, 3), "nonzero"))
case("sigmoid", "2d", lambda xp, x: F_.sigmoid(x), lambda xp, x: 1 / (1 + xp.exp(-x)), F((2, 3)))
case("softmax", "axis1", lambda xp, x: F_.softmax(x), lambda xp, x: _softmax(xp, x, 1), F((2, 4)))
case("softmax", "axis0", lambda xp, x: F_.softmax(x, axis=0), lambda xp, x: _softmax(xp, x, 0), F((3, 2)))
with depth:
    case("softmax", "axis0_3d", lambda xp, x: F_.softmax(x, axis=0), lambda xp, x: _softmax(xp, x, 0), F((3, 2, 2)))
case("log_softmax", "axis1", lambda xp, x: F_.log_softmax(x), lambda xp, x: _log_softmax(xp, x, 1), F((2, 4)))
with depth:
    case("log_softmax", "axis_minus_1_3d", lambda xp, x: F_.log_softmax(x, axis=-1), lambda xp, x: _log_softmax(xp, x, -1),
         F((2, 3, 4)))
case("linear", "bias", lambda xp, x, w, b: F_.linear(x, w, b), lambda xp, x, w, b: x @ xp.matrix_transpose(w) + b,
     F((4, 3)), F((2, 3)), F((2,)))
with depth:
    case("linear", "no_bias", lambda xp, x, w: F_.linear(x, w), lambda xp, x, w: x @ xp.matrix_transpose(w), F((4, 3)), F((2, 3)))
case("softmax_cross_entropy", "mean",
     lambda xp, x, t: F_.softmax_cross_entropy(x, t),
     lambda xp, x, t: -xp.mean(xp.sum(_log_softmax(xp, x, 1) * _onehot(xp, t, 3, x.dtype), axis=1)),
     F((4, 3)), ints([0, 2, 1, 2]))
_T = [0, 2, -1, 2]
case("softmax_cross_entropy", "ignore_label", lambda xp, x, t: F_.softmax_cross_entropy(x, t),
     lambda xp, x, t: -xp.sum(_log_softmax(xp, x, 1) * _onehot(xp, t, 3, x.dtype)) / 3, F((4, 3)), ints(_T))
private("softmax_cross_entropy_label_mask", "ignore_label", lambda xp, row, x, t: row(x, t, ignore_label=-1),
        lambda xp, x, t: _onehot(xp, t, 3, index_dtype(xp)) == 1, F((4, 3)), ints(_T), order=0)
private("softmax_cross_entropy_valid_count", "ignore_label", lambda xp, row, x, t: row(x, t, ignore_label=-1),
        lambda xp, x, t: xp.asarray(3.0, dtype=x.dtype), F((4, 3)), ints(_T), order=0)
private("softmax_cross_entropy_valid_count", "all_ignored", lambda xp, row, x, t: row(x, t, ignore_label=-1),
        lambda xp, x, t: xp.asarray(1.0, dtype=x.dtype), F((2, 3)), ints([-1, -1]), order=0)
private("loss_batch_size", "rows", lambda xp, row, x: row(x), lambda xp, x: xp.asarray(4.0, dtype=x.dtype), F((4, 3)),
        order=0)
private("softmax_cross_entropy_nll", "ignore_label",
        lambda xp, row, x, t: row(NN.log_softmax(x, axis=1), NN.label_mask(x, t, -1), NN.valid_count(x, t, -1)),
        lambda xp, x, t: -xp.sum(_log_softmax(xp, x, 1) * _onehot(xp, t, 3, x.dtype)) / 3, F((4, 3)), ints(_T))
private("softmax_cross_entropy_masked_nll", "ignore_label",
        lambda xp, row, x, t: row(x, NN.label_mask(x, t, -1), NN.valid_count(x, t, -1)),
        lambda xp, x, t: -xp.sum(_log_softmax(xp, x, 1) * _onehot(xp, t, 3, x.dtype)) / 3, F((4, 3)), ints(_T))


def _embedded(xp, t, w):
    """Rows of w at t, zero where t is -1 (ignored)."""
    ignored = t == -1
    rows = xp.take(w, xp.where(ignored, xp.zeros_like(t), t), axis=0)
    return xp.where(xp.reshape(ignored, (-1, 1)), xp.zeros_like(rows), rows)


case("embed_id", "ignore_label", lambda xp, t, w: F_.embed_id(t, w, ignore_label=-1), _embedded, ints(_T), F((3, 2)))
private("embed_id_ids", "ignore_label", lambda xp, row, t: row(t, n_rows=3, ignore_label=-1),
        lambda xp, t: xp.where(t == -1, xp.zeros_like(t), t), ints(_T), order=0)
case("mean_squared_error", "plain", lambda xp, x, y: F_.mean_squared_error(x, y),
     lambda xp, x, y: xp.mean((x - y) * (x - y)), F((2, 3)), F((2, 3)))
private("sigmoid_cross_entropy_labels", "ints", lambda xp, row, t: row(t), lambda xp, t: t,
        ints([[0, 1], [1, -1]]), order=0)
private("sigmoid_cross_entropy_probabilities", "soft", lambda xp, row, t: row(t), lambda xp, t: t,
        lit([[0.25, 0.5], [0.75, 0.375]]))
case("sigmoid_cross_entropy", "mean", lambda xp, x, t: F_.sigmoid_cross_entropy(x, t),
     lambda xp, x, t: xp.mean(xp.log1p(xp.exp(x)) - x * xp.astype(t, x.dtype)), F((2, 2)), ints([[0, 1], [1, 0]]))
private("dropout_mask", "shape", lambda xp, row, x: row(x, ratio=0.25), lambda xp, x: xp.empty_like(x), F((3, 4)),
        order=0, values=False)
case("dropout", "grad", lambda xp, x: _seeded_dropout(x), lambda xp, x: _seeded_dropout(x).data, F((3, 4)), values=False)

# Random draws (stochastic functions): shapes and dtypes; their REINFORCE gradients are sampled, not differenced.
case("bernoulli", "shape", lambda xp, p: F_.bernoulli(p), lambda xp, p: xp.empty_like(p), F((3, 4), "prob"),
     values=False)
case("categorical", "shape", lambda xp, p: F_.categorical(p), lambda xp, p: xp.zeros((2,), dtype=index_dtype(xp)),
     F((2, 3), "pos"), values=False)
case("multinomial", "shape", lambda xp, p: F_.multinomial(p), lambda xp, p: xp.zeros((2, 1), dtype=index_dtype(xp)),
     F((2, 3), "pos"), values=False)
case("normal", "shape", lambda xp, m, s: F_.normal(m, s), lambda xp, m, s: xp.empty_like(m), F((2, 3)), F((2, 3), "pos"),
     values=False)


def _seeded_dropout(x):
    """Dropout with the shared generator reseeded, so the mask is the same at every call."""
    import polygrad as pg

    pg.seed(11)
    try:
        return F_.dropout(x, ratio=0.25)
    finally:
        pg.seed(None)

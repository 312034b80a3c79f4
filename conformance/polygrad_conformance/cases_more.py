"""The rest of the standard's functions (and polygrad's extension rows), as
cases of :mod:`polygrad_conformance.cases`. Most mirror the namespace: the
polygrad op ``name`` against ``xp.name`` with the same arguments."""

from __future__ import annotations

import math

import polygrad.functions as F_
import polygrad.ops as O
import polygrad.ops.fft as FFT
import polygrad.ops.linalg as LA
from polygrad.ops import REGISTRY, apply
from polygrad_conformance.cases import C, F, bools, case, ints


def _xp_fn(xp, path):
    obj = xp
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _pg_fn(path):
    if path.startswith("linalg."):
        return getattr(LA, path[7:])
    if path.startswith("fft."):
        return getattr(FFT, path[4:])
    return getattr(O, path)


def mirror(op, variant, path, *args, kw=None, order=2, requires=(), values=True):
    """Case: ``polygrad <path>(*args, **kw)`` against ``xp.<path>(*args, **kw)``."""
    kw = dict(kw or {})
    case(op, variant, lambda xp, *a: _pg_fn(path)(*a, **kw), lambda xp, *a: _xp_fn(xp, path)(*a, **kw), *args,
         order=order, requires=requires, values=values)


def floats(values):
    return C(lambda xp, dt: xp.asarray(values, dtype=dt))


# ---------------------------------------------------------------------------
# Element-wise
# ---------------------------------------------------------------------------
for _name, _kind in [("acos", "unit"), ("asin", "unit"), ("atan", "any"), ("atanh", "unit"), ("acosh", "gt1"),
                     ("asinh", "any"), ("cosh", "any"), ("sinh", "any"), ("tan", "any"), ("expm1", "any"),
                     ("log1p", "pos"), ("log2", "pos"), ("log10", "pos"), ("square", "any"), ("reciprocal", "nonzero")]:
    mirror(_name, "2d", _name, F((2, 3), _kind))
for _name in ("ceil", "floor", "round", "trunc", "isnan", "isinf", "isfinite", "signbit"):
    mirror(_name, "2d", _name, F((2, 3), "grid"), order=0)
mirror("isnan", "nan_inf", "isnan", floats([1.0, math.nan, -math.inf]), order=0)
mirror("isinf", "nan_inf", "isinf", floats([1.0, math.nan, -math.inf]), order=0)
mirror("logical_not", "bool", "logical_not", bools([True, False, True]), order=0)
mirror("bitwise_invert", "int", "bitwise_invert", ints([0, 5, -3]), order=0)
for _name, _kx, _ky in [("atan2", "nonzero", "nonzero"), ("copysign", "nonzero", "nonzero"), ("hypot", "nonzero", "any"),
                        ("logaddexp", "any", "any"), ("minimum", "distinct", "distinct2"), ("remainder", "nonzero", "gt1")]:
    mirror(_name, "same", _name, F((2, 3), _kx), F((2, 3), _ky))
mirror("minimum", "bcast_row", "minimum", F((2, 3), "distinct"), F((3,), "distinct2"))
mirror("floor_divide", "float", "floor_divide", F((2, 3), "nonzero"), F((2, 3), "gt1"), order=0)
mirror("nextafter", "float", "nextafter", F((2, 3)), F((2, 3)))
for _name in ("logical_and", "logical_or", "logical_xor"):
    mirror(_name, "bool", _name, bools([True, False, True, False]), bools([True, True, False, False]), order=0)
for _name in ("bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift"):
    mirror(_name, "int", _name, ints([12, 5, 7, 1]), ints([1, 2, 3, 0]), order=0)
case("clip", "both", lambda xp, x: O.clip(x, min=-0.5, max=0.5), lambda xp, x: xp.clip(x, min=-0.5, max=0.5),
     F((3, 4), "distinct"))
case("clip", "min_only", lambda xp, x: O.clip(x, min=0.0), lambda xp, x: xp.clip(x, min=0.0), F((3, 4), "distinct"))
case("erf", "2d", lambda xp, x: F_.erf(x),
     lambda xp, x: xp.reshape(xp.asarray([math.erf(v) for v in _flat(xp, x)], dtype=x.dtype), x.shape), F((2, 3)))
case("softplus", "2d", lambda xp, x: F_.softplus(x), lambda xp, x: xp.log1p(xp.exp(x)), F((2, 3)))
case("softplus", "beta", lambda xp, x: F_.softplus(x, beta=2.0), lambda xp, x: xp.log1p(xp.exp(2.0 * x)) / 2.0, F((2, 3)))


def _flat(xp, x):
    flat = xp.reshape(x, (-1,))
    return [float(flat[i]) for i in range(flat.shape[0])]


# Complex numbers: built from real leaves with rfft (real input, complex output, as the
# standard specifies), so gradients are checked on real inputs.
_CPLX = ("complex",)
case("real", "of_rfft", lambda xp, x: O.real(FFT.rfft(x)), lambda xp, x: xp.real(xp.fft.rfft(x)), F((2, 4)), requires=_CPLX)
case("imag", "of_rfft", lambda xp, x: O.imag(FFT.rfft(x)), lambda xp, x: xp.imag(xp.fft.rfft(x)), F((2, 4)), requires=_CPLX)
case("conj", "of_rfft", lambda xp, x: O.imag(O.conj(FFT.rfft(x))), lambda xp, x: xp.imag(xp.conj(xp.fft.rfft(x))),
     F((2, 4)), requires=_CPLX)

# ---------------------------------------------------------------------------
# Creation (their results are arrays of the current backend)
# ---------------------------------------------------------------------------
case("arange", "stop", lambda xp: O.arange(5), lambda xp: xp.arange(5), order=0)
case("arange", "float_step", lambda xp: O.arange(0.0, 1.0, 0.25, dtype=xp.float32),
     lambda xp: xp.arange(0.0, 1.0, 0.25, dtype=xp.float32), order=0)
case("zeros", "2d", lambda xp: O.zeros((2, 3), dtype=xp.float32), lambda xp: xp.zeros((2, 3), dtype=xp.float32), order=0)
case("ones", "2d", lambda xp: O.ones((2, 3), dtype=xp.int64), lambda xp: xp.ones((2, 3), dtype=xp.int64), order=0)
case("full", "2d", lambda xp: O.full((2, 3), 1.5, dtype=xp.float32), lambda xp: xp.full((2, 3), 1.5, dtype=xp.float32), order=0)
case("empty", "2d", lambda xp: O.empty((2, 3), dtype=xp.float32), lambda xp: xp.empty((2, 3), dtype=xp.float32), order=0,
     values=False)
case("eye", "square", lambda xp: O.eye(3, dtype=xp.float32), lambda xp: xp.eye(3, dtype=xp.float32), order=0)
case("eye", "offset", lambda xp: O.eye(3, 4, k=1, dtype=xp.float32), lambda xp: xp.eye(3, 4, k=1, dtype=xp.float32), order=0)
case("linspace", "5", lambda xp: O.linspace(0.0, 1.0, 5, dtype=xp.float32), lambda xp: xp.linspace(0.0, 1.0, 5, dtype=xp.float32),
     order=0)
mirror("empty_like", "2d", "empty_like", F((2, 3)), order=0, values=False)
case("full_like", "2d", lambda xp, x: O.full_like(x, 2.5), lambda xp, x: xp.full_like(x, 2.5), F((2, 3)), order=0)
mirror("from_dlpack", "raw", "from_dlpack", F((2, 3), raw=True))
mirror("asarray", "raw", "asarray", F((2, 3), raw=True))
case("asarray", "copy", lambda xp, x: O.asarray(x, copy=True), lambda xp, x: xp.asarray(x, copy=True), F((2, 3)))
for _name in ("tril", "triu"):
    mirror(_name, "k0", _name, F((3, 4)))
    mirror(_name, "k_neg", _name, F((2, 3, 3)), kw={"k": -1})

# ---------------------------------------------------------------------------
# Manipulation
# ---------------------------------------------------------------------------
case("concat", "axis0", lambda xp, x, y: O.concat([x, y], axis=0), lambda xp, x, y: xp.concat([x, y], axis=0),
     F((2, 3)), F((1, 3)))
case("concat", "axis_neg", lambda xp, x, y: O.concat((x, y), axis=-1), lambda xp, x, y: xp.concat((x, y), axis=-1),
     F((2, 3)), F((2, 2)))
case("stack", "axis1", lambda xp, x, y: O.stack([x, y], axis=1), lambda xp, x, y: xp.stack([x, y], axis=1), F((2, 3)), F((2, 3)))
case("unstack", "axis0", lambda xp, x: O.unstack(x, axis=0), lambda xp, x: xp.unstack(x, axis=0), F((2, 3)), order=0)
case("unstack", "grad", lambda xp, x: O.unstack(x, axis=1)[1] * 2.0 + O.unstack(x, axis=1)[0],
     lambda xp, x: x[:, 1] * 2.0 + x[:, 0], F((2, 3)))
mirror("flip", "all", "flip", F((2, 3)))
mirror("flip", "axis", "flip", F((2, 3)), kw={"axis": 1})
mirror("roll", "axis", "roll", F((2, 3)), kw={"shift": 1, "axis": 1})
mirror("roll", "flat", "roll", F((2, 3)), kw={"shift": -2})
case("repeat", "axis", lambda xp, x: O.repeat(x, 2, axis=0), lambda xp, x: xp.repeat(x, 2, axis=0), F((2, 3)))
case("tile", "2d", lambda xp, x: O.tile(x, (2, 1)), lambda xp, x: xp.tile(x, (2, 1)), F((2, 3)))

# ---------------------------------------------------------------------------
# Searching, sorting, sets
# ---------------------------------------------------------------------------
for _name in ("argmax", "argmin"):
    mirror(_name, "all", _name, F((3, 4), "distinct"), order=0)
    mirror(_name, "axis_keepdims", _name, F((3, 4), "distinct"), kw={"axis": 1, "keepdims": True}, order=0)
mirror("count_nonzero", "axis", "count_nonzero", F((3, 4), "grid"), kw={"axis": 0}, order=0)
mirror("argsort", "axis", "argsort", F((3, 4), "distinct"), kw={"axis": 1}, order=0)
mirror("sort", "axis", "sort", F((3, 4), "distinct"), kw={"axis": 1})
mirror("sort", "descending", "sort", F((3, 4), "distinct"), kw={"axis": 0, "descending": True})
mirror("searchsorted", "right", "searchsorted", floats([0.0, 1.0, 2.0, 3.0]), F((5,)), kw={"side": "right"}, order=0)
_DDS = ("data_dependent_shapes",)
mirror("nonzero", "2d", "nonzero", F((3, 4), "grid"), order=0, requires=_DDS)
mirror("isin", "ints", "isin", ints([[1, 2, 3], [3, 0, 1]]), ints([0, 3]), order=0)
for _name in ("unique_values", "unique_counts", "unique_inverse", "unique_all"):
    mirror(_name, "grid", _name, F((3, 4), "grid"), order=0, requires=_DDS)
case("unique_values", "grad", lambda xp, x: O.unique_values(x) * 2.0, lambda xp, x: xp.unique_values(x) * 2.0,
     F((6,), "distinct"), requires=_DDS)
for _name in ("unique_counts", "unique_inverse", "unique_all"):
    case(_name, "grad", lambda xp, x, _n=_name: getattr(O, _n)(x)[0] * 2.0,
         lambda xp, x, _n=_name: getattr(xp, _n)(x)[0] * 2.0, F((6,), "distinct"), requires=_DDS)

# ---------------------------------------------------------------------------
# Reductions and scans
# ---------------------------------------------------------------------------
mirror("prod", "all", "prod", F((2, 3), "nonzero"))
mirror("prod", "axis_keepdims", "prod", F((2, 3, 2), "nonzero"), kw={"axis": 1, "keepdims": True})
for _name in ("var", "std"):
    mirror(_name, "all", _name, F((2, 3)))
    mirror(_name, "axis_correction", _name, F((3, 4)), kw={"axis": 0, "correction": 1.0})
    mirror(_name, "axes_keepdims", _name, F((2, 3, 2)), kw={"axis": (0, 2), "keepdims": True})
mirror("cumulative_sum", "axis1", "cumulative_sum", F((2, 3)), kw={"axis": 1})
mirror("cumulative_sum", "include_initial", "cumulative_sum", F((4,)), kw={"include_initial": True})
mirror("cumulative_prod", "axis0", "cumulative_prod", F((3, 2), "nonzero"), kw={"axis": 0})
for _name in ("all", "any"):
    mirror(_name, "bool_axis", _name, bools([[True, False], [True, True]]), kw={"axis": 1}, order=0)
    mirror(_name, "float", _name, F((2, 3), "grid"), order=0)

# ---------------------------------------------------------------------------
# Indexing functions (take: repeated indices sum in backward)
# ---------------------------------------------------------------------------
_REP = [2, 0, 2, 2]
mirror("take", "axis0_repeated", "take", F((3, 4)), ints(_REP), kw={"axis": 0})
mirror("take", "axis1", "take", F((3, 4)), ints([3, 3, 0]), kw={"axis": 1})
mirror("take_along_axis", "axis1", "take_along_axis", F((3, 4)), ints([[0, 0], [3, 1], [2, 2]]), kw={"axis": 1})
case("take_grad", "axis0_repeated", lambda xp, g, i: O.take_grad(g, i, 0, (3, 2)),
     lambda xp, g, i: xp.matmul(xp.matrix_transpose(
         xp.astype(xp.reshape(i, (-1, 1)) == xp.reshape(xp.arange(3, dtype=i.dtype), (1, -1)), g.dtype)), g),
     F((4, 2)), ints(_REP))
case("take_along_axis_grad", "axis1", lambda xp, g, i: O.take_along_axis_grad(g, i, 1, (3, 4)),
     lambda xp, g, i: xp.sum(xp.astype(xp.expand_dims(i, axis=-1) == xp.arange(4, dtype=i.dtype), g.dtype)
                             * xp.expand_dims(g, axis=-1), axis=1),
     F((3, 2)), ints([[0, 0], [3, 1], [2, 2]]))

# ---------------------------------------------------------------------------
# Linear algebra
# ---------------------------------------------------------------------------
mirror("tensordot", "axes1", "tensordot", F((2, 3)), F((3, 4)), kw={"axes": 1})
mirror("tensordot", "axes2", "tensordot", F((2, 3, 4)), F((3, 4, 2)), kw={"axes": 2})
mirror("vecdot", "bcast", "vecdot", F((2, 3)), F((3,)))
mirror("linalg_outer", "vec", "linalg.outer", F((3,)), F((2,)))
mirror("linalg_cross", "3vec", "linalg.cross", F((2, 3)), F((2, 3)))
mirror("linalg_diagonal", "offset", "linalg.diagonal", F((2, 3, 3)), kw={"offset": 1})
mirror("linalg_trace", "batch", "linalg.trace", F((2, 3, 3)))
mirror("linalg_vector_norm", "all", "linalg.vector_norm", F((2, 3), "nonzero"))
mirror("linalg_vector_norm", "ord1_axis", "linalg.vector_norm", F((2, 3), "nonzero"), kw={"axis": 1, "ord": 1})
mirror("linalg_matrix_norm", "fro", "linalg.matrix_norm", F((2, 3, 3)))
case("linalg_matrix_power", "3", lambda xp, x: LA.matrix_power(x, 3), lambda xp, x: xp.linalg.matrix_power(x, 3), F((3, 3)))
case("linalg_matrix_power", "neg", lambda xp, x: LA.matrix_power(_spd(O, x), -2),
     lambda xp, x: xp.linalg.matrix_power(_spd(xp, x), -2), F((3, 3)))
mirror("linalg_svdvals", "2d", "linalg.svdvals", F((3, 2), "distinct"))


def _spd(m, x):
    """A well-conditioned symmetric positive definite matrix from ``x`` (works on arrays and Variables)."""
    return m.matmul(x, m.matrix_transpose(x)) + 3.0 * m.eye(x.shape[-1], dtype=x.dtype)


def _sym(m, x):
    return (x + m.matrix_transpose(x)) * 0.5 + m.asarray([[2.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, -2.0]], dtype=x.dtype)


case("linalg_inv", "spd", lambda xp, x: LA.inv(_spd(O, x)), lambda xp, x: xp.linalg.inv(_spd(xp, x)), F((3, 3)))
case("linalg_det", "spd", lambda xp, x: LA.det(_spd(O, x)), lambda xp, x: xp.linalg.det(_spd(xp, x)), F((3, 3)))
case("linalg_det", "general", lambda xp, x: LA.det(x), lambda xp, x: xp.linalg.det(x), F((2, 3, 3)))
case("linalg_slogdet", "spd", lambda xp, x: LA.slogdet(_spd(O, x)), lambda xp, x: xp.linalg.slogdet(_spd(xp, x)),
     F((3, 3)), order=0)
case("linalg_slogdet", "grad", lambda xp, x: LA.slogdet(_spd(O, x))[1], lambda xp, x: xp.linalg.slogdet(_spd(xp, x))[1],
     F((3, 3)))
case("linalg_solve", "matrix", lambda xp, a, b: LA.solve(_spd(O, a), b), lambda xp, a, b: xp.linalg.solve(_spd(xp, a), b),
     F((3, 3)), F((3, 2)))
case("linalg_cholesky", "spd", lambda xp, x: LA.cholesky(_spd(O, x)), lambda xp, x: xp.linalg.cholesky(_spd(xp, x)), F((3, 3)))
case("linalg_pinv", "tall", lambda xp, x: LA.pinv(x), lambda xp, x: xp.linalg.pinv(x), F((3, 2), "distinct"))
case("linalg_matrix_rank", "spd", lambda xp, x: LA.matrix_rank(_spd(O, x)), lambda xp, x: xp.linalg.matrix_rank(_spd(xp, x)),
     F((3, 3)), order=0)
case("linalg_eigvalsh", "sym", lambda xp, x: LA.eigvalsh(_sym(O, x)), lambda xp, x: xp.linalg.eigvalsh(_sym(xp, x)),
     F((3, 3)))
case("linalg_eigh", "sym", lambda xp, x: LA.eigh(_sym(O, x)), lambda xp, x: xp.linalg.eigh(_sym(xp, x)), F((3, 3)), order=0)
case("linalg_eigh", "grad", lambda xp, x: _eigh_invariant(O, LA.eigh(_sym(O, x))),
     lambda xp, x: _eigh_invariant(xp, xp.linalg.eigh(_sym(xp, x))), F((3, 3)))
case("linalg_svd", "tall", lambda xp, x: LA.svd(x, full_matrices=False), lambda xp, x: xp.linalg.svd(x, full_matrices=False),
     F((3, 2), "distinct"), order=0)
case("linalg_svd", "grad", lambda xp, x: _svd_invariant(O, LA.svd(x, full_matrices=False)),
     lambda xp, x: _svd_invariant(xp, xp.linalg.svd(x, full_matrices=False)), F((3, 2), "distinct"))
case("linalg_qr", "tall", lambda xp, x: LA.qr(x), lambda xp, x: xp.linalg.qr(x), F((3, 2), "distinct"))


def _eigh_invariant(m, res):
    """Eigenvalues and the squared eigenvector entries: unchanged by eigenvector signs."""
    w, v = res
    return m.concat([w, m.reshape(v * v, (-1,))], axis=0)


def _svd_invariant(m, res):
    u, s, vh = res
    return m.concat([s, m.reshape(u * u, (-1,)), m.reshape(vh * vh, (-1,))], axis=0)


# ---------------------------------------------------------------------------
# FFT (complex results are checked through their real and imaginary parts)
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
# Rows of polygrad.functions
# ---------------------------------------------------------------------------
private("sigmoid_cross_entropy_target", "ints", lambda xp, row, x, t: row(x, t),
        lambda xp, x, t: xp.astype(t, x.dtype), F((2, 2)), ints([[0, 1], [1, -1]]), order=0)
case("sigmoid_cross_entropy", "mean", lambda xp, x, t: F_.sigmoid_cross_entropy(x, t),
     lambda xp, x, t: xp.mean(xp.log1p(xp.exp(x)) - x * xp.astype(t, x.dtype)), F((2, 2)), ints([[0, 1], [1, 0]]))
private("dropout_mask", "shape", lambda xp, row, x: row(x, ratio=0.25), lambda xp, x: xp.empty_like(x), F((3, 4)),
        order=0, values=False)
case("dropout", "grad", lambda xp, x: _seeded_dropout(x), lambda xp, x: _seeded_dropout(x).data, F((3, 4)), values=False)

# Random draws (stochastic functions): shapes and dtypes; their REINFORCE gradients are sampled, not differenced.
case("bernoulli", "shape", lambda xp, p: F_.bernoulli(p), lambda xp, p: xp.empty_like(p), F((3, 4), "unit"),
     values=False)
case("categorical", "shape", lambda xp, p: F_.categorical(p), lambda xp, p: xp.zeros((2,), dtype=xp.int64),
     F((2, 3), "pos"), values=False)
case("multinomial", "shape", lambda xp, p: F_.multinomial(p), lambda xp, p: xp.zeros((2, 1), dtype=xp.int64),
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

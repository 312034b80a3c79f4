"""Linear algebra: the standard's matmul, tensordot and vecdot, and the linalg extension.

``__all__`` lists the top-level functions; ``EXTENSION`` lists the extension's own
(the namespace exposes both as ``xp.linalg.<name>``). Extension rows are named
``linalg_<name>`` in the op table, so rules reach them as ``o.linalg_<name>`` and no
name clashes with a top-level op.

Complex inputs follow PyTorch's convention (as the element-wise rules do): for a real
loss L the gradient of z = a + ib is dL/da + i dL/db, so a holomorphic function has
the vjp g * conj(f'(z)): transposes become conjugate transposes. The products,
inverses, det, solve, pinv, matrix_power, the norms, diagonal and trace take complex
inputs (conj comes from the element-wise row ``conj``); the decompositions (cholesky,
eigh, eigvalsh, svd, svdvals, qr) and the sign of slogdet raise NotImplementedError in
backward for complex inputs. Where a derivative is not defined everywhere, the rules
follow the usual conventions:

* cholesky, eigh and eigvalsh read one triangle of a symmetric input; their gradient
  is the symmetric one (as in PyTorch and JAX), right for symmetric perturbations.
* eigh needs distinct eigenvalues and svd distinct singular values (non-zero where
  U or Vh of a non-square matrix carry gradient); repeated ones give inf or nan in
  the eigenvector / singular vector terms, as the derivative does not exist there
  unless the loss is invariant to the choice of basis. Losses of eigenvalues or
  singular values alone have a first derivative there; their second derivative
  goes through the eigenvector terms and is NaN at repeated values (JAX's too),
  even where the loss is smooth (the trace). With ``full_matrices=True`` only the first
  min(m, n) columns of U and rows of Vh carry gradient (the rest are not unique).
* qr needs full rank; ``mode="complete"`` with more rows than columns has no
  gradient (Q's extra columns are not unique) and raises.
* slogdet, inv, solve need an invertible matrix (det's gradient at an exactly singular
  one is the cofactor matrix, from the svd: its second order there needs distinct
  singular values); pinv a constant rank (rtol's cut-off is held fixed): its gradient
  is exact where the singular values cut off are 0, and off by about (largest cut) /
  (smallest kept); where that ratio is above sqrt(eps) it raises, where the values can
  be read (not on dask outside debug mode); slogdet's sign has zero gradient.
* norms: at 0 the gradient is 0 (``vector_norm``/``matrix_norm`` with ord 2 or
  "fro", and any ord < 1 at zero entries), and so is its derivative; ties of the max / min in ord inf, -inf,
  1, -1 share the gradient equally, and so do tied singular values in matrix ord 2, -2
  (as in ``max(svdvals(x))``: for an orthogonal matrix, x / n), but where the largest /
  smallest singular value is 0 the gradient is 0 (as ord 1 / -1 give at a zero column; U
  and V are arbitrary there); ord 0 (a count) has zero gradient; matrix "nuc" needs
  distinct singular values where they matter.
"""

from __future__ import annotations

import math
import operator
from typing import Any

from polygrad.core.dispatch import backend_of_type, readable
from polygrad.core.op import Op, def_nograd, defvjp
from polygrad.core.primitive import apply
from polygrad.core.variable import Variable
from polygrad.ops._dtypes import widened_of
from polygrad.ops._export import binary, names, public, unary
from polygrad.ops.elementwise import _conj, _inf_at_zero, _is_complex, cast_grad
from polygrad.ops.manipulation import axis_param
from polygrad.ops.statistical import _in_float32_at_least


# ---------------------------------------------------------------------------
# Helpers for rules (constants are built with the backend's xp; they are raw
# arrays, so they go on the right of Variables)
# ---------------------------------------------------------------------------
def _xp(a: Any) -> Any:
    return backend_of_type(type(a._data if isinstance(a, Variable) else a)).xp


def _T(o: Any, a: Any) -> Any:
    return o.matrix_transpose(a)


def _H(o: Any, a: Any) -> Any:
    """The conjugate transpose of a stack of matrices."""
    return _conj(o, o.matrix_transpose(a))


def _scale(o: Any, r: Any, z: Any) -> Any:
    """``r * z`` for a real factor ``r``; promoted explicitly for a complex ``z`` (so r's gradient stays real)."""
    return (o.astype(r, z.dtype) if _is_complex(z) and not _is_complex(r) else r) * z


def _eye(like: Any, n: int, m: int | None = None, k: int = 0) -> Any:
    return _xp(like).eye(n, m, k=k, dtype=like.dtype)


def _diag_embed(o: Any, v: Any) -> Any:
    """A stack of diagonal matrices with ``v`` on the diagonal."""
    return o.expand_dims(v, axis=-1) * _eye(v, v.shape[-1])


def _mat(o: Any, v: Any) -> Any:
    """``v`` of shape (...) as (..., 1, 1), to scale a stack of matrices."""
    return o.expand_dims(o.expand_dims(v, axis=-1), axis=-1)


def _plus(a: Any, b: Any) -> Any:
    return b if a is None else a + b


def _real_only(name: str):
    """Wrap a rule so that complex inputs or outputs raise a clear error."""

    def wrap(rule):
        def checked(o, g, ans, *args, **params):
            outs = ans if isinstance(ans, tuple) else (ans,)
            for a in args + outs:
                if hasattr(a, "dtype") and _is_complex(a):
                    raise NotImplementedError(
                        f"polygrad: the gradient of {name} for complex inputs is not implemented (real floating only)")
            return rule(o, g, ans, *args, **params)

        checked.__name__ = rule.__name__
        return checked

    return wrap


# ---------------------------------------------------------------------------
# matmul, tensordot, vecdot (top-level functions)
# ---------------------------------------------------------------------------
def _matmul_vjp_x(o: Any, g: Any, ans: Any, a: Any, b: Any) -> Any:
    b = _conj(o, b)
    if a.ndim == 1 and b.ndim == 1:
        return g * b
    if b.ndim == 1:  # (..., n, k) @ (k,) -> (..., n)
        return o.expand_dims(g, axis=-1) * b
    if a.ndim == 1:  # (k,) @ (..., k, m) -> (..., m)
        return o.squeeze(o.matmul(b, o.expand_dims(g, axis=-1)), axis=-1)
    return o.matmul(g, o.matrix_transpose(b))


def _matmul_vjp_y(o: Any, g: Any, ans: Any, a: Any, b: Any) -> Any:
    a = _conj(o, a)
    if a.ndim == 1 and b.ndim == 1:
        return g * a
    if a.ndim == 1:  # (k,) @ (..., k, m) -> (..., m)
        return o.expand_dims(a, axis=-1) * o.expand_dims(g, axis=-2)
    if b.ndim == 1:  # (..., n, k) @ (k,) -> (..., n)
        return o.squeeze(o.matmul(o.matrix_transpose(a), o.expand_dims(g, axis=-1)), axis=-1)
    return o.matmul(o.matrix_transpose(a), g)


def _tensordot_axes(axes: Any, nd1: int, nd2: int) -> tuple[list, list]:
    if not isinstance(axes, (tuple, list)):
        return list(range(nd1 - axes, nd1)), list(range(axes))
    return [a % nd1 for a in axes[0]], [b % nd2 for b in axes[1]]


def _one_axis_as_tuple(a: Any) -> Any:
    """``(a,)`` for an axis given as an integer, ``a`` itself for a sequence of axes."""
    try:
        return (operator.index(a),)
    except TypeError:
        return a


def _permute_back(o: Any, r: Any, source: list) -> Any:
    """Permute ``r``, whose axis j is input axis ``source[j]``, into the input's order."""
    perm = tuple(source.index(i) for i in range(len(source)))
    return r if perm == tuple(range(len(perm))) else o.permute_dims(r, perm)


def _tensordot_vjp_x(o: Any, g: Any, ans: Any, x: Any, y: Any, axes: Any = 2) -> Any:
    ax, ay = _tensordot_axes(axes, x.ndim, y.ndim)
    fx = [i for i in range(x.ndim) if i not in ax]
    fy = [i for i in range(y.ndim) if i not in ay]
    # r's axes: fx, then the contracted axes of x in the order of sorted ay
    r = o.tensordot(g, _conj(o, y), axes=(list(range(len(fx), g.ndim)), fy))
    return cast_grad(o, _permute_back(o, r, fx + [ax[j] for j in sorted(range(len(ay)), key=ay.__getitem__)]), x)


def _tensordot_vjp_y(o: Any, g: Any, ans: Any, x: Any, y: Any, axes: Any = 2) -> Any:
    ax, ay = _tensordot_axes(axes, x.ndim, y.ndim)
    fx = [i for i in range(x.ndim) if i not in ax]
    fy = [i for i in range(y.ndim) if i not in ay]
    # r's axes: the contracted axes of y in the order of sorted ax, then fy
    r = o.tensordot(_conj(o, x), g, axes=(fx, list(range(len(fx)))))
    return cast_grad(o, _permute_back(o, r, [ay[j] for j in sorted(range(len(ax)), key=ax.__getitem__)] + fy), y)


def _neg_axis(axis: int, ndim: int) -> int:
    """``axis`` of an array of ``ndim`` dimensions, counted from the end."""
    return axis if axis < 0 else axis - ndim


def _vecdot_vjp_x(o: Any, g: Any, ans: Any, x: Any, y: Any, axis: int = -1) -> Any:
    return o.expand_dims(_conj(o, g), axis=_neg_axis(axis, g.ndim + 1)) * y  # vecdot conjugates x1


def _vecdot_vjp_y(o: Any, g: Any, ans: Any, x: Any, y: Any, axis: int = -1) -> Any:
    return o.expand_dims(g, axis=_neg_axis(axis, g.ndim + 1)) * x


MATMUL = defvjp(Op("matmul", broadcasts=True),
                _matmul_vjp_x, _matmul_vjp_y, saves="xy")


@public(also="linalg")
def matmul(x1, x2, /):
    return apply(MATMUL, (x1, x2))


TENSORDOT = defvjp(Op("tensordot"),
                   _tensordot_vjp_x, _tensordot_vjp_y, saves="xy")


@public(also="linalg")
def tensordot(x1, x2, /, *, axes=2):
    if isinstance(axes, (tuple, list)) and len(axes) == 2:
        # numpy, dask and jax also take an int for a side (axes=(1, 0)); the rules take sequences
        axes = tuple(_one_axis_as_tuple(a) for a in axes)
    return apply(TENSORDOT, (x1, x2), {"axes": axes})


VECDOT = defvjp(Op("vecdot", broadcasts=True),
                _vecdot_vjp_x, _vecdot_vjp_y, saves="xy")


@public(also="linalg")
def vecdot(x1, x2, /, *, axis=-1):
    if axis >= 0:  # the standard's axis is in [-N, -1]; numpy also takes one counted from the front
        n1, n2 = x1.ndim, x2.ndim
        if n1 != n2:
            raise ValueError(f"polygrad: vecdot: axis {axis} counted from the front is ambiguous for arrays of "
                             f"{n1} and {n2} dimensions; give it counted from the end (axis={axis - max(n1, n2)}?)")
        if axis >= n1:  # (axis - n1 would name another axis, counted from the end)
            raise ValueError(f"polygrad.vecdot: axis {axis} is out of bounds for arrays of {n1} dimensions "
                             f"(shapes {tuple(x1.shape)} and {tuple(x2.shape)})")
        axis -= n1  # the same axis, counted from the end, as the rules count it
    return apply(VECDOT, (x1, x2), {"axis": axis})


# ---------------------------------------------------------------------------
# Linear maps of a matrix (real coefficients: complex inputs are fine)
# ---------------------------------------------------------------------------
def _diagonal_vjp(o: Any, g: Any, ans: Any, x: Any, offset: int = 0) -> Any:
    """Scatter ``g`` onto the diagonal: P^T diag(g) Q with 0/1 selection matrices."""
    m, n, length = x.shape[-2], x.shape[-1], g.shape[-1]
    rows = _eye(g, m, length, k=min(offset, 0))  # (m, length): the row of entry i
    cols = _eye(g, length, n, k=max(offset, 0))  # (length, n): the column of entry i
    return o.matmul(rows, o.expand_dims(g, axis=-1) * cols)


def _trace_vjp(o: Any, g: Any, ans: Any, x: Any, offset: int = 0, dtype: Any = None) -> Any:
    gx = _mat(o, g) * _eye(g, x.shape[-2], x.shape[-1], k=offset)
    return cast_grad(o, gx, x)


DIAGONAL = defvjp(Op("linalg_diagonal", shapes=True, view=True),
                  _diagonal_vjp)


@public(ext="linalg")
def diagonal(x, /, *, offset=0):
    return apply(DIAGONAL, (x,), {"offset": offset})


TRACE = defvjp(Op("linalg_trace", shapes=True), _trace_vjp)


@public(ext="linalg")
def trace(x, /, *, offset=0, dtype=None):
    return apply(TRACE, (x,), {"offset": offset, "dtype": dtype})


# ---------------------------------------------------------------------------
# Products of vectors
# ---------------------------------------------------------------------------
def _cross_vjp_x(o: Any, g: Any, ans: Any, x: Any, y: Any, axis: int = -1) -> Any:
    return o.linalg_cross(_conj(o, y), g, axis=_neg_axis(axis, g.ndim))  # g . (dx × y) = dx . (y × g)


def _cross_vjp_y(o: Any, g: Any, ans: Any, x: Any, y: Any, axis: int = -1) -> Any:
    return o.linalg_cross(g, _conj(o, x), axis=_neg_axis(axis, g.ndim))  # g . (x × dy) = dy . (g × x)


CROSS = defvjp(Op("linalg_cross", broadcasts=True),
               _cross_vjp_x, _cross_vjp_y, saves="xy")


@public(ext="linalg")
def cross(x1, x2, /, *, axis=-1):
    for name, v in (("x1", x1), ("x2", x2)):
        shape = getattr(v, "shape", None)  # (no shape, or an axis out of range: the kernel says so)
        n = shape[axis] if shape is not None and -len(shape) <= axis < len(shape) else 3
        if n is not None and n == n and n != 3:  # (a size unknown yet, None or NaN, is checked by the kernel)
            raise ValueError(f"polygrad.linalg.cross: {name} must have size 3 along axis {axis} (the standard's "
                             f"cross product of 3-vectors), got shape {tuple(shape)}")
    return apply(CROSS, (x1, x2), {"axis": axis})


OUTER = defvjp(Op("linalg_outer"),
               lambda o, g, ans, x, y: cast_grad(o, o.matmul(g, _conj(o, y)), x),
               lambda o, g, ans, x, y: cast_grad(o, o.matmul(_conj(o, x), g), y), saves="xy")


@public(ext="linalg")
def outer(x1, x2, /):
    for name, v in (("x1", x1), ("x2", x2)):  # numpy flattens other ranks (and the gradient then failed)
        ndim = getattr(v, "ndim", 0 if isinstance(v, (int, float, complex)) else 1)  # (a list: apply's message)
        if ndim != 1:
            raise ValueError(f"polygrad.linalg.outer: {name} must be 1-D (the standard's outer product of two "
                             f"vectors), got shape {tuple(getattr(v, 'shape', ()))}")
    return apply(OUTER, (x1, x2))


# ---------------------------------------------------------------------------
# Inverses, determinants, solves
# ---------------------------------------------------------------------------
def _inv_vjp(o: Any, g: Any, ans: Any, x: Any) -> Any:
    at = _H(o, ans)
    return -o.matmul(at, o.matmul(g, at))


def _det_vjp(o: Any, g: Any, ans: Any, x: Any) -> Any:
    """g times the conjugate cofactors, adj(x)^H: det(x)^* inv(x)^H where no determinant in the stack is
    exactly 0 (where its values can be read: see ``readable``), else from the svd (inv raised there)."""
    data, xp = readable(getattr(ans, "_data", ans))
    if data is None or not bool(xp.any(data == 0)):
        return _mat(o, g * _conj(o, ans)) * _H(o, o.linalg_inv(x))
    return _mat(o, g) * _adjugate_h(o, x)


def _adjugate_h(o: Any, x: Any) -> Any:
    """adj(x)^H, right for a singular x too: with x = U diag(s) Vh, adj(x) = adj(Vh) adj(diag(s)) adj(U)
    = det(Vh) det(U) Vh^H diag(p) U^H, p_i the product of the s_j other than s_i. Its derivative goes
    through the svd's, so a second order needs distinct singular values (one zero is fine)."""
    u, s, vh = o.linalg_svd(x, full_matrices=False)
    eye = _eye(s, s.shape[-1])
    others = o.prod(o.expand_dims(s, axis=-2) * (1.0 - eye) + eye, axis=-1)  # s with its own entry set to 1
    phase = _conj(o, o.linalg_det(u) * o.linalg_det(vh))
    return _mat(o, phase) * o.matmul(_scale(o, o.expand_dims(others, axis=-2), u), vh)


def _slogdet_vjp(o: Any, g: tuple, ans: Any, x: Any) -> Any:
    g_sign, g_logabsdet = g
    if g_sign is not None and _is_complex(x):
        raise NotImplementedError("polygrad: the gradient of linalg.slogdet through the sign (phase) of a complex "
                                  "determinant is not implemented; differentiate logabsdet, or det")
    # A real sign is piecewise constant: no gradient.
    return None if g_logabsdet is None else _scale(o, _mat(o, g_logabsdet), _H(o, o.linalg_inv(x)))


def _solve_vjp_b(o: Any, g: Any, ans: Any, a: Any, b: Any) -> Any:
    if b.ndim == 1:  # one vector for a stack of matrices
        return o.squeeze(o.linalg_solve(_H(o, a), o.expand_dims(g, axis=-1)), axis=-1)
    return o.linalg_solve(_H(o, a), g)


def _solve_vjp_a(o: Any, g: Any, ans: Any, a: Any, b: Any) -> Any:
    gb = _solve_vjp_b(o, g, ans, a, b)
    if b.ndim == 1:
        return -(o.expand_dims(gb, axis=-1) * o.expand_dims(_conj(o, ans), axis=-2))
    return -o.matmul(gb, _H(o, ans))


def _refuse_cut_values(x: Any, rtol: Any) -> None:
    """A NotImplementedError where ``rtol`` cut off a singular value that is not small beside the
    smallest one kept (above ``sqrt(eps)`` times it): the rule below is the derivative of the
    pseudo-inverse of the whole matrix, off by about that ratio where the values cut off are
    not 0 (1.4x with rtol=0.5 cutting 0.27 of 2.62, JAX's too). Read where the values can be:
    not on a lazy backend outside debug mode (see ``readable``)."""
    data, xp = readable(getattr(x, "_data", x))
    if data is None or rtol is None:
        return
    s = xp.linalg.svdvals(data)
    top = xp.max(s, axis=-1, keepdims=True)
    r = xp.asarray(rtol, dtype=top.dtype)
    cut = s <= (xp.expand_dims(r, axis=-1) if r.ndim else r) * top
    biggest_cut = xp.max(xp.where(cut, s, 0.0), axis=-1)
    smallest_kept = xp.min(xp.where(cut, xp.inf, s), axis=-1)  # inf where everything is cut (P = 0)
    eps = float(xp.finfo(data.dtype).eps)
    noise = max(data.shape[-2:]) * eps * top[..., 0]  # a zero singular value, as computed
    if bool(xp.any((biggest_cut > eps ** 0.5 * smallest_kept) & (biggest_cut > noise))):
        ratio = float(xp.max(biggest_cut / smallest_kept))
        raise NotImplementedError(
            f"polygrad: the gradient of linalg.pinv where rtol cuts off a singular value that is not small beside "
            f"those kept ({ratio:.3g} times the smallest kept) is not implemented: its formula is the whole "
            f"matrix's, off by about that ratio; compute the pseudo-inverse of a truncated svd instead")


def _pinv_vjp(o: Any, g: Any, ans: Any, x: Any, rtol: Any = None) -> Any:
    """-P^H G P^H + (I - A P) G^H P P^H + P^H P G^H (I - P A), with P = pinv(A) (Golub & Pereyra)."""
    _refuse_cut_values(x, rtol)
    pt, gt = _H(o, ans), _H(o, g)
    first = -o.matmul(pt, o.matmul(g, pt))
    w = o.matmul(gt, o.matmul(ans, pt))
    second = w - o.matmul(x, o.matmul(ans, w))
    v = o.matmul(o.matmul(pt, ans), gt)
    third = v - o.matmul(o.matmul(v, ans), x)
    return first + second + third


def _matrix_power_vjp(o: Any, g: Any, ans: Any, x: Any, n: int) -> Any:
    if n == 0:
        return g * 0.0
    if n > 0:
        return _power_adjoint(o, x, g, n)
    b = o.linalg_inv(x)  # A^n = B^(-n): chain through inv
    bt = _H(o, b)
    return -o.matmul(bt, o.matmul(_power_adjoint(o, b, g, -n), bt))


def _power_adjoint(o: Any, a: Any, g: Any, n: int) -> Any:
    """sum_k (A^H)^k G (A^H)^(n-1-k): the upper-right block of [[A^H, G], [0, A^H]]^n."""
    if n == 1:
        return g
    k = a.shape[-1]
    top, bottom = slice(0, k), slice(k, 2 * k)
    shape = tuple(g.shape[:-2]) + (2 * k, 2 * k)
    at = _H(o, a)
    block = (o.getitem_grad(at, (..., top, top), shape) + o.getitem_grad(g, (..., top, bottom), shape)
             + o.getitem_grad(at, (..., bottom, bottom), shape))
    return o.linalg_matrix_power(block, n)[..., top, bottom]


INV = defvjp(Op("linalg_inv"), _inv_vjp, saves="ans")
inv = unary(INV, ext="linalg")
DET = defvjp(Op("linalg_det"), _det_vjp, saves="x ans")
det = unary(DET, ext="linalg")
SLOGDET = defvjp(Op("linalg_slogdet", multi=True), _slogdet_vjp, saves="x")
slogdet = unary(SLOGDET, ext="linalg")
SOLVE = defvjp(Op("linalg_solve", broadcasts=True, shapes=True),
               _solve_vjp_a, _solve_vjp_b, saves="x ans")
solve = binary(SOLVE, ext="linalg")
PINV = defvjp(Op("linalg_pinv"), _pinv_vjp, saves="x ans")


@public(ext="linalg")
def pinv(x, /, *, rtol=None):
    # An array rtol is a threshold, not an input: its data goes to the kernel (no gradient flows to it).
    return apply(PINV, (x,), {"rtol": rtol._data if isinstance(rtol, Variable) else rtol})


MATRIX_POWER = defvjp(Op("linalg_matrix_power", lambda xp, x, n: xp.linalg.matrix_power(x, n)),  # n: positional-only
                      _matrix_power_vjp, saves="x")


@public(ext="linalg")
def matrix_power(x, n, /):
    return apply(MATRIX_POWER, (x,), {"n": n})


MATRIX_RANK = def_nograd(Op("linalg_matrix_rank"))


@public(ext="linalg")
def matrix_rank(x, /, *, rtol=None):
    return apply(MATRIX_RANK, (x,), {"rtol": rtol._data if isinstance(rtol, Variable) else rtol})


# ---------------------------------------------------------------------------
# Decompositions
# ---------------------------------------------------------------------------
@_real_only("linalg.cholesky")


def _cholesky_vjp(o: Any, g: Any, ans: Any, x: Any, upper: bool = False) -> Any:
    """L^-T sym(Phi(L^T gL)) L^-1, Phi = lower triangle with the diagonal halved (Murray 2016)."""
    low, gl = (_T(o, ans), _T(o, g)) if upper else (ans, g)
    n = low.shape[-1]
    eye = _eye(low, n)
    p = o.matmul(_T(o, low), gl) * _xp(eye).tril(_xp(eye).ones((n, n), dtype=eye.dtype))
    p = p - p * eye * 0.5
    inv = o.linalg_inv(low)
    s = o.matmul(_T(o, inv), o.matmul(p, inv))
    return (s + _T(o, s)) * 0.5


@_real_only("linalg.eigh")


def _eigh_vjp(o: Any, g: tuple, ans: tuple, x: Any) -> Any:
    """V (diag(gw) + F o (V^T gV)) V^T, F_ij = 1 / (w_j - w_i) off the diagonal; symmetrised."""
    gw, gv = g
    w, v = ans
    eye = _eye(w, w.shape[-1])
    inner = None
    if gv is not None:
        gaps = o.expand_dims(w, axis=-2) - o.expand_dims(w, axis=-1)
        inner = (1.0 / (gaps + eye)) * (1.0 - eye) * o.matmul(_T(o, v), gv)
    if gw is not None:
        inner = _plus(inner, _diag_embed(o, gw))
    ga = o.matmul(v, o.matmul(inner, _T(o, v)))
    return (ga + _T(o, ga)) * 0.5


@_real_only("linalg.eigvalsh")


def _eigvalsh_vjp(o: Any, g: Any, ans: Any, x: Any) -> Any:
    v = o.linalg_eigh(x)[1]
    return o.matmul(v * o.expand_dims(g, axis=-2), _T(o, v))


@_real_only("linalg.svd")


def _svd_vjp(o: Any, g: tuple, ans: tuple, x: Any, full_matrices: bool = True) -> Any:
    u, s, vh = ans
    gu, gs, gvh = g
    k = s.shape[-1]
    if u.shape[-1] != k:  # full_matrices: the extra columns of U are not unique
        u, gu = u[..., :k], None if gu is None else gu[..., :k]
    if vh.shape[-2] != k:
        vh, gvh = vh[..., :k, :], None if gvh is None else gvh[..., :k, :]
    return _svd_backward(o, u, s, vh, gu, gs, gvh)


def _svd_backward(o: Any, u: Any, s: Any, vh: Any, gu: Any, gs: Any, gvh: Any) -> Any:
    """U [(F o skew(U^T gU)) S + diag(gS) + S (F o skew(V^T gV))] V^T
    + (I - U U^T) gU S^-1 V^T + U S^-1 gV^T (I - V V^T), F_ij = 1 / (s_j^2 - s_i^2) off the
    diagonal (Townsend 2016), for the reduced U (m, k), s (k), Vh (k, n)."""
    m, k, n = u.shape[-2], s.shape[-1], vh.shape[-1]
    eye = _eye(s, k)
    inner = None
    if gu is not None or gvh is not None:
        s2 = s * s
        f = (1.0 / (o.expand_dims(s2, axis=-2) - o.expand_dims(s2, axis=-1) + eye)) * (1.0 - eye)
    if gu is not None:
        j = o.matmul(_T(o, u), gu)
        inner = f * (j - _T(o, j)) * o.expand_dims(s, axis=-2)
    if gvh is not None:
        j = o.matmul(vh, _T(o, gvh))
        inner = _plus(inner, f * (j - _T(o, j)) * o.expand_dims(s, axis=-1))
    if gs is not None:
        inner = _plus(inner, _diag_embed(o, gs))
    ga = None if inner is None else o.matmul(u, o.matmul(inner, vh))
    if gu is not None and m > k:
        p = gu - o.matmul(u, o.matmul(_T(o, u), gu))
        ga = _plus(ga, o.matmul(p / o.expand_dims(s, axis=-2), vh))
    if gvh is not None and n > k:
        q = gvh - o.matmul(o.matmul(gvh, _T(o, vh)), vh)
        ga = _plus(ga, o.matmul(u, q / o.expand_dims(s, axis=-1)))
    return ga


@_real_only("linalg.svdvals")


def _svdvals_vjp(o: Any, g: Any, ans: Any, x: Any) -> Any:
    u, _, vh = o.linalg_svd(x, full_matrices=False)
    return o.matmul(u * o.expand_dims(g, axis=-2), vh)


@_real_only("linalg.qr")


def _qr_vjp(o: Any, g: tuple, ans: tuple, x: Any, mode: str = "reduced") -> Any:
    q, r = ans
    gq, gr = g
    m, n = x.shape[-2], x.shape[-1]
    if m >= n:
        if m > n and mode == "complete":
            raise NotImplementedError("polygrad: linalg.qr with mode='complete' and more rows than columns has no "
                                      "gradient (the extra columns of Q are not unique); use mode='reduced'")
        return _qr_backward(o, q, r, gq, gr)
    # Wide: A = [X | Y], R = [U | V] with X = Q U square and V = Q^T Y.
    u = r[..., :, :m]
    gu = None if gr is None else gr[..., :, :m]
    gv = None if gr is None else gr[..., :, m:]
    if gv is not None:
        gq = _plus(gq, o.matmul(x[..., :, m:], _T(o, gv)))
    shape = tuple(x.shape)
    ga = None
    if gq is not None or gu is not None:
        ga = o.getitem_grad(_qr_backward(o, q, u, gq, gu), (..., slice(0, m)), shape)
    if gv is not None:
        ga = _plus(ga, o.getitem_grad(o.matmul(q, gv), (..., slice(m, n)), shape))
    return ga


def _qr_backward(o: Any, q: Any, r: Any, gq: Any, gr: Any) -> Any:
    """(gQ + Q copyltu(M)) R^-T with M = triu(gR R^T - Q^T gQ) mirrored (m >= n, full rank)."""
    n = r.shape[-1]
    eye = _eye(r, n)
    m_ = None if gr is None else o.matmul(gr, _T(o, r))
    if gq is not None:
        t = o.matmul(_T(o, q), gq)
        m_ = -t if m_ is None else m_ - t
    t = m_ * _xp(eye).triu(_xp(eye).ones((n, n), dtype=eye.dtype))
    b = o.matmul(q, t + _T(o, t) - t * eye)
    if gq is not None:
        b = gq + b
    return _T(o, o.linalg_solve(r, _T(o, b)))


CHOLESKY = defvjp(Op("linalg_cholesky"),
                  _cholesky_vjp, saves="ans")


@public(ext="linalg")
def cholesky(x, /, *, upper=False):
    return apply(CHOLESKY, (x,), {"upper": upper})


EIGH = defvjp(Op("linalg_eigh", multi=True), _eigh_vjp, saves="ans")
eigh = unary(EIGH, ext="linalg")
EIGVALSH = defvjp(Op("linalg_eigvalsh"), _eigvalsh_vjp, saves="x")
eigvalsh = unary(EIGVALSH, ext="linalg")
SVD = defvjp(Op("linalg_svd",
                multi=True), _svd_vjp, saves="ans")


@public(ext="linalg")
def svd(x, /, *, full_matrices=True):
    return apply(SVD, (x,), {"full_matrices": full_matrices})


SVDVALS = defvjp(Op("linalg_svdvals"), _svdvals_vjp, saves="x")
svdvals = unary(SVDVALS, ext="linalg")
QR = defvjp(Op("linalg_qr", multi=True),
            _qr_vjp, saves="x ans")


@public(ext="linalg")
def qr(x, /, *, mode='reduced'):
    if mode not in ("reduced", "complete"):  # numpy's 'r' and 'raw' return other things than (Q, R)
        raise ValueError(f"polygrad.linalg.qr: mode must be 'reduced' or 'complete' (the standard's), got {mode!r}")
    return apply(QR, (x,), {"mode": mode})


# ---------------------------------------------------------------------------
# Norms
# ---------------------------------------------------------------------------
def _kept_shape(shape: tuple, axis: Any) -> tuple:
    nd = len(shape)
    axes = range(nd) if axis is None else [a % nd for a in (axis if isinstance(axis, tuple) else (axis,))]
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def _shared_ties(o: Any, a: Any, top: Any, axis: Any) -> Any:
    """1 / count where ``a`` attains ``top`` along ``axis``, else 0 (ties share)."""
    hit = o.astype(a == top, a.dtype)
    return hit / o.sum(hit, axis=axis, keepdims=True)


def _unit(o: Any, x: Any, a: Any) -> Any:
    """sign(x) (0 at 0) given a = |x|; for complex x, x / |x|, which varies with x."""
    return _scale(o, 1.0 / _inf_at_zero(o, a), x) if _is_complex(x) else o.sign(x)


def _vector_norm_vjp(o: Any, g: Any, ans: Any, x: Any, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Any:
    if not keepdims:
        kept = _kept_shape(tuple(x.shape), axis)
        g, ans = o.reshape(g, kept), o.reshape(ans, kept)
    if ord == 0:  # a count of non-zeros: piecewise constant
        return o.zeros_like(x)
    if ord == 2:  # x / |x|, and 0 at x = 0
        return _scale(o, g / _inf_at_zero(o, ans), x)
    a = o.abs(x)
    if ord == 1:
        return _scale(o, g, _unit(o, x, a))
    if ord in (math.inf, -math.inf):
        return _scale(o, g * _shared_ties(o, a, ans, axis), _unit(o, x, a))
    # sign(x) (|x| / norm)^(p - 1); zero entries (p < 1) and a zero norm give 0
    safe = o.where(a == 0, 1.0, a) if ord < 1 else a
    r = g * (safe / o.where(ans == 0, 1.0, ans)) ** (ord - 1)
    if ord < 0:
        r = o.where(ans == 0, 0.0, r)
    return _scale(o, r, _unit(o, x, a))


def _matrix_norm_vjp(o: Any, g: Any, ans: Any, x: Any, keepdims: bool = False, ord: Any = "fro") -> Any:
    if not keepdims:
        g, ans = _mat(o, g), _mat(o, ans)
    if ord == "fro" or ord is None:
        return _scale(o, g / _inf_at_zero(o, ans), x)
    if 0 in tuple(x.shape)[-2:]:  # an empty matrix: no entries, no gradient (max of no sums would raise,
        return o.zeros_like(x)    # and u[..., :, :1] of no singular vectors did on array_api_strict)
    if ord == "nuc":  # U V^H
        u, _, vh = o.linalg_svd(x, full_matrices=False)
        return _scale(o, g, o.matmul(u, vh))
    if ord in (2, -2):  # U diag(w) V^H, w shared by the singular values tying for the max / min, 0 where it is 0
        u, s, vh = o.linalg_svd(x, full_matrices=False)
        top = (o.max if ord == 2 else o.min)(s, axis=-1, keepdims=True)  # s's own: ans may differ by an ulp
        w = _shared_ties(o, s, top, -1) * o.sign(top)
        return _scale(o, g, o.matmul(u * o.expand_dims(w, axis=-2), vh))
    # 1 / -1: max / min column sum of |x|; inf / -inf: max / min row sum
    along, across = (-2, -1) if ord in (1, -1) else (-1, -2)
    a = o.abs(x)
    sums = o.sum(a, axis=along, keepdims=True)
    top = (o.max if ord > 0 else o.min)(sums, axis=across, keepdims=True)
    return _scale(o, g * _shared_ties(o, sums, top, across), _unit(o, x, a))


def _in_float32(rule: Any) -> Any:
    """The vjp ``rule`` of a norm taken in float32 for a narrower float (see
    :func:`~polygrad.ops._dtypes.widened`: the sums of ``x`` in the rules overflow as the norm's
    own do) and given back in x's dtype."""
    def vjp(o: Any, g: Any, ans: Any, x: Any, **params: Any) -> Any:
        data = x._data if isinstance(x, Variable) else x
        wide = widened_of(data)
        if wide is None:
            return rule(o, g, ans, x, **params)
        return o.astype(rule(o, o.astype(g, wide), o.astype(ans, wide), o.astype(x, wide), **params), data.dtype)

    return vjp


# The norms of a float narrower than float32 are taken in float32 and given back in its dtype:
# the sum of squares of 5,000 float16 twenties is inf, though their norm (1414.2) fits.
VECTOR_NORM = defvjp(Op("linalg_vector_norm", _in_float32_at_least("linalg_vector_norm")),
                     _in_float32(_vector_norm_vjp), saves="x ans")


@public(ext="linalg")
def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    return apply(VECTOR_NORM, (x,), {"axis": axis_param(x, axis, "linalg.vector_norm"), "keepdims": keepdims, "ord": ord})


MATRIX_NORM = defvjp(Op("linalg_matrix_norm", _in_float32_at_least("linalg_matrix_norm")),
                     _in_float32(_matrix_norm_vjp), saves="x ans")


@public(ext="linalg")
def matrix_norm(x, /, *, keepdims=False, ord='fro'):
    return apply(MATRIX_NORM, (x,), {"keepdims": keepdims, "ord": ord})


__all__ = names(__name__)  # the top-level functions declared above
#: The linalg extension's own functions (reached as ``xp.linalg.<name>``).
EXTENSION = tuple(names(__name__, "linalg"))

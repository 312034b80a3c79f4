"""The op cases: one row per (op, variant), covering every row of
``polygrad.ops.REGISTRY`` plus the composed functions users call.

A case gives the polygrad call ``fn(xp, *args)``, the reference written with the
backend's own namespace ``ref(xp, *args)``, and its arguments:

* ``F(shape, kind)``: a float input, differentiated by the gradient checks
  (``raw=True``: passed as a raw array and not differentiated). Values are
  fixed by the case id; ``kind`` keeps them where the op is smooth:
  ``any`` (-1, 1), ``pos`` (0.5, 1.5), ``unit`` (-0.8, 0.8), ``gt1`` (1.2, 2),
  ``nonzero`` (0.3 <= |x| < 1),
  ``distinct`` (well separated, so max/maximum have no ties within eps),
  ``grid`` (from {-0.5, 0, 0.5}, so comparisons see ties);
* ``C(build)``: a constant built with ``build(xp, float_dtype)`` (index
  arrays, masks, labels), never differentiated.

``order`` is the highest derivative checked numerically (0: none; the op has
no gradient). ``requires`` names BackendInfo capabilities the case needs.
"""

from __future__ import annotations

import dataclasses
import random
import zlib
from typing import Any, Callable

import polygrad as pg
import polygrad.functions as F_
from polygrad import ops as O
from polygrad.ops import REGISTRY, apply


@dataclasses.dataclass(frozen=True)
class F:
    shape: tuple
    kind: str = "any"
    raw: bool = False


@dataclasses.dataclass(frozen=True)
class C:
    build: Callable[[Any, Any], Any]


@dataclasses.dataclass(frozen=True)
class Case:
    op: str
    variant: str
    fn: Callable[..., Any]
    ref: Callable[..., Any]
    args: tuple
    order: int = 2
    requires: tuple = ()
    values: bool = True  # False: compare shape, dtype and owner only (empty, random masks)

    @property
    def composed(self) -> bool:
        """A composition of ops users call (not a row of the op table)."""
        return self.op not in REGISTRY

    @property
    def grad_order(self) -> int:
        """The highest derivative to check: 0 for a row declared without gradient."""
        if not self.composed and (not REGISTRY[self.op].differentiable or not REGISTRY[self.op].deterministic):
            return 0  # no gradient, or a random draw (REINFORCE, tested statistically): nothing to difference
        return self.order if self.differentiable_args() else 0

    @property
    def id(self) -> str:
        return f"{self.op}-{self.variant}"

    def make(self, xp: Any, dtype: Any) -> list:
        """The arguments as arrays of the backend (fixed values per case id)."""
        seed = zlib.crc32(self.id.encode())
        out = []
        for i, spec in enumerate(self.args):
            if isinstance(spec, C):
                out.append(spec.build(xp, dtype))
                continue
            values = _values(spec, random.Random(seed + i))
            a = xp.asarray(values, dtype=dtype)
            out.append(xp.reshape(a, spec.shape) if spec.shape != () else xp.reshape(a, ()))
        return out

    def differentiable_args(self) -> list[int]:
        return [i for i, s in enumerate(self.args) if isinstance(s, F) and not s.raw]


def _values(spec: F, r: random.Random) -> list:
    n = 1
    for d in spec.shape:
        n *= d
    kind = spec.kind
    if kind == "any":
        return [r.uniform(-1, 1) for _ in range(n)]
    if kind == "pos":
        return [r.uniform(0.5, 1.5) for _ in range(n)]
    if kind == "unit":
        return [r.uniform(-0.8, 0.8) for _ in range(n)]
    if kind == "gt1":
        return [r.uniform(1.2, 2.0) for _ in range(n)]
    if kind == "nonzero":
        return [r.choice((-1, 1)) * r.uniform(0.3, 1.0) for _ in range(n)]
    if kind in ("distinct", "distinct2"):  # two interleaved grids: never equal, never within eps
        shift = 0.5 if kind == "distinct2" else 0.0
        vals = [-1 + 2 * (k + 0.25 + shift) / n for k in range(n)]
        r.shuffle(vals)
        return vals
    if kind == "grid":
        return [r.choice((-0.5, 0.0, 0.5)) for _ in range(n)]
    raise ValueError(f"unknown value kind {kind!r}")


def ints(values: Any) -> C:
    return C(lambda xp, dt: xp.asarray(values, dtype=xp.int64))


def bools(values: Any) -> C:
    return C(lambda xp, dt: xp.asarray(values, dtype=xp.bool))


def _onehot(xp: Any, idx: Any, n: int, dtype: Any) -> Any:
    return xp.astype(xp.reshape(idx, (-1, 1)) == xp.reshape(xp.arange(n, dtype=idx.dtype), (1, -1)), dtype)


def _softmax(xp: Any, x: Any, axis: int) -> Any:
    e = xp.exp(x - xp.max(x, axis=axis, keepdims=True))
    return e / xp.sum(e, axis=axis, keepdims=True)


def _log_softmax(xp: Any, x: Any, axis: int) -> Any:
    s = x - xp.max(x, axis=axis, keepdims=True)
    return s - xp.log(xp.sum(xp.exp(s), axis=axis, keepdims=True))


CASES: list[Case] = []


def case(op: str, variant: str, fn: Callable, ref: Callable, *args: Any, **kw: Any) -> None:
    CASES.append(Case(op, variant, fn, ref, tuple(args), **kw))


# ---------------------------------------------------------------------------
# Element-wise, unary
# ---------------------------------------------------------------------------
for _name, _kind in [("exp", "any"), ("log", "pos"), ("sin", "any"), ("cos", "any"), ("tanh", "any"),
                     ("sqrt", "pos"), ("abs", "nonzero")]:
    case(_name, "2d", lambda xp, x, _n=_name: getattr(pg, _n)(x), lambda xp, x, _n=_name: getattr(xp, _n)(x),
         F((2, 3), _kind))
case("exp", "0d", lambda xp, x: pg.exp(x), lambda xp, x: xp.exp(x), F(()))
case("negative", "operator", lambda xp, x: -x, lambda xp, x: -x, F((2, 3)))
case("positive", "operator", lambda xp, x: +x, lambda xp, x: +x, F((2, 3)))
case("sign", "2d", lambda xp, x: pg.sign(x), lambda xp, x: xp.sign(x), F((2, 3), "nonzero"), order=0)

# ---------------------------------------------------------------------------
# Element-wise, binary: broadcasting and Python scalars on either side
# ---------------------------------------------------------------------------
_BINARY = {
    "add": (lambda a, b: a + b, "any"),
    "subtract": (lambda a, b: a - b, "any"),
    "multiply": (lambda a, b: a * b, "any"),
    "divide": (lambda a, b: a / b, "nonzero"),
}
for _name, (_f, _kind) in _BINARY.items():
    for _variant, _sx, _sy in [("same", (2, 3), (2, 3)), ("bcast_row", (2, 3), (3,)), ("bcast_outer", (2, 1), (1, 3)),
                               ("bcast_0d", (), (2, 3)), ("bcast_batch", (2, 1, 3), (4, 1))]:
        case(_name, _variant, lambda xp, x, y, _f=_f: _f(x, y), lambda xp, x, y, _f=_f: _f(x, y),
             F(_sx), F(_sy, _kind))
    case(_name, "scalar_right", lambda xp, x, _f=_f: _f(x, 2.5), lambda xp, x, _f=_f: _f(x, 2.5), F((2, 3)))
    case(_name, "scalar_left", lambda xp, x, _f=_f: _f(-1.5, x), lambda xp, x, _f=_f: _f(-1.5, x), F((2, 3), _kind))
    case(_name, "raw_left", lambda xp, a, y, _f=_f: _f(a, y), lambda xp, a, y, _f=_f: _f(a, y),
         F((2, 3), raw=True), F((2, 3), _kind))
    case(_name, "function", lambda xp, x, y, _n=_name: getattr(pg, _n)(x, y), lambda xp, x, y, _n=_name: getattr(xp, _n)(x, y),
         F((3,)), F((3,), _kind))

case("pow", "same", lambda xp, x, y: x ** y, lambda xp, x, y: x ** y, F((2, 3), "pos"), F((2, 3)))
case("pow", "bcast_row", lambda xp, x, y: pg.pow(x, y), lambda xp, x, y: xp.pow(x, y), F((2, 3), "pos"), F((3,)))
case("pow", "scalar_exponent", lambda xp, x: x ** 3.0, lambda xp, x: x ** 3.0, F((2, 3)))
case("pow", "scalar_base", lambda xp, x: 2.0 ** x, lambda xp, x: 2.0 ** x, F((2, 3)))
case("maximum", "same", lambda xp, x, y: pg.maximum(x, y), lambda xp, x, y: xp.maximum(x, y),
     F((2, 3), "distinct"), F((2, 3), "distinct2"))
case("maximum", "bcast_row", lambda xp, x, y: pg.maximum(x, y), lambda xp, x, y: xp.maximum(x, y),
     F((2, 3), "distinct"), F((3,), "distinct2"))
case("maximum", "raw_left", lambda xp, a, y: pg.maximum(a, y), lambda xp, a, y: xp.maximum(a, y),
     F((2, 3), "distinct", raw=True), F((2, 3), "distinct2"))
case("where", "same", lambda xp, c, x, y: pg.where(c, x, y), lambda xp, c, x, y: xp.where(c, x, y),
     bools([[True, False, True], [False, False, True]]), F((2, 3)), F((2, 3)))
case("where", "bcast", lambda xp, c, x, y: pg.where(c, x, y), lambda xp, c, x, y: xp.where(c, x, y),
     bools([True, False, True]), F((2, 3)), F((3,)))
case("where", "scalar", lambda xp, c, x: pg.where(c, x, 0.0), lambda xp, c, x: xp.where(c, x, xp.zeros_like(x)),
     bools([[True, False, True], [False, True, True]]), F((2, 3)))

# Comparisons: no gradient; their results are boolean arrays of the backend.
for _name, _f in [("equal", lambda a, b: a == b), ("not_equal", lambda a, b: a != b), ("less", lambda a, b: a < b),
                  ("less_equal", lambda a, b: a <= b), ("greater", lambda a, b: a > b),
                  ("greater_equal", lambda a, b: a >= b)]:
    case(_name, "operator", lambda xp, x, y, _f=_f: _f(x, y), lambda xp, x, y, _f=_f: _f(x, y),
         F((3, 4), "grid"), F((3, 4), "grid"), order=0)
    case(_name, "bcast_scalar", lambda xp, x, _f=_f: _f(x, 0.0), lambda xp, x, _f=_f: _f(x, 0.0),
         F((3, 4), "grid"), order=0)

case("zeros_like", "plain", lambda xp, x: pg.zeros_like(x), lambda xp, x: xp.zeros_like(x), F((2, 3)), order=0)
case("zeros_like", "dtype", lambda xp, x: pg.zeros_like(x, dtype=xp.int64), lambda xp, x: xp.zeros_like(x, dtype=xp.int64),
     F((2, 3)), order=0)
case("ones_like", "plain", lambda xp, x: pg.ones_like(x), lambda xp, x: xp.ones_like(x), F((2, 3)), order=0)
case("astype", "same", lambda xp, x: pg.astype(x, x.dtype), lambda xp, x: xp.astype(x, x.dtype), F((2, 3)))
case("astype", "to_float32", lambda xp, x: pg.astype(x, xp.float32), lambda xp, x: xp.astype(x, xp.float32),
     F((2, 3)), order=0, requires=("float64",))

# ---------------------------------------------------------------------------
# Linear algebra
# ---------------------------------------------------------------------------
for _variant, _sx, _sy in [("mat_mat", (2, 3), (3, 4)), ("batch_mat", (2, 2, 3), (3, 4)),
                           ("batch_batch", (2, 2, 3), (2, 3, 4)), ("bcast_batch", (1, 2, 3), (3, 3, 2)),
                           ("vec_mat", (3,), (3, 4)), ("mat_vec", (2, 3), (3,)), ("vec_vec", (3,), (3,))]:
    case("matmul", _variant, lambda xp, x, y: x @ y, lambda xp, x, y: xp.matmul(x, y), F(_sx), F(_sy))

# ---------------------------------------------------------------------------
# Shapes
# ---------------------------------------------------------------------------
case("reshape", "2d", lambda xp, x: pg.reshape(x, (3, 2)), lambda xp, x: xp.reshape(x, (3, 2)), F((2, 3)))
case("reshape", "minus_one", lambda xp, x: pg.reshape(x, (-1,)), lambda xp, x: xp.reshape(x, (-1,)), F((2, 3)))
case("reshape", "method", lambda xp, x: x.reshape(3, 1, 2), lambda xp, x: xp.reshape(x, (3, 1, 2)), F((2, 3)))
case("permute_dims", "3d", lambda xp, x: pg.permute_dims(x, (2, 0, 1)), lambda xp, x: xp.permute_dims(x, (2, 0, 1)),
     F((2, 3, 4)))
case("permute_dims", "axes", lambda xp, x: x.transpose(1, 0, 2), lambda xp, x: xp.permute_dims(x, (1, 0, 2)), F((2, 3, 4)))
case("reverse_dims", "T", lambda xp, x: x.T, lambda xp, x: xp.permute_dims(x, (2, 1, 0)), F((2, 3, 4)))
case("reverse_dims", "transpose", lambda xp, x: pg.transpose(x), lambda xp, x: xp.permute_dims(x, (1, 0)), F((2, 3)))
case("matrix_transpose", "3d", lambda xp, x: pg.matrix_transpose(x), lambda xp, x: xp.matrix_transpose(x), F((2, 3, 4)))
case("broadcast_to", "row", lambda xp, x: pg.broadcast_to(x, (2, 3)), lambda xp, x: xp.broadcast_to(x, (2, 3)), F((3,)))
case("broadcast_to", "column", lambda xp, x: pg.broadcast_to(x, (2, 3)), lambda xp, x: xp.broadcast_to(x, (2, 3)),
     F((2, 1)))
case("broadcast_to", "0d", lambda xp, x: pg.broadcast_to(x, (2, 3)), lambda xp, x: xp.broadcast_to(x, (2, 3)), F(()))
case("sum_to", "leading", lambda xp, x: O.sum_to(x, (3,)), lambda xp, x: xp.sum(x, axis=0), F((2, 3)))
case("sum_to", "keepdim", lambda xp, x: O.sum_to(x, (2, 1)), lambda xp, x: xp.sum(x, axis=1, keepdims=True), F((2, 3)))
case("sum_to", "both", lambda xp, x: O.sum_to(x, (1, 4)),
     lambda xp, x: xp.reshape(xp.sum(x, axis=(0, 1)), (1, 4)), F((2, 3, 4)))
case("expand_dims", "middle", lambda xp, x: pg.expand_dims(x, axis=1), lambda xp, x: xp.expand_dims(x, axis=1), F((2, 3)))
case("expand_dims", "last", lambda xp, x: pg.expand_dims(x, axis=-1), lambda xp, x: xp.expand_dims(x, axis=-1), F((2, 3)))
case("squeeze", "middle", lambda xp, x: pg.squeeze(x, axis=1), lambda xp, x: xp.squeeze(x, axis=1), F((2, 1, 3)))

# ---------------------------------------------------------------------------
# Indexing (backward: scatter-add, repeated indices summed)
# ---------------------------------------------------------------------------
def _take2(xp, x, i, j):
    """``x[i, j]`` for a 2-D ``x``, written with ``take`` (the reference for integer-array indexing)."""
    i, j = xp.broadcast_arrays(i, j)
    flat = xp.take(xp.reshape(x, (-1,)), xp.reshape(i * x.shape[1] + j, (-1,)))
    return xp.reshape(flat, i.shape)


_IDX = [0, 2, 0, 3, 0]
# Keys the standard specifies (a full multi-axis index; integer arrays only with integers)...
for _variant, _fn in [("int", lambda x: x[1, :]), ("negative_int", lambda x: x[-1, :]), ("slice", lambda x: x[1:3, :]),
                      ("step", lambda x: x[::2, :]), ("reverse", lambda x: x[::-1, :]), ("tuple", lambda x: x[1:, 0]),
                      ("none", lambda x: x[None, 1:3, :]), ("ellipsis", lambda x: x[..., 1]), ("scalar", lambda x: x[2, 1])]:
    case("getitem", _variant, lambda xp, x, _fn=_fn: _fn(x), lambda xp, x, _fn=_fn: _fn(x), F((4, 3)))
case("getitem", "two_arrays_repeated", lambda xp, x, i, j: x[i, j], _take2, F((4, 3)),
     ints([0, 1, 0, 0]), ints([2, 2, 2, 1]))
case("getitem", "array_and_int", lambda xp, x, i: x[i, 1], lambda xp, x, i: xp.take(x[:, 1], i), F((4, 3)), ints(_IDX))
case("getitem", "arrays_2d_bcast", lambda xp, x, i, j: x[i, j], _take2, F((4, 3)), ints([[0], [3], [0]]), ints([1, 1, 2]))
case("getitem", "function", lambda xp, x, i, j: F_.getitem(x, (i, j)), _take2, F((4, 3)), ints([3, 3]), ints([0, 0]))
# ... and the NumPy shortcuts users write (not in the standard: a backend may xfail them with that reason).
case("getitem", "np_int", lambda xp, x: x[1], lambda xp, x: x[1, ...], F((4, 3)))
case("getitem", "np_slice", lambda xp, x: x[1:3], lambda xp, x: x[1:3, ...], F((4, 3)))
case("getitem", "np_int_array_repeated", lambda xp, x, i: x[i], lambda xp, x, i: xp.take(x, i, axis=0),
     F((4, 3)), ints(_IDX))
case("getitem", "np_int_array_2d", lambda xp, x, i: x[i], lambda xp, x, i: xp.reshape(xp.take(x, xp.reshape(i, (-1,)), axis=0), (2, 2, 3)),
     F((4, 3)), ints([[0, 1], [0, 3]]))
case("getitem", "np_slice_and_array", lambda xp, x, i: x[:, i], lambda xp, x, i: xp.take(x, i, axis=1),
     F((4, 3)), ints([2, 0, 2]))
case("getitem", "bool_mask", lambda xp, x, m: x[m], lambda xp, x, m: x[m], F((2, 3)),
     bools([[True, False, True], [False, True, True]]), requires=("data_dependent_shapes",))
case("getitem_grad", "arrays_repeated", lambda xp, g, i, j: O.getitem_grad(g, (i, j), (4, 3)),
     lambda xp, g, i, j: xp.reshape(xp.matmul(g, _onehot(xp, i * 3 + j, 12, g.dtype)), (4, 3)), F((5,)), ints(_IDX), ints([1, 2, 1, 0, 1]))
case("getitem_grad", "slice", lambda xp, g: O.getitem_grad(g, (slice(1, 3), slice(None)), (4, 3)),
     lambda xp, g: xp.concat([xp.zeros((1, 3), dtype=g.dtype), g, xp.zeros((1, 3), dtype=g.dtype)], axis=0), F((2, 3)))
case("setitem", "slice", lambda xp, x, v: O.setitem(x, (slice(1, 3), slice(None)), v),
     lambda xp, x, v: xp.concat([x[:1, :], v, x[3:, :]], axis=0), F((4, 3)), F((2, 3)))
case("setitem", "column_bcast", lambda xp, x, v: O.setitem(x, (slice(None), 1), v),
     lambda xp, x, v: xp.where(xp.arange(3) == 1, xp.reshape(v, (4, 1)), x), F((4, 3)), F((4,)))

# ---------------------------------------------------------------------------
# Reductions: axis and keepdims
# ---------------------------------------------------------------------------
for _name in ("sum", "max", "min"):
    _kind = "any" if _name == "sum" else "distinct"
    for _variant, _kw in [("all", {}), ("axis0", {"axis": 0}), ("axis_neg_keepdims", {"axis": -1, "keepdims": True}),
                          ("axes_tuple", {"axis": (0, 2)}), ("axes_tuple_keepdims", {"axis": (0, 2), "keepdims": True})]:
        case(_name, _variant, lambda xp, x, _n=_name, _kw=_kw: getattr(pg, _n)(x, **_kw),
             lambda xp, x, _n=_name, _kw=_kw: getattr(xp, _n)(x, **_kw), F((2, 3, 4), _kind))
case("sum", "0d", lambda xp, x: pg.sum(x), lambda xp, x: xp.sum(x), F(()))
for _variant, _kw in [("all", {}), ("axis1_keepdims", {"axis": 1, "keepdims": True})]:
    case("mean", _variant, lambda xp, x, _kw=_kw: pg.mean(x, **_kw), lambda xp, x, _kw=_kw: xp.mean(x, **_kw),
         F((2, 3, 4)))

# ---------------------------------------------------------------------------
# Neural-network functions (rows of the table) and composed losses
# ---------------------------------------------------------------------------
case("relu", "2d", lambda xp, x: F_.relu(x), lambda xp, x: xp.where(x > 0, x, xp.zeros_like(x)), F((2, 3), "nonzero"))
case("sigmoid", "2d", lambda xp, x: F_.sigmoid(x), lambda xp, x: 1 / (1 + xp.exp(-x)), F((2, 3)))
case("softmax", "axis1", lambda xp, x: F_.softmax(x), lambda xp, x: _softmax(xp, x, 1), F((2, 4)))
case("softmax", "axis0", lambda xp, x: F_.softmax(x, axis=0), lambda xp, x: _softmax(xp, x, 0), F((3, 2)))
case("log_softmax", "axis1", lambda xp, x: F_.log_softmax(x), lambda xp, x: _log_softmax(xp, x, 1), F((2, 4)))
case("linear", "bias", lambda xp, x, w, b: F_.linear(x, w, b), lambda xp, x, w, b: x @ xp.matrix_transpose(w) + b,
     F((4, 3)), F((2, 3)), F((2,)))
case("softmax_cross_entropy", "mean",
     lambda xp, x, t: F_.softmax_cross_entropy(x, t),
     lambda xp, x, t: -xp.mean(xp.sum(_log_softmax(xp, x, 1) * _onehot(xp, t, 3, x.dtype), axis=1)),
     F((4, 3)), ints([0, 2, 1, 2]))
_T = [0, 2, -1, 2]
case("softmax_cross_entropy", "ignore_label", lambda xp, x, t: F_.softmax_cross_entropy(x, t),
     lambda xp, x, t: -xp.sum(_log_softmax(xp, x, 1) * _onehot(xp, t, 3, x.dtype)) / 3, F((4, 3)), ints(_T))
if "softmax_cross_entropy_label_mask" in REGISTRY:  # private rows: cases only while they exist
    case("softmax_cross_entropy_label_mask", "ignore_label",
         lambda xp, x, t: apply(REGISTRY["softmax_cross_entropy_label_mask"], (x, t), {"ignore_label": -1}),
         lambda xp, x, t: _onehot(xp, t, 3, xp.int64) == 1, F((4, 3)), ints(_T), order=0)
if "softmax_cross_entropy_valid_count" in REGISTRY:
    case("softmax_cross_entropy_valid_count", "ignore_label",
         lambda xp, x, t: apply(REGISTRY["softmax_cross_entropy_valid_count"], (x, t), {"ignore_label": -1}),
         lambda xp, x, t: xp.asarray(3.0, dtype=x.dtype), F((4, 3)), ints(_T), order=0)
    case("softmax_cross_entropy_valid_count", "all_ignored",
         lambda xp, x, t: apply(REGISTRY["softmax_cross_entropy_valid_count"], (x, t), {"ignore_label": -1}),
         lambda xp, x, t: xp.asarray(1.0, dtype=x.dtype), F((2, 3)), ints([-1, -1]), order=0)
case("mean_squared_error", "plain", lambda xp, x, y: F_.mean_squared_error(x, y),
     lambda xp, x, y: xp.mean((x - y) * (x - y)), F((2, 3)), F((2, 3)))


from polygrad_conformance import cases_more  # noqa: E402,F401  (the rest of the standard, appended to CASES)


def by_op() -> dict[str, list[Case]]:
    out: dict[str, list[Case]] = {}
    for c in CASES:
        out.setdefault(c.op, []).append(c)
    return out

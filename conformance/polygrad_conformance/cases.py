"""The op cases: one row per (op, variant), covering every row of
``polygrad.ops.REGISTRY`` plus the composed functions users call. It is the
only table of op cases: the conformance suite runs it on the backend under
test, and polygrad's own tests run it in-process on numpy and array_api_strict.

This file holds the model and the standard's main chapters (element-wise,
creation, manipulation, indexing, statistics, searching, sorting, sets,
utility); ``cases_extensions.py`` holds linear algebra, the fft extension and
polygrad's own rows (neural-network functions, private rows).

A case gives the polygrad call ``fn(xp, *args)``, the reference written with the
backend's own namespace ``ref(xp, *args)``, and its arguments:

* ``F(shape, kind)``: a float input, differentiated by the gradient checks
  (``raw=True``: passed as a raw array and not differentiated). Values are
  fixed by the case id; ``kind`` keeps them where the op is smooth:
  ``any`` (-1, 1), ``pos`` (0.5, 1.5), ``unit`` (-0.8, 0.8), ``prob`` (0.1, 0.9), ``gt1`` (1.2, 2),
  ``nonzero`` (0.3 <= |x| < 1),
  ``distinct`` (well separated, so max/maximum have no ties within eps),
  ``grid`` (from {-0.5, 0, 0.5}, so comparisons see ties),
  ``wellcond`` (``any`` plus n on the diagonal of the last two axes: an
  invertible, well-conditioned matrix stack),
  ``complex`` (real and imaginary parts in (-1, 1); a complex array) and
  ``complex_off_cuts`` (off the branch cuts of log, sqrt, asin, acos, atanh,
  asinh, atan); ``lit(values)`` gives fixed values;
* ``C(build)``: a constant built with ``build(xp, float_dtype)`` (index
  arrays, masks, labels), never differentiated.

``order`` is the highest derivative checked numerically (0: none; the op has
no gradient). ``requires`` names BackendInfo capabilities the case needs.
``tol`` overrides the float64 tolerances of the gradient checks (``eps``,
``grad_rtol``, ``grad_atol``) or, for a row whose reference needs more, of its
forward comparisons (``rtol``, ``atol``; none does). ``no_grad`` lists the float inputs that get no
gradient by design (copysign's sign source). ``grad_of_vjp`` also checks the
vjp as a function of the output gradient (for linear maps, whose second
derivative in the input is zero). ``signed_zeros`` compares the results' zeros
with their signs (only where the standard specifies them); ``atol`` overrides
the absolute tolerance of the forward comparisons at every dtype (0 for results
of small magnitude).

Two tiers. The core cases (one or a few per op and calling form) are what
every backend must pass. The in-depth cases, written inside ``with depth:``,
check polygrad's own rules further (more shapes, broadcasting patterns,
arguments, zeros and other corners): polygrad's tests run them on numpy and
array_api_strict, the conformance suite only with ``--polygrad-depth``.
"""

from __future__ import annotations

import dataclasses
import math
import random
import zlib
from typing import Any, Callable

import polygrad as pg
import polygrad.functions as F_
from polygrad_conformance._util import index_dtype
from polygrad import ops as O
from polygrad.ops import REGISTRY
from polygrad.ops.manipulation import KeyArg
from polygrad.ops import fft as FFT


@dataclasses.dataclass(frozen=True)
class F:
    shape: tuple
    kind: str = "any"
    raw: bool = False
    values: tuple = ()  # kind "values": these, flat

    @property
    def is_complex(self) -> bool:
        return self.kind.startswith("complex")

    def make(self, xp: Any, dtype: Any, seed: int) -> Any:
        """An array of the backend with this spec's values (``dtype``'s complex counterpart for complex kinds)."""
        if self.is_complex:
            dtype = xp.complex128 if dtype == xp.float64 else xp.complex64
        a = xp.asarray(_values(self, random.Random(seed)), dtype=dtype)
        return xp.reshape(a, self.shape)


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
    tol: tuple = ()  # (name, value) pairs overriding the float64 tolerances (plugin.Tol's fields)
    no_grad: tuple = ()  # argument positions that get no gradient by design
    grad_of_vjp: bool = False
    depth: bool = False  # checks polygrad's own rules in depth (see the module docstring)
    # right up to the signs of vectors (eigenvectors, singular vectors, QR's factors): another
    # backend's library may flip them, so values are compared across backends by magnitude
    up_to_sign: bool = False
    # the standard specifies the sign of each zero result (abs(-0.0) is +0.0, -(+0.0) is -0.0): the
    # results' zeros are compared with their signs
    signed_zeros: bool = False
    # the absolute tolerance of the forward comparisons at every dtype (None: the dtype's): 0 for
    # results of small magnitude (log1p and expm1 near 0), where the dtype's would excuse an error of 100%
    atol: float | None = None

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

    @property
    def is_complex(self) -> bool:
        """Some input is complex (outputs may be complex without it)."""
        return any(isinstance(s, F) and s.is_complex for s in self.args)

    def make(self, xp: Any, dtype: Any) -> list:
        """The arguments as arrays of the backend (fixed values per case id)."""
        seed = zlib.crc32(self.id.encode())
        return [s.build(xp, dtype) if isinstance(s, C) else s.make(xp, dtype, seed + i) for i, s in enumerate(self.args)]

    def differentiable_args(self) -> list[int]:
        return [i for i, s in enumerate(self.args) if isinstance(s, F) and not s.raw]

    def tolerance(self, tol: Any, dtype: Any, xp: Any) -> Any:
        """``tol`` (the tolerances of ``dtype``) with this case's overrides: ``tol`` where ``dtype`` is
        float64, ``atol`` at every dtype."""
        if self.tol and dtype == getattr(xp, "float64", None):
            tol = dataclasses.replace(tol, **dict(self.tol))
        return tol if self.atol is None else dataclasses.replace(tol, atol=self.atol)


def _values(spec: F, r: random.Random) -> list:
    n = math.prod(spec.shape)
    kind = spec.kind
    if kind == "values":
        return list(spec.values)
    if kind == "any":
        return [r.uniform(-1, 1) for _ in range(n)]
    if kind == "pos":
        return [r.uniform(0.5, 1.5) for _ in range(n)]
    if kind == "unit":
        return [r.uniform(-0.8, 0.8) for _ in range(n)]
    if kind == "prob":  # probabilities (a draw refuses values outside [0, 1])
        return [r.uniform(0.1, 0.9) for _ in range(n)]
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
    if kind == "wellcond":
        rows, cols = spec.shape[-2:]
        return [r.uniform(-1, 1) + (cols if (k // cols) % rows == k % cols else 0) for k in range(n)]
    if kind == "complex":
        return [complex(r.uniform(-1, 1), r.uniform(-1, 1)) for _ in range(n)]
    if kind == "complex_off_cuts":
        return [complex(r.choice((-1, 1)) * r.uniform(0.2, 0.8), r.uniform(0.3, 0.8)) for _ in range(n)]
    raise ValueError(f"unknown value kind {kind!r}")


def lit(values: Any) -> F:
    """A float input with these (nested, non-empty) values."""
    shape, level = [], [values]
    while isinstance(level[0], (list, tuple)):
        shape.append(len(level[0]))
        level = [v for part in level for v in part]
    return F(tuple(shape), "values", values=tuple(level))


def ints(values: Any) -> C:
    return C(lambda xp, dt: xp.asarray(values, dtype=index_dtype(xp)))


def bools(values: Any) -> C:
    return C(lambda xp, dt: xp.asarray(values, dtype=xp.bool))


def floats(values: Any) -> C:
    return C(lambda xp, dt: xp.asarray(values, dtype=dt))


def _onehot(xp: Any, idx: Any, n: int, dtype: Any) -> Any:
    return xp.astype(xp.reshape(idx, (-1, 1)) == xp.reshape(xp.arange(n, dtype=idx.dtype), (1, -1)), dtype)


_DDS = ("data_dependent_shapes",)
_CPLX = ("complex",)
CASES: list[Case] = []


class _Depth:
    """``with depth:`` marks the cases registered inside it as in-depth ones."""

    on = False

    def __enter__(self) -> None:
        type(self).on = True

    def __exit__(self, *exc: Any) -> None:
        type(self).on = False


depth = _Depth()


def case(op: str, variant: str, fn: Callable, ref: Callable, *args: Any, tol: dict | None = None, **kw: Any) -> None:
    CASES.append(Case(op, variant, fn, ref, tuple(args), tol=tuple((tol or {}).items()), depth=_Depth.on, **kw))


def _xp_fn(xp: Any, path: str) -> Any:
    obj = xp
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _pg_fn(path: str) -> Any:
    from polygrad.ops import linalg as LA

    if path.startswith("linalg."):
        return getattr(LA, path[7:])
    if path.startswith("fft."):
        return getattr(FFT, path[4:])
    return getattr(O, path)


def mirror(op: str, variant: str, path: str, *args: Any, kw: dict | None = None, **opts: Any) -> None:
    """Case: ``polygrad <path>(*args, **kw)`` against ``xp.<path>(*args, **kw)``."""
    kw = dict(kw or {})
    case(op, variant, lambda xp, *a: _pg_fn(path)(*a, **kw), lambda xp, *a: _xp_fn(xp, path)(*a, **kw), *args, **opts)


# ---------------------------------------------------------------------------
# Element-wise, unary
# ---------------------------------------------------------------------------
for _name, _kind in [("exp", "any"), ("log", "pos"), ("sin", "any"), ("cos", "any"), ("tanh", "any"),
                     ("sqrt", "pos"), ("abs", "nonzero")]:
    case(_name, "2d", lambda xp, x, _n=_name: getattr(pg, _n)(x), lambda xp, x, _n=_name: getattr(xp, _n)(x),
         F((2, 3), _kind))
case("exp", "0d", lambda xp, x: pg.exp(x), lambda xp, x: xp.exp(x), F(()))
with depth:
    case("abs", "operator", lambda xp, x: abs(x) * x, lambda xp, x: xp.abs(x) * x, F((4,), "nonzero"))
case("negative", "operator", lambda xp, x: -x, lambda xp, x: -x, F((2, 3)))
with depth:
    case("negative", "function_0d", lambda xp, x: pg.negative(x), lambda xp, x: -x, F(()))
case("positive", "operator", lambda xp, x: +x, lambda xp, x: +x, F((2, 3)))
with depth:
    case("positive", "function", lambda xp, x: pg.positive(x) * x, lambda xp, x: x * x, F((3,)))
case("sign", "2d", lambda xp, x: pg.sign(x), lambda xp, x: xp.sign(x), F((2, 3), "nonzero"), order=0)
with depth:
    case("sign", "of_difference", lambda xp, x, y: pg.sign(x - y), lambda xp, x, y: xp.sign(x - y),
         F((2, 3), "grid"), F((3,), "grid"), order=0)
for _name, _kind in [("acos", "unit"), ("asin", "unit"), ("atan", "any"), ("atanh", "unit"), ("acosh", "gt1"),
                     ("asinh", "any"), ("cosh", "any"), ("sinh", "any"), ("tan", "any"), ("expm1", "any"),
                     ("log1p", "pos"), ("log2", "pos"), ("log10", "pos"), ("square", "any"), ("reciprocal", "nonzero")]:
    mirror(_name, "2d", _name, F((2, 3), _kind))
# Where log1p, expm1 and logaddexp exist for their accuracy: arguments of small magnitude, compared
# relatively (log(1 + x) is 0 at x = 1e-17), and large ones (exp(800) overflows)
_SMALL = [1e-17, -3e-12, 1e-10, 2.5e-8]
for _name in ("log1p", "expm1"):
    mirror(_name, "small", _name, lit(_SMALL), order=0, atol=0.0)
mirror("logaddexp", "large", "logaddexp", lit([800.0, -1000.0, 710.0, 1e3]), lit([799.0, -1001.0, 1.0, -1e3]), order=0)
for _name in ("ceil", "floor", "round", "trunc", "isnan", "isinf", "isfinite", "signbit"):
    mirror(_name, "2d", _name, F((2, 3), "grid"), order=0)
_SPECIAL = [1.0, -math.inf, math.nan, -0.0, 0.0, 3.5]
# Signs of zeros, where the standard specifies them (the special cases of abs, multiply, copysign,
# ceil, floor, round and trunc; negation flips the sign bit, as IEEE 754's negate): a library
# losing -0.0 (negating by 0 - x) turns 1 / -x at x = +0.0 into +inf. The references are the
# namespace's functions, not the operators the polygrad calls use.
for _name, _fn, _ref in [("negative", lambda xp, x: -x, lambda xp, x: xp.negative(x)),
                         ("positive", lambda xp, x: +x, lambda xp, x: xp.positive(x)),
                         ("abs", lambda xp, x: abs(x), lambda xp, x: xp.abs(x))]:
    case(_name, "signed_zeros", _fn, _ref, lit(_SPECIAL), order=0, signed_zeros=True)
case("multiply", "signed_zeros", lambda xp, x, y: x * y, lambda xp, x, y: xp.multiply(x, y), lit(_SPECIAL),
     lit([-0.0, -2.0, 1.0, -2.5, -1.5, 0.0]), order=0, signed_zeros=True)
mirror("copysign", "signed_zeros", "copysign", lit(_SPECIAL), lit([-0.0, 0.0, -1.0, 0.0, -0.0, -0.0]), order=0,
       signed_zeros=True)
for _name in ("ceil", "floor", "round", "trunc"):
    mirror(_name, "signed_zeros", _name, lit(_SPECIAL), order=0, signed_zeros=True)
mirror("isnan", "nan_inf", "isnan", floats([1.0, math.nan, -math.inf]), order=0)
mirror("isinf", "nan_inf", "isinf", floats([1.0, math.nan, -math.inf]), order=0)
with depth:
    mirror("isfinite", "special", "isfinite", floats(_SPECIAL), order=0)
    mirror("signbit", "special", "signbit", floats(_SPECIAL), order=0)
mirror("logical_not", "bool", "logical_not", bools([True, False, True]), order=0)
mirror("bitwise_invert", "int", "bitwise_invert", ints([0, 5, -3]), order=0)
case("erf", "2d", lambda xp, x: F_.erf(x),
     lambda xp, x: xp.reshape(xp.asarray([math.erf(v) for v in _flat(xp, x)], dtype=x.dtype), x.shape), F((2, 3)))
case("erfc", "2d", lambda xp, x: O.nn.erfc(x),
     lambda xp, x: xp.reshape(xp.asarray([math.erfc(v) for v in _flat(xp, x)], dtype=x.dtype), x.shape), F((2, 3)))
case("softplus", "2d", lambda xp, x: F_.softplus(x), lambda xp, x: xp.log1p(xp.exp(x)), F((2, 3)))
case("softplus", "beta", lambda xp, x: F_.softplus(x, beta=2.0), lambda xp, x: xp.log1p(xp.exp(2.0 * x)) / 2.0, F((2, 3)))


def _flat(xp: Any, x: Any) -> list:
    flat = xp.reshape(x, (-1,))
    return [float(flat[i]) for i in range(flat.shape[0])]


# Complex numbers: built from real leaves with rfft (real input, complex output, as the
# standard specifies), so gradients are checked on real inputs.
case("real", "of_rfft", lambda xp, x: O.real(FFT.rfft(x)), lambda xp, x: xp.real(xp.fft.rfft(x)), F((2, 4)), requires=_CPLX)
case("imag", "of_rfft", lambda xp, x: O.imag(FFT.rfft(x)), lambda xp, x: xp.imag(xp.fft.rfft(x)), F((2, 4)), requires=_CPLX)
case("conj", "of_rfft", lambda xp, x: O.imag(O.conj(FFT.rfft(x))), lambda xp, x: xp.imag(xp.conj(xp.fft.rfft(x))),
     F((2, 4)), requires=_CPLX)

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
    with depth:
        case(_name, "raw_left_function", lambda xp, a, y, _n=_name: getattr(pg, _n)(a, y),
             lambda xp, a, y, _n=_name: getattr(xp, _n)(a, y), F((3,), raw=True), F((3,), _kind))
with depth:
    case("add", "function_bcast_outer", lambda xp, x, y: pg.add(x, y), lambda xp, x, y: xp.add(x, y), F((3, 1)), F((4,)))
    case("add", "0d_and_0d", lambda xp, x, y: x + y, lambda xp, x, y: x + y, F(()), F(()))
    case("subtract", "function_scalar_right", lambda xp, x: pg.subtract(x, 1.5), lambda xp, x: x - 1.5, F((2, 3)))
    case("multiply", "same_input_twice", lambda xp, x: x * x, lambda xp, x: x * x, F((3,)))

case("pow", "same", lambda xp, x, y: x ** y, lambda xp, x, y: x ** y, F((2, 3), "pos"), F((2, 3)))
case("pow", "bcast_row", lambda xp, x, y: pg.pow(x, y), lambda xp, x, y: xp.pow(x, y), F((2, 3), "pos"), F((3,)))
with depth:
    case("pow", "bcast_outer", lambda xp, x, y: x ** y, lambda xp, x, y: x ** y, F((3, 1), "pos"), F((4,)))
    case("pow", "0d", lambda xp, x, y: x ** y, lambda xp, x, y: x ** y, F((), "pos"), F(()))
case("pow", "scalar_exponent", lambda xp, x: x ** 3.0, lambda xp, x: x ** 3.0, F((2, 3)))
with depth:
    case("pow", "scalar_int_exponent", lambda xp, x: x ** 3, lambda xp, x: x ** 3, F((4,)))
    case("pow", "function_scalar_half", lambda xp, x: pg.pow(x, 0.5), lambda xp, x: x ** 0.5, F((4,), "pos"))
case("pow", "scalar_base", lambda xp, x: 2.0 ** x, lambda xp, x: 2.0 ** x, F((2, 3)))
with depth:
    case("pow", "function_scalar_base", lambda xp, x: pg.pow(2.0, x), lambda xp, x: 2.0 ** x, F((2,)))
    case("pow", "raw_left_function", lambda xp, a, y: pg.pow(a * a + 0.5, y), lambda xp, a, y: xp.pow(a * a + 0.5, y),
         F((3,), raw=True), F((3,)))
case("maximum", "same", lambda xp, x, y: pg.maximum(x, y), lambda xp, x, y: xp.maximum(x, y),
     F((2, 3), "distinct"), F((2, 3), "distinct2"))
case("maximum", "bcast_row", lambda xp, x, y: pg.maximum(x, y), lambda xp, x, y: xp.maximum(x, y),
     F((2, 3), "distinct"), F((3,), "distinct2"))
with depth:
    case("maximum", "bcast_outer", lambda xp, x, y: pg.maximum(x, y), lambda xp, x, y: xp.maximum(x, y),
         lit([[0.1], [1.3], [-0.7]]), lit([0.5, -1.1, 0.9, 2.0]))
case("maximum", "raw_left", lambda xp, a, y: pg.maximum(a, y), lambda xp, a, y: xp.maximum(a, y),
     F((2, 3), "distinct", raw=True), F((2, 3), "distinct2"))
with depth:
    case("maximum", "scalar_right", lambda xp, x: pg.maximum(x, 0.0), lambda xp, x: xp.maximum(x, xp.zeros_like(x)),
         F((2, 3), "nonzero"))
    case("maximum", "scalar_left", lambda xp, x: pg.maximum(0.0, x), lambda xp, x: xp.maximum(x, xp.zeros_like(x)),
         F((2, 3), "nonzero"))
case("where", "same", lambda xp, c, x, y: pg.where(c, x, y), lambda xp, c, x, y: xp.where(c, x, y),
     bools([[True, False, True], [False, False, True]]), F((2, 3)), F((2, 3)))
case("where", "bcast", lambda xp, c, x, y: pg.where(c, x, y), lambda xp, c, x, y: xp.where(c, x, y),
     bools([True, False, True]), F((2, 3)), F((3,)))
with depth:
    case("where", "bcast_all_three", lambda xp, c, x, y: pg.where(c, x, y), lambda xp, c, x, y: xp.where(c, x, y),
         bools([[True, False, True, False]]), F((3, 1)), F((4,)))
case("where", "scalar", lambda xp, c, x: pg.where(c, x, 0.0), lambda xp, c, x: xp.where(c, x, xp.zeros_like(x)),
     bools([[True, False, True], [False, True, True]]), F((2, 3)))
with depth:
    case("where", "condition_from_variable", lambda xp, x: pg.where(x > 0, x * x, -x), lambda xp, x: xp.where(x > 0, x * x, -x),
         F((2, 3), "nonzero"))
    case("where", "raw_left_function", lambda xp, a, y: pg.where(a > 0, a, y * y), lambda xp, a, y: xp.where(a > 0, a, y * y),
         F((3,), "nonzero", raw=True), F((3,)))
for _name, _kx, _ky in [("atan2", "nonzero", "nonzero"), ("copysign", "nonzero", "nonzero"), ("hypot", "nonzero", "any"),
                        ("logaddexp", "any", "any"), ("minimum", "distinct", "distinct2"), ("remainder", "nonzero", "gt1")]:
    mirror(_name, "same", _name, F((2, 3), _kx), F((2, 3), _ky), no_grad=(1,) if _name == "copysign" else ())
mirror("minimum", "bcast_row", "minimum", F((2, 3), "distinct"), F((3,), "distinct2"))
# NaN on either side gives NaN (the standard's special case; references as values: a namespace
# dropping NaNs, as numpy's fmax does, is its own reference)
_NAN = math.nan
for _name, _want in [("maximum", [_NAN, _NAN, 3.0, _NAN]), ("minimum", [_NAN, _NAN, 0.0, _NAN])]:
    case(_name, "nan", lambda xp, x, y, _n=_name: getattr(pg, _n)(x, y),
         lambda xp, x, y, _want=_want: xp.asarray(_want, dtype=x.dtype), lit([1.0, _NAN, 3.0, _NAN]),
         lit([_NAN, 2.0, 0.0, _NAN]), order=0)
mirror("floor_divide", "float", "floor_divide", F((2, 3), "nonzero"), F((2, 3), "gt1"), order=0)
with depth:
    mirror("floor_divide", "bcast", "floor_divide", floats([[1.5, -2.5, 0.5], [-0.0, 2.0, -0.7]]), floats([2.0, -1.5, 0.25]),
           order=0)
mirror("nextafter", "float", "nextafter", F((2, 3)), F((2, 3)), no_grad=(1,))
for _name in ("logical_and", "logical_or", "logical_xor"):
    mirror(_name, "bool", _name, bools([True, False, True, False]), bools([True, True, False, False]), order=0)
    with depth:
        mirror(_name, "bcast", _name, bools([[True, False, True], [False, False, True]]), bools([True, False, False]), order=0)
for _name in ("bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift"):
    mirror(_name, "int", _name, ints([12, 5, 7, 1]), ints([1, 2, 3, 0]), order=0)
    with depth:
        mirror(_name, "bcast", _name, ints([[5, 3, 12], [7, 0, 8]]), ints([1, 2, 3]), order=0)

# clip: scalar, array, one-sided and absent bounds; array bounds are differentiated too
case("clip", "both", lambda xp, x: O.clip(x, min=-0.5, max=0.5), lambda xp, x: xp.clip(x, min=-0.5, max=0.5),
     F((3, 4), "distinct"))
case("clip", "min_only", lambda xp, x: O.clip(x, min=0.0), lambda xp, x: xp.clip(x, min=0.0), F((3, 4), "distinct"))
# (the row's one call with upper=True: a kernel of the standard's signature alone fails it)
case("clip", "max_scalar_only", lambda xp, x: O.clip(x, None, 0.2), lambda xp, x: xp.clip(x, None, 0.2), F((4,), "distinct"))
with depth:
    case("clip", "no_bounds", lambda xp, x: O.clip(x), lambda xp, x: xp.clip(x), F((4,)))
    case("clip", "arrays", lambda xp, x, lo, hi: O.clip(x, -lo, hi), lambda xp, x, lo, hi: xp.clip(x, -lo, hi),
         F((2, 3), "distinct"), F((3,), "pos"), F((2, 1), "pos"))
    case("clip", "min_array_only", lambda xp, x, lo: O.clip(x, min=-lo), lambda xp, x, lo: xp.clip(x, min=-lo),
         F((2, 3), "distinct"), F((2, 3), "pos"))
    case("clip", "max_array_only", lambda xp, x, hi: O.clip(x, max=hi), lambda xp, x, hi: xp.clip(x, max=hi),
         F((2, 3), "distinct"), F((3,), "pos"))
    case("clip", "0d", lambda xp, x, hi: O.clip(x, -0.1, hi), lambda xp, x, hi: xp.clip(x, -0.1, hi), F(()), F((), "pos"))
    case("clip", "int", lambda xp, a: O.clip(a, 0, 5), lambda xp, a: xp.clip(a, 0, 5), ints([-3, 0, 4, 9]), order=0)
    case("clip", "int_max_only", lambda xp, a: O.clip(a, max=2), lambda xp, a: xp.clip(a, max=2), ints([-3, 0, 4, 9]), order=0)
    case("clip", "bounds_broadcast_x", lambda xp, x, lo: O.clip(x, -lo), lambda xp, x, lo: xp.clip(x, -lo),
         F((3,), "distinct"), F((2, 1), "pos"))

# Comparisons: no gradient; their results are boolean arrays of the backend.
for _name, _f in [("equal", lambda a, b: a == b), ("not_equal", lambda a, b: a != b), ("less", lambda a, b: a < b),
                  ("less_equal", lambda a, b: a <= b), ("greater", lambda a, b: a > b),
                  ("greater_equal", lambda a, b: a >= b)]:
    case(_name, "operator", lambda xp, x, y, _f=_f: _f(x, y), lambda xp, x, y, _f=_f: _f(x, y),
         F((3, 4), "grid"), F((3, 4), "grid"), order=0)
    with depth:
        case(_name, "operator_bcast", lambda xp, x, y, _f=_f: _f(x, y), lambda xp, x, y, _f=_f: _f(x, y),
             F((2, 3), "grid"), F((3,), "grid"), order=0)
        mirror(_name, "function_bcast", _name, F((2, 3), "grid"), F((3,), "grid"), order=0)
    case(_name, "bcast_scalar", lambda xp, x, _f=_f: _f(x, 0.0), lambda xp, x, _f=_f: _f(x, 0.0),
         F((3, 4), "grid"), order=0)

case("zeros_like", "plain", lambda xp, x: pg.zeros_like(x), lambda xp, x: xp.zeros_like(x), F((2, 3)), order=0)
case("zeros_like", "dtype", lambda xp, x: pg.zeros_like(x, dtype=index_dtype(xp)), lambda xp, x: xp.zeros_like(x, dtype=index_dtype(xp)),
     F((2, 3)), order=0)
case("ones_like", "plain", lambda xp, x: pg.ones_like(x), lambda xp, x: xp.ones_like(x), F((2, 3)), order=0)
with depth:
    case("ones_like", "dtype", lambda xp, x: pg.ones_like(x, dtype=index_dtype(xp)), lambda xp, x: xp.ones_like(x, dtype=index_dtype(xp)),
         F((2,)), order=0)
_TO_F32 = {"eps": 1e-2, "grad_atol": 1e-4, "grad_rtol": 1e-3}  # the float32 result limits the precision
case("astype", "same", lambda xp, x: pg.astype(x, x.dtype), lambda xp, x: xp.astype(x, x.dtype), F((2, 3)))
case("astype", "to_float32", lambda xp, x: pg.astype(x, xp.float32), lambda xp, x: xp.astype(x, xp.float32),
     F((2, 3)), order=1, requires=("float64",), tol=_TO_F32)

# ---------------------------------------------------------------------------
# Creation (their results are arrays of the current backend)
# ---------------------------------------------------------------------------
case("arange", "stop", lambda xp: O.arange(5), lambda xp: xp.arange(5), order=0)
case("arange", "float_step", lambda xp: O.arange(0.0, 1.0, 0.25, dtype=xp.float32),
     lambda xp: xp.arange(0.0, 1.0, 0.25, dtype=xp.float32), order=0)
with depth:
    case("arange", "start_stop_step", lambda xp: O.arange(1.0, 3.0, 0.5, dtype=xp.float64),
         lambda xp: xp.arange(1.0, 3.0, 0.5, dtype=xp.float64), order=0, requires=("float64",))
case("zeros", "2d", lambda xp: O.zeros((2, 3), dtype=xp.float32), lambda xp: xp.zeros((2, 3), dtype=xp.float32), order=0)
with depth:
    case("zeros", "default_dtype", lambda xp: O.zeros((2, 3)), lambda xp: xp.zeros((2, 3)), order=0)
case("ones", "2d", lambda xp: O.ones((2, 3), dtype=index_dtype(xp)), lambda xp: xp.ones((2, 3), dtype=index_dtype(xp)), order=0)
with depth:
    case("ones", "int32_1d", lambda xp: O.ones(3, dtype=xp.int32), lambda xp: xp.ones(3, dtype=xp.int32), order=0)
case("full", "2d", lambda xp: O.full((2, 3), 1.5, dtype=xp.float32), lambda xp: xp.full((2, 3), 1.5, dtype=xp.float32), order=0)
case("empty", "2d", lambda xp: O.empty((2, 3), dtype=xp.float32), lambda xp: xp.empty((2, 3), dtype=xp.float32), order=0,
     values=False)
case("eye", "square", lambda xp: O.eye(3, dtype=xp.float32), lambda xp: xp.eye(3, dtype=xp.float32), order=0)
case("eye", "offset", lambda xp: O.eye(3, 4, k=1, dtype=xp.float32), lambda xp: xp.eye(3, 4, k=1, dtype=xp.float32), order=0)
case("linspace", "5", lambda xp: O.linspace(0.0, 1.0, 5, dtype=xp.float32), lambda xp: xp.linspace(0.0, 1.0, 5, dtype=xp.float32),
     order=0)
with depth:
    case("linspace", "endpoint_false", lambda xp: O.linspace(0.0, 1.0, 5, endpoint=False),
         lambda xp: xp.linspace(0.0, 1.0, 5, endpoint=False), order=0)
    case("empty", "int_shape", lambda xp: O.empty(4), lambda xp: xp.empty(4), order=0, values=False)
mirror("empty_like", "2d", "empty_like", F((2, 3)), order=0, values=False)
with depth:
    case("empty_like", "dtype", lambda xp, x: O.empty_like(x, dtype=index_dtype(xp)), lambda xp, x: xp.empty_like(x, dtype=index_dtype(xp)),
         F((1, 3)), order=0, values=False)
case("full_like", "2d", lambda xp, x: O.full_like(x, 2.5), lambda xp, x: xp.full_like(x, 2.5), F((2, 3)), order=0)
with depth:
    case("full_like", "dtype", lambda xp, x: O.full_like(x, 1, dtype=xp.int32), lambda xp, x: xp.full_like(x, 1, dtype=xp.int32),
         F((2, 2)), order=0)
# From an array of the backend itself: the same values and shape, whatever the namespace's from_dlpack says.
case("from_dlpack", "raw", lambda xp, a: O.from_dlpack(a), lambda xp, a: a, F((2, 3), raw=True))
mirror("asarray", "raw", "asarray", F((2, 3), raw=True))
case("asarray", "copy", lambda xp, x: O.asarray(x, copy=True), lambda xp, x: xp.asarray(x, copy=True), F((2, 3)))
with depth:
    case("asarray", "to_float32", lambda xp, x: O.asarray(x, dtype=xp.float32), lambda xp, x: xp.astype(x, xp.float32),
         F((2, 3)), order=1, requires=("float64",), tol=_TO_F32)
    case("stack", "asarray_of_nested_variables", lambda xp, x, y: O.asarray([[x, y], [y, x]]),
         lambda xp, x, y: xp.stack([xp.stack([x, y]), xp.stack([y, x])]), F(()), F(()))
    case("asarray", "nested_list", lambda xp: O.asarray([[1, 2], [3, 4]], dtype=xp.float32),
         lambda xp: xp.asarray([[1, 2], [3, 4]], dtype=xp.float32), order=0)
for _name in ("tril", "triu"):
    mirror(_name, "k0", _name, F((3, 4)))
    mirror(_name, "k_neg", _name, F((2, 3, 3)), kw={"k": -1})
with depth:
    mirror("triu", "batched_k_1", "triu", F((2, 3, 3)), kw={"k": 1})
    case("meshgrid", "xy_three", lambda xp, x, y, z: O.meshgrid(x, y, z), lambda xp, x, y, z: xp.meshgrid(x, y, z),
         F((2,)), F((3,)), F((4,)))
    case("meshgrid", "ij", lambda xp, x, y: O.meshgrid(x, y, indexing="ij"), lambda xp, x, y: xp.meshgrid(x, y, indexing="ij"),
         F((2,)), F((3,)))
    case("meshgrid", "one_array", lambda xp, x: O.meshgrid(x), lambda xp, x: xp.meshgrid(x), F((3,)))

# ---------------------------------------------------------------------------
# Manipulation: shapes
# ---------------------------------------------------------------------------
case("reshape", "2d", lambda xp, x: pg.reshape(x, (3, 2)), lambda xp, x: xp.reshape(x, (3, 2)), F((2, 3)))
case("reshape", "minus_one", lambda xp, x: pg.reshape(x, (-1,)), lambda xp, x: xp.reshape(x, (-1,)), F((2, 3)))
with depth:
    case("reshape", "minus_one_2d", lambda xp, x: pg.reshape(x, (-1, 2)), lambda xp, x: xp.reshape(x, (-1, 2)), F((2, 6)))
case("reshape", "method", lambda xp, x: x.reshape(3, 1, 2), lambda xp, x: xp.reshape(x, (3, 1, 2)), F((2, 3)))
with depth:
    case("reshape", "to_0d", lambda xp, x: pg.reshape(x, ()), lambda xp, x: xp.reshape(x, ()), F((1, 1)))
case("permute_dims", "3d", lambda xp, x: pg.permute_dims(x, (2, 0, 1)), lambda xp, x: xp.permute_dims(x, (2, 0, 1)),
     F((2, 3, 4)))
with depth:
    case("permute_dims", "negative_axes", lambda xp, x: pg.permute_dims(x, (-1, 0, 1)),
         lambda xp, x: xp.permute_dims(x, (2, 0, 1)), F((2, 3, 4)))
case("permute_dims", "axes", lambda xp, x: x.transpose(1, 0, 2), lambda xp, x: xp.permute_dims(x, (1, 0, 2)), F((2, 3, 4)))
with depth:
    case("permute_dims", "transpose_axes", lambda xp, x: pg.transpose(x, (1, 0, 2)), lambda xp, x: xp.permute_dims(x, (1, 0, 2)),
         F((2, 3, 4)))
case("reverse_dims", "T", lambda xp, x: x.T, lambda xp, x: xp.permute_dims(x, (2, 1, 0)), F((2, 3, 4)))
with depth:
    case("reverse_dims", "T_1d", lambda xp, x: x.T * x, lambda xp, x: x * x, F((3,)))
case("reverse_dims", "transpose", lambda xp, x: pg.transpose(x), lambda xp, x: xp.permute_dims(x, (1, 0)), F((2, 3)))
with depth:
    case("reverse_dims", "transpose_3d", lambda xp, x: pg.transpose(x), lambda xp, x: xp.permute_dims(x, (2, 1, 0)), F((2, 3, 4)))
case("matrix_transpose", "3d", lambda xp, x: pg.matrix_transpose(x), lambda xp, x: xp.matrix_transpose(x), F((2, 3, 4)))
with depth:
    case("matrix_transpose", "mT", lambda xp, x: x.mT, lambda xp, x: xp.matrix_transpose(x), F((3, 4)))
case("broadcast_to", "row", lambda xp, x: pg.broadcast_to(x, (2, 3)), lambda xp, x: xp.broadcast_to(x, (2, 3)), F((3,)))
case("broadcast_to", "column", lambda xp, x: pg.broadcast_to(x, (2, 3)), lambda xp, x: xp.broadcast_to(x, (2, 3)),
     F((2, 1)))
case("broadcast_to", "0d", lambda xp, x: pg.broadcast_to(x, (2, 3)), lambda xp, x: xp.broadcast_to(x, (2, 3)), F(()))
with depth:
    case("broadcast_to", "3x1_to_2x3x4", lambda xp, x: pg.broadcast_to(x, (2, 3, 4)), lambda xp, x: xp.broadcast_to(x, (2, 3, 4)),
         F((3, 1)))
    case("broadcast_arrays", "3x1_and_4", lambda xp, x, y: O.broadcast_arrays(x, y), lambda xp, x, y: xp.broadcast_arrays(x, y),
         F((3, 1)), F((4,)))
case("sum_to", "leading", lambda xp, x: O.sum_to(x, (3,)), lambda xp, x: xp.sum(x, axis=0), F((2, 3)))
case("sum_to", "keepdim", lambda xp, x: O.sum_to(x, (2, 1)), lambda xp, x: xp.sum(x, axis=1, keepdims=True), F((2, 3)))
case("sum_to", "both", lambda xp, x: O.sum_to(x, (1, 4)),
     lambda xp, x: xp.reshape(xp.sum(x, axis=(0, 1)), (1, 4)), F((2, 3, 4)))
with depth:
    case("sum_to", "to_0d", lambda xp, x: O.sum_to(x, ()), lambda xp, x: xp.sum(x), F((3, 4)))
case("expand_dims", "middle", lambda xp, x: pg.expand_dims(x, axis=1), lambda xp, x: xp.expand_dims(x, axis=1), F((2, 3)))
case("expand_dims", "last", lambda xp, x: pg.expand_dims(x, axis=-1), lambda xp, x: xp.expand_dims(x, axis=-1), F((2, 3)))
with depth:
    case("expand_dims", "axis_tuple", lambda xp, x: O.expand_dims(x, (0, -1)), lambda xp, x: xp.expand_dims(x, axis=(0, -1)),
         F((2, 3)))
    case("expand_dims", "positional_minus_2", lambda xp, x: O.expand_dims(x, -2), lambda xp, x: xp.expand_dims(x, axis=-2),
         F((2, 3)))
case("squeeze", "middle", lambda xp, x: pg.squeeze(x, axis=1), lambda xp, x: xp.squeeze(x, axis=1), F((2, 1, 3)))
with depth:
    case("squeeze", "two_axes", lambda xp, x: pg.squeeze(x, axis=(0, 2)), lambda xp, x: xp.squeeze(x, axis=(0, 2)), F((1, 3, 1)))
    case("moveaxis", "tuples", lambda xp, x: O.moveaxis(x, (0, 1), (2, 0)), lambda xp, x: xp.moveaxis(x, (0, 1), (2, 0)),
         F((2, 3, 4)))
    case("moveaxis", "negative", lambda xp, x: O.moveaxis(x, -1, 0), lambda xp, x: xp.moveaxis(x, -1, 0), F((2, 3, 4)))
mirror("flip", "all", "flip", F((2, 3)))
mirror("flip", "axis", "flip", F((2, 3)), kw={"axis": 1})
with depth:
    mirror("flip", "axis_tuple", "flip", F((2, 3, 4)), kw={"axis": (0, 2)})
mirror("roll", "axis", "roll", F((2, 3)), kw={"shift": 1, "axis": 1})
mirror("roll", "flat", "roll", F((2, 3)), kw={"shift": -2})
with depth:
    mirror("roll", "axis_tuple", "roll", F((3, 4)), kw={"shift": (1, -2), "axis": (0, 1)})
case("repeat", "axis", lambda xp, x: O.repeat(x, 2, axis=0), lambda xp, x: xp.repeat(x, 2, axis=0), F((2, 3)))
with depth:
    case("repeat", "int_flat", lambda xp, x: O.repeat(x, 2), lambda xp, x: xp.repeat(x, 2), F((2, 3)))
    case("repeat", "array_axis", lambda xp, x, r: O.repeat(x, r, axis=1), lambda xp, x, r: xp.repeat(x, r, axis=1),
         F((2, 3)), ints([2, 0, 3]), requires=_DDS)
    case("repeat", "array_flat", lambda xp, x, r: O.repeat(x, r), lambda xp, x, r: xp.repeat(x, r), F((2, 2)), ints([1, 0, 2, 1]), requires=_DDS)
case("tile", "2d", lambda xp, x: O.tile(x, (2, 1)), lambda xp, x: xp.tile(x, (2, 1)), F((2, 3)))
with depth:
    case("tile", "more_reps_than_dims", lambda xp, x: O.tile(x, (2, 1, 3)), lambda xp, x: xp.tile(x, (2, 1, 3)), F((2, 3)))
    case("tile", "fewer_reps_than_dims", lambda xp, x: O.tile(x, (2,)), lambda xp, x: xp.tile(x, (2,)), F((2, 3)))
    case("tile", "bool", lambda xp, m: O.tile(m, (2,)), lambda xp, m: xp.tile(m, (2,)),
         bools([[True, False, True], [False, False, True]]), order=0)

# ---------------------------------------------------------------------------
# Manipulation: sequences of arrays
# ---------------------------------------------------------------------------
case("concat", "axis0", lambda xp, x, y: O.concat([x, y], axis=0), lambda xp, x, y: xp.concat([x, y], axis=0),
     F((2, 3)), F((1, 3)))
case("concat", "axis_neg", lambda xp, x, y: O.concat((x, y), axis=-1), lambda xp, x, y: xp.concat((x, y), axis=-1),
     F((2, 3)), F((2, 2)))
with depth:
    case("concat", "axis1_three", lambda xp, x, y: O.concat([x, y, x], axis=1), lambda xp, x, y: xp.concat([x, y, x], axis=1),
         F((2, 3)), F((2, 1)))
    case("concat", "axis_none", lambda xp, x, y: O.concat([x, y], axis=None), lambda xp, x, y: xp.concat([x, y], axis=None),
         F((2, 3)), F((4,)))
    case("concat", "with_empty", lambda xp, x, y: O.concat((x, y), axis=0), lambda xp, x, y: xp.concat((x, y), axis=0),
         F((0, 3)), F((2, 3)))
case("stack", "axis1", lambda xp, x, y: O.stack([x, y], axis=1), lambda xp, x, y: xp.stack([x, y], axis=1), F((2, 3)), F((2, 3)))
with depth:
    case("stack", "axis0", lambda xp, x, y: O.stack([x, y]), lambda xp, x, y: xp.stack([x, y]), F((2, 3)), F((2, 3)))
    case("stack", "axis_minus1_three", lambda xp, x, y: O.stack((x, y, x), axis=-1), lambda xp, x, y: xp.stack((x, y, x), axis=-1),
         F((2, 3)), F((2, 3)))
    case("stack", "0d", lambda xp, x, y: O.stack([x, y]), lambda xp, x, y: xp.stack([x, y]), F(()), F(()))
case("unstack", "axis0", lambda xp, x: O.unstack(x, axis=0), lambda xp, x: xp.unstack(x, axis=0), F((2, 3)), order=0)
with depth:
    case("unstack", "axis1", lambda xp, x: O.unstack(x, axis=1), lambda xp, x: xp.unstack(x, axis=1), F((2, 3)))
case("unstack", "grad", lambda xp, x: O.unstack(x, axis=1)[1] * 2.0 + O.unstack(x, axis=1)[0],
     lambda xp, x: x[:, 1] * 2.0 + x[:, 0], F((2, 3)))
with depth:
    case("unstack", "one_output_used", lambda xp, x: O.unstack(x)[1] * 2.0, lambda xp, x: xp.unstack(x)[1] * 2.0, F((3, 2)))

# ---------------------------------------------------------------------------
# Indexing: x[key] (backward: scatter-add, repeated indices summed)
# ---------------------------------------------------------------------------
def _index(a):
    """An index array as a Variable (no gradient): getitem takes it as an input of the node."""
    return pg.Variable(a, requires_grad=False)


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
with depth:
    for _variant, _fn in [("slices_with_step", lambda x: x[1:, ::2]), ("none_and_int", lambda x: x[None, :, 1])]:
        case("getitem", _variant, lambda xp, x, _fn=_fn: _fn(x), lambda xp, x, _fn=_fn: _fn(x), F((4, 3)))
with depth:
    case("getitem", "ellipsis_3d", lambda xp, x: x[..., 1], lambda xp, x: x[..., 1], F((2, 3, 4)))
    case("getitem", "slices_none_ellipsis", lambda xp, x: x[None, 1:, ..., ::2], lambda xp, x: x[None, 1:, ..., ::2], F((3, 2, 4)))
    case("getitem", "ops_function_basic", lambda xp, x: O.getitem(x, (slice(0, 2), 0)), lambda xp, x: x[0:2, 0], F((3, 4)))
case("getitem", "two_arrays_repeated", lambda xp, x, i, j: x[i, j], _take2, F((4, 3)),
     ints([0, 1, 0, 0]), ints([2, 2, 2, 1]))
case("getitem", "array_and_int", lambda xp, x, i: x[i, 1], lambda xp, x, i: xp.take(x[:, 1], i), F((4, 3)), ints(_IDX))
with depth:
    case("getitem", "ints_and_array_3d", lambda xp, x, i: x[1, i, -1], lambda xp, x, i: xp.take(x[1, :, -1], i),
         F((2, 3, 4)), ints([0, 2, 0]))
case("getitem", "arrays_2d_bcast", lambda xp, x, i, j: x[i, j], _take2, F((4, 3)), ints([[0], [3], [0]]), ints([1, 1, 2]))
case("getitem", "function", lambda xp, x, i, j: F_.getitem(x, (i, j)), _take2, F((4, 3)), ints([3, 3]), ints([0, 0]))
with depth:
    case("getitem", "int_array_1d_repeated", lambda xp, x, i: x[i], lambda xp, x, i: xp.take(x, i), F((3,)), ints([0, 2, 0, 0]))
    case("getitem", "int_array_2d_index_1d", lambda xp, x, i: x[i],
         lambda xp, x, i: xp.reshape(xp.take(x, xp.reshape(i, (-1,))), (2, 2)), F((3,)), ints([[0, 1], [1, 1]]))
# ... and the NumPy shortcuts users write (not in the standard: a backend may xfail them with that reason).
case("getitem", "np_int", lambda xp, x: x[1], lambda xp, x: x[1, ...], F((4, 3)))
case("getitem", "np_slice", lambda xp, x: x[1:3], lambda xp, x: x[1:3, ...], F((4, 3)))
case("getitem", "np_int_array_repeated", lambda xp, x, i: x[i], lambda xp, x, i: xp.take(x, i, axis=0),
     F((4, 3)), ints(_IDX))
case("getitem", "np_int_array_2d", lambda xp, x, i: x[i], lambda xp, x, i: xp.reshape(xp.take(x, xp.reshape(i, (-1,)), axis=0), (2, 2, 3)),
     F((4, 3)), ints([[0, 1], [0, 3]]))
case("getitem", "np_slice_and_array", lambda xp, x, i: x[:, i], lambda xp, x, i: xp.take(x, i, axis=1),
     F((4, 3)), ints([2, 0, 2]))
# Boolean keys: the result's shape depends on the values.
case("getitem", "bool_mask", lambda xp, x, m: x[m], lambda xp, x, m: x[m], F((2, 3)),
     bools([[True, False, True], [False, True, True]]), requires=_DDS)
with depth:
    case("getitem", "bool_mask_leading_axes", lambda xp, x, m: x[m], lambda xp, x, m: x[m], F((2, 3, 2)),
         bools([[True, False, True], [False, False, True]]), requires=_DDS)
    case("getitem", "bool_0d", lambda xp, x, m: x[m], lambda xp, x, m: x[m], F((3, 4)), bools(True), requires=_DDS)
    case("getitem", "bool_0d_false", lambda xp, x, m: x[m], lambda xp, x, m: x[m], F((3, 4)), bools(False), requires=_DDS)
# Index arrays given as Variables are inputs of the node: the row getitem_at (and its vjp's row).
case("getitem_at", "arrays_repeated", lambda xp, x, i, j: x[_index(i), _index(j)], _take2, F((4, 3)),
     ints([0, 1, 0, 0]), ints([2, 2, 2, 1]))
case("getitem_at", "array_and_int", lambda xp, x, i: x[_index(i), 1], lambda xp, x, i: xp.take(x[:, 1], i), F((4, 3)),
     ints(_IDX))
# ... with a boolean mask among them: getitem_mask_at, whose shape depends on the values.
case("getitem_mask_at", "bool_mask_from_values", lambda xp, x: x[x > 0.0], lambda xp, x: x[x > 0.0], F((3, 4), "nonzero"),
     requires=_DDS)
with depth:
    case("getitem_mask_at", "given_mask", lambda xp, x, m: x[_index(m)], lambda xp, x, m: x[m], F((2, 3)),
         bools([[True, False, True], [False, True, True]]), requires=_DDS)
case("getitem_grad_at", "arrays_repeated",
     lambda xp, g, i, j: O.getitem_grad_at(g, _index(i), _index(j), key=(KeyArg(0), KeyArg(1)), shape=(4, 3)),
     lambda xp, g, i, j: xp.reshape(xp.matmul(g, _onehot(xp, i * 3 + j, 12, g.dtype)), (4, 3)), F((5,)), ints(_IDX),
     ints([1, 2, 1, 0, 1]))


def _set_at(xp, x, i, v):
    """1-D ``x`` with positions ``i`` (no repeats) set to ``v``, written with a one-hot matmul."""
    hot = _onehot(xp, i, x.shape[0], x.dtype)
    return xp.where(xp.sum(hot, axis=0) > 0, xp.matmul(xp.broadcast_to(v, (i.shape[0],)), hot), x)


# Item assignment by index arrays given as Variables: setitem_at, and the row of its values'
# gradient (the standard's integer-array keys: one array per axis).
case("setitem_at", "positions", lambda xp, x, i, v: O.setitem(x, _index(i), v), _set_at, F((5,)), ints([3, 0]), F((2,)))
with depth:
    case("setitem_at", "two_arrays_scalar_value", lambda xp, x, i, j, v: O.setitem(x, (_index(i), _index(j)), v),
         lambda xp, x, i, j, v: xp.reshape(_set_at(xp, xp.reshape(x, (12,)), i * 3 + j, v), (4, 3)), F((4, 3)),
         ints([3, 0, 1]), ints([2, 2, 0]), F(()))
    case("setitem_at", "mask", lambda xp, x, m, v: O.setitem(x, _index(m), v), lambda xp, x, m, v: xp.where(m, v, x),
         F((4,)), bools([True, False, True, False]), F(()), requires=_DDS)
case("setitem_value_grad_at", "positions", lambda xp, g, i: O.setitem_value_grad_at(g, _index(i), key=KeyArg(0)),
     lambda xp, g, i: xp.take(g, i), F((5,)), ints([2, 0, 3]))
case("getitem_grad", "arrays_repeated", lambda xp, g, i, j: O.getitem_grad(g, (i, j), (4, 3)),
     lambda xp, g, i, j: xp.reshape(xp.matmul(g, _onehot(xp, i * 3 + j, 12, g.dtype)), (4, 3)), F((5,)), ints(_IDX), ints([1, 2, 1, 0, 1]))
with depth:
    case("getitem_grad", "array_1d_repeated", lambda xp, g, i: O.getitem_grad(g, i, (3,)),
         lambda xp, g, i: xp.matmul(g, _onehot(xp, i, 3, g.dtype)), F((4,)), ints([0, 2, 0, 0]))
case("getitem_grad", "slice", lambda xp, g: O.getitem_grad(g, (slice(1, 3), slice(None)), (4, 3)),
     lambda xp, g: xp.concat([xp.zeros((1, 3), dtype=g.dtype), g, xp.zeros((1, 3), dtype=g.dtype)], axis=0), F((2, 3)))
with depth:
    case("getitem_grad", "bool_mask", lambda xp, g, m: O.getitem_grad(g, m, (4, 2)),
         lambda xp, g, m: xp.concat([g[:1, :], xp.zeros((1, 2), dtype=g.dtype), g[1:, :]]), F((3, 2)),
         bools([True, False, True, True]), requires=_DDS)
case("setitem", "slice", lambda xp, x, v: O.setitem(x, (slice(1, 3), slice(None)), v),
     lambda xp, x, v: xp.concat([x[:1, :], v, x[3:, :]], axis=0), F((4, 3)), F((2, 3)))
case("setitem", "column_bcast", lambda xp, x, v: O.setitem(x, (slice(None), 1), v),
     lambda xp, x, v: xp.where(xp.arange(3) == 1, xp.reshape(v, (4, 1)), x), F((4, 3)), F((4,)))
with depth:
    case("setitem", "slice_and_int", lambda xp, x, v: O.setitem(x, (slice(0, 2), 1), v),
         lambda xp, x, v: xp.where((xp.reshape(xp.arange(3), (3, 1)) < 2) & (xp.arange(4) == 1),
                                   xp.reshape(xp.concat([v, v[:1]]), (3, 1)), x), F((3, 4)), F((2,)))
    case("setitem", "row_bcast_value", lambda xp, x, v: O.setitem(x, (1, slice(None)), v),
         lambda xp, x, v: xp.where(xp.reshape(xp.arange(3), (3, 1)) == 1, v, x), F((3, 4)), F((1,)))

# Indexing functions (take: repeated indices sum in backward)
_REP = [2, 0, 2, 2]
mirror("take", "axis0_repeated", "take", F((3, 4)), ints(_REP), kw={"axis": 0})
mirror("take", "axis1", "take", F((3, 4)), ints([3, 3, 0]), kw={"axis": 1})
with depth:
    mirror("take", "axis1_repeated_3d", "take", F((2, 3, 4)), ints([2, 0, 2]), kw={"axis": 1})
    mirror("take", "1d_no_axis", "take", F((4,)), ints([3, 0, 3, -1]))
    mirror("take", "last_axis", "take", F((2, 3)), ints([1, 1]), kw={"axis": -1})
    mirror("take", "empty_indices", "take", F((3, 2)), ints([]), kw={"axis": 0})
mirror("take_along_axis", "axis1", "take_along_axis", F((3, 4)), ints([[0, 0], [3, 1], [2, 2]]), kw={"axis": 1})
with depth:
    mirror("take_along_axis", "default_last_axis", "take_along_axis", F((3, 2)), ints([[0], [1], [0]]))
    case("take_along_axis", "x_broadcast", lambda xp, x, i: O.take_along_axis(x, i, axis=1),
         lambda xp, x, i: xp.take_along_axis(xp.broadcast_to(x, (2, 3)), i, axis=1), F((1, 3)), ints([[0, 2], [1, 1]]))
case("take_grad", "axis0_repeated", lambda xp, g, i: O.take_grad(g, i, 0, (3, 2)),
     lambda xp, g, i: xp.matmul(xp.matrix_transpose(
         xp.astype(xp.reshape(i, (-1, 1)) == xp.reshape(xp.arange(3, dtype=i.dtype), (1, -1)), g.dtype)), g),
     F((4, 2)), ints(_REP))
with depth:
    case("take_grad", "axis1", lambda xp, g, i: O.take_grad(g, i, 1, (2, 3)),
         lambda xp, g, i: xp.stack([g[:, 1], xp.zeros((2,), dtype=g.dtype), g[:, 0] + g[:, 2]], axis=1), F((2, 3)), ints([2, 0, 2]))
case("take_along_axis_grad", "axis1", lambda xp, g, i: O.take_along_axis_grad(g, i, 1, (3, 4)),
     lambda xp, g, i: xp.sum(xp.astype(xp.expand_dims(i, axis=-1) == xp.arange(4, dtype=i.dtype), g.dtype)
                             * xp.expand_dims(g, axis=-1), axis=1),
     F((3, 2)), ints([[0, 0], [3, 1], [2, 2]]))
with depth:
    case("take_along_axis_grad", "axis0", lambda xp, g, i: O.take_along_axis_grad(g, i, 0, (2, 3)),
         lambda xp, g, i: xp.concat([g * xp.astype(i == 0, g.dtype), g * xp.astype(i == 1, g.dtype)]), F((1, 3)), ints([[1, 0, 1]]))

# ---------------------------------------------------------------------------
# Statistics: reductions (axis and keepdims) and scans
# ---------------------------------------------------------------------------
for _name in ("sum", "max", "min"):
    _kind = "any" if _name == "sum" else "distinct"
    for _variant, _kw in [("all", {}), ("axis0", {"axis": 0}), ("axis_neg_keepdims", {"axis": -1, "keepdims": True}),
                          ("axes_tuple", {"axis": (0, 2)}), ("axes_tuple_keepdims", {"axis": (0, 2), "keepdims": True})]:
        case(_name, _variant, lambda xp, x, _n=_name, _kw=_kw: getattr(pg, _n)(x, **_kw),
             lambda xp, x, _n=_name, _kw=_kw: getattr(xp, _n)(x, **_kw), F((2, 3, 4), _kind))
    with depth:
        case(_name, "negative_axis", lambda xp, x, _n=_name: getattr(pg, _n)(x, axis=-1),
             lambda xp, x, _n=_name: getattr(xp, _n)(x, axis=-1), F((2, 3, 4), _kind))
case("sum", "0d", lambda xp, x: pg.sum(x), lambda xp, x: xp.sum(x), F(()))
with depth:
    case("sum", "empty_axis", lambda xp, x: pg.sum(x, axis=0), lambda xp, x: xp.sum(x, axis=0), F((0, 3)))
for _variant, _kw in [("all", {}), ("axis1_keepdims", {"axis": 1, "keepdims": True})]:
    case("mean", _variant, lambda xp, x, _kw=_kw: pg.mean(x, **_kw), lambda xp, x, _kw=_kw: xp.mean(x, **_kw),
         F((2, 3, 4)))
with depth:
    for _variant, _kw in [("axis0", {"axis": 0}), ("axes", {"axis": (1, 2)}), ("axes_keepdims", {"axis": (1, 2), "keepdims": True})]:
        case("mean", _variant, lambda xp, x, _kw=_kw: pg.mean(x, **_kw), lambda xp, x, _kw=_kw: xp.mean(x, **_kw),
             F((2, 3, 4)))
_WITH_ZEROS = [[1.5, 0.0, 2.0, -1.0], [0.0, 0.7, 0.0, 3.0], [1.2, -0.8, 1.1, 0.0]]  # rows with one and two zeros
mirror("prod", "all", "prod", F((2, 3), "nonzero"))
mirror("prod", "axis_keepdims", "prod", F((2, 3, 2), "nonzero"), kw={"axis": 1, "keepdims": True})
with depth:
    mirror("prod", "axes_keepdims", "prod", F((2, 3, 4)), kw={"axis": (0, 2), "keepdims": True})
    mirror("prod", "zeros_once_and_twice", "prod", lit(_WITH_ZEROS), kw={"axis": 1})
    mirror("prod", "0d", "prod", F(()))
    mirror("prod", "empty_axis", "prod", F((0, 3)), kw={"axis": 0})
    case("prod", "float32_result", lambda xp, x: O.prod(x, dtype=xp.float32), lambda xp, x: xp.prod(x, dtype=xp.float32),
         F((3,)), order=1, requires=("float64",), tol=_TO_F32)
for _name in ("var", "std"):
    mirror(_name, "all", _name, F((2, 3)))
    mirror(_name, "axis_correction", _name, F((3, 4)), kw={"axis": 0, "correction": 1.0})
    mirror(_name, "axes_keepdims", _name, F((2, 3, 2)), kw={"axis": (0, 2), "keepdims": True})
with depth:
    mirror("var", "axis1_int_correction", "var", F((3, 4)), kw={"axis": 1, "correction": 1})
    mirror("std", "axis_correction_keepdims", "std", F((3, 4)), kw={"axis": 0, "correction": 1, "keepdims": True})
mirror("cumulative_sum", "axis1", "cumulative_sum", F((2, 3)), kw={"axis": 1})
mirror("cumulative_sum", "include_initial", "cumulative_sum", F((4,)), kw={"include_initial": True})
with depth:
    mirror("cumulative_sum", "1d", "cumulative_sum", F((5,)))
    mirror("cumulative_sum", "axis1_initial", "cumulative_sum", F((3, 4)), kw={"axis": 1, "include_initial": True})
    case("cumulative_sum", "dtype", lambda xp, x: O.cumulative_sum(x, dtype=xp.float64), lambda xp, x: xp.cumulative_sum(x, dtype=xp.float64),
         F((4,)), requires=("float64",))
mirror("cumulative_prod", "axis0", "cumulative_prod", F((3, 2), "nonzero"), kw={"axis": 0})
with depth:
    case("cumulative_prod", "dtype", lambda xp, x: O.cumulative_prod(x, dtype=xp.float64), lambda xp, x: xp.cumulative_prod(x, dtype=xp.float64),
         F((4,), "nonzero"), requires=("float64",))
    mirror("cumulative_prod", "zeros", "cumulative_prod", lit(_WITH_ZEROS), kw={"axis": 1})
    mirror("cumulative_prod", "zeros_initial_axis0", "cumulative_prod", lit(_WITH_ZEROS), kw={"axis": 0, "include_initial": True})
    mirror("cumulative_prod", "long_lane", "cumulative_prod", lit([1.1, -0.9, 0.0, 1.2, 0.8, 1.05, 0.0, -1.1, 0.95, 1.3, 0.7]))
for _name in ("all", "any"):
    mirror(_name, "bool_axis", _name, bools([[True, False], [True, True]]), kw={"axis": 1}, order=0)
    mirror(_name, "float", _name, F((2, 3), "grid"), order=0)
with depth:
    mirror("all", "axes_keepdims", "all", F((2, 4), "grid"), kw={"axis": (0, 1), "keepdims": True}, order=0)

# ---------------------------------------------------------------------------
# Searching, sorting, sets
# ---------------------------------------------------------------------------
for _name in ("argmax", "argmin"):
    mirror(_name, "all", _name, F((3, 4), "distinct"), order=0)
    mirror(_name, "axis_keepdims", _name, F((3, 4), "distinct"), kw={"axis": 1, "keepdims": True}, order=0)
# Ties: the standard's argmax and argmin give the first occurrence (references as values: a
# namespace giving the last one is its own reference)
_TIES = [[1.0, 3.0, 3.0, 1.0], [2.0, 0.0, 2.0, 0.0]]
for _name, _axis1, _flat_index in [("argmax", [1, 0], 1), ("argmin", [0, 1], 5)]:
    for _variant, _kw, _want in [("ties_axis1", {"axis": 1}, _axis1), ("ties_flat", {}, _flat_index)]:
        case(_name, _variant, lambda xp, x, _n=_name, _kw=_kw: getattr(O, _n)(x, **_kw),
             lambda xp, x, _want=_want: xp.asarray(_want, dtype=index_dtype(xp)), lit(_TIES), order=0)
mirror("count_nonzero", "axis", "count_nonzero", F((3, 4), "grid"), kw={"axis": 0}, order=0)
with depth:
    mirror("count_nonzero", "axes", "count_nonzero", F((2, 4), "grid"), kw={"axis": (0, 1)}, order=0)
mirror("argsort", "axis", "argsort", F((3, 4), "distinct"), kw={"axis": 1}, order=0)
with depth:
    mirror("argsort", "axis0_descending", "argsort", F((3, 4), "distinct"), kw={"axis": 0, "descending": True}, order=0)
mirror("sort", "axis", "sort", F((3, 4), "distinct"), kw={"axis": 1})
mirror("sort", "descending", "sort", F((3, 4), "distinct"), kw={"axis": 0, "descending": True})
_SORTED = [-1.0, 0.0, 0.5, 2.0, 3.0]
mirror("searchsorted", "right", "searchsorted", floats([0.0, 1.0, 2.0, 3.0]), F((5,)), kw={"side": "right"}, order=0)
with depth:
    case("searchsorted", "scalar", lambda xp, s: O.searchsorted(s, 1.0), lambda xp, s: xp.searchsorted(s, 1.0),
         floats(_SORTED), order=0)
mirror("nonzero", "2d", "nonzero", F((3, 4), "grid"), order=0, requires=_DDS)
# (isin is the standard's since 2025.12: the references are written with 2024.12's functions)
case("isin", "ints", lambda xp, x1, x2: O.isin(x1, x2),
     lambda xp, x1, x2: xp.any(xp.expand_dims(x1, axis=-1) == x2, axis=-1), ints([[1, 2, 3], [3, 0, 1]]), ints([0, 3]),
     order=0)
with depth:
    case("isin", "scalar", lambda xp, x: O.isin(x, 2), lambda xp, x: x == 2, ints([[1, 2, 3], [2, 0, 1]]), order=0)
for _name in ("unique_values", "unique_counts", "unique_inverse", "unique_all"):
    mirror(_name, "grid", _name, F((3, 4), "grid"), order=0, requires=_DDS)
case("unique_values", "grad", lambda xp, x: O.unique_values(x) * 2.0, lambda xp, x: xp.unique_values(x) * 2.0,
     F((6,), "distinct"), requires=_DDS)
for _name in ("unique_counts", "unique_inverse", "unique_all"):
    case(_name, "grad", lambda xp, x, _n=_name: getattr(O, _n)(x)[0] * 2.0,
         lambda xp, x, _n=_name: getattr(xp, _n)(x)[0] * 2.0, F((6,), "distinct"), requires=_DDS)
with depth:
    case("unique_all", "values_field", lambda xp, x: O.unique_all(x).values, lambda xp, x: xp.unique_all(x).values,
         F((2, 3), "distinct"), requires=_DDS)

    # ---------------------------------------------------------------------------
    # Utility
    # ---------------------------------------------------------------------------
    case("diff", "default", lambda xp, x: O.diff(x), lambda xp, x: xp.diff(x), F((3, 4)))
    case("diff", "n2_axis0_prepend_append", lambda xp, x, p, q: O.diff(x, axis=0, n=2, prepend=p, append=q),
         lambda xp, x, p, q: xp.diff(x, axis=0, n=2, prepend=p, append=q), F((3, 2)), F((1, 2)), F((2, 2)))


# ---------------------------------------------------------------------------
# Edge values a kernel override gets wrong where the cases above cannot see it (found by planting
# such bugs in a copied plugin: each passed the whole suite): signs of divisors, integers, NaN,
# a long sum, a dtype= argument, a 0-d condition, values near underflow
# ---------------------------------------------------------------------------
mirror("remainder", "negative_divisor", "remainder", floats([0.5, -0.5, 2.0, -2.25]), floats([-1.5, -1.5, 1.5, 1.5]),
       order=0)
mirror("remainder", "int_signs", "remainder", ints([-7, 7, -1, 5]), ints([2, -2, 3, -3]), order=0)
mirror("floor_divide", "int_signs", "floor_divide", ints([-7, 7, -1, 0]), ints([2, 2, 2, -3]), order=0)
for _name in ("remainder", "floor_divide"):  # a Python number operand (a kernel may take arrays only)
    case(_name, "python_scalar", lambda xp, x, _n=_name: getattr(pg, _n)(x, -1.5),
         lambda xp, x, _n=_name: getattr(xp, _n)(x, xp.asarray(-1.5, dtype=x.dtype)), F((2, 3)), order=0)
for _name in ("max", "min"):  # NaN propagates (the standard's rule)
    mirror(_name, "nan", _name, floats([1.0, float("nan"), 3.0]), order=0)
mirror("argmax", "all_keepdims", "argmax", F((3, 4), "distinct"), kw={"keepdims": True}, order=0)
mirror("sum", "long", "sum", F((5000,), "pos"), order=0)
mirror("sum", "int", "sum", ints([[1, 2, 3], [4, 5, 6]]), kw={"axis": 1}, order=0)
case("sum", "dtype_float64", lambda xp, x: pg.sum(x, dtype=xp.float64), lambda xp, x: xp.sum(x, dtype=xp.float64),
     C(lambda xp, dt: xp.asarray([1e8, 1.0, -1e8], dtype=xp.float32)), order=0, requires=("float64",))
case("where", "0d_condition", lambda xp, x, y: pg.where(xp.asarray(True), x, y),
     lambda xp, x, y: xp.where(xp.asarray(True), x, y), F((2, 3)), F((2, 3)))
case("exp", "near_underflow", lambda xp, x: pg.log(pg.exp(x)), lambda xp, x: xp.log(xp.exp(x)),
     lit([-30.0, -50.0, -80.0]), order=0)


from polygrad_conformance import cases_extensions  # noqa: E402,F401  (linalg, fft, nn: appended to CASES)


def by_op() -> dict[str, list[Case]]:
    out: dict[str, list[Case]] = {}
    for c in CASES:
        out.setdefault(c.op, []).append(c)
    return out

"""Element-wise functions of the Array API standard: forward kernels and vjp rules, one row each.

Every element-wise function of the standard (2024.12 / 2025.12) is here, with
the standard's signature; binary functions take Python scalars on either side
where the standard does (the kernels pass them to the backend unchanged).

Conventions, where the mathematics leaves a choice:

* Zero derivative almost everywhere (floor, ceil, trunc, round, sign,
  floor_divide) and boolean / integer results (comparisons, predicates,
  logical and bitwise functions) are rows without a gradient (``def_nograd``):
  their outputs never require grad.
* Kinks: ``abs'(0) = 0``; ``maximum`` / ``minimum`` send the whole gradient to
  ``x1`` on a tie; ``clip`` passes it to ``x`` where ``min <= x <= max``
  (bounds included), to ``min`` where ``x < min`` and to ``max`` where
  ``x > max``; ``hypot`` and ``atan2`` have gradient 0 at ``(0, 0)``, and
  second derivatives 0 there (as ``pow`` has where ``x = y = 0``);
  ``copysign`` has no gradient w.r.t. ``x2``; ``nextafter(x1, x2)`` has
  gradient 1 w.r.t. ``x1`` (it is ``x1`` moved by one ulp, a piecewise constant
  step) and none w.r.t. ``x2``; ``remainder`` has gradient ``-floor_divide(x1,
  x2)`` w.r.t. ``x2``; ``pow`` has gradient 0 w.r.t. the exponent where the
  base is 0.
* Complex inputs (PyTorch's convention): for a real loss ``L`` the gradient of
  ``z = a + ib`` is ``dL/da + i dL/db``, i.e. twice the conjugate Wirtinger
  derivative ``dL/d(conj z)``. A holomorphic ``f`` therefore has the vjp
  ``g * conj(f'(z))`` (``_conj`` below); ``real``, ``imag``, ``conj`` and
  ``abs`` have the rules this convention gives (``g``, ``i g``, ``conj(g)``,
  ``g z / |z|``). Rules mixing real and complex arrays promote explicitly with
  ``astype``, whose rule takes the real part when a real array was cast to
  complex. ``sign`` of a complex array is a row without gradient, like the
  real one.
"""

from __future__ import annotations

import cmath
import math
import operator
from typing import Any

from polygrad.core.dispatch import backend_of_type, has_namespace
from polygrad.core.op import Op, def_linear, def_nograd, defvjp, returned_input
from polygrad.core.primitive import _floating, apply
from polygrad.core.variable import _FLOATING, Variable, kind_of
from polygrad.ops._dtypes import check_complex_cast, check_number_fits, resolved_dtype, resolved_like
from polygrad.ops._export import binary, names, public, unary


def _row(name: str, fwd: Any = None, **facts: Any) -> Op:
    """A row of this chapter: element-wise (compiled functions may fuse it)."""
    return Op(name, fwd, elementwise=True, **facts)


_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_COMPLEX_DTYPES: dict = {}


def _is_complex(a: Any) -> bool:
    """Whether ``a`` (array, Variable, placeholder or Python scalar) is complex."""
    t = type(a)
    if t is float or t is int or t is bool:
        return False
    if t is complex:
        return True
    dtype = a.dtype
    kind = getattr(dtype, "kind", None)  # numpy-style dtypes (numpy, cupy, dask, jax)
    if kind is not None:
        return kind == "c"
    key = (type(dtype), dtype)  # the type first: dtypes of two libraries are never compared
    known = _COMPLEX_DTYPES.get(key)
    if known is None:
        # The standard has no dtype test without a namespace; every library names its complex dtypes so.
        known = _COMPLEX_DTYPES[key] = "complex" in str(dtype)
    return known


def _conj(o: Any, a: Any) -> Any:
    """conj(a), skipped (no copy) for real arrays and scalars: the factor in ``g * conj(f'(z))``.
    It runs in the backward of every product, so numpy-style dtypes take a short path."""
    t = type(a)
    if t is float or t is int:
        return a
    try:
        kind = a.dtype.kind
    except AttributeError:  # a Python complex, or a dtype without .kind
        if t is complex:
            return a.conjugate()
        return o.conj(a) if _is_complex(a) else a
    return o.conj(a) if kind == "c" else a


def _nonzero(o: Any, a: Any) -> Any:
    """``a`` with zeros replaced by ones (a safe denominator: the masked branch stays finite)."""
    return o.where(a == 0, 1.0, a)


def _inf_at_zero(o: Any, r: Any) -> Any:
    """``r`` with zeros replaced by inf: the denominator of a rule ``a / r`` whose numerator vanishes
    with ``r`` (``x / |x|``), so that the chosen 0 at ``r = 0`` is a constant with derivative 0. (1 in
    place of 0 left the numerator itself there, whose derivative is not 0: the Hessian of
    vector_norm and hypot at 0 was ``g I``, that of atan2 at (0, 0) antisymmetric.)"""
    return o.where(r == 0, math.inf, r)


def _over_radius_squared(o: Any, g: Any, a: Any, x: Any, y: Any) -> Any:
    """``g a / (x^2 + y^2)`` (atan2's rules), 0 at (0, 0), as ``g (a / h) / h`` with ``h =
    hypot(x, y)``: x * x + y * y underflowed to 0 for small non-zero x, y (the gradient came out
    1e49 times too small) and overflowed for large ones."""
    h = _inf_at_zero(o, o.hypot(x, y))
    return g * (a / h) / h


# ---------------------------------------------------------------------------
# Arithmetic (broadcasting; Python scalars allowed on either side)
# ---------------------------------------------------------------------------
ADD = defvjp(_row("add", operator.add, broadcasts=True, uses_xp=False),
             lambda o, g, ans, x, y: g,
             lambda o, g, ans, x, y: g)
add = binary(ADD)
SUBTRACT = defvjp(_row("subtract", operator.sub, broadcasts=True, uses_xp=False),
                  lambda o, g, ans, x, y: g,
                  lambda o, g, ans, x, y: -g)
subtract = binary(SUBTRACT)
MULTIPLY = defvjp(_row("multiply", operator.mul, broadcasts=True, uses_xp=False),
                  lambda o, g, ans, x, y: g * _conj(o, y),
                  lambda o, g, ans, x, y: g * _conj(o, x), saves=("y", "x"))
multiply = binary(MULTIPLY)
DIVIDE = defvjp(_row("divide", operator.truediv, broadcasts=True, uses_xp=False),
                lambda o, g, ans, x, y: g / _conj(o, y),
                # g (x / y) / -y: y * y under- or overflows first (float32 y of 1e-21 gave a gradient
                # 36% off, one of 1e-23 -inf, where x / y**2 is representable); the negation on y,
                # which is the small one where it broadcasts (a (B, 1) norm)
                lambda o, g, ans, x, y: g * _conj(o, x / y) / _conj(o, -y), saves=("y", "xy"))
divide = binary(DIVIDE)
FLOOR_DIVIDE = def_nograd(_row("floor_divide"))  # piecewise constant
floor_divide = binary(FLOOR_DIVIDE)
REMAINDER = defvjp(_row("remainder", broadcasts=True),  # x - floor(x / y) * y
                   lambda o, g, ans, x, y: g,
                   lambda o, g, ans, x, y: -g * o.floor_divide(x, y), saves="xy")
remainder = binary(REMAINDER)


def _pow_vjp_base(o: Any, g: Any, ans: Any, x: Any, y: Any) -> Any:
    if type(y) in (bool, int, float, complex):  # a constant exponent (the common case)
        return g * 0.0 if y == 0 else g * _conj(o, y * x ** (y - 1))
    # y x**(y-1), taken as 0 * 1**(y-1) where x = y = 0 (where it is 0 * 0**-1), so that the gradient
    # is 0 there and not nan, and a constant, as the exponent's rule is: with y left in, its
    # derivative in y was g where the exponent's in x is 0. (A where() on y == 0 instead gave 0
    # at every y = 0, and the derivative of that in y, 1/x, was lost: the Hessian was not symmetric.)
    at_origin = o.logical_and(x == 0, y == 0)
    return g * _conj(o, o.where(at_origin, 0.0, y) * o.where(at_origin, 1.0, x) ** (y - 1))


def _pow_vjp_exponent(o: Any, g: Any, ans: Any, x: Any, y: Any) -> Any:
    if type(x) in (bool, int, float, complex):  # a constant base (True: 1)
        if x == 0:
            return g * 0.0  # d/dy 0**y = 0 (y > 0)
        if type(x) is complex or _is_complex(ans):
            log_x = cmath.log(x)
        else:
            log_x = math.log(x) if x > 0 else math.nan
        return g * _conj(o, log_x * ans)
    if _is_complex(ans) and not _is_complex(x):
        x = o.astype(x, ans.dtype)  # a real base with a complex exponent: the complex logarithm
    return o.where(x == 0, 0.0, g * _conj(o, o.log(_nonzero(o, x)) * ans))  # 0 where the base is 0


POW = defvjp(_row("pow", operator.pow, broadcasts=True, uses_xp=False), _pow_vjp_base, _pow_vjp_exponent,
             saves=("xy", "x ans"))
pow = binary(POW)
NEGATIVE = defvjp(_row("negative", operator.neg, uses_xp=False, remat=True), lambda o, g, ans, x: -g)
negative = unary(NEGATIVE)
POSITIVE = defvjp(_row("positive", operator.pos, uses_xp=False, view=returned_input), lambda o, g, ans, x: g)
positive = unary(POSITIVE)
SQUARE = defvjp(_row("square"), lambda o, g, ans, x: g * _conj(o, 2 * x), saves="x")
square = unary(SQUARE)
RECIPROCAL = defvjp(_row("reciprocal"),
                    lambda o, g, ans, x: -g * _conj(o, ans * ans), saves="ans")


@public
def reciprocal(x, /):
    data = x._data if isinstance(x, Variable) else x
    if type(data) in (bool, int) or (type(data) not in (float, complex) and not (
            _floating(data) if has_namespace(data) else not str(data.dtype).startswith(("int", "uint", "bool")))):
        # numpy's reciprocal of integers is an integer division (reciprocal([1, 2]) is [1, 0])
        raise TypeError(f"polygrad.reciprocal: x must have a floating dtype (the standard's), got "
                        f"{getattr(data, 'dtype', type(data).__name__)}; use 1 / x or pg.astype(x, ...) first")
    return apply(RECIPROCAL, (x,))


# ---------------------------------------------------------------------------
# Exponentials and logarithms (holomorphic: g * conj(f'(z)))
# ---------------------------------------------------------------------------
EXP = defvjp(_row("exp"), lambda o, g, ans, x: g * _conj(o, ans), saves="ans")
exp = unary(EXP)
# (exp(x), not ans + 1: that sum cancels for x << 0, where expm1 is -1 and its gradient tiny)
EXPM1 = defvjp(_row("expm1"), lambda o, g, ans, x: g * _conj(o, o.exp(x)), saves="x")
expm1 = unary(EXPM1)
LOG = defvjp(_row("log"), lambda o, g, ans, x: g / _conj(o, x), saves="x")
log = unary(LOG)
LOG1P = defvjp(_row("log1p"), lambda o, g, ans, x: g / _conj(o, x + 1), saves="x")
log1p = unary(LOG1P)
LOG2 = defvjp(_row("log2"), lambda o, g, ans, x: g / _conj(o, x * _LN2), saves="x")
log2 = unary(LOG2)
LOG10 = defvjp(_row("log10"), lambda o, g, ans, x: g / _conj(o, x * _LN10), saves="x")
log10 = unary(LOG10)
LOGADDEXP = defvjp(_row("logaddexp", broadcasts=True),  # exp(x - ans) would be exp(inf - inf) at x = inf
                   lambda o, g, ans, x, y: g * o.sigmoid(x - y),
                   lambda o, g, ans, x, y: g * o.sigmoid(y - x), saves="xy")
logaddexp = binary(LOGADDEXP)
SQRT = defvjp(_row("sqrt"), lambda o, g, ans, x: g / (2 * _conj(o, ans)), saves="ans")
sqrt = unary(SQRT)

# ---------------------------------------------------------------------------
# Trigonometric and hyperbolic
# ---------------------------------------------------------------------------
def _one_minus_square(o: Any, x: Any) -> Any:
    """``1 - x*x``, as ``(1 - x)(1 + x)`` for |x| >= 0.5: exact near |x| = 1, where ``1 - x*x`` lost
    the digits that ``x*x`` rounded away (asin's gradient at 1 - 1e-10 was 3e-10 off, millions of
    ulps). Below 0.5 ``1 - x*x`` is as exact (it is >= 0.75), and its derivative ``-2x`` is too,
    where the product's, ``(1 - x) - (1 + x)``, cancels (asin'' of float32 1e-8 was 0)."""
    return o.where(o.abs(x) < 0.5, 1 - x * x, (1 - x) * (1 + x))


SIN = defvjp(_row("sin"), lambda o, g, ans, x: g * _conj(o, o.cos(x)), saves="x")
sin = unary(SIN)
COS = defvjp(_row("cos"), lambda o, g, ans, x: -g * _conj(o, o.sin(x)), saves="x")
cos = unary(COS)
TAN = defvjp(_row("tan"), lambda o, g, ans, x: g * _conj(o, 1 + ans * ans), saves="ans")
tan = unary(TAN)
ASIN = defvjp(_row("asin"),
              lambda o, g, ans, x: g / _conj(o, o.sqrt(_one_minus_square(o, x))), saves="x")
asin = unary(ASIN)
ACOS = defvjp(_row("acos"),
              lambda o, g, ans, x: -g / _conj(o, o.sqrt(_one_minus_square(o, x))), saves="x")
acos = unary(ACOS)
ATAN = defvjp(_row("atan"), lambda o, g, ans, x: g / _conj(o, 1 + x * x), saves="x")
atan = unary(ATAN)
ATAN2 = defvjp(_row("atan2", broadcasts=True),  # 0 at (0, 0)
               lambda o, g, ans, x, y: _over_radius_squared(o, g, y, x, y),
               lambda o, g, ans, x, y: _over_radius_squared(o, -g, x, x, y), saves="xy")
atan2 = binary(ATAN2)
HYPOT = defvjp(_row("hypot", broadcasts=True),  # 0 at (0, 0)
               lambda o, g, ans, x, y: g * x / _inf_at_zero(o, ans),
               lambda o, g, ans, x, y: g * y / _inf_at_zero(o, ans), saves="xy ans")
hypot = binary(HYPOT)
SINH = defvjp(_row("sinh"), lambda o, g, ans, x: g * _conj(o, o.cosh(x)), saves="x")
sinh = unary(SINH)
COSH = defvjp(_row("cosh"), lambda o, g, ans, x: g * _conj(o, o.sinh(x)), saves="x")
cosh = unary(COSH)
# -(t*t) + 1 is 1 - t*t to the bit, written so that NumPy's temporary elision computes it in the
# buffer of t*t (it cannot reuse the right operand of a subtraction): one full-size array fewer
TANH = defvjp(_row("tanh"), lambda o, g, ans, x: g * _conj(o, -(ans * ans) + 1), saves="ans")
tanh = unary(TANH)
ASINH = defvjp(_row("asinh"),
               lambda o, g, ans, x: g / _conj(o, o.sqrt(x * x + 1)), saves="x")
asinh = unary(ASINH)
ACOSH = defvjp(_row("acosh"),  # sqrt(z-1) sqrt(z+1): the principal branch for complex z
               lambda o, g, ans, x: g / _conj(o, o.sqrt(x - 1) * o.sqrt(x + 1)), saves="x")
acosh = unary(ACOSH)
ATANH = defvjp(_row("atanh"), lambda o, g, ans, x: g / _conj(o, _one_minus_square(o, x)), saves="x")
atanh = unary(ATANH)

# ---------------------------------------------------------------------------
# Complex parts (a real array's real part is itself; imag takes complex arrays only)
# ---------------------------------------------------------------------------
def _unview_real(o: Any, base: Any, value: Any, index: int) -> Any:
    """The base with its real part replaced: ``value + i imag(base)`` (the base itself when real)."""
    if not _is_complex(base):
        return value
    return o.astype(value, base.dtype) + 1j * o.imag(base)


def _unview_imag(o: Any, base: Any, value: Any, index: int) -> Any:
    """The base with its imaginary part replaced: ``real(base) + i value``."""
    return o.real(base) + 1j * o.astype(value, base.dtype) if _is_complex(base) else None


REAL = defvjp(_row("real", shapes=True, view=True, unview=_unview_real),
              lambda o, g, ans, x: g if g.dtype == x.dtype else o.astype(g, x.dtype))
real = unary(REAL)
IMAG = defvjp(_row("imag", shapes=True, view=True, unview=_unview_imag),  # (numpy also takes real arrays: imag is 0 then)
              lambda o, g, ans, x: o.astype(g, x.dtype) * 1j if _is_complex(x) else None)
imag = unary(IMAG)
CONJ = def_linear(_row("conj", view=returned_input))
conj = unary(CONJ)

# ---------------------------------------------------------------------------
# Sign, magnitude and selection
# ---------------------------------------------------------------------------
def _abs_vjp(o: Any, g: Any, ans: Any, x: Any) -> Any:
    if _is_complex(x):
        return o.astype(g / _inf_at_zero(o, ans), x.dtype) * x  # g z / |z|, and 0 at z = 0
    return g * o.sign(x)  # abs'(0) = 0


ABS = defvjp(_row("abs"), _abs_vjp, saves="x ans")
abs = unary(ABS)
SIGN = def_nograd(_row("sign"))
sign = unary(SIGN)
COPYSIGN = defvjp(_row("copysign", broadcasts=True),  # none w.r.t. the sign source
                  lambda o, g, ans, x, y: o.where(o.signbit(x) == o.signbit(ans), g, -g),
                  None, saves="x ans")
copysign = binary(COPYSIGN)
NEXTAFTER = defvjp(_row("nextafter", broadcasts=True),  # x moved by one ulp
                   lambda o, g, ans, x, y: g,
                   None)
nextafter = binary(NEXTAFTER)
WHERE = defvjp(_row("where", broadcasts=True, casts=True),  # (integers chosen by a condition needing grad: none)
               None,
               lambda o, g, ans, c, x, y: o.where(c, g, 0.0),
               lambda o, g, ans, c, x, y: o.where(c, 0.0, g), saves="x")


@public
def where(condition, x1, x2, /):
    if type(x2) is int or type(x1) is int or type(x1) is complex or type(x2) is complex:  # (a Python number)
        _check_numbers_fit("where", x1, (x2,))
        _check_numbers_fit("where", x2, (x1,))
    return apply(WHERE, (condition, x1, x2))


def _check_numbers_fit(what: str, x: Any, values: tuple) -> None:
    """The Python ints and complex numbers among ``values`` fit ``x``'s dtype (numpy's refusals,
    on every backend: dask and strict wrapped where(c, int8, 300) to 44, clip(int8, 200) to -56)."""
    d = getattr(x, "_data", x)
    if not hasattr(d, "dtype") or not has_namespace(d):
        return  # a Python number (the other operand decides), or a symbolic array
    xp = backend_of_type(type(d)).xp
    for v in values:
        if type(v) in (int, complex):
            check_number_fits(xp, d.dtype, v, what)


# Ties send the gradient to x; where x or y is NaN (the result is NaN) it goes to y, by
# convention (routing it to the NaN argument made the fused compiled backward twice as slow:
# an isnan pass numexpr cannot fuse).
MAXIMUM = defvjp(_row("maximum", broadcasts=True),  # ties: to x
                 lambda o, g, ans, x, y: o.where(x >= y, g, 0.0),
                 lambda o, g, ans, x, y: o.where(x >= y, 0.0, g), saves="xy")
maximum = binary(MAXIMUM)
MINIMUM = defvjp(_row("minimum", broadcasts=True),  # ties: to x
                 lambda o, g, ans, x, y: o.where(x <= y, g, 0.0),
                 lambda o, g, ans, x, y: o.where(x <= y, 0.0, g), saves="xy")
minimum = binary(MINIMUM)


def _clip_kernel(xp: Any, x: Any, min: Any = None, max: Any = None, *, upper: bool = False) -> Any:
    """xp.clip; ``upper=True`` says the one bound given (as ``min``) is the upper one (clip(x, max=b))."""
    return xp.clip(x, None, min) if upper else xp.clip(x, min, max)


def _clip_vjp_x(o: Any, g: Any, ans: Any, x: Any, b1: Any = None, b2: Any = None, *, upper: bool = False) -> Any:
    if b1 is None:
        return g
    if upper:
        return o.where(x <= b1, g, 0.0)
    return o.where(x >= b1, g, 0.0) if b2 is None else o.where((x >= b1) & (x <= b2), g, 0.0)


# clip(x, min, max): the gradient passes to x where min <= x <= max (bounds included), to min where
# x < min, to max where x > max. min > max is implementation-defined in the standard (array_api_strict
# refuses it); numpy, cupy, JAX and torch give max there (minimum(maximum(x, min), max)), so the
# gradient goes to max there, never to min. A missing bound is not an input (apply takes no None):
# clip(x, max=b) passes b as the one bound with upper=True.
CLIP = defvjp(_row("clip", _clip_kernel, broadcasts=True, casts=True),  # (an integer x: no gradient)
              _clip_vjp_x,
              lambda o, g, ans, x, b1, b2=None, *, upper=False: o.where(
                  x > b1 if upper else (x < b1 if b2 is None else (x < b1) & (b1 <= b2)), g, 0.0),
              lambda o, g, ans, x, b1, b2: o.where((x > b2) | (b1 > b2), g, 0.0), saves="xyz")


def _refuse_floating_bounds(x: Any, bounds: dict) -> None:
    """clip of an integer ``x`` by a floating bound: the standard leaves mixing kinds unspecified, and
    numpy's namespace casts the bound to x's dtype (clip([1, 5], 1.7) gave [1, 5]); strict refuses.
    The bounds are asked first (no floating bound, nothing more to ask). A bool ``x`` is refused: the
    standard's clip takes numbers only (strict refuses it; numpy cast the bounds to bool, clip(False, 0.5)
    was True)."""
    d = getattr(x, "_data", x)
    if kind_of(d) == "bool":
        raise TypeError(f"polygrad: clip: x must be an array of numbers, got {d.dtype} {tuple(d.shape)} (backend "
                        f"{backend_of_type(type(d)).name!r}): clip of a bool is not defined by the standard (nor by "
                        f"Chainer); cast x first (pg.astype)")
    _check_numbers_fit("clip", x, tuple(bounds.values()))
    for name, b in bounds.items():  # an integer bound of a wider range: cast into x's dtype, it wrapped (300 to 44)
        bd = getattr(b, "_data", b)
        if hasattr(bd, "dtype") and kind_of(bd) == "integral" and kind_of(d) == "integral" and has_namespace(d):
            xp = backend_of_type(type(d)).xp
            if xp.result_type(bd.dtype, d.dtype) != d.dtype:
                raise TypeError(f"polygrad: clip: the bound {name} is {bd.dtype}, wider than x's {d.dtype} "
                                f"{tuple(d.shape)}: cast into x's dtype it could wrap (300 into int8 is 44); "
                                f"give a bound of x's dtype")
    floating = [name for name, b in bounds.items() if b is not None and kind_of(b) in _FLOATING]
    if floating and kind_of(x) == "integral":
        d, b = getattr(x, "_data", x), bounds[floating[0]]
        raise TypeError(f"polygrad: clip: x is {d.dtype} {tuple(d.shape)} and the bound {floating[0]} is floating "
                        f"({_describe(b)}): the standard leaves clipping integers by a floating bound "
                        f"unspecified (one backend truncates the bound, another refuses); cast x to a "
                        f"floating dtype first")


def _describe(b: Any) -> str:
    d = getattr(b, "_data", b)
    return f"{type(d).__name__} {d!r}" if not hasattr(d, "dtype") else f"{d.dtype} {tuple(d.shape)}"


@public
def clip(x, /, min=None, max=None):
    # Only the bounds given are inputs (see CLIP).
    _refuse_floating_bounds(x, {"min": min, "max": max})
    if max is None:
        return apply(CLIP, (x,) if min is None else (x, min))
    return apply(CLIP, (x, max), {"upper": True}) if min is None else apply(CLIP, (x, min, max))


# ---------------------------------------------------------------------------
# Rounding (zero derivative almost everywhere: no gradient)
# ---------------------------------------------------------------------------
FLOOR = def_nograd(_row("floor"))
floor = unary(FLOOR)
CEIL = def_nograd(_row("ceil"))
ceil = unary(CEIL)
TRUNC = def_nograd(_row("trunc"))
trunc = unary(TRUNC)
ROUND = def_nograd(_row("round"))
round = unary(ROUND)

# ---------------------------------------------------------------------------
# Comparisons and predicates (boolean results: no gradient)
# ---------------------------------------------------------------------------
EQUAL = def_nograd(_row("equal", operator.eq, uses_xp=False))
equal = binary(EQUAL)
NOT_EQUAL = def_nograd(_row("not_equal", operator.ne, uses_xp=False))
not_equal = binary(NOT_EQUAL)
LESS = def_nograd(_row("less", operator.lt, uses_xp=False))
less = binary(LESS)
LESS_EQUAL = def_nograd(_row("less_equal", operator.le, uses_xp=False))
less_equal = binary(LESS_EQUAL)
GREATER = def_nograd(_row("greater", operator.gt, uses_xp=False))
greater = binary(GREATER)
GREATER_EQUAL = def_nograd(_row("greater_equal", operator.ge, uses_xp=False))
greater_equal = binary(GREATER_EQUAL)
ISFINITE = def_nograd(_row("isfinite"))
isfinite = unary(ISFINITE)
ISINF = def_nograd(_row("isinf"))
isinf = unary(ISINF)
ISNAN = def_nograd(_row("isnan"))
isnan = unary(ISNAN)
SIGNBIT = def_nograd(_row("signbit"))
signbit = unary(SIGNBIT)

# ---------------------------------------------------------------------------
# Logical and bitwise (boolean and integer results: no gradient)
# ---------------------------------------------------------------------------
LOGICAL_AND = def_nograd(_row("logical_and"))
logical_and = binary(LOGICAL_AND)
LOGICAL_OR = def_nograd(_row("logical_or"))
logical_or = binary(LOGICAL_OR)
LOGICAL_XOR = def_nograd(_row("logical_xor"))
logical_xor = binary(LOGICAL_XOR)
LOGICAL_NOT = def_nograd(_row("logical_not"))
logical_not = unary(LOGICAL_NOT)
BITWISE_AND = def_nograd(_row("bitwise_and"))
bitwise_and = binary(BITWISE_AND)
BITWISE_OR = def_nograd(_row("bitwise_or"))
bitwise_or = binary(BITWISE_OR)
BITWISE_XOR = def_nograd(_row("bitwise_xor"))
bitwise_xor = binary(BITWISE_XOR)
BITWISE_INVERT = def_nograd(_row("bitwise_invert"))
bitwise_invert = unary(BITWISE_INVERT)
BITWISE_LEFT_SHIFT = def_nograd(_row("bitwise_left_shift"))
bitwise_left_shift = binary(BITWISE_LEFT_SHIFT)
BITWISE_RIGHT_SHIFT = def_nograd(_row("bitwise_right_shift"))
bitwise_right_shift = binary(BITWISE_RIGHT_SHIFT)

# ---------------------------------------------------------------------------
# Dtype (no gradient, or a cast back)
# ---------------------------------------------------------------------------
ZEROS_LIKE = def_nograd(_row("zeros_like"))


@public
def zeros_like(x, /, *, dtype=None, device=None):
    return apply(ZEROS_LIKE, (x,), {"dtype": resolved_like(x, dtype, "zeros_like")} if dtype is not None else None)


ONES_LIKE = def_nograd(_row("ones_like"))


@public
def ones_like(x, /, *, dtype=None, device=None):
    return apply(ONES_LIKE, (x,), {"dtype": resolved_like(x, dtype, "ones_like")} if dtype is not None else None)


def cast_grad(o: Any, g: Any, like: Any) -> Any:
    """``g`` in ``like``'s dtype, for a rule whose gradient came out in another (a reduction
    with ``dtype=``): a real input's gradient from a complex one is its real part (a cast from
    complex to real is not one the standard promises: array_api_strict refuses it)."""
    if g.dtype == like.dtype:
        return g
    if _is_complex(g) and not _is_complex(like):
        g = o.real(g)
    return g if g.dtype == like.dtype else o.astype(g, like.dtype)


def _astype_vjp(o: Any, g: Any, ans: Any, x: Any, dtype: Any, copy: bool = True) -> Any:
    return cast_grad(o, g, x)  # a real array cast to complex: its gradient is the real part


def _astype(xp: Any, x: Any, dtype: Any, copy: bool = True) -> Any:
    # The refusal of complex -> real lives in the kernel, which eager calls and compiled programs
    # run (and trace on their inputs' arrays): at the public function, a symbolic array's cast was
    # never asked, and the program dropped the imaginary part.
    check_complex_cast(x, dtype, "astype")
    return xp.astype(x, dtype, copy=copy)


# A view only where it returned x itself (copy=False to x's own dtype): copy=True, the default, and
# another dtype make a new array, which a later write into x leaves as it is
ASTYPE = defvjp(_row("astype", _astype, shapes=True, view=returned_input, casts=True), _astype_vjp)


@public
def astype(x, dtype, /, *, copy=True, device=None):
    if isinstance(dtype, (str, type)):  # a name or a Python type, resolved here for the kernel (a symbolic x's
        data = x._data if isinstance(x, Variable) else x  # program resolves it when it runs)
        if has_namespace(data):
            dtype = resolved_dtype(backend_of_type(type(data)).xp, dtype, "astype")
    if not copy and isinstance(x, Variable) and x._data.dtype == dtype:
        return x  # the standard: with copy=False and the same dtype, the input itself
    return apply(ASTYPE, (x,), {"dtype": dtype, "copy": copy})


__all__ = names(__name__)  # the public functions declared above

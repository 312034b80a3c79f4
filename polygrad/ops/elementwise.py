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
  ``x > max``; ``hypot`` and ``atan2`` have gradient 0 at ``(0, 0)``;
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

from polygrad.core.op import Op, def_linear, def_nograd, defvjp
from polygrad.core.primitive import apply

__all__ = [
    # arithmetic
    'add', 'subtract', 'multiply', 'divide', 'floor_divide', 'remainder', 'pow', 'negative', 'positive', 'square',
    'reciprocal',
    # exponentials and logarithms
    'exp', 'expm1', 'log', 'log1p', 'log2', 'log10', 'logaddexp', 'sqrt',
    # trigonometric and hyperbolic
    'sin', 'cos', 'tan', 'asin', 'acos', 'atan', 'atan2', 'hypot', 'sinh', 'cosh', 'tanh', 'asinh', 'acosh', 'atanh',
    # complex parts
    'real', 'imag', 'conj',
    # sign, magnitude and selection
    'abs', 'sign', 'copysign', 'nextafter', 'maximum', 'minimum', 'clip', 'where',
    # rounding
    'floor', 'ceil', 'trunc', 'round',
    # comparisons and predicates
    'equal', 'not_equal', 'less', 'less_equal', 'greater', 'greater_equal', 'isfinite', 'isinf', 'isnan', 'signbit',
    # logical and bitwise
    'logical_and', 'logical_or', 'logical_xor', 'logical_not', 'bitwise_and', 'bitwise_or', 'bitwise_xor',
    'bitwise_invert', 'bitwise_left_shift', 'bitwise_right_shift',
    # dtype
    'zeros_like', 'ones_like', 'astype',
]

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


# ---------------------------------------------------------------------------
# Arithmetic (broadcasting; Python scalars allowed on either side)
# ---------------------------------------------------------------------------
ADD = defvjp(Op("add", operator.add, broadcasts=True, uses_xp=False),
             lambda o, g, ans, x, y: g,
             lambda o, g, ans, x, y: g)
SUBTRACT = defvjp(Op("subtract", operator.sub, broadcasts=True, uses_xp=False),
                  lambda o, g, ans, x, y: g,
                  lambda o, g, ans, x, y: -g)
MULTIPLY = defvjp(Op("multiply", operator.mul, broadcasts=True, uses_xp=False),
                  lambda o, g, ans, x, y: g * _conj(o, y),
                  lambda o, g, ans, x, y: g * _conj(o, x), saves="xy")
DIVIDE = defvjp(Op("divide", operator.truediv, broadcasts=True, uses_xp=False),
                lambda o, g, ans, x, y: g / _conj(o, y),
                lambda o, g, ans, x, y: -g * _conj(o, x) / _conj(o, y * y), saves="xy")
FLOOR_DIVIDE = def_nograd(Op("floor_divide"))  # piecewise constant
REMAINDER = defvjp(Op("remainder", broadcasts=True),  # x - floor(x / y) * y
                   lambda o, g, ans, x, y: g,
                   lambda o, g, ans, x, y: -g * o.floor_divide(x, y), saves="xy")


def _pow_vjp_base(o: Any, g: Any, ans: Any, x: Any, y: Any) -> Any:
    if type(y) in (int, float, complex):  # a constant exponent (the common case)
        return g * 0.0 if y == 0 else g * _conj(o, y * x ** (y - 1))
    return o.where(y == 0, 0.0, g * _conj(o, y * x ** (y - 1)))  # d/dx x**0 = 0, also at x = 0


def _pow_vjp_exponent(o: Any, g: Any, ans: Any, x: Any, y: Any) -> Any:
    if type(x) in (int, float, complex):  # a constant base
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


POW = defvjp(Op("pow", operator.pow, broadcasts=True, uses_xp=False), _pow_vjp_base, _pow_vjp_exponent, saves="xy ans")
NEGATIVE = defvjp(Op("negative", operator.neg, uses_xp=False), lambda o, g, ans, x: -g)
POSITIVE = defvjp(Op("positive", operator.pos, uses_xp=False, view=True), lambda o, g, ans, x: g)
SQUARE = defvjp(Op("square"), lambda o, g, ans, x: g * _conj(o, 2 * x), saves="x")
RECIPROCAL = defvjp(Op("reciprocal"),
                    lambda o, g, ans, x: -g * _conj(o, ans * ans), saves="ans")

# ---------------------------------------------------------------------------
# Exponentials and logarithms (holomorphic: g * conj(f'(z)))
# ---------------------------------------------------------------------------
EXP = defvjp(Op("exp"), lambda o, g, ans, x: g * _conj(o, ans), saves="ans")
EXPM1 = defvjp(Op("expm1"), lambda o, g, ans, x: g * _conj(o, ans + 1), saves="ans")
LOG = defvjp(Op("log"), lambda o, g, ans, x: g / _conj(o, x), saves="x")
LOG1P = defvjp(Op("log1p"), lambda o, g, ans, x: g / _conj(o, x + 1), saves="x")
LOG2 = defvjp(Op("log2"), lambda o, g, ans, x: g / _conj(o, x * _LN2), saves="x")
LOG10 = defvjp(Op("log10"), lambda o, g, ans, x: g / _conj(o, x * _LN10), saves="x")
LOGADDEXP = defvjp(Op("logaddexp", broadcasts=True),
                   lambda o, g, ans, x, y: g * o.exp(x - ans),
                   lambda o, g, ans, x, y: g * o.exp(y - ans), saves="xy ans")
SQRT = defvjp(Op("sqrt"), lambda o, g, ans, x: g / (2 * _conj(o, ans)), saves="ans")

# ---------------------------------------------------------------------------
# Trigonometric and hyperbolic
# ---------------------------------------------------------------------------
SIN = defvjp(Op("sin"), lambda o, g, ans, x: g * _conj(o, o.cos(x)), saves="x")
COS = defvjp(Op("cos"), lambda o, g, ans, x: -g * _conj(o, o.sin(x)), saves="x")
TAN = defvjp(Op("tan"), lambda o, g, ans, x: g * _conj(o, 1 + ans * ans), saves="ans")
ASIN = defvjp(Op("asin"),
              lambda o, g, ans, x: g / _conj(o, o.sqrt(1 - x * x)), saves="x")
ACOS = defvjp(Op("acos"),
              lambda o, g, ans, x: -g / _conj(o, o.sqrt(1 - x * x)), saves="x")
ATAN = defvjp(Op("atan"), lambda o, g, ans, x: g / _conj(o, 1 + x * x), saves="x")
ATAN2 = defvjp(Op("atan2", broadcasts=True),  # 0 at (0, 0)
               lambda o, g, ans, x, y: g * y / _nonzero(o, x * x + y * y),
               lambda o, g, ans, x, y: -g * x / _nonzero(o, x * x + y * y), saves="xy")
HYPOT = defvjp(Op("hypot", broadcasts=True),  # 0 at (0, 0)
               lambda o, g, ans, x, y: g * x / _nonzero(o, ans),
               lambda o, g, ans, x, y: g * y / _nonzero(o, ans), saves="xy ans")
SINH = defvjp(Op("sinh"), lambda o, g, ans, x: g * _conj(o, o.cosh(x)), saves="x")
COSH = defvjp(Op("cosh"), lambda o, g, ans, x: g * _conj(o, o.sinh(x)), saves="x")
TANH = defvjp(Op("tanh"), lambda o, g, ans, x: g * _conj(o, 1 - ans * ans), saves="ans")
ASINH = defvjp(Op("asinh"),
               lambda o, g, ans, x: g / _conj(o, o.sqrt(x * x + 1)), saves="x")
ACOSH = defvjp(Op("acosh"),  # sqrt(z-1) sqrt(z+1): the principal branch for complex z
               lambda o, g, ans, x: g / _conj(o, o.sqrt(x - 1) * o.sqrt(x + 1)), saves="x")
ATANH = defvjp(Op("atanh"), lambda o, g, ans, x: g / _conj(o, 1 - x * x), saves="x")

# ---------------------------------------------------------------------------
# Complex parts (a real array's real part is itself; imag takes complex arrays only)
# ---------------------------------------------------------------------------
REAL = defvjp(Op("real", shapes=True, view=True),
              lambda o, g, ans, x: g if g.dtype == x.dtype else o.astype(g, x.dtype))
IMAG = defvjp(Op("imag", shapes=True, view=True),  # (numpy also takes real arrays: imag is 0 then)
              lambda o, g, ans, x: o.astype(g, x.dtype) * 1j if _is_complex(x) else None)
CONJ = def_linear(Op("conj", view=True))

# ---------------------------------------------------------------------------
# Sign, magnitude and selection
# ---------------------------------------------------------------------------


def _abs_vjp(o: Any, g: Any, ans: Any, x: Any) -> Any:
    if _is_complex(x):
        return o.astype(g / _nonzero(o, ans), x.dtype) * x  # g z / |z|, and 0 at z = 0
    return g * o.sign(x)  # abs'(0) = 0


ABS = defvjp(Op("abs"), _abs_vjp, saves="x ans")
SIGN = def_nograd(Op("sign"))
COPYSIGN = defvjp(Op("copysign", broadcasts=True),  # none w.r.t. the sign source
                  lambda o, g, ans, x, y: o.where(o.signbit(x) == o.signbit(ans), g, -g),
                  None, saves="x ans")
NEXTAFTER = defvjp(Op("nextafter", broadcasts=True),  # x moved by one ulp
                   lambda o, g, ans, x, y: g,
                   None)
WHERE = defvjp(Op("where", broadcasts=True),
               None,
               lambda o, g, ans, c, x, y: o.where(c, g, 0.0),
               lambda o, g, ans, c, x, y: o.where(c, 0.0, g), saves="x")
MAXIMUM = defvjp(Op("maximum", broadcasts=True),  # ties: to x
                 lambda o, g, ans, x, y: o.where(x >= y, g, 0.0),
                 lambda o, g, ans, x, y: o.where(x >= y, 0.0, g), saves="xy")
MINIMUM = defvjp(Op("minimum", broadcasts=True),  # ties: to x
                 lambda o, g, ans, x, y: o.where(x <= y, g, 0.0),
                 lambda o, g, ans, x, y: o.where(x <= y, 0.0, g), saves="xy")


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
# x < min, to max where x > max. The rules assume min <= max: min > max is implementation-defined in
# the standard (array_api_strict refuses it). A missing bound is not an input (apply takes no None):
# clip(x, max=b) passes b as the one bound with upper=True.
CLIP = defvjp(Op("clip", _clip_kernel, broadcasts=True),
              _clip_vjp_x,
              lambda o, g, ans, x, b1, b2=None, *, upper=False: o.where(x > b1 if upper else x < b1, g, 0.0),
              lambda o, g, ans, x, b1, b2: o.where(x > b2, g, 0.0), saves="xyz")

# ---------------------------------------------------------------------------
# Rounding (zero derivative almost everywhere: no gradient)
# ---------------------------------------------------------------------------
FLOOR = def_nograd(Op("floor"))
CEIL = def_nograd(Op("ceil"))
TRUNC = def_nograd(Op("trunc"))
ROUND = def_nograd(Op("round"))

# ---------------------------------------------------------------------------
# Comparisons and predicates (boolean results: no gradient)
# ---------------------------------------------------------------------------
EQUAL = def_nograd(Op("equal", operator.eq, uses_xp=False))
NOT_EQUAL = def_nograd(Op("not_equal", operator.ne, uses_xp=False))
LESS = def_nograd(Op("less", operator.lt, uses_xp=False))
LESS_EQUAL = def_nograd(Op("less_equal", operator.le, uses_xp=False))
GREATER = def_nograd(Op("greater", operator.gt, uses_xp=False))
GREATER_EQUAL = def_nograd(Op("greater_equal", operator.ge, uses_xp=False))
ISFINITE = def_nograd(Op("isfinite"))
ISINF = def_nograd(Op("isinf"))
ISNAN = def_nograd(Op("isnan"))
SIGNBIT = def_nograd(Op("signbit"))

# ---------------------------------------------------------------------------
# Logical and bitwise (boolean and integer results: no gradient)
# ---------------------------------------------------------------------------
LOGICAL_AND = def_nograd(Op("logical_and"))
LOGICAL_OR = def_nograd(Op("logical_or"))
LOGICAL_XOR = def_nograd(Op("logical_xor"))
LOGICAL_NOT = def_nograd(Op("logical_not"))
BITWISE_AND = def_nograd(Op("bitwise_and"))
BITWISE_OR = def_nograd(Op("bitwise_or"))
BITWISE_XOR = def_nograd(Op("bitwise_xor"))
BITWISE_INVERT = def_nograd(Op("bitwise_invert"))
BITWISE_LEFT_SHIFT = def_nograd(Op("bitwise_left_shift"))
BITWISE_RIGHT_SHIFT = def_nograd(Op("bitwise_right_shift"))

# ---------------------------------------------------------------------------
# Dtype (no gradient, or a cast back)
# ---------------------------------------------------------------------------
ZEROS_LIKE = def_nograd(Op("zeros_like"))
ONES_LIKE = def_nograd(Op("ones_like"))


def _astype_vjp(o: Any, g: Any, ans: Any, x: Any, dtype: Any, copy: bool = True) -> Any:
    if _is_complex(g) and not _is_complex(x):
        g = o.real(g)  # a real array cast to complex: its gradient is the real part
    return o.astype(g, x.dtype, copy=copy)


ASTYPE = defvjp(Op("astype", lambda xp, x, dtype, copy=True: xp.astype(x, dtype, copy=copy), shapes=True, view=True),
                _astype_vjp)


# ---------------------------------------------------------------------------
# Public functions (signatures as in the Array API standard)
# ---------------------------------------------------------------------------


def add(x1, x2, /):
    return apply(ADD, (x1, x2))


def subtract(x1, x2, /):
    return apply(SUBTRACT, (x1, x2))


def multiply(x1, x2, /):
    return apply(MULTIPLY, (x1, x2))


def divide(x1, x2, /):
    return apply(DIVIDE, (x1, x2))


def floor_divide(x1, x2, /):
    return apply(FLOOR_DIVIDE, (x1, x2))


def remainder(x1, x2, /):
    return apply(REMAINDER, (x1, x2))


def pow(x1, x2, /):
    return apply(POW, (x1, x2))


def negative(x, /):
    return apply(NEGATIVE, (x,))


def positive(x, /):
    return apply(POSITIVE, (x,))


def square(x, /):
    return apply(SQUARE, (x,))


def reciprocal(x, /):
    return apply(RECIPROCAL, (x,))


def exp(x, /):
    return apply(EXP, (x,))


def expm1(x, /):
    return apply(EXPM1, (x,))


def log(x, /):
    return apply(LOG, (x,))


def log1p(x, /):
    return apply(LOG1P, (x,))


def log2(x, /):
    return apply(LOG2, (x,))


def log10(x, /):
    return apply(LOG10, (x,))


def logaddexp(x1, x2, /):
    return apply(LOGADDEXP, (x1, x2))


def sqrt(x, /):
    return apply(SQRT, (x,))


def sin(x, /):
    return apply(SIN, (x,))


def cos(x, /):
    return apply(COS, (x,))


def tan(x, /):
    return apply(TAN, (x,))


def asin(x, /):
    return apply(ASIN, (x,))


def acos(x, /):
    return apply(ACOS, (x,))


def atan(x, /):
    return apply(ATAN, (x,))


def atan2(x1, x2, /):
    return apply(ATAN2, (x1, x2))


def hypot(x1, x2, /):
    return apply(HYPOT, (x1, x2))


def sinh(x, /):
    return apply(SINH, (x,))


def cosh(x, /):
    return apply(COSH, (x,))


def tanh(x, /):
    return apply(TANH, (x,))


def asinh(x, /):
    return apply(ASINH, (x,))


def acosh(x, /):
    return apply(ACOSH, (x,))


def atanh(x, /):
    return apply(ATANH, (x,))


def real(x, /):
    return apply(REAL, (x,))


def imag(x, /):
    return apply(IMAG, (x,))


def conj(x, /):
    return apply(CONJ, (x,))


def abs(x, /):
    return apply(ABS, (x,))


def sign(x, /):
    return apply(SIGN, (x,))


def copysign(x1, x2, /):
    return apply(COPYSIGN, (x1, x2))


def nextafter(x1, x2, /):
    return apply(NEXTAFTER, (x1, x2))


def maximum(x1, x2, /):
    return apply(MAXIMUM, (x1, x2))


def minimum(x1, x2, /):
    return apply(MINIMUM, (x1, x2))


def clip(x, /, min=None, max=None):
    # Only the bounds given are inputs (see CLIP).
    if max is None:
        return apply(CLIP, (x,) if min is None else (x, min))
    return apply(CLIP, (x, max), {"upper": True}) if min is None else apply(CLIP, (x, min, max))


def where(condition, x1, x2, /):
    return apply(WHERE, (condition, x1, x2))


def floor(x, /):
    return apply(FLOOR, (x,))


def ceil(x, /):
    return apply(CEIL, (x,))


def trunc(x, /):
    return apply(TRUNC, (x,))


def round(x, /):
    return apply(ROUND, (x,))


def equal(x1, x2, /):
    return apply(EQUAL, (x1, x2))


def not_equal(x1, x2, /):
    return apply(NOT_EQUAL, (x1, x2))


def less(x1, x2, /):
    return apply(LESS, (x1, x2))


def less_equal(x1, x2, /):
    return apply(LESS_EQUAL, (x1, x2))


def greater(x1, x2, /):
    return apply(GREATER, (x1, x2))


def greater_equal(x1, x2, /):
    return apply(GREATER_EQUAL, (x1, x2))


def isfinite(x, /):
    return apply(ISFINITE, (x,))


def isinf(x, /):
    return apply(ISINF, (x,))


def isnan(x, /):
    return apply(ISNAN, (x,))


def signbit(x, /):
    return apply(SIGNBIT, (x,))


def logical_and(x1, x2, /):
    return apply(LOGICAL_AND, (x1, x2))


def logical_or(x1, x2, /):
    return apply(LOGICAL_OR, (x1, x2))


def logical_xor(x1, x2, /):
    return apply(LOGICAL_XOR, (x1, x2))


def logical_not(x, /):
    return apply(LOGICAL_NOT, (x,))


def bitwise_and(x1, x2, /):
    return apply(BITWISE_AND, (x1, x2))


def bitwise_or(x1, x2, /):
    return apply(BITWISE_OR, (x1, x2))


def bitwise_xor(x1, x2, /):
    return apply(BITWISE_XOR, (x1, x2))


def bitwise_invert(x, /):
    return apply(BITWISE_INVERT, (x,))


def bitwise_left_shift(x1, x2, /):
    return apply(BITWISE_LEFT_SHIFT, (x1, x2))


def bitwise_right_shift(x1, x2, /):
    return apply(BITWISE_RIGHT_SHIFT, (x1, x2))


def zeros_like(x, /, *, dtype=None, device=None):
    return apply(ZEROS_LIKE, (x,), {"dtype": dtype} if dtype is not None else None)


def ones_like(x, /, *, dtype=None, device=None):
    return apply(ONES_LIKE, (x,), {"dtype": dtype} if dtype is not None else None)


def astype(x, dtype, /, *, copy=True, device=None):
    return apply(ASTYPE, (x,), {"dtype": dtype, "copy": copy})

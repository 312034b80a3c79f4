"""Element-wise functions: forward kernels and vjp rules, one row each."""

from __future__ import annotations

import math
import operator
from typing import Any

from polygrad.ops.primitive import Op, apply, def_nograd, defvjp

__all__ = ['add', 'subtract', 'multiply', 'divide', 'pow', 'negative', 'positive', 'exp', 'log', 'sin', 'cos', 'tanh', 'sqrt', 'abs', 'sign', 'where', 'maximum', 'equal', 'not_equal', 'less', 'less_equal', 'greater', 'greater_equal', 'zeros_like', 'ones_like', 'astype']

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
                  lambda o, g, ans, x, y: g * y,
                  lambda o, g, ans, x, y: g * x, saves="xy")
DIVIDE = defvjp(Op("divide", operator.truediv, broadcasts=True, uses_xp=False),
                lambda o, g, ans, x, y: g / y,
                lambda o, g, ans, x, y: -g * x / (y * y), saves="xy")
def _pow_vjp_base(o: Any, g: Any, ans: Any, x: Any, y: Any) -> Any:
    if type(y) in (int, float):  # a constant exponent (the common case)
        return g * 0.0 if y == 0 else g * y * x ** (y - 1)
    return o.where(y == 0, 0.0, g * y * x ** (y - 1))  # d/dx x**0 = 0, also at x = 0


def _pow_vjp_exponent(o: Any, g: Any, ans: Any, x: Any, y: Any) -> Any:
    log_x = math.log(x) if type(x) in (int, float) else o.log(x)
    return g * log_x * ans


POW = defvjp(Op("pow", operator.pow, broadcasts=True, uses_xp=False), _pow_vjp_base, _pow_vjp_exponent, saves="xy ans")
NEGATIVE = defvjp(Op("negative", operator.neg, uses_xp=False), lambda o, g, ans, x: -g)
POSITIVE = defvjp(Op("positive", operator.pos, uses_xp=False), lambda o, g, ans, x: g)

# ---------------------------------------------------------------------------
# Transcendental
# ---------------------------------------------------------------------------
EXP = defvjp(Op("exp", lambda xp, x: xp.exp(x)), lambda o, g, ans, x: g * ans, saves="ans")
LOG = defvjp(Op("log", lambda xp, x: xp.log(x)), lambda o, g, ans, x: g / x, saves="x")
SIN = defvjp(Op("sin", lambda xp, x: xp.sin(x)), lambda o, g, ans, x: g * o.cos(x), saves="x")
COS = defvjp(Op("cos", lambda xp, x: xp.cos(x)), lambda o, g, ans, x: -g * o.sin(x), saves="x")
TANH = defvjp(Op("tanh", lambda xp, x: xp.tanh(x)), lambda o, g, ans, x: g * (1 - ans * ans), saves="ans")
SQRT = defvjp(Op("sqrt", lambda xp, x: xp.sqrt(x)), lambda o, g, ans, x: g / (2 * ans), saves="ans")
ABS = defvjp(Op("abs", lambda xp, x: xp.abs(x)), lambda o, g, ans, x: g * o.sign(x), saves="x")  # abs'(0) = 0
SIGN = def_nograd(Op("sign", lambda xp, x: xp.sign(x)))

# ---------------------------------------------------------------------------
# Selection
# ---------------------------------------------------------------------------
WHERE = defvjp(Op("where", lambda xp, c, x, y: xp.where(c, x, y), broadcasts=True),
               None,
               lambda o, g, ans, c, x, y: o.where(c, g, 0.0),
               lambda o, g, ans, c, x, y: o.where(c, 0.0, g), saves="x")
MAXIMUM = defvjp(Op("maximum", lambda xp, x, y: xp.maximum(x, y), broadcasts=True),  # ties: to x
                 lambda o, g, ans, x, y: o.where(x >= y, g, 0.0),
                 lambda o, g, ans, x, y: o.where(x >= y, 0.0, g), saves="xy")

# ---------------------------------------------------------------------------
# Comparisons and dtype (no gradient, or a cast back)
# ---------------------------------------------------------------------------
EQUAL = def_nograd(Op("equal", operator.eq, uses_xp=False))
NOT_EQUAL = def_nograd(Op("not_equal", operator.ne, uses_xp=False))
LESS = def_nograd(Op("less", operator.lt, uses_xp=False))
LESS_EQUAL = def_nograd(Op("less_equal", operator.le, uses_xp=False))
GREATER = def_nograd(Op("greater", operator.gt, uses_xp=False))
GREATER_EQUAL = def_nograd(Op("greater_equal", operator.ge, uses_xp=False))
ZEROS_LIKE = def_nograd(Op("zeros_like", lambda xp, x, dtype=None: xp.zeros_like(x, dtype=dtype)))
ONES_LIKE = def_nograd(Op("ones_like", lambda xp, x, dtype=None: xp.ones_like(x, dtype=dtype)))
ASTYPE = defvjp(Op("astype", lambda xp, x, dtype, copy=True: xp.astype(x, dtype, copy=copy), shapes=True),
                lambda o, g, ans, x, dtype, copy=True: o.astype(g, _dtype_of(x), copy=copy), saves="x")


def _dtype_of(x: Any) -> Any:
    return x.dtype


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


def pow(x1, x2, /):
    return apply(POW, (x1, x2))


def negative(x, /):
    return apply(NEGATIVE, (x,))


def positive(x, /):
    return apply(POSITIVE, (x,))


def exp(x, /):
    return apply(EXP, (x,))


def log(x, /):
    return apply(LOG, (x,))


def sin(x, /):
    return apply(SIN, (x,))


def cos(x, /):
    return apply(COS, (x,))


def tanh(x, /):
    return apply(TANH, (x,))


def sqrt(x, /):
    return apply(SQRT, (x,))


def abs(x, /):
    return apply(ABS, (x,))


def sign(x, /):
    return apply(SIGN, (x,))


def where(condition, x1, x2, /):
    return apply(WHERE, (condition, x1, x2))


def maximum(x1, x2, /):
    return apply(MAXIMUM, (x1, x2))


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


def zeros_like(x, /, *, dtype=None, device=None):
    return apply(ZEROS_LIKE, (x,), {"dtype": dtype} if dtype is not None else None)


def ones_like(x, /, *, dtype=None, device=None):
    return apply(ONES_LIKE, (x,), {"dtype": dtype} if dtype is not None else None)


def astype(x, dtype, /, *, copy=True, device=None):
    return apply(ASTYPE, (x,), {"dtype": dtype, "copy": copy})

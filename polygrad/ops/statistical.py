"""Reductions: kernels and vjp rules."""

from __future__ import annotations

import math
from typing import Any

from polygrad.core.variable import Variable
from polygrad.ops.manipulation import _normalize_axes
from polygrad.ops.primitive import Op, apply, defvjp

__all__ = ['sum', 'mean', 'max', 'min']


def _restore(o: Any, g: Any, shape: tuple, axis: Any, keepdims: bool) -> Any:
    """Broadcast a reduced gradient back to the input's ``shape``."""
    if not keepdims:
        axes = _normalize_axes(axis, len(shape))
        kept = tuple(1 if i in axes else n for i, n in enumerate(shape))
        g = o.reshape(g, kept)
    return o.broadcast_to(g, tuple(shape))


def _sum_vjp(o: Any, g: Any, x: Any, axis: Any, dtype: Any, keepdims: bool) -> Any:
    gx = _restore(o, g, tuple(x.shape), axis, keepdims)
    return gx if dtype is None or gx.dtype == x.dtype else o.astype(gx, x.dtype)


def _count(shape: tuple, axis: Any) -> int:
    return math.prod(shape[a] for a in _normalize_axes(axis, len(shape)))


def _max_vjp(o: Any, g: Any, ans: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """Ties share the gradient equally."""
    shape = tuple(x.shape)
    top = _restore(o, ans, shape, axis, keepdims)
    hit = o.astype(x == top, g.dtype)
    count = o.sum(hit, axis=axis, keepdims=True)
    return _restore(o, g, shape, axis, keepdims) * hit / _restore(o, count, shape, axis, True)


SUM = defvjp(Op("sum", lambda xp, x, axis=None, dtype=None, keepdims=False: xp.sum(x, axis=axis, dtype=dtype, keepdims=keepdims), shapes=True),
             lambda o, g, ans, x, axis=None, dtype=None, keepdims=False: _sum_vjp(o, g, x, axis, dtype, keepdims))
MEAN = defvjp(Op("mean", lambda xp, x, axis=None, keepdims=False: xp.mean(x, axis=axis, keepdims=keepdims), shapes=True),
              lambda o, g, ans, x, axis=None, keepdims=False: _restore(o, g, tuple(x.shape), axis, keepdims) / _count(x.shape, axis))
MAX = defvjp(Op("max", lambda xp, x, axis=None, keepdims=False: xp.max(x, axis=axis, keepdims=keepdims)),
             _max_vjp, saves="x ans")
MIN = defvjp(Op("min", lambda xp, x, axis=None, keepdims=False: xp.min(x, axis=axis, keepdims=keepdims)),
             _max_vjp, saves="x ans")


def sum(x, /, *, axis=None, dtype=None, keepdims=False):
    params = {"axis": axis, "keepdims": keepdims}
    if dtype is not None:
        params["dtype"] = dtype
    return apply(SUM, (x,), params)


def mean(x, /, *, axis=None, keepdims=False):
    return apply(MEAN, (x,), {"axis": axis, "keepdims": keepdims})


def max(x, /, *, axis=None, keepdims=False):
    return apply(MAX, (x,), {"axis": axis, "keepdims": keepdims})


def min(x, /, *, axis=None, keepdims=False):
    return apply(MIN, (x,), {"axis": axis, "keepdims": keepdims})

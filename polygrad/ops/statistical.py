"""Reductions and cumulative functions: kernels and vjp rules.

Non-differentiable points follow the usual conventions: max/min ties share the
gradient equally; std's gradient is 0 where the standard deviation is 0 (as
abs at 0). var and std are NaN where ``N - correction <= 0``, as the standard
says, and so is their gradient. prod and cumulative_prod are exact at zeros (no division by x).
"""

from __future__ import annotations

import math
from typing import Any

from polygrad.core.dispatch import backend_of_type
from polygrad.core.op import NamespaceKernel, Op, defvjp
from polygrad.core.primitive import apply
from polygrad.core.variable import Variable
from polygrad.ops._dtypes import widened, widened_of
from polygrad.ops._export import names, public
from polygrad.ops.elementwise import cast_grad
from polygrad.ops.manipulation import _along, _inverse_perm, _normalize_axes, axis_param


def _restore(o: Any, g: Any, shape: tuple, axis: Any, keepdims: bool) -> Any:
    """Broadcast a reduced gradient back to the input's ``shape``."""
    if not keepdims:
        axes = _normalize_axes(axis, len(shape))
        kept = tuple(1 if i in axes else n for i, n in enumerate(shape))
        g = o.reshape(g, kept)
    return o.broadcast_to(g, tuple(shape))


def _sum_vjp(o: Any, g: Any, x: Any, axis: Any, dtype: Any, keepdims: bool) -> Any:
    gx = _restore(o, g, tuple(x.shape), axis, keepdims)
    return gx if dtype is None else cast_grad(o, gx, x)


def _count(shape: tuple, axis: Any) -> int:
    return math.prod(shape[a] for a in _normalize_axes(axis, len(shape)))


def _real_only(x: Any, name: str) -> None:
    data = x._data if isinstance(x, Variable) else x
    xp = backend_of_type(type(data)).xp
    if xp.isdtype(x.dtype, "complex floating"):
        raise NotImplementedError(f"polygrad: the gradient of {name} for complex input ({x.dtype}) is not implemented")


def _max_vjp(o: Any, g: Any, ans: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """Ties share the gradient equally."""
    shape = tuple(x.shape)
    top = _restore(o, ans, shape, axis, keepdims)
    hit = o.astype(x == top, g.dtype)
    count = o.sum(hit, axis=axis, keepdims=True)
    return _restore(o, g, shape, axis, keepdims) * hit / _restore(o, count, shape, axis, True)


def _exclusive_cumprod(o: Any, x: Any, axis: int) -> Any:
    """Products of the elements strictly before each one along ``axis``."""
    c = o.cumulative_prod(x, axis=axis, include_initial=True)
    return o.getitem(c, _along(axis, slice(None, -1), x.ndim))


def _prod_vjp(o: Any, g: Any, ans: Any, x: Any, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Any:
    """The product of the other elements, as (product before) * (product after):
    exact with zeros, and written with ops, so it differentiates again."""
    _real_only(x, "prod")
    shape = tuple(x.shape)
    nd = len(shape)
    if nd == 0:
        return cast_grad(o, g, x)
    axes = _normalize_axes(axis, nd)
    kept = tuple(i for i in range(nd) if i not in axes)
    perm = kept + axes
    lead = tuple(shape[i] for i in kept)
    xt = o.reshape(o.permute_dims(x, perm), lead + (math.prod(shape[a] for a in axes),))
    before = _exclusive_cumprod(o, xt, len(lead))
    after = o.flip(_exclusive_cumprod(o, o.flip(xt, axis=-1), len(lead)), axis=-1)
    gx = o.reshape(g, lead + (1,)) * (before * after)
    gx = o.permute_dims(o.reshape(gx, tuple(shape[i] for i in perm)), _inverse_perm(perm, nd))
    return cast_grad(o, gx, x)


def _centered(o: Any, x: Any, axis: Any) -> tuple[Any, Any]:
    """``x - mean(x)``, in float32 for a narrower float (a float16 mean rounds 1000.25 to 1000,
    and the gradient of var of [1000, 1000, 1000, 1001] was [0, 0, 0, 0.5]), and the dtype to
    give the gradient back in (None: x's own)."""
    data = x._data if isinstance(x, Variable) else x
    wide = widened_of(data)
    if wide is not None:
        x = o.astype(x, wide)
    c = x - o.mean(x, axis=axis, keepdims=True)
    # Centred again: the mean is rounded to x's dtype, and where it is large against the spread
    # that rounding is a large part of each deviation (float32 values of 1000 +- 0.01: the gradient
    # was 2e-3 off; JAX's is right). The deviations' own mean is that rounding, taken exactly.
    return c - o.mean(c, axis=axis, keepdims=True), (None if wide is None else data.dtype)


def _var_vjp(o: Any, g: Any, ans: Any, x: Any, axis: Any = None, correction: float = 0.0, keepdims: bool = False) -> Any:
    shape = tuple(x.shape)
    dof = _count(shape, axis) - correction
    centered, back = _centered(o, x, axis)
    gx = _restore(o, g, shape, axis, keepdims) * centered * (2.0 / dof if dof > 0 else math.nan)
    return gx if back is None else o.astype(gx, back)


def _std_vjp(o: Any, g: Any, ans: Any, x: Any, axis: Any = None, correction: float = 0.0, keepdims: bool = False) -> Any:
    """d std = (x - mean) / (dof * std); 0 where std is 0 (a corner, like abs at 0)."""
    shape = tuple(x.shape)
    dof = _count(shape, axis) - correction
    centered, back = _centered(o, x, axis)
    top = _restore(o, ans, shape, axis, keepdims)
    flat = top == 0
    safe = o.where(flat, 1.0, top)
    scaled = _restore(o, g, shape, axis, keepdims) * centered / (safe * (dof if dof > 0 else math.nan))
    gx = o.where(flat, 0.0, scaled)
    return gx if back is None else o.astype(gx, back)


def _at_least_1d(x: Any, fname: str) -> None:
    """The standard's cumulative functions take arrays of one or more dimensions: a 0-d one
    gave (1,) on numpy without include_initial (and a gradient of the wrong shape), an error
    with it, and errors on dask and array_api_strict."""
    if getattr(x, "ndim", None) == 0 or type(x) in (bool, int, float, complex):
        raise ValueError(f"polygrad.{fname}: x must have one or more dimensions, got a 0-d array; reshape it to (1,)")


def _reverse_cumsum(o: Any, v: Any, axis: int) -> Any:
    return o.flip(o.cumulative_sum(o.flip(v, axis=axis), axis=axis), axis=axis)


def _cumulative_axis(x: Any, axis: Any) -> int:
    return 0 if axis is None else axis % x.ndim


def _cumsum_vjp(o: Any, g: Any, ans: Any, x: Any, axis: Any = None, dtype: Any = None, include_initial: bool = False) -> Any:
    """Each x_j feeds every later partial sum: the reversed cumulative sum of g."""
    ax = _cumulative_axis(x, axis)
    if include_initial:
        g = o.getitem(g, _along(ax, slice(1, None), x.ndim))
    gx = _reverse_cumsum(o, g, ax)
    return cast_grad(o, gx, x)


def _shift_down_the_axis(o: Any, v: Any, m: int, axis: int) -> Any:
    """``v[j + m]`` at position j along ``axis``, zeros past the end."""
    tail = o.getitem(v, _along(axis, slice(m, None), v.ndim))
    return o.concat([tail, o.zeros_like(o.getitem(v, _along(axis, slice(0, m), v.ndim)))], axis=axis)


def _cumprod_vjp(o: Any, g: Any, ans: Any, x: Any, axis: Any = None, dtype: Any = None, include_initial: bool = False) -> Any:
    """gx_j = sum_{k>=j} g_k prod_{i<=k, i!=j} x_i = (prod_{i<j} x_i) * S_j, where
    S_j = g_j + x_{j+1} S_{j+1} is solved by a doubling scan (log2(n) steps).

    Only products and sums: exact where x has zeros, and exact again when
    differentiated (no division by x, no special case at the first zero).
    """
    _real_only(x, "cumulative_prod")
    ax = _cumulative_axis(x, axis)
    n = x.shape[ax]
    if include_initial:
        g = o.getitem(g, _along(ax, slice(1, None), x.ndim))
    if n == 0:
        return o.zeros_like(x)
    scale, total, m = _shift_down_the_axis(o, x, 1, ax), g, 1  # S_j = total_j + scale_j * S_{j+m}
    while m < n:
        total = total + scale * _shift_down_the_axis(o, total, m, ax)
        if 2 * m < n:
            scale = scale * _shift_down_the_axis(o, scale, m, ax)
        m *= 2
    gx = _exclusive_cumprod(o, x, ax) * total
    return cast_grad(o, gx, x)


def _params(x: Any, fn: str, axis: Any, keepdims: bool, dtype: Any = None, **more: Any) -> dict:
    params = {"axis": axis_param(x, axis, fn), "keepdims": keepdims, **more}
    if dtype is not None:
        params["dtype"] = dtype
    return params


SUM = defvjp(Op("sum", shapes=True, casts=True),
             lambda o, g, ans, x, axis=None, dtype=None, keepdims=False: _sum_vjp(o, g, x, axis, dtype, keepdims))


@public
def sum(x, /, *, axis=None, dtype=None, keepdims=False):
    return apply(SUM, (x,), _params(x, "sum", axis, keepdims, dtype))


def _in_float32_at_least(name: str) -> Any:
    """The namespace's ``name`` (mean, var, std), taken in float32 for a narrower float (see
    :func:`~polygrad.ops._dtypes.widened`) and given back in the input's dtype."""
    kernel = NamespaceKernel(name)

    def run(xp: Any, x: Any, **params: Any) -> Any:
        wide = widened(xp, x.dtype)
        if wide is None:
            return kernel(xp, x, **params)
        return xp.astype(kernel(xp, xp.astype(x, wide), **params), x.dtype)

    return run


def _mean_vjp(o: Any, g: Any, ans: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    n = _count(x.shape, axis)
    data = g._data if isinstance(g, Variable) else g  # (x is a shape and dtype only: a _Meta)
    wide = widened_of(data)
    if wide is None:
        return _restore(o, g, tuple(x.shape), axis, keepdims) / n
    # a narrower float: scaled in float32 (n past 65504 is inf in float16, the gradient was 0;
    # 1/n is subnormal past 16384)
    return o.astype(_restore(o, o.astype(g, wide), tuple(x.shape), axis, keepdims) / n, data.dtype)


MEAN = defvjp(Op("mean", _in_float32_at_least("mean"), shapes=True), _mean_vjp)


@public
def mean(x, /, *, axis=None, keepdims=False):
    return apply(MEAN, (x,), _params(x, "mean", axis, keepdims))


MAX = defvjp(Op("max"),
             _max_vjp, saves="x ans")


@public
def max(x, /, *, axis=None, keepdims=False):
    return apply(MAX, (x,), _params(x, "max", axis, keepdims))


MIN = defvjp(Op("min"),
             _max_vjp, saves="x ans")


@public
def min(x, /, *, axis=None, keepdims=False):
    return apply(MIN, (x,), _params(x, "min", axis, keepdims))


PROD = defvjp(Op("prod", casts=True),
              _prod_vjp, saves="x")


@public
def prod(x, /, *, axis=None, dtype=None, keepdims=False):
    return apply(PROD, (x,), _params(x, "prod", axis, keepdims, dtype))


def _nan_without_dof(name: str) -> Any:
    """var / std: NaN where ``N - correction <= 0``, as the standard says (numpy gave inf, dask
    NaN, and the rule a finite gradient of the opposite sign)."""
    kernel = _in_float32_at_least(name)

    def run(xp: Any, x: Any, **params: Any) -> Any:
        dof = _count(tuple(x.shape), params.get("axis")) - params.get("correction", 0.0)
        if not dof <= 0:  # (dof is NaN where dask does not know a length yet: the kernel's value)
            return kernel(xp, x, **params)
        out = kernel(xp, x, **{**params, "correction": 0.0})  # the shape and dtype, without numpy's warnings
        return xp.full_like(out, math.nan)

    return run


VAR = defvjp(Op("var", _nan_without_dof("var")),
             _var_vjp, saves="x")


@public
def var(x, /, *, axis=None, correction=0.0, keepdims=False):
    return apply(VAR, (x,), _params(x, "var", axis, keepdims, correction=correction))


STD = defvjp(Op("std", _nan_without_dof("std")),
             _std_vjp, saves="x ans")


@public
def std(x, /, *, axis=None, correction=0.0, keepdims=False):
    return apply(STD, (x,), _params(x, "std", axis, keepdims, correction=correction))


CUMULATIVE_SUM = defvjp(Op("cumulative_sum", shapes=True, casts=True),
                        _cumsum_vjp)


@public
def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
    _at_least_1d(x, "cumulative_sum")
    params = {"axis": axis, "include_initial": include_initial}
    if dtype is not None:
        params["dtype"] = dtype
    return apply(CUMULATIVE_SUM, (x,), params)


CUMULATIVE_PROD = defvjp(Op("cumulative_prod", casts=True),
                         _cumprod_vjp, saves="x")


@public
def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
    _at_least_1d(x, "cumulative_prod")
    params = {"axis": axis, "include_initial": include_initial}
    if dtype is not None:
        params["dtype"] = dtype
    return apply(CUMULATIVE_PROD, (x,), params)


__all__ = names(__name__)  # the public functions declared above

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
from polygrad.core.op import NamespaceKernel, Op, _Meta, defvjp
from polygrad.core.primitive import apply
from polygrad.core.variable import Variable
from polygrad.ops._dtypes import widened, widened_of
from polygrad.ops._export import names, public
from polygrad.ops.elementwise import cast_grad
from polygrad.ops.manipulation import _along, _inverse_perm, _normalize_axes, axis_param


def _unknown(shape: tuple) -> bool:
    """Whether a size of ``shape`` is not known until the array is computed (dask's NaN after
    boolean-mask indexing, ``x[keep]``; None)."""
    return any(n is None or n != n for n in shape)


def _restore(o: Any, g: Any, x: Any, axis: Any, keepdims: bool) -> Any:
    """Broadcast a reduced gradient ``g`` back to the shape of ``x``: by ``broadcast_to`` where its
    sizes are known; where one is not yet, against ``x`` itself, by an elementwise op, which needs
    no size (mean, which keeps no ``x``, is given its array for such an input: see :func:`mean`)."""
    shape = tuple(x.shape)
    unknown = _unknown(shape)
    if not keepdims:
        axes = _normalize_axes(axis, len(shape))
        if unknown:  # (a reshape, and dask's expand_dims, need the sizes)
            g = o.getitem(g, tuple(None if i in axes else slice(None) for i in range(len(shape))))
        else:
            g = o.reshape(g, tuple(1 if i in axes else n for i, n in enumerate(shape)))
    if not unknown or isinstance(x, _Meta):  # (x not kept: broadcast_to says what it needs)
        return o.broadcast_to(g, shape)
    return g + o.zeros_like(x, dtype=g.dtype)


def _sum_vjp(o: Any, g: Any, x: Any, axis: Any, dtype: Any, keepdims: bool) -> Any:
    gx = _restore(o, g, x, axis, keepdims)
    return gx if dtype is None else cast_grad(o, gx, x)


def _count(shape: tuple, axis: Any) -> int:
    return math.prod(shape[a] for a in _normalize_axes(axis, len(shape)))


def _counted(o: Any, x: Any, axis: Any, dtype: Any) -> Any:
    """How many elements of ``x`` each result of a reduction over ``axis`` takes: a number, or where
    a size is not known yet an array of ``dtype`` (keepdims) counted as ``x`` is computed (the
    NaN size made the gradient NaN without a word)."""
    shape = tuple(x.shape)
    if not _unknown([shape[a] for a in _normalize_axes(axis, len(shape))]):
        return _count(shape, axis)
    return o.sum(o.ones_like(x, dtype=dtype), axis=axis, keepdims=True)


def _dof(o: Any, x: Any, axis: Any, correction: float, dtype: Any) -> Any:
    """``N - correction`` for the ``N`` elements each result of var or std over ``axis`` takes, NaN
    where it is not positive (as the standard's var there, and its gradient); see :func:`_counted`."""
    dof = _counted(o, x, axis, dtype) - correction
    if isinstance(dof, (int, float)):
        return dof if dof > 0 else math.nan
    return o.where(dof > 0, dof, math.nan)


def _real_only(x: Any, name: str) -> None:
    data = x._data if isinstance(x, Variable) else x
    xp = backend_of_type(type(data)).xp
    if xp.isdtype(x.dtype, "complex floating"):
        raise NotImplementedError(f"polygrad: the gradient of {name} for complex input ({x.dtype}) is not implemented")


def _max_vjp(o: Any, g: Any, ans: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """Ties share the gradient equally."""
    top = _restore(o, ans, x, axis, keepdims)
    hit = o.astype(x == top, g.dtype)
    count = o.sum(hit, axis=axis, keepdims=True)
    return _restore(o, g, x, axis, keepdims) * hit / _restore(o, count, x, axis, True)


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
    centered, back = _centered(o, x, axis)
    gx = _restore(o, g, x, axis, keepdims) * centered * (2.0 / _dof(o, x, axis, correction, centered.dtype))
    return gx if back is None else o.astype(gx, back)


def _std_vjp(o: Any, g: Any, ans: Any, x: Any, axis: Any = None, correction: float = 0.0, keepdims: bool = False) -> Any:
    """d std = (x - mean) / (dof * std); 0 where std is 0 (a corner, like abs at 0)."""
    centered, back = _centered(o, x, axis)
    top = _restore(o, ans, x, axis, keepdims)
    flat = top == 0
    safe = o.where(flat, 1.0, top)
    scaled = _restore(o, g, x, axis, keepdims) * centered / (safe * _dof(o, x, axis, correction, centered.dtype))
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


def _unsized(x: Any) -> Any:
    """The array of ``x`` where one of its sizes stays unknown until it is computed (dask's NaN after
    ``x[keep]``: ``BackendInfo.data_dependent_shapes`` False; a symbolic graph's sizes are known when it
    runs), else None."""
    data = x._data if isinstance(x, Variable) else x
    shape = getattr(data, "shape", None)
    if shape is None or not _unknown(tuple(shape)):
        return None
    info = getattr(backend_of_type(type(data)), "info", None)
    return data if info is not None and not info.data_dependent_shapes else None


SUM = defvjp(Op("sum", shapes=True, casts=True),
             lambda o, g, ans, x, axis=None, dtype=None, keepdims=False: _sum_vjp(o, g, x, axis, dtype, keepdims))


@public
def sum(x, /, *, axis=None, dtype=None, keepdims=False):
    return apply(SUM, (x,), _params(x, "sum", axis, keepdims, dtype))


def _in_float32_at_least(name: str) -> Any:
    """The namespace's ``name`` (mean, var, std), taken in float32 for a narrower float (see
    :func:`~polygrad.ops._dtypes.widened`) and given back in the input's dtype."""
    kernel = NamespaceKernel(name)

    def run(xp: Any, x: Any, like: Any = None, **params: Any) -> Any:  # (like: for mean's rule, see mean)
        wide = widened(xp, x.dtype)
        if wide is None:
            return kernel(xp, x, **params)
        return xp.astype(kernel(xp, xp.astype(x, wide), **params), x.dtype)

    return run


def _mean_vjp(o: Any, g: Any, ans: Any, x: Any, axis: Any = None, keepdims: bool = False, like: Any = None) -> Any:
    """``g`` broadcast back and divided by the count; ``x`` is a shape and dtype only (a _Meta), and
    ``like`` x's array where a size of it is unknown (see :func:`mean`)."""
    if like is not None:
        x = like
    data = g._data if isinstance(g, Variable) else g
    wide = widened_of(data)
    if wide is None:
        gx = _restore(o, g, x, axis, keepdims)
        return gx / _counted(o, x, axis, gx.dtype)
    # a narrower float: scaled in float32 (n past 65504 is inf in float16, the gradient was 0;
    # 1/n is subnormal past 16384)
    gx = _restore(o, o.astype(g, wide), x, axis, keepdims)
    return o.astype(gx / _counted(o, x, axis, gx.dtype), data.dtype)


MEAN = defvjp(Op("mean", _in_float32_at_least("mean"), shapes=True), _mean_vjp)


@public
def mean(x, /, *, axis=None, keepdims=False):
    params = _params(x, "mean", axis, keepdims)
    # mean keeps nothing of x (its rule reads x's shape), but where a size of x is unknown the
    # gradient can only be broadcast against x's array (see _restore): the node holds it then, as
    # a parameter the kernel ignores, not as a saved input (x written in place afterwards is no
    # reason to refuse a backward that reads no value of it). It failed: BN after a layer on x[keep].
    like = _unsized(x)
    if like is not None:
        params["like"] = like
    return apply(MEAN, (x,), params)


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

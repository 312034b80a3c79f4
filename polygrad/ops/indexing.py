"""Indexing functions: take and take_along_axis, and their adjoints (scatter-adds
through the backend's ``scatter_add``; repeated indices add up)."""

from __future__ import annotations

import math
from typing import Any

from polygrad.core.dispatch import backend_of_type
from polygrad.core.op import Op, defvjp
from polygrad.core.primitive import apply
from polygrad.ops._dtypes import index_dtype
from polygrad.ops._export import names, public
from polygrad.ops.manipulation import axis_param


def _take_grad_kernel(xp: Any, g: Any, indices: Any, axis: int, shape: tuple) -> Any:
    """Zeros of ``shape`` with ``g`` (shaped like ``take(x, indices, axis=axis)``) added
    at ``indices`` along ``axis``: the scatter runs on the leading axis, where
    every backend's scatter-add takes an integer array."""
    shape = tuple(shape)
    nd = len(shape)
    axis %= nd
    k = indices.ndim
    perm = tuple(range(axis, axis + k)) + tuple(range(axis)) + tuple(range(axis + k, g.ndim))
    if perm != tuple(range(g.ndim)):
        g = xp.permute_dims(g, perm)
    rest = shape[:axis] + shape[axis + 1:]
    count = math.prod(indices.shape)
    z = xp.zeros((shape[axis],) + rest, dtype=g.dtype)
    if count == 0:
        return xp.zeros(shape, dtype=g.dtype)
    out = backend_of_type(type(g)).scatter_add(z, (xp.reshape(indices, (count,)),), xp.reshape(g, (count,) + rest))
    back = tuple(range(1, axis + 1)) + (0,) + tuple(range(axis + 1, nd))
    return xp.permute_dims(out, back) if axis else out


def _take_along_axis_grad_kernel(xp: Any, g: Any, indices: Any, axis: int, shape: tuple) -> Any:
    """Zeros of ``shape`` with ``g`` added where take_along_axis read it: a full
    integer-array key (axes where x was broadcast from 1 all read index 0)."""
    shape = tuple(shape)
    nd = len(shape)
    axis %= nd
    key = []
    for d in range(nd):
        if d == axis:
            key.append(indices)
            continue
        n = g.shape[d]
        line = xp.arange(n, dtype=index_dtype(xp)) if shape[d] == n else xp.zeros((n,), dtype=index_dtype(xp))
        key.append(xp.reshape(line, tuple(n if i == d else 1 for i in range(nd))))
    return backend_of_type(type(g)).scatter_add(xp.zeros(shape, dtype=g.dtype), tuple(key), g)


def _take_vjp(o: Any, g: Any, ans: Any, x: Any, indices: Any, axis: Any = None) -> Any:
    shape = tuple(x.shape)
    if axis is None and len(shape) != 1:  # numpy's flattening take
        size = math.prod(shape)
        return o.reshape(o.take_grad(o.reshape(g, (-1,)), o.reshape(indices, (-1,)), 0, (size,)), shape)
    return o.take_grad(g, indices, 0 if axis is None else axis, shape)


def _take_kernel(xp: Any, x: Any, indices: Any, axis: Any = None) -> Any:
    """``xp.take``; ``axis=None`` on a 1-D array is axis 0 (the standard's meaning, which
    libraries that require an axis, such as dask, are given)."""
    if axis is None and x.ndim == 1:
        axis = 0
    return xp.take(x, indices, axis=axis)


TAKE = defvjp(Op("take", _take_kernel, shapes=True),
              _take_vjp, None, saves="y")


@public
def take(x, indices, /, *, axis=None):
    return apply(TAKE, (x, indices), {"axis": axis_param(x, axis, "take", single=True)})


TAKE_GRAD = defvjp(Op("take_grad", _take_grad_kernel),
                   lambda o, g, ans, gy, indices, axis, shape: o.take(g, indices, axis=axis), None, saves="y")


@public(standard=False)
def take_grad(g, indices, axis, shape):
    """Zeros of ``shape`` with ``g`` added at ``indices`` along ``axis``: the vjp of take."""
    return apply(TAKE_GRAD, (g, indices), {"axis": axis, "shape": tuple(shape)})


TAKE_ALONG_AXIS = defvjp(Op("take_along_axis", shapes=True),
                         lambda o, g, ans, x, indices, axis=-1: o.take_along_axis_grad(g, indices, axis, tuple(x.shape)),
                         None, saves="y")


@public
def take_along_axis(x, indices, /, *, axis=-1):
    return apply(TAKE_ALONG_AXIS, (x, indices), {"axis": axis_param(x, axis, "take_along_axis", single=True)})


TAKE_ALONG_AXIS_GRAD = defvjp(Op("take_along_axis_grad", _take_along_axis_grad_kernel),
                              lambda o, g, ans, gy, indices, axis, shape: o.take_along_axis(g, indices, axis=axis),
                              None, saves="y")


@public(standard=False)
def take_along_axis_grad(g, indices, axis, shape):
    """Zeros of ``shape`` with ``g`` added where ``take_along_axis(x, indices, axis=axis)`` read: its vjp."""
    return apply(TAKE_ALONG_AXIS_GRAD, (g, indices), {"axis": axis, "shape": tuple(shape)})


__all__ = names(__name__)  # the public functions declared above

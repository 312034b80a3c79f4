"""Shape manipulation and indexing: kernels and vjp rules."""

from __future__ import annotations

import builtins
from typing import Any

from polygrad.core.namespace import backend_of_type
from polygrad.core.variable import Variable
from polygrad.ops.primitive import Op, apply, defvjp

__all__ = ['reshape', 'permute_dims', 'transpose', 'reverse_dims', 'matrix_transpose', 'broadcast_to', 'sum_to', 'expand_dims', 'squeeze', 'getitem', 'getitem_grad', 'setitem']


def _normalize_axes(axis: Any, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    if not isinstance(axis, tuple):
        axis = (axis,)
    return tuple(a % ndim if ndim else a for a in axis)


def _sum_to_kernel(xp: Any, x: Any, shape: tuple) -> Any:
    """Sum ``x`` down to ``shape`` (the inverse of broadcasting)."""
    shape = tuple(shape)
    if tuple(x.shape) == shape:
        return x
    lead = x.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape) if n == 1 and x.shape[lead + i] != 1)
    y = xp.sum(x, axis=axes, keepdims=True) if axes else x
    if lead:
        y = xp.reshape(y, shape)
    return y


def _getitem_grad_kernel(xp: Any, g: Any, key: Any, shape: tuple) -> Any:
    """Zeros of ``shape`` with ``g`` added at ``[key]`` (repeated indices summed)."""
    backend = backend_of_type(type(g))
    z = xp.zeros(shape, dtype=g.dtype)
    keys = key if isinstance(key, tuple) else (key,)
    if builtins.any(k is None for k in keys):
        # `None` only inserts length-1 axes: drop it from the key and from g.
        keys = tuple(k for k in keys if k is not None)
        key = keys
        g = xp.reshape(g, tuple(z[keys].shape))
    fancy = builtins.any(not isinstance(k, (int, slice, type(None), type(Ellipsis))) for k in keys)
    if fancy or not backend.inplace:
        return backend.scatter_add(z, key, g)
    z[key] = g
    return z


# ---------------------------------------------------------------------------
# Shapes
# ---------------------------------------------------------------------------
RESHAPE = defvjp(Op("reshape", lambda xp, x, shape, copy=None: xp.reshape(x, shape, copy=copy), shapes=True, view=True),
                 lambda o, g, ans, x, shape, copy=None: o.reshape(g, x.shape))
PERMUTE_DIMS = defvjp(Op("permute_dims", lambda xp, x, axes: xp.permute_dims(x, axes), view=True),
                      lambda o, g, ans, x, axes: o.permute_dims(g, _inverse_perm(axes, g.ndim)))
REVERSE_DIMS = defvjp(Op("reverse_dims", lambda xp, x: xp.permute_dims(x, tuple(range(x.ndim))[::-1]), view=True),
                      lambda o, g, ans, x: o.reverse_dims(g))
MATRIX_TRANSPOSE = defvjp(Op("matrix_transpose", lambda xp, x: xp.matrix_transpose(x), view=True),
                          lambda o, g, ans, x: o.matrix_transpose(g))
BROADCAST_TO = defvjp(Op("broadcast_to", lambda xp, x, shape: xp.broadcast_to(x, shape), shapes=True, view=True),
                      lambda o, g, ans, x, shape: o.sum_to(g, x.shape))
SUM_TO = defvjp(Op("sum_to", _sum_to_kernel, shapes=True),
                lambda o, g, ans, x, shape: o.broadcast_to(g, x.shape))
EXPAND_DIMS = defvjp(Op("expand_dims", lambda xp, x, axis=0: xp.expand_dims(x, axis=axis), shapes=True, view=True),
                     lambda o, g, ans, x, axis=0: o.reshape(g, x.shape))
SQUEEZE = defvjp(Op("squeeze", lambda xp, x, axis: xp.squeeze(x, axis=axis), shapes=True, view=True),
                 lambda o, g, ans, x, axis: o.reshape(g, x.shape))

# ---------------------------------------------------------------------------
# Indexing
# ---------------------------------------------------------------------------
GETITEM = defvjp(Op("getitem", lambda xp, x, key: x[key], shapes=True, view=True),
                 lambda o, g, ans, x, key: o.getitem_grad(g, key, tuple(x.shape)))
GETITEM_GRAD = defvjp(Op("getitem_grad", _getitem_grad_kernel),
                      lambda o, g, ans, gy, key, shape: o.getitem(g, key))


def _setitem_kernel(xp: Any, x: Any, v: Any, key: Any) -> Any:
    out = xp.asarray(x, copy=True)
    out[key] = v
    return out


SETITEM = defvjp(Op("setitem", _setitem_kernel, shapes=True),
                 lambda o, g, ans, x, v, key: o.where(_untouched_mask(g, key), g, 0.0),
                 lambda o, g, ans, x, v, key: o.sum_to(o.getitem(g, key), tuple(v.shape)))


def _untouched_mask(g: Any, key: Any) -> Any:
    data = g._data if isinstance(g, Variable) else g
    backend = backend_of_type(type(data))
    xp = backend.xp
    hit = _getitem_grad_kernel(xp, xp.ones_like(data[key]), key, tuple(data.shape))
    return hit == 0


def _inverse_perm(axes: Any, ndim: int) -> tuple[int, ...]:
    axes = [a % ndim for a in axes]
    inv = [0] * ndim
    for i, a in enumerate(axes):
        inv[a] = i
    return tuple(inv)


def _unwrap_key(key: Any) -> Any:
    if isinstance(key, Variable):
        return key._data
    if isinstance(key, tuple):
        return tuple(k._data if isinstance(k, Variable) else k for k in key)
    return key


# ---------------------------------------------------------------------------
# Public functions
# ---------------------------------------------------------------------------
def reshape(x, /, shape, *, copy=None):
    shape = tuple(shape)
    return apply(RESHAPE, (x,), {"shape": shape} if copy is None else {"shape": shape, "copy": copy})


def permute_dims(x, /, axes):
    return apply(PERMUTE_DIMS, (x,), {"axes": tuple(axes)})


def transpose(x, axes=None):
    """Reverse (or permute by ``axes``) the dimensions, as Chainer's F.transpose."""
    if axes is None:
        return apply(REVERSE_DIMS, (x,))
    return permute_dims(x, axes)


def reverse_dims(x, /):
    """Reverse the order of the dimensions (``x.T``)."""
    return apply(REVERSE_DIMS, (x,))


def matrix_transpose(x, /):
    return apply(MATRIX_TRANSPOSE, (x,))


def broadcast_to(x, /, shape):
    return apply(BROADCAST_TO, (x,), {"shape": tuple(shape)})


def sum_to(x, shape):
    """Sum ``x`` over broadcast dimensions so that it has ``shape``."""
    return apply(SUM_TO, (x,), {"shape": tuple(shape)})


def expand_dims(x, /, axis=0):
    return apply(EXPAND_DIMS, (x,), {"axis": axis})


def squeeze(x, /, axis):
    return apply(SQUEEZE, (x,), {"axis": axis})


def getitem(x, key):
    """``x[key]``, differentiable (basic and integer-array indexing)."""
    return apply(GETITEM, (x,), {"key": _unwrap_key(key)})


def getitem_grad(g, key, shape):
    """Zeros of ``shape`` with ``g`` scattered (added) at ``[key]``: the vjp of getitem."""
    return apply(GETITEM_GRAD, (g,), {"key": key, "shape": tuple(shape)})


def setitem(x, key, value):
    """A copy of ``x`` with ``x[key] = value``, differentiable in both."""
    return apply(SETITEM, (x, value), {"key": _unwrap_key(key)})


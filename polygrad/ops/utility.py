"""Utility functions: all and any (no gradient), diff (composed, differentiable)."""

from __future__ import annotations

from polygrad.core.op import Op, def_nograd
from polygrad.core.primitive import apply
from polygrad.ops._export import names, public
from polygrad.ops.manipulation import _along, concat, getitem


def _axis(axis):
    return tuple(axis) if isinstance(axis, list) else axis


ALL = def_nograd(Op("all"))


@public
def all(x, /, *, axis=None, keepdims=False):
    return apply(ALL, (x,), {"axis": _axis(axis), "keepdims": keepdims})


ANY = def_nograd(Op("any"))


@public
def any(x, /, *, axis=None, keepdims=False):
    return apply(ANY, (x,), {"axis": _axis(axis), "keepdims": keepdims})


@public
def diff(x, /, *, axis=-1, n=1, prepend=None, append=None):
    """Composed: ``prepend``/``append`` joined on, then ``n`` times ``y[1:] - y[:-1]``
    along ``axis`` (differentiable in x, prepend and append)."""
    if prepend is not None or append is not None:
        x = concat([a for a in (prepend, x, append) if a is not None], axis=axis)
    ndim = x.ndim
    ax = axis % ndim
    later, earlier = _along(ax, slice(1, None), ndim), _along(ax, slice(None, -1), ndim)
    for _ in range(n):
        x = getitem(x, later) - getitem(x, earlier)
    return x


__all__ = names(__name__)  # the public functions declared above

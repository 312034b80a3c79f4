"""Utility functions: all and any (no gradient), diff (composed, differentiable)."""

from __future__ import annotations

from polygrad.core.op import Op, def_nograd
from polygrad.core.primitive import apply
from polygrad.ops._export import names, public
from polygrad.ops.manipulation import _along, _normalize_axes, axis_param, concat, getitem


ALL = def_nograd(Op("all"))


@public
def all(x, /, *, axis=None, keepdims=False):
    return apply(ALL, (x,), {"axis": axis_param(x, axis, "all"), "keepdims": keepdims})


ANY = def_nograd(Op("any"))


@public
def any(x, /, *, axis=None, keepdims=False):
    return apply(ANY, (x,), {"axis": axis_param(x, axis, "any"), "keepdims": keepdims})


@public
def diff(x, /, *, axis=-1, n=1, prepend=None, append=None):
    """Composed: ``prepend``/``append`` joined on, then ``n`` times ``y[1:] - y[:-1]``
    along ``axis`` (differentiable in x, prepend and append)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"polygrad.diff: n must be a non-negative int, got {n!r}")
    (ax,) = _normalize_axes(axis, x.ndim, "diff")  # an axis out of range raises, never wraps around
    if prepend is not None or append is not None:
        x = concat([a for a in (prepend, x, append) if a is not None], axis=axis)
    ndim = x.ndim
    later, earlier = _along(ax, slice(1, None), ndim), _along(ax, slice(None, -1), ndim)
    for _ in range(n):
        if x.shape[ax] == 0:  # n past the length: empty (slicing an empty axis again is refused by some)
            break
        x = getitem(x, later) - getitem(x, earlier)
    return x


__all__ = names(__name__)  # the public functions declared above

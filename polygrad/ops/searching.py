"""Searching functions: kernels (no gradients: the results are indices or counts).

``where`` is a row of the element-wise chapter. ``nonzero`` gives a shape that
depends on the data: on a backend that cannot represent one
(``BackendInfo.data_dependent_shapes`` False) it raises an error naming it.
"""

from __future__ import annotations

from typing import Any

from polygrad.core.op import Op, def_nograd
from polygrad.core.primitive import apply
from polygrad.core.variable import Variable
from polygrad.ops._export import names, public, unary
from polygrad.ops.manipulation import axis_param, require_data_dependent_shapes


def _nonzero_kernel(xp: Any, x: Any) -> tuple:
    require_data_dependent_shapes(x, "nonzero")
    return tuple(xp.nonzero(x))


ARGMAX = def_nograd(Op("argmax"))


@public
def argmax(x, /, *, axis=None, keepdims=False):
    return apply(ARGMAX, (x,), {"axis": axis, "keepdims": keepdims})


ARGMIN = def_nograd(Op("argmin"))


@public
def argmin(x, /, *, axis=None, keepdims=False):
    return apply(ARGMIN, (x,), {"axis": axis, "keepdims": keepdims})


COUNT_NONZERO = def_nograd(Op("count_nonzero"))


@public
def count_nonzero(x, /, *, axis=None, keepdims=False):
    return apply(COUNT_NONZERO, (x,), {"axis": axis_param(x, axis, "count_nonzero"), "keepdims": keepdims})


NONZERO = def_nograd(Op("nonzero", _nonzero_kernel, multi=True, value_shapes=True))
nonzero = unary(NONZERO)


def _raw(a: Any) -> Any:
    return a._data if isinstance(a, Variable) else a


SEARCHSORTED = def_nograd(Op("searchsorted"))


@public
def searchsorted(x1, x2, /, *, side="left", sorter=None):
    return apply(SEARCHSORTED, (x1, x2), {"side": side, "sorter": _raw(sorter)})


__all__ = names(__name__)  # the public functions declared above

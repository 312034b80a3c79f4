"""Searching functions: kernels (no gradients: the results are indices or counts).

``where`` is a row of the element-wise chapter. ``nonzero`` gives a shape that
depends on the data: on a backend that cannot represent one
(``BackendInfo.data_dependent_shapes`` False) it raises an error naming it.
"""

from __future__ import annotations

from typing import Any

from polygrad.core.variable import Variable
from polygrad.ops.manipulation import require_data_dependent_shapes
from polygrad.core.op import Op, def_nograd
from polygrad.core.primitive import apply

__all__ = ['argmax', 'argmin', 'count_nonzero', 'nonzero', 'searchsorted']


def _nonzero_kernel(xp: Any, x: Any) -> tuple:
    require_data_dependent_shapes(x, "nonzero")
    return tuple(xp.nonzero(x))


ARGMAX = def_nograd(Op("argmax"))
ARGMIN = def_nograd(Op("argmin"))
COUNT_NONZERO = def_nograd(Op("count_nonzero"))
NONZERO = def_nograd(Op("nonzero", _nonzero_kernel, multi=True))
SEARCHSORTED = def_nograd(Op("searchsorted"))


def _raw(a: Any) -> Any:
    return a._data if isinstance(a, Variable) else a


def argmax(x, /, *, axis=None, keepdims=False):
    return apply(ARGMAX, (x,), {"axis": axis, "keepdims": keepdims})


def argmin(x, /, *, axis=None, keepdims=False):
    return apply(ARGMIN, (x,), {"axis": axis, "keepdims": keepdims})


def count_nonzero(x, /, *, axis=None, keepdims=False):
    return apply(COUNT_NONZERO, (x,), {"axis": tuple(axis) if isinstance(axis, list) else axis, "keepdims": keepdims})


def nonzero(x, /):
    return apply(NONZERO, (x,))


def searchsorted(x1, x2, /, *, side="left", sorter=None):
    return apply(SEARCHSORTED, (x1, x2), {"side": side, "sorter": _raw(sorter)})

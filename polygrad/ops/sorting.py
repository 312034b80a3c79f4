"""Sorting functions: kernels and vjp rules.

sort's gradient goes back to the original positions (through argsort, with the
same ``descending``/``stable`` options, so tied elements each get the gradient of
the position they were sorted to); argsort gives no gradient.
"""

from __future__ import annotations

from typing import Any

from polygrad.core.op import Op, def_nograd, defvjp
from polygrad.core.primitive import apply
from polygrad.ops._export import names, public
from polygrad.ops.manipulation import axis_param


def _sort_vjp(o: Any, g: Any, ans: Any, x: Any, axis: int = -1, descending: bool = False, stable: bool = True) -> Any:
    """g gathered by the inverse permutation: gx[order[k]] = g[k]."""
    order = o.argsort(x, axis=axis, descending=descending, stable=stable)
    return o.take_along_axis(g, o.argsort(order, axis=axis), axis=axis)


SORT = defvjp(Op("sort"),
              _sort_vjp, saves="x")


@public
def sort(x, /, *, axis=-1, descending=False, stable=True):
    return apply(SORT, (x,), {"axis": axis_param(x, axis, "sort", single=True), "descending": descending,
                              "stable": stable})


ARGSORT = def_nograd(Op("argsort"))


@public
def argsort(x, /, *, axis=-1, descending=False, stable=True):
    return apply(ARGSORT, (x,), {"axis": axis_param(x, axis, "argsort", single=True), "descending": descending,
                                 "stable": stable})


__all__ = names(__name__)  # the public functions declared above

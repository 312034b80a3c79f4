"""Set functions: kernels and vjp rules.

The ``values`` of the unique_* functions are differentiable. Where several
elements of x are equal, a value is the same function of each of them (a
corner, like max over ties), and its gradient is shared equally among them:
``gx_i = g[inverse_i] / counts[inverse_i]``, so that moving all the equal
elements together moves the value by the same amount, and the gradients sum to
g as for max/min. With distinct elements this is the plain gradient (a
permutation). Indices, inverses, counts and isin give no gradient. NaNs, each a
value of its own for the standard, all take the gradient of the first NaN value
in unique_values and unique_counts (their rules find each element's value by a
sorted search). The shapes
depend on the data: on a backend that cannot represent that
(``BackendInfo.data_dependent_shapes`` False) they raise an error naming the op.
"""

from __future__ import annotations

from typing import Any

from polygrad.core.dispatch import SCALARS, backend_of_type
from polygrad.core.op import Op, def_nograd, defvjp
from polygrad.core.primitive import apply
from polygrad.ops._export import names, public, unary
from polygrad.ops.manipulation import require_data_dependent_shapes


def _unique(name: str) -> Any:
    def kernel(xp: Any, x: Any) -> Any:
        require_data_dependent_shapes(x, name)
        return getattr(xp, name)(x)

    kernel.__name__ = f"_{name}_kernel"
    return kernel


def _spread(o: Any, g: Any, shape: tuple, inverse: Any, counts: Any = None) -> Any:
    """``gx_i = g[inverse_i] / counts[inverse_i]``, shaped ``shape`` (counts found from
    ``inverse`` by a scatter-add where the function gave none)."""
    inverse = o.reshape(inverse, (-1,))
    per_element = o.take(g, inverse, axis=0)
    if counts is None:
        counts = o.take_grad(o.ones_like(per_element), inverse, 0, tuple(g.shape))
    else:
        counts = o.astype(counts, g.dtype)
    return o.reshape(per_element / o.take(counts, inverse, axis=0), tuple(shape))


def _inverse(o: Any, x: Any, values: Any) -> Any:
    """Where each element of ``x`` is among ``values`` (in whatever order the backend gave
    them): ``values`` sorted, then searched. Complex values, which the standard does not
    sort, take ``unique_inverse``'s."""
    data = x._data if hasattr(x, "_data") else x
    if backend_of_type(type(data)).xp.isdtype(x.dtype, "complex floating"):
        return o.unique_inverse(x)[1]
    order = o.argsort(values)
    return o.take(order, o.searchsorted(o.take(values, order, axis=0), o.reshape(x, (-1,))), axis=0)


def _values_vjp(o: Any, g: Any, ans: Any, x: Any) -> Any:
    return _spread(o, g, x.shape, _inverse(o, x, ans))


def _counts_vjp(o: Any, g: tuple, ans: Any, x: Any) -> Any:
    return None if g[0] is None else _spread(o, g[0], x.shape, _inverse(o, x, ans[0]), ans[1])


def _inverse_vjp(o: Any, g: tuple, ans: Any, x: Any) -> Any:
    return None if g[0] is None else _spread(o, g[0], x.shape, ans[1])


def _all_vjp(o: Any, g: tuple, ans: Any, x: Any) -> Any:
    return None if g[0] is None else _spread(o, g[0], x.shape, ans[2], ans[3])


def _isin_kernel(xp: Any, x1: Any, x2: Any, invert: bool = False) -> Any:
    """The namespace's ``isin`` (standard 2025.12), or the same written with 2024.12's functions
    (one comparison of each element with each of ``x2``: an array of ``x1``'s size times
    ``x2``'s) for a namespace without it, or whose ``isin`` refuses to run at the version it
    is set to (array_api_strict at 2024.12 raises a RuntimeError)."""
    own = getattr(xp, "isin", None)
    if own is not None:
        try:
            return own(x1, x2, invert=invert)
        except RuntimeError as exc:
            if "API version" not in str(exc):  # (any other failure is the library's to report)
                raise
    if type(x2) in SCALARS:
        hit = x1 == x2
    else:
        hit = xp.any(xp.expand_dims(x1, axis=-1) == xp.reshape(x2, (-1,)), axis=-1)
    return xp.logical_not(hit) if invert else hit


ISIN = def_nograd(Op("isin", _isin_kernel))


@public
def isin(x1, x2, /, *, invert=False):
    return apply(ISIN, (x1, x2), {"invert": invert})


# Each rule reads only its own function's outputs (and x): no backend needs unique_all for
# the gradient of another (array_api_compat's torch has none).
UNIQUE_VALUES = defvjp(Op("unique_values", _unique("unique_values"), value_shapes=True), _values_vjp, saves="x ans")
unique_values = unary(UNIQUE_VALUES)
UNIQUE_ALL = defvjp(Op("unique_all", _unique("unique_all"), multi=True, value_shapes=True, shapes=True), _all_vjp,
                    saves="ans")
unique_all = unary(UNIQUE_ALL)
UNIQUE_COUNTS = defvjp(Op("unique_counts", _unique("unique_counts"), multi=True, value_shapes=True), _counts_vjp,
                       saves="x ans")
unique_counts = unary(UNIQUE_COUNTS)
UNIQUE_INVERSE = defvjp(Op("unique_inverse", _unique("unique_inverse"), multi=True, value_shapes=True, shapes=True),
                        _inverse_vjp, saves="ans")
unique_inverse = unary(UNIQUE_INVERSE)


__all__ = names(__name__)  # the public functions declared above

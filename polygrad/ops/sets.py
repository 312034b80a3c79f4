"""Set functions: kernels and vjp rules.

The ``values`` of the unique_* functions are differentiable. Where several
elements of x are equal, a value is the same function of each of them (a
corner, like max over ties), and its gradient is shared equally among them:
``gx_i = g[inverse_i] / counts[inverse_i]``, so that moving all the equal
elements together moves the value by the same amount, and the gradients sum to
g as for max/min. With distinct elements this is the plain gradient (a
permutation). Indices, inverses, counts and isin give no gradient. The shapes
depend on the data: on a backend that cannot represent that
(``BackendInfo.data_dependent_shapes`` False) they raise an error naming the op.
"""

from __future__ import annotations

from typing import Any

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


def _shared_values_vjp(o: Any, g: Any, x: Any) -> Any:
    """Each element gets its value's gradient divided by how many elements share it."""
    _, _, inverse, counts = o.unique_all(x)
    per_element = o.take(g / o.astype(counts, g.dtype), o.reshape(inverse, (-1,)), axis=0)
    return o.reshape(per_element, tuple(x.shape))


def _values_vjp(o: Any, g: Any, ans: Any, x: Any) -> Any:
    return _shared_values_vjp(o, g, x)


def _first_output_vjp(o: Any, g: tuple, ans: Any, x: Any) -> Any:
    return None if g[0] is None else _shared_values_vjp(o, g[0], x)


ISIN = def_nograd(Op("isin"))


@public
def isin(x1, x2, /, *, invert=False):
    return apply(ISIN, (x1, x2), {"invert": invert})


UNIQUE_VALUES = defvjp(Op("unique_values", _unique("unique_values")), _values_vjp, saves="x")
unique_values = unary(UNIQUE_VALUES)
UNIQUE_ALL = defvjp(Op("unique_all", _unique("unique_all"), multi=True), _first_output_vjp, saves="x")
unique_all = unary(UNIQUE_ALL)
UNIQUE_COUNTS = defvjp(Op("unique_counts", _unique("unique_counts"), multi=True), _first_output_vjp, saves="x")
unique_counts = unary(UNIQUE_COUNTS)
UNIQUE_INVERSE = defvjp(Op("unique_inverse", _unique("unique_inverse"), multi=True), _first_output_vjp, saves="x")
unique_inverse = unary(UNIQUE_INVERSE)


__all__ = names(__name__)  # the public functions declared above

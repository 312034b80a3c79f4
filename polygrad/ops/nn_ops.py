"""Rows for neural-network primitives that are worth a kernel of their own.

``linear`` is one row rather than ``matmul(x, W.T) + b``: backward then makes
``W``'s gradient directly in W's own layout (``g.T @ x``), not as a transposed
view, and the graph has one node instead of three.
"""

from __future__ import annotations

from typing import Any

from polygrad.core.op import Op, defvjp
from polygrad.core.primitive import apply

__all__ = ["linear_op"]


def _linear_kernel(xp: Any, x: Any, W: Any, b: Any = None) -> Any:
    y = xp.matmul(x, xp.matrix_transpose(W))
    return y if b is None else y + b


LINEAR = defvjp(
    Op("linear", _linear_kernel, shapes=True),
    lambda o, g, ans, x, W, b=None: o.matmul(g, W),
    lambda o, g, ans, x, W, b=None: o.matmul(o.matrix_transpose(g), x),
    lambda o, g, ans, x, W, b=None: o.sum(g, axis=0),
    saves="xy",
)


def linear_op(x: Any, W: Any, b: Any = None) -> Any:
    """``x @ W.T + b`` for x of shape (N, in), W (out, in), b (out,)."""
    return apply(LINEAR, (x, W) if b is None else (x, W, b))

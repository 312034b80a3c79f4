"""Linear algebra: matmul and its vjp rules (batch broadcasting undone by the engine)."""

from __future__ import annotations

from typing import Any

from polygrad.ops.primitive import Op, apply, defvjp

__all__ = ['matmul']


def _matmul_vjp_x(o: Any, g: Any, ans: Any, a: Any, b: Any) -> Any:
    if a.ndim == 1 and b.ndim == 1:
        return g * b
    if b.ndim == 1:  # (..., n, k) @ (k,) -> (..., n)
        return o.expand_dims(g, axis=-1) * b
    if a.ndim == 1:  # (k,) @ (..., k, m) -> (..., m)
        return o.squeeze(o.matmul(b, o.expand_dims(g, axis=-1)), axis=-1)
    return o.matmul(g, o.matrix_transpose(b))


def _matmul_vjp_y(o: Any, g: Any, ans: Any, a: Any, b: Any) -> Any:
    if a.ndim == 1 and b.ndim == 1:
        return g * a
    if a.ndim == 1:  # (k,) @ (..., k, m) -> (..., m)
        return o.expand_dims(a, axis=-1) * o.expand_dims(g, axis=-2)
    if b.ndim == 1:  # (..., n, k) @ (k,) -> (..., n)
        return o.squeeze(o.matmul(o.matrix_transpose(a), o.expand_dims(g, axis=-1)), axis=-1)
    return o.matmul(o.matrix_transpose(a), g)


MATMUL = defvjp(Op("matmul", lambda xp, x, y: xp.matmul(x, y), broadcasts=True), _matmul_vjp_x, _matmul_vjp_y, saves="xy")


def matmul(x1, x2, /):
    return apply(MATMUL, (x1, x2))

"""Dropout, with the backend's random numbers (``pg.seed`` makes it repeatable)."""

from __future__ import annotations

from typing import Any

from polygrad.core import config
from polygrad.core.dispatch import backend_of_type
from polygrad.core.variable import Variable
from polygrad.core.op import Op, def_nograd
from polygrad.core.primitive import apply

__all__ = ["dropout"]


def _dropout_mask_kernel(xp: Any, x: Any, ratio: float = 0.5) -> Any:
    """``1 / (1 - ratio)`` where a uniform draw is at least ``ratio``, else 0, in x's shape and dtype.

    Drawn inside an op, so a compiled function draws a new mask at every call.
    """
    u = backend_of_type(type(x)).rng().uniform(tuple(x.shape), dtype=x.dtype, low=0.0, high=1.0)
    return xp.astype(u >= ratio, x.dtype) * (1.0 / (1.0 - ratio))


DROPOUT_MASK = def_nograd(Op("dropout_mask", _dropout_mask_kernel, deterministic=False))


def dropout(x, ratio=0.5):
    """Zero each element of ``x`` with probability ``ratio`` and scale the rest by
    ``1 / (1 - ratio)``, in train mode; in test mode (``pg.test_mode()``) return
    ``x`` unchanged. The mask comes from the backend's shared random generator."""
    if not 0.0 <= ratio < 1.0:
        raise ValueError(f"polygrad.functions.dropout: ratio must be in [0, 1), got {ratio!r}")
    if not config.train.get():
        return x if isinstance(x, Variable) else Variable(x, requires_grad=False)
    if not isinstance(x, Variable):
        x = Variable(x, requires_grad=False)
    return x * apply(DROPOUT_MASK, (x,), {"ratio": float(ratio)})

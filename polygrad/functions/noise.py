"""Dropout, with the backend's random numbers (``pg.seed`` makes it repeatable)."""

from __future__ import annotations

from polygrad.core import config
from polygrad.core.variable import Variable
from polygrad.functions.nn import hyperparameter
from polygrad.ops.nn import dropout_mask

__all__ = ["dropout"]


def dropout(x, ratio=0.5):
    """Zero each element of ``x`` with probability ``ratio`` and scale the rest by
    ``1 / (1 - ratio)``, in train mode; in test mode (``pg.test_mode()``) return
    ``x`` unchanged. The mask comes from the backend's shared random generator,
    drawn inside an op (``polygrad.ops.nn.dropout_mask``), so a compiled function
    draws a new mask at every call."""
    ratio = hyperparameter("dropout", "ratio", ratio)
    if not 0.0 <= ratio < 1.0:
        raise ValueError(f"polygrad.functions.dropout: ratio must be in [0, 1), got {ratio!r}")
    if not config.train.get():
        return x if isinstance(x, Variable) else Variable(x, requires_grad=False)
    if not isinstance(x, Variable):
        x = Variable(x, requires_grad=False)
    return x * dropout_mask(x, ratio)

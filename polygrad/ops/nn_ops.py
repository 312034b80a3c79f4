"""Former home of the ``linear`` row, now in :mod:`polygrad.ops.nn` (kept so that
``from polygrad.ops.nn_ops import linear_op`` keeps working)."""

from polygrad.ops.nn import LINEAR, linear_op

__all__ = ["LINEAR", "linear_op"]

"""What counts as an integer argument (a size, a count, an index, a seed): one rule for every
place that takes one."""

from __future__ import annotations

import operator
from typing import Any


def as_int(value: Any) -> int | None:
    """``value`` as a Python int where it is an integer, else None.

    An integer is anything with ``__index__`` (NumPy's integers too), never a bool (``True`` is
    not the count 1) and never a float (2.7 is not truncated to 2, nor 2.0 taken for 2).
    """
    if isinstance(value, bool):
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None

"""Helpers of debug mode that the engine itself uses (``polygrad.function_hooks.debug``
holds the hook and the switches)."""

from __future__ import annotations

import os
import traceback
from typing import Any

from polygrad.core.namespace import backend_of_type

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def user_site() -> str:
    """``file:line in function`` of the innermost frame outside polygrad."""
    for frame in reversed(traceback.extract_stack()[:-1]):
        if not os.path.abspath(frame.filename).startswith(_PACKAGE):
            return f"{frame.filename}:{frame.lineno} in {frame.name}"
    return "<unknown>"


def check_finite(values: Any, what: str, function: Any) -> None:
    """Raise FloatingPointError if any array in ``values`` has NaN or Inf."""
    for k, a in enumerate(values):
        if a is None or not hasattr(a, "dtype"):
            continue
        a = getattr(a, "_data", a)
        xp = backend_of_type(type(a)).xp
        if not xp.isdtype(a.dtype, ("real floating", "complex floating")):
            continue
        if not bool(xp.all(xp.isfinite(a))):
            site = getattr(function, "__dict__", {}).get("created_at", "<unknown>")
            raise FloatingPointError(
                f"polygrad debug: {what} {k} of {function.label} contains NaN or Inf; {function.label} was called "
                f"at {site}"
            )

"""Debug mode, all of it: NaN/Inf checks of every forward and backward result,
and the user's call sites in error messages.

``pg.set_debug(True)`` (or ``with pg.debug_mode():``) registers a hook that
remembers where each function was called in user code and raises
``FloatingPointError`` naming the function and that place when an output is
not finite. Backward results and what gradient hooks return are checked by the
engine while debug is on, and a compiled function checks each row of its
program (:class:`polygrad.compile.program.Program`). An
in-place version error then also says where the saving function and the
in-place operation were called. Checks read values, so they force lazy
arrays: use debug mode on small eager runs.
"""

from __future__ import annotations

import contextlib
import os
import traceback
from typing import Any, Iterator

from polygrad.core import config
from polygrad.core import hooks as _hooks
from polygrad.core.dispatch import backend_of_type, has_namespace
from polygrad.core.hooks import FunctionHook

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # (not polygrad_examples/)


def user_site() -> str:
    """``file:line in function`` of the innermost frame outside polygrad."""
    for frame in reversed(traceback.extract_stack()[:-1]):
        if not os.path.abspath(frame.filename).startswith(_PACKAGE):
            return f"{frame.filename}:{frame.lineno} in {frame.name}"
    return "<unknown>"


def is_finite(a: Any) -> bool:
    """False where ``a`` (an array or Variable) is floating and holds NaN or Inf."""
    if a is None or not hasattr(a, "dtype"):
        return True
    a = getattr(a, "_data", a)
    if not has_namespace(a):
        return True  # a symbolic array (pg.function's trace): its values exist when the program runs
    xp = backend_of_type(type(a)).xp
    return not xp.isdtype(a.dtype, ("real floating", "complex floating")) or bool(xp.all(xp.isfinite(a)))


def check_finite(values: Any, what: str, function: Any) -> None:
    """Raise FloatingPointError if any array in ``values`` has NaN or Inf."""
    for k, a in enumerate(values):
        if not is_finite(a):
            site = getattr(function, "site", None) or "<unknown>"
            raise FloatingPointError(
                f"polygrad debug: {what} {k} of {function.label} contains NaN or Inf; {function.label} was called "
                f"at {site}"
            )


class DebugHook(FunctionHook):
    """Records call sites and checks forward outputs (see the module docstring)."""

    name = "polygrad-debug"

    def forward_preprocess(self, function: Any, in_data: tuple) -> None:
        function.site = user_site()

    def forward_postprocess(self, function: Any, in_data: tuple) -> None:
        outs = [r() for r in getattr(function, "outputs", ())]
        check_finite([o for o in outs if o is not None], "output", function)


_HOOK = DebugHook()


def set_debug(on: bool) -> None:
    """Turn debug mode on or off for the current thread (and tasks it starts)."""
    config.debug.set(bool(on))
    _hooks.remove_global(_HOOK)
    if on:
        _hooks.push_global(_HOOK)


def is_debug() -> bool:
    return config.debug.get()


@contextlib.contextmanager
def debug_mode(on: bool = True) -> Iterator[None]:
    """Debug mode inside a ``with`` block."""
    token_d = config.debug.set(bool(on))
    token_h = _hooks.remove_global(_HOOK)
    if on:
        _hooks.push_global(_HOOK)
    try:
        yield
    finally:
        _hooks.restore(token_h)
        config.debug.reset(token_d)

"""Debug mode: every forward and backward output is checked for NaN and Inf.

``pg.set_debug(True)`` (or ``with pg.debug_mode():``) registers a hook that
remembers where each function was called in user code and raises
``FloatingPointError`` naming the function and that place when an output is
not finite. Backward results are checked by the engine while debug is on. An
in-place version error then also says where the saving function and the
in-place operation were called. Checks read values, so they force lazy
arrays: use debug mode on small eager runs.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

from polygrad.core import config
from polygrad.core import hooks as _hooks
from polygrad.core.hooks import FunctionHook
from polygrad.core.debug import check_finite, user_site  # noqa: F401  (re-exported)


class DebugHook(FunctionHook):
    """Records call sites and checks forward outputs (see the module docstring)."""

    name = "polygrad-debug"

    def forward_preprocess(self, function: Any, in_data: tuple) -> None:
        function.__dict__["created_at"] = user_site()

    def forward_postprocess(self, function: Any, in_data: tuple) -> None:
        outs = [r() for r in getattr(function, "outputs", ())]
        check_finite([o for o in outs if o is not None], "output", function)


_HOOK = DebugHook()


def set_debug(on: bool) -> None:
    """Turn debug mode on or off for the current thread (and tasks it starts)."""
    config.debug.set(bool(on))
    active = tuple(h for h in _hooks._active.get() if h is not _HOOK)
    _hooks._active.set(active + (_HOOK,) if on else active)


def is_debug() -> bool:
    return config.debug.get()


@contextlib.contextmanager
def debug_mode(on: bool = True) -> Iterator[None]:
    """Debug mode inside a ``with`` block."""
    token_d = config.debug.set(bool(on))
    active = tuple(h for h in _hooks._active.get() if h is not _HOOK)
    token_h = _hooks._active.set(active + (_HOOK,) if on else active)
    try:
        yield
    finally:
        _hooks._active.reset(token_h)
        config.debug.reset(token_d)

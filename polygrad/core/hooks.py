"""FunctionHook: callbacks around every forward and backward step of a function.

Two ways to register (as in Chainer):

* ``with hook:`` registers it for every function applied or backpropagated in
  the block, in this thread or task only;
* ``function.add_hook(hook)`` registers it on one function node.

Each ``*_preprocess`` / ``*_postprocess`` pair brackets exactly one forward or
one backward step. With no hook registered, the per-op path checks one empty
tuple and pays nothing more.
"""

from __future__ import annotations

import contextvars
from typing import Any

# The active global hooks, innermost last. A tuple: registration makes a new one.
_active: contextvars.ContextVar[tuple["FunctionHook", ...]] = contextvars.ContextVar("polygrad_hooks", default=())


def with_local(hooks: tuple, local: Any) -> tuple:
    """The hooks of one node: the active ones, with the node's own (``add_hook``, by name)
    replacing an active one of the same name, then the rest of its own, as Chainer merges them
    (a hook both active and on the node ran twice per step)."""
    if not local:
        return hooks
    names = {h.name for h in hooks}
    return tuple(local.get(h.name, h) for h in hooks) + tuple(h for n, h in local.items() if n not in names)


class FunctionHook:
    """Base class of function hooks: override the phases you need.

    Its name is its ``name`` attribute: the class's, or one set on the instance (two hooks of a
    class active at once need names of their own), as in Chainer.

    >>> import polygrad as pg
    >>> class Count(pg.FunctionHook):
    ...     name = "count"
    ...     def __init__(self): self.n = 0
    ...     def forward_preprocess(self, function, in_data): self.n += 1
    """

    name = "FunctionHook"

    def __enter__(self) -> "FunctionHook":
        current = _active.get()
        if any(h.name == self.name for h in current):
            raise KeyError(f"polygrad: a function hook named {self.name!r} is already registered in this context")
        token = _active.set(current + (self,))
        try:
            self.added(None)
        except BaseException:  # not entered: __exit__ will not run, so the hook must not stay
            _active.reset(token)
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        current = _active.get()
        for i in range(len(current) - 1, -1, -1):  # the innermost registration of this hook
            if current[i] is self:
                _active.set(current[:i] + current[i + 1 :])
                break
        else:  # (Chainer raises a KeyError here too) the hook stays active where it was entered
            raise RuntimeError(f"polygrad: the function hook {self.name!r} is not active here: hooks are "
                               f"registered per thread (and context), and a `with hook:` block must be left in "
                               f"the thread that entered it")
        self.deleted(None)

    # Called when the hook is registered (function is None for `with hook:`).
    def added(self, function: Any = None) -> None:
        pass

    def deleted(self, function: Any = None) -> None:
        pass

    def forward_preprocess(self, function: Any, in_data: tuple) -> None:
        """Called before ``function``'s forward computation."""

    def forward_postprocess(self, function: Any, in_data: tuple) -> None:
        """Called after ``function``'s forward computation."""

    def backward_preprocess(self, function: Any, in_data: tuple, out_grad: tuple) -> None:
        """Called before ``function``'s backward computation.

        ``in_data`` holds the input arrays the function kept (None for released
        ones); ``out_grad`` the gradients of its outputs.
        """

    def backward_postprocess(self, function: Any, in_data: tuple, out_grad: tuple) -> None:
        """Called after ``function``'s backward computation."""


def push_global(hook: FunctionHook) -> None:
    """Register ``hook`` for every function in this thread or task (innermost), without a ``with`` block."""
    _active.set(_active.get() + (hook,))


def remove_global(hook: FunctionHook) -> Any:
    """Unregister every registration of ``hook`` in this thread or task; returns a token for :func:`restore`."""
    return _active.set(tuple(h for h in _active.get() if h is not hook))


def only(hooks: tuple) -> Any:
    """Make ``hooks`` the only registrations in this thread or task (a compiled function's trace:
    the user's hooks see none of it); returns a token for :func:`restore`."""
    return _active.set(tuple(hooks))


def restore(token: Any) -> None:
    """Put back the registrations as they were before the call that gave ``token``."""
    _active.reset(token)


def active_hooks() -> tuple[FunctionHook, ...]:
    """The hooks registered by ``with hook:`` in the current thread or task."""
    return _active.get()

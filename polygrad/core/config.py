"""Modes: whether graphs are built, and debug checks.

The flags are ``contextvars``, so a mode set in one thread or asyncio task is
never seen by another (a new thread starts in the defaults).
"""

from __future__ import annotations

import contextlib
import contextvars
from typing import Iterator

enable_backprop: contextvars.ContextVar[bool] = contextvars.ContextVar("polygrad_enable_backprop", default=True)
debug: contextvars.ContextVar[bool] = contextvars.ContextVar("polygrad_debug", default=False)


@contextlib.contextmanager
def no_backprop_mode() -> Iterator[None]:
    """Inside this block no computational graph is built.

    Variables created here have no creator, so ``backward`` cannot reach
    through them; memory for saved arrays is never taken.
    """
    token = enable_backprop.set(False)
    try:
        yield
    finally:
        enable_backprop.reset(token)


@contextlib.contextmanager
def force_backprop_mode() -> Iterator[None]:
    """Build graphs again inside a ``no_backprop_mode`` block (no effect outside one)."""
    token = enable_backprop.set(True)
    try:
        yield
    finally:
        enable_backprop.reset(token)


def is_backprop_enabled() -> bool:
    return enable_backprop.get()

train: contextvars.ContextVar[bool] = contextvars.ContextVar("polygrad_train", default=True)

#: What an in-place operation does to an array that a node saved for backward:
#: "check" writes it (backward then refuses, as PyTorch), "copy" leaves it to the node.
inplace_policy: contextvars.ContextVar[str] = contextvars.ContextVar("polygrad_inplace_policy", default="check")
_POLICIES = ("check", "copy")


class _Setting:
    """Returned by a setter that acts at once and, used in a ``with`` block, undoes itself at its end."""

    def __init__(self, var: contextvars.ContextVar, token: contextvars.Token) -> None:
        self._var, self._token = var, token

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        self._var.reset(self._token)


def set_inplace_policy(policy: str) -> _Setting:
    """How in-place operations treat arrays that backward needs, in this thread or task:

    * ``"check"`` (the default): the write goes into the array, so everything holding
      it sees the change, and a backward that needs the old values raises (PyTorch's
      check, the seeds' documented error);
    * ``"copy"``: the variable gets the new values as a new array; the old one stays
      as it was for the nodes that saved it, so backward is right without a copy.
      Arrays reached around polygrad (``x.data`` taken before the write, a raw array
      passed to ``Variable``) then keep the old values.

    Takes effect at once; as ``with pg.inplace_policy("copy"):`` only inside the block.
    """
    if policy not in _POLICIES:
        raise ValueError(f"polygrad: the in-place policy is one of {_POLICIES}, not {policy!r}")
    return _Setting(inplace_policy, inplace_policy.set(policy))

_FLAGS = {"enable_backprop": enable_backprop, "train": train, "debug": debug}


@contextlib.contextmanager
def using_config(name: str, value: bool) -> Iterator[None]:
    """Set a configuration flag for a ``with`` block (thread- and task-local), as
    Chainer's ``using_config``: ``'train'`` (False: test mode, e.g. dropout off),
    ``'enable_backprop'``, ``'debug'``."""
    try:
        var = _FLAGS[name]
    except KeyError:
        raise ValueError(f"polygrad.using_config: unknown flag {name!r}; known: {', '.join(sorted(_FLAGS))}") from None
    if var is debug:  # debug mode is the flag and its hook (forward checks, call sites): one switch
        from polygrad.core.debug import debug_mode

        with debug_mode(bool(value)):
            yield
        return
    token = var.set(value)
    try:
        yield
    finally:
        var.reset(token)


def test_mode() -> "contextlib.AbstractContextManager[None]":
    """Inside this block functions behave as at test time (``train`` is False)."""
    return using_config("train", False)


test_mode.__test__ = False  # not a pytest test

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
    token = var.set(value)
    try:
        yield
    finally:
        var.reset(token)


def test_mode() -> "contextlib.AbstractContextManager[None]":
    """Inside this block functions behave as at test time (``train`` is False)."""
    return using_config("train", False)


test_mode.__test__ = False  # not a pytest test

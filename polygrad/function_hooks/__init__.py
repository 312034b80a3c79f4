"""Concrete function hooks."""

from polygrad.function_hooks.debug_print import PrintHook
from polygrad.function_hooks.memory import MemoryHook
from polygrad.function_hooks.timer import TimerHook

__all__ = ["MemoryHook", "PrintHook", "TimerHook"]

"""Searching functions (argmax, argmin, nonzero, searchsorted, count_nonzero): kernels and vjp rules."""

from __future__ import annotations

__all__: list[str] = []

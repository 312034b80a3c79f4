"""Indexing functions (take, take_along_axis): kernels and vjp rules."""

from __future__ import annotations

__all__: list[str] = []

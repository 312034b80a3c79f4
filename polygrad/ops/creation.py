"""Array creation functions (arange, asarray, zeros, ones, full, eye, linspace, meshgrid, tril, triu, ...): kernels and vjp rules."""

from __future__ import annotations

__all__: list[str] = []

"""Set functions (unique_all, unique_counts, unique_inverse, unique_values, isin): kernels and vjp rules."""

from __future__ import annotations

__all__: list[str] = []

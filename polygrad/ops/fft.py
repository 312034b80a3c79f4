"""The fft extension: kernels and vjp rules."""

from __future__ import annotations

__all__: list[str] = []

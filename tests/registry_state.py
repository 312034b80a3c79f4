"""The ``registry_state`` fixture, shared by the test files that register plugins by hand."""

from __future__ import annotations

import pytest

import polygrad._registry as R
import polygrad.backends as B
from polygrad.core import dispatch


@pytest.fixture
def registry_state(monkeypatch):
    """Run on a fresh plugin manager and registry; restore the real ones (and the default) afterwards."""
    monkeypatch.setattr(R, "_pm", None)
    monkeypatch.setattr(R, "_registry", None)
    monkeypatch.setattr(B, "_default_name", B._default_name)
    extra = list(R._extra_plugins)
    dispatch.clear_cache()
    yield
    monkeypatch.undo()
    R._extra_plugins[:] = extra
    dispatch.clear_cache()

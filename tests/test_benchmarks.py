"""The benchmarks' shared helpers and the peers script, on the small workloads (the timings
themselves are ./dev bench's business)."""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))

import _common  # noqa: E402


def test_a_row_without_target_is_reported_only():
    """result(..., target=None) is an 'info' row: printed, never a miss."""
    row = _common.result("x", "peak memory", 100, 150, None, unit="B")
    assert row["status"] == "info" and row["ratio"] == 1.5


def test_headers_name_the_blas_threads(monkeypatch):
    """Every benchmark header says how OPENBLAS_NUM_THREADS is set."""
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")
    assert "OPENBLAS_NUM_THREADS=1" in _common.thread_settings()
    monkeypatch.delenv("OPENBLAS_NUM_THREADS")
    assert "OPENBLAS_NUM_THREADS unset" in _common.thread_settings()


def test_peak_memory_counts_numpy_buffers():
    """measure_peak sees an 8 MB array made by the step."""
    np = pytest.importorskip("numpy")
    m = _common.measure_peak(lambda: np.ones(1_000_000))
    assert m["peak_extra"] >= 8_000_000


def test_peers_chain_runs_polygrad_sides(capsys):
    """peers.py checks each side against numpy and times them interleaved (the chain workload)."""
    import peers

    best = peers.run("chain", {"polygrad eager": peers.polygrad_eager, "polygrad compiled": peers.polygrad_compiled},
                     quick=True)
    assert set(best) == {"numpy", "polygrad eager", "polygrad compiled"}
    assert all(t > 0 for t in best.values())
    assert "skipped" not in capsys.readouterr().out

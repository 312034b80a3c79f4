"""The conformance suite passes on every installed CPU backend: numpy, dask and
the out-of-tree strict example (known failures allowed, with their reasons).
Each run is a subprocess, exactly as `polygrad-conformance BACKEND`."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

import polygrad as pg

pytest.importorskip("polygrad_conformance")

BACKENDS = ["numpy", "dask", "strict"]


@pytest.fixture(scope="module")
def runs():
    """The three runs, started together (they are independent processes)."""
    rows = pg.backends()
    procs = {
        name: subprocess.Popen([sys.executable, "-m", "polygrad_conformance", name, "-q", "-p", "no:randomly"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for name in BACKENDS if name in rows and rows[name].usable
    }
    return {name: (p.communicate(timeout=600)[0], p.returncode) for name, p in procs.items()}


@pytest.mark.parametrize("backend", BACKENDS)
def test_conformance_suite_passes(runs, backend):
    """`polygrad-conformance BACKEND` exits 0: every test passes, is skipped for a declared
    capability, or is a known failure listed with its reason."""
    if backend not in runs:
        pytest.skip(f"backend {backend!r} is not installed or not usable here")
    out, code = runs[backend]
    assert code == 0, out[-6000:]
    summary = out.strip().splitlines()[-1]
    assert re.search(r"\d+ passed", summary) and not re.search(r"\d+ (failed|error)", summary), summary

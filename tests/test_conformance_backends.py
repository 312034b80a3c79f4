"""The conformance suite passes on every installed CPU backend: numpy, dask and
the out-of-tree strict example (known failures allowed, with their reasons),
on the strict example as polygrad 0.1 shipped it, and on the stand-in
immutable backend (tests/plugins/immutable_backend.py: no scatter-add hook, no
kernels, arrays that refuse writes). Each run is a subprocess, exactly as
`polygrad-conformance BACKEND`."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import polygrad as pg

pytest.importorskip("polygrad_conformance")

BACKENDS = ["numpy", "dask", "strict"]
# The strict example as polygrad 0.1 shipped it, registered by hand (tests/legacy_plugins/README.md).
LEGACY = ("strict_v0_1", "polygrad_strict_v0_1", Path(__file__).parent / "legacy_plugins")
# Test plugins registered by hand: (backend, plugin module, directory to put on sys.path).
BY_HAND = [LEGACY, ("immutable", "plugins.immutable_backend", Path(__file__).parent)]


def _start(name, *args, env=None):
    return subprocess.Popen([sys.executable, "-m", "polygrad_conformance", name, "-q", "-p", "no:randomly", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)


@pytest.fixture(scope="module")
def runs():
    """The runs, started together (they are independent processes)."""
    rows = pg.backends()
    procs = {name: _start(name) for name in BACKENDS if name in rows and rows[name].usable}
    for name, module, folder in BY_HAND:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(folder)] + [p for p in sys.path if p]))
        procs[name] = _start(name, "--polygrad-plugin", module, env=env)
    return {name: (p.communicate(timeout=600)[0], p.returncode) for name, p in procs.items()}


def _assert_conforms(out, code):
    assert code == 0, out[-6000:]
    summary = out.strip().splitlines()[-1]
    assert re.search(r"\d+ passed", summary) and not re.search(r"\d+ (failed|error)", summary), summary


@pytest.mark.parametrize("backend", BACKENDS)
def test_conformance_suite_passes(runs, backend):
    """`polygrad-conformance BACKEND` exits 0: every test passes, is skipped for a declared
    capability, or is a known failure listed with its reason."""
    if backend not in runs:
        pytest.skip(f"backend {backend!r} is not installed or not usable here")
    _assert_conforms(*runs[backend])


def test_plugin_written_for_0_1_passes_the_suite(runs):
    """The strict example as 0.1 shipped it (hooks guarded on `backend`, BackendInfo from polygrad.backends),
    registered by hand with --polygrad-plugin, passes the suite unchanged."""
    out, code = runs[LEGACY[0]]
    _assert_conforms(out, code)
    assert "[conformance-xfails.txt:" in out  # its known failures (the file beside it) were applied


def test_immutable_backend_passes_the_suite_without_scatter_add_or_kernels(runs):
    """The stand-in immutable backend (inplace=False, no scatter-add hook, no kernels) passes the whole
    suite with no known failure: polygrad never writes into its arrays (setitem and scatter-add build theirs)."""
    out, code = runs["immutable"]
    _assert_conforms(out, code)
    assert not re.search(r"\d+ xfailed", out)

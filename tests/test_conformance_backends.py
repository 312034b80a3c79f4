"""The conformance suite passes on every installed CPU backend: numpy, dask and
the out-of-tree strict example (known failures allowed, with their reasons),
on the strict example as polygrad 0.1 shipped it, on two stand-ins
(tests/plugins/immutable_backend.py: no scatter-add hook, no kernels, arrays
that refuse writes; tests/plugins/torchlike_backend: torch's array object, whose
``size`` is a method, with a float32 default dtype), and on jax through a plugin
written from the plugin guide alone (tests/plugins/jax_backend: immutable
arrays, 32-bit by default; skipped where jax is not installed). Each run is a
subprocess, exactly as `polygrad-conformance BACKEND`, all started together."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import polygrad as pg

pytest.importorskip("polygrad_conformance")

HERE = Path(__file__).parent
BACKENDS = ["numpy", "dask", "strict"]
# The strict example as polygrad 0.1 shipped it, registered by hand (tests/legacy_plugins/README.md).
LEGACY = ("strict_v0_1", "polygrad_strict_v0_1", HERE / "legacy_plugins")
# Test plugins registered by hand: (backend, plugin module, directory to put on sys.path).
BY_HAND = [LEGACY, ("immutable", "plugins.immutable_backend", HERE),
           ("torchlike", "plugins.torchlike_backend", HERE)]
JAX = ("jax", "plugins.jax_backend", HERE)
# jax's "Explicitly requested dtype int64 ... truncated to int32" warning as an error: polygrad
# asking a 32-bit jax for a dtype it does not declare fails the test (its known-failures file
# lists only jax's own gap: polygrad asks for no dtype the namespace lacks).
JAX_ENV = {"PYTHONWARNINGS": "error:Explicitly:UserWarning", "JAX_PLATFORMS": "cpu", "JAX_ENABLE_X64": "0"}
# The dask backend's in-depth cases its known-failures file lists (dask's linalg gaps, repeat,
# searchsorted) by their forward test, and the second derivative of prod over an empty axis
# (the plugin's getitem-grad with an empty selection): `polygrad-conformance dask --polygrad-depth`
# passes as a whole too, in three minutes.
DASK_DEPTH = ["--polygrad-depth", "-k", "test_forward and (linalg or repeat or searchsorted) or prod-empty_axis"]


def _start(name, *args, env=None):
    return subprocess.Popen([sys.executable, "-m", "polygrad_conformance", name, "-q", "-p", "no:randomly", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)


def _by_hand(name, module, folder, extra_env=None):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(folder)] + [p for p in sys.path if p]), **(extra_env or {}))
    return _start(name, "--polygrad-plugin", module, env=env)


@pytest.fixture(scope="module")
def runs():
    """The runs, started together (they are independent processes)."""
    rows = pg.backends()
    procs = {name: _start(name) for name in BACKENDS if name in rows and rows[name].usable}
    if "dask" in procs:
        procs["dask-depth"] = _start("dask", *DASK_DEPTH)
    for name, module, folder in BY_HAND:
        procs[name] = _by_hand(name, module, folder)
    if importlib.util.find_spec("jax") is not None:
        procs["jax"] = _by_hand(*JAX, extra_env=JAX_ENV)
    return {name: (p.communicate(timeout=900)[0], p.returncode) for name, p in procs.items()}


def _assert_conforms(out, code):
    assert code == 0, out[-6000:]
    summary = out.strip().splitlines()[-1]
    assert re.search(r"\d+ passed", summary) and not re.search(r"\d+ (failed|error)", summary), summary


def _xfailed_ids(out):
    return set(re.findall(r"^XFAIL (\S+)", out, re.M))


@pytest.mark.parametrize("backend", BACKENDS)
def test_conformance_suite_passes(runs, backend):
    """`polygrad-conformance BACKEND` exits 0: every test passes, is skipped for a declared
    capability, or is a known failure listed with its reason."""
    if backend not in runs:
        pytest.skip(f"backend {backend!r} is not installed or not usable here")
    _assert_conforms(*runs[backend])
    assert "backend %r conforms" % backend in runs[backend][0]  # the per-area summary's verdict


def test_dask_in_depth_cases_are_known_failures_or_pass(runs):
    """`polygrad-conformance dask --polygrad-depth`: the in-depth cases dask cannot run are listed
    with their reasons, and prod over an empty axis has its second derivative."""
    if "dask-depth" not in runs:
        pytest.skip("dask is not installed or not usable here")
    out, code = runs["dask-depth"]
    _assert_conforms(out, code)
    assert "test_ops.py::test_forward[linalg_eigh-batched]" in _xfailed_ids(out)


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


def test_torch_like_array_object_passes_with_torch_gaps_only(runs):
    """The torch stand-in (``x.size()`` a method, float32 default, mutable) passes the suite; its
    known failures are torch's own gaps (negative slice steps, no unique_all), nothing of polygrad's."""
    out, code = runs["torchlike"]
    _assert_conforms(out, code)
    xfailed = _xfailed_ids(out)
    assert xfailed and all("[getitem-reverse" in t or "[unique_all-" in t for t in xfailed), sorted(xfailed)


def test_jax_plugin_from_the_guide_passes(runs):
    """A jax plugin written from docs/plugins-and-conformance.md alone (no setitem, scatter-add or
    kernels) passes on jax's 32-bit mode with jax's genuine gap (no int64) as its only
    known failure: polygrad asks the namespace for no dtype it does not declare."""
    if "jax" not in runs:
        pytest.skip("jax is not installed (pip install 'jax[cpu]', a test extra)")
    out, code = runs["jax"]
    _assert_conforms(out, code)
    assert _xfailed_ids(out) == {"test_arrays.py::test_asarray_from_lists[int64]"}

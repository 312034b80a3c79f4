"""The conformance suite catches faults: copies of the numpy backend, each with
one planted fault and registered under a new name, FAIL it (run in
subprocesses, as a third party would run it); a faithful copy passes; a broken
plugin is one clear failure; known-failure files behave as documented."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("polygrad_conformance")

FAULTY = textwrap.dedent('''
    """Copies of the numpy backend under new names, each with one planted fault."""
    import numpy as np

    import polygrad_numpy as base
    from polygrad.hookspecs import BackendInfo, hookimpl


    def _last_write_wins(x, key, values):
        out = np.array(x, copy=True)
        out[key] += values  # repeated indices: one write survives, nothing is summed
        return out


    FAULTS = {
        "copy": {},
        "wrong_kernel": {"kernels": {"exp": lambda x: np.exp(x) * (1 + 1e-3)}},
        "wrong_dtype": {"kernels": {"tanh": lambda x: np.tanh(x).astype(np.float32)}},
        "broken_scatter_add": {"scatter_add": _last_write_wins},
        "dropped_gradient": {"kernels": {"getitem_grad": lambda g, key, shape: np.zeros(shape, dtype=g.dtype)}},
    }


    class NumpyCopy:
        """One backend, numpy_<fault>: its hooks are asked about that backend only."""

        def __init__(self, fault):
            self.name, self.fault = "numpy_" + fault, FAULTS[fault]

        @hookimpl
        def polygrad_backend_info(self):
            return BackendInfo(name=self.name, module="numpy", device="cpu", priority=-100)

        @hookimpl
        def polygrad_check_usable(self):
            return (True, "")

        @hookimpl
        def polygrad_array_namespace(self):
            return base.polygrad_array_namespace()

        @hookimpl
        def polygrad_array_types(self):
            return base.polygrad_array_types()

        @hookimpl
        def polygrad_random_generator(self, seed):
            return base.polygrad_random_generator(seed=seed)

        @hookimpl
        def polygrad_scatter_add(self):
            return self.fault.get("scatter_add", base._scatter_add)

        @hookimpl
        def polygrad_kernels(self):
            return {**base.polygrad_kernels(), **self.fault.get("kernels", {})}


    COPY = NumpyCopy("copy")
    WRONG_KERNEL = NumpyCopy("wrong_kernel")
    WRONG_DTYPE = NumpyCopy("wrong_dtype")
    BROKEN_SCATTER_ADD = NumpyCopy("broken_scatter_add")
    DROPPED_GRADIENT = NumpyCopy("dropped_gradient")
''')

# fault -> (plugin object, test ids that must be among the failures)
EXPECTED = {
    "copy": ("COPY", []),
    "wrong_kernel": ("WRONG_KERNEL", ["test_ops.py::test_forward[exp-2d]", "test_ops.py::test_kernel_paths[exp-2d]"]),
    "wrong_dtype": ("WRONG_DTYPE", ["test_ops.py::test_forward[tanh-2d]", "test_ops.py::test_kernel_paths[tanh-2d]"]),
    "broken_scatter_add": ("BROKEN_SCATTER_ADD", [
        "test_indexing.py::test_scatter_add_sums_repeated_indices[two_arrays]",
        "test_indexing.py::test_getitem_backward_counts_repeats",
        "test_ops.py::test_grad[getitem-two_arrays_repeated]",
    ]),
    "dropped_gradient": ("DROPPED_GRADIENT", [
        "test_ops.py::test_grad[getitem-int]",
        "test_ops.py::test_grad[getitem-two_arrays_repeated]",
        "test_ops.py::test_grad2[getitem-slice]",
    ]),
}


def _env(tmp):
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp)] + [p for p in sys.path if p]))


def _start(args, env):
    return subprocess.Popen([sys.executable, "-m", "polygrad_conformance", *args, "-q", "-p", "no:randomly"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)


def _finish(proc):
    out, _ = proc.communicate(timeout=600)
    failed = {re.sub(r"^.*?polygrad_conformance/", "", m) for m in re.findall(r"^FAILED (\S+)", out, re.M)}
    return proc.returncode, failed, out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Run the suite once per fault, and against a broken installed plugin, all at once."""
    tmp = tmp_path_factory.mktemp("faulty_plugins")
    (tmp / "faulty_numpy.py").write_text(FAULTY)
    dist = tmp / "polygrad_numpy_broken-0.0.dist-info"  # an installed distribution whose entry point fails
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: polygrad-numpy-broken\nVersion: 0.0\n")
    (dist / "entry_points.txt").write_text("[polygrad]\nnumpy_broken = polygrad_numpy_broken\n")
    (tmp / "polygrad_numpy_broken.py").write_text("raise ImportError('this plugin is broken on purpose')\n")
    env = _env(tmp)
    procs = {f: _start([f"numpy_{f}", "--polygrad-plugin", f"faulty_numpy:{obj}"], env) for f, (obj, _) in EXPECTED.items()}
    procs["broken"] = _start(["numpy_broken"], env)
    return {name: _finish(p) for name, p in procs.items()} | {"tmp": tmp}


def test_faithful_copy_passes(runs):
    """A copy of the numpy backend registered under a new name passes: the faults below are what fail."""
    code, failed, out = runs["copy"]
    assert code == 0 and not failed, out[-4000:]


@pytest.mark.parametrize("fault", [f for f in EXPECTED if f != "copy"])
def test_planted_fault_fails_the_suite(runs, fault):
    """Each planted fault (wrong kernel, wrong dtype, broken scatter-add, dropped gradient) fails the suite where it should."""
    code, failed, out = runs[fault]
    assert code == 1, out[-4000:]
    missing = [t for t in EXPECTED[fault][1] if t not in failed]
    assert not missing, f"expected failures not reported: {missing}\n{out[-4000:]}"


def test_broken_plugin_is_one_clear_failure(runs):
    """A backend whose plugin fails to import: one failure naming the plugin and error; the rest skip; no crash."""
    code, failed, out = runs["broken"]
    assert code == 1, out[-4000:]
    assert failed == {"test_discovery.py::test_backend_is_discovered"}, out[-4000:]
    assert "this plugin is broken on purpose" in out and "numpy_broken" in out
    assert "INTERNALERROR" not in out and "Traceback" not in out
    assert re.search(r"1 failed, \d+ skipped", out), out[-2000:]


def test_known_failures_file(runs):
    """Entries of a known-failures file become strict xfails; one that passes fails the run and is
    listed; one matching no test is warned about."""
    tmp = runs["tmp"]
    xfails = tmp / "xfails.txt"
    xfails.write_text(
        "# planted\n"
        "test_ops.py::test_forward[exp-2d]       # exp is wrong on purpose\n"
        "test_ops.py::test_forward_dtype[exp-2d] # exp is wrong on purpose (the case at every dtype)\n"
        "test_ops.py::test_kernel*[exp-2d]       # exp is wrong on purpose (both kernel checks)\n"
        "test_ops.py::test_forward[sin-2d]  # stale: sin is right\n"
        "test_nowhere.py::test_nothing      # matches no test\n"
    )
    args = ["numpy_wrong_kernel", "--polygrad-plugin", "faulty_numpy:WRONG_KERNEL", "--polygrad-xfails", str(xfails),
            "-k", "exp-2d or sin-2d", "-W", "always::pytest.PytestWarning"]
    code, failed, out = _finish(_start(args, _env(tmp)))
    assert code == 1, out[-4000:]
    assert failed == {"test_ops.py::test_forward[sin-2d]"}, out[-4000:]
    assert "XPASS(strict)" in out and "known failures that now pass" in out and "xfails.txt" in out
    assert "test_nowhere.py::test_nothing" in out and "matches no test" in out
    assert re.search(r"\d+ xfailed", out)

    xfails.write_text("test_ops.py::test_forward[exp-2d]  # exp is wrong on purpose\n"
                      "test_ops.py::test_forward_dtype[exp-2d]  # exp is wrong on purpose\n"
                      "test_ops.py::test_kernel*[exp-2d]  # exp is wrong on purpose\n")
    code, failed, out = _finish(_start(args, _env(tmp)))
    assert code == 0, out[-4000:]

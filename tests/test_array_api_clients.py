"""Array API clients run unchanged on Variables: right values, and gradients or a clear refusal.

Code written against the Python Array API standard takes its namespace from its
arguments (``x.__array_namespace__()``), so on Variables it computes with polygrad's
ops and can be differentiated. This module holds four client libraries to that, on
tables of their public functions (``tests/clients/cases_*.py``):

* scipy with ``SCIPY_ARRAY_API=1``: every function of ``scipy.special``'s
  Array API set (logsumexp, softmax, log_softmax, and all 92 elementwise
  functions, digamma included), and a selection of scipy.stats (descriptive statistics,
  moments, tests), scipy.signal (convolutions, filters, spectra), scipy.fft (every
  transform), scipy.integrate, scipy.ndimage, scipy.linalg, scipy.optimize and
  scipy.cluster;
* scikit-learn with ``sklearn.set_config(array_api_dispatch=True)``: preprocessing
  functions and transformers, pairwise distances and kernels, metrics, and Ridge,
  PCA, LinearDiscriminantAnalysis, GaussianNB, GaussianMixture, Nystroem;
* array-api-extra: every public function that takes arrays, and each method of
  ``xpx.at`` on an array that a node saved and one it did not;
* marray: masked arrays whose data are Variables (elementwise, reductions,
  indexing and assignment, manipulation, matmul), and scipy on them.

Each case runs on the numpy backend and on the strict example backend
(array_api_strict underneath), and is compared with the client's own result on
numpy arrays; gradients of a weighted sum of the outputs are compared with central
finite differences, under ``pg.inplace_policy("check")`` (the default) and
``"copy"`` (see :mod:`clients.harness`, whose ``OUTCOMES`` name what can happen).
Each case states the outcome that is right for it: gradients; gradients under
``"copy"`` only (clients that write into an array a node saved); "computed with
numpy" (right values, and the gradient refused clearly: the client converted with
``np.asarray`` or ``float()``); values only (integer results); a clear refusal; or a
failure of the client's own, which it also shows on plain array_api_strict arrays. A
better outcome passes too (``clients.harness.ACCEPT``: a newer client may compute with the
namespace where this one used numpy); wrong values or gradients, a wrong shape or an
unexpected error never do. A case that does not give its right outcome yet is an ``xfail(strict=True)`` with the
reason ("polygrad: ..." or "client: ..."), so that it shows when fixed.

Not covered: scipy functions that are numpy-only by scipy's own declaration
(``np_only``: optimize.minimize, integrate.quad, interpolate, spatial, most of
stats' tests), scikit-learn estimators that fit iteratively (their gradients would be
of an optimizer's path), the dask backend (lazy: clients special-case dask's own
namespace), and complex inputs (the inputs are real; complex outputs are differentiated
through their real and imaginary parts).

scipy reads ``SCIPY_ARRAY_API`` once, when first imported, and other tests import
scipy: each library's cases run in a subprocess of their own (``python -m
clients.run LIBRARY``), started together the first time a test needs them, which
prints the outcomes as JSON.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import polygrad as pg

from clients import cases_marray, cases_scipy, cases_sklearn, cases_xpx
from clients.harness import ACCEPT, OUTCOMES

TESTS = Path(__file__).resolve().parent
TABLES = {"scipy": cases_scipy, "sklearn": cases_sklearn, "xpx": cases_xpx, "marray": cases_marray}
CASES = {(lib, c.name): c for lib, table in TABLES.items() for c in table.CASES}


def _params():
    out = []
    for (lib, name), case in CASES.items():
        for backend in case.backends:
            marks = [pytest.mark.xfail(strict=True, reason=case.xfail)] if case.xfail else []
            out.append(pytest.param(lib, backend, name, id=f"{backend}:{name}", marks=marks))
    return out


class _Runs:
    """The subprocesses of the libraries the selected tests need, started at once (so they run
    side by side), and their results, read when first asked for."""

    def __init__(self, libraries: set) -> None:
        env = dict(os.environ, SCIPY_ARRAY_API="1",
                   PYTHONPATH=os.pathsep.join([str(TESTS)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
        self.procs = {
            lib: subprocess.Popen([sys.executable, "-m", "clients.run", lib], cwd=TESTS, env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for lib in sorted(libraries)
        }
        self.results: dict = {}

    def __call__(self, lib: str) -> dict:
        if lib not in self.results:
            proc = self.procs[lib]
            try:
                out, err = proc.communicate(timeout=600)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, err = proc.communicate()
                err = "timed out after 600 s\n" + err
            lines = out.strip().splitlines()  # the JSON is the last line (a client may print too)
            ok = proc.returncode == 0 and lines
            self.results[lib] = json.loads(lines[-1]) if ok else {"crashed": (out + err)[-4000:]}
        return self.results[lib]

    def close(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.communicate()


@pytest.fixture(scope="module")
def client_results(request):
    needed = {item.callspec.params["lib"] for item in request.session.items
              if item.module is request.module and hasattr(item, "callspec") and "lib" in item.callspec.params}
    runs = _Runs(needed)
    yield runs
    runs.close()


@pytest.mark.parametrize("lib, backend, name", _params())
def test_client_function_on_variables(lib, backend, name, client_results):
    """The client function gives its result on numpy (values), and gradients that match finite
    differences, or the refusal or limitation its table states."""
    results = client_results(lib)
    if "missing" in results:
        pytest.skip(f"{lib}: {results['missing']}")
    assert "crashed" not in results, f"the {lib} cases crashed:\n{results.get('crashed')}"
    case = CASES[lib, name]
    want = case.expected(backend)
    got = results[backend][name]
    assert got["outcome"] in ACCEPT[want], (
        f"{name} on the {backend} backend: expected {want!r} ({OUTCOMES[want]}), got {got['outcome']!r} "
        f"({OUTCOMES.get(got['outcome'], '?')}): {got['detail']}"
    )


def test_every_case_states_a_known_outcome_and_a_reason_for_failures():
    """The tables are well formed: unique names, known outcomes, and a reason where a case is
    expected to fail because of its client or is not right yet."""
    names = [c.name for table in TABLES.values() for c in table.CASES]
    assert len(names) == len(set(names)), sorted({n for n in names if names.count(n) > 1})
    for (lib, name), case in CASES.items():
        for backend in case.backends:
            assert case.expected(backend) in ACCEPT, (name, case.expect)
            if case.expected(backend) == "client":
                assert case.client, f"{name}: say why the client cannot"
        assert case.xfail is None or case.xfail.startswith(("polygrad: ", "client: ")), (name, case.xfail)


DOC = TESTS.parent / "docs" / "array-api-clients.md"


def test_docs_page_scipy_and_sklearn_sessions(tmp_path):
    """The ```pycon sessions of docs/array-api-clients.md (scipy and scikit-learn, which need
    SCIPY_ARRAY_API=1 before scipy's first import) give the output they show, run in order in
    a process of their own (tests/test_docs.py runs the page's ```python blocks)."""
    for module in ("scipy", "sklearn"):
        pytest.importorskip(module)
    text = DOC.read_text(encoding="utf-8")
    sessions = re.findall(r"^```pycon\n(.*?)^```", text, flags=re.M | re.S)
    assert sessions, "the page has no ```pycon sessions"
    script = tmp_path / "sessions.txt"
    script.write_text("\n".join(sessions), encoding="utf-8")
    code = ("import doctest, sys; r = doctest.testfile(sys.argv[1], module_relative=False, "
            "optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE); sys.exit(1 if r.failed else 0)")
    env = {k: v for k, v in os.environ.items() if k != "SCIPY_ARRAY_API"}  # the page sets it itself
    out = subprocess.run([sys.executable, "-c", code, str(script)], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-2000:]


# ---------------------------------------------------------------------------
# The polygrad problems behind the xfails above, without a client library
# ---------------------------------------------------------------------------
def test_writing_into_an_output_that_svd_saved_is_refused():
    """sklearn's svd_flip (PCA) does `u *= signs` on svd's U, which svd's backward reads: backward must
    refuse, as it does for a row of one output (exp), not give a wrong gradient."""
    x = pg.Variable(np.random.default_rng(0).normal(size=(4, 3)))
    u, s, vt = pg.linalg.svd(x, full_matrices=False)
    u *= 2.0
    with pytest.raises(RuntimeError, match=r"modified by an in-place operation: .*saved its output 0 \(shape \(4, 3\)\)"):
        pg.grad(pg.sum(u * u[::-1]), [x])
    w, v = pg.linalg.eigh(pg.matmul(x.mT, x))
    w += 1.0  # eigh's backward reads its eigenvalues too
    with pytest.raises(RuntimeError, match=r"saved its output 0 \(shape \(3,\)\)"):
        pg.grad(pg.sum(v), [x])
    with pg.inplace_policy("copy"):  # the copy policy keeps the saved values: the gradient is right
        u, s, vt = pg.linalg.svd(x, full_matrices=False)
        u2 = u * 1.0
        u *= 2.0
        (g,) = pg.grad(pg.sum(u * u2), [x])
    u, s, vt = pg.linalg.svd(x, full_matrices=False)
    (ref,) = pg.grad(pg.sum(2.0 * u * u), [x])
    np.testing.assert_allclose(g.data, ref.data, rtol=1e-10)


def test_a_numpy_detour_inside_a_graph_is_not_silent():
    """What scipy does for a namespace it has no implementation for (np.asarray of the argument,
    numpy, xp.asarray of the result), combined with differentiable work: the gradient must be
    right or refused clearly (PyTorch refuses np.asarray of a tensor that requires grad)."""
    x = pg.Variable(np.array([0.5, 1.0]))
    xp = x.__array_namespace__()
    h = x * 2.0
    try:
        y = xp.sum(h + xp.asarray(np.exp(np.asarray(h))))
        (g,) = pg.grad(y, [x])
    except (RuntimeError, TypeError) as e:
        assert str(e).startswith("polygrad"), e
        return
    np.testing.assert_allclose(g.data, 2.0 + 2.0 * np.exp(2.0 * x.data))


# ---------------------------------------------------------------------------
# The harness itself tells right from wrong (plain polygrad and numpy "clients")
# ---------------------------------------------------------------------------
def _ns(x):
    return x.__array_namespace__() if hasattr(x, "__array_namespace__") else np


def _softplus(x):
    xp = _ns(x)
    return xp.log(1.0 + xp.exp(x))


def _data(x):  # what a client that detaches on purpose hands to numpy
    return x.data if isinstance(x, pg.Variable) else x


def _detour(x):  # part of the result through numpy, detached on purpose
    xp = _ns(x)
    return x * x + xp.asarray(np.sin(_data(x)))


def _asarray_detour(x):  # the same through np.asarray, as a fallback would do it
    xp = _ns(x)
    return x * x + xp.asarray(np.sin(np.asarray(x)))


def _all_numpy(x):
    return _ns(x).asarray(np.sin(_data(x)))


def _misshaped(x):
    return x[None] if isinstance(x, pg.Variable) else x


def _wrong_values(x):
    return x * 2.0 if isinstance(x, pg.Variable) else x * 3.0


def _writes_saved(x):
    h = _ns(x).exp(x)
    out = h * 1.0 if not isinstance(x, pg.Variable) else h
    out[0] = 1.0  # into exp's output, which exp saved
    return out


@pytest.mark.parametrize("fn, outcome", [
    (_softplus, "grad"), (_detour, "wrong-grad"), (_asarray_detour, "refused"), (_all_numpy, "numpy"),
    (_misshaped, "misshaped"),
    (_wrong_values, "wrong-value"), (_writes_saved, "copy"),
], ids=lambda v: getattr(v, "__name__", v))
def test_harness_classifies(fn, outcome):
    """The checks can fail: a wrong gradient, a numpy result, a wrong shape or value, and a write
    into a saved array are each told apart from a right result."""
    from clients.harness import Case, run_case

    got, detail = run_case(Case("self", fn, (np.array([0.3, -1.2, 0.8]),)), "numpy")
    assert got == outcome, detail

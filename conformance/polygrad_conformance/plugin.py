"""The pytest plugin of the conformance suite (entry point ``pytest11``).

It is inert until a backend is named, so installing it changes no other test
run. With ``--polygrad-backend NAME`` (or ``POLYGRAD_BACKEND=NAME``) it:

* registers plugins named by ``--polygrad-plugin MODULE[:ATTR]`` by hand (try
  a plugin before packaging it), then finds the backend, recording every
  plugin-load warning: a backend that is missing or unusable gives one clear
  failure (``test_discovery.py``) and skips the rest with the reason;
* makes it the default backend and gives the fixtures ``pg_backend``, ``xp``,
  ``info``, ``float_dtype`` (float64 where the backend has it, else its widest
  real floating dtype) and ``tol`` (tolerances for that dtype);
* parametrizes the per-dtype tests with every floating dtype the namespace
  declares (``__array_namespace_info__().dtypes(kind="real floating")``);
* skips tests marked ``requires(capability)`` that the backend's
  ``BackendInfo`` rules out, with the reason;
* runs the op table's core cases, and with ``--polygrad-depth`` its in-depth
  cases too (more shapes, arguments and corners of polygrad's own rules,
  which polygrad's tests run on numpy and array_api_strict);
* applies the known-failures file beside the plugin (see ``xfails.py``) as
  ``xfail(strict=True)``, each entry where its condition holds: an entry that
  passes fails the run and is listed at the end; an entry matching no test is
  a warning;
* prints test ids as the known-failures file takes them
  (``test_ops.py::test_grad[exp-2d]``, not a path), lists the failures of the
  run ready to paste into that file, and ends with how many tests the backend
  passes per area (:data:`AREAS`).
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import warnings
from pathlib import Path
from typing import Any

import pytest

from polygrad_conformance import xfails as _xfails

PACKAGE = "polygrad_conformance"
ALWAYS_RUN = ("test_discovery.py::test_backend_is_discovered", "test_discovery.py::test_backend_is_usable")
_STATE = pytest.StashKey["State"]()


@dataclasses.dataclass
class Tol:
    """Tolerances for one float dtype: forward comparisons and gradient checks."""

    rtol: float
    atol: float
    eps: float
    grad_rtol: float
    grad_atol: float


TOLERANCES = {
    "float64": Tol(rtol=1e-7, atol=1e-12, eps=1e-6, grad_rtol=1e-4, grad_atol=1e-6),
    "float32": Tol(rtol=1e-5, atol=1e-6, eps=3e-3, grad_rtol=5e-3, grad_atol=1e-3),
}


def tolerance_for(xp: Any, dtype: Any) -> Tol:
    """The tolerances for ``dtype`` (a real floating dtype of ``xp``): the table's, or ones
    scaled from its machine epsilon (float16, bfloat16, ...)."""
    name = dtype_name(xp, dtype)
    if name in TOLERANCES:
        return TOLERANCES[name]
    e = float(xp.finfo(dtype).eps)
    return Tol(rtol=100 * e, atol=10 * e, eps=e ** (1 / 3), grad_rtol=50 * e ** (2 / 3), grad_atol=50 * e ** (2 / 3))


def dtype_name(xp: Any, dtype: Any) -> str:
    """The standard's name of ``dtype`` in ``xp`` (``"float32"``), or its str."""
    for kind in ("real floating", "complex floating", "integral", "bool"):
        for name, d in declared_dtypes(xp, kind).items():
            if d == dtype:
                return name
    return str(dtype)


def declared_dtypes(xp: Any, kind: str | None = None) -> dict[str, Any]:
    """The dtypes ``xp.__array_namespace_info__().dtypes(kind=kind)`` declares, by name
    (empty when the namespace has no ``__array_namespace_info__``)."""
    info = getattr(xp, "__array_namespace_info__", None)
    if info is None:
        return {}
    try:
        return dict(info().dtypes(kind=kind))
    except Exception:
        return {}


#: The areas of the end-of-run summary: (area, module, test functions or None for the whole module).
AREAS = [
    ("discovery", "test_discovery.py", None),
    ("arrays", "test_arrays.py", None),
    ("ops", "test_ops.py", ("test_forward", "test_forward_agrees_with_numpy", "test_forward_records_graph",
                            "test_every_op_has_a_case", "test_case_ids_are_unique",
                            "test_composed_cases_name_public_functions")),
    ("gradients", "test_ops.py", ("test_grad", "test_grad2", "test_vjp_of_vjp", "test_backward_grads_belong_to_backend")),
    ("dtypes", "test_ops.py", ("test_forward_dtype", "test_grad_dtype")),
    ("kernels", "test_ops.py", ("test_kernel_paths", "test_kernels_match_generic", "test_backend_kernels_name_known_ops")),
    ("indexing", "test_indexing.py", None),
    ("hooks", "test_hooks.py", None),
    ("modes", "test_modes.py", None),
    ("in-place", "test_inplace.py", None),
    ("random", "test_random.py", None),
    ("lazy", "test_lazy.py", None),
    ("compiled", "test_compiled.py", None),
]


def area_of(short: str) -> str:
    """The summary area of a test id (``test_ops.py::test_grad[exp-2d]`` -> ``gradients``)."""
    module, _, rest = short.partition("::")
    test = rest.split("[", 1)[0]
    for area, mod, tests in AREAS:
        if mod == module and (tests is None or test in tests):
            return area
    return module.removeprefix("test_").removesuffix(".py") or "other"


@dataclasses.dataclass
class State:
    name: str
    backend: Any = None
    found: bool = False  # some plugin declares the backend
    problem: str = ""  # why the backend cannot be tested ("" when it can)
    load_warnings: list = dataclasses.field(default_factory=list)
    by_hand: list = dataclasses.field(default_factory=list)  # plugin specs registered by hand
    by_hand_objects: list = dataclasses.field(default_factory=list)  # and the plugin objects
    xfail_path: Path | None = None
    entries: list = dataclasses.field(default_factory=list)
    marked: dict = dataclasses.field(default_factory=dict)  # short id -> Entry
    passed_xfails: list = dataclasses.field(default_factory=list)
    depth: bool = False  # run the op table's in-depth cases too
    ours: dict = dataclasses.field(default_factory=dict)  # nodeid -> short id, for the suite's items
    outcomes: dict = dataclasses.field(default_factory=dict)  # short id -> passed/failed/xfailed/skipped
    messages: dict = dataclasses.field(default_factory=dict)  # short id of a failure -> its first line

    def dtypes(self, kind: str = "real floating") -> dict[str, Any]:
        """The dtypes of ``kind`` the backend's namespace declares, by name ({} without a backend)."""
        return declared_dtypes(self.backend.xp, kind) if self.backend is not None else {}

    def truth(self, name: str) -> bool:
        """The value of a name in a known-failure condition (see ``xfails.py``)."""
        if name.startswith("env:"):
            return _xfails.env_truth(name)
        if name == "depth":
            return self.depth
        if self.backend is None:
            return False
        if name == "eager":
            return not self.backend.info.lazy
        if name in _xfails.CAPABILITIES:
            return bool(getattr(self.backend.info, name))
        return name in self.dtypes(None)


# ---------------------------------------------------------------------------
# Options and set-up
# ---------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("polygrad", "polygrad conformance suite")
    group.addoption("--polygrad-backend", default=None, metavar="NAME",
                    help="run the polygrad conformance suite against backend NAME (or set POLYGRAD_BACKEND)")
    group.addoption("--polygrad-plugin", action="append", default=[], metavar="MODULE[:ATTR]",
                    help="register this plugin object by hand before looking the backend up (repeatable)")
    group.addoption("--polygrad-xfails", default=None, metavar="PATH",
                    help=f"known-failures file (default: {_xfails.FILENAME} beside the backend's plugin)")
    group.addoption("--polygrad-depth", action="store_true", default=False,
                    help="also run the op table's in-depth cases (more shapes, arguments and corners)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "requires(*capabilities): skip unless the backend has them (BackendInfo flags, 'eager', 'numpy')"
    )
    name = config.getoption("polygrad_backend") or os.environ.get("POLYGRAD_BACKEND")
    if not name:
        return
    state = State(name=name, depth=config.getoption("polygrad_depth"))
    config.stash[_STATE] = state
    _print_short_ids(config)
    _find_backend(state, config.getoption("polygrad_plugin"))
    explicit = config.getoption("polygrad_xfails")
    if explicit:
        state.xfail_path = Path(explicit)
    elif state.backend is not None and state.backend.plugin is not None:
        state.xfail_path = _xfails.locate(state.backend.plugin)
    if state.xfail_path is not None:
        try:
            state.entries = _xfails.load(state.xfail_path)
        except (OSError, _xfails.XfailFileError) as exc:
            raise pytest.UsageError(f"polygrad conformance: cannot read known failures: {exc}") from None


def _print_short_ids(config: pytest.Config) -> None:
    """Make pytest print the suite's test ids as a known-failures file takes them
    (``test_ops.py::test_grad[exp-2d]``), wherever the package is installed."""
    original = config.cwd_relative_nodeid
    marker = "/" + PACKAGE + "/"

    def relative(nodeid: Any) -> Any:
        out = original(nodeid)
        if isinstance(out, str):
            return _xfails.short_id(out)
        path = getattr(out, "path", None)  # pytest >= 9: a structured NodeId
        if isinstance(path, str) and marker in "/" + path and dataclasses.is_dataclass(out):
            return dataclasses.replace(out, path=path.rsplit("/", 1)[-1])
        return out

    config.cwd_relative_nodeid = relative  # type: ignore[method-assign]


def _find_backend(state: State, plugin_specs: list[str]) -> None:
    import polygrad as pg

    for spec in plugin_specs:
        module, _, attr = spec.partition(":")
        try:
            obj = importlib.import_module(module)
            for part in filter(None, attr.split(".")):
                obj = getattr(obj, part)
        except Exception as exc:
            state.problem = f"--polygrad-plugin {spec}: {type(exc).__name__}: {exc}"
            return
        pg.register_plugin(obj, name=f"conformance:{spec}")
        state.by_hand.append(spec)
        state.by_hand_objects.append(obj)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rows = pg.backends()
    state.load_warnings = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    row = rows.get(state.name)
    if row is None:
        known = ", ".join(sorted(rows)) or "none"
        why = "; ".join(state.load_warnings) or "no installed plugin declares it (entry-point group 'polygrad')"
        state.problem = f"backend {state.name!r} was not found ({why}); known backends: {known}"
        return
    state.found = True
    if not row.usable:
        state.problem = f"backend {state.name!r} is not usable here: {row.reason}"
        return
    try:
        state.backend = pg.set_backend(state.name)
    except Exception as exc:
        state.problem = f"backend {state.name!r} failed to load: {type(exc).__name__}: {exc}"


def state_of(config: pytest.Config) -> State | None:
    return config.stash.get(_STATE, None)


# ---------------------------------------------------------------------------
# Collection: capability skips and known failures
# ---------------------------------------------------------------------------


def _is_ours(item: pytest.Item) -> bool:
    module = getattr(item, "module", None)
    return module is not None and module.__name__.startswith(PACKAGE + ".")


def capability(state: State, cap: str) -> tuple[bool, str]:
    """Whether the backend under test has ``cap``, and the reason when not."""
    info = state.backend.info
    if cap == "eager":
        return (not info.lazy, f"backend {state.name!r} is lazy (BackendInfo.lazy=True)")
    if cap == "numpy":
        import polygrad as pg

        row = pg.backends().get("numpy")
        ok = row is not None and row.usable and state.name != "numpy"
        return (ok, "needs a second backend named 'numpy' to compare with")
    if not hasattr(info, cap):
        raise pytest.UsageError(f"polygrad conformance: unknown capability {cap!r} in a requires() mark")
    return (bool(getattr(info, cap)), f"backend {state.name!r} declares {cap}=False in its BackendInfo")


@pytest.hookimpl(tryfirst=True)  # before -k/-m deselection, so entries are matched against every test
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    ours = [item for item in items if _is_ours(item)]
    if not ours:
        return
    state = state_of(config)
    if state is None:
        raise pytest.UsageError(
            "the polygrad conformance suite needs a backend: pass --polygrad-backend NAME or set POLYGRAD_BACKEND"
        )
    active = [e for e in state.entries if e.applies(state.truth)]
    used = set()
    for item in ours:
        sid = _xfails.short_id(item.nodeid)
        state.ours[item.nodeid] = sid
        if state.backend is None:
            if sid not in ALWAYS_RUN:
                item.add_marker(pytest.mark.skip(reason=state.problem))
            continue
        for mark in item.iter_markers("requires"):
            for cap in mark.args:
                ok, why = capability(state, cap)
                if not ok:
                    item.add_marker(pytest.mark.skip(reason=why))
        for entry in active:
            if entry.matches(sid):
                used.add(entry)
                state.marked[sid] = entry
                item.add_marker(pytest.mark.xfail(strict=True, reason=f"{entry.reason} [{state.xfail_path.name}:{entry.line}]"))
                break
    unused = [e for e in active if e not in used]
    for entry in list(unused):
        # An entry of the first files, whose '*' crossed '::', '[' and ']': matched as it was then
        # (its tests failed the run, and the warning said to remove the entry), with a warning.
        hits = [item for item in ours if item.nodeid in state.ours and state.ours[item.nodeid] not in state.marked
                and entry.matches_as_before(state.ours[item.nodeid])]
        if not hits:
            continue
        for item in hits:
            state.marked[state.ours[item.nodeid]] = entry
            item.add_marker(pytest.mark.xfail(strict=True, reason=f"{entry.reason} [{state.xfail_path.name}:{entry.line}]"))
        used.add(entry)
        warnings.warn(pytest.PytestWarning(
            f"polygrad conformance: {state.xfail_path}:{entry.line}: {entry.test_id!r} matches no test with '*' "
            f"inside one part of an id; it is applied with the earlier meaning, '*' across '::', '[' and ']' "
            f"({len(hits)} tests); that meaning is deprecated: write one '*' in each part it spans"))
    unused = [e for e in active if e not in used]
    if unused and not state.depth:  # entries for the in-depth cases match nothing without --polygrad-depth
        depth_ids = _depth_ids({_xfails.short_id(i.nodeid).split("[", 1)[0] for i in ours})
        unused = [e for e in unused if not any(e.matches(d) or e.matches_as_before(d) for d in depth_ids)]
    for entry in unused:
        warnings.warn(
            pytest.PytestWarning(
                f"polygrad conformance: {state.xfail_path}:{entry.line}: {entry.test_id!r} matches no test; remove it"
            )
        )


def _depth_ids(tests: set[str]) -> list[str]:
    """The ids the op table's in-depth cases would have in ``tests`` (``test_ops.py::test_grad``, ...)."""
    from polygrad_conformance.cases import CASES

    ops_tests = [t for t in tests if t.startswith("test_ops.py::")]
    return [f"{t}[{c.id}]" for c in CASES if c.depth for t in ops_tests]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    state = state_of(item.config)
    if state is not None and report.when == "call" and report.failed and "XPASS(strict)" in str(report.longrepr):
        sid = _xfails.short_id(item.nodeid)
        if sid in state.marked:
            state.passed_xfails.append((sid, state.marked[sid]))
    return report


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Record each test's outcome for the summary (the worst of its phases)."""
    state = _current_state
    if state is None or report.nodeid not in state.ours:
        return
    sid = state.ours[report.nodeid]
    if report.failed:
        outcome = "failed"
        if sid not in state.messages:
            state.messages[sid] = _first_line(report)
    elif report.skipped:
        outcome = "xfailed" if hasattr(report, "wasxfail") else "skipped"
    elif report.when == "call":
        outcome = "passed"
    else:
        return
    previous = state.outcomes.get(sid)
    if previous != "failed":
        state.outcomes[sid] = outcome


def _first_line(report: pytest.TestReport) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(report.longrepr)
    if "XPASS(strict)" in text:
        return "passes: remove its known-failure entry"
    for line in text.splitlines():
        line = line.strip()
        if line:
            return line[:160]
    return ""


_current_state: State | None = None


def pytest_sessionstart(session: pytest.Session) -> None:
    global _current_state
    _current_state = state_of(session.config)


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    state = state_of(config)
    if state is None:
        return None
    lines = [f"polygrad conformance: backend {state.name!r}" + (f" ({state.backend!r})" if state.backend else "")]
    if state.by_hand:
        lines.append(f"polygrad conformance: plugins registered by hand: {', '.join(state.by_hand)}")
    active = sum(e.applies(state.truth) for e in state.entries)
    conditional = "" if active == len(state.entries) else f", {len(state.entries) - active} not applying here"
    lines.append(f"polygrad conformance: known failures: {state.xfail_path or 'none'} "
                 f"({len(state.entries)} entries{conditional})")
    if state.backend is not None:
        real = ", ".join(state.dtypes("real floating")) or "none declared"
        lines.append(f"polygrad conformance: floating dtypes checked: {real}")
    if state.problem:
        lines.append(f"polygrad conformance: cannot test: {state.problem}")
    return lines


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = state_of(config)
    if state is None:
        return
    tr = terminalreporter
    failures = {sid: msg for sid, msg in state.messages.items() if state.outcomes.get(sid) == "failed"}
    if state.passed_xfails:
        tr.section("polygrad conformance: known failures that now pass", sep="=", yellow=True)
        tr.line(f"Remove (or narrow) these entries of {state.xfail_path}:")
        for sid, entry in state.passed_xfails:
            wild = "*" in entry.test_id and entry.test_id != sid
            hint = f"  (it also matches {sid}, which passes: name the failing tests instead)" if wild else ""
            tr.line(f"  line {entry.line}: {entry.as_line()}{hint}")
    new = {sid: msg for sid, msg in failures.items() if sid not in dict(state.passed_xfails)}
    if new:
        tr.section(f"polygrad conformance: {len(new)} failures, as known-failure entries", sep="=", red=True)
        tr.line("Fix each, or, if it is a genuine gap of the library, list it in "
                f"{state.xfail_path or _xfails.FILENAME} with the reason:")
        width = min(max(len(s) for s in new), 90)
        for sid, msg in sorted(new.items()):
            tr.line(f"{sid:<{width}}  # {msg}")
    _summary(tr, state)


def _summary(tr: Any, state: State) -> None:
    """How many tests the backend passes per area."""
    if not state.outcomes:
        return
    counts: dict[str, dict[str, int]] = {}
    for sid, outcome in state.outcomes.items():
        row = counts.setdefault(area_of(sid), {"passed": 0, "failed": 0, "xfailed": 0, "skipped": 0})
        row[outcome] += 1
    order = [a for a, _, _ in AREAS]
    rows = sorted(counts.items(), key=lambda kv: (order.index(kv[0]) if kv[0] in order else len(order), kv[0]))
    total = {k: sum(r[k] for _, r in rows) for k in ("passed", "failed", "xfailed", "skipped")}
    ok = total["failed"] == 0
    tr.section(f"polygrad conformance: backend {state.name!r} {'conforms' if ok else 'does not conform'}",
               sep="=", green=ok, red=not ok)
    tr.line(f"{'area':<11} {'passed':>7} {'failed':>7} {'known':>7} {'skipped':>8}   passes")
    for area, r in rows + [("all", total)]:
        ran = r["passed"] + r["failed"] + r["xfailed"]
        share = f"{r['passed']}/{ran}" if ran else "-"
        tr.line(f"{area:<11} {r['passed']:>7} {r['failed']:>7} {r['xfailed']:>7} {r['skipped']:>8}   {share}",
                red=area == "all" and not ok)
    tr.line("known: known failures of the backend's file (strict xfails); skipped: needs a capability the backend "
            "does not declare, or --polygrad-depth. An area's tests: conformance/README.md.")


# ---------------------------------------------------------------------------
# Fixtures
# ---------------------------------------------------------------------------


@pytest.fixture(scope="session")
def conformance_state(request: pytest.FixtureRequest) -> State:
    state = state_of(request.config)
    if state is None:
        pytest.fail("the polygrad conformance suite needs --polygrad-backend NAME", pytrace=False)
    return state


@pytest.fixture(scope="session")
def pg_backend(conformance_state: State) -> Any:
    """The backend under test (a ``polygrad.Backend``), made the default."""
    if conformance_state.backend is None:
        pytest.skip(conformance_state.problem)
    return conformance_state.backend


@pytest.fixture(scope="session")
def xp(pg_backend: Any) -> Any:
    """The backend's Array API namespace."""
    return pg_backend.xp


@pytest.fixture(scope="session")
def info(pg_backend: Any) -> Any:
    """The backend's ``BackendInfo``."""
    return pg_backend.info


def primary_float_dtype(xp: Any, info: Any) -> Any:
    """float64 where the backend has it (``BackendInfo.float64``), else its widest declared
    real floating dtype (float32 on jax's default 32-bit mode)."""
    if info.float64:
        return xp.float64
    declared = declared_dtypes(xp, "real floating")
    for name in ("float32", "float16", "bfloat16"):
        if name in declared:
            return declared[name]
    return xp.float32


@pytest.fixture(scope="session")
def float_dtype(xp: Any, info: Any) -> Any:
    """The dtype of the numerical checks: float64 where the backend has it, else its widest
    real floating dtype."""
    return primary_float_dtype(xp, info)


@pytest.fixture(scope="session")
def tol(xp: Any, float_dtype: Any) -> Tol:
    """Tolerances for ``float_dtype``."""
    return tolerance_for(xp, float_dtype)


def float_dtype_names(config: pytest.Config) -> list[str]:
    """Names of the real floating dtypes the backend under test declares, for parametrizing
    (["float32", "float64"] when no backend can be tested: those tests skip anyway)."""
    state = state_of(config)
    names = list(state.dtypes("real floating")) if state is not None and state.backend is not None else []
    return names or ["float32", "float64"]

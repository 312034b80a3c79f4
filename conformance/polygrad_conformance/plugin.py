"""The pytest plugin of the conformance suite (entry point ``pytest11``).

It is inert until a backend is named, so installing it changes no other test
run. With ``--polygrad-backend NAME`` (or ``POLYGRAD_BACKEND=NAME``) it:

* registers plugins named by ``--polygrad-plugin MODULE[:ATTR]`` by hand (try
  a plugin before packaging it), then finds the backend, recording every
  plugin-load warning: a backend that is missing or unusable gives one clear
  failure (``test_discovery.py``) and skips the rest with the reason;
* makes it the default backend and gives the fixtures ``pg_backend``, ``xp``,
  ``info``, ``float_dtype`` and ``tol``;
* skips tests marked ``requires(capability)`` that the backend's
  ``BackendInfo`` rules out, with the reason;
* runs the op table's core cases, and with ``--polygrad-depth`` its in-depth
  cases too (more shapes, arguments and corners of polygrad's own rules,
  which polygrad's tests run on numpy and array_api_strict);
* applies the known-failures file beside the plugin (see ``xfails.py``) as
  ``xfail(strict=True)``: an entry that passes fails the run and is listed at
  the end; an entry matching no test is a warning.
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
    "float32": Tol(rtol=1e-5, atol=1e-6, eps=3e-3, grad_rtol=2e-2, grad_atol=2e-2),
}


@dataclasses.dataclass
class State:
    name: str
    backend: Any = None
    found: bool = False  # some plugin declares the backend
    problem: str = ""  # why the backend cannot be tested ("" when it can)
    load_warnings: list = dataclasses.field(default_factory=list)
    by_hand: list = dataclasses.field(default_factory=list)  # plugin specs registered by hand
    xfail_path: Path | None = None
    entries: list = dataclasses.field(default_factory=list)
    marked: dict = dataclasses.field(default_factory=dict)  # short id -> Entry
    passed_xfails: list = dataclasses.field(default_factory=list)
    depth: bool = False  # run the op table's in-depth cases too


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
    used = set()
    for item in ours:
        sid = _xfails.short_id(item.nodeid)
        if state.backend is None:
            if sid not in ALWAYS_RUN:
                item.add_marker(pytest.mark.skip(reason=state.problem))
            continue
        for mark in item.iter_markers("requires"):
            for cap in mark.args:
                ok, why = capability(state, cap)
                if not ok:
                    item.add_marker(pytest.mark.skip(reason=why))
        for entry in state.entries:
            if entry.matches(sid):
                used.add(entry)
                state.marked[sid] = entry
                item.add_marker(pytest.mark.xfail(strict=True, reason=f"{entry.reason} [{state.xfail_path.name}:{entry.line}]"))
                break
    for entry in state.entries:
        if entry not in used:
            warnings.warn(
                pytest.PytestWarning(
                    f"polygrad conformance: {state.xfail_path}:{entry.line}: {entry.test_id!r} matches no test; remove it"
                )
            )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    state = state_of(item.config)
    if state is not None and report.when == "call" and report.failed and "XPASS(strict)" in str(report.longrepr):
        sid = _xfails.short_id(item.nodeid)
        if sid in state.marked:
            state.passed_xfails.append((sid, state.marked[sid]))
    return report


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    state = state_of(config)
    if state is None:
        return None
    lines = [f"polygrad conformance: backend {state.name!r}" + (f" ({state.backend!r})" if state.backend else "")]
    if state.by_hand:
        lines.append(f"polygrad conformance: plugins registered by hand: {', '.join(state.by_hand)}")
    lines.append(f"polygrad conformance: known failures: {state.xfail_path or 'none'} ({len(state.entries)} entries)")
    if state.problem:
        lines.append(f"polygrad conformance: cannot test: {state.problem}")
    return lines


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = state_of(config)
    if state is None or not state.passed_xfails:
        return
    tr = terminalreporter
    tr.section("polygrad conformance: known failures that now pass", sep="=", yellow=True)
    tr.line(f"Remove these entries from {state.xfail_path}:")
    for sid, entry in state.passed_xfails:
        tr.line(f"  line {entry.line}: {entry.test_id}   # {entry.reason}")


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


@pytest.fixture(scope="session")
def float_dtype(xp: Any, info: Any) -> Any:
    """float64 where the backend has it, else float32."""
    return xp.float64 if info.float64 else xp.float32


@pytest.fixture(scope="session")
def tol(info: Any) -> Tol:
    return TOLERANCES["float64" if info.float64 else "float32"]

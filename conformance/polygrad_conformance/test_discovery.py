"""Discovery: the plugin is found through its entry point, declares a valid
backend, claims its own arrays, and a broken plugin is reported, not fatal."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
import textwrap
import warnings

import pytest

import polygrad as pg
from polygrad.backends import BackendInfo
from polygrad.core.dispatch import backend_of_type


def test_backend_is_discovered(conformance_state):
    """The backend under test is known to polygrad (its plugin loaded and declared it)."""
    if not conformance_state.found:
        pytest.fail(conformance_state.problem, pytrace=False)


def test_backend_is_usable(conformance_state):
    """The backend says it can run here (polygrad_check_usable) and its namespace loads."""
    if not conformance_state.found:
        pytest.skip("the backend was not found (test_backend_is_discovered says why)")
    if conformance_state.backend is None:
        pytest.fail(conformance_state.problem, pytrace=False)


def test_entry_point_loads_the_plugin(pg_backend, conformance_state):
    """An entry point of the group 'polygrad' loads the plugin object that declares the backend."""
    if conformance_state.by_hand:
        pytest.skip(f"plugin registered by hand (--polygrad-plugin {', '.join(conformance_state.by_hand)})")
    eps = list(importlib.metadata.entry_points(group="polygrad"))

    def loads_it(ep):
        try:
            return ep.load() is pg_backend.plugin
        except Exception:  # another installed plugin that fails to load is not this backend's fault
            return False

    loaded = [ep for ep in eps if loads_it(ep)]
    assert loaded, (
        f"no entry point of group 'polygrad' loads the plugin of {pg_backend.name!r}; "
        f"entry points: {[f'{ep.name} = {ep.value}' for ep in eps]}"
    )


def test_backend_info_is_valid(pg_backend, info):
    """BackendInfo: the name matches, the device is cpu or gpu, the flags are booleans."""
    assert isinstance(info, BackendInfo)
    assert info.name == pg_backend.name
    assert isinstance(info.module, str) and info.module
    assert info.device in ("cpu", "gpu"), info.device
    for flag in ("lazy", "inplace", "float64", "complex", "data_dependent_shapes"):
        assert isinstance(getattr(info, flag), bool), f"BackendInfo.{flag} = {getattr(info, flag)!r} is not a bool"
    assert isinstance(info.priority, int)


def test_library_module_is_imported_once_used(pg_backend, xp, info):
    """BackendInfo.module names the library that using the backend imports (polygrad relies on it)."""
    xp.asarray([1.0])
    assert info.module in sys.modules, f"BackendInfo.module {info.module!r} was not imported by using the backend"


def test_namespace_claims_its_arrays(pg_backend, xp):
    """Arrays the namespace creates are owned by this backend, and their namespace is xp."""
    a = xp.asarray([1.0, 2.0])
    assert pg_backend.array_types, "polygrad_array_types returned no types"
    assert isinstance(a, pg_backend.array_types)
    assert backend_of_type(type(a)) is pg_backend
    assert pg.get_array_namespace(a) is xp
    assert pg.get_array_namespace(pg.Variable(a)) is xp


def test_namespace_has_the_standard_basics(xp):
    """The namespace offers the Array API functions polygrad's kernels use."""
    needed = ["asarray", "zeros", "ones", "zeros_like", "ones_like", "arange", "reshape", "permute_dims",
              "broadcast_to", "expand_dims", "squeeze", "matmul", "matrix_transpose", "sum", "max", "min", "mean",
              "exp", "log", "sin", "cos", "tanh", "sqrt", "abs", "sign", "where", "maximum", "astype", "concat",
              "take", "float32", "int64", "bool"]
    missing = [n for n in needed if not hasattr(xp, n)]
    assert not missing, f"namespace {getattr(xp, '__name__', xp)} lacks {missing}"


def test_namespace_declares_what_backend_info_claims(pg_backend, xp, info):
    """The namespace describes its dtypes (``__array_namespace_info__``), and BackendInfo's
    ``float64`` and ``complex`` say what it declares: a backend claiming float64 that its
    namespace lacks (or the reverse) runs the wrong checks, and its users get other dtypes
    than they asked for."""
    assert hasattr(xp, "__array_namespace_info__"), (
        f"namespace {getattr(xp, '__name__', xp)} has no __array_namespace_info__ (Array API 2023.12): polygrad "
        "reads the default and available dtypes from it"
    )
    ns_info = xp.__array_namespace_info__()
    real = ns_info.dtypes(kind="real floating")
    complex_ = ns_info.dtypes(kind="complex floating")
    defaults = ns_info.default_dtypes()
    assert defaults["real floating"] in real.values(), f"default float {defaults['real floating']} is not among {real}"
    assert info.float64 == ("float64" in real), (
        f"BackendInfo.float64={info.float64}, but the namespace's real floating dtypes are {sorted(real)}"
    )
    assert info.complex == bool(complex_), (
        f"BackendInfo.complex={info.complex}, but the namespace's complex floating dtypes are {sorted(complex_)}"
    )
    for name, dtype in real.items():
        a = xp.zeros((2,), dtype=dtype)
        assert a.dtype == dtype, f"the namespace declares {name}, but xp.zeros((2,), dtype={name}) has dtype {a.dtype}"


def test_array_types_are_claimed_by_this_backend_alone(pg_backend, conformance_state):
    """No other usable backend claims this backend's array types: two backends claiming one
    type make polygrad give the arrays to one of them (with a PluginWarning), so the other's
    arrays are not its own. The one exception is the override this run asked for: the backend
    under test registered by hand (--polygrad-plugin) over an installed plugin, which owns the
    arrays here (a warning names both)."""
    from polygrad.core.dispatch import backend_of_type

    mine = set(pg_backend.array_types)
    clashes, overrides = [], []
    for name, row in pg.backends().items():
        if name == pg_backend.name or not row.usable:
            continue
        other = pg.get_backend(name)
        try:
            theirs = set(other.array_types)
        except Exception:  # a broken plugin is test_broken_plugin's business
            continue
        for t in sorted(mine & theirs, key=lambda t: t.__qualname__):
            what = (f"arrays of type {t.__module__}.{t.__qualname__} are claimed by backend {pg_backend.name!r} "
                    f"({pg_backend.origin}) and by backend {name!r} ({other.origin})")
            by_hand = any(pg_backend.plugin is p for p in conformance_state.by_hand_objects)
            if by_hand and backend_of_type(t) is pg_backend:
                overrides.append(what)
            else:
                clashes.append(what)
    for what in overrides:
        warnings.warn(pytest.PytestWarning(f"polygrad conformance: {what}; the plugin registered by hand "
                                           f"(--polygrad-plugin) owns them in this run"))
    assert not clashes, "; ".join(clashes) + (
        "; uninstall one of the plugins, or make one claim a subclass (the most specific claim wins)"
    )


def test_set_backend_and_using_backend(pg_backend, xp):
    """pg.set_backend / pg.using_backend make pg.asarray create arrays of the backend."""
    assert pg.get_backend() is pg_backend
    with pg.using_backend(pg_backend.name) as b:
        assert b is pg_backend
        assert pg.asarray([1.0, 2.0]).backend is pg_backend


def test_synchronize_and_memory_stats(pg_backend):
    """synchronize() returns; memory_stats() is None or a dict of byte counts."""
    pg_backend.synchronize()
    stats = pg_backend.memory_stats()
    assert stats is None or (isinstance(stats, dict) and all(isinstance(v, int) and v >= 0 for v in stats.values())), stats


_BROKEN = """
import sys, json, warnings, importlib
sys.path.insert(0, {tmp!r})
warnings.simplefilter("always")
import polygrad as pg
for spec in {by_hand!r}:
    module, _, attr = spec.partition(":")
    obj = importlib.import_module(module)
    for part in filter(None, attr.split(".")):
        obj = getattr(obj, part)
    pg.register_plugin(obj, name="conformance:" + spec)
with warnings.catch_warnings(record=True) as caught:
    rows = pg.backends()
row = rows.get({name!r})
b = pg.get_backend({name!r})
x = pg.Variable(b.xp.asarray([1.0, 2.0]))
pg.sum(x * x).backward()
(g,) = pg.compute(x.grad)
print(json.dumps({{"warnings": [str(w.message) for w in caught], "usable": bool(row and row.usable),
                  "grad": [float(g[i]) for i in range(2)]}}))
"""


def test_broken_plugin_is_reported_and_others_work(pg_backend, conformance_state, tmp_path):
    """An installed plugin that fails to import is one RuntimeWarning naming it; this backend still works."""
    dist = tmp_path / "polygrad_broken_example-0.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: polygrad-broken-example\nVersion: 0.0\n")
    (dist / "entry_points.txt").write_text("[polygrad]\nbroken_example = polygrad_broken_example\n")
    (tmp_path / "polygrad_broken_example.py").write_text("raise ImportError('this plugin is broken on purpose')\n")
    code = textwrap.dedent(_BROKEN).format(tmp=str(tmp_path), by_hand=conformance_state.by_hand, name=pg_backend.name)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path)] + sys.path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, f"polygrad crashed on a broken plugin:\n{out.stderr[-3000:]}"
    result = json.loads(out.stdout.strip().splitlines()[-1])
    msgs = [m for m in result["warnings"] if "broken_example" in m]
    assert len(msgs) == 1, result["warnings"]
    assert "this plugin is broken on purpose" in msgs[0]
    assert result["usable"], f"backend {pg_backend.name!r} is not usable beside a broken plugin"
    assert result["grad"] == [2.0, 4.0]

"""The plugin contract: where its names live, which plugin each hook is asked of,
polygrad's default answers, compatibility with plugins written for 0.1, and the
protocol of backend objects."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import sys
import types
import typing
from pathlib import Path

import numpy as np
import pytest

import polygrad as pg
import polygrad._defaults as D
from polygrad import hookspecs
from polygrad.compile.symbolic import SYMBOLIC
from polygrad.core import dispatch
from polygrad.hookspecs import BackendInfo, hookimpl
from registry_state import registry_state  # noqa: F401 (a fixture)

LEGACY_DIR = Path(__file__).parent / "legacy_plugins"


class Declaring:
    """A guard-free plugin declaring one backend: its hooks take no ``backend`` and check no name."""

    def __init__(self, name, stats=None):
        self.name, self.stats = name, stats

    @hookimpl
    def polygrad_backend_info(self):
        return BackendInfo(name=self.name, module="no_such_library")

    @hookimpl
    def polygrad_check_usable(self):
        return (False, f"{self.name} is not usable")

    @hookimpl
    def polygrad_memory_stats(self):
        return self.stats


class Guarded:
    """A plugin in 0.1's form: hooks take ``backend`` and answer None for other names."""

    def __init__(self, name):
        self.name, self.asked = name, []

    @hookimpl
    def polygrad_backend_info(self):
        return BackendInfo(name=self.name, module="no_such_library")

    @hookimpl
    def polygrad_check_usable(self, backend):
        self.asked.append(backend)
        return (True, "") if backend == self.name else None

    @hookimpl
    def polygrad_kernels(self, backend):
        return None  # nothing for its own backend either: the default answers


class Twins:
    """One plugin, two backends, told apart by the ``backend`` argument."""

    @hookimpl
    def polygrad_backend_info(self):
        return [BackendInfo(name="twin_a", module="no_such_library"), BackendInfo(name="twin_b", module="no_such_library")]

    @hookimpl
    def polygrad_memory_stats(self, backend):
        return {"used": 1 if backend == "twin_a" else 2}


@dataclasses.dataclass
class Unhashable:
    """A dataclass plugin: equality by fields, so no hash."""

    name: str

    @hookimpl
    def polygrad_backend_info(self):
        return BackendInfo(name=self.name, module="no_such_library")

    @hookimpl
    def polygrad_memory_stats(self):
        return {"used": 3}


class NumpyLike:
    """A guard-free plugin over numpy's namespace that claims ``types`` (by default none, which makes it
    unusable once its namespace loads) and overrides owns_memory."""

    def __init__(self, name, owns=None, types=None):
        self.name, self.owns, self.types = name, owns, types

    @hookimpl
    def polygrad_array_types(self):
        return self.types

    @hookimpl
    def polygrad_backend_info(self):
        return BackendInfo(name=self.name, module="numpy")

    @hookimpl
    def polygrad_array_namespace(self):
        import array_api_compat.numpy as xp

        return xp

    @hookimpl
    def polygrad_owns_memory(self):
        return self.owns


def _legacy_strict():
    """tests/legacy_plugins/polygrad_strict_v0_1.py, the strict example as 0.1 shipped it."""
    sys.path.insert(0, str(LEGACY_DIR))
    try:
        return importlib.import_module("polygrad_strict_v0_1")
    finally:
        sys.path.remove(str(LEGACY_DIR))


def _members(protocol):
    """The attribute and method names a Protocol class (and its protocol bases) lists."""
    names = set()
    for cls in protocol.__mro__:
        if cls not in (object, typing.Protocol, typing.Generic):
            names |= {n for n in vars(cls).get("__annotations__", {}) if not n.startswith("_")}
            names |= {n for n in vars(cls) if not n.startswith("_")}
    return names


# ---------------------------------------------------------------------------
# Names: polygrad.backends is a module, and every name is where it was
# ---------------------------------------------------------------------------
def test_import_polygrad_backends_gives_a_module():
    """`import polygrad.backends as B` gives the module, not the function pg.backends."""
    import polygrad.backends as B

    assert isinstance(B, types.ModuleType) and B.__name__ == "polygrad.backends"


def test_pg_backends_lists_the_backends():
    """pg.backends() still lists the backends: calling the module is calling backends()."""
    rows = pg.backends()
    assert rows == pg.backends.backends()
    assert rows["numpy"].usable and rows["numpy"].name == "numpy"


def test_names_imported_from_polygrad_backends_still_import():
    """Every name polygrad.backends exported in 0.1 imports from it (plugins import BackendInfo there)."""
    from polygrad.backends import (  # noqa: F401
        Backend, BackendInfo, BackendStatus, RandomGenerator, asarray, backends, compute, get_array_namespace,
        get_backend, persist, register_plugin, seed, set_backend, to_backend, unregister_plugin, using_backend,
    )

    assert callable(backends) and backends()["numpy"].usable


def test_contract_value_types_live_in_hookspecs():
    """BackendInfo and RandomGenerator are defined in polygrad.hookspecs and re-exported unchanged."""
    import polygrad.backends as B

    assert B.BackendInfo is hookspecs.BackendInfo and BackendInfo.__module__ == "polygrad.hookspecs"
    assert B.RandomGenerator is hookspecs.RandomGenerator


def test_pg_hookimpl_is_the_hookspecs_marker():
    """pg.hookimpl and polygrad.hookspecs.hookimpl are one marker."""
    assert pg.hookimpl is hookspecs.hookimpl


# ---------------------------------------------------------------------------
# Each plugin is asked about its own backends only
# ---------------------------------------------------------------------------
def test_guard_free_hooks_are_asked_only_about_their_backend(registry_state):
    """A guard-free plugin's answers reach its backend and no other (numpy stays usable)."""
    pg.register_plugin(Declaring("alpha", {"used": 1}), name="alpha-plugin")
    pg.register_plugin(Declaring("beta", {"used": 2}), name="beta-plugin")
    rows = pg.backends()
    assert rows["alpha"].reason == "alpha is not usable" and rows["beta"].reason == "beta is not usable"
    assert rows["numpy"].usable
    assert pg.get_backend("alpha").memory_stats() == {"used": 1}
    assert pg.get_backend("beta").memory_stats() == {"used": 2}


def test_hooks_taking_backend_and_guarding_keep_working(registry_state):
    """A 0.1-style plugin (hooks take backend, answer None for other names) works unchanged."""
    plugin = Guarded("guarded")
    pg.register_plugin(plugin, name="guarded-plugin")
    assert pg.backends()["guarded"].usable
    assert plugin.asked == ["guarded"]


def test_plugin_with_several_backends_tells_them_apart_by_backend(registry_state):
    """A plugin declaring a list of backends gets each one's name in `backend`."""
    pg.register_plugin(Twins(), name="twins-plugin")
    assert {"twin_a", "twin_b"} <= set(pg.backends())
    assert pg.get_backend("twin_a").memory_stats() == {"used": 1}
    assert pg.get_backend("twin_b").memory_stats() == {"used": 2}


def test_unhashable_plugin_object_works(registry_state):
    """A plugin object without a hash (a dataclass) can be registered and answers."""
    pg.register_plugin(Unhashable("unhashable"), name="unhashable-plugin")
    assert pg.get_backend("unhashable").memory_stats() == {"used": 3}


class _SplitHalf:
    """The second plugin object of a 0.1-style backend split in two (a second entry point of its
    distribution): hooks guarded by name, no polygrad_backend_info."""

    @hookimpl
    def polygrad_memory_stats(self, backend):
        return {"used": 7} if backend == "guarded" else None


def test_hooks_of_a_backend_split_over_two_plugin_objects_are_asked_with_a_deprecation(registry_state):
    """0.1 asked every plugin about every backend, so a backend's hooks could live in two plugin
    objects; f7b8aa9 asked the declaring one only and dropped the others' answers silently (a
    lazy backend's pg.compute returned uncomputed arrays). Asked again after the declaring
    plugin, with a DeprecationWarning naming the plugin; a declaring plugin still answers first."""
    pg.register_plugin(Guarded("guarded"), name="guarded-plugin")
    pg.register_plugin(_SplitHalf(), name="guarded-extras")
    with pytest.warns(hookspecs.PluginWarning, match=r"plugin 'guarded-extras'.*declares no backend \(deprecated"):
        stats = pg.get_backend("guarded").memory_stats()
    assert stats == {"used": 7}
    assert pg.get_backend("numpy").memory_stats() is None  # (its name guard answers None there)


class _RaisingAddOn:
    @hookimpl
    def polygrad_memory_stats(self, backend):
        raise RuntimeError("add-on bug")


class _GuardFreeAddOn:
    @hookimpl
    def polygrad_memory_stats(self):
        return {"used": 123}


def test_an_add_on_never_breaks_or_answers_for_a_backend_it_does_not_guard(registry_state):
    """Review of the add-on relay: an add-on that raises broke numpy's memory_stats (with no
    name), and one whose hooks take no `backend` answered for every backend. The first is a
    warning naming it (the default answers), the second is not asked, and the warning says so."""
    pg.register_plugin(_RaisingAddOn(), name="raising-add-on")
    pg.register_plugin(_GuardFreeAddOn(), name="guard-free-add-on")
    with pytest.warns(hookspecs.PluginWarning) as caught:
        stats = pg.get_backend("numpy").memory_stats()
    assert stats is None
    texts = [str(w.message) for w in caught]
    assert any("'raising-add-on'" in t and "raised in polygrad_memory_stats for backend 'numpy'" in t for t in texts)
    assert any("'guard-free-add-on'" in t and "polygrad_memory_stats take no `backend` and are not asked" in t
               for t in texts)


def test_latest_plugin_registered_by_hand_provides_a_name_declared_twice(registry_state):
    """Two plugins registered by hand declaring one name: the later provides it alone, with a warning naming both."""
    first, second = Declaring("twice", {"used": 1}), Guarded("twice")
    pg.register_plugin(first, name="first")
    pg.register_plugin(second, name="second")
    with pytest.warns(hookspecs.PluginWarning, match="'twice' is declared by plugin 'second'.*and by plugin 'first'"):
        b = pg.get_backend("twice")
    assert b.plugin is second
    assert b.check_usable() == (True, "") and b.memory_stats() is None  # the earlier plugin is not asked


# ---------------------------------------------------------------------------
# polygrad's defaults: a plugin like any other, asked last
# ---------------------------------------------------------------------------
def test_every_default_hookimpl_is_trylast():
    """Each hookimpl of polygrad._defaults (and its per-backend library check) is trylast, so any plugin's answer comes first."""
    impls = [getattr(owner, n) for owner in (D, D.LibraryCheck) for n in dir(owner) if n.startswith("polygrad_")]
    assert len(impls) > 1 and all(f.polygrad_impl["trylast"] for f in impls)


def test_default_usability_check_finds_the_library_without_importing_it():
    """Without a check hook, a backend is usable where importlib finds BackendInfo.module, and says why not."""
    assert D.LibraryCheck("json").polygrad_check_usable() == (True, "")
    ok, reason = D.LibraryCheck("no_such_lib_xyz.sub").polygrad_check_usable()
    assert not ok and "'no_such_lib_xyz'" in reason


def test_defaults_answer_where_the_plugin_does_not(registry_state):
    """A plugin with no such hooks gets the defaults: usable, no kernels, no types, owns nothing, identity compute."""
    pg.register_plugin(NumpyLike("plain"), name="plain-plugin")
    b, x = pg.get_backend("plain"), np.ones(2)
    assert b.check_usable() == (True, "") and b.kernels == {} and b.array_types == ()
    assert b.owns_memory(x) is False
    assert b.materialize((x, 1.0)) == (x, 1.0) and b.persist((x,)) == (x,)


def test_hook_answering_none_falls_through_to_the_default(registry_state):
    """A guarded hook answering None for its own backend leaves the answer to the default."""
    pg.register_plugin(Guarded("silent"), name="silent-plugin")
    assert pg.get_backend("silent").kernels == {}


def test_plugin_overrides_a_default_by_answering(registry_state):
    """A plugin's owns_memory predicate replaces the default's 'owns nothing'."""
    pg.register_plugin(NumpyLike("owner", owns=lambda a: True), name="owner-plugin")
    assert pg.get_backend("owner").owns_memory(np.ones(2)) is True


def test_default_scatter_add_sums_repeated_indices():
    """The standard-only scatter-add adds at repeated integer indices."""
    got = D.scatter_add(np.zeros(3), np.array([0, 0, 2]), np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(got, [3.0, 0.0, 3.0])


def test_default_scatter_add_adds_at_a_basic_key():
    """The standard-only scatter-add adds at a basic key (a slice) on a copy, leaving x as it was."""
    x = np.zeros(3)
    got = D.scatter_add(x, slice(0, 2), 1.0)
    np.testing.assert_array_equal(got, [1.0, 1.0, 0.0])
    assert not x.any()


def test_default_scatter_add_takes_an_int_beside_an_integer_array():
    """The standard-only scatter-add takes (integer array, int), as the conformance suite's scatter-add test does."""
    got = D.scatter_add(np.zeros((3, 2)), (np.array([0, 2, 0]), 1), np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(got, [[0.0, 4.0], [0.0, 0.0], [0.0, 2.0]])


def test_default_scatter_add_names_the_backend_for_a_key_it_cannot_take():
    """The standard-only scatter-add refuses a slice beside an integer array, naming the backend."""
    with pytest.raises(NotImplementedError, match="backend 'numpy' has no polygrad_scatter_add"):
        D.scatter_add(np.zeros((3, 3)), (np.array([0]), slice(None)), 1.0)


def test_default_backend_of_an_unregistered_plugin_no_longer_counts(registry_state):
    """After the plugin of the set_backend choice is unregistered, the highest-priority backend is current."""
    plugin = NumpyLike("chosen", types=(np.ndarray,))
    pg.register_plugin(plugin, name="chosen-plugin")
    pg.set_backend("chosen")
    assert pg.get_backend().name == "chosen"
    pg.unregister_plugin(plugin)
    assert pg.get_backend().name == "numpy"


@pytest.mark.parametrize("plugin, call, error, message", [
    (Declaring("refused"), lambda b: b.xp, RuntimeError, "backend 'refused' is not usable here: refused is not usable"),
    (Guarded("nonamespace"), lambda b: b.xp, RuntimeError, "backend 'nonamespace' returned no array namespace"),
    (NumpyLike("norandom", types=(np.ndarray,)), lambda b: b.rng(), NotImplementedError,
     "backend 'norandom' provides no random numbers"),
    (NumpyLike("nofiles"), lambda b: b.load_npz("f.npz"), RuntimeError, "backend 'nofiles' cannot read .npz files"),
    (NumpyLike("nofiles"), lambda b: b.save_npz("f.npz", {}, False), RuntimeError, "backend 'nofiles' cannot write"),
], ids=["unusable", "no_namespace", "no_random", "no_load_npz", "no_save_npz"])
def test_a_missing_hook_is_an_error_naming_the_backend(registry_state, plugin, call, error, message):
    """Where no plugin answers and there is no default, the error names the backend and what it lacks."""
    pg.register_plugin(plugin, name="erring-plugin")
    with pytest.raises(error, match=message):
        call(pg.get_backend(plugin.name))


# ---------------------------------------------------------------------------
# A plugin written for 0.1 (the strict example as it shipped)
# ---------------------------------------------------------------------------
def test_plugin_written_for_0_1_computes_gradients(registry_state):
    """The frozen 0.1 strict example, registered by hand, runs ops and indexing backward through its hooks."""
    legacy = _legacy_strict()
    pg.register_plugin(legacy, name="strict-v0.1")
    b = pg.get_backend(legacy.NAME)
    assert b.plugin is legacy and b.check_usable() == (True, "")
    x = pg.Variable(pg.asarray([1.0, 2.0, 3.0], backend=legacy.NAME))
    idx = b.xp.asarray([0, 0, 2])
    pg.sum(x[idx] * 2.0).backward()
    assert np.asarray(x.grad).tolist() == [4.0, 0.0, 2.0]
    assert b._scatter_add is legacy.scatter_add  # its own hook answered, not the default
    assert type(b.rng().normal((2,), dtype=b.xp.float64)) is type(x.data)


# ---------------------------------------------------------------------------
# The shipped plugins and the documented example
# ---------------------------------------------------------------------------
def test_readme_plugin_example_is_a_working_backend(registry_state):
    """The guard-free plugin of the README's "Writing a backend plugin", registered by hand, computes gradients."""
    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    module = types.ModuleType("polygrad_strict_readme")
    exec(readme.split("# polygrad_strict.py\n", 1)[1].split("```", 1)[0], module.__dict__)
    pg.register_plugin(module, name="readme-example")
    x = pg.Variable(pg.asarray([1.0, 2.0], backend="mystrict"))
    pg.sum(x * x).backward()
    assert x.backend.name == "mystrict" and np.asarray(x.grad).tolist() == [2.0, 4.0]


@pytest.mark.parametrize("module", ["polygrad_numpy", "polygrad_dask", "polygrad_cupy", "polygrad_strict"])
def test_shipped_plugins_check_no_backend_name(module):
    """No hook of a shipped plugin (or the example) compares `backend` with its name."""
    source = inspect.getsource(importlib.import_module(module))
    assert "backend != NAME" not in source and "backend == NAME" not in source


def test_numpy_plugin_kernels_are_only_those_that_differ():
    """The numpy plugin's kernels are not the very functions of array_api_compat.numpy (matmul without
    its wrapper, sum and matrix_transpose as the array's method and attribute)."""
    import array_api_compat.numpy as xp
    import polygrad_numpy

    kernels = polygrad_numpy.polygrad_kernels()
    assert set(kernels) == {"matmul", "sum", "matrix_transpose"}
    assert all(k is not getattr(xp, name) for name, k in kernels.items())


# ---------------------------------------------------------------------------
# The backend protocol
# ---------------------------------------------------------------------------
def test_backend_facade_has_every_protocol_member():
    """A plugin Backend offers every attribute and method of ArrayBackendLike (and so BackendLike)."""
    b = pg.get_backend("numpy")
    missing = [n for n in sorted(_members(dispatch.ArrayBackendLike)) if not hasattr(type(b), n) and n not in vars(b)]
    assert not missing


def test_symbolic_pseudo_backend_has_every_backendlike_member():
    """The symbolic pseudo-backend offers every attribute and method of BackendLike."""
    missing = [n for n in sorted(_members(dispatch.BackendLike)) if not hasattr(type(SYMBOLIC), n)]
    assert not missing


def test_protocol_lists_what_core_reads():
    """BackendLike names the attributes core and the op table read; ArrayBackendLike adds the services."""
    assert {"name", "xp", "device", "lazy", "inplace", "kernels", "raw_ops", "grad"} <= _members(dispatch.BackendLike)
    assert {"info", "scatter_add", "owns_memory", "materialize", "persist", "rng", "random_generator", "synchronize",
            "memory_stats", "forbid_compute", "check_usable", "can_do_npz", "save_npz", "load_npz"} <= _members(
        dispatch.ArrayBackendLike)


def test_dispatch_imports_only_the_standard_library_and_core():
    """core/dispatch.py, where the protocol lives, imports nothing outside polygrad.core and the standard library."""
    tree = ast.parse(Path(dispatch.__file__).read_text(encoding="utf-8"))
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module]
    outside = [m for m in names if m.split(".")[0] not in sys.stdlib_module_names and not m.startswith("polygrad.core")]
    assert not outside

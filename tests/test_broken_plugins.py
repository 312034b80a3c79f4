"""Broken plugins: each misbehaviour is a PluginWarning naming the plugin, and
never changes another backend's results or the default backend.

The plugins are defined here, registered by hand (``pg.register_plugin``) or
installed for one test as a distribution in a temporary directory (a
``.dist-info`` with an entry point of the group ``polygrad``), and removed
afterwards by the ``registry_state`` fixture.
"""

from __future__ import annotations

import sys
import textwrap

import numpy as np
import pytest

import polygrad as pg
from polygrad.backends import asarray as raw_asarray
from polygrad.hookspecs import BackendInfo, PluginWarning, hookimpl
from registry_state import registry_state  # noqa: F401 (a fixture)


@pytest.fixture
def install(tmp_path, monkeypatch):
    """``install(distribution, entry_point, source)``: install a plugin module for this test only."""
    modules = []

    def install(distribution, entry_point, source):
        module = f"pgtest_{distribution.replace('-', '_')}_{entry_point}"
        info = tmp_path / f"{distribution.replace('-', '_')}-0.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {distribution}\nVersion: 0.0\n")
        (info / "entry_points.txt").write_text(f"[polygrad]\n{entry_point} = {module}\n")
        (tmp_path / f"{module}.py").write_text("from polygrad.hookspecs import BackendInfo, hookimpl\n"
                                               + textwrap.dedent(source))
        modules.append(module)

    monkeypatch.syspath_prepend(str(tmp_path))
    yield install
    for module in modules:
        sys.modules.pop(module, None)


def _exp_is_right():
    """numpy's exp, through polygrad, on the default backend: still the exponential."""
    x = pg.Variable(pg.asarray([0.0, 1.0]))
    return x.backend.name == "numpy" and abs(float(pg.sum(pg.exp(x)).data) - (1 + np.e)) < 1e-12


class Hijack:
    """A plugin declaring the backend ``hijack`` whose hooks answer for every backend name."""

    def __init__(self, **answers):
        self.answers = answers

    @hookimpl
    def polygrad_backend_info(self):
        return BackendInfo(name="hijack", module="math", priority=-5)

    @hookimpl
    def polygrad_kernels(self, backend):
        return self.answers.get("kernels")

    @hookimpl
    def polygrad_array_namespace(self, backend):
        return self.answers.get("namespace")

    @hookimpl
    def polygrad_random_generator(self, backend, seed):
        return self.answers.get("rng")


class Checked:
    """A plugin declaring ``name`` (over numpy's namespace) whose hooks answer as given."""

    def __init__(self, name, check=None, types=None, raises=None):
        self.name, self.check, self.types, self.raises = name, check, types, raises

    @hookimpl
    def polygrad_backend_info(self):
        return BackendInfo(name=self.name, module="numpy", priority=-5)

    @hookimpl
    def polygrad_check_usable(self):
        if self.raises == "check":
            raise RuntimeError("check_usable exploded")
        return self.check

    @hookimpl
    def polygrad_array_types(self):
        if self.raises == "types":
            raise RuntimeError("array_types exploded")
        return self.types


# ---------------------------------------------------------------------------
# One backend name, two plugins
# ---------------------------------------------------------------------------
NUMPY_IMPOSTOR = """
@hookimpl
def polygrad_backend_info():
    return BackendInfo(name="numpy", module="numpy", priority=5)

@hookimpl
def polygrad_array_namespace():
    raise RuntimeError("the impostor's namespace")
"""


def test_installed_plugin_declaring_numpy_neither_replaces_it_nor_changes_the_default(registry_state, install):
    """An installed third-party plugin declaring "numpy" is a warning naming both; numpy stays numpy and the default."""
    install("aaa-impostor", "impostor", NUMPY_IMPOSTOR)
    with pytest.warns(PluginWarning, match=r"'numpy' is declared by plugin 'numpy' of polygrad-numpy "
                                           r"and by plugin 'impostor' of aaa-impostor"):
        rows = pg.backends()
    assert rows["numpy"].usable and pg.get_backend("numpy").info.priority == 100
    assert _exp_is_right()


def test_plugin_registered_by_hand_declaring_numpy_overrides_it_with_a_warning(registry_state):
    """A plugin registered by hand may replace numpy on purpose, never silently: the warning names both."""

    class MyNumpy:
        @hookimpl
        def polygrad_backend_info(self):
            return BackendInfo(name="numpy", module="numpy", priority=100)

        @hookimpl
        def polygrad_array_namespace(self):
            import array_api_compat.numpy as xp

            return xp

    mine = MyNumpy()
    pg.register_plugin(mine, name="my-numpy")
    with pytest.warns(PluginWarning, match="plugin 'my-numpy', registered by hand provides it"):
        assert pg.get_backend("numpy").plugin is mine


def test_two_installed_plugins_neither_named_like_the_backend_first_by_entry_point_name(registry_state, install):
    """Two installed plugins declaring one name, neither named like it: the first by entry-point name, warned."""
    source = """
    @hookimpl
    def polygrad_backend_info():
        return BackendInfo(name="contested", module="math")
    """
    install("dist-b", "bravo", source)
    install("dist-a", "alpha", source)
    with pytest.warns(PluginWarning, match="'contested' is declared by plugin 'alpha' of dist-a and by plugin 'bravo'"):
        assert pg.get_backend("contested").origin == "plugin 'alpha' of dist-a"


def test_two_installed_distributions_with_one_entry_point_name_first_by_distribution(registry_state, install):
    """Two distributions publishing one entry-point name: the first by distribution name loads, the other is named."""
    install("zzz-twin", "twin", "@hookimpl\ndef polygrad_backend_info():\n    return BackendInfo(name='twin_z', module='math')\n")
    install("aaa-twin", "twin", "@hookimpl\ndef polygrad_backend_info():\n    return BackendInfo(name='twin_a', module='math')\n")
    with pytest.warns(PluginWarning, match="publish the backend plugin 'twin': aaa-twin and zzz-twin"):
        rows = pg.backends()
    assert "twin_a" in rows and "twin_z" not in rows


# ---------------------------------------------------------------------------
# Hooks answering for backends their plugin did not declare
# ---------------------------------------------------------------------------
def test_kernels_answered_for_every_backend_do_not_reach_numpy(registry_state):
    """A polygrad_kernels answering {"exp": identity} for every name leaves numpy's exp alone."""
    pg.register_plugin(Hijack(kernels={"exp": lambda x: x}), name="hijack-kernels")
    assert pg.get_backend("numpy").kernels.get("exp") is None
    assert _exp_is_right()


def test_namespace_answered_for_every_backend_does_not_reach_numpy(registry_state):
    """A polygrad_array_namespace answering a fake for every name leaves numpy's namespace alone."""
    pg.register_plugin(Hijack(namespace=object()), name="hijack-namespace")
    assert pg.get_backend("numpy").xp.__name__ == "array_api_compat.numpy"
    assert _exp_is_right()


def test_random_generator_answered_for_every_backend_does_not_reach_numpy(registry_state):
    """A polygrad_random_generator answering object() for every name leaves numpy's generator alone."""
    pg.register_plugin(Hijack(rng=object()), name="hijack-rng")
    draw = pg.get_backend("numpy").random_generator(0).normal((2,), dtype=np.float64)
    assert isinstance(draw, np.ndarray) and draw.shape == (2,)


# ---------------------------------------------------------------------------
# polygrad_check_usable that raises or answers garbage
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("plugin, what", [
    (Checked("raising", raises="check"), "raised RuntimeError: check_usable exploded"),
    (Checked("saying_yes", check="yes"), "answered 'yes', not \\(usable: bool, reason: str\\)"),
    (Checked("three_tuple", check=(True, "", 1)), "answered \\(True, '', 1\\), not \\(usable"),
], ids=["raises", "yes", "three_tuple"])
def test_broken_usability_check_makes_only_its_backend_unusable(registry_state, plugin, what):
    """A check that raises or answers garbage: its backend unusable, a warning naming plugin and hook, others fine."""
    pg.register_plugin(plugin, name="checked-plugin")
    with pytest.warns(PluginWarning, match=f"plugin 'checked-plugin', registered by hand: polygrad_check_usable {what}"):
        rows = pg.backends()
    assert not rows[plugin.name].usable and "checked-plugin" in rows[plugin.name].reason
    assert rows["numpy"].usable and _exp_is_right()


def test_usability_check_raising_for_every_name_touches_no_other_backend(registry_state):
    """A check that raises for any name is asked only about its own backend: numpy stays the default."""

    class RaiseAll(Checked):
        @hookimpl
        def polygrad_check_usable(self, backend):
            raise RuntimeError(f"check_usable exploded for {backend}")

    pg.register_plugin(RaiseAll("raise_all"), name="raise-all")
    with pytest.warns(PluginWarning, match="exploded for raise_all"):
        rows = pg.backends()
    assert [n for n, r in rows.items() if not r.usable and "exploded" in r.reason] == ["raise_all"]
    assert pg.get_backend().name == "numpy"


# ---------------------------------------------------------------------------
# polygrad_array_types that raises or answers garbage
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("plugin, what", [
    (Checked("types_string", check=(True, ""), types="not a tuple"), "answered 'not a tuple', not a tuple of classes"),
    (Checked("types_raising", check=(True, ""), raises="types"), "raised RuntimeError: array_types exploded"),
], ids=["string", "raises"])
def test_broken_array_types_make_only_its_backend_unusable(registry_state, plugin, what):
    """Array types that are garbage: its backend unusable, a warning naming plugin and hook; numpy arrays still resolve."""
    pg.register_plugin(plugin, name="types-plugin")
    with pytest.warns(PluginWarning, match=f"plugin 'types-plugin', registered by hand: polygrad_array_types {what}"):
        assert _exp_is_right()
    assert not pg.backends()[plugin.name].usable


def test_kernels_that_are_not_a_dict_leave_the_generic_kernels(registry_state):
    """A polygrad_kernels answer that is not a dict of callables: a warning naming the plugin; generic kernels run."""

    class BadKernels(Checked):
        @hookimpl
        def polygrad_kernels(self):
            return "not a dict"

    pg.register_plugin(BadKernels("bad_kernels", check=(True, ""), types=()), name="kernels-plugin")
    with pytest.warns(PluginWarning, match="plugin 'kernels-plugin', registered by hand: polygrad_kernels answered"):
        assert pg.get_backend("bad_kernels").kernels == {}
    assert pg.backends()["bad_kernels"].usable


# ---------------------------------------------------------------------------
# A plugin without polygrad_check_usable whose library is missing
# ---------------------------------------------------------------------------
class Ghost:
    """No polygrad_check_usable; the highest priority; a library that is not there."""

    def __init__(self, module, error=None):
        self.module, self.error = module, error

    @hookimpl
    def polygrad_backend_info(self):
        return BackendInfo(name="ghost", module=self.module, priority=1000)

    @hookimpl
    def polygrad_array_namespace(self):
        if self.error:
            raise self.error
        return __import__(self.module)


def test_plugin_whose_library_is_not_installed_is_unusable_and_never_the_default(registry_state):
    """BackendInfo.module not importable (find_spec): unusable with the reason; numpy stays the default."""
    pg.register_plugin(Ghost("no_such_lib_xyz"), name="ghost-plugin")
    row = pg.backends()["ghost"]
    assert not row.usable and "'no_such_lib_xyz'" in row.reason and "not installed" in row.reason
    assert pg.get_backend().name == "numpy"
    with pytest.raises(RuntimeError, match="backend 'ghost' is not usable here.*plugin 'ghost-plugin'"):
        pg.asarray([1.0, 2.0], backend="ghost")


def test_plugin_whose_namespace_fails_to_load_is_skipped_as_the_default(registry_state):
    """A library found but failing to load: skipped as the default with a warning, then reported unusable."""
    pg.register_plugin(Ghost("math", ImportError("hijack lib missing")), name="ghost-plugin")
    with pytest.warns(PluginWarning, match="backend 'ghost' .*plugin 'ghost-plugin'.* failed to load .*hijack lib missing"):
        assert pg.get_backend().name == "numpy"
    row = pg.backends()["ghost"]
    assert not row.usable and "hijack lib missing" in row.reason


def test_asarray_on_a_backend_whose_namespace_fails_names_backend_and_plugin(registry_state):
    """pg.asarray on a backend whose namespace fails to load: a RuntimeError naming the backend and the plugin."""
    pg.register_plugin(Ghost("math", ImportError("hijack lib missing")), name="ghost-plugin")
    with pytest.raises(RuntimeError, match="backend 'ghost' \\(plugin 'ghost-plugin', registered by hand\\) failed"):
        pg.asarray([1.0], backend="ghost")


# ---------------------------------------------------------------------------
# Two backends claiming one array type
# ---------------------------------------------------------------------------
NDARRAY_CLAIM = """
@hookimpl
def polygrad_backend_info():
    return BackendInfo(name="ndarray_claim", module="numpy", priority=-5)

@hookimpl
def polygrad_array_namespace():
    raise RuntimeError("this backend never loads")

@hookimpl
def polygrad_array_types():
    import numpy as np
    return (np.ndarray,)
"""


def test_installed_backend_claiming_numpy_arrays_is_named_and_numpy_keeps_them(registry_state, install):
    """Two installed backends claiming np.ndarray: a warning naming both; the higher priority (numpy) keeps them."""
    install("aaa-claims", "claims", NDARRAY_CLAIM)
    with pytest.warns(PluginWarning, match=r"numpy.ndarray are claimed by backend 'numpy' .* and by backend "
                                           r"'ndarray_claim' \(plugin 'claims' of aaa-claims\); they belong to 'numpy'"):
        assert _exp_is_right()


def test_backend_claiming_a_subclass_owns_it_without_a_warning(registry_state, recwarn):
    """A backend claiming a subclass of np.ndarray owns that subclass (the most specific claim); numpy keeps ndarray."""

    class Sub(np.ndarray):
        pass

    pg.register_plugin(Checked("subclass", check=(True, ""), types=(Sub,)), name="subclass-plugin")
    assert pg.Variable(np.zeros(2).view(Sub)).backend.name == "subclass"
    assert pg.Variable(np.zeros(2)).backend.name == "numpy"
    assert not [w for w in recwarn if issubclass(w.category, PluginWarning)]


# ---------------------------------------------------------------------------
# A backend whose arrays are not the ones it claims
# ---------------------------------------------------------------------------
class Claims:
    """A plugin declaring ``name`` over numpy's namespace whose polygrad_array_types answers ``types``."""

    def __init__(self, name, types):
        self.name, self.types = name, types

    @hookimpl
    def polygrad_backend_info(self):
        return BackendInfo(name=self.name, module="numpy", priority=-5)

    @hookimpl
    def polygrad_array_namespace(self):
        import array_api_compat.numpy as xp

        return xp

    @hookimpl
    def polygrad_array_types(self):
        return self.types


@pytest.mark.parametrize("types", [None, ()], ids=["none", "empty"])
def test_backend_claiming_no_array_type_is_refused_where_it_is_used(registry_state, types):
    """No array types (the hook is required): a warning naming plugin and hook, and creating on it raises."""
    pg.register_plugin(Claims("claims_none", types), name="claims-plugin")
    with pytest.warns(PluginWarning, match="plugin 'claims-plugin', registered by hand: polygrad_array_types claims "
                                           "no array type; the hook is required"):
        with pytest.raises(RuntimeError, match="backend 'claims_none' is not usable here: .*claims no array type"):
            pg.asarray([1.0, 2.0], backend="claims_none")
    with pytest.raises(RuntimeError, match="backend 'claims_none' is not usable here"):
        with pg.using_backend("claims_none"):
            pass
    row = pg.backends()["claims_none"]
    assert not row.usable and "claims no array type" in row.reason
    assert _exp_is_right()


def test_creating_on_a_backend_whose_arrays_another_claims_names_both(registry_state):
    """A namespace making arrays its types do not claim: creating with backend= raises naming both backends."""

    class Sub(np.ndarray):
        pass

    pg.register_plugin(Claims("claims_sub", (Sub,)), name="sub-plugin")
    what = (r"backend 'claims_sub' \(plugin 'sub-plugin', registered by hand\) made an array of type numpy.ndarray, "
            r"which backend 'numpy' \(plugin 'numpy' of polygrad-numpy\) claims: its polygrad_array_types must claim")
    with pytest.raises(RuntimeError, match="polygrad.asarray: " + what):
        pg.asarray([1.0, 2.0], backend="claims_sub")
    with pytest.raises(RuntimeError, match="polygrad.zeros: " + what):
        pg.Variable(np.zeros(2).view(Sub)).__array_namespace__().zeros(2)
    with pytest.raises(RuntimeError, match="polygrad.backends.asarray: " + what):
        raw_asarray([1.0], backend="claims_sub")
    assert pg.asarray([1.0], backend="numpy").backend.name == "numpy"


class _HalfGenerator:
    """Half of the RandomGenerator protocol: ``normal`` only."""

    def normal(self, shape, *, dtype, mean=0.0, std=1.0):
        return np.zeros(shape, dtype=dtype)


@pytest.mark.parametrize("answer, shown", [(42, "42"), (_HalfGenerator(), "<.*_HalfGenerator object at .*>")],
                         ids=["int", "normal_only"])
def test_random_generator_answering_garbage_makes_only_its_backend_unusable(registry_state, answer, shown):
    """A generator without normal() and uniform(): a warning naming plugin and hook, an error naming them; numpy fine."""

    class Sub(np.ndarray):
        pass

    class GarbageRandom(Claims):
        @hookimpl
        def polygrad_random_generator(self, seed):
            return answer

    pg.register_plugin(GarbageRandom("rng_garbage", (Sub,)), name="rng-plugin")
    what = f"plugin 'rng-plugin', registered by hand: polygrad_random_generator answered {shown}, not a generator"
    with pytest.warns(PluginWarning, match=what):
        with pytest.raises(RuntimeError, match=f"backend 'rng_garbage' is not usable here: {what}"):
            pg.get_backend("rng_garbage").rng()
    row = pg.backends()["rng_garbage"]
    assert not row.usable and "polygrad_random_generator" in row.reason
    assert pg.get_backend("numpy").rng().normal((2,), dtype=np.float64).shape == (2,) and _exp_is_right()

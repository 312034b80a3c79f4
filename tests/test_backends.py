"""The backend registry: listing, choosing, mixing, moving, and broken plugins."""

from __future__ import annotations

import array
import importlib.metadata
import threading

import numpy as np
import pytest

import polygrad as pg
import polygrad._registry as R
from polygrad.backends import BackendInfo, BackendStatus
from polygrad.core import dispatch
from polygrad.hookspecs import PluginWarning, hookimpl
from registry_state import registry_state  # noqa: F401 (a fixture)


# ---------------------------------------------------------------------------
# pg.backends()
# ---------------------------------------------------------------------------
def test_backends_lists_numpy_and_strict_rows():
    """pg.backends() maps each backend name to a BackendStatus row."""
    rows = pg.backends()
    assert {"numpy", "array_api_strict"} <= set(rows)
    for name in ("numpy", "array_api_strict"):
        assert isinstance(rows[name], BackendStatus)
        assert rows[name].name == name


def test_backends_rows_say_usable_with_empty_reason():
    """Usable backends are reported usable=True with an empty reason and their device."""
    row = pg.backends()["numpy"]
    assert row.usable is True
    assert row.reason == ""
    assert row.device == "cpu"
    assert row.lazy is False


def test_backend_whose_usability_check_raises_is_listed_unusable_with_reason(registry_state):
    """A backend whose check raises is listed usable=False with the error as the reason."""

    class Flaky:
        @hookimpl
        def polygrad_backend_info(self):
            return BackendInfo(name="flaky", module="flaky_lib_missing")

        @hookimpl
        def polygrad_check_usable(self, backend):
            if backend == "flaky":
                raise OSError("driver not found")

    pg.register_plugin(Flaky(), name="flaky-plugin")
    with pytest.warns(PluginWarning, match="plugin 'flaky-plugin', registered by hand: polygrad_check_usable raised"):
        row = pg.backends()["flaky"]
    assert row.usable is False
    assert "driver not found" in row.reason
    assert pg.backends()["numpy"].usable is True


def test_set_backend_on_unusable_backend_raises_with_reason(registry_state):
    """set_backend on an unusable backend raises RuntimeError giving the reason."""

    class NoDevice:
        @hookimpl
        def polygrad_backend_info(self):
            return BackendInfo(name="nodevice", module="nodevice_lib", device="gpu")

        @hookimpl
        def polygrad_check_usable(self, backend):
            if backend == "nodevice":
                return (False, "no GPU in this machine")

    pg.register_plugin(NoDevice(), name="nodevice-plugin")
    with pytest.raises(RuntimeError, match="no GPU in this machine"):
        pg.set_backend("nodevice")
    assert pg.get_backend().name == "numpy"


# ---------------------------------------------------------------------------
# choosing the backend
# ---------------------------------------------------------------------------
def test_default_backend_is_highest_priority_usable():
    """With nothing chosen, get_backend() is numpy (the highest priority)."""
    assert pg.get_backend().name == "numpy"


def test_get_backend_by_name():
    """get_backend(name) returns that backend, whose xp is its namespace."""
    b = pg.get_backend("array_api_strict")
    assert b.name == "array_api_strict"
    import array_api_strict

    assert b.xp is array_api_strict


def test_set_backend_changes_default_for_new_arrays(registry_state):
    """set_backend makes new arrays (pg.asarray) come from that backend."""
    pg.set_backend("array_api_strict")
    assert pg.get_backend().name == "array_api_strict"
    a = pg.asarray([1.0, 2.0])
    assert pg.get_array_namespace(a) is pg.get_backend("array_api_strict").xp
    pg.set_backend("numpy")
    assert isinstance(pg.asarray([1.0]).data, np.ndarray)


def test_set_backend_is_process_wide(registry_state):
    """set_backend is seen by other threads (it is the process default)."""
    pg.set_backend("array_api_strict")
    seen = []
    t = threading.Thread(target=lambda: seen.append(pg.get_backend().name))
    t.start()
    t.join()
    assert seen == ["array_api_strict"]


def test_using_backend_switches_inside_block_and_restores():
    """using_backend makes a backend current inside the block and restores the old one after."""
    assert pg.get_backend().name == "numpy"
    with pg.using_backend("array_api_strict") as b:
        assert b.name == "array_api_strict"
        assert pg.get_backend() is b
        assert not isinstance(pg.asarray([1.0]), np.ndarray)
    assert pg.get_backend().name == "numpy"


def test_using_backend_restores_after_exception():
    """An exception inside using_backend still restores the previous backend."""
    with pytest.raises(ZeroDivisionError):
        with pg.using_backend("array_api_strict"):
            1 / 0
    assert pg.get_backend().name == "numpy"


def test_using_backend_nests():
    """Nested using_backend blocks restore the outer block's backend."""
    with pg.using_backend("array_api_strict"):
        with pg.using_backend("numpy"):
            assert pg.get_backend().name == "numpy"
        assert pg.get_backend().name == "array_api_strict"


def test_using_backend_is_thread_local():
    """using_backend in one thread is not seen by another thread."""
    entered, checked = threading.Event(), threading.Event()
    inside = []

    def worker():
        with pg.using_backend("array_api_strict"):
            inside.append(pg.get_backend().name)
            entered.set()
            checked.wait(5)

    t = threading.Thread(target=worker)
    t.start()
    assert entered.wait(5)
    try:
        assert pg.get_backend().name == "numpy"
        other = []
        t2 = threading.Thread(target=lambda: other.append(pg.get_backend().name))
        t2.start()
        t2.join()
        assert other == ["numpy"]
    finally:
        checked.set()
        t.join()
    assert inside == ["array_api_strict"]


def test_unknown_backend_name_lists_available_backends():
    """An unknown backend name raises ValueError listing the available ones."""
    with pytest.raises(ValueError) as info:
        pg.set_backend("no-such-backend")
    msg = str(info.value)
    assert "no-such-backend" in msg
    assert "numpy" in msg and "array_api_strict" in msg


def test_unknown_backend_in_using_backend_and_get_backend():
    """using_backend and get_backend reject unknown names the same way."""
    with pytest.raises(ValueError, match="available backends"):
        with pg.using_backend("nope"):
            pass
    with pytest.raises(ValueError, match="numpy"):
        pg.get_backend("nope")


# ---------------------------------------------------------------------------
# mixing backends
# ---------------------------------------------------------------------------
def test_two_backends_in_one_op_raise_type_error_naming_both():
    """Adding a numpy Variable to an array_api_strict Variable names both backends and pg.to_backend."""
    a = pg.Variable(pg.asarray([1.0, 2.0], backend="numpy"))
    b = pg.Variable(pg.asarray([1.0, 2.0], backend="array_api_strict"))
    with pytest.raises(TypeError) as info:
        a + b
    msg = str(info.value)
    assert "'numpy'" in msg and "'array_api_strict'" in msg
    assert "pg.to_backend" in msg


def test_two_backends_raw_numpy_on_left_raise_type_error():
    """A raw numpy array combined with a strict Variable raises the same TypeError."""
    b = pg.Variable(pg.asarray([1.0, 2.0], backend="array_api_strict"))
    with pytest.raises(TypeError, match="pg.to_backend"):
        np.ones(2) * b


def test_two_backends_in_user_function_raise_type_error():
    """A user Function given arrays of two backends names both and suggests pg.to_backend."""

    class Add(pg.Function):
        def forward(self, inputs):
            return inputs[0] + inputs[1],

    a = pg.Variable(pg.asarray([1.0], backend="numpy"))
    b = pg.Variable(pg.asarray([1.0], backend="array_api_strict"))
    with pytest.raises(TypeError) as info:
        Add()(a, b)
    msg = str(info.value)
    assert "numpy" in msg and "array_api_strict" in msg and "pg.to_backend" in msg


def test_get_array_namespace_of_two_backends_raises():
    """get_array_namespace of arrays of two backends raises TypeError naming both."""
    a = pg.asarray([1.0], backend="numpy")
    b = pg.asarray([1.0], backend="array_api_strict")
    with pytest.raises(TypeError, match="numpy"):
        pg.get_array_namespace(a, b)


# ---------------------------------------------------------------------------
# asarray, to_backend, get_array_namespace
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_asarray_accepts_dtype_names(backend_name, dtype):
    """pg.asarray(obj, 'float32') gives the backend's float32 array."""
    b = pg.get_backend(backend_name)
    a = pg.asarray([1, 2, 3], dtype, backend=backend_name)
    assert a.dtype == getattr(b.xp, dtype)
    assert tuple(a.shape) == (3,)


def test_asarray_unknown_dtype_name_raises_value_error():
    """pg.asarray with a dtype name the backend lacks raises ValueError naming it."""
    with pytest.raises(ValueError, match="floaty"):
        pg.asarray([1.0], "floaty")


def test_asarray_uses_current_backend(xp, backend_name):
    """pg.asarray without backend= makes an array of the current backend."""
    a = pg.asarray([1.0, 2.0])
    assert pg.get_array_namespace(a) is xp


def test_asarray_of_a_variable_is_that_variable():
    """pg.asarray(Variable) needing no copy returns the Variable itself, as the standard's asarray."""
    v = pg.Variable(pg.asarray([1.0, 2.0]))
    assert pg.asarray(v) is v
    np.testing.assert_array_equal(pg.asarray(v, copy=True).data, [1.0, 2.0])


def test_asarray_moves_an_array_of_another_backend():
    """pg.asarray(numpy_array, backend='array_api_strict') converts it."""
    a = pg.asarray(np.array([1.0, 2.0]), backend="array_api_strict")
    assert pg.get_array_namespace(a) is pg.get_backend("array_api_strict").xp
    assert pg.to_backend(a.data, "numpy").tolist() == [1.0, 2.0]


def test_to_backend_round_trip_arrays():
    """numpy -> array_api_strict -> numpy keeps values and dtype."""
    a = np.array([[1.5, 2.0], [3.0, -4.0]], dtype=np.float32)
    s = pg.to_backend(a, "array_api_strict")
    assert pg.get_array_namespace(s) is pg.get_backend("array_api_strict").xp
    back = pg.to_backend(s, "numpy")
    assert isinstance(back, np.ndarray)
    assert back.dtype == np.float32
    np.testing.assert_array_equal(back, a)


class _DeviceArray:
    """Stands in for a GPU array (cupy's): DLPack export only as a copy to the CPU when asked
    (``dl_device``), and no implicit conversion."""

    def __init__(self, a):
        self._a = np.asarray(a)

    def __dlpack_device__(self):
        return (2, 0)  # kDLCUDA, device 0

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        if dl_device is None or tuple(dl_device)[0] != 1:
            raise BufferError("device memory: ask for a copy to the CPU (dl_device)")
        return self._a.copy().__dlpack__(max_version=max_version)

    def __array__(self, dtype=None, copy=None):
        raise TypeError("Implicit conversion to a NumPy array is not allowed")


class _DeviceArrays:
    @hookimpl
    def polygrad_backend_info(self):
        return BackendInfo(name="fakegpu", module="numpy", device="gpu")

    @hookimpl
    def polygrad_array_namespace(self, backend):
        import array_api_compat.numpy as xp

        return xp if backend == "fakegpu" else None

    @hookimpl
    def polygrad_array_types(self, backend):
        return (_DeviceArray,) if backend == "fakegpu" else None


def test_to_backend_copies_a_device_array_to_the_cpu(registry_state):
    """A GPU array whose plain DLPack export refuses (cupy's) reaches numpy through from_dlpack(device="cpu")."""
    pg.register_plugin(_DeviceArrays(), name="fakegpu-plugin")
    back = pg.to_backend(_DeviceArray([[1.5, 2.0]]), "numpy")
    assert isinstance(back, np.ndarray) and back.tolist() == [[1.5, 2.0]]


def test_to_backend_same_backend_returns_same_array():
    """Moving an array to its own backend returns it unchanged."""
    a = np.array([1.0])
    assert pg.to_backend(a, "numpy") is a


def test_to_backend_round_trip_variables():
    """to_backend on a Variable returns a new Variable on the target, keeping name and requires_grad."""
    v = pg.Variable(np.array([1.0, 2.0]), name="v", requires_grad=False)
    s = pg.to_backend(v, "array_api_strict")
    assert isinstance(s, pg.Variable)
    assert s.name == "v" and s.requires_grad is False
    assert s.xp is pg.get_backend("array_api_strict").xp
    back = pg.to_backend(s, "numpy")
    assert isinstance(back, pg.Variable) and isinstance(back.data, np.ndarray)
    np.testing.assert_array_equal(back.data, [1.0, 2.0])


def test_to_backend_of_an_integer_sample_that_requires_grad_names_itself_and_the_way_out():
    """F.categorical of probabilities that require grad gives an integer sample that requires grad
    (its creator takes the reward); to_backend of it said "pass requires_grad=False", which
    to_backend does not take, and named no to_backend."""
    import polygrad.functions as F

    sample = F.categorical(pg.Variable(np.array([[0.1, 0.2, 0.7]])))
    assert sample.requires_grad and sample.creator is not None
    with pytest.raises(TypeError, match=r"polygrad\.to_backend: .* dtype int64 on backend 'numpy' requires grad .*"
                                        r"use pg\.to_backend\(x\.detach\(\), 'array_api_strict'\)"):
        pg.to_backend(sample, "array_api_strict")
    moved = pg.to_backend(sample.detach(), "array_api_strict")
    assert not moved.requires_grad and np.asarray(moved.data).tolist() == np.asarray(sample.data).tolist()


def test_moved_variable_is_usable_for_backprop():
    """A Variable moved to array_api_strict can be differentiated there."""
    v = pg.to_backend(pg.Variable(np.array([1.0, 2.0])), "array_api_strict")
    y = pg.sum(v * v)
    y.backward()
    assert np.asarray(v.grad).tolist() == [2.0, 4.0]


def test_to_backend_unknown_name_raises_value_error():
    """to_backend to an unknown backend raises ValueError listing the available ones."""
    with pytest.raises(ValueError, match="available backends"):
        pg.to_backend(np.array([1.0]), "nope")


def test_get_array_namespace_of_arrays_and_variables(backend_name):
    """get_array_namespace gives the namespace of arrays and of Variables' data."""
    b = pg.get_backend(backend_name)
    a = pg.asarray([1.0], backend=backend_name)
    assert pg.get_array_namespace(a) is b.xp
    assert pg.get_array_namespace(pg.Variable(a)) is b.xp
    assert pg.get_array_namespace(a, 2.0, pg.Variable(a)) is b.xp


def test_get_array_namespace_of_scalars_only_is_current_backend(xp):
    """get_array_namespace of Python scalars only gives the current backend's namespace."""
    assert pg.get_array_namespace(1.0, 2) is xp


# ---------------------------------------------------------------------------
# broken plugins
# ---------------------------------------------------------------------------
def test_plugin_raising_in_backend_info_is_a_runtime_warning(registry_state):
    """A plugin whose polygrad_backend_info raises is reported as a RuntimeWarning naming it."""

    class Broken:
        @hookimpl
        def polygrad_backend_info(self):
            raise ImportError("its library is missing")

    pg.register_plugin(Broken(), name="broken-plugin")
    with pytest.warns(RuntimeWarning) as rec:
        rows = pg.backends()
    msgs = " ".join(str(w.message) for w in rec)
    assert "broken-plugin" in msgs
    assert "its library is missing" in msgs
    assert {"numpy", "array_api_strict"} <= set(rows)


def test_other_backends_work_after_a_broken_plugin(registry_state):
    """After a plugin fails, numpy and array_api_strict still compute gradients."""

    class Broken:
        @hookimpl
        def polygrad_backend_info(self):
            raise RuntimeError("boom")

    pg.register_plugin(Broken(), name="broken-plugin")
    with pytest.warns(RuntimeWarning, match="broken-plugin"):
        pg.backends()
    for name in ("numpy", "array_api_strict"):
        x = pg.Variable(pg.asarray([1.0, 2.0], backend=name))
        pg.sum(x * x).backward()
        assert np.asarray(x.grad).tolist() == [2.0, 4.0]


def test_plugin_answering_wrong_type_is_a_runtime_warning(registry_state):
    """A plugin answering polygrad_backend_info with something else than BackendInfo is warned about."""

    class Wrong:
        @hookimpl
        def polygrad_backend_info(self):
            return {"name": "wrong"}

    pg.register_plugin(Wrong(), name="wrong-plugin")
    with pytest.warns(RuntimeWarning, match="wrong-plugin"):
        rows = pg.backends()
    assert "wrong" not in rows and "numpy" in rows


def test_entry_point_failing_to_load_is_a_runtime_warning(registry_state, monkeypatch):
    """An installed plugin whose entry point fails to import is a RuntimeWarning naming it; numpy works."""
    real = importlib.metadata.entry_points

    def fake_entry_points(**kw):
        eps = list(real(**kw))
        if kw.get("group") == "polygrad":
            eps.insert(0, importlib.metadata.EntryPoint(name="ghost", value="no_such_module_pg:plugin", group="polygrad"))
        return eps

    monkeypatch.setattr(R.importlib.metadata, "entry_points", fake_entry_points)
    with pytest.warns(RuntimeWarning) as rec:
        rows = pg.backends()
    msgs = " ".join(str(w.message) for w in rec)
    assert "ghost" in msgs and "no_such_module_pg" in msgs
    assert rows["numpy"].usable
    x = pg.Variable(pg.asarray([3.0], backend="numpy"))
    (x * x).backward()
    assert x.grad.tolist() == [6.0]


class _Extra:
    """A plugin declaring one backend, "extra" (never loaded)."""

    @hookimpl
    def polygrad_backend_info(self):
        return BackendInfo(name="extra", module="extra_lib")


def test_unregister_plugin_removes_its_backend(registry_state):
    """unregister_plugin removes the plugin's backend from pg.backends()."""

    p = _Extra()
    pg.register_plugin(p, name="extra-plugin")
    assert "extra" in pg.backends()
    pg.unregister_plugin(p)
    assert "extra" not in pg.backends()


def test_unregister_plugin_takes_the_name_and_refuses_what_is_not_registered(registry_state):
    """``pg.unregister_plugin`` takes the name given to ``register_plugin`` too (the README pairs
    them); a name or an object that is not registered raises, where it did nothing and left the
    plugin in force."""

    p = _Extra()
    pg.register_plugin(p, name="extra-plugin")
    with pytest.raises(ValueError, match="no plugin is registered under the name 'extra'.*extra-plugin"):
        pg.unregister_plugin("extra")  # the backend's name, not the plugin's
    assert "extra" in pg.backends()
    pg.unregister_plugin("extra-plugin")
    assert "extra" not in pg.backends()
    with pytest.raises(ValueError, match="is not registered"):
        pg.unregister_plugin(p)
    with pytest.raises(ValueError, match="under the name 'extra-plugin'"):
        pg.unregister_plugin("extra-plugin")


class _Strict:
    """A plugin declaring backend "mystrict" over array_api_strict (docs' MyStrict, without its generator)."""

    @hookimpl
    def polygrad_backend_info(self):
        return BackendInfo(name="mystrict", module="array_api_strict", device="cpu", priority=-20)

    @hookimpl
    def polygrad_array_namespace(self):
        import array_api_strict

        return array_api_strict

    @hookimpl
    def polygrad_array_types(self):
        import array_api_strict

        return (type(array_api_strict.asarray(0.0)),)


def _used_backend(name):
    """A weak reference to backend ``name`` after an op, a gradient and a namespace lookup ran on it."""
    import weakref

    with pg.using_backend(name):
        x = pg.Variable(pg.asarray([[1.0, 2.0], [3.0, 4.0]]))
    pg.sum(x * x).backward()
    x.__array_namespace__().__array_namespace_info__()
    return weakref.ref(pg.get_backend(name))


@pytest.mark.filterwarnings("ignore::polygrad.hookspecs.PluginWarning")
def test_an_unregistered_or_replaced_backend_is_freed(registry_state):
    """Each op row's kernel cache and the Array API namespace cache kept every Backend ever made
    (with its plugin): a test suite or notebook registering a plugin per test grew without bound."""
    import gc
    import weakref

    p = _Strict()
    pg.register_plugin(p, name="mystrict-plugin")
    unregistered, plugin = _used_backend("mystrict"), weakref.ref(p)
    pg.unregister_plugin(p)
    del p
    first, second = _Strict(), _Strict()
    pg.register_plugin(first, name="mystrict-1")
    replaced = _used_backend("mystrict")
    pg.register_plugin(second, name="mystrict-2")  # (the latest registered by hand provides it)
    assert _used_backend("mystrict")().plugin is second
    gc.collect()
    assert unregistered() is None and plugin() is None and replaced() is None


# ---------------------------------------------------------------------------
# array types
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("data", [[1.0, 2.0], array.array("d", [1.0, 2.0]), (1.0,)])
def test_variable_of_unclaimed_type_is_type_error_naming_type_and_backends(data):
    """pg.Variable of a list / array.array raises TypeError naming the type and the installed backends."""
    with pytest.raises(TypeError) as info:
        pg.Variable(data)
    msg = str(info.value)
    assert type(data).__name__ in msg
    assert "numpy" in msg and "array_api_strict" in msg


def test_variable_of_variable_is_type_error():
    """pg.Variable of a Variable made by a function raises TypeError suggesting detach or .data."""
    v = pg.Variable(np.array([1.0])) * 2
    with pytest.raises(TypeError, match="detach"):
        pg.Variable(v)


def test_type_lookup_is_cached(monkeypatch):
    """The type -> backend resolver runs once per array type, then the cache answers."""
    calls = []
    real = dispatch._resolver

    def counting(t):
        calls.append(t)
        return real(t)

    monkeypatch.setattr(dispatch, "_resolver", counting)
    dispatch.clear_cache()
    try:
        a = np.array([1.0, 2.0])
        x = pg.Variable(a)
        y = pg.Variable(np.array([3.0, 4.0]))
        pg.sum(x * y).backward()
        assert calls.count(np.ndarray) == 1
        assert dispatch._type_cache[np.ndarray] is pg.get_backend("numpy")
    finally:
        dispatch.clear_cache()


def _mask():
    """A dropout mask: one draw of the numpy backend's shared random stream."""
    import polygrad.functions as F

    return np.asarray(F.dropout(pg.Variable(np.ones(32)), 0.5).array) != 0


def test_registering_a_plugin_does_not_rewind_the_seeded_stream(registry_state):
    """The draws after registering (and unregistering) a plugin go on from those before, as
    without it (they repeated the draws made right after the last pg.seed)."""
    pg.seed(0)
    expected = [_mask() for _ in range(3)]

    class Unrelated:  # declares no backend and implements no hook
        pass

    plugin = Unrelated()
    pg.seed(0)
    got = [_mask()]
    pg.register_plugin(plugin, name="unrelated")
    got.append(_mask())
    pg.unregister_plugin(plugin)
    got.append(_mask())
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)


def test_registering_an_unrelated_plugin_keeps_the_backend_objects(registry_state):
    """A backend whose plugin and add-ons stay is the same object after a registration."""
    numpy = pg.get_backend("numpy")

    class Unrelated:
        pass

    pg.register_plugin(Unrelated(), name="unrelated")
    assert pg.get_backend("numpy") is numpy


def test_registering_an_add_on_does_not_rewind_the_seeded_stream(registry_state):
    """An add-on changes the hooks a backend asks (a new Backend object), not its random stream."""
    pg.seed(0)
    expected = [_mask() for _ in range(2)]

    class AddOn:  # hooks that take `backend`, no polygrad_backend_info: asked about every backend
        @hookimpl
        def polygrad_synchronize(self, backend):
            return None

    pg.seed(0)
    got = [_mask()]
    with pytest.warns(PluginWarning, match="declares no backend"):
        pg.register_plugin(AddOn(), name="add-on")
        got.append(_mask())
    np.testing.assert_array_equal(got[1], expected[1])


def test_register_plugin_clears_type_cache(registry_state):
    """Registering a plugin forgets cached type lookups."""
    pg.Variable(np.array([1.0]))
    assert np.ndarray in dispatch._type_cache

    class Extra:
        @hookimpl
        def polygrad_backend_info(self):
            return BackendInfo(name="extra2", module="extra2_lib")

    pg.register_plugin(Extra(), name="extra2-plugin")
    assert np.ndarray not in dispatch._type_cache

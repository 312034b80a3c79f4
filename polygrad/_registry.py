"""The backend registry: the pluggy manager, discovery, and one :class:`Backend` per declared name.

Plugins are found through the entry-point group ``polygrad`` the first time a
backend is needed, not at ``import polygrad``. A backend's library is imported
the first time that backend is used. A plugin that fails to load is reported as
a warning naming it and the error; every other backend keeps working.

Each backend asks its hooks through a relay of its own: a small
``PluginManager`` holding polygrad's defaults (:mod:`polygrad._defaults`,
``trylast``) and the plugin(s) that declared the backend in
``polygrad_backend_info``. So a plugin is asked only about its own backends,
in pluggy's order (the last registered first, the defaults last), and a
hookimpl gets only the arguments it names. A relay of its own, rather than
``PluginManager.subset_hook_caller``, because that one keeps the other plugins
in a set, and a plugin object need not be hashable (a ``@dataclass`` is not).

This module installs :func:`resolve_type` into :mod:`polygrad.core.dispatch`.
The user API over it is :mod:`polygrad.backends`.
"""

from __future__ import annotations

import importlib.metadata
import sys
import threading
import warnings
from typing import Any, Callable

import pluggy

from polygrad import _defaults, hookspecs
from polygrad.core import dispatch as _dispatch
from polygrad.hookspecs import BackendInfo

__all__ = ["Backend", "register_plugin", "unregister_plugin", "by_name", "lookup", "resolve_type", "reseed"]


class Backend:
    """A loaded backend: its name, Array API namespace ``xp`` and the services of its hooks.

    It offers what :class:`polygrad.core.dispatch.ArrayBackendLike` lists.
    Every hook answer is asked once and cached here, so nothing on the per-op
    path calls pluggy.
    """

    #: pg.grad differentiates arrays of this backend with the engine (no override).
    grad: Callable[..., list] | None = None

    def __init__(self, info: BackendInfo, hook: Any, plugin: Any = None):
        self.info = info
        self.plugin = plugin  # the plugin object that declared this backend
        self.name = info.name
        self.device = info.device
        self.lazy = info.lazy
        self.inplace = info.inplace
        self._hook = hook
        self._xp = None
        self._types: tuple[type, ...] | None = None
        self._rng: Any = None
        self._scatter_add: Callable | None = None
        self._kernels: dict[str, Callable] | None = None
        self._usable: tuple[bool, str] | None = None
        self._owns: Callable[[Any], bool] | None = None
        self.raw_ops: Any = None  # the ops namespace over raw arrays, filled by the op table

    def __repr__(self) -> str:
        return f"<polygrad backend {self.name!r} ({self.device}{', lazy' if self.lazy else ''})>"

    def __reduce__(self) -> tuple:
        # Pickled by name (graphs sent to dask workers refer to their backend),
        # through the public name a pickle can rely on.
        from polygrad.backends import get_backend

        return (get_backend, (self.name,))

    # -- loading -----------------------------------------------------------
    @property
    def xp(self) -> Any:
        """The backend's Array API namespace (imports the library on first use)."""
        if self._xp is None:
            self.require_usable()
            xp = self._hook.polygrad_array_namespace(backend=self.name)
            if xp is None:
                raise RuntimeError(f"polygrad: plugin for backend {self.name!r} returned no array namespace")
            self._xp = xp
        return self._xp

    @property
    def array_types(self) -> tuple[type, ...]:
        if self._types is None:
            self._types = tuple(self._hook.polygrad_array_types(backend=self.name))
        return self._types

    def check_usable(self) -> tuple[bool, str]:
        """``(usable, reason)``, asked once."""
        if self._usable is None:
            try:
                self._usable = tuple(self._hook.polygrad_check_usable(backend=self.name))  # type: ignore[assignment]
            except Exception as exc:  # a broken check is a reason, not a crash
                self._usable = (False, f"{type(exc).__name__}: {exc}")
        return self._usable  # type: ignore[return-value]

    def require_usable(self) -> Backend:
        """This backend, or a RuntimeError giving the reason it cannot run here."""
        ok, reason = self.check_usable()
        if not ok:
            raise RuntimeError(f"polygrad: backend {self.name!r} is not usable here: {reason}")
        return self

    # -- services beyond the standard --------------------------------------
    def rng(self) -> Any:
        """The backend's shared random generator, seeded by ``pg.seed``."""
        if self._rng is None:
            self._rng = self.random_generator(_seed_state["seed"])
        return self._rng

    def random_generator(self, seed: int | None) -> Any:
        """A new random generator for this backend seeded with ``seed``."""
        self.xp  # load (and check usability) first
        gen = self._hook.polygrad_random_generator(backend=self.name, seed=seed)
        if gen is None:
            raise NotImplementedError(f"polygrad: backend {self.name!r} provides no random numbers (polygrad_random_generator)")
        return gen

    def scatter_add(self, x: Any, key: Any, values: Any) -> Any:
        """Copy of ``x`` with ``values`` added at ``x[key]``, repeated indices summed."""
        if self._scatter_add is None:
            self._scatter_add = self._hook.polygrad_scatter_add(backend=self.name)
        return self._scatter_add(x, key, values)

    @property
    def kernels(self) -> dict[str, Callable]:
        if self._kernels is None:
            self._kernels = dict(self._hook.polygrad_kernels(backend=self.name))
        return self._kernels

    def can_do_npz(self) -> bool:
        """Whether the plugin reads and writes ``.npz`` files (asked with ``file=None``)."""
        return self._hook.polygrad_load_npz(backend=self.name, file=None) is not None

    def save_npz(self, file: Any, arrays: dict, compressed: bool) -> None:
        if not self._hook.polygrad_save_npz(backend=self.name, file=file, arrays=arrays, compressed=compressed):
            raise RuntimeError(f"polygrad: backend {self.name!r} cannot write .npz files")

    def load_npz(self, file: Any) -> Any:
        out = self._hook.polygrad_load_npz(backend=self.name, file=file)
        if out is None:
            raise RuntimeError(f"polygrad: backend {self.name!r} cannot read .npz files")
        return out

    def owns_memory(self, array: Any) -> bool:
        """Whether ``array`` owns writable memory (not a view), per the plugin; False if it cannot tell."""
        if self._owns is None:
            self._owns = self._hook.polygrad_owns_memory(backend=self.name)
        return self._owns(array)

    def materialize(self, arrays: tuple[Any, ...]) -> tuple[Any, ...]:
        """The arrays computed, in one pass where the backend is lazy."""
        return tuple(self._hook.polygrad_materialize(backend=self.name, arrays=tuple(arrays)))

    def persist(self, arrays: tuple[Any, ...]) -> tuple[Any, ...]:
        """The arrays computed and kept as (persisted) lazy arrays where the backend is lazy."""
        return tuple(self._hook.polygrad_persist(backend=self.name, arrays=tuple(arrays)))

    def forbid_compute(self) -> Any:
        """A context manager in which computing this backend's arrays raises, or
        None (eager backends)."""
        return self._hook.polygrad_forbid_compute(backend=self.name)

    def synchronize(self) -> None:
        self._hook.polygrad_synchronize(backend=self.name)

    def memory_stats(self) -> dict[str, int] | None:
        return self._hook.polygrad_memory_stats(backend=self.name)


# ---------------------------------------------------------------------------
# The plugin manager and the registry
# ---------------------------------------------------------------------------

_lock = threading.RLock()
_pm: pluggy.PluginManager | None = None
_registry: dict[str, Backend] | None = None
_extra_plugins: list[tuple[Any, str | None]] = []  # registered by hand; mutated in place, never rebound
_seed_state: dict[str, int | None] = {"seed": None}


def _plugin_manager() -> pluggy.PluginManager:
    global _pm
    with _lock:
        if _pm is None:
            pm = pluggy.PluginManager("polygrad")
            pm.add_hookspecs(hookspecs)
            for ep in importlib.metadata.entry_points(group="polygrad"):
                if pm.get_plugin(ep.name) is not None or pm.is_blocked(ep.name):
                    continue
                try:
                    plugin = ep.load()
                    pm.register(plugin, name=ep.name)
                except Exception as exc:
                    warnings.warn(
                        f"polygrad: backend plugin {ep.name!r} ({ep.value}) failed to load and is skipped: "
                        f"{type(exc).__name__}: {exc}",
                        RuntimeWarning,
                        stacklevel=4,
                    )
            for plugin, name in _extra_plugins:
                if not pm.is_registered(plugin):
                    pm.register(plugin, name=name)
            _pm = pm
        return _pm


def _hook_relay(pm: pluggy.PluginManager, declarers: list[Any]) -> Any:
    """The hooks of one backend: ``declarers`` (in registration order) over polygrad's defaults."""
    relay = pluggy.PluginManager("polygrad")
    relay.add_hookspecs(hookspecs)
    relay.register(_defaults, name="polygrad-defaults")
    for plugin in declarers:
        relay.register(plugin, name=pm.get_name(plugin))
    return relay.hook


def _declarations(pm: pluggy.PluginManager) -> dict[str, tuple[BackendInfo, list[Any]]]:
    """Every backend name: its info (the last plugin to declare it wins) and its declaring plugins."""
    found: dict[str, tuple[BackendInfo, list[Any]]] = {}
    for impl in pm.hook.polygrad_backend_info.get_hookimpls():
        try:
            answer = impl.function()
        except Exception as exc:
            warnings.warn(
                f"polygrad: backend plugin {impl.plugin_name!r} failed in polygrad_backend_info and is skipped: "
                f"{type(exc).__name__}: {exc}",
                RuntimeWarning,
                stacklevel=4,
            )
            continue
        for info in answer if isinstance(answer, (list, tuple)) else [answer]:
            if not isinstance(info, BackendInfo):
                warnings.warn(
                    f"polygrad: plugin {impl.plugin_name!r} answered polygrad_backend_info with {info!r}, "
                    "not a polygrad.hookspecs.BackendInfo; skipped",
                    RuntimeWarning,
                    stacklevel=4,
                )
                continue
            plugins = found[info.name][1] if info.name in found else []
            if not any(p is impl.plugin for p in plugins):
                plugins.append(impl.plugin)
            found[info.name] = (info, plugins)
    return found


def by_name() -> dict[str, Backend]:
    """Every declared backend, by name (built on first use, rebuilt after a plugin comes or goes)."""
    global _registry
    reg = _registry
    if reg is not None:
        return reg
    with _lock:
        if _registry is None:
            pm = _plugin_manager()
            _registry = {
                name: Backend(info, _hook_relay(pm, plugins), plugins[-1])
                for name, (info, plugins) in _declarations(pm).items()
            }
        return _registry


def register_plugin(plugin: Any, name: str | None = None) -> None:
    """Register a backend plugin object by hand (tests, notebooks, out-of-tree work).

    Installed plugins are found through their entry points; this is for a
    plugin that is not installed as a distribution.
    """
    global _registry
    with _lock:
        _extra_plugins.append((plugin, name))
        if _pm is not None:
            _pm.register(plugin, name=name)
        _registry = None
        _dispatch.clear_cache()


def unregister_plugin(plugin: Any) -> None:
    """Undo :func:`register_plugin`."""
    global _registry
    with _lock:
        _extra_plugins[:] = [(p, n) for p, n in _extra_plugins if p is not plugin]
        if _pm is not None and _pm.is_registered(plugin):
            _pm.unregister(plugin)
        _registry = None
        _dispatch.clear_cache()


def lookup(name: str | Backend) -> Backend:
    """The backend named ``name`` (a Backend is returned as it is); ValueError listing the known ones."""
    if isinstance(name, Backend):
        return name
    reg = by_name()
    try:
        return reg[name]
    except KeyError:
        known = ", ".join(sorted(reg)) or "none (install polygrad-numpy)"
        raise ValueError(f"polygrad: unknown backend {name!r}; available backends: {known}") from None


def resolve_type(t: type) -> Backend:
    """The resolver installed into the core: which loaded backend owns type ``t``.

    When several backends claim ``t``, the most recently registered plugin wins
    (as pluggy calls later plugins first), so a plugin registered by hand
    overrides an installed one.
    """
    reg = by_name()
    for backend in reversed(list(reg.values())):
        if backend.info.module in sys.modules:
            try:
                types = backend.array_types
            except Exception:
                continue
            if types and issubclass(t, types):
                return backend
    names = ", ".join(sorted(reg)) or "none"
    raise TypeError(
        f"polygrad: no backend claims arrays of type {t.__module__}.{t.__qualname__}; "
        f"installed backends: {names}. Install a plugin for that library or convert the data with pg.asarray."
    )


def reseed(value: int | None) -> None:
    """Seed every backend's shared random generator (the next ``rng()`` makes a new one)."""
    _seed_state["seed"] = value
    for b in by_name().values():
        b._rng = None


_dispatch.set_resolver(resolve_type)

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

A misbehaving plugin is reported with a :class:`~polygrad.hookspecs.PluginWarning`
naming it, and never changes another backend or the default (the rules are
written down in :mod:`polygrad.hookspecs`): a backend name declared twice goes
to one plugin (:func:`_provider`), an array type claimed twice to one backend
(:func:`resolve_type`), and a hook that raises or answers garbage makes only its
own backend unusable (:meth:`Backend.check_usable`).

This module installs :func:`resolve_type` into :mod:`polygrad.core.dispatch`.
The user API over it is :mod:`polygrad.backends`.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import difflib
import functools

import importlib.metadata
import sys
import threading
import warnings
import weakref
from typing import Any, Callable, Iterator

import pluggy

from polygrad import _defaults, hookspecs
from polygrad.core import dispatch as _dispatch
from polygrad.hookspecs import BackendInfo, PluginWarning

__all__ = ["Backend", "register_plugin", "unregister_plugin", "by_name", "lookup", "resolve_type", "reseed",
           "draws_aside"]


class _HalfOpen:
    """A plugin's random generator whose ``uniform(low, high)`` draws stay below ``high``.

    The contract's interval is [low, high), but the usual way to write the hook (a float64
    draw cast to the dtype, or a [0, 1) draw scaled in it) rounds the draws nearest ``high``
    up to it: 1 in about 4,000 float16 draws of [0, 1), so ``Bernoulli(1.0)`` drew 0 and
    ``log_prob`` of that draw was -inf. This is the one place such draws are caught, for every
    plugin, those already published too: they become the largest value of the dtype below
    ``high``. Everything else is the plugin's generator's own. ``backend_name`` is the backend
    it draws for, so that a generator handed to another backend's draw is refused by name
    (``Distribution.sample(rng=...)``)."""

    def __init__(self, gen: Any, backend_name: str) -> None:
        self._gen = gen
        self.backend_name = backend_name

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # (copy and pickle ask before __init__ has run)
            raise AttributeError(name)
        return getattr(self._gen, name)

    def uniform(self, shape: tuple, *, dtype: Any, low: float = 0.0, high: float = 1.0, **options: Any) -> Any:
        u = self._gen.uniform(shape, dtype=dtype, low=low, high=high, **options)
        if not high > low:
            return u
        xp = _dispatch.backend_of_type(type(u)).xp
        return xp.minimum(u, xp.nextafter(xp.asarray(high, dtype=dtype), xp.asarray(low, dtype=dtype)))


class Backend:
    """A loaded backend: its name, Array API namespace ``xp`` and the services of its hooks.

    It offers what :class:`polygrad.core.dispatch.ArrayBackendLike` lists.
    Every hook answer is asked once and cached here, so nothing on the per-op
    path calls pluggy.
    """

    #: pg.grad differentiates arrays of this backend with the engine (no override).
    grad: Callable[..., list] | None = None
    mixing_advice: str | None = None

    def __init__(self, info: BackendInfo, hook: Any, plugin: Any = None, origin: str = ""):
        self.info = info
        self.plugin = plugin  # the plugin object that declared this backend
        #: how messages name the plugin: "plugin 'numpy' of polygrad-numpy"
        self.origin = origin or f"plugin {plugin!r}"
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
        self._fuse_broken = False
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
        """The backend's Array API namespace (imports the library on first use).

        A namespace that fails to load makes the backend unusable, with the
        error as the reason; the RuntimeError names the backend and its plugin."""
        if self._xp is None:
            self.require_usable()
            try:
                xp = self._hook.polygrad_array_namespace(backend=self.name)
            except Exception as exc:
                self._usable = (False, f"its array namespace failed to load: {type(exc).__name__}: {exc}")
                raise RuntimeError(
                    f"polygrad: backend {self.name!r} ({self.origin}) failed to load its array namespace: "
                    f"{type(exc).__name__}: {exc}"
                ) from exc
            if xp is None:
                self._usable = (False, "its plugin returned no array namespace")
                raise RuntimeError(f"polygrad: {self.origin} of backend {self.name!r} returned no array namespace")
            if not self.array_types and self.check_usable()[0]:
                # Checked here, where the backend is first used: a backend claiming no array type made arrays that
                # polygrad gave to whichever backend claims them (pg.asarray(..., backend=X) returned another's).
                self._broken("polygrad_array_types", "claims no array type; the hook is required")
            self.require_usable()  # (array types that are garbage or none make it unusable)
            self._xp = xp
        return self._xp

    def loads(self) -> bool:
        """Whether the backend is usable and its namespace loads; a failure to load
        is a PluginWarning naming the plugin (the default backend is chosen with it)."""
        if not self.check_usable()[0]:
            return False
        try:
            self.xp
        except RuntimeError as exc:
            warnings.warn(f"{exc}; it is skipped", PluginWarning, stacklevel=3)
            return False
        return True

    @property
    def array_types(self) -> tuple[type, ...]:
        """The array types the plugin claims; none (and the backend unusable) when
        its answer is not a tuple of classes. (An empty claim makes it unusable once
        its namespace loads: :attr:`xp`.)"""
        if self._types is None:
            try:
                types = self._hook.polygrad_array_types(backend=self.name)
            except Exception as exc:
                types = self._broken("polygrad_array_types", f"raised {type(exc).__name__}: {exc}", ())
            else:
                if isinstance(types, list):
                    types = tuple(types)
                if not (isinstance(types, tuple) and all(isinstance(t, type) for t in types)):
                    types = self._broken("polygrad_array_types", f"answered {types!r}, not a tuple of classes", ())
            self._types = types
        return self._types

    def made(self, array: Any, fn: str) -> Any:
        """``array``, which ``fn`` created on this backend, checked to be of it (one type lookup, in the
        functions that take ``backend=``): a namespace making arrays that this backend's
        ``polygrad_array_types`` does not claim gave ``pg.asarray(..., backend=X)`` a Variable of another.
        A type this backend claims but another owns is the conflict :func:`resolve_type` warns about."""
        t = type(array)
        try:
            owner = _dispatch.backend_of_type(t)
        except TypeError:
            owner = None
        if owner is not self and not issubclass(t, self.array_types):
            whose = ("no backend claims" if owner is None
                     else f"backend {owner.name!r} ({getattr(owner, 'origin', 'polygrad')}) claims")
            raise RuntimeError(
                f"polygrad.{fn}: backend {self.name!r} ({self.origin}) made an array of type "
                f"{t.__module__}.{t.__qualname__}, which {whose}: its polygrad_array_types must claim the arrays "
                f"its namespace makes (it claims {', '.join(c.__qualname__ for c in self.array_types) or 'none'})"
            )
        return array

    def check_usable(self) -> tuple[bool, str]:
        """``(usable, reason)``, asked once; a check that raises or answers
        something else than a ``(bool, str)`` pair makes the backend unusable."""
        if self._usable is None:
            try:
                answer = self._hook.polygrad_check_usable(backend=self.name)
            except Exception as exc:  # a broken check is a reason, not a crash
                answer = self._broken("polygrad_check_usable", f"raised {type(exc).__name__}: {exc}")
            else:
                if isinstance(answer, list):
                    answer = tuple(answer)
                if not (isinstance(answer, tuple) and len(answer) == 2 and isinstance(answer[0], bool)
                        and isinstance(answer[1], (str, type(None)))):
                    answer = self._broken("polygrad_check_usable", f"answered {answer!r}, not (usable: bool, reason: str)")
            if self._usable is None:  # _broken may have set it
                self._usable = (answer[0], answer[1] or "")
        return self._usable

    def require_usable(self) -> Backend:
        """This backend, or a RuntimeError giving the reason it cannot run here."""
        ok, reason = self.check_usable()
        if not ok:
            whose = "" if self.origin in reason else f" ({self.origin})"
            raise RuntimeError(f"polygrad: backend {self.name!r} is not usable here: {reason}{whose}")
        return self

    def _broken(self, hook: str, what: str, fallback: Any = None) -> Any:
        """Report a hook that broke the contract: the backend becomes unusable with
        the reason, a PluginWarning names the plugin; returns ``fallback``."""
        reason = f"{self.origin}: {hook} {what}"
        self._usable = (False, reason)
        warnings.warn(f"polygrad: {reason}; backend {self.name!r} is unusable", PluginWarning, stacklevel=4)
        return fallback

    # -- services beyond the standard --------------------------------------
    def rng(self) -> Any:
        """The backend's shared random generator, seeded by ``pg.seed`` (inside
        :func:`draws_aside`, a generator of that block's own)."""
        aside = _aside.get()
        if aside is not None:
            rng = aside.get(self.name)
            if rng is None:
                rng = aside[self.name] = self.random_generator(0)
            return rng
        rng = self._rng
        if rng is None:
            with _lock:  # threads that draw first after pg.seed share one generator, not one each
                rng = self._rng
                if rng is None:
                    rng = self._rng = self.random_generator(_seed_state["seed"])
        return rng

    def random_generator(self, seed: int | None) -> Any:
        """A new random generator for this backend seeded with ``seed``."""
        self.xp  # load (and check usability) first
        gen = self._hook.polygrad_random_generator(backend=self.name, seed=seed)
        if gen is None:
            raise NotImplementedError(f"polygrad: backend {self.name!r} provides no random numbers (polygrad_random_generator)")
        if not (callable(getattr(gen, "normal", None)) and callable(getattr(gen, "uniform", None))):
            # (else the first draw failed with "'int' object has no attribute 'normal'", naming no plugin)
            self._broken("polygrad_random_generator", f"answered {gen!r}, not a generator with normal() and uniform()")
            self.require_usable()
        return _HalfOpen(gen, self.name)

    def scatter_add(self, x: Any, key: Any, values: Any) -> Any:
        """Copy of ``x`` with ``values`` added at ``x[key]``, repeated indices summed."""
        if self._scatter_add is None:
            self._scatter_add = self._hook.polygrad_scatter_add(backend=self.name)
        return self._scatter_add(x, key, values)

    @property
    def kernels(self) -> dict[str, Callable]:
        """Faster kernels by op name; none (with a PluginWarning) when the plugin's
        answer is not a dict of callables: every op then runs its generic kernel."""
        if self._kernels is None:
            try:
                kernels = self._hook.polygrad_kernels(backend=self.name)
            except Exception as exc:
                kernels, what = None, f"raised {type(exc).__name__}: {exc}"
            else:
                what = f"answered {kernels!r}, not a dict of callables"
            if not (isinstance(kernels, dict) and all(isinstance(k, str) and callable(f) for k, f in kernels.items())):
                warnings.warn(f"polygrad: {self.origin}: polygrad_kernels {what}; backend {self.name!r} "
                              "runs the generic kernels", PluginWarning, stacklevel=3)
                kernels = {}
            self._kernels = dict(kernels)
        return self._kernels

    def fuse_elementwise(self, nodes: tuple, inputs: tuple, outputs: tuple) -> Callable | None:
        """The plugin's fused kernel for a group of elementwise nodes (see
        ``polygrad_fuse_elementwise``), or None where it declines. A hook that raises or
        answers something that is not callable is a PluginWarning, and this backend is
        asked no more (its groups run node by node)."""
        if self._fuse_broken:
            return None
        try:
            kernel = self._hook.polygrad_fuse_elementwise(backend=self.name, nodes=nodes, inputs=inputs, outputs=outputs)
        except Exception as exc:
            kernel, what = None, f"raised {type(exc).__name__}: {exc}"
        else:
            if kernel is None or callable(kernel):
                return kernel
            what = f"answered {kernel!r}, not a callable"
        self._fuse_broken = True
        warnings.warn(f"polygrad: {self.origin}: polygrad_fuse_elementwise {what}; backend {self.name!r} "
                      "runs compiled programs unfused", PluginWarning, stacklevel=3)
        return None

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
        """The arrays computed and kept as (persisted) lazy arrays where the backend is lazy, each
        position an array object of its own. dask's persist gives one object for every input of
        the same key (equal values computed the same way: two zero biases): the Variables, states
        and outputs holding them were one array, and a raw ``x[...] = v`` on one (dask's
        ``__setitem__`` changes the object) changed them all. A repeat is a second handle
        (``copy.copy``: dask's shares the graph, no data)."""
        out, seen = [], set()
        for a in self._hook.polygrad_persist(backend=self.name, arrays=tuple(arrays)):
            if id(a) in seen:
                try:
                    a = copy.copy(a)
                except Exception:  # (an array type of a third-party backend that cannot be copied: as it is)
                    pass
            seen.add(id(a))
            out.append(a)
        return tuple(out)

    def forbid_compute(self) -> Any:
        """A context manager in which computing this backend's arrays raises, or
        None (eager backends)."""
        return self._hook.polygrad_forbid_compute(backend=self.name)

    def synchronize(self) -> None:
        self._hook.polygrad_synchronize(backend=self.name)

    def check_lazily(self, array: Any, check: Callable[[Any], None]) -> Any:
        """``array`` with ``check`` run on each chunk where it is computed (a lazy backend's
        ``polygrad_check_lazily``), or None where the backend cannot defer a check."""
        return self._hook.polygrad_check_lazily(backend=self.name, array=array, check=check)

    def memory_stats(self) -> dict[str, int] | None:
        return self._hook.polygrad_memory_stats(backend=self.name)


# ---------------------------------------------------------------------------
# The plugin manager and the registry
# ---------------------------------------------------------------------------

_lock = threading.RLock()
_pm: pluggy.PluginManager | None = None
_registry: dict[str, Backend] | None = None
_made: dict[str, tuple[tuple, Backend]] = {}  # by name: what the last registry's Backend was made from, and it
_extra_plugins: list[tuple[Any, str | None]] = []  # registered by hand; mutated in place, never rebound
# Per plugin manager: plugin name -> the distribution that installed it.
_distributions: weakref.WeakKeyDictionary[pluggy.PluginManager, dict[str, str]] = weakref.WeakKeyDictionary()
_seed_state: dict[str, int | None] = {"seed": None}


def _warn(message: str) -> None:
    warnings.warn(message, PluginWarning, stacklevel=5)


def _distribution(ep: importlib.metadata.EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    return dist.name if dist is not None else "an unknown distribution"


def _plugin_manager() -> pluggy.PluginManager:
    """The manager of every plugin: the installed ones, in order of entry-point name
    (then distribution name, so the order does not depend on where they are
    installed), then the ones registered by hand, in order of registration."""
    global _pm
    with _lock:
        if _pm is None:
            pm = pluggy.PluginManager("polygrad")
            pm.add_hookspecs(hookspecs)
            installed: dict[str, str] = {}
            eps = sorted(importlib.metadata.entry_points(group="polygrad"), key=lambda ep: (ep.name, _distribution(ep)))
            for ep in eps:
                if pm.is_blocked(ep.name):
                    continue
                if ep.name in installed:
                    _warn(
                        f"polygrad: two installed distributions publish the backend plugin {ep.name!r}: "
                        f"{installed[ep.name]} and {_distribution(ep)} ({ep.value}); the one of "
                        f"{installed[ep.name]} is used (the first by distribution name), the other is skipped"
                    )
                    continue
                try:
                    plugin = ep.load()
                    pm.register(plugin, name=ep.name)
                except Exception as exc:
                    warnings.warn(
                        f"polygrad: backend plugin {ep.name!r} ({ep.value}) failed to load and is skipped: "
                        f"{type(exc).__name__}: {exc}",
                        PluginWarning,
                        stacklevel=4,
                    )
                    continue
                installed[ep.name] = _distribution(ep)
            for plugin, name in _extra_plugins:
                if not pm.is_registered(plugin):
                    try:
                        pm.register(plugin, name=name)
                    except ValueError as exc:  # a name or object registered already
                        _warn(f"polygrad: plugin {name!r} registered by hand is skipped: {exc}")
            _distributions[pm] = installed
            _pm = pm
        return _pm


def _origin(pm: pluggy.PluginManager, plugin: Any) -> str:
    """How messages name a plugin: ``plugin 'numpy' of polygrad-numpy`` (its distribution)
    or ``plugin 'mine', registered by hand``."""
    name = pm.get_name(plugin)
    installed = _distributions.get(pm, {})
    if name in installed:
        return f"plugin {name!r} of {installed[name]}"
    for p, given in _extra_plugins:
        if p is plugin:
            label = given or getattr(plugin, "__name__", None) or type(plugin).__qualname__
            return f"plugin {label!r}, registered by hand"
    return f"plugin {name!r}"


def _by_hand_rank(plugin: Any) -> int:
    """The position of ``plugin`` among those registered by hand, -1 for an installed one."""
    for i, (p, _) in enumerate(_extra_plugins):
        if p is plugin:
            return i
    return -1


def _hook_relay(plugin: Any, name: str, info: BackendInfo, addons: list[tuple[Any, str]] = ()) -> Any:
    """The hooks of one backend: its plugin, then the add-ons (see :func:`_addons`), over
    polygrad's defaults (pluggy asks the last registered first)."""
    relay = pluggy.PluginManager("polygrad")
    relay.add_hookspecs(hookspecs)
    relay.register(_defaults, name="polygrad-defaults")
    relay.register(_defaults.LibraryCheck(info.module), name="polygrad-defaults-check")
    for addon, addon_name in addons:
        relay.register(addon, name=f"{addon_name} (add-on of {name})")
    relay.register(plugin, name=name)
    return relay.hook


def _addons(pm: pluggy.PluginManager) -> list[tuple[Any, str]]:
    """Plugins that implement hooks but declare no backend (no ``polygrad_backend_info``): in
    polygrad 0.1 every plugin was asked about every backend, so a backend's hooks could live
    in two plugin objects (a second entry point of its distribution, an add-on giving kernels);
    since f7b8aa9 only the declaring plugin was asked, and such hooks were dropped without a
    word (a lazy backend's pg.compute returned uncomputed arrays). Their hooks that take
    ``backend`` (0.1's form: they answer None for names that are not theirs) are asked again,
    after the declaring plugin, each switched off with a warning where it raises; a
    PluginWarning says the form is deprecated. A plugin that declares backends is asked only
    about its own."""
    declaring = {id(impl.plugin) for impl in pm.hook.polygrad_backend_info.get_hookimpls()}
    hooks: dict[int, list] = {}  # (by id: a plugin object may be unhashable)
    for caller in vars(pm.hook).values():
        if isinstance(caller, pluggy.HookCaller):
            for impl in caller.get_hookimpls():
                if id(impl.plugin) not in declaring:
                    hooks.setdefault(id(impl.plugin), []).append((caller.name, impl))
    found = []
    for name, plugin in pm.list_name_plugin():
        if plugin is None or id(plugin) not in hooks:
            continue
        origin = _origin(pm, plugin)
        kept = [(hook, impl) for hook, impl in hooks[id(plugin)] if "backend" in impl.argnames]
        dropped = sorted(hook for hook, impl in hooks[id(plugin)] if "backend" not in impl.argnames)
        _warn(f"polygrad: {origin} implements polygrad hooks but declares no backend (deprecated: implement a "
              f"backend's hooks in the plugin object whose polygrad_backend_info declares it); as in polygrad 0.1 "
              f"its hooks that take `backend` are asked about every backend, after the plugin that declares it"
              + (f"; {', '.join(dropped)} take no `backend` and are not asked" if dropped else ""))
        if kept:
            found.append((_AddOn(origin, kept, plugin), name))
    return found


class _AddOn:
    """The hooks of an add-on plugin (see :func:`_addons`) that take ``backend``; one that raises
    is a PluginWarning naming the plugin, and answers None (the declaring plugin's or polygrad's
    default answer stands), so that an add-on never breaks a backend it does not provide."""

    def __init__(self, origin: str, hooks: list, plugin: Any) -> None:
        self.plugin = plugin  # (not a hook: pluggy registers only the hookimpls below)
        for hook, impl in hooks:
            setattr(self, hook, self._guarded(origin, hook, impl.function, impl.argnames.index("backend")))

    @staticmethod
    def _guarded(origin: str, hook: str, fn: Callable, at: int) -> Callable:
        @functools.wraps(fn)  # (the hookimpl marker and the argument names pluggy reads)
        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except Exception as exc:
                backend = args[at] if at < len(args) else kwargs.get("backend")
                _warn(f"polygrad: {origin} (an add-on: it declares no backend) raised in {hook} for backend "
                      f"{backend!r} and is ignored there: {type(exc).__name__}: {exc}")
                return None

        return call


def _declarations(pm: pluggy.PluginManager) -> dict[str, list[tuple[Any, BackendInfo]]]:
    """Every backend name: the plugins declaring it, each with its BackendInfo, in registration order."""
    found: dict[str, list[tuple[Any, BackendInfo]]] = {}
    for impl in pm.hook.polygrad_backend_info.get_hookimpls():
        try:
            answer = impl.function()
        except Exception as exc:
            _warn(
                f"polygrad: backend plugin {impl.plugin_name!r} failed in polygrad_backend_info and is skipped: "
                f"{type(exc).__name__}: {exc}"
            )
            continue
        for info in answer if isinstance(answer, (list, tuple)) else [answer]:
            if not isinstance(info, BackendInfo):
                _warn(
                    f"polygrad: plugin {impl.plugin_name!r} answered polygrad_backend_info with {info!r}, "
                    "not a polygrad.hookspecs.BackendInfo; skipped"
                )
                continue
            claims = found.setdefault(info.name, [])
            if any(p is impl.plugin for p, _ in claims):
                _warn(f"polygrad: {_origin(pm, impl.plugin)} declares backend {info.name!r} twice; the first is used")
                continue
            claims.append((impl.plugin, info))
    return found


def _provider(pm: pluggy.PluginManager, name: str, claims: list[tuple[Any, BackendInfo]]) -> tuple[Any, BackendInfo]:
    """The one plugin that provides backend ``name`` among those declaring it.

    A plugin registered by hand wins (the latest registered): it is what this
    process asked for. Among installed plugins, the one whose entry point is
    named like the backend wins (an entry-point name is unique in an
    environment), else the first by entry-point name; so a third party
    declaring ``numpy`` never replaces the numpy plugin. Not silent: a
    PluginWarning names every declaring plugin and the one chosen.
    """
    if len(claims) == 1:
        return claims[0]
    by_hand = [c for c in claims if _by_hand_rank(c[0]) >= 0]
    named = [c for c in claims if pm.get_name(c[0]) == name]
    if by_hand:
        chosen, why = max(by_hand, key=lambda c: _by_hand_rank(c[0])), "the latest registered by hand"
    elif named:
        chosen, why = named[0], f"its entry point is named {name!r}"
    else:
        chosen, why = min(claims, key=lambda c: pm.get_name(c[0])), "the first by entry-point name"
    others = " and ".join(_origin(pm, p) for p, _ in claims if p is not chosen[0])
    _warn(
        f"polygrad: backend {name!r} is declared by {_origin(pm, chosen[0])} and by {others}; "
        f"{_origin(pm, chosen[0])} provides it ({why}); the other declarations are ignored"
    )
    return chosen


def by_name() -> dict[str, Backend]:
    """Every declared backend, by name (built on first use, rebuilt after a plugin comes or goes).

    A rebuild keeps the Backend of a name whose sources did not change (:func:`_sources`): the
    same object, with its cached answers and its random generator. It made new ones for every
    name: the draws after registering any plugin repeated those after the last ``pg.seed``, and
    arrays looked up before and after the rebuild were of "two backends, 'numpy' and 'numpy'".
    A backend whose plugin stays but whose add-ons changed is made anew, and keeps the generator."""
    global _registry, _made
    reg = _registry
    if reg is not None:
        return reg
    with _lock:
        if _registry is None:
            pm = _plugin_manager()
            built, made = {}, {}
            addons = _addons(pm)
            for name, claims in _declarations(pm).items():
                plugin, info = _provider(pm, name, claims)
                sources = _sources(pm, plugin, info, addons)
                old_sources, backend = _made.get(name, (None, None))
                if not _same(sources, old_sources):
                    previous = backend
                    backend = Backend(info, _hook_relay(plugin, pm.get_name(plugin), info, addons), plugin,
                                      sources[1][2])
                    if previous is not None and old_sources[0][0] is pm and previous.plugin is plugin:
                        backend._rng = previous._rng  # the same plugin of the same manager: its stream goes on
                built[name] = backend
                made[name] = (sources, backend)
            gone = [b for _, b in _made.values() if not any(b is n for n in built.values())]
            _registry, _made = built, made
            if gone:
                _forget(gone)
        return _registry


def _forget(gone: list[Backend]) -> None:
    """Drop what polygrad caches per Backend object (each op row's kernel, the Array API
    namespace and its info) for backends a rebuild removed or made anew: kept, every
    register/unregister of a plugin left its Backend, plugin and namespace alive for good.
    (A Backend still held somewhere fills them again on use.)"""
    from polygrad.core.op import REGISTRY

    for op in list(REGISTRY.values()):
        for b in gone:
            op._impl.pop(b, None)
    api = sys.modules.get("polygrad.array_api")  # (not loaded: nothing cached)
    if api is not None:
        for b in gone:
            api._cache.pop(b, None)
            api._infos.pop(b, None)


def _sources(pm: pluggy.PluginManager, plugin: Any, info: BackendInfo, addons: list) -> tuple[tuple, tuple]:
    """What a Backend is made from: ``(objects, values)``: the manager, the plugin and the add-ons;
    the plugin's name, its BackendInfo, how messages name it, the add-ons' names."""
    return ((pm, plugin, *(a.plugin for a, _ in addons)),
            (pm.get_name(plugin), info, _origin(pm, plugin), tuple(n for _, n in addons)))


def _same(sources: tuple, old: tuple | None) -> bool:
    """Whether two :func:`_sources` are the same: the objects by identity (a plugin may define
    ``==``: a new plugin equal to the old one is still another), the values by equality."""
    return (old is not None and len(sources[0]) == len(old[0])
            and all(a is b for a, b in zip(sources[0], old[0])) and sources[1] == old[1])


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
    """Undo :func:`register_plugin`: ``plugin`` is the plugin object or the ``name`` it was
    registered with. ValueError for one that is not registered (a name was taken for an
    unknown object, and the plugin stayed in force without a word)."""
    global _registry
    with _lock:
        if isinstance(plugin, str):
            named = [p for p, n in _extra_plugins if n == plugin]
            if not named and _pm is not None:
                named = [p for p in [_pm.get_plugin(plugin)] if p is not None]
            if not named:
                by_hand = [n for _, n in _extra_plugins if n is not None]
                raise ValueError(f"polygrad.unregister_plugin: no plugin is registered under the name {plugin!r} "
                                 f"(plugins registered by hand with a name: {by_hand or 'none'})")
        else:
            named = [plugin]
            if not any(p is plugin for p, _ in _extra_plugins) and not (_pm is not None and _pm.is_registered(plugin)):
                raise ValueError(f"polygrad.unregister_plugin: {plugin!r} is not registered")
        for obj in named:
            _extra_plugins[:] = [(p, n) for p, n in _extra_plugins if p is not obj]
            if _pm is not None and _pm.is_registered(obj):
                _pm.unregister(obj)
            # its backends go now, not at the next rebuild (which makes new ones for their names)
            mine = [n for n, (sources, _) in _made.items() if sources[0][1] is obj]
            _forget([_made.pop(n)[1] for n in mine])
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
        close = difflib.get_close_matches(str(name), list(reg), n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ValueError(f"polygrad: unknown backend {name!r}; {hint}available backends: {known}") from None


def resolve_type(t: type) -> Backend:
    """The resolver installed into the core: which loaded backend owns type ``t``.

    A backend claims the types its plugin lists and their subclasses. The most
    specific claim wins (``t`` itself before its base classes). Equal claims
    are a conflict, reported with a PluginWarning naming the backends and
    their plugins, and resolved in the order of :func:`_type_precedence`.
    """
    reg = by_name()
    mro = t.__mro__
    claims: list[tuple[int, Backend]] = []  # (distance of the claimed class from t, backend)
    for backend in reg.values():
        if backend.info.module not in sys.modules:
            continue
        hits = [mro.index(c) if c in mro else len(mro) for c in backend.array_types if issubclass(t, c)]
        if hits:
            claims.append((min(hits), backend))
    if not claims:
        if t is type(None):
            raise TypeError(
                "polygrad: got None where an array or a number was expected (in a symbolic graph, a dimension "
                "that is not known is None: x[x > 0].shape[0], say; compute with the array, e.g. pg.mean, or "
                "declare the shape with T.tensor(dtype, shape))"
            )
        names = ", ".join(sorted(reg)) or "none"
        raise TypeError(
            f"polygrad: no backend claims arrays of type {t.__module__}.{t.__qualname__}; "
            f"installed backends: {names}. Install a plugin for that library or convert the data with pg.asarray."
        )
    best = min(d for d, _ in claims)
    order = list(reg.values())
    tied = sorted((b for d, b in claims if d == best), key=lambda b: _type_precedence(b, order), reverse=True)
    if len(tied) > 1:
        chosen, runner_up = tied[0], tied[1]
        why = ["its plugin was registered by hand, the latest", "its priority is higher", "it comes first by entry-point name"][
            next(i for i, (a, b) in enumerate(zip(_type_precedence(chosen, order), _type_precedence(runner_up, order)))
                 if a != b)]
        _warn(
            f"polygrad: arrays of type {t.__module__}.{t.__qualname__} are claimed by "
            + " and by ".join(f"backend {b.name!r} ({b.origin})" for b in tied)
            + f"; they belong to {chosen.name!r} ({why})"
        )
    return tied[0]


def _type_precedence(b: Backend, order: list[Backend]) -> tuple[int, int, int]:
    """Who owns a type claimed equally by several backends, highest first: a plugin
    registered by hand (the latest first), then the higher ``BackendInfo.priority``,
    then the earlier registered (installed plugins register in order of entry-point name)."""
    return (_by_hand_rank(b.plugin), b.info.priority, -order.index(b))


_aside: contextvars.ContextVar[dict | None] = contextvars.ContextVar("polygrad_draws_aside", default=None)


@contextlib.contextmanager
def draws_aside() -> Iterator[None]:
    """Random draws inside the block come from generators of its own (one per backend, seeded
    0), not the shared ones: tracing a compiled function runs its random kernels once to learn
    their shapes, and took those draws from the shared generator, so that after ``pg.seed`` its
    first call gave other numbers than every later one, and than eager code."""
    token = _aside.set({})
    try:
        yield
    finally:
        _aside.reset(token)


def reseed(value: int | None) -> None:
    """Seed every backend's shared random generator (the next ``rng()`` makes a new one)."""
    with _lock:
        _seed_state["seed"] = value
        for b in by_name().values():
            b._rng = None


_dispatch.set_resolver(resolve_type)

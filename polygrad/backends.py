"""Backend registry: the pluggy manager, lazy discovery, and the current backend.

Plugins are found through the entry-point group ``polygrad`` the first time a
backend is needed, not at ``import polygrad``. A backend's library is imported
the first time that backend is used. A plugin that fails to load is reported as
a warning naming it and the error; every other backend keeps working.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import importlib.metadata
import math
import sys
import threading
import warnings
from typing import Any, Callable, Iterator, Protocol

import pluggy

from polygrad import hookspecs
from polygrad.core import dispatch as _dispatch

__all__ = [
    "BackendInfo",
    "Backend",
    "BackendStatus",
    "RandomGenerator",
    "backends",
    "get_backend",
    "set_backend",
    "using_backend",
    "get_array_namespace",
    "asarray",
    "to_backend",
    "register_plugin",
    "unregister_plugin",
    "seed",
    "compute",
    "persist",
]


@dataclasses.dataclass(frozen=True)
class BackendInfo:
    """Static description of a backend, given by its plugin without importing anything.

    :param name: the name users pass to ``pg.set_backend``.
    :param module: the top-level module of the array library (``"numpy"``); its
        presence in ``sys.modules`` tells polygrad whether arrays of this
        backend can exist yet.
    :param device: ``"cpu"`` or ``"gpu"``; user Functions' ``forward_cpu`` /
        ``forward_gpu`` are chosen by it.
    :param lazy: arrays are computed only on request (dask).
    :param inplace: arrays support ``x[key] = v`` writes.
    :param float64, complex: the dtypes exist.
    :param data_dependent_shapes: boolean masks and ``nonzero`` give known shapes.
    :param priority: the usable backend with the highest priority is the default.
    """

    name: str
    module: str
    device: str = "cpu"
    lazy: bool = False
    inplace: bool = True
    float64: bool = True
    complex: bool = True
    data_dependent_shapes: bool = True
    priority: int = 0


class RandomGenerator(Protocol):
    """What ``polygrad_random_generator`` returns: seeded random arrays of one backend."""

    def normal(self, shape: tuple[int, ...], *, dtype: Any, mean: float = 0.0, std: float = 1.0) -> Any: ...

    def uniform(self, shape: tuple[int, ...], *, dtype: Any, low: float = 0.0, high: float = 1.0) -> Any: ...


@dataclasses.dataclass(frozen=True)
class BackendStatus:
    """One row of ``pg.backends()``."""

    name: str
    usable: bool
    reason: str
    device: str
    lazy: bool


class Backend:
    """A loaded backend: its name, Array API namespace ``xp`` and extra services.

    Every hook answer is asked once and cached here, so nothing on the per-op
    path calls pluggy.
    """

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
        self.raw_ops: Any = None  # the ops namespace over raw arrays, filled by polygrad.ops

    def __repr__(self) -> str:
        return f"<polygrad backend {self.name!r} ({self.device}{', lazy' if self.lazy else ''})>"

    def __reduce__(self) -> tuple:
        # Pickled by name (graphs sent to dask workers refer to their backend).
        return (get_backend, (self.name,))

    # -- loading -----------------------------------------------------------
    @property
    def xp(self) -> Any:
        """The backend's Array API namespace (imports the library on first use)."""
        if self._xp is None:
            ok, reason = self.check_usable()
            if not ok:
                raise RuntimeError(f"polygrad: backend {self.name!r} is not usable here: {reason}")
            xp = self._hook.polygrad_array_namespace(backend=self.name)
            if xp is None:
                raise RuntimeError(f"polygrad: plugin for backend {self.name!r} returned no array namespace")
            self._xp = xp
        return self._xp

    @property
    def array_types(self) -> tuple[type, ...]:
        if self._types is None:
            types = self._hook.polygrad_array_types(backend=self.name)
            self._types = tuple(types or ())
        return self._types

    def check_usable(self) -> tuple[bool, str]:
        """``(usable, reason)``, asked once."""
        if self._usable is None:
            try:
                answer = self._hook.polygrad_check_usable(backend=self.name)
            except Exception as exc:  # a broken check is a reason, not a crash
                answer = (False, f"{type(exc).__name__}: {exc}")
            self._usable = tuple(answer) if answer is not None else (True, "")
        return self._usable  # type: ignore[return-value]

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
            self._scatter_add = self._hook.polygrad_scatter_add(backend=self.name) or _generic_scatter_add(self)
        return self._scatter_add(x, key, values)

    @property
    def kernels(self) -> dict[str, Callable]:
        if self._kernels is None:
            self._kernels = dict(self._hook.polygrad_kernels(backend=self.name) or {})
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
            self._owns = self._hook.polygrad_owns_memory(backend=self.name) or (lambda a: False)
        return self._owns(array)

    def materialize(self, arrays: tuple[Any, ...]) -> tuple[Any, ...]:
        out = self._hook.polygrad_materialize(backend=self.name, arrays=tuple(arrays))
        return tuple(arrays) if out is None else tuple(out)

    def persist(self, arrays: tuple[Any, ...]) -> tuple[Any, ...]:
        out = self._hook.polygrad_persist(backend=self.name, arrays=tuple(arrays))
        return tuple(arrays) if out is None else tuple(out)

    def forbid_compute(self) -> Any:
        """A context manager in which computing this backend's arrays raises, or
        None (eager backends)."""
        return self._hook.polygrad_forbid_compute(backend=self.name)

    def synchronize(self) -> None:
        self._hook.polygrad_synchronize(backend=self.name)

    def memory_stats(self) -> dict[str, int] | None:
        return self._hook.polygrad_memory_stats(backend=self.name)


def _generic_scatter_add(backend: Backend) -> Callable:
    """Scatter-add with the standard only. Basic keys have no repeats; keys of
    integer arrays (one per leading axis, as the standard allows) become one
    flat index, and repeated indices are summed by a one-hot matmul."""

    def scatter_add(x: Any, key: Any, values: Any) -> Any:
        xp = backend.xp
        if not isinstance(key, tuple):
            key = (key,)
        out = xp.asarray(x, copy=True)
        if not any(_dispatch.is_array(k) for k in key):
            out[key] = out[key] + values
            return out
        if not all(_dispatch.is_array(k) for k in key) or len(key) > out.ndim:
            raise NotImplementedError(
                f"polygrad: backend {backend.name!r} has no polygrad_scatter_add hook, and the standard-only "
                f"fallback handles basic keys or integer arrays on the leading axes only (got {key!r})"
            )
        idx = xp.broadcast_arrays(*key)
        lead = out.shape[: len(key)]
        flat = xp.zeros(idx[0].shape, dtype=xp.int64)
        for i, n in zip(idx, lead):
            flat = flat * n + xp.astype(i % n, xp.int64)
        flat = xp.reshape(flat, (-1,))
        rest = tuple(out.shape[len(key):])
        n_lead = math.prod(lead)
        values = xp.broadcast_to(xp.asarray(values, dtype=out.dtype), tuple(idx[0].shape) + rest)
        values = xp.reshape(values, (flat.shape[0], math.prod(rest)))
        onehot = xp.astype(xp.reshape(flat, (-1, 1)) == xp.reshape(xp.arange(n_lead, dtype=xp.int64), (1, -1)), out.dtype)
        added = xp.matmul(xp.matrix_transpose(onehot), values)
        return out + xp.reshape(added, tuple(out.shape))

    return scatter_add


# ---------------------------------------------------------------------------
# The plugin manager
# ---------------------------------------------------------------------------

_lock = threading.RLock()
_pm: pluggy.PluginManager | None = None
_registry: dict[str, Backend] | None = None
_extra_plugins: list[tuple[Any, str | None]] = []
_default_name: str | None = None
_current: contextvars.ContextVar[Backend | None] = contextvars.ContextVar("polygrad_backend", default=None)
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
                        stacklevel=3,
                    )
            for plugin, name in _extra_plugins:
                if not pm.is_registered(plugin):
                    pm.register(plugin, name=name)
            _pm = pm
        return _pm


def _backends() -> dict[str, Backend]:
    global _registry
    reg = _registry
    if reg is not None:
        return reg
    with _lock:
        if _registry is None:
            pm = _plugin_manager()
            reg = {}
            for plugin_name, plugin in pm.list_name_plugin():
                impl = getattr(plugin, "polygrad_backend_info", None)
                if impl is None:
                    continue
                try:
                    answer = impl()
                except Exception as exc:
                    warnings.warn(
                        f"polygrad: backend plugin {plugin_name!r} failed in polygrad_backend_info and is skipped: "
                        f"{type(exc).__name__}: {exc}",
                        RuntimeWarning,
                        stacklevel=3,
                    )
                    continue
                for info in answer if isinstance(answer, (list, tuple)) else [answer]:
                    if not isinstance(info, BackendInfo):
                        warnings.warn(
                            f"polygrad: plugin {plugin_name!r} answered polygrad_backend_info with {info!r}, "
                            "not a polygrad.backends.BackendInfo; skipped",
                            RuntimeWarning,
                            stacklevel=3,
                        )
                        continue
                    reg[info.name] = Backend(info, pm.hook, plugin)
            _registry = reg
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
    global _registry, _default_name
    with _lock:
        _extra_plugins[:] = [(p, n) for p, n in _extra_plugins if p is not plugin]
        if _pm is not None and _pm.is_registered(plugin):
            _pm.unregister(plugin)
        _registry = None
        _default_name = None if _default_name not in _names_after_reload() else _default_name
        _dispatch.clear_cache()


def _names_after_reload() -> list[str]:
    return list(_backends())


def _resolve_type(t: type) -> Backend:
    """The resolver installed into the core: which loaded backend owns type ``t``.

    When several backends claim ``t``, the most recently registered plugin wins
    (as pluggy calls later plugins first), so a plugin registered by hand
    overrides an installed one.
    """
    reg = _backends()
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




# ---------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------


def backends() -> dict[str, BackendStatus]:
    """Every known backend, whether it is usable here, and why not."""
    out = {}
    for name, b in sorted(_backends().items()):
        ok, reason = b.check_usable()
        out[name] = BackendStatus(name, ok, reason, b.device, b.lazy)
    return out


def _lookup(name: str) -> Backend:
    if isinstance(name, Backend):
        return name
    reg = _backends()
    try:
        return reg[name]
    except KeyError:
        known = ", ".join(sorted(reg)) or "none (install polygrad-numpy)"
        raise ValueError(f"polygrad: unknown backend {name!r}; available backends: {known}") from None


def _require_usable(b: Backend) -> Backend:
    ok, reason = b.check_usable()
    if not ok:
        raise RuntimeError(f"polygrad: backend {b.name!r} is not usable here: {reason}")
    return b


def set_backend(name: str) -> Backend:
    """Make ``name`` the default backend for new arrays (process-wide)."""
    global _default_name
    b = _require_usable(_lookup(name))
    b.xp  # import now, so errors surface here
    _default_name = b.name
    return b


@contextlib.contextmanager
def using_backend(name: str) -> Iterator[Backend]:
    """Use ``name`` as the current backend inside a ``with`` block (thread- and task-local)."""
    b = _require_usable(_lookup(name))
    b.xp
    token = _current.set(b)
    try:
        yield b
    finally:
        _current.reset(token)


def get_backend(name: str | None = None) -> Backend:
    """The current backend (or the one named ``name``)."""
    if name is not None:
        return _lookup(name)
    b = _current.get()
    if b is not None:
        return b
    if _default_name is not None:
        return _lookup(_default_name)
    reg = _backends()
    candidates = sorted(reg.values(), key=lambda b: -b.info.priority)
    for b in candidates:
        if b.check_usable()[0]:
            return b
    raise RuntimeError(
        "polygrad: no usable backend is installed; install one, e.g. `pip install -e plugins/polygrad-numpy`. "
        f"Known backends: {', '.join(f'{n} ({s.reason})' for n, s in backends().items()) or 'none'}"
    )


def get_array_namespace(*arrays: Any) -> Any:
    """The Array API namespace of the arrays' backend (Variables are unwrapped)."""
    return _backend_of_args(arrays, "get_array_namespace").xp


def _backend_of_args(arrays: tuple[Any, ...], opname: str) -> Backend:
    found: Backend | None = None
    for a in arrays:
        data = getattr(a, "_data", a) if type(a).__name__ == "Variable" else a
        if data is None or isinstance(data, (bool, int, float, complex)):
            continue
        b = _dispatch.backend_of_type(type(data))
        if found is not None and b is not found:
            raise TypeError(
                f"polygrad: {opname} got arrays of two backends, {found.name!r} and {b.name!r}; "
                f"move one with pg.to_backend(x, {found.name!r})"
            )
        found = b
    if found is None:
        return get_backend()
    return found


def asarray(obj: Any, dtype: Any = None, *, backend: str | None = None, copy: bool | None = None) -> Any:
    """Create an array of the current backend (or ``backend``) from ``obj``.

    ``dtype`` may be a dtype of that backend or its name (``"float32"``).
    Returns a raw array; wrap it in ``pg.Variable`` to track gradients.
    """
    b = get_backend(backend)
    xp = b.xp
    if isinstance(dtype, str):
        try:
            dtype = getattr(xp, dtype)
        except AttributeError:
            raise ValueError(f"polygrad.asarray: backend {b.name!r} has no dtype {dtype!r}") from None
    if type(obj).__name__ == "Variable" and hasattr(obj, "_data"):
        obj = obj._data
    if _dispatch.is_array(obj) and _dispatch.backend_of_type(type(obj)) is not b:
        obj = to_backend(obj, b.name)
    return xp.asarray(obj, dtype=dtype, copy=copy)


def to_backend(x: Any, name: str) -> Any:
    """Move an array (or a Variable's data, returning a new Variable) to backend ``name``.

    Uses DLPack where both sides support it, else the target's ``asarray``
    (buffer and ``__array__`` protocols). A lazy source is materialized first.
    """
    from polygrad.core.variable import Variable

    if isinstance(x, Variable):
        out = Variable(to_backend(x._data, name), requires_grad=x.requires_grad, name=x.name)
        return out
    target = _require_usable(_lookup(name))
    source = _dispatch.backend_of_type(type(x))
    if source is target:
        return x
    if source.lazy:
        (x,) = source.materialize((x,))
    xp = target.xp
    errors = []
    if hasattr(xp, "from_dlpack") and hasattr(x, "__dlpack__"):
        try:
            return xp.from_dlpack(x)
        except Exception as exc:
            errors.append(f"from_dlpack: {exc}")
    try:
        return xp.asarray(x)
    except Exception as exc:
        errors.append(f"asarray: {exc}")
    raise TypeError(f"polygrad.to_backend: cannot move {source.name!r} array to {target.name!r}: " + "; ".join(errors))


def compute(*items: Any) -> tuple:
    """Materialize several Variables or arrays in one pass (lazy backends compute
    shared work once); returns concrete arrays, one per item, in order.

    Items of eager backends are returned as they are.
    """
    from polygrad.core.variable import Variable

    arrays = [x._data if isinstance(x, Variable) else x for x in items]
    out = list(arrays)
    by_backend: dict[Any, list[int]] = {}
    for i, a in enumerate(arrays):
        if a is None or isinstance(a, (bool, int, float, complex)):
            continue
        by_backend.setdefault(_dispatch.backend_of_type(type(a)), []).append(i)
    for b, idx in by_backend.items():
        done = b.materialize(tuple(arrays[i] for i in idx))
        for i, a in zip(idx, done):
            out[i] = a
    return tuple(out)


def persist(*items: Any) -> tuple:
    """Like :func:`compute`, but a lazy backend keeps the results as (persisted)
    lazy arrays; Variables get their data replaced and are returned as they are."""
    from polygrad.core.variable import Variable

    arrays = [x._data if isinstance(x, Variable) else x for x in items]
    out = list(items)
    by_backend: dict[Any, list[int]] = {}
    for i, a in enumerate(arrays):
        if a is None or isinstance(a, (bool, int, float, complex)):
            continue
        by_backend.setdefault(_dispatch.backend_of_type(type(a)), []).append(i)
    for b, idx in by_backend.items():
        done = b.persist(tuple(arrays[i] for i in idx))
        for i, a in zip(idx, done):
            if isinstance(items[i], Variable):
                items[i]._data = a
            else:
                out[i] = a
    return tuple(out)


def seed(value: int | None) -> None:
    """Seed every backend's shared random generator (``pg.seed(0)`` makes runs repeatable)."""
    _seed_state["seed"] = value
    for b in _backends().values():
        b._rng = None


_dispatch.set_resolver(_resolve_type, get_backend)

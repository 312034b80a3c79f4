"""Backends, the user's side: list them, choose the current one, create and move arrays.

``pg.backends()`` lists the backends, and ``polygrad.backends`` is this module.
Both hold because calling this module lists them: its class defines
``__call__`` (the same as :func:`backends`). So ``import polygrad.backends as
B`` gives a module, ``pg.backends()`` keeps working, and ``from
polygrad.backends import BackendInfo, Backend, get_backend, ...`` finds every
name it found before. (Importing the function ``backends`` into ``polygrad``
used to hide this module behind it; renaming either would break user code.)

Where the rest lives: the plugin contract and its value types
(:class:`BackendInfo`, :class:`RandomGenerator`) in :mod:`polygrad.hookspecs`;
the registry, discovery and the :class:`Backend` facade in
:mod:`polygrad._registry`; polygrad's default hook answers in
:mod:`polygrad._defaults`. This module re-exports what plugins and users
imported from here.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import sys
import types
from typing import Any, Callable, Iterator

from polygrad import _defaults, _registry
from polygrad._registry import Backend, register_plugin, unregister_plugin
from polygrad.core import dispatch as _dispatch
from polygrad.core.integers import as_int
from polygrad.core.variable import Variable, is_floating
from polygrad.hookspecs import BackendInfo, PluginWarning, RandomGenerator

__all__ = [
    "BackendInfo",
    "PluginWarning",
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
class BackendStatus:
    """One row of ``pg.backends()``."""

    name: str
    usable: bool
    reason: str
    device: str
    lazy: bool


_default_name: str | None = None  # set_backend's choice, process-wide
_current: contextvars.ContextVar[Backend | None] = contextvars.ContextVar("polygrad_backend", default=None)
# The registry's state, under the names it had here (tests/test_docs.py snapshots them).


def backends() -> dict[str, BackendStatus]:
    """Every known backend, whether it is usable here, and why not."""
    out = {}
    for name, b in sorted(_registry.by_name().items()):
        ok, reason = b.check_usable()
        out[name] = BackendStatus(name, ok, reason, b.device, b.lazy)
    return out


# ---------------------------------------------------------------------------
# The current backend
# ---------------------------------------------------------------------------


def set_backend(name: str) -> Backend:
    """Make ``name`` the default backend for new arrays (process-wide)."""
    global _default_name
    b = _registry.lookup(name).require_usable()
    b.xp  # import now, so errors surface here
    _default_name = b.name
    return b


@contextlib.contextmanager
def using_backend(name: str) -> Iterator[Backend]:
    """Use ``name`` as the current backend inside a ``with`` block (thread- and task-local)."""
    b = _registry.lookup(name).require_usable()
    b.xp
    token = _current.set(b)
    try:
        yield b
    finally:
        _current.reset(token)


def get_backend(name: str | None = None) -> Backend:
    """The current backend (or the one named ``name``).

    The current one is the innermost ``using_backend``, else the one given to
    ``set_backend`` (while its plugin is registered), else the usable backend
    of highest priority whose namespace loads (one that fails to load is
    skipped with a PluginWarning naming its plugin).
    """
    if name is not None:
        return _registry.lookup(name)
    b = _current.get()
    if b is not None:
        return b
    reg = _registry.by_name()
    if _default_name in reg:
        return reg[_default_name]
    for b in sorted(reg.values(), key=lambda b: -b.info.priority):
        if b.loads():
            return b
    raise RuntimeError(
        "polygrad: no usable backend is installed; install one, e.g. `pip install -e plugins/polygrad-numpy`. "
        f"Known backends: {', '.join(f'{n} ({s.reason})' for n, s in backends().items()) or 'none'}"
    )


def get_array_namespace(*arrays: Any) -> Any:
    """The Array API namespace of the arrays' backend (Variables are unwrapped)."""
    return _dispatch.backend_of_args(arrays, "get_array_namespace").xp


# ---------------------------------------------------------------------------
# Creating and moving arrays
# ---------------------------------------------------------------------------


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
    if isinstance(obj, Variable):
        obj = obj._data
    if _dispatch.is_array(obj) and _dispatch.backend_of_type(type(obj)) is not b:
        obj = to_backend(obj, b.name)
    out = xp.asarray(obj, dtype=dtype, copy=copy)
    return out if backend is None else b.made(out, "backends.asarray")


def _default_device(xp: Any) -> Any:
    """The namespace's default device, or None where its inspection API says nothing."""
    try:
        return xp.__array_namespace_info__().default_device()
    except Exception:
        return None


def to_backend(x: Any, name: str) -> Any:
    """Move an array (or a Variable's data, returning a new Variable) to backend ``name``.

    Uses DLPack where both sides support it (asking for a copy on the target's default
    device where the array lives on another, e.g. a GPU array to numpy), else the target's
    ``asarray`` (buffer and ``__array__`` protocols). A lazy source is materialized first.
    """
    if isinstance(x, Variable):
        if x.requires_grad and not is_floating(x._data):  # (a leaf that is not floating cannot require grad)
            raise TypeError(f"polygrad.to_backend: {x._describe()} of dtype {x.dtype} on backend {x.backend.name!r} "
                            f"requires grad (a stochastic function's sample), but its copy would be a leaf, and a "
                            f"leaf that is not floating cannot require grad; no gradient crosses backends: use "
                            f"pg.to_backend(x.detach(), {name!r}) to move the data")
        return Variable(to_backend(x._data, name), requires_grad=x.requires_grad, name=x.name)
    target = _registry.lookup(name).require_usable()
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
        # On another device (a GPU array to a CPU library): ask the producer for a copy on the
        # target's default device (from_dlpack's ``device``, standard 2023.12).
        device = _default_device(xp)
        if device is not None:
            try:
                return xp.from_dlpack(x, device=device)
            except Exception as exc:
                errors.append(f"from_dlpack(device={device!r}): {exc}")
    try:
        return xp.asarray(x)
    except Exception as exc:
        errors.append(f"asarray: {exc}")
    raise TypeError(f"polygrad.to_backend: cannot move {source.name!r} array to {target.name!r}: " + "; ".join(errors))


# ---------------------------------------------------------------------------
# Computing lazy arrays
# ---------------------------------------------------------------------------


def _by_backend(arrays: list[Any], work: Callable[[Backend, tuple], tuple]) -> list[Any]:
    """``arrays`` with each backend's arrays replaced by ``work(backend, its arrays)``,
    one call per backend; scalars and None are kept as they are."""
    groups: dict[Backend, list[int]] = {}
    for i, a in enumerate(arrays):
        if a is not None and not isinstance(a, _dispatch.SCALARS):
            groups.setdefault(_dispatch.backend_of_type(type(a)), []).append(i)
    out = list(arrays)
    for b, idx in groups.items():
        for i, a in zip(idx, work(b, tuple(arrays[i] for i in idx))):
            out[i] = a
    return out


def compute(*items: Any) -> tuple:
    """Materialize several Variables or arrays in one pass (lazy backends compute
    shared work once); returns concrete arrays, one per item, in order.

    Items of eager backends are returned as they are.
    """
    arrays = [x._data if isinstance(x, Variable) else x for x in items]
    return tuple(_by_backend(arrays, lambda b, group: b.materialize(group)))


def persist(*items: Any) -> tuple:
    """Like :func:`compute`, but a lazy backend keeps the results as (persisted)
    lazy arrays; Variables get their data replaced and are returned as they are."""
    arrays = [x._data if isinstance(x, Variable) else x for x in items]
    done = _by_backend(arrays, lambda b, group: b.persist(group))
    for item, a in zip(items, done):
        if isinstance(item, Variable):
            item._data = a
    return tuple(item if isinstance(item, Variable) else a for item, a in zip(items, done))


def seed(value: int | None) -> None:
    """Seed every backend's shared random generator (``pg.seed(0)`` makes runs repeatable):
    ``value`` is a non-negative integer (NumPy's too), or None for fresh entropy."""
    if value is not None:  # (-1, 1.5 and "abc" were taken, and failed at the first draw, or never)
        rule = f"polygrad.seed: the seed must be a non-negative integer or None, got {value!r}"
        n = as_int(value)
        if n is None:
            raise TypeError(rule)
        if n < 0:
            raise ValueError(rule)
        value = n
    _registry.reseed(value)


def _generic_scatter_add(backend: Backend) -> Callable[[Any, Any, Any], Any]:
    """The standard-only scatter-add (now ``polygrad._defaults.scatter_add``); kept for
    tests/test_ops_chapters.py, which swaps it in."""
    return _defaults.scatter_add


_dispatch.set_current(get_backend)


class _BackendsModule(types.ModuleType):
    """The class of ``polygrad.backends``: calling the module lists the backends."""

    def __call__(self) -> dict[str, BackendStatus]:
        """Every known backend, whether it is usable here, and why not (``pg.backends()``)."""
        return backends()


sys.modules[__name__].__class__ = _BackendsModule

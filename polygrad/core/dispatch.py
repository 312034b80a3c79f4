"""Which backend owns an array: a ``type -> backend`` cache with a pluggable resolver,
and the protocol of the backend objects the rest of polygrad reads.

The core never imports an array library and never searches per op: the first
array of a type asks the resolver installed by ``polygrad._registry``; every
later one is a dict lookup. What a backend object must offer is written down
here: :class:`BackendLike` for every owner of an array type (the plugin
backends and pseudo-backends such as the symbolic one), and
:class:`ArrayBackendLike` for the backends of real arrays, which the plugin
facade ``polygrad.backends.Backend`` implements over the hooks.
"""

from __future__ import annotations

import threading
import warnings
from typing import Any, Callable, ContextManager, Protocol

from polygrad.core import config


class KernelTable(Protocol):
    """``backend.kernels``: a faster kernel by op name, or None (a dict will do)."""

    def get(self, name: str, /) -> Callable[..., Any] | None: ...


class BackendLike(Protocol):
    """What polygrad's core, ops and compile read from any owner of an array type.

    Read directly, with no default: every backend object has all of them.
    """

    #: The name users pass to ``pg.set_backend``; error messages name it.
    name: str
    #: ``"cpu"`` or ``"gpu"``: picks a user Function's ``forward_cpu`` / ``forward_gpu``;
    #: TimerHook synchronizes a device that is not the CPU.
    device: str
    #: Arrays are computed only on request: their repr shows no values, compiled
    #: functions materialize their results.
    lazy: bool
    #: Arrays take ``x[key] = v``: in-place ops write into them, and getitem backward
    #: and batch normalization's running statistics write into fresh arrays. False
    #: (jax): polygrad writes into none of them (in-place ops rebind the Variable,
    #: the default scatter-add builds its result functionally).
    inplace: bool
    #: A slot the op table fills with its ops over this backend's raw arrays.
    raw_ops: Any
    #: None, or an override of ``pg.grad`` for this backend's arrays (the
    #: symbolic pseudo-backend builds gradient expressions):
    #: ``grad(outputs, inputs, grad_outputs, *, allow_unused) -> list``.
    grad: Callable[..., list] | None
    #: None, or what to do with an array of another backend given to a function with
    #: this backend's (the symbolic one says: make it a shared variable); the default
    #: advice is to move the array with ``pg.to_backend``.
    mixing_advice: str | None
    # Optional, read with getattr: ``refuse_write(v, opname)`` refuses an in-place op. Read only of
    # a pinned pseudo-backend (see ``pin``), whose data carries its graph (the symbolic one):
    # ``new_leaf(data)`` gives a new leaf's data of its own (``detach``, ``Variable(x.data)``), and
    # ``unchain(data, backward)`` the data of a variable that leaves its graph.

    @property
    def xp(self) -> Any:
        """The Array API namespace of the backend's arrays."""

    @property
    def kernels(self) -> KernelTable:
        """Faster forward kernels by op name; an op without one runs its row's kernel on ``xp``."""


class ArrayBackendLike(BackendLike, Protocol):
    """What polygrad reads beyond :class:`BackendLike` from a backend of real arrays
    (``polygrad.backends.Backend``, one per plugin-declared name)."""

    #: The plugin's ``BackendInfo``: capabilities (``float64``, ``complex``,
    #: ``data_dependent_shapes``, ...) that ops and the conformance suite check.
    info: Any
    #: The plugin object that declared the backend (the conformance suite finds
    #: the known-failures file beside it).
    plugin: Any

    @property
    def array_types(self) -> tuple[type, ...]:
        """The array types the backend owns."""

    def check_usable(self) -> tuple[bool, str]:
        """``(usable, reason)``: ``pg.backends()``, the serializers' choice of backend."""

    def scatter_add(self, x: Any, key: Any, values: Any) -> Any:
        """A copy of ``x`` with ``values`` added at ``x[key]``, repeated indices summed (indexing backward)."""

    def owns_memory(self, array: Any) -> bool:
        """Whether ``array`` owns writable memory: backward hands it to the user without a copy."""

    def materialize(self, arrays: tuple[Any, ...]) -> tuple[Any, ...]:
        """The arrays computed (``pg.compute``, compiled functions on lazy backends)."""

    def persist(self, arrays: tuple[Any, ...]) -> tuple[Any, ...]:
        """The arrays computed and kept lazy (``pg.persist``, optimizers on lazy backends)."""

    def rng(self) -> Any:
        """The shared random generator seeded by ``pg.seed`` (initializers, dropout, stochastic functions)."""

    def random_generator(self, seed: int | None) -> Any:
        """A new random generator (``polygrad.testing``'s random directions)."""

    def synchronize(self) -> None:
        """Block until queued work is done (TimerHook)."""

    def memory_stats(self) -> dict[str, int] | None:
        """Memory use in bytes, or None (MemoryHook)."""

    def forbid_compute(self) -> ContextManager[Any] | None:
        """A context in which computing an array raises, or None (the conformance suite's laziness check)."""

    def check_lazily(self, array: Any, check: Callable[[Any], None]) -> Any:
        """``array`` with ``check(chunk)`` run on each chunk as it is computed, or None (a lazy
        backend's label and id checks outside debug mode: :func:`checked_lazily`)."""

    def can_do_npz(self) -> bool:
        """Whether ``save_npz`` / ``load_npz`` work (the serializers' choice of backend)."""

    def save_npz(self, file: Any, arrays: dict[str, Any], compressed: bool) -> None:
        """Write ``arrays`` in NumPy's ``.npz`` format (``serializers.save_npz``)."""

    def load_npz(self, file: Any) -> Any:
        """Open an ``.npz`` file: a context manager giving a mapping of arrays (``serializers.load_npz``)."""


#: Python scalar types: operands of ops, never arrays of a backend.
SCALARS = (bool, int, float, complex)
_SCALARS = SCALARS

_type_cache: dict[type, BackendLike] = {}
_pinned: dict[type, BackendLike] = {}  # survive clear_cache (e.g. the symbolic pseudo-backend)
# Writes to the cache (never its reads, on the per-op path) hold the lock; ``_generation`` counts
# the clears, so that a lookup resolved before one is not written into the cache after it.
_cache_lock = threading.Lock()
_generation = 0
_resolver: Callable[[type], BackendLike] | None = None
_current: Callable[[], ArrayBackendLike] | None = None


def set_resolver(resolver: Callable[[type], BackendLike]) -> None:
    """Install ``resolver(type) -> backend``, raising TypeError if no backend owns the type."""
    global _resolver
    _resolver = resolver
    clear_cache()


def set_current(current: Callable[[], ArrayBackendLike]) -> None:
    """Install ``current() -> backend``, the backend that creates arrays from Python data."""
    global _current
    _current = current


def current_backend() -> ArrayBackendLike:
    """The backend new arrays are created on (``pg.get_backend()``)."""
    if _current is None:
        raise RuntimeError("polygrad: no backend registry is installed")
    return _current()


def clear_cache() -> None:
    """Forget cached type lookups (after a plugin is registered or removed). The pinned ones are
    never taken out, not even for a moment: a thread looking one up meanwhile asked the resolver,
    which knows no pinned type."""
    global _generation
    with _cache_lock:
        _generation += 1
        for t in [t for t in _type_cache if t not in _pinned]:
            del _type_cache[t]


def pin(t: type, backend: BackendLike) -> None:
    """Claim type ``t`` for ``backend`` permanently (not through the plugin resolver)."""
    with _cache_lock:
        _pinned[t] = backend
        _type_cache[t] = backend


def backend_of_type(t: type) -> BackendLike:
    """The backend owning arrays of type ``t``."""
    try:
        return _type_cache[t]
    except KeyError:
        pass
    if _resolver is None:
        raise TypeError(f"polygrad: no backend registry is installed to claim {t.__module__}.{t.__qualname__}")
    generation = _generation
    backend = _resolver(t)
    with _cache_lock:
        if generation == _generation:  # (else a plugin came or went meanwhile: the answer may be the old registry's)
            _type_cache[t] = backend
    return backend


def is_array(obj: Any) -> bool:
    """True when some backend owns ``obj``'s type (False for scalars and others)."""
    t = type(obj)
    if t in _type_cache:
        return True
    if obj is None or t in _SCALARS:
        return False
    try:
        backend_of_type(t)
    except TypeError:
        return False
    return True


def has_namespace(a: Any) -> bool:
    """Whether array ``a``'s backend has a namespace: False for pg.function's symbolic arrays,
    whose values exist only when a compiled function runs."""
    try:
        backend_of_type(type(a)).xp
    except TypeError:
        return False
    return True


def readable(t: Any) -> tuple[Any, Any]:
    """``(t, its namespace)`` where the values of array ``t`` may be read for a check: ``t`` itself
    on an eager backend; on a lazy one ``t`` computed, in debug mode only; else ``(None, None)``
    (a lazy backend outside debug mode, or a symbolic array, whose values exist only when a
    compiled function runs)."""
    backend = backend_of_type(type(t))
    if not backend.lazy:
        return (t, backend.xp) if has_namespace(t) else (None, None)
    if not config.debug.get():
        return None, None
    (t,) = backend.materialize((t,))
    return t, backend_of_type(type(t)).xp


def checked_lazily(t: Any, check: Any) -> Any:
    """``t`` with ``check(chunk)`` attached where ``t`` is an array of a lazy backend that can
    defer a check (``polygrad_check_lazily``): each chunk is checked as it is computed.
    Else ``t`` unchanged (an eager array, a symbolic one, or one of a lazy backend without
    the hook, whose values are then checked only in debug mode: see :func:`readable`)."""
    try:
        backend = backend_of_type(type(t))
    except TypeError:
        return t
    if not backend.lazy:
        return t
    deferred = backend.check_lazily(t, check)
    if deferred is None and backend.name not in _UNCHECKED:
        _UNCHECKED.add(backend.name)  # (once per backend: the values are never read here)
        warnings.warn(
            f"polygrad: the lazy backend {backend.name!r} cannot check values where they are computed (its "
            f"plugin has no polygrad_check_lazily hook): labels, ids and repeated item-assignment positions "
            f"are checked only in debug mode (pg.debug_mode()), so a bad label gives a wrong loss without an "
            f"error", RuntimeWarning, stacklevel=3)
    return t if deferred is None else deferred


_UNCHECKED: set[str] = set()  # lazy backends already warned about (see checked_lazily)


def describe(a: Any) -> str:
    """``"numpy array shape (2, 3) dtype float64"`` for an array or Variable (for error messages)."""
    d = getattr(a, "_data", a) if type(a).__name__ == "Variable" else a
    if type(d) in SCALARS:
        return f"{type(d).__name__} {d!r}"
    shape = getattr(d, "shape", None)
    shape = "?" if shape is None else tuple(shape)
    try:
        b = f"{backend_of_type(type(d)).name} "
    except TypeError:  # not an array of a backend: a bad input is named by its type; a rule's shape-only
        # placeholder (_Meta) is of no backend, and the messages that show one name the backend the rule ran on
        b = "" if type(d).__name__ == "_Meta" else f"{type(d).__name__} "
    return f"{b}array shape {shape} dtype {getattr(d, 'dtype', '?')}"


def mixed_backends_error(label: str, args: Any, b1: Any, b2: Any) -> TypeError:
    """The one error for arrays of two backends given to one function."""
    advice = b1.mixing_advice or b2.mixing_advice or f"move one with pg.to_backend(x, {b1.name!r})"
    datas = [getattr(a, "_data", a) if type(a).__name__ == "Variable" else a for a in args]
    if any(getattr(d, "shape", None) == () and type(d) not in SCALARS for d in datas):
        # np.sqrt(3) or np.float32(0.5) beside a dask array: a 0-d array of numpy, not a number
        advice += "; a 0-d array (a NumPy scalar such as np.float32(0.5)) counts as an array: pass float(value)"
    return TypeError(
        f"polygrad: {label} got arrays of two backends, {b1.name!r} and {b2.name!r} "
        f"({'; '.join(describe(a) for a in args if a is not None)}); {advice}"
    )


def backend_of_args(args: Any, label: str) -> BackendLike:
    """The one backend owning the arrays among ``args`` (Variables are read through their
    data; scalars and None are skipped); the current backend when there is none."""
    found = None
    for a in args:
        d = getattr(a, "_data", a) if type(a).__name__ == "Variable" else a
        if d is None or type(d) in SCALARS:
            continue
        b = backend_of_type(type(d))
        if found is None:
            found = b
        elif b is not found and b.name != found.name:  # (one name: the registry was rebuilt between lookups)
            raise mixed_backends_error(label, args, found, b)
    return current_backend() if found is None else found

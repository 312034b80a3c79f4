"""Which backend owns an array: a ``type -> backend`` cache with a pluggable resolver.

The core never imports an array library and never searches per op: the first
array of a type asks the resolver installed by ``polygrad._registry``; every
later one is a dict lookup. A backend object only has to offer ``name`` and
``xp`` (its Array API namespace) to the core; see ``polygrad.backends.Backend``.
"""

from __future__ import annotations

from typing import Any, Callable

#: Python scalar types: operands of ops, never arrays of a backend.
SCALARS = (bool, int, float, complex)
_SCALARS = SCALARS

_type_cache: dict[type, Any] = {}
_pinned: dict[type, Any] = {}  # survive clear_cache (e.g. the symbolic pseudo-backend)
_resolver: Callable[[type], Any] | None = None
_current: Callable[[], Any] | None = None


def set_resolver(resolver: Callable[[type], Any], current: Callable[[], Any] | None = None) -> None:
    """Install ``resolver(type) -> backend`` (raising TypeError if none owns it), and
    ``current`` if given (see :func:`set_current`)."""
    global _resolver
    _resolver = resolver
    if current is not None:
        set_current(current)
    clear_cache()


def set_current(current: Callable[[], Any]) -> None:
    """Install ``current() -> backend``, the backend that creates arrays from Python data."""
    global _current
    _current = current


def current_backend() -> Any:
    """The backend new arrays are created on (``pg.get_backend()``)."""
    if _current is None:
        raise RuntimeError("polygrad: no backend registry is installed")
    return _current()


def clear_cache() -> None:
    """Forget cached type lookups (after a plugin is registered or removed)."""
    _type_cache.clear()
    _type_cache.update(_pinned)


def pin(t: type, backend: Any) -> None:
    """Claim type ``t`` for ``backend`` permanently (not through the plugin resolver)."""
    _pinned[t] = backend
    _type_cache[t] = backend


def backend_of_type(t: type) -> Any:
    """The backend owning arrays of type ``t``."""
    try:
        return _type_cache[t]
    except KeyError:
        pass
    if _resolver is None:
        raise TypeError(f"polygrad: no backend registry is installed to claim {t.__module__}.{t.__qualname__}")
    backend = _resolver(t)
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


def describe(a: Any) -> str:
    """``"numpy array shape (2, 3) dtype float64"`` for an array or Variable (for error messages)."""
    d = getattr(a, "_data", a) if type(a).__name__ == "Variable" else a
    if type(d) in SCALARS:
        return f"{type(d).__name__} {d!r}"
    shape = getattr(d, "shape", None)
    shape = "?" if shape is None else tuple(shape)
    try:
        b = backend_of_type(type(d)).name
    except TypeError:  # not an array of a backend (a rule's shape-only placeholder, a bad input)
        b = "a" if type(d).__name__ == "_Meta" else type(d).__name__
    return f"{b} array shape {shape} dtype {getattr(d, 'dtype', '?')}"


def mixed_backends_error(label: str, args: Any, b1: Any, b2: Any) -> TypeError:
    """The one error for arrays of two backends given to one function."""
    return TypeError(
        f"polygrad: {label} got arrays of two backends, {b1.name!r} and {b2.name!r} "
        f"({'; '.join(describe(a) for a in args if a is not None)}); move one with pg.to_backend(x, {b1.name!r})"
    )


def backend_of_args(args: Any, label: str) -> Any:
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
        elif b is not found:
            raise mixed_backends_error(label, args, found, b)
    return current_backend() if found is None else found

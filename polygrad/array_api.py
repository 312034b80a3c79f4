"""The Array API namespace of Variables: ``x.__array_namespace__()``.

One namespace per backend. It holds every function, constant and dtype of the
Array API standard, plus the ``linalg`` and ``fft`` extensions, taking and
returning Variables, with the backend's dtypes. Code written against the
standard (``xp = x.__array_namespace__()``) therefore runs on Variables and can
be differentiated.

Every function is a row of polygrad's op table (differentiable where a
derivative exists); the functions about dtypes and shapes (``finfo``,
``result_type``, ...) are the backend's own, applied to unwrapped arguments.
"""

from __future__ import annotations

import functools
import math
import types
from typing import Any, Callable

from polygrad.core.dispatch import backend_of_type
from polygrad.core.variable import Variable
from polygrad.ops._export import EXPORTS

__all__ = ["namespace_for", "ArrayNamespace", "FUNCTIONS", "LINALG", "FFT", "INSPECTION", "DTYPES", "CONSTANTS"]

#: The standard's functions about dtypes and shapes: the backend's own, applied to unwrapped
#: arguments (they take and return no arrays of ours, so they are not rows of the op table).
INSPECTION = ("can_cast", "finfo", "iinfo", "isdtype", "result_type", "broadcast_shapes")
#: The standard's names the namespace offers (2025.12), derived from the op table's public functions.
FUNCTIONS = tuple(e.name for e in EXPORTS if e.standard and e.ext is None) + INSPECTION
LINALG = tuple(e.name for e in EXPORTS if e.standard and "linalg" in (e.ext, e.also))
FFT = tuple(e.name for e in EXPORTS if e.standard and e.ext == "fft")
DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64",
          "complex64", "complex128")
CONSTANTS = {"e": math.e, "inf": math.inf, "nan": math.nan, "pi": math.pi, "newaxis": None}

_DEFAULT_VERSION = "2024.12"


def _unwrap(x: Any) -> Any:
    if isinstance(x, Variable):
        return x._data
    if isinstance(x, (list, tuple)) and any(isinstance(v, Variable) for v in x):
        return type(x)(_unwrap(v) for v in x)
    return x


def _inspection(fn: Callable) -> Callable:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return fn(*[_unwrap(a) for a in args], **{k: _unwrap(v) for k, v in kwargs.items()})

    return wrapper


def _on_backend(fn: Callable, backend: Any) -> Callable:
    """A creation function that creates on ``backend`` (whatever the current one is)."""
    from polygrad.backends import using_backend

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with using_backend(backend.name):
            return fn(*args, **kwargs)

    return wrapper


class ArrayNamespace(types.ModuleType):
    """The Array API namespace of one backend, over Variables."""

    def __init__(self, backend: Any) -> None:
        super().__init__(f"polygrad.array_api.{backend.name}")
        xp = backend.xp
        self.__doc__ = f"The Array API namespace of polygrad Variables on the {backend.name!r} backend."
        self.__array_api_version__ = getattr(xp, "__array_api_version__", _DEFAULT_VERSION)
        self.backend = backend
        for name in DTYPES:
            if hasattr(xp, name):
                setattr(self, name, getattr(xp, name))
        for name, value in CONSTANTS.items():
            setattr(self, name, value)
        if hasattr(xp, "__array_namespace_info__"):
            self.__array_namespace_info__ = xp.__array_namespace_info__
        spaces = {None: self}
        for ext in ("linalg", "fft"):
            spaces[ext] = types.ModuleType(f"{self.__name__}.{ext}") if hasattr(xp, ext) else None
            setattr(self, ext, spaces[ext])
        for e in EXPORTS:
            if not e.standard:
                continue
            fn = _on_backend(e.fn, backend) if e.creates else e.fn  # creation: on this namespace's backend
            for ext in (e.ext,) if e.also is None else (e.ext, e.also):
                if spaces[ext] is not None:
                    setattr(spaces[ext], e.name, fn)
        for name in INSPECTION:  # the backend's own, on unwrapped arguments
            fn = getattr(xp, name, None)
            if fn is not None:
                setattr(self, name, _inspection(fn))

    def __repr__(self) -> str:
        return f"<polygrad Array API namespace for backend {self.backend.name!r}>"


_cache: dict[Any, ArrayNamespace] = {}


def namespace_for(backend: Any) -> ArrayNamespace:
    """The (cached) Variable namespace of ``backend``."""
    ns = _cache.get(backend)
    if ns is None:
        ns = _cache[backend] = ArrayNamespace(backend)
    return ns


# ---------------------------------------------------------------------------
# The array-object side: what the standard asks of Variable beyond operators
# ---------------------------------------------------------------------------
def _array_namespace(self: Variable, /, *, api_version: str | None = None) -> ArrayNamespace:
    """The Array API namespace of this variable's backend, over Variables."""
    if api_version is not None and api_version not in ("2021.12", "2022.12", "2023.12", "2024.12", "2025.12"):
        raise ValueError(f"polygrad: unsupported Array API version {api_version!r}")
    return namespace_for(backend_of_type(type(self._data)))


def _to_device(self: Variable, device: Any, /, *, stream: Any = None) -> Variable:
    """A copy on ``device`` (the identity where the backend has one device); no gradient crosses devices yet."""
    data = self._data
    kwargs = {} if stream is None else {"stream": stream}
    moved = data.to_device(device, **kwargs) if hasattr(data, "to_device") else data
    if moved is data:
        from polygrad.ops import positive

        return positive(self)
    return Variable(moved, requires_grad=False)


def _install() -> None:
    Variable.__array_namespace__ = _array_namespace
    Variable.device = property(lambda self: self._data.device, doc="The device of the data (the standard's x.device).")
    Variable.to_device = _to_device
    Variable.__dlpack__ = lambda self, /, **kwargs: self._data.__dlpack__(**kwargs)
    Variable.__dlpack_device__ = lambda self, /: self._data.__dlpack_device__()
    Variable.__complex__ = lambda self, /: complex(self._data)


_install()

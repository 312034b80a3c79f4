"""The Array API standard over Variables: this module, which ``pg`` re-exports, and
the namespace of each backend, ``x.__array_namespace__()``.

Both hold every function of the standard (and the ``linalg`` and ``fft``
extensions), taking and returning Variables, so code written against the
standard runs on Variables and can be differentiated. They differ in where
arrays are created:

* here (``pg.zeros``, ``pg.arange``, ``pg.asarray``, ...), on the current
  backend at the time of the *call* (``pg.using_backend``), as every other
  function here takes the backend of its arguments;
* in ``x.__array_namespace__()``, always on that namespace's backend.

Every function is a row of polygrad's op table (differentiable where a
derivative exists), registered next to its row (:mod:`polygrad.ops._export`),
and the lists below are derived from those registrations; the functions about
dtypes and shapes (``finfo``, ``result_type``, ...) are the backend's own,
applied to unwrapped arguments. Dtypes (``pg.float32``) are the current
backend's, read when the attribute is read.
"""

from __future__ import annotations

import builtins
import functools
import math
import types
from typing import Any, Callable

from polygrad.backends import get_backend, using_backend
from polygrad.core.dispatch import SCALARS, backend_of_type, current_backend, is_array
from polygrad.core.variable import Variable
from polygrad.ops import *  # noqa: F403  (the standard's functions; __all__ below picks them)
from polygrad.ops.manipulation import broadcast_shapes
from polygrad.ops import asarray as _asarray
from polygrad.ops._export import EXPORTS

#: The standard's functions about dtypes and shapes: the backend's own, applied to unwrapped
#: arguments (they take and return no arrays of ours, so they are not rows of the op table).
INSPECTION = ("can_cast", "finfo", "iinfo", "isdtype", "result_type", "broadcast_shapes")
#: The standard's names the namespace offers (2025.12), derived from the op table's public functions.
FUNCTIONS = tuple(e.name for e in EXPORTS if e.standard and e.ext is None) + INSPECTION
LINALG = tuple(e.name for e in EXPORTS if e.standard and "linalg" in (e.ext, e.also))
FFT = tuple(e.name for e in EXPORTS if e.standard and e.ext == "fft")
#: What ``from polygrad.array_api import *`` (and so ``pg``) takes: the standard's functions,
#: its extensions and constants, its version and inspection API (dtypes come from
#: ``__getattr__``, on the current backend).
__all__ = list(FUNCTIONS) + ["linalg", "fft", "e", "inf", "nan", "pi", "newaxis", "__array_namespace_info__"]
DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64",
          "complex64", "complex128")
e, inf, nan, pi, newaxis = math.e, math.inf, math.nan, math.pi, None
CONSTANTS = {"e": e, "inf": inf, "nan": nan, "pi": pi, "newaxis": newaxis}

#: The version of the standard polygrad implements in full, and claims: a namespace over a
#: library claims the older of this and the library's own version, and so does this module
#: (and ``pg``) for the current backend. (2025.12 adds linalg.eig and linalg.eigvals, which
#: polygrad has no rows for yet; its isin and broadcast_shapes are offered all the same.)
API_VERSION = "2024.12"
VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12")
#: The keys of ``capabilities()`` in the claimed version.
CAPABILITIES = ("boolean indexing", "data-dependent shapes", "max dimensions")


def _unwrap(x: Any) -> Any:
    if isinstance(x, Variable):
        return x._data
    if isinstance(x, (list, tuple)) and builtins.any(isinstance(v, Variable) for v in x):
        return type(x)(_unwrap(v) for v in x)
    return x


def _inspection(fn: Callable, backend: Any) -> Callable:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return _python_numbers(fn(*[_unwrap(a) for a in args], **{k: _unwrap(v) for k, v in kwargs.items()}), backend)

    return wrapper


class _Info:
    """A backend's ``finfo``/``iinfo`` result whose numbers are arrays of another backend (dask's
    and cupy's are NumPy scalars, 0-d numpy arrays to polygrad: ``x + xp.finfo(x.dtype).eps``
    was refused as mixing backends), with its numeric fields as Python numbers, as the
    standard types them; ``dtype`` and anything else are the backend's own, and it compares
    and hashes as the backend's object does."""

    __slots__ = ("_info",)

    def __init__(self, info: Any) -> None:
        object.__setattr__(self, "_info", info)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        value = getattr(object.__getattribute__(self, "_info"), name)
        if type(value) in SCALARS or not is_array(value) or tuple(value.shape) != ():
            return value
        integral = backend_of_type(type(value)).xp.isdtype(value.dtype, "integral")
        return int(value) if integral else float(value)

    def __eq__(self, other: Any) -> bool:
        return self._info == (other._info if isinstance(other, _Info) else other)

    def __hash__(self) -> int:
        return hash(self._info)

    def __repr__(self) -> str:
        return repr(self._info)

    def __reduce__(self) -> Any:
        return (_Info, (self._info,))


def _python_numbers(result: Any, backend: Any) -> Any:
    """``finfo``/``iinfo`` results of ``backend`` whose numbers are arrays of another backend
    (NumPy scalars of dask's) as :class:`_Info`; other inspection results as they are."""
    if not (hasattr(result, "bits") and hasattr(result, "dtype")):
        return result
    top = getattr(result, "max", None)
    return _Info(result) if is_array(top) and backend_of_type(type(top)) is not backend else result


def _on_backend(fn: Callable, backend: Any) -> Callable:
    """A creation function that creates on ``backend`` (whatever the current one is)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with using_backend(backend.name):
            return _made_on(backend, fn(*args, **kwargs), fn.__name__)

    return wrapper


def _made_on(backend: Any, out: Variable, fn: str) -> Variable:
    """``out``, checked to be of ``backend``, where it was asked for (see ``Backend.made``)."""
    backend.made(out._data, fn)
    return out


# ---------------------------------------------------------------------------
# Here (and on pg): the backend is resolved when a function is called
# ---------------------------------------------------------------------------
def asarray(obj, /, dtype=None, *, device=None, copy=None, backend=None):
    """A Variable (not requiring grad) of ``obj`` on the current backend, or on ``backend``.

    The standard's ``asarray``, with two conveniences: ``dtype`` may be given
    by name (``"float32"``), and ``backend`` names the backend to create on. A
    Variable of that backend is returned as it is (a copy if ``copy=True`` or
    another dtype is asked for); an array of another backend is moved.
    """
    b = current_backend() if backend is None else get_backend(backend)
    if isinstance(dtype, str):
        try:
            dtype = getattr(b.xp, dtype)
        except AttributeError:
            raise ValueError(f"polygrad.asarray: backend {b.name!r} has no dtype {dtype!r}") from None
    if backend is None:
        return _asarray(obj, dtype=dtype, device=device, copy=copy)
    with using_backend(b.name):
        return _made_on(b, _asarray(obj, dtype=dtype, device=device, copy=copy), "asarray")


def _backend_of_arguments(args: tuple) -> Any:
    """The backend of the first array (or Variable) among ``args``, else the current one."""
    for a in args:
        data = a._data if isinstance(a, Variable) else a
        if is_array(data):
            return backend_of_type(type(data))
    return current_backend()


def _inspection_now(name: str) -> Callable:
    """The standard's ``name`` about dtypes and shapes, on the backend of its arguments (else the current one)."""

    def fn(*args: Any, **kwargs: Any) -> Any:
        backend = _backend_of_arguments(args)
        return _python_numbers(getattr(backend.xp, name)(*[_unwrap(a) for a in args],
                                                         **{k: _unwrap(v) for k, v in kwargs.items()}), backend)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"The Array API standard's ``{name}``, of the backend of the arguments (else the current backend)."
    return fn


def _extension(ext: str) -> types.ModuleType:
    """``pg.linalg`` / ``pg.fft``: the extension's functions (the backend is resolved at call time)."""
    mod = types.ModuleType(f"polygrad.{ext}", f"The Array API standard's {ext} extension, on Variables.")
    for e in EXPORTS:
        if e.standard and ext in (e.ext, e.also):
            setattr(mod, e.name, e.fn)
    return mod


class NamespaceInfo:
    """The standard's inspection API (``__array_namespace_info__()``) of polygrad's namespace
    over one backend: the library's devices and dtypes, and the capabilities of the claimed
    version, as polygrad has them on that backend (data-dependent shapes only where the
    backend declares them)."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        xp = backend.xp
        self._info = xp.__array_namespace_info__() if hasattr(xp, "__array_namespace_info__") else None

    def capabilities(self) -> dict:
        have = dict(self._info.capabilities()) if self._info is not None else {}
        info = getattr(self.backend, "info", None)
        dynamic = getattr(info, "data_dependent_shapes", True)
        return {
            "boolean indexing": bool(have.get("boolean indexing", True)) and dynamic,
            "data-dependent shapes": bool(have.get("data-dependent shapes", True)) and dynamic,
            "max dimensions": have.get("max dimensions"),
        }

    def default_device(self) -> Any:
        if self._info is not None:
            return self._info.default_device()
        return _device_of(self.backend.xp.asarray(0))

    def devices(self) -> list:
        return list(self._info.devices()) if self._info is not None else [self.default_device()]

    def default_dtypes(self, *, device: Any = None) -> dict:
        if self._info is not None:
            return dict(self._info.default_dtypes(device=device))
        from polygrad.ops._dtypes import default_dtypes

        return dict(default_dtypes(self.backend.xp))

    def dtypes(self, *, device: Any = None, kind: Any = None) -> dict:
        if self._info is not None:
            return dict(self._info.dtypes(device=device, kind=kind))
        xp = self.backend.xp
        found = {n: getattr(xp, n) for n in DTYPES if hasattr(xp, n)}
        return found if kind is None else {n: d for n, d in found.items() if xp.isdtype(d, kind)}

    def __repr__(self) -> str:
        return f"<polygrad namespace info for backend {self.backend.name!r}>"


def _info_for(backend: Any) -> NamespaceInfo:
    info = _infos.get(backend)
    if info is None:
        info = _infos[backend] = NamespaceInfo(backend)
    return info


_infos: dict[Any, NamespaceInfo] = {}


def __array_namespace_info__() -> NamespaceInfo:
    """The standard's inspection API, of the current backend (resolved when called)."""
    return _info_for(current_backend())


def _version_for(xp: Any) -> str:
    """The version a namespace over ``xp`` claims: the older of polygrad's and the library's."""
    return builtins.min(getattr(xp, "__array_api_version__", API_VERSION), API_VERSION)


can_cast = _inspection_now("can_cast")
finfo = _inspection_now("finfo")
iinfo = _inspection_now("iinfo")
isdtype = _inspection_now("isdtype")
result_type = _inspection_now("result_type")
linalg = _extension("linalg")
fft = _extension("fft")


def __getattr__(name: str) -> Any:
    """Dtypes (``float32``, ...) and ``__array_api_version__``: the current backend's."""
    if name in DTYPES:
        return getattr(current_backend().xp, name)
    if name == "__array_api_version__":
        return _version_for(current_backend().xp)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class ArrayNamespace(types.ModuleType):
    """The Array API namespace of one backend, over Variables."""

    def __init__(self, backend: Any) -> None:
        super().__init__(f"polygrad.array_api.{backend.name}")
        xp = backend.xp
        self.__doc__ = f"The Array API namespace of polygrad Variables on the {backend.name!r} backend."
        self.__array_api_version__ = _version_for(xp)
        self.backend = backend
        for name in DTYPES:
            if hasattr(xp, name):
                setattr(self, name, getattr(xp, name))
        for name, value in CONSTANTS.items():
            setattr(self, name, value)
        self.__array_namespace_info__ = functools.partial(_info_for, backend)
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
                setattr(self, name, _inspection(fn, backend))
        self.broadcast_shapes = broadcast_shapes  # plain Python: the same on every backend

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
    ns = namespace_for(backend_of_type(type(self._data)))
    if api_version is not None and (api_version not in VERSIONS or api_version > ns.__array_api_version__):
        raise ValueError(
            f"polygrad: unsupported Array API version {api_version!r}; this namespace implements "
            f"{ns.__array_api_version__} (and the versions before it)"
        )
    return ns


def _to_device(self: Variable, device: Any, /, *, stream: Any = None) -> Variable:
    """A copy on ``device`` (the identity where the backend has one device); no gradient crosses devices yet."""
    data = self._data
    kwargs = {} if stream is None else {"stream": stream}
    moved = data.to_device(device, **kwargs) if hasattr(data, "to_device") else data
    if moved is data:
        from polygrad.ops import positive

        return positive(self)
    return Variable(moved, requires_grad=False)


def _device_of(data: Any) -> Any:
    """``data.device``; for a library whose arrays lack the attribute (dask), its namespace's default device."""
    try:
        return data.device
    except AttributeError:
        pass
    xp = backend_of_type(type(data)).xp
    if hasattr(xp, "__array_namespace_info__"):
        return xp.__array_namespace_info__().default_device()
    return backend_of_type(type(data)).device


def _dlpack(self: Variable, /, *, stream: Any = None, max_version: Any = None, dl_device: Any = None,
            copy: Any = None) -> Any:
    """The standard's ``__dlpack__`` of the data; keywords left as None are not passed on (older
    libraries take only ``stream``). Refused, as ``np.asarray(x)`` is, for a variable that
    requires grad while backprop is on: another library's ``from_dlpack`` (scikit-learn moves
    arrays so) would continue the computation without a gradient, silently."""
    self._refuse_untracked("from_dlpack(x) (x.__dlpack__)", "the library that takes the data")
    kwargs = {k: v for k, v in (("stream", stream), ("max_version", max_version), ("dl_device", dl_device),
                                ("copy", copy)) if v is not None}
    return self._data.__dlpack__(**kwargs)


def _install() -> None:
    Variable.__array_namespace__ = _array_namespace
    Variable.device = property(lambda self: _device_of(self._data), doc="The device of the data (the standard's x.device).")
    Variable.to_device = _to_device
    Variable.__dlpack__ = _dlpack
    Variable.__dlpack_device__ = lambda self, /: self._data.__dlpack_device__()
    Variable.__complex__ = lambda self, /: complex(self._data)


_install()

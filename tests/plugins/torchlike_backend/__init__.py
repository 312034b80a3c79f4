"""A stand-in for PyTorch's array object, for the tests (torch itself pulls
gigabytes of CUDA libraries): what polygrad's core meets on a torch tensor, on
numpy's memory.

Faithful in what it models, as ``array_api_compat.torch`` presents torch:

* ``x.size`` is a **method**: ``x.size()`` is the shape (a tuple subclass, as
  ``torch.Size``), ``x.size(d)`` one length; ``x.numel()`` the element count;
  there is no ``size`` attribute to read as an int;
* the default floating dtype is **float32** (``torch.get_default_dtype()``):
  ``asarray([1.0])``, ``zeros(3)``, ``arange(0.5, 2)``, ``linspace`` and
  ``eye`` without a dtype give float32 (complex64 for complex values), and
  ``__array_namespace_info__().default_dtypes()`` says so; float64 exists;
* arrays are mutable (``x[key] = v`` writes), as torch's;
* torch's two gaps that polygrad's conformance meets: slicing with a negative
  step raises ``ValueError: step must be greater than zero``, and the namespace
  has no ``unique_all`` (``array_api_compat.torch`` lacks it).

The arrays are numpy arrays wrapped in :class:`Tensor`; the namespace
(:data:`xp`) is ``array_api_compat.numpy`` with every argument unwrapped and
every array result wrapped. Register it by hand::

    pg.register_plugin(torchlike_backend, name="torchlike-plugin")
"""

from __future__ import annotations

import operator
import types
from typing import Any

import array_api_compat.numpy as _np_xp
import numpy as np

from polygrad.hookspecs import BackendInfo, hookimpl

NAME = "torchlike"


class Size(tuple):
    """The shape, as ``torch.Size``: a tuple."""


class Tensor:
    """An array whose ``size`` is a method, as a torch tensor's."""

    __slots__ = ("_a",)
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, a: Any):
        self._a = np.asarray(a)

    def size(self, dim: int | None = None) -> Any:
        """``x.size()``: the shape; ``x.size(d)``: the length of axis d (torch's)."""
        return Size(self._a.shape) if dim is None else self._a.shape[dim]

    def numel(self) -> int:
        return int(self._a.size)

    def __getitem__(self, key: Any) -> Tensor:
        _refuse_negative_steps(key)
        return Tensor(self._a[_unwrap(key)])

    def __setitem__(self, key: Any, value: Any) -> None:
        _refuse_negative_steps(key)
        self._a[_unwrap(key)] = _unwrap(value)

    def __array_namespace__(self, api_version: str | None = None) -> Any:
        return xp

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.array(self._a, dtype=dtype, copy=True)

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> Any:
        return self._a.__dlpack_device__()

    def to_device(self, device: Any, /, *, stream: Any = None) -> Tensor:
        return self

    def __repr__(self) -> str:
        return f"tensor({self._a!r})"

    def __len__(self) -> int:
        return len(self._a)

    def __bool__(self) -> bool:
        return bool(self._a)

    def __int__(self) -> int:
        return int(self._a)

    def __float__(self) -> float:
        return float(self._a)

    def __complex__(self) -> complex:
        return complex(self._a)

    def __index__(self) -> int:
        return operator.index(self._a)

    shape = property(lambda self: Size(self._a.shape))
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    device = property(lambda self: "cpu")
    T = property(lambda self: Tensor(self._a.T))
    mT = property(lambda self: Tensor(np.swapaxes(self._a, -1, -2)))


def _refuse_negative_steps(key: Any) -> None:
    for k in key if isinstance(key, tuple) else (key,):
        if isinstance(k, slice) and k.step is not None and k.step < 0:
            raise ValueError("step must be greater than zero")  # torch's message


def _binary(name: str) -> Any:
    def method(self: Tensor, other: Any) -> Any:
        if not isinstance(other, (Tensor, bool, int, float, complex)):
            return NotImplemented
        return _wrap(getattr(self._a, name)(_unwrap(other)))

    method.__name__ = name
    return method


def _unary(name: str) -> Any:
    def method(self: Tensor) -> Any:
        return Tensor(getattr(self._a, name)())

    method.__name__ = name
    return method


def _inplace(name: str) -> Any:
    def method(self: Tensor, other: Any) -> Any:
        getattr(self._a, name)(_unwrap(other))
        return self

    method.__name__ = name
    return method


for _op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor", "lshift",
            "rshift"):
    setattr(Tensor, f"__{_op}__", _binary(f"__{_op}__"))
    setattr(Tensor, f"__r{_op}__", _binary(f"__r{_op}__"))
    setattr(Tensor, f"__i{_op}__", _inplace(f"__i{_op}__"))
for _op in ("lt", "le", "gt", "ge", "eq", "ne"):
    setattr(Tensor, f"__{_op}__", _binary(f"__{_op}__"))
for _op in ("neg", "pos", "abs", "invert"):
    setattr(Tensor, f"__{_op}__", _unary(f"__{_op}__"))


def _unwrap(obj: Any) -> Any:
    if isinstance(obj, Tensor):
        return obj._a
    if isinstance(obj, (tuple, list)) and not isinstance(obj, Size):
        return type(obj)(_unwrap(o) for o in obj)
    return obj


def _wrap(obj: Any) -> Any:
    if isinstance(obj, (np.ndarray, np.generic)):
        return Tensor(obj)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # a named tuple (unique_counts, ...)
        return type(obj)(*(_wrap(o) for o in obj))
    if isinstance(obj, (tuple, list)):
        return type(obj)(_wrap(o) for o in obj)
    return obj


def _narrow(a: Any) -> Any:
    """float64 -> float32 and complex128 -> complex64: torch's default dtypes for Python numbers."""
    if a.dtype == np.float64:
        return a.astype(np.float32)
    if a.dtype == np.complex128:
        return a.astype(np.complex64)
    return a


def _no_array(obj: Any) -> bool:
    """Python numbers or (nested) sequences of them: what takes the default dtype."""
    if isinstance(obj, (bool, int, float, complex)):
        return True
    if isinstance(obj, (list, tuple)):
        return all(_no_array(o) for o in obj)
    return False


# Functions that give the default floating dtype when no dtype is given.
_DEFAULT_FLOAT = ("zeros", "ones", "empty", "full", "eye", "linspace", "arange")


class _Info:
    """``__array_namespace_info__()``: numpy's, with torch's default dtypes."""

    def __init__(self) -> None:
        self._inner = _np_xp.__array_namespace_info__()

    def default_dtypes(self, *, device: Any = None) -> dict:
        return {"real floating": np.dtype(np.float32), "complex floating": np.dtype(np.complex64),
                "integral": np.dtype(np.int64), "indexing": np.dtype(np.int64)}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _Namespace(types.SimpleNamespace):
    """``array_api_compat.numpy`` (or its linalg / fft) over Tensors, with torch's defaults."""

    def __init__(self, inner: Any, name: str, top: bool = False):
        super().__init__()
        object.__setattr__(self, "_inner", inner)
        object.__setattr__(self, "_top", top)
        object.__setattr__(self, "__name__", name)

    def __getattr__(self, name: str) -> Any:
        if self._top and name == "unique_all":
            raise AttributeError("module 'torch' has no attribute 'unique_all' (array_api_compat.torch lacks it)")
        if self._top and name == "__array_namespace_info__":
            return _Info
        obj = getattr(self._inner, name)
        if isinstance(obj, types.ModuleType):
            return _Namespace(obj, f"{self.__name__}.{name}")
        if callable(obj) and not isinstance(obj, type):
            default_float = self._top and name in _DEFAULT_FLOAT

            def function(*args: Any, **kwargs: Any) -> Any:
                out = obj(*_unwrap(args), **{k: _unwrap(v) for k, v in kwargs.items()})
                if kwargs.get("dtype") is None and (
                        default_float or (self._top and name == "asarray" and _no_array(args[0] if args else kwargs.get("obj")))):
                    out = _narrow(out)
                return _wrap(out)

            function.__name__ = name
            return function
        return obj

    def __dir__(self) -> list:
        names = set(dir(self._inner)) | {"__array_namespace_info__"}
        return sorted(names - ({"unique_all"} if self._top else set()))

    def __repr__(self) -> str:
        return f"<namespace {self.__name__}>"


xp = _Namespace(_np_xp, "torchlike_backend.xp", top=True)


class _Generator:
    def __init__(self, seed: int | None):
        self._rng = np.random.default_rng(seed)

    def normal(self, shape: tuple, *, dtype: Any, mean: float = 0.0, std: float = 1.0) -> Tensor:
        return Tensor(self._rng.normal(mean, std, size=tuple(shape)).astype(dtype))

    def uniform(self, shape: tuple, *, dtype: Any, low: float = 0.0, high: float = 1.0) -> Tensor:
        return Tensor(self._rng.uniform(low, high, size=tuple(shape)).astype(dtype))


@hookimpl
def polygrad_backend_info():
    return BackendInfo(name=NAME, module=__name__, device="cpu", priority=-50)


@hookimpl
def polygrad_array_namespace():
    return xp


@hookimpl
def polygrad_array_types():
    return (Tensor,)


@hookimpl
def polygrad_random_generator(seed):
    return _Generator(seed)

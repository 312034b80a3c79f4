"""A stand-in for an immutable array library such as jax: its arrays refuse
``x[key] = v`` (even on a copy), and its plugin declares ``inplace=False`` and
provides no scatter-add and no kernels, so polygrad's defaults must do without
writes.

The arrays are numpy arrays wrapped in :class:`FrozenArray`, whose namespace
(:data:`xp`) is ``array_api_compat.numpy`` with every argument unwrapped and
every array result wrapped. Register it by hand::

    pg.register_plugin(immutable_backend, name="immutable-plugin")
"""

from __future__ import annotations

import operator
import types
from typing import Any

import array_api_compat.numpy as _np_xp
import numpy as np

from polygrad.hookspecs import BackendInfo, hookimpl

NAME = "immutable"


class FrozenArray:
    """An array that cannot be written into, as a jax array."""

    __slots__ = ("_a",)
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, a: Any):
        self._a = np.asarray(a)

    def __setitem__(self, key: Any, value: Any) -> None:
        raise TypeError(f"{type(self).__name__} is immutable and does not support item assignment "
                        "(like a jax array); build a new array instead")

    def __getitem__(self, key: Any) -> FrozenArray:
        return FrozenArray(self._a[_unwrap(key)])

    def __array_namespace__(self, api_version: str | None = None) -> Any:
        return xp

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.array(self._a, dtype=dtype, copy=True)

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> Any:
        return self._a.__dlpack_device__()

    def to_device(self, device: Any, /, *, stream: Any = None) -> FrozenArray:
        return self

    def __repr__(self) -> str:
        return f"FrozenArray({self._a!r})"

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

    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    device = property(lambda self: "cpu")
    T = property(lambda self: FrozenArray(self._a.T))
    mT = property(lambda self: FrozenArray(np.swapaxes(self._a, -1, -2)))


def _binary(name: str) -> Any:
    def method(self: FrozenArray, other: Any) -> Any:
        if not isinstance(other, (FrozenArray, bool, int, float, complex)):
            return NotImplemented
        return _wrap(getattr(self._a, name)(_unwrap(other)))

    method.__name__ = name
    return method


def _unary(name: str) -> Any:
    def method(self: FrozenArray) -> Any:
        return FrozenArray(getattr(self._a, name)())

    method.__name__ = name
    return method


for _op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor", "lshift",
            "rshift"):
    setattr(FrozenArray, f"__{_op}__", _binary(f"__{_op}__"))
    setattr(FrozenArray, f"__r{_op}__", _binary(f"__r{_op}__"))
for _op in ("lt", "le", "gt", "ge", "eq", "ne"):
    setattr(FrozenArray, f"__{_op}__", _binary(f"__{_op}__"))
for _op in ("neg", "pos", "abs", "invert"):
    setattr(FrozenArray, f"__{_op}__", _unary(f"__{_op}__"))


def _unwrap(obj: Any) -> Any:
    if isinstance(obj, FrozenArray):
        return obj._a
    if isinstance(obj, (tuple, list)):
        return type(obj)(_unwrap(o) for o in obj)
    return obj


def _wrap(obj: Any) -> Any:
    if isinstance(obj, (np.ndarray, np.generic)):
        return FrozenArray(obj)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # a named tuple (unique_all, ...)
        return type(obj)(*(_wrap(o) for o in obj))
    if isinstance(obj, (tuple, list)):
        return type(obj)(_wrap(o) for o in obj)
    return obj


class _Namespace(types.SimpleNamespace):
    """``array_api_compat.numpy`` (or its linalg / fft) over FrozenArrays."""

    def __init__(self, inner: Any, name: str):
        super().__init__()
        object.__setattr__(self, "_inner", inner)
        object.__setattr__(self, "__name__", name)

    def __getattr__(self, name: str) -> Any:
        obj = getattr(self._inner, name)
        if isinstance(obj, types.ModuleType):
            return _Namespace(obj, f"{self.__name__}.{name}")
        if callable(obj) and not isinstance(obj, type):
            def function(*args: Any, **kwargs: Any) -> Any:
                return _wrap(obj(*_unwrap(args), **{k: _unwrap(v) for k, v in kwargs.items()}))

            function.__name__ = name
            return function
        return obj

    def __repr__(self) -> str:
        return f"<namespace {self.__name__}>"


xp = _Namespace(_np_xp, "immutable_backend.xp")


class _Generator:
    def __init__(self, seed: int | None):
        self._rng = np.random.default_rng(seed)

    def normal(self, shape: tuple, *, dtype: Any, mean: float = 0.0, std: float = 1.0) -> FrozenArray:
        return FrozenArray(self._rng.normal(mean, std, size=tuple(shape)).astype(dtype))

    def uniform(self, shape: tuple, *, dtype: Any, low: float = 0.0, high: float = 1.0) -> FrozenArray:
        return FrozenArray(self._rng.uniform(low, high, size=tuple(shape)).astype(dtype))


@hookimpl
def polygrad_backend_info():
    return BackendInfo(name=NAME, module=__name__, device="cpu", inplace=False, priority=-50)


@hookimpl
def polygrad_array_namespace():
    return xp


@hookimpl
def polygrad_array_types():
    return (FrozenArray,)


@hookimpl
def polygrad_random_generator(seed):
    return _Generator(seed)

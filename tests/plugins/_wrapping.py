"""What the stand-in backends share: an array class over a numpy array, its
operators, a namespace that is ``array_api_compat.numpy`` with every argument
unwrapped and every array result wrapped, and a numpy-seeded generator. Each
stand-in subclasses :class:`Wrapped` with the behaviour it models (arrays that
refuse writes, a ``size()`` method, ...)."""

from __future__ import annotations

import operator
import types
from typing import Any, Callable

import array_api_compat.numpy as np_xp
import numpy as np


class Wrapped:
    """A numpy array behind the standard's array attributes and operators; the subclass
    says how indexing, writes and ``size`` behave, and ``namespace`` is its namespace."""

    __slots__ = ("_a",)
    __hash__ = None  # type: ignore[assignment]
    namespace: Any = None

    def __init__(self, a: Any):
        self._a = np.asarray(a)

    def __array_namespace__(self, api_version: str | None = None) -> Any:
        return type(self).namespace

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.array(self._a, dtype=dtype, copy=True)

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> Any:
        return self._a.__dlpack_device__()

    def to_device(self, device: Any, /, *, stream: Any = None) -> Any:
        return self

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

    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    device = property(lambda self: "cpu")
    T = property(lambda self: type(self)(self._a.T))
    mT = property(lambda self: type(self)(np.swapaxes(self._a, -1, -2)))


def install_operators(cls: type, *, inplace: bool) -> None:
    """The arithmetic, comparison and unary operators on ``cls`` (and the in-place ones, writing
    into the array, where ``inplace``)."""

    def binary(name: str) -> Callable:
        def method(self: Wrapped, other: Any) -> Any:
            if not isinstance(other, (cls, bool, int, float, complex)):
                return NotImplemented
            return wrap(cls, getattr(self._a, name)(unwrap(other)))

        method.__name__ = name
        return method

    def unary(name: str) -> Callable:
        def method(self: Wrapped) -> Any:
            return cls(getattr(self._a, name)())

        method.__name__ = name
        return method

    def in_place(name: str) -> Callable:
        def method(self: Wrapped, other: Any) -> Any:
            getattr(self._a, name)(unwrap(other))
            return self

        method.__name__ = name
        return method

    for op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor", "lshift",
               "rshift"):
        setattr(cls, f"__{op}__", binary(f"__{op}__"))
        setattr(cls, f"__r{op}__", binary(f"__r{op}__"))
        if inplace:
            setattr(cls, f"__i{op}__", in_place(f"__i{op}__"))
    for op in ("lt", "le", "gt", "ge", "eq", "ne"):
        setattr(cls, f"__{op}__", binary(f"__{op}__"))
    for op in ("neg", "pos", "abs", "invert"):
        setattr(cls, f"__{op}__", unary(f"__{op}__"))


def unwrap(obj: Any) -> Any:
    if isinstance(obj, Wrapped):
        return obj._a
    if isinstance(obj, (tuple, list)):
        return type(obj)(unwrap(o) for o in obj) if type(obj) in (tuple, list) else tuple(unwrap(o) for o in obj)
    return obj


def wrap(cls: type, obj: Any) -> Any:
    """``obj`` with every numpy array in it wrapped in ``cls``."""
    if isinstance(obj, (np.ndarray, np.generic)):
        return cls(obj)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # a named tuple (unique_all, ...)
        return type(obj)(*(wrap(cls, o) for o in obj))
    if isinstance(obj, (tuple, list)):
        return type(obj)(wrap(cls, o) for o in obj)
    return obj


class Namespace(types.SimpleNamespace):
    """``inner`` (``array_api_compat.numpy``, its linalg or its fft) over arrays of ``cls``;
    ``result(name, out, args, kwargs)`` may adjust a function's result before it is wrapped."""

    def __init__(self, inner: Any, name: str, cls: type, result: Callable | None = None):
        super().__init__()
        object.__setattr__(self, "_inner", inner)
        object.__setattr__(self, "_cls", cls)
        object.__setattr__(self, "_result", result)
        object.__setattr__(self, "__name__", name)

    def __getattr__(self, name: str) -> Any:
        obj = getattr(self._inner, name)
        if isinstance(obj, types.ModuleType):
            return Namespace(obj, f"{self.__name__}.{name}", self._cls)
        if callable(obj) and not isinstance(obj, type):
            cls, result = self._cls, self._result

            def function(*args: Any, **kwargs: Any) -> Any:
                out = obj(*unwrap(args), **{k: unwrap(v) for k, v in kwargs.items()})
                return wrap(cls, result(name, out, args, kwargs) if result is not None else out)

            function.__name__ = name
            return function
        return obj

    def __repr__(self) -> str:
        return f"<namespace {self.__name__}>"


class Generator:
    """Seeded random arrays of ``cls`` (numpy's generator underneath)."""

    def __init__(self, cls: type, seed: int | None):
        self._cls, self._rng = cls, np.random.default_rng(seed)

    def normal(self, shape: tuple, *, dtype: Any, mean: float = 0.0, std: float = 1.0) -> Any:
        return self._cls(self._rng.normal(mean, std, size=tuple(shape)).astype(dtype))

    def uniform(self, shape: tuple, *, dtype: Any, low: float = 0.0, high: float = 1.0) -> Any:
        return self._cls(self._rng.uniform(low, high, size=tuple(shape)).astype(dtype))


__all__ = ["Wrapped", "install_operators", "wrap", "unwrap", "Namespace", "Generator", "np_xp"]

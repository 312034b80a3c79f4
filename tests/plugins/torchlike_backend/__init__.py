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
every array result wrapped (``tests/plugins/_wrapping.py``). Register it by hand::

    pg.register_plugin(torchlike_backend, name="torchlike-plugin")
"""

from __future__ import annotations

from typing import Any

import numpy as np

from polygrad.hookspecs import BackendInfo, hookimpl

from .._wrapping import Generator, Namespace, Wrapped, install_operators, np_xp, unwrap

NAME = "torchlike"


class Size(tuple):
    """The shape, as ``torch.Size``: a tuple."""


class Tensor(Wrapped):
    """An array whose ``size`` is a method, as a torch tensor's."""

    __slots__ = ()

    def size(self, dim: int | None = None) -> Any:
        """``x.size()``: the shape; ``x.size(d)``: the length of axis d (torch's)."""
        return Size(self._a.shape) if dim is None else self._a.shape[dim]

    def numel(self) -> int:
        return int(self._a.size)

    def __getitem__(self, key: Any) -> Tensor:
        _refuse_negative_steps(key)
        return Tensor(self._a[unwrap(key)])

    def __setitem__(self, key: Any, value: Any) -> None:
        _refuse_negative_steps(key)
        self._a[unwrap(key)] = unwrap(value)

    def __repr__(self) -> str:
        return f"tensor({self._a!r})"

    shape = property(lambda self: Size(self._a.shape))


def _refuse_negative_steps(key: Any) -> None:
    for k in key if isinstance(key, tuple) else (key,):
        if isinstance(k, slice) and k.step is not None and k.step < 0:
            raise ValueError("step must be greater than zero")  # torch's message


install_operators(Tensor, inplace=True)


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


def _defaults(name: str, out: Any, args: tuple, kwargs: dict) -> Any:
    """torch's default float (and complex) dtype where no dtype is given."""
    if kwargs.get("dtype") is None and (
            name in _DEFAULT_FLOAT or (name == "asarray" and _no_array(args[0] if args else kwargs.get("obj")))):
        return _narrow(out)
    return out


class _Info:
    """``__array_namespace_info__()``: numpy's, with torch's default dtypes."""

    def __init__(self) -> None:
        self._inner = np_xp.__array_namespace_info__()

    def default_dtypes(self, *, device: Any = None) -> dict:
        return {"real floating": np.dtype(np.float32), "complex floating": np.dtype(np.complex64),
                "integral": np.dtype(np.int64), "indexing": np.dtype(np.int64)}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _TorchNamespace(Namespace):
    """The wrapped namespace with torch's defaults, without ``unique_all``."""

    def __getattr__(self, name: str) -> Any:
        if name == "unique_all":
            raise AttributeError("module 'torch' has no attribute 'unique_all' (array_api_compat.torch lacks it)")
        if name == "__array_namespace_info__":
            return _Info
        return super().__getattr__(name)

    def __dir__(self) -> list:
        return sorted((set(dir(self._inner)) | {"__array_namespace_info__"}) - {"unique_all"})


xp = Tensor.namespace = _TorchNamespace(np_xp, "torchlike_backend.xp", Tensor, _defaults)


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
    return Generator(Tensor, seed)

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

__all__ = ["namespace_for", "ArrayNamespace", "FUNCTIONS", "LINALG", "FFT", "DTYPES", "CONSTANTS"]

#: The standard's top-level functions (2025.12).
FUNCTIONS = (
    # element-wise
    "abs", "acos", "acosh", "add", "asin", "asinh", "atan", "atan2", "atanh", "bitwise_and", "bitwise_invert",
    "bitwise_left_shift", "bitwise_or", "bitwise_right_shift", "bitwise_xor", "ceil", "clip", "conj", "copysign",
    "cos", "cosh", "divide", "equal", "exp", "expm1", "floor", "floor_divide", "greater", "greater_equal", "hypot",
    "imag", "isfinite", "isinf", "isnan", "less", "less_equal", "log", "log10", "log1p", "log2", "logaddexp",
    "logical_and", "logical_not", "logical_or", "logical_xor", "maximum", "minimum", "multiply", "negative",
    "nextafter", "not_equal", "positive", "pow", "real", "reciprocal", "remainder", "round", "sign", "signbit", "sin",
    "sinh", "sqrt", "square", "subtract", "tan", "tanh", "trunc",
    # creation
    "arange", "asarray", "empty", "empty_like", "eye", "from_dlpack", "full", "full_like", "linspace", "meshgrid",
    "ones", "ones_like", "tril", "triu", "zeros", "zeros_like",
    # data types
    "astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type",
    # manipulation
    "broadcast_arrays", "broadcast_shapes", "broadcast_to", "concat", "expand_dims", "flip", "moveaxis",
    "permute_dims", "repeat", "reshape", "roll", "squeeze", "stack", "tile", "unstack",
    # searching, sets, sorting
    "argmax", "argmin", "count_nonzero", "nonzero", "searchsorted", "where", "isin", "unique_all", "unique_counts",
    "unique_inverse", "unique_values", "argsort", "sort",
    # statistical and utility
    "cumulative_prod", "cumulative_sum", "max", "mean", "min", "prod", "std", "sum", "var", "all", "any", "diff",
    # indexing and linear algebra
    "take", "take_along_axis", "matmul", "matrix_transpose", "tensordot", "vecdot",
)
LINALG = (
    "cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul", "matrix_norm", "matrix_power",
    "matrix_rank", "matrix_transpose", "outer", "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "tensordot",
    "trace", "vecdot", "vector_norm",
)
FFT = (
    "fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft", "fftfreq", "rfftfreq",
    "fftshift", "ifftshift",
)
DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64",
          "complex64", "complex128")
CONSTANTS = {"e": math.e, "inf": math.inf, "nan": math.nan, "pi": math.pi, "newaxis": None}

#: Functions with no array input: they create on the namespace's backend.
_CREATION = frozenset({"arange", "asarray", "empty", "eye", "from_dlpack", "full", "linspace", "ones", "zeros",
                       "fftfreq", "rfftfreq"})
#: Functions about dtypes and shapes: they take and return no arrays of ours.
_INSPECTION = frozenset({"can_cast", "finfo", "iinfo", "isdtype", "result_type", "broadcast_shapes"})
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


def _resolve(name: str, backend: Any, xp_module: Any, ops: dict[str, Any]) -> Callable | None:
    if name in _INSPECTION:  # about dtypes and shapes: the backend's own function on unwrapped arguments
        fn = getattr(xp_module, name, None)
        return None if fn is None else _inspection(fn)
    try:
        fn = ops[name]
    except KeyError:
        raise RuntimeError(f"polygrad: the Array API function {name!r} has no row in the op table") from None
    return _on_backend(fn, backend) if name in _CREATION else fn


class ArrayNamespace(types.ModuleType):
    """The Array API namespace of one backend, over Variables."""

    def __init__(self, backend: Any) -> None:
        super().__init__(f"polygrad.array_api.{backend.name}")
        from polygrad import ops
        from polygrad.ops import fft as fft_ops
        from polygrad.ops import linalg as linalg_ops

        xp = backend.xp
        self.__doc__ = f"The Array API namespace of polygrad Variables on the {backend.name!r} backend."
        self.__array_api_version__ = getattr(xp, "__array_api_version__", _DEFAULT_VERSION)
        self.backend = backend
        for name in DTYPES:
            if hasattr(xp, name):
                setattr(self, name, getattr(xp, name))
        for name, value in CONSTANTS.items():
            setattr(self, name, value)
        available = {n: getattr(ops, n) for n in ops.__all__ if callable(getattr(ops, n))}
        for name in FUNCTIONS:
            fn = _resolve(name, backend, xp, available)
            if fn is not None:
                setattr(self, name, fn)
        if hasattr(xp, "__array_namespace_info__"):
            self.__array_namespace_info__ = xp.__array_namespace_info__
        self.linalg = self._extension("linalg", LINALG, backend, getattr(xp, "linalg", None), linalg_ops)
        self.fft = self._extension("fft", FFT, backend, getattr(xp, "fft", None), fft_ops)

    def _extension(self, ext: str, names: tuple, backend: Any, xp_ext: Any, ops_module: Any) -> types.ModuleType | None:
        if xp_ext is None:
            return None
        mod = types.ModuleType(f"{self.__name__}.{ext}")
        own = tuple(getattr(ops_module, "__all__", ())) + tuple(getattr(ops_module, "EXTENSION", ()))
        available = {n: getattr(ops_module, n) for n in own if callable(getattr(ops_module, n))}
        available.update({n: getattr(self, n) for n in ("matmul", "matrix_transpose", "tensordot", "vecdot") if hasattr(self, n) and n not in available})
        for name in names:
            fn = _resolve(name, backend, xp_ext, available)
            if fn is not None:
                setattr(mod, name, fn)
        return mod

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

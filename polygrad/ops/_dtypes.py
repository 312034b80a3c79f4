"""The dtypes a backend's namespace declares, read once per namespace.

Rules and kernels never name ``xp.int64`` or ``xp.float64``: a backend may have
32-bit default integers (jax) or no float64 at all. They ask the namespace,
through the standard's ``__array_namespace_info__().default_dtypes()``; a
namespace of a version before 2023.12, which has no inspection API, is asked
what ``asarray`` of a Python number gives.
"""

from __future__ import annotations

import numbers
import warnings
from typing import Any

from polygrad.core.dispatch import backend_of_type, has_namespace
from polygrad.core.integers import as_int
from polygrad.core.variable import kind_of

__all__ = ["check_complex_cast", "check_number_fits", "default_dtypes", "drawn_in", "dtype_named", "holds",
           "index_dtype", "positions", "python_type_dtype", "resolved_dtype", "widened", "widened_of",
           "widest_floating"]

_cache: dict[int, tuple[Any, dict]] = {}  # id(xp) -> (xp, defaults); xp is kept so that its id stays its own


def default_dtypes(xp: Any) -> dict:
    """The namespace's default dtypes: ``{"real floating", "complex floating", "integral", "indexing"}``."""
    hit = _cache.get(id(xp))
    if hit is not None and hit[0] is xp:
        return hit[1]
    info = getattr(xp, "__array_namespace_info__", None)
    if info is not None:
        found = dict(info().default_dtypes())
    else:
        integral = xp.asarray(0).dtype
        found = {"real floating": xp.asarray(0.0).dtype, "complex floating": xp.asarray(0j).dtype,
                 "integral": integral, "indexing": integral}
    _cache[id(xp)] = (xp, found)
    return found


#: The names of the floating dtypes narrower than float32 that libraries have (no standard
#: dtypes): a symbolic array's dtype is one of these names (see polygrad.compile.symbolic);
#: bfloat16 first, as its name ends with the other.
NARROW_NAMES = ("bfloat16", "float16")

_widened: dict = {}  # (id(xp), type(dtype), dtype) -> (xp, float32 or None)


def widened(xp: Any, dtype: Any) -> Any:
    """float32 where ``dtype`` is a real floating dtype narrower than it (float16, bfloat16: no
    standard dtypes, but numpy's, cupy's and jax's), else None: statistics of such arrays are
    taken in float32, as torch and flax take them. Squares of float16 values past 256 overflow,
    and numpy's ``var`` sums them in float16 (the std of 5,000 twenties was inf)."""
    key = (id(xp), type(dtype), dtype)
    hit = _widened.get(key)
    if hit is None or hit[0] is not xp:
        narrow = xp.isdtype(dtype, "real floating") and xp.finfo(dtype).bits < 32
        hit = _widened[key] = (xp, dtype_named(xp, "float32", "polygrad") if narrow else None)
    return hit[1]


def widened_of(a: Any) -> Any:
    """:func:`widened` of the array ``a``'s dtype; for a symbolic array, whose dtype is a name
    (the program runs on a namespace not known yet), ``"float32"`` for the narrow names."""
    if a.dtype is None or isinstance(a.dtype, str):
        return "float32" if a.dtype in NARROW_NAMES else None
    try:
        xp = backend_of_type(type(a)).xp
    except TypeError:
        return None
    return widened(xp, a.dtype)


def drawn_in(xp: Any, dtype: Any) -> Any:
    """The dtype in which uniform draws for an array of ``dtype`` are made (dropout's mask), and
    in which integer weights are taken: a real floating dtype of at least 32 bits itself; float32
    for a narrower one (a float16 uniform is rounded to the nearest float16, which moves a ratio
    of 0.9995); the default real floating dtype for an integer or boolean one (a uniform drawn in
    an integer dtype is always 0). The distributions compare their draws with probabilities in
    :func:`widest_floating` instead: a float32 uniform is a multiple of 2**-24."""
    if xp.isdtype(dtype, "real floating"):
        return widened(xp, dtype) or dtype
    return default_dtypes(xp)["real floating"]


_widest: dict[int, tuple[Any, Any]] = {}  # id(xp) -> (xp, dtype), as _cache


def widest_floating(xp: Any) -> Any:
    """The namespace's widest real floating dtype: float64 where it declares one
    (``__array_namespace_info__().dtypes()``; a namespace before 2023.12: where it has the
    attribute), else float32. The distributions draw their uniforms in it and compare them with
    the probabilities there, whatever the parameters' dtype: a float32 uniform, a multiple of
    2**-24, drew 1 with probability 2**-24 for ``Bernoulli(p)`` of any smaller p (600 times too
    often at 1e-10), and never a class of ``Categorical`` whose share was below it."""
    hit = _widest.get(id(xp))
    if hit is not None and hit[0] is xp:
        return hit[1]
    info = getattr(xp, "__array_namespace_info__", None)
    if info is not None:
        declared = info().dtypes(kind="real floating")
    else:
        declared = {name: getattr(xp, name) for name in ("float32", "float64") if hasattr(xp, name)}
    found = declared.get("float64", declared.get("float32", default_dtypes(xp)["real floating"]))
    _widest[id(xp)] = (xp, found)
    return found


def index_dtype(xp: Any) -> Any:
    """The dtype of the namespace's indices (``argmax``, ``nonzero``...): what positions are written in."""
    return default_dtypes(xp)["indexing"]


def positions(xp: Any, n: int, dtype: Any) -> Any:
    """``arange(n)`` to compare labels of ``dtype`` with, or to index beside them: in ``dtype``
    itself, unless it is an integer dtype too narrow for ``n - 1``, then in the index dtype
    (``arange(300)`` in uint8 would wrap around to ..., 255, 0, 1, ...; a label of 1 would then
    match two classes). Every integer dtype holds 127, so up to 128 positions ask nothing."""
    if n > 128 and xp.isdtype(dtype, "integral") and xp.iinfo(dtype).max < n - 1:
        dtype = index_dtype(xp)
    return xp.arange(n, dtype=dtype)


_named: dict = {}  # (id(xp), name or Python type) -> (xp, dtype), as _cache: names are resolved once


def dtype_named(xp: Any, name: str, asked_by: str) -> Any:
    """The namespace's dtype called ``name``: where the namespace declares it
    (``__array_namespace_info__().dtypes()``; a namespace before 2023.12: where it has the
    attribute), that dtype; a narrow floating dtype (:data:`NARROW_NAMES`: no standard dtypes,
    so no namespace declares them) where it has the attribute; else the dtype the library itself
    makes of the name (its ``dtype`` constructor, else ``asarray(0, dtype=name)``: numpy's
    ``"double"``, ``"f8"``, ``"intc"``), where that is a bool or numeric dtype the library really
    makes arrays of. Refused otherwise, with polygrad's message: jax in 32-bit mode reads
    ``"float64"`` and ``"f8"`` as float64 but makes float32 of it (with a warning only).
    ``asked_by`` names the caller for the error."""
    hit = _named.get((id(xp), name))
    if hit is not None and hit[0] is xp:
        return hit[1]
    info = getattr(xp, "__array_namespace_info__", None)
    declared = info().dtypes() if info is not None else {}
    if name in declared:
        found = declared[name]
    elif (info is None or name in NARROW_NAMES) and hasattr(xp, name):
        found = getattr(xp, name)
    else:
        found = _library_dtype(xp, name, declared)
    if found is None:
        raise TypeError(f"polygrad: {asked_by} asks for {name}, which the namespace {getattr(xp, '__name__', xp)!r} "
                        f"does not have (it declares {', '.join(declared) or 'none of its dtypes'})")
    _named[(id(xp), name)] = (xp, found)
    return found


def _library_dtype(xp: Any, name: str, declared: dict) -> Any:
    """The dtype the library makes of ``name`` (see :func:`dtype_named`), or None."""
    with warnings.catch_warnings():  # (jax warns where it makes float32 of float64: refused below)
        warnings.simplefilter("ignore")
        try:
            make = getattr(xp, "dtype", None)
            found = make(name) if callable(make) else xp.asarray(0, dtype=name).dtype
            if any(found == d for d in declared.values()):
                return found
            if xp.asarray(0, dtype=found).dtype == found and xp.isdtype(found, ("bool", "numeric")):
                return found
        except Exception:  # (each library its own error: TypeError, ValueError...)
            pass
    return None


#: A Python type as a dtype (numpy's ``dtype=float``): the standard's default dtype of its kind.
_PYTHON_TYPES = (bool, int, float, complex)


def python_type_dtype(xp: Any, t: type) -> Any:
    """The dtype ``dtype=t`` means for one of Python's number types: that of ``asarray`` of a
    Python number of the type, the namespace's default of its kind (the standard's
    ``default_dtypes()``): numpy's ``dtype=float`` is float64, jax's in 32-bit mode float32, where
    array_api_strict takes dtypes only and numpy's ``isdtype`` refused the type."""
    hit = _named.get((id(xp), t))
    if hit is None or hit[0] is not xp:
        hit = _named[(id(xp), t)] = (xp, xp.asarray(t()).dtype)
    return hit[1]


def resolved_dtype(xp: Any, dtype: Any, asked_by: str) -> Any:
    """``dtype``; where it is a name, the namespace's dtype of that name (:func:`dtype_named`); where
    it is a Python number type (``float``), the namespace's default dtype of its kind
    (:func:`python_type_dtype`). Functions that take dtypes (the creation functions, ``astype``,
    a compiled program's ops) resolve them once, where they enter, and hand the dtype to their
    kernels and checks: array_api_strict takes dtypes only (``zeros(dtype="float32")`` raised its
    ValueError), as do ``isdtype`` and ``iinfo``."""
    if isinstance(dtype, str):
        return dtype_named(xp, dtype, asked_by)
    if isinstance(dtype, type) and dtype in _PYTHON_TYPES:
        return python_type_dtype(xp, dtype)
    return dtype


def resolved_like(x: Any, dtype: Any, asked_by: str) -> Any:
    """``dtype`` for a ``*_like`` function of ``x`` (an array or a Variable): a name resolved on x's
    backend (:func:`resolved_dtype`); a symbolic x's program resolves it when it runs."""
    data = getattr(x, "_data", x)
    return resolved_dtype(backend_of_type(type(data)).xp, dtype, asked_by) if has_namespace(data) else dtype


def holds(xp: Any, dtype: Any, value: int) -> bool:
    """Whether an array of ``dtype`` can hold the Python int ``value``: any dtype but an integer
    one, which holds its range only (an ignore_label of -1 for uint8 labels: no label can equal
    it, and comparing with it is not one the standard specifies; array_api_strict refuses it)."""
    if not xp.isdtype(dtype, "integral"):
        return True
    info = xp.iinfo(dtype)
    return int(info.min) <= value <= int(info.max)


def check_number_fits(xp: Any, dtype: Any, value: Any, what: str) -> None:
    """numpy's refusals of a number put into an array of ``dtype``, on every backend (dask kept
    the real part of a complex value, and took an int out of the dtype's range, failing only when
    computed): a complex value into a dtype that is not complex, an int out of an integer dtype's
    range; and item assignment's refusal of a float (3.7, 3.0, NaN: NumPy's floating scalars too)
    into an integer dtype, which numpy's ``full`` and ``arange`` truncated silently. A 0-d array
    (a reduction's result) counts by its dtype's kind, as a NumPy scalar does. ``what`` names the
    operation for the message."""
    kind = _number_kind(value)
    if kind == "complex floating":
        if not xp.isdtype(dtype, "complex floating"):
            raise TypeError(f"polygrad: {what}: a complex value ({value!r}) cannot be put into an array of dtype "
                            f"{dtype} (its imaginary part would be lost)")
    elif kind == "real floating":
        if xp.isdtype(dtype, "integral"):
            raise TypeError(f"polygrad: {what}: a float value ({value!r}) cannot be put into an array of dtype "
                            f"{dtype} (x[key] = value refuses it too; give an int)")
    elif kind == "integral" and xp.isdtype(dtype, "integral"):
        number, info = as_int(value), xp.iinfo(dtype)
        if number is not None and not int(info.min) <= number <= int(info.max):
            raise OverflowError(f"polygrad: {what}: {number} is out of the range of dtype {dtype} "
                                f"[{int(info.min)}, {int(info.max)}]")


def _number_kind(value: Any) -> str | None:
    """The standard's kind of a Python or NumPy number, or of a 0-d array by its dtype; None for
    anything else (left to the kernel)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, numbers.Complex):  # (not Decimal, a Number of no kind of these)
        return ("integral" if isinstance(value, numbers.Integral) else "real floating"
                if isinstance(value, numbers.Real) else "complex floating")
    if has_namespace(value) and getattr(value, "ndim", None) == 0 and not isinstance(value.dtype, str):
        return kind_of(value)
    return None


def check_complex_cast(a: Any, dtype: Any, what: str) -> None:
    """Refuse to cast the complex array ``a`` to a real ``dtype`` (a dtype, or its name as numpy
    takes it): the standard's ``astype`` "should not" permit it, as the choice of the real part is
    arbitrary (numpy and dask dropped the imaginary part, with a warning at most). A name is
    resolved on ``a``'s namespace (:func:`dtype_named`). ``what`` names the call for the message.

    The astype row's kernel asks it, so that eager calls and compiled programs (traced on their
    inputs' arrays, of the dtypes the symbolic inputs declare) pass the one check; the row's
    error names the op, the backend and ``a``. A symbolic array (kind unknown) is not asked."""
    if not hasattr(a, "dtype") or kind_of(a) != "complex floating":  # (cached per dtype: astype is on hot paths)
        return
    backend = backend_of_type(type(a))
    to = resolved_dtype(backend.xp, dtype, what)
    if not backend.xp.isdtype(to, "complex floating"):
        raise TypeError(f"{what} of a complex array to {getattr(to, '__name__', to)} would drop its imaginary part "
                        f"(x is {a.dtype} of shape {tuple(a.shape)} on backend {backend.name!r}); take pg.real(x) "
                        f"(or pg.abs(x)) first")

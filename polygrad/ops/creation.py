"""Array creation functions: kernels and vjp rules.

Functions without array inputs (arange, asarray of Python data, empty, eye,
from_dlpack, full, linspace, ones, zeros) create on the current backend
(``pg.get_backend()`` when they are called; a Variable namespace makes its own
backend current around them) and return Variables that do not require grad.
``asarray`` of a Variable returns it (a differentiable copy if ``copy=True`` or
a dtype is asked for); ``tril``/``triu`` and ``meshgrid`` are differentiable;
``empty_like``/``full_like`` give no gradient (their values do not depend on x's).
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from polygrad.core.dispatch import backend_of_type, current_backend, has_namespace, is_array
from polygrad.core.integers import as_int
from polygrad.core.op import Op, def_linear, def_nograd, defvjp
from polygrad.core.primitive import apply
from polygrad.core.variable import Variable
from polygrad.ops._dtypes import check_number_fits, resolved_dtype, resolved_like
from polygrad.ops._export import names, public
from polygrad.ops.manipulation import broadcast_to, known_target, reshape, stack
from polygrad.ops.elementwise import cast_grad


# ---------------------------------------------------------------------------
# From nothing: no gradient (Python numbers and shapes in, arrays out). Kernels are
# written out where the standard makes a parameter positional-only (apply passes
# parameters by keyword).
# ---------------------------------------------------------------------------
ARANGE = def_nograd(Op("arange", lambda xp, start, stop=None, step=1, dtype=None, device=None:
                       xp.arange(start, stop, step, dtype=dtype, device=device)))


def count(n: Any, what: str, fn: str, least: int = 0) -> int:
    """``n`` as an int of at least ``least``, checked where the size enters (dask made (0, 0) of
    ``eye(-1)`` and two points of ``linspace(0, 1, 2.5)``; numpy refuses both)."""
    value = as_int(n)
    if value is None:
        raise TypeError(f"polygrad.{fn}: {what} must be an int, got {'the bool ' * isinstance(n, bool)}{n!r}")
    if value < least:
        raise ValueError(f"polygrad.{fn}: {what} must be an int of at least {least}, got {n!r}")
    return value


@public(creates=True)
def arange(start, /, stop=None, step=1, *, dtype=None, device=None):
    if dtype is not None:
        xp = current_backend().xp
        dtype = resolved_dtype(xp, dtype, "arange")
        if xp.isdtype(dtype, "integral"):
            _check_arange_fits(xp, start, stop, step, dtype)
    return apply(ARANGE, (), {"start": start, "stop": stop, "step": step, "dtype": dtype, "device": device})


def _check_arange_fits(xp: Any, start: Any, stop: Any, step: Any, dtype: Any) -> None:
    """The first and last values of a range into the integer ``dtype`` pass a fill's check
    (``check_number_fits``). Every backend wrapped one out of the dtype's range
    (``arange(250, 260, dtype=uint8)`` ended 254, 255, 0, 1, 2, 3; NumPy's integers and float
    bounds too), and numpy truncated floats (``arange(0, 2, 0.5, dtype=int32)`` gave zeros):
    the values are floats where ``start`` or ``step`` is one, refused as item assignment refuses them."""
    first, end, by = (_real(n) for n in ((0, start, step) if stop is None else (start, stop, step)))
    if None in (first, end, by) or not by or not all(math.isfinite(b) for b in (first, end, by) if type(b) is not int):
        return  # (the kernel's own error)
    if isinstance(first, int) and isinstance(end, int) and isinstance(by, int):
        values = range(first, end, by)  # (exact, where a float's ceil is not past 2**53)
    else:
        n = max(0, math.ceil((end - first) / by))
        values = [first, first + (n - 1) * by] if n else []
    if values:
        for value in (values[0], values[-1]):
            check_number_fits(xp, dtype, value, f"arange({start}, {stop}, {step})")


def _real(n: Any) -> Any:
    """A bound of ``arange`` as a Python int (NumPy's integers too: ``as_int``), else a real number
    as it is, else None (not a number: left to the kernel)."""
    value = as_int(n)
    if value is None and isinstance(n, numbers.Real) and not isinstance(n, bool):
        return n
    return value


EMPTY = def_nograd(Op("empty"))


@public(creates=True)
def empty(shape, *, dtype=None, device=None):
    dtype = resolved_dtype(current_backend().xp, dtype, "empty")
    return apply(EMPTY, (), {"shape": shape, "dtype": dtype, "device": device})


ZEROS = def_nograd(Op("zeros"))


@public(creates=True)
def zeros(shape, *, dtype=None, device=None):
    dtype = resolved_dtype(current_backend().xp, dtype, "zeros")
    return apply(ZEROS, (), {"shape": shape, "dtype": dtype, "device": device})


ONES = def_nograd(Op("ones"))


@public(creates=True)
def ones(shape, *, dtype=None, device=None):
    dtype = resolved_dtype(current_backend().xp, dtype, "ones")
    return apply(ONES, (), {"shape": shape, "dtype": dtype, "device": device})


FULL = def_nograd(Op("full"))


def _check_fill(fill_value: Any, dtype: Any, xp: Any, fn: str) -> None:
    """A number that does not fit ``dtype`` (given, or the array's; resolved) of namespace ``xp``:
    refused as in item assignment (numpy dropped a complex value's imaginary part with a
    warning, and truncated 3.7 into an int dtype to 3; dask took an int out of range and failed
    when computed). NumPy's numbers and 0-d arrays too: np.int64(300) into int8 gave 44,
    np.array(3.7) into int32 gave 3, silently."""
    if fill_value is None or isinstance(fill_value, (str, bytes)):  # (numpy: NaN of None, text arrays)
        raise TypeError(f"polygrad.{fn}: fill_value must be a number, got {fill_value!r}")
    if dtype is not None and xp is not None:
        check_number_fits(xp, dtype, fill_value, f"{fn} with fill_value={fill_value!r}")


def _made(out: Any, what: Any, fn: str) -> Any:
    """``out``, refused where its dtype is none of the standard's: numpy makes object and string
    arrays of None, text, Decimal... (no op of the standard takes them; such Variables failed
    later, deep inside some op)."""
    data = out._data if isinstance(out, Variable) else out
    if has_namespace(data) and not _standard_dtype(backend_of_type(type(data)).xp, data.dtype):
        raise TypeError(f"polygrad.{fn}: {what!r} makes an array of dtype {data.dtype}, which is not one of the "
                        f"standard's (bool, integer, floating or complex)")
    return out


@public(creates=True)
def full(shape, fill_value, *, dtype=None, device=None):
    xp = current_backend().xp
    dtype = resolved_dtype(xp, dtype, "full")
    _check_fill(fill_value, dtype, xp, "full")
    return _made(apply(FULL, (), {"shape": shape, "fill_value": fill_value, "dtype": dtype, "device": device}),
                 fill_value, "full")


EYE = def_nograd(Op("eye", lambda xp, n_rows, n_cols=None, k=0, dtype=None, device=None:
                    xp.eye(n_rows, n_cols, k=k, dtype=dtype, device=device)))


@public(creates=True)
def eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None):
    n_rows = count(n_rows, "n_rows", "eye")
    n_cols = None if n_cols is None else count(n_cols, "n_cols", "eye")
    k = count(k, "k", "eye", least=-(1 << 62))  # any int (dask made zeros of k=1.5)
    dtype = resolved_dtype(current_backend().xp, dtype, "eye")
    return apply(EYE, (), {"n_rows": n_rows, "n_cols": n_cols, "k": k, "dtype": dtype, "device": device})


LINSPACE = def_nograd(Op("linspace", lambda xp, start, stop, num, dtype=None, device=None, endpoint=True:
                         xp.linspace(start, stop, num, dtype=dtype, device=device, endpoint=endpoint)))


@public(creates=True)
def linspace(start, stop, /, num, *, dtype=None, device=None, endpoint=True):
    num = count(num, "num", "linspace")
    dtype = resolved_dtype(current_backend().xp, dtype, "linspace")
    return apply(LINSPACE, (), {"start": start, "stop": stop, "num": num, "dtype": dtype, "device": device, "endpoint": endpoint})


def _dlpack_kernel(xp: Any, x: Any, device: Any = None, copy: Any = None) -> Any:
    kwargs = {k: v for k, v in (("device", device), ("copy", copy)) if v is not None}
    return xp.from_dlpack(x, **kwargs)


FROM_DLPACK = def_nograd(Op("from_dlpack", _dlpack_kernel))


@public(creates=True)
def from_dlpack(x, /, *, device=None, copy=None):
    if isinstance(x, Variable):
        return asarray(x, device=device, copy=copy)
    return apply(FROM_DLPACK, (), {"x": x, "device": device, "copy": copy})


# ---------------------------------------------------------------------------
# From arrays
# ---------------------------------------------------------------------------
def _find_variable(obj: Any) -> Variable | None:
    if isinstance(obj, Variable):
        return obj
    if isinstance(obj, (list, tuple)):
        for item in obj:
            found = _find_variable(item)
            if found is not None:
                return found
    return None


def _asarray_variable(x: Variable, dtype: Any, device: Any, copy: Any) -> Variable:
    if backend_of_type(type(x._data)) is not current_backend():
        from polygrad.backends import to_backend

        if x.requires_grad:
            raise TypeError(
                f"polygrad: asarray of a Variable of backend {x.backend.name!r} on backend {current_backend().name!r}: "
                "no gradient crosses backends; use pg.to_backend(x.detach(), name) to move the data"
            )
        return asarray(to_backend(x._data, current_backend().name), dtype=dtype, device=device, copy=copy)
    same = (dtype is None or dtype == x.dtype) and (device is None or device == x.device)
    if same and not copy:
        return x
    if copy is False:
        raise ValueError(f"polygrad: asarray(copy=False) cannot give dtype {dtype} / device {device} without a copy "
                         f"(the Variable has dtype {x.dtype})")
    params = {k: v for k, v in (("dtype", dtype), ("device", device), ("copy", copy)) if v is not None}
    return apply(ASARRAY, (x,), params)


def _asarray_nested(obj: Any, dtype: Any) -> Variable:
    """A nested sequence holding Variables: ``stack`` of its items (differentiable)."""
    if isinstance(obj, (list, tuple)):
        return stack([_asarray_nested(item, dtype) for item in obj], axis=0)
    return asarray(obj, dtype=dtype)


def _asarray_vjp(o: Any, g: Any, ans: Any, obj: Any, dtype: Any = None, device: Any = None, copy: Any = None) -> Any:
    return cast_grad(o, g, obj)  # (a real array made complex: the real part, as astype's rule)


ASARRAY = defvjp(Op("asarray", lambda xp, obj, dtype=None, device=None, copy=None:
                    xp.asarray(obj, dtype=dtype, device=device, copy=copy), shapes=True, casts=True),
                 _asarray_vjp)


@public(creates=True)
def asarray(obj, /, *, dtype=None, device=None, copy=None):
    if isinstance(obj, Variable):
        return _asarray_variable(obj, dtype, device, copy)
    found = _find_variable(obj)
    if found is not None:
        return _asarray_nested(obj, dtype if dtype is not None else found.dtype)
    if is_array(obj) and backend_of_type(type(obj)) is not current_backend():
        from polygrad.backends import to_backend

        obj = to_backend(obj, current_backend().name)
    return _made(apply(ASARRAY, (), {"obj": obj, "dtype": dtype, "device": device, "copy": copy}), obj, "asarray")


_STANDARD: dict = {}  # (id(xp), dtype) -> whether the standard has it (asked once: xp.isdtype is slow)


def _standard_dtype(xp: Any, dtype: Any) -> bool:
    try:
        return _STANDARD[(id(xp), dtype)]
    except KeyError:
        pass
    except TypeError:  # a dtype that is not hashable
        return _isdtype_standard(xp, dtype)
    known = _STANDARD[(id(xp), dtype)] = _isdtype_standard(xp, dtype)
    return known


def _isdtype_standard(xp: Any, dtype: Any) -> bool:
    try:
        return bool(xp.isdtype(dtype, ("bool", "numeric")))
    except (TypeError, ValueError):
        return False


EMPTY_LIKE = def_nograd(Op("empty_like"))


@public
def empty_like(x, /, *, dtype=None, device=None):
    dtype = resolved_like(x, dtype, "empty_like")
    return apply(EMPTY_LIKE, (x,), {"dtype": dtype, "device": device})


def _full_like_kernel(xp: Any, x: Any, fill_value: Any, dtype: Any = None, device: Any = None) -> Any:
    # The kernel checks the fill too: a compiled program runs it, not full_like, on arrays whose
    # dtype the symbolic x only names (an int32 input took 3.7 as 3); eager calls checked it first.
    _check_fill(fill_value, x.dtype if dtype is None else dtype, xp, "full_like")
    return xp.full_like(x, fill_value, dtype=dtype, device=device)


FULL_LIKE = def_nograd(Op("full_like", _full_like_kernel))


@public
def full_like(x, /, fill_value, *, dtype=None, device=None):
    return filled_like(x, fill_value, dtype, device, "full_like")


def filled_like(x: Any, fill_value: Any, dtype: Any, device: Any, fn: str) -> Any:
    """``full_like``, its errors naming ``fn``, the function called (``fill_``: ``x.fill_(3.5)``
    is ``full_like(x, 3.5)``); a symbolic x's fill is checked by the kernel when its program runs."""
    data = x._data if isinstance(x, Variable) else x
    dtype = resolved_like(x, dtype, fn)
    if has_namespace(data):
        _check_fill(fill_value, dtype if dtype is not None else data.dtype, backend_of_type(type(data)).xp, fn)
    return _made(apply(FULL_LIKE, (x,), {"fill_value": fill_value, "dtype": dtype, "device": device}), fill_value, fn)


TRIL = def_linear(Op("tril"))


@public
def tril(x, /, *, k=0):
    return apply(TRIL, (x,), {"k": k})


TRIU = def_linear(Op("triu"))


@public
def triu(x, /, *, k=0):
    return apply(TRIU, (x,), {"k": k})


@public
def meshgrid(*arrays, indexing="xy"):
    """Composed: each 1-D array reshaped onto its axis and broadcast to the grid."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"polygrad: meshgrid: indexing must be 'xy' or 'ij', not {indexing!r}")
    sizes = [a.shape[0] if a.ndim else 1 for a in arrays]
    axes = list(range(len(arrays)))
    if indexing == "xy" and len(arrays) > 1:
        axes[0], axes[1] = 1, 0
        sizes[0], sizes[1] = sizes[1], sizes[0]
    known_target(tuple(sizes), "meshgrid", tuple(tuple(a.shape) for a in arrays))
    out = []
    for a, ax in zip(arrays, axes):
        lined = reshape(a, tuple(-1 if i == ax else 1 for i in range(len(arrays))))
        out.append(broadcast_to(lined, tuple(sizes)))
    return tuple(out)


__all__ = names(__name__)  # the public functions declared above

"""Helpers shared by the suite: building inputs and comparing arrays with the
backend's own namespace (no second array library is needed)."""

from __future__ import annotations

import math
from typing import Any

import polygrad as pg
from polygrad.core.dispatch import backend_of_type


def index_dtype(xp: Any) -> Any:
    """The namespace's default indexing dtype (int64 on numpy, int32 on jax's 32-bit mode): what
    the suite builds index arrays with, as the standard says (never a fixed ``xp.int64``)."""
    return xp.__array_namespace_info__().default_dtypes()["indexing"]


def data(x: Any) -> Any:
    return x.data if isinstance(x, pg.Variable) else x


def array(xp: Any, values: Any, dtype: Any, shape: tuple | None = None) -> Any:
    """An array of the backend from (nested) Python values."""
    a = xp.asarray(values, dtype=dtype)
    return a if shape is None else xp.reshape(a, tuple(shape))


def tolist(x: Any) -> Any:
    """Nested Python values of a (small) array of any backend, for messages."""
    x = data(x)
    if isinstance(x, (bool, int, float, complex)):
        return x
    backend = backend_of_type(type(x))
    (x,) = backend.materialize((x,))
    if hasattr(x, "tolist"):
        return x.tolist()
    if x.ndim == 0:
        # the kind by the standard's isdtype, not by the dtype's name: "float" is no substring of
        # "complex64" (a complex value became bool(x), True, and the float32 gradient checks of the
        # complex cases, which sum on the host, compared garbage)
        xp = backend.xp
        for kind, convert in (("complex floating", complex), ("real floating", float), ("integral", int)):
            if xp.isdtype(x.dtype, kind):
                return convert(x)
        return bool(x)
    return [tolist(x[i, ...]) for i in range(x.shape[0])]


def _is_float(xp: Any, dtype: Any) -> bool:
    return xp.isdtype(dtype, "real floating")


def _is_complex(xp: Any, dtype: Any) -> bool:
    return xp.isdtype(dtype, "complex floating")


def assert_same(actual: Any, expected: Any, *, backend: Any, rtol: float, atol: float, what: str = "",
                values: bool = True, signed_zeros: bool = False) -> None:
    """``actual`` is an array of ``backend`` with ``expected``'s shape, dtype and
    values (within tolerance for floats, exactly otherwise; NaNs match NaNs, infinities equal ones;
    ``values=False``: shape and dtype only; ``signed_zeros``: where the standard
    specifies the sign of a zero result, each real zero of ``expected`` is a zero
    of ``actual`` with its sign, -0.0 not +0.0)."""
    actual, expected = data(actual), data(expected)
    where = f"{what}: " if what else ""
    owner = backend_of_type(type(actual))
    assert owner is backend, f"{where}result is an array of backend {owner.name!r}, not {backend.name!r}"
    xp = backend.xp
    assert tuple(actual.shape) == tuple(expected.shape), (
        f"{where}shape {tuple(actual.shape)} != expected {tuple(expected.shape)}"
    )
    assert actual.dtype == expected.dtype, f"{where}dtype {actual.dtype} != expected {expected.dtype}"
    if not values:
        return
    if _is_float(xp, actual.dtype) or _is_complex(xp, actual.dtype):
        both_nan = xp.isnan(actual) & xp.isnan(expected)
        equal = actual == expected  # equal infinities too (their difference is NaN), subtracted as zeros
        zero = xp.zeros_like(actual)
        difference = xp.abs(xp.where(equal, zero, actual) - xp.where(equal, zero, expected))
        close = difference <= atol + rtol * xp.abs(expected)
        ok = bool(xp.all(equal | close | both_nan))
    else:
        ok = bool(xp.all(actual == expected))
    assert ok, f"{where}values differ (rtol={rtol}, atol={atol}):\nactual   {tolist(actual)}\nexpected {tolist(expected)}"
    if signed_zeros and _is_float(xp, actual.dtype):
        zeros = expected == 0
        same = bool(xp.all(~zeros | ((actual == 0) & (xp.signbit(actual) == xp.signbit(expected)))))
        assert same, (f"{where}signs of zeros differ (-0.0 is not +0.0 here):\nactual   {tolist(actual)}\n"
                      f"expected {tolist(expected)}")


def size(shape: tuple) -> int:
    return math.prod(shape)

"""Arrays: creation, conversion, Variables over them, pg.to_backend round trips,
pg.compute and pg.persist."""

from __future__ import annotations

import pytest

import polygrad as pg
from polygrad.core.dispatch import backend_of_type
from polygrad_conformance._util import assert_same, tolist

VALUES = [[1.0, -2.0, 3.5], [0.25, 0.0, -1.0]]


@pytest.mark.parametrize("dtype_name", ["float32", "float64", "int64", "bool"])
def test_asarray_from_lists(pg_backend, xp, info, dtype_name):
    """pg.asarray(nested lists, dtype=name) gives a Variable over an array of the backend with that shape and dtype."""
    if dtype_name == "float64" and not info.float64:
        pytest.skip(f"backend {pg_backend.name!r} declares float64=False in its BackendInfo")
    a = pg.asarray(VALUES, dtype=dtype_name).data
    assert backend_of_type(type(a)) is pg_backend
    assert tuple(a.shape) == (2, 3)
    assert a.dtype == getattr(xp, dtype_name)
    assert_same(a, xp.asarray(VALUES, dtype=getattr(xp, dtype_name)), backend=pg_backend, rtol=0, atol=0)


def test_asarray_default_float_dtype(pg_backend, xp):
    """Python floats become the namespace's default real floating dtype, Python ints its default
    integral dtype (``__array_namespace_info__().default_dtypes()``: float64 on numpy, float32 on
    torch and on jax's 32-bit mode)."""
    defaults = xp.__array_namespace_info__().default_dtypes()
    assert pg.asarray([1.0, 2.0]).dtype == defaults["real floating"], (
        f"pg.asarray([1.0, 2.0]) has dtype {pg.asarray([1.0, 2.0]).dtype}; the namespace's default real floating "
        f"dtype is {defaults['real floating']}"
    )
    assert pg.asarray([1, 2]).dtype == defaults["integral"], (
        f"pg.asarray([1, 2]) has dtype {pg.asarray([1, 2]).dtype}; the namespace's default integral dtype is "
        f"{defaults['integral']}"
    )


def test_asarray_at_every_declared_dtype(pg_backend, xp):
    """pg.asarray(values, dtype=d) keeps d for every real and complex floating dtype the namespace declares."""
    info = xp.__array_namespace_info__()
    for kind in ("real floating", "complex floating"):
        for name, dtype in info.dtypes(kind=kind).items():
            a = pg.asarray(VALUES, dtype=dtype).data
            assert backend_of_type(type(a)) is pg_backend and a.dtype == dtype, f"{name}: got {a.dtype}"
            assert pg.asarray(VALUES, dtype=name).dtype == dtype, f"dtype={name!r} (by name): got {a.dtype}"


def test_asarray_of_an_array_of_this_backend(pg_backend, xp, float_dtype):
    """pg.asarray of this backend's array (or a Variable of one) keeps values and backend."""
    a = xp.asarray(VALUES, dtype=float_dtype)
    assert_same(pg.asarray(a), a, backend=pg_backend, rtol=0, atol=0)
    assert_same(pg.asarray(pg.Variable(a)), a, backend=pg_backend, rtol=0, atol=0)


def test_variable_wraps_array(pg_backend, xp, float_dtype):
    """A Variable exposes its array's shape, dtype and ndim and holds the array itself."""
    a = xp.asarray(VALUES, dtype=float_dtype)
    v = pg.Variable(a, name="v")
    assert v.data is a
    assert v.shape == (2, 3) and v.ndim == 2 and v.dtype == float_dtype
    assert v.xp is xp and v.backend is pg_backend
    assert "v" in repr(v)


def test_to_backend_of_the_same_backend_is_identity(pg_backend, xp, float_dtype):
    """pg.to_backend(x, own name) returns x."""
    a = xp.asarray(VALUES, dtype=float_dtype)
    assert pg.to_backend(a, pg_backend.name) is a


@pytest.mark.requires("numpy")
def test_to_backend_round_trip_through_numpy(pg_backend, xp, float_dtype):
    """Data moved to numpy and back keeps values, shape and dtype; Variables keep name and requires_grad."""
    np_backend = pg.get_backend("numpy")
    a = xp.asarray(VALUES, dtype=float_dtype)
    if set(np_backend.array_types) & set(pg_backend.array_types):
        pytest.skip("this backend shares its array types with numpy")
    n = pg.to_backend(a, "numpy")
    assert backend_of_type(type(n)) is np_backend
    assert n.tolist() == tolist(a)
    back = pg.to_backend(n, pg_backend.name)
    assert_same(back, a, backend=pg_backend, rtol=0, atol=0)
    v = pg.to_backend(pg.Variable(a, name="w", requires_grad=False), "numpy")
    assert isinstance(v, pg.Variable) and v.name == "w" and not v.requires_grad
    assert backend_of_type(type(v.data)) is np_backend


def test_compute_returns_concrete_values(pg_backend, xp, float_dtype):
    """pg.compute(*items) returns one array per item, in order, with the items' values."""
    a = xp.asarray(VALUES, dtype=float_dtype)
    v = pg.Variable(a) * 2.0
    out = pg.compute(v, a, None)
    assert len(out) == 3 and out[2] is None
    assert tolist(out[0]) == [[2 * x for x in row] for row in VALUES]
    assert tolist(out[1]) == VALUES


def test_persist_keeps_backend_and_values(pg_backend, xp, float_dtype):
    """pg.persist keeps Variables' data arrays of the backend, with the same values."""
    v = pg.Variable(xp.asarray(VALUES, dtype=float_dtype)) * 2.0
    (same,) = pg.persist(v)
    assert same is v
    assert backend_of_type(type(v.data)) is pg_backend
    assert tolist(v) == [[2 * x for x in row] for row in VALUES]

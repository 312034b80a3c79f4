"""One meaning per standard name: the creation functions on ``pg`` (``pg.asarray``,
``pg.zeros``, ``pg.arange``, ...) return Variables that do not require grad, made on
the backend that is current when they are *called*; inside ``x.__array_namespace__()``
they create on that namespace's backend."""

from __future__ import annotations

import numpy as np
import pytest

import polygrad as pg
from polygrad.ops._export import EXPORTS

STRICT = "array_api_strict"

# One call per creation function of the standard, on pg (and pg.fft).
CALLS = {
    "arange": lambda ns: ns.arange(3),
    "asarray": lambda ns: ns.asarray([1.0, 2.0]),
    "empty": lambda ns: ns.empty((2,)),
    "eye": lambda ns: ns.eye(2),
    "from_dlpack": lambda ns: ns.from_dlpack(pg.get_backend().xp.ones(2)),  # an array of the current backend
    "full": lambda ns: ns.full((2,), 3.0),
    "linspace": lambda ns: ns.linspace(0.0, 1.0, 3),
    "ones": lambda ns: ns.ones((2,)),
    "zeros": lambda ns: ns.zeros((2,)),
    "fftfreq": lambda ns: ns.fft.fftfreq(4),
    "rfftfreq": lambda ns: ns.fft.rfftfreq(4),
}


def _backend_name(v):
    return v.backend.name


def test_every_creation_function_has_a_call_here():
    """Each function registered as creating on the current backend is exercised below."""
    assert {e.name for e in EXPORTS if e.creates} == set(CALLS)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_creation_functions_return_variables_not_requiring_grad(name):
    """pg.<creation>(...) returns a Variable that does not require grad."""
    v = CALLS[name](pg)
    assert isinstance(v, pg.Variable)
    assert not v.requires_grad


@pytest.mark.parametrize("name", sorted(CALLS))
def test_creation_functions_create_on_the_backend_current_at_call_time(name):
    """A creation function read outside using_backend creates on the backend current inside it, and back."""
    call = CALLS[name]
    with pg.using_backend(STRICT):
        assert _backend_name(call(pg)) == STRICT
    assert _backend_name(call(pg)) == pg.get_backend().name


def test_arange_read_under_using_backend_follows_the_current_backend_when_called():
    """ar = pg.arange inside using_backend(...) creates on the then-current backend when called outside."""
    with pg.using_backend(STRICT):
        ar = pg.arange
    assert _backend_name(ar(3)) == pg.get_backend().name != STRICT
    with pg.using_backend(STRICT):
        assert _backend_name(ar(3)) == STRICT


def test_asarray_and_zeros_return_the_same_kind_of_object():
    """pg.asarray and pg.zeros agree: both give Variables of the current backend, not requiring grad."""
    a, z = pg.asarray([0.0, 0.0]), pg.zeros((2,))
    assert type(a) is type(z) is pg.Variable
    assert a.requires_grad is z.requires_grad is False
    assert a.backend is z.backend is pg.get_backend()


def test_asarray_takes_a_dtype_by_name():
    """pg.asarray(obj, dtype="float32") (also positionally) gives the backend's float32."""
    assert pg.asarray([1, 2], dtype="float32").dtype == np.float32
    assert pg.asarray([1, 2], "float32").dtype == np.float32
    import array_api_strict

    assert pg.asarray([1, 2], "float32", backend=STRICT).dtype == array_api_strict.float32


def test_asarray_with_an_unknown_dtype_name_raises_naming_it():
    """A dtype name the backend lacks raises ValueError naming the name and the backend."""
    with pytest.raises(ValueError, match="floaty"):
        pg.asarray([1.0], "floaty")


def test_asarray_backend_keyword_creates_there_and_moves_arrays():
    """pg.asarray(..., backend=name) creates on that backend, moving an array of another one."""
    v = pg.asarray(np.array([1.0, 2.0]), backend=STRICT)
    assert _backend_name(v) == STRICT
    assert pg.to_backend(v.data, "numpy").tolist() == [1.0, 2.0]


def test_asarray_of_a_variable_returns_it():
    """pg.asarray(v) of a Variable of the current backend is v itself (the namespace's asarray does the same)."""
    v = pg.Variable(np.array([1.0, 2.0]))
    assert pg.asarray(v) is v
    assert v.__array_namespace__().asarray(v) is v


def test_namespace_creation_functions_keep_their_backend():
    """Inside x.__array_namespace__(), creation functions create on that backend whatever is current."""
    ns = pg.Variable(np.ones(2)).__array_namespace__()
    with pg.using_backend(STRICT):
        assert _backend_name(ns.zeros((2,))) == "numpy"
        assert _backend_name(ns.arange(3)) == "numpy"
        assert _backend_name(pg.zeros((2,))) == STRICT


def test_pg_functions_are_the_namespace_functions():
    """Functions that take arrays are one object on pg and in the namespace: the backend comes from the arguments."""
    ns = pg.Variable(np.ones(2)).__array_namespace__()
    assert pg.sin is ns.sin
    assert pg.linalg.inv is ns.linalg.inv
    assert pg.fft.fft is ns.fft.fft


def test_inspection_functions_resolve_at_call_time():
    """pg.finfo read outside using_backend answers with the backend of its argument, or the current one."""
    import array_api_strict

    finfo = pg.finfo
    assert float(finfo(np.float32).eps) == float(np.finfo(np.float32).eps)
    with pg.using_backend(STRICT):
        assert float(finfo(array_api_strict.float32).eps) == float(np.finfo(np.float32).eps)
    assert pg.result_type(pg.asarray([1.0], "float32"), pg.asarray([1.0], "float32")) == np.float32


def test_dtypes_on_pg_are_the_current_backends():
    """pg.float32 is the current backend's float32 (read when the attribute is read)."""
    import array_api_strict

    assert pg.float32 is np.float32
    with pg.using_backend(STRICT):
        assert pg.float32 is array_api_strict.float32


@pytest.mark.parametrize("backend_name", ["numpy", "dask", "array_api_strict"])
def test_arange_of_integers_out_of_the_dtype_range_is_refused(backend_name):
    """Every backend wrapped: arange(250, 260, dtype=uint8) ended 254, 255, 0, 1, 2, 3, and
    arange(0, 300, 100, dtype=int8) gave [0, 100, -56]."""
    with pg.using_backend(backend_name):
        xp = pg.get_backend().xp
        for args, dtype, last in [((250, 260), xp.uint8, 259), ((0, 300, 100), xp.int8, 200),
                                  ((-1, 3), xp.uint8, -1), ((130,), xp.int8, 129)]:
            with pytest.raises(OverflowError, match=rf"arange\(.*\): {last} is out of the range of dtype"):
                pg.arange(*args, dtype=dtype)
        ok = pg.arange(250, 256, dtype=xp.uint8)
        assert np.asarray(pg.to_backend(ok, "numpy")).tolist() == [250, 251, 252, 253, 254, 255]
        assert pg.arange(300, 0, dtype=xp.int8).shape == (0,)  # (empty: nothing to wrap)
        assert np.asarray(pg.to_backend(pg.arange(127, -129, -85, dtype=xp.int8), "numpy")).tolist() == [127, 42, -43,
                                                                                                          -128]


@pytest.mark.parametrize("fill", [np.int64(300), np.uint16(300), np.array(300)])
def test_full_refuses_a_numpy_integer_fill_value_that_does_not_fit(fill):
    """pg.full((2,), np.int64(300), dtype=int8) gave [44, 44]: the range check took Python ints only."""
    with pytest.raises((OverflowError, ValueError, TypeError), match="300"):
        pg.full((2,), fill, dtype=pg.int8)
    np.testing.assert_array_equal(pg.full((2,), np.int64(100), dtype=pg.int8).data, [100, 100])


@pytest.mark.parametrize("backend_name", ["numpy", "dask"])
def test_full_and_arange_take_a_dtype_name_with_an_integer_fill(backend_name):
    """pg.full((2,), np.int64(100), dtype="int8") raised numpy's "dtype argument must be a NumPy dtype"
    (the range check handed the name to isdtype and iinfo), as a Python int did, and arange's check
    too; the name is the namespace's dtype for the check, and out of range is still refused."""
    with pg.using_backend(backend_name):
        def got(v):
            return np.asarray(pg.to_backend(v.data, "numpy")).tolist()

        assert got(pg.full((2,), np.int64(100), dtype="int8")) == [100, 100]
        assert got(pg.full((2,), 100, dtype="int8")) == [100, 100]
        assert got(pg.full((2,), np.int32(3), dtype="float32")) == [3.0, 3.0]
        assert got(pg.full((2,), 1j, dtype="complex64")) == [1j, 1j]
        assert got(pg.full_like(pg.zeros((2,), dtype=pg.int8), np.int64(5), dtype="int16")) == [5, 5]
        assert got(pg.arange(0, 3, dtype="int8")) == [0, 1, 2]
        for fill in (np.int64(300), 300):
            with pytest.raises(OverflowError, match=r"polygrad: full with fill_value=.*300.*: 300 is out of the range"):
                pg.full((2,), fill, dtype="int8")
        with pytest.raises(TypeError, match=r"polygrad: full with fill_value=1j: a complex value"):
            pg.full((2,), 1j, dtype="float32")
        with pytest.raises(OverflowError, match=r"arange\(250, 260, 1\): 259 is out of the range of dtype uint8"):
            pg.arange(250, 260, dtype="uint8")


@pytest.mark.parametrize("backend_name", ["numpy", "dask", "array_api_strict"])
def test_arange_of_numpy_integer_or_float_bounds_out_of_the_dtype_range_is_refused(backend_name):
    """arange(np.int64(250), 260, dtype=uint8) and arange(0, 400.0, 100, dtype=uint8) wrapped to
    ..., 255, 0, 1, ... on every backend: the range check took Python ints only."""
    with pg.using_backend(backend_name):
        xp = pg.get_backend().xp
        for args, last in [((np.int64(250), 260), 259), ((250, np.int64(260)), 259), ((0, 400.0, 100), 300),
                           ((np.int16(300),), 299), ((0, np.float64(400.0), np.uint8(100)), 300)]:
            with pytest.raises(OverflowError, match=rf"arange\(.*\): {last} is out of the range of dtype"):
                pg.arange(*args, dtype=xp.uint8)
        ok = pg.arange(np.int64(250), 256.0, dtype=xp.uint8)
        assert np.asarray(pg.to_backend(ok, "numpy")).tolist() == [250, 251, 252, 253, 254, 255]


@pytest.mark.parametrize("backend_name", ["numpy", "dask", "array_api_strict"])
def test_arange_of_float_values_into_an_integer_dtype_is_refused_as_item_assignment_refuses_them(backend_name):
    """numpy truncated them: arange(0, 2, 0.5, dtype=int32) gave [0, 0, 0, 0], arange(0, 4, 1.5) [0, 1, 2]
    (first and last integral, 1.5 between); a float stop with an int start and step makes ints."""
    with pg.using_backend(backend_name):
        xp = pg.get_backend().xp
        for args, value in [((0, 2, 0.5), "1.5"), ((0, 4, 1.5), "3.0"), ((0.5, 3), "0.5"), ((0.0, 3), "0.0")]:
            with pytest.raises(TypeError, match=rf"arange\(.*\): a float value \({value}\) cannot be put"):
                pg.arange(*args, dtype=xp.int32)
        assert np.asarray(pg.to_backend(pg.arange(0, 2.5, dtype=xp.int32), "numpy")).tolist() == [0, 1, 2]
        assert pg.arange(0.5, 0.5, dtype=xp.int32).shape == (0,)  # (empty: no value to put)
        assert np.asarray(pg.to_backend(pg.arange(0, 2, 0.5, dtype=xp.float32), "numpy")).tolist() == [0, 0.5, 1, 1.5]


@pytest.mark.parametrize("backend_name", ["numpy", "dask", "array_api_strict"])
def test_full_of_a_float_fill_into_an_integer_dtype_is_refused_as_item_assignment_refuses_it(backend_name):
    """pg.full((2,), 3.7, dtype=int32) gave [3, 3] and full_like(int8 array, 3.7) too, where
    x[k] = 3.7 (and 3.0) into an int array is refused; a float that is integral (3.0) the same."""
    with pg.using_backend(backend_name):
        xp = pg.get_backend().xp
        ints = pg.zeros((2,), dtype=xp.int8)
        for fill in (3.7, 3.0, np.float64(3.7), np.float32(3.0), float("nan"), float("inf")):
            with pytest.raises(TypeError):  # (a NumPy scalar on dask or strict: an array of another backend)
                ints[0] = fill
            with pytest.raises(TypeError, match=r"polygrad: full with fill_value=.*: a float value .*int32"):
                pg.full((2,), fill, dtype=xp.int32)
            with pytest.raises(TypeError, match=r"polygrad: full_like with fill_value=.*: a float value .*int8"):
                pg.full_like(ints, fill)
            with pytest.raises(TypeError, match=r"polygrad: full with fill_value=.*: a float value .*uint8"):
                pg.full((2,), fill, dtype="uint8")

        def got(v):
            return np.asarray(pg.to_backend(v.data, "numpy")).tolist()

        assert got(pg.full((2,), 3, dtype=xp.int32)) == [3, 3]
        assert got(pg.full((2,), True, dtype=xp.int32)) == [1, 1]
        assert got(pg.full((2,), 3.5, dtype=xp.float32)) == [3.5, 3.5]
        assert got(pg.full_like(ints, 3.5, dtype=xp.float64)) == [3.5, 3.5]
        assert got(pg.full_like(pg.zeros((2,)), 3.5)) == [3.5, 3.5]


@pytest.mark.parametrize("backend_name", ["numpy", "dask", "array_api_strict"])
def test_a_0d_array_fill_is_refused_where_its_dtype_does_not_fit_as_a_numpy_scalar_is(backend_name):
    """full((2,), np.array(3.7), dtype=int32) gave [3, 3], where np.float64(3.7) is refused: a 0-d
    array (a reduction's result) was checked only where it was an integer."""
    with pg.using_backend(backend_name):
        xp = pg.get_backend().xp
        with pytest.raises(TypeError, match=r"polygrad: full with fill_value=.*: a float value .*int32"):
            pg.full((2,), xp.asarray(3.7), dtype=xp.int32)
        with pytest.raises(TypeError, match=r"polygrad: full_like with fill_value=.*: a complex value"):
            pg.full_like(pg.zeros((2,)), xp.asarray(1j))
        with pytest.raises(OverflowError, match="300 is out of the range of dtype .*int8"):
            pg.full((2,), xp.asarray(300), dtype=xp.int8)
        if backend_name != STRICT:  # (strict takes Python numbers only, as the standard's full)
            assert pg.full((2,), xp.asarray(3), dtype=xp.int32).dtype == xp.int32
            assert pg.full((2,), xp.asarray(True), dtype=xp.int32).dtype == xp.int32


def test_fill_refuses_a_value_that_does_not_fit_naming_fill():
    """x.fill_(3.5) of an int Variable was refused by a message naming full_like, which was not called."""
    x = pg.Variable(np.array([1, 2]), requires_grad=False)
    with pytest.raises(TypeError, match=r"polygrad: fill_ with fill_value=3\.5: a float value"):
        x.fill_(3.5)
    with pytest.raises(TypeError, match=r"polygrad\.fill_: fill_value must be a number"):
        x.fill_(None)
    assert x.version == 0 and x.fill_(7).data.tolist() == [7, 7]

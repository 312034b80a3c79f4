"""The dtypes of results and of gradients, on numpy and array_api_strict: a
gradient always has its input's dtype, whatever the result was promoted or
cast to; Python scalars do not promote float32.
"""

from __future__ import annotations

import numpy as np
import pytest

import polygrad as pg
from polygrad import ops as P

from conftest import arr, assert_close


@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "tanh", "atan", "reciprocal", "abs"])
def test_unary_gradient_keeps_float32(xp, name):
    """A float32 input gets a float32 gradient."""
    x = pg.Variable(arr(xp, [0.5, 1.5], "float32"))
    pg.sum(getattr(pg.ops, name)(x)).backward()
    assert x.grad.dtype == xp.float32


def test_float32_stays_float32_with_python_scalars(xp):
    """A Python float operand does not promote float32 data or its gradient to float64."""
    x = pg.Variable(arr(xp, [1.0, 2.0], "float32"))
    y = 2.0 * x + 1.0
    assert y.dtype == xp.float32
    pg.sum(pg.exp(y / 3.0)).backward()
    assert x.grad.dtype == xp.float32


MIXED = ["add", "subtract", "multiply", "divide", "maximum", "matmul", "atan2", "hypot", "logaddexp", "minimum",
         "copysign", "nextafter", "remainder"]
NO_GRADIENT_FOR_X2 = {"copysign", "nextafter"}


@pytest.mark.parametrize("name", MIXED)
def test_mixed_precision_gradients_keep_each_input_dtype(xp, name):
    """float32 op float64 promotes the value, but each input's gradient keeps that input's dtype."""
    a = pg.Variable(arr(xp, [0.7, -1.2], "float32"))
    b = pg.Variable(arr(xp, [1.3, 0.6], "float64"))
    y = getattr(pg.ops, name)(a, b)
    assert y.dtype == xp.float64
    pg.sum(y).backward()
    assert a.grad.dtype == xp.float32
    if name in NO_GRADIENT_FOR_X2:
        assert b.grad is None
    else:
        assert b.grad.dtype == xp.float64


def test_concat_mixed_precision_grads_keep_their_dtype(xp):
    """concat of float32 and float64 is float64; each input's gradient keeps its own dtype."""
    a = pg.Variable(arr(xp, [1.0], "float32"))
    b = pg.Variable(arr(xp, [2.0, 3.0]))
    y = P.concat([a, b])
    assert y.dtype == xp.float64
    pg.sum(y).backward()
    assert (a.grad.dtype, b.grad.dtype) == (xp.float32, xp.float64)


def test_astype_gradient_comes_back_in_input_dtype(xp):
    """astype(x64, float32): the gradient of x is float64 again, with the same values."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    y = pg.astype(x, xp.float32)
    assert y.dtype == xp.float32
    pg.sum(y * arr(xp, [3.0, 4.0], "float32")).backward()
    assert x.grad.dtype == xp.float64
    assert_close(x.grad, np.array([3.0, 4.0]))


def test_sum_with_dtype_gives_gradient_in_input_dtype(xp):
    """sum(x64, dtype=float32): the value is float32, x's gradient float64 (as for astype)."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    y = pg.sum(x, dtype=xp.float32)
    assert y.dtype == xp.float32
    y.backward()
    assert x.grad.dtype == xp.float64


def test_clip_keeps_x_dtype_and_gives_bound_its_dtype(xp):
    """clip(x32, min=array64) is float32, like xp.clip; the bound's gradient is float64."""
    x = pg.Variable(arr(xp, [0.0, 2.0], "float32"))
    lo = pg.Variable(arr(xp, [1.0, 1.0]))
    y = pg.clip(x, lo)
    assert y.dtype == xp.clip(x.data, lo.data).dtype
    pg.sum(y).backward()
    assert x.grad.dtype == xp.float32 and lo.grad.dtype == xp.float64
    assert_close(lo.grad, np.array([1.0, 0.0]))


def test_atan2_gradient_of_small_and_large_inputs():
    """atan2's rules divided by x * x + y * y, which underflows to 0 for small non-zero inputs (then
    replaced by 1: the gradient was 1e49 times too small in float32) and overflows for large ones."""
    for dtype, tiny in (("float32", 1e-25), ("float64", 1e-170), ("float64", 1e200)):
        xs, ys = np.array([1.0, 3.0]) * tiny, np.array([1.0, 4.0]) * tiny
        x, y = pg.Variable(xs.astype(dtype)), pg.Variable(ys.astype(dtype))
        pg.sum(pg.atan2(x, y)).backward()
        h = np.hypot(xs, ys)  # exact: y / (x^2 + y^2) and -x / (x^2 + y^2), computed in float64 without over/underflow
        np.testing.assert_allclose(x.grad, ((ys / h) / h).astype(dtype), rtol=1e-6)
        np.testing.assert_allclose(y.grad, (-(xs / h) / h).astype(dtype), rtol=1e-6)
    z = pg.Variable(np.array([0.0])), pg.Variable(np.array([0.0]))
    pg.sum(pg.atan2(*z)).backward()
    assert z[0].grad[0] == 0.0 and z[1].grad[0] == 0.0


def test_logaddexp_gradient_at_infinity():
    """exp(x - ans) was exp(inf - inf) = NaN where an argument is +inf; the derivative is
    sigmoid(x - y): 1 for the infinite argument, 0 for the other."""
    x, y = pg.Variable(np.array([0.0, np.inf, 5.0])), pg.Variable(np.array([np.inf, -3.0, np.inf]))
    pg.sum(pg.logaddexp(x, y)).backward()
    np.testing.assert_array_equal(x.grad, [0.0, 1.0, 0.0])
    np.testing.assert_array_equal(y.grad, [1.0, 0.0, 1.0])


# ---------------------------------------------------------------------------
# Values that do not fit: refused on every backend (found by a hunt: dask and strict wrapped them)
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("backend", ["numpy", "dask", "array_api_strict"])
def test_clip_and_where_refuse_python_ints_out_of_the_dtypes_range(backend):
    """clip(int8 [1, 2], min=200) gave [-56, -56] on dask and strict (every element below the minimum
    asked for); where(c, int8, 300) gave 44 on numpy and dask; an int16 bound of 300 wrapped to 44."""
    with pg.using_backend(backend):
        x = pg.Variable(pg.asarray([1, 2], dtype=pg.int8), requires_grad=False)
        u = pg.Variable(pg.asarray([1, 2], dtype=pg.uint8), requires_grad=False)
        c = pg.asarray([True, False])
        for call in (lambda: pg.clip(x, 200), lambda: pg.clip(x, None, -200), lambda: pg.clip(u, None, -1),
                     lambda: pg.where(c, x, 300), lambda: pg.where(c, -1, u)):
            with pytest.raises(OverflowError, match="out of the range of dtype"):
                call()
        with pytest.raises(TypeError, match=r"clip: the bound min is \S*int16, wider than x's \S*int8"):
            pg.clip(x, pg.asarray(300, dtype=pg.int16))
        np.testing.assert_array_equal(np.asarray(pg.to_backend(pg.clip(x, 2, 100).data, "numpy")), [2, 2])
        np.testing.assert_array_equal(np.asarray(pg.to_backend(pg.where(c, x, 127).data, "numpy")), [1, 127])


@pytest.mark.parametrize("backend", ["numpy", "dask", "array_api_strict"])
def test_astype_of_complex_to_real_is_refused(backend):
    """numpy and dask dropped the imaginary part ([1+2j, 3-1j] to [1, 3]); the standard does not
    permit the cast, and strict refused it."""
    with pg.using_backend(backend):
        z = pg.asarray([1 + 2j, 3 - 1j])
        with pytest.raises(TypeError, match=r"astype of a complex array to \S*float64 would drop its imaginary part"):
            pg.astype(z, pg.float64)
        assert pg.astype(z, pg.complex64).dtype == pg.complex64


@pytest.mark.parametrize("backend", ["numpy", "dask"])
def test_astype_of_complex_to_a_real_dtype_named_is_refused(backend):
    """astype(z, "float32") dropped the imaginary part where astype(z, float32) refused: the guard
    skipped every dtype given by name, which numpy and dask take."""
    with pg.using_backend(backend):
        z = pg.Variable(pg.asarray([1 + 2j, 3 + 4j], dtype=pg.complex64))
        for name in ("float32", "float64", "int64", "bool"):
            with pytest.raises(TypeError, match=rf"astype of a complex array to {name} would drop its imaginary part "
                                                rf"\(x is complex64 of shape \(2,\) on backend '{backend}'\)"):
                pg.astype(z, name)
        assert pg.astype(z, "complex128").dtype == pg.complex128
        assert pg.astype(pg.real(z), "float64").dtype == pg.float64


def test_widest_floating_is_float64_where_the_namespace_declares_it_else_float32():
    """The distributions draw their uniforms in it: float64 on numpy and strict; a namespace without
    float64 (jax in 32-bit mode declares none) float32, asked of its inspection API."""
    import types

    import array_api_strict

    from polygrad.ops._dtypes import widest_floating

    assert widest_floating(pg.get_backend("numpy").xp) == np.float64
    assert widest_floating(array_api_strict) == array_api_strict.float64

    class _Info:
        def dtypes(self, *, kind=None, device=None):
            return {"float32": np.float32} if kind == "real floating" else {"float32": np.float32, "int32": np.int32}

        def default_dtypes(self, *, device=None):
            return {"real floating": np.float32, "complex floating": np.complex64, "integral": np.int32,
                    "indexing": np.int32}

    assert widest_floating(types.SimpleNamespace(__array_namespace_info__=_Info, float64=np.float64)) == np.float32


@pytest.mark.parametrize("backend", ["numpy", "dask", "array_api_strict"])
def test_a_dtype_name_is_the_namespaces_dtype_for_astype_and_the_creation_functions(backend):
    """On strict, eager astype(x, "float32") failed ('str' object has no attribute '_np_dtype') and
    zeros/full/arange(dtype="float32") with strict's ValueError, where pg.asarray and a compiled astype
    took the name: it was resolved for the checks only, and the kernels got the raw name."""
    from polygrad import symbolic as T

    with pg.using_backend(backend):
        xp = pg.get_backend().xp
        x = pg.Variable(pg.asarray([1.5, 2.0]))
        assert pg.astype(x, "float32").dtype == xp.float32
        assert pg.astype(x, "int16", copy=False).dtype == xp.int16
        s = T.tensor("float64", (None,), "s")
        assert pg.function([s], pg.astype(s, "float32"))(x.data).dtype == xp.float32
        made = {"zeros": pg.zeros((2,), dtype="float32"), "ones": pg.ones((2,), dtype="float32"),
                "empty": pg.empty((2,), dtype="float32"), "full": pg.full((2,), 3, dtype="int16"),
                "arange": pg.arange(3, dtype="float32"), "eye": pg.eye(2, dtype="int16"),
                "linspace": pg.linspace(0.0, 1.0, 3, dtype="float32"),
                "empty_like": pg.empty_like(x, dtype="int16"), "full_like": pg.full_like(x, 2, dtype="int16")}
        for fn, out in made.items():
            assert out.dtype == (xp.int16 if fn in ("full", "eye", "empty_like", "full_like") else xp.float32), fn
        with pytest.raises(TypeError, match="polygrad: zeros asks for float8, which the namespace"):
            pg.zeros((2,), dtype="float8")
        if backend == "array_api_strict":  # (numpy's own spellings: where the library's asarray takes them)
            with pytest.raises(TypeError, match="polygrad: astype asks for f4, which the namespace"):
                pg.astype(x, "f4")
        else:
            assert pg.astype(x, "f4").dtype == xp.float32 and pg.full((2,), 1, dtype="i2").dtype == xp.int16


@pytest.mark.parametrize("backend", ["numpy", "dask"])
def test_float16_by_name_is_taken_where_the_namespace_has_it(backend):
    """numpy's and dask's namespaces declare no float16 (no standard dtype), so full and arange
    refused the name ("asks for float16, which the namespace ... does not have"), where zeros took it."""
    with pg.using_backend(backend):
        for out in (pg.zeros((2,), dtype="float16"), pg.full((2,), 3, dtype="float16"),
                    pg.arange(2, dtype="float16"), pg.astype(pg.asarray([1.0, 2.0]), "float16")):
            assert str(out.dtype) == "float16"


@pytest.mark.parametrize("backend", ["numpy", "dask"])
def test_numpys_own_dtype_names_are_taken_as_the_library_takes_them(backend):
    """numpy's names that are no standard's ("double", "single", "half", "intc", "int_", "bool_",
    "cdouble"...) are attributes of numpy that its namespace does not declare: they were refused
    ("the namespace does not have double"), where "f8" was taken and numpy's kernels took them all."""
    from polygrad import symbolic as T

    with pg.using_backend(backend):
        x = pg.Variable(pg.asarray([1.0, 2.0]))
        assert pg.zeros((2,), dtype="double").dtype == np.float64
        assert pg.astype(x, "single").dtype == np.float32
        assert str(pg.eye(2, dtype="half").dtype) == "float16"
        assert pg.ones((2,), dtype="intc").dtype == np.intc
        assert pg.full((2,), 3, dtype="longlong").dtype == np.longlong
        assert pg.arange(3, dtype="int_").dtype == np.int_
        assert pg.zeros((2,), dtype="bool_").dtype == np.bool_
        assert pg.full_like(x, 1j, dtype="cdouble").dtype == np.complex128
        assert np.mean(x, dtype="double").dtype == np.float64
        s = T.vector("s")
        assert pg.function([s], pg.astype(s, "double"))(np.array([1.0], dtype=np.float32)).dtype == np.float64
        with pytest.raises(TypeError, match="polygrad: zeros asks for object, which the namespace"):
            pg.zeros((2,), dtype="object")  # (numpy makes it; no dtype of the standard: no op takes it)
    with pg.using_backend("array_api_strict"), pytest.raises(TypeError, match="polygrad: zeros asks for double"):
        pg.zeros((2,), dtype="double")  # (strict's asarray takes no name)


@pytest.mark.parametrize("backend", ["numpy", "dask", "array_api_strict"])
def test_a_python_type_as_dtype_is_the_namespaces_default_dtype_of_its_kind(backend):
    """numpy's dtype=float (float64 there, the default real floating dtype): full, full_like and arange
    with a value raised numpy's bare "dtype argument must be a NumPy dtype, but it is a <class 'type'>",
    naming no function (isdtype took the type unresolved), and strict refused every such call."""
    with pg.using_backend(backend):
        xp = pg.get_backend().xp
        defaults = xp.__array_namespace_info__().default_dtypes()
        x = pg.Variable(pg.asarray([1.0, 2.0]))
        assert pg.full((2,), 0.5, dtype=float).dtype == defaults["real floating"]
        assert pg.full((2,), 1, dtype=float).dtype == defaults["real floating"]
        assert pg.full_like(x, 0.5, dtype=float).dtype == defaults["real floating"]
        assert pg.arange(0.0, 1.0, 0.25, dtype=float).shape == (4,)
        assert pg.arange(4, dtype=int).dtype == defaults["integral"]
        assert pg.zeros((2,), dtype=complex).dtype == defaults["complex floating"]
        assert pg.ones((2,), dtype=bool).dtype == xp.bool
        assert pg.astype(x, int).dtype == defaults["integral"]
        with pytest.raises(TypeError, match=r"polygrad: full with fill_value=0\.5: a float value"):
            pg.full((2,), 0.5, dtype=int)

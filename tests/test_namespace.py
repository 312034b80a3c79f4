"""The Array API namespace over Variables keeps the standard's promises: the version
it claims is the one it implements, its inspection API agrees, the array object's
methods take the standard's arguments, and rules and kernels ask the namespace for
dtypes instead of naming float64 or int64."""

from __future__ import annotations

import pathlib
import re

import numpy as np
import pytest

import polygrad as pg
import polygrad.array_api as A
from polygrad.core.op import GRAPH_OPS, raw_ops
from polygrad.ops import _dtypes

from conftest import arr, to_np

ROOT = pathlib.Path(pg.__file__).parent


def values(a):
    """numpy values of a Variable or array of any backend (dask's are computed)."""
    a = a.data if isinstance(a, pg.Variable) else a
    return np.asarray(a.compute()) if hasattr(a, "compute") else to_np(a)


# ---------------------------------------------------------------------------
# Version and inspection API
# ---------------------------------------------------------------------------
def test_namespace_claims_the_version_it_implements(xp):
    """x.__array_namespace__() claims 2024.12 (polygrad has no linalg.eig, new in 2025.12), even over a 2025.12 library."""
    ns = pg.Variable(arr(xp, [1.0])).__array_namespace__()
    assert ns.__array_api_version__ == "2024.12" == pg.__array_api_version__
    assert not hasattr(ns.linalg, "eig") and not hasattr(pg.linalg, "eig")


def test_namespace_refuses_a_version_it_does_not_implement():
    """__array_namespace__(api_version='2025.12') raises; the claimed and older versions are given."""
    x = pg.asarray([1.0])
    with pytest.raises(ValueError, match="2025.12"):
        x.__array_namespace__(api_version="2025.12")
    assert x.__array_namespace__(api_version="2023.12") is x.__array_namespace__()


def test_capabilities_are_those_of_the_claimed_version(xp):
    """capabilities() has exactly the 2024.12 keys."""
    info = pg.Variable(arr(xp, [1.0])).__array_namespace__().__array_namespace_info__()
    assert set(info.capabilities()) == {"boolean indexing", "data-dependent shapes", "max dimensions"}


def test_capabilities_follow_the_backend_declaration():
    """On dask, which declares no data-dependent shapes, capabilities() says so (whatever the library says)."""
    with pg.using_backend("dask"):
        caps = pg.__array_namespace_info__().capabilities()
    assert caps["data-dependent shapes"] is False and caps["boolean indexing"] is False


def test_top_level_is_a_namespace_of_the_current_backend():
    """pg.__array_namespace_info__() is the current backend's, resolved at the call; pg has dtypes and constants."""
    with pg.using_backend("strict"):
        import array_api_strict

        assert pg.__array_namespace_info__().default_device() == array_api_strict.__array_namespace_info__().default_device()
        assert pg.float32 is array_api_strict.float32
    assert pg.__array_namespace_info__().default_dtypes()["real floating"] == np.float64
    assert pg.float64 is np.float64
    assert (pg.e, pg.pi, pg.inf, pg.newaxis) == (np.e, np.pi, np.inf, None) and np.isnan(pg.nan)
    assert set(pg.__array_namespace_info__().dtypes(kind="real floating")) == {"float32", "float64"}


# ---------------------------------------------------------------------------
# Functions the standard defines, on every backend
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("backend", ["numpy", "strict", "dask"])
def test_broadcast_shapes_everywhere(backend):
    """broadcast_shapes is on every namespace (dask's library has none) and on pg."""
    with pg.using_backend(backend):
        ns = pg.asarray([1.0]).__array_namespace__()
    assert ns.broadcast_shapes((2, 1), (3,)) == (2, 3) == pg.broadcast_shapes((2, 1), (3,))
    assert pg.broadcast_shapes((None, 1), (4,)) == (None, 4)
    with pytest.raises(ValueError, match="do not broadcast"):
        pg.broadcast_shapes((2,), (3,))


@pytest.mark.parametrize("backend", ["numpy", "strict", "dask"])
def test_take_without_axis_on_a_vector(backend):
    """take(x, idx) of a 1-D x (axis=None) works on every backend, dask included, and its gradient too."""
    with pg.using_backend(backend):
        x = pg.Variable(pg.asarray([1.0, 2.0, 3.0]).data)
        idx = pg.asarray([2, 0, 2])
        y = pg.take(x, idx)
        np.testing.assert_array_equal(values(y.data), [3.0, 1.0, 3.0])
        pg.sum(y).backward()
        np.testing.assert_array_equal(values(x.grad), [1.0, 0.0, 2.0])


@pytest.mark.parametrize("backend", ["numpy", "strict", "dask"])
def test_variable_device(backend):
    """x.device works on every backend (dask arrays have no .device: the namespace's default device)."""
    with pg.using_backend(backend):
        x = pg.asarray([1.0])
        assert x.device == pg.__array_namespace_info__().default_device()


@pytest.mark.parametrize("backend", ["numpy", "strict"])
def test_matrix_rank_and_pinv_take_an_array_rtol(backend):
    """An array rtol (a Variable) reaches the kernel as an array: the values are numpy's."""
    a = np.random.default_rng(0).standard_normal((3, 4, 4))
    a[0, 0] = a[0, 1]
    rtol = np.array([0.5, 1e-8, 0.2])
    with pg.using_backend(backend):
        got = pg.linalg.matrix_rank(pg.asarray(a), rtol=pg.asarray(rtol))
        p = pg.linalg.pinv(pg.asarray(a), rtol=pg.asarray(rtol))
    np.testing.assert_array_equal(values(got), np.linalg.matrix_rank(a, rtol=rtol))
    np.testing.assert_allclose(values(p), np.linalg.pinv(a, rtol=rtol))


def test_dlpack_takes_the_standard_keywords():
    """__dlpack__ accepts stream, max_version, dl_device and copy; numpy's from_dlpack reads a Variable."""
    import inspect

    x = pg.asarray([1.0, 2.0])
    params = inspect.signature(pg.Variable.__dlpack__).parameters
    assert {"stream", "max_version", "dl_device", "copy"} <= set(params)
    assert x.__dlpack__(max_version=(1, 0), copy=None, stream=None) is not None
    np.testing.assert_array_equal(np.from_dlpack(x), [1.0, 2.0])


@pytest.mark.parametrize("backend", ["numpy", "strict", "dask"])
def test_asarray_of_nested_variables(backend):
    """asarray of nested lists of Variables (and Python numbers) stacks them, on every backend."""
    with pg.using_backend(backend):
        x = pg.asarray([1.0, 2.0])
        ns = x.__array_namespace__()
        np.testing.assert_array_equal(values(ns.asarray([x, x]).data), [[1.0, 2.0], [1.0, 2.0]])
        np.testing.assert_array_equal(values(ns.asarray([[x[1], 5.0], [3.0, x[0]]]).data), [[2.0, 5.0], [3.0, 1.0]])


# ---------------------------------------------------------------------------
# Dtypes come from the namespace
# ---------------------------------------------------------------------------
def test_no_fixed_int64_or_float64_in_rules_and_kernels():
    """No module of polygrad.ops or polygrad.compile, nor array_api.py, names xp.int64 / xp.float64 (or another width)."""
    pattern = re.compile(r"\bxp\.(u?int|float|complex)\d+\b")
    files = sorted((ROOT / "ops").glob("*.py")) + sorted((ROOT / "compile").glob("*.py")) + [ROOT / "array_api.py"]
    found = [f"{f.name}:{n}" for f in files for n, line in enumerate(f.read_text().splitlines(), 1)
             if pattern.search(line) and not line.lstrip().startswith(("#", "Rules and kernels"))]
    assert found == []


def test_index_kernels_use_the_namespace_index_dtype(monkeypatch):
    """With a namespace whose indices are int32, the scatter kernels of getitem and take_along_axis use int32."""
    numpy = pg.get_backend("numpy")
    real = _dtypes.default_dtypes(numpy.xp)
    monkeypatch.setitem(_dtypes._cache, id(numpy.xp), (numpy.xp, dict(real, indexing=np.int32)))
    seen = []
    scatter = numpy.scatter_add

    def spy(z, keys, v):
        seen.extend(k.dtype for k in keys if hasattr(k, "dtype"))
        return scatter(z, keys, v)

    monkeypatch.setattr(numpy, "scatter_add", spy)
    x = pg.Variable(np.arange(6.0).reshape(2, 3))
    idx = np.array([[2, 0], [1, 1]])
    pg.sum(pg.take_along_axis(x, idx, axis=1) * 2).backward()
    np.testing.assert_array_equal(x.grad, [[2.0, 0.0, 2.0], [0.0, 4.0, 0.0]])
    assert np.dtype(np.int32) in seen


def test_symbolic_default_dtype_is_the_backend_default(monkeypatch):
    """T.vector() takes the current backend's default floating dtype (float32 where the namespace says so)."""
    from polygrad import symbolic as T

    assert T.vector("v").data.dtype == "float64"
    numpy = pg.get_backend("numpy")
    real = _dtypes.default_dtypes(numpy.xp)
    monkeypatch.setitem(_dtypes._cache, id(numpy.xp), (numpy.xp, dict(real, **{"real floating": np.dtype("float32")})))
    assert T.vector("v").data.dtype == "float32"


# ---------------------------------------------------------------------------
# The unique_* gradients do not need unique_all
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["unique_values", "unique_counts", "unique_inverse"])
def test_unique_gradients_never_call_unique_all(monkeypatch, name):
    """With unique_all gone (as in array_api_compat's torch), the other unique_* still differentiate, twice too."""
    def missing(*args, **kwargs):
        raise AttributeError("this namespace has no unique_all")

    monkeypatch.setattr(raw_ops(pg.get_backend("numpy")), "unique_all", missing, raising=False)
    monkeypatch.setattr(GRAPH_OPS, "unique_all", missing)
    fn = getattr(pg, name)
    x = pg.Variable(np.array([3.0, 1.0, 3.0, 2.0, 1.0, 3.0]))
    w = pg.asarray([1.0, 10.0, 100.0])
    values = fn(x) if name == "unique_values" else fn(x)[0]
    (g,) = pg.grad(pg.sum(values ** 2 * w), [x], create_graph=True)
    # d/dv sum(v^2 w) = 2 v w = [2, 40, 600] for v = [1, 2, 3], shared among the equal elements
    np.testing.assert_allclose(to_np(g.data), [200.0, 1.0, 200.0, 40.0, 1.0, 200.0])
    (g2,) = pg.grad(pg.sum(g), [x])
    np.testing.assert_allclose(to_np(g2.data), [200 / 3, 1.0, 200 / 3, 20.0, 1.0, 200 / 3])


# ---------------------------------------------------------------------------
# Clients of the namespace (stop 26, scipy / scikit-learn / array-api-extra on Variables)
# ---------------------------------------------------------------------------


def test_from_dlpack_of_a_variable_that_requires_grad_is_refused_as_asarray_is():
    """np.from_dlpack(x) (scikit-learn's move_to) took the data of a Variable that requires grad
    without a word, where np.asarray(x) is refused: Ridge().fit(X, y_variable) lost y's gradient."""
    import numpy as np

    x = pg.Variable(np.ones(3))
    with pytest.raises(RuntimeError, match=r"from_dlpack\(x\).*which requires grad"):
        np.from_dlpack(x)
    np.testing.assert_array_equal(np.from_dlpack(x.detach()), np.ones(3))
    assert pg.from_dlpack(x).requires_grad  # polygrad's own keeps the graph


def test_finfo_and_iinfo_fields_are_python_numbers():
    """The standard types them float and int; numpy's NumPy scalars counted as numpy arrays, so
    on dask `x + xp.finfo(x.dtype).eps` was refused as mixing backends (scipy's zscore, skew)."""
    da = pytest.importorskip("dask.array")
    import numpy as np

    x = pg.Variable(da.ones(3))
    xp = x.__array_namespace__()
    f = xp.finfo(x.dtype)
    assert type(f.eps) is float and type(f.max) is float and type(f.bits) is int and f.dtype == np.float64
    assert f.tiny > 0  # the backend's other attributes are still there
    i = xp.iinfo(xp.int32)
    assert (type(i.max), i.max, type(i.bits)) == (int, 2**31 - 1, int)
    np.testing.assert_allclose(pg.compute(x + f.eps)[0], np.ones(3) + np.finfo(np.float64).eps)


@pytest.mark.parametrize("backend", ["numpy", "dask"])
def test_reshape_with_copy_never_aliases(backend):
    """reshape(a, shape, copy=True) on dask returned a view: writing into it changed a."""
    import numpy as np

    if backend == "dask":
        da = pytest.importorskip("dask.array")
        a = pg.Variable(da.from_array(np.ones((2, 3))), requires_grad=False)
    else:
        a = pg.Variable(np.ones((2, 3)), requires_grad=False)
    xp = a.__array_namespace__()
    b = xp.reshape(a, (3, 2), copy=True)
    b[0, 0] = 9.0
    assert float(pg.compute(a)[0][0, 0]) == 1.0
    w = pg.Variable(np.arange(6.0))
    pg.sum(pg.reshape(w, (2, 3), copy=True) * 2.0).backward()
    np.testing.assert_array_equal(w.grad, np.full(6, 2.0))


def test_item_assignment_into_an_integer_array_on_dask():
    """z[1:3] = 5 of an int64 dask Variable made float64 values and was refused."""
    da = pytest.importorskip("dask.array")
    import numpy as np

    z = pg.Variable(da.zeros(4, dtype="int64"))
    z[1:3] = 5
    np.testing.assert_array_equal(pg.compute(z)[0], [0, 5, 5, 0])
    assert z.dtype == np.int64


def test_asarray_to_complex_of_a_real_variable_backward_on_strict():
    """asarray(x, dtype=complex128) of a real x failed in backward on array_api_strict (a complex
    gradient cast to float64): the real part, as astype's rule gives."""
    pytest.importorskip("array_api_strict")
    x = pg.Variable(pg.asarray(np.array([1.0, 2.0]), backend="strict")._data)
    xp = x.__array_namespace__()
    z = xp.asarray(x, dtype=xp.complex128) * (1 + 2j)
    g, = pg.grad(xp.sum(xp.real(z) + xp.imag(z)), [x])
    assert g.dtype == xp.float64 and [float(v) for v in g.data] == [3.0, 3.0]


def test_reshape_with_copy_keeps_the_backend_and_traces():
    """The copy went through asarray, which moves to the current backend: a dask or strict
    Variable came back on numpy, and in a compiled function the result was an object array."""
    import numpy as np
    from polygrad import symbolic as T

    pytest.importorskip("array_api_strict")
    for name in ("strict", "dask"):
        if name == "dask":
            pytest.importorskip("dask.array")
        a = pg.asarray(np.ones((2, 3)), backend=name)
        assert pg.reshape(a, (3, 2), copy=True).backend is a.backend
    x = T.vector("x")
    f = pg.function([x], pg.sum(pg.reshape(x, (2, 2), copy=True) * 2.0))
    assert float(f(np.ones(4))) == 8.0


def test_integer_item_assignment_on_dask_is_exact_past_2_to_53():
    """The first fix divided in floats and cast back: 2**53 + 1 (written or not) came back 2**53."""
    da = pytest.importorskip("dask.array")
    import numpy as np

    big = [2**53 + 1, 0, 0, 2**53 + 3, 7]
    z = pg.Variable(da.from_array(np.array(big, dtype=np.int64)))
    z[1:3] = 5
    assert pg.compute(z)[0].tolist() == [2**53 + 1, 5, 5, 2**53 + 3, 7]


def test_finfo_of_the_numpy_namespace_is_numpys_own_and_dasks_compares_as_numpys():
    """Only a namespace whose finfo numbers are another backend's arrays wraps them; the wrapper
    compares, hashes and copies as the backend's object."""
    import copy

    import numpy as np

    da = pytest.importorskip("dask.array")
    n = pg.Variable(np.ones(2)).__array_namespace__()
    assert type(n.finfo(np.float64)) is np.finfo
    d = pg.Variable(da.ones(2)).__array_namespace__()
    f = d.finfo(np.float64)
    assert f == d.finfo(np.float64) == np.finfo(np.float64) and hash(f) == hash(np.finfo(np.float64))
    assert copy.copy(f) == f and type(f.tiny) is float

"""Edges of the statistical reductions that the op table's cases do not reach, on numpy,
dask and array_api_strict."""

from __future__ import annotations

import numpy as np
import pytest

import polygrad as pg


@pytest.fixture(params=["numpy", "dask", "array_api_strict"])
def backend(request):
    if request.param == "dask":
        pytest.importorskip("dask.array")
    with pg.using_backend(request.param) as b:
        yield b


def _np(a):
    """A numpy copy of a backend's array (dask's and numpy's scalars have no __dlpack__)."""
    return np.from_dlpack(a) if hasattr(a, "__dlpack__") else np.asarray(a)


@pytest.mark.parametrize("name", ["var", "std"])
@pytest.mark.parametrize("correction", [4, 5, 6.5])
def test_no_degrees_of_freedom_give_nan_value_and_gradient(backend, name, correction):
    """var / std with N - correction <= 0 are NaN, as the standard says, and so is the gradient (numpy
    gave inf, dask NaN, and the gradient of correction > N was a finite -2 (x - mean))."""
    x = pg.Variable(backend.xp.asarray([[1.0, 2.0, 4.0, 7.0], [0.5, 0.5, 3.0, -1.0]]))
    y = getattr(pg, name)(x, axis=1, correction=correction)
    assert y.shape == (2,)
    assert np.all(np.isnan(_np(y.data)))
    (g,) = pg.grad([pg.sum(y)], [x])
    assert g.shape == (2, 4)
    assert np.all(np.isnan(_np(g.data)))


@pytest.mark.parametrize("name", ["var", "std"])
def test_one_degree_of_freedom_is_finite(backend, name):
    """N - correction = 1 still gives the backend's finite value (the NaN is for N - correction <= 0 only)."""
    a = np.array([1.0, 2.0, 4.0, 7.0])
    y = getattr(pg, name)(pg.Variable(backend.xp.asarray(a)), correction=3)
    np.testing.assert_allclose(_np(y.data), getattr(np, name)(a, ddof=3))


def test_a_length_dask_does_not_know_yet_keeps_the_value():
    """var of x[x > 0] on dask (a length of NaN until computed) is the backend's value, not the NaN of no dof."""
    pytest.importorskip("dask.array")
    x = pg.asarray(np.array([1.0, -2.0, 3.0, 4.0]), backend="dask")
    np.testing.assert_allclose(np.asarray(pg.var(x[x > 0], correction=1).data), np.var([1.0, 3.0, 4.0], ddof=1))

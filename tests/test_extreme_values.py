"""Adversarial: inputs at the edges of a dtype's range. Where the value or gradient is
representable, it comes out right (not 0, inf or NaN, not millions of ulps off); each test
names what it gave before. References are exact (decimal arithmetic) or float64."""

from __future__ import annotations

from decimal import Decimal, localcontext

import numpy as np
import pytest

import polygrad as pg
import polygrad.functions as F
import polygrad.links as L


def _np(a):
    return np.asarray(pg.to_backend(a, "numpy"))


@pytest.mark.parametrize("backend_name", ["numpy", "dask"])
def test_var_and_std_of_float16(backend_name):
    """numpy's var sums float16 squares in float16: the std of 5,000 twenties was inf (dask:
    NaN), var([1000, 1000, 1000, 1001]) 0.25 and its gradient [0, 0, 0, 0.5], std([200, -200])
    inf with a zero gradient."""
    def v(a):
        return pg.Variable(pg.asarray(np.array(a, np.float16), backend=backend_name))

    s = pg.std(v([20.0] * 5000))
    assert s.dtype == np.float16 and float(_np(s.data)) == 0.0
    b = v([1000, 1000, 1000, 1001])
    var = pg.var(b)
    var.backward()
    assert float(_np(var.data)) == 0.1875
    np.testing.assert_array_equal(_np(b.grad), [-0.125, -0.125, -0.125, 0.375])
    assert b.grad.dtype == np.float16
    c = v([200, -200])
    s = pg.std(c)
    s.backward()
    assert float(_np(s.data)) == 200.0
    np.testing.assert_array_equal(_np(c.grad), [0.5, -0.5])


@pytest.mark.parametrize("backend_name", ["numpy", "dask"])
def test_normalizations_of_float16_with_large_deviations(backend_name):
    """layer_normalization and batch_normalization took the variance of float16 in float16:
    a deviation of 256 squared is inf, and the output and its gradient were all zeros."""
    row = np.array([0.0, 300.0, -300.0, 10.0])
    d = row - row.mean()
    exact = d / np.sqrt((d * d).mean() + 1e-5)

    def v(a):
        return pg.Variable(pg.asarray(np.asarray(a, np.float16), backend=backend_name))

    x, gamma, beta = v(row[None]), v(np.ones(4)), v(np.zeros(4))
    y = F.layer_normalization(x, gamma, beta)
    pg.sum(y * pg.asarray(np.arange(4, dtype=np.float16), backend=backend_name)).backward()
    assert y.dtype == np.float16 and x.grad.dtype == np.float16
    np.testing.assert_allclose(_np(y.data)[0], exact, rtol=2e-3, atol=1e-3)
    assert np.abs(_np(x.grad)).max() > 1e-3
    xb = v(row[:, None])
    yb = F.batch_normalization(xb, v(np.ones(1)), v(np.zeros(1)))
    assert yb.dtype == np.float16
    np.testing.assert_allclose(_np(yb.data)[:, 0], exact, rtol=2e-3, atol=1e-3)


def test_batch_normalization_link_of_float16_keeps_float16_statistics():
    """The link's running statistics (taken in float32 now) stay in the link's dtype."""
    bn = L.BatchNormalization(1, dtype=np.float16)
    x = pg.Variable(np.array([[0.0], [300.0], [-300.0], [10.0]], np.float16))
    y = bn(x)
    assert y.dtype == np.float16
    assert bn.avg_mean.dtype == np.float16 and bn.avg_var.dtype == np.float16
    assert np.isfinite(bn.avg_var).all() and float(bn.avg_var[0]) > 1000

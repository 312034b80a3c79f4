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


def test_divide_gradient_of_a_tiny_denominator():
    """d(x/y)/dy was -x / (y*y): y*y underflowed first (float32 y of 1e-21: 36% off; 1e-23:
    -inf), where -x / y**2 is representable."""
    y0 = np.array([1e-21, 1e-23, 3e-20, 2.0], np.float32)
    x, y = pg.Variable(np.full(4, 1e-20, np.float32)), pg.Variable(y0.copy())
    pg.sum(x / y).backward()
    exact = -np.float64(np.float32(1e-20)) / y0.astype(np.float64) ** 2
    np.testing.assert_allclose(y.grad, exact, rtol=3e-7)
    big = pg.Variable(np.array([1e160]))  # float64: y*y overflowed to inf, the gradient was -0
    pg.sum(pg.asarray([1e300]) / big).backward()
    np.testing.assert_allclose(big.grad, [-1e300 / 1e160 / 1e160], rtol=1e-15)


@pytest.mark.parametrize("fn, sign, power", [(pg.asin, 1, Decimal("0.5")), (pg.acos, -1, Decimal("0.5")),
                                             (pg.atanh, 1, Decimal(1))])
def test_inverse_trig_gradients_near_one(fn, sign, power):
    """asin, acos and atanh took 1 - x*x: near |x| = 1 it lost the digits x*x rounded away
    (3e-10 relative error at 1 - 1e-10, millions of ulps)."""
    xs = [1 - 1e-10, -(1 - 1e-10), 1 - 2 ** -40, 0.5]
    x = pg.Variable(np.array(xs))
    pg.sum(fn(x)).backward()
    with localcontext() as ctx:
        ctx.prec = 50
        exact = [sign / float((1 - Decimal(v) ** 2) ** power) for v in xs]
    np.testing.assert_allclose(x.grad, exact, rtol=4e-16)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("fn, second", [(pg.asin, lambda x: x / (1 - x * x) ** Decimal("1.5")),
                                        (pg.acos, lambda x: -x / (1 - x * x) ** Decimal("1.5")),
                                        (pg.atanh, lambda x: 2 * x / (1 - x * x) ** 2)])
def test_inverse_trig_second_derivatives_near_zero(fn, second, dtype):
    """Their rules took 1 - x*x as (1 - x)(1 + x) everywhere, whose derivative (1 - x) - (1 + x)
    cancels near 0: asin''(1e-20) was 0, float32 asin''(1e-8) 0, atanh''(1e-8) 2e6 ulps off."""
    x0 = np.array([1e-20, -1e-8, 1e-4, 0.3, 0.49, 0.5, -0.7, 1 - 1e-6], dtype)
    x = pg.Variable(x0.copy())
    g, = pg.grad(pg.sum(fn(x)), [x], create_graph=True)
    h, = pg.grad(pg.sum(g), [x])
    with localcontext() as ctx:
        ctx.prec = 50
        exact = [float(second(Decimal(float(v)))) for v in x0]
    np.testing.assert_allclose(_np(h), exact, rtol=8 * np.finfo(dtype).eps)


def test_elu_gradient_at_zero_is_alpha():
    """At x = 0 the gradient was 1 (the identity side) and the second derivative 0; Chainer,
    PyTorch and JAX give alpha for both."""
    x = pg.Variable(np.array([0.0, -1.0, 1.0]))
    g, = pg.grad(pg.sum(F.elu(x, alpha=0.5)), [x], create_graph=True)
    np.testing.assert_allclose(g.data, [0.5, 0.5 * np.exp(-1.0), 1.0], rtol=1e-15)
    g2, = pg.grad(pg.sum(g), [x])
    np.testing.assert_allclose(g2, [0.5, 0.5 * np.exp(-1.0), 0.0], rtol=1e-15)


def test_softmax_cross_entropy_of_an_empty_batch_is_zero():
    """normalize=False over an empty batch was the mean of nothing: NaN (Chainer: 0)."""
    for normalize in (True, False):
        x = pg.Variable(np.zeros((0, 3)))
        loss = F.softmax_cross_entropy(x, np.zeros((0,), np.int32), normalize=normalize)
        assert float(loss.data) == 0.0
        loss.backward()
        assert x.grad.shape == (0, 3)


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
@pytest.mark.parametrize("ord", [2, 3])
def test_norms_of_float16(backend_name, ord):
    """linalg.vector_norm and matrix_norm summed float16 squares in float16: the norm of 5,000
    twenties (1414.2) was inf and its gradient 0."""
    x = pg.Variable(pg.asarray(np.full(5000, 20.0, np.float16), backend=backend_name))
    n = 20.0 * 5000 ** (1 / ord)
    y = pg.linalg.vector_norm(x, ord=ord)
    y.backward()
    assert y.dtype == np.float16 and x.grad.dtype == np.float16
    np.testing.assert_allclose(float(_np(y.data)), n, rtol=1e-3)
    np.testing.assert_allclose(_np(x.grad), (20.0 / n) ** (ord - 1), rtol=2e-3)
    m = pg.Variable(pg.asarray(np.full((50, 100), 20.0, np.float16), backend=backend_name))
    y = pg.linalg.matrix_norm(m)
    y.backward()
    assert y.dtype == np.float16 and m.grad.dtype == np.float16
    np.testing.assert_allclose(float(_np(y.data)), 20.0 * 5000 ** 0.5, rtol=1e-3)
    np.testing.assert_allclose(_np(m.grad), 20.0 / (20.0 * 5000 ** 0.5), rtol=2e-3)


@pytest.mark.parametrize("backend_name", ["numpy", "dask"])
@pytest.mark.parametrize("axis", [None, 1])
def test_var_gradient_of_a_large_mean_and_a_small_spread(backend_name, axis):
    """var's gradient 2 (x - mean) / n took x - mean with the mean rounded to float32: for values
    of 1000 +- 0.01 that rounding was 2e-3 of each deviation (JAX: 1e-7)."""
    x0 = (1000 + 0.01 * np.random.default_rng(0).standard_normal((2, 500))).astype(np.float32)
    x = pg.Variable(pg.asarray(x0, backend=backend_name))
    pg.var(x, axis=axis).backward(pg.asarray(np.ones(() if axis is None else (2,), np.float32), backend=backend_name))
    x64 = x0.astype(np.float64)
    want = 2 * (x64 - x64.mean(axis=axis, keepdims=True)) / (x0.size if axis is None else 500)
    assert x.grad.dtype == np.float32
    np.testing.assert_allclose(_np(x.grad), want, rtol=1e-5, atol=1e-6 * np.abs(want).max())


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


def test_compiled_normalizations_of_float16_take_statistics_in_float32():
    """The compiled graph took them in float16 (a symbolic dtype is a name): all zeros."""
    from polygrad import symbolic as T
    row = np.array([[0.0, 300.0, -300.0, 10.0]], np.float16)
    X, g, b = T.tensor("float16", (1, 4), "X"), T.tensor("float16", (4,), "g"), T.tensor("float16", (4,), "b")
    f = pg.function([X, g, b], F.layer_normalization(X, g, b))
    eager = F.layer_normalization(pg.Variable(row), pg.Variable(np.ones(4, np.float16)), pg.Variable(np.zeros(4, np.float16)))
    out = f(row, np.ones(4, np.float16), np.zeros(4, np.float16))
    assert out.dtype == np.float16
    np.testing.assert_array_equal(out, eager.data)
    assert np.abs(out).max() > 1


def test_normalizations_keep_the_promoted_dtype_of_mixed_precision():
    """float16 x with float32 gamma and beta gives float32, as without the float32 statistics
    (they made it float16); all float16 gives float16."""
    x = pg.Variable(np.array([[0.1, 0.2, 0.3, 0.4]], np.float16))
    y = F.layer_normalization(x, pg.Variable(np.ones(4, np.float32)), pg.Variable(np.zeros(4, np.float32)))
    assert y.dtype == np.float32
    assert L.BatchNormalization(4)(pg.Variable(np.ones((8, 4), np.float16))).dtype == np.float32


@pytest.mark.parametrize("backend_name", ["numpy", "dask"])
def test_float16_losses_over_more_than_65504_elements(backend_name):
    """Counts taken in float16 were inf past 65504: softmax_cross_entropy's loss NaN,
    sigmoid_cross_entropy's 0, pg.mean's gradient 0 and accuracy(ignore_label=) 0, so a
    per-pixel float16 loss trained nothing (Chainer keeps counts as Python numbers)."""
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(70000, 4))
    labels = rng.integers(0, 4, size=70000).astype(np.int32)

    def v(a):
        return pg.Variable(pg.asarray(a.astype(np.float16), backend=backend_name))

    t = pg.asarray(labels, backend=backend_name)
    for loss_of, exact in ((lambda x: F.softmax_cross_entropy(x, t), F.softmax_cross_entropy(pg.Variable(logits), labels)),
                           (lambda x: pg.mean(x), pg.mean(pg.Variable(logits.astype(np.float16).astype(np.float64))))):
        x = v(logits)
        loss = loss_of(x)
        loss.backward()
        assert loss.dtype == np.float16
        np.testing.assert_allclose(float(_np(loss.data)), float(exact.data), rtol=2e-3)
        assert np.count_nonzero(_np(x.grad)) > 0.99 * x.grad.size
    x = v(rng.normal(size=(700, 100)))
    loss = F.sigmoid_cross_entropy(x, pg.asarray(rng.integers(0, 2, size=(700, 100)).astype(np.int32), backend=backend_name))
    assert 0.5 < float(_np(loss.data)) < 1.5
    acc = F.accuracy(v(logits), t, ignore_label=-1)
    np.testing.assert_allclose(float(_np(acc.data)), float(F.accuracy(pg.Variable(logits), labels).data), rtol=1e-3)


@pytest.mark.parametrize("backend_name", ["numpy", "dask"])
def test_a_float16_loss_summing_past_65504_is_finite(backend_name):
    """The losses were summed in float16 before the division: 16,384 tokens at a loss of 7
    reported inf."""
    x = pg.Variable(pg.asarray(np.zeros((16384, 1100), np.float16), backend=backend_name))
    t = pg.asarray(np.zeros(16384, np.int32), backend=backend_name)
    loss = F.softmax_cross_entropy(x, t, normalize=False)
    np.testing.assert_allclose(float(_np(loss.data)), np.log(1100), rtol=2e-3)
    assert loss.dtype == np.float16


def test_compiled_float16_losses_over_more_than_65504_elements_equal_eager():
    """The symbolic tracer named no float16 dtype, so a compiled graph's float16 nodes had none:
    sigmoid_cross_entropy came out float32, softmax_cross_entropy(normalize=False) inf."""
    from polygrad import symbolic as T
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(70000, 4)).astype(np.float16)
    labels = rng.integers(0, 4, size=70000).astype(np.int32)
    binary = rng.integers(0, 2, size=(70000, 4)).astype(np.int32)
    X = T.tensor("float16", (None, 4), "X")
    for build, t, labels_of in ((lambda x, t: F.softmax_cross_entropy(x, t, normalize=False), T.tensor("int32", (None,), "t"),
                                 labels),
                                (F.sigmoid_cross_entropy, T.tensor("int32", (None, 4), "t"), binary)):
        loss = build(X, t)
        f = pg.function([X, t], [loss, T.grad(loss, X)])
        value, grad = f(logits, labels_of)
        eager = build(pg.Variable(logits), pg.asarray(labels_of))
        assert value.dtype == np.float16 and grad.dtype == np.float16
        np.testing.assert_allclose(float(value), float(eager.data), rtol=1e-3)
        assert np.isfinite(float(value))


def test_the_float16_gradient_of_a_large_mean_under_a_loss_scale():
    """mean's gradient multiplied by float16(1 / n): subnormal past 16,384, 0 past 2**25."""
    for n in (60000, 10**6):
        x = pg.Variable(np.zeros(n, np.float16))
        (pg.mean(x) * 1024.0).backward()
        np.testing.assert_allclose(float(x.grad[0]), 1024.0 / n, rtol=2e-3)


@pytest.mark.parametrize("backend_name", ["numpy", "dask"])
def test_the_float16_softmax_family_sums_in_float32(backend_name):
    """The sums of exp were taken in float16: along an axis that is not the last numpy's
    stalled at 2048 (log_softmax of 5,000 equal scores -7.625, not -8.517; softmax summing to
    2.44), and past 65504 classes they were inf (softmax 0, logsumexp and the loss inf, the
    gradient off the label 0). The rules' sums were float16 too."""
    def v(a):
        return pg.Variable(pg.asarray(a, backend=backend_name))

    x = v(np.zeros((5000, 2), np.float16))
    np.testing.assert_allclose(_np(F.log_softmax(x, axis=0).data).astype(float), -np.log(5000), rtol=1e-3)
    np.testing.assert_allclose(_np(F.logsumexp(x, axis=0).data).astype(float), np.log(5000), rtol=1e-3)
    np.testing.assert_allclose(_np(F.softmax(x, axis=0).data).astype(float).sum(0), 1.0, rtol=1e-3)
    w = np.linspace(-1, 1, 5000).astype(np.float16)[:, None]  # d/dx sum(w * f(x)) along axis 0
    for f, want in ((lambda a: F.log_softmax(a, axis=0), w - w.astype(float).sum() / 5000),
                    (lambda a: F.softmax(a, axis=0), (w - w.astype(float).mean()) / 5000)):
        x = v(np.zeros((5000, 2), np.float16))
        pg.sum(f(x) * v(w)).backward()
        assert x.grad.dtype == np.float16
        np.testing.assert_allclose(_np(x.grad).astype(float), np.broadcast_to(want, (5000, 2)),
                                   atol=2e-3 * np.abs(want).max())
    c = 70000
    logits = (0.01 * np.random.default_rng(0).standard_normal((2, c))).astype(np.float16)
    exact = F.log_softmax(pg.Variable(logits.astype(np.float64))).data
    x = v(logits)
    loss = F.softmax_cross_entropy(x, pg.asarray(np.array([0, c - 1]), backend=backend_name))
    loss.backward()
    np.testing.assert_allclose(float(_np(loss.data)), -(exact[0, 0] + exact[1, c - 1]) / 2, rtol=1e-3)
    np.testing.assert_allclose(_np(x.grad)[0, 1:].astype(float), np.exp(exact[0, 1:]) / 2, rtol=2e-2)
    np.testing.assert_allclose(_np(F.softmax(v(logits)).data).astype(float).sum(1), 1.0, rtol=1e-3)
    np.testing.assert_allclose(_np(F.logsumexp(v(logits), axis=1).data).astype(float),
                               np.log(np.exp(logits.astype(float)).sum(1)), rtol=1e-3)


@pytest.mark.parametrize("backend_name", ["numpy", "dask"])
def test_float16_squared_losses_of_large_differences_are_finite(backend_name):
    """mean_squared_error and huber_loss squared float16 differences in float16: one difference
    of 300 made the loss inf, where 9,000 (and huber's 45,000) fit."""
    a = np.zeros((1, 10), np.float16)
    a[0, 0] = 300

    def v(b):
        return pg.Variable(pg.asarray(b, backend=backend_name))

    x = v(a)
    mse = F.mean_squared_error(x, v(np.zeros_like(a)))
    mse.backward()
    assert mse.dtype == np.float16 and x.grad.dtype == np.float16
    assert float(_np(mse.data)) == 9000.0 and float(_np(x.grad)[0, 0]) == 60.0
    for reduce, want in (("sum_along_second_axis", [45000.0]), ("no", [45000.0] + [0.0] * 9)):
        loss = F.huber_loss(v(a), v(np.zeros_like(a)), 1000.0, reduce=reduce)
        assert loss.dtype == np.float16
        np.testing.assert_allclose(_np(loss.data).ravel(), want, rtol=1e-3)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_expm1_gradient_keeps_its_relative_precision_far_below_zero(dtype):
    """expm1's rule was ``g * (ans + 1)``: at x = -40 that sum is 1 - 1 = 0 (float64; float32 from
    x = -17), where the gradient is exp(x), 4e-18."""
    x0 = np.asarray([-1.0, -20.0, -40.0, -80.0], dtype=dtype)
    x = pg.Variable(x0)
    pg.sum(pg.expm1(x)).backward()
    np.testing.assert_allclose(np.asarray(x.grad), np.exp(x0), rtol=4 * np.finfo(dtype).eps)

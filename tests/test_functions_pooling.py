"""polygrad.functions' pooling (max_pooling_2d, average_pooling_2d): forward values
against a loop over windows, cover_all, where the gradient goes, and gradients by
check_grads in float64 (order 2), on numpy and array_api_strict."""

from __future__ import annotations

import numpy as np
import pytest

import polygrad as pg
import polygrad.functions as F
from polygrad.testing import check_grads

from conftest import arr, distinct, normal, to_np
from conftest import assert_values_close as assert_close


def np_pool(x, k, s, p, cover_all, reduce, fill):
    n, c, h, w = x.shape
    if cover_all:
        oh, ow = (h + 2 * p - k + s - 1) // s + 1, (w + 2 * p - k + s - 1) // s + 1
    else:
        oh, ow = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
    big = np.full((n, c, h + 2 * p + k + s, w + 2 * p + k + s), fill)
    big[:, :, p:p + h, p:p + w] = x
    y = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            y[:, :, i, j] = reduce(big[:, :, i * s:i * s + k, j * s:j * s + k], axis=(2, 3))
    return y


@pytest.mark.parametrize("k, s, p, cover_all", [(2, None, 0, True), (3, 2, 1, True), (3, 2, 1, False), (2, 2, 0, True)],
                         ids=["k2", "k3s2p1_cover", "k3s2p1", "k2_odd_cover"])
def test_max_pooling_2d_forward(xp, k, s, p, cover_all):
    """max_pooling_2d matches a loop over windows padded with -inf (cover_all adds a last window)."""
    x = normal((2, 2, 5, 5), 19) if k != 2 or s is None else normal((1, 2, 5, 7), 20)
    y = F.max_pooling_2d(arr(xp, x), k, s, p, cover_all=cover_all)
    assert_close(y, np_pool(x, k, s or k, p, cover_all, np.max, -np.inf))


def test_max_pooling_2d_cover_all_changes_the_shape(xp):
    """A 5x5 input with 2x2 windows gives 3x3 with cover_all (Chainer's default) and 2x2 without."""
    x = arr(xp, normal((1, 1, 5, 5)))
    assert F.max_pooling_2d(x, 2).shape == (1, 1, 3, 3)
    assert F.max_pooling_2d(x, 2, cover_all=False).shape == (1, 1, 2, 2)


@pytest.mark.parametrize("k, s, p", [(2, None, 0), (3, 2, 1), (2, 1, 1)], ids=["k2", "k3s2p1", "k2s1p1"])
def test_average_pooling_2d_forward(xp, k, s, p):
    """average_pooling_2d is the mean of each window, padded zeros counted (divides by k*k)."""
    x = normal((2, 2, 5, 4), 21)
    y = F.average_pooling_2d(arr(xp, x), k, s, p)
    assert_close(y, np_pool(x, k, s or k, p, False, np.mean, 0.0), rtol=1e-12)


def test_max_pooling_2d_gradients(xp):
    """Gradients of max pooling (distinct values) agree with central differences, to second order."""
    check_grads(lambda v: F.max_pooling_2d(v, 3, 2, 1), [arr(xp, distinct((2, 1, 5, 4)))], order=2)


def test_max_pooling_2d_routes_gradient_to_the_maximum(xp):
    """Each window's gradient goes to its maximum; on a tie, all of it to the first one."""
    x = pg.Variable(arr(xp, [[[[1.0, 5.0], [2.0, 3.0]], [[4.0, 4.0], [0.0, 1.0]]]]))
    pg.sum(F.max_pooling_2d(x, 2)).backward()
    assert_close(x.grad, np.array([[[[0.0, 1.0], [0.0, 0.0]], [[1.0, 0.0], [0.0, 0.0]]]]))


def np_max_pool_vjp(x, g, k, s, p):
    """The input gradient of Chainer 7's max pooling (cover_all): each window's ``g`` added at the
    window's ``argmax`` (its first maximum, or its first NaN), with -inf padding."""
    n, c, h, w = x.shape
    oh, ow = g.shape[2:]
    big = np.full((n, c, (oh - 1) * s + k + p, (ow - 1) * s + k + p), -np.inf)
    big[:, :, p:p + h, p:p + w] = x
    gx = np.zeros_like(big)
    for i in range(oh):
        for j in range(ow):
            first = big[:, :, i * s:i * s + k, j * s:j * s + k].reshape(n, c, -1).argmax(axis=2)
            for b in range(n):
                for ch in range(c):
                    gx[b, ch, i * s + first[b, ch] // k, j * s + first[b, ch] % k] += g[b, ch, i, j]
    return gx[:, :, p:p + h, p:p + w]


@pytest.mark.parametrize("special", [False, True], ids=["ties", "nan_inf"])
def test_max_pooling_2d_gives_a_tied_window_gradient_to_its_first_maximum(xp, special):
    """Tied maxima split the window's gradient (pg.max's rule); Chainer 7, PyTorch and jax's
    reduce_window give it all to the first (numpy's argmax: the first NaN where there is one).
    The values stay numpy's max: NaN propagates, a window of -inf or wholly in padding is -inf."""
    rng = np.random.default_rng(3)
    x = rng.integers(0, 3, (2, 3, 5, 6)).astype(float)
    if special:
        for value in (np.nan, np.inf, -np.inf):
            x[rng.random(x.shape) < 0.2] = value
    v = pg.Variable(arr(xp, x))
    y = F.max_pooling_2d(v, 3, 2, 1)
    g = rng.standard_normal(y.shape)
    y.backward(arr(xp, g))
    np.testing.assert_array_equal(to_np(y), np_pool(x, 3, 2, 1, True, np.max, -np.inf))
    assert_close(v.grad, np_max_pool_vjp(x, g, 3, 2, 1))


def test_average_pooling_2d_gradients(xp):
    """Gradients of average pooling agree with central differences, to second order."""
    check_grads(lambda v: F.average_pooling_2d(v, 2, 1, 1), [arr(xp, normal((1, 2, 3, 4), 22))], order=2)


def test_pooling_rejects_input_that_is_not_4d_or_too_small(xp):
    """x not (N, C, H, W), or a window larger than the padded input, raises ValueError naming the function."""
    with pytest.raises(ValueError, match=r"max_pooling_2d: expects x of shape \(N, C, H, W\), got \(2, 3\)"):
        F.max_pooling_2d(arr(xp, np.zeros((2, 3))), 2)
    with pytest.raises(ValueError, match="average_pooling_2d: a 3x3 window does not fit an input of 2x2"):
        F.average_pooling_2d(arr(xp, np.zeros((1, 1, 2, 2))), 3)


def test_pooling_rejects_a_ksize_that_is_not_a_pair(xp):
    """ksize must be an int or a pair of ints: a triple raises ValueError naming it."""
    with pytest.raises(ValueError, match=r"average_pooling_2d: ksize must be an int or a pair of ints, got \(1, 2, 3\)"):
        F.average_pooling_2d(arr(xp, np.zeros((1, 1, 4, 4))), (1, 2, 3))


@pytest.mark.parametrize("call, message", [
    (lambda x: F.max_pooling_2d(x, 0), "max_pooling_2d: ksize must be an int of at least 1, got 0"),
    (lambda x: F.average_pooling_2d(x, 2, stride=0), "average_pooling_2d: stride must be an int of at least 1, got 0"),
    (lambda x: F.average_pooling_2d(x, 2, stride=(1, 0)), "stride must be an int of at least 1, got 0"),
    (lambda x: F.max_pooling_2d(x, 2, pad=-1), "max_pooling_2d: pad must be an int of at least 0, got -1"),
    (lambda x: F.convolution_2d(x, np.ones((1, 1, 2, 2)), stride=0), "convolution_2d: stride must be an int of at least 1"),
    (lambda x: F.convolution_2d(x, np.ones((1, 1, 2, 2)), pad=-1), "convolution_2d: pad must be an int of at least 0"),
    (lambda x: F.max_pooling_2d(x, (2.5, 2)), r"ksize must be an int or a pair of ints, got \(2.5, 2\)"),
    (lambda x: F.max_pooling_2d(x, (2, True)), r"ksize must be an int or a pair of ints, got \(2, True\)"),
], ids=["ksize_0", "stride_0", "stride_pair_0", "pad_negative", "conv_stride_0", "conv_pad_negative", "float", "bool"])
def test_window_geometry_out_of_range_is_refused(call, message):
    """A stride or window of 0 was a bare ZeroDivisionError; a negative pad went on to an error
    from getitem_grad; a float size was truncated."""
    with pytest.raises(ValueError, match=message):
        call(np.zeros((1, 1, 4, 4)))


def test_numpy_integers_are_window_sizes():
    """stride=np.int64(2) was refused ("must be an int or a pair of ints"); Chainer takes it."""
    x = np.zeros((1, 1, 4, 4))
    assert F.max_pooling_2d(x, 2, stride=np.int64(2)).shape == (1, 1, 2, 2)
    assert F.average_pooling_2d(x, (np.int32(2), 2)).shape == (1, 1, 2, 2)


def test_float16_average_pooling_sums_in_float32():
    """A 6x6 window of 3000s was summed in float16 past 65504: inf for a mean of 3000 (Chainer
    takes numpy's mean, which sums float16 in float32)."""
    x = np.full((1, 1, 6, 6), 3000.0, dtype=np.float16)
    y = F.average_pooling_2d(pg.Variable(x), 6)
    assert y.dtype == np.float16
    np.testing.assert_array_equal(np.asarray(y.data).ravel(), [3000.0])
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 2000, size=(1, 1, 30, 30)).astype(np.float16)
    want = x.astype(np.float32).reshape(1, 1, 6, 5, 6, 5).mean(axis=(3, 5)).astype(np.float16)
    np.testing.assert_array_equal(np.asarray(F.average_pooling_2d(pg.Variable(x), 5).data), want)


@pytest.mark.parametrize("dtype", ["int64", "bool"])
def test_pooling_and_convolution_refuse_integer_and_boolean_inputs(dtype):
    """A bool convolution summed as a logical or; integer max pooling came back int64 without
    padding and float64 with it (Chainer's type checks refuse both)."""
    x = pg.Variable(np.ones((1, 2, 4, 4), dtype=dtype), requires_grad=False)
    W = np.ones((3, 2, 2, 2), dtype=np.float32)
    for call, name in ((lambda: F.max_pooling_2d(x, 2), "max_pooling_2d"),
                       (lambda: F.average_pooling_2d(x, 2), "average_pooling_2d"),
                       (lambda: F.convolution_2d(x, W), "convolution_2d")):
        with pytest.raises(TypeError, match=rf"{name}: x must be floating .*got {dtype} \(1, 2, 4, 4\)"):
            call()
    with pytest.raises(TypeError, match=r"convolution_2d: W must be floating"):
        F.convolution_2d(pg.Variable(np.ones((1, 2, 4, 4), np.float32)), W.astype(dtype))


def test_poolings_compile_with_a_batch_of_unknown_size_unless_they_pad():
    """Only the height and width are needed where nothing is padded (the batch of a compiled
    function's input may be unknown); a padding pooling names itself."""
    from polygrad import symbolic as T

    x = T.tensor("float64", (None, 2, 4, 4), "x")
    v = normal((3, 2, 4, 4), seed=30)
    assert_close(pg.function([x], F.max_pooling_2d(x, 2))(v), np_pool(v, 2, 2, 0, True, np.max, -np.inf))
    assert_close(pg.function([x], F.average_pooling_2d(x, 2))(v), np_pool(v, 2, 2, 0, False, np.mean, 0.0))
    with pytest.raises(ValueError, match=r"average_pooling_2d needs inputs of known shape, got \(None, 2, 4, 4\)"):
        F.average_pooling_2d(x, 2, pad=1)


def test_max_pooling_2d_window_wholly_in_padding_is_minus_inf_without_gradient(xp):
    """A window that holds only padding is -inf (Chainer's) and sends no gradient to the input."""
    v = pg.Variable(arr(xp, [[[[2.0]]]]))
    y = F.max_pooling_2d(v, 1, 1, 1)
    want = np.full((1, 1, 3, 3), -np.inf)
    want[0, 0, 1, 1] = 2.0
    np.testing.assert_array_equal(to_np(y), want)
    pg.sum(y).backward()
    assert_close(v.grad, np.ones((1, 1, 1, 1)))


@pytest.mark.parametrize("pool", [F.max_pooling_2d, F.average_pooling_2d], ids=["max", "average"])
def test_pooling_refuses_x_that_is_not_an_array(pool):
    """x as a nested list was AttributeError "'list' object has no attribute 'shape'"; now a
    TypeError naming the function and x, in the op dispatch's words."""
    with pytest.raises(TypeError, match=rf"{pool.__name__}: x \(list\): no backend claims .*pg.asarray"):
        pool(np.ones((1, 1, 2, 2)).tolist(), 2)

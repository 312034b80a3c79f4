"""polygrad.functions' normalizations (batch_normalization,
fixed_batch_normalization, layer_normalization) and their links
(BatchNormalization, LayerNormalization): forward values against hand-written
numpy, running statistics in train and test mode, gradients by check_grads in
float64 (order 2), on numpy and array_api_strict."""

from __future__ import annotations

import numpy as np
import pytest

import polygrad as pg
import polygrad.functions as F
import polygrad.links as L
from polygrad.testing import check_grads

from conftest import arr, normal
from conftest import to_np, assert_values_close as assert_close


BX4 = normal((4, 3, 2, 2), seed=6) * 2 + 1
GAMMA = np.array([1.5, 0.5, -1.0])
BETA = np.array([0.1, -0.2, 0.3])


def np_batch_norm(x, gamma, beta, eps, axes):
    mu = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    shape = [1] * x.ndim
    shape[1] = -1
    return gamma.reshape(shape) * (x - mu) / np.sqrt(var + eps) + beta.reshape(shape)


def test_batch_normalization_forward_4d(xp):
    """NCHW: each channel normalized over N, H, W with the batch statistics."""
    y = F.batch_normalization(arr(xp, BX4), arr(xp, GAMMA), arr(xp, BETA))
    assert_close(y, np_batch_norm(BX4, GAMMA, BETA, 2e-5, (0, 2, 3)), rtol=1e-10)


def test_batch_normalization_forward_2d(xp):
    """(N, C): each column normalized over the batch."""
    x = normal((5, 3), seed=7)
    y = F.batch_normalization(arr(xp, x), arr(xp, GAMMA), arr(xp, BETA), eps=1e-3)
    assert_close(y, np_batch_norm(x, GAMMA, BETA, 1e-3, (0,)), rtol=1e-10)


def test_batch_normalization_updates_running_statistics(xp):
    """Train mode updates running_mean and running_var in place (the variance unbiased)."""
    rm, rv = arr(xp, [0.5, 0.0, -0.5]), arr(xp, [1.0, 2.0, 3.0])
    rm0, rv0 = to_np(rm), to_np(rv)
    F.batch_normalization(arr(xp, BX4), arr(xp, GAMMA), arr(xp, BETA), running_mean=rm, running_var=rv, decay=0.8)
    m = 4 * 2 * 2
    assert_close(rm, 0.8 * rm0 + 0.2 * BX4.mean(axis=(0, 2, 3)), rtol=1e-12)
    assert_close(rv, 0.8 * rv0 + 0.2 * BX4.var(axis=(0, 2, 3)) * m / (m - 1), rtol=1e-12)


def test_batch_normalization_test_mode_uses_running_statistics(xp):
    """In test mode the given statistics normalize, and they are not updated."""
    rm, rv = arr(xp, [0.5, 0.0, -0.5]), arr(xp, [1.0, 2.0, 3.0])
    with pg.test_mode():
        y = F.batch_normalization(arr(xp, BX4), arr(xp, GAMMA), arr(xp, BETA), running_mean=rm, running_var=rv)
    want = F.fixed_batch_normalization(arr(xp, BX4), arr(xp, GAMMA), arr(xp, BETA), rm, rv)
    assert_close(y, to_np(want))
    assert_close(rm, np.array([0.5, 0.0, -0.5]))
    shape = (1, 3, 1, 1)
    ref = GAMMA.reshape(shape) * (BX4 - to_np(rm).reshape(shape)) / np.sqrt(np.array([1.0, 2.0, 3.0]).reshape(shape) + 2e-5)
    assert_close(y, ref + BETA.reshape(shape), rtol=1e-12)


def test_batch_normalization_gradients(xp):
    """Gradients in x, gamma and beta agree with central differences, to second order."""
    check_grads(F.batch_normalization, [arr(xp, BX4[:3, :, :, :1]), arr(xp, GAMMA), arr(xp, BETA)], order=2)


def test_fixed_batch_normalization_gradients(xp):
    """Gradients in all five inputs agree with central differences, to second order."""
    x = normal((3, 3, 2), seed=8)
    check_grads(F.fixed_batch_normalization,
                [arr(xp, x), arr(xp, GAMMA), arr(xp, BETA), arr(xp, [0.1, -0.3, 0.2]), arr(xp, [0.5, 1.5, 2.0])],
                order=2)


def test_batch_normalization_rejects_mismatched_gamma(xp):
    """A gamma that does not match axis 1 raises ValueError naming both shapes."""
    with pytest.raises(ValueError, match=r"batch_normalization.*\(2,\).*\(4, 3, 2, 2\)"):
        F.batch_normalization(arr(xp, BX4), arr(xp, [1.0, 1.0]), arr(xp, [0.0, 0.0]))


def test_fixed_batch_normalization_refuses_statistics_not_of_gammas_shape(xp):
    """beta, mean and var must have gamma's shape (Chainer's rule): they were reshaped to it, so a
    transposed (3, 2) mean for a (2, 3) gamma was read in the wrong order without a word."""
    x, g = arr(xp, normal((4, 2, 3), seed=50)), arr(xp, np.ones((2, 3)))
    right, turned = arr(xp, np.zeros((2, 3))), arr(xp, np.zeros((3, 2)))
    for name, args in (("beta", (turned, right, right)), ("mean", (right, turned, right)),
                       ("var", (right, right, arr(xp, np.ones(6))))):
        with pytest.raises(ValueError, match=rf"fixed_batch_normalization: {name} of shape .* gamma's shape \(2, 3\)"):
            F.fixed_batch_normalization(x, g, *args)


@pytest.mark.parametrize("shape", [(6,), (3, 2), (4,)])
def test_batch_normalization_refuses_beta_not_of_gammas_shape(xp, shape):
    """beta of gamma's number of elements in another shape was reshaped to it; of another size the
    error named reshape, not the function."""
    x, g = arr(xp, normal((4, 2, 3), seed=51)), arr(xp, np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"functions.batch_normalization: beta of shape .* gamma's shape \(2, 3\)"):
        F.batch_normalization(x, g, arr(xp, np.zeros(shape)))


def test_batch_normalization_in_test_mode_checks_the_running_statistics(xp):
    """In test mode the running statistics normalize: of another shape than gamma's they are
    refused naming batch_normalization's argument; (1, C) ones, which train mode updates, are used."""
    x = arr(xp, normal((4, 3), seed=52))
    with pytest.raises(ValueError, match=r"functions.batch_normalization: running_var of shape \(1, 2\)"):
        with pg.test_mode():
            F.batch_normalization(x, arr(xp, GAMMA), arr(xp, BETA), running_mean=arr(xp, np.zeros(3)),
                                  running_var=arr(xp, np.ones((1, 2))))
    rm, rv = arr(xp, [[0.5, 0.0, -0.5]]), arr(xp, [[1.0, 2.0, 3.0]])
    with pg.test_mode():
        y = F.batch_normalization(x, arr(xp, GAMMA), arr(xp, BETA), running_mean=rm, running_var=rv)
    want = F.fixed_batch_normalization(x, arr(xp, GAMMA), arr(xp, BETA), arr(xp, [0.5, 0.0, -0.5]),
                                       arr(xp, [1.0, 2.0, 3.0]))
    assert_close(y, to_np(want))


def test_layer_normalization_forward(xp):
    """Each row normalized over its features, then scaled and shifted."""
    x = normal((4, 3), seed=9) * 3
    y = F.layer_normalization(arr(xp, x), arr(xp, GAMMA), arr(xp, BETA))
    mu, var = x.mean(axis=1, keepdims=True), x.var(axis=1, keepdims=True)
    assert_close(y, GAMMA * (x - mu) / np.sqrt(var + 1e-5) + BETA, rtol=1e-10)


def test_layer_normalization_rejects_mismatched_gamma(xp):
    """A gamma that does not match x's trailing axes raises ValueError naming both shapes."""
    with pytest.raises(ValueError, match=r"layer_normalization: gamma of shape \(2,\) .* x \(4, 3\)"):
        F.layer_normalization(arr(xp, normal((4, 3))), arr(xp, [1.0, 1.0]), arr(xp, [0.0, 0.0]))


@pytest.mark.parametrize("shape", [(1,), (4, 3), (2, 4, 3)])
def test_layer_normalization_refuses_beta_not_of_gammas_shape(xp, shape):
    """beta must have gamma's shape, as in Chainer: it was broadcast, a per-sample shift for (4, 3)
    and a (2, 4, 3) output from a (4, 3) input."""
    with pytest.raises(ValueError, match=r"layer_normalization: beta of shape .* gamma's shape \(3,\)"):
        F.layer_normalization(arr(xp, normal((4, 3))), arr(xp, GAMMA), arr(xp, np.zeros(shape)))


def test_layer_normalization_gradients(xp):
    """Gradients in x, gamma and beta agree with central differences, to second order."""
    check_grads(F.layer_normalization, [arr(xp, normal((3, 3), seed=10)), arr(xp, GAMMA), arr(xp, BETA)], order=2)


# ---------------------------------------------------------------------------
# Links
# ---------------------------------------------------------------------------


def test_batchnormalization_link_train_and_test_mode(xp, backend_name):
    """Train mode normalizes by the batch and moves the running statistics; test mode uses them."""
    link = L.BatchNormalization(3, decay=0.5, dtype="float64", backend=backend_name)
    assert [name for name, _ in link.namedparams()] == ["/gamma", "/beta"]
    y = link(arr(xp, BX4))
    assert_close(y, np_batch_norm(BX4, np.ones(3), np.zeros(3), 2e-5, (0, 2, 3)), rtol=1e-10)
    m = 16
    assert_close(link.avg_mean, 0.5 * BX4.mean(axis=(0, 2, 3)), rtol=1e-12)
    assert_close(link.avg_var, 0.5 + 0.5 * BX4.var(axis=(0, 2, 3)) * m / (m - 1), rtol=1e-12)
    mean_before = to_np(link.avg_mean)
    with pg.test_mode():
        y = link(arr(xp, BX4))
    shape = (1, 3, 1, 1)
    want = (BX4 - mean_before.reshape(shape)) / np.sqrt(to_np(link.avg_var).reshape(shape) + 2e-5)
    assert_close(y, want, rtol=1e-10)
    assert_close(link.avg_mean, mean_before)


def test_batchnormalization_link_gradients_reach_parameters(xp, backend_name):
    """backward fills gamma.grad and beta.grad."""
    link = L.BatchNormalization(3, dtype="float64", backend=backend_name)
    pg.sum(link(arr(xp, BX4)) * arr(xp, normal(BX4.shape, 28))).backward()
    assert link.gamma.grad.shape == (3,) and link.beta.grad.shape == (3,)


def test_layernormalization_link(xp, backend_name):
    """L.LayerNormalization normalizes each row (size inferred when None); eps 1e-6."""
    x = normal((4, 3), 29)
    mu, var = x.mean(axis=1, keepdims=True), x.var(axis=1, keepdims=True)
    for link in (L.LayerNormalization(3, dtype="float64", backend=backend_name),
                 L.LayerNormalization(dtype="float64", backend=backend_name)):
        assert_close(link(arr(xp, x)), (x - mu) / np.sqrt(var + 1e-6), rtol=1e-10)
        assert link.gamma.shape == (3,)


def test_batchnormalization_link_moves_running_statistics():
    """to_backend moves gamma, beta and the running statistics."""
    link = L.BatchNormalization(3, dtype="float64", backend="numpy")
    link.to_backend("array_api_strict")
    for a in (link.gamma.data, link.beta.data, link.avg_mean, link.avg_var):
        assert type(a).__module__.startswith("array_api_strict")
    assert_close(link(pg.asarray(BX4.tolist(), backend="array_api_strict")), np_batch_norm(BX4, np.ones(3), np.zeros(3), 2e-5, (0, 2, 3)), rtol=1e-10)


def test_running_statistics_written_in_place_move_their_version():
    """F.batch_normalization writes the running statistics into their arrays: a Variable's
    version moves, so backward refuses what saved the old values (it wrote without a bump:
    a multiply that had saved running_mean gave w the gradient of the new values)."""
    rm = pg.Variable(np.zeros(3), requires_grad=False)
    rv = pg.Variable(np.ones(3), requires_grad=False)
    w = pg.Variable(np.ones(3))
    y = pg.sum(rm * w)  # saves rm for w's gradient
    x = np.arange(12.0).reshape(4, 3)
    F.batch_normalization(x, np.ones(3), np.zeros(3), running_mean=rm, running_var=rv)
    assert (rm.version, rv.version) == (1, 1)
    np.testing.assert_allclose(rm.data, 0.1 * x.mean(axis=0))
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.backward()


def test_a_running_statistic_that_does_not_fit_changes_neither():
    """running_var of the wrong shape: running_mean was updated in place before numpy's bare
    broadcast error; now a ValueError names the statistic and shapes, and neither changes."""
    rm, rv = np.zeros(3), np.ones(5)
    x = np.arange(12.0).reshape(4, 3)
    with pytest.raises(ValueError, match=r"batch_normalization: running_var \(shape \(5,\).*shape \(3,\)"):
        F.batch_normalization(x, np.ones(3), np.zeros(3), running_mean=rm, running_var=rv)
    np.testing.assert_array_equal(rm, np.zeros(3))
    np.testing.assert_array_equal(rv, np.ones(5))


@pytest.mark.parametrize("make", [lambda a: np.broadcast_to(a, a.shape), lambda a: a.setflags(write=False) or a])
def test_a_read_only_running_statistic_changes_neither(make):
    """A read-only running_var (np.broadcast_to's, a loaded file's): running_mean was written first,
    then numpy's bare "assignment destination is read-only"; now a ValueError names the argument
    before either is written."""
    rm, rv = np.zeros(3), make(np.ones(3))
    x = np.arange(12.0).reshape(4, 3)
    with pytest.raises(ValueError, match=r"functions.batch_normalization: running_var .*cannot be written.*neither"):
        F.batch_normalization(x, np.ones(3), np.zeros(3), running_mean=rm, running_var=rv)
    np.testing.assert_array_equal(rm, np.zeros(3))


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.bool_])
def test_running_statistics_that_are_not_floating_are_refused_and_unchanged(dtype):
    """Integer or bool running statistics took the float update cast to their dtype (a mean of 0.3
    became 0, a bool True); they are refused, as Chainer's in-place update and PyTorch refuse them."""
    rm, rv = np.zeros(3), np.ones(3, dtype=dtype)
    x = np.arange(12.0).reshape(4, 3)
    with pytest.raises(TypeError, match=rf"batch_normalization: running_var .*dtype {np.dtype(dtype)}.*neither"):
        F.batch_normalization(x, np.ones(3), np.zeros(3), running_mean=rm, running_var=rv)
    np.testing.assert_array_equal(rm, np.zeros(3))
    np.testing.assert_array_equal(rv, np.ones(3, dtype=dtype))
    with pytest.raises(TypeError, match="running_mean"):
        F.batch_normalization(x, np.ones(3), np.zeros(3), running_mean=np.zeros(3, dtype=dtype))


def test_running_statistics_of_shape_1_c_are_updated_as_before():
    """The check above must not refuse (1, C) statistics for (C,) ones, which broadcast to their
    own shape (they were updated before it)."""
    rm, rv = np.zeros((1, 3)), np.ones((1, 3))
    x = np.arange(12.0).reshape(4, 3)
    F.batch_normalization(x, np.ones(3), np.zeros(3), running_mean=rm, running_var=rv)
    np.testing.assert_allclose(rm, 0.1 * x.mean(axis=0, keepdims=True))


# ---------------------------------------------------------------------------
# float32 precision
# ---------------------------------------------------------------------------


def _normalized64(x, axes, eps):
    """The normalization of float32 ``x`` (its values exact) computed in float64."""
    x = x.astype(np.float64)
    mu = x.mean(axes, keepdims=True)
    return (x - mu) / np.sqrt(((x - mu) ** 2).mean(axes, keepdims=True) + eps)


def test_batch_normalization_of_float32_with_an_offset_is_float32_exact():
    """float32 values 1000 +- 1 over 4096 rows: the output was 1.7e-3 off (10^4 ulps), as numpy's
    float32 mean down axis 0 is a running sum and its rounding shifted every deviation; the
    deviations are centred twice now. The running mean takes the correction too."""
    x = (1e3 + normal((4096, 8), seed=40)).astype(np.float32)
    rm, rv = np.zeros(8, np.float32), np.ones(8, np.float32)
    y = F.batch_normalization(x, np.ones(8, np.float32), np.zeros(8, np.float32), running_mean=rm, running_var=rv)
    assert y.dtype == np.float32
    assert np.abs(to_np(y) - _normalized64(x, (0,), 2e-5)).max() < 1e-5
    assert np.abs(rm - 0.1 * x.astype(np.float64).mean(0)).max() < 3e-5  # (it was 1.4e-4; 1 ulp of 100 is 7.6e-6)


def test_layer_normalization_of_float32_with_an_offset_is_float32_exact():
    """Rows of 4096 float32 values 1000 +- 1 held transposed (so summed one by one, as batch
    normalization's columns): 2.1e-3 off; centred twice, 2.6e-6."""
    x = (1e3 + normal((4096, 8), seed=41)).astype(np.float32).T
    y = F.layer_normalization(x, np.ones(4096, np.float32), np.zeros(4096, np.float32))
    assert np.abs(to_np(y) - _normalized64(x, (1,), 1e-5)).max() < 1e-5


def test_batch_normalization_of_a_constant_float32_channel_gives_beta():
    """A constant channel of 1e6 + 0.5 (4097 rows): its rounded mean left every deviation 14.1
    off, the variance 199 and the output +-1 where it is beta. (Correcting the variance as
    mean(d*d) - mean(d)**2 instead of centring twice made it negative, and the output NaN.)"""
    x = np.full((4097, 2), 1e6 + 0.5, np.float32)
    y = to_np(F.batch_normalization(x, np.ones(2, np.float32), np.array([0.25, -1.0], np.float32)))
    np.testing.assert_allclose(y, np.broadcast_to([0.25, -1.0], y.shape), atol=1e-3)


def test_float16_batch_and_layer_normalization_keep_their_dtype():
    """Centring twice happens in float32 for float16 inputs, and the output is float16 again."""
    x = (normal((16, 3), seed=42) * 2 + 5).astype(np.float16)
    g, b = np.ones(3, np.float16), np.zeros(3, np.float16)
    for y, axes in ((F.batch_normalization(x, g, b), (0,)), (F.layer_normalization(x, g, b), (1,))):
        assert y.dtype == np.float16
        np.testing.assert_allclose(to_np(y).astype(np.float64), _normalized64(x, axes, 2e-5 if axes == (0,) else 1e-5),
                                   atol=5e-3)


# ---------------------------------------------------------------------------
# Sizes not known
# ---------------------------------------------------------------------------


def test_normalizations_compile_with_a_batch_of_unknown_size():
    """Only the sizes gamma covers are needed (those reduced over may be unknown, as the batch of
    a compiled function's input is); the running statistics are still refused there."""
    from polygrad import symbolic as T

    x = T.tensor("float64", (None, 3), "x")
    g, b = pg.shared(GAMMA), pg.shared(BETA)
    v = normal((5, 3), seed=43)
    bn = pg.function([x], F.batch_normalization(x, g, b))
    assert_close(bn(v), np_batch_norm(v, GAMMA, BETA, 2e-5, (0,)), rtol=1e-10)
    assert_close(bn(v[:4]), np_batch_norm(v[:4], GAMMA, BETA, 2e-5, (0,)), rtol=1e-10)
    ln = pg.function([x], F.layer_normalization(x, g, b))
    mu, var = v.mean(axis=1, keepdims=True), v.var(axis=1, keepdims=True)
    assert_close(ln(v), GAMMA * (v - mu) / np.sqrt(var + 1e-5) + BETA, rtol=1e-10)
    with pytest.raises(NotImplementedError, match="running statistics cannot be updated in place inside pg.function"):
        F.batch_normalization(x, g, b, running_mean=np.zeros(3), running_var=np.ones(3))
    with pytest.raises(ValueError, match=r"batch_normalization needs inputs of known shape, got \(5, None\)"):
        F.batch_normalization(T.tensor("float64", (5, None), "x"), g, b)


def test_parameters_of_unknown_size_compile_next_to_a_gamma_of_known_size():
    """A T.vector beta (or fixed mean and var) next to a shared gamma of (3,) was refused while the graph
    was built, "batch_normalization needs inputs of known shape, got (None,)", naming no argument; only
    gamma's sizes need be known. Its ndim and known sizes are still checked then, its size at the call."""
    from polygrad import symbolic as T

    x, b, m, v = T.tensor("float64", (None, 3), "x"), T.vector("b"), T.vector("m"), T.vector("v")
    g = pg.shared(GAMMA)
    xv = normal((5, 3), seed=44)
    bn = pg.function([x, b], F.batch_normalization(x, g, b))
    assert_close(bn(xv, BETA), np_batch_norm(xv, GAMMA, BETA, 2e-5, (0,)), rtol=1e-10)
    ln = pg.function([x, b], F.layer_normalization(x, g, b))
    mu, var = xv.mean(axis=1, keepdims=True), xv.var(axis=1, keepdims=True)
    assert_close(ln(xv, BETA), GAMMA * (xv - mu) / np.sqrt(var + 1e-5) + BETA, rtol=1e-10)
    fbn = pg.function([x, m, v], F.fixed_batch_normalization(x, g, pg.shared(BETA), m, v))
    mv, vv = np.array([0.5, -1.0, 2.0]), np.array([1.0, 4.0, 0.25])
    assert_close(fbn(xv, mv, vv), GAMMA * (xv - mv) / np.sqrt(vv + 2e-5) + BETA, rtol=1e-10)
    for f in (bn, ln):  # a beta of size 1 is not broadcast
        with pytest.raises(ValueError, match="cannot reshape"):
            f(xv, np.zeros(1))
    with pytest.raises(ValueError, match=r"batch_normalization: beta of shape \(None, None\) must have gamma's shape"):
        F.batch_normalization(x, g, T.matrix("b"))
    with pytest.raises(ValueError, match=r"layer_normalization: beta of shape \(4,\) must have gamma's shape \(3,\)"):
        F.layer_normalization(x, g, T.tensor("float64", (4,), "b"))
    with pytest.raises(ValueError, match=r"batch_normalization needs gamma of known shape, got \(None,\)"):
        F.batch_normalization(x, T.vector("g"), b)


def test_parameters_of_two_unknown_sizes_are_refused_while_the_graph_is_built():
    """A T.matrix beta (mean, var, running statistic) next to a gamma of (2, 3) was reshaped to it at
    the call, which checks only the number of elements: a (3, 2) beta was read in the wrong order
    without a word. With one size unknown the reshape fixes it; with two they must be declared."""
    from polygrad import symbolic as T

    x, g, b = T.tensor("float64", (None, 2, 3), "x"), pg.shared(np.ones((2, 3))), pg.shared(np.zeros((2, 3)))
    declare = r"has more than one size not known yet.*gamma's shape \(2, 3\).*T\.tensor\(dtype, \(2, 3\)\)"
    for fname, call in (("batch_normalization", lambda p: F.batch_normalization(x, g, p)),
                        ("layer_normalization", lambda p: F.layer_normalization(x, g, p))):
        with pytest.raises(ValueError, match=rf"{fname}: beta of shape \(None, None\) {declare}"):
            call(T.matrix("b"))
    for name in ("mean", "var"):
        given = {"mean": b, "var": b, name: T.matrix(name)}
        with pytest.raises(ValueError, match=rf"fixed_batch_normalization: {name} of shape \(None, None\) {declare}"):
            F.fixed_batch_normalization(x, g, b, given["mean"], given["var"])
    with pytest.raises(ValueError, match=rf"batch_normalization: running_mean of shape \(None, None\) {declare}"):
        with pg.test_mode():
            F.batch_normalization(x, g, b, running_mean=T.matrix("rm"), running_var=T.matrix("rv"))
    # one unknown size: compiled, and a value of another shape refused at the call
    beta = normal((2, 3), seed=53)
    xv = normal((4, 2, 3), seed=54)
    bn = pg.function([x, (bs := T.tensor("float64", (None, 3), "b"))], F.batch_normalization(x, g, bs))
    assert_close(bn(xv, beta), F.batch_normalization(xv, np.ones((2, 3)), beta), rtol=1e-10)
    with pytest.raises(ValueError):
        bn(xv, np.zeros((3, 3)))


def test_test_mode_statistics_of_unknown_sizes_compile_or_are_refused_by_name():
    """Compiled test-mode batch_normalization with T.matrix running statistics next to a gamma of (4,)
    failed with a bare "TypeError: 'NoneType' object is not iterable"; they may be (1, 4) or (2, 2) at
    the call, so they are refused naming the argument. A (1, None) one, which the reshape fixes, runs."""
    from polygrad import symbolic as T

    x, g, b = T.tensor("float64", (None, 4), "x"), pg.shared(np.ones(4)), pg.shared(np.zeros(4))
    with pytest.raises(ValueError, match=r"batch_normalization: running_mean of shape \(None, None\) has more than "
                                         r"one size not known yet.*T\.tensor\(dtype, \(1, 4\)\)"):
        with pg.test_mode():
            F.batch_normalization(x, g, b, running_mean=T.matrix("rm"), running_var=T.matrix("rv"))
    rm, rv = T.tensor("float64", (1, None), "rm"), T.tensor("float64", (1, None), "rv")
    with pg.test_mode():
        f = pg.function([x, rm, rv], F.batch_normalization(x, g, b, running_mean=rm, running_var=rv))
    xv, m, v = normal((3, 4), seed=55), np.array([[0.5, -1.0, 2.0, 0.0]]), np.array([[1.0, 4.0, 0.25, 2.0]])
    assert_close(f(xv, m, v), (xv - m) / np.sqrt(v + 2e-5), rtol=1e-10)
    with pytest.raises(ValueError):
        f(xv, np.zeros((1, 5)), np.ones((1, 5)))


def test_compiled_statistics_with_unknown_sizes_that_must_be_1_and_a_beta_of_uninferred_shape():
    """Test-mode running statistics of (None, None, C) for a gamma of (C,) were refused as two unknown sizes,
    though the reshape forces both to 1 (one layout); a beta whose shape was not inferred (T.matrix reshaped)
    failed with a bare "'NoneType' object is not iterable" (review of this session's checks)."""
    from polygrad import symbolic as T

    x = T.tensor("float64", (None, 3), "x")
    m, v = T.tensor("float64", (None, None, 3), "m"), T.tensor("float64", (None, None, 3), "v")
    g, b = pg.shared(np.array([1.0, 2.0, 3.0])), pg.shared(np.array([0.5, 0.0, -0.5]))
    with pg.test_mode():
        f = pg.function([x, m, v], F.batch_normalization(x, g, b, running_mean=m, running_var=v))
    xv, mv, vv = np.arange(6.0).reshape(2, 3), np.full((1, 1, 3), 1.0), np.full((1, 1, 3), 4.0)
    want = F.fixed_batch_normalization(pg.Variable(xv), pg.Variable(g.get_value()), pg.Variable(b.get_value()),
                                       pg.Variable(mv.reshape(3)), pg.Variable(vv.reshape(3)))
    np.testing.assert_allclose(f(xv, mv, vv), want.data, rtol=1e-12)
    with pytest.raises(ValueError, match=r"batch_normalization needs beta of known shape; its shape could not be "
                                         r"inferred"):
        F.batch_normalization(x, g, pg.reshape(T.matrix("b"), (3,)))

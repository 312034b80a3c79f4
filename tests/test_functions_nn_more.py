"""polygrad.functions (F), the second batch: activations, logsumexp, losses, dropout,
embed_id, normalization, convolution, pooling, array functions, their links, and a
small CNN that learns. Forward values against hand-written numpy, gradients by
check_grads in float64 (order 2 where the second derivative exists)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import polygrad as pg
import polygrad.functions as F
import polygrad.links as L
from polygrad.functions.array import _concat_by_placement
from polygrad.testing import check_grads

from conftest import arr
from conftest import to_np, assert_values_close as assert_close


def normal(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def away_from_zero(shape, seed=0):
    """|x| in [0.3, 2] with random signs: no input sits on a kink."""
    r = np.random.default_rng(seed)
    return r.uniform(0.3, 2.0, shape) * r.choice([-1.0, 1.0], shape)


def distinct(shape, seed=0):
    """Values at least 0.1 apart (no ties, so max is differentiable)."""
    n = int(np.prod(shape))
    return (np.random.default_rng(seed).permutation(n) * 0.1 - 0.05 * n).reshape(shape)


def ints(xp, values):
    return xp.asarray(np.asarray(values).tolist(), dtype=xp.int64)


# ---------------------------------------------------------------------------
# Signatures (Chainer's)
# ---------------------------------------------------------------------------
SIGNATURES = {
    "leaky_relu": "(x, slope=0.2)", "elu": "(x, alpha=1.0)", "gelu": "(x, approximate=False)",
    "softplus": "(x, beta=1.0)", "logsumexp": "(x, axis=None)",
    "sigmoid_cross_entropy": "(x, t, normalize=True, reduce='mean')",
    "huber_loss": "(x, t, delta, reduce='sum_along_second_axis')", "dropout": "(x, ratio=0.5)",
    "embed_id": "(x, W, ignore_label=None)",
    "batch_normalization": "(x, gamma, beta, eps=2e-05, running_mean=None, running_var=None, decay=0.9)",
    "fixed_batch_normalization": "(x, gamma, beta, mean, var, eps=2e-05)",
    "layer_normalization": "(x, gamma, beta, eps=1e-05)", "convolution_2d": "(x, W, b=None, stride=1, pad=0)",
    "max_pooling_2d": "(x, ksize, stride=None, pad=0, cover_all=True)",
    "average_pooling_2d": "(x, ksize, stride=None, pad=0)", "concat": "(xs, axis=1)", "stack": "(xs, axis=0)",
    "split_axis": "(x, indices_or_sections, axis, force_tuple=True)", "where": "(condition, x, y)",
    "clip": "(x, x_min, x_max)",
}


@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_signature_is_chainers(name):
    """Each function is exported from F with Chainer's parameters and defaults."""
    import inspect

    assert name in F.__all__
    assert str(inspect.signature(getattr(F, name))) == SIGNATURES[name]


# ---------------------------------------------------------------------------
# Activations
# ---------------------------------------------------------------------------
XA = away_from_zero((3, 4))


def test_leaky_relu_forward(xp):
    """leaky_relu is x for x >= 0, else slope * x (default slope 0.2)."""
    assert_close(F.leaky_relu(arr(xp, XA)), np.where(XA >= 0, XA, 0.2 * XA))
    assert_close(F.leaky_relu(arr(xp, XA), slope=0.5), np.where(XA >= 0, XA, 0.5 * XA))


def test_leaky_relu_gradient_at_zero_is_one(xp):
    """At x = 0 the gradient is 1, as in Chainer."""
    x = pg.Variable(arr(xp, [0.0, -1.0]))
    pg.sum(F.leaky_relu(x)).backward()
    assert_close(x.grad, np.array([1.0, 0.2]))


def test_elu_forward(xp):
    """elu is x for x >= 0, else alpha * (exp(x) - 1)."""
    assert_close(F.elu(arr(xp, XA)), np.where(XA >= 0, XA, np.expm1(XA)), rtol=1e-12)
    assert_close(F.elu(arr(xp, XA), alpha=2.0), np.where(XA >= 0, XA, 2.0 * np.expm1(XA)), rtol=1e-12)


def test_elu_keeps_precision_near_zero(xp):
    """elu(-1e-10) has full relative precision (exp(x) - 1 would lose about 7 digits)."""
    x = np.array([-1e-10, -1e-5, -40.0])
    assert_close(F.elu(arr(xp, x)), np.expm1(x), rtol=1e-14, atol=0)


def test_elu_large_positive_input_has_finite_gradient(xp):
    """The unused negative branch never sees a large positive x: no nan in the gradient."""
    x = pg.Variable(arr(xp, [1000.0, -1000.0]))
    pg.sum(F.elu(x)).backward()
    assert_close(x.grad, np.array([1.0, 0.0]))


def test_erf_matches_math_erf(xp):
    """erf agrees with math.erf to 1e-7 from -6 to 6, and erf(+-inf) = +-1."""
    x = np.linspace(-6.0, 6.0, 2401)
    want = np.array([math.erf(v) for v in x])
    assert np.abs(to_np(F.erf(arr(xp, x))) - want).max() < 1e-7
    assert_close(F.erf(arr(xp, [-np.inf, 0.0, np.inf])), np.array([-1.0, 0.0, 1.0]))


def test_erf_is_odd_and_keeps_float32(xp):
    """erf(-x) = -erf(x), and a float32 input gives float32."""
    x = np.linspace(0.0, 3.0, 31)
    assert_close(F.erf(arr(xp, -x)), -to_np(F.erf(arr(xp, x))), rtol=0, atol=0)
    assert F.erf(arr(xp, x, "float32")).dtype == xp.float32


def test_erf_gradient_is_exact(xp):
    """The gradient of erf is 2/sqrt(pi) exp(-x^2) exactly, not the approximation's slope."""
    xs = np.array([-2.0, -0.3, 0.0, 0.49, 0.51, 4.0])
    x = pg.Variable(arr(xp, xs))
    pg.sum(F.erf(x)).backward()
    assert_close(x.grad, 2 / np.sqrt(np.pi) * np.exp(-xs ** 2), rtol=1e-14)


def test_gelu_forward(xp):
    """gelu is x Phi(x); approximate=True is the tanh form."""
    x = np.linspace(-5.0, 5.0, 41)
    exact = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x])
    assert_close(F.gelu(arr(xp, x)), exact, rtol=0, atol=2e-7)
    approx = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    assert_close(F.gelu(arr(xp, x), approximate=True), approx, rtol=1e-12)


def test_softplus_forward_is_stable(xp):
    """softplus(x, beta) = log(1 + exp(beta x)) / beta, with no overflow at +-800."""
    x = np.array([-800.0, -30.0, -1.0, 0.0, 2.0, 30.0, 800.0])
    assert_close(F.softplus(arr(xp, x)), np.logaddexp(0, x), rtol=1e-12, atol=0)
    assert_close(F.softplus(arr(xp, x), beta=2.0), np.logaddexp(0, 2 * x) / 2, rtol=1e-12, atol=0)


def test_softplus_gradient_is_sigmoid(xp):
    """d softplus(x, beta) / dx = sigmoid(beta x), also at 0 and at +-800."""
    xs = np.array([-800.0, -1.0, 0.0, 3.0, 800.0])
    x = pg.Variable(arr(xp, xs))
    pg.sum(F.softplus(x, beta=2.0)).backward()
    with np.errstate(over="ignore"):
        want = 1 / (1 + np.exp(-2 * xs))
    assert_close(x.grad, want, rtol=1e-12)


def test_tanh_is_exported():
    """F.tanh is the differentiable tanh op."""
    assert F.tanh is pg.ops.tanh


@pytest.mark.parametrize("name, kwargs", [
    ("leaky_relu", {}), ("leaky_relu", {"slope": 0.5}), ("elu", {}), ("elu", {"alpha": 1.5}), ("gelu", {}),
    ("gelu", {"approximate": True}), ("erf", {}), ("softplus", {}), ("softplus", {"beta": 0.5}), ("tanh", {}),
])
def test_activation_gradients(xp, name, kwargs):
    """Gradients of the activations agree with central differences, to second order."""
    fn = getattr(F, name)
    check_grads(lambda v: fn(v, **kwargs), [arr(xp, XA * 1.5)], order=2)


# ---------------------------------------------------------------------------
# logsumexp
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [None, 1, -1, (0, 2)])
def test_logsumexp_forward(xp, axis):
    """logsumexp(x, axis) = log(sum(exp(x), axis))."""
    x = normal((2, 3, 4))
    assert_close(F.logsumexp(arr(xp, x), axis=axis), np.log(np.exp(x).sum(axis=axis)), rtol=1e-12)


def test_logsumexp_is_stable(xp):
    """logsumexp of [1000, 1000] is 1000 + log 2; of [-1000, -1000] is -1000 + log 2."""
    x = np.array([[1000.0, 1000.0], [-1000.0, -1000.0]])
    assert_close(F.logsumexp(arr(xp, x), axis=1), np.array([1000.0, -1000.0]) + np.log(2), rtol=1e-14)


@pytest.mark.parametrize("axis", [None, 0, (1, 2)])
def test_logsumexp_gradients(xp, axis):
    """Gradients of logsumexp agree with central differences, to second order."""
    check_grads(lambda v: F.logsumexp(v, axis=axis), [arr(xp, normal((2, 3, 2)))], order=2)


def test_logsumexp_gradient_is_softmax(xp):
    """d logsumexp(x) / dx along axis 1 is softmax(x)."""
    xs = normal((2, 3))
    x = pg.Variable(arr(xp, xs))
    pg.sum(F.logsumexp(x, axis=1)).backward()
    e = np.exp(xs)
    assert_close(x.grad, e / e.sum(axis=1, keepdims=True), rtol=1e-12)


# ---------------------------------------------------------------------------
# Losses
# ---------------------------------------------------------------------------
XS = np.array([[0.5, -1.0, 2.0], [-0.3, 0.8, -1.5], [1.1, 0.7, -0.4], [0.2, -2.2, 1.3]])
TS = np.array([[1, 0, -1], [0, 1, 1], [-1, -1, 0], [1, 1, 0]])


def np_sigmoid_ce(x, t):
    p = 1 / (1 + np.exp(-x))
    loss = -(t * np.log(p) + (1 - t) * np.log(1 - p))
    return np.where(t == -1, 0.0, loss)


def test_sigmoid_cross_entropy_forward(xp):
    """The mean over non-ignored labels of -(t log p + (1 - t) log(1 - p)), labels -1 ignored."""
    loss = F.sigmoid_cross_entropy(arr(xp, XS), ints(xp, TS))
    assert loss.shape == ()
    assert_close(loss, np_sigmoid_ce(XS, TS).sum() / (TS != -1).sum(), rtol=1e-12)


def test_sigmoid_cross_entropy_normalize_false_divides_by_batch(xp):
    """normalize=False divides the sum by the batch size x.shape[0]."""
    loss = F.sigmoid_cross_entropy(arr(xp, XS), ints(xp, TS), normalize=False)
    assert_close(loss, np_sigmoid_ce(XS, TS).sum() / 4, rtol=1e-12)


def test_sigmoid_cross_entropy_reduce_no(xp):
    """reduce='no' gives the element-wise loss, 0 where ignored."""
    loss = F.sigmoid_cross_entropy(arr(xp, XS), ints(xp, TS), reduce="no")
    assert_close(loss, np_sigmoid_ce(XS, TS), rtol=1e-12)


def test_sigmoid_cross_entropy_is_stable(xp):
    """Logits of +-1000 give exact finite losses (1000 for the wrong label, 0 for the right one)."""
    loss = F.sigmoid_cross_entropy(arr(xp, [[1000.0, -1000.0, 1000.0]]), ints(xp, [[1, 0, 0]]), reduce="no")
    assert_close(loss, np.array([[0.0, 0.0, 1000.0]]))


def test_sigmoid_cross_entropy_all_ignored_is_zero(xp):
    """With every label ignored the loss is 0 (not nan) and so is the gradient."""
    x = pg.Variable(arr(xp, XS[:1]))
    loss = F.sigmoid_cross_entropy(x, ints(xp, [[-1, -1, -1]]))
    loss.backward()
    assert_close(loss, np.array(0.0))
    assert_close(x.grad, np.zeros((1, 3)))


@pytest.mark.parametrize("kwargs", [{}, {"normalize": False}, {"reduce": "no"}], ids=["mean", "batch", "no"])
def test_sigmoid_cross_entropy_gradients(xp, kwargs):
    """Gradients in x agree with central differences, to second order."""
    t = ints(xp, TS)
    check_grads(lambda v: F.sigmoid_cross_entropy(v, t, **kwargs), [arr(xp, XS)], order=2)


def test_sigmoid_cross_entropy_rejects_bad_arguments(xp):
    """Mismatched shapes and an unknown reduce raise ValueError naming the function."""
    with pytest.raises(ValueError, match="sigmoid_cross_entropy.*same shape"):
        F.sigmoid_cross_entropy(arr(xp, XS), ints(xp, TS[:, :2]))
    with pytest.raises(ValueError, match="sigmoid_cross_entropy.*reduce"):
        F.sigmoid_cross_entropy(arr(xp, XS), ints(xp, TS), reduce="sum")


HX = np.array([[0.1, -2.0, 0.7], [3.0, 0.0, -0.6]])
HT = np.array([[0.4, 0.5, -0.6], [0.2, 0.05, 1.1]])


def np_huber(x, t, delta):
    d = x - t
    return np.where(np.abs(d) <= delta, 0.5 * d * d, delta * (np.abs(d) - 0.5 * delta))


@pytest.mark.parametrize("delta", [1.0, 0.5])
def test_huber_loss_forward(xp, delta):
    """Summed along axis 1 by default; element-wise with reduce='no'."""
    assert_close(F.huber_loss(arr(xp, HX), arr(xp, HT), delta), np_huber(HX, HT, delta).sum(axis=1))
    assert_close(F.huber_loss(arr(xp, HX), arr(xp, HT), delta, reduce="no"), np_huber(HX, HT, delta))


@pytest.mark.parametrize("reduce", ["sum_along_second_axis", "no"])
def test_huber_loss_gradients(xp, reduce):
    """Gradients in x and t agree with central differences, to second order."""
    check_grads(lambda a, b: F.huber_loss(a, b, 1.0, reduce=reduce), [arr(xp, HX), arr(xp, HT)], order=2)


def test_huber_loss_rejects_unknown_reduce(xp):
    """reduce='mean' is not one of Chainer's options."""
    with pytest.raises(ValueError, match="huber_loss.*reduce"):
        F.huber_loss(arr(xp, HX), arr(xp, HT), 1.0, reduce="mean")


# ---------------------------------------------------------------------------
# dropout
# ---------------------------------------------------------------------------


def test_dropout_is_identity_in_test_mode(xp):
    """In test mode dropout returns its input Variable; a raw array comes back as a Variable."""
    x = pg.Variable(arr(xp, XS))
    with pg.test_mode():
        assert F.dropout(x, 0.9) is x
        y = F.dropout(arr(xp, XS))
    assert isinstance(y, pg.Variable) and not y.requires_grad
    assert_close(y, XS)


def test_dropout_zeros_and_scales(xp):
    """In train mode each element is 0 or x / (1 - ratio), about ratio of them 0."""
    x = np.ones((50, 40))
    y = to_np(F.dropout(arr(xp, x), ratio=0.25))
    assert set(np.unique(y)) <= {0.0, 1 / 0.75}
    assert abs((y == 0).mean() - 0.25) < 0.05


def test_dropout_is_reproducible_from_seed(xp):
    """pg.seed(n) before dropout gives the same mask; the next draw differs."""
    x = arr(xp, np.ones((8, 8)))
    pg.seed(3)
    a = to_np(F.dropout(x))
    b = to_np(F.dropout(x))
    pg.seed(3)
    c = to_np(F.dropout(x))
    assert (a == c).all()
    assert not (a == b).all()


def test_dropout_gradient_is_the_mask(xp):
    """The gradient is the mask that scaled the output (and passes second order)."""
    x = pg.Variable(arr(xp, np.full((6, 5), 2.0)))
    pg.seed(1)
    y = F.dropout(x, 0.5)
    pg.sum(y).backward()
    assert_close(x.grad, to_np(y) / 2.0)

    def f(v):
        pg.seed(1)
        return F.dropout(v, 0.5)

    check_grads(f, [arr(xp, normal((3, 4)))], order=2)


def test_dropout_rejects_bad_ratio(xp):
    """ratio outside [0, 1) raises ValueError."""
    with pytest.raises(ValueError, match="dropout.*ratio"):
        F.dropout(arr(xp, XS), 1.0)


# ---------------------------------------------------------------------------
# embed_id
# ---------------------------------------------------------------------------
EW = normal((5, 3), seed=4)
IDS = np.array([[0, 3, 3], [4, 0, 3]])


def test_embed_id_forward(xp):
    """embed_id(x, W) is W[x], of shape x.shape + (D,)."""
    assert_close(F.embed_id(ints(xp, IDS), arr(xp, EW)), EW[IDS])


def test_embed_id_ignore_label_gives_zero_rows(xp):
    """Ids equal to ignore_label (even -1) give zero rows and no gradient."""
    ids = np.array([1, -1, 2, -1])
    W = pg.Variable(arr(xp, EW))
    y = F.embed_id(ints(xp, ids), W, ignore_label=-1)
    want = EW[np.where(ids == -1, 0, ids)]
    want[ids == -1] = 0.0
    assert_close(y, want)
    pg.sum(y).backward()
    g = np.zeros_like(EW)
    g[[1, 2]] = 1.0
    assert_close(W.grad, g)


def test_embed_id_gradient_adds_repeated_ids(xp):
    """The gradient of W is the scatter-add of the output gradient at the ids."""
    W = pg.Variable(arr(xp, EW))
    gy = normal(IDS.shape + (3,), seed=5)
    F.embed_id(ints(xp, IDS), W).backward(arr(xp, gy))
    want = np.zeros_like(EW)
    np.add.at(want, IDS, gy)
    assert_close(W.grad, want, rtol=1e-12)


def test_embed_id_gradients(xp):
    """Gradients in W agree with central differences, to second order."""
    ids = ints(xp, IDS)
    check_grads(lambda w: F.embed_id(ids, w) * F.embed_id(ids, w), [arr(xp, EW)], order=2)


def test_embed_id_rejects_float_ids(xp):
    """Float ids raise ValueError naming embed_id."""
    with pytest.raises(ValueError, match="embed_id"):
        F.embed_id(arr(xp, [0.0, 1.0]), arr(xp, EW))


# ---------------------------------------------------------------------------
# batch and layer normalization
# ---------------------------------------------------------------------------
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


def test_layer_normalization_forward(xp):
    """Each row normalized over its features, then scaled and shifted."""
    x = normal((4, 3), seed=9) * 3
    y = F.layer_normalization(arr(xp, x), arr(xp, GAMMA), arr(xp, BETA))
    mu, var = x.mean(axis=1, keepdims=True), x.var(axis=1, keepdims=True)
    assert_close(y, GAMMA * (x - mu) / np.sqrt(var + 1e-5) + BETA, rtol=1e-10)


def test_layer_normalization_gradients(xp):
    """Gradients in x, gamma and beta agree with central differences, to second order."""
    check_grads(F.layer_normalization, [arr(xp, normal((3, 3), seed=10)), arr(xp, GAMMA), arr(xp, BETA)], order=2)


# ---------------------------------------------------------------------------
# convolution_2d
# ---------------------------------------------------------------------------


def np_conv2d(x, W, b, stride, pad):
    sy, sx = stride
    ph, pw = pad
    n, c, h, w = x.shape
    o, _, kh, kw = W.shape
    xpad = np.zeros((n, c, h + 2 * ph, w + 2 * pw))
    xpad[:, :, ph:ph + h, pw:pw + w] = x
    oh, ow = (h + 2 * ph - kh) // sy + 1, (w + 2 * pw - kw) // sx + 1
    y = np.zeros((n, o, oh, ow))
    for i in range(oh):
        for j in range(ow):
            patch = xpad[:, :, i * sy:i * sy + kh, j * sx:j * sx + kw]
            y[:, :, i, j] = np.einsum("nchw,ochw->no", patch, W)
    return y if b is None else y + b.reshape(1, -1, 1, 1)


@pytest.mark.parametrize("stride, pad", [(1, 0), (2, 1), ((1, 2), (0, 1))], ids=["s1p0", "s2p1", "s12p01"])
def test_convolution_2d_forward(xp, stride, pad):
    """convolution_2d matches a loop over windows (cross-correlation, zero padding)."""
    x, W, b = normal((2, 3, 5, 6), 11), normal((4, 3, 3, 2), 12), normal((4,), 13)
    pair = lambda v: (v, v) if isinstance(v, int) else v  # noqa: E731
    y = F.convolution_2d(arr(xp, x), arr(xp, W), arr(xp, b), stride=stride, pad=pad)
    assert_close(y, np_conv2d(x, W, b, pair(stride), pair(pad)), rtol=1e-10)


def test_convolution_2d_without_bias(xp):
    """b=None adds nothing."""
    x, W = normal((1, 2, 4, 4), 14), normal((3, 2, 2, 2), 15)
    assert_close(F.convolution_2d(arr(xp, x), arr(xp, W)), np_conv2d(x, W, None, (1, 1), (0, 0)), rtol=1e-10)


def test_convolution_2d_gradients(xp):
    """Gradients in x, W and b agree with central differences, to second order."""
    x, W, b = normal((2, 2, 4, 3), 16), normal((2, 2, 2, 2), 17), normal((2,), 18)
    check_grads(lambda a, w, c: F.convolution_2d(a, w, c, stride=(2, 1), pad=1), [arr(xp, x), arr(xp, W), arr(xp, b)],
                order=2)


def test_convolution_2d_rejects_channel_mismatch(xp):
    """x with 3 channels and W for 2 raise ValueError naming both shapes."""
    with pytest.raises(ValueError, match=r"convolution_2d.*\(1, 3, 4, 4\).*\(2, 2, 3, 3\)"):
        F.convolution_2d(arr(xp, np.zeros((1, 3, 4, 4))), arr(xp, np.zeros((2, 2, 3, 3))))


# ---------------------------------------------------------------------------
# pooling
# ---------------------------------------------------------------------------


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
    """Each window's gradient goes to its maximum; ties share it."""
    x = pg.Variable(arr(xp, [[[[1.0, 5.0], [2.0, 3.0]], [[4.0, 4.0], [0.0, 1.0]]]]))
    pg.sum(F.max_pooling_2d(x, 2)).backward()
    assert_close(x.grad, np.array([[[[0.0, 1.0], [0.0, 0.0]], [[0.5, 0.5], [0.0, 0.0]]]]))


def test_average_pooling_2d_gradients(xp):
    """Gradients of average pooling agree with central differences, to second order."""
    check_grads(lambda v: F.average_pooling_2d(v, 2, 1, 1), [arr(xp, normal((1, 2, 3, 4), 22))], order=2)


# ---------------------------------------------------------------------------
# concat, stack, split_axis, where, clip
# ---------------------------------------------------------------------------
A, B = normal((2, 3), 23), normal((2, 1), 24)


def test_concat_forward_default_axis_1(xp):
    """concat joins along axis 1 by default, along any axis given."""
    assert_close(F.concat([arr(xp, A), arr(xp, B)]), np.concatenate([A, B], axis=1))
    assert_close(F.concat((arr(xp, A), arr(xp, A)), axis=0), np.concatenate([A, A], axis=0))


@pytest.mark.parametrize("axis", [1, -1, 0])
def test_concat_by_placement_matches_numpy(xp, axis):
    """The fallback used when polygrad.ops has no concat gives numpy's values and correct gradients."""
    parts = [A, B] if axis != 0 else [A, A[:1]]
    assert_close(_concat_by_placement([arr(xp, p) for p in parts], axis), np.concatenate(parts, axis=axis))
    check_grads(lambda *vs: _concat_by_placement(vs, axis), [arr(xp, p) for p in parts], order=2)


def test_concat_gradients(xp):
    """Gradients of concat agree with central differences, to second order."""
    check_grads(lambda a, b: F.concat([a, b]) * F.concat([b, a]), [arr(xp, A), arr(xp, B)], order=2)


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_stack_forward(xp, axis):
    """stack joins along a new axis."""
    assert_close(F.stack([arr(xp, A), arr(xp, 2 * A)], axis=axis), np.stack([A, 2 * A], axis=axis))


def test_stack_gradients(xp):
    """Gradients of stack agree with central differences, to second order."""
    check_grads(lambda a, b: F.stack([a, b, a], axis=1) ** 2, [arr(xp, A), arr(xp, A[::-1])], order=2)


def test_split_axis_sections_and_indices(xp):
    """An int gives equal sections, a list gives split points (as numpy.split); a tuple is returned."""
    x = normal((2, 6), 25)
    parts = F.split_axis(arr(xp, x), 3, axis=1)
    assert isinstance(parts, tuple) and len(parts) == 3
    for got, want in zip(parts, np.split(x, 3, axis=1)):
        assert_close(got, want)
    parts = F.split_axis(arr(xp, x), [1, 4], axis=-1)
    for got, want in zip(parts, np.split(x, [1, 4], axis=1)):
        assert_close(got, want)


def test_split_axis_force_tuple_false_returns_the_variable(xp):
    """With force_tuple=False a single section is returned as a Variable."""
    y = F.split_axis(arr(xp, A), 1, axis=0, force_tuple=False)
    assert isinstance(y, pg.Variable)
    assert_close(y, A)


def test_split_axis_rejects_uneven_sections(xp):
    """6 columns cannot be split into 4 equal sections."""
    with pytest.raises(ValueError, match="split_axis.*4 equal sections"):
        F.split_axis(arr(xp, np.zeros((2, 6))), 4, axis=1)


def test_split_axis_gradients(xp):
    """Gradients through the pieces agree with central differences, to second order."""
    def f(v):
        a, b, c = F.split_axis(v, [1, 3], axis=1)
        return a * pg.sum(b * b, axis=1, keepdims=True) + pg.sum(c, axis=1, keepdims=True)

    check_grads(f, [arr(xp, normal((2, 5), 26))], order=2)


def test_where_takes_chainer_keywords(xp):
    """F.where(condition=, x=, y=) selects and sends gradients to the chosen side."""
    x, y = pg.Variable(arr(xp, [1.0, 2.0])), pg.Variable(arr(xp, [3.0, 4.0]))
    out = F.where(condition=xp.asarray([True, False]), x=x, y=y)
    assert_close(out, np.array([1.0, 4.0]))
    pg.sum(out).backward()
    assert_close(x.grad, np.array([1.0, 0.0]))
    assert_close(y.grad, np.array([0.0, 1.0]))


def test_clip_forward_and_gradient(xp):
    """clip limits to [x_min, x_max]; the gradient is 1 inside (bounds included) and 0 outside."""
    xs = np.array([-2.0, -1.0, 0.3, 1.0, 5.0])
    x = pg.Variable(arr(xp, xs))
    y = F.clip(x, -1.0, 1.0)
    assert_close(y, np.clip(xs, -1, 1))
    pg.sum(y).backward()
    assert_close(x.grad, np.array([0.0, 1.0, 1.0, 1.0, 0.0]))
    assert_close(F.clip(arr(xp, xs), None, 0.5), np.minimum(xs, 0.5))
    assert_close(F.clip(arr(xp, xs), 0.0, None), np.maximum(xs, 0.0))


def test_clip_gradients(xp):
    """Gradients of clip agree with central differences, to second order."""
    check_grads(lambda v: F.clip(v, -1.0, 1.0) * v, [arr(xp, XA)], order=2)


# ---------------------------------------------------------------------------
# Links
# ---------------------------------------------------------------------------


def test_convolution2d_link(xp, backend_name):
    """L.Convolution2D holds W (out, in, kh, kw) and b, and computes convolution_2d."""
    pg.seed(0)
    link = L.Convolution2D(2, 3, 3, stride=1, pad=1, dtype="float64", backend=backend_name)
    assert link.W.shape == (3, 2, 3, 3) and link.b.shape == (3,)
    assert [name for name, _ in link.namedparams()] == ["/W", "/b"]
    x = normal((1, 2, 4, 4), 27)
    y = link(arr(xp, x))
    assert_close(y, np_conv2d(x, to_np(link.W), to_np(link.b), (1, 1), (1, 1)), rtol=1e-10)


def test_convolution2d_link_infers_in_channels_and_is_seeded(xp, backend_name):
    """Convolution2D(out, ksize) infers in_channels at the first call; pg.seed fixes W."""
    pg.seed(5)
    a = L.Convolution2D(4, 3, dtype="float64", backend=backend_name)
    assert a.W.data is None
    a(arr(xp, np.zeros((1, 2, 5, 5))))
    pg.seed(5)
    b = L.Convolution2D(2, 4, 3, dtype="float64", backend=backend_name)
    assert a.W.shape == (4, 2, 3, 3)
    assert_close(a.W, to_np(b.W))


def test_embedid_link(xp, backend_name):
    """L.EmbedID holds W (in_size, out_size) and looks ids up."""
    link = L.EmbedID(5, 3, dtype="float64", backend=backend_name, ignore_label=-1)
    y = link(ints(xp, [[1, -1]]))
    assert y.shape == (1, 2, 3)
    assert_close(y[0, 0, :], to_np(link.W)[1])
    assert_close(y[0, 1, :], np.zeros(3))


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


# ---------------------------------------------------------------------------
# A small CNN learns
# ---------------------------------------------------------------------------


class SmallCNN(pg.Chain):
    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.conv = L.Convolution2D(1, 4, 3, pad=1, dtype="float64")
            self.fc = L.Linear(4 * 4 * 4, 2, dtype="float64")

    def forward(self, x):
        return self.fc(F.max_pooling_2d(F.relu(self.conv(x)), 2))


def bars(n, seed):
    """8x8 images of a vertical (label 0) or horizontal (label 1) bar at a random place, plus noise."""
    r = np.random.default_rng(seed)
    x = r.normal(0, 0.3, (n, 1, 8, 8))
    t = r.integers(0, 2, n)
    pos = r.integers(1, 7, n)
    for i in range(n):
        if t[i] == 0:
            x[i, 0, :, pos[i]] += 1.0
        else:
            x[i, 0, pos[i], :] += 1.0
    return x, t


def test_small_cnn_learns_bars():
    """conv -> relu -> max pool -> linear, trained by SGD, drives the loss down and classifies."""
    pg.seed(0)
    model = SmallCNN()
    x, t = bars(64, 0)
    losses = []
    for _ in range(40):
        loss = F.softmax_cross_entropy(model(x), t)
        model.cleargrads()
        loss.backward()
        for p in model.params():
            p.data -= 0.5 * p.grad
        losses.append(float(loss.data))
    assert losses[-1] < 0.3 * losses[0], losses
    xt, tt = bars(200, 1)
    with pg.test_mode(), pg.no_backprop_mode():
        accuracy = (to_np(model(xt)).argmax(axis=1) == tt).mean()
    assert accuracy > 0.9, accuracy


def test_batchnormalization_link_moves_running_statistics():
    """to_backend moves gamma, beta and the running statistics."""
    link = L.BatchNormalization(3, dtype="float64", backend="numpy")
    link.to_backend("array_api_strict")
    for a in (link.gamma.data, link.beta.data, link.avg_mean, link.avg_var):
        assert type(a).__module__.startswith("array_api_strict")
    assert_close(link(pg.asarray(BX4.tolist(), backend="array_api_strict")), np_batch_norm(BX4, np.ones(3), np.zeros(3), 2e-5, (0, 2, 3)), rtol=1e-10)


# ---------------------------------------------------------------------------
# Compiled functions
# ---------------------------------------------------------------------------


def test_compiled_cnn_matches_eager_and_redraws_dropout():
    """conv, pooling and sigmoid_cross_entropy compile to the eager values; dropout draws a new mask per call."""
    from polygrad import symbolic as S

    x, W, t = S.tensor("float64", (2, 1, 6, 6), "x"), S.tensor("float64", (3, 1, 3, 3), "W"), S.tensor("int64", (2, 3), "t")
    h = pg.reshape(F.max_pooling_2d(F.relu(F.convolution_2d(x, W, pad=1)), 3, 2, 1), (2, -1))
    loss = F.sigmoid_cross_entropy(h[:, :3], t)
    f = pg.function([x, W, t], [loss, S.grad(loss, W), pg.sum(F.dropout(h))])
    xv, Wv, tv = normal((2, 1, 6, 6), 30), normal((3, 1, 3, 3), 31), np.array([[0, 1, -1], [1, 1, 0]])
    got_loss, got_gW, drop1 = f(xv, Wv, tv)
    _, _, drop2 = f(xv, Wv, tv)
    Wvar = pg.Variable(Wv)
    he = pg.reshape(F.max_pooling_2d(F.relu(F.convolution_2d(xv, Wvar, pad=1)), 3, 2, 1), (2, -1))
    want = F.sigmoid_cross_entropy(he[:, :3], tv)
    want.backward()
    assert_close(got_loss, to_np(want), rtol=1e-12)
    assert_close(got_gW, to_np(Wvar.grad), rtol=1e-10)
    assert float(to_np(drop1)) != float(to_np(drop2))

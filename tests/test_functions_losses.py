"""polygrad.functions' losses (softmax_cross_entropy, mean_squared_error,
sigmoid_cross_entropy, huber_loss): forward values against hand-written numpy,
ignored labels and reductions, stability, gradients by check_grads in float64
(order 2), and the errors bad arguments get, on numpy and array_api_strict."""

from __future__ import annotations

import numpy as np
import pytest

import polygrad as pg
import polygrad.functions as F
from polygrad.testing import check_grads

from conftest import arr, ints, to_np
from conftest import assert_values_close as assert_close


def np_log_softmax(a, axis=1):
    m = a.max(axis=axis, keepdims=True)
    return a - m - np.log(np.exp(a - m).sum(axis=axis, keepdims=True))


X = np.array([[0.5, -1.0, 2.0, 0.1], [-0.3, 0.8, -1.5, 1.2], [1.1, 0.7, -0.4, -2.2]])
T = np.array([2, 1, 0])


# ---------------------------------------------------------------------------
# softmax_cross_entropy and mean_squared_error
# ---------------------------------------------------------------------------


def test_softmax_cross_entropy_forward(xp):
    """The mean over the batch of -log softmax(x)[i, t_i]."""
    loss = F.softmax_cross_entropy(arr(xp, X), ints(xp, T))
    assert loss.shape == ()
    assert_close(loss, -np_log_softmax(X)[np.arange(3), T].mean())


def test_softmax_cross_entropy_ignore_label_default(xp):
    """Labels equal to -1 are ignored, and the mean is over the others."""
    t = np.array([2, -1, 0])
    loss = F.softmax_cross_entropy(arr(xp, X), ints(xp, t))
    assert_close(loss, -(np_log_softmax(X)[0, 2] + np_log_softmax(X)[2, 0]) / 2)


def test_softmax_cross_entropy_custom_ignore_label(xp):
    """ignore_label=1 drops the rows labelled 1."""
    loss = F.softmax_cross_entropy(arr(xp, X), ints(xp, T), ignore_label=1)
    assert_close(loss, -(np_log_softmax(X)[0, 2] + np_log_softmax(X)[2, 0]) / 2)


def test_softmax_cross_entropy_normalize_false_divides_by_batch(xp):
    """normalize=False averages over the whole batch, ignored rows included."""
    t = np.array([2, -1, 0])
    loss = F.softmax_cross_entropy(arr(xp, X), ints(xp, t), normalize=False)
    assert_close(loss, -(np_log_softmax(X)[0, 2] + np_log_softmax(X)[2, 0]) / 3)


def test_softmax_cross_entropy_reduce_no(xp):
    """reduce='no' gives one loss per example, 0 for ignored ones."""
    t = np.array([2, -1, 0])
    loss = F.softmax_cross_entropy(arr(xp, X), ints(xp, t), reduce="no")
    assert_close(loss, np.array([-np_log_softmax(X)[0, 2], 0.0, -np_log_softmax(X)[2, 0]]))


def test_softmax_cross_entropy_all_ignored_is_zero(xp):
    """With every label ignored the loss is 0 (not nan) and so is the gradient."""
    x = pg.Variable(arr(xp, X))
    loss = F.softmax_cross_entropy(x, ints(xp, [-1, -1, -1]))
    loss.backward()
    assert_close(loss, np.array(0.0))
    assert_close(x.grad, np.zeros_like(X))


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
@pytest.mark.parametrize("kwargs", [{}, {"normalize": False}, {"reduce": "no"}], ids=["mean", "normalize_false", "no"])
def test_softmax_cross_entropy_all_ignored_is_positive_zero(xp, dtype, kwargs):
    """With every label ignored the loss is +0.0, as in Chainer; the default path (the nll row) gave -0.0
    (-sum of zeros), where reduce='no' and normalize=False already gave +0.0."""
    if not hasattr(xp, dtype):
        pytest.skip(f"no {dtype} on this backend")
    got = to_np(F.softmax_cross_entropy(arr(xp, X, dtype), ints(xp, [-1, -1, -1]), **kwargs))
    assert (got == 0).all() and not np.signbit(got).any()


def test_softmax_cross_entropy_gradient_is_softmax_minus_onehot(xp):
    """d loss / dx = (softmax(x) - onehot(t)) / N."""
    x = pg.Variable(arr(xp, X))
    F.softmax_cross_entropy(x, ints(xp, T)).backward()
    e = np.exp(X)
    want = e / e.sum(axis=1, keepdims=True)
    want[np.arange(3), T] -= 1
    assert_close(x.grad, want / 3)


@pytest.mark.parametrize("kwargs", [{}, {"reduce": "no"}, {"normalize": False}, {"ignore_label": 0}],
                         ids=["mean", "reduce_no", "normalize_false", "ignore_label"])
def test_softmax_cross_entropy_gradients(xp, kwargs):
    """Gradients of softmax_cross_entropy in x agree with central differences, to second order."""
    t = ints(xp, [2, 0, 1] if "ignore_label" in kwargs else [2, -1, 0])  # -1 is no class when 0 is the ignored label
    check_grads(lambda v: F.softmax_cross_entropy(v, t, **kwargs), [arr(xp, X)], order=2)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("ignore_label", [-1, None])
def test_softmax_cross_entropy_two_nodes_match_the_composed_functions_bit_for_bit(xp, dtype, ignore_label):
    """The usual case (mean, normalized) is two nodes, log_softmax and nll (log_softmax's output is
    kept for backward, not computed again); its loss, gradient and second-order gradient are
    those of log_softmax, where, sum, negative and divide composed, to the last bit (a training
    run takes the same path either way). So are those of masked_nll, the one-node row."""
    from polygrad.ops.nn import label_mask, log_softmax, masked_nll, valid_count

    x = pg.Variable(arr(xp, X, dtype))
    t = ints(xp, [2, 1, 0] if ignore_label is None else [2, -1, 0])
    fused = F.softmax_cross_entropy(x, t, ignore_label=ignore_label)
    assert {f.label for f in pg.build_computational_graph(fused, remove_variable=True).nodes} == {
        "log_softmax", "softmax_cross_entropy_nll"}
    mask = label_mask(x, t, ignore_label)
    count = valid_count(x, t, ignore_label)
    one_node = masked_nll(x, mask, count)
    w = arr(xp, np.arange(12.0).reshape(3, 4) / 7, dtype)
    for other in (fused, one_node):
        composed = -pg.sum(pg.where(mask, log_softmax(x, axis=1), 0.0)) / count  # the second order frees it
        for a, b in [(other, composed), *zip(*(pg.grad(y, x, create_graph=True) for y in (other, composed)))]:
            assert np.array_equal(np.asarray(a.data), np.asarray(b.data))
            if a is not other:
                (ha,), (hb,) = (pg.grad(pg.sum(g * w), x) for g in (a, b))
                assert np.array_equal(np.asarray(ha.data), np.asarray(hb.data))


def test_softmax_cross_entropy_float32(xp):
    """float32 logits give a float32 loss."""
    loss = F.softmax_cross_entropy(arr(xp, X, "float32"), ints(xp, T))
    assert loss.dtype == xp.float32


def test_mean_squared_error_forward(xp):
    """mean((x0 - x1) ** 2)."""
    y = X[::-1] * 0.5
    assert_close(F.mean_squared_error(arr(xp, X), arr(xp, y)), ((X - y) ** 2).mean())


def test_mean_squared_error_gradients(xp):
    """Gradients of mean_squared_error in both inputs agree with central differences."""
    check_grads(F.mean_squared_error, [arr(xp, X), arr(xp, X[::-1] * 0.5)], order=2)


@pytest.mark.parametrize("xshape,tshape", [((2, 3), (3,)), ((2, 3), (2, 1)), ((6,), (6,))])
def test_softmax_cross_entropy_wrong_shapes(xp, xshape, tshape):
    """x not (N, C) or t not (N,) raises ValueError naming the function and both shapes."""
    x = pg.Variable(xp.zeros(xshape, dtype=xp.float64))
    t = xp.zeros(tshape, dtype=xp.int64)
    with pytest.raises(ValueError) as info:
        F.softmax_cross_entropy(x, t)
    msg = str(info.value)
    assert "softmax_cross_entropy" in msg
    assert str(xshape) in msg and str(tshape) in msg


# ---------------------------------------------------------------------------
# sigmoid_cross_entropy and huber_loss
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


@pytest.mark.parametrize("soft", [False, True])
def test_sigmoid_cross_entropy_of_confident_logits_keeps_float32_precision(soft):
    """Confident right answers in float32: softplus(x) - x t cancelled, so a logit of 15 labelled 1
    had a loss of 0 (3.06e-7) and from 17 a gradient of 0 (-4.1e-8); each is now within a few ulp
    of the float64 value, for hard and soft labels, on either side."""
    x0 = np.array([10.0, 15.0, 17.0, 30.0, -10.0, -30.0], dtype=np.float32)
    t0 = np.array([1, 1, 1, 1, 0, 0])
    t = t0.astype(np.float32) if soft else t0.astype(np.int32)
    x = pg.Variable(x0.reshape(1, -1))
    F.sigmoid_cross_entropy(x, t.reshape(1, -1), reduce="no").backward(np.ones((1, 6), np.float32))
    loss = F.sigmoid_cross_entropy(x, t.reshape(1, -1), reduce="no").data
    x64 = x0.astype(np.float64)
    want = np.logaddexp(0, np.where(t0 == 1, -x64, x64))
    want_grad = np.where(t0 == 1, -1 / (1 + np.exp(x64)), 1 / (1 + np.exp(-x64)))
    np.testing.assert_allclose(np.asarray(loss)[0], want, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(x.grad)[0], want_grad, rtol=1e-6)


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


def test_huber_loss_summed_along_axis_1_refuses_a_1d_x_naming_the_function(xp):
    """reduce='sum_along_second_axis' of a 1-D x failed in sum with numpy's AxisError ("axis 1 is
    out of bounds"); reduce='no' still takes it."""
    with pytest.raises(ValueError, match=r"functions.huber_loss: reduce='sum_along_second_axis' .* \(3,\)"):
        F.huber_loss(arr(xp, HX[0]), arr(xp, HT[0]), 1.0)
    assert F.huber_loss(arr(xp, HX[0]), arr(xp, HT[0]), 1.0, reduce="no").shape == HX[0].shape


def test_sigmoid_cross_entropy_labels_are_checked_at_every_compiled_call():
    """The labels were checked only as the function was called, which in a compiled function is
    the trace, where they cannot be read: integer labels 7 gave a loss of log 2 at every call.
    The checks are rows of the op table now; soft labels keep their gradient."""
    from polygrad import symbolic as T

    x, t = T.matrix("x"), T.tensor("int64", (None, None), "t")
    f = pg.function([x, t], F.sigmoid_cross_entropy(x, t))
    assert float(f(np.zeros((2, 2)), np.ones((2, 2), dtype=np.int64))) == pytest.approx(np.log(2))
    with pytest.raises(ValueError, match="integer labels t must be 0, 1 or -1"):
        f(np.zeros((2, 2)), np.full((2, 2), 7))
    s = T.matrix("s")
    g = pg.function([x, s], F.sigmoid_cross_entropy(x, s))
    with pytest.raises(ValueError, match=r"probabilities in \[0, 1\]"):
        g(np.zeros((2, 2)), np.full((2, 2), 2.0))
    soft = pg.Variable(np.full((2, 2), 0.3))
    F.sigmoid_cross_entropy(pg.Variable(np.ones((2, 2))), soft).backward()
    np.testing.assert_allclose(soft.grad, np.full((2, 2), -0.25))


def test_dask_soft_labels_that_require_grad_are_checked_where_the_loss_is_computed():
    """Soft labels given as a Variable (which requires grad) skipped the lazy check: 2.0 gave a
    finite loss on dask, where numpy raises."""
    da = pytest.importorskip("dask.array")
    t = pg.Variable(da.from_array(np.full((2, 2), 2.0)))
    loss = F.sigmoid_cross_entropy(pg.Variable(da.zeros((2, 2))), t)
    with pytest.raises(ValueError, match=r"probabilities in \[0, 1\]"):
        pg.compute(loss)


@pytest.mark.parametrize("normalize", [True, False])
@pytest.mark.parametrize("reduce", ["mean", "no"])
def test_softmax_cross_entropy_of_a_class_per_position(xp, normalize, reduce):
    """x (N, C, d1, ...) and t (N, d1, ...), as Chainer takes them (segmentation): it was refused.
    The positions are rows of softmax's own case; normalize=False divides the sum by N, as
    Chainer's (len(x)). Values checked against Chainer 7.8.1 in stop 25 (32 cases, all equal)."""
    rs = np.random.RandomState(0)
    x = rs.randn(2, 3, 4, 5)
    t = np.random.RandomState(2).randint(-1, 3, size=(2, 4, 5))
    logp = x - np.log(np.exp(x).sum(axis=1, keepdims=True))
    picked = np.where(t >= 0, np.take_along_axis(logp, np.maximum(t, 0)[:, None], axis=1)[:, 0], 0.0)
    if reduce == "no":
        want = -picked
    else:
        want = -picked.sum() / ((t >= 0).sum() if normalize else 2)
    v = pg.Variable(arr(xp, x))
    loss = F.softmax_cross_entropy(v, ints(xp, t), normalize=normalize, reduce=reduce)
    assert_close(loss, want, rtol=1e-12)
    check_grads(lambda a: F.softmax_cross_entropy(a, ints(xp, t), normalize=normalize, reduce=reduce), [arr(xp, x)])
    with pytest.raises(ValueError, match=r"expects x of shape \(N, C, \.\.\.\) and t of shape \(N, \.\.\.\), got x \(2, 3, 4, 5\) and t \(2, 5, 4\)"):
        F.softmax_cross_entropy(v, ints(xp, t.reshape(2, 5, 4)))


def test_softmax_cross_entropy_of_a_class_per_position_with_an_unknown_batch():
    """Compiled with a symbolic batch size: only C and the positions need known sizes."""
    from polygrad import symbolic as T

    x = T.tensor("float64", (None, 4, 3), "x")
    t = T.tensor("int64", (None, 3), "t")
    xs = np.random.RandomState(0).randn(2, 4, 3)
    ts = np.array([[0, 3, -1], [2, 2, 1]])
    for kwargs in ({}, {"normalize": False}, {"reduce": "no"}):
        f = pg.function([x, t], F.softmax_cross_entropy(x, t, **kwargs))
        np.testing.assert_allclose(f(xs, ts), F.softmax_cross_entropy(pg.Variable(xs), ts, **kwargs).data, rtol=1e-12)


def test_softmax_cross_entropy_of_no_positions():
    """An empty batch or an empty spatial dimension: normalize=False gave nan (a mean of none),
    and reduce='no' failed on reshape(-1, 0); Chainer gives 0 and shape (2, 0)."""
    for shape in ((0, 3, 4), (2, 3, 0)):
        x = pg.Variable(np.zeros(shape))
        t = np.zeros((shape[0],) + shape[2:], dtype=np.int64)
        assert float(F.softmax_cross_entropy(x, t, normalize=False).data) == 0.0
        assert F.softmax_cross_entropy(x, t, reduce="no").shape == t.shape


def test_dask_losses_of_sizes_not_computed_yet_equal_numpy():
    """After boolean-mask indexing (dropping padding rows) dask knows no batch size (NaN), and
    NaN == NaN is False: every loss and accuracy refused x and t of the same shape (nan, 3); a
    count taken from such a shape, max(1, NaN), is 1. The losses now equal numpy's, the counts
    taken where the loss is computed; a gradient equals numpy's or is refused as docs/dask.md
    says (sum's gradient needs the size)."""
    da = pytest.importorskip("dask.array")
    import dask

    rng = np.random.default_rng(0)
    x, t = rng.standard_normal((8, 3)), rng.integers(0, 3, 8)
    x4, t4 = rng.standard_normal((8, 3, 2)), rng.integers(0, 3, (8, 2))
    binary, soft = rng.integers(0, 2, (8, 3)), rng.uniform(size=(8, 3))
    keep = np.array([1, 1, 0, 1, 1, 0, 1, 1], bool)
    losses = [(F.softmax_cross_entropy, x, t, {}), (F.softmax_cross_entropy, x, t, {"ignore_label": None}),
              (F.softmax_cross_entropy, x, t, {"normalize": False}),
              (F.sigmoid_cross_entropy, x, binary, {"normalize": False}), (F.sigmoid_cross_entropy, x, soft, {}),
              (F.mean_squared_error, x, soft, {}), (F.accuracy, x, t, {}), (F.accuracy, x, t, {"ignore_label": 1})]

    def masked(a):
        return da.from_array(a, chunks=(4,) + a.shape[1:])[da.from_array(keep, chunks=4)]

    with dask.config.set(scheduler="synchronous"):
        for loss, xs, ts, kwargs in losses:
            want = pg.Variable(xs[keep])
            lazy = pg.Variable(masked(xs))
            expected, got = loss(want, ts[keep], **kwargs), loss(lazy, masked(ts), **kwargs)
            np.testing.assert_allclose(pg.compute(got.data)[0], expected.data, rtol=1e-12, err_msg=str((loss, kwargs)))
            if expected.requires_grad:
                pg.sum(expected).backward()
                try:
                    pg.sum(got).backward()
                except ValueError as exc:
                    assert "does not know yet" in str(exc)
                    continue
                np.testing.assert_allclose(pg.compute(lazy.grad)[0], want.grad, rtol=1e-12, err_msg=str(kwargs))
        for kwargs in ({}, {"normalize": False}, {"reduce": "no"}):  # a class per position: reshaped, refused
            with pytest.raises(ValueError, match="does not know yet"):
                F.softmax_cross_entropy(masked(x4), masked(t4), **kwargs)


def test_compiled_losses_divide_by_the_batch_size_of_each_call():
    """With a symbolic batch size, normalize=False took a mean of the rows: NaN for an empty
    batch, where eagerly (and in Chainer) it is 0; sigmoid_cross_entropy failed to trace with
    "'>' not supported between 'NoneType' and 'int'". The batch size is read at each call."""
    from polygrad import symbolic as T

    rng = np.random.default_rng(0)
    x2, t2 = T.matrix("x"), T.vector("t", dtype="int64")
    x3, t3 = T.tensor("float64", (None, 3, 2), "x3"), T.tensor("int64", (None, 2), "t3")
    tb = T.matrix("tb", dtype="int64")
    for x, t, loss, shape, labels in (
            (x2, t2, F.softmax_cross_entropy, (3,), lambda n: rng.integers(-1, 3, n)),
            (x3, t3, F.softmax_cross_entropy, (3, 2), lambda n: rng.integers(-1, 3, (n, 2))),
            (x2, tb, F.sigmoid_cross_entropy, (3,), lambda n: rng.integers(-1, 2, (n, 3)))):
        f = pg.function([x, t], loss(x, t, normalize=False))
        for n in (0, 1, 5):
            xs, ts = rng.standard_normal((n,) + shape), labels(n)
            assert float(f(xs, ts)) == pytest.approx(float(loss(pg.Variable(xs), ts, normalize=False).data), abs=1e-12)


@pytest.mark.parametrize("kwargs", [{}, {"normalize": False}, {"reduce": "no"}])
def test_an_ignored_row_of_all_minus_inf_gets_a_zero_gradient(xp, kwargs):
    """An ignored row whose logits are all -inf (a fully masked position) adds nothing to the
    loss, yet its gradient was NaN: log_softmax gave it -inf - -inf, and backward exp(NaN) * 0.
    Its log-probabilities are -inf now; the other rows keep their values and gradients."""
    x = np.array([[-np.inf, -np.inf, -np.inf], [0.0, -np.inf, 1.0], [0.5, -1.0, 2.0]])
    t = np.array([-1, 2, 0])
    v = pg.Variable(arr(xp, x))
    with np.errstate(all="ignore"):
        pg.sum(F.softmax_cross_entropy(v, ints(xp, t), **kwargs)).backward()
        w = pg.Variable(arr(xp, x[1:]))
        pg.sum(F.softmax_cross_entropy(w, ints(xp, t[1:]), **kwargs)).backward()
        masked = F.log_softmax(arr(xp, x[:1]))
    grad = np.asarray(pg.to_backend(v.grad, "numpy"))
    np.testing.assert_array_equal(grad[0], 0.0)
    scale = 2 / 3 if kwargs == {"normalize": False} else 1.0  # divided by N: 3 rows against 2
    np.testing.assert_allclose(grad[1:], np.asarray(pg.to_backend(w.grad, "numpy")) * scale, rtol=1e-12)
    np.testing.assert_array_equal(np.asarray(masked.data), -np.inf)


def test_uint8_labels_with_the_default_ignore_label(xp):
    """uint8 labels (segmentation masks read from images) hold no -1: no label is ignored. The
    comparisons with -1, which the standard leaves unspecified, raised OverflowError inside a
    kernel on array_api_strict (softmax_cross_entropy, sigmoid_cross_entropy, accuracy and
    embed_id with ignore_label=-1); the results equal those of int64 labels."""
    from polygrad import symbolic as S

    def u8(a):
        return xp.asarray(np.asarray(a).tolist(), dtype=xp.uint8)

    x, binary, ids = arr(xp, X), np.array([[0, 1, 1, 0]] * 3), np.array([0, 2, 1])
    for u, i in ((F.softmax_cross_entropy(x, u8(T)), F.softmax_cross_entropy(x, ints(xp, T))),
                 (F.sigmoid_cross_entropy(x, u8(binary)), F.sigmoid_cross_entropy(x, ints(xp, binary))),
                 (F.accuracy(x, u8(T), ignore_label=-1), F.accuracy(x, ints(xp, T), ignore_label=-1)),
                 (F.embed_id(u8(ids), x, ignore_label=-1), F.embed_id(ints(xp, ids), x, ignore_label=-1))):
        assert_close(u, np.asarray(pg.to_backend(i.data, "numpy")), rtol=0)
    s, t, b = S.matrix("x"), S.vector("t", dtype="uint8"), S.matrix("b", dtype="uint8")  # compiled: dtype names
    f = pg.function([s, t, b], [F.softmax_cross_entropy(s, t), F.sigmoid_cross_entropy(s, b)])
    got = f(x, u8(T), u8(binary))
    want = (F.softmax_cross_entropy(x, ints(xp, T)), F.sigmoid_cross_entropy(x, ints(xp, binary)))
    for g, w in zip(got, want):
        assert_close(g, np.asarray(pg.to_backend(w.data, "numpy")), rtol=1e-15)


@pytest.mark.parametrize("dtype", ["uint8", "uint16", "uint32", "uint64"])
def test_accuracy_of_unsigned_labels_equals_that_of_int64_labels(xp, dtype):
    """uint64 labels beside argmax's int64, which the standard promotes to nothing: accuracy raised
    from equal on array_api_strict ("int64 and uint64 cannot be type promoted"), naming neither it
    nor t; eager and compiled, with and without ignore_label."""
    from polygrad import symbolic as S

    x, labels = arr(xp, X), xp.asarray(T.tolist(), dtype=getattr(xp, dtype))
    for kw in ({}, {"ignore_label": 1}):
        want = np.asarray(F.accuracy(x, ints(xp, T), **kw).data)
        assert_close(F.accuracy(x, labels, **kw), want, rtol=0)
    s, t = S.matrix("x"), S.vector("t", dtype=dtype)
    f = pg.function([s, t], [F.accuracy(s, t), F.accuracy(s, t, ignore_label=1)])
    for got, kw in zip(f(x, labels), ({}, {"ignore_label": 1})):
        assert_close(got, np.asarray(F.accuracy(x, ints(xp, T), **kw).data), rtol=0)


def test_loss_arguments_are_taken_as_meant(xp):
    """normalize="no" (a slip for reduce="no") was taken as True and gave a scalar; a NumPy
    integer ignore_label (t.max(), np.iinfo(...)) was refused; an ignored row's loss with
    reduce="no" was -0.0 (Chainer's is 0.0)."""
    x, t = arr(xp, X), ints(xp, [2, 1, -1])
    for loss, labels in ((F.softmax_cross_entropy, t), (F.sigmoid_cross_entropy, ints(xp, np.zeros((3, 4), int)))):
        with pytest.raises(TypeError, match=f"{loss.__name__}: normalize must be a bool, got 'no'"):
            loss(x, labels, normalize="no")
        assert_close(loss(x, labels, normalize=np.False_), np.asarray(loss(x, labels, normalize=False).data), rtol=0)
    for label in (np.int64(-1), np.int32(-1)):
        assert_close(F.softmax_cross_entropy(x, t, ignore_label=label), np.asarray(F.softmax_cross_entropy(x, t).data),
                     rtol=0)
        assert_close(F.accuracy(x, t, ignore_label=label), np.asarray(F.accuracy(x, t, ignore_label=-1).data), rtol=0)
    with pytest.raises(TypeError, match="ignore_label must be an int or None, got True"):
        F.softmax_cross_entropy(x, t, ignore_label=True)
    losses = np.asarray(F.softmax_cross_entropy(x, t, reduce="no").data)
    assert losses[2] == 0.0 and not np.signbit(losses[2])
    empty = F.softmax_cross_entropy(xp.zeros((0, 4), dtype=xp.float64), xp.zeros((0,), dtype=xp.int64), normalize=False)
    assert not np.signbit(np.asarray(empty.data))

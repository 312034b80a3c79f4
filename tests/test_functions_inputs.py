"""Inputs checked at the door: labels, ids and options of the functions of F are
refused with an error naming the function, the argument and what was wrong,
instead of giving a silently wrong value (findings S8)."""

from __future__ import annotations

import numpy as np
import pytest

import polygrad as pg
import polygrad.functions as F

from conftest import arr, assert_close, to_np


def labels(xp, values, dtype="int64"):
    return xp.asarray(np.asarray(values).tolist(), dtype=getattr(xp, dtype))


def zeros(xp, shape):
    return pg.Variable(xp.zeros(shape, dtype=xp.float64))


# ---------------------------------------------------------------------------
# softmax_cross_entropy
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [5, 3, -2])
def test_softmax_cross_entropy_refuses_labels_out_of_range(xp, bad):
    """A label outside [0, C) other than ignore_label is a ValueError naming the function, t and the value."""
    with pytest.raises(ValueError, match=rf"softmax_cross_entropy: labels t must be in \[0, 3\).*got {bad} \(1 of 2"):
        F.softmax_cross_entropy(zeros(xp, (2, 3)), labels(xp, [0, bad]))


def test_softmax_cross_entropy_refuses_float_labels(xp):
    """Fractional (any floating-point) labels are refused, naming t and its dtype."""
    with pytest.raises(ValueError, match=r"softmax_cross_entropy: t must be an array of integers, got dtype \S*float64"):
        F.softmax_cross_entropy(zeros(xp, (2, 3)), labels(xp, [0.5, 1.0], "float64"))


def test_softmax_cross_entropy_refuses_labels_that_are_not_an_array(xp):
    """A Python list for t is a TypeError naming t."""
    with pytest.raises(TypeError, match="softmax_cross_entropy: t must be an array of integers, got a list"):
        F.softmax_cross_entropy(zeros(xp, (2, 3)), [0, 1])


@pytest.mark.parametrize("reduce", ["bogus", "sum", "Mean", None])
def test_softmax_cross_entropy_refuses_unknown_reduce(xp, reduce):
    """A misspelled reduce= raises instead of meaning "mean"."""
    with pytest.raises(ValueError, match=r"softmax_cross_entropy: reduce must be one of 'mean', 'no', got"):
        F.softmax_cross_entropy(zeros(xp, (2, 3)), labels(xp, [0, 1]), reduce=reduce)


def test_softmax_cross_entropy_refuses_a_non_integer_ignore_label(xp):
    """ignore_label=0.5 is a TypeError naming ignore_label."""
    with pytest.raises(TypeError, match="softmax_cross_entropy: ignore_label must be an int or None"):
        F.softmax_cross_entropy(zeros(xp, (2, 3)), labels(xp, [0, 1]), ignore_label=0.5)


def test_softmax_cross_entropy_ignore_label_none_ignores_nothing(xp):
    """ignore_label=None: every label counts, and -1 is refused as out of range."""
    loss = F.softmax_cross_entropy(zeros(xp, (2, 3)), labels(xp, [0, 2]), ignore_label=None)
    assert_close(loss, np.array(np.log(3.0)))
    with pytest.raises(ValueError, match=r"in \[0, 3\), got -1"):
        F.softmax_cross_entropy(zeros(xp, (2, 3)), labels(xp, [0, -1]), ignore_label=None)


def test_softmax_cross_entropy_still_ignores_its_ignore_label(xp):
    """Labels equal to a custom ignore_label (outside [0, C) too) are skipped, not refused."""
    loss = F.softmax_cross_entropy(zeros(xp, (2, 3)), labels(xp, [1, 99]), ignore_label=99)
    assert_close(loss, np.array(np.log(3.0)))


def _counting(monkeypatch, xp, names):
    """Count the calls of the namespace functions ``names`` (wrapped in place)."""
    calls = dict.fromkeys(names, 0)
    for name in names:
        def counted(*a, _f=getattr(xp, name), _n=name, **k):
            calls[_n] += 1
            return _f(*a, **k)
        monkeypatch.setattr(xp, name, counted)
    return calls


def test_softmax_cross_entropy_checks_the_usual_labels_with_one_reduction(monkeypatch):
    """Labels all in [0, C): the label mask counts the class hits, one reduction and one read
    of its value (one synchronization on a GPU), no min and max of the labels."""
    from polygrad.ops.nn import label_mask

    xp = pg.get_backend("numpy").xp
    calls = _counting(monkeypatch, xp, ("count_nonzero", "min", "max"))
    mask = label_mask(zeros(xp, (3, 4)), labels(xp, [0, 3, 1]))
    assert calls == {"count_nonzero": 1, "min": 0, "max": 0}
    assert to_np(mask).tolist() == [[True, False, False, False], [False, False, False, True],
                                    [False, True, False, False]]


def test_softmax_cross_entropy_checks_labels_without_count_nonzero(monkeypatch):
    """A namespace of a standard before 2023.12 (no count_nonzero): labels are checked all the same."""
    xp = pg.get_backend("numpy").xp
    monkeypatch.delattr(xp, "count_nonzero")
    assert_close(F.softmax_cross_entropy(zeros(xp, (2, 3)), labels(xp, [0, 2])), np.array(np.log(3.0)))
    with pytest.raises(ValueError, match=r"in \[0, 3\).*got 3"):
        F.softmax_cross_entropy(zeros(xp, (2, 3)), labels(xp, [0, 3]))


def test_compiled_softmax_cross_entropy_checks_labels_at_each_call():
    """A compiled loss checks the labels of every call (the check is a row of the op table)."""
    from polygrad import symbolic as T

    x, t = T.matrix("x"), T.vector("t", dtype="int64")
    f = pg.function([x, t], F.softmax_cross_entropy(x, t))
    assert float(f(np.zeros((2, 3)), np.array([0, 1]))) == pytest.approx(np.log(3.0))
    with pytest.raises(ValueError, match=r"softmax_cross_entropy: labels t must be in \[0, 3\).*got 7"):
        f(np.zeros((2, 3)), np.array([0, 7]))


def test_dask_labels_stay_lazy_and_are_checked_in_debug_mode():
    """On dask the value check would compute the labels: it is skipped (nothing computes), and done in debug mode."""
    da = pytest.importorskip("dask.array")
    backend = pg.get_backend("dask")
    x = pg.Variable(da.zeros((2, 3)))
    t = da.from_array(np.array([0, 5]))
    with backend.forbid_compute():
        loss = F.softmax_cross_entropy(x, t)
    assert type(loss.data).__module__.startswith("dask")
    with pg.debug_mode():
        with pytest.raises(ValueError, match=r"labels t must be in \[0, 3\).*got 5"):
            F.softmax_cross_entropy(x, t)


# ---------------------------------------------------------------------------
# sigmoid_cross_entropy: hard labels (0, 1, -1 ignored) or probabilities
# ---------------------------------------------------------------------------

Z = np.array([[2.0, -1.0, 0.5], [-3.0, 0.0, 1.5]])
P = np.array([[0.7, 0.3, 1.0], [0.0, 0.5, 0.25]])


def test_sigmoid_cross_entropy_of_soft_labels_is_right(xp):
    """Probabilities as labels give mean(softplus(x) - x p) (the findings' example: 0.670, not 1.220)."""
    z = pg.Variable(arr(xp, Z))
    loss = F.sigmoid_cross_entropy(z, arr(xp, P))
    assert_close(loss, np.mean(np.logaddexp(0, Z) - Z * P))
    loss.backward()
    assert_close(z.grad, (1 / (1 + np.exp(-Z)) - P) / Z.size)
    assert_close(F.sigmoid_cross_entropy(arr(xp, [[2.0, -1.0]]), arr(xp, [[0.7, 0.3]])), np.array(0.6700948492805978))


def test_sigmoid_cross_entropy_soft_labels_take_x_dtype(xp):
    """float64 probabilities with float32 scores give a float32 loss."""
    loss = F.sigmoid_cross_entropy(arr(xp, Z, "float32"), arr(xp, P))
    assert loss.dtype == xp.float32


def test_sigmoid_cross_entropy_soft_labels_match_hard_ones(xp):
    """Probabilities 0.0 and 1.0 give the loss of integer labels 0 and 1."""
    hard = np.array([[1, 0, 1], [0, 0, 1]])
    assert_close(F.sigmoid_cross_entropy(arr(xp, Z), arr(xp, hard.astype(float)), reduce="no"),
                 to_np(F.sigmoid_cross_entropy(arr(xp, Z), labels(xp, hard), reduce="no")))


def test_sigmoid_cross_entropy_soft_label_gradients(xp):
    """Gradients in x with soft labels agree with central differences, to second order."""
    from polygrad.testing import check_grads

    p = arr(xp, P)
    check_grads(lambda v: F.sigmoid_cross_entropy(v, p), [arr(xp, Z)], order=2)


@pytest.mark.parametrize("bad", [2, -2])
def test_sigmoid_cross_entropy_refuses_other_integer_labels(xp, bad):
    """Integer labels other than 0, 1 and -1 are refused, with the value."""
    with pytest.raises(ValueError, match=rf"sigmoid_cross_entropy: integer labels t must be 0, 1 or -1.*got {bad}"):
        F.sigmoid_cross_entropy(arr(xp, [[2.0, -1.0]]), labels(xp, [[bad, 0]]))


@pytest.mark.parametrize("bad", [1.5, -1.0, float("nan")])
def test_sigmoid_cross_entropy_refuses_probabilities_outside_0_1(xp, bad):
    """Floating-point labels outside [0, 1] (or NaN) are refused, with the value."""
    with pytest.raises(ValueError, match=r"sigmoid_cross_entropy: floating-point labels t must be probabilities in \[0, 1\]"):
        F.sigmoid_cross_entropy(arr(xp, [[2.0, -1.0]]), arr(xp, [[bad, 0.0]]))


def test_sigmoid_cross_entropy_refuses_bool_labels(xp):
    """Boolean labels are refused naming their dtype."""
    with pytest.raises(ValueError, match="sigmoid_cross_entropy: t must be an array of integers or floating-point"):
        F.sigmoid_cross_entropy(arr(xp, [[2.0, -1.0]]), xp.asarray([[True, False]]))


# ---------------------------------------------------------------------------
# embed_id, mean_squared_error, huber_loss
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [-1, 3])
def test_embed_id_refuses_ids_out_of_range(xp, bad):
    """A negative id (which would pick a row from the end) or one past V is a ValueError naming embed_id."""
    W = pg.Variable(arr(xp, np.ones((3, 2))))
    with pytest.raises(ValueError, match=rf"embed_id: ids x must be in \[0, 3\), got {bad}"):
        F.embed_id(labels(xp, [0, bad]), W)


def test_embed_id_ignore_label_is_not_refused(xp):
    """An id equal to ignore_label gives a zero row."""
    W = pg.Variable(arr(xp, np.ones((3, 2))))
    assert_close(F.embed_id(labels(xp, [2, -1]), W, ignore_label=-1), np.array([[1.0, 1.0], [0.0, 0.0]]))


def test_mean_squared_error_refuses_shapes_that_would_broadcast(xp):
    """(4, 1) against (4,) would average 16 pairs: refused naming both shapes, as in Chainer."""
    with pytest.raises(ValueError, match=r"mean_squared_error: x0 and x1 must have the same shape, got x0 \(4, 1\) and x1 \(4,\)"):
        F.mean_squared_error(pg.Variable(arr(xp, np.ones((4, 1)))), arr(xp, np.ones(4)))


def test_huber_loss_refuses_different_shapes_and_nonpositive_delta(xp):
    """huber_loss needs x and t of one shape and delta > 0."""
    x = pg.Variable(arr(xp, np.ones((4, 2))))
    with pytest.raises(ValueError, match=r"huber_loss: x and t must have the same shape, got x \(4, 2\) and t \(2,\)"):
        F.huber_loss(x, arr(xp, np.ones(2)), 1.0)
    with pytest.raises(ValueError, match="huber_loss: delta must be positive, got 0"):
        F.huber_loss(x, arr(xp, np.ones((4, 2))), 0)


# ---------------------------------------------------------------------------
# Narrow integer labels and ids: positions past their dtype's range never wrap around
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_embed_id_with_narrow_ids_reads_every_column(dtype):
    """ids of uint8 or int8 beside a W of 300 columns: every column of the row, as with int64 ids
    (an arange of the columns in the ids' dtype wrapped past 255 or 127: silently wrong rows)."""
    W = np.arange(4 * 300, dtype=np.float64).reshape(4, 300)
    ids = np.array([[1, 3], [0, 2]], dtype=dtype)
    y = F.embed_id(ids, pg.Variable(W))
    assert np.array_equal(to_np(y), W[ids.astype(np.int64)])


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_softmax_cross_entropy_with_narrow_labels_over_many_classes(dtype):
    """Labels of uint8 or int8 over 300 classes: the same loss and gradient as int64 labels (each
    label marks one class, not also the class 256 places further)."""
    x = np.random.default_rng(0).standard_normal((3, 300))
    t = np.array([1, 44, 0], dtype=dtype)
    losses, grads = [], []
    for labels in (t, t.astype(np.int64)):
        v = pg.Variable(x)
        loss = F.softmax_cross_entropy(v, labels)
        loss.backward()
        losses.append(float(to_np(loss)))
        grads.append(to_np(v.grad))
    assert losses[0] == losses[1]
    assert np.array_equal(grads[0], grads[1])


@pytest.mark.parametrize("n, widened", [(128, False), (129, True)])
def test_positions_leave_a_narrow_dtype_exactly_where_it_ends(n, widened):
    """ops._dtypes.positions: arange(n) stays int8 up to 128 positions, in the index dtype from 129."""
    from polygrad.ops._dtypes import index_dtype, positions

    xp = pg.get_backend("numpy").xp
    p = positions(xp, n, xp.int8)
    assert p.dtype == (index_dtype(xp) if widened else xp.int8)
    assert to_np(p).tolist() == list(range(n))


def test_categorical_log_prob_of_narrow_values_over_many_classes():
    """Categorical.log_prob of uint8 values over 300 categories picks one category each."""
    from polygrad.distributions import Categorical

    probs = np.random.default_rng(1).dirichlet(np.ones(300), size=2)
    values = np.array([1, 7], dtype=np.uint8)
    got = to_np(Categorical(pg.Variable(probs)).log_prob(values))
    assert np.allclose(got, np.log(probs[[0, 1], values.astype(np.int64)]))


def test_labels_and_ids_written_after_forward_leave_backward_alone():
    """A data loader that reuses its label and id buffers may refill them before backward: the
    gradients of softmax_cross_entropy and embed_id are those of the values at the call."""
    x0 = np.random.default_rng(2).standard_normal((3, 4))
    W0 = np.random.default_rng(3).standard_normal((5, 2))

    def grads(refill):
        t, ids = np.array([0, 3, 1]), np.array([4, 0, 4])
        x, W = pg.Variable(x0), pg.Variable(W0)
        loss = F.softmax_cross_entropy(x, t) + pg.sum(F.embed_id(ids, W) ** 2)
        if refill:
            t[:] = [2, 2, 2]
            ids[:] = [1, 1, 1]
        loss.backward()
        return to_np(x.grad), to_np(W.grad)

    for a, b in zip(grads(False), grads(True)):
        assert np.array_equal(a, b)


# ---------------------------------------------------------------------------
# Real-number hyperparameters (slope, alpha, delta, bounds, ratio, eps, decay):
# a NumPy scalar is read as a Python number, so it never promotes a float32
# input (np.float64(0.2) from np.linspace made F.leaky_relu's result float64)
# ---------------------------------------------------------------------------

import polygrad.links as L  # noqa: E402


def _bn_args(xp):
    return arr(xp, [1.0, 1.0, 1.0], "float32"), arr(xp, [0.0, 0.0, 0.0], "float32")


HYPERPARAMETERS = {
    "leaky_relu slope": lambda xp, x, h: F.leaky_relu(x, h(0.2)),
    "elu alpha": lambda xp, x, h: F.elu(x, h(1.5)),
    "clip x_min x_max": lambda xp, x, h: F.clip(x, h(-0.5), h(0.5)),
    "clip x_min": lambda xp, x, h: F.clip(x, h(-0.5), None),
    "huber_loss delta": lambda xp, x, h: F.huber_loss(x, x * 0.5, h(1.0)),
    "dropout ratio": lambda xp, x, h: F.dropout(x, h(0.5)),
    "batch_normalization eps": lambda xp, x, h: F.batch_normalization(x, *_bn_args(xp), eps=h(2e-5)),
    "fixed_batch_normalization eps": lambda xp, x, h: F.fixed_batch_normalization(
        x, *_bn_args(xp), arr(xp, [0.0, 0.0, 0.0], "float32"), arr(xp, [1.0, 1.0, 1.0], "float32"), eps=h(2e-5)),
    "layer_normalization eps": lambda xp, x, h: F.layer_normalization(x, *_bn_args(xp), eps=h(1e-5)),
    "BatchNormalization eps": lambda xp, x, h: L.BatchNormalization(3, eps=h(2e-5))(x),
    "BatchNormalization eps (test mode)": lambda xp, x, h: _in_test_mode(L.BatchNormalization(3, eps=h(2e-5)), x),
    "LayerNormalization eps": lambda xp, x, h: L.LayerNormalization(3, eps=h(1e-5))(x),
}


def _in_test_mode(link, x):
    with pg.test_mode():
        return link(x)


@pytest.mark.parametrize("case", list(HYPERPARAMETERS))
@pytest.mark.parametrize("scalar", ["float64", "float32", "int64"])
def test_a_numpy_scalar_hyperparameter_keeps_float32(xp, case, scalar):
    """float32 in, float32 out and float32 gradient, with the hyperparameter a NumPy scalar
    (np.float64 made leaky_relu, elu, clip, huber_loss and the normalizations float64)."""
    h = (lambda v: np.int64(round(v)) if round(v) == v else np.float64(v)) if scalar == "int64" else getattr(np, scalar)
    x = pg.Variable(arr(xp, [[-1.0, 0.25, 2.0], [0.5, -0.3, 1.0]], "float32"))
    y = HYPERPARAMETERS[case](xp, x, h)
    assert y.dtype == xp.float32, case
    pg.sum(y * y).backward()
    assert x.grad.dtype == xp.float32, case
    want = HYPERPARAMETERS[case](xp, x, lambda v: float(h(v)))
    if "dropout" not in case:
        np.testing.assert_array_equal(to_np(y), to_np(want))


def test_clip_keeps_an_integer_inputs_dtype_with_numpy_bounds(xp):
    """F.clip of int32 with np.int64 bounds stays int32, as pg.clip (the standard's clip) does."""
    x = arr(xp, [-3, 0, 5], "int32")
    y = F.clip(x, np.int64(-1), np.int64(2))
    assert y.dtype == xp.int32
    np.testing.assert_array_equal(to_np(y), [-1, 0, 2])


REFUSALS = {
    "leaky_relu: slope": lambda xp, x, v: F.leaky_relu(x, v),
    "elu: alpha": lambda xp, x, v: F.elu(x, v),
    "clip: x_min": lambda xp, x, v: F.clip(x, v, None),
    "clip: x_max": lambda xp, x, v: F.clip(x, -1.0, v),
    "huber_loss: delta": lambda xp, x, v: F.huber_loss(x, x, v),
    "dropout: ratio": lambda xp, x, v: F.dropout(x, v),
    "batch_normalization: eps": lambda xp, x, v: F.batch_normalization(x, *_bn_args(xp), eps=v),
    "batch_normalization: decay": lambda xp, x, v: F.batch_normalization(x, *_bn_args(xp), decay=v),
    "layer_normalization: eps": lambda xp, x, v: F.layer_normalization(x, *_bn_args(xp), eps=v),
    "BatchNormalization: eps": lambda xp, x, v: L.BatchNormalization(3, eps=v),
    "BatchNormalization: decay": lambda xp, x, v: L.BatchNormalization(3, decay=v),
    "LayerNormalization: eps": lambda xp, x, v: L.LayerNormalization(3, eps=v),
}


@pytest.mark.parametrize("case", list(REFUSALS))
@pytest.mark.parametrize("bad", ["array", "str", "bool"])
def test_a_hyperparameter_that_is_not_a_number_is_refused(xp, case, bad):
    """A 0-d array, a string or a bool where a real number is required is a TypeError naming the function
    and the argument (a 0-d array decay was folded into the running averages; a string gave numpy's error)."""
    value = {"array": arr(xp, 0.5, "float32"), "str": "0.5", "bool": True}[bad]
    x = pg.Variable(arr(xp, [[-1.0, 0.25, 2.0], [0.5, -0.3, 1.0]], "float32"))
    fname, arg = case.split(": ")
    with pytest.raises(TypeError, match=rf"\.{fname}: {arg} must be a real number \(a Python or NumPy scalar\), got"):
        REFUSALS[case](xp, x, value)

"""Adversarial: lazy-backend faults. A failing chunk surfaces at the step that
computes it, and leaves the model as it was (finding C1)."""

from __future__ import annotations

import numpy as np
import pytest

import polygrad as pg
import polygrad.functions as F
import polygrad.links as L

da = pytest.importorskip("dask.array")


def _flaky(block, block_info=None):
    if block_info[0]["chunk-location"][0] == 3:
        raise ValueError("chunk 3 is corrupt")
    return block


def _data():
    rng = np.random.default_rng(0)
    X = da.from_array(rng.normal(size=(400, 5)), chunks=(50, 5))
    t = da.from_array(rng.integers(0, 2, 400), chunks=50)
    return X, t


def _bn_model(n_bn=1):
    """Linear, ``n_bn`` BatchNormalization layers and Linear, on dask, float64, seeded."""
    with pg.using_backend("dask"):
        pg.seed(0)
        return pg.Sequential(L.Linear(5, 4, dtype="float64"),
                             *[L.BatchNormalization(4, dtype="float64") for _ in range(n_bn)],
                             L.Linear(4, 2, dtype="float64"))


def _load_statistics_of_five(model):
    """Load into ``model`` (by save_npz and load_npz) a model whose first running mean is 5."""
    import io

    source = _bn_model()
    source[1].avg_mean = source[1].avg_mean + 5.0
    buf = io.BytesIO()
    pg.serializers.save_npz(buf, source)
    buf.seek(0)
    pg.serializers.load_npz(buf, model)


def _trained_in_chainer_form(steps):
    """``(X, model, opt, step)``: a BN model trained ``steps`` good steps with SGD in Chainer's form."""
    X, t = _data()
    model = _bn_model()
    opt = pg.optimizers.SGD(lr=0.1).setup(model)
    step = _chainer_step(model, opt.update, t)
    for _ in range(steps):
        step(X)
    return X, model, opt, step


def _chainer_step(model, update, t):
    """Chainer's form of a step: the forward and backward, then ``update()`` (a function of x)."""
    def step(x):
        model.cleargrads()
        F.softmax_cross_entropy(model(x), t).backward()
        update()

    return step


def test_failing_chunk_during_update_raises_and_leaves_parameters_usable():
    """An update whose loss reads a failing chunk raises at update time; the weights keep
    their values, t does not advance, and the next good update works."""
    X, t = _data()
    with pg.using_backend("dask"):
        pg.seed(0)
        model = L.Linear(5, 2, dtype="float64")
    opt = pg.optimizers.SGD(lr=0.1).setup(model)
    opt.update(lambda: F.softmax_cross_entropy(model(X), t))
    before = pg.compute(model.W)[0].copy()
    with pytest.raises(ValueError, match="chunk 3 is corrupt"):
        opt.update(lambda: F.softmax_cross_entropy(model(X.map_blocks(_flaky, dtype=float)), t))
    assert opt.t == 1
    np.testing.assert_array_equal(pg.compute(model.W)[0], before)
    opt.update(lambda: F.softmax_cross_entropy(model(X), t))
    assert opt.t == 2
    assert np.all(np.isfinite(pg.compute(model.W)[0]))


@pytest.mark.distributed
def test_failing_chunk_during_update_raises_at_update_time_on_a_cluster():
    """Under dask.distributed (persist returns futures at once) a failing chunk still raises in the
    update, which changes nothing; t does not advance (C1: the update used to return normally)."""
    import logging

    distributed = pytest.importorskip("distributed")
    X, t = _data()
    with distributed.LocalCluster(processes=False, n_workers=1, threads_per_worker=2, dashboard_address=None,
                                  silence_logs=logging.CRITICAL) as cluster, distributed.Client(cluster):
        with pg.using_backend("dask"):
            pg.seed(0)
            model = L.Linear(5, 2, dtype="float64")
        opt = pg.optimizers.SGD(lr=0.1).setup(model)
        opt.update(lambda: F.softmax_cross_entropy(model(X), t))
        before = pg.compute(model.W)[0].copy()
        with pytest.raises(ValueError, match="chunk 3 is corrupt"):
            opt.update(lambda: F.softmax_cross_entropy(model(X.map_blocks(_flaky, dtype=float)), t))
        assert opt.t == 1
        np.testing.assert_array_equal(pg.compute(model.W)[0], before)
        opt.update(lambda: F.softmax_cross_entropy(model(X), t))
        assert opt.t == 2


def test_failing_chunk_leaves_batch_normalization_statistics_as_they_were():
    """The forward rebinds BatchNormalization's running statistics to graphs that read the
    batch; a failing update put parameters, state and t back but kept the new statistics, so
    every later update and test-mode forward raised the old chunk's error. They are restored."""
    X, t = _data()
    model = _bn_model()
    bn = model[1]
    opt = pg.optimizers.SGD(lr=0.1).setup(model)
    opt.update(lambda: F.softmax_cross_entropy(model(X), t))
    mean, var = (pg.compute(a)[0].copy() for a in (bn.avg_mean, bn.avg_var))
    with pytest.raises(ValueError, match="chunk 3 is corrupt"):
        opt.update(lambda: F.softmax_cross_entropy(model(X.map_blocks(_flaky, dtype=float)), t))
    np.testing.assert_array_equal(pg.compute(bn.avg_mean)[0], mean)
    np.testing.assert_array_equal(pg.compute(bn.avg_var)[0], var)
    opt.update(lambda: F.softmax_cross_entropy(model(X), t))
    assert opt.t == 2
    with pg.test_mode():
        assert np.all(np.isfinite(pg.compute(model(X))[0]))


def test_an_update_whose_loss_raises_leaves_the_running_statistics_on_any_backend():
    """update(lossfun) is one step, all or nothing: a loss that raises after the forward (here a
    label out of range) leaves BatchNormalization's statistics as they were, on numpy too."""
    pg.seed(0)
    model = pg.Sequential(L.Linear(5, 4, dtype="float64"), L.BatchNormalization(4, dtype="float64"))
    opt = pg.optimizers.SGD(lr=0.1).setup(model)
    x = np.random.default_rng(0).normal(size=(8, 5))
    mean = np.asarray(model[1].avg_mean).copy()
    with pytest.raises(ValueError):
        opt.update(lambda: F.softmax_cross_entropy(model(x), np.full(8, 7)))
    np.testing.assert_array_equal(model[1].avg_mean, mean)


def _raises_when_computed(make, match):
    """``make()`` builds lazily (nothing computed); computing its result raises ``match``."""
    with pg.get_backend("dask").forbid_compute():
        out = make()
    with pytest.raises(ValueError, match=match):
        pg.compute(out)


def test_bad_labels_raise_where_the_loss_is_computed():
    """Outside debug mode dask's labels were not checked: softmax_cross_entropy of labels
    [0, 5] over 3 classes gave log(3) / 2, a finite wrong loss (the docs promise "never a
    silently wrong loss"). Each check now runs on the chunks as they are computed."""
    Categorical, Bernoulli = pg.distributions.Categorical, pg.distributions.Bernoulli
    x = pg.Variable(da.zeros((2, 3)))
    ints = lambda *v: da.from_array(np.array(v))  # noqa: E731
    _raises_when_computed(lambda: F.softmax_cross_entropy(x, ints(0, 5)), r"labels t must be in \[0, 3\)")
    _raises_when_computed(lambda: F.embed_id(ints(1, 7), pg.Variable(da.ones((4, 2)))), r"ids x must be in \[0, 4\)")
    _raises_when_computed(lambda: F.sigmoid_cross_entropy(x, ints(0, 1, 3) * np.ones((2, 1), dtype=int)),
                          "integer labels t must be 0, 1 or -1")
    _raises_when_computed(lambda: F.sigmoid_cross_entropy(x, da.from_array(np.full((2, 3), 1.5))),
                          r"probabilities in \[0, 1\]")
    p = pg.Variable(da.from_array(np.full((2, 2), 0.5)))
    _raises_when_computed(lambda: Categorical(p).log_prob(ints(0, 4)), r"an index in \[0, 2\)")
    _raises_when_computed(lambda: Bernoulli(p).log_prob(da.from_array(np.full((2, 2), 0.5))), "must be 0 or 1")
    loss = F.softmax_cross_entropy(x, ints(0, 2))  # good labels: the loss, and its gradient
    loss.backward()
    np.testing.assert_allclose(pg.compute(loss)[0], np.log(3))
    np.testing.assert_allclose(pg.compute(x.grad)[0], (np.full((2, 3), 1 / 3) - np.eye(3)[[0, 2]]) / 2)


def test_a_repeated_index_in_setitem_raises_where_the_gradient_is_computed():
    """With a repeated index dask kept the mean of the values (now the last write, as numpy),
    and backward outside debug mode gave v.grad = [6, 6] (no semantics fits). The values'
    gradient now raises when it is computed; x's gradient and distinct indices are unchanged."""
    with pg.using_backend("dask"):
        x = pg.Variable(pg.asarray([0.0, 0.0, 0.0]))
        v = pg.Variable(pg.asarray([1.0, 5.0]))
        h = x * 1
        h[pg.asarray([0, 0])] = v
        pg.sum(h * h).backward()
        with pytest.raises(ValueError, match="more than once"):
            pg.compute(v.grad)
        np.testing.assert_array_equal(pg.compute(x.grad)[0], [0.0, 0.0, 0.0])
        x, v = pg.Variable(pg.asarray([0.0, 0.0, 0.0])), pg.Variable(pg.asarray([1.0, 5.0]))
        h = x * 1
        h[pg.asarray([0, 2])] = v
        pg.sum(h * h).backward()
        np.testing.assert_array_equal(pg.compute(v.grad)[0], [2.0, 10.0])


def test_item_assignment_by_an_index_array_into_unknown_sizes_says_so():
    """x[idx] = v builds a new array of x's shape on dask: with sizes not computed yet it failed
    inside dask (cannot convert float NaN to integer); now polygrad's message says what to do."""
    with pg.using_backend("dask"):
        x = pg.asarray([1.0, -2.0, 3.0])
        y = x[x > 0]
        with pytest.raises(ValueError, match=r"shape \(nan,\), whose sizes are not computed yet.*compute_chunk_sizes"):
            y[pg.asarray([0, 1])] = pg.asarray([5.0, 6.0])
        z = pg.Variable(pg.asarray(np.arange(6.0).reshape(2, 3)), requires_grad=False)
        with pytest.raises(ValueError, match=r"boolean mask that is not one over x's leading axes.*pg.where"):
            z[:, pg.asarray([True, False, True])] = 1.0  # (cannot convert float NaN to integer)
        h = pg.Variable(pg.asarray([1.0, -2.0, 3.0]), requires_grad=False)
        with pytest.raises(ValueError, match=r"a boolean mask and an array of values \(only one value.*pg.where"):
            h[h > 0] = pg.asarray([7.0, 8.0])  # (the message blamed a mask not over the leading axes)


def test_a_failing_chunk_in_the_chainer_form_leaves_the_statistics_of_the_last_good_update():
    """loss.backward(); opt.update(): the forward ran before the update, so the update had no
    earlier statistics to put back, and a failing chunk poisoned them for good. The optimizer
    keeps those of its last good update and restores them."""
    X, t = _data()
    model = _bn_model()
    bn = model[1]
    opt = pg.optimizers.SGD(lr=0.1).setup(model)
    step = _chainer_step(model, opt.update, t)
    step(X)
    mean = pg.compute(bn.avg_mean)[0].copy()
    with pytest.raises(ValueError, match="chunk 3 is corrupt"):
        step(X.map_blocks(_flaky, dtype=float))
    np.testing.assert_array_equal(pg.compute(bn.avg_mean)[0], mean)
    step(X)
    assert opt.t == 2


def test_a_failing_chunk_after_a_load_keeps_the_loaded_statistics():
    """Statistics loaded between two updates, then a failing chunk in the Chainer form: the
    statistics went back to those of the last good update, silently undoing the load. They go
    back to the value the failing forward replaced, where it computes."""
    X, model, opt, step = _trained_in_chainer_form(1)
    _load_statistics_of_five(model)
    loaded = pg.compute(model[1].avg_mean)[0].copy()
    with pytest.raises(ValueError, match="chunk 3 is corrupt"):
        step(X.map_blocks(_flaky, dtype=float))
    np.testing.assert_array_equal(pg.compute(model[1].avg_mean)[0], loaded)


def test_pg_optim_persists_and_recovers_the_running_statistics_of_model_params():
    """pg.optim.SGD(model.params(), lr) knew only the parameters: on dask the running statistics
    were never persisted (their graph grew by 16 tasks a step, holding every batch) and a failing
    chunk poisoned them for good. model.params() names its link, so the step persists them with
    the parameters and recovers them as pg.optimizers does."""
    X, t = _data()
    model = _bn_model()
    opt = pg.optim.SGD(model.params(), lr=0.1)
    step = _chainer_step(model, opt.step, t)  # (zero_grad is cleargrads here: every gradient exists)
    for _ in range(3):
        step(X)
    assert len(dict(model[1].avg_mean.dask)) == 1
    mean = pg.compute(model[1].avg_mean)[0].copy()
    with pytest.raises(ValueError, match="chunk 3 is corrupt"):
        step(X.map_blocks(_flaky, dtype=float))
    np.testing.assert_array_equal(pg.compute(model[1].avg_mean)[0], mean)
    step(X)


def test_recovery_after_a_failed_update_is_one_pass_and_nothing_after_ctrl_c(monkeypatch):
    """The recovery persisted each running statistic on its own, recomputing the forward once
    per statistic (24 layers: 15 s); it is a pass per kind of candidate, and none after a
    KeyboardInterrupt (which took 8.6 s to reach the user). A pickled link leaves out the values
    kept for it (they held the last batch's graph)."""
    import pickle

    X, t = _data()
    model = _bn_model(n_bn=4)
    opt = pg.optimizers.SGD(lr=0.1).setup(model)
    step = _chainer_step(model, opt.update, t)
    step(X)
    assert "_replaced" not in pickle.loads(pickle.dumps(model[1])).__dict__
    backend = pg.get_backend("dask")
    calls = []
    persist = type(backend).persist
    monkeypatch.setattr(type(backend), "persist", lambda self, arrays: calls.append(len(arrays)) or persist(self, arrays))
    with pytest.raises(ValueError, match="chunk 3 is corrupt"):
        step(X.map_blocks(_flaky, dtype=float))
    # the failed update's; the recovery's: the statistics (which fail), the values they replaced
    assert len(calls) == 3 and calls[1] == calls[2] == 8, calls
    calls.clear()
    monkeypatch.setattr(type(opt), "_materialize", staticmethod(lambda plan, buffers=(): (_ for _ in ()).throw(KeyboardInterrupt)))
    with pytest.raises(KeyboardInterrupt):
        step(X)
    assert calls == []


def test_a_failed_update_keeps_values_that_compute_and_values_of_another_backend():
    """Statistics loaded after two good updates, then an update failing before any forward (a
    pre hook): they went back to the first update's, as the load wrote past the record of
    replaced values. And a numpy running mean set by the user on a dask model was dropped for
    the last good update's by a failing forward. Both stay now."""
    X, model, opt, step = _trained_in_chainer_form(2)
    _load_statistics_of_five(model)

    def fail(optimizer):
        raise RuntimeError("pre hook fails")

    opt.add_hook(fail, name="fail", timing="pre")
    with pytest.raises(RuntimeError, match="pre hook fails"):
        opt.update()
    opt.remove_hook("fail")
    np.testing.assert_array_equal(pg.compute(model[1].avg_mean)[0], np.full(4, 5.0))
    model[1].avg_mean = np.full(4, 7.0)
    with pytest.raises(ValueError, match="chunk 3 is corrupt"):
        step(X.map_blocks(_flaky, dtype=float))
    np.testing.assert_array_equal(model[1].avg_mean, np.full(4, 7.0))


def test_ctrl_c_leaves_loaded_statistics_and_a_refused_nan_update_restores_finite_ones():
    """After a KeyboardInterrupt the recovery sent every statistic back to the last good
    update's, undoing a load (the snapshot an `except KeyboardInterrupt: save` writes held
    reset statistics); nothing is recovered after one now. And a pre hook refusing a NaN
    gradient left the statistics of that batch, NaN for good: statistics that are not finite
    count as failing."""
    X, model, opt, step = _trained_in_chainer_form(1)
    _load_statistics_of_five(model)

    def interrupt(optimizer):
        raise KeyboardInterrupt

    opt.add_hook(interrupt, name="interrupt", timing="pre")
    with pytest.raises(KeyboardInterrupt):
        opt.update()
    opt.remove_hook("interrupt")
    np.testing.assert_array_equal(pg.compute(model[1].avg_mean)[0], np.full(4, 5.0))
    good = pg.compute(model[1].avg_mean)[0].copy()

    def refuse_nan(optimizer):
        for p in optimizer.target.params():
            if not bool(np.all(np.isfinite(pg.compute(p.grad)[0]))):
                raise ValueError("NaN gradient: update refused")

    opt.add_hook(refuse_nan, name="refuse_nan", timing="pre")
    with pytest.raises(ValueError, match="update refused"):
        step(X * np.nan)
    np.testing.assert_array_equal(pg.compute(model[1].avg_mean)[0], good)


@pytest.mark.parametrize("key", [True, 1.0, np.float64(1), np.bool_(True), np.float32(1), "a", np.array([0.5]),
                                 [0.0, 1.0], slice(0.0, 2.0), slice(None, None, 2.0)],
                         ids=["bool", "float", "np_float64", "np_bool", "np_float32", "str", "float_array",
                              "float_list", "float_bounds", "float_step"])
def test_a_bool_or_float_scalar_index_is_refused(key):
    """dask reads True as 1 and 1.0 as 1: h[True] gave h[1] (numpy's is h[None]), h[1.0] and
    g[1.0] = 7 were taken (numpy refuses floats); a string or a float index array failed inside
    dask (KeyError, AttributeError). Refused, and the write leaves g as it was."""
    with pg.using_backend("dask"):
        h = pg.Variable(pg.asarray([1.0, 2.0, 3.0]))
        key = pg.asarray(key) if isinstance(key, np.ndarray) else key
        with pytest.raises(IndexError, match="is not an index"):
            h[key]
        g = h * 1.0
        with pytest.raises(IndexError, match="is not an index"):
            g[key] = 7.0
        assert g.version == 0
        np.testing.assert_array_equal(pg.compute(g)[0], [1.0, 2.0, 3.0])


def test_a_python_number_that_does_not_fit_the_dtype_is_refused_at_the_write():
    """g[0] = 1 + 2j kept the real part on dask (numpy: TypeError); i[0] = 2**70 was taken and
    failed at compute, after the version had moved. Both refused at the write, as numpy's."""
    with pg.using_backend("dask"):
        g = pg.Variable(pg.asarray([1.0, 2.0, 3.0])) * 1.0
        with pytest.raises(TypeError, match="imaginary part would be lost"):
            g[0] = 1 + 2j
        i = pg.Variable(pg.asarray([1, 2, 3]), requires_grad=False)
        with pytest.raises(OverflowError, match=r"out of the range of dtype int64"):
            i[0] = 2**70
        assert (g.version, i.version) == (0, 0)
        i[0] = 2**62
        np.testing.assert_array_equal(pg.compute(i)[0], [2**62, 2, 3])


@pytest.mark.parametrize("call", [
    lambda d: pg.flip(d, axis=(0, 0)), lambda d: pg.squeeze(pg.reshape(d, (1, 6)), axis=(0, 0)),
    lambda d: pg.sum(d, axis=(0, -2)), lambda d: pg.mean(d, axis=[1, 1]), lambda d: pg.max(d, axis=(0, 0)),
    lambda d: pg.prod(d, axis=(1, 1)), lambda d: pg.var(d, axis=(0, 0)), lambda d: pg.all(d, axis=(1, 1)),
    lambda d: pg.count_nonzero(d, axis=(0, 0)), lambda d: pg.linalg.vector_norm(d, axis=(0, 0)),
    lambda d: F.logsumexp(d, axis=(0, 0)),
], ids=["flip", "squeeze", "sum", "mean", "max", "prod", "var", "all", "count_nonzero", "vector_norm", "logsumexp"])
def test_a_repeated_axis_is_refused_at_the_call(call):
    """dask flipped axis=(0, 0) once (numpy refuses) and its reductions failed only when computed:
    one check at the call, on every backend."""
    for name in ("numpy", "dask"):
        with pg.using_backend(name):
            d = pg.Variable(pg.asarray(np.arange(6.0).reshape(2, 3)))
            with pytest.raises(ValueError, match="repeat an axis"):
                call(d)


def test_matmul_of_sizes_that_do_not_match_names_them():
    """dask's own message was "Chunks do not add up to shape"."""
    with pg.using_backend("dask"):
        x, w = pg.Variable(pg.asarray(np.ones((2, 3)))), pg.Variable(pg.asarray(np.ones((4, 2))))
        with pytest.raises(ValueError, match=r"x1's last axis has 3 elements \(shape \(2, 3\)\), x2's second-to-last axis 4"):
            x @ w
        a, b = pg.Variable(pg.asarray(np.ones((5, 2, 3)))), pg.Variable(pg.asarray(np.ones((4, 3, 4))))
        with pytest.raises(ValueError, match=r"the batch shapes \(5,\) and \(4,\) .* do not broadcast"):
            a @ b


def test_a_lazy_backend_that_cannot_check_values_says_so_once(monkeypatch):
    """A lazy plugin written before polygrad_check_lazily: bad labels gave a wrong loss with no
    word (training.md promises an error). A RuntimeWarning names the backend, once."""
    from polygrad.core import dispatch

    backend = pg.get_backend("dask")
    monkeypatch.setattr(backend, "check_lazily", lambda array, check: None)
    monkeypatch.setattr(dispatch, "_UNCHECKED", set())
    with pg.using_backend("dask"):
        x = pg.Variable(pg.asarray(np.zeros((2, 3))))
        t = pg.asarray(np.array([0, 5]))
        with pytest.warns(RuntimeWarning, match="lazy backend 'dask' cannot check values.*debug mode"):
            F.softmax_cross_entropy(x, t)
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("error")
            F.softmax_cross_entropy(x, t)  # once


@pytest.mark.parametrize("call", [
    lambda d: pg.take(d, pg.asarray(np.array([0])), axis=2), lambda d: pg.take(d, pg.asarray(np.array([0])), axis=-3),
    lambda d: pg.take_along_axis(d, pg.asarray(np.zeros((2, 1), dtype=np.int64)), axis=5),
    lambda d: pg.sort(d, axis=3), lambda d: pg.argsort(d, axis=-4),
], ids=["take", "take_negative", "take_along_axis", "sort", "argsort"])
def test_an_axis_out_of_range_is_refused_at_the_call(call):
    """dask's take wrapped axis=2 of a 2-D array around to axis 0 (and -3 to axis 1),
    take_along_axis took axis=5 as axis 1: wrong values; sort failed with 'tuple index out of
    range'. numpy refuses each."""
    for name in ("numpy", "dask"):
        with pg.using_backend(name):
            d = pg.Variable(pg.asarray(np.arange(6.0).reshape(2, 3)))
            with pytest.raises(ValueError, match="is out of bounds for an array of 2 dimensions"):
                call(d)


class _SignSGD(pg.optimizers.GradientMethod):  # docs/training.md's rule in Chainer's update_one form
    state_names = ("steps",)

    def __init__(self, lr=0.01):
        self.lr = lr

    def update_one(self, param, state):
        state["steps"] = state["steps"] + 1
        param.data = param.data - self.lr * param.xp.sign(param.grad)


@pytest.mark.parametrize("form", ["lossfun", "chainer"])
def test_a_failing_chunk_leaves_an_update_one_rule_all_or_nothing(form):
    """A rule in Chainer's update_one form on dask, fed a failing chunk: t had moved, and every
    parameter, its state and the running statistics kept graphs that read the chunk, so each
    read of the weights and every later good update raised its error (the model was lost).
    Everything is as it was now, and the next good update steps once from there."""
    X, t = _data()
    model = _bn_model()
    opt = _SignSGD(lr=0.1).setup(model)
    if form == "lossfun":
        step = lambda x: opt.update(lambda: F.softmax_cross_entropy(model(x), t))  # noqa: E731
    else:
        step = _chainer_step(model, opt.update, t)
    step(X)
    params = [p for _, p in model.namedparams()]
    values = lambda: [np.array(a) for a in pg.compute(  # noqa: E731
        *params, *(opt._state_of(p)["steps"] for p in params), model[1].avg_mean, model[1].avg_var)]
    before, versions = values(), [p.version for p in params]
    with pytest.raises(ValueError, match="chunk 3 is corrupt") as info:
        step(X.map_blocks(_flaky, dtype=float))
    assert not any("half applied" in n for n in getattr(info.value, "__notes__", ()))
    assert opt.t == 1 and [opt._state_of(p)["t"] for p in params] == [1] * len(params)
    assert [p.version for p in params] == versions
    for got, want in zip(values(), before):
        np.testing.assert_array_equal(got, want)
    step(X)
    assert opt.t == 2 and [opt._state_of(p)["t"] for p in params] == [2] * len(params)
    steps = pg.compute(*(opt._state_of(p)["steps"] for p in params))
    assert all(np.all(s == 2) for s in steps)
    assert len(dict(model[0].W.data.dask)) == 1 and len(dict(model[1].avg_mean.dask)) == 1

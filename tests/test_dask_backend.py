"""The dask backend (plugins/polygrad-dask): lazy graphs for forward and
backward, one compute for loss and gradients, chunk types kept, workers of a
dask.distributed cluster computing the same gradients as numpy.

Deselect the cluster test with ``-k "not distributed"``.
"""

from __future__ import annotations

import logging
import os
import pickle

import numpy as np
import pytest

import polygrad as pg
import polygrad.functions as F

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")
if "dask" not in pg.backends():
    pytest.skip("the polygrad-dask plugin is not installed", allow_module_level=True)

from dask.callbacks import Callback  # noqa: E402

from polygrad_dask import UnknownShapeError  # noqa: E402

RNG = np.random.default_rng(0)
DATA = {
    "x": RNG.normal(size=(12, 6)),
    "w1": RNG.normal(size=(5, 6)),
    "b1": RNG.normal(size=(5,)),
    "w2": RNG.normal(size=(3, 5)),
}
LABELS = RNG.integers(0, 3, size=12)
IDX = np.array([0, 2, 0, 0, 11])
# Several chunks on every axis, some uneven, consistent where axes meet in a matmul.
CHUNKS = {"x": (4, 3), "w1": (2, 3), "b1": 2, "w2": (2, 2)}
NAMES = ["x", "w1", "b1", "w2"]


def _loss(x, w1, b1, w2, t, idx):
    """An MLP-ish loss touching matmul, broadcasting, relu, softmax cross entropy,
    repeated-index gathers (scatter-add backward), slicing and a mean."""
    h = F.relu(F.linear(x, w1, b1))
    y = F.linear(h, w2)
    return F.softmax_cross_entropy(y, t) + pg.sum(x[idx] * 0.5) + pg.sum(x[idx, 1]) + pg.mean(pg.tanh(h)[:, 1:3])


def _grads(arrays, t, idx):
    vs = [pg.Variable(a, name=n) for n, a in zip(NAMES, arrays)]
    loss = _loss(*vs, t, idx)
    loss.backward()
    return loss, [v.grad for v in vs]


def _dask_inputs():
    arrays = [da.from_array(DATA[n], chunks=CHUNKS[n]) for n in NAMES]
    return arrays, da.from_array(LABELS, chunks=4), da.from_array(IDX, chunks=2)


@pytest.fixture(scope="module")
def numpy_result():
    loss, grads = _grads([DATA[n] for n in NAMES], LABELS, IDX)
    return float(loss.data), grads


def _refuse(dsk, keys, **kwargs):
    raise AssertionError(f"a dask graph was computed (keys {keys!r:.120})")


def test_gradients_equal_numpy_backend(numpy_result):
    """With several chunks per axis, loss and gradients equal the numpy backend's."""
    arrays, t, idx = _dask_inputs()
    loss, grads = _grads(arrays, t, idx)
    out = pg.compute(loss, *grads)
    assert np.allclose(out[0], numpy_result[0], rtol=1e-12)
    for name, got, want in zip(NAMES, out[1:], numpy_result[1]):
        assert isinstance(got, np.ndarray)
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12, err_msg=name)


def test_gradients_keep_chunks_and_chunk_type():
    """Each gradient is a dask array with its input's chunk type and, inputs being
    chunked consistently, its input's chunks (indexing backward included)."""
    arrays, t, idx = _dask_inputs()
    _, grads = _grads(arrays, t, idx)
    for name, a, g in zip(NAMES, arrays, grads):
        assert isinstance(g, da.Array), name
        assert g.chunks == a.chunks, (name, g.chunks, a.chunks)
        assert type(g._meta) is type(a._meta)


@pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning")  # numpy.ma fill values
def test_masked_chunk_type_survives_backward():
    """Chunks of another type (numpy.ma here, cupy on a GPU) stay that type through backward, scatter-add included."""
    x = pg.Variable(da.ma.masked_array(da.from_array(DATA["x"], chunks=(4, 3))))
    w = pg.Variable(da.ma.masked_array(da.from_array(DATA["w1"][0], chunks=3)))
    idx = da.from_array(IDX, chunks=2)
    (pg.sum(pg.tanh(x) * w) + pg.sum(x[idx] * 2.0) + pg.sum(x[idx, 1])).backward()
    assert type(x.grad._meta) is np.ma.MaskedArray and type(w.grad._meta) is np.ma.MaskedArray
    gx, gw = pg.compute(x.grad, w.grad)
    assert isinstance(gx, np.ma.MaskedArray) and isinstance(gw, np.ma.MaskedArray)


def test_forward_and_backward_compute_nothing():
    """Under a scheduler that refuses every graph, forward, backward and double backward all run."""
    arrays, t, idx = _dask_inputs()
    with dask.config.set(scheduler=_refuse):
        loss, grads = _grads(arrays, t, idx)
        x = pg.Variable(arrays[0])
        (gx,) = pg.grad(pg.sum(pg.exp(x) * x), [x], create_graph=True)
        (ggx,) = pg.grad(pg.sum(gx), [x])
        repr(loss), repr(grads[0])
        with pytest.raises(AssertionError, match="computed"):
            pg.compute(loss)
    assert pg.compute(ggx)[0].shape == DATA["x"].shape


class _Counter(Callback):
    def __init__(self):
        super().__init__()
        self.computes, self.tasks = 0, []

    def _start(self, dsk):
        self.computes += 1

    def _pretask(self, key, dsk, state):
        self.tasks.append(key)


def test_compute_loss_and_grads_in_one_pass():
    """pg.compute(loss, *grads) is one dask compute, and no task runs twice."""
    arrays, t, idx = _dask_inputs()
    loss, grads = _grads(arrays, t, idx)
    with _Counter() as counter:
        pg.compute(loss, *grads)
    assert counter.computes == 1
    assert len(counter.tasks) == len(set(counter.tasks)) > 0


def test_scatter_add_is_lazy_and_sums_repeats():
    """Indexing backward with repeated indices on a chunked array stays lazy and sums repeats."""
    x = pg.Variable(da.from_array(np.zeros((7, 4)), chunks=(3, 2)))
    i = da.from_array(np.array([6, 0, 6, 6, 3]), chunks=2)
    j = np.array([1, 1, 1, 0, 3])
    with dask.config.set(scheduler=_refuse):
        pg.sum(x[i] * 1.0 + 0.0).backward()
        gx1 = x.grad
        x.cleargrad()
        pg.sum(x[i, j]).backward()
        gx2 = x.grad
    g1, g2 = pg.compute(gx1, gx2)
    want1 = np.zeros((7, 4))
    np.add.at(want1, np.array([6, 0, 6, 6, 3]), 1.0)
    want2 = np.zeros((7, 4))
    np.add.at(want2, (np.array([6, 0, 6, 6, 3]), j), 1.0)
    np.testing.assert_array_equal(g1, want1)
    np.testing.assert_array_equal(g2, want2)
    assert gx1.chunks == x.data.chunks


def test_boolean_mask_backward_names_the_op():
    """A size from a boolean mask is unknown to dask: backward raises naming the op, without computing."""
    x = pg.Variable(da.from_array(DATA["b1"], chunks=2))
    with dask.config.set(scheduler=_refuse):
        y = x[x.data > 0]
        loss = pg.sum(y * 2.0)  # forward is fine: dask keeps the size unknown
        with pytest.raises(UnknownShapeError, match=r"sum in backward.*broadcast_to.*\(nan,\)"):
            loss.backward()
        with pytest.raises(UnknownShapeError, match="reshape"):
            pg.reshape(y, (-1, 1))


def test_random_numbers_are_seeded_and_chunked():
    """The generator gives dask arrays, reproducible from the seed, with the requested chunks, on any scheduler."""
    b = pg.get_backend("dask")
    a = b.random_generator(5).normal((6, 4), dtype=np.float32, chunks=(2, 2), mean=1.0, std=2.0)
    c = b.random_generator(5).normal((6, 4), dtype=np.float32, chunks=(2, 2), mean=1.0, std=2.0)
    assert isinstance(a, da.Array) and a.chunks == ((2, 2, 2), (2, 2)) and a.dtype == np.float32
    with dask.config.set(scheduler="synchronous"):
        sync = a.compute()
    np.testing.assert_array_equal(sync, c.compute(scheduler="threads"))
    u = b.random_generator(5).uniform((1000,), dtype=np.float64, low=2.0, high=3.0).compute()
    assert u.min() >= 2.0 and u.max() < 3.0


def test_float16_draws_are_made_in_float32_and_cast_per_chunk():
    """dask's generator draws float32 and float64 only: float16 draws (rng.normal/uniform, F.normal,
    D.Normal of float16 parameters) failed with NumPy's "Unsupported dtype dtype('float16') for
    standard_normal", which named no polygrad function; numpy's plugin draws them in float32."""
    import polygrad.distributions as D

    b = pg.get_backend("dask")
    n = b.random_generator(5).normal((6, 4), dtype=np.float16, chunks=(2, 2), mean=1.0, std=2.0)
    assert isinstance(n, da.Array) and n.chunks == ((2, 2, 2), (2, 2)) and n.dtype == np.float16
    assert n.compute().dtype == np.float16 and np.isfinite(n.compute()).all()
    u = b.random_generator(5).uniform((4000,), dtype=np.float16, low=2.0, high=3.0, chunks=1000).compute()
    assert u.dtype == np.float16 and u.min() >= 2.0 and u.max() < 3.0  # (the host keeps them below high)
    with pg.using_backend("dask"):
        m = pg.asarray(np.zeros(3, dtype=np.float16))
        for sample in (F.normal(m, 1.0).data, D.Normal(m, 1.0).sample()):  # (a Variable's data; an array)
            assert isinstance(sample, da.Array) and sample.dtype == np.float16
            assert sample.compute().dtype == np.float16


def test_persist_keeps_a_dask_array_with_results_in_memory():
    """pg.persist(v) replaces v's graph by its computed chunks (no recomputation later)."""
    v = pg.Variable(da.from_array(DATA["x"], chunks=(4, 3))) * 2.0
    pg.persist(v)
    assert isinstance(v.data, da.Array)
    assert len(v.data.__dask_graph__()) == v.data.npartitions
    np.testing.assert_allclose(pg.compute(v)[0], DATA["x"] * 2.0)


def test_to_backend_round_trip_with_numpy():
    """pg.to_backend moves data dask -> numpy (computing it) and numpy -> dask."""
    a = da.from_array(DATA["x"], chunks=(4, 3))
    n = pg.to_backend(a, "numpy")
    assert isinstance(n, np.ndarray) and np.array_equal(n, DATA["x"])
    back = pg.to_backend(n, "dask")
    assert isinstance(back, da.Array) and np.array_equal(back.compute(), DATA["x"])


def test_leaf_variable_pickles():
    """A leaf Variable of a dask array round-trips through pickle and cloudpickle."""
    cloudpickle = pytest.importorskip("cloudpickle")
    x = pg.Variable(da.from_array(DATA["x"], chunks=(4, 3)), name="x")
    for dumps, loads in ((pickle.dumps, pickle.loads), (cloudpickle.dumps, cloudpickle.loads)):
        y = loads(dumps(x))
        assert y.name == "x" and y.requires_grad and y.backend is pg.get_backend("dask")
        np.testing.assert_array_equal(pg.compute(y)[0], DATA["x"])


def test_graph_pickles_and_backprops_after_loading():
    """A Variable with its graph round-trips through cloudpickle and backward still works."""
    cloudpickle = pytest.importorskip("cloudpickle")
    x = pg.Variable(da.from_array(DATA["x"], chunks=(4, 3)))
    y = cloudpickle.loads(cloudpickle.dumps(pg.sum(pg.exp(x) * x)))
    y.backward()


@pytest.mark.skipif(os.environ.get("POLYGRAD_NO_DISTRIBUTED") == "1", reason="POLYGRAD_NO_DISTRIBUTED=1")
def test_distributed_workers_compute_numpy_gradients(numpy_result):
    """On a LocalCluster of two worker processes, the gradients computed on the workers equal numpy's."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(processes=True, n_workers=2, threads_per_worker=1, dashboard_address=None,
                                  silence_logs=logging.ERROR) as cluster, distributed.Client(cluster) as client:
        arrays, t, idx = _dask_inputs()
        loss, grads = _grads(arrays, t, idx)
        with distributed.get_task_stream(client) as stream:
            out = pg.compute(loss, *grads)
        ran_on = {task["worker"] for task in stream.data}
        assert ran_on and ran_on <= set(client.scheduler_info()["workers"])
        assert os.getpid() not in set(client.run(os.getpid).values())
    assert np.allclose(out[0], numpy_result[0], rtol=1e-12)
    for name, got, want in zip(NAMES, out[1:], numpy_result[1]):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12, err_msg=name)


def test_a_size_dask_has_not_computed_is_unknown():
    """A boolean selection on dask has a NaN length: x.size is None (the standard's unknown), and
    item() says the number of elements is unknown instead of failing to convert NaN."""
    a = da.from_array(np.arange(6.0), chunks=3)
    v = pg.Variable(a[a > 2])
    assert v.size is None
    with pytest.raises(ValueError, match="item\\(\\) needs one element.*an unknown number of elements"):
        v.item()


def test_running_statistics_are_persisted_with_the_parameters():
    """BatchNormalization's running statistics on dask are persisted at each optimizer update,
    with the parameters (in the same pass, for both optimizer forms): their graphs used to grow
    by some 14 tasks a step, holding every earlier batch; the values are the same."""
    import polygrad.links as L

    class SignSGD(pg.optimizers.GradientMethod):  # Chainer's update_one form
        def update_one(self, param, state):
            param.data = param.data - 0.01 * param.xp.sign(param.grad)

    rng = np.random.default_rng(0)
    batches = [rng.standard_normal((8, 4)) for _ in range(12)]
    results = []
    for make_opt in (pg.optimizers.Adam, SignSGD):
        for persisted in (True, False):
            with pg.using_backend("dask"):
                pg.seed(0)
                model = pg.Sequential(L.Linear(4, 3, dtype="float64"), L.BatchNormalization(3, dtype="float64"))
                opt = make_opt().setup(model)
                if not persisted:
                    opt._lazy_buffers = lambda: []  # as before: the statistics left as they are
                for b in batches:
                    x = pg.asarray(da.from_array(b, chunks=4))
                    opt.update(lambda: pg.sum(model(x) ** 2))
                stats = model[1].avg_mean
                results.append((len(dict(stats.__dask_graph__())), np.asarray(stats.compute())))
    for (n_kept, kept), (n_grown, grown) in (results[:2], results[2:]):
        assert n_kept <= 2 < 50 < n_grown
        np.testing.assert_array_equal(kept, grown)


def test_a_lazy_link_loads_onto_dask(tmp_path):
    """Linear(None, 2, backend="dask") (or moved there) loads W from a numpy-made file as a float32
    dask array beside b, and runs on dask (it got a numpy W: 'linear got arrays of two backends')."""
    import polygrad.links as L

    pg.serializers.save_npz(tmp_path / "l.npz", L.Linear(3, 2))
    for lazy in (L.Linear(None, 2, backend="dask"), L.Linear(None, 2).to_backend("dask")):
        pg.serializers.load_npz(tmp_path / "l.npz", lazy)
        assert isinstance(lazy.W.data, da.Array) and lazy.W.dtype == np.float32
        y = lazy(pg.asarray(np.ones((1, 3), dtype="float32"), backend="dask"))
        assert isinstance(y.data, da.Array) and pg.compute(y)[0].shape == (1, 2)


@pytest.mark.parametrize("dtype", ["float32", "complex64", "float64"])
def test_inv_keeps_the_input_dtype(dtype):
    """linalg.inv of a float32 (complex64) dask matrix is float32 (complex64), lazily and computed, as on
    numpy: dask's own inv solves against a float64 identity and gave float64 (complex128)."""
    a = np.array([[2.0, 1.0], [1.0, 3.0]], dtype=dtype)
    x = pg.Variable(pg.asarray(a, backend="dask"))
    y = pg.linalg.inv(x)
    assert y.dtype == np.dtype(dtype) and pg.compute(y)[0].dtype == np.dtype(dtype)
    np.testing.assert_allclose(pg.compute(y)[0], np.linalg.inv(a), rtol=1e-6)
    pg.sum(pg.real(y) if dtype.startswith("complex") else y).backward()
    assert pg.compute(x.grad)[0].dtype == np.dtype(dtype)


def test_indexing_by_a_one_element_dask_array():
    """dask reports x[k] of a 1-D x in one chunk and a one-element dask k with x's length, and
    computes one element: setitem's scatter raised an IndexError, and the shape was wrong."""
    x = pg.Variable(da.from_array(np.arange(5.0)))
    y = x[pg.Variable(da.from_array(np.array([3])), requires_grad=False)]
    assert y.shape == (1,)
    pg.sum(y * 2).backward()
    np.testing.assert_array_equal(pg.compute(x.grad)[0], [0.0, 0.0, 0.0, 2.0, 0.0])
    h = x * 2
    h[da.from_array(np.array([0]))] = 0.0
    np.testing.assert_array_equal(pg.compute(h)[0], [0.0, 2.0, 4.0, 6.0, 8.0])


@pytest.mark.parametrize("chunks", [2, 6])
@pytest.mark.parametrize("axis", [0, 1])
def test_indexing_by_a_one_element_numpy_array(chunks, axis):
    """X[np.array([4])] (a last minibatch of one) raised AttributeError: the fix of one-element
    dask indices above reshaped numpy ones too, as if they had chunks."""
    xn = np.arange(12.0).reshape(6, 2)
    x = pg.Variable(da.from_array(xn, chunks=chunks))
    key = np.array([1]) if axis else np.array([4])
    key = (slice(None), key) if axis else key
    y = x[key]
    assert y.shape == xn[key].shape
    np.testing.assert_array_equal(pg.compute(y)[0], xn[key])
    pg.sum(y * 2).backward()
    expected = np.zeros_like(xn)
    expected[key] = 2.0
    np.testing.assert_array_equal(pg.compute(x.grad)[0], expected)


@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize("key", ["None, idx", "idx, None", "2-D idx, 0, None", "idx, None, idx", "mask, None, 1"])
def test_none_among_index_arrays_indexes_as_numpy(key, lazy):
    """x[None, idx], x[idx, None], ...: dask's own indexing raised an empty AssertionError, or a
    TypeError; numpy reads None as a new axis of length one, which also separates index arrays."""
    xn = np.arange(20.0).reshape(5, 4)
    idx, idx2, rows = np.array([3, 1]), np.array([[1, 2]]), np.array([True, False, True, True, False])
    keys = {"None, idx": (None, idx), "idx, None": (idx, None), "2-D idx, 0, None": (idx2, 0, None),
            "idx, None, idx": (idx, None, np.array([0, 2])), "mask, None, 1": (rows, None, 1)}
    nkey = keys[key]
    dkey = tuple(da.from_array(k, chunks=1) if lazy and isinstance(k, np.ndarray) else k for k in nkey)
    x = pg.Variable(da.from_array(xn, chunks=2))
    y = x[dkey]
    assert y.ndim == xn[nkey].ndim
    np.testing.assert_array_equal(pg.compute(y)[0], xn[nkey])
    if lazy and key.startswith("mask"):
        return  # (a lazy mask's backward needs sizes: docs/dask.md)
    pg.sum(y * 2).backward()
    expected = np.zeros_like(xn)
    np.add.at(expected, nkey, 2.0)
    np.testing.assert_array_equal(pg.compute(x.grad)[0], expected)


@pytest.mark.parametrize("create_graph", [False, True])
def test_repeated_indices_refuse_the_values_gradient_under_create_graph(create_graph):
    """h[idx] = v with idx naming a position twice: v's gradient is refused when computed, also
    under create_graph, where v got every write's gradient ([2, 2, 5], not a ValueError)."""
    x = pg.Variable(da.from_array(np.arange(1.0, 7.0), chunks=2))
    v = pg.Variable(da.from_array(np.array([10.0, 20.0, 30.0]), chunks=2))
    h = x * 1
    h[da.from_array(np.array([1, 1, 4]), chunks=2)] = v
    loss = pg.sum(h * da.from_array(np.arange(1.0, 7.0), chunks=2))
    with pytest.raises(ValueError, match="more than once"):
        _, gv = pg.grad(loss, [x, v], create_graph=create_graph)
        pg.compute(gv)


def _fused_program():
    from polygrad import symbolic as T

    x = T.vector("x")
    f = pg.function([x], pg.exp(x) * 2.0 + 1.0)
    f(da.from_array(np.arange(4.0), chunks=2))
    assert "fused" in f.program_source(), "the group is no longer fused: this test checks nothing"
    return f


@pytest.mark.distributed
@pytest.mark.skipif(os.environ.get("POLYGRAD_NO_DISTRIBUTED") == "1", reason="POLYGRAD_NO_DISTRIBUTED=1")
def test_compiled_functions_with_fused_groups_run_under_a_client():
    """The fused kernel of a compiled group held numexpr's lock, so its task graph did not
    pickle: under any Client (here in-process) a compiled call with a fused group, and one with
    updates, raised "Could not serialize object". Both run, with numpy's numbers."""
    distributed = pytest.importorskip("distributed")
    f = _fused_program()
    w = pg.shared(da.from_array(np.array([0.5, -0.5]), chunks=1), name="w")
    step = pg.function([], [], updates={w: w * 0.5 + 1.0})
    with distributed.LocalCluster(processes=False, n_workers=1, threads_per_worker=2, dashboard_address=None,
                                  silence_logs=logging.ERROR) as cluster, distributed.Client(cluster):
        got = pg.compute(f(da.from_array(np.arange(4.0), chunks=2)))[0]
        step()
        np.testing.assert_allclose(pg.compute(w.get_value())[0], [1.25, 0.75])
    np.testing.assert_allclose(got, np.exp(np.arange(4.0)) * 2 + 1)


def test_augmented_assignment_into_a_slice_of_a_constant_keeps_the_path():
    """`c[0:1] += 3 x0` on a constant c: Python stores the written view back into c, and the
    view had been taken again without a graph, so x.grad was [1, 1] where [19, 1] is right."""
    with pg.using_backend("dask"):
        x = pg.Variable(pg.asarray([1.0, 2.0]))
        c = pg.Variable(pg.asarray([0.0, 0.0]), requires_grad=False)
        c[0:1] += x[0:1] * 3.0
        (pg.sum(c * c) + pg.sum(x)).backward()
        np.testing.assert_allclose(pg.compute(x.grad)[0], [19.0, 1.0])


# ---------------------------------------------------------------------------
# Against the numpy backend (stop 26): lazy index arrays, unknown sizes, masks, 0-d edges
# ---------------------------------------------------------------------------


def test_a_one_element_index_array_on_a_2d_array_has_the_right_shape():
    """x[idx] with idx a dask array holding [0], on an axis in one chunk, was reported with the
    axis' length (4, 6) and computed (1, 6): sum(y) / y.shape[0] gave 3.75 for 15, backward and
    reshape failed. take, x[:, idx] the same."""
    a = np.arange(24.0).reshape(4, 6)
    idx = da.from_array(np.array([0]))
    for key, expect in (((idx,), a[[0]]), ((slice(None), idx), a[:, [0]])):
        x = pg.Variable(da.from_array(a, chunks=(4, 3)))
        y = x[key if len(key) > 1 else key[0]]
        assert y.shape == expect.shape
        (pg.sum(y) / y.shape[0]).backward()
        np.testing.assert_allclose(pg.compute(y)[0], expect)
        want = np.zeros_like(a)
        want[(key[0] if len(key) == 1 else (slice(None), [0]))] = 1.0 / expect.shape[0]
        np.testing.assert_allclose(pg.compute(x.grad)[0], want)
    for axis in (0, 1):
        t = pg.take(pg.Variable(da.from_array(a, chunks=(4, 3))), idx, axis=axis)
        assert t.shape == np.take(a, [0], axis=axis).shape
        np.testing.assert_allclose(pg.compute(t)[0], np.take(a, [0], axis=axis))


@pytest.mark.parametrize("chunks", [1, 2])
def test_an_index_past_the_end_raises_when_computed(chunks):
    """x[[2, 10]] of 8 rows with a dask index gave row 2 twice (and its gradient), or an
    unrelated 'index 0 ... size 0' error; two index arrays and take read row 10 of nothing.
    numpy's IndexError, when the index is computed."""
    a = np.arange(40.0).reshape(8, 5)
    idx = da.from_array(np.array([2, 10]), chunks=chunks)
    x = pg.Variable(da.from_array(a, chunks=(4, 5)))
    for y in (x[idx], pg.take(x, idx, axis=0), x[idx, da.from_array(np.array([0, 1]), chunks=chunks)]):
        with pytest.raises(IndexError, match="index 10 is out of bounds for axis 0 with size 8"):
            pg.compute(y)
    ok = x[da.from_array(np.array([2, -8]), chunks=chunks)]
    np.testing.assert_allclose(pg.compute(ok)[0], a[[2, -8]])


def test_searchsorted_on_unknown_sizes_raises():
    """The sorted array of unknown chunk sizes gave float positions with NaN."""
    s = da.from_array(np.array([0.0, 1.0, 2.0, 3.0]), chunks=2)
    s = s[s > -1]
    with pytest.raises(UnknownShapeError, match="searchsorted"):
        pg.searchsorted(pg.Variable(s, requires_grad=False), pg.Variable(da.from_array(np.array([0.5, 2.5]))))


def test_mask_assignment_on_dask_gives_numpys_values_and_gradients():
    """h[h < 0] = 0 and h[rowmask] = 0 failed on dask (the values' shape is unknown there)."""
    a = np.array([[1.0, -2.0, 3.0], [-4.0, 5.0, -6.0]])
    rows = np.array([True, False])
    for mask_of in (lambda h, b: h < 0, lambda h, b: b.asarray(rows) if b is np else da.from_array(rows)):
        results = []
        for b in (np, da):
            x = pg.Variable(a if b is np else da.from_array(a, chunks=(1, 2)))
            v = pg.Variable(np.asarray(0.5) if b is np else da.from_array(np.asarray(0.5)))
            h = x * 2
            h[mask_of(h, b)] = v
            pg.sum(h * h).backward()
            results.append([pg.compute(t)[0] for t in (h, x.grad, v.grad)])
        for n, d in zip(*results):
            np.testing.assert_allclose(d, n)


def test_backward_through_unknown_sizes_where_nothing_needs_them():
    """vector_norm(ord=3) of an unknown-size input raised 'is (nan,), expected (nan,)'."""
    a = np.array([0.5, -1.0, 2.0, 0.3])
    d = da.from_array(a, chunks=2)
    x = pg.Variable(d[d == d])
    pg.linalg.vector_norm(x, ord=3).backward()
    ref = pg.Variable(a)
    pg.linalg.vector_norm(ref, ord=3).backward()
    np.testing.assert_allclose(pg.compute(x.grad)[0], ref.grad)


def test_new_axes_on_a_0d_array_backward():
    """x[None] of a 0-d dask Variable failed in backward (a write of (1,) into a 0-d array)."""
    x = pg.Variable(da.from_array(np.asarray(2.5)))
    pg.sum(x[None, None] * x).backward()
    assert float(pg.compute(x.grad)[0]) == 5.0


def test_a_compiled_group_with_0d_inputs_runs_on_dask():
    """The fused kernel per block wrote into a 0-d temporary, which NumPy returns as a scalar
    ('out keyword parameter is not an array'): 27 of 236 random programs with a 0-d input."""
    from polygrad import symbolic as T

    a, m = T.tensor("float64", (), "a"), T.tensor("float64", (None, 1), "m")
    cost = pg.sum(pg.tanh(pg.minimum(m, pg.atan2(a, pg.exp(a * 0.3)))))
    fn = pg.function([a, m], [cost] + list(T.grad(cost, [a, m])))
    av, mv = np.asarray(0.4), np.linspace(-1, 1, 6).reshape(6, 1)
    want = fn(av, mv)
    got = fn(da.from_array(av), da.from_array(mv, chunks=(3, 1)))
    for w, g in zip(want, got):
        np.testing.assert_allclose(pg.compute(g)[0], w)


def test_a_numpy_scalar_beside_a_dask_array_is_explained():
    """x / np.sqrt(3) said only 'two backends ... numpy array shape ()': a NumPy scalar is a
    0-d numpy array to polygrad, which the message now says, with what to pass instead."""
    x = pg.Variable(da.ones(3))
    with pytest.raises(TypeError, match=r"a 0-d array \(a NumPy scalar .*pass float\(value\)"):
        x / np.sqrt(3)
    np.testing.assert_allclose(pg.compute(x / float(np.sqrt(3)))[0], np.ones(3) / np.sqrt(3))


def test_a_0d_index_array_backward():
    """x[xp.asarray(1)] (a 0-d integer index array, as the standard allows) failed in backward
    ('cannot reshape array of size 1 into shape (0,)')."""
    v = pg.Variable(da.from_array(np.array([0.5, -1.5, 2.0])))
    (v[da.from_array(np.asarray(1))] * 3.0).backward()
    np.testing.assert_allclose(pg.compute(v.grad)[0], [0.0, 3.0, 0.0])
    x = pg.Variable(da.from_array(np.array([[0.5, -1.5], [2.0, 3.0]]), chunks=1))
    for key in (da.from_array(np.asarray(1)), (slice(None), da.from_array(np.asarray(0)))):
        pg.sum(x[key] * 3.0).backward()
    np.testing.assert_allclose(pg.compute(x.grad)[0], [[3.0, 0.0], [6.0, 3.0]])


def test_in_place_between_arrays_of_unknown_sizes_is_refused():
    """a1 += b1 with sizes 1 and 5, both unknown: dask broadcast it, a1 became 5 long (numpy
    raises); the first fix of '(nan,) is not (nan,)' let it through. Refused, saying why."""
    a = da.from_array(np.arange(5.0), chunks=2)
    a1 = pg.Variable(a[a > 3], requires_grad=False)
    b1 = pg.Variable(a[a > -1], requires_grad=False)
    with pytest.raises(ValueError, match="cannot check that its shape .* stays the same"):
        a1 += b1


def test_in_place_with_scalars_on_unknown_sizes_works():
    """y *= 2.0 and y += y on a Variable of unknown size were refused ('(nan,) to (nan,)'): only
    an operand that may have another size is refused now."""
    a = da.from_array(np.arange(5.0), chunks=2)
    y = pg.Variable(a[a > 0], requires_grad=False)
    y *= 2.0
    y += y
    np.testing.assert_array_equal(pg.compute(y)[0], [4.0, 8.0, 12.0, 16.0])


def test_a_draw_across_chunks_does_not_repeat_its_chunks():
    """The conformance suite's large draw is one chunk on dask: here a draw of 16 chunks, whose
    chunks must not be the same numbers (a plugin that seeded each chunk alike passed it)."""
    gen = pg.get_backend("dask").random_generator(3)
    for kind in ("normal", "uniform"):
        draw = np.asarray(getattr(gen, kind)((16 * 4096,), dtype=np.float64, chunks=4096))
        blocks = draw.reshape(16, 4096)
        assert len({b.tobytes() for b in blocks}) == 16
        assert len(np.unique(draw)) == draw.size


@pytest.mark.parametrize("shape, key", [
    ((3, 4, 5), (0, slice(None), np.array([1, 2]))),         # numpy: the indexed dimension first, (2, 4)
    ((3, 4, 5), (0, Ellipsis, [1, 2])),
    ((2, 4, 4), (0, slice(None), np.array([1, 0, 1, 2]))),  # square: dask's transposed result had numpy's shape
    ((3, 3, 4, 5), (0, slice(None), np.array([1, 0, 1, 2]))),  # trailing axes implicit: never checked
    ((3, 4, 5), (0, np.array([1, 2]), slice(None))),        # adjacent: in place in both
    ((3, 4, 5), (slice(None), 0, np.array([1, 2]))),
    ((3, 4, 5), (0, None, np.array([1, 2]))),
    ((3, 4, 5), (np.array([1, 2]), None, 1)),
    ((3, 5), (0, Ellipsis, np.array([1, 2]))),              # the Ellipsis covers no axis
    ((3, 5), (np.array([1, 2]), Ellipsis, 1)),
    ((3, 4, 5), (-1, slice(1, None), np.array([4, 0, 2]), None)),
    # index arrays not all on the leading axes: "truth value ... ambiguous", or an error inside dask
    ((3, 4, 5), (np.array([2, 0]), slice(None), np.array([1, 4]))),
    ((3, 4, 5), (slice(None), np.array([[0, 3], [3, 3]]))),
    ((3, 4, 5), (slice(1, None), np.array([[0, 3], [3, 1]]), np.array([1, 4]))),
    ((3, 4, 5), (np.array([2, 0]), slice(None, None, 2), np.array([[1], [4]]))),
])
def test_index_arrays_and_integers_index_in_numpys_order(shape, key):
    """x[0, :, idx]: numpy puts the indexed dimension first where a slice separates it from the
    integer; dask puts it in place. Where the shapes agreed (a square result, or trailing axes left
    implicit) dask's transposed values, gradients and item assignments passed without a word; where
    they differed, the key was refused. Now every such key indexes, differentiates and assigns as
    numpy does."""
    x_np = np.arange(float(np.prod(shape))).reshape(shape)
    want = x_np[key]
    x = pg.Variable(pg.asarray(x_np, backend="dask"))
    y = x[key]
    assert tuple(y.shape) == want.shape
    np.testing.assert_array_equal(np.asarray(pg.compute(y)[0]), want)
    w = np.random.default_rng(0).normal(size=want.shape)
    pg.sum(y * pg.asarray(w, backend="dask")).backward()
    expected = np.zeros(shape)
    np.add.at(expected, key, w)
    np.testing.assert_allclose(np.asarray(pg.compute(x.grad)[0]), expected)
    z = pg.Variable(pg.asarray(np.zeros(shape), backend="dask"), requires_grad=False)
    z[key] = pg.asarray(w, backend="dask")
    ref = np.zeros(shape)
    ref[key] = w
    np.testing.assert_array_equal(np.asarray(pg.compute(z)[0]), ref)


def test_an_integer_out_of_bounds_beside_an_index_array_is_refused():
    x = pg.asarray(np.zeros((3, 4, 5)), backend="dask")
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        x[3, :, np.array([1, 2])]
    lazy = pg.asarray(np.array([1, 2]), backend="dask")  # a lazy index array, as numpy's
    np.testing.assert_array_equal(np.asarray(pg.compute(x[0, :, lazy])[0]).shape, (2, 4))


def test_max_min_and_norms_of_zero_size_arrays_compute_as_numpy():
    """dask's max of a (2, 0, 4) array over axis 0 computed to (1, 0) where it reported (0, 4),
    and the infinity norm of a (0, 3) matrix to [] where it reported a scalar (numpy: 0.0)."""
    x_np = np.zeros((2, 0, 4))
    x = pg.asarray(x_np, backend="dask")
    for fn in (pg.max, pg.min):
        for kw in (dict(axis=0), dict(axis=0, keepdims=True), dict(axis=())):
            (got,) = pg.compute(fn(x, **kw))
            assert np.asarray(got).shape == np.max(x_np, **kw).shape
        with pytest.raises(ValueError, match="zero-size array"):
            pg.compute(fn(x, axis=1))
    m = pg.asarray(np.zeros((0, 3)), backend="dask")
    (norm,) = pg.compute(pg.linalg.matrix_norm(m, ord=float("inf")) * 2 + 1)
    assert np.asarray(norm).shape == () and float(norm) == 1.0
    (v,) = pg.compute(pg.linalg.vector_norm(m, axis=0, ord=float("inf")))
    np.testing.assert_array_equal(v, [0.0, 0.0, 0.0])


def test_negative_of_a_boolean_array_is_refused_clearly():
    """dask's -b of a boolean array returns NotImplemented: polygrad took it for the result ('no
    backend claims NotImplementedType' eager, an AttributeError compiled); now it is the refusal
    numpy gives too, naming the function."""
    from polygrad import symbolic as T

    b = da.from_array(np.array([True, False]))
    with pg.using_backend("dask"):
        with pytest.raises(TypeError, match="negative failed on backend 'dask'"):
            -pg.Variable(b)
        v = T.vector("b", dtype="bool")
        with pytest.raises(TypeError, match="negative"):
            pg.function([v], -v)(b)


def test_an_iterator_resumes_on_dask_without_a_compute_per_example(tmp_path):
    """Its order was loaded onto dask and read into ints one element at a time: a compute per
    example (9 s to resume an iterator over 5000 examples); it is read as the file holds it."""
    from polygrad.iterators import SerialIterator

    with pg.using_backend("dask"):
        it = SerialIterator(list(range(50)), 4)
        next(it)
        pg.serializers.save_npz(tmp_path / "it.npz", it)
        resumed = SerialIterator(list(range(50)), 4)
        with _Counter() as counter:
            pg.serializers.load_npz(tmp_path / "it.npz", resumed)
    assert counter.computes <= 1
    assert resumed._order == it._order and next(resumed) == next(it)


def test_an_empty_batch_with_padding_convolves_and_pools_on_dask():
    """Padding an empty batch asked dask for "auto" chunks of a zero-size shape: ZeroDivisionError."""
    import polygrad.functions as F

    x = pg.Variable(pg.asarray(np.zeros((0, 2, 5, 5)), backend="dask"))
    W = pg.Variable(pg.asarray(np.ones((3, 2, 3, 3)), backend="dask"))
    for y, shape in ((F.convolution_2d(x, W, pad=1), (0, 3, 5, 5)), (F.max_pooling_2d(x, 2, 1, pad=1), (0, 2, 6, 6)),
                     (F.average_pooling_2d(x, 2, 1, pad=1), (0, 2, 6, 6))):
        assert np.asarray(pg.compute(y)[0]).shape == shape
        pg.sum(y).backward()
        assert np.asarray(pg.compute(x.grad)[0]).shape == (0, 2, 5, 5)
        x.cleargrad()


def _unknown_rows(x, keep, chunks):
    """``x[keep]`` on dask: rows of a size dask does not know until it computes ((nan, ...))."""
    return da.from_array(x, chunks=chunks)[da.from_array(keep, chunks=chunks[0])]


def test_batch_normalization_of_a_batch_of_unknown_size_keeps_the_running_variance():
    """L.BatchNormalization trained on x[keep] (shape (nan, 3)) made avg_var [nan nan nan] without a
    word: the output and avg_mean were right, and every test-mode output after it was NaN. The
    count m of m / (m - 1) is taken from the array where its size is not known."""
    import polygrad.links as L

    x = RNG.normal(size=(8, 3)) * 2 + 1
    keep = np.array([1, 1, 0, 1, 1, 0, 1, 1], bool)
    bn = L.BatchNormalization(3, dtype="float64", backend="dask")
    y = bn(_unknown_rows(x, keep, (4, 3)))
    rows = x[keep]
    np.testing.assert_allclose(pg.compute(y)[0], (rows - rows.mean(0)) / np.sqrt(rows.var(0) + 2e-5))
    np.testing.assert_allclose(pg.compute(bn.avg_mean)[0], 0.1 * rows.mean(0))
    np.testing.assert_allclose(pg.compute(bn.avg_var)[0], 0.9 + 0.1 * rows.var(0, ddof=1))
    x4 = RNG.normal(size=(6, 2, 3, 2))  # NCHW: m = 5 rows kept (unknown) * 3 * 2
    bn = L.BatchNormalization(2, dtype="float64", backend="dask")
    bn(_unknown_rows(x4, keep[:6], (3, 2, 3, 2)))
    np.testing.assert_allclose(pg.compute(bn.avg_var)[0], 0.9 + 0.1 * x4[keep[:6]].var((0, 2, 3), ddof=1))


def test_batch_normalization_trains_on_a_batch_of_unknown_size():
    """backward through L.BatchNormalization of x[keep] (shape (nan, 4)) raised "sum_to needs the input
    shape (nan, 4)" (beta's broadcast): summing the batch axis away needs no size, which the target
    shape says; and a size the target keeps as a known one is still refused, naming sum_to."""
    import polygrad.links as L

    x, t = RNG.normal(size=(8, 4)), np.arange(8) % 4
    keep = np.array([1, 1, 0, 0, 1, 0, 1, 1], bool)
    ref, bn = L.BatchNormalization(4, dtype="float64"), L.BatchNormalization(4, dtype="float64", backend="dask")
    F.softmax_cross_entropy(ref(pg.Variable(x[keep], requires_grad=False)), t[keep]).backward()
    h = pg.Variable(_unknown_rows(x, keep, (2, 4)), requires_grad=False)
    F.softmax_cross_entropy(bn(h), da.from_array(t, chunks=2)[da.from_array(keep, chunks=2)]).backward()
    for got, want in zip(pg.compute(bn.gamma.grad, bn.beta.grad), (ref.gamma.grad, ref.beta.grad)):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    from polygrad.ops.manipulation import sum_to

    with pytest.raises(UnknownShapeError, match="sum_to"):
        sum_to(h, (6, 4))


def test_functions_needing_a_size_not_known_yet_say_so():
    """static_shape let dask's nan through as a size (only None was refused): the count of batch
    normalization was nan. Where the size is needed it is refused, naming the function; where it is
    not (split along another axis, a pooling without padding) the function works as before."""
    x = _unknown_rows(RNG.normal(size=(8, 4, 4, 4)), np.array([1, 0, 1, 1, 0, 1, 1, 1], bool), (4, 4, 4, 4))
    with pytest.raises(ValueError, match=r"split_axis needs inputs of known shape, got \(nan, 4, 4, 4\)"):
        F.split_axis(x, 2, 0)
    with pytest.raises(ValueError, match=r"max_pooling_2d needs inputs of known shape"):
        F.max_pooling_2d(x, 3)
    assert pg.compute(F.split_axis(x, 2, 1)[1])[0].shape == (6, 2, 4, 4)
    assert pg.compute(F.average_pooling_2d(x, 2))[0].shape == (6, 4, 2, 2)


def test_the_softmax_family_of_an_empty_batch_computes_on_dask():
    """dask's max along a non-empty axis of a (0, 3) array failed at compute ("zero-size array to
    reduction operation maximum"), so softmax and the loss of an empty batch did; numpy gives them."""
    import polygrad.functions as F

    x = pg.Variable(pg.asarray(np.zeros((0, 3)), backend="dask"))
    t = pg.asarray(np.zeros(0, dtype=np.int64), backend="dask")
    for y, want in ((F.softmax(x), (0, 3)), (F.log_softmax(x), (0, 3)), (F.softmax_cross_entropy(x, t), ())):
        assert np.asarray(pg.compute(y)[0]).shape == want
    pg.sum(F.softmax_cross_entropy(x, t)).backward()
    assert np.asarray(pg.compute(x.grad)[0]).shape == (0, 3)
    (m,) = pg.compute(pg.max(pg.asarray(np.zeros((0, 3)), backend="dask"), axis=1, keepdims=True))
    assert np.asarray(m).shape == (0, 1)


def test_a_compiled_function_of_float16_inputs_runs_on_dask():
    """A float16 symbolic input is a dtype by name, resolved in the values' namespace:
    array_api_compat's dask namespace names only the standard's dtypes, so every compiled
    float16 program failed on dask ("has no attribute 'float16'") while eager ran."""
    import polygrad.symbolic as S

    x = S.vector("x", dtype="float16")
    f = pg.function([x], [pg.sum(x * 2), pg.grad([pg.sum(pg.exp(x))], [x])[0]])
    a = np.array([1, 2], np.float16)
    total, g = f(pg.asarray(a, backend="dask"))
    assert total.dtype == g.dtype == np.float16
    np.testing.assert_array_equal(pg.to_backend(g, "numpy"), np.exp(a))
    assert float(pg.to_backend(total, "numpy")) == 6.0


@pytest.mark.parametrize("fn", [pg.argmax, pg.argmin])
def test_argmax_and_argmin_over_all_axes_give_the_first_flat_index_among_ties(fn):
    """dask kept the first block holding the extreme: with ties at (0, 4) and (1, 0) in blocks of
    (2, 3), argmax gave 5 where numpy gives 4 (the first in flat order)."""
    t = np.zeros((4, 5))
    t[1, 0] = t[0, 4] = 1 if fn is pg.argmax else -1
    x = pg.Variable(da.from_array(t, chunks=(2, 3)))
    with dask.config.set(scheduler=_refuse):
        y, kept = fn(x), fn(x, keepdims=True)
    assert int(pg.compute(y)[0]) == 4
    np.testing.assert_array_equal(pg.compute(kept)[0], [[4]])


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int32"])
def test_integer_and_boolean_products_keep_numpys_dtype_across_chunks(dtype):
    """dask sums the partial products of the blocks of a contracted axis with sum, which widened
    int8 to int64 and uint8 to uint64, and bool to counts: ones(1, 4) @ ones(4, 1) in two blocks
    was [[2]] where numpy gives [[True]]."""
    a = ((np.arange(12).reshape(3, 4) % 3) * (100 if dtype == "int8" else 1)).astype(dtype)  # (int8 wraps)
    b = (np.arange(12).reshape(4, 3) % 2).astype(dtype)
    x, y = pg.Variable(da.from_array(a, chunks=2)), pg.Variable(da.from_array(b, chunks=2))
    for got, want in ((x @ y, a @ b), (pg.tensordot(x, y, axes=1), np.tensordot(a, b, axes=1)),
                      (pg.vecdot(x, pg.matrix_transpose(y)), np.vecdot(a, b.T))):
        assert got.dtype == want.dtype
        (value,) = pg.compute(got)
        assert value.dtype == want.dtype
        np.testing.assert_array_equal(value, want)


def _with_an_empty_block():
    """(numpy rows, dask rows of known chunks ((2, 0, 2), (2, 1)), the same of unknown chunks)."""
    x, keep = RNG.normal(size=(6, 3)), np.array([1, 1, 0, 0, 1, 1], bool)
    known = _unknown_rows(x, keep, (2, 2)).compute_chunk_sizes()  # (in place)
    assert known.chunks == ((2, 0, 2), (2, 1))
    return x[keep], known, _unknown_rows(x, keep, (2, 2))


def test_reductions_and_scans_of_an_array_with_an_empty_block_compute_as_numpy():
    """A block of no rows inside a non-empty array (x[mask].compute_chunk_sizes() leaves one): var
    and std were NaN without a word, max, argmax, prod along 0 and cumulative_sum failed at compute
    with numpy's bare errors; now numpy's values, known chunks or not, and nothing computed before."""
    rows, known, unknown = _with_an_empty_block()
    cases = [(pg.var, {}), (pg.std, dict(axis=0)), (pg.max, {}), (pg.max, dict(axis=1, keepdims=True)),
             (pg.min, dict(axis=0)), (pg.argmax, {}), (pg.argmin, dict(axis=1)), (pg.prod, dict(axis=0)),
             (pg.cumulative_sum, dict(axis=0)), (pg.cumulative_prod, dict(axis=1, include_initial=True)),
             (pg.linalg.vector_norm, dict(axis=1, ord=float("inf")))]
    for x in (known, unknown):
        with dask.config.set(scheduler=_refuse):
            ys = [fn(pg.Variable(x), **kw) for fn, kw in cases]
        for (fn, kw), got in zip(cases, pg.compute(*ys)):
            np.testing.assert_allclose(got, fn(pg.Variable(rows), **kw).data, rtol=1e-12, err_msg=f"{fn} {kw}")
    v = pg.Variable(known)
    pg.std(v).backward()
    np.testing.assert_allclose(pg.compute(v.grad)[0], (rows - rows.mean()) / (rows.size * rows.std()), rtol=1e-12)


def test_the_loss_of_a_batch_of_unknown_size_with_a_block_keeping_no_rows():
    """X[keep] where a block keeps no rows: softmax, log_softmax and softmax_cross_entropy failed at
    compute ("zero-size array to reduction operation maximum which has no identity")."""
    rows, _, x = _with_an_empty_block()
    t = np.array([0, 1, 2, 0, 1, 2])
    keep = np.array([1, 1, 0, 0, 1, 1], bool)
    tx = da.from_array(t, chunks=2)[da.from_array(keep, chunks=2)]
    got = pg.compute(F.softmax(x), F.log_softmax(x), F.softmax_cross_entropy(x, tx))
    for g, want in zip(got, (F.softmax(rows), F.log_softmax(rows), F.softmax_cross_entropy(rows, t[keep]))):
        np.testing.assert_allclose(g, want.data, rtol=1e-12)


@pytest.mark.parametrize("shape, new, chunks", [((2, 3), (3, 2), 1), ((6, 4), (4, 6), ((2, 3, 1), (3, 1))),
                                                ((3, 0), (-1,), (1, 0)), ((3, 0), (0, 5), 1)])
def test_reshape_of_chunks_that_do_not_line_up(shape, new, chunks):
    """dask's reshape refused (NotImplementedError: "merge or split existing dimensions evenly")
    (2, 3) -> (3, 2) in chunks of 1, and (3, 0) -> (-1,) failed ("reduce() of empty iterable");
    now numpy's values and gradient, lazily."""
    a = np.arange(float(np.prod(shape))).reshape(shape)
    v = pg.Variable(da.from_array(a, chunks=chunks))
    with dask.config.set(scheduler=_refuse):
        y = pg.reshape(v, new)
        pg.sum(y * y).backward()
    got, g = pg.compute(y, v.grad)
    np.testing.assert_array_equal(got, a.reshape(new))
    np.testing.assert_array_equal(g, 2 * a)


def test_reshapes_of_an_array_with_empty_blocks_compute_as_numpy():
    """Blocks of no rows inside an array (x[mask].compute_chunk_sizes()): dask's reshape built a graph
    that failed at compute ("cannot reshape array of size 0 into shape (3,)"), and so did what merges
    the batch axis: prod's backward and the cross entropy of (N, C, d) scores."""
    a = RNG.normal(size=(6, 4))
    for chunks in (((0, 0, 1, 1, 1, 3), (4,)), ((0, 1, 0, 5, 0), (3, 1))):
        v = pg.Variable(da.from_array(a, chunks=chunks))
        with dask.config.set(scheduler=_refuse):
            y = pg.reshape(v, (24,))
            pg.prod(v).backward()
        got, g = pg.compute(y, v.grad)
        np.testing.assert_array_equal(got, a.ravel())
        np.testing.assert_allclose(g, np.prod(a) / a, rtol=1e-12)
    t = np.arange(12).reshape(6, 2) % 2
    scores = pg.Variable(da.from_array(a.reshape(6, 2, 2), chunks=(chunks[0], 2, 2)))
    loss = F.softmax_cross_entropy(scores, da.from_array(t, chunks=(chunks[0], 2)))
    loss.backward()
    ref = pg.Variable(a.reshape(6, 2, 2))
    want = F.softmax_cross_entropy(ref, t)
    want.backward()
    got, g = pg.compute(loss, scores.grad)
    np.testing.assert_allclose(got, want.data, rtol=1e-12)
    np.testing.assert_allclose(g, ref.grad, rtol=1e-12)


def test_searchsorted_with_a_number_or_a_sorter_and_matrix_rank_compute_as_numpy():
    """dask's searchsorted failed on a Python number ("'float' object has no attribute '_meta'")
    and refused a sorter (NotImplementedError); matrix_rank failed ("svd() got an unexpected
    keyword argument 'compute_uv'")."""
    a = np.array([3.0, 1.0, 2.0, 5.0])
    order = np.argsort(a)
    x, s = pg.asarray(a, backend="dask"), pg.asarray(order, backend="dask")
    v = np.array([0.0, 2.0, 9.0])
    m = np.diag([1.0, 1e-20, 2.0])
    md = pg.asarray(m, backend="dask")
    got = pg.compute(pg.searchsorted(x[s], 2.5, side="right"), pg.searchsorted(x, 2.0, sorter=s),
                     pg.searchsorted(x, pg.asarray(v, backend="dask"), sorter=s),
                     pg.linalg.matrix_rank(md), pg.linalg.svdvals(md))
    want = (np.searchsorted(np.sort(a), 2.5, side="right"), np.searchsorted(a, 2.0, sorter=order),
            np.searchsorted(a, v, sorter=order), np.linalg.matrix_rank(m), np.linalg.svd(m, compute_uv=False))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


_S = slice


@pytest.mark.parametrize("key", [
    (1, _S(None, None, -1)), (1, _S(3, -5, -1)), (-1, _S(None, None, -2)), (_S(None, None, -1), 2),
    (_S(None), -3, _S(4, -5, -2)), (Ellipsis, 1, _S(None, None, -1)), (0, 1, _S(None, None, -1)),
    (_S(1, 3), 2, _S(3, 0, -1)), (_S(-5, -5, -1),), (_S(-5, -5, -1), 1), (1, None, _S(4, 0, -2)),
    (np.array([3, 0, 2]), _S(3, -5, -1)), (1, np.array([3, 0]), _S(4, 0, -2)),
    (np.array([3, 0, 2]), _S(-5, -5, -1)), (_S(-5, -5, -1), np.array([3, 0, 2])), (np.array([3, 0, 2]), _S(4, 4)),
    (None, _S(-8, None, -2)), (None, None, 2, _S(-8, None, -2), _S(-7, None, 2)),
    (_S(-5, -5, -2), None, _S(None, None, 1), None, -1), (Ellipsis, None, _S(-9, None, -1)),
])
def test_item_assignment_and_indexing_backward_with_negative_steps_write_numpys_positions(key):
    """dask's setitem wrote the wrong positions for an integer before a negative-step slice
    (z[1, ::-1] = v), raised for others (z[:, -3, 4:-5:-2]), and dask read z[-5:-5:-1] of 4 rows
    as all 4: x[key]'s gradient (scattered by a setitem) and h[key] = v were silently wrong. Beside
    None, the gradient was sized by dask's own reading of the key, and failed."""
    a = np.arange(1.0, 121.0).reshape(4, 5, 6)
    w = RNG.normal(size=a.shape)
    g = np.arange(a[key].size, dtype=float).reshape(a[key].shape) - 7.0

    def run(wrap):
        k = tuple(wrap(p) if isinstance(p, np.ndarray) else p for p in key)
        x, v = pg.Variable(wrap(a)), pg.Variable(wrap(g + 1000.0))
        got = x[k]
        h = x * 1.0
        h[k] = v
        (pg.sum(got * wrap(g)) + pg.sum(h * wrap(w))).backward()
        return [np.asarray(t.compute() if isinstance(t, da.Array) else t) for t in pg.compute(got, h, x.grad, v.grad)]

    want = run(lambda t: t)
    for got, expected in zip(run(lambda t: da.from_array(t, chunks=2)), want):
        assert got.shape == expected.shape
        np.testing.assert_array_equal(got, expected)


def test_a_step_longer_than_a_block_leaves_no_empty_block_behind():
    """x[0:3:3] of chunks of 2 has a block of no elements (dask's), which later block-wise ops
    computed as holding data: x[0:3:3] * 1.0 came out of shape (2, 5, 6) for (1, 5, 6), silently,
    and an item assignment through such keys failed at compute ("Missing dependency")."""
    import dask.array as da

    a = np.arange(1.0, 121.0).reshape(4, 5, 6)
    x = pg.Variable(da.from_array(a, chunks=2))
    np.testing.assert_array_equal(np.asarray((x[0:3:3] * 1.0).data.compute()), a[0:3:3])
    y = (x[2, 0:3:3, 0:1:2] + 1.0)[None]
    np.testing.assert_array_equal(np.asarray(y.data.compute()), (a[2, 0:3:3, 0:1:2] + 1.0)[None])
    h = x * 1.0
    h[2, :-2:3, -6:-5:2] = pg.Variable(da.from_array(np.full((1, 1), -1.0)))
    want = a.copy()
    want[2, :-2:3, -6:-5:2] = -1.0
    np.testing.assert_array_equal(np.asarray(h.data.compute()), want)


def test_batch_normalization_after_a_layer_trains_on_a_batch_of_unknown_size():
    """Linear, BatchNormalization, Linear on x[keep] (shape (nan, 5)): backward raised "mean in backward
    ... broadcast_to needs the target shape (nan, 4)" (the gradient of the batch mean, whose input now
    needs one, was broadcast to that shape). It is broadcast against the input, and counted as it is
    computed; the gradients equal numpy's on x[keep], and so do those of var, std and max over the batch."""
    import io

    import polygrad.links as L

    def model(backend):
        with pg.using_backend(backend):
            pg.seed(0)
            return pg.Sequential(L.Linear(5, 4, dtype="float64"), L.BatchNormalization(4, dtype="float64"),
                                 L.Linear(4, 3, dtype="float64"))

    x, t = RNG.normal(size=(8, 5)), np.arange(8) % 3
    keep = np.array([1, 1, 0, 1, 1, 0, 1, 1], bool)
    ref, m = model("numpy"), model("dask")
    buf = io.BytesIO()
    pg.serializers.save_npz(buf, ref)
    buf.seek(0)
    pg.serializers.load_npz(buf, m)
    F.softmax_cross_entropy(ref(x[keep]), t[keep]).backward()
    rows = pg.Variable(_unknown_rows(x, keep, (4, 5)), requires_grad=False)
    F.softmax_cross_entropy(m(rows), da.from_array(t, chunks=4)[da.from_array(keep, chunks=4)]).backward()
    got = pg.compute(*(p.grad for _, p in m.namedparams()))
    for (name, p), g in zip(ref.namedparams(), got):
        np.testing.assert_allclose(g, p.grad, rtol=1e-10, atol=1e-12, err_msg=name)
    for f in (lambda h: pg.var(h, axis=0, correction=1), lambda h: pg.std(h, axis=0), lambda h: pg.max(h, axis=0),
              lambda h: pg.mean(h)):
        w, v = pg.Variable(x[0] * 1.0), pg.Variable(da.from_array(x[0], chunks=5))
        pg.sum(f(x[keep] * w) ** 2).backward()
        pg.sum(f(rows * v) ** 2).backward()
        np.testing.assert_allclose(pg.compute(v.grad)[0], w.grad, rtol=1e-10)
    v = pg.Variable(da.from_array(x[0], chunks=5))
    h = rows * v
    y = pg.mean(h, axis=0)
    h += 1.0  # (as on numpy: the mean's gradient reads no value of h, so a write after it refuses nothing)
    pg.sum(y).backward()
    np.testing.assert_allclose(pg.compute(v.grad)[0], x[keep].mean(0), rtol=1e-12)


@pytest.mark.distributed
def test_a_save_and_load_round_trip_cuts_the_history_the_scheduler_keeps():
    """docs/dask.md said persisting stops the task graph from growing: the client's graph of each
    parameter stays one layer, but the dask.distributed scheduler keeps the tasks behind each persisted
    parameter (to recompute it for a lost worker), so its task count grows with every update. The
    documented cut: save_npz and load_npz of model and optimizer; within two updates the scheduler
    forgets the tasks before it, and training goes on from the same values."""
    import gc
    import io

    import polygrad.links as L

    distributed = pytest.importorskip("distributed")
    rng = np.random.default_rng(0)
    X = da.from_array(rng.normal(size=(16, 4)), chunks=(8, 4))
    t = da.from_array(rng.integers(0, 3, 16), chunks=8)
    with distributed.LocalCluster(processes=False, n_workers=1, threads_per_worker=2, dashboard_address=None,
                                  silence_logs=logging.CRITICAL) as cluster, distributed.Client(cluster):
        with pg.using_backend("dask"):
            pg.seed(0)
            model = pg.Sequential(L.Linear(4, 8), L.BatchNormalization(8), L.Linear(8, 3))
        opt = pg.optimizers.Adam().setup(model)

        def steps(n):
            for _ in range(n):
                opt.update(lambda: F.softmax_cross_entropy(model(X), t))
            gc.collect()
            return len(cluster.scheduler.tasks)

        two = steps(2)
        grown = steps(4)
        assert grown > two + 4 * 50, (two, grown)
        W = pg.compute(model[0].W)[0].copy()
        for target in (model, opt):
            buf = io.BytesIO()
            pg.serializers.save_npz(buf, target)
            buf.seek(0)
            pg.serializers.load_npz(buf, target)
        np.testing.assert_array_equal(pg.compute(model[0].W)[0], W)
        assert opt.t == 6 and len(model[0].W.data.dask) == 1
        cut = steps(2)
        assert cut < two + 50, (two, grown, cut)


def test_persist_gives_each_variable_an_array_of_its_own():
    """dask's persist gives one object for every input of the same key (equal values computed the same way):
    pg.persist(a, b) made a and b one Array, and a raw a.data[...] = v (dask's __setitem__ changes the object)
    changed b too."""
    a = pg.Variable(da.zeros(3, chunks=3)) * 1.0
    b = pg.Variable(da.zeros(3, chunks=3)) * 1.0
    pg.persist(a, b)
    assert a.data is not b.data
    a.data[...] = 5.0
    np.testing.assert_array_equal(b.data.compute(), [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(a.data.compute(), [5.0, 5.0, 5.0])

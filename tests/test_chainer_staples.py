"""The Chainer staples a first script reaches for: F.accuracy, L.Classifier,
pg.ChainList, pg.Sequential, pg.iterators.SerialIterator, pg.dataset.concat_examples
and pg.datasets.TupleDataset, on numpy and array_api_strict (dask where it applies)."""

from __future__ import annotations

import numpy as np
import pytest

import polygrad as pg
import polygrad.functions as F
import polygrad.links as L
from polygrad import serializers
from polygrad.dataset import concat_examples
from polygrad.datasets import TupleDataset
from polygrad.iterators import SerialIterator, ShuffleOrderSampler

from conftest import arr, assert_close, to_np


def ints(xp, values):
    return xp.asarray(np.asarray(values).tolist(), dtype=xp.int64)


Y = np.array([[0.1, 0.9, 0.0], [0.8, 0.1, 0.1], [0.2, 0.3, 0.5], [0.0, 1.0, 0.0]])


# ---------------------------------------------------------------------------
# F.accuracy
# ---------------------------------------------------------------------------


def test_accuracy_is_the_fraction_of_argmax_hits(xp):
    """Rows whose highest score is at their label count: 3 of 4 here; the result is a float of y's dtype."""
    acc = F.accuracy(pg.Variable(arr(xp, Y)), ints(xp, [1, 0, 2, 0]))
    assert isinstance(acc, pg.Variable) and not acc.requires_grad
    assert_close(acc, np.array(0.75))


def test_accuracy_ignore_label_leaves_examples_out(xp):
    """Labels equal to ignore_label count neither as hits nor in the total (Chainer's)."""
    assert_close(F.accuracy(arr(xp, Y), ints(xp, [1, -1, 2, 0]), ignore_label=-1), np.array(2.0 / 3.0))
    assert_close(F.accuracy(arr(xp, Y), ints(xp, [-1, -1, -1, -1]), ignore_label=-1), np.array(0.0))


def test_accuracy_with_ignore_label_compiles():
    """On symbolic inputs too: it compared the labels' raw array with ignore_label by operator,
    which a symbolic array does not have (Python's identity test gave True, then a mixed-backends error)."""
    from polygrad import symbolic as T

    y, t = T.matrix("y"), T.vector("t", dtype="int64")
    f = pg.function([y, t], F.accuracy(y, t, ignore_label=-1))
    labels = np.array([1, -1, 2, 0])
    assert float(f(np.asarray(Y), labels)) == pytest.approx(2.0 / 3.0)
    assert float(f(np.asarray(Y), np.array([-1, -1, -1, -1]))) == 0.0


def test_accuracy_takes_extra_axes_and_y_dtype(xp):
    """y (N, C, d) against t (N, d) compares along axis 1; float32 scores give a float32 accuracy."""
    y = arr(xp, np.stack([Y, Y[::-1]], axis=2), "float32")  # (4, 3, 2): argmax along 1 is [[1, 1], [0, 2], [2, 0], [1, 1]]
    t = ints(xp, [[1, 1], [0, 2], [2, 0], [0, 1]])
    acc = F.accuracy(y, t)
    assert acc.dtype == xp.float32
    assert_close(acc, np.array(0.875, dtype=np.float32))


def test_accuracy_checks_its_arguments(xp):
    """Float labels, integer scores and mismatched shapes are refused naming accuracy."""
    with pytest.raises(ValueError, match="accuracy: t must be an array of integers"):
        F.accuracy(arr(xp, Y), arr(xp, [1.0, 0.0, 2.0, 0.0]))
    with pytest.raises(ValueError, match="accuracy: y must be an array of floating-point scores"):
        F.accuracy(ints(xp, [[1, 0]]), ints(xp, [0]))
    with pytest.raises(ValueError, match=r"accuracy: expects y of shape .* got y \(4, 3\) and t \(3,\)"):
        F.accuracy(arr(xp, Y), ints(xp, [1, 0, 2]))


def test_accuracy_stays_lazy_on_dask():
    """On dask, accuracy computes nothing until asked."""
    da = pytest.importorskip("dask.array")
    with pg.get_backend("dask").forbid_compute():
        acc = F.accuracy(da.from_array(Y), da.from_array(np.array([1, 0, 2, 0])))
    assert float(pg.compute(acc)[0]) == 0.75


# ---------------------------------------------------------------------------
# L.Classifier
# ---------------------------------------------------------------------------


def test_classifier_returns_the_loss_and_keeps_y_loss_accuracy(xp):
    """model(x, t) is softmax_cross_entropy(predictor(x), t); y, loss and accuracy are kept."""
    pg.seed(0)
    model = L.Classifier(L.Linear(3, 3, dtype="float64"))
    x, t = arr(xp, Y[:, :3]), ints(xp, [1, 0, 2, 0])
    loss = model(x, t)
    assert loss is model.loss
    assert_close(loss, to_np(F.softmax_cross_entropy(model.predictor(x), t)))
    assert_close(model.accuracy, to_np(F.accuracy(model.y, t)))
    assert [n for n, _ in model.namedparams()] == ["/predictor/W", "/predictor/b"]


def test_classifier_trains_with_optimizer_update(xp):
    """optimizer.update(model, x, t) (Chainer's idiom) makes the loss fall."""
    pg.seed(0)
    model = L.Classifier(pg.Sequential(L.Linear(3, 8), F.relu, L.Linear(8, 3)))
    opt = pg.optimizers.Adam(alpha=0.05).setup(model)
    x, t = arr(xp, Y[:, :3], "float32"), ints(xp, [1, 0, 2, 1])
    losses = [float(to_np(opt.update(model, x, t))) for _ in range(30)]
    assert losses[-1] < losses[0] / 4
    assert float(to_np(model.accuracy)) == 1.0


def test_classifier_options(xp):
    """compute_accuracy=False skips accuracy; label_key picks the labels by position or keyword; lossfun is used."""
    model = L.Classifier(lambda a, b: a * b, lossfun=lambda y, t: pg.sum(y) + t, label_key=0)
    model.compute_accuracy = False
    assert float(to_np(model(10.0, arr(xp, [1.0, 2.0]), arr(xp, [3.0, 4.0])))) == 21.0
    assert model.accuracy is None
    named = L.Classifier(lambda x: x, lossfun=lambda y, t: pg.sum(y * t), accfun=lambda y, t: 0.5, label_key="t")
    assert float(to_np(named(arr(xp, [1.0, 2.0]), t=arr(xp, [3.0, 1.0])))) == 5.0
    assert named.accuracy == 0.5
    with pytest.raises(ValueError, match="label_key='t' is not among the keyword arguments"):
        named(arr(xp, [1.0]))


# ---------------------------------------------------------------------------
# ChainList and Sequential
# ---------------------------------------------------------------------------


def test_chainlist_is_a_list_of_links(xp):
    """add_link/append, indexing, iteration, len, and parameters named by index ('/0/W')."""
    a, b = L.Linear(3, 4), L.Linear(4, 2)
    chain = pg.ChainList(a)
    chain.add_link(b)
    assert len(chain) == 2 and chain[0] is a and chain[-1] is b and list(chain) == [a, b]
    assert list(chain.children()) == [a, b] and b.name == "1"
    assert [n for n, _ in chain.namedparams()] == ["/0/W", "/0/b", "/1/W", "/1/b"]
    assert list(chain.links()) == [chain, a, b]
    assert chain.count_params() == 3 * 4 + 4 + 4 * 2 + 2


def test_chainlist_refuses_links_as_attributes(xp):
    """Assigning a link inside init_scope is refused (Chainer's rule), pointing at add_link."""
    chain = pg.ChainList()
    with pytest.raises(TypeError, match="add_link"):
        with chain.init_scope():
            chain.l = L.Linear(2, 2)


def test_chainlist_in_a_chain_saves_moves_and_copies(xp, backend_name, tmp_path):
    """A ChainList inside a Chain serializes as 'layers/0/W', moves its children's running statistics, copies them."""
    def make():
        return pg.Chain(layers=pg.ChainList(L.Linear(2, 2), L.BatchNormalization(2)))

    src = make()
    src.layers[1](arr(xp, [[1.0, 2.0], [3.0, 5.0]], "float32"))
    serializers.save_npz(tmp_path / "m.npz", src)
    with np.load(tmp_path / "m.npz") as f:
        assert sorted(f.files) == ["layers/0/W", "layers/0/b", "layers/1/avg_mean", "layers/1/avg_var",
                                   "layers/1/beta", "layers/1/gamma"]
    dst = make()
    serializers.load_npz(tmp_path / "m.npz", dst)
    np.testing.assert_array_equal(to_np(dst.layers[1].avg_mean), to_np(src.layers[1].avg_mean))
    other = "numpy" if backend_name == "array_api_strict" else "array_api_strict"
    dst.to_backend(other)
    assert isinstance(dst.layers[1].avg_var, pg.get_backend(other).array_types)
    copy = make()
    copy.copyparams(src)
    np.testing.assert_array_equal(to_np(copy.layers[0].W), to_np(src.layers[0].W))


def test_sequential_applies_links_and_functions_in_order(xp):
    """Sequential(Linear, relu, Linear)(x) is l2(relu(l1(x))); only links are children, numbered among links."""
    l1, l2 = L.Linear(3, 4, dtype="float64"), L.Linear(4, 2, dtype="float64")
    seq = pg.Sequential(l1, F.relu, l2)
    x = arr(xp, Y[:, :3])
    assert_close(seq(x), to_np(l2(F.relu(l1(x)))))
    assert [n for n, _ in seq.namedparams()] == ["/0/W", "/0/b", "/1/W", "/1/b"]
    assert len(seq) == 3 and seq[1] is F.relu and list(seq) == [l1, F.relu, l2]


def test_sequential_is_a_list_of_layers(xp):
    """insert, append, pop, remove, del, item assignment and extend keep the children numbered."""
    l1, l2, l3 = L.Linear(2, 2), L.Linear(2, 2), L.Linear(2, 2)
    seq = pg.Sequential(l1)
    seq.append(F.relu)
    seq.insert(0, l2)
    assert list(seq) == [l2, l1, F.relu] and (l2.name, l1.name) == ("0", "1")
    seq[1] = l3
    assert list(seq.children()) == [l2, l3] and l3.name == "1"
    assert seq.pop() is F.relu and len(seq) == 2
    seq.remove(l2)
    del seq[0]
    assert len(seq) == 0 and list(seq.children()) == []
    seq.extend([F.relu, l1])
    assert seq.index(l1) == 1 and seq.count(F.relu) == 1 and l1 in seq
    with pytest.raises(TypeError, match="must be a Link or a function"):
        seq.append(3)


def test_sequential_unpacks_tuples_and_refuses_to_run_empty(xp):
    """A layer returning a tuple passes its items as arguments; an empty Sequential raises."""
    seq = pg.Sequential(lambda x: (x, x * 2), lambda a, b: a + b)
    assert_close(seq(arr(xp, [1.0])), np.array([3.0]))
    with pytest.raises(RuntimeError, match="no layers"):
        pg.Sequential()(arr(xp, [1.0]))


# ---------------------------------------------------------------------------
# TupleDataset
# ---------------------------------------------------------------------------


def test_tuple_dataset_zips_arrays_and_lists(xp):
    """Example i is (x[i], t[i]); slices, lists and integer arrays of indices give lists of examples."""
    ds = TupleDataset(arr(xp, Y), [1, 0, 2, 0])
    assert len(ds) == 4
    x1, t1 = ds[1]
    assert_close(x1, Y[1]) and t1 == 0
    assert [t for _, t in ds[1:3]] == [0, 2] and [t for _, t in ds[[3, 0]]] == [0, 1]
    assert [t for _, t in ds[ints(xp, [2, 2])]] == [2, 2]
    with pytest.raises(ValueError, match="data set 1 has length 3, data set 0 has length 4"):
        TupleDataset(arr(xp, Y), [1, 0, 2])
    with pytest.raises(IndexError, match="out of range"):
        ds[4]


# ---------------------------------------------------------------------------
# SerialIterator
# ---------------------------------------------------------------------------


def test_tuple_dataset_indices_follow_numpy():
    """A boolean mask picks the examples where it is True; floats and masks of another length
    raise. Every index went through int(): a mask read examples 1 and 0, 2.9 read example 2."""
    td = TupleDataset(np.arange(5) * 10, np.arange(5))
    mask = [True, False, True, False, False]
    for key in (np.array(mask), mask):
        assert [int(b) for _, b in td[key]] == [0, 2]
    assert [int(b) for _, b in td[np.array([4, 0, 4])]] == [4, 0, 4]
    assert int(td[np.int64(1)][1]) == 1 and int(td[-1][1]) == 4
    for bad in (2.9, np.array([0.5, 3.7]), np.array([True, False]), True):
        with pytest.raises(IndexError, match="TupleDataset"):
            td[bad]


def test_tuple_dataset_takes_masks_and_indices_of_any_backend(xp):
    """A boolean mask of array_api_strict was refused as 'not an integer': its dtype was recognized
    by its name, which is 'array_api_strict.bool' there; now by the array's own namespace."""
    td = TupleDataset(list("abcd"), [0, 1, 2, 3])
    assert td[xp.asarray([False, True, False, True])] == [("b", 1), ("d", 3)]
    assert td[xp.asarray([3, 0])] == [("d", 3), ("a", 0)] and td[xp.asarray(2)] == ("c", 2)
    for bad in (xp.asarray([0.5, 1.0]), xp.asarray([True, False]), xp.asarray(True), xp.asarray(1.0)):
        with pytest.raises(IndexError, match="TupleDataset"):
            td[bad]


def test_serial_iterator_in_order_repeats_and_counts_epochs():
    """Without shuffling: batches in order, the last one of an epoch filled from the next (Chainer's)."""
    it = SerialIterator(list(range(5)), 2, shuffle=False)
    assert it.previous_epoch_detail is None
    assert next(it) == [0, 1] and it.epoch_detail == pytest.approx(0.4) and not it.is_new_epoch
    assert it.next() == [2, 3] and it.previous_epoch_detail == pytest.approx(0.4)
    assert next(it) == [4, 0] and it.epoch == 1 and it.is_new_epoch and it.epoch_detail == pytest.approx(1.2)
    assert next(it) == [1, 2] and not it.is_new_epoch
    it.reset()
    assert (it.epoch, it.current_position, it.previous_epoch_detail) == (0, 0, None)
    assert next(it) == [0, 1]


def test_serial_iterator_with_a_batch_larger_than_the_dataset():
    """batch_size past the dataset's length: every minibatch still has batch_size examples, taken
    from as many epochs as it needs, each epoch a whole pass (shuffled: a permutation each). The
    first minibatch used to stop after one wrap: 6 of 8 examples, then 3."""
    it = SerialIterator([0, 1, 2], 8, shuffle=False)
    assert next(it) == [0, 1, 2, 0, 1, 2, 0, 1]
    assert (it.epoch, it.current_position, it.is_new_epoch) == (2, 2, True)
    assert it.epoch_detail == pytest.approx(2 + 2 / 3)
    assert next(it) == [2, 0, 1, 2, 0, 1, 2, 0]
    assert (it.epoch, it.current_position) == (5, 1) and it.epoch_detail == pytest.approx(5 + 1 / 3)
    pg.seed(0)
    shuffled = SerialIterator(list(range(3)), 7)
    seen = next(shuffled) + next(shuffled)  # 14 examples: four whole epochs, then two of the fifth
    assert all(sorted(seen[k:k + 3]) == [0, 1, 2] for k in range(0, 12, 3))
    assert shuffled.epoch == 4 and shuffled.current_position == 2
    assert list(SerialIterator([0, 1, 2], 8, repeat=False, shuffle=False)) == [[0, 1, 2]]


def test_serial_iterator_without_repeat_stops_after_one_epoch():
    """repeat=False gives one epoch, the last batch shorter, then StopIteration; a for loop sees it whole."""
    it = SerialIterator(list(range(5)), 2, repeat=False, shuffle=False)
    assert list(it) == [[0, 1], [2, 3], [4]]
    assert it.epoch == 1
    with pytest.raises(StopIteration):
        next(it)
    it.reset()
    assert [len(b) for b in it] == [2, 2, 1]


def test_serial_iterator_shuffles_each_epoch_repeatably():
    """Each epoch is a permutation; pg.seed before making the iterator makes the order repeatable."""
    def epochs(n):
        pg.seed(3)
        it = SerialIterator(list(range(10)), 5)
        return [next(it) + next(it) for _ in range(n)]

    first = epochs(3)
    assert all(sorted(e) == list(range(10)) for e in first)
    assert first[0] != first[1] or first[1] != first[2]
    assert epochs(3) == first
    own = SerialIterator(list(range(10)), 10, order_sampler=ShuffleOrderSampler(7))
    again = SerialIterator(list(range(10)), 10, order_sampler=ShuffleOrderSampler(7))
    assert next(own) == next(again)


def test_serial_iterator_checks_its_arguments():
    """A non-positive batch size, or shuffle together with an order sampler, is refused."""
    with pytest.raises(ValueError, match="batch_size must be a positive integer, got 0"):
        SerialIterator([1, 2], 0)
    with pytest.raises(ValueError, match="shuffle or order_sampler, not both"):
        SerialIterator([1, 2], 1, shuffle=True, order_sampler=ShuffleOrderSampler(0))


def test_serial_iterator_and_sampler_take_numpy_integers_and_refuse_others():
    """batch_size=np.int64(32) (a length computed with NumPy) was refused as 'not a positive int', and
    ShuffleOrderSampler(np.int64(3)) as 'not an int seed'; any integer (__index__) is taken now, and
    booleans, floats and strings are refused with a TypeError naming what was given."""
    it = SerialIterator(list(range(10)), np.int64(4), shuffle=False)
    assert type(it.batch_size) is int and next(it) == [0, 1, 2, 3]
    assert ShuffleOrderSampler(np.int64(3))([0] * 6, 0) == ShuffleOrderSampler(3)([0] * 6, 0)
    for bad in (True, np.bool_(True), 2.0, np.float64(2.0), "4"):
        with pytest.raises(TypeError, match=f"batch_size must be a positive integer, got {type(bad).__name__}"):
            SerialIterator([1, 2], bad)
        with pytest.raises(TypeError, match=f"random_state must be .*, got {type(bad).__name__}"):
            ShuffleOrderSampler(bad)
    with pytest.raises(ValueError, match="batch_size must be a positive integer, got -1"):
        SerialIterator([1, 2], np.int64(-1))


def test_serial_iterator_saves_and_resumes(tmp_path):
    """save_npz/load_npz of an iterator restore its position, epoch and this epoch's order (Chainer's keys);
    the resumed one gives the rest of the epoch alike (the next epoch's shuffle is drawn anew, as in Chainer)."""
    pg.seed(0)
    it = SerialIterator(list(range(7)), 2)
    for _ in range(5):  # epoch 1, position 3
        next(it)
    serializers.save_npz(tmp_path / "it.npz", it)
    with np.load(tmp_path / "it.npz") as f:
        assert sorted(f.files) == ["current_position", "epoch", "is_new_epoch", "order", "previous_epoch_detail"]
    resumed = SerialIterator(list(range(7)), 2)
    serializers.load_npz(tmp_path / "it.npz", resumed)
    assert (resumed.epoch, resumed.current_position, resumed.epoch_detail) == (1, 3, it.epoch_detail)
    assert resumed.previous_epoch_detail == it.previous_epoch_detail
    assert [next(resumed) for _ in range(2)] == [next(it) for _ in range(2)]


@pytest.mark.parametrize("case", ["shuffled_into_ordered", "position_past_the_end", "not_a_permutation", "negative"])
def test_serial_iterator_refuses_a_file_that_does_not_fit_and_changes_nothing(tmp_path, case):
    """A shuffled run's order loaded into an iterator that does not shuffle was ignored (the next
    batch was not the saved run's), a position past a smaller dataset's end counted an epoch with
    no example, and an order that is no permutation or a negative position were taken."""
    shuffle = case != "position_past_the_end"
    it = SerialIterator(list(range(10)), 4, shuffle=shuffle)
    next(it)
    next(it)
    serializers.save_npz(tmp_path / "it.npz", it)
    size = 10
    if case in ("not_a_permutation", "negative"):
        with np.load(tmp_path / "it.npz") as f:
            stored = dict(f)
        if case == "not_a_permutation":
            stored["order"] = np.zeros(10, dtype=stored["order"].dtype)
        else:
            stored["current_position"] = np.array(-3)
        np.savez(tmp_path / "it.npz", **stored)
    elif case == "position_past_the_end":
        size = 6
    target = SerialIterator(list(range(size)), 4, shuffle=shuffle and case != "shuffled_into_ordered")
    before = (target.current_position, target.epoch, target._order)
    with pytest.raises(ValueError, match="polygrad: SerialIterator: the file"):
        serializers.load_npz(tmp_path / "it.npz", target)
    assert (target.current_position, target.epoch, target._order) == before



class _Snapshot:
    """Chainer's trainer snapshot: a model, its optimizer and the iterator saved in one file."""

    def __init__(self, model, opt, it):
        self.model, self.opt, self.it = model, opt, it

    def serialize(self, serializer):
        self.model.serialize(serializer["model"])
        self.opt.serialize(serializer["opt"])
        self.it.serialize(serializer["it"])


@pytest.mark.parametrize("case", ["shuffled_into_ordered", "position_past_the_end", "not_a_permutation"])
def test_a_snapshot_whose_iterator_refuses_the_file_changes_nothing(tmp_path, case):
    """The iterator checked the file only in the second pass of the load, after the model and the
    optimizer before it in the snapshot had taken the file's values: a refused resume left the
    model trained and the optimizer's count at 1."""
    def make(size, shuffle):
        pg.seed(0)
        model = L.Linear(3, 2)
        it = SerialIterator(list(range(size)), 4, shuffle=shuffle)
        return _Snapshot(model, pg.optimizers.Adam().setup(model), it)

    saved = make(10, shuffle=True)
    saved.opt.update(lambda: F.sum(saved.model(np.ones((1, 3), np.float32))))
    for _ in range(2):
        next(saved.it)
    serializers.save_npz(tmp_path / "snap.npz", saved)
    if case == "not_a_permutation":
        with np.load(tmp_path / "snap.npz") as f:
            stored = dict(f)
        stored["it/order"] = np.zeros(10, dtype=stored["it/order"].dtype)
        np.savez(tmp_path / "snap.npz", **stored)
    target = make(6 if case == "position_past_the_end" else 10, shuffle=case != "shuffled_into_ordered")
    W, it_before = np.array(target.model.W.data, copy=True), (target.it.current_position, target.it._order)
    state = target.opt._state_of(target.model.W)
    with pytest.raises(ValueError, match="polygrad: SerialIterator: the file"):
        serializers.load_npz(tmp_path / "snap.npz", target)
    np.testing.assert_array_equal(target.model.W.data, W)
    assert target.opt.t == 0 and target.opt._state_of(target.model.W) is state
    assert (target.it.current_position, target.it._order) == it_before


# ---------------------------------------------------------------------------
# concat_examples
# ---------------------------------------------------------------------------


def test_concat_examples_stacks_each_field(xp):
    """Tuples give a tuple of stacked arrays on the examples' backend; Python labels become an array there too."""
    pg.seed(0)
    ds = TupleDataset(arr(xp, Y, "float32"), ints(xp, [1, 0, 2, 0]))
    x, t = concat_examples(next(SerialIterator(ds, 3, shuffle=False)))
    assert x.shape == (3, 3) and x.dtype == xp.float32 and t.dtype == xp.int64
    assert_close(x, Y[:3].astype(np.float32))
    assert isinstance(x, type(xp.asarray(0.0)))
    x2, t2 = concat_examples([(arr(xp, [1.0, 2.0]), 1), (arr(xp, [3.0, 4.0]), 0)])
    assert_close(x2, np.array([[1.0, 2.0], [3.0, 4.0]]))
    assert to_np(t2).tolist() == [1, 0]


def test_concat_examples_dicts_plain_examples_and_padding(xp):
    """Dict examples give a dict; plain examples one array; padding= pads each to the largest shape."""
    out = concat_examples([{"x": arr(xp, [1.0]), "t": 0}, {"x": arr(xp, [2.0]), "t": 1}])
    assert sorted(out) == ["t", "x"] and out["x"].shape == (2, 1)
    assert_close(concat_examples([arr(xp, [1.0, 2.0]), arr(xp, [3.0, 4.0])]), np.array([[1.0, 2.0], [3.0, 4.0]]))
    padded = concat_examples([(arr(xp, [1.0]), arr(xp, [[1.0, 2.0]])), (arr(xp, [2.0, 3.0]), arr(xp, [[3.0], [4.0]]))],
                             padding=(-1.0, 0.0))
    assert_close(padded[0], np.array([[1.0, -1.0], [2.0, 3.0]]))
    assert_close(padded[1], np.array([[[1.0, 2.0], [0.0, 0.0]], [[3.0, 0.0], [4.0, 0.0]]]))


def test_concat_examples_device_moves_the_batch(xp, backend_name):
    """device= (or backend=) puts the arrays on that backend; Chainer's '@name' form is read as the name."""
    other = "numpy" if backend_name == "array_api_strict" else "array_api_strict"
    batch = [(arr(xp, [1.0, 2.0]), 1), (arr(xp, [3.0, 4.0]), 0)]
    for kwargs in ({"device": other}, {"backend": other}, {"device": "@" + other}):
        x, t = concat_examples(batch, **kwargs)
        types = pg.get_backend(other).array_types
        assert isinstance(x, types) and isinstance(t, types)
    with pytest.raises(TypeError, match="backend name"):
        concat_examples(batch, device=0)
    with pytest.raises(ValueError, match="not both"):
        concat_examples(batch, device=other, backend=backend_name)


def test_concat_examples_refuses_what_cannot_stack(xp):
    """An empty batch, and examples of different shapes without padding, are refused clearly."""
    with pytest.raises(ValueError, match="the batch is empty"):
        concat_examples([])
    with pytest.raises(ValueError, match=r"field 0, the examples have shapes \[\(1,\), \(2,\)\]; pass padding="):
        concat_examples([(arr(xp, [1.0]), 0), (arr(xp, [1.0, 2.0]), 1)])


def test_a_chainer_loop_on_dask():
    """Numpy examples batched onto dask with device='dask' train a Classifier there: the loss falls."""
    pytest.importorskip("dask.array")
    pg.seed(0)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((40, 4)).astype(np.float32)
    t = (x[:, 0] > 0).astype(np.int32)
    with pg.using_backend("dask"):
        model = L.Classifier(pg.Sequential(L.Linear(4, 8), F.relu, L.Linear(8, 2)))
    opt = pg.optimizers.Adam(alpha=0.05).setup(model)
    it = SerialIterator(TupleDataset(x, t), 20)
    losses = []
    while it.epoch < 8:
        xb, tb = concat_examples(next(it), device="dask")
        assert type(xb).__module__.startswith("dask")
        opt.update(model, xb, tb)
        losses.append(float(pg.compute(model.loss)[0]))
    assert losses[-1] < losses[0]


def test_concat_examples_puts_python_labels_with_the_arrays(xp, backend_name):
    """Python labels next to arrays of another backend than the current one go to the arrays' backend."""
    other = "numpy" if backend_name == "array_api_strict" else "array_api_strict"
    with pg.using_backend(other) as b:
        rows = [b.xp.asarray([1.0, 2.0]), b.xp.asarray([3.0, 4.0])]
    x, t = concat_examples([(rows[0], 1), (rows[1], 0)])  # the current backend is backend_name
    assert isinstance(t, type(x))


# ---------------------------------------------------------------------------
# SerialIterator against Chainer 7.8.1 (stop 26)
# ---------------------------------------------------------------------------


def test_serial_iterator_over_an_empty_dataset_raises():
    """An empty dataset gave empty minibatches forever while epochs went by (a loop `while it.epoch
    < 3` ended without one example); Chainer fails on it too."""
    for repeat in (True, False):
        with pytest.raises(ValueError, match="dataset is empty"):
            next(SerialIterator([], 2, repeat=repeat, shuffle=False))


def test_serial_iterator_in_order_reads_a_dataset_that_grew():
    """In order, the length is read at each minibatch (Chainer's): two examples appended after
    the first minibatch are visited in this epoch. They were skipped until reset()."""
    data = [0, 1, 2, 3]
    it = SerialIterator(data, 3, shuffle=False)
    assert next(it) == [0, 1, 2]
    data += [4, 5]
    assert next(it) == [3, 4, 5] and it.epoch == 1 and it.epoch_detail == pytest.approx(1.0)


class _Counting(pg.iterators.OrderSampler):
    """A fixed rotation that counts its calls."""

    def __init__(self):
        self.calls = 0

    def __call__(self, order, position):
        self.calls += 1
        return [(k + self.calls) % len(order) for k in range(len(order))]


def test_serial_iterator_without_repeat_draws_the_next_order_at_the_epochs_end():
    """repeat=False: the sampler is called at the end of the epoch as with repeat=True (Chainer's),
    so the order saved after an epoch, and the next epoch's after reset(), are Chainer's. It was
    called only when repeating (1 call after the epoch, where Chainer makes 2)."""
    sampler = _Counting()
    it = SerialIterator(list(range(4)), 4, repeat=False, order_sampler=sampler)
    assert next(it) == [1, 2, 3, 0] and sampler.calls == 2
    it.reset()
    assert sampler.calls == 3 and next(it) == [3, 0, 1, 2]


def test_shuffle_order_sampler_takes_a_numpy_random_state():
    """Chainer code passes numpy.random.RandomState: taken as any generator with permutation(n)
    (it failed in random.Random's seeding); an unusable random_state names what is taken."""
    a = ShuffleOrderSampler(np.random.RandomState(0))([0] * 6, 0)
    assert a == [int(k) for k in np.random.RandomState(0).permutation(6)]
    assert sorted(ShuffleOrderSampler(np.random.default_rng(1))([0] * 5, 0)) == list(range(5))
    with pytest.raises(TypeError, match="permutation"):
        ShuffleOrderSampler([1, 2])


def test_serial_iterator_loads_a_file_without_previous_epoch_detail(tmp_path):
    """Older Chainer snapshots have no previous_epoch_detail: estimated as Chainer does (a KeyError before)."""
    it = SerialIterator(list(range(10)), 3, shuffle=False)
    for _ in range(5):
        next(it)
    np.savez(tmp_path / "old.npz", current_position=5, epoch=1, is_new_epoch=False)
    fresh = SerialIterator(list(range(10)), 3, shuffle=False)
    pg.serializers.load_npz(tmp_path / "old.npz", fresh)
    assert (fresh.epoch, fresh.current_position) == (1, 5)
    assert fresh.previous_epoch_detail == pytest.approx(1.2) == it.previous_epoch_detail
    assert next(fresh) == next(it)


def test_serial_iterator_in_order_over_a_dataset_that_shrank_keeps_its_batch_size():
    """Read in order, a dataset that shrank below the position gave a batch of 5 for 4."""
    data = list(range(6))
    it = SerialIterator(data, 4, shuffle=False)
    next(it)
    del data[3:]
    batch = next(it)
    assert len(batch) == 4 and batch == [0, 1, 2, 0]

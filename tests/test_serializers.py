"""save_npz / load_npz for Links and optimizers, across backends."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import numpy as np
import pytest

import polygrad as pg
import polygrad.links as L
from polygrad import optimizers, serializers

from conftest import arr
from conftest import to_np


def mlp(seed, n_out=2):
    pg.seed(seed)
    return pg.Chain(l1=L.Linear(3, 4), l2=L.Linear(4, n_out))


def params(link):
    return {k: to_np(p) for k, p in link.namedparams()}


def train(model, opt, xp, steps):
    x = arr(xp, [[1.0, -2.0, 0.5], [0.0, 1.0, 2.0]], dtype="float32")
    for _ in range(steps):
        opt.update(lambda: pg.sum(model.l2(model.l1(x)) ** 2))


def test_chain_round_trip_with_chainer_keys(xp, tmp_path):
    """A Chain saves under 'l1/W', 'l1/b', ... and loads into another of the same shape."""
    a, b = mlp(0), mlp(1)
    serializers.save_npz(tmp_path / "m.npz", a)
    with np.load(tmp_path / "m.npz") as f:
        assert sorted(f.files) == ["l1/W", "l1/b", "l2/W", "l2/b"]
    serializers.load_npz(tmp_path / "m.npz", b)
    for k, v in params(a).items():
        np.testing.assert_array_equal(params(b)[k], v)
    assert type(b.l1.W.data) is type(a.l1.W.data)


def test_adam_round_trip_continues_identically(xp, tmp_path):
    """An Adam optimizer (t, epoch, moments) and its model, saved and loaded, train on exactly as the original."""
    model = mlp(0)
    opt = optimizers.Adam(alpha=0.05).setup(model)
    train(model, opt, xp, 3)
    opt.new_epoch()
    serializers.save_npz(tmp_path / "m.npz", model)
    serializers.save_npz(tmp_path / "o.npz", opt)
    model2 = mlp(1)
    opt2 = optimizers.Adam(alpha=0.05).setup(model2)
    serializers.load_npz(tmp_path / "m.npz", model2)
    serializers.load_npz(tmp_path / "o.npz", opt2)
    assert (opt2.t, opt2.epoch) == (3, 1)
    train(model, opt, xp, 2)
    train(model2, opt2, xp, 2)
    for k, v in params(model).items():
        np.testing.assert_allclose(params(model2)[k], v, rtol=1e-6)


def test_optimizer_keys():
    """An optimizer saves t, epoch and per parameter its t and state arrays."""
    with pg.using_backend("numpy") as b:
        model = pg.Link(w=pg.Variable(arr(b.xp, [1.0])))
        opt = optimizers.MomentumSGD().setup(model)
        model.w.grad = arr(b.xp, [1.0])
        opt.update()
        target = {}
        serializers.serialize(opt, serializers.DictionarySerializer(target))
    assert sorted(target) == ["epoch", "t", "w/t", "w/v"]


def test_numpy_to_strict_to_numpy(tmp_path):
    """A model and its Adam state go numpy -> array_api_strict -> numpy unchanged, onto each target's backend."""
    with pg.using_backend("numpy") as b:
        src = mlp(0)
        opt = optimizers.Adam().setup(src)
        train(src, opt, b.xp, 2)
        serializers.save_npz(tmp_path / "m.npz", src)
        serializers.save_npz(tmp_path / "o.npz", opt)
    with pg.using_backend("array_api_strict") as b:
        mid = mlp(1)
        mid_opt = optimizers.Adam().setup(mid)
        serializers.load_npz(tmp_path / "m.npz", mid)
        serializers.load_npz(tmp_path / "o.npz", mid_opt)
        strict_type = type(b.xp.asarray(0.0))
        assert type(mid.l1.W.data) is strict_type
        assert type(mid_opt._state_of(mid.l1.W)["m"]) is strict_type
        serializers.save_npz(tmp_path / "m2.npz", mid)
        serializers.save_npz(tmp_path / "o2.npz", mid_opt)
    with pg.using_backend("numpy"):
        back = mlp(2)
        back_opt = optimizers.Adam().setup(back)
        serializers.load_npz(tmp_path / "m2.npz", back)
        serializers.load_npz(tmp_path / "o2.npz", back_opt)
        assert isinstance(back.l1.W.data, np.ndarray)
    for k, v in params(src).items():
        np.testing.assert_array_equal(params(back)[k], v)
    back_params = dict(back.namedparams())
    for name, p in src.namedparams():
        for k in ("m", "v"):
            np.testing.assert_array_equal(to_np(back_opt._state_of(back_params[name])[k]), to_np(opt._state_of(p)[k]))


def test_shape_mismatch_names_the_key_and_shapes_and_changes_nothing(xp, tmp_path):
    """Loading l2/W of shape (2, 4) into (5, 4) raises a ValueError naming both, and no parameter changes."""
    serializers.save_npz(tmp_path / "m.npz", mlp(0))
    other = mlp(1, n_out=5)
    before = params(other)
    with pytest.raises(ValueError, match=r"'l2/W'.*\(2, 4\).*\(5, 4\)"):
        serializers.load_npz(tmp_path / "m.npz", other)
    for k, v in params(other).items():
        np.testing.assert_array_equal(v, before[k])


def test_missing_key_raises_unless_not_strict(xp, tmp_path):
    """A key absent from the file is a KeyError naming it; strict=False leaves that parameter unchanged."""
    serializers.save_npz(tmp_path / "small.npz", pg.Chain(l1=mlp(0).l1))
    target = mlp(1)
    l2_before = params(target)["/l2/W"]
    with pytest.raises(KeyError, match="l2/W"):
        serializers.load_npz(tmp_path / "small.npz", target)
    serializers.load_npz(tmp_path / "small.npz", target, strict=False)
    np.testing.assert_array_equal(params(target)["/l1/W"], params(mlp(0))["/l1/W"])
    np.testing.assert_array_equal(params(target)["/l2/W"], l2_before)


def test_load_keeps_the_parameters_dtype(xp, tmp_path):
    """A float64 file loads into a float32 parameter as float32."""
    serializers.save_npz(tmp_path / "w.npz", pg.Link(w=pg.Variable(arr(xp, [1.5, 2.5], dtype="float64"))))
    link = pg.Link(w=pg.Variable(arr(xp, [0.0, 0.0], dtype="float32")))
    serializers.load_npz(tmp_path / "w.npz", link)
    assert link.w.dtype == xp.float32
    np.testing.assert_array_equal(to_np(link.w), [1.5, 2.5])


def test_uninitialized_parameter_takes_the_saved_array(xp, tmp_path):
    """Linear(None, 4) built on the current backend loads W with the saved shape, on that backend."""
    serializers.save_npz(tmp_path / "l.npz", L.Linear(3, 4))
    lazy = L.Linear(None, 4)
    serializers.load_npz(tmp_path / "l.npz", lazy)
    assert lazy.W.shape == (4, 3)
    assert type(lazy.W.data) is type(xp.asarray(0.0))


def test_file_objects_and_path_prefix(xp):
    """save_npz/load_npz take file objects; path= reads keys under a prefix."""
    buf = io.BytesIO()
    np.savez(buf, **{"model/w": np.array([7.0])})
    buf.seek(0)
    link = pg.Link(w=pg.Variable(arr(xp, [0.0])))
    serializers.load_npz(buf, link, path="model/")
    np.testing.assert_array_equal(to_np(link.w), [7.0])
    out = io.BytesIO()
    serializers.save_npz(out, link, compression=False)
    out.seek(0)
    with np.load(out) as f:
        assert f.files == ["w"]


def test_serializing_something_else_is_a_type_error(tmp_path):
    """save_npz of an object that is neither a Link nor serializable names its type."""
    with pytest.raises(TypeError, match="dict"):
        serializers.save_npz(tmp_path / "x.npz", {})


def test_importing_these_modules_imports_no_array_library():
    """polygrad.serializers, optimizers, optimizer_hooks and computational_graph import numpy lazily."""
    code = (
        "import polygrad.serializers, polygrad.optimizers, polygrad.optimizer_hooks, polygrad.computational_graph\n"
        "import sys, json; print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    mods = set(json.loads(out.stdout.strip().splitlines()[-1]))
    assert not mods & {"numpy", "cupy", "dask", "array_api_strict"}


class Stats(pg.Link):
    """A link with a parameter and two persistent values (Chainer's add_persistent registry)."""

    def __init__(self, xp, mean, n):
        super().__init__(gamma=pg.Variable(arr(xp, [1.0, 1.0])))
        self.avg_mean = arr(xp, mean)
        self.N = n
        self._persistent = ["avg_mean", "N"]


def test_persistent_values_round_trip(xp, tmp_path):
    """Values named in a link's _persistent are saved under its path and loaded back."""
    serializers.save_npz(tmp_path / "s.npz", pg.Chain(bn=Stats(xp, [2.0, 3.0], 7)))
    with np.load(tmp_path / "s.npz") as f:
        assert sorted(f.files) == ["bn/N", "bn/avg_mean", "bn/gamma"]
    target = pg.Chain(bn=Stats(xp, [0.0, 0.0], 0))
    serializers.load_npz(tmp_path / "s.npz", target)
    np.testing.assert_array_equal(to_np(target.bn.avg_mean), [2.0, 3.0])
    assert target.bn.N == 7 and type(target.bn.N) is int
    assert type(target.bn.avg_mean) is type(xp.asarray(0.0))


def test_a_numpy_scalar_persistent_comes_back_a_scalar_of_its_type(tmp_path):
    """np.float32(0.5) as a persistent value came back a 0-d array (unhashable, printed as an array):
    a NumPy scalar loads back as one of its type, as Chainer gives it back; a 0-d array stays one."""
    values = {"f32": np.float32(0.5), "i64": np.int64(3), "b": np.bool_(True), "c64": np.complex64(1 + 2j),
              "f64": np.float64(2.5), "zero_d": np.array(1.5, dtype=np.float32)}
    src, target = pg.Link(), pg.Link()
    for name, value in values.items():
        src.add_persistent(name, value)
        target.add_persistent(name, type(value)(0) if np.ndim(value) == 0 and not isinstance(value, np.ndarray)
                              else np.zeros((), value.dtype))
    serializers.save_npz(tmp_path / "p.npz", src)
    serializers.load_npz(tmp_path / "p.npz", target)
    for name, value in values.items():
        got = getattr(target, name)
        assert type(got) is type(value) and got == value and got.dtype == value.dtype, name


# ---------------------------------------------------------------------------
# Chainer's protocol: a child's own serialize() (findings S12)
# ---------------------------------------------------------------------------


class Counter(pg.Link):
    """A link with its own serialize(), saving a step count besides its parameter (Chainer's protocol)."""

    def __init__(self, xp, step=7):
        super().__init__()
        with self.init_scope():
            self.w = pg.Variable(arr(xp, [1.0, 2.0]))
        self.step = step

    def serialize(self, serializer):
        self.w.data = serializer("w", self.w.data)
        self.step = serializer("step", self.step)


def test_a_childs_own_serialize_is_saved_and_loaded(xp, tmp_path):
    """Chain(c=Counter()) saves c/step through the child's serialize(), and loads it back."""
    serializers.save_npz(tmp_path / "c.npz", pg.Chain(c=Counter(xp, step=7)))
    with np.load(tmp_path / "c.npz") as f:
        assert sorted(f.files) == ["c/step", "c/w"]
    target = pg.Chain(c=Counter(xp, step=0))
    serializers.load_npz(tmp_path / "c.npz", target)
    assert target.c.step == 7


def test_links_serialize_is_chainers_protocol(xp):
    """Link.serialize and Chain.serialize exist and save parameters under their paths, as Chainer's."""
    target = {}
    pg.Chain(l1=L.Linear(3, 2)).serialize(serializers.DictionarySerializer(target))
    assert sorted(target) == ["l1/W", "l1/b"]


def test_a_subclass_extending_serialize_keeps_its_parameters(xp, tmp_path):
    """A link that calls super().serialize() and adds a value saves both, nested two chains deep."""

    class Extra(L.Linear):
        def __init__(self):
            super().__init__(2, 2)
            self.seen = 3

        def serialize(self, serializer):
            super().serialize(serializer)
            self.seen = serializer("seen", self.seen)

    serializers.save_npz(tmp_path / "e.npz", pg.Chain(block=pg.Chain(e=Extra())))
    with np.load(tmp_path / "e.npz") as f:
        assert sorted(f.files) == ["block/e/W", "block/e/b", "block/e/seen"]


def test_loading_through_a_childs_serialize_is_all_or_nothing(xp, tmp_path):
    """A failing key after a child's custom value leaves the child's value and every parameter unchanged."""
    serializers.save_npz(tmp_path / "c.npz", pg.Chain(c=Counter(xp, step=7)))
    target = pg.Chain(c=Counter(xp, step=0), l=L.Linear(3, 2))
    before = params(target)
    with pytest.raises(KeyError, match="l/W"):
        serializers.load_npz(tmp_path / "c.npz", target)
    assert target.c.step == 0
    for k, v in params(target).items():
        np.testing.assert_array_equal(v, before[k])


def test_a_failed_load_puts_back_the_gradients_too(xp, tmp_path):
    """A load that initialized a parameter waiting for zerograds()'s zeros and then failed put
    its array back to None but kept the zero gradient, of a shape it no longer had."""

    class Late(pg.Link):
        def __init__(self, n):
            super().__init__()
            self.n = n

        def serialize(self, serializer):
            self.n = serializer("n", self.n)
            if serializer.loading and self.n:  # a key the file lacks, asked only in the second pass
                serializer("missing", 0)

    serializers.save_npz(tmp_path / "l.npz", pg.Chain(l=L.Linear(3, 2), z=Late(1)))
    target = pg.Chain(l=L.Linear(None, 2), z=Late(0))
    target.zerograds()
    with pytest.raises(KeyError, match="missing"):
        serializers.load_npz(tmp_path / "l.npz", target)
    assert target.l.W.data is None and target.l.W.grad is None


def test_a_failed_second_pass_puts_the_links_back(xp, tmp_path):
    """A serialize() whose keys depend on what it loaded, failing late, leaves the link as it was."""

    class Dependent(pg.Link):
        def __init__(self):
            super().__init__(w=pg.Variable(arr(xp, [0.0])))
            self.n = 0

        def serialize(self, serializer):
            self.n = serializer("n", self.n)
            self.w.data = serializer("w", self.w.data)
            if serializer.loading and self.n:  # only once n = 1 is loaded: a key the file lacks
                serializer("missing", 0)

    src = Dependent()
    src.n = 1
    src.w.data = arr(xp, [5.0])
    serializers.save_npz(tmp_path / "d.npz", src)
    target = Dependent()
    with pytest.raises(KeyError, match="missing"):
        serializers.load_npz(tmp_path / "d.npz", target)
    assert target.n == 0
    np.testing.assert_array_equal(to_np(target.w), [0.0])


def test_a_failed_second_pass_puts_back_a_snapshot_of_model_optimizer_and_iterator(xp, tmp_path):
    """A snapshot that is not a link (a model, its optimizer, an iterator and a value whose serialize
    refuses only what it loaded) failing in the second pass kept the model's new weights, the
    optimizer's count and the iterator's position: only the links of the object itself were put back."""

    class Picky:
        def __init__(self, n):
            self.n = n

        def serialize(self, serializer):
            n = serializer("n", self.n)
            if serializer.loading and n > 3:  # refused in the second pass only (it does not ask stored())
                raise ValueError("Picky: n > 3")
            self.n = n

    class Snapshot:
        def __init__(self, seed, n):
            self.model = mlp(seed)
            self.opt = optimizers.Adam().setup(self.model)
            self.it = pg.iterators.SerialIterator(list(range(10)), 3, shuffle=False)
            self.picky = Picky(n)

        def serialize(self, serializer):
            for name in ("model", "opt", "it", "picky"):
                getattr(self, name).serialize(serializer[name])

    src = Snapshot(0, 5)
    train(src.model, src.opt, xp, 2)
    next(src.it)
    serializers.save_npz(tmp_path / "s.npz", src)
    target = Snapshot(1, 0)
    train(target.model, target.opt, xp, 1)
    before, m_before = params(target.model), to_np(target.opt._state_of(target.model.l1.W)["m"])
    with pytest.raises(ValueError, match="Picky"):
        serializers.load_npz(tmp_path / "s.npz", target)
    for k, v in params(target.model).items():
        np.testing.assert_array_equal(v, before[k])
    assert target.opt.t == 1 and target.opt._state_of(target.model.l1.W)["t"] == 1
    np.testing.assert_array_equal(to_np(target.opt._state_of(target.model.l1.W)["m"]), m_before)
    assert (target.it.current_position, target.it.epoch, target.picky.n) == (0, 0, 0)


def test_batch_normalization_running_averages_are_saved(xp, tmp_path):
    """BatchNormalization's avg_mean and avg_var go into the file and come back (docs/training.md)."""
    bn = L.BatchNormalization(2, dtype="float64")
    bn(arr(xp, [[1.0, 2.0], [3.0, 6.0]]))
    serializers.save_npz(tmp_path / "bn.npz", pg.Chain(bn=bn))
    with np.load(tmp_path / "bn.npz") as f:
        assert sorted(f.files) == ["bn/avg_mean", "bn/avg_var", "bn/beta", "bn/gamma"]
    target = pg.Chain(bn=L.BatchNormalization(2, dtype="float64"))
    serializers.load_npz(tmp_path / "bn.npz", target)
    np.testing.assert_allclose(to_np(target.bn.avg_mean), to_np(bn.avg_mean))
    np.testing.assert_allclose(to_np(target.bn.avg_var), to_np(bn.avg_var))


# ---------------------------------------------------------------------------
# File errors (findings U7)
# ---------------------------------------------------------------------------


def test_save_and_load_use_the_name_given(xp, tmp_path):
    """save_npz('model') writes 'model' (no .npz added, as in Chainer) and load_npz('model') reads it."""
    link = pg.Link(w=pg.Variable(arr(xp, [1.0, 2.0])))
    serializers.save_npz(tmp_path / "model", link)
    assert (tmp_path / "model").exists() and not (tmp_path / "model.npz").exists()
    other = pg.Link(w=pg.Variable(arr(xp, [0.0, 0.0])))
    serializers.load_npz(str(tmp_path / "model"), other)
    np.testing.assert_array_equal(to_np(other.w), [1.0, 2.0])


def test_a_missing_file_points_at_the_npz_one(xp, tmp_path):
    """load_npz('model') when only 'model.npz' exists (numpy's savez naming) says so."""
    np.savez(tmp_path / "model", w=np.zeros(2))
    with pytest.raises(FileNotFoundError, match=r"no such file .*model'.*there is .*model\.npz"):
        serializers.load_npz(tmp_path / "model", pg.Link(w=pg.Variable(arr(xp, [0.0, 0.0]))))


def test_loading_a_npy_file_says_it_is_one(xp, tmp_path):
    """A .npy file is refused as one array, not an archive (not a context-manager TypeError)."""
    np.save(tmp_path / "plain.npy", np.zeros(3))
    link = pg.Link(w=pg.Variable(arr(xp, [0.0, 0.0, 0.0])))
    with pytest.raises(ValueError, match=r"plain\.npy' holds one array of shape \(3,\) \(a \.npy file\), not an \.npz archive"):
        serializers.load_npz(tmp_path / "plain.npy", link)


def test_a_member_that_is_not_an_array_is_named(xp, tmp_path):
    """An archive member that is not a .npy file is refused naming the key, not with 'bytes has no shape'."""
    import zipfile

    with zipfile.ZipFile(tmp_path / "odd.npz", "w") as z:
        z.writestr("w", b"not an array")
    link = pg.Link(w=pg.Variable(arr(xp, [0.0])))
    with pytest.raises(ValueError, match=r"'w' in the file .*odd\.npz' is not an array but a bytes"):
        serializers.load_npz(tmp_path / "odd.npz", link)
    np.testing.assert_array_equal(to_np(link.w), [0.0])


def test_a_file_that_is_no_archive_is_named(xp, tmp_path):
    """Text in a file is refused as 'cannot read ... as an .npz archive'."""
    (tmp_path / "text.npz").write_text("hello")
    with pytest.raises(ValueError, match=r"cannot read .*text\.npz' as an \.npz archive"):
        serializers.load_npz(tmp_path / "text.npz", pg.Link(w=pg.Variable(arr(xp, [0.0]))))


def test_a_failed_save_leaves_the_old_file(xp, tmp_path):
    """Saving over a file writes a temporary one first: a save that fails leaves the old file whole."""
    link = pg.Link(w=pg.Variable(arr(xp, [1.0])))
    serializers.save_npz(tmp_path / "m.npz", link)

    class Broken(pg.Link):
        def serialize(self, serializer):
            serializer("x", object())

    with pytest.raises(Exception):
        serializers.save_npz(tmp_path / "m.npz", Broken())
    with np.load(tmp_path / "m.npz") as f:
        assert f.files == ["w"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.npz"]


# ---------------------------------------------------------------------------
# Values that are None (lazy parameters, persistent values set later): saved
# and loaded as Chainer does (p23_state #4)
# ---------------------------------------------------------------------------


class LazyStat(pg.Link):
    """A link whose persistent running value is None until its first call (Chainer's add_persistent)."""

    def __init__(self):
        super().__init__()
        self.add_persistent("mean", None)

    def forward(self, x):
        self.mean = pg.mean(x, axis=0).data
        return x


def lazy_model():
    return pg.Chain(l1=L.Linear(None, 3), l2=L.Linear(3, 2), s=LazyStat())


def test_a_model_saved_before_its_first_call_loads_into_a_fresh_one(xp, tmp_path):
    """Lazy W and a None persistent value are listed under 'polygrad:none' (read without pickle)
    and load back as None into a fresh model, which then runs; the other values load as usual."""
    pg.seed(0)
    model = lazy_model()
    serializers.save_npz(tmp_path / "m.npz", model)
    with np.load(tmp_path / "m.npz", allow_pickle=False) as f:
        assert sorted(f.files) == ["l1/b", "l2/W", "l2/b", serializers.NONE_KEY]
        assert sorted(f[serializers.NONE_KEY].tolist()) == ["l1/W", "s/mean"]
    fresh = lazy_model()
    serializers.load_npz(tmp_path / "m.npz", fresh)
    assert fresh.l1.W.data is None and fresh.s.mean is None
    np.testing.assert_array_equal(to_np(fresh.l2.W), to_np(model.l2.W))
    y = fresh.l2(fresh.l1(fresh.s(arr(xp, [[1.0, 2.0]], dtype="float32"))))
    assert y.shape == (1, 2) and fresh.l1.W.shape == (3, 2)


def test_none_in_the_file_makes_an_initialized_value_none_again(xp, tmp_path):
    """The file is the state that was saved: a None there loads as None into a parameter that was
    initialized since (its gradient goes too) and into a persistent value; the next call initializes them anew."""
    serializers.save_npz(tmp_path / "m.npz", lazy_model())
    target = lazy_model()
    x = arr(xp, [[1.0, 2.0]], dtype="float32")
    pg.sum(target.l2(target.l1(target.s(x)))).backward()
    assert target.l1.W.grad is not None and target.s.mean is not None
    serializers.load_npz(tmp_path / "m.npz", target)
    assert target.l1.W.data is None and target.l1.W.grad is None and target.s.mean is None
    assert target.l2(target.l1(target.s(x))).shape == (1, 2)


def test_strict_loading_still_refuses_a_key_the_file_lacks(xp, tmp_path):
    """A file that lists some None values still raises KeyError for a key it neither holds nor lists."""
    serializers.save_npz(tmp_path / "m.npz", pg.Chain(l1=L.Linear(None, 3)))
    target = pg.Chain(l1=L.Linear(None, 3), l2=L.Linear(3, 2))
    with pytest.raises(KeyError, match="'l2/W' is not in the file"):
        serializers.load_npz(tmp_path / "m.npz", target)
    serializers.load_npz(tmp_path / "m.npz", target, strict=False)
    assert target.l1.W.data is None and target.l2.W.shape == (2, 3)


def test_the_none_list_key_is_reserved(xp, tmp_path):
    """A serialize that saves under 'polygrad:none' is refused (it would be read as the list of None values)."""

    class Odd(pg.Link):
        def serialize(self, serializer):
            serializer(serializers.NONE_KEY, 1)

    with pytest.raises(ValueError, match="reserved"):
        serializers.save_npz(tmp_path / "m.npz", Odd())


# ---------------------------------------------------------------------------
# A parameter not initialized yet takes a loaded array where its link would
# have created it: its backend and dtype (p23_state #5)
# ---------------------------------------------------------------------------


def _other(name):
    return "array_api_strict" if name == "numpy" else "numpy"


@pytest.mark.parametrize("how", ["backend=", "to_backend", "using_backend"])
def test_a_lazy_link_loads_onto_its_own_backend(xp, backend_name, tmp_path, how):
    """Linear(None, 2) made for another backend (backend=, to_backend, or built inside using_backend)
    and loaded outside it gets W on that backend, beside b, and runs there."""
    other = _other(backend_name)
    serializers.save_npz(tmp_path / "l.npz", L.Linear(3, 2))
    if how == "backend=":
        lazy = L.Linear(None, 2, backend=other)
    elif how == "to_backend":
        lazy = L.Linear(None, 2).to_backend(other)
    else:
        with pg.using_backend(other):
            lazy = L.Linear(None, 2)
    serializers.load_npz(tmp_path / "l.npz", lazy)
    array_types = pg.get_backend(other).array_types
    assert isinstance(lazy.W.data, array_types) and isinstance(lazy.b.data, array_types)
    assert lazy(pg.to_backend(xp.ones((1, 3), dtype=xp.float32), other)).shape == (1, 2)


def test_a_lazy_link_without_other_parameters_loads_onto_its_backend(xp, backend_name, tmp_path):
    """LayerNormalization(backend=other), all of whose parameters are lazy, loads them on that backend."""
    other = _other(backend_name)
    serializers.save_npz(tmp_path / "n.npz", L.LayerNormalization(3))
    lazy = L.LayerNormalization(backend=other)
    serializers.load_npz(tmp_path / "n.npz", lazy)
    assert isinstance(lazy.gamma.data, pg.get_backend(other).array_types)


class _Snapshot:
    """Chainer's trainer snapshot: a model, then its optimizer, in one file."""

    def __init__(self, model, opt):
        self.model, self.opt = model, opt

    def serialize(self, serializer):
        self.model.serialize(serializer["model"])
        self.opt.serialize(serializer["opt"])


def test_a_lazy_model_and_its_optimizer_load_from_one_file(xp, tmp_path):
    """Linear(None, 2) and its Adam, resumed from one snapshot before the model's first call (Chainer's
    MNIST example resuming), failed: the optimizer's first pass found W not initialized, as the model's
    own first pass leaves it; the optimizer now checks its state against the array W will get."""
    x = arr(xp, [[1.0, -2.0, 0.5]], dtype="float32")
    model = L.Linear(None, 2)
    saved = _Snapshot(model, optimizers.Adam().setup(model))
    saved.opt.update(lambda: pg.sum(model(x) ** 2))
    serializers.save_npz(tmp_path / "snap.npz", saved)
    fresh = L.Linear(None, 2)
    resumed = _Snapshot(fresh, optimizers.Adam().setup(fresh))
    serializers.load_npz(tmp_path / "snap.npz", resumed)
    assert resumed.opt.t == 1
    np.testing.assert_array_equal(to_np(fresh.W), to_np(model.W))
    for k in ("m", "v"):
        np.testing.assert_array_equal(to_np(resumed.opt._state_of(fresh.W)[k]), to_np(saved.opt._state_of(model.W)[k]))
    with np.load(tmp_path / "snap.npz") as f:  # a state of another shape than W's: refused, nothing loaded
        stored = dict(f)
    stored["opt/W/m"] = np.zeros((2, 4), np.float32)
    np.savez(tmp_path / "bad.npz", **stored)
    fresh = L.Linear(None, 2)
    resumed = _Snapshot(fresh, optimizers.Adam().setup(fresh))
    with pytest.raises(ValueError, match="opt/W/m"):
        serializers.load_npz(tmp_path / "bad.npz", resumed)
    assert fresh.W.data is None and resumed.opt.t == 0


def test_a_lazy_link_loads_in_its_own_dtype(xp, tmp_path):
    """Linear(None, 2, dtype="float64") from a float32 file: W float64 like b (it was float32 beside a float64 b)."""
    serializers.save_npz(tmp_path / "l.npz", L.Linear(3, 2))
    lazy = L.Linear(None, 2, dtype="float64")
    serializers.load_npz(tmp_path / "l.npz", lazy)
    assert lazy.W.dtype == xp.float64 and lazy.b.dtype == xp.float64


def test_a_none_persistent_value_loads_onto_the_links_backend_in_the_files_dtype(xp, backend_name, tmp_path):
    """A persistent value that is None takes the loaded array on its link's backend, keeping the file's dtype."""
    other = _other(backend_name)
    saved = LazyStat()
    saved.mean = arr(xp, [1, 2], dtype="int32")
    serializers.save_npz(tmp_path / "s.npz", saved)
    target = LazyStat().to_backend(other)
    serializers.load_npz(tmp_path / "s.npz", target)
    b = pg.get_backend(other)
    assert isinstance(target.mean, b.array_types) and target.mean.dtype == b.xp.int32


# ---------------------------------------------------------------------------
# Against Chainer 7.8.1 (stop 26): casts that change values, persistents that are not arrays
# ---------------------------------------------------------------------------


class Kinds(pg.Link):
    def __init__(self, xp):
        super().__init__()
        self.add_persistent("hist", xp.asarray([0, 0], dtype=xp.int64))
        self.add_persistent("flags", xp.asarray([False, False]))
        self.add_persistent("z", xp.asarray([0.0], dtype=xp.float32))
        self.add_persistent("steps", 0)
        self.add_persistent("done", False)


@pytest.mark.parametrize("key, stored", [("hist", [2.7, -1.5]), ("flags", [0, 2]), ("z", [1 + 2j]),
                                         ("steps", 2.7), ("done", 5)])
def test_a_value_of_a_higher_kind_is_refused_on_load(xp, tmp_path, key, stored):
    """float into int, int into bool, complex into real (arrays and Python scalars) were cast,
    changing the values silently (hist -> [2, -1], flags -> [False, True], z -> [1.0], steps -> 2,
    done -> True); Chainer refuses them (same_kind). Nothing is changed."""
    link = Kinds(xp)
    saved = {k: np.asarray(v) for k, v in dict(hist=[1, 2], flags=[True, False], z=[3.0], steps=1, done=True).items()}
    saved[key] = np.asarray(stored)
    np.savez(tmp_path / "k.npz", **saved)
    before = {k: to_np(getattr(link, k)) for k in saved}
    with pytest.raises(TypeError, match=f"'{key}' .* cannot take without changing them"):
        serializers.load_npz(tmp_path / "k.npz", link)
    for k, v in before.items():
        np.testing.assert_array_equal(to_np(getattr(link, k)), v)


def test_a_value_of_a_higher_kind_is_refused_into_a_lazy_parameter(xp, tmp_path):
    """A complex W loaded into Linear(None, 3) before its first call became float32 with its
    imaginary part dropped, where an initialized Linear(4, 3) refuses it; refused the same way,
    before anything changes."""
    np.savez(tmp_path / "c.npz", W=np.full((3, 4), 1 + 2j))
    lazy = L.Linear(None, 3, nobias=True)
    with pytest.raises(TypeError, match="Linear.serialize: 'W' holds .*complex128 .* cannot take without changing"):
        serializers.load_npz(tmp_path / "c.npz", lazy)
    assert lazy.W.data is None


def test_copyparams_refuses_a_higher_kind_into_a_lazy_parameter(xp):
    """copyparams of a complex W into Linear(None, 3) dropped the imaginary part (into an
    initialized one it is refused): refused, and the target is left as it was."""
    src = L.Linear(4, 3, nobias=True)
    src.W.data = xp.asarray(np.full((3, 4), 1 + 2j))
    lazy = L.Linear(None, 3, nobias=True)
    with pytest.raises(TypeError, match="copyparams: parameter '/W' holds .*complex128 .* cannot take without changing"):
        lazy.copyparams(src)
    assert lazy.W.data is None


def test_a_value_of_the_same_or_a_lower_kind_loads(xp, tmp_path):
    """int into float, bool into int, float64 into float32, int into a Python float: loaded."""
    np.savez(tmp_path / "k.npz", hist=np.asarray([True, False]), flags=np.asarray([True, False]),
             z=np.asarray([7], dtype=np.int16), steps=np.asarray(3), done=np.asarray(False))
    link = Kinds(xp)
    serializers.load_npz(tmp_path / "k.npz", link)
    np.testing.assert_array_equal(to_np(link.hist), [1, 0])
    np.testing.assert_array_equal(to_np(link.z), [7.0])
    assert link.z.dtype == xp.float32 and link.steps == 3 and type(link.steps) is int


def test_a_variable_persistent_is_kept_as_its_array(xp, tmp_path):
    """add_persistent("avg", pg.zeros(3)) (a Variable) saved but could not be loaded (no backend claims
    a Variable), and copyparams shared it between links. A persistent value keeps the array, also
    when a Variable is assigned to it later."""
    class Stat(pg.Link):
        def __init__(self):
            super().__init__()
            self.add_persistent("avg", pg.asarray(xp.zeros(3)))

    s = Stat()
    assert not isinstance(s.avg, pg.Variable)
    s.avg = pg.Variable(s.avg) + 5
    assert not isinstance(s.avg, pg.Variable)
    serializers.save_npz(tmp_path / "s.npz", s)
    t = Stat()
    serializers.load_npz(tmp_path / "s.npz", t)
    np.testing.assert_array_equal(to_np(t.avg), [5.0, 5.0, 5.0])
    c = Stat()
    c.copyparams(s)
    assert c.avg is not s.avg
    np.testing.assert_array_equal(to_np(c.avg), [5.0, 5.0, 5.0])


def test_a_value_that_is_not_storable_names_its_key(tmp_path):
    """A list or str persistent: save and load name the key and what a file stores (a 'no backend
    claims ... install a plugin' TypeError on save, an AttributeError on load before)."""
    class Tagged(pg.Link):
        def __init__(self):
            super().__init__()
            self.add_persistent("sizes", [3, 4])

    with pytest.raises(TypeError, match="cannot save 'sizes', a list: a .npz file stores arrays"):
        serializers.save_npz(tmp_path / "t.npz", Tagged())
    np.savez(tmp_path / "t.npz", sizes=np.asarray([5, 6]))
    with pytest.raises(TypeError, match="cannot load 'sizes' into a list"):
        serializers.load_npz(tmp_path / "t.npz", Tagged())


@pytest.mark.parametrize("value, what", [(2**64, "the int 18446744073709551616"), (-2**63 - 1, "the int -9223"),
                                         (np.array([1, "a"], dtype=object), "an array of Python objects")])
def test_a_value_the_file_would_pickle_is_refused_on_save(tmp_path, value, what):
    """A Python int past int64 and uint64 (a counter) or an object array was written pickled, and
    load_npz (no pickle) then refused the whole file when it was needed: refused on save, naming the key."""
    link = L.Linear(2, 2)
    link.add_persistent("count", value)
    with pytest.raises(TypeError, match=f"cannot save 'count', {what}.*load_npz reads no pickle"):
        serializers.save_npz(tmp_path / "c.npz", link)
    assert not (tmp_path / "c.npz").exists()


def test_a_persistent_name_assigned_a_variable_in_init_scope_becomes_a_parameter():
    """add_persistent('W', None) then `self.W = Variable(...)` in init_scope: a parameter, no longer
    persistent (Chainer's); the unwrapping of persistent Variables made it a plain array."""
    class Late(pg.Link):
        def __init__(self):
            super().__init__()
            self.add_persistent("W", None)
            with self.init_scope():
                self.W = pg.Variable(np.ones(2))

    link = Late()
    assert [n for n, _ in link.namedparams()] == ["/W"] and isinstance(link.W, pg.Variable)
    assert "W" not in link._persistent


def test_a_variable_handed_to_the_serializer_is_refused_on_save(tmp_path):
    """A custom serialize handing a Variable saved it, but it could not be loaded back."""
    class Holder(pg.Link):
        def __init__(self):
            super().__init__()
            self.w = pg.Variable(np.ones(2))

        def serialize(self, serializer):
            self.w = serializer("w", self.w)

    with pytest.raises(TypeError, match="cannot save 'w', a Variable.*give its .data"):
        serializers.save_npz(tmp_path / "h.npz", Holder())


def test_a_persistent_value_cannot_take_a_parameters_name_and_deleting_one_forgets_it(tmp_path):
    """add_persistent('w') over a parameter made w both (save_npz then failed); del of a persistent
    value left its name registered (save_npz then failed)."""
    link = pg.Link(w=pg.Variable(np.ones(2)))
    with pytest.raises(AttributeError, match="parameter of that name"):
        link.add_persistent("w", np.zeros(2))
    link.add_persistent("n", 3)
    del link.n
    serializers.save_npz(tmp_path / "l.npz", link)


def test_an_installed_numpy_plugin_without_the_npz_hooks_is_named(monkeypatch, tmp_path):
    """A polygrad-numpy older than its npz hooks: the message said to install polygrad-numpy,
    which was installed."""
    import polygrad._registry as R

    monkeypatch.setattr(R.Backend, "can_do_npz", lambda self: False)
    with pytest.raises(RuntimeError, match=r"plugin providing the numpy backend \(plugin .numpy. of polygrad-numpy\), which has none.*upgrade it"):
        pg.serializers.save_npz(tmp_path / "m.npz", pg.links.Linear(2, 2))


class _Flaky:
    """A data set whose read of example ``fail_at`` raises once (a transient I/O error)."""

    def __init__(self, n):
        self.n, self.fail_at = n, None

    def __len__(self):
        return self.n

    def __getitem__(self, k):
        if k == self.fail_at:
            self.fail_at = None
            raise OSError(f"transient read error at {k}")
        return k


def _state(it):
    return it.epoch, it.current_position, it.is_new_epoch, it.epoch_detail, it.previous_epoch_detail, it._order


@pytest.mark.parametrize("shuffle", [False, True])
def test_a_serial_iterator_whose_read_fails_at_an_epochs_end_is_left_as_it_was(shuffle):
    """A read failing while the minibatch is completed from the next epoch left the iterator
    half-advanced (epoch 1, position 0, is_new_epoch, a new order drawn): the retry lost the
    examples of the boundary and never reported it. Now the state is as before, and the retry
    gives what an iterator without the failure gives (the same order drawn, not a new one)."""
    ref_ds, ds = _Flaky(5), _Flaky(5)
    ref, it = (pg.iterators.SerialIterator(d, 2, order_sampler=pg.iterators.ShuffleOrderSampler(0)) if shuffle else
               pg.iterators.SerialIterator(d, 2, shuffle=False) for d in (ref_ds, ds))
    for _ in range(2):
        assert next(ref) == next(it)
    expected = next(ref)
    before = _state(it)
    # the example of the next epoch that completes the minibatch
    ds.fail_at = expected[-1]
    with pytest.raises(OSError, match="transient"):
        next(it)
    assert _state(it) == before
    assert next(it) == expected and _state(it) == _state(ref)
    for _ in range(4):
        assert next(it) == next(ref)


def test_a_serial_iterator_without_repeat_whose_order_sampler_fails_keeps_its_last_batch():
    """repeat=False: an order sampler that fails at the end of the epoch lost the last minibatch."""
    calls = []

    class Once(pg.iterators.OrderSampler):
        def __call__(self, order, position):
            calls.append(position)
            if len(calls) == 2:  # the draw at the epoch's end
                raise RuntimeError("sampler failed")
            return list(range(len(order)))

    it = pg.iterators.SerialIterator(list(range(3)), 2, repeat=False, order_sampler=Once())
    assert next(it) == [0, 1]
    with pytest.raises(RuntimeError, match="sampler failed"):
        next(it)
    assert (it.epoch, it.current_position) == (0, 2)
    assert next(it) == [2] and it.epoch == 1 and it.is_new_epoch
    with pytest.raises(StopIteration):
        next(it)


def test_a_save_through_a_symlink_writes_its_target(xp, tmp_path):
    """save_npz("latest.npz") where latest.npz links to run3.npz: the rename replaced the link with a
    regular file and run3.npz (what the link named) kept the old checkpoint."""
    old, new = pg.Link(w=pg.Variable(arr(xp, [1.0]))), pg.Link(w=pg.Variable(arr(xp, [2.0])))
    target, link = tmp_path / "run3.npz", tmp_path / "latest.npz"
    serializers.save_npz(target, old)
    link.symlink_to(target.name)  # (relative, as links in a checkpoint folder usually are)
    serializers.save_npz(link, new)
    assert link.is_symlink()
    with np.load(target) as f:
        np.testing.assert_array_equal(f["w"], [2.0])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latest.npz", "run3.npz"]


def test_a_save_gives_a_new_file_the_umasks_mode_and_keeps_an_existing_files(xp, tmp_path):
    """The temporary file of mkstemp made every checkpoint 0o600, whatever the umask, and an existing
    0o644 file became 0o600 at the next save (another user's evaluation job could no longer read it)."""
    import os
    import stat

    link = pg.Link(w=pg.Variable(arr(xp, [1.0])))
    old = os.umask(0o022)
    try:
        serializers.save_npz(tmp_path / "new.npz", link)
        (tmp_path / "old.npz").write_bytes(b"")
        os.chmod(tmp_path / "old.npz", 0o640)
        serializers.save_npz(tmp_path / "old.npz", link)
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "new.npz").st_mode) == 0o644
    assert stat.S_IMODE(os.stat(tmp_path / "old.npz").st_mode) == 0o640


def test_a_save_into_a_folder_that_does_not_exist_names_the_path_given(xp, tmp_path):
    """The FileNotFoundError named the random temporary file next to it ('.polygrad-3f9c....npz.tmp')."""
    target = tmp_path / "no_such_folder" / "model.npz"
    with pytest.raises(FileNotFoundError) as info:
        serializers.save_npz(target, pg.Link(w=pg.Variable(arr(xp, [1.0]))))
    assert info.value.filename == str(target) and ".tmp" not in str(info.value)
    assert "polygrad.save_npz" in str(info.value) and not (tmp_path / "no_such_folder").exists()


@pytest.mark.parametrize("src, lazy, shape, expected", [
    (lambda: L.Linear(4, 3, nobias=True), lambda: L.Linear(None, 5, nobias=True), r"\(3, 4\)", r"\(5, None\)"),
    (lambda: L.Convolution2D(2, 3, 5, nobias=True), lambda: L.Convolution2D(None, 5, 3, nobias=True),
     r"\(3, 2, 5, 5\)", r"\(5, None, 3, 3\)"),
    (lambda: L.Convolution2D(2, 5, 5, nobias=True), lambda: L.Convolution2D(None, 5, 3, nobias=True),
     r"\(5, 2, 5, 5\)", r"\(5, None, 3, 3\)"),
])
def test_a_lazy_layer_refuses_a_file_of_another_out_size_or_ksize(xp, tmp_path, src, lazy, shape, expected):
    """Linear(None, 5) took the W of a Linear(4, 3) file and then gave 3 features (Convolution2D(None, 5,
    3) another out_channels and ksize): only the size it infers may come from the file; nothing loads."""
    serializers.save_npz(tmp_path / "m.npz", pg.Chain(a=L.Linear(2, 2), l=src()))
    target = pg.Chain(a=L.Linear(2, 2), l=lazy())
    before = to_np(target.a.W)
    match = rf"'l/W': an array of shape {shape} does not fit W of \w+, of shape {expected}"
    with pytest.raises(ValueError, match=match):
        serializers.load_npz(tmp_path / "m.npz", target)
    assert target.l.W.data is None
    np.testing.assert_array_equal(to_np(target.a.W), before)
    serializers.save_npz(tmp_path / "ok.npz", pg.Chain(a=L.Linear(2, 2), l=lazy()))  # (None saved: still fine)
    serializers.load_npz(tmp_path / "ok.npz", target)


class _ModelUnderPath:
    """An object saving its model under 'model/' (a trainer's snapshot)."""

    def __init__(self, model):
        self.model = model

    def serialize(self, serializer):
        self.model.serialize(serializer["model"])


def test_a_path_without_its_slash_is_named_and_strict_false_loading_nothing_is_refused(xp):
    """path='model' reads 'modell1/W': the KeyError named only that key and advised strict=False, with
    which the load then read nothing, returned and said nothing (the model kept its random weights)."""
    buf = io.BytesIO()
    serializers.save_npz(buf, _ModelUnderPath(pg.Chain(l1=L.Linear(2, 2))))
    fresh = pg.Chain(l1=L.Linear(2, 2))
    before = to_np(fresh.l1.W)
    for strict in (True, False):
        buf.seek(0)
        with pytest.raises(KeyError, match=r"'modell1/W'.*under 'model/' \('model/l1/W', 'model/l1/b'\): did you "
                                           r"mean path='model/'\?") as info:
            serializers.load_npz(buf, fresh, path="model", strict=strict)
        assert "pass strict=False" not in str(info.value)
    np.testing.assert_array_equal(to_np(fresh.l1.W), before)
    buf.seek(0)
    with pytest.raises(KeyError, match=r"none of the 2 keys read \('l2/W', 'l2/b'\) is in the file.*"
                                       r"no key of the file starts with path='l2/'"):
        serializers.load_npz(buf, L.Linear(2, 2), path="l2/", strict=False)
    buf.seek(0)
    with pytest.raises(KeyError, match=r"'model/l2/W' is not in the file.*under 'model/' it holds 'model/l1/W', "
                                       r"'model/l1/b'; pass strict=False"):
        serializers.load_npz(buf, pg.Chain(l1=L.Linear(2, 2), l2=L.Linear(2, 2)), path="model/")
    buf.seek(0)
    serializers.load_npz(buf, pg.Chain(l1=L.Linear(2, 2), l2=L.Linear(2, 2)), path="model/", strict=False)


def test_a_serialize_calling_serialize_keeps_one_first_pass(xp):
    """serializers.serialize(child, s['a']) inside an object's serialize ended the first (checking) pass
    of the whole load at its own end; with strict=False a child missing from the file is no error
    while another part of the object loads."""

    class Outer:
        def __init__(self):
            self.a, self.b = L.Linear(2, 2), L.Linear(2, 2)

        def serialize(self, s):
            serializers.serialize(self.a, s["a"])
            self.b.serialize(s["b"])

    src = Outer()
    buf = io.BytesIO()
    serializers.save_npz(buf, pg.Chain(b=src.b))
    buf.seek(0)
    dst = Outer()
    a_before = to_np(dst.a.W)
    serializers.load_npz(buf, dst, strict=False)
    np.testing.assert_array_equal(to_np(dst.b.W), to_np(src.b.W))
    np.testing.assert_array_equal(to_np(dst.a.W), a_before)

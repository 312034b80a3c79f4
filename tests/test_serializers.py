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
        assert type(mid_opt._states["/l1/W"]["m"]) is strict_type
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
    for name in opt._states:
        for k in ("m", "v"):
            np.testing.assert_array_equal(to_np(back_opt._states[name][k]), to_np(opt._states[name][k]))


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
    """Linear(None, 4) loads W with the saved shape, on the current backend."""
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

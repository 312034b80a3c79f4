"""Optimizer state across copies, pickles, backends and partial loads."""

from __future__ import annotations

import copy
import io
import pickle

import numpy as np
import pytest

import polygrad as pg
import polygrad.links as L
from polygrad import optimizer_hooks, optimizers, serializers

X = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)


def _model_and_adam():
    pg.seed(0)
    model = pg.Chain(l1=L.Linear(3, 4), l2=L.Linear(4, 2))
    opt = optimizers.Adam(alpha=0.05).setup(model)
    opt.add_hook(optimizer_hooks.WeightDecay(1e-3))
    opt.add_hook(optimizer_hooks.GradientClipping(1.0))
    return model, opt


def _train(model, opt, steps):
    for _ in range(steps):
        opt.update(lambda: pg.sum(model.l2(pg.tanh(model.l1(X))) ** 2))


def _assert_same(model_a, opt_a, model_b, opt_b):
    assert opt_a.t == opt_b.t
    pa, pb = dict(model_a.namedparams()), dict(model_b.namedparams())
    assert list(pa) == list(pb)
    for name in pa:
        assert pa[name] is not pb[name]
        np.testing.assert_array_equal(pa[name].data, pb[name].data, err_msg=name)
        sa, sb = opt_a._state_of(pa[name]), opt_b._state_of(pb[name])
        assert sa["t"] == sb["t"]
        for k in opt_a.state_names:
            np.testing.assert_array_equal(sa[k], sb[k], err_msg=f"{name}/{k}")


# ---------------------------------------------------------------------------
# copy.deepcopy and pickle carry the state over to the copied parameters
# ---------------------------------------------------------------------------
# _states is {id(param): (weakref(param), state)}: deepcopy kept the keys and the weak
# references to the original parameters, so the copy found no state for its own parameters and
# went on from zeros (MomentumSGD: w2 = [0.9, 1.9] where the original gave [0.81, 1.81]);
# pickle refused the weak references.


def test_a_deep_copied_optimizer_keeps_its_momentum():
    w = pg.Variable(np.array([1.0, 2.0]))
    opt = optimizers.MomentumSGD(lr=0.1, momentum=0.9).setup(pg.Link(w=w))
    w.grad = np.array([1.0, 1.0])
    opt.update()
    opt2 = copy.deepcopy(opt)
    w2 = opt2.target.w
    assert w2 is not w
    for o, p in ((opt, w), (opt2, w2)):
        p.grad = np.array([0.0, 0.0])
        o.update()
    np.testing.assert_allclose(w.data, [0.81, 1.81])
    np.testing.assert_array_equal(w2.data, w.data)


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
def test_model_and_optimizer_copied_together_continue_bit_identically(how):
    model, opt = _model_and_adam()
    _train(model, opt, 3)
    if how == "deepcopy":
        model2, opt2 = copy.deepcopy((model, opt))
    else:
        model2, opt2 = pickle.loads(pickle.dumps((model, opt)))
    assert opt2.target is model2
    _assert_same(model, opt, model2, opt2)
    _train(model, opt, 3)
    _train(model2, opt2, 3)
    _assert_same(model, opt, model2, opt2)


def test_a_copy_does_not_share_state_with_the_original():
    model, opt = _model_and_adam()
    _train(model, opt, 2)
    model2, opt2 = copy.deepcopy((model, opt))
    before = {n: opt2._state_of(p)["m"].copy() for n, p in model2.namedparams()}
    _train(model, opt, 2)
    for n, p in model2.namedparams():
        np.testing.assert_array_equal(opt2._state_of(p)["m"], before[n])


def test_a_pickled_pytorch_style_optimizer_continues_bit_identically():
    pg.seed(0)
    layer = L.Linear(3, 2)
    w, b = layer.W, layer.b
    opt = pg.optim.Adam([w, b], lr=0.05)

    def step(opt):
        w, b = opt.params
        opt.zero_grad()
        pg.sum((X @ w.T + b) ** 2).backward()
        opt.step()

    for _ in range(2):
        step(opt)
    opt2 = pickle.loads(pickle.dumps(opt))
    for _ in range(2):
        step(opt)
        step(opt2)
    for p, q in zip(opt.params, opt2.params):
        assert p is not q
        np.testing.assert_array_equal(p.data, q.data)


# ---------------------------------------------------------------------------
# load_npz(strict=False) after to_backend leaves the missing states as they are
# ---------------------------------------------------------------------------
# serialize took a fresh init_state (zeros) as the template of a state not yet moved to its
# parameter's new backend, so a parameter missing from the file got zero moments while
# keeping its count t = 3.


def test_a_partial_load_after_to_backend_keeps_the_states_missing_from_the_file():
    with pg.using_backend("numpy"):
        pg.seed(0)
        model = pg.Chain(a=L.Linear(2, 2), head=L.Linear(2, 2))
        opt = optimizers.Adam().setup(model)
        x = np.ones((1, 2), dtype=np.float32)
        for _ in range(3):
            opt.update(lambda: pg.sum(model.head(model.a(x))))
        old = pg.Chain(a=L.Linear(2, 2))
        old_opt = optimizers.Adam().setup(old)
        old_opt.update(lambda: pg.sum(old.a(x)))
    f = io.BytesIO()
    serializers.save_npz(f, old_opt)  # no state for head
    f.seek(0)
    kept = {k: np.array(opt._state_of(model.head.W)[k]) for k in ("m", "v")}
    model.to_backend("array_api_strict")
    serializers.load_npz(f, opt, strict=False)
    state = opt._state_of(model.head.W)
    assert state["t"] == 3
    for k in ("m", "v"):
        assert kept[k].any()
        np.testing.assert_array_equal(np.from_dlpack(state[k]), kept[k])
        assert type(state[k]) is type(model.head.W.data)
    loaded = opt._state_of(model.a.W)
    assert loaded["t"] == 1
    np.testing.assert_array_equal(np.from_dlpack(loaded["m"]), np.asarray(old_opt._state_of(old.a.W)["m"]))


def test_a_partial_load_leaves_a_velocity_not_made_yet_missing():
    """A momentum-0 SGD's file (a count, no velocity) loaded with strict=False into SGD(momentum=0.9,
    dampening=0.5) gave the parameter a velocity of zeros (the read's stand-in): its first step then
    moved w by 0.5 * lr * g. The velocity stays None, and that step makes it g (PyTorch's)."""
    w = pg.Variable(np.array([1.0, 2.0]))
    saved = pg.optim.SGD([w], lr=0.1)
    w.grad = np.array([1.0, 1.0])
    saved.step()
    buf = io.BytesIO()
    serializers.save_npz(buf, saved)
    buf.seek(0)
    w2 = pg.Variable(np.zeros(2))
    opt = pg.optim.SGD([w2], lr=0.1, momentum=0.9, dampening=0.5)
    serializers.load_npz(buf, opt, strict=False)
    state = opt._rule._state_of(w2)
    assert state["t"] == 1 and state["v"] is None
    w2.grad = np.array([1.0, 1.0])
    opt.step()
    np.testing.assert_array_equal(w2.data, [-0.1, -0.1])
    np.testing.assert_array_equal(opt._rule._state_of(w2)["v"], [1.0, 1.0])


@pytest.mark.parametrize("interface", ["optim", "optimizers"])
def test_a_file_saved_while_a_parameter_had_no_state_loads_into_one_that_has(interface):
    """The loader's first pass hands the optimizer its own count, which asked for state arrays
    the file does not hold: KeyError '1/m', where the file says the parameter had no state."""

    def make():
        w, b = pg.Variable(np.ones(3)), pg.Variable(np.ones(2))
        if interface == "optim":
            return w, b, pg.optim.Adam([w, b], lr=0.1)
        return w, b, pg.optimizers.Adam().setup(pg.Link(w=w, b=b))

    def step(opt, loss):
        if interface == "optim":
            opt.zero_grad()
            loss().backward()
            opt.step()
        else:
            opt.update(loss)

    w, b, opt = make()
    if interface == "optim":
        step(opt, lambda: pg.sum(w * w))  # b gets no gradient: no state
    buf = io.BytesIO()
    pg.serializers.save_npz(buf, opt)
    buf.seek(0)
    w2, b2, opt2 = make()
    step(opt2, lambda: pg.sum(w2 * w2) + pg.sum(b2 * b2))
    pg.serializers.load_npz(buf, opt2)
    rule = opt2._rule if interface == "optim" else opt2
    assert rule._state_of(b2) is None
    assert (rule._state_of(w2) is None) == (interface == "optimizers")


def test_a_failing_post_hook_keeps_the_step_it_follows_whole():
    """update(lossfun) put the running statistics back on any failure, also after the parameters
    had changed (a post hook raising): t and W were the step's, the statistics the old ones."""
    import polygrad.functions as F
    import polygrad.links as L

    pg.seed(0)
    model = pg.Sequential(L.Linear(3, 4, dtype="float64"), L.BatchNormalization(4, dtype="float64"))
    opt = pg.optimizers.SGD(lr=0.1).setup(model)
    x = np.random.default_rng(0).normal(size=(8, 3))

    def fail(optimizer):
        raise RuntimeError("post hook fails")

    opt.add_hook(fail, name="fail", timing="post")
    mean, w = np.asarray(model[1].avg_mean).copy(), np.asarray(model[0].W.array).copy()
    with pytest.raises(RuntimeError, match="post hook fails"):
        opt.update(lambda: pg.sum(model(x) ** 2))
    assert opt.t == 1
    assert not np.array_equal(model[0].W.array, w)
    assert not np.array_equal(model[1].avg_mean, mean)


@pytest.mark.parametrize("saved, loaded", [("adam", "momentum"), ("adam", "sgd"), ("momentum", "sgd"),
                                           ("optim_adam", "optim_sgd_momentum")])
def test_another_optimizers_file_is_refused_and_changes_nothing(saved, loaded):
    """An Adam file loaded into MomentumSGD gave the velocity Adam's second moment, and Adam's and
    MomentumSGD's files loaded into SGD (Chainer 7.8.1 takes them too); pg.optim's npz path took
    Adam's state into SGD(momentum) though its load_state_dict refuses it. A file whose state holds
    arrays the rule does not keep is refused."""

    def make(kind):
        w = pg.Variable(np.ones(3))
        if kind.startswith("optim_"):
            return w, (pg.optim.Adam([w], lr=0.1) if kind == "optim_adam" else pg.optim.SGD([w], lr=0.1, momentum=0.9))
        rule = {"adam": optimizers.Adam(), "momentum": optimizers.MomentumSGD(), "sgd": optimizers.SGD()}[kind]
        return w, rule.setup(pg.Link(w=w))

    def step(w, opt):
        if isinstance(opt, pg.optim.SGD) or isinstance(opt, pg.optim.Adam):
            opt.zero_grad()
            pg.sum(w * w).backward()
            opt.step()
        else:
            opt.update(lambda: pg.sum(w * w))

    w, opt = make(saved)
    step(w, opt)
    buf = io.BytesIO()
    serializers.save_npz(buf, opt)
    buf.seek(0)
    w2, opt2 = make(loaded)
    step(w2, opt2)
    before = {k: np.array(v) for k, v in opt2.state_dict()["state"][0].items() if k != "t"} if hasattr(
        opt2, "state_dict") else None
    with pytest.raises(ValueError, match="does not keep"):
        serializers.load_npz(buf, opt2)
    if before is not None:
        after = opt2.state_dict()["state"][0]
        assert all(np.array_equal(after[k], v) for k, v in before.items())


@pytest.mark.parametrize("strict", [True, False])
@pytest.mark.parametrize("saved, loaded", [("momentum", "adam"), ("sgd", "adam"), ("sgd", "momentum"),
                                           ("optim_sgd", "optim_adam")])
def test_a_file_lacking_arrays_the_rule_keeps_is_refused_and_changes_nothing(saved, loaded, strict):
    """Only a file holding arrays the rule does not keep was refused: a MomentumSGD file loaded into
    Adam with strict=False made the velocity (negative) Adam's second moment, and the next update
    wrote NaN into the parameter."""

    def make(kind):
        w = pg.Variable(np.array([1.0, 2.0]))
        if kind == "optim_sgd":
            return w, pg.optim.SGD([w], lr=0.1)
        if kind == "optim_adam":
            return w, pg.optim.Adam([w], lr=0.1)
        return w, {"adam": optimizers.Adam(0.1), "momentum": optimizers.MomentumSGD(0.1),
                   "sgd": optimizers.SGD(0.1)}[kind].setup(pg.Link(w=w))

    w, opt = make(saved)
    w.grad = np.array([1.0, -1.0])
    opt.step() if saved.startswith("optim") else opt.update()
    buf = io.BytesIO()
    serializers.save_npz(buf, opt)
    buf.seek(0)
    w2, opt2 = make(loaded)
    rule = getattr(opt2, "_rule", opt2)
    with pytest.raises(ValueError, match=r"parameter '/(w|0)' in the file lacks \["):
        serializers.load_npz(buf, opt2, strict=strict)
    assert rule.t == 0 and rule._state_of(w2) is None


def test_a_file_without_a_velocity_not_made_yet_loads_into_an_optimizer_that_made_one():
    """An array the rule makes at its first use (pg.optim's velocity) may be missing from a file
    of the same rule: it is no other rule's state."""
    w = pg.Variable(np.array([1.0, 2.0]))
    saved = pg.optim.SGD([w], lr=0.1, momentum=0.9)
    saved.param_groups[0]["momentum"] = 0.0
    w.grad = np.array([1.0, 1.0])
    saved.step()  # (a count, no velocity)
    buf = io.BytesIO()
    serializers.save_npz(buf, saved)
    buf.seek(0)
    w2 = pg.Variable(np.array([1.0, 2.0]))
    opt = pg.optim.SGD([w2], lr=0.1, momentum=0.9)
    w2.grad = np.array([1.0, 1.0])
    opt.step()
    serializers.load_npz(buf, opt)
    state = opt._rule._state_of(w2)
    assert state["t"] == 1 and state["v"] is None


# ---------------------------------------------------------------------------
# States and files of an earlier polygrad (before Adam's vhat)
# ---------------------------------------------------------------------------


def _make_adam(interface, w):
    return optimizers.Adam(0.1).setup(pg.Link(w=w)) if interface == "optimizers" else pg.optim.Adam([w], lr=0.1)


def _adam_step(opt, w, g):
    w.grad = g
    opt.update() if isinstance(opt, optimizers.Optimizer) else opt.step()


@pytest.mark.parametrize("interface", ["optimizers", "optim"])
def test_an_adam_pickled_before_vhat_existed_updates_saves_and_continues(interface, monkeypatch):
    """An earlier polygrad pickled Adam's states with 'm' and 'v' only: the next update, save_npz and
    state_dict raised a bare KeyError 'vhat'. vhat is made at first use: such a state has none yet."""
    rng = np.random.default_rng(3)
    grads = [rng.normal(size=3) for _ in range(4)]
    w = pg.Variable(np.ones(3))
    opt = _make_adam(interface, w)
    _adam_step(opt, w, grads[0])
    pickled = optimizers.GradientMethod.__getstate__

    def as_before(self):  # what the earlier polygrad pickled: no 'vhat', nor the dtype the state was made for
        d = pickled(self)
        d["_states"] = [(p, {k: v for k, v in s.items() if k not in ("vhat", "dtype")}) for p, s in d["_states"]]
        return d

    monkeypatch.setattr(optimizers.GradientMethod, "__getstate__", as_before)
    w2, opt2 = pickle.loads(pickle.dumps((w, opt)))
    monkeypatch.undo()
    rule = getattr(opt2, "_rule", opt2)
    assert rule._state_of(w2)["vhat"] is None
    serializers.save_npz(io.BytesIO(), opt2)
    if interface == "optim":
        assert set(opt2.state_dict()["state"][0]) == {"t", "m", "v"}
    for g in grads[1:]:
        _adam_step(opt, w, g)
        _adam_step(opt2, w2, g)
    np.testing.assert_array_equal(w2.data, w.data)


@pytest.mark.parametrize("strict", [True, False])
def test_an_adam_file_without_vhat_loads_into_an_amsgrad_adam_that_has_stepped(strict, tmp_path):
    """A file of an earlier polygrad (t, m, v: no vhat) loaded into a fresh Adam(amsgrad=True), but one
    that had stepped (its state holds a vhat) refused it with strict=True, and with strict=False kept
    its own vhat next to the file's m and v. Either way the file's state is loaded, vhat not made yet,
    as into a fresh optimizer."""
    file = tmp_path / "old.npz"
    np.savez(file, **{"t": 1, "epoch": 0, "w/t": 1, "w/m": np.full(3, 0.1), "w/v": np.full(3, 0.001)})

    def loaded(stepped):
        w = pg.Variable(np.ones(3))
        opt = optimizers.Adam(0.1, amsgrad=True).setup(pg.Link(w=w))
        if stepped:
            _adam_step(opt, w, np.full(3, 5.0))
        serializers.load_npz(file, opt, strict=strict)
        w.data = np.ones(3)
        return w, opt

    (w, opt), (w0, opt0) = loaded(True), loaded(False)
    state = opt._state_of(w)
    assert state["t"] == 1 and state["vhat"] is None and state["v"].tolist() == [0.001] * 3
    for g in (np.full(3, 0.5), np.full(3, 0.1)):
        _adam_step(opt, w, g)
        _adam_step(opt0, w0, g)
    np.testing.assert_array_equal(w.data, w0.data)


def test_a_partial_load_keeps_the_vhat_of_a_parameter_the_file_lacks(tmp_path):
    """strict=False leaves the state of a parameter the file holds nothing of as it is, vhat too."""
    w, u = pg.Variable(np.ones(3)), pg.Variable(np.ones(2))
    opt = optimizers.Adam(0.1, amsgrad=True).setup(pg.Link(w=w, u=u))
    w.grad, u.grad = np.full(3, 5.0), np.full(2, 5.0)
    opt.update()
    vhat = opt._state_of(u)["vhat"]
    file = tmp_path / "w_only.npz"
    np.savez(file, **{"t": 1, "epoch": 0, "w/t": 1, "w/m": np.full(3, 0.1), "w/v": np.full(3, 0.001)})
    serializers.load_npz(file, opt, strict=False)
    assert opt._state_of(w)["vhat"] is None and opt._state_of(u)["vhat"] is vhat


def test_a_load_failing_in_its_second_pass_gives_an_amsgrad_adam_back_its_vhat(tmp_path):
    """The first pass of a load hands the optimizer its own values, which are put back should the second
    pass fail: a vhat the file lacks stays the optimizer's own there (not 'not made yet')."""

    class Picky:
        def serialize(self, serializer):
            if serializer("n", 0) > 3:  # refused in the second pass only
                raise ValueError("Picky: n > 3")

    w = pg.Variable(np.ones(3))
    opt = optimizers.Adam(0.1, amsgrad=True).setup(pg.Link(w=w))
    _adam_step(opt, w, np.full(3, 5.0))
    before = {k: v.copy() for k, v in opt._state_of(w).items() if k in opt.state_names}

    class Both:
        def serialize(self, serializer):
            opt.serialize(serializer["opt"])
            Picky().serialize(serializer["picky"])

    file = tmp_path / "old.npz"
    np.savez(file, **{"opt/t": 1, "opt/epoch": 0, "opt/w/t": 1, "opt/w/m": np.full(3, 0.1),
                      "opt/w/v": np.full(3, 0.001), "picky/n": 5})
    with pytest.raises(ValueError, match="Picky"):
        serializers.load_npz(file, Both())
    state = opt._state_of(w)
    assert opt.t == 1 and state["t"] == 1
    for k, v in before.items():
        np.testing.assert_array_equal(state[k], v, err_msg=k)

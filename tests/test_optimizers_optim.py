"""pg.optim, PyTorch 0.x's optimizer interface: parameters without gradient, checkpoints."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest

import polygrad as pg
import polygrad.links as L
from polygrad import optimizers


# ---------------------------------------------------------------------------
# A parameter whose gradient is None is left alone (PyTorch), not stepped with zeros (Chainer)
# ---------------------------------------------------------------------------
# zero_grad() gave every parameter a zero gradient and the update zero-filled the missing ones,
# so with weight decay Adam moved a parameter the loss never used by ~lr per step: u = [1, 2]
# became [0.509, 1.503] after 5 steps where PyTorch 0.x leaves it at [1, 2].


@pytest.mark.parametrize("make", [
    lambda ps: pg.optim.Adam(ps, lr=0.1, weight_decay=1e-4),
    lambda ps: pg.optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=0.5),
])
def test_a_parameter_the_loss_never_uses_is_not_updated(make):
    w = pg.Variable(np.array([1.0, 2.0]))
    u = pg.Variable(np.array([1.0, 2.0]))
    opt = make([w, u])
    for _ in range(5):
        opt.zero_grad()
        pg.sum(w * w).backward()
        opt.step()
    np.testing.assert_array_equal(u.data, [1.0, 2.0])
    assert u.grad is None
    assert opt._rule._state_of(u) is None
    assert not np.allclose(w.data, [1.0, 2.0])


def test_zero_grad_zeroes_only_the_gradients_that_exist():
    w, u = pg.Variable(np.array([1.0, 2.0])), pg.Variable(np.array([3.0]))
    opt = pg.optim.SGD([w, u], lr=0.1)
    pg.sum(w * w).backward()
    opt.zero_grad()
    np.testing.assert_array_equal(w.grad, [0.0, 0.0])
    assert u.grad is None


def test_a_cleared_gradient_skips_the_parameter_and_keeps_its_count():
    w, u = pg.Variable(np.array([1.0, 2.0])), pg.Variable(np.array([1.0]))
    opt = pg.optim.Adam([w, u], lr=0.1)
    opt.zero_grad()
    pg.sum(w * w + u * u).backward()
    opt.step()
    after_one = u.data.copy()
    for _ in range(2):
        u.cleargrad()
        opt.zero_grad()
        pg.sum(w * w).backward()
        opt.step()
    np.testing.assert_array_equal(u.data, after_one)
    assert opt._rule._state_of(u)["t"] == 1 and opt._rule._state_of(w)["t"] == 3


def test_an_update_one_rule_skips_a_parameter_without_gradient():
    class Shrink(optimizers.GradientMethod):  # Chainer's in-place form
        def update_one(self, param, state):
            param.data = 0.5 * param.data - 0.1 * param.grad

    w, u = pg.Variable(np.array([1.0])), pg.Variable(np.array([4.0]))
    opt = pg.optim.Optimizer([w, u], Shrink())
    opt.zero_grad()
    pg.sum(w * w).backward()
    opt.step()
    np.testing.assert_allclose(w.data, [0.3])
    np.testing.assert_array_equal(u.data, [4.0])


def test_chainer_style_optimizers_still_zero_fill():
    """pg.optimizers keeps Chainer's rule: the missing gradient is zeros, the state counts the step."""
    w, u = pg.Variable(np.array([1.0])), pg.Variable(np.array([4.0]))
    opt = optimizers.MomentumSGD(lr=0.1).setup(pg.Link(w=w, u=u))
    opt.update(lambda: pg.sum(w * w))
    np.testing.assert_array_equal(u.grad, [0.0])
    assert opt._state_of(u)["t"] == 1


# ---------------------------------------------------------------------------
# Checkpoints: state_dict / load_state_dict, save_npz / load_npz, param_groups
# ---------------------------------------------------------------------------
# pg.optim had none of them: save_npz raised "cannot serialize a SGD: it has neither
# serialize(serializer) nor namedparams()", and the only way to checkpoint it or change its
# learning rate was the private opt._rule.

X = np.random.default_rng(0).standard_normal((5, 3))


def _params(seed=0):
    rng = np.random.default_rng(seed)
    return [pg.Variable(rng.standard_normal((2, 3))), pg.Variable(rng.standard_normal(2)), pg.Variable(np.ones(4))]


def _step(opt):
    w, b, _ = opt.params  # the third parameter is never used: it gets no state
    opt.zero_grad()
    pg.sum(pg.tanh(X @ w.T + b) ** 2).backward()
    opt.step()


def _assert_same_run(opt_a, opt_b, steps=3):
    for _ in range(steps):
        _step(opt_a)
        _step(opt_b)
    for p, q in zip(opt_a.params, opt_b.params):
        np.testing.assert_array_equal(p.data, q.data)


MAKE = {
    "Adam": lambda ps, **kw: pg.optim.Adam(ps, lr=0.05, weight_decay=1e-3, **kw),
    "SGD-momentum": lambda ps, **kw: pg.optim.SGD(ps, lr=0.05, momentum=0.9, **kw),
    "SGD": lambda ps, **kw: pg.optim.SGD(ps, lr=0.05, **kw),
}


@pytest.mark.parametrize("kind", list(MAKE))
def test_save_npz_and_load_npz_resume_a_pytorch_style_optimizer_bit_identically(kind, tmp_path):
    opt = MAKE[kind](_params())
    for _ in range(2):
        _step(opt)
    pg.serializers.save_npz(tmp_path / "opt.npz", opt)
    resumed = MAKE[kind]([pg.Variable(p.data.copy()) for p in opt.params])
    pg.serializers.load_npz(tmp_path / "opt.npz", resumed)
    assert resumed._rule.t == 2
    _assert_same_run(opt, resumed)


@pytest.mark.parametrize("kind", list(MAKE))
def test_state_dict_round_trip_resumes_bit_identically(kind):
    import pickle

    opt = MAKE[kind](_params())
    for _ in range(2):
        _step(opt)
    opt.param_groups[0]["lr"] = 0.02
    saved = pickle.loads(pickle.dumps(opt.state_dict()))
    assert sorted(saved["state"]) == [0, 1]  # the unused parameter has no state
    assert saved["param_groups"][0]["params"] == [0, 1, 2]
    resumed = MAKE[kind]([pg.Variable(p.data.copy()) for p in opt.params])
    resumed.load_state_dict(saved)
    assert resumed.param_groups[0]["lr"] == 0.02
    _assert_same_run(opt, resumed)


def test_state_dict_of_adam_names_its_hyperparameters_as_pytorch():
    opt = pg.optim.Adam(_params(), lr=0.01, betas=(0.8, 0.9), eps=1e-6, weight_decay=0.5)
    group = opt.state_dict()["param_groups"][0]
    assert group == {"lr": 0.01, "betas": (0.8, 0.9), "eps": 1e-6, "weight_decay": 0.5, "amsgrad": False,
                     "params": [0, 1, 2]}


def test_load_state_dict_puts_the_state_on_the_parameters_backend():
    opt = pg.optim.Adam(_params(), lr=0.05)
    _step(opt)
    saved = opt.state_dict()
    with pg.using_backend("array_api_strict") as b:
        params = [pg.Variable(b.xp.asarray(p.data.tolist(), dtype=b.xp.float32)) for p in opt.params]
    resumed = pg.optim.Adam(params, lr=0.05)
    resumed.load_state_dict(saved)
    state = resumed._rule._state_of(params[0])
    for k in ("m", "v"):
        assert type(state[k]) is type(params[0].data) and state[k].dtype == params[0].dtype
        np.testing.assert_allclose(np.from_dlpack(state[k]), saved["state"][0][k], rtol=1e-6)


@pytest.mark.parametrize("change", ["params", "shape", "kind", "beta", "lacks", "complex", "fraction_t", "negative_t"])
def test_a_state_dict_that_does_not_fit_is_refused_and_changes_nothing(change):
    """(A complex moment lost its imaginary part, a count of 2.7 became 2 and one of -5 turned
    Adam's bias correction over: load_npz refuses the first, and a count is a non-negative integer.)"""
    opt = pg.optim.Adam(_params(), lr=0.05)
    _step(opt)
    other = pg.optim.Adam(_params(1), lr=0.5)
    _step(other)
    saved = other.state_dict()
    if change == "params":
        saved["param_groups"][0]["params"] = [0, 1]
    elif change == "shape":
        saved["state"][1]["m"] = np.zeros(3)
    elif change == "kind":
        sgd = pg.optim.SGD(_params(1), lr=0.5, momentum=0.9)
        _step(sgd)
        saved = sgd.state_dict()
    elif change == "beta":
        saved["param_groups"][0]["betas"] = (0.9, 1.5)
    elif change == "complex":
        saved["state"][1]["m"] = saved["state"][1]["m"] * (1 + 1j)
    elif change in ("fraction_t", "negative_t"):
        saved["state"][1]["t"] = 2.7 if change == "fraction_t" else -5
    else:
        del saved["state"][0]["v"]
    before = opt.state_dict()
    before_m = before["state"][0]["m"].copy()
    with pytest.raises(TypeError if change == "complex" else ValueError, match=None if change in (
            "params", "shape", "kind", "beta", "lacks") else "complex floating into real|non-negative integer"):
        opt.load_state_dict(saved)
    after = opt.state_dict()
    assert after["param_groups"] == before["param_groups"]
    np.testing.assert_array_equal(after["state"][0]["m"], before_m)


def test_param_groups_set_the_hyperparameters():
    ps = _params()
    opt = pg.optim.Adam(ps, lr=0.5)
    for group in opt.param_groups:
        group["lr"] = np.float64(0.01)  # a schedule's value
        group["betas"] = (0.8, 0.9)
        group["weight_decay"] *= 2  # 0.0
    assert opt._rule.alpha == 0.01 and type(opt._rule.alpha) is float
    assert (opt._rule.beta1, opt._rule.beta2) == (0.8, 0.9)
    reference = pg.optim.Adam([pg.Variable(p.data.copy()) for p in ps], lr=0.01, betas=(0.8, 0.9))
    _assert_same_run(opt, reference)
    assert dict(opt.param_groups[0]).keys() == {"params", "lr", "betas", "eps", "weight_decay", "amsgrad"}
    with pytest.raises(KeyError, match="has no hyperparameter 'momentum'"):
        opt.param_groups[0]["momentum"] = 0.9
    with pytest.raises(ValueError, match=r"beta2 must be in \[0, 1\)"):
        opt.param_groups[0]["betas"] = (0.5, 1.0)
    assert opt.param_groups[0]["betas"] == (0.8, 0.9)


def test_weight_decay_set_through_param_groups_takes_effect():
    ps = _params()
    opt = pg.optim.SGD(ps, lr=0.1)
    opt.param_groups[0]["weight_decay"] = 0.5
    reference = pg.optim.SGD([pg.Variable(p.data.copy()) for p in ps], lr=0.1, weight_decay=0.5)
    _assert_same_run(opt, reference, steps=1)
    opt.param_groups[0]["weight_decay"] = 0
    assert opt._rule._hooks == {}


def test_sgd_made_without_momentum_refuses_one_later():
    opt = pg.optim.SGD(_params(), lr=0.1)
    assert opt.param_groups[0]["momentum"] == 0.0
    with pytest.raises(ValueError, match="made with momentum=0"):
        opt.param_groups[0]["momentum"] = 0.9
    opt.param_groups[0]["momentum"] = 0  # nothing to change


def test_parameter_groups_given_as_dicts_are_refused_clearly():
    with pytest.raises(TypeError, match="parameter groups are not supported"):
        pg.optim.SGD([{"params": _params()}], lr=0.1)


@pytest.mark.parametrize("make", [lambda: L.Linear(2, 3), lambda: pg.Sequential(L.Linear(2, 3), L.Linear(3, 1))])
def test_a_link_given_for_the_parameters_is_refused_naming_params(make):
    """pg.optim.SGD(model, lr) said "'Linear' object is not iterable" (PyTorch 0.x's TypeError too,
    so a TypeError it stays), and a Sequential, iterable, "parameter 0 is a Linear"."""
    model = make()
    for cls in (pg.optim.SGD, pg.optim.Adam):
        with pytest.raises(TypeError, match=r"params must be an iterable of Variables, got a \w+ \(a Link\); pass "
                                            r"model.params\(\)"):
            cls(model, lr=0.1)
    pg.optim.SGD(model.params(), lr=0.1)


def test_sgd_momentum_follows_pytorch_when_the_learning_rate_changes():
    """Chainer's velocity holds -lr * grad; PyTorch's holds the gradients and is scaled by each
    step's lr. One step at 0.1 and one at 0.01 on sum(w * w) from 1: PyTorch gives 0.766,
    Chainer's rule gave 0.604."""
    w = pg.Variable(np.array([1.0]))
    opt = pg.optim.SGD([w], lr=0.1, momentum=0.9)
    for lr in (0.1, 0.01):
        opt.param_groups[0]["lr"] = lr
        opt.zero_grad()
        pg.sum(w * w).backward()
        opt.step()
    np.testing.assert_allclose(w.data, [0.766])


# ---------------------------------------------------------------------------
# Against PyTorch's documented algorithms (a NumPy reference; stop 25)
# ---------------------------------------------------------------------------
def _torch_sgd(w, grads, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
    """torch.optim.SGD's documented algorithm."""
    w, buf = w.copy(), None
    for g in grads:
        g = g + weight_decay * w
        if momentum:
            buf = g.copy() if buf is None else momentum * buf + (1 - dampening) * g
            g = g + momentum * buf if nesterov else buf
        w = w - lr * g
    return w


@pytest.mark.parametrize("kwargs", [{}, {"momentum": 0.9}, {"momentum": 0.9, "dampening": 0.5},
                                    {"momentum": 0.9, "nesterov": True}, {"momentum": 0.8, "weight_decay": 0.1},
                                    {"weight_decay": 0.3}, {"momentum": 0.5, "dampening": 0.2, "weight_decay": 0.05}])
def test_sgd_follows_pytorch(kwargs):
    """dampening and nesterov were refused (nesterov=False too), and SGD's fourth positional
    argument was weight_decay where PyTorch's is dampening: SGD([w], 0.1, 0.9, 0.5) ran a
    different algorithm without a word. They are keyword-only now; weight decay leaves .grad
    as backward made it (the WeightDecay hook wrote grad + wd * w into it)."""
    rng = np.random.default_rng(0)
    w0 = rng.normal(size=3)
    grads = [rng.normal(size=3) for _ in range(4)]
    w = pg.Variable(w0.copy())
    opt = pg.optim.SGD([w], lr=0.1, **kwargs)
    for g in grads:
        w.grad = g.copy()
        opt.step()
        np.testing.assert_array_equal(w.grad, g)
    np.testing.assert_allclose(w.data, _torch_sgd(w0, grads, 0.1, **kwargs), rtol=1e-13)
    with pytest.raises(TypeError, match="takes dampening, weight_decay and nesterov by keyword"):
        pg.optim.SGD([w], 0.1, 0.9, 0.5)


def test_sgd_momentum_zero_for_a_step_keeps_the_velocity():
    """A step with momentum 0 (through param_groups) reset the velocity to that step's gradient;
    PyTorch leaves its buffer alone."""
    w = pg.Variable(np.array([1.0]))
    opt = pg.optim.SGD([w], lr=0.1, momentum=0.9)
    for momentum in (0.9, 0.9, 0.0, 0.9):
        opt.param_groups[0]["momentum"] = momentum
        w.grad = np.array([1.0])
        opt.step()
    # v: 1, 1.9, (kept 1.9: w -= 0.1 * g), 0.9 * 1.9 + 1 = 2.71; w: 0.9, 0.71, 0.61, 0.339
    np.testing.assert_allclose(w.data, [0.339])


def _dampened_momentum_enabled_later():
    """SGD made with momentum 0 and a dampening, one step, then a momentum (a schedule)."""
    w = pg.Variable(np.zeros(3))
    opt = pg.optim.SGD([w], lr=1.0, momentum=0.0, dampening=0.5)
    w.grad = np.array([1.0, -2.0, 4.0])
    opt.step()
    opt.param_groups[0]["momentum"] = 0.9
    return w, opt


def test_sgd_velocity_starts_undampened_at_the_first_step_with_a_momentum():
    """PyTorch makes its momentum buffer, the gradient itself, at the first step with a momentum;
    polygrad took the first step (t == 1) for it: with momentum raised after steps with momentum 0,
    the first velocity was dampened, (1 - dampening) g."""
    w, opt = _dampened_momentum_enabled_later()
    state = opt.state_dict()["state"][0]
    g = np.array([1.0, -2.0, 4.0])
    before = w.data.copy()
    w.grad = g.copy()
    opt.step()
    np.testing.assert_array_equal(before - w.data, g)  # v = g
    assert state == {"t": 1}  # there was no velocity yet, as PyTorch has no momentum_buffer
    np.testing.assert_array_equal(opt.state_dict()["state"][0]["v"], g)
    w.grad = g.copy()
    opt.step()
    np.testing.assert_array_equal(opt.state_dict()["state"][0]["v"], 0.9 * g + 0.5 * g)  # dampened from now on


@pytest.mark.parametrize("how", ["state_dict", "npz"])
def test_a_velocity_not_made_yet_survives_a_checkpoint(how, tmp_path):
    """A state without a velocity (only steps with momentum 0 so far) saves and loads as one: the
    resumed run's first step with a momentum starts the velocity at g, as the original's."""
    w, opt = _dampened_momentum_enabled_later()
    w2 = pg.Variable(w.data.copy())
    resumed = pg.optim.SGD([w2], lr=1.0, momentum=0.9, dampening=0.5)
    if how == "state_dict":
        resumed.load_state_dict(opt.state_dict())
    else:
        pg.serializers.save_npz(tmp_path / "opt.npz", opt)
        pg.serializers.load_npz(tmp_path / "opt.npz", resumed)
    assert resumed._rule._state_of(w2) is not None and resumed._rule._state_of(w2)["v"] is None
    for p, o in ((w, opt), (w2, resumed)):
        p.grad = np.array([1.0, -2.0, 4.0])
        o.step()
    np.testing.assert_array_equal(w2.data, w.data)


def test_adam_with_a_zero_beta_keeps_its_moments():
    """Chainer's form v + (1 - beta2)(g^2 - v) cancels to 0 when beta2 is 0 and g^2 is small
    beside v: one float32 step moved the parameter to -999 instead of -0.2. pg.optim.Adam
    uses PyTorch's form, beta2 v + (1 - beta2) g^2."""
    w = pg.Variable(np.array([0.0], dtype=np.float32))
    opt = pg.optim.Adam([w], lr=0.1, betas=(0.0, 0.0))
    for g in (4.0, 1e-4):
        w.grad = np.array([g], dtype=np.float32)
        opt.step()
    np.testing.assert_allclose(w.data, [-0.19999], rtol=1e-4)


@pytest.mark.parametrize("make, error", [
    (lambda w: pg.optim.SGD(w, lr=0.1), "got one Variable"),
    (lambda w: pg.optim.SGD({w}, lr=0.1), "got a set"),
    (lambda w: pg.optim.SGD([], lr=0.1), "empty parameter list"),
    (lambda w: pg.optim.SGD([w * 2], lr=0.1), "is not a leaf"),
    (lambda w: pg.optim.SGD([w], lr=-0.1), "lr must be non-negative"),
    (lambda w: pg.optim.SGD([w], lr=float("nan")), "lr must be non-negative"),
    (lambda w: pg.optim.SGD([w], lr=0.1, momentum=-0.5), "momentum must be non-negative"),
    (lambda w: pg.optim.SGD([w], lr=0.1, weight_decay=-1), "weight_decay must be non-negative"),
    (lambda w: pg.optim.SGD([w], lr=0.1, nesterov=True), "Nesterov momentum requires"),
    (lambda w: pg.optim.Adam([w], lr=-1e-3), "lr must be non-negative"),
    (lambda w: pg.optim.Adam([w], eps=-1e-8), "eps must be non-negative"),
    (lambda w: pg.optim.Adam([w], betas=(0.9, 0.99, 0.5)), "betas must be a pair"),
    (lambda w: pg.optim.Adam([w], amsgrad="no"), "amsgrad must be a bool, got 'no'"),
    (lambda w: pg.optim.SGD([w], lr=0.1).param_groups[0].__setitem__("lr", -1), "lr must be non-negative"),
])
def test_optimizer_arguments_are_checked(make, error):
    """A single Variable was split into its rows (never updated), a set or an empty list (a used-up
    model.params()) accepted, a non-leaf accepted, negative or NaN hyperparameters accepted
    (lr=-0.1 climbed the loss), and a third beta dropped; PyTorch raises for each."""
    w = pg.Variable(np.array([1.0, 2.0]))
    with pytest.raises((TypeError, ValueError, NotImplementedError), match=error):
        make(w)


def test_zero_grad_set_to_none_and_defaults_accepted():
    w = pg.Variable(np.array([1.0]))
    pg.optim.Adam([w], amsgrad=False)
    opt = pg.optim.SGD([w], lr=0.1, nesterov=False)
    w.grad = np.array([2.0])
    opt.zero_grad()
    assert w.grad[0] == 0.0
    opt.zero_grad(set_to_none=True)
    assert w.grad is None


def test_load_state_dict_follows_the_parameter_ids():
    """The state is keyed by the ids of the saved group's params (PyTorch's): it went to the
    parameter at the key's position whatever the ids said; an older state dict without
    dampening and nesterov still loads."""
    a = [pg.Variable(np.ones(2)), pg.Variable(np.ones(2))]
    opt = pg.optim.SGD(a, lr=0.1, momentum=0.9)
    a[0].grad, a[1].grad = np.array([1.0, 1.0]), np.array([2.0, 2.0])
    opt.step()
    sd = copy.deepcopy(opt.state_dict())
    sd["param_groups"][0]["params"] = [1, 0]
    b = [pg.Variable(np.ones(2)), pg.Variable(np.ones(2))]
    ob = pg.optim.SGD(b, lr=0.1, momentum=0.9)
    ob.load_state_dict(sd)
    np.testing.assert_array_equal(ob.state_dict()["state"][0]["v"], [2.0, 2.0])
    sd["param_groups"][0]["params"] = [7, 8]
    with pytest.raises(ValueError, match=r"state entry 0 is not one of the parameter group's ids \[7, 8\]"):
        ob.load_state_dict(sd)
    old = copy.deepcopy(opt.state_dict())
    for key in ("dampening", "nesterov"):
        del old["param_groups"][0][key]
    ob.load_state_dict(old)
    assert ob.param_groups[0]["nesterov"] is False


def test_sgd_velocity_is_not_the_gradient_array():
    """The first momentum step kept the parameter's .grad array itself as the velocity: zeroing
    the gradient in place (p.grad.data.zero_() in PyTorch 0.x) zeroed the velocity too."""
    w = pg.Variable(np.array([1.0, 2.0]))
    opt = pg.optim.SGD([w], lr=0.1, momentum=0.9)
    w.grad = np.array([1.0, -1.0])
    opt.step()
    w.grad[...] = 0.0
    w.grad = np.array([1.0, -1.0])
    opt.step()
    np.testing.assert_allclose(w.data, _torch_sgd(np.array([1.0, 2.0]), [np.array([1.0, -1.0])] * 2, 0.1, 0.9))


def test_a_parameter_group_takes_keys_of_its_own_as_pytorchs_lr_schedulers_add():
    """PyTorch's lr schedulers call group.setdefault("initial_lr", group["lr"]): a KeyError here.
    A group takes new keys as PyTorch's dict does, kept by the optimizer and in its state dict;
    its hyperparameters are still checked, cannot be removed, and another optimizer's is refused."""
    opt = pg.optim.SGD(_params(), lr=0.1, momentum=0.9)
    for group in opt.param_groups:  # a LambdaLR-style scheduler
        group.setdefault("initial_lr", group["lr"])
        group["lr"] = group["initial_lr"] * 0.5
    group = opt.param_groups[0]
    assert group["initial_lr"] == 0.1 and opt._rule.lr == 0.05
    assert dict(group).keys() == {"params", "lr", "momentum", "dampening", "weight_decay", "nesterov", "initial_lr"}
    saved = copy.deepcopy(opt.state_dict())
    assert saved["param_groups"][0]["initial_lr"] == 0.1
    resumed = pg.optim.SGD([pg.Variable(p.data.copy()) for p in opt.params], lr=1.0, momentum=0.9)
    resumed.param_groups[0]["stale"] = 1
    resumed.load_state_dict(saved)
    assert dict(resumed.param_groups[0]) == {**dict(group), "params": resumed.params}
    del group["initial_lr"]
    assert "initial_lr" not in opt.param_groups[0]
    with pytest.raises(KeyError, match="cannot be removed"):
        del group["lr"]
    with pytest.raises(ValueError, match="lr must be non-negative"):
        group["lr"] = -1.0
    adam = pg.optim.Adam(_params())
    with pytest.raises(KeyError, match="has no hyperparameter 'momentum'"):
        adam.param_groups[0]["momentum"] = 0.9
    torch_style = adam.state_dict()
    torch_style["param_groups"][0]["nesterov"] = True  # another optimizer's: refused, not ignored
    with pytest.raises(ValueError, match="nesterov"):
        adam.load_state_dict(torch_style)


@pytest.mark.parametrize("how", ["constructor", "param_groups"])
def test_sgd_nesterov_must_be_a_bool(how):
    """nesterov="no" was stored as True (a truthy string): Nesterov momentum, silently."""
    with pytest.raises(TypeError, match="nesterov must be a bool, got 'no'"):
        if how == "constructor":
            pg.optim.SGD(_params(), lr=0.1, momentum=0.9, nesterov="no")
        else:
            pg.optim.SGD(_params(), lr=0.1, momentum=0.9).param_groups[0]["nesterov"] = "no"
    assert pg.optim.SGD(_params(), lr=0.1, momentum=0.9, nesterov=np.True_).param_groups[0]["nesterov"] is True
    opt = pg.optim.SGD(_params(), lr=0.1, momentum=0.9, nesterov=1)
    opt.param_groups[0]["nesterov"] = 0
    assert opt.param_groups[0]["nesterov"] is False


def test_a_parameter_given_twice_warns_as_in_pytorch():
    """SGD([w, w]) updated w once without a word, where PyTorch 0.x updated it twice; PyTorch (0.4
    on) warns that a group names a parameter twice: so does polygrad, saying what it does."""
    w = pg.Variable(np.array([1.0, 2.0]))
    with pytest.warns(UserWarning, match=r"names one parameter twice \(parameters 0 and 1\): it is updated once"):
        opt = pg.optim.SGD([w, w], lr=1.0)
    w.grad = np.ones(2)
    opt.step()
    np.testing.assert_array_equal(w.data, [0.0, 1.0])
    tied = L.Linear(2, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # model.params() names a tied weight once per path: no warning
        pg.optim.SGD(pg.Sequential(tied, tied).params(), lr=1.0)


def _torch04_amsgrad(w, grads, lr, betas, eps, weight_decay):
    """torch.optim.Adam(amsgrad=True) of PyTorch 0.4, written out: max_exp_avg_sq starts at zeros,
    eps is added before the bias correction."""
    (b1, b2), w = betas, w.copy()
    m, v, vmax = np.zeros_like(w), np.zeros_like(w), np.zeros_like(w)
    for t, g in enumerate(grads, start=1):
        g = g + weight_decay * w
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        vmax = np.maximum(vmax, v)
        w = w - lr * np.sqrt(1 - b2**t) / (1 - b1**t) * m / (np.sqrt(vmax) + eps)
    return w, vmax


@pytest.mark.parametrize("how", ["constructor", "param_groups", "load_state_dict"])
def test_adam_amsgrad_follows_pytorch_04_over_20_steps(how):
    """pg.optim.Adam(amsgrad=True) raised NotImplementedError although the rule it shares with
    pg.optimizers.Adam computes AMSGrad; it is PyTorch 0.4's, set by the constructor, the parameter
    group or a state dict (an older one, without amsgrad, loads as False)."""
    rng = np.random.default_rng(3)
    w0 = rng.normal(size=(3, 2))
    grads = [rng.normal(size=(3, 2)) / (1 + k) ** 2 for k in range(20)]  # shrinking: the largest v is not v
    w = pg.Variable(w0.copy())
    hp = dict(lr=0.05, betas=(0.8, 0.9), eps=1e-6, weight_decay=0.01)
    opt = pg.optim.Adam([w], **hp, amsgrad=how == "constructor")
    if how == "param_groups":
        opt.param_groups[0]["amsgrad"] = True
    elif how == "load_state_dict":
        sd = opt.state_dict()
        old = copy.deepcopy(sd)
        del old["param_groups"][0]["amsgrad"]
        opt.load_state_dict(old)
        assert opt.param_groups[0]["amsgrad"] is False
        sd["param_groups"][0]["amsgrad"] = True
        opt.load_state_dict(sd)
    assert opt.param_groups[0]["amsgrad"] is True
    for g in grads:
        w.grad = g.copy()
        opt.step()
    want, vmax = _torch04_amsgrad(w0, grads, **hp)
    np.testing.assert_allclose(w.data, want, rtol=1e-10, atol=1e-12)
    state = opt.state_dict()
    assert state["param_groups"][0]["amsgrad"] is True
    np.testing.assert_allclose(state["state"][0]["vhat"], vmax, rtol=1e-10)
    assert not np.allclose(state["state"][0]["vhat"], state["state"][0]["v"])  # (AMSGrad is not Adam here)


# ---------------------------------------------------------------------------
# A state of a higher kind than its parameter, now real, is refused naming what the user wrote
# ---------------------------------------------------------------------------


def test_sgd_refuses_a_complex_velocity_for_a_parameter_made_real():
    """The velocity is made at first use, and the kind check skipped such arrays: the complex velocity
    made the float64 parameter complex128 again, silently (MomentumSGD and Adam refuse)."""
    w = pg.Variable(np.ones(3, np.complex128))
    opt = pg.optim.SGD([w], lr=0.1, momentum=0.9)
    w.grad = np.full(3, 1 + 1j)
    opt.step()
    w.data = np.real(w.data).copy()
    w.grad = np.ones(3)
    with pytest.raises(TypeError, match=r"SGD cannot update parameter .*\(now of float64\): its state 'v'"):
        opt.step()
    assert w.dtype == np.float64


@pytest.mark.parametrize("make", [lambda w: pg.optim.Adam([pg.Variable(np.ones(1)), w], lr=0.1),
                                  lambda w: pg.optim.SGD([pg.Variable(np.ones(1)), w], lr=0.1, momentum=0.9)])
def test_a_refused_state_names_the_public_optimizer_and_the_parameters_position(make):
    """The error named the private rule (_TorchAdam) and the path '/1', and advised a target of that kind."""
    w = pg.Variable(np.ones(3, np.complex128))
    opt = make(w)
    w.grad = np.full(3, 1 + 1j)
    opt.step()
    w.data, w.grad = np.ones(3), np.ones(3)
    with pytest.raises(TypeError) as info:
        opt.step()
    msg = str(info.value)
    assert f"polygrad: optim.{type(opt).__name__} cannot update parameter 1 (now of float64)" in msg
    assert "_Torch" not in msg and "'/1'" not in msg and msg.endswith(
        "cast the parameter back, or make a new optimizer over the parameters (which starts with fresh state)")


def test_an_update_error_names_the_public_optimizer_and_the_parameters_position():
    w = pg.Variable(np.ones(3))
    opt = pg.optim.Adam([pg.Variable(np.ones(1)), w], lr=0.1)
    w._grad = np.ones(5)  # (past the .grad gate, as a buggy hook could leave it)
    with pytest.raises(ValueError, match=r"^polygrad: optim.Adam cannot update parameter 1 \(float64 \(3,\)"):
        opt.step()

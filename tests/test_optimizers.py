"""Optimizers (SGD, MomentumSGD, Adam) and optimizer hooks (WeightDecay, GradientClipping)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import polygrad as pg
import polygrad.functions as F
import polygrad.links as L
from polygrad import optimizer_hooks, optimizers

from conftest import arr
from conftest import to_np


def one_param(xp, values=(1.0, -2.0, 3.0)):
    """A Link holding one parameter ``w``."""
    return pg.Link(w=pg.Variable(arr(xp, list(values))))


def step(opt, link, grad, xp):
    """Set w's gradient by hand and update once."""
    link.w.grad = arr(xp, grad)
    opt.update()


G1, G2 = [0.5, -1.0, 2.0], [1.5, 0.25, -0.5]
W0 = np.array([1.0, -2.0, 3.0])


# ---------------------------------------------------------------------------
# Update rules
# ---------------------------------------------------------------------------


def test_sgd_one_and_two_steps(xp):
    """SGD: w -= lr * grad, step after step."""
    link = one_param(xp)
    opt = optimizers.SGD(lr=0.1).setup(link)
    step(opt, link, G1, xp)
    w1 = W0 - 0.1 * np.array(G1)
    np.testing.assert_allclose(to_np(link.w), w1)
    step(opt, link, G2, xp)
    np.testing.assert_allclose(to_np(link.w), w1 - 0.1 * np.array(G2))


def test_momentum_sgd_one_and_two_steps(xp):
    """MomentumSGD: v = momentum * v - lr * grad; w += v."""
    link = one_param(xp)
    opt = optimizers.MomentumSGD(lr=0.1, momentum=0.9).setup(link)
    step(opt, link, G1, xp)
    v1 = -0.1 * np.array(G1)
    np.testing.assert_allclose(to_np(link.w), W0 + v1)
    step(opt, link, G2, xp)
    v2 = 0.9 * v1 - 0.1 * np.array(G2)
    np.testing.assert_allclose(to_np(link.w), W0 + v1 + v2)


def test_adam_matches_the_formula_for_two_steps(xp):
    """Adam's two steps equal Chainer's formula computed by hand."""
    alpha, b1, b2, eps = 0.01, 0.8, 0.95, 1e-3
    link = one_param(xp)
    opt = optimizers.Adam(alpha=alpha, beta1=b1, beta2=b2, eps=eps).setup(link)
    w, m, v = W0.copy(), np.zeros(3), np.zeros(3)
    for t, g in enumerate([np.array(G1), np.array(G2)], start=1):
        step(opt, link, g.tolist(), xp)
        m = m + (1 - b1) * (g - m)
        v = v + (1 - b2) * (g * g - v)
        w = w - alpha * math.sqrt(1 - b2**t) / (1 - b1**t) * m / (np.sqrt(v) + eps)
        np.testing.assert_allclose(to_np(link.w), w, rtol=1e-12)
    assert opt.lr == pytest.approx(alpha * math.sqrt(1 - b2**2) / (1 - b1**2))


def test_adam_first_step_moves_each_weight_by_alpha(xp):
    """Adam's first step is alpha * sign(grad) (bias correction at work)."""
    link = one_param(xp)
    opt = optimizers.Adam(alpha=0.01).setup(link)
    step(opt, link, [0.01, -50.0, 3.0], xp)
    np.testing.assert_allclose(to_np(link.w) - W0, [-0.01, 0.01, -0.01], rtol=1e-4)


def test_t_counts_updates(xp):
    """optimizer.t counts the updates; new_epoch counts epochs."""
    link = one_param(xp)
    opt = optimizers.SGD().setup(link)
    for _ in range(3):
        step(opt, link, G1, xp)
    opt.new_epoch()
    assert (opt.t, opt.epoch) == (3, 1)


def test_parameter_without_grad_gets_zero_grad(xp):
    """update() gives a zero gradient to a parameter backward did not reach (Chainer)."""
    link = one_param(xp)
    opt = optimizers.SGD(lr=0.1).setup(link)
    opt.update()
    np.testing.assert_array_equal(to_np(link.w.grad), np.zeros(3))
    np.testing.assert_array_equal(to_np(link.w), W0)


def test_state_lives_on_the_parameters_backend(xp):
    """Adam's moments are arrays of the parameter's backend, with its dtype."""
    link = pg.Link(w=pg.Variable(arr(xp, [1.0, 2.0], dtype="float32")))
    opt = optimizers.Adam().setup(link)
    link.w.grad = arr(xp, [1.0, 1.0], dtype="float32")
    opt.update()
    state = opt._state_of(link.w)
    for k in ("m", "v"):
        assert type(state[k]) is type(link.w.data)
        assert state[k].dtype == xp.float32
    assert link.w.dtype == xp.float32


def test_state_follows_a_parameter_moved_to_another_backend():
    """After link.to_backend(...), the next update moves the state along with the parameter."""
    with pg.using_backend("numpy") as b:
        link = one_param(b.xp)
        opt = optimizers.MomentumSGD(lr=0.1, momentum=0.9).setup(link)
        step(opt, link, G1, b.xp)
    link.to_backend("array_api_strict")
    with pg.using_backend("array_api_strict") as b:
        step(opt, link, G2, b.xp)
        assert type(opt._state_of(link.w)["v"]) is type(link.w.data)
    v1 = -0.1 * np.array(G1)
    np.testing.assert_allclose(to_np(link.w), W0 + v1 + 0.9 * v1 - 0.1 * np.array(G2))


def test_update_is_in_place_and_bumps_the_version():
    """On numpy the parameter's array is updated in place and its version goes up."""
    with pg.using_backend("numpy") as b:
        link = one_param(b.xp)
        before, version = link.w.data, link.w.version
        step(optimizers.SGD(0.1).setup(link), link, G1, b.xp)
        assert link.w.data is before
        assert link.w.version == version + 1


def test_backward_through_a_retained_graph_after_an_update_raises(xp):
    """A graph that saved a parameter refuses to backward after the optimizer changed it."""
    link = one_param(xp)
    opt = optimizers.SGD(0.1).setup(link)
    y = pg.sum(link.w * link.w)
    y.backward(retain_graph=True)
    opt.update()
    if link.w.version == 0:
        pytest.skip("the backend rebinds instead of writing in place")
    with pytest.raises(RuntimeError, match="in-place"):
        y.backward()


@pytest.mark.parametrize("backend", ["numpy", "array_api_strict", "dask"])
@pytest.mark.parametrize("kind", ["optimizers", "optim"])
def test_views_of_a_parameter_follow_an_update_and_its_version_moves(backend, kind):
    """An update is an in-place change of the parameter, as ``w -= d`` under no_backprop_mode: its
    views show the new values and its version moves, on every backend. On dask (which rebinds)
    the views kept the old values and the version stayed 0; on numpy a view that shares no memory
    with the parameter (a reshape that copied) kept them too."""
    if backend == "dask":
        pytest.importorskip("dask.array")
    with pg.using_backend(backend) as b:
        w = pg.Variable(arr(b.xp, np.arange(6.0).reshape(2, 3)).T)  # not contiguous on numpy
        head, flat = w[0:2, ...], w.reshape(6)  # flat: a copy on numpy
        with pg.no_backprop_mode():
            row = w[0, ...]  # a view made outside recording
        if kind == "optim":
            opt = pg.optim.SGD([w], lr=1.0)
        else:
            opt = optimizers.SGD(lr=1.0).setup(pg.Link(w=w))
        w.grad = arr(b.xp, np.ones((3, 2)))
        opt.step() if kind == "optim" else opt.update()
        new = np.arange(6.0).reshape(2, 3).T - 1.0
        assert w.version == 1
        values = lambda a: to_np(pg.to_backend(a.data if isinstance(a, pg.Variable) else a, "numpy"))  # noqa: E731
        np.testing.assert_array_equal(values(w), new)
        np.testing.assert_array_equal(values(head), new[0:2])
        np.testing.assert_array_equal(values(flat), new.reshape(6))
        np.testing.assert_array_equal(values(row), new[0])
        assert w.requires_grad and w.creator is None
        pg.sum(head * head).backward()  # the view's graph reaches the parameter as it is now
        np.testing.assert_array_equal(values(w.grad), 1.0 + np.concatenate([2 * new[0:2], np.zeros((1, 2))]))


@pytest.mark.parametrize("backend", ["numpy", "dask"])
def test_an_update_one_rule_moves_the_version_and_the_views_follow(backend):
    """A rule in Chainer's update_one form writes param.data itself (raw, in place on numpy; by
    rebinding on dask): the version did not move, so a retained graph that saved the parameter
    backpropagated with the new values as if they were the old ones (numpy), and views kept the
    old values. Now counted as any update."""
    if backend == "dask":
        pytest.importorskip("dask.array")

    class RawSGD(optimizers.GradientMethod):
        def update_one(self, param, state):
            if param.backend.inplace:
                param.data -= param.grad  # a raw write, invisible to polygrad
            else:
                param.data = param.data - param.grad

    with pg.using_backend(backend) as b:
        w = pg.Variable(arr(b.xp, np.arange(6.0).reshape(2, 3)).T)
        flat = w.reshape(6)  # a copy on numpy
        y = pg.sum(w * w)
        opt = RawSGD().setup(pg.Link(w=w))
        w.grad = arr(b.xp, np.ones((3, 2)))
        opt.update()
        new = np.arange(6.0).reshape(2, 3).T - 1.0
        assert w.version == 1 and w.requires_grad
        values = lambda a: to_np(pg.to_backend(a.data, "numpy"))  # noqa: E731
        np.testing.assert_array_equal(values(w), new)
        np.testing.assert_array_equal(values(flat), new.reshape(6))
        if backend == "numpy":
            with pytest.raises(RuntimeError, match="modified by an in-place operation"):
                y.backward()


def test_a_shared_parameter_is_updated_once(xp):
    """A Variable registered under two paths is updated once per update."""
    w = pg.Variable(arr(xp, [1.0]))
    chain = pg.Chain(a=pg.Link(w=w), b=pg.Link(w=w))
    opt = optimizers.SGD(lr=0.5).setup(chain)
    w.grad = arr(xp, [1.0])
    opt.update()
    np.testing.assert_allclose(to_np(w), [0.5])


# ---------------------------------------------------------------------------
# update(loss_fun) and training
# ---------------------------------------------------------------------------


def test_update_with_loss_fun_clears_grads_and_returns_the_loss(xp):
    """update(f, *args) clears stale grads, runs f and backward, then updates."""
    link = one_param(xp)
    opt = optimizers.SGD(lr=0.1).setup(link)
    link.w.grad = arr(xp, [100.0, 100.0, 100.0])  # stale: must not be added to
    loss = opt.update(lambda c: pg.sum(c * link.w * link.w), 0.5)
    assert float(loss.data) == pytest.approx(0.5 * float(np.sum(W0 * W0)))
    np.testing.assert_allclose(to_np(link.w), W0 - 0.1 * W0)
    assert opt.t == 1


def test_a_small_model_trains(xp, backend_name):
    """Adam on a 2-layer MLP makes a regression loss fall by two orders of magnitude."""
    pg.seed(0)
    model = pg.Chain(l1=L.Linear(2, 16), l2=L.Linear(16, 1))
    xs = np.random.default_rng(0).uniform(-1, 1, size=(32, 2))
    x = arr(xp, xs, dtype="float32")
    t = arr(xp, (xs[:, :1] * xs[:, 1:]), dtype="float32")
    opt = optimizers.Adam(alpha=0.02).setup(model)

    def loss_fun(x, t):
        return F.mean_squared_error(model.l2(F.relu(model.l1(x))), t)

    losses = [float(opt.update(loss_fun, x, t).data) for _ in range(150)]
    assert losses[-1] < losses[0] / 10, (losses[0], losses[-1])
    assert type(model.l1.W.data) is type(x)


# ---------------------------------------------------------------------------
# Hooks
# ---------------------------------------------------------------------------


def test_weight_decay_adds_rate_times_weight_to_the_grad(xp):
    """WeightDecay: the step uses grad + rate * w."""
    link = one_param(xp)
    opt = optimizers.SGD(lr=0.1).setup(link)
    opt.add_hook(optimizer_hooks.WeightDecay(0.5))
    step(opt, link, G1, xp)
    np.testing.assert_allclose(to_np(link.w), W0 - 0.1 * (np.array(G1) + 0.5 * W0))


def test_gradient_clipping_rescales_to_the_global_norm(xp):
    """GradientClipping: grads with global L2 norm 5 and threshold 1 are divided by 5."""
    link = pg.Link(a=pg.Variable(arr(xp, [0.0, 0.0])), b=pg.Variable(arr(xp, [0.0])))
    opt = optimizers.SGD(lr=1.0).setup(link)
    opt.add_hook(optimizer_hooks.GradientClipping(1.0))
    link.a.grad, link.b.grad = arr(xp, [3.0, 0.0]), arr(xp, [4.0])
    opt.update()
    np.testing.assert_allclose(to_np(link.a), [-0.6, 0.0])
    np.testing.assert_allclose(to_np(link.b), [-0.8])


def test_gradient_clipping_leaves_small_grads_alone(xp):
    """GradientClipping does nothing when the norm is below the threshold."""
    link = one_param(xp)
    opt = optimizers.SGD(lr=1.0).setup(link)
    opt.add_hook(optimizer_hooks.GradientClipping(100.0))
    step(opt, link, G1, xp)
    np.testing.assert_allclose(to_np(link.w), W0 - np.array(G1))


def test_hooks_run_in_order_pre_before_post(xp):
    """Pre hooks see the old weights, post hooks the new ones; duplicates and unknown names raise."""
    link = one_param(xp)
    opt = optimizers.SGD(lr=1.0).setup(link)
    seen = []

    def pre(o):
        seen.append(("pre", float(to_np(link.w)[0])))

    def post(o):
        seen.append(("post", float(to_np(link.w)[0])))

    opt.add_hook(post, timing="post")
    opt.add_hook(pre)
    step(opt, link, [1.0, 0.0, 0.0], xp)
    assert seen == [("pre", 1.0), ("post", 0.0)]
    with pytest.raises(KeyError, match="pre"):
        opt.add_hook(pre)
    opt.remove_hook("pre")
    with pytest.raises(KeyError, match="pre"):
        opt.remove_hook("pre")


class _HardClip:
    """Chainer 7's GradientHardClipping as a user ports it: a per-parameter hook."""

    name = "GradientHardClipping"
    call_for_each_param = True
    timing = "pre"

    def __init__(self, lo, hi):
        self.lo, self.hi = lo, hi
        self.calls = []

    def __call__(self, rule, param):
        self.calls.append((rule, param))
        param.grad = param.xp.clip(param.grad, self.lo, self.hi)


def test_a_per_parameter_hook_is_called_once_per_parameter_with_a_gradient(xp):
    """A hook with call_for_each_param (Chainer's protocol) failed at the first update with Python's
    bare 'missing 1 required positional argument'; it is called as hook(optimizer, param)."""
    shared = pg.Variable(arr(xp, [0.0, 0.0]))
    w, u = pg.Variable(arr(xp, [0.0, 0.0])), pg.Variable(arr(xp, [0.0]))
    opt = optimizers.SGD(lr=1.0).setup(pg.Chain(a=pg.Link(w=w, s=shared), b=pg.Link(s=shared, u=u)))
    opt.zero_missing_grads = False  # (pg.optim's rule: u keeps no gradient, and the hook is not called for it)
    hook = _HardClip(-0.1, 0.1)
    opt.add_hook(hook)
    w.grad, shared.grad = arr(xp, [5.0, -5.0]), arr(xp, [0.05, 3.0])
    opt.update()
    assert [p for _, p in hook.calls] == [w, shared] and all(r is opt for r, _ in hook.calls)
    np.testing.assert_allclose(to_np(w), [-0.1, 0.1])
    np.testing.assert_allclose(to_np(shared), [-0.05, -0.1])


def test_a_failing_per_parameter_hook_leaves_every_gradient_as_it_was():
    w, u = pg.Variable(np.zeros(2)), pg.Variable(np.zeros(2))
    opt = optimizers.SGD(lr=1.0).setup(pg.Link(w=w, u=u))
    gw, gu = np.array([5.0, -5.0]), np.array([1.0, 1.0])

    def fail_at_u(rule, param):
        if param is u:
            raise RuntimeError("hook fails")
        param.grad = param.grad * 0

    fail_at_u.call_for_each_param = True
    opt.add_hook(fail_at_u)
    w.grad, u.grad = gw, gu
    with pytest.raises(RuntimeError, match="hook fails"):
        opt.update()
    assert w.grad is gw and u.grad is gu and opt.t == 0
    np.testing.assert_array_equal(w.data, [0.0, 0.0])


def test_using_an_optimizer_before_setup_raises():
    """update and add_hook before setup name the missing call."""
    opt = optimizers.SGD()
    with pytest.raises(RuntimeError, match="setup"):
        opt.update()
    with pytest.raises(RuntimeError, match="setup"):
        opt.add_hook(optimizer_hooks.WeightDecay(0.1))


def test_gradient_clipping_rejects_a_non_positive_threshold():
    """GradientClipping(0) is an error."""
    with pytest.raises(ValueError, match="threshold"):
        optimizer_hooks.GradientClipping(0.0)


def test_gradient_clipping_across_two_backends():
    """The global norm spans parameters on numpy and on array_api_strict; each keeps its backend."""
    with pg.using_backend("numpy") as b:
        a = pg.Variable(arr(b.xp, [0.0, 0.0]))
        a.grad = arr(b.xp, [3.0, 0.0])
    with pg.using_backend("array_api_strict") as b:
        c = pg.Variable(arr(b.xp, [0.0]))
        c.grad = arr(b.xp, [4.0])
    opt = optimizers.SGD(lr=1.0).setup(pg.Link(a=a, c=c))
    opt.add_hook(optimizer_hooks.GradientClipping(1.0))
    opt.update()
    np.testing.assert_allclose(to_np(a), [-0.6, 0.0])
    np.testing.assert_allclose(to_np(c), [-0.8])
    assert isinstance(a.data, np.ndarray) and not isinstance(c.data, np.ndarray)


def test_gradient_clipping_across_backends_merges_the_norms_in_the_wider_dtype():
    """The partial norms of the other backends were cast to the first one's float32: a float64
    gradient of 1e200 made its maximum inf, the merged norm NaN, and nothing was clipped."""
    with pg.using_backend("numpy") as b:
        a = pg.Variable(arr(b.xp, [0.0, 0.0, 0.0], dtype="float32"))
        a.grad = arr(b.xp, [1.0, 2.0, 2.0], dtype="float32")
    with pg.using_backend("array_api_strict") as b:
        c = pg.Variable(arr(b.xp, [0.0, 0.0]))
        c.grad = arr(b.xp, [1e200, 0.0])
    opt = optimizers.SGD(lr=1.0).setup(pg.Link(a=a, c=c))
    opt.add_hook(optimizer_hooks.GradientClipping(1.0))
    opt.update()
    np.testing.assert_allclose(to_np(c), [-1.0, 0.0])
    np.testing.assert_array_equal(to_np(a), [0.0, 0.0, 0.0])  # (moved by 1e-200: 0 in float32)
    assert a.data.dtype == np.float32


def test_lazily_initialized_parameters_are_updated(xp):
    """Linear(None, n) gets its W during update(loss_fun) and is updated in the same step."""
    pg.seed(0)
    layer = L.Linear(None, 2)
    opt = optimizers.SGD(lr=0.1).setup(layer)
    x = arr(xp, [[1.0, 2.0, 3.0]], dtype="float32")
    initial = []

    def loss_fun():
        y = layer(x)
        initial.append(to_np(layer.W))
        return pg.sum(y)

    opt.update(loss_fun)
    np.testing.assert_allclose(to_np(layer.W), initial[0] - 0.1 * np.array([[1.0, 2.0, 3.0]] * 2), rtol=1e-6)


# --- State belongs to the parameter object, not to its path ----------------------------------
# It used to be keyed by the path in the link: a head replaced after some steps inherited the
# old head's moments and count, and a Sequential renumbered by pop(0) gave its remaining layer
# the removed layer's momentum. A parameter whose data changed shape got broadcast state.


def test_a_replaced_parameter_starts_with_fresh_state():
    model = pg.Chain(fc=L.Linear(2, 2))
    opt = optimizers.Adam(alpha=0.1).setup(model)
    x = np.array([[1.0, 2.0]], dtype=np.float32)
    for _ in range(3):
        opt.update(lambda: pg.sum(model.fc(x)))
    with model.init_scope():
        model.fc = L.Linear(2, 2, initialW=np.zeros((2, 2), dtype=np.float32))
    for p in model.params():
        p.grad = np.zeros_like(p.data)
    opt.update()  # fresh moments and a zero gradient: no change
    np.testing.assert_array_equal(model.fc.W.data, np.zeros((2, 2)))
    assert opt._state_of(model.fc.W)["t"] == 1


def test_a_renumbered_layer_keeps_its_own_state():
    first, second = L.Linear(2, 2), L.Linear(2, 2)
    seq = pg.Sequential(first, second)
    opt = optimizers.MomentumSGD(lr=0.1, momentum=0.9).setup(seq)
    for p in seq.params():
        p.grad = np.ones_like(p.data)
    opt.update()  # v = -0.1 for every parameter of both layers
    with pg.no_backprop_mode():
        first.W.data = first.W.data * 0 + 5.0
    velocity = opt._state_of(second.W)["v"].copy()
    seq.pop(0)
    assert [name for name, _ in seq.namedparams()] == ["/0/W", "/0/b"]
    W = second.W.data.copy()
    second.W.grad = np.zeros_like(W)
    second.b.grad = np.zeros_like(second.b.data)
    opt.update()
    np.testing.assert_allclose(second.W.data, W + 0.9 * velocity)  # its own momentum


def test_a_parameter_whose_data_changed_shape_is_refused():
    q = pg.Variable(np.array([1.0, 2.0, 3.0]))
    opt = optimizers.MomentumSGD(lr=0.1).setup(pg.Link(q=q))
    q.grad = np.ones(3)
    opt.update()
    q.data = np.array([5.0])
    q.grad = np.array([0.0])
    with pytest.raises(ValueError, match=r"parameter '/q'.*shape \(1,\).*'v' is of shape \(3,\)"):
        opt.update()
    np.testing.assert_array_equal(q.data, [5.0])  # nothing changed
    assert opt.t == 1


def test_states_of_freed_parameters_are_dropped():
    model = pg.Chain(fc=L.Linear(2, 2))
    opt = optimizers.MomentumSGD().setup(model)
    for _ in range(2):
        for p in model.params():
            p.grad = np.ones_like(p.data)
        opt.update()
        with model.init_scope():
            model.fc = L.Linear(2, 2)
    for p in model.params():
        p.grad = np.ones_like(p.data)
    opt.update()
    assert len(opt._states) == 2  # the new W and b; the replaced layers' states went with them


def test_an_update_one_rule_that_fails_before_writing_moves_no_version():
    """The failing parameter's version moved although its rule wrote nothing: a retained graph
    then refused to backward, blaming an in-place write that never happened."""

    class Failing(optimizers.GradientMethod):
        def update_one(self, param, state):
            raise RuntimeError("no update today")

    w = pg.Variable(np.arange(3.0))
    y = pg.sum(w * w)
    opt = Failing().setup(pg.Link(w=w))
    w.grad = np.ones(3)
    with pytest.raises(RuntimeError, match="no update today"):
        opt.update()
    assert w.version == 0
    y.backward()
    np.testing.assert_array_equal(w.grad, [1.0, 3.0, 5.0])


def test_adam_lr_before_the_first_update_raises_chainers_runtime_error():
    """Chainer's Adam.lr at t == 0 raises RuntimeError; polygrad's raised a ValueError, which code
    written for Chainer (except RuntimeError) did not catch. It is both now (deprecate, never break)."""
    opt = pg.optimizers.Adam()
    for kind in (RuntimeError, ValueError):
        with pytest.raises(kind, match="once updates have started"):
            opt.lr


def test_an_optimizer_refuses_a_parameter_that_became_no_leaf():
    """A parameter that requires no grad, then written in place with a value that does, has a creator:
    its gradient is not kept and the step was silently zero. Refused, naming the path, as pg.optim does."""
    link = pg.Link(w=pg.Variable(np.array([1.0, 2.0]), requires_grad=False))
    opt = optimizers.SGD(lr=0.1).setup(link)
    x = pg.Variable(np.array([3.0, 4.0]))
    w = link.w
    w += x  # (link.w += x is refused by the link itself)
    with pytest.raises(ValueError, match=r"SGD: parameter '/w' is not a leaf \(it was computed by add\): an "
                                         r"optimizer updates leaves"):
        opt.update(lambda: pg.sum(link.w * link.w))
    with pytest.raises(ValueError, match="'/w' is not a leaf"):
        optimizers.Adam().setup(link)
    with pytest.raises(ValueError, match=r"polygrad.optim: parameter 0 is not a leaf \(it was computed by add\)"):
        pg.optim.SGD([link.w], lr=0.1)


# ---------------------------------------------------------------------------
# Chainer 7's Adam: eta, weight_decay_rate, amsgrad (AdaBound refused)
# ---------------------------------------------------------------------------
# Set as attributes (opt.weight_decay_rate = 0.5, ExponentialShift('eta', ...)), they were plain
# attributes the rule never read: training ran as if they had not been set.


def _chainer7_adam(w, grads, alpha, eta, weight_decay_rate, amsgrad, beta1=0.9, beta2=0.999, eps=1e-8):
    """Chainer 7's AdamRule.update_core_cpu, by hand in numpy float64."""
    m, v, vhat = np.zeros_like(w), np.zeros_like(w), np.zeros_like(w)
    for t, g in enumerate(grads, 1):
        m += (1 - beta1) * (g - m)
        v += (1 - beta2) * (g * g - v)
        vhat = np.maximum(vhat, v) if amsgrad else v
        lr = alpha * math.sqrt(1.0 - beta2**t) / (1.0 - beta1**t)
        w = w - eta * (lr * m / (np.sqrt(vhat) + eps) + weight_decay_rate * w)
    return w


ADAM7 = [dict(eta=0.5, weight_decay_rate=0.01, amsgrad=True), dict(eta=1.0, weight_decay_rate=0.1, amsgrad=False),
         dict(eta=1.0, weight_decay_rate=0.0, amsgrad=True), dict(eta=0.0, weight_decay_rate=0.1, amsgrad=True)]


@pytest.mark.parametrize("how", ["constructor", "attributes"])
@pytest.mark.parametrize("hp", ADAM7, ids=lambda hp: "-".join(f"{k}={v}" for k, v in hp.items()))
@pytest.mark.parametrize("backend", ["numpy", "dask", "array_api_strict"])
def test_adam_eta_weight_decay_rate_and_amsgrad_follow_chainer_7_over_20_steps(backend, hp, how):
    if backend not in pg.backends():
        pytest.skip(f"the {backend} backend is not installed")
    rng = np.random.default_rng(0)
    w0 = rng.normal(size=(3, 2))
    grads = [rng.normal(size=(3, 2)) / (1 + k) ** 2 for k in range(20)]  # shrinking: AMSGrad's vhat is not v
    w = pg.Variable(pg.asarray(w0.copy(), backend=backend))
    opt = optimizers.Adam(0.05, **hp) if how == "constructor" else optimizers.Adam(0.05)
    if how == "attributes":
        for k, value in hp.items():
            setattr(opt, k, value)
    opt.setup(pg.Link(w=w))
    for g in grads:
        w.grad = pg.asarray(g, backend=backend)
        opt.update()
    got = np.asarray(pg.to_backend(w.data, "numpy"))
    want = _chainer7_adam(w0, grads, 0.05, **hp)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    plain = _chainer7_adam(w0, grads, 0.05, eta=1.0, weight_decay_rate=0.0, amsgrad=False)
    assert not np.allclose(want, plain)  # (each setting changes the result)
    if hp["amsgrad"]:
        vhat = np.asarray(pg.to_backend(opt._state_of(w)["vhat"], "numpy"))
        assert (vhat >= np.asarray(pg.to_backend(opt._state_of(w)["v"], "numpy"))).all()


def test_adam_amsgrad_of_a_complex_parameter_keeps_the_maximum_of_each_part():
    """The real and imaginary parts of a complex parameter are two real parameters (PyTorch's rule)."""
    rng = np.random.default_rng(1)
    w0 = rng.normal(size=3) + 1j * rng.normal(size=3)
    grads = [(rng.normal(size=3) + 1j * rng.normal(size=3)) / (1 + k) ** 2 for k in range(20)]
    w = pg.Variable(w0.copy())
    opt = optimizers.Adam(0.05, eta=0.5, weight_decay_rate=0.01, amsgrad=True).setup(pg.Link(w=w))
    for g in grads:
        w.grad = g
        opt.update()
    re = _chainer7_adam(w0.real, [g.real for g in grads], 0.05, eta=0.5, weight_decay_rate=0.01, amsgrad=True)
    im = _chainer7_adam(w0.imag, [g.imag for g in grads], 0.05, eta=0.5, weight_decay_rate=0.01, amsgrad=True)
    np.testing.assert_allclose(w.data, re + 1j * im, rtol=1e-12)


def test_adam_hyperparameters_of_chainer_7_are_checked_and_adabound_is_refused():
    opt = optimizers.Adam(eta=np.float64(0.5), weight_decay_rate=np.float32(0.25), amsgrad=np.True_)
    assert (type(opt.eta), type(opt.weight_decay_rate), opt.amsgrad) == (float, float, True)
    with pytest.raises(TypeError, match="Adam's amsgrad must be a bool, got 'no'"):
        opt.amsgrad = "no"
    with pytest.raises(TypeError, match="eta"):
        optimizers.Adam(eta="0.5")
    with pytest.raises(TypeError, match="weight_decay_rate"):
        opt.weight_decay_rate = np.ones(2)
    for name in ("adabound", "final_lr", "gamma"):
        with pytest.raises(AttributeError, match=f"Adam has no hyperparameter '{name}': Chainer's AdaBound"):
            setattr(opt, name, True)
        assert not hasattr(opt, name)
    with pytest.raises(TypeError, match="adabound"):
        optimizers.Adam(adabound=True)
    opt.my_schedule_note = "warmup"  # (other attributes are a subclass's or a user's own)
    assert opt.my_schedule_note == "warmup"


@pytest.mark.parametrize("how", ["npz", "pickle"])
def test_adam_amsgrad_resumes_bit_identically(how, tmp_path):
    """vhat is saved with the moments (npz: Chainer's key 'vhat'), and the hyperparameters travel
    with a pickled optimizer."""
    import pickle

    rng = np.random.default_rng(2)
    grads = [rng.normal(size=3) / (1 + k) for k in range(6)]

    def make():
        w = pg.Variable(np.ones(3))
        return w, optimizers.Adam(0.1, eta=0.5, weight_decay_rate=0.01, amsgrad=True).setup(pg.Link(w=w))

    def run(w, opt, gs):
        for g in gs:
            w.grad = g
            opt.update()

    w, opt = make()
    run(w, opt, grads[:3])
    if how == "npz":
        serializers = pg.serializers
        serializers.save_npz(tmp_path / "opt.npz", opt)
        assert "w/vhat" in np.load(tmp_path / "opt.npz").files
        w2, opt2 = make()
        w2.data = w.data.copy()
        serializers.load_npz(tmp_path / "opt.npz", opt2)
    else:
        w2, opt2 = pickle.loads(pickle.dumps((w, opt)))
        assert (opt2.eta, opt2.weight_decay_rate, opt2.amsgrad) == (0.5, 0.01, True)
    run(w, opt, grads[3:])
    run(w2, opt2, grads[3:])
    np.testing.assert_array_equal(w2.data, w.data)


def test_an_adam_of_an_earlier_polygrad_loads_with_chainers_defaults(tmp_path):
    """A pickle made before eta, weight_decay_rate and amsgrad existed has none of them, and a file
    no vhat: they read as Chainer's defaults (and strict loading still takes the file)."""
    import pickle

    w = pg.Variable(np.ones(3))
    opt = optimizers.Adam(0.1).setup(pg.Link(w=w))
    w.grad = np.ones(3)
    opt.update()
    for name in ("eta", "weight_decay_rate", "amsgrad"):
        del opt.__dict__[name]
    old = pickle.loads(pickle.dumps(opt))
    assert (old.eta, old.weight_decay_rate, old.amsgrad) == (1.0, 0.0, False)
    np.savez(tmp_path / "old.npz", **{"t": 1, "epoch": 0, "w/t": 1, "w/m": np.full(3, 0.1), "w/v": np.full(3, 0.001)})
    w2 = pg.Variable(np.ones(3))
    opt2 = optimizers.Adam(0.1, amsgrad=True).setup(pg.Link(w=w2))
    pg.serializers.load_npz(tmp_path / "old.npz", opt2)
    state = opt2._state_of(w2)
    assert state["t"] == 1 and state["vhat"] is None
    w2.grad = np.ones(3)
    opt2.update()  # (vhat starts at v: Chainer's zeros, whose maximum with v is v)
    np.testing.assert_array_equal(opt2._state_of(w2)["vhat"], opt2._state_of(w2)["v"])


def test_a_class_level_persistent_value_is_persisted_with_the_parameters():
    """The optimizer reads a link's persistent names through Link._persistents, the one accessor
    that saves, loads, moves and copies read: a class-level ``_persistent`` list counts there too,
    so its lazy value is persisted at each update (its graph does not grow step after step)."""
    da = pytest.importorskip("dask.array")

    class Counter(pg.Link):
        _persistent = ["seen"]

        def __init__(self):
            super().__init__()
            with self.init_scope():
                self.w = pg.Variable(da.ones(2, chunks=2))
            self.seen = da.zeros(2, chunks=2)

    link = Counter()
    opt = optimizers.SGD(lr=0.1).setup(link)
    for _ in range(3):
        link.seen = link.seen + 1
        link.w.grad = da.ones(2, chunks=2)
        opt.update()
    assert len(link.seen.dask) == 1 and np.asarray(link.seen).tolist() == [3.0, 3.0]

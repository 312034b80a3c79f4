"""Optimizers and hooks keep the parameters' dtypes: NumPy scalar hyperparameters,
complex parameters (Adam, GradientClipping), float16 (Adam's eps, GradientClipping's norm)."""

from __future__ import annotations

import numpy as np
import pytest

import polygrad as pg
from polygrad import optimizer_hooks, optimizers

BACKENDS = ["numpy", "dask"]


def _backend(name):
    if name not in pg.backends():
        pytest.skip(f"the {name} backend is not installed")
    return name


# ---------------------------------------------------------------------------
# NumPy scalar hyperparameters become Python floats where they are set
# ---------------------------------------------------------------------------
# lr = np.logspace(-3, -1, 3)[0] is a numpy.float64, which NEP 50 does not weaken: the
# update turned a float32 parameter on dask (and the state on numpy) into float64.

LR = np.logspace(-3, -1, 3)[0]


def _chainer_style(make, backend):
    w = pg.Variable(pg.asarray(np.ones(3, np.float32), backend=backend))
    opt = make().setup(pg.Link(w=w))
    opt.add_hook(optimizer_hooks.WeightDecay(np.float64(1e-4)))
    opt.add_hook(optimizer_hooks.GradientClipping(np.float64(10.0)))
    return w, opt, lambda: opt.update(lambda: pg.sum(w * w))


def _torch_style(make, backend):
    w = pg.Variable(pg.asarray(np.ones(3, np.float32), backend=backend))
    opt = make([w])

    def step():
        opt.zero_grad()
        pg.sum(w * w).backward()
        opt.step()

    return w, opt._rule, step


MAKERS = {
    "SGD": lambda: optimizers.SGD(lr=LR),
    "MomentumSGD": lambda: optimizers.MomentumSGD(lr=LR, momentum=np.float64(0.9)),
    "Adam": lambda: optimizers.Adam(alpha=LR, beta1=np.float64(0.9), beta2=np.float64(0.999), eps=np.float64(1e-8)),
    "Adam-amsgrad": lambda: optimizers.Adam(alpha=LR, eta=np.float64(0.5), weight_decay_rate=np.float64(1e-4),
                                            amsgrad=np.True_),
}
TORCH_MAKERS = {
    "optim.SGD": lambda ps: pg.optim.SGD(ps, lr=LR, weight_decay=np.float64(1e-4)),
    "optim.SGD-momentum": lambda ps: pg.optim.SGD(ps, lr=LR, momentum=np.float64(0.9)),
    "optim.Adam": lambda ps: pg.optim.Adam(ps, lr=LR, betas=(np.float64(0.9), np.float64(0.999)), eps=np.float64(1e-8)),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", list(MAKERS) + list(TORCH_MAKERS))
def test_numpy_float64_hyperparameters_keep_float32_parameters_and_state(kind, backend):
    backend = _backend(backend)
    if kind in MAKERS:
        w, rule, step = _chainer_style(MAKERS[kind], backend)
    else:
        w, rule, step = _torch_style(TORCH_MAKERS[kind], backend)
    for _ in range(2):
        step()
    assert w.dtype == np.float32
    state = rule._state_of(w)
    for k in rule.state_names:  # (Adam's vhat is made at the first update with amsgrad: None before)
        assert (state[k] is None) == (k == "vhat" and kind != "Adam-amsgrad"), k
        assert state[k] is None or state[k].dtype == np.float32, k


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_numpy_float64_learning_rate_set_later_keeps_float32(backend):
    backend = _backend(backend)
    w = pg.Variable(pg.asarray(np.ones(3, np.float32), backend=backend))
    opt = optimizers.MomentumSGD(lr=0.1).setup(pg.Link(w=w))
    for lr in np.logspace(-3, -1, 3):  # a schedule of numpy.float64
        opt.lr = lr
        opt.momentum = np.float64(0.5)
        opt.update(lambda: pg.sum(w * w))
    assert w.dtype == np.float32 and opt._state_of(w)["v"].dtype == np.float32


def test_hyperparameters_are_stored_as_python_floats():
    opt = optimizers.Adam(alpha=np.float32(0.5), beta1=np.float64(0.5), beta2=0, eps=np.float16(1e-3))
    assert [type(getattr(opt, k)) for k in ("alpha", "beta1", "beta2", "eps")] == [float] * 4
    opt.alpha = np.int64(2)
    assert type(opt.alpha) is float and opt.alpha == 2.0
    sgd = optimizers.SGD()
    sgd.lr = np.float64(0.25)
    assert type(sgd.lr) is float
    decay, clip = optimizer_hooks.WeightDecay(np.float64(0.1)), optimizer_hooks.GradientClipping(np.float32(2))
    assert type(decay.rate) is float and type(clip.threshold) is float
    assert pg.optim.SGD([pg.Variable(np.ones(1))], lr=1, weight_decay=False).param_groups[0]["weight_decay"] == 0.0


@pytest.mark.parametrize("bad", ["0.1", None, np.ones(()), 1j, [0.1]])
def test_a_hyperparameter_that_is_no_real_number_is_refused(bad):
    with pytest.raises(TypeError, match="SGD: lr must be a real number"):
        optimizers.SGD(lr=bad)
    opt = optimizers.MomentumSGD()
    with pytest.raises(TypeError, match="MomentumSGD: momentum must be a real number"):
        opt.momentum = bad
    assert opt.momentum == 0.9
    with pytest.raises(TypeError, match="WeightDecay: rate must be a real number"):
        optimizer_hooks.WeightDecay(bad)
    with pytest.raises(TypeError, match="GradientClipping: threshold must be a real number"):
        optimizer_hooks.GradientClipping(bad)


def test_checked_hyperparameters_are_checked_when_set_later():
    opt = optimizers.Adam()
    with pytest.raises(ValueError, match=r"Adam's beta2 must be in \[0, 1\), got 1.0"):
        opt.beta2 = 1
    assert opt.beta2 == 0.999
    clip = optimizer_hooks.GradientClipping(1.0)
    with pytest.raises(ValueError, match="GradientClipping's threshold must be > 0"):
        clip.threshold = np.float64(-1.0)
    assert clip.threshold == 1.0


# ---------------------------------------------------------------------------
# Adam with complex parameters: PyTorch's rule, a pair of real parameters
# ---------------------------------------------------------------------------
# v used to average grad * grad (complex), so m / sqrt(v) was real: z = 1j with gradient 2j
# moved to -0.1 + 1j instead of 0.9j.


def test_adam_moves_a_complex_parameter_along_its_gradient():
    z = pg.Variable(pg.asarray([1j]))
    opt = optimizers.Adam(alpha=0.1).setup(pg.Link(z=z))
    opt.update(lambda: pg.sum(pg.abs(z) ** 2))  # gradient 2z = 2j
    np.testing.assert_allclose(z.data, [0.9j], atol=1e-7)


@pytest.mark.parametrize("torch_style", [False, True])
def test_adam_on_a_complex_parameter_equals_adam_on_its_real_and_imaginary_parts(xp, torch_style):
    """PyTorch's Adam views a complex parameter as real pairs (view_as_real): every step
    equals Adam's on a real parameter holding the real and imaginary parts."""
    rng = np.random.default_rng(0)
    z0 = rng.standard_normal(4) + 1j * rng.standard_normal(4)
    grads = [rng.standard_normal(4) * 10.0 ** rng.integers(-3, 3, 4) + 1j * rng.standard_normal(4) for _ in range(4)]
    z = pg.Variable(xp.asarray(z0.tolist(), dtype=xp.complex128))
    r = pg.Variable(xp.asarray(np.concatenate([z0.real, z0.imag]).tolist(), dtype=xp.float64))
    hyper = dict(beta1=0.8, beta2=0.9, eps=1e-3)
    if torch_style:
        opt_z = pg.optim.Adam([z], lr=0.05, betas=(0.8, 0.9), eps=1e-3)._rule
    else:
        opt_z = optimizers.Adam(alpha=0.05, **hyper).setup(pg.Link(z=z))
    opt_r = optimizers.Adam(alpha=0.05, **hyper).setup(pg.Link(r=r))
    for g in grads:
        z.grad = xp.asarray(g.tolist(), dtype=xp.complex128)
        r.grad = xp.asarray(np.concatenate([g.real, g.imag]).tolist(), dtype=xp.float64)
        opt_z.update()
        opt_r.update()
        got = np.from_dlpack(z.data)
        want = np.from_dlpack(r.data)
        np.testing.assert_allclose(np.concatenate([got.real, got.imag]), want, rtol=1e-13, atol=1e-15)


# ---------------------------------------------------------------------------
# float16 Adam: stepped in float32, with float32 moments
# ---------------------------------------------------------------------------
# grad * grad overflowed float16 past 256: v became inf, then the parameter NaN (pg.optim: frozen
# for good); eps=1e-8 is 0 in float16, so the update was 0/0 where g**2 underflowed too (it was
# refused then). Chainer's float16 Adam trains.


@pytest.mark.parametrize("torch_style", [False, True])
def test_float16_adam_steps_in_float32(torch_style):
    p = pg.Variable(np.ones(3, np.float16))
    ref = pg.Variable(np.ones(3, np.float32))
    opts = [pg.optim.Adam([v])._rule if torch_style else optimizers.Adam().setup(pg.Link(p=v)) for v in (p, ref)]
    for g in ([0.0, 1e-4, 1e-2], [300.0, -1000.0, 2.0], [0.0, 1e-4, 1e-2]):
        for v, opt in zip((p, ref), opts):
            v.grad = np.array(g, v.dtype)
            opt.update()
    assert p.dtype == np.float16 and np.all(np.isfinite(p.data))
    np.testing.assert_allclose(p.data, ref.data.astype(np.float16), atol=1e-3)
    assert p.data[0] != 1.0 and p.data[1] > 1.0


@pytest.mark.parametrize("eps", [1e-46, 7e-46, 1e-44, 1e-8, -1e-8])
def test_an_eps_that_rounds_to_zero_in_the_step_dtype_is_refused(eps):
    p = pg.Variable(np.ones(1, np.float32))
    opt = optimizers.Adam(eps=eps).setup(pg.Link(p=p))
    p.grad = np.ones(1, np.float32)
    if np.float32(eps) == 0:
        with pytest.raises(ValueError, match="too small for float32"):
            opt.update()
        assert opt.t == 0
    else:
        opt.update()
        assert opt.t == 1


def test_eps_zero_is_allowed_in_float16():
    p = pg.Variable(np.ones(2, np.float16))
    opt = optimizers.Adam(eps=0).setup(pg.Link(p=p))
    p.grad = np.array([1.0, -1.0], np.float16)
    opt.update()
    np.testing.assert_allclose(p.data, [0.999, 1.001], atol=1e-3)


# AMSGrad's vhat of a float16 parameter is float32, as m and v are; it is made at first use, and took the
# parameter's float16 where it was loaded (load_npz, load_state_dict) or cast along with the parameter
# (a move to another backend, a cast): a vhat past 65504 became inf, and the parameter froze (m / inf).


def _amsgrad_float16(how):
    w = pg.Variable(np.ones(3, np.float16))
    if how == "load_state_dict":
        return w, pg.optim.Adam([w], lr=0.01, amsgrad=True)
    return w, optimizers.Adam(alpha=0.01, amsgrad=True).setup(pg.Link(w=w))


def _step16(w, opt, g):
    w.grad = w.xp.asarray(np.full(3, g, np.float16))
    opt.step() if isinstance(opt, pg.optim.Optimizer) else opt.update()


@pytest.mark.parametrize("how", ["load_npz", "load_state_dict", "to_backend"])
def test_amsgrad_vhat_of_a_float16_parameter_stays_float32_when_loaded_or_moved(how, tmp_path):
    w, opt = _amsgrad_float16(how)
    _step16(w, opt, 10000.0)  # v = vhat = 1e5: past float16's 65504
    if how == "load_npz":
        pg.serializers.save_npz(tmp_path / "opt.npz", opt)
        w2, opt2 = _amsgrad_float16(how)
        w2.data = w.data.copy()
        pg.serializers.load_npz(tmp_path / "opt.npz", opt2)
    elif how == "load_state_dict":
        w2, opt2 = _amsgrad_float16(how)
        w2.data = w.data.copy()
        opt2.load_state_dict(opt.state_dict())
    else:  # (the same run, moved to dask)
        _backend("dask")
        w2, opt2 = _amsgrad_float16(how)
        _step16(w2, opt2, 10000.0)
        opt2.target.to_backend("dask")
    for _ in range(3):
        _step16(w, opt, 1.0)
        _step16(w2, opt2, 1.0)
    vhat = getattr(opt2, "_rule", opt2)._state_of(w2)["vhat"]
    assert str(vhat.dtype) == "float32" and np.asarray(vhat).tolist() == np.asarray(
        getattr(opt, "_rule", opt)._state_of(w)["vhat"]).tolist()
    np.testing.assert_array_equal(np.asarray(w2.data), w.data)


def test_amsgrad_vhat_stays_float32_when_its_parameter_is_cast_to_float16():
    w = pg.Variable(np.ones(3, np.float32))
    opt = optimizers.Adam(alpha=0.01, amsgrad=True).setup(pg.Link(w=w))
    w.grad = np.full(3, 10000.0, np.float32)
    opt.update()
    w.data = w.data.astype(np.float16)
    before = w.data.copy()
    w.grad = np.ones(3, np.float16)
    opt.update()
    state = opt._state_of(w)
    assert [str(state[k].dtype) for k in ("m", "v", "vhat")] == ["float32"] * 3
    assert np.isfinite(state["vhat"]).all() and w.dtype == np.float16 and np.all(w.data < before)


# ---------------------------------------------------------------------------
# GradientClipping: the norm is sqrt(sum |g|**2), real, summed in float32 at least
# ---------------------------------------------------------------------------
# Complex gradients were squared as g * g (complex): grad 3+4j with threshold 1 became 1+0j
# (w = 3+4j went to 2+4j instead of 2.4+3.2j). float16 squares overflowed (300**2 * 2 > 65504):
# the scale was threshold / inf = 0 and the update was skipped without a word.


@pytest.mark.parametrize("dtypes", [("complex128", "float64"), ("complex64", "float32")])
def test_gradient_clipping_of_complex_gradients_uses_their_modulus(xp, dtypes):
    cdtype, rdtype = getattr(xp, dtypes[0]), getattr(xp, dtypes[1])
    z = pg.Variable(xp.asarray([0j], dtype=cdtype))
    r = pg.Variable(xp.asarray([0.0], dtype=rdtype))
    opt = optimizers.SGD(lr=1.0).setup(pg.Link(z=z, r=r))
    opt.add_hook(optimizer_hooks.GradientClipping(1.0))
    z.grad = xp.asarray([3 + 4j], dtype=cdtype)
    r.grad = xp.asarray([12.0], dtype=rdtype)  # global norm sqrt(5**2 + 12**2) = 13
    opt.update()
    assert z.grad.dtype == cdtype and r.grad.dtype == rdtype
    np.testing.assert_allclose(np.from_dlpack(z.grad), [(3 + 4j) / 13], rtol=1e-6)
    np.testing.assert_allclose(np.from_dlpack(r.grad), [12 / 13], rtol=1e-6)
    np.testing.assert_allclose(np.from_dlpack(z.data), [-(3 + 4j) / 13], rtol=1e-6)


def test_gradient_clipping_of_float16_gradients_does_not_overflow():
    w = pg.Variable(np.array([300.0, -300.0, 10.0], np.float16))
    sgd = optimizers.SGD(lr=1.0).setup(pg.Link(w=w))
    sgd.add_hook(optimizer_hooks.GradientClipping(1.0))
    g = np.array([300.0, -300.0, 10.0])
    w.grad = g.astype(np.float16)
    sgd.update()
    assert w.grad.dtype == np.float16 and w.dtype == np.float16
    norm = np.sqrt(np.sum(g * g))  # 424.4
    np.testing.assert_allclose(w.grad, g / norm, rtol=1e-3)
    np.testing.assert_allclose(w.data, g - g / norm, atol=0.13)  # float16 spacing at 300: 0.25


def test_gradient_clipping_leaves_small_float16_gradients_exactly_alone():
    w = pg.Variable(np.zeros(3, np.float16))
    sgd = optimizers.SGD(lr=1.0).setup(pg.Link(w=w))
    sgd.add_hook(optimizer_hooks.GradientClipping(1000.0))
    g = np.array([300.0, -300.0, 10.0], np.float16)
    w.grad = g
    sgd.update()
    np.testing.assert_array_equal(w.grad, g)


def test_float16_gradient_clipping_reaches_the_threshold():
    """The factor was cast to float16 first: for a norm above 16384 it is subnormal there, and
    the clipped norm came out 1.8% to 13% above the threshold."""
    w = pg.Variable(pg.asarray(np.zeros(1000, np.float16)))
    sgd = pg.optimizers.SGD(lr=1.0).setup(pg.Link(w=w))
    sgd.add_hook(optimizer_hooks.GradientClipping(1.0))
    w.grad = np.full(1000, 60000, np.float16)
    sgd.update()
    assert w.dtype == np.float16
    assert np.linalg.norm(w.data.astype(np.float64)) == pytest.approx(1.0, rel=2e-3)


@pytest.mark.parametrize("threshold", [float("inf"), 1e39])
def test_gradient_clipping_past_the_dtypes_range_never_clips(threshold):
    """threshold=inf (PyTorch's max_norm=inf) made the factor inf / inf: NaN parameters; a
    threshold past float32's range rounded to inf in the gradient's dtype, the same."""
    w = pg.Variable(np.array([1.0, 2.0], np.float32))
    sgd = optimizers.SGD(lr=0.1).setup(pg.Link(w=w))
    sgd.add_hook(optimizer_hooks.GradientClipping(threshold))
    w.grad = np.array([3.0, 4.0], np.float32)
    sgd.update()
    np.testing.assert_allclose(w.data, [0.7, 1.6], rtol=1e-6)


@pytest.mark.parametrize("dtype, big", [("float32", 1e19), ("float64", 1e160)])
def test_gradient_clipping_of_gradients_whose_squares_overflow(xp, dtype, big):
    """A float32 gradient of norm 5e19 (finite) has squares past float32's range: the norm was
    inf, the factor 0, and the update was skipped without a word."""
    dt = getattr(xp, dtype)
    w, v = pg.Variable(xp.ones(2, dtype=dt)), pg.Variable(xp.zeros(1, dtype=dt))
    sgd = optimizers.SGD(lr=1.0).setup(pg.Link(w=w, v=v))
    sgd.add_hook(optimizer_hooks.GradientClipping(1.0))
    w.grad = xp.asarray([3 * big, 4 * big], dtype=dt)
    v.grad = xp.asarray([big], dtype=dt)  # two gradients merged: norm sqrt(26) * big
    sgd.update()
    n = np.sqrt(26.0)
    np.testing.assert_allclose(np.from_dlpack(w.data), [1 - 3 / n, 1 - 4 / n], rtol=1e-5)
    np.testing.assert_allclose(np.from_dlpack(v.data), [-1 / n], rtol=1e-5)


def test_gradient_clipping_of_zero_and_tiny_gradients(xp):
    """All-zero gradients stay zeros (no 0 / 0); tiny ones below the threshold are left alone."""
    w, v = pg.Variable(xp.ones(2, dtype=xp.float32)), pg.Variable(xp.ones(2, dtype=xp.float32))
    sgd = optimizers.SGD(lr=1.0).setup(pg.Link(w=w, v=v))
    sgd.add_hook(optimizer_hooks.GradientClipping(1.0))
    w.grad, v.grad = xp.zeros(2, dtype=xp.float32), xp.asarray([1e-30, 0.0], dtype=xp.float32)
    sgd.update()
    np.testing.assert_array_equal(np.from_dlpack(w.grad), [0.0, 0.0])
    np.testing.assert_array_equal(np.from_dlpack(v.grad), np.asarray([1e-30, 0.0], np.float32))
    e = pg.Variable(xp.zeros((0, 3), dtype=xp.float32))  # no elements: no norm to add (max has no identity)
    sgd = optimizers.SGD(lr=1.0).setup(pg.Link(w=w, e=e))
    sgd.add_hook(optimizer_hooks.GradientClipping(1.0))
    w.grad, e.grad = xp.asarray([3.0, 4.0], dtype=xp.float32), xp.zeros((0, 3), dtype=xp.float32)
    sgd.update()
    np.testing.assert_allclose(np.from_dlpack(w.grad), [0.6, 0.8], rtol=1e-6)


def test_a_numpy_bool_hyperparameter_is_the_number_it_is():
    """Python's True was taken as 1.0, NumPy's True_ refused as 'an array of shape ()'."""
    w = pg.Variable(np.ones(2))
    assert pg.optim.SGD([w], lr=np.True_, weight_decay=np.False_).param_groups[0]["lr"] == 1.0
    import polygrad.functions as F

    with pytest.raises(TypeError, match="got the bool True"):
        F.leaky_relu(w, np.True_)


def test_float16_adam_of_pg_optim_decays_once_and_keeps_float32_moments_through_a_state_dict():
    """Stepping float16 in float32 ran pg.optim's step (which adds the weight decay) twice: 0.99
    where float32 gives 1.01; load_state_dict cast the float32 moments back to float16 (a second
    moment of 1e5 became inf, and that coordinate never moved again)."""
    p16, p32 = pg.Variable(np.ones(1, np.float16)), pg.Variable(np.ones(1, np.float32))
    opts = [pg.optim.Adam([p], lr=0.01, weight_decay=1.0) for p in (p16, p32)]
    for p, opt in zip((p16, p32), opts):
        p.grad = np.array([-1.5], p.dtype)
        opt.step()
    np.testing.assert_allclose(p16.data, p32.data, atol=1e-3)
    p = pg.Variable(np.ones(2, np.float16))
    opt = pg.optim.Adam([p])
    p.grad = np.array([316.0, 0.03], np.float16)
    opt.step()
    state = opt.state_dict()
    opt.load_state_dict(state)
    v = next(iter(opt.state_dict()["state"].values()))["v"]
    assert v.dtype == np.float32 and np.all(np.isfinite(v))


# ---------------------------------------------------------------------------
# A step wider than the parameter keeps the parameter's dtype on every backend
# ---------------------------------------------------------------------------
# numpy's in-place `data -= delta` casts a wider step within its kind (as Chainer's update);
# dask's out-of-place update rebound the parameter as float64.


class _HalfSGD(optimizers.GradientMethod):
    """A rule in step form whose float64 constant promotes a float32 step (Array API promotion)."""

    lr = optimizers.Hyperparameter()

    def __init__(self, lr=0.1):
        self.lr = lr

    def step(self, data, grad, state, t):
        xp = state["backend"].xp
        return self.lr * grad * xp.asarray(0.5, dtype=xp.float64), {}


@pytest.mark.parametrize("backend", BACKENDS + ["array_api_strict"])
def test_a_step_wider_than_the_parameter_keeps_the_parameters_dtype(backend):
    backend = _backend(backend)
    u = pg.Variable(pg.asarray(np.ones(3, np.float32), backend=backend))
    opt = _HalfSGD().setup(pg.Link(u=u))
    u.grad = pg.asarray(np.ones(3, np.float32), backend=backend)
    opt.update()
    got = np.asarray(pg.to_backend(u.data, "numpy"))
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, np.full(3, 0.95, np.float32))


@pytest.mark.parametrize("backend", BACKENDS + ["array_api_strict"])
def test_the_state_of_a_parameter_cast_mid_run_is_cast_along(backend):
    """A float64 parameter cast to float32 after a MomentumSGD step: its velocity stayed float64,
    the steps too, and on dask the parameter became float64 again."""
    backend = _backend(backend)
    w = pg.Variable(pg.asarray(np.ones(3), backend=backend))
    opt = optimizers.MomentumSGD(lr=0.1, momentum=0.9).setup(pg.Link(w=w))
    w.grad = pg.asarray(np.ones(3), backend=backend)
    opt.update()
    w.data = pg.asarray(np.asarray(pg.to_backend(w.data, "numpy")), dtype="float32", backend=backend)
    w.grad = pg.asarray(np.ones(3, np.float32), backend=backend)
    opt.update()
    got, v = (np.asarray(pg.to_backend(a, "numpy")) for a in (w.data, opt._state_of(w)["v"]))
    assert got.dtype == np.float32 and v.dtype == np.float32
    np.testing.assert_allclose(got, [0.9 - 0.19] * 3, rtol=1e-6)


def test_a_complex_state_of_a_parameter_cast_to_real_is_refused():
    w = pg.Variable(np.ones(2, np.complex128))
    opt = optimizers.MomentumSGD(lr=0.1).setup(pg.Link(w=w))
    w.grad = np.ones(2, np.complex128)
    opt.update()
    w.data = np.ones(2)
    w.grad = np.ones(2)
    with pytest.raises(TypeError, match=r"parameter '/w' \(now of float64\): its state 'v'"):
        opt.update()
    assert w.data.dtype == np.float64 and opt._state_of(w)["t"] == 1

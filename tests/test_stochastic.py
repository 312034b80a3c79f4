"""Stochastic functions, REINFORCE (Variable.reinforce) and log_prob."""

from __future__ import annotations

import math

import numpy as np
import pytest

import polygrad as pg
import polygrad.functions as F
from conftest import arr, to_np


def _bernoulli_exact(p, r1, r0):
    """d/dp of -E[r(s)] for s ~ Bernoulli(p): -(r1 - r0)."""
    return -(r1 - r0)


def test_bernoulli_reinforce_matches_exact_gradient(xp):
    """The REINFORCE gradient of a Bernoulli policy matches the exact one within sampling error."""
    pg.seed(1)
    n = 4000
    p = pg.Variable(xp.full((n,), 0.3, dtype=xp.float64))
    s = F.bernoulli(p)
    reward = xp.where(s.data == 1, xp.asarray(1.0, dtype=xp.float64), xp.asarray(0.2, dtype=xp.float64))
    s.reinforce(reward)
    pg.backward([s])
    mean = float(xp.mean(p.grad))
    # per-sample estimator: -r * (s/p - (1-s)/(1-p)); its standard deviation bounds the error
    sd = math.sqrt(0.3 * (1.0 / 0.3) ** 2 * 1.0 + 0.7 * (0.2 / 0.7) ** 2) / math.sqrt(n)
    assert abs(mean - _bernoulli_exact(0.3, 1.0, 0.2)) < 5 * sd


def test_categorical_reinforce_matches_enumeration(xp):
    """The REINFORCE gradient of a softmax policy matches the gradient by enumeration of outcomes."""
    pg.seed(2)
    n = 6000
    logits = np.array([0.1, 0.5, -0.3])
    rewards = np.array([1.0, 0.0, 2.0])
    theta = pg.Variable(arr(xp, np.tile(logits, (n, 1))))
    a = F.categorical(F.softmax(theta))
    r = arr(xp, rewards)[a.data]
    a.reinforce(r)
    pg.backward([a])
    probs = np.exp(logits) / np.exp(logits).sum()
    exact = -(probs * (rewards - (probs * rewards).sum()))
    est = np.asarray([float(v) for v in xp.mean(theta.grad, axis=0)])
    assert np.all(np.abs(est - exact) < 0.05)


def test_reinforce_equals_log_prob_surrogate():
    """reinforce(r) and the hand-written surrogate -sum(r * log_prob(sample)) give the same gradient."""
    pg.seed(3)
    probs_data = np.array([[0.2, 0.5, 0.3], [0.6, 0.1, 0.3]])
    p1 = pg.Variable(probs_data.copy())
    a = F.categorical(p1)
    r = np.array([1.5, -0.5])
    a.reinforce(r)
    pg.backward([a])
    p2 = pg.Variable(probs_data.copy())
    d = pg.distributions.Categorical(p2)
    surrogate = -pg.sum(r * d.log_prob(a.data))
    surrogate.backward()
    np.testing.assert_allclose(p1.grad, p2.grad)


def test_normal_reinforce_matches_log_prob_surrogate():
    """F.normal's REINFORCE gradient for mean and std equals the log_prob surrogate's."""
    pg.seed(4)
    mean = pg.Variable(np.array([0.5, -1.0]))
    std = pg.Variable(np.array([1.0, 2.0]))
    s = F.normal(mean, std)
    s.reinforce(np.array([2.0, 3.0]))
    pg.backward([s])
    m2, s2 = pg.Variable(mean.data.copy()), pg.Variable(std.data.copy())
    (-pg.sum(np.array([2.0, 3.0]) * pg.distributions.Normal(m2, s2).log_prob(s.data))).backward()
    np.testing.assert_allclose(mean.grad, m2.grad)
    np.testing.assert_allclose(std.grad, s2.grad)


def test_bandit_learns_best_arm():
    """A 3-armed bandit trained with reinforce puts most probability on the best arm."""
    pg.seed(5)
    theta = pg.Variable(np.zeros(3))
    means = np.array([0.1, 0.9, 0.3])
    for _ in range(150):
        probs = F.softmax(pg.broadcast_to(theta, (32, 3)))
        a = F.categorical(probs)
        reward = means[a.data] - 0.5
        a.reinforce(reward)
        theta.cleargrad()
        pg.backward([a])
        theta.data = theta.data - 0.5 * theta.grad
    p = np.exp(theta.data) / np.exp(theta.data).sum()
    assert p[1] > 0.8


def test_sample_does_not_require_grad_without_parameters_needing_it():
    """A sample from constant parameters is a plain leaf with no gradient."""
    s = F.bernoulli(np.full(3, 0.5))
    assert s.creator is None and not s.requires_grad


def test_unrewarded_stochastic_output_raises_naming_function():
    """Backward through an unrewarded sample raises, naming the stochastic function."""
    p = pg.Variable(np.full(3, 0.5))
    s = F.bernoulli(p)
    with pytest.raises(RuntimeError, match="bernoulli.*reinforce"):
        pg.sum(s * 2.0).backward()


def test_double_reward_raises():
    """A second reward on the same sample is an error."""
    s = F.bernoulli(pg.Variable(np.full(3, 0.5)))
    s.reinforce(np.ones(3))
    with pytest.raises(RuntimeError, match="already"):
        s.reinforce(np.ones(3))


def test_reward_on_non_stochastic_variable_raises():
    """reinforce on an ordinary variable names what made it."""
    x = pg.Variable(np.ones(3))
    with pytest.raises(RuntimeError, match="multiply"):
        (x * 2.0).reinforce(1.0)


def test_reward_of_wrong_shape_raises():
    """A reward that does not broadcast to the sample's shape is an error naming both shapes."""
    s = F.bernoulli(pg.Variable(np.full(3, 0.5)))
    with pytest.raises(ValueError, match=r"\(4,\).*\(3,\)"):
        s.reinforce(np.ones(4))


def test_reward_of_other_backend_raises():
    """A reward on another backend is an error suggesting pg.to_backend."""
    import array_api_strict as sx

    s = F.bernoulli(pg.Variable(np.full(3, 0.5)))
    with pytest.raises(TypeError, match="to_backend"):
        s.reinforce(sx.asarray([1.0, 1.0, 1.0], dtype=sx.float64))


def test_multinomial_has_trailing_axis_and_takes_reward_of_its_shape():
    """multinomial (the seed's era) returns (N, 1) indices and accepts an (N, 1) reward."""
    probs = pg.Variable(np.array([[0.2, 0.8], [0.5, 0.5]]))
    m = F.multinomial(probs)
    assert m.shape == (2, 1)
    m.reinforce(np.ones((2, 1)))
    pg.backward([m])
    assert probs.grad.shape == (2, 2)


def test_samples_reproducible_from_seed(xp):
    """The same seed gives the same samples."""
    p = arr(xp, [0.3] * 50)
    pg.seed(7)
    a = F.bernoulli(p).data
    pg.seed(7)
    b = F.bernoulli(p).data
    assert bool(xp.all(a == b))


def test_backward_accepts_retain_variables_alias():
    """backward(retain_variables=True) keeps the graph like retain_graph=True."""
    x = pg.Variable(np.array([1.0, 2.0]))
    y = pg.sum(pg.sin(x))
    y.backward(retain_variables=True)
    y.backward()
    np.testing.assert_allclose(x.grad, 2 * np.cos(x.data))


def test_requires_grad_and_volatile_settable_only_on_leaves():
    """Setting requires_grad or volatile on a non-leaf is a clear error."""
    y = pg.Variable(np.ones(2)) * 2.0
    with pytest.raises(RuntimeError, match="leaf"):
        y.requires_grad = False
    with pytest.raises(RuntimeError, match="leaf"):
        y.volatile = True


def test_bernoulli_and_categorical_reinforce_on_dask_match_exact_gradients():
    """On the lazy dask backend, REINFORCE gradients match the exact ones within sampling error."""
    pytest.importorskip("dask", reason="the dask backend plugin needs dask")
    pg.seed(11)
    with pg.using_backend("dask"):
        p = pg.Variable(pg.asarray([0.3] * 4000))
        s = F.bernoulli(p)
        xp = s.xp
        s.reinforce(xp.where(s.data == 1, xp.asarray(1.0), xp.asarray(0.2)))
        pg.backward([s])
        (g,) = pg.compute(xp.mean(p.grad))
        logits = np.array([0.1, 0.5, -0.3])
        rewards = np.array([1.0, 0.0, 2.0])
        theta = pg.Variable(pg.asarray(np.tile(logits, (6000, 1))))
        a = F.categorical(F.softmax(theta))
        a.reinforce(xp.take(pg.asarray(rewards), a.data))
        pg.backward([a])
        (est,) = pg.compute(xp.mean(theta.grad, axis=0))
    assert abs(float(g) - _bernoulli_exact(0.3, 1.0, 0.2)) < 0.15
    probs = np.exp(logits) / np.exp(logits).sum()
    exact = -(probs * (rewards - (probs * rewards).sum()))
    assert np.all(np.abs(np.asarray(est) - exact) < 0.05)


# --- Probabilities of exactly 0 or 1, and values outside the support -------------------------
# log_prob took the log of every probability and then picked: an unpicked probability of 0
# sent 0 * inf = NaN back (to every logit through softmax); a value outside the support
# picked nothing and gave log-probability 0, i.e. probability 1.


def test_log_prob_gradients_stay_finite_at_probabilities_0_and_1():
    P = pg.Variable(np.array([[0.5, 0.5, 0.0]]))
    pg.sum(pg.distributions.Categorical(P).log_prob(np.array([0]))).backward()
    np.testing.assert_array_equal(P.grad, [[1.0, -1.0, -1.0]])  # d/dP log(P0 / sum(P))
    logits = pg.Variable(np.array([[0.0, 1.0, -1e4]]))  # a masked action
    pg.sum(pg.distributions.Categorical(F.softmax(logits)).log_prob(np.array([0]))).backward()
    s = np.exp([0.0, 1.0]) / np.exp([0.0, 1.0]).sum()
    np.testing.assert_allclose(logits.grad, [[1 - s[0], -s[1], 0.0]], rtol=1e-12)
    p = pg.Variable(np.array([0.0, 1.0]))
    pg.sum(pg.distributions.Bernoulli(p).log_prob(np.array([0.0, 1.0]))).backward()
    np.testing.assert_array_equal(p.grad, [-1.0, 1.0])
    pg.seed(0)
    P = pg.Variable(np.array([[0.5, 0.5, 0.0]]))
    a = F.categorical(P)
    a.reinforce(1.0)
    a.backward()
    assert np.isfinite(P.grad).all() and P.grad[0, 2] == 1.0  # -reward * d/dP2 log(Pa / sum(P))


@pytest.mark.parametrize("dist, value", [
    (lambda: pg.distributions.Categorical(np.array([0.2, 0.3, 0.5])), 3),
    (lambda: pg.distributions.Categorical(np.array([0.2, 0.3, 0.5])), -1),
    (lambda: pg.distributions.Categorical(np.array([0.2, 0.3, 0.5])), 1.5),
    (lambda: pg.distributions.Bernoulli(np.array(0.3)), 0.5),
    (lambda: pg.distributions.Bernoulli(np.array(0.3)), 2.0),
], ids=["categorical-3", "categorical-neg", "categorical-1.5", "bernoulli-0.5", "bernoulli-2"])
def test_log_prob_refuses_values_outside_the_support(dist, value):
    with pytest.raises(ValueError, match=r"polygrad\.distributions\.(Categorical|Bernoulli)\.log_prob: value must"):
        dist().log_prob(np.asarray(value))
    d = dist()
    d.validate_args = False  # as torch.distributions' validate_args=False: no check
    with np.errstate(divide="ignore", invalid="ignore"):
        d.log_prob(np.asarray(value))


@pytest.mark.parametrize("dist, rule", [
    (lambda xp: pg.distributions.Bernoulli(pg.Variable(xp.asarray([1.5, -0.25]))), r"Bernoulli: p must be in \[0, 1\]"),
    (lambda xp: pg.distributions.Bernoulli(1.5), r"Bernoulli: p must be in \[0, 1\], got 1.5"),
    (lambda xp: pg.distributions.Normal(0.0, pg.Variable(xp.asarray([-1.0, 1.0]))), "Normal: std must be non-negative"),
    (lambda xp: pg.distributions.Normal(0.0, -1.0), "Normal: std must be non-negative, got -1.0"),
    (lambda xp: pg.distributions.Normal(xp.asarray([float("nan"), 0.0]), 1.0), "Normal: mean must not be NaN"),
], ids=["bernoulli", "bernoulli-number", "normal-std", "normal-std-number", "normal-mean"])
def test_log_prob_refuses_parameters_outside_their_range(xp, dist, rule):
    """Bernoulli([1.5, -0.25]).log_prob([1, 1]) was [log 1.5, nan] (a probability above 1) and a
    negative std a NaN density, where sample() refuses them (torch.distributions too)."""
    with pytest.raises(ValueError, match=rf"polygrad\.distributions\.{rule}"):
        dist(xp).log_prob(xp.asarray([1.0, 1.0]))
    d = dist(xp)
    d.validate_args = False
    with np.errstate(divide="ignore", invalid="ignore"):
        d.log_prob(xp.asarray([1.0, 1.0]))


def test_log_prob_checks_parameters_on_dask_as_they_are_computed():
    """On a lazy backend the check of p runs when the log-probability is computed; the gradient
    to p is the one without the check."""
    pytest.importorskip("dask", reason="the dask backend plugin needs dask")
    with pg.using_backend("dask"):
        p = pg.Variable(pg.asarray([0.25, 0.5]))
        lp = pg.distributions.Bernoulli(p).log_prob(pg.asarray([1.0, 0.0]))
        pg.sum(lp).backward()
        value, grad = pg.compute(lp.data, p.grad)
        np.testing.assert_allclose(value, np.log([0.25, 0.5]))
        np.testing.assert_allclose(grad, [4.0, -2.0])
        bad = pg.distributions.Bernoulli(pg.Variable(pg.asarray([1.5, 0.5]))).log_prob(pg.asarray([1.0, 0.0]))
        with pytest.raises(ValueError, match=r"p must be in \[0, 1\], got 1.5"), np.errstate(invalid="ignore"):
            pg.compute(bad.data)


def test_sample_takes_a_sample_shape():
    """Distribution.sample(4) (torch.distributions' and Chainer's sample_shape) failed with
    "'int' object has no attribute 'normal'": the first argument was the generator."""
    D = pg.distributions
    loc, scale = pg.Variable(np.zeros(3)), pg.Variable(np.ones(3))
    assert D.Normal(loc, scale).sample(4).shape == (4, 3)
    assert D.Normal(loc, scale).sample((2, 5)).shape == (2, 5, 3)
    assert D.Normal(0.0, 1.0).sample(6).shape == (6,)
    assert D.Bernoulli(np.full((2, 3), 0.5)).sample(4).shape == (4, 2, 3)
    k = D.Categorical(np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])).sample(5)
    assert k.shape == (5, 2) and (k == np.array([1, 2])).all()
    assert D.Normal(loc, scale).sample().shape == (3,)
    rng = pg.get_backend("numpy").rng()
    assert D.Normal(loc, scale).sample(rng=rng).shape == (3,)
    with pytest.warns(DeprecationWarning, match=r"sample\(rng\) is deprecated"):
        assert D.Normal(loc, scale).sample(rng).shape == (3,)
    assert D.Normal(loc, scale).sample(np.int64(4)).shape == (4, 3)  # NumPy's integers, lists
    assert D.Normal(loc, scale).sample([2, np.int64(4)]).shape == (2, 4, 3)
    for bad in (-1, 2.5, [2, -1], "4"):
        with pytest.raises(ValueError, match="sample_shape must be a non-negative integer"):
            D.Normal(loc, scale).sample(bad)


def test_categorical_rows_are_weights_divided_by_their_sum():
    """The draw takes rows as weights (it picks k with probability w[k] / sum(w), as
    torch.distributions does), but log_prob was log(w[k]): log 2 for [1, 1, 2], a
    probability above 1, and the REINFORCE gradient of such a draw was not the score
    function of the distribution drawn from."""
    D = pg.distributions
    w = np.array([[1.0, 1.0, 2.0], [3.0, 1.0, 0.0]])
    k = np.array([2, 0])
    W = pg.Variable(w.copy())
    lp = D.Categorical(W).log_prob(k)
    np.testing.assert_allclose(lp.data, np.log([0.5, 0.75]), rtol=1e-12)
    pg.sum(lp).backward()
    exact = np.eye(3)[k] / w[np.arange(2), k][:, None] - 1 / w.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(W.grad, exact, rtol=1e-12)
    pg.seed(0)
    W = pg.Variable(w.copy())
    a = F.categorical(W)
    a.reinforce(np.array([1.0, -2.0]))
    a.backward()
    drawn = np.asarray(a.data)
    exact = -np.array([[1.0], [-2.0]]) * (np.eye(3)[drawn] / w[np.arange(2), drawn][:, None] - 1 / w.sum(axis=1, keepdims=True))
    np.testing.assert_allclose(W.grad, exact, rtol=1e-12)
    with pytest.raises(ValueError, match="probs must be finite and non-negative, got -1.0"):
        D.Categorical(np.array([1.0, -1.0, 2.0])).log_prob(np.array(2))


_DISTS = [lambda xp: pg.distributions.Normal(xp.zeros(3), xp.ones(3)),
          lambda xp: pg.distributions.Bernoulli(xp.full(3, 0.5)),
          lambda xp: pg.distributions.Categorical(xp.ones((2, 3)))]


@pytest.mark.parametrize("dist", _DISTS, ids=["normal", "bernoulli", "categorical"])
@pytest.mark.parametrize("params, other", [("numpy", "array_api_strict"), ("array_api_strict", "numpy")])
def test_sample_refuses_a_generator_of_another_backend(dist, params, other):
    """sample(rng=) of another backend's generator gave a sample of that backend, or failed in the
    other library's words ("Cannot interpret 'array_api_strict.float64' as a data type")."""
    d = dist(pg.get_backend(params).xp)
    with pytest.raises(TypeError, match=rf"{type(d).__name__}\.sample: rng is a generator of backend "
                                        rf"'{pg.get_backend(other).name}'.* backend '{pg.get_backend(params).name}'"):
        d.sample(rng=pg.get_backend(other).rng())


class _Own:
    """The RandomGenerator protocol, without the name a backend's generator carries."""

    def __init__(self, gen):
        self.gen = gen

    def uniform(self, *args, **kwargs):
        return self.gen.uniform(*args, **kwargs)

    def normal(self, *args, **kwargs):
        return self.gen.normal(*args, **kwargs)


@pytest.mark.parametrize("dist", _DISTS, ids=["normal", "bernoulli", "categorical"])
def test_sample_tells_a_generator_that_no_backend_made_by_its_draws(dist):
    """A generator of the protocol's own drawing dask arrays for numpy parameters gave a dask sample."""
    pytest.importorskip("dask", reason="the dask backend plugin needs dask")
    d = dist(np)
    with pytest.raises(TypeError, match=r"sample: rng is a generator of backend 'dask'.* backend 'numpy'"):
        d.sample(rng=_Own(pg.get_backend("dask").rng()))
    mine = d.sample(2, rng=_Own(pg.get_backend("numpy").random_generator(0)))
    assert isinstance(mine, np.ndarray) and mine.shape[0] == 2


@pytest.mark.parametrize("make, match", [
    (lambda: pg.distributions.Categorical([0.25, 0.75]), r"Categorical: probs must be a Variable or an array, got list"),
    (lambda: pg.distributions.Categorical(0.5), r"Categorical: probs must be a Variable or an array, got float"),
    (lambda: pg.distributions.Bernoulli([0.3]), r"Bernoulli: p must be a Variable, an array or a Python int or float"),
    (lambda: pg.distributions.Normal(0.0, (1.0, 2.0)), r"Normal: std must be .* got tuple \(convert it with pg.asarray"),
], ids=["categorical-list", "categorical-number", "bernoulli-list", "normal-tuple"])
def test_a_parameter_that_is_not_an_array_is_refused_naming_it(make, match):
    """Categorical([0.25, 0.75]) failed later, in log_prob with "'list' object has no attribute 'shape'"
    and in sample with "no backend claims arrays of type builtins.list", naming neither."""
    with pytest.raises(TypeError, match=rf"polygrad\.distributions\.{match}"):
        make()


def test_bernoulli_takes_a_python_number():
    """Bernoulli(0.3) failed (no backend claims builtins.float) where Normal(0.0, 1.0) draws."""
    pg.seed(0)
    s = pg.distributions.Bernoulli(0.3).sample(1000)
    assert s.shape == (1000,) and s.dtype == pg.get_backend().xp.float64
    assert 200 < int(np.sum(np.asarray(s))) < 400
    with pytest.raises(ValueError, match=r"p must be in \[0, 1\], got 1.5"):
        pg.distributions.Bernoulli(1.5).sample()


def test_certain_bernoulli_draws_are_certain_in_float16():
    """Bernoulli(1.0) always draws 1 and its log_prob is 0, in float16 too: a float64 uniform draw
    cast to float16 rounded up to 1.0 about once in 4,000 draws, and 1 < 1 drew 0 (log_prob -inf, a
    NaN REINFORCE gradient). polygrad keeps every generator's uniform draws below high."""
    pg.seed(0)
    p = pg.Variable(np.ones(1 << 16, dtype=np.float16))
    a = pg.distributions.Bernoulli(p).sample()
    assert np.all(np.asarray(a) == 1)
    assert np.all(np.asarray(pg.distributions.Bernoulli(p).log_prob(a).data) == 0)
    pg.seed(None)


def test_the_generator_keeps_the_plugins_own_methods_and_pickles():
    """The generator polygrad hands out is the plugin's, with uniform kept below high: the plugin's
    own options (dask's ``chunks``) and attributes pass through, and dask's pickles (as dask's
    own generator does, for dask.distributed) and goes on drawing the same numbers."""
    import pickle

    gen = pg.get_backend("dask").random_generator(3)
    assert hasattr(gen, "_rng")  # the plugin generator's attribute
    u = gen.uniform((6,), dtype=np.float64, low=2.0, high=3.0, chunks=2)
    assert u.chunks == ((2, 2, 2),) and 2.0 <= float(u.min().compute()) and float(u.max().compute()) < 3.0
    twin = pickle.loads(pickle.dumps(gen))
    a, b = gen.uniform((5,), dtype=np.float32, low=-1.0, high=1.0), twin.uniform((5,), dtype=np.float32, low=-1.0, high=1.0)
    assert np.array_equal(a.compute(), b.compute())


def test_multinomial_reinforce_broadcasts_the_reward_to_the_sample_first():
    """A (3, 1) reward for a (3, 3, 1) sample broadcast along axis 0 of log_prob (of shape (3, 3)),
    not axis 1 (2.58 off the documented surrogate); a (1, 1) one failed to reshape."""
    D = pg.distributions
    probs = np.random.default_rng(0).uniform(0.1, 1, (3, 3, 4))
    r = np.array([[1.0], [2.0], [3.0]])
    P = pg.Variable(probs)
    pg.seed(0)
    a = F.multinomial(P)
    a.reinforce(pg.asarray(r))
    a.backward()
    P2 = pg.Variable(probs)
    rb = np.broadcast_to(r, a.shape)[..., 0]
    (-pg.sum(pg.asarray(rb) * D.Categorical(P2).log_prob(pg.asarray(a.data[..., 0])))).backward()
    np.testing.assert_allclose(P.grad, P2.grad, atol=1e-12)
    b = F.multinomial(pg.Variable(probs[0]))
    b.reinforce(pg.asarray([[2.0]]))
    b.backward()


def test_a_stochastic_node_refuses_a_parameter_or_sample_changed_after_the_draw():
    """The REINFORCE gradient used the changed values ([10, 0.42] for [1.43, -1.25]); every other
    row refuses them."""
    q = pg.Variable(np.array([0.3, 0.8]))
    p = q * 1
    s = F.bernoulli(p)
    p *= 3
    s.reinforce(pg.asarray([1.0, -1.0]))
    with pytest.raises(RuntimeError, match="bernoulli saved its input 0"):
        s.backward()
    s = F.bernoulli(pg.Variable(np.array([0.3, 0.8])))
    s.reinforce(1.0)
    with pg.no_backprop_mode():
        s += 1
    with pytest.raises(RuntimeError, match="bernoulli saved its output"):
        s.backward()


def test_bernoulli_log_prob_keeps_float32_precision_for_small_p():
    """log(1 - p) was 1.3% off at p = 1e-6 in float32; p of 0 or 1 still sends back no NaN."""
    D = pg.distributions
    lp = D.Bernoulli(pg.asarray(np.array([1e-6], dtype=np.float32))).log_prob(pg.asarray(np.array([0.0], np.float32)))
    np.testing.assert_allclose(lp.data, [np.log1p(-1e-6)], rtol=1e-6)
    p = pg.Variable(np.array([0.0, 1.0]))
    pg.sum(D.Bernoulli(p).log_prob(pg.asarray([0.0, 1.0]))).backward()
    np.testing.assert_array_equal(p.grad, [-1.0, 1.0])


def test_normal_log_prob_of_integers_and_of_a_variable_and_a_nan_mean():
    """A Python std became an array of the value's dtype (0.5 -> 0 for integer values: inf); a
    Variable value's gradient was dropped (torch.distributions differentiates in it); a NaN
    Python mean drew NaN."""
    D = pg.distributions
    np.testing.assert_allclose(D.Normal(0.0, 0.5).log_prob(pg.asarray([0, 1])).data, [-0.2257913526, -2.2257913526])
    v = pg.Variable(np.array([0.5, -1.0]))
    pg.sum(D.Normal(0.0, 2.0).log_prob(v)).backward()
    np.testing.assert_allclose(v.grad, [-0.125, 0.25])
    with pytest.raises(ValueError, match="mean must not be NaN"):
        D.Normal(float("nan"), 1.0).sample()


def test_integer_parameters_draw_from_their_distribution(xp):
    """Integer parameters are weights and moments like floating ones: a uniform or normal draw made
    in their integer dtype was all zeros, so Categorical([1, 2, 3]) drew class 0 every time and
    Normal(int, int) returned its mean, truncated."""
    pg.seed(0)
    k = to_np(pg.distributions.Categorical(xp.asarray([1, 2, 3])).sample(6000))
    np.testing.assert_allclose(np.bincount(k, minlength=3) / 6000, [1 / 6, 2 / 6, 3 / 6], atol=0.03)
    s = pg.distributions.Normal(xp.asarray([0, 10]), xp.asarray([1, 2])).sample(4000)
    assert xp.isdtype(s.dtype, "real floating")
    s = to_np(s)
    np.testing.assert_allclose(s.mean(axis=0), [0, 10], atol=0.15)
    np.testing.assert_allclose(s.std(axis=0), [1, 2], rtol=0.05)
    assert to_np(pg.distributions.Bernoulli(xp.asarray([0, 1, 1])).sample()).tolist() == [0, 1, 1]
    lp = to_np(pg.distributions.Categorical(xp.asarray([1, 2, 3])).log_prob(xp.asarray([0, 2])).data)
    np.testing.assert_allclose(lp, np.log([1 / 6, 3 / 6]), rtol=1e-12)
    pg.seed(None)


def test_float16_parameters_draw_without_the_rounding_bias_of_a_float16_uniform():
    """Uniforms for float16 parameters are drawn and compared in float32 at least (float64 for the
    distributions, float32 for dropout's mask): a float16 uniform is a
    float64 draw rounded to the nearest float16, so a draw within half a step below p compared
    equal to it: Bernoulli(0.99951) failed 732 times in a million instead of 488, and dropout
    with ratio 0.9995 kept 732 elements in a million instead of 500."""
    pg.seed(0)
    n = 1_000_000
    p = np.float16(0.9995)  # 0.99951171875 in float16
    misses = n - int(np.sum(np.asarray(pg.distributions.Bernoulli(np.full(n, p)).sample(), dtype=np.float64)))
    expected = n * (1 - float(p))  # 488, one standard deviation 22
    assert abs(misses - expected) < 5 * math.sqrt(expected), misses
    kept = int(np.count_nonzero(F.dropout(pg.Variable(np.ones(n, dtype=np.float16)), 0.9995).data))
    assert abs(kept - 500) < 5 * math.sqrt(500), kept
    pg.seed(None)


def test_categorical_rows_whose_sum_overflows_draw_and_score_correctly():
    """Weights are divided by their row's largest before they are summed: two weights of 1e308
    summed to inf, and every draw was the index where the sum first overflowed (1), with
    log_prob -inf; float16 counts past 65504 overflowed the same way."""
    pg.seed(0)
    w = np.array([[1e308, 1e308, 1e292]] * 4000)
    k = np.asarray(pg.distributions.Categorical(w).sample())
    np.testing.assert_allclose(np.bincount(k, minlength=3) / 4000, [0.5, 0.5, 0.0], atol=0.04)
    probs = pg.Variable(np.array([40000.0, 40000.0, 20000.0], dtype=np.float16))
    lp = pg.distributions.Categorical(probs).log_prob(np.array(2))
    np.testing.assert_allclose(float(lp.data), math.log(0.2), rtol=1e-3)
    lp.backward()
    np.testing.assert_allclose(probs.grad.astype(np.float64), [-1e-5, -1e-5, 4e-5], rtol=1e-2)
    with pytest.raises(ValueError, match=r"at least one class, got shape \(2, 0\)"):
        pg.distributions.Categorical(np.ones((2, 0))).sample()
    pg.seed(None)


def test_dropout_refuses_an_integer_input_naming_its_dtype():
    """dropout of an integer array dropped every element (its uniform draw, in the integer dtype,
    was 0 everywhere, and 0 >= ratio never held); as in PyTorch, it is an error."""
    with pytest.raises(TypeError, match="dropout: x must have a real floating dtype, got int64"):
        F.dropout(pg.Variable(np.arange(1, 9)), 0.5)


def test_bernoulli_log_prob_of_a_python_probability(xp):
    """Bernoulli(0.3).log_prob on array_api_strict called where() with two Python numbers, which
    the standard does not take (a TypeError); now an array of the default floating dtype."""
    lp = to_np(pg.distributions.Bernoulli(0.3).log_prob(xp.asarray([1.0, 0.0])).data)
    np.testing.assert_allclose(lp, np.log([0.3, 0.7]), rtol=1e-12)


@pytest.mark.parametrize("backend", ["numpy", "array_api_strict", "dask"])
def test_bernoulli_log_prob_of_a_python_probability_follows_the_value(backend):
    """Bernoulli(0.3).log_prob made p an array of the current backend's default dtype: a float32
    value gave float64, and a value of another backend a mix of backends in where(). The result
    is in the value's backend and dtype, as Normal(0.0, 1.0)'s; an integer value gives the default."""
    if backend == "dask":
        pytest.importorskip("dask", reason="the dask backend plugin needs dask")
    xp = pg.get_backend(backend).xp
    lp = pg.distributions.Bernoulli(0.3).log_prob(xp.asarray([1.0, 0.0], dtype=xp.float32))
    assert lp.dtype == xp.float32 and isinstance(lp.data, pg.get_backend(backend).array_types)
    np.testing.assert_allclose(to_np(pg.to_backend(lp.data, "numpy")), np.log([0.3, 0.7]), rtol=1e-6)
    lp = pg.distributions.Bernoulli(0.3).log_prob(xp.asarray([1, 0]))
    assert lp.dtype == xp.float64


@pytest.mark.parametrize("seed", [-1, 1.5, "abc", np.float64(2.0), True])
def test_seed_refuses_what_is_not_a_non_negative_integer(seed):
    """pg.seed(-1), pg.seed(1.5) and pg.seed("abc") were taken and failed at the first draw with the
    plugin's own error, or not at all (pg.seed(True) was the seed 1); NumPy's integers and None stay seeds."""
    with pytest.raises((TypeError, ValueError), match="non-negative integer or None, got"):
        pg.seed(seed)
    pg.seed(np.int64(3))
    a = np.asarray(pg.distributions.Normal(0.0, 1.0).sample(5))
    pg.seed(3)
    np.testing.assert_array_equal(np.asarray(pg.distributions.Normal(0.0, 1.0).sample(5)), a)
    pg.seed(None)


def test_numpy_draws_float32_and_float16_numbers_in_float32():
    """The numpy plugin drew float32 numbers in float64 and cast them: 12 MB at the peak for 4 MB of
    draws. They are drawn in float32 now (a uniform one is then kept below high: one more array),
    within their bounds, with their distribution's moments; float16 ones go through float32."""
    import tracemalloc

    gen = pg.get_backend("numpy").random_generator(0)
    n = 1_000_000
    tracemalloc.start()
    try:
        for draw, most in (("normal", 1.1), ("uniform", 2.1)):
            tracemalloc.reset_peak()
            base = tracemalloc.get_traced_memory()[0]
            a = getattr(gen, draw)((n,), dtype=np.float32)
            assert a.dtype == np.float32 and tracemalloc.get_traced_memory()[1] - base <= most * a.nbytes, draw
            del a
    finally:
        tracemalloc.stop()
    for dtype in (np.float32, np.float16):
        z = gen.normal((n,), dtype=dtype, mean=3.0, std=2.0)
        assert z.dtype == dtype and z.shape == (n,)
        assert abs(z.mean(dtype=np.float64) - 3.0) < 0.01 and abs(z.std(dtype=np.float64) - 2.0) < 0.01
        u = gen.uniform((n,), dtype=dtype, low=-5.0, high=5.0)
        assert u.dtype == dtype and float(u.min()) >= -5.0 and float(u.max()) < 5.0
        assert abs(u.mean(dtype=np.float64)) < 0.02
        # an interval of four float32 numbers: the scaled draws round up to high often, and are kept below it
        high = 1.0 + 4 * 2.0**-23
        u = gen.uniform((10_000,), dtype=np.float32, low=1.0, high=high)
        assert set(u.tolist()) == {1.0 + k * 2.0**-23 for k in range(4)}


class _Ends:
    """A generator of the protocol whose uniform draws are the ends of [low, high): low itself, and the largest
    number below high (both allowed by the contract)."""

    def __init__(self, at_low: bool) -> None:
        self.at_low = at_low

    def uniform(self, shape, *, dtype, low=0.0, high=1.0):
        value = low if self.at_low else np.nextafter(np.asarray(high, dtype=dtype), np.asarray(low, dtype=dtype))
        return np.full(shape, value, dtype=dtype)

    def normal(self, shape, *, dtype, mean=0.0, std=1.0):
        return np.full(shape, mean, dtype=dtype)


@pytest.mark.parametrize("at_low", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_categorical_never_draws_a_class_of_weight_zero_at_the_ends_of_the_uniform(at_low, dtype):
    """A uniform draw of exactly 0 (once in 2**24 draws in float32) gave class 0 of weight 0: the inverse
    CDF counted the classes whose cumulative weight is below u * total, none when u is 0."""
    from polygrad.distributions import Categorical

    probs = np.array([[0.0, 0.25, 0.75, 0.0], [0.0, 0.0, 1.0, 0.0]], dtype=dtype)
    k = np.asarray(Categorical(pg.asarray(probs)).sample((3,), rng=_Ends(at_low)))
    assert (probs[np.arange(2), k] > 0).all(), k


def test_bernoulli_of_a_tiny_float32_p_draws_in_the_widest_float():
    """A float32 uniform is a multiple of 2**-24, so Bernoulli(p) of a float32 p drew 1 at 2**-24 whatever
    smaller p was (1e-10: 600 times too often); the uniforms are drawn and compared in float64."""
    pg.seed(0)
    b = pg.distributions.Bernoulli(pg.asarray(np.full((), 1e-9, dtype=np.float32)))
    ones = 0
    for _ in range(5):
        s = np.asarray(b.sample((10_000_000,)))
        assert s.dtype == np.float32
        ones += int(np.count_nonzero(s))
    assert ones <= 1, ones  # 0.05 expected (about 3 from float32 draws)
    pg.seed(None)


def test_categorical_draws_a_class_of_a_tiny_share_in_the_widest_float():
    """A class whose share is below 2**-24 was never drawn from float32 parameters: 1 - u is at least
    2**-24 for a float32 uniform. At the largest uniform below 1, the draw in float64 reaches it."""
    from polygrad.distributions import Categorical

    probs = np.array([2.0**-30, 1.0], dtype=np.float32)
    k = np.asarray(Categorical(pg.asarray(probs)).sample((3,), rng=_Ends(False)))
    assert k.tolist() == [0, 0, 0], k


@pytest.mark.parametrize("make, name", [
    (lambda P, Q: pg.distributions.Categorical(Q), "Categorical.sample: probs"),
    (lambda P, Q: pg.distributions.Bernoulli(P), "Bernoulli.sample: p"),
    (lambda P, Q: pg.distributions.Normal(0.0, P), "Normal.sample: std"),
], ids=["categorical", "bernoulli", "normal_std"])
def test_sample_of_symbolic_parameters_is_refused_naming_the_compiled_draws(make, name):
    """A distribution of a pg.function graph's parameters failed with "'SymbolicBackend' object has no
    attribute 'rng'"; sample() draws now, and a compiled function draws with the F.* functions."""
    from polygrad import symbolic as T

    P, Q = T.tensor("float32", (3,), name="p"), T.tensor("float32", (2, 3), name="q")
    with pytest.raises(NotImplementedError, match=rf"polygrad\.distributions\.{name} is symbolic .*F\.bernoulli"):
        make(P, Q).sample((5,))
    pg.seed(0)
    k = pg.function([Q], F.categorical(Q))(np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], np.float32))
    assert np.asarray(k).tolist() == [1, 2]


@pytest.mark.parametrize("make, value, name", [
    (lambda P, Q: pg.distributions.Bernoulli(P), "v", "Bernoulli.log_prob: p"),
    (lambda P, Q: pg.distributions.Bernoulli(pg.asarray(np.float32([0.5, 0.5, 0.5]))), "v", "Bernoulli.log_prob: value"),
    (lambda P, Q: pg.distributions.Categorical(Q), "k", "Categorical.log_prob: probs"),
], ids=["bernoulli_p", "bernoulli_value", "categorical_probs"])
def test_log_prob_on_arrays_of_symbolic_variables_is_refused_naming_it(make, value, name):
    """Bernoulli's and Categorical's log_prob compute on arrays: on a pg.function graph's variables they
    failed with "cannot compare the symbolic array v with an operator" or "'NoneType' object is not
    subscriptable". Refused naming the distribution and the argument; Normal's takes them."""
    from polygrad import symbolic as T

    P, Q = T.tensor("float32", (3,), name="p"), T.tensor("float32", (2, 3), name="q")
    values = {"v": T.tensor("float32", (3,), name="v"), "k": T.tensor("int64", (2,), name="k")}
    with pytest.raises(NotImplementedError, match=rf"polygrad\.distributions\.{name} is symbolic .*pg\.\* operations"):
        make(P, Q).log_prob(values[value])
    f = pg.function([P, values["v"]], pg.distributions.Normal(P, 1.0).log_prob(values["v"]))
    got = f(np.float32([0.0, 1.0, 2.0]), np.float32([0.0, 0.0, 0.0]))
    np.testing.assert_allclose(got, -0.5 * np.float32([0.0, 1.0, 4.0]) - 0.5 * np.log(2 * np.pi), rtol=1e-6)

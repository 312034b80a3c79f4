"""Random draws: rows of the op table whose kernel samples from a distribution
with the backend's random numbers (``deterministic=False``: a compiled function
never merges or folds two draws), and whose node takes a reward.

The sample is not differentiable in the ordinary sense; instead the user
rewards it, ``sample.reinforce(reward)``, and backward adds the score-function
(REINFORCE) estimate to the parameters' gradients::

    d(loss)/d(theta) += -reward * d log p(sample; theta) / d(theta)

Backward through a draw that has no reward raises an error naming it. The same
estimator written by hand, with ``log_prob``::

    d = pg.distributions.Bernoulli(p)
    s = d.sample()
    surrogate = -pg.sum(reward * d.log_prob(s))

The public functions are ``polygrad.functions.bernoulli``, ``categorical``,
``multinomial`` and ``normal`` (PyTorch 0.x's stochastic functions).
"""

from __future__ import annotations

from typing import Any

from polygrad import distributions as D
from polygrad.core import config
from polygrad.core.dispatch import SCALARS, backend_of_type
from polygrad.core.engine import grad as _grad
from polygrad.core.node import freed_error
from polygrad.core.op import Op, defvjp
from polygrad.core.primitive import Primitive, apply
from polygrad.core.variable import Variable
from polygrad.ops._export import names, public
from polygrad.ops.statistical import sum


class StochasticFunction(Primitive):
    """Graph node of one draw: the row keeps the parameters and the sample; backward
    turns the reward into gradients of the parameters (REINFORCE)."""

    accepts_no_grad = True  # backward may start at a sample without an output gradient
    dist_class: type = D.Distribution  # the distribution drawn from (set by each row's node class)
    reward: Any = None

    def reinforce(self, index: int, reward: Any) -> None:
        """Take the reward of output ``index`` (checked against the sample's shape and backend)."""
        if self.reward is not None:
            raise RuntimeError(f"polygrad: {self.label} was already given a reward; reinforce() takes one reward per sample")
        r = reward._data if isinstance(reward, Variable) else reward
        if type(r) not in (int, float):
            sample = self._sample()
            b_reward = backend_of_type(type(r))
            if b_reward is not self.backend:
                raise TypeError(
                    f"polygrad: the reward for {self.label} is a {b_reward.name!r} array but the sample is on "
                    f"{self.backend.name!r}; move it with pg.to_backend(reward, {self.backend.name!r})"
                )
            out = self.outputs[index]() if self.outputs else None
            shape = tuple(out.shape) if out is not None else tuple(sample.shape)
            rs = tuple(r.shape)
            if len(rs) > len(shape) or any(a != b and a != 1 for a, b in zip(rs[::-1], shape[::-1])):
                raise ValueError(
                    f"polygrad: the reward for {self.label} has shape {rs}, which does not broadcast to the sample's shape {shape}"
                )
        self.reward = r

    def _sample(self) -> Any:
        if self.saved is None:
            raise freed_error(self)
        return self.saved[len(self.edges)]

    def _value(self, sample: Any) -> Any:
        """The sample as the distribution's ``log_prob`` takes it."""
        return sample

    def _backward(self, grad_outputs: tuple, create_graph: bool) -> tuple:
        if self.reward is None:
            raise RuntimeError(
                f"polygrad: backward reached the stochastic function {self.label} whose sample has no reward; "
                f"call sample.reinforce(reward) before backward"
            )
        if self.checks:  # the parameters and the sample as drawn (a change after it changed the gradient)
            self._check_versions()
        raw = self._sample()
        sample = self._value(raw)
        n_in = len(self.edges)
        with config.force_backprop_mode():
            params = [p if e is None or type(p) in SCALARS else
                      self._input_variable(i, p) if create_graph else Variable(p, requires_grad=True)
                      for i, (p, e) in enumerate(zip(self.saved[:n_in], self.edges))]
            reward = self.reward
            if type(reward) not in (int, float):
                if raw.ndim != sample.ndim:  # a trailing axis dropped: the reward broadcast to the sample first
                    xp = backend_of_type(type(reward)).xp
                    reward = xp.reshape(xp.broadcast_to(reward, tuple(raw.shape)), tuple(sample.shape))
                reward = Variable._make(reward)
            dist = self.dist_class(*params)
            dist.validate_args = False  # its own sample: in the support
            surrogate = -sum(reward * dist.log_prob(sample))
            wrt = [p for p, e in zip(params, self.edges) if e is not None]
            gs = iter(_grad(surrogate, wrt, create_graph=create_graph))
        return [None if e is None else (lambda g: g if create_graph or g is None else g._data)(next(gs))
                for e in self.edges]


class _Trailing(StochasticFunction):
    """A categorical draw with a trailing axis of 1 (PyTorch 0.x ``multinomial``)."""

    dist_class = D.Categorical

    def _value(self, sample: Any) -> Any:
        return backend_of_type(type(sample)).xp.reshape(sample, tuple(sample.shape[:-1]))


def _node(dist: type) -> type:
    return type(f"{dist.__name__}Draw", (StochasticFunction,), {"dist_class": dist, "__module__": __name__})


def _sample(node: type) -> Any:
    """The kernel of a draw: one sample of ``node.dist_class`` with the given parameters."""

    def draw(xp: Any, *params: Any) -> Any:
        return node.dist_class(*params).sample()

    return draw


def _sample_with_trailing_axis(xp: Any, probs: Any) -> Any:
    k = D.Categorical(probs).sample()
    return xp.reshape(k, tuple(k.shape) + (1,))


def _draw_row(name: str, node: type, n_params: int, kernel: Any = None) -> Op:
    """The row of a draw: not deterministic, its node takes a reward, it keeps its
    parameters and the sample for backward."""
    op = Op(name, kernel or _sample(node), node_class=node, deterministic=False)
    return defvjp(op, saves="xyzw"[:n_params] + " ans")


BERNOULLI = _draw_row("bernoulli", _node(D.Bernoulli), 1)


@public(standard=False)
def bernoulli(p: Any) -> Variable:
    """A 0/1 sample, 1 with probability ``p``; ``sample.reinforce(reward)`` gives ``p`` a REINFORCE gradient."""
    return apply(BERNOULLI, (p,))


CATEGORICAL = _draw_row("categorical", _node(D.Categorical), 1)


@public(standard=False)
def categorical(probs: Any) -> Variable:
    """An index drawn from each row of ``probs`` (shape (..., K)); result shape (...)."""
    return apply(CATEGORICAL, (probs,))


MULTINOMIAL = _draw_row("multinomial", _Trailing, 1, _sample_with_trailing_axis)


@public(standard=False)
def multinomial(probs: Any, num_samples: int = 1) -> Variable:
    """PyTorch 0.x ``probs.multinomial()``: one draw per row, with a trailing axis of 1."""
    if num_samples != 1:
        raise NotImplementedError("polygrad.functions.multinomial draws one sample per row (num_samples=1)")
    return apply(MULTINOMIAL, (probs,))


NORMAL = _draw_row("normal", _node(D.Normal), 2)


@public(standard=False)
def normal(mean: Any, std: Any) -> Variable:
    """A Gaussian sample; ``reinforce`` gives ``mean`` and ``std`` REINFORCE gradients."""
    return apply(NORMAL, (mean, std))


__all__ = names(__name__) + ["StochasticFunction"]

"""Stochastic functions and REINFORCE (the PyTorch 0.x ``reinforce`` API).

A stochastic function draws a sample from a distribution whose parameters are
Variables. The sample is not differentiable in the ordinary sense; instead the
user rewards it, ``sample.reinforce(reward)``, and backward adds the
score-function (REINFORCE) estimate to the parameters' gradients::

    d(loss)/d(theta) += -reward * d log p(sample; theta) / d(theta)

Backward through a stochastic node that has no reward raises an error naming
it. The same estimator written by hand, with ``log_prob``::

    d = pg.distributions.Bernoulli(p)
    s = d.sample()
    surrogate = -pg.sum(reward * d.log_prob(s))
"""

from __future__ import annotations

import weakref
from typing import Any

from polygrad import distributions as D
from polygrad.core import config
from polygrad.core.engine import grad as _grad
from polygrad.core.dispatch import backend_of_type
from polygrad.core.node import Node, freed_error
from polygrad.core.variable import Variable
from polygrad.ops import sum

__all__ = ["bernoulli", "categorical", "multinomial", "normal", "StochasticFunction"]


class StochasticFunction(Node):
    """Graph node of one draw: keeps the parameters and the sample; backward
    turns the reward into gradients of the parameters."""

    accepts_no_grad = True  # backward may start at a sample without an output gradient

    def __init__(self, dist_class: type, label: str, params: tuple, sample: Any) -> None:
        super().__init__()
        self.dist_class = dist_class
        self._label = label
        self.params = tuple(p._data if isinstance(p, Variable) else p for p in params)
        self.edges = tuple(p._edge() if isinstance(p, Variable) else None for p in params)
        self.sample = sample
        self.reward: Any = None

    @property
    def label(self) -> str:
        return self._label

    def reinforce(self, index: int, reward: Any) -> None:
        if self.reward is not None:
            raise RuntimeError(f"polygrad: {self.label} was already given a reward; reinforce() takes one reward per sample")
        r = reward._data if isinstance(reward, Variable) else reward
        if type(r) not in (int, float):
            b_sample = backend_of_type(type(self.sample))
            b_reward = backend_of_type(type(r))
            if b_reward is not b_sample:
                raise TypeError(
                    f"polygrad: the reward for {self.label} is a {b_reward.name!r} array but the sample is on "
                    f"{b_sample.name!r}; move it with pg.to_backend(reward, {b_sample.name!r})"
                )
            out = self.outputs[index]() if self.outputs else None
            shape = tuple(out.shape) if out is not None else tuple(self.sample.shape)
            rs = tuple(r.shape)
            if len(rs) > len(shape) or any(a != b and a != 1 for a, b in zip(rs[::-1], shape[::-1])):
                raise ValueError(
                    f"polygrad: the reward for {self.label} has shape {rs}, which does not broadcast to the sample's shape {shape}"
                )
        self.reward = r

    def _backward(self, grad_outputs: tuple, create_graph: bool) -> tuple:
        if self.reward is None:
            raise RuntimeError(
                f"polygrad: backward reached the stochastic function {self.label} whose sample has no reward; "
                f"call sample.reinforce(reward) before backward"
            )
        if self.params is None:
            raise freed_error(self)
        with config.force_backprop_mode():
            if create_graph:
                params = [self._input_variable(i, p) if e is not None else p for i, (p, e) in enumerate(zip(self.params, self.edges))]
            else:
                params = [Variable(p, requires_grad=True) if e is not None else p for p, e in zip(self.params, self.edges)]
            reward = self.reward
            if type(reward) not in (int, float) and reward.ndim > self.sample.ndim:
                reward = backend_of_type(type(reward)).xp.reshape(reward, tuple(self.sample.shape))
            if type(reward) not in (int, float):
                reward = Variable(reward, requires_grad=False)
            surrogate = -sum(reward * self.dist_class(*params).log_prob(self.sample))
            wrt = [p for p, e in zip(params, self.edges) if e is not None]
            gs = iter(_grad(surrogate, wrt, create_graph=create_graph))
        out = []
        for e in self.edges:
            if e is None:
                out.append(None)
                continue
            g = next(gs)
            out.append(g if create_graph or g is None else g._data)
        return out

    def _release(self) -> None:
        self._freed = True
        self.params = None

    def _hook_in_data(self) -> tuple:
        return tuple(self.params or ())


def _draw(dist: D.Distribution, label: str, params: tuple, out_shape: Any = None) -> Variable:
    """Sample ``dist``; the result's creator is a StochasticFunction when a parameter requires grad."""
    sample = dist.sample()
    v = Variable(sample, requires_grad=False)
    if config.enable_backprop.get() and any(isinstance(p, Variable) and p._requires_grad for p in params):
        node = StochasticFunction(type(dist), label, params, sample)
        v._node = node
        v._requires_grad = True
        node.outputs = (weakref.ref(v),)
    if out_shape is not None:
        v._data = backend_of_type(type(sample)).xp.reshape(sample, out_shape(sample))
    return v


def bernoulli(p: Any) -> Variable:
    """A 0/1 sample, 1 with probability ``p``; ``sample.reinforce(reward)`` gives ``p`` a REINFORCE gradient."""
    return _draw(D.Bernoulli(p), "bernoulli", (p,))


def categorical(probs: Any) -> Variable:
    """An index drawn from each row of ``probs`` (shape (..., K)); result shape (...)."""
    return _draw(D.Categorical(probs), "categorical", (probs,))


def multinomial(probs: Any, num_samples: int = 1) -> Variable:
    """PyTorch 0.x ``probs.multinomial()``: one draw per row, with a trailing axis of 1."""
    if num_samples != 1:
        raise NotImplementedError("polygrad.functions.multinomial draws one sample per row (num_samples=1)")
    return _draw(D.Categorical(probs), "multinomial", (probs,), out_shape=lambda s: tuple(s.shape) + (1,))


def normal(mean: Any, std: Any) -> Variable:
    """A Gaussian sample; ``reinforce`` gives ``mean`` and ``std`` REINFORCE gradients."""
    return _draw(D.Normal(mean, std), "normal", (mean, std))

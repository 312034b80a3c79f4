"""Stochastic functions and REINFORCE (the PyTorch 0.x ``reinforce`` API): the
draws are rows of the op table, :mod:`polygrad.ops.random`."""

from polygrad.ops.random import StochasticFunction, bernoulli, categorical, multinomial, normal

__all__ = ["bernoulli", "categorical", "multinomial", "normal", "StochasticFunction"]

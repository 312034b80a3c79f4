"""Modes and backward bookkeeping: no_backprop_mode, gradient accumulation,
retain_graph, pg.grad and create_graph, on the backend's arrays."""

from __future__ import annotations

import pytest

import polygrad as pg
from polygrad.core.dispatch import backend_of_type
from polygrad_conformance._util import tolist


def _x(xp, dtype, values=(1.0, 2.0, 3.0)):
    return pg.Variable(xp.asarray(list(values), dtype=dtype))


def test_no_backprop_mode_builds_no_graph(xp, float_dtype):
    """Inside no_backprop_mode ops record no creator; outside they do again."""
    x = _x(xp, float_dtype)
    with pg.no_backprop_mode():
        y = pg.exp(x) * 2.0
        assert not pg.is_backprop_enabled()
    assert y.creator is None and not y.requires_grad
    assert pg.exp(x).creator is not None


def test_force_backprop_mode_inside_no_backprop_mode(xp, float_dtype):
    """force_backprop_mode builds graphs again inside no_backprop_mode."""
    x = _x(xp, float_dtype)
    with pg.no_backprop_mode():
        with pg.force_backprop_mode():
            y = pg.exp(x)
    assert y.creator is not None


def test_gradients_accumulate(pg_backend, xp, float_dtype):
    """Two backward passes add into x.grad; cleargrad resets it."""
    x = _x(xp, float_dtype)
    pg.sum(x * x).backward()
    pg.sum(x * x).backward()
    assert backend_of_type(type(x.grad)) is pg_backend
    assert tolist(x.grad) == [4.0, 8.0, 12.0]
    x.cleargrad()
    assert x.grad is None


def test_second_backward_needs_retain_graph(xp, float_dtype):
    """Backward twice through the same graph fails clearly, unless retain_graph=True."""
    x = _x(xp, float_dtype)
    y = pg.sum(pg.exp(x))
    y.backward(retain_graph=True)
    y.backward()
    with pytest.raises(RuntimeError, match="retain_graph"):
        y.backward()


def test_grad_returns_variables_and_leaves_grad_alone(pg_backend, xp, float_dtype):
    """pg.grad returns gradients as Variables of the backend and leaves .grad untouched."""
    x = _x(xp, float_dtype)
    (gx,) = pg.grad(pg.sum(x * x * x), [x])
    assert isinstance(gx, pg.Variable) and backend_of_type(type(gx.data)) is pg_backend
    assert x.grad is None
    assert tolist(gx) == [3.0, 12.0, 27.0]


def test_create_graph_gives_second_derivative(xp, float_dtype):
    """With create_graph=True the gradient is differentiable: d2/dx2 sum(x^3) = 6x."""
    x = _x(xp, float_dtype)
    (gx,) = pg.grad(pg.sum(x * x * x), [x], create_graph=True)
    assert gx.creator is not None
    (ggx,) = pg.grad(pg.sum(gx), [x])
    assert tolist(ggx) == [6.0, 12.0, 18.0]


def test_volatile_variable_builds_no_graph(xp, float_dtype):
    """Ops on a volatile Variable record nothing."""
    x = pg.Variable(xp.asarray([1.0, 2.0], dtype=float_dtype), volatile=True)
    assert pg.exp(x).creator is None

"""pg.optim, PyTorch 0.x's optimizer interface: parameters without gradient, checkpoints."""

from __future__ import annotations

import numpy as np
import pytest

import polygrad as pg
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

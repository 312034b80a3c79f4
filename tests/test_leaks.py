"""Adversarial: what a long training run keeps alive. Each test drops what a user drops and
checks, with the cyclic collector off, that the arrays behind it are freed at once (a graph
in a reference cycle lives until a full collection, which never sees GPU memory)."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import polygrad as pg


@pytest.fixture
def no_cyclic_gc():
    gc.collect()
    gc.disable()
    yield
    gc.enable()


def test_a_loss_kept_after_backward_keeps_no_gradient(no_cyclic_gc):
    """Each node backward freed kept the whole pass, with every leaf and its gradient array:
    `losses.append(loss)` kept a copy of all parameter gradients per step (the Chainer-style
    example does it)."""
    w = pg.Variable(np.ones(1000))
    loss = pg.sum(w * w)
    loss.backward()
    grad = weakref.ref(w.grad)
    w.cleargrad()
    assert grad() is None  # loss is alive and keeps its graph, not the gradient


@pytest.mark.parametrize("how", ["retain_grad", "pg.grad"])
def test_a_pass_that_retains_or_captures_gradients_leaves_no_cycle(no_cyclic_gc, how):
    """backward(retain_grad=True) and pg.grad put every step's graph in a reference cycle
    (node -> pass -> retained intermediate or captured node -> node): its arrays lived until
    a full collection."""
    w, v = pg.Variable(np.ones(1000)), pg.Variable(np.ones(1000))
    h = pg.tanh(w * 2.0)
    saved = weakref.ref(h.data)
    loss = pg.sum(h * h) + pg.sum(pg.exp(v) * h)
    if how == "retain_grad":
        loss.backward(retain_grad=True)
    else:
        pg.grad(loss, [w])  # (v's part of the graph is pruned: the pass keeps nodes by name)
    del h, loss
    assert saved() is None


def test_a_step_that_raised_under_a_timer_keeps_no_frame(no_cyclic_gc):
    """TimerHook kept the frame of a step whose function raised (and every array its locals
    held) until it timed another step in the same thread."""

    class Boom(pg.Function):
        def forward(self, inputs):
            raise RuntimeError("boom")

    hook = pg.function_hooks.TimerHook()

    def failing():
        data = np.ones(1000)
        with hook:
            try:
                Boom()(pg.Variable(data, requires_grad=False))
            except RuntimeError:
                pass
        return weakref.ref(data)

    assert failing()() is None

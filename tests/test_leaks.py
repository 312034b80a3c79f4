"""Adversarial: what a long training run keeps alive. No graph object outlives its training
step, and what a user drops is freed at once, with the cyclic collector off where a test says
so (a graph in a reference cycle lives until a full collection, which never sees GPU memory)."""

from __future__ import annotations

import gc
import warnings
import weakref

import numpy as np
import pytest

import polygrad as pg
import polygrad.functions as F
import polygrad.links as L


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



def _data(backend):
    rng = np.random.default_rng(0)
    x = pg.asarray(rng.normal(size=(8, 3)).tolist(), "float32", backend=backend)
    t = pg.asarray(rng.normal(size=(8, 2)).tolist(), "float32", backend=backend)
    return x, t


def _train(backend, steps, refs, model):
    x, t = _data(backend)
    losses = []
    for _ in range(steps):
        y = model(pg.Variable(x, requires_grad=False))
        loss = F.mean_squared_error(y, t)
        refs += [weakref.ref(loss), weakref.ref(loss.creator), weakref.ref(y), weakref.ref(y.creator)]
        model.cleargrads()
        loss.backward()
        for p in model.params():
            p.data = p.data - 0.1 * p.grad
        losses.append(float(pg.to_backend(loss.data, "numpy")))
    return losses


def test_training_loop_leaves_no_graph_objects(backend_name):
    """After 100 SGD steps on a Linear model, every loss, output and creator node of the loop is freed."""
    pg.seed(0)
    model = L.Linear(3, 2, backend=backend_name)
    refs = []
    losses = _train(backend_name, 100, refs, model)
    assert losses[-1] < losses[0]
    gc.collect()
    alive = [r() for r in refs if r() is not None]
    assert alive == []


def test_graph_freed_by_reference_counting_alone(backend_name, no_cyclic_gc):
    """With the cyclic GC off, the graph of each step is freed as soon as the step's names are rebound."""
    pg.seed(0)
    model = L.Linear(3, 2, backend=backend_name)
    refs = []
    _train(backend_name, 30, refs, model)
    assert [r for r in refs if r() is not None] == []


def test_user_function_nodes_freed(backend_name):
    """User Function instances and their outputs are freed after backward once dropped."""

    class Square(pg.Function):
        def forward(self, inputs):
            return inputs[0] * inputs[0],

        def backward(self, inputs, grad_outputs):
            return 2 * inputs[0] * grad_outputs[0],

    w = pg.Variable(pg.asarray([1.0, 2.0], backend=backend_name))
    refs = []
    for _ in range(20):
        f = Square()
        y = f(w)
        s = pg.sum(y)
        refs += [weakref.ref(f), weakref.ref(y), weakref.ref(s.creator)]
        s.backward()
    del f, y, s
    gc.collect()
    assert [r for r in refs if r() is not None] == []


def test_graph_freed_without_backward(backend_name):
    """A graph built and dropped without calling backward is freed too."""
    w = pg.Variable(pg.asarray([1.0, 2.0], backend=backend_name))
    refs = []
    for _ in range(20):
        y = pg.exp(w * 2.0)
        refs += [weakref.ref(y), weakref.ref(y.creator)]
    del y
    gc.collect()
    assert [r for r in refs if r() is not None] == []


def test_inplace_training_step_leaves_no_graph_objects(backend_name):
    """Steps using in-place ops (h += b, h *= 2) free their graphs too."""
    w = pg.Variable(pg.asarray([1.0, 2.0], backend=backend_name))
    b = pg.Variable(pg.asarray([0.5, 0.5], backend=backend_name))
    refs = []
    for _ in range(20):
        h = w * 1.0
        h += b
        h *= 2.0
        loss = pg.sum(h * h)
        refs += [weakref.ref(h), weakref.ref(h.creator), weakref.ref(loss.creator)]
        loss.backward()
        w.cleargrad()
        b.cleargrad()
    del h, loss
    gc.collect()
    assert [r for r in refs if r() is not None] == []


def test_hooks_do_not_keep_graph_alive(backend_name):
    """Variable hooks (register_hook) and retain_grad do not keep the step's graph alive."""
    w = pg.Variable(pg.asarray([1.0, 2.0], backend=backend_name))
    refs = []
    for _ in range(20):
        h = w * 3.0
        h.register_hook(lambda g: g * 1.0)
        loss = pg.sum(pg.exp(h))
        refs += [weakref.ref(h), weakref.ref(h.creator), weakref.ref(loss.creator)]
        loss.backward(retain_grad=True)
        w.cleargrad()
    del h, loss
    gc.collect()
    assert [r for r in refs if r() is not None] == []


@pytest.mark.parametrize("hook", ["TimerHook", "MemoryHook"])
def test_a_profiling_hook_keeps_no_graph_alive(backend_name, no_cyclic_gc, hook):
    """TimerHook and MemoryHook kept every node they measured in call_history, with the arrays it
    saved for backward: a forward-only loop (a validation pass) under a TimerHook kept 200 MB of
    activations for as long as the hook lived."""
    w = pg.Variable(pg.asarray([1.0, 2.0], backend=backend_name))
    refs = []
    with getattr(pg.function_hooks, hook)() as h:
        for _ in range(5):
            y = pg.sum(pg.tanh(w * 2.0))
            refs += [weakref.ref(y), weakref.ref(y.creator)]
            del y
    assert len(h.call_history) == 15
    assert [r for r in refs if r() is not None] == []


def test_backward_with_create_graph_warns_of_the_cycle_a_leaf_and_its_gradient_make(no_cyclic_gc):
    """x -> x.grad_var -> its graph -> the edge to x: x, its gradient and every array the graph saved
    lived until a full collection, silently (PyTorch warns). pg.grad makes no cycle; cleargrad breaks it."""
    x = pg.Variable(np.ones(1000), name="x")
    with pytest.warns(UserWarning, match=r"made the .grad of variable 'x' \(shape \(1000,\)\) a Variable with a "
                                         r"graph.*reference cycle.*pg.grad") as caught:
        pg.sum(pg.exp(x) * pg.tanh(x)).backward(create_graph=True)
    assert caught[0].filename == __file__  # the user's line
    leaf = weakref.ref(x)
    x.cleargrad()
    del x
    assert leaf() is None
    y = pg.Variable(np.ones(1000))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pg.grad(pg.sum(pg.exp(y) * pg.tanh(y)), [y], create_graph=True)
        pg.sum(y * 2.0).backward(create_graph=True)  # a gradient with no graph: no cycle
    leaf = weakref.ref(y)
    del y
    assert leaf() is None

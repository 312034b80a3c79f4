"""No graph object outlives its training step."""

from __future__ import annotations

import gc
import weakref

import numpy as np

import polygrad as pg
import polygrad.functions as F
import polygrad.links as L


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


def test_graph_freed_by_reference_counting_alone(backend_name):
    """With the cyclic GC off, the graph of each step is freed as soon as the step's names are rebound."""
    pg.seed(0)
    model = L.Linear(3, 2, backend=backend_name)
    refs = []
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        _train(backend_name, 30, refs, model)
        alive = [r for r in refs if r() is not None]
    finally:
        if was_enabled:
            gc.enable()
    assert alive == []


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

"""End to end: a 2-layer MLP with relu and softmax_cross_entropy, trained by
hand-written SGD on a small synthetic classification set."""

from __future__ import annotations

import numpy as np

import polygrad as pg
import polygrad.functions as F
import polygrad.links as L

from conftest import to_np


class MLP(pg.Chain):
    def __init__(self, n_hidden, n_out):
        super().__init__()
        with self.init_scope():
            self.l1 = L.Linear(None, n_hidden)
            self.l2 = L.Linear(n_hidden, n_out)

    def forward(self, x):
        return self.l2(F.relu(self.l1(x)))


def blobs(n_per_blob=40, seed=0):
    """Four Gaussian blobs at the corners of a square, labelled XOR-wise (not linearly
    separable, so the hidden relu layer must learn): (x float32 (N, 2), t int64 (N,))."""
    r = np.random.default_rng(seed)
    centers = np.array([[1.0, 1.0], [-1.0, -1.0], [1.0, -1.0], [-1.0, 1.0]])
    labels = np.array([0, 0, 1, 1])
    x = np.concatenate([c + 0.35 * r.standard_normal((n_per_blob, 2)) for c in centers])
    t = np.repeat(labels, n_per_blob)
    perm = r.permutation(len(t))
    return x[perm].astype(np.float32), t[perm].astype(np.int64)


def train(backend_name, steps, lr=0.5):
    """Full-batch SGD; returns the losses and the final train accuracy."""
    with pg.using_backend(backend_name) as b:
        xp = b.xp
        xs, ts = blobs()
        x = xp.asarray(xs.tolist(), dtype=xp.float32)
        t = xp.asarray(ts.tolist(), dtype=xp.int64)
        pg.seed(0)
        model = MLP(16, 2)
        losses = []
        for _ in range(steps):
            model.cleargrads()
            loss = F.softmax_cross_entropy(model(x), t)
            loss.backward()
            for p in model.params():
                p.data = p.data - lr * p.grad
            losses.append(float(to_np(loss)))
        with pg.no_backprop_mode():
            pred = xp.argmax(model(x).data, axis=1)
        accuracy = float(to_np(xp.mean(xp.astype(pred == t, xp.float32))))
        return losses, accuracy, model


def test_mlp_learns_blobs_on_numpy():
    """On numpy, 150 SGD steps on XOR-placed blobs bring the loss down by far and train accuracy above 90%."""
    losses, accuracy, _ = train("numpy", steps=150)
    assert losses[-1] < 0.3 * losses[0], losses[::15]
    assert accuracy > 0.9, accuracy


def test_mlp_loss_falls_on_array_api_strict():
    """On array_api_strict, a few SGD steps make the loss fall."""
    losses, _, model = train("array_api_strict", steps=8)
    assert losses[-1] < losses[0], losses
    assert all(p.backend.name == "array_api_strict" for p in model.params())


def test_training_keeps_parameter_dtype_and_shape():
    """SGD updates keep every parameter float32 and of its shape."""
    _, _, model = train("numpy", steps=3)
    shapes = {name: p.shape for name, p in model.namedparams()}
    assert shapes == {"/l1/W": (16, 2), "/l1/b": (16,), "/l2/W": (2, 16), "/l2/b": (2,)}
    assert all(p.dtype == np.float32 for p in model.params())

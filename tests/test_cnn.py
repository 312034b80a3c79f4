"""A small convolutional network built from polygrad.functions and links:
conv -> relu -> max pool -> linear learns to tell bars apart, and compiled
(with dropout and a sigmoid cross-entropy loss) it matches the eager values."""

from __future__ import annotations

import numpy as np

import polygrad as pg
import polygrad.functions as F
import polygrad.links as L

from conftest import normal
from conftest import to_np, assert_values_close as assert_close


class SmallCNN(pg.Chain):
    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.conv = L.Convolution2D(1, 4, 3, pad=1, dtype="float64")
            self.fc = L.Linear(4 * 4 * 4, 2, dtype="float64")

    def forward(self, x):
        return self.fc(F.max_pooling_2d(F.relu(self.conv(x)), 2))


def bars(n, seed):
    """8x8 images of a vertical (label 0) or horizontal (label 1) bar at a random place, plus noise."""
    r = np.random.default_rng(seed)
    x = r.normal(0, 0.3, (n, 1, 8, 8))
    t = r.integers(0, 2, n)
    pos = r.integers(1, 7, n)
    for i in range(n):
        if t[i] == 0:
            x[i, 0, :, pos[i]] += 1.0
        else:
            x[i, 0, pos[i], :] += 1.0
    return x, t


def test_small_cnn_learns_bars():
    """conv -> relu -> max pool -> linear, trained by SGD, drives the loss down and classifies."""
    pg.seed(0)
    model = SmallCNN()
    x, t = bars(64, 0)
    losses = []
    for _ in range(40):
        loss = F.softmax_cross_entropy(model(x), t)
        model.cleargrads()
        loss.backward()
        for p in model.params():
            p.data -= 0.5 * p.grad
        losses.append(float(loss.data))
    assert losses[-1] < 0.3 * losses[0], losses
    xt, tt = bars(200, 1)
    with pg.test_mode(), pg.no_backprop_mode():
        accuracy = (to_np(model(xt)).argmax(axis=1) == tt).mean()
    assert accuracy > 0.9, accuracy


# ---------------------------------------------------------------------------
# Compiled
# ---------------------------------------------------------------------------


def test_compiled_cnn_matches_eager_and_redraws_dropout():
    """conv, pooling and sigmoid_cross_entropy compile to the eager values; dropout draws a new mask per call."""
    from polygrad import symbolic as S

    x, W, t = S.tensor("float64", (2, 1, 6, 6), "x"), S.tensor("float64", (3, 1, 3, 3), "W"), S.tensor("int64", (2, 3), "t")
    h = pg.reshape(F.max_pooling_2d(F.relu(F.convolution_2d(x, W, pad=1)), 3, 2, 1), (2, -1))
    loss = F.sigmoid_cross_entropy(h[:, :3], t)
    f = pg.function([x, W, t], [loss, S.grad(loss, W), pg.sum(F.dropout(h))])
    xv, Wv, tv = normal((2, 1, 6, 6), 30), normal((3, 1, 3, 3), 31), np.array([[0, 1, -1], [1, 1, 0]])
    got_loss, got_gW, drop1 = f(xv, Wv, tv)
    _, _, drop2 = f(xv, Wv, tv)
    Wvar = pg.Variable(Wv)
    he = pg.reshape(F.max_pooling_2d(F.relu(F.convolution_2d(xv, Wvar, pad=1)), 3, 2, 1), (2, -1))
    want = F.sigmoid_cross_entropy(he[:, :3], tv)
    want.backward()
    assert_close(got_loss, to_np(want), rtol=1e-12)
    assert_close(got_gW, to_np(Wvar.grad), rtol=1e-10)
    assert float(to_np(drop1)) != float(to_np(drop2))

"""A small MLP trained for a few SGD steps on backends whose arrays are not
numpy's ends with the numpy backend's weights (float32, to 1e-6), with a plain
``loss.backward()``: a torch-like backend (``size()`` a method, float32 default
dtype), an immutable one (arrays refuse writes; the optimizer rebinds), and jax
through the plugin written from the guide (where jax is installed)."""

from __future__ import annotations

import numpy as np
import pytest

import polygrad as pg
import polygrad.functions as F
import polygrad.links as L
from plugins import immutable_backend, torchlike_backend
from registry_state import registry_state  # noqa: F401 (a fixture)

STEPS = 5


def _jax_plugin():
    pytest.importorskip("jax", reason="jax is not installed (pip install 'jax[cpu]', a test extra)")
    from plugins import jax_backend

    return jax_backend


PLUGINS = {"torchlike": lambda: torchlike_backend, "immutable": lambda: immutable_backend, "jax": _jax_plugin}


class MLP(pg.Chain):
    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.l1 = L.Linear(2, 8)
            self.l2 = L.Linear(8, 3)

    def forward(self, x):
        return self.l2(F.relu(self.l1(x)))


def _train(backend: str) -> tuple[list[float], dict]:
    """STEPS of SGD from the same numpy-initialized weights; the losses and the weights as numpy."""
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((16, 2)).astype(np.float32)
    ts = rng.integers(0, 3, 16).astype(np.int32)
    pg.seed(0)
    model = MLP()  # initialized on numpy
    for p in model.params():
        p.data = p.data.astype(np.float32)
    if backend != "numpy":
        model.to_backend(backend)
    x, t = pg.to_backend(xs, backend), pg.to_backend(ts, backend)
    opt = pg.optimizers.SGD(lr=0.5)
    opt.setup(model)
    losses = []
    for _ in range(STEPS):
        model.cleargrads()
        loss = F.softmax_cross_entropy(model(x), t)
        loss.backward()  # no explicit gradient: the loss is a 0-d array of the backend
        opt.update()
        losses.append(float(np.asarray(pg.to_backend(loss.data, "numpy"))))
    weights = {name: np.asarray(pg.to_backend(p.data, "numpy")) for name, p in model.namedparams()}
    return losses, weights


@pytest.mark.parametrize("name", sorted(PLUGINS))
def test_mlp_trains_as_on_numpy(registry_state, name):
    plugin = PLUGINS[name]()
    pg.register_plugin(plugin, name=f"{name}-plugin")
    want_losses, want = _train("numpy")
    got_losses, got = _train(plugin.NAME)
    assert got_losses[-1] < got_losses[0]
    np.testing.assert_allclose(got_losses, want_losses, rtol=1e-6, atol=1e-6)
    assert sorted(got) == sorted(want)
    for key in want:
        assert got[key].dtype == np.float32, key
        np.testing.assert_allclose(got[key], want[key], rtol=1e-6, atol=1e-6, err_msg=key)

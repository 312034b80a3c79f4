"""A PyTorch 0.x script (tensor methods, a Function subclass in PyTorch's convention,
register_hook, torch.optim) runs unchanged apart from its imports, and learns."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import polygrad as pg

ROOT = Path(__file__).resolve().parents[1]


def _load_script():
    spec = importlib.util.spec_from_file_location("train_pytorch_style", ROOT / "examples" / "train_pytorch_style.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_pytorch_style_script_learns():
    """The script's loss falls well below chance and its hook saw the gradient at every step."""
    pytest.importorskip("sklearn", reason="the script's data set ships with scikit-learn (a test extra)")
    script = _load_script()
    losses, norms, accuracy = script.train(steps=60, log=lambda line: None)
    assert losses[-1] < 0.6 * losses[0]
    assert len(norms) == 60 and all(n >= 0 for n in norms)
    assert accuracy > 0.5


def test_pytorch_optim_sgd_matches_the_chainer_optimizer():
    """pg.optim.SGD(params, lr) steps as pg.optimizers.SGD does; zero_grad zeros the gradients."""
    w = pg.Variable(np.array([1.0, -2.0]))
    opt = pg.optim.SGD([w], lr=0.1)
    opt.zero_grad()
    pg.sum(w * w).backward()
    opt.step()
    np.testing.assert_allclose(w.data, [0.8, -1.6])
    opt.zero_grad()
    np.testing.assert_allclose(w.grad, [0.0, 0.0])


def test_pytorch_optim_refuses_what_is_no_variable():
    """A raw array in the parameter list is refused naming its position."""
    with pytest.raises(TypeError, match="parameter 1"):
        pg.optim.Adam([pg.Variable(np.ones(2)), np.ones(2)])

"""The examples run: the README's demo (examples/train_digits.py) trains to its accuracy and writes its pictures;
the Chainer-style script (examples/train_chainer_style.py) trains on numpy and array_api_strict."""

from __future__ import annotations

import importlib.util
import pathlib

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def _load(name):
    """The example script ``examples/<name>.py`` as a module (its ``main`` does not run)."""
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_digits_demo_reaches_accuracy_and_writes_pictures(tmp_path):
    """A short run of the demo reaches well above 90% test accuracy; loss curve and graph pictures are written."""
    pytest.importorskip("sklearn", reason="the demo's data set ships with scikit-learn (a test extra)")
    demo = _load("train_digits")
    model, losses, acc, timer, graph_loss = demo.train("numpy", epochs=12, progress=False)
    assert acc > 0.9
    assert losses[-1] < losses[0] / 4
    assert any(f.label == "linear" for f, _ in timer.call_history)
    curve, picture = tmp_path / "loss.png", tmp_path / "graph.png"
    demo.save_loss_curve(losses, str(curve))
    import polygrad as pg

    graph = pg.build_computational_graph([graph_loss])
    demo.save_graph_picture(graph, str(picture))
    assert curve.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    dot = graph.dump()
    assert "softmax_cross_entropy_nll" in dot and "linear" in dot and "relu" in dot


def test_chainer_style_script_trains_on_numpy():
    """The Chainer-style script (Classifier, SerialIterator, concat_examples, Adam): loss falls, test accuracy > 90%."""
    pytest.importorskip("sklearn", reason="the data set ships with scikit-learn (a test extra)")
    history = _load("train_chainer_style").main(epoch=5, verbose=False)
    assert [row[0] for row in history] == [1, 2, 3, 4, 5]
    train_losses = [row[1] for row in history]
    assert train_losses[-1] < train_losses[0] / 2, train_losses
    assert history[-1][3] > 0.9, history[-1]


def test_chainer_style_script_runs_on_array_api_strict():
    """The same script with device='array_api_strict': the loss falls over two epochs."""
    pytest.importorskip("sklearn", reason="the data set ships with scikit-learn (a test extra)")
    history = _load("train_chainer_style").main(epoch=2, device="array_api_strict", verbose=False)
    assert history[1][1] < history[0][1] and history[1][2] < history[0][2]

"""A Chainer-style training script, as Chainer's MNIST example writes it:
L.Classifier, a TupleDataset, SerialIterator + concat_examples, and an optimizer.

The data are scikit-learn's handwritten digits (1797 images of 8x8 pixels,
shipped with scikit-learn, so nothing is downloaded) in place of MNIST. Apart
from ``import polygrad as pg`` where Chainer's script has ``import chainer``
and the data set, the loop is Chainer's own:

    python examples/train_chainer_style.py                  # numpy backend
    python examples/train_chainer_style.py --device dask    # the same on dask
"""

from __future__ import annotations

import argparse

import polygrad as pg
import polygrad.functions as F
import polygrad.links as L
from polygrad.dataset import concat_examples


class MLP(pg.Chain):
    def __init__(self, n_units, n_out):
        super().__init__()
        with self.init_scope():
            # the size of the inputs to each layer is inferred at the first call
            self.l1 = L.Linear(None, n_units)
            self.l2 = L.Linear(None, n_units)
            self.l3 = L.Linear(None, n_out)

    def forward(self, x):
        h1 = F.relu(self.l1(x))
        h2 = F.relu(self.l2(h1))
        return self.l3(h2)


def get_digits(test_fraction=0.2, seed=0):
    """(train, test): TupleDatasets of (float32 image of 64 values in [0, 1], int32 label), as get_mnist() gives."""
    import numpy as np
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    t = digits.target.astype(np.int32)
    order = np.random.default_rng(seed).permutation(len(t))
    n_test = int(len(t) * test_fraction)
    test, train = order[:n_test], order[n_test:]
    return pg.datasets.TupleDataset(x[train], t[train]), pg.datasets.TupleDataset(x[test], t[test])


def to_float(v):
    """A scalar Variable's value as a Python float (computing it on a lazy backend)."""
    (a,) = pg.compute(v)
    return float(a)


def main(epoch=10, batchsize=100, unit=100, device=None, seed=0, verbose=True):
    """Train; returns one (epoch, mean train loss, test loss, test accuracy) row per epoch."""
    device = device or pg.get_backend().name
    pg.seed(seed)
    with pg.using_backend(device):
        model = L.Classifier(MLP(unit, 10))
    optimizer = pg.optimizers.Adam()
    optimizer.setup(model)

    train, test = get_digits()
    train_iter = pg.iterators.SerialIterator(train, batchsize)
    test_iter = pg.iterators.SerialIterator(test, batchsize, repeat=False, shuffle=False)

    history, train_losses = [], []
    while train_iter.epoch < epoch:
        batch = train_iter.next()
        x, t = concat_examples(batch, device)
        optimizer.update(model, x, t)  # model(x, t) is the loss: Classifier calls the predictor and lossfun
        train_losses.append(model.loss)

        if train_iter.is_new_epoch:
            test_losses, test_accuracies = [], []
            for test_batch in test_iter:
                x, t = concat_examples(test_batch, device)
                with pg.using_config("train", False), pg.no_backprop_mode():
                    loss_test = model(x, t)
                test_losses.append(to_float(loss_test))
                test_accuracies.append(to_float(model.accuracy))
            test_iter.reset()
            train_loss = sum(to_float(v) for v in train_losses) / len(train_losses)
            row = (train_iter.epoch, train_loss, sum(test_losses) / len(test_losses),
                   sum(test_accuracies) / len(test_accuracies))
            history.append(row)
            train_losses = []
            if verbose:
                print("epoch: {}  train loss: {:.4f}  test loss: {:.4f}  test accuracy: {:.4f}".format(*row))
    return history


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="polygrad: Chainer-style digits classifier")
    parser.add_argument("--epoch", "-e", type=int, default=10, help="number of sweeps over the data set")
    parser.add_argument("--batchsize", "-b", type=int, default=100, help="examples in each minibatch")
    parser.add_argument("--unit", "-u", type=int, default=100, help="units in each hidden layer")
    parser.add_argument("--device", "-d", default=None, help="backend name (default: the default backend)")
    args = parser.parse_args()
    main(args.epoch, args.batchsize, args.unit, args.device)

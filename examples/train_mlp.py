"""Train a small MLP classifier with polygrad.

The data set is three interleaved spirals in 2-D (a problem a linear model
cannot solve), generated with the backend's own arrays and random numbers, so
the script needs nothing beyond polygrad and a backend plugin. The model is a
``pg.Chain`` of three ``Linear`` links with ReLU; the optimizer is plain SGD
with momentum written by hand on ``p.data``. At the end a ``TimerHook``
measures one training step (forward and backward).

    python examples/train_mlp.py                  # the default backend
    python examples/train_mlp.py --backend numpy --epochs 100
"""

from __future__ import annotations

import argparse
import math
import time

import polygrad as pg
import polygrad.functions as F
import polygrad.links as L
from polygrad.function_hooks import TimerHook


def make_spirals(backend, n_per_class=400, n_classes=3, noise=0.3, turns=2.0):
    """``n_classes`` interleaved spiral arms: points ``(x, y)`` float32, labels int64."""
    xp, rng = backend.xp, backend.rng()
    xs, ts = [], []
    for k in range(n_classes):
        r = rng.uniform((n_per_class,), dtype=xp.float32, low=0.05, high=1.0)  # distance from the centre
        angle = 2 * math.pi * (k / n_classes + turns * r) + rng.normal((n_per_class,), dtype=xp.float32, std=noise)
        xs.append(xp.stack([r * xp.cos(angle), r * xp.sin(angle)], axis=1))
        ts.append(xp.full((n_per_class,), k, dtype=xp.int64))
    x, t = xp.concat(xs, axis=0), xp.concat(ts, axis=0)
    order = xp.argsort(rng.uniform((x.shape[0],), dtype=xp.float32))  # shuffle
    return xp.take(x, order, axis=0), xp.take(t, order, axis=0)


class MLP(pg.Chain):
    def __init__(self, n_in, n_hidden, n_out):
        super().__init__()
        with self.init_scope():
            self.l1 = L.Linear(n_in, n_hidden)
            self.l2 = L.Linear(n_hidden, n_hidden)
            self.l3 = L.Linear(n_hidden, n_out)

    def forward(self, x):
        h = F.relu(self.l1(x))
        h = F.relu(self.l2(h))
        return self.l3(h)


class MomentumSGD:
    """``v <- mu * v - lr * grad``; ``p <- p + v``, on the raw arrays."""

    def __init__(self, params, lr=0.1, momentum=0.9):
        self.params = list(params)
        self.lr, self.momentum = lr, momentum
        self.velocity = [p.xp.zeros_like(p.data) for p in self.params]

    def update(self):
        for i, p in enumerate(self.params):
            if p.grad is None:
                continue
            v = self.momentum * self.velocity[i] - self.lr * p.grad
            self.velocity[i] = v
            p.data = p.data + v  # out of place: fine on backends without in-place writes


def train_step(model, opt, x, t):
    model.cleargrads()
    loss = F.softmax_cross_entropy(model(x), t)
    loss.backward()
    opt.update()
    return loss


def accuracy(model, x, t):
    xp = pg.get_array_namespace(x)
    with pg.no_backprop_mode():  # inference: no graph is built
        y = model(x)
    predicted = xp.argmax(y.data, axis=1)
    return float(xp.mean(xp.astype(predicted == t, xp.float32)))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", metavar="NAME", help="backend to run on (default: the default backend; "
                        "installed: " + ", ".join(pg.backends()) + ")")
    parser.add_argument("--epochs", type=int, default=100, metavar="N", help="passes over the training set (default: 100)")
    parser.add_argument("--batch-size", type=int, default=32, metavar="N", help="minibatch size (default: 32)")
    parser.add_argument("--lr", type=float, default=0.05, help="learning rate (default: 0.05)")
    parser.add_argument("--hidden", type=int, default=64, metavar="N", help="hidden units per layer (default: 64)")
    args = parser.parse_args(argv)

    if args.backend is not None:
        try:
            pg.set_backend(args.backend)
        except (ValueError, RuntimeError) as exc:
            parser.error(str(exc))
    backend = pg.get_backend()
    xp = backend.xp
    pg.seed(0)

    x, t = make_spirals(backend)
    n_test = x.shape[0] // 5
    x_test, t_test = x[:n_test, :], t[:n_test]
    x_train, t_train = x[n_test:, :], t[n_test:]
    n_train = x_train.shape[0]
    print(f"polygrad {pg.__version__} on backend {backend.name!r}: 3-class spirals, "
          f"{n_train} training and {n_test} test points")

    model = MLP(2, args.hidden, 3)
    opt = MomentumSGD(model.params(), lr=args.lr, momentum=0.9)
    print(f"model: {model.count_params()} parameters in {', '.join(name for name, _ in model.namedparams())}")

    rng = backend.rng()
    start = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        order = xp.argsort(rng.uniform((n_train,), dtype=xp.float32))
        total = 0.0
        for i in range(0, n_train, args.batch_size):
            idx = order[i : i + args.batch_size]
            loss = train_step(model, opt, xp.take(x_train, idx, axis=0), xp.take(t_train, idx, axis=0))
            total += float(loss.data) * idx.shape[0]
        if epoch == 1 or epoch % 10 == 0 or epoch == args.epochs:
            print(f"epoch {epoch:4d}  train loss {total / n_train:.4f}  "
                  f"train acc {accuracy(model, x_train, t_train):6.2%}  test acc {accuracy(model, x_test, t_test):6.2%}")
    elapsed = time.perf_counter() - start

    print(f"final test accuracy: {accuracy(model, x_test, t_test):.2%}  (training took {elapsed:.2f}s)")

    # Time the functions of one training step, forward and backward.
    xb, tb = x_train[: args.batch_size, :], t_train[: args.batch_size]
    model.cleargrads()
    with TimerHook() as hook:
        loss = F.softmax_cross_entropy(model(xb), tb)
        loss.backward()
    print(f"\nTimerHook, one training step (batch {args.batch_size}), forward + backward: "
          f"{len(hook.call_history)} calls, {hook.total_time() * 1e3:.3f} ms in functions")
    hook.print_report()


if __name__ == "__main__":
    main()

"""The main demo: train a classifier on handwritten digits with polygrad.

scikit-learn ships the digits data set (1797 images of 8x8 pixels), so nothing
is downloaded. The model is a Chain of three Linear links with ReLU, trained
with Adam and softmax cross-entropy, showing a tqdm progress bar. At the end it
prints the test accuracy, a TimerHook table of the most expensive functions of
one epoch, and writes a loss-curve PNG and a picture of the model's
computational graph (PNG through Graphviz's ``dot`` when installed, otherwise
drawn with matplotlib; the DOT text is always written too).

    python examples/train_digits.py                   # numpy backend
    python examples/train_digits.py --backend dask    # the same on dask
"""

from __future__ import annotations

import argparse
import os
import shutil
import time

import polygrad as pg
import polygrad.functions as F
import polygrad.links as L
from polygrad.function_hooks import TimerHook


class MLP(pg.Chain):
    def __init__(self, n_in: int = 64, n_hidden: int = 128, n_out: int = 10) -> None:
        super().__init__()
        with self.init_scope():
            self.l1 = L.Linear(n_in, n_hidden)
            self.l2 = L.Linear(n_hidden, n_hidden)
            self.l3 = L.Linear(n_hidden, n_out)

    def forward(self, x):
        h = F.relu(self.l1(x))
        h = F.relu(self.l2(h))
        return self.l3(h)


def load_digits(backend: str, test_fraction: float = 0.2, seed: int = 0):
    """Digits as float32 features in [0, 1] and int64 labels, split into train and test."""
    import numpy as np
    from sklearn.datasets import load_digits as sk_load

    data = sk_load()
    x = (data.data / 16.0).astype("float32")
    t = data.target.astype("int64")
    order = np.random.default_rng(seed).permutation(len(t))
    n_test = int(len(t) * test_fraction)
    test, train = order[:n_test], order[n_test:]
    to = lambda a: pg.asarray(a, backend=backend)  # noqa: E731
    return (to(x[train]), to(t[train])), (to(x[test]), to(t[test]))


def accuracy(model: MLP, x, t) -> float:
    with pg.no_backprop_mode():
        y = model(x)
    xp = y.__array_namespace__()  # the standard's functions over Variables, on y's backend
    hit = xp.astype(xp.argmax(y, axis=1) == t, xp.float32)
    (mean,) = pg.compute(xp.mean(hit))
    return float(mean)


def train(backend: str = "numpy", epochs: int = 30, batch_size: int = 64, lr: float = 2e-3, seed: int = 0,
          progress: bool = True):
    """Train; returns the model, per-epoch mean losses, the test accuracy, and a TimerHook of the last epoch."""
    pg.seed(seed)
    (x_tr, t_tr), (x_te, t_te) = load_digits(backend)
    with pg.using_backend(backend):
        model = MLP()
    optimizer = pg.optimizers.Adam(alpha=lr).setup(model)
    n = x_tr.shape[0]
    steps = (n + batch_size - 1) // batch_size
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=epochs * steps, desc="training", unit="step", leave=False)
    losses, timer, last_loss = [], TimerHook(), None
    xp = x_tr.__array_namespace__()
    rng = pg.get_backend(backend).rng()
    for epoch in range(epochs):
        order = xp.argsort(rng.uniform((n,), dtype=xp.float32))
        total = 0.0
        hook = timer if epoch == epochs - 1 else None
        if hook is not None:
            hook.__enter__()
        for k in range(steps):
            idx = order[k * batch_size:(k + 1) * batch_size]
            x, t = xp.take(x_tr, idx, axis=0), xp.take(t_tr, idx, axis=0)
            last_loss = F.softmax_cross_entropy(model(x), t)
            model.cleargrads()
            last_loss.backward()
            optimizer.update()
            (value,) = pg.compute(last_loss)
            total += float(value)
            if bar is not None:
                bar.update(1)
        if hook is not None:
            hook.__exit__(None, None, None)
        losses.append(total / steps)
        if bar is not None:
            bar.set_postfix(loss=f"{losses[-1]:.4f}")
    if bar is not None:
        bar.close()
    # one more forward for the picture of the graph
    graph_loss = F.softmax_cross_entropy(model(x_te[:8]), t_te[:8])
    return model, losses, accuracy(model, x_te, t_te), timer, graph_loss


def save_loss_curve(losses: list, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.2), dpi=120)
    ax.plot(range(1, len(losses) + 1), losses, marker="o", markersize=3)
    ax.set_xlabel("epoch")
    ax.set_ylabel("mean training loss")
    ax.set_yscale("log")
    ax.set_title("polygrad: digits MLP")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def save_graph_picture(graph, path: str) -> str:
    """PNG of the graph: Graphviz if installed, else a layered drawing with matplotlib."""
    if shutil.which("dot"):
        graph.render(path, format="png")
        return "Graphviz"
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    nodes, edges = graph.nodes, graph.edges
    index = {id(n): i for i, n in enumerate(nodes)}
    depth = [0] * len(nodes)
    for _ in range(len(nodes)):  # longest path from the inputs (edges go with the data flow)
        for a, b in edges:
            depth[index[id(b)]] = max(depth[index[id(b)]], depth[index[id(a)]] + 1)
    has_input = {index[id(b)] for _, b in edges}
    for i in range(len(nodes)):  # draw each input just above its first consumer
        if i not in has_input:
            consumers = [depth[index[id(b)]] for a, b in edges if index[id(a)] == i]
            if consumers:
                depth[i] = min(consumers) - 1
    rows: dict[int, list[int]] = {}
    for i, d in enumerate(depth):
        rows.setdefault(d, []).append(i)
    pos = {}
    for d, members in rows.items():
        for j, i in enumerate(members):
            pos[i] = (j - (len(members) - 1) / 2, -d)
    width = max(len(m) for m in rows.values())
    fig, ax = plt.subplots(figsize=(max(6, 2.6 * width), 0.9 * (len(rows) + 1)), dpi=110)
    for a, b in edges:
        (x0, y0), (x1, y1) = pos[index[id(a)]], pos[index[id(b)]]
        ax.annotate("", xy=(x1, y1 + 0.18), xytext=(x0, y0 - 0.18), arrowprops=dict(arrowstyle="->", color="0.4"))
    for i, n in enumerate(nodes):
        x, y = pos[i]
        label = graph._label(n)
        is_function = not hasattr(n, "shape") or hasattr(n, "edges")
        style = dict(boxstyle="square,pad=0.3", fc="#dbe8f6") if is_function else dict(boxstyle="round,pad=0.3", fc="#f6efdb")
        ax.text(x, y, label, ha="center", va="center", fontsize=7, bbox=style)
    ax.set_xlim(-width / 2 - 0.5, width / 2 + 0.5)
    ax.set_ylim(-len(rows), 1)
    ax.axis("off")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return "matplotlib (Graphviz's dot is not installed)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default=None, help="backend name (default: the default backend)")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--out", default="demo-output", help="folder for the PNG files and the DOT text")
    args = parser.parse_args()
    backend = args.backend or pg.get_backend().name
    if backend not in pg.backends():
        parser.error(f"unknown backend {backend!r}; installed: {', '.join(pg.backends())}")
    os.makedirs(args.out, exist_ok=True)

    start = time.perf_counter()
    model, losses, acc, timer, graph_loss = train(backend, epochs=args.epochs)
    seconds = time.perf_counter() - start
    print(f"backend {backend}: {args.epochs} epochs in {seconds:.1f}s, final training loss {losses[-1]:.4f}")
    print(f"test accuracy: {acc:.2%}")
    print(f"\nTimerHook, last epoch: {len(timer.call_history)} calls, {timer.total_time() * 1e3:.1f} ms in functions")
    timer.print_report(top=10)

    curve = os.path.join(args.out, "loss_curve.png")
    save_loss_curve(losses, curve)
    graph = pg.build_computational_graph([graph_loss])
    dot_path = os.path.join(args.out, "graph.dot")
    with open(dot_path, "w") as f:
        f.write(graph.dump())
    picture = os.path.join(args.out, "graph.png")
    how = save_graph_picture(graph, picture)
    print(f"\nwrote {curve}, {picture} (drawn with {how}) and {dot_path}")


if __name__ == "__main__":
    main()

"""polygrad beside the frameworks a user would pick instead, on this machine.

    .venv/bin/python benchmarks/peers.py            # every workload, every framework installed
    .venv/bin/python benchmarks/peers.py --quick    # fewer repetitions
    .venv/bin/python benchmarks/peers.py chain mlp  # only these workloads

The workloads of ``./dev bench``, forward and backward, each checked against
hand-written numpy once and then timed in one process, interleaved (every side
in turn, several rounds, the minimum kept), and printed as ratios to
hand-written numpy (below 1 is faster than numpy):

* chain: 200 steps of ``y = y + sin(y) * 0.01`` on float64[10], gradient of ``sum(y)`` (per-op overhead);
* mlp: one SGD step of a 784-512-512-10 ReLU MLP, batch 128, float32, softmax cross-entropy;
* elementwise: ``sum(tanh(x) * x + exp(-x * x))`` and its gradient on float64[4,000,000];
* deep: 50 x ``y = tanh(y @ W)`` on float64[128, 128], gradients of every ``W``.

Sides: numpy by hand; polygrad eager and compiled (``pg.function``); and, where
installed, PyTorch (eager, CPU), JAX (``jax.jit`` of the gradient; its compile
time is printed apart) and HIPS autograd. A framework that is not installed is
skipped with a line saying so. Threads: PyTorch is given
``OPENBLAS_NUM_THREADS`` threads where that is set; XLA picks its own. Memory is
not compared here (tracemalloc does not see PyTorch's or XLA's allocators);
``./dev bench`` reports polygrad's and numpy's.
"""

from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402,F401  (first: cleans the BLAS environment before numpy loads)
from _common import blas_info, fmt_time, load_note, timeit  # noqa: E402

import numpy as np  # noqa: E402

import bench_compiled  # noqa: E402
import bench_deep  # noqa: E402
import bench_large  # noqa: E402
import bench_mlp  # noqa: E402
import bench_overhead  # noqa: E402

WORKLOADS = ("chain", "mlp", "elementwise", "deep")
FRAMEWORKS = ("torch", "jax", "autograd")


# ---------------------------------------------------------------------------
# Inputs and reference gradients
# ---------------------------------------------------------------------------
def inputs(workload: str) -> tuple:
    if workload == "chain":
        return (np.random.default_rng(0).standard_normal(bench_overhead.N),)
    if workload == "mlp":
        return (*bench_mlp.data(), bench_mlp.init_params())
    if workload == "elementwise":
        return (bench_large.make_x(),)
    return bench_deep.make()


def reference(workload: str, args: tuple) -> list:
    """numpy's gradient (for the chain, elementwise, deep) or updated parameters (mlp), as a list."""
    if workload == "chain":
        return [bench_overhead.numpy_step(*args)]
    if workload == "mlp":
        x, t, params = args
        m = bench_mlp.NumpyMLP(params)
        m.step(x, t)
        return m.params
    if workload == "elementwise":
        return [bench_large.numpy_step(*args)]
    return bench_deep.numpy_step(*args)


# ---------------------------------------------------------------------------
# Each side: make(workload, args) -> (step, check) where check() gives what reference() gives
# ---------------------------------------------------------------------------
def numpy_side(workload: str, args: tuple):
    if workload == "mlp":
        x, t, params = args
        m = bench_mlp.NumpyMLP(params)
        return (lambda: m.step(x, t)), None
    step = {"chain": bench_overhead.numpy_step, "elementwise": bench_large.numpy_step,
            "deep": bench_deep.numpy_step}[workload]
    return (lambda: step(*args)), None


def polygrad_eager(workload: str, args: tuple):
    import polygrad as pg

    if workload == "chain":
        return (lambda: bench_overhead.polygrad_step(*args)), lambda: [bench_overhead.polygrad_step(*args)]
    if workload == "mlp":
        x, t, params = args
        m = bench_mlp.PolygradMLP(params)
        check = bench_mlp.PolygradMLP(params)
        return (lambda: m.step(x, t)), lambda: (check.step(x, t), [p.data for p in check.params])[1]
    if workload == "elementwise":
        return (lambda: bench_large.polygrad_step(*args)), lambda: [bench_large.polygrad_step(*args)]
    x, Ws = args
    Vs = [pg.Variable(W) for W in Ws]
    return (lambda: bench_deep.eager_step(x, Vs)), lambda: bench_deep.eager_step(x, Vs)


def polygrad_compiled(workload: str, args: tuple):
    if workload == "chain":
        fn = bench_compiled.compile_chain()
        fn.trust_input = True
        return (lambda: fn(*args)), lambda: [fn(*args)[1]]
    if workload == "mlp":
        x, t, params = args
        step, _ = bench_compiled.compile_mlp(params)
        step.trust_input = True
        check, shared = bench_compiled.compile_mlp(params)
        return (lambda: step(x, t)), lambda: (check(x, t), [p.get_value() for p in shared])[1]
    if workload == "elementwise":
        fn = bench_compiled.compile_elementwise()
        return (lambda: fn(*args)), lambda: [fn(*args)[1]]
    x, Ws = args
    fn = bench_deep.compile_deep(Ws)
    return (lambda: fn(x)), lambda: fn(x)


def torch_side(workload: str, args: tuple):
    import torch

    threads = os.environ.get("OPENBLAS_NUM_THREADS")
    if threads:
        torch.set_num_threads(int(threads))
    if workload == "chain":
        x0 = torch.from_numpy(args[0])

        def chain():
            x = x0.clone().requires_grad_(True)
            y = x
            for _ in range(bench_overhead.STEPS):
                y = y + torch.sin(y) * 0.01
            y.sum().backward()
            return [x.grad.numpy()]
        return chain, chain
    if workload == "mlp":
        x, t, params = args
        xt, tt = torch.from_numpy(x), torch.from_numpy(t)

        def model():
            return [torch.from_numpy(p.copy()).requires_grad_(True) for p in params]

        def step(ps):
            W1, b1, W2, b2, W3, b3 = ps
            h = torch.relu(torch.nn.functional.linear(xt, W1, b1))
            h = torch.relu(torch.nn.functional.linear(h, W2, b2))
            loss = torch.nn.functional.cross_entropy(torch.nn.functional.linear(h, W3, b3), tt)
            loss.backward()
            with torch.no_grad():
                for p in ps:
                    p -= bench_mlp.LR * p.grad
                    p.grad = None
            return ps
        ps, check = model(), model()
        return (lambda: step(ps)), lambda: [p.detach().numpy() for p in step(check)]
    if workload == "elementwise":
        x0 = torch.from_numpy(args[0])

        def elementwise():
            x = x0.detach().requires_grad_(True)
            (torch.tanh(x) * x + torch.exp(-x * x)).sum().backward()
            return [x.grad.numpy()]
        return elementwise, elementwise
    x0, Ws = args
    xt = torch.from_numpy(x0)
    Wt = [torch.from_numpy(W).requires_grad_(True) for W in Ws]

    def deep():
        y = xt
        for W in Wt:
            y = torch.tanh(y @ W)
        return [g.numpy() for g in torch.autograd.grad(y.sum(), Wt)]
    return deep, deep


def functional_losses(xnp):
    """The four workloads as pure functions of one numpy-like namespace (JAX's, autograd's)."""

    def chain(x):
        y = x
        for _ in range(bench_overhead.STEPS):
            y = y + xnp.sin(y) * 0.01
        return xnp.sum(y)

    def mlp(ps, x, t):
        W1, b1, W2, b2, W3, b3 = ps
        h = xnp.maximum(xnp.dot(x, W1.T) + b1, 0)
        h = xnp.maximum(xnp.dot(h, W2.T) + b2, 0)
        z = xnp.dot(h, W3.T) + b3
        z = z - xnp.max(z, axis=1, keepdims=True)
        logp = z - xnp.log(xnp.sum(xnp.exp(z), axis=1, keepdims=True))
        return -xnp.mean(logp[xnp.arange(len(t)), t])

    def elementwise(x):
        return xnp.sum(xnp.tanh(x) * x + xnp.exp(-x * x))

    def deep(ws, x):
        y = x
        for W in ws:
            y = xnp.tanh(xnp.dot(y, W))
        return xnp.sum(y)

    return {"chain": chain, "mlp": mlp, "elementwise": elementwise, "deep": deep}


def jax_side(workload: str, args: tuple):
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    loss = functional_losses(jnp)[workload]
    if workload == "mlp":
        x, t, params = args
        xj, tj = jnp.asarray(x), jnp.asarray(t)

        @jax.jit
        def step(ps):
            gs = jax.grad(loss)(ps, xj, tj)
            return [p - bench_mlp.LR * g for p, g in zip(ps, gs)]
        state = {"ps": [jnp.asarray(p) for p in params]}

        def run():
            state["ps"] = step(state["ps"])
            state["ps"][0].block_until_ready()
        return run, lambda: [np.asarray(p) for p in step([jnp.asarray(p) for p in params])]
    if workload == "deep":
        x0, Ws = args
        g = jax.jit(jax.grad(loss))
        xj, Wj = jnp.asarray(x0), [jnp.asarray(W) for W in Ws]
        return (lambda: g(Wj, xj)[-1].block_until_ready()), lambda: [np.asarray(w) for w in g(Wj, xj)]
    g = jax.jit(jax.grad(loss))
    x = jnp.asarray(args[0])
    return (lambda: g(x).block_until_ready()), lambda: [np.asarray(g(x))]


def autograd_side(workload: str, args: tuple):
    import autograd
    import autograd.numpy as anp

    g = autograd.grad(functional_losses(anp)[workload])
    if workload == "mlp":
        x, t, params = args

        def step(ps):
            for p, gp in zip(ps, g(ps, x, t)):
                p -= bench_mlp.LR * gp
            return ps
        ps, check = [p.copy() for p in params], [p.copy() for p in params]
        return (lambda: step(ps)), lambda: step(check)
    if workload == "deep":
        x0, Ws = args
        return (lambda: g(list(Ws), x0)), lambda: g(list(Ws), x0)
    return (lambda: g(args[0])), lambda: [g(args[0])]


SIDES = {"polygrad eager": polygrad_eager, "polygrad compiled": polygrad_compiled, "torch": torch_side,
         "jax (jit)": jax_side, "autograd": autograd_side}
MODULE = {"torch": "torch", "jax (jit)": "jax", "autograd": "autograd"}


def available() -> dict:
    import importlib.util

    sides = {}
    for name, make in SIDES.items():
        module = MODULE.get(name)
        if module is not None and importlib.util.find_spec(module) is None:
            print(f"   {name}: not installed, skipped (pip install {module})")
            continue
        sides[name] = make
    return sides


def run(workload: str, sides: dict, quick: bool) -> dict:
    args = inputs(workload)
    want = reference(workload, args)
    steps = {"numpy": numpy_side(workload, args)[0]}
    notes = []
    for name, make in sides.items():
        try:
            t0 = time.perf_counter()
            step, check = make(workload, args)
            got = check()
            setup = time.perf_counter() - t0
            rtol = 1e-3 if workload == "mlp" else 1e-7
            for g, w in zip(got, want):
                np.testing.assert_allclose(np.asarray(g), w, rtol=rtol, atol=rtol * 1e-2)
        except Exception as exc:  # a framework that fails here is reported, not fatal
            notes.append(f"{name}: skipped ({type(exc).__name__}: {str(exc).splitlines()[0][:120]})")
            continue
        if setup > 0.5:
            notes.append(f"{name}: setup and first call {setup:.2f} s (compilation included)")
        steps[name] = step
    repeat, rounds = (2, 3) if quick else (4, 5)
    number = 5 if workload == "chain" else 1
    best = {name: float("inf") for name in steps}
    for _ in range(rounds):  # interleaved: each side in turn, every round
        for name, step in steps.items():
            best[name] = min(best[name], timeit(step, repeat=repeat, number=number, warmup=1)["min"])
    for n in notes:
        print(f"   {n}")
    return best


def main(argv: list[str]) -> None:
    quick = "--quick" in argv
    words = [a for a in argv if not a.startswith("--")]
    print("== peers: time of one forward + backward step as a ratio to hand-written numpy (lower is faster)")
    print(f"   {blas_info()}")
    note = load_note()
    if note:
        print(f"   {note}")
    sides = available()
    table = {}
    for workload in WORKLOADS:
        if words and workload not in words:
            continue
        print(f"   running {workload} ...", flush=True)
        table[workload] = run(workload, sides, quick)
    names = ["numpy"] + list(sides)
    print()
    print(f"{'workload':<12}" + "".join(f"{n:>19}" for n in names))
    for workload, best in table.items():
        cells = []
        for n in names:
            if n not in best:
                cells.append(f"{'-':>19}")
            elif n == "numpy":
                cells.append(f"{fmt_time(best[n]).strip():>19}")
            else:
                cells.append(f"{best[n] / best['numpy']:>18.2f}x")
        print(f"{workload:<12}" + "".join(cells))


if __name__ == "__main__":
    main(sys.argv[1:])

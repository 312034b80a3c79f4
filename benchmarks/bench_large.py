"""Benchmark 3: one forward + backward on a large array (memory-bound).

``x``: 4,000,000 float64 (32 MB). Loss ``sum(tanh(x) * x + exp(-x * x))``;
polygrad computes ``x.grad`` with ``loss.backward()``.

Against: hand-written numpy computing the same loss and gradient, keeping only
what the gradient needs (``t = tanh(x)``, ``e = exp(-x*x)``), written as plain
expressions (numpy's temporary elision reuses temporaries on its own)::

    dloss/dx = x * (1 - t*t) + t - 2 * x * e

Reports the time ratio (target <= 1.2x) and the ratio of peak extra memory
(target <= 1.0x): peak minus baseline as traced by ``tracemalloc`` (numpy
reports its data buffers to it), with ``x`` already allocated, each side
measured in a fresh subprocess after one untraced warm-up step.

``--profile`` prints a cProfile of the polygrad step and, for each op node,
the arrays alive at the peak (see ``memory_timeline``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402  (first: cleans the BLAS environment before numpy loads)
from _common import blas_info, emit, load_note, fmt_time, result, timeit_pair  # noqa: E402

import numpy as np  # noqa: E402

import polygrad as pg  # noqa: E402

N = 4_000_000
TIME_TARGET = 1.2  # issue 15: eager at most 1.2x numpy, with peak memory at or below numpy's
MEM_TARGET = 1.0


def make_x() -> np.ndarray:
    return np.random.default_rng(0).standard_normal(N)


def polygrad_step(x0: np.ndarray) -> np.ndarray:
    x = pg.Variable(x0)
    loss = pg.sum(pg.tanh(x) * x + pg.exp(-x * x))
    loss.backward()
    return x.grad


def numpy_step(x: np.ndarray) -> np.ndarray:
    t = np.tanh(x)
    e = np.exp(-x * x)
    np.sum(t * x + e)  # the loss (computed, as polygrad does, then unused)
    return x * (1 - t * t) + t - 2 * x * e


STEPS = {"numpy": numpy_step, "polygrad": polygrad_step}


def measure_memory(side: str) -> dict:
    """Peak traced bytes above the baseline (x allocated) during one step."""
    import gc
    import tracemalloc

    x = make_x()
    step = STEPS[side]
    step(x)  # warm-up: imports, caches, backend registration
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    g = step(x)
    cur, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del g
    return {"peak_extra": peak - base, "retained": cur - base}


def memory_in_subprocess(side: str) -> dict:
    env, _ = _common.clean_env()
    out = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--measure-memory", side],
        env=env, capture_output=True, text=True, check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def profile(x0: np.ndarray) -> None:
    import cProfile
    import pstats

    polygrad_step(x0)
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(5):
        polygrad_step(x0)
    pr.disable()
    pstats.Stats(pr).sort_stats("tottime").print_stats(15)
    memory_timeline(x0)


def memory_timeline(x0: np.ndarray) -> None:
    """Trace memory through the polygrad step: after each forward op and each backward node."""
    import tracemalloc

    from polygrad.function_hooks import timer  # noqa: F401  (make sure the module exists)

    mb = 2**20

    class Probe(pg.FunctionHook):
        name = "probe"

        def forward_postprocess(self, function, in_data):
            cur, peak = tracemalloc.get_traced_memory()
            print(f"   fwd  {function.label:<10} now {(cur - base) / mb:7.1f} MiB  peak {(peak - base) / mb:7.1f} MiB")

        def backward_preprocess(self, function, in_data, grad_outputs):
            cur, peak = tracemalloc.get_traced_memory()
            print(f"   bwd> {function.label:<10} now {(cur - base) / mb:7.1f} MiB  peak {(peak - base) / mb:7.1f} MiB")

        def backward_postprocess(self, function, in_data, grad_outputs):
            cur, peak = tracemalloc.get_traced_memory()
            print(f"   bwd< {function.label:<10} now {(cur - base) / mb:7.1f} MiB  peak {(peak - base) / mb:7.1f} MiB")

    print(f"   memory timeline (one array = {x0.nbytes / mb:.1f} MiB; a hook keeps references to in_data while it runs)")
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    with Probe():
        x = pg.Variable(x0)
        loss = pg.sum(pg.tanh(x) * x + pg.exp(-x * x))
        loss.backward()
    cur, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"   end: now {(cur - base) / mb:.1f} MiB, peak {(peak - base) / mb:.1f} MiB")


def main(argv: list[str]) -> list[dict]:
    if "--measure-memory" in argv:
        print(json.dumps(measure_memory(argv[argv.index("--measure-memory") + 1])))
        return []
    quick = "--quick" in argv
    x0 = make_x()
    print(f"== bench_large: sum(tanh(x) * x + exp(-x * x)) on float64[{N:,}] ({x0.nbytes / 2**20:.1f} MiB), fwd + bwd")
    print(f"   {blas_info()}")
    note = load_note()
    if note:
        print(f"   {note}")
    if "--profile" in argv:
        profile(x0)
        return []

    np.testing.assert_allclose(polygrad_step(x0), numpy_step(x0), rtol=1e-12, atol=1e-12)

    repeat = 6 if quick else 15
    t_np, t_pg = timeit_pair(lambda: numpy_step(x0), lambda: polygrad_step(x0), repeat=repeat, number=1, warmup=1)
    m_np, m_pg = memory_in_subprocess("numpy"), memory_in_subprocess("polygrad")
    print(f"   step, min of {t_np['n']} / median:  numpy {fmt_time(t_np['min'])} / {fmt_time(t_np['median'])}"
          f"   polygrad {fmt_time(t_pg['min'])} / {fmt_time(t_pg['median'])}")
    arr = x0.nbytes
    print(f"   peak extra memory (tracemalloc, x allocated before): numpy {m_np['peak_extra'] / arr:.2f} arrays, "
          f"polygrad {m_pg['peak_extra'] / arr:.2f} arrays of {arr / 2**20:.1f} MiB "
          f"(retained after step: {m_np['retained'] / arr:.2f} / {m_pg['retained'] / arr:.2f}, the gradient)")
    rows = [
        result("large", "elementwise eager time", t_np, t_pg, TIME_TARGET),
        result("large", "elementwise eager memory", m_np["peak_extra"], m_pg["peak_extra"], MEM_TARGET, unit="B"),
    ]
    emit(rows, argv)
    return rows


if __name__ == "__main__":
    main(sys.argv[1:])

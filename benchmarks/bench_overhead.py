"""Benchmark 1: per-op overhead on a long chain of tiny ops.

200 steps of ``y = y + sin(y) * 0.01`` on a 10-element float64 array, from a
leaf Variable ``x``, then backward from ``sum(y)`` -- 601 forward ops and 601
backward nodes, each on 10 numbers, so nearly all the time is Python overhead.

Against: hand-written numpy doing the same forward (keeping each ``y`` for the
backward, as polygrad's sin node does) and the backward chain by hand
(``g = g + (g * 0.01) * cos(y_k)``: the same numpy calls polygrad's rules make).

Target: polygrad / numpy <= 3x; peak memory (tracemalloc) is reported. Also prints polygrad's eager per-op cost
(forward with and without graph recording, backward per node).

``--profile`` runs cProfile on the polygrad step and prints the top functions.
"""

from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402,F401  (first: cleans the BLAS environment before numpy loads)
from _common import (blas_info, emit, load_note, fmt_time, measure_memory_main, memory_in_subprocess, result,  # noqa: E402
                     timeit_pair)

import numpy as np  # noqa: E402

import polygrad as pg  # noqa: E402

STEPS = 200
N = 10
TARGET = 3.0  # issue 15: eager per-op overhead at most 3x numpy (PyTorch's is 5.5x)


def polygrad_step(x0: np.ndarray) -> np.ndarray:
    x = pg.Variable(x0)
    y = x
    for _ in range(STEPS):
        y = y + pg.sin(y) * 0.01
    pg.sum(y).backward()
    return x.grad


def numpy_step(x0: np.ndarray) -> np.ndarray:
    ys = []
    y = x0
    for _ in range(STEPS):
        ys.append(y)
        y = y + np.sin(y) * 0.01
    np.sum(y)
    g = np.ones_like(x0)  # d sum(y) / dy
    for yk in reversed(ys):
        g = g + (g * 0.01) * np.cos(yk)
    return g


def polygrad_forward(x0: np.ndarray, requires_grad: bool = True):
    x = pg.Variable(x0, requires_grad=requires_grad)
    y = x
    for _ in range(STEPS):
        y = y + pg.sin(y) * 0.01
    return x, pg.sum(y)


def numpy_forward(x0: np.ndarray):
    ys = []
    y = x0
    for _ in range(STEPS):
        ys.append(y)
        y = y + np.sin(y) * 0.01
    return ys, np.sum(y)


def _min_time(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def backward_only(x0: np.ndarray, repeat: int) -> float:
    """Min time of ``loss.backward()`` alone (graph built outside the timing)."""
    best = float("inf")
    for _ in range(repeat):
        x, loss = polygrad_forward(x0)
        t0 = time.perf_counter()
        loss.backward()
        best = min(best, time.perf_counter() - t0)
    return best


def profile(x0: np.ndarray) -> None:
    import cProfile
    import pstats

    for _ in range(20):
        polygrad_step(x0)
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(200):
        polygrad_step(x0)
    pr.disable()
    pstats.Stats(pr).sort_stats("tottime").print_stats(25)


def _step_of(side: str):
    x0 = np.random.default_rng(0).standard_normal(N)
    step = numpy_step if side == "numpy" else polygrad_step
    return lambda: step(x0)


def main(argv: list[str]) -> list[dict]:
    if measure_memory_main(argv, {"numpy": lambda: _step_of("numpy"), "polygrad": lambda: _step_of("polygrad")}):
        return []
    quick = "--quick" in argv
    x0 = np.random.default_rng(0).standard_normal(N)
    print(f"== bench_overhead: {STEPS} x (y = y + sin(y) * 0.01) on float64[{N}], backward from sum(y)")
    print(f"   {blas_info()}")
    note = load_note()
    if note:
        print(f"   {note}")
    if "--profile" in argv:
        profile(x0)
        return []

    g_pg, g_np = polygrad_step(x0), numpy_step(x0)
    np.testing.assert_allclose(g_pg, g_np, rtol=1e-12, atol=0)

    repeat = 30 if quick else 90
    t_np, t_pg = timeit_pair(lambda: numpy_step(x0), lambda: polygrad_step(x0), repeat=repeat, number=3, warmup=5)
    n_ops = 3 * STEPS + 1  # sin, multiply, add per step; sum
    rep = 30 if quick else 100
    fw_np = _min_time(lambda: numpy_forward(x0), rep)
    fw_pg = _min_time(lambda: polygrad_forward(x0), rep)
    fw_eager = _min_time(lambda: polygrad_forward(x0, requires_grad=False), rep)
    bw_pg = backward_only(x0, rep)

    print(f"   step (fwd+bwd), min of {t_np['n']} / median:  numpy {fmt_time(t_np['min'])} / {fmt_time(t_np['median'])}"
          f"   polygrad {fmt_time(t_pg['min'])} / {fmt_time(t_pg['median'])}")
    print(f"   per op ({n_ops} ops fwd, {n_ops} nodes bwd), min times:")
    print(f"     numpy forward                    {fw_np / n_ops * 1e6:6.2f} us/op")
    print(f"     polygrad forward, no graph       {fw_eager / n_ops * 1e6:6.2f} us/op   (requires_grad=False)")
    print(f"     polygrad forward, recording      {fw_pg / n_ops * 1e6:6.2f} us/op")
    print(f"     polygrad backward                {bw_pg / n_ops * 1e6:6.2f} us/node")
    print(f"     polygrad fwd+bwd                 {t_pg['min'] / n_ops * 1e6:6.2f} us/op   "
          f"(numpy fwd+bwd {t_np['min'] / n_ops * 1e6:.2f} us/op)")
    m_np, m_pg = memory_in_subprocess(__file__, "numpy"), memory_in_subprocess(__file__, "polygrad")
    print(f"   peak extra memory: numpy {m_np['peak_extra'] / 1024:.0f} KiB, polygrad {m_pg['peak_extra'] / 1024:.0f} KiB")
    rows = [
        result("overhead", "chain eager time", t_np, t_pg, TARGET),
        result("overhead", "chain eager peak memory", m_np["peak_extra"], m_pg["peak_extra"], None, unit="B"),
    ]
    emit(rows, argv)
    return rows


if __name__ == "__main__":
    main(sys.argv[1:])

"""Benchmark 5: a deep chain, ``y = tanh(y @ W_k)`` for 50 matrices, gradients of all ``W_k``.

``x``: float64[128, 128]; 50 weights float64[128, 128]; loss ``sum(y)``. Eager
polygrad (``loss.backward()``) and a compiled function (``pg.function([x],
T.grad(loss, Ws))`` with the weights as shared variables) against hand-written
numpy keeping each layer's output and running the backward chain by hand::

    g = g * (1 - y_k+1 ** 2);  dW_k = y_k.T @ g;  g = g @ W_k.T

Targets (issue 15): time <= 1.0x and peak memory <= 1.0x for eager and compiled.
"""

from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402,F401  (first: cleans the BLAS environment before numpy loads)
from _common import (blas_info, emit, fmt_time, load_note, measure_memory_main, memory_in_subprocess, result,  # noqa: E402
                     timeit_pair)

import numpy as np  # noqa: E402

import polygrad as pg  # noqa: E402
from polygrad import symbolic as T  # noqa: E402

DEPTH, BATCH, WIDTH = 50, 128, 128
TIME_TARGET = 1.0
MEM_TARGET = 1.0


def make() -> tuple[np.ndarray, list[np.ndarray]]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, WIDTH))
    Ws = [rng.standard_normal((WIDTH, WIDTH)) / np.sqrt(WIDTH) for _ in range(DEPTH)]
    return x, Ws


def numpy_step(x: np.ndarray, Ws: list[np.ndarray]) -> list[np.ndarray]:
    ys = [x]
    for W in Ws:
        ys.append(np.tanh(ys[-1] @ W))
    np.sum(ys[-1])
    g = np.ones_like(ys[-1])
    grads = [None] * len(Ws)
    for k in range(len(Ws) - 1, -1, -1):
        y = ys.pop()
        g *= 1 - y * y
        grads[k] = ys[-1].T @ g
        g = g @ Ws[k].T
    return grads


def eager_step(x: np.ndarray, Vs: list) -> list[np.ndarray]:
    y = x
    for V in Vs:
        y = pg.tanh(y @ V)
    return [g.data for g in pg.grad(pg.sum(y), Vs)]


def compile_deep(Ws: list[np.ndarray]):
    shared = [pg.shared(W) for W in Ws]
    x = T.matrix("x")
    y = x
    for W in shared:
        y = pg.tanh(y @ W)
    return pg.function([x], T.grad(pg.sum(y), shared), trust_input=True)


def _step_of(side: str):
    x, Ws = make()
    if side == "numpy":
        return lambda: numpy_step(x, Ws)
    if side == "eager":
        Vs = [pg.Variable(W) for W in Ws]
        return lambda: eager_step(x, Vs)
    fn = compile_deep(Ws)
    fn(x)
    return lambda: fn(x)


def main(argv: list[str]) -> list[dict]:
    if measure_memory_main(argv, {side: (lambda s=side: _step_of(s)) for side in ("numpy", "eager", "compiled")}):
        return []
    quick = "--quick" in argv
    print(f"== bench_deep: {DEPTH} x (y = tanh(y @ W)) on float64[{BATCH}, {WIDTH}], gradients of every W")
    print(f"   {blas_info()}")
    note = load_note()
    if note:
        print(f"   {note}")
    x, Ws = make()
    want = numpy_step(x, Ws)
    steps = {side: _step_of(side) for side in ("eager", "compiled")}
    for side, step in steps.items():
        for g, w in zip(step(), want):
            np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12, err_msg=f"{side} gradient differs from numpy's")
    t0 = time.perf_counter()
    compile_deep(Ws)(x)
    print(f"   compile + first call {time.perf_counter() - t0:.3f} s")
    repeat = 6 if quick else 20
    rows = []
    numpy = _step_of("numpy")
    memory = {side: memory_in_subprocess(__file__, side) for side in ("numpy", "eager", "compiled")}
    for side, step in steps.items():
        t_np, t_pg = timeit_pair(numpy, step, repeat=repeat, number=1, warmup=2, rounds=4)
        print(f"   {side:<8} numpy {fmt_time(t_np['min'])}  polygrad {fmt_time(t_pg['min'])}   peak extra memory: numpy "
              f"{memory['numpy']['peak_extra'] / 2**20:.1f} MiB, polygrad {memory[side]['peak_extra'] / 2**20:.1f} MiB")
        rows.append(result("deep", f"chain {side} time", t_np, t_pg, TIME_TARGET))
        rows.append(result("deep", f"chain {side} peak memory", memory["numpy"]["peak_extra"],
                           memory[side]["peak_extra"], MEM_TARGET, unit="B"))
    emit(rows, argv)
    return rows


if __name__ == "__main__":
    main(sys.argv[1:])

"""Benchmark 4: Theano-style compiled functions against hand-written numpy and eager polygrad.

* chain: the 200-step ``y = y + sin(y) * 0.01`` on 10 float64 numbers with its
  gradient, compiled once with ``pg.function([x], [cost, T.grad(cost, x)])``.
  Targets (issue 15): compiled and fused / numpy <= 0.5x; compiling (building
  the symbolic graph and the first call, which traces, optimizes and generates
  the program) < 0.5 s.
* mlp: one training step of the 784-512-512-10 MLP (batch 128, float32, relu,
  softmax cross-entropy) with the SGD update as ``updates=``; parameters are
  ``pg.shared``. Target: compiled / numpy <= 1.02x.
* elementwise: ``sum(tanh(x) * x + exp(-x * x))`` and its gradient on
  float64[4,000,000], compiled (the fused kernel of the numpy plugin, numexpr
  where installed). Target: compiled / numpy <= 0.8x, faster than hand-written numpy.

Peak memory (tracemalloc, a fresh process per side) is reported for each case.
Eager polygrad is timed in the same run for comparison (reported, no target).
"""

from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402,F401  (first: cleans the BLAS environment before numpy loads)
from _common import (blas_info, emit, fmt_time, measure_memory_main, memory_in_subprocess, result, timeit,  # noqa: E402
                     timeit_pair)

import numpy as np  # noqa: E402

import polygrad as pg  # noqa: E402
import polygrad.functions as F  # noqa: E402
from polygrad import symbolic as T  # noqa: E402

import bench_large  # noqa: E402
from bench_mlp import BATCH, LR, SIZES, NumpyMLP, PolygradMLP, init_params  # noqa: E402
from bench_overhead import STEPS, N, numpy_step, polygrad_step  # noqa: E402

CHAIN_TARGET, COMPILE_TARGET_S, MLP_TARGET, ELEMENTWISE_TARGET = 0.5, 0.5, 1.02, 0.8


def compile_chain():
    x = T.vector("x")
    y = x
    for _ in range(STEPS):
        y = y + pg.sin(y) * 0.01
    cost = pg.sum(y)
    return pg.function([x], [cost, T.grad(cost, x)])


def compile_mlp(arrays):
    params = [pg.shared(a.copy()) for a in arrays]
    W1, b1, W2, b2, W3, b3 = params
    x = T.matrix("x", dtype="float32")
    t = T.vector("t", dtype="int64")
    h = F.relu(F.linear(x, W1, b1))
    h = F.relu(F.linear(h, W2, b2))
    loss = F.softmax_cross_entropy(F.linear(h, W3, b3), t)
    grads = T.grad(loss, params)
    return pg.function([x, t], loss, updates=[(p, p - LR * g) for p, g in zip(params, grads)]), params


def compile_elementwise(dtype=None):
    x = T.vector("x", dtype=dtype)
    cost = pg.sum(pg.tanh(x) * x + pg.exp(-x * x))
    return pg.function([x], [cost, T.grad(cost, x)], trust_input=True)


def mlp_data():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    t = rng.integers(0, SIZES[-1], BATCH).astype(np.int64)
    return x, t


def _step_of(side: str):
    """One step of a case on one side, for the memory measurement in a fresh process."""
    case, _, who = side.partition(":")
    if case == "chain":
        x0 = np.linspace(0.0, 1.0, N)
        if who == "numpy":
            return lambda: numpy_step(x0)
        fn = compile_chain()
        fn.trust_input = True
        return lambda: fn(x0)
    if case == "mlp":
        x, t = mlp_data()
        if who == "numpy":
            m = NumpyMLP(init_params())
            return lambda: m.step(x, t)
        step, _ = compile_mlp(init_params())
        step.trust_input = True
        return lambda: step(x, t)
    x0 = bench_large.make_x()
    if who == "numpy":
        return lambda: bench_large.numpy_step(x0)
    fn = compile_elementwise()
    return lambda: fn(x0)


def memory_rows(case: str, label: str) -> list[dict]:
    m_np, m_c = memory_in_subprocess(__file__, f"{case}:numpy"), memory_in_subprocess(__file__, f"{case}:compiled")
    print(f"   {case}: peak extra memory numpy {m_np['peak_extra'] / 2**20:.2f} MiB, compiled "
          f"{m_c['peak_extra'] / 2**20:.2f} MiB")
    return [result("compiled", label, m_np["peak_extra"], m_c["peak_extra"], None, unit="B")]


def main(argv: list[str]) -> list[dict]:
    sides = [f"{c}:{w}" for c in ("chain", "mlp", "elementwise") for w in ("numpy", "compiled")]
    if measure_memory_main(argv, {s: (lambda s=s: _step_of(s)) for s in sides}):
        return []
    quick = "--quick" in argv
    print(f"== bench_compiled: compiled functions; {blas_info()}")
    rows = []

    x0 = np.linspace(0.0, 1.0, N)
    t0 = time.perf_counter()
    fn = compile_chain()
    cost, grad = fn(x0)
    compile_s = time.perf_counter() - t0
    assert np.allclose(grad, numpy_step(x0)), "compiled gradient differs from numpy's"
    prog = next(iter(fn._programs.values()))
    print(f"   chain: compile + first call {compile_s:.3f} s; {prog.n_kernels} kernels "
          f"({prog.n_traced} traced before folding, CSE and dead-code removal)")
    fn.trust_input = True
    repeat = 10 if quick else 40
    t_np, t_c = timeit_pair(lambda: numpy_step(x0), lambda: fn(x0), repeat=repeat, number=5, rounds=4)
    t_eager = timeit(lambda: polygrad_step(x0), repeat=max(3, repeat // 4), number=2)
    print(f"   chain: numpy {fmt_time(t_np['min'])}  compiled {fmt_time(t_c['min'])}  eager {fmt_time(t_eager['min'])}")
    rows.append(result("compiled", "chain time", t_np, t_c, CHAIN_TARGET))
    rows.append(result("compiled", "chain compile (vs 0.5 s)", {"min": COMPILE_TARGET_S, "median": COMPILE_TARGET_S},
                       {"min": compile_s, "median": compile_s}, 1.0))
    rows += memory_rows("chain", "chain peak memory")

    x, t = mlp_data()
    arrays = init_params()
    step, params = compile_mlp(arrays)
    m_np, m_eager = NumpyMLP(arrays), PolygradMLP(arrays)
    # one step each: the compiled update must equal numpy's
    step(x, t)
    m_np.step(x, t)
    for p, q in zip(params, m_np.params):
        assert np.allclose(p.get_value(), q, atol=1e-5), "compiled MLP step differs from numpy's"
    step.trust_input = True
    repeat = 6 if quick else 24
    t_np, t_c = timeit_pair(lambda: m_np.step(x, t), lambda: step(x, t), repeat=repeat, number=1, warmup=3, rounds=6)
    t_eager = timeit(lambda: m_eager.step(x, t), repeat=max(3, repeat // 3))
    print(f"   mlp:   numpy {fmt_time(t_np['min'])}  compiled {fmt_time(t_c['min'])}  eager {fmt_time(t_eager['min'])}")
    rows.append(result("compiled", "mlp step time", t_np, t_c, MLP_TARGET))
    rows += memory_rows("mlp", "mlp peak memory")

    x0 = bench_large.make_x()
    t0 = time.perf_counter()
    fn = compile_elementwise()
    cost, grad = fn(x0)
    compile_s = time.perf_counter() - t0
    np.testing.assert_allclose(grad, bench_large.numpy_step(x0), rtol=1e-12, atol=1e-12)
    prog = next(iter(fn._programs.values()))
    print(f"   elementwise: compile + first call {compile_s:.3f} s; {prog.n_kernels} kernels, {getattr(prog, 'n_fused', 0)} fused "
          f"({prog.n_traced} traced)")
    repeat = 6 if quick else 15
    t_np, t_c = timeit_pair(lambda: bench_large.numpy_step(x0), lambda: fn(x0), repeat=repeat, number=1, warmup=1)
    print(f"   elementwise: numpy {fmt_time(t_np['min'])}  compiled {fmt_time(t_c['min'])}")
    rows.append(result("compiled", "elementwise time", t_np, t_c, ELEMENTWISE_TARGET))
    rows += memory_rows("elementwise", "elementwise peak memory")
    emit(rows, argv)
    return rows


if __name__ == "__main__":
    main(sys.argv[1:])

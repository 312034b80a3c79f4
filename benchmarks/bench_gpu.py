"""Benchmark 5 (standalone; needs a CUDA GPU and cupy): the workloads of the other
benchmarks on the cupy backend, against the same hand-written code run on cupy
arrays in the same process, interleaved.

    .venv/bin/python benchmarks/bench_gpu.py          # prints why it cannot run where no GPU is usable
    .venv/bin/python benchmarks/bench_gpu.py --quick

The hand-written side is the very numpy code of bench_overhead, bench_mlp and
bench_large: numpy hands cupy arrays to cupy (``__array_ufunc__`` /
``__array_function__``), so the same expressions run as cupy kernels. Every
sample ends with a device synchronize. Cases:

* chain: the 200-step scalar chain, eager (per-op overhead: here a kernel launch costs
  more than polygrad's bookkeeping).
* mlp: one SGD step of the 784-512-512-10 MLP, batch 128, float32, eager and as a compiled
  function with the updates (bench_compiled's ``compile_mlp``).
* elementwise: ``sum(tanh(x) * x + exp(-x * x))`` and its gradient on float64[4,000,000]
  (and float32[64,000,000]): eager, compiled node by node, and compiled with the cupy
  plugin's fused ``ElementwiseKernel`` (the fusion hook). Peak memory is the most
  bytes taken from cupy's memory pool during one step (a ``cupy.cuda.MemoryHook``).

No targets: the ratios are reported (issue 15 sets its targets on the CPU).
"""

from __future__ import annotations

import os
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402,F401  (first: cleans the BLAS environment before numpy loads)
from _common import print_results, result, timeit_pair  # noqa: E402

import numpy as np  # noqa: E402

import polygrad as pg  # noqa: E402

import bench_compiled  # noqa: E402
import bench_large  # noqa: E402
import bench_overhead  # noqa: E402
from bench_mlp import NumpyMLP, PolygradMLP, init_params  # noqa: E402


def _usable() -> tuple[bool, str]:
    if "cupy" not in pg.backends():
        return False, "the polygrad-cupy plugin is not installed"
    import polygrad_cupy

    return polygrad_cupy.usable()


def _peak_bytes(step) -> int:
    """The most bytes held from cupy's memory pool during one ``step()`` (after a warm-up call)."""
    import cupy

    class Peak(cupy.cuda.MemoryHook):
        name = "polygrad-bench-peak"

        def __init__(self) -> None:
            self.now = self.peak = 0

        def malloc_postprocess(self, **kw) -> None:
            self.now += kw["mem_size"]
            self.peak = max(self.peak, self.now)

        def free_postprocess(self, **kw) -> None:
            self.now -= kw["mem_size"]

    step()
    cupy.cuda.Device().synchronize()
    with Peak() as hook:
        out = step()
        cupy.cuda.Device().synchronize()
    del out
    return hook.peak


def _synced(fn, *args):
    import cupy

    def run():
        out = fn(*args)
        cupy.cuda.Device().synchronize()
        return out

    return run


def chain_rows(repeat: int) -> list[dict]:
    import cupy

    x = cupy.asarray(np.linspace(-1, 1, bench_overhead.N))
    np.testing.assert_allclose(cupy.asnumpy(bench_overhead.polygrad_step(x)), cupy.asnumpy(bench_overhead.numpy_step(x)),
                               rtol=1e-10)
    t_np, t_pg = timeit_pair(_synced(bench_overhead.numpy_step, x), _synced(bench_overhead.polygrad_step, x),
                             repeat=repeat)
    return [result("gpu-chain", "eager fwd+bwd time", t_np, t_pg, None)]


def mlp_rows(repeat: int) -> list[dict]:
    import cupy

    rng = np.random.default_rng(1)
    x = cupy.asarray(rng.standard_normal((128, 784)).astype(np.float32))
    t = cupy.asarray(rng.integers(0, 10, 128))
    arrays = [cupy.asarray(a) for a in init_params()]
    a, b = NumpyMLP(arrays), PolygradMLP(arrays)
    with pg.using_backend("cupy"):
        compiled, _ = bench_compiled.compile_mlp(arrays)
    for _ in range(3):  # the three take the same steps
        want = a.step(x, t)
        np.testing.assert_allclose(b.step(x, t), want, rtol=1e-4)
        np.testing.assert_allclose(float(compiled(x, t)), want, rtol=1e-4)
    compiled.trust_input = True
    t_np, t_pg = timeit_pair(_synced(a.step, x, t), _synced(b.step, x, t), repeat=repeat)
    t_np2, t_c = timeit_pair(_synced(a.step, x, t), _synced(compiled, x, t), repeat=repeat)
    return [result("gpu-mlp", "eager SGD step time", t_np, t_pg, None),
            result("gpu-mlp", "compiled SGD step time", t_np2, t_c, None)]


def _compiled(fuse: bool, x):
    """The compiled elementwise case, its program built (on the first call) with fusion on or off."""
    from polygrad.compile import fusion

    was, fusion.ENABLED = fusion.ENABLED, fuse
    try:
        with pg.using_backend("cupy"):
            f = bench_compiled.compile_elementwise(x.dtype)
        f(x)
        return f
    finally:
        fusion.ENABLED = was


def elementwise_rows(repeat: int, n: int, dtype) -> list[dict]:
    import cupy

    label = f"gpu-ew{n // 1_000_000}M"
    x = cupy.asarray(np.random.default_rng(0).standard_normal(n).astype(dtype))
    want = bench_large.numpy_step(x)
    fused, plain = _compiled(True, x), _compiled(False, x)
    assert "fused" in fused.program_source(), "the cupy plugin declined to fuse"
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for got in (bench_large.polygrad_step(x), fused(x)[1], plain(x)[1]):
        np.testing.assert_allclose(cupy.asnumpy(got), cupy.asnumpy(want), rtol=tol, atol=tol)
    rows = []
    mem_np = _peak_bytes(lambda: bench_large.numpy_step(x))
    for name, step in (("eager", bench_large.polygrad_step), ("compiled", lambda v: plain(v)[1]),
                       ("fused", lambda v: fused(v)[1])):
        t_np, t_pg = timeit_pair(_synced(bench_large.numpy_step, x), _synced(step, x), repeat=repeat)
        rows.append(result(label, f"{name} time", t_np, t_pg, None))
        rows.append(result(label, f"{name} peak memory", mem_np, _peak_bytes(lambda: step(x)), None, unit="B"))
    return rows


def main(argv: list[str]) -> int:
    ok, reason = _usable()
    if not ok:
        print(f"bench_gpu: not run: {reason}")
        return 0
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    print(f"bench_gpu: {name}, cupy {cupy.__version__}, python {sys.version.split()[0]}")
    repeat = 6 if "--quick" in argv else 15
    rows: list[dict] = []
    cases = [("chain", lambda: chain_rows(repeat)), ("mlp", lambda: mlp_rows(repeat)),
             ("elementwise 4M float64", lambda: elementwise_rows(repeat, 4_000_000, np.float64)),
             ("elementwise 64M float32", lambda: elementwise_rows(repeat, 64_000_000, np.float32))]
    failed = 0
    for label, case in cases:
        try:
            rows.extend(case())
        except Exception:
            failed += 1
            print(f"bench_gpu: {label} FAILED:")
            traceback.print_exc()
    print("ratio = polygrad / hand-written code on cupy (minimum times; median ratio in brackets)")
    print_results(rows)
    return 2 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

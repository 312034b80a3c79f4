"""Gradient of a logistic-regression loss over a dataset larger than memory, on
the dask backend, against the same gradient written by hand in dask.

The data never exists as a whole: X (n x d, float64) and the labels y are
generated chunk by chunk inside the task graph (dask's seeded random numbers),
so each pass streams them through memory one block at a time. polygrad builds
the forward and backward graph lazily and ``pg.compute(loss, gw, gb)`` runs it
in one pass; the hand-written version computes the same loss and gradient
(X^T (sigmoid(Xw + b) - y) / n) with ``dask.compute``. Each variant runs in its
own process, so its peak RSS is its own.

The intended run is 32 GB of float64 (more than this 24 GB machine holds)::

    python benchmarks/bench_dask_scale.py --gb 32

Smaller runs show the same thing faster (``--gb 2``); ``--chunk-mb`` sets the
block size (default 128 MB), ``--features`` the width d. dask's progress bar
is shown for each compute (``--no-progress`` hides it).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

RESULT = "BENCH_RESULT "


def make_data(n, d, rows, seed=0):
    """Lazily generated X (n x d) and 0/1 labels y from a fixed true weight vector."""
    import dask.array as da
    import numpy as np

    rng = da.random.default_rng(seed)
    X = rng.standard_normal((n, d), chunks=(rows, d), dtype=np.float64)
    w_true = np.linspace(-1.0, 1.0, d) / np.sqrt(d)
    noise = rng.standard_normal((n,), chunks=(rows,), dtype=np.float64)
    y = ((X @ w_true + 0.5 * noise) > 0).astype(np.float64)
    return X, y


def run_polygrad(X, y, d, progress):
    import dask.array as da
    import numpy as np

    import polygrad as pg
    import polygrad.functions as F

    w = pg.Variable(da.from_array(np.full((d,), 0.01)), name="w")
    b = pg.Variable(da.from_array(np.asarray(0.1)), name="b")
    t0 = time.perf_counter()
    z = pg.matmul(X, w) + b
    loss = pg.mean(F.softplus(z) - y * z) + 1e-4 * pg.sum(w * w)
    loss.backward()
    build = time.perf_counter() - t0
    return _compute(lambda: pg.compute(loss, w.grad, b.grad), progress) + (build,)


def run_dask(X, y, d, progress):
    import dask
    import dask.array as da
    import numpy as np

    w = da.from_array(np.full((d,), 0.01))
    b = 0.1
    t0 = time.perf_counter()
    n = X.shape[0]
    z = X @ w + b
    p = 1.0 / (1.0 + da.exp(-z))
    loss = da.mean(da.logaddexp(0.0, z) - y * z) + 1e-4 * da.sum(w * w)
    r = (p - y) / n
    gw = X.T @ r + 2e-4 * w
    gb = da.sum(r)
    build = time.perf_counter() - t0
    return _compute(lambda: dask.compute(loss, gw, gb), progress) + (build,)


def _compute(fn, progress):
    from dask.diagnostics import ProgressBar

    t0 = time.perf_counter()
    if progress:
        with ProgressBar(minimum=1.0, dt=1.0):
            out = fn()
    else:
        out = fn()
    return out, time.perf_counter() - t0


def child(args):
    """One variant in this process: print its timing, values and peak RSS."""
    import numpy as np

    gb = args.gb
    d = args.features
    n = int(gb * 1e9 / 8 / d)
    rows = max(1, int(args.chunk_mb * 1e6 / 8 / d))
    X, y = make_data(n, d, rows)
    run = run_polygrad if args.variant == "polygrad" else run_dask
    (loss, gw, gb_), seconds, build = run(X, y, d, not args.no_progress)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB
    print(RESULT + json.dumps({
        "variant": args.variant, "seconds": seconds, "build_seconds": build, "peak_rss": peak,
        "loss": float(loss), "gw_head": np.asarray(gw)[:3].tolist(), "gb": float(gb_), "n": n, "d": d,
        "chunks": int(-(-n // rows)), "data_bytes": n * d * 8,
    }), flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gb", type=float, default=2.0, help="size of X in GB of float64 (intended: 32)")
    p.add_argument("--features", type=int, default=128, help="number of features d (default 128)")
    p.add_argument("--chunk-mb", type=float, default=128.0, help="rows per chunk, as MB of X (default 128)")
    p.add_argument("--no-progress", action="store_true", help="hide dask's progress bar")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.add_argument("--variant", choices=["polygrad", "dask"], help=argparse.SUPPRESS)  # one variant, in-process
    args = p.parse_args(argv)
    if args.variant:
        child(args)
        return 0

    results = {}
    for variant in ("dask", "polygrad"):
        print(f"== {variant}: gradient of the logistic loss over {args.gb:g} GB ({args.features} features, "
              f"{args.chunk_mb:g} MB chunks)", flush=True)
        cmd = [sys.executable, os.path.abspath(__file__), "--variant", variant, "--gb", str(args.gb),
               "--features", str(args.features), "--chunk-mb", str(args.chunk_mb)] + (["--no-progress"] if args.no_progress else [])
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
        lines = proc.stdout.splitlines()
        for line in lines:
            if not line.startswith(RESULT):
                print(line)
        found = [json.loads(line[len(RESULT):]) for line in lines if line.startswith(RESULT)]
        if proc.returncode != 0 or not found:
            print(f"{variant} failed (exit {proc.returncode})", file=sys.stderr)
            return 1
        results[variant] = found[0]

    pgr, hand = results["polygrad"], results["dask"]
    same = abs(pgr["loss"] - hand["loss"]) <= 1e-9 * max(1.0, abs(hand["loss"])) and all(
        abs(a - b) <= 1e-9 * max(1.0, abs(b)) for a, b in zip(pgr["gw_head"], hand["gw_head"]))
    size = hand["data_bytes"] / 1e9
    print()
    print(f"X: {hand['n']:,} x {hand['d']} float64 = {size:.2f} GB in {hand['chunks']} chunks, generated chunk by chunk")
    print(f"{'':>10} {'seconds':>9} {'GB/s':>7} {'peak RSS':>10} {'graph build':>12}")
    for name, r in (("dask", hand), ("polygrad", pgr)):
        print(f"{name:>10} {r['seconds']:9.2f} {size / r['seconds']:7.3f} {r['peak_rss'] / 2**20:8.0f} MB {r['build_seconds']:10.3f} s")
    print(f"throughput ratio polygrad / hand-written dask: {hand['seconds'] / pgr['seconds']:.3f}")
    print(f"loss and gradient agree: {same} (loss {pgr['loss']:.10f})")
    if args.json:
        print(json.dumps(results))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())

"""Shared helpers for the benchmarks: a clean BLAS environment, timing, reporting.

Import this module before numpy. If ``OPENBLAS_CORETYPE`` or ``OPENBLAS_L2_SIZE``
is set (they slow numpy's OpenBLAS down), the process re-executes itself once
without them; the variables removed are reported by :func:`blas_info`.
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import sys
import time

_SLOW_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
_UNSET_NOTE = "POLYGRAD_BENCH_UNSET"


def clean_env(env: dict | None = None) -> tuple[dict, list[str]]:
    """A copy of ``env`` without the slow OpenBLAS variables, and what was removed."""
    env = dict(os.environ if env is None else env)
    removed = [f"{k}={env.pop(k)}" for k in _SLOW_VARS if k in env]
    if removed:
        env[_UNSET_NOTE] = ",".join(filter(None, [env.get(_UNSET_NOTE, "")] + removed))
    return env, removed


def _ensure_clean_env() -> None:
    if not any(k in os.environ for k in _SLOW_VARS):
        return
    if "numpy" in sys.modules:  # too late to re-exec cleanly; say so in blas_info
        os.environ[_UNSET_NOTE] = "NOT UNSET (numpy already imported)"
        return
    env, _ = clean_env()
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable] + sys.argv, env)


_ensure_clean_env()


def blas_info() -> str:
    """One line naming the BLAS numpy uses (threadpoolctl if installed, else numpy's build config)."""
    import numpy as np

    np.ones((2, 2)) @ np.ones((2, 2))  # make sure the BLAS library is loaded
    desc = None
    try:
        from threadpoolctl import threadpool_info

        blas = [i for i in threadpool_info() if i.get("user_api") == "blas"]
        if blas:
            desc = "; ".join(
                f"{i.get('internal_api')} {i.get('version')} ({i.get('architecture') or '?'}, "
                f"{i.get('num_threads')} threads, {os.path.basename(i.get('filepath', ''))})"
                for i in blas
            )
    except ImportError:
        pass
    if desc is None:
        try:
            cfg = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
            desc = f"{cfg.get('name')} {cfg.get('version')} (numpy build config; pip install threadpoolctl for more)"
        except Exception:  # pragma: no cover - very old numpy
            desc = "unknown"
    unset = os.environ.get(_UNSET_NOTE)
    note = f"; unset for this run: {unset}" if unset else ""
    return f"numpy {np.__version__}, BLAS: {desc}{note}; {thread_settings()}"


def thread_settings() -> str:
    """The thread settings that change timings: OPENBLAS_NUM_THREADS (on a machine whose cores
    are busy, OpenBLAS's threads can make a step many times slower) and numexpr's threads
    (the fused kernels of compiled functions)."""
    blas = os.environ.get("OPENBLAS_NUM_THREADS")
    text = f"OPENBLAS_NUM_THREADS={blas}" if blas else "OPENBLAS_NUM_THREADS unset (OpenBLAS uses every core)"
    try:
        import numexpr

        text += f", numexpr {numexpr.__version__} with {numexpr.get_num_threads()} threads"
        text += " (VML)" if getattr(numexpr, "use_vml", False) else ""
    except ImportError:
        text += ", numexpr not installed (compiled functions run unfused on numpy)"
    return text


def _cpu_times() -> tuple[int, int] | None:
    try:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields[:8]), idle


def load_note(window_s: float = 0.3) -> str:
    """A warning when other processes keep the CPUs busy (sampled now, while this
    process sleeps), else ''. Linux only; elsewhere ''."""
    a = _cpu_times()
    time.sleep(window_s)
    b = _cpu_times()
    if a is None or b is None or b[0] == a[0]:
        return ""
    busy = 1 - (b[1] - a[1]) / (b[0] - a[0])
    ncpu = os.cpu_count() or 1
    if busy * ncpu < 0.25:
        return ""
    return (f"WARNING: other processes keep {busy * ncpu:.1f} of {ncpu} CPUs busy: "
            f"timings may be inflated and noisy")


def timeit(fn, *, repeat: int, number: int = 1, warmup: int = 2, budget_s: float | None = None) -> dict:
    """Time ``fn()``: ``warmup`` untimed calls, then ``repeat`` samples of ``number`` calls each.

    Returns seconds per call: ``min`` and ``median`` over samples. The garbage
    collector runs once before the samples and is disabled during each (the graph
    is acyclic; reference counting frees it). It does not run before every sample:
    a full collection walks every Python object alive and leaves the CPU caches
    cold, so each sample would time a cold start whose cost grows with the number
    of objects the imported modules hold, not with the work timed (about 1 ms of
    a 6 ms MLP step on this machine). ``budget_s`` stops sampling early (after at
    least 3 samples) once spent.
    """
    for _ in range(warmup):
        fn()
    samples = []
    gc.collect()
    start = time.perf_counter()
    for _ in range(repeat):
        gc.disable()
        try:
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            t1 = time.perf_counter()
        finally:
            gc.enable()
        samples.append((t1 - t0) / number)
        if budget_s is not None and len(samples) >= 3 and time.perf_counter() - start > budget_s:
            break
    return {"min": min(samples), "median": statistics.median(samples), "n": len(samples) * number}


def timeit_pair(fn_a, fn_b, *, repeat: int, number: int = 1, warmup: int = 2, rounds: int = 3) -> tuple[dict, dict]:
    """Time two functions interleaved (``rounds`` alternations) so drift hits both alike."""
    a_samples, b_samples = [], []
    per_round = max(1, repeat // rounds)
    for r in range(rounds):
        a = timeit(fn_a, repeat=per_round, number=number, warmup=warmup if r == 0 else 1)
        b = timeit(fn_b, repeat=per_round, number=number, warmup=warmup if r == 0 else 1)
        a_samples.append(a)
        b_samples.append(b)

    def merge(ss):
        return {
            "min": min(s["min"] for s in ss),
            "median": statistics.median(s["median"] for s in ss),
            "n": sum(s["n"] for s in ss),
        }

    return merge(a_samples), merge(b_samples)


def measure_peak(step) -> dict:
    """Peak traced bytes above the baseline during one ``step()`` (after one untraced warm-up
    call): ``tracemalloc`` sees numpy's data buffers and Python's objects alike."""
    import tracemalloc

    step()
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    out = step()
    cur, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del out
    return {"peak_extra": peak - base, "retained": cur - base}


def memory_in_subprocess(script: str, side: str) -> dict:
    """Run ``script --measure-memory SIDE`` in a fresh process; its last line is the JSON of
    :func:`measure_peak` (a fresh process: no allocator state left over from the timings)."""
    import subprocess

    env, _ = clean_env()
    out = subprocess.run([sys.executable, os.path.abspath(script), "--measure-memory", side],
                         env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure_memory_main(argv: list[str], steps: dict) -> bool:
    """In a benchmark's main: answer ``--measure-memory SIDE`` (``steps[SIDE]()`` gives the
    step function) and return True, else return False."""
    if "--measure-memory" not in argv:
        return False
    side = argv[argv.index("--measure-memory") + 1]
    print(json.dumps(measure_peak(steps[side]())))
    return True


def fmt_time(s: float) -> str:
    if s < 1e-3:
        return f"{s * 1e6:8.1f} us"
    if s < 1:
        return f"{s * 1e3:8.2f} ms"
    return f"{s:8.3f} s "


def result(name: str, metric: str, numpy_value, polygrad_value, target: float | None, unit: str = "s") -> dict:
    """A summary row. For times pass the two ``timeit`` dicts: the status is judged on
    the ratio of the minimum times (the least disturbed by other processes); the
    ratio of the medians is reported beside it. ``target=None``: reported only ("info")."""
    row = {"benchmark": name, "metric": metric, "unit": unit, "target": target}
    if isinstance(numpy_value, dict):
        row["ratio_median"] = polygrad_value["median"] / numpy_value["median"]
        numpy_value, polygrad_value = numpy_value["min"], polygrad_value["min"]
    ratio = polygrad_value / numpy_value if numpy_value else float("inf")
    status = "info" if target is None else "PASS" if ratio <= target else "MISS"
    row.update(numpy=numpy_value, polygrad=polygrad_value, ratio=ratio, status=status)
    return row


def fmt_value(v: float, unit: str) -> str:
    if unit == "s":
        return fmt_time(v).strip()
    if unit == "B":
        return f"{v / 2**20:.1f} MiB" if v >= 2**20 else f"{v / 2**10:.1f} KiB"
    return f"{v:.3g} {unit}"


def print_results(rows: list[dict]) -> None:
    head = (f"{'benchmark':<10} {'metric':<26} {'numpy':>11} {'polygrad':>11} {'ratio':>8} "
            f"{'(median)':>8} {'target':>7}  status")
    print(head)
    print("-" * len(head))
    for r in rows:
        med = f"{r['ratio_median']:.2f}x" if "ratio_median" in r else ""
        target = f"{r['target']:>6.2f}x" if r["target"] is not None else f"{'-':>7}"
        print(
            f"{r['benchmark']:<10} {r['metric']:<26} {fmt_value(r['numpy'], r['unit']):>11} "
            f"{fmt_value(r['polygrad'], r['unit']):>11} {r['ratio']:>7.3f}x {med:>8} {target}  {r['status']}"
        )


def emit(rows: list[dict], argv: list[str]) -> None:
    """Print the rows; with ``--json PATH`` in ``argv`` also write them there (for run_all.py)."""
    print_results(rows)
    if "--json" in argv:
        path = argv[argv.index("--json") + 1]
        with open(path, "w") as f:
            json.dump(rows, f)

"""Run every benchmark, each in a fresh process, and print a summary table.

    ./dev bench                  # all benchmarks (under a minute)
    ./dev bench --quick          # fewer repetitions
    ./dev bench overhead large   # only the benchmarks whose names contain these words
    ./dev bench --strict         # exit status 1 if any target is missed

Each ``bench_*.py`` that reports through ``_common.emit`` runs as
``python benchmarks/bench_<name>.py --json FILE`` (others are standalone scripts) with
``OPENBLAS_CORETYPE`` / ``OPENBLAS_L2_SIZE`` removed from its environment (if
set: they slow numpy's OpenBLAS down).
"""

from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

ORDER = ["bench_overhead.py", "bench_mlp.py", "bench_large.py", "bench_deep.py", "bench_compiled.py"]


def _uses_emit(path: str) -> bool:
    with open(path, encoding="utf-8") as f:
        return re.search(r"^\s*emit\(", f.read(), re.MULTILINE) is not None


def main(argv: list[str]) -> int:
    # No numpy in this process: _common's helpers below that need it are not called.
    from _common import clean_env, load_note, print_results

    flags = [a for a in argv if a.startswith("--")]
    words = [a for a in argv if not a.startswith("--")]
    passthrough = [f for f in flags if f in ("--quick",)]
    found = sorted(os.path.basename(p) for p in glob.glob(os.path.join(HERE, "bench_*.py")))
    # A benchmark takes part if it reports through _common.emit (accepts --json FILE);
    # others are standalone scripts (long runs, extra dependencies): run them directly.
    standalone = [f for f in found if not _uses_emit(os.path.join(HERE, f))]
    found = [f for f in found if f not in standalone]
    files = [f for f in ORDER if f in found] + [f for f in found if f not in ORDER]
    if words:
        files = [f for f in files if any(w in f for w in words)]
    env, removed = clean_env()
    if removed:
        print(f"run_all: removed from the benchmarks' environment: {', '.join(removed)}")

    noisy: list[str] = []
    rows: list[dict] = []
    failed: list[str] = []
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for f in files:
            out = os.path.join(tmp, f + ".json")
            note = load_note()
            if note:
                noisy.append(f"{f}: {note}")
            t0 = time.perf_counter()
            proc = subprocess.run([sys.executable, os.path.join(HERE, f), "--json", out] + passthrough, env=env)
            print(f"   ({f}: {time.perf_counter() - t0:.1f} s)\n", flush=True)
            if proc.returncode != 0 or not os.path.exists(out):
                failed.append(f)
                continue
            with open(out) as fh:
                rows.extend(json.load(fh))

    blas = subprocess.run(
        [sys.executable, "-c", "import _common; print(_common.blas_info())"],
        env=env, cwd=HERE, capture_output=True, text=True,
    ).stdout.strip()
    print("=" * 96)
    print(f"SUMMARY  ({time.perf_counter() - start:.0f} s; {blas}; python {sys.version.split()[0]}, "
          f"{os.cpu_count()} CPUs)")
    print("ratio = polygrad / numpy (minimum times; median ratio in brackets); PASS when ratio <= target")
    print_results(rows)
    for f in failed:
        print(f"{f}: FAILED (see its output above)")
    if standalone and not words:
        print(f"not run (standalone, run directly): {', '.join(standalone)}")
    for n in noisy:
        print(n)
    misses = [r for r in rows if r["status"] == "MISS"]
    if failed:
        return 2
    return 1 if ("--strict" in flags and misses) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

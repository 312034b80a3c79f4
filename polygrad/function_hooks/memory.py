"""MemoryHook: how much memory each function's forward and backward took.

Backend-neutral (Chainer's CupyMemoryProfileHook, through the backend contract):
before and after each step the hook asks the function's backend for
``memory_stats()`` (the ``polygrad_memory_stats`` hook: cupy reports its memory
pool; numpy reports the bytes ``tracemalloc`` traces while it is tracing) and
records the growth of ``"used"`` bytes. Functions on a backend that reports
nothing are counted but show no bytes.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

from polygrad.function_hooks._step import Record, StepHook


class MemoryHook(StepHook):
    """Per-function memory use.

    :ivar call_history: ``(function, phase, used_bytes_delta or None)`` per step,
        phase ``"forward"`` or ``"backward"``; ``function`` is the function's name (a str) with
        ``label`` and ``backend``, not the graph node, so that profiling keeps no graph alive.
    """

    name = "MemoryHook"

    def __init__(self) -> None:
        self.call_history: list[tuple[Any, str, int | None]] = []

    def _used(self, function: Any) -> int | None:
        backend = getattr(function, "backend", None)
        stats = backend.memory_stats() if backend is not None and hasattr(backend, "memory_stats") else None
        return None if not stats else stats.get("used")

    def begin(self, function: Any) -> int | None:
        return self._used(function)

    def end(self, function: Any, phase: str, before: int | None) -> tuple[str, int | None]:
        after = self._used(function)
        return phase, None if before is None or after is None else after - before

    def measure(self, record: Record) -> int | None:
        return record[2]

    def total_used_bytes(self) -> int:
        """Sum of the reported growth over the recorded steps: a step that ran inside another (the
        forward steps of a ``create_graph`` backward) is counted once, in the step that ran it."""
        return self._total()

    def summary(self) -> dict[str, dict[str, float]]:
        """Per function label: calls, bytes (sum of growth, with the steps run inside its steps),
        reported (whether the backend told)."""
        rows: dict[str, list] = {}
        for f, _, d in self.call_history:
            r = rows.setdefault(f.label, [0, 0, False])
            r[0] += 1
            if d is not None:
                r[1] += d
                r[2] = True
        ordered = sorted(rows.items(), key=lambda kv: -kv[1][1])
        return {k: {"calls": n, "bytes": b, "reported": rep} for k, (n, b, rep) in ordered}

    def print_report(self, file: TextIO | None = None, top: int | None = None) -> None:
        """Print calls and memory growth per function, largest first."""
        file = sys.stdout if file is None else file
        rows = list(self.summary().items())[:top]
        width = max([len("function")] + [len(k) for k, _ in rows])
        print(f"{'function':<{width}}  {'calls':>7}  {'memory':>12}", file=file)
        for k, r in rows:
            mem = f"{r['bytes'] / 2**20:.2f} MiB" if r["reported"] else "not reported"
            print(f"{k:<{width}}  {r['calls']:>7d}  {mem:>12}", file=file)

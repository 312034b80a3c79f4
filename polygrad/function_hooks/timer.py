"""TimerHook: elapsed time of every forward and backward step."""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

from polygrad.function_hooks._step import Record, StepHook


class TimerHook(StepHook):
    """Measure the time each function's forward and backward takes.

    Before reading the clock the hook asks the function's backend to
    synchronize (a GPU backend runs asynchronously), through the backend
    contract, never by asking which library it is.

    :ivar call_history: list of ``(function, seconds)`` pairs, in call order; ``function`` is
        the function's name (a str, as in Chainer) with ``label`` and ``backend``, not the graph
        node, so that profiling keeps no graph alive.
    """

    name = "TimerHook"

    def __init__(self) -> None:
        self.call_history: list[tuple[Any, float]] = []

    def _sync(self, function: Any) -> None:
        backend = getattr(function, "backend", None)
        if backend is not None and backend.device != "cpu":
            backend.synchronize()

    def begin(self, function: Any) -> float:
        self._sync(function)
        return time.perf_counter()

    def end(self, function: Any, phase: str, started: float) -> tuple[float]:
        self._sync(function)
        return (time.perf_counter() - started,)

    def measure(self, record: Record) -> float:
        return record[1]

    def total_time(self) -> float:
        """Total elapsed time in seconds: a step that ran inside another (the forward steps of a
        ``create_graph`` backward) is counted once, in the step that ran it."""
        return self._total()

    def summary(self) -> dict[str, dict[str, float]]:
        """Per function label, most expensive first: ``calls``; ``total``, the time of its steps
        (with the steps that ran inside them); ``mean``, total per call; ``self``, its time without
        the steps run inside it; ``share``, self over :meth:`total_time`."""
        rows: dict[str, list[float]] = {}
        for record in self.call_history:
            f, t = record
            own = getattr(record, "own", None)  # (None: no step ran inside it, or a plain tuple)
            r = rows.setdefault(f.label, [0, 0.0, 0.0])
            r[0] += 1
            r[1] += t
            r[2] += t if own is None else own
        total = self.total_time() or 1.0
        ordered = sorted(rows.items(), key=lambda kv: -kv[1][2])
        return {k: {"calls": n, "total": s, "mean": s / n, "self": own, "share": own / total}
                for k, (n, s, own) in ordered}

    def print_report(self, file: TextIO | None = None, top: int | None = None) -> None:
        """Print the per-function table: calls, total, mean and share of time."""
        file = sys.stdout if file is None else file
        rows = list(self.summary().items())[:top]
        width = max([len("function")] + [len(k) for k, _ in rows])
        print(f"{'function':<{width}}  {'calls':>7}  {'total':>10}  {'mean':>10}  {'self':>10}  {'share':>6}",
              file=file)
        for k, r in rows:
            print(f"{k:<{width}}  {r['calls']:>7d}  {_fmt(r['total']):>10}  {_fmt(r['mean']):>10}  "
                  f"{_fmt(r['self']):>10}  {r['share']:>6.1%}", file=file)


def _fmt(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.2f}{unit}"
    return f"{seconds * 1e9:.0f}ns"

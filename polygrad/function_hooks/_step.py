"""StepHook: a FunctionHook that measures each forward and backward step alike.

Steps nest: under ``create_graph`` a backward step applies the functions of its
rule, whose forward steps run inside it. The hook records each step's span of
events (per thread), so that totals count a nested step once, inside the step
that ran it (Chainer's TimerHook and CupyMemoryProfileHook add only outermost
steps to their totals). A step whose function raised has no end; it is dropped
when the step that ran it ends.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any

from polygrad.core.hooks import FunctionHook

_ticks = itertools.count()


class StepHook(FunctionHook):
    """Calls ``begin(function)`` before and ``end(function, phase, started)`` after every
    forward and backward step (``phase`` is ``"forward"`` or ``"backward"``, ``started`` what
    ``begin`` returned); ``end`` appends one record to ``call_history``."""

    call_history: list

    def begin(self, function: Any) -> Any:
        raise NotImplementedError

    def end(self, function: Any, phase: str, started: Any) -> None:
        raise NotImplementedError

    def _open_steps(self) -> list:
        steps = self.__dict__.get("_open")
        if steps is None:
            steps = self.__dict__.setdefault("_open", {})
        return steps.setdefault(threading.get_ident(), [])

    def _begin(self, function: Any) -> None:
        self._open_steps().append((function, next(_ticks), self.begin(function)))

    def _end(self, function: Any, phase: str) -> None:
        steps = self._open_steps()
        while steps:  # steps above this one raised: they never end
            f, tick, started = steps.pop()
            if f is function:
                break
        else:
            return
        self.end(function, phase, started)
        spans = self.__dict__.setdefault("_spans", [])
        spans.append((threading.get_ident(), tick, next(_ticks)))

    def _outermost(self) -> list[bool]:
        """For each record of ``call_history``: whether its step ran inside no other step."""
        spans = self.__dict__.get("_spans", [])
        outer = [True] * len(spans)
        last_end: dict[int, int] = {}
        for i in sorted(range(len(spans)), key=lambda i: spans[i][1]):
            thread, b, e = spans[i]
            if b < last_end.get(thread, -1):
                outer[i] = False
            else:
                last_end[thread] = e
        return outer

    def _exclusive(self, values: list) -> list:
        """Each record's value less those of the steps that ran directly inside it."""
        spans = self.__dict__.get("_spans", [])
        own = list(values)
        for thread in {s[0] for s in spans}:
            stack: list[int] = []  # indices of the open enclosing spans, innermost last
            for i in sorted((i for i in range(len(spans)) if spans[i][0] == thread), key=lambda i: spans[i][1]):
                while stack and spans[stack[-1]][2] < spans[i][1]:
                    stack.pop()
                if stack:
                    own[stack[-1]] -= values[i]
                stack.append(i)
        return own

    def forward_preprocess(self, function: Any, in_data: tuple) -> None:
        self._begin(function)

    def forward_postprocess(self, function: Any, in_data: tuple) -> None:
        self._end(function, "forward")

    def backward_preprocess(self, function: Any, in_data: tuple, out_grad: tuple) -> None:
        self._begin(function)

    def backward_postprocess(self, function: Any, in_data: tuple, out_grad: tuple) -> None:
        self._end(function, "backward")

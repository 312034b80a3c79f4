"""StepHook: a FunctionHook that measures each forward and backward step alike.

Steps nest: under ``create_graph`` a backward step applies the functions of its
rule, whose forward steps run inside it. Each record of ``call_history`` knows
whether its step ran inside another one of this hook (in the same thread), and
how much of its measure was its own, so that totals count a nested step once,
inside the step that ran it (Chainer's TimerHook and CupyMemoryProfileHook add
only outermost steps to their totals). A step whose function raised has no end;
it is dropped when the step that ran it ends, or when the next step begins and
its frame no longer runs (what ran inside it then counts as run inside the open
step below it, if any).
"""

from __future__ import annotations

import sys
import threading
from typing import Any

from polygrad.core.hooks import FunctionHook


class FunctionName(str):
    """What a record of ``call_history`` keeps of the function it measured: its label, a str (the
    function's name, as in Chainer's ``call_history``) that also answers ``label`` and ``backend``,
    as the node does. Not the node: it holds the arrays it saved for backward, and a hook that kept
    it kept every graph it measured alive for as long as the hook lived."""

    backend: Any = None

    @property
    def label(self) -> str:
        return str(self)


class Record(tuple):
    """A record of ``call_history``: a plain tuple (``function, seconds`` or ``function, phase,
    bytes``, ``function`` a :class:`FunctionName`) that also knows ``nested`` (whether its step ran
    inside another) and ``own`` (its measure less that of the steps run directly inside it; None:
    all of it)."""

    nested = False
    own: Any = None


#: the modules whose frames run a step and call the hooks around it
_STEP_MODULES = frozenset({"polygrad.core.primitive", "polygrad.core.engine"})


def _drop_failed(steps: list, caller: Any) -> None:
    """Remove the steps whose function raised (their frame no longer runs ``caller``): what ran
    inside one ran inside the open step below it, if any. Without this a step that raised at
    the outermost level gathered every later step's record, and the arrays their nodes hold.
    The walk up the stack stops once every open step's frame is found (nested steps: a few
    frames), so only after a failure does it reach the bottom."""
    pending = {entry[3] for entry in steps}
    f = caller.f_back
    while f is not None and pending:
        pending.discard(id(f))
        f = f.f_back
    kept: list = []
    for entry in steps:
        if entry[3] not in pending:
            kept.append(entry)
        elif entry[2] and kept:
            kept[-1][2] = (kept[-1][2] or []) + entry[2]
    steps[:] = kept


class StepHook(FunctionHook):
    """Calls ``begin(function)`` before every forward and backward step, and after it
    ``end(function, phase, started)`` (``phase`` is ``"forward"`` or ``"backward"``,
    ``started`` what ``begin`` returned), which returns the step's measures: the
    :class:`Record` appended to ``call_history`` is the function's :class:`FunctionName` and
    them. ``measure(record)`` is the number totals add (None: nothing)."""

    call_history: list

    def begin(self, function: Any) -> Any:
        raise NotImplementedError

    def end(self, function: Any, phase: str, started: Any) -> tuple:
        raise NotImplementedError

    def measure(self, record: Record) -> Any:
        raise NotImplementedError

    def _open_steps(self) -> list:
        """The steps begun and not ended in this thread, innermost last."""
        local = self.__dict__.get("_local")
        if local is None:
            local = self.__dict__.setdefault("_local", threading.local())
        try:
            return local.steps
        except AttributeError:
            local.steps = []
            return local.steps

    def _begin(self, function: Any) -> None:
        steps = self._open_steps()
        # The frame running the step (apply, or the backward pass), past the hook's own frames and
        # any wrapper around them.
        caller = sys._getframe(1)
        while caller.f_back is not None and caller.f_globals.get("__name__") not in _STEP_MODULES:
            caller = caller.f_back
        if steps:
            _drop_failed(steps, caller)
        # an open step: [the function's id, what begin() gave, the records of the steps run in it (None:
        # none yet), the id of the frame running it]; ids, not the objects: a step that raised
        # kept its frame and function, and every array they held, until this hook timed another
        # step in this thread
        steps.append([id(function), self.begin(function), None, id(caller)])

    def _end(self, function: Any, phase: str) -> None:
        steps = self._open_steps()
        inner: list = []
        while steps:  # steps above this one raised and never end: what ran in them ran in this one
            f, started, ran, _ = steps.pop()
            if ran:
                inner += ran
            if f == id(function):
                break
        else:
            return
        record = Record((self._name(function),) + self.end(function, phase, started))
        if inner:  # (usually none: own stays None, "all of it")
            own = self.measure(record)
            for r in inner:
                r.nested = True
                m = self.measure(r)
                if own is not None and m is not None:
                    own -= m
            record.own = own
        self.call_history.append(record)
        if steps:
            parent = steps[-1]
            if parent[2] is None:
                parent[2] = [record]
            else:
                parent[2].append(record)

    def _name(self, function: Any) -> FunctionName:
        """The function's :class:`FunctionName`, one per label and backend (a long history holds
        one small object per kind of function, not one per step)."""
        label, backend = function.label, getattr(function, "backend", None)
        names = self.__dict__.get("_names")
        if names is None:
            names = self.__dict__.setdefault("_names", {})
        name = names.get((label, backend))
        if name is None:
            name = names[label, backend] = FunctionName(label)
            name.backend = backend
        return name

    def _total(self) -> Any:
        """The sum of the measures of the outermost steps recorded."""
        return sum(m for r in self.call_history if not getattr(r, "nested", False)
                   for m in (self.measure(r),) if m is not None)

    def __getstate__(self) -> dict:  # (pickle, deepcopy: the open steps are this process's threads')
        state = dict(self.__dict__)
        state.pop("_local", None)
        state.pop("_names", None)
        return state

    def forward_preprocess(self, function: Any, in_data: tuple) -> None:
        self._begin(function)

    def forward_postprocess(self, function: Any, in_data: tuple) -> None:
        self._end(function, "forward")

    def backward_preprocess(self, function: Any, in_data: tuple, out_grad: tuple) -> None:
        self._begin(function)

    def backward_postprocess(self, function: Any, in_data: tuple, out_grad: tuple) -> None:
        self._end(function, "backward")

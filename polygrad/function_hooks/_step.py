"""StepHook: a FunctionHook that measures each forward and backward step alike."""

from __future__ import annotations

from typing import Any

from polygrad.core.hooks import FunctionHook


class StepHook(FunctionHook):
    """Calls ``begin(function)`` before and ``end(function, phase)`` after every
    forward and backward step (``phase`` is ``"forward"`` or ``"backward"``)."""

    def begin(self, function: Any) -> None:
        raise NotImplementedError

    def end(self, function: Any, phase: str) -> None:
        raise NotImplementedError

    def forward_preprocess(self, function: Any, in_data: tuple) -> None:
        self.begin(function)

    def forward_postprocess(self, function: Any, in_data: tuple) -> None:
        self.end(function, "forward")

    def backward_preprocess(self, function: Any, in_data: tuple, out_grad: tuple) -> None:
        self.begin(function)

    def backward_postprocess(self, function: Any, in_data: tuple, out_grad: tuple) -> None:
        self.end(function, "backward")

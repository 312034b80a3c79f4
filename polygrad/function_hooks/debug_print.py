"""PrintHook: print what each function receives, forward and backward."""

from __future__ import annotations

import sys
from typing import Any, TextIO

from polygrad.core.hooks import FunctionHook


def _describe(a: Any) -> str:
    if a is None:
        return "None"
    if not hasattr(a, "shape"):
        return repr(a)
    return f"array(shape={tuple(a.shape)}, dtype={a.dtype})"


class PrintHook(FunctionHook):
    """Print the function's label and the shapes and dtypes of its inputs (and
    output gradients in backward), just before each step. Values are never
    printed: that would force lazy arrays.

    :param sep: separator between printed items. :param end: line end.
    :param file: where to print (stdout by default). :param flush: flush after each print.
    """

    name = "PrintHook"

    def __init__(self, sep: str = "", end: str = "\n", file: TextIO | None = None, flush: bool = True) -> None:
        self.sep, self.end, self.file, self.flush = sep, end, file, flush

    def _print(self, text: str) -> None:
        out = sys.stdout if self.file is None else self.file
        print(text, sep=self.sep, end=self.end, file=out)
        if self.flush and hasattr(out, "flush"):
            out.flush()

    def forward_preprocess(self, function: Any, in_data: tuple) -> None:
        lines = [f"function\t{function.label}", "input data"] + [_describe(a) for a in in_data]
        self._print("\n".join(lines))

    def backward_preprocess(self, function: Any, in_data: tuple, out_grad: tuple) -> None:
        lines = [f"function\t{function.label}", "input data"] + [_describe(a) for a in in_data]
        lines += ["output gradient"] + [_describe(g) for g in out_grad]
        self._print("\n".join(lines))

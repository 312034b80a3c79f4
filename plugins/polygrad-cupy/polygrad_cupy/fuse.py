"""Fused elementwise kernels for CuPy: one ``cupy.ElementwiseKernel`` per group.

Each node becomes one line of CUDA C computing a local variable of its dtype;
the outputs are the kernel's output parameters, so the group reads each input
once and writes each output once, in one launch. Types follow NumPy's rules,
as CuPy's own ufuncs do: the operands are cast to the dtype the standard's
promotion gives (Python scalars are weak), and the math functions are CUDA's,
the ones CuPy's ufuncs call. Declined where a node has no line here, where a
dtype is not bool, int32, int64, float32 or float64, or where the outputs
differ in shape (an ElementwiseKernel gives all its outputs one shape).

:func:`source` builds the kernel's parameters and body with NumPy alone, so it
is tested without a GPU.
"""

from __future__ import annotations

from typing import Any, Callable

CTYPES = {"bool": "bool", "int32": "int", "int64": "long long", "float32": "float", "float64": "double"}
_ARITHMETIC = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/"}
_COMPARE = {"equal": "==", "not_equal": "!=", "less": "<", "less_equal": "<=", "greater": ">", "greater_equal": ">="}
_LOGICAL = {"logical_and": "&&", "logical_or": "||"}
_UNARY = {"exp": "exp", "expm1": "expm1", "log": "log", "log1p": "log1p", "log2": "log2", "log10": "log10",
          "sqrt": "sqrt", "sin": "sin", "cos": "cos", "tan": "tan", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh",
          "asin": "asin", "acos": "acos", "atan": "atan", "asinh": "asinh", "acosh": "acosh", "atanh": "atanh",
          "erf": "erf"}
_BINARY_FN = {"atan2": "atan2", "hypot": "hypot", "pow": "pow"}
# Python's spellings of the special floats, as CUDA C doubles (cast to float where needed)
_SPECIAL = {"inf": "__longlong_as_double(0x7ff0000000000000LL)", "-inf": "__longlong_as_double(0xfff0000000000000LL)",
            "nan": "__longlong_as_double(0x7ff8000000000000LL)"}


def source(nodes: tuple, inputs: tuple, outputs: tuple) -> tuple[str, str, str] | None:
    """``(in_params, out_params, body)`` of the ElementwiseKernel of a group, or None."""
    import numpy as np

    def ctype(dtype: Any) -> str | None:
        return CTYPES.get(np.dtype(dtype).name)

    if any(ctype(d) is None for _, d, *_ in inputs) or any(ctype(n.dtype) is None for n in nodes):
        return None
    shape = tuple(nodes[outputs[0]].shape)
    if any(tuple(nodes[j].shape) != shape for j in outputs):
        return None
    lines = []
    for j, node in enumerate(nodes):
        operands, dtypes = [], []
        for kind, v in node.args:
            if kind == "input":
                operands.append(f"i{v}")
                dtypes.append(np.dtype(inputs[v][1]))
            elif kind == "node":
                operands.append(f"n{v}")
                dtypes.append(np.dtype(nodes[v].dtype))
            else:
                operands.append(v)
                dtypes.append(None)
        expr = _line(np, node, operands, dtypes)
        if expr is None:
            return None
        lines.append(f"{ctype(node.dtype)} n{j} = {expr};")
    for m, j in enumerate(outputs):
        lines.append(f"o{m} = n{j};")
    in_params = ", ".join(f"{np.dtype(d).name} i{k}" for k, (_, d, *_) in enumerate(inputs))
    out_params = ", ".join(f"{np.dtype(nodes[j].dtype).name} o{m}" for m, j in enumerate(outputs))
    return in_params, out_params, "\n".join(lines)


def _line(np: Any, node: Any, operands: list, dtypes: list) -> str | None:
    """The C expression of one node (operands cast to NumPy's loop dtype), or None."""
    name, out = node.op, np.dtype(node.dtype)
    arrays = [d for d in dtypes if d is not None]
    scalars = [o for o, d in zip(operands, dtypes) if d is None]
    if node.params and name != "astype":
        return None
    loop = np.result_type(*arrays, *scalars) if arrays or scalars else out

    def cast(k: int, to: Any) -> str:
        o = operands[k]
        c = CTYPES[np.dtype(to).name]
        if dtypes[k] is None:  # a Python scalar
            value = bool(o) if np.dtype(to).kind == "b" else (int(o) if np.dtype(to).kind in "iu" else float(o))
            text = repr(value).lower() if isinstance(value, bool) else repr(value)
            text = _SPECIAL.get(text, text)
            return f"(({c}){text})"
        return o if dtypes[k] == np.dtype(to) else f"(({c}){o})"

    if name == "divide" and len(operands) == 2 and out.kind == "f":  # true division: in the result's float dtype
        return f"{cast(0, out)} / {cast(1, out)}"
    if name in _ARITHMETIC and name != "divide" and len(operands) == 2 and loop == out:
        return f"{cast(0, out)} {_ARITHMETIC[name]} {cast(1, out)}"
    if name in _COMPARE and len(operands) == 2 and out.kind == "b":
        return f"{cast(0, loop)} {_COMPARE[name]} {cast(1, loop)}"
    if name in _LOGICAL and out.kind == "b":
        return f"{cast(0, out)} {_LOGICAL[name]} {cast(1, out)}"
    if name == "logical_not" and out.kind == "b":
        return f"!{cast(0, out)}"
    if name == "where" and len(operands) == 3:
        return f"{cast(0, np.bool_)} ? {cast(1, out)} : {cast(2, out)}"
    if name == "astype":
        return f"(({CTYPES[out.name]}){operands[0]})" if dtypes[0] is not None else None
    if out.kind != "f" or loop != out:
        return None
    if name == "negative":
        return f"-{cast(0, out)}"
    if name == "positive":
        return cast(0, out)
    if name == "square":
        return f"{cast(0, out)} * {cast(0, out)}"
    if name == "abs":
        return f"fabs({cast(0, out)})"
    if name in _UNARY and len(operands) == 1:
        return f"{_UNARY[name]}({cast(0, out)})"
    if name in _BINARY_FN and len(operands) == 2:
        return f"{_BINARY_FN[name]}({cast(0, out)}, {cast(1, out)})"
    if name == "maximum":  # NumPy's: x1 where x1 > x2 or x1 is NaN, else x2
        a, b = cast(0, out), cast(1, out)
        return f"(({a} > {b}) || ({a} != {a})) ? {a} : {b}"
    if name == "minimum":
        a, b = cast(0, out), cast(1, out)
        return f"(({a} < {b}) || ({a} != {a})) ? {a} : {b}"
    if name == "relu":
        a = cast(0, out)
        return f"(({a} > 0) || ({a} != {a})) ? {a} : ({CTYPES[out.name]})0"
    if name == "sigmoid":  # the row's kernel: 1 / (1 + exp(-x)), exp(x) / (1 + exp(x)) for x < 0
        c, a = CTYPES[out.name], cast(0, out)
        return f"(({a}) >= ({c})0) ? ({c})1 / (({c})1 + exp(-({a}))) : exp({a}) / (({c})1 + exp({a}))"
    return None


def build(nodes: tuple, inputs: tuple, outputs: tuple) -> Callable | None:
    """The group as one ElementwiseKernel (compiled by CuPy at its first launch), or None."""
    parts = source(nodes, inputs, outputs)
    if parts is None:
        return None
    import cupy

    kernel = cupy.ElementwiseKernel(*parts, name="polygrad_fused")
    n_out = len(outputs)

    def fused(*arrays: Any) -> tuple:
        result = kernel(*arrays)
        return (result,) if n_out == 1 else tuple(result)

    return fused

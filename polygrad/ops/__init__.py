"""The differentiable ops: the op table (one module per Array API chapter) and
the Variable operators built on it."""

from __future__ import annotations

from polygrad.core.variable import Variable
from polygrad.ops import elementwise, linalg, manipulation, statistical
from polygrad.ops.elementwise import (
    abs, add, astype, cos, divide, equal, exp, greater, greater_equal, less, less_equal, log, maximum,
    multiply, negative, not_equal, ones_like, positive, pow, sign, sin, sqrt, subtract, tanh, where, zeros_like,
)
from polygrad.ops.linalg import matmul
from polygrad.ops.manipulation import (
    broadcast_to, expand_dims, getitem, getitem_grad, matrix_transpose, permute_dims, reshape, reverse_dims, setitem,
    squeeze, sum_to, transpose,
)
from polygrad.ops.primitive import GRAPH_OPS, REGISTRY, Op, Primitive, apply, def_linear, def_nograd, defvjp
from polygrad.ops.statistical import max, mean, min, sum

__all__ = [
    "abs", "add", "astype", "broadcast_to", "cos", "divide", "equal", "exp", "expand_dims", "getitem",
    "greater", "greater_equal", "less", "less_equal", "log", "matmul", "matrix_transpose", "max", "maximum",
    "mean", "min", "multiply", "negative", "not_equal", "ones_like", "permute_dims", "positive", "pow",
    "reshape", "sign", "sin", "sqrt", "squeeze", "subtract", "sum", "sum_to", "tanh", "transpose", "where",
    "zeros_like", "Op", "Primitive", "apply", "defvjp", "def_linear", "def_nograd", "REGISTRY",
]

# The namespace create_graph rules run against: every public op, differentiable.
for _name in __all__:
    _f = globals()[_name]
    if callable(_f) and _name[0].islower() and _name not in ("apply", "defvjp", "def_linear", "def_nograd"):
        setattr(GRAPH_OPS, _name, _f)
GRAPH_OPS.getitem_grad = getitem_grad
GRAPH_OPS.reverse_dims = reverse_dims


# ---------------------------------------------------------------------------
# Variable operators
# ---------------------------------------------------------------------------
def _inplace(op_fn, symbol):
    def method(self, other):
        self._check_inplace(symbol)
        return self._assign_inplace(op_fn(self, other), symbol)

    method.__name__ = f"__i{op_fn.__name__}__"
    return method


def _setitem(self, key, value):
    self._check_inplace("x[key] = value")
    self._assign_inplace(setitem(self, key, value), "x[key] = value")


def _reshape_method(self, *shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return reshape(self, shape)


def _transpose_method(self, *axes):
    if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
        axes = tuple(axes[0])
    return transpose(self, axes or None)


_OPERATORS = {
    "__add__": add,
    "__radd__": lambda self, other: add(other, self),
    "__sub__": subtract,
    "__rsub__": lambda self, other: subtract(other, self),
    "__mul__": multiply,
    "__rmul__": lambda self, other: multiply(other, self),
    "__truediv__": divide,
    "__rtruediv__": lambda self, other: divide(other, self),
    "__pow__": pow,
    "__rpow__": lambda self, other: pow(other, self),
    "__matmul__": matmul,
    "__rmatmul__": lambda self, other: matmul(other, self),
    "__neg__": negative,
    "__pos__": positive,
    "__abs__": abs,
    "__eq__": equal,
    "__ne__": not_equal,
    "__lt__": less,
    "__le__": less_equal,
    "__gt__": greater,
    "__ge__": greater_equal,
    "__getitem__": getitem,
    "__setitem__": _setitem,
    "__iadd__": _inplace(add, "+="),
    "__isub__": _inplace(subtract, "-="),
    "__imul__": _inplace(multiply, "*="),
    "__itruediv__": _inplace(divide, "/="),
    "__ipow__": _inplace(pow, "**="),
    "reshape": _reshape_method,
    "transpose": _transpose_method,
    "T": property(lambda self: transpose(self)),
    "mT": property(matrix_transpose),
}
for _name, _fn in _OPERATORS.items():
    setattr(Variable, _name, _fn)

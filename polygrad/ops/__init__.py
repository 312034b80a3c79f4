"""The differentiable ops: the op table (one module per Array API chapter) and
the Variable operators built on it.

Each chapter module declares its rows (``Op`` + ``defvjp``) and its public
functions, listed in its ``__all__``; everything listed is exported here and
joins the namespace that ``create_graph`` rules run against.
"""

from __future__ import annotations

from polygrad.core.variable import Variable
from polygrad.ops import creation, elementwise, fft, indexing, linalg, manipulation, searching, sets, sorting, statistical, utility
from polygrad.ops.primitive import GRAPH_OPS, REGISTRY, Op, Primitive, apply, def_linear, def_nograd, defvjp

CHAPTERS = (elementwise, creation, manipulation, searching, sets, sorting, statistical, utility, indexing, linalg)

__all__ = ["Op", "Primitive", "apply", "defvjp", "def_linear", "def_nograd", "REGISTRY", "GRAPH_OPS", "CHAPTERS"]
for _module in CHAPTERS:
    for _name in _module.__all__:
        _fn = getattr(_module, _name)
        globals()[_name] = _fn
        setattr(GRAPH_OPS, _name, _fn)
        __all__.append(_name)
for _name in fft.__all__:  # the fft extension lives in its own namespace (pg.fft)
    setattr(GRAPH_OPS, "fft_" + _name, getattr(fft, _name))
for _name in getattr(linalg, "EXTENSION", ()):  # linalg extension functions are also reached as o.linalg_<name>
    setattr(GRAPH_OPS, "linalg_" + _name, getattr(linalg, _name))


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


def _binary(name, reflected=False):
    """Operator method calling the op ``name`` (looked up when called, so chapters may add it later)."""
    def method(self, other):
        fn = globals().get(name)
        if fn is None:
            return NotImplemented
        return fn(other, self) if reflected else fn(self, other)

    return method


def _unary(name):
    def method(self):
        return globals()[name](self)

    return method


_OPERATORS = {
    "__add__": _binary("add"), "__radd__": _binary("add", True),
    "__sub__": _binary("subtract"), "__rsub__": _binary("subtract", True),
    "__mul__": _binary("multiply"), "__rmul__": _binary("multiply", True),
    "__truediv__": _binary("divide"), "__rtruediv__": _binary("divide", True),
    "__floordiv__": _binary("floor_divide"), "__rfloordiv__": _binary("floor_divide", True),
    "__mod__": _binary("remainder"), "__rmod__": _binary("remainder", True),
    "__pow__": _binary("pow"), "__rpow__": _binary("pow", True),
    "__matmul__": _binary("matmul"), "__rmatmul__": _binary("matmul", True),
    "__and__": _binary("bitwise_and"), "__rand__": _binary("bitwise_and", True),
    "__or__": _binary("bitwise_or"), "__ror__": _binary("bitwise_or", True),
    "__xor__": _binary("bitwise_xor"), "__rxor__": _binary("bitwise_xor", True),
    "__lshift__": _binary("bitwise_left_shift"), "__rlshift__": _binary("bitwise_left_shift", True),
    "__rshift__": _binary("bitwise_right_shift"), "__rrshift__": _binary("bitwise_right_shift", True),
    "__neg__": _unary("negative"), "__pos__": _unary("positive"), "__abs__": _unary("abs"),
    "__invert__": _unary("bitwise_invert"),
    "__eq__": _binary("equal"), "__ne__": _binary("not_equal"),
    "__lt__": _binary("less"), "__le__": _binary("less_equal"),
    "__gt__": _binary("greater"), "__ge__": _binary("greater_equal"),
    "__getitem__": lambda self, key: getitem(self, key),
    "__setitem__": _setitem,
    "reshape": _reshape_method,
    "transpose": _transpose_method,
    "T": property(lambda self: transpose(self)),
    "mT": property(lambda self: matrix_transpose(self)),
}
# Fast paths for the hottest operators: call the op function directly.
_OPERATORS.update({
    "__add__": add, "__sub__": subtract, "__mul__": multiply, "__truediv__": divide, "__matmul__": matmul,
    "__radd__": lambda self, other: add(other, self), "__rmul__": lambda self, other: multiply(other, self),
    "__rsub__": lambda self, other: subtract(other, self), "__rtruediv__": lambda self, other: divide(other, self),
    "__rmatmul__": lambda self, other: matmul(other, self), "__pow__": pow, "__rpow__": lambda self, other: pow(other, self),
    "__neg__": negative,
})
for _sym, _fname, _text in [("add", "add", "+="), ("sub", "subtract", "-="), ("mul", "multiply", "*="),
                            ("truediv", "divide", "/="), ("floordiv", "floor_divide", "//="), ("mod", "remainder", "%="),
                            ("pow", "pow", "**="), ("matmul", "matmul", "@="), ("and", "bitwise_and", "&="),
                            ("or", "bitwise_or", "|="), ("xor", "bitwise_xor", "^="),
                            ("lshift", "bitwise_left_shift", "<<="), ("rshift", "bitwise_right_shift", ">>=")]:
    _OPERATORS[f"__i{_sym}__"] = _inplace(_binary(_fname), _text)
for _name, _fn in _OPERATORS.items():
    setattr(Variable, _name, _fn)

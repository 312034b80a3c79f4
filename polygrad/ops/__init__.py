"""The differentiable ops: the op table (one module per Array API chapter) and
the Variable operators built on it.

Each chapter module declares its rows (``Op`` + ``defvjp``) and its public
functions, listed in its ``__all__``; everything listed is exported here and
joins the namespace that ``create_graph`` rules run against.
"""

from __future__ import annotations

from polygrad.core.variable import Variable
from polygrad.ops import creation, elementwise, fft, indexing, linalg, manipulation, searching, sets, sorting, statistical, utility
from polygrad.core.op import GRAPH_OPS, REGISTRY, Op, def_linear, def_nograd, defvjp
from polygrad.core.primitive import Primitive, apply

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
    self._assign_inplace(manipulation.setitem(self, key, value), "x[key] = value")


def _reshape_method(self, *shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return manipulation.reshape(self, shape)


def _transpose_method(self, *axes):
    if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
        axes = tuple(axes[0])
    return manipulation.transpose(self, axes or None)


def _reflected(fn):
    def method(self, other):
        return fn(other, self)

    method.__name__ = f"__r{fn.__name__}__"
    return method


E = elementwise
# operator suffix -> (op function, in-place spelling)
_ARITHMETIC = {
    "add": (E.add, "+="), "sub": (E.subtract, "-="), "mul": (E.multiply, "*="), "truediv": (E.divide, "/="),
    "floordiv": (E.floor_divide, "//="), "mod": (E.remainder, "%="), "pow": (E.pow, "**="),
    "matmul": (linalg.matmul, "@="), "and": (E.bitwise_and, "&="), "or": (E.bitwise_or, "|="),
    "xor": (E.bitwise_xor, "^="), "lshift": (E.bitwise_left_shift, "<<="), "rshift": (E.bitwise_right_shift, ">>="),
}
_OPERATORS = {
    "__eq__": E.equal, "__ne__": E.not_equal, "__lt__": E.less, "__le__": E.less_equal,
    "__gt__": E.greater, "__ge__": E.greater_equal,
    "__neg__": E.negative, "__pos__": E.positive, "__abs__": E.abs, "__invert__": E.bitwise_invert,
    "__getitem__": manipulation.getitem,
    "__setitem__": _setitem,
    "reshape": _reshape_method,
    "transpose": _transpose_method,
    "T": property(manipulation.transpose),
    "mT": property(manipulation.matrix_transpose),
}
for _sym, (_fn, _text) in _ARITHMETIC.items():
    _OPERATORS[f"__{_sym}__"] = _fn
    _OPERATORS[f"__r{_sym}__"] = _reflected(_fn)
    _OPERATORS[f"__i{_sym}__"] = _inplace(_fn, _text)
for _name, _fn in _OPERATORS.items():
    setattr(Variable, _name, _fn)

"""The differentiable ops: the op table (one module per Array API chapter) and
the Variable operators built on it.

Each chapter module declares its rows (``Op`` + ``defvjp``), each followed by
its public function (see :mod:`polygrad.ops._export`); the chapters' top-level
functions are exported here. The extensions live in :mod:`polygrad.ops.linalg`
(``EXTENSION``) and :mod:`polygrad.ops.fft`; neural-network rows in
:mod:`polygrad.ops.nn` and random draws in :mod:`polygrad.ops.random` (both
re-exported by ``polygrad.functions``).
"""

from __future__ import annotations

from polygrad.core.op import GRAPH_OPS, REGISTRY, Op, def_linear, def_nograd, defvjp
from polygrad.core.primitive import Primitive, apply
from polygrad.core.variable import Variable
from polygrad.ops import creation, elementwise, fft, indexing, linalg, manipulation, nn, searching, sets, sorting
from polygrad.ops import statistical, utility
from polygrad.ops import random  # last: the draws' distributions are written with the ops above
from polygrad.ops.creation import *  # noqa: F403
from polygrad.ops.elementwise import *  # noqa: F403
from polygrad.ops.indexing import *  # noqa: F403
from polygrad.ops.linalg import *  # noqa: F403
from polygrad.ops.manipulation import *  # noqa: F403
from polygrad.ops.searching import *  # noqa: F403
from polygrad.ops.sets import *  # noqa: F403
from polygrad.ops.sorting import *  # noqa: F403
from polygrad.ops.statistical import *  # noqa: F403
from polygrad.ops.utility import *  # noqa: F403

#: The chapters whose functions are exported here (fft and nn keep their own namespaces).
CHAPTERS = (elementwise, creation, manipulation, searching, sets, sorting, statistical, utility, indexing, linalg)

__all__ = ["Op", "Primitive", "apply", "defvjp", "def_linear", "def_nograd", "REGISTRY", "GRAPH_OPS", "CHAPTERS"]
for _chapter in CHAPTERS:
    __all__ += _chapter.__all__


# ---------------------------------------------------------------------------
# Variable operators
# ---------------------------------------------------------------------------
def _inplace(op_fn, symbol):
    def method(self, other):
        self._check_inplace(symbol)
        return self._assign_inplace(op_fn(self, other), symbol, (other,))

    method.__name__ = f"__i{op_fn.__name__}__"
    return method


def _setitem(self, key, value):
    self._check_inplace("x[key] = value")
    keys = key if isinstance(key, tuple) else (key,)
    self._assign_inplace(manipulation.setitem(self, key, value), "x[key] = value", (value, *keys))


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
    "T": property(manipulation.transpose),
    "mT": property(manipulation.matrix_transpose),
}
for _sym, (_fn, _text) in _ARITHMETIC.items():
    _OPERATORS[f"__{_sym}__"] = _fn
    _OPERATORS[f"__r{_sym}__"] = _reflected(_fn)
    _OPERATORS[f"__i{_sym}__"] = _inplace(_fn, _text)
for _name, _fn in _OPERATORS.items():
    setattr(Variable, _name, _fn)

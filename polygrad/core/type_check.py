"""Type checks for ``Function.check_type_forward``, with messages that show
what was expected and what was found.

>>> from polygrad import type_check
>>> def check_type_forward(self, in_types):
...     type_check.expect(in_types.size() == 1)
...     x_type, = in_types
...     type_check.expect(x_type.ndim == 2, x_type.shape[1] == 3)

A failure raises :class:`InvalidType`::

    Invalid operation is performed in: MyFunction (Forward)
    Expect: in_types[0].ndim == 2
    Actual: 3 != 2

The API is Chainer's ``chainer.utils.type_check`` (without its light mode):
``expect``, ``eval``, ``prod``, ``argname``, ``same_types``, ``make_variable``,
``expect_broadcast_shapes``, ``get_function_check_context``.
"""

from __future__ import annotations

import contextlib
import contextvars
import operator
from typing import Any, Callable, Iterator

__all__ = [  # (eval too, left out of here so that `import *` keeps Python's eval)
    "InvalidType", "Expr", "Condition", "TypeInfo", "TypeInfoTuple", "expect", "prod", "argname", "same_types",
    "make_variable", "expect_broadcast_shapes", "get_function_check_context",
]

_FLIP = {"==": "!=", "!=": "==", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}


# the label of the Function whose check runs in this thread (or task); "" outside any check
_function: contextvars.ContextVar[str] = contextvars.ContextVar("polygrad.type_check.function", default="")


@contextlib.contextmanager
def get_function_check_context(function: Any) -> Iterator[None]:
    """Name ``function`` (a Function, or a label) in the :class:`InvalidType` messages raised
    in the block, in this thread only (Chainer's name)."""
    token = _function.set(str(getattr(function, "label", function) or ""))
    try:
        yield
    finally:
        _function.reset(token)


class InvalidType(TypeError):
    """Raised when an input type check fails; ``expect`` and ``actual`` hold the texts, ``function``
    the label of the Function checked (by default the one whose check is running)."""

    def __init__(self, expect: str, actual: str, function: str | None = None) -> None:
        function = _function.get() if function is None else function
        self.expect, self.actual, self.function = expect, actual, function
        where = f"Invalid operation is performed in: {function} (Forward)\n" if function else ""
        super().__init__(f"{where}Expect: {expect}\nActual: {actual}")

    def __reduce__(self) -> tuple:
        return type(self), (self.expect, self.actual, self.function)


# how tightly an expression binds, as in Python's grammar: a text gets parentheses where it needs them
_COMPARISON, _OR, _XOR, _AND, _SHIFT, _SUM, _PRODUCT, _UNARY, _POWER, _ATOM = range(10)


class Expr:
    """An expression with its text, evaluated only when checked (so
    ``x.shape[1] == 3`` after a failing ``x.ndim == 2`` is never evaluated).
    ``eval()`` gives its value; any other attribute, an index or a call makes
    a new expression."""

    __slots__ = ("_fn", "_render", "_priority")

    def __init__(self, fn: Callable[[], Any], render: Callable[[], str], priority: int = _ATOM) -> None:
        self._fn, self._render, self._priority = fn, render, priority

    def eval(self) -> Any:
        """The value (Chainer's ``Expr.eval``)."""
        return self._fn()

    def __repr__(self) -> str:
        return self._render()

    def __getattr__(self, name: str) -> "Expr":
        if name.startswith("_"):  # (never an expression: the slots above, copy's and pickle's probes)
            raise AttributeError(name)
        return Expr(lambda: getattr(self.eval(), name), lambda: f"{_t(self, _ATOM)}.{name}")

    def __getitem__(self, key: Any) -> "Expr":
        return Expr(lambda: self.eval()[_v(key)], lambda: f"{_t(self, _ATOM)}[{_subscript(key)}]")

    def __len__(self) -> int:
        return len(self.eval())

    def __iter__(self) -> Iterator["Expr"]:
        """``shape[0]``, ``shape[1]``, ... for as many items as the value has (``n, c = x.shape``)."""
        value = self.eval()
        try:
            n = len(value)
        except InvalidType:  # (an unknown shape says so)
            raise
        except TypeError:
            raise TypeError(f"polygrad.type_check: {self!r} ({type(value).__name__}) cannot be iterated") from None
        return iter([self[i] for i in range(n)])

    def __bool__(self) -> bool:
        return bool(self.eval())

    def _bin(self, other: Any, sym: str, fn: Any, priority: int, reflected: bool = False) -> "Expr":
        a, b = (other, self) if reflected else (self, other)
        right = sym == "**"  # (the one right-associative operator)
        return Expr(lambda: fn(_v(a), _v(b)),
                    lambda: f"{_t(a, priority + right)} {sym} {_t(b, priority + (not right))}", priority)

    def _unary(self, sym: str, fn: Any) -> "Expr":
        return Expr(lambda: fn(self.eval()), lambda: f"{sym}{_t(self, _UNARY)}", _UNARY)

    def _cmp(self, other: Any, sym: str, fn: Any) -> "Condition":
        return _comparison(self, other, sym, fn)

    def __call__(self, *args: Any) -> "Expr":
        return Expr(lambda: self.eval()(*map(_v, args)), lambda: f"{_t(self, _ATOM)}({', '.join(map(_t, args))})")

    __add__ = lambda s, o: s._bin(o, "+", operator.add, _SUM)
    __radd__ = lambda s, o: s._bin(o, "+", operator.add, _SUM, True)
    __sub__ = lambda s, o: s._bin(o, "-", operator.sub, _SUM)
    __rsub__ = lambda s, o: s._bin(o, "-", operator.sub, _SUM, True)
    __mul__ = lambda s, o: s._bin(o, "*", operator.mul, _PRODUCT)
    __rmul__ = lambda s, o: s._bin(o, "*", operator.mul, _PRODUCT, True)
    __truediv__ = lambda s, o: s._bin(o, "/", operator.truediv, _PRODUCT)
    __rtruediv__ = lambda s, o: s._bin(o, "/", operator.truediv, _PRODUCT, True)
    __floordiv__ = lambda s, o: s._bin(o, "//", operator.floordiv, _PRODUCT)
    __rfloordiv__ = lambda s, o: s._bin(o, "//", operator.floordiv, _PRODUCT, True)
    __mod__ = lambda s, o: s._bin(o, "%", operator.mod, _PRODUCT)
    __rmod__ = lambda s, o: s._bin(o, "%", operator.mod, _PRODUCT, True)
    __pow__ = lambda s, o: s._bin(o, "**", operator.pow, _POWER)
    __rpow__ = lambda s, o: s._bin(o, "**", operator.pow, _POWER, True)
    __lshift__ = lambda s, o: s._bin(o, "<<", operator.lshift, _SHIFT)
    __rlshift__ = lambda s, o: s._bin(o, "<<", operator.lshift, _SHIFT, True)
    __rshift__ = lambda s, o: s._bin(o, ">>", operator.rshift, _SHIFT)
    __rrshift__ = lambda s, o: s._bin(o, ">>", operator.rshift, _SHIFT, True)
    __and__ = lambda s, o: s._bin(o, "&", operator.and_, _AND)
    __rand__ = lambda s, o: s._bin(o, "&", operator.and_, _AND, True)
    __xor__ = lambda s, o: s._bin(o, "^", operator.xor, _XOR)
    __rxor__ = lambda s, o: s._bin(o, "^", operator.xor, _XOR, True)
    __or__ = lambda s, o: s._bin(o, "|", operator.or_, _OR)
    __ror__ = lambda s, o: s._bin(o, "|", operator.or_, _OR, True)
    __neg__ = lambda s: s._unary("-", operator.neg)
    __pos__ = lambda s: s._unary("+", operator.pos)
    __invert__ = lambda s: s._unary("~", operator.invert)
    __eq__ = lambda s, o: s._cmp(o, "==", operator.eq)  # type: ignore[assignment]
    __ne__ = lambda s, o: s._cmp(o, "!=", operator.ne)  # type: ignore[assignment]
    __lt__ = lambda s, o: s._cmp(o, "<", operator.lt)
    __le__ = lambda s, o: s._cmp(o, "<=", operator.le)
    __gt__ = lambda s, o: s._cmp(o, ">", operator.gt)
    __ge__ = lambda s, o: s._cmp(o, ">=", operator.ge)
    __hash__ = None  # type: ignore[assignment]
    __array_ufunc__ = None  # (an array library's scalar on the left leaves the operator to Expr)


def _v(x: Any) -> Any:
    """The value of ``x``: expressions evaluated, also inside tuples and lists."""
    if isinstance(x, (Expr, Condition)):
        return x.eval()
    if isinstance(x, (tuple, list)):
        return type(x)(map(_v, x)) if type(x) in (tuple, list) else x
    return x


def _t(x: Any, priority: int = _COMPARISON) -> str:
    """The text of ``x``, in parentheses where it binds less tightly than ``priority``."""
    if isinstance(x, Expr):
        return f"({x!r})" if x._priority < priority else repr(x)
    if type(x) is tuple:
        return f"({_t(x[0])},)" if len(x) == 1 else f"({', '.join(map(_t, x))})"
    if type(x) is list:
        return f"[{', '.join(map(_t, x))}]"
    return repr(x)


def _subscript(key: Any) -> str:
    if isinstance(key, slice):
        parts = ["" if p is None else _t(p) for p in (key.start, key.stop, key.step)]
        return ":".join(parts if key.step is not None else parts[:2])
    if key is Ellipsis:
        return "..."
    if type(key) is tuple:
        return ", ".join(map(_subscript, key))
    return _t(key)


class Condition:
    """The result of comparing expressions: ``expect`` checks it, ``bool()`` evaluates it,
    ``&``, ``|`` and ``~`` combine conditions."""

    __slots__ = ("_test", "_render", "_explain")

    def __init__(self, test: Callable[[], bool], render: Callable[[], str], explain: Callable[[bool], str]) -> None:
        # explain(held): what is the case, given whether the condition held
        self._test, self._render, self._explain = test, render, explain

    def eval(self) -> bool:
        """Whether the condition holds."""
        return self._test()

    def __repr__(self) -> str:
        return self._render()

    def __bool__(self) -> bool:
        return self._test()

    def __and__(self, other: Any) -> "Condition":
        a, b = self, _as_condition(other)
        if b is None:
            return NotImplemented
        return Condition(lambda: a._test() and b._test(), lambda: f"({a!r}) & ({b!r})",
                         lambda held: f"{a._explain(True)} and {b._explain(True)}" if held
                         else b._explain(False) if a._test() else a._explain(False))

    def __or__(self, other: Any) -> "Condition":
        a, b = self, _as_condition(other)
        if b is None:
            return NotImplemented
        return Condition(lambda: a._test() or b._test(), lambda: f"({a!r}) | ({b!r})",
                         lambda held: (a._explain(True) if a._test() else b._explain(True)) if held
                         else f"{a._explain(False)} and {b._explain(False)}")

    def __invert__(self) -> "Condition":
        a = self
        return Condition(lambda: not a._test(), lambda: f"~({a!r})", lambda held: a._explain(not held))

    def __rand__(self, other: Any) -> "Condition":
        a = _as_condition(other)
        return NotImplemented if a is None else a & self

    def __ror__(self, other: Any) -> "Condition":
        a = _as_condition(other)
        return NotImplemented if a is None else a | self


def _comparison(lhs: Any, rhs: Any, sym: str, fn: Any) -> Condition:
    def explain(held: bool) -> str:
        return f"{_v(lhs)!r} {sym if held else _FLIP[sym]} {_v(rhs)!r}"

    return Condition(lambda: bool(fn(_v(lhs), _v(rhs))), lambda: f"{_t(lhs)} {sym} {_t(rhs)}", explain)


def _is_bool(c: Any) -> bool:
    """A Python bool or a bool scalar of an array library (numpy's ``bool`` / ``bool_``)."""
    return isinstance(c, bool) or type(c).__name__ in ("bool", "bool_")


def _as_condition(c: Any) -> Condition | None:
    if isinstance(c, Condition):
        return c
    if _is_bool(c):
        return Condition(lambda: bool(c), lambda: repr(c), lambda held: repr(c))
    return None


class _Unknown:
    """A size that an input does not know until it is computed (dask's NaN after boolean
    indexing, the standard's None): comparing it, computing with it or converting it raises
    :class:`InvalidType` that names it, where NaN would compare unequal to everything."""

    __slots__ = ("_what",)

    def __init__(self, what: Callable[[], str]) -> None:
        self._what = what

    def __repr__(self) -> str:
        return "unknown"

    def _refuse(self, *args: Any) -> Any:
        what = self._what()
        raise InvalidType(f"{what} to be known", f"{what} is unknown (the array does not know it until it is computed)")


for _op in ("eq ne lt le gt ge add radd sub rsub mul rmul truediv rtruediv floordiv rfloordiv mod rmod pow rpow "
            "lshift rlshift rshift rrshift and rand xor rxor or ror neg pos invert abs bool index int float "
            "len iter getitem").split():
    setattr(_Unknown, f"__{_op}__", _Unknown._refuse)


def _is_unknown(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value)


class TypeInfo:
    """Shape, ndim, size and dtype of one input, as expressions named ``in_types[i]``
    (or by :func:`argname`)."""

    def __init__(self, array: Any, index: int) -> None:
        self._name = f"in_types[{index}]"
        self._type = type(array)
        shape = array.shape
        if shape is not None:  # (None: even the number of dimensions is unknown)
            shape = tuple(self._known(d, f"shape[{i}]") for i, d in enumerate(shape))
        self.shape = self._expr(self._known(shape, "shape"), "shape")
        self.ndim = self._expr(self._known(array.ndim, "ndim"), "ndim")
        self.size = self._expr(self._known(array.size, "size"), "size")
        self.dtype = self._expr(self._known(array.dtype, "dtype"), "dtype")

    def _known(self, value: Any, attr: str) -> Any:
        return _Unknown(lambda: f"{self._name}.{attr}") if _is_unknown(value) else value

    def _expr(self, value: Any, attr: str) -> Expr:
        return Expr(lambda: value, lambda: f"{self._name}.{attr}")


class TypeInfoTuple(tuple):
    """The inputs' TypeInfo objects; ``size()`` is the number of inputs."""

    function = ""

    @classmethod
    def from_arrays(cls, arrays: tuple, function: str = "") -> "TypeInfoTuple":
        t = cls(TypeInfo(a, i) for i, a in enumerate(arrays))
        t.function = function
        return t

    def size(self) -> Expr:
        n = len(self)
        return Expr(lambda: n, lambda: "in_types.size()")


def expect(*conditions: Any) -> None:
    """Raise :class:`InvalidType` for the first condition that does not hold. A condition is a
    comparison of expressions (``x.ndim == 2``), conditions joined by ``&``, ``|``, ``~``, or a bool."""
    for i, c in enumerate(conditions):
        if _is_bool(c):
            if not c:
                raise InvalidType(f"argument {i + 1} of expect() is True", "False")
            continue
        if not isinstance(c, Condition):
            what = f"the expression {c!r}" if isinstance(c, Expr) else f"{type(c).__name__} {c!r}"
            raise TypeError(f"polygrad.type_check.expect takes conditions such as x.ndim == 2 (or bools); got {what}")
        try:
            ok = c.eval()
        except InvalidType as exc:  # an unknown size
            raise InvalidType(repr(c), exc.actual) from exc
        except (ArithmeticError, LookupError, TypeError, ValueError, AttributeError) as exc:
            raise InvalidType(repr(c), f"cannot evaluate it: {type(exc).__name__}: {exc}") from exc
        if not ok:
            raise InvalidType(repr(c), c._explain(False))


def eval(x: Any) -> Any:  # noqa: A001 (Chainer's name)
    """The value of an expression or condition (anything else as it is), for Python's ``if``."""
    return _v(x)


def make_variable(value: Any, name: str) -> Expr:
    """An expression of ``value`` that shows as ``name`` in messages."""
    return Expr(lambda: value, lambda: name)


def _product(xs: Any) -> Any:
    n = 1
    for x in xs:
        n *= x
    return n


def prod(xs: Any) -> Expr:
    """The product of a shape (or any sequence), as an expression: ``prod(x.shape) == x.size``."""
    return Expr(lambda: _product(_v(xs)), lambda: f"prod({_t(xs)})")


def argname(in_types: Any, names: Any) -> None:
    """Name the inputs in messages (``x.shape[1]`` for ``in_types[0].shape[1]``); raise
    :class:`InvalidType` unless there is one name per input."""
    if len(in_types) != len(names):
        raise InvalidType(f"{len(names)} argument(s)", f"{len(in_types)} argument(s)")
    for info, name in zip(in_types, names):
        if isinstance(info, TypeInfo):
            info._name = name


_argname = argname  # (the name Chainer 7's own functions call)


def same_types(*arrays: Any) -> bool:
    """Whether the arrays (or Variables, or TypeInfos) all belong to one backend: Chainer's
    "all numpy or all cupy". False where one is not an array."""
    from polygrad.core import dispatch
    from polygrad.core.variable import Variable

    names = set()
    for a in arrays:
        t = a._type if isinstance(a, TypeInfo) else type(a._data if isinstance(a, Variable) else a)
        try:
            backend = dispatch.backend_of_type(t)
        except TypeError:
            return False
        names.add(getattr(backend, "name", backend))
    return len(names) <= 1


def expect_broadcast_shapes(*shapes: Any) -> None:
    """Raise :class:`InvalidType` unless the shapes (expressions such as ``x.shape``, or tuples)
    broadcast together."""
    values = [tuple(_v(s)) for s in shapes]
    for axis in range(1, max(map(len, values), default=0) + 1):
        n = 1
        for v in values:
            d = v[-axis] if axis <= len(v) else 1
            if d != 1 and n != 1 and d != n:
                listed = ", ".join(f"{_t(s)} = {v!r}" for s, v in zip(shapes, values))
                raise InvalidType(", ".join(map(_t, shapes)) + " broadcast together",
                                  f"cannot broadcast inputs of the following shapes: {listed}")
            n = d if d != 1 else n

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
"""

from __future__ import annotations

import contextlib
import contextvars
import operator
from typing import Any, Callable, Iterator

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

    def _cmp(self, other: Any, sym: str, fn: Any) -> "Condition":
        return Condition(self, other, sym, lambda: bool(fn(self.eval(), _v(other))))

    __add__ = lambda s, o: s._bin(o, "+", operator.add, _SUM)
    __radd__ = lambda s, o: s._bin(o, "+", operator.add, _SUM, True)
    __sub__ = lambda s, o: s._bin(o, "-", operator.sub, _SUM)
    __rsub__ = lambda s, o: s._bin(o, "-", operator.sub, _SUM, True)
    __mul__ = lambda s, o: s._bin(o, "*", operator.mul, _PRODUCT)
    __rmul__ = lambda s, o: s._bin(o, "*", operator.mul, _PRODUCT, True)
    __floordiv__ = lambda s, o: s._bin(o, "//", operator.floordiv, _PRODUCT)
    __mod__ = lambda s, o: s._bin(o, "%", operator.mod, _PRODUCT)
    __eq__ = lambda s, o: s._cmp(o, "==", operator.eq)  # type: ignore[assignment]
    __ne__ = lambda s, o: s._cmp(o, "!=", operator.ne)  # type: ignore[assignment]
    __lt__ = lambda s, o: s._cmp(o, "<", operator.lt)
    __le__ = lambda s, o: s._cmp(o, "<=", operator.le)
    __gt__ = lambda s, o: s._cmp(o, ">", operator.gt)
    __ge__ = lambda s, o: s._cmp(o, ">=", operator.ge)
    __hash__ = None  # type: ignore[assignment]


def _v(x: Any) -> Any:
    """The value of ``x``: expressions evaluated, also inside tuples and lists."""
    if isinstance(x, Expr):
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
    """The result of comparing expressions; ``expect`` checks it, ``bool()`` evaluates it."""

    __slots__ = ("_test", "_render", "_explain")

    def __init__(self, lhs: Any, rhs: Any, sym: str, check: Callable[[], bool]) -> None:
        self._test = check
        self._render = lambda: f"{_t(lhs)} {sym} {_t(rhs)}"
        # what holds instead, once the test has failed
        self._explain = lambda: f"{_v(lhs)!r} {_FLIP[sym]} {_v(rhs)!r}"

    def eval(self) -> bool:
        """Whether the condition holds."""
        return self._test()

    def __repr__(self) -> str:
        return self._render()

    def __bool__(self) -> bool:
        return self._test()


class TypeInfo:
    """Shape, ndim, size and dtype of one input, as expressions."""

    def __init__(self, array: Any, index: int) -> None:
        name = f"in_types[{index}]"
        shape, ndim, size, dtype = tuple(array.shape), array.ndim, array.size, array.dtype
        self.shape = Expr(lambda: shape, lambda: f"{name}.shape")
        self.ndim = Expr(lambda: ndim, lambda: f"{name}.ndim")
        self.size = Expr(lambda: size, lambda: f"{name}.size")
        self.dtype = Expr(lambda: dtype, lambda: f"{name}.dtype")


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
    """Raise :class:`InvalidType` for the first condition that does not hold."""
    for c in conditions:
        if isinstance(c, Condition):
            try:
                ok = c.eval()
            except (ArithmeticError, LookupError, TypeError, ValueError, AttributeError) as exc:
                actual = f"cannot evaluate it: {type(exc).__name__}: {exc}"
                raise InvalidType(repr(c), actual) from exc
            if not ok:
                raise InvalidType(repr(c), c._explain())
        elif not c:
            raise InvalidType(repr(c), "False")

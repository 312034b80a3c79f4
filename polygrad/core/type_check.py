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

import operator
from typing import Any

_FLIP = {"==": "!=", "!=": "==", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}


class InvalidType(TypeError):
    """Raised when an input type check fails; ``expect`` and ``actual`` hold the texts."""

    def __init__(self, expect: str, actual: str, function: str = "") -> None:
        self.expect, self.actual, self.function = expect, actual, function
        where = f"Invalid operation is performed in: {function} (Forward)\n" if function else ""
        super().__init__(f"{where}Expect: {expect}\nActual: {actual}")


class Expr:
    """An expression with its text, evaluated only when checked (so
    ``x.shape[1] == 3`` after a failing ``x.ndim == 2`` is never evaluated)."""

    __slots__ = ("_fn", "text")

    def __init__(self, value: Any, text: str, lazy: bool = False) -> None:
        self._fn = value if lazy else (lambda: value)
        self.text = text

    @property
    def value(self) -> Any:
        return self._fn()

    def __repr__(self) -> str:
        return self.text

    def __getattr__(self, name: str) -> "Expr":
        if name.startswith("__"):
            raise AttributeError(name)
        return Expr(lambda: getattr(self.value, name), f"{self.text}.{name}", lazy=True)

    def __getitem__(self, key: Any) -> "Expr":
        return Expr(lambda: self.value[_v(key)], f"{self.text}[{_t(key)}]", lazy=True)

    def __len__(self) -> int:
        return len(self.value)

    def _bin(self, other: Any, sym: str, fn: Any, reflected: bool = False) -> "Expr":
        a, b = (other, self) if reflected else (self, other)
        return Expr(lambda: fn(_v(a), _v(b)), f"{_t(a)} {sym} {_t(b)}", lazy=True)

    def _cmp(self, other: Any, sym: str, fn: Any) -> "Condition":
        return Condition(self, other, sym, lambda: bool(fn(self.value, _v(other))))

    __add__ = lambda s, o: s._bin(o, "+", operator.add)
    __radd__ = lambda s, o: s._bin(o, "+", operator.add, True)
    __sub__ = lambda s, o: s._bin(o, "-", operator.sub)
    __rsub__ = lambda s, o: s._bin(o, "-", operator.sub, True)
    __mul__ = lambda s, o: s._bin(o, "*", operator.mul)
    __rmul__ = lambda s, o: s._bin(o, "*", operator.mul, True)
    __floordiv__ = lambda s, o: s._bin(o, "//", operator.floordiv)
    __mod__ = lambda s, o: s._bin(o, "%", operator.mod)
    __eq__ = lambda s, o: s._cmp(o, "==", operator.eq)  # type: ignore[assignment]
    __ne__ = lambda s, o: s._cmp(o, "!=", operator.ne)  # type: ignore[assignment]
    __lt__ = lambda s, o: s._cmp(o, "<", operator.lt)
    __le__ = lambda s, o: s._cmp(o, "<=", operator.le)
    __gt__ = lambda s, o: s._cmp(o, ">", operator.gt)
    __ge__ = lambda s, o: s._cmp(o, ">=", operator.ge)
    __hash__ = None  # type: ignore[assignment]


def _v(x: Any) -> Any:
    return x.value if isinstance(x, Expr) else x


def _t(x: Any) -> str:
    return x.text if isinstance(x, Expr) else repr(x)


class Condition:
    """The result of comparing expressions; ``expect`` checks it."""

    def __init__(self, lhs: Any, rhs: Any, sym: str, check: Any) -> None:
        self.lhs, self.rhs, self.sym, self._check = lhs, rhs, sym, check

    @property
    def ok(self) -> bool:
        return self._check()

    @property
    def expect_text(self) -> str:
        return f"{_t(self.lhs)} {self.sym} {_t(self.rhs)}"

    @property
    def actual_text(self) -> str:
        return f"{_v(self.lhs)!r} {_FLIP[self.sym]} {_v(self.rhs)!r}"

    def __bool__(self) -> bool:
        return self.ok


class TypeInfo:
    """Shape, ndim, size and dtype of one input, as expressions."""

    def __init__(self, array: Any, index: int) -> None:
        name = f"in_types[{index}]"
        self.shape = Expr(tuple(array.shape), f"{name}.shape")
        self.ndim = Expr(array.ndim, f"{name}.ndim")
        self.size = Expr(array.size, f"{name}.size")
        self.dtype = Expr(array.dtype, f"{name}.dtype")


class TypeInfoTuple(tuple):
    """The inputs' TypeInfo objects; ``size()`` is the number of inputs."""

    function = ""

    @classmethod
    def from_arrays(cls, arrays: tuple, function: str = "") -> "TypeInfoTuple":
        t = cls(TypeInfo(a, i) for i, a in enumerate(arrays))
        t.function = function
        _current_function[0] = function
        return t

    def size(self) -> Expr:
        return Expr(len(self), "in_types.size()")


_current_function = [""]


def expect(*conditions: Any) -> None:
    """Raise :class:`InvalidType` for the first condition that does not hold."""
    for c in conditions:
        if isinstance(c, Condition):
            try:
                ok = c.ok
            except (IndexError, TypeError, AttributeError) as exc:
                raise InvalidType(c.expect_text, f"cannot evaluate: {exc}", _current_function[0]) from None
            if not ok:
                raise InvalidType(c.expect_text, c.actual_text, _current_function[0])
        elif not c:
            raise InvalidType(repr(c), "False", _current_function[0])

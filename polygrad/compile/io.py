"""Inputs, outputs and state of compiled functions: ``In``, ``Out``, containers
and shared variables (Theano's ``compile.io`` and ``shared``)."""

from __future__ import annotations

from typing import Any

from polygrad.compile.symbolic import SymbolicArray, is_symbolic
from polygrad.core.variable import Variable

__all__ = ["In", "Out", "Container", "SharedVariable", "shared"]


class Container:
    """A box holding one value between calls; functions that share it see the same value.

    ``value`` is read and written from Python; writes are converted to an array
    of the variable's dtype (a copy, unless ``borrow``).
    """

    __slots__ = ("variable", "_value", "name", "readonly")

    def __init__(self, variable: Variable, value: Any = None, name: str | None = None) -> None:
        self.variable = variable
        self.name = name
        self.readonly = False
        self._value = None
        if value is not None:
            self.set(value)

    @property
    def value(self) -> Any:
        return self._value

    @value.setter
    def value(self, value: Any) -> None:
        self.set(value)

    def set(self, value: Any, borrow: bool = False) -> None:
        self._value = to_value(self.variable, value, copy=not borrow, what=f"the value of {self.name or self.variable}")

    def __repr__(self) -> str:
        return f"<Container {self.name or ''}: {self._value!r}>"


def to_value(variable: Variable, value: Any, *, copy: bool, strict: bool = False, what: str = "input") -> Any:
    """Convert ``value`` to an array fit for symbolic ``variable`` (dtype, declared shape)."""
    from polygrad.backends import get_backend
    from polygrad.core.dispatch import backend_of_type, is_array

    sym: SymbolicArray = variable._data
    if isinstance(value, Variable):
        value = value._data
    if is_array(value):
        backend = backend_of_type(type(value))
    else:
        if strict:
            raise TypeError(f"polygrad: {what} is strict and needs an array of dtype {sym.dtype}, got {type(value).__name__}")
        backend = get_backend()
    xp = backend.xp
    dtype = getattr(xp, sym.dtype) if sym.dtype else None
    if strict and dtype is not None and value.dtype != dtype:
        raise TypeError(f"polygrad: {what} is strict and needs dtype {sym.dtype}, got dtype {value.dtype}")
    try:
        if dtype is not None and is_array(value) and value.dtype != dtype:
            value = xp.astype(value, dtype)
            copy = False
        arr = xp.asarray(value, dtype=dtype, copy=True if copy else None)
    except Exception as exc:
        raise TypeError(f"polygrad: cannot convert {type(value).__name__} to {what} of dtype {sym.dtype}: {exc}") from None
    shape = sym.shape
    if shape is not None:
        if len(arr.shape) != len(shape) or any(s is not None and s != n for s, n in zip(shape, arr.shape)):
            raise ValueError(
                f"polygrad: {what} expects shape {tuple('?' if s is None else s for s in shape)}, got {tuple(arr.shape)}"
            )
    return arr


class SharedVariable(Variable):
    """A symbolic variable with a value held in a :class:`Container`, shared by
    every compiled function that uses it. Read and write it with
    ``get_value()`` / ``set_value()`` (or ``.value``)."""

    __slots__ = ("container",)

    def get_value(self, borrow: bool = False) -> Any:
        v = self.container.value
        if borrow:
            return v
        from polygrad.core.dispatch import backend_of_type

        return backend_of_type(type(v)).xp.asarray(v, copy=True)

    def set_value(self, value: Any, borrow: bool = False) -> None:
        self.container.set(value, borrow=borrow)

    @property
    def value(self) -> Any:
        return self.container.value

    @value.setter
    def value(self, value: Any) -> None:
        self.container.set(value)


def shared(value: Any, name: str | None = None, *, strict: bool = False, borrow: bool = False) -> SharedVariable:
    """A shared variable initialized with ``value`` (an array, or anything
    ``pg.asarray`` takes; Python floats become float64 scalars)."""
    from polygrad.backends import asarray
    from polygrad.core.dispatch import is_array

    from polygrad.compile.symbolic import _dtype_name

    arr = value._data if isinstance(value, Variable) else value
    if not is_array(arr):
        arr = asarray(arr)
    sym = SymbolicArray("shared", name=name, dtype=_dtype_name(arr.dtype), shape=tuple(arr.shape))
    v = SharedVariable.__new__(SharedVariable)
    Variable.__init__(v, sym, requires_grad=False, name=name)
    v.container = Container(v, None, name=name)
    v.container.set(arr, borrow=borrow)
    sym.container = v.container
    return v


class In:
    """An input of a compiled function, with the options Theano's ``In`` has.

    :param variable: a symbolic variable; assigned a value at each call.
    :param name: the keyword to pass it by (default: the variable's name, if ``autoname``).
    :param value: a default value, or a :class:`Container`. With ``update``, the
        value persists across calls.
    :param update: a symbolic expression whose value replaces ``value`` after each call.
    :param mutable: let the function keep (and modify) the caller's array as its value.
    :param strict: the value passed must already have exactly the right dtype.
    :param autoname: take ``name`` from the variable when ``name`` is None.
    :param implicit: True: the caller may not pass a value (requires ``value``);
        None: True only when ``value`` is a Container.
    """

    def __init__(self, variable: Variable, name: str | None = None, value: Any = None, update: Variable | None = None,
                 mutable: bool = False, strict: bool = False, autoname: bool = True, implicit: bool | None = None) -> None:
        if not is_symbolic(variable):
            raise TypeError(f"polygrad.In: variable must be a symbolic variable, got {variable!r}")
        if update is not None and not is_symbolic(update):
            raise TypeError(f"polygrad.In: update must be a symbolic expression, got {update!r}")
        if mutable and value is None:
            raise ValueError("polygrad.In: mutable=True requires a value")
        self.variable = variable
        self.name = variable.name if name is None and autoname else name
        self.value = value
        self.update = update
        self.mutable = mutable
        self.strict = strict
        self.autoname = autoname
        if implicit is None:
            implicit = isinstance(value, Container)
        if implicit and value is None:
            raise ValueError("polygrad.In: implicit=True requires a value")
        self.implicit = implicit

    def __repr__(self) -> str:
        return f"In({self.variable!r}, name={self.name!r})"


class Out:
    """An output of a compiled function.

    :param borrow: if True, the returned array may be the function's internal
        storage (or alias an input): it can be overwritten by a later call. If
        False (default), the caller owns what it gets.
    """

    def __init__(self, variable: Variable, borrow: bool = False) -> None:
        if not isinstance(variable, Variable):
            raise TypeError(f"polygrad.Out: variable must be a symbolic variable, got {variable!r}")
        self.variable = variable
        self.borrow = borrow

    def __repr__(self) -> str:
        return f"Out({self.variable!r}, borrow={self.borrow})"

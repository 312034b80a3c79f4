"""Inputs, outputs and state of compiled functions: ``In``, ``Out``, containers
and shared variables (Theano's ``compile.io`` and ``shared``)."""

from __future__ import annotations

import threading
import weakref

from typing import Any

from polygrad.compile.symbolic import SymbolicArray, is_symbolic
from polygrad.core.variable import Variable

__all__ = ["In", "Out", "Container", "SharedVariable", "shared"]

#: What a refused downcast's message suggests besides converting the value, by where the value goes
#: (each caller passes its own, see :func:`_downcast_error`): a function's argument or an input's
#: container follows In's and the function's options; a shared variable's value, only its dtype.
ARGUMENT_HINT = "allow it with In(..., allow_downcast=True) or pg.function(..., allow_input_downcast=True)"
SHARED_HINT = "create the shared variable with a dtype that holds it (pg.shared takes the dtype of its first value)"
CONTAINER_HINT = "allow it with Container(..., allow_downcast=True)"


class Container:
    """A box holding one value between calls; functions that share it see the same value.

    ``value`` is read and written from Python; writes are converted to an array
    of the variable's dtype (a copy, unless ``borrow``). ``lock`` is held by a
    compiled function's call that writes the container, from reading the old
    value to storing the new one, so that calls from several threads lose no update.
    ``hint`` is what a write refused for losing precision suggests, by who made the
    container (:data:`ARGUMENT_HINT`, :data:`SHARED_HINT`; by default its own option).
    """

    __slots__ = ("_variable", "_symbol", "_facts", "_value", "name", "readonly", "allow_downcast", "lock", "strict",
                 "default_update", "hint")

    def __init__(self, variable: Variable, value: Any = None, name: str | None = None, *,
                 allow_downcast: bool | None = None, strict: bool = False, hint: str = CONTAINER_HINT) -> None:
        self.variable = variable
        self.default_update = None  # a shared variable's (see SharedVariable.default_update)
        self.name = name
        self.readonly = False
        self.allow_downcast = allow_downcast
        self.strict = strict
        self.hint = hint
        self.lock = threading.RLock()
        self._value = None
        if value is not None:
            self.set(value)

    @property
    def variable(self) -> Variable:
        """The variable whose values this holds. A shared variable, which holds this container
        (as its symbol does), is held weakly: a strong link back made each shared variable a
        reference cycle, whose value only the cyclic gc freed. Dropped while a graph still holds
        its symbol, it is made again over that symbol (a fresh one if none is left)."""
        v = self._variable
        if type(v) is weakref.ReferenceType:
            v = v()
            if v is None:
                v = self._revive()
        return v

    @variable.setter
    def variable(self, variable: Variable) -> None:
        if isinstance(variable, SharedVariable):
            sym = variable._data
            self._variable, self._symbol = weakref.ref(variable), weakref.ref(sym)
            self._facts = (sym.name, sym.dtype, sym.shape)
        else:
            self._variable = variable
            self._symbol = self._facts = None

    def _revive(self) -> "SharedVariable":
        sym = self._symbol()
        if sym is None:  # (held only by a function's In(value=container) or the user: no graph names it)
            name, dtype, shape = self._facts
            sym = SymbolicArray("shared", name=name, dtype=dtype, shape=shape, container=self)
        v = SharedVariable._make(sym, name=self.name)
        v.container = self
        self.variable = v
        return v

    @property
    def value(self) -> Any:
        return self._value

    @value.setter
    def value(self, value: Any) -> None:
        self.set(value)

    def set(self, value: Any, borrow: bool = False) -> None:
        variable = self.variable
        if isinstance(variable, SharedVariable):  # (named as other messages name it, also when unnamed)
            label = f"the shared variable {self.name or repr(variable._data)}"
        else:
            label = self.name or variable
        value = to_value(variable, value, copy=not borrow, strict=getattr(self, "strict", False),
                         allow_downcast=self.allow_downcast, what=f"the value of {label}",
                         hint=getattr(self, "hint", CONTAINER_HINT))
        with self.lock:  # not in the middle of a call that reads the old value and writes an update
            self._value = value

    def __getstate__(self) -> dict:  # (pickle and deepcopy: a lock is not copied, a new one is made; weak
        # references neither: the variable and its symbol go as themselves)
        state = {k: getattr(self, k) for k in self.__slots__ if k not in ("lock", "_variable", "_symbol")}
        state["variable"] = self.variable
        state["symbol"] = None if self._symbol is None else self._symbol()
        return state

    def __setstate__(self, state: dict) -> None:
        # (the variable and its symbol may still be empty here: they hold this container, and pickle
        # fills them in after it)
        v, sym = state.pop("variable"), state.pop("symbol")
        self._variable = weakref.ref(v) if isinstance(v, SharedVariable) else v
        self._symbol = None if sym is None else weakref.ref(sym)
        for k, value in state.items():
            setattr(self, k, value)
        self.lock = threading.RLock()

    def __repr__(self) -> str:
        return f"<Container {self.name or ''}: {self._value!r}>"


def to_value(variable: Variable, value: Any, *, copy: bool, strict: bool = False, allow_downcast: bool | None = None,
             what: str = "input", hint: str = ARGUMENT_HINT) -> Any:
    """Convert ``value`` to an array fit for symbolic ``variable`` (dtype, declared shape).

    A conversion that could lose information is refused unless ``allow_downcast``
    (Theano's rule): an array is converted only to a dtype that holds all its
    values (:func:`safe_cast`); Python data only where the converted values
    equal the given ones (NaN equal to NaN); with ``allow_downcast=None`` (the default) a
    Python float also goes into any floating input (Theano's "Python float to floatX").
    ``hint``: what a refusal suggests besides converting the value (the caller's way to allow it).
    """
    from polygrad.backends import get_backend
    from polygrad.core.dispatch import backend_of_type, is_array

    sym: SymbolicArray = variable._data
    if isinstance(value, Variable):
        value = value._data
    if is_array(value):
        backend = backend_of_type(type(value))
    else:
        if isinstance(value, (str, bytes)):
            raise TypeError(f"polygrad: {what} of dtype {sym.dtype} takes numbers or arrays, got "
                            f"{type(value).__name__} {value[:40]!r}")
        if strict:
            raise TypeError(f"polygrad: {what} is strict and needs an array of dtype {sym.dtype}, got {type(value).__name__}")
        backend = get_backend()
    try:
        xp = backend.xp
    except TypeError:  # (symbolic arrays have none)
        if isinstance(value, SymbolicArray):
            raise TypeError(f"polygrad: {what} takes an array or a number, got the symbolic expression {value!r}; "
                            f"a symbolic value is computed inside a function, not given to it") from None
        raise
    dtype = getattr(xp, sym.dtype) if sym.dtype else None
    if strict and dtype is not None and value.dtype != dtype:
        raise TypeError(f"polygrad: {what} is strict and needs dtype {sym.dtype}, got dtype {value.dtype}")
    try:
        if dtype is not None and is_array(value) and value.dtype != dtype:
            if not allow_downcast and not safe_cast(xp, value.dtype, dtype):
                raise _downcast_error(what, f"a value of dtype {value.dtype}", sym.dtype, hint)
            value = xp.astype(value, dtype)
            copy = False
        elif dtype is not None and not is_array(value) and not allow_downcast:
            _check_python_value(xp, value, dtype, allow_downcast, what, sym.dtype, hint)
        arr = xp.asarray(value, dtype=dtype, copy=True if copy else None)
    except TypeError as exc:
        if str(exc).startswith("polygrad"):
            raise
        raise TypeError(f"polygrad: cannot convert {type(value).__name__} to {what} of dtype {sym.dtype}: {exc}") from None
    except Exception as exc:
        raise TypeError(f"polygrad: cannot convert {type(value).__name__} to {what} of dtype {sym.dtype}: {exc}") from None
    shape = sym.shape
    if shape is not None:
        if not fits(shape, tuple(arr.shape)):
            raise ValueError(
                f"polygrad: {what} expects shape {tuple('?' if s is None else s for s in shape)}, got {tuple(arr.shape)}"
            )
    return arr


def fits(declared: tuple | None, shape: tuple | None) -> bool:
    """Whether ``shape`` is one a variable declared ``declared`` may take: the same number of
    dimensions, and each size the declared one where that is known (None: any; an unknown rank:
    any shape)."""
    if declared is None:
        return True
    return shape is not None and len(shape) == len(declared) and all(
        d is None or d == n for d, n in zip(declared, shape))


def safe_cast(xp: Any, from_: Any, to: Any) -> bool:
    """Whether every value of dtype ``from_`` is exactly a value of dtype ``to`` (as numpy's
    promotion, which Theano follows, says): bool into anything; within a kind, the
    standard's ``can_cast``; an integer into a float with room for it (up to 16 bits
    into float32, any into float64 or wider), never a float into an integer or a complex into a real."""
    if from_ == to:
        return True
    if xp.isdtype(from_, "bool"):
        return True
    if xp.isdtype(to, "bool"):
        return False
    if xp.isdtype(from_, "integral"):
        if xp.isdtype(to, "integral"):
            return bool(xp.can_cast(from_, to))
        return xp.iinfo(from_).bits <= xp.finfo(to).bits // 2 or xp.finfo(to).bits >= 64
    if xp.isdtype(to, "integral"):
        return False
    return bool(xp.can_cast(from_, to))


def _check_python_value(xp: Any, value: Any, dtype: Any, allow_downcast: bool | None, what: str, name: str,
                        hint: str) -> None:
    """Python data (numbers, lists) goes into an input when no value changes on the way."""
    if allow_downcast is None and type(value) is float and xp.isdtype(dtype, ("real floating", "complex floating")):
        return  # Theano's special case: a Python float literal into a floating input
    natural = xp.asarray(value)
    if natural.dtype == dtype or safe_cast(xp, natural.dtype, dtype):
        return
    try:
        converted = xp.asarray(value, dtype=dtype)
        if xp.isdtype(dtype, "complex floating") and not xp.isdtype(natural.dtype, "complex floating"):
            converted = xp.real(converted)  # (its imaginary part is 0: cast back whole, it warned of dropping it)
        back = xp.astype(converted, natural.dtype)
        same = natural.shape == back.shape and bool(xp.all(_same_values(xp, back, natural)))
    except Exception:
        same = False
    if not same:
        raise _downcast_error(what, repr(value) if len(repr(value)) <= 80 else repr(value)[:75] + "(...)", name, hint)


def _same_values(xp: Any, a: Any, b: Any) -> Any:
    """Where ``a`` and ``b`` hold the same value: equal, or NaN in both (per part, for complex
    values), as Theano's ``values_eq`` says. NaN converts exactly: ``==`` alone refused
    ``[0.5, nan]`` for a float32 input, where ``[0.5, inf]`` went in."""
    if xp.isdtype(b.dtype, "complex floating"):
        return _same_values(xp, xp.real(a), xp.real(b)) & _same_values(xp, xp.imag(a), xp.imag(b))
    if xp.isdtype(b.dtype, "real floating"):
        return (a == b) | (xp.isnan(a) & xp.isnan(b))
    return a == b


def _downcast_error(what: str, value: str, dtype: Any, hint: str) -> TypeError:
    """The refusal of a value that would lose precision; ``hint``: how the caller may allow it
    otherwise (:data:`ARGUMENT_HINT`, :data:`SHARED_HINT`, :data:`CONTAINER_HINT`)."""
    return TypeError(
        f"polygrad: {what} of dtype {dtype} cannot store {value} without losing precision; convert it to {dtype} "
        f"yourself, or {hint}"
    )


class SharedVariable(Variable):
    """A symbolic variable with a value held in a :class:`Container`, shared by
    every compiled function that uses it. Read and write it with
    ``get_value()`` / ``set_value()`` (or ``.value``).

    ``default_update`` (None, or a symbolic expression) is Theano's: a function
    that reads the variable and gives it no update of its own updates it with
    this expression, unless compiled with ``no_default_updates``.
    """

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

    @property
    def default_update(self) -> Any:
        """Kept by the container, which a graph reaches through the variable's symbol: a graph
        that outlives this variable still updates it. (An update that reads the variable is a
        reference cycle, container -> expression -> symbol -> container, as in Theano.)"""
        return self.container.default_update

    @default_update.setter
    def default_update(self, expression: Any) -> None:
        self.container.default_update = expression


def shared(value: Any, name: str | None = None, *, strict: bool = False, borrow: bool = False,
           shape: tuple | None = None) -> SharedVariable:
    """A shared variable initialized with ``value`` (an array, or anything
    ``pg.asarray`` takes; a Python float becomes a scalar of the current backend's default
    floating dtype, float64 on numpy).

    :param strict: a new value (``set_value``) must be an array of exactly this dtype
        (Theano's ``strict``); otherwise it is converted where no value changes.
    :param shape: the shape later values may have: ``value``'s shape, with None where a
        dimension may change (``shape=(None, 784)`` for a dataset swapped chunk by chunk).
        By default ``value``'s shape, fixed: functions built on the variable may have read
        it (unlike Theano, where only the number of dimensions is fixed).
    """
    from polygrad.backends import asarray
    from polygrad.core.dispatch import is_array

    from polygrad.compile.symbolic import _dtype_name

    arr = value._data if isinstance(value, Variable) else value
    if isinstance(arr, SymbolicArray):
        raise TypeError(f"polygrad.shared: value must be an array or a number, got the symbolic expression {arr!r}; a "
                        f"shared variable holds a value (state computed by a function is an update of one)")
    if not is_array(arr):
        arr = asarray(arr)
    if shape is None:
        shape = tuple(arr.shape)
    else:
        shape = tuple(shape)
        if not fits(shape, tuple(arr.shape)):
            raise ValueError(f"polygrad.shared: shape {shape} does not fit the value of shape {tuple(arr.shape)} "
                             f"(None for a dimension that may change)")
    sym = SymbolicArray("shared", name=name, dtype=_dtype_name(arr.dtype), shape=shape)
    v = SharedVariable._make(sym, name=name)  # (a fresh symbol: Variable.__init__ would make a new leaf of it)
    sym.container = v.container = Container(v, None, name=name, strict=strict, hint=SHARED_HINT)
    v.container.set(arr, borrow=borrow)
    return v


class In:
    """An input of a compiled function, with the options Theano's ``In`` has.

    :param variable: a symbolic variable; assigned a value at each call, not
        computed from its owner (an intermediate expression may be an input).
    :param name: the keyword to pass it by (default: the variable's name, if ``autoname``).
    :param value: a default value, or a :class:`Container`. With ``update``, the
        value persists across calls.
    :param update: a symbolic expression whose value replaces ``value`` after each call
        (requires ``value``, the initial state).
    :param mutable: let the function keep the caller's array as its value (no defensive
        copies); requires ``value`` (for an argument passed at each call, use ``borrow=True``).
    :param strict: the value passed must already have exactly the right dtype.
    :param autoname: take ``name`` from the variable when ``name`` is None.
    :param implicit: True: the caller may not pass a value (requires ``value``);
        None: True only when ``value`` is a Container.
    :param allow_downcast: True: a value is converted to the input's dtype even
        where that loses precision; False: never; None: as the function's
        ``allow_input_downcast`` says (and Python floats into floating inputs).
    :param borrow: an output may be this input's argument itself (or a view of
        it), not a copy (default: ``mutable``).
    """

    def __init__(self, variable: Variable, name: str | None = None, value: Any = None, update: Variable | None = None,
                 mutable: bool = False, strict: bool = False, autoname: bool = True, implicit: bool | None = None, *,
                 allow_downcast: bool | None = None, borrow: bool | None = None) -> None:
        if not is_symbolic(variable):
            raise TypeError(f"polygrad.In: variable must be a symbolic variable, got {variable!r}")
        if update is not None and not is_symbolic(update):
            raise TypeError(f"polygrad.In: update must be a symbolic expression, got {update!r}")
        if is_symbolic(value):
            raise TypeError(f"polygrad.In: value is the default of {variable._data!r}, an array, a number or a "
                            f"Container, not the symbolic expression {value._data!r}; to compute the input from "
                            f"others, use that expression instead of the input (or givens)")
        if mutable and value is None:
            raise ValueError("polygrad.In: mutable=True requires a value")
        if borrow is None:
            borrow = mutable
        elif mutable and not borrow:
            raise ValueError("polygrad.In: an input cannot be both mutable and not borrow (as in Theano)")
        self.variable = variable
        self.name = variable.name if name is None and autoname else name
        self.value = value
        self.update = update
        self.mutable = mutable
        self.strict = strict
        self.autoname = autoname
        self.allow_downcast = allow_downcast
        self.borrow = borrow
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

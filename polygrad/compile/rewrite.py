"""Algebraic simplification of a traced program, before scheduling.

Each rule replaces one instruction by one of its arguments (an *alias*) or by a
cheaper instruction, and only where the result is the same array up to the
dtype's rounding: the shape, dtype and type of the traced result must equal
those of what replaces it, the dtype must be real (complex products with
infinities differ), and the constants involved must be *uniform* (every
element the same value: a Python number, a one-element array, or a folded
broadcast of one). The rules::

    x * 1, 1 * x, x / 1, x ** 1  ->  x
    x - 0, x + (-0.0)            ->  x
    x * -1, -1 * x, x / -1       ->  -x
    -(-x)                        ->  x

(x + 0 and 0 - x of floating x are left as they are: -0.0 + 0 is +0.0, and 0 - 0.0 is +0.0
where -(0.0) is -0.0, and the sign of a zero shows in 1 / x and atan2: compiled 1 / (0 - x)
gave -inf where eager gives +inf. Of integer x they become x and -x.) A uniform integer or
boolean zero counts as +0.0.
    exp(log(x))                  ->  x       where x is known non-negative and never -0.0 (exp, abs, square, x*x, ...)

The folded seed of ``sum``'s gradient (ones broadcast to the input's shape) is
such a uniform constant, so a gradient never multiplies by it. Random rows
(``deterministic=False``) are never rewritten.
"""

from __future__ import annotations

import math

from typing import Any

from polygrad.core.dispatch import backend_of_type
from polygrad.core.op import REGISTRY

_SCALARS = (bool, int, float)

#: Rows whose result has the value of their first argument everywhere when that argument is uniform.
_SHAPE_ONLY = frozenset({"reshape", "broadcast_to", "expand_dims", "squeeze", "permute_dims", "matrix_transpose",
                         "reverse_dims", "flip", "positive", "tile", "repeat", "getitem", "astype", "asarray",
                         "roll", "real"})
#: Rows whose real result is never negative, -0.0 or NaN aside (NaN stays NaN): exp(log(x)) may drop
#: the pair. Not sqrt: sqrt(-0.0) is -0.0, and exp(log(-0.0)) +0.0 (1 / it was -inf compiled).
_NON_NEGATIVE = frozenset({"exp", "abs", "square", "cosh", "relu", "hypot", "sigmoid", "softplus"})


class Facts:
    """What the optimizer knows about slots and constants: traced values, uniform values, signs."""

    def __init__(self, alive: list) -> None:
        self.alive = alive
        self.uniform: dict[int, Any] = {}  # id(constant array) -> its one value
        self.non_negative: set[int] = set()  # slots
        self.producer: dict[int, tuple] = {}  # slot -> (op name, args) of the instruction computing it
        self._real: dict[Any, bool] = {}

    def value(self, ref: tuple) -> Any:
        kind, v = ref
        return self.alive[v] if kind == "s" else v

    def uniform_of(self, ref: tuple) -> Any:
        """The one value of every element of a constant, else None."""
        kind, v = ref
        if kind != "c":
            return None
        if type(v) in _SCALARS:
            return v
        known = self.uniform.get(id(v))
        if known is not None:
            return known
        return _read_small(v)

    def note_folded(self, op: Any, args: tuple, params: dict | None, value: Any) -> None:
        """Record the uniform value of a folded constant computed from uniform ones."""
        name = op.name
        if name in ("ones", "ones_like"):
            u = 1
        elif name in ("zeros", "zeros_like"):
            u = 0.0 if _is_floating(value) else 0  # (so that its negative is -0.0)
        elif name in ("full", "full_like"):
            u = (params or {}).get("fill_value", args[1][1] if len(args) > 1 and args[1][0] == "c" else None)
            u = u if type(u) in _SCALARS else None
        elif name in _SHAPE_ONLY and args:
            u = self.uniform_of(args[0])
        elif name == "negative" and args:
            u = self.uniform_of(args[0])
            u = -u if u is not None else None
        else:
            u = None
        if u is not None and type(value) not in _SCALARS:
            self.uniform[id(value)] = u

    def is_real(self, value: Any) -> bool:
        """Whether ``value`` is a real (integer or real floating) array or Python number."""
        if type(value) in _SCALARS:
            return type(value) is not bool
        dtype = value.dtype
        key = (type(value), dtype)
        known = self._real.get(key)
        if known is None:
            try:
                xp = backend_of_type(type(value)).xp
                known = bool(xp.isdtype(dtype, ("real floating", "signed integer", "unsigned integer")))
            except Exception:
                known = False
            self._real[key] = known
        return known

    def is_integral(self, out: int) -> bool:
        """Whether the traced result of slot ``out`` is an integer array (no signed zeros)."""
        value = self.alive[out]
        return type(value) not in _SCALARS and self.is_real(value) and not _is_floating(value)

    def same_array(self, out: int, ref: tuple) -> bool:
        """Whether the traced result of slot ``out`` can stand for ``ref``: same type, shape and real dtype."""
        if ref[0] != "s":
            return False
        a, b = self.alive[out], self.alive[ref[1]]
        return (type(a) is type(b) and type(a) not in _SCALARS and tuple(a.shape) == tuple(b.shape)
                and a.dtype == b.dtype and self.is_real(a))


def _is_floating(value: Any) -> bool:
    try:
        return bool(backend_of_type(type(value)).xp.isdtype(value.dtype, "real floating"))
    except Exception:
        return True  # unknown: treated as floating, where fewer rules apply


def _read_small(v: Any) -> Any:
    """The value of a one-element array of an eager backend (a seed ``ones_like(loss)``), else None."""
    try:
        if getattr(v, "size", None) != 1:
            return None
        backend = backend_of_type(type(v))
        if backend.lazy or backend.device != "cpu":
            return None
        xp = backend.xp
        if not xp.isdtype(v.dtype, ("real floating", "signed integer", "unsigned integer")):
            return None
        x = float(xp.reshape(v, ()))
        return int(x) if x.is_integer() and not _negative_zero(x) else x  # (-0.0 is not 0: x - (-0.0) is not x)
    except Exception:
        return None


def _negative(facts: Facts, out: int, ref: tuple) -> tuple | None:
    """The instruction ``negative(ref)`` for slot ``out`` (None where the dtypes would differ)."""
    if not facts.same_array(out, ref):
        return None
    op = REGISTRY["negative"]
    return (op, op.kernel(backend_of_type(type(facts.alive[out]))), (ref,), None)


def simplify(op: Any, args: tuple, params: dict | None, out: int, facts: Facts) -> Any:
    """A simpler form of the instruction ``out = op(*args, **params)``: ``("alias", ref)``,
    a new ``(op, impl, args, params)``, or None where no rule applies."""
    name = op.name
    if not op.deterministic or op.multi:
        return None
    if len(args) == 2 and not params:
        a, b = args
        ua, ub = facts.uniform_of(a), facts.uniform_of(b)
        if ua is None and ub is None:
            return None
        if name == "multiply":
            for u, keep in ((ub, a), (ua, b)):
                if u == 1 and facts.same_array(out, keep):
                    return ("alias", keep)
                if u == -1:
                    new = _negative(facts, out, keep)
                    if new is not None:
                        return new
        elif name == "add":  # x + (-0.0) is x, sign of zero too; x + 0.0 is not (-0.0 + 0.0 is +0.0)
            for u, keep in ((ub, a), (ua, b)):
                if u == 0 and (_negative_zero(u) or facts.is_integral(out)) and facts.same_array(out, keep):
                    return ("alias", keep)
        elif name == "subtract":  # x - 0 is x; 0 - x is not -x (0 - 0.0 is +0.0, -(0.0) is -0.0)
            if ub == 0 and not _negative_zero(ub) and facts.same_array(out, a):
                return ("alias", a)
            if ua == 0 and facts.is_integral(out):  # integers have no -0
                return _negative(facts, out, b)
        elif name == "divide":
            if ub == 1 and facts.same_array(out, a):
                return ("alias", a)
            if ub == -1:
                return _negative(facts, out, a)
        elif name == "pow":
            if ub == 1 and facts.same_array(out, a):
                return ("alias", a)
        return None
    if len(args) == 1 and args[0][0] == "s" and not params:
        inner = facts.producer.get(args[0][1])
        if inner is None:
            return None
        inner_name, inner_args = inner
        if name == "negative" and inner_name == "negative" and facts.same_array(out, inner_args[0]):
            return ("alias", inner_args[0])
        if (name == "exp" and inner_name == "log" and inner_args[0][0] == "s"
                and inner_args[0][1] in facts.non_negative and facts.same_array(out, inner_args[0])):
            return ("alias", inner_args[0])
    return None


def _negative_zero(u: Any) -> bool:
    """Whether the uniform value ``u`` is a floating-point -0.0."""
    try:
        return u == 0 and math.copysign(1.0, u) < 0
    except TypeError:  # a complex or otherwise unsigned value
        return False


def note_kept(op: Any, args: tuple, out: int, facts: Facts) -> None:
    """Record what later rules read about the kept instruction ``out = op(*args)``."""
    facts.producer[out] = (op.name, args)
    if op.name in _NON_NEGATIVE or (op.name == "multiply" and len(args) == 2 and args[0] == args[1]
                                     and args[0][0] == "s"):
        facts.non_negative.add(out)


#: Rows whose Python-scalar operand the standard converts to the array operand's dtype.
_SCALAR_ARITHMETIC = frozenset({"add", "subtract", "multiply", "divide"})


def typed_scalars(instrs: list[tuple], alive: list) -> list[tuple]:
    """Python floats and ints beside a real floating array in ``add``, ``subtract``,
    ``multiply`` and ``divide`` become 0-d arrays of the array's dtype, made once.

    The standard converts such a scalar to the array's dtype before the operation, so
    the values are the same; what changes is that the conversion no longer runs at
    every call (NumPy spends more converting a Python float than adding ten numbers).
    Only on eager backends, where the result has the array operand's dtype and shape.
    """
    made: dict[tuple, Any] = {}
    out = []
    for ins in instrs:
        op, impl, args, params, slot = ins
        if op.name in _SCALAR_ARITHMETIC and not params and len(args) == 2 and not isinstance(slot, tuple):
            kinds = [k for k, _ in args]
            if sorted(kinds) == ["c", "s"]:
                c = 0 if kinds[0] == "c" else 1
                value, array, result = args[c][1], alive[args[1 - c][1]], alive[slot]
                if (type(value) in (int, float) and type(array) not in _SCALARS and type(result) is type(array)
                        and tuple(result.shape) == tuple(array.shape) and result.dtype == array.dtype):
                    typed = _typed(value, array, made)
                    if typed is not None:
                        args = (("c", typed), args[1]) if c == 0 else (args[0], ("c", typed))
                        ins = (op, impl, args, params, slot)
        out.append(ins)
    return out


def scalar_key(value: Any) -> tuple:
    """A Python scalar as a key that tells constants apart as the program would: ``-0.0 == 0.0``
    and they hash alike, but ``copysign``, ``1 / x`` and ``atan2`` tell them apart."""
    if isinstance(value, float):  # (numpy's float64 too)
        return (type(value).__name__, value, math.copysign(1.0, value))
    if isinstance(value, complex):
        return (type(value).__name__, value, math.copysign(1.0, value.real), math.copysign(1.0, value.imag))
    return (type(value).__name__, value)


def _typed(value: Any, array: Any, made: dict) -> Any:
    """``value`` as a 0-d array of ``array``'s real floating dtype (None on a lazy backend)."""
    key = (type(array), array.dtype, scalar_key(value))
    if key not in made:
        try:
            backend = backend_of_type(type(array))
            xp = backend.xp
            ok = not backend.lazy and xp.isdtype(array.dtype, "real floating")
            made[key] = xp.asarray(value, dtype=array.dtype) if ok else None
        except Exception:
            made[key] = None
    return made[key]

"""In-place reuse of dead intermediates: ``t = a * b`` where ``a`` dies here becomes ``a *= b``.

The standard's in-place operators (``+=``, ``*=``, ...) compute what the
binary function computes, without a new array, where the result has the shape
and dtype of the left operand. An argument is reused only where all of this holds:

* its backend takes writes (``BackendInfo.inplace``) and says the array owns its
  memory (``polygrad_owns_memory``): no view of anything;
* the program made it: never an argument of the call (a caller's array or a
  shared variable's value), a constant, or an output;
* nothing else may see it: no view row ever reads it, no item of a
  multi-output row is it, and this instruction is its last use (it appears once);
* the traced result has its type, shape and dtype.

For ``add``, ``multiply`` and the commutative bitwise rows either argument may be
reused; for the others only the left one.
"""

from __future__ import annotations

from typing import Any

from polygrad.core.dispatch import SCALARS as _SCALARS, backend_of_type
from polygrad.core.op import is_view

OPERATORS = {"add": "+=", "subtract": "-=", "multiply": "*=", "divide": "/=", "pow": "**=",
             "floor_divide": "//=", "remainder": "%=", "bitwise_and": "&=", "bitwise_or": "|=",
             "bitwise_xor": "^=", "bitwise_left_shift": "<<=", "bitwise_right_shift": ">>="}
COMMUTATIVE = frozenset({"add", "multiply", "bitwise_and", "bitwise_or", "bitwise_xor"})


def ownership(instrs: list[tuple], in_slots: list[int], alive: list) -> tuple[set[int], set[int]]:
    """``(owned, viewed)``: the slots holding arrays the program made itself (no argument,
    view, item of a multi-output row, or array some kernel handed back unchanged), and the
    slots some view row reads (their memory may be seen through another slot)."""
    viewed: set[int] = set()
    owned: set[int] = set()
    seen_ids: dict[int, int] = {}
    for s in in_slots:
        seen_ids[id(alive[s])] = s
    for op, _, args, params, out in instrs:
        view = op.view and is_view(op, params)  # (getitem by an index array is a copy)
        if view and args and args[0][0] == "s":
            viewed.add(args[0][1])
        for o in (out if isinstance(out, tuple) else (out,)):
            value = alive[o]
            # a kernel that returned an array seen before (its input) made nothing new
            if (not view and not (op.multi or op.name == "item") and type(value) not in _SCALARS
                    and id(value) not in seen_ids):
                owned.add(o)
            seen_ids.setdefault(id(value), o)
    return owned, viewed


def writable(value: Any, cache: dict | None = None) -> bool:
    """Whether the program may write into ``value``: its backend takes writes and says it owns its memory."""
    return _writable(type(value), {} if cache is None else cache) and _owns_memory(value)


def plan(instrs: list[tuple], in_slots: list[int], out_refs: list[tuple], alive: list) -> dict[int, tuple]:
    """Instruction index -> ``(position of the reused argument, operator)`` for each
    instruction the program runs in place."""
    last_use: dict[int, int] = {}
    for i, (_, _, args, _, _) in enumerate(instrs):
        for k, v in args:
            if k == "s":
                last_use[v] = i
    owned, viewed = ownership(instrs, in_slots, alive)
    outputs = {v for k, v in out_refs if k == "s"}
    cache: dict[type, bool] = {}
    result: dict[int, tuple] = {}
    for i, (op, _, args, params, out) in enumerate(instrs):
        symbol = OPERATORS.get(op.name)
        if symbol is None or params or len(args) != 2 or isinstance(out, tuple):
            continue
        positions = (0, 1) if op.name in COMMUTATIVE else (0,)
        for p in positions:
            k, v = args[p]
            if (k != "s" or v not in owned or v in outputs or v in viewed or last_use.get(v) != i
                    or args[1 - p] == ("s", v)):
                continue
            a, r = alive[v], alive[out]
            if type(a) is not type(r) or tuple(a.shape) != tuple(r.shape) or a.dtype != r.dtype:
                continue
            if not writable(a, cache):
                continue
            result[i] = (p, symbol)
            break
    return result


def _writable(t: type, cache: dict) -> bool:
    known = cache.get(t)
    if known is None:
        try:
            known = bool(backend_of_type(t).inplace)
        except TypeError:
            known = False
        cache[t] = known
    return known


def _owns_memory(a: Any) -> bool:
    try:
        owns = getattr(backend_of_type(type(a)), "owns_memory", None)
        return bool(owns(a)) if owns is not None else False
    except Exception:
        return False

"""Fusion: each maximal subgraph of elementwise kernels of a program, forward and
backward together, is offered to its backend as one kernel.

The backend answers through the optional hook ``polygrad_fuse_elementwise``
(:mod:`polygrad.hookspecs`) with a callable, or None to decline; a declined
group runs node by node, as before. A group is *convex*: no path leaves it and
comes back (the fused kernel runs as one step), and it holds at least two
nodes. Rows that draw random numbers are never fused.

The description a backend receives:

* ``nodes``: one :class:`FusedNode` per kernel, in an order where every node
  comes after the nodes it reads. Each argument is ``("input", i)`` (the
  kernel's ``i``-th array argument), ``("node", j)`` (node ``j``'s result) or
  ``("scalar", value)`` (a Python bool, int or float, typed as the standard's
  weak scalars: ``x_float32 * 0.5`` is float32).
* ``inputs``: ``(shape, dtype, donated)`` of each array argument, in order;
  ``donated`` is True for an array the program made itself and reads nowhere
  else: the kernel may write into it (use it as an output buffer).
* ``outputs``: the indices of the nodes whose results the kernel returns.

The kernel is called as ``kernel(*arrays)`` and returns a tuple of arrays, one
per output, each with the shape and dtype its node computes, none of them an
argument or a view of one (the compiled program may write into them).
"""

from __future__ import annotations

import heapq
import os
from typing import Any, Callable, NamedTuple

from polygrad.compile import inplace as _inplace
from polygrad.core.dispatch import backend_of_type

#: Off (``POLYGRAD_FUSION=0`` in the environment, or False here): compiled programs run node by node.
ENABLED = os.environ.get("POLYGRAD_FUSION", "1") not in ("0", "false", "False", "no")

#: Element-wise rows that are not worth a fused node (their result ignores the values).
_SKIP = frozenset({"zeros_like", "ones_like"})

_rows: frozenset | None = None


def elementwise_rows() -> frozenset:
    """Names of the rows fusion may take: the rows declared ``elementwise``, less views
    other than ``astype`` (their result shares memory), rows of several outputs and
    random rows."""
    global _rows
    if _rows is None:
        import polygrad.ops  # noqa: F401 - every row registered
        from polygrad.core.op import REGISTRY

        _rows = frozenset(n for n, row in REGISTRY.items() if row.elementwise and n not in _SKIP
                          and (n == "astype" or not row.view) and not row.multi and row.deterministic)
    return _rows


class FusedNode(NamedTuple):
    """One kernel of a group offered for fusion (see the module's docstring)."""

    op: str  # the row's name
    args: tuple  # ("input", i) | ("node", j) | ("scalar", value)
    params: dict  # the row's keyword parameters
    shape: tuple  # of the result
    dtype: Any  # of the result, a dtype of the backend
    kernel: Callable  # the row's kernel on this backend: kernel(*args, **params)


class FusedOp:
    """Stands in for an op in the program: a fused kernel returning a tuple of arrays."""

    multi = False
    view = False  # its results are new arrays
    deterministic = True
    value_shapes = False

    def __init__(self, names: list[str]) -> None:
        self.name = "fused " + ", ".join(names) if len(names) <= 6 else f"fused {len(names)} kernels: {', '.join(names[:5])}, ..."


def fuse(instrs: list[tuple], out_refs: list[tuple], alive: list, in_slots: list[int] = ()) -> list[tuple]:
    """``instrs`` with each group the backend fuses replaced by one instruction whose
    ``out`` is a tuple of slots (unpacked by the program)."""
    rows = elementwise_rows()
    member = [op.name in rows and not isinstance(out, tuple) for op, _, _, _, out in instrs]
    group = _groups(instrs, member)
    by_group: dict[int, list[int]] = {}
    for i, g in enumerate(group):
        if g is not None:
            by_group.setdefault(g, []).append(i)
    replaced: dict[int, tuple] = {}  # index of a group's last member -> the fused instruction
    members_of: dict[int, list[int]] = {}
    readers: dict[int, set[int]] = {}
    for i, (_, _, args, _, _) in enumerate(instrs):
        for k, v in args:
            if k == "s":
                readers.setdefault(v, set()).add(i)
    returned = {v for k, v in out_refs if k == "s"}
    owned, viewed = _inplace.ownership(instrs, list(in_slots), alive)
    donatable = owned - viewed - returned
    for members in by_group.values():
        if len(members) < 2:
            continue
        fused = _offer(instrs, members, readers, returned, alive, donatable)
        if fused is not None:
            replaced[members[-1]] = fused
            members_of[members[-1]] = members
    if not replaced:
        return instrs
    try:
        return _toposort(_order(instrs, replaced, members_of))
    except _Cycle:
        pass
    # Each group is convex, but two can read each other (in a Hessian-vector product, say), and
    # as single instructions they would form a cycle: keep the groups, largest first, that
    # leave the program acyclic.
    kept: dict[int, tuple] = {}
    for last in sorted(replaced, key=lambda k: -len(members_of[k])):
        trial = {**kept, last: replaced[last]}
        try:
            _toposort(_order(instrs, trial, members_of))
        except _Cycle:
            continue
        kept = trial
    return _toposort(_order(instrs, kept, members_of))


def _order(instrs: list[tuple], replaced: dict[int, tuple], members_of: dict[int, list[int]]) -> list[tuple]:
    """``(position, instruction)`` of the program with the groups of ``replaced`` (keyed by
    their last member) fused."""
    dropped = {m for last in replaced for m in members_of[last]}
    return [(i, replaced[i]) if i in replaced else (i, ins) for i, ins in enumerate(instrs)
            if i in replaced or i not in dropped]


def _groups(instrs: list[tuple], member: list[bool]) -> list[int | None]:
    """Each member instruction's group.

    Built from the last instruction to the first, so that a node joins the group of
    the nodes that *read* it: the mask of ReLU's backward (``ans > 0``, cast) joins the
    multiply by the incoming gradient, and is never stored, rather than the forward
    ``relu`` it reads. Members join through their readers while no path from one
    group to another leaves it (union-find over group ids).
    """
    producer: dict[int, int] = {}
    for i, (_, _, _, _, out) in enumerate(instrs):
        for o in (out if isinstance(out, tuple) else (out,)):
            producer[o] = i
    readers: list[list[int]] = [[] for _ in instrs]
    for i, (_, _, args, _, _) in enumerate(instrs):
        for k, v in args:
            if k == "s" and v in producer and i not in readers[producer[v]]:
                readers[producer[v]].append(i)
    n = len(instrs)
    # Reversed: node r = n - 1 - i, whose "inputs" are the readers of instruction i.
    order = [[n - 1 - j for j in readers[n - 1 - r]] for r in range(n)]
    found = _union_groups(order, [member[n - 1 - r] for r in range(n)])
    return [found[n - 1 - i] for i in range(n)]


def _union_groups(preds: list[list[int]], member: list[bool]) -> list[int | None]:
    """Groups of a DAG given in topological order (``preds[i]``: the nodes ``i`` reads):
    a member joins the groups of the members it reads unless a path from one of them
    to it, or between two of them, leaves the group on the way."""
    parent: dict[int, int] = {}

    def find(g: int) -> int:
        while parent[g] != g:
            parent[g] = parent[parent[g]]
            g = parent[g]
        return g

    up: list[frozenset] = [frozenset()] * len(preds)  # groups with a path to i that leaves them
    ext: dict[int, set] = {}  # group -> the groups it reads through a path leaving them
    group: list[int | None] = [None] * len(preds)
    for i, ps in enumerate(preds):
        behind = {find(g) for p in ps for g in up[p]}
        direct = {find(group[p]) for p in ps if group[p] is not None}
        if not member[i]:
            up[i] = frozenset(behind | direct)
            continue
        chosen: list[int] = []
        for g in sorted(d for d in direct if d not in behind):
            if all(g not in {find(x) for x in ext[c]} and c not in {find(x) for x in ext[g]} for c in chosen):
                chosen.append(g)
        if chosen:
            root = chosen[0]
            for g in chosen[1:]:
                parent[g] = root
                ext[root] |= ext.pop(g)
        else:
            root = i
            parent[root] = root
            ext[root] = set()
        reach = behind | {find(group[p]) for p in ps if group[p] is not None and find(group[p]) != root}
        ext[root] |= reach
        up[i] = frozenset(reach)
        group[i] = root
    return [find(g) if g is not None else None for g in group]


def _offer(instrs: list[tuple], members: list[int], readers: dict, returned: set, alive: list,
           donatable: set) -> tuple | None:
    """Describe one group to its backend; the fused instruction, or None when declined."""
    index = {instrs[i][4]: j for j, i in enumerate(members)}
    inputs: list[tuple] = []  # refs
    input_of: dict[Any, int] = {}
    nodes = []
    backend = None
    for i in members:
        op, impl, args, params, out = instrs[i]
        value = alive[out]
        try:
            b = backend_of_type(type(value))
        except TypeError:
            return None
        if backend is None:
            backend = b
        elif b is not backend:
            return None
        desc = []
        for k, v in args:
            if k == "s" and v in index:
                desc.append(("node", index[v]))
            elif k == "c" and type(v) in (bool, int, float):
                desc.append(("scalar", v))
            else:
                key = (k, v if k == "s" else id(v))
                if key not in input_of:
                    input_of[key] = len(inputs)
                    inputs.append((k, v))
                desc.append(("input", input_of[key]))
        nodes.append(FusedNode(op.name, tuple(desc), dict(params or {}), tuple(value.shape), value.dtype, impl))
    outputs = [j for j, i in enumerate(members)
               if instrs[i][4] in returned or any(r not in members for r in readers.get(instrs[i][4], ()))]
    arrays = [alive[v] if k == "s" else v for k, v in inputs]
    for a in arrays:
        if type(a) in (bool, int, float, complex):
            return None
        try:
            if backend_of_type(type(a)) is not backend:
                return None
        except TypeError:
            return None
    fuse_hook = getattr(backend, "fuse_elementwise", None)
    if fuse_hook is None or not outputs:
        return None
    # An input the program made, that nothing outside the group reads, is the kernel's to overwrite.
    member_set = set(members)
    donated = [k == "s" and v in donatable and readers.get(v, set()) <= member_set and _inplace.writable(alive[v])
               for k, v in inputs]
    kernel = fuse_hook(tuple(nodes), tuple((tuple(a.shape), a.dtype, d) for a, d in zip(arrays, donated)),
                       tuple(outputs))
    if kernel is None:
        return None
    outs = tuple(instrs[members[j]][4] for j in outputs)
    return (FusedOp([n.op for n in nodes]), kernel, tuple(inputs), None, outs)


def _toposort(order: list[tuple[int, tuple]]) -> list[tuple]:
    """The instructions in an order where each follows what it reads, as close to
    ``order``'s positions as that allows (a fused instruction sits at its last member).

    A random draw also follows the draw before it: draws take their numbers from one generator
    in turn, so two of them swapped take each other's (a draw reading a group that ends after
    an independent later draw ran after it); where that cannot be, the groups are a cycle."""
    producer: dict[int, int] = {}
    for n, (_, (_, _, _, _, out)) in enumerate(order):
        for o in (out if isinstance(out, tuple) else (out,)):
            producer[o] = n
    waiting = [0] * len(order)
    users: dict[int, list[int]] = {}
    last_draw = None
    for n, (_, (op, _, args, _, _)) in enumerate(order):
        deps = {producer[v] for k, v in args if k == "s" and v in producer}
        if not op.deterministic:
            if last_draw is not None:
                deps.add(last_draw)
            last_draw = n
        waiting[n] = len(deps)
        for d in deps:
            users.setdefault(d, []).append(n)
    ready = [(pos, n) for n, (pos, _) in enumerate(order) if waiting[n] == 0]
    heapq.heapify(ready)
    result = []
    while ready:
        _, n = heapq.heappop(ready)
        result.append(order[n][1])
        for u in users.get(n, ()):
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(ready, (order[u][0], u))
    if len(result) != len(order):
        raise _Cycle
    return result


class _Cycle(Exception):
    pass

"""From a symbolic graph to a flat program of kernel calls, and running it.

Compiling (once per input shapes and dtypes):

1. *Trace*: evaluate the symbolic graph on the call's values with ordinary
   eager ops (gradients through the ordinary backward engine with
   ``create_graph=True``) while a tracing hook records every kernel call:
   ``(kernel, argument slots or constants, parameters, output slot)``.
2. *Optimize*: constant folding, algebraic simplification
   (:mod:`polygrad.compile.rewrite`) and common-subexpression elimination in one
   pass, then dead-code removal from the outputs and updates. Rows declared
   ``deterministic=False`` (random draws) are never folded, rewritten, merged or
   dropped, and run in the order they were traced: a draw whose value is dead still
   draws, so the draws after it take the numbers eager code gives them.
3. *Fuse*: each maximal group of elementwise kernels is offered to its backend
   as one kernel (:mod:`polygrad.compile.fusion`); a declined group runs node by node.
4. *Generate*: one Python function whose body is the straight-line program,
   with each intermediate deleted after its last use, and dead intermediates
   reused in place where the backend takes writes (:mod:`polygrad.compile.inplace`).

Running is a single call of that function: no graph bookkeeping per call.
"""

from __future__ import annotations

import functools
import heapq
import operator
import weakref
from typing import Any, Sequence

from polygrad._registry import draws_aside
from polygrad.compile import fusion as _fusion
from polygrad.compile import inplace as _inplace
from polygrad.compile import rewrite as _rewrite
from polygrad.compile import symbolic as _symbolic
from polygrad.compile.symbolic import SymbolicArray, walk
from polygrad.core import config
from polygrad.core import debug as _debug
from polygrad.core import hooks as _hooks
from polygrad.core.config import force_backprop_mode
from polygrad.core.debug import is_finite
from polygrad.core.dispatch import backend_of_type, current_backend
from polygrad.core.engine import grad as _grad
from polygrad.core.hooks import FunctionHook
from polygrad.core.op import is_view, value_shaped
from polygrad.core.variable import Variable
from polygrad.core.primitive import Primitive
from polygrad.ops._dtypes import resolved_dtype

def _item(values: Any, k: int) -> Any:
    return values[k]


class _ItemOp:
    """Stands in for an op in the program: output ``k`` of a multi-output kernel."""

    name = "item"
    multi = False
    view = True  # an item of a view op's outputs is a view too
    deterministic = True
    value_shapes = False


_ITEM = _ItemOp()


class MissingInputError(TypeError):
    """The outputs depend on a symbolic variable that is not an input of the function."""


class ShapeChanged(Exception):
    """Raised by a program where a row whose shape depends on the values (``Op.value_shapes``)
    gave another shape than when it was traced: the program's later constants (a count, a
    gradient's shape) would be stale, so the caller traces it again for these values."""

    def __init__(self, op_name: str, traced: Any, now: Any) -> None:
        super().__init__(op_name, traced, now)
        self.op_name, self.traced, self.now = op_name, traced, now


def _shapes(value: Any) -> Any:
    """A result's shape, as the guard of a value-shaped row compares it (a tuple of shapes
    for a row with several outputs)."""
    if isinstance(value, tuple):
        return tuple(_shapes(v) for v in value)
    return tuple(None if n is None or n != n else n for n in value.shape)  # unknown (dask's nan): None


class _Tracer(FunctionHook):
    """Records each kernel call of the ops applied while it is active."""

    name = "polygrad-compile-tracer"

    def __init__(self) -> None:
        self.slot_of: dict[int, int] = {}
        self.alive: list[Any] = []  # the traced value of each slot (keeps ids unique)
        self.instrs: list[tuple] = []
        self.n_slots = 0
        self.ones: dict[int, Any] = {}  # id -> constant array known to hold ones (a gradient seed)

    def new_slot(self, array: Any) -> int:
        s = self.n_slots
        self.n_slots += 1
        self.slot_of[id(array)] = s
        self.alive.append(array)
        return s

    def ref(self, value: Any) -> tuple:
        s = self.slot_of.get(id(value))
        return ("s", s) if s is not None else ("c", value)

    def forward_postprocess(self, function: Any, in_data: tuple) -> None:
        if not isinstance(function, Primitive):
            raise NotImplementedError(
                f"polygrad.function: user Function {function.label} cannot be compiled yet; use built-in ops"
            )
        op = function.op
        args = tuple(self.ref(d) for d in in_data)
        if not op.multi:
            out = self._own(function, in_data)[0]
            self.instrs.append((op, op.kernel(function.backend), args, function.params, self.new_slot(out)))
            return
        # several outputs: one slot for the tuple, then one item per output
        outs = self._own(function, in_data)
        whole = self.new_slot(outs)
        self.instrs.append((op, op.kernel(function.backend), args, function.params, whole))
        for k, o in enumerate(outs):
            self.instrs.append((_ITEM, _item, (("s", whole), ("c", k)), None, self.new_slot(o)))

    def _own(self, node: Primitive, in_data: tuple) -> tuple:
        """The data of ``node``'s outputs, each as an object only this trace can reach.

        Slots are told apart by identity (``ref``), so a slot must never hold an object that
        other code can get by other means: that code's constant would be read as the slot, at
        every call, whatever the slot holds then. An object a kernel may share is given one of
        its own here (:func:`_distinct`): every 0-d result (interned by value: NumPy's
        comparisons give the singletons ``True_`` and ``False_``, which setitem's backward mask
        of a 0-d gradient, computed outside the trace, also was: the program read ``x > 0``
        where that constant was meant), and a result the kernel was given or a slot has (an op
        may return its input, or a constant argument). An array of any other shape that the
        kernel made is a new object, which reaches other code only through this trace. This
        costs at trace time only: the program runs the kernels as they are.

        The output Variable and the node's saved output (what its backward reads) take the new
        object, so the ops that read it next, backward's among them, refer to this slot.
        """
        olds = tuple(r()._data for r in node.outputs)
        given = {id(d) for d in in_data}
        news = tuple(_distinct(o) if getattr(o, "ndim", None) == 0 or id(o) in given or id(o) in self.slot_of
                     else o for o in olds)
        if all(n is o for n, o in zip(news, olds)):
            return news
        for r, o in zip(node.outputs, news):
            r()._data = o
        saved = getattr(node, "saved", None)
        n_in = len(node.edges)
        if saved is not None and len(saved) > n_in and saved[n_in] is not None:
            saved[n_in] = news if node.op.multi else news[0]  # (kept for backward: the output itself)
        source = getattr(node, "source", None)
        if source is not None:  # a remat row's note of its output (see primitive._source)
            try:
                node.source = source[:3] + (weakref.ref(news[0]),) + source[4:]
            except TypeError:
                node.source = None
        return news


def trace(inputs: Sequence[SymbolicArray], values: Sequence[Any], targets: Sequence[SymbolicArray],
          givens: dict | None = None) -> tuple[_Tracer, list[int], list[tuple]]:
    """Evaluate ``targets`` given ``values`` for ``inputs`` while recording kernels.

    Returns the tracer, the input slots and a reference (slot or constant) per target.
    """
    tracer = _Tracer()
    env: dict[int, Variable] = {}
    in_slots = []
    givens = givens or {}
    leaves = _differentiated(targets, givens)  # (None: all)
    for sym, value in zip(inputs, values):
        value = _distinct(value)
        if sym.id not in givens:  # a replaced input is never read
            # requires grad where a gradient asks for it (and the dtype allows): the rules of the
            # other inputs never run, nor what they refuse (setitem's values at repeated indices)
            records = leaves is None or sym.id in leaves
            env[sym.id] = Variable(value) if records else Variable(value, requires_grad=False)
        in_slots.append(tracer.new_slot(value))
    grads: dict[tuple, list] = {}

    def deps(s: SymbolicArray) -> list:
        if s.id in givens:
            return [givens[s.id]]
        if s.kind in ("input", "shared"):
            raise MissingInputError(
                f"polygrad.function: the outputs depend on {s!r} ({s.kind}), which is not an input of the function; "
                f"add it to the inputs (or use pg.shared for state)"
            )
        return operands(s)

    def run(s: SymbolicArray) -> None:
        """Evaluate ``s``, whose dependencies are in ``env``."""
        if s.id in givens:
            # Theano substitutes into the graph its gradients were built on: a gradient does
            # not go through a replacement, which stands in as a leaf of its value (w * x with x
            # given as w: d/dw is x, not 2 w).
            env[s.id] = Variable(env[givens[s.id].id]._data)
        elif s.kind == "op":
            from polygrad.core.primitive import apply

            args = tuple(env[a.id] if isinstance(a, SymbolicArray) else a for a in s.args)
            env[s.id] = apply(s.op, args, _concrete_dtype(args, s.params))
        elif s.kind == "item":  # output k of a multi-output op
            env[s.id] = env[s.args[0].id][s.params["index"]]
        elif s.kind == "detached":
            # A new leaf sharing its source's array, as eager's x.detach(): no gradient goes back through it
            # (the same array, so the program reads the same slot). It records only for a gradient taken at it.
            src = env[s.args[0].id]
            leaf = Variable if leaves is None or s.id in leaves else functools.partial(Variable, requires_grad=False)
            env[s.id] = tuple(leaf(v._data) for v in src) if isinstance(src, tuple) else leaf(src._data)
        else:  # a gradient: one backward for the whole group
            cost, wrt, index = s.grad_of
            key = (cost.id, tuple(w.id for w in wrt), _symbolic.epoch(s.id))  # (asked before and after a cut: two)
            if key not in grads:
                # T.grad checked the connection when the gradient was asked for: None means zeros here
                loss, *ws = as_of([cost, *wrt], s.id)
                seed = None
                if loss._node is None or not loss._node.accepts_no_grad:
                    # the seed the engine would make, known to the optimizer as ones (also on lazy backends)
                    seed = [backend_of_type(type(loss._data)).xp.ones_like(loss._data)]
                    tracer.ones[id(seed[0])] = seed[0]  # (held: ids stay unique)
                gs = _grad(loss, ws, seed, create_graph=True, allow_unused=True)
                grads[key] = [g if g is not None else Variable(w.xp.zeros_like(w._data), requires_grad=False)
                              for g, w in zip(gs, ws)]
            env[s.id] = grads[key][index]

    def as_of(roots: list, t: int) -> list:
        """The Variables of ``roots`` in the graph as it was when the gradient of id ``t`` was asked
        for: a symbol unchain_backward cut after that (a detached one of a higher id, see
        :func:`polygrad.compile.symbolic._cut_behind`) is still its operation there, as eager's
        gradient was computed before the cut. What reads such a symbol runs again on the operation
        (the optimizer merges the two runs of each kernel)."""
        if _symbolic.epoch(t) == len(_symbolic.cuts):  # (no cut since: the graph as it is)
            return [env[r.id] for r in roots]
        given = {sym.id for sym in inputs}

        def late(s: SymbolicArray) -> bool:
            return s.kind == "detached" and s.id > t and s.id not in givens

        def below(s: SymbolicArray) -> list:
            if s.id in givens or s.id in given or not (s.kind in ("op", "item") or late(s)):
                return []  # (env has it as it was: a leaf, an input, a replacement, a gradient)
            return [a for a in s.args if isinstance(a, SymbolicArray)]

        view: dict[int, Any] = {}
        for s in _creation_order(roots, {}, below):
            if late(s):
                src = s.args[0]
                view[s.id] = view[src.id] if src.id in view else env[src.id]
            elif s.id in givens:
                continue
            elif s.kind == "op" and any(isinstance(a, SymbolicArray) and a.id in view for a in s.args):
                from polygrad.core.primitive import apply

                args = tuple((view[a.id] if a.id in view else env[a.id]) if isinstance(a, SymbolicArray) else a
                             for a in s.args)
                view[s.id] = apply(s.op, args, _concrete_dtype(args, s.params))
            elif s.kind == "item" and s.args[0].id in view:
                view[s.id] = view[s.args[0].id][s.params["index"]]
        return [view[r.id] if r.id in view else env[r.id] for r in roots]

    # Recording on, whatever the caller's mode: a program traced inside no_backprop_mode had
    # no graph to differentiate, and kept zeros for every gradient at every later call.
    # The trace is how the program is made, not a run of the user's steps: the user's hooks see
    # none of it (they saw the first call's eager forward and backward, and no later call), only
    # debug mode's, which checks it as eager ops are checked.
    token = _hooks.only(tuple(h for h in _hooks.active_hooks() if h is _debug._HOOK) + (tracer,))
    try:
        with force_backprop_mode():
            for s in _creation_order(targets, env, deps):
                run(s)
            results = [env[t.id] for t in targets]
    finally:
        _hooks.restore(token)
    refs = [tracer.ref(r._data) for r in results]
    tracer.alive.extend(r._data for r in results)
    return tracer, in_slots, refs


def operands(s: SymbolicArray) -> list:
    """The symbolic arrays ``s`` is computed from (none for a leaf: an input, a shared variable)."""
    if s.kind in ("op", "item", "detached"):
        return [a for a in s.args if isinstance(a, SymbolicArray)]
    if s.kind == "grad":
        return [s.grad_of[0], *s.grad_of[1]]
    return []


def _creation_order(targets: Sequence[SymbolicArray], env: dict, deps: Any) -> list:
    """The symbolic arrays ``targets`` need that ``env`` lacks, each after its dependencies and
    otherwise in the order the user's code made them (their ids), as eager runs them: the nodes
    of the trace then number as eager's, and backward sums a gradient's terms in eager's order.
    (Depth-first from the outputs numbered them in output order: with outputs [mean(x), square(x
    / x), grad], x = [1e-30, .5, 3], the gradient's first entry was 1/3 compiled and 0 eager.)"""
    needed: dict[int, Any] = {}
    waiting: dict[int, int] = {}  # id -> dependencies not yet run
    users: dict[int, list] = {}
    stack = [t for t in targets if t.id not in env]
    while stack:
        s = stack.pop()
        if s.id in needed:
            continue
        needed[s.id] = s
        todo = {d.id: d for d in deps(s) if d.id not in env}
        waiting[s.id] = len(todo)
        for d in todo.values():
            users.setdefault(d.id, []).append(s)
            stack.append(d)
    ready = [i for i, n in waiting.items() if n == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        i = heapq.heappop(ready)
        order.append(needed[i])
        for u in users.get(i, ()):
            waiting[u.id] -= 1
            if waiting[u.id] == 0:
                heapq.heappush(ready, u.id)
    if len(order) != len(needed):  # a cycle: pg.function's check of givens should have refused it
        stuck = [needed[i] for i, n in waiting.items() if n]
        raise AssertionError(
            f"polygrad.function (internal error, please report it): {len(stuck)} expressions depend on each other "
            f"and cannot be ordered: {', '.join(_short(s) for s in stuck[:4])}{', ...' if len(stuck) > 4 else ''}"
        )
    return order


def _short(s: SymbolicArray, limit: int = 60) -> str:
    text = repr(s)
    return text if len(text) <= limit else text[:limit - 5] + "(...)"


def _concrete_dtype(args: tuple, params: Any) -> Any:
    """``params`` with a dtype a symbolic graph names (``x.dtype`` of a symbolic array is its
    name: ``astype(hit, y.dtype)``; a Python type: ``dtype=float``) as the dtype of the namespace
    the values are on, resolved as eager calls resolve it (numpy took the name, array_api_strict
    refused it)."""
    dtype = params.get("dtype") if params else None
    if dtype is None:
        return params
    data = next((a._data for a in args if isinstance(a, Variable)), None)
    xp = current_backend().xp if data is None else backend_of_type(type(data)).xp
    resolved = resolved_dtype(xp, dtype, "a compiled program")
    return params if resolved is dtype else {**params, "dtype": resolved}


def _differentiated(targets: Sequence[SymbolicArray], givens: dict) -> set | None:
    """The ids of the inputs (and new leaves: ``x.detach()``) some gradient in ``targets``' graph is
    taken with respect to, or None where every input must record (givens, or a gradient with
    respect to an intermediate, which needs the graph from the inputs up to it)."""
    if givens:
        return None
    wrt: set = set()
    for s in walk(targets, set(), {}):
        if s.kind == "grad":
            ws = s.grad_of[1]
            if any(w.kind not in ("input", "shared", "detached") for w in ws):
                return None
            wrt.update(w.id for w in ws)
    return wrt


def _distinct(value: Any) -> Any:
    """``value`` as an array object of its own for tracing: the tracer tells values apart by
    identity, and one array may be given for two inputs (``f(batch, batch)``, two shared
    variables borrowing one array). A view (``value[...]``) where the library makes a new
    object for it, else a copy."""
    view = value[...]
    if view is value:
        view = backend_of_type(type(value)).xp.asarray(value, copy=True)
    return view


def _freeze(value: Any) -> Any:
    """A hashable stand-in for parameters (raises TypeError for arrays and the like)."""
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__,) + tuple(_freeze(v) for v in value)
    if isinstance(value, slice):
        return ("slice", value.start, value.stop, value.step)
    if value is None or isinstance(value, (bool, int, float, complex, str, type(Ellipsis))):
        return _rewrite.scalar_key(value)
    hash(value)
    return ("obj", id(value))


#: Kernels that are Python operators, as the text around their operands in generated code.
_INFIX = {operator.add: ("", " + ", ""), operator.sub: ("", " - ", ""), operator.mul: ("", " * ", ""),
          operator.truediv: ("", " / ", ""), operator.pow: ("", " ** ", ""), operator.neg: ("-", ""),
          operator.eq: ("", " == ", ""), operator.ne: ("", " != ", ""), operator.lt: ("", " < ", ""),
          operator.le: ("", " <= ", ""), operator.gt: ("", " > ", ""), operator.ge: ("", " >= ", "")}


class Program:
    """A straight-line program over slots, compiled to one Python function.

    ``optimize=False`` (Theano's FAST_COMPILE) keeps every traced kernel but the dead
    ones; ``borrowed`` are the positions of inputs an output may alias without a copy.
    """

    def __init__(self, tracer: _Tracer, in_slots: list[int], out_refs: list[tuple], *, optimize: bool = True,
                 borrowed: Sequence[int] = ()) -> None:
        instrs = tracer.instrs
        if optimize:
            instrs, out_refs = _simplify(instrs, out_refs, tracer.alive, tracer.ones)
        # A row whose shape depends on the values stays, even where its value is dead: its shape
        # may live on as a number in what follows (the count a mean's gradient divides by), and
        # only running it checks that shape (see guards, below).
        shaped = {out for op, _, args, _, out in instrs
                  if value_shaped(op, tuple(tracer.alive[v] if k == "s" else v for k, v in args))}
        # A random draw stays where its value is dead (d/dy of sum(dropout(x) + y) reads no mask): eager
        # code drew it, and the draws after it take the numbers eager gives them only if it draws here too.
        drawn = [("s", out) for op, *_, out in instrs if not op.deterministic]
        kept = _live(instrs, out_refs + [("s", out) for out in shaped] + drawn)
        unfused = kept
        if optimize and _fusion.ENABLED:
            kept = _fusion.fuse(kept, out_refs, tracer.alive, in_slots)
        if optimize:
            fused = kept is not unfused
            kept = _rewrite.typed_scalars(kept, tracer.alive)
            unfused = _rewrite.typed_scalars(unfused, tracer.alive) if fused else kept
        # The shape each value-shaped row gave when traced, checked at every run.
        self.guards = {out: _shapes(tracer.alive[out]) for *_, out in kept if out in shaped}
        _refuse_random_shapes(kept, self.guards)
        if unfused is kept:
            kept = unfused = _checks_first([kept], self.guards, tracer.alive)[0]
        else:
            kept, unfused = _checks_first([kept, unfused], self.guards, tracer.alive)
        self.instrs = kept
        # Debug mode's program checks every row as eager checks each op: from the rows before fusion,
        # as a fused kernel's rows have no results of their own (where(x > 0, log(x), 0) masked log's NaN).
        self._unfused = unfused
        self.in_slots = in_slots
        self.out_refs = out_refs
        # Whose memory each result may be: the root of its slot, the slot itself or, for the output
        # of a view row (Op.view), the root of the slot it views (an item of a multi-output row is
        # its own unless the row is a view). Two results of one root may share memory; a result
        # whose root is an input may be the caller's array.
        root: dict[int, int] = {}
        for op, impl, args, params, out in kept:
            if op.view and is_view(op, params) and args and args[0][0] == "s" and not isinstance(out, tuple):
                base = args[0][1]
                if op is not _ITEM or base in root:
                    root[out] = root.get(base, base)
        self.roots = [root.get(v, v) if k == "s" else None for k, v in out_refs]
        # An output may be a borrowed input's argument (In(borrow=True)); an update's container
        # never takes an argument (a caller reusing its buffer would change the state).
        aliasing = {s for i, s in enumerate(in_slots) if i not in borrowed}
        self.may_alias_input = [k == "c" or r in aliasing for (k, _), r in zip(out_refs, self.roots)]
        self.may_alias_any_input = [k == "c" or r in in_slots for (k, _), r in zip(out_refs, self.roots)]
        self.n_kernels = len(kept)
        self.n_traced = len(tracer.instrs)
        self.n_fused = sum(1 for ins in kept if isinstance(ins[4], tuple))
        self._inplace = _inplace.plan(kept, in_slots, out_refs, tracer.alive) if optimize else {}
        self.fn, self.source = self._generate(kept, self._inplace)
        self._checked: Any = None  # the program that checks every result, and its source, for debug mode

    def _generate(self, instrs: list[tuple], inplace: dict, checked: bool = False) -> tuple[Any, str]:
        """The function and source of the program of ``instrs``, computing the rows of ``inplace`` in
        place; ``checked``: a FloatingPointError after any row whose result holds NaN or Inf (debug
        mode, as eager ops are checked)."""
        names: dict[str, Any] = {"_check": _check_finite} if checked else {}
        last_use: dict[int, int] = {}
        for i, (_, _, args, _, _) in enumerate(instrs):
            for k, v in args:
                if k == "s":
                    last_use[v] = i
        outputs = {v for k, v in self.out_refs if k == "s"}
        var: dict[int, str] = {}  # slot -> its variable (a slot computed in place takes its operand's)

        def ref(kind: str, v: Any) -> str:
            return var.get(v, f"s{v}") if kind == "s" else const(v)

        def const(value: Any) -> str:
            if type(value) in (bool, int) or (type(value) is float and value == value and abs(value) != float("inf")):
                text = repr(value)  # in parentheses when signed: -1 ** s0 would be -(1 ** s0)
                return f"({text})" if text.startswith("-") else text
            name = f"c{len(names)}"
            names[name] = value
            return name

        lines = [f"def program({', '.join(f's{s}' for s in self.in_slots)}):"]
        for i, (op, impl, args, params, out) in enumerate(instrs):
            operands = [ref(kind, v) for kind, v in args]
            reused = None
            infix = _INFIX.get(impl) if type(impl) is type(operator.add) else None
            if i in inplace:  # a dead intermediate takes the result (see polygrad.compile.inplace)
                p, symbol = inplace[i]
                reused = args[p][1]
                lines.append(f"    {operands[p]} {symbol} {operands[1 - p]}  # {op.name}, in place")
                var[out] = operands[p]
            elif not params and infix and len(operands) == len(infix) - 1:
                # an operator row's kernel is the operator itself: written as one, it skips a call
                expr = infix[0] + "".join(o + t for o, t in zip(operands, infix[1:]))
                lines.append(f"    s{out} = {expr}  # {op.name}")
            else:
                k = f"k{len(names)}"
                names[k] = functools.partial(impl, **params) if params else impl
                target = f"s{out}" if not isinstance(out, tuple) else ", ".join(f"s{o}" for o in out) + ("," if len(out) == 1 else "")
                if out in last_use or out in outputs or out in self.guards or checked or isinstance(out, tuple):
                    lines.append(f"    {target} = {k}({', '.join(operands)})  # {op.name}")
                else:  # a random draw whose value nothing reads (see __init__): drawn, and dropped at once
                    lines.append(f"    {k}({', '.join(operands)})  # {op.name}")
            if checked:
                results = ", ".join(ref("s", o) for o in (out if isinstance(out, tuple) else (out,)))
                lines.append(f"    _check(({results},), {i}, {op.name!r})")
            if out in self.guards:  # (never computed in place: not elementwise)
                names["_shapes"], names["ShapeChanged"] = _shapes, ShapeChanged
                traced = const(self.guards[out])
                lines.append(f"    if _shapes(s{out}) != {traced}:")
                lines.append(f"        raise ShapeChanged({op.name!r}, {traced}, _shapes(s{out}))")
            dead = sorted({ref("s", v) for kind, v in args
                           if kind == "s" and last_use.get(v) == i and v not in outputs and v != reused})
            if dead:
                lines.append(f"    del {', '.join(dead)}")
        rets = ", ".join(ref(kind, v) for kind, v in self.out_refs)
        lines.append(f"    return ({rets}{',' if len(self.out_refs) == 1 else ''})")
        source = "\n".join(lines)
        code = compile(source, _SOURCE_NAME, "exec")
        exec(code, names)
        # (popped: left in its own globals, the function referred to itself, a cycle only the gc freed)
        return names.pop("program"), source

    def __call__(self, *values: Any) -> tuple:
        checked = config.debug.get()
        try:
            if checked:
                if self._checked is None:  # (no rows in place: their plan is the fused program's)
                    self._checked = self._generate(self._unfused, {}, checked=True)
                return self._checked[0](*values)
            return self.fn(*values)
        except ShapeChanged:
            raise
        except Exception as exc:
            named = _named_failure(exc, self._checked[1] if checked else self.source)
            if named is None:
                raise
            raise named from exc


def _named_failure(exc: Exception, source: str) -> Exception | None:
    """The error of a kernel of the program, named as eager names its ops' (``polygrad:
    linalg_inv failed ...``; it came out bare: ``LinAlgError: Singular matrix``), or None where
    the error did not come from a row (a debug check, a shape guard: those name theirs)."""
    tb, line = exc.__traceback__, None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == _SOURCE_NAME:
            line = tb.tb_lineno
        tb = tb.tb_next
    if line is None:
        return None
    text = source.splitlines()[line - 1].strip()
    if "  # " not in text:
        return None
    code, label = text.split("  # ", 1)
    msg = (f"polygrad: {label.removesuffix(', in place')} failed in a compiled function's program (line {line}: "
           f"{code}): {type(exc).__name__}: {exc}")
    try:
        return type(exc)(msg)
    except Exception:
        return RuntimeError(msg)


_SOURCE_NAME = "<polygrad compiled function>"


def _check_finite(results: tuple, row: int, name: str) -> None:
    """Debug mode: refuse a compiled row's result that holds NaN or Inf."""
    for k, a in enumerate(results):
        if not is_finite(a):
            raise FloatingPointError(f"polygrad debug: output {k} of {name} (row {row} of a compiled function's "
                                     f"program) contains NaN or Inf")


def _simplify(instrs: list[tuple], out_refs: list[tuple], alive: list, ones: dict) -> tuple[list[tuple], list[tuple]]:
    """One pass in program order: constant folding, algebraic simplification
    (:mod:`polygrad.compile.rewrite`) and common-subexpression elimination.

    Folding: a kernel whose arguments are all constants ran at trace time; its traced
    value becomes a constant. Merging: the same kernel on the same arguments and
    parameters runs once. A random row (``deterministic=False``) is never folded,
    rewritten or merged: two draws are two draws, however alike.
    """
    facts = _rewrite.Facts(alive)
    facts.uniform.update(dict.fromkeys(ones, 1))
    folded: dict[int, Any] = {}
    alias: dict[int, tuple] = {}
    seen: dict[Any, int] = {}
    kept = []

    def sub(ref: tuple) -> tuple:
        k, v = ref
        if k != "s":
            return ref
        if v in folded:
            return ("c", folded[v])
        return alias.get(v, ref)

    for op, impl, args, params, out in instrs:
        args = tuple(sub(a) for a in args)
        if op.deterministic and all(k == "c" for k, _ in args):
            folded[out] = alive[out]
            facts.note_folded(op, args, params, alive[out])
            continue
        simpler = _rewrite.simplify(op, args, params, out, facts)
        if simpler is not None:
            if simpler[0] == "alias":
                alias[out] = simpler[1]
                continue
            op, impl, args, params = simpler
        try:
            key = (op.name, id(impl), tuple((k, v) if k == "s" else (k, _freeze(v)) for k, v in args),
                   _freeze(params or {})) if op.deterministic else None
        except TypeError:
            key = None
        if key is not None and key in seen:
            alias[out] = ("s", seen[key])
            continue
        if key is not None:
            seen[key] = out
        _rewrite.note_kept(op, args, out, facts)
        kept.append((op, impl, args, params, out))
    return kept, [sub(r) for r in out_refs]


def _live(instrs: list[tuple], out_refs: list[tuple]) -> list[tuple]:
    """Dead code: the instructions the references ``out_refs`` need (the program's roots)."""
    needed = {v for k, v in out_refs if k == "s"}
    kept = []
    for ins in reversed(instrs):
        if ins[4] in needed:
            kept.append(ins)
            needed.update(v for k, v in ins[2] if k == "s")
    kept.reverse()
    return kept


class RandomShape(NotImplementedError):
    """A value-shaped row reads random draws: its shape would change at every run."""

    def __init__(self, op_name: str, source: str) -> None:
        super().__init__(op_name, source)
        self.op_name, self.source = op_name, source


def _refuse_random_shapes(instrs: list, guards: dict) -> None:
    """Raise :class:`RandomShape` where a row whose shape depends on the values (a guard) reads,
    directly or not, a random draw (``deterministic=False``): its shape would change from run
    to run, at random, so the program is refused when traced, on the first call."""
    if not guards:
        return
    drawn: dict[int, str] = {}  # slot -> the random row it comes from
    for op, _, args, _, out in instrs:
        if out in guards:
            source = next((drawn[v] for k, v in args[op.shape_args] if k == "s" and v in drawn), None)
            if source is not None:
                raise RandomShape(op.name, source)
        source = op.name if not op.deterministic else next(
            (drawn[v] for k, v in args if k == "s" and v in drawn), None)
        if source is None:
            continue
        for o in out if isinstance(out, tuple) else (out,):
            drawn[o] = source


def _checks_first(programs: list[list], guards: dict, alive: list) -> list[list]:
    """``programs`` (the program's rows, and where fusion changed them, the rows before it) with
    every shape check ahead of the first random draw; the probes added here get their slots in
    ``alive`` and their checks in ``guards``.

    A check that fails makes the caller trace the program again and run it again: a draw made
    before it drew twice, and after ``pg.seed`` the call and every later draw took other numbers
    than eager code's. The shape of a value-shaped row depends only on deterministic rows (else
    :class:`RandomShape`), so its row and their ancestors, none of them random, move ahead of
    the first draw; the draws keep their order. A row that selects from random values through
    its other inputs (``dropout(x)[x > 2]``) stays behind its draw, and a probe moves ahead for
    it: the same kernel on a stand-in of zeros for those inputs, whose shape is the row's."""
    first = programs[0]
    drawn: set = set()  # slots that read a random draw, directly or not
    probes: dict[int, tuple] = {}  # guarded slot -> its probe row
    for op, impl, args, params, out in first:
        if not op.deterministic or any(k == "s" and v in drawn for k, v in args):
            drawn.update(out if isinstance(out, tuple) else (out,))
            if out in guards:
                shaping = range(len(args))[op.shape_args]
                stand_ins = tuple(a if i in shaping or a[0] == "c" else ("c", _zeros_as(alive[a[1]]))
                                  for i, a in enumerate(args))
                probes[out] = (op, impl, stand_ins, params, len(alive))
                guards[len(alive)] = guards.pop(out)  # (the row's own check would only repeat it)
                alive.append(impl(*(alive[v] if k == "s" else v for k, v in stand_ins), **(params or {})))
    if not drawn:
        return programs
    result = []
    for instrs in programs:
        instrs = [row for ins in instrs for row in ((probes[ins[4]], ins) if ins[4] in probes else (ins,))]
        start = next(i for i, ins in enumerate(instrs) if not ins[0].deterministic)
        producer = {o: i for i, ins in enumerate(instrs) for o in (ins[4] if isinstance(ins[4], tuple) else (ins[4],))}
        moved: set = set()
        todo = [i for i, ins in enumerate(instrs) if i > start and ins[4] in guards and ins[4] not in drawn]
        while todo:
            i = todo.pop()
            if i in moved or i < start:
                continue
            moved.add(i)
            todo.extend(producer[v] for k, v in instrs[i][2] if k == "s" and v in producer)
        result.append(instrs[:start] + [instrs[i] for i in sorted(moved)]
                      + [ins for i, ins in enumerate(instrs[start:], start) if i not in moved])
    return result


def _zeros_as(value: Any) -> Any:
    """Zeros of ``value``'s shape and dtype, as a probe's stand-in (a broadcast scalar: no memory
    of its size), or ``value`` itself where its shape is not known (a lazy backend's)."""
    if any(n is None or n != n for n in value.shape):
        return value
    xp = backend_of_type(type(value)).xp
    return xp.broadcast_to(xp.zeros((), dtype=value.dtype), tuple(value.shape))


def build(inputs: Sequence[SymbolicArray], values: Sequence[Any], targets: Sequence[SymbolicArray],
          givens: dict | None = None, *, optimize: bool = True, borrowed: Sequence[int] = ()) -> Program:
    with draws_aside():  # (the trace's random draws are not the program's: they left the shared generator)
        tracer, in_slots, refs = trace(inputs, values, targets, givens)
    return Program(tracer, in_slots, refs, optimize=optimize, borrowed=borrowed)

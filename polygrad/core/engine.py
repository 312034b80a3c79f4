"""The backward engine: reverse topological traversal in three named steps.

Nodes are visited newest first (a node is created after the creators of its
inputs), so every node runs once, after all gradients flowing into it have
been summed, and a branch is finished (its arrays freed) before the next.
One pass (:func:`backward`, its state a :class:`_Pass`) repeats two steps
until no node is left:

* route: send each new gradient to a leaf's running sum, or to the slot of
  the node that made the variable it belongs to;
* visit: take the newest node, run its rules (with, where anything watches it,
  the variable hooks of its outputs and the function hooks around it:
  ``_Pass._run_watched``), free what it saved;

and then ``deliver``s the leaves' sums to their ``.grad`` (or to ``pg.grad``'s
result). Gradients of intermediate outputs live only until their node has run.
The two steps are written inline in :func:`backward`'s loop, which runs them
once per node; everything else a node may need is in the methods of ``_Pass``."""

from __future__ import annotations

import functools
import heapq
import numbers
import sys
import warnings
from typing import Any, Sequence

from polygrad.core import config, hooks as _hooks
from polygrad.core.debug import check_finite, is_finite
from polygrad.core.dispatch import backend_of_type, has_namespace
from polygrad.core.op import GRAPH_OPS
from polygrad.core.variable import _ACCUMULATE, Variable, _same_shape, _size, admit, admit_grad, dtype_kind


def _seed(y: Variable, g: Any, create_graph: bool) -> Any:
    """The initial gradient of output ``y``: ``g``, or ones for a one-element ``y``."""
    if g is None:  # made here, like y: only a gradient the caller gives passes the gate
        xp = backend_of_type(type(y._data)).xp
        if y._node is not None and y._node.accepts_no_grad:
            # e.g. a stochastic sample: its node ignores output gradients (the reward drives it)
            g = xp.zeros_like(y._data)
        elif _size(y._data.shape) != 1:
            raise RuntimeError(
                f"polygrad: backward from {y._describe()} needs a gradient argument: an initial gradient "
                f"is created implicitly only for outputs of one element (a scalar loss)"
            )
        elif xp.isdtype(y._data.dtype, "complex floating"):  # as PyTorch and JAX: 1 would pick Re(y)
            raise complex_loss_error(f"backward from {y._describe()}", y._data.dtype)
        else:
            g = xp.ones_like(y._data)
        return Variable._make(g) if create_graph else g
    given = g._data if isinstance(g, Variable) else g
    g = admit_grad(g, y._data, f"the gradient given to backward for {y._describe()}", user=True)
    if (g._data if isinstance(g, Variable) else g) is given:
        # The first rules get the seed as their g, and pg.grad may return it: a rule that wrote
        # into its g (``g *= 3``) changed the caller's array, and every later pass from it. The
        # pass starts from a copy of its own (recorded where it is a Variable in a graph, so a
        # gradient with respect to the seed still reaches it).
        if create_graph and isinstance(g, Variable):
            with config.force_backprop_mode():  # (as the pass records, even called under no_backprop_mode)
                g = _own(g)
        else:
            g = _copy(given)
    if create_graph:
        return g if isinstance(g, Variable) else Variable._make(g)
    return g._data if isinstance(g, Variable) else g


def _no_graph_error(what: str) -> RuntimeError:
    """The error for differentiating an output (``what``) that has no graph."""
    return RuntimeError(
        f"{what}, which does not require grad and was made by no function (a constant, or made in "
        f"no_backprop_mode or from volatile inputs): there is nothing to differentiate")


def _refuse_no_graph(outputs: Sequence[Variable]) -> None:
    """pg.grad (without allow_unused) of outputs none of which has a graph: backward's error,
    not "input i is not used" (it was; the outputs recorded no graph of it)."""
    if not any(y._requires_grad or y._node is not None for y in outputs):
        raise _no_graph_error(f"polygrad.grad of {outputs[0]._describe()}" if len(outputs) == 1
                              else f"polygrad.grad of each of its {len(outputs)} outputs")


def unused_input_error(i: int, what: str, why: str) -> RuntimeError:
    """pg.grad's error (without allow_unused) for its input ``i`` (``what``) that has no gradient
    (``why``): eager's, and a symbolic graph's."""
    return RuntimeError(f"polygrad.grad: input {i} ({what}) {why}, so it has no gradient; pass allow_unused=True "
                        f"to get None for it")


def complex_loss_error(what: str, dtype: Any, symbolic: bool = False) -> RuntimeError:
    """The error for a gradient asked of a complex loss with no initial gradient given (``symbolic``:
    a compiled gradient, which takes none)."""
    if symbolic:
        return RuntimeError(f"polygrad: {what} of dtype {dtype}: a gradient is taken of a real cost only (a "
                            f"complex one has none); differentiate pg.real(cost) or pg.abs(cost)")
    return RuntimeError(
        f"polygrad: {what} of dtype {dtype} needs a gradient argument: an initial gradient is created "
        f"implicitly only for real outputs (a complex loss has none); differentiate pg.real(y) or pg.abs(y), "
        f"or pass the gradient")


def _apply_var_hooks(hooks: list, g: Any, create_graph: bool, shape: tuple, dtype: Any, backend: Any,
                     what: str) -> Any:
    """The hooks registered on a variable (``what``, of ``shape`` and ``dtype``), applied to its gradient.

    Each hook is handed an array of its own (a graph's Variable under ``create_graph``): the
    gradient it sees may be shared with another input's or with what an earlier hook kept, so a
    hook that writes into it (``g *= 10``, returning None) changes this gradient only, as it
    means to. (Where arrays are not written in place, dask's, such a write only rebinds the
    hook's name: it cannot be told from a hook that observes, and a hook must return the new
    gradient there, as docs/variables-and-backprop.md says.)"""
    debug = config.debug.get()
    for hook in tuple(hooks):
        seen = _own(g)  # (create_graph: a new Variable, recorded as every copy backward hands out is)
        finite = not debug or is_finite(seen)  # (asked before the hook, which may write into it)
        new = hook(seen)
        if new is None:
            g = seen
        else:
            new = admit(new, shape, dtype, backend, f"the value the hook {_name(hook)} registered on {what} returned",
                        user=True)
            g = new if create_graph or not isinstance(new, Variable) else new._data
        if finite and debug and not is_finite(g):
            raise FloatingPointError(f"polygrad debug: the hook {_name(hook)} registered on {what} turned its "
                                     f"finite gradient into one that contains NaN or Inf")
    return g


def _name(hook: Any) -> str:
    if type(hook) is functools.partial and not hook.args and not hook.keywords:
        hook = hook.func  # (a function registered twice: see Variable.register_hook)
    return getattr(hook, "__qualname__", None) or repr(hook)


def _apply_leaf_hooks(v: Variable, g: Any, create_graph: bool) -> Any:
    d = v._data
    return _apply_var_hooks(v._hooks, g, create_graph, tuple(d.shape), d.dtype, backend_of_type(type(d)), v._describe())


class _Outcome:
    """How a backward pass ended, as the nodes it freed see it: ``failure`` is None, or where and
    why the pass raised (see :func:`polygrad.core.node.freed_error`)."""

    __slots__ = ("failure",)

    def __init__(self) -> None:
        self.failure: str | None = None


class _Pass:
    """One backward pass: the gradients on their way, and what the caller asked for."""

    def __init__(self, create_graph: bool, retain_grad: bool, retain_graph: bool, inputs: Sequence[Variable] | None):
        self.grads: dict[Any, list] = {}  # node -> gradients of its outputs, until it runs
        self.heap: list = []  # (-seq, node): newest first
        self.leaves: dict[int, list] = {}  # id(leaf) -> [leaf, summed gradient]
        self.create_graph = create_graph
        self.retain_grad = retain_grad
        self.retain_graph = retain_graph
        self.hooks = _hooks._active.get()
        self.debug = config.debug.get()
        # Sums this pass allocated itself: later contributions are added in place.
        self.owned: dict[int, Any] | None = None if create_graph else {}
        # pg.grad: where each requested input sits in the graph, and what it got
        self.targets = None if inputs is None else {
            (v._node, v._index) if v._node is not None else (None, id(v)): i for i, v in enumerate(inputs)}
        self.captured: list = [None] * (0 if inputs is None else len(inputs))
        self.capture_only: set = set()  # pg.grad: nodes visited to capture a gradient, not run (see _prune)
        self.pruned: dict = {}  # pg.grad: node -> its edges, None where no requested input lies behind
        # ids of gradient arrays the user holds too (retained grads, what hooks saw):
        # a leaf never gets one of them as its .grad, but a copy
        self.exposed: set[int] = set()
        # what the nodes this pass frees keep (never the pass itself: it holds the leaves and their
        # gradients, which a loss kept after backward kept alive, step after step, in cycles
        # through retained gradients): the failure, set if the pass raises, that they then report
        self.outcome = _Outcome()
        self.starts: set[int] = set()  # the variables backward starts from keep their .grad
        self.retained: list[tuple] = []  # (intermediate, its .grad): written with the leaves
        # Whether anything watches every node (hooks, debug mode, retained or captured gradients);
        # a node's own variable or function hooks are asked per node.
        self.watched = bool(self.hooks or self.debug or retain_grad or self.targets)

    def seeds(self, outputs: Sequence[Variable], grad_outputs: Sequence[Any]) -> list:
        """The pass's starting gradients, as ``(edge, gradient)`` pairs: one per output."""
        pending = []
        for y, g in zip(outputs, grad_outputs):
            if not y._requires_grad and y._node is None:
                if self.targets is not None:  # pg.grad: a constant output contributes nothing to any input
                    continue
                raise _no_graph_error(f"polygrad: backward from {y._describe()}")
            seed = _seed(y, g, self.create_graph)
            self.starts.add(id(y))
            # (an output need not require grad: a stochastic sample)
            pending.append(((y._node, y._index) if y._node is not None else (None, y), seed))
        if self.targets is not None:
            self._prune(outputs)
        return pending

    def _prune(self, outputs: Sequence[Variable]) -> None:
        """pg.grad: run only the nodes between the outputs and the requested inputs (as PyTorch
        does). A node runs its rules when one of its inputs leads to a requested input, and
        without create_graph only the rules of those inputs (a primitive's; a Function's
        backward runs whole); a node that only makes one is visited to capture the gradient,
        not run (nor freed); the rest is never visited (a placeholder slot keeps it off the
        heap): their hooks do not fire and what they saved stays for a later backward."""
        targets = self.targets
        order: list = []  # every node reachable from the outputs, each after the nodes it reads
        seen: set = set()
        stack = [(y._node, False) for y in outputs if y._node is not None]
        while stack:
            n, done = stack.pop()
            if done:
                order.append(n)
                continue
            if n in seen:
                continue
            seen.add(n)
            stack.append((n, True))
            stack.extend((e[0], False) for e in n.edges if e is not None and e[0] is not None and e[0] not in seen)
        runs: set = set()

        def leads(edge: Any) -> bool:
            """Whether ``edge`` reaches a requested input: one itself, or a node that runs."""
            if edge is None:
                return False
            n, where = edge
            if n is None:
                return (None, id(where)) in targets
            return (n, where) in targets or n in runs

        for n in order:
            ahead = [leads(e) for e in n.edges]
            if any(ahead):
                runs.add(n)
                if not self.create_graph and not all(a or e is None for a, e in zip(ahead, n.edges)):
                    self.pruned[n] = tuple(e if a else None for a, e in zip(ahead, n.edges))  # (_run_watched)
            elif any((n, i) in targets for i in range(len(n.outputs))):
                self.capture_only.add(n)
            else:
                self.grads[n] = [None] * len(n.outputs)

    def _sum(self, a: Any, b: Any) -> Any:
        """a + b, in place into ``a`` when this pass allocated ``a`` itself."""
        owned = self.owned
        if owned is not None and owned.get(id(a)) is a:
            try:
                a += b
                return a
            except (TypeError, ValueError):
                pass
        c = a + b
        if owned is not None and not isinstance(c, Variable):
            owned[id(c)] = c
        return c

    def check_sum(self, g: Any, what: str, node: Any = None) -> None:
        """Debug mode: a FloatingPointError where the sum of finite gradients reaching ``what``
        overflowed (each rule's result is checked after it runs; their sums are checked here)."""
        if not is_finite(g):
            site = "" if node is None else f" ({node.label} was called at {getattr(node, 'site', None) or '<unknown>'})"
            raise FloatingPointError(f"polygrad debug: the gradient reaching {what} contains NaN or Inf, where each "
                                     f"gradient summed into it was finite: their sum overflowed (or the seed "
                                     f"given to backward holds them){site}")

    def _run_watched(self, node: Any, gys: list) -> Any:
        """``node``'s backward with what watches it: retained, captured or hooked output
        gradients, function hooks around it, debug mode's finiteness check after it."""
        if self.retain_grad or node._var_hooks or self.targets:
            self._outputs_seen(node, gys)
        gys = tuple(gys)
        if self.debug:  # each rule's result was checked: a sum of them may still overflow
            for i, g in enumerate(gys):
                self.check_sum(g, f"output {i} of {node.label}", node)
        captures_only = node in self.capture_only
        # a node visited only to capture a gradient runs no backward step for hooks to bracket
        hooks = () if captures_only else _hooks.with_local(self.hooks, node._local_hooks)
        if hooks:
            in_data = node._hook_in_data()
            # arrays, as in_data, with create_graph too (Chainer's out_grad_array)
            seen = tuple(g._data if isinstance(g, Variable) else g for g in gys) if self.create_graph else gys
            for h in hooks:
                h.backward_preprocess(node, in_data, seen)
        # The rules of inputs that lead to no requested input do not run (pruned only without
        # create_graph, where a rule's result refers to the inputs through the node's own edges).
        pruned = self.pruned.get(node)
        if pruned is not None:
            edges, node.edges = node.edges, pruned
            try:
                gxs = node._backward(gys, self.create_graph)
            finally:
                node.edges = edges
        else:
            gxs = node._backward(gys, self.create_graph) if node.edges and not captures_only else ()
        if hooks:
            for h in hooks:
                h.backward_postprocess(node, in_data, seen)
        if self.debug:
            check_finite(gxs, "backward result for input", node)
        if not self.retain_graph and not captures_only:
            node._release(self.outcome)
        return gxs

    def _outputs_seen(self, node: Any, gys: list) -> None:
        """The gradients of ``node``'s outputs, complete now: capture, hook, retain them (and,
        without retain_grad, clear a gradient an earlier pass retained: Chainer sets the
        gradients of intermediate variables to None)."""
        targets = self.targets
        hooked = node._var_hooks if type(node._var_hooks) is dict else None  # (see register_hook)
        for i, ref in enumerate(node.outputs):
            y = ref()
            unhooked = gys[i]
            if hooked is not None and i in hooked and gys[i] is not None:  # before capture, as for a leaf
                hooks, shape, dtype, backend, what = hooked[i]
                self.exposed.add(id(gys[i]))
                gys[i] = _apply_var_hooks(hooks, gys[i], self.create_graph, shape, dtype, backend, what)
                self.exposed.add(id(gys[i]))
            if y is not None and gys[i] is not None and gys[i].dtype != y._data.dtype:
                # a rule's gradient of another precision (tensordot of float32 and float64): in
                # the output's dtype, as a leaf's is, where it is captured, retained or passed on
                gys[i] = admit_grad(gys[i], y._data, f"the gradient backward computed for {y._describe()}")
            if targets and (node, i) in targets:
                self.captured[targets[(node, i)]] = gys[i]
            if y is None:
                continue
            if not self.retain_grad and self.targets is None and y._grad is not None and id(y) not in self.starts:
                self.retained.append((y, None))  # (pg.grad touches no .grad)
            if gys[i] is None:
                continue
            if self.retain_grad:
                # A variable backward starts from keeps its gradient before its hooks: its .grad is the next
                # backward's initial error (Chainer's), which the hooks would otherwise scale a second time
                g = unhooked if id(y) in self.starts else gys[i]
                if g.dtype != y._data.dtype:
                    g = admit_grad(g, y._data, f"the gradient backward computed for {y._describe()}")
                if self.create_graph:
                    g = _own(g)  # as a leaf's (see deliver)
                elif id(g) in self.exposed or (g.shape == () and not _owns_memory(g)):
                    g = _copy(g)  # two retained gradients never share an array; a read-only scalar as below
                self.retained.append((y, g))
                if not node._var_hooks:
                    node._var_hooks = True  # a later pass without retain_grad clears it
                self.exposed.add(id(g))

    def deliver(self) -> list | None:
        """Leaves' sums into ``.grad`` (accumulated), or into ``pg.grad``'s result. Every sum,
        hook and check runs before any ``.grad`` is written: a hook or a check that raises leaves
        every ``.grad`` as it was (a retry counted the leaves written before it twice)."""
        firsts: dict[int, int] = {}
        for v, g in self.leaves.values():
            firsts[id(g)] = firsts.get(id(g), 0) + 1
        ready = []
        targets = self.targets
        for v, g in self.leaves.values():
            if targets is not None and (None, id(v)) not in targets:
                continue  # pg.grad: a leaf not asked for is neither checked, cast nor hooked
            if self.debug:
                self.check_sum(g, v._describe())
            d = v._data
            if (type(g) is not type(d) and backend_of_type(type(getattr(g, "_data", g))) is not backend_of_type(
                    type(d))) or g.dtype != d.dtype or g.shape != d.shape:
                # a rule's gradient of another precision: cast it; of another backend (the leaf was
                # moved, link.to_backend, between forward and backward): refused, naming both
                g = admit_grad(g, d, f"the gradient backward computed for {v._describe()}")
            if v._hooks:
                self.exposed.add(id(g))
                g = _apply_leaf_hooks(v, g, self.create_graph)
                self.exposed.add(id(g))
            if targets is not None:
                self.captured[targets[(None, id(v))]] = g
                continue
            ready.append((v, g))
        with _ACCUMULATE:  # (from reading .grad to the last write: threads lose no sum)
            writes = []
            for v, g in ready:
                old = v._grad
                if old is not None:  # the sum is a new array
                    if not self.create_graph and isinstance(old, Variable):
                        old = old._data  # (a .grad made to require grad: summed outside the graph, which grew per pass)
                    g = _accumulate(v, old, g)
                    if self.debug:
                        self.check_sum(g, f"the .grad of {v._describe()} (accumulated over backward passes)")
                    if self.create_graph and not _owns_memory(g._data if isinstance(g, Variable) else g):
                        g = _own(g)  # (NumPy's sum of 0-d arrays is a read-only scalar)
                elif self.create_graph:
                    # A Variable of its own, over an array of its own (the gradient may be another
                    # leaf's, the caller's seed, a read-only broadcast view), recorded: .grad_var
                    # is differentiated again through the copy.
                    g = _own(g)
                elif self.owned.get(id(g)) is not g and (
                        firsts.get(id(g), 0) > 1 or id(g) in self.exposed or not _owns_memory(g)):
                    # The user gets an array of their own: not shared with another leaf or with
                    # an array the caller holds, not a view.
                    g = _copy(g)
                if g.shape == () and not self.create_graph and not _owns_memory(g):
                    g = _copy(g)  # a read-only scalar (NumPy's): `g = x.grad; g *= 2` would change nothing
                writes.append((v, g))
            for v, g in self.retained + writes:
                v._grad = g
        if self.create_graph:
            _warn_of_cycles(writes)
        return self.captured if self.targets is not None else None


def backward(outputs: Sequence[Variable], grad_outputs: Sequence[Any], *, retain_grad: bool = False,
             retain_graph: bool = False, create_graph: bool = False, inputs: Sequence[Variable] | None = None) -> list | None:
    """Backprop from ``outputs``. Accumulates into leaves' ``.grad``; or, with
    ``inputs``, returns their gradients and touches no ``.grad`` (``pg.grad``)."""
    run = _Pass(create_graph, retain_grad, retain_graph, inputs)
    pending = run.seeds(outputs, grad_outputs)
    token = config.enable_backprop.set(create_graph)
    node = None
    grads, leaves, heap, owned, add, pop, push = run.grads, run.leaves, run.heap, run.owned, run._sum, heapq.heappop, heapq.heappush
    watched = run.watched
    try:
        while True:
            # Route each new gradient: to a leaf's running sum, or to the slot of the node that
            # made the variable it belongs to (inlined: it runs once per node).
            for edge, gx in pending:
                if edge is None or gx is None:
                    continue
                n, where = edge
                if n is None:
                    slot = leaves.get(id(where))
                    if slot is None:
                        leaves[id(where)] = [where, gx]
                    else:
                        slot[1] = add(slot[1], gx)
                    continue
                slot = grads.get(n)
                if slot is None:
                    slot = grads[n] = [None] * len(n.outputs)
                    push(heap, (-n.seq, n))
                slot[where] = gx if slot[where] is None else add(slot[where], gx)
            pending = gx = None  # let gradients already routed go
            if not heap:
                break
            # Visit the newest node: its rules (with what watches it, if anything does), then
            # free what it saved (if this pass fails, the node can say so: see freed_error).
            node = pop(heap)[1]
            gys = grads.pop(node)
            if owned:  # a gradient handed to a rule is no longer this pass's to write into
                for g in gys:
                    owned.pop(id(g), None)
            if watched or node._var_hooks or node._local_hooks:
                gxs = run._run_watched(node, gys)  # (it frees what the node saved)
            else:  # a node cut off by unchain() has no edges: nowhere to send gradients
                gxs = node._backward(tuple(gys), create_graph) if node.edges else ()
                if not retain_graph:
                    node._release(run.outcome)
            pending = zip(node.edges, gxs)
            gys = gxs = None  # the gradients live on only in pending, until routed
    except BaseException as exc:
        where = f" at {node.label}" if node is not None else ""
        run.outcome.failure = f"{where}: {type(exc).__name__}: {exc}"
        raise
    finally:
        config.enable_backprop.reset(token)
    try:
        return run.deliver()
    except BaseException as exc:  # a leaf's hook, a check of its sum: the nodes are freed already
        run.outcome.failure = f" delivering the leaves' gradients: {type(exc).__name__}: {exc}"
        raise


def _warn_of_cycles(writes: list) -> None:
    """PyTorch's warning, where a leaf's ``.grad`` now has a graph: the graph holds the leaf (its
    edge), the leaf holds the graph (``.grad``), so neither, nor any array that graph saved, is
    freed before Python's cyclic garbage collector runs (pg.grad writes no .grad: no cycle)."""
    for v, g in writes:
        if isinstance(g, Variable) and g._node is not None:
            frame, level = sys._getframe(), 1
            while frame.f_back is not None and frame.f_globals.get("__name__", "").startswith("polygrad.core."):
                frame, level = frame.f_back, level + 1  # (the user's line: y.backward or pg.backward)
            warnings.warn(
                f"polygrad: backward(create_graph=True) made the .grad of {v._describe()} a Variable with a graph, "
                f"which refers back to the leaf: a reference cycle, which keeps the leaf, its gradient and every "
                f"array that graph saved until Python's garbage collector finds it. Use pg.grad(..., "
                f"create_graph=True), which writes no .grad, or call cleargrad() (link.cleargrads()) when done "
                f"with .grad_var", UserWarning, stacklevel=level)
            return


def _accumulate(v: Variable, old: Any, g: Any) -> Any:
    """``old + g``: gradient ``g`` summed into ``v``'s ``.grad``, ``old``, of the variable's dtype.
    An error where the data changed shape, backend or kind of dtype since ``.grad`` was written
    (``old + g`` broadcast, mixed backends, or a complex sum on real data); a ``.grad`` of another
    precision of the same kind (the data was cast) gives a sum cast to the data's, as a gradient
    from backward is (``old + g`` promoted: a float64 ``.grad`` stayed on float32 data)."""
    if not _same_shape(old.shape, g.shape, lazy=True):
        raise ValueError(
            f"polygrad: cannot accumulate the gradient of {v._describe()} into its .grad: .grad has shape "
            f"{tuple(old.shape)}, the gradient {tuple(g.shape)} (the data changed shape since .grad was written); "
            f"call cleargrad() first")
    was, now = backend_of_type(type(getattr(old, "_data", old))), backend_of_type(type(getattr(g, "_data", g)))
    if was is not now:  # (a NumPy scalar and a 0-d array are of one backend)
        raise TypeError(
            f"polygrad: cannot accumulate the gradient of {v._describe()} into its .grad: .grad is on backend "
            f"{was.name!r}, the gradient on {now.name!r} (the data moved to "
            f"another backend since .grad was written); call cleargrad() first")
    d = v._data
    if old.dtype == d.dtype:
        return old + g
    if dtype_kind(old.dtype, now) != dtype_kind(d.dtype, now):
        raise ValueError(
            f"polygrad: cannot accumulate the gradient of {v._describe()} into its .grad: .grad has dtype "
            f"{old.dtype}, the variable {d.dtype} (the data changed dtype since .grad was written); call "
            f"cleargrad() first")
    return admit_grad(old + g, d, f"the .grad of {v._describe()} (accumulated over backward passes)")


def _copy(g: Any) -> Any:
    return backend_of_type(type(g)).xp.asarray(g, copy=True)


def _own(g: Any) -> Any:
    """(create_graph) a copy of gradient ``g``: a Variable recorded in the graph, over an array of its own."""
    return GRAPH_OPS.asarray(g, copy=True) if isinstance(g, Variable) else _copy(g)


def _owns_memory(g: Any) -> bool:
    return backend_of_type(type(g)).owns_memory(g)


def _per_output(grads: Any, single: bool, n: int, who: str, what: str, of: str) -> tuple:
    """One seed per output: None for each where ``grads`` is None; ``(grads,)`` where ``grads`` is
    one array or Variable (as PyTorch 0.x wraps a lone gradient, the outputs given as a list or not:
    iterating it took the rows of an array for gradients), or where one output was given as a
    Variable and ``grads`` is not a list or tuple."""
    if grads is None:
        return (None,) * n
    lone = (isinstance(grads, (Variable, numbers.Number)) or has_namespace(grads)
            or (single and not isinstance(grads, (list, tuple))))
    try:
        gs = (grads,) if lone else tuple(grads)
    except TypeError:  # (a symbolic array: "'SymbolicArray' object is not iterable", naming nothing)
        raise TypeError(f"{who}: {what} must be one gradient or a list or tuple of them, one per "
                        f"{of[:-1]}; got {type(grads).__name__}") from None
    if len(gs) != n:  # zip dropped the extra outputs: a gradient of some of them
        raise ValueError(f"{who}: got {len(gs)} {what} for {n} {of} (give None for one that gets none)")
    return gs


def backward_all(variables: Any, grad_variables: Any = None, retain_graph: bool | None = None,
                 create_graph: bool = False, retain_variables: bool | None = None, *, retain_grad: bool = False) -> None:
    """Backprop from several variables at once (PyTorch 0.x ``autograd.backward``).

    ``grad_variables`` gives one gradient per variable (None: the implicit one,
    or nothing for a stochastic sample, whose reward drives its gradient).
    """
    single = isinstance(variables, Variable)
    vs = (variables,) if single else tuple(variables)
    gs = _per_output(grad_variables, single, len(vs), "polygrad.backward", "gradients", "variables")
    if retain_variables is not None and retain_graph is None:
        retain_graph = retain_variables
    if retain_graph is None:  # PyTorch's default, as pg.grad's: an explicit False frees, create_graph or not
        retain_graph = create_graph
    backward(vs, gs, retain_grad=retain_grad, retain_graph=bool(retain_graph), create_graph=create_graph)


def grad(
    outputs: Any,
    inputs: Any,
    grad_outputs: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    allow_unused: bool = False,
) -> list:
    """Gradients of ``outputs`` with respect to ``inputs``, without touching ``.grad``.

    Returns a list aligned with ``inputs``. An input the outputs do not depend
    on is an error (as in PyTorch and Theano), unless ``allow_unused=True``: then
    its gradient is None. With ``create_graph=True`` the gradients are Variables
    with a graph of their own (for higher-order derivatives); otherwise they are
    Variables without one."""
    single_out = isinstance(outputs, Variable)
    outputs = (outputs,) if single_out else tuple(outputs)
    inputs_t = (inputs,) if isinstance(inputs, Variable) else tuple(inputs)
    grad_outputs = _per_output(grad_outputs, single_out, len(outputs), "polygrad.grad", "output gradients", "outputs")
    for v in inputs_t:
        if not isinstance(v, Variable):
            raise TypeError(f"polygrad.grad: inputs must be Variables, got {type(v).__name__}")
    # A backend may differentiate its own way (symbolic graphs build gradient expressions).
    override = backend_of_type(type(outputs[0]._data)).grad
    if override is not None:
        return override(outputs, inputs_t, tuple(grad_outputs), allow_unused=allow_unused)
    if not allow_unused:
        _refuse_no_graph(outputs)
    if retain_graph is None:
        retain_graph = create_graph
    # An input listed twice gets its gradient twice (the pass tells inputs apart by graph position).
    unique = list({id(v): v for v in inputs_t}.values())
    gs = backward(outputs, tuple(grad_outputs), retain_graph=retain_graph, create_graph=create_graph, inputs=unique)
    if len(unique) != len(inputs_t):
        by_id = {id(v): g for v, g in zip(unique, gs)}
        seen: set[int] = set()
        gs = []
        for v in inputs_t:
            g = by_id[id(v)]
            if id(v) in seen and g is not None and not create_graph:
                g = _copy(g)  # two results never share an array
            seen.add(id(v))
            gs.append(g)
    if not allow_unused:
        for i, (v, g) in enumerate(zip(inputs_t, gs)):
            if g is None:
                why = ("does not require grad" if not v._requires_grad and v._node is None
                       else "is not used to compute the outputs")
                raise unused_input_error(i, v._describe(), why)
    return [g if g is None or isinstance(g, Variable) else Variable._make(g) for g in gs]

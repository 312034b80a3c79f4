"""Graph nodes: one node per function application, and the in-place version counter.

::

    x.node < f < y          x = Variable(...); y = f(x)
           +  g < z          z = g(x): a branch; backward sums both gradients

A node holds, per input, an *edge*: ``(creator_node, output_index)`` for an
input made by another function, ``(None, variable)`` for a leaf that requires
grad, ``None`` for an input that needs no gradient. It holds its outputs only
through weak references, so the user's handles (``Variable``) go away as soon as
the user drops them; what backward needs is kept by the node itself, and only
what it declared (``retain_inputs`` / ``retain_outputs``, a row's ``saves``).

Every node is made by :func:`polygrad.core.primitive.apply`, whatever its kind:
:class:`~polygrad.core.primitive.Primitive` (a row of the op table, and its
subclasses such as the stochastic draws) and :class:`~polygrad.core.function.Function`
(the user API). The engine calls ``_backward`` and ``_release`` and knows
nothing else about them.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from collections import OrderedDict
from typing import Any

from polygrad.core import config
from polygrad.core.debug import user_site
from polygrad.core.hooks import FunctionHook

#: Creation order of nodes. Reverse creation order is a topological order of
#: any graph (a node is made after the creators of its inputs), and visiting the
#: newest node first finishes a branch, and frees its arrays, before the next.
next_seq = itertools.count(1).__next__


class Version:
    """The in-place version counter of a Variable's data, shared with its views and
    detached copies: ``n`` counts the in-place changes; ``site`` is where the last
    one happened (recorded in debug mode only, for the error message); ``views``
    the live Variables recorded as views over this data (by id), which follow
    their base when it is written in place."""

    # Class-level defaults and no ``__init__``: one is made with every Variable, on the hot
    # path of apply, where an instance without a constructor call costs half as much. (With
    # it, before another thread can see it: at first use two threads could each make one, see
    # version_of; and making one costs less than the lock that would take.)
    n: int = 0
    site: tuple[str, str] | None = None
    views: dict[int, Any] | None = None
    # A weak reference to the user Function whose forward made this array and may hold it for its
    # backward (Function._may_hold): an in-place write through any Variable of this counter (the
    # output, its views, a detach()ed one) gives that Variable a new array (Variable._write).
    holder: Any = None

    @classmethod
    def at(cls, n: int) -> "Version":
        """A counter of its own that starts at ``n``."""
        box = cls()
        box.n = n
        return box

    def __getstate__(self) -> tuple:
        return self.n, self.site  # the views are live objects of this process: they do not travel

    def __setstate__(self, state: tuple) -> None:
        self.n, self.site = state

    def add_view(self, v: Any) -> None:
        """Remember ``v``, a view over this data with a graph, while it lives."""
        views = self.views
        if views is None:
            with _MAKING:  # (as in version_of: two threads' views of one base share one dict)
                views = self.views
                if views is None:
                    views = self.views = {}
        key = id(v)
        views[key] = weakref.ref(v, lambda _, views=views, key=key: views.pop(key, None))

    def bump(self, opname: str) -> None:
        """Count one in-place change (and, in debug mode, remember where it happened)."""
        self.n += 1
        if config.debug.get():
            self.site = (user_site(), opname)


#: Held while a counter (or its dict of views) is made on first use; never on the way to one made.
_MAKING = threading.Lock()


def version_of(v: Any) -> Version:
    """The version counter of Variable ``v``, made now if it has none (a view of a raw array, say:
    the others get theirs when they are made). The check and the making are one step under a
    lock: two threads saving a fresh Variable at once each made one, and the graph holding the
    one not kept on ``v`` missed every later in-place write (a wrong gradient, not the in-place
    error). Callers read ``v._vb`` first and call this only when it is None."""
    with _MAKING:
        box = v._vb
        if box is None:
            box = v._vb = Version()
    return box


class Node:
    """Base of graph nodes (see the module docstring)."""

    __slots__ = ("edges", "seq", "outputs", "_local_hooks", "_var_hooks", "_freed", "site", "__weakref__")

    #: Backward may start at an output of this node without a gradient (a stochastic
    #: sample, whose reward drives the gradient).
    accepts_no_grad = False

    def _init_node(self) -> None:
        self.edges: tuple = ()
        self.seq = 0
        self.outputs: tuple = ()  # weakref.ref to output Variables
        self._local_hooks: "OrderedDict[str, Any] | None" = None
        self._var_hooks = False  # some output Variable has register_hook hooks
        self._freed = False
        self.site: str | None = None  # where user code applied it (debug mode)

    __init__ = _init_node

    # -- what the engine calls ----------------------------------------------
    def _backward(self, grad_outputs: tuple, create_graph: bool) -> tuple:
        """Gradients for each input (aligned with ``edges``; None where none)."""
        raise NotImplementedError

    def _release(self, by: Any = True) -> None:
        """Free what backward needed (after a backward without ``retain_graph``); ``by`` is how
        the pass that did ended (an ``_Outcome``: what a later backward names if it failed)."""
        self._freed = by

    def _protect_saved(self, array: Any, copy: bool) -> None:
        """``array`` (an input this node may have saved) is about to be written in
        place by the in-place op this node computes: keep a private copy (or, when
        the data is rebound rather than written, just stop version-checking it)."""

    def _hook_in_data(self) -> tuple:
        """Input arrays shown to function hooks in backward (None where released)."""
        return ()

    def _input_meta(self, i: int) -> tuple:
        """``(shape, dtype)`` of input ``i`` where this node still knows them, else ``(None, None)``."""
        return None, None

    def _constant_input(self, i: int) -> tuple | None:
        """What a drawing of the graph shows for input ``i``, one that needs no gradient: ``(reference,
        name, shape, dtype)`` (a weak reference to its Variable, or None), or None for a Python scalar."""
        shape, dtype = self._input_meta(i)
        if shape == () and dtype is None:
            return None  # recorded as a Python scalar
        return None, None, shape, dtype

    # -- pickling (graphs travel to dask workers) -------------------------------------
    def __getstate__(self) -> dict:
        state = dict(getattr(self, "__dict__", {}))
        for cls in type(self).__mro__:
            for name in getattr(cls, "__slots__", ()):
                if name in ("__dict__", "__weakref__") or name in state:
                    continue
                try:
                    state[name] = object.__getattribute__(self, name)
                except AttributeError:
                    pass
        # outputs are weak references: pickle the Variables they point to (None if gone)
        state["outputs"] = tuple(r() for r in state.get("outputs", ()))
        return state

    def __setstate__(self, state: dict) -> None:
        outputs = state.pop("outputs", ())
        for name, value in state.items():
            object.__setattr__(self, name, value)
        object.__setattr__(self, "outputs", tuple(weakref.ref(v) if v is not None else _dead for v in outputs))

    # -- shared behaviour ------------------------------------------------------
    @property
    def label(self) -> str:
        """Short text that names the function (its class name by default)."""
        return type(self).__name__

    # -- walking the graph (Chainer's and PyTorch 0.x's attributes, on every kind of node) --------
    @property
    def inputs(self) -> tuple:
        """The input Variables this node still knows: a leaf, or the live output of the input's creator
        (None for an input that needs no gradient, or whose Variable is gone)."""
        out = []
        for edge in self.edges:
            if edge is None:
                out.append(None)
            elif edge[0] is None:
                out.append(edge[1])
            else:
                out.append(edge[0].outputs[edge[1]]())
        return tuple(out)

    @property
    def num_inputs(self) -> int:
        return len(self.edges)

    @property
    def num_outputs(self) -> int:
        return len(self.outputs)

    @property
    def needs_input_grad(self) -> tuple:
        """Per input, whether backward computes its gradient."""
        return tuple(e is not None for e in self.edges)

    @property
    def previous_functions(self) -> tuple:
        """Per input: ``(creator, output index)``, or ``(leaf variable, 0)``, or None (PyTorch 0.x)."""
        return tuple(None if e is None else (e[1], 0) if e[0] is None else e for e in self.edges)

    @property
    def rank(self) -> int:
        """Chainer's rank: 0 for a node fed by leaves only, else one more than its inputs' creators'."""
        ranks: dict = {}
        stack = [self]
        while stack:
            n = stack[-1]
            todo = [e[0] for e in n.edges if e is not None and e[0] is not None and e[0] not in ranks]
            if todo:
                stack.extend(todo)
                continue
            stack.pop()
            ranks[n] = max((ranks[e[0]] + 1 for e in n.edges if e is not None and e[0] is not None), default=0)
        return ranks[self]

    @property
    def local_function_hooks(self) -> "OrderedDict[str, Any]":
        """The hooks registered on this function with :meth:`add_hook`, by name."""
        if self._local_hooks is None:
            self._local_hooks = OrderedDict()
        return self._local_hooks

    def add_hook(self, hook: Any, name: str | None = None) -> None:
        """Register ``hook`` on this function only (``name`` must be unique here)."""
        if not isinstance(hook, FunctionHook):  # (as Chainer's; an object failed at hook.name, a class at added())
            got = f"the class {hook.__name__}" if isinstance(hook, type) else f"a value of type {type(hook).__name__}"
            hint = f": make one, add_hook({hook.__name__}())" if isinstance(hook, type) and issubclass(
                hook, FunctionHook) else " (subclass pg.FunctionHook)"
            raise TypeError(f"polygrad: {self.label}.add_hook expects a FunctionHook instance, got {got}{hint}")
        hooks = self.local_function_hooks
        name = hook.name if name is None else name
        if name in hooks:
            raise KeyError(f"polygrad: {self.label} already has a function hook named {name!r}")
        hooks[name] = hook
        try:
            hook.added(self)
        except BaseException:  # a hook whose added() raises is not registered
            del hooks[name]
            raise

    def delete_hook(self, name: str) -> None:
        """Unregister the hook registered under ``name``."""
        hooks = self._local_hooks
        if not hooks or name not in hooks:
            raise KeyError(f"polygrad: {self.label} has no function hook named {name!r}")
        hooks.pop(name).deleted(self)

    def unchain(self) -> None:
        """Purge this node from the graph (Chainer's ``unchain``): its outputs become roots
        (no creator; they keep requiring grad), its inputs and saved arrays are forgotten."""
        for ref in self.outputs:
            v = ref()
            if v is not None and v._node is self:
                v._keep_hooks_from_old_graph()
                v._node = None
                v._index = 0
        self.edges = ()
        self._release()

    def _input_variable(self, i: int, data: Any) -> Any:
        """A Variable standing for input ``i`` (for create_graph): same graph position."""
        from polygrad.core.variable import Variable

        edge = self.edges[i]
        if edge is None:
            return Variable._make(data)
        node, where = edge
        if node is None:
            return where  # the leaf Variable itself
        # The user's own Variable where it is alive (else a stand-in with a counter of its own):
        # the nodes the gradient's graph records then keep its version, so an in-place change
        # of it before a second backward is refused instead of read.
        ref = node.outputs[where]()
        if ref is not None and ref._data is data:
            return ref
        return Variable._make(data, node, where, requires_grad=True)

    def _output_variable(self, i: int, data: Any) -> Any:
        """A Variable standing for output ``i`` (for create_graph): the user's own if alive."""
        from polygrad.core.variable import Variable

        ref = self.outputs[i]()
        if ref is not None and ref._data is data:
            return ref
        return Variable._make(data, self, i, requires_grad=True)


def _dead() -> None:
    """Stands in for the weak reference to an output that no longer exists."""
    return None


def inplace_site(box: Version) -> str:
    """Where the last in-place write counted by ``box`` happened (debug mode notes it): "the in-place
    += at file:line"."""
    site, op = box.site or ("<unknown>", "in-place")
    return f"the in-place {op} at {site}"


def version_error(node: Node, what: str, shape: Any, saved: int, box: Version) -> RuntimeError:
    """The error for an array changed in place after ``node`` saved it for backward."""
    where = ""
    if config.debug.get():
        where = f" (debug: {node.label} was called at {getattr(node, 'site', None) or '<unknown>'}; {inplace_site(box)})"
    return RuntimeError(
        f"polygrad: one of the arrays needed for backward was modified by an in-place operation: "
        f"{node.label} saved its {what} (shape {tuple(shape)}) at version {saved}, "
        f"but it is now at version {box.n}. Compute on a copy, or do the in-place "
        f"operation after backward.{where}"
    )


def freed_error(node: Node) -> RuntimeError:
    """The error for a second backward through ``node``, whose saved arrays are gone."""
    failure = getattr(node._freed, "failure", None)  # the backward pass that freed it, if it failed
    if failure is not None:
        return RuntimeError(
            f"polygrad: cannot backward through {node.label}: an earlier backward pass freed the arrays it "
            f"saved and then failed{failure}. Compute the outputs again (or pass retain_graph=True to "
            f"backward, so that a failed pass can be repeated)."
        )
    return RuntimeError(
        f"polygrad: trying to backward through {node.label} a second time, but the arrays it saved "
        f"were freed after the first backward. Pass retain_graph=True to the first backward "
        f"(retain_variables=True in the PyTorch 0.x spelling), by keyword: backward's second positional "
        f"parameter is Chainer's retain_grad, so y.backward(g, True) keeps intermediate gradients, not the graph."
    )

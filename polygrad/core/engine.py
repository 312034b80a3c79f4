"""The backward engine: reverse topological traversal, one screen long.

Nodes are visited newest first (a node is created after the creators of its
inputs), so every node runs once, after all gradients flowing into it have
been summed, and a branch is finished (its arrays freed) before the next.
Gradients of intermediate outputs live in a dict only until their node has run;
saved arrays are freed right after, unless ``retain_graph``.
"""

from __future__ import annotations

import heapq
from typing import Any, Sequence

from polygrad.core import config, hooks as _hooks
from polygrad.core.dispatch import backend_of_type
from polygrad.core.variable import Variable


def _seed(y: Variable, g: Any, create_graph: bool) -> Any:
    if g is None and getattr(y._node, "accepts_no_grad", False):
        # e.g. a stochastic sample: its node ignores output gradients (the reward drives it)
        g = backend_of_type(type(y._data)).xp.zeros_like(y._data)
    if g is None:
        size = y._data.size
        if size != 1:
            raise RuntimeError(
                f"polygrad: backward from {y._describe()} needs a gradient argument: an initial gradient "
                f"is created implicitly only for outputs of one element (a scalar loss)"
            )
        g = backend_of_type(type(y._data)).xp.ones_like(y._data)
    if create_graph:
        return g if isinstance(g, Variable) else Variable(g, requires_grad=False)
    g = g._data if isinstance(g, Variable) else g
    if tuple(g.shape) != tuple(y._data.shape):
        raise ValueError(f"polygrad: backward got a gradient of shape {tuple(g.shape)} for {y._describe()}")
    return g


def _sum(a: Any, b: Any, owned: dict | None) -> Any:
    """a + b, in place into ``a`` when this backward pass allocated ``a`` itself."""
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


def _apply_var_hooks(v: Variable, g: Any, create_graph: bool) -> Any:
    for hook in tuple(v._hooks):
        new = hook(g)
        if new is not None:
            g = new if create_graph or not isinstance(new, Variable) else new._data
    return g


def backward(
    outputs: Sequence[Variable],
    grad_outputs: Sequence[Any],
    *,
    retain_grad: bool = False,
    retain_graph: bool = False,
    create_graph: bool = False,
    inputs: Sequence[Variable] | None = None,
) -> list | None:
    """Backprop from ``outputs``. Accumulates into leaves' ``.grad``; or, with
    ``inputs``, returns their gradients and touches no ``.grad`` (``pg.grad``)."""
    grads: dict[Any, list] = {}
    heap: list = []
    leaves: dict[int, list] = {}  # id(var) -> [var, grad]
    targets = None if inputs is None else {(v._node, v._index) if v._node is not None else (None, id(v)): i for i, v in enumerate(inputs)}
    captured: list = [None] * (0 if inputs is None else len(inputs))
    hooks = _hooks._active.get()
    debug = config.debug.get()
    push, pop = heapq.heappush, heapq.heappop
    # Sums this pass allocated itself: later contributions are added in place.
    owned: dict[int, Any] | None = None if create_graph else {}

    pending = [((y._node, y._index) if y._node is not None else (None, y), _seed(y, g, create_graph))
               for y, g in zip(outputs, grad_outputs)]  # (an output need not require grad: a stochastic sample)
    token = config.enable_backprop.set(create_graph)
    try:
        while True:
            # Route gradients: to a leaf's running sum, or to the slot of the node that made them.
            for edge, gx in pending:
                if edge is None or gx is None:
                    continue
                node, where = edge
                if node is None:
                    slot = leaves.get(id(where))
                    if slot is None:
                        leaves[id(where)] = [where, gx]
                    else:
                        slot[1] = _sum(slot[1], gx, owned)
                    continue
                slot = grads.get(node)
                if slot is None:
                    slot = grads[node] = [None] * len(node.outputs)
                    push(heap, (-node.seq, node))
                slot[where] = gx if slot[where] is None else _sum(slot[where], gx, owned)
            pending = gxs = gx = None  # let gradients already routed go
            if not heap:
                break
            node = pop(heap)[1]
            gys = grads.pop(node)
            if owned:
                for g in gys:
                    owned.pop(id(g), None)
            if retain_grad or node._var_hooks or targets:
                for i, ref in enumerate(node.outputs):
                    y = ref()
                    if targets and (node, i) in targets:
                        captured[targets[(node, i)]] = gys[i]
                    if y is None or gys[i] is None:
                        continue
                    if y._hooks:
                        gys[i] = _apply_var_hooks(y, gys[i], create_graph)
                    if retain_grad:
                        y._grad = gys[i]
            gys = tuple(gys)
            fhooks = hooks + tuple(node.local_function_hooks.values()) if node.local_function_hooks else hooks
            if fhooks:
                in_data = node._hook_in_data()
                for h in fhooks:
                    h.backward_preprocess(node, in_data, gys)
            # A node cut off by unchain() has no edges: nowhere to send gradients.
            gxs = node._backward(gys, create_graph) if node.edges else ()
            if fhooks:
                for h in fhooks:
                    h.backward_postprocess(node, in_data, gys)
            if debug:
                from polygrad.core.debug import check_finite

                check_finite(gxs, "backward result for input", node)
            gys = in_data = None
            if not retain_graph:
                node._release()
            pending = zip(node.edges, gxs)
    finally:
        config.enable_backprop.reset(token)

    firsts: dict[int, int] = {}
    for v, g in leaves.values():
        firsts[id(g)] = firsts.get(id(g), 0) + 1
    for v, g in leaves.values():
        if targets is not None:
            i = targets.get((None, id(v)))
            if i is not None:
                captured[i] = _apply_var_hooks(v, g, create_graph) if v._hooks else g
            continue
        if v._hooks:
            g = _apply_var_hooks(v, g, create_graph)
        if v._grad is not None:
            v._grad = v._grad + g
            continue
        if not create_graph and owned.get(id(g)) is not g and (firsts.get(id(g), 0) > 1 or not _owns_memory(g)):
            # The user gets an array of their own: not shared with another leaf, not a view.
            g = backend_of_type(type(g)).xp.asarray(g, copy=True)
        v._grad = g
    return captured if inputs is not None else None


def _owns_memory(g: Any) -> bool:
    owns = getattr(backend_of_type(type(g)), "owns_memory", None)
    return owns is not None and owns(g)


def backward_all(variables: Any, grad_variables: Any = None, retain_graph: bool | None = None,
                 create_graph: bool = False, retain_variables: bool | None = None, *, retain_grad: bool = False) -> None:
    """Backprop from several variables at once (PyTorch 0.x ``autograd.backward``).

    ``grad_variables`` gives one gradient per variable (None: the implicit one,
    or nothing for a stochastic sample, whose reward drives its gradient).
    """
    vs = (variables,) if isinstance(variables, Variable) else tuple(variables)
    gs = (None,) * len(vs) if grad_variables is None else tuple(grad_variables)
    if len(gs) != len(vs):
        raise ValueError(f"polygrad.backward: got {len(gs)} gradients for {len(vs)} variables")
    if retain_variables is not None and retain_graph is None:
        retain_graph = retain_variables
    backward(vs, gs, retain_grad=retain_grad, retain_graph=bool(retain_graph) or create_graph, create_graph=create_graph)


def grad(
    outputs: Any,
    inputs: Any,
    grad_outputs: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
) -> list:
    """Gradients of ``outputs`` with respect to ``inputs``, without touching ``.grad``.

    Returns a list aligned with ``inputs``; None for an input the outputs do
    not depend on. With ``create_graph=True`` the gradients are Variables with a
    graph of their own (for higher-order derivatives); otherwise they are
    Variables without one.
    """
    single_out = isinstance(outputs, Variable)
    outputs = (outputs,) if single_out else tuple(outputs)
    inputs_t = (inputs,) if isinstance(inputs, Variable) else tuple(inputs)
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    elif single_out and not isinstance(grad_outputs, (list, tuple)):
        grad_outputs = (grad_outputs,)
    for v in inputs_t:
        if not isinstance(v, Variable):
            raise TypeError(f"polygrad.grad: inputs must be Variables, got {type(v).__name__}")
    # A backend may differentiate its own way (symbolic graphs build gradient expressions).
    override = getattr(backend_of_type(type(outputs[0]._data)), "grad", None)
    if override is not None:
        return override(outputs, inputs_t, tuple(grad_outputs))
    if retain_graph is None:
        retain_graph = create_graph
    gs = backward(outputs, tuple(grad_outputs), retain_graph=retain_graph, create_graph=create_graph, inputs=inputs_t)
    return [g if g is None or isinstance(g, Variable) else Variable(g, requires_grad=False) for g in gs]

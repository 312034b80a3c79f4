"""The per-op engine: apply a row of the op table, and the graph node it records.

:func:`apply` runs an :class:`~polygrad.core.op.Op` on Variables, raw arrays
and scalars and records a :class:`Primitive` node when backprop needs one;
``Primitive._backward`` runs the row's vjp rules. Broadcasting is undone here,
once, for ops declared ``broadcasts=True``, not in each rule.
"""

from __future__ import annotations

from typing import Any
from weakref import ref as _weakref

from polygrad.core import config
from polygrad.core import hooks as _hooks
from polygrad.core.dispatch import _type_cache, backend_of_type, current_backend, describe, mixed_backends_error
from polygrad.core.node import Node, freed_error, next_seq, version_error
from polygrad.core.op import GRAPH_OPS, Op, _Meta, raw_ops
from polygrad.core.variable import Variable

_SCALARS = (bool, int, float, complex)


class Primitive(Node):
    """A node for one application of an :class:`Op`."""

    __slots__ = ("op", "params", "saved", "checks", "in_shapes", "in_dtypes", "backend")

    @property
    def label(self) -> str:
        return self.op.name

    def __repr__(self) -> str:
        return f"<{self.op.name} node #{self.seq}>"

    def _hook_in_data(self) -> tuple:
        saved = self.saved
        if saved is None:
            return (None,) * len(self.edges)
        return tuple(saved[: len(self.edges)])

    def _release(self) -> None:
        self._freed = True
        if self.saved is not None and (self.op.keep or self.op.keep_output):
            self.saved = None

    def _protect_saved(self, array: Any, copy: bool) -> None:
        saved = self.saved
        if saved is None:
            return
        for i, a in enumerate(saved):
            if a is array and i < len(self.edges):
                saved[i] = self.backend.xp.asarray(array, copy=True) if copy else array
                if self.checks:
                    self.checks = tuple(c for c in self.checks if c[0] != i)

    def _backward(self, grad_outputs: tuple, create_graph: bool) -> tuple:
        op = self.op
        n_in = len(self.edges)
        if op.multi:
            g = tuple(grad_outputs)
            if all(x is None for x in g):
                return (None,) * n_in
        else:
            g = grad_outputs[0]
            if g is None:
                return (None,) * n_in
        saved = self.saved
        if saved is None:
            raise freed_error(self)
        if self.checks:
            for i, vbox, version in self.checks:
                if vbox[0] != version:
                    what = "output" if i == n_in else f"input {i}"
                    shape = saved[i].shape
                    raise version_error(self, what, shape, version, vbox[0], vbox)
        args = saved[:n_in]
        ans = saved[n_in]
        if op.metas:
            args = [_Meta(s, t) if a is None else a for a, s, t in zip(args, self.in_shapes, self.in_dtypes)]
        if create_graph:
            o = GRAPH_OPS
            args = tuple(self._input_variable(i, a) if i in op.keep and type(a) not in _SCALARS else a for i, a in enumerate(args))
            if op.multi:
                if op.keep_output:
                    ans = tuple(self._output_variable(k, a) for k, a in enumerate(ans))
                g = tuple(x if x is None or isinstance(x, Variable) else Variable(x, requires_grad=False) for x in g)
            else:
                if op.keep_output:
                    ans = self._output_variable(0, ans)
                if not isinstance(g, Variable):
                    g = Variable(g, requires_grad=False)
        else:
            o = self.backend.raw_ops or raw_ops(self.backend)
            if op.multi:
                g = tuple(x._data if isinstance(x, Variable) else x for x in g)
            elif isinstance(g, Variable):
                g = g._data
        params = self.params
        out = []
        vjps = op.vjps
        for i, edge in enumerate(self.edges):
            rule = vjps[i] if edge is not None and i < len(vjps) else None
            if rule is None:
                out.append(None)
                continue
            try:
                gx = rule(o, g, ans, *args, **params) if params else rule(o, g, ans, *args)
                if op.broadcasts and self.in_shapes is not None:
                    # Undo broadcasting and type promotion: the gradient matches its input.
                    shape = self.in_shapes[i]
                    if gx.shape != shape:
                        gx = o.sum_to(gx, shape)
                    dtype = self.in_dtypes[i]
                    if dtype is not None and gx.dtype != dtype:
                        xp = self.backend.xp
                        if xp.isdtype(gx.dtype, "complex floating") and not xp.isdtype(dtype, "complex floating"):
                            gx = o.real(gx)  # a real input's gradient is the real part
                        if gx.dtype != dtype:
                            gx = o.astype(gx, dtype)
            except Exception as exc:
                raise _op_error(op, args, params, self.backend, exc, f"backward (input {i})") from exc
            out.append(gx)
        return out


def apply(op: Op, args: tuple, params: dict | None = None) -> Variable:
    """Run ``op`` on Variables, raw arrays and scalars; record a node if needed.

    One pass over the inputs collects their arrays, their backend, and (in case
    a node is recorded) their edges and what backward will need.
    """
    backend = None
    record = False
    volatile = False
    datas = []
    edges = []
    saved = []
    checks = None
    mixed = False
    keep = op.keep
    i = 0
    for a in args:
        if isinstance(a, Variable):
            d = a._data
            if a._requires_grad:
                record = True
                n = a._node
                if n is None:
                    edges.append((None, a))
                else:
                    edges.append((n, a._index))
            else:
                if a._volatile:
                    volatile = True
                edges.append(None)
            if keep and i in keep:
                saved.append(d)
                box = a._vb
                if box is None:
                    box = a._vb = [0]
                checks = ((i, box, box[0]),) if checks is None else checks + ((i, box, box[0]),)
            else:
                saved.append(None)
            t = type(d)
            b = _type_cache.get(t) or backend_of_type(t)
            if backend is None:
                backend = b
                d0 = d
            elif b is not backend:
                raise mixed_backends_error(op.name, args, backend, b)
            elif not mixed and (d.shape != d0.shape or d.dtype != d0.dtype):
                mixed = True
        else:
            d = a
            edges.append(None)
            t = type(d)
            if t in _SCALARS:
                saved.append(d)
            else:
                saved.append(d if i in keep else None)
                b = _type_cache.get(t) or backend_of_type(t)
                if backend is None:
                    backend = b
                    d0 = d
                elif b is not backend:
                    raise mixed_backends_error(op.name, args, backend, b)
                elif not mixed and (d.shape != d0.shape or d.dtype != d0.dtype):
                    mixed = True
        datas.append(d)
        i += 1
    if backend is None:
        backend = current_backend()
        datas = [backend.xp.asarray(d) for d in datas]
    hooks = _hooks._active.get()
    if record and (volatile or not op.differentiable or not config.enable_backprop.get()):
        record = False
    node = None
    if record or hooks:
        node = Primitive.__new__(Primitive)
        node.op = op
        node.params = params
        node.backend = backend
        node.local_function_hooks = None
        node._var_hooks = False
        node._freed = False
        node.edges = ()
        node.seq = next_seq()
    impl = op._impl.get(backend) or op.kernel(backend)
    if hooks:
        in_data = tuple(datas)
        for h in hooks:
            h.forward_preprocess(node, in_data)
    try:
        out = impl(*datas, **params) if params else impl(*datas)
    except Exception as exc:
        raise _op_error(op, args, params, backend, exc) from exc
    if op.multi:
        return _finish_multi(op, node, out, record, volatile, hooks, in_data if hooks else None, edges, saved, checks, datas, args)
    v = Variable.__new__(Variable)
    v._data = out
    v._grad = None
    v._index = 0
    v._volatile = volatile
    v.name = None
    v._vb = None
    v._hooks = None
    if op.view and isinstance(args[0], Variable):
        v._vb = args[0]._vbox  # an in-place change through either is seen by both
    if not record:
        v._node = None
        v._requires_grad = False
        if hooks:
            node.outputs = (_weakref(v),)
            for h in hooks:
                h.forward_postprocess(node, in_data)
        return v
    v._node = node
    v._requires_grad = True
    if op.keep_output:
        saved.append(out)
        box = v._vbox
        checks = ((i, box, box[0]),) if checks is None else checks + ((i, box, box[0]),)
    else:
        saved.append(None)
    node.edges = edges
    node.outputs = (_weakref(v),)
    node.saved = saved
    node.checks = checks
    if op.metas or (op.broadcasts and (mixed or out.dtype != d0.dtype)):
        # Shapes and dtypes of the inputs: for rules that read them, and for undoing
        # broadcasting or promotion (recorded only when some happened: most calls none).
        _record_inputs(node, datas)
    elif op.broadcasts:
        node.in_shapes = None
    if hooks:
        for h in hooks:
            h.forward_postprocess(node, in_data)
    return v


def _record_inputs(node: Primitive, datas: list) -> None:
    node.in_shapes = [() if type(d) in _SCALARS else tuple(d.shape) for d in datas]
    node.in_dtypes = [None if type(d) in _SCALARS else d.dtype for d in datas]


def _finish_multi(op: Op, node: Any, out: Any, record: bool, volatile: bool, hooks: tuple, in_data: Any,
                  edges: list, saved: list, checks: Any, datas: list, args: tuple) -> Any:
    """The output side of ``apply`` for ops with several outputs."""
    outs = tuple(out)
    box = args[0]._vbox if op.view and isinstance(args[0], Variable) else None  # views share input 0's counter
    vs = []
    for k, o in enumerate(outs):
        diff = record and is_floating(o)
        vs.append(Variable._make(o, node if diff else None, k, diff, volatile, box))
    if node is not None:
        node.outputs = tuple(_weakref(v) for v in vs)
    if record:
        saved.append(outs if op.keep_output else None)
        node.edges = edges
        node.saved = saved
        node.checks = checks
        _record_inputs(node, datas)
    if hooks:
        for h in hooks:
            h.forward_postprocess(node, in_data)
    return type(out)(*vs) if hasattr(out, "_fields") else tuple(vs)


def is_floating(a: Any) -> bool:
    """Whether ``a`` is an array of a real or complex floating dtype (False for anything else)."""
    try:
        xp = backend_of_type(type(a)).xp
        return bool(xp.isdtype(a.dtype, ("real floating", "complex floating")))
    except Exception:
        return False


def _op_error(op: Op, args: tuple, params: dict | None, backend: Any, exc: Exception, phase: str = "") -> Exception:
    desc = "; ".join(describe(a) for a in args if a is not None)
    extra = f" with {params}" if params else ""
    where = f" in {phase}" if phase else ""
    msg = f"polygrad: {op.name}{where} failed on backend {backend.name!r} for ({desc}){extra}: {type(exc).__name__}: {exc}"
    try:
        return type(exc)(msg)
    except Exception:
        return RuntimeError(msg)



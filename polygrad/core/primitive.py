"""The per-op engine: :func:`apply`, the one path every function application takes.

``apply(op, args, params)`` runs a row of the op table (:class:`~polygrad.core.op.Op`)
on Variables, raw arrays and scalars: it resolves the inputs' backend, decides
whether to record, runs the forward hooks around the kernel, wraps the outputs
in Variables and links them to a graph node. The node is a :class:`Primitive`
(or the row's ``node_class``, e.g. a stochastic draw); a user
:class:`~polygrad.core.function.Function` passes itself as ``node`` and takes
the same path, so every kind of node resolves backends, records, links and
runs hooks alike.

``Primitive._backward`` runs the row's vjp rules; broadcasting and type
promotion are undone here, once, for rows declared ``broadcasts=True``.
"""

from __future__ import annotations

from typing import Any
from weakref import ref as _weakref

from polygrad.core import config
from polygrad.core import hooks as _hooks
from polygrad.core.dispatch import (SCALARS, _pinned, _type_cache, backend_of_type, current_backend, describe,
                                    mixed_backends_error)
from polygrad.core.node import Node, Version, freed_error, next_seq, version_error, version_of
from polygrad.core.op import GRAPH_OPS, Op, _Meta, is_view, raw_ops, returned_input
from polygrad.core.variable import Variable, admit, is_floating, new_leaf, note_unrecorded_view


class Primitive(Node):
    """A node for one application of an :class:`Op`.

    ``saved`` holds, per input, the array the row's rules read (None for the
    others) and then the output (or None); ``checks`` the version counters of
    the saved Variables at forward time. ``consts``, set when some input was an
    array that needs no gradient, describes those inputs for drawing the graph
    (see :func:`_constant_inputs`); backward frees ``saved``, never it. ``source``, on an
    application of a ``remat`` row, is what it noted of its input (see :func:`_source`).
    """

    __slots__ = ("op", "params", "saved", "checks", "in_shapes", "in_dtypes", "backend", "consts", "source")

    @property
    def label(self) -> str:
        return self.op.name

    @property
    def requires_grad(self) -> bool:
        """Whether backward will be called for this application, as on a user
        :class:`~polygrad.core.function.Function`: False for a node that was not
        recorded (one made only to show to function hooks)."""
        return any(e is not None for e in self.edges)

    def __repr__(self) -> str:
        return f"<{self.op.name} node #{self.seq}>"

    def _hook_in_data(self) -> tuple:
        saved = self.saved
        if saved is None:
            return (None,) * len(self.edges)
        return tuple(saved[: len(self.edges)])

    def _release(self, by: Any = True) -> None:
        self._freed = by
        if self.op.frees:
            self.saved = None

    def _constant_input(self, i: int) -> tuple | None:
        consts = getattr(self, "consts", None)  # absent: no constant input, or only Python scalars
        return consts[i] if consts is not None and i < len(consts) else None

    def __getstate__(self) -> dict:
        state = super().__getstate__()
        if state.get("consts") is not None:  # weak references do not pickle: the copy keeps the facts
            state["consts"] = tuple(None if c is None else (None, *c[1:]) for c in state["consts"])
        if state.get("source") is not None:  # (nor this one: a copied negation is kept where it is used)
            state["source"] = None
        return state

    def _input_meta(self, i: int) -> tuple:
        saved = self.saved
        if saved is not None and i < len(self.edges) and saved[i] is not None and type(saved[i]) not in SCALARS:
            return tuple(saved[i].shape), saved[i].dtype
        shapes = getattr(self, "in_shapes", None)  # recorded only for some rows and calls
        if shapes is not None and i < len(shapes):
            return tuple(shapes[i]), self.in_dtypes[i]
        return None, None

    def _protect_saved(self, array: Any, copy: bool) -> None:
        saved = self.saved
        if saved is None:
            return
        for i, a in enumerate(saved):
            if a is array and i < len(self.edges):
                saved[i] = self.backend.xp.asarray(array, copy=True) if copy else array
                if self.checks:
                    self.checks = tuple(c for c in self.checks if c[0] != i)

    def _version_error(self, i: int, version: int, box: Version) -> RuntimeError:
        n_in = len(self.edges)
        if i < n_in:
            return version_error(self, f"input {i}", self.saved[i].shape, version, box)
        if self.op.multi:
            k = i - n_in
            return version_error(self, f"output {k}", self.saved[n_in][k].shape, version, box)
        return version_error(self, "output", self.saved[n_in].shape, version, box)

    def _graph_operands(self, g: Any, ans: Any, args: Any) -> tuple:
        """Rule operands as Variables at their graph positions (``create_graph``)."""
        op = self.op
        args = tuple(self._input_variable(i, a) if i in op.keep and a is not None and type(a) not in SCALARS
                     and not isinstance(a, Variable) else a for i, a in enumerate(args))
        if op.multi:
            if ans is not None:
                ans = tuple(self._output_variable(k, a) for k, a in enumerate(ans))
            g = tuple(x if x is None or isinstance(x, Variable) else Variable._make(x) for x in g)
        else:
            if ans is not None:
                ans = self._output_variable(0, ans)
            if not isinstance(g, Variable):
                g = Variable._make(g)
        return g, ans, args

    def _fit(self, o: Any, gx: Any, i: int) -> Any:
        """Undo broadcasting and type promotion: input ``i``'s gradient gets its shape and dtype."""
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
        return gx

    def _check_versions(self) -> None:
        """Refuse saved arrays changed in place since they were saved."""
        for i, box, version in self.checks:
            if box.n != version:
                raise self._version_error(i, version, box)

    def _backward(self, grad_outputs: tuple, create_graph: bool, saved: list | None = None,
                  only: tuple | None = None) -> tuple:
        """The gradients of the inputs (None where an input needs none); ``saved`` in place of
        the node's own and ``only`` some inputs are for :class:`Recomputing`."""
        op = self.op
        edges = self.edges
        if op.multi:
            g = tuple(grad_outputs)
            if all(x is None for x in g):
                return (None,) * len(edges)
        else:
            g = grad_outputs[0]
            if g is None:
                return (None,) * len(edges)
        if saved is None:
            saved = self.saved
            if saved is None:
                raise freed_error(self)
        if self.checks:
            self._check_versions()
        n_in = len(edges)
        args = saved[:n_in]
        ans = saved[n_in]
        if op.metas:
            args = [_Meta(s, t) if a is None else a for a, s, t in zip(args, self.in_shapes, self.in_dtypes)]
        if create_graph:
            o = GRAPH_OPS
            g, ans, args = self._graph_operands(g, ans, args)
        else:
            o = self.backend.raw_ops or raw_ops(self.backend)
            if op.multi:
                g = tuple(x._data if isinstance(x, Variable) else x for x in g)
            elif isinstance(g, Variable):
                g = g._data
        params = self.params
        fit = op.broadcasts and self.in_shapes is not None
        vjps = op.vjps
        out = []
        n_rules = len(vjps)
        for i, edge in enumerate(edges):
            if edge is None or (only is not None and i not in only):
                out.append(None)
                continue
            if i >= n_rules:  # (an explicit None is "no gradient"; a rule never given is an error)
                raise _no_rule_error(op, i, n_rules)
            rule = vjps[i]
            if rule is None:
                out.append(None)
                continue
            try:
                gx = rule(o, g, ans, *args, **params) if params else rule(o, g, ans, *args)
                out.append(self._fit(o, gx, i) if fit else gx)
            except Exception as exc:
                raise _op_error(op.name, args, params, self.backend, exc, f"backward (input {i})") from exc
        if op.checked:
            return self._admit_results(out)
        return out

    def _admit_results(self, gxs: list) -> list:
        """The gradients of a row declared outside polygrad (``Op.checked``) through the gate of
        gradients (:func:`~polygrad.core.variable.admit`): each of its input's shape, dtype and
        backend (another precision is cast), or an error naming the row and the input. A wrong
        shape that broadcasts was passed on to the next rule, or summed with another gradient,
        and gave a wrong gradient silently (only a leaf's was refused)."""
        name = self.op.name
        return [None if g is None else admit(g, self.in_shapes[i], self.in_dtypes[i], self.backend,
                                             f"the gradient {name}'s vjp rule returned for input {i}", user=True)
                for i, g in enumerate(gxs)]

    def _save(self, saved: list, checks: Any, datas: list, outs: Any, keep_output: bool) -> None:
        """Keep what backward needs, for a row of several outputs (see :func:`_finish`)."""
        if keep_output:
            saved.append(tuple(outs))
            # the outputs backward reads are checked like its inputs (index n_in + k): an
            # in-place change to one of them (sklearn's ``u *= signs`` on svd's U) is refused
            n_in = len(self.edges)
            extra = tuple((n_in + k, v._vbox, v._vbox.n) for k, v in enumerate(r() for r in self.outputs))
            checks = extra if checks is None else checks + extra
        else:
            saved.append(None)
        self.saved = saved
        self.checks = checks
        _record_inputs(self, datas)


def apply(op: Any, args: tuple, params: dict | None = None, node: Node | None = None) -> Any:
    """Run ``op`` on Variables, raw arrays and scalars; record a node if backprop needs one.

    ``node`` is the node of this application when the caller made it (a user
    :class:`~polygrad.core.function.Function` passes itself); otherwise a node
    of the row's ``node_class`` (default :class:`Primitive`) is made when
    something needs one (a gradient, or a hook to show it to).

    This is the per-op hot path, the one long function of the engine kept
    inlined on purpose: one pass over the inputs collects their arrays, their
    backend, their edges and what backward will need, and the single-output
    case builds its Variable and node without calls. Everything else (several
    outputs, user Functions) goes through the node's ``_link_outputs``/``_save``.
    """
    own = node is not None
    backend = None
    record = False
    volatile = False
    datas = []
    edges = []
    saved = []
    checks = None
    mixed = False
    const = False  # some input is an array that needs no gradient
    mask = 0
    keep = op.keep_always  # rows whose rules read different things (keep_for) keep theirs below
    i = 0
    for a in args:
        if isinstance(a, Variable):
            d = a._data
            if a._requires_grad:
                record = True
                mask |= 1 << i
                n = a._node
                edges.append((None, a) if n is None else (n, a._index))
            else:
                if a._volatile:
                    volatile = True
                edges.append(None)
                const = True
            if keep and i in keep:
                saved.append(d)
                box = a._vb
                if box is None:
                    box = version_of(a)
                checks = ((i, box, box.n),) if checks is None else checks + ((i, box, box.n),)
            else:
                saved.append(None)
        else:
            d = a
            edges.append(None)
            if type(d) in SCALARS:
                saved.append(d)
                datas.append(d)
                i += 1
                continue
            const = True
            if type(d) in _pinned:  # a raw array is a constant (a symbolic one: a symbol of its own, see new_leaf)
                d = new_leaf(d)
            saved.append(d if i in keep else None)
        t = type(d)
        b = _type_cache.get(t) or _input_backend(t, op.name if node is None else node.label, i, a)
        if backend is None:
            backend = b
            d0 = d
        elif b is not backend and b.name != backend.name:  # (one name: the registry was rebuilt between lookups)
            raise mixed_backends_error(op.name if node is None else node.label, args, backend, b)
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
    keep_output = op.keep_output
    if record and op.keep_for is not None:  # keep only what the rules of the inputs needing a gradient read
        try:
            need, keep_output = op.keep_for[mask]
        except IndexError:  # an input past the last rule (backward says it has none): what the rules read
            need, keep_output = op.keep_for[mask & (len(op.keep_for) - 1)]
        for j in need:
            a = args[j]
            if isinstance(a, Variable):
                saved[j] = a._data
                box = a._vb
                if box is None:
                    box = version_of(a)
                checks = ((j, box, box.n),) if checks is None else checks + ((j, box, box.n),)
            else:
                saved[j] = a
    if own:  # the caller's node (a user Function): it runs its own forward
        impl = node._start(backend, record, edges)
        if node._local_hooks:
            hooks = _hooks.with_local(hooks, node._local_hooks)
    else:
        if record or hooks:
            cls = op.node_class or Primitive
            node = cls.__new__(cls)
            node.op = op
            node.params = params
            node.backend = backend
            node._local_hooks = None
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
        if own:
            raise  # a user Function's own error, as it raised it
        raise _op_error(op.name, args, params, backend, exc) from exc
    if record and op.casts and not _floating(out):  # cast to an integer or boolean dtype: no gradient
        record = False
    if const and record and not own:
        node.consts = _constant_inputs(args, edges)
    if op.multi:
        vs = node._link_outputs(out, args, record, volatile) if own else _outputs(op, node, out, args, record, volatile, params)
        return _finish(node, out, vs, datas, record, edges, saved, checks, hooks, keep_output)
    v = Variable.__new__(Variable)
    v._data = out
    v._grad = None
    v._index = 0
    v._volatile = volatile
    v.name = None
    v._vb = _view_counter(args[0], v, record, op, params, 0) if op.view else Version()
    v._hooks = None
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
    if keep_output:
        saved.append(out)
        box = v._vbox
        checks = ((i, box, box.n),) if checks is None else checks + ((i, box, box.n),)
    else:
        saved.append(None)
    node.edges = edges
    node.outputs = (_weakref(v),)
    node.saved = saved
    node.checks = checks
    if op.remat:
        node.source = _source(args[0], v)
    elif checks is not None and len(checks) > 1 and not own:
        _keep_sources(node, args, saved)
    if op.records or (op.broadcasts and (mixed or out.dtype != d0.dtype)):
        # Shapes and dtypes of the inputs: for rules that read them or results checked against
        # them, and for undoing broadcasting or promotion (recorded only when some happened:
        # most calls none).
        _record_inputs(node, datas)
    elif op.broadcasts:
        node.in_shapes = None
    if hooks:
        for h in hooks:
            h.forward_postprocess(node, in_data)
    return v


def _source(a: Any, out: Variable) -> tuple | None:
    """What an application of a ``remat`` row notes of its input ``a`` and its output ``out``:
    each one's array (a weak reference), version counter and count (None where the input is no
    Variable, or an array takes no weak reference). A later node computes the output again only
    where both are what they were (see :func:`_keep_sources`)."""
    if not isinstance(a, Variable):
        return None
    try:
        ref, out_ref = _weakref(a._data), _weakref(out._data)
    except TypeError:
        return None
    box = a._vb
    if box is None:
        box = version_of(a)
    return ref, box, box.n, out_ref, out._vb, out._vb.n


def _keep_sources(node: Primitive, args: tuple, saved: list) -> None:
    """Where ``node`` keeps an input made by a ``remat`` row (``-x``) and that row's input
    (``x``) at the same place of the graph, both arrays as that row left them (the same
    objects, at the same versions), it keeps ``x`` only: its backward computes ``-x`` again (see
    :class:`Recomputing`). The check of ``-x``'s version goes with it: backward no longer reads
    it. (The place matters for create_graph, where ``-x`` is computed again as a graph of it:
    ``x.detach()`` over the same array is another.)"""
    edges = node.edges
    n_in = len(edges)
    marks = None
    for i in range(n_in):
        a = args[i]
        src = a._node if saved[i] is not None and isinstance(a, Variable) else None
        if type(src) is not Primitive or not src.op.remat or src.source is None:
            continue
        ref, box, n, out_ref, out_box, out_n = src.source
        d = ref()
        if d is None or box.n != n or a._data is not out_ref() or a._vb is not out_box or out_box.n != out_n:
            continue
        e = src.edges[0]
        for j in range(n_in):
            b, f = args[j], edges[j]
            if (j != i and saved[j] is d and isinstance(b, Variable) and b._vb is box and f is not None
                    and e is not None and f[0] is e[0] and (f[1] is e[1] if f[0] is None else f[1] == e[1])):
                mark = (i, j, src.op)
                marks = (mark,) if marks is None else marks + (mark,)
                break
    if marks is None:
        return
    redone = {i for i, _, _ in marks}
    for i in redone:
        saved[i] = None
    node.checks = tuple(c for c in node.checks if c[0] not in redone) or None
    saved.append(marks)
    node.__class__ = Recomputing


class Recomputing(Primitive):
    """A node that keeps, for an input made by a ``remat`` row (``-x``), that row's input
    (``x``) instead, which it keeps anyway (see :func:`_keep_sources`); ``saved[n_in + 1]``
    lists ``(i, j, row)``: input ``i`` is ``row(input j)``.

    Its backward runs first each rule that reads a recomputed input, with that input computed
    for it alone and dropped after, then the other rules: no more arrays are alive at once
    than when the node kept it, and the input's memory was free from the user's last
    reference to it until this backward."""

    __slots__ = ()

    def _marks(self) -> tuple:
        return self.saved[len(self.edges) + 1]

    def _redone(self, marks: tuple, create_graph: bool = False) -> list:
        """The inputs and output as the rules read them: the marked inputs computed again (for
        ``create_graph``, as a graph of the input, so that a compiled trace records it)."""
        saved = self.saved
        n_in = len(self.edges)
        s = saved[: n_in + 1]
        for i, j, row in marks:
            if create_graph:
                s[i] = getattr(GRAPH_OPS, row.name)(self._input_variable(j, saved[j]))
            else:
                s[i] = (row._impl.get(self.backend) or row.kernel(self.backend))(saved[j])
        return s

    def _backward(self, grad_outputs: tuple, create_graph: bool, saved: list | None = None,
                  only: tuple | None = None) -> tuple:
        if self.saved is None:
            return Primitive._backward(self, grad_outputs, create_graph)  # (the error for freed arrays)
        op = self.op
        marks = self._marks()
        n_in = len(self.edges)
        out = [None] * n_in
        rest = []
        for i, edge in enumerate(self.edges):
            if edge is None:
                continue
            reads = op.keep if op.keep_for is None or i >= len(op.vjps) else op.keep_for[1 << i][0]
            mine = tuple(m for m in marks if m[0] in reads)
            if mine:
                out[i] = Primitive._backward(self, grad_outputs, create_graph, self._redone(mine, create_graph),
                                             (i,))[i]
            else:
                rest.append(i)
        if rest:
            gxs = Primitive._backward(self, grad_outputs, create_graph, self.saved[: n_in + 1], tuple(rest))
            for i in rest:
                out[i] = gxs[i]
        return out

    def _hook_in_data(self) -> tuple:
        if self.saved is None:
            return Primitive._hook_in_data(self)
        return tuple(self._redone(self._marks())[: len(self.edges)])

    def _input_meta(self, i: int) -> tuple:
        if self.saved is not None:
            for k, j, _ in self._marks():
                if k == i:
                    return Primitive._input_meta(self, j)
        return Primitive._input_meta(self, i)


def _outputs(op: Op, node: Any, outs: Any, args: tuple, record: bool, volatile: bool, params: dict | None) -> tuple:
    """Variables for the outputs of a row of several outputs: only floating ones carry a gradient."""
    vs = []
    for k, o in enumerate(outs):
        diff = record and _floating(o)
        v = Variable._make(o, node if diff else None, k, diff, volatile)
        if op.view:
            v._vb = _view_counter(args[0], v, diff, op, params, k)
        vs.append(v)
    return tuple(vs)


def _view_counter(base: Any, v: Variable, record: bool, op: Op, params: dict | None, index: int) -> Any:
    """The version counter of ``v``, output ``index`` of a view row: its base's, shared (an
    in-place change through either is seen by both). The view is also remembered, so that it
    follows its base when the base is written in place (a recorded one, its graph too); one made
    outside recording keeps its row and base (see ``variable.note_unrecorded_view``). A row that
    is a view for some parameters only (getitem: a basic key) gives a copy a counter of its own."""
    if op.view is not True and not is_view(op, params):
        return Version()
    if not isinstance(base, Variable):
        return None
    if op.view is returned_input and v._data is not base._data:  # (a new array: no view)
        return Version()
    box = base._vbox
    if not record:
        note_unrecorded_view(v, base, op, params, index)
    box.add_view(v)
    return box


def _finish(node: Any, out: Any, vs: tuple, datas: list, record: bool, edges: list, saved: list, checks: Any,
            hooks: tuple, keep_output: bool = False) -> Any:
    """The output side of :func:`apply` for several outputs: link the node, keep what backward needs."""
    if node is not None:
        node.outputs = tuple(_weakref(v) for v in vs)
        if record:
            node.edges = edges
            node._save(saved, checks, datas, out, keep_output)
        if hooks:
            in_data = tuple(datas)
            for h in hooks:
                h.forward_postprocess(node, in_data)
    return _package(out, vs)


def _package(out: Any, vs: tuple) -> Any:
    """Outputs as the kernel gave them: a named tuple stays one, a tuple is a tuple."""
    if hasattr(out, "_fields"):
        return type(out)(*vs)
    return vs


def _constant_inputs(args: tuple, edges: list) -> list:
    """Per input, what a drawing of the graph shows for it if it is an array that needs no gradient
    (None for the others, Python scalars among them): ``(reference, name, shape, dtype)``, the
    reference a weak one to its Variable (None for a raw array). These facts do not depend on the
    arrays saved for backward, so the graph is drawn the same after backward frees them."""
    out = [None] * len(edges)
    for i, e in enumerate(edges):
        if e is None:
            a = args[i]
            if isinstance(a, Variable):
                d = a._data
                out[i] = (_weakref(a), a.name, d.shape, d.dtype)
            elif type(a) not in SCALARS:
                out[i] = (None, None, a.shape, a.dtype)
    return out


def _record_inputs(node: Any, datas: list) -> None:
    node.in_shapes = [() if type(d) in SCALARS else tuple(d.shape) for d in datas]
    node.in_dtypes = [None if type(d) in SCALARS else d.dtype for d in datas]


def _floating(a: Any) -> bool:
    """Whether ``a`` is an array of a real or complex floating dtype (False for anything else);
    the answer is kept per dtype (it runs after every call of a row that ``casts``)."""
    try:
        key = (type(a), a.dtype)  # per array type: the same dtype is "unknown" on a symbolic array
        known = _FLOATING_DTYPES.get(key)
    except Exception:  # no dtype, or an unhashable one
        key = known = None
    if known is None:
        try:
            known = is_floating(a)
        except Exception:
            known = False
        if key is not None:
            _FLOATING_DTYPES[key] = known
    return known


_FLOATING_DTYPES: dict = {}


def _input_backend(t: type, name: str, i: int, arg: Any) -> Any:
    """The backend of input ``i``'s type; a type no backend claims (a list, None) is an error
    naming the op and the input (it named neither), and a Variable without data says so."""
    try:
        return backend_of_type(t)
    except TypeError as exc:
        if isinstance(arg, Variable) and t is type(None):
            raise TypeError(f"polygrad: {name}: input {i} is {arg._describe()}, which has no data yet (an "
                            "uninitialized parameter, as Linear(None, n) holds until its first call): give it "
                            "data first") from None
        text = str(exc)
        text = text[len("polygrad: "):] if text.startswith("polygrad: ") else text
        raise TypeError(f"polygrad: {name}: input {i} ({t.__name__}): {text}") from None


def _no_rule_error(op: Op, i: int, n_rules: int) -> NotImplementedError:
    """A row's input that needs a gradient and has no rule (defvjp never called, or given fewer
    rules than the row has inputs): it got a zero gradient, silently."""
    why = ("the row has no vjp rules (defvjp was not called on it)" if not n_rules
           else "the row has a rule for input 0 only" if n_rules == 1
           else f"the row has rules for inputs 0-{n_rules - 1} only")
    return NotImplementedError(
        f"polygrad: the vjp of {op.name} with respect to input {i} is not defined: {why}; give defvjp one rule per "
        f"input (None for an input that has no gradient), or declare a row that has none def_nograd")


def _op_error(label: str, args: tuple, params: dict | None, backend: Any, exc: Exception, phase: str = "") -> Exception:
    desc = "; ".join(describe(a) for a in args if a is not None)
    extra = f" with {params}" if params else ""
    where = f" in {phase}" if phase else ""
    desc = f" for ({desc})" if desc else ""  # (a backward whose rules kept no input)
    msg = f"polygrad: {label}{where} failed on backend {backend.name!r}{desc}{extra}: {type(exc).__name__}: {exc}"
    try:
        return type(exc)(msg)
    except Exception:
        return RuntimeError(msg)

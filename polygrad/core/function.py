"""Function: the class users subclass to define an operation and its derivative.

Two conventions, told apart by the methods' signatures:

* Chainer's: ``forward(inputs)`` and ``backward(inputs, grad_outputs)`` on tuples
  of arrays (or ``forward_cpu`` / ``forward_gpu`` and ``backward_cpu`` /
  ``backward_gpu``, chosen by the backend's device kind), returning tuples;
* PyTorch 0.x's: ``forward(*inputs)`` and ``backward(*grad_outputs)`` on the
  arrays themselves, each returning one array or a tuple; what backward needs
  comes from ``save_for_backward`` / ``saved_tensors``.

A subclass whose ``forward`` takes the inputs unpacked or starred, or whose
``backward`` takes only output gradients, is PyTorch-style; one taking
``forward(self, inputs)`` and ``backward(self, inputs, grad_outputs)`` is
Chainer-style. The one shape both share (one input, two outputs:
``forward(self, x)``, ``backward(self, g1, g2)``) reads as Chainer's: say
``style = "pytorch"`` in the class to choose. ``self.xp`` is the inputs' Array
API namespace while the methods run. A missing backward means the function is
not differentiable (its inputs get None gradients).

Applying a Function builds this graph (Chainer's picture)::

    x.node < f < y.node         y = f(x)

and a second application of another function to ``x`` adds a branch whose
gradient backward sums into ``x.grad``. A Function instance is applied once;
``copy.copy(f)`` gives a fresh instance.

>>> import polygrad as pg
>>> class Square(pg.Function):
...     def forward(self, inputs):
...         x, = inputs
...         return x * x,
...     def backward(self, inputs, grad_outputs):
...         x, = inputs
...         gy, = grad_outputs
...         return 2 * x * gy,
>>> x = pg.Variable(pg.asarray([3.0]))
>>> y = Square()(x)
>>> y.backward()
>>> x.grad
array([6.])
"""

from __future__ import annotations

import inspect
import threading
import weakref
from typing import Any

from polygrad.core import config
from polygrad.core.dispatch import backend_of_type, has_namespace
from polygrad.core.integers import as_int
from polygrad.core.node import Node, _dead, freed_error, inplace_site, next_seq, version_error
from polygrad.core.primitive import apply
from polygrad.core.op import GRAPH_OPS
from polygrad.core.variable import Variable, _unrecorded_base, _view_base, admit, is_floating

#: Held while an application claims its Function instance (see Function.__call__).
_CLAIM = threading.Lock()


class _Everything:
    """Contains every input index: apply keeps (and version-checks) all inputs of a
    user Function until its forward says which it retains."""

    def __contains__(self, i: int) -> bool:
        return True

    def __bool__(self) -> bool:
        return True


class _FunctionRow:
    """What :func:`~polygrad.core.primitive.apply` reads of the row when a user
    Function is applied: every input kept, several outputs, differentiable."""

    name = "function"
    keep = keep_always = _Everything()
    keep_for = None
    keep_output = False
    casts = False
    differentiable = True
    multi = True
    view = False


_ROW = _FunctionRow()


class _Inputs(tuple):
    """The tuple a Chainer-style forward receives: unpack it (``x, = inputs``). Arithmetic on
    it is a PyTorch-style forward misread, and says so instead of repeating the tuple."""

    __slots__ = ()

    def _refuse(self, *args: Any) -> Any:
        raise TypeError(
            "polygrad: this Function's forward received the tuple of its input arrays (Chainer's "
            "forward(self, inputs)) and computed with the tuple itself. Unpack it (x, = inputs), or, for "
            "PyTorch's forward(self, x), give it backward(self, grad_output) or set style = 'pytorch' in the class."
        )

    __mul__ = __rmul__ = __add__ = __radd__ = __neg__ = _refuse


def _arrays(items: tuple) -> tuple:
    """The arrays of what a forward declared: a Variable (PyTorch-style code's tensor) stands for its data."""
    return tuple(a._data if isinstance(a, Variable) else a for a in items)


def _own_memory(y: Any) -> Any:
    """Output ``y`` of a forward, or a copy where it may be a view (of an input, of a parameter the Function
    holds, of a temporary) that was not declared with ``mark_shared_storage``: Chainer's Reshape, Transpose
    and GetItem return numpy views. On a backend whose arrays take writes, ``y += 1`` on the output would
    write through into memory the graph does not know about (an input whose saved values then changed
    without a version bump). Only arrays the backend cannot say own their memory are copied."""
    backend = backend_of_type(type(y))
    if not backend.inplace or backend.owns_memory(y):
        return y
    return backend.xp.asarray(y, copy=True)


def _style(cls: type) -> str:
    """"pytorch" or "chainer", read from the signatures of ``forward`` and ``backward``."""
    if cls.forward is Function.forward:  # forward_cpu / forward_gpu: Chainer's
        return "chainer"
    f_count, f_star = _positional(cls.forward)
    b_count, b_star = _positional(cls.backward) if cls.backward is not Function.backward else (None, False)
    if f_star or b_star or f_count != 1 or b_count == 1:
        return "pytorch"
    return "chainer"


def _positional(method: Any) -> tuple[int, bool]:
    """How many positional parameters ``method`` takes after ``self``, and whether it takes ``*args``."""
    params = list(inspect.signature(method).parameters.values())[1:]
    count = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
    return count, any(p.kind is p.VAR_POSITIONAL for p in params)


class Function(Node):
    """Function on variables with backpropagation ability (see the module docstring)."""

    #: "chainer" or "pytorch": the calling convention of forward and backward (None: from their signatures)
    style: str | None = None
    _style = "chainer"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.style not in (None, "chainer", "pytorch"):
            raise ValueError(f"polygrad: {cls.__name__}.style must be 'chainer' or 'pytorch', not {cls.style!r}")
        cls._style = cls.style or _style(cls)

    def __new__(cls, *args: Any, **kwargs: Any) -> "Function":
        # Fields exist before __init__ runs: subclasses need not call Function.__init__.
        self = super().__new__(cls)
        self._init_node()
        self._fresh()
        self.__dict__["_applying"] = False  # (not in _fresh: a retry starts afresh while it holds the claim)
        return self

    def _fresh(self) -> None:
        """The fields of one application, as before any: set when the instance is made and again
        when it is applied after a failed forward (a retry used the failed attempt's declarations,
        and its in-place write went uncounted: a graph that had saved the input used its new values)."""
        d = self.__dict__
        d["_applied"] = False
        d["_backend"] = None
        d["_record"] = False
        d["_needs_input_grad"] = ()
        d["_retained_inputs"] = None  # None: keep all
        d["_retained_outputs"] = ()
        d["_retain_after_backward"] = False
        d["_to_save"] = None
        d["_saved_versions"] = ()
        d["_dirty"] = ()
        d["_dirty_bumped"] = False
        d["_non_differentiable"] = ()
        d["_shared_storage"] = ()
        d["_input_refs"] = ()
        d["_in_saved"] = ()
        d["_out_saved"] = ()
        d["_out_versions"] = ()  # per output, (counter, version) of those arrays (see _link_outputs' end)
        d["_in_meta"] = ()
        d["_out_meta"] = ()
        d["_in_forward"] = False
        d["_declared"] = set()  # the mark_* / save_for_backward / retain_* calls made in this forward
        d["_wrapped"] = ()  # inputs given as raw arrays
        d["_in_vars"] = None  # the input Variables while forward runs

    def __init__(self) -> None:  # subclasses may define their own __init__ without calling this
        pass

    # -- applying ------------------------------------------------------------
    def __call__(self, *inputs: Any) -> Any:
        """Apply the function to Variables or raw arrays; return one Variable or a tuple."""
        d = self.__dict__
        with _CLAIM:  # the check and the claim in one step: two threads applying one instance both passed
            if self._applied or d["_applying"]:
                when = ("has already been applied" if self._applied
                        else "is being applied (by another thread, or from its own forward)")
                raise RuntimeError(
                    f"polygrad: this {self.label} instance {when}; a Function instance is used "
                    f"once. Make a fresh one, or copy.copy(f) before applying it again."
                )
            d["_applying"] = True
        try:
            return self._apply(inputs)
        finally:
            d["_applying"] = False  # (a failed forward leaves it unapplied: it may be applied again)

    def _apply(self, inputs: tuple) -> Any:
        if not inputs:
            raise TypeError(f"polygrad: {self.label} needs at least one input")
        if self._backend is not None:  # an earlier application's forward failed: start afresh
            self._fresh()
        for i, x in enumerate(inputs):
            if not isinstance(x, Variable) and not has_namespace(x):
                raise TypeError(
                    f"polygrad: {self.label}: input {i} is a {type(x).__name__}, not an array or Variable; a "
                    f"Function's inputs are arrays (pass other parameters to its __init__, or pg.asarray them)"
                )
        in_vars = tuple(x if isinstance(x, Variable) else Variable(x, requires_grad=False) for x in inputs)
        self._wrapped = tuple(not isinstance(x, Variable) for x in inputs)
        checks = type(self).check_type_forward is not Function.check_type_forward
        if checks and all(has_namespace(v._data) for v in in_vars):  # (symbolic data: apply refuses it below)
            from polygrad.core import type_check  # loaded only by Functions that check

            in_types = type_check.TypeInfoTuple.from_arrays(tuple(v._data for v in in_vars), self.label)
            with type_check.get_function_check_context(self.label):  # (the name this thread's messages give)
                self.check_type_forward(in_types)
        self._in_vars = in_vars  # (forward's tensors count their in-place changes on them)
        # where each input stands before forward: a dirty one moves (see _rebase)
        before = tuple((v._node, v._index) for v in in_vars)
        try:
            outs = apply(_ROW, in_vars, None, self)
        except BaseException:
            self._bump_dirty(in_vars)  # forward may have written into them before it failed
            raise
        finally:
            self._in_vars = None
        try:
            if self._dirty:
                self._rebase(in_vars, before, outs)
        finally:
            # read only while applying: the arrays they name are the user's to free from now on (as
            # PyTorch's ctx drops dirty_tensors and non_differentiable after forward)
            self._dirty = self._non_differentiable = self._shared_storage = ()
        return outs[0] if len(outs) == 1 else outs

    def _rebase(self, in_vars: tuple, before: tuple, outs: tuple) -> None:
        """What a built-in in-place operation does after its write, for each input forward changed
        (``mark_dirty``) and returned, now this Function's output: a view writes through to its
        base, which gets the new values by its row's unview (as PyTorch's CopySlices), and is taken
        again from it; the input's own views are taken again from it. Without, the base kept its
        old graph (h[0:2] tripled: h.grad missed the 3) and views of the input theirs. Bases and
        views are found first, for all: two dirty views of one base write into it in turn."""
        moved = []
        for v, (node, index) in zip(in_vars, before):
            if not any(v is o for o in outs) or not any(v._data is d for d in self._dirty):
                continue
            view = _view_base(node)
            if view is None and node is None:  # a view made outside recording
                view = _unrecorded_base(v)
                if view is not None:
                    *view, index = view
            moved.append((v, node, index, view, v._direct_views((node, index))))
        for v, node, index, view, views in moved:
            if view is not None:
                base, unview, params = view
                new_base = unview(GRAPH_OPS, base, v, index, **params)
                if new_base is not None:
                    if base._node is None:
                        base._check_inplace(self.label)
                    box, version = v._vbox, v._vbox.n
                    v._leave_node()  # the Function's output now stands in the base's graph
                    v._node, v._index = node, index  # and this variable is its view again
                    base._assign_inplace(new_base, self.label)
                    if v._node is node:
                        v._follow(base)
                    self._same_write(box, version)
            for w in views:
                w._follow(v)

    def _bump_dirty(self, in_vars: tuple) -> None:
        """Count the change of each input forward changed in place (``mark_dirty``), once and
        before anything can fail, so that graphs which saved it refuse to use it: the write
        has happened whether this application is refused, fails or is recorded."""
        if self._dirty and not self._dirty_bumped:
            self._dirty_bumped = True
            for iv in in_vars:
                if any(iv._data is t for t in self._dirty):
                    iv._vbox.bump(self.label)

    def _start(self, backend: Any, record: bool, edges: list) -> Any:
        """Called by apply before the forward hooks: this application's backend and
        whether it is recorded; returns what runs the forward."""
        self.seq = next_seq()
        try:
            self.xp = backend.xp
        except TypeError as exc:  # a backend without a namespace (pg.function's symbolic variables)
            raise TypeError(f"polygrad: {self.label} cannot run on backend {backend.name!r}: {exc}") from None
        self._backend = backend
        self._record = record
        self._needs_input_grad = tuple(e is not None for e in edges) if record else (False,) * len(edges)
        return self._run_forward

    def _run_forward(self, *in_data: Any) -> tuple:
        self._declared = set()
        self._in_forward = True
        try:
            if self._style == "pytorch":  # tensors in (Variables without a graph: PyTorch's tensor methods work)
                tensors = tuple(Variable._make(d) for d in in_data)
                try:
                    with config.no_backprop_mode():
                        outputs = self.forward(*tensors)
                finally:
                    self._count_writes(tensors, in_data)
                if not isinstance(outputs, tuple):
                    outputs = (outputs,)
                if self._dirty:
                    in_data = self._follow_rebound(tensors, in_data)
            else:
                outputs = self.forward(_Inputs(in_data))
                if not isinstance(outputs, tuple):
                    raise TypeError(
                        f"polygrad: {self.label}.forward must return a tuple of arrays, got {type(outputs).__name__}; "
                        f"write `return y,` for one output"
                    )
        finally:
            self._in_forward = False
        # forward computes on arrays; a result made with pg's functions (a Variable) gives its data,
        # but not one on a graph: the gradients of the Variables it came from would stop here
        for k, y in enumerate(outputs):
            if isinstance(y, Variable) and y._node is not None:
                raise TypeError(
                    f"polygrad: {self.label}.forward returned output {k} as a Variable on a graph (made from "
                    f"Variables that require grad, such as a parameter): the gradients of those Variables would "
                    f"stop at this Function. Pass them to the Function as inputs (its backward returns their "
                    f"gradients), or compute from their .data")
        outputs = tuple(y._data if isinstance(y, Variable) else y for y in outputs)
        for k, y in enumerate(outputs):
            if not hasattr(y, "shape") or not hasattr(y, "dtype"):
                raise TypeError(f"polygrad: {self.label}.forward returned {type(y).__name__} as output {k}, not an array")
        self._check_declarations(in_data, outputs)
        return outputs

    def _count_writes(self, tensors: tuple, in_data: tuple) -> None:
        """An in-place change forward made through a tensor method (``x += 1``) to an input's own
        array counts on the input, declared with ``mark_dirty`` or not, as in PyTorch, whose
        tensors share the input's counter: a graph that saved the input refuses it then (it
        computed with the changed values). A write that rebound the tensor to a new array (a
        backend without writes) changed no input. Declared ones are counted by _bump_dirty."""
        in_vars = self.__dict__.get("_in_vars") or ()
        for t, d, iv in zip(tensors, in_data, in_vars):
            if t._vb is not None and t._vb.n and t._data is d and not any(d is a for a in self._dirty):
                iv._vbox.bump(self.label)

    def _follow_rebound(self, tensors: tuple, in_data: tuple) -> tuple:
        """Forward's inputs as it left them. Where arrays are not written in place (dask, or
        ``inplace_policy("copy")``), ``x += 1`` on a tensor rebinds it to a new array: a tensor
        declared dirty is still the input's, so the input Variable takes its array, as it would
        share the written one on NumPy."""
        moved = list(in_data)
        for i, (t, d, iv) in enumerate(zip(tensors, in_data, self._in_vars)):
            a = t._data
            if a is not d and any(a is x for x in self._dirty):
                iv._data = moved[i] = a
        return tuple(moved)

    def _check_declarations(self, in_data: tuple, outputs: tuple) -> None:
        """What retain_inputs and retain_outputs were given must be indexes of forward's inputs and
        outputs; what mark_dirty, mark_non_differentiable and mark_shared_storage were given,
        forward's inputs, outputs and (input, output) pairs."""
        def among(a: Any, arrays: tuple) -> bool:
            return any(a is b for b in arrays)

        for what, indexes, n in (("retain_inputs", self._retained_inputs, len(in_data)),
                                 ("retain_outputs", self._retained_outputs, len(outputs))):
            for i in indexes or ():  # an index past the end (or -1) kept nothing, silently
                if as_int(i) is None or not 0 <= i < n:
                    raise ValueError(f"polygrad: {self.label}.{what} was given index {i!r}; forward has {n} "
                                     f"{what[7:]}, numbered from 0")

        for a in self._dirty:
            if not among(a, in_data):
                why = "" if self._backend.inplace else (
                    f" ({self._backend.name}'s arrays are not written in place: `x += 1` on an input array makes a "
                    f"new one. Return the new array without mark_dirty, or take the inputs as PyTorch-style "
                    f"tensors, forward(self, x), whose in-place operators follow it)")
                raise ValueError(
                    f"polygrad: {self.label}.mark_dirty was given an array that is not an input of forward{why}")
            if not among(a, outputs):  # (as PyTorch) its Variable would keep the graph of its old values
                raise ValueError(f"polygrad: {self.label}.mark_dirty was given an input that forward changed in place "
                                 f"but did not return: return it as an output, so that its Variable takes the new "
                                 f"values' graph")
        for a in self._non_differentiable:
            if not among(a, outputs):
                raise ValueError(
                    f"polygrad: {self.label}.mark_non_differentiable was given an array that forward did not return")
        for pair in self._shared_storage:
            if not (isinstance(pair, tuple) and len(pair) == 2 and among(pair[0], in_data) and among(pair[1], outputs)):
                raise ValueError(
                    f"polygrad: {self.label}.mark_shared_storage takes (input, output) pairs of forward's arrays, "
                    f"got {type(pair).__name__}")

    def _link_outputs(self, outputs: tuple, in_vars: tuple, record: bool, volatile: bool) -> tuple:
        """Output Variables: a dirty input returned is that input (its version bumped), an
        input array returned as is shares its counter, non-differentiable ones carry no
        gradient, ``mark_shared_storage`` pairs share counters."""
        in_data = tuple(v._data for v in in_vars)
        dirty = self._dirty
        self._bump_dirty(in_vars)
        for iv, d in zip(in_vars, in_data):
            if any(d is t for t in dirty):  # changed in place by forward, returned or not
                iv._check_inplace(self.label)
        shared = [b for _, b in self._shared_storage]
        out_vars: list = []
        for i, y in enumerate(outputs):
            same = next((iv for iv, d in zip(in_vars, in_data) if y is d), None)
            if same is not None and any(y is t for t in dirty):
                v = same
            else:
                # an array returned twice is one array: its outputs share one version counter (and one copy)
                twin = same if same is not None else next((ov for ov, o in zip(out_vars, outputs) if o is y), None)
                if twin is not None:
                    v = Variable._make(twin._data, vbox=twin._vbox)
                else:
                    v = Variable._make(y if any(y is b for b in shared) else _own_memory(y))
            # as PyTorch's: an integer or bool output carries no gradient (a Variable of one cannot require grad)
            diff = record and is_floating(y) and not any(y is t for t in self._non_differentiable)
            v._volatile = volatile
            v._requires_grad = diff
            v._node = self if diff else None
            v._index = i
            out_vars.append(v)
        self._no_grad_outputs = frozenset(i for i, v in enumerate(out_vars) if v._node is None)
        for a, b in self._shared_storage:
            ia = next((v for v, d in zip(in_vars, in_data) if d is a), None)
            ob = next((v for v in out_vars if v._data is b), None)
            if ia is not None and ob is not None:
                ob._vbox = ia._vbox
        # Outputs that share an input's memory (returned as is, or declared): an in-place write
        # to one would change the input behind its graph's back (see Variable._check_inplace).
        self._aliased_outputs = frozenset(
            i for i, (y, v) in enumerate(zip(outputs, out_vars))
            if not any(v is iv for iv in in_vars) and any(y is d for d in (*in_data, *shared)))
        keep = self._retained_inputs
        # Inputs given as raw arrays have no other holder: keep their Variables while their data is kept.
        self._input_refs = tuple((lambda v=v: v) if wrapped and (keep is None or i in keep) else weakref.ref(v)
                                 for i, (v, wrapped) in enumerate(zip(in_vars, self._wrapped)))
        self._applied = True
        return tuple(out_vars)

    def _save(self, saved: list, checks: tuple, in_data: list, outputs: tuple, keep_output: bool = False) -> None:
        """Keep what backward needs (called by apply when the application is recorded)."""
        keep = self._retained_inputs
        if self._dirty:  # a dirty input may have followed its tensor to a new array (_follow_rebound)
            in_data = [v._data for v in self.inputs]
        # versions as forward left them (a dirty input was bumped by _link_outputs)
        self._in_saved = tuple((in_data[i], box, box.n) if keep is None or i in keep else None
                               for i, box, _ in checks)
        out_vars = [r() for r in self.outputs]
        self._out_saved = tuple((v._data, v._vbox, v._vbox.n) if i in self._retained_outputs else None
                                for i, v in enumerate(out_vars))
        self._in_meta = tuple((tuple(d.shape), d.dtype) for d in in_data)
        self._out_meta = tuple((tuple(y.shape), y.dtype) for y in outputs)
        # A Chainer-style forward may keep its outputs by reference (self.y = y, a view of it, inside an object:
        # the seed allows it) and read them in backward, where y *= 2 would have changed them. The arrays forward
        # made for its outputs (not an input's, not the copy _own_memory made) are noted, on their counters
        # (Version.holder): until backward frees this node, an in-place write through a Variable of such a
        # counter (the output, its views, one detach()ed) gives it a new array (Variable._write), and the array
        # the Function may hold keeps forward's values. A write into that array that is no Variable's (another
        # Function's forward marking it dirty) moves the counter: backward refuses it, unless forward said with
        # retain_outputs which outputs it reads (those are checked as retained). PyTorch-style backward reads
        # its outputs from saved_tensors, which are version-checked as PyTorch's are.
        if self._style == "chainer" and self._backend.inplace:
            theirs = (*in_data, *(b for _, b in self._shared_storage))
            made = [i for i, (v, y) in enumerate(zip(out_vars, outputs))
                    if v._data is y and not any(y is a for a in theirs)]
            me = weakref.ref(self)
            for i in made:
                out_vars[i]._vbox.holder = me
            if "retain_outputs" not in self._declared:
                self._out_versions = tuple((out_vars[i]._vbox, out_vars[i]._vbox.n) if i in made else None
                                           for i in range(len(outputs)))
        if self._to_save:
            holders = [r() for r in self._input_refs] + out_vars
            self._saved_versions = tuple(
                next(((f"saved tensor {k}", v._vbox, v._vbox.n) for v in holders if v._data is a and a is not None), None)
                for k, a in enumerate(_arrays(self._to_save))
            )

    def _may_hold(self) -> bool:
        """Whether this Function may still read, in its backward, the output arrays its forward made (see
        Version.holder): until backward freed it."""
        return not self._freed

    # -- what subclasses override -----------------------------------------------
    def check_type_forward(self, in_types: Any) -> None:
        """Check the input types before forward (see ``polygrad.type_check``)."""

    def forward(self, inputs: tuple) -> tuple:
        """Compute the outputs from the input arrays; delegates by device kind."""
        if self._backend.device == "gpu":
            return self.forward_gpu(inputs)
        return self.forward_cpu(inputs)

    def forward_cpu(self, inputs: tuple) -> tuple:
        raise NotImplementedError(f"polygrad: {self.label} implements neither forward nor forward_cpu")

    def forward_gpu(self, inputs: tuple) -> tuple:
        raise NotImplementedError(f"polygrad: {self.label} implements neither forward nor forward_gpu")

    def backward(self, inputs: tuple, grad_outputs: tuple) -> tuple:
        """Gradients of the inputs from the output gradients; delegates by device kind.

        Returns a tuple with one array (or None) per input. ``inputs`` has None
        for inputs not kept by ``retain_inputs``; ``grad_outputs`` has None for
        outputs that received no gradient.
        """
        if self._backend.device == "gpu":
            return self.backward_gpu(inputs, grad_outputs)
        return self.backward_cpu(inputs, grad_outputs)

    def backward_cpu(self, inputs: tuple, grad_outputs: tuple) -> tuple:
        return (None,) * len(inputs)

    def backward_gpu(self, inputs: tuple, grad_outputs: tuple) -> tuple:
        return (None,) * len(inputs)

    # -- calls from inside forward (each at most once) ---------------------------------
    def _declare(self, what: str) -> None:
        if not self._in_forward:
            raise RuntimeError(f"polygrad: {self.label}.{what} may only be called inside forward")
        if what in self._declared:
            raise RuntimeError(f"polygrad: {self.label}.{what} may be called at most once per forward")
        self._declared.add(what)

    def retain_inputs(self, indexes: Any) -> None:
        """Keep only these inputs' arrays for backward (default: all are kept)."""
        self._declare("retain_inputs")
        self._retained_inputs = frozenset(indexes)

    def retain_outputs(self, indexes: Any, retain_after_backward: bool = False) -> None:
        """Keep these outputs' arrays for backward; they appear in ``output_data``."""
        self._declare("retain_outputs")
        self._retained_outputs = frozenset(indexes)
        self._retain_after_backward = retain_after_backward

    def save_for_backward(self, *arrays: Any) -> None:
        """Save arrays (inputs, outputs or others; None allowed) for backward; read them from ``saved_tensors``."""
        self._declare("save_for_backward")
        self._to_save = arrays  # as given (PyTorch-style code reads back its tensors); checked through their data

    def mark_dirty(self, *arrays: Any) -> None:
        """Declare input arrays that forward modified in place (return them as outputs)."""
        self._declare("mark_dirty")
        self._dirty = _arrays(arrays)

    def mark_non_differentiable(self, *arrays: Any) -> None:
        """Declare outputs that are not differentiable (their gradients are always None)."""
        self._declare("mark_non_differentiable")
        self._non_differentiable = _arrays(arrays)

    def mark_shared_storage(self, *pairs: Any) -> None:
        """Declare ``(input, output)`` array pairs that share memory (views), so an
        in-place change of the output counts as a change of the input."""
        self._declare("mark_shared_storage")
        self._shared_storage = tuple(_arrays(p) if isinstance(p, tuple) else p for p in pairs)

    # -- attributes ---------------------------------------------------------------
    @property
    def inputs(self) -> tuple:
        """The input Variables (None for those already freed)."""
        return tuple(r() for r in self._input_refs)

    @property
    def output_data(self) -> tuple:
        """Arrays of the outputs kept by ``retain_outputs`` (None for the others)."""
        return tuple(None if s is None else self._check(s, f"output {i}") for i, s in enumerate(self._out_saved))

    output_arrays = output_data

    @property
    def saved_tensors(self) -> tuple:
        """What ``save_for_backward`` saved, checked against later in-place changes."""
        if self._freed:
            raise freed_error(self)
        saved = self._to_save or ()
        for a, rec in zip(_arrays(saved), self._saved_versions):
            if rec is not None:
                self._check((a, rec[1], rec[2]), rec[0])
        return saved

    @property
    def backend(self) -> Any:
        """The backend this application ran on."""
        return self._backend

    @property
    def needs_input_grad(self) -> tuple:
        """Per input, whether backward computes its gradient (PyTorch 0.x)."""
        return self._needs_input_grad

    @property
    def num_inputs(self) -> int:
        return len(self._input_refs)

    @property
    def requires_grad(self) -> bool:
        """Whether backward will be called for this application."""
        return self._record

    # -- engine interface -----------------------------------------------------------
    def _check(self, saved: tuple, what: str) -> Any:
        data, box, version = saved
        if box is not None and box.n != version:
            raise version_error(self, what, data.shape, version, box)
        return data

    def _backward(self, grad_outputs: tuple, create_graph: bool) -> tuple:
        if self._freed:
            raise freed_error(self)
        in_data = tuple(None if s is None else self._check(s, f"input {i}") for i, s in enumerate(self._in_saved))
        for i, s in enumerate(self._out_saved):  # retained outputs are checked too
            if s is not None:
                self._check(s, f"output {i}")
        for i, s in enumerate(self._out_versions):  # and the arrays forward made, which it may hold
            if s is not None and s[0].n != s[1]:
                raise self._held_output_error(i, *s)
        gys = tuple(g._data if isinstance(g, Variable) else g for g in grad_outputs)
        xp = self._backend.xp
        self.xp = xp
        if self._style == "pytorch":  # gradients unpacked; an output that got none gets zeros, one that is
            # not differentiable (mark_non_differentiable, an integer output) None, as the seed says
            gys = tuple(None if i in self._no_grad_outputs else xp.zeros(shape, dtype=dtype) if g is None else g
                        for i, (g, (shape, dtype)) in enumerate(zip(gys, self._out_meta)))
            if type(self).backward is Function.backward:  # none written: not differentiable (Chainer's
                gxs = (None,) * len(self.edges)  # default takes (inputs, grad_outputs), not the unpacked gradients)
            else:
                with config.no_backprop_mode():
                    gxs = self.backward(*(None if g is None else Variable._make(g) for g in gys))
            if not isinstance(gxs, tuple):  # one gradient (or None, PyTorch's "no gradient") without a tuple
                gxs = (gxs,)
        else:
            gxs = self.backward(in_data, gys)
        if not isinstance(gxs, tuple):
            # None too: a forgotten `return` (Chainer indexes what backward returns, so it raises there); a
            # Function that is not differentiable leaves backward out (its default returns a tuple of None)
            got = "None" if gxs is None else type(gxs).__name__
            raise TypeError(
                f"polygrad: {self.label}.backward returned {got}; return a tuple with one gradient (or None) "
                f"per input, e.g. `return gx,` for one input"
            )
        gxs = tuple(g._data if isinstance(g, Variable) else g for g in gxs)
        if len(gxs) != len(self.edges):
            raise ValueError(
                f"polygrad: {self.label}.backward returned {len(gxs)} gradients for {len(self.edges)} inputs"
            )
        # A gradient for an input that needs none (no edge: an integer index, a constant) is
        # dropped unchecked, as PyTorch's and Chainer's backprop ignore it.
        label = self.label
        gxs = tuple(None if g is None or e is None
                    else admit(g, shape, dtype, self._backend, f"{label}.backward's gradient for input {i}", user=True)
                    for i, (g, e, (shape, dtype)) in enumerate(zip(gxs, self.edges, self._in_meta)))
        # An input's or output's own array returned as a gradient (y = x * w: gx = w) would become a
        # leaf's .grad sharing memory with a parameter, and accumulating into it would change the
        # parameter: such a gradient is copied.
        held = (*(r()._data for r in self._input_refs if r() is not None), *in_data,
                *(s[0] for s in self._out_saved if s is not None), *_arrays(self._to_save or ()))
        gxs = tuple(xp.asarray(g, copy=True) if g is not None and any(g is a for a in held) else g for g in gxs)
        if create_graph:  # user backward works on arrays: differentiable once
            return _OnceDifferentiated.wrap(self, gxs, grad_outputs)
        return gxs

    def _held_output_error(self, i: int, box: Any, version: int) -> RuntimeError:
        name = self.label
        debug = f" (debug: {inplace_site(box)})" if config.debug.get() else ""
        return RuntimeError(
            f"polygrad: output {i} of {name} (shape {tuple(self._out_meta[i][0])}) was written in place after forward "
            f"(version {version}, now {box.n}) where no Variable could take a copy (a Function that marks it dirty), "
            f"and {name}, a Chainer-style Function, may hold that array for its backward. Apply that Function to a "
            f"copy (y * 1), or, if {name}.backward reads none of its outputs, say so with self.retain_outputs(()) "
            f"in forward.{debug}")

    def __getstate__(self) -> dict:
        # The namespace module set for forward and backward (``self.xp``) neither pickles nor deep-copies
        # (copy.deepcopy of an output failed with "cannot pickle 'module' object"); backward sets it again.
        state = super().__getstate__()
        state.pop("xp", None)
        return state

    def _release(self, by: Any = True) -> None:
        self._freed = by
        self._out_versions = ()
        self._in_saved = tuple(None for _ in self._in_saved)
        if not self._retain_after_backward:
            self._out_saved = tuple(None for _ in self._out_saved)
        self._to_save = None
        # a raw-array input's Variable was held only for its kept data: it may go now ("inputs" gives None)
        self._input_refs = tuple(weakref.ref(v) if (v := r()) is not None else _dead for r in self._input_refs)

    def _same_write(self, box: Any, version: int) -> None:
        """The base's write of ``_rebase`` stored the values forward had written already: what
        this Function saved at ``version`` of ``box`` is still what it saved."""
        if box.n == version:
            return

        def moved(rec: Any) -> Any:
            return (*rec[:-2], box, box.n) if rec is not None and rec[-2] is box and rec[-1] == version else rec

        self._in_saved = tuple(moved(r) for r in self._in_saved)
        self._out_saved = tuple(moved(r) for r in self._out_saved)
        self._out_versions = tuple(moved(r) for r in self._out_versions)
        self._saved_versions = tuple(moved(r) for r in self._saved_versions)

    def _protect_saved(self, array: Any, copy: bool) -> None:
        saved = list(self._in_saved)
        for i, s in enumerate(saved):
            if s is not None and s[0] is array:
                saved[i] = (self.xp.asarray(array, copy=True) if copy else array, None, 0)
        self._in_saved = tuple(saved)

    def _input_meta(self, i: int) -> tuple:
        return self._in_meta[i] if i < len(self._in_meta) else (None, None)

    def _hook_in_data(self) -> tuple:
        return tuple(None if s is None else s[0] for s in self._in_saved)

    def __copy__(self) -> "Function":
        """A fresh instance with the user's own attributes (and local hooks): nothing of an
        application (what its forward declared, saved or linked) is carried over."""
        new = type(self).__new__(type(self))
        d = {k: v for k, v in self.__dict__.items() if not k.startswith("_")}
        d.pop("xp", None)
        new.__dict__.update(d)
        if self._local_hooks:
            new._local_hooks = type(self._local_hooks)(self._local_hooks)
        return new


class _OnceDifferentiated(Node):
    """Stands behind the gradients a Function's backward gave under ``create_graph``: arrays,
    with no graph of how they depend on the Function's inputs (or on the output gradients).
    A backward that reaches one raises, as PyTorch's ``once_differentiable`` does; without
    it, a second derivative left this path out, silently (``identity(x) ** 3 + x ** 3``
    gave 6x where 12x is right)."""

    __slots__ = ("label",)

    @classmethod
    def wrap(cls, function: "Function", gxs: tuple, grad_outputs: tuple) -> tuple:
        node = cls()
        node.label = function.label
        # What the gradients depend on: the Function's inputs and its output gradients
        # (so that pg.grad, which runs only the nodes on a path to its inputs, reaches it).
        node.edges = tuple(function.edges) + tuple(g._edge() for g in grad_outputs if isinstance(g, Variable))
        node.seq = next_seq()
        outs = tuple(None if g is None else Variable._make(g, node, i, requires_grad=True) for i, g in enumerate(gxs))
        node.outputs = tuple(weakref.ref(v) if v is not None else _dead for v in outs)
        return outs

    def _backward(self, grad_outputs: tuple, create_graph: bool) -> tuple:
        raise RuntimeError(
            f"polygrad: {self.label}.backward computes its gradient on arrays, so {self.label} is differentiable "
            f"once: a second derivative through it is not defined. Write it with polygrad's functions to "
            f"differentiate it again"
        )

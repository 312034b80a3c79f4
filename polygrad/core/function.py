"""Function: the class users subclass to define an operation and its derivative.

Subclasses implement ``forward(inputs)`` and ``backward(inputs, grad_outputs)``
on tuples of arrays (or ``forward_cpu`` / ``forward_gpu`` and ``backward_cpu`` /
``backward_gpu``, chosen by the backend's device kind). ``self.xp`` is the
inputs' Array API namespace while they run. A missing backward means the
function is not differentiable (its inputs get None gradients).

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

import weakref
from typing import Any

from polygrad.core import config, hooks as _hooks
from polygrad.core.dispatch import backend_of_type
from polygrad.core.node import Node, freed_error, version_error
from polygrad.core.variable import Variable


class Function(Node):
    """Function on variables with backpropagation ability (see the module docstring)."""

    _applied = False
    # Node's fields before the first application (subclasses need not call
    # __init__); these class defaults shadow Node's slots, so a Function keeps
    # its fields in its __dict__.
    edges: tuple = ()
    outputs: tuple = ()
    seq = 0
    local_function_hooks = None
    _var_hooks = False
    _freed = False

    def __init__(self) -> None:  # subclasses may define their own __init__ without calling this
        pass

    def _setup_node(self) -> None:
        local = self.local_function_hooks  # add_hook may have run before the application
        Node.__init__(self)
        self.local_function_hooks = local
        d = self.__dict__
        d.setdefault("_retained_inputs", None)  # None: keep all
        d.setdefault("_retained_outputs", ())
        d.setdefault("_retain_after_backward", False)

    # -- applying ------------------------------------------------------------
    def __call__(self, *inputs: Any) -> Any:
        """Apply the function to Variables or raw arrays; return one Variable or a tuple."""
        if self._applied:
            raise RuntimeError(
                f"polygrad: this {self.label} instance has already been applied; a Function instance is used "
                f"once. Make a fresh one, or copy.copy(f) before applying it again."
            )
        if not inputs:
            raise TypeError(f"polygrad: {self.label} needs at least one input")
        in_vars = tuple(x if isinstance(x, Variable) else Variable(x, requires_grad=False) for x in inputs)
        in_data = tuple(v._data for v in in_vars)
        backend = None
        for v, d in zip(in_vars, in_data):
            b = backend_of_type(type(d))
            if backend is not None and b is not backend:
                raise TypeError(
                    f"polygrad: {self.label} got arrays of two backends, {backend.name!r} and {b.name!r}; "
                    f"move one with pg.to_backend(x, {backend.name!r})"
                )
            backend = b
        self._setup_node()
        self._applied = True
        self.xp = backend.xp
        self._backend = backend
        volatile = any(v._volatile for v in in_vars)
        needs = tuple(v._requires_grad for v in in_vars)
        record = config.enable_backprop.get() and not volatile and any(needs)
        self.needs_input_grad = needs if record else (False,) * len(in_vars)
        self._record = record
        self._in_shapes = tuple(tuple(d.shape) for d in in_data)

        if type(self).check_type_forward is not Function.check_type_forward:
            from polygrad.core.type_check import TypeInfoTuple

            self.check_type_forward(TypeInfoTuple.from_arrays(in_data, self.label))

        hooks = _hooks._active.get()
        if self.local_function_hooks:
            hooks = hooks + tuple(self.local_function_hooks.values())
        for h in hooks:
            h.forward_preprocess(self, in_data)
        outputs = self.forward(in_data)
        if not isinstance(outputs, tuple):
            raise TypeError(
                f"polygrad: {self.label}.forward must return a tuple of arrays, got {type(outputs).__name__}; "
                f"write `return y,` for one output"
            )
        for h in hooks:
            h.forward_postprocess(self, in_data)

        if record:
            self.edges = tuple(v._edge() for v in in_vars)
        dirty = self.__dict__.get("_dirty", ())
        nondiff = self.__dict__.get("_non_differentiable", ())
        out_vars = []
        for i, y in enumerate(outputs):
            v = None
            for iv, d in zip(in_vars, in_data):
                if y is d and any(y is t for t in dirty):
                    iv._check_inplace(self.label)
                    iv._vbox[0] += 1
                    v = iv
            if v is None:
                # the same array as an input: in-place changes through either are seen by both
                box = next((iv._vbox for iv, d in zip(in_vars, in_data) if y is d), None)
                v = Variable._make(y, vbox=box)
            v._volatile = volatile
            diff = record and not any(y is t for t in nondiff)
            v._requires_grad = diff
            v._node = self if diff else None
            v._index = i
            out_vars.append(v)
        for a, b in self.__dict__.get("_shared_storage", ()):
            ia = next((v for v, d in zip(in_vars, in_data) if d is a), None)
            ob = next((v for v in out_vars if v._data is b), None)
            if ia is not None and ob is not None:
                ob._vbox = ia._vbox

        to_save = self.__dict__.get("_to_save")
        if to_save:
            holders = tuple(in_vars) + tuple(out_vars)
            self._saved_versions = tuple(
                next(((f"saved tensor {k}", v._vbox, v._vbox[0]) for v in holders if v._data is a and a is not None), None)
                for k, a in enumerate(to_save)
            )
        self.outputs = tuple(weakref.ref(v) for v in out_vars)
        self._input_refs = tuple(weakref.ref(v) for v in in_vars)
        if record:
            keep = self._retained_inputs
            self._in_saved = tuple(
                (d, v._vbox, v._vbox[0]) if keep is None or i in keep else None
                for i, (v, d) in enumerate(zip(in_vars, in_data))
            )
            self._out_saved = tuple(
                (out_vars[i]._data, out_vars[i]._vbox, out_vars[i]._vbox[0]) if i in self._retained_outputs else None
                for i in range(len(out_vars))
            )
        else:
            self._in_saved = ()
            self._out_saved = ()
        return out_vars[0] if len(out_vars) == 1 else tuple(out_vars)

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

    # -- calls from inside forward ------------------------------------------------
    def retain_inputs(self, indexes: Any) -> None:
        """Keep only these inputs' arrays for backward (default: all are kept)."""
        self._retained_inputs = frozenset(indexes)

    def retain_outputs(self, indexes: Any, retain_after_backward: bool = False) -> None:
        """Keep these outputs' arrays for backward; they appear in ``output_data``."""
        self._retained_outputs = frozenset(indexes)
        self._retain_after_backward = retain_after_backward

    def save_for_backward(self, *arrays: Any) -> None:
        """Save arrays (inputs, outputs or others) for backward; read them from ``saved_tensors``."""
        self._to_save = arrays

    def mark_dirty(self, *arrays: Any) -> None:
        """Declare input arrays that forward modified in place (return them as outputs)."""
        self._dirty = arrays

    def mark_non_differentiable(self, *arrays: Any) -> None:
        """Declare outputs that are not differentiable (their gradients are always None)."""
        self._non_differentiable = arrays

    def mark_shared_storage(self, *pairs: Any) -> None:
        """Declare ``(input, output)`` array pairs that share memory (views), so an
        in-place change of the output counts as a change of the input."""
        self._shared_storage = pairs

    # -- attributes ---------------------------------------------------------------
    @property
    def inputs(self) -> tuple:
        """The input Variables (None for those already freed)."""
        return tuple(r() for r in self.__dict__.get("_input_refs", ()))

    @property
    def output_data(self) -> tuple:
        """Arrays of the outputs kept by ``retain_outputs`` (None for the others)."""
        return tuple(None if s is None else self._check(s, f"output {i}") for i, s in enumerate(self.__dict__.get("_out_saved", ())))

    @property
    def saved_tensors(self) -> tuple:
        """What ``save_for_backward`` saved, checked against later in-place changes."""
        if self._freed:
            raise freed_error(self)
        saved = self.__dict__.get("_to_save") or ()
        for a, rec in zip(saved, self.__dict__.get("_saved_versions", ())):
            if rec is not None:
                self._check((a, rec[1], rec[2]), rec[0])
        return saved

    @property
    def backend(self) -> Any:
        """The backend this application ran on."""
        return self.__dict__.get("_backend")

    @property
    def num_inputs(self) -> int:
        return len(self.__dict__.get("_input_refs", ()))

    @property
    def num_outputs(self) -> int:
        return len(self.outputs)

    @property
    def requires_grad(self) -> bool:
        """Whether backward will be called for this application."""
        return bool(self.__dict__.get("_record", False))

    @property
    def previous_functions(self) -> tuple:
        """Per input: ``(creator, output index)``, or ``(leaf variable, 0)``, or None."""
        return tuple(None if e is None else (e[1], 0) if e[0] is None else e for e in self.edges)

    # -- engine interface -----------------------------------------------------------
    def _check(self, saved: tuple, what: str) -> Any:
        data, vbox, version = saved
        if vbox is not None and vbox[0] != version:
            raise version_error(self, what, data.shape, version, vbox[0])
        return data

    def _backward(self, grad_outputs: tuple, create_graph: bool) -> tuple:
        if self._freed:
            raise freed_error(self)
        in_data = tuple(None if s is None else self._check(s, f"input {i}") for i, s in enumerate(self._in_saved))
        self.output_data  # version check of retained outputs
        gys = tuple(g._data if isinstance(g, Variable) else g for g in grad_outputs)
        xp = self._backend.xp
        self.xp = xp
        gxs = self.backward(in_data, gys)
        if not isinstance(gxs, tuple):
            if gxs is None:
                gxs = (None,) * len(self.edges)
            else:
                raise TypeError(
                    f"polygrad: {self.label}.backward must return a tuple with one gradient per input, "
                    f"got {type(gxs).__name__}; write `return gx,` for one input"
                )
        if len(gxs) != len(self.edges):
            raise ValueError(
                f"polygrad: {self.label}.backward returned {len(gxs)} gradients for {len(self.edges)} inputs"
            )
        for i, (g, shape) in enumerate(zip(gxs, self._in_shapes)):
            if g is not None and tuple(g.shape) != shape:
                raise ValueError(
                    f"polygrad: {self.label}.backward returned a gradient of shape {tuple(g.shape)} for "
                    f"input {i} of shape {shape}"
                )
        if create_graph:  # user backward works on arrays: differentiable once
            return tuple(None if g is None else Variable(g, requires_grad=False) for g in gxs)
        return gxs

    def _release(self) -> None:
        self._freed = True
        self._in_saved = tuple(None for _ in self._in_saved)
        if not self._retain_after_backward:
            self._out_saved = tuple(None for _ in self._out_saved)
        self.__dict__.pop("_to_save", None)

    def _protect_saved(self, array: Any, copy: bool) -> None:
        saved = list(self._in_saved)
        for i, s in enumerate(saved):
            if s is not None and s[0] is array:
                saved[i] = (self.xp.asarray(array, copy=True) if copy else array, None, 0)
        self._in_saved = tuple(saved)

    def _hook_in_data(self) -> tuple:
        return tuple(None if s is None else s[0] for s in self.__dict__.get("_in_saved", ()))

    def __copy__(self) -> "Function":
        new = type(self).__new__(type(self))
        d = {k: v for k, v in self.__dict__.items() if not k.startswith("_") or k in ("_retained_inputs",)}
        d.pop("xp", None)
        d.pop("needs_input_grad", None)
        new.__dict__.update(d)
        if self.local_function_hooks:
            new.local_function_hooks = type(self.local_function_hooks)(self.local_function_hooks)
        return new

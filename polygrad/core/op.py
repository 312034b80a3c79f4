"""Rows of the op table: what polygrad knows about each op, in one place.

An :class:`Op` is declared once: a forward kernel ``fwd(xp, *args, **params)``
written against the Array API namespace (by default the namespace's function of
the row's name: ``Op("exp")`` runs ``xp.exp``; a row gives its own kernel only
where it does something else, such as passing a parameter the standard makes
positional-only, since ``apply`` passes parameters by keyword), and vjp rules
``rule(o, g, ans, *args, **params) -> gradient`` written with ``o``, a
namespace of polygrad ops. The engine (``polygrad.core.primitive``) picks ``o``:

* plain backward: ``o`` runs the forward kernels directly on raw arrays, so a
  rule costs what the hand-written array code costs;
* ``create_graph=True`` (and symbolic graphs): ``o`` is the differentiable ops
  namespace, so the same rule builds a graph and higher derivatives come free.

Rules receive the inputs the op declared it saves (``saves="x"``, ``"xy"``,
``"ans"``, ...); for ops declared ``shapes=True`` an input not saved arrives as
a placeholder with only ``.shape``, ``.ndim`` and ``.dtype``.
"""

from __future__ import annotations

import functools
import sys
import warnings
import weakref
from typing import Any, Callable

from polygrad.core.dispatch import backend_of_type

REGISTRY: dict[str, "Op"] = {}

#: The standard's extensions: a row named ``linalg_inv`` runs ``xp.linalg.inv`` by default.
EXTENSIONS = ("linalg", "fft")


class NamespaceKernel:
    """The default forward kernel of a row: the backend namespace's function of
    the row's name (``xp.exp`` for ``exp``, ``xp.linalg.inv`` for ``linalg_inv``).

    ``Op.kernel`` resolves it once per backend and then calls the namespace's
    function directly; calling the object itself, ``fwd(xp, *args, **params)``,
    does the same as any other kernel.
    """

    __slots__ = ("path",)

    def __init__(self, name: str) -> None:
        ext, _, rest = name.partition("_")
        self.path = (ext, rest) if ext in EXTENSIONS and rest else (name,)

    def resolve(self, xp: Any) -> Callable:
        fn = xp
        for part in self.path:
            fn = getattr(fn, part)
        return fn

    def __call__(self, xp: Any, *args: Any, **params: Any) -> Any:
        return self.resolve(xp)(*args, **params)

    def __repr__(self) -> str:
        return f"<xp.{'.'.join(self.path)}>"


class Op:
    """One row of the op table: a name, a forward kernel, vjp rules, and the facts
    the engine and the compiler read (``view``, ``deterministic``, ...).

    ``fwd`` is the forward kernel, ``fwd(xp, *arrays, **params)``; leave it out
    when the row is the namespace's function of the same name.
    """

    __slots__ = ("name", "fwd", "vjps", "keep", "keep_output", "broadcasts", "shapes", "metas", "differentiable",
                 "uses_xp", "view", "multi", "deterministic", "node_class", "keep_for", "keep_always", "frees", "unview", "casts", "elementwise",
                 "value_shapes", "shape_args", "module", "origin", "checked", "records", "remat", "_impl",
                 "__weakref__")

    def __init__(self, name: str, fwd: Callable | None = None, *, broadcasts: bool = False, shapes: bool = False,
                 differentiable: bool = True, uses_xp: bool = True, view: bool | Callable = False, multi: bool = False,
                 deterministic: bool = True, node_class: Any = None, unview: Callable | None = None,
                 casts: bool = False, elementwise: bool = False, value_shapes: bool | Callable = False,
                 shape_args: slice = slice(None), remat: bool = False):
        self.name = name
        # No kernel given: the backend namespace's function of the same name, ``xp.<name>``.
        self.fwd = NamespaceKernel(name) if fwd is None else fwd
        # False: each call draws anew (random numbers); compiled functions never merge or fold two calls.
        self.deterministic = deterministic
        # The graph node class recorded for an application (None: polygrad.core.primitive.Primitive).
        self.node_class = node_class
        self.uses_xp = uses_xp  # False: fwd(*args) is called without the namespace (operators)
        # The output may share memory with input 0 on some backend: it shares input 0's version
        # counter, and compiled functions copy it before handing it out. True, or a predicate of
        # the parameters where only some calls are views (getitem: a basic key; an index array
        # or a mask makes a copy, with a counter of its own); see :func:`is_view`. ``returned_input``:
        # a view only where the kernel returned its input itself (+x, conj, sum_to, astype).
        self.view = view
        # For a view: ``unview(o, base, value, index, **params) -> new base``, the base with this
        # view's part replaced by ``value`` (written with ``o``, differentiable), or None where
        # the output is no view of the base for these parameters. A write through a view of a
        # Variable goes to its base through it, so the base's graph sees the write (PyTorch's
        # CopySlices). Rows without it are never written through.
        self.unview = unview
        # The result's dtype is a parameter (astype, sum(dtype=), ...), or an input with no
        # gradient rule may need one (where's condition): an integer or boolean result carries
        # no gradient, checked per call (other rows know theirs: def_nograd).
        self.casts = casts
        # Each output element depends only on the input elements at its position (after
        # broadcasting): compiled functions may fuse a group of such rows into one kernel.
        self.elementwise = elementwise
        # The output's shape depends on the input values, not only on their shapes (unique_*,
        # nonzero, a boolean mask): a compiled program checks it at every call and is traced
        # again where it changed. True, or a predicate of the inputs (repeat: only where the
        # counts are an array); see :func:`value_shaped`.
        self.value_shapes = value_shapes
        # For such a row, the inputs whose values decide the shape (a slice of the inputs): a
        # boolean mask's, not the data it selects from (a compiled program refuses a shape that
        # random draws decide, not one that only selects random values).
        self.shape_args = shape_args
        # The output is an exact image of input 0, of its shape and dtype, cheap to compute
        # again (negation): a node that keeps this output and that same input (``-x * x``)
        # keeps the input only and computes the output again in its backward (see
        # ``polygrad.core.primitive.Recomputing``): the output's memory is freed with the
        # user's last reference to it, as hand-written code that recomputes it frees it.
        self.remat = remat
        self.multi = multi  # the kernel returns a tuple (or namedtuple) of arrays; rules get g and ans as tuples
        self.vjps: tuple = ()
        self.keep: frozenset = frozenset()
        self.keep_output = False
        # When the rules read different things: indexed by the bit mask of the inputs that need
        # a gradient, (input indexes to keep, keep the output?) (None: every rule reads ``keep``).
        self.keep_for: tuple | None = None
        # What every application keeps: ``keep``, or nothing where ``keep_for`` decides per call.
        self.keep_always: frozenset = frozenset()
        # Whether an application may keep arrays for backward, which a backward without
        # retain_graph frees (a row that keeps nothing can run backward again).
        self.frees = False
        self.broadcasts = broadcasts  # the engine sums gradients back to the input shapes
        self.metas = shapes  # rules read the shapes (and dtypes) of inputs they did not save
        self.differentiable = differentiable
        self._impl: dict = {}
        # Rules run other rows by name (``o.sin``), compiled graphs and pickles find rows by
        # name: a second row of a name changes them all. So a built-in row's name is refused;
        # a row declared again where it was (a reload, a cell run again) replaces it quietly,
        # and from anywhere else with a warning that says where both are.
        self.module, self.origin = declaring_place()
        # A row declared outside polygrad: what its kernel returns is checked (see :meth:`kernel`),
        # and what its rules return, against the input's shape, dtype and backend (see
        # ``Primitive._backward``), so a wrong one fails naming the row, not later as a silently
        # broadcast gradient or a Variable of another backend. Built-in rows are checked by the
        # tests, on every op case (test_extend.py), not at every call.
        self.checked = not is_builtin(self.module)
        # apply records each application's input shapes and dtypes: its rules read them, or its results are checked
        self.records = shapes or self.checked
        old = REGISTRY.get(name)
        if old is not None:
            if old.origin != self.origin:
                if is_builtin(old.module):
                    raise ValueError(f"polygrad: {name!r} is the name of a built-in op row ({old.module}); "
                                     f"give this row another name (polygrad.extend.row({name!r}) is the built-in one)")
                # (what holds the old row object keeps it: a compiled program holds its kernels)
                warnings.warn(f"polygrad: the op row {name!r} declared at {place_text(self.origin, old.origin)} "
                              f"replaces the one declared at {place_text(old.origin, self.origin)}: rules (o.{name}) "
                              f"and pickles find rows by name and run the new one; graphs already recorded or built, "
                              f"functions compiled before and code holding the old row keep running the old one "
                              f"(and their pickles the new one): build and compile them again",
                              stacklevel=user_stacklevel())
            for raw in _RAW_OPS:  # the old row's kernels, cached by name
                raw.__dict__.pop(name, None)
        REGISTRY[name] = self

    def __repr__(self) -> str:
        return f"<op {self.name}>"

    def __reduce__(self) -> tuple:
        return (_op_named, (self.name,))  # rows are unique: pickle them by name

    def kernel(self, backend: Any) -> Callable:
        """The forward kernel for ``backend`` (its own faster one if it declares one)."""
        impl = self._impl.get(backend)
        if impl is None:
            impl = backend.kernels.get(self.name)
            if impl is None:
                if type(self.fwd) is NamespaceKernel:
                    try:
                        impl = self.fwd.resolve(backend.xp)
                    except AttributeError:  # (dask's namespace has no linalg.det)
                        raise NotImplementedError(
                            f"polygrad: {self.name} is not available on backend {backend.name!r}: its namespace "
                            f"has no {'.'.join(self.fwd.path)} (and the backend declares no kernel for it)") from None
                else:
                    impl = functools.partial(self.fwd, backend.xp) if self.uses_xp else self.fwd
            if self.checked:
                impl = _checked_kernel(self, backend, impl)
            self._impl[backend] = impl
        return impl


def _checked_kernel(op: Op, backend: Any, impl: Callable) -> Callable:
    """``impl``, the kernel of a row declared outside polygrad (``Op.checked``), with its result
    checked: an array of ``backend`` (a tuple of them for a row of several outputs). A list, a
    Python number or another backend's array (``np.asarray`` on dask inputs) became a Variable's
    data and failed later, in another op, naming neither this row nor its kernel."""

    def kernel(*args: Any, **params: Any) -> Any:
        out = impl(*args, **params)
        if op.multi and not isinstance(out, tuple):
            raise TypeError(f"the forward kernel of {op.name} (declared multi=True) returned {_kind(out)}, not a "
                            f"tuple of {backend.name!r} arrays")
        for k, y in enumerate(out if op.multi else (out,)):
            try:
                b = backend_of_type(type(y))
            except TypeError:
                b = None
            if b is None or (b is not backend and b.name != backend.name):  # (one name: a rebuilt registry)
                which = f"as output {k} " if op.multi else ""
                raise TypeError(f"the forward kernel of {op.name} returned {_kind(y)} {which}for inputs on backend "
                                f"{backend.name!r}: a kernel returns arrays of its inputs' backend (computed with "
                                f"the namespace xp it is given)")
        return out

    kernel.__wrapped__ = impl
    return kernel


def _kind(y: Any) -> str:
    t = type(y)
    name = t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"
    try:
        b = backend_of_type(t)
    except TypeError:
        return f"a {name}"
    return f"a {b.name!r} array ({name})"


def value_shaped(op: Any, inputs: tuple) -> bool:
    """Whether ``op`` applied to ``inputs`` (arrays, symbolic arrays or constants) gives a result
    whose shape depends on the input values (``Op.value_shapes``)."""
    rule = op.value_shapes
    return rule(*inputs) if callable(rule) else bool(rule)


def returned_input(**params: Any) -> bool:
    """``Op.view`` of a row that is a view only where its kernel returned its input itself (``+x``,
    ``conj``, ``sum_to`` to the input's own shape, ``astype``): where the output is another array
    (NumPy's ``+x`` always is), it has a counter of its own and never follows its input's writes.
    Asked with the parameters alone (a node's, later), it answers True: a write through the output
    then reaches the input only where it is the input (see ``variable._unview_of``)."""
    return True


def is_view(op: Any, params: dict | None) -> bool:
    """Whether an application of ``op`` with ``params`` is a view of its input 0 (``Op.view``)."""
    rule = op.view
    return bool(rule(**(params or {}))) if callable(rule) else bool(rule)


def _op_named(name: str) -> Op:
    return REGISTRY[name]


def defvjp(op: Op, *rules: Callable | None, saves: str | tuple[str, ...] = "") -> Op:
    """Attach vjp rules (one per input; None = no gradient) and declare what they read.

    An input past the last rule has no rule: backward raises NotImplementedError where it needs
    a gradient (a forgotten rule is no zero gradient).

    ``saves`` names what backward needs: ``x``, ``y``, ``z`` for inputs 0-2 and
    ``ans`` for the output, e.g. ``saves="x ans"``; or, one string per rule, what
    each rule reads, e.g. ``saves=("y", "x")`` for a product: an application then
    keeps only what the rules of the inputs that need a gradient read (``h * 3``
    keeps the 3, not ``h``, so ``h`` may change in place afterwards).
    """
    op.vjps = tuple(rules)
    if isinstance(saves, str):
        op.keep, op.keep_output = _parse_saves(saves)
        op.keep_for = None
        op.keep_always = op.keep
    else:
        per_rule = [_parse_saves(s) for s in saves]
        op.keep = frozenset().union(*(k for k, _ in per_rule))
        op.keep_output = any(out for _, out in per_rule)
        op.keep_for = tuple(  # what the rules of the inputs in `mask` read together, per mask
            (tuple(sorted(frozenset().union(*(k for i, (k, _) in enumerate(per_rule) if mask >> i & 1)))),
             any(out for i, (_, out) in enumerate(per_rule) if mask >> i & 1))
            for mask in range(1 << len(per_rule)))
        op.keep_always = frozenset()
    op.frees = bool(op.keep) or op.keep_output
    return op


def _parse_saves(saves: str) -> tuple[frozenset, bool]:
    tokens = saves.replace(",", " ").split()
    letters = "".join(t for t in tokens if t != "ans")
    return frozenset("xyzw".index(c) for c in letters), "ans" in tokens


def def_linear(op: Op) -> Op:
    """Declare a unary op linear in its input: the vjp applies the same op to g."""
    return defvjp(op, lambda o, g, ans, x, **p: getattr(o, op.name)(g, **p))


def def_nograd(op: Op) -> Op:
    """Declare an op with no gradient (integer or boolean results)."""
    op.differentiable = False
    return op


class _Meta:
    """Stands in for an input backward did not keep: shape and dtype only."""

    __slots__ = ("shape", "ndim", "dtype")

    def __init__(self, shape: tuple, dtype: Any) -> None:
        self.shape = shape
        self.ndim = len(shape)
        self.dtype = dtype


# ---------------------------------------------------------------------------
# The two namespaces rules are written against
# ---------------------------------------------------------------------------


class RawOps:
    """Ops over raw arrays of one backend: each name runs the forward kernel."""

    def __init__(self, backend: Any) -> None:
        self._backend = backend
        _RAW_OPS.add(self)

    def __getattr__(self, name: str) -> Callable:
        op = REGISTRY.get(name)
        if op is None:
            raise AttributeError(f"polygrad: no op named {name!r}")
        impl = op.kernel(self._backend)
        setattr(self, name, impl)
        return impl


_RAW_OPS: "weakref.WeakSet[RawOps]" = weakref.WeakSet()


def declaring_place(skip: tuple[str, ...] = ()) -> tuple[str | None, tuple]:
    """Where code declares a row or public function: ``(module, lines)``, the module of the first
    frame outside this module and those in ``skip`` (helpers that declare for their callers),
    and the ``(file, line)`` of each frame from there up to the module-level code that runs
    it. A module reloaded unchanged runs the same lines: the same place."""
    frame = sys._getframe(1)
    while frame is not None and (frame.f_globals.get("__name__") == __name__ or frame.f_globals.get("__name__") in skip):
        frame = frame.f_back
    module = None if frame is None else frame.f_globals.get("__name__")
    lines: list = []
    while frame is not None and len(lines) < 64:
        # (the instruction too: two declarations on one line are two places; and the code: two
        # sources run with exec are both "<string>", line 1)
        code = frame.f_code
        try:
            key = hash(code)
        except TypeError:  # (a constant a bytecode tool made unhashable: this code object alone)
            key = id(code)
        lines.append((code.co_filename, frame.f_lineno, frame.f_lasti, key))
        if code.co_name == "<module>":
            break
        frame = frame.f_back
    return module, tuple(lines)


def user_stacklevel() -> int:
    """The ``stacklevel`` that makes a warning issued by the caller point at the first frame
    outside the modules that declare rows and public functions (the user's line)."""
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None and frame.f_globals.get("__name__") in (__name__, "polygrad.ops._export"):
        frame, level = frame.f_back, level + 1
    return level


def is_builtin(module: str | None) -> bool:
    """Whether ``module`` is one of polygrad's own (a built-in row or public function)."""
    return module is not None and (module == "polygrad" or module.startswith("polygrad."))


def place_text(lines: tuple, other: tuple = ()) -> str:
    """``file:line`` of a place (:func:`declaring_place`), where its code is; where ``other``
    starts at the same line, also the first caller that differs (``called from file:line``)."""
    if not lines:
        return "an unknown place"
    text = "{}:{}".format(*lines[0][:2])
    if other and other[0][:2] == lines[0][:2]:
        for mine, theirs in zip(lines, other):
            if mine[:2] != theirs[:2]:
                return text + " (called from {}:{})".format(*mine[:2])
        return text + " (other code, or another call on that line)"
    return text


class _GraphOps:
    """Differentiable ops over Variables (filled by polygrad.ops)."""


GRAPH_OPS = _GraphOps()


def raw_ops(backend: Any) -> RawOps:
    ops = backend.raw_ops
    if ops is None:
        ops = backend.raw_ops = RawOps(backend)
    return ops

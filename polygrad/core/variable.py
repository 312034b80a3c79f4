"""Variable: the user's handle on an array and its place in the graph.

A Variable holds ``data`` (an array of some backend), ``grad``, and a reference
to its creator node (None for a leaf). The graph never holds the Variable
itself (nodes keep weak references to their outputs), so dropping a Variable
frees its data unless backward declared it needs it.

Arithmetic operators and differentiable methods are installed by
``polygrad.ops`` (the core knows no op by name).
"""

from __future__ import annotations

import contextlib
import functools
import threading
import weakref
from typing import Any, Callable

from polygrad.core import config
from polygrad.core.dispatch import SCALARS, _pinned, backend_of_type
from polygrad.core.node import Version, version_of
from polygrad.core.op import GRAPH_OPS, is_view
from polygrad.core.type_check import _is_bool

#: Serializes writes of ``.grad``: backward passes running in several threads into one leaf
#: all land (numpy releases the GIL inside ``+``), and a ``zerograd`` or an assignment is
#: never overwritten by a sum that read the gradient before it. Reentrant: under create_graph
#: the sum is an op, whose function hooks may write gradients themselves.
_ACCUMULATE = threading.RLock()

#: The refusal of a variable both volatile and requiring grad (the constructor's and the setter's, as
#: PyTorch 0.x's "Variable can't be volatile and require_grad at the same time!").
_VOLATILE_AND_GRAD = ("polygrad: {where}: a volatile variable cannot require grad; volatile masks requires_grad, "
                      "and setting volatile = False gives back the requires_grad it had")


#: Chainer v1's Flag values (chainer.flag), besides bools. Its AUTO (also None) is what polygrad's False
#: already is: a function of a volatile input records nothing and is volatile, one of no volatile input
#: records; OFF is the same here, without Chainer's error for mixing OFF with ON.
_VOLATILE_FLAGS = {"on": True, "ON": True, "off": False, "OFF": False, "auto": False, "AUTO": False, None: False}


def _volatile_flag(value: Any, where: str) -> bool:
    """``volatile`` as a bool (the constructor's and the setter's, ``where`` naming which): a bool, a
    bool scalar of an array library, or one of Chainer v1's flags; anything else is refused, since
    ``bool("off")`` is True."""
    if _is_bool(value):
        return bool(value)
    if value is None or isinstance(value, str):
        flag = _VOLATILE_FLAGS.get(value)
        if flag is not None:
            return flag
    raise TypeError(f"polygrad: {where}: volatile is {value!r} ({type(value).__name__}); it takes a bool or one of "
                    f"Chainer v1's flags 'on' (True), 'off' or 'auto' (False)")


def _same_array(o: Any, base: Any, value: Any, index: int) -> Any:
    """The unview of a row that returned its input itself: the base becomes the value."""
    return value


def _same_shape(a: Any, b: Any, lazy: bool | str = False) -> bool:
    """Whether shapes ``a`` and ``b`` may be equal: a dimension the standard leaves unknown
    (None, in symbolic graphs) matches any. A lazy backend's size not computed yet (NaN, dask's)
    is a real size nobody knows: it matches only with ``lazy=True``, where a mismatch cannot
    come from the user's data (a rule's gradient, a sum into .grad, an in-place operation with
    scalars only); where it can (a mask, an array operand in place), unknown sizes are refused,
    since dask would broadcast them silently. ``lazy="alike"``, for gradients the user's code
    gives (a user Function's backward, a hook, ``.grad =``, backward's seed): an unknown size
    matches an unknown one only (g[x > 0] for a (3,) input, or a (1,) gradient for an unknown
    size, were taken, and dask broadcast or cut them)."""
    a, b = tuple(a), tuple(b)
    if lazy == "alike":
        return len(a) == len(b) and all(m == n or m is None or n is None or (m != m and n != n) for m, n in zip(a, b))
    return len(a) == len(b) and all(
        m == n or m is None or n is None or (lazy and (m != m or n != n)) for m, n in zip(a, b))


def _shape_text(shape: Any) -> Any:
    """``shape`` for a message: a tuple, or "unknown" (a symbolic array's that could not be inferred)."""
    return "unknown" if shape is None else tuple(shape)


def _view_base(node: Any) -> tuple | None:
    """``(base, unview, params)`` when ``node`` is a recorded view of a base (kept alive, or
    taken again when the Variable that held it is gone: a view of a view of ``h``)."""
    op = getattr(node, "op", None)
    if op is None or not is_view(op, node.params) or not node.edges or node.edges[0] is None:
        return None
    base_node, where = node.edges[0]
    base = where if base_node is None else base_node.outputs[where]()
    if base is None:
        base = _revive(base_node, where)
        if base is None:
            return None
    out = node.outputs[0]() if node.outputs else None
    return _unview_of(op, base, node.params, out)


def _unview_of(op: Any, base: "Variable", params: dict | None, out: "Variable | None") -> tuple | None:
    """``(base, unview, params)`` for a view ``out`` of ``base`` made by row ``op``: the row's
    unview, or the identity where the row returned its input itself; None for no view."""
    if op.unview is not None:
        return base, op.unview, params or {}
    if out is not None and base._data is out._data:
        return base, _same_array, {}  # a row that returned its input itself: the identity view
    return None


# Views made outside recording (under no_backprop_mode, or of a base that requires no
# gradient) have no graph node to name their base: id(view) -> (weak reference to the view,
# base, row, parameters, output index), while the view lives. A write through one reaches
# its base, and a write to the base makes them follow, on every backend, as for a recorded
# view: never by memory sharing alone, which the standard leaves to the library (numpy's
# reshape of a transposed array is a copy, which took the write alone).
_UNRECORDED: dict[int, tuple] = {}


def note_unrecorded_view(v: "Variable", base: "Variable", op: Any, params: dict | None, index: int) -> None:
    key = id(v)
    ref = weakref.ref(v, lambda _, key=key: _UNRECORDED.pop(key, None))
    _UNRECORDED[key] = (ref, base, op, params or {}, index)


def _unrecorded(v: "Variable") -> tuple | None:
    """``(ref, base, op, params, index)`` of ``v``, a view made outside recording, or None."""
    entry = _UNRECORDED.get(id(v))
    return entry if entry is not None and entry[0]() is v else None


def _unrecorded_base(v: "Variable") -> tuple | None:
    """:func:`_view_base` for a view made outside recording: ``(base, unview, params, index)``."""
    entry = _unrecorded(v)
    if entry is None:
        return None
    _, base, op, params, index = entry
    view = _unview_of(op, base, params, v)
    return None if view is None else (*view, index)


def _revive(node: Any, index: int) -> "Variable | None":
    """A stand-in for output ``index`` of the view ``node`` whose Variable is gone: the same
    graph position, its data taken again from its own base (None if ``node`` is no view)."""
    view = _view_base(node)
    if view is None:
        return None
    return _stand_in(node, index, view[0])


def _view_edge(node: Any) -> tuple | None:
    """Where the recorded view ``node`` takes its base from, ``(base node, index)`` (``(None,
    leaf)``); None for a node that is no view row's (a Function's output sharing a counter)."""
    op = getattr(node, "op", None)
    if op is None or not is_view(op, node.params) or not node.edges:
        return None
    return node.edges[0]


def _stand_in(node: Any, index: int, base: "Variable") -> "Variable":
    """A stand-in for output ``index`` of the view ``node`` of ``base``, whose Variable is gone:
    the same graph position, its data taken again from ``base``."""
    data = node.op.kernel(node.backend)(base._data, **(node.params or {}))
    if node.op.multi:
        data = data[index]
    return Variable._make(data, node, index, True, vbox=base._vbox)


def _gone() -> None:
    """What a node's output slot calls for a Variable that is no longer that output."""
    return None


def new_leaf(data: Any) -> Any:
    """The data of a new leaf holding ``data``'s value (``pg.Variable(x.data)``, ``x.detach()``, a raw
    array as an operand): ``data`` itself, unless its backend keeps the graph in the data, as
    pg.function's symbolic arrays do (an expression records the symbols it reads, not Variables):
    then the backend's ``new_leaf`` gives one of its own, which no gradient goes back through
    (``x.detach() * x`` was differentiated as ``x * x``)."""
    b = _pinned.get(type(data))  # (only a pinned pseudo-backend keeps a graph in its data: one lookup for the rest)
    make = None if b is None else getattr(b, "new_leaf", None)
    return data if make is None else make(data)


def _unchained(data: Any, backward: bool = False) -> Any:
    """The data of a variable that leaves its graph (``unchain``, ``detach_``; ``backward``:
    ``unchain_backward``, which cuts the graph behind it too), where its backend keeps the graph
    in the data (see :func:`new_leaf`): the backend's ``unchain`` does there what dropping the
    creator does for other backends."""
    b = _pinned.get(type(data))
    unchain = None if b is None else getattr(b, "unchain", None)
    return data if unchain is None else unchain(data, backward)


def is_floating(data: Any) -> bool:
    """Whether ``data`` is an array of a real or complex floating dtype: what a gradient can flow through."""
    return dtype_kind(data.dtype, backend_of_type(type(data))) in _FLOATING


_FLOATING = ("real floating", "complex floating")


def kind_of(a: Any) -> str | None:
    """The standard's kind (see :func:`dtype_kind`) of a Python number, an array or a Variable's
    data; None for anything else."""
    d = a._data if isinstance(a, Variable) else a
    if type(d) not in SCALARS and hasattr(d, "dtype"):  # (a NumPy scalar too, whose type subclasses float)
        return dtype_kind(d.dtype, backend_of_type(type(d)))
    if isinstance(d, SCALARS):
        return ("bool" if isinstance(d, bool) else "integral" if isinstance(d, int) else
                "real floating" if isinstance(d, float) else "complex floating")
    return None


def _kind_of_data(data: Any, where: str) -> str:
    """The dtype kind of ``data``, to be held by a Variable (see :func:`dtype_kind`); a TypeError
    beginning with ``where`` for anything but an array of a registered backend and a standard dtype."""
    try:
        backend = backend_of_type(type(data))
    except TypeError as exc:
        raise TypeError(
            f"{where}: data must be an array of a registered backend, got {type(data).__name__}; "
            f"create one with pg.asarray(...). ({exc})"
        ) from None
    kind = dtype_kind(data.dtype, backend)
    if kind == "other":
        raise TypeError(
            f"{where}: data has dtype {data.dtype}, which is no dtype of the Array API standard; "
            f"polygrad computes on bool, integer, real and complex floating arrays"
        )
    return kind


def dtype_kind(dtype: Any, backend: Any) -> str:
    """The standard's kind of ``dtype`` (``"bool"``, ``"integral"``, ``"real floating"``,
    ``"complex floating"``), ``"other"`` for a dtype of none (strings, objects), or
    ``"unknown"`` on a backend with no namespace to ask (the symbolic one). Cached per dtype."""
    key = (type(dtype), dtype)  # the type first: dtypes of two libraries are never compared
    kind = _KINDS.get(key)
    if kind is None:
        try:
            xp = backend.xp
        except TypeError:
            return "unknown"
        kind = next((k for k in ("bool", "integral", "real floating", "complex floating") if xp.isdtype(dtype, k)),
                    "other")
        _KINDS[key] = kind
    return kind


_KINDS: dict = {}


class _Size(int):
    """The element count, an int that PyTorch 0.x code may also call: ``x.size()`` is the
    shape, ``x.size(dim)`` the length of one axis."""

    def __new__(cls, n: int, shape: tuple) -> "_Size":
        self = super().__new__(cls, n)
        self._shape = tuple(shape)
        return self

    def __call__(self, dim: int | None = None) -> Any:
        return self._shape if dim is None else self._shape[dim]


def _size(shape: tuple) -> int | None:
    """The number of elements of ``shape``; None when a dimension is unknown (the standard's None,
    or the NaN that dask writes for a size it has not computed)."""
    n = 1
    for d in shape:
        if d is None or d != d:
            return None
        n *= d
    return n


def admit_grad(g: Any, data: Any, source: str, user: bool = False) -> Any:
    """The one gate for gradients entering the graph or ``.grad`` (see :func:`admit`),
    for the gradient of the array ``data``."""
    if g is None or data is None:
        return g
    return admit(g, tuple(data.shape), data.dtype, backend_of_type(type(data)), source, user)


def admit(g: Any, shape: tuple, dtype: Any, backend: Any, source: str, user: bool = False) -> Any:
    """``g`` as a gradient of ``backend``, ``shape`` and ``dtype``, or a clear error naming ``source``.

    Python numbers and lists are converted; an array of another precision of the
    same kind is cast to ``dtype``, as PyTorch does (a Variable that requires grad by a
    recorded astype, so that a higher derivative, or one with respect to
    ``grad_outputs``, keeps its path; one without becomes that array); another
    backend, another shape or another kind of dtype (integer, bool, complex for a
    real array) is refused. A Variable of the right dtype is returned as it is. ``user``: ``g``
    comes from the user's code, where a size not computed yet matches only another one.
    """
    if type(g) is _GradVariable and not g._requires_grad and g._node is None:
        g = g._data  # another's .grad_var: its array (x.grad_var *= 2 assigns x's own back); one in a graph stays
    raw = g._data if isinstance(g, Variable) else g
    xp = backend.xp
    # Only Python's own numbers (and lists of them) are converted to dtype. A NumPy scalar (np.complex128
    # is a complex, np.float64 a float) has a dtype: it takes the array path below, where the kinds are
    # compared; converted, a complex one lost its imaginary part into a real gradient.
    if raw is g and (type(raw) in SCALARS or isinstance(raw, (list, tuple))):
        try:
            if (type(raw) is complex or isinstance(raw, (list, tuple)) and dtype_kind(
                    xp.asarray(raw).dtype, backend) == "complex floating") and dtype_kind(dtype, backend) != (
                    "complex floating"):
                raise TypeError("a complex value would lose its imaginary part")  # (a list may hold NumPy scalars)
            raw = g = xp.asarray(raw, dtype=dtype)
        except Exception as exc:
            raise TypeError(f"polygrad: {source} is {raw!r}, which is no {dtype} array: {exc}") from None
    try:
        b = backend_of_type(type(raw))
    except TypeError:
        b = None
    if b is not backend or not _same_shape(raw.shape, shape, lazy="alike" if user else True) or (
            dtype_kind(raw.dtype, b) != dtype_kind(dtype, backend)):
        got = type(raw).__name__ if b is None else f"{raw.dtype} {tuple(raw.shape)} on {b.name!r}"
        unknown = b is not None and any(n != n for n in tuple(raw.shape) + tuple(shape))
        raise (TypeError if b is not backend else ValueError)(
            f"polygrad: {source} is {got}, expected {dtype} {tuple(shape)} on {backend.name!r}"
            + ("; a size not computed yet (nan) is checked only against another one: keep the shape "
               "(pg.where(mask, g, 0) rather than g[mask]) or compute the sizes first" if unknown else "")
        )
    if raw.dtype != dtype:
        if isinstance(g, Variable) and g._requires_grad:  # a gradient in a graph: cast in the graph
            return GRAPH_OPS.astype(g, dtype)
        return xp.astype(raw, dtype)
    return g


class _HookHandle:
    """Returned by :meth:`Variable.register_hook`; ``remove()`` unregisters that registration, found
    by identity: ``list.remove`` compared with ``==``, so it removed another hook equal to this one
    (two empty dataclass recorders), or none where the comparison raised (a hook holding an array)."""

    __slots__ = ("_hooks", "_fn")

    def __init__(self, hooks: list, fn: Callable) -> None:
        self._hooks, self._fn = hooks, fn

    def remove(self) -> None:
        hooks = self._hooks
        for i, h in enumerate(hooks):
            if h is self._fn:
                del hooks[i]
                return


def _may_reshape(data: Any, operand: Any) -> bool:
    """Whether ``operand`` of an in-place operation on ``data`` may broadcast it to another shape
    where sizes are unknown: an array of its own (not a scalar, not 0-d, not ``data`` itself)."""
    d = operand._data if isinstance(operand, Variable) else operand
    if d is data or type(d) in SCALARS or d is None or isinstance(d, (slice, type(Ellipsis))):
        return False
    shape = getattr(d, "shape", None)
    return shape is None or tuple(shape) != ()


class _HooksBefore:
    """A variable's hooks as a graph it left sees them (``unchain``): those registered before it
    left and not removed since (a handle's ``remove()`` reaches here too), in order; never the
    ones registered later, which belong to the graphs built on it from then on."""

    __slots__ = ("live", "before")

    def __init__(self, live: list) -> None:
        self.live, self.before = live, list(live)

    def __iter__(self) -> Any:
        live = self.live
        return (h for h in self.before if any(h is k for k in live))

    def __bool__(self) -> bool:
        return any(True for _ in self)


class _ViewState:
    """The pickled state of a Variable that is a view (see :meth:`Variable.__getstate__`)."""

    __slots__ = ("state", "viewed", "unrecorded")

    def __init__(self, state: Any, viewed: bool, unrecorded: tuple | None) -> None:
        self.state, self.viewed, self.unrecorded = state, viewed, unrecorded

    def __reduce__(self) -> tuple:
        return _ViewState, (self.state, self.viewed, self.unrecorded)


class Variable:
    """An array with a structure to keep track of computation.

    :param data: an array of a registered backend (or None for a parameter not
        yet initialized).
    :param requires_grad: whether backward should compute a gradient for it;
        by default True for floating (real or complex) data, False for integer
        and boolean data, which cannot require grad (as in PyTorch).
    :param name: a name shown in reprs, graphs and compiled functions.
    :param volatile: if True, functions applied to it build no graph (the
        PyTorch 0.x / Chainer v1 inference flag; Chainer v1 passes it second,
        and may spell it ``'on'``, ``'off'`` or ``'auto'``, the last two False).
        It masks ``requires_grad``, which reads False while it is set and is
        what it was once it is cleared; asking for both is refused, as in
        PyTorch 0.x.

    >>> import polygrad as pg
    >>> x = pg.Variable(pg.asarray([1.0, 2.0, 3.0]))
    >>> y = pg.sum(x * x)
    >>> y.backward()
    >>> x.grad
    array([2., 4., 6.])
    """

    # _requires_grad is what the engine reads (False while volatile); _wants_grad, set only
    # while volatile masks it, is what requires_grad was or was set to, given back when it clears.
    # _gv: the x.grad_var handed out while its array is x's gradient (see _GradVariable; unset on most variables).
    __slots__ = ("_data", "_grad", "_node", "_index", "_requires_grad", "_volatile", "_wants_grad", "name", "_vb",
                 "_hooks", "_gv", "__weakref__")
    __array_ufunc__ = None  # numpy defers `ndarray @ Variable` to Variable.__rmatmul__
    __array_priority__ = 200

    def __init__(self, data: Any = None, volatile: bool = False, *, requires_grad: bool | None = None,
                 name: str | None = None) -> None:
        box = None
        if isinstance(data, Variable):
            if data._node is not None:
                raise TypeError(
                    f"polygrad.Variable: {data._describe()} was created by {data._node.label}; a new leaf of its "
                    f"data is x.detach() (sharing the data) or pg.Variable(x.data)"
                )
            box = data._vbox  # a new leaf over the same data: in-place changes are seen by both
            data = data._data
            kind = dtype_kind(data.dtype, backend_of_type(type(data)))
        elif data is not None:
            kind = _kind_of_data(data, "polygrad.Variable")
        self._data = new_leaf(data)
        self._grad = None
        self._node = None
        self._index = 0
        self._volatile = _volatile_flag(volatile, "polygrad.Variable")
        self.name = name
        self._vb = Version() if box is None else box
        self._hooks: list | None = None
        if requires_grad is None:  # the default follows the dtype: floating data requires grad
            requires_grad = data is None or kind in _FLOATING + ("unknown",)
        elif requires_grad and self._volatile:
            raise RuntimeError(_VOLATILE_AND_GRAD.format(where="polygrad.Variable(requires_grad=True, volatile=True)"))
        elif requires_grad:
            self._require_floating()
        if self._volatile:
            self._wants_grad = bool(requires_grad)
        self._requires_grad = bool(requires_grad) and not self._volatile

    @classmethod
    def _make(cls, data: Any, node: Any = None, index: int = 0, requires_grad: bool = False,
              volatile: bool = False, vbox: Version | None = None, name: str | None = None) -> "Variable":
        """A Variable made by the engine, without __init__'s checks. (``apply`` inlines
        these assignments: it is the per-op hot path.)"""
        v = cls.__new__(cls)
        v._data = data
        v._grad = None
        v._node = node
        v._index = index
        v._requires_grad = requires_grad
        v._volatile = volatile
        v.name = name
        v._vb = Version() if vbox is None else vbox
        v._hooks = None
        return v

    def _edge(self) -> Any:
        """Where backward sends this variable's gradient: ``(creator, output index)``,
        ``(None, self)`` for a leaf, None when it needs none."""
        if not self._requires_grad:
            return None
        return (self._node, self._index) if self._node is not None else (None, self)

    @property
    def _vbox(self) -> Version:
        """The in-place version counter, shared with views and detached copies (made
        with the Variable, or here where it has none: :func:`~polygrad.core.node.version_of`)."""
        box = self._vb
        return version_of(self) if box is None else box

    @_vbox.setter
    def _vbox(self, box: Version) -> None:
        self._vb = box

    # -- data and metadata -----------------------------------------------------
    @property
    def data(self) -> Any:
        """The data array (assigning replaces it without recording anything)."""
        return self._data

    @data.setter
    def data(self, value: Any) -> None:
        if isinstance(value, Variable):
            value = value._data
        if value is not None:  # (None: a parameter not initialized yet)
            kind = _kind_of_data(value, f"polygrad: assigning .data of {self._describe()}")
            if self._requires_grad and kind not in _FLOATING + ("unknown",):
                self._require_floating(value, "set x.requires_grad = False first (its gradients would be cut to "
                                              "integers)")
        if value is not self._data:
            # (the counter stays, with its views and what may hold its arrays: y.data = y.data[...] shares them)
            self._data = new_leaf(value)

    array = data  # Chainer's alias, the same property: `p.array -= lr * p.grad` assigns through data's setter

    @property
    def grad(self) -> Any:
        """Gradient array: None until backprop reaches this variable."""
        g = self._grad
        return g._data if isinstance(g, Variable) else g

    @grad.setter
    def grad(self, value: Any) -> None:
        self._set_grad(admit_grad(value, self._data, f"the gradient assigned to {self._describe()}", user=True))

    @property
    def grad_var(self) -> "Variable | None":
        """The gradient as a Variable (with a graph after ``create_graph=True``). As Chainer's, the
        Variable of this gradient: the same object while the gradient is the same array, and what is done
        to it (``x.grad_var.data = v``, an in-place operation, ``pg.persist(x.grad_var)``) is done to
        ``x.grad``. Once ``x.grad`` is another array (cleargrad, a backward that summed into it), one held
        keeps the gradient it was (see :class:`_GradVariable`)."""
        g = self._grad
        if g is None or isinstance(g, Variable):
            return g
        gv = getattr(self, "_gv", None)
        if gv is None or gv._arr is not g:
            gv = self._gv = _GradVariable._over(g, self)
        return gv

    @grad_var.setter
    def grad_var(self, value: "Variable | None") -> None:
        self._set_grad(admit_grad(value, self._data, f"the gradient assigned to {self._describe()}", user=True))

    def _set_grad(self, value: Any) -> None:
        """Make ``value`` the gradient; the wrapper of the one it replaces is no longer x's (it keeps its
        array, a snapshot), and x stops holding it (cleargrad frees the gradient's memory)."""
        with _ACCUMULATE:
            self._grad = value
            gv = getattr(self, "_gv", None)
            if gv is not None and gv._arr is not value:
                self._gv = None

    @property
    def creator(self) -> Any:
        """The function that created this variable; None for a leaf (root) variable."""
        return self._node

    @creator.setter
    def creator(self, node: Any) -> None:
        self.set_creator(node)

    @property
    def node(self) -> "Variable":
        """Chainer v2's graph-side node of this variable (``x.node < f < y.node``): polygrad keeps
        one object for both sides, so it is the variable itself, with ``creator``, ``data``,
        ``grad``, ``name`` and ``rank``."""
        return self

    @property
    def rank(self) -> int:
        """Chainer's rank: 0 for a leaf, one more than its creator's rank otherwise."""
        return 0 if self._node is None else self._node.rank + 1

    @property
    def is_leaf(self) -> bool:
        return self._node is None

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if self._node is not None:
            raise RuntimeError(
                f"polygrad: requires_grad can only be changed on leaf variables; {self._describe()} was created "
                f"by {self._node.label}. Use x.detach() to get a leaf."
            )
        if value and self._volatile:
            raise RuntimeError(_VOLATILE_AND_GRAD.format(where=f"requires_grad = True on {self._describe()}"))
        if value:
            self._require_floating()
        if self._volatile:
            self._wants_grad = False  # (what volatile = False gives back)
        else:
            self._requires_grad = bool(value)

    def _require_floating(self, data: Any = None, instead: str = "pass requires_grad=False") -> None:
        """A TypeError where ``data`` (the variable's own by default), which it would hold while it
        requires grad, is not floating."""
        data = self._data if data is None else data
        if data is not None and not is_floating(data):
            raise TypeError(
                f"polygrad: {self._describe()} requires grad, with data of shape {tuple(data.shape)} and dtype "
                f"{data.dtype}; only floating (real or complex) variables can require grad. Cast it first "
                f"(pg.astype(x, pg.float64)), or {instead}."
            )

    @property
    def volatile(self) -> bool:
        """Whether functions applied to this variable record no graph (PyTorch 0.x, Chainer v1).
        Setting it masks ``requires_grad`` (False while set); clearing it gives back what
        ``requires_grad`` was, so a parameter volatile for an evaluation pass trains again."""
        return self._volatile

    @volatile.setter
    def volatile(self, value: bool) -> None:
        if self._node is not None:
            raise RuntimeError(
                f"polygrad: volatile can only be changed on leaf variables; {self._describe()} was created by {self._node.label}"
            )
        value = _volatile_flag(value, f"setting volatile of {self._describe()}")
        if value and not self._volatile:
            self._wants_grad = self._requires_grad
            self._requires_grad = False
        elif not value and self._volatile:
            # (a volatile leaf made by a function, or written in place from a volatile value, asked for nothing)
            wants = getattr(self, "_wants_grad", False)
            if wants:
                self._require_floating(instead="set x.requires_grad = False first")
            self._requires_grad, self._wants_grad = wants, False
        self._volatile = value

    @property
    def shape(self) -> tuple:
        shape = self._data.shape
        if shape is None:  # (a symbolic expression whose number of dimensions could not be inferred)
            raise TypeError(f"polygrad: the shape of {self._data!r} is not known until the function is called")
        return tuple(shape)

    @property
    def dtype(self) -> Any:
        return self._data.dtype

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @property
    def size(self) -> int | None:
        """The number of elements, an ``int`` (None when a dimension is unknown), as in the standard
        and Chainer; called, as PyTorch's ``x.size()`` / ``x.size(dim)``, the shape / one length."""
        shape = self.shape  # (a symbolic expression's not inferred: says so)
        n = _size(shape)
        return None if n is None else _Size(n, shape)

    @property
    def version(self) -> int:
        """How many in-place operations changed this variable's data."""
        return self._vbox.n

    @property
    def backend(self) -> Any:
        """The backend that owns this variable's data."""
        return backend_of_type(type(self._data))

    @property
    def xp(self) -> Any:
        """The Array API namespace of this variable's backend."""
        return backend_of_type(type(self._data)).xp

    def __len__(self) -> int:
        """The number of elements of the data array (as the Chainer seed specifies)."""
        n = _size(self.shape)
        if n is None:
            raise TypeError(f"polygrad: len() of {self._describe()}: a dimension is unknown")
        return n

    def __iter__(self) -> Any:
        """The variables along the first axis (as numpy's and PyTorch's arrays iterate; ``len()``
        is the number of elements, as the Chainer seed specifies, so the sequence fallback
        would not do: ``reversed()`` gave nothing, a 0-d variable iterated as empty)."""
        return (self[i] for i in range(self._first_length("iterate over")))

    def __reversed__(self) -> Any:
        return (self[i] for i in reversed(range(self._first_length("reverse"))))

    def _first_length(self, what: str) -> int:
        shape = tuple(self._data.shape)
        if not shape:
            raise TypeError(f"polygrad: cannot {what} {self._describe()}: it has no dimensions")
        if shape[0] is None:
            raise TypeError(f"polygrad: cannot {what} {self._describe()}: its first dimension is unknown")
        return shape[0]

    def __copy__(self) -> "Variable":
        """A shallow copy: the same array, and the same in-place version counter (made now if
        there is none yet: a counter made later by each would not see the other's writes).
        Hooks: a leaf's copy gets its own list of them (starting with the hooks registered so
        far); a copy of an intermediate stands at the same place in the graph, whose node keeps
        one list for it, so the two share the list (made now, for the same reason)."""
        self._vbox
        if self._node is not None and self._hooks is None:
            self._hooks = []
        new = type(self).__new__(type(self))
        for name, value in self._slots().items():
            setattr(new, name, value)
        if hasattr(self, "__dict__"):
            new.__dict__.update(self.__dict__)
        if self._node is None and self._hooks is not None:
            new._hooks = list(self._hooks)
        return new

    def _slots(self) -> dict:
        """The values of this variable's slots (of its class and a subclass's), by name."""
        return {name: getattr(self, name) for cls in type(self).__mro__ for name in getattr(cls, "__slots__", ())
                if name not in ("__weakref__", "__dict__", "_gv") and hasattr(self, name)}  # (_gv: this one's)

    __hash__ = object.__hash__

    def __bool__(self) -> bool:
        """Truth of a one-element variable (forces a lazy array; ambiguous for more elements)."""
        return bool(self._data)

    def __reduce_ex__(self, protocol: Any) -> Any:
        """Pickle the data and, for a variable made by functions, its graph: pickle follows a graph
        recursively, so one deeper than a sixth of Python's recursion limit is refused up front
        (a clear error instead of a RecursionError half-way)."""
        if self._node is not None:
            import sys

            depth, limit = self._node.rank + 1, sys.getrecursionlimit() // 6 - 10
            if depth > limit:
                raise ValueError(
                    f"polygrad: {self._describe()} comes out of a graph {depth} functions deep, which does not "
                    f"pickle under Python's recursion limit ({sys.getrecursionlimit()}: about {limit} functions); "
                    f"pickle x.detach() or x.data, or raise the limit with sys.setrecursionlimit"
                )
        return object.__reduce_ex__(self, protocol)

    def __getstate__(self) -> Any:
        """For pickle and ``copy.deepcopy``: the slots, and whether this variable is a view over
        its data's counter and, if made outside recording, of which base, how (the base travels
        with it, as in a copy of a graph). The counter's views are live objects of this process
        and do not travel: without this, a copied view no longer followed its copied base and,
        made outside recording, a write through it no longer reached the base."""
        slots = self._slots()
        gv = getattr(self, "_gv", None)
        if gv is not None and gv._arr is self._grad:  # x.grad_var, copied with x, is the copy's (see __setstate__)
            slots["_gv"] = gv
        state = (getattr(self, "__dict__", None) or None, slots)  # (object.__getstate__'s, Python 3.11 on)
        box = self._vb
        ref = None if box is None or not box.views else box.views.get(id(self))
        viewed = ref is not None and ref() is self
        entry = _unrecorded(self)
        return state if not viewed and entry is None else _ViewState(state, viewed, None if entry is None else entry[1:])

    def __setstate__(self, state: Any) -> None:
        view = None
        if type(state) is _ViewState:
            state, view = state.state, state
        d, slots = state if isinstance(state, tuple) else (state, None)
        if d:
            self.__dict__.update(d)
        for name, value in (slots or {}).items():
            setattr(self, name, value)
        gv = getattr(self, "_gv", None)
        if gv is not None:  # copied together, x and x.grad_var are a variable and its grad_var again, as in Chainer
            if gv._arr is self._grad:
                gv._of = weakref.ref(self)
            else:
                self._gv = None
        if view is not None:
            if view.unrecorded is not None:
                note_unrecorded_view(self, *view.unrecorded)
            if view.viewed:
                self._vbox.add_view(self)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> Any:
        """The data for numpy (``np.asarray(x)``), through the data's own ``__array__``;
        a clear error on a backend whose arrays have none.

        Refused for a variable that requires grad while backprop is on (PyTorch's rule):
        a computation continued in numpy drops out of the gradient without a word, so
        detaching has to be said (``x.detach()`` or ``x.data``)."""
        self._refuse_untracked("np.asarray(x)")
        to_array = getattr(self._data, "__array__", None)
        if to_array is None:
            raise TypeError(
                f"polygrad: {self._describe()} lives on backend {self.backend.name!r}, whose arrays do not convert "
                f"to numpy implicitly; move it with pg.to_backend(x, 'numpy')"
            )
        if copy is None:
            return to_array() if dtype is None else to_array(dtype)
        return to_array(dtype=dtype, copy=copy)

    def _refuse_untracked(self, how: str, taker: str = "numpy") -> None:
        """The error for reading the data of a variable that requires grad where the graph
        cannot follow (``taker``: numpy, or the library a dlpack export goes to): what is
        computed from it would have no gradient."""
        if self._requires_grad and config.enable_backprop.get():
            raise RuntimeError(
                f"polygrad: {how} of {self._describe()}, which requires grad: {taker} cannot record a graph, so "
                f"whatever is computed from the result would silently have no gradient. Use x.detach() (or "
                f"x.data, or float(x) for a scalar) to say that no gradient should flow, or compute with "
                f"polygrad's functions (x.__array_namespace__())."
            )

    def __float__(self) -> float:
        return float(self._zero_d("float"))

    def __int__(self) -> int:
        return int(self._zero_d("int"))

    def __index__(self) -> int:
        data = self._zero_d("index")
        if isinstance(data.dtype, str) or not backend_of_type(type(data)).xp.isdtype(data.dtype, "integral"):
            raise TypeError(f"polygrad: {self._describe()} of dtype {data.dtype} is not an index: only an integer "
                            f"variable is")
        return data.__index__()

    def _zero_d(self, how: str) -> Any:
        """The data, of a 0-d variable: the standard converts only those to a Python number (dask's
        array converted a (1,) one, where numpy's and array_api_strict's refuse)."""
        data = self._data
        if data is not None and len(data.shape) != 0:
            raise TypeError(f"polygrad: {how}() of {self._describe()}: only a 0-d variable converts to a Python "
                            f"number (x[0], or pg.reshape(x, ()))")
        return data

    def _describe(self) -> str:
        shape = "?" if self._data is None or self._data.shape is None else tuple(self._data.shape)
        return f"variable{'' if self.name is None else ' ' + repr(self.name)} (shape {shape})"

    def __repr__(self) -> str:
        if self._data is None:
            return f"variable({self.name or ''} None)"
        head = "variable" if self.name is None else f"variable {self.name}"
        backend = backend_of_type(type(self._data))
        if backend.lazy:
            return f"{head}(<lazy {backend.name} array shape={tuple(self._data.shape)} dtype={self._data.dtype}>)"
        text = repr(self._data)
        # "array([1., 2.])" -> "variable([1., 2.])": strip the array type's own constructor call
        call = text.split("(", 1)[0]  # "array", "np.float64", "Array", ...
        if call.rsplit(".", 1)[-1] in ("array", type(self._data).__name__) and text.endswith(")"):
            text = text[len(call) + 1 : -1]
            # continuation lines were aligned under "array(": align them under "variable("
            shift = len(head) - len(call)
            lines = text.split("\n")
            text = "\n".join([lines[0]] + [line if not line else " " * shift + line if shift >= 0 else line[-shift:]
                                            for line in lines[1:]])
        return f"{head}({text})"

    def __str__(self) -> str:
        return str(self._data)

    # -- graph ---------------------------------------------------------------
    def set_creator(self, gen_func: Any) -> None:
        """Notify the variable that ``gen_func`` created it (as one of its outputs)."""
        views = ()
        if gen_func is not self._node:
            views = self._direct_views()
            self._keep_hooks_from_old_graph()
        if gen_func is None:
            self._node = None
        else:
            index = 0
            for i, ref in enumerate(getattr(gen_func, "outputs", ()) or ()):
                if ref() is self:
                    index = i
                    break
            self._node = gen_func
            self._index = index
            self._requires_grad = True
        for w in views:
            w._follow(self, cut=True)

    def cleargrad(self) -> None:
        """Set the gradient to None."""
        self._set_grad(None)

    def zerograd(self) -> None:
        """Set the gradient to zeros of the data's shape; nothing for a parameter not initialized yet
        (Chainer's: ``link.zerograds()`` before a lazy link's first call)."""
        if self._data is None:
            return
        self._set_grad(self.xp.zeros_like(self._data))

    def detach(self) -> "Variable":
        """A new leaf sharing this variable's data (and in-place version counter), with no graph.

        The result does not require grad; it is volatile if this variable is.
        In-place changes to either are seen by both where they write into the array; not where a write
        gives the variable a new one (``inplace_policy("copy")``, dask, an output of a Chainer-style
        Function before its backward: docs/inplace.md).
        """
        return Variable._make(new_leaf(self._data), volatile=self._volatile, vbox=self._vbox, name=self.name)

    def detach_(self) -> "Variable":
        """Detach this variable from the graph that created it, making it a leaf (hooks
        registered from now on, and retain_grad, no longer reach the graph it left)."""
        views = self._direct_views()
        self._leave_node()
        self._node = None
        self._index = 0
        self._requires_grad = self._wants_grad = False
        self._data = _unchained(self._data)
        for w in views:
            w._follow(self)
        return self

    def unchain(self) -> None:
        """Delete the reference to the creator: this variable becomes a root."""
        views = self._direct_views()
        self._keep_hooks_from_old_graph()
        self._node = None
        self._data = _unchained(self._data)
        for w in views:
            w._follow(self, cut=True)

    def unchain_backward(self) -> None:
        """Delete backward references of this variable and of every function behind it.

        Backprop then stops here (truncated BPTT); functions no longer reachable
        are freed by reference counting.
        """
        node = self._node
        views = self._direct_views()
        self._keep_hooks_from_old_graph()
        self._node = None
        self._data = _unchained(self._data, backward=True)
        for w in views:
            w._follow(self, cut=True)
        stack = [node] if node is not None else []
        seen = set()
        while stack:
            n = stack.pop()
            if id(n) in seen:
                continue
            seen.add(id(n))
            for edge in n.edges:
                if edge is not None and edge[0] is not None:
                    stack.append(edge[0])
            n.unchain()

    def reinforce(self, reward: Any) -> None:
        """Register the reward of this sample of a stochastic function (REINFORCE).

        ``reward`` has the sample's shape (or broadcasts to it) and lives on the
        same backend. Backward then adds ``-reward * d log p(sample) / d params``
        to the distribution parameters' gradients.
        """
        node = self._node
        if node is None or not hasattr(node, "reinforce"):
            made = "a leaf" if node is None else f"made by {node.label}"
            raise RuntimeError(
                f"polygrad: reinforce() needs the output of a stochastic function (F.bernoulli, F.categorical, "
                f"F.normal, ...); {self._describe()} is {made}"
            )
        node.reinforce(self._index, reward)

    def register_hook(self, hook: Callable[[Any], Any]) -> _HookHandle:
        """Register ``hook(grad) -> new grad or None``, called each time this
        variable's gradient is computed.

        ``grad`` is an array (a Variable under ``create_graph=True``). A non-None
        return value replaces the gradient. Returns a handle with ``remove()``.
        A variable that does not require grad gets no gradient: its hook would never
        run, so registering one raises (as in PyTorch).
        """
        if not self._requires_grad and self._node is None:
            raise RuntimeError(
                f"polygrad: cannot register a hook on {self._describe()}, which does not require grad: it gets "
                f"no gradient, so the hook would never run")
        if self._hooks is None:
            self._hooks = []
        if any(h is hook for h in self._hooks):  # registered twice: each registration an object of its own
            hook = functools.partial(hook)
        self._hooks.append(hook)
        self._hooks_on_node()
        return _HookHandle(self._hooks, hook)

    def _hooks_on_node(self) -> None:
        """Give this variable's hooks to its creator, with what they need of it: they fire even
        when nothing refers to it any more (h = h * h after registering one on h), as PyTorch's
        live on the grad_fn. (A leaf stays alive in its nodes' edges.)"""
        node = self._node
        if node is not None:
            if type(node._var_hooks) is not dict:
                node._var_hooks = {}
            data = self._data
            node._var_hooks[self._index] = (self._hooks, tuple(data.shape), data.dtype, backend_of_type(type(data)),
                                            self._describe())

    def backward(
        self,
        gradient: Any = None,
        retain_grad: bool = False,
        retain_graph: bool | None = None,
        *,
        create_graph: bool = False,
        retain_variables: bool | None = None,
    ) -> None:
        """Run backprop from this variable.

        :param gradient: gradient of some loss with respect to this variable;
            defaults to ``self.grad`` if set on a variable made by a function
            (Chainer's initial error), else 1 for a variable of one element,
            which a leaf adds to its ``.grad`` (PyTorch's). Required for larger
            variables.
        :param retain_grad: keep the gradients of intermediate variables.
        :param retain_graph: keep what backward needs, so it can run again.
            ``retain_variables`` is the PyTorch 0.x spelling.
        :param create_graph: build a graph of the backward computation, for
            higher-order derivatives.
        """
        from polygrad.core.engine import backward_all  # the engine imports this module

        if isinstance(gradient, bool):  # Chainer's positional form: y.backward(True) means retain_grad
            gradient, retain_grad = None, gradient
        if gradient is None and self._grad is not None and self._node is not None:
            gradient = self._grad  # (a leaf's .grad is no initial error: it is what the seed is added to)
        backward_all((self,), (gradient,), retain_graph, create_graph, retain_variables, retain_grad=retain_grad)

    # -- in-place support for polygrad.ops -----------------------------------
    def _check_inplace(self, opname: str, view: "Variable | None" = None) -> None:
        """Refuse an in-place ``opname`` on this variable (or, ``view`` given, on that view of it, whose
        write is forwarded here), where it would lose a gradient or change an input behind its graph."""
        refuse = getattr(backend_of_type(type(self._data)), "refuse_write", None)  # a backend's own rule
        if refuse is not None:
            refuse(self, opname)
        node = self._node
        if node is not None and self._index in getattr(node, "_aliased_outputs", ()):
            raise RuntimeError(
                f"polygrad: {self._describe()} is output {self._index} of {node.label}, which shares its memory with "
                f"an input of it (returned as is, or declared with mark_shared_storage), and is used in an in-place "
                f"operation ({opname}): the input would change behind its graph's back, and its gradient would be "
                f"wrong (PyTorch refuses this too). Change a copy instead (pg.asarray(y, copy=True))."
            )
        if node is None and self._requires_grad and config.enable_backprop.get():
            through = "" if view is None else f" through a view of it (shape {_shape_text(view.shape)})"
            raise RuntimeError(
                f"polygrad: {self._describe()} is a leaf that requires grad and is used in an in-place "
                f"operation ({opname}){through}; its gradient would be lost. Change x.data instead, or do it inside "
                f"pg.no_backprop_mode()."
            )

    def _assign_inplace(self, result: "Variable", opname: str, operands: tuple = ()) -> "Variable":
        """Make this variable hold ``result`` (computed out of place), in place.

        A view of a Variable with a graph writes through to its base: the base
        becomes its row's ``unview`` of the new value (differentiable, so the
        base's graph sees the write, as PyTorch's CopySlices), and the view is
        taken again from the new base. Any other variable writes into its array
        where the backend allows it (so other holders of the array see the
        change) or rebinds its data; it bumps the version, rebases its history
        onto ``result``'s creator, and its recorded views follow it.
        """
        new, old = result._data, self._data
        if new.dtype != old.dtype or old.shape is None or not _same_shape(new.shape, old.shape, lazy=True):
            self._refuse_change(new, opname, operands)
        if not _same_shape(new.shape, old.shape) and any(_may_reshape(old, a) for a in operands):
            # sizes not computed yet (dask's NaN), and an operand of its own size beside this array
            raise ValueError(
                f"polygrad: in-place {opname} of {self._describe()} cannot check that its shape "
                f"{tuple(old.shape)} stays the same: its sizes are not computed yet and an operand's may differ "
                f"(a lazy backend would broadcast a mismatch silently); compute them first "
                f"(x.compute_chunk_sizes() on dask) or use the out-of-place form")
        index = self._index
        view = _view_base(self._node)
        if view is None and self._node is None:
            # A view made outside recording (of a constant, or under no_backprop_mode): through its
            # base as well. Writing into its array alone missed the base where the arrays do not
            # share memory (x.T.reshape(6) on numpy), and where they do changed the base's values
            # behind its graph's back (x.grad [14, 4] for [0, 4]).
            view = _unrecorded_base(self)
            if view is not None:
                *view, index = view
        if view is not None:
            base, unview, params = view
            new_base = unview(GRAPH_OPS, base, result, index, **params)
            if new_base is not None:
                if result._node is not None:  # result's node saved this view's array: keep its values
                    result._node._protect_saved(old, copy=backend_of_type(type(old)).inplace)
                if base._node is None:
                    base._check_inplace(opname, view=self)
                node = self._node
                base._assign_inplace(new_base, opname)  # its recorded views follow it, this one too ...
                if self._node is node:  # ... unless it was not remembered (a base taken again)
                    self._follow(base)
                return self
            self._vb = Version.at(self._vbox.n)  # no view for these parameters (a copy): a counter of its own
        return self._write(result, opname)

    def _refuse_change(self, new: Any, opname: str, operands: tuple) -> None:
        """The error for an in-place ``opname`` whose result ``new`` has another shape or dtype than this
        variable's data: what changes, from and to what, and the operand that made it change."""
        old = self._data
        if new.shape is None or new.dtype is None or old.shape is None:  # (a symbolic array's, not inferred)
            which = "the variable" if old.shape is None else "the result"
            raise ValueError(
                f"polygrad: in-place {opname} of {self._describe()}{'' if old.dtype is None else f', dtype {old.dtype}'}: "
                f"the shape of {which} "
                f"could not be inferred from the symbolic shapes, so it cannot be checked to stay the same; declare "
                f"the sizes you know with T.tensor(dtype, shape) (e.g. (None, 3)), or use the out-of-place form"
            )
        changes = ([] if _same_shape(new.shape, old.shape, lazy=True) else
                   [f"shape from {_shape_text(old.shape)} to {_shape_text(new.shape)}"])
        changes += [f"dtype from {old.dtype} to {new.dtype}"] if new.dtype != old.dtype else []
        other = getattr(operands[0], "_data", operands[0]) if operands else None
        given = (f" with an operand of dtype {other.dtype} and shape {_shape_text(other.shape)}"
                 if hasattr(other, "dtype") and hasattr(other, "shape") else "")
        raise ValueError(f"polygrad: in-place {opname} of {self._describe()}{given} would change its "
                         f"{' and '.join(changes)}; use the out-of-place form")

    def _writes_in_place(self) -> bool:
        """Whether an in-place operation writes into this variable's array (else it rebinds)."""
        return backend_of_type(type(self._data)).inplace and config.inplace_policy.get() != "copy"

    def _write(self, result: "Variable", opname: str) -> "Variable":
        """The in-place write itself (see :meth:`_assign_inplace`), for a variable that is no view."""
        new, old = result._data, self._data
        node = result._node
        # (copy on write where a user Function may hold the array for its backward: see Version.holder)
        holder = self._vbox.holder
        in_place = self._writes_in_place() and not (holder is not None and (f := holder()) is not None
                                                     and f._may_hold())
        if node is not None:
            # result's node may have saved `old` as an input: it must keep the old values.
            node._protect_saved(old, copy=in_place)
        views = self._direct_views()
        box = self._vbox
        if in_place:
            try:
                old[...] = new
            except (TypeError, ValueError, AttributeError):  # read-only array (numpy scalar, ...): rebind
                self._data = new
            box.bump(opname)
        else:
            # Rebind: the old array stays as it was for whatever saved it; this variable (and the
            # views that follow it) count the change on a counter of their own.
            self._data = new
            self._vb = Version.at(box.n)
            self._vb.bump(opname)
        self._leave_node()
        if node is not None:
            outs = list(node.outputs)
            outs[result._index] = weakref.ref(self)
            node.outputs = tuple(outs)
            self._node = node
            self._index = result._index
            self._requires_grad = True
        elif config.enable_backprop.get():
            # A result that depends on nothing needing a gradient (fill_, zero_, a volatile
            # operand): neither does this variable now, and it is volatile as the out-of-place
            # result is (else a loss built on it backpropagated as if it were a constant). (Under
            # no_backprop_mode the change is not recorded and the variable keeps its history, as in PyTorch.)
            self._node = None
            self._index = 0
            self._requires_grad = False
            self._volatile = self._volatile or result._volatile
        for w in views:
            w._follow(self)
        return self

    def _direct_views(self, at: tuple | None = None) -> list:
        """The live recorded views taken of this variable as it is now (before a write), or as it
        stood at graph position ``at`` (``(node, index)``, before a user Function's write).

        A view of a view whose middle Variable is gone (``y = h.T[0]``) is reached through a
        stand-in for the middle, taken again now (one per middle, shared by its views): the
        stand-in follows this variable, and the view follows the stand-in, as when the middle
        is kept (else y kept its old graph, and on a backend that rebinds its old values)."""
        box = self._vb
        if box is None or not box.views:
            return []
        node, index = (self._node, self._index) if at is None else at
        out, middles = [], {}
        for ref in list(box.views.values()):
            w = ref()
            if w is not None and w is not self and w._node is None:  # made outside recording
                entry = _unrecorded(w)
                if entry is not None and entry[1] is self:
                    out.append(w)
                continue
            if w is None or w is self:
                continue
            pos, middle = _view_edge(w._node), None
            while pos is not None and not (pos[0] is node and (pos[1] is self if node is None else pos[1] == index)):
                base_node, where = pos
                if base_node is None or base_node.outputs[where]() is not None:
                    pos = None  # a leaf, or a live middle: the view follows when that one does
                else:
                    pos, middle = _view_edge(base_node), pos
            if pos is None:
                continue
            if middle is None:
                out.append(w)
            elif (id(middle[0]), middle[1]) not in middles:
                stand_in = _stand_in(middle[0], middle[1], self)
                middles[id(middle[0]), middle[1]] = stand_in
                out.append(stand_in)
        return out

    def _follow(self, base: "Variable", cut: bool = False) -> None:
        """Take this view again from ``base``, just written in place: new data (where the
        backend rebinds), a new graph position, the base's counter; views of it follow too.
        ``cut``: ``base`` left its graph instead (``unchain``), its values unchanged: the view
        stays itself as its base does, its hooks firing in both graphs."""
        from polygrad.core.primitive import apply  # the engine's apply imports this module

        node = self._node
        views = self._direct_views()
        if node is None:  # a view made outside recording
            _, _, op, params, index = _unrecorded(self)
            if base._node is None:  # taken again the same way
                # (a symbolic array carries its graph in its data, no node: taken again outside recording,
                # the view became a detached symbol and the compiled gradient lost its path through it)
                quiet = contextlib.nullcontext() if type(base._data) in _pinned else config.no_backprop_mode()
                with quiet:
                    fresh = apply(op, (base,), params or None)
                if op.multi:
                    fresh = fresh[index]
                self._data = fresh._data
                self._vb = fresh._vb
                self._volatile = base._volatile  # (`c += vol` made the base volatile)
                note_unrecorded_view(self, base, op, params, index)
                self._vb.add_view(self)
                for w in views:
                    w._follow(self, cut)
                return
            # The write gave the base a graph (a value that requires grad, written into a view of
            # a constant): the view is taken again in the graph, as PyTorch's view gets a grad_fn.
            # Without, `c[0:1] += f(x)` lost x's path (Python stores the view back into c).
            _UNRECORDED.pop(id(self), None)
        else:
            op, params, index = node.op, node.params, self._index
        with config.force_backprop_mode():
            fresh = apply(op, (base,), params or None)
        if op.multi:
            fresh = fresh[index]
        if cut:
            self._keep_hooks_from_old_graph()
        else:
            self._leave_node()
        self._data = fresh._data
        self._vb = fresh._vb
        self._node, self._index, self._requires_grad = fresh._node, fresh._index, fresh._requires_grad
        self._volatile = fresh._volatile
        if fresh._node is not None:
            outs = list(fresh._node.outputs)
            outs[fresh._index] = weakref.ref(self)
            fresh._node.outputs = tuple(outs)
            fresh._vb.add_view(self)
            if cut and self._hooks:
                self._hooks_on_node()
        else:  # a base that requires no grad now (detach_, a volatile value written): a view made outside recording
            note_unrecorded_view(self, base, op, params, index)
            self._vb.add_view(self)
        for w in views:
            w._follow(self, cut)

    def _keep_hooks_from_old_graph(self) -> None:
        """This variable stops being the output of its creator but stays itself (unchain): the
        hooks registered so far fire in both the old graph and the graphs built on it from now
        on; hooks registered later only in the new ones (they fired in the old graph too), and
        the old graph's retain_grad no longer writes into its .grad."""
        node = self._node
        if node is None:
            return
        if type(node._var_hooks) is dict:
            entry = node._var_hooks.get(self._index)
            if entry is not None and entry[0] is self._hooks:  # (even emptied: later ones stay out)
                node._var_hooks[self._index] = (_HooksBefore(self._hooks),) + entry[1:]
        outs = list(node.outputs)  # the old graph no longer names this variable (retain_grad)
        outs[self._index] = _gone
        node.outputs = tuple(outs)

    def _leave_node(self) -> None:
        """This variable stops being the output of its creator (it is about to change in place):
        the hooks registered so far stay with the old value, as in PyTorch; the creator's
        slot no longer names this variable (so retain_grad fills in the new value's gradient)."""
        node = self._node
        if node is None:
            return
        outs = list(node.outputs)
        if self._hooks:
            old = Variable._make(self._data, node, self._index, True)
            old._hooks, self._hooks = self._hooks, None
            outs[self._index] = lambda old=old: old  # held by the node, as long as the node lives
        else:
            outs[self._index] = _gone
        node.outputs = tuple(outs)


class _GradVariable(Variable):
    """``x.grad_var`` where x's gradient is an array (Chainer's ``grad_var``): a Variable over that array, held
    here. While the array is still ``x.grad`` (x alive), a new array given to it (``gv.data = v``, an in-place
    operation that rebinds, ``pg.persist(gv)``) is given to x as ``x.grad = v`` is (checked), and the wrapper
    follows it: a new wrapper at each access dropped all that silently. Once x's gradient is another array
    (cleargrad, a backward that summed into a new one, ``x.grad = v``) or x is gone, it is a Variable of its own
    array, as Chainer's earlier ``grad_var``: what it or a view of it is given never reaches x's new gradient."""

    __slots__ = ("_arr", "_of")

    @classmethod
    def _over(cls, arr: Any, x: Variable) -> "_GradVariable":
        v = cls.__new__(cls)
        v._arr, v._of = arr, weakref.ref(x)  # (x holds this wrapper: no cycle)
        v._grad = v._node = v.name = v._hooks = None
        v._index, v._requires_grad, v._volatile, v._vb = 0, False, False, Version()
        return v

    @property
    def _data(self) -> Any:
        return self._arr

    @_data.setter
    def _data(self, value: Any) -> None:
        x = None if self._of is None else self._of()
        if x is not None and x._grad is self._arr:
            x.grad = value
            value = x.grad  # (as admitted: cast, or an array of its own)
            x._gv = self  # (still x's wrapper)
        self._arr = value

    def _slots(self) -> dict:
        """A copy, a deepcopy or a pickle is a wrapper of its own array, x's no longer (a copy of x's data is
        not x's data), unless copied with x (see Variable.__setstate__)."""
        slots = super()._slots()
        del slots["_data"]
        slots["_of"] = None
        return slots

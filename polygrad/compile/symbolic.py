"""Symbolic variables: Variables whose data is an expression, not an array.

A symbolic Variable goes through the same ops, operators and op table as an
eager one. Its data is a :class:`SymbolicArray`, owned by a pseudo-backend
whose "kernel" for every op records the application instead of computing it.
Nothing is computed until a compiled ``pg.function`` is called with values.

``pg.grad(cost, wrt)`` on symbolic variables returns symbolic gradients: when
the function is compiled, they are computed by the ordinary backward engine
(with ``create_graph=True``), so they use the same vjp rules as eager mode.
"""

from __future__ import annotations

import bisect
import itertools
import threading
import warnings
from typing import Any, Iterator, Sequence

from polygrad._registry import draws_aside
from polygrad.array_api import DTYPES
from polygrad.ops._dtypes import NARROW_NAMES
from polygrad.backends import get_backend
from polygrad.core import config
from polygrad.core import dispatch as _dispatch
from polygrad.core.op import REGISTRY, Op, value_shaped
from polygrad.core.variable import Variable
from polygrad.core.engine import complex_loss_error, unused_input_error
from polygrad.ops.elementwise import _is_complex

_ids = itertools.count()



class SymbolicArray:
    """Placeholder data of a symbolic Variable: an input, a shared value, an op
    application, a gradient, or a new leaf of another's value (``kind="detached"``,
    ``args=(source,)``: ``x.detach()``, ``pg.Variable(x.data)``, a result made in
    ``no_backprop_mode``), which no gradient goes back through. A symbol is one place
    in the graph: a Variable made over another's symbol gets a detached one (see
    :meth:`SymbolicBackend.new_leaf`). ``shape`` entries are None where unknown."""

    __slots__ = ("kind", "op", "args", "params", "name", "dtype", "shape", "ndim", "container", "grad_of", "id", "__weakref__")

    def __init__(self, kind: str, *, op: Op | None = None, args: tuple = (), params: dict | None = None,
                 name: str | None = None, dtype: str | None = None, shape: tuple | None = None,
                 container: Any = None, grad_of: Any = None) -> None:
        self.kind = kind
        self.op = op
        self.args = args
        self.params = params
        self.name = name
        self.dtype = dtype
        self.shape = shape
        self.ndim = None if shape is None else len(shape)
        self.container = container
        self.grad_of = grad_of
        self.id = next(_ids)

    @property
    def size(self) -> int | None:
        if self.shape is None or any(n is None for n in self.shape):
            return None
        n = 1
        for d in self.shape:
            n *= d
        return n

    def __repr__(self) -> str:
        if self.kind in ("input", "shared"):
            return self.name or f"<{self.kind} {self.dtype} ndim={self.ndim}>"
        if self.kind == "grad":
            return f"grad({self.grad_of[0]!r}, {self.grad_of[1][self.grad_of[2]]!r})"
        if self.kind == "item":
            return f"{self.args[0]!r}[{self.params['index']}]"
        if self.kind == "detached":
            return f"detach({self.args[0]!r})"
        inner = ", ".join(repr(a) for a in self.args)
        return f"{self.op.name}({inner})"

    def __bool__(self) -> bool:
        raise TypeError("polygrad: the truth value of a symbolic variable is not known until the function is called")

    def _no_comparison(self, other: Any) -> Any:
        # Python's default == is identity: a comparison written on the raw data of a symbolic
        # Variable would silently give True or False instead of recording an op.
        raise TypeError(
            f"polygrad: cannot compare the symbolic array {self!r} with an operator; compare Variables "
            f"(x == y records an op) or use pg.equal / pg.not_equal"
        )

    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = _no_comparison
    __hash__ = object.__hash__


#: The kinds of symbol made by an operation (a graph position with a creator); the others are leaves.
COMPUTED = ("op", "item", "grad")


def _detached(source: SymbolicArray) -> SymbolicArray:
    """A new leaf holding ``source``'s value."""
    return SymbolicArray("detached", args=(source,), dtype=source.dtype, shape=source.shape)


#: The first id each :func:`_cut_behind` gave a cut symbol, in order: a gradient of a lower id was
#: asked for before that cut, and goes through it (ids grow: the list is sorted).
cuts: list[int] = []


def epoch(t: int) -> int:
    """How many cuts a gradient of id ``t`` sees: gradients of one epoch see one graph."""
    return bisect.bisect_left(cuts, t)


def _cut_behind(root: SymbolicArray) -> None:
    """``unchain_backward`` on a symbolic variable, as eager's purges every node behind it: each
    symbol an operation made behind ``root`` (``root`` too) becomes, in place, a new leaf of its
    value (the operation moves to a copy it reads), so that no gradient asked for from now on
    crosses it, from this graph or from another that reads the same symbols. The copy keeps the
    symbol's id, the leaf takes a new one: a gradient asked for before (an id below the leaf's)
    still goes through, as eager's was computed then (see :func:`~polygrad.compile.program.trace`).
    (An item of several outputs is cut at the operation that makes them all.)"""
    seen: set[int] = set()
    first = True
    stack = [root]
    while stack:
        s = stack.pop()
        if id(s) in seen:
            continue
        seen.add(id(s))
        if s.kind == "item":
            stack.append(s.args[0])
            continue
        if s.kind not in COMPUTED:
            continue  # a leaf: nothing behind it
        inner = SymbolicArray(s.kind, op=s.op, args=s.args, params=s.params, name=s.name, dtype=s.dtype,
                              shape=s.shape, container=s.container, grad_of=s.grad_of)
        inner.id, s.id = s.id, inner.id
        if first:
            cuts.append(s.id)
            first = False
        s.kind, s.op, s.args, s.params, s.grad_of = "detached", None, (inner,), None, None
        if inner.kind == "op":
            stack.extend(a for a in inner.args if isinstance(a, SymbolicArray))
        else:
            stack.append(inner.grad_of[0])
            stack.extend(inner.grad_of[1])


# The names a dtype's text may end with, longest first: "uint8" ends with "int8" too (a computed
# uint8 node was named int8), "bfloat16" with "float16".
_LONGEST_FIRST = tuple(sorted(NARROW_NAMES + DTYPES, key=len, reverse=True))


def _dtype_name(dtype: Any) -> str | None:
    if dtype is None or isinstance(dtype, str):
        return dtype
    # a dtype object prints as its name (numpy.dtype, torch.float32); a scalar type
    # (numpy.float32, jax.numpy.float32) prints as "<class ...>" but names itself
    text = getattr(dtype, "__name__", None) or str(dtype)
    for name in _LONGEST_FIRST:  # (a computed float16 node knows its dtype: widened_of reads it)
        if text.endswith(name):
            return name
    raise TypeError(f"polygrad.symbolic: unknown dtype {dtype!r}")


def default_float() -> str:
    """The name of the current backend's default floating dtype (Theano's ``floatX``): float64
    on numpy, float32 on a backend whose namespace says so."""
    from polygrad.ops._dtypes import default_dtypes

    return _dtype_name(default_dtypes(get_backend().xp)["real floating"])


def _stand_ins(xp: Any, datas: tuple, unknown: int | Iterator[int] = 1) -> list:
    """``datas`` with each symbolic array replaced by an array of its dtype and shape (unknown
    dims as ``unknown``, or the next of its sizes, one per unknown dim in order): zeros for
    integers, which index any axis that is not empty; for floats, ones, plus ``n`` on the
    diagonal of a stack of ``n x n`` matrices, which makes them invertible and positive definite
    (``solve``, ``inv``, ``cholesky`` refused ones)."""
    sizes = itertools.repeat(unknown) if isinstance(unknown, int) else unknown
    out = []
    for d in datas:
        if isinstance(d, SymbolicArray):
            dtype = getattr(xp, d.dtype)
            shape = tuple(next(sizes) if n is None else n for n in d.shape)
            if xp.isdtype(dtype, "integral"):
                d = xp.zeros(shape, dtype=dtype)
            else:
                d = xp.ones(shape, dtype=dtype)
                if len(shape) >= 2 and shape[-1] == shape[-2] and not xp.isdtype(dtype, "bool"):
                    d = d + shape[-1] * xp.eye(shape[-1], dtype=dtype)
        out.append(d)
    return out


# Held around the stand-in kernels' catch_warnings (building symbolic graphs, never eager calls): it
# saves and restores the process-wide filters, so two threads' blocks interleaved left "ignore
# RuntimeWarning" installed for good (catch_warnings is not thread-safe before Python 3.14).
_QUIET = threading.RLock()


# The most elements a stand-in of a larger size for unknown dimensions may have (see _infer).
_STAND_IN_LIMIT = 1 << 20


def _infer(op: Op, datas: tuple, params: dict | None) -> tuple[str | None, tuple | None]:
    """Output dtype name and shape of ``op`` by running its kernel on stand-in
    arrays (unknown dims as 1) of the default backend; (None, None) if unknown.

    Where that fails, unknown dims are tried once more as one more than the largest integer of
    the parameters: ``h[1, 2] = 0`` on a matrix of unknown sizes indexes past stand-ins of 1; and then
    that size for the first input only, the others' unknown dims staying 1: the value written by
    ``h[0:2, 1] = v`` must broadcast into a part smaller than the larger stand-in.

    Where an input has unknown dims, an output dim is known only where stand-ins of other sizes
    give it alike (see :func:`_alike`): ``x * 2`` of ``x`` of ``(None, 3)`` is ``(None, 3)`` (one
    unknown input dim made every output dim unknown, and layer_normalization refused the declared
    size). A result of the retries keeps every dim unknown: both of their sizes pass every index of
    the key, so a slice's length (``x[1, :2]``) would come out alike where a smaller input's is shorter."""
    if any(isinstance(d, SymbolicArray) and (d.shape is None or d.dtype is None) for d in datas):
        return None, None
    # The stand-ins' values decide nothing: unknown where a dimension of an input is, or
    # where the shape depends on the values (x[x > 0], unique_values).
    known = all(not isinstance(d, SymbolicArray) or None not in d.shape for d in datas)
    reach = _reach(params) + 1
    for size, rest in ((1, 1),) if known else dict.fromkeys(((1, 1), (reach, reach), (reach, 1))):
        if size != 1 and not _small_stand_ins(datas, size):
            continue
        try:
            out = _run_on_stand_ins(op, datas, params, size, rest)
        except Exception:
            continue
        shape = tuple(None for _ in out.shape)
        if not value_shaped(op, datas):
            if known:
                shape = tuple(out.shape)
            elif size == 1:
                shape = _alike(out.shape, op, datas, params, _second_size(reach))
                if shape is None:  # (no other size runs: an unknown dim broadcast against a declared one)
                    shape = _matched(op, datas, params, reach)[1] or tuple(None for _ in out.shape)
        return _dtype_name(out.dtype), shape
    if known:
        return None, None
    return _matched(op, datas, params, reach)


def _run_on_stand_ins(op: Op, datas: tuple, params: dict | None, size: int, rest: int) -> Any:
    """``op``'s kernel on stand-ins of ``datas``: unknown dims of the first input as ``size``, of
    the others as ``rest``."""
    xp = get_backend().xp
    return _run(op, _stand_ins(xp, datas[:1], size) + _stand_ins(xp, datas[1:], rest), params)


def _run(op: Op, stand_ins: list, params: dict | None) -> Any:
    # stand-ins of ones may leave a domain (atanh(1)): only the shape counts; a random row's draws
    # are not the program's (they advanced the shared generator: after pg.seed, a compiled call
    # drew other numbers than eager code)
    with _QUIET, warnings.catch_warnings(), draws_aside():
        warnings.simplefilter("ignore", RuntimeWarning)
        return op.kernel(get_backend())(*stand_ins, **(params or {}))


# How many runs, and how many elements per stand-in, :func:`_matched` may spend on one expression.
_MATCH_RUNS = 256
_MATCH_ELEMENTS = 1 << 16


def _matched(op: Op, datas: tuple, params: dict | None, reach: int) -> tuple[str | None, tuple | None]:
    """Output dtype name and shape of ``op`` where no stand-ins of one size for every unknown dim
    run: an unknown dim must then match a declared one (``X @ W`` of ``X`` of unknown sizes and
    ``W`` of ``(5, 3)``: only 5 fits ``X``'s second dim; Theano's ``T.matrix`` declares no size).
    Each unknown dim is tried at every size the inputs declare, at 0, 1 and a size declared by none;
    an output dim is known where every run that succeeds gives it alike (``(None, 3)``): a free dim
    then varies, a matched one gives its declared size. (None, None) where none succeeds, or where
    the sizes to try are too many (runs past :data:`_MATCH_RUNS`; stand-ins of unknown dims past
    :data:`_MATCH_ELEMENTS` are not tried)."""
    syms = [d for d in datas if isinstance(d, SymbolicArray)]
    count = sum(n is None for d in syms for n in d.shape)
    declared = {n for d in syms for n in d.shape if n is not None}
    free = _second_size(reach)
    while free in declared:
        free += 1
    sizes = sorted(declared | {0, 1, free})
    if len(sizes) ** count > _MATCH_RUNS:
        return None, None
    xp = get_backend().xp
    # (an input of declared sizes: its stand-in made once, not per run: a W of 4096 x 4096 took 1.6 s)
    fixed = [None if isinstance(d, SymbolicArray) and None in d.shape else _stand_ins(xp, (d,))[0] for d in datas]
    outs, sized = [], 0  # every run that succeeds; how many of them have no unknown dim of 0
    fits: list[set] = [set() for _ in range(count)]  # the sizes each unknown dim ran at, but 0
    for combo in itertools.product(sizes, repeat=count):
        it = iter(combo)
        too_large = False
        for d in syms:
            n = 1
            for k in d.shape:
                n *= next(it) if k is None else k
            too_large = too_large or (None in d.shape and n > _MATCH_ELEMENTS)
        if too_large:
            continue
        it = iter(combo)
        try:
            outs.append(_run(op, [f if f is not None else _stand_ins(xp, (d,), it)[0]
                                  for d, f in zip(datas, fixed)], params))
        except Exception:
            continue
        if 0 not in combo:
            sized += 1
            for fit, n in zip(fits, combo):
                fit.add(n)
    # Only runs without an empty stand-in tell what fits: with one dim at 0 any size of another fits
    # (reshape(x, (-1, 4)) of unknown sizes ran at 0 rows only, and was read as (0, 4)); empty runs
    # only show dims that differ. A dim that ran at one size only must match a declared one: one
    # that fits sizes the grid lacks (reshape(x, (2, -1))) would be read as known.
    if not sized or len({len(o.shape) for o in outs}) != 1 or any(
            len(fit) == 1 and not fit <= declared for fit in fits):
        return None, None
    first = outs[0]
    if value_shaped(op, datas):
        return _dtype_name(first.dtype), tuple(None for _ in first.shape)
    return _dtype_name(first.dtype), tuple(n if all(o.shape[i] == n for o in outs) else None
                                           for i, n in enumerate(first.shape))


def _alike(shape: tuple, op: Op, datas: tuple, params: dict | None, size: int) -> tuple:
    """``shape`` (of ``op`` on stand-ins with unknown dims of 1) where ``op`` on stand-ins with
    unknown dims of ``size``, and of 0 where it runs on those, gives the same dim; None elsewhere,
    and everywhere where the run at ``size`` fails or its stand-ins are too large. (A slice ``x[-1:]``
    is 1 long at every size but 0; an op that refuses empty stand-ins, ``x[0]`` or ``max``, is
    not asked.) None where the run at ``size`` fails (``v * W[0]`` of ``v`` of unknown size and
    ``W[0]`` of 3: only 1 and 3 fit, see :func:`_matched`)."""
    unknown = tuple(None for _ in shape)
    if not _small_stand_ins(datas, size):
        return unknown
    try:
        others = [_run_on_stand_ins(op, datas, params, size, size).shape]
    except Exception:
        return None
    try:
        others.append(_run_on_stand_ins(op, datas, params, 0, 0).shape)
    except Exception:
        pass
    if any(len(other) != len(shape) for other in others):
        return unknown
    return tuple(n if all(other[i] == n for other in others) else None for i, n in enumerate(shape))


def _second_size(reach: int) -> int:
    """The size of unknown dims that :func:`_alike` compares with 1: past twice ``reach`` (more than
    every integer of the parameters), so that no dim that follows an unknown one comes out alike by
    chance: a slice's length, monotone in the size and constant or growing past its bounds, is the
    same at 1 and at a size past its bounds and a step only if it is the same at every size but 0."""
    return max(5, 2 * reach + 1)


def _reach(params: dict | None) -> int:
    """The largest magnitude of an integer in ``params`` (in tuples, lists and slices): how far
    an index of a key reaches."""
    def ints(p: Any) -> Iterator[int]:
        if isinstance(p, int) and not isinstance(p, bool):
            yield abs(p)
        elif isinstance(p, (tuple, list)):
            for q in p:
                yield from ints(q)
        elif isinstance(p, slice):
            yield from ints((p.start, p.stop, p.step))
    return max((n for p in (params or {}).values() for n in ints(p)), default=0)


def _small_stand_ins(datas: tuple, size: int) -> bool:
    """Whether stand-ins with unknown dims of ``size`` stay within :data:`_STAND_IN_LIMIT` elements."""
    for d in datas:
        if isinstance(d, SymbolicArray):
            n = 1
            for k in d.shape:
                n *= size if k is None else k
            if n > _STAND_IN_LIMIT:
                return False
    return True


def _record_multi(op: Op, datas: tuple, params: dict) -> Any:
    """A multi-output op on symbols: one SymbolicArray per output (the count comes
    from running the kernel on stand-ins; it must not depend on a dimension not known yet)."""
    parent = SymbolicArray("op", op=op, args=datas, params=params or None)
    backend = get_backend()
    syms = [d for d in datas if isinstance(d, SymbolicArray)]
    unknown = [d for d in syms if d.shape is None or None in d.shape]
    if any(d.shape is None or d.dtype is None for d in syms):
        raise TypeError(
            f"polygrad.symbolic: cannot tell how many outputs {op.name} gives: the shape of its input "
            f"{next(d for d in syms if d.shape is None or d.dtype is None)!r} is not known; declare it with "
            f"T.tensor(dtype, shape)"
        )
    try:
        with draws_aside():  # (see _run_on_stand_ins)
            sample = op.kernel(backend)(*_stand_ins(backend.xp, datas), **(params or {}))
            again = unknown and op.kernel(backend)(*_stand_ins(backend.xp, datas, 2), **(params or {}))
        if unknown and len(again) != len(sample):
            raise TypeError(
                f"polygrad.symbolic: cannot tell how many outputs {op.name} gives: it depends on a dimension of "
                f"{unknown[0]!r} (shape {tuple('?' if n is None else n for n in unknown[0].shape)}) that is not known; "
                f"declare it with T.tensor(dtype, shape)"
            )
    except TypeError as exc:
        if str(exc).startswith("polygrad"):
            raise
        raise TypeError(f"polygrad.symbolic: cannot tell the outputs of {op.name} on these symbolic inputs: {exc}") from None
    except Exception as exc:
        raise TypeError(f"polygrad.symbolic: cannot tell the outputs of {op.name} on these symbolic inputs: {exc}") from None
    shapes = [tuple(o.shape) for o in sample]
    if unknown:  # (as _alike: a dim is known where stand-ins of other sizes give it alike)
        others = []
        for size in (_second_size(_reach(params) + 1), 0):
            if _small_stand_ins(datas, size):
                try:
                    with draws_aside():
                        others.append(op.kernel(backend)(*_stand_ins(backend.xp, datas, size), **(params or {})))
                except Exception:
                    if size:  # (the run at 0 may fail: x[0], max refuse empty stand-ins)
                        others = None
                        break
        if others is None or any(len(other) != len(sample) for other in others):
            shapes = [tuple(None for _ in shape) for shape in shapes]
        else:
            shapes = [tuple(n if all(len(other[k].shape) == len(shape) and other[k].shape[i] == n for other in others)
                            else None for i, n in enumerate(shape))
                      for k, shape in enumerate(shapes)]
    if value_shaped(op, datas):
        shapes = [tuple(None for _ in shape) for shape in shapes]
    items = [SymbolicArray("item", args=(parent,), params={"index": k}, dtype=_dtype_name(o.dtype), shape=shape)
             for k, (o, shape) in enumerate(zip(sample, shapes))]
    return type(sample)(*items) if hasattr(sample, "_fields") else tuple(items)


def _holds_symbol(value: Any) -> bool:
    if isinstance(value, (tuple, list)):
        return any(_holds_symbol(v) for v in value)
    return isinstance(value, SymbolicArray) or isinstance(getattr(value, "_data", None), SymbolicArray)


def _refuse_symbolic_param(op: Op, key: str, value: Any) -> None:
    """A symbolic variable where a row takes a Python value (a shift, a fill value, a shape):
    the node kept it as a parameter, which the graph's walk never reads, so pg.function called
    the input unused and the kernel failed on it at the call."""
    raise TypeError(
        f"polygrad.{op.name}: {key} is symbolic ({value!r}); a compiled graph takes the parameters of an "
        f"operation (shifts, fill values, shapes, axes) as Python values: only arrays are symbolic inputs"
    )


class _Recorders:
    """``kernels`` of the symbolic backend: every op name gets a recorder."""

    def get(self, name: str) -> Any:
        op = REGISTRY[name]

        def record(*datas: Any, **params: Any) -> Any:
            for key, value in params.items():
                if _holds_symbol(value):
                    _refuse_symbolic_param(op, key, value)
            if op.multi:
                out = _record_multi(op, datas, params)
                if not config.enable_backprop.get():  # (each output a leaf, as eager's results there)
                    out = type(out)(*map(_detached, out)) if hasattr(out, "_fields") else tuple(map(_detached, out))
                return out
            dtype, shape = _infer(op, datas, params)
            out = SymbolicArray("op", op=op, args=datas, params=params or None, dtype=dtype, shape=shape)
            # In no_backprop_mode eager's result is a leaf: the gradient of a cost built on it does not go back
            # through the operation (it did here, as if recorded).
            return out if config.enable_backprop.get() else _detached(out)

        return record


class SymbolicBackend:
    """The pseudo-backend owning SymbolicArray: ops record instead of computing."""

    name = "symbolic"
    device = "cpu"
    lazy = False
    inplace = False
    raw_ops = None
    kernels = _Recorders()

    @property
    def xp(self) -> Any:
        raise TypeError(
            "polygrad: symbolic variables have no array namespace: code that computes on arrays itself (a user "
            "Function's forward, np.asarray) cannot be traced by pg.function; write it with polygrad's functions, "
            "or call it on arrays"
        )

    #: What to do instead of moving an eager array onto this pseudo-backend (for the mixed-backends error).
    mixing_advice = "an array in a symbolic graph is a shared variable: wrap it with pg.shared(value)"

    def refuse_write(self, v: Variable, opname: str) -> None:
        """Refuse an in-place write (``x += 1``, ``x[0] = 5``, ``x.add_(1)``) to a symbolic input or
        shared variable: it names the value a compiled function is given at each call, and a
        write would rebind it to an expression that pg.function then takes for the input."""
        data = v._data
        if isinstance(data, SymbolicArray) and data.kind in ("input", "shared"):
            what = "shared variable" if data.kind == "shared" else "symbolic input"
            instead = ("give pg.function updates=[(w, new_value)], or call w.set_value(...)" if data.kind == "shared"
                       else "pass the changed value at the call")
            raise TypeError(
                f"polygrad: in-place {opname} on the {what} {data!r}: it names the value a compiled function is given "
                f"at each call and cannot be written; write the expression out of place (y = x * 2 makes a new "
                f"expression, as in Theano) or, to change the value, {instead}"
            )

    def new_leaf(self, data: SymbolicArray) -> SymbolicArray:
        """The data of a new leaf over symbolic ``data`` (called by the core: ``pg.Variable(x.data)``,
        ``x.detach()``, a raw symbolic array as an operand): a symbol of its own, of ``data``'s value.
        An expression records the symbols it reads, not Variables: sharing ``data`` made the new leaf
        the same place in the graph, and the gradient went through it (``x.detach() * x`` gave 2x)."""
        return _detached(data)

    def unchain(self, data: SymbolicArray, backward: bool) -> SymbolicArray:
        """The data of a symbolic Variable that leaves its graph (called by the core): for ``unchain``
        and ``detach_``, a new leaf of its value where an operation made it (expressions recorded
        before keep reading the old symbol, as eager's keep their edges); for ``unchain_backward``,
        the same symbol, with everything behind it cut in place (see :func:`_cut_behind`)."""
        if backward:
            _cut_behind(data)
            return data
        return _detached(data) if data.kind in COMPUTED else data

    def grad(self, outputs: tuple, inputs: tuple, grad_outputs: tuple, *, disconnected_inputs: str = "raise",
             allow_unused: bool | None = None, label: str = "polygrad.grad") -> list:
        """Symbolic gradients of one scalar cost (``outputs``) with respect to ``inputs``.

        The cost's shape and the inputs' connection to it are checked here, when the
        gradient is asked for, not at the first call: a non-scalar cost raises; an
        input the cost does not depend on through differentiable operations raises
        (``disconnected_inputs="raise"``, Theano's default), warns (``"warn"``) or
        gets zeros (``"ignore"``). ``pg.grad`` (``allow_unused`` given) follows eager's rule
        instead: it raises eager's error, or gives None with ``allow_unused=True``.
        """
        if len(outputs) != 1 or any(g is not None for g in grad_outputs):
            raise NotImplementedError(f"{label}: symbolic gradients take one scalar cost and no grad_outputs")
        if disconnected_inputs not in ("raise", "warn", "ignore"):
            raise ValueError(f"{label}: disconnected_inputs must be 'raise', 'warn' or 'ignore', got {disconnected_inputs!r}")
        cost = outputs[0]
        wrt = tuple(inputs)
        if not isinstance(cost._data, SymbolicArray):
            raise TypeError(f"{label}: the cost must be a symbolic expression, got {cost!r}")
        for w in wrt:
            if not isinstance(w, Variable) or not isinstance(w._data, SymbolicArray):
                raise TypeError(f"{label}: wrt must be symbolic variables, got {w!r}")
        shape = cost._data.shape
        if shape is not None and len(shape) != 0:
            raise TypeError(
                f"{label}: the cost must be a scalar, but {cost._data!r} has shape "
                f"{tuple('?' if n is None else n for n in shape)}; reduce it first (pg.sum, pg.mean)"
            )
        if _is_complex(cost._data):  # (the engine's seed would be ones: the gradient of Re(cost), silently)
            raise complex_loss_error(f"the gradient of {cost._data!r}", cost._data.dtype, symbolic=True)
        # pg.grad follows eager: no gradient goes through an integer or boolean value. T.grad follows
        # Theano: an input that reaches the cost through one (a cast to int and back) is connected, with a
        # zero gradient, as is an integer input itself (of the default floating dtype: Theano's "may
        # NEVER be an int").
        eager = allow_unused is not None
        connected = _differentiable_ancestors(cost._data, floating_only=eager)
        group = (cost._data, tuple(w._data for w in wrt))
        grads: list = []
        for i, w in enumerate(wrt):
            integral = not _floating_name(w._data.dtype)
            if integral and (eager or w._data.id in connected):
                grads.append(_no_gradient_of_integers(i, w, allow_unused))
                continue
            if w._data.id not in connected:
                if allow_unused:
                    grads.append(None)
                    continue
                if allow_unused is not None:  # pg.grad's default gave zeros, where eager's raises
                    raise unused_input_error(i, repr(w._data), "is not used to compute the outputs")
                what = (f"wrt[{i}] ({w._data!r})" if len(wrt) > 1 else repr(w._data))
                text = (f"{label}: the cost does not depend on {what}: it is not part of the cost's graph, or is used "
                        f"only through non-differentiable operations")
                if disconnected_inputs == "raise":
                    raise DisconnectedInputError(
                        f"{text}. Pass disconnected_inputs='ignore' for a zero gradient, or 'warn'"
                    )
                if disconnected_inputs == "warn":
                    warnings.warn(f"{text}; its gradient is zero", stacklevel=3)
            if integral:  # (disconnected, and not refused above)
                grads.append(_no_gradient_of_integers(i, w, allow_unused))
                continue
            # (_make: a fresh symbol is this Variable's own; pg.Variable would make a new leaf of it)
            grads.append(Variable._make(SymbolicArray("grad", grad_of=group + (i,), dtype=w._data.dtype,
                                                      shape=w._data.shape)))
        return grads

    def __repr__(self) -> str:
        return "<polygrad symbolic pseudo-backend>"


SYMBOLIC = SymbolicBackend()
_dispatch.pin(SymbolicArray, SYMBOLIC)


def _no_gradient_of_integers(i: int, w: Variable, allow_unused: bool | None) -> Any:
    """The gradient of a cost with respect to a symbolic input of an integer or boolean dtype: none,
    as eager ``pg.grad`` has none for an integer Variable (it cannot require grad): ``pg.grad``
    (``allow_unused`` given) raises eager's error, or gives None with ``allow_unused=True``; ``T.grad``
    gives zeros of the default floating dtype, as Theano's (its gradient "may NEVER be an int": the
    compiled program gave int64 zeros)."""
    if allow_unused:
        return None
    if allow_unused is not None:
        raise unused_input_error(i, repr(w._data), f"is of dtype {w._data.dtype}")
    from polygrad.ops.elementwise import zeros_like

    return zeros_like(w, dtype=default_float())


def _floating_name(dtype: str | None) -> bool:
    """Whether a symbolic dtype (a name; None where it is not known) may be floating, real or
    complex: what a gradient can flow through (bfloat16 too)."""
    return dtype is None or dtype.startswith(("float", "complex")) or dtype in NARROW_NAMES


class DisconnectedInputError(ValueError):
    """``T.grad`` wrt a variable the cost does not depend on (Theano's, raised by default)."""


#: Rows without a gradient through which T.grad, as Theano, connects nothing: their result reads only
#: their inputs' shapes (Theano's fill and Shape are disconnected from the values), or the gradient
#: is undefined (Theano's nonzero: its T.grad raises).
_CONNECTING_NOTHING = frozenset({"zeros_like", "ones_like", "empty_like", "full_like", "dropout_mask", "nonzero"})


def _differentiable_ancestors(root: SymbolicArray, floating_only: bool = True) -> set[int]:
    """The ids of the expressions ``root`` depends on, as a gradient sees them.

    With ``floating_only`` (``pg.grad``, eager's rule), through differentiable operations and
    floating values only: no gradient goes through an integer or boolean value (a cast to int, a
    comparison), nor through an input an op has no rule for. Without it (``T.grad``), as Theano's
    connection patterns: every input of an op is connected, with a zero gradient where the op has
    none (a comparison, argmax, floor, a cast to int, where's condition), except an input read
    for its shape only (:data:`_CONNECTING_NOTHING`) and an index-like input a non-elementwise op
    has no rule for (take's indices, repeat's counts: Theano's AdvancedSubtensor1 and Repeat
    disconnect them)."""
    ids: set[int] = set()
    stack = [root]
    while stack:
        s = stack.pop()
        if s.id in ids:
            continue
        if floating_only and not _floating_name(s.dtype):
            continue
        ids.add(s.id)
        if s.kind == "op":
            op = s.op
            if not op.differentiable:
                if not floating_only and op.name not in _CONNECTING_NOTHING:
                    stack.extend(a for a in s.args if isinstance(a, SymbolicArray))
                continue
            rules = op.vjps
            stack.extend(a for i, a in enumerate(s.args) if isinstance(a, SymbolicArray)
                         and (i >= len(rules) or rules[i] is not None or (not floating_only and op.elementwise)))
        elif s.kind == "item":
            stack.append(s.args[0])
        elif s.kind == "grad":
            stack.append(s.grad_of[0])
            stack.extend(s.grad_of[1])
        # (a detached symbol is a leaf: its source is read for its value only)
    return ids


def is_symbolic(x: Any) -> bool:
    return isinstance(x, Variable) and isinstance(x._data, SymbolicArray)


# ---------------------------------------------------------------------------
# Constructors (Theano's tensor.scalar, vector, matrix, ...)
# ---------------------------------------------------------------------------


def tensor(dtype: Any = None, shape: Sequence[int | None] | None = None, name: str | None = None, *, ndim: int | None = None) -> Variable:
    """A symbolic input of ``dtype`` (default: the current backend's default floating dtype,
    float64 on numpy) and ``shape`` (None for an unknown dimension); ``ndim`` alone gives
    all dimensions unknown."""
    if shape is None:
        if ndim is None:
            raise TypeError("polygrad.symbolic.tensor needs shape or ndim")
        shape = (None,) * ndim
    data = SymbolicArray("input", name=name, dtype=_dtype_name(dtype) or default_float(), shape=tuple(shape))
    return Variable._make(data, name=name)  # (a fresh symbol: pg.Variable would make a new leaf of it)


def scalar(name: str | None = None, dtype: Any = None) -> Variable:
    return tensor(dtype, (), name)


def vector(name: str | None = None, dtype: Any = None) -> Variable:
    return tensor(dtype, (None,), name)


def matrix(name: str | None = None, dtype: Any = None) -> Variable:
    return tensor(dtype, (None, None), name)


def _plural(make: Any, names: Any, dtype: Any) -> list[Variable]:
    if isinstance(names, int):
        return [make(None, dtype) for _ in range(names)]
    if len(names) == 1 and isinstance(names[0], str) and len(names[0]) > 1 and not isinstance(names, str):
        names = names[0]
    if isinstance(names, str):  # 'xys' -> x, y, s (one name per letter, as in Theano)
        names = list(names)
    return [make(n, dtype) for n in names]


def scalars(*names: Any, dtype: Any = None) -> list[Variable]:
    """``scalars('u', 'x', 's')`` or ``scalars('uxs')``: one symbolic scalar per name."""
    return _plural(scalar, names if len(names) != 1 or not isinstance(names[0], int) else names[0], dtype)


def vectors(*names: Any, dtype: Any = None) -> list[Variable]:
    return _plural(vector, names if len(names) != 1 or not isinstance(names[0], int) else names[0], dtype)


def matrices(*names: Any, dtype: Any = None) -> list[Variable]:
    return _plural(matrix, names if len(names) != 1 or not isinstance(names[0], int) else names[0], dtype)


def grad(cost: Variable, wrt: Any, consider_constant: Any = None, disconnected_inputs: str = "raise") -> Any:
    """Symbolic gradient(s) of a scalar ``cost`` (Theano's ``T.grad``): one Variable, or a list for a list.

    A non-scalar cost raises here. ``disconnected_inputs`` says what a ``wrt`` the
    cost does not depend on does: ``"raise"`` (default, as Theano:
    :class:`DisconnectedInputError`), ``"warn"`` or ``"ignore"`` (both give zeros).
    """
    if consider_constant is not None:
        raise NotImplementedError("polygrad T.grad: consider_constant is not supported")
    single = isinstance(wrt, Variable)
    ws = [wrt] if single else list(wrt)
    if not isinstance(cost, Variable) or not isinstance(cost._data, SymbolicArray):
        raise TypeError(f"polygrad T.grad: the cost must be a symbolic expression, got {cost!r}")
    gs = SYMBOLIC.grad((cost,), tuple(ws), (None,), disconnected_inputs=disconnected_inputs, label="polygrad T.grad")
    return gs[0] if single else gs


def walk(roots: Sequence[SymbolicArray], stop: set, givens: dict, *,
         floating_only: bool = False, as_of: int | None = None) -> Iterator[SymbolicArray]:
    """Every expression the roots read, as a call evaluates them: an input (an id in
    ``stop``) is given, not computed from its owner; a replaced one (in ``givens``) reads
    its replacement instead. ``floating_only``, where a gradient may go: not past (nor at) an
    expression of a dtype known not to be floating (a comparison, a cast to integers), nor past
    a detached one, but for one unchain_backward cut after the gradient of id ``as_of``."""
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        s = stack.pop()
        if s.id in seen:
            continue
        seen.add(s.id)
        if floating_only and not _floating_name(s.dtype):
            continue
        yield s
        if s.id in givens:
            stack.append(givens[s.id])
        elif s.id in stop or (floating_only and s.kind == "detached" and (as_of is None or s.id < as_of)):
            continue
        elif s.kind in ("op", "item", "detached"):
            stack.extend(a for a in s.args if isinstance(a, SymbolicArray))
        elif s.kind == "grad":
            stack.append(s.grad_of[0])
            stack.extend(s.grad_of[1])

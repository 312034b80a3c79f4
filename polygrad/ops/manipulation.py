"""Shape manipulation and indexing: kernels and vjp rules."""

from __future__ import annotations

import builtins
import functools
import math
import numbers
import operator
import sys
from typing import Any, Callable, NamedTuple

from polygrad.core.dispatch import SCALARS, backend_of_type, checked_lazily, has_namespace, is_array, readable
from polygrad.core.op import Op, def_linear, defvjp, returned_input
from polygrad.core.primitive import apply
from polygrad.core.variable import Variable, _same_shape
from polygrad.ops.elementwise import cast_grad
from polygrad.ops._dtypes import check_number_fits, default_dtypes, index_dtype
from polygrad.ops._export import names, public


# ---------------------------------------------------------------------------
# Helpers shared by the chapters
# ---------------------------------------------------------------------------
def _normalize_axes(axis: Any, ndim: int, fn: str = "") -> tuple[int, ...]:
    """``axis`` (None, an int or a tuple) as non-negative axes; one outside [-ndim, ndim) is an
    error here, never wrapped around (``moveaxis(x, 5, 0)`` on 3 dimensions must not move axis 2)."""
    if axis is None:
        return tuple(range(ndim))
    if not isinstance(axis, tuple):
        axis = (axis,)
    if not ndim:
        return axis
    bad = [a for a in axis if not -ndim <= a < ndim]
    if bad:
        raise ValueError(f"polygrad{'.' + fn if fn else ''}: axis {bad[0]} is out of bounds for an array of {ndim} dimensions")
    axes = tuple(a % ndim for a in axis)
    if len(set(axes)) != len(axes):  # moveaxis(x, (0, 1), (2, 2)) would build a valid-looking permutation
        raise ValueError(f"polygrad{'.' + fn if fn else ''}: the axes {axis} repeat an axis")
    return axes


def axis_param(x: Any, axis: Any, fn: str, single: bool = False) -> Any:
    """``axis`` as an op's parameter (a list as a tuple), a tuple (or, with ``single``, an int)
    checked here once, at the call: a repeated or out-of-range axis raises on every backend (dask
    flipped ``axis=(0, 0)`` once, its reductions failed only when computed, and its take wrapped
    ``axis=2`` of a 2-D array around to axis 0)."""
    if isinstance(axis, (tuple, list)) or (single and axis is not None):
        axis = tuple(axis) if isinstance(axis, list) else axis
        ndim = getattr(x, "ndim", None)
        if ndim is not None:
            _normalize_axes(axis, ndim, fn)
    return axis


def _along(axis: int, index: Any, ndim: int) -> tuple:
    """The key selecting ``index`` on ``axis`` (non-negative) and everything elsewhere."""
    return (slice(None),) * axis + (index,) + ((Ellipsis,) if axis < ndim - 1 else ())


def _inverse_perm(axes: Any, ndim: int) -> tuple[int, ...]:
    axes = [a % ndim for a in axes]
    inv = [0] * ndim
    for i, a in enumerate(axes):
        inv[a] = i
    return tuple(inv)


def _as_sequence(arrays: tuple) -> tuple:
    """Kernels of sequence ops take the arrays spread out (from ``apply``) or as one
    list (from a rule calling ``o.stack([...])`` on raw arrays)."""
    if len(arrays) == 1 and isinstance(arrays[0], (list, tuple)):
        return tuple(arrays[0])
    return arrays


def require_data_dependent_shapes(x: Any, what: str) -> None:
    """Raise a clear error if ``x``'s backend cannot give ``what`` a data-dependent shape."""
    data = x._data if isinstance(x, Variable) else x
    backend = backend_of_type(type(data))
    info = getattr(backend, "info", None)
    if info is not None and not info.data_dependent_shapes:
        raise ValueError(
            f"polygrad: {what} has a shape that depends on the data, which backend {backend.name!r} cannot represent "
            f"(BackendInfo.data_dependent_shapes is False); compute it on an eager backend, or use a fixed-shape "
            f"formulation such as where(mask, x, 0)"
        )


class _EachInput:
    """The vjp rules of a variadic op: rule ``i`` is ``rule(i, o, g, ans, *inputs, **params)``."""

    __slots__ = ("_rule",)

    def __init__(self, rule: Callable) -> None:
        self._rule = rule

    def __len__(self) -> int:
        return sys.maxsize

    def __getitem__(self, i: int) -> Callable:
        return functools.partial(self._rule, i)


def defvjp_each(op: Op, rule: Callable, saves: str = "") -> Op:
    """Attach one rule for every input of a variadic op (``rule(i, o, g, ans, *inputs, **params)``)."""
    defvjp(op, saves=saves)
    op.vjps = _EachInput(rule)
    return op




def _sum_to_kernel(xp: Any, x: Any, shape: tuple) -> Any:
    """Sum ``x`` down to ``shape`` (the inverse of broadcasting)."""
    shape = tuple(shape)
    if tuple(x.shape) == shape:
        return x
    lead = x.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape) if n == 1 and x.shape[lead + i] != 1)
    y = xp.sum(x, axis=axes, keepdims=True) if axes else x
    if lead:
        y = xp.reshape(y, shape)
    return y


# ---------------------------------------------------------------------------
# Shapes
# ---------------------------------------------------------------------------
def _same_shape_as_base(o: Any, base: Any, value: Any, index: int, **params: Any) -> Any:
    """The unview of views that only reshape: the value put back in the base's shape."""
    return o.reshape(value, tuple(base.shape))


RESHAPE = defvjp(Op("reshape", shapes=True, view=True, unview=_same_shape_as_base),
                 lambda o, g, ans, x, shape, copy=None: o.reshape(g, x.shape))


@public
def reshape(x, /, shape, *, copy=None):
    shape = tuple(shape)
    if copy:  # a view (the row's) copied once: writes into the result never reach x, on any backend
        from polygrad.ops.creation import ASARRAY

        return apply(ASARRAY, (apply(RESHAPE, (x,), {"shape": shape}),), {"copy": True})
    return apply(RESHAPE, (x,), {"shape": shape} if copy is None else {"shape": shape, "copy": copy})


PERMUTE_DIMS = defvjp(Op("permute_dims", view=True,
                         unview=lambda o, base, value, index, axes: o.permute_dims(value, _inverse_perm(axes, value.ndim))),
                      lambda o, g, ans, x, axes: o.permute_dims(g, _inverse_perm(axes, g.ndim)))


@public
def permute_dims(x, /, axes):
    # the standard's namespaces take only a permutation of 0..ndim-1
    return apply(PERMUTE_DIMS, (x,), {"axes": _normalize_axes(tuple(axes), x.ndim, "permute_dims")})


REVERSE_DIMS = defvjp(Op("reverse_dims", lambda xp, x: xp.permute_dims(x, tuple(range(x.ndim))[::-1]), view=True,
                         unview=lambda o, base, value, index: o.reverse_dims(value)),
                      lambda o, g, ans, x: o.reverse_dims(g))


@public(standard=False)
def transpose(x, axes=None):
    """Reverse (or permute by ``axes``) the dimensions, as Chainer's F.transpose."""
    if axes is None:
        return apply(REVERSE_DIMS, (x,))
    return permute_dims(x, axes)


@public(standard=False)
def reverse_dims(x, /):
    """Reverse the order of the dimensions (``x.T``)."""
    return apply(REVERSE_DIMS, (x,))


MATRIX_TRANSPOSE = defvjp(Op("matrix_transpose", view=True,
                             unview=lambda o, base, value, index: o.matrix_transpose(value)),
                          lambda o, g, ans, x: o.matrix_transpose(g))


@public(also="linalg")
def matrix_transpose(x, /):
    return apply(MATRIX_TRANSPOSE, (x,))


BROADCAST_TO = defvjp(Op("broadcast_to", shapes=True, view=True),
                      lambda o, g, ans, x, shape: o.sum_to(g, x.shape))


@public
def broadcast_to(x, /, shape):
    return apply(BROADCAST_TO, (x,), {"shape": tuple(shape)})


SUM_TO = defvjp(Op("sum_to", _sum_to_kernel, shapes=True, view=returned_input),
                lambda o, g, ans, x, shape: o.broadcast_to(g, x.shape))


@public(standard=False)
def sum_to(x, shape):
    """Sum ``x`` over broadcast dimensions so that it has ``shape``."""
    return apply(SUM_TO, (x,), {"shape": tuple(shape)})


EXPAND_DIMS = defvjp(Op("expand_dims", shapes=True, view=True, unview=_same_shape_as_base),
                     lambda o, g, ans, x, axis: o.reshape(g, x.shape))


@public
def expand_dims(x, /, axis):
    return apply(EXPAND_DIMS, (x,), {"axis": axis})


SQUEEZE = defvjp(Op("squeeze", shapes=True, view=True, unview=_same_shape_as_base),
                 lambda o, g, ans, x, axis: o.reshape(g, x.shape))


@public
def squeeze(x, /, axis):
    return apply(SQUEEZE, (x,), {"axis": axis_param(x, axis, "squeeze")})


FLIP = def_linear(Op("flip", view=True, unview=lambda o, base, value, index, axis=None: o.flip(value, axis=axis)))  # its own adjoint


@public
def flip(x, /, *, axis=None):
    return apply(FLIP, (x,), {"axis": axis_param(x, axis, "flip")})


def _negate(shift: Any) -> Any:
    return tuple(-s for s in shift) if isinstance(shift, tuple) else -shift


ROLL = defvjp(Op("roll"),
              lambda o, g, ans, x, shift, axis=None: o.roll(g, _negate(shift), axis=axis))


@public
def roll(x, /, shift, *, axis=None):
    return apply(ROLL, (x,), {"shift": tuple(shift) if isinstance(shift, list) else shift,
                              "axis": tuple(axis) if isinstance(axis, list) else axis})  # (repeats add up, as numpy's)


def _tile_vjp(o: Any, g: Any, ans: Any, x: Any, repetitions: tuple) -> Any:
    """Each output axis is (repetition, original) in row-major order: sum the repetitions."""
    shape = tuple(x.shape)
    d = builtins.max(len(shape), len(repetitions))
    s = (1,) * (d - len(shape)) + shape
    r = (1,) * (d - len(repetitions)) + tuple(repetitions)
    split = tuple(n for pair in zip(r, s) for n in pair)
    return o.reshape(o.sum(o.reshape(g, split), axis=tuple(range(0, 2 * d, 2))), shape)


def _repeat_kernel(xp: Any, x: Any, repeats: Any, axis: Any = None) -> Any:
    if is_array(repeats):
        require_data_dependent_shapes(x, "repeat with an array of repeats")
    return xp.repeat(x, repeats, axis=axis)


def _repeat_vjp(o: Any, g: Any, ans: Any, x: Any, repeats: Any, axis: Any = None) -> Any:
    """Sum the copies of each element: a reshape for a constant count, else a scatter-add
    to the source index of each output element (``repeat(arange(n), repeats)``)."""
    shape = tuple(x.shape)
    src = (math.prod(shape),) if axis is None else shape
    ax = 0 if axis is None else axis % len(shape)
    if isinstance(repeats, int):
        split = src[:ax] + (src[ax], repeats) + src[ax + 1:]
        gx = o.sum(o.reshape(g, split), axis=ax + 1)
    else:
        reps = repeats if tuple(repeats.shape) == (src[ax],) else o.broadcast_to(repeats, (src[ax],))
        source = o.repeat(o.cumulative_sum(o.ones_like(reps), axis=0) - 1, reps)
        gx = o.take_grad(g, source, ax, src)
    return o.reshape(gx, shape) if axis is None else gx


TILE = defvjp(Op("tile", lambda xp, x, repetitions: xp.tile(x, repetitions), shapes=True),  # repetitions: positional-only
              _tile_vjp)


@public
def tile(x, repetitions, /):
    return apply(TILE, (x,), {"repetitions": tuple(repetitions)})


REPEAT = defvjp(Op("repeat", _repeat_kernel, shapes=True, value_shapes=lambda x, repeats: not isinstance(repeats, int),
                   shape_args=slice(1, None)),
                _repeat_vjp, None, saves="y")


@public
def repeat(x, repeats, /, *, axis=None):
    return apply(REPEAT, (x, repeats), {"axis": axis})


# ---------------------------------------------------------------------------
# Sequences of arrays: concat and stack take several inputs, unstack gives several outputs
# ---------------------------------------------------------------------------
def _concat_vjp(i: int, o: Any, g: Any, ans: Any, *arrays: Any, axis: Any = 0) -> Any:
    """Input ``i``'s slice of g (of the flattened g if axis is None)."""
    a = arrays[i]
    if axis is None:
        start = builtins.sum(math.prod(b.shape) for b in arrays[:i])
        return cast_grad(o, o.reshape(o.getitem(g, slice(start, start + math.prod(a.shape))), tuple(a.shape)), a)
    ax = axis % a.ndim
    start = builtins.sum(b.shape[ax] for b in arrays[:i])
    return cast_grad(o, o.getitem(g, _along(ax, slice(start, start + a.shape[ax]), a.ndim)), a)


def _stack_vjp(i: int, o: Any, g: Any, ans: Any, *arrays: Any, axis: int = 0) -> Any:
    ax = axis % g.ndim
    return cast_grad(o, o.getitem(g, _along(ax, i, g.ndim)), arrays[i])


def _unstack_vjp(o: Any, g: tuple, ans: Any, x: Any, axis: int = 0) -> Any:
    """Stack the outputs' gradients back (zeros for outputs that got none)."""
    some = next(gk for gk in g if gk is not None)
    return o.stack([gk if gk is not None else o.zeros_like(some) for gk in g], axis=axis)


CONCAT = defvjp_each(Op("concat", lambda xp, *arrays, axis=0: xp.concat(_as_sequence(arrays), axis=axis), shapes=True), _concat_vjp)


@public
def concat(arrays, /, *, axis=0):
    return apply(CONCAT, tuple(arrays), {"axis": axis})


STACK = defvjp_each(Op("stack", lambda xp, *arrays, axis=0: xp.stack(_as_sequence(arrays), axis=axis), shapes=True), _stack_vjp)


@public
def stack(arrays, /, *, axis=0):
    return apply(STACK, tuple(arrays), {"axis": axis})


UNSTACK = defvjp(Op("unstack", lambda xp, x, axis=0: tuple(xp.unstack(x, axis=axis)), multi=True, view=True,
                    unview=lambda o, base, value, index, axis=0:
                    o.setitem(base, _along(axis % base.ndim, index, base.ndim), value)), _unstack_vjp)


@public
def unstack(x, /, *, axis=0):
    return apply(UNSTACK, (x,), {"axis": axis})


# ---------------------------------------------------------------------------
# Indexing: x[key] and its adjoint (a scatter-add into zeros)
# ---------------------------------------------------------------------------
def _is_bool_array(xp: Any, k: Any) -> bool:
    return is_array(k) and xp.isdtype(k.dtype, "bool")


def _none_axes(keys: tuple, ndim: int) -> tuple:
    """The axes of ``x[keys]`` that the ``None`` entries of a basic key insert (``x`` of ``ndim`` axes)."""
    def consumes(k: Any) -> bool:  # an axis of x (bools, like None, only add one)
        return isinstance(k, slice) or (isinstance(k, int) and not isinstance(k, bool))

    out, pos = [], 0
    for k in keys:
        if k is None:
            out.append(pos)
        if k is Ellipsis:
            pos += ndim - builtins.sum(1 for k in keys if consumes(k))
        elif not (isinstance(k, int) and not isinstance(k, bool)):
            pos += 1
    return tuple(out)


def _getitem_grad_kernel(xp: Any, g: Any, key: Any, shape: tuple, base: Any = None) -> Any:
    """Zeros of ``shape`` with ``g`` added at ``[key]`` (repeated indices summed); ``base``: the
    value of the zeros, where not 0 (setitem's -0.0).

    Basic keys (integers, slices, ``...``, None) write ``g`` in place. Keys with
    arrays go through the backend's scatter-add; boolean masks first become their
    ``nonzero`` integer arrays (eager backends only) and integers become 0-d
    arrays, so that the standard-only scatter-add, which takes integer arrays on
    leading axes, handles every key array_api_strict accepts. A key the scatter-add
    cannot take is applied to the flat positions ``arange(size)`` instead, which
    tells where each element of ``g`` lands.
    """
    backend = backend_of_type(type(g))
    shape = tuple(shape)
    keys = key if isinstance(key, tuple) else (key,)
    z = xp.zeros(shape, dtype=g.dtype) if base is None else xp.full(shape, base, dtype=g.dtype)
    if builtins.all(k is None or k is Ellipsis or isinstance(k, (int, slice)) for k in keys):
        if builtins.any(k is None for k in keys):
            # `None` only inserts length-1 axes: drop it from the key and its axes from g (by position: the
            # backend's own indexing may size a slice differently, dask's negative steps starting past the axis).
            g = xp.squeeze(g, axis=_none_axes(keys, len(shape)))
            keys = tuple(k for k in keys if k is not None)
        if not backend.inplace:
            return backend.scatter_add(z, keys, g)
        z[keys] = g
        return z
    if builtins.any(_is_bool_array(xp, k) for k in keys):
        require_data_dependent_shapes(g, "getitem with a boolean mask (its backward)")
        if len(keys) == 1 and keys[0].ndim == 0:  # x[True] adds a length-1 axis, x[False] a length-0 one
            return xp.sum(g, axis=0)
        expanded = []
        for k in keys:
            if _is_bool_array(xp, k) and k.ndim > 0:
                expanded.extend(xp.nonzero(k))
            else:
                expanded.append(k)
        keys = tuple(expanded)
    if builtins.all(isinstance(k, int) or (is_array(k) and not _is_bool_array(xp, k)) for k in keys):
        keys = tuple(xp.asarray(k, dtype=index_dtype(xp)) if isinstance(k, int) else k for k in keys)
    try:
        return backend.scatter_add(z, keys, g)
    except NotImplementedError:
        size = math.prod(shape)
        where = xp.reshape(xp.reshape(xp.arange(size, dtype=index_dtype(xp)), shape)[key], (-1,))
        flat = backend.scatter_add(xp.zeros((size,), dtype=g.dtype), (where,), xp.reshape(g, (-1,)))
        return xp.reshape(flat, shape)


class KeyArg(NamedTuple):
    """In the key of :func:`getitem_at`: the place of its ``k``-th index array input."""

    k: int


def _split_key(key: Any) -> tuple[Any, tuple]:
    """``(template, variables)``: ``key`` with each Variable in it, an index array or the bound
    of a slice (``data[i * bs:(i + 1) * bs]`` with a symbolic ``i``), replaced by a :class:`KeyArg`.
    A bound given as a Variable of a concrete array is a number: an eager ``h[a:b]`` is the
    view ``h[1:3]`` is; only a symbolic bound is read at each call. Without variables the
    template is the key to use (its bounds read), never the key given."""
    parts = key if isinstance(key, tuple) else (key,)
    for k in parts:  # (_holds_variable, inline: every getitem passes here)
        if isinstance(k, Variable) or (type(k) is slice and (
                isinstance(k.start, Variable) or isinstance(k.stop, Variable) or isinstance(k.step, Variable))):
            break
    else:
        return key, ()  # the usual key: nothing to place
    parts = tuple(_known_bounds(k) if type(k) is slice else k for k in parts)
    key = parts if isinstance(key, tuple) else parts[0]
    if not any(_holds_variable(k) for k in parts):
        return key, ()
    variables: list = []

    def place(k: Any) -> Any:
        if isinstance(k, Variable):
            variables.append(k)
            return KeyArg(len(variables) - 1)
        return _unwrap_key_part(k)

    template = tuple(slice(place(k.start), place(k.stop), place(k.step)) if isinstance(k, slice) else place(k)
                     for k in parts)
    return (template if isinstance(key, tuple) else template[0]), tuple(variables)


def _holds_variable(k: Any) -> bool:
    """Whether the key part ``k`` is a Variable or a slice with a Variable bound."""
    return isinstance(k, Variable) or (type(k) is slice and (
        isinstance(k.start, Variable) or isinstance(k.stop, Variable) or isinstance(k.step, Variable)))


def _known_bounds(k: slice) -> slice:
    """The slice with each bound given as a Variable of a concrete array as an int."""
    def known(b: Any) -> Any:
        return _bound(b._data) if isinstance(b, Variable) and has_namespace(b._data) else b
    return slice(known(k.start), known(k.stop), known(k.step))


def _has_bounds(template: Any) -> bool:
    """Whether a slice of ``template`` has a bound read from an input (its shape then depends on
    the values, and the slice is taken as a copy: the row is not a view)."""
    parts = template if isinstance(template, tuple) and not isinstance(template, KeyArg) else (template,)
    return any(isinstance(k, slice) and any(isinstance(b, KeyArg) for b in (k.start, k.stop, k.step)) for k in parts)


def _fill_key(template: Any, arrays: tuple) -> Any:
    """The key of :func:`getitem_at` with its index arrays, and its slices' bounds, in their places."""
    def fill(t: Any) -> Any:
        if isinstance(t, KeyArg):
            return arrays[t.k]
        if isinstance(t, slice):
            return slice(*(_bound(arrays[b.k]) if isinstance(b, KeyArg) else b for b in (t.start, t.stop, t.step)))
        return t

    if isinstance(template, tuple) and not isinstance(template, KeyArg):  # (a KeyArg is a tuple too)
        return tuple(fill(t) for t in template)
    return fill(template)


def _bound(a: Any) -> int:
    """A slice bound given as a 0-d integer array, as a Python int."""
    xp = backend_of_type(type(a)).xp
    if a.ndim != 0 or not xp.isdtype(a.dtype, "integral"):
        raise TypeError(f"polygrad: a slice bound must be an integer scalar, got an array of shape "
                        f"{tuple(a.shape)} and dtype {a.dtype}")
    return int(a)


def _unwrap_key(key: Any) -> Any:
    """The key as the kernels take it: Variables become their arrays, and integer scalars of
    other types (``numpy.int64(1)``) Python ints. numpy indexes with those by a view, as with an
    int, so they must be seen as basic keys (an in-place write through ``h[np.int64(0)]``
    reached h's memory behind its graph's back, with a wrong gradient and no version error)."""
    if isinstance(key, tuple):
        return tuple(_unwrap_key_part(k) for k in key)
    return _unwrap_key_part(key)


def _unwrap_key_part(k: Any) -> Any:
    if isinstance(k, Variable):
        return k._data
    if isinstance(k, numbers.Integral) and not isinstance(k, (int, bool)):
        return operator.index(k)
    return k


def _is_basic(key: Any) -> bool:
    """Whether ``key`` takes a view (integers, slices, ``...``, None) rather than a copy (index arrays, masks)."""
    keys = key if isinstance(key, tuple) else (key,)
    return all(k is None or k is Ellipsis or isinstance(k, slice) or (isinstance(k, int) and not isinstance(k, bool))
               for k in keys)


# A view for a basic key only: an index array or a mask makes a copy (numpy's and PyTorch's
# rule), which a later write into x leaves as it is.
GETITEM = defvjp(Op("getitem", lambda xp, x, key: x[key], shapes=True, view=lambda key: _is_basic(key),
                    unview=lambda o, base, value, index, key: o.setitem(base, key, value)),
                 lambda o, g, ans, x, key: o.getitem_grad(g, key, tuple(x.shape)))


@public(standard=False)
def getitem(x, key):
    """``x[key]``, differentiable: integers, slices, ``...``, None, integer arrays and boolean masks.

    Index arrays given as Variables are inputs of the node (:func:`getitem_at`): a compiled
    function reads them at each call, and an in-place change before backward is refused;
    raw index arrays are parameters, kept as they are."""
    template, arrays = _split_key(key)  # (without arrays: the key, its eager Variable bounds read)
    if arrays:
        return getitem_at(x, *arrays, key=template)
    return apply(GETITEM, (x,), {"key": _unwrap_key(template)})


def _is_bool(v: Any) -> bool:
    """Whether ``v`` (a Variable or an array) holds booleans (a symbolic array names its dtype)."""
    data = v._data if isinstance(v, Variable) else v
    if not has_namespace(data):
        return data.dtype == "bool"
    return backend_of_type(type(data)).xp.isdtype(data.dtype, "bool")


GETITEM_GRAD = defvjp(Op("getitem_grad", _getitem_grad_kernel),
                      lambda o, g, ans, gy, key, shape: o.getitem(g, key))


@public(standard=False)
def getitem_grad(g, key, shape):
    """Zeros of ``shape`` with ``g`` scattered (added) at ``[key]``: the vjp of getitem."""
    return apply(GETITEM_GRAD, (g,), {"key": _unwrap_key(key), "shape": tuple(shape)})


def _getitem_at_kernel(xp: Any, x: Any, *arrays: Any, key: Any) -> Any:
    out = GETITEM.kernel(backend_of_type(type(x)))(x, key=_fill_key(key, arrays))
    return xp.asarray(out, copy=True) if _has_bounds(key) else out  # a slice is a view: this row is none


def _getitem_grad_at_kernel(xp: Any, g: Any, *arrays: Any, key: Any, shape: tuple) -> Any:
    return GETITEM_GRAD.kernel(backend_of_type(type(g)))(g, key=_fill_key(key, arrays), shape=shape)


# getitem with index arrays as inputs (given as Variables): the same kernels as getitem and
# getitem_grad (a backend's own among them), with the arrays read from the inputs. No gradient
# for the index arrays; each rule reads them, and x's shape.
GETITEM_AT = defvjp(Op("getitem_at", _getitem_at_kernel, shapes=True),
                    lambda o, g, ans, x, *arrays, key: o.getitem_grad_at(g, *arrays, key=key, shape=tuple(x.shape)))
# The same with a boolean mask among the arrays, or a slice bound: the result's shape depends on
# their values.
GETITEM_MASK_AT = defvjp(Op("getitem_mask_at", _getitem_at_kernel, shapes=True, value_shapes=True,
                            shape_args=slice(1, None)), *GETITEM_AT.vjps)
GETITEM_GRAD_AT = defvjp(Op("getitem_grad_at", _getitem_grad_at_kernel),
                         lambda o, g, ans, gy, *arrays, key, shape: o.getitem_at(g, *arrays, key=key))
for _row in (GETITEM_AT, GETITEM_MASK_AT, GETITEM_GRAD_AT):
    _row.keep = _row.keep_always = frozenset(range(1, 33))  # the index arrays (inputs 1, 2, ...)
    _row.frees = True


@public(standard=False)
def getitem_at(x, *arrays, key):
    """``x[key]`` where ``key`` holds :class:`KeyArg` places filled by ``arrays`` (see :func:`getitem`)."""
    shaped = _has_bounds(key) or any(_is_bool(a) for a in arrays)
    return apply(GETITEM_MASK_AT if shaped else GETITEM_AT, (x, *arrays), {"key": key})


@public(standard=False)
def getitem_grad_at(g, *arrays, key, shape):
    """:func:`getitem_grad` with the index arrays as inputs: the vjp of :func:`getitem_at`."""
    return apply(GETITEM_GRAD_AT, (g, *arrays), {"key": key, "shape": tuple(shape)})


def _setitem_kernel(xp: Any, x: Any, v: Any, key: Any) -> Any:
    """A copy of ``x`` with ``v`` at ``[key]``: written into the copy where arrays take writes,
    else built (see :func:`_built_setitem`): no array of a backend declared ``inplace=False`` is
    ever written."""
    backend = backend_of_type(type(x))
    if backend.inplace:
        out = xp.asarray(x, copy=True)
        try:
            if is_array(v) and v.ndim and v.shape[0] == 1 and v.ndim > out[key].ndim:
                _refuse_value_shape(v, out[key], x)
            out[key] = v
            return out
        except (IndexError, NotImplementedError):
            if _is_basic(key):
                raise
            # the standard specifies item assignment by index arrays nowhere (array_api_strict
            # refuses it): built as on an immutable backend
    mask = _leading_mask(xp, key, tuple(x.shape))
    if mask is not None and (not is_array(v) or v.ndim == 0):  # x[x < 0] = 0: no sizes needed (dask knows none)
        return xp.where(mask, xp.astype(v, x.dtype) if is_array(v) else xp.asarray(v, dtype=x.dtype), x)
    if _is_basic(key):  # no position written twice: v scattered into zeros, chosen where the key reaches
        part = GETITEM.kernel(backend)(x, key=key)
        shape = tuple(x.shape)
        v = xp.broadcast_to(xp.astype(v, x.dtype), tuple(part.shape)) if is_array(v) else xp.full(
            tuple(part.shape), v, dtype=x.dtype)
        written = _getitem_grad_kernel(xp, xp.ones_like(part), key, shape) != xp.zeros(shape, dtype=x.dtype)
        # added into -0.0, IEEE's additive identity: into 0.0 a written -0.0 became +0.0 (1 / x gave +inf)
        identity = (complex(-0.0, -0.0) if xp.isdtype(x.dtype, "complex floating") else
                    -0.0 if xp.isdtype(x.dtype, "real floating") else None)
        return xp.where(written, _getitem_grad_kernel(xp, v, key, shape, base=identity), x)
    return _built_setitem(xp, backend, x, v, key)


def _refuse_value_shape(v: Any, part: Any, x: Any) -> None:
    """The standard broadcasts x[key] = v's value to ``x[key]``'s shape, which never drops axes;
    numpy drops a value's leading axes of length 1 (v of shape (1, 1, 4) into a (2, 4) part), and
    v's gradient, summed to that shape from the part's, then failed in backward: refused here."""
    raise ValueError(f"polygrad: setitem (x[key] = value): a value of shape {tuple(v.shape)} does not broadcast to "
                     f"x[key]'s shape {tuple(part.shape)} (x of shape {tuple(x.shape)}, dtype {x.dtype}): it has more "
                     f"axes; drop its leading axes of length 1 first (reshape)")


def _built_setitem(xp: Any, backend: Any, x: Any, v: Any, key: Any) -> Any:
    """``x`` with ``v`` at ``[key]`` for a key with index arrays or masks, built without writing
    into any array: each written element's flat position is ``arange(size)[key]``; where a
    position is written more than once the last write (in the order of ``x[key]``'s elements)
    wins, as in numpy; the value is taken, never computed, so it is exact in every dtype (it was
    the mean of the repeated writes: 1.5 for 1 and 2, and not even that for three equal floats)."""
    shape = tuple(x.shape)
    if any(n is None or n != n for n in shape):
        raise ValueError(
            f"polygrad: x[key] = value on {backend.name!r}, whose arrays take no writes, builds a new array "
            f"of x's shape {shape}, whose sizes are not computed yet; compute them first "
            f"(x.compute_chunk_sizes() on dask)")
    size = math.prod(shape)
    itype = index_dtype(xp)
    getitem = GETITEM.kernel(backend)  # (a backend's own: dask's takes several index arrays)
    where = getitem(xp.reshape(xp.arange(size, dtype=itype), shape), key=key)
    if any(n is None or n != n for n in where.shape):  # a mask on a lazy backend: how many it writes is unknown
        how = ("with a boolean mask and an array of values (only one value, written as a where, needs no sizes)"
               if _leading_mask(xp, key, shape) is not None else
               "with a boolean mask that is not one over x's leading axes")
        raise ValueError(
            f"polygrad: x[key] = value on {backend.name!r}, whose arrays take no writes, {how}: the number of "
            f"positions written is not known before computing; write pg.where(mask, value, x) with the mask and "
            f"the values shaped to broadcast against x {shape}, or compute the mask first")
    where = xp.reshape(where, (-1,))
    n = where.shape[0]
    if n == 0:
        return x
    if is_array(v):
        values = xp.reshape(xp.broadcast_to(xp.astype(v, x.dtype), tuple(getitem(x, key=key).shape)), (-1,))
    else:
        values = xp.full((n,), v, dtype=x.dtype)
    # Sorted stably, the writes to one position stay in order: the last of each run wins. Its
    # number plus one is scattered to its position (the other writes add 0), so 0 means unwritten.
    order = xp.argsort(where, stable=True)
    positions = xp.take(where, order)
    last = xp.concat([positions[1:] != positions[:-1], xp.ones((1,), dtype=xp.bool)])
    winners = backend.scatter_add(xp.zeros((size,), dtype=itype), (positions,),
                                  xp.where(last, order + 1, xp.zeros_like(order)))
    written = winners != xp.zeros_like(winners)
    taken = xp.take(values, xp.where(written, winners - 1, xp.zeros_like(winners)))
    return xp.where(xp.reshape(written, shape), xp.reshape(taken, shape), x)


def _leading_mask(xp: Any, key: Any, shape: tuple) -> Any:
    """For a key that is one boolean array over leading axes of ``shape`` (``x[x < 0]``, a mask
    of rows): that mask, shaped to broadcast against ``shape``; else None."""
    k = key[0] if isinstance(key, tuple) and len(key) == 1 else key
    if not is_array(k) or not xp.isdtype(k.dtype, "bool") or k.ndim == 0 or k.ndim > len(shape) or (
            not _same_shape(tuple(k.shape), shape[:k.ndim])):
        return None
    if k.ndim == len(shape):
        return k
    if any(n is None or n != n for n in k.shape):
        return None  # (a mask of unknown size over leading axes cannot be reshaped to broadcast)
    return xp.reshape(k, tuple(k.shape) + (1,) * (len(shape) - k.ndim))


def _masked_value_grad(o: Any, g: Any, v: Any, key: Any) -> Any:
    """The gradient of one value ``v`` written where a mask of leading axes holds (``x[x < 0] =
    v``): the sum of ``g`` there, with no sizes (dask knows none). None for other keys."""
    if tuple(v.shape) != ():
        return None
    data = g._data if isinstance(g, Variable) else g
    xp = backend_of_type(type(data)).xp
    raw = tuple(k._data if isinstance(k, Variable) else k for k in key) if isinstance(key, tuple) else (
        key._data if isinstance(key, Variable) else key)
    mask = _leading_mask(xp, raw, tuple(data.shape))
    return None if mask is None else o.sum(o.where(mask, g, 0.0))


def _setitem_value_vjp(o: Any, g: Any, ans: Any, x: Any, v: Any, key: Any) -> Any:
    masked = _masked_value_grad(o, g, v, key)
    if masked is not None:
        return masked
    # An index array may write a position twice: the row of setitem_at's values checks it in its
    # kernel, so the check runs on every path (lazily on dask, under create_graph too).
    part = o.getitem(g, key) if _is_basic(key) else o.setitem_value_grad_at(g, key=key)
    return o.sum_to(part, tuple(v.shape))


SETITEM = defvjp(Op("setitem", _setitem_kernel, shapes=True, casts=True),  # (into an integer x: no gradient)
                 lambda o, g, ans, x, v, key: o.where(_untouched_mask(g, key), g, 0.0),
                 _setitem_value_vjp)


@public(standard=False)
def setitem(x, key, value):
    """A copy of ``x`` with ``x[key] = value``, differentiable in both.

    Index arrays given as Variables are inputs of the node (:func:`setitem_at`), as
    for :func:`getitem`: a compiled function reads them at each call."""
    _check_value_fits(x, value)
    template, arrays = _split_key(key)
    if arrays:
        return apply(SETITEM_AT, (x, value, *arrays), {"key": template})
    return apply(SETITEM, (x, value), {"key": _unwrap_key(template)})


_KINDS = ("bool", "integral", "real floating", "complex floating")


def _kind(xp: Any, dtype: Any) -> int:
    return next((i for i, k in enumerate(_KINDS) if xp.isdtype(dtype, k)), len(_KINDS))


def _value_fits(xp: Any, value: Any, dtype: Any) -> bool:
    """Whether the standard lets ``value`` (a Python number or an array's dtype) be written into
    an array of ``dtype`` (it promotes to ``dtype``): no wider kind (a float into an integer
    array, a complex into a real one), and within a kind the standard's ``can_cast`` (not int16
    or uint8 into int8, not float64 into float32)."""
    if isinstance(value, int) and not isinstance(value, bool) and xp.isdtype(dtype, "bool"):
        return False  # (numpy wrote 5 as True; the standard has no int for a bool array)
    if isinstance(value, (bool, int, complex)):  # (ints out of range, complex into real: check_number_fits)
        return True
    if isinstance(value, float):
        return xp.isdtype(dtype, ("real floating", "complex floating"))
    src, dst = _kind(xp, value), _kind(xp, dtype)
    if src != dst:
        return src < dst  # bools into numbers, ints into floats (numpy's); no wider kind
    return bool(xp.can_cast(value, dtype))


def _check_value_fits(x: Any, value: Any) -> None:
    """``x[key] = value`` refuses what the standard does not let it write, on every backend
    (numpy and dask cast silently: 2.7 into int8 wrote 2, an int16 300 wrote 44, a float64 1e40
    into float32 wrote inf): a value whose dtype does not promote to x's (:func:`_value_fits`),
    and :func:`~polygrad.ops._dtypes.check_number_fits` of a Python number."""
    data = x._data if isinstance(x, Variable) else x
    if not has_namespace(data):
        return
    backend = backend_of_type(type(data))
    xp = backend.xp
    v = value._data if isinstance(value, Variable) else value
    # Only Python's own numbers are weak. A NumPy scalar (the 0-d result of a reduction; np.float64 is
    # a float, np.complex128 a complex) is an array with a dtype: a complex128 one lost its imaginary
    # part into float32, a float64 1e40 wrote inf. Arrays of another backend: apply's message.
    if type(v) in SCALARS:
        if type(v) in (int, complex):
            check_number_fits(xp, data.dtype, v, "x[key] = value")
        of, fits = type(v).__name__, _value_fits(xp, v, data.dtype)
    elif has_namespace(v) and not isinstance(v.dtype, str) and backend_of_type(type(v)) is backend:
        of, fits = f"dtype {v.dtype}", _value_fits(xp, v.dtype, data.dtype)
    else:
        return
    if not fits:
        raise TypeError(f"polygrad: setitem (x[key] = value): a value of {of} cannot be written into x of dtype "
                        f"{data.dtype} and shape {tuple(data.shape)}: the standard writes only values whose dtype "
                        f"promotes to x's (cast it first: astype(value, x.dtype))")


def _setitem_at_kernel(xp: Any, x: Any, v: Any, *arrays: Any, key: Any) -> Any:
    return SETITEM.kernel(backend_of_type(type(x)))(x, v, key=_fill_key(key, arrays))


def _setitem_value_grad_at_kernel(xp: Any, g: Any, *arrays: Any, key: Any) -> Any:
    """``g[key]``, refused where the key writes a position twice (read at every call: the
    index arrays are inputs)."""
    key = _fill_key(key, arrays)
    g = _refuse_repeated_positions(g, key)
    return GETITEM.kernel(backend_of_type(type(g)))(g, key=key)


# setitem with index arrays as inputs (given as Variables). x's gradient is g with zeros where
# the key writes; the values' gradient is g at the key, checked for repeated positions by a row
# of its own (setitem's too, for raw index arrays), so that the check runs in its kernel: at
# every call of a compiled function, and on a lazy backend when computed, also under create_graph.
def _setitem_at_value_vjp(o: Any, g: Any, ans: Any, x: Any, v: Any, *arrays: Any, key: Any) -> Any:
    masked = _masked_value_grad(o, g, v, _fill_key(key, arrays))
    if masked is None:
        masked = o.sum_to(o.setitem_value_grad_at(g, *arrays, key=key), tuple(v.shape))
    return cast_grad(o, masked, v)


SETITEM_AT = defvjp(Op("setitem_at", _setitem_at_kernel, shapes=True, casts=True),
                    lambda o, g, ans, x, v, *arrays, key: o.setitem_at(g, 0.0, *arrays, key=key),
                    _setitem_at_value_vjp)
SETITEM_VALUE_GRAD_AT = defvjp(Op("setitem_value_grad_at", _setitem_value_grad_at_kernel, shapes=True),
                               lambda o, gg, ans, g, *arrays, key: o.getitem_grad_at(gg, *arrays, key=key,
                                                                                     shape=tuple(g.shape)))
SETITEM_AT.keep = SETITEM_AT.keep_always = frozenset(range(2, 34))  # the index arrays (inputs 2, 3, ...)
SETITEM_VALUE_GRAD_AT.keep = SETITEM_VALUE_GRAD_AT.keep_always = frozenset(range(1, 33))
SETITEM_AT.frees = SETITEM_VALUE_GRAD_AT.frees = True


@public(standard=False)
def setitem_at(x, value, *arrays, key):
    """:func:`setitem` with the index arrays as inputs (``key`` holds a :class:`KeyArg` in
    the place of each)."""
    return apply(SETITEM_AT, (x, value, *arrays), {"key": key})


@public(standard=False)
def setitem_value_grad_at(g, *arrays, key):
    """``g[key]`` for the values of :func:`setitem_at`: a ValueError where the key writes a
    position twice (which value it keeps is the backend's choice)."""
    return apply(SETITEM_VALUE_GRAD_AT, (g, *arrays), {"key": key})


def _hits(g: Any, key: Any) -> Any:
    """How many times ``x[key] = v`` writes each position of an array shaped like ``g``, counted
    in the default real floating dtype, whatever g's (the standard compares no complex numbers:
    ``hits > 1``)."""
    data = g._data if isinstance(g, Variable) else g
    backend = backend_of_type(type(data))
    xp = backend.xp
    real = default_dtypes(xp)["real floating"]
    mask = _leading_mask(xp, key, tuple(data.shape))
    if mask is not None:
        return xp.astype(xp.broadcast_to(mask, tuple(data.shape)), real)
    part = GETITEM.kernel(backend)(data, key=key)
    return _getitem_grad_kernel(xp, xp.ones_like(part, dtype=real), key, tuple(data.shape))


def _untouched_mask(g: Any, key: Any) -> Any:
    return _hits(g, key) == 0


_REPEATED_POSITIONS = (
    "polygrad: setitem (x[key] = v) wrote some positions of x more than once (repeated indices), so which "
    "value each keeps is up to the backend (numpy keeps the last, cupy any) and v has no gradient there; use "
    "indices without repeats, or "
    "compute v's contribution with a scatter-add (the gradient of take)")


def _refuse_repeated_positions(g: Any, key: Any) -> Any:
    """A ValueError where an index array of ``key`` writes one position twice: which value the
    position keeps is the backend's choice (numpy and polygrad's own item assignment on backends
    without writes keep the last, cupy an arbitrary one), so the values' gradient is not defined
    on every backend. Returns the gradient to
    compute with: ``g``, checked now where the counts may be read
    (:func:`~polygrad.core.dispatch.readable`); on a lazy backend outside debug mode, an
    array of g's values that is computed after the check (``polygrad_check_lazily``)."""
    counts = _hits(g, key)
    hits, xp = readable(counts)
    if hits is not None:
        if bool(xp.any(hits > 1)):
            raise ValueError(_REPEATED_POSITIONS)
        return g
    checked = checked_lazily(counts, _refuse_repeats)
    if checked is counts:
        return g
    xp = backend_of_type(type(g)).xp
    return xp.where(checked > 1, g, g)  # g's values, computed once the counts are checked


def _refuse_repeats(chunk: Any) -> None:
    if bool(backend_of_type(type(chunk)).xp.any(chunk > 1)):
        raise ValueError(_REPEATED_POSITIONS)


def broadcast_shapes(*shapes: tuple) -> tuple:
    """The standard's ``broadcast_shapes``: the shape the arrays of ``shapes`` broadcast to
    (a dimension may be None, unknown, where the other is 1 or None). Plain Python, so
    every backend has it."""
    return _broadcast_shapes(shapes, "broadcast_shapes")


def _broadcast_shapes(shapes: tuple, fn: str) -> tuple:
    """:func:`broadcast_shapes`, its error naming ``fn``, the function the user called."""
    ndim = builtins.max((len(s) for s in shapes), default=0)
    out: list = []
    for k in range(-ndim, 0):
        dim: Any = 1
        for shape in shapes:
            n = shape[k] if len(shape) >= -k else 1
            if n == 1 or n == dim:
                continue
            if dim == 1:
                dim = n
            elif n is None or dim is None:
                dim = None
            else:
                raise ValueError(f"polygrad.{fn}: shapes {', '.join(str(tuple(s)) for s in shapes)} "
                                 f"do not broadcast (dimension {k}: {dim} and {n})")
        out.append(dim)
    return tuple(out)


def known_target(shape: tuple, fn: str, shapes: tuple) -> tuple:
    """``shape``, the shape ``fn`` broadcasts to: a ValueError at once where a size is unknown
    (None: a symbolic length not declared), since ``broadcast_to`` needs every size (the
    compiled function failed at its first call inside the backend, or called an input unused)."""
    if any(n is None for n in shape):
        raise ValueError(
            f"polygrad.{fn}: the arrays of shapes {', '.join(str(tuple(s)) for s in shapes)} broadcast to "
            f"{tuple(shape)}, with a size unknown until the function runs, and broadcasting to a shape needs every "
            f"size. Declare the sizes (T.tensor(dtype, shape)), or combine the arrays with an element-wise "
            f"operation, which broadcasts them itself")
    return shape


@public
def broadcast_arrays(*arrays):
    """Composed: ``broadcast_to`` each array to the common shape."""
    shapes = tuple(tuple(a.shape) for a in arrays)
    shape = known_target(_broadcast_shapes(shapes, "broadcast_arrays"), "broadcast_arrays", shapes)
    return tuple(broadcast_to(a, shape) for a in arrays)


@public
def moveaxis(x, source, destination, /):
    """Composed: the permutation that moves ``source`` axes to ``destination``."""
    ndim = x.ndim
    src = _normalize_axes(source, ndim, "moveaxis")
    dst = _normalize_axes(destination, ndim, "moveaxis")
    if len(src) != len(dst):
        raise ValueError(f"polygrad: moveaxis: source {source!r} and destination {destination!r} differ in length")
    order = [a for a in range(ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute_dims(x, tuple(order))


__all__ = names(__name__)  # the public functions declared above

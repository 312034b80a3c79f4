"""polygrad backend plugin for Dask arrays: chunked, lazy, and distributed
through dask.distributed.

Thin bindings: the namespace is ``array_api_compat.dask.array`` (with the
few functions dask lacks or gets wrong filled in: ``polygrad_dask.namespace``); dask is
imported inside the hooks only, so registering this plugin imports nothing
heavy. Variables hold dask arrays; forward and backward only build task
graphs, and nothing is computed until ``pg.compute(loss, *grads)`` (one
``dask.compute`` for all of them) or ``pg.persist``.

What the standard lacks, done lazily and chunk by chunk:

* random numbers: ``dask.array.random.default_rng(seed)``; each chunk draws
  from its own stream spawned from the seed, so the same seed and chunks give
  the same numbers on any scheduler;
* scatter-add (indexing backward): one ``add.at`` task per (block of values,
  block of the output), summed per output block (see :func:`scatter_add`).

Sizes that depend on data (boolean-mask indexing) are unknown (``nan``) in
dask; the ops that need them raise an error naming the op instead of
computing. BackendInfo says ``data_dependent_shapes=False``.
"""

from __future__ import annotations

import collections
import importlib.util
import math
import string
import threading

from polygrad.hookspecs import BackendInfo, hookimpl

NAME = "dask"

__all__ = ["NAME", "getitem", "scatter_add", "UnknownShapeError"]


class UnknownShapeError(ValueError):
    """An op needs a size that dask only knows after computing (boolean masks)."""


# ---------------------------------------------------------------------------
# Discovery and loading
# ---------------------------------------------------------------------------


@hookimpl
def polygrad_backend_info():
    return BackendInfo(
        name=NAME, module="dask", device="cpu", lazy=True, inplace=False, data_dependent_shapes=False, priority=10
    )


@hookimpl
def polygrad_check_usable():
    # Cheap: look the libraries up without importing them.
    for mod, hint in (("dask", "pip install 'dask[array]'"), ("numpy", "pip install numpy"),
                      ("array_api_compat", "pip install array-api-compat")):
        if importlib.util.find_spec(mod) is None:
            return (False, f"{mod} is not installed ({hint})")
    return (True, "")


@hookimpl
def polygrad_array_namespace():
    from polygrad_dask import namespace

    return namespace


@hookimpl
def polygrad_array_types():
    import dask.array as da

    return (da.Array,)


# ---------------------------------------------------------------------------
# Random numbers
# ---------------------------------------------------------------------------


class _Generator:
    """Seeded random dask arrays; ``chunks`` (default ``"auto"``) as in dask. dask's generator draws
    float32 and float64 only: a narrower floating dtype (float16) is drawn in float32, scaled there
    and cast, chunk by chunk, as the numpy plugin draws it (NumPy's own TypeError named no polygrad
    function). A uniform draw rounded up to ``high`` by the cast is brought below it by the host."""

    def __init__(self, seed):
        import dask.array as da

        self._rng = da.random.default_rng(seed)
        # dask's generator spawns the chunks' seeds from shared state without a lock: two threads
        # drawing at once could get the same seeds, and identical draws.
        self._lock = threading.Lock()

    def __getstate__(self):
        return {"_rng": self._rng}

    def __setstate__(self, state):
        self._rng = state["_rng"]
        self._lock = threading.Lock()

    @staticmethod
    def _drawn_in(dtype):
        import numpy as np

        dt = np.dtype(dtype)
        return np.float32 if dt.kind == "f" and dt.itemsize < 4 else dt

    def normal(self, shape, *, dtype, mean=0.0, std=1.0, chunks="auto"):
        with self._lock:
            x = self._rng.standard_normal(size=tuple(shape), dtype=self._drawn_in(dtype), chunks=chunks)
        x = x * std + mean if (mean, std) != (0.0, 1.0) else x
        return x.astype(dtype, copy=False)

    def uniform(self, shape, *, dtype, low=0.0, high=1.0, chunks="auto"):
        with self._lock:
            x = self._rng.random(size=tuple(shape), dtype=self._drawn_in(dtype), chunks=chunks)
        x = x * (high - low) + low if (low, high) != (0.0, 1.0) else x
        return x.astype(dtype, copy=False)


@hookimpl
def polygrad_random_generator(seed):
    return _Generator(seed)


# ---------------------------------------------------------------------------
# Scatter-add, lazily
# ---------------------------------------------------------------------------


def _is_basic(key):
    return all(k is Ellipsis or isinstance(k, (int, slice)) for k in key)


def _add_at(out, index, values):
    """``out[index] += values`` with repeats summed, for numpy or cupy blocks: the block's
    library's ``add.at`` (cupyx.scatter_add before cupy 14)."""
    import importlib

    add_at = getattr(importlib.import_module(type(out).__module__.split(".")[0]).add, "at", None)
    if add_at is None:
        import cupyx

        add_at = cupyx.scatter_add
    add_at(out, index, values)


def _scatter_block(values, *parts):
    """One task: the values of one block of ``out[key]`` that land in one output
    block, added into zeros of that block's shape.

    ``parts`` are, per output axis, the block of coordinates (same shape as
    ``values``), then per axis a one-element array with the block's start, then
    one with its stop. Returns the block with ``values.ndim`` leading axes of 1.
    """
    import numpy as np

    n = len(parts) // 3
    coords, starts, stops = parts[:n], parts[n : 2 * n], parts[2 * n :]
    lo = [int(s[0]) for s in starts]
    shape = tuple(int(e[0]) - s for e, s in zip(stops, lo))
    out = np.zeros_like(values, shape=shape)
    inside = None
    for c, s, m in zip(coords, lo, shape):
        hit = (c >= s) & (c < s + m)
        inside = hit if inside is None else inside & hit
    if inside is not None and values.size:
        _add_at(out, tuple(c[inside] - s for c, s in zip(coords, lo)), values[inside])
    return out.reshape((1,) * values.ndim + shape)


def _scatter_sum(shape, chunks, key, values, meta):
    """Zeros of ``shape`` (with ``chunks``) with ``values`` added at ``[key]``.

    Dask's own indexing tells where each element of ``out[key]`` lands: the key
    is applied to one coordinate grid per axis (``broadcast_to(arange(n_d))``,
    no memory), so every key dask can index with is supported, with numpy's
    rules, and the coordinates come chunked like ``values``. Then one task per
    (values block, output block) adds what falls in that output block, and the
    partial blocks are summed (a tree reduction). Memory per task: one block of
    each.
    """
    import dask.array as da
    import numpy as np

    ndim = len(shape)
    grids = []
    for d, n in enumerate(shape):
        axis = da.arange(n, chunks=(chunks[d],))
        axis = da.reshape(axis, tuple(n if i == d else 1 for i in range(ndim)))
        # (in numpy's order, as the values are)
        grids.append(getitem(da.broadcast_to(axis, shape, chunks=chunks), key))
    where = grids[0]
    if tuple(values.shape) != tuple(where.shape):
        values = da.broadcast_to(values, where.shape)
    if values.chunks != where.chunks:
        values = values.rechunk(where.chunks)
    grids = [g if g.chunks == where.chunks else g.rechunk(where.chunks) for g in grids]

    e = values.ndim
    letters = string.ascii_letters
    vind, oind = letters[:e], letters[e : e + ndim]
    args = [values, vind]
    for g in grids:
        args += [g, vind]
    bounds = [np.cumsum((0,) + tuple(c)) for c in chunks]
    for d in range(ndim):
        args += [da.from_array(bounds[d][:-1], chunks=1), oind[d]]
    for d in range(ndim):
        args += [da.from_array(bounds[d][1:], chunks=1), oind[d]]
    adjust = {c: 1 for c in vind}
    adjust.update({oind[d]: tuple(chunks[d]) for d in range(ndim)})
    partial = da.blockwise(
        _scatter_block, vind + oind, *args, adjust_chunks=adjust, dtype=values.dtype,
        meta=meta.reshape((0,) * (e + ndim)), concatenate=True,
    )
    return partial.sum(axis=tuple(range(e)), dtype=values.dtype) if e else partial


def _is_index_array(k):
    return hasattr(k, "shape") and hasattr(k, "dtype") and not isinstance(k, (bool, int, slice))


# getitem's backward (getitem_grad) gets the key and the input's shape, not the
# input: to chunk the gradient like the input, forward remembers the chunks of
# the last few inputs by key identity (the node keeps the same key object).
_SOURCES: "collections.OrderedDict[tuple, tuple]" = collections.OrderedDict()
_SOURCES_MAX = 16
_sources_lock = threading.Lock()


def _remember(key, x):
    with _sources_lock:
        _SOURCES[(id(key), tuple(x.shape))] = (key, x.chunks)
        _SOURCES.move_to_end((id(key), tuple(x.shape)))
        while len(_SOURCES) > _SOURCES_MAX:
            _SOURCES.popitem(last=False)


def _source_chunks(key, shape):
    with _sources_lock:
        hit = _SOURCES.get((id(key), tuple(shape)))
    return hit[1] if hit is not None and hit[0] is key else None


def getitem(x, key):
    """``x[key]`` with numpy's rules, lazily; integer arrays on several axes (or
    of several dimensions), which dask's own indexing refuses, become one 1-D
    take on a flattened view. Lazy integer index arrays are checked against
    their axis as they are computed (dask reads past the end of a chunk
    without a word: ``x[[2, 10]]`` of 8 rows gave row 2 twice)."""
    _remember(key, x)
    keys = key if isinstance(key, tuple) else (key,)
    for k in keys:  # dask reads True as 1 and 1.0 as 1: x[True] gave x[1], numpy's is x[None]
        _refuse_non_index(k)
    keys = _bounds_checked(x, _plain_slices(x, keys))
    if any(k is None for k in keys) and any(_is_index_array(k) or isinstance(k, list) for k in keys):
        x, keys = _none_as_an_axis(x, keys)  # (dask's own indexing fails on None among index arrays)
    key = keys if isinstance(key, tuple) else keys[0]
    arrays = [k for k in keys if _is_index_array(k) and "int" in str(k.dtype)]
    if len(arrays) > 1 or any(a.ndim != 1 for a in arrays):  # dask: "Don't yet support nd fancy indexing"
        out = _gather(x, key)
        if out is None:
            out = _gather_anywhere(x, keys)
        if out is not None:
            return out
    import dask.array as da

    if len(arrays) == 1 and isinstance(arrays[0], da.Array) and tuple(arrays[0].shape) == (1,) and all(
            k is arrays[0] or isinstance(k, slice) or k is Ellipsis for k in keys):
        # dask reports x[k] of an axis in one chunk and a dask k of one element (holding 0) with
        # the axis' length (and computes one element): index by the element, then put the axis back
        # (a numpy k, which dask indexes right, has no chunks to reshape)
        axis = _consumed_axes(keys, x.ndim)[next(i for i, k in enumerate(keys) if k is arrays[0])]
        one = tuple(da.reshape(k, ()) if k is arrays[0] else k for k in keys)
        return da.expand_dims(x[one], axis)
    out = _ints_and_an_array(x, keys)
    # (a step longer than a block leaves blocks of no elements, which later blocks-wise ops computed
    # as holding data: x[0:3:3] * 1.0 of chunks of 2 came out of shape (2, ...), silently)
    from polygrad_dask.namespace import _drop_empty_blocks

    return _drop_empty_blocks(x[key] if out is None else out)


def _increasing(k, n):
    """The positions of slice ``k`` on an axis of ``n`` as a slice of positive step with
    bounds in ``[0, n]``, and whether ``k`` takes them in decreasing order."""
    r = range(*k.indices(n))
    if not r:
        return slice(0, 0, 1), False
    if r.step > 0:
        return slice(r.start, r[-1] + 1, r.step), False
    return slice(r[-1], r.start + 1, -r.step), True


def _plain_slices(x, keys):
    """``keys`` with each slice on an axis of known size written with bounds in ``[0, n]``, as
    numpy reads them: dask misreads a negative-step slice whose start is before the axis
    (``z[-5:-5:-1]`` of 4 rows gave all 4, numpy's none; and beside an index array)."""
    axes = _consumed_axes(keys, x.ndim)
    out = list(keys)
    for i, (k, d) in enumerate(zip(keys, axes)):
        if isinstance(k, slice) and d is not None and d < x.ndim and isinstance(x.shape[d], int):
            if k.step is not None and k.step < 0:
                r = range(*k.indices(x.shape[d]))
                out[i] = slice(0, 0) if not r else slice(r.start, r[-1] - 1 if r[-1] else None, r.step)
    return tuple(out)


def _refuse_non_index(k):
    """An IndexError, as numpy's, for a key part numpy refuses and dask would read as an integer:
    a bool or float scalar, a float array, a list of floats, a slice with float bounds, a string."""
    import numpy as np

    scalar = isinstance(k, (bool, float, complex, str, np.generic))
    if scalar:
        bad = not isinstance(k, np.integer)
    elif _is_index_array(k):
        bad = not ("int" in str(k.dtype) or "bool" in str(k.dtype))
    elif isinstance(k, list):
        bad = not all(isinstance(i, (int, np.integer)) for i in k)
    elif isinstance(k, slice):
        bad = not all(b is None or (isinstance(b, (int, np.integer)) and not isinstance(b, bool))
                      for b in (k.start, k.stop, k.step))
    else:
        bad = False
    if bad:
        what = f"{k!r} ({type(k).__name__})" if scalar or not _is_index_array(k) else f"an array of dtype {k.dtype}"
        raise IndexError(
            f"polygrad (dask): {what} is not an index: only integers, slices, Ellipsis, None and integer or "
            f"boolean arrays are" + (" (a Python bool, numpy's 0-d mask, is not taken on dask: use None for a new "
                                     "axis)" if isinstance(k, (bool, np.bool_)) else ""))


def _ints_and_an_array(x, keys):
    """``x[keys]`` for integers with one 1-D integer index array, in numpy's order; None for
    other keys. numpy counts the integers as advanced indices too and puts the indexed dimension
    first where a slice or None separates them (``x[0, :, idx]``); dask puts it in place, and for
    ``x[0, None, idx]`` reports one shape and computes another. So the integers index as slices
    of one (one advanced index: the same in both, shape and values), their axes are dropped, and
    the indexed dimension moves where numpy puts it."""
    import dask.array as da
    import numpy as np

    arrays = [k for k in keys if _is_index_array(k) or isinstance(k, list)]
    if len(arrays) != 1 or _is_bool_index(arrays[0]) or len(np.shape(arrays[0])) != 1:
        return None
    ints = [i for i, k in enumerate(keys) if isinstance(k, (int, np.integer)) and not isinstance(k, bool)]
    if not ints or sum(k is Ellipsis for k in keys) > 1:
        return None
    consumed = sum(k is not None and k is not Ellipsis for k in keys)
    if consumed > x.ndim:
        return None  # (dask's own error)
    expanded = []
    for k in keys:
        expanded.extend([slice(None)] * (x.ndim - consumed) if k is Ellipsis else [k])
    sliced, dropped, advanced, axis = [], [], [], 0
    for i, k in enumerate(expanded):
        if k is None:
            sliced.append(k)
            continue
        if isinstance(k, (int, np.integer)) and not isinstance(k, bool):
            n = x.shape[axis]
            if isinstance(n, int) and not -n <= k < n:
                raise IndexError(f"index {k} is out of bounds for axis {axis} with size {n}")
            k = int(k) % n if isinstance(n, int) else int(k)
            sliced.append(slice(k, k + 1))
            dropped.append(i)
            advanced.append(i)
        else:
            sliced.append(k)
            if not isinstance(k, slice):
                advanced.append(i)
        axis += 1
    out = da.squeeze(x[tuple(sliced)], axis=tuple(dropped))
    if advanced[-1] - advanced[0] != len(advanced) - 1:  # separated: the indexed dimension first
        at = next(i for i, k in enumerate(expanded) if k is arrays[0])
        out = da.moveaxis(out, at - sum(d < at for d in dropped), 0)
    return out


def _none_as_an_axis(x, keys):
    """``x`` with an axis of length one where ``keys`` has None, and ``keys`` with ``:`` there:
    numpy reads None as a slice of a new axis of length one, also among index arrays (where it
    separates two of them, the indexed dimensions go first), so the result is numpy's."""
    import dask.array as da

    used = sum(0 if k is None or k is Ellipsis else k.ndim if _is_bool_index(k) else 1 for k in keys)
    axes, d = [], 0  # d: the axis of the result each entry starts at
    for k in keys:
        if k is None:
            axes.append(d)
        d += 1 if k is None else x.ndim - used if k is Ellipsis else k.ndim if _is_bool_index(k) else 1
    return da.expand_dims(x, tuple(axes)), tuple(slice(None) if k is None else k for k in keys)


def _consumed_axes(keys, ndim):
    """The axis of ``x`` each entry of an indexing key starts at (None for ``None``)."""
    used = sum(0 if k is None or k is Ellipsis else getattr(k, "ndim", 1) if _is_bool_index(k) else 1
               for k in keys)
    axes, d = [], 0
    for k in keys:
        if k is None:
            axes.append(None)
        elif k is Ellipsis:
            axes.append(d)
            d += ndim - used
        else:
            axes.append(d)
            d += k.ndim if _is_bool_index(k) else 1
    return axes


def _is_bool_index(k):
    return _is_index_array(k) and "bool" in str(k.dtype)


def _bounds_checked(x, keys):
    """``keys`` with each lazy integer index array checked, block by block, against the
    length of the axis it indexes (an IndexError as numpy's, when the block is computed)."""
    import dask.array as da

    lazy = [isinstance(k, da.Array) and "int" in str(k.dtype) for k in keys]
    if not any(lazy):
        return keys
    axes = _consumed_axes(keys, x.ndim)
    out = list(keys)
    for i, (k, d) in enumerate(zip(keys, axes)):
        if lazy[i] and d is not None and d < x.ndim and isinstance(x.shape[d], int):
            out[i] = k.map_blocks(_checked_block, _InRange(x.shape[d], d), dtype=k.dtype, meta=k._meta)
    return tuple(out)


class _InRange:
    """Refuses a block of indices outside ``[-n, n)`` (it travels to dask's workers)."""

    def __init__(self, n, axis):
        self.n, self.axis = n, axis

    def __call__(self, block):
        bad = (block < -self.n) | (block >= self.n)
        if bad.any():
            raise IndexError(f"index {int(block[bad].flat[0])} is out of bounds for axis {self.axis} with size {self.n}")


def take(x, indices, /, *, axis=None):
    """``xp.take`` through :func:`getitem` (its checks and its fix of one-element indices)."""
    if (axis is None and x.ndim != 1) or x.ndim == 0:
        import array_api_compat.dask.array as xp

        return xp.take(x, indices, axis=axis)  # (its error: the standard needs an axis here)
    axis = 0 if axis is None else axis % x.ndim
    return getitem(x, (slice(None),) * axis + (indices,))


def _gather_anywhere(x, keys):
    """``x[keys]`` for integer arrays (and integers) on any axes among slices and an Ellipsis, in
    numpy's order: the slices first, then the indexed axes moved to the front for :func:`_gather`,
    then the indexed dimensions where numpy puts them (in place of the first where the indexed
    axes are adjacent, else first); None for other keys (None, boolean masks)."""
    import dask.array as da
    import numpy as np

    if any(k is None or _is_bool_index(k) for k in keys) or sum(k is Ellipsis for k in keys) > 1:
        return None
    consumed = sum(k is not Ellipsis for k in keys)
    if consumed > x.ndim:
        return None  # (dask's own error)
    expanded = []
    for k in keys:
        expanded.extend([slice(None)] * (x.ndim - consumed) if k is Ellipsis else [k])
    expanded += [slice(None)] * (x.ndim - len(expanded))
    advanced = [i for i, k in enumerate(expanded) if not isinstance(k, slice)]
    sliced = x[tuple(k if isinstance(k, slice) else slice(None) for k in expanded)]
    out = _gather(da.moveaxis(sliced, advanced, list(range(len(advanced)))), tuple(expanded[i] for i in advanced))
    if out is None:
        return None
    if advanced[-1] - advanced[0] == len(advanced) - 1 and advanced[0]:  # adjacent: in place of the first
        b = len(np.broadcast_shapes(*(tuple(np.shape(expanded[i])) for i in advanced)))
        out = da.moveaxis(out, list(range(b)), list(range(advanced[0], advanced[0] + b)))
    return out


def _gather(x, key):
    """``x[key]`` for integer arrays (and ints) on the leading axes, then ``:``/``...``; None otherwise."""
    import dask.array as da

    keys = key if isinstance(key, tuple) else (key,)
    k = 0
    while k < len(keys) and (isinstance(keys[k], int) or _is_index_array(keys[k])):
        k += 1
    lead, rest = keys[:k], keys[k:]
    if k > x.ndim or not any(_is_index_array(a) for a in lead):
        return None
    if sum(r is Ellipsis for r in rest) > 1 or not all(
            r is Ellipsis or (isinstance(r, slice) and r == slice(None)) for r in rest):
        return None
    arrays = da.broadcast_arrays(*[da.asarray(a) for a in lead])
    lin = None
    for a, n in zip(arrays, x.shape[:k]):
        a = da.where(a < 0, a + n, a)
        lin = a if lin is None else lin * n + a
    flat = da.reshape(x, (math.prod(x.shape[:k]),) + tuple(x.shape[k:]))
    out = flat[da.reshape(lin, (-1,))]
    return da.reshape(out, tuple(arrays[0].shape) + tuple(x.shape[k:]))


def _nan(n):
    """Whether the size ``n`` is one dask does not know yet."""
    return isinstance(n, float) and math.isnan(n)


def _check_known(opname, shape, what="shape"):
    if any(_nan(n) for n in shape):
        raise UnknownShapeError(
            f"polygrad-dask: {opname} needs the {what} {tuple(shape)}, which dask does not know yet: a size came "
            f"from a data-dependent op (boolean-mask indexing, nonzero). Use pg.where(mask, x, 0) instead of "
            f"x[mask], or compute the sizes first (x.compute_chunk_sizes()) outside the differentiated graph"
        )


def _normalize_key(key):
    return key if isinstance(key, tuple) else (key,)


def _set_basic(out, keys, value, add=False):
    """``out`` with ``out[keys] = value`` (``+= value`` where ``add``) done in place, for keys of integers, slices, ``...``
    and None, with numpy's positions: dask's setitem writes wrong ones for an integer before a
    negative-step slice (``z[1, ::-1] = v``) and raises for others (``z[:, -3, 4:-5:-2]``), so it
    gets only slices of positive step, one per axis: an integer as a slice of one (an axis of one
    in the value), a negative-step slice as the same positions in increasing order (the value
    flipped on that axis). An empty selection writes nothing (dask's setitem refuses it)."""
    import dask.array as da

    part = out[_plain_slices(out, keys)]  # (dask's checks of the key: out-of-bounds integers, too many)
    if 0 in tuple(part.shape):
        return out
    value, part = (part + value if add else value), tuple(part.shape)
    if value.ndim > len(part):  # leading axes of one, which numpy drops
        value = da.reshape(value, tuple(value.shape[value.ndim - len(part):]))
    value = da.broadcast_to(value, part)
    used = sum(k is not None and k is not Ellipsis for k in keys)
    expanded = []
    for k in keys:
        expanded.extend([slice(None)] * (out.ndim - used) if k is Ellipsis else [k])
    expanded += [slice(None)] * (out.ndim - sum(k is not None for k in expanded))
    nones = tuple(i for i, k in enumerate(k for k in expanded if not isinstance(k, int)) if k is None)
    expanded = [k for k in expanded if k is not None]
    value = da.squeeze(value, axis=nones) if nones else value
    ints = tuple(d for d, k in enumerate(expanded) if isinstance(k, int))
    value = da.expand_dims(value, ints) if ints else value
    written, flips = [], []
    for k, n in zip(expanded, out.shape):
        k, flipped = (slice(k % n, k % n + 1), False) if isinstance(k, int) else _increasing(k, n)
        written.append(k)
        flips.append(slice(None, None, -1) if flipped else slice(None))
    out[tuple(written)] = value[tuple(flips)] if any(f.step for f in flips) else value
    return out


def scatter_add(x, key, values):
    """A copy of ``x`` with ``values`` added at ``x[key]``, repeated indices
    summed; lazy, chunked like ``x``, with ``x``'s chunk type."""
    import dask.array as da

    x = da.asarray(x)
    _check_known("scatter_add", x.shape)
    keys = _normalize_key(key)
    values = da.asarray(values, dtype=x.dtype) if not isinstance(values, da.Array) else values.astype(x.dtype)
    if x.ndim == 0 or _is_basic(keys):  # no repeats possible: one lazy write
        return _set_basic(x.copy(), keys, values, add=True)
    return x + _scatter_sum(tuple(x.shape), x.chunks, key, values, x._meta)


def _getitem_grad(g, key, shape):
    """Zeros of ``shape`` with ``g`` added at ``[key]`` (the vjp of getitem),
    with ``g``'s chunk type, chunked like ``g`` along trailing axes of equal size."""
    import dask.array as da

    _check_known("getitem_grad (indexing backward)", shape)
    _check_known("getitem_grad (indexing backward)", g.shape, "gradient shape")
    shape = tuple(shape)
    chunks = _source_chunks(key, shape)
    keys = _normalize_key(key)
    one = [k for k in keys if isinstance(k, da.Array) and k.ndim == 0 and "int" in str(k.dtype)]
    if len(one) == 1 and all(k is one[0] or isinstance(k, slice) or k is Ellipsis for k in keys):
        # a 0-d index array (x[xp.asarray(1)]): as a one-element one, with its axis back in g
        at = next(i for i, k in enumerate(keys) if k is one[0])
        g = da.expand_dims(g, _consumed_axes(keys, len(shape))[at])
        key = tuple(da.reshape(k, (1,)) if k is one[0] else k for k in keys)
    if chunks is None and 0 in shape:  # no elements: dask's "auto" chunks of it divide by zero
        chunks = tuple((n,) for n in shape)
    if chunks is None:  # chunk like g along trailing axes of equal size
        wanted = ["auto"] * len(shape)
        for i in range(1, min(len(shape), g.ndim) + 1):
            if shape[-i] == g.shape[-i]:
                wanted[-i] = g.chunks[-i]
        chunks = da.core.normalize_chunks(tuple(wanted), shape, dtype=g.dtype)
    keys = _normalize_key(key)
    if not shape:  # a 0-d x: the key adds axes of one (None, ...) at most; g holds its one value
        return da.reshape(g, ())
    if _is_basic(keys):
        return _set_basic(da.zeros_like(g, shape=shape, chunks=chunks), keys, g)
    return _scatter_sum(shape, chunks, key, g, g._meta)


@hookimpl
def polygrad_scatter_add():
    return scatter_add


# ---------------------------------------------------------------------------
# Kernels: the generic ones, with a clear error for unknown sizes
# ---------------------------------------------------------------------------


def _kernels():
    import array_api_compat.dask.array as xp

    from polygrad.extend import row
    from polygrad_dask import namespace

    def broadcast_to(x, shape):
        _check_known("broadcast_to", shape, "target shape")
        return xp.broadcast_to(x, shape)

    def reshape(x, shape, copy=None):
        _check_known("reshape", x.shape, "input shape")
        return namespace.reshape(x, shape, copy=copy)

    def sum_to(x, shape):
        # The target gives the axes to sum (the leading extra ones, and those it has as 1), which need
        # no size. Refused: an unknown size the target keeps as a known one (the result's shape would
        # not be the target's); kept as unknown, it is the broadcast's own, as the target's.
        shape, lead = tuple(shape), x.ndim - len(shape)
        if any(_nan(m) and not _nan(n) and n != 1 for n, m in zip(shape, x.shape[lead:])):
            _check_known("sum_to", x.shape, "input shape")
        if lead and any(_nan(n) for n in x.shape):  # (the kernel's reshape of the kept sizes needs them known)
            x = xp.sum(x, axis=tuple(range(lead)))
        return row("sum_to").fwd(xp, x, shape)

    def searchsorted(x1, x2, side="left", sorter=None):
        _check_known("searchsorted", x1.shape, "shape of the sorted array")  # (dask's gives NaN positions)
        return namespace.searchsorted(x1, x2, side=side, sorter=sorter)

    def matmul(x1, x2):
        # dask's own error for sizes that do not match is "Chunks do not add up to shape"
        if x1.ndim and x2.ndim:
            n1, n2 = x1.shape[-1], x2.shape[-2 if x2.ndim > 1 else 0]
            if isinstance(n1, int) and isinstance(n2, int) and n1 != n2:
                raise ValueError(f"polygrad-dask: matmul: x1's last axis has {n1} elements (shape {tuple(x1.shape)}), "
                                 f"x2's {'second-to-last' if x2.ndim > 1 else 'only'} axis {n2} (shape {tuple(x2.shape)})")
            b1, b2 = tuple(x1.shape[:-2]), tuple(x2.shape[:-2])
            for a, b in zip(b1[::-1], b2[::-1]):
                if isinstance(a, int) and isinstance(b, int) and a != b and 1 not in (a, b):
                    raise ValueError(f"polygrad-dask: matmul: the batch shapes {b1} and {b2} (of {tuple(x1.shape)} "
                                     f"and {tuple(x2.shape)}) do not broadcast")
        return namespace.matmul(x1, x2)  # (in the promoted dtype, whatever the chunks)

    def negative(x):
        # dask's -x of a boolean array returns NotImplemented (a value, not an error): the
        # namespace's negative refuses it, as numpy's - does
        return xp.negative(x)

    return {"broadcast_to": broadcast_to, "reshape": reshape, "sum_to": sum_to, "getitem": getitem, "negative": negative,
            "getitem_grad": _getitem_grad, "take": take, "searchsorted": searchsorted, "matmul": matmul}



@hookimpl
def polygrad_kernels():
    return _kernels()


# ---------------------------------------------------------------------------
# Execution
# ---------------------------------------------------------------------------


@hookimpl
def polygrad_materialize(arrays):
    import dask

    return dask.compute(*arrays)


@hookimpl
def polygrad_persist(arrays):
    """Compute and keep in memory; under dask.distributed, wait until the work is done and raise
    a failed task's error here (persist alone returns futures at once, and an optimizer would then
    replace its parameters with arrays that fail later)."""
    import dask

    out = dask.persist(*arrays)
    try:
        from distributed import futures_of, wait
    except ImportError:  # the local schedulers compute inside persist: errors have raised already
        return out
    futures = futures_of(out)
    if futures:
        wait(futures)
        for future in futures:
            if future.status == "error":
                future.result()  # raises the task's exception
    return out


@hookimpl
def polygrad_synchronize():
    return True  # nothing runs in the background: work happens inside compute/persist


class _NoCompute:
    """Inside: computing any dask array raises (the conformance suite's laziness check)."""

    def __enter__(self):
        import dask

        def refuse(dsk, keys, **kwargs):
            raise AssertionError(f"polygrad-dask: a dask graph was computed inside forbid_compute (keys {keys!r:.200})")

        self._cm = dask.config.set(scheduler=refuse)
        self._cm.__enter__()
        return self

    def __exit__(self, *exc):
        self._cm.__exit__(*exc)


@hookimpl
def polygrad_forbid_compute():
    return _NoCompute()


@hookimpl
def polygrad_check_lazily(array, check):
    """``check`` run on each block before the block is handed on (one task per block)."""
    return array.map_blocks(_checked_block, check, dtype=array.dtype, meta=array._meta)


def _checked_block(block, check):
    check(block)
    return block


@hookimpl
def polygrad_fuse_elementwise(nodes, inputs, outputs):
    """One blockwise layer running NumPy's fused kernel per block (``polygrad_dask.fuse``)."""
    from polygrad_dask import fuse

    return fuse.build(nodes, inputs, outputs)

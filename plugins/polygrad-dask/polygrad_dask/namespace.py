"""The dask backend's Array API namespace: ``array_api_compat.dask.array``,
with what dask lacks or gets wrong filled in, lazily, with dask's own ops.

* ``eye(n_rows, n_cols, k=...)``: dask's builds a broken graph when
  ``n_cols > n_rows`` ("Missing dependency" at compute time);
* ``take_along_axis``: not in dask; integer-array indexing with aranges;
* ``from_dlpack``: not in dask; a dask array as it is, anything else through numpy;
* ``linalg.cholesky``: array_api_compat's gives the upper factor for
  ``upper=False`` (dask's own ``cholesky`` defaults to ``lower=False``);
* ``linalg.inv``: dask's solves against a float64 identity, so a float32
  (or complex64) matrix gets a float64 (complex128) inverse; cast back;
* ``max``, ``min``, ``linalg.vector_norm``, ``linalg.matrix_norm`` of an array
  with no elements: dask's compute to a wrong shape, or fail ("zero-size array
  to reduction operation maximum" for the max along a non-empty axis of a
  (0, 3) array, which numpy gives as (0, 1)); numpy's answer on zeros of the
  shape is the answer;
* ``argmax``, ``argmin`` with ``axis=None``: dask combines the blocks' answers in block order,
  which is the flat order only when the trailing axes are one block each; with ties in two
  blocks of a row it gave the later flat index (5 for 4); so the trailing axes are made one
  block first;
* ``matmul``, ``tensordot``, ``vecdot`` of integers or booleans: dask sums the blocks' partial
  products along a contracted axis of several blocks with ``sum``, which widens (int8 to int64,
  uint8 to uint64, and bool to int64: ``[[2]]`` for numpy's ``[[True]]``); the result is cast
  back to the promoted dtype (wrapping as numpy's integer products do; for booleans, nonzero);
* ``max``, ``min``, ``argmax``, ``argmin``, ``var``, ``std``, ``prod``, ``cumulative_sum``,
  ``cumulative_prod`` and the norms of an array with a block of no elements inside it (what
  ``x[mask].compute_chunk_sizes()`` leaves where a block kept nothing, and a batch ``X[keep]``
  of unknown size has where a block keeps no rows): dask's gave NaN (var, std) or failed at
  compute with numpy's bare errors ("zero-size array to reduction operation maximum", "all the
  input array dimensions ... must match exactly"); they run on the array without empty blocks
  (:func:`_no_empty_blocks`);
* ``linalg.svdvals``, ``linalg.matrix_rank``: array_api_compat's ask dask's ``svd`` for
  ``full_matrices=True`` and ``compute_uv=False``, which it does not take; from the singular
  values of dask's ``svd`` (of a matrix in one block or tall-and-skinny, as it needs);
* ``searchsorted``: dask's takes no ``sorter``, nor a Python number or 0-d array as ``x2``;
* ``reshape`` of an array of no elements (also through 1-D: ``(3, 0, 6)`` to ``(-1,)``, which
  x[idx, 4:4] = v needs), with blocks of no elements inside, or blocks that do not line up;
* ``float16``: dask arrays hold it (numpy's dtype), but array_api_compat's
  namespace names only the standard's dtypes, so a compiled function's
  ``float16`` input (a dtype by name) had nothing to resolve to.

Everything else is array_api_compat's, unchanged.
"""

from __future__ import annotations

import builtins

import array_api_compat.dask.array as _base
from array_api_compat.dask.array import *  # noqa: F401,F403
from array_api_compat.dask.array import __all__ as _all
from array_api_compat.dask.array import __array_api_version__  # noqa: F401

import numpy as _np

__all__ = sorted(set(_all) | {"eye", "take_along_axis", "from_dlpack", "linalg", "max", "min", "float16", "argmax",
                              "argmin", "matmul", "tensordot", "vecdot", "var", "std", "prod",
                              "cumulative_sum", "cumulative_prod", "searchsorted", "reshape"})

float16 = _np.float16


def __getattr__(name):
    return getattr(_base, name)


def eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None):
    import dask.array as da

    n_cols = n_rows if n_cols is None else n_cols
    hit = da.reshape(da.arange(n_rows), (n_rows, 1)) + k == da.reshape(da.arange(n_cols), (1, n_cols))
    return hit.astype(float64 if dtype is None else dtype)  # noqa: F405


def take_along_axis(x, indices, /, *, axis=-1):
    import dask.array as da

    from polygrad_dask import getitem

    axis = axis % x.ndim
    key = tuple(
        indices if d == axis else da.reshape(da.arange(n), tuple(n if i == d else 1 for i in range(x.ndim)))
        for d, n in enumerate(x.shape)
    )
    return getitem(x, key)


def from_dlpack(x, /, *, device=None, copy=None):
    import dask.array as da
    import numpy as np

    if isinstance(x, da.Array):
        return x.copy() if copy else x
    return da.from_array(np.from_dlpack(x))


def _unknown_chunks(c):
    """Whether the chunks ``c`` of an axis of several blocks hold a size not known yet (a boolean mask's)."""
    import math

    return len(c) > 1 and builtins.any(math.isnan(n) for n in c)


def reshape(x, /, shape, *, copy=None):
    """dask's, for an array of no elements (dask's failed: "reduce() of empty iterable", and
    "merge or split existing dimensions evenly" for (3, 0, 6) to (-1,)), one with empty blocks
    inside (a graph failing at compute) and blocks that do not line up (through 1-D)."""
    if 0 in tuple(x.shape):
        import dask.array as da

        new = _np.empty(tuple(x.shape), dtype=bool).reshape(shape).shape  # (numpy's errors)
        return da.from_array(_np.empty_like(x._meta, shape=new), chunks=tuple((n,) for n in new))
    x = _drop_empty_blocks(x)
    try:
        return _base.reshape(x, shape, copy=copy)
    except NotImplementedError:  # "merge or split existing dimensions evenly": through 1-D, which dask rechunks
        return _base.reshape(_base.reshape(x, (-1,), copy=copy), shape, copy=copy)


def _drop_empty_blocks(x):
    """``x`` without its blocks of zero size along every axis of known chunks that has elements
    (a rechunk: no data moves). dask's reductions, scans and reshapes get such blocks wrong
    (NaN, or numpy's bare "cannot reshape array of size 0" at compute)."""
    drop = {d: tuple(n for n in c if n) for d, c in enumerate(x.chunks)
            if 0 in c and len(c) > 1 and not _unknown_chunks(c) and builtins.sum(c)}
    return x.rechunk(drop) if drop else x


def _no_empty_blocks(name, fn, *, scan=False, axes_of=None):
    """``fn`` (dask's ``name``: a reduction, or a scan for ``scan``) run so that no block of
    zero size inside an array reaches it: dask's reductions and scans get those wrong (NaN for
    var, numpy's bare errors for max, argmax, cumulative_sum). Along an axis of known chunks,
    the zero ones are dropped (a rechunk: no data moves). An axis of sizes not known yet
    (boolean masks) may have an empty block anywhere: reduced or scanned along, its blocks are
    joined into one (the axis in memory at once); kept, its blocks stay as they are; and then,
    where any size is not known, the op runs block by block with the blocks' own library (the
    reduced axes made one block). An axis of no elements stays as it is (the array has none:
    numpy's answer or error). ``axes_of(x, params)``: the reduced axes, where not ``axis``."""
    import math

    def run(x, /, **params):
        x = _drop_empty_blocks(x)
        if axes_of is not None:
            axes = axes_of(x, params)
        else:
            axis = params.get("axis")
            axes = tuple(range(x.ndim)) if axis is None else tuple(
                a % x.ndim for a in (axis if isinstance(axis, tuple) else (axis,)))
        for d in axes:
            if _unknown_chunks(x.chunks[d]):
                x = _one_block_along(x, d)
        if not builtins.any(math.isnan(n) for n in x.shape):
            return fn(x, **params)
        # Sizes not known: dask's own reductions and scans need them (argmax, cumulative_sum,
        # vector_norm fail on nan); with the reduced axes one block, block by block is exact.
        x = x.rechunk({d: -1 for d in axes if not math.isnan(x.shape[d])})
        # Its dtype is all we read from a sample of ones, with more elements than var's correction along
        # the reduced axes (numpy warns "Degrees of freedom <= 0" through the warnings module, whose
        # catch_warnings is process-wide, not thread-safe); numpy's errstate is this context's own.
        n = 1 + math.ceil(params.get("correction") or 0)
        with _np.errstate(all="ignore"):
            sample = _block_op(_np.ones_like(x._meta, shape=tuple(n if d in axes else 1 for d in range(x.ndim))),
                               name, params)
        keep = scan or params.get("keepdims", False)
        grow = 1 if scan and params.get("include_initial") else 0
        chunks = tuple((c[0] + grow,) if scan and d in axes else (1,) if d in axes else c
                       for d, c in enumerate(x.chunks) if keep or d not in axes)
        return x.map_blocks(_block_op, name, params, chunks=chunks, drop_axis=() if keep else axes,
                            dtype=sample.dtype, meta=_np.empty_like(sample, shape=(0,) * sample.ndim))

    run.__name__ = name.rpartition(".")[2]
    return run


def _block_op(block, name, params):
    """``name`` of the block's own library (numpy's, cupy's) on one block."""
    from array_api_compat import array_namespace

    fn = array_namespace(block)
    for part in name.split("."):
        fn = getattr(fn, part)
    return fn(block, **params)


def _one_block_along(x, axis):
    """``x`` with its blocks along ``axis`` joined into one (of a size not known)."""
    import functools
    import itertools

    import dask.array as da
    from dask.base import tokenize
    from dask.highlevelgraph import HighLevelGraph

    name = "polygrad-one-block-" + tokenize(x, axis)
    join = functools.partial(_concatenate_blocks, axis=axis)
    graph = {}
    for at in itertools.product(*(range(len(c)) if d != axis else (0,) for d, c in enumerate(x.chunks))):
        parts = [(x.name,) + at[:axis] + (i,) + at[axis + 1:] for i in range(len(x.chunks[axis]))]
        graph[(name,) + at] = (join, parts)
    chunks = tuple((float("nan"),) if d == axis else c for d, c in enumerate(x.chunks))
    return da.Array(HighLevelGraph.from_collections(name, graph, dependencies=[x]), name, chunks, meta=x._meta)


def _concatenate_blocks(blocks, axis):
    from dask.array.core import concatenate_lookup  # (the blocks' library: numpy, cupy, masked)

    return concatenate_lookup.dispatch(type(blocks[0]))(blocks, axis=axis)


def searchsorted(x1, x2, /, *, side="left", sorter=None):
    """dask's, with a ``sorter`` (dask's takes none: numpy's positions are in the sorted order,
    ``x1[sorter]``'s) and a Python number or 0-d array as ``x2``."""
    from polygrad_dask import take

    if sorter is not None:
        x1 = take(x1, sorter, axis=0)
    if not hasattr(x2, "dask"):  # a Python number (dask's failed: "'float' object has no attribute '_meta'")
        x2 = asarray(x2)  # noqa: F405
    if x2.ndim == 0:  # (dask's fails at compute: "'numpy.int64' object does not support item assignment")
        return reshape(_base.searchsorted(x1, reshape(x2, (1,)), side=side), ())  # noqa: F405
    return _base.searchsorted(x1, x2, side=side)


def _zero_size_as_numpy(name, fn):
    """``fn`` (array_api_compat's), except for an array of no elements (every size known): numpy's
    answer on zeros of its shape, or numpy's error (the max over an empty axis)."""
    import numpy as np

    def run(x, /, **params):
        shape = tuple(x.shape)
        if 0 in shape and builtins.all(isinstance(n, int) for n in shape):  # (all: the namespace's, here)
            try:
                out = getattr(np.linalg, name[7:]) if name.startswith("linalg.") else getattr(np, name)
                out = out(np.zeros(shape, dtype=x.dtype), **params)
            except ValueError as exc:
                raise ValueError(f"polygrad-dask: {name} of a zero-size array: {exc}") from None
            return asarray(out)  # noqa: F405
        return fn(x, **params)

    run.__name__ = name.rpartition(".")[2]
    return run


max = _zero_size_as_numpy("max", _no_empty_blocks("max", _base.max))  # noqa: A001
min = _zero_size_as_numpy("min", _no_empty_blocks("min", _base.min))  # noqa: A001
var, std, prod = (_no_empty_blocks(f.__name__, f) for f in (_base.var, _base.std, _base.prod))
cumulative_sum = _no_empty_blocks("cumulative_sum", _base.cumulative_sum, scan=True)
cumulative_prod = _no_empty_blocks("cumulative_prod", _base.cumulative_prod, scan=True)


def _first_of_ties_in_flat_order(fn):
    """``fn`` (dask's ``argmax`` or ``argmin``), over the flattened array for ``axis=None``
    giving the first flat index among ties: dask keeps the first *block* holding the extreme,
    which is the first in flat order only when every axis but the first is one block."""

    def run(x, /, *, axis=None, keepdims=False):
        if axis is None and x.ndim > 1 and builtins.any(len(c) > 1 for c in x.chunks[1:]):
            x = x.rechunk({d: -1 for d in range(1, x.ndim)})
        return fn(x, axis=axis, keepdims=keepdims)

    run.__name__ = fn.__name__
    return run


argmax = _first_of_ties_in_flat_order(_no_empty_blocks("argmax", _base.argmax))
argmin = _first_of_ties_in_flat_order(_no_empty_blocks("argmin", _base.argmin))


def _in_the_promoted_dtype(fn):
    """``fn`` (a product of two arrays summed over contracted axes), in the dtype of its inputs
    promoted, whatever the chunks: dask's sum of the blocks' partial products widens integers
    and turns booleans into counts."""

    def run(x1, x2, /, **params):
        out = fn(x1, x2, **params)
        want = result_type(x1, x2)  # noqa: F405
        if out.dtype == want:
            return out
        return out != 0 if want == bool else astype(out, want)  # noqa: F405

    run.__name__ = fn.__name__
    return run


matmul = _in_the_promoted_dtype(_base.matmul)
tensordot = _in_the_promoted_dtype(_base.tensordot)
vecdot = _in_the_promoted_dtype(_base.vecdot)


class _Linalg:
    """``linalg``: array_api_compat's, with ``cholesky`` giving the factor asked for
    and ``inv`` keeping its input's floating-point dtype."""

    __name__ = "polygrad_dask.namespace.linalg"

    def __getattr__(self, name):
        return getattr(_base.linalg, name)

    @staticmethod
    def cholesky(x, /, *, upper=False):
        import dask.array as da

        return da.linalg.cholesky(x, lower=not upper)

    @staticmethod
    def inv(x, /):
        y = _base.linalg.inv(x)
        if y.dtype == x.dtype or not isdtype(x.dtype, ("real floating", "complex floating")):  # noqa: F405
            return y
        return astype(y, x.dtype)  # noqa: F405


def _matrix_rank(x, /, *, rtol=None):
    """``linalg.matrix_rank`` from ``svdvals`` (array_api_compat's asks dask's svd for
    ``compute_uv=False``, which it does not take)."""
    if x.ndim < 2:
        raise ValueError(f"polygrad-dask: matrix_rank needs an array of two dimensions or more, got shape {x.shape}")
    s = linalg.svdvals(x)
    if rtol is None:
        tol = max(s, axis=-1, keepdims=True) * (builtins.max(x.shape[-2:]) * finfo(s.dtype).eps)  # noqa: F405
    else:
        tol = max(s, axis=-1, keepdims=True) * asarray(rtol)[..., None]  # noqa: F405
    return count_nonzero(s > tol, axis=-1)  # noqa: F405


def _svdvals(x, /):
    """The singular values, from dask's ``svd`` (array_api_compat's ``svdvals`` asks it for
    ``full_matrices=True``, which it refuses)."""
    import dask.array as da

    return da.linalg.svd(x)[1]


_Linalg.matrix_rank, _Linalg.svdvals = staticmethod(_matrix_rank), staticmethod(_svdvals)
_Linalg.matmul, _Linalg.tensordot, _Linalg.vecdot = (staticmethod(f) for f in (matmul, tensordot, vecdot))
_Linalg.vector_norm = staticmethod(
    _zero_size_as_numpy("linalg.vector_norm", _no_empty_blocks("linalg.vector_norm", _base.linalg.vector_norm)))
_Linalg.matrix_norm = staticmethod(
    _zero_size_as_numpy("linalg.matrix_norm", _no_empty_blocks(
        "linalg.matrix_norm", _base.linalg.matrix_norm, axes_of=lambda x, params: (x.ndim - 2, x.ndim - 1))))
linalg = _Linalg()

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
                              "argmin", "matmul", "tensordot", "vecdot"})

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


max = _zero_size_as_numpy("max", _base.max)  # noqa: A001
min = _zero_size_as_numpy("min", _base.min)  # noqa: A001


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


argmax = _first_of_ties_in_flat_order(_base.argmax)
argmin = _first_of_ties_in_flat_order(_base.argmin)


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


_Linalg.matmul, _Linalg.tensordot, _Linalg.vecdot = (staticmethod(f) for f in (matmul, tensordot, vecdot))
_Linalg.vector_norm = staticmethod(_zero_size_as_numpy("linalg.vector_norm", _base.linalg.vector_norm))
_Linalg.matrix_norm = staticmethod(_zero_size_as_numpy("linalg.matrix_norm", _base.linalg.matrix_norm))
linalg = _Linalg()

"""Data sets (Chainer's ``chainer.datasets``): ``TupleDataset``.

A data set is anything with ``len()`` and ``dataset[i]`` giving one example;
:class:`polygrad.iterators.SerialIterator` draws minibatches of examples from it
and :func:`polygrad.dataset.concat_examples` stacks them into arrays.
"""

from __future__ import annotations

from typing import Any

from polygrad.core.integers import as_int

__all__ = ["TupleDataset"]


def _length(data: Any) -> int:
    """``len(data)``; for an array without ``__len__`` (the standard defines none), its first dimension."""
    if hasattr(data, "__len__"):
        return len(data)
    shape = getattr(data, "shape", None)
    if shape is None or len(shape) == 0:
        raise TypeError(f"polygrad.datasets: a data set needs a length, got a {type(data).__name__}")
    if shape[0] is None or shape[0] != shape[0]:  # unknown (a lazy array of unknown size) or NaN
        raise ValueError(f"polygrad.datasets: the length of this {type(data).__name__} is not known yet; compute it first")
    return int(shape[0])


def _is_dtype(k: Any, kind: str) -> bool:
    """Whether ``k`` is a 0-d array (or an array library's scalar) of a dtype of ``kind`` (the
    standard's ``isdtype`` kinds), asked of its own namespace: a dtype's name differs by library
    (``array_api_strict.bool``)."""
    dtype = getattr(k, "dtype", None)
    if dtype is None or len(getattr(k, "shape", (1,))) != 0:
        return False
    get = getattr(k, "__array_namespace__", None)
    if get is not None:
        xp = get()
    else:  # a scalar without the protocol (an older library's): the backend that claims its type
        from polygrad.backends import get_array_namespace

        try:
            xp = get_array_namespace(k)
        except (TypeError, ValueError):
            return False
    return bool(xp.isdtype(dtype, kind))


def _is_bool(k: Any) -> bool:
    """Whether ``k`` is a boolean: Python's, or a 0-d array (or scalar) of a boolean dtype."""
    return isinstance(k, bool) or _is_dtype(k, "bool")


def _integer(index: Any) -> int:
    """``index`` as an int: an integer (or 0-d integer array), never a float or a boolean truncated
    (``int(2.9)`` would read example 2)."""
    if not _is_bool(index):
        if (i := as_int(index)) is not None:
            return i
        if _is_dtype(index, "integral"):
            return int(index)  # a 0-d integer array of a library without __index__
    raise IndexError(f"polygrad.datasets.TupleDataset: indices must be integers (or a boolean mask), got {index!r}")


def _row(data: Any, i: int) -> Any:
    """Example ``i`` of ``data``: row ``i`` of an array (``data[i, ...]``, the standard's
    spelling for a multi-dimensional array), else ``data[i]``."""
    if hasattr(data, "shape") and hasattr(data, "dtype"):
        return data[i, ...]
    return data[i]


class TupleDataset:
    """Several data sets of one length, zipped: example ``i`` is
    ``(datasets[0][i], datasets[1][i], ...)`` (Chainer's ``TupleDataset``).

    Each data set is a list, an array of any backend (example ``i`` is its
    row ``i``) or another data set. A slice, a list or a 1-D array of indices
    gives a list of such tuples.

    >>> import polygrad as pg
    >>> train = pg.datasets.TupleDataset([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0]], [1, 1, 0])
    >>> len(train), train[1], train[:2]
    (3, ([1.0, 0.0], 1), [([0.0, 1.0], 1), ([1.0, 0.0], 1)])
    """

    def __init__(self, *datasets: Any) -> None:
        if not datasets:
            raise ValueError("polygrad.datasets.TupleDataset: no data sets are given")
        length = _length(datasets[0])
        for i, dataset in enumerate(datasets):
            n = _length(dataset)
            if n != length:
                raise ValueError(
                    f"polygrad.datasets.TupleDataset: data set {i} has length {n}, data set 0 has length {length}"
                )
        self._datasets = datasets
        self._length = length

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, index: Any) -> Any:
        """One example for an integer; a list of them for a slice, a sequence or 1-D array of
        integers, or a boolean mask of the data set's length (numpy's meanings). Other
        indices (floats, a mask of another length) raise IndexError."""
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._length))]
        shape = getattr(index, "shape", None)
        if isinstance(index, (list, tuple)) or (shape is not None and len(shape) == 1):
            items = list(index) if shape is None else [index[k] for k in range(shape[0])]
            if items and all(_is_bool(k) for k in items):  # a mask: the examples where it is True
                if len(items) != self._length:
                    raise IndexError(f"polygrad.datasets.TupleDataset: a boolean mask of length {len(items)} for a "
                                     f"data set of length {self._length}")
                return [self[i] for i, k in enumerate(items) if bool(k)]
            return [self[k] for k in items]
        index = _integer(index)
        if not -self._length <= index < self._length:
            raise IndexError(f"polygrad.datasets.TupleDataset: index {index} is out of range for length {self._length}")
        return tuple(_row(dataset, index) for dataset in self._datasets)

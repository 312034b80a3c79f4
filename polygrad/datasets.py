"""Data sets (Chainer's ``chainer.datasets``): ``TupleDataset``.

A data set is anything with ``len()`` and ``dataset[i]`` giving one example;
:class:`polygrad.iterators.SerialIterator` draws minibatches of examples from it
and :func:`polygrad.dataset.concat_examples` stacks them into arrays.
"""

from __future__ import annotations

from typing import Any

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
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._length))]
        if isinstance(index, (list, tuple)):
            return [self[i] for i in index]
        shape = getattr(index, "shape", None)
        if shape is not None and len(shape) == 1:  # an integer array of indices, of any backend
            return [self[int(index[k])] for k in range(shape[0])]
        index = int(index)
        if not -self._length <= index < self._length:
            raise IndexError(f"polygrad.datasets.TupleDataset: index {index} is out of range for length {self._length}")
        return tuple(_row(dataset, index) for dataset in self._datasets)

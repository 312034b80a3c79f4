"""Fused elementwise kernels for dask arrays: NumPy's fused kernel run per block.

The group is compiled once for NumPy blocks by ``polygrad_numpy.fuse`` (numexpr
where installed, else one NumPy call per node writing into dead temporaries),
and runs as one ``blockwise`` layer over the broadcast blocks of the inputs:
one task per block for the whole group instead of one per node. A group of
several outputs is one layer whose blocks are tuples, and one ``getitem``
layer per output. Declined where the outputs differ in shape (a block index
would not fit them all) or a shape is unknown.
"""

from __future__ import annotations

import operator
from typing import Any, Callable


def build(nodes: tuple, inputs: tuple, outputs: tuple) -> Callable | None:
    import numpy as np

    try:
        from polygrad_numpy import fuse  # noqa: F401 - the kernel of each block
    except ImportError:
        return None

    shape = tuple(nodes[outputs[0]].shape)
    if any(tuple(nodes[j].shape) != shape for j in outputs):
        return None
    if any(d != d for n in nodes for d in n.shape) or any(d != d for s, *_ in inputs for d in s):
        return None  # an unknown (NaN) length
    block = _BlockKernel(tuple(n._replace(kernel=None, dtype=np.dtype(n.dtype)) for n in nodes),
                         tuple((tuple(s), np.dtype(d), False) for s, d, *_ in inputs), tuple(outputs))
    if block.kernel() is None:
        return None
    if len(outputs) == 1:
        block = block.first()
    ndim = len(shape)
    dtypes = [np.dtype(nodes[j].dtype) for j in outputs]

    def fused(*arrays: Any) -> tuple:
        import dask.array as da

        index = tuple(range(ndim))[::-1]  # as dask's elemwise: dimensions aligned from the right
        pairs: list = []
        for a in arrays:
            pairs += [a, tuple(range(a.ndim))[::-1]]
        if len(dtypes) == 1:
            return (da.blockwise(block, index, *pairs, dtype=dtypes[0], meta=np.empty((0,) * ndim, dtypes[0])),)
        whole = da.blockwise(block, index, *pairs, dtype=object, meta=np.empty((0,) * ndim, dtype=object))
        return tuple(da.blockwise(operator.getitem, index, whole, index, k, None, dtype=dt, meta=np.empty((0,) * ndim, dt))
                     for k, dt in enumerate(dtypes))

    return fused


class _BlockKernel:
    """NumPy's fused kernel of a group, for one block; made from the group's description
    (the nodes without their kernels) where it runs. Under ``dask.distributed`` the task
    graph travels to the workers, and the kernel itself cannot (it holds numexpr's lock and
    compiled programs): what travels is the description, and each process builds its own."""

    def __init__(self, nodes: tuple, inputs: tuple, outputs: tuple, first: bool = False) -> None:
        self._recipe = (nodes, inputs, outputs)
        self._first = first
        self._kernel: Callable | None = None

    def kernel(self) -> Callable | None:
        if self._kernel is None:
            from polygrad.backends import get_backend
            from polygrad.extend import row
            from polygrad_numpy import fuse as numpy_fuse

            nodes, inputs, outputs = self._recipe
            numpy_backend = get_backend("numpy")
            on_blocks = tuple(n._replace(kernel=row(n.op).kernel(numpy_backend)) for n in nodes)
            self._kernel = numpy_fuse.build(on_blocks, inputs, outputs, numexpr=numpy_fuse.numexpr_module(),
                                            min_bytes=0, require_gain=False)
        return self._kernel

    def first(self) -> "_BlockKernel":
        """The same kernel (built once), returning its first result alone."""
        one = _BlockKernel(*self._recipe, first=True)
        one._kernel = self._kernel
        return one

    def __call__(self, *arrays: Any) -> Any:
        kernel = self._kernel or self.kernel()
        if kernel is None:  # a worker whose numexpr refuses what the client's took
            raise RuntimeError("polygrad_dask: the fused kernel of a group could not be built on this worker")
        out = kernel(*arrays)
        return out[0] if self._first else out

    def __getstate__(self) -> dict:
        return {"_recipe": self._recipe, "_first": self._first}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state, _kernel=None)

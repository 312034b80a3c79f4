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
        from polygrad_numpy import fuse as numpy_fuse
    except ImportError:
        return None
    from polygrad.backends import get_backend
    from polygrad.extend import row

    shape = tuple(nodes[outputs[0]].shape)
    if any(tuple(nodes[j].shape) != shape for j in outputs):
        return None
    if any(d != d for n in nodes for d in n.shape) or any(d != d for s, *_ in inputs for d in s):
        return None  # an unknown (NaN) length
    numpy_backend = get_backend("numpy")
    on_blocks = tuple(n._replace(kernel=row(n.op).kernel(numpy_backend), dtype=np.dtype(n.dtype)) for n in nodes)
    block = numpy_fuse.build(on_blocks, tuple((s, np.dtype(d), False) for s, d, *_ in inputs), outputs,
                             numexpr=numpy_fuse.numexpr_module(), min_bytes=0, require_gain=False)
    if block is None:
        return None
    ndim = len(shape)
    dtypes = [np.dtype(nodes[j].dtype) for j in outputs]

    def fused(*arrays: Any) -> tuple:
        import dask.array as da

        index = tuple(range(ndim))[::-1]  # as dask's elemwise: dimensions aligned from the right
        pairs: list = []
        for a in arrays:
            pairs += [a, tuple(range(a.ndim))[::-1]]
        if len(dtypes) == 1:
            return (da.blockwise(_first(block), index, *pairs, dtype=dtypes[0], meta=np.empty((0,) * ndim, dtypes[0])),)
        whole = da.blockwise(block, index, *pairs, dtype=object, meta=np.empty((0,) * ndim, dtype=object))
        return tuple(da.blockwise(operator.getitem, index, whole, index, k, None, dtype=dt, meta=np.empty((0,) * ndim, dt))
                     for k, dt in enumerate(dtypes))

    return fused


def _first(block: Callable) -> Callable:
    def first(*arrays: Any) -> Any:
        return block(*arrays)[0]

    return first

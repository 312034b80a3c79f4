"""Fused elementwise kernels for dask arrays: NumPy's fused kernel run per block.

A node joins a block kernel where eager dask runs one NumPy function per block for it:
a dask ufunc (``da.exp``: NumPy's ``exp`` on each block) or an operator of dask
arrays (``x * y``, ``x ** c``: the operator on each block). Those nodes are
compiled once for NumPy blocks by ``polygrad_numpy.fuse`` (numexpr where
installed, else one NumPy call per node writing into dead temporaries) with each
kernel replaced by that per-block function, and run as one ``blockwise`` layer
over the broadcast blocks of their inputs: one task per block for them all
instead of one per node. Several outputs make one layer whose blocks are tuples,
and one ``getitem`` layer per output.

Any other kernel (``where``, ``clip``, ``astype``, ``relu``...: compositions of
dask operations, whose values per block need not be the NumPy backend's; dask's
``clip(-0.0, 0, 2)`` is +0.0, NumPy's -0.0) runs as eager dask runs it, on the
dask arrays, between the layers of the other nodes. The nodes behind the same
number of such kernels on every path form one layer (no path from the layer
leaves it and comes back); a layer of one node, or of outputs that differ in
shape (a block index would not fit them all), runs node by node too. Declined
where no layer is left, or a shape is unknown.
"""

from __future__ import annotations

import functools
import operator
from typing import Any, Callable

#: Dask arrays implement these operators as ``elemwise(op, ...)``: the operator on each block.
_ELEMWISE_OPERATORS = (operator.add, operator.sub, operator.mul, operator.truediv, operator.pow, operator.neg,
                       operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge)
#: Kernels of this package (``polygrad_dask._kernels``) that call the namespace's function of this
#: name after a check made when the graph is built (negative refuses a boolean array).
_CHECKED = {"negative": "negative"}


def build(nodes: tuple, inputs: tuple, outputs: tuple) -> Callable | None:
    try:
        from polygrad_numpy import fuse  # noqa: F401 - the kernel of each block
    except ImportError:
        return None
    from polygrad.backends import get_backend

    if any(d != d for n in nodes for d in n.shape) or any(d != d for s, *_ in inputs for d in s):
        return None  # an unknown (NaN) length
    backend = get_backend("dask")
    on_blocks = [_per_block(n.op, n.kernel, backend) is not None for n in nodes]
    stages = []  # ("layer", layer, refs, outs) | ("node", j)
    for members in _layers(nodes, on_blocks):
        layer = _layer(nodes, inputs, outputs, members) if len(members) > 1 else None
        stages += [layer] if layer is not None else [("node", j) for j in members]
    if not any(stage[0] == "layer" for stage in stages):
        return None

    def fused(*arrays: Any) -> tuple:
        value: dict[tuple, Any] = {("input", i): a for i, a in enumerate(arrays)}
        for stage in stages:
            if stage[0] == "layer":
                _, layer, refs, outs = stage
                value.update(zip(outs, layer(*(value[r] for r in refs))))
            else:
                n = nodes[stage[1]]
                args = [v if kind == "scalar" else value[(kind, v)] for kind, v in n.args]
                value[("node", stage[1])] = n.kernel(*args, **n.params)  # as eager dask runs it
        return tuple(value[("node", j)] for j in outputs)

    return fused


def _per_block(op: str, kernel: Any, backend: Any) -> Callable | None:
    """The one NumPy function eager dask runs on each block for ``kernel`` (row ``op``'s kernel on
    ``backend``), or None where it runs something else."""
    import numpy as np
    from dask.array.ufunc import ufunc

    if op in _CHECKED and kernel is backend.kernels.get(op):
        kernel = getattr(backend.xp, _CHECKED[op])
    if type(kernel) is ufunc and isinstance(kernel._ufunc, np.ufunc):
        return kernel._ufunc  # ufunc.__call__: elemwise(self._ufunc, *args)
    if any(kernel is f for f in _ELEMWISE_OPERATORS):
        return kernel
    return None


def _block_kernel(node: Any, inputs: tuple, nodes: tuple, backend: Any) -> Callable:
    """The per-block function of a node of a layer, casting its result to the node's dtype where an
    operand is a 0-d array, as dask's elemwise does (its ``enforce_dtype``): ``np.True_ ** 2`` is
    int64, and dask makes the int8 that ``bool_array ** 2`` gives."""
    from polygrad.extend import row

    fn = _per_block(node.op, row(node.op).kernel(backend), backend)
    if any(kind != "scalar" and not tuple(inputs[v][0] if kind == "input" else nodes[v].shape)
           for kind, v in node.args):
        return functools.partial(_enforce_dtype, fn, node.dtype)
    return fn


def _enforce_dtype(fn: Callable, dtype: Any, *args: Any, **kwargs: Any) -> Any:
    out = fn(*args, **kwargs)
    return out if out.dtype == dtype else out.astype(dtype)


def _layers(nodes: tuple, on_blocks: list) -> list[list[int]]:
    """The nodes in stages to run in order: the block nodes behind ``k`` other nodes on their
    longest path inside the group (one layer; no path from it leaves it and comes back, since
    one through another node reaches a greater ``k``), then the other nodes at ``k``, one each."""
    level: list[int] = []
    for n in nodes:
        level.append(max((level[v] + (not on_blocks[v]) for kind, v in n.args if kind == "node"), default=0))
    stages = []
    for k in range(max(level, default=-1) + 1):
        layer = [j for j in range(len(nodes)) if level[j] == k and on_blocks[j]]
        stages += [layer] if layer else []
        stages += [[j] for j in range(len(nodes)) if level[j] == k and not on_blocks[j]]
    return stages


def _layer(nodes: tuple, inputs: tuple, outputs: tuple, members: list[int]) -> tuple | None:
    """``("layer", run, refs, outs)`` for the block nodes ``members``: ``run(*arrays)`` (the arrays
    of ``refs``: the group's inputs and other nodes they read) gives the dask arrays of ``outs``
    (the members read elsewhere or returned), or None where they cannot be one layer."""
    import numpy as np

    local = {j: k for k, j in enumerate(members)}
    refs: list[tuple] = []
    sub_nodes = []
    for j in members:
        args = []
        for kind, v in nodes[j].args:
            if kind == "node" and v in local:
                args.append(("node", local[v]))
            elif kind == "scalar":
                args.append((kind, v))
            else:
                if (kind, v) not in refs:
                    refs.append((kind, v))
                args.append(("input", refs.index((kind, v))))
        sub_nodes.append(nodes[j]._replace(args=tuple(args), kernel=None, dtype=np.dtype(nodes[j].dtype)))
    read_outside = {v for j, n in enumerate(nodes) if j not in local for kind, v in n.args if kind == "node"}
    outs = [j for j in members if j in read_outside or j in outputs]
    shape = tuple(nodes[outs[0]].shape)
    if any(tuple(nodes[j].shape) != shape for j in outs):
        return None
    described = tuple((tuple(inputs[v][0]), np.dtype(inputs[v][1]), False) if kind == "input"
                      else (tuple(nodes[v].shape), np.dtype(nodes[v].dtype), False) for kind, v in refs)
    block = _BlockKernel(tuple(sub_nodes), described, tuple(local[j] for j in outs))
    if block.kernel() is None:
        return None
    if len(outs) == 1:
        block = block.first()
    return ("layer", functools.partial(_blockwise, block, len(shape), [np.dtype(nodes[j].dtype) for j in outs]),
            refs, [("node", j) for j in outs])


def _blockwise(block: Callable, ndim: int, dtypes: list, *arrays: Any) -> tuple:
    """``block`` run over the broadcast blocks of ``arrays`` (dimensions aligned from the right,
    as dask's elemwise): one layer, and one ``getitem`` layer per output where there are several."""
    import dask.array as da
    import numpy as np

    index = tuple(range(ndim))[::-1]
    pairs: list = []
    for a in arrays:
        pairs += [a, tuple(range(a.ndim))[::-1]]
    if len(dtypes) == 1:
        return (da.blockwise(block, index, *pairs, dtype=dtypes[0], meta=np.empty((0,) * ndim, dtypes[0])),)
    whole = da.blockwise(block, index, *pairs, dtype=object, meta=np.empty((0,) * ndim, dtype=object))
    return tuple(da.blockwise(operator.getitem, index, whole, index, k, None, dtype=dt, meta=np.empty((0,) * ndim, dt))
                 for k, dt in enumerate(dtypes))


class _BlockKernel:
    """NumPy's fused kernel of a layer, for one block; made from the layer's description
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
            from polygrad_numpy import fuse as numpy_fuse

            nodes, inputs, outputs = self._recipe
            backend = get_backend("dask")
            on_blocks = tuple(n._replace(kernel=_block_kernel(n, inputs, nodes, backend)) for n in nodes)
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

"""polygrad's own answers to the backend hooks, registered like any plugin's.

Each backend's hooks are asked of the plugin that provides it and then of this
module, whose hookimpls are all ``trylast`` (as pluggy's eggsample registers
its ``lib.py``): a plugin overrides a default simply by answering. What a
backend gets without the hook:

* ``polygrad_check_usable``: usable where its library (``BackendInfo.module``)
  is installed, found with ``importlib.util.find_spec`` without importing it
  (:class:`LibraryCheck`, one per backend); the backend still becomes unusable
  if its namespace then fails to load;
* ``polygrad_array_types``: no types;
* ``polygrad_kernels``: no faster kernels (every op runs its row's kernel);
* ``polygrad_scatter_add``: :func:`scatter_add`, written with the standard only,
  which never writes into an array of a backend declared immutable;
* ``polygrad_owns_memory``: no array owns its memory, so backward copies the
  leaf gradients it did not allocate itself before handing them out;
* ``polygrad_materialize`` / ``polygrad_persist``: the arrays unchanged (eager
  arrays are already computed).
"""

from __future__ import annotations

import importlib.util
import math
import sys
from typing import Any, Callable

from polygrad.core import dispatch as _dispatch
from polygrad.hookspecs import hookimpl
from polygrad.ops._dtypes import index_dtype


class LibraryCheck:
    """The default usability check of one backend: its library can be found.

    An object per backend, because the hook is asked only the backend's name and
    the check needs its ``BackendInfo.module``.
    """

    def __init__(self, module: str):
        self.module = module

    @hookimpl(trylast=True)
    def polygrad_check_usable(self) -> tuple[bool, str]:
        top = self.module.partition(".")[0]
        try:
            found = top in sys.modules or importlib.util.find_spec(top) is not None
        except (ImportError, ValueError):
            found = False
        if found:
            return (True, "")
        return (False, f"its library {top!r} (BackendInfo.module) is not installed, and its plugin has no "
                       "polygrad_check_usable hook to say more")


@hookimpl(trylast=True)
def polygrad_array_types() -> tuple[type, ...]:
    return ()


@hookimpl(trylast=True)
def polygrad_kernels() -> dict[str, Callable]:
    return {}


@hookimpl(trylast=True)
def polygrad_scatter_add() -> Callable[[Any, Any, Any], Any]:
    return scatter_add


@hookimpl(trylast=True)
def polygrad_owns_memory() -> Callable[[Any], bool]:
    return owns_nothing


@hookimpl(trylast=True)
def polygrad_materialize(arrays: tuple[Any, ...]) -> tuple[Any, ...]:
    return arrays


@hookimpl(trylast=True)
def polygrad_persist(arrays: tuple[Any, ...]) -> tuple[Any, ...]:
    return arrays


def owns_nothing(array: Any) -> bool:
    """Whether ``array`` owns writable memory: the default cannot tell, so no."""
    return False


# ---------------------------------------------------------------------------
# The standard-only scatter-add
# ---------------------------------------------------------------------------


def scatter_add(x: Any, key: Any, values: Any) -> Any:
    """A copy of ``x`` with ``values`` added at ``x[key]``, repeated indices summed,
    with the standard only (on the namespace of ``x``'s backend).

    Basic keys (ints, slices, ``...``, None) have no repeats: on a backend whose
    arrays take writes, the sum is written into a copy; on an immutable one
    (``BackendInfo.inplace`` False) the values are placed by ``take`` along each
    axis. Keys of integer arrays and ints (one per leading axis, as the standard
    allows) become one flat index, and repeated indices are summed by a one-hot
    matmul.
    Neither writes into an array of an immutable backend.
    """
    backend = _dispatch.backend_of_type(type(x))
    xp = backend.xp
    if not isinstance(key, tuple):
        key = (key,)
    if not any(_dispatch.is_array(k) for k in key):
        if backend.inplace:
            out = xp.asarray(x, copy=True)
            out[key] = out[key] + values
            return out
        return x + _placed_at_basic_key(backend, xp, x, key, values)
    if not all(_dispatch.is_array(k) or _is_int(k) for k in key) or len(key) > x.ndim:
        raise NotImplementedError(
            f"polygrad: backend {backend.name!r} has no polygrad_scatter_add hook, and the standard-only "
            f"fallback handles basic keys, or integer arrays and ints on the leading axes, only (got {key!r})"
        )
    key = tuple(xp.asarray(k, dtype=index_dtype(xp)) if _is_int(k) else k for k in key)
    return x + _summed_at_integer_arrays(xp, x, key, values)


def _is_int(k: Any) -> bool:
    return isinstance(k, int) and not isinstance(k, bool)


def _summed_at_integer_arrays(xp: Any, x: Any, key: tuple, values: Any) -> Any:
    """Zeros shaped like ``x`` plus ``values`` at the integer arrays ``key`` (one per
    leading axis), repeated positions summed: a one-hot matrix of the flat
    positions, transposed, times the values."""
    index = index_dtype(xp)
    idx = xp.broadcast_arrays(*key)
    lead = tuple(x.shape[: len(key)])
    flat = xp.zeros(idx[0].shape, dtype=index)
    for i, n in zip(idx, lead):
        flat = flat * n + xp.astype(i % n, index)
    flat = xp.reshape(flat, (-1,))
    rest = tuple(x.shape[len(key):])
    values = xp.broadcast_to(xp.asarray(values, dtype=x.dtype), tuple(idx[0].shape) + rest)
    values = xp.reshape(values, (flat.shape[0], math.prod(rest)))
    onehot = xp.astype(xp.reshape(flat, (-1, 1)) == xp.reshape(xp.arange(math.prod(lead), dtype=index), (1, -1)), x.dtype)
    return xp.reshape(xp.matmul(xp.matrix_transpose(onehot), values), tuple(x.shape))


def _placed_at_basic_key(backend: Any, xp: Any, x: Any, key: tuple, values: Any) -> Any:
    """Zeros shaped like ``x`` holding ``values`` at ``x[key]`` (a basic key), built
    without a write: the block of values gets one axis per axis of ``x``, and
    each axis the key selects part of is spread to full length by one ``take``
    from the block with a zero slab appended (positions the key does not
    select read the slab)."""
    shape = tuple(x.shape)
    picks, selected = _basic_key_picks(backend, key, shape)
    block_shape = tuple(len(p) for p in picks)
    block = xp.broadcast_to(xp.asarray(values, dtype=x.dtype), selected)
    block = xp.reshape(block, block_shape)
    index = index_dtype(xp)
    for axis, (positions, n) in enumerate(zip(picks, shape)):
        if positions == list(range(n)):
            continue
        slot = {p: i for i, p in enumerate(positions)}
        slab = xp.zeros(tuple(1 if d == axis else m for d, m in enumerate(block.shape)), dtype=x.dtype)
        take = xp.asarray([slot.get(j, len(positions)) for j in range(n)], dtype=index)
        block = xp.take(xp.concat([block, slab], axis=axis), take, axis=axis)
    return block


def _basic_key_picks(backend: Any, key: tuple, shape: tuple) -> tuple[list[list[int]], tuple[int, ...]]:
    """For a basic key on an array of ``shape``: the positions it selects on each
    axis (distinct, in order) and the shape of ``x[key]``."""
    if any(isinstance(k, bool) or not (k is None or k is Ellipsis or isinstance(k, (int, slice))) for k in key):
        raise NotImplementedError(f"polygrad: backend {backend.name!r}: the standard-only scatter-add takes "
                                  f"ints, slices, ... and None as a basic key (got {key!r})")
    used = sum(1 for k in key if k is not None and k is not Ellipsis)
    if used > len(shape) or sum(1 for k in key if k is Ellipsis) > 1:
        raise IndexError(f"polygrad: key {key!r} does not fit an array of shape {shape}")
    if Ellipsis in key:
        at = key.index(Ellipsis)
        key = key[:at] + (slice(None),) * (len(shape) - used) + key[at + 1:]
    else:
        key = key + (slice(None),) * (len(shape) - used)
    picks: list[list[int]] = []
    selected: list[int] = []
    for k in key:
        if k is None:
            selected.append(1)
            continue
        n = shape[len(picks)]
        if isinstance(k, slice):
            picks.append(list(range(n)[k]))
            selected.append(len(picks[-1]))
        else:
            if not -n <= k < n:
                raise IndexError(f"polygrad: index {k} is out of bounds for an axis of length {n}")
            picks.append([k % n])
    return picks, tuple(selected)

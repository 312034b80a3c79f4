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
* ``polygrad_scatter_add``: :func:`scatter_add`, written with the standard only;
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


def scatter_add(x: Any, key: Any, values: Any) -> Any:
    """A copy of ``x`` with ``values`` added at ``x[key]``, repeated indices summed,
    with the standard only (on the namespace of ``x``'s backend).

    Basic keys have no repeats; keys of integer arrays (one per leading axis, as
    the standard allows) become one flat index, and repeated indices are summed
    by a one-hot matmul.
    """
    backend = _dispatch.backend_of_type(type(x))
    xp = backend.xp
    if not isinstance(key, tuple):
        key = (key,)
    out = xp.asarray(x, copy=True)
    if not any(_dispatch.is_array(k) for k in key):
        out[key] = out[key] + values
        return out
    if not all(_dispatch.is_array(k) for k in key) or len(key) > out.ndim:
        raise NotImplementedError(
            f"polygrad: backend {backend.name!r} has no polygrad_scatter_add hook, and the standard-only "
            f"fallback handles basic keys or integer arrays on the leading axes only (got {key!r})"
        )
    idx = xp.broadcast_arrays(*key)
    lead = out.shape[: len(key)]
    flat = xp.zeros(idx[0].shape, dtype=xp.int64)
    for i, n in zip(idx, lead):
        flat = flat * n + xp.astype(i % n, xp.int64)
    flat = xp.reshape(flat, (-1,))
    rest = tuple(out.shape[len(key):])
    n_lead = math.prod(lead)
    values = xp.broadcast_to(xp.asarray(values, dtype=out.dtype), tuple(idx[0].shape) + rest)
    values = xp.reshape(values, (flat.shape[0], math.prod(rest)))
    onehot = xp.astype(xp.reshape(flat, (-1, 1)) == xp.reshape(xp.arange(n_lead, dtype=xp.int64), (1, -1)), out.dtype)
    added = xp.matmul(xp.matrix_transpose(onehot), values)
    return out + xp.reshape(added, tuple(out.shape))

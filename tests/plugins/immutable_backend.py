"""A stand-in for an immutable array library such as jax: its arrays refuse
``x[key] = v`` (even on a copy), and its plugin declares ``inplace=False`` and
provides no scatter-add and no kernels, so polygrad's defaults must do without
writes.

The arrays are numpy arrays wrapped in :class:`FrozenArray`, whose namespace
(:data:`xp`) is ``array_api_compat.numpy`` with every argument unwrapped and
every array result wrapped (``_wrapping.py``). Register it by hand::

    pg.register_plugin(immutable_backend, name="immutable-plugin")
"""

from __future__ import annotations

from typing import Any

from polygrad.hookspecs import BackendInfo, hookimpl

from ._wrapping import Generator, Namespace, Wrapped, install_operators, np_xp, unwrap

NAME = "immutable"


class FrozenArray(Wrapped):
    """An array that cannot be written into, as a jax array."""

    __slots__ = ()

    def __setitem__(self, key: Any, value: Any) -> None:
        raise TypeError(f"{type(self).__name__} is immutable and does not support item assignment "
                        "(like a jax array); build a new array instead")

    def __getitem__(self, key: Any) -> FrozenArray:
        return FrozenArray(self._a[unwrap(key)])

    def __repr__(self) -> str:
        return f"FrozenArray({self._a!r})"

    shape = property(lambda self: self._a.shape)
    size = property(lambda self: self._a.size)


install_operators(FrozenArray, inplace=False)
xp = FrozenArray.namespace = Namespace(np_xp, "immutable_backend.xp", FrozenArray)


@hookimpl
def polygrad_backend_info():
    return BackendInfo(name=NAME, module=__name__, device="cpu", inplace=False, priority=-50)


@hookimpl
def polygrad_array_namespace():
    return xp


@hookimpl
def polygrad_array_types():
    return (FrozenArray,)


@hookimpl
def polygrad_random_generator(seed):
    return Generator(FrozenArray, seed)

"""A jax backend plugin, written from docs/plugins-and-conformance.md alone (the
"Two sketches" section), as a third party would: ``jax.numpy`` is the
namespace, arrays are immutable (``inplace=False``), and float64 exists only in
jax's 64-bit mode (``JAX_ENABLE_X64``), read without importing jax. No
scatter-add hook and no kernels: polygrad's defaults build their results
without writing into arrays.

A test plugin (jax is a test extra, not a dependency): register it by hand::

    pg.register_plugin(jax_backend, name="jax-plugin")

or run the suite on it from ``tests/``, with jax's dtype-truncation warning as an
error, as tests/test_conformance_backends.py does (its known-failures file lists
jax's own gap, no int64 in 32-bit mode)::

    PYTHONWARNINGS=error:Explicitly:UserWarning polygrad-conformance jax --polygrad-plugin plugins.jax_backend
"""

from __future__ import annotations

import importlib.util
import os

from polygrad.hookspecs import BackendInfo, hookimpl

NAME = "jax"


def _x64() -> bool:
    return os.environ.get("JAX_ENABLE_X64", "").strip().lower() in ("1", "true", "t", "yes", "y", "on")


@hookimpl
def polygrad_backend_info():
    # immutable arrays; float64 only in 64-bit mode; never the default backend
    return BackendInfo(name=NAME, module="jax", inplace=False, float64=_x64(), priority=-10)


@hookimpl
def polygrad_check_usable():
    if importlib.util.find_spec("jax") is None:  # cheap: no import
        return (False, "jax is not installed (pip install 'jax[cpu]')")
    return (True, "")


@hookimpl
def polygrad_array_namespace():
    import jax.numpy as jnp  # the standard's namespace itself (jax >= 0.4.32)

    return jnp


@hookimpl
def polygrad_array_types():
    import jax

    return (jax.Array,)


class _Generator:
    """jax's keys are explicit: one key split at every draw, so successive draws differ."""

    def __init__(self, seed):
        import random

        import jax

        self._key = jax.random.key(random.getrandbits(32) if seed is None else seed)

    def _next(self):
        import jax

        self._key, sub = jax.random.split(self._key)
        return sub

    def normal(self, shape, *, dtype, mean=0.0, std=1.0):
        import jax

        return jax.random.normal(self._next(), tuple(shape), dtype) * std + mean

    def uniform(self, shape, *, dtype, low=0.0, high=1.0):
        import jax

        return jax.random.uniform(self._next(), tuple(shape), dtype, low, high)


@hookimpl
def polygrad_random_generator(seed):
    return _Generator(seed)

"""polygrad: define-by-run automatic differentiation over the Python Array API standard.

>>> import polygrad as pg
>>> x = pg.Variable(pg.asarray([1.0, 2.0]))
>>> y = pg.sum(pg.exp(x))
>>> y.backward()

``pg`` offers every function of the Array API standard over Variables
(:mod:`polygrad.array_api`): creation functions (``pg.asarray``, ``pg.zeros``,
...) return Variables that do not require grad, made on the current backend
when they are called. ``pg`` is itself an Array API namespace
(``pg.__array_api_version__``, ``pg.__array_namespace_info__()`` of the current
backend, dtypes, constants). Importing polygrad imports no array library; backends
are pluggy plugins found through the ``polygrad`` entry-point group and loaded
on first use.
"""

from polygrad.backends import (  # the module itself is pg.backends: calling it lists the backends
    Backend, BackendInfo, compute, get_array_namespace, persist, get_backend, register_plugin, seed,
    set_backend, to_backend, unregister_plugin, using_backend,
)
from polygrad.core import (
    Function, FunctionHook, Variable, force_backprop_mode, grad, inplace_policy, is_backprop_enabled, no_backprop_mode,
    test_mode, using_config,
)
from polygrad.core import type_check
from polygrad.hookspecs import PluginWarning, hookimpl
from polygrad.array_api import *  # noqa: F403  (the standard's functions, linalg, fft and constants)
from polygrad import variable_methods  # installs PyTorch's tensor methods and Chainer's device moves
from polygrad.variable_methods import from_numpy
from polygrad.ops import transpose
from polygrad import distributions, functions, function_hooks, links
from polygrad.core.engine import backward_all as backward
from polygrad.links import Chain, Link
from polygrad.core.debug import debug_mode, is_debug, set_debug
from polygrad import computational_graph, optim, optimizer_hooks, optimizers, serializers
from polygrad.computational_graph import build_computational_graph
from polygrad.compile import In, Out, function, shared
from polygrad import symbolic
from polygrad import array_api as _array_api
from polygrad.links import ChainList, Sequential
from polygrad import dataset, datasets, iterators


def __getattr__(name: str):
    """Dtypes (``pg.float32``) and ``pg.__array_api_version__``: the current backend's, read when
    the attribute is read."""
    if name in _array_api.DTYPES or name == "__array_api_version__":
        return getattr(_array_api, name)
    raise AttributeError(f"module 'polygrad' has no attribute {name!r}")


__version__ = "0.1.0"

__all__ = [
    "Variable", "backward", "build_computational_graph", "computational_graph", "optimizers", "optimizer_hooks",
    "serializers", "optim", "from_numpy", "ChainList", "Sequential", "dataset", "datasets", "iterators", "set_debug", "debug_mode", "is_debug", "distributions", "Function", "FunctionHook", "Link", "Chain", "function", "In", "Out", "shared", "symbolic", "grad", "inplace_policy", "no_backprop_mode", "force_backprop_mode",
    "is_backprop_enabled", "test_mode", "using_config", "hookimpl", "PluginWarning", "type_check", "functions", "function_hooks", "links",
    "Backend", "BackendInfo", "compute", "persist", "backends", "get_array_namespace", "get_backend", "register_plugin",
    "seed", "set_backend", "to_backend", "unregister_plugin", "using_backend", "transpose",
]
__all__ += _array_api.__all__

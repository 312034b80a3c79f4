"""The engine: Variable, graph nodes, Function, backward, modes and hooks.

Knows no op by name and no array library: standard library plus the Array API
namespace a backend hands it.
"""

from polygrad.core.engine import backward, grad
from polygrad.core.config import force_backprop_mode, is_backprop_enabled, no_backprop_mode, test_mode, using_config
from polygrad.core.config import set_inplace_policy as inplace_policy
from polygrad.core.function import Function
from polygrad.core.hooks import FunctionHook, active_hooks
from polygrad.core.node import Node
from polygrad.core.variable import Variable

__all__ = [
    "Variable", "Node", "Function", "FunctionHook", "active_hooks", "backward", "grad",
    "no_backprop_mode", "force_backprop_mode", "inplace_policy", "is_backprop_enabled", "test_mode", "using_config",
]

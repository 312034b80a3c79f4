"""``polygrad.functions`` (import as ``F``): the ops plus neural-network functions.

Everything here is differentiable (twice, where the mathematics allows): the
nn functions are either rows of the op table or compositions of ops.
"""

from __future__ import annotations

from polygrad.core.function import Function
from polygrad.functions.stochastic import bernoulli, categorical, multinomial, normal
from polygrad.functions.nn import (
    identity, Identity, linear, log_softmax, mean_squared_error, relu, sigmoid, softmax, softmax_cross_entropy,
)
from polygrad.ops import (
    abs, add, broadcast_to, cos, divide, exp, expand_dims, getitem, log, matmul, matrix_transpose, max, maximum,
    mean, min, multiply, negative, permute_dims, pow, reshape, sin, sqrt, squeeze, subtract, sum, tanh, transpose,
    where,
)

__all__ = [
    "Function", "Identity", "identity", "linear", "log_softmax", "mean_squared_error", "relu", "sigmoid",
    "softmax", "softmax_cross_entropy", "bernoulli", "categorical", "multinomial", "normal",
    "abs", "add", "broadcast_to", "cos", "divide", "exp", "expand_dims", "getitem", "log", "matmul",
    "matrix_transpose", "max", "maximum", "mean", "min", "multiply", "negative", "permute_dims", "pow", "reshape",
    "sin", "sqrt", "squeeze", "subtract", "sum", "tanh", "transpose", "where",
]

"""``polygrad.functions`` (import as ``F``): the ops plus neural-network functions.

Everything here is differentiable (twice, where the mathematics allows): the
nn functions are either rows of the op table (:mod:`polygrad.ops.nn`) or
compositions of ops; this package holds compositions only.
"""

from __future__ import annotations

from polygrad.core.function import Function
from polygrad.functions.stochastic import bernoulli, categorical, multinomial, normal
from polygrad.functions.nn import (
    elu, gelu, huber_loss, identity, Identity, leaky_relu, linear, logsumexp, mean_squared_error,
    sigmoid_cross_entropy, softmax_cross_entropy,
)
from polygrad.functions.array import clip, concat, split_axis, stack, where
from polygrad.functions.connection import convolution_2d, embed_id
from polygrad.functions.evaluation import accuracy
from polygrad.functions.noise import dropout
from polygrad.functions.normalization import batch_normalization, fixed_batch_normalization, layer_normalization
from polygrad.functions.pooling import average_pooling_2d, max_pooling_2d
from polygrad.ops.nn import erf, erfc, log_softmax, relu, sigmoid, softmax, softplus
from polygrad.ops import (
    abs, add, broadcast_to, cos, divide, exp, expand_dims, getitem, log, matmul, matrix_transpose, max, maximum,
    mean, min, multiply, negative, permute_dims, pow, reshape, sin, sqrt, squeeze, subtract, sum, tanh, transpose,
)

__all__ = [
    "Function", "Identity", "identity", "linear", "log_softmax", "mean_squared_error", "relu", "sigmoid",
    "softmax", "softmax_cross_entropy", "bernoulli", "categorical", "multinomial", "normal",
    # activations
    "leaky_relu", "elu", "gelu", "erf", "erfc", "softplus", "tanh", "logsumexp",
    # losses, evaluation
    "sigmoid_cross_entropy", "huber_loss", "accuracy",
    # noise, connections, normalization, pooling
    "dropout", "convolution_2d", "embed_id", "batch_normalization", "fixed_batch_normalization",
    "layer_normalization", "max_pooling_2d", "average_pooling_2d",
    # arrays (Chainer signatures)
    "concat", "stack", "split_axis", "where", "clip",
    # ops
    "abs", "add", "broadcast_to", "cos", "divide", "exp", "expand_dims", "getitem", "log", "matmul",
    "matrix_transpose", "max", "maximum", "mean", "min", "multiply", "negative", "permute_dims", "pow", "reshape",
    "sin", "sqrt", "squeeze", "subtract", "sum", "transpose",
]

"""Neural-network functions: activations, the softmax family, linear, losses.

The ones with a row of their own (relu, sigmoid, softplus, erf, softmax,
log_softmax, and linear's one-node form) come from :mod:`polygrad.ops.nn`; the
rest are compositions of ops.
"""

from __future__ import annotations

import builtins
import math
from typing import Any

from polygrad.core.function import Function
from polygrad.core.variable import Variable
from polygrad.ops import exp, log, matmul, matrix_transpose, max, mean, reshape, squeeze, sum, tanh, where
from polygrad.ops.nn import erf, label_mask, linear_op, log_softmax, softplus, valid_count


# ---------------------------------------------------------------------------
# Composed activations (no rules of their own)
# ---------------------------------------------------------------------------
def _data(x: Any) -> Any:
    return x._data if isinstance(x, Variable) else x


def as_variable(x: Any) -> Any:
    """``x`` as a Variable (a raw array becomes one that does not require grad), so that
    Python operators work with it on either side (array_api_strict refuses
    ``raw_array * Variable``); Python scalars pass through."""
    if isinstance(x, (Variable, bool, int, float, complex)):
        return x
    return Variable(x, requires_grad=False)


def leaky_relu(x, slope=0.2):
    """``x`` where ``x >= 0``, else ``slope * x`` (the gradient at 0 is 1, as in Chainer)."""
    return where(x >= 0, x, x * slope)


def elu(x, alpha=1.0):
    """``x`` where ``x >= 0``, else ``alpha (exp(x) - 1)``.

    ``exp(x) - 1`` is computed as ``2 tanh(x/2) / (1 - tanh(x/2))`` (an exact
    identity), which keeps full relative precision near 0 where ``exp(x) - 1``
    cancels; the negative branch only sees ``min(x, 0)``, so a large positive
    ``x`` sends no inf or nan into the gradient.
    """
    neg = x < 0
    t = tanh(where(neg, x, 0.0) * 0.5)
    return where(neg, (2.0 * alpha) * t / (1.0 - t), x)


_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def gelu(x, approximate=False):
    """Gaussian error linear unit, ``x Phi(x)``.

    ``approximate=False``: ``0.5 x (1 + erf(x / sqrt(2)))`` with :func:`erf`;
    ``approximate=True``: the tanh form ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``.
    """
    x = as_variable(x)
    if approximate:
        return 0.5 * x * (1.0 + tanh(_SQRT_2_OVER_PI * (x + 0.044715 * (x * x * x))))
    return 0.5 * x * (1.0 + erf(x * (1.0 / math.sqrt(2.0))))


def logsumexp(x, axis=None):
    """``log(sum(exp(x), axis))``, shifted by the maximum so that it never overflows.

    The shift is detached: the value does not depend on it, and so the
    gradient is exactly ``softmax(x)`` along ``axis``.
    """
    x = as_variable(x)
    m = max(x, axis=axis, keepdims=True)
    if isinstance(m, Variable):
        m = m.detach()
    s = log(sum(exp(x - m), axis=axis))
    ndim = _data(x).ndim
    axes = tuple(range(ndim)) if axis is None else tuple(a % ndim for a in (axis if isinstance(axis, tuple) else (axis,)))
    return s + squeeze(m, axis=axes) if axes else s + m


# ---------------------------------------------------------------------------
# Linear and losses (composed)
# ---------------------------------------------------------------------------
def linear(x, W, b=None):
    """``x @ W.T + b``, with ``W`` of shape (out, in) as in Chainer.

    ``x`` of more than two dimensions is flattened to (batch, -1).
    """
    data = x._data if isinstance(x, Variable) else x
    if data.ndim is not None and data.ndim > 2:
        x = reshape(x, (data.shape[0], -1))
        data = x._data
    if data.ndim == 2 or data.ndim is None:  # None: a symbolic input of unknown rank
        return linear_op(x, W, b)  # one node; W's gradient in W's own layout
    y = matmul(x, matrix_transpose(W))
    return y if b is None else y + b


def mean_squared_error(x0, x1):
    """Mean of the squared differences."""
    d = as_variable(x0) - x1
    return mean(d * d)


def softmax_cross_entropy(x, t, normalize=True, ignore_label=-1, reduce="mean"):
    """Cross entropy between softmax(x) over axis 1 and integer labels ``t``.

    Labels equal to ``ignore_label`` contribute nothing. With ``reduce="mean"``
    the loss is averaged over non-ignored labels (``normalize=True``) or over the
    batch; ``reduce="no"`` returns per-example losses. Built from ops only, so it
    works on lazy and symbolic inputs too.
    """
    mask = label_mask(x, t, ignore_label)
    picked = where(mask, log_softmax(x, axis=1), 0.0)
    if reduce == "no":
        return -sum(picked, axis=1)
    if normalize:
        return -sum(picked) / valid_count(x, t, ignore_label)
    return -mean(sum(picked, axis=1))


def sigmoid_cross_entropy(x, t, normalize=True, reduce="mean"):
    """Cross entropy between ``sigmoid(x)`` and labels ``t`` in {0, 1} (integers of x's shape).

    Per element ``softplus(x) - x t``, which never overflows. Labels equal to
    -1 are ignored. ``reduce="mean"`` sums and divides by the number of
    non-ignored labels (``normalize=True``) or by the batch size ``x.shape[0]``
    (``normalize=False``); ``reduce="no"`` returns the per-element loss (0
    where ignored).
    """
    if reduce not in ("mean", "no"):
        raise ValueError(f"polygrad.functions.sigmoid_cross_entropy: reduce must be 'mean' or 'no', got {reduce!r}")
    xs, ts = tuple(_data(x).shape), tuple(_data(t).shape)
    if xs != ts:
        raise ValueError(f"polygrad.functions.sigmoid_cross_entropy: x and t must have the same shape, got x {xs} and t {ts}")
    x = as_variable(x)
    valid = t != -1
    loss = where(valid, softplus(x) - where(t == 1, x, 0.0), 0.0)  # x t, for labels in {0, 1}
    if reduce == "no":
        return loss
    if normalize:
        return sum(loss) / valid_count(x, t, -1)
    return sum(loss) * (1.0 / builtins.max(1, xs[0] if xs else 1))


def huber_loss(x, t, delta, reduce="sum_along_second_axis"):
    """Huber loss of ``d = x - t``: ``d^2 / 2`` where ``|d| <= delta``, else ``delta (|d| - delta / 2)``.

    ``reduce="sum_along_second_axis"`` (Chainer's default) sums over axis 1;
    ``reduce="no"`` returns the element-wise loss.
    """
    if reduce not in ("sum_along_second_axis", "no"):
        raise ValueError(
            f"polygrad.functions.huber_loss: reduce must be 'sum_along_second_axis' or 'no', got {reduce!r}"
        )
    d = as_variable(x) - t
    a = abs(d)
    loss = where(a <= delta, 0.5 * (d * d), delta * (a - 0.5 * delta))
    return sum(loss, axis=1) if reduce == "sum_along_second_axis" else loss


# ---------------------------------------------------------------------------
# Identity, as a Function subclass (the seed's example)
# ---------------------------------------------------------------------------
class Identity(Function):
    """Identity function: returns its inputs; gradients pass through unchanged."""

    def forward(self, inputs: tuple) -> tuple:
        self.retain_inputs(())
        return tuple(inputs)

    def backward(self, inputs: tuple, grad_outputs: tuple) -> tuple:
        return tuple(grad_outputs)


def identity(*inputs):
    """Apply :class:`Identity`: one Variable for one input, a tuple otherwise."""
    return Identity()(*inputs)

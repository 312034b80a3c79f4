"""Neural-network functions: activations, softmax family, linear, losses."""

from __future__ import annotations

from typing import Any

from polygrad.core.function import Function
from polygrad.core.variable import Variable
from polygrad.ops import matmul, matrix_transpose, mean, reshape, sum, where
from polygrad.ops.primitive import Op, apply, def_nograd, defvjp


def _log_softmax_kernel(xp: Any, x: Any, axis: int = -1) -> Any:
    s = x - xp.max(x, axis=axis, keepdims=True)
    return s - xp.log(xp.sum(xp.exp(s), axis=axis, keepdims=True))


def _softmax_kernel(xp: Any, x: Any, axis: int = -1) -> Any:
    e = xp.exp(x - xp.max(x, axis=axis, keepdims=True))
    return e / xp.sum(e, axis=axis, keepdims=True)


# ---------------------------------------------------------------------------
# Activations (rows of the op table)
# ---------------------------------------------------------------------------
RELU = defvjp(Op("relu", lambda xp, x: xp.where(x > 0, x, xp.zeros_like(x))),
              lambda o, g, ans, x: o.where(ans > 0, g, 0.0), saves="ans")  # relu'(0) = 0
SIGMOID = defvjp(Op("sigmoid", lambda xp, x: 0.5 * xp.tanh(0.5 * x) + 0.5),
                 lambda o, g, ans, x: g * ans * (1 - ans), saves="ans")
LOG_SOFTMAX = defvjp(Op("log_softmax", _log_softmax_kernel),
                     lambda o, g, ans, x, axis=-1: g - o.exp(ans) * o.sum(g, axis=axis, keepdims=True), saves="ans")
SOFTMAX = defvjp(Op("softmax", _softmax_kernel),
                 lambda o, g, ans, x, axis=-1: ans * (g - o.sum(g * ans, axis=axis, keepdims=True)), saves="ans")


def relu(x):
    """max(x, 0); the gradient at 0 is 0."""
    return apply(RELU, (x,))


def sigmoid(x):
    return apply(SIGMOID, (x,))


def log_softmax(x, axis=1):
    """Log of the softmax along ``axis`` (default 1, the class axis, as in Chainer)."""
    return apply(LOG_SOFTMAX, (x,), {"axis": axis})


def softmax(x, axis=1):
    return apply(SOFTMAX, (x,), {"axis": axis})


# ---------------------------------------------------------------------------
# Composed functions (no rules of their own)
# ---------------------------------------------------------------------------
def linear(x, W, b=None):
    """``x @ W.T + b``, with ``W`` of shape (out, in) as in Chainer.

    ``x`` of more than two dimensions is flattened to (batch, -1).
    """
    data = x._data if isinstance(x, Variable) else x
    if data.ndim is not None and data.ndim > 2:
        x = reshape(x, (data.shape[0], -1))
    y = matmul(x, matrix_transpose(W))
    return y if b is None else y + b


def mean_squared_error(x0, x1):
    """Mean of the squared differences."""
    d = x0 - x1
    return mean(d * d)


def _label_mask_kernel(xp: Any, x: Any, t: Any, ignore_label: int = -1) -> Any:
    """(N, C) boolean mask: True at [i, t[i]] for labels not equal to ignore_label."""
    if t.ndim != 1 or x.ndim != 2 or t.shape[0] != x.shape[0]:
        raise ValueError(f"expects x of shape (N, C) and t of shape (N,), got x {tuple(x.shape)} and t {tuple(t.shape)}")
    n, c = x.shape
    classes = xp.reshape(xp.arange(c, dtype=t.dtype), (1, c))
    return xp.logical_and(xp.reshape(t, (n, 1)) == classes, xp.reshape(t != ignore_label, (n, 1)))


def _valid_count_kernel(xp: Any, x: Any, t: Any, ignore_label: int = -1) -> Any:
    """Number of labels not equal to ignore_label (at least 1), in x's dtype."""
    count = xp.sum(xp.astype(t != ignore_label, x.dtype))
    return xp.maximum(count, xp.ones_like(count))


LABEL_MASK = def_nograd(Op("softmax_cross_entropy_label_mask", _label_mask_kernel))
VALID_COUNT = def_nograd(Op("softmax_cross_entropy_valid_count", _valid_count_kernel))


def softmax_cross_entropy(x, t, normalize=True, ignore_label=-1, reduce="mean"):
    """Cross entropy between softmax(x) over axis 1 and integer labels ``t``.

    Labels equal to ``ignore_label`` contribute nothing. With ``reduce="mean"``
    the loss is averaged over non-ignored labels (``normalize=True``) or over the
    batch; ``reduce="no"`` returns per-example losses. Built from ops only, so it
    works on lazy and symbolic inputs too.
    """
    mask = apply(LABEL_MASK, (x, t), {"ignore_label": ignore_label})
    picked = where(mask, log_softmax(x, axis=1), 0.0)
    if reduce == "no":
        return -sum(picked, axis=1)
    if normalize:
        return -sum(picked) / apply(VALID_COUNT, (x, t), {"ignore_label": ignore_label})
    return -mean(sum(picked, axis=1))


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

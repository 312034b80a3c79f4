"""Neural-network functions: activations, softmax family, linear, losses."""

from __future__ import annotations

import builtins
import math
from typing import Any

from polygrad.core.function import Function
from polygrad.core.variable import Variable
from polygrad.ops import exp, log, matmul, matrix_transpose, max, mean, reshape, squeeze, sum, tanh, where
from polygrad.core.op import Op, def_nograd, defvjp
from polygrad.core.primitive import apply


def _log_softmax_kernel(xp: Any, x: Any, axis: int = -1) -> Any:
    s = x - xp.max(x, axis=axis, keepdims=True)
    return s - xp.log(xp.sum(xp.exp(s), axis=axis, keepdims=True))


def _softmax_kernel(xp: Any, x: Any, axis: int = -1) -> Any:
    e = xp.exp(x - xp.max(x, axis=axis, keepdims=True))
    return e / xp.sum(e, axis=axis, keepdims=True)


def _softplus_kernel(xp: Any, x: Any, beta: float = 1.0) -> Any:
    """log(1 + exp(beta x)) / beta, without overflow: max(bx, 0) + log1p(exp(-|bx|))."""
    bx = x * beta if beta != 1.0 else x
    y = xp.maximum(bx, xp.zeros_like(bx)) + xp.log1p(xp.exp(-xp.abs(bx)))
    return y / beta if beta != 1.0 else y


# erf is not in the standard. |x| < 0.5: its Maclaurin series (13 terms, error
# below 1e-16); elsewhere the Chebyshev-fitted erfc of Numerical Recipes
# (``erfcc``, relative error below 1.2e-7 in erfc, so |error| < 3e-8 in erf).
# The vjp is the exact derivative, 2/sqrt(pi) exp(-x^2), not the approximation's.
_ERF_SERIES = tuple((-1) ** n / (math.factorial(n) * (2 * n + 1)) for n in range(13))
_ERFC_FIT = (-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807,
             -1.13520398, 1.48851587, -0.82215223, 0.17087277)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _erf_kernel(xp: Any, x: Any) -> Any:
    a = xp.abs(x)
    small = a < 0.5
    xs = xp.where(small, x, xp.zeros_like(x))  # keeps the series finite where it is not used
    z = xs * xs
    series = _ERF_SERIES[-1]
    for c in _ERF_SERIES[-2::-1]:
        series = series * z + c
    t = 1.0 / (1.0 + 0.5 * a)
    poly = _ERFC_FIT[-1]
    for c in _ERFC_FIT[-2::-1]:
        poly = poly * t + c
    erfc = t * xp.exp(poly - a * a)
    return xp.where(small, _TWO_OVER_SQRT_PI * xs * series, xp.sign(x) * (1.0 - erfc))


# ---------------------------------------------------------------------------
# Activations (rows of the op table)
# ---------------------------------------------------------------------------
RELU = defvjp(Op("relu", lambda xp, x: xp.maximum(x, xp.zeros((), dtype=x.dtype))),  # one pass; NaN stays NaN
              lambda o, g, ans, x: g * o.astype(ans > 0, g.dtype), saves="ans")  # relu'(0) = 0; a multiply, not a branchy where
SIGMOID = defvjp(Op("sigmoid", lambda xp, x: 0.5 * xp.tanh(0.5 * x) + 0.5),
                 lambda o, g, ans, x: g * ans * (1 - ans), saves="ans")
LOG_SOFTMAX = defvjp(Op("log_softmax", _log_softmax_kernel),
                     lambda o, g, ans, x, axis=-1: g - o.exp(ans) * o.sum(g, axis=axis, keepdims=True), saves="ans")
SOFTMAX = defvjp(Op("softmax", _softmax_kernel),
                 lambda o, g, ans, x, axis=-1: ans * (g - o.sum(g * ans, axis=axis, keepdims=True)), saves="ans")


SOFTPLUS = defvjp(Op("softplus", _softplus_kernel),  # d/dx = sigmoid(beta x), written with tanh
                  lambda o, g, ans, x, beta=1.0: g * (0.5 * o.tanh((0.5 * beta) * x) + 0.5), saves="x")
ERF = defvjp(Op("erf", _erf_kernel), lambda o, g, ans, x: g * (_TWO_OVER_SQRT_PI * o.exp(-(x * x))), saves="x")


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


def softplus(x, beta=1.0):
    """``log(1 + exp(beta x)) / beta``, computed without overflow; its gradient is ``sigmoid(beta x)``."""
    return apply(SOFTPLUS, (x,), {"beta": float(beta)} if beta != 1.0 else None)


def erf(x):
    """The error function (to about 3e-8, see ``_erf_kernel``); its gradient is the exact ``2/sqrt(pi) exp(-x^2)``."""
    return apply(ERF, (x,))


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
    from polygrad.ops.nn_ops import linear_op

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
        return sum(loss) / apply(VALID_COUNT, (x, t), {"ignore_label": -1})
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

"""Optimizer hooks (Chainer's ``chainer.optimizer_hooks``): callables
``hook(optimizer)`` registered with ``optimizer.add_hook(hook)`` (or, with
``call_for_each_param = True``, ``hook(optimizer, param)``: see ``Optimizer.add_hook``).

Both hooks here run before the update rules (``timing = "pre"``) and change
only the gradients, which they rebind (never write in place: a gradient array
may be shared by several parameters, or be a read-only broadcast view). They
compute with the gradients' own backends and never force a lazy array.

>>> from polygrad import optimizers, optimizer_hooks
>>> import polygrad.links as L
>>> opt = optimizers.SGD(lr=0.1).setup(L.Linear(3, 2))
>>> opt.add_hook(optimizer_hooks.WeightDecay(1e-4))
>>> opt.add_hook(optimizer_hooks.GradientClipping(5.0))
"""

from __future__ import annotations

from typing import Any

from polygrad.core.dispatch import backend_of_type
from polygrad.optimizers import Hyperparameter, params_with_grad as _params_with_grad

__all__ = ["WeightDecay", "GradientClipping"]


def _scaled_norm(xp: Any, g: Any) -> tuple[Any, Any]:
    """``(m, s)`` with ``m = max |g|`` and ``s = sum |g / m|**2``, so that the L2 norm of ``g``
    is ``m * sqrt(s)``, real, in at least float32. Dividing by the largest magnitude first keeps
    the squares in range: float16 squares overflow at 300 and float32 ones at 2e19, which made
    the norm inf, the scale 0, and the update was silently skipped."""
    acc = xp.result_type(xp.finfo(g.dtype).dtype, xp.float32)
    if 0 in tuple(g.shape):  # no elements: norm 0 (max has no identity)
        zero = xp.zeros((), dtype=acc)
        return zero, zero
    a = xp.astype(g, xp.result_type(g.dtype, acc), copy=False)
    m = xp.max(xp.abs(a)) if a.ndim else xp.abs(a)
    m = xp.astype(m, acc, copy=False)
    q = a / xp.where(m > 0, m, xp.ones_like(m))  # all zeros: divide by 1, s = 0
    parts = (xp.real(q), xp.imag(q)) if xp.isdtype(q.dtype, "complex floating") else (q,)
    total = xp.sum(parts[0] * parts[0])
    for part in parts[1:]:
        total = total + xp.sum(part * part)
    return m, total


def _merged(xp: Any, a: tuple[Any, Any], b: tuple[Any, Any]) -> tuple[Any, Any]:
    """The ``(m, s)`` of two ``(m, s)`` pairs of :func:`_scaled_norm` together."""
    m = xp.maximum(a[0], b[0])
    one = xp.where(m > 0, m, xp.ones_like(m))
    return m, a[1] * (a[0] / one) ** 2 + b[1] * (b[0] / one) ** 2


class WeightDecay:
    """L2 regularization: ``grad += rate * param`` for every parameter.

    :param rate: the coefficient of the weight decay.
    """

    name = "WeightDecay"
    timing = "pre"
    rate = Hyperparameter()

    def __init__(self, rate: float) -> None:
        self.rate = rate

    def __call__(self, optimizer: Any) -> None:
        rate = self.rate
        for p in _params_with_grad(optimizer):
            p.grad = p.grad + rate * p.data


class GradientClipping:
    """Rescale the gradients so that their global L2 norm is at most ``threshold``.

    The norm is taken over every parameter's gradient together (``sqrt(sum |g|**2)``,
    in float32 at least, each gradient divided by its largest magnitude before it is
    squared, so neither float16 nor float32 squares overflow); when it exceeds
    ``threshold`` each gradient is multiplied by ``threshold / norm``, a real factor
    cast to the gradient's (real) precision. The factor is computed as an array, so
    no value is read back from the device. ``threshold=float("inf")`` never clips
    (PyTorch's ``max_norm=inf`` idiom). A gradient holding inf or NaN has no finite
    norm: the gradients are left as they are (NaN stays NaN; an update by inf
    shows in the parameters, rather than an update silently skipped).

    :param threshold: the largest allowed L2 norm (> 0).
    """

    name = "GradientClipping"
    timing = "pre"
    threshold = Hyperparameter((lambda t: t > 0, "> 0"))

    def __init__(self, threshold: float) -> None:
        self.threshold = threshold

    def _scale(self, xp: Any, pair: tuple[Any, Any]) -> Any:
        """``threshold / norm`` where the norm exceeds the threshold, else 1. A threshold past the
        dtype's range is taken as its largest value (no finite norm exceeds either), so it never
        rounds to inf and makes the factor inf / inf."""
        m, s = pair
        norm = m * xp.sqrt(s)
        t = min(self.threshold, float(xp.finfo(norm.dtype).max))
        over = norm > t
        return xp.where(over, t / xp.where(over, norm, xp.ones_like(norm)), xp.ones_like(norm))

    def __call__(self, optimizer: Any) -> None:
        params = _params_with_grad(optimizer)
        if not params or self.threshold == float("inf"):
            return
        pairs: dict[Any, Any] = {}  # backend -> (m, s) of its gradients
        for p in params:
            g = p.grad
            b = backend_of_type(type(g))
            pair = _scaled_norm(b.xp, g)
            pairs[b] = pair if b not in pairs else _merged(b.xp, pairs[b], pair)
        backends = list(pairs)
        scales = {}
        if len(backends) == 1:
            scales[backends[0]] = self._scale(backends[0].xp, pairs[backends[0]])
        else:  # gradients on several backends: merge the partial norms on the first, share the factor
            from polygrad.backends import to_backend

            first = backends[0]
            xp, total = first.xp, pairs[first]
            for b in backends[1:]:
                moved = tuple(to_backend(v, first.name) for v in pairs[b])
                # in the wider of the two dtypes: a float64 norm past float32's range became inf in the
                # first backend's float32, the merge inf / inf NaN, and nothing was clipped
                wide = xp.result_type(total[0].dtype, moved[0].dtype)
                total = _merged(xp, *(tuple(xp.astype(v, wide, copy=False) for v in pair) for pair in (total, moved)))
            scale = self._scale(xp, total)
            for b in backends:
                scales[b] = scale if b is first else to_backend(scale, b.name)
        for p in params:
            g = p.grad
            b = backend_of_type(type(g))
            xp, scale = b.xp, scales[b]
            real = xp.finfo(g.dtype).dtype  # float32 for complex64
            if xp.finfo(real).bits < xp.finfo(scale.dtype).bits:
                # a narrower gradient (float16) is scaled in the sum's precision, then cast back:
                # the factor itself may be below float16's normal range (a norm above 16384)
                wide = xp.astype(g, xp.result_type(g.dtype, scale.dtype))
                p.grad = xp.astype(wide * scale, g.dtype)
                continue
            if scale.dtype != real:
                scale = xp.astype(scale, real)
            p.grad = g * scale

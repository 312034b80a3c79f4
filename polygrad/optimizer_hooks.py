"""Optimizer hooks (Chainer's ``chainer.optimizer_hooks``): callables
``hook(optimizer)`` registered with ``optimizer.add_hook(hook)``.

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
from polygrad.optimizers import Hyperparameter

__all__ = ["WeightDecay", "GradientClipping"]


def _params_with_grad(optimizer: Any) -> list:
    seen, out = set(), []
    for _, p in optimizer.target.namedparams(include_uninit=False):
        if id(p) not in seen and p.grad is not None:
            seen.add(id(p))
            out.append(p)
    return out


def _squared_norm(xp: Any, g: Any) -> Any:
    """``sum(|g|**2)``, real, accumulated in at least float32: float16 squares overflow
    (300**2 * 2 > 65504), which made the scale 0 and silently skipped the update."""
    acc = xp.result_type(xp.finfo(g.dtype).dtype, xp.float32)
    parts = (xp.real(g), xp.imag(g)) if xp.isdtype(g.dtype, "complex floating") else (g,)
    total = None
    for part in parts:
        a = xp.astype(part, acc, copy=False)
        s = xp.sum(a * a)
        total = s if total is None else total + s
    return total


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
    summed in float32 at least, so float16 squares do not overflow); when it exceeds
    ``threshold`` each gradient is multiplied by ``threshold / norm``, a real factor
    cast to the gradient's (real) precision. The
    factor is computed as an array (``threshold / max(norm, threshold)``), so
    no value is read back from the device.

    :param threshold: the largest allowed L2 norm (> 0).
    """

    name = "GradientClipping"
    timing = "pre"
    threshold = Hyperparameter((lambda t: t > 0, "> 0"))

    def __init__(self, threshold: float) -> None:
        self.threshold = threshold

    def _scale(self, xp: Any, sqsum: Any) -> Any:
        """``threshold / max(norm, threshold)``: 1 when the norm is within the threshold."""
        return self.threshold / xp.maximum(xp.sqrt(sqsum), xp.asarray(self.threshold, dtype=sqsum.dtype))

    def __call__(self, optimizer: Any) -> None:
        params = _params_with_grad(optimizer)
        if not params:
            return
        sums: dict[Any, Any] = {}  # backend -> sum of squares of its gradients
        for p in params:
            g = p.grad
            b = backend_of_type(type(g))
            s = _squared_norm(b.xp, g)
            sums[b] = s if b not in sums else sums[b] + s
        backends = list(sums)
        scales = {}
        if len(backends) == 1:
            scales[backends[0]] = self._scale(backends[0].xp, sums[backends[0]])
        else:  # gradients on several backends: add the partial sums on the first, share the factor
            from polygrad.backends import to_backend

            first = backends[0]
            total = sums[first]
            for b in backends[1:]:
                total = total + first.xp.astype(to_backend(sums[b], first.name), total.dtype)
            scale = self._scale(first.xp, total)
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

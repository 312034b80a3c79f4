"""PyTorch 0.x's optimizer interface over polygrad's optimizers: ``SGD(params, lr)``,
``Adam(params, ...)``, ``zero_grad()``, ``step()``.

The update rules are :mod:`polygrad.optimizers`' (Chainer's); this module only
gives them PyTorch's shape, so that a PyTorch 0.x training loop runs unchanged::

    optimizer = pg.optim.SGD([w, b], lr=0.1)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

A step is all or nothing, as every polygrad optimizer update. As in PyTorch,
``zero_grad()`` zeroes only the gradients that exist and ``step()`` skips a
parameter whose gradient is None (``pg.optimizers`` follows Chainer: such a
parameter is updated as if its gradient were zero).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from polygrad import optimizers
from polygrad.core.variable import Variable
from polygrad.optimizer_hooks import WeightDecay

__all__ = ["Optimizer", "SGD", "Adam"]


class _Params:
    """The parameters given to a PyTorch-style optimizer, as the link a polygrad optimizer updates."""

    def __init__(self, params: Iterable[Variable]) -> None:
        self.params = list(params)
        for k, p in enumerate(self.params):
            if not isinstance(p, Variable):
                raise TypeError(f"polygrad.optim: parameter {k} is a {type(p).__name__}, not a Variable")

    def namedparams(self, include_uninit: bool = True) -> Iterable[tuple[str, Variable]]:
        for k, p in enumerate(self.params):
            if include_uninit or p.data is not None:
                yield f"/{k}", p

    def cleargrads(self) -> None:
        for p in self.params:
            p.cleargrad()


class Optimizer:
    """A polygrad optimizer behind PyTorch 0.x's ``zero_grad()`` / ``step(closure=None)``."""

    def __init__(self, params: Iterable[Variable], rule: optimizers.GradientMethod, weight_decay: float = 0.0) -> None:
        self._params = _Params(params)
        self._rule = rule.setup(self._params)
        self._rule.zero_missing_grads = False  # PyTorch's step skips a parameter without gradient
        if weight_decay:
            self._rule.add_hook(WeightDecay(weight_decay))

    @property
    def params(self) -> list:
        return self._params.params

    def zero_grad(self) -> None:
        """Zero the gradients that exist (PyTorch 0.x: a parameter without one keeps None,
        and ``step()`` leaves it alone)."""
        for p in self.params:
            if p.grad is not None:
                p.zerograd()

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update the parameters that have a gradient; with ``closure``, call it first
        (it recomputes the loss and runs backward) and return its result."""
        loss = closure() if closure is not None else None
        self._rule.update()
        return loss


class SGD(Optimizer):
    """``torch.optim.SGD(params, lr, momentum=0, weight_decay=0)``."""

    def __init__(self, params: Iterable[Variable], lr: float, momentum: float = 0.0, weight_decay: float = 0.0) -> None:
        rule = optimizers.MomentumSGD(lr=lr, momentum=momentum) if momentum else optimizers.SGD(lr=lr)
        super().__init__(params, rule, weight_decay)


class Adam(Optimizer):
    """``torch.optim.Adam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0)``."""

    def __init__(self, params: Iterable[Variable], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0) -> None:
        super().__init__(params, optimizers.Adam(alpha=lr, beta1=betas[0], beta2=betas[1], eps=eps), weight_decay)

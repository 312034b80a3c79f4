"""PyTorch 0.x's optimizer interface over polygrad's optimizers: ``SGD(params, lr)``,
``Adam(params, ...)``, ``zero_grad()``, ``step()``.

The update rules are :mod:`polygrad.optimizers`' (Chainer's), except SGD's momentum,
which is PyTorch's (they differ once ``lr`` changes); this module gives them
PyTorch's shape, so that a PyTorch 0.x training loop runs unchanged::

    optimizer = pg.optim.SGD([w, b], lr=0.1)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

A step is all or nothing, as every polygrad optimizer update. The hyperparameters
are PyTorch's one parameter group, ``optimizer.param_groups[0]`` (``group["lr"] =
0.01`` changes the learning rate); ``state_dict()`` / ``load_state_dict(d)``
checkpoint the state by parameter position, as PyTorch's do, and
``pg.serializers.save_npz`` / ``load_npz`` take these optimizers too. As in PyTorch,
``zero_grad()`` zeroes only the gradients that exist and ``step()`` skips a
parameter whose gradient is None (``pg.optimizers`` follows Chainer: such a
parameter is updated as if its gradient were zero).
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any, Callable, Iterable, Iterator

from polygrad import optimizers
from polygrad.core.dispatch import backend_of_type
from polygrad.core.variable import Variable
from polygrad.optimizer_hooks import WeightDecay

__all__ = ["Optimizer", "SGD", "Adam"]


class _Params:
    """The parameters given to a PyTorch-style optimizer, as the link a polygrad optimizer updates."""

    def __init__(self, params: Iterable[Variable]) -> None:
        # The link behind ``model.params()``: its running statistics are persisted with the
        # parameters on a lazy backend, and recovered after a failed step (see optimizers).
        self._link = getattr(params, "link", None)
        self.params = list(params)
        for k, p in enumerate(self.params):
            if isinstance(p, dict):
                raise TypeError(
                    f"polygrad.optim: parameter {k} is a dict: parameter groups are not supported; pass one "
                    f"list of Variables (one optimizer per group of hyperparameters)"
                )
            if not isinstance(p, Variable):
                raise TypeError(f"polygrad.optim: parameter {k} is a {type(p).__name__}, not a Variable")

    def namedparams(self, include_uninit: bool = True) -> Iterable[tuple[str, Variable]]:
        for k, p in enumerate(self.params):
            if include_uninit or p.data is not None:
                yield f"/{k}", p

    def cleargrads(self) -> None:
        for p in self.params:
            p.cleargrad()

    def links(self) -> Iterable[Any]:
        return () if self._link is None else self._link.links()


class _ParamGroup(MutableMapping):
    """PyTorch's ``param_groups[0]`` of a pg.optim optimizer: ``"params"`` and the hyperparameters
    under PyTorch's names, read from and written to the update rule and its hooks (so a value
    set here is checked and converted as any hyperparameter). Keys cannot be added or removed."""

    def __init__(self, optimizer: "Optimizer") -> None:
        self._optimizer = optimizer

    def __getitem__(self, key: str) -> Any:
        if key == "params":
            return self._optimizer.params
        self._check(key)
        return self._optimizer._get_hyperparameter(key)

    def __setitem__(self, key: str, value: Any) -> None:
        if key == "params":
            raise KeyError("polygrad.optim: the parameters of an optimizer are fixed when it is made")
        self._check(key)
        self._optimizer._set_hyperparameter(key, value)

    def __delitem__(self, key: str) -> None:
        raise KeyError(f"polygrad.optim: the keys of a parameter group cannot be removed ({key!r})")

    def __iter__(self) -> Iterator[str]:
        return iter(("params",) + self._optimizer._hyperparameters)

    def __len__(self) -> int:
        return 1 + len(self._optimizer._hyperparameters)

    def __repr__(self) -> str:
        return repr(dict(self))

    def _check(self, key: str) -> None:
        names = self._optimizer._hyperparameters
        if key not in names:
            raise KeyError(
                f"polygrad.optim: {type(self._optimizer).__name__} has no hyperparameter {key!r} "
                f"(it has {', '.join(names)})"
            )


class Optimizer:
    """A polygrad optimizer behind PyTorch 0.x's ``zero_grad()`` / ``step(closure=None)``."""

    #: the hyperparameters under PyTorch's names, in its order
    _hyperparameters: tuple[str, ...] = ("weight_decay",)
    #: those held by an attribute of the rule -> its name (``weight_decay`` is the WeightDecay
    #: hook's rate, for every optimizer)
    _rule_attributes: dict[str, str] = {}

    def __init__(self, params: Iterable[Variable], rule: optimizers.GradientMethod, weight_decay: float = 0.0) -> None:
        self._params = _Params(params)
        self._rule = rule.setup(self._params)
        self._rule.zero_missing_grads = False  # PyTorch's step skips a parameter without gradient
        self._decay: WeightDecay | None = None
        self._set_hyperparameter("weight_decay", weight_decay)

    @property
    def params(self) -> list:
        return self._params.params

    @property
    def param_groups(self) -> list:
        """PyTorch's parameter groups: one, a live view of the hyperparameters
        (``optimizer.param_groups[0]["lr"] = 0.01``)."""
        return [_ParamGroup(self)]

    # -- hyperparameters under PyTorch's names --------------------------------------
    def _get_hyperparameter(self, key: str) -> Any:
        if key == "weight_decay":
            return 0.0 if self._decay is None else self._decay.rate
        return getattr(self._rule, self._rule_attributes[key])

    def _set_hyperparameter(self, key: str, value: Any) -> None:
        if key != "weight_decay":
            setattr(self._rule, self._rule_attributes[key], value)
            return
        decay = WeightDecay(value)  # checks and converts the value
        if self._decay is not None:
            self._rule.remove_hook(self._decay.name)
            self._decay = None
        if decay.rate != 0:
            self._rule.add_hook(decay)
            self._decay = decay

    # -- the training loop ----------------------------------------------------------
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

    # -- checkpoints ----------------------------------------------------------------
    def state_dict(self) -> dict:
        """PyTorch's form: ``{"state": {position: {"t": count, name: array, ...}},
        "param_groups": [{hyperparameters..., "params": [0, 1, ...]}]}``, where a parameter
        never updated has no entry. The arrays are the optimizer's own, as in PyTorch (its
        updates replace them rather than write into them): ``copy.deepcopy`` the dict to
        keep a snapshot whatever the rule."""
        rule = self._rule
        state = {}
        for k, p in enumerate(self.params):
            s = rule._state_of(p)
            if s is not None:
                state[k] = {"t": s["t"], **{name: s[name] for name in rule.state_names}}
        group = {key: self._get_hyperparameter(key) for key in self._hyperparameters}
        group["params"] = list(range(len(self.params)))
        return {"state": state, "param_groups": [group]}

    def load_state_dict(self, state_dict: dict) -> None:
        """Load what :meth:`state_dict` gave (this optimizer's or another's of the same kind
        over parameters of the same shapes): the hyperparameters and each parameter's state,
        which is put on the parameter's backend and dtype. All or nothing: everything is
        checked before anything changes."""
        where = f"polygrad.optim: {type(self).__name__}.load_state_dict"
        try:
            state, groups = state_dict["state"], list(state_dict["param_groups"])
        except (TypeError, KeyError) as exc:
            raise ValueError(f"{where}: expected a dict with 'state' and 'param_groups' (from state_dict()), got "
                             f"{type(state_dict).__name__}") from exc
        if len(groups) != 1:
            raise ValueError(f"{where}: pg.optim optimizers have one parameter group; the state dict has {len(groups)}")
        group, n = groups[0], len(self.params)
        if len(group.get("params", ())) != n:
            raise ValueError(f"{where}: the state dict's parameter group has {len(group.get('params', ()))} "
                             f"parameters, this optimizer {n}")
        names = set(self._hyperparameters)
        if set(group) - {"params"} != names:
            raise ValueError(f"{where}: the state dict's hyperparameters {sorted(set(group) - {'params'})} are not "
                             f"this optimizer's {sorted(names)} (the state dict of another kind of optimizer?)")
        from polygrad.backends import to_backend

        rule = self._rule
        new: dict[int, dict] = {}
        for k, entry in state.items():
            if not isinstance(k, int) or not 0 <= k < n:
                raise ValueError(f"{where}: state entry {k!r} is not the position of one of the {n} parameters")
            p = self.params[k]
            missing = [name for name in ("t",) + rule.state_names if name not in entry]
            if missing:
                raise ValueError(f"{where}: the state of parameter {k} lacks {missing} ({type(rule).__name__} keeps "
                                 f"{['t', *rule.state_names]})")
            if p.data is None:
                raise ValueError(f"{where}: parameter {k} is not initialized yet; run the model once first")
            backend = backend_of_type(type(p.data))
            arrays = {}
            for name in rule.state_names:
                a = entry[name]
                if tuple(getattr(a, "shape", ())) != tuple(p.data.shape):
                    raise ValueError(f"{where}: the state {name!r} of parameter {k} has shape "
                                     f"{tuple(getattr(a, 'shape', ()))}, the parameter {tuple(p.data.shape)}")
                arrays[name] = backend.xp.astype(to_backend(a, backend.name), p.data.dtype)  # a copy
            new[k] = {"t": int(entry["t"]), "backend": backend, **arrays}
        before = {key: self._get_hyperparameter(key) for key in self._hyperparameters}
        try:
            for key in self._hyperparameters:
                self._set_hyperparameter(key, group[key])
        except BaseException:
            for key, value in before.items():
                self._set_hyperparameter(key, value)
            raise
        for p in self.params:
            rule._put_state(p, None)
        for k, s in new.items():
            rule._put_state(self.params[k], s)

    def serialize(self, serializer: Any) -> None:
        """Save or load the state with ``pg.serializers.save_npz`` / ``load_npz``: ``t``,
        ``epoch`` and each parameter's under its position (``0/t``, ``0/m``, ...); the
        hyperparameters are not saved (as with ``pg.optimizers``)."""
        self._rule.serialize(serializer)


class _TorchMomentumSGD(optimizers.MomentumSGD):
    """PyTorch's momentum: ``v = momentum * v + grad; param -= lr * v``. It equals Chainer's
    rule while ``lr`` is constant; after a change of ``lr`` (a schedule through
    ``param_groups``) the velocity already gathered moves by the new one, as in PyTorch."""

    def step(self, data: Any, grad: Any, state: dict, t: int) -> tuple[Any, dict]:
        v = self.momentum * state["v"] + grad
        return self.lr * v, {"v": v}


class SGD(Optimizer):
    """``torch.optim.SGD(params, lr, momentum=0, weight_decay=0)``, with PyTorch's momentum
    rule (its velocity is a sum of gradients, scaled by ``lr`` at each step)."""

    _hyperparameters = ("lr", "momentum", "weight_decay")
    _rule_attributes = {"lr": "lr", "momentum": "momentum"}

    def __init__(self, params: Iterable[Variable], lr: float, momentum: float = 0.0, weight_decay: float = 0.0) -> None:
        rule = _TorchMomentumSGD(lr=lr, momentum=momentum) if momentum else optimizers.SGD(lr=lr)
        super().__init__(params, rule, weight_decay)

    def _get_hyperparameter(self, key: str) -> Any:
        if key == "momentum" and not isinstance(self._rule, optimizers.MomentumSGD):
            return 0.0
        return super()._get_hyperparameter(key)

    def _set_hyperparameter(self, key: str, value: Any) -> None:
        if key == "momentum" and not isinstance(self._rule, optimizers.MomentumSGD):
            if optimizers.MomentumSGD.momentum.convert(type(self).__name__, value) != 0:
                raise ValueError("polygrad.optim: this SGD was made with momentum=0 and keeps no velocity; make "
                                 "it with a momentum to change it later")
            return
        super()._set_hyperparameter(key, value)


class Adam(Optimizer):
    """``torch.optim.Adam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0)``."""

    _hyperparameters = ("lr", "betas", "eps", "weight_decay")
    _rule_attributes = {"lr": "alpha", "eps": "eps"}

    def __init__(self, params: Iterable[Variable], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0) -> None:
        super().__init__(params, optimizers.Adam(alpha=lr, beta1=betas[0], beta2=betas[1], eps=eps), weight_decay)

    def _get_hyperparameter(self, key: str) -> Any:
        if key == "betas":
            return (self._rule.beta1, self._rule.beta2)
        return super()._get_hyperparameter(key)

    def _set_hyperparameter(self, key: str, value: Any) -> None:
        if key != "betas":
            super()._set_hyperparameter(key, value)
            return
        beta1, beta2 = value
        rule = type(self._rule)
        beta1, beta2 = rule.beta1.convert(rule.__name__, beta1), rule.beta2.convert(rule.__name__, beta2)
        self._rule.beta1, self._rule.beta2 = beta1, beta2  # both checked before either changes

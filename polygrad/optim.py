"""PyTorch 0.x's optimizer interface over polygrad's optimizers: ``SGD(params, lr)``,
``Adam(params, ...)``, ``zero_grad()``, ``step()``.

The update rules are PyTorch's, built on :mod:`polygrad.optimizers`' (Chainer's) machinery:
SGD's momentum (with dampening and Nesterov), Adam's moving averages and ``eps`` (PyTorch 0.x's
place, before the bias correction), and ``weight_decay`` added to the gradient a step uses,
never written into ``.grad``; this module gives them PyTorch's shape, so that a PyTorch 0.x
training loop runs unchanged::

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

import warnings
from collections.abc import MutableMapping
from typing import Any, Callable, Iterable, Iterator

from polygrad import optimizers
from polygrad.core.dispatch import backend_of_type
from polygrad.core.integers import as_int
from polygrad.core.variable import Variable
from polygrad.optimizers import Hyperparameter

__all__ = ["Optimizer", "SGD", "Adam"]


class _Params:
    """The parameters given to a PyTorch-style optimizer, as the link a polygrad optimizer updates."""

    def __init__(self, params: Iterable[Variable]) -> None:
        # The link behind ``model.params()``: its running statistics are persisted with the
        # parameters on a lazy backend, and recovered after a failed step (see optimizers).
        self._link = getattr(params, "link", None)
        if isinstance(params, Variable):  # iterating it would give its rows, never updated
            raise TypeError("polygrad.optim: params must be an iterable of Variables (a list), got one Variable; "
                            "pass [w]")
        if callable(getattr(params, "namedparams", None)):  # a Link: "'Linear' object is not iterable", as PyTorch
            raise TypeError(f"polygrad.optim: params must be an iterable of Variables, got a {type(params).__name__} "
                            f"(a Link); pass model.params(), PyTorch's model.parameters()")
        if isinstance(params, (set, frozenset)):
            raise TypeError("polygrad.optim: params must be an ordered iterable of Variables, got a set: its "
                            "order, which state_dict() numbers the parameters by, changes from run to run")
        self.params = list(params)
        if not self.params:
            raise ValueError("polygrad.optim: the optimizer got an empty parameter list (model.params() is an "
                             "iterator: was it used up already?)")
        for k, p in enumerate(self.params):
            if isinstance(p, dict):
                raise TypeError(
                    f"polygrad.optim: parameter {k} is a dict: parameter groups are not supported; pass one "
                    f"list of Variables (one optimizer per group of hyperparameters)"
                )
            if not isinstance(p, Variable):
                raise TypeError(f"polygrad.optim: parameter {k} is a {type(p).__name__}, not a Variable")
            optimizers.require_leaf(p, f"polygrad.optim: parameter {k}")
        first: dict[int, int] = {}
        for k, p in enumerate(self.params):
            j = first.setdefault(id(p), k)
            # PyTorch (0.4 on) warns too. (model.params() names a parameter shared by two links, a
            # tied weight, once per path: that is no mistake of the caller's.)
            if j != k and self._link is None:
                warnings.warn(f"polygrad.optim: the parameter list names one parameter twice (parameters {j} and {k}): "
                              f"it is updated once per step, where PyTorch 0.x updated it once per entry; in future "
                              f"this will be an error: pass each parameter once", UserWarning, stacklevel=4)

    #: what the errors of a state that no longer fits its parameter advise (see optimizers)
    fresh_state_advice = "make a new optimizer over the parameters (which starts with fresh state)"

    def param_label(self, name: str) -> str:
        """How the rule's errors name the parameter at path ``name`` (``"/0"``): by its position in
        the list given, as the user knows it."""
        return f"parameter {name.lstrip('/')}"

    def namedparams(self, include_uninit: bool = True) -> Iterable[tuple[str, Variable]]:
        for k, p in enumerate(self.params):
            if include_uninit or p.data is not None:
                yield f"/{k}", p

    def cleargrads(self) -> None:
        for p in self.params:
            p.cleargrad()

    def links(self) -> Iterable[Any]:
        return () if self._link is None else self._link.links()


#: The hyperparameters of PyTorch's optimizers that pg.optim knows: a parameter group refuses
#: the ones its optimizer lacks (Adam's group["momentum"] = 0.9 would change nothing).
_KNOWN = frozenset({"lr", "momentum", "dampening", "weight_decay", "nesterov", "betas", "eps", "amsgrad"})


class _ParamGroup(MutableMapping):
    """PyTorch's ``param_groups[0]`` of a pg.optim optimizer: ``"params"`` and the hyperparameters
    under PyTorch's names, read from and written to the update rule and its hooks (so a value
    set here is checked and converted as any hyperparameter). As PyTorch's dict, it takes keys of
    its own (``group.setdefault("initial_lr", group["lr"])``, as PyTorch's lr schedulers do),
    kept by the optimizer and in its ``state_dict()``; the hyperparameters cannot be removed, and
    another optimizer's (``momentum`` for Adam) cannot be added."""

    def __init__(self, optimizer: "Optimizer") -> None:
        self._optimizer = optimizer

    def __getitem__(self, key: str) -> Any:
        if key == "params":
            return self._optimizer.params
        if key in self._optimizer._hyperparameters:
            return self._optimizer._get_hyperparameter(key)
        extra = self._optimizer._group_extras
        if key in extra:
            return extra[key]
        self._check(key)
        raise KeyError(key)

    def __setitem__(self, key: str, value: Any) -> None:
        if key == "params":
            raise KeyError("polygrad.optim: the parameters of an optimizer are fixed when it is made")
        if key in self._optimizer._hyperparameters:
            self._optimizer._set_hyperparameter(key, value)
            return
        self._check(key)
        self._optimizer._group_extras[key] = value

    def __delitem__(self, key: str) -> None:
        extra = self._optimizer._group_extras
        if key in extra:
            del extra[key]
            return
        if key == "params" or key in self._optimizer._hyperparameters:
            raise KeyError(f"polygrad.optim: the hyperparameters of a parameter group cannot be removed ({key!r})")
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(("params",) + self._optimizer._hyperparameters + tuple(self._optimizer._group_extras))

    def __len__(self) -> int:
        return 1 + len(self._optimizer._hyperparameters) + len(self._optimizer._group_extras)

    def __repr__(self) -> str:
        return repr(dict(self))

    def _check(self, key: Any) -> None:
        """A KeyError for a hyperparameter of another optimizer, which this one would ignore."""
        names = self._optimizer._hyperparameters
        if key in _KNOWN:
            raise KeyError(
                f"polygrad.optim: {type(self._optimizer).__name__} has no hyperparameter {key!r} "
                f"(it has {', '.join(names)})"
            )


class Optimizer:
    """A polygrad optimizer behind PyTorch 0.x's ``zero_grad()`` / ``step(closure=None)``."""

    #: the hyperparameters under PyTorch's names, in its order
    _hyperparameters: tuple[str, ...] = ("weight_decay",)
    #: the attribute of the rule that holds each
    _rule_attributes: dict[str, str] = {"weight_decay": "weight_decay"}
    #: hyperparameters a state dict of an earlier polygrad lacks -> the value it had
    _added_later: dict[str, Any] = {}

    def __init__(self, params: Iterable[Variable], rule: optimizers.GradientMethod) -> None:
        self._params = _Params(params)
        self._rule = rule.setup(self._params)
        self._rule.zero_missing_grads = False  # PyTorch's step skips a parameter without gradient

    @property
    def params(self) -> list:
        return self._params.params

    @property
    def _group_extras(self) -> dict:
        """The keys a user (an lr scheduler's ``initial_lr``) added to the parameter group."""
        return self.__dict__.setdefault("_extras", {})  # (an optimizer pickled before they existed has none)

    @property
    def param_groups(self) -> list:
        """PyTorch's parameter groups: one, a live view of the hyperparameters
        (``optimizer.param_groups[0]["lr"] = 0.01``)."""
        return [_ParamGroup(self)]

    # -- hyperparameters under PyTorch's names --------------------------------------
    def _get_hyperparameter(self, key: str) -> Any:
        return getattr(self._rule, self._rule_attributes[key])

    def _set_hyperparameter(self, key: str, value: Any) -> None:
        setattr(self._rule, self._rule_attributes[key], value)  # checked and converted by the rule

    # -- the training loop ----------------------------------------------------------
    def zero_grad(self, set_to_none: bool = False) -> None:
        """Zero the gradients that exist (PyTorch 0.x: a parameter without one keeps None,
        and ``step()`` leaves it alone); ``set_to_none=True`` sets them to None instead."""
        for p in self.params:
            if p.grad is not None:
                if set_to_none:
                    p.cleargrad()
                else:
                    p.zerograd()

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update the parameters that have a gradient; with ``closure``, call it first
        (it recomputes the loss and runs backward) and return its result."""
        loss = closure() if closure is not None else None
        self._rule.update()
        return loss

    # -- checkpoints ----------------------------------------------------------------
    def state_dict(self) -> dict:
        """PyTorch's layout with polygrad's names: ``{"state": {position: {"t": count, name:
        array, ...}}, "param_groups": [{hyperparameters..., "params": [0, 1, ...]}]}``, where a
        parameter never updated has no entry. The names are polygrad's (Chainer's): ``"t"`` is
        PyTorch's ``"step"``, SGD's ``"v"`` its ``"momentum_buffer"`` (absent until a step with a
        momentum), Adam's ``"m"``, ``"v"`` and ``"vhat"`` its ``"exp_avg"``, ``"exp_avg_sq"`` and
        ``"max_exp_avg_sq"`` (absent until a step with amsgrad); the group
        holds the keys added to ``param_groups[0]`` too. The arrays are the optimizer's own, as in
        PyTorch (its updates replace them rather than write into them): ``copy.deepcopy`` the
        dict to keep a snapshot whatever the rule."""
        rule = self._rule
        state = {}
        for k, p in enumerate(self.params):
            s = rule._state_of(p)
            if s is not None:  # (an array not made yet is left out, as PyTorch leaves out a momentum_buffer)
                state[k] = {"t": s["t"], **{name: s[name] for name in rule.state_names if s[name] is not None}}
        group = {key: self._get_hyperparameter(key) for key in self._hyperparameters}
        group.update(self._group_extras)
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
        ids = list(group.get("params", ()))
        if len(ids) != n:
            raise ValueError(f"{where}: the state dict's parameter group has {len(ids)} "
                             f"parameters, this optimizer {n}")
        if len(set(ids)) != n:
            raise ValueError(f"{where}: the state dict's parameter group names a parameter twice: {ids}")
        position = {i: k for k, i in enumerate(ids)}  # PyTorch's: the state is keyed by these ids
        names = set(self._hyperparameters)
        group = {**{k: v for k, v in self._added_later.items() if k not in group}, **group}  # an older state dict
        extras = {k: v for k, v in group.items() if k != "params" and k not in _KNOWN}  # (initial_lr)
        given = set(group) - {"params"} - set(extras)
        if given != names:
            raise ValueError(f"{where}: the state dict's hyperparameters {sorted(given)} are not this optimizer's "
                             f"{sorted(names)} (the state dict of another kind of optimizer?)")
        from polygrad.backends import to_backend
        from polygrad.serializers import check_kind, dtype_kind_of

        rule = self._rule
        new: dict[int, dict] = {}
        for i, entry in state.items():
            if i not in position:
                raise ValueError(f"{where}: state entry {i!r} is not one of the parameter group's ids {ids}")
            k = position[i]
            p = self.params[k]
            if p.data is None:
                raise ValueError(f"{where}: parameter {k} is not initialized yet; run the model once first")
            backend = backend_of_type(type(p.data))
            xp = backend.xp
            # (an array the rule makes at its first use may be missing: not made yet)
            missing = [name for name in ("t",) + rule.state_names
                       if name not in entry and name not in rule.made_at_first_use]
            if missing:
                raise ValueError(f"{where}: the state of parameter {k} lacks {missing} ({type(rule).__name__} keeps "
                                 f"{['t', *rule.state_names]})")
            arrays = {}
            for name in rule.state_names:
                if name not in entry:
                    arrays[name] = None
                    continue
                a = entry[name]
                if tuple(getattr(a, "shape", ())) != tuple(p.data.shape):
                    raise ValueError(f"{where}: the state {name!r} of parameter {k} has shape "
                                     f"{tuple(getattr(a, 'shape', ()))}, the parameter {tuple(p.data.shape)}")
                dtype = rule.state_dtype(name, p.data.dtype, xp)  # (float32 moments of a float16 Adam, vhat too)
                a = to_backend(a, backend.name)
                # (a complex velocity lost its imaginary part here, where load_npz refuses it)
                what = f"{where}: the state {name!r} of parameter {k}"
                check_kind(what, xp, a.dtype, dtype_kind_of(xp, dtype), dtype)
                arrays[name] = xp.astype(a, dtype)  # a copy
            new[k] = {"t": _count(entry["t"], f"{where}: the count 't' of parameter {k}"), "backend": backend,
                      "dtype": p.data.dtype, **arrays}
        before = {key: self._get_hyperparameter(key) for key in self._hyperparameters}
        try:
            for key in self._hyperparameters:
                self._set_hyperparameter(key, group[key])
        except BaseException:
            for key, value in before.items():
                self._set_hyperparameter(key, value)
            raise
        self._group_extras.clear()
        self._group_extras.update(extras)
        for p in self.params:
            rule._put_state(p, None)
        for k, s in new.items():
            rule._put_state(self.params[k], s)

    def serialize(self, serializer: Any) -> None:
        """Save or load the state with ``pg.serializers.save_npz`` / ``load_npz``: ``t``,
        ``epoch`` and each parameter's under its position (``0/t``, ``0/m``, ...); the
        hyperparameters are not saved (as with ``pg.optimizers``)."""
        self._rule.serialize(serializer)


def _count(t: Any, what: str) -> int:
    """An update count as an int: a non-negative integer (2.7 was 2, and a negative count gave
    Adam's bias correction the wrong sign)."""
    n = as_int(t)
    if n is None or n < 0:
        raise ValueError(f"{what} must be a non-negative integer, got {t!r}")
    return n


def _nesterov(value: Any) -> bool:
    """SGD's ``nesterov`` as a bool: a bool (NumPy's too), or 0 / 1; anything else is refused (the
    string 'no' was taken for True)."""
    return _TorchMomentumSGD.nesterov.convert(_SGDChecks.hyperparameter_owner, value)


def _non_negative(v: float) -> bool:
    return v >= 0.0  # (False for NaN)


class _Decayed:
    """PyTorch's ``weight_decay``: the rule steps with ``grad + weight_decay * param``, and the
    parameter's ``.grad`` is left as backward made it (a WeightDecay hook, Chainer's, writes
    it). PyTorch's checks on the hyperparameters: none may be negative or NaN."""

    weight_decay = Hyperparameter((_non_negative, "non-negative"))

    def _decayed(self, data: Any, grad: Any) -> Any:
        return grad + self.weight_decay * data if self.weight_decay else grad


class _SGDChecks(_Decayed):
    """What pg.optim.SGD's two rules (with and without a velocity) share: the name their errors
    give, and PyTorch's check of ``lr``."""

    hyperparameter_owner = "optim.SGD"
    lr = Hyperparameter((_non_negative, "non-negative"))


class _TorchSGD(_SGDChecks, optimizers.SGD):

    def __init__(self, lr: float, weight_decay: float) -> None:
        super().__init__(lr)
        self.weight_decay = weight_decay

    def step(self, data: Any, grad: Any, state: dict, t: int) -> tuple[Any, dict]:
        return super().step(data, self._decayed(data, grad), state, t)


class _TorchMomentumSGD(_SGDChecks, optimizers.MomentumSGD):
    """PyTorch's momentum: ``v = g`` at a parameter's first update with a momentum, then ``v =
    momentum * v + (1 - dampening) * g``; ``param -= lr * v`` (Nesterov: ``lr * (g + momentum *
    v)``). It equals Chainer's rule while ``lr`` is constant and dampening 0; after a change of
    ``lr`` (a schedule through ``param_groups``) the velocity already gathered moves by the new
    one, as in PyTorch. A step with momentum 0 leaves the velocity as it was: none (None, as
    PyTorch's missing ``momentum_buffer``) until a step with a momentum makes it."""

    momentum = Hyperparameter((_non_negative, "non-negative"))
    dampening = Hyperparameter()
    nesterov = optimizers.Flag()

    def __init__(self, lr: float, momentum: float, dampening: float, weight_decay: float, nesterov: bool) -> None:
        super().__init__(lr, momentum)
        self.dampening = dampening
        self.weight_decay = weight_decay
        self.nesterov = nesterov

    made_at_first_use = ("v",)  # the velocity

    def step(self, data: Any, grad: Any, state: dict, t: int) -> tuple[Any, dict]:
        g = self._decayed(data, grad)
        if not self.momentum:
            return self.lr * g, {}
        if state["v"] is None:  # (not t == 1: steps with momentum 0 may have come first; they made no velocity)
            # a copy: g may be the parameter's .grad, which the caller may write in place
            v = state["backend"].xp.asarray(g, copy=True)
        elif self.dampening:
            v = self.momentum * state["v"] + (1.0 - self.dampening) * g
        else:
            v = self.momentum * state["v"] + g
        return self.lr * (g + self.momentum * v if self.nesterov else v), {"v": v}


class SGD(Optimizer):
    """``torch.optim.SGD(params, lr, momentum=0, dampening=0, weight_decay=0, nesterov=False)``,
    with PyTorch's momentum rule (its velocity is a sum of gradients, scaled by ``lr`` at each
    step). Past ``momentum`` the arguments are taken by keyword only: PyTorch's fourth is
    ``dampening``, and an earlier polygrad's was ``weight_decay``."""

    _hyperparameters = ("lr", "momentum", "dampening", "weight_decay", "nesterov")
    _added_later = {"dampening": 0.0, "nesterov": False}
    _rule_attributes = {"lr": "lr", "momentum": "momentum", "dampening": "dampening", "weight_decay": "weight_decay",
                        "nesterov": "nesterov"}

    def __init__(self, params: Iterable[Variable], lr: float, momentum: float = 0.0, *args: Any,
                 dampening: float = 0.0, weight_decay: float = 0.0, nesterov: bool = False) -> None:
        if args:
            raise TypeError("polygrad.optim.SGD takes dampening, weight_decay and nesterov by keyword: given by "
                            "position, PyTorch's fourth argument is dampening and an earlier polygrad's weight_decay")
        nesterov = _nesterov(nesterov)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("polygrad.optim.SGD: Nesterov momentum requires a momentum and zero dampening")
        rule = (_TorchMomentumSGD(lr, momentum, dampening, weight_decay, nesterov) if momentum or dampening or nesterov
                else _TorchSGD(lr, weight_decay))
        super().__init__(params, rule)

    def _get_hyperparameter(self, key: str) -> Any:
        if key in ("momentum", "dampening", "nesterov") and not isinstance(self._rule, _TorchMomentumSGD):
            return False if key == "nesterov" else 0.0
        return super()._get_hyperparameter(key)

    def _set_hyperparameter(self, key: str, value: Any) -> None:
        if key == "nesterov":
            value = _nesterov(value)
            if value and (not isinstance(self._rule, _TorchMomentumSGD) or self._rule.dampening != 0):
                raise ValueError("polygrad.optim.SGD: Nesterov momentum requires a momentum and zero dampening")
            if isinstance(self._rule, _TorchMomentumSGD):
                self._rule.nesterov = bool(value)
            return
        if key in ("momentum", "dampening") and not isinstance(self._rule, _TorchMomentumSGD):
            if _TorchMomentumSGD.momentum.convert(type(self).__name__, value) != 0:
                raise ValueError(f"polygrad.optim: this SGD was made with momentum=0 and keeps no velocity; make "
                                 f"it with a momentum to change its {key} later")
            return
        super()._set_hyperparameter(key, value)


class _TorchAdam(_Decayed, optimizers.Adam):
    """PyTorch 0.x's Adam: ``m = beta1 m + (1 - beta1) g``, ``v = beta2 v + (1 - beta2) g^2`` (the
    same as Chainer's up to rounding, except where a beta is 0: Chainer's ``v + (1 - beta2)
    (g^2 - v)`` then cancels to 0), and ``param -= lr sqrt(1 - beta2^t) / (1 - beta1^t) m /
    (sqrt(v) + eps)``: eps is added before the bias correction, as in PyTorch 0.x (PyTorch
    1.x adds it after). With ``amsgrad`` the rule's AMSGrad is PyTorch 0.4's too: ``v`` there
    is the largest ``v`` so far (its ``max_exp_avg_sq``, from zeros, is polygrad's ``vhat``)."""

    hyperparameter_owner = "optim.Adam"
    alpha = Hyperparameter((_non_negative, "non-negative"), label="lr")
    eps = Hyperparameter((_non_negative, "non-negative"))

    def __init__(self, lr: float, betas: Any, eps: float, weight_decay: float, amsgrad: bool) -> None:
        beta1, beta2 = _betas(betas)
        super().__init__(alpha=lr, beta1=beta1, beta2=beta2, eps=eps, amsgrad=amsgrad)
        self.weight_decay = weight_decay

    @staticmethod
    def _average(old: Any, new: Any, beta: float) -> Any:
        return beta * old + (1.0 - beta) * new

    def step(self, data: Any, grad: Any, state: dict, t: int) -> tuple[Any, dict]:
        return super().step(data, self._decayed(data, grad), state, t)


def _betas(value: Any) -> tuple[Any, Any]:
    try:
        beta1, beta2 = value
    except (TypeError, ValueError):
        raise ValueError(f"polygrad.optim.Adam: betas must be a pair (beta1, beta2), got {value!r}") from None
    return beta1, beta2


class Adam(Optimizer):
    """``torch.optim.Adam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
    amsgrad=False)``, PyTorch 0.4's rule (see ``_TorchAdam``: eps before the bias correction),
    AMSGrad included."""

    _hyperparameters = ("lr", "betas", "eps", "weight_decay", "amsgrad")
    _rule_attributes = {"lr": "alpha", "eps": "eps", "weight_decay": "weight_decay", "amsgrad": "amsgrad"}
    _added_later = {"amsgrad": False}

    def __init__(self, params: Iterable[Variable], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0, amsgrad: bool = False) -> None:
        super().__init__(params, _TorchAdam(lr, betas, eps, weight_decay, amsgrad))

    def _get_hyperparameter(self, key: str) -> Any:
        if key == "betas":
            return (self._rule.beta1, self._rule.beta2)
        return super()._get_hyperparameter(key)

    def _set_hyperparameter(self, key: str, value: Any) -> None:
        if key != "betas":
            super()._set_hyperparameter(key, value)
            return
        beta1, beta2 = _betas(value)
        rule = type(self._rule)
        beta1, beta2 = rule.beta1.convert(rule.__name__, beta1), rule.beta2.convert(rule.__name__, beta2)
        self._rule.beta1, self._rule.beta2 = beta1, beta2  # both checked before either changes

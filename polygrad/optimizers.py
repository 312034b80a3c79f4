"""Optimizers: update a Link's parameters from their gradients (Chainer's API).

>>> import polygrad as pg
>>> import polygrad.links as L
>>> from polygrad import optimizers
>>> model = L.Linear(3, 2)
>>> opt = optimizers.Adam(alpha=1e-3)
>>> opt = opt.setup(model)
>>> x = pg.asarray([[1.0, 2.0, 3.0]], dtype="float32")
>>> loss = opt.update(lambda x: pg.sum(model(x) ** 2), x)   # cleargrads, loss, backward, update
>>> opt.t
1

``update()`` with no argument uses the gradients the parameters already hold.
Each update runs the ``pre`` hooks (:mod:`polygrad.optimizer_hooks`:
``WeightDecay``, ``GradientClipping``), then every parameter's update rule,
then the ``post`` hooks.

The update math is written once with the Array API namespace of each
parameter's backend, on its raw arrays: per-parameter state (momentum, Adam's
moments) lives in arrays of that backend and follows the parameter if it moves
to another backend. A parameter is updated the way ``param -= delta`` under
``no_backprop_mode`` updates it: in place where the backend allows it (a retained
graph that saved it then refuses to backward with stale values), otherwise by
rebinding ``param.data``; either way its version counter moves and its views
follow (see docs/inplace.md).

An update is all or nothing: every parameter's step is computed first (on a
lazy backend, computed for real and persisted, once per update, so the lazy
graph does not grow from step to step), and only then are parameters, states
and counts replaced. A failure (a bad gradient, a failing chunk, an overflow
under ``np.errstate(over="raise")``) raises naming the parameter and leaves
everything as it was, gradients included: where writing ``param -= delta`` in
place could raise, the new values are computed first too and then copied in. A
``post`` hook that fails raises after the step, with a note saying it was applied.
"""

from __future__ import annotations

import copy
import math
import warnings
import weakref
from collections import OrderedDict
from typing import Any, Callable, Iterator

from polygrad.core import config
from polygrad.core.dispatch import backend_of_type
from polygrad.core.variable import Variable
from polygrad.ops._dtypes import widened

__all__ = ["Optimizer", "GradientMethod", "SGD", "MomentumSGD", "Adam", "Hyperparameter", "Flag"]


class Hyperparameter:
    """A real-valued hyperparameter (``lr = Hyperparameter()`` in a class body): whatever
    real number is set, in the constructor or later (``opt.lr = schedule[k]``), is stored
    as a Python float, and anything else is refused with a TypeError naming it.

    The update rules mix hyperparameters into the arrays' arithmetic, where a Python
    float takes the array's dtype but a NumPy ``float64`` scalar (``np.logspace(...)[k]``)
    does not: it made float32 parameters (on dask) and their state float64.

    :param check: optional ``(predicate, what)``: the float must satisfy ``predicate``,
        else a ValueError says it must be ``what``.
    :param default: the value of one never set (an optimizer pickled before the
        hyperparameter existed); without it, reading one never set is an AttributeError.
    """

    _NONE = object()

    def __init__(self, check: tuple[Callable[[float], bool], str] | None = None, label: str | None = None,
                 default: Any = _NONE) -> None:
        self.check = check
        self.label = label  # the name errors give it (default: the attribute's)
        self.default = default

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, objtype: type | None = None) -> Any:
        if obj is None:
            return self
        try:
            return obj.__dict__[self.name]
        except KeyError:
            if self.default is not Hyperparameter._NONE:
                return self.default
            raise AttributeError(f"{type(obj).__name__!r} object has no attribute {self.name!r}") from None

    def __set__(self, obj: Any, value: Any) -> None:
        obj.__dict__[self.name] = self.convert(public_name(obj), value)

    def convert(self, owner: str, value: Any) -> float:
        """``value`` as the float this hyperparameter of ``owner`` (a class name, for the
        errors) would store, or the TypeError / ValueError that setting it raises. A bool is
        the number it is (``weight_decay=False``), as PyTorch takes it."""
        from polygrad.functions.nn import hyperparameter

        name = self.label or self.name
        value = float(hyperparameter(owner, name, value, "polygrad", allow_bool=True))
        if self.check is not None and not self.check[0](value):
            raise ValueError(f"polygrad: {owner}'s {name} must be {self.check[1]}, got {value!r}")
        return value


class Flag(Hyperparameter):
    """A hyperparameter that is on or off (Adam's ``amsgrad``): a bool (NumPy's too), or the
    integers 0 and 1, stored as a Python bool; anything else (the string ``"no"``, taken as
    True) is refused with a TypeError naming it."""

    def convert(self, owner: str, value: Any) -> bool:
        from polygrad.functions.nn import hyperparameter

        name = self.label or self.name
        try:
            n = hyperparameter(owner, name, value, "polygrad", allow_bool=True)
        except TypeError:
            n = None
        if type(n) is not int or n not in (0, 1):
            raise TypeError(f"polygrad: {owner}'s {name} must be a bool, got {value!r}")
        return bool(n)


class _Unsupported:
    """A hyperparameter of Chainer's class of the same name that polygrad's lacks: setting or
    reading it is an AttributeError naming it (set as a plain attribute, the rule silently
    ignored it: Chainer's ``opt.adabound = True`` trained plain Adam)."""

    def __init__(self, what: str) -> None:
        self.what = what

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def _refuse(self, obj: Any) -> AttributeError:
        return AttributeError(f"polygrad: {type(obj).__name__} has no hyperparameter {self.name!r}: {self.what}")

    def __get__(self, obj: Any, objtype: type | None = None) -> Any:
        if obj is None:
            return self
        raise self._refuse(obj)

    def __set__(self, obj: Any, value: Any) -> None:
        raise self._refuse(obj)


def public_name(obj: Any) -> str:
    """The name errors give the optimizer (or rule) ``obj``: the class a user made, where that is not
    its own (pg.optim's ``hyperparameter_owner``, ``"optim.Adam"``, whose rule is a private class)."""
    return getattr(type(obj), "hyperparameter_owner", None) or type(obj).__name__


def require_leaf(param: Variable, who: str) -> None:
    """The refusal of a parameter ``param`` (``who``: which, and whose) that is no leaf: backward keeps no
    gradient for it and an update would rebind a value its graph recomputes, so it never trained
    (pg.optimizers filled in a zero gradient; a second step raised about backward twice)."""
    node = param._node
    if node is not None:
        raise ValueError(f"{who} is not a leaf (it was computed by {node.label}): an optimizer updates leaves; "
                         f"register a leaf of its value, pg.Variable(x.data), or compute it under "
                         f"pg.no_backprop_mode()")


class Optimizer:
    """Base class of optimizers: holds the target link, the update count ``t``,
    the ``epoch`` and the hooks."""

    target: Any = None
    t: int = 0
    epoch: int = 0

    def setup(self, link: Any) -> "Optimizer":
        """Set ``link`` (a :class:`polygrad.Link`) as the target; returns self."""
        if not callable(getattr(link, "namedparams", None)):
            raise TypeError(f"polygrad: an optimizer's target must be a Link (with namedparams()), "
                            f"got {type(link).__name__}")
        self.target = link
        self.t = 0
        self.epoch = 0
        self._hooks: "OrderedDict[str, tuple[Callable, str]]" = OrderedDict()
        return self

    def _check_setup(self, what: str) -> None:
        if self.target is None:
            raise RuntimeError(f"polygrad: call {type(self).__name__}.setup(link) before {what}")

    def update(self, lossfun: Callable | None = None, *args: Any, **kwds: Any) -> Any:
        """Update the parameters once.

        With ``lossfun``: clear the gradients, compute ``loss = lossfun(*args,
        **kwds)``, run ``loss.backward()``, then update; returns the loss.
        Without: update from the gradients the parameters hold; returns None.
        """
        raise NotImplementedError

    def new_epoch(self) -> None:
        """Count the end of an epoch."""
        self.epoch += 1

    # -- hooks -------------------------------------------------------------------
    def add_hook(self, hook: Callable, name: str | None = None, timing: str = "auto") -> None:
        """Register ``hook(optimizer)``, called at each update; a hook with ``call_for_each_param =
        True`` (Chainer's per-parameter protocol) is called as ``hook(optimizer, param)`` once per
        parameter that has a gradient, the optimizer in the place of Chainer's ``param.update_rule``
        (polygrad keeps no rule object per parameter: the optimizer holds the rule and its
        hyperparameters). A hook changes a gradient by rebinding ``param.grad``, never by writing
        into its array (which may be shared, and which a failed update cannot put back).

        :param name: defaults to ``hook.name`` (or the function's name); unique per optimizer.
        :param timing: ``"pre"`` (before the update rules), ``"post"`` (after), or
            ``"auto"``: the hook's ``timing`` attribute, else ``"pre"``.
        """
        self._check_setup("add_hook")
        if not callable(hook):
            raise TypeError(f"polygrad: an optimizer hook must be callable, got {type(hook).__name__}")
        if timing == "auto":
            timing = getattr(hook, "timing", "pre")
        if timing not in ("pre", "post"):
            raise ValueError(f"polygrad: optimizer hook timing must be 'pre', 'post' or 'auto', got {timing!r}")
        if name is None:
            name = getattr(hook, "name", None) or getattr(hook, "__name__", None) or type(hook).__name__
        if name in self._hooks:
            raise KeyError(f"polygrad: the optimizer already has a hook named {name!r}")
        self._hooks[name] = (hook, timing)

    def remove_hook(self, name: str) -> None:
        """Unregister the hook registered under ``name``."""
        self._check_setup("remove_hook")
        if name not in self._hooks:
            raise KeyError(f"polygrad: the optimizer has no hook named {name!r}")
        del self._hooks[name]

    def call_hooks(self, timing: str = "pre") -> None:
        """Call the hooks registered for ``timing``, in registration order (see :meth:`add_hook`)."""
        for hook, t in list(self._hooks.values()):
            if t != timing:
                continue
            if getattr(hook, "call_for_each_param", False):
                for param in params_with_grad(self):
                    hook(self, param)
            else:
                hook(self)

    # -- serialization -------------------------------------------------------------
    def serialize(self, serializer: Any) -> None:
        """Save or load ``t`` and ``epoch`` (see :mod:`polygrad.serializers`)."""
        t = serializer("t", self.t)
        epoch = serializer("epoch", self.epoch)
        self.t, self.epoch = t, epoch


def params_with_grad(optimizer: Optimizer) -> list:
    """The initialized parameters of ``optimizer``'s target that have a gradient, each once (a
    parameter shared by two links too): what a hook changes."""
    seen, out = set(), []
    for _, p in optimizer.target.namedparams(include_uninit=False):
        if id(p) not in seen and p.grad is not None:
            seen.add(id(p))
            out.append(p)
    return out


def _on(value: Any, backend: Any) -> Any:
    """``value`` where it is an array of ``backend``, else None."""
    try:
        return value if value is not None and backend_of_type(type(value)) is backend else None
    except TypeError:
        return None


def _moved(value: Any, backend: Any) -> Any:
    """``value`` as an array of ``backend`` (moved there where it is another backend's)."""
    if value is None or _on(value, backend) is not None:
        return value
    from polygrad.backends import to_backend

    try:
        return to_backend(value, backend.name)
    except Exception:
        return None


def _first_computed(backend: Any, candidates: list, fallback: list) -> list:
    """For each position, the first of ``candidates`` (lists of values, None where there is
    none) that ``backend`` computes, computed; else ``fallback``'s. Each list is persisted in
    one pass; where that fails, the next list; the last one's values one by one (cheap:
    values replaced by a forward were computed before it)."""
    chosen: list = [None] * len(fallback)
    for k, values in enumerate(candidates):
        open_ = [i for i, c in enumerate(chosen) if c is None and values[i] is not None]
        for i in [i for i in open_ if _on(values[i], backend) is None]:  # another backend's (numpy): as it is
            chosen[i] = values[i]
        open_ = [i for i in open_ if chosen[i] is None]
        if not open_:
            continue
        try:
            done = backend.persist(tuple(values[i] for i in open_))
            if k == 0 and not _all_finite(backend, done):  # (statistics of a batch a NaN check refused)
                continue
        except Exception:
            if k < len(candidates) - 1:
                continue
            done = []
            for i in open_:
                try:
                    (one,) = backend.persist((values[i],))
                except Exception:
                    one = None
                done.append(one)
        for i, d in zip(open_, done):
            chosen[i] = d
    return [c if c is not None else f for c, f in zip(chosen, fallback)]


def _all_finite(backend: Any, arrays: Any) -> bool:
    """Whether every floating array of ``arrays`` (of ``backend``) is finite: one pass."""
    xp = backend.xp
    flags = [xp.all(xp.isfinite(a)) for a in arrays if xp.isdtype(a.dtype, ("real floating", "complex floating"))]
    return all(bool(f) for f in backend.materialize(tuple(flags))) if flags else True


def _set_persistents(values: list) -> None:
    """Set ``(link, name, value)`` persistent values where a link holds another, as the
    optimizer's own writes: not noted as replacing anything (see ``Link._note_replaced``)."""
    for link, name, value in values:
        if getattr(link, name, None) is not value:
            object.__setattr__(link, name, value)


class GradientMethod(Optimizer):
    """An optimizer that updates each parameter from its gradient by a rule.

    Subclasses set ``state_names`` and implement :meth:`step`, the rule without side
    effects (updates are then all or nothing), or Chainer's in-place ``update_one``.
    State belongs to the parameter object, as a Chainer ``Parameter``'s update rule
    and PyTorch's per-tensor state do: a dict with the rule's count ``"t"`` and one
    array per name in ``state_names``, each ``zeros_like(param.data)`` on the
    parameter's backend. A parameter that replaces another (a new head assigned
    to a link) starts with fresh state, and a layer whose path changes (a
    Sequential renumbered) keeps its own; paths (``"/l1/W"``) name the states
    only when they are saved and loaded.

    A parameter whose gradient is None is updated as if its gradient were zero
    (Chainer's ``reallocate_cleared_grads``) while ``zero_missing_grads`` is True;
    ``pg.optim`` sets it False, and such a parameter is then skipped, its state and
    count unchanged (PyTorch's rule).
    """

    state_names: tuple[str, ...] = ()
    #: the names of ``state_names`` the rule makes at its first use (PyTorch's momentum buffer, Adam's
    #: ``vhat``): None in a new state, and None where a saved or pickled state lacks them (one of an
    #: earlier polygrad, or of a rule that had not made them yet)
    made_at_first_use: tuple[str, ...] = ()
    zero_missing_grads: bool = True

    def state_dtype(self, name: str, dtype: Any, xp: Any) -> Any:
        """The dtype of the state array ``name`` of a parameter of ``dtype`` (on the namespace ``xp``):
        the parameter's. The one place a rule says it (Adam: float32 for a float16 parameter), read
        wherever a state array is made, loaded or cast along with its parameter (an array made at
        first use took the parameter's float16 there, where the rule made it float32)."""
        return dtype

    def _param_label(self, name: str) -> str:
        """How errors name the parameter at path ``name``: as the target names it for its user
        (pg.optim's position in the list given), else by its path."""
        label = getattr(self.target, "param_label", None)
        return label(name) if callable(label) else f"parameter {name!r}"

    def _fresh_state_advice(self) -> str:
        """What the errors of a state that no longer fits its parameter advise."""
        return getattr(self.target, "fresh_state_advice", None) or (
            "give the link a new parameter for it (which starts with fresh state), or set the optimizer up again")

    def setup(self, link: Any) -> "GradientMethod":
        super().setup(link)
        for _ in self._params():  # (a parameter that is no leaf is refused up front, as pg.optim does)
            pass
        self._states: dict[int, tuple[Any, dict[str, Any]]] = {}  # id(param) -> (weakref to it, its state)
        self._keep_buffers()
        return self

    def __getstate__(self) -> dict:
        """For pickle and ``copy.deepcopy``: the states as ``(param, state)`` pairs of the target's
        parameters, which are copied along (``_states`` is keyed by ``id`` and holds weak
        references: copied as they are, they pointed at the original parameters, and the copy
        went on with fresh state)."""
        d = dict(self.__dict__)
        d.pop("_kept_buffers", None)  # keyed by id: a copy starts from its own next update
        if "_states" in d:
            seen, pairs = set(), []
            for _, param in self.target.namedparams(include_uninit=True):
                state = self._state_of(param)
                if state is not None and id(param) not in seen:
                    seen.add(id(param))
                    pairs.append((param, state))
            d["_states"] = pairs
        return d

    def __setstate__(self, d: dict) -> None:
        d = dict(d)
        pairs = d.pop("_states", None)
        self.__dict__.update(d)
        if pairs is not None:
            self._states = {}
            for param, state in pairs:
                self._put_state(param, state)

    def update(self, lossfun: Callable | None = None, *args: Any, **kwds: Any) -> Any:
        """Update every parameter, all or nothing: each parameter's step is computed
        (and, on a lazy backend, computed for real) before any parameter, state or
        count changes; a failure raises naming the parameter and changes nothing."""
        self._check_setup("update")
        if lossfun is None:
            return self._update(None)
        # The forward rebinds persistent values (BatchNormalization's running statistics); a
        # failure anywhere in this step puts them back, so the model is as it was (on a lazy
        # backend the new statistics would otherwise read the failing chunk for good).
        persistents, t = self._persistents(), self.t
        try:
            self.target.cleargrads()
            loss = lossfun(*args, **kwds)
            loss.backward()
            return self._update(loss, recover=False)
        except BaseException:
            if self.t == t:  # (a failure after the parameters changed, in a post hook, keeps the step's statistics)
                _set_persistents(persistents)
            raise

    def _update(self, loss: Any, recover: bool = True) -> Any:
        params = list(self._params())
        if type(self).step is GradientMethod.step:  # a rule written as update_one: in place, one by one
            return self._update_in_place(params, loss, recover)
        grads = [p._grad for _, p in params]  # the pre hooks rebind .grad: put them back on failure
        try:
            if self.zero_missing_grads:
                self.reallocate_cleared_grads()
            self.call_hooks("pre")
            plan = [self._plan(name, param) for name, param in params if param.grad is not None]
            buffers = self._materialize(plan, self._lazy_buffers())
            _compute_where_writes_raise(plan, type(self).__name__)
        except BaseException as exc:
            for (_, p), g in zip(params, grads):
                p._grad = g
            if recover and isinstance(exc, Exception):  # (after Ctrl-C nothing was shown bad: values stay)
                self._recover_buffers()
            raise
        done: list = []  # the parameters written, for the note of a failure that cannot happen (see _commit)
        try:
            for name, param, state, delta, new_state in plan:
                self._commit(param, state, delta, new_state)
                done.append(name)
        except BaseException as exc:
            _note(exc, f"polygrad: {type(self).__name__}.update: half applied: parameters {done} were stepped, "
                       f"{name!r} failed while being written (its array may hold the new values: its version moved), "
                       f"the others were not (and the count t stays {self.t})")
            raise
        self.t += 1  # (counts move once every parameter is written)
        _set_persistents(buffers)
        self._keep_buffers()
        self._forget_dead(len(params))
        self._call_post_hooks()
        return loss

    def _call_post_hooks(self) -> None:
        """The ``post`` hooks, after the step: a failing one says that the step stays applied."""
        try:
            self.call_hooks("post")
        except BaseException as exc:
            _note(exc, f"polygrad: {type(self).__name__}.update: a post hook failed after the step was applied to "
                       f"every parameter (the count t is now {self.t})")
            raise

    def _keep_buffers(self) -> None:
        """Remember the persistent values as they are now, known good (at setup, after an update)."""
        self._kept_buffers = {(id(link), name): value for link, name, value in self._persistents()}

    def _recover_buffers(self) -> None:
        """After an update that failed before changing anything, lazy persistent values (running
        statistics) that may read a failing chunk: each stays where it computes (statistics of
        good chunks, a value loaded since the last update); else it goes back to the value it
        replaced (before the forward that fed this update) where that computes, else to its
        value at the last good update. The values are persisted in one pass per backend (and
        count as failing where one is not finite: a NaN check that refused the update), then
        (where that fails) the values they replaced, one by one only where their pass fails
        too."""
        kept = getattr(self, "_kept_buffers", {})
        todo: dict[Any, list] = {}
        for link, name, value, backend in self._lazy_buffers():
            if kept.get((id(link), name)) is not value:
                todo.setdefault(backend, []).append((link, name, value))
        for backend, items in todo.items():
            candidates = [[value for _, _, value in items],
                          [link.__dict__.get("_replaced", {}).get(name) for link, name, _ in items]]
            last_good = [_moved(kept.get((id(link), name)), backend) for link, name, _ in items]
            chosen = _first_computed(backend, candidates, last_good)
            _set_persistents([(link, name, v) for (link, name, _), v in zip(items, chosen) if v is not None])

    def _update_in_place(self, params: list, loss: Any, recover: bool = True) -> Any:
        """Chainer's form: each rule's ``update_one`` changes its parameter, one after the other (``t``
        counts before the rules run, as in Chainer). On a lazy backend (dask) the new arrays are
        computed by one persist per backend at the end. Where anything fails up to it, every
        parameter and state that can be is put back (see :meth:`_undo_in_place`), with the
        gradients, ``t`` and the running statistics: the update is all or nothing, as with ``step``
        (the parameters kept graphs that read a failing chunk, and every later read raised its
        error), but for what a rule may have written in place (numpy), which cannot be undone and
        is named in a note (write ``step`` instead)."""
        grads = [p._grad for _, p in params]  # the pre hooks rebind .grad
        t = self.t
        # (name, param, state, its array before its rule, and what puts back that array and the state) per rule started
        ran: list = []
        returned = 0  # how many of those rules returned
        try:
            if self.zero_missing_grads:
                self.reallocate_cleared_grads()
            self.call_hooks("pre")
            self.t += 1
            for name, param in params:
                if param.grad is None:
                    continue
                state = self._state(name, param)
                ran.append((name, param, state, param._data, _undo_point(param._data),
                            {k: _undo_point(v) if k in self.state_names else v for k, v in state.items()}))
                state["t"] += 1
                self.update_one(param, state)
                returned += 1
            self._persist_in_place(ran)
        except BaseException as exc:
            self.t = t
            self._undo_in_place(ran, returned, exc)
            for (_, p), g in zip(params, grads):  # (every one: a retry applies the pre hooks once, WeightDecay too)
                p._grad = g
            if recover and isinstance(exc, Exception):  # (after Ctrl-C nothing was shown bad: values stay)
                self._recover_buffers()
            raise
        for _, param, _, old, _, _ in ran:
            _count_update(param, old)
        self._keep_buffers()
        self._forget_dead(len(params))
        self._call_post_hooks()
        return loss

    def _persist_in_place(self, ran: list) -> None:
        """After the ``update_one`` rules ``ran`` (see :meth:`_update_in_place`), persist the new
        arrays of the parameters and states of each lazy backend, with the running statistics, in
        one pass per backend (so lazy graphs do not grow step after step); store them once every
        pass succeeded."""
        buffers = self._lazy_buffers()
        lazy: dict[Any, list] = {backend: [] for backend in {b[3] for b in buffers}}
        for _, param, state, _, _, _ in ran:
            if state["backend"].lazy:
                lazy.setdefault(state["backend"], []).append((param, state))
        results, stored = [], []
        for backend, items in lazy.items():
            arrays = [a for param, state in items for a in (param.data, *(state[k] for k in self.state_names))]
            done, persisted = _persist(backend, arrays, buffers)
            results.append((items, list(done)))
            stored.extend(persisted)
        for items, done in results:
            done = iter(done)
            for param, state in items:
                param.data = next(done)
                for k in self.state_names:
                    state[k] = next(done)
        _set_persistents(stored)

    def _undo_in_place(self, ran: list, returned: int, exc: BaseException) -> None:
        """After a failed update in Chainer's form (``ran``, ``returned``: see :meth:`_update_in_place`),
        put back each parameter's array and state, but where its rule left an array in place on a
        backend that writes in place (numpy: ``param.data -= delta``, ``state["m"] += g``): what it
        wrote there cannot be undone, so that parameter stays as its rule left it, counted as an
        update (its version moves, its ``state["t"]`` stays), and a note on ``exc`` names it and the
        arrays it kept. A rule that only rebinds (docs/training.md's SignSGD) is undone everywhere;
        on dask even ``param.data[...] = v``, which changes the Array object (see :func:`_undo_point`)."""
        kept, failing = [], None
        for k, (name, param, state, old, data_was, state_was) in enumerate(ran):
            left = (["data"] if _maybe_written(param._data, data_was) else []) + [
                f"state {n!r}" for n in self.state_names if _maybe_written(state.get(n), state_was.get(n))]
            if not left:
                param._data = data_was
                state.clear()
                state.update(state_was)
            elif k < returned:
                _count_update(param, old)
                kept.append((name, left))
            else:  # its rule failed: its count stays, and only a rebinding counts (it may have written nothing)
                _count_update(param, old, rebound_only=True)
                state["t"] = state_was["t"]
                failing = (name, left)
        if not kept and failing is None:
            return
        said = lambda name, left: f"{name!r} kept its {' and '.join(left)}"  # noqa: E731
        text = f"polygrad: {type(self).__name__}.update: "
        if kept:
            text += (f"half applied: update_one wrote parameters {[name for name, _ in kept]} in place, which cannot "
                     f"be undone ({'; '.join(said(*one) for one in kept)}), and they stay updated; ")
        if failing is not None:
            text += (f"{failing[0]!r} failed and may hold part of its update ({said(*failing)}, written in place or "
                     f"not); ")
        _note(exc, text + f"the other parameters are as they were, every gradient too (and the count t stays "
                          f"{self.t}); write the rule as step for updates that are all or nothing")

    def update_one(self, param: Variable, state: dict) -> None:
        """Chainer's in-place form of a rule: change ``param.data`` (and ``state``) from
        ``param.grad``. Prefer :meth:`step`, which makes updates all or nothing."""
        raise NotImplementedError(f"polygrad: {type(self).__name__} implements neither step nor update_one")

    def _plan(self, name: str, param: Variable) -> tuple:
        """``(name, param, state, delta, new state arrays)`` for one parameter, changing nothing."""
        grad = param.grad
        data = param.data
        if grad is None:
            raise RuntimeError(f"polygrad: {public_name(self)}: {self._param_label(name)} has no gradient")
        gb, pb = backend_of_type(type(grad)), backend_of_type(type(data))
        if gb is not pb or tuple(grad.shape) != tuple(data.shape) or grad.dtype != data.dtype:
            raise ValueError(
                f"polygrad: {public_name(self)} cannot update {self._param_label(name)} ({data.dtype} "
                f"{tuple(data.shape)} on {pb.name!r}) with a gradient of {grad.dtype} {tuple(grad.shape)} "
                f"on {gb.name!r}"
            )
        state = self._state(name, param)
        try:
            delta, new_state = self.step(data, grad, state, state["t"] + 1)
        except Exception as exc:
            raise type(exc)(f"polygrad: {public_name(self)} update of {self._param_label(name)} failed: {exc}") from exc
        shape = tuple(getattr(delta, "shape", ()))
        if shape != tuple(data.shape) and _broadcast(shape, tuple(data.shape)) != tuple(data.shape):
            # (found here, before anything is written: `data -= delta` failed at the commit, or rebound a bigger array)
            raise ValueError(f"polygrad: {public_name(self)} update of {self._param_label(name)} failed: its rule's "
                             f"step is of shape {shape}, the parameter {tuple(data.shape)}")
        return name, param, state, delta, new_state

    def _persistents(self) -> list:
        """``(link, name, value)`` for every persistent value of the target's links (none for a
        target that is no Link, as torch-style optim's)."""
        links = getattr(self.target, "links", None)
        return [(link, name, getattr(link, name, None))
                for link in (links() if links is not None else ()) for name in link._persistents()]

    def _lazy_buffers(self) -> list:
        """``(link, name, value, backend)`` for the target's persistent arrays (running statistics)
        on lazy backends: persisted with the parameters at each update, so that their graphs do
        not grow step after step (each step's statistics reach back to every earlier batch)."""
        out = []
        for link, name, value in self._persistents():
            try:
                backend = backend_of_type(type(value))
            except TypeError:
                continue
            if backend.lazy:
                out.append((link, name, value, backend))
        return out

    @staticmethod
    def _materialize(plan: list, buffers: list = ()) -> list:
        """On lazy backends, compute every new parameter and state now (one pass per backend),
        so that a failure raises here, before anything is replaced; the persistent ``buffers``
        (see :meth:`_lazy_buffers`) in the same pass. Returns ``(link, name, value)`` to store."""
        lazy: dict[Any, list] = {}
        for entry in plan:
            backend = entry[2]["backend"]
            if backend.lazy:
                lazy.setdefault(backend, []).append(entry)
        for backend in {b[3] for b in buffers}:
            lazy.setdefault(backend, [])
        stored = []
        for backend, entries in lazy.items():
            arrays = []
            for _, param, _, delta, new_state in entries:
                arrays.append(_stepped(backend.xp, param.data, delta))
                arrays.extend(new_state.values())
            done, persisted = _persist(backend, arrays, buffers)
            for k, (name, param, state, delta, new_state) in enumerate(entries):
                new_data = next(done)
                for key in new_state:
                    new_state[key] = next(done)
                entries[k][4]["__data__"] = new_data
            stored.extend(persisted)
        return stored

    @staticmethod
    def _commit(param: Variable, state: dict, delta: Any, new_state: dict) -> None:
        """Write one parameter's step, by operations that cannot fail: its new values were computed
        already where computing them can raise (see :func:`_compute_where_writes_raise`)."""
        new_data = new_state.pop("__data__", None)
        quiet = new_state.pop("__quiet__", None)
        if new_data is not None:  # computed already (and, on a lazy backend, persisted)
            _assign(param, new_data)
        elif quiet is not None:  # checked already: written in place with the error state off
            with quiet(over="ignore", invalid="ignore"):
                _sub_from(param, delta)
        else:
            _sub_from(param, delta)
        state.update(new_state)
        state["t"] += 1

    def step(self, data: Any, grad: Any, state: dict, t: int) -> tuple[Any, dict]:
        """The rule, without side effects: ``(delta, new state arrays)`` for one parameter,
        where the new parameter is ``data - delta`` and ``t`` is the rule's count after
        this update."""
        raise NotImplementedError

    def reallocate_cleared_grads(self) -> None:
        """Give a zero gradient to each initialized parameter whose gradient is None."""
        for _, param in self._params():
            if param.grad is None:
                param.grad = param.xp.zeros_like(param.data)

    def _params(self) -> Iterator[tuple[str, Variable]]:
        """``(path, param)`` of the initialized parameters that require grad, each once
        (integer and boolean parameters, which cannot, are left alone)."""
        seen = set()
        for name, param in self.target.namedparams(include_uninit=False):
            if param.requires_grad and id(param) not in seen:
                seen.add(id(param))
                require_leaf(param, f"polygrad: {type(self).__name__}: parameter {name!r}")
                yield name, param

    def _state_of(self, param: Variable) -> dict | None:
        """The state of the parameter object ``param``, or None (never updated)."""
        entry = self._states.get(id(param))
        return entry[1] if entry is not None and entry[0]() is param else None

    def _put_state(self, param: Variable, state: dict | None) -> None:
        """Make ``state`` the state of the parameter object ``param`` (None: it has none). Every state
        comes in here (made, loaded, unpickled): an array the rule makes at first use that it lacks (a
        state of an earlier polygrad: Adam's without ``vhat``) is None, not made yet (its next update,
        save or ``state_dict`` raised a bare KeyError)."""
        if state is None:
            self._states.pop(id(param), None)
        else:
            for k in self.made_at_first_use:
                state.setdefault(k, None)
            self._states[id(param)] = (weakref.ref(param), state)

    def _forget_dead(self, n_params: int) -> None:
        """Drop the states of parameters that no longer exist (a replaced layer, freed)."""
        if len(self._states) > n_params:
            self._states = {k: e for k, e in self._states.items() if e[0]() is not None}

    def _state(self, name: str, param: Variable) -> dict:
        """The state of ``param``, created (or moved to the parameter's backend, or cast along with
        its dtype) on demand; a ValueError naming the parameter where its data changed shape since
        its state was made. The state notes the parameter's dtype it was made for (``"dtype"``)."""
        data = param.data
        backend = backend_of_type(type(data))
        state = self._state_of(param)
        if state is None:
            state = self.init_state(param, backend)
            state["dtype"] = data.dtype
            self._put_state(param, state)
            return state
        if state["backend"] is not backend:
            state.update(self._moved(state, backend))
        made_for = state.setdefault("dtype", data.dtype)  # (a state of an older polygrad: taken as made for it)
        if made_for is not data.dtype and (made_for is None or made_for != data.dtype):
            self._recast(name, param, state, backend)
        shape = tuple(data.shape)
        for k in self.state_names:
            have = getattr(state[k], "shape", None)
            if have is not None and tuple(have) != shape:
                raise ValueError(
                    f"polygrad: {public_name(self)} cannot update {self._param_label(name)}: its data is now of shape "
                    f"{shape}, but its state {k!r} is of shape {tuple(have)} (the data was replaced by an array of "
                    f"another shape); {self._fresh_state_advice()}"
                )
        return state

    def _recast(self, name: str, param: Variable, state: dict, backend: Any) -> None:
        """Cast the arrays of ``state`` to the dtypes the rule gives them (:meth:`state_dtype`) where
        the parameter's dtype changed since it was made (``w.data = w.data.astype("float32")``
        mid-run), or the state moved to another backend: a float64 velocity kept the steps float64
        (and on dask made the parameter float64 again). A state of a higher kind than it would have
        (complex, for a parameter now real; an array made at first use too, pg.optim.SGD's velocity,
        which made the real parameter complex again) is refused, naming the parameter."""
        from polygrad.serializers import check_kind, dtype_kind_of

        xp, dtype = backend.xp, param.data.dtype
        for k in self.state_names:
            a = state[k]
            want = None if a is None else self.state_dtype(k, dtype, xp)
            if a is None or a.dtype == want:
                continue
            check_kind(f"polygrad: {public_name(self)} cannot update {self._param_label(name)} (now of {dtype}): "
                       f"its state {k!r}", xp, a.dtype, dtype_kind_of(xp, want), want,
                       advice=f"cast the parameter back, or {self._fresh_state_advice()}")
            state[k] = xp.astype(a, want)
        state["dtype"] = dtype

    def _moved(self, state: dict, backend: Any) -> dict:
        """A copy of ``state`` with its arrays on ``backend`` (``state`` is left as it is); the
        dtype it was made for is then unknown (another backend's dtypes are other objects): the
        next update compares the arrays' with a new state's (see :meth:`_recast`)."""
        from polygrad.backends import to_backend

        moved = dict(state, backend=backend, dtype=None)
        for k in self.state_names:
            moved[k] = None if state[k] is None else to_backend(state[k], backend.name)
        return moved

    def init_state(self, param: Variable, backend: Any) -> dict:
        """A new parameter's state: ``{"t": 0, "backend": backend}`` and, per name of
        ``state_names``, a zero array of the parameter's shape on its backend, of the rule's dtype
        (:meth:`state_dtype`), or None for one the rule makes at its first use
        (``made_at_first_use``)."""
        xp, data = backend.xp, param.data
        state: dict[str, Any] = {"t": 0, "backend": backend}
        for k in self.state_names:
            state[k] = None if k in self.made_at_first_use else xp.zeros_like(
                data, dtype=self.state_dtype(k, data.dtype, xp))
        return state

    def _refuse_foreign_state(self, sub: Any, name: str) -> frozenset | None:
        """Refuse a file whose state of one parameter (it holds a count, not 0) is another rule's:
        one holding arrays this rule does not keep (an Adam file loaded into MomentumSGD gave the
        velocity Adam's second moment; one loaded into SGD was taken as a count, as in Chainer),
        or lacking some it keeps (a MomentumSGD file loaded into Adam with ``strict=False`` made
        the velocity, negative, Adam's second moment: NaN parameters). An array the rule makes at
        its first use may be missing. Only deserializers that list their keys (``stored_keys``, the
        npz one) can be asked: returns those keys (None where it cannot be asked)."""
        keys = getattr(sub, "stored_keys", None)
        if keys is None:
            return None
        keys = keys()
        extra = sorted(keys - {"t", *self.state_names})
        # (a file without this parameter's count, strict=False, holds no state of it: left as it is)
        missing = [k for k in self.state_names if k not in keys and k not in self.made_at_first_use
                   ] if "t" in keys else []
        if extra or missing:
            who = public_name(self)
            what = f"holds {extra}, which {who} does not keep" if extra else f"lacks {missing}, which {who} keeps"
            raise ValueError(f"polygrad: the optimizer state of parameter {name!r} in the file {what} (it keeps "
                             f"{['t', *self.state_names]}): a file of another optimizer, or of this one with other "
                             "options?")
        return keys

    def serialize(self, serializer: Any) -> None:
        """Save or load ``t``, ``epoch`` and each parameter's state under its path
        (``l1/W/t``, ``l1/W/m``, ...). A parameter never updated has no state.

        Loading reads and checks everything before it changes anything, and puts
        each state array on its parameter's backend.
        """
        self._check_setup("serialize")
        loading = getattr(serializer, "loading", False)
        t = serializer("t", self.t)
        epoch = serializer("epoch", self.epoch)
        new_states: list[tuple[Variable, dict | None]] = []
        seen = set()
        for name, param in self.target.namedparams(include_uninit=True):
            if id(param) in seen:
                continue
            seen.add(id(param))
            sub = serializer[name]
            state = self._state_of(param)
            param_t = sub("t", 0 if state is None else state["t"])
            if not loading:
                if state is not None:
                    for k in self.state_names:
                        sub(k, state[k])
                continue
            # The file's count decides what is read, in the loader's first (dry) pass too, where
            # the deserializer hands back this optimizer's own values: its own count asked for
            # arrays the file need not hold (a parameter without state when it was saved).
            stored = getattr(sub, "stored", None)
            if (param_t if stored is None else stored("t", param_t)) == 0:
                new_states.append((param, None))
                continue
            data = param.data
            if data is None:  # the first pass of a load that initializes it (the link loaded before): that array
                ahead = getattr(sub, "data_after_load", None)
                data = None if ahead is None else ahead(param)
            if data is None:
                raise ValueError(
                    f"polygrad: cannot load the optimizer state of parameter {name!r}: the parameter is not "
                    f"initialized yet; load the link first (before the optimizer, where one file holds both), "
                    f"or run it once"
                )
            backend = backend_of_type(type(data))
            keys = self._refuse_foreign_state(sub, name)
            if state is None:
                template = self.init_state(param if param.data is not None else Variable(data), backend)
            else:  # where the link moved to another backend since: the state as the next update moves it
                template = state if state["backend"] is backend else self._moved(state, backend)
            new = {"t": int(param_t), "backend": backend, "dtype": template.get("dtype", data.dtype)}
            for k in self.state_names:
                if k not in self.made_at_first_use:
                    new[k] = sub(k, template[k])
                    continue
                # an array the rule makes at first use (a velocity before a step with momentum, Adam's
                # vhat) is read in the form the rule gives it; a file that lacks it (of an earlier
                # polygrad, or of a rule that had not made it; strict=True too) loads it as not made
                # yet, where the file holds this parameter's state (strict=False leaves the state of a
                # parameter the file lacks as it is); the first pass keeps the optimizer's own
                xp = backend.xp
                stand_in = xp.zeros_like(data, dtype=self.state_dtype(k, data.dtype, xp))
                try:
                    got = sub(k, stand_in)
                except KeyError:
                    got = None
                if getattr(sub, "checking", False) or (got is stand_in and (keys is None or "t" not in keys)):
                    got = template[k]
                new[k] = None if got is stand_in else got
            # A count of 0 here is the first pass handing back this optimizer's own (the file's is not 0):
            # the parameter keeps its state, or its lack of one (a zero state was put in its place).
            new_states.append((param, new if int(param_t) else state))
        if loading:
            self.t, self.epoch = int(t), int(epoch)
            for param, new in new_states:
                self._put_state(param, new)


# ---------------------------------------------------------------------------
# In-place updates where the backend allows
# ---------------------------------------------------------------------------


def _persist(backend: Any, arrays: list, buffers: list) -> tuple[Iterator, list]:
    """Persist ``arrays`` and those of the persistent ``buffers`` (see
    ``GradientMethod._lazy_buffers``) on ``backend`` in one pass: an iterator over the arrays'
    results in order, and ``(link, name, value)`` for each buffer."""
    mine = [b for b in buffers if b[3] is backend]
    done = iter(backend.persist(tuple(arrays) + tuple(b[2] for b in mine)))
    results = [next(done) for _ in arrays]
    return iter(results), [(link, attr, next(done)) for link, attr, _, _ in mine]


def _complex(xp: Any, re: Any, im: Any, dtype: Any) -> Any:
    """The complex array ``re + i*im`` of ``dtype``, from two real arrays (the standard has no
    constructor for it)."""
    return xp.astype(re, dtype) + xp.astype(im, dtype) * xp.asarray(1j, dtype=dtype)


def _note(exc: BaseException, text: str) -> None:
    if hasattr(exc, "add_note"):  # (Python 3.11+)
        exc.add_note(text)


def _broadcast(a: tuple, b: tuple) -> tuple | None:
    """The broadcast shape of ``a`` and ``b``, or None where they do not broadcast."""
    from polygrad.ops.manipulation import broadcast_shapes

    try:
        return broadcast_shapes(a, b)
    except ValueError:
        return None


def _compute_where_writes_raise(plan: list, who: str) -> None:
    """Compute the new values ``data - delta`` of the planned steps (``plan``: see ``_plan``) now,
    before anything is written, wherever writing them could fail: on a backend that rebinds
    (the subtraction is out of place there anyway, so this costs nothing), and on one that
    writes in place whose arithmetic raises where it overflows (numpy under
    ``np.errstate(over="raise")``): ``data -= delta`` raised there after writing the infinities,
    with earlier parameters stepped. There the new values are computed as the check, and the
    step is then written in place all the same, with the namespace's error state off
    (``errstate``): parameters that share memory (tied weights) get each step in turn, as on the
    common path (copying the checked values in, the last copy won). Elsewhere (the common case)
    the in-place subtraction cannot fail and stays what the update does, with no copy."""
    raises: dict = {}
    for name, param, _, delta, new_state in plan:
        if "__data__" in new_state:  # (lazy: computed and persisted already)
            continue
        data = param._data
        backend = backend_of_type(type(data))
        if backend.inplace:
            key = (backend, data.dtype)
            if key not in raises:  # (asked once per update and dtype)
                raises[key] = _arithmetic_raises(backend, data.dtype)
            if not raises[key]:
                continue
        xp = backend.xp
        try:
            new = _stepped(xp, data, delta)
        except Exception as exc:
            _note(exc, f"polygrad: {who}.update: computing the new values of parameter {name!r} failed; no parameter "
                       f"was changed")
            raise
        quiet = getattr(xp, "errstate", None) if backend.inplace else None
        if quiet is not None:
            new_state["__quiet__"] = quiet
        else:
            new_state["__data__"] = new


def _stepped(xp: Any, data: Any, delta: Any) -> Any:
    """``data - delta``, a parameter's new values, in ``data``'s dtype where the step is of a wider
    dtype of the same kind (a state of the parameter's dtype before a cast, a rule's float64
    constant), as numpy's in-place ``data -= delta`` casts it, and Chainer's update: computed out
    of place (dask), a float32 parameter became float64."""
    new = data - delta
    if new.dtype != data.dtype and _kind(xp, new.dtype) == _kind(xp, data.dtype):
        new = xp.astype(new, data.dtype)
    return new


def _kind(xp: Any, dtype: Any) -> str:
    return next((k for k in ("complex floating", "real floating") if xp.isdtype(dtype, k)), "other")


def _arithmetic_raises(backend: Any, dtype: Any) -> bool:
    """Whether ``backend``'s arithmetic in ``dtype`` may raise where a difference overflows or is
    invalid, rather than give inf or NaN (IEEE's default, and the Array API standard's): where
    its namespace keeps an error state (NumPy's ``np.errstate(over="raise")``, read with its
    ``geterr``), or where a warning it gives then (NumPy's default) would be an error (the
    warnings filters). Read, not tried: trying meant silencing the warning it gives, and
    ``warnings.catch_warnings`` changes the filters of every thread."""
    geterr = getattr(backend.xp, "geterr", None)
    if geterr is None or not backend.xp.isdtype(dtype, ("real floating", "complex floating")):
        return False
    state = geterr()
    modes = (state.get("over"), state.get("invalid"))
    return "raise" in modes or "call" in modes or ("warn" in modes and _runtime_warnings_raise())


def _runtime_warnings_raise() -> bool:
    """Whether the warnings filters may make a RuntimeWarning given here an error: the first filter
    for all of them decides, as in ``warnings``; one for some messages or modules only counts
    where it would raise (so the answer errs on the safe side)."""
    for action, message, category, module, lineno in warnings.filters:
        if issubclass(RuntimeWarning, category):
            if message is None and module is None and not lineno:
                return action == "error"
            if action == "error":
                return True
    return False


def _assign(param: Variable, new: Any) -> None:
    """Make ``new`` (computed) the data of ``param``: copied into its array where the backend
    writes in place (the copy of an array of its dtype and shape does no arithmetic: it cannot
    raise), else rebound; either way the version moves and the views follow."""
    old = param._data
    if backend_of_type(type(old)).inplace and new.dtype == old.dtype and tuple(new.shape) == tuple(old.shape):
        views = param._direct_views()
        try:
            old[...] = new
        except (TypeError, ValueError, AttributeError):  # read-only: rebound below
            pass
        else:
            _updated_in_place(param, views)
            return
    _rebind(param, new)


def _sub_from(param: Variable, delta: Any) -> None:
    """``param.data -= delta``, as ``param -= delta`` under ``no_backprop_mode`` does it: in place
    where the backend writes in place, else by rebinding; either way the version moves and the
    parameter's views follow (see :func:`_rebind`)."""
    old = param._data
    new = NotImplemented
    backend = backend_of_type(type(old))
    if backend.inplace:
        views = param._direct_views()  # (none, and no cost, for most parameters)
        try:
            new = old.__isub__(delta)
        except (TypeError, ValueError, AttributeError):  # read-only, or a dtype the standard will not write
            new = NotImplemented
        except BaseException:  # (excluded up front: see _compute_where_writes_raise) it may have written
            _updated_in_place(param, views)
            raise
        if new is old:
            _updated_in_place(param, views)
            return
    _rebind(param, _stepped(backend.xp, old, delta) if new is NotImplemented or new is None else new)


def _undo_point(value: Any) -> Any:
    """What puts ``value`` (an array a rule's ``update_one`` may change) back after a failure: a
    second handle on its values (``copy.copy``: dask's shares the graph, no data) where its backend
    does not write in place, since a raw ``x[...] = v`` there (dask's ``__setitem__``) changes the
    array object itself; else ``value`` itself (numpy: what a rule writes into it cannot be undone,
    see :func:`_maybe_written`)."""
    try:
        inplace = backend_of_type(type(value)).inplace
    except TypeError:  # (no array: a count)
        return value
    if inplace:
        return value
    try:
        return copy.copy(value)
    except Exception:  # (an array type of a third-party backend that cannot be copied: no worse than before)
        return value


def _maybe_written(now: Any, was: Any) -> bool:
    """Whether a rule may have written into the array ``was`` (see :func:`_undo_point`) that is
    still ``now``: one of a backend that writes in place, which the rule did not rebind."""
    if now is not was or now is None:
        return False
    try:
        return backend_of_type(type(now)).inplace
    except TypeError:
        return False


def _count_update(param: Variable, old: Any, rebound_only: bool = False) -> None:
    """Count what a rule's ``update_one`` wrote into ``param`` (whose array was ``old``), raw, into
    its array or by rebinding it, as an update: the version moves and the views follow
    (``rebound_only``: only where it rebound the array)."""
    new = param._data
    if new is old:
        if not rebound_only:
            _updated_in_place(param, param._direct_views())
    else:
        param._data = old
        _rebind(param, new)


def _updated_in_place(param: Variable, views: list) -> None:
    """Count an update written into the array of ``param``: its version moves, and ``views`` (its
    direct views) follow it (one that shares no memory with it, a reshape that copied, showed the
    old values)."""
    param._vbox.bump(_UPDATE)
    for view in views:
        view._follow(param)


def _rebind(param: Variable, new: Any) -> None:
    """Make ``new`` (the updated values) the data of ``param`` by rebinding, as any in-place write
    of a Variable does on a backend without writes (``Variable._write``): the version moves and
    the views follow (the parameter's ``w[0:2]`` showed the old values on dask, its version stayed
    0), and the old array stays as it was for whatever saved it (``inplace_policy("copy")``).
    Under ``no_backprop_mode``: an update, not part of any graph (the parameter keeps requiring
    grad)."""
    with config.no_backprop_mode(), config.set_inplace_policy("copy"):
        param._write(Variable._make(new), _UPDATE)


_UPDATE = "optimizer update"


class SGD(GradientMethod):
    """Vanilla stochastic gradient descent: ``param -= lr * grad``."""

    lr = Hyperparameter()

    def __init__(self, lr: float = 0.01) -> None:
        self.lr = lr

    def step(self, data: Any, grad: Any, state: dict, t: int) -> tuple[Any, dict]:
        return self.lr * grad, {}


class MomentumSGD(GradientMethod):
    """SGD with momentum (Chainer's rule): ``v = momentum * v - lr * grad; param += v``."""

    state_names = ("v",)
    lr = Hyperparameter()
    momentum = Hyperparameter()

    def __init__(self, lr: float = 0.01, momentum: float = 0.9) -> None:
        self.lr = lr
        self.momentum = momentum

    def step(self, data: Any, grad: Any, state: dict, t: int) -> tuple[Any, dict]:
        v = self.momentum * state["v"] - self.lr * grad
        return -v, {"v": v}


class _NotStarted(RuntimeError, ValueError):
    """Adam's ``lr`` before the first update: Chainer's RuntimeError (a ValueError too, as polygrad
    raised before)."""


class Adam(GradientMethod):
    """Adam (Kingma and Ba), with Chainer 7's formula. At the rule's ``t``-th update::

        m += (1 - beta1) * (grad - m)
        v += (1 - beta2) * (grad * grad - v)
        vhat = max(vhat, v) with amsgrad (AMSGrad; vhat starts at 0), else vhat = v
        param -= eta * (lr * m / (sqrt(vhat) + eps) + weight_decay_rate * param),
        lr = alpha * sqrt(1 - beta2**t) / (1 - beta1**t)

    ``eta`` scales the whole step (a schedule's knob: ``eta=0`` freezes the parameters), and
    ``weight_decay_rate`` is decoupled weight decay (AdamW), not added to the gradient as the
    ``WeightDecay`` hook does. A complex parameter is a pair of real ones, as in PyTorch
    (``view_as_real``): the real and imaginary parts of ``v`` (and ``vhat``) hold the second
    moments of the gradient's real and imaginary parts, and each part of ``m`` is divided by
    its own. A float16 parameter is stepped in float32, with float32 moments. An ``eps`` that
    rounds to 0 in the dtype of the step is refused. Chainer's AdaBound (``adabound``,
    ``final_lr``, ``gamma``) is not implemented: those names are refused.
    """

    state_names = ("m", "v", "vhat")
    #: vhat (AMSGrad's) is made at the first update with amsgrad (None before: Chainer's zeros,
    #: whose maximum with v is v), so a file or pickle without it (an earlier polygrad's) loads
    made_at_first_use = ("vhat",)
    alpha = Hyperparameter()
    beta1 = Hyperparameter((lambda b: 0.0 <= b < 1.0, "in [0, 1)"))
    beta2 = Hyperparameter((lambda b: 0.0 <= b < 1.0, "in [0, 1)"))
    eps = Hyperparameter()
    eta = Hyperparameter(default=1.0)
    weight_decay_rate = Hyperparameter(default=0.0)
    amsgrad = Flag(default=False)
    adabound = _Unsupported("Chainer's AdaBound (adabound, final_lr, gamma) is not implemented")
    final_lr = _Unsupported("Chainer's AdaBound (adabound, final_lr, gamma) is not implemented")
    gamma = _Unsupported("Chainer's AdaBound (adabound, final_lr, gamma) is not implemented")

    def __init__(self, alpha: float = 1e-3, beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-8,
                 eta: float = 1.0, weight_decay_rate: float = 0.0, amsgrad: bool = False) -> None:
        self.alpha = alpha
        self.beta1 = beta1
        self.beta2 = beta2
        self.eps = eps
        self.eta = eta
        self.weight_decay_rate = weight_decay_rate
        self.amsgrad = amsgrad

    def lr_at(self, t: int) -> float:
        """The bias-corrected step size at a rule's ``t``-th update."""
        return self.alpha * math.sqrt(1.0 - self.beta2**t) / (1.0 - self.beta1**t)

    @property
    def lr(self) -> float:
        """The step size of the latest update (Chainer's ``Adam.lr``)."""
        if self.t == 0:
            raise _NotStarted("polygrad: Adam's learning rate is defined once updates have started (t >= 1)")
        return self.lr_at(self.t)

    @staticmethod
    def _average(old: Any, new: Any, beta: float) -> Any:
        """The moving average of a moment: Chainer's form, ``old + (1 - beta) (new - old)``."""
        return old + (1.0 - beta) * (new - old)

    def state_dtype(self, name: str, dtype: Any, xp: Any) -> Any:
        """The moments of a float16 parameter are float32, vhat too (see step); else the parameter's."""
        return widened(xp, dtype) or dtype

    def step(self, data: Any, grad: Any, state: dict, t: int) -> tuple[Any, dict]:
        xp = state["backend"].xp
        wide = widened(xp, grad.dtype)
        if wide is not None:
            # A narrower float (float16) is stepped in float32 and the step cast back: grad * grad
            # overflowed past 256 (v inf, then NaN parameters, or frozen ones with pg.optim), and
            # eps = 1e-8 is 0 in float16 (Chainer's float16 Adam trains).
            delta, new = self._moments_step(xp, data, xp.astype(grad, wide), state, t)
            return xp.astype(delta, grad.dtype), new
        return self._moments_step(xp, data, grad, state, t)

    def _moments_step(self, xp: Any, data: Any, grad: Any, state: dict, t: int) -> tuple[Any, dict]:
        """The rule's arithmetic (``step`` without the float16 widening; a subclass's ``step``,
        pg.optim's weight decay, runs once around it)."""
        self._check_eps(state["backend"], grad.dtype)
        m = self._average(state["m"], grad, self.beta1)
        complex_ = xp.isdtype(grad.dtype, "complex floating")
        if not complex_:
            v = self._average(state["v"], grad * grad, self.beta2)
        else:
            # PyTorch's rule for complex parameters: each is a pair of real ones (view_as_real), so
            # v holds the second moment of the real parts in its real part and of the imaginary
            # parts in its imaginary part, and each part of m is divided by its own.
            re, im = xp.real(grad), xp.imag(grad)
            v = self._average(state["v"], _complex(xp, re * re, im * im, grad.dtype), self.beta2)
        new = {"m": m, "v": v}
        vhat = v
        if self.amsgrad:
            old = state["vhat"]
            if old is not None and not complex_:
                vhat = xp.maximum(old, v)
            elif old is not None:
                vhat = _complex(xp, xp.maximum(xp.real(old), xp.real(v)), xp.maximum(xp.imag(old), xp.imag(v)),
                                grad.dtype)
            new["vhat"] = vhat
        if not complex_:
            delta = self.lr_at(t) * m / (xp.sqrt(vhat) + self.eps)
        else:
            re = xp.real(m) / (xp.sqrt(xp.real(vhat)) + self.eps)
            im = xp.imag(m) / (xp.sqrt(xp.imag(vhat)) + self.eps)
            delta = self.lr_at(t) * _complex(xp, re, im, grad.dtype)
        if self.weight_decay_rate:  # (Chainer's decoupled weight decay, AdamW)
            delta = delta + self.weight_decay_rate * data
        if self.eta != 1.0:
            delta = self.eta * delta
        return delta, new

    def _check_eps(self, backend: Any, dtype: Any) -> None:
        """Refuse an eps that rounds to 0 in ``dtype``, the dtype of the step (float32 for a float16
        parameter): where the squared gradient underflows too, the update divides 0 by 0 (NaN)."""
        finfo = backend.xp.finfo(dtype)
        tiny = float(finfo.smallest_normal) * float(finfo.eps)  # the smallest positive (subnormal) number
        if self.eps != 0 and abs(self.eps) <= tiny / 2:  # rounds to 0 (a tie goes to the even 0)
            from polygrad.computational_graph import _dtype_name

            raise ValueError(
                f"eps of Adam optimizer is too small for {_dtype_name(dtype, backend)} ({self.eps}): it rounds to 0 in "
                f"that dtype, so where a squared gradient underflows the update is 0/0 (NaN); use an eps of at "
                f"least {tiny:.3g} (about 1e-4 is usual for float16), or keep the parameter in a wider dtype"
            )

"""``pg.function``: compile a symbolic graph into a callable with state (Theano's ``function``)."""

from __future__ import annotations

import copy
import threading
import time
import warnings
from typing import Any, Sequence

from polygrad.compile.program import MissingInputError, Program, RandomShape, ShapeChanged, build, operands
from polygrad.compile.io import ARGUMENT_HINT, Container, In, Out, SharedVariable, fits, to_value
from polygrad.compile import symbolic as _symbolic
from polygrad.compile.symbolic import SymbolicArray, is_symbolic, walk
from polygrad.core.dispatch import backend_of_type, describe
from polygrad.core.variable import Variable

__all__ = ["function", "CompiledFunction", "ProfileStats", "UnusedInputError"]

#: Theano's modes that mean something here: the optimizations of the program (None: FAST_RUN).
MODES = (None, "FAST_RUN", "FAST_COMPILE")
#: programs a compiled function keeps, one per combination of argument types, shapes and dtypes;
#: past this, the least recently used is dropped (and compiled again if those shapes come back)
MAX_PROGRAMS = 32
ON_UNUSED_INPUT = (None, "raise", "warn", "ignore")


class UnusedInputError(ValueError):
    """An input of ``pg.function`` that no output or update needs (Theano's, raised by default)."""


def _upgrade(item: Any) -> In:
    """Theano's input shortcuts: r, (name, r), (r, val), ((r, up), val), (name, r, val), (name, (r, up), val)."""
    if isinstance(item, In):
        return item
    if isinstance(item, Variable):
        return In(item)
    if isinstance(item, tuple):
        if len(item) == 2:
            a, b = item
            if isinstance(a, str):
                return In(b, name=a)
            if isinstance(a, tuple):
                r, up = a
                return In(r, value=b, update=up, autoname=True)
            return In(a, value=b, autoname=True)
        if len(item) == 3 and isinstance(item[0], str):
            name, r, val = item
            if isinstance(r, tuple):
                r, up = r
                return In(r, name=name, value=val, update=up, autoname=True)
            return In(r, name=name, value=val)
    raise TypeError(f"polygrad.function: cannot use {item!r} as an input; give a symbolic variable, an In, or a Theano shortcut tuple")


class _Lookup:
    """``fn.value`` / ``fn.container``: dictionary-like access by position, name or variable."""

    def __init__(self, fn: "CompiledFunction", values: bool) -> None:
        self._fn, self._values = fn, values

    def __getitem__(self, key: Any) -> Any:
        c = self._fn._container(key)
        return c.value if self._values else c

    def __setitem__(self, key: Any, value: Any) -> None:
        if not self._values:
            raise TypeError("polygrad: fn.container is read-only; set values through fn.value[...] or fn[...]")
        self._fn._container(key).set(value)

    def __contains__(self, key: Any) -> bool:
        try:
            self._fn._container(key)
        except KeyError:
            return False
        return True


def _reach(roots: list, known: set, givens: dict, updated: list, no_default_updates: Any) -> tuple[list, list]:
    """The expressions the roots read (see :func:`~polygrad.compile.symbolic.walk`), and the default updates
    ``(shared, expression)`` of the shared variables among them that have one, no update in
    ``updated`` and are not excluded by ``no_default_updates`` (their expressions are read too)."""
    excluded = no_default_updates if isinstance(no_default_updates, (list, tuple, set)) else ()
    roots, updated, found = list(roots), list(updated), []
    while True:
        reached = list(walk(roots, known, givens))
        defaults = []
        for s in reached:
            var = s.container.variable if s.kind == "shared" else None
            default = getattr(var, "default_update", None)
            if (default is None or no_default_updates is True or any(var is u for u in updated)
                    or any(var is e for e in excluded)):
                continue
            if not is_symbolic(default):
                raise TypeError(f"polygrad.function: the default_update of {var.name or var!r} must be a symbolic expression")
            defaults.append((var, default))
            updated.append(var)
        if not defaults:
            return reached, found
        found += defaults
        roots += [d._data for _, d in defaults]


def _substitutions(pairs: list[tuple[SymbolicArray, SymbolicArray]], known: set,
                   name: str | None) -> tuple[dict, dict]:
    """``givens`` as Theano applies them (``rebuild_collect_shared`` clones each replacement, pair by
    pair, before it substitutes the variable): inside its own replacement a variable means its
    original value (``(s, s + 1)`` makes ``s * 2`` into ``(s + 1) * 2``), and a variable an earlier
    pair replaced means that replacement. A pair replacing what an earlier replacement reads (a
    cycle, ``{a: b + 1, b: a * 2}``, or ``{a: b + 1, b: c}``) is refused, as Theano refuses it.

    Returns ``give``: id -> the symbol read in its place (acyclic, so every trace can order it),
    and ``originals``: id of a replaced shared variable -> the symbol of its value before the
    replacement, which its replacement reads (the function reads the container there). The
    expressions between a replacement and its own variable are rebuilt on that original; ``give``
    maps them to their rebuilt selves, as Theano's clones stand for them anywhere in the graph."""
    give: dict[int, SymbolicArray] = {}
    originals: dict[int, SymbolicArray] = {}
    read: dict[int, int] = {}  # id -> the pair whose replacement reads it (Theano's clone_d)
    for k, (s, r) in enumerate(pairs):
        if s.id in read:
            raise _givens_error(pairs, k, read[s.id], known, name)
        order: list[SymbolicArray] = []  # what the replacement reads afresh, operands first
        seen: set[int] = set()
        stack: list[tuple[SymbolicArray, bool]] = [(r, False)]
        while stack:
            n, done = stack.pop()
            if done:
                order.append(n)
            elif n.id not in seen and n.id not in read and n.id not in known:
                seen.add(n.id)
                stack.append((n, True))
                stack.extend((o, False) for o in operands(n))
        if s.id in seen:  # the replacement reads its own variable: rebuild what reads it on the original
            subst = {s.id: _rebuilt(s, {})}
            for n in order:
                if n.id != s.id and any(o.id in subst for o in operands(n)):
                    subst[n.id] = _rebuilt(n, subst)
            if s.kind == "shared":
                originals[s.id] = subst[s.id]
            r = subst[r.id]  # (r reads s, so it was rebuilt; or it is s)
            del subst[s.id]
            give.update(subst)
        give[s.id] = r
        read.update(dict.fromkeys(seen, k))
        read[s.id] = k
    return give, originals


def _rebuilt(s: SymbolicArray, subst: dict) -> SymbolicArray:
    """A new symbol computing what ``s`` does, from the symbols ``subst`` maps its operands to.
    (A rebuilt gradient or detached leaf has a new id: it counts as asked for after any
    ``unchain_backward`` made before the function.)"""
    def get(a: Any) -> Any:
        return subst.get(a.id, a) if isinstance(a, SymbolicArray) else a

    grad_of = s.grad_of
    if grad_of is not None:
        grad_of = (get(grad_of[0]), tuple(get(w) for w in grad_of[1]), grad_of[2])
    return SymbolicArray(s.kind, op=s.op, args=tuple(get(a) for a in s.args), params=s.params, name=s.name,
                         dtype=s.dtype, shape=s.shape, container=s.container, grad_of=grad_of)


def _givens_error(pairs: list, k: int, j: int, known: set, name: str | None) -> ValueError:
    """The error for givens pair ``k``, whose variable pair ``j``'s replacement reads (or replaces)."""
    (s, r), (sj, rj) = pairs[k], pairs[j]
    if sj.id == s.id:
        return ValueError(f"{_who(name)}: givens replaces {s!r} twice (by {rj!r} and by {r!r}); give each "
                          f"variable one replacement")
    if any(n.id == sj.id for n in walk([r], known, {})):
        return ValueError(
            f"{_who(name)}: givens replaces {sj!r} by {rj!r} and {s!r} by {r!r}: each replacement reads the "
            f"variable the other replaces, a cycle (Theano refuses it too: givens = {{a: b, b: a + 1}} is not "
            f"allowed); write the replacements in terms of variables givens does not replace"
        )
    return ValueError(
        f"{_who(name)}: givens replaces {s!r} by {r!r}, but the replacement of {sj!r} given before it, {rj!r}, reads "
        f"{s!r} (Theano refuses a replacement that reads a variable a later pair replaces: givens = "
        f"{{a: b, b: a + 1}} is not allowed); put ({s!r}, {r!r}) first, so that {sj!r}'s replacement reads "
        f"{s!r}'s replacement"
    )


def _output_list(outputs: Any, name: str | None) -> tuple[list, list | None, bool]:
    """``outputs`` as a list; the keys of a dict of them, sorted (Theano's ``output_keys``: the call
    returns a dict), else None; and whether it was one output (the call returns it alone)."""
    if outputs is None:
        return [], None, False
    if isinstance(outputs, dict):
        for key in outputs:
            if not isinstance(key, str):
                raise TypeError(f"{_who(name)}: the keys of a dict of outputs must be strings (as in Theano), got "
                                f"the key {key!r} ({type(key).__name__})")
        keys = sorted(outputs)
        return [outputs[k] for k in keys], keys, False
    if isinstance(outputs, (list, tuple)):
        return list(outputs), None, False
    return [outputs], None, True


def _check_used(inputs: list[In], used: set, warn: bool, name: str | None) -> None:
    """Raise :class:`UnusedInputError` (or warn) for an input no output or update reads."""
    for k, inp in enumerate(inputs):
        if inp.variable._data.id in used:
            continue
        label = f"{k} ({inp.name})" if inp.name is not None else f"{k} ({inp.variable._data!r})"
        text = (f"polygrad.function{' ' + name if name else ''}: input {label} is not part of the graph needed to "
                f"compute the outputs and updates")
        if warn:
            warnings.warn(text, stacklevel=3)
        else:
            raise UnusedInputError(
                f"{text}. To make this error a warning, pass on_unused_input='warn' to pg.function; to disable "
                f"it, on_unused_input='ignore'"
            )


class ProfileStats:
    """What ``pg.function(..., profile=True)`` records (Theano's ``ProfileStats``, in brief):
    calls, compilations and the time spent in each; ``summary()`` says it in words."""

    def __init__(self, name: str | None = None) -> None:
        self.name = name
        self.n_calls = 0
        self.call_time = 0.0  # seconds in calls, compilation included
        self.n_compiles = 0
        self.compile_time = 0.0  # seconds building programs

    def summary(self) -> str:
        per = self.call_time / self.n_calls if self.n_calls else 0.0
        return (f"polygrad function {self.name or '<unnamed>'}: {self.n_calls} calls, {self.call_time:.6f} s "
                f"({per * 1e6:.1f} us per call); {self.n_compiles} programs compiled in {self.compile_time:.6f} s")

    def __repr__(self) -> str:
        return f"<ProfileStats {self.summary()}>"


def _profile(profile: Any, name: str | None) -> ProfileStats | None:
    if profile is None or profile is False:
        return None
    if profile is True:
        return ProfileStats(name)
    if isinstance(profile, ProfileStats):
        return profile
    raise TypeError(f"polygrad.function: profile must be a bool or a ProfileStats, got {profile!r}")


class CompiledFunction:
    """A compiled symbolic graph: call it with values; state lives in containers.

    Values are reached by key (``fn[key]``, ``fn.value[key]``, ``fn.container[key]``:
    position, name or variable) and, for a name that is a valid identifier, as an
    attribute (``fn.s``) unless the function has an attribute of that name
    (``fn.name``, ``fn.value``...: the function's own attributes win).
    """

    def __init__(self, inputs: list[In], outputs: Any, updates: list[tuple[Variable, Variable]], givens: dict,
                 name: str | None, trust_input: bool, *, allow_input_downcast: bool | None = None,
                 optimize: bool = True, profile: Any = None, originals: dict | None = None) -> None:
        self.name = name
        self.trust_input = trust_input
        self.allow_input_downcast = allow_input_downcast
        self.profile = _profile(profile, name)
        self.inputs = inputs
        # what the graph reads (copy(swap=) keeps them): a shared variable givens replaces is read, if at
        # all, in its own replacement, as the symbol of its original value
        originals = originals or {}
        self._syms = [originals.get(inp.variable._data.id, inp.variable._data) for inp in inputs]
        outs, self._keys, self._single = _output_list(outputs, name)
        self.outputs = [o if isinstance(o, Out) else Out(o) for o in outs]
        self._givens = givens
        self._optimize = optimize
        self._containers = []
        self._owned = []  # positions of the containers this function made (copy() may copy them)
        self._downcast = [inp.allow_downcast if inp.allow_downcast is not None else allow_input_downcast for inp in inputs]
        for i, inp in enumerate(inputs):
            if isinstance(inp.variable, SharedVariable) and inp.value is None:
                self._containers.append(inp.variable.container)
            elif isinstance(inp.value, Container):
                _check_container(inp, i, name)
                self._containers.append(inp.value)
            else:
                c = Container(inp.variable, None, name=inp.name, allow_downcast=self._downcast[i], strict=inp.strict,
                              hint=ARGUMENT_HINT)
                if inp.value is not None:
                    c.set(inp.value, borrow=inp.mutable)
                self._containers.append(c)
                self._owned.append(i)
        # Theano's required inputs: no value, so every call gives one. Whatever fn[key] = v wrote into
        # such a container is no default (it made a forgotten argument a stale value silently).
        self._required = frozenset(i for i in self._owned if inputs[i].value is None)
        # What each update writes: container index -> expression
        self._updates: list[tuple[int, Variable]] = []
        for i, inp in enumerate(inputs):
            if inp.update is not None:
                self._updates.append((i, inp.update))
        for var, expr in updates:
            idx = next(i for i, inp in enumerate(inputs) if inp.variable is var)
            self._updates.append((idx, expr))
        targets = [idx for idx, _ in self._updates]
        self._take_locks()
        for idx in targets:
            if targets.count(idx) > 1:
                label = inputs[idx].name or repr(inputs[idx].variable._data)
                raise ValueError(
                    f"polygrad.function: the shared variable {label} is given {targets.count(idx)} updates; "
                    f"give each variable one update (Theano raises too)"
                )
        self._positional = [i for i, inp in enumerate(inputs) if not inp.implicit]
        self._programs: dict[tuple, Program] = {}
        # A name several inputs share (two shared variables named "W", every layer's weight) finds
        # none of them: it is ambiguous, as in Theano; they are found by variable or position.
        named: dict[Any, list[int]] = {}
        for i, inp in enumerate(inputs):
            if inp.name is not None:
                named.setdefault(inp.name, []).append(i)
        self._ambiguous = {k: v for k, v in named.items() if len(v) > 1}
        # Last: from here on, setting an attribute named after an input sets its value (fn.s = v).
        self._by_name = {k: v[0] for k, v in named.items() if len(v) == 1}

    # -- pickle and deepcopy (Theano pickles functions): programs compile again, locks are new --
    def __getstate__(self) -> dict:
        state = {k: v for k, v in self.__dict__.items()
                 if k not in ("_locks", "_cache_lock", "_programs")}
        state["_programs"] = {}
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._take_locks()

    def __copy__(self) -> "CompiledFunction":
        """``copy.copy(fn)`` is ``fn.copy()`` (Theano's): its own state, not a view of this one's
        containers (a shallow copy of the attributes shared them, so a call of the copy
        advanced the original's state)."""
        return self.copy()

    # -- lookups -----------------------------------------------------------------
    # (made at each access: held by the function, a lookup holding it back was a reference cycle)
    @property
    def value(self) -> _Lookup:
        """``fn.value[key]``: the value of an input, by position, name or variable (settable)."""
        return _Lookup(self, True)

    @property
    def container(self) -> _Lookup:
        """``fn.container[key]``: the :class:`Container` of an input, by position, name or variable."""
        return _Lookup(self, False)

    def _container(self, key: Any) -> Container:
        if isinstance(key, Variable):
            for inp, c in zip(self.inputs, self._containers):
                if inp.variable is key:
                    return c
            raise KeyError(f"polygrad: {key!r} is not an input of the function")
        try:
            named = self._by_name.get(key)
        except TypeError:  # an unhashable key
            named = None
        if isinstance(key, int) and not isinstance(key, bool):
            n = len(self._containers)
            if -n <= key < n:
                if named is not None and named != key % n:
                    raise KeyError(
                        f"polygrad: the key {key} is ambiguous: it is the position of input {key % n} and the name of "
                        f"input {named}; look one up by its variable"
                    )
                return self._containers[key]
            if named is None and key not in self._ambiguous:
                raise KeyError(f"polygrad: the function has {n} inputs; there is no input at position {key}")
        if named is not None:
            return self._containers[named]
        if isinstance(key, (str, int)) and key in self._ambiguous:
            raise KeyError(f"polygrad: {self._ambiguity(key)}")
        if isinstance(key, str):
            raise KeyError(f"polygrad: the function has no input named {key!r}")
        raise KeyError(f"polygrad: {key!r} is not an input of the function")

    def _ambiguity(self, name: Any, then: str = "look one up by its variable (fn[w]) or its position") -> str:
        """The message for a name that several inputs have."""
        which = ", ".join(f"{i} ({self.inputs[i].variable._data!r})" for i in self._ambiguous[name])
        return f"the name {name!r} is ambiguous: inputs {which} of {_who(self.name)} all have it; {then}"

    def __getitem__(self, key: Any) -> Any:
        return self._container(key).value

    def __setitem__(self, key: Any, value: Any) -> None:
        self._container(key).set(value)

    def __getattr__(self, name: str) -> Any:
        """``fn.s``: the value of the input named ``s`` (the function's own attributes win)."""
        by_name = self.__dict__.get("_by_name")
        if by_name is not None and not name.startswith("__") and name in by_name:
            return self._containers[by_name[name]].value
        if by_name is not None and name in self.__dict__["_ambiguous"]:
            raise AttributeError(f"polygrad: {self._ambiguity(name)}")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        """``fn.s = v`` sets the value of the input named ``s``, unless ``s`` is an attribute of the function."""
        by_name = self.__dict__.get("_by_name")
        if by_name is not None and name in by_name and name not in self.__dict__ and not hasattr(type(self), name):
            self._containers[by_name[name]].set(value)
            return
        if (by_name is not None and name in self.__dict__["_ambiguous"] and name not in self.__dict__
                and not hasattr(type(self), name)):
            raise AttributeError(f"polygrad: {self._ambiguity(name)}")
        object.__setattr__(self, name, value)

    # -- calling -----------------------------------------------------------------
    def _bind(self, args: tuple, kwargs: dict) -> tuple[list, list]:
        """The values of a call, and the containers a passed value overwrites (``In(value=Container,
        implicit=False)``)."""
        n = len(self.inputs)
        given: list[Any] = [None] * n
        if len(args) > len(self._positional):
            raise TypeError(
                f"polygrad: function{' ' + self.name if self.name else ''} takes at most {len(self._positional)} "
                f"positional inputs, got {len(args)}"
            )
        for i, a in zip(self._positional, args):
            given[i] = a
        for k, v in kwargs.items():
            i = self._by_name.get(k)
            if i is None or self.inputs[i].implicit:
                named = [str(inp.name) for inp in self.inputs if inp.name is not None and not inp.implicit]
                unnamed = sum(1 for inp in self.inputs if inp.name is None and not inp.implicit)
                raise TypeError(
                    f"Unknown input or state: {k}. The function has {len(named)} named inputs ({', '.join(named)}), "
                    f"and {unnamed} unnamed input{'' if unnamed == 1 else 's'} which thus cannot be accessed through "
                    f"keyword argument (use 'name=...' in a variable's constructor to give it a name)."
                )
            if given[i] is not None:
                raise TypeError(f"polygrad: input {k} was given both by position and by keyword")
            given[i] = v
        values = []
        writes = []
        for i, (inp, c) in enumerate(zip(self.inputs, self._containers)):
            v = given[i]
            if v is None:
                if i in self._required or c.value is None:
                    label = inp.name if inp.name is not None else repr(inp.variable._data)
                    if c.value is None:  # (Theano's text, exactly)
                        raise TypeError(f"Missing required input: {label}")
                    raise TypeError(f"Missing required input: {label} ({_who(self.name)}: an input without a "
                                    f"default value is given at every call; the value written into its container "
                                    f"(fn[key] = ...) is no default)")
                values.append(c.value)
                continue
            if self.trust_input:
                values.append(v._data if isinstance(v, Variable) else v)
            else:
                label = f"input {inp.name}" if inp.name is not None else f"input {i}"
                if self.name is not None:
                    label += f" of function {self.name!r}"
                # (by the container's variable: a value written into a container of In(value=Container) fits it)
                values.append(to_value(c.variable, v, copy=False, strict=inp.strict, allow_downcast=self._downcast[i],
                                       what=label))
            if isinstance(inp.value, Container):
                writes.append(i)
        return values, writes

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.profile is not None:
            start = time.perf_counter()
            try:
                return self._call(args, kwargs)
            finally:
                self.profile.n_calls += 1
                self.profile.call_time += time.perf_counter() - start
        return self._call(args, kwargs)

    def _take_locks(self) -> None:
        """The locks of the containers a call reads as state or writes: shared variables, inputs
        whose value is a Container, and whatever an update writes. Taken in one order (by id) by
        every function, they make each call's read, run and write one step for the other
        threads (no update lost, no mix of old and new values read), without deadlock. And the
        lock of the program cache, which every call reads and may reorder (stateless ones too)."""
        self._cache_lock = threading.Lock()
        state = {id(self._containers[i]): self._containers[i] for i in
                 [idx for idx, _ in self._updates]
                 + [i for i, inp in enumerate(self.inputs) if inp.implicit or isinstance(inp.value, Container)]}
        self._locks = tuple(state[k].lock for k in sorted(state))

    def _call(self, args: tuple, kwargs: dict) -> Any:
        locks = self._locks
        if not locks:
            return self._run(args, kwargs)
        for lock in locks:
            lock.acquire()
        try:
            return self._run(args, kwargs)
        finally:
            for lock in reversed(locks):
                lock.release()

    def _run(self, args: tuple, kwargs: dict) -> Any:
        values, writes = self._bind(args, kwargs)
        try:
            program, results = self._execute(values)
        except Exception as exc:
            if self.name is not None:
                exc.add_note(f"(while running {_who(self.name)})")
            mixed = _mixed_backends(self.inputs, values)
            if mixed:
                exc.add_note(mixed)
            raise
        n_out = len(self.outputs)
        outs, ups = list(results[:n_out]), list(results[n_out:])
        backend = _backend_of(values, results)
        if backend is not None and backend.lazy:
            # Computed in one pass and kept lazy, so that shared state stays on its backend (a
            # dask shared variable became a NumPy array, and the next call mixed backends);
            # the outputs are then handed out concrete.
            done = backend.persist(tuple(outs + ups))
            outs, ups = list(backend.materialize(done[:n_out])) if n_out else [], list(done[n_out:])
        # Check every update before writing any: a failing call changes nothing.
        for (idx, expr), new in zip(self._updates, ups):
            old = self._containers[idx].value
            # None where a dimension may change; the container's variable's (a swapped-in one's own)
            declared = self._containers[idx].variable._data.shape
            if declared is None and old is not None:
                declared = tuple(old.shape)
            if old is not None and (new.dtype != old.dtype or not fits(declared, tuple(new.shape))):
                label = self._containers[idx].name or self.inputs[idx].name or f"input {idx}"
                want = tuple("?" if d is None else d for d in declared)
                raise ValueError(
                    f"polygrad: the update of {label} has shape {tuple(new.shape)} and dtype {new.dtype}, but {label} "
                    f"has shape {want} and dtype {old.dtype}"
                )
        # A value passed for an input whose value is a Container overwrites its content (Theano);
        # an update of the same input, applied next, replaces it in turn.
        for i in writes:
            self._containers[i]._value = _own(values[i], not self.inputs[i].mutable)
        own = _owner(program, [not o.borrow for o in self.outputs]
                     + [not self.inputs[i].mutable for i, _ in self._updates], n_out)
        for k, ((idx, expr), new) in enumerate(zip(self._updates, ups)):
            self._containers[idx]._value = own(n_out + k, new)
        return self._returned([own(k, o) for k, o in enumerate(outs)])

    def _returned(self, outs: list) -> Any:
        """What a call returns of its outputs' values: one, a dict by the keys given, or the list."""
        if self._single:
            return outs[0]
        if self._keys is not None:
            return dict(zip(self._keys, outs))
        return outs

    def _execute(self, values: list) -> tuple[Program, tuple]:
        """Run the program for these values: the one compiled for their shapes and dtypes, or
        one traced for them where a shape that depends on the values changed (the program
        keeps the latest)."""
        program = self._program(values)
        try:
            return program, program(*values)
        except ShapeChanged:
            program = self._program(values, again=True)
        try:
            return program, program(*values)
        except ShapeChanged as e:  # changed between tracing and running: it depends on random draws
            raise NotImplementedError(
                f"{_who(self.name)}: the shape of {e.op_name} "
                f"changed between tracing ({e.traced}) and running ({e.now}) on the same inputs, so it depends on "
                f"random values, which a compiled program cannot follow; use a fixed-shape form such as where()"
            ) from None

    def _program(self, values: list, again: bool = False) -> Program:
        """The program for these values' types, shapes and dtypes: cached, at most
        :data:`MAX_PROGRAMS` of them (one per batch size of a loop over lengths grew without
        bound, each program holding constants of its shapes)."""
        key = _signature(values)
        programs = self._programs
        with self._cache_lock:  # (calls from several threads evicted one key twice: a KeyError)
            try:
                program = programs.pop(key, None)
            except TypeError:  # a dtype that is not hashable: by its name
                key = _signature(values, by_name=True)
                program = programs.pop(key, None)
            if program is not None and not again:
                programs[key] = program  # the most recently used last: the least recently used goes first
                return program
        start = time.perf_counter()
        targets = [o.variable._data for o in self.outputs] + [e._data for _, e in self._updates]
        syms = self._syms
        borrowed = [i for i, inp in enumerate(self.inputs) if inp.borrow]
        try:
            program = build(syms, values, targets, self._givens, optimize=self._optimize, borrowed=borrowed)
        except RandomShape as e:
            raise NotImplementedError(
                f"{_who(self.name)}: the shape of "
                f"{e.op_name} depends on the random draws of {e.source}, so it would change at every call, "
                f"which a compiled program cannot follow; use a fixed-shape form such as where()") from None
        with self._cache_lock:  # (not while tracing: another thread's call need not wait for it)
            programs.pop(key, None)  # (another thread's trace of the same key)
            while len(programs) >= MAX_PROGRAMS:  # the least recently used first (dicts keep insertion order)
                del programs[next(iter(programs))]
            programs[key] = program
        if self.profile is not None:
            self.profile.n_compiles += 1
            self.profile.compile_time += time.perf_counter() - start
        return program

    # -- other forms ---------------------------------------------------------------
    def as_pure(self) -> Any:
        """A pure function ``(inputs, state) -> (outputs, new_state)``.

        ``inputs`` are values for the explicit inputs without updates, in order; ``state``
        maps each stateful input (one with an update) to its value, by the key it has in
        ``new_state``: its name, or its position in ``fn.inputs`` where it has none or shares
        it with another input (two shared variables named ``"W"``: one state each, never
        merged). A position is accepted for a named one too. Nothing is read from or written
        to containers.
        """
        stateful = {idx: (self.inputs[idx].name if self.inputs[idx].name in self._by_name else idx)
                    for idx in sorted(idx for idx, _ in self._updates)}
        keys, positions = list(stateful.values()), list(stateful)
        expected = f"the state keys are {keys}" + ("" if keys == positions else f" (or positions {positions})")
        clash = [k for k in keys if keys.count(k) > 1]
        if clash:  # an integer name that is the position (the key) of another, unnamed, stateful input
            raise ValueError(f"{_who(self.name)}.as_pure: the key {clash[0]!r} is the name of one stateful input and "
                             f"the position of another; give the input another name")
        accepted = {idx: idx for idx in stateful} | {k: idx for idx, k in stateful.items()}  # (a name wins)
        n_explicit = sum(1 for i, inp in enumerate(self.inputs) if not inp.implicit and i not in stateful)

        def label(i: int) -> str:
            what = f"state {stateful[i]!r}" if i in stateful else f"input {self.inputs[i].name or i}"
            return f"{what} of fn.as_pure()" + (f" of function {self.name!r}" if self.name is not None else "")

        def pure(inputs: Sequence[Any], state: dict) -> tuple[Any, dict]:
            inputs = list(inputs)
            if len(inputs) != n_explicit:
                raise TypeError(f"{_who(self.name)}.as_pure: the pure function takes {n_explicit} input values (the "
                                f"explicit inputs without updates, in order), got {len(inputs)}")
            given: dict[int, Any] = {}
            for k, v in state.items():
                idx = accepted.get(k)
                if idx is None or idx in given:
                    why = (self._ambiguity(k, "their states are keyed by position") if k in self._ambiguous else
                           f"stateful input {idx} is given twice (by name and position)" if idx is not None else
                           "no stateful input has that key (an input without update is not state)")
                    raise KeyError(f"{_who(self.name)}.as_pure: state entry {k!r}: {why}; {expected}")
                given[idx] = v
            missing = [stateful[i] for i in stateful if i not in given]
            if missing:
                raise KeyError(f"{_who(self.name)}.as_pure: state has no entry for {', '.join(map(repr, missing))}; "
                               f"{expected}")
            values = []
            it = iter(inputs)
            for i, inp in enumerate(self.inputs):
                if i in stateful:
                    v = given[i]
                elif inp.implicit:
                    values.append(self._containers[i].value)
                    continue
                else:
                    v = next(it)
                values.append(to_value(inp.variable, v, copy=False, strict=inp.strict,
                                       allow_downcast=self._downcast[i], what=label(i)))
            program, results = self._execute(values)
            n_out = len(self.outputs)
            own = _owner(program, [True] * len(results), n_out)
            owned = list(results)
            for k in [*range(n_out, len(results)), *range(n_out)]:  # the updates first, as a call does
                owned[k] = own(k, results[k])
            new_state = {stateful[idx]: r for (idx, _), r in zip(self._updates, owned[n_out:])}
            return self._returned(owned[:n_out]), new_state

        return pure

    def copy(self, share_memory: bool = False, swap: dict | None = None, delete_updates: bool = False,
             name: str | None = None, profile: Any = None) -> "CompiledFunction":
        """A copy of this function (Theano's ``Function.copy``).

        :param share_memory: True: the copy uses this function's own containers (the
            values and state of its ``In`` inputs), so a call of either changes both;
            False: it starts with copies of their current values. Shared variables
            (and containers passed as ``In(value=Container)``) are always shared.
        :param swap: ``{old_shared: new_shared}``: the copy reads and updates
            ``new_shared`` where this function uses ``old_shared`` (same dtype and shape);
            ``new_shared`` is its input then (``copy[new_shared]``), under the old input's name.
        :param delete_updates: the copy has no updates.
        :param name: the copy's name (default: this name + " copy").
        :param profile: as ``pg.function``'s.
        """
        new = object.__new__(CompiledFunction)
        new.__dict__.update(self.__dict__)
        new.name = name if name is not None else (None if self.name is None else f"{self.name} copy")
        new.profile = _profile(profile, new.name)
        swap = dict(swap or {})
        containers, inputs = list(self._containers), list(self.inputs)
        for old, repl in swap.items():
            if not isinstance(old, SharedVariable) or not isinstance(repl, SharedVariable):
                raise TypeError(f"polygrad: copy(swap=...) maps shared variables to shared variables, got {old!r}: {repl!r}")
            i = next((i for i, inp in enumerate(self.inputs) if inp.variable is old), None)
            if i is None:
                raise ValueError(f"polygrad: copy(swap=...): {old.name or old!r} is not a shared variable of this function")
            a, b = old._data, repl._data
            # repl's values must fit what the function may have read of old's shape (None: nothing)
            if a.dtype != b.dtype or (a.shape is not None and not fits(a.shape, b.shape)):
                raise TypeError(
                    f"polygrad: copy(swap=...): {repl.name or repl!r} (dtype {b.dtype}, shape {b.shape}) cannot replace "
                    f"{old.name or old!r} (dtype {a.dtype}, shape {a.shape})"
                )
            containers[i] = repl.container
            inputs[i] = copy.copy(self.inputs[i])  # (Theano's swap: the In's variable and value, its name kept)
            inputs[i].variable, inputs[i].value = repl, repl.container
        if not share_memory:
            for i in self._owned:
                c = self._containers[i]
                fresh = Container(c.variable, None, name=c.name, allow_downcast=c.allow_downcast, strict=c.strict,
                                  hint=ARGUMENT_HINT)
                if c.value is not None:
                    fresh._value = _own(c.value, True)
                containers[i] = fresh
        new._containers = containers
        new.inputs = inputs
        if delete_updates:
            new._updates = []
            new._programs = {}
        else:
            with self._cache_lock:
                new._programs = dict(self._programs)  # programs are pure: the copy starts with this one's
        new._take_locks()
        return new

    def free(self) -> None:
        """Drop the compiled programs (and the constants they hold); the next call compiles
        again. Values and state in containers are kept (Theano's ``free`` keeps inputs too)."""
        with self._cache_lock:
            self._programs.clear()

    def program_source(self) -> str:
        """The generated program(s), for inspection."""
        with self._cache_lock:
            programs = list(self._programs.values())
        return "\n\n".join(p.source for p in programs)

    def __repr__(self) -> str:
        return f"<polygrad compiled function {self.name or ''} inputs={[i.name for i in self.inputs]}>"


def _check_container(inp: In, k: int, name: str | None) -> None:
    """TypeError where the Container given as ``In(x, value=...)`` holds values ``x`` may not take:
    another dtype, or a shape ``x``'s declared one does not admit. The function reads its value
    as ``x``'s, unconverted, and a call (``implicit=False``) writes ``x``'s argument into it: a
    float32 shared variable's container given to a float64 input became float64 silently."""
    x, c = inp.variable._data, inp.value.variable._data
    if (x.dtype is None or c.dtype == x.dtype) and fits(x.shape, c.shape):
        return

    def shape(s: tuple | None) -> Any:
        return "any" if s is None else tuple("?" if d is None else d for d in s)

    raise TypeError(
        f"{_who(name)}: input {inp.name if inp.name is not None else k} is {x!r} (dtype {x.dtype}, shape "
        f"{shape(x.shape)}), but its value is a Container of {c!r} (dtype {c.dtype}, shape {shape(c.shape)}); a "
        f"container given as an input's value holds values of that input's dtype and shape"
    )


def _signature(values: list, by_name: bool = False) -> tuple:
    """The key of a call's program: each value's type, shape and dtype. The dtype object
    itself (``str(dtype)`` costs NumPy 5 us), or its name where it is not hashable (the
    standard asks dtypes only for ``==``)."""
    if by_name:
        return tuple([(type(v), tuple(v.shape), str(v.dtype)) for v in values])
    return tuple([(type(v), tuple(v.shape), v.dtype) for v in values])


def _backend_of(values: list, results: tuple) -> Any:
    for v in list(values) + list(results):
        if hasattr(v, "shape") and type(v) not in (bool, int, float, complex):
            try:
                return backend_of_type(type(v))
            except TypeError:
                continue
    return None


def _mixed_backends(inputs: list[In], values: list) -> str | None:
    """For a failed call, which inputs hold arrays of which backend, where they are several (an
    argument of another backend, or a shared variable ``set_value`` moved): the kernel's
    message names arrays, not inputs."""
    by: dict[str, list[str]] = {}
    for i, (inp, v) in enumerate(zip(inputs, values)):
        if type(v) in (bool, int, float, complex) or not hasattr(v, "shape"):
            continue
        try:
            backend = backend_of_type(type(v)).name
        except TypeError:
            continue
        what = "shared variable" if isinstance(inp.variable, SharedVariable) else "input"
        by.setdefault(backend, []).append(f"{what} {inp.name if inp.name is not None else i}")
    if len(by) < 2:
        return None
    return ("(the function's inputs hold arrays of several backends: "
            + "; ".join(f"{b}: {', '.join(names)}" for b, names in by.items())
            + "; give them arrays of one backend, pg.to_backend(x, name) moves one)")


def _who(name: str | None) -> str:
    """``polygrad.function`` and its name, for messages."""
    return "polygrad.function" if name is None else f"polygrad.function {name!r}"


def _owner(program: Program, may_copy: list, n_out: int) -> Any:
    """``own(k, value)``: result ``k`` of one run of ``program`` as its holder (an output, an
    update's container: the results from ``n_out`` on) may keep it. ``may_copy[k]`` is False
    for a holder that takes the value as it is (``borrow``, a mutable input). The memory of
    each root (see ``Program.roots``) is handed out as it is once: to the holders that take it
    so, else to the first; any other holder of it (the same value, or a view of it: ``y`` and
    ``y.T``) gets a copy, as does a value that may alias an input (for an update, a borrowed
    input too: the argument of ``In(x, borrow=True)`` became the shared state itself)."""
    kinds, roots = program.out_refs, program.roots
    aliases = program.may_alias_input[:n_out] + program.may_alias_any_input[n_out:]
    handed = {roots[k] for k, m in enumerate(may_copy) if not m and kinds[k][0] != "c"}

    def own(k: int, value: Any) -> Any:
        if kinds[k][0] == "c":  # a constant of the program, borrowed or not: a write would change later calls
            return _own(value, True)
        if not may_copy[k]:
            return _own(value, False)
        root = roots[k]
        repeat = root in handed
        handed.add(root)
        return _own(value, aliases[k] or repeat)

    return own


def _refuse_cuts_on_gradient_paths(roots: list, known: set, give_map: dict, inputs: list, name: str | None) -> None:
    """NotImplementedError where a gradient (from a ``wrt`` to the cost) passes through an
    intermediate expression the program does not compute: one givens replaces, or one given
    as an input. Theano differentiates the graph as it was built, through that expression's
    own operations, and then substitutes its value; a trace computes one value per expression,
    so polygrad cannot follow that (the gradient silently lost those terms: zeros for a weight
    read only through a given ``h = X @ W``). A replaced or given input or shared variable, a
    ``wrt`` itself, or an expression no ``wrt`` leads to through floating-point values, is a
    leaf of the gradient either way: its replacement or argument gives its value."""
    given = {inp.variable._data.id: k for k, inp in enumerate(inputs)}
    cuts = [r for r in walk(roots, known, give_map)
            if (r.id in give_map or r.id in given) and r.kind in ("op", "item", "detached")]
    if not cuts:
        return
    below: dict[tuple, set] = {}  # (cut expression, epoch) -> the ids its floating-point inputs lead back to

    def leads_to(r: SymbolicArray, g: SymbolicArray) -> set:
        key = (r.id, _symbolic.epoch(g.id))  # (one answer for the gradients that see the same cuts)
        if key not in below:
            # (a detached one leads back only where unchain_backward cut it after that gradient)
            args = [r] if r.kind == "detached" else [a for a in r.args if isinstance(a, SymbolicArray)]
            below[key] = {a.id for a in walk(args, set(), {}, floating_only=True, as_of=g.id)}
        return below[key]

    for g in (s for s in walk(roots, known, give_map) if s.kind == "grad"):
        cost, wrt = g.grad_of[0], g.grad_of[1]
        wrt_ids = {w.id for w in wrt}
        above = {s.id for s in walk([cost], known, {}, floating_only=True, as_of=g.id)}  # (where its gradient goes)
        for r in cuts:
            if r.id in above and (wrt_ids - {r.id}) & leads_to(r, g):  # (a wrt given or replaced itself: its own value)
                what = (f"givens replaces {r!r}, an expression" if r.id in give_map else
                        f"input {given[r.id]} is {r!r}, an intermediate expression")
                raise NotImplementedError(
                    f"{_who(name)}: {what} the gradient of {cost!r} passes through on its way to "
                    f"{', '.join(repr(w) for w in wrt)}; Theano differentiates the expression as it was built "
                    f"there, which a traced program cannot follow: "
                    + ("replace an input of that expression instead" if r.id in give_map else
                       "give an input of that expression instead, or build the cost on a new symbolic input")
                )


def _own(value: Any, copy: bool) -> Any:
    """Return ``value`` as an array the caller owns (copied when it may alias), 0-d results as arrays."""
    if type(value) in (bool, int, float, complex) or (not copy and value.ndim != 0):
        return value
    xp = backend_of_type(type(value)).xp
    return xp.asarray(value, copy=True) if copy else xp.asarray(value)


def function(inputs: Sequence[Any], outputs: Any = None, mode: Any = None, updates: Any = None, givens: Any = None,
             no_default_updates: Any = False, accept_inplace: bool = False, name: str | None = None,
             rebuild_strict: bool = True, allow_input_downcast: bool | None = None, profile: Any = None,
             on_unused_input: str | None = None, *, trust_input: bool = False) -> CompiledFunction:
    """Compile a symbolic graph into a callable (Theano's ``function``, with its keywords in its order).

    :param inputs: symbolic variables, :class:`In` instances or Theano's shortcut tuples.
        An intermediate expression may be an input: its value is given, not computed.
    :param outputs: None, one variable or :class:`Out`, a list of them, or a dict of them by
        string keys (the call returns a dict with the same keys, as Theano's ``output_keys``).
    :param mode: None or ``"FAST_RUN"`` (fold constants, merge common
        subexpressions, drop dead code) or ``"FAST_COMPILE"`` (only drop dead code).
    :param updates: ``[(shared_variable, new_value_expression), ...]`` (or a
        dict): computed from the old values, applied together after the outputs;
        one update per variable.
    :param givens: ``[(variable, replacement), ...]``: substitutions in the graph.
    :param no_default_updates: True: ignore every shared variable's
        ``default_update``; a list: ignore those of these shared variables.
    :param accept_inplace: accepted for Theano's sake; polygrad graphs hold no
        in-place operations, and a compiled function never writes into an array
        it did not make (it may reuse its own dead intermediates).
    :param name: the function's name (in its repr and errors).
    :param rebuild_strict: True (default): a ``givens`` replacement must have
        the dtype and number of dimensions of what it replaces; False: anything.
    :param allow_input_downcast: True: convert arguments to the inputs' dtypes
        even where that loses precision; False: never; None (default): only
        Python floats into floating inputs. ``In(..., allow_downcast=)`` wins.
    :param profile: True (or a :class:`ProfileStats`): record calls and
        compilations in ``fn.profile``.
    :param on_unused_input: what an input that no output or update needs does:
        ``"raise"`` (default, as Theano: :class:`UnusedInputError`), ``"warn"``, ``"ignore"``.
    :param trust_input: skip the checks and conversions of arguments (fast path).
    """
    if mode not in MODES:
        if isinstance(mode, (list, tuple, dict)):
            raise TypeError(
                "polygrad.function: the third argument is mode, as in Theano; pass updates by keyword (updates=...)"
            )
        raise ValueError(f"polygrad.function: mode must be one of {MODES[1:]} (or None), got {mode!r}")
    if on_unused_input not in ON_UNUSED_INPUT:
        raise ValueError(f"polygrad.function: on_unused_input must be 'raise', 'warn' or 'ignore', got {on_unused_input!r}")
    if allow_input_downcast not in (None, True, False):
        raise TypeError(f"polygrad.function: allow_input_downcast must be None, True or False, got {allow_input_downcast!r}")
    ins = [_upgrade(i) for i in inputs]
    seen_vars: list[Variable] = []
    seen_names: set = set()
    optional = False
    for inp in ins:
        if any(inp.variable is v for v in seen_vars):
            raise ValueError(f"polygrad.function: the variable {inp.variable._data!r} is given twice as an input")
        seen_vars.append(inp.variable)
        if inp.name is not None:
            if inp.name in seen_names:
                raise ValueError(f"polygrad.function: two inputs are named {inp.name!r}; input names must be unique")
            seen_names.add(inp.name)
        if isinstance(inp.variable, SharedVariable):  # (a value given at the call replaced its state)
            raise TypeError(
                f"polygrad.function: the shared variable {inp.variable.name or inp.variable._data!r} cannot be an "
                f"explicit input (Theano refuses it too): the graph reads it without one; to give its value at "
                f"the call, replace it by a symbolic input with givens"
            )
        if inp.update is not None and inp.value is None:  # (required at every call: its update written, never read)
            label = repr(inp.name) if inp.name is not None else repr(inp.variable._data)
            raise ValueError(f"polygrad.function: input {label} has an update but no value; an input that updates "
                             f"itself needs its initial state as value (Theano raises too)")
        if inp.implicit:
            continue
        if inp.value is None and optional:
            raise TypeError(
                f"polygrad.function: the required input {inp.name or inp.variable._data!r} follows an input with a "
                f"default value; required inputs come first"
            )
        optional = optional or inp.value is not None
    ups = list(updates.items()) if isinstance(updates, dict) else list(updates or [])
    for var, expr in ups:
        if not isinstance(var, SharedVariable):
            raise TypeError(f"polygrad.function: updates must target shared variables, got {var!r}")
        if not is_symbolic(expr):
            raise TypeError(f"polygrad.function: the update of {var.name or var!r} must be a symbolic expression, got {expr!r}")
    giv = list(givens.items()) if isinstance(givens, dict) else list(givens or [])
    for a, b in giv:
        if not is_symbolic(a) or not is_symbolic(b):
            raise TypeError(f"polygrad.function: givens pairs symbolic variables, got ({a!r}, {b!r})")
        da, db = a._data, b._data
        if rebuild_strict and ((da.dtype and db.dtype and da.dtype != db.dtype)
                               or (da.ndim is not None and db.ndim is not None and da.ndim != db.ndim)):
            raise TypeError(
                f"polygrad.function: givens replaces {da!r} (dtype {da.dtype}, ndim {da.ndim}) by {db!r} (dtype "
                f"{db.dtype}, ndim {db.ndim}); with rebuild_strict=True (the default) a replacement has the same dtype "
                f"and number of dimensions; pass rebuild_strict=False to allow it"
            )
    replaced = {a._data.id for a, _ in giv}
    for inp in ins:
        if inp.variable._data.id in replaced:  # it would be read nowhere: its argument dropped silently
            raise ValueError(
                f"{_who(name)}: givens replaces "
                f"{inp.variable._data!r}, an input of the function; an input is given its value at each "
                f"call, so replacing it has no effect: remove it from the inputs or from givens"
            )
    explicit = list(ins)
    known = {inp.variable._data.id for inp in ins}
    give_map, originals = _substitutions([(a._data, b._data) for a, b in giv], known, name)
    outs, keys, single = _output_list(outputs, name)
    roots = [getattr(o.variable if isinstance(o, Out) else o, "_data", None) for o in outs]
    for k, r in enumerate(roots):
        if isinstance(r, SymbolicArray):
            continue
        o = outs[k]
        if single and not hasattr(getattr(o, "_data", o), "shape") and type(o) not in (bool, int, float, complex):
            raise TypeError(f"{_who(name)}: outputs must be None, one symbolic expression or Out, a list of them or "
                            f"a dict of them by name; got {type(o).__name__} {o!r:.60}")
        raise TypeError(
            f"{_who(name)}: output {k if keys is None else repr(keys[k])} is not a symbolic expression but "
            f"{describe(o)}; outputs are expressions of the inputs (a constant array goes in as pg.shared(value))"
        )
    roots += [e._data for _, e in ups] + [i.update._data for i in ins if i.update is not None]
    _refuse_cuts_on_gradient_paths(roots, known, give_map, ins, name)
    updated = [var for var, _ in ups] + [i.variable for i in ins if i.update is not None]
    reached, defaults = _reach(roots, known, give_map, updated, no_default_updates)
    ups += defaults
    used = {s.id for s in reached if s.id not in give_map}
    for s in reached:
        if s.id in give_map:
            continue
        if s.kind == "input" and s.id not in known:
            raise MissingInputError(
                f"polygrad.function: the outputs depend on the symbolic input {s!r}, which is not among the inputs; "
                f"add it to the inputs (or use pg.shared for state)"
            )
    # Shared variables the graph reads or updates are implicit inputs holding their containers
    # (one replaced by givens is read nowhere, but an update of it still writes its container).
    # (The graph may read a replaced one's original value in its replacement: originals' symbol.)
    for s in [s for s in reached if s.kind == "shared" and s.id not in give_map] + [var._data for var, _ in ups]:
        var = s.container.variable
        if s.id not in known and var._data.id not in known:
            in_name = var.name if var.name not in seen_names else None
            ins.append(In(var, name=in_name, value=s.container, implicit=True, autoname=False))
            known.update((s.id, var._data.id))
    if on_unused_input != "ignore":
        _check_used(explicit, used, on_unused_input == "warn", name)
    return CompiledFunction(ins, outputs, ups, give_map, name, trust_input, allow_input_downcast=allow_input_downcast,
                            optimize=mode != "FAST_COMPILE", profile=profile, originals=originals)

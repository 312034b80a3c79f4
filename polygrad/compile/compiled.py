"""``pg.function``: compile a symbolic graph into a callable with state (Theano's ``function``)."""

from __future__ import annotations

from typing import Any, Iterator, Sequence

from polygrad.compile.program import MissingInputError, Program, build
from polygrad.compile.io import Container, In, Out, SharedVariable, to_value
from polygrad.compile.symbolic import SymbolicArray, is_symbolic
from polygrad.core.dispatch import backend_of_type
from polygrad.core.variable import Variable

__all__ = ["function", "CompiledFunction"]


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


def _walk(roots: Sequence[SymbolicArray]) -> Iterator[SymbolicArray]:
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        s = stack.pop()
        if s.id in seen:
            continue
        seen.add(s.id)
        yield s
        if s.kind in ("op", "item"):
            stack.extend(a for a in s.args if isinstance(a, SymbolicArray))
        elif s.kind == "grad":
            stack.append(s.grad_of[0])
            stack.extend(s.grad_of[1])


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


class CompiledFunction:
    """A compiled symbolic graph: call it with values; state lives in containers."""

    def __init__(self, inputs: list[In], outputs: Any, updates: list[tuple[Variable, Variable]], givens: dict,
                 name: str | None, trust_input: bool) -> None:
        self.name = name
        self.trust_input = trust_input
        self.inputs = inputs
        self._single = not isinstance(outputs, (list, tuple)) and outputs is not None
        outs = [] if outputs is None else list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
        self.outputs = [o if isinstance(o, Out) else Out(o) for o in outs]
        self._givens = givens
        self._containers = []
        for inp in inputs:
            if isinstance(inp.variable, SharedVariable) and inp.value is None:
                self._containers.append(inp.variable.container)
            elif isinstance(inp.value, Container):
                self._containers.append(inp.value)
            else:
                c = Container(inp.variable, None, name=inp.name)
                if inp.value is not None:
                    c.set(inp.value, borrow=inp.mutable)
                self._containers.append(c)
        # What each update writes: container index -> expression
        self._updates: list[tuple[int, Variable]] = []
        for i, inp in enumerate(inputs):
            if inp.update is not None:
                self._updates.append((i, inp.update))
        for var, expr in updates:
            idx = next(i for i, inp in enumerate(inputs) if inp.variable is var)
            self._updates.append((idx, expr))
        self._positional = [i for i, inp in enumerate(inputs) if not inp.implicit]
        self._by_name = {inp.name: i for i, inp in enumerate(inputs) if inp.name is not None}
        self._programs: dict[tuple, Program] = {}
        self.value = _Lookup(self, True)
        self.container = _Lookup(self, False)

    # -- lookups -----------------------------------------------------------------
    def _container(self, key: Any) -> Container:
        if isinstance(key, int) and not isinstance(key, bool):
            return self._containers[key]
        if isinstance(key, str):
            if key in self._by_name:
                return self._containers[self._by_name[key]]
            raise KeyError(f"polygrad: the function has no input named {key!r}")
        for inp, c in zip(self.inputs, self._containers):
            if inp.variable is key:
                return c
        raise KeyError(f"polygrad: {key!r} is not an input of the function")

    def __getitem__(self, key: Any) -> Any:
        return self._container(key).value

    def __setitem__(self, key: Any, value: Any) -> None:
        self._container(key).set(value)

    # -- calling -----------------------------------------------------------------
    def _bind(self, args: tuple, kwargs: dict) -> list:
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
                named = [inp.name for inp in self.inputs if inp.name is not None and not inp.implicit]
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
        for i, (inp, c) in enumerate(zip(self.inputs, self._containers)):
            v = given[i]
            if v is None:
                if c.value is None:
                    label = inp.name if inp.name is not None else repr(inp.variable._data)
                    raise TypeError(f"Missing required input: {label}")
                values.append(c.value)
            elif self.trust_input:
                values.append(v._data if isinstance(v, Variable) else v)
            else:
                label = f"input {inp.name}" if inp.name else f"input {i}"
                values.append(to_value(inp.variable, v, copy=False, strict=inp.strict, what=label))
        return values

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        values = self._bind(args, kwargs)
        program = self._program(values)
        results = program(*values)
        n_out = len(self.outputs)
        outs, ups = list(results[:n_out]), list(results[n_out:])
        backend = _backend_of(values, results)
        if backend is not None and backend.lazy:
            done = backend.materialize(tuple(outs + ups))
            outs, ups = list(done[:n_out]), list(done[n_out:])
        # Check every update before writing any: a failing call changes nothing.
        for (idx, expr), new in zip(self._updates, ups):
            old = self._containers[idx].value
            label = self.inputs[idx].name or f"input {idx}"
            if old is not None and (tuple(new.shape) != tuple(old.shape) or new.dtype != old.dtype):
                raise ValueError(
                    f"polygrad: the update of {label} has shape {tuple(new.shape)} and dtype {new.dtype}, but {label} "
                    f"has shape {tuple(old.shape)} and dtype {old.dtype}"
                )
        # Each slot is handed out once as it is; a second holder (another output,
        # an update's container) gets a copy, as does anything aliasing an input.
        handed: set[int] = set()

        def own(k: int, value: Any, may_copy: bool) -> Any:
            kind, slot = program.out_refs[k]
            repeat = kind == "s" and slot in handed
            if kind == "s":
                handed.add(slot)
            return _own(value, may_copy and (program.may_alias_input[k] or repeat))

        for k, ((idx, expr), new) in enumerate(zip(self._updates, ups)):
            self._containers[idx]._value = own(n_out + k, new, not self.inputs[idx].mutable)
        outs = [own(k, o, not self.outputs[k].borrow) for k, o in enumerate(outs)]
        if self._single:
            return outs[0]
        return outs

    def _program(self, values: list) -> Program:
        key = tuple((type(v), tuple(v.shape), str(v.dtype)) for v in values)
        program = self._programs.get(key)
        if program is None:
            targets = [o.variable._data for o in self.outputs] + [e._data for _, e in self._updates]
            syms = [inp.variable._data for inp in self.inputs]
            program = build(syms, values, targets, self._givens)
            self._programs[key] = program
        return program

    # -- other forms ---------------------------------------------------------------
    def as_pure(self) -> Any:
        """A pure function ``(inputs, state) -> (outputs, new_state)``.

        ``inputs`` are values for the explicit inputs in order; ``state`` maps
        the names (or positions) of stateful inputs, those with an update, to
        values. Nothing is read from or written to containers.
        """
        stateful = [idx for idx, _ in self._updates]

        def pure(inputs: Sequence[Any], state: dict) -> tuple[Any, dict]:
            values = []
            it = iter(inputs)
            for i, inp in enumerate(self.inputs):
                if i in stateful:
                    key = inp.name if inp.name in state else i
                    values.append(to_value(inp.variable, state[key], copy=False))
                elif inp.implicit:
                    values.append(self._containers[i].value)
                else:
                    try:
                        values.append(to_value(inp.variable, next(it), copy=False))
                    except StopIteration:
                        raise TypeError(f"polygrad: pure function needs a value for input {inp.name or i}") from None
            program = self._program(values)
            results = program(*values)
            n_out = len(self.outputs)
            owned = [_own(r, program.may_alias_input[k]) for k, r in enumerate(results)]
            new_state = {(self.inputs[idx].name or idx): r for (idx, _), r in zip(self._updates, owned[n_out:])}
            outs = owned[:n_out]
            return (outs[0] if self._single else outs), new_state

        return pure

    def program_source(self) -> str:
        """The generated program(s), for inspection."""
        return "\n\n".join(p.source for p in self._programs.values())

    def __repr__(self) -> str:
        return f"<polygrad compiled function {self.name or ''} inputs={[i.name for i in self.inputs]}>"


def _backend_of(values: list, results: tuple) -> Any:
    for v in list(values) + list(results):
        if hasattr(v, "shape") and type(v) not in (bool, int, float, complex):
            try:
                return backend_of_type(type(v))
            except TypeError:
                continue
    return None


def _own(value: Any, copy: bool) -> Any:
    """Return ``value`` as an array the caller owns (copied when it may alias), 0-d results as arrays."""
    if type(value) in (bool, int, float, complex):
        return value
    xp = backend_of_type(type(value)).xp
    if copy:
        return xp.asarray(value, copy=True)
    if value.ndim == 0:
        return xp.asarray(value)
    return value


def function(inputs: Sequence[Any], outputs: Any = None, updates: Any = None, givens: Any = None,
             name: str | None = None, *, trust_input: bool = False) -> CompiledFunction:
    """Compile a symbolic graph into a callable (Theano's ``function``).

    :param inputs: symbolic variables, :class:`In` instances or Theano's shortcut tuples.
    :param outputs: None, one variable or :class:`Out`, or a list of them.
    :param updates: ``[(shared_variable, new_value_expression), ...]`` (or a
        dict): computed from the old values, applied together after the outputs.
    :param givens: ``[(variable, replacement), ...]``: substitutions in the graph.
    :param trust_input: skip the checks and conversions of arguments (fast path).
    """
    ins = [_upgrade(i) for i in inputs]
    seen_vars: list[Variable] = []
    seen_names: set[str] = set()
    optional = False
    for inp in ins:
        if any(inp.variable is v for v in seen_vars):
            raise ValueError(f"polygrad.function: the variable {inp.variable._data!r} is given twice as an input")
        seen_vars.append(inp.variable)
        if inp.name is not None:
            if inp.name in seen_names:
                raise ValueError(f"polygrad.function: two inputs are named {inp.name!r}; input names must be unique")
            seen_names.add(inp.name)
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
    give_map = {a._data.id: b._data for a, b in giv}
    # Shared variables the graph reads are implicit inputs holding their containers.
    outs = [] if outputs is None else list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    roots = [(o.variable if isinstance(o, Out) else o)._data for o in outs]
    roots += [e._data for _, e in ups] + [i.update._data for i in ins if i.update is not None] + [b for b in give_map.values()]
    for var, _ in ups:
        roots.append(var._data)
    known = {inp.variable._data.id for inp in ins}
    for s in _walk(roots):
        if s.kind == "input" and s.id not in known and s.id not in give_map:
            raise MissingInputError(
                f"polygrad.function: the outputs depend on the symbolic input {s!r}, which is not among the inputs; "
                f"add it to the inputs (or use pg.shared for state)"
            )
        if s.kind == "shared" and s.id not in known:
            var = s.container.variable
            in_name = var.name if var.name not in seen_names else None
            ins.append(In(var, name=in_name, value=s.container, implicit=True, autoname=False))
            known.add(s.id)
    return CompiledFunction(ins, outputs, ups, give_map, name, trust_input)

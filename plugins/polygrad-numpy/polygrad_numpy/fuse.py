"""Fused elementwise kernels for NumPy arrays, with numexpr where it pays.

A group of elementwise nodes (see ``polygrad_fuse_elementwise``) becomes a short
list of *steps*:

* a **numexpr step** evaluates in one pass a whole subtree of nodes numexpr
  computes exactly as NumPy does: arithmetic, comparisons, ``where``, casts from
  bool, ``maximum``/``minimum``/``relu`` written with ``where`` (NumPy's NaN and
  tie rules), ``sqrt``, ``abs``, and ``x ** c`` where NumPy's ``**`` computes it
  as ``sqrt``, ``square`` or ``reciprocal`` (see :func:`_power_ufunc`).
  Transcendental functions join where numexpr uses Intel's VML
  (``numexpr.use_vml``) or the group is tiny (:data:`TINY_BYTES`); elsewhere
  numexpr's own ``exp`` or ``tanh`` is slower than NumPy's loops;
* a **call step** runs one node as eager execution does: the row's kernel, the
  very call eager makes, or where it writes into a dead temporary (``out=``) the
  ufunc that kernel calls on arrays.

A 0-d node is always a call step: eagerly, a ufunc's 0-d result is a NumPy
scalar (numexpr's a 0-d array), and NumPy's ``**`` takes its array fast paths
for arrays only (``np.float64(-inf) ** 0.5`` is inf, ``np.array(-inf) ** 0.5``
NaN); call steps keep every 0-d value of the type eager gives it.

A value is *materialized* (gets an array) where it is an output of the group,
the argument of a call step, or too large a subtree to inline; everything else
stays inside a numexpr expression and never touches memory. Temporaries are
dropped after their last use, and a dead one of the right shape and dtype
receives the next result (``out=``): never an input of the group and never an
output (outputs are new arrays); the same for an input the program donates (an
intermediate of its own that nothing else reads).

The steps become one generated Python function (its text is the kernel's
``source``), so a step costs its call alone.

Only homogeneous nodes join a numexpr expression (the operands have the
result's dtype, or booleans as conditions; bool, int32, int64, float32, float64):
numexpr's promotion rules differ from NumPy's in the mixed cases, and Python
scalars are typed as NumPy types them (``x_float32 * 0.5`` stays float32).
"""

from __future__ import annotations

import functools
import operator
import re
from typing import Any, Callable

#: Below this many bytes in its largest node, a group is declined on the numpy backend: on
#: arrays that fit in the caches NumPy's loops (vectorized, one call each) beat numexpr's
#: blocked virtual machine, whose cost per call is tens of microseconds (measured: two ops on
#: 65,536 float32 take 13 us in NumPy, 45 us in numexpr; on 4,000,000 float64, 8 ms and 3-6 ms).
MIN_BYTES = 4 * 2**20
#: Below this many bytes a group is declined, unless it is tiny (:data:`TINY_BYTES`): the
#: passes a fused kernel saves cost less than its steps.
MIN_SMALL_BYTES = 64 * 2**10
#: At most this many bytes in its largest node, a group is *tiny*: every call is overhead (NumPy's
#: about 0.7 us, numexpr's about 1.2 us), so a numexpr step that computes several nodes pays,
#: transcendental functions included (measured: ``y + sin(y) * 0.01`` on 10 float64 takes
#: 2.3 us in NumPy, 1.1-1.5 us in numexpr; past 64 float64 or 128 float32 numexpr's ``tanh`` and
#: ``exp`` fall behind NumPy's vectorized loops). A value read by several expressions gets an
#: array (numexpr computes a repeated subexpression once), and a node alone in its expression is
#: a NumPy call.
TINY_BYTES = 512
#: A numexpr expression holds at most this many nodes and distinct variables; larger
#: subtrees are materialized (numexpr's programs are limited, and shared subtrees are repeated).
MAX_EXPRESSION_NODES = 48
MAX_EXPRESSION_VARIABLES = 24

_BINARY = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/"}
_COMPARE = {"equal": "==", "not_equal": "!=", "less": "<", "less_equal": "<=", "greater": ">",
            "greater_equal": ">="}
_LOGICAL = {"logical_and": "&", "logical_or": "|"}
_FLOAT_ONLY = {"divide"}
#: Array API name -> numexpr function (used where numexpr has VML).
_TRANSCENDENTAL = {"exp": "exp", "expm1": "expm1", "log": "log", "log1p": "log1p", "log2": "log2", "log10": "log10",
                   "sin": "sin", "cos": "cos", "tan": "tan", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh",
                   "asin": "arcsin", "acos": "arccos", "atan": "arctan", "asinh": "arcsinh", "acosh": "arccosh",
                   "atanh": "arctanh"}
_NUMEXPR_DTYPES = ("bool", "int32", "int64", "float32", "float64")
#: The ufuncs NumPy's ``x ** c`` calls for some Python numbers c (see :func:`_power_ufunc`), as numexpr
#: text. NumPy's ``power`` itself never joins an expression: numexpr's pow is another function (1 ulp
#: apart in a third of the elements), and sqrt(-inf) is NaN where pow gives inf.
_POWERS = {"sqrt": lambda p, t: f"sqrt({p[0]})", "square": lambda p, t: f"({p[0]} * {p[0]})",
           "reciprocal": lambda p, t: f"({t(1)} / {p[0]})"}
#: The rows whose kernel is a Python operator that, on NumPy arrays, calls this ufunc and nothing else
#: (not ``**``: it calls sqrt, square or reciprocal for some exponents).
_OPERATORS = {"add": operator.add, "subtract": operator.sub, "multiply": operator.mul, "divide": operator.truediv,
              "negative": operator.neg}


def numexpr_module() -> Any:
    """numexpr, or None where it is not installed."""
    try:
        import numexpr
    except ImportError:
        return None
    return numexpr


def build(nodes: tuple, inputs: tuple, outputs: tuple, *, numexpr: Any = None, min_bytes: int | None = None,
          require_gain: bool = True) -> Callable | None:
    """The fused kernel of a group, or None (declined).

    :param numexpr: the numexpr module, or None to run every node as a call step.
    :param min_bytes: decline groups whose largest node has fewer bytes (default :data:`MIN_BYTES`).
    :param require_gain: decline when no step computes more than one node.
    """
    import numpy as np

    min_bytes = MIN_BYTES if min_bytes is None else min_bytes
    if any(_size(n.shape) == 0 for n in nodes):
        return None  # empty arrays: nothing to save, and numexpr broadcasts a lower-rank empty operand wrongly
    largest = max(_size(n.shape) * np.dtype(n.dtype).itemsize for n in nodes)
    tiny = bool(min_bytes) and numexpr is not None and largest <= TINY_BYTES
    if min_bytes and not tiny and largest < min(min_bytes, MIN_SMALL_BYTES):
        return None  # a few kilobytes: the kernels cost less than the fused kernel's own steps
    if min_bytes and not tiny and largest < min_bytes:
        # Cache-sized arrays: NumPy alone, where a cast can be left to the ufunc reading it
        # (ReLU's backward: g * (ans > 0) in one multiply, no float mask) or a donated array
        # can take a result (the SGD update W - lr * g writes into g: no new array).
        reduced = _without_bool_casts(np, nodes, inputs, outputs)
        if reduced is None and not any(_donated(i) and (tuple(i[0]), np.dtype(i[1])) == (tuple(n.shape), np.dtype(n.dtype))
                                       for i in inputs for n in nodes):
            return None  # nothing to save: no cast to leave out, no donated array to write into
        nodes, outputs = reduced or (nodes, outputs)
        numexpr, require_gain = None, False
    arg_dtypes = [[_dtype_of(a, nodes, inputs) for a in n.args] for n in nodes]
    templates: list[Any] = [None] * len(nodes)
    if numexpr is not None:
        vml = bool(getattr(numexpr, "use_vml", False))
        for j, n in enumerate(nodes):
            templates[j] = _template(np, n, arg_dtypes[j], vml or tiny)
    users: list[list[int]] = [[] for _ in nodes]
    for j, n in enumerate(nodes):
        for kind, v in n.args:
            if kind == "node":
                users[v].append(j)
    out_set = set(outputs)
    # Which node values get an array (see the module's docstring).
    stored = [j in out_set or templates[j] is None or any(templates[u] is None for u in users[j])
              for j in range(len(nodes))]
    if tiny:  # a value read by several expressions gets an array: nothing is computed twice
        root = list(range(len(nodes)))  # the stored node whose expression computes a node
        for j in reversed(range(len(nodes))):
            roots = {root[u] for u in users[j]}
            if not stored[j] and len(roots) == 1:
                root[j] = roots.pop()
            else:
                stored[j] = True
    size = [0] * len(nodes)
    leaves: list[set] = [set() for _ in nodes]
    for j, n in enumerate(nodes):
        if templates[j] is None:
            continue
        size[j] = 1
        for kind, v in n.args:
            if kind == "node" and not stored[v]:
                size[j] += size[v]
                leaves[j] |= leaves[v]
            elif kind != "scalar":
                leaves[j].add((kind, v))
        if tiny and stored[j] and size[j] == 1:
            templates[j] = None  # alone in its expression: NumPy's call is the cheaper
        elif size[j] > MAX_EXPRESSION_NODES or len(leaves[j]) > MAX_EXPRESSION_VARIABLES:
            stored[j] = True
            size[j], leaves[j] = 1, {("node", j)}
    steps = [j for j in range(len(nodes)) if stored[j]]
    if require_gain and len(steps) >= len(nodes):
        return None
    plan = _Plan(np, numexpr, nodes, inputs, outputs, templates, stored, arg_dtypes, tiny)
    try:
        kernel = plan.kernel(steps)
    except Exception:  # an expression numexpr refuses: run unfused
        return None
    return kernel


def _without_bool_casts(np: Any, nodes: tuple, inputs: tuple, outputs: tuple) -> tuple | None:
    """The group less its casts of booleans to numbers read only by ``add``, ``subtract`` or
    ``multiply`` of that dtype (NumPy's ufunc casts the boolean in its loop, giving the same
    values and dtype), with the other nodes renumbered; None where there is no such cast."""
    users: list[list[int]] = [[] for _ in nodes]
    for j, n in enumerate(nodes):
        for kind, v in n.args:
            if kind == "node":
                users[v].append(j)

    def dtype(arg: tuple) -> Any:
        return None if arg[0] != "node" else np.dtype(nodes[arg[1]].dtype)

    dropped: set[int] = set()

    def typed(a: tuple, j: int, dt: Any) -> bool:
        """Whether operand ``a`` stays a number of dtype ``dt`` once ``j`` and the casts already
        dropped read their booleans."""
        return (a != ("node", j) and a[0] != "scalar" and not (a[0] == "node" and a[1] in dropped)
                and np.dtype(_dtype_of(a, nodes, inputs)) == dt)

    for j, n in enumerate(nodes):
        if (n.op != "astype" or j in outputs or not users[j] or n.args[0][0] != "node"
                or dtype(n.args[0]).kind != "b" or np.dtype(n.dtype).kind not in "iuf"):
            continue
        dt = np.dtype(n.dtype)
        # Each user keeps an operand of the number dtype: with both operands' casts dropped
        # (m1 * m2 of two 0/1 masks, or m1 * m1) NumPy computed bool op bool, a bool array (or a
        # TypeError for subtract) where float64 was traced.
        if all(nodes[u].op in ("add", "subtract", "multiply") and np.dtype(nodes[u].dtype) == dt
               and all(a == ("node", j) or typed(a, j, dt) for a in nodes[u].args)
               and any(typed(a, j, dt) for a in nodes[u].args) for u in users[j]):
            dropped.add(j)
    if not dropped:
        return None
    index: dict[int, tuple] = {}
    kept = []
    for j, n in enumerate(nodes):
        if j in dropped:
            index[j] = index[n.args[0][1]] if n.args[0][0] == "node" else n.args[0]
            continue
        args = tuple(index[v] if kind == "node" else (kind, v) for kind, v in n.args)
        index[j] = ("node", len(kept))
        kept.append(n._replace(args=args))
    return tuple(kept), tuple(index[j][1] for j in outputs)


def _donated(inp: tuple) -> bool:
    """Whether the program gives this input to the kernel to overwrite (``inputs[i][2]``)."""
    return len(inp) > 2 and bool(inp[2])


def _size(shape: tuple) -> int:
    n = 1
    for d in shape:
        n *= d if d == d else 1  # unknown (NaN) lengths count as 1
    return int(n)


def _dtype_of(arg: tuple, nodes: tuple, inputs: tuple) -> Any:
    kind, v = arg
    if kind == "input":
        return inputs[v][1]
    if kind == "node":
        return nodes[v].dtype
    return None  # a Python scalar: typed by the other operands


def _template(np: Any, node: Any, dtypes: list, vml: bool) -> Callable | None:
    """``f(parts, typed) -> numexpr text`` for a node numexpr computes as NumPy does, else
    None; ``parts`` are the texts of the arguments, ``typed(v)`` the text of the Python
    scalar ``v`` as a value of the node's dtype."""
    name, out = node.op, np.dtype(node.dtype)
    if out.name not in _NUMEXPR_DTYPES or (node.params and name != "astype") or not tuple(node.shape):
        return None  # (a 0-d node: see the module's docstring)
    arrays = [np.dtype(d) for d in dtypes if d is not None]
    if any(d.name not in _NUMEXPR_DTYPES for d in arrays):
        return None
    floating = out.kind == "f"
    same = all(d == out for d in arrays)
    if name == "pow":
        # x ** c of an array x and a Python number c, where NumPy computes it with sqrt, square or
        # reciprocal; x ** p of an array p is NumPy's power (its loop takes sqrt for a p of 0.5: a
        # value the kernel cannot see when it is written)
        if not (floating and same and node.args[1][0] == "scalar"):
            return None
        return _POWERS.get(_power_ufunc(np, out, node.args[1][1]))
    if name in _BINARY and same and out.kind in "if" and (floating or name not in _FLOAT_ONLY):
        return lambda p, t, s=_BINARY[name]: f"({p[0]} {s} {p[1]})"
    if name in _COMPARE and out.kind == "b" and arrays and all(d == arrays[0] and d.kind in "if" for d in arrays):
        return lambda p, t, s=_COMPARE[name]: f"({p[0]} {s} {p[1]})"
    if name in _LOGICAL and same and out.kind == "b":
        return lambda p, t, s=_LOGICAL[name]: f"({p[0]} {s} {p[1]})"
    if name == "logical_not" and same and out.kind == "b":
        return lambda p, t: f"(~{p[0]})"
    if not floating:
        return None
    if name == "where":
        cond, *rest = dtypes
        if cond is None or np.dtype(cond).kind != "b" or any(d is not None and np.dtype(d) != out for d in rest):
            return None
        return lambda p, t: f"where({p[0]}, {p[1]}, {p[2]})"
    if name == "astype":
        (src,) = arrays
        if src.kind == "b":
            return lambda p, t: f"where({p[0]}, {t(1)}, {t(0)})"
        if src == out:
            return lambda p, t: p[0]
        return None
    if not same:
        return None
    if name == "negative":
        return lambda p, t: f"(-{p[0]})"
    if name == "positive":
        return lambda p, t: p[0]
    if name == "square":
        return lambda p, t: f"({p[0]} * {p[0]})"
    if name == "abs":
        return lambda p, t: f"abs({p[0]})"
    if name == "sqrt":
        return lambda p, t: f"sqrt({p[0]})"
    if name == "maximum":  # NumPy's: x1 where x1 > x2 or x1 is NaN, else x2 (ties give x2)
        return lambda p, t: f"where(({p[0]} > {p[1]}) | ({p[0]} != {p[0]}), {p[0]}, {p[1]})"
    if name == "minimum":
        return lambda p, t: f"where(({p[0]} < {p[1]}) | ({p[0]} != {p[0]}), {p[0]}, {p[1]})"
    if name == "relu":  # maximum(x, 0)
        return lambda p, t: f"where(({p[0]} > {t(0)}) | ({p[0]} != {p[0]}), {p[0]}, {t(0)})"
    if vml and name in _TRANSCENDENTAL:
        return lambda p, t, f=_TRANSCENDENTAL[name]: f"{f}({p[0]})"
    return None


class _UfuncCalled(Exception):
    pass


@functools.lru_cache(maxsize=None)
def _spy(np: Any) -> type:
    """An ndarray subclass whose ufunc calls raise :class:`_UfuncCalled` with the ufunc's name."""

    class Spy(np.ndarray):
        def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
            raise _UfuncCalled(ufunc.__name__)

    return Spy


@functools.lru_cache(maxsize=1024)
def _power_ufunc_of(np: Any, dtype: Any, key: tuple, exponent: Any) -> str | None:
    try:
        operator.pow(np.zeros(1, dtype).view(_spy(np)), exponent)
    except _UfuncCalled as called:
        return called.args[0]
    except Exception:
        pass
    return None


def _power_ufunc(np: Any, dtype: Any, exponent: bool | int | float) -> str | None:
    """The name of the ufunc NumPy's ``x ** exponent`` calls for an array ``x`` of ``dtype`` and
    this Python number: ``power``, or where NumPy takes a fast path (which depends on its version,
    the exponent's type and value and the dtype: ``x ** 0.5`` is ``sqrt`` for floats, ``b ** 2``
    is ``square`` even for booleans, ``x ** 2.0`` is ``power``) ``sqrt``, ``square`` or
    ``reciprocal``. Asked of NumPy itself, with an array that reports the ufunc called on it."""
    return _power_ufunc_of(np, np.dtype(dtype), (type(exponent), repr(exponent)), exponent)  # (2, 2.0, -0.0 apart)


class _Plan:
    """Turns the stored nodes into steps over registers: the inputs, then one per stored node."""

    def __init__(self, np: Any, numexpr: Any, nodes: tuple, inputs: tuple, outputs: tuple, templates: list,
                 stored: list, arg_dtypes: list, tiny: bool = False) -> None:
        self.np, self.numexpr, self.nodes, self.inputs, self.outputs = np, numexpr, nodes, inputs, outputs
        self.templates, self.stored, self.arg_dtypes, self.tiny = templates, stored, arg_dtypes, tiny

    def _scalar(self, value: Any, j: int, variables: dict, constants: list, dtype: Any = None,
                literal: bool = True) -> str:
        """A Python scalar of node ``j``, typed as NumPy types it against the node's arrays
        (or as ``dtype``); never a literal with ``literal=False``."""
        np = self.np
        if dtype is None:
            others = [d for d in self.arg_dtypes[j] if d is not None]
            if self.nodes[j].op == "where":
                others = [d for d in self.arg_dtypes[j][1:] if d is not None] or [self.nodes[j].dtype]
            dtype = np.result_type(*others, value) if others else np.result_type(value)
        dtype = np.dtype(dtype)
        typed = np.asarray(value, dtype=dtype)
        # A literal, except a signed zero: numexpr keeps one of equal constants, and -0.0 == 0.0.
        finite = value == value and abs(value) != float("inf")
        if literal and dtype == np.float64 and finite and not (value == 0 and np.signbit(typed)):
            text = repr(float(value))  # in parentheses when signed: -1.0 ** v would be -(1.0 ** v)
            return f"({text})" if text.startswith("-") else text
        if dtype == np.bool_:
            return "True" if value else "False"
        name = f"k{len(constants)}"
        constants.append(typed)
        variables[name] = ("const", len(constants) - 1)
        return name

    def _text(self, j: int, variables: dict, constants: list) -> str:
        parts = []
        for k, (kind, v) in enumerate(self.nodes[j].args):
            if kind == "scalar":
                # A divisor is never a literal: numexpr makes x / c of a literal x * (1 / c), which is
                # not NumPy's rounding (1 ulp off) and overflows for tiny c (x / 1e-310 was inf).
                divisor = k == 1 and self.nodes[j].op == "divide"
                parts.append(self._scalar(v, j, variables, constants, literal=not divisor))
            elif kind == "input" or self.stored[v]:
                name = f"{kind[0]}{v}"
                variables[name] = (kind, v)
                parts.append(name)
            else:
                parts.append(self._text(v, variables, constants))
        node_dtype = self.nodes[j].dtype
        return self.templates[j](parts, lambda value: self._scalar(value, j, variables, constants, node_dtype))

    def kernel(self, steps: list[int]) -> Callable:
        np, nodes = self.np, self.nodes
        n_in = len(self.inputs)
        constants: list = []
        program = []  # (kind, numexpr's (compiled, uses_vml, text) or None, [register or ("k" | "c", value)], node)
        reads: list[list[int]] = []
        for j in steps:
            node = nodes[j]
            if self.templates[j] is not None:
                variables: dict = {}
                text = self._text(j, variables, constants)
                used = set(_NAME.findall(text))  # (a template may leave an operand out: x ** 2 as x * x)
                names = sorted(name for name in variables if name in used)
                signature = tuple(_numexpr_type(np, self._var_dtype(variables[name], constants)) for name in names)
                text = _canonical(text, names)
                compiled, uses_vml, dtype = _numexpr_program(self.numexpr, text, signature)
                if dtype != np.dtype(node.dtype):
                    raise TypeError(f"numexpr gives {dtype} for {node.op}, NumPy {node.dtype}")
                operands = [self._register(variables[name], n_in, constants) for name in names]
                program.append(("ne", (compiled, uses_vml, text), operands, j))
            else:
                operands = [self._register(a, n_in, constants) if a[0] != "scalar" else ("c", a[1])
                            for a in node.args]
                program.append(("call", None, operands, j))
            reads.append([r for r in program[-1][2] if isinstance(r, int)])
        register_of = {j: n_in + k for k, j in enumerate(steps)}
        outputs = [register_of[j] for j in self.outputs]
        last: dict[int, int] = {}
        for k, rs in enumerate(reads):
            for r in rs:
                last[r] = k
        # Reuse: a temporary (a stored node that is no output) whose last read is step k can
        # receive step k's result when the shapes and dtypes match.
        protected = set(outputs) | {i for i in range(n_in) if not _donated(self.inputs[i])}
        free_after: list[list[int]] = [[] for _ in program]
        reuse: list[int | None] = [None] * len(program)
        for k, (kind, _, operands, j) in enumerate(program):
            for r in sorted(set(reads[k])):
                if last[r] == k and r not in protected:
                    free_after[k].append(r)
            node = nodes[j]
            if self.tiny or not tuple(node.shape):
                # a new array of a few hundred bytes costs less than numexpr's keywords; a 0-d
                # temporary may be a NumPy scalar (what a ufunc returns for 0-d), no buffer
                continue
            if kind == "ne" or self._ufunc(node) is not None:
                for r in free_after[k]:
                    shape, dtype = ((self.inputs[r][0], self.inputs[r][1]) if r < n_in
                                    else (nodes[steps[r - n_in]].shape, nodes[steps[r - n_in]].dtype))
                    if tuple(shape) == tuple(node.shape) and np.dtype(dtype) == np.dtype(node.dtype):
                        reuse[k] = r
                        break
        fused = self._generate(program, reuse, free_after, outputs, constants)
        fused.steps = len(program)  # for inspection: how many passes the group makes
        return fused

    def _generate(self, program: list, reuse: list, free_after: list, outputs: list, constants: list) -> Callable:
        """The kernel as one straight-line Python function over registers ``r0, r1, ...``: no
        interpreter loop, so a step costs its call alone. numexpr's lock (one evaluation at a
        time: dask runs blocks on several threads, and two concurrent evaluations crash it) is
        taken per numexpr step, or once for the whole kernel where it is tiny."""
        n_in = len(self.inputs)
        env: dict[str, Any] = {"_lock": None if self.numexpr is None else self.numexpr.necompiler.evaluate_lock}

        def operand(o: Any) -> str:
            if type(o) is int:
                return f"r{o}"
            name = f"c{len(env)}"
            env[name] = constants[o[1]] if o[0] == "k" else o[1]
            return name

        body = []
        for k, (kind, compiled, operands, j) in enumerate(program):
            node, into, f = self.nodes[j], reuse[k], f"f{k}"
            args = [operand(o) for o in operands]
            if kind == "ne":
                env[f] = compiled[0]
                # numexpr wants ex_uses_vml whenever a keyword is given (and costs 0.7 us a keyword)
                if into is not None or compiled[1]:
                    args += [f"out=r{into}", "order='K'", "casting='safe'"] if into is not None else []
                    args.append(f"ex_uses_vml={compiled[1]}")
            elif into is not None:  # the ufunc the row's kernel calls, writing into a dead temporary
                env[f] = self._ufunc(node)
                args.append(f"out=r{into}")
            else:  # the row's kernel: the call eager makes
                env[f] = functools.partial(node.kernel, **node.params) if node.params else node.kernel
            lock = "with _lock: " if kind == "ne" and not self.tiny else ""
            what = f"{node.op}: numexpr {compiled[2]}" if kind == "ne" else node.op  # over v0, v1, ... as passed
            body.append(f"{lock}r{n_in + k} = {f}({', '.join(args)})  # {what}")
            if free_after[k]:
                body.append("del " + ", ".join(f"r{r}" for r in free_after[k]))
        if self.tiny:
            body = ["with _lock:"] + ["    " + line for line in body]
        lines = [f"def fused({', '.join(f'r{i}' for i in range(n_in))}):"] + ["    " + line for line in body]
        lines.append(f"    return ({''.join(f'r{o}, ' for o in outputs)})")
        exec(compile("\n".join(lines), "<polygrad_numpy fused kernel>", "exec"), env)
        fused = env["fused"]
        fused.source = "\n".join(lines)
        return fused

    def _register(self, ref: tuple, n_in: int, constants: list) -> Any:
        kind, v = ref
        if kind == "input":
            return v
        if kind == "const":
            return ("k", v)
        return n_in + sum(1 for j in range(v) if self.stored[j])

    def _var_dtype(self, ref: tuple, constants: list) -> Any:
        kind, v = ref
        if kind == "input":
            return self.inputs[v][1]
        if kind == "const":
            return constants[v].dtype
        return self.nodes[v].dtype

    def _ufunc(self, node: Any) -> Any:
        """NumPy's ufunc for a node whose kernel is it, or the Python operator that calls it
        on arrays (so ``out=`` may be given), else None."""
        np = self.np
        fn = getattr(np, node.op, None)
        if not isinstance(fn, np.ufunc) or node.params or fn.nout != 1:
            return None
        if node.kernel is fn or node.kernel is _OPERATORS.get(node.op):
            return fn
        return None


def _numexpr_type(np: Any, dtype: Any) -> type:
    """The type numexpr's signatures name a NumPy dtype by."""
    return {"bool": bool, "int32": np.int32, "int64": np.int64, "float32": float, "float64": np.float64}[np.dtype(dtype).name]


def _numpy_of(np: Any, t: type) -> Any:
    return {bool: np.bool_, float: np.float32}.get(t, t)


_NAME = re.compile(r"\b[ink]\d+\b")


def _canonical(text: str, names: list[str]) -> str:
    """The expression with its variables renamed ``v0, v1, ...`` in signature order, so that the
    same expression over other registers is one numexpr program."""
    rename = {name: f"v{k}" for k, name in enumerate(names)}
    return _NAME.sub(lambda m: rename.get(m.group(0), m.group(0)), text)


@functools.lru_cache(maxsize=4096)
def _numexpr_program(numexpr: Any, text: str, signature: tuple) -> tuple:
    """numexpr's program for ``text`` over ``v0, v1, ...`` of the given types: ``(compiled,
    uses_vml, dtype of its result)``, the dtype found by evaluating it on zeros."""
    import numpy as np

    names = [f"v{k}" for k in range(len(signature))]
    # optimization="moderate": numexpr's default ("aggressive") writes every constant power of
    # [-50, 50] in halves as products and square roots (x ** -0.5 as 1 / sqrt(x): nan at -inf where
    # NumPy's pow gives 0). "moderate" rewrites only the exponents NumPy's x ** c itself computes
    # another way (-1, 0, 0.5, 1, 2: reciprocal, ones, sqrt, copy, square).
    compiled = numexpr.NumExpr(text, signature=list(zip(names, signature)), optimization="moderate")
    uses_vml = bool(numexpr.necompiler.getExprNames(text, {})[1])
    sample = [np.zeros((), dtype=_numpy_of(np, t)) for t in signature]
    return compiled, uses_vml, np.asarray(compiled(*sample, ex_uses_vml=uses_vml)).dtype

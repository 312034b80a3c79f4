"""Fused elementwise kernels for NumPy arrays, with numexpr where it pays.

A group of elementwise nodes (see ``polygrad_fuse_elementwise``) becomes a short
list of *steps*:

* a **numexpr step** evaluates in one pass a whole subtree of nodes numexpr
  computes exactly as NumPy does: arithmetic, comparisons, ``where``, casts from
  bool, ``maximum``/``minimum``/``relu`` written with ``where`` (NumPy's NaN and
  tie rules), ``sqrt``, ``abs``. Transcendental functions join only where
  numexpr uses Intel's VML (``numexpr.use_vml``): its own ``exp`` or ``tanh``
  is several times slower than NumPy's vectorized loops;
* a **call step** runs one node with NumPy (its ufunc writing into a dead
  temporary where one fits, else the row's kernel).

A value is *materialized* (gets an array) where it is an output of the group,
the argument of a call step, or too large a subtree to inline; everything else
stays inside a numexpr expression and never touches memory. Temporaries are
dropped after their last use, and a dead one of the right shape and dtype
receives the next result (``out=``): never an input of the group and never an
output (outputs are new arrays); the same for an input the program donates (an
intermediate of its own that nothing else reads).

Only homogeneous nodes join a numexpr expression (the operands have the
result's dtype, or booleans as conditions; bool, int32, int64, float32, float64):
numexpr's promotion rules differ from NumPy's in the mixed cases, and Python
scalars are typed as NumPy types them (``x_float32 * 0.5`` stays float32).
"""

from __future__ import annotations

import operator
from typing import Any, Callable

#: Below this many bytes in its largest node, a group is declined on the numpy backend: on
#: arrays that fit in the caches NumPy's loops (vectorized, one call each) beat numexpr's
#: blocked virtual machine, whose cost per call is tens of microseconds (measured: two ops on
#: 65,536 float32 take 13 us in NumPy, 45 us in numexpr; on 4,000,000 float64, 8 ms and 3-6 ms).
MIN_BYTES = 4 * 2**20
#: Below this many bytes a group is always declined: the fused kernel's Python steps (about a
#: microsecond each) cost more than the passes they save.
MIN_SMALL_BYTES = 64 * 2**10
#: A numexpr expression holds at most this many nodes and distinct variables; larger
#: subtrees are materialized (numexpr's programs are limited, and shared subtrees are repeated).
MAX_EXPRESSION_NODES = 48
MAX_EXPRESSION_VARIABLES = 24

_BINARY = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/", "pow": "**"}
_COMPARE = {"equal": "==", "not_equal": "!=", "less": "<", "less_equal": "<=", "greater": ">",
            "greater_equal": ">="}
_LOGICAL = {"logical_and": "&", "logical_or": "|"}
_FLOAT_ONLY = {"divide", "pow"}
#: Array API name -> numexpr function (used where numexpr has VML).
_TRANSCENDENTAL = {"exp": "exp", "expm1": "expm1", "log": "log", "log1p": "log1p", "log2": "log2", "log10": "log10",
                   "sin": "sin", "cos": "cos", "tan": "tan", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh",
                   "asin": "arcsin", "acos": "arccos", "atan": "arctan", "asinh": "arcsinh", "acosh": "arccosh",
                   "atanh": "arctanh"}
_NUMEXPR_DTYPES = ("bool", "int32", "int64", "float32", "float64")
#: The rows whose kernel is a Python operator: on NumPy arrays the operator calls this ufunc.
_OPERATORS = {"add": operator.add, "subtract": operator.sub, "multiply": operator.mul, "divide": operator.truediv,
              "pow": operator.pow, "negative": operator.neg}


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
    largest = max(_size(n.shape) * np.dtype(n.dtype).itemsize for n in nodes)
    if min_bytes and largest < min(min_bytes, MIN_SMALL_BYTES):
        return None  # a few kilobytes: the kernels cost less than the fused kernel's own steps
    if min_bytes and largest < min_bytes:
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
            templates[j] = _template(np, n, arg_dtypes[j], vml)
    users: list[list[int]] = [[] for _ in nodes]
    for j, n in enumerate(nodes):
        for kind, v in n.args:
            if kind == "node":
                users[v].append(j)
    out_set = set(outputs)
    # Which node values get an array (see the module's docstring).
    stored = [j in out_set or templates[j] is None or any(templates[u] is None for u in users[j])
              for j in range(len(nodes))]
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
        if size[j] > MAX_EXPRESSION_NODES or len(leaves[j]) > MAX_EXPRESSION_VARIABLES:
            stored[j] = True
            size[j], leaves[j] = 1, {("node", j)}
        elif stored[j]:
            pass
    steps = [j for j in range(len(nodes)) if stored[j]]
    if require_gain and len(steps) >= len(nodes):
        return None
    plan = _Plan(np, numexpr, nodes, inputs, outputs, templates, stored, arg_dtypes)
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

    dropped = set()
    for j, n in enumerate(nodes):
        if (n.op != "astype" or j in outputs or not users[j] or n.args[0][0] != "node"
                or dtype(n.args[0]).kind != "b" or np.dtype(n.dtype).kind not in "iuf"):
            continue
        if all(nodes[u].op in ("add", "subtract", "multiply") and np.dtype(nodes[u].dtype) == np.dtype(n.dtype)
               and all(a == ("node", j) or (a[0] != "scalar" and np.dtype(_dtype_of(a, nodes, inputs)) == np.dtype(n.dtype))
                       for a in nodes[u].args) for u in users[j]):
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
    if out.name not in _NUMEXPR_DTYPES or (node.params and name != "astype"):
        return None
    arrays = [np.dtype(d) for d in dtypes if d is not None]
    if any(d.name not in _NUMEXPR_DTYPES for d in arrays):
        return None
    floating = out.kind == "f"
    same = all(d == out for d in arrays)
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


class _Plan:
    """Turns the stored nodes into steps over registers: the inputs, then one per stored node."""

    def __init__(self, np: Any, numexpr: Any, nodes: tuple, inputs: tuple, outputs: tuple, templates: list,
                 stored: list, arg_dtypes: list) -> None:
        self.np, self.numexpr, self.nodes, self.inputs, self.outputs = np, numexpr, nodes, inputs, outputs
        self.templates, self.stored, self.arg_dtypes = templates, stored, arg_dtypes

    def _scalar(self, value: Any, j: int, variables: dict, constants: list, dtype: Any = None) -> str:
        """A Python scalar of node ``j``, typed as NumPy types it against the node's arrays
        (or as ``dtype``)."""
        np = self.np
        if dtype is None:
            others = [d for d in self.arg_dtypes[j] if d is not None]
            if self.nodes[j].op == "where":
                others = [d for d in self.arg_dtypes[j][1:] if d is not None] or [self.nodes[j].dtype]
            dtype = np.result_type(*others, value) if others else np.result_type(value)
        dtype = np.dtype(dtype)
        typed = np.asarray(value, dtype=dtype)
        if dtype == np.float64 and value == value and abs(value) != float("inf"):
            return repr(float(value))
        if dtype == np.bool_:
            return "True" if value else "False"
        name = f"k{len(constants)}"
        constants.append(typed)
        variables[name] = ("const", len(constants) - 1)
        return name

    def _text(self, j: int, variables: dict, constants: list) -> str:
        parts = []
        for kind, v in self.nodes[j].args:
            if kind == "scalar":
                parts.append(self._scalar(v, j, variables, constants))
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
        program = []  # (kind, callable, [register or ("c", value)], out register, reuse register or None)
        reads: list[list[int]] = []
        for j in steps:
            node = nodes[j]
            if self.templates[j] is not None:
                variables: dict = {}
                text = self._text(j, variables, constants)
                names = sorted(variables)
                signature = [(name, _numexpr_type(np, self._var_dtype(variables[name], constants))) for name in names]
                compiled = self.numexpr.NumExpr(text, signature=signature)
                uses_vml = bool(self.numexpr.necompiler.getExprNames(text, {})[1])
                operands = [self._register(variables[name], n_in, constants) for name in names]
                program.append(("ne", (compiled, uses_vml), operands, j))
                self._check_dtype(compiled, uses_vml, signature, node)
            else:
                operands = [self._register(a, n_in, constants) if a[0] != "scalar" else ("c", a[1])
                            for a in node.args]
                program.append(("call", node, operands, j))
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
        for k, (kind, fn, operands, j) in enumerate(program):
            for r in set(reads[k]):
                if last[r] == k and r not in protected:
                    free_after[k].append(r)
            node = nodes[j]
            ufunc = self._ufunc(node) if kind == "call" else None
            if kind == "ne" or ufunc is not None:
                for r in free_after[k]:
                    shape, dtype = ((self.inputs[r][0], self.inputs[r][1]) if r < n_in
                                    else (nodes[steps[r - n_in]].shape, nodes[steps[r - n_in]].dtype))
                    if tuple(shape) == tuple(node.shape) and np.dtype(dtype) == np.dtype(node.dtype):
                        reuse[k] = r
                        break
        compiled_steps = []
        for k, (kind, fn, operands, j) in enumerate(program):
            node = nodes[j]
            if kind == "ne":
                compiled_steps.append((_run_numexpr(fn, self.numexpr.necompiler.evaluate_lock), operands, reuse[k],
                                       free_after[k]))
            else:
                ufunc = self._ufunc(node)
                call = ufunc if ufunc is not None else (lambda *a, _n=node: _n.kernel(*a, **_n.params))
                compiled_steps.append((_run_call(call, ufunc is not None), operands, reuse[k], free_after[k]))
        n_registers = n_in + len(program)
        consts = constants

        def fused(*arrays: Any) -> tuple:
            regs = list(arrays) + [None] * (n_registers - n_in)
            r = n_in
            for run, operands, into, free in compiled_steps:
                args = [regs[o] if type(o) is int else (consts[o[1]] if o[0] == "k" else o[1]) for o in operands]
                regs[r] = run(args, regs[into] if into is not None else None)
                for f in free:
                    regs[f] = None
                r += 1
            return tuple(regs[o] for o in outputs)

        fused.steps = len(program)  # for inspection: how many passes the group makes
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

    def _check_dtype(self, compiled: Any, uses_vml: bool, signature: list, node: Any) -> None:
        """Evaluate on zeros: numexpr must give the node's dtype (else the group is declined)."""
        np = self.np
        sample = [np.zeros((), dtype=_numpy_of(np, t)) for _, t in signature]
        got = compiled(*sample, ex_uses_vml=uses_vml)
        if np.asarray(got).dtype != np.dtype(node.dtype):
            raise TypeError(f"numexpr gives {np.asarray(got).dtype} for {node.op}, NumPy {node.dtype}")

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


def _run_numexpr(fn: tuple, lock: Any) -> Callable:
    compiled, uses_vml = fn

    # numexpr's virtual machine and its thread pool are shared: one evaluation at a time
    # (dask runs blocks on several threads; two concurrent evaluations crash it).
    def run(args: list, out: Any) -> Any:
        with lock:
            if out is not None:
                return compiled(*args, out=out, order="K", casting="safe", ex_uses_vml=uses_vml)
            return compiled(*args, ex_uses_vml=uses_vml)

    return run


def _run_call(fn: Callable, takes_out: bool) -> Callable:
    if takes_out:
        def run(args: list, out: Any) -> Any:
            return fn(*args, out=out) if out is not None else fn(*args)
    else:
        def run(args: list, out: Any) -> Any:
            return fn(*args)
    return run

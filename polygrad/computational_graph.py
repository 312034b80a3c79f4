"""Draw the graph behind some Variables (Chainer's ``build_computational_graph``).

>>> import polygrad as pg
>>> x = pg.Variable(pg.asarray([1.0, 2.0]), name="x")
>>> y = pg.exp(x)
>>> y.name = "y"
>>> g = pg.computational_graph.build_computational_graph([y])
>>> print(g.dump())
digraph graphname {
  rankdir=TB;
  0 [label="y: (2), float64",shape="ellipse"];
  1 [label="exp",shape="box"];
  2 [label="x: (2), float64",shape="ellipse"];
  1 -> 0;
  2 -> 1;
}

The walk goes back from the outputs through their creators. The graph keeps
its output Variables only through weak references, so an intermediate Variable
the user has dropped is drawn as a :class:`VariablePlaceholder` labelled with
the shape and dtype the graph still knows (from the arrays saved for backward
or the recorded input shapes), or ``unknown``. Inputs that need no gradient
(constants) are drawn too, from what their function recorded of them when it
ran, so backward does not change them: a Variable as itself while it is alive
(once dropped, a placeholder with its name, shape and dtype), an array as a
placeholder with its shape and dtype. Python scalars are not drawn.
"""

from __future__ import annotations

import heapq
import shutil
import subprocess
import warnings
from collections.abc import Mapping
from typing import Any, Iterable

from polygrad.core.dispatch import SCALARS as _SCALARS, backend_of_type
from polygrad.core.node import Node
from polygrad.core.variable import Variable

__all__ = ["build_computational_graph", "ComputationalGraph", "VariablePlaceholder"]

DEFAULT_VARIABLE_STYLE = {"shape": "ellipse"}
DEFAULT_FUNCTION_STYLE = {"shape": "box"}
#: What ``variable_style="default"`` / ``function_style="default"`` add: Chainer's default look.
CHAINER_VARIABLE_STYLE = {"shape": "octagon", "fillcolor": "#E0E0E0", "style": "filled"}
CHAINER_FUNCTION_STYLE = {"shape": "record", "fillcolor": "#6495ED", "style": "filled"}

_DTYPE_NAMES = (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "bfloat16", "float32", "float64", "complex64", "complex128",
)


class VariablePlaceholder:
    """Stands in the graph for a Variable that is no longer alive, or for a
    constant input that was never one: ``name`` is None but for a dropped
    constant Variable's, ``shape`` and ``dtype`` are None where unknown."""

    def __init__(self, shape: tuple | None, dtype: Any, backend: Any, name: str | None = None) -> None:
        self.shape = shape
        self.dtype = dtype
        self.backend = backend
        self.name = name

    def __repr__(self) -> str:
        return f"<VariablePlaceholder {variable_label(self, show_name=False)}>"


def _dtype_name(dtype: Any, backend: Any) -> str:
    """The standard's name of ``dtype`` (``float32``), whatever the library's repr."""
    xp = None
    if backend is not None:
        try:
            xp = backend.xp
        except Exception:
            xp = None
    if xp is not None:
        for n in _DTYPE_NAMES:
            d = getattr(xp, n, None)
            if d is not None:
                try:
                    if dtype == d:
                        return n
                except Exception:
                    pass
    return str(getattr(dtype, "name", dtype))


def variable_label(v: Any, show_name: bool = True) -> str:
    """``"name: (2, 3), float32"`` for a Variable or placeholder (``unknown`` for what is not known); a 0-d one is
    ``"name: float32"``, the dtype alone (Chainer's ``VariableNode.label``)."""
    if isinstance(v, Variable):
        data = v.data
        shape = None if data is None else tuple(data.shape)
        dtype = None if data is None else data.dtype
        backend = None if data is None else backend_of_type(type(data))
    else:
        shape, dtype, backend = v.shape, v.dtype, v.backend
    if shape is None and dtype is None:
        text = "unknown"
    else:
        s = "unknown shape" if shape is None else "(" + ", ".join(str(n) for n in shape) + ")"
        d = "unknown dtype" if dtype is None else _dtype_name(dtype, backend)
        text = d if shape == () else f"{s}, {d}"
    if show_name and v.name is not None:
        text = f"{v.name}: {text}"
    return text


def _is_array(a: Any) -> bool:
    return a is not None and type(a) not in _SCALARS and hasattr(a, "shape") and hasattr(a, "dtype")


class _Builder:
    """Collects nodes (in the order found) and edges (each once)."""

    def __init__(self) -> None:
        self.nodes: list = []
        self.edges: list = []
        self._by_key: dict = {}
        self._edge_keys: set = set()
        self._heap: list = []
        self._pushed = 0

    def add(self, key: Any, make: Any) -> Any:
        obj = self._by_key.get(key)
        if obj is None:
            obj = self._by_key[key] = make()
            self.nodes.append(obj)
        return obj

    def edge(self, a: Any, b: Any) -> None:
        k = (id(a), id(b))
        if k not in self._edge_keys:
            self._edge_keys.add(k)
            self.edges.append((a, b))

    def function(self, f: Node) -> Node:
        """Add ``f`` and schedule a visit (newest first: outputs before inputs)."""
        key = ("fn", id(f))
        if key not in self._by_key:
            self.add(key, lambda: f)
            self._pushed += 1
            heapq.heappush(self._heap, (-getattr(f, "seq", 0), self._pushed, f))
        return f

    def produced(self, node: Node, k: int, consumer: Node | None = None, i: int = 0) -> Any:
        """The graph vertex for output ``k`` of ``node`` (the Variable if alive)."""

        def make() -> Any:
            refs = node.outputs
            v = refs[k]() if k < len(refs) else None
            if v is not None and v._node is node and v._index == k:
                return v
            shape, dtype = _output_meta(node, k)
            if consumer is not None and (shape is None or dtype is None):
                s2, d2 = consumer._input_meta(i)
                shape, dtype = shape if shape is not None else s2, dtype if dtype is not None else d2
            return VariablePlaceholder(shape, dtype, _backend_of(node))

        return self.add(("out", id(node), k), make)

    def visit(self, f: Node) -> None:
        edges = f.edges
        if all(e is None for e in edges):  # cut off by unchain(): nothing behind it
            return
        inputs = f.inputs if hasattr(type(f), "inputs") else ()  # a Function's input Variables (weak)
        for i, edge in enumerate(edges):
            if edge is None:
                v = inputs[i] if i < len(inputs) else None
                src = self._constant(f, i) if v is None else self.add(("var", id(v)), lambda v=v: v)
                if src is None:
                    continue
            elif edge[0] is None:
                v = edge[1]
                src = self.add(("var", id(v)), lambda v=v: v)
            else:
                src = self.produced(edge[0], edge[1], f, i)
                self.edge(self.function(edge[0]), src)
            self.edge(src, f)

    def _constant(self, f: Node, i: int) -> Any:
        """The vertex for constant input ``i`` of ``f``, from what ``f`` recorded of it when it ran (not
        from the arrays it saved for backward, which backward frees): its Variable while alive, else a
        placeholder; None for a Python scalar, which is not drawn."""
        known = f._constant_input(i)
        if known is None:
            return None
        ref, name, shape, dtype = known
        v = ref() if ref is not None else None
        if v is not None:
            return self.add(("var", id(v)), lambda: v)
        # A dropped Variable is one vertex for all its uses (they share the weak reference); an array
        # passed in, one per use (as Chainer, which wraps it in a new Variable each time).
        key = ("const", id(f), i) if ref is None else ("cref", id(ref))
        return self.add(key, lambda: VariablePlaceholder(shape, dtype, _backend_of(f), name))

    def run(self) -> None:
        while self._heap:
            _, _, f = heapq.heappop(self._heap)
            self.visit(f)


def _backend_of(node: Any) -> Any:
    b = getattr(node, "backend", None)
    return b if b is not None and hasattr(b, "xp") else None


def _output_meta(node: Any, k: int) -> tuple:
    """Shape and dtype of output ``k`` of ``node`` if it kept the output for backward."""
    saved = getattr(node, "saved", None)
    op = getattr(node, "op", None)
    if saved is not None and op is not None and op.keep_output and saved:
        ans = saved[-1]
        if op.multi and isinstance(ans, tuple):
            ans = ans[k] if k < len(ans) else None
        if _is_array(ans):
            return tuple(ans.shape), ans.dtype
    kept = getattr(node, "__dict__", {}).get("_out_saved", ())
    if k < len(kept) and kept[k] is not None and _is_array(kept[k][0]):
        return tuple(kept[k][0].shape), kept[k][0].dtype
    return None, None


class _Default:
    """The default of a parameter that a call may have filled by position under the older
    signature: it shows as its value (in ``help()``) yet tells "not given" apart."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return repr(self.value)


_STYLE, _RANKDIR, _REMOVE_VARIABLE = _Default(None), _Default("TB"), _Default(False)


def build_computational_graph(
    outputs: Any,
    remove_split: bool = True,
    variable_style: dict | str | None = _STYLE,
    function_style: dict | str | None = _STYLE,
    rankdir: str = _RANKDIR,
    remove_variable: bool = _REMOVE_VARIABLE,
    show_name: bool = True,
) -> "ComputationalGraph":
    """Build the graph that computed ``outputs`` (a Variable or a list of them).

    The parameters are Chainer's, in its order.

    :param remove_split: Chainer's, kept for its callers: it must be true (there are no split nodes).
    :param variable_style: DOT attributes of variable nodes, over the default
        ``{"shape": "ellipse"}``; ``"default"`` for Chainer's default look (filled grey octagons).
    :param function_style: DOT attributes of function nodes, over the default
        ``{"shape": "box"}``; ``"default"`` for Chainer's default look (filled blue records).
    :param rankdir: the DOT layout direction: ``"TB"``, ``"BT"``, ``"LR"`` or ``"RL"``.
    :param remove_variable: draw functions only, connected directly.
    :param show_name: put variables' names in their labels.
    """
    if remove_split is None or isinstance(remove_split, Mapping):
        # Before remove_split came second, variable_style did: such a call gave the styles etc. by position.
        warnings.warn(
            "polygrad: build_computational_graph's second parameter is Chainer's remove_split; giving "
            "variable_style (and what follows) by position is deprecated: pass them by keyword",
            DeprecationWarning, stacklevel=2)
        given = [remove_split, variable_style, function_style, rankdir, remove_variable]
        k = next((j for j, a in enumerate(given) if isinstance(a, _Default)), len(given))
        old = dict(zip(("variable_style", "function_style", "rankdir", "remove_variable", "show_name"), given[:k]))
        variable_style = old.get("variable_style", variable_style)
        function_style = old.get("function_style", function_style)
        rankdir = old.get("rankdir", rankdir)
        remove_variable = old.get("remove_variable", remove_variable)
        show_name = old.get("show_name", show_name)
    elif type(remove_split) is not bool:
        raise TypeError(f"polygrad: build_computational_graph: remove_split (Chainer's) must be a bool, got "
                        f"{remove_split!r}; give the styles by keyword")
    elif not remove_split:
        raise ValueError("polygrad: build_computational_graph: remove_split=False is not supported (Chainer refuses "
                         "it too): there are no split nodes to keep")
    variable_style, function_style, rankdir, remove_variable = (
        a.value if isinstance(a, _Default) else a for a in (variable_style, function_style, rankdir, remove_variable))
    if isinstance(outputs, Variable):
        outputs = [outputs]
    if rankdir not in ("TB", "BT", "LR", "RL"):
        raise ValueError(f"polygrad: rankdir must be 'TB', 'BT', 'LR' or 'RL', got {rankdir!r}")
    b = _Builder()
    for out in outputs:
        if not isinstance(out, Variable):
            raise TypeError(
                f"polygrad.build_computational_graph: outputs must be Variables, got {type(out).__name__}"
            )
        node = out._node
        if node is None:
            b.add(("var", id(out)), lambda out=out: out)
        else:
            v = b.add(("out", id(node), out._index), lambda out=out: out)
            b.edge(b.function(node), v)
    b.run()
    nodes, edges = b.nodes, b.edges
    if remove_variable:
        nodes, edges = _skip_variables(nodes, edges)
    return ComputationalGraph(nodes, edges, variable_style, function_style, rankdir, remove_variable, show_name)


def _skip_variables(nodes: list, edges: list) -> tuple:
    """Functions only: ``f -> v -> g`` becomes ``f -> g``."""
    producers: dict[int, list] = {}
    for a, b in edges:
        if isinstance(a, Node):
            producers.setdefault(id(b), []).append(a)
    out, seen = [], set()
    for a, b in edges:
        if isinstance(b, Node):
            for f in producers.get(id(a), ()):
                if (id(f), id(b)) not in seen:
                    seen.add((id(f), id(b)))
                    out.append((f, b))
    return [n for n in nodes if isinstance(n, Node)], out


def _quote(text: str) -> str:
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _style(what: str, style: Any, default: dict, chainer: dict) -> dict:
    """The DOT attributes for ``style``: None, a dict over ``default``, or "default" (Chainer's look)."""
    if style is None:
        return dict(default)
    if isinstance(style, str) and style == "default":
        return {**default, **chainer}
    if isinstance(style, Mapping):
        return {**default, **style}
    raise TypeError(f"polygrad: {what} must be a dict of DOT attributes, None, or 'default' (Chainer's look), "
                    f"got {style!r}")


class ComputationalGraph:
    """The nodes (Variables, :class:`VariablePlaceholder`\\ s and function nodes)
    and edges (``(source, target)`` in data-flow direction) of a graph."""

    def __init__(self, nodes: Iterable, edges: Iterable, variable_style: dict | None = None,
                 function_style: dict | None = None, rankdir: str = "TB", remove_variable: bool = False,
                 show_name: bool = True) -> None:
        self.nodes = list(nodes)
        self.edges = list(edges)
        self.variable_style = _style("variable_style", variable_style, DEFAULT_VARIABLE_STYLE, CHAINER_VARIABLE_STYLE)
        self.function_style = _style("function_style", function_style, DEFAULT_FUNCTION_STYLE, CHAINER_FUNCTION_STYLE)
        self.rankdir = rankdir
        self.remove_variable = remove_variable
        self.show_name = show_name

    def _label(self, n: Any) -> str:
        if isinstance(n, Node):
            return n.label
        return variable_label(n, self.show_name)

    def _to_dot(self) -> str:
        ids = {id(n): i for i, n in enumerate(self.nodes)}
        lines = ["digraph graphname {", f"  rankdir={self.rankdir};"]
        for i, n in enumerate(self.nodes):
            style = self.function_style if isinstance(n, Node) else self.variable_style
            attrs = ",".join([f"label={_quote(self._label(n))}"] + [f"{k}={_quote(v)}" for k, v in style.items()])
            lines.append(f"  {i} [{attrs}];")
        for a, b in self.edges:
            lines.append(f"  {ids[id(a)]} -> {ids[id(b)]};")
        lines.append("}")
        return "\n".join(lines)

    def dump(self, format: str = "dot") -> str:
        """The graph as text; ``"dot"`` (Graphviz) is the only format."""
        if format != "dot":
            raise NotImplementedError(f"polygrad: ComputationalGraph.dump supports format='dot' only, got {format!r}")
        return self._to_dot()

    def render(self, path: Any, format: str = "svg") -> Any:
        """Draw the graph into ``path`` (``format``: ``"svg"``, ``"png"``, ... any
        Graphviz output format) with Graphviz's ``dot``; returns ``path``."""
        dot = shutil.which("dot")
        if dot is None:
            raise RuntimeError(
                "polygrad: rendering a computational graph needs Graphviz's 'dot' program, which is not installed "
                "(not found on PATH). Install Graphviz (e.g. `apt-get install graphviz`, `brew install graphviz` "
                "or `conda install graphviz`), or write the DOT text with graph.dump() and render it elsewhere."
            )
        if not str(format).isalnum():
            raise ValueError(f"polygrad: render format must be a Graphviz format name such as 'svg' or 'png', got {format!r}")
        done = subprocess.run([dot, f"-T{format}", "-o", str(path)], input=self.dump(), capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"polygrad: Graphviz 'dot -T{format}' failed (exit {done.returncode}): {done.stderr.strip()}")
        return path

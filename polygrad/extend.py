"""What authors of ops, functions, hooks and backends build on: the one module they
import from, so they never import a private one (as HIPS autograd's ``extend``).

**An op** is a row of the op table, a forward kernel and vjp rules written with
polygrad's own ops (``o``), applied by :func:`apply`::

    from polygrad.extend import Op, apply, defvjp

    CUBE = defvjp(Op("cube", lambda xp, x: x * x * x), lambda o, g, ans, x: g * 3 * x * x, saves="x")

    def cube(x):
        return apply(CUBE, (x,))

Give ``defvjp`` one rule per input, ``None`` for an input that has no
gradient: backward through an input that needs a gradient and has no rule (too
few rules, or no ``defvjp``) raises NotImplementedError naming the row and the
input. A row declared outside polygrad is checked as it runs: its kernel must
return arrays of its inputs' backend (a tuple of them for ``multi=True``), and
each rule a gradient of its input's shape, kind of dtype and backend (another
precision is cast); anything else is an error naming the row (and the
input), never a gradient broadcast to the right shape.

Rules and pickles find rows by name, so a row's name means one row in a
process: the name of a built-in row is refused (ValueError); a row declared
again by the same code (a module reloaded unchanged, a script run again with
exec) replaces the old one quietly, and one declared elsewhere (a notebook cell
run again, which is new code to Python, or an edited module) replaces it with a
warning naming both places. (A loop that declares one name twice is one place:
the second row replaces the first quietly.) What holds the old row keeps it,
graphs and functions compiled before among them: compile those again.
:func:`public` follows the same rules. A row without a kernel runs the backend namespace's function of its name
(``Op("exp")`` runs ``xp.exp``); ``def_linear`` and ``def_nograd`` name the
common shapes of rules. :func:`public` (and ``unary``/``binary``) register a
public function next to its row, so that the lists derived from the table (the
Variable namespace, the differentiable namespace ``o``) include it.

**A function with arrays in and out** subclasses :class:`Function` (Chainer's
``forward(inputs)`` / ``backward(inputs, grad_outputs)``); **a hook** subclasses
:class:`FunctionHook`.

**A backend** is a plugin: functions marked with :data:`hookimpl` answering the
hooks of :mod:`polygrad.hookspecs`, which also holds the value types
(:class:`BackendInfo`, :class:`RandomGenerator`); :class:`BackendLike` lists what
polygrad reads from a backend object; :class:`FusedNode` is what a backend's
``polygrad_fuse_elementwise`` is offered, and :func:`row` finds a row's kernel
for a backend (to run single nodes of a fused group, or on another backend's blocks).
"""

from polygrad.core.dispatch import ArrayBackendLike, BackendLike, backend_of_type
from polygrad.core.function import Function
from polygrad.core.hooks import FunctionHook
from polygrad.compile.fusion import FusedNode
from polygrad.core.op import REGISTRY, Op, def_linear, def_nograd, defvjp
from polygrad.core.primitive import Primitive, apply
from polygrad.core.variable import admit_grad, is_floating
from polygrad.hookspecs import BackendInfo, RandomGenerator, hookimpl, hookspec
from polygrad.ops._export import binary, public, unary



def row(name: str) -> Op:
    """The row of the op table named ``name`` (every built-in op and every row a user
    declared); ``row(name).kernel(backend)`` is its forward kernel on that backend, as
    apply would run it (a backend's own kernel where it declares one).

    :raises KeyError: naming the rows there are, when none has this name.
    """
    import polygrad.ops  # noqa: F401 - every built-in row registered

    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"polygrad: no op row named {name!r}; there are {len(REGISTRY)}, e.g. "
                       f"{', '.join(sorted(REGISTRY)[:8])}, ...") from None


__all__ = [
    # ops
    "Op", "row", "defvjp", "def_linear", "def_nograd", "apply", "Primitive", "public", "unary", "binary",
    # functions and hooks on arrays
    "Function", "FunctionHook",
    # backends
    "hookimpl", "hookspec", "BackendInfo", "RandomGenerator", "BackendLike", "ArrayBackendLike", "FusedNode",
    # helpers
    "backend_of_type", "is_floating", "admit_grad",
]

"""Public functions of the op table, each declared once, next to its row.

A row (``Op`` + ``defvjp``) is the table's entry; its public function is the
next line. The common shapes get a helper that writes the function::

    SIN = defvjp(Op("sin"), lambda o, g, ans, x: g * _conj(o, o.cos(x)), saves="x")
    sin = unary(SIN)                     # def sin(x, /): return apply(SIN, (x,))

and any other function is a plain ``def`` marked ``@public``. Either way the
function is a direct ``apply(ROW, ...)`` call, with nothing in between, and it
is registered once, with what the lists of the library are derived from:

* each chapter's ``__all__`` (:func:`names`);
* the standard's names that ``x.__array_namespace__()`` and ``pg`` offer
  (``polygrad.array_api.FUNCTIONS``, ``LINALG``, ``FFT``);
* ``GRAPH_OPS``, the differentiable namespace ``create_graph`` rules run against
  (``o.sin``; ``o.linalg_inv`` and ``o.fft_fft`` for the extensions).
"""

from __future__ import annotations

import sys
import warnings
from typing import Any, Callable, NamedTuple

from polygrad.core.op import GRAPH_OPS, Op, declaring_place, is_builtin, place_text, user_stacklevel
from polygrad.core.primitive import apply

__all__ = ["Export", "EXPORTS", "public", "unary", "binary", "row_function", "names"]


class Export(NamedTuple):
    """One public function: where it lives and what the standard says of it."""

    name: str
    fn: Callable
    module: str
    ext: str | None  # the standard's extension it belongs to ("linalg", "fft"); None: the top level
    also: str | None  # an extension that lists it too (linalg lists matmul, tensordot, ...)
    standard: bool  # a function of the Array API standard (else polygrad's own: getitem, sum_to, ...)
    creates: bool  # takes no array: creates on the current backend (a namespace pins its own)


EXPORTS: list[Export] = []
#: Where each registered function was registered (``declaring_place``), by ``id`` of the function.
_ORIGINS: dict[int, tuple] = {}


def public(fn: Callable | None = None, /, *, ext: str | None = None, also: str | None = None, standard: bool = True,
           creates: bool = False) -> Any:
    """Register ``fn`` as a public function (a decorator, with or without arguments); returns it unchanged."""
    def register(fn: Callable) -> Callable:
        _, origin = declaring_place(skip=(__name__,))  # where it is applied (a decorator kept and reused)
        name = fn.__name__
        new = Export(name, fn, fn.__module__, ext, also, standard, creates)
        # Rules written with ``o`` call these by name under create_graph, and the namespaces list
        # them: a second function of a name changes every gradient and namespace that uses it.
        # As for op rows (polygrad.core.op.Op): a built-in's name is refused, the same place
        # replaces quietly (a reload), another place replaces with a warning.
        clash = [e for e in EXPORTS if _keys(e) & _keys(new)]
        for e in clash:
            old = _ORIGINS.get(id(e.fn), ())
            if old == origin:
                continue
            taken = ", ".join(sorted(_keys(e) & _keys(new)))
            if is_builtin(e.module):
                raise ValueError(f"polygrad: {taken!r} is the name of a built-in public function ({e.module}); "
                                 f"give yours another name")
            warnings.warn(f"polygrad: the public function {taken!r} registered at {place_text(origin, old)} "
                          f"replaces the one registered at {place_text(old, origin)}", stacklevel=user_stacklevel())
        for e in clash:
            EXPORTS.remove(e)
            _ORIGINS.pop(id(e.fn), None)
            for key in _keys(e):
                vars(GRAPH_OPS).pop(key, None)
        EXPORTS.append(new)
        _ORIGINS[id(fn)] = origin
        setattr(GRAPH_OPS, name if ext is None else f"{ext}_{name}", fn)
        return fn

    return register if fn is None else register(fn)


def _keys(e: Export) -> set[str]:
    """The names ``e`` takes: in the differentiable namespace, and in an extension that lists it too."""
    keys = {e.name if e.ext is None else f"{e.ext}_{e.name}"}
    if e.also is not None:
        keys.add(f"{e.also}_{e.name}")
    return keys


def row_function(fn: Callable, op: Op, module: str, *, ext: str | None = None) -> Callable:
    """Name ``fn``, a function written for row ``op`` by a helper, after the row, as a
    function of ``module``, and register it (for helpers like :func:`unary`)."""
    name = op.name[len(ext) + 1:] if ext else op.name
    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = module
    fn.__doc__ = f"The Array API standard's ``{'' if ext is None else ext + '.'}{name}``, on Variables (op row ``{op.name}``)."
    fn.op = op
    return public(fn, ext=ext)


def unary(op: Op, *, ext: str | None = None) -> Callable:
    """The standard's ``name(x, /)`` for row ``op``: ``apply(op, (x,))``."""

    def fn(x, /):
        return apply(op, (x,))

    return row_function(fn, op, sys._getframe(1).f_globals["__name__"], ext=ext)


def binary(op: Op, *, ext: str | None = None) -> Callable:
    """The standard's ``name(x1, x2, /)`` for row ``op``: ``apply(op, (x1, x2))``."""

    def fn(x1, x2, /):
        return apply(op, (x1, x2))

    return row_function(fn, op, sys._getframe(1).f_globals["__name__"], ext=ext)


def names(module: str, ext: str | None = None) -> list[str]:
    """The public functions ``module`` declares, at the top level (or in extension ``ext``), in order."""
    return [e.name for e in EXPORTS if e.module == module and e.ext == ext]

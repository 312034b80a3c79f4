"""The methods of Variable that are written with ops or backends, installed on the class
(the core knows no op by name): PyTorch 0.x's tensor methods and Chainer's device moves.

One table, ``METHODS``: each entry is a plain function of the Variable. Where the
two seeds disagree on a name, the Array API standard and Chainer win and the
PyTorch spelling either has another name or refuses loudly (see docs/migration.md):

* ``x.size`` is the number of elements (an ``int``, as in the standard and
  Chainer); called, ``x.size()`` / ``x.size(dim)`` give PyTorch's shape / length;
* ``x.transpose(*axes)`` permutes all axes (Chainer); PyTorch's
  ``transpose(dim0, dim1)`` is ``x.swapaxes(dim0, dim1)``, and ``x.transpose(0, 1)``
  on a matrix, which would mean "nothing" to Chainer and "swap" to PyTorch, raises;
* ``x.repeat(*sizes)`` tiles (PyTorch); the standard's element repeat is
  ``pg.repeat(x, n)``;
* ``x.max(dim)`` / ``x.min(dim)`` return ``(values, indices)`` (PyTorch);
  ``x.max()`` the largest element;
* ``x.std()`` / ``x.var()`` are unbiased by default (PyTorch); ``pg.std`` is not
  (the standard).
"""

from __future__ import annotations

import numbers
from typing import Any

from polygrad import ops
from polygrad.backends import get_backend, to_backend
from polygrad.core.dispatch import backend_of_type, is_array
from polygrad.core.primitive import apply
from polygrad.core.variable import Variable, _unrecorded, _view_base
from polygrad.ops import creation as _creation
from polygrad.ops._dtypes import dtype_named
from polygrad.ops.manipulation import _normalize_axes


def get_backend_of(a: Any) -> Any:
    return backend_of_type(type(a))

__all__ = ["METHODS", "install", "from_numpy"]


def _axis(dim: Any) -> Any:
    return tuple(dim) if isinstance(dim, list) else dim


def _shape(sizes: tuple) -> tuple:
    return tuple(sizes[0]) if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else tuple(sizes)


# -- reductions (PyTorch 0.x: dim, keepdim) --------------------------------------
# numpy's functions call the method of an object that is no ndarray: np.sum(x) is
# x.sum(axis=None, dtype=None, out=None), np.var(x) passes ddof=0 too. The methods take
# those keywords as well, so np.sum(x) of a Variable is polygrad's sum. ``axis`` and
# ``keepdims`` are aliases of ``dim`` and ``keepdim`` (PyTorch's too: x.max(axis=1) is its
# (values, indices)); numpy's own meaning (np.max(x, axis=0): the values alone) is taken where
# ``out=`` is passed, as numpy always passes it.
_NOT_GIVEN: Any = object()


# numpy's keywords the methods do not take, and what to write instead (np.sum(x, where=m) passes them on).
_NUMPY_ONLY = {
    "where": "reduce pg.where(mask, x, n) instead, n the reduction's identity (0 for sum, 1 for prod, "
             "-inf for max); a masked mean is pg.sum(pg.where(mask, x, 0)) / pg.sum(mask)",
    "initial": "combine the result with it (x.sum() + initial, pg.maximum(x.max(), initial))",
    "mean": "the mean is computed from x itself; leave mean= out",
}


def _numpy_keywords(name: str, dim: Any, keepdim: bool, axis: Any, out: Any, keepdims: Any,
                    others: dict | None = None) -> tuple:
    """``(dim, keepdim)`` from PyTorch's and numpy's spellings of ``Variable.<name>``; a TypeError
    naming the method and the keyword for ``out=`` and for any of ``others`` (numpy's ``where=``,
    ``initial=``, ``mean=``), which Python's own message named a private function for."""
    if out is not None and out is not _NOT_GIVEN:
        raise TypeError(f"polygrad: Variable.{name}(out=...) is not supported (arrays may be immutable); "
                        f"use the result")
    if others:
        key = next(iter(others))
        raise TypeError(f"polygrad: Variable.{name}({key}=...) is not supported; "
                        + _NUMPY_ONLY.get(key, f"see help(Variable.{name}) for its keywords"))
    if axis is not None:
        if dim is not None:
            raise TypeError(f"polygrad: Variable.{name} got both dim and axis")
        dim = axis
    return dim, bool(keepdim or keepdims)


def _sum(x: Variable, dim: Any = None, keepdim: bool = False, *, axis: Any = None, dtype: Any = None,
         out: Any = _NOT_GIVEN, keepdims: Any = False, **others: Any) -> Variable:
    """Sum over ``dim`` (all axes by default), PyTorch 0.x's ``x.sum(dim, keepdim)``; numpy's
    ``axis``, ``dtype``, ``keepdims`` too (``np.sum(x)``)."""
    dim, keepdim = _numpy_keywords("sum", dim, keepdim, axis, out, keepdims, others)
    return ops.sum(x, axis=_axis(dim), dtype=dtype, keepdims=keepdim)


def _mean(x: Variable, dim: Any = None, keepdim: bool = False, *, axis: Any = None, dtype: Any = None,
          out: Any = _NOT_GIVEN, keepdims: Any = False, **others: Any) -> Variable:
    """Mean over ``dim`` (all axes by default); numpy's keywords too (``np.mean(x)``), with a
    floating ``dtype``."""
    dim, keepdim = _numpy_keywords("mean", dim, keepdim, axis, out, keepdims, others)
    return ops.mean(_floating(x, dtype, "mean"), axis=_axis(dim), keepdims=keepdim)


def _floating(x: Variable, dtype: Any, name: str) -> Variable:
    """``x`` in ``dtype`` (any spelling numpy takes, through astype) for a statistic computed in
    it; a TypeError for a dtype that is not floating (numpy's np.mean(x, dtype=int) truncates)."""
    if dtype is None:
        return x
    y = ops.astype(x, dtype)
    if not x.xp.isdtype(y.dtype, ("real floating", "complex floating")):
        raise TypeError(f"polygrad: Variable.{name}(dtype={dtype}): it is computed in a floating dtype")
    return y


def _prod(x: Variable, dim: Any = None, keepdim: bool = False, *, axis: Any = None, dtype: Any = None,
          out: Any = _NOT_GIVEN, keepdims: Any = False, **others: Any) -> Variable:
    """Product over ``dim`` (all axes by default); numpy's keywords too (``np.prod(x)``)."""
    dim, keepdim = _numpy_keywords("prod", dim, keepdim, axis, out, keepdims, others)
    return ops.prod(x, axis=_axis(dim), dtype=dtype, keepdims=keepdim)


def _extreme(values: Any, indices: Any, pairwise: Any) -> Any:
    def method(x: Variable, dim: Any = None, keepdim: bool = False, *, axis: Any = None, out: Any = _NOT_GIVEN,
               keepdims: Any = False, **others: Any) -> Any:
        """The extreme element; with ``dim`` (or ``axis``), PyTorch's ``(values, indices)`` along it.
        The values are read at the indices, so that their gradient goes to the element the index
        names, as in PyTorch (``pg.max`` splits it among ties). numpy's call (``np.max(x,
        axis=0)``, which passes ``out=``) gives the values alone, as numpy does. Given another
        Variable or array (``x.max(y)``), the element-wise extreme, as PyTorch's ``max(other)``."""
        if isinstance(dim, Variable) or (is_array(dim) and not isinstance(dim, numbers.Integral)):
            _numpy_keywords(values.__name__, None, False, None, out, False, others)  # (refuses what it ignores)
            return pairwise(x, dim)  # (a NumPy integer is an array to is_array, and an axis here)
        dim, keepdim = _numpy_keywords(values.__name__, dim, keepdim, axis, out, keepdims, others)
        if out is not _NOT_GIVEN or dim is None or isinstance(dim, (tuple, list)):
            # numpy's call, all axes, or several: the values alone (as numpy and torch.amax give them)
            return values(x, axis=_axis(dim), keepdims=keepdim)
        idx = indices(x, axis=dim, keepdims=True)
        picked = ops.take_along_axis(x, idx, axis=dim)
        if keepdim:
            return picked, idx
        return ops.squeeze(picked, axis=dim), ops.squeeze(idx, axis=dim)

    return method


def _spread(reduce: Any, name: str) -> Any:
    def method(x: Variable, dim: Any = None, unbiased: bool = True, keepdim: bool = False, *, axis: Any = None,
               dtype: Any = None, out: Any = _NOT_GIVEN, ddof: Any = None, keepdims: Any = False,
               **others: Any) -> Variable:
        dim, keepdim = _numpy_keywords(name, dim, keepdim, axis, out, keepdims, others)
        correction = float(ddof) if ddof is not None else 1.0 if unbiased else 0.0  # numpy's np.var passes ddof
        return reduce(_floating(x, dtype, name), axis=_axis(dim), correction=correction, keepdims=keepdim)

    method.__name__ = name
    return method


_var = _spread(ops.var, "var")
_var.__doc__ = """Variance over ``dim``, unbiased by default (PyTorch); ``pg.var`` is the standard's (biased).
numpy's keywords too: ``np.var(x)`` passes ``ddof=0`` (biased, numpy's); ``ddof`` wins over ``unbiased``."""
_std = _spread(ops.std, "std")
_std.__doc__ = """Standard deviation over ``dim``, unbiased by default (PyTorch); ``pg.std`` is the standard's.
numpy's keywords too: ``np.std(x)`` passes ``ddof=0``."""


def _norm(x: Variable, p: Any = 2, dim: Any = None, keepdim: bool = False) -> Variable:
    """The ``p``-norm over ``dim`` (all elements by default)."""
    return ops.linalg.vector_norm(x, ord=p, axis=_axis(dim), keepdims=keepdim)


# -- shapes ----------------------------------------------------------------------------
def _view(x: Variable, *shape: Any) -> Variable:
    """The same data in another shape (PyTorch's ``view``, Chainer's ``reshape``)."""
    return ops.reshape(x, _shape(shape))


def _unsqueeze(x: Variable, dim: int) -> Variable:
    """A new axis of length 1 at ``dim``."""
    return ops.expand_dims(x, axis=dim)


def _squeeze(x: Variable, dim: Any = None) -> Variable:
    """Without the axis ``dim`` of length 1 (all of them by default)."""
    if dim is None:
        dim = tuple(i for i, n in enumerate(x.shape) if n == 1)
    return ops.squeeze(x, axis=dim)


def _expand(x: Variable, *sizes: Any) -> Variable:
    """Broadcast to ``sizes`` (-1 keeps a size; not for a new leading dimension, as in PyTorch)."""
    sizes = _shape(sizes)
    lead = len(sizes) - x.ndim
    if any(n == -1 for n in sizes[:max(lead, 0)]):
        raise ValueError(f"polygrad: expand{sizes}: -1 keeps a dimension of {x._describe()}, and the new leading "
                         f"dimensions have none to keep; give their sizes")
    return ops.broadcast_to(x, tuple(x.shape[i - lead] if n == -1 else n for i, n in enumerate(sizes)))


def _dot(x: Variable, y: Any) -> Variable:
    """PyTorch's ``dot``: the inner product of two vectors, without conjugation (``vdot`` and the
    standard's ``vecdot`` conjugate ``x``); other ranks raise, as in PyTorch."""
    ndims = (x.ndim, getattr(y, "ndim", 0))
    if ndims != (1, 1):
        raise ValueError(f"polygrad: x.dot(y) takes two vectors (PyTorch's dot), got {ndims[0]} and {ndims[1]} "
                         f"dimensions; use x @ y or pg.matmul for matrices, pg.vecdot along an axis")
    return ops.matmul(x, y)


def _t(x: Variable) -> Variable:
    """The transpose of a matrix (a vector stays as it is)."""
    if x.ndim > 2:
        raise ValueError(f"polygrad: t() transposes a matrix or vector; {x._describe()} has {x.ndim} dimensions")
    return ops.reverse_dims(x) if x.ndim == 2 else x


def _transpose(x: Variable, *axes: Any) -> Variable:
    """Permute the axes (Chainer's ``transpose(*axes)``; reversed without arguments or with None)."""
    given = _shape(axes)
    if given in ((), (None,)):
        return ops.transpose(x)
    # checked before any wrapping: transpose(5, 3, 4) of 3 dimensions was transpose(2, 0, 1)
    axes = _normalize_axes(given, x.ndim, "Variable.transpose")  # (-2, -1) is (0, 1) on a matrix
    text = ", ".join(map(str, given))
    if x.ndim == 2 and axes == (0, 1):
        raise ValueError(
            f"polygrad: x.transpose({text}) is ambiguous: Chainer's transpose(*axes) permutes (here: changes nothing), "
            f"PyTorch's transpose(dim0, dim1) swaps; write x.T or x.swapaxes({text}) to swap, or nothing to keep x"
        )
    if x.ndim is not None and len(axes) != x.ndim:  # (None: a symbolic array of a rank not inferred)
        raise ValueError(
            f"polygrad: x.transpose({text}) permutes all the axes (Chainer's transpose(*axes)), and {x._describe()} "
            f"has {x.ndim} dimensions: give {x.ndim} axes, or none to reverse them"
            + (f"; PyTorch's transpose(dim0, dim1), a swap, is x.swapaxes({text})" if len(given) == 2 else ""))
    return ops.transpose(x, axes)


def _swapaxes(x: Variable, dim0: int, dim1: int) -> Variable:
    """Swap two axes (PyTorch's ``transpose(dim0, dim1)``; the same axis twice changes nothing)."""
    if x.ndim == 0:  # (_normalize_axes leaves the axes of a 0-d array as they are)
        raise ValueError(f"polygrad.Variable.swapaxes: {x._describe()} has no axes to swap ({dim0} and {dim1} given)")
    (d0,), (d1,) = (_normalize_axes(d, x.ndim, "Variable.swapaxes") for d in (dim0, dim1))
    order = list(range(x.ndim))
    order[d0], order[d1] = order[d1], order[d0]
    return ops.permute_dims(x, tuple(order))


def _permute(x: Variable, *dims: Any) -> Variable:
    """Permute the axes (PyTorch's ``permute(*dims)``)."""
    return ops.permute_dims(x, _shape(dims))


def _repeat(x: Variable, *sizes: Any) -> Variable:
    """Tile the data ``sizes`` times along each axis (PyTorch's ``repeat``)."""
    return ops.tile(x, _shape(sizes))


# -- values and copies --------------------------------------------------------------------
def _numpy(x: Variable) -> Any:
    """The data as a numpy array (PyTorch's ``numpy()``; shares memory on the numpy backend).
    Refused for a variable that requires grad, as PyTorch does (``x.detach().numpy()``)."""
    x._refuse_untracked("x.numpy()")
    return to_backend(x.data, "numpy")


def _scalar(a: Any) -> Any:
    """The Python number of a one-element array, by the standard's kind of its dtype."""
    xp = get_backend_of(a).xp
    a = xp.reshape(a, ())
    for kind, convert in (("bool", bool), ("integral", int), ("real floating", float)):
        if xp.isdtype(a.dtype, kind):
            return convert(a)
    return complex(a)


def _item(x: Variable) -> Any:
    n = x.size
    if n != 1:  # None: a dimension is unknown (a lazy backend)
        raise ValueError(f"polygrad: item() needs one element; {x._describe()} has "
                         f"{'an unknown number of' if n is None else int(n)} elements")
    return _scalar(x.data)


def _tolist(x: Variable) -> Any:
    def walk(a: Any) -> Any:
        return _scalar(a) if a.ndim == 0 else [walk(a[i, ...]) for i in range(a.shape[0])]

    return walk(x.data)


def _astype(name: str) -> Any:
    def method(x: Variable) -> Variable:
        """A copy of another dtype (PyTorch's float(), double(), long(), int())."""
        return ops.astype(x, dtype_named(x.xp, name, f"converting {x._describe()} of dtype {x.dtype} on backend "
                                                  f"{backend_of_type(type(x.data)).name!r}"))

    method.__name__ = name
    return method


def _clone(x: Variable) -> Variable:
    """A copy on ``x``'s own backend, differentiable (PyTorch's ``clone``; ``pg.asarray`` would copy
    onto the current backend: a dask Variable came back a numpy one)."""
    return apply(_creation.ASARRAY, (x,), {"copy": True})


def _contiguous(x: Variable) -> Variable:
    """PyTorch's ``contiguous``: ``x`` itself where it is no view; a view (``x.t()``, ``x[:, 1:]``) gets
    a copy with memory of its own, so a write into the result leaves ``x``'s base alone, as in
    PyTorch (the standard knows no memory layout: every view counts as not contiguous)."""
    return _clone(x) if _view_base(x._node) is not None or _unrecorded(x) is not None else x


# -- in place (PyTorch's trailing underscore) ---------------------------------------------
def _in_place(fn: Any, text: str) -> Any:
    def method(x: Variable, *args: Any, **kwargs: Any) -> Variable:
        """In place (PyTorch's trailing underscore): the variable holds the result, its version moves."""
        x._check_inplace(text)
        return x._assign_inplace(fn(x, *args, **kwargs), text, (*args, *kwargs.values()))

    return method


def _fill(x: Variable, value: Any) -> Variable:
    """An array of ``x``'s shape and dtype filled with ``value`` (a value that does not fit is
    refused by a message naming fill_)."""
    return _creation.filled_like(x, value, None, None, "fill_")


def _clamp(x: Variable, min: Any = None, max: Any = None) -> Variable:
    """``x`` limited to ``[min, max]`` (either may be None)."""
    return ops.clip(x, min, max)


# -- devices (Chainer's to_cpu / to_gpu, PyTorch's cpu / cuda) --------------------------------
def _backend_of_device(device: str) -> Any:
    """The usable backend of highest priority on ``device`` that computes eagerly."""
    from polygrad.backends import backends

    candidates = [get_backend(n) for n, s in backends().items() if s.usable and s.device == device and not s.lazy]
    if not candidates:
        raise RuntimeError(f"polygrad: no usable {device} backend is installed (pg.backends() says why)")
    return max(candidates, key=lambda b: b.info.priority)


def _to_device(device: str) -> Any:
    def method(x: Variable) -> Variable:
        """Move the data (and the gradient) to the {device} backend, in place (Chainer's to_{device})."""
        target = _backend_of_device(device)
        if x.backend is not target:
            if x._node is not None:
                raise RuntimeError(
                    f"polygrad: to_{device}() of {x._describe()}, made by {x._node.label} on backend "
                    f"{x.backend.name!r}: moving it in place would send {target.name!r} gradients into that "
                    f"function's backward (a {x.backend.name!r} leaf got a {target.name!r} .grad); move the "
                    f"leaves (the parameters) instead, or take x.{'cpu' if device == 'cpu' else 'cuda'}() for "
                    f"a copy without a graph")
            # Both moved before either is assigned: a gradient that fails to move (a dask chunk) left
            # the data moved and the gradient behind.
            data = to_backend(x.data, target.name)
            grad = None if x._grad is None else to_backend(x.grad, target.name)
            x.data = data
            if grad is not None:
                x._grad = grad
        return x

    method.__doc__ = method.__doc__.format(device=device)
    return method


def _moved(device: str) -> Any:
    def method(x: Variable) -> Variable:
        """A Variable on the {device} backend (PyTorch's cpu() / cuda()); x itself if it is there."""
        target = _backend_of_device(device)
        return x if x.backend is target else to_backend(x, target.name)

    method.__doc__ = method.__doc__.format(device=device)
    return method


def _addgrad(x: Variable, other: Variable) -> None:
    """Chainer's ``addgrad``: accumulate ``other``'s gradient into this variable's (moved to this backend)."""
    g = other.grad
    if g is None:
        return
    if other.backend is not x.backend:
        g = to_backend(g, x.backend.name)
    elif x._grad is None:
        g = x.xp.asarray(g, copy=True)  # x.grad never shares other.grad's array
    x.grad = g if x._grad is None else x.grad + g


METHODS = {
    # reductions
    "sum": _sum, "mean": _mean, "prod": _prod, "var": _var, "std": _std, "norm": _norm,
    "max": _extreme(ops.max, ops.argmax, ops.maximum), "min": _extreme(ops.min, ops.argmin, ops.minimum),
    "argmax": lambda x, dim=None, keepdim=False: ops.argmax(x, axis=dim, keepdims=keepdim),
    "argmin": lambda x, dim=None, keepdim=False: ops.argmin(x, axis=dim, keepdims=keepdim),
    # element-wise
    "exp": ops.exp, "log": ops.log, "sin": ops.sin, "cos": ops.cos, "tan": ops.tan, "tanh": ops.tanh,
    "sqrt": ops.sqrt, "abs": ops.abs, "neg": ops.negative, "sign": ops.sign, "floor": ops.floor, "ceil": ops.ceil,
    "round": ops.round, "reciprocal": ops.reciprocal, "pow": ops.pow, "clamp": _clamp,
    "sigmoid": lambda x: ops.nn.sigmoid(x),
    "add": ops.add, "sub": ops.subtract, "mul": ops.multiply, "div": ops.divide,
    "dot": _dot, "mm": ops.matmul, "matmul": ops.matmul,
    # shapes
    "view": _view, "view_as": lambda x, other: ops.reshape(x, tuple(other.shape)), "unsqueeze": _unsqueeze,
    "squeeze": _squeeze, "expand": _expand, "expand_as": lambda x, other: ops.broadcast_to(x, tuple(other.shape)),
    "reshape": _view, "t": _t, "transpose": _transpose, "swapaxes": _swapaxes, "permute": _permute, "repeat": _repeat,
    "flatten": lambda x: ops.reshape(x, (-1,)), "contiguous": _contiguous,
    "dim": lambda x: x.ndim, "numel": lambda x: x.size, "nelement": lambda x: x.size,
    # values, copies, dtypes
    "numpy": _numpy, "item": _item, "tolist": _tolist, "clone": _clone,
    "float": _astype("float32"), "double": _astype("float64"), "long": _astype("int64"), "int": _astype("int32"),
    # in place
    "add_": _in_place(ops.add, "add_"), "sub_": _in_place(ops.subtract, "sub_"),
    "mul_": _in_place(ops.multiply, "mul_"), "div_": _in_place(ops.divide, "div_"),
    "pow_": _in_place(ops.pow, "pow_"), "clamp_": _in_place(_clamp, "clamp_"),
    "zero_": _in_place(lambda x: ops.zeros_like(x), "zero_"), "fill_": _in_place(_fill, "fill_"),
    "neg_": _in_place(ops.negative, "neg_"), "exp_": _in_place(ops.exp, "exp_"),
    # devices and gradients (Chainer v2, PyTorch 0.x)
    "to_cpu": _to_device("cpu"), "to_gpu": _to_device("gpu"), "cpu": _moved("cpu"), "cuda": _moved("gpu"),
    "addgrad": _addgrad,
}


def from_numpy(array: Any) -> Variable:
    """PyTorch's ``torch.from_numpy``: a Variable (not requiring grad) over a numpy array, no copy."""
    from polygrad.array_api import asarray

    return asarray(array, backend="numpy")


def install() -> None:
    """Put every method of ``METHODS`` on Variable (one line of help for those written inline)."""
    for name, fn in METHODS.items():
        if not fn.__doc__:
            fn.__doc__ = f"``x.{name}(...)`` as in PyTorch 0.x (see polygrad.variable_methods)."
        setattr(Variable, name, fn)


install()

"""Array functions with Chainer's signatures: concat, stack, split_axis, where, clip.

All are compositions of ops, so they need no rules. ``concat`` and ``stack``
differ from the standard's (:mod:`polygrad.ops`) only in their defaults:
Chainer's ``concat`` joins along axis 1.
"""

from __future__ import annotations

from typing import Any

from polygrad import ops
from polygrad.core.integers import as_int
from polygrad.functions.nn import _data, hyperparameter
from polygrad.ops import getitem, where as _where
from polygrad.ops.elementwise import _refuse_floating_bounds

__all__ = ["concat", "stack", "split_axis", "where", "clip"]


def static_shape(x: Any, fname: str, axes: Any = None, name: str = "inputs") -> tuple[Any, ...]:
    """The shape of ``x`` (a Variable or an array), with the sizes on ``axes`` (default: all) known.

    A size not known yet is None in the standard and nan on dask (after boolean-mask indexing):
    on an axis of ``axes`` it raises a ValueError naming ``fname`` and the argument ``name``; on
    the others it is None (a nan taken as a number gave nan: batch normalization's running
    variance was nan).
    """
    shape = _data(x).shape
    if shape is None:  # (a symbolic expression whose shape was not inferred)
        raise ValueError(f"polygrad.functions.{fname} needs {name} of known shape; its shape could not be inferred "
                         f"from the symbolic shapes (declare the sizes with T.tensor(dtype, shape))")
    shape = tuple(shape)
    known = tuple(None if n is None or n != n else n for n in shape)
    ndim = len(known)
    if any(n is None and (axes is None or a in axes or a - ndim in axes) for a, n in enumerate(known)):
        raise ValueError(f"polygrad.functions.{fname} needs {name} of known shape, got {shape}")
    return known


def _axis_key(ndim: int, axis: int, index: Any) -> tuple:
    return (slice(None),) * axis + (index,) + (slice(None),) * (ndim - axis - 1)


def concat(xs, axis=1):
    """Join the arrays ``xs`` along an existing ``axis`` (default 1, as in Chainer)."""
    xs = tuple(xs)
    if not xs:
        raise ValueError("polygrad.functions.concat needs at least one array")
    return ops.concat(xs, axis=axis)


def stack(xs, axis=0):
    """Join the arrays ``xs`` (all of one shape) along a new ``axis``."""
    xs = tuple(xs)
    if not xs:
        raise ValueError("polygrad.functions.stack needs at least one array")
    return ops.stack(xs, axis=axis)


def split_axis(x, indices_or_sections, axis, force_tuple=True):
    """Split ``x`` along ``axis``, as ``numpy.split``: an integer gives that many equal
    sections, a sequence of integers gives the split points. Returns a tuple of
    Variables (or the one Variable if ``force_tuple=False`` and there is one).

    Integers are those of :func:`~polygrad.core.integers.as_int` (NumPy's too; not a bool or
    a float): ``np.int64(2)`` was taken for a sequence and failed with "not iterable".
    """
    fname = "polygrad.functions.split_axis"
    shape = tuple(_data(x).shape)
    ndim = len(shape)
    a = as_int(axis)
    if a is None:
        raise TypeError(f"{fname}: axis must be an int, got {axis!r}")
    if not -ndim <= a < ndim:
        raise ValueError(f"{fname}: axis {a} is out of range for shape {shape}")
    axis = a % ndim
    size = static_shape(x, "split_axis", (axis,))[axis]  # (only that size is needed)
    n = as_int(indices_or_sections)
    if n is not None:
        if n <= 0 or size % n:
            raise ValueError(f"{fname}: axis {axis} of length {size} cannot be split into {n} equal sections")
        points = [size // n * i for i in range(1, n)]
    else:
        try:
            points = [as_int(i) for i in indices_or_sections]
        except TypeError:
            points = [None]
        if None in points:
            raise TypeError(f"{fname}: indices_or_sections must be an int or a sequence of ints, "
                            f"got {indices_or_sections!r}")
    bounds = [0] + points + [size]
    pieces = tuple(getitem(x, _axis_key(ndim, axis, slice(a, b))) for a, b in zip(bounds[:-1], bounds[1:]))
    if not force_tuple and len(pieces) == 1:
        return pieces[0]
    return pieces


def where(condition, x, y):
    """``x`` where ``condition`` is True, else ``y`` (differentiable in ``x`` and ``y``)."""
    return _where(condition, x, y)


def clip(x, x_min, x_max):
    """``x`` limited to ``[x_min, x_max]`` (either bound may be None).

    The gradient is 1 where ``x_min <= x <= x_max`` (bounds included, as in
    Chainer) and 0 outside. The bounds are numbers (arrays of bounds:
    ``pg.clip``), and the result has ``x``'s dtype. An integer ``x`` takes
    integer bounds only, as ``pg.clip`` (Chainer refuses an integer ``x``).

    A bool ``x`` is refused, as in Chainer and the standard (whose clip takes
    numbers only): the bounds are numbers, so no bool result can be said to lie
    between them.

    :raises TypeError: an integer ``x`` with a floating-point bound (it made the
        result float64: ``clip(int64 [1, 5, 9], 2.5, 7.5)`` was ``[2.5, 5., 7.5]``),
        or a bool ``x`` (it came back int64 or float64, against x's dtype).
    """
    if x_min is None and x_max is None:
        raise ValueError("polygrad.functions.clip: x_min and x_max cannot both be None")
    x_min = None if x_min is None else hyperparameter("clip", "x_min", x_min)
    x_max = None if x_max is None else hyperparameter("clip", "x_max", x_max)
    try:  # pg.clip's rule for the kinds of x (a bool refused) and the bounds, in its words
        _refuse_floating_bounds(x, {"x_min": x_min, "x_max": x_max})
    except (TypeError, OverflowError) as exc:
        raise type(exc)(f"polygrad.functions.clip: {str(exc).removeprefix('polygrad: clip: ')}") from None
    if x_min is not None and x_max is not None and x_min > x_max:
        raise ValueError(f"polygrad.functions.clip: x_min ({x_min}) must not exceed x_max ({x_max})")
    y = x
    if x_min is not None:
        y = _where(x < x_min, x_min, y)
    if x_max is not None:
        y = _where(x > x_max, x_max, y)
    return y

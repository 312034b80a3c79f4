"""Windows of an NCHW image, from standard ops only (for convolution and pooling).

Padding places the image in zeros with ``getitem_grad`` (whose vjp is the
slice back out); each window offset ``(i, j)`` is one strided slice. The
gradients come from the rules of those ops: a slice's vjp scatters back, and
the engine adds the contributions of overlapping windows.
"""

from __future__ import annotations

from typing import Any

from polygrad.core.dispatch import backend_of_type, is_array
from polygrad.core.variable import Variable
from polygrad.functions.array import static_shape
from polygrad.ops import getitem, getitem_grad, ones_like, where
from polygrad.ops.creation import count


def require_array(where: str, name: str, a: Any) -> None:
    """A TypeError naming ``polygrad.<where>`` and the argument ``name`` where ``a`` is neither a
    Variable nor an array of a backend (a list, a number), in the words of the op dispatch: a
    nested list was "'list' object has no attribute 'shape'", a bias of 1.0 "expects b of shape
    (2,) ..., got None"."""
    if isinstance(a, Variable) or is_array(a):
        return
    try:
        backend_of_type(type(a))
    except TypeError as exc:
        text = str(exc).removeprefix("polygrad: ")
        raise TypeError(f"polygrad.{where}: {name} ({type(a).__name__}): {text}") from None


def require_floating(fname: str, **arrays: Any) -> None:
    """A TypeError naming ``fname`` and the argument where an array is not floating (Chainer's type
    checks): a bool convolution summed as a logical or, and an integer max pooling came back
    integer or float64 depending on the padding. None (no bias) passes; what is not an array
    is refused by :func:`require_array`."""
    from polygrad.functions.nn import dtype_kind

    for name, a in arrays.items():
        if a is not None:
            require_array(f"functions.{fname}", name, a)
        if a is not None and dtype_kind(a) in ("bool", "integral"):
            d = getattr(a, "_data", a)
            raise TypeError(f"polygrad.functions.{fname}: {name} must be floating (as in Chainer), got {d.dtype} "
                            f"{tuple(d.shape)}; cast it first (pg.astype)")


def pair(v: Any, what: str, fname: str, owner: str = "functions") -> tuple[int, int]:
    """``k`` or ``(kh, kw)`` as a pair of ints, each at least 1 (at least 0 for ``pad``): a
    stride or window of 0 was a bare ZeroDivisionError, a negative pad a wrong geometry.
    Errors name ``polygrad.<owner>.<fname>`` (a link, such as ``links.Convolution2D``, too)."""
    least = 0 if what == "pad" else 1
    where = f"{owner}.{fname}"
    try:
        if hasattr(v, "__len__"):
            if len(v) != 2:
                raise TypeError
            a, b = v
            return count(a, what, where, least), count(b, what, where, least)
        n = count(v, what, where, least)
        return n, n
    except TypeError:  # (a float, a bool, a triple...)
        raise ValueError(f"polygrad.{where}: {what} must be an int or a pair of ints, got {v!r}") from None


def outsize(size: int, k: int, s: int, p: int, cover_all: bool = False) -> int:
    """Output length of a window ``k`` with stride ``s`` over ``size`` padded by ``p``
    on both sides (``cover_all``: one more window if some elements would be missed)."""
    if cover_all:
        return (size + 2 * p - k + s - 1) // s + 1
    return (size + 2 * p - k) // s + 1


def pad2d(x: Any, top: int, left: int, bottom: int, right: int, value: float = 0.0, fname: str = "pad") -> Any:
    """``x`` (N, C, H, W) padded on its last two axes with ``value`` (for the function ``fname``)."""
    if not (top or left or bottom or right):
        return x
    n, c, h, w = static_shape(x, fname)
    shape = (n, c, h + top + bottom, w + left + right)
    key = (slice(None), slice(None), slice(top, top + h), slice(left, left + w))
    y = getitem_grad(x, key, shape)
    if value == 0:
        return y
    # The pad region gets `value`: ones placed like x mark the inside (ops only, so
    # symbolic inputs work too).
    inside = getitem_grad(ones_like(x), key, shape) > 0
    return where(inside, y, value)


def windows(x: Any, kh: int, kw: int, sy: int, sx: int, oh: int, ow: int) -> list:
    """The ``kh * kw`` strided slices of a padded ``x``, each (N, C, oh, ow), row-major in ``(i, j)``."""
    return [
        getitem(x, (slice(None), slice(None), slice(i, i + sy * (oh - 1) + 1, sy), slice(j, j + sx * (ow - 1) + 1, sx)))
        for i in range(kh)
        for j in range(kw)
    ]

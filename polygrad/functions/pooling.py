"""2-D pooling of NCHW images, from strided slices of the padded image."""

from __future__ import annotations

from polygrad.functions import _im2col
from polygrad.functions.array import static_shape
from polygrad.ops import astype, where
from polygrad.functions.nn import _widened

__all__ = ["max_pooling_2d", "average_pooling_2d"]


def _geometry(x, ksize, stride, pad, cover_all, fname):
    _im2col.require_floating(fname, x=x)
    kh, kw = _im2col.pair(ksize, "ksize", fname)
    sy, sx = _im2col.pair(ksize if stride is None else stride, "stride", fname)
    ph, pw = _im2col.pair(pad, "pad", fname)
    shape = static_shape(x, fname, (2, 3))  # (an unknown batch size is no obstacle)
    if len(shape) != 4:
        raise ValueError(f"polygrad.functions.{fname}: expects x of shape (N, C, H, W), got {shape}")
    h, w = shape[2:]
    oh, ow = _im2col.outsize(h, kh, sy, ph, cover_all), _im2col.outsize(w, kw, sx, pw, cover_all)
    if oh <= 0 or ow <= 0:
        raise ValueError(f"polygrad.functions.{fname}: a {kh}x{kw} window does not fit an input of {h}x{w} padded by {ph}, {pw}")
    return kh, kw, sy, sx, ph, pw, oh, ow, h, w


def max_pooling_2d(x, ksize, stride=None, pad=0, cover_all=True):
    """Maximum over each ``ksize`` window of ``x`` (N, C, H, W), moved by ``stride``
    (default ``ksize``), over ``x`` padded by ``pad`` with -inf.

    ``cover_all=True`` (Chainer's default) adds a last window when the windows
    would miss the last rows or columns: ``oh = ceil((H + 2 ph - kh) / sy) + 1``.

    Each window's whole gradient goes to its first maximum in row-major window
    order, as in Chainer 7 (``argmax``), PyTorch and jax's ``reduce_window``
    (``pg.max`` would split it among tied elements); in a window holding NaN
    (whose value is NaN) to its first NaN, as Chainer's ``argmax`` picks.
    """
    kh, kw, sy, sx, ph, pw, oh, ow, h, w = _geometry(x, ksize, stride, pad, cover_all, "max_pooling_2d")
    bottom = _reach(oh, sy, kh, h, ph)
    right = _reach(ow, sx, kw, w, pw)
    xp_ = _im2col.pad2d(x, ph, pw, bottom, right, float("-inf"), "max_pooling_2d")
    # A running maximum over the windows that keeps the one it holds on a tie (or once it is NaN) and
    # takes a later one that is larger or NaN: the value is numpy's max (NaN propagates), and where's
    # vjp routes the gradient to the first maximum. (Elementwise ops only, so every backend, a lazy or
    # a symbolic one too, picks the same element; the standard leaves argmax's NaN order open.)
    wins = _im2col.windows(xp_, kh, kw, sy, sx, oh, ow)
    y = wins[0]
    for win in wins[1:]:
        y = where((win <= y) | (y != y), y, win)
    return y


def average_pooling_2d(x, ksize, stride=None, pad=0):
    """Mean over each ``ksize`` window of ``x`` (N, C, H, W), moved by ``stride``
    (default ``ksize``), over ``x`` zero-padded by ``pad``; padded zeros count
    in the mean, which always divides by ``kh * kw`` (as in Chainer). A float16
    ``x`` is summed in float32 (numpy's mean, which Chainer takes, does so: a
    window of 3000s summed past 65504 in float16 was inf) and given back in float16."""
    kh, kw, sy, sx, ph, pw, oh, ow, h, w = _geometry(x, ksize, stride, pad, False, "average_pooling_2d")
    wide, back = _widened(x)
    xp_ = _im2col.pad2d(wide, ph, pw, ph, pw, fname="average_pooling_2d")
    total = None
    for win in _im2col.windows(xp_, kh, kw, sy, sx, oh, ow):
        total = win if total is None else total + win
    mean = total * (1.0 / (kh * kw))
    return mean if back is None else astype(mean, back)


def _reach(o: int, s: int, k: int, size: int, p: int) -> int:
    """Padding needed after the data so that ``o`` windows fit (at least ``p``)."""
    need = (o - 1) * s + k - size - p
    return p if need <= p else need

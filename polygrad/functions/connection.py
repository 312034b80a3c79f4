"""Connections with parameters: 2-D convolution (im2col + matmul) and embed_id."""

from __future__ import annotations

from polygrad.functions import _im2col
from polygrad.functions.array import stack, static_shape
from polygrad.functions.nn import _shape, check_ignore_label, check_labels
from polygrad.ops import equal, expand_dims, matmul, reshape, take, where
from polygrad.ops.nn import embed_ids

__all__ = ["convolution_2d", "embed_id"]


def convolution_2d(x, W, b=None, stride=1, pad=0):
    """2-D convolution (cross-correlation, as in Chainer) of ``x`` (N, C, H, W)
    with filters ``W`` (out_c, C, kh, kw), plus the bias ``b`` (out_c,).

    im2col from standard ops: the zero-padded image's ``kh * kw`` strided
    windows are stacked into columns (N, C * kh * kw, oh * ow), and one
    matmul with ``W`` reshaped to (out_c, C * kh * kw) gives the output
    (N, out_c, oh, ow), with ``oh = (H + 2 ph - kh) // sy + 1`` (likewise ``ow``).
    """
    _im2col.require_floating("convolution_2d", x=x, W=W, b=b)
    sy, sx = _im2col.pair(stride, "stride", "convolution_2d")
    ph, pw = _im2col.pair(pad, "pad", "convolution_2d")
    xs, ws = static_shape(x, "convolution_2d"), static_shape(W, "convolution_2d")
    if len(xs) != 4 or len(ws) != 4 or xs[1] != ws[1]:
        raise ValueError(
            f"polygrad.functions.convolution_2d: expects x (N, C, H, W) and W (out_c, C, kh, kw), got x {xs} and W {ws}"
        )
    n, c, h, w = xs
    out_c, _, kh, kw = ws
    if kh == 0 or kw == 0:  # (no window to stack: "polygrad.functions.stack needs at least one array")
        raise ValueError(f"polygrad.functions.convolution_2d: W of shape {ws} has an empty {kh}x{kw} kernel; "
                         f"a filter needs kh and kw of at least 1")
    if b is not None and _shape(b) not in ((out_c,), (None,)):
        raise ValueError(f"polygrad.functions.convolution_2d: expects b of shape ({out_c},) for W of shape {ws}, "
                         f"got {_shape(b)}")
    oh, ow = _im2col.outsize(h, kh, sy, ph), _im2col.outsize(w, kw, sx, pw)
    if oh <= 0 or ow <= 0:
        raise ValueError(
            f"polygrad.functions.convolution_2d: a {kh}x{kw} filter does not fit an input of {h}x{w} padded by {ph}, {pw}"
        )
    xp_ = _im2col.pad2d(x, ph, pw, ph, pw)
    cols = stack(_im2col.windows(xp_, kh, kw, sy, sx, oh, ow), axis=2)  # (N, C, kh*kw, oh, ow)
    cols = reshape(cols, (n, c * kh * kw, oh * ow))
    y = reshape(matmul(reshape(W, (out_c, c * kh * kw)), cols), (n, out_c, oh, ow))
    return y if b is None else y + reshape(b, (1, out_c, 1, 1))


def embed_id(x, W, ignore_label=None):
    """Rows of ``W`` (V, D) picked by the integer ids ``x`` (any shape): shape ``x.shape + (D,)``.

    The gradient of ``W`` is the scatter-add of the output gradient at the
    ids (repeated ids add up), from take's rule. Ids equal to
    ``ignore_label`` give zero rows and no gradient; any other id must be in
    ``[0, V)`` (a ValueError otherwise, checked as the labels of
    :func:`softmax_cross_entropy`, also at each call of a compiled function: a
    negative id would silently pick a row from the end). Compiled, ``W`` and
    ids of more than one dimension need a known shape.
    """
    check_labels("embed_id", "x", x)
    ignore_label = check_ignore_label("embed_id", ignore_label, x)
    vs = static_shape(W, "embed_id")
    if len(vs) != 2:
        raise ValueError(f"polygrad.functions.embed_id: expects W of shape (V, D), got {vs}")
    rows = embed_ids(x, vs[0], ignore_label)
    xs = _shape(x)
    if len(xs) == 1:
        y = take(W, rows, axis=0)
    else:  # take reads a vector of indices
        shape = static_shape(x, "embed_id (ids of more than one dimension)")
        y = reshape(take(W, reshape(rows, (-1,)), axis=0), shape + (vs[1],))
    if ignore_label is not None:
        y = where(expand_dims(equal(x, ignore_label), axis=-1), 0.0, y)
    return y

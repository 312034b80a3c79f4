"""Evaluation functions: ``accuracy`` (Chainer's ``F.accuracy``)."""

from __future__ import annotations

from typing import Any

from polygrad.backends import get_backend
from polygrad.core.dispatch import backend_of_type
from polygrad.core.variable import Variable
from polygrad.ops._dtypes import dtype_named, widened_of
from polygrad.functions.nn import _data, _same, _shape, check_ignore_label, check_labels, dtype_kind
from polygrad.ops import argmax, astype, equal, logical_and, maximum, mean, not_equal, reshape, sum, where

__all__ = ["accuracy"]


def accuracy(y, t, ignore_label=None):
    """The fraction of examples whose highest score in ``y`` is at their label in ``t``.

    ``y`` holds scores of shape (N, C) (or (N, C, d1, ...) with ``t`` of shape
    (N, d1, ...)), ``t`` integer labels of shape (N,). Labels equal to
    ``ignore_label`` count neither as hits nor in the total; with all of them
    ignored the accuracy is 0, as in Chainer. The result is a Variable of
    ``y``'s dtype that needs no gradient (accuracy has none); it is computed
    with ops, so it stays lazy on a lazy backend and works in compiled functions.

    :raises TypeError: ``t`` is not an array, or ``ignore_label`` not an int.
    :raises ValueError: ``y`` not floating-point, ``t`` not integer, or shapes that do not match.
    """
    fname = "accuracy"
    check_labels(fname, "t", t)
    ignore_label = check_ignore_label(fname, ignore_label, t)
    if dtype_kind(y) != "real floating":
        got = f"dtype {_data(y).dtype}" if dtype_kind(y) is not None else f"a {type(y).__name__}"
        raise ValueError(f"polygrad.functions.{fname}: y must be an array of floating-point scores, got {got}")
    ys, ts = _shape(y), _shape(t)
    if ys is not None and ts is not None and (len(ys) != len(ts) + 1 or not _same(ys[:1] + ys[2:], ts)):
        raise ValueError(
            f"polygrad.functions.{fname}: expects y of shape (N, C, ...) and t of shape (N, ...), got y {ys} and t {ts}"
        )
    y, t = _data(y), _data(t)  # no gradient: work on the arrays
    # (counts in float32 for a narrower float: a float16 count past 65504 was inf, the accuracy 0)
    dtype = widened_of(y) or y.dtype
    pred = argmax(y, axis=1)
    if ts is not None and len(ts) == 1 and pred.ndim != 1:  # symbolic inputs of unknown rank
        pred = reshape(pred, (-1,))
    pred = _in_labels_dtype(pred, t)
    hit = equal(pred, t)  # functions, not operators: a symbolic t's array has none (== would compare identity)
    if ignore_label is None:
        out = mean(astype(hit, dtype))
    else:
        valid = not_equal(t, ignore_label)
        count = sum(astype(logical_and(hit, valid), dtype))
        total = sum(astype(valid, dtype))
        out = where(total > 0, count / maximum(total, 1.0), 0.0)
    if dtype != y.dtype:
        out = astype(out, y.dtype)
    return out if isinstance(out, Variable) else Variable(out, requires_grad=False)


def _in_labels_dtype(pred: Any, t: Any) -> Any:
    """The predicted classes ``pred`` (argmax's signed index dtype) in the dtype of labels ``t`` where
    the standard promotes the two to none: ``t`` unsigned and at least as wide (uint64 beside int64;
    array_api_strict refused the comparison). That dtype holds every class, none negative; elsewhere
    ``equal`` promotes as the standard says."""
    if pred.dtype is None or t.dtype is None:  # (a symbolic array of a dtype not known yet)
        return pred
    (_, pred_bits), (unsigned, bits) = _integer_kind(pred), _integer_kind(t)
    return astype(pred, t.dtype) if unsigned and bits >= pred_bits else pred


def _integer_kind(a: Any) -> tuple:
    """(whether unsigned, bits) of the integer array ``a``'s dtype; a symbolic array's is a name, asked
    of the current backend."""
    a = _data(a)
    dtype = a.dtype
    if isinstance(dtype, str):
        xp = get_backend().xp
        dtype = dtype_named(xp, dtype, "polygrad.functions.accuracy")
    else:
        xp = backend_of_type(type(a)).xp
    return xp.isdtype(dtype, "unsigned integer"), xp.iinfo(dtype).bits

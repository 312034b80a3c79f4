"""Normalization: batch normalization (train and test modes) and layer normalization."""

from __future__ import annotations

import math
from typing import Any

from polygrad.core import config
from polygrad.core.dispatch import backend_of_type, has_namespace
from polygrad.core.variable import Variable
from polygrad.functions._im2col import require_array
from polygrad.functions.array import _data, static_shape
from polygrad.functions.nn import _widened, as_variable, dtype_kind, hyperparameter
from polygrad.ops import astype, mean, reshape, sqrt
from polygrad.ops._dtypes import widened_of

__all__ = ["batch_normalization", "fixed_batch_normalization", "layer_normalization"]


def _parameter_shape(fname: str, gamma: Any, lead: bool = False, **params: Any) -> tuple[int, ...]:
    """gamma's shape, which must be known and which each of ``params`` (beta; the fixed form's mean
    and var) must have too, as in Chainer's type checks: else a ValueError naming ``fname``, the
    argument and both shapes. Reshaped or broadcast to it instead, a (3, 2) mean for a (2, 3) gamma
    was read in the wrong order, and layer_normalization's beta of shape (4, 2, 3) gave a (4, 2, 3)
    output, silently. With ``lead``, axes of size 1 may come first (a running statistic of (1, C)
    for (C,), which train mode updates).

    One size not known yet (a compiled function's T.vector) matches: the caller reshapes the
    parameter to gamma's layout, and that reshape, which checks the number of elements, fixes it.
    Two or more are refused, since the reshape lets any layout of as many elements through (a
    T.matrix given (3, 2) for (2, 3) was read in the wrong order)."""
    for name, p in (("gamma", gamma), *params.items()):
        require_array(f"functions.{fname}", name, p)
    gs = static_shape(gamma, fname, name="gamma")
    for name, p in params.items():
        ps = static_shape(p, fname, (), name=name)
        want = (1,) * (len(ps) - len(gs)) + gs if lead else gs
        if len(ps) != len(want) or any(n is not None and n != w for n, w in zip(ps, want)):
            raise ValueError(f"polygrad.functions.{fname}: {name} of shape {ps} must have gamma's shape {gs}")
        free = [w for n, w in zip(ps, want) if n is None]  # (unknown sizes whose product must be 1 are all 1)
        if len(free) > 1 and math.prod(free) != 1:
            raise ValueError(
                f"polygrad.functions.{fname}: {name} of shape {ps} has more than one size not known yet, so "
                f"its layout cannot be checked against gamma's shape {gs} (an array of as many elements in "
                f"another order would be read as gamma's); declare its sizes: T.tensor(dtype, {want})")
    return gs


def _channel_layout(x: Any, gamma: Any, fname: str, **params: Any) -> tuple[tuple[int, ...], tuple[int, ...],
                                                                           tuple[int, ...]]:
    """(axes reduced over, shape that broadcasts a parameter against x, parameter shape), ``params``
    checked by :func:`_parameter_shape`.

    As in Chainer, ``gamma`` covers the axes of ``x`` after the batch axis:
    x (N, C, H, W) with gamma (C,) reduces over (0, 2, 3).
    """
    gs = _parameter_shape(fname, gamma, **params)
    k = len(gs)
    xs = static_shape(x, fname, range(1, k + 1))  # (the axes reduced over may be of unknown size)
    if len(xs) < k + 1 or xs[1:k + 1] != gs:
        raise ValueError(f"polygrad.functions.{fname}: gamma of shape {gs} does not match x of shape {xs} after axis 0")
    axes = (0,) + tuple(range(k + 1, len(xs)))
    return axes, (1,) + gs + (1,) * (len(xs) - k - 1), gs


def _moments(x: Any, axes: tuple[int, ...]) -> tuple[Variable, Variable, Variable, Variable, Any]:
    """``(c, mu, e, var, back)`` of ``x`` over ``axes`` (keepdims), in float32 at least (see
    :func:`_float32_at_least`): the deviations ``c`` from the mean ``mu + e``, the (biased)
    variance, and the dtype to give the output back in.

    Centred twice, as ops.statistical's ``_centered``: the mean is rounded to x's dtype, and
    where it is large against the spread that rounding shifts every deviation alike (float32
    values of 1000 +- 1: batch normalization was 1.7e-3 off, 10^4 ulps). The deviations' own
    mean is that rounding. (Taken out of ``mean(d * d)`` as ``- e * e`` instead, it saves a pass
    but cancels: the variance of a constant channel of 1e6 came out negative, the output NaN.)
    """
    wide, back = _widened(x)  # (the square of a float16 deviation past 256 is inf: the output was zeros)
    mu = mean(wide, axis=axes, keepdims=True)
    d = wide - mu
    e = mean(d, axis=axes, keepdims=True)
    c = d - e
    return c, mu, e, mean(c * c, axis=axes, keepdims=True), back


def _normalize(x: Any, gamma: Any, beta: Any, mu: Any, var: Any, eps: float, bshape: tuple) -> Any:
    """``x`` normalized by the given statistics, each of gamma's shape (checked) reshaped to ``bshape``."""
    scale = reshape(gamma, bshape) / sqrt(reshape(var, bshape) + eps)
    return (as_variable(x) - reshape(mu, bshape)) * scale + reshape(beta, bshape)


def _given_back(y: Any, back: Any, *params: Any) -> Any:
    """``y``, computed in float32, in the dtype it would have had without widening: ``back``
    (x's) where the parameters are as narrow, else float32 (a float32 gamma promotes)."""
    if back is None or any(widened_of(_data(p)) is None for p in params):
        return y
    return astype(y, back)


def _batch_statistics(x: Any, gamma: Any, beta: Any, eps: float) -> tuple[Any, Any, Any, tuple]:
    """Normalized output, batch mean and (biased) variance as Variables of gamma's shape, and the
    axes reduced over (for :func:`unbiased`)."""
    axes, bshape, gs = _channel_layout(x, gamma, "batch_normalization", beta=beta)
    c, mu, e, var, back = _moments(x, axes)
    # gamma / sqrt(var + eps) taken as one factor of gamma's size: a pass over x's size less,
    # for the one that the second centring adds
    y = _given_back(c * (reshape(gamma, bshape) / sqrt(var + eps)) + reshape(beta, bshape), back, gamma, beta)
    return y, reshape(mu + e, gs), reshape(var, gs), axes


def unbiased(var: Any, x: Any, axes: tuple[int, ...]) -> Any:
    """The raw array ``var``, the biased variance of ``x`` over ``axes``, times ``m / (m - 1)``
    (``m / 1`` for ``m <= 1``) for the ``m`` values each element of it was taken over.

    Where a size on ``axes`` is not known yet (dask's nan after boolean-mask indexing, ``x[keep]``)
    ``m`` is counted lazily on x's backend, from ones over the unknown axes only: taken as a
    number, the nan made the running variance nan without a word.
    """
    shape = static_shape(x, "batch_normalization", ())
    known = [shape[a] for a in axes if shape[a] is not None]
    m = math.prod(known)
    if len(known) == len(axes):
        return var * (m / max(m - 1, 1))
    xp = backend_of_type(type(var)).xp
    key = tuple(slice(None) if a in axes and n is None else slice(0, 1) for a, n in enumerate(shape))
    m = xp.sum(xp.ones_like(_data(x)[key], dtype=var.dtype)) * m
    return var * (m / xp.where(m > 1, m - 1, xp.ones_like(m)))


def running_average(old: Any, stat: Any, decay: float) -> Any:
    """``decay * old + (1 - decay) * stat`` on raw arrays, in ``old``'s dtype."""
    xp = backend_of_type(type(old)).xp
    new = decay * old + (1.0 - decay) * stat
    return new if new.dtype == old.dtype else xp.astype(new, old.dtype)


def _running_update(target: Any, stat: Any, decay: float, name: str) -> tuple[Any, Any]:
    """``(array, new value)`` for one running statistic, every check done: nothing is written
    until both statistics have passed theirs."""
    data = _data(target)
    backend = backend_of_type(type(data))
    if not backend.inplace:
        raise NotImplementedError(
            f"polygrad.functions.batch_normalization: running statistics on backend {backend.name!r} cannot be "
            "updated in place; use L.BatchNormalization, which rebinds them"
        )
    if dtype_kind(data) != "real floating":  # (the float update was cast to it: 0.3 became 0, a bool True)
        raise TypeError(
            f"polygrad.functions.batch_normalization: {name} must be an array of floating-point numbers to hold "
            f"a running average, got dtype {data.dtype} (backend {backend.name!r}); neither running statistic "
            "was changed")
    new = None
    if backend_of_type(type(stat)) is backend:
        try:
            new = running_average(data, stat, decay)
        except ValueError:  # (shapes that do not broadcast)
            pass
    if new is None or tuple(new.shape) != tuple(data.shape):  # ((1, C) for (C,) is taken, as before)
        raise ValueError(
            f"polygrad.functions.batch_normalization: {name} (shape {tuple(data.shape)}, backend "
            f"{backend.name!r}) does not fit the batch statistic (shape {tuple(stat.shape)}, backend "
            f"{backend_of_type(type(stat)).name!r}); neither running statistic was changed")
    try:  # (a read-only array, np.broadcast_to's: the write failed after running_mean had been written)
        data[...] = data
    except Exception as exc:
        raise ValueError(
            f"polygrad.functions.batch_normalization: {name} (shape {tuple(data.shape)}, backend {backend.name!r}) "
            f"cannot be written in place ({type(exc).__name__}: {exc}); neither running statistic was changed"
        ) from exc
    return data, new


def batch_normalization(x, gamma, beta, eps=2e-5, running_mean=None, running_var=None, decay=0.9):
    """Batch normalization over every axis of ``x`` but those covered by ``gamma``
    (axis 1 for a ``gamma`` of shape (C,)): ``gamma (x - mean) / sqrt(var + eps) + beta``.

    In train mode (``pg.config.train``, the default) the batch mean and
    (biased) variance are used, and the arrays ``running_mean`` and
    ``running_var``, when given, are updated in place:
    ``running = decay * running + (1 - decay) * batch_statistic``, the
    variance corrected by ``m / (m - 1)`` for ``m`` values per channel.
    In test mode (``pg.test_mode()``) with running statistics given, the
    result is :func:`fixed_batch_normalization` with them; without them the
    batch statistics are used and nothing is updated.

    ``beta`` has gamma's shape, as have the running statistics in test mode
    (or that shape after leading axes of size 1, which train mode updates).

    :raises TypeError: a running statistic that is not floating-point (an integer
        array cannot hold the average); neither is changed then.
    :raises ValueError: a shape that does not fit, or a running statistic that
        cannot be written (a read-only array); neither is changed then.
    """
    fname = "batch_normalization"
    eps = hyperparameter(fname, "eps", eps)
    decay = hyperparameter(fname, "decay", decay)
    train = config.train.get()
    if not train and running_mean is not None and running_var is not None:
        # fixed_batch_normalization with them, checked here as given (the reshape drops leading ones)
        _parameter_shape(fname, gamma, lead=True, running_mean=running_mean, running_var=running_var)
        _, bshape, _ = _channel_layout(x, gamma, fname, beta=beta)
        return _normalize(x, gamma, beta, running_mean, running_var, eps, bshape)
    y, mu, var, axes = _batch_statistics(x, gamma, beta, eps)
    if train and (running_mean is not None or running_var is not None):
        if not has_namespace(_data(mu)):  # symbolic statistics: the arrays would have to change at every call
            raise NotImplementedError(
                "polygrad.functions.batch_normalization: running statistics cannot be updated in place inside "
                "pg.function (their arrays would have to change at every call); leave running_mean and "
                "running_var out there, or use L.BatchNormalization eagerly"
            )
        updates = []
        if running_mean is not None:
            updates.append((running_mean, *_running_update(running_mean, _data(mu), decay, "running_mean")))
        if running_var is not None:
            updates.append((running_var, *_running_update(running_var, unbiased(_data(var), x, axes), decay,
                                                           "running_var")))
        for target, data, new in updates:
            data[...] = new
            if isinstance(target, Variable):  # a write into a Variable's array: its version moves
                target._vbox.bump("batch_normalization running statistics")
    return y


def fixed_batch_normalization(x, gamma, beta, mean, var, eps=2e-5):
    """Batch normalization with given statistics: ``gamma (x - mean) / sqrt(var + eps) + beta``,
    ``beta``, ``mean`` and ``var`` of gamma's shape (differentiable in all five)."""
    eps = hyperparameter("fixed_batch_normalization", "eps", eps)
    _, bshape, _ = _channel_layout(x, gamma, "fixed_batch_normalization", beta=beta, mean=mean, var=var)
    return _normalize(x, gamma, beta, mean, var, eps, bshape)


def layer_normalization(x, gamma, beta, eps=1e-5):
    """Normalize ``x`` over its trailing axes covered by ``gamma`` (axis 1 of an (N, D)
    input with gamma (D,)), then scale by ``gamma`` and shift by ``beta``, of gamma's shape."""
    eps = hyperparameter("layer_normalization", "eps", eps)
    gs = _parameter_shape("layer_normalization", gamma, beta=beta)
    k = len(gs)
    xs = static_shape(x, "layer_normalization", range(-k, 0))  # (the leading axes may be of unknown size)
    if k == 0 or len(xs) < k or xs[len(xs) - k:] != gs:
        raise ValueError(f"polygrad.functions.layer_normalization: gamma of shape {gs} does not match the trailing axes of x {xs}")
    axes = tuple(range(len(xs) - k, len(xs)))
    c, _, _, var, back = _moments(x, axes)
    # a beta whose sizes are not all known yet, pinned to gamma's shape: added as it is, one of size 1 broadcast
    b = beta if static_shape(beta, "layer_normalization", ()) == gs else reshape(beta, gs)
    return _given_back(c / sqrt(var + eps) * gamma + b, back, gamma, beta)


def batch_statistics(x: Any, gamma: Any, beta: Any, eps: float) -> tuple[Variable, Any, Any]:
    """For L.BatchNormalization: the train-mode output and the batch mean and
    unbiased variance (see :func:`unbiased`) as raw arrays."""
    eps = hyperparameter("batch_normalization", "eps", eps)
    y, mu, var, axes = _batch_statistics(x, gamma, beta, eps)
    return y, _data(mu), unbiased(_data(var), x, axes)

"""Neural-network functions: activations, the softmax family, linear, losses.

The ones with a row of their own (relu, sigmoid, softplus, erf, softmax,
log_softmax, and linear's one-node form) come from :mod:`polygrad.ops.nn`; the
rest are compositions of ops.
"""

from __future__ import annotations

import builtins
import math
import numbers
import operator
from typing import Any

from polygrad.core.dispatch import backend_of_type, is_array
from polygrad.core.function import Function
from polygrad.core.integers import as_int
from polygrad.core.variable import Variable, _same_shape
from polygrad.core.variable import dtype_kind as _core_dtype_kind
from polygrad.ops import (astype, clip, exp, expm1, isfinite, log, matmul, matrix_transpose, max, mean, moveaxis,
                          reshape, squeeze, sum, tanh, where)
from polygrad.backends import get_backend
from polygrad.ops._dtypes import dtype_named, holds, widened_of
from polygrad.ops.nn import (batch_size, binary_labels, erf, erfc, hyperparameter, label_mask, linear_op, log_softmax,
                             nll, probabilities, softplus, valid_count)


# ---------------------------------------------------------------------------
# Composed activations (no rules of their own)
# ---------------------------------------------------------------------------
def _data(x: Any) -> Any:
    return x._data if isinstance(x, Variable) else x


def as_variable(x: Any) -> Any:
    """``x`` as a Variable (a raw array becomes one that does not require grad), so that
    Python operators work with it on either side (array_api_strict refuses
    ``raw_array * Variable``); Python scalars pass through."""
    if isinstance(x, (Variable, bool, int, float, complex)):
        return x
    return Variable(x, requires_grad=False)


def _total(loss: Any, count: Any = None, n: int = 1) -> Variable:
    """``sum(loss) / count`` (or ``sum(loss) / n``, 0 where n is 0), summed in float32 for a
    narrower float loss (see :func:`~polygrad.ops._dtypes.widened`: a float16 sum past 65504
    was inf) and given back in the loss's dtype."""
    wide = widened_of(_data(loss))
    total = sum(loss if wide is None else astype(loss, wide))
    out = total / count if count is not None else total * (1.0 / builtins.max(1, n))
    return out if wide is None else astype(out, _data(loss).dtype)


def _widened(a: Any) -> tuple[Variable, Any]:
    """``a`` in float32 where its dtype is a narrower float (see :func:`~polygrad.ops._dtypes.widened`:
    the square of a float16 difference past 256 is inf), and the dtype to give a result back in
    (None: a's own)."""
    wide = widened_of(_data(a))
    return (as_variable(a), None) if wide is None else (astype(a, wide), _data(a).dtype)


def _per_batch(loss: Any, x: Any) -> Variable:
    """:func:`_total` of ``loss`` divided by the batch size of ``x`` (N of its shape (N, ...),
    at least 1: 0 for an empty batch), read from x's shape where it is known, else where the
    loss is computed (:func:`~polygrad.ops.nn.batch_size`): a compiled function's symbolic
    batch size (a mean of an empty batch gave NaN there; sigmoid_cross_entropy failed), dask's
    size not computed yet (NaN, divided by as 1)."""
    xs = _shape(x)
    n = 1 if xs == () else None if xs is None else xs[0]
    return _total(loss, n=n) if _known(n) else _total(loss, batch_size(x))


def leaky_relu(x, slope=0.2):
    """``x`` where ``x > 0``, else ``slope * x`` (the gradient at 0 is ``slope``, as in Chainer
    and PyTorch)."""
    slope = hyperparameter("leaky_relu", "slope", slope)
    return where(x > 0, x, x * slope)


def elu(x, alpha=1.0):
    """``x`` where ``x > 0``, else ``alpha (exp(x) - 1)`` (the gradient at 0 is ``alpha``, as in
    Chainer, PyTorch and JAX).

    ``exp(x) - 1`` is ``expm1(x)`` from -1 to 0, where the subtraction would cancel, and
    ``exp(x) - 1`` below -1, where it does not: there the gradient is exp's rule, ``exp(x)``,
    as Chainer's and PyTorch's, where expm1's rule, ``expm1(x) + 1``, cancels (float16 was 27 %
    off at -8 and 0 from -10, float32 44 % off at -17); from -1 to 0 that sum is at least 0.37
    and precise. The negative branch only sees ``min(x, 0)``, so a large positive ``x`` sends no
    inf or nan into the gradient.
    """
    alpha = hyperparameter("elu", "alpha", alpha)
    x = as_variable(x)
    neg = x <= 0
    xn = where(neg, x, 0.0)
    return where(neg, alpha * where(xn < -1.0, exp(xn) - 1.0, expm1(xn)), x)


_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def gelu(x, approximate=False):
    """Gaussian error linear unit, ``x Phi(x)``.

    ``approximate=False``: ``0.5 x erfc(-x / sqrt(2))`` with :func:`~polygrad.ops.nn.erfc`,
    which is ``0.5 x (1 + erf(x / sqrt(2)))`` without its cancellation for x << 0 (float32
    gelu(-5) was 4 % off, gelu(-6) 0);
    ``approximate=True``: the tanh form ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``, its
    argument taken of x clipped to [-10, 10]: tanh is +-1 from there on in every float dtype (the
    argument is past 43), so nothing changes but that the cube cannot overflow (float16's at 256
    did: tanh' was 0 times inf, a NaN gradient, where PyTorch, computing in float32, gives 0 or 1).
    PyTorch's spellings ``"none"`` and ``"tanh"`` are taken for False and True; anything
    else that is not a bool is refused (``"none"``, tested for truth, gave the tanh form).
    """
    if isinstance(approximate, str):
        check_option("gelu", "approximate", approximate, ("none", "tanh"))
        approximate = approximate == "tanh"
    approximate = check_flag("gelu", "approximate", approximate)
    x = as_variable(x)
    if approximate:
        c = clip(x, -10.0, 10.0)
        return 0.5 * x * (1.0 + tanh(_SQRT_2_OVER_PI * (c + 0.044715 * (c * c * c))))
    return 0.5 * x * erfc(x * (-1.0 / math.sqrt(2.0)))


def logsumexp(x, axis=None):
    """``log(sum(exp(x), axis))``, shifted by the maximum so that it never overflows.

    The shift is detached: the value does not depend on it, and so the
    gradient is exactly ``softmax(x)`` along ``axis``. Where the maximum is not
    finite the shift is 0, so that a slice of all ``-inf`` gives ``-inf`` and one
    holding ``+inf`` gives ``+inf`` (``-inf - -inf`` would make them NaN); a slice of no
    elements gives ``-inf`` (the log of an empty sum), as in jax and PyTorch. A float narrower
    than float32 is taken in float32 and given back in its dtype (see
    :func:`~polygrad.ops._dtypes.widened`: a float16 sum of exp stalls at 2048 along an axis
    that is not the last, and is inf past 65504).
    """
    x = as_variable(x)
    dtype = _data(x).dtype
    wide = widened_of(_data(x))
    if wide is not None:
        x = astype(x, wide)
    ndim, shape = _data(x).ndim, _data(x).shape
    # max has no identity: over axes of no elements the shift is their sum, 0 (a slice of nothing,
    # whose log of an empty sum is -inf, as jax and torch give, with an empty gradient); a bad axis
    # is left to max and sum to refuse
    picked = range(ndim) if axis is None else axis if isinstance(axis, tuple) else (axis,)
    picked = [as_int(a) for a in picked]  # (NumPy's integers too: one integer rule)
    if None in picked:  # (a list was "unsupported operand type(s) for %: 'list' and 'int'")
        raise TypeError(f"polygrad.functions.logsumexp: axis must be None, an int or a tuple of ints, got {axis!r}")
    empty = builtins.any(a is not None and -ndim <= a < ndim and shape[a] == 0 for a in picked)
    m = (sum if empty else max)(x, axis=axis, keepdims=True)
    if isinstance(m, Variable):
        m = m.detach()
    m = where(isfinite(m), m, 0.0)
    s = log(sum(exp(x - m), axis=axis))
    # (a 0-d x: no axis to squeeze; sum and max take axis 0 of it, as NumPy's do)
    axes = tuple(range(ndim)) if axis is None or not ndim else tuple(
        a % ndim for a in (axis if isinstance(axis, tuple) else (axis,)))
    out = s + squeeze(m, axis=axes) if axes else s + m
    return out if wide is None else astype(out, dtype)


# ---------------------------------------------------------------------------
# Linear and losses (composed)
# ---------------------------------------------------------------------------
def linear(x, W, b=None):
    """``x @ W.T + b``, with ``W`` of shape (out, in) as in Chainer.

    ``x`` of more than two dimensions is flattened to (batch, -1).
    """
    from polygrad.functions._im2col import require_array  # (it imports functions.array, which imports this module)

    for name, a in (("x", x), ("W", W), ("b", b)):
        if a is not None:  # (a list was "'list' object has no attribute 'shape'", naming no function)
            require_array("functions.linear", name, a)
    data = x._data if isinstance(x, Variable) else x
    if data.ndim is not None and data.ndim > 2:
        rest = data.shape[1:]
        known = None not in rest and all(n == n for n in rest)  # (dask writes nan for None)
        if data.shape[0] is not None and known:
            x = reshape(x, (data.shape[0], math.prod(rest)))  # (-1 is no size for an empty batch: 0 / 0)
        elif data.shape[0] is not None:
            x = reshape(x, (data.shape[0], -1))
        elif known:
            x = reshape(x, (-1, math.prod(rest)))  # the batch size unknown (a symbolic input)
        else:
            raise ValueError(f"polygrad.functions.linear: x of shape {tuple(data.shape)} is flattened to (batch, -1), "
                             f"which needs its size past the batch or the batch size known")
        data = x._data
    _check_linear(x, W, b)
    if data.ndim == 2 or data.ndim is None:  # None: a symbolic input of unknown rank
        return linear_op(x, W, b)  # one node; W's gradient in W's own layout
    y = matmul(x, matrix_transpose(W))
    return y if b is None else y + b


def _check_linear(x: Any, W: Any, b: Any) -> None:
    """ValueError naming linear's argument whose shape does not fit ``W`` (out, in): without
    it a one-row ``W`` broadcast against a longer ``b`` gave a wrong shape silently. (Unknown
    ranks and dimensions, None, fit anything.)"""
    ws = (W._data if isinstance(W, Variable) else W).shape
    if ws is None:
        return
    if len(ws) != 2:
        raise ValueError(f"polygrad.functions.linear: expects W of shape (out, in), got {tuple(ws)}")
    xs = (x._data if isinstance(x, Variable) else x).shape
    if xs and xs[-1] != ws[1] and xs[-1] is not None and ws[1] is not None:
        raise ValueError(f"polygrad.functions.linear: x of shape {tuple(xs)} has {xs[-1]} features, W of shape "
                         f"{tuple(ws)} takes {ws[1]}")
    if b is not None:
        bs = (b._data if isinstance(b, Variable) else b).shape
        if bs is not None and (len(bs) != 1 or (bs[0] != ws[0] and bs[0] is not None and ws[0] is not None)):
            raise ValueError(f"polygrad.functions.linear: expects b of shape ({ws[0]},) for W of shape {tuple(ws)}, "
                             f"got {tuple(bs)}")


# ---------------------------------------------------------------------------
# Checks at the door: arguments are checked once per call, where they enter, from
# their metadata (dtype, shape), which never forces a lazy array. Label values are
# checked by the label rows of polygrad.ops.nn (see there for lazy backends).
# ---------------------------------------------------------------------------
_KINDS = ("bool", "integral", "real floating", "complex floating")


def dtype_kind(a: Any) -> str | None:
    """The Array API kind of ``a``'s dtype ("bool", "integral", "real floating",
    "complex floating"), or None when ``a`` is not an array or Variable."""
    d = _data(a)
    if not is_array(d):
        return None
    dtype = d.dtype
    kind = _core_dtype_kind(dtype, backend_of_type(type(d)))  # cached per dtype
    if kind == "unknown":  # a symbolic array: no namespace, a dtype name
        name = str(dtype)
        return ("bool" if name == "bool" else "integral" if "int" in name else
                "complex floating" if name.startswith("complex") else "real floating" if name.startswith("float") else None)
    return kind if kind in _KINDS else None


def check_option(fname: str, arg: str, value: Any, allowed: tuple) -> None:
    """ValueError naming the function and argument when ``value`` is not one of ``allowed``."""
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(
            f"polygrad.functions.{fname}: {arg} must be one of {', '.join(map(repr, allowed))}, got {value!r}"
        )


def check_flag(fname: str, arg: str, value: Any) -> bool:
    """``value``, a bool (Python's, or a 0-d boolean array such as NumPy's ``True_``), as a Python
    bool; else a TypeError naming the function and argument (``normalize="no"``, a slip for
    ``reduce="no"``, was taken as True)."""
    if isinstance(value, bool):
        return value
    data = _data(value)
    if is_array(data) and data.ndim == 0 and backend_of_type(type(data)).xp.isdtype(data.dtype, "bool"):
        return bool(data)
    raise TypeError(f"polygrad.functions.{fname}: {arg} must be a bool, got {value!r}")


def check_labels(fname: str, arg: str, t: Any, kinds: tuple = ("integral",)) -> str:
    """The dtype kind of labels ``t``, which must be an array (or Variable) of one of ``kinds``:
    else a TypeError (not an array) or ValueError (another dtype) naming the function and argument."""
    d = _data(t)
    kind = dtype_kind(d)
    if kind in kinds:
        return kind
    want = " or ".join({"integral": "integers", "real floating": "floating-point numbers"}.get(k, k) for k in kinds)
    if kind is None:
        raise TypeError(f"polygrad.functions.{fname}: {arg} must be an array of {want}, got a {type(t).__name__}")
    raise ValueError(f"polygrad.functions.{fname}: {arg} must be an array of {want}, got dtype {d.dtype}")


def check_ignore_label(fname: str, ignore_label: Any, t: Any = None) -> Any:
    """``ignore_label``, an integer (Python's or NumPy's, not a bool) as a Python int, or None (else
    a TypeError naming ``fname``); None where the integer
    dtype of labels ``t`` cannot hold it, as no label can equal it (the default -1 for uint8 labels,
    read from images: the comparison with it, which the standard does not specify, raised
    OverflowError on array_api_strict)."""
    if ignore_label is not None and (isinstance(ignore_label, bool) or not isinstance(ignore_label, numbers.Integral)):
        raise TypeError(f"polygrad.functions.{fname}: ignore_label must be an int or None, got {ignore_label!r}")
    ignore_label = None if ignore_label is None else operator.index(ignore_label)  # (NumPy's -1 was refused)
    return ignore_label if ignore_label is None or t is None or _can_hold(t, ignore_label) else None


def _can_hold(t: Any, value: int) -> bool:
    """Whether labels ``t`` (an array or Variable) can hold ``value`` (see :func:`~polygrad.ops._dtypes.holds`);
    a symbolic array's dtype is a name, the same dtype's on every namespace: it is asked of the current backend."""
    d = _data(t)
    if d.dtype is None:
        return True
    if isinstance(d.dtype, str):
        xp = get_backend().xp
        return holds(xp, dtype_named(xp, d.dtype, "polygrad.functions"), value)
    return holds(backend_of_type(type(d)).xp, d.dtype, value)


def _shape(a: Any) -> tuple | None:
    """The shape of an array or Variable (None entries for unknown dimensions), or None if the rank is unknown."""
    shape = getattr(_data(a), "shape", None)
    return None if shape is None else tuple(shape)


def _same(s1: tuple | None, s2: tuple | None) -> bool:
    """Whether two shapes can be equal: unknown ranks and dimensions (None) match anything, a lazy
    backend's size not computed yet (dask's NaN, after a boolean mask) only another one (see
    :func:`polygrad.core.variable._same_shape`; NaN == NaN is False: every loss refused x and t
    of shape (nan, 3))."""
    return s1 is None or s2 is None or _same_shape(s1, s2, lazy="alike")


def _known(n: Any) -> bool:
    """Whether the size ``n`` is known: not None (symbolic) and not NaN (dask's, not computed yet)."""
    return n is not None and n == n


def check_same_shape(fname: str, a: Any, b: Any, names: str = "x and t") -> None:
    """ValueError naming the function when ``a`` and ``b`` (arrays, Variables or scalars) differ in shape."""
    s1, s2 = _shape(a), _shape(b)
    if not _same(s1, s2):
        first, second = names.split(" and ")
        raise ValueError(
            f"polygrad.functions.{fname}: {first} and {second} must have the same shape, got {first} {s1} and {second} {s2}"
        )


def mean_squared_error(x0, x1):
    """Mean of the squared differences of ``x0`` and ``x1``, which must have the same shape
    (as in Chainer: a (4, 1) prediction against (4,) targets would broadcast to 16 pairs)."""
    check_same_shape("mean_squared_error", x0, x1, "x0 and x1")
    d, back = _widened(as_variable(x0) - x1)  # squared in float32 for float16: a difference of 300 gave inf
    out = mean(d * d)
    return out if back is None else astype(out, back)


def softmax_cross_entropy(x, t, normalize=True, ignore_label=-1, reduce="mean"):
    """Cross entropy between softmax(x) over axis 1 and integer labels ``t``.

    ``x`` has shape (N, C) and ``t`` (N,), or, a class per position as in
    Chainer, ``x`` (N, C, d1, ...) and ``t`` (N, d1, ...); each label is in
    ``[0, C)`` or equal to ``ignore_label`` (None: no label is ignored), and
    contributes nothing then. With ``reduce="mean"`` the loss is averaged over
    non-ignored labels (``normalize=True``) or summed and divided by the batch
    size N; ``reduce="no"`` returns the losses in t's shape. Built from rows of
    the op table (the usual case, mean and normalized, is ``log_softmax`` and the
    row ``nll``), so it works on lazy and symbolic inputs too.

    :raises TypeError: ``t`` is not an array, ``ignore_label`` not an integer, or
        ``normalize`` not a bool.
    :raises ValueError: ``t`` not of an integer dtype, an unknown ``reduce``,
        shapes that do not match, or a label outside ``[0, C)`` other than
        ``ignore_label`` (values are checked on eager backends, also at each call
        of a compiled function; on lazy ones where the loss is computed, see
        :mod:`polygrad.ops.nn`).
    """
    fname = "softmax_cross_entropy"
    check_option(fname, "reduce", reduce, ("mean", "no"))
    normalize = check_flag(fname, "normalize", normalize)
    check_labels(fname, "t", t)
    ignore_label = check_ignore_label(fname, ignore_label, t)
    xs, ts = _shape(x), _shape(t)
    if xs is not None and ts is not None and (len(xs) < 2 or len(ts) != len(xs) - 1 or not _same(xs[:1] + xs[2:], ts)):
        raise ValueError(f"polygrad.functions.{fname}: expects x of shape (N, C, ...) and t of shape (N, ...), "
                         f"got x {xs} and t {ts}")
    if xs is not None and len(xs) > 2:
        return _per_position(x, t, xs, ts, normalize, ignore_label, reduce)
    mask = label_mask(x, t, ignore_label)
    logp = log_softmax(x, axis=1)
    if reduce == "mean" and normalize:  # the usual case: two nodes
        return nll(logp, mask, valid_count(x, t, ignore_label))
    picked = where(mask, logp, 0.0)
    # 0 - sum, not -sum: an ignored row's loss is 0.0, not -0.0 (as in Chainer)
    if reduce == "no":
        return 0.0 - sum(picked, axis=1)
    return 0.0 - _per_batch(picked, x)  # divided by N, 0 for an empty batch (a mean of none was NaN)


def _per_position(x: Any, t: Any, xs: tuple, ts: tuple, normalize: bool, ignore_label: Any, reduce: str) -> Variable:
    """softmax_cross_entropy of (N, C, d1, ...) logits: the positions as rows of (N d1 ..., C).
    The batch size N may be unknown (a symbolic input); C and d1, ... are needed."""
    if not all(_known(n) for n in xs[1:] + ts[1:]):
        raise ValueError(f"polygrad.functions.softmax_cross_entropy: x of more than two dimensions needs known "
                         f"sizes past the batch, got x {xs} and t {ts}")
    rows = reshape(moveaxis(x, 1, -1), (-1, xs[1]))
    labels = reshape(t, (-1,))
    if reduce == "mean" and normalize:
        return softmax_cross_entropy(rows, labels, True, ignore_label)
    losses = softmax_cross_entropy(rows, labels, normalize, ignore_label, "no")
    if reduce == "no":
        return reshape(losses, ts if _known(ts[0]) else (-1,) + ts[1:])
    return _per_batch(losses, x)  # the sum over the N d1 ... positions, divided by N (0 where there are none)


def sigmoid_cross_entropy(x, t, normalize=True, reduce="mean"):
    """Cross entropy between ``sigmoid(x)`` and labels ``t`` of x's shape.

    Per element ``softplus(-x)`` where ``t`` is 1 and ``softplus(x)`` where it is 0
    (``t softplus(-x) + (1 - t) softplus(x)`` for soft labels): ``softplus(x) - x t``
    with neither overflow nor cancellation (that form was 0 for a float32 logit of 15
    labelled 1, where the loss is 3e-7, and its gradient 0 from 17). ``t`` holds
    either integer labels 0 or 1, where -1 marks an ignored element (as in
    Chainer), or floating-point probabilities in [0, 1] ("soft" labels, as
    PyTorch's ``binary_cross_entropy_with_logits``; none is ignored), used in
    x's dtype. ``reduce="mean"`` sums and divides by the number of
    non-ignored labels (``normalize=True``) or by the batch size ``x.shape[0]``
    (``normalize=False``); ``reduce="no"`` returns the per-element loss (0
    where ignored).

    :raises TypeError: ``t`` is not an array, or ``normalize`` not a bool.
    :raises ValueError: ``t`` neither integer nor floating-point, an unknown
        ``reduce``, shapes that differ, or label values other than those above
        (checked on eager backends as the function is called, at each call of a
        compiled function, and on lazy backends where the loss is computed).
    """
    fname = "sigmoid_cross_entropy"
    check_option(fname, "reduce", reduce, ("mean", "no"))
    normalize = check_flag(fname, "normalize", normalize)
    kind = check_labels(fname, "t", t, ("integral", "real floating"))
    check_same_shape(fname, x, t)
    x = as_variable(x)
    if kind == "integral":
        t = binary_labels(t)
        loss = where(t >= 0, softplus(where(t == 1, -x, x)), 0.0)  # (t is 0, 1 or -1: uint8 holds no -1)
    else:
        t = probabilities(t)
        dtype = _data(x).dtype
        t = t if _data(t).dtype == dtype else astype(t, dtype)
        loss = t * softplus(-x) + (1 - t) * softplus(x)
    if reduce == "no":
        return loss
    if normalize:
        return _total(loss, valid_count(x, t, check_ignore_label(fname, -1, t)))
    return _per_batch(loss, x)


def huber_loss(x, t, delta, reduce="sum_along_second_axis"):
    """Huber loss of ``d = x - t``: ``d^2 / 2`` where ``|d| <= delta``, else ``delta (|d| - delta / 2)``.

    ``x`` and ``t`` have the same shape and ``delta`` is positive.
    ``reduce="sum_along_second_axis"`` (Chainer's default) sums over axis 1;
    ``reduce="no"`` returns the element-wise loss.
    """
    fname = "huber_loss"
    check_option(fname, "reduce", reduce, ("sum_along_second_axis", "no"))
    check_same_shape(fname, x, t)
    xs = _shape(x)
    if reduce == "sum_along_second_axis" and xs is not None and len(xs) < 2:  # (numpy's AxisError named sum)
        raise ValueError(f"polygrad.functions.{fname}: reduce='sum_along_second_axis' sums over axis 1, which x of "
                         f"shape {xs} has not; give x of shape (N, D, ...) or reduce='no'")
    delta = hyperparameter(fname, "delta", delta)
    if not delta > 0:
        raise ValueError(f"polygrad.functions.{fname}: delta must be positive, got {delta!r}")
    d, back = _widened(as_variable(x) - t)  # in float32 for float16: d = 300 gave inf, where 45000 fits
    a = abs(d)
    loss = where(a <= delta, 0.5 * (d * d), delta * (a - 0.5 * delta))
    loss = sum(loss, axis=1) if reduce == "sum_along_second_axis" else loss
    return loss if back is None else astype(loss, back)


# ---------------------------------------------------------------------------
# Identity, as a Function subclass (the seed's example)
# ---------------------------------------------------------------------------
class Identity(Function):
    """Identity function: returns its inputs; gradients pass through unchanged."""

    def forward(self, inputs: tuple) -> tuple:
        self.retain_inputs(())
        return tuple(inputs)

    def backward(self, inputs: tuple, grad_outputs: tuple) -> tuple:
        return tuple(grad_outputs)

    def _backward(self, grad_outputs: tuple, create_graph: bool) -> tuple:
        if create_graph:  # the gradients pass as they are, graph included: differentiable to any order
            return tuple(grad_outputs)
        return super()._backward(grad_outputs, create_graph)


def identity(*inputs):
    """Apply :class:`Identity`: one Variable for one input, a tuple otherwise."""
    return Identity()(*inputs)

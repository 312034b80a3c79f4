"""Rows for neural-network functions that are worth a kernel of their own: activations,
the softmax family, ``linear``, the labels of the losses, and dropout's mask.

The functions of :mod:`polygrad.functions` (``F.relu``, ``F.linear``, ...) are these
or compositions of ops. ``linear`` is one row rather than ``matmul(x, W.T) + b``:
backward then makes ``W``'s gradient directly in W's own layout (``g.T @ x``), not as
a transposed view, and the graph has one node instead of three.
"""

from __future__ import annotations

import builtins
import math
import numbers
from typing import Any

from polygrad.core.dispatch import backend_of_type, checked_lazily, is_array, readable
from polygrad.core.op import Op, def_nograd, defvjp
from polygrad.core.primitive import apply
from polygrad.core.variable import Variable
from polygrad.ops._dtypes import drawn_in, holds, positions, widened, widened_of
from polygrad.ops._export import names, public
from polygrad.ops.elementwise import _conj, _is_complex


# ---------------------------------------------------------------------------
# Activations
# ---------------------------------------------------------------------------
RELU = defvjp(Op("relu", lambda xp, x: xp.maximum(x, xp.zeros((), dtype=x.dtype)), elementwise=True),  # one pass; NaN stays NaN
              lambda o, g, ans, x: g * o.astype(ans > 0, g.dtype), saves="ans")  # relu'(0) = 0; a multiply, not a branchy where


@public(standard=False)
def relu(x):
    """max(x, 0); the gradient at 0 is 0."""
    return apply(RELU, (x,))


def _sigmoid_kernel(xp: Any, x: Any) -> Any:
    """1 / (1 + exp(-x)) with full relative precision in both tails: ``e = exp(-|x|)`` never
    overflows, ``r = 1 / (1 + e)`` is sigmoid(|x|), and for x < 0 sigmoid(x) = e r. (The form
    0.5 tanh(x / 2) + 0.5 cancels for negative x: sigmoid(-20) was 0 in float32, where 2.06e-9
    is right, so log(sigmoid(x)) was -inf with a NaN gradient.) Complex x has no sign to split
    on: the tanh form, holomorphic, is kept for it."""
    if xp.isdtype(x.dtype, "complex floating"):
        return 0.5 * xp.tanh(0.5 * x) + 0.5
    e = xp.exp(-xp.abs(x))
    r = 1.0 / (1.0 + e)
    return xp.where(x >= 0, r, e * r)


def _sigmoid_vjp(o: Any, g: Any, ans: Any, x: Any) -> Any:
    """sigmoid'(x) = ans (1 - ans), from the output, as Chainer and PyTorch keep it (an input written
    in place after sigmoid is no concern of its backward, and a layer keeps one array, not two).
    Where ans rounds to 1 (float32, x > 16) it is 0 for a true value below 1e-7. Complex x:
    its conj, as tanh's rule (check_grads failed without it)."""
    d = ans * (1 - ans)
    return g * (_conj(o, d) if _is_complex(ans) else d)


SIGMOID = defvjp(Op("sigmoid", _sigmoid_kernel, elementwise=True), _sigmoid_vjp, saves="ans")


@public(standard=False)
def sigmoid(x):
    """1 / (1 + exp(-x)), precise in both tails (see the kernel)."""
    return apply(SIGMOID, (x,))


# ---------------------------------------------------------------------------
# Scalar hyperparameters, checked where they enter (here for softplus's beta; polygrad.functions,
# the links and the optimizers take theirs through the same check)
# ---------------------------------------------------------------------------
def hyperparameter(fname: str, arg: str, value: Any, owner: str = "polygrad.functions", *,
                   allow_bool: bool = False) -> int | float:
    """``value``, a real-number hyperparameter (a slope, an ``eps``, a bound), as a
    Python int or float.

    A NumPy scalar (``np.float64(0.2)``, an item of ``np.linspace``) is strongly
    typed: folded into the arithmetic as it is, it would make a float32 result
    float64. A Python number takes the dtype of the array it meets, so the
    result keeps the input's dtype, as in Chainer and PyTorch.

    :param allow_bool: a bool (Python's, or a 0-d boolean array such as NumPy's
        ``True_``) is the number it is (an optimizer's ``weight_decay=False``).
    :raises TypeError: naming ``owner.fname`` and ``arg``, for anything else: a
        bool (unless allowed), a complex number, a string, an array or a Variable.
    """
    if type(value) is float or type(value) is int:
        return value
    if not isinstance(value, bool):
        if isinstance(value, numbers.Integral):
            return int(value)
        if isinstance(value, numbers.Real):
            return float(value)
    data = value._data if isinstance(value, Variable) else value
    boolean = isinstance(value, bool) or (
        is_array(data) and data.ndim == 0 and backend_of_type(type(data)).xp.isdtype(data.dtype, "bool"))
    if boolean and allow_bool:
        return int(bool(value))
    if boolean:
        got = f"the bool {bool(value)}"
    elif is_array(data):
        got = f"an array of shape {tuple(data.shape)} (pass a Python number)"
    else:
        got = repr(value)
    raise TypeError(f"{owner}.{fname}: {arg} must be a real number (a Python or NumPy scalar), got {got}")


def _softplus_kernel(xp: Any, x: Any, beta: float = 1.0) -> Any:
    """log(1 + exp(beta x)) / beta, without overflow: max(bx, 0) + log1p(exp(-|bx|))."""
    bx = x * beta if beta != 1.0 else x
    y = xp.maximum(bx, xp.zeros_like(bx)) + xp.log1p(xp.exp(-xp.abs(bx)))
    return y / beta if beta != 1.0 else y


SOFTPLUS = defvjp(Op("softplus", _softplus_kernel, elementwise=True),  # d/dx = sigmoid(beta x)
                  lambda o, g, ans, x, beta=1.0: g * o.sigmoid(x * beta if beta != 1.0 else x), saves="x")


@public(standard=False)
def softplus(x, beta=1.0):
    """``log(1 + exp(beta x)) / beta``, computed without overflow; its gradient is ``sigmoid(beta x)``.

    :raises TypeError: ``beta`` is not a real number (see :func:`hyperparameter`).
    :raises ValueError: ``beta`` is 0 or not finite (0 gave inf with a gradient of 0.5; Chainer
        raises ZeroDivisionError).
    """
    beta = float(hyperparameter("softplus", "beta", beta))
    if beta == 0.0 or not math.isfinite(beta):
        raise ValueError(f"polygrad.functions.softplus: beta must be a finite nonzero number, got {beta!r}")
    return apply(SOFTPLUS, (x,), {"beta": beta} if beta != 1.0 else None)


# erf is not in the standard. W. J. Cody's rational Chebyshev approximations ("Rational Chebyshev
# approximations for the error function", Math. Comp. 23, 1969; his SPECFUN CALERF), near-minimax to
# 18 digits, so erf and erfc are good to a few ulps of float64, and of float32 (a float16 or bfloat16
# input is taken in float32 and given back, see ops._dtypes.widened). Three ranges of |x|:
#   |x| <= 0.46875:  erf(x) = x A(x^2) / B(x^2)
#   0.46875 to 4:    erfc(|x|) = exp(-x^2) C(|x|) / D(|x|)
#   past 4:          erfc(|x|) = exp(-x^2) (1/sqrt(pi) - z P(z) / Q(z)) / |x|,  z = 1 / x^2
# exp(-x^2) is exp(-s^2) exp(-(|x| - s)(|x| + s)) with s = |x| rounded down to 1/16, s^2 exact:
# exp(-x*x) would carry x*x's rounding, 2 x^2 ulps (36 at x = 3). Each polynomial's coefficients are
# listed from the highest power; the denominators' leading coefficient is 1. (Numerical Recipes'
# erfcc fit, used before, is only good to 1.2e-7 in every dtype: 10^8 float64 ulps.)
# The vjps are the exact derivatives, +-2/sqrt(pi) exp(-x^2).
_ERF_A = (1.85777706184603153e-1, 3.16112374387056560e00, 1.13864154151050156e02, 3.77485237685302021e02,
          3.20937758913846947e03)
_ERF_B = (1.0, 2.36012909523441209e01, 2.44024637934444173e02, 1.28261652607737228e03, 2.84423683343917062e03)
_ERFC_C = (2.15311535474403846e-8, 5.64188496988670089e-1, 8.88314979438837594e00, 6.61191906371416295e01,
           2.98635138197400131e02, 8.81952221241769090e02, 1.71204761263407058e03, 2.05107837782607147e03,
           1.23033935479799725e03)
_ERFC_D = (1.0, 1.57449261107098347e01, 1.17693950891312499e02, 5.37181101862009858e02, 1.62138957456669019e03,
           3.29079923573345963e03, 4.36261909014324716e03, 3.43936767414372164e03, 1.23033935480374942e03)
_ERFC_P = (1.63153871373020978e-2, 3.05326634961232344e-1, 3.60344899949804439e-1, 1.25781726111229246e-1,
           1.60837851487422766e-2, 6.58749161529837803e-4)
_ERFC_Q = (1.0, 2.56852019228982242e00, 1.87295284992346047e00, 5.27905102951428412e-1, 6.05183413124413191e-2,
           2.33520497626869185e-3)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _ratio(num: tuple, den: tuple, t: Any) -> Any:
    """``num(t) / den(t)`` by Horner's rule."""
    n, d = num[0], den[0]
    for c in num[1:]:
        n = n * t + c
    for c in den[1:]:
        d = d * t + c
    return n / d


def _erf_parts(xp: Any, x: Any) -> tuple[Any, Any, Any]:
    """``(small, erf_small, erfc_abs)``: where ``|x| <= 0.46875``, erf there (0 elsewhere), and erfc of
    ``|x|`` (precise relative to itself: no ``1 - erf``), each range computed where it is not used
    too, on values that keep it finite."""
    a = xp.abs(x)
    small = a <= 0.46875
    xs = xp.where(small, x, xp.zeros_like(x))
    erf_small = xs * _ratio(_ERF_A, _ERF_B, xs * xs)
    y = xp.minimum(xp.where(small, xp.ones_like(a), a), xp.full_like(a, 30.0))  # (erfc(30) is 0 in float64; NaN stays)
    near = y <= 4.0
    z = 1.0 / (y * y)
    r = xp.where(near, _ratio(_ERFC_C, _ERFC_D, y), (0.5641895835477563 - z * _ratio(_ERFC_P, _ERFC_Q, z)) / y)
    s = xp.trunc(y * 16.0) / 16.0
    return small, erf_small, xp.exp(-(s * s)) * xp.exp(-((y - s) * (y + s))) * r


def _in_float32_at_least(kernel: Any) -> Any:
    """``kernel`` taken in float32 for a narrower float (see :func:`~polygrad.ops._dtypes.widened`)."""
    def run(xp: Any, x: Any) -> Any:
        wide = widened(xp, x.dtype)
        return kernel(xp, x) if wide is None else xp.astype(kernel(xp, xp.astype(x, wide)), x.dtype)
    run.__name__, run.__doc__ = kernel.__name__, kernel.__doc__
    return run


@_in_float32_at_least
def _erf_kernel(xp: Any, x: Any) -> Any:
    small, erf_small, erfc_abs = _erf_parts(xp, x)
    return xp.where(small, erf_small, xp.sign(x) * ((0.5 - erfc_abs) + 0.5))


@_in_float32_at_least
def _erfc_kernel(xp: Any, x: Any) -> Any:
    small, erf_small, erfc_abs = _erf_parts(xp, x)
    return xp.where(small, (0.5 - erf_small) + 0.5, xp.where(x > 0, erfc_abs, 2.0 - erfc_abs))


ERF = defvjp(Op("erf", _erf_kernel, elementwise=True),
             lambda o, g, ans, x: g * (_TWO_OVER_SQRT_PI * o.exp(-(x * x))), saves="x")
ERFC = defvjp(Op("erfc", _erfc_kernel, elementwise=True),
              lambda o, g, ans, x: g * (-_TWO_OVER_SQRT_PI * o.exp(-(x * x))), saves="x")


@public(standard=False)
def erf(x):
    """The error function (to a few ulps, see ``_erf_parts``); its gradient is the exact ``2/sqrt(pi) exp(-x^2)``."""
    return apply(ERF, (x,))


@public(standard=False)
def erfc(x):
    """``1 - erf(x)``, without the cancellation for large x (to a few ulps relative, see
    ``_erf_parts``); its gradient is the exact ``-2/sqrt(pi) exp(-x^2)``."""
    return apply(ERFC, (x,))


# ---------------------------------------------------------------------------
# The softmax family (along ``axis``, default 1, the class axis, as in Chainer)
# ---------------------------------------------------------------------------
def _in_float32(kernel: Any) -> Any:
    """``kernel`` taken in float32 for a narrower float (see :func:`~polygrad.ops._dtypes.widened`)
    and given back in the input's dtype: a float16 sum of exp stalls at 2048 along an axis that
    is not the last (the log_softmax of 5,000 equal scores was -7.625, not -8.517) and is inf
    past 65504 (the softmax of 70,000 classes was 0, the loss inf)."""
    def run(xp: Any, x: Any, axis: int = -1) -> Any:
        wide = widened(xp, x.dtype)
        if wide is None:
            return kernel(xp, x, axis)
        return xp.astype(kernel(xp, xp.astype(x, wide), axis), x.dtype)

    return run


def _rule_in_float32(rule: Any) -> Any:
    """A softmax rule (``g`` and ``ans`` of x's dtype, summed along ``axis``), taken as
    :func:`_in_float32` takes the kernels."""
    def run(o: Any, g: Any, ans: Any, x: Any, axis: int = -1) -> Any:
        data = ans._data if isinstance(ans, Variable) else ans
        wide = widened_of(data)
        if wide is None:
            return rule(o, g, ans, x, axis)
        return o.astype(rule(o, o.astype(g, wide), o.astype(ans, wide), x, axis), data.dtype)

    return run


@_in_float32
def _log_softmax_kernel(xp: Any, x: Any, axis: int = -1) -> Any:
    """``x - logsumexp(x)``; a slice of all ``-inf`` (a fully masked position) gives ``-inf``,
    not ``-inf - -inf``: its NaN reached the gradient of an ignored row through ``exp(ans) * 0``
    (a row's guard: no pass over the elements)."""
    m = xp.max(x, axis=axis, keepdims=True)
    empty = m == -math.inf
    zero = xp.zeros_like(m)
    s = x - xp.where(empty, zero, m)
    return s - xp.where(empty, zero, xp.log(xp.sum(xp.exp(s), axis=axis, keepdims=True)))


@_in_float32
def _softmax_kernel(xp: Any, x: Any, axis: int = -1) -> Any:
    e = xp.exp(x - xp.max(x, axis=axis, keepdims=True))
    return e / xp.sum(e, axis=axis, keepdims=True)


LOG_SOFTMAX = defvjp(Op("log_softmax", _log_softmax_kernel), _rule_in_float32(
    lambda o, g, ans, x, axis=-1: g - o.exp(ans) * o.sum(g, axis=axis, keepdims=True)), saves="ans")


@public(standard=False)
def log_softmax(x, axis=1):
    """Log of the softmax along ``axis`` (default 1, the class axis, as in Chainer); a slice of
    all ``-inf`` (a fully masked position) gives ``-inf``, and so a zero gradient where it is ignored."""
    return apply(LOG_SOFTMAX, (x,), {"axis": axis})


SOFTMAX = defvjp(Op("softmax", _softmax_kernel), _rule_in_float32(
    lambda o, g, ans, x, axis=-1: ans * (g - o.sum(g * ans, axis=axis, keepdims=True))), saves="ans")


@public(standard=False)
def softmax(x, axis=1):
    return apply(SOFTMAX, (x,), {"axis": axis})


# ---------------------------------------------------------------------------
# linear: x @ W.T + b in one node
# ---------------------------------------------------------------------------
def _linear_kernel(xp: Any, x: Any, W: Any, b: Any = None) -> Any:
    y = xp.matmul(x, xp.matrix_transpose(W))
    return y if b is None else y + b


LINEAR = defvjp(
    Op("linear", _linear_kernel, shapes=True),
    lambda o, g, ans, x, W, b=None: o.matmul(g, W),
    lambda o, g, ans, x, W, b=None: o.matmul(o.matrix_transpose(g), x),
    lambda o, g, ans, x, W, b=None: o.sum(g, axis=0),
    saves=("y", "x", ""),
)


@public(standard=False)
def linear_op(x, W, b=None):
    """``x @ W.T + b`` for x of shape (N, in), W (out, in), b (out,)."""
    return apply(LINEAR, (x, W) if b is None else (x, W, b))


# ---------------------------------------------------------------------------
# Labels of the classification losses (no gradient)
#
# ``label_mask`` checks the label values where they enter, once per call (eagerly,
# and at every call of a compiled function, which replays the rows); the
# functions of polygrad.functions check other values with ``check_values`` as
# they are called. Reading values forces a lazy array, so on a lazy backend
# (dask) the check is attached to the array (``polygrad_check_lazily``) and runs
# on each chunk where the loss is computed; in debug mode (``pg.debug_mode()``,
# which computes values anyway), and on a lazy backend without that hook, the
# values are read and checked at once.
# ---------------------------------------------------------------------------
def _offending(xp: Any, t: Any, bad: Any, limit: int = 5, of: str = "values") -> str:
    """``"5, -2 (2 of 4 values)"``: the first distinct values of ``t`` where ``bad`` holds."""
    picked = t[bad]
    values = xp.unique_values(picked)
    py = int if xp.isdtype(t.dtype, "integral") else float
    shown = ", ".join(repr(py(values[i])) for i in range(builtins.min(int(values.shape[0]), limit)))
    more = ", ..." if values.shape[0] > limit else ""
    return f"{shown}{more} ({int(picked.shape[0])} of {math.prod(t.shape)} {of})"


def check_values(t: Any, is_bad: Any, rule: str, module: str = "polygrad.functions") -> Any:
    """Raise ``ValueError("<module>.<rule>, got <values>")`` where ``is_bad(xp, t)``
    holds anywhere. Returns the array to compute with: ``t``, checked now where its values
    may be read (see :func:`readable`); on a lazy backend outside debug mode, ``t`` with
    the check attached (:func:`checked_lazily`), so that computing anything from the
    result raises on a bad value."""
    v, xp = readable(t)
    if v is not None:
        _refuse_bad(v, xp, is_bad, rule, module)
        return t
    return checked_lazily(t, _RefuseBad(is_bad, rule, module))


class _RefuseBad:
    """:func:`_refuse_bad` of one computed chunk (a plain object: it travels to dask's workers)."""

    def __init__(self, is_bad: Any, rule: str, module: str) -> None:
        self.is_bad, self.rule, self.module = is_bad, rule, module

    def __call__(self, chunk: Any) -> None:
        _refuse_bad(chunk, backend_of_type(type(chunk)).xp, self.is_bad, self.rule, self.module, "values of a chunk")


def _refuse_bad(v: Any, xp: Any, is_bad: Any, rule: str, module: str = "polygrad.functions",
                of: str = "values") -> None:
    """:func:`check_values` on values already read (``of`` names what ``v`` holds)."""
    bad = is_bad(xp, v)
    if bool(xp.any(bad)):
        raise ValueError(f"{module}.{rule}, got {_offending(xp, v, bad, of=of)}")


class _NotAClass:
    """``is_bad`` of class labels: outside ``[0, n)`` and not ``ignore_label``."""

    def __init__(self, n: int, ignore_label: Any) -> None:
        self.n, self.ignore_label = n, ignore_label

    def __call__(self, xp: Any, v: Any) -> Any:
        bad = xp.logical_or(v < 0, v >= self.n)
        return bad if self.ignore_label is None else xp.logical_and(bad, v != self.ignore_label)


def check_class_labels(t: Any, n_classes: int, ignore_label: Any, where: str) -> tuple[bool, Any]:
    """Refuse values of ``t`` outside ``[0, n_classes)`` other than ``ignore_label``;
    ``where`` names the function and argument (``"embed_id: ids x"``). Returns
    ``(in_range, t)``: whether every value was read and lies in ``[0, n_classes)``, and
    the array to compute with (on a lazy backend outside debug mode, ``t`` with the check
    attached: see :func:`check_values`)."""
    ignored = "" if ignore_label is None else f" or equal ignore_label={ignore_label!r}"
    rule = f"{where} must be in [0, {n_classes}){ignored}"
    v, xp = readable(t)
    if v is None:
        return False, checked_lazily(t, _RefuseBad(_NotAClass(n_classes, ignore_label), rule, "polygrad.functions"))
    if math.prod(v.shape) == 0:
        return True, t
    if 0 <= int(xp.min(v)) and int(xp.max(v)) < n_classes:  # the usual case: two reductions, no temporaries
        return True, t
    _refuse_bad(v, xp, _NotAClass(n_classes, ignore_label), rule)  # v read once, above
    return False, t


def _every_row_hits(hit: Any, n: int) -> bool:
    """Whether each of the ``n`` rows of the boolean ``hit`` holds a True (values read only
    as :func:`readable` allows; False where they may not be read)."""
    v, xp = readable(hit)
    count = None if v is None else getattr(xp, "count_nonzero", None)  # standard 2023.12
    return count is not None and int(count(v)) == n


def _label_mask_kernel(xp: Any, x: Any, t: Any, ignore_label: Any = -1) -> Any:
    """(N, C) boolean mask: True at [i, t[i]] for labels not equal to ignore_label
    (labels checked to lie in [0, C) or equal ignore_label)."""
    if t.ndim != 1 or x.ndim != 2 or not _same_size(t.shape[0], x.shape[0]):
        raise ValueError(f"expects x of shape (N, C) and t of shape (N,), got x {tuple(x.shape)} and t {tuple(t.shape)}")
    n, c = x.shape
    classes = xp.reshape(positions(xp, c, t.dtype), (1, c))
    hit = t[:, None] == classes  # (not reshape: N may be a lazy backend's size not computed yet)
    # The usual case in one reduction and one read of the device: every label hits a class
    # (one outside [0, C) hits none). Otherwise the labels are checked one by one.
    in_range = _every_row_hits(hit, n)
    if not in_range:
        in_range, checked = check_class_labels(t, c, ignore_label, "softmax_cross_entropy: labels t")
        if checked is not t:  # a lazy backend: the mask is computed from the checked labels
            t = checked
            hit = t[:, None] == classes
    if ignore_label is None or (in_range and not 0 <= ignore_label < c):
        return hit  # no label equals ignore_label: the mask is the hits
    return xp.logical_and(hit, (t != ignore_label)[:, None])


def _valid_count_kernel(xp: Any, x: Any, t: Any, ignore_label: Any = -1) -> Any:
    """Number of labels not equal to ignore_label (at least 1), in x's dtype, or float32 for a
    narrower float (see :func:`~polygrad.ops._dtypes.widened`: a float16 count past 65504 was
    inf, the loss NaN and its gradient 0)."""
    dtype = widened(xp, x.dtype) or x.dtype
    size = math.prod(t.shape)
    if ignore_label is None and size == size:
        return xp.asarray(builtins.max(1, size), dtype=dtype)
    # (a size not computed yet, dask's NaN, is counted where the loss is: max(1, NaN) was 1)
    valid = xp.ones_like(t, dtype=dtype) if ignore_label is None else xp.astype(t != ignore_label, dtype)
    count = xp.sum(valid)
    return xp.maximum(count, xp.ones_like(count))


def _same_size(m: Any, n: Any) -> bool:
    """Whether two sizes of a kernel's arrays may be equal: a lazy backend's size not computed
    yet (dask's NaN) matches only another one, as :func:`polygrad.core.variable._same_shape`."""
    return m == n or (m != m and n != n)


def _batch_size_kernel(xp: Any, x: Any) -> Any:
    """``max(1, N)`` for ``x`` of shape (N, ...), in x's dtype (float32 for a narrower float),
    read as the kernel runs: at each call of a compiled function, whose batch size is unknown
    as it is traced. A lazy backend's N not computed yet (dask's NaN) is counted where the loss
    is computed, from a column of ``x``."""
    dtype = widened(xp, x.dtype) or x.dtype
    n = x.shape[0] if x.ndim else 1
    if n == n:
        return xp.asarray(builtins.max(1, n), dtype=dtype)
    rest = math.prod(x.shape[1:])
    if rest != rest:
        raise ValueError(f"polygrad.functions: normalize=False divides by the batch size, and x of shape "
                         f"{tuple(x.shape)} has sizes past the batch that are not computed yet either; compute "
                         f"them first (x.compute_chunk_sizes())")
    if rest == 0:  # no elements: the loss is 0, whatever it is divided by
        return xp.asarray(1, dtype=dtype)
    count = xp.sum(xp.ones_like(x[(slice(None),) + (0,) * (x.ndim - 1)], dtype=dtype))
    return xp.maximum(count, xp.ones_like(count))


LABEL_MASK = def_nograd(Op("softmax_cross_entropy_label_mask", _label_mask_kernel))


@public(standard=False)
def label_mask(x, t, ignore_label=-1):
    """For scores ``x`` (N, C) and labels ``t`` (N,): True at ``[i, t[i]]`` where ``t[i] != ignore_label``.

    Raises ValueError for a label outside ``[0, C)`` other than ``ignore_label``.
    """
    return apply(LABEL_MASK, (x, t), {"ignore_label": ignore_label})


VALID_COUNT = def_nograd(Op("softmax_cross_entropy_valid_count", _valid_count_kernel))
BATCH_SIZE = def_nograd(Op("loss_batch_size", _batch_size_kernel))


@public(standard=False)
def valid_count(x, t, ignore_label=-1):
    """How many labels ``t`` are not ``ignore_label`` (at least 1), in ``x``'s dtype (float32 for a narrower float)."""
    return apply(VALID_COUNT, (x, t), {"ignore_label": ignore_label})


@public(standard=False)
def batch_size(x):
    """``max(1, N)`` for ``x`` of shape (N, ...), in ``x``'s dtype (float32 for a narrower float),
    taken as ``x`` is computed: what a loss with ``normalize=False`` divides by."""
    return apply(BATCH_SIZE, (x,))


def _embed_ids_kernel(xp: Any, ids: Any, n_rows: int, ignore_label: Any = None) -> Any:
    """The rows :func:`polygrad.functions.embed_id` reads: ``ids`` checked to lie in ``[0, n_rows)``
    or equal ``ignore_label``, which becomes row 0 (embed_id zeroes it). A new array: a compiled
    function may write into what a kernel returns, never into its caller's ids."""
    _, ids = check_class_labels(ids, n_rows, ignore_label, "embed_id: ids x")
    if ignore_label is None:
        return xp.asarray(ids, copy=True)
    return xp.where(ids == ignore_label, xp.zeros_like(ids), ids)


EMBED_IDS = def_nograd(Op("embed_id_ids", _embed_ids_kernel))


@public(standard=False)
def embed_ids(ids, n_rows, ignore_label=None):
    """``ids`` checked as rows of a table of ``n_rows`` (each in ``[0, n_rows)`` or equal to
    ``ignore_label``, which becomes 0): a row of the op table, so a compiled function checks the
    ids of every call. Raises ValueError naming the ids outside."""
    return apply(EMBED_IDS, (ids,), {"n_rows": n_rows, "ignore_label": ignore_label})


def _not_binary(xp: Any, v: Any) -> Any:
    bad = xp.logical_and(v != 0, v != 1)
    return xp.logical_and(bad, v != -1) if holds(xp, v.dtype, -1) else bad  # (no -1 in uint8 labels)


def _not_probability(xp: Any, v: Any) -> Any:
    return xp.logical_not(xp.logical_and(v >= 0, v <= 1))  # NaN too


def _checked_copy(xp: Any, t: Any, is_bad: Any, rule: str) -> Any:
    """``t`` checked (:func:`check_values`), as a new array: a compiled function may write into
    what a kernel returns, never into its caller's labels."""
    checked = check_values(t, is_bad, rule)
    return xp.asarray(t, copy=True) if checked is t else checked


def _binary_labels_kernel(xp: Any, t: Any) -> Any:
    return _checked_copy(xp, t, _not_binary, "sigmoid_cross_entropy: integer labels t must be 0, 1 or -1 "
                                             "(ignored; probabilities go in a floating-point t)")


def _probabilities_kernel(xp: Any, t: Any) -> Any:
    return _checked_copy(xp, t, _not_probability, "sigmoid_cross_entropy: floating-point labels t must be "
                                                  "probabilities in [0, 1]")


# sigmoid_cross_entropy's labels, checked where they enter: rows, so that a compiled function
# checks them at every call; the probabilities keep their gradient (soft labels may need one).
BINARY_LABELS = def_nograd(Op("sigmoid_cross_entropy_labels", _binary_labels_kernel))
PROBABILITIES = defvjp(Op("sigmoid_cross_entropy_probabilities", _probabilities_kernel), lambda o, g, ans, t: g)


@public(standard=False)
def binary_labels(t):
    """``t`` checked as sigmoid_cross_entropy's integer labels (0, 1, or -1: ignored)."""
    return apply(BINARY_LABELS, (t,))


@public(standard=False)
def probabilities(t):
    """``t`` checked as probabilities in [0, 1] (sigmoid_cross_entropy's soft labels), differentiable."""
    return apply(PROBABILITIES, (t,))


def _nll_kernel(xp: Any, logp: Any, mask: Any, count: Any) -> Any:
    """``-sum(logp where mask) / count``: the mean negative log-likelihood of the picked log-probabilities
    (summed in float32 for a narrower float, see :func:`~polygrad.ops._dtypes.widened`: a float16
    sum past 65504 was inf). 0 - sum, not -sum: with every label ignored the loss is 0.0, not -0.0
    (as in Chainer, and as functions.nn's other reductions)."""
    picked = xp.where(mask, logp, xp.zeros_like(logp))
    wide = widened(xp, logp.dtype)
    if wide is not None:
        return xp.astype((0.0 - xp.sum(xp.astype(picked, wide))) / count, logp.dtype)
    return (0.0 - xp.sum(picked)) / count


def _nll_vjp(o: Any, g: Any, ans: Any, logp: Any, mask: Any, count: Any) -> Any:
    # The rules of divide, negative, sum and where composed, in their order: the same bits.
    scale = -(g / count)
    if getattr(scale, "dtype", logp.dtype) != logp.dtype:  # a float32 count of a narrower float
        scale = o.astype(scale, logp.dtype)
    return o.astype(mask, logp.dtype) * scale


# softmax_cross_entropy's usual case is log_softmax (which keeps its output for backward) and
# this row: 4 applications and 2 backward nodes, the same values as the 7 composed functions.
NLL = defvjp(Op("softmax_cross_entropy_nll", _nll_kernel), _nll_vjp, None, None, saves="xyz")


@public(standard=False)
def nll(logp, mask, count):
    """``-sum(logp[mask]) / count`` for log-probabilities ``logp`` (N, C) (see :func:`log_softmax`),
    a boolean ``mask`` of its shape (see :func:`label_mask`) and ``count`` (see :func:`valid_count`)."""
    return apply(NLL, (logp, mask, count))


def _masked_nll_kernel(xp: Any, x: Any, mask: Any, count: Any) -> Any:
    """:func:`nll` of ``log_softmax(x, axis=1)`` in one node."""
    return _nll_kernel(xp, _log_softmax_kernel(xp, x, 1), mask, count)


def _masked_nll_vjp(o: Any, g: Any, ans: Any, x: Any, mask: Any, count: Any) -> Any:
    # The rules of nll and log_softmax in their order, log_softmax's output computed again.
    logp = o.log_softmax(x, axis=1)
    return LOG_SOFTMAX.vjps[0](o, _nll_vjp(o, g, None, logp, mask, count), logp, x, axis=1)


MASKED_NLL = defvjp(Op("softmax_cross_entropy_masked_nll", _masked_nll_kernel), _masked_nll_vjp, None, None,
                    saves="xyz")


@public(standard=False)
def masked_nll(x, mask, count):
    """``-sum(log_softmax(x, axis=1)[mask]) / count`` for scores ``x`` (N, C), a boolean ``mask``
    of x's shape (see :func:`label_mask`) and ``count`` (see :func:`valid_count`): :func:`nll` and
    :func:`log_softmax` in one node, which computes ``log_softmax(x)`` again in backward."""
    return apply(MASKED_NLL, (x, mask, count))


# ---------------------------------------------------------------------------
# Random draws (deterministic=False: a compiled function draws at every call)
# ---------------------------------------------------------------------------
def _dropout_mask_kernel(xp: Any, x: Any, ratio: float = 0.5) -> Any:
    """``1 / (1 - ratio)`` where a uniform draw is at least ``ratio``, else 0, in x's shape and dtype."""
    if not xp.isdtype(x.dtype, "real floating"):  # (a uniform of an integer dtype is 0: every element was dropped)
        raise TypeError(f"polygrad.functions.dropout: x must have a real floating dtype, got {x.dtype} "
                        f"(shape {tuple(x.shape)}); cast it first, e.g. x.astype(...)")
    u = backend_of_type(type(x)).rng().uniform(tuple(x.shape), dtype=drawn_in(xp, x.dtype), low=0.0, high=1.0)
    keep = u >= ratio
    del u  # (the draws go before the mask is made: at most the draws and the mask, or the mask and it, are alive)
    scale = xp.asarray(1.0 / (1.0 - ratio), dtype=x.dtype)
    return xp.where(keep, scale, xp.zeros_like(scale))


DROPOUT_MASK = def_nograd(Op("dropout_mask", _dropout_mask_kernel, deterministic=False))


@public(standard=False)
def dropout_mask(x, ratio=0.5):
    """Dropout's mask for ``x``: ``1 / (1 - ratio)`` with probability ``1 - ratio``, else 0 (a new draw each call)."""
    return apply(DROPOUT_MASK, (x,), {"ratio": float(ratio)})


__all__ = names(__name__)  # the public functions declared above

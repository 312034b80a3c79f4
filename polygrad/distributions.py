"""Small probability distributions: ``sample()`` with the backend's random
numbers and a differentiable ``log_prob(value)``.

They back the stochastic functions (``F.bernoulli``, ``F.categorical``,
``F.normal``) whose samples take ``reinforce(reward)``, and they are the modern
way to write the same estimator by hand::

    d = pg.distributions.Categorical(probs)
    a = d.sample()
    loss = -pg.sum(reward * d.log_prob(a))   # same gradient as a.reinforce(reward)
"""

from __future__ import annotations

import math
import operator
import warnings
from types import SimpleNamespace
from typing import Any

from polygrad.core.dispatch import backend_of_type, has_namespace, is_array
from polygrad.core.integers import as_int
from polygrad.core.variable import Variable
from polygrad.ops._dtypes import default_dtypes, drawn_in, index_dtype, positions, widest_floating
from polygrad.ops.elementwise import log, log1p, subtract, where
from polygrad.ops.nn import check_values
from polygrad.ops.statistical import sum

__all__ = ["Distribution", "Bernoulli", "Categorical", "Normal"]


def _data(x: Any) -> Any:
    return x._data if isinstance(x, Variable) else x


def _backend(*xs: Any) -> Any:
    for x in xs:
        d = _data(x)
        if type(d) not in (bool, int, float, complex):
            return backend_of_type(type(d))
    from polygrad.backends import get_backend

    return get_backend()


class Distribution:
    """Base class: parameters are Variables, arrays or Python numbers (see :func:`_parameter`).

    ``validate_args`` (True, as in ``torch.distributions``): ``log_prob`` refuses a
    value outside the support, and ``sample`` and ``log_prob`` parameters outside their
    range, with a ValueError naming the values (read where they may be, see
    :func:`polygrad.core.dispatch.readable`; on a lazy backend the check runs as what is
    computed from them is). The stochastic functions' ``reinforce`` switches it off for
    their own samples.
    """

    params: tuple[str, ...] = ()
    validate_args = True

    def sample(self, sample_shape: Any = (), rng: Any = None) -> Any:
        """Draw a sample (a raw array of the parameters' backend): one of the parameters' batch
        shape, or ``sample_shape`` (an int or a tuple) of them, stacked in front, as
        ``torch.distributions`` and Chainer do. ``rng`` is a generator of the backend's random
        numbers (default: the backend's own); passing it first, ``sample(rng)``, is deprecated."""
        if hasattr(sample_shape, "uniform") or hasattr(sample_shape, "normal"):  # sample(rng), the older form
            warnings.warn("polygrad: Distribution.sample(rng) is deprecated; pass sample(rng=rng)",
                          DeprecationWarning, stacklevel=2)
            sample_shape, rng = (), sample_shape
        shape = _sample_shape(self, sample_shape)
        _refuse_symbolic(self)
        backend = self._backend()
        if rng is None:
            return self._draw(shape, backend.rng())
        made_for = getattr(rng, "backend_name", None)  # (a generator a backend handed out: its name)
        if made_for is not None and made_for != backend.name:
            raise _foreign_rng(self, made_for, backend)
        out = self._draw(shape, rng)
        if made_for is None:  # a generator of the protocol's own (no name): its draws tell
            drew = backend_of_type(type(out))
            if drew.name != backend.name:
                raise _foreign_rng(self, drew.name, backend)
        return out

    def _draw(self, shape: tuple, rng: Any) -> Any:
        """A sample of ``shape`` stacked in front of the batch shape, drawn from ``rng``."""
        raise NotImplementedError

    def log_prob(self, value: Any) -> Variable:
        """Log-probability (density) of ``value``, differentiable in the parameters."""
        raise NotImplementedError

    def _backend(self) -> Any:
        return _backend(*(getattr(self, p) for p in self.params))


class Bernoulli(Distribution):
    """1 with probability ``p``, else 0 (samples in ``p``'s dtype)."""

    params = ("p",)

    def __init__(self, p: Any) -> None:
        self.p = _parameter(self, "p", p)

    def _checked_p(self) -> Any:
        """``p`` (raw) checked to be in [0, 1] while ``validate_args`` is on (1.5 drew 1 always,
        NaN 0 always, and log_prob of 1.5 was log(1.5) > 0): see :func:`_checked_param`."""
        return _checked_param(_data(self.p), _outside_unit, "Bernoulli: p must be in [0, 1]", self.validate_args)

    def _draw(self, shape: tuple, rng: Any) -> Any:
        p = self._checked_p()
        xp = self._backend().xp
        if type(p) in (int, float):  # a Python number (Normal takes them too): the default floating dtype
            p = xp.asarray(p, dtype=default_dtypes(xp)["real floating"])
        w = widest_floating(xp)  # (a float32 uniform is a multiple of 2**-24: p = 1e-10 drew 1 at 2**-24)
        u = rng.uniform(shape + tuple(p.shape), dtype=w)
        return xp.astype(u < xp.astype(p, w, copy=False), p.dtype)

    def log_prob(self, value: Any) -> Variable:
        _refuse_symbolic(self, value)
        v = _data(value)
        if self.validate_args:
            v = check_values(v, lambda xp, v: xp.logical_and(v != 0, v != 1), "Bernoulli.log_prob: value must be 0 or 1",
                             "polygrad.distributions")
        # log(p) where the value is 1, log1p(-p) where it is 0 (log(1 - p) lost float32's precision
        # for small p: 1.3% at 1e-6); each branch sees a harmless stand-in where the other is
        # picked (1, 0), so that a certain outcome (p of 0 or 1) sends back no 0 * inf = NaN.
        one = v != 0
        checked = self._checked_p()
        p = self.p
        if type(p) in (int, float):  # an array of it (where() of two Python numbers is no standard call)
            # of the value's backend and floating dtype, as Normal(0.0, 1.0)'s result is (the current
            # backend's default dtype made float32 values float64, and values on dask a mix of backends)
            xp = _backend(v).xp
            p = xp.asarray(p, dtype=v.dtype if xp.isdtype(v.dtype, "real floating")
                           else default_dtypes(xp)["real floating"])
        return _after(where(one, log(where(one, p, 1.0)), log1p(-where(one, 0.0, p))), _data(self.p), checked)


class Categorical(Distribution):
    """An index ``k`` drawn with probability ``probs[..., k] / sum(probs[..., :])``: rows are
    non-negative weights (as in ``torch.distributions``), a softmax's rows or any others."""

    params = ("probs",)

    def __init__(self, probs: Any) -> None:
        self.probs = _parameter(self, "probs", probs, numbers=False)

    def _draw(self, shape: tuple, rng: Any) -> Any:
        probs = _data(self.probs)
        xp = self._backend().xp
        if self.validate_args:
            probs, peaks = self._checked(probs)
            if peaks is not None:  # a lazy backend: probs computed once the rows are checked
                probs = xp.where(xp.expand_dims(peaks, axis=-1) > 0, probs, probs)
        w = widest_floating(xp)  # (in float32, a class of a share below 2**-24 was never drawn)
        cum = xp.cumulative_sum(_scaled(xp, xp.astype(probs, w, copy=False)), axis=-1)
        # 1 - u is in (0, 1]: the classes whose cumulative weight is below it are skipped, so a class of
        # weight 0 is never drawn, first (u = 0 gave class 0) or last (1 - u = 1 reaches the total only)
        u = 1.0 - rng.uniform(shape + tuple(probs.shape[:-1]) + (1,), dtype=w)
        index = index_dtype(xp)  # not int64: a namespace may have none
        k = xp.sum(xp.astype(cum < u * cum[..., -1:], index), axis=-1)
        return xp.minimum(k, xp.asarray(probs.shape[-1] - 1, dtype=index))

    def _checked(self, probs: Any) -> tuple:
        """``probs`` (raw) checked to be weights of a distribution, and None; on a lazy backend,
        ``probs`` with its check attached and the rows' largest weights with theirs, which what is
        computed must depend on. (A negative probability drew from a wrong distribution, a row of zeros
        or an infinite one always the first index.)"""
        probs = check_values(probs, _not_a_weight, "Categorical: probs must be finite and non-negative",
                             "polygrad.distributions")
        if probs.shape[-1] == 0:
            raise ValueError(f"polygrad.distributions.Categorical: probs must have at least one class, got shape "
                             f"{tuple(probs.shape)}")
        xp = self._backend().xp
        peaks = xp.max(probs, axis=-1)  # (their sums may overflow)
        checked = check_values(peaks, lambda xp, v: v <= 0, "Categorical: each row of probs must have a positive sum",
                               "polygrad.distributions")
        return probs, (checked if checked is not peaks else None)

    def log_prob(self, value: Any) -> Variable:
        _refuse_symbolic(self, value)
        v = _data(value)
        probs = self.probs
        n = _data(probs).shape[-1]
        xp = self._backend().xp
        if self.validate_args:
            v = check_values(v, lambda xp, v: xp.logical_or(xp.logical_or(v < 0, v >= n), v != xp.floor(v)),
                             f"Categorical.log_prob: value must be an index in [0, {n})", "polygrad.distributions")
        onehot = xp.reshape(v, tuple(v.shape) + (1,)) == positions(xp, n, v.dtype)
        peaks = self._checked(_data(probs))[1] if self.validate_args else None
        if not xp.isdtype(_data(probs).dtype, "real floating"):  # integer weights (no gradient)
            probs = xp.astype(_data(probs), drawn_in(xp, _data(probs).dtype))
        # Rows are weights, divided by their sum as the draw does (and torch.distributions):
        # log(probs[v]) alone was log 2 for [1, 1, 2], a probability above 1. They are divided
        # by their largest weight first, a constant, which changes neither the value nor the
        # gradient: a sum past the dtype's range was inf (log_prob -inf, float16 counts past 65504).
        probs = probs / _row_max(xp, _data(probs))
        total = sum(probs, axis=-1)
        if peaks is not None:  # a lazy backend: the log-probabilities computed once the rows are checked
            total = where(peaks > 0, total, total)
        # The probability picked first, then its log (a class of probability 0 that was not
        # picked would otherwise send 0 * inf = NaN to every probability through softmax).
        return log(sum(where(onehot, probs, 0.0), axis=-1)) - log(total)


class Normal(Distribution):
    """Gaussian with ``mean`` and standard deviation ``std``."""

    params = ("mean", "std")

    def __init__(self, mean: Any, std: Any) -> None:
        self.mean, self.std = _parameter(self, "mean", mean), _parameter(self, "std", std)

    def _checked_params(self) -> tuple[Any, Any]:
        """``mean`` and ``std`` (raw) checked while ``validate_args`` is on (see :func:`_checked_param`):
        a negative std drew a sample of -std and had a NaN log_prob, a NaN mean drew NaN."""
        m = _checked_param(_data(self.mean), _nan, "Normal: mean must not be NaN", self.validate_args)
        s = _checked_param(_data(self.std), _negative_or_nan, "Normal: std must be non-negative", self.validate_args)
        return m, s

    def _draw(self, shape: tuple, rng: Any) -> Any:
        m, s = self._checked_params()
        ref = m if type(m) not in (int, float) else s
        xp = self._backend().xp
        batch = (tuple(xp.broadcast_arrays(xp.asarray(m), xp.asarray(s))[0].shape) if type(ref) not in (int, float)
                 else ())
        # the parameters' floating dtype (integer parameters gave a sample drawn in theirs: truncated)
        floating = [x.dtype for x in (m, s) if type(x) not in (int, float) and xp.isdtype(x.dtype, "real floating")]
        dtype = xp.result_type(*floating) if floating else default_dtypes(xp)["real floating"]
        m, s = (x if type(x) in (int, float) or x.dtype == dtype else xp.astype(x, dtype) for x in (m, s))
        eps = rng.normal(shape + batch, dtype=dtype)
        return m + s * eps

    def log_prob(self, value: Any) -> Variable:
        m, s = self._checked_params()
        # differentiable in the value too, as torch.distributions' (a Variable's gradient was dropped)
        z = subtract(value, self.mean) / self.std
        std = self.std
        # a Python number's log in Python: made an array of the value's dtype, an integer value
        # truncated it (a std of 0.5 became 0: log_prob inf)
        log_std = (math.log(std) if std > 0 else -math.inf if std == 0 else math.nan) if type(std) in (int, float) \
            else log(std)
        out = -0.5 * z * z - log_std - 0.5 * math.log(2 * math.pi)
        return _after(_after(out, _data(self.mean), m), _data(self.std), s)


def _parameter(d: Distribution, name: str, value: Any, numbers: bool = True) -> Any:
    """``value`` for the parameter ``name`` of ``d``: a Variable, an array of a backend or, where
    ``numbers``, a Python int or float. Anything else is refused here, naming both (a list failed
    in log_prob with "'list' object has no attribute 'shape'", in sample with "no backend claims")."""
    data = _data(value)
    if is_array(data) or numbers and type(data) in (int, float):
        return value
    what = "a Variable, an array or a Python int or float" if numbers else "a Variable or an array"
    raise TypeError(f"polygrad.distributions.{type(d).__name__}: {name} must be {what}, got "
                    f"{type(value).__name__}{' (convert it with pg.asarray)' if isinstance(value, (list, tuple)) else ''}")


def _refuse_symbolic(d: Distribution, value: Any = None) -> None:
    """A parameter of a pg.function graph (its values exist only when the function runs) cannot be
    drawn from now: refused naming it and the draws a compiled function takes (it was "'SymbolicBackend'
    object has no attribute 'rng'"). With ``value``, for a ``log_prob`` computed on the arrays
    (Bernoulli's, Categorical's: "cannot compare the symbolic array v with an operator")."""
    named = [(name, getattr(d, name)) for name in d.params] + ([] if value is None else [("value", value)])
    for name, v in named:
        data = _data(v)
        if type(data) not in (bool, int, float, complex) and not has_namespace(data):
            if value is None:
                raise NotImplementedError(
                    f"polygrad.distributions.{type(d).__name__}.sample: {name} is symbolic ({v!r}), and sample() "
                    f"draws now; in a compiled function draw with F.bernoulli, F.categorical, F.multinomial or "
                    f"F.normal (rows of the graph, drawn at every call)")
            raise NotImplementedError(
                f"polygrad.distributions.{type(d).__name__}.log_prob: {name} is symbolic ({v!r}), and this "
                f"log_prob computes on arrays; in a compiled function write the log-probability with pg.* "
                f"operations (Normal's log_prob takes symbolic variables)")


def _foreign_rng(d: Distribution, other: str, backend: Any) -> TypeError:
    """The error of ``sample(rng=...)`` given a generator of backend ``other``: its draws mixed into
    the parameters' gave a sample of that backend, or failed in the other library's words."""
    numbers = all(type(_data(getattr(d, p))) in (bool, int, float, complex) for p in d.params)
    theirs = "Python numbers, drawn on the current backend" if numbers else "of backend"
    return TypeError(f"polygrad: {type(d).__name__}.sample: rng is a generator of backend {other!r}, and the "
                     f"parameters are {theirs} {backend.name!r}; pass one of {backend.name!r}: "
                     f"pg.get_backend({backend.name!r}).rng() or its random_generator(seed)")


def _row_max(xp: Any, probs: Any) -> Any:
    """The largest weight of each row (kept as an axis), 1 for a row with none above 0."""
    m = xp.max(probs, axis=-1, keepdims=True)
    return xp.where(m > 0, m, xp.ones_like(m))


def _scaled(xp: Any, probs: Any) -> Any:
    """Rows of weights divided by their largest: their sums stay in range (a row of two weights
    of 1e308 summed to inf and always drew the index where the sum first overflowed)."""
    return probs / _row_max(xp, probs)


#: The namespace functions the checks below use, for a Python number.
_NUMBERS = SimpleNamespace(logical_not=operator.not_, logical_and=lambda a, b: a and b, isnan=math.isnan,
                           isfinite=math.isfinite)


def _checked_param(x: Any, is_bad: Any, rule: str, validate: bool) -> Any:
    """``x`` (a parameter's raw array, or a Python number) checked to be in range when ``validate``:
    a number now (``is_bad`` asked of :data:`_NUMBERS`); an array by :func:`check_values`, which
    on a lazy backend gives back a new array carrying the check (what is computed must then
    depend on it: :func:`_after`)."""
    if not validate:
        return x
    if type(x) in (int, float):
        if is_bad(_NUMBERS, x):
            raise ValueError(f"polygrad.distributions.{rule}, got {x!r}")
        return x
    return check_values(x, is_bad, rule, "polygrad.distributions")


def _after(out: Any, raw: Any, checked: Any) -> Any:
    """``out`` (computed from the parameter whose raw array is ``raw``) made to depend on
    ``checked``, where that is ``raw`` with its check attached (a lazy backend): so that
    computing ``out`` runs the check. The graph to the parameter stays as it was."""
    return out if checked is raw else where(checked == checked, out, out)


def _outside_unit(xp: Any, v: Any) -> Any:
    return xp.logical_not(xp.logical_and(v >= 0, v <= 1))  # (NaN too)


def _negative_or_nan(xp: Any, v: Any) -> Any:
    return xp.logical_not(v >= 0)


def _nan(xp: Any, v: Any) -> Any:
    return xp.isnan(v)


def _not_a_weight(xp: Any, v: Any) -> Any:
    return xp.logical_not(xp.logical_and(v >= 0, xp.isfinite(v)))


def _sample_shape(d: Distribution, sample_shape: Any) -> tuple:
    """``sample_shape`` (an integer, or a sequence of them: NumPy's integers too) as a tuple of ints."""
    shape = (as_int(sample_shape),) if not hasattr(sample_shape, "__len__") else tuple(map(as_int, sample_shape))
    if any(n is None or n < 0 for n in shape):
        raise ValueError(f"polygrad: {type(d).__name__}.sample: sample_shape must be a non-negative integer or a "
                         f"sequence of them, got {sample_shape!r}")
    return shape

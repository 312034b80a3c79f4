"""Numerical gradient checks over any backend (Array API only).

The check is the random-direction dot-product test: for a function ``f`` with
inputs ``x_i``, a random output direction ``u`` and a random input direction
``v_i``, the analytic ``sum_i <vjp_i(u), v_i>`` must equal the central
difference ``(<u, f(x + eps v)> - <u, f(x - eps v)>) / (2 eps)``. One scalar
comparison checks every input at once; order 2 checks the vjp itself the same
way, through ``create_graph=True``.

Only floating-point inputs have gradients: an integer or bool input to
differentiate is refused (its random direction would round to zero and pass
any gradient). Central differences lose precision with the dtype: left at
None, ``eps``, ``atol`` and ``rtol`` are chosen for the least precise
floating-point dtype among the inputs and outputs (float64 keeps the
documented defaults; float32 and narrower take ``eps = cbrt(finfo.eps)`` and
tolerances to match), and a failure in a narrow dtype says that its precision
may be the cause; where the central difference's own error is as large as
the difference, so that a zero gradient would pass, the check fails as
inconclusive instead of passing. Nothing here assumes a dtype the backend may
lack: sums are taken in the widest real (or, for complex arrays, complex)
floating dtype of the namespace (``__array_namespace_info__()``).

Complex inputs and outputs follow polygrad's convention (PyTorch's): for a
real ``L = Re<u, f(x)>`` the gradient of ``x = a + ib`` is ``dL/da + i dL/db``,
so ``Re<grad, v>`` is the derivative of ``L`` along ``v``; random directions
are complex in both parts, and :func:`numerical_grad` steps both.
"""

from __future__ import annotations

import builtins
import warnings
from typing import Any, Callable, Sequence

from polygrad.core.engine import grad as _grad
from polygrad.core.config import no_backprop_mode
from polygrad.core.dispatch import backend_of_type
from polygrad.core.integers import as_int
from polygrad.core.variable import Variable


def _data(x: Any) -> Any:
    return x._data if isinstance(x, Variable) else x


def _as_tuple(y: Any) -> tuple:
    return tuple(y) if isinstance(y, (tuple, list)) else (y,)


def _widest_float(xp: Any) -> Any:
    """The namespace's widest real floating dtype (float64 where it has one)."""
    info = getattr(xp, "__array_namespace_info__", None)
    if info is not None:
        dtypes = info().dtypes(kind="real floating")
        for name in ("float64", "float32", "float16"):
            if name in dtypes:
                return dtypes[name]
    return getattr(xp, "float64", None) or xp.float32


def _widest_complex(xp: Any) -> Any:
    """The namespace's widest complex floating dtype."""
    info = getattr(xp, "__array_namespace_info__", None)
    if info is not None:
        dtypes = info().dtypes(kind="complex floating")
        for name in ("complex128", "complex64"):
            if name in dtypes:
                return dtypes[name]
    return getattr(xp, "complex128", None) or xp.complex64


def _is_complex(xp: Any, a: Any) -> bool:
    return xp.isdtype(a.dtype, "complex floating")


def _is_floating(xp: Any, a: Any) -> bool:
    """Whether ``a`` is a floating-point array: only those have gradients and random directions."""
    dtype = getattr(a, "dtype", None)
    return dtype is not None and xp.isdtype(dtype, ("real floating", "complex floating"))


def _widen(xp: Any, a: Any) -> Any:
    """``a`` in the namespace's widest real (or, for a complex ``a``, complex) floating dtype."""
    return xp.astype(a, _widest_complex(xp) if _is_complex(xp, a) else _widest_float(xp))


def _vdot(xp: Any, a: Any, b: Any) -> float:
    """``Re sum(conj(a) b)`` in the widest dtype: a gradient paired with a direction. For complex
    arrays this is the derivative along ``b`` of a gradient ``a`` in polygrad's convention
    (``dL/d re + i dL/d im``); dropping the imaginary parts made every check blind to them."""
    if _is_complex(xp, a) or _is_complex(xp, b):
        wide = _widest_complex(xp)
        return float(xp.real(xp.sum(xp.conj(xp.astype(a, wide)) * xp.astype(b, wide))))
    wide = _widest_float(xp)
    return float(xp.sum(xp.astype(a, wide) * xp.astype(b, wide)))


def _number(v: Any) -> str:
    """An element for a message: both parts of a complex one."""
    z = complex(v)
    return f"{z.real:.8g}" if z.imag == 0 and not isinstance(v, complex) and "complex" not in str(
        getattr(v, "dtype", "")) else f"{z.real:.8g}{z.imag:+.8g}j"


def known_shape(x: Any, checker: str, what: str) -> tuple:
    """``x``'s shape as a tuple; a ValueError naming ``checker`` and ``what`` (``"output 0"``)
    where a size is unknown (the standard's None, or the NaN dask writes): no random direction
    of that shape can be drawn."""
    shape = tuple(x.shape)
    if builtins.any(n is None or n != n for n in shape):
        raise ValueError(
            f"{checker}: {what} has shape {shape}, with a size unknown until it is computed (a data-dependent "
            f"shape: a boolean mask, nonzero, unique_*), so no random direction of its shape can be drawn; a "
            f"numerical check needs known sizes. Check such a function on a backend that knows them, or use a "
            f"fixed-shape form such as where(mask, x, 0). (A backend whose data-dependent sizes stay unknown "
            f"declares BackendInfo.data_dependent_shapes=False; the conformance suite then skips these checks.)"
        )
    return shape


def _random_like(x: Any, rng: Any, checker: str, what: str) -> Any:
    """A random direction of ``x``'s shape and dtype; complex ones in both parts (a gradient
    missing a conj agrees along every real direction). ``checker`` and ``what`` name it in the
    error for an unknown size."""
    shape = known_shape(x, checker, what)
    xp = backend_of_type(type(x)).xp
    if not _is_complex(xp, x):
        return rng.normal(shape, dtype=x.dtype)
    real = xp.finfo(x.dtype).dtype
    re, im = rng.normal(shape, dtype=real), rng.normal(shape, dtype=real)
    return xp.astype(re, x.dtype) + 1j * xp.astype(im, x.dtype)


def _output_direction(y: Any, rng: Any, checker: str, j: int) -> Any:
    """The random direction of output ``j``; None for an integer or bool output, which has no
    gradient (its direction made it an input of the second-order checks, which refused it)."""
    xp = backend_of_type(type(y)).xp
    return _random_like(y, rng, checker, f"output {j}") if _is_floating(xp, y) else None


def _check_kind(fname: str, what: str, g: Any, x: Any) -> None:
    """AssertionError naming the checker and ``what`` (the input and the function) where the
    analytic gradient ``g`` is not an array of ``x``'s backend, dtype and shape: paired with a
    direction, a numpy gradient of a dask input gave the right number, and passed."""
    g = _data(g)
    try:
        backend = backend_of_type(type(g))
    except TypeError:
        backend = None
    mine = backend_of_type(type(x))
    shapes = tuple(getattr(g, "shape", ())), tuple(x.shape)
    known = builtins.all(n is not None and n == n for n in shapes[0] + shapes[1])
    if backend is not mine or g.dtype != x.dtype or (known and shapes[0] != shapes[1]):
        got = type(g).__name__ if backend is None else f"{g.dtype} {shapes[0]} on {backend.name!r}"
        raise AssertionError(f"polygrad.testing.{fname}: the gradient of {what} is {got}, expected {x.dtype} "
                             f"{shapes[1]} on {mine.name!r}, as the input")


def _refuse_non_float(fname: str, xp: Any, datas: Sequence[Any], indices: Sequence[int], how: str) -> None:
    """TypeError naming the checker and the input when an input to differentiate is not floating-point."""
    for i in indices:
        dtype = getattr(datas[i], "dtype", None)
        if not _is_floating(xp, datas[i]):
            got = f"of dtype {dtype}" if dtype is not None else f"a {type(datas[i]).__name__}"
            raise TypeError(
                f"polygrad.testing.{fname}: input {i} is {got}; only floating-point inputs have gradients "
                f"(an integer direction rounds to zero and would pass any gradient). Pass it as a floating-point "
                f"array, or {how}"
            )


# (eps, atol, rtol) of each checker for float64; narrower dtypes get their own (see _Tolerance).
_CHECK_GRADS = (1e-6, 1e-5, 1e-4)
_CHECK_BACKWARD = (1e-3, 1e-5, 1e-4)
_CHECK_DOUBLE_BACKWARD = (1e-3, 1e-4, 1e-3)


def _narrowest(xp: Any, arrays: Sequence[Any]) -> tuple[Any, float]:
    """The least precise floating-point dtype among ``arrays`` and its machine epsilon (None, 0.0 if none)."""
    worst, worst_eps = None, 0.0
    for a in arrays:
        if not _is_floating(xp, a):
            continue
        dtype = a.dtype
        e = float(xp.finfo(dtype).eps)
        if e > worst_eps:
            worst, worst_eps = dtype, e
    return worst, worst_eps


class _Tolerance:
    """What a numerical check allows, chosen for the least precise floating-point dtype among the
    arrays it sees. In float64, fixed ``atol`` and ``rtol``. In a narrower dtype, left at None,
    they measure the central difference's own error instead of guessing it (fixed float32
    tolerances of 4.9e-3 passed a sign-flipped gradient of a mean over 1,000 values, and
    gradients 1% off): the difference between the central differences at ``eps`` and at
    ``eps / 2`` (truncation, and rounding inside the function), plus a bound on the rounding of
    the function's values over the step (see ``rounding``), plus ``rtol = 1e-3``. That error
    can exceed the derivative itself (``sin(x) + 1e4`` in float32): then a zero gradient
    would pass as well as the right one, and the check says it is inconclusive (``undecided``)
    instead of passing."""

    def __init__(self, xp: Any, arrays: Sequence[Any], eps: Any, atol: Any, rtol: Any,
                 defaults: tuple[float, float, float]) -> None:
        dtype, e = _narrowest(xp, arrays)
        narrow = e > 1e-12  # below float64's precision (2.2e-16)
        step = e ** (1.0 / 3.0)  # the central difference's best step: float32 4.9e-3
        self.eps = eps if eps is not None else builtins.max(defaults[0], step) if narrow else defaults[0]
        self.measured = narrow and atol is None  # the error of the numeric value is measured
        self.atol = atol if atol is not None else 0.0 if narrow else defaults[1]
        self.rtol = rtol if rtol is not None else builtins.max(defaults[2], 1e-3) if narrow else defaults[2]
        self.machine_eps = e
        self.dtype = dtype
        self.hint = ""
        if narrow:
            self.hint = (f"; the check ran in {dtype} (machine epsilon {e:.2g}), where central differences with "
                         f"eps={self.eps:.2g} carry errors of about {e / self.eps:.1g} relative to the function's "
                         f"values: if the gradient passes in float64, this is the dtype's precision (loosen eps, "
                         f"atol or rtol)")

    def rounding(self, size: Any) -> Any:
        """A bound on the error a central difference takes from rounding the function's values:
        ``size`` is the weighted sum ``sum_j |w_j| (|y+_j| + |y-_j|) / |step|`` over the outputs
        ``y_j`` at the two points (``w``: what pairs with them, the output gradient), and each
        value is taken to be off by at most ``2 e`` of itself (``e``: machine epsilon): an ulp,
        at most ``e |y|``, for its own rounding and a kernel's last-place error (float32 exp,
        tanh, sin are within an ulp), and another for the roundings of values of its size on the
        way to it (a sum's last additions: a float32 sum of 100 tanh values was off by 1.8 e |y|).
        So the difference quotient is off by at most ``2 e * size``. Roundings of larger values
        (cancellation) have no bound here: the change at half the step measures them. Zero where
        the error is not measured (float64, or a caller's ``atol``)."""
        return 2 * self.machine_eps * size if self.measured else 0.0

    def undecided(self, checker: str, what: str, numeric: str, noise: float) -> AssertionError:
        """The failure of a check whose central differences (``numeric``) all lie within their own
        measured error (at most ``noise``) of zero: a zero gradient would pass it as well as the
        analytic one, so passing would tell nothing."""
        return AssertionError(
            f"{checker} of {what} is inconclusive: in {self.dtype} (machine epsilon {self.machine_eps:.2g}) the "
            f"central difference with eps={self.eps:.2g} ({numeric}) lies within its own error ({noise:.3g}: the "
            f"rounding of the function's values and the change at half the step) of zero, so a zero gradient "
            f"would pass as well as the analytic one. Check in float64, or pass a larger eps (the rounding error "
            f"shrinks as 1/eps) or an explicit atol (then used as given)"
        )


def numerical_grad(f: Callable[..., Any], inputs: Sequence[Any], grad_outputs: Sequence[Any], eps: float = 1e-3) -> list:
    """Central-difference gradients of ``sum_j <grad_outputs[j], f(*inputs)[j]>``
    with respect to each input array, element by element (small inputs only)."""
    return _central_differences(f, inputs, grad_outputs, eps, rounding=False)[0]


def _central_differences(f: Callable[..., Any], inputs: Sequence[Any], grad_outputs: Sequence[Any],
                         eps: float, rounding: bool = True) -> tuple[list, list]:
    """:func:`numerical_grad`'s gradients, and beside each the size its rounding can reach, per
    element, in units of machine epsilon: ``sum_j |g_j| (|y+_j| + |y-_j|) / step`` over the
    output elements that depend on the element, as far as a step can tell (one that neither the
    step nor a large one, ``x + |x| / 2 + 1``, changes cancels exactly (a point where ``f``
    fails or gives no finite value counts every output as moved); summing every output
    let the rounding of 1,000 values of ``x + 273.15`` excuse a zero gradient, and the small
    step alone misses an output it moves by less than its rounding, such as a float32 mean)."""
    inputs = [_data(x) for x in inputs]
    xp = backend_of_type(type(inputs[0])).xp
    gys = [_data(g) for g in grad_outputs]

    def outputs(xs: list) -> tuple:
        return tuple(_data(y) for y in _as_tuple(f(*[Variable(x, requires_grad=False) for x in xs])))

    def shifted(i: int, x: Any, flat: Any, k: int, by: complex) -> tuple[tuple, Any]:
        """The outputs with element ``k`` of input ``i`` moved by ``by``, and its new value."""
        moved = xp.asarray(flat, copy=True)
        moved[k] = flat[k] + by
        xs = list(inputs)
        xs[i] = xp.reshape(moved, x.shape)
        return outputs(xs), moved[k]

    def far(i: int, x: Any, flat: Any, k: int, unit: complex) -> tuple:
        """The outputs at the large step (None for each where ``f`` fails there or gives a
        non-finite value: outside its domain, every output counts as moved)."""
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ys, _ = shifted(i, x, flat, k, unit * (abs(complex(flat[k])) / 2 + 1))
            if all(bool(xp.all(xp.isfinite(y))) for y in ys):
                return ys
        except Exception:
            pass
        return (None,) * len(base)

    def derivative(i: int, x: Any, flat: Any, k: int, unit: complex) -> tuple[float, float]:
        """The central difference along element ``k`` of input ``i``, times ``unit`` (1, or 1j for
        the imaginary part of a complex input), and its rounding size (see above)."""
        ys_p, plus = shifted(i, x, flat, k, unit * eps)
        ys_m, minus = shifted(i, x, flat, k, -unit * eps)
        ys_far = far(i, x, flat, k, unit) if rounding else (None,) * len(ys_p)
        # the step taken: x + eps rounds in x's dtype (float32 near 1500 moves 0.79% less)
        d = complex(plus - minus) / unit
        step = d.real if d.real else 2 * eps
        change = moved = 0.0
        for yp, ym, yf, y0, g in zip(ys_p, ys_m, ys_far, base if rounding else ys_far, gys):
            if g is None:
                continue
            # the difference of the outputs, paired with g, in the widest dtype: no cancellation of two sums
            wide = _widest_complex(xp) if _is_complex(xp, yp) else _widest_float(xp)
            change += _vdot(xp, g, xp.astype(yp, wide) - xp.astype(ym, wide))
            if not rounding:
                continue
            depends = xp.logical_or(yp != ym, yf != y0) if yf is not None else xp.ones_like(yp, dtype=xp.bool)
            size = xp.astype(xp.abs(yp), wide) + xp.astype(xp.abs(ym), wide)
            moved += _vdot(xp, xp.abs(g), xp.where(depends, size, xp.zeros_like(size)))
        return change / step, moved / abs(step)

    base = outputs(inputs) if rounding else ()

    grads, roundings = [], []
    for i, x in enumerate(inputs):
        flat = xp.reshape(xp.asarray(x, copy=True), (-1,))
        parts = [derivative(i, x, flat, k, 1) for k in range(flat.shape[0])]
        if _is_complex(xp, x):  # dL/d re + i dL/d im (polygrad's convention, PyTorch's)
            imag = [derivative(i, x, flat, k, 1j) for k in range(flat.shape[0])]
            g = [complex(re, im) for (re, _), (im, _) in zip(parts, imag)]
            r = [a + b for (_, a), (_, b) in zip(parts, imag)]
        else:
            g, r = [p[0] for p in parts], [p[1] for p in parts]
        grads.append(xp.reshape(xp.asarray(g, dtype=x.dtype), x.shape))
        roundings.append(xp.reshape(xp.asarray(r, dtype=_widest_float(xp)), x.shape))
    return grads, roundings


def check_grads(
    f: Callable[..., Any],
    inputs: Sequence[Any],
    *,
    order: int = 1,
    eps: float | None = None,
    atol: float | None = None,
    rtol: float | None = None,
    seed: int = 0,
    wrt: Sequence[int] | None = None,
) -> None:
    """Check ``f``'s vjp against central differences, by the dot-product test.

    :param f: a function of Variables returning a Variable or a tuple of them.
    :param inputs: arrays (float64 recommended) or Variables.
    :param order: 1 checks first derivatives; 2 also checks the values of the
        vjp taken with ``create_graph=True`` and its own derivatives, in the
        inputs and in the output gradient (an integer or bool output's is held
        fixed).
    :param eps, atol, rtol: the step and tolerances; None chooses them for the
        least precise floating-point dtype among the inputs and outputs
        (float64: 1e-6, 1e-5, 1e-4; float32: about 4.9e-3, the measured error of
        the central difference, 1e-3: see ``_Tolerance``).
    :param wrt: indices of the inputs to differentiate (default: all); these
        must be floating-point.
    :raises TypeError: an input to differentiate is an integer or bool array.
    :raises AssertionError: naming the function, the order, both values and
        each input's analytic gradient norm (and the dtype, when it is narrower
        than float64); or saying the check is inconclusive, where the measured
        error of the central difference is as large as the difference itself
        (a zero gradient would pass).
    """
    datas = [_data(x) for x in inputs]
    backend = backend_of_type(type(datas[0]))
    xp = backend.xp
    rng = backend.random_generator(seed)
    wrt = _checked("check_grads", len(datas), range(len(datas)) if wrt is None else wrt, "wrt")
    _refuse_non_float("check_grads", xp, datas, wrt, "leave it out of wrt=")

    xs = [Variable(d, requires_grad=i in wrt) for i, d in enumerate(datas)]
    ys = _as_tuple(f(*xs))
    given = (eps, atol, rtol)
    tol = _Tolerance(xp, [datas[i] for i in wrt] + [_data(y) for y in ys], eps, atol, rtol, _CHECK_GRADS)
    eps, atol, rtol, hint = tol.eps, tol.atol, tol.rtol, tol.hint
    us = [_output_direction(_data(y), rng, "polygrad.testing.check_grads", j) for j, y in enumerate(ys)]
    vs = [_random_like(datas[i], rng, "polygrad.testing.check_grads", f"input {i}") for i in wrt]
    name = getattr(f, "__name__", repr(f))
    n = len(wrt)

    def vjp_fn(*args: Any) -> tuple:
        """The vjp (through ``create_graph=True``) as a function of the inputs checked and of the
        floating outputs' gradients ``u``: order 2 differentiates it."""
        ins = [a if isinstance(a, Variable) and a.requires_grad else Variable(_data(a), requires_grad=True)
               for a in args[:n]]
        cotangents = iter(a if isinstance(a, Variable) else Variable(_data(a)) for a in args[n:])
        full = list(datas)
        for i, a in zip(wrt, ins):
            full[i] = a
        out = _as_tuple(f(*full))
        # an integer or bool output's gradient is no argument: it stays None
        gs = _grad(list(out), ins, grad_outputs=[None if u is None else next(cotangents) for u in us],
                   create_graph=True, allow_unused=True)
        return tuple(g if g is not None else Variable(xp.zeros_like(_data(a)), requires_grad=False)
                     for g, a in zip(gs, ins))

    vjp_fn.__name__ = f"vjp of {name}"

    def at(t: float) -> tuple[list, tuple]:
        """The inputs moved by ``t`` along the directions, and ``f``'s outputs there."""
        shifted = list(datas)
        for i, v in zip(wrt, vs):
            shifted[i] = datas[i] + t * v
        return shifted, tuple(_data(y) for y in _as_tuple(f(*[Variable(d, requires_grad=False) for d in shifted])))

    def directional(out: tuple) -> float:
        return sum(_vdot(xp, y, u) for y, u in zip(out, us) if u is not None)

    (plus, ys_p), (minus, ys_m) = at(eps), at(-eps)
    numeric = (directional(ys_p) - directional(ys_m)) / (2 * eps)
    # the direction the step took: x + eps v rounds in x's dtype (float32 near 1500 moves 0.79% less)
    taken = [(_widen(xp, plus[i]) - _widen(xp, minus[i])) / (2 * eps) for i in wrt]
    noise = 0.0  # the measured error of numeric (float32 and narrower)
    if tol.measured:
        half = (directional(at(eps / 2)[1]) - directional(at(-eps / 2)[1])) / eps
        # Rounding: numeric is off by sum_j Re<u_j, d_j> / (2 eps), where d_j, the rounding of
        # y+_j - y-_j, is at most 2 e D_j with D_j = |y+_j| + |y-_j| (see _Tolerance.rounding). At
        # worst that is 2 e sum_j |u_j| D_j / (2 eps); but u is drawn independently of f's values,
        # so the sum is normal, with a standard deviation of at most 2 e ||D|| / (2 eps), and 4 of
        # those bound it but for a chance of 6e-5 with every rounding at its bound (the worst case
        # grows as n where the signal grows as sqrt(n): it passed a zero gradient of x + 273.15
        # over 10,000 float32 values).
        worst = squares = 0.0
        for yp, ym, u in zip(ys_p, ys_m, us):
            if u is not None:
                size = xp.abs(_widen(xp, yp)) + xp.abs(_widen(xp, ym))
                worst += _vdot(xp, xp.abs(u), size)
                squares += _vdot(xp, size, size)
        noise = 2 * abs(half - numeric) + tol.rounding(builtins.min(worst, 4 * squares ** 0.5) / (2 * eps))
    allowed = atol + rtol * abs(numeric) + noise

    gxs = _grad(list(ys), [xs[i] for i in wrt], grad_outputs=list(us), allow_unused=True)
    paths = [("", gxs)]
    if order > 1:
        # the vjp that order 2 differentiates, by another path (create_graph: rules on Variables):
        # only its derivatives were checked, and a uniformly wrong one is consistent with them
        paths.append((", the vjp taken with create_graph=True", vjp_fn(*[datas[i] for i in wrt],
                                                                         *[u for u in us if u is not None])))
    analytic = 0.0
    for how, gs in paths:
        for i, g in zip(wrt, gs):
            if g is not None:
                _check_kind("check_grads", f"input {i} of {name}{how}", g, datas[i])
        analytic = sum(_vdot(xp, _data(g), t) for g, t in zip(gs, taken) if g is not None)
        if not abs(analytic - numeric) <= allowed:
            norms = ", ".join(f"input {i}: {'None' if g is None else f'{_vdot(xp, _data(g), _data(g)) ** 0.5:.6g}'}"
                              for i, g in zip(wrt, gs))
            raise AssertionError(
                f"gradient check failed for {name} (order 1{how}): analytic <vjp(u), v> = {analytic:.10g}, "
                f"numeric = {numeric:.10g} (difference {analytic - numeric:.3g}); gradient norms: {norms}{hint}"
            )
    if noise and not abs(numeric) > allowed:
        raise tol.undecided("polygrad.testing.check_grads", f"{name} (order 1)",
                            f"{numeric:.6g}, analytic {analytic:.6g}", noise)
    if order > 1:
        # The vjp as a function of the inputs and of the output gradients u: a rule that is right
        # in value but wrong in how it depends on u (on the incoming gradient) is wrong for every
        # double backward, and passes a check that holds u fixed.
        check_grads(vjp_fn, [datas[i] for i in wrt] + [u for u in us if u is not None], order=order - 1,
                    eps=given[0], atol=given[1], rtol=given[2], seed=seed + 1)


def _checked(fname: str, n: int, indices: Any, how: str) -> list[int]:
    """The indices of the inputs a check differentiates, each once, in order: a ValueError naming
    ``fname`` where one is not an input's (an IndexError deep inside, before), or where none is
    left (a check of nothing passed)."""
    out: list[int] = []
    for i in indices:
        if as_int(i) is None or not 0 <= i < n:
            raise ValueError(f"polygrad.testing.{fname}: {how} names input {i!r}, but the function has {n} "
                             f"input(s), numbered from 0")
        i = int(i)
        if i not in out:
            out.append(i)
    if not out:
        raise ValueError(f"polygrad.testing.{fname}: {how} leaves no input to differentiate, so nothing would be "
                         f"checked")
    return out


def _no_grads(no_grads: Sequence[bool] | None, n: int, fname: str) -> tuple[list[bool], list[int]]:
    """Per input, whether it is left out (Chainer's ``no_grads``), and the inputs checked."""
    if no_grads is None:
        skip = [False] * n
    elif len(no_grads) != n:
        raise ValueError(f"polygrad.testing.{fname}: no_grads has {len(no_grads)} entries for {n} inputs")
    else:
        skip = [bool(b) for b in no_grads]
    return skip, _checked(fname, n, [i for i in range(n) if not skip[i]], "no_grads")


def check_backward(
    func: Callable[..., Any],
    x_data: Any,
    y_grad: Any = None,
    *,
    eps: float | None = None,
    atol: float | None = None,
    rtol: float | None = None,
    no_grads: Sequence[bool] | None = None,
) -> None:
    """Chainer's check: ``func``'s backward against element-wise central
    differences. ``x_data`` is an array or a tuple of arrays; ``y_grad`` the
    output gradient(s) (random when None). Failure messages show where the
    gradients differ.

    :param eps, atol, rtol: None chooses them for the least precise
        floating-point dtype among the inputs and outputs (float64: 1e-3, 1e-5,
        1e-4, Chainer's defaults; float32: about 4.9e-3, the measured error of the
        central differences, 1e-3: see ``_Tolerance``).
    :param no_grads: per input, True to leave it out of the check (Chainer's);
        integer and bool inputs must be left out this way.
    :raises TypeError: an input checked is an integer or bool array.
    :raises AssertionError: where the gradients differ; or saying the check is
        inconclusive, where in every element the measured error of the central
        difference is as large as the difference itself (a zero gradient would pass).
    """
    _check_backward(func, x_data, y_grad, eps, atol, rtol, no_grads, graph=False)


def _check_backward(func: Callable[..., Any], x_data: Any, y_grad: Any, eps: float | None, atol: float | None,
                    rtol: float | None, no_grads: Sequence[bool] | None, graph: bool) -> None:
    """:func:`check_backward`; with ``graph``, the gradients taken with ``create_graph=True`` are
    checked against the same central differences too (the first order of a double backward)."""
    xs = tuple(x_data) if isinstance(x_data, (tuple, list)) else (x_data,)
    xs = tuple(_data(x) for x in xs)
    backend = backend_of_type(type(xs[0]))
    xp = backend.xp
    skip, checked = _no_grads(no_grads, len(xs), "check_backward")
    _refuse_non_float("check_backward", xp, xs, checked, "leave it out with no_grads=")
    vs = [Variable(x, requires_grad=not skip[i]) for i, x in enumerate(xs)]
    ys = _as_tuple(func(*vs))
    tol = _Tolerance(xp, [xs[i] for i in checked] + [_data(y) for y in ys], eps, atol, rtol, _CHECK_BACKWARD)
    eps, atol, rtol, hint = tol.eps, tol.atol, tol.rtol, tol.hint
    if y_grad is None:
        rng = backend.random_generator(0)
        gys = [_output_direction(_data(y), rng, "polygrad.testing.check_backward", j) for j, y in enumerate(ys)]
    else:
        gys = [_data(g) for g in _as_tuple(y_grad)]
    paths = [("", _grad(list(ys), [vs[i] for i in checked], grad_outputs=gys, allow_unused=True))]
    if graph:
        # the vjp that a double backward differentiates, by another path (create_graph: rules on
        # Variables): only its derivatives were checked, and a uniformly wrong one is consistent with them
        again = [Variable(x, requires_grad=not skip[i]) for i, x in enumerate(xs)]
        paths.append((" (the gradient taken with create_graph=True)", _grad(
            list(_as_tuple(func(*again))), [again[i] for i in checked], grad_outputs=gys, create_graph=True,
            allow_unused=True)))

    def at(*args: Any) -> Any:  # func of the checked inputs, the others held fixed
        full = list(xs)
        for i, a in zip(checked, args):
            full[i] = a
        return func(*full)

    numeric, roundings = _central_differences(at, [xs[i] for i in checked], gys, eps, rounding=tol.measured)
    halves = numerical_grad(at, [xs[i] for i in checked], gys, eps=eps / 2) if tol.measured else numeric
    name = getattr(func, "__name__", func)
    zero_passes, worst = True, (0.0, "")  # whether a zero gradient passes every element; the largest error
    for slot, (i, n, h, r) in enumerate(zip(checked, numeric, halves, roundings)):
        noise = 2 * xp.abs(h - n) + tol.rounding(r)  # the measured error of n (zero in float64)
        allowed = atol + rtol * xp.abs(n) + noise
        for how, grads in paths:
            if grads[slot] is not None:
                _check_kind("check_backward", f"input {i} of {name}{how}", grads[slot], xs[i])
            a = xp.zeros_like(n) if grads[slot] is None else _data(grads[slot])
            # not "> allowed": a NaN compares False and passed; NaN where the numeric one is NaN too agrees
            bad = xp.logical_not(xp.logical_or(xp.abs(a - n) <= allowed, xp.logical_and(xp.isnan(a), xp.isnan(n))))
            if bool(xp.any(bad)):
                # counted and found without nonzero, whose size a lazy backend (dask) does not know
                integral = xp.__array_namespace_info__().default_dtypes()["integral"]
                flags = xp.astype(xp.reshape(bad, (-1,)), integral)
                k, count = int(xp.argmax(flags)), int(xp.sum(flags))
                fa, fn = xp.reshape(a, (-1,)), xp.reshape(n, (-1,))
                if not tol.measured:  # in float64 a step too large for the function is the usual false alarm
                    h = xp.reshape(numerical_grad(at, [xs[j] for j in checked], gys, eps=eps / 2)[slot], (-1,))[k]
                    if abs(complex(fa[k]) - complex(h)) < 0.9 * abs(complex(fa[k]) - complex(fn[k])):
                        hint = (f"; the central difference with eps={eps / 2:g} gives {_number(h)} there, closer to "
                                f"the analytic value: eps={eps:g} may be too large for this function (pass a smaller "
                                f"eps)")
                raise AssertionError(
                    f"check_backward failed for input {i} of {name}{how} (shape {tuple(n.shape)}): {count} of "
                    f"{int(fn.shape[0])} elements differ; first at flat index {k}: analytic {_number(fa[k])}, numeric "
                    f"{_number(fn[k])}{hint}\nanalytic:\n{a}\nnumeric:\n{n}"
                )
        if tol.measured and zero_passes:
            zero_passes = bool(xp.all(xp.abs(n) <= allowed))
            flat = xp.reshape(noise, (-1,))
            k = int(xp.argmax(flat))
            if float(flat[k]) > worst[0]:
                worst = (float(flat[k]), f"{_number(xp.reshape(n, (-1,))[k])} for input {i} at flat index {k}, "
                                         f"where its error is largest")
    # A zero gradient would pass every element of every input: the check tells nothing. (Where no
    # output moves, the error is 0, and only a zero gradient passes: a function constant there.)
    if tol.measured and zero_passes and worst[0] > 0:
        raise tol.undecided("polygrad.testing.check_backward", name, worst[1], worst[0])


def check_double_backward(
    func: Callable[..., Any],
    x_data: Any,
    y_grad: Any = None,
    *,
    eps: float | None = None,
    atol: float | None = None,
    rtol: float | None = None,
    no_grads: Sequence[bool] | None = None,
) -> None:
    """Check ``func``'s backward (first order, as :func:`check_backward`) and the
    derivatives of its vjp (second order), element-wise by central differences: the
    vjp is a function of the checked inputs and of the output gradient ``y_grad`` (as
    in Chainer), so a rule that is right in value but not in how it depends on the
    incoming gradient fails too. The first order checks the gradients taken with
    ``create_graph=True`` as well (the values the second order differentiates, by
    another path). An output whose ``y_grad`` is None, or that is integer or bool,
    is held fixed. ``eps``, ``atol``, ``rtol`` and ``no_grads`` as in
    :func:`check_backward` (float64 defaults 1e-3, 1e-4, 1e-3)."""
    xs = tuple(x_data) if isinstance(x_data, (tuple, list)) else (x_data,)
    xs = tuple(_data(x) for x in xs)
    backend = backend_of_type(type(xs[0]))
    xp = backend.xp
    skip, checked = _no_grads(no_grads, len(xs), "check_double_backward")
    _refuse_non_float("check_double_backward", xp, xs, checked, "leave it out with no_grads=")
    rng = backend.random_generator(1)
    with no_backprop_mode():
        probe = _as_tuple(func(*[Variable(x, requires_grad=False) for x in xs]))
    tol = _Tolerance(xp, [xs[i] for i in checked] + [_data(y) for y in probe], eps, atol, rtol, _CHECK_DOUBLE_BACKWARD)
    eps = tol.eps
    atol, rtol = (None, None) if tol.measured else (tol.atol, tol.rtol)  # measured again by check_backward
    if y_grad is None:
        gys = [_output_direction(_data(y), rng, "polygrad.testing.check_double_backward", j)
               for j, y in enumerate(probe)]
    else:
        gys = [_data(g) for g in _as_tuple(y_grad)]
    # first order, by both paths (a function without any gradient has a vjp of zeros, whose derivatives are zero)
    _check_backward(func, xs, gys, eps, atol, rtol, skip, graph=True)
    n = len(checked)
    # the output gradients the vjp is a function of: those of floating outputs (None, or an integer
    # output's, is no input to differentiate: it was refused as one)
    free = [j for j, g in enumerate(gys) if _is_floating(xp, g)]

    def vjp(*args: Any) -> tuple:
        ins = [Variable(_data(a), requires_grad=True) if not (isinstance(a, Variable) and a.requires_grad) else a
               for a in args[:n]]
        full = list(xs)
        for i, a in zip(checked, ins):
            full[i] = a
        cotangents = list(gys)
        for j, a in zip(free, args[n:]):
            cotangents[j] = a
        ys = _as_tuple(func(*full))
        gs = _grad(list(ys), ins, grad_outputs=cotangents, create_graph=True, allow_unused=True)
        return tuple(g if g is not None else Variable(xp.zeros_like(_data(a)), requires_grad=False) for g, a in zip(gs, ins))

    vjp.__name__ = f"vjp of {getattr(func, '__name__', func)}"
    check_backward(vjp, tuple(xs[i] for i in checked) + tuple(gys[j] for j in free), None, eps=eps, atol=atol,
                   rtol=rtol)

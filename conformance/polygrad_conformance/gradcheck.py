"""Gradient checks of the conformance suite, beside :func:`polygrad.testing.check_grads`:
the vjp as a function of the output gradient, and float32 checks by Richardson
extrapolation with host sums.

The convention checked is PyTorch's: for L = Re<u, f(x)>, the gradient with
respect to x = a + ib is dL/da + i dL/db, so Re<grad, v> is the derivative of
L along v; a real input gets a real gradient. Random directions come from the
backend's own generator, so no second array library is needed.

In a dtype narrower than float64 (a backend without float64, such as jax's
32-bit mode) a central difference with a step large enough to beat rounding
carries a truncation error of order step**2 that the tolerances cannot absorb
where the function curves sharply (``std`` of close values). There
:func:`check_vjp` with ``extrapolate=True`` sums on the host in float64 (so no
reduction rounds in float32), takes the central differences at the step and at
half of it, and compares the analytic value with their Richardson extrapolation
(truncation error of order step**4), allowing the difference of the two
estimates as the extrapolation's own error: a failure then means the gradient
is wrong, not that float32 is narrow. Where that difference exceeds a tenth
of the estimate (plus the tolerance), the check is inconclusive and fails
saying so.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import polygrad as pg
from polygrad.testing.gradcheck import _Tolerance, _is_complex, _random_like


def _as_tuple(y: Any) -> tuple:
    return tuple(y) if isinstance(y, (tuple, list)) else (y,)


def _data(x: Any) -> Any:
    return x.data if isinstance(x, pg.Variable) else x


def _backend(a: Any) -> Any:
    return pg.Variable(_data(a), requires_grad=False).backend


def _direction(xp: Any, rng: Any, a: Any, what: str) -> Any:
    """A random array shaped like ``a``: normal, with a normal imaginary part where ``a`` is complex."""
    return _random_like(a, rng, "polygrad_conformance.gradcheck.check_vjp", what)


def _re_dot(xp: Any, a: Any, b: Any) -> float:
    """Re<a, b> = Re sum(conj(a) b)."""
    if _is_complex(xp, a) or _is_complex(xp, b):
        return float(xp.sum(xp.real(xp.conj(a) * b)))
    return float(xp.sum(a * b))


def _flat(values: Any) -> list:
    out, stack = [], [values]
    while stack:
        v = stack.pop()
        if isinstance(v, (list, tuple)):
            stack.extend(reversed(v))
        else:
            out.append(v)
    return out


def _re_dot_host(xp: Any, a: Any, b: Any) -> float:
    """Re<a, b> summed on the host in float64 (math.fsum: no rounding of the reduction)."""
    from polygrad_conformance._util import tolist

    left, right = _flat(tolist(a)), _flat(tolist(b))
    return math.fsum((complex(p).conjugate() * complex(q)).real for p, q in zip(left, right))


def involves_complex(f: Callable[..., Any], inputs: Sequence[Any]) -> bool:
    """Whether an input or an output of ``f`` at ``inputs`` is complex."""
    xp = _backend(inputs[0]).xp
    with pg.no_backprop_mode():
        outs = _as_tuple(f(*[pg.Variable(_data(a), requires_grad=False) for a in inputs]))
    return any(_is_complex(xp, _data(a)) for a in (*inputs, *outs))


def _step(xp: Any, arrays: Sequence[Any]) -> float:
    """The default step, polygrad.testing's for the least precise floating dtype among the inputs
    and outputs: 1e-6 in float64, the cube root of machine epsilon in a narrower one (float32:
    4.9e-3; a float32 step of 1e-6 is lost in rounding: the central difference was noise, and an
    rtol of it excused a wrong gradient)."""
    return _Tolerance(xp, arrays, None, None, None, (1e-6, 0.0, 0.0)).eps


def check_vjp(f: Callable[..., Any], inputs: Sequence[Any], *, order: int = 1, eps: float | None = None,
              rtol: float = 1e-4, atol: float = 1e-6, seed: int = 0, extrapolate: bool = False) -> None:
    """Re<vjp(u), v> equals the central difference of Re<u, f(x + t v)>, for real or complex x and
    f(x), and each gradient has its input's dtype and shape; order 2 checks the vjp (built with
    create_graph) as a function of x and u the same way. ``extrapolate``: host sums and
    Richardson extrapolation, for dtypes narrower than float64 (see the module docstring).
    ``eps`` None: see ``_step``."""
    inputs = [_data(a) for a in inputs]
    backend = _backend(inputs[0])
    xp, rng = backend.xp, backend.random_generator(seed)
    xs = [pg.Variable(a) for a in inputs]
    ys = _as_tuple(f(*xs))
    eps = _step(xp, [*inputs, *(y.data for y in ys)]) if eps is None else eps
    us = [_direction(xp, rng, y.data, f"output {j}") for j, y in enumerate(ys)]
    vs = [_direction(xp, rng, a, f"input {i}") for i, a in enumerate(inputs)]
    dot = _re_dot_host if extrapolate else _re_dot

    def value(t: float) -> float:
        out = _as_tuple(f(*[pg.Variable(a + t * v, requires_grad=False) for a, v in zip(inputs, vs)]))
        return sum(dot(xp, u, y.data) for u, y in zip(us, out))

    numeric = (value(eps) - value(-eps)) / (2 * eps)
    slack = 0.0
    if extrapolate:
        half = (value(eps / 2) - value(-eps / 2)) / eps
        # the two estimates differ by their truncation and rounding errors: allowed in full (a
        # third of it, the extrapolation's truncation alone, failed to absorb float32 rounding)
        numeric, slack = (4 * half - numeric) / 3, abs(half - numeric)
        # Allowed in full, the disagreement must stay small beside the estimate: past that (the
        # function not smooth at the point, or noisy) it excused any gradient, a zero one of a
        # function whose estimates were random. Truncation alone keeps it within a few percent
        # (std of close values, float32, order 2: 2.5%; numpy's float32 cases: under 0.2%).
        bound = atol + rtol * abs(numeric) + 0.1 * abs(numeric)
        assert slack <= bound, (
            f"gradient check of {getattr(f, '__name__', repr(f))} (order {order}) is inconclusive: the central "
            f"differences with steps {eps:g} and {eps / 2:g} disagree by {slack:.3g}, more than a tenth of their "
            f"extrapolation {numeric:.6g} plus the tolerance (the function is not smooth at the point, or its "
            f"values are noisy)"
        )
    gs = pg.grad(list(ys), xs, grad_outputs=us, allow_unused=True)
    name = getattr(f, "__name__", repr(f))
    for i, (g, a) in enumerate(zip(gs, inputs)):
        assert g is None or (g.dtype == a.dtype and tuple(g.shape) == tuple(a.shape)), (
            f"{name}: the gradient of input {i} has dtype {g.dtype} and shape {tuple(g.shape)}, "
            f"the input {a.dtype} and {tuple(a.shape)}"
        )
    analytic = sum(dot(xp, g.data, v) for g, v in zip(gs, vs) if g is not None)
    assert abs(analytic - numeric) <= atol + rtol * abs(numeric) + slack, (
        f"gradient check failed for {name} (order {order}): analytic {analytic!r} != numeric {numeric!r}"
        + (f" (Richardson extrapolation of central differences with steps {eps:g} and {eps / 2:g}, "
           f"allowing {slack:.3g} for its own error)" if extrapolate else "")
    )
    if order > 1:
        # The vjp as a function of the inputs and of u: a rule right in value but wrong in how it
        # depends on the incoming gradient is wrong for every double backward.
        n = len(inputs)

        def vjp(*args: Any) -> tuple:
            ins = [a if a.requires_grad else pg.Variable(a.data) for a in args[:n]]
            out = pg.grad(list(_as_tuple(f(*ins))), ins, grad_outputs=list(args[n:]), create_graph=True,
                          allow_unused=True)
            return tuple(g if g is not None else pg.Variable(xp.zeros_like(a.data), requires_grad=False)
                         for g, a in zip(out, ins))

        vjp.__name__ = f"vjp of {name}"
        # Its values too, against the same central difference: the create_graph path runs other code
        # (the rules on Variables) than the plain one checked above, and a vjp wrong by a constant
        # factor there is consistent with its own derivatives, so the check below passed it.
        cg = vjp(*[pg.Variable(a) for a in inputs], *[pg.Variable(u, requires_grad=False) for u in us])
        analytic_cg = sum(dot(xp, g.data, v) for g, v in zip(cg, vs))
        assert abs(analytic_cg - numeric) <= atol + rtol * abs(numeric) + slack, (
            f"gradient check failed for {name} (order {order}, the gradient made with create_graph=True): "
            f"analytic {analytic_cg!r} != numeric {numeric!r}")
        check_vjp(vjp, list(inputs) + list(us), order=order - 1, eps=eps, rtol=rtol, atol=atol, seed=seed + 1,
                  extrapolate=extrapolate)


def check_vjp_of_vjp(f: Callable[..., Any], inputs: Sequence[Any], *, eps: float | None = None, rtol: float = 1e-4,
                     atol: float = 1e-6, seed: int = 1) -> None:
    """The vjp built with create_graph, as a function of the output gradient u, passes
    :func:`check_vjp`: the backward graph is differentiable in u (for a linear f, its vjp in u
    is f itself)."""
    inputs = [_data(a) for a in inputs]
    backend = _backend(inputs[0])
    xp, rng = backend.xp, backend.random_generator(seed)
    ys = _as_tuple(f(*[pg.Variable(a) for a in inputs]))
    u0 = [_direction(xp, rng, y.data, f"output {j}") for j, y in enumerate(ys)]

    def vjp(*us: Any) -> tuple:
        xs = [pg.Variable(a) for a in inputs]
        return tuple(pg.grad(list(_as_tuple(f(*xs))), xs, grad_outputs=list(us), create_graph=True))

    vjp.__name__ = f"vjp of {getattr(f, '__name__', repr(f))} in its output gradient"
    check_vjp(vjp, u0, eps=eps, rtol=rtol, atol=atol, seed=seed)

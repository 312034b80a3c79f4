"""Numerical gradient checks over any backend (Array API only).

The check is the random-direction dot-product test: for a function ``f`` with
inputs ``x_i``, a random output direction ``u`` and a random input direction
``v_i``, the analytic ``sum_i <vjp_i(u), v_i>`` must equal the central
difference ``(<u, f(x + eps v)> - <u, f(x - eps v)>) / (2 eps)``. One scalar
comparison checks every input at once; order 2 checks the vjp itself the same
way, through ``create_graph=True``.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from polygrad.core.engine import grad as _grad
from polygrad.core.config import no_backprop_mode
from polygrad.core.dispatch import backend_of_type
from polygrad.core.variable import Variable


def _data(x: Any) -> Any:
    return x._data if isinstance(x, Variable) else x


def _as_tuple(y: Any) -> tuple:
    return tuple(y) if isinstance(y, (tuple, list)) else (y,)


def _vdot(xp: Any, a: Any, b: Any) -> float:
    return float(xp.sum(xp.astype(a, xp.float64) * xp.astype(b, xp.float64)))


def _random_like(backend: Any, x: Any, rng: Any) -> Any:
    return rng.normal(tuple(x.shape), dtype=x.dtype)


def numerical_grad(f: Callable[..., Any], inputs: Sequence[Any], grad_outputs: Sequence[Any], eps: float = 1e-3) -> list:
    """Central-difference gradients of ``sum_j <grad_outputs[j], f(*inputs)[j]>``
    with respect to each input array, element by element (small inputs only)."""
    inputs = [_data(x) for x in inputs]
    xp = backend_of_type(type(inputs[0])).xp
    gys = [_data(g) for g in grad_outputs]

    def value(xs: list) -> float:
        ys = _as_tuple(f(*[Variable(x, requires_grad=False) for x in xs]))
        return sum(_vdot(xp, _data(y), g) for y, g in zip(ys, gys) if g is not None)

    grads = []
    for i, x in enumerate(inputs):
        flat = xp.reshape(xp.asarray(x, copy=True), (-1,))
        g = []
        for k in range(flat.shape[0]):
            orig = flat[k]
            plus = xp.asarray(flat, copy=True)
            plus[k] = orig + eps
            minus = xp.asarray(flat, copy=True)
            minus[k] = orig - eps
            xs_p = list(inputs)
            xs_p[i] = xp.reshape(plus, x.shape)
            xs_m = list(inputs)
            xs_m[i] = xp.reshape(minus, x.shape)
            g.append((value(xs_p) - value(xs_m)) / (2 * eps))
        grads.append(xp.reshape(xp.asarray(g, dtype=x.dtype), x.shape))
    return grads


def check_grads(
    f: Callable[..., Any],
    inputs: Sequence[Any],
    *,
    order: int = 1,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-4,
    seed: int = 0,
    wrt: Sequence[int] | None = None,
) -> None:
    """Check ``f``'s vjp against central differences, by the dot-product test.

    :param f: a function of Variables returning a Variable or a tuple of them.
    :param inputs: arrays (float64 recommended) or Variables.
    :param order: 1 checks first derivatives; 2 also checks the vjp's own
        derivative (through ``create_graph=True``).
    :param wrt: indices of the inputs to differentiate (default: all).
    :raises AssertionError: naming the function, the order, both values and
        each input's analytic gradient norm.
    """
    datas = [_data(x) for x in inputs]
    backend = backend_of_type(type(datas[0]))
    xp = backend.xp
    rng = backend.random_generator(seed)
    wrt = list(range(len(datas))) if wrt is None else list(wrt)

    xs = [Variable(d, requires_grad=i in wrt) for i, d in enumerate(datas)]
    ys = _as_tuple(f(*xs))
    us = [_random_like(backend, _data(y), rng) for y in ys]
    vs = [_random_like(backend, datas[i], rng) for i in wrt]

    def directional(eps_: float) -> float:
        shifted = list(datas)
        for i, v in zip(wrt, vs):
            shifted[i] = datas[i] + eps_ * v
        out = _as_tuple(f(*[Variable(d, requires_grad=False) for d in shifted]))
        return sum(_vdot(xp, _data(y), u) for y, u in zip(out, us))

    numeric = (directional(eps) - directional(-eps)) / (2 * eps)
    gxs = _grad(list(ys), [xs[i] for i in wrt], grad_outputs=list(us), allow_unused=True)
    analytic = sum(_vdot(xp, _data(g), v) for g, v in zip(gxs, vs) if g is not None)
    name = getattr(f, "__name__", repr(f))
    if not abs(analytic - numeric) <= atol + rtol * abs(numeric):
        norms = ", ".join(
            f"input {i}: {'None' if g is None else f'{float(xp.sqrt(xp.sum(_data(g) * _data(g)))):.6g}'}" for i, g in zip(wrt, gxs)
        )
        raise AssertionError(
            f"gradient check failed for {name} (order 1): analytic <vjp(u), v> = {analytic:.10g}, "
            f"numeric = {numeric:.10g} (difference {analytic - numeric:.3g}); gradient norms: {norms}"
        )
    if order > 1:
        def vjp_fn(*args: Any) -> tuple:
            ins = [a if isinstance(a, Variable) and a.requires_grad else Variable(_data(a), requires_grad=True) for a in args]
            full = list(datas)
            for i, a in zip(wrt, ins):
                full[i] = a
            out = _as_tuple(f(*full))
            gs = _grad(list(out), ins, grad_outputs=list(us), create_graph=True, allow_unused=True)
            return tuple(g if g is not None else Variable(xp.zeros_like(_data(a)), requires_grad=False) for g, a in zip(gs, ins))

        vjp_fn.__name__ = f"vjp of {name}"
        check_grads(vjp_fn, [datas[i] for i in wrt], order=order - 1, eps=eps, atol=atol, rtol=rtol, seed=seed + 1)


def check_backward(
    func: Callable[..., Any],
    x_data: Any,
    y_grad: Any = None,
    *,
    eps: float = 1e-3,
    atol: float = 1e-5,
    rtol: float = 1e-4,
) -> None:
    """Chainer's check: ``func``'s backward against element-wise central
    differences. ``x_data`` is an array or a tuple of arrays; ``y_grad`` the
    output gradient(s) (random when None). Failure messages show where the
    gradients differ."""
    xs = tuple(x_data) if isinstance(x_data, (tuple, list)) else (x_data,)
    xs = tuple(_data(x) for x in xs)
    backend = backend_of_type(type(xs[0]))
    xp = backend.xp
    vs = [Variable(x, requires_grad=True) for x in xs]
    ys = _as_tuple(func(*vs))
    if y_grad is None:
        rng = backend.random_generator(0)
        gys = [rng.normal(tuple(_data(y).shape), dtype=_data(y).dtype) for y in ys]
    else:
        gys = [_data(g) for g in _as_tuple(y_grad)]
    analytic = _grad(list(ys), vs, grad_outputs=gys, allow_unused=True)
    numeric = numerical_grad(func, xs, gys, eps=eps)
    for i, (a, n) in enumerate(zip(analytic, numeric)):
        a = xp.zeros_like(n) if a is None else _data(a)
        bad = xp.abs(a - n) > atol + rtol * xp.abs(n)
        if bool(xp.any(bad)):
            where = xp.nonzero(xp.reshape(bad, (-1,)))[0]
            k = int(where[0])
            fa = xp.reshape(a, (-1,))
            fn = xp.reshape(n, (-1,))
            raise AssertionError(
                f"check_backward failed for input {i} of {getattr(func, '__name__', func)} (shape {tuple(n.shape)}): "
                f"{int(where.shape[0])} of {int(fn.shape[0])} elements differ; first at flat index {k}: "
                f"analytic {float(fa[k]):.8g}, numeric {float(fn[k]):.8g}\nanalytic:\n{a}\nnumeric:\n{n}"
            )


def check_double_backward(
    func: Callable[..., Any],
    x_data: Any,
    y_grad: Any = None,
    *,
    eps: float = 1e-3,
    atol: float = 1e-4,
    rtol: float = 1e-3,
) -> None:
    """Check the derivative of ``func``'s vjp (second order) by element-wise
    central differences."""
    xs = tuple(x_data) if isinstance(x_data, (tuple, list)) else (x_data,)
    xs = tuple(_data(x) for x in xs)
    backend = backend_of_type(type(xs[0]))
    rng = backend.random_generator(1)
    with no_backprop_mode():
        probe = _as_tuple(func(*[Variable(x, requires_grad=False) for x in xs]))
    gys = [rng.normal(tuple(_data(y).shape), dtype=_data(y).dtype) for y in probe] if y_grad is None else [_data(g) for g in _as_tuple(y_grad)]

    def vjp(*args: Any) -> tuple:
        ins = [Variable(_data(a), requires_grad=True) if not (isinstance(a, Variable) and a.requires_grad) else a for a in args]
        ys = _as_tuple(func(*ins))
        gs = _grad(list(ys), ins, grad_outputs=gys, create_graph=True, allow_unused=True)
        xp = backend.xp
        return tuple(g if g is not None else Variable(xp.zeros_like(_data(a)), requires_grad=False) for g, a in zip(gs, ins))

    vjp.__name__ = f"vjp of {getattr(func, '__name__', func)}"
    check_backward(vjp, xs, None, eps=eps, atol=atol, rtol=rtol)

"""The fft extension: forward against the backend's own functions, vjps by a dot-product
test that covers complex inputs and outputs, on numpy and array_api_strict.

The convention checked (PyTorch's): for L = Re<u, f(x)>, the gradient with respect to
x = a + ib is dL/da + i dL/db, so Re<grad, v> is the derivative of L along v. A real
input gets a real gradient. Second derivatives: the vjp built with create_graph is
checked as a function of the output gradient (its vjp must be the forward map), and
real-to-real chains of transforms are checked to order 2 with ``check_grads``.
"""

from __future__ import annotations

import inspect
import zlib

import numpy as np
import pytest

import polygrad as pg
import polygrad.array_api  # noqa: F401
from polygrad.ops import GRAPH_OPS, REGISTRY
from polygrad.ops import fft as F
from polygrad.testing import check_grads

from conftest import arr
from conftest import to_np, assert_close


def _random(xp, shape, complex_, r):
    v = r.standard_normal(shape)
    if complex_:
        v = v + 1j * r.standard_normal(shape)
    return arr(xp, v, "complex128" if complex_ else "float64")


def make_input(xp, spec, seed):
    """('n', shape) real normal, ('c', shape) complex normal."""
    kind, shape = spec
    return _random(xp, shape, kind == "c", np.random.default_rng(seed))


def _as_tuple(y):
    return tuple(y) if isinstance(y, (tuple, list)) else (y,)


def _re_dot(a, b):
    return float(np.real(np.vdot(to_np(a), to_np(b))))


def check_vjp(f, inputs, order=1, seed=0, eps=1e-4, rtol=1e-6, atol=1e-8):
    """Re<vjp(u), v> equals the central difference of Re<u, f(x + t v)>, for real or complex x and f(x);
    order 2 checks the vjp (built with create_graph, u fixed) as a function of x the same way."""
    xp = pg.Variable(inputs[0]).xp
    r = np.random.default_rng(seed)
    is_c = lambda a: xp.isdtype(a.dtype, "complex floating")  # noqa: E731
    xs = [pg.Variable(a) for a in inputs]
    ys = _as_tuple(f(*xs))
    us = [_random(xp, tuple(y.shape), is_c(y), r) for y in ys]
    vs = [_random(xp, tuple(a.shape), is_c(a), r) for a in inputs]

    def value(t):
        out = _as_tuple(f(*[pg.Variable(a + t * v, requires_grad=False) for a, v in zip(inputs, vs)]))
        return sum(_re_dot(u, y) for u, y in zip(us, out))

    numeric = (value(eps) - value(-eps)) / (2 * eps)
    gs = pg.grad(list(ys), xs, grad_outputs=us, allow_unused=True)
    for g, a in zip(gs, inputs):
        assert g is None or (g.dtype == a.dtype and tuple(g.shape) == tuple(a.shape)), "gradient of the wrong dtype or shape"
    analytic = sum(_re_dot(g, v) for g, v in zip(gs, vs) if g is not None)
    assert abs(analytic - numeric) <= atol + rtol * abs(numeric), f"order {order}: analytic {analytic!r} != numeric {numeric!r}"
    if order > 1:
        def vjp(*args):
            ins = [a if a.requires_grad else pg.Variable(a.data) for a in args]
            out = pg.grad(list(_as_tuple(f(*ins))), ins, grad_outputs=us, create_graph=True, allow_unused=True)
            return tuple(g if g is not None else pg.Variable(xp.zeros_like(a.data), requires_grad=False) for g, a in zip(out, ins))

        check_vjp(vjp, inputs, order - 1, seed + 1, eps, rtol, atol)


def check_vjp_of_vjp(f, inputs, seed=1):
    """The vjp built with create_graph, as a function of the output gradient u, passes check_vjp."""
    xp = pg.Variable(inputs[0]).xp
    r = np.random.default_rng(seed)
    ys = _as_tuple(f(*[pg.Variable(a) for a in inputs]))
    u0 = [_random(xp, tuple(y.shape), xp.isdtype(y.dtype, "complex floating"), r) for y in ys]

    def vjp(*us):
        xs = [pg.Variable(a) for a in inputs]
        return tuple(pg.grad(list(_as_tuple(f(*xs))), xs, grad_outputs=list(us), create_graph=True))

    check_vjp(vjp, u0, seed=seed)


class Case:
    """One row: ``fn(xp, var)`` with polygrad, ``ref(xp, array)`` with the backend."""

    def __init__(self, op, name, fn, ref, inputs):
        self.op, self.name, self.fn, self.ref, self.inputs = op, name, fn, ref, inputs

    @property
    def id(self):
        return f"{self.op}-{self.name}"

    def arrays(self, xp):
        return [make_input(xp, s, zlib.crc32(f"{self.id}/{i}".encode())) for i, s in enumerate(self.inputs)]


def _c(name, label, spec, **kw):
    """A case calling ``F.<name>(x, **kw)`` against ``xp.fft.<name>(a, **kw)``."""
    return Case(f"fft_{name}", label, lambda xp, x: getattr(F, name)(x, **kw), lambda xp, a: getattr(xp.fft, name)(a, **kw), [spec])


CASES = [
    _c("fft", "default", ("c", (4,))),
    _c("fft", "n_pads", ("c", (4,)), n=6),
    _c("fft", "n_crops_axis_0", ("c", (5, 2)), n=3, axis=0),
    _c("fft", "ortho", ("c", (2, 3)), norm="ortho"),
    _c("fft", "forward", ("c", (3,)), norm="forward"),
    _c("ifft", "default", ("c", (5,))),
    _c("ifft", "n_crops_forward", ("c", (5,)), n=3, norm="forward"),
    _c("ifft", "n_pads_ortho", ("c", (2, 3)), n=4, norm="ortho"),
    _c("fftn", "default", ("c", (2, 3))),
    _c("fftn", "s_pads", ("c", (2, 3)), s=(3, 4), axes=(0, 1)),
    _c("fftn", "axes_0", ("c", (2, 3)), axes=(0,)),
    _c("fftn", "s_crops_reordered_axes_ortho", ("c", (3, 4)), s=(2, 2), axes=(-1, -2), norm="ortho"),
    _c("ifftn", "default", ("c", (2, 3))),
    _c("ifftn", "s_forward", ("c", (2, 3)), s=(3, 2), axes=(0, 1), norm="forward"),
    _c("rfft", "odd", ("n", (5,))),
    _c("rfft", "even", ("n", (4,))),
    _c("rfft", "n_pads", ("n", (4,)), n=7),
    _c("rfft", "n_crops_ortho", ("n", (5,)), n=4, norm="ortho"),
    _c("rfft", "axis_0_forward", ("n", (4, 2)), axis=0, norm="forward"),
    _c("irfft", "default_even", ("c", (3,))),
    _c("irfft", "n_odd", ("c", (3,)), n=5),
    _c("irfft", "n_pads", ("c", (3,)), n=8),
    _c("irfft", "n_crops_axis_0_forward", ("c", (4, 2)), n=3, axis=0, norm="forward"),
    _c("irfft", "ortho", ("c", (2, 4)), norm="ortho"),
    _c("rfftn", "default", ("n", (2, 4))),
    _c("rfftn", "s_pads_odd", ("n", (2, 4)), s=(3, 5), axes=(0, 1)),
    _c("rfftn", "axes_0_ortho", ("n", (3, 2)), axes=(0,), norm="ortho"),
    _c("rfftn", "two_of_three_axes", ("n", (3, 4, 2)), axes=(0, 1)),
    _c("irfftn", "default", ("c", (2, 3))),
    _c("irfftn", "s_odd", ("c", (2, 3)), s=(3, 5), axes=(0, 1)),
    _c("irfftn", "axes_0_forward", ("c", (3, 2)), axes=(0,), norm="forward"),
    _c("hfft", "default", ("c", (3,))),
    _c("hfft", "n_odd", ("c", (3,)), n=5),
    _c("hfft", "n_crops_ortho", ("c", (4,)), n=2, norm="ortho"),
    _c("hfft", "axis_0_forward", ("c", (3, 2)), axis=0, norm="forward"),
    _c("ihfft", "odd", ("n", (5,))),
    _c("ihfft", "even_n_pads", ("n", (4,)), n=6),
    _c("ihfft", "forward", ("n", (2, 4)), norm="forward"),
    _c("fftshift", "default", ("n", (5,))),
    _c("fftshift", "axes_1", ("n", (2, 3)), axes=(1,)),
    _c("fftshift", "complex_axis_0", ("c", (3, 2)), axes=0),
    _c("ifftshift", "default", ("n", (2, 5))),
    _c("ifftshift", "complex_axes_0", ("c", (4, 3)), axes=(0,)),
]
IDS = [c.id for c in CASES]

#: numpy also takes real input where the standard asks for complex: the gradient is then real.
REAL_INPUT = [
    _c("fft", "real_input", ("n", (5,))),
    _c("ifft", "real_input_n_pads", ("n", (4,)), n=6),
    _c("fftn", "real_input", ("n", (2, 3))),
    _c("ifftn", "real_input_ortho", ("n", (2, 3)), norm="ortho"),
    _c("irfft", "real_input", ("n", (3,))),
    _c("irfftn", "real_input", ("n", (2, 3))),
    _c("hfft", "real_input", ("n", (3,))),
]


# ---------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_forward_matches_backend(xp, case):
    """The transform's value equals the backend's own function on the same array."""
    arrays = case.arrays(xp)
    assert_close(case.fn(xp, *[pg.Variable(a) for a in arrays]), case.ref(xp, *arrays))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_vjp_matches_numerical(xp, case):
    """The vjp (the adjoint transform) passes the complex dot-product test; real inputs get real gradients."""
    check_vjp(lambda *vs: case.fn(xp, *vs), case.arrays(xp))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_vjp_of_vjp_is_the_forward_map(xp, case):
    """With create_graph, the vjp is itself differentiable (in the output gradient)."""
    check_vjp_of_vjp(lambda *vs: case.fn(xp, *vs), case.arrays(xp))


@pytest.mark.parametrize("case", REAL_INPUT, ids=[c.id for c in REAL_INPUT])
def test_real_input_numpy(case):
    """On numpy, real input to the complex transforms: right value, a real gradient, twice differentiable."""
    with pg.using_backend("numpy") as b:
        xp = b.xp
        arrays = case.arrays(xp)
        assert_close(case.fn(xp, *[pg.Variable(a) for a in arrays]), case.ref(xp, *arrays))
        check_vjp(lambda *vs: case.fn(xp, *vs), arrays)
        check_vjp_of_vjp(lambda *vs: case.fn(xp, *vs), arrays)


def test_every_fft_op_has_a_case():
    """Every differentiable fft row of REGISTRY has a case."""
    ours = {n for n, op in REGISTRY.items() if op.differentiable and n.startswith("fft_")}
    covered = {c.op for c in CASES}
    assert ours - covered == set()
    assert len(set(IDS)) == len(IDS), "duplicate case ids"


# ---------------------------------------------------------------------------
# Second order through chains of transforms (real to real)
# ---------------------------------------------------------------------------
CHAINS = {
    "rfft_fft_ifft_irfft": lambda x: x * F.irfft(F.ifft(F.fft(F.rfft(x * x), norm="ortho")), n=x.shape[-1]),
    "ihfft_hfft": lambda x: x * F.hfft(F.ihfft(x * x), n=x.shape[-1]),
    "rfftn_fftn_ifftn_irfftn": lambda x: x * F.irfftn(F.ifftn(F.fftn(F.rfftn(x * x))), s=tuple(x.shape), axes=(0, 1)),
    "shifts": lambda x: x * F.fftshift(F.ifftshift(x * x, axes=0)),
}


@pytest.mark.parametrize("n", [5, 6])
@pytest.mark.parametrize("name", list(CHAINS))
def test_chain_second_order(xp, name, n):
    """A nonlinear real function built on transforms: gradients to order 2 against central differences."""
    x = make_input(xp, ("n", (2, n) if "fftn" in name else (n,)), n)
    check_grads(CHAINS[name], [x], order=2)


def test_real_input_chain_second_order_numpy():
    """On numpy, a real signal through fft (real part of the adjoint) differentiates twice."""
    with pg.using_backend("numpy") as b:
        x = make_input(b.xp, ("n", (6,)), 0)
        check_grads(lambda v: v * F.irfft(F.fft(v * v)[:4], n=6), [x], order=2)


def test_rfft_gradient_value(xp):
    """d/dx sum(Re rfft(x)) for x of length 4: the real parts of the kept bins' basis (by hand)."""
    x = pg.Variable(xp.zeros((4,), dtype=xp.float64))
    F.rfft(x).backward(xp.asarray([1.0, 1.0, 1.0], dtype=xp.complex128))
    # Re sum_k X_k = sum_t x_t (1 + cos(pi t / 2) + cos(pi t))
    assert_close(x.grad, np.array([3.0, 0.0, 1.0, 0.0]))


# ---------------------------------------------------------------------------
# Frequencies: creation on the current backend, no gradient
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["fftfreq", "rfftfreq"])
def test_frequencies_match_backend(xp, name):
    """fftfreq / rfftfreq equal the backend's, in the requested dtype, and never require grad."""
    y = getattr(F, name)(5, d=0.5)
    assert not y.requires_grad
    assert_close(y, getattr(xp.fft, name)(5, d=0.5))
    assert_close(getattr(F, name)(4, dtype=xp.float32), getattr(xp.fft, name)(4, dtype=xp.float32))


@pytest.mark.parametrize("backend_name", ["numpy", "array_api_strict"])
def test_frequencies_create_on_the_current_backend(backend_name):
    """With no array input, fftfreq creates on the current backend."""
    with pg.using_backend(backend_name) as b:
        y = F.fftfreq(3)
        assert isinstance(y.data, type(b.xp.asarray(0.0)))


# ---------------------------------------------------------------------------
# The API
# ---------------------------------------------------------------------------
def _plain(fn):
    """A signature without annotations (array_api_strict annotates, polygrad does not)."""
    sig = inspect.signature(fn)
    params = [p.replace(annotation=inspect.Parameter.empty) for p in sig.parameters.values()]
    return sig.replace(parameters=params, return_annotation=inspect.Signature.empty)


@pytest.mark.parametrize("name", F.__all__)
def test_signature_matches_the_standard(name):
    """Each function has array_api_strict's signature (names, kinds, defaults)."""
    import array_api_strict

    assert _plain(getattr(F, name)) == _plain(getattr(array_api_strict.fft, name))


def test_all_lists_the_extension():
    """``__all__`` is exactly the standard's fft extension."""
    assert sorted(F.__all__) == sorted(pg.array_api.FFT)


@pytest.mark.parametrize("name", F.__all__)
def test_rows_are_reached_by_op_name(name):
    """The row of ``name`` is ``fft_<name>``, and rules reach the function as ``o.fft_<name>``."""
    assert f"fft_{name}" in REGISTRY
    assert getattr(GRAPH_OPS, f"fft_{name}") is getattr(F, name)


@pytest.mark.parametrize("name", [n for n in F.__all__ if not n.endswith("freq")])
def test_namespace_fft_is_differentiable(xp, name):
    """``x.__array_namespace__().fft.<name>`` is polygrad's function (with a gradient)."""
    ns = pg.Variable(xp.ones((2,), dtype=xp.float64)).__array_namespace__()
    assert getattr(ns.fft, name) is getattr(F, name)


def test_namespace_fftfreq_creates_variables(xp):
    """``ns.fft.fftfreq`` returns a Variable of the namespace's backend."""
    ns = pg.Variable(xp.ones((2,), dtype=xp.float64)).__array_namespace__()
    y = ns.fft.fftfreq(4)
    assert isinstance(y, pg.Variable)
    assert_close(y, xp.fft.fftfreq(4))

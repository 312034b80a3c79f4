"""The fft extension beyond the op table: second order through chains of
transforms, a gradient by hand, NumPy's real input to the complex transforms,
the frequencies (creation, no gradient) and the API (signatures as
array_api_strict's, names, the Variable namespace), on numpy and
array_api_strict. Each transform's forward value, gradient (the complex
dot-product test) and vjp in its output gradient are cases of the op table
(``polygrad_conformance/cases_extensions.py``, run by test_op_cases.py).
"""

from __future__ import annotations

import numpy as np
import pytest

import polygrad as pg
import polygrad.array_api  # noqa: F401
from polygrad.ops import GRAPH_OPS, REGISTRY
from polygrad.ops import fft as F
from polygrad.testing import check_grads
from polygrad_conformance.gradcheck import check_vjp, check_vjp_of_vjp

from conftest import assert_close, plain_signature, sample

#: The tolerances of the transforms' own cases in the op table.
TOL = {"eps": 1e-4, "rtol": 1e-6, "atol": 1e-8}


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
    x = sample(xp, (2, n) if "fftn" in name else (n,), "any", n)
    check_grads(CHAINS[name], [x], order=2)


def test_real_input_chain_second_order_numpy():
    """On numpy, a real signal through fft (real part of the adjoint) differentiates twice."""
    with pg.using_backend("numpy") as b:
        x = sample(b.xp, (6,), "any", 0)
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
@pytest.mark.parametrize("name", F.__all__)
def test_signature_matches_the_standard(name):
    """Each function has array_api_strict's signature (names, kinds, defaults)."""
    import array_api_strict

    assert plain_signature(getattr(F, name)) == plain_signature(getattr(array_api_strict.fft, name))


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


# ---------------------------------------------------------------------------
# NumPy also takes real input where the standard asks for complex
# ---------------------------------------------------------------------------
REAL_INPUT = {
    "fft": ((5,), {}), "ifft_n_pads": ((4,), {"n": 6}), "fftn": ((2, 3), {}), "ifftn_ortho": ((2, 3), {"norm": "ortho"}),
    "irfft": ((3,), {}), "irfftn": ((2, 3), {}), "hfft": ((3,), {}),
}


@pytest.mark.parametrize("name", list(REAL_INPUT))
def test_real_input_numpy(name):
    """On numpy, real input to the complex transforms: right value, a real gradient, twice differentiable."""
    shape, kw = REAL_INPUT[name]
    fn = getattr(F, name.split("_")[0])
    with pg.using_backend("numpy") as b:
        xp = b.xp
        a = sample(xp, shape, "any", name)
        assert_close(fn(pg.Variable(a), **kw), getattr(xp.fft, fn.__name__)(a, **kw))
        check_vjp(lambda v: fn(v, **kw), [a], **TOL)
        check_vjp_of_vjp(lambda v: fn(v, **kw), [a], **TOL)


def test_a_repeated_axis_whose_length_changes_is_refused_in_backward():
    """fftn(x, s=(3, 5), axes=(0, 0)) (numpy transforms axis 0 twice, at lengths 3 then 5) had a
    gradient wrong by as much as its size, rfftn/irfftn with a repeated axis one that failed with
    a broadcasting error: refused, naming the op. Repeated axes keeping their length stay right."""
    x = pg.Variable(np.arange(8.0).reshape(4, 2) + 1j)
    for y in (pg.fft.fftn(x, s=(3, 5), axes=(0, 0)), pg.fft.ifftn(x, s=(3, 6), axes=(0, 0)),
              pg.fft.irfftn(x, axes=(0, 0))):
        with pytest.raises(NotImplementedError, match="along a repeated axis"):
            pg.sum(pg.real(y)).backward()
    r = pg.Variable(np.arange(12.0).reshape(6, 2))
    with pytest.raises(NotImplementedError, match="fft_rfftn along a repeated axis"):
        pg.sum(pg.real(pg.fft.rfftn(r, axes=(0, 0)))).backward()
    check_grads(lambda z: pg.real(pg.fft.fftn(z, axes=(0, 0))), [np.arange(8.0).reshape(4, 2) + 0.5j])
    check_grads(lambda z: pg.fft.fftn(z, s=(3, 3), axes=(0, 0)), [np.arange(10.0).reshape(5, 2) + 0.3j])


# ---------------------------------------------------------------------------
# s without axes: the last len(s) axes, on every backend
# ---------------------------------------------------------------------------
S_WITHOUT_AXES = {"fftn": (4, 4), "ifftn": (3, 6), "rfftn": (3, 6), "irfftn": (4, 6)}


@pytest.mark.parametrize("backend", ["numpy", "dask", "array_api_strict"])
@pytest.mark.parametrize("name", list(S_WITHOUT_AXES))
def test_s_without_axes_transforms_the_last_axes(backend, name):
    """fftn(x, s) with no axes transforms the last len(s) axes, as the standard and numpy say (dask
    took the leading ones: other values, sometimes another shape, and a gradient of the other transform)."""
    if backend == "dask":
        pytest.importorskip("dask.array")
    s = S_WITHOUT_AXES[name]
    a = np.random.default_rng(0).standard_normal((4, 5, 4))
    if name != "rfftn":
        a = a + 1j * np.random.default_rng(1).standard_normal((4, 5, 4))
    fn = getattr(F, name)
    with pg.using_backend(backend) as b:
        x = b.xp.asarray(a)
        y = fn(pg.Variable(x), s=s).data
        assert_close(np.asarray(y) if backend == "dask" else y, getattr(np.fft, name)(a, s=s, axes=(1, 2)))
        check_vjp(lambda v: fn(v, s=s), [x], **TOL)

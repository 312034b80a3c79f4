"""Complex gradients of the element-wise and array functions, in PyTorch's
convention (the gradient of z = a + ib is dL/da + i dL/db; a real input gets a
real gradient), checked by the complex dot-product test, on numpy and
array_api_strict. Linear algebra's and the fft's complex gradients live in
test_ops_linalg.py and test_ops_fft.py.
"""

from __future__ import annotations

import numpy as np
import pytest

import polygrad as pg
from polygrad import ops as P
from polygrad.testing import check_grads
from polygrad_conformance.gradcheck import check_vjp

from conftest import arr, assert_close, sample


def check_complex_grads(f, inputs):
    """The complex dot-product test to second order, at the tolerances of these functions."""
    check_vjp(f, inputs, order=2, eps=1e-6, rtol=1e-5, atol=1e-6)


COMPLEX_UNARY = ["negative", "positive", "square", "reciprocal", "exp", "expm1", "log", "log1p", "log2", "log10",
                 "sqrt", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh",
                 "atanh", "real", "imag", "conj", "abs"]


@pytest.mark.parametrize("name", COMPLEX_UNARY)
def test_complex_unary_value_and_gradient(xp, name):
    """On complex128 (off the branch cuts): the backend's value, and gradients (order 2)."""
    z = sample(xp, (2, 3), "complex_off_cuts", name)
    fn = getattr(pg.ops, name)
    assert_close(fn(pg.Variable(z)), getattr(xp, name)(z))
    check_complex_grads(fn, [z])


COMPLEX_BINARY = {
    "add": lambda a, b: a + b, "subtract": lambda a, b: a - b, "multiply": lambda a, b: a * b,
    "divide": lambda a, b: a / b, "pow": lambda a, b: a ** b,
    "pow_scalar_exponent": lambda a, b: a ** 3 * b ** 0.5,
    "pow_scalar_base": lambda a, b: 2.0 ** a + (1 + 1j) ** b,
    "where": lambda a, b: pg.where(pg.real(a) > 0, a * b, b),
}


@pytest.mark.parametrize("name", sorted(COMPLEX_BINARY))
def test_complex_binary_gradient(xp, name):
    """Arithmetic on two complex arrays (broadcast): gradients to order 2."""
    a, b = sample(xp, (2, 3), "complex_off_cuts", name + "a"), sample(xp, (3,), "complex_off_cuts", name + "b")
    check_complex_grads(COMPLEX_BINARY[name], [a, b])


MIXED = {
    "multiply": lambda a, b: a * b, "divide": lambda a, b: b / a, "add": lambda a, b: a + b,
    "pow_real_base": lambda a, b: a ** b, "pow_complex_base": lambda a, b: b ** a,
    "abs_real_part": lambda a, b: pg.abs(a * b) * a + pg.real(b) * a,
}


@pytest.mark.parametrize("name", sorted(MIXED))
def test_real_and_complex_operands_gradient(xp, name):
    """A real operand of a complex result gets the real part of its gradient (order 2)."""
    a, b = sample(xp, (3,), "pos", name + "a"), sample(xp, (2, 3), "complex_off_cuts", name + "b")
    check_complex_grads(MIXED[name], [a, b])


def test_complex_gradient_of_squared_modulus_is_2z(xp):
    """L = sum |z|**2 has gradient 2z (PyTorch's convention), through abs and through z * conj(z)."""
    z = pg.Variable(arr(xp, [1 + 2j, -3 + 0.5j], "complex128"))
    (g1,) = pg.grad(pg.sum(pg.abs(z) ** 2), [z])
    (g2,) = pg.grad(pg.sum(pg.real(z * pg.conj(z))), [z])
    assert_close(g1, np.array([2 + 4j, -6 + 1j]))
    assert_close(g2, np.array([2 + 4j, -6 + 1j]))


def test_complex_gradients_of_real_and_imag(xp):
    """d sum(real(z)) = 1 and d sum(imag(z)) = i."""
    z = pg.Variable(arr(xp, [1 + 2j, -3 + 0.5j], "complex128"))
    (gr,) = pg.grad(pg.sum(pg.real(z)), [z])
    (gi,) = pg.grad(pg.sum(pg.imag(z)), [z])
    assert_close(gr, np.array([1 + 0j, 1 + 0j]))
    assert_close(gi, np.array([1j, 1j]))


def test_astype_real_to_complex_gradient_is_real_part(xp):
    """astype(x, complex128): x's gradient is the real part, in x's dtype."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    y = pg.astype(x, xp.complex128) * arr(xp, [1j, 2 + 1j], "complex128")
    (g,) = pg.grad(pg.sum(pg.imag(y)), [x])
    assert_close(g, np.array([1.0, 1.0]))
    check_grads(lambda v: pg.imag(pg.astype(v, xp.complex128) * arr(xp, [1j, 2 + 1j], "complex128")) * v,
                [arr(xp, [1.0, 2.0])], order=2)


@pytest.mark.parametrize("name", ["prod", "cumulative_prod"])
def test_complex_gradient_of_products_is_refused_clearly(name):
    """prod / cumulative_prod of complex input: NotImplementedError naming the op, not a wrong gradient."""
    x = pg.Variable(np.array([1.0 + 2.0j, 3.0 - 1.0j]))
    y = getattr(P, name)(x)
    with pytest.raises(NotImplementedError, match=f"gradient of {name} for complex"):
        pg.real(pg.sum(y)).backward()


def test_linear_ops_carry_complex_gradients():
    """Real linear rows (concat, flip, take) route complex gradients unchanged (their adjoint is the transpose)."""
    x = pg.Variable(np.array([1.0 + 2.0j, 3.0 - 1.0j]))
    y = P.take(P.flip(P.concat([x, x])), np.array([0, 1, 1]))  # [x1, x0, x0]
    y.backward(np.array([1.0, 1.0j, 2.0]))
    np.testing.assert_allclose(x.grad, np.array([2.0 + 1.0j, 1.0]))


def test_a_python_bool_base_or_exponent_has_a_gradient():
    """True ** z for a complex z computed, then its backward failed inside pow's rule ("'bool'
    object has no attribute 'astype'"): a bool is the number 1 or 0."""
    z = pg.Variable(np.array([1 + 1j, 2 - 1j]))
    pg.sum(pg.real(True ** z)).backward()
    np.testing.assert_array_equal(z.grad, [0, 0])
    x = pg.Variable(np.array([2.0, 3.0]))
    pg.sum(x ** True).backward()
    np.testing.assert_array_equal(x.grad, [1.0, 1.0])

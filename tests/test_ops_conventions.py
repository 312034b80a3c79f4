"""Gradient conventions the op table cannot show, on numpy and array_api_strict:
ties, kinks and zeros (where a gradient is a choice, polygrad's is checked by
value, never nan), and identities between ops. Linear algebra's and the fft's
own conventions live in test_ops_linalg.py and test_ops_fft.py.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import polygrad as pg
import polygrad.functions as F
from polygrad import ops as P
from polygrad.testing import check_grads

from conftest import arr, assert_close, sample

# ---------------------------------------------------------------------------
# Ties: max, min, maximum, minimum, sort, unique
# ---------------------------------------------------------------------------


def test_max_ties_share_gradient_equally(xp):
    """max over tied maxima splits the gradient equally among them."""
    x = pg.Variable(arr(xp, [[1.0, 3.0, 3.0], [2.0, 0.0, 2.0]]))
    pg.sum(pg.max(x, axis=1) * arr(xp, [1.0, 10.0])).backward()
    assert_close(x.grad, np.array([[0.0, 0.5, 0.5], [5.0, 0.0, 5.0]]))


def test_min_ties_share_gradient_equally(xp):
    """min over tied minima splits the gradient equally among them."""
    x = pg.Variable(arr(xp, [1.0, -1.0, -1.0, -1.0]))
    pg.min(x).backward()
    assert_close(x.grad, np.array([0.0, 1.0, 1.0, 1.0]) / 3)


def test_maximum_tie_sends_gradient_to_first(xp):
    """maximum(x, y) at x == y gives the whole gradient to x (documented tie rule)."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    y = pg.Variable(arr(xp, [1.0, 3.0]))
    pg.sum(pg.maximum(x, y)).backward()
    assert_close(x.grad, np.array([1.0, 0.0]))
    assert_close(y.grad, np.array([0.0, 1.0]))


def test_minimum_tie_sends_gradient_to_first(xp):
    """minimum(x, y) at x == y gives the whole gradient to x, like maximum."""
    x, y = pg.Variable(arr(xp, [1.0, 2.0])), pg.Variable(arr(xp, [1.0, 0.0]))
    pg.sum(pg.minimum(x, y)).backward()
    assert_close(x.grad, np.array([1.0, 0.0]))
    assert_close(y.grad, np.array([0.0, 1.0]))


def test_sort_routes_gradient_to_original_positions(xp):
    """sort's gradient goes back to where each sorted value came from."""
    x = pg.Variable(arr(xp, [3.0, 1.0, 2.0]))
    P.sort(x).backward(arr(xp, [10.0, 20.0, 30.0]))
    assert_close(x.grad, np.array([30.0, 10.0, 20.0]))


def test_sort_ties_each_get_one_position(xp):
    """Tied elements each get the gradient of one sorted position (argsort's order)."""
    x = pg.Variable(arr(xp, [2.0, 1.0, 2.0]))
    P.sort(x, descending=True).backward(arr(xp, [10.0, 20.0, 30.0]))
    assert_close(x.grad, np.array([10.0, 30.0, 20.0]))


def test_unique_values_ties_share_the_gradient(xp):
    """Equal elements share their value's gradient equally (as max over ties)."""
    x = pg.Variable(arr(xp, [[2.0, 1.0], [2.0, 2.0]]))
    u = P.unique_values(x)
    assert_close(u, np.array([1.0, 2.0]))
    u.backward(arr(xp, [10.0, 60.0]))
    assert_close(x.grad, np.array([[20.0, 10.0], [20.0, 20.0]]))


def test_unique_all_other_outputs_carry_no_gradient(xp):
    """unique_all: values require grad; indices, inverse_indices and counts do not."""
    x = pg.Variable(arr(xp, [3.0, 1.0, 3.0]))
    out = P.unique_all(x)
    assert out.values.requires_grad
    assert [o.requires_grad for o in out[1:]] == [False, False, False]
    assert_close(out.counts, np.array([1, 2]))


# ---------------------------------------------------------------------------
# Kinks and zeros: the gradient is a number, never nan
# ---------------------------------------------------------------------------


def test_relu_and_abs_gradient_at_zero_is_zero(xp):
    """relu'(0) = 0 and abs'(0) = 0."""
    x = pg.Variable(arr(xp, [0.0, 2.0, -2.0]))
    pg.sum(F.relu(x)).backward()
    assert_close(x.grad, np.array([0.0, 1.0, 0.0]))
    x.cleargrad()
    pg.sum(pg.abs(x)).backward()
    assert_close(x.grad, np.array([0.0, 1.0, -1.0]))


def test_abs_gradient_at_zero_is_zero_real_and_complex(xp):
    """abs'(0) = 0 for real and complex inputs (no NaN)."""
    x = pg.Variable(arr(xp, [0.0, -2.0]))
    pg.sum(pg.abs(x)).backward()
    assert_close(x.grad, np.array([0.0, -1.0]))
    z = pg.Variable(arr(xp, [0j, 3 + 4j], "complex128"))
    pg.sum(pg.abs(z)).backward()
    assert_close(z.grad, np.array([0j, 0.6 + 0.8j]))


def test_pow_exponent_zero_has_zero_gradient_at_zero(xp):
    """d/dx x**0 is 0 everywhere, including at x = 0 (no 0 * inf = nan)."""
    x = pg.Variable(arr(xp, [0.0, 2.0]))
    pg.sum(x ** 0).backward()
    assert_close(x.grad, np.array([0.0, 0.0]))


def test_pow_exponent_gradient_is_zero_where_base_is_zero(xp):
    """d/dy 0**y = 0 (not NaN), for an array base and a Python scalar base."""
    y = pg.Variable(arr(xp, [2.0, 0.5]))
    pg.sum(pg.pow(arr(xp, [0.0, 4.0]), y)).backward()
    assert_close(y.grad, np.array([0.0, 2.0 * math.log(4.0)]))
    y.cleargrad()
    pg.sum(pg.pow(0.0, y)).backward()
    assert_close(y.grad, np.array([0.0, 0.0]))


@pytest.mark.parametrize("name", ["hypot", "atan2"])
def test_hypot_and_atan2_gradient_at_origin_is_zero(xp, name):
    """At (0, 0) the gradient is 0 (not NaN), and finite at second order."""
    x, y = pg.Variable(arr(xp, [0.0, 3.0])), pg.Variable(arr(xp, [0.0, 4.0]))
    gx, gy = pg.grad(pg.sum(getattr(pg.ops, name)(x, y)), [x, y], create_graph=True)
    want = {"hypot": ([0.0, 0.6], [0.0, 0.8]), "atan2": ([0.0, 0.16], [0.0, -0.12])}[name]
    assert_close(gx, np.array(want[0]))
    assert_close(gy, np.array(want[1]))
    (h,) = pg.grad(pg.sum(gx + gy), [x])
    assert bool(xp.all(xp.isfinite(h.data)))


def test_copysign_gradient_is_sign_agreement_and_none_for_sign_source(xp):
    """d copysign(x, y)/dx is +1 where the signs agree and -1 where not; y gets no gradient."""
    x, y = pg.Variable(arr(xp, [2.0, -2.0, 3.0, -0.0])), pg.Variable(arr(xp, [1.0, 1.0, -1.0, -1.0]))
    pg.sum(pg.copysign(x, y)).backward()
    assert_close(x.grad, np.array([1.0, -1.0, -1.0, 1.0]))
    assert y.grad is None


def test_nextafter_gradient_is_one_for_x1_and_none_for_x2(xp):
    """nextafter(x1, x2) moves x1 by one ulp: gradient 1 w.r.t. x1, none w.r.t. x2."""
    x, y = pg.Variable(arr(xp, [1.0, -2.0])), pg.Variable(arr(xp, [2.0, -3.0]))
    pg.sum(pg.nextafter(x, y) * arr(xp, [3.0, 4.0])).backward()
    assert_close(x.grad, np.array([3.0, 4.0]))
    assert y.grad is None


def test_remainder_and_floor_divide_operators(xp):
    """x % y is differentiable (1 and -floor(x / y)); x // y has the backend's value and no gradient."""
    a, b = arr(xp, [5.5, -3.5, 7.0]), arr(xp, [2.0, 2.0, -3.0])
    x, y = pg.Variable(a), pg.Variable(b)
    assert_close(x // y, xp.floor_divide(a, b))
    assert (x // y).requires_grad is False
    pg.sum(x % y).backward()
    assert_close(x % y, xp.remainder(a, b))
    assert_close(x.grad, np.array([1.0, 1.0, 1.0]))
    assert_close(y.grad, np.array([-2.0, 2.0, 3.0]))


def test_clip_gradient_at_the_bounds_goes_to_x(xp):
    """x == min or x == max: the gradient passes to x (bounds included), not to the bound."""
    x = pg.Variable(arr(xp, [-1.0, -0.5, 0.0, 0.5, 1.0]))
    lo, hi = pg.Variable(arr(xp, -0.5)), pg.Variable(arr(xp, 0.5))
    pg.sum(pg.clip(x, lo, hi) * arr(xp, [1.0, 2.0, 3.0, 4.0, 5.0])).backward()
    assert_close(x.grad, np.array([0.0, 2.0, 3.0, 4.0, 0.0]))
    assert_close(lo.grad, np.asarray(1.0))
    assert_close(hi.grad, np.asarray(5.0))


def test_clip_with_min_above_max_sends_the_gradient_to_max():
    """min > max: numpy (and cupy, JAX, torch) give max; the gradient went to min where x < min
    and to max where x > max as well (total 4 for a sum of 3 elements), now all to max, and the
    numerical check agrees, to second order, with per-element bounds of both orders."""
    x = pg.Variable(np.array([0.0, 5.0, 10.0]))
    lo, hi = pg.Variable(np.array(6.0)), pg.Variable(np.array(4.0))
    pg.sum(pg.clip(x, lo, hi)).backward()
    assert_close(x.grad, np.zeros(3))
    assert_close(lo.grad, np.asarray(0.0))
    assert_close(hi.grad, np.asarray(3.0))
    rng = np.random.default_rng(0)
    xs, los, his = rng.normal(size=(3, 40))
    check_grads(lambda a, b, c: pg.clip(a, b, c) ** 2, [xs, los, his], order=2)


def test_rounding_feeds_a_differentiable_op(xp):
    """floor(x) * x: floor contributes a constant factor (zero derivative almost everywhere)."""
    f = lambda v: pg.floor(v) * v + pg.round(v) * pg.trunc(v) - pg.ceil(v)  # noqa: E731
    check_grads(f, [arr(xp, [1.3, -2.6, 0.4])], order=2)


def test_mask_from_comparison_feeds_differentiable_op(xp):
    """A comparison's output used as a where() condition still lets x's gradient through."""
    x = pg.Variable(arr(xp, [-1.0, 2.0, 3.0]))
    pg.sum(pg.where(x > 0.0, x * x, 0.0)).backward()
    assert_close(x.grad, np.array([0.0, 4.0, 6.0]))


def test_prod_gradient_with_one_zero_is_product_of_others(xp):
    """d prod / d x_i with one zero: the product of the others at the zero, 0 elsewhere."""
    x = pg.Variable(arr(xp, [2.0, 0.0, 3.0, 4.0]))
    P.prod(x).backward()
    assert_close(x.grad, np.array([0.0, 24.0, 0.0, 0.0]))


def test_prod_gradient_with_two_zeros_is_zero(xp):
    """With two zeros, every partial derivative of the product is 0 (no nan)."""
    x = pg.Variable(arr(xp, [2.0, 0.0, 3.0, 0.0]))
    P.prod(x).backward()
    assert_close(x.grad, np.zeros(4))


def test_cumulative_prod_gradient_with_zeros_is_exact(xp):
    """cumulative_prod's gradient at zeros equals the sum of products of the others (no nan)."""
    a = [2.0, 0.0, 3.0, 0.0, 5.0]
    x = pg.Variable(arr(xp, a))
    P.cumulative_prod(x).backward(arr(xp, [1.0] * 5))
    want = [sum(np.prod([a[i] for i in range(k + 1) if i != j]) for k in range(j, 5)) for j in range(5)]
    assert_close(x.grad, np.array(want))


def test_std_gradient_of_a_constant_is_zero(xp):
    """std of equal values: the gradient is 0 (a corner, like abs at 0), not nan."""
    x = pg.Variable(arr(xp, [1.5, 1.5, 1.5]))
    P.std(x).backward()
    assert_close(x.grad, np.zeros(3))


# ---------------------------------------------------------------------------
# Identities between ops
# ---------------------------------------------------------------------------


def test_tril_triu_sum_to_the_whole(xp):
    """tril(x) + triu(x, k=1) == x, and its gradient is all ones."""
    x = pg.Variable(sample(xp, (3, 3)))
    y = P.tril(x) + P.triu(x, k=1)
    assert_close(y, x.data)
    pg.sum(y).backward()
    assert_close(x.grad, np.ones((3, 3)))


def test_unstack_gradient_of_unused_outputs_is_zero(xp):
    """Outputs of unstack left out of the loss contribute zeros."""
    x = pg.Variable(arr(xp, [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))
    a, b, c = P.unstack(x)
    pg.sum(b).backward()
    assert_close(x.grad, np.array([[0.0, 0.0], [1.0, 1.0], [0.0, 0.0]]))

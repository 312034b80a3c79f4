"""polygrad.functions' array functions with Chainer's signatures (concat, stack,
split_axis, where, clip) and identity (a Function subclass): values against
numpy and gradients by check_grads in float64 (order 2), on numpy and
array_api_strict."""

from __future__ import annotations

import numpy as np
import pytest

import polygrad as pg
import polygrad.functions as F
from polygrad.testing import check_grads

from conftest import arr, away_from_zero, normal, to_np
from conftest import assert_values_close as assert_close

X = np.array([[0.5, -1.0, 2.0, 0.1], [-0.3, 0.8, -1.5, 1.2], [1.1, 0.7, -0.4, -2.2]])
W = np.array([[0.1, -0.2, 0.3, 0.4], [0.5, 0.6, -0.7, 0.8]])
XA = away_from_zero((3, 4))


# ---------------------------------------------------------------------------
# concat, stack, split_axis, where, clip
# ---------------------------------------------------------------------------
A, B = normal((2, 3), 23), normal((2, 1), 24)


def test_concat_forward_default_axis_1(xp):
    """concat joins along axis 1 by default, along any axis given."""
    assert_close(F.concat([arr(xp, A), arr(xp, B)]), np.concatenate([A, B], axis=1))
    assert_close(F.concat((arr(xp, A), arr(xp, A)), axis=0), np.concatenate([A, A], axis=0))


def test_concat_gradients(xp):
    """Gradients of concat agree with central differences, to second order."""
    check_grads(lambda a, b: F.concat([a, b]) * F.concat([b, a]), [arr(xp, A), arr(xp, B)], order=2)


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_stack_forward(xp, axis):
    """stack joins along a new axis."""
    assert_close(F.stack([arr(xp, A), arr(xp, 2 * A)], axis=axis), np.stack([A, 2 * A], axis=axis))


def test_stack_gradients(xp):
    """Gradients of stack agree with central differences, to second order."""
    check_grads(lambda a, b: F.stack([a, b, a], axis=1) ** 2, [arr(xp, A), arr(xp, A[::-1])], order=2)


def test_split_axis_sections_and_indices(xp):
    """An int gives equal sections, a list gives split points (as numpy.split); a tuple is returned."""
    x = normal((2, 6), 25)
    parts = F.split_axis(arr(xp, x), 3, axis=1)
    assert isinstance(parts, tuple) and len(parts) == 3
    for got, want in zip(parts, np.split(x, 3, axis=1)):
        assert_close(got, want)
    parts = F.split_axis(arr(xp, x), [1, 4], axis=-1)
    for got, want in zip(parts, np.split(x, [1, 4], axis=1)):
        assert_close(got, want)


def test_split_axis_force_tuple_false_returns_the_variable(xp):
    """With force_tuple=False a single section is returned as a Variable."""
    y = F.split_axis(arr(xp, A), 1, axis=0, force_tuple=False)
    assert isinstance(y, pg.Variable)
    assert_close(y, A)


def test_split_axis_takes_numpy_integers(xp):
    """A NumPy integer count of sections (np.int64(2)) was taken for a sequence ("'numpy.int64' object
    is not iterable"); it splits as numpy.split does, and so do NumPy split points and axis."""
    x = np.arange(8.0).reshape(2, 4)
    parts = F.split_axis(arr(xp, x), np.int64(2), axis=np.int32(1))
    assert [tuple(p.shape) for p in parts] == [(2, 2), (2, 2)]
    assert_close(parts[1], x[:, 2:])
    parts = F.split_axis(arr(xp, x), np.array([1, 3]), axis=1)
    assert [tuple(p.shape) for p in parts] == [(2, 1), (2, 2), (2, 1)]


@pytest.mark.parametrize("sections, axis, match", [
    (True, 1, "indices_or_sections must be an int or a sequence of ints, got True"),
    (2.0, 1, "indices_or_sections must be an int or a sequence of ints, got 2.0"),
    ([1.5], 1, r"indices_or_sections must be an int or a sequence of ints, got \[1.5\]"),
    (2, 1.0, "axis must be an int, got 1.0"),
    (2, True, "axis must be an int, got True"),
])
def test_split_axis_refuses_arguments_that_are_not_integers(xp, sections, axis, match):
    """A bool is not the count 1 nor the axis 1, and a float is not truncated: each is refused
    with a TypeError naming split_axis and the argument."""
    with pytest.raises(TypeError, match="split_axis: " + match):
        F.split_axis(arr(xp, np.zeros((2, 4))), sections, axis=axis)


def test_split_axis_rejects_uneven_sections(xp):
    """6 columns cannot be split into 4 equal sections."""
    with pytest.raises(ValueError, match="split_axis.*4 equal sections"):
        F.split_axis(arr(xp, np.zeros((2, 6))), 4, axis=1)


def test_split_axis_gradients(xp):
    """Gradients through the pieces agree with central differences, to second order."""
    def f(v):
        a, b, c = F.split_axis(v, [1, 3], axis=1)
        return a * pg.sum(b * b, axis=1, keepdims=True) + pg.sum(c, axis=1, keepdims=True)

    check_grads(f, [arr(xp, normal((2, 5), 26))], order=2)


def test_where_takes_chainer_keywords(xp):
    """F.where(condition=, x=, y=) selects and sends gradients to the chosen side."""
    x, y = pg.Variable(arr(xp, [1.0, 2.0])), pg.Variable(arr(xp, [3.0, 4.0]))
    out = F.where(condition=xp.asarray([True, False]), x=x, y=y)
    assert_close(out, np.array([1.0, 4.0]))
    pg.sum(out).backward()
    assert_close(x.grad, np.array([1.0, 0.0]))
    assert_close(y.grad, np.array([0.0, 1.0]))


def test_clip_forward_and_gradient(xp):
    """clip limits to [x_min, x_max]; the gradient is 1 inside (bounds included) and 0 outside."""
    xs = np.array([-2.0, -1.0, 0.3, 1.0, 5.0])
    x = pg.Variable(arr(xp, xs))
    y = F.clip(x, -1.0, 1.0)
    assert_close(y, np.clip(xs, -1, 1))
    pg.sum(y).backward()
    assert_close(x.grad, np.array([0.0, 1.0, 1.0, 1.0, 0.0]))
    assert_close(F.clip(arr(xp, xs), None, 0.5), np.minimum(xs, 0.5))
    assert_close(F.clip(arr(xp, xs), 0.0, None), np.maximum(xs, 0.0))


def test_clip_gradients(xp):
    """Gradients of clip agree with central differences, to second order."""
    check_grads(lambda v: F.clip(v, -1.0, 1.0) * v, [arr(xp, XA)], order=2)


def test_clip_of_integers_keeps_their_dtype_and_refuses_floating_bounds(xp):
    """An integer x with a float bound came back float64 ([1, 5, 9] by 2.5, 7.5: [2.5, 5., 7.5]),
    against the docstring; it is refused as pg.clip refuses it, naming the function and the bound.
    Integer bounds keep x's dtype."""
    x = arr(xp, [1, 5, 9], "int64")
    y = F.clip(x, 2, 7)
    assert y.dtype == x.dtype and to_np(y).tolist() == [2, 5, 7]
    for bounds, name in (((2.5, 7.5), "x_min"), ((None, 7.0), "x_max")):
        with pytest.raises(TypeError, match=rf"functions.clip: x is \S*int64 \(3,\) and the bound {name} is floating"):
            F.clip(x, *bounds)


def test_clip_refuses_a_bool_x(xp):
    """A bool x came back int64 (bounds 0, 1) or float64 (a bound 0.5), against the docstring; it is
    refused as Chainer and the standard's clip refuse it, naming the function, x's dtype and shape."""
    x = arr(xp, [True, False], "bool")
    for bounds in ((0, 1), (0.5, None), (None, 1)):
        with pytest.raises(TypeError, match=r"functions.clip: x must be an array of numbers, got \S*bool \(2,\)"):
            F.clip(x, *bounds)


# ---------------------------------------------------------------------------
# identity (a Function subclass)
# ---------------------------------------------------------------------------


def test_identity_returns_same_values(xp):
    """identity(x) has x's values; identity(x, y) returns a tuple of two Variables."""
    x = pg.Variable(arr(xp, X))
    y = F.identity(x)
    assert isinstance(y, pg.Variable) and y is not x
    assert_close(y, X)
    a, b = F.identity(x, pg.Variable(arr(xp, W)))
    assert_close(a, X)
    assert_close(b, W)


def test_identity_passes_gradient_unchanged(xp):
    """The gradient of identity's input is the output's gradient."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    F.identity(x).backward(arr(xp, [3.0, -4.0]))
    assert_close(x.grad, np.array([3.0, -4.0]))
    check_grads(lambda v, w: F.identity(v, w), [arr(xp, X), arr(xp, W)], order=1)


def test_identity_class_is_a_function():
    """F.Identity is a Function subclass whose instances are applied once."""
    assert issubclass(F.Identity, pg.Function)
    f = F.Identity()
    f(pg.Variable(np.array([1.0])))
    with pytest.raises(RuntimeError, match="already been applied"):
        f(pg.Variable(np.array([1.0])))


def test_concat_and_stack_need_at_least_one_array(xp):
    """concat([]) and stack([]) raise ValueError naming the function."""
    with pytest.raises(ValueError, match="concat needs at least one array"):
        F.concat([])
    with pytest.raises(ValueError, match="stack needs at least one array"):
        F.stack([])


def test_split_axis_rejects_an_axis_out_of_range(xp):
    """An axis beyond x's dimensions raises ValueError naming split_axis, the axis and the shape."""
    with pytest.raises(ValueError, match=r"split_axis: axis 2 is out of range for shape \(2, 6\)"):
        F.split_axis(arr(xp, np.zeros((2, 6))), 2, axis=2)


def test_clip_needs_a_bound_and_ordered_bounds(xp):
    """clip without bounds, or with x_min > x_max, raises ValueError naming clip."""
    with pytest.raises(ValueError, match="clip: x_min and x_max cannot both be None"):
        F.clip(arr(xp, XA), None, None)
    with pytest.raises(ValueError, match=r"clip: x_min \(1.0\) must not exceed x_max \(0.0\)"):
        F.clip(arr(xp, XA), 1.0, 0.0)

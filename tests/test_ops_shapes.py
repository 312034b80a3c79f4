"""Shapes, on numpy and array_api_strict: broadcasting over any shapes, reductions
over any axes, scans and joins along any axis (hypothesis), element-wise
functions on 2-D, 0-d and empty arrays, Python scalars as 0-d operands, and ops
whose result shape depends on
the data, refused on a backend that cannot represent them.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, mutually_broadcastable_shapes

import polygrad as pg
from polygrad import ops as P
from polygrad.testing import check_grads

from conftest import assert_close, sample

FIXTURES_OK = dict(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

# ---------------------------------------------------------------------------
# Broadcasting
# ---------------------------------------------------------------------------

BROADCASTING = {  # name: (polygrad, reference, kind of x1, kind of x2)
    "add": (pg.add, lambda xp, a, b: xp.add(a, b), "any", "any"),
    "subtract": (pg.subtract, lambda xp, a, b: xp.subtract(a, b), "any", "any"),
    "multiply": (pg.multiply, lambda xp, a, b: xp.multiply(a, b), "any", "any"),
    "divide": (pg.divide, lambda xp, a, b: xp.divide(a, b), "any", "nonzero"),
    "pow": (pg.pow, lambda xp, a, b: xp.pow(a, b), "pos", "any"),
    "maximum": (pg.maximum, lambda xp, a, b: xp.maximum(a, b), "any", "any"),
}


@settings(max_examples=25, **FIXTURES_OK)
@given(
    shapes=mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3),
    name=st.sampled_from(sorted(BROADCASTING)),
    seed=st.integers(0, 2**16),
)
def test_binary_ops_broadcast_any_shapes(xp, shapes, name, seed):
    """For broadcast-compatible shapes, value and gradient (order 2) of binary ops are right."""
    fn, ref, kind_a, kind_b = BROADCASTING[name]
    sa, sb = shapes.input_shapes
    a, b = sample(xp, sa, kind_a, seed), sample(xp, sb, kind_b, seed + 1)
    y = fn(pg.Variable(a), pg.Variable(b))
    assert tuple(y.shape) == tuple(shapes.result_shape)
    assert_close(y, ref(xp, a, b))
    check_grads(fn, [a, b], order=2)


BINARY = {  # name: kinds of x1 and x2
    "atan2": ("any", "any"), "hypot": ("any", "any"), "logaddexp": ("any", "any"), "minimum": ("any", "any"),
    "copysign": ("nonzero", "nonzero"), "nextafter": ("any", "any"), "remainder": ("any", "nonzero"),
}
PAIRS = [((2, 3), (2, 3)), ((3, 1), (4,)), ((), (2, 3)), ((2, 1, 3), (0, 1))]


@pytest.mark.parametrize("shapes", PAIRS, ids=str)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_value_and_gradient_broadcast(xp, name, shapes):
    """Value equals the backend's; gradients (order 2) of both inputs agree with central differences."""
    a, b = (sample(xp, s, k, f"{name}{i}") for i, (k, s) in enumerate(zip(BINARY[name], shapes)))
    fn = getattr(pg.ops, name)
    assert_close(fn(pg.Variable(a), pg.Variable(b)), getattr(xp, name)(a, b))
    check_grads(fn, [a, b], order=2)


# ---------------------------------------------------------------------------
# Element-wise functions on 2-D, 0-d and empty arrays
# ---------------------------------------------------------------------------

UNARY = {  # name: kind of the real inputs
    "negative": "any", "positive": "any", "square": "any", "reciprocal": "nonzero", "exp": "any", "expm1": "any",
    "log": "pos", "log1p": "pos", "log2": "pos", "log10": "pos", "sqrt": "pos", "sin": "any", "cos": "any",
    "tan": "unit", "asin": "unit", "acos": "unit", "atan": "any", "sinh": "any", "cosh": "any", "tanh": "any",
    "asinh": "any", "acosh": "gt1", "atanh": "unit", "real": "any", "conj": "any", "abs": "nonzero",
}
SHAPES = [(2, 3), (), (0,)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_value_matches_backend(xp, name, shape):
    """The value equals the backend's own function, with the same dtype and shape."""
    a = sample(xp, shape, UNARY[name], name)
    assert_close(getattr(pg.ops, name)(pg.Variable(a)), getattr(xp, name)(a))


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_gradient_matches_numerical(xp, name, shape):
    """First and second derivatives agree with central differences in float64."""
    check_grads(getattr(pg.ops, name), [sample(xp, shape, UNARY[name], name)], order=2)


# ---------------------------------------------------------------------------
# Reductions over any axes, scans and joins along any axis
# ---------------------------------------------------------------------------


def _draw_axis(data, ndim):
    """None, one axis (int) or a tuple of distinct axes, each possibly negative."""
    axes = data.draw(st.lists(st.integers(0, ndim - 1), unique=True)) if ndim else []
    axes = [a - ndim if data.draw(st.booleans()) else a for a in axes]
    return None if not axes else axes[0] if len(axes) == 1 and data.draw(st.booleans()) else tuple(axes)


def _check_reduction(xp, name, a, axis, keepdims):
    fn = lambda v: getattr(pg.ops, name)(v, axis=axis, keepdims=keepdims)  # noqa: E731
    assert_close(fn(pg.Variable(a)), getattr(xp, name)(a, axis=axis, keepdims=keepdims))
    check_grads(fn, [a], order=2)


@settings(max_examples=25, **FIXTURES_OK)
@given(
    data=st.data(),
    shape=array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3),
    name=st.sampled_from(["sum", "mean", "max", "min"]),
    keepdims=st.booleans(),
)
def test_reductions_any_axes_and_keepdims(xp, data, shape, name, keepdims):
    """sum / mean / max / min over any set of axes (negative too, int or tuple), with or without keepdims."""
    _check_reduction(xp, name, sample(xp, shape, "distinct"), _draw_axis(data, len(shape)), keepdims)


@settings(max_examples=20, **FIXTURES_OK)
@given(
    data=st.data(),
    shape=array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3),
    name=st.sampled_from(["prod", "var", "std", "sum", "mean"]),
    keepdims=st.booleans(),
)
def test_reductions_any_axes_empty_arrays_too(xp, data, shape, name, keepdims):
    """prod / var / std / sum / mean over any axes (int, tuple, negative), any keepdims, empty too."""
    axis = _draw_axis(data, len(shape))
    axes = range(len(shape)) if axis is None else [axis] if isinstance(axis, int) else axis
    if name in ("var", "std", "mean") and 0 in [shape[i] for i in axes]:
        return  # mean over nothing is nan (no derivative to check)
    _check_reduction(xp, name, sample(xp, shape, "any" if name == "prod" else "distinct"), axis, keepdims)


@settings(max_examples=15, **FIXTURES_OK)
@given(
    shape=array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4),
    name=st.sampled_from(["cumulative_sum", "cumulative_prod"]),
    axis_seed=st.integers(0, 5),
    initial=st.booleans(),
)
def test_cumulative_any_shape_and_axis(xp, shape, name, axis_seed, initial):
    """cumulative_sum / cumulative_prod along any axis of any shape (empty too), with or without the initial value."""
    axis = axis_seed % len(shape) - (len(shape) if axis_seed % 2 else 0)
    a = sample(xp, shape, "any", axis_seed)
    fn = lambda v: getattr(P, name)(v, axis=axis, include_initial=initial)  # noqa: E731
    assert_close(fn(pg.Variable(a)), getattr(xp, name)(a, axis=axis, include_initial=initial))
    check_grads(fn, [a], order=2)


@settings(max_examples=15, **FIXTURES_OK)
@given(shape=array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=3), data=st.data())
def test_concat_and_stack_any_shapes(xp, shape, data):
    """concat along any axis of arrays differing on it, and stack at any position, with gradients."""
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    other = tuple(data.draw(st.integers(0, 3)) if i == axis % len(shape) else n for i, n in enumerate(shape))
    a, b = sample(xp, shape, "any", 1), sample(xp, other, "any", 2)
    assert_close(P.concat([pg.Variable(a), pg.Variable(b)], axis=axis), xp.concat([a, b], axis=axis))
    check_grads(lambda u, v: P.concat([u, v, u], axis=axis), [a, b], order=1)
    at = data.draw(st.integers(-len(shape) - 1, len(shape)))
    assert_close(P.stack([pg.Variable(a), pg.Variable(a)], axis=at), xp.stack([a, a], axis=at))
    check_grads(lambda u: P.stack([u, u * 2.0], axis=at), [a], order=1)


def test_reshape_minus_one_infers_size(xp):
    """reshape with -1 infers the missing extent."""
    x = pg.Variable(xp.zeros((2, 3, 4), dtype=xp.float64))
    assert pg.reshape(x, (4, -1)).shape == (4, 6)


# ---------------------------------------------------------------------------
# Data-dependent shapes on a backend without them
# ---------------------------------------------------------------------------

DATA_DEPENDENT = {
    "nonzero": lambda x: P.nonzero(x),
    "unique_values": lambda x: P.unique_values(x),
    "unique_all": lambda x: P.unique_all(x),
    "unique_counts": lambda x: P.unique_counts(x),
    "unique_inverse": lambda x: P.unique_inverse(x),
    "repeat with an array of repeats": lambda x: P.repeat(x, np.array([1, 2])),
    "getitem with a boolean mask": lambda x: pg.sum(x[np.array([True, False])]).backward(),
}


@pytest.mark.parametrize("name", sorted(DATA_DEPENDENT))
def test_data_dependent_shapes_refused_with_the_op_named(monkeypatch, name):
    """With BackendInfo.data_dependent_shapes False, each such op raises ValueError naming itself."""
    backend = pg.get_backend("numpy")
    monkeypatch.setattr(backend, "info", dataclasses.replace(backend.info, data_dependent_shapes=False))
    with pytest.raises(ValueError, match=name):
        DATA_DEPENDENT[name](pg.Variable(np.array([1.0, 2.0])))


def test_fixed_shape_ops_still_work_without_data_dependent_shapes(monkeypatch):
    """Ops whose shapes do not depend on data run as usual on such a backend."""
    backend = pg.get_backend("numpy")
    monkeypatch.setattr(backend, "info", dataclasses.replace(backend.info, data_dependent_shapes=False))
    x = pg.Variable(np.array([3.0, 1.0, 2.0]))
    y = pg.sum(P.sort(x) * P.repeat(x, 2)[:3] * P.take(x, np.array([0, 0, 1])))
    y.backward()
    assert x.grad is not None


# ---------------------------------------------------------------------------
# Python scalars as operands (0-d, on the current backend)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_with_python_scalar_on_either_side(xp, name):
    """f(x, 1.5) and f(1.5, x) give the backend's values and right gradients."""
    a = sample(xp, (4,), BINARY[name][0], name)
    fn = getattr(pg.ops, name)
    assert_close(fn(pg.Variable(a), 1.5), getattr(xp, name)(a, 1.5))
    assert_close(fn(1.5, pg.Variable(a)), getattr(xp, name)(1.5, a))
    check_grads(lambda v: fn(v, 1.5) * fn(-1.5, v), [a], order=2)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_on_two_python_scalars_gives_0d_variable(xp, name):
    """f(0.5, 1.5) gives a 0-d Variable of the current backend with the backend's value."""
    got = getattr(pg.ops, name)(0.5, 1.5)
    assert got.shape == ()
    assert_close(got, getattr(xp, name)(xp.asarray(0.5), xp.asarray(1.5)))

"""Every op of polygrad's op table: forward against the backend's own functions,
gradients against central differences (float64), on numpy and array_api_strict.

``CASES`` is the table: one row per (op, situation). ``test_every_differentiable_op_has_a_case``
makes a new differentiable op without a row fail.
"""

from __future__ import annotations

import math
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, mutually_broadcastable_shapes

import polygrad as pg
import polygrad.functions as F
from polygrad.ops import REGISTRY
from polygrad.testing import check_grads
from polygrad.ops.nn_ops import linear_op

from conftest import arr
from conftest import to_np, assert_close

# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------


def make_input(xp, spec, seed):
    """An input array from a spec: ('n', shape) normal, ('p', shape) in [0.5, 2],
    ('a', shape) |x| in [0.5, 2] with random sign, ('d', shape) distinct values
    at least 0.3 apart (no ties for max/min), or literal values."""
    r = np.random.default_rng(seed)
    if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], str):
        kind, shape = spec
        if kind == "n":
            v = r.standard_normal(shape)
        elif kind == "p":
            v = r.uniform(0.5, 2.0, shape)
        elif kind == "a":
            v = r.uniform(0.5, 2.0, shape) * r.choice([-1.0, 1.0], shape)
        elif kind == "d":
            n = int(np.prod(shape))
            v = (r.permutation(n) * 0.3 - 0.15 * n + 0.05).reshape(shape)
        else:  # pragma: no cover - a typo in the table
            raise ValueError(kind)
        return arr(xp, v)
    return arr(xp, spec)


class Case:
    """One row: ``fn(xp, *vars)`` with polygrad, ``ref(xp, *arrays)`` with the backend."""

    def __init__(self, op, name, fn, ref, inputs, order=2, **tol):
        self.op, self.name, self.fn, self.ref, self.inputs, self.order, self.tol = op, name, fn, ref, inputs, order, tol

    @property
    def id(self):
        return f"{self.op}-{self.name}"

    def arrays(self, xp):
        return [make_input(xp, s, zlib.crc32(f"{self.id}/{i}".encode())) for i, s in enumerate(self.inputs)]


def _np_scatter_ref(key_np, shape):
    """Reference getitem_grad / getitem vjp computed with numpy's add.at."""
    def ref(xp, g):
        out = np.zeros(shape)
        np.add.at(out, key_np, to_np(g))
        return out
    return ref


def _setitem_ref(key):
    def ref(xp, a, v):
        out = xp.asarray(a, copy=True)
        out[key(xp)] = v
        return out
    return ref


I = lambda xp, *idx: xp.asarray(list(idx), dtype=xp.int64)  # noqa: E731  an integer index array

C = Case
CASES = [
    # --- arithmetic, with broadcasting, scalars and 0-d arrays ------------------
    C("add", "same_shape", lambda xp, x, y: x + y, lambda xp, a, b: xp.add(a, b), [("n", (3, 4)), ("n", (3, 4))]),
    C("add", "broadcast_3x1_4", lambda xp, x, y: pg.add(x, y), lambda xp, a, b: xp.add(a, b), [("n", (3, 1)), ("n", (4,))]),
    C("add", "scalar_right", lambda xp, x: x + 2.5, lambda xp, a: a + 2.5, [("n", (3,))]),
    C("add", "scalar_left", lambda xp, x: 2.5 + x, lambda xp, a: 2.5 + a, [("n", (3,))]),
    C("add", "0d_and_vector", lambda xp, x, y: x + y, lambda xp, a, b: xp.add(a, b), [("n", ()), ("n", (3,))]),
    C("add", "0d_and_0d", lambda xp, x, y: x + y, lambda xp, a, b: xp.add(a, b), [("n", ()), ("n", ())]),
    C("subtract", "broadcast_3x1_4", lambda xp, x, y: x - y, lambda xp, a, b: xp.subtract(a, b), [("n", (3, 1)), ("n", (4,))]),
    C("subtract", "scalar_left", lambda xp, x: 1.5 - x, lambda xp, a: 1.5 - a, [("n", (2, 3))]),
    C("subtract", "scalar_right", lambda xp, x: pg.subtract(x, 1.5), lambda xp, a: a - 1.5, [("n", (2, 3))]),
    C("multiply", "broadcast_3x1_4", lambda xp, x, y: x * y, lambda xp, a, b: xp.multiply(a, b), [("n", (3, 1)), ("n", (4,))]),
    C("multiply", "broadcast_both_ways", lambda xp, x, y: x * y, lambda xp, a, b: xp.multiply(a, b), [("n", (2, 1, 4)), ("n", (3, 1))]),
    C("multiply", "scalar_left", lambda xp, x: 3.0 * x, lambda xp, a: 3.0 * a, [("n", (3,))]),
    C("multiply", "same_input_twice", lambda xp, x: x * x, lambda xp, a: a * a, [("n", (3,))]),
    C("multiply", "0d_and_matrix", lambda xp, x, y: x * y, lambda xp, a, b: xp.multiply(a, b), [("n", ()), ("n", (2, 3))]),
    C("divide", "broadcast_3x1_4", lambda xp, x, y: x / y, lambda xp, a, b: xp.divide(a, b), [("n", (3, 1)), ("a", (4,))]),
    C("divide", "scalar_numerator", lambda xp, x: 2.0 / x, lambda xp, a: 2.0 / a, [("a", (3,))]),
    C("divide", "scalar_denominator", lambda xp, x: x / 4.0, lambda xp, a: a / 4.0, [("n", (3,))]),
    C("pow", "broadcast_3x1_4", lambda xp, x, y: x ** y, lambda xp, a, b: xp.pow(a, b), [("p", (3, 1)), ("n", (4,))]),
    C("pow", "scalar_exponent", lambda xp, x: x ** 3, lambda xp, a: a ** 3, [("n", (4,))]),
    C("pow", "scalar_float_exponent", lambda xp, x: pg.pow(x, 0.5), lambda xp, a: a ** 0.5, [("p", (4,))]),
    C("pow", "scalar_base", lambda xp, x: 2.0 ** x, lambda xp, a: 2.0 ** a, [("n", (4,))]),
    C("pow", "0d", lambda xp, x, y: x ** y, lambda xp, a, b: xp.pow(a, b), [("p", ()), ("n", ())]),
    C("negative", "matrix", lambda xp, x: -x, lambda xp, a: xp.negative(a), [("n", (2, 3))]),
    C("negative", "function_0d", lambda xp, x: pg.negative(x), lambda xp, a: -a, [("n", ())]),
    C("positive", "matrix", lambda xp, x: +x, lambda xp, a: xp.positive(a), [("n", (2, 3))]),
    C("positive", "function", lambda xp, x: pg.positive(x) * x, lambda xp, a: a * a, [("n", (3,))]),
    # --- transcendental --------------------------------------------------------
    C("exp", "matrix", lambda xp, x: pg.exp(x), lambda xp, a: xp.exp(a), [("n", (2, 3))]),
    C("exp", "0d", lambda xp, x: pg.exp(x), lambda xp, a: xp.exp(a), [("n", ())]),
    C("log", "matrix", lambda xp, x: pg.log(x), lambda xp, a: xp.log(a), [("p", (2, 3))]),
    C("sin", "matrix", lambda xp, x: pg.sin(x), lambda xp, a: xp.sin(a), [("n", (2, 3))]),
    C("cos", "matrix", lambda xp, x: pg.cos(x), lambda xp, a: xp.cos(a), [("n", (2, 3))]),
    C("tanh", "matrix", lambda xp, x: pg.tanh(x), lambda xp, a: xp.tanh(a), [("n", (2, 3))]),
    C("sqrt", "matrix", lambda xp, x: pg.sqrt(x), lambda xp, a: xp.sqrt(a), [("p", (2, 3))]),
    C("abs", "matrix", lambda xp, x: pg.abs(x), lambda xp, a: xp.abs(a), [("a", (2, 3))]),
    C("abs", "operator", lambda xp, x: abs(x) * x, lambda xp, a: xp.abs(a) * a, [("a", (4,))]),
    # --- selection ---------------------------------------------------------------
    C("where", "broadcast_cond_x_y",
      lambda xp, x, y: pg.where(xp.asarray([[True, False, True, False]]), x, y),
      lambda xp, a, b: xp.where(xp.asarray([[True, False, True, False]]), a, b), [("n", (3, 1)), ("n", (4,))]),
    C("where", "scalar_branch",
      lambda xp, x: pg.where(xp.asarray([True, False, True]), x, 0.0),
      lambda xp, a: xp.where(xp.asarray([True, False, True]), a, xp.zeros_like(a)), [("n", (2, 3))]),
    C("where", "condition_from_variable",
      lambda xp, x: pg.where(x > 0, x * x, -x),
      lambda xp, a: xp.where(a > 0, a * a, -a), [("a", (2, 3))]),
    C("maximum", "broadcast_3x1_4", lambda xp, x, y: pg.maximum(x, y), lambda xp, a, b: xp.maximum(a, b),
      [[[0.1], [1.3], [-0.7]], [0.5, -1.1, 0.9, 2.0]]),
    C("maximum", "scalar", lambda xp, x: pg.maximum(x, 0.0), lambda xp, a: xp.maximum(a, xp.zeros_like(a)), [("a", (2, 3))]),
    C("maximum", "raw_array_first", lambda xp, x: pg.maximum(arr(xp, [0.3, -0.2, 1.5]), x),
      lambda xp, a: xp.maximum(arr(xp, [0.3, -0.2, 1.5]), a), [[0.1, 0.4, -0.7]]),
    C("maximum", "scalar_left", lambda xp, x: pg.maximum(0.0, x), lambda xp, a: xp.maximum(a, xp.zeros_like(a)), [("a", (2, 3))]),
    # --- dtype -------------------------------------------------------------------
    C("astype", "to_float32", lambda xp, x: pg.astype(x, xp.float32), lambda xp, a: xp.astype(a, xp.float32),
      [("n", (2, 3))], order=1, eps=1e-2, atol=1e-4, rtol=1e-3),
    C("astype", "same_dtype", lambda xp, x: pg.astype(x, xp.float64) * x, lambda xp, a: a * a, [("n", (2, 3))]),
    # --- shapes ------------------------------------------------------------------
    C("reshape", "explicit", lambda xp, x: pg.reshape(x, (3, 4)), lambda xp, a: xp.reshape(a, (3, 4)), [("n", (2, 6))]),
    C("reshape", "minus_one", lambda xp, x: pg.reshape(x, (-1, 2)), lambda xp, a: xp.reshape(a, (-1, 2)), [("n", (2, 6))]),
    C("reshape", "method_varargs", lambda xp, x: x.reshape(6, 2), lambda xp, a: xp.reshape(a, (6, 2)), [("n", (2, 6))]),
    C("reshape", "to_0d", lambda xp, x: pg.reshape(x, ()), lambda xp, a: xp.reshape(a, ()), [("n", (1, 1))]),
    C("permute_dims", "3d", lambda xp, x: pg.permute_dims(x, (2, 0, 1)), lambda xp, a: xp.permute_dims(a, (2, 0, 1)), [("n", (2, 3, 4))]),
    C("permute_dims", "negative_axes", lambda xp, x: pg.permute_dims(x, (-1, 0, 1)), lambda xp, a: xp.permute_dims(a, (2, 0, 1)), [("n", (2, 3, 4))]),
    C("matrix_transpose", "batched", lambda xp, x: pg.matrix_transpose(x), lambda xp, a: xp.matrix_transpose(a), [("n", (2, 3, 4))]),
    C("matrix_transpose", "mT", lambda xp, x: x.mT, lambda xp, a: xp.matrix_transpose(a), [("n", (3, 4))]),
    C("transpose", "default_reverses", lambda xp, x: pg.transpose(x), lambda xp, a: xp.permute_dims(a, (2, 1, 0)), [("n", (2, 3, 4))]),
    C("reverse_dims", "via_transpose_3d", lambda xp, x: pg.transpose(x), lambda xp, a: xp.permute_dims(a, (2, 1, 0)), [("n", (2, 3, 4))]),
    C("reverse_dims", "via_T_1d", lambda xp, x: x.T * x, lambda xp, a: a * a, [("n", (3,))]),
    C("transpose", "axes", lambda xp, x: pg.transpose(x, (1, 0, 2)), lambda xp, a: xp.permute_dims(a, (1, 0, 2)), [("n", (2, 3, 4))]),
    C("transpose", "T_property", lambda xp, x: x.T, lambda xp, a: xp.permute_dims(a, (1, 0)), [("n", (2, 3))]),
    C("transpose", "method_varargs", lambda xp, x: x.transpose(1, 2, 0), lambda xp, a: xp.permute_dims(a, (1, 2, 0)), [("n", (2, 3, 4))]),
    C("broadcast_to", "3x1_to_2x3x4", lambda xp, x: pg.broadcast_to(x, (2, 3, 4)), lambda xp, a: xp.broadcast_to(a, (2, 3, 4)), [("n", (3, 1))]),
    C("broadcast_to", "0d", lambda xp, x: pg.broadcast_to(x, (2, 2)), lambda xp, a: xp.broadcast_to(a, (2, 2)), [("n", ())]),
    C("sum_to", "leading_and_inner", lambda xp, x: pg.ops.sum_to(x, (3, 1)),
      lambda xp, a: xp.sum(xp.sum(a, axis=0), axis=1, keepdims=True), [("n", (2, 3, 4))]),
    C("sum_to", "leading_only", lambda xp, x: pg.ops.sum_to(x, (4,)), lambda xp, a: xp.sum(a, axis=0), [("n", (3, 4))]),
    C("sum_to", "to_0d", lambda xp, x: pg.ops.sum_to(x, ()), lambda xp, a: xp.sum(a), [("n", (3, 4))]),
    C("expand_dims", "middle", lambda xp, x: pg.expand_dims(x, axis=1), lambda xp, a: xp.expand_dims(a, axis=1), [("n", (2, 3))]),
    C("expand_dims", "negative_axis", lambda xp, x: pg.expand_dims(x, axis=-1), lambda xp, a: xp.expand_dims(a, axis=-1), [("n", (2, 3))]),
    C("squeeze", "one_axis", lambda xp, x: pg.squeeze(x, axis=1), lambda xp, a: xp.squeeze(a, axis=1), [("n", (2, 1, 3))]),
    C("squeeze", "two_axes", lambda xp, x: pg.squeeze(x, axis=(0, 2)), lambda xp, a: xp.squeeze(a, axis=(0, 2)), [("n", (1, 3, 1))]),
    # --- indexing ----------------------------------------------------------------
    C("getitem", "slices_with_step", lambda xp, x: x[1:, ::2], lambda xp, a: a[1:, ::2], [("n", (3, 4))]),
    C("getitem", "integer_and_slice", lambda xp, x: x[1, :], lambda xp, a: a[1, :], [("n", (3, 4))]),
    C("getitem", "integers_to_0d", lambda xp, x: x[1, -1], lambda xp, a: a[1, -1], [("n", (3, 4))]),
    C("getitem", "none_adds_axis", lambda xp, x: x[None, :, 1], lambda xp, a: a[None, :, 1], [("n", (3, 4))]),
    C("getitem", "ellipsis", lambda xp, x: x[..., 1], lambda xp, a: a[..., 1], [("n", (2, 3, 4))]),
    C("getitem", "function_form", lambda xp, x: pg.ops.getitem(x, (slice(0, 2), 0)), lambda xp, a: a[0:2, 0], [("n", (3, 4))]),
    C("getitem", "int_array_repeated",
      lambda xp, x: x[I(xp, 0, 2, 0, 0)], lambda xp, a: xp.take(a, I(xp, 0, 2, 0, 0)), [("n", (3,))]),
    C("getitem", "int_array_2d_index_repeated",
      lambda xp, x: x[xp.asarray([[0, 1], [1, 1]])], lambda xp, a: xp.reshape(xp.take(a, I(xp, 0, 1, 1, 1)), (2, 2)), [("n", (3,))]),
    C("getitem", "int_arrays_all_axes_repeated",
      lambda xp, x: x[I(xp, 0, 2, 0, 0), I(xp, 1, 1, 1, 3)],
      lambda xp, a: xp.take(xp.reshape(a, (-1,)), I(xp, 1, 9, 1, 3)), [("n", (3, 4))]),
    C("getitem_grad", "slice", lambda xp, g: pg.ops.getitem_grad(g, (slice(1, None), slice(None)), (3, 4)),
      _np_scatter_ref((slice(1, None), slice(None)), (3, 4)), [("n", (2, 4))]),
    C("getitem_grad", "int_array_repeated", lambda xp, g: pg.ops.getitem_grad(g, I(xp, 0, 2, 0, 0), (3,)),
      _np_scatter_ref(np.array([0, 2, 0, 0]), (3,)), [("n", (4,))]),
    C("setitem", "slice_and_int", lambda xp, x, v: pg.ops.setitem(x, (slice(0, 2), 1), v),
      _setitem_ref(lambda xp: (slice(0, 2), 1)), [("n", (3, 4)), ("n", (2,))]),
    C("setitem", "broadcast_value", lambda xp, x, v: pg.ops.setitem(x, (1, slice(None)), v),
      _setitem_ref(lambda xp: (1, slice(None))), [("n", (3, 4)), ("n", (1,))]),
    # --- reductions --------------------------------------------------------------
    C("sum", "all", lambda xp, x: pg.sum(x), lambda xp, a: xp.sum(a), [("n", (2, 3))]),
    C("sum", "axis", lambda xp, x: pg.sum(x, axis=1), lambda xp, a: xp.sum(a, axis=1), [("n", (2, 3, 4))]),
    C("sum", "negative_axis", lambda xp, x: pg.sum(x, axis=-1), lambda xp, a: xp.sum(a, axis=-1), [("n", (2, 3, 4))]),
    C("sum", "axes_keepdims", lambda xp, x: pg.sum(x, axis=(0, 2), keepdims=True),
      lambda xp, a: xp.sum(a, axis=(0, 2), keepdims=True), [("n", (2, 3, 4))]),
    C("sum", "0d", lambda xp, x: pg.sum(x), lambda xp, a: xp.sum(a), [("n", ())]),
    C("max", "all", lambda xp, x: pg.max(x), lambda xp, a: xp.max(a), [("d", (2, 3))]),
    C("max", "axis", lambda xp, x: pg.max(x, axis=1), lambda xp, a: xp.max(a, axis=1), [("d", (2, 3, 4))]),
    C("max", "axes_keepdims", lambda xp, x: pg.max(x, axis=(0, 2), keepdims=True),
      lambda xp, a: xp.max(a, axis=(0, 2), keepdims=True), [("d", (2, 3, 4))]),
    C("min", "all", lambda xp, x: pg.min(x), lambda xp, a: xp.min(a), [("d", (2, 3))]),
    C("min", "negative_axis", lambda xp, x: pg.min(x, axis=-1), lambda xp, a: xp.min(a, axis=-1), [("d", (2, 3, 4))]),
    C("min", "axis_keepdims", lambda xp, x: pg.min(x, axis=0, keepdims=True),
      lambda xp, a: xp.min(a, axis=0, keepdims=True), [("d", (3, 4))]),
    C("mean", "all", lambda xp, x: pg.mean(x), lambda xp, a: xp.mean(a), [("n", (2, 3, 4))]),
    C("mean", "axis", lambda xp, x: pg.mean(x, axis=0), lambda xp, a: xp.mean(a, axis=0), [("n", (2, 3, 4))]),
    C("mean", "axes_keepdims", lambda xp, x: pg.mean(x, axis=(1, 2), keepdims=True),
      lambda xp, a: xp.mean(a, axis=(1, 2), keepdims=True), [("n", (2, 3, 4))]),
    # --- matmul: every 1-D / 2-D / batched combination ------------------------
    *[
        C("matmul", f"{sa}@{sb}".replace(" ", ""), lambda xp, x, y: x @ y, lambda xp, a, b: xp.matmul(a, b), [("n", sa), ("n", sb)])
        for sa, sb in [
            ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 2)), ((2, 3), (3, 4)),
            ((5, 2, 3), (3,)), ((3,), (5, 3, 2)), ((5, 2, 3), (3, 4)), ((2, 3), (5, 3, 4)),
            ((5, 2, 3), (5, 3, 4)), ((1, 2, 3), (5, 3, 4)), ((5, 1, 2, 3), (4, 3, 2)),
        ]
    ],
    C("matmul", "function_form", lambda xp, x, y: pg.matmul(x, y), lambda xp, a, b: a @ b, [("n", (2, 3)), ("n", (3, 2))]),
    # --- nn rows of the op table ----------------------------------------------
    C("relu", "matrix", lambda xp, x: F.relu(x), lambda xp, a: xp.where(a > 0, a, xp.zeros_like(a)), [("a", (3, 4))]),
    C("sigmoid", "matrix", lambda xp, x: F.sigmoid(x), lambda xp, a: 1.0 / (1.0 + xp.exp(-a)), [("n", (3, 4))]),
    C("softmax", "default_axis_1", lambda xp, x: F.softmax(x),
      lambda xp, a: xp.exp(a) / xp.sum(xp.exp(a), axis=1, keepdims=True), [("n", (3, 4))]),
    C("softmax", "axis_0_3d", lambda xp, x: F.softmax(x, axis=0),
      lambda xp, a: xp.exp(a) / xp.sum(xp.exp(a), axis=0, keepdims=True), [("n", (3, 2, 2))]),
    C("log_softmax", "default_axis_1", lambda xp, x: F.log_softmax(x),
      lambda xp, a: a - xp.log(xp.sum(xp.exp(a), axis=1, keepdims=True)), [("n", (3, 4))]),
    C("log_softmax", "axis_minus_1_3d", lambda xp, x: F.log_softmax(x, axis=-1),
      lambda xp, a: a - xp.log(xp.sum(xp.exp(a), axis=-1, keepdims=True)), [("n", (2, 3, 4))]),
    C("softplus", "matrix", lambda xp, x: F.softplus(x),
      lambda xp, a: xp.maximum(a, xp.zeros_like(a)) + xp.log1p(xp.exp(-xp.abs(a))), [("n", (3, 4))]),
    C("softplus", "beta", lambda xp, x: F.softplus(x, beta=2.0),
      lambda xp, a: (xp.maximum(2.0 * a, xp.zeros_like(a)) + xp.log1p(xp.exp(-xp.abs(2.0 * a)))) / 2.0, [("n", (3, 4))]),
    C("erf", "matrix", lambda xp, x: F.erf(x),
      lambda xp, a: arr(xp, np.vectorize(math.erf)(to_np(a))), [("n", (3, 4))]),
    C("linear", "with_bias", lambda xp, x, w, b: linear_op(x, w, b),
      lambda xp, a, w, b: xp.matmul(a, xp.matrix_transpose(w)) + b, [("n", (4, 3)), ("n", (2, 3)), ("n", (2,))]),
    C("linear", "no_bias", lambda xp, x, w: linear_op(x, w),
      lambda xp, a, w: xp.matmul(a, xp.matrix_transpose(w)), [("n", (4, 3)), ("n", (2, 3))]),
]

COMPOSED = {"mean", "transpose"}  # public ops built from other ops (no row of their own in REGISTRY)
IDS = [c.id for c in CASES]


# ---------------------------------------------------------------------------
# The table: forward and gradients of every case
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_forward_matches_backend(xp, case):
    """The op's value equals the backend's own function on the same arrays."""
    arrays = case.arrays(xp)
    got = case.fn(xp, *[pg.Variable(a) for a in arrays])
    assert isinstance(got, pg.Variable)
    assert_close(got, case.ref(xp, *arrays))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_gradient_matches_numerical(xp, case):
    """The plain backward (rules on raw arrays) agrees with central differences in float64."""
    arrays = case.arrays(xp)
    check_grads(lambda *vs: case.fn(xp, *vs), arrays, order=1, **case.tol)


SECOND_ORDER = [c for c in CASES if c.order >= 2]


@pytest.mark.parametrize("case", SECOND_ORDER, ids=[c.id for c in SECOND_ORDER])
def test_second_order_gradient_matches_numerical(xp, case):
    """With create_graph, the vjp and the vjp's own vjp agree with central differences in float64."""
    arrays = case.arrays(xp)
    check_grads(lambda *vs: case.fn(xp, *vs), arrays, order=2, **case.tol)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_backward_gives_input_shaped_grads(xp, case):
    """``y.backward(ones)`` fills every input's ``.grad`` with an array of the input's shape and dtype."""
    arrays = case.arrays(xp)
    vs = [pg.Variable(a) for a in arrays]
    y = case.fn(xp, *vs)
    y.backward(xp.ones_like(y.data))
    for v in vs:
        assert v.grad is not None
        assert tuple(v.grad.shape) == tuple(v.shape)
        assert v.grad.dtype == v.dtype


def _gradient_checked_names() -> set[str]:
    """Op names whose gradient some op test file checks: this table's rows, plus any name
    used in a file of tests/test_ops_*.py or tests/test_functions_nn*.py that calls check_grads."""
    import pathlib
    import re

    names = {c.op for c in CASES}
    here = pathlib.Path(__file__).parent
    for path in sorted(here.glob("test_ops_*.py")) + sorted(here.glob("test_functions_nn*.py")):
        text = path.read_text()
        if "check_grads" in text or "check_backward" in text:
            names.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))
    return names


def test_every_differentiable_op_has_a_case():
    """A differentiable op added to REGISTRY with no gradient test in any op test file fails here."""
    covered = _gradient_checked_names()
    differentiable = {name for name, op in REGISTRY.items() if op.differentiable and op.deterministic}
    missing = {n for n in differentiable - covered if n.split("_", 1)[-1] not in covered or "_" not in n}
    assert missing == set(), f"ops without a gradient test: {sorted(missing)}"


def test_every_case_names_a_real_op():
    """Each row names an op of REGISTRY or one of the composed public ops."""
    unknown = {c.op for c in CASES} - set(REGISTRY) - COMPOSED
    assert unknown == set()
    assert len(set(IDS)) == len(IDS), "duplicate case ids"


# ---------------------------------------------------------------------------
# Broadcasting of element-wise binary ops over any shapes (hypothesis)
# ---------------------------------------------------------------------------

BINARY = {
    "add": (pg.add, lambda xp, a, b: xp.add(a, b), "n"),
    "subtract": (pg.subtract, lambda xp, a, b: xp.subtract(a, b), "n"),
    "multiply": (pg.multiply, lambda xp, a, b: xp.multiply(a, b), "n"),
    "divide": (pg.divide, lambda xp, a, b: xp.divide(a, b), "a"),
    "pow": (pg.pow, lambda xp, a, b: xp.pow(a, b), "p"),
    "maximum": (pg.maximum, lambda xp, a, b: xp.maximum(a, b), "n"),
}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    shapes=mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3),
    name=st.sampled_from(sorted(BINARY)),
    seed=st.integers(0, 2**16),
)
def test_binary_ops_broadcast_any_shapes(xp, shapes, name, seed):
    """For broadcast-compatible shapes, value and gradient (order 2) of binary ops are right."""
    fn, ref, kind = BINARY[name]
    sa, sb = shapes.input_shapes
    a = make_input(xp, ("p" if kind == "p" else "n", sa), seed)
    b = make_input(xp, (kind if kind != "p" else "n", sb), seed + 1)
    y = fn(pg.Variable(a), pg.Variable(b))
    assert tuple(y.shape) == tuple(shapes.result_shape)
    assert_close(y, ref(xp, a, b))
    check_grads(fn, [a, b], order=2)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    data=st.data(),
    shape=array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3),
    name=st.sampled_from(["sum", "mean", "max", "min"]),
    keepdims=st.booleans(),
)
def test_reductions_any_axes_and_keepdims(xp, data, shape, name, keepdims):
    """sum / mean / max / min over any set of axes (negative too, int or tuple), with or without keepdims."""
    ndim = len(shape)
    axes = data.draw(st.lists(st.integers(0, ndim - 1), unique=True)) if ndim else []
    axes = [a - ndim if data.draw(st.booleans()) else a for a in axes]
    axis = None if not axes else axes[0] if len(axes) == 1 and data.draw(st.booleans()) else tuple(axes)
    a = make_input(xp, ("d", shape), 0)
    fn = lambda v: getattr(pg, name)(v, axis=axis, keepdims=keepdims)  # noqa: E731
    assert_close(fn(pg.Variable(a)), getattr(xp, name)(a, axis=axis, keepdims=keepdims))
    check_grads(fn, [a], order=2)


# ---------------------------------------------------------------------------
# Particular semantics the table cannot show
# ---------------------------------------------------------------------------


def test_getitem_repeated_indices_sum_gradients(xp):
    """x[[0, 2, 0, 0]]: the gradient of x[0] is the sum of the three picks."""
    x = pg.Variable(arr(xp, [1.0, 2.0, 3.0]))
    y = x[I(xp, 0, 2, 0, 0)]
    y.backward(arr(xp, [1.0, 10.0, 100.0, 1000.0]))
    assert_close(x.grad, np.array([1101.0, 0.0, 10.0]))


def test_getitem_repeated_pairs_all_axes_sum_gradients(xp):
    """x[i, j] with a repeated (i, j) pair adds both gradients into that element."""
    x = pg.Variable(xp.zeros((2, 3), dtype=xp.float64))
    y = x[I(xp, 0, 1, 0), I(xp, 2, 0, 2)]
    y.backward(arr(xp, [1.0, 2.0, 4.0]))
    assert_close(x.grad, np.array([[0.0, 0.0, 5.0], [2.0, 0.0, 0.0]]))


def test_getitem_row_gather_repeated_numpy():
    """On numpy, x[idx] on a matrix (rows gathered, as an embedding) sums the gradient of repeated rows."""
    with pg.using_backend("numpy") as b:
        x = pg.Variable(b.xp.reshape(b.xp.arange(6, dtype=b.xp.float64), (3, 2)))
        y = x[np.array([2, 0, 2])]
        y.backward(np.ones((3, 2)))
        assert_close(x.grad, np.array([[1.0, 1.0], [0.0, 0.0], [2.0, 2.0]]))
        check_grads(lambda v: v[np.array([2, 0, 2])] * v[np.array([1, 1, 0])], [x.data], order=2)


def test_getitem_with_mixed_array_and_slice_numpy():
    """On numpy, x[idx, 1:] (integer array plus slice) has the right gradient."""
    with pg.using_backend("numpy"):
        data = np.random.default_rng(0).standard_normal((3, 4))
        check_grads(lambda v: v[np.array([0, 0, 2]), 1:], [data], order=2)


def test_setitem_with_int_array_numpy():
    """On numpy (the standard has no integer-array __setitem__), setitem at x[[0, 3]] is differentiable in x and v."""
    with pg.using_backend("numpy"):
        r = np.random.default_rng(1)
        x, v = r.standard_normal(5), r.standard_normal(2)
        y = pg.ops.setitem(pg.Variable(x), np.array([0, 3]), pg.Variable(v))
        want = x.copy()
        want[[0, 3]] = v
        assert_close(y, want)
        check_grads(lambda a, b: pg.ops.setitem(a, np.array([0, 3]), b), [x, v], order=2)


RAW_FIRST = {
    "add": lambda c, v: pg.add(c, v),
    "subtract": lambda c, v: pg.subtract(c, v),
    "multiply": lambda c, v: pg.multiply(c, v),
    "divide": lambda c, v: pg.divide(c, v),
    "pow": lambda c, v: pg.pow(c * c + 0.5, v),
    "maximum": lambda c, v: pg.maximum(c, v),
    "matmul": lambda c, v: pg.matmul(c, v),
    "where": lambda c, v: pg.where(c > 0, c, v * v),
}


@pytest.mark.parametrize("name", sorted(RAW_FIRST))
def test_raw_array_first_operand_double_backward(xp, name):
    """With a raw array (no grad) as first operand, second-order gradients of the Variable operand are right."""
    c = arr(xp, [0.3, -0.2, 1.5])
    check_grads(lambda v: RAW_FIRST[name](c, v), [arr(xp, [0.1, 0.4, -0.7])], order=2)


def test_pow_exponent_zero_has_zero_gradient_at_zero(xp):
    """d/dx x**0 is 0 everywhere, including at x = 0 (no 0 * inf = nan)."""
    x = pg.Variable(arr(xp, [0.0, 2.0]))
    pg.sum(x ** 0).backward()
    assert_close(x.grad, np.array([0.0, 0.0]))


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


def test_relu_and_abs_gradient_at_zero_is_zero(xp):
    """relu'(0) = 0 and abs'(0) = 0."""
    x = pg.Variable(arr(xp, [0.0, 2.0, -2.0]))
    pg.sum(F.relu(x)).backward()
    assert_close(x.grad, np.array([0.0, 1.0, 0.0]))
    x.cleargrad()
    pg.sum(pg.abs(x)).backward()
    assert_close(x.grad, np.array([0.0, 1.0, -1.0]))


def test_astype_gradient_comes_back_in_input_dtype(xp):
    """astype(x64, float32): the gradient of x is float64 again, with the same values."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    y = pg.astype(x, xp.float32)
    assert y.dtype == xp.float32
    pg.sum(y * arr(xp, [3.0, 4.0], "float32")).backward()
    assert x.grad.dtype == xp.float64
    assert_close(x.grad, np.array([3.0, 4.0]))


def test_float32_stays_float32_with_python_scalars(xp):
    """A Python float operand does not promote float32 data or its gradient to float64."""
    x = pg.Variable(arr(xp, [1.0, 2.0], "float32"))
    y = 2.0 * x + 1.0
    assert y.dtype == xp.float32
    pg.sum(pg.exp(y / 3.0)).backward()
    assert x.grad.dtype == xp.float32


def test_sum_with_dtype_gives_gradient_in_input_dtype(xp):
    """sum(x64, dtype=float32): the value is float32, x's gradient float64 (as for astype)."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    y = pg.sum(x, dtype=xp.float32)
    assert y.dtype == xp.float32
    y.backward()
    assert x.grad.dtype == xp.float64


MIXED = {
    "add": pg.add,
    "subtract": pg.subtract,
    "multiply": pg.multiply,
    "divide": pg.divide,
    "maximum": pg.maximum,
    "matmul": pg.matmul,
}


@pytest.mark.parametrize("name", sorted(MIXED))
def test_mixed_precision_gradients_keep_each_input_dtype(xp, name):
    """float32 op float64 promotes the value, but each input's gradient keeps that input's dtype."""
    a = pg.Variable(arr(xp, [1.0, 2.0], "float32"))
    b = pg.Variable(arr(xp, [3.0, 4.0], "float64"))
    y = MIXED[name](a, b)
    assert y.dtype == xp.float64
    pg.sum(y).backward()
    assert a.grad.dtype == xp.float32
    assert b.grad.dtype == xp.float64


def test_reshape_minus_one_infers_size(xp):
    """reshape with -1 infers the missing extent."""
    x = pg.Variable(xp.zeros((2, 3, 4), dtype=xp.float64))
    assert pg.reshape(x, (4, -1)).shape == (4, 6)


def test_inplace_setitem_on_intermediate_backpropagates(xp):
    """``y[0, :] = v`` on an intermediate: y's overwritten entries get no gradient, v gets theirs."""
    x = pg.Variable(arr(xp, [[1.0, 2.0], [3.0, 4.0]]))
    v = pg.Variable(arr(xp, [5.0, 6.0]))
    y = x * 1.0
    y[0, :] = v
    pg.sum(y * arr(xp, [[1.0, 2.0], [3.0, 4.0]])).backward()
    assert_close(y, np.array([[5.0, 6.0], [3.0, 4.0]]))
    assert_close(x.grad, np.array([[0.0, 0.0], [3.0, 4.0]]))
    assert_close(v.grad, np.array([1.0, 2.0]))


def test_double_backward_through_getitem_and_matmul(xp):
    """create_graph through getitem and matmul gives the right second derivative."""
    x = pg.Variable(arr(xp, [1.0, 2.0, 3.0]))
    y = pg.sum(x[I(xp, 0, 0, 2)] ** 3) + x @ x
    (g,) = pg.grad(y, x, create_graph=True)
    assert_close(g, np.array([6.0 + 2.0, 4.0, 27.0 + 6.0]))
    (h,) = pg.grad(pg.sum(g), x)
    assert_close(h, np.array([2 * 6.0 * 1.0 + 2.0, 2.0, 6.0 * 3.0 + 2.0]))


# ---------------------------------------------------------------------------
# Non-differentiable ops
# ---------------------------------------------------------------------------

NONDIFF = {
    "equal": (lambda x, y: x == y, lambda xp, a, b: xp.equal(a, b)),
    "not_equal": (lambda x, y: pg.not_equal(x, y), lambda xp, a, b: xp.not_equal(a, b)),
    "less": (lambda x, y: x < y, lambda xp, a, b: xp.less(a, b)),
    "less_equal": (lambda x, y: pg.less_equal(x, y), lambda xp, a, b: xp.less_equal(a, b)),
    "greater": (lambda x, y: x > y, lambda xp, a, b: xp.greater(a, b)),
    "greater_equal": (lambda x, y: x >= y, lambda xp, a, b: xp.greater_equal(a, b)),
    "sign": (lambda x, y: pg.sign(x - y), lambda xp, a, b: xp.sign(a - b)),
    "zeros_like": (lambda x, y: pg.zeros_like(x), lambda xp, a, b: xp.zeros_like(a)),
    "ones_like": (lambda x, y: pg.ones_like(x), lambda xp, a, b: xp.ones_like(a)),
}


def test_public_nondifferentiable_ops_are_declared_so():
    """Comparisons, sign, zeros_like and ones_like are rows of REGISTRY declared without a gradient."""
    declared = {name for name, op in REGISTRY.items() if not op.differentiable}
    assert set(NONDIFF) <= declared


@pytest.mark.parametrize("name", sorted(NONDIFF))
def test_nondifferentiable_op_value_and_no_grad(xp, name):
    """Comparisons, sign, zeros_like and ones_like give the backend's values and Variables without grad."""
    fn, ref = NONDIFF[name]
    a = arr(xp, [[1.0, 2.0, 3.0], [0.0, -1.0, 5.0]])
    b = arr(xp, [1.0, 0.0, 4.0])
    x, y = pg.Variable(a), pg.Variable(b)
    out = fn(x, y)
    assert out.requires_grad is False
    assert out.creator is None
    assert_close(out, ref(xp, a, b))


def test_zeros_like_and_ones_like_take_dtype(xp):
    """zeros_like / ones_like honour dtype=."""
    x = pg.Variable(arr(xp, [1.5, 2.5]))
    assert pg.zeros_like(x, dtype=xp.float32).dtype == xp.float32
    assert_close(pg.ones_like(x, dtype=xp.int64), np.array([1, 1], dtype=np.int64))


def test_mask_from_comparison_feeds_differentiable_op(xp):
    """A comparison's output used as a where() condition still lets x's gradient through."""
    x = pg.Variable(arr(xp, [-1.0, 2.0, 3.0]))
    pg.sum(pg.where(x > 0.0, x * x, 0.0)).backward()
    assert_close(x.grad, np.array([0.0, 4.0, 6.0]))


# ---------------------------------------------------------------------------
# Raw arrays and Python scalars as operands
# ---------------------------------------------------------------------------


def test_op_on_raw_array_returns_variable_without_grad(xp):
    """pg.exp on a raw backend array gives a Variable (requires_grad False) with exp's value."""
    a = arr(xp, [0.0, 1.0])
    y = pg.exp(a)
    assert isinstance(y, pg.Variable)
    assert y.requires_grad is False
    assert_close(y, xp.exp(a))


def test_ops_on_python_scalars_only_use_current_backend(xp, backend_name):
    """pg.add(1.0, 2.0) and pg.exp(0.0) give 0-d Variables of the current backend."""
    y = pg.add(1.0, 2.0)
    assert isinstance(y, pg.Variable)
    assert y.shape == ()
    assert y.backend.name == backend_name
    assert_close(y, xp.asarray(3.0))
    assert_close(pg.exp(0.0), xp.asarray(1.0))


def test_raw_array_on_right_of_variable(xp):
    """Variable * raw array records a graph for the Variable."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    pg.sum(x * arr(xp, [3.0, 4.0])).backward()
    assert_close(x.grad, np.array([3.0, 4.0]))


def test_numpy_array_on_left_of_variable_defers_to_variable():
    """On numpy, ndarray * Variable and ndarray @ Variable give Variables with graphs."""
    with pg.using_backend("numpy"):
        x = pg.Variable(np.array([1.0, 2.0]))
        y = np.array([3.0, 4.0]) * x
        z = np.eye(2) @ x
        assert isinstance(y, pg.Variable) and isinstance(z, pg.Variable)
        pg.sum(y + z).backward()
        assert_close(x.grad, np.array([4.0, 5.0]))


def test_mixed_backends_refused_with_both_names():
    """An op on numpy and array_api_strict arrays raises TypeError naming both backends."""
    import array_api_strict

    x = pg.Variable(np.array([1.0]))
    with pytest.raises(TypeError, match="numpy.*array_api_strict|array_api_strict.*numpy"):
        x + array_api_strict.asarray([1.0], dtype=array_api_strict.float64)


def test_scalar_operand_records_gradient_only_for_variable(xp):
    """In 3.0 * x, x gets 3, and no other leaf gets a gradient."""
    x = pg.Variable(arr(xp, 2.0))
    y = 3.0 * x - x / 2.0
    y.backward()
    assert_close(x.grad, xp.asarray(2.5, dtype=xp.float64))

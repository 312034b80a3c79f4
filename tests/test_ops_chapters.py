"""The non-elementwise, non-linalg chapters of the Array API standard in polygrad's
op table: creation, manipulation, searching, sets, sorting, statistical, utility
and indexing. Forward against the backend's own function, gradients (float64)
against central differences, on numpy and array_api_strict.

``CASES`` is the table of differentiable functions; ``NONDIFF`` the functions
without a gradient. ``test_every_row_of_these_chapters_has_a_case`` makes a new
row of these chapters without a case fail.
"""

from __future__ import annotations

import dataclasses
import inspect
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes

import polygrad as pg
from polygrad import ops as P
from polygrad.array_api import FUNCTIONS
from polygrad.ops import REGISTRY, Op, creation, indexing, manipulation, searching, sets, sorting, statistical, utility
from polygrad.testing import check_grads

from conftest import arr
from conftest import assert_close

CHAPTERS = (creation, manipulation, searching, sets, sorting, statistical, utility, indexing)

# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------


def make_input(xp, spec, seed):
    """An input array: ('n', shape) normal, ('p', shape) in [0.5, 2], ('d', shape)
    distinct values at least 0.3 apart, or literal values."""
    r = np.random.default_rng(seed)
    if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], str):
        kind, shape = spec
        if kind == "n":
            v = r.standard_normal(shape)
        elif kind == "p":
            v = r.uniform(0.5, 2.0, shape)
        elif kind == "d":
            n = int(np.prod(shape))
            v = (r.permutation(n) * 0.3 - 0.15 * n + 0.05).reshape(shape)
        else:  # pragma: no cover - a typo in the table
            raise ValueError(kind)
        return xp.reshape(arr(xp, np.ravel(v)), tuple(shape))  # (lists lose the shape of empty arrays)
    return arr(xp, spec)


def outputs(y):
    return tuple(y) if isinstance(y, (tuple, list)) else (y,)


class Case:
    """One row: ``fn(xp, *vars)`` with polygrad, ``ref(xp, *arrays)`` with the backend."""

    def __init__(self, op, name, fn, ref, inputs, order=2, **tol):
        self.op, self.name, self.fn, self.ref, self.inputs, self.order, self.tol = op, name, fn, ref, inputs, order, tol

    @property
    def id(self):
        return f"{self.op}-{self.name}"

    def arrays(self, xp):
        return [make_input(xp, s, zlib.crc32(f"{self.id}/{i}".encode())) for i, s in enumerate(self.inputs)]


I = lambda xp, *idx: xp.asarray(list(idx), dtype=xp.int64)  # noqa: E731  an integer index array
WITH_ZEROS = [[1.5, 0.0, 2.0, -1.0], [0.0, 0.7, 0.0, 3.0], [1.2, -0.8, 1.1, 0.0]]

C = Case
CASES = [
    # --- creation --------------------------------------------------------------
    C("asarray", "copy", lambda xp, x: P.asarray(x, copy=True) * x, lambda xp, a: a * a, [("n", (2, 3))]),
    C("asarray", "to_float32", lambda xp, x: P.asarray(x, dtype=xp.float32), lambda xp, a: xp.astype(a, xp.float32),
      [("n", (2, 3))], order=1, eps=1e-2, atol=1e-4, rtol=1e-3),
    C("asarray", "nested_variables", lambda xp, x, y: P.asarray([[x, y], [y, x]]),
      lambda xp, a, b: xp.stack([xp.stack([a, b]), xp.stack([b, a])]), [("n", ()), ("n", ())]),
    C("tril", "k_minus_1", lambda xp, x: P.tril(x, k=-1), lambda xp, a: xp.tril(a, k=-1), [("n", (3, 4))]),
    C("triu", "batched_k_1", lambda xp, x: P.triu(x, k=1), lambda xp, a: xp.triu(a, k=1), [("n", (2, 3, 3))]),
    C("meshgrid", "xy_three", lambda xp, x, y, z: P.meshgrid(x, y, z), lambda xp, a, b, c: xp.meshgrid(a, b, c),
      [("n", (2,)), ("n", (3,)), ("n", (4,))]),
    C("meshgrid", "ij", lambda xp, x, y: P.meshgrid(x, y, indexing="ij"), lambda xp, a, b: xp.meshgrid(a, b, indexing="ij"),
      [("n", (2,)), ("n", (3,))]),
    C("meshgrid", "one_array", lambda xp, x: P.meshgrid(x), lambda xp, a: xp.meshgrid(a), [("n", (3,))]),
    # --- manipulation: shapes ----------------------------------------------------
    C("reshape", "minus_one", lambda xp, x: P.reshape(x, (-1, 2)), lambda xp, a: xp.reshape(a, (-1, 2)), [("n", (2, 6))]),
    C("permute_dims", "3d", lambda xp, x: P.permute_dims(x, (2, 0, 1)), lambda xp, a: xp.permute_dims(a, (2, 0, 1)), [("n", (2, 3, 4))]),
    C("reverse_dims", "3d", lambda xp, x: P.reverse_dims(x), lambda xp, a: xp.permute_dims(a, (2, 1, 0)), [("n", (2, 3, 4))]),
    C("matrix_transpose", "batched", lambda xp, x: P.matrix_transpose(x), lambda xp, a: xp.matrix_transpose(a), [("n", (2, 3, 4))]),
    C("broadcast_to", "3x1_to_2x3x4", lambda xp, x: P.broadcast_to(x, (2, 3, 4)), lambda xp, a: xp.broadcast_to(a, (2, 3, 4)), [("n", (3, 1))]),
    C("sum_to", "leading_and_inner", lambda xp, x: P.sum_to(x, (3, 1)),
      lambda xp, a: xp.sum(xp.sum(a, axis=0), axis=1, keepdims=True), [("n", (2, 3, 4))]),
    C("expand_dims", "axis_tuple", lambda xp, x: P.expand_dims(x, (0, -1)), lambda xp, a: xp.expand_dims(a, axis=(0, -1)), [("n", (2, 3))]),
    C("expand_dims", "negative_axis", lambda xp, x: P.expand_dims(x, -2), lambda xp, a: xp.expand_dims(a, axis=-2), [("n", (2, 3))]),
    C("squeeze", "two_axes", lambda xp, x: P.squeeze(x, axis=(0, 2)), lambda xp, a: xp.squeeze(a, axis=(0, 2)), [("n", (1, 3, 1))]),
    C("moveaxis", "tuples", lambda xp, x: P.moveaxis(x, (0, 1), (2, 0)), lambda xp, a: xp.moveaxis(a, (0, 1), (2, 0)), [("n", (2, 3, 4))]),
    C("moveaxis", "negative", lambda xp, x: P.moveaxis(x, -1, 0), lambda xp, a: xp.moveaxis(a, -1, 0), [("n", (2, 3, 4))]),
    C("flip", "all_axes", lambda xp, x: P.flip(x), lambda xp, a: xp.flip(a), [("n", (2, 3))]),
    C("flip", "axis_tuple", lambda xp, x: P.flip(x, axis=(0, 2)), lambda xp, a: xp.flip(a, axis=(0, 2)), [("n", (2, 3, 4))]),
    C("roll", "flat", lambda xp, x: P.roll(x, 5), lambda xp, a: xp.roll(a, 5), [("n", (3, 4))]),
    C("roll", "axis_tuple", lambda xp, x: P.roll(x, (1, -2), axis=(0, 1)), lambda xp, a: xp.roll(a, (1, -2), axis=(0, 1)), [("n", (3, 4))]),
    C("tile", "more_reps_than_dims", lambda xp, x: P.tile(x, (2, 1, 3)), lambda xp, a: xp.tile(a, (2, 1, 3)), [("n", (2, 3))]),
    C("tile", "fewer_reps_than_dims", lambda xp, x: P.tile(x, (2,)), lambda xp, a: xp.tile(a, (2,)), [("n", (2, 3))]),
    C("repeat", "int_axis", lambda xp, x: P.repeat(x, 3, axis=1), lambda xp, a: xp.repeat(a, 3, axis=1), [("n", (2, 3))]),
    C("repeat", "int_flat", lambda xp, x: P.repeat(x, 2), lambda xp, a: xp.repeat(a, 2), [("n", (2, 3))]),
    C("repeat", "array_axis", lambda xp, x: P.repeat(x, I(xp, 2, 0, 3), axis=1), lambda xp, a: xp.repeat(a, I(xp, 2, 0, 3), axis=1),
      [("n", (2, 3))]),
    C("repeat", "array_flat", lambda xp, x: P.repeat(x, I(xp, 1, 0, 2, 1)), lambda xp, a: xp.repeat(a, I(xp, 1, 0, 2, 1)),
      [("n", (2, 2))]),
    # --- manipulation: sequences -------------------------------------------------
    C("concat", "axis1_three", lambda xp, x, y: P.concat([x, y, x], axis=1), lambda xp, a, b: xp.concat([a, b, a], axis=1),
      [("n", (2, 3)), ("n", (2, 1))]),
    C("concat", "axis_none", lambda xp, x, y: P.concat([x, y], axis=None), lambda xp, a, b: xp.concat([a, b], axis=None),
      [("n", (2, 3)), ("n", (4,))]),
    C("concat", "with_empty", lambda xp, x, y: P.concat((x, y), axis=0), lambda xp, a, b: xp.concat((a, b), axis=0),
      [("n", (0, 3)), ("n", (2, 3))]),
    C("stack", "axis0", lambda xp, x, y: P.stack([x, y]), lambda xp, a, b: xp.stack([a, b]), [("n", (2, 3)), ("n", (2, 3))]),
    C("stack", "axis_minus1", lambda xp, x, y: P.stack((x, y, x), axis=-1), lambda xp, a, b: xp.stack((a, b, a), axis=-1),
      [("n", (2, 3)), ("n", (2, 3))]),
    C("stack", "0d", lambda xp, x, y: P.stack([x, y]), lambda xp, a, b: xp.stack([a, b]), [("n", ()), ("n", ())]),
    C("unstack", "axis1", lambda xp, x: P.unstack(x, axis=1), lambda xp, a: xp.unstack(a, axis=1), [("n", (2, 3))]),
    C("unstack", "one_output_used", lambda xp, x: P.unstack(x)[1] * 2.0, lambda xp, a: xp.unstack(a)[1] * 2.0, [("n", (3, 2))]),
    C("broadcast_arrays", "3x1_and_4", lambda xp, x, y: P.broadcast_arrays(x, y), lambda xp, a, b: xp.broadcast_arrays(a, b),
      [("n", (3, 1)), ("n", (4,))]),
    # --- indexing: x[key] --------------------------------------------------------
    C("getitem", "slices_none_ellipsis", lambda xp, x: x[None, 1:, ..., ::2], lambda xp, a: a[None, 1:, ..., ::2], [("n", (3, 2, 4))]),
    C("getitem", "bool_mask", lambda xp, x: x[x > 0.0], lambda xp, a: a[a > 0.0], [("n", (3, 4))]),
    C("getitem", "bool_mask_leading_axes", lambda xp, x: x[xp.asarray([[True, False, True], [False, False, True]])],
      lambda xp, a: a[xp.asarray([[True, False, True], [False, False, True]])], [("n", (2, 3, 2))]),
    C("getitem", "bool_0d", lambda xp, x: x[xp.asarray(True)], lambda xp, a: a[xp.asarray(True)], [("n", (3, 4))]),
    C("getitem", "bool_0d_false", lambda xp, x: x[xp.asarray(False)], lambda xp, a: a[xp.asarray(False)], [("n", (3, 4))]),
    C("getitem", "ints_and_int_array", lambda xp, x: x[1, I(xp, 0, 2, 0), -1], lambda xp, a: a[1, I(xp, 0, 2, 0), -1], [("n", (2, 3, 4))]),
    C("getitem", "int_arrays_repeated", lambda xp, x: x[I(xp, 0, 2, 0), I(xp, 1, 1, 1)],
      lambda xp, a: a[I(xp, 0, 2, 0), I(xp, 1, 1, 1)], [("n", (3, 2))]),
    C("getitem_grad", "bool_mask", lambda xp, g: P.getitem_grad(g, xp.asarray([True, False, True, True]), (4, 2)),
      lambda xp, g: xp.concat([g[:1, :], xp.zeros((1, 2), dtype=g.dtype), g[1:, :]]), [("n", (3, 2))]),
    C("setitem", "slice_and_int", lambda xp, x, v: P.setitem(x, (slice(0, 2), 1), v),
      lambda xp, a, b: xp.where(xp.asarray([[False, True, False, False]] * 2 + [[False] * 4]), xp.reshape(xp.concat([b, b[:1]]), (3, 1)), a),
      [("n", (3, 4)), ("n", (2,))]),
    # --- indexing: take ----------------------------------------------------------
    C("take", "axis1_repeated", lambda xp, x: P.take(x, I(xp, 2, 0, 2), axis=1), lambda xp, a: xp.take(a, I(xp, 2, 0, 2), axis=1),
      [("n", (2, 3, 4))]),
    C("take", "1d_no_axis", lambda xp, x: P.take(x, I(xp, 3, 0, 3, -1)), lambda xp, a: xp.take(a, I(xp, 3, 0, 3, -1)), [("n", (4,))]),
    C("take", "last_axis", lambda xp, x: P.take(x, I(xp, 1, 1), axis=-1), lambda xp, a: xp.take(a, I(xp, 1, 1), axis=-1), [("n", (2, 3))]),
    C("take", "empty_indices", lambda xp, x: P.take(x, I(xp), axis=0), lambda xp, a: xp.take(a, I(xp), axis=0), [("n", (3, 2))]),
    C("take_grad", "axis1", lambda xp, g: P.take_grad(g, I(xp, 2, 0, 2), 1, (2, 3)),
      lambda xp, g: xp.stack([g[:, 1], xp.zeros((2,), dtype=g.dtype), g[:, 0] + g[:, 2]], axis=1), [("n", (2, 3))]),
    C("take_along_axis", "axis1", lambda xp, x: P.take_along_axis(x, xp.asarray([[0, 2], [1, 1], [3, 0]]), axis=1),
      lambda xp, a: xp.take_along_axis(a, xp.asarray([[0, 2], [1, 1], [3, 0]]), axis=1), [("n", (3, 4))]),
    C("take_along_axis", "axis0_default_last", lambda xp, x: P.take_along_axis(x, xp.asarray([[0], [1], [0]])),
      lambda xp, a: xp.take_along_axis(a, xp.asarray([[0], [1], [0]])), [("n", (3, 2))]),
    C("take_along_axis", "x_broadcast", lambda xp, x: P.take_along_axis(x, xp.asarray([[0, 2], [1, 1]]), axis=1),
      lambda xp, a: xp.take_along_axis(xp.broadcast_to(a, (2, 3)), xp.asarray([[0, 2], [1, 1]]), axis=1), [("n", (1, 3))]),
    C("take_along_axis_grad", "axis0", lambda xp, g: P.take_along_axis_grad(g, xp.asarray([[1, 0, 1]]), 0, (2, 3)),
      lambda xp, g: xp.concat([g * xp.asarray([[0.0, 1.0, 0.0]]), g * xp.asarray([[1.0, 0.0, 1.0]])]), [("n", (1, 3))]),
    # --- sorting and sets ----------------------------------------------------------
    C("sort", "last_axis", lambda xp, x: P.sort(x), lambda xp, a: xp.sort(a), [("d", (3, 4))]),
    C("sort", "axis0_descending", lambda xp, x: P.sort(x, axis=0, descending=True), lambda xp, a: xp.sort(a, axis=0, descending=True),
      [("d", (3, 4))]),
    C("unique_values", "distinct", lambda xp, x: P.unique_values(x), lambda xp, a: xp.unique_values(a), [("d", (3, 4))]),
    C("unique_all", "values", lambda xp, x: P.unique_all(x).values, lambda xp, a: xp.unique_all(a).values, [("d", (2, 3))]),
    C("unique_counts", "values", lambda xp, x: P.unique_counts(x)[0], lambda xp, a: xp.unique_counts(a)[0], [("d", (5,))]),
    C("unique_inverse", "values", lambda xp, x: P.unique_inverse(x).values * 2.0, lambda xp, a: xp.unique_inverse(a).values * 2.0,
      [("d", (2, 2))]),
    # --- statistical -------------------------------------------------------------
    C("sum", "axes_keepdims", lambda xp, x: P.sum(x, axis=(0, 2), keepdims=True), lambda xp, a: xp.sum(a, axis=(0, 2), keepdims=True),
      [("n", (2, 3, 4))]),
    C("sum", "empty", lambda xp, x: P.sum(x, axis=0), lambda xp, a: xp.sum(a, axis=0), [("n", (0, 3))]),
    C("mean", "axes", lambda xp, x: P.mean(x, axis=(1, 2)), lambda xp, a: xp.mean(a, axis=(1, 2)), [("n", (2, 3, 4))]),
    C("max", "axes_keepdims", lambda xp, x: P.max(x, axis=(0, 2), keepdims=True), lambda xp, a: xp.max(a, axis=(0, 2), keepdims=True),
      [("d", (2, 3, 4))]),
    C("min", "negative_axis", lambda xp, x: P.min(x, axis=-1), lambda xp, a: xp.min(a, axis=-1), [("d", (2, 3, 4))]),
    C("prod", "all", lambda xp, x: P.prod(x), lambda xp, a: xp.prod(a), [("n", (2, 3))]),
    C("prod", "axes_keepdims", lambda xp, x: P.prod(x, axis=(0, 2), keepdims=True), lambda xp, a: xp.prod(a, axis=(0, 2), keepdims=True),
      [("n", (2, 3, 4))]),
    C("prod", "zeros_once_and_twice", lambda xp, x: P.prod(x, axis=1), lambda xp, a: xp.prod(a, axis=1), [WITH_ZEROS]),
    C("prod", "0d", lambda xp, x: P.prod(x), lambda xp, a: xp.prod(a), [("n", ())]),
    C("prod", "empty_axis", lambda xp, x: P.prod(x, axis=0), lambda xp, a: xp.prod(a, axis=0), [("n", (0, 3))]),
    C("prod", "float32_result", lambda xp, x: P.prod(x, dtype=xp.float32), lambda xp, a: xp.prod(a, dtype=xp.float32),
      [("n", (3,))], order=1, eps=1e-2, atol=1e-4, rtol=1e-3),
    C("var", "all", lambda xp, x: P.var(x), lambda xp, a: xp.var(a), [("n", (3, 4))]),
    C("var", "axis_correction", lambda xp, x: P.var(x, axis=1, correction=1), lambda xp, a: xp.var(a, axis=1, correction=1),
      [("n", (3, 4))]),
    C("var", "axes_keepdims", lambda xp, x: P.var(x, axis=(0, 2), keepdims=True), lambda xp, a: xp.var(a, axis=(0, 2), keepdims=True),
      [("n", (2, 3, 4))]),
    C("std", "all", lambda xp, x: P.std(x), lambda xp, a: xp.std(a), [("n", (3, 4))]),
    C("std", "axis_correction_keepdims", lambda xp, x: P.std(x, axis=0, correction=1, keepdims=True),
      lambda xp, a: xp.std(a, axis=0, correction=1, keepdims=True), [("n", (3, 4))]),
    C("cumulative_sum", "1d", lambda xp, x: P.cumulative_sum(x), lambda xp, a: xp.cumulative_sum(a), [("n", (5,))]),
    C("cumulative_sum", "axis1_initial", lambda xp, x: P.cumulative_sum(x, axis=1, include_initial=True),
      lambda xp, a: xp.cumulative_sum(a, axis=1, include_initial=True), [("n", (3, 4))]),
    C("cumulative_prod", "axis0", lambda xp, x: P.cumulative_prod(x, axis=0), lambda xp, a: xp.cumulative_prod(a, axis=0), [("n", (3, 4))]),
    C("cumulative_prod", "zeros", lambda xp, x: P.cumulative_prod(x, axis=1), lambda xp, a: xp.cumulative_prod(a, axis=1), [WITH_ZEROS]),
    C("cumulative_prod", "zeros_initial_axis0", lambda xp, x: P.cumulative_prod(x, axis=0, include_initial=True),
      lambda xp, a: xp.cumulative_prod(a, axis=0, include_initial=True), [WITH_ZEROS]),
    C("cumulative_prod", "long_lane", lambda xp, x: P.cumulative_prod(x), lambda xp, a: xp.cumulative_prod(a),
      [[1.1, -0.9, 0.0, 1.2, 0.8, 1.05, 0.0, -1.1, 0.95, 1.3, 0.7]]),
    # --- utility -----------------------------------------------------------------
    C("diff", "default", lambda xp, x: P.diff(x), lambda xp, a: xp.diff(a), [("n", (3, 4))]),
    C("diff", "n2_axis0_prepend_append", lambda xp, x, p, q: P.diff(x, axis=0, n=2, prepend=p, append=q),
      lambda xp, a, b, c: xp.diff(a, axis=0, n=2, prepend=b, append=c), [("n", (3, 2)), ("n", (1, 2)), ("n", (2, 2))]),
]

COMPOSED = {"broadcast_arrays", "meshgrid", "moveaxis", "diff"}  # public functions built from rows (no row of their own)
IDS = [c.id for c in CASES]


# ---------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_forward_matches_backend(xp, case):
    """Each output equals the backend's own function on the same arrays."""
    arrays = case.arrays(xp)
    got = outputs(case.fn(xp, *[pg.Variable(a) for a in arrays]))
    want = outputs(case.ref(xp, *arrays))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert isinstance(g, pg.Variable)
        assert_close(g, w)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_gradient_matches_numerical(xp, case):
    """Plain backward agrees with central differences (order 2: create_graph too), float64."""
    check_grads(lambda *vs: case.fn(xp, *vs), case.arrays(xp), order=case.order, **case.tol)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_backward_gives_input_shaped_grads(xp, case):
    """Backward from every output fills each input's .grad with its shape and dtype."""
    vs = [pg.Variable(a) for a in case.arrays(xp)]
    ys = outputs(case.fn(xp, *vs))
    pg.backward(list(ys), [xp.ones_like(y.data) for y in ys])
    for v in vs:
        assert v.grad is not None
        assert tuple(v.grad.shape) == tuple(v.shape)
        assert v.grad.dtype == v.dtype


def _rows_of_these_chapters():
    return {v.name: v for m in CHAPTERS for v in vars(m).values() if isinstance(v, Op)}


def test_every_row_of_these_chapters_has_a_case():
    """A differentiable row added to these chapters without a case in CASES fails here."""
    rows = {name for name, op in _rows_of_these_chapters().items() if op.differentiable}
    assert rows - {c.op for c in CASES} == set()


def test_every_case_names_a_real_op():
    """Each case names a row of REGISTRY or a composed public function; ids are unique."""
    assert {c.op for c in CASES} - set(REGISTRY) - COMPOSED == set()
    assert len(set(IDS)) == len(IDS)


def test_composed_functions_have_no_row():
    """The composed functions are built from rows and declare none of their own."""
    assert COMPOSED & set(REGISTRY) == set()


# ---------------------------------------------------------------------------
# Signatures and the namespace
# ---------------------------------------------------------------------------

OURS = sorted(n for m in CHAPTERS for n in m.__all__ if n in FUNCTIONS)


def _plain(sig):
    """A signature without annotations; array_api_strict's private "not given"
    sentinel (from_dlpack's defaults) read as the standard's None."""
    params = [p.replace(annotation=inspect.Parameter.empty,
                        default=None if type(p.default).__name__ == "Undef" else p.default) for p in sig.parameters.values()]
    return sig.replace(parameters=params, return_annotation=inspect.Signature.empty)


@pytest.mark.parametrize("name", OURS)
def test_signature_matches_array_api_strict(name):
    """Each function's signature (names, kinds, defaults) is array_api_strict's."""
    import array_api_strict

    ns = pg.Variable(np.zeros(1)).__array_namespace__()
    assert _plain(inspect.signature(getattr(ns, name))) == _plain(inspect.signature(getattr(array_api_strict, name)))


def test_chapters_cover_their_part_of_the_standard():
    """Every function of these chapters in the standard is defined here (broadcast_shapes
    and where live elsewhere; zeros_like/ones_like are element-wise rows)."""
    wanted = {
        "arange", "asarray", "empty", "empty_like", "eye", "from_dlpack", "full", "full_like", "linspace", "meshgrid", "ones",
        "tril", "triu", "zeros", "broadcast_arrays", "broadcast_to", "concat", "expand_dims", "flip", "moveaxis", "permute_dims",
        "repeat", "reshape", "roll", "squeeze", "stack", "tile", "unstack", "argmax", "argmin", "count_nonzero", "nonzero",
        "searchsorted", "isin", "unique_all", "unique_counts", "unique_inverse", "unique_values", "argsort", "sort",
        "cumulative_prod", "cumulative_sum", "max", "mean", "min", "prod", "std", "sum", "var", "all", "any", "diff", "take",
        "take_along_axis",
    }
    assert wanted - set(OURS) == set()


@pytest.mark.parametrize("name", OURS)
def test_namespace_uses_the_op_table(backend_name, name):
    """The Variable namespace's function is polygrad's (wrapped only to create on its backend)."""
    with pg.using_backend(backend_name) as b:
        ns = pg.Variable(b.xp.zeros(1)).__array_namespace__()
    fn = getattr(ns, name)
    assert getattr(fn, "__wrapped__", fn) is getattr(P, name)


# ---------------------------------------------------------------------------
# Creation
# ---------------------------------------------------------------------------

CREATE = {
    "arange": (lambda m, xp: m.arange(1.0, 3.0, 0.5, dtype=xp.float64), lambda xp: xp.arange(1.0, 3.0, 0.5, dtype=xp.float64)),
    "arange_stop": (lambda m, xp: m.arange(4), lambda xp: xp.arange(4)),
    "zeros": (lambda m, xp: m.zeros((2, 3)), lambda xp: xp.zeros((2, 3))),
    "ones": (lambda m, xp: m.ones(3, dtype=xp.int32), lambda xp: xp.ones(3, dtype=xp.int32)),
    "full": (lambda m, xp: m.full((2,), 7.5, dtype=xp.float32), lambda xp: xp.full((2,), 7.5, dtype=xp.float32)),
    "eye": (lambda m, xp: m.eye(3, 4, k=1), lambda xp: xp.eye(3, 4, k=1)),
    "linspace": (lambda m, xp: m.linspace(0.0, 1.0, 5, endpoint=False), lambda xp: xp.linspace(0.0, 1.0, 5, endpoint=False)),
    "asarray": (lambda m, xp: m.asarray([[1, 2], [3, 4]], dtype=xp.float32), lambda xp: xp.asarray([[1, 2], [3, 4]], dtype=xp.float32)),
}


@pytest.mark.parametrize("name", sorted(CREATE))
def test_creation_on_the_current_backend(xp, backend_name, name):
    """pg.ops creation functions make Variables of the current backend, without grad, as the backend would."""
    fn, ref = CREATE[name]
    out = fn(P, xp)
    assert isinstance(out, pg.Variable)
    assert out.backend.name == backend_name
    assert out.requires_grad is False
    assert_close(out, ref(xp))


@pytest.mark.parametrize("name", sorted(CREATE))
def test_namespace_creates_on_its_own_backend(name):
    """A backend's namespace creates on that backend even while another one is current."""
    import array_api_strict

    ns = pg.Variable(array_api_strict.zeros(1)).__array_namespace__()
    fn, ref = CREATE[name]
    with pg.using_backend("numpy"):
        out = fn(ns, array_api_strict)
    assert out.backend.name == "array_api_strict"
    assert_close(out, ref(array_api_strict))


def test_empty_and_empty_like_shape_and_dtype(xp):
    """empty / empty_like give the asked shape and dtype (values are arbitrary) and no gradient."""
    x = pg.Variable(arr(xp, [[1.0, 2.0, 3.0]]))
    assert (P.empty((2, 3), dtype=xp.float32).shape, P.empty(4).ndim) == ((2, 3), 1)
    e = P.empty_like(x, dtype=xp.int64)
    assert (e.shape, e.dtype, e.requires_grad) == ((1, 3), xp.int64, False)


def test_full_like_value_and_no_grad(xp):
    """full_like fills with the value, keeps x's dtype unless told, and gives no gradient."""
    x = pg.Variable(arr(xp, [[1.0, 2.0], [3.0, 4.0]]))
    y = P.full_like(x, 2.5)
    assert y.requires_grad is False and y.creator is None
    assert_close(y, np.full((2, 2), 2.5))
    assert P.full_like(x, 1, dtype=xp.int32).dtype == xp.int32


def test_asarray_of_a_variable_is_the_variable(xp):
    """asarray(v) returns v itself; copy=True gives a new array whose gradient reaches v."""
    v = pg.Variable(arr(xp, [1.0, 2.0]))
    assert P.asarray(v) is v
    assert P.asarray(v, dtype=xp.float64, copy=False) is v
    c = P.asarray(v, copy=True)
    assert c is not v and c.data is not v.data
    pg.sum(c * arr(xp, [3.0, 4.0])).backward()
    assert_close(v.grad, np.array([3.0, 4.0]))


def test_asarray_copy_false_with_a_new_dtype_raises(xp):
    """asarray(v, dtype=other, copy=False) cannot avoid a copy: ValueError."""
    with pytest.raises(ValueError, match="copy=False"):
        P.asarray(pg.Variable(arr(xp, [1.0])), dtype=xp.float32, copy=False)


def test_asarray_moves_a_foreign_array_to_the_current_backend():
    """asarray of a numpy array while array_api_strict is current gives a strict Variable."""
    with pg.using_backend("array_api_strict"):
        out = P.asarray(np.array([1.0, 2.0]))
    assert out.backend.name == "array_api_strict"
    assert_close(out, np.array([1.0, 2.0]))


def test_asarray_refuses_to_move_a_variable_needing_grad_across_backends():
    """A Variable that requires grad is not silently detached onto another backend."""
    v = pg.Variable(np.array([1.0]))
    with pg.using_backend("array_api_strict"), pytest.raises(TypeError, match="no gradient crosses backends"):
        P.asarray(v)


def test_from_dlpack_of_a_numpy_array_on_strict():
    """from_dlpack takes another library's array onto the current backend, without grad."""
    with pg.using_backend("array_api_strict"):
        out = P.from_dlpack(np.arange(3.0))
    assert out.backend.name == "array_api_strict" and out.requires_grad is False
    assert_close(out, np.arange(3.0))


def test_from_dlpack_of_a_variable_keeps_its_graph(xp):
    """from_dlpack of a Variable of the current backend is the Variable (gradient flows)."""
    v = pg.Variable(arr(xp, [1.0, 2.0]))
    assert P.from_dlpack(v) is v


def test_tril_triu_sum_to_the_whole(xp):
    """tril(x) + triu(x, k=1) == x, and its gradient is all ones."""
    x = pg.Variable(make_input(xp, ("n", (3, 3)), 0))
    y = P.tril(x) + P.triu(x, k=1)
    assert_close(y, x.data)
    pg.sum(y).backward()
    assert_close(x.grad, np.ones((3, 3)))


# ---------------------------------------------------------------------------
# Particular semantics
# ---------------------------------------------------------------------------


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


def test_unstack_gradient_of_unused_outputs_is_zero(xp):
    """Outputs of unstack left out of the loss contribute zeros."""
    x = pg.Variable(arr(xp, [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))
    a, b, c = P.unstack(x)
    pg.sum(b).backward()
    assert_close(x.grad, np.array([[0.0, 0.0], [1.0, 1.0], [0.0, 0.0]]))


def test_concat_mixed_precision_grads_keep_their_dtype(xp):
    """concat of float32 and float64 is float64; each input's gradient keeps its own dtype."""
    a = pg.Variable(arr(xp, [1.0], "float32"))
    b = pg.Variable(arr(xp, [2.0, 3.0]))
    y = P.concat([a, b])
    assert y.dtype == xp.float64
    pg.sum(y).backward()
    assert (a.grad.dtype, b.grad.dtype) == (xp.float32, xp.float64)


def test_take_repeated_indices_sum_gradients(xp):
    """take with a repeated index adds the gradients of the repeats."""
    x = pg.Variable(arr(xp, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
    P.take(x, I(xp, 2, 2, 0), axis=1).backward(arr(xp, [[1.0, 10.0, 100.0], [1.0, 1.0, 1.0]]))
    assert_close(x.grad, np.array([[100.0, 0.0, 11.0], [1.0, 0.0, 2.0]]))


def test_bool_mask_getitem_gradient(xp):
    """x[mask]: the selected elements get their gradient, the others 0."""
    x = pg.Variable(arr(xp, [[1.0, -2.0], [-3.0, 4.0]]))
    x[x.data > 0.0].backward(arr(xp, [10.0, 20.0]))
    assert_close(x.grad, np.array([[10.0, 0.0], [0.0, 20.0]]))


def test_mixed_advanced_and_basic_keys_numpy():
    """On numpy, keys mixing arrays, masks, slices, None and ... have the right gradient."""
    r = np.random.default_rng(0)
    data = r.standard_normal((3, 4, 5))
    mask = np.array([True, False, True, True])
    keys = [(np.array([0, 2, 0]), slice(1, None)), (slice(None), mask), (None, 1, mask, ...), (..., np.array([[4, 0], [0, 0]]))]
    with pg.using_backend("numpy"):
        for key in keys:
            assert_close(pg.Variable(data)[key], data[key])
            check_grads(lambda v: v[key], [data], order=2)


def test_getitem_grad_without_a_scatter_hook_handles_mixed_keys():
    """With only the standard's scatter-add, a key it cannot take goes through flat positions."""
    import numpy as np

    from polygrad.backends import _generic_scatter_add

    backend = pg.get_backend("numpy")
    g = np.arange(6.0).reshape(3, 2)
    key = (np.array([0, 2, 0]), slice(1, None))
    want = np.zeros((3, 3))
    np.add.at(want, key, g)
    backend._scatter_add, saved = _generic_scatter_add(backend), backend._scatter_add
    try:
        got = P.getitem_grad(g, key, (3, 3))
    finally:
        backend._scatter_add = saved
    assert_close(got, want)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    data=st.data(),
    shape=array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3),
    name=st.sampled_from(["prod", "var", "std", "sum", "mean"]),
    keepdims=st.booleans(),
)
def test_reductions_any_axes_and_keepdims(xp, data, shape, name, keepdims):
    """prod / var / std / sum / mean over any axes (int, tuple, negative), any keepdims, empty too."""
    ndim = len(shape)
    axes = data.draw(st.lists(st.integers(0, ndim - 1), unique=True)) if ndim else []
    axes = [a - ndim if data.draw(st.booleans()) else a for a in axes]
    axis = None if not axes else axes[0] if len(axes) == 1 and data.draw(st.booleans()) else tuple(axes)
    a = make_input(xp, ("n" if name == "prod" else "d", shape), 0)
    if name in ("var", "std", "mean") and 0 in [shape[i] for i in (range(ndim) if axis is None else axes)]:
        return  # mean over nothing is nan (no derivative to check)
    fn = lambda v: getattr(P, name)(v, axis=axis, keepdims=keepdims)  # noqa: E731
    assert_close(fn(pg.Variable(a)), getattr(xp, name)(a, axis=axis, keepdims=keepdims))
    check_grads(fn, [a], order=2)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    shape=array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4),
    name=st.sampled_from(["cumulative_sum", "cumulative_prod"]),
    axis_seed=st.integers(0, 5),
    initial=st.booleans(),
)
def test_cumulative_any_shape_and_axis(xp, shape, name, axis_seed, initial):
    """cumulative_sum / cumulative_prod along any axis of any shape (empty too), with or without the initial value."""
    axis = axis_seed % len(shape) - (len(shape) if axis_seed % 2 else 0)
    a = make_input(xp, ("n", shape), axis_seed)
    fn = lambda v: getattr(P, name)(v, axis=axis, include_initial=initial)  # noqa: E731
    assert_close(fn(pg.Variable(a)), getattr(xp, name)(a, axis=axis, include_initial=initial))
    check_grads(fn, [a], order=2)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shape=array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=3), data=st.data())
def test_concat_and_stack_any_shapes(xp, shape, data):
    """concat along any axis of arrays differing on it, and stack at any position, with gradients."""
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    other = tuple(data.draw(st.integers(0, 3)) if i == axis % len(shape) else n for i, n in enumerate(shape))
    a, b = make_input(xp, ("n", shape), 1), make_input(xp, ("n", other), 2)
    assert_close(P.concat([pg.Variable(a), pg.Variable(b)], axis=axis), xp.concat([a, b], axis=axis))
    check_grads(lambda u, v: P.concat([u, v, u], axis=axis), [a, b], order=1)
    at = data.draw(st.integers(-len(shape) - 1, len(shape)))
    assert_close(P.stack([pg.Variable(a), pg.Variable(a)], axis=at), xp.stack([a, a], axis=at))
    check_grads(lambda u: P.stack([u, u * 2.0], axis=at), [a], order=1)


# ---------------------------------------------------------------------------
# Functions without a gradient
# ---------------------------------------------------------------------------

V = [[0.5, -1.5, 2.0, 0.0], [3.0, 0.0, -1.0, 2.0]]
INT = lambda x: x.__array_namespace__().int64  # noqa: E731  the int64 of x's namespace
SORTED = [-1.0, 0.0, 0.5, 2.0, 3.0]
NONDIFF = {
    "argmax": (lambda m, x: m.argmax(x, axis=1, keepdims=True), None),
    "argmin": (lambda m, x: m.argmin(x), None),
    "count_nonzero": (lambda m, x: m.count_nonzero(x, axis=(0, 1)), None),
    "nonzero": (lambda m, x: m.nonzero(x), None),
    "searchsorted": (lambda m, x: m.searchsorted(x[0, ...], x[1, ...], side="right"), lambda xp: xp.stack([xp.asarray(SORTED), xp.asarray(SORTED)])),
    "searchsorted_scalar": (lambda m, x: m.searchsorted(x, 1.0), lambda xp: xp.asarray(SORTED)),
    "isin": (lambda m, x: m.isin(m.astype(x, INT(x)), m.astype(x[0, ...], INT(x)), invert=True), None),
    "isin_scalar": (lambda m, x: m.isin(m.astype(x, INT(x)), 2), None),
    "argsort": (lambda m, x: m.argsort(x, axis=0, descending=True), None),
    "all": (lambda m, x: m.all(x, axis=(0, 1), keepdims=True), None),
    "any": (lambda m, x: m.any(x, axis=1), None),
    "unique_all": (lambda m, x: m.unique_all(x)[1:], None),
    "unique_counts": (lambda m, x: m.unique_counts(x).counts, None),
    "unique_inverse": (lambda m, x: m.unique_inverse(x).inverse_indices, None),
    "full_like": (lambda m, x: m.full_like(x, 3.0), None),
    "tile_int": (lambda m, x: m.tile(m.astype(x, x.dtype) > 0, (2,)), None),
}


@pytest.mark.parametrize("name", sorted(NONDIFF))
def test_nondifferentiable_value_and_no_grad(xp, name):
    """Index, count, boolean and search results match the backend and never require grad."""
    fn, make = NONDIFF[name]
    a = xp.asarray(V, dtype=xp.float64) if make is None else make(xp)
    got = outputs(fn(P, pg.Variable(a)))
    want = outputs(fn(xp, a))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.requires_grad is False and g.creator is None
        assert_close(g, w, rtol=0, atol=0)


def test_searching_and_sorting_rows_are_declared_without_gradient():
    """The index-valued rows are declared non-differentiable in REGISTRY."""
    names = ["argmax", "argmin", "count_nonzero", "nonzero", "searchsorted", "isin", "argsort", "all", "any",
             "arange", "empty", "empty_like", "eye", "from_dlpack", "full", "full_like", "linspace", "ones", "zeros"]
    assert [n for n in names if REGISTRY[n].differentiable] == []


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


@pytest.mark.parametrize("name", ["prod", "cumulative_prod"])
def test_complex_gradient_of_products_is_refused_clearly(name):
    """prod / cumulative_prod of complex input: NotImplementedError naming the op, not a wrong gradient."""
    x = pg.Variable(np.array([1.0 + 2.0j, 3.0 - 1.0j]))
    y = getattr(P, name)(x)
    with pytest.raises(NotImplementedError, match=f"gradient of {name} for complex"):
        pg.sum(y).backward()


def test_linear_ops_carry_complex_gradients():
    """Real linear rows (concat, flip, take) route complex gradients unchanged (their adjoint is the transpose)."""
    x = pg.Variable(np.array([1.0 + 2.0j, 3.0 - 1.0j]))
    y = P.take(P.flip(P.concat([x, x])), np.array([0, 1, 1]))  # [x1, x0, x0]
    y.backward(np.array([1.0, 1.0j, 2.0]))
    np.testing.assert_allclose(x.grad, np.array([2.0 + 1.0j, 1.0]))

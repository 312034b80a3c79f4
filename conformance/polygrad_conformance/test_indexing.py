"""Indexing backward: the backend's scatter-add sums repeated indices, for the
keys getitem accepts."""

from __future__ import annotations

import pytest

import polygrad as pg
from polygrad_conformance._util import assert_same, index_dtype, tolist


def _onehot_scatter(xp, x, lin, values):
    """Reference: ``x`` with ``values`` added at flat positions ``lin`` (repeats summed), by one-hot matmul."""
    n = 1
    for d in x.shape:
        n *= d
    lin = xp.reshape(lin, (-1,))
    onehot = xp.astype(xp.reshape(lin, (-1, 1)) == xp.reshape(xp.arange(n, dtype=lin.dtype), (1, -1)), x.dtype)
    add = xp.matmul(xp.reshape(values, (1, -1)), onehot)
    return x + xp.reshape(add, x.shape)


def _key_cases(xp):
    i = xp.asarray([0, 2, 0, 3, 0], dtype=index_dtype(xp))
    j = xp.asarray([1, 1, 1, 0, 2], dtype=index_dtype(xp))
    return {
        "two_arrays": ((i, j), i * 3 + j, (5,)),
        "array_and_int": ((i, 2), i * 3 + 2, (5,)),
        "basic": ((slice(1, 3), slice(None)), xp.asarray([3, 4, 5, 6, 7, 8], dtype=index_dtype(xp)), (2, 3)),
        "int_and_slice": ((2, slice(None)), xp.asarray([6, 7, 8], dtype=index_dtype(xp)), (3,)),
    }


@pytest.mark.parametrize("key_name", ["two_arrays", "array_and_int", "basic", "int_and_slice"])
def test_scatter_add_sums_repeated_indices(pg_backend, xp, float_dtype, tol, key_name):
    """backend.scatter_add(x, key, values) == x with values added at x[key], repeated indices summed; x unchanged."""
    key, lin, vshape = _key_cases(xp)[key_name]
    x = xp.reshape(xp.arange(12, dtype=float_dtype), (4, 3))
    before = tolist(x)
    n = 1
    for d in vshape:
        n *= d
    values = xp.reshape(xp.arange(1, n + 1, dtype=float_dtype), vshape)
    out = pg_backend.scatter_add(x, key, values)
    assert_same(out, _onehot_scatter(xp, x, lin, values), backend=pg_backend, rtol=tol.rtol, atol=tol.atol, what=key_name)
    assert tolist(x) == before, "scatter_add changed its input"


def test_scatter_add_broadcasts_values(pg_backend, xp, float_dtype, tol):
    """A scalar-shaped value is broadcast to x[key]'s shape before adding."""
    i = xp.asarray([1, 1, 3], dtype=index_dtype(xp))
    j = xp.asarray([0, 0, 2], dtype=index_dtype(xp))
    x = xp.zeros((4, 3), dtype=float_dtype)
    out = pg_backend.scatter_add(x, (i, j), xp.asarray(2.0, dtype=float_dtype))
    expected = _onehot_scatter(xp, x, i * 3 + j, xp.full((3,), 2.0, dtype=float_dtype))
    assert_same(out, expected, backend=pg_backend, rtol=tol.rtol, atol=tol.atol)


def test_getitem_backward_counts_repeats(xp, float_dtype):
    """sum(x[i, j]).backward(): each element's gradient is how often (i, j) names it."""
    x = pg.Variable(xp.zeros((3, 2), dtype=float_dtype))
    i = xp.asarray([0, 0, 2, 0], dtype=index_dtype(xp))
    j = xp.asarray([1, 1, 0, 1], dtype=index_dtype(xp))
    pg.sum(x[i, j]).backward()
    assert tolist(x.grad) == [[0.0, 3.0], [0.0, 0.0], [1.0, 0.0]]


@pytest.mark.requires("data_dependent_shapes")
def test_boolean_mask_backward(xp, float_dtype):
    """sum(x[mask] * 2).backward() gives 2 where the mask is True, 0 elsewhere."""
    x = pg.Variable(xp.asarray([[1.0, 2.0], [3.0, 4.0]], dtype=float_dtype))
    mask = xp.asarray([[True, False], [False, True]])
    pg.sum(x[mask] * 2.0).backward()
    assert tolist(x.grad) == [[2.0, 0.0], [0.0, 2.0]]

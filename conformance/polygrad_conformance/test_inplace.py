"""In-place operations: written into the array where the backend supports
in-place writes (BackendInfo.inplace), rebound functionally otherwise; version
counters catch arrays that backward needs and that were changed."""

from __future__ import annotations

import pytest

import polygrad as pg
from polygrad_conformance._util import tolist


def _x(xp, dtype, requires_grad=True):
    return pg.Variable(xp.asarray([1.0, 2.0, 3.0], dtype=dtype), requires_grad=requires_grad)


@pytest.mark.requires("inplace")
def test_inplace_op_writes_into_the_array(xp, float_dtype):
    """x += 1 writes into x's array: another holder of that array sees the change; the version goes up."""
    x = _x(xp, float_dtype, requires_grad=False)
    alias = x.data
    x += 1.0
    assert x.data is alias
    assert tolist(alias) == [2.0, 3.0, 4.0]
    assert x.version == 1


def test_inplace_op_without_writes_rebinds(info, xp, float_dtype):
    """Where arrays cannot be written (inplace=False), x += 1 rebinds x.data and leaves the old array as it was."""
    if info.inplace:
        pytest.skip("backend writes in place (covered by test_inplace_op_writes_into_the_array)")
    x = _x(xp, float_dtype, requires_grad=False)
    old = x.data
    x += 1.0
    assert x.data is not old
    assert tolist(old) == [1.0, 2.0, 3.0]
    assert tolist(x) == [2.0, 3.0, 4.0]
    assert x.version == 1


def test_inplace_on_intermediate_keeps_gradient_right(xp, float_dtype):
    """y = x * 2; y += x; backward gives dy/dx = 3, however the backend applies the in-place op."""
    x = _x(xp, float_dtype)
    y = x * 2.0
    y += x
    pg.sum(y).backward()
    assert tolist(x.grad) == [3.0, 3.0, 3.0]


@pytest.mark.requires("inplace")
def test_modifying_a_saved_array_is_an_error(xp, float_dtype):
    """y = exp(x) saves y for backward; y *= 2 writes into it, so backward raises naming the in-place change."""
    x = _x(xp, float_dtype)
    y = pg.exp(x)
    z = pg.sum(y)
    y *= 2.0
    with pytest.raises(RuntimeError, match="in-place"):
        (pg.sum(y) + z).backward()


def test_changing_a_saved_array_without_writes_keeps_gradients_right(info, xp, float_dtype):
    """Where arrays cannot be written (inplace=False), y *= 2 rebinds y: exp's saved output is intact, so
    backward is right (no error): d/dx (sum(2 exp x) + sum(exp x)) = 3 exp x."""
    if info.inplace:
        pytest.skip("backend writes in place (covered by test_modifying_a_saved_array_is_an_error)")
    x = _x(xp, float_dtype)
    y = pg.exp(x)
    z = pg.sum(y)
    y *= 2.0
    (pg.sum(y) + z).backward()
    expected = [3 * v for v in tolist(pg.exp(x))]
    assert all(abs(a - b) <= 1e-5 * abs(b) for a, b in zip(tolist(x.grad), expected))


def test_inplace_on_leaf_requiring_grad_is_an_error(xp, float_dtype):
    """x += 1 on a leaf that requires grad raises; under no_backprop_mode it is allowed."""
    x = _x(xp, float_dtype)
    with pytest.raises(RuntimeError, match="in-place"):
        x += 1.0
    with pg.no_backprop_mode():
        x += 1.0
    assert tolist(x) == [2.0, 3.0, 4.0]


def test_setitem_on_variable_is_differentiable(xp, float_dtype):
    """v[0] = 0 on an intermediate: the overwritten element passes no gradient back."""
    x = _x(xp, float_dtype)
    v = x * 3.0
    v[0] = 0.0
    pg.sum(v).backward()
    assert tolist(v) == [0.0, 6.0, 9.0]
    assert tolist(x.grad) == [0.0, 3.0, 3.0]


@pytest.mark.requires("inplace")
def test_gradients_and_copies_share_no_memory(xp, float_dtype):
    """Each leaf's .grad is its own array, and asarray(copy=True) a copy: a plugin whose
    owns_memory answered True for views, or whose namespace's asarray(copy=True) returned its
    input, made x.grad and w.grad one buffer (writing into one changed the other) and passed."""
    x = pg.Variable(xp.ones((2, 2), dtype=float_dtype))
    w = pg.Variable(xp.ones((4,), dtype=float_dtype))
    pg.sum((pg.reshape(x, (4,)) + w) * 2.0).backward()
    x.grad[0, 0] = 0.0
    assert tolist(w.grad) == [2.0, 2.0, 2.0, 2.0]
    a, b = pg.Variable(xp.ones((3,), dtype=float_dtype)), pg.Variable(xp.ones((3,), dtype=float_dtype))
    pg.sum(a + b).backward()
    a.grad[0] = 5.0
    assert tolist(b.grad) == [1.0, 1.0, 1.0]
    data = xp.ones((3,), dtype=float_dtype)
    copy = xp.asarray(data, copy=True)
    copy[0] = 7.0
    assert tolist(data) == [1.0, 1.0, 1.0]

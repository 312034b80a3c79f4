"""A backend whose arrays refuse writes (as jax's), declared ``inplace=False`` and
without a scatter-add hook: polygrad's standard-only scatter-add and indexing
backward work on it without writing into any of its arrays
(tests/plugins/immutable_backend.py is the stand-in)."""

from __future__ import annotations

import numpy as np
import pytest

import polygrad as pg
import polygrad._defaults as D
from plugins import immutable_backend
from registry_state import registry_state  # noqa: F401 (a fixture)

X = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]


@pytest.fixture
def immutable(registry_state):
    """The stand-in immutable backend, registered by hand for one test."""
    pg.register_plugin(immutable_backend, name="immutable-plugin")
    return pg.get_backend(immutable_backend.NAME)


def _frozen(data):
    """A raw array of the stand-in backend."""
    return immutable_backend.xp.asarray(data)


def test_stand_in_arrays_refuse_writes_even_on_a_copy(immutable):
    """The stand-in is faithful: x[key] = v raises, on a copy too; it declares inplace=False and no scatter-add hook."""
    copy = immutable.xp.asarray(_frozen(X), copy=True)
    with pytest.raises(TypeError, match="immutable"):
        copy[0, 0] = 1.0
    assert immutable.inplace is False and immutable.scatter_add.__func__ is type(immutable).scatter_add
    assert immutable._hook.polygrad_scatter_add(backend=immutable.name) is D.scatter_add


@pytest.mark.parametrize("key", [
    (0, slice(None)), (slice(None), slice(None, None, -2)), (Ellipsis, 1), (None, 1, slice(1, 3)),
], ids=["int_row", "negative_step", "ellipsis", "new_axis"])
def test_default_scatter_add_at_a_basic_key_writes_nothing(immutable, key):
    """The standard-only scatter-add adds 2 at a basic key on the immutable backend and leaves x as it was."""
    x = _frozen(np.ones((2, 3)).tolist())
    got = D.scatter_add(x, key, 2.0)
    expected = np.ones((2, 3))
    expected[key] += 2.0
    assert type(got) is immutable_backend.FrozenArray
    np.testing.assert_array_equal(np.asarray(got), expected)
    np.testing.assert_array_equal(np.asarray(x), np.ones((2, 3)))


def test_default_scatter_add_sums_repeated_integer_indices_without_writes(immutable):
    """The standard-only scatter-add sums repeated integer indices on the immutable backend."""
    got = D.scatter_add(_frozen([0.0, 0.0, 0.0]), (immutable.xp.asarray([0, 0, 2]),), _frozen([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(np.asarray(got), [3.0, 0.0, 3.0])


@pytest.mark.parametrize("key", [
    (slice(0, 1), slice(None, None, 2)), (1, Ellipsis), (None, slice(None), -1),
], ids=["slices", "int_ellipsis", "new_axis"])
def test_getitem_backward_at_a_basic_key(immutable, key):
    """getitem backward at a basic key on the immutable backend gives numpy's gradient."""
    x = pg.Variable(_frozen(X))
    pg.sum(x[key] * 3.0).backward()
    expected = np.zeros((2, 3))
    expected[key[1:] if key[0] is None else key] = 3.0
    np.testing.assert_array_equal(np.asarray(x.grad), expected)


def test_getitem_backward_with_repeated_integer_indices(immutable):
    """getitem backward with a repeated integer array on the immutable backend counts the repeats."""
    x = pg.Variable(_frozen(X))
    pg.sum(x[immutable.xp.asarray([0, 0, 1]), 2] * 2.0).backward()
    np.testing.assert_array_equal(np.asarray(x.grad), [[0.0, 0.0, 4.0], [0.0, 0.0, 2.0]])


def test_take_backward(immutable):
    """take's backward (a scatter-add on the leading axis) works on the immutable backend."""
    x = pg.Variable(_frozen(X))
    pg.sum(pg.take(x, immutable.xp.asarray([2, 2, 0]), axis=1)).backward()
    np.testing.assert_array_equal(np.asarray(x.grad), [[1.0, 0.0, 2.0], [1.0, 0.0, 2.0]])


def test_item_assignment_on_a_variable_builds_the_result_without_writes(immutable):
    """x[key] = v on a Variable of an immutable backend: no array is written; values and gradients right."""
    x = pg.Variable(_frozen([1.0, 2.0, 3.0, 4.0]))
    h = x * 2
    h[1:3] = 0.0
    h[immutable.xp.asarray([0])] = 10.0
    np.testing.assert_array_equal(np.asarray(h.data), [10.0, 0.0, 0.0, 8.0])
    pg.sum(h * h).backward()
    np.testing.assert_array_equal(np.asarray(x.grad), [0.0, 0.0, 0.0, 32.0])


@pytest.mark.parametrize("backend", ["immutable", "strict", "dask"])
def test_item_assignment_at_a_repeated_position_keeps_the_last_write_exactly(immutable, backend):
    """Where a key writes a position twice, a backend without writes kept the mean of the
    values (1.5 for 1 and 2; three writes of 0.1 gave 0.10000000000000002; int8 127 and 127
    overflowed to -1), where numpy keeps the last; now the last write, taken, never computed."""
    name = immutable_backend.NAME if backend == "immutable" else backend
    with pg.using_backend(name):
        xp = pg.get_backend(name).xp
        cases = [([0.0, 0.0, 0.0], [0, 0, 2], [1.0, 2.0, 3.0], "float64"),
                 ([0.0, 0.0], [1, 1, 1], [0.1, 0.1, 0.1], "float64"),
                 ([0, 0], [0, 0], [127, 127], "int8"),
                 ([False, False, True], [2, 0, 2], [True, True, False], "bool")]
        for x, idx, v, dtype in cases:
            h = pg.Variable(xp.asarray(x, dtype=getattr(xp, dtype)), requires_grad=False)
            h[xp.asarray(idx)] = xp.asarray(v, dtype=getattr(xp, dtype))
            expected = np.asarray(x, dtype=dtype)
            expected[np.asarray(idx)] = np.asarray(v, dtype=dtype)
            got = np.asarray(pg.to_backend(h, "numpy").data)
            assert got.dtype == expected.dtype and np.array_equal(got, expected), (x, idx, v, got)
        h = pg.Variable(xp.asarray(np.zeros((2, 3))), requires_grad=False)  # two index arrays, broadcast
        h[xp.asarray([[0], [1]]), xp.asarray([2, 0, 2])] = xp.asarray([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        np.testing.assert_array_equal(np.asarray(pg.to_backend(h, "numpy").data), [[2.0, 0.0, 3.0], [5.0, 0.0, 6.0]])


# --- Views made outside recording, on arrays that do not share writes -----------------------
# A view made under no_backprop_mode (or of a base that requires no gradient) has no graph
# node to name its base. On a backend without in-place writes a write through it used to
# rebind the view alone (editing a parameter's row left the parameter unchanged), and a
# write to the base left such views with the old values: on numpy the shared memory hid it.


def test_a_write_through_an_unrecorded_view_reaches_its_base(immutable):
    W = pg.Variable(_frozen(np.arange(6.0).reshape(2, 3)))
    with pg.no_backprop_mode():
        row = W[0, :]
        row *= 0.0
        col = W[:, 1:2]  # a view of another part, taken before the next write
        W += 1.0
    np.testing.assert_array_equal(np.asarray(W.data), [[1.0, 1.0, 1.0], [4.0, 5.0, 6.0]])
    np.testing.assert_array_equal(np.asarray(row.data), [1.0, 1.0, 1.0])  # views follow their base
    np.testing.assert_array_equal(np.asarray(col.data), [[1.0], [5.0]])


def test_unrecorded_views_of_views_and_several_outputs(immutable):
    c = pg.Variable(_frozen(np.arange(6.0).reshape(2, 3)), requires_grad=False)
    inner = c[1, :][0:2]  # a view of a view
    inner += 10.0
    np.testing.assert_array_equal(np.asarray(c.data), [[0.0, 1.0, 2.0], [13.0, 14.0, 5.0]])
    a, b = pg.unstack(c, axis=0)
    b *= 0.0
    np.testing.assert_array_equal(np.asarray(c.data), [[0.0, 1.0, 2.0], [0.0, 0.0, 0.0]])
    c -= 1.0
    np.testing.assert_array_equal(np.asarray(a.data), [-1.0, 0.0, 1.0])
    np.testing.assert_array_equal(np.asarray(inner.data), [-1.0, -1.0])


@pytest.mark.parametrize("make", ["zeros_like", "ones_like", "empty_like"])
def test_a_like_function_takes_a_dtype_name_on_array_api_strict(make):
    """zeros_like/ones_like handed a dtype name to strict's kernel, which takes dtypes only (as the creation
    functions did before they resolved names where they enter)."""
    with pg.using_backend("strict"):
        x = pg.zeros((2,), dtype="float32")
        assert getattr(pg, make)(x, dtype="float64").dtype == pg.get_backend("strict").xp.float64

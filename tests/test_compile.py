"""Compiled functions (``pg.function``): inputs and their shortcuts, state
(containers, shared variables, updates), outputs and aliasing, symbolic
gradients, training steps, and the optimized program."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import polygrad as pg
import polygrad.functions as F
from polygrad import In, Out
from polygrad import symbolic as T
from polygrad.compile import fusion
from polygrad.compile import MissingInputError

from conftest import arr
from conftest import to_np


def programs(fn):
    return list(fn._programs.values())


# ---------------------------------------------------------------------------
# Input shortcuts
# ---------------------------------------------------------------------------
def test_shortcut_name_variable_gives_the_keyword():
    """(name, r) makes r an input passed by the keyword name."""
    x = T.scalar()
    f = pg.function([("a", x)], x * 2)
    assert float(f(a=3)) == 6.0
    assert float(f(4)) == 8.0


def test_shortcut_variable_value_is_a_default():
    """(r, val) makes r optional with default val, named from r."""
    x = T.scalar("x")
    f = pg.function([(x, 5.0)], x + 1)
    assert float(f()) == 6.0
    assert float(f(x=1)) == 2.0
    assert float(f["x"]) == 5.0


def test_shortcut_variable_update_value_is_state():
    """((r, up), val) starts r at val and replaces it with up after each call."""
    x = T.scalar("x")
    f = pg.function([((x, x * 2), 1.0)], x)
    assert [float(f()) for _ in range(3)] == [1.0, 2.0, 4.0]
    assert float(f["x"]) == 8.0


def test_shortcut_name_variable_value():
    """(name, r, val) names r and gives it a default."""
    x = T.scalar("x")
    f = pg.function([("k", x, 7.0)], x * 10)
    assert float(f()) == 70.0
    assert float(f(k=2)) == 20.0
    assert float(f["k"]) == 7.0
    assert "x" not in f.value


def test_shortcut_name_variable_update_value():
    """(name, (r, up), val) is named state with an update."""
    x = T.scalar("x")
    f = pg.function([("acc", (x, x + 3), 1.0)], x)
    assert float(f()) == 1.0
    assert float(f["acc"]) == 4.0
    f(acc=10)
    assert float(f["acc"]) == 13.0


def test_shortcut_bad_tuple_raises():
    """A tuple that is no shortcut form raises TypeError."""
    x = T.scalar("x")
    with pytest.raises(TypeError):
        pg.function([(1, 2, 3, 4)], x)


def test_autoname_false_leaves_input_unnamed():
    """In(y, autoname=False) cannot be passed by keyword."""
    x, y = T.scalars("x", "y")
    f = pg.function([x, In(y, autoname=False)], x + y)
    assert float(f(1, 2)) == 3.0
    with pytest.raises(TypeError, match="Unknown input or state: y"):
        f(1, y=2)


# ---------------------------------------------------------------------------
# Input restrictions and argument binding
# ---------------------------------------------------------------------------
def test_duplicate_names_raise():
    """Two inputs with the same name raise."""
    x, y = T.scalar("x"), T.scalar("y")
    with pytest.raises(ValueError, match="named 'x'"):
        pg.function([x, ("x", y)], x + y)


def test_autonamed_duplicate_names_raise():
    """Two different variables both called 'a' raise (autoname)."""
    a1, a2 = T.scalar("a"), T.scalar("a")
    with pytest.raises(ValueError):
        pg.function([a1, a2], a1 + a2)


def test_same_variable_twice_raises():
    """The same variable given twice (even under another name) raises."""
    x = T.scalar("x")
    with pytest.raises(ValueError, match="twice"):
        pg.function([x, x], x)
    with pytest.raises(ValueError, match="twice"):
        pg.function([x, In(x, name="other")], x)


def test_required_after_optional_raises():
    """A required input after one with a default raises TypeError."""
    x, y, z = T.scalars("xyz")
    with pytest.raises(TypeError, match="z"):
        pg.function([x, In(y, value=1.0), z], x + y + z)


def test_positional_and_keyword_together():
    """Positional arguments first, then keywords for the rest."""
    x, y, z = T.scalars("xyz")
    f = pg.function([x, y, In(z, value=0.5)], x * 100 + y * 10 + z)
    assert float(f(1, 2)) == 120.5
    assert float(f(1, z=3, y=2)) == 123.0
    assert float(f(z=3, y=2, x=1)) == 123.0


def test_same_input_by_position_and_keyword_raises():
    """Giving x both by position and by keyword raises TypeError."""
    x, y = T.scalars("xy")
    f = pg.function([x, y], x - y)
    with pytest.raises(TypeError, match="x"):
        f(1, x=2)


def test_too_many_positional_arguments_raise():
    """More positional arguments than inputs raises TypeError."""
    x, y = T.scalars("xy")
    f = pg.function([x, y], x - y)
    with pytest.raises(TypeError, match="positional"):
        f(1, 2, 3)


def test_strict_input_wrong_dtype_raises_naming_input():
    """strict=True: a float32 array for a float64 input raises TypeError naming it."""
    v = T.vector("v")
    f = pg.function([In(v, strict=True)], v * 2)
    with pytest.raises(TypeError, match="v"):
        f(np.array([1.0, 2.0], dtype=np.float32))


def test_strict_input_right_dtype_passes():
    """strict=True: a float64 array for a float64 input passes."""
    v = T.vector("v")
    f = pg.function([In(v, strict=True)], v * 2)
    np.testing.assert_array_equal(f(np.array([1.0, 2.0])), [2.0, 4.0])


def test_non_strict_input_is_cast():
    """Without strict, int and float32 arrays are cast to the float64 input."""
    v = T.vector("v")
    f = pg.function([v], v / 2)
    for a in (np.array([1, 3]), np.array([1, 3], dtype=np.float32), [1, 3]):
        r = f(a)
        assert r.dtype == np.float64
        np.testing.assert_array_equal(r, [0.5, 1.5])


def test_declared_shape_mismatch_raises_naming_input():
    """T.tensor('float64', (None, 3), 'a') given a (2, 4) array raises ValueError naming a."""
    a = T.tensor("float64", (None, 3), "a")
    f = pg.function([a], a * 2)
    with pytest.raises(ValueError, match="input a"):
        f(np.ones((2, 4)))
    with pytest.raises(ValueError, match="input a"):
        f(np.ones(3))


def test_declared_shape_with_free_dimension_accepts_any_length():
    """(None, 3) accepts (1, 3) and (4, 3)."""
    a = T.tensor("float64", (None, 3), "a")
    f = pg.function([a], pg.sum(a, axis=1))
    np.testing.assert_array_equal(f(np.ones((1, 3))), [3.0])
    np.testing.assert_array_equal(f(np.ones((4, 3))), [3.0] * 4)


# ---------------------------------------------------------------------------
# Shared variables, containers, updates
# ---------------------------------------------------------------------------
def test_shared_get_value_is_a_copy():
    """get_value() returns a copy: mutating it does not change the shared value."""
    s = pg.shared(np.array([1.0, 2.0]), "s")
    v = s.get_value()
    v[0] = 99.0
    np.testing.assert_array_equal(s.get_value(), [1.0, 2.0])


def test_shared_initial_value_is_copied():
    """pg.shared(arr) copies arr (unless borrow)."""
    a = np.array([1.0, 2.0])
    s = pg.shared(a, "s")
    a[0] = 99.0
    np.testing.assert_array_equal(s.get_value(), [1.0, 2.0])


def test_shared_set_value_then_function_sees_it():
    """set_value changes what compiled functions read."""
    s = pg.shared(np.array([1.0, 2.0]), "s")
    x = T.vector("x")
    f = pg.function([x], x * s)
    np.testing.assert_array_equal(f(np.ones(2)), [1.0, 2.0])
    s.set_value(np.array([5.0, 6.0]))
    np.testing.assert_array_equal(s.get_value(), [5.0, 6.0])
    np.testing.assert_array_equal(f(np.ones(2)), [5.0, 6.0])


def test_shared_python_float_is_float64_scalar():
    """pg.shared(3.0) holds a 0-d float64 array."""
    s = pg.shared(3.0, "s")
    v = s.get_value()
    assert v.shape == () and v.dtype == np.float64 and float(v) == 3.0


def test_shared_container_seen_by_two_functions():
    """An update made by one function is visible to another using the same shared variable."""
    s = pg.shared(np.array([0.0, 1.0]), "s")
    bump = pg.function([], [], updates=[(s, s + 1)])
    read = pg.function([], s * 10)
    bump()
    bump()
    np.testing.assert_array_equal(read(), [20.0, 30.0])
    np.testing.assert_array_equal(s.get_value(), [2.0, 3.0])


def test_shared_is_implicit_and_named():
    """A shared variable read by the graph is an implicit input reachable by name, not an argument."""
    s = pg.shared(np.array(2.0), "s")
    x = T.scalar("x")
    f = pg.function([x], x * s)
    assert float(f["s"]) == 2.0
    with pytest.raises(TypeError):
        f(1.0, 3.0)
    with pytest.raises(TypeError):
        f(1.0, s=3.0)


def test_container_shared_between_functions_through_in():
    """In(c, value=fn1.container[c], update=...) shares fn1's state; it is implicit."""
    c = T.scalar("c")
    f1 = pg.function([((c, c + 1), 0.0)], [])
    f2 = pg.function([In(c, value=f1.container[c], update=c * 10)], c)
    f1()
    assert float(f2()) == 1.0
    assert float(f1["c"]) == 10.0
    with pytest.raises(TypeError):
        f2(5.0)


def test_a_value_written_for_a_required_input_is_no_default():
    """f['x'] = 5.0 on an input without default made 5.0 its default: f(y=2.0) gave 10.0, and every
    later call that left x out reused it. As in Theano, a call still needs x; the value stays readable."""
    x, y = T.scalars("x", "y")
    f = pg.function([x, y], x * y)
    for write in (lambda: f.__setitem__("x", 5.0), lambda: setattr(f, "x", 5.0),
                  lambda: f.value.__setitem__(x, 5.0)):
        write()
        assert float(f["x"]) == 5.0
        with pytest.raises(TypeError, match=r"^Missing required input: x \(polygrad.function: an input without a "
                                            r"default value is given at every call"):
            f(y=2.0)
        assert float(f(3.0, y=2.0)) == 6.0
    with pytest.raises(TypeError, match=r"^Missing required input: y$"):  # (nothing written: Theano's text)
        f(3.0)


def test_an_input_with_an_update_needs_a_value():
    """In(s, update=...) without a value was required at the first call only; an input without value
    is required at every call now, so the update would be written and never read. Theano refuses it too."""
    s = T.scalar("s")
    with pytest.raises(ValueError, match="polygrad.function: input 's' has an update but no value"):
        pg.function([In(s, update=s + 1)], s * 2)


def test_fn_container_is_read_only():
    """fn.container[...] = v raises TypeError."""
    x = T.scalar("x")
    f = pg.function([(x, 1.0)], x)
    with pytest.raises(TypeError):
        f.container[x] = 2.0


def test_updates_use_old_values_and_apply_together():
    """updates=[(a, b), (b, a)] swaps a and b."""
    a = pg.shared(np.array([1.0, 2.0]), "a")
    b = pg.shared(np.array([3.0, 4.0]), "b")
    swap = pg.function([], [], updates=[(a, b), (b, a)])
    swap()
    np.testing.assert_array_equal(a.get_value(), [3.0, 4.0])
    np.testing.assert_array_equal(b.get_value(), [1.0, 2.0])
    swap()
    np.testing.assert_array_equal(a.get_value(), [1.0, 2.0])
    np.testing.assert_array_equal(b.get_value(), [3.0, 4.0])


def test_swapped_states_do_not_alias():
    """After a swap, writing into a's storage does not change b."""
    a = pg.shared(np.array([1.0, 2.0]), "a")
    b = pg.shared(np.array([3.0, 4.0]), "b")
    pg.function([], [], updates=[(a, b), (b, a)])()
    a.get_value(borrow=True)[0] = 99.0
    np.testing.assert_array_equal(b.get_value(), [1.0, 2.0])


def test_outputs_computed_from_values_before_updates():
    """Outputs see the state before this call's updates."""
    s = pg.shared(np.array(1.0), "s")
    f = pg.function([], s * 1, updates=[(s, s + 1)])
    assert [float(f()) for _ in range(3)] == [1.0, 2.0, 3.0]


def test_updates_as_dict():
    """updates may be given as a dict."""
    s = pg.shared(np.array(1.0), "s")
    f = pg.function([], [], updates={s: s * 3})
    f()
    assert float(s.get_value()) == 3.0


def test_update_of_non_shared_raises():
    """updates=[(x, ...)] with x not shared raises TypeError."""
    x = T.vector("x")
    with pytest.raises(TypeError):
        pg.function([x], x, updates=[(x, x + 1)])


@pytest.mark.parametrize("bad_first", [True, False])
def test_bad_update_shape_raises_and_changes_nothing(bad_first):
    """An update of the wrong shape raises ValueError and leaves every container unchanged."""
    a = pg.shared(np.array([1.0, 2.0]), "a")
    b = pg.shared(np.array([3.0, 4.0]), "b")
    k = T.vector("k")
    n = T.scalar("n")
    good, bad = (a, a + 1), (b, k)
    ups = [bad, good] if bad_first else [good, bad]
    f = pg.function([k, ((n, n + 1), 0.0)], [], updates=ups)
    with pytest.raises(ValueError, match="b"):
        f(np.ones(3))
    np.testing.assert_array_equal(a.get_value(), [1.0, 2.0])
    np.testing.assert_array_equal(b.get_value(), [3.0, 4.0])
    assert float(f["n"]) == 0.0
    with pytest.raises(ValueError):
        f(np.ones(3), n=50.0)
    assert float(f["n"]) == 0.0
    f(np.ones(2))
    np.testing.assert_array_equal(a.get_value(), [2.0, 3.0])
    assert float(f["n"]) == 1.0


def test_givens_substitute_an_expression():
    """givens=[(x, y + 1)] computes the output with y + 1 in place of x."""
    x, y = T.vectors("xy")
    f = pg.function([y], x * 2, givens=[(x, y + 1)])
    np.testing.assert_array_equal(f(np.array([1.0, 2.0])), [4.0, 6.0])


def test_givens_replace_a_shared_variable():
    """givens can replace a shared variable by an input; the shared value is untouched."""
    s = pg.shared(np.array([1.0, 1.0]), "s")
    y = T.vector("y")
    f = pg.function([y], s * 3, givens={s: y})
    np.testing.assert_array_equal(f(np.array([2.0, 5.0])), [6.0, 15.0])
    np.testing.assert_array_equal(s.get_value(), [1.0, 1.0])


# ---------------------------------------------------------------------------
# Outputs
# ---------------------------------------------------------------------------
def test_outputs_none_gives_empty_list():
    """outputs=None returns []."""
    x = T.scalar("x")
    assert pg.function([x], None, on_unused_input="ignore")(1.0) == []


def test_outputs_single_gives_a_value():
    """One output returns one 0-d array."""
    x = T.scalar("x")
    r = pg.function([x], x + 1)(1.0)
    assert isinstance(r, np.ndarray) and r.shape == () and float(r) == 2.0


def test_outputs_list_gives_a_list():
    """A list of outputs returns a list of their values, in order."""
    x = T.scalar("x")
    r = pg.function([x], [x + 1, x * 3, Out(x - 1)])(2.0)
    assert isinstance(r, list) and [float(v) for v in r] == [3.0, 6.0, 1.0]


def test_outputs_dict_gives_a_dict():
    """Theano's dict of outputs (output_keys) was refused as "output 0 is ... dict array shape ?"; the
    call returns a dict with the same keys (sorted, as Theano's), values expressions or Out."""
    a = T.scalar("a")
    f = pg.function([a], {"triple": a * 3, "double": Out(a * 2, borrow=True)})
    r = f(1.0)
    assert isinstance(r, dict) and list(r) == ["double", "triple"]
    assert float(r["double"]) == 2.0 and float(r["triple"]) == 3.0


def test_outputs_dict_survives_copy_pickle_and_as_pure():
    """A copy, a pickled or deep-copied function and its pure form return dicts too."""
    import copy
    import pickle

    x = T.scalar("x")
    k = T.scalar("k")
    f = pg.function([x, ((k, k + x), 1.0)], {"scaled": x * k, "k": k * 1})
    for g in (f.copy(), copy.copy(f), copy.deepcopy(f), pickle.loads(pickle.dumps(f))):
        r = g(2.0)
        assert list(r) == ["k", "scaled"] and float(r["scaled"]) == 2.0 and float(r["k"]) == 1.0
    out, state = f.as_pure()([2.0], {"k": 5.0})
    assert float(out["scaled"]) == 10.0 and float(out["k"]) == 5.0 and float(state["k"]) == 7.0


def test_outputs_that_are_no_list_or_dict_of_expressions_are_named():
    """A non-string key, a constant value and a set raise TypeErrors that say so (a dict was 'output 0 is
    ... dict array shape ?', and the advice was pg.shared)."""
    a = T.scalar("a")
    with pytest.raises(TypeError, match=r"the keys of a dict of outputs must be strings \(as in Theano\), got the "
                                        r"key 1 \(int\)"):
        pg.function([a], {1: a * 2})
    with pytest.raises(TypeError, match=r"output 'c' is not a symbolic expression but float 3.0"):
        pg.function([a], {"c": 3.0, "d": a})
    with pytest.raises(TypeError, match=r"outputs must be None, one symbolic expression or Out, a list of them or a "
                                        r"dict of them by name; got set"):
        pg.function([a], {a * 2, a * 3})


def test_same_output_twice_gives_two_values():
    """outputs [x, x] gives two equal values."""
    x = T.vector("x")
    r = pg.function([x], [x * 2, x])(np.array([1.0, 2.0]))
    np.testing.assert_array_equal(r[0], [2.0, 4.0])
    np.testing.assert_array_equal(r[1], [1.0, 2.0])


# ---------------------------------------------------------------------------
# Aliasing
# ---------------------------------------------------------------------------
def test_identity_output_is_a_copy():
    """pg.function([x], x): mutating the result does not change the caller's array."""
    x = T.vector("x")
    a = np.array([1.0, 2.0])
    r = pg.function([x], x)(a)
    r[0] = 99.0
    np.testing.assert_array_equal(a, [1.0, 2.0])


@pytest.mark.parametrize("view", ["T", "getitem", "reshape"])
def test_view_output_is_a_copy(view):
    """An output that is a view of an input (x.T, x[0], reshape) is a copy by default."""
    x = T.matrix("x")
    out = {"T": lambda: x.T, "getitem": lambda: x[0], "reshape": lambda: pg.reshape(x, (4,))}[view]()
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    r = pg.function([x], out)(a)
    r[...] = 0.0
    np.testing.assert_array_equal(a, [[1.0, 2.0], [3.0, 4.0]])


def test_borrowed_view_output_has_right_values():
    """Out(x.T, borrow=True) returns the transpose (it may alias x)."""
    x = T.matrix("x")
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    r = pg.function([x], Out(x.T, borrow=True))(a)
    np.testing.assert_array_equal(r, [[1.0, 3.0], [2.0, 4.0]])


def test_item_assignment_at_an_integer_position_of_unknown_sizes():
    """h[1, 2] = 0 and h[i, 1] = v (Theano's set_subtensor) on a matrix of unknown sizes: the shape
    inference ran setitem on stand-ins of size 1, where 1 and 2 are out of range, and the write
    failed with "'NoneType' object is not iterable"; x[1, 2] is 0-d, not of unknown rank."""
    x, v, i = T.matrix("x"), T.vector("v"), T.vector("i", dtype="int64")
    assert x[1, 2].shape == () and x[i, 2].shape == (None,)
    h = x * 2
    h[1, 2] = 0.0
    h[i, 1] = v
    out = pg.function([x, v, i], h)(np.ones((4, 5)), np.array([7.0, 8.0]), np.array([3, 0]))
    expected = np.full((4, 5), 2.0)
    expected[1, 2] = 0.0
    expected[[3, 0], 1] = [7.0, 8.0]
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("key", [(slice(0, 2), 1), (slice(0, 3), 1), (slice(1, None), 0), (slice(None), 2)])
def test_in_place_through_a_view_of_part_of_an_axis_of_unknown_size(key):
    """v = h[0:2, 1]; v *= 0 on a matrix of unknown sizes was refused ("would change variable ... to
    shape unknown"): the retried inference gave the written value the larger stand-in too, (3,), which
    does not broadcast into the part h[0:2, 1] of a 3x3 stand-in."""
    a = np.arange(20.0).reshape(5, 4)
    m = T.matrix("m")
    h = m * 1.0
    v = h[key]
    v *= 0
    want = a.copy()
    want[key] *= 0
    np.testing.assert_array_equal(pg.function([m], h)(a), want)


def test_output_of_shared_value_is_a_copy():
    """pg.function([], s): mutating the result does not change s."""
    s = pg.shared(np.array([1.0, 2.0]), "s")
    r = pg.function([], s)()
    r[0] = 99.0
    np.testing.assert_array_equal(s.get_value(), [1.0, 2.0])


def test_output_equal_to_update_does_not_alias_state():
    """An output equal to an update expression is not the new state's storage."""
    s = pg.shared(np.array([1.0, 2.0]), "s")
    f = pg.function([], s * 2, updates=[(s, s * 2)])
    r = f()
    r[0] = 100.0
    np.testing.assert_array_equal(s.get_value(), [2.0, 4.0])


def test_duplicate_outputs_do_not_alias_each_other():
    """outputs [x * 2, x * 2]: mutating one result does not change the other."""
    x = T.vector("x")
    r = pg.function([x], [x * 2, x * 2])(np.array([1.0, 2.0]))
    r[0][0] = 100.0
    np.testing.assert_array_equal(r[1], [2.0, 4.0])


def test_update_from_input_does_not_alias_callers_array():
    """updates=[(s, x)]: writing into the caller's array later does not change s."""
    s = pg.shared(np.array([0.0, 0.0]), "s")
    x = T.vector("x")
    f = pg.function([x], [], updates=[(s, x)])
    a = np.array([1.0, 2.0])
    f(a)
    a[0] = 99.0
    np.testing.assert_array_equal(s.get_value(), [1.0, 2.0])


def test_in_value_is_copied():
    """In(x, value=arr) copies arr: mutating arr later does not change the default."""
    x = T.vector("x")
    a = np.array([1.0, 2.0])
    f = pg.function([In(x, value=a)], x * 1)
    a[0] = 99.0
    np.testing.assert_array_equal(f(), [1.0, 2.0])


def test_in_value_mutable_keeps_callers_array():
    """In(x, value=arr, mutable=True) keeps arr itself: the function sees later changes."""
    x = T.vector("x")
    a = np.array([1.0, 2.0])
    f = pg.function([In(x, value=a, mutable=True)], x * 1)
    a[0] = 99.0
    np.testing.assert_array_equal(f(), [99.0, 2.0])


def test_mutable_requires_value():
    """In(x, mutable=True) without a value raises ValueError."""
    with pytest.raises(ValueError):
        In(T.scalar("x"), mutable=True)


# ---------------------------------------------------------------------------
# Other forms: as_pure, trust_input
# ---------------------------------------------------------------------------
def make_stateful():
    x = T.vector("x")
    k = T.scalar("k")
    return pg.function([x, ((k, k + pg.sum(x)), 1.0)], x * k), x, k


def test_as_pure_returns_outputs_and_new_state():
    """fn.as_pure()(inputs, state) gives (outputs, new_state)."""
    f, x, k = make_stateful()
    out, state = f.as_pure()([np.array([1.0, 2.0])], {"k": 5.0})
    np.testing.assert_allclose(to_np(out), [5.0, 10.0])
    assert set(state) == {"k"}
    assert float(state["k"]) == 8.0


def test_as_pure_does_not_touch_containers():
    """After as_pure calls the function's state is unchanged, and the stateful call still works."""
    f, x, k = make_stateful()
    pure = f.as_pure()
    pure([np.array([1.0, 2.0])], {"k": 5.0})
    pure([np.array([1.0, 2.0])], {"k": 7.0})
    assert float(f["k"]) == 1.0
    np.testing.assert_allclose(f(np.array([1.0, 2.0])), [1.0, 2.0])
    assert float(f["k"]) == 4.0


def test_as_pure_output_does_not_alias_shared_state():
    """as_pure of pg.function([], s): mutating the output leaves s unchanged."""
    s = pg.shared(np.array([1.0, 2.0]), "s")
    out, _ = pg.function([], s).as_pure()([], {})
    out[0] = 99.0
    np.testing.assert_array_equal(s.get_value(), [1.0, 2.0])


def two_layers_named_w():
    """Two shared variables both named "W" (every layer's weight), each with its own update."""
    x = T.vector("x")
    w1 = pg.shared(np.array([1.0, 2.0]), name="W")
    w2 = pg.shared(np.array([10.0, 20.0]), name="W")
    f = pg.function([x], pg.sum(x * w1) + pg.sum(x * w2), updates=[(w1, w1 + 1), (w2, w2 * 2)])
    pos = [next(i for i, inp in enumerate(f.inputs) if inp.variable is w) for w in (w1, w2)]
    return f, w1, w2, pos


def test_as_pure_keeps_the_states_of_two_inputs_of_one_name_apart():
    """Two shared variables named "W": as_pure keys each state by its position, one entry each (none merged)."""
    f, w1, w2, (p1, p2) = two_layers_named_w()
    out, new_state = f.as_pure()([np.array([1.0, 1.0])], {p1: np.array([1.0, 2.0]), p2: np.array([10.0, 20.0])})
    assert float(out) == 33.0 == float(f(np.array([1.0, 1.0])))
    assert set(new_state) == {p1, p2}
    np.testing.assert_array_equal(new_state[p1], [2.0, 3.0])
    np.testing.assert_array_equal(new_state[p2], [20.0, 40.0])


def test_as_pure_refuses_a_state_keyed_by_a_shared_name():
    """state={"W": ...} where two stateful inputs are named "W": a KeyError that says it is ambiguous."""
    f, w1, w2, (p1, p2) = two_layers_named_w()
    with pytest.raises(KeyError, match=r"state entry 'W': the name 'W' is ambiguous.*keyed by position"):
        f.as_pure()([np.array([1.0, 1.0])], {"W": np.array([1.0, 2.0])})


def test_as_pure_refuses_an_integer_name_that_is_another_state_key():
    """An unnamed stateful input (keyed 0, its position) and another named 0: refused, never one merged entry."""
    a, b = T.scalar("a"), T.scalar("b")
    f = pg.function([In(a, value=0.0, update=a + 1, autoname=False), In(b, name=0, value=5.0, update=b * 2)], a + b)
    with pytest.raises(ValueError, match="the key 0 is the name of one stateful input and the position of another"):
        f.as_pure()


def test_as_pure_names_a_missing_or_unknown_state_entry():
    """A state without an entry, or with one that is no stateful input's, raises a KeyError naming the keys."""
    f, x, k = make_stateful()
    pure = f.as_pure()
    with pytest.raises(KeyError, match=r"no entry for 'k'; the state keys are \['k'\]"):
        pure([np.array([1.0])], {})
    with pytest.raises(KeyError, match=r"state entry 'kk': no stateful input has that key"):
        pure([np.array([1.0])], {"k": 1.0, "kk": 2.0})
    with pytest.raises(TypeError, match="takes 1 input values"):
        pure([np.array([1.0]), np.array([2.0])], {"k": 1.0})


def test_as_pure_names_the_state_entry_of_a_wrong_value():
    """A state value of the wrong shape names the state entry; In(strict=True) holds in as_pure too."""
    s = pg.shared(np.zeros(2), name="s")
    f = pg.function([], s * 1, updates=[(s, s + 1)])
    with pytest.raises(ValueError, match=r"state 's' of fn.as_pure\(\) expects shape \(2,\), got \(3,\)"):
        f.as_pure()([], {"s": np.zeros(3)})
    x, k = T.vector("x"), T.scalar("k")
    g = pg.function([In(x, strict=True), ((k, k + 1), 0.0)], x * k)
    with pytest.raises(TypeError, match="strict"):
        g.as_pure()([np.array([1, 2])], {"k": 1.0})


def test_trust_input_gives_same_results():
    """trust_input=True gives the same outputs and updates as the checked path."""
    x = T.vector("x")
    outs = []
    for trust in (False, True):
        s = pg.shared(np.array([0.0, 0.0]), "s")
        f = pg.function([x], pg.exp(x) + s, updates=[(s, s + x)], trust_input=trust)
        outs.append([f(np.array([1.0, 2.0])), f(np.array([0.5, -1.0])), s.get_value()])
    for a, b in zip(*outs):
        np.testing.assert_allclose(a, b)


# ---------------------------------------------------------------------------
# Symbolic gradients against eager pg.grad
# ---------------------------------------------------------------------------
r0 = np.random.default_rng(0)
A = r0.standard_normal((3, 4))
B = r0.standard_normal((4, 2))
V = np.array([0.3, -1.2, 2.0, 0.7])

GRAD_CASES = {
    "polynomial": (lambda a, b: pg.sum(3 * a ** 3 - 2 * a * a + a * b), (V, V[::-1].copy())),
    "sin_exp_log": (lambda a, b: pg.sum(pg.log(pg.exp(pg.sin(a)) + b * b + 1)), (V, V + 1)),
    "matmul": (lambda a, b: pg.sum(pg.tanh(pg.matmul(a, b)) ** 2), (A, B)),
    "max": (lambda a, b: pg.max(a * b), (V, V[::-1].copy())),
    "max_axis": (lambda a, b: pg.sum(pg.max(pg.matmul(a, b), axis=1)), (A, B)),
    "getitem": (lambda a, b: pg.sum(a[1:3] * b[0]) + a[0] * b[2], (V, V + 2)),
    "divide_sqrt": (lambda a, b: pg.sum(pg.sqrt(a * a + 1) / (b * b + 2)), (V, V * 0.5)),
}


def eager_grads(fn, values, create_graph=False):
    vs = [pg.Variable(np.array(v, copy=True)) for v in values]
    return vs, pg.grad(fn(*vs), vs, create_graph=create_graph)


@pytest.mark.parametrize("case", sorted(GRAD_CASES))
def test_compiled_gradient_equals_eager(case):
    """T.grad compiled in a function equals eager pg.grad."""
    fn, values = GRAD_CASES[case]
    a, b = (T.tensor("float64", v.shape, n) for v, n in zip(values, "ab"))
    cost = fn(a, b)
    f = pg.function([a, b], [cost] + T.grad(cost, [a, b]))
    got = f(*values)
    vs, want = eager_grads(fn, values)
    np.testing.assert_allclose(got[0], to_np(fn(*[pg.Variable(v) for v in values])))
    for g, w in zip(got[1:], want):
        np.testing.assert_allclose(g, to_np(w), rtol=1e-12, atol=1e-12)


def test_compiled_gradient_softmax_cross_entropy():
    """The gradient of softmax_cross_entropy(X @ W, t) wrt W matches eager."""
    X, W = T.matrix("X"), T.matrix("W")
    t = T.vector("t", dtype="int64")
    loss = F.softmax_cross_entropy(pg.matmul(X, W), t)
    f = pg.function([X, W, t], [loss, T.grad(loss, W)])
    tv = np.array([0, 1, 1])
    got_loss, got_g = f(A.copy(), B.copy(), tv)
    Wv = pg.Variable(B.copy())
    eager_loss = F.softmax_cross_entropy(pg.matmul(pg.Variable(A.copy(), requires_grad=False), Wv), tv)
    (g,) = pg.grad(eager_loss, [Wv])
    np.testing.assert_allclose(got_loss, to_np(eager_loss))
    np.testing.assert_allclose(got_g, to_np(g), rtol=1e-12, atol=1e-14)


def test_gradient_wrt_single_variable_is_not_a_list():
    """T.grad(cost, w) with one variable gives one gradient: d sum(w**2) = 2w."""
    w = T.vector("w")
    g = T.grad(pg.sum(w * w), w)
    np.testing.assert_allclose(pg.function([w], g)(V), 2 * V)


def test_gradient_of_unused_variable_raises_by_default():
    """T.grad wrt a variable the cost does not use raises at once, naming it (Theano's disconnected_inputs='raise')."""
    x, y = T.vectors("xy")
    with pytest.raises(ValueError, match=r"T.grad: the cost does not depend on wrt\[1\] \(y\)"):
        T.grad(pg.sum(x * 3), [x, y])


def test_gradient_of_unused_variable_ignored_is_zero():
    """disconnected_inputs='ignore': the gradient wrt a variable the cost does not use is zeros of its shape."""
    x, y = T.vectors("xy")
    gx, gy = T.grad(pg.sum(x * 3), [x, y], disconnected_inputs="ignore")
    r = pg.function([x, y], [gx, gy], on_unused_input="ignore")(np.ones(2), np.ones(3))
    np.testing.assert_array_equal(r[0], [3.0, 3.0])
    np.testing.assert_array_equal(r[1], [0.0, 0.0, 0.0])


def test_gradient_wrt_shared_variable():
    """T.grad wrt a shared variable uses its current value."""
    s = pg.shared(np.array([1.0, 2.0]), "s")
    f = pg.function([], T.grad(pg.sum(s ** 3), s))
    np.testing.assert_allclose(f(), [3.0, 12.0])
    s.set_value(np.array([3.0, -1.0]))
    np.testing.assert_allclose(f(), [27.0, 3.0])


@pytest.mark.parametrize("name,fn,d2", [
    ("cube", lambda w: pg.sum(w ** 3), lambda v: 6 * v),
    ("sin", lambda w: pg.sum(pg.sin(w)), lambda v: -np.sin(v)),
    ("exp_sq", lambda w: pg.sum(pg.exp(w * w)), lambda v: (2 + 4 * v * v) * np.exp(v * v)),
])
def test_second_derivative(name, fn, d2):
    """T.grad(pg.sum(T.grad(c, w)), w) is the diagonal second derivative and matches eager double grad."""
    w = T.vector("w")
    g2 = T.grad(pg.sum(T.grad(fn(w), w)), w)
    got = pg.function([w], g2)(V)
    np.testing.assert_allclose(got, d2(V), rtol=1e-12)
    (wv,), (g1,) = eager_grads(fn, [V], create_graph=True)
    (e2,) = pg.grad(pg.sum(g1), [wv])
    np.testing.assert_allclose(got, to_np(e2), rtol=1e-12)


# ---------------------------------------------------------------------------
# Training steps: compiled with updates vs eager, step by step
# ---------------------------------------------------------------------------
def toy_data():
    r = np.random.default_rng(1)
    x = r.standard_normal((16, 3))
    t = (x[:, 0] + 0.5 * x[:, 1] > 0).astype(np.int64)
    return x, t


def compiled_step(params, forward, lr):
    X = T.matrix("X")
    t = T.vector("t", dtype="int64")
    shared = [pg.shared(p, n) for n, p in params.items()]
    loss = F.softmax_cross_entropy(forward(X, *shared), t)
    grads = T.grad(loss, shared)
    step = pg.function([X, t], loss, updates=[(s, s - lr * g) for s, g in zip(shared, grads)])
    return step, shared


def eager_step(values, forward, lr, x, t):
    vs = [pg.Variable(v) for v in values]
    loss = F.softmax_cross_entropy(forward(pg.Variable(x, requires_grad=False), *vs), t)
    gs = pg.grad(loss, vs)
    return float(to_np(loss)), [to_np(v) - lr * to_np(g) for v, g in zip(vs, gs)]


def logreg(X, W, b):
    return F.linear(X, W, b)


def mlp(X, W1, b1, W2, b2):
    return F.linear(F.relu(F.linear(X, W1, b1)), W2, b2)


def init_params(kind):
    r = np.random.default_rng(2)
    if kind == "logreg":
        return {"W": 0.1 * r.standard_normal((2, 3)), "b": np.zeros(2)}
    return {"W1": 0.5 * r.standard_normal((8, 3)), "b1": np.zeros(8),
            "W2": 0.5 * r.standard_normal((2, 8)), "b2": np.zeros(2)}


@pytest.mark.parametrize("kind", ["logreg", "mlp"])
def test_compiled_training_step_matches_eager(kind):
    """A compiled SGD step (shared weights, updates) gives the eager parameters at every step, and the loss falls."""
    forward = logreg if kind == "logreg" else mlp
    lr = 0.5
    x, t = toy_data()
    params = init_params(kind)
    step, shared = compiled_step(params, forward, lr)
    values = [np.array(v, copy=True) for v in params.values()]
    losses = []
    for _ in range(15):
        loss = float(step(x, t))
        eager_loss, values = eager_step(values, forward, lr, x, t)
        losses.append(loss)
        assert np.isclose(loss, eager_loss, rtol=1e-10)
        for s, v in zip(shared, values):
            np.testing.assert_allclose(s.get_value(), v, rtol=1e-10, atol=1e-12)
    assert losses[-1] < 0.7 * losses[0], losses


def test_training_step_compiles_once():
    """Repeated training steps with the same shapes reuse one program."""
    step, _ = compiled_step(init_params("logreg"), logreg, 0.1)
    x, t = toy_data()
    for _ in range(3):
        step(x, t)
    assert len(step._programs) == 1


def test_function_hooks_see_nothing_of_a_compiled_call():
    """The user's hooks saw the trace of a compiled step's first call (and of each new shape's) as
    eager forward and backward steps, and nothing of the other calls: they see none of it now."""
    x = T.matrix("x")
    w = pg.shared(np.array([1.0, 2.0]), name="w")
    loss = pg.sum(pg.exp(x * w))
    step = pg.function([x], loss, updates=[(w, w - 0.1 * T.grad(loss, w))])

    class Steps(pg.FunctionHook):
        name = "steps"

        def __init__(self):
            self.seen = []

        def forward_preprocess(self, function, in_data):
            self.seen.append(("forward", function.label))

        def backward_preprocess(self, function, in_data, out_grad):
            self.seen.append(("backward", function.label))

    batches = [np.full((rows, 2), 0.1) for rows in (1, 1, 3)]  # a first call, a later one, a new shape's
    with Steps() as hook:
        for xv in batches:
            step(xv)
        pg.exp(pg.Variable(np.ones(2)))  # (the hook is on: it sees eager steps)
    assert hook.seen == [("forward", "exp")]
    expected = np.array([1.0, 2.0])  # (the trace still records: the updates are eager's)
    for xv in batches:
        expected = expected - 0.1 * np.sum(xv * np.exp(xv * expected), axis=0)
    np.testing.assert_allclose(w.get_value(), expected, rtol=1e-12)


# ---------------------------------------------------------------------------
# The optimized program
# ---------------------------------------------------------------------------
def test_common_subexpression_computed_once(monkeypatch):
    """(x*y) + (x*y) computes one multiply and one add (fusion off: the program's own kernels)."""
    monkeypatch.setattr(fusion, "ENABLED", False)
    x, y = T.vectors("xy")
    f = pg.function([x, y], (x * y) + (x * y))
    np.testing.assert_array_equal(f(np.array([1.0, 2.0]), np.array([3.0, 4.0])), [6.0, 16.0])
    (p,) = programs(f)
    assert p.n_kernels == 2
    assert f.program_source().count("# multiply") == 1


def test_common_subexpression_across_outputs():
    """Two outputs sharing exp(x) compute exp once."""
    x = T.vector("x")
    f = pg.function([x], [pg.exp(x) + 1, pg.exp(x) * 2])
    r = f(np.array([0.0, 1.0]))
    np.testing.assert_allclose(r[0], np.exp([0.0, 1.0]) + 1)
    np.testing.assert_allclose(r[1], np.exp([0.0, 1.0]) * 2)
    assert f.program_source().count("# exp") == 1


def test_dead_branch_not_in_program():
    """grad of sum(exp(y)) + sum(x*3) wrt x: the exp branch is traced but not in the program."""
    x, y = T.vectors("xy")
    cost = pg.sum(pg.exp(y)) + pg.sum(x * 3)
    f = pg.function([x, y], T.grad(cost, x))
    np.testing.assert_array_equal(f(np.ones(2), np.ones(2)), [3.0, 3.0])
    (p,) = programs(f)
    assert "exp" not in f.program_source()
    assert p.n_kernels < p.n_traced


def test_unused_input_costs_nothing():
    """An input the outputs do not use (allowed with on_unused_input='ignore') adds no kernel."""
    x, y = T.vectors("xy")
    f = pg.function([x, y], x + 1, on_unused_input="ignore")
    np.testing.assert_array_equal(f(np.ones(2), np.ones(5)), [2.0, 2.0])
    (p,) = programs(f)
    assert p.n_kernels == 1


def test_missing_input_raises():
    """Outputs depending on a symbolic variable that is not an input raise MissingInputError naming it."""
    x, y = T.vectors("xy")
    with pytest.raises(MissingInputError, match="x"):
        pg.function([y], x * y)(np.ones(2))


def test_missing_input_in_update_raises():
    """An update depending on a variable that is not an input raises MissingInputError."""
    s = pg.shared(np.array([1.0]), "s")
    x = T.vector("xmissing")
    with pytest.raises(MissingInputError, match="xmissing"):
        pg.function([], [], updates=[(s, s + x)])()
    np.testing.assert_array_equal(s.get_value(), [1.0])


def test_new_shapes_recompile_and_both_are_right():
    """Calls with two input shapes build two programs, each giving the right values."""
    x = T.vector("x")
    f = pg.function([x], pg.sum(x * x))
    assert float(f(np.array([1.0, 2.0]))) == 5.0
    assert float(f(np.array([1.0, 2.0, 3.0]))) == 14.0
    assert float(f(np.array([3.0, 4.0]))) == 25.0
    assert len(programs(f)) == 2


def test_new_shapes_recompile_gradients():
    """A folded-shape gradient (sum(x*2) wrt x) is right for each input shape."""
    x = T.vector("x")
    f = pg.function([x], T.grad(pg.sum(x * 2), x))
    np.testing.assert_array_equal(f(np.ones(2)), [2.0, 2.0])
    np.testing.assert_array_equal(f(np.ones(4)), [2.0] * 4)


# ---------------------------------------------------------------------------
# Backends (numpy and array_api_strict)
# ---------------------------------------------------------------------------
def test_backends_simple_function(xp):
    """x * y + 1 compiles and runs on the backend, returning its arrays."""
    x, y = T.vectors("xy")
    f = pg.function([x, y], x * y + 1)
    r = f(arr(xp, [1.0, 2.0]), arr(xp, [3.0, 4.0]))
    assert isinstance(r, type(xp.asarray(0.0)))
    np.testing.assert_array_equal(to_np(r), [4.0, 9.0])


def test_backends_shared_update(xp):
    """A shared variable of the backend is updated and read back."""
    s = pg.shared(arr(xp, [1.0, 2.0]), "s")
    x = T.vector("x")
    f = pg.function([x], s * x, updates=[(s, s + x)])
    np.testing.assert_array_equal(to_np(f(arr(xp, [2.0, 2.0]))), [2.0, 4.0])
    np.testing.assert_array_equal(to_np(s.get_value()), [3.0, 4.0])
    assert isinstance(s.get_value(), type(xp.asarray(0.0)))


def test_backends_gradient(xp):
    """The compiled gradient of sum(sin(x) * x) is cos(x) * x + sin(x)."""
    x = T.vector("x")
    f = pg.function([x], T.grad(pg.sum(pg.sin(x) * x), x))
    v = np.array([1.0, 2.0])
    np.testing.assert_allclose(to_np(f(arr(xp, v))), np.cos(v) * v + np.sin(v))


def test_backends_default_and_state(xp):
    """The seed's inc works on the backend: inc(5) then inc(3, 4) gives s = 37."""
    u, x, s = T.scalars("u", "x", "s")
    inc = pg.function([u, In(x, value=3), In(s, update=s + x * u, value=10.0)], [])
    inc(arr(xp, 5.0))
    inc(arr(xp, 3.0), arr(xp, 4.0))
    assert float(to_np(inc[s])) == 37.0
    assert float(to_np(inc[x])) == 3.0


def test_backends_identity_output_is_a_copy(xp):
    """pg.function([x], x): writing into the result leaves the caller's array unchanged."""
    x = T.vector("x")
    a = arr(xp, [1.0, 2.0])
    r = pg.function([x], x)(a)
    r[0] = 99.0
    np.testing.assert_array_equal(to_np(a), [1.0, 2.0])


def test_symbolic_dtype_may_be_a_namespace_dtype_object():
    """T.vector(dtype=np.float32) (a scalar type, which prints as "<class ...>") means float32, as dtype="float32" does."""
    x = T.vector("x", dtype=np.float32)
    f = pg.function([x], 2 * x)
    out = to_np(f(np.array([1.0, 2.0], dtype=np.float32)))
    assert out.dtype == np.float32 and out.tolist() == [2.0, 4.0]
    assert T.vector("y", dtype=np.dtype("float32")).data.dtype == "float32"


def test_program_key_takes_a_dtype_that_is_not_hashable():
    """The standard asks dtypes only for ==: a value whose dtype cannot be hashed still finds
    its program (keyed by the dtype's name), and equal calls share one key."""
    from polygrad.compile.compiled import _signature

    class Dtype:
        __hash__ = None

        def __init__(self, name):
            self.name = name

        def __eq__(self, other):
            return isinstance(other, Dtype) and other.name == self.name

        def __str__(self):
            return self.name

    class Value:
        def __init__(self, shape, dtype):
            self.shape, self.dtype = shape, dtype

    values = [Value((2, 3), Dtype("float32")), np.ones(3)]
    with pytest.raises(TypeError):
        hash(_signature(values))  # what _program catches, to key by name instead
    a = _signature(values, by_name=True)
    b = _signature([Value((2, 3), Dtype("float32")), np.ones(3)], by_name=True)
    assert a == b and hash(a) == hash(b)
    assert a != _signature([Value((2, 3), Dtype("float64")), np.ones(3)], by_name=True)
    assert _signature([np.ones(3)]) == ((np.ndarray, (3,), np.dtype("float64")),)

    class Fn:  # _program's fallback finds a program keyed by dtype names
        _programs = {}
        _cache_lock = threading.Lock()

    from polygrad.compile.compiled import CompiledFunction

    Fn._programs[a] = "the program"
    assert CompiledFunction._program(Fn(), values) == "the program"


def test_the_gradient_of_a_complex_cost_is_refused_saying_what_to_do():
    """T.grad of a complex cost took Re(cost) silently, as eager backward did."""
    from polygrad import symbolic as T

    x = T.tensor("complex128", (None,), "x")
    with pytest.raises(RuntimeError, match=r"complex128: a gradient is taken of a real cost only.*pg\.real\(cost\)"):
        T.grad(pg.sum(x * x), x)


def test_compiled_gradients_sum_in_eager_order():
    """The compiled program ran an op's operands right to left, so its gradients summed their
    parts in another order than eager backward: sum(x * y + x / x) at x = 1e-30, y = -1 gave 0
    compiled for eager's (and the exact) -1."""
    x, y = T.vector("x"), T.vector("y")
    xv, yv = np.array([1e-30, 3.0]), np.array([-1.0, 2.0])
    for mode in ("FAST_COMPILE", "FAST_RUN"):
        f = pg.function([x, y], T.grad(pg.sum(x * y + x / x), x), mode=mode)
        X, Y = pg.Variable(xv), pg.Variable(yv)
        (gx,) = pg.grad(pg.sum(X * Y + X / X), [X])
        np.testing.assert_array_equal(f(xv, yv), gx.data)
        np.testing.assert_array_equal(gx.data, [-1.0, 2.0])


def test_compiled_gradients_sum_in_eager_order_whatever_the_order_of_the_outputs():
    """The trace ran the graph depth-first from the outputs, so its nodes were made in the order
    of the outputs, not of the user's code, and backward summed a gradient's parts in another order
    than eager: with outputs [mean(x), square(x / x), grad], x = [1e-30, .5, 3], the first entry
    was 1/3 compiled and 0 eager (and exact); with [square(...), mean(...), grad] it agreed."""
    def program(x):
        q = x / x
        m = pg.mean(x)
        s = pg.square(q)
        return m, s, pg.sum(m) + pg.sum(s)

    xv = np.array([1e-30, 0.5, 3.0])
    X = pg.Variable(xv)
    (expected,) = pg.grad(program(X)[2], [X])
    assert expected.data[0] == 0.0
    x = T.vector("x")
    m, s, cost = program(x)
    g = T.grad(cost, x)
    for outputs in ([m, s, g], [s, m, g], [g], [g, s, m]):
        for mode in ("FAST_COMPILE", "FAST_RUN"):
            got = pg.function([x], outputs, mode=mode)(xv)
            k = next(i for i, o in enumerate(outputs) if o is g)
            np.testing.assert_array_equal(got[k], expected.data)


@pytest.mark.parametrize("build", [lambda x, y: pg.broadcast_arrays(x, y)[1], lambda x, y: pg.meshgrid(x, y)[0]])
def test_broadcasting_symbolic_arrays_of_unknown_length_is_refused_when_built(build):
    """broadcast_arrays and meshgrid baked an unknown length (None) into broadcast_to: the first call
    failed inside NumPy ('<' between None and int), or x was called unused; now the build says why.
    Declared lengths work."""
    x, y = T.vector("x"), T.vector("y")
    with pytest.raises(ValueError, match=r"size unknown until the function runs.*Declare the sizes"):
        build(x, y)
    xk, yk = T.tensor("float64", (3,), "xk"), T.tensor("float64", (1,), "yk")
    xv, yv = np.array([1.0, 2.0, 3.0]), np.array([10.0])
    got = pg.function([xk, yk], build(xk, yk) * 1.0, on_unused_input="ignore")(xv, yv)
    np.testing.assert_array_equal(got, build(pg.Variable(xv), pg.Variable(yv)).data)


@pytest.mark.parametrize("name", ["uint8", "uint16", "uint32", "uint64", "int8", "float16", "float32"])
def test_a_computed_node_is_named_by_its_own_dtype(name):
    """A dtype's name was matched by its ending, first in the list: a computed uint8 node was
    named int8 (and sigmoid_cross_entropy's uint8 labels then compared with -1 at each call)."""
    x = T.vector("x", dtype=name)
    assert pg.abs(x).data.dtype == name


def test_a_dtype_named_by_a_symbolic_array_is_the_namespaces_dtype_when_the_program_runs():
    """accuracy's astype(hit, y.dtype) took the symbolic dtype's name: numpy accepted the string,
    array_api_strict refused it ('str' object has no attribute '_np_dtype')."""
    import polygrad.functions as F
    from polygrad import symbolic as T

    scores, labels = np.array([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]]), np.array([1, 1, 1])
    with pg.using_backend("array_api_strict"):
        y, t = T.matrix("y"), T.vector("t", dtype="int64")
        f = pg.function([y, t], F.accuracy(y, t))
        got = f(pg.asarray(scores), pg.asarray(labels))
        assert float(got) == pytest.approx(2 / 3)
        assert got.dtype == pg.asarray(scores).dtype


def test_integers_chosen_by_a_condition_that_needs_a_gradient_carry_none():
    """where(x, c, i) with a floating x that requires grad as the condition and int32 choices
    gave an int32 Variable requiring grad: pg.grad(..., create_graph=True) then refused the float
    gradient backward computed for it, and so did every compiled function with a gradient of it."""
    X = pg.Variable(np.array(0.7))
    p = pg.where(X, pg.Variable(np.array(True)), pg.Variable(np.array(2, np.int32)))
    assert p.dtype == np.int32 and not p.requires_grad and p.creator is None
    cost = pg.sum(pg.cos(-p))
    assert pg.grad([cost], [X], create_graph=True, allow_unused=True) == [None]
    c, x, i = T.tensor("bool", (), "c"), T.tensor("float64", (), "x"), T.tensor("int32", (), "i")
    cs = pg.sum(pg.cos(-pg.where(x, c, i)))
    f = pg.function([c, x, i], [cs, T.grad(cs, x, disconnected_inputs="ignore")])
    value, g = f(np.array(True), np.array(0.7), np.array(2, np.int32))
    assert value == np.cos(-1.0) and g == 0.0  # (x is true: c, True, is chosen)
    w = pg.Variable(np.array([1.0, -2.0]))  # floating choices still give their gradients
    (gw,) = pg.grad([pg.sum(pg.where(X, w, 0.0))], [w])
    np.testing.assert_array_equal(gw.data, [1.0, 1.0])


def test_a_kernel_that_fails_in_a_compiled_program_is_named():
    """A compiled program's kernel error came out bare (LinAlgError: Singular matrix, from the
    gradient of det traced at an invertible matrix), where eager names the op and the backend."""
    x = T.matrix("x")
    f = pg.function([x], T.grad(pg.linalg.det(x), x), name="det_grad")
    np.testing.assert_allclose(f(np.array([[1.0, 2.0], [3.0, 4.0]])), [[4.0, -3.0], [-2.0, 1.0]])
    with pytest.raises(np.linalg.LinAlgError, match=r"^polygrad: linalg_inv failed in a compiled function's program "
                                                    r"\(line \d+: s\d+ = k\d+\(s0\)\): LinAlgError: Singular matrix") as e:
        f(np.array([[1.0, 2.0], [2.0, 4.0]]))
    assert any("det_grad" in n for n in e.value.__notes__)
    with pg.debug_mode(True), pytest.raises(np.linalg.LinAlgError, match="polygrad: linalg_inv failed"):
        f(np.array([[1.0, 2.0], [2.0, 4.0]]))


def test_compiled_logsumexp_gradient_is_eagers():
    """logsumexp's shift (the maximum) is detached; the compiled gradient went through it as well
    (x.detach() kept x's place in a symbolic graph): equal to softmax in exact arithmetic, but
    not in floating point, where it differed from eager's in the last bits."""
    rng = np.random.default_rng(0)
    x, w = T.matrix("x"), T.matrix("w")
    for axis in (None, 0, 1):
        f = pg.function([x, w], T.grad(pg.sum(F.logsumexp(x * w, axis=axis)), x), mode="FAST_COMPILE")
        for _ in range(5):
            xv, wv = rng.normal(size=(3, 7)) * 10, rng.normal(size=(3, 7))
            X = pg.Variable(xv)
            (gx,) = pg.grad(pg.sum(F.logsumexp(X * wv, axis=axis)), [X])
            np.testing.assert_array_equal(f(xv, wv), gx.data)


def test_a_symbolic_gradient_wrt_an_integer_input_is_none_as_eagers():
    """pg.grad / T.grad with respect to an int64 or bool input compiled to an int64 "gradient" of
    zeros; eager pg.grad has none for an integer Variable (it cannot require grad): pg.grad refuses
    it or gives None (allow_unused=True); T.grad gives zeros of the default floating dtype where the
    input is connected to the cost, as Theano's (never an integer gradient, and no error)."""
    v, n, b = T.vector("v"), T.vector("n", dtype="int64"), T.vector("b", dtype="bool")
    cost = pg.sum(v * n + v * b)
    for w in (n, b):
        with pytest.raises(RuntimeError, match=rf"polygrad.grad: input 0 \({w.name}\) is of dtype {w.dtype}, so it has "
                                               r"no gradient.*pass allow_unused=True to get None"):
            pg.grad(cost, [w])
    gv, gn = pg.grad(cost, [v, n], allow_unused=True)
    assert gn is None
    f = pg.function([v, n, b], [gv, *T.grad(cost, [n, b])])
    got = f([1.0, 2.0], [3, 4], [True, False])
    np.testing.assert_array_equal(got[0], [4.0, 4.0])
    for zeros in got[1:]:
        assert zeros.dtype == np.float64
        np.testing.assert_array_equal(zeros, [0.0, 0.0])
    m = T.vector("m", dtype="int64")  # not in the cost at all: disconnected, as a float input would be
    from polygrad.compile.symbolic import DisconnectedInputError

    with pytest.raises(DisconnectedInputError, match="does not depend on m"):
        T.grad(cost, m)
    with pytest.warns(UserWarning, match="does not depend on m"):
        gm = T.grad(cost, m, disconnected_inputs="warn")
    assert pg.function([m], gm)(np.array([1, 2])).dtype == np.float64


def test_a_symbolic_gradient_through_an_integer_expression():
    """A float input reached only through an integer expression (a cast) has no gradient in pg.grad,
    as in eager; T.grad gives it zeros (Theano counts the path as connected: no DisconnectedInputError,
    which this session's first version raised)."""
    from polygrad.compile.symbolic import DisconnectedInputError

    v = T.vector("v")
    cost = pg.sum(pg.astype(pg.astype(v, "int64"), "float64") * 2.0)
    np.testing.assert_array_equal(pg.function([v], T.grad(cost, v))(np.array([1.5, 2.5])), [0.0, 0.0])
    with pytest.raises(RuntimeError, match="is not used to compute the outputs"):
        pg.grad(cost, [v])
    X = pg.Variable(np.array([1.5, 2.5]))
    with pytest.raises(RuntimeError, match="nothing to differentiate"):
        pg.grad(pg.sum(pg.astype(X, np.int64) * 2.0), [X])
    with pytest.raises(DisconnectedInputError):
        T.grad(pg.sum(T.vector("w") * 2.0), v)


def test_a_symbolic_gradient_through_an_op_without_a_gradient_follows_theano_connection():
    """T.grad connected a float input reached through an int cast (zeros) but raised
    DisconnectedInputError where a comparison, argmax or where's condition cut the path, though
    Theano connects those too (its comparisons' and argmax's gradients are zeros; Switch counts its
    condition connected). An input read only for its shape (zeros_like) stays disconnected, as
    Theano's fill; pg.grad keeps eager's rule."""
    from polygrad.compile.symbolic import DisconnectedInputError

    costs = {"comparison": lambda v: pg.sum(pg.astype(v > 0, "float64")),
             "argmax": lambda v: pg.astype(pg.argmax(v), "float64"),
             "floor": lambda v: pg.sum(pg.floor(v)),
             "where's condition": lambda v, w: pg.sum(pg.where(v > 0, w, 0.0)),
             "logical op": lambda v: pg.sum(pg.astype(pg.logical_not(pg.isnan(v)), "float64"))}
    for label, make in costs.items():
        v, w = T.vector("v"), T.vector("w")
        cost = make(v, w) if "where" in label else make(v)
        inputs = [v, w] if "where" in label else [v]
        got = pg.function(inputs, T.grad(cost, v), on_unused_input="ignore")(*[np.array([-1.5, 2.5])] * len(inputs))
        np.testing.assert_array_equal(got, [0.0, 0.0], err_msg=label)
        with pytest.raises(RuntimeError, match="is not used to compute the outputs"):
            pg.grad(cost, [v])
        assert pg.grad(cost, [v], allow_unused=True) == [None], label
    v = T.vector("v")
    with pytest.raises(DisconnectedInputError, match="does not depend on v"):
        T.grad(pg.sum(pg.zeros_like(v) + 1.0), v)
    y, i = T.vector("y"), T.vector("i")  # an index computed from v: disconnected (Theano's AdvancedSubtensor1)
    with pytest.raises(DisconnectedInputError, match="does not depend on i"):
        T.grad(pg.sum(pg.take(y, pg.astype(i, "int64"))), i)


def test_a_declared_size_stays_known_next_to_an_unknown_one():
    """Shape inference made every dimension of a result unknown as soon as one of an input was:
    x * 2 of x of (None, 3) was (None, None). A dimension is known where it does not follow the
    unknown ones (x[-1:] is 1 long at every size but 0)."""
    x = T.tensor("float64", (None, 3), "x")
    assert (x * 2.0).shape == pg.exp(x).shape == (x + x).shape == x[-1:].shape == (None, 3)
    assert x.T.shape == (3, None) and pg.sum(x, axis=0).shape == (3,) and (x.T @ x).shape == (3, 3)
    assert (x @ x.T).shape == (None, None) and pg.reshape(x, (-1,)).shape == (None,)


def test_functions_that_need_declared_sizes_take_them_through_an_op():
    """h = x * 2; h[::-1] = x raised "would change variable (shape (None, None)) ... to shape unknown",
    and F.layer_normalization / F.split_axis of x * 2 "needs inputs of known shape, got (None, None)",
    though the docs say to declare the sizes in T.tensor, as x did."""
    x = T.tensor("float64", (None, 3), "x")
    g, b = pg.shared(np.array([1.0, 2.0, 3.0])), pg.shared(np.array([0.5, 0.0, -0.5]))
    h = x * 2.0
    h[::-1] = x
    f = pg.function([x], [h, F.layer_normalization(x * 2.0, g, b), *F.split_axis(x * 2.0, 3, axis=1)])
    xv = np.arange(6.0).reshape(2, 3) ** 2
    e = pg.Variable(xv) * 2.0
    e[::-1] = pg.Variable(xv)
    want = [e, F.layer_normalization(pg.Variable(xv) * 2.0, pg.Variable(g.get_value()), pg.Variable(b.get_value())),
            *F.split_axis(pg.Variable(xv) * 2.0, 3, axis=1)]
    for got, w in zip(f(xv), want):
        np.testing.assert_allclose(got, w.data, rtol=1e-12)


def test_an_unknown_size_takes_the_declared_size_it_must_match():
    """X @ W of Theano's T.matrix X (no size declared) and a shared W of (5, 3) had no shape at all
    (stand-ins of one size for X's dims fit no matmul with W), so x.shape raised "'NoneType' object is
    not iterable" and F.layer_normalization of it refused for want of the sizes gamma covers. A dim
    that must match a declared one takes its size; one free to vary stays unknown."""
    X, v = T.matrix("X"), T.vector("v")
    W = pg.shared(np.arange(15.0).reshape(5, 3) / 10, name="W")
    assert (X @ W).shape == (None, 3) and (v * W[0]).shape == (3,)
    assert pg.concat([T.tensor("float64", (None, None, None)), pg.shared(np.ones((2, 3, 4)))]).shape == (None, 3, 4)
    # reshape(x, (2, -1)) runs only at the even sizes: at 0 among those tried, which is no declared size
    with pytest.raises(TypeError, match=r"the shape of reshape\(v.*is not known until the function is called"):
        pg.reshape(v, (2, -1)).shape
    g, b = pg.shared(np.array([1.0, 2.0, 3.0])), pg.shared(np.array([0.5, 0.0, -0.5]))
    f = pg.function([X], F.layer_normalization(X @ W, g, b))
    xv = np.arange(10.0).reshape(2, 5) ** 0.5
    want = F.layer_normalization(pg.Variable(xv) @ pg.Variable(W.get_value()), pg.Variable(g.get_value()),
                                 pg.Variable(b.get_value()))
    np.testing.assert_allclose(f(xv), want.data, rtol=1e-12)


def test_the_outputs_of_a_multi_output_op_keep_the_declared_sizes():
    """unstack/eigh/qr/svd of symbolic inputs had every size unknown, declared or not, so a write through a
    view of unstack (v = pg.unstack(h)[1]; v *= 2) raised "not known; declare it with T.tensor", though
    it was declared."""
    x = T.tensor("float64", (3, 4), "x")
    assert [u.shape for u in pg.unstack(x * 1.0)] == [(4,)] * 3
    assert [t.shape for t in pg.linalg.eigh(T.tensor("float64", (None, 3, 3)))] == [(None, 3), (None, 3, 3)]
    assert [t.shape for t in pg.linalg.svd(T.tensor("float64", (None, 5, 3)), full_matrices=False)] == [
        (None, 5, 3), (None, 3), (None, 3, 3)]
    h = x * 1.0
    v = pg.unstack(h)[1]
    v *= 2.0
    cost = pg.sum(h * h)
    f = pg.function([x], [cost, T.grad(cost, x)])
    xv = np.arange(12.0).reshape(3, 4) / 10
    e = pg.Variable(xv)
    eh = e * 1.0
    ev = pg.unstack(eh)[1]
    ev *= 2.0
    pg.sum(eh * eh).backward()
    got_cost, got_grad = f(xv)
    np.testing.assert_allclose(got_cost, float(pg.sum(eh * eh).data), rtol=1e-12)
    np.testing.assert_allclose(got_grad, e.grad, rtol=1e-12)


def test_a_reshape_of_unknown_sizes_is_not_read_as_empty():
    """reshape(x, (-1, 4)) of a T.matrix ran on the stand-ins only where a dim was 0, so this session's first
    version of the matched-size inference read it as (0, 4): sum(y) / y.shape[0] compiled to inf."""
    x = T.matrix("x")
    for shape in ((-1, 4), (2, -1), (3, 2, -1)):
        with pytest.raises(TypeError, match="is not known until the function is called"):
            pg.reshape(x, shape).shape
    y = pg.reshape(T.tensor("float64", (None, 4)), (-1, 2))
    assert y.shape == (None, 2)


def test_size_and_len_of_an_expression_whose_shape_is_not_inferred_say_so():
    """x.size and len(x) of a symbolic expression without an inferred shape raised a bare "'NoneType' object is
    not iterable", as x.shape did."""
    h = pg.reshape(T.vector("v"), (2, -1))
    for read in (lambda: h.size, lambda: len(h)):
        with pytest.raises(TypeError, match=r"the shape of reshape\(v\) is not known until the function is called"):
            read()


def test_a_compiled_op_resolves_a_dtype_name_or_python_type_as_eager_calls_do():
    """The program resolved a dtype name by getattr on the namespace, a second copy of the rule: numpy's
    "double" resolved, but a Python type (astype(x, float)) went to the kernel as given."""
    x = T.vector("x", dtype="float32")
    assert pg.function([x], pg.astype(x, "double"))(np.ones(2, dtype=np.float32)).dtype == np.float64
    assert pg.function([x], pg.zeros_like(x, dtype=float))(np.ones(2, dtype=np.float32)).dtype == np.float64
    with pg.using_backend("array_api_strict"):
        import array_api_strict

        xs = T.vector("xs", dtype="float32")
        f = pg.function([xs], pg.astype(xs, int))
        assert f(array_api_strict.ones(2, dtype=array_api_strict.float32)).dtype == array_api_strict.int64
        with pytest.raises(TypeError, match="polygrad: a compiled program asks for double"):
            pg.function([xs], pg.astype(xs, "double"))(array_api_strict.ones(2, dtype=array_api_strict.float32))


def test_a_compiled_full_like_refuses_a_fill_that_does_not_fit_the_dtype_its_input_has_when_it_runs():
    """pg.full_like(int32 symbol, 3.7) compiled gave [3, 3], where eager full_like refuses it: the
    symbolic x only names its dtype, and the program ran the kernel unchecked."""
    xi = T.vector("xi", dtype="int32")
    f = pg.function([xi], pg.full_like(xi, 3.7))
    with pytest.raises(TypeError, match=r"full_like with fill_value=3\.7: a float value .*int32"):
        f(np.array([1, 2], dtype=np.int32))
    assert pg.function([xi], pg.full_like(xi, 3))(np.array([1, 2], dtype=np.int32)).tolist() == [3, 3]
    x = T.vector("x")
    assert pg.function([x], pg.full_like(x, 3.7))(np.array([1.0, 2.0])).tolist() == [3.7, 3.7]
    with pytest.raises(TypeError, match=r"full_like with fill_value=1j: a complex value"):
        pg.function([x], pg.full_like(x, 1j, dtype="float32"))(np.array([1.0, 2.0]))

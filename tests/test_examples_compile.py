"""Every example of Theano's ``function`` / ``In`` / ``Out`` documentation, run on
polygrad's compiled functions with the same values and errors."""

from __future__ import annotations

import numpy as np
import pytest

import polygrad as pg
from polygrad import In, Out
from polygrad import symbolic as T

EYE2 = [[1, 0], [0, 1]]


def is_0d_array(v, expected):
    """A 0-d numpy array equal to ``expected`` (Theano prints it as array(45.0))."""
    return isinstance(v, np.ndarray) and v.shape == () and float(v) == expected


# ---------------------------------------------------------------------------
# Value: initial and default values (the arity-2 ``inc``)
# ---------------------------------------------------------------------------
def make_inc():
    u, x, s = T.scalars("u", "x", "s")
    inc = pg.function([u, In(x, value=3), In(s, update=(s + x * u), value=10.0)], [])
    return inc, u, x, s


def test_inc_with_one_argument_returns_empty_list():
    """inc(5) returns [] (no outputs)."""
    inc, *_ = make_inc()
    assert inc(5) == []


def test_inc_one_argument_updates_s_to_25():
    """inc(5) updates s with 10 + 3*5 = 25."""
    inc, u, x, s = make_inc()
    inc(5)
    assert float(inc[s]) == 25.0


def test_inc_two_arguments_override_x_for_one_call():
    """inc(5); inc(3, 4) updates s to 25 + 3*4 = 37."""
    inc, u, x, s = make_inc()
    inc(5)
    assert inc(3, 4) == []
    assert float(inc[s]) == 37.0


def test_inc_override_of_x_is_temporary():
    """After inc(3, 4) the stored value of x is still 3.0."""
    inc, u, x, s = make_inc()
    inc(5)
    inc(3, 4)
    assert float(inc[x]) == 3.0


def test_inc_three_arguments_replace_s_before_update():
    """inc(3, 4, 7) ignores the stored s and sets it to 7 + 3*4 = 19."""
    inc, u, x, s = make_inc()
    inc(5)
    inc(3, 4)
    assert inc(3, 4, 7) == []
    assert float(inc[s]) == 19.0


def test_inc_assign_state_directly():
    """inc[s] = 10 stores array(10.0), a 0-d float64 array."""
    inc, u, x, s = make_inc()
    inc(5)
    inc[s] = 10
    v = inc[s]
    assert is_0d_array(v, 10.0)
    assert v.dtype == np.float64
    assert repr(v) == "array(10.)"


def test_inc_assigned_state_is_used_by_next_call():
    """After inc[s] = 10, inc(5) gives s = 10 + 3*5 = 25 again."""
    inc, u, x, s = make_inc()
    inc(5)
    inc(3, 4, 7)
    inc[s] = 10
    inc(5)
    assert float(inc[s]) == 25.0


# ---------------------------------------------------------------------------
# Access to function values and containers (T.scalars('xys'))
# ---------------------------------------------------------------------------
def make_xys():
    a, b, c = T.scalars("xys")
    fn = pg.function([a, b, ((c, c + a + b), 10.0)], [])
    return fn, a, b, c


def test_scalars_from_one_string_name_one_variable_per_letter():
    """T.scalars('xys') names the variables x, y and s (c is named 's')."""
    a, b, c = T.scalars("xys")
    assert (a.name, b.name, c.name) == ("x", "y", "s")


def test_xys_name_lookup_is_value_lookup():
    """fn['s'] is fn.value[c]."""
    fn, a, b, c = make_xys()
    assert fn["s"] is fn.value[c]


def test_xys_name_lookup_is_container_value():
    """fn['s'] is fn.container[c].value."""
    fn, a, b, c = make_xys()
    assert fn["s"] is fn.container[c].value


def test_xys_initial_value_is_0d_array_10():
    """fn['s'] starts as array(10.0)."""
    fn, a, b, c = make_xys()
    assert is_0d_array(fn["s"], 10.0)
    assert repr(fn["s"]) == "array(10.)"


def test_xys_call_updates_s_to_13():
    """fn(1, 2) returns [] and s becomes 10 + 1 + 2 = 13."""
    fn, a, b, c = make_xys()
    assert fn(1, 2) == []
    assert is_0d_array(fn["s"], 13.0)


def test_xys_assign_by_name_then_call_gives_100():
    """fn['s'] = 99.0; fn(1, 0) makes s 100."""
    fn, a, b, c = make_xys()
    fn(1, 2)
    fn["s"] = 99.0
    assert fn(1, 0) == []
    assert is_0d_array(fn["s"], 100.0)


def test_xys_assign_through_value_then_call_gives_100():
    """fn.value[c] = 99.0; fn(1, 0) makes s 100 again."""
    fn, a, b, c = make_xys()
    fn(1, 2)
    fn["s"] = 99.0
    fn(1, 0)
    fn.value[c] = 99.0
    assert fn(1, 0) == []
    assert is_0d_array(fn["s"], 100.0)


def test_xys_three_access_paths_agree_after_updates():
    """After the calls, fn['s'] == fn.value[c] == fn.container[c].value."""
    fn, a, b, c = make_xys()
    fn(1, 2)
    fn.value[c] = 99.0
    fn(1, 0)
    assert bool(fn["s"] == fn.value[c])
    assert bool(fn["s"] == fn.container[c].value)


def test_xys_lookup_by_position():
    """Integer keys give the value of the input at that position (c is at 2)."""
    fn, a, b, c = make_xys()
    assert fn.value[2] is fn["s"]
    assert fn.container[2] is fn.container[c]


# ---------------------------------------------------------------------------
# Input shortcuts: x (unnamed), y, In(z, value=42), ((w, w + x), 0)
# ---------------------------------------------------------------------------
def make_shortcuts():
    x = T.scalar()
    y = T.scalar("y")
    z = T.scalar("z")
    w = T.scalar("w")
    fn = pg.function(inputs=[x, y, In(z, value=42), ((w, w + x), 0)], outputs=x + y + z)
    return fn


def test_shortcuts_missing_required_input():
    """fn(1) raises TypeError: Missing required input: y."""
    fn = make_shortcuts()
    with pytest.raises(TypeError) as info:
        fn(1)
    assert str(info.value) == "Missing required input: y"


def test_shortcuts_missing_input_changes_no_state():
    """A call failing for a missing input leaves w at 0."""
    fn = make_shortcuts()
    with pytest.raises(TypeError):
        fn(1)
    assert float(fn["w"]) == 0.0


def test_shortcuts_two_positional_arguments():
    """fn(1, 2) gives array(45.0), and w goes 0 -> 1."""
    fn = make_shortcuts()
    assert float(fn["w"]) == 0.0
    r = fn(1, 2)
    assert is_0d_array(r, 45.0)
    assert repr(r) == "array(45.)"
    assert float(fn["w"]) == 1.0


def test_shortcuts_keyword_for_named_input():
    """fn(1, y=2) gives array(45.0), and w goes 1 -> 2."""
    fn = make_shortcuts()
    fn(1, 2)
    assert is_0d_array(fn(1, y=2), 45.0)
    assert float(fn["w"]) == 2.0


def test_shortcuts_unnamed_input_by_keyword_is_unknown():
    """fn(x=1, y=2) raises TypeError with Theano's exact text."""
    fn = make_shortcuts()
    with pytest.raises(TypeError) as info:
        fn(x=1, y=2)
    assert str(info.value) == (
        "Unknown input or state: x. The function has 3 named inputs (y, z, w), and 1 unnamed input which thus "
        "cannot be accessed through keyword argument (use 'name=...' in a variable's constructor to give it a name)."
    )


def test_shortcuts_unknown_keyword_changes_no_state():
    """The failing fn(x=1, y=2) leaves w where it was."""
    fn = make_shortcuts()
    fn(1, 2)
    with pytest.raises(TypeError):
        fn(x=1, y=2)
    assert float(fn["w"]) == 1.0


def test_shortcuts_third_positional_overrides_z():
    """fn(1, 2, 3) gives array(6.0), and w goes 2 -> 3."""
    fn = make_shortcuts()
    fn(1, 2)
    fn(1, y=2)
    assert is_0d_array(fn(1, 2, 3), 6.0)
    assert float(fn["w"]) == 3.0


def test_shortcuts_keywords_in_any_order():
    """fn(1, z=3, y=2) gives array(6.0), and w goes 3 -> 4."""
    fn = make_shortcuts()
    fn(1, 2)
    fn(1, y=2)
    fn(1, 2, 3)
    assert is_0d_array(fn(1, z=3, y=2), 6.0)
    assert float(fn["w"]) == 4.0


def test_shortcuts_keyword_for_state_replaces_it():
    """fn(1, 2, w=400) gives array(45.0) (z is 42 again), and w goes 400 -> 401."""
    fn = make_shortcuts()
    for args, kwargs in [((1, 2), {}), ((1,), {"y": 2}), ((1, 2, 3), {}), ((1,), {"z": 3, "y": 2})]:
        fn(*args, **kwargs)
    assert is_0d_array(fn(1, 2, w=400), 45.0)
    assert float(fn["w"]) == 401.0


def test_shortcuts_full_sequence_of_calls():
    """The documented sequence of calls gives 45, 45, 6, 6, 45, 45 and w 1, 2, 3, 4, 401, 402."""
    fn = make_shortcuts()
    calls = [((1, 2), {}), ((1,), {"y": 2}), ((1, 2, 3), {}), ((1,), {"z": 3, "y": 2}), ((1, 2), {"w": 400}), ((1, 2), {})]
    results, ws = [], []
    for args, kwargs in calls:
        results.append(float(fn(*args, **kwargs)))
        ws.append(float(fn["w"]))
    assert results == [45.0, 45.0, 6.0, 6.0, 45.0, 45.0]
    assert ws == [1.0, 2.0, 3.0, 4.0, 401.0, 402.0]


def test_shortcuts_default_of_z_is_not_changed_by_override():
    """After fn(1, 2, 3), the stored default of z is still 42."""
    fn = make_shortcuts()
    fn(1, 2, 3)
    assert float(fn["z"]) == 42.0


# ---------------------------------------------------------------------------
# Outputs: Out(borrow=True), a list of outputs, a single output
# ---------------------------------------------------------------------------
def test_outputs_list_with_borrowed_transpose():
    """fn1 returns a list of 2 arrays [[2, 0], [0, 2]] (the second an Out(..., borrow=True))."""
    x, y, s = T.matrices("xys")
    fn1 = pg.function([x], [x + x, Out((x + x).T, borrow=True)])
    r = fn1(np.asarray(EYE2))
    assert isinstance(r, list) and len(r) == 2
    for a in r:
        assert isinstance(a, np.ndarray) and a.dtype == np.float64
        np.testing.assert_array_equal(a, [[2.0, 0.0], [0.0, 2.0]])


def test_outputs_list_of_one():
    """fn2 with outputs [x + x] returns a list of 1 array."""
    x, y, s = T.matrices("xys")
    fn2 = pg.function([x], [x + x])
    r = fn2(np.asarray(EYE2))
    assert isinstance(r, list) and len(r) == 1
    np.testing.assert_array_equal(r[0], [[2.0, 0.0], [0.0, 2.0]])
    assert r[0].dtype == np.float64


def test_outputs_single_variable_gives_an_array():
    """fn3 with outputs=x + x returns one array, not a list."""
    x, y, s = T.matrices("xys")
    fn3 = pg.function([x], outputs=x + x)
    r = fn3(np.asarray(EYE2))
    assert isinstance(r, np.ndarray)
    np.testing.assert_array_equal(r, [[2.0, 0.0], [0.0, 2.0]])
    assert r.dtype == np.float64


def test_matrices_from_one_string():
    """T.matrices('xys') gives three 2-d float64 symbolic variables named x, y, s."""
    x, y, s = T.matrices("xys")
    assert [v.name for v in (x, y, s)] == ["x", "y", "s"]
    assert all(v._data.ndim == 2 and v._data.dtype == "float64" for v in (x, y, s))

"""Compiled functions as Theano has them beyond the seed: input downcasting,
unused and disconnected inputs, the ``function`` keywords, ``fn.copy`` /
``fn.free``, ``In(borrow=, allow_downcast=)``, ``fn.<name>``, containers
overwritten by a passed value, intermediate expressions as inputs, and clear
errors where a symbolic graph cannot be compiled."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import polygrad as pg
import polygrad.functions as F
from polygrad import In, Out
from polygrad import symbolic as T
from polygrad.compile import fusion
from polygrad.compile import Container
from polygrad.compile.compiled import ProfileStats, UnusedInputError
from polygrad.compile.symbolic import DisconnectedInputError
from polygrad.ops.manipulation import setitem


# ---------------------------------------------------------------------------
# Updates and argument conversion (S14)
# ---------------------------------------------------------------------------
def test_two_updates_of_one_shared_variable_raise_naming_it():
    """updates=[(c, c + 1), (c, c + 10)] raises naming c, as Theano does."""
    c = pg.shared(0.0, name="c")
    with pytest.raises(ValueError, match="shared variable c is given 2 updates"):
        pg.function([], [], updates=[(c, c + 1), (c, c + 10)])
    assert float(c.get_value()) == 0.0


def test_two_updates_of_one_variable_raise():
    """Two updates= entries for the same shared variable raise."""
    c = pg.shared(0.0, name="c")
    with pytest.raises(ValueError, match="c is given 2 updates"):
        pg.function([], [], updates=[(c, c * 2), (c, c + 1)])


def test_a_shared_variable_as_an_explicit_input_is_refused():
    """It was taken as an optional argument whose value, given at a call, replaced the state
    and fed its update (f([10, 10]) then left w at [11, 11]); Theano refuses it, as In(w, ...)."""
    w = pg.shared(np.array([1.0, 2.0]), name="w")
    from polygrad.compile import Container
    box = Container(w, np.array([10.0, 20.0]), name="w")
    for inputs, updates in (([w], [(w, w + 1)]), ([In(w, update=w * 2)], []), ([In(w, value=np.zeros(2))], []),
                            ([In(w, value=box)], [(w, w + 1)])):
        with pytest.raises(TypeError, match="the shared variable 'w' cannot be an explicit input"):
            pg.function(inputs, w * 2, updates=updates)


def test_a_symbolic_expression_as_a_value_is_refused_naming_where():
    """In(x, value=y * 2), pg.shared(y), f(y) and set_value(y): a TypeError naming In, shared or the input."""
    x, y = T.scalar("x"), T.scalar("y")
    with pytest.raises(TypeError, match=r"polygrad.In: value is the default of x.*not the symbolic expression mul"):
        In(x, value=y * 2)
    with pytest.raises(TypeError, match=r"polygrad.shared: value must be an array or a number, got the symbolic"):
        pg.shared(y)
    with pytest.raises(TypeError, match=r"input x takes an array or a number, got the symbolic expression y"):
        pg.function([x], x * 2)(y)
    with pytest.raises(TypeError, match=r"the value of the shared variable s takes an array or a number, got the symbolic "
                                        r"expression y"):
        pg.shared(1.0, "s").set_value(y)


def test_float_array_for_int_input_is_refused():
    """A float64 array for an int64 input raises TypeError naming the input: never truncated."""
    x = T.vector("x", dtype="int64")
    f = pg.function([x], x * 2)
    with pytest.raises(TypeError, match="input x of dtype int64 cannot store a value of dtype float64"):
        f(np.array([1.7, 2.2]))


def test_python_floats_for_int_input_are_refused_unless_exact():
    """[2.5] for an int input raises; [2.0, 3.0] converts exactly and is accepted (Theano's rule)."""
    x = T.vector("x", dtype="int64")
    f = pg.function([x], x * 2)
    with pytest.raises(TypeError, match="cannot store"):
        f([2.5, 3.0])
    np.testing.assert_array_equal(f([2.0, 3.0]), [4, 6])


@pytest.mark.parametrize("how", ["function", "In"])
def test_downcast_allowed_truncates(how):
    """allow_input_downcast=True (or In(allow_downcast=True)) converts a float array into an int input."""
    x = T.vector("x", dtype="int64")
    f = (pg.function([x], x * 2, allow_input_downcast=True) if how == "function"
         else pg.function([In(x, allow_downcast=True)], x * 2))
    r = f(np.array([1.7, 2.2]))
    assert r.dtype == np.int64
    np.testing.assert_array_equal(r, [2, 4])


def test_in_allow_downcast_false_wins_over_function():
    """In(allow_downcast=False) refuses a downcast that the function's allow_input_downcast=True allows."""
    x = T.vector("x", dtype="int64")
    f = pg.function([In(x, allow_downcast=False)], x * 2, allow_input_downcast=True)
    with pytest.raises(TypeError, match="cannot store"):
        f(np.array([1.5]))


def test_float64_array_for_float32_input_raises():
    """A float64 array for a float32 input raises by default (Theano), and is converted when allowed."""
    v = T.vector("v", dtype="float32")
    with pytest.raises(TypeError, match="input v of dtype float32 cannot store a value of dtype float64"):
        pg.function([v], v * 2)(np.array([1.1]))
    r = pg.function([v], v * 2, allow_input_downcast=True)(np.array([1.1]))
    assert r.dtype == np.float32


def test_python_float_for_float32_input_is_accepted_by_default():
    """A Python float goes into a float32 input by default (Theano's floatX case); not with allow_input_downcast=False
    unless it is exact."""
    s = T.scalar("s", dtype="float32")
    assert pg.function([s], s * 2)(0.1).dtype == np.float32
    strict = pg.function([s], s * 2, allow_input_downcast=False)
    with pytest.raises(TypeError, match="cannot store 0.1"):
        strict(0.1)
    assert float(strict(0.5)) == 1.0


@pytest.mark.parametrize("dtype,ok", [("int16", True), ("int64", False), ("float32", True), ("bool", True)])
def test_safe_upcasts_into_float32(dtype, ok):
    """Into a float32 input: int16, float32 and bool arrays go; int64 does not (float32 cannot hold it)."""
    v = T.vector("v", dtype="float32")
    f = pg.function([v], v * 1)
    a = np.array([1, 0], dtype=dtype)
    if ok:
        np.testing.assert_array_equal(f(a), [1.0, 0.0])
    else:
        with pytest.raises(TypeError, match="cannot store"):
            f(a)


def test_container_write_refuses_a_downcast():
    """fn[key] = a float array for an int input raises; the value is unchanged."""
    k = T.scalar("k", dtype="int64")
    f = pg.function([(k, 3)], k + 1)
    with pytest.raises(TypeError, match="cannot store"):
        f["k"] = np.float64(2.5)
    assert int(f["k"]) == 3


@pytest.mark.parametrize("dtype", ["float32", "complex64"])
def test_nan_converts_exactly_as_inf_does(dtype):
    """NaN is a value of every floating dtype, but == is False at NaN: f([0.5, nan]), g(nan) with
    allow_input_downcast=False and set_value([0.5, nan]) were refused 'without losing precision',
    where [0.5, inf] went in (Theano's values_eq takes NaN as equal to NaN)."""
    nan, inf = float("nan"), float("inf")
    values = [0.5, nan, inf] if dtype == "float32" else [0.5, complex(nan, 1.0), complex(2.0, nan), complex(inf, nan)]
    x = T.vector("x", dtype=dtype)
    np.testing.assert_array_equal(pg.function([x], x * 1)(values), np.array(values, dtype=dtype))
    s = T.scalar("s", dtype=dtype)
    assert np.isnan(pg.function([s], s * 1, allow_input_downcast=False)(nan))
    w = pg.shared(np.zeros(len(values), dtype=dtype))
    w.set_value(values)
    np.testing.assert_array_equal(w.get_value(), np.array(values, dtype=dtype))
    with pytest.raises(TypeError, match="without losing precision"):  # (what does not convert exactly still raises)
        w.set_value([0.1, nan] + values[2:])


def test_a_shared_variable_refusing_a_downcast_says_what_applies():
    """set_value and fn[W] = v suggested In(..., allow_downcast=True) or allow_input_downcast, which
    no shared variable reads, and named an unnamed one '<shared float32 ndim=1>' alone."""
    w = pg.shared(np.zeros(3, dtype=np.float32))
    f = pg.function([], w * 2)
    for write in (lambda: w.set_value(np.array([0.1, 0.2, 0.3])), lambda: w.set_value([0.1, 0.2, 0.3]),
                  lambda: f.__setitem__(w, np.array([0.1, 0.2, 0.3]))):
        with pytest.raises(TypeError, match=r"the value of the shared variable <shared float32 ndim=1> of dtype "
                                            r"float32 cannot store .* convert it to float32 yourself, or create the "
                                            r"shared variable with a dtype that holds it") as info:
            write()
        assert "In(" not in str(info.value) and "allow_input_downcast" not in str(info.value)
    np.testing.assert_array_equal(w.get_value(), np.zeros(3))


def test_a_downcast_into_ones_own_container_names_its_option():
    """A Container the user made is allowed to downcast by its own allow_downcast, not In's."""
    q = T.scalar("q", dtype="int64")
    box = Container(q, 5, name="q")
    with pytest.raises(TypeError, match=r"allow it with Container\(\.\.\., allow_downcast=True\)$"):
        box.value = 2.5
    g = pg.function([In(q, value=box, implicit=False)], q * 2)
    with pytest.raises(TypeError, match=r"allow it with In\(\.\.\., allow_downcast=True\) or pg.function"):
        g(2.5)  # (an argument follows In's options)


# ---------------------------------------------------------------------------
# T.grad: scalar costs and disconnected inputs (U9)
# ---------------------------------------------------------------------------
def test_grad_of_non_scalar_cost_raises_at_grad_time():
    """T.grad(x * 2, x) raises at once, naming T.grad and the cost's shape."""
    x = T.vector("x")
    with pytest.raises(TypeError, match=r"T.grad: the cost must be a scalar, but multiply\(x, 2\) has shape \('\?',\)"):
        T.grad(x * 2, x)


def test_pg_grad_of_non_scalar_symbolic_cost_raises():
    """pg.grad on a symbolic non-scalar cost raises the same way, naming pg.grad."""
    x = T.matrix("x")
    with pytest.raises(TypeError, match=r"polygrad.grad: the cost must be a scalar.*\('\?',\)"):
        pg.grad(pg.sum(x, axis=0), [x])


def test_grad_through_argmax_is_zeros_and_through_a_shape_only_op_is_disconnected():
    """A cost that reaches x only through argmax is connected, with zeros (Theano's Argmax.grad);
    one that reads x only for its shape (zeros_like: Theano's fill) raises DisconnectedInputError."""
    x = T.vector("x")
    cost = pg.astype(pg.argmax(x), pg.float64) * 1.0
    np.testing.assert_array_equal(pg.function([x], T.grad(cost, x))(np.array([1.0, 3.0])), [0.0, 0.0])
    with pytest.raises(DisconnectedInputError, match="non-differentiable"):
        T.grad(pg.sum(pg.ones_like(x) * 2.0), x)


def test_disconnected_inputs_warn_gives_zeros():
    """disconnected_inputs='warn' warns naming the input, and its gradient is zeros."""
    x, y = T.vectors("xy")
    with pytest.warns(UserWarning, match=r"does not depend on wrt\[1\] \(y\)"):
        gx, gy = T.grad(pg.sum(x * 2), [x, y], disconnected_inputs="warn")
    r = pg.function([x, y], [gx, gy], on_unused_input="ignore")(np.ones(2), np.ones(3))
    np.testing.assert_array_equal(r[1], np.zeros(3))


def test_disconnected_inputs_bad_value_raises():
    """disconnected_inputs='sometimes' raises ValueError."""
    x = T.vector("x")
    with pytest.raises(ValueError, match="disconnected_inputs"):
        T.grad(pg.sum(x), x, disconnected_inputs="sometimes")


# ---------------------------------------------------------------------------
# Symbolic graphs that cannot be compiled say why (C5)
# ---------------------------------------------------------------------------
def test_bernoulli_on_a_symbolic_input_compiles_and_draws_anew():
    """F.bernoulli(F.sigmoid(v)) compiles; each call draws anew, values are 0 or 1."""
    v = T.vector("v")
    f = pg.function([v], F.bernoulli(F.sigmoid(v)))
    draws = np.stack([f(np.zeros(64)) for _ in range(3)])
    assert set(np.unique(draws)) <= {0.0, 1.0}
    assert not (draws[0] == draws[1]).all() or not (draws[1] == draws[2]).all()


def test_unstack_of_unknown_length_says_what_is_unknown():
    """unstack along a dimension of unknown length raises naming the op and the unknown shape."""
    m = T.tensor("float64", (None, 2), "m")
    with pytest.raises(TypeError, match=r"how many outputs unstack gives.*\('\?', 2\)"):
        pg.unstack(m)
    assert len(pg.unstack(m, axis=1)) == 2


def test_unstack_of_unknown_shape_does_not_mask_the_error():
    """unstack(reshape(x, (2, 2))) of a vector of unknown length gives the real message, not a formatter crash."""
    x = T.vector("x")
    with pytest.raises(TypeError, match="how many outputs unstack gives"):
        pg.unstack(pg.reshape(x, (2, 2)))


# ---------------------------------------------------------------------------
# on_unused_input
# ---------------------------------------------------------------------------
def test_unused_input_raises_naming_it():
    """pg.function([x, y], x) raises UnusedInputError naming y (Theano's default)."""
    x, y = T.vectors("xy")
    with pytest.raises(UnusedInputError, match=r"input 1 \(y\) is not part of the graph"):
        pg.function([x, y], x * 2)


def test_unused_input_warn_and_ignore():
    """on_unused_input='warn' warns and compiles; 'ignore' compiles silently."""
    x, y = T.vectors("xy")
    with pytest.warns(UserWarning, match=r"input 1 \(y\)"):
        f = pg.function([x, y], x * 2, on_unused_input="warn")
    np.testing.assert_array_equal(f(np.ones(2), np.ones(3)), [2.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pg.function([x, y], x * 2, on_unused_input="ignore")
    with pytest.raises(ValueError, match="on_unused_input"):
        pg.function([x], x, on_unused_input="never")


def test_input_used_only_by_its_update_is_used():
    """An input read only by its own update expression counts as used."""
    k = T.scalar("k")
    f = pg.function([((k, k + 1), 0.0)], [])
    f()
    assert float(f["k"]) == 1.0


# ---------------------------------------------------------------------------
# The other function keywords
# ---------------------------------------------------------------------------
def test_mode_fast_compile_skips_merging(monkeypatch):
    """mode='FAST_COMPILE' gives the same values without merging common subexpressions; FAST_RUN merges
    (fusion off: the program's own kernels)."""
    monkeypatch.setattr(fusion, "ENABLED", False)
    x, y = T.vectors("xy")
    out = (x * y) + (x * y)
    fast_run = pg.function([x, y], out, mode="FAST_RUN")
    fast_compile = pg.function([x, y], out, mode="FAST_COMPILE")
    a, b = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    np.testing.assert_array_equal(fast_run(a, b), fast_compile(a, b))
    assert fast_run.program_source().count("# multiply") == 1
    assert fast_compile.program_source().count("# multiply") == 2


def test_unknown_mode_and_positional_updates_raise_clearly():
    """An unknown mode raises ValueError; an updates list given third (Theano's mode slot) raises TypeError saying so."""
    x = T.scalar("x")
    s = pg.shared(0.0, name="s")
    with pytest.raises(ValueError, match="mode must be one of"):
        pg.function([x], x, "DebugMode")
    with pytest.raises(TypeError, match="third argument is mode"):
        pg.function([x], x, [(s, s + x)])


def test_default_update_and_no_default_updates():
    """A shared variable's default_update applies when it has no update, unless no_default_updates says not."""
    s = pg.shared(0.0, name="s")
    s.default_update = s + 1
    f = pg.function([], s * 10)
    assert [float(f()) for _ in range(3)] == [0.0, 10.0, 20.0]
    frozen = pg.function([], s * 10, no_default_updates=True)
    frozen()
    assert float(s.get_value()) == 3.0
    listed = pg.function([], s * 10, no_default_updates=[s])
    listed()
    assert float(s.get_value()) == 3.0
    explicit = pg.function([], s * 10, updates=[(s, s * 2)])
    explicit()
    assert float(s.get_value()) == 6.0


def test_a_function_keeps_a_bounded_number_of_programs():
    """One program per batch size, kept without bound (14 MB after 1,000 sizes, each program
    holding constants of its shapes): the oldest are dropped past MAX_PROGRAMS and compiled again
    when their shapes come back, with the same results."""
    from polygrad.compile.compiled import MAX_PROGRAMS

    x = T.vector("x")
    f = pg.function([x], pg.mean(x * 2), profile=True)
    n = MAX_PROGRAMS + 8
    for size in range(1, n + 1):
        assert float(f(np.arange(size, dtype=float))) == size - 1
    assert len(f._programs) == MAX_PROGRAMS
    f(np.arange(float(n)))  # the newest: kept
    assert f.profile.n_compiles == n
    assert float(f(np.arange(1.0))) == 0.0  # the oldest: dropped, compiled again
    assert f.profile.n_compiles == n + 1 and len(f._programs) == MAX_PROGRAMS
    # the least recently used goes: a shape used at every step stays while others come and go
    for size in range(100, 100 + n):
        f(np.arange(5.0))
        f(np.arange(float(size)))
    before = f.profile.n_compiles
    f(np.arange(5.0))
    assert f.profile.n_compiles == before


def test_profile_counts_calls_and_compilations():
    """profile=True records calls and compilations in fn.profile."""
    x = T.vector("x")
    f = pg.function([x], x * 2, profile=True, name="double")
    f(np.ones(2))
    f(np.ones(2))
    f(np.ones(3))
    assert isinstance(f.profile, ProfileStats)
    assert (f.profile.n_calls, f.profile.n_compiles) == (3, 2)
    assert "double: 3 calls" in f.profile.summary()
    assert pg.function([x], x * 2).profile is None


def test_accept_inplace_is_accepted():
    """accept_inplace=True is accepted and changes nothing."""
    x = T.vector("x")
    np.testing.assert_array_equal(pg.function([x], x + 1, accept_inplace=True)(np.zeros(2)), [1.0, 1.0])


def test_rebuild_strict_checks_givens_types():
    """givens replacing a float64 vector by a float32 one raises, unless rebuild_strict=False."""
    x = T.vector("x")
    y = T.vector("y", dtype="float32")
    with pytest.raises(TypeError, match="rebuild_strict"):
        pg.function([y], x * 2, givens=[(x, y)])
    f = pg.function([y], x * 2, givens=[(x, y)], rebuild_strict=False)
    np.testing.assert_array_equal(f(np.ones(2, dtype=np.float32)), [2.0, 2.0])
    m = T.matrix("m")
    with pytest.raises(TypeError, match="ndim"):
        pg.function([m], x * 2, givens=[(x, m)])


def test_name_appears_in_repr():
    """name= is the function's name."""
    x = T.scalar("x")
    assert "square" in repr(pg.function([x], x * x, name="square"))


# ---------------------------------------------------------------------------
# fn.copy and fn.free
# ---------------------------------------------------------------------------
def make_counter():
    x = T.scalar("x")
    acc = T.scalar("acc")
    return pg.function([x, ((acc, acc + x), 0.0)], acc * 1, name="count")


def test_copy_has_its_own_state_by_default():
    """fn.copy(): the copy starts with the state's current value and then evolves apart."""
    f = make_counter()
    f(1.0)
    g = f.copy()
    g(10.0)
    assert float(f["acc"]) == 1.0 and float(g["acc"]) == 11.0
    assert g.name == "count copy"


def test_copy_module_copy_has_its_own_state():
    """copy.copy(fn) is fn.copy() (Theano's __copy__): a call of the copy leaves fn's state and defaults alone."""
    import copy

    x, s = T.vector("x"), T.scalar("s")
    acc = pg.function([x, In(s, value=0.0, update=s + pg.sum(x))], s * 1)
    acc(np.array([1.0, 1.0]))
    c = copy.copy(acc)
    c(np.array([5.0, 5.0]))
    assert float(acc["s"]) == 2.0 and float(c["s"]) == 12.0
    assert acc.container["s"] is not c.container["s"]


def test_copy_share_memory_shares_state():
    """fn.copy(share_memory=True): a call of either changes the state of both."""
    f = make_counter()
    g = f.copy(share_memory=True)
    g(5.0)
    f(1.0)
    assert float(f["acc"]) == float(g["acc"]) == 6.0


def test_copy_always_shares_shared_variables():
    """A shared variable stays shared between a function and its copy."""
    s = pg.shared(0.0, name="s")
    f = pg.function([], [], updates=[(s, s + 1)])
    g = f.copy()
    f()
    g()
    assert float(s.get_value()) == 2.0


def test_copy_swap_replaces_a_shared_variable():
    """copy(swap={a: b}) reads and updates b; a is untouched."""
    a = pg.shared(np.array([1.0, 2.0]), name="a")
    b = pg.shared(np.array([10.0, 20.0]), name="b")
    x = T.vector("x")
    f = pg.function([x], a * x, updates=[(a, a + 1)])
    g = f.copy(swap={a: b})
    np.testing.assert_array_equal(g(np.ones(2)), [10.0, 20.0])
    np.testing.assert_array_equal(b.get_value(), [11.0, 21.0])
    np.testing.assert_array_equal(a.get_value(), [1.0, 2.0])
    c = pg.shared(np.ones(3, dtype=np.float32), name="c")
    with pytest.raises(TypeError, match="cannot replace"):
        f.copy(swap={a: c})


def test_copy_swap_makes_the_new_shared_variable_the_input():
    """After copy(swap={w: v}), the copy's input is v (Theano's): copy[v] finds it, copy[w] raises, the name stays."""
    w = pg.shared(np.array([1.0, 2.0]), name="w")
    v = pg.shared(np.array([10.0, 20.0]), name="v")
    x = T.vector("x")
    f = pg.function([x], w * x, updates=[(w, w + 1)])
    g = f.copy(swap={w: v})
    np.testing.assert_array_equal(g[v], [10.0, 20.0])
    np.testing.assert_array_equal(g["w"], [10.0, 20.0])
    with pytest.raises(KeyError, match="not an input"):
        g[w]
    np.testing.assert_array_equal(g(np.ones(2)), [10.0, 20.0])
    out, state = g.as_pure()([np.ones(2)], {"w": np.array([3.0, 4.0])})
    np.testing.assert_array_equal(out, [3.0, 4.0])
    np.testing.assert_array_equal(f[w], [1.0, 2.0])


def test_copy_delete_updates():
    """copy(delete_updates=True) computes the outputs and updates nothing."""
    s = pg.shared(1.0, name="s")
    f = pg.function([], s * 2, updates=[(s, s + 1)])
    g = f.copy(delete_updates=True, name="peek")
    assert float(g()) == 2.0 and float(s.get_value()) == 1.0
    assert g.name == "peek"


def test_free_drops_programs_and_keeps_state():
    """fn.free() drops the compiled programs; the next call compiles again with the state kept."""
    f = make_counter()
    f(2.0)
    f.free()
    assert f.program_source() == ""
    f(3.0)
    assert float(f["acc"]) == 5.0


# ---------------------------------------------------------------------------
# In(borrow=) and In(value=Container, implicit=False)
# ---------------------------------------------------------------------------
def test_in_borrow_lets_an_output_be_the_argument():
    """In(x, borrow=True): pg.function returns the argument itself; without it, a copy."""
    x = T.vector("x")
    a = np.array([1.0, 2.0])
    assert pg.function([In(x, borrow=True)], x)(a) is a
    assert pg.function([x], x)(a) is not a


def test_in_mutable_without_borrow_raises():
    """In(x, value=v, mutable=True, borrow=False) raises, as in Theano."""
    with pytest.raises(ValueError, match="mutable and not borrow"):
        In(T.vector("x"), value=np.zeros(2), mutable=True, borrow=False)


def test_passed_value_overwrites_a_container():
    """In(q, value=Container, implicit=False): a passed value overwrites the container (the seed's rule)."""
    q = T.scalar("q")
    box = Container(q, 5.0, name="q")
    f = pg.function([In(q, value=box, implicit=False)], q * 2)
    assert float(f()) == 10.0
    assert float(f(3.0)) == 6.0
    assert float(box.value) == 3.0
    assert float(f()) == 6.0


def test_failed_call_does_not_overwrite_a_container():
    """A call that fails leaves the container's content as it was."""
    q = T.vector("q")
    box = Container(q, np.ones(2), name="q")
    s = pg.shared(np.zeros(2), name="s")
    f = pg.function([In(q, value=box, implicit=False)], q * 2, updates=[(s, q)])
    with pytest.raises(ValueError):
        f(np.ones(3))
    np.testing.assert_array_equal(box.value, [1.0, 1.0])


def test_a_container_of_another_dtype_or_shape_is_refused():
    """In(x, value=Container of another dtype or shape): a TypeError at pg.function, naming the input."""
    x, v = T.scalar("x"), T.vector("v")  # float64
    box = Container(T.scalar("q", dtype="float32"), 5.0, name="q")
    with pytest.raises(TypeError, match=r"input x is x \(dtype float64.*Container of q \(dtype float32"):
        pg.function([In(x, value=box)], x / 3)
    with pytest.raises(TypeError, match=r"input v is v \(dtype float64, shape \('\?',\)\).*shape \(\)"):
        pg.function([In(v, value=Container(T.scalar("r"), 5.0))], v * 2)
    w = pg.shared(np.float32(1.5), name="w")
    with pytest.raises(TypeError, match="Container of w"):
        pg.function([In(x, value=w.container, implicit=False)], x * 1)
    assert w.get_value().dtype == np.float32


def test_a_value_written_into_a_container_fits_the_container():
    """In(v, value=a shared variable's container, implicit=False): an argument of another shape is refused."""
    v = T.vector("v")
    w = pg.shared(np.zeros(3), name="w")
    f = pg.function([In(v, value=w.container, implicit=False)], v * 2)
    np.testing.assert_array_equal(f(np.ones(3)), [2.0, 2.0, 2.0])
    with pytest.raises(ValueError, match=r"input v expects shape \(3,\), got \(5,\)"):
        f(np.ones(5))
    np.testing.assert_array_equal(w.get_value(), [1.0, 1.0, 1.0])


# ---------------------------------------------------------------------------
# fn.<name>, integer names, intermediate inputs
# ---------------------------------------------------------------------------
def test_attribute_access_to_named_inputs():
    """inc.s reads the value of the input named s, and inc.s = v writes it (the seed's example)."""
    u, x, s = T.scalars("u", "x", "s")
    inc = pg.function([u, In(x, value=3), In(s, update=s + x * u, value=10.0)], [])
    inc(5)
    assert float(inc.s) == 25.0 and float(inc.x) == 3.0
    inc.s = 1.0
    assert float(inc["s"]) == 1.0
    with pytest.raises(AttributeError):
        inc.nothing


def test_function_attributes_win_over_input_names():
    """An input named 'name' or 'value' is reached by key; fn.name and fn.value stay the function's."""
    a, b = T.scalar("name"), T.scalar("value")
    f = pg.function([(a, 1.0), (b, 2.0)], a + b, name="f")
    assert f.name == "f" and not isinstance(f.value, np.ndarray)
    assert float(f["name"]) == 1.0 and float(f.value["value"]) == 2.0


def test_integer_names():
    """An int name beyond the positions is a name; one that clashes with another input's position is ambiguous."""
    x, y = T.scalars("xy")
    f = pg.function([In(x, name=7, value=1.0), In(y, value=2.0)], x + y)
    assert float(f[7]) == 1.0 and float(f[1]) == 2.0
    g = pg.function([In(x, name=1, value=1.0), In(y, value=2.0)], x + y)
    with pytest.raises(KeyError, match="ambiguous"):
        g[1]
    assert float(g[y]) == 2.0 and float(g[0]) == 1.0


def test_a_name_two_inputs_share_is_ambiguous():
    """Two shared variables named "W": fn["W"], fn.W and fn.W = v raise (Theano: ambiguous name); by variable works."""
    x = T.vector("x")
    w1, w2 = pg.shared(np.array([1.0, 2.0]), name="W"), pg.shared(np.array([10.0, 20.0]), name="W")
    f = pg.function([x], pg.sum(x * w1) + pg.sum(x * w2))
    with pytest.raises(KeyError, match="'W' is ambiguous"):
        f["W"]
    with pytest.raises(KeyError, match="'W' is ambiguous"):
        f["W"] = np.zeros(2)
    with pytest.raises(AttributeError, match="'W' is ambiguous"):
        f.W
    with pytest.raises(AttributeError, match="'W' is ambiguous"):
        f.W = np.zeros(2)
    assert "W" not in f.value
    np.testing.assert_array_equal(f[w2], [10.0, 20.0])
    np.testing.assert_array_equal(w1.get_value(), [1.0, 2.0])


def test_intermediate_expression_as_input():
    """y = x * 2; pg.function([y], y + 1): y's value is given, not computed from x (Theano's In rule)."""
    x = T.scalar("x")
    y = x * 2
    f = pg.function([y], y + 1)
    assert float(f(5.0)) == 6.0


def test_intermediate_input_gradient():
    """The gradient wrt an intermediate input treats it as a leaf."""
    x = T.vector("x")
    h = pg.exp(x)
    f = pg.function([h], T.grad(pg.sum(h * h), h))
    np.testing.assert_allclose(f(np.array([1.0, 2.0])), [2.0, 4.0])


def test_borrowed_output_and_borrow_input_keep_values():
    """Out(borrow=True) of a borrowed input returns the right values."""
    x = T.matrix("x")
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    r = pg.function([In(x, borrow=True)], Out(x.T, borrow=True))(a)
    np.testing.assert_array_equal(r, a.T)


# --- In-place writes to symbolic inputs and shared variables ---------------------------------
# They name the values a compiled function is given at each call. `w *= 2` on a shared variable
# used to rebind it to an expression, which pg.function then fed with the old value: the write
# was lost without an error. Intermediates of a symbolic graph may still be written in place.


@pytest.mark.parametrize("write", [
    lambda w: w.__imul__(2),
    lambda w: w.__setitem__(0, 5.0),
    lambda w: w.add_(1),
], ids=["*=", "setitem", "add_"])
def test_in_place_write_to_a_shared_variable_is_refused(write):
    w = pg.shared(np.array([1.0, 2.0]), name="w")
    with pytest.raises(TypeError, match=r"in-place .* on the shared variable w: .*set_value"):
        write(w)
    np.testing.assert_array_equal(pg.function([], w * 1)(), [1.0, 2.0])  # nothing changed


def test_in_place_write_to_a_symbolic_input_is_refused():
    x = T.vector("x")
    with pytest.raises(TypeError, match=r"in-place \+= on the symbolic input x"):
        x += 1
    np.testing.assert_array_equal(pg.function([x], x * 3)(np.array([1.0, 2.0])), [3.0, 6.0])


def test_out_of_place_and_intermediate_writes_still_work():
    w = pg.shared(np.array([1.0, 2.0]), name="w")
    x = T.vector("x")
    v = w * 2  # Theano's `w *= 2`: a new expression
    h = x * 2
    h += 1  # an intermediate takes the write
    f = pg.function([x], [v, h])
    a, b = f(np.array([1.0, 2.0]))
    np.testing.assert_array_equal(a, [2.0, 4.0])
    np.testing.assert_array_equal(b, [3.0, 5.0])


def test_an_update_of_a_shared_variable_that_givens_replaces():
    """givens replace k in the outputs and in the update expression (Theano's); the update still
    writes k's container. It used to raise a bare StopIteration while compiling."""
    k = pg.shared(np.array([1.0]), name="k")
    v = T.vector("v")
    f = pg.function([v], pg.sum(k), givens=[(k, v)], updates=[(k, k + 1)])
    assert float(f(np.array([5.0]))) == 5.0
    np.testing.assert_array_equal(k.get_value(), [6.0])


def test_raw_symbolic_arrays_refuse_comparison_operators():
    """Python's default == on the raw data of a symbolic Variable is an identity test: it gave
    True or False silently (F.accuracy compared labels that way). It raises now; Variables record."""
    t = T.vector("t")
    with pytest.raises(TypeError, match="cannot compare the symbolic array t"):
        t.data != -1
    with pytest.raises(TypeError, match="cannot compare"):
        t.data == t.data
    assert isinstance((t != -1).data, type(t.data))  # on the Variable: an op
    assert len({t.data, t.data}) == 1  # still hashable, by identity


# --- Indexing by symbolic integer arrays (Theano's W[i], log_p[arange(n), y]) ----------------
# An index given as a Variable is an input of the node (the row getitem_at): a compiled function
# reads it at each call. It used to be kept as a parameter: pg.function reported the index as
# unused, and with on_unused_input="ignore" the first call raised an IndexError.


def test_indexing_by_a_symbolic_integer_vector_and_its_gradient():
    W = pg.shared(np.arange(12.0).reshape(4, 3), name="W")
    i = T.vector("i", dtype="int64")
    cost = pg.sum(W[i] * W[i])
    f = pg.function([i], [W[i], T.grad(cost, W)])
    Wn = np.arange(12.0).reshape(4, 3)
    for idx in ([0, 2], [3, 3, 1]):  # different values and lengths, repeats summed
        rows, gW = f(np.array(idx))
        expected = np.zeros_like(Wn)
        np.add.at(expected, np.array(idx), 2 * Wn[np.array(idx)])
        np.testing.assert_array_equal(rows, Wn[np.array(idx)])
        np.testing.assert_array_equal(gW, expected)


def test_negative_log_likelihood_as_in_the_theano_tutorial():
    """-mean(log(p)[arange(n), y]), the deeplearning.net logistic regression's cost (the rows
    as a constant numpy array: arange of a symbolic length is not supported)."""
    x, y = T.matrix("x"), T.vector("y", dtype="int64")
    W = pg.shared(np.zeros((3, 2)), name="W")
    p = pg.exp(F.log_softmax(x @ W))
    cost = -pg.mean(pg.log(p)[np.arange(3), y])
    train = pg.function([x, y], cost, updates=[(W, W - 0.5 * T.grad(cost, W))])
    xs = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0], [1.0, 1.0, 0.0]])
    ys = np.array([0, 1, 0])
    first = float(train(xs, ys))
    assert first == pytest.approx(np.log(2))
    for _ in range(20):
        last = float(train(xs, ys))
    assert last < first
    Wv = pg.Variable(W.get_value())  # the same cost eagerly, at the trained W
    eager = -pg.mean(pg.log(pg.exp(F.log_softmax(pg.asarray(xs) @ Wv)))[pg.arange(3), pg.asarray(ys)])
    assert float(pg.function([x, y], cost)(xs, ys)) == pytest.approx(float(eager.data), rel=1e-12)


def test_tuple_keys_with_symbolic_arrays():
    x, j = T.matrix("x"), T.vector("j", dtype="int64")
    f = pg.function([x, j], [x[j, :], x[:, j], x[j, j]])
    a = np.arange(12.0).reshape(3, 4)
    idx = np.array([2, 0])
    for got, want in zip(f(a, idx), (a[idx, :], a[:, idx], a[idx, idx])):
        np.testing.assert_array_equal(got, want)


def _assign_rows(h, i, v, w):
    z = h * 1.0
    z[i] = v
    return pg.sum(z * z * w)


def test_item_assignment_by_a_symbolic_index_is_compiled_gradient_included():
    """h[i] = v with a symbolic i (Theano's set_subtensor) raised NotImplementedError; the index
    is now an input of the node (setitem_at), read at every call."""
    h, v, i = T.matrix("h"), T.vector("v"), T.vector("i", dtype="int64")
    w = pg.shared(np.arange(3.0))
    y = _assign_rows(h, i, v, w)
    f = pg.function([h, v, i], [y, *pg.grad(y, [h, v])])
    H, V = np.arange(12.0).reshape(4, 3), np.array([10.0, 20.0, 30.0])
    for idx in ([0, 2], [1, 3], [3, 0], [2]):
        hv, vv = pg.Variable(H), pg.Variable(V)
        want = _assign_rows(hv, pg.Variable(np.array(idx), requires_grad=False), vv, np.arange(3.0))
        want.backward()
        got = f(H, V, np.array(idx))
        for g, e in zip(got, (want.data, hv.grad, vv.grad)):
            np.testing.assert_allclose(g, e, err_msg=str(idx))


def test_repeated_symbolic_indices_refuse_the_values_gradient_at_every_call():
    h, v, i = T.vector("h"), T.scalar("v"), T.vector("i", dtype="int64")
    z = h * 1.0
    z[i] = v
    f = pg.function([h, v, i], T.grad(pg.sum(z * z), v))
    assert float(f(np.zeros(4), 2.0, np.array([0, 2]))) == 8.0
    with pytest.raises(ValueError, match="more than once"):
        f(np.zeros(4), 2.0, np.array([1, 1]))


def _eager_mean_and_grad(fn, *arrays):
    vs = [pg.Variable(np.asarray(a)) for a in arrays]
    y = fn(*vs)
    y.backward()
    return float(y.data), vs[0].grad


@pytest.mark.parametrize("fn", [
    lambda x: pg.mean(x[x > 0]),                               # a boolean mask
    lambda x: pg.mean(pg.unique_values(x)),                     # the count of distinct values
    lambda x: pg.mean(pg.unique_counts(x)[0] * 2.0),
    lambda x: pg.sum(x[pg.nonzero(x > 1.5)[0]] ** 2) / pg.sum(x),
], ids=["mask", "unique_values", "unique_counts", "nonzero"])
def test_shapes_that_depend_on_the_values_are_followed_at_every_call(fn):
    """A program is reused for inputs of the same shape, but these rows' shapes depend on the
    values: mean(unique_values(x)) kept the first call's count in its gradient (silently
    wrong), and x[x > 0] was refused. Each call now checks those shapes and traces again
    where one changed."""
    x = T.vector("x")
    y = fn(x)
    stats = ProfileStats()
    f = pg.function([x], [y, pg.grad(y, [x])[0]], profile=stats)
    calls = [[1.0, -2.0, 2.0, 3.0], [1.0, 1.0, 1.0, 5.0], [1.0, 2.0, 3.0, 4.0], [7.0, 7.0, 7.0, 7.0],
             [1.0, 2.0, 3.0, 4.0]]
    for a in calls:
        value, grad = f(np.array(a))
        want_value, want_grad = _eager_mean_and_grad(fn, a)
        assert float(value) == pytest.approx(want_value)
        np.testing.assert_allclose(grad, want_grad, err_msg=str(a))
    assert stats.n_compiles <= len(calls)


def test_a_shape_that_depends_on_the_values_is_unknown_while_the_graph_is_built():
    """The symbolic shape came from running the kernel on stand-in ones: x[x > 0] of a known (3,)
    claimed (3,), so sum(x[x > 0]) / x[x > 0].shape[0] compiled to sum / 3, silently."""
    x, r = T.tensor("float64", (3,), "x"), T.tensor("int64", (3,), "r")
    for result in (x[x > 0], pg.unique_values(x), pg.nonzero(x)[0], pg.repeat(x, r), pg.unique_counts(x)[1]):
        assert result.shape == (None,)
    assert x[r].shape == (3,)  # an integer index array: its shape decides


def test_a_program_is_traced_again_only_when_a_value_shape_changes():
    x = T.vector("x")
    stats = ProfileStats()
    f = pg.function([x], pg.sum(x[x > 0]), profile=stats)
    assert float(f(np.array([1.0, -1.0, 2.0]))) == 3.0
    assert float(f(np.array([5.0, 6.0, -1.0]))) == 11.0  # the same count: the same program
    assert stats.n_compiles == 1
    assert float(f(np.array([1.0, 2.0, 3.0]))) == 6.0
    assert stats.n_compiles == 2


def test_a_symbolic_integer_repeat_count_is_followed():
    x, r = T.vector("x"), T.vector("r", dtype="int64")
    y = pg.sum(pg.repeat(x, r) ** 2)
    f = pg.function([x, r], [y, pg.grad(y, [x])[0]])
    for reps in ([1, 2, 3], [3, 0, 0], [1, 1, 1]):
        value, grad = f(np.array([1.0, 2.0, 3.0]), np.array(reps))
        xv = pg.Variable(np.array([1.0, 2.0, 3.0]))
        want = pg.sum(pg.repeat(xv, np.array(reps)) ** 2)
        want.backward()
        assert float(value) == float(want.data)
        np.testing.assert_allclose(grad, xv.grad)


def test_a_shape_that_depends_on_random_draws_raises_at_the_first_call():
    """Such a shape changes from run to run. It raised only where two draws in a row gave
    different shapes, so a function could pass a first test and fail later, at random (17 of
    40 calls of a dropout mask on 6 elements returned); it is refused when traced."""
    import polygrad.functions as F
    from polygrad.ops.random import bernoulli

    x = T.vector("x")
    for y in (pg.sum(x[bernoulli(pg.ones_like(x) * 0.5) > 0.5]), x[F.dropout(x, 0.5) > 0]):
        f = pg.function([x], y)
        for seed in range(5):
            pg.seed(seed)
            with pytest.raises(NotImplementedError, match="depends on the random draws of"):
                f(np.arange(1.0, 7.0))
    # Random values selected by a mask that does not depend on them: the shape does not change.
    f = pg.function([x], F.dropout(x, 0.5)[x > 2])
    for seed in range(5):
        pg.seed(seed)
        out = np.asarray(f(np.arange(1.0, 7.0)))
        assert out.shape == (4,)
        assert np.all((out == 0) | (out == 2 * np.arange(3.0, 7.0))), out
    g = pg.function([x], pg.sum(pg.where(x > 0, x, 0.0)))  # the fixed-shape form
    assert float(g(np.array([1.0, -2.0, 3.0]))) == 4.0


@pytest.mark.parametrize("backend", ["numpy", "dask"])
@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("mode", ["FAST_RUN", "FAST_COMPILE"])
def test_a_retrace_for_a_new_count_draws_as_eager_code_does(monkeypatch, backend, fused, mode):
    """A call whose value-dependent shape changed ran the draws ahead of the shape check, was traced
    again and ran again: those draws were drawn twice, so after pg.seed the call's mask and every
    later draw differed from eager code's. The checks run before the first draw (a probe's, where
    the row selects from the draws: dropout(x)[x > 0])."""
    if backend == "dask":
        pytest.importorskip("dask", reason="the dask backend plugin needs dask")
    monkeypatch.setattr(fusion, "ENABLED", fused)
    calls = [[1.0, -2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0], [-1.0, -2.0, 3.0, 4.0],
             [1.0, -2.0, 3.0, 4.0]]  # 3, 4, 4, 2, 3 positives: a retrace at every change

    def step(x):
        return [F.dropout(x) * 2.0, pg.mean(x[x > 0]), F.dropout(x)[x > 0], F.dropout(pg.exp(x))]

    with pg.using_backend(backend):
        pg.seed(0)
        want = [[np.asarray(o.data) for o in step(pg.Variable(pg.asarray(np.array(v)).data))] for v in calls]
        want_next = np.asarray(F.dropout(pg.ones(16)).data)
        x = T.vector("x")
        f = pg.function([x], step(x), mode=mode)
        pg.seed(0)
        got = [[np.asarray(o) for o in f(pg.asarray(np.array(v)).data)] for v in calls]
        got_next = np.asarray(F.dropout(pg.ones(16)).data)
    for k, (w, g) in enumerate(zip(want, got)):
        for j, (a, b) in enumerate(zip(w, g)):
            np.testing.assert_allclose(b, a, err_msg=f"call {k}, output {j}")
    np.testing.assert_array_equal(got_next, want_next)


def test_batch_normalization_running_statistics_are_refused_in_a_compiled_function():
    x = T.tensor("float64", (4, 3), "x")
    g, b = pg.shared(np.ones(3)), pg.shared(np.zeros(3))
    with pytest.raises(NotImplementedError, match="running statistics cannot be updated in place inside pg.function"):
        F.batch_normalization(x, g, b, running_mean=np.zeros(3), running_var=np.ones(3))


def test_a_function_first_called_in_no_backprop_mode_still_differentiates():
    """The trace ran under the caller's mode: inside no_backprop_mode it recorded no graph, and
    the program kept zero gradients for good (w never moved)."""
    w = pg.shared(np.array([1.0, 2.0]), name="w")
    x = T.vector("x")
    cost = pg.sum((x * w) ** 2)
    step = pg.function([x], cost, updates=[(w, w - 0.1 * T.grad(cost, w))])
    with pg.no_backprop_mode():
        step(np.array([1.0, 1.0]))
    np.testing.assert_allclose(w.get_value(), [0.8, 1.6])
    step(np.array([1.0, 1.0]))
    np.testing.assert_allclose(w.get_value(), [0.64, 1.28])


def test_a_dask_shared_variable_stays_on_dask():
    """The updates were computed to NumPy arrays: the shared variable changed backend, and the
    next call raised 'arrays of two backends'."""
    da = pytest.importorskip("dask.array")
    u = pg.shared(da.from_array(np.array([1.0, 2.0]), chunks=1), name="u")
    x = T.vector("x")
    f = pg.function([x], pg.sum(u * x), updates=[(u, u * 2)])
    xv = da.from_array(np.ones(2), chunks=1)
    assert [float(f(xv)) for _ in range(4)] == [3.0, 6.0, 12.0, 24.0]
    value = u.get_value(borrow=True)
    assert isinstance(value, da.Array)
    assert len(value.__dask_graph__()) <= 2  # persisted: the graph does not grow with the calls


def test_a_call_on_arrays_of_two_backends_names_the_inputs():
    """A dask argument with a numpy shared variable: the error's note says which input is on which backend."""
    da = pytest.importorskip("dask.array")
    x = T.vector("x")
    w = pg.shared(np.ones(2), name="w")
    f = pg.function([x], x * w)
    with pytest.raises(TypeError, match="two backends") as info:
        f(da.ones(2))
    assert "several backends: dask: input x; numpy: shared variable w" in "\n".join(info.value.__notes__)


def test_shared_variables_and_compiled_functions_pickle():
    """Theano pickles both; a lock made them refuse. The copy has its own state and compiles again."""
    import copy
    import pickle

    s = pg.shared(np.zeros(2), name="s")
    x = T.vector("x")
    f = pg.function([x], pg.sum(x * s), updates=[(s, s + x)])
    f(np.ones(2))
    g = pickle.loads(pickle.dumps(f))
    h = copy.deepcopy(f)
    assert float(g(np.ones(2))) == float(h(np.ones(2))) == float(f(np.ones(2))) == 2.0
    np.testing.assert_array_equal(s.get_value(), [2.0, 2.0])
    np.testing.assert_array_equal(g["s"], [2.0, 2.0])
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(s)).get_value(), [2.0, 2.0])


def test_a_borrowed_output_that_is_a_constant_of_the_program_is_copied():
    """The gradient of a linear cost is a constant of the program; handed out as it was, a write
    into the borrowed result changed every later call."""
    x = T.vector("x")
    f = pg.function([x], Out(T.grad(pg.sum(x * 3.0), x), borrow=True))
    r = f(np.ones(3))
    r[...] = -7
    np.testing.assert_array_equal(f(np.ones(3)), [3.0, 3.0, 3.0])


def test_linear_algebra_results_have_known_shapes_in_symbolic_graphs():
    """The kernels ran on stand-in ones, which are singular: solve, inv and cholesky gave
    results of unknown rank, and F.logsumexp of one raised a TypeError."""
    A, b = T.tensor("float64", (3, 3), "A"), T.tensor("float64", (3, 2), "b")
    assert pg.linalg.solve(A, b).shape == (3, 2)
    assert pg.linalg.inv(A).shape == pg.linalg.cholesky(A).shape == (3, 3)
    f = pg.function([A, b], F.logsumexp(pg.linalg.solve(A, b)))
    a, bv = np.eye(3) * 2.0, np.ones((3, 2))
    assert float(f(a, bv)) == pytest.approx(float(F.logsumexp(pg.linalg.solve(pg.asarray(a), pg.asarray(bv))).data))


def test_a_boolean_mask_compiles_on_dask():
    """dask's unknown size is nan, and nan != nan: the shape check failed at every run and
    blamed random draws."""
    da = pytest.importorskip("dask.array")
    x = T.vector("x")
    f = pg.function([x], pg.sum(x[x > 0]))
    assert float(f(da.from_array(np.array([1.0, -1.0, 2.0]), chunks=2))) == 3.0
    assert float(f(da.from_array(np.array([1.0, 5.0, 2.0]), chunks=2))) == 8.0


def test_a_gradient_that_does_not_ask_for_the_values_ignores_their_repeated_positions():
    """The trace ran every input's rules: the values' refusal of repeated indices fired for a
    gradient with respect to h alone, when the first call repeated an index."""
    h_, v, i = T.vector("h"), T.vector("v"), T.vector("i", dtype="int64")
    h = h_ * 1.0
    h[i] = v
    g = pg.function([h_, i, v], T.grad(pg.sum(h * h), h_))
    np.testing.assert_array_equal(g(np.arange(5.0), np.array([1, 1, 3]), np.array([1.0, 2.0, 4.0])),
                                  [0.0, 0.0, 4.0, 0.0, 8.0])


def test_repeat_by_a_constant_count_keeps_known_shapes():
    X = T.tensor("float32", (2, 3, 8, 8), "X")
    assert pg.repeat(X, 2, axis=0).shape == (4, 3, 8, 8)
    W = pg.shared(np.ones((4, 3, 3, 3), np.float32))
    f = pg.function([X], pg.sum(F.convolution_2d(pg.repeat(X, 2, axis=0), W)))
    assert float(f(np.ones((2, 3, 8, 8), np.float32))) == 4 * 4 * 36 * 27


def test_an_unknown_dimension_used_as_a_number_says_so():
    x = T.vector("x")
    y = x[x > 0]
    with pytest.raises(TypeError, match="a dimension that is not known is None"):
        pg.sum(y) / y.shape[0]


def test_a_gradient_alone_follows_the_count_of_a_boolean_mask():
    """With only the gradient as output, the value of x[x > 0] is dead and was dropped before its
    shape was guarded: the count traced first lived on in mean's gradient (1/1 at every later
    call: [1, 1, 1, 0] for [1, 1, 1, -1], where [1/3, 1/3, 1/3, 0] is right), silently."""
    x = T.vector("x")
    f = pg.function([x], T.grad(pg.mean(x[x > 0]), x))
    for values in ([1.0, -1.0, -1.0, -1.0], [1.0, 1.0, 1.0, -1.0], [1.0, 1.0, -1.0, -1.0]):
        xv = pg.Variable(np.array(values))
        pg.mean(xv[xv > 0]).backward()
        np.testing.assert_allclose(f(np.array(values)), xv.grad)


@pytest.mark.parametrize("backend", ["numpy", "dask"])
def test_a_gradient_does_not_go_through_a_givens_replacement(backend):
    """Theano builds a gradient on the graph, then substitutes givens into it: d(w x)/dw is x,
    which givens then make w. polygrad traced the cost with the replacement in place and ran
    backward through it: 6 where PyTensor gives 3, and the fixed-target idiom (a regression
    target given as an expression of W) got 6 where PyTensor gives 12."""
    if backend == "dask":
        pytest.importorskip("dask.array", reason="the dask backend plugin needs dask")
    with pg.using_backend(backend):
        w, x = T.scalar("w"), T.scalar("x")
        cost = w * x
        f = pg.function([w], [cost, T.grad(cost, w), T.grad(cost, x)], givens=[(x, w)])
        assert [float(v) for v in f(3.0)] == [9.0, 3.0, 3.0]
        W = pg.shared(pg.asarray(2.0))
        xin, target = T.scalar("xin"), T.scalar("target")
        cost = (W * xin - target) ** 2
        g = pg.function([xin], [cost, T.grad(cost, W)], givens=[(target, W * xin * 0.5 + 1)])
        assert [float(v) for v in g(3.0)] == [4.0, 12.0]
        a, b = pg.shared(pg.asarray(2.0)), pg.shared(pg.asarray(3.0))
        xx = T.scalar("xx")
        h = pg.function([], list(T.grad(a * xx + b * b, [a, b])), givens={xx: b})
        assert [float(v) for v in h()] == [3.0, 6.0]


def test_givens_cannot_replace_an_input():
    """givens replacing an input of the function raised a false "not part of the graph" error,
    and with on_unused_input='ignore' the caller's argument was dropped silently (f(5.0) gave
    6.0). PyTensor refuses it: an input is given its value."""
    x = T.scalar("x")
    s = pg.shared(np.array(2.0))
    for kwargs in ({}, {"on_unused_input": "ignore"}):
        with pytest.raises(ValueError, match="givens replaces x, an input of the function"):
            pg.function([x], x * 3, givens=[(x, s)], **kwargs)


def test_a_replacement_reads_the_variable_it_replaces_as_it_was():
    """givens=[(s, s + 1)] compiled, then raised a bare KeyError: 1 (a symbol id) at the first call.
    Theano clones each replacement first: inside it, s is the original s, so s * 2 is (s + 1) * 2; what
    the replacement reads keeps that meaning everywhere (the output s + 1 below is 2, 3)."""
    s = pg.shared(np.array([1.0, 2.0]), name="s")
    r = s + 1
    f = pg.function([], [s * 2, r, s], givens=[(s, r)], updates=[(s, s * 10)])
    assert [v.tolist() for v in f()] == [[4.0, 6.0], [2.0, 3.0], [2.0, 3.0]]
    np.testing.assert_array_equal(s.get_value(), [20.0, 30.0])  # the update reads s replaced too
    assert len(f.inputs) == 1 and f.container[s].value is s.container.value  # one input for s, read once
    np.testing.assert_array_equal(pg.function([], s * 2, givens=[(s, s)])(), [40.0, 60.0])
    x = T.vector("x")
    h = x * 2
    np.testing.assert_array_equal(pg.function([x], h * 3, givens={h: h + 1})(np.array([1.0, 2.0])), [9.0, 15.0])


def test_givens_that_read_what_a_later_pair_replaces_are_refused_naming_both():
    """Two replacements reading each other's variable raised KeyError: 7 at the first call. Theano
    refuses, at compile time, a replacement that reads a variable a later pair replaces (a cycle
    always does); a later replacement may read an earlier pair's variable, and sees its replacement."""
    a, b, c = T.scalars("a", "b", "c")
    with pytest.raises(ValueError, match=r"givens replaces a by add\(b, 1\) and b by multiply\(a, 2\): each "
                                         r"replacement reads the variable the other replaces, a cycle"):
        pg.function([c], a * b + c, givens=[(a, b + 1), (b, a * 2)])
    with pytest.raises(ValueError, match=r"givens replaces b by c, but the replacement of a given before it, "
                                         r"add\(b, 1\), reads b .*put \(b, c\) first"):
        pg.function([c], a * 2, givens=[(a, b + 1), (b, c)])
    assert float(pg.function([c], a * 2, givens=[(b, c), (a, b + 1)])(1.0)) == 4.0
    with pytest.raises(ValueError, match=r"givens replaces a twice \(by c and by add\(c, 1\)\)"):
        pg.function([c], a * 2, givens=[(a, c), (a, c + 1)])


def test_a_cycle_left_in_a_graph_fails_loudly_while_ordering_it():
    """A cycle dropped out of the trace's order silently, and a KeyError followed; it says what it is now."""
    from polygrad.compile.program import _creation_order

    a, b = T.scalar("a").data, T.scalar("b").data
    with pytest.raises(AssertionError, match=r"internal error.*2 expressions depend on each other"):
        _creation_order([a], {}, lambda s: [b] if s is a else [a])


def test_slices_with_symbolic_bounds():
    """``data[i * bs:(i + 1) * bs]``, the Theano tutorial's minibatch (through givens), raised a
    false "input i is not part of the graph" (the bounds lived in the node's parameters), and
    with on_unused_input='ignore' an AttributeError. The bounds are inputs of the node now; the
    result's shape depends on their values (a shorter last batch traces again)."""
    data = pg.shared(np.arange(10.0).reshape(5, 2), name="data")
    i = T.scalar("i", dtype="int64")
    x = T.matrix("x")
    w = pg.shared(np.array([1.0, -1.0]), name="w")
    cost = pg.sum((x @ w) ** 2)
    train = pg.function([i], cost, updates=[(w, w - 0.01 * T.grad(cost, w))], givens={x: data[i * 2:(i + 1) * 2]})
    assert float(train(0)) == 2.0
    f = pg.function([x, i], [x[i * 2:(i + 1) * 2], T.grad(pg.sum(x[i * 2:(i + 1) * 2] ** 2), x)])
    d = np.arange(10.0).reshape(5, 2)
    for k in (0, 2, 1, -1):
        out, g = f(d, k)
        np.testing.assert_array_equal(out, d[k * 2:(k + 1) * 2])
        want = np.zeros_like(d)
        want[k * 2:(k + 1) * 2] = 2 * d[k * 2:(k + 1) * 2]
        np.testing.assert_array_equal(g, want)
    step = pg.function([x, i], x[::i])
    np.testing.assert_array_equal(step(d, -2), d[::-2])
    put = pg.function([x, i], setitem(x, slice(i, i + 2), 0.0))
    want = d.copy()
    want[3:5] = 0.0
    np.testing.assert_array_equal(put(d, 3), want)


def test_an_eager_slice_bound_may_be_a_variable():
    """Eagerly a Variable bound is read as a number (a view, as h[1:3] is; see the next test),
    and a bound that is not an integer scalar is refused."""
    d = np.arange(10.0).reshape(5, 2)
    v = pg.Variable(d.copy())
    y = v[pg.Variable(np.array(1)):pg.Variable(np.array(3))]
    pg.sum(y * y).backward()
    np.testing.assert_array_equal(v.grad[1:3], 2 * d[1:3])
    with pytest.raises(TypeError, match="a slice bound must be an integer scalar"):
        v[pg.Variable(np.array(1.5)):]


def test_slices_with_symbolic_bounds_on_dask():
    pytest.importorskip("dask.array", reason="the dask backend plugin needs dask")
    with pg.using_backend("dask"):
        data = pg.shared(pg.asarray(np.arange(12.0).reshape(6, 2)), name="data")
        i = T.scalar("i", dtype="int64")
        f = pg.function([i], pg.sum(data[i * 2:(i + 1) * 2]))
        assert [float(f(k)) for k in range(3)] == [6.0, 22.0, 38.0]


def test_shared_strict_and_declared_shape():
    """pg.shared(strict=True) was accepted and ignored (int64, float32 and list values were
    converted). A shared variable's shape is its first value's unless shape= declares a
    dimension that may change (Theano's dataset swapped by set_value, a buffer an update grows);
    the docs said neither."""
    s = pg.shared(np.zeros(3), name="s", strict=True)
    for bad in (np.array([1, 2, 3]), [1.0, 2.0, 3.0], np.zeros(3, dtype=np.float32)):
        with pytest.raises(TypeError, match="the value of the shared variable s is strict"):
            s.set_value(bad)
    s.set_value(np.ones(3))
    with pytest.raises(ValueError, match=r"the value of the shared variable s expects shape \(3,\), got \(5,\)"):
        s.set_value(np.ones(5))
    data = pg.shared(np.arange(6.0).reshape(3, 2), name="data", shape=(None, 2))
    w = pg.shared(np.array([1.0, -1.0]), name="w")
    f = pg.function([], pg.sum(data @ w))
    assert float(f()) == -3.0
    data.set_value(np.ones((5, 2)) * np.array([3.0, 1.0]))
    assert float(f()) == 10.0
    with pytest.raises(ValueError, match=r"expects shape \('\?', 2\), got \(5, 3\)"):
        data.set_value(np.ones((5, 3)))
    buf = pg.shared(np.zeros(3), name="buf", shape=(None,))
    x = T.vector("x")
    g = pg.function([x], pg.sum(buf), updates=[(buf, x)])
    assert float(g(np.ones(5))) == 0.0 and buf.get_value().shape == (5,)
    assert float(g(np.ones(2))) == 5.0 and buf.get_value().shape == (2,)
    with pytest.raises(ValueError, match=r"shape \(None, 3\) does not fit the value of shape \(2, 2\)"):
        pg.shared(np.ones((2, 2)), shape=(None, 3))


def test_call_errors_name_the_function():
    """Errors at call time did not name the function (even with name=), and a string argument
    was called a loss of precision."""
    W, x = T.matrix("W"), T.vector("x")
    mv = pg.function([W, x], W @ x, name="mv")
    with pytest.raises(ValueError, match=r"input W of function 'mv' expects shape"):
        mv(np.ones(3), np.ones(3))
    with pytest.raises(TypeError, match=r"input x of function 'mv' of dtype float64 takes numbers or arrays, got str"):
        mv(np.ones((2, 3)), "abc")
    with pytest.raises(ValueError, match="matmul failed") as info:
        mv(np.ones((2, 3)), np.ones(4))
    assert "(while running polygrad.function 'mv')" in info.value.__notes__


def test_givens_replacing_an_expression_a_gradient_passes_through_is_refused():
    """Theano differentiates a replaced intermediate h = w * x through its own operations and
    then substitutes its value (cost = h * w, givens h -> 3 w: d/dw = h + w x = 16 at w = 2,
    x = 5). A trace has one value per expression: polygrad gave 6 (12 before stop 25) and called
    x unused. It is refused, naming the expression; an expression no wrt leads to is replaced."""
    w, x = T.scalar("w"), T.scalar("x")
    h = w * x
    cost = h * w
    for kwargs in ({}, {"on_unused_input": "ignore"}):
        with pytest.raises(NotImplementedError, match=r"givens replaces multiply\(w, x\), an expression the gradient"):
            pg.function([w, x], [cost, T.grad(cost, w)], givens={h: w * 3}, **kwargs)
    k = x * 2  # no wrt leads to k: its value is replaced, the gradient is the same either way
    f = pg.function([w], [k * w, T.grad(k * w, w)], givens={k: w + 1}, on_unused_input="ignore")
    assert [float(v) for v in f(2.0)] == [6.0, 3.0]


def test_an_intermediate_input_a_gradient_passes_through_is_refused():
    """An intermediate expression given as an input cut every gradient path through it: with
    y = a * 2 given, d/da of sum(y * a) + sum(exp(a)) lost its y term ([2.65, 2] where Theano
    gives [3.65, 2]), and with a cached h = X @ W given the gradient of W was zeros (an SGD
    step did nothing). It is refused as givens' replacement is; a gradient that does not pass
    through the given expression, or that is taken with respect to it, is computed."""
    a = T.vector("a")
    y = a * 2
    cost = pg.sum(y * a) + pg.sum(pg.exp(a))
    with pytest.raises(NotImplementedError, match=r"input 0 is multiply\(a, 2\), an intermediate expression the "
                                                  r"gradient of .* passes through on its way to a"):
        pg.function([y, a], [cost, T.grad(cost, a)])
    X = T.matrix("X")
    W = pg.shared(np.eye(2), name="W")
    h = pg.matmul(X, W)
    c = pg.sum(pg.tanh(h) ** 2)
    with pytest.raises(NotImplementedError, match=r"input 0 is matmul\(X, W\)"):
        pg.function([h, X], [c, pg.sum(X)], updates=[(W, W - 0.1 * T.grad(c, W))])
    with pytest.raises(NotImplementedError, match=r"input 0 is multiply\(a, 2\)"):  # y among the wrt: a's lost its terms
        pg.function([y, a], T.grad(cost, [y, a]))
    b = T.vector("b")
    with pytest.raises(NotImplementedError, match=r"givens replaces multiply\(a, 2\)"):
        pg.function([b, a], T.grad(cost, [y, a]), givens=[(y, b)])
    f = pg.function([y, a], [cost, T.grad(cost, y), T.grad(pg.sum(pg.exp(a)), a)])
    values = f(np.array([1.0, 1.0]), np.array([0.5, 0.0]))
    np.testing.assert_allclose(values[1], [0.5, 0.0])
    np.testing.assert_allclose(values[2], np.exp([0.5, 0.0]))


def test_borrowed_results_pin_their_memory():
    """A borrowed output takes its value as it is, so any other holder of that memory copies, in
    whatever order they come: outputs [y[::-1], Out(y, borrow=True)] shared memory, and so did
    an update of y with a borrowed output y[::-1] (PyTensor copies)."""
    x = T.vector("x")
    y = x * 2
    a, b = pg.function([x], [y[::-1], Out(y, borrow=True)])(np.ones(3))
    assert not np.shares_memory(a, b)
    s = pg.shared(np.zeros(3), name="s")
    out = pg.function([x], Out(y[::-1], borrow=True), updates=[(s, y)])(np.ones(3))
    out[...] = 100.0
    np.testing.assert_array_equal(s.get_value(), [2.0, 2.0, 2.0])


def test_a_strict_input_keeps_strict_for_its_container():
    """In(x, value=..., strict=True): a call with an int64 value was refused, but f["x"] = the
    same value was converted and stored (PyTensor refuses both); copy() kept it too."""
    x = T.vector("x")
    f = pg.function([In(x, value=np.zeros(3), strict=True)], x * 2)
    for g in (f, f.copy()):
        for bad in (np.array([1, 2, 3]), [1.0, 2.0, 3.0], np.zeros(3, dtype=np.float32)):
            with pytest.raises(TypeError, match="is strict"):
                g["x"] = bad


def test_swap_takes_a_shared_variable_whose_shape_fits():
    """copy(swap=) compared declared shapes exactly: a function on shape=(None, 3) refused a
    (5, 3) variable; one that fixed a dimension still refuses a variable free there."""
    a = pg.shared(np.zeros((2, 3)), name="a", shape=(None, 3))
    c = pg.shared(np.ones((5, 3)), name="c")
    f = pg.function([], pg.sum(a))
    assert float(f.copy(swap={a: c})()) == 15.0
    g = pg.function([], pg.sum(c))
    with pytest.raises(TypeError, match="cannot replace"):
        g.copy(swap={c: pg.shared(np.ones((5, 3)), shape=(None, 3))})


def test_an_eager_slice_by_variable_bounds_is_a_view():
    """y = h[a:b] with Variable bounds of concrete arrays is the view h[1:3] is: y += 10 writes
    through to h, with its graph (stop 25's first form copied, and h kept its old values)."""
    x = pg.Variable(np.arange(5.0))
    h = x * 1
    y = h[pg.Variable(np.array(1)):pg.Variable(np.array(3))]
    y += 10
    np.testing.assert_array_equal(h.data, [0.0, 11.0, 12.0, 3.0, 4.0])
    pg.sum(h * h).backward()
    np.testing.assert_array_equal(x.grad, [0.0, 22.0, 24.0, 6.0, 8.0])


def test_givens_refusal_only_where_a_gradient_goes_through():
    """The replaced expression as the wrt itself, or one a wrt reaches only through a
    comparison, is a leaf of the gradient: PyTensor's values, not a refusal."""
    w = T.scalar("w")
    h = w * 3
    f = pg.function([w], [h * w, T.grad(h * w, h)], givens={h: w * 6})
    assert [float(v) for v in f(2.0)] == [24.0, 2.0]
    v = T.vector("v")
    mask = pg.astype(v > 0, "float64")
    g = pg.function([v], [pg.mean(mask * v), T.grad(pg.mean(mask * v), v)], givens={mask: v * 0 + 0.5})
    out, grad = g(np.array([1.0, -1.0]))
    assert float(out) == 0.0 and list(grad) == [0.25, 0.25]  # the mask, 0.5, over the mean's 2


def test_an_eager_slice_bound_changed_after_the_forward():
    """The node kept the bound Variables, so changing one in place after the forward moved the
    gradient ([0, 0, 10, 20, 0] for [0, 10, 20, 0, 0]); it keeps the numbers read. And dask
    refused the Variables left in the slice."""
    x = pg.Variable(np.arange(5.0))
    a, b = pg.Variable(np.array(1)), pg.Variable(np.array(3))
    y = x[a:b]
    a.data[...] = 2
    b.data[...] = 4
    pg.sum(y * pg.Variable(np.array([10.0, 20.0]))).backward()
    np.testing.assert_array_equal(x.grad, [0.0, 10.0, 20.0, 0.0, 0.0])
    pytest.importorskip("dask.array", reason="the dask backend plugin needs dask")
    with pg.using_backend("dask"):
        xd = pg.Variable(pg.asarray(np.arange(5.0)))
        yd = xd[pg.Variable(pg.asarray(np.array(1))):pg.Variable(pg.asarray(np.array(3)))]
        np.testing.assert_array_equal(np.asarray(yd.data), [1.0, 2.0])


def test_an_update_keeps_the_declared_shape_of_a_swapped_in_variable():
    """copy(swap=) put a variable declared (5, 3) in place of one declared (None, 3), and an
    update then stored a (10, 3) value in it (a shape its set_value refuses, and functions
    compiled for it read 5 rows)."""
    a = pg.shared(np.zeros((5, 3)), name="a", shape=(None, 3))
    x = T.matrix("x")
    f = pg.function([x], pg.sum(a), updates=[(a, x)])
    c = pg.shared(np.ones((5, 3)), name="c")
    g = f.copy(swap={a: c})
    with pytest.raises(ValueError, match=r"the update of c has shape \(10, 3\).*c has shape \(5, 3\)"):
        g(np.ones((10, 3)))
    assert c.get_value().shape == (5, 3)


@pytest.mark.parametrize("build", [
    lambda x, s, i: pg.full_like(x, s),
    lambda x, s, i: pg.roll(x, i),
    lambda x, s, i: pg.reshape(x, (i, -1)),
    lambda x, s, i: pg.broadcast_to(x, (i, 4)),
], ids=["full_like", "roll", "reshape", "broadcast_to"])
def test_a_symbolic_parameter_is_refused_where_the_graph_is_built(build):
    """A symbolic scalar as a shift, fill value or shape was kept as a parameter, which the
    graph's walk never reads: pg.function called the input unused, and the kernel failed on a
    SymbolicArray at the first call."""
    x, s, i = T.vector("x"), T.scalar("s"), T.scalar("i", dtype="int64")
    with pytest.raises(TypeError, match=r"polygrad\.\w+: \w+ is symbolic .*only arrays are symbolic inputs"):
        build(x, s, i)


# --- New leaves of a symbolic variable's value (detach and its kin) ---------------------------
# An expression records the symbols it reads, not Variables: x.detach() shared x's symbol, so it
# was the same place in the graph, and the gradient went through it (x.detach() * x gave 2x, not x).
def _no_backprop(x):
    with pg.no_backprop_mode():
        h = x * 3
    return pg.sum(h * x)


def _no_backprop_items(x):
    with pg.no_backprop_mode():
        a, b = pg.unstack(pg.reshape(x * 1, (2, 1)))
    return pg.sum(pg.concat([a, b]) * x)


def _left_graph(how):
    def build(x):
        h = x * 3
        getattr(h, how)()
        return pg.sum(h * x)
    return build


def _two_leaves(x):
    a, b = pg.Variable(x.data), pg.Variable(x.data)
    return pg.sum(a * b * x)


def _data_assigned(x):
    p = pg.Variable(np.zeros(2))
    p.data = x.data
    return pg.sum(p * x)


def _item_detached(x):
    a, b = pg.unstack(pg.reshape(x, (2, 1)))
    return pg.sum(pg.concat([a.detach(), b]) * x)


def _items_cut_behind(x):
    a, b = pg.unstack(pg.reshape(x, (2, 1)))
    (a * 2).unchain_backward()  # (eager purges unstack's node: b's gradient stops there too)
    return pg.sum(pg.concat([b, b]) * x)


def _recorded_before_unchain(x):
    h = x * 3
    y = h * x
    h.unchain()  # (an expression recorded before keeps its path, as eager's keeps its edges)
    return pg.sum(y)


NEW_LEAVES = {
    "detach": lambda x: pg.sum(x.detach() * x),
    "detach_of_an_expression": lambda x: pg.sum((x * 2).detach() * x),
    "Variable_of_data": lambda x: pg.sum(pg.Variable(x.data) * x),
    "Variable_of_variable": lambda x: pg.sum(pg.Variable(x) * x),
    "raw_data_operand": lambda x: pg.sum(x.data * x),
    "no_backprop_mode": _no_backprop,
    "no_backprop_mode_items": _no_backprop_items,
    "detach_": _left_graph("detach_"),
    "unchain": _left_graph("unchain"),
    "unchain_backward": _left_graph("unchain_backward"),
    "two_leaves_of_one_value": _two_leaves,
    "data_assigned": _data_assigned,
    "item_detached": _item_detached,
    "items_cut_behind": _items_cut_behind,
    "recorded_before_unchain": _recorded_before_unchain,
    "logsumexp": lambda x: F.logsumexp(x * x),  # (its shift is detached)
}


@pytest.mark.parametrize("backend", ["numpy", "dask"])
@pytest.mark.parametrize("build", NEW_LEAVES.values(), ids=NEW_LEAVES.keys())
def test_a_new_leaf_of_a_symbolic_value_stops_the_gradient_as_eager(build, backend):
    """pg.grad and T.grad of a symbolic graph, compiled, give eager's value and gradient where a
    leaf is made of a variable's value (detach, pg.Variable(x.data), no_backprop_mode, unchain...):
    exactly node by node (FAST_COMPILE), to rounding where fused."""
    xv = np.array([1.0, 2.0])
    x = pg.Variable(xv.copy())
    cost = build(x)
    want = [cost.data, *pg.grad(cost, [x])[0].data]
    wrap = (lambda a: a) if backend == "numpy" else pytest.importorskip("dask.array").asarray
    s = T.tensor("float64", (2,), "s")
    cost = build(s)
    for mode in ("FAST_COMPILE", "FAST_RUN"):
        value, g1, g2 = (np.asarray(r) for r in pg.function([s], [cost, pg.grad(cost, [s])[0], T.grad(cost, s)],
                                                            mode=mode)(wrap(xv)))
        check = np.testing.assert_array_equal if mode == "FAST_COMPILE" else np.testing.assert_allclose
        check([value, *g1], want)
        check([value, *g2], want)


def test_unchain_backward_of_a_symbolic_variable_cuts_the_graph_behind_it_for_every_cost():
    """As eager's, which purges every node behind it: a cost recorded before, reading the same
    expressions, loses its path to x (eager: no gradient; T.grad: disconnected)."""
    x = T.vector("x")
    a = x * 3
    b = pg.sum(a * a)
    before = T.grad(b, x)
    (a + 1).unchain_backward()
    assert pg.grad(b, [x], allow_unused=True) == [None]
    with pytest.raises(DisconnectedInputError):
        T.grad(b, x)
    value, g = pg.function([x], [b, before])(np.array([1.0, 2.0]))
    assert float(value) == 45.0  # the value is unchanged
    np.testing.assert_array_equal(g, [18.0, 36.0])  # and a gradient asked for before, as eager's computed then


def test_unchain_backward_of_a_symbolic_gradient_keeps_its_value():
    """Cutting behind a gradient cuts its cost's graph too, yet the gradient's value stays (it read
    zeros: it was computed from the graph as cut), and no gradient goes back through it."""
    x = T.vector("x")
    w = pg.shared(np.array([1.0, 2.0]), name="w")
    c = T.grad(pg.sum(x * x * w), x) * 2
    c.unchain_backward()
    value, g = pg.function([x], [c, T.grad(pg.sum(c * x), x)])(np.array([1.0, 3.0]))
    np.testing.assert_array_equal(value, [4.0, 24.0])
    np.testing.assert_array_equal(g, [4.0, 24.0])


def test_a_gradient_with_respect_to_a_detached_leaf():
    """The leaf is a place in the graph of its own: d(sum(d * x))/dd is x, d/dx is d."""
    x = T.vector("x")
    d = x.detach()
    cost = pg.sum(d * x * x)
    f = pg.function([x], T.grad(cost, [d, x]))
    gd, gx = f(np.array([1.0, 2.0]))
    np.testing.assert_array_equal(gd, [1.0, 4.0])
    np.testing.assert_array_equal(gx, [2.0, 8.0])


def test_a_symbolic_input_stays_the_input_after_unchain_and_detach_():
    """A leaf has nothing to leave: x.unchain() and x.detach_() keep x the input it was."""
    x = T.vector("x")
    y = x * 2
    x.unchain()
    x.detach_()
    f = pg.function([x], [y, pg.grad(pg.sum(x * x), [x])[0]])
    np.testing.assert_array_equal(f(np.array([1.0, 2.0]))[1], [2.0, 4.0])


def test_a_detached_leaf_as_an_input_takes_the_value_given():
    x = T.vector("x")
    d = x.detach()
    assert float(pg.function([d], pg.sum(d * 2))(np.array([1.0, 2.0]))) == 6.0


def test_an_input_computed_from_a_detached_leaf_is_no_cut_on_the_gradient_path():
    """Giving h = x.detach() * 2 as an input cuts no gradient: none goes from h back to x. It was
    refused as a cut the gradient of sum(h * x) passes through on its way to x."""
    x = T.vector("x")
    h = x.detach() * 2
    f = pg.function([h, x], T.grad(pg.sum(h * x), x))
    np.testing.assert_array_equal(f(np.array([5.0, 6.0]), np.array([1.0, 2.0])), [5.0, 6.0])


def test_an_input_read_through_a_detached_leaf_is_no_cut_on_the_gradient_path():
    """A cost that reads the given h = x * w only through h.detach() sends no gradient through h:
    d/dw of sum(h.detach() * w) is h's value, given, not a refusal."""
    x, w = T.vector("x"), T.vector("w")
    h = x * w
    f = pg.function([h, w], T.grad(pg.sum(h.detach() * w), w))
    np.testing.assert_array_equal(f(np.array([5.0, 6.0]), np.array([1.0, 2.0])), [5.0, 6.0])


def test_an_input_cut_by_unchain_backward_after_a_gradient_through_it_is_still_refused():
    """The gradient asked for before the cut goes through h (as eager's was computed): giving h
    as an input cuts it, which is refused, as it was before unchain_backward (it gave zeros)."""
    x, w = T.vector("x"), T.vector("w")
    h = x * w
    g = T.grad(pg.sum(h * h), w)
    (h * 1).unchain_backward()
    with pytest.raises(NotImplementedError, match="intermediate expression the gradient"):
        pg.function([h, w], g)


def test_gradients_of_one_cost_asked_for_before_and_after_unchain_backward_differ():
    """Eager's first gradient went through a = x * 3, the one asked for after the cut does not."""
    x = T.vector("x")
    a = x * 3
    b = pg.sum(a * a) + pg.sum(x * x)
    before = T.grad(b, x)
    (a + 1).unchain_backward()
    after = T.grad(b, x)
    g1, g2 = pg.function([x], [before, after])(np.array([1.0, 2.0]))
    np.testing.assert_array_equal(g1, [20.0, 40.0])
    np.testing.assert_array_equal(g2, [2.0, 4.0])


def test_a_gradient_asked_before_unchain_backward_at_an_input_reads_no_further():
    """An intermediate given as an input is a leaf of the program: the graph as it was before the
    cut is not looked for below it (its operations are never traced: a KeyError)."""
    x, w = T.vector("x"), T.vector("w")
    a = x * 3
    h = a * w
    g = T.grad(pg.sum(h * x), h)
    (a + 1).unchain_backward()
    np.testing.assert_array_equal(pg.function([h, x], g)(np.array([5.0, 6.0]), np.array([1.0, 2.0])), [1.0, 2.0])


@pytest.mark.parametrize("mode", ["FAST_RUN", "FAST_COMPILE"])
@pytest.mark.parametrize("dtype", ["float64", "bool", pg.float64, np.float64])
def test_a_compiled_astype_of_complex_to_real_is_refused(mode, dtype):
    """A compiled program kept the real part ([1+2j, 3j] gave [1, 0]): the refusal was at the public
    function only, which a symbolic array passed unasked; it is the astype row's now."""
    z = T.tensor("complex128", (2,), name="z")
    with pytest.raises(TypeError, match="astype of a complex array to .* would drop its imaginary part"):
        pg.function([z], pg.astype(z, dtype), mode=mode)(np.array([1 + 2j, 3j]))
    got = pg.function([z], pg.astype(z, "complex64"), mode=mode)(np.array([1 + 2j, 3j]))
    np.testing.assert_array_equal(got, np.array([1 + 2j, 3j], np.complex64))


def test_pg_grad_of_a_disconnected_symbolic_input_raises_as_eager():
    """pg.grad (allow_unused=False, its default) wrt a float input the cost does not use gave zeros
    on symbolic variables, silently, where eager pg.grad raises: now it raises eager's error, naming
    the input (None with allow_unused=True); T.grad keeps Theano's disconnected_inputs."""
    x, y = T.vectors("xy")
    cost = pg.sum(x * 2) + pg.sum(pg.astype(y > 0, pg.float64))  # y only through a comparison
    for wrt in ([x, y], [y]):
        with pytest.raises(RuntimeError, match=rf"^polygrad.grad: input {len(wrt) - 1} \(y\) is not used to compute "
                                               r"the outputs, so it has no gradient; pass allow_unused=True"):
            pg.grad(cost, wrt)
    xe, ye = pg.Variable(np.ones(2)), pg.Variable(np.ones(2))
    with pytest.raises(RuntimeError, match=r"input 1 \(variable \(shape \(2,\)\)\) is not used to compute the outputs, "
                                           r"so it has no gradient; pass allow_unused=True"):
        pg.grad(pg.sum(xe * 2) + pg.sum(pg.astype(ye > 0, pg.float64)), [xe, ye])
    gx, gy = pg.grad(cost, [x, y], allow_unused=True)
    assert gy is None
    np.testing.assert_array_equal(pg.function([x, y], gx)(np.ones(2), np.ones(2)), [2.0, 2.0])
    # T.grad connects y through the comparison, as Theano (zeros); an input not in the cost raises
    tg = T.grad(cost, [x, y])
    np.testing.assert_array_equal(pg.function([x, y], tg[1])(np.ones(2), np.ones(2)), [0.0, 0.0])
    z = T.vector("z")
    with pytest.raises(DisconnectedInputError, match=r"does not depend on wrt\[1\] \(z\)"):
        T.grad(cost, [x, z])


@pytest.mark.parametrize("shape", [(4, 3), (None, 3), (None, None)])
def test_building_a_symbolic_graph_draws_nothing_from_the_shared_generator(shape):
    """Shape inference runs each row's kernel on stand-ins, and a random row's draws came from the
    shared generator: after pg.seed, building F.dropout's graph moved it, and the compiled call drew
    other numbers than the same eager code."""
    import polygrad.functions as F

    a = np.ones((4, 3))
    pg.seed(0)
    eager = np.asarray(F.dropout(pg.Variable(a), 0.5).data)
    pg.seed(0)
    x = T.tensor("float64", shape, name="x")
    f = pg.function([x], F.dropout(x * 1.0, 0.5))
    np.testing.assert_array_equal(f(a), eager)

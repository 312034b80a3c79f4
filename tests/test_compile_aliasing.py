"""Facts of the op table that compiled functions and in-place checks read: ``Op.view``
(the output may share memory with input 0) and ``Op.deterministic`` (random draws).

Compiled outputs and updates never alias an argument or a shared value, through any
view row (docs/compiled-functions.md); random draws are never merged or folded; an
in-place write through a view is seen by the version counter of what it views."""

from __future__ import annotations

import numpy as np
import pytest

import polygrad as pg
import polygrad.functions as F
from polygrad import symbolic as T
from polygrad.compile import fusion
from polygrad.compile import fusion as fusion_module
from polygrad.core.op import REGISTRY, returned_input
from polygrad.core.primitive import apply

# One call per view row that takes one array: (row name, input shape, input dtype, params).
VIEW_CASES = {
    "reshape": ((2, 3), "float64", {"shape": (3, 2)}),
    "permute_dims": ((2, 3), "float64", {"axes": (1, 0)}),
    "reverse_dims": ((2, 3), "float64", {}),
    "matrix_transpose": ((2, 3), "float64", {}),
    "broadcast_to": ((2, 3), "float64", {"shape": (2, 3)}),
    "sum_to": ((2, 3), "float64", {"shape": (2, 3)}),
    "expand_dims": ((2, 3), "float64", {"axis": 0}),
    "squeeze": ((1, 3), "float64", {"axis": 0}),
    "flip": ((2, 3), "float64", {"axis": 0}),
    "getitem": ((2, 3), "float64", {"key": (slice(None), slice(0, 2))}),
    "unstack": ((2, 3), "float64", {"axis": 0}),
    "positive": ((2, 3), "float64", {}),
    "real": ((2, 3), "float64", {}),
    "imag": ((2, 3), "complex128", {}),
    "conj": ((2, 3), "complex128", {}),
    "astype": ((2, 3), "float64", {"dtype": np.float64, "copy": False}),
    "linalg_diagonal": ((3, 3), "float64", {}),
}


def _value(shape, dtype):
    a = np.arange(float(np.prod(shape))).reshape(shape) + 1.0
    return a * (1 + 1j) if dtype == "complex128" else a


def _apply(name, x, params):
    out = apply(REGISTRY[name], (x,), params or None)
    return out[0] if REGISTRY[name].multi else out


def test_every_view_row_has_a_case():
    """A row declared view=True without a case here fails: the aliasing tests below cover every view row."""
    assert {name for name, op in REGISTRY.items() if op.view} == set(VIEW_CASES)


@pytest.mark.parametrize("name", sorted(VIEW_CASES))
def test_output_never_aliases_the_argument(name):
    """An owned output of a view row is a copy, never the caller's argument or a view of it."""
    shape, dtype, params = VIEW_CASES[name]
    x = T.tensor(dtype, shape, "x")
    arg = _value(shape, dtype)
    out = pg.function([x], _apply(name, x, params))(arg)
    assert not np.shares_memory(out, arg)


@pytest.mark.parametrize("name", sorted(VIEW_CASES))
def test_output_never_aliases_a_shared_value(name):
    """Writing into an owned output leaves the shared value it was computed from unchanged."""
    shape, dtype, params = VIEW_CASES[name]
    start = _value(shape, dtype)
    w = pg.shared(start.copy(), name="w")
    out = pg.function([], _apply(name, w, params))()
    out[...] = -1
    np.testing.assert_array_equal(w.get_value(), start)


@pytest.mark.parametrize("name", sorted(VIEW_CASES))
def test_update_never_aliases_the_argument(name):
    """An update through a view row stores a copy: the caller's later edits to its argument do not reach it."""
    shape, dtype, params = VIEW_CASES[name]
    x = T.tensor(dtype, shape, "x")
    arg = _value(shape, dtype)
    expected = _apply(name, pg.Variable(arg.copy(), requires_grad=False), params).data.copy()
    s = pg.shared(np.zeros_like(expected), name="s")
    pg.function([x], [], updates=[(s, _apply(name, x, params))])(arg)
    arg[...] = 99
    np.testing.assert_array_equal(s.get_value(), expected)


def test_an_update_never_takes_a_borrowed_argument():
    """In(x, borrow=True) lets outputs alias the argument, never the state: updates=[(s, x)]
    stored the caller's array itself in s's container, and the caller reusing its buffer
    changed s (PyTensor copies); as_pure's new state shared the argument's memory too."""
    x = T.vector("x")
    s, r = pg.shared(np.zeros(2), name="s"), pg.shared(np.zeros(2), name="r")
    f = pg.function([pg.In(x, borrow=True)], [], updates=[(s, x), (r, x[::-1])])
    buf = np.array([1.0, 2.0])
    f(buf)
    buf[:] = [99.0, -99.0]
    np.testing.assert_array_equal(s.get_value(), [1.0, 2.0])
    np.testing.assert_array_equal(r.get_value(), [2.0, 1.0])
    g = pg.function([pg.In(x, borrow=True)], x * 1, updates=[(s, x)])
    buf = np.array([3.0, 4.0])
    _, state = g.as_pure()([buf], {"s": np.zeros(2)})
    assert not np.shares_memory(state["s"], buf)


# The reproducers of finding S3, as the user writes them.
@pytest.mark.parametrize("fn, arg", [
    (lambda v: pg.flip(v, axis=0), np.arange(4.0)),
    (pg.real, np.arange(4.0)),
    (pg.linalg.diagonal, np.arange(4.0).reshape(2, 2)),
    (lambda v: pg.unstack(v)[0], np.arange(4.0).reshape(2, 2)),
], ids=["flip", "real", "linalg.diagonal", "unstack"])
def test_public_view_functions_give_owned_outputs(fn, arg):
    """flip, real, linalg.diagonal and unstack, compiled, return arrays that do not share the argument's memory."""
    x = T.tensor("float64", arg.shape, "x")
    out = pg.function([x], fn(x))(arg)
    assert not np.shares_memory(out, arg)


def test_flip_of_a_shared_value_gives_an_owned_output():
    """The caller writing into the output of flip(w) leaves w as it was."""
    w = pg.shared(np.arange(4.0), name="w")
    out = pg.function([], pg.flip(w))()
    out[:] = -1
    np.testing.assert_array_equal(w.get_value(), [0.0, 1.0, 2.0, 3.0])


def test_flip_update_does_not_alias_the_argument():
    """An update to flip(x) keeps its values when the caller then edits x's array."""
    x = T.vector("x")
    s = pg.shared(np.zeros(4), name="s")
    f = pg.function([x], [], updates=[(s, pg.flip(x))])
    arg = np.arange(4.0)
    f(arg)
    arg[:] = 99
    np.testing.assert_array_equal(s.get_value(), [3.0, 2.0, 1.0, 0.0])


# ---------------------------------------------------------------------------
# Random draws (finding S2)
# ---------------------------------------------------------------------------
def test_random_rows_are_marked_not_deterministic():
    """dropout's mask is a row declared deterministic=False."""
    assert REGISTRY["dropout_mask"].deterministic is False


def test_compiled_difference_of_two_dropouts_is_not_zero():
    """dropout(x) - dropout(x) compiled draws two masks: the difference is not all zeros."""
    pg.seed(0)
    x = T.vector("x")
    f = pg.function([x], F.dropout(x, 0.5) - F.dropout(x, 0.5))
    assert np.count_nonzero(f(np.ones(1000))) > 0


def test_two_dropout_outputs_of_one_call_differ():
    """Two dropouts of one input, both outputs of one compiled call, have different masks."""
    pg.seed(0)
    x = T.vector("x")
    a, b = pg.function([x], [F.dropout(x, 0.3), F.dropout(x, 0.3)])(np.ones(1000))
    assert not np.array_equal(a, b)


def test_random_draw_of_constants_is_not_folded():
    """A random row whose arguments are all constants stays in the program (folding would freeze one draw)."""
    from polygrad.compile.program import Program, _Tracer

    def program_of(name):
        tracer = _Tracer()
        op = REGISTRY[name]
        x = np.ones(8)
        params = {"ratio": 0.5} if name == "dropout_mask" else None
        tracer.instrs.append((op, op.kernel(pg.get_backend("numpy")), (("c", x),), params, tracer.new_slot(x + 0)))
        return Program(tracer, [], [("s", 0)])

    assert program_of("dropout_mask").n_kernels == 1
    assert program_of("sin").n_kernels == 0  # a deterministic one is folded


def _masked_loss_and_a_second_draw(x, y):
    return pg.sum(F.dropout(x, 0.5) + y), F.dropout(x, 0.5)


@pytest.mark.parametrize("mode", ["FAST_RUN", "FAST_COMPILE"])
def test_a_draw_whose_value_is_dead_is_still_drawn(mode):
    """d/dy of sum(dropout(x) + y) reads nothing of the mask, and dead-code removal dropped its draw:
    the second dropout then took the first one's numbers, not eager's."""
    xv, yv = np.arange(1.0, 65.0), np.ones(64)
    pg.seed(3)
    loss, second = _masked_loss_and_a_second_draw(pg.Variable(xv), pg.Variable(yv, requires_grad=True))
    x, y = T.vectors("x", "y")
    loss_s, second_s = _masked_loss_and_a_second_draw(x, y)
    f = pg.function([x, y], [T.grad(loss_s, y), second_s], mode=mode)
    for _ in range(2):  # (the first call traces)
        pg.seed(3)
        np.testing.assert_array_equal(f(xv, yv)[1], second.data)
    pg.seed(None)


def test_fusion_keeps_the_order_of_draws(monkeypatch):
    """A draw reading a fused group's member ran after the group, which sits at its last member,
    and so after a later draw that reads only the input: the two masks were swapped."""
    pytest.importorskip("numexpr")
    from polygrad_numpy import fuse

    monkeypatch.setattr(fuse, "MIN_BYTES", 0)

    def step(x):
        h = pg.exp(x)
        return [F.dropout(h, 0.5), F.dropout(x, 0.5), (h + 1) * 3]

    xv = np.linspace(0.0, 1.0, 64)
    pg.seed(5)
    eager = [v.data for v in step(pg.Variable(xv))]
    x = T.vector("x")
    f = pg.function([x], step(x))
    for _ in range(2):
        pg.seed(5)
        for got, expected in zip(f(xv), eager):
            np.testing.assert_array_equal(got, expected)
    assert "fused" in f.program_source()
    pg.seed(None)


def test_a_draw_outside_the_outputs_graph_is_not_part_of_the_function():
    """Theano's rule: a dropout made beside the graph of every output is not drawn by the function
    (docs/compiled-functions.md), so its output takes the first numbers after pg.seed."""
    xv = np.arange(1.0, 65.0)
    x = T.vector("x")
    F.dropout(x, 0.5)  # no output reads it
    f = pg.function([x], F.dropout(x, 0.5))
    pg.seed(3)
    got = f(xv)
    pg.seed(3)
    np.testing.assert_array_equal(got, F.dropout(pg.Variable(xv), 0.5).data)
    pg.seed(None)


def test_equal_deterministic_calls_are_still_merged(monkeypatch):
    """Common-subexpression elimination still merges two equal deterministic calls (fusion off:
    the program's own kernels)."""
    monkeypatch.setattr(fusion, "ENABLED", False)
    x = T.vector("x")
    f = pg.function([x], pg.sin(x) + pg.sin(x))
    f(np.ones(3))
    (program,) = f._programs.values()
    assert [op.name for op, *_ in program.instrs].count("sin") == 1


# ---------------------------------------------------------------------------
# Eager: a write through a view is a write to what it views (finding S4)
# ---------------------------------------------------------------------------
def test_inplace_write_through_real_is_caught_at_backward():
    """r = real(h); r += 100 changes h, which multiply saved: backward raises instead of a wrong gradient."""
    x = pg.Variable(np.array([1.0, 2.0, 3.0]))
    h = x * 2
    r = pg.real(h)
    y = pg.sum(h * h)
    r += 100.0
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.backward()


@pytest.mark.parametrize("name", sorted(n for n in VIEW_CASES if n not in ("unstack",)))
def test_view_rows_share_the_version_counter(name):
    """The output of a view row shares input 0's version counter, so writes through either are seen by both;
    a row that is a view only where its kernel returned its input itself (``returned_input``: +x, conj, sum_to,
    astype) shares it exactly there (numpy's conj of a complex array is a new one, which a write into x
    must leave as it is)."""
    shape, dtype, params = VIEW_CASES[name]
    x = pg.Variable(_value(shape, dtype), requires_grad=False)
    out = _apply(name, x, params)
    if REGISTRY[name].view is returned_input:
        assert (out._vbox is x._vbox) == (out.data is x.data)
    else:
        assert out._vbox is x._vbox


# --- One array given for two inputs while a program is traced --------------------------------
# The tracer tells values apart by identity; a program traced on a call that passed one array
# for two inputs (``train(batch, batch)``), or on shared variables made with borrow=True from
# one array, used to read one input for the other at every later call.


def test_one_array_for_two_inputs_at_the_first_call():
    x, y = T.vectors("x", "y")
    f = pg.function([x, y], x - 2 * y)
    a = np.array([1.0, 2.0])
    np.testing.assert_array_equal(f(a, a), [-1.0, -2.0])
    np.testing.assert_array_equal(f(np.array([10.0, 10.0]), np.array([1.0, 1.0])), [8.0, 8.0])


def test_two_shared_variables_borrowing_one_array():
    a = np.array([1.0, 2.0])
    w1, w2 = pg.shared(a, borrow=True), pg.shared(a, borrow=True)
    h = pg.function([], w1 + 10 * w2)
    np.testing.assert_array_equal(h(), [11.0, 22.0])
    w2.set_value(np.zeros(2))
    np.testing.assert_array_equal(h(), [1.0, 2.0])


def test_one_array_for_an_input_and_its_update():
    a = np.array([1.0, 2.0])
    w = pg.shared(a, borrow=True)
    x = T.vector("x")
    f = pg.function([x], w * x, updates=[(w, w + x)])
    np.testing.assert_array_equal(f(a), [1.0, 4.0])
    np.testing.assert_array_equal(w.get_value(), [2.0, 4.0])
    np.testing.assert_array_equal(f(np.ones(2)), [2.0, 4.0])
    np.testing.assert_array_equal(w.get_value(), [3.0, 5.0])


# --- Found by a differential pass of compiled functions against eager ------------------------


def test_scalar_comparisons_keep_slots_of_their_own():
    """NumPy's comparisons of 0-d arrays return the singletons True_ and False_, and the tracer
    tells values apart by identity: the second result took the first one's slot, and later
    calls gave the first call's answer (also in the gradients of clip, maximum, where)."""
    s = T.scalar("s")
    f = pg.function([s], [s > 0, s < 1])
    assert [bool(v) for v in f(0.5)] == [True, True]
    assert [bool(v) for v in f(2.0)] == [True, False]
    v = T.vector("v")
    g = pg.function([v], [pg.any(v > 0), pg.all(v > 0)])
    g(np.array([1.0, 2.0]))
    assert [bool(r) for r in g(np.array([1.0, -2.0]))] == [True, False]
    h = pg.function([s], T.grad(pg.clip(s, -0.5, 2.0), s))
    assert float(h(1.0)) == 1.0 and float(h(-3.0)) == 0.0


def _overwritten(y):
    t = y * 2.0
    t[...] = 5.0  # t no longer depends on y
    return t


def _overwritten_by_none_key(y):
    t = y * 2.0
    t[None] = 5.0
    return t


def _written_through_a_view(y):
    t = y * 2.0
    v = t[None]
    v += 2.0
    return t


@pytest.mark.parametrize("mode", ["FAST_RUN", "FAST_COMPILE"])
@pytest.mark.parametrize("branch", [_overwritten, _overwritten_by_none_key, _written_through_a_view])
@pytest.mark.parametrize("first", [-1.0, 1.0])
def test_a_constant_made_outside_the_trace_is_never_read_as_a_slot(mode, branch, first):
    """setitem's backward mask of a 0-d gradient, computed outside the trace, is NumPy's False_, the
    same object as the traced ``x > 0`` at x = -1: the program read the condition where the constant
    was meant, and d/dy of where(x > 0, t, y) was 2 at x = 1 where eager gives 0."""
    x, y = T.scalars("x", "y")
    f = pg.function([x, y], T.grad(pg.where(x > 0, branch(y), y), y), mode=mode)
    for xv in (first, -first, first):
        X, Y = pg.Variable(np.asarray(xv)), pg.Variable(np.asarray(3.0), requires_grad=True)
        (g,) = pg.grad([pg.where(X > 0, branch(Y), Y)], [Y], allow_unused=True)
        assert float(f(xv, 3.0)) == (0.0 if g is None else float(g.data)), (xv, first)


@pytest.mark.parametrize("mode", ["FAST_RUN", "FAST_COMPILE"])
def test_zero_dim_results_backward_reads_follow_each_call(mode):
    """A 0-d result takes an object of its own when traced (see the test above), and the node's saved
    output with it: backward read the kernel's own object, a constant of the first call's value."""
    s, v = T.scalar("s"), T.tensor("float64", (2,), "v")
    a, b = pg.unstack(v)  # (two 0-d results of one row)
    f = pg.function([s, v], [T.grad(pg.exp(s), s), T.grad(pg.tanh(s) * 2, s), T.grad(pg.sqrt(s), s),
                             T.grad(pg.exp(a) * b, v)], mode=mode)
    f(1.0, np.array([1.0, 1.0]))
    got = f(2.0, np.array([0.5, 3.0]))
    expected = [np.exp(2.0), 2 * (1 - np.tanh(2.0) ** 2), 0.5 / np.sqrt(2.0), [np.exp(0.5) * 3.0, np.exp(0.5)]]
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-12)


@pytest.mark.parametrize("fusion", [True, False], ids=["fused", "unfused"])
def test_negative_constants_and_constant_powers_compute_as_numpy(monkeypatch, fusion):
    """A negative constant was written without parentheses (-1 ** s0 is -(1 ** s0)), and numexpr
    rewrote constant powers (x ** -0.5 as 1 / sqrt(x): nan at -inf, -inf at -0.0)."""
    monkeypatch.setattr(fusion_module, "ENABLED", fusion)
    y = T.vector("y")
    values = np.array([-np.inf, -0.0, 0.5, 2.0, 4.0])
    with np.errstate(all="ignore"):  # the expected values as eager polygrad computes them: numpy's **
        cases = [(pg.pow(-1, y), (-1.0) ** values),
                 (pg.pow(-0.0, y * 1.0 - 2.5) + 1, (-0.0) ** (values - 2.5) + 1),
                 ((y * 2) ** -0.5, (values * 2) ** -0.5),
                 ((y * 2) ** 0.5 + 0, (values * 2) ** 0.5 + 0),
                 ((y * 2) ** 3 - 1, (values * 2) ** 3 - 1)]
        for expr, expected in cases:
            got = pg.function([y], expr)(values)
            np.testing.assert_array_equal(got, expected)


def test_empty_arrays_broadcast_as_numpy_in_compiled_functions():
    a, v = T.matrix("a"), T.vector("v")
    g = pg.function([a, v], pg.exp(a) + pg.exp(v))
    assert g(np.zeros((3, 0)), np.zeros((0,))).shape == (3, 0)  # numexpr gave (0,)


def test_a_constant_output_is_refused_clearly():
    x = T.vector("x")
    with pytest.raises(TypeError, match="output 1 is not a symbolic expression"):
        pg.function([x], [x * 2, pg.asarray([1.0, 2.0])])  # was an AttributeError about .id


# ---------------------------------------------------------------------------
# Results that are views of one another (found against PyTensor, stop 25)
# ---------------------------------------------------------------------------
_VIEWS = {
    "T": lambda y: y.T, "reversed": lambda y: y[::-1], "row": lambda y: y[0], "reshape": lambda y: pg.reshape(y, (-1,)),
    "expand_dims": lambda y: pg.expand_dims(y, axis=0), "flip": lambda y: pg.flip(y, axis=1),
    "permute_dims": lambda y: pg.permute_dims(y, (1, 0)), "broadcast_to": lambda y: pg.broadcast_to(y, (2, 2, 3)),
}


@pytest.mark.parametrize("view", sorted(_VIEWS))
def test_a_view_of_a_value_held_elsewhere_is_copied(view):
    """Aliasing was tracked per slot: an output that is a view of an update's value (``y.T``
    with ``updates=[(s, y)]``) was handed out as the view, so writing into the array the caller
    owns changed the shared variable; two outputs ``[y, y.T]`` and two updates ``(a, y), (b,
    y.T)`` shared memory likewise. Results of one root of memory are now handed out once."""
    v = _VIEWS[view]
    x = T.matrix("x")
    y = x * 2
    want = np.full((2, 3), 2.0)
    s = pg.shared(np.zeros((2, 3)), name="s")
    out = pg.function([x], v(y), updates=[(s, y)])(np.ones((2, 3)))
    out[...] = 99.0
    np.testing.assert_array_equal(s.get_value(), want)
    first, second = pg.function([x], [y, v(y)])(np.ones((2, 3)))
    first[...] = 99.0
    np.testing.assert_array_equal(second, np.broadcast_to(v(pg.asarray(want)).data, second.shape))
    a = pg.shared(np.zeros((2, 3)), name="a")
    b = pg.shared(np.asarray(v(pg.asarray(np.zeros((2, 3)))).data).copy(), name="b")
    pg.function([x], [], updates=[(a, y), (b, v(y))])(np.ones((2, 3)))
    a.get_value(borrow=True)[...] = 99.0
    np.testing.assert_array_equal(b.get_value(), np.broadcast_to(v(pg.asarray(want)).data, b.get_value().shape))
    pure = pg.function([x], v(y), updates=[(s, y)]).as_pure()
    out, state = pure([np.ones((2, 3))], {"s": np.zeros((2, 3))})
    out[...] = 99.0
    np.testing.assert_array_equal(state["s"], want)


def test_a_view_held_once_is_not_copied():
    """Only a second holder of a root pays a copy: a lone view output and an update's value are
    handed out as they are."""
    x = T.matrix("x")
    y = x * 2
    s = pg.shared(np.zeros((3, 2)), name="s")
    f = pg.function([x], [y], updates=[(s, y.T)])
    out, = f(np.ones((2, 3)))
    assert np.shares_memory(out, s.get_value(borrow=True)) is False
    g = pg.function([x], y.T)
    r = g(np.ones((2, 3)))
    assert r.base is not None  # the view itself, not a copy of it


def test_a_compiled_function_draws_after_a_seed_as_eager_code_does():
    """Tracing a compiled function runs its random kernels once; those draws came from the shared
    generator, so after pg.seed the first call (which traces) gave another mask than every later
    call and than eager dropout. The trace draws from a generator of its own."""
    x = T.vector("x")
    f = pg.function([x], F.dropout(x, 0.5))
    pg.seed(0)
    first = f(np.ones(64))
    pg.seed(0)
    again = f(np.ones(64))
    pg.seed(0)
    eager = F.dropout(pg.Variable(np.ones(64)), 0.5).data
    np.testing.assert_array_equal(first, again)
    np.testing.assert_array_equal(first, eager)
    pg.seed(None)

"""Adversarial: the state a failure leaves behind. After an error, what the user
sees next is the right result or an error that names the first failure; nothing is
half-applied (findings U4, U5, S11)."""

from __future__ import annotations

import numpy as np
import pytest

import polygrad as pg


class _FailAt(pg.FunctionHook):
    name = "fail-at"

    def __init__(self, label):
        self.label = label

    def backward_preprocess(self, function, in_data, out_grad):
        if function.label == self.label:
            raise RuntimeError(f"hook failed at {self.label}")


def test_retry_after_a_failed_backward_names_the_failed_pass():
    """A backward that failed half-way: the retry says an earlier pass failed (and where),
    not that backward ran a second time."""
    x = pg.Variable(np.array([1.0, 2.0]))
    y = pg.sum(pg.exp(pg.sin(x)) * 3)
    with _FailAt("exp"), pytest.raises(RuntimeError, match="hook failed at exp"):
        y.backward()
    with pytest.raises(RuntimeError, match=r"an earlier backward pass freed .* failed at exp: RuntimeError: hook failed"):
        y.backward()
    assert x.grad is None


def test_failed_backward_with_retain_graph_can_be_repeated():
    """With retain_graph=True a failed pass frees nothing: the same backward works once the cause is gone."""
    x = pg.Variable(np.array([1.0, 2.0]))
    y = pg.sum(pg.exp(pg.sin(x)) * 3)
    with _FailAt("exp"), pytest.raises(RuntimeError):
        y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad, 3 * np.exp(np.sin([1.0, 2.0])) * np.cos([1.0, 2.0]))


def test_failed_user_function_forward_leaves_the_instance_usable():
    """A Function whose forward raised can be applied again (U5)."""

    class Once(pg.Function):
        n = 0

        def forward(self, inputs):
            Once.n += 1
            if Once.n == 1:
                raise ValueError("transient")
            return inputs[0] * 2,

    f = Once()
    x = pg.Variable(np.array([1.0]))
    with pytest.raises(ValueError):
        f(x)
    np.testing.assert_allclose(f(x).data, [2.0])


def test_optimizer_update_with_one_bad_gradient_changes_nothing():
    """Adam with a bad gradient on /b: an error naming /b; a, b, c, t, every state as before;
    after the fix a retry steps each parameter once, with the right bias correction (S11, U1)."""
    a, b, c = (pg.Variable(np.array([1.0, 1.0])) for _ in range(3))
    opt = pg.optimizers.Adam().setup(pg.Link(a=a, b=b, c=c))
    a.grad, c.grad = np.ones(2), np.ones(2)
    b._grad = np.ones(5)  # wrong shape, past the .grad gate (as a buggy hook could leave it)
    with pytest.raises(ValueError, match=r"parameter '/b'"):
        opt.update()
    assert opt.t == 0 and (opt._state_of(a) or {"t": 0})["t"] == 0
    for p in (a, b, c):
        np.testing.assert_array_equal(p.data, [1.0, 1.0])
    b.grad = np.ones(2)
    opt.update()
    for p in (a, b, c):
        np.testing.assert_allclose(p.data, [0.999, 0.999])
    assert opt.t == 1 and [opt._state_of(p)["t"] for p in (a, b, c)] == [1, 1, 1]


def test_failing_pre_hook_leaves_gradients_as_they_were():
    """A pre hook that raises after rescaling some gradients: every gradient is put back."""
    a, b = pg.Variable(np.array([1.0])), pg.Variable(np.array([2.0]))
    opt = pg.optimizers.SGD(lr=0.1).setup(pg.Link(a=a, b=b))
    a.grad, b.grad = np.array([1.0]), np.array([1.0])
    ga, gb = a.grad, b.grad

    def rescale_then_fail(optimizer):
        a.grad = a.grad * 10
        raise RuntimeError("hook failed")

    opt.add_hook(rescale_then_fail)
    with pytest.raises(RuntimeError, match="hook failed"):
        opt.update()
    assert a.grad is ga and b.grad is gb and float(a.data[0]) == 1.0


def test_pickling_a_graph_too_deep_for_python_is_refused_up_front():
    """A Variable out of a very deep graph raises a clear ValueError, not a RecursionError half-way."""
    import pickle

    x = pg.Variable(np.ones(2))
    y = x
    for _ in range(3000):
        y = y * 1.0
    with pytest.raises(ValueError, match="graph 3000 functions deep"):
        pickle.dumps(y)
    assert pickle.loads(pickle.dumps(x * 2)).creator is not None  # a shallow one pickles with its graph


@pytest.mark.parametrize("fail", ["hook", "debug"])
def test_a_failing_leaf_hook_or_check_writes_no_grad(fail):
    """.grad was written leaf by leaf, with hooks and checks in between: b kept its 3 when a's
    hook raised, and a retry gave b.grad 6 instead of 3."""
    a, b = pg.Variable(np.array([1.0])), pg.Variable(np.array([1.0]))
    a.grad, b.grad = np.array([0.0]), np.array([0.0])
    if fail == "hook":
        y = pg.sum(a * 2 + b * 3)
        handle = a.register_hook(lambda g: 1 / 0)
        with pytest.raises(ZeroDivisionError):
            y.backward(retain_graph=True)
        handle.remove()
    else:
        a.grad = np.array([1e308])
        y = pg.sum(a * 1e308 + b * 3)
        with pg.debug_mode(), pytest.raises(FloatingPointError), np.errstate(over="ignore"):
            y.backward(retain_graph=True)
        a.grad = np.array([0.0])
    np.testing.assert_array_equal(b.grad, [0.0])
    y.backward()
    np.testing.assert_array_equal(b.grad, [3.0])


def test_a_hook_whose_added_raises_is_not_registered():
    class Refusing(pg.FunctionHook):
        name = "refusing"
        calls = 0

        def added(self, function=None):
            raise RuntimeError("cannot start")

        def forward_preprocess(self, function, in_data):
            Refusing.calls += 1

    with pytest.raises(RuntimeError, match="cannot start"):
        with Refusing():
            pass
    pg.exp(pg.asarray([1.0]))
    assert Refusing.calls == 0
    node = pg.exp(pg.Variable(np.array([1.0]))).creator
    with pytest.raises(RuntimeError, match="cannot start"):
        node.add_hook(Refusing())
    assert "refusing" not in node.local_function_hooks


def test_a_failing_backward_retains_no_intermediate_grad():
    a, b = pg.Variable(np.array([1.0, 2.0])), pg.Variable(np.array([3.0, 4.0]))
    h = a * b
    y = pg.sum(h * 2)

    def boom(g):
        raise ValueError("boom")

    handle = b.register_hook(boom)
    with pytest.raises(ValueError, match="boom"):
        y.backward(retain_grad=True, retain_graph=True)
    assert h.grad is None and y.grad is None and a.grad is None and b.grad is None
    handle.remove()
    y.backward(retain_grad=True)
    np.testing.assert_array_equal(h.grad, [2.0, 2.0])


def _overflowing_link():
    """``a`` steps fine; ``b`` (float32 3e38, gradient -1e38 at lr 1) overflows to inf."""
    a = pg.Variable(np.array([1.0], np.float32))
    b = pg.Variable(np.array([3e38], np.float32))
    a.grad, b.grad = np.array([0.5], np.float32), np.array([-1e38], np.float32)
    return a, b, pg.Link(a=a, b=b)


@pytest.mark.parametrize("kind", ["optimizers", "optim"])
def test_an_update_that_overflows_under_errstate_raise_changes_nothing(kind):
    """Under np.errstate(over="raise") the write ``b -= delta`` raised after /a was stepped, t
    advanced, and with b's array written (inf) but its version still 0; a retry stepped /a twice."""
    a, b, link = _overflowing_link()
    opt = (pg.optimizers.SGD(lr=1.0).setup(link) if kind == "optimizers" else pg.optim.SGD(link.params(), lr=1.0))
    rule = opt if kind == "optimizers" else opt._rule
    saved = pg.sum(b * pg.Variable(np.array([1.0], np.float32)))  # a graph that saved b
    with np.errstate(over="raise"), pytest.raises(FloatingPointError) as info:
        opt.update() if kind == "optimizers" else opt.step()
    assert ("'/b'" if kind == "optimizers" else "'/1'") in "\n".join(getattr(info.value, "__notes__", []))
    assert rule.t == 0 and (a.version, b.version) == (0, 0)
    assert float(a.data[0]) == 1.0 and float(b.data[0]) == np.float32(3e38)
    saved.backward()  # b was not written: its saved values are still right
    b.grad = np.array([0.0], np.float32)
    opt.update() if kind == "optimizers" else opt.step()
    assert float(a.data[0]) == 0.5 and rule.t == 1 and a.version == 1


def test_an_update_whose_overflow_warning_is_an_error_changes_nothing():
    """The same where numpy warns (its default) and the warnings filters make that an error."""
    import warnings

    a, b, link = _overflowing_link()
    opt = pg.optimizers.SGD(lr=1.0).setup(link)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(RuntimeWarning):
            opt.update()
    assert opt.t == 0 and float(a.data[0]) == 1.0 and float(b.data[0]) == np.float32(3e38)


@pytest.mark.parametrize("mode", ["warn", "raise"])
def test_tied_parameters_get_both_steps_whatever_the_error_state(mode):
    """Two parameters over one array (a decoder's weight the transposed view of the encoder's):
    each step is written in turn, as on the common path. Where writing could raise, the checked
    new values were copied in, and the second copy undid the first step (a lost update)."""
    buf = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    enc, dec = pg.Variable(buf), pg.Variable(buf.T)
    opt = pg.optimizers.SGD(lr=1.0).setup(pg.Link(enc=enc, dec=dec))
    enc.grad, dec.grad = np.full((2, 2), 0.5, np.float32), np.full((2, 2), 0.25, np.float32)
    with np.errstate(over=mode):
        opt.update()
    np.testing.assert_array_equal(buf, np.array([[1.0, 2.0], [3.0, 4.0]], np.float32) - 0.75)


def test_an_update_writes_in_place_where_arithmetic_does_not_raise():
    """The common case keeps the in-place write (no copy of the new values): an overflow gives inf
    with numpy's warning, the parameter's array is the same object, its version moves."""
    a, b, link = _overflowing_link()
    before = b.data
    with np.errstate(over="ignore"):
        pg.optimizers.SGD(lr=1.0).setup(link).update()
    assert b.data is before and np.isinf(b.data[0]) and b.version == 1 and float(a.data[0]) == 0.5


def test_a_failing_post_hook_says_the_step_was_applied():
    """A post hook runs after the step: its error keeps its type and gets a note that every
    parameter was stepped and t advanced, so a retry is not taken for a fresh attempt."""
    a = pg.Variable(np.array([1.0]))
    opt = pg.optimizers.SGD(lr=0.5).setup(pg.Link(a=a))
    a.grad = np.array([1.0])

    def fail(optimizer):
        raise RuntimeError("post hook failed")

    opt.add_hook(fail, timing="post")
    with pytest.raises(RuntimeError, match="post hook failed") as info:
        opt.update()
    assert any("step was applied" in n and "t is now 1" in n for n in info.value.__notes__)
    assert opt.t == 1 and float(a.data[0]) == 0.5


def _failing_chunk(block):
    raise OSError("chunk read failed")


def test_addgrads_that_fails_to_move_a_gradient_adds_none():
    """addgrads moved each gradient inside its add loop: a dask gradient whose chunk failed raised
    after /a's gradient was added, and the retry counted it twice. Now nothing is added, and the
    error names /b."""
    da = pytest.importorskip("dask.array")
    a, b = pg.Variable(np.zeros(3)), pg.Variable(np.zeros(3))
    a.grad, b.grad = np.ones(3), np.ones(3)
    mine = pg.Link(a=a, b=b)
    qa, qb = pg.Variable(da.zeros(3, chunks=3)), pg.Variable(da.zeros(3, chunks=3))
    qa.grad, qb.grad = da.ones(3, chunks=3), da.ones(3, chunks=3).map_blocks(_failing_chunk, dtype=float)
    theirs = pg.Link(a=qa, b=qb)
    with pytest.raises(OSError, match=r"addgrads: .*/b.*no gradient was added.*chunk read failed"):
        mine.addgrads(theirs)
    np.testing.assert_array_equal(a.grad, np.ones(3))
    np.testing.assert_array_equal(b.grad, np.ones(3))
    qb.grad = da.ones(3, chunks=3)
    mine.addgrads(theirs)
    np.testing.assert_array_equal(a.grad, 2 * np.ones(3))
    np.testing.assert_array_equal(b.grad, 2 * np.ones(3))


def test_addgrads_of_a_dtype_the_backend_lacks_adds_none():
    """float16 gradients into a model on array_api_strict (no float16): /l1's were added before
    /l2's failed to move; now none is, and the error names /l2/W."""
    import polygrad.links as L

    mine = pg.Chain(l1=L.Linear(2, 3), l2=L.Linear(2, 3)).to_backend("array_api_strict")
    theirs = pg.Chain(l1=L.Linear(2, 3), l2=L.Linear(2, 3, dtype="float16"))
    for p in theirs.params():
        p.grad = np.ones(p.shape, p.data.dtype)
    with pytest.raises(TypeError, match="/l2/W"):
        mine.addgrads(theirs)
    assert all(p.grad is None for p in mine.params())


def _backend_of(a):
    return type(a).__module__.split(".")[0]


def test_to_backend_that_fails_at_a_later_child_moves_nothing():
    """Chain.to_backend moved /l1 (parameters and gradient) before /l2's float16 weight failed to
    go to array_api_strict: the model was left on two backends. Now nothing moves, the error names
    /l2/W, and the chain still creates parameters on its old backend."""
    import polygrad.links as L

    m = pg.Chain(l1=L.Linear(2, 3), l2=L.Linear(2, 3, dtype="float16"))
    m.l1.W.grad = np.ones((3, 2), np.float32)
    with pytest.raises(TypeError, match=r"to_backend\('array_api_strict'\): moving parameter '/l2/W' failed"):
        m.to_backend("array_api_strict")
    assert {_backend_of(p.data) for p in m.params()} == {"numpy"} and _backend_of(m.l1.W.grad) == "numpy"
    assert m._backend_name != "array_api_strict" and m.l1._backend_name != "array_api_strict"


def test_to_backend_whose_chunk_fails_to_compute_moves_nothing():
    da = pytest.importorskip("dask.array")
    a = pg.Variable(da.ones(3, chunks=3))
    b = pg.Variable(da.ones(3, chunks=3).map_blocks(_failing_chunk, dtype=float))
    link = pg.Link(a=a, b=b)
    with pytest.raises(OSError, match="moving parameter '/b' failed"):
        link.to_backend("numpy")
    assert (_backend_of(a.data), _backend_of(b.data)) == ("dask", "dask")


def test_to_backend_to_a_backend_not_usable_here_marks_nothing():
    """A refused move still set the links' backend for parameters not initialized yet."""
    import polygrad.links as L

    usable = {n for n, s in pg.backends().items() if s.usable}
    if "cupy" in usable:
        pytest.skip("cupy is usable here")
    m = pg.Chain(l1=L.Linear(None, 3), l2=L.Linear(2, 3))
    with pytest.raises(RuntimeError):
        m.to_backend("cupy")
    assert "cupy" not in (m._backend_name, m.l1._backend_name, m.l2._backend_name)


def test_variable_to_cpu_whose_gradient_fails_to_move_moves_nothing():
    """Variable.to_cpu moved .data before .grad: a failing gradient chunk left them on two backends."""
    da = pytest.importorskip("dask.array")
    x = pg.Variable(da.ones(3, chunks=3))
    x.grad = da.ones(3, chunks=3).map_blocks(_failing_chunk, dtype=float)
    with pytest.raises(OSError):
        x.to_cpu()
    assert (_backend_of(x.data), _backend_of(x.grad)) == ("dask", "dask")


def test_an_update_one_rule_failing_half_way_on_numpy_keeps_t_and_says_what_stays():
    """A rule in Chainer's update_one form writes numpy parameters in place, one by one: one that
    fails at /b cannot undo /a. t had counted the update all the same, and nothing said /a was
    stepped. t stays now, /b's count too, and a note says which parameters stay updated."""

    class InPlace(pg.optimizers.GradientMethod):
        def update_one(self, param, state):
            param.data -= param.grad
            if param is b:
                raise RuntimeError("rule failed at b")

    a, b, c = (pg.Variable(np.array([1.0])) for _ in range(3))
    opt = InPlace().setup(pg.Link(a=a, b=b, c=c))
    for p in (a, b, c):
        p.grad = np.array([1.0])
    with pytest.raises(RuntimeError, match="rule failed at b") as info:
        opt.update()
    notes = " ".join(info.value.__notes__)
    assert "half applied" in notes and "['/a']" in notes and "'/b' failed" in notes and "t stays 0" in notes
    assert opt.t == 0 and [opt._state_of(p)["t"] for p in (a, b)] == [1, 0] and opt._state_of(c) is None
    assert [float(p.data[0]) for p in (a, b, c)] == [0.0, 0.0, 1.0] and (a.version, c.version) == (1, 0)


class _SetItemRule(pg.optimizers.GradientMethod):
    """A rule in Chainer's update_one form that writes its arrays with ``x[...] = v`` (dask does it
    by changing the Array object), failing at the parameter named in ``fail``."""

    state_names = ("m",)

    def __init__(self, fail=None):
        self.fail = fail

    def update_one(self, param, state):
        xp = param.xp
        state["m"][...] = state["m"] + param.grad
        param.data[...] = param.data - 0.5 * xp.sign(state["m"])
        if param.name == self.fail:
            raise RuntimeError(f"rule failed at {param.name}")


@pytest.mark.parametrize("where", ["other chunk", "own chunk", "rule"])
def test_an_update_one_rule_writing_dask_arrays_with_setitem_is_undone(where):
    """dask's x[...] = v changes the Array object: the undo put the same (changed) object back, so
    /a kept its step (or the failing chunk's graph, and every later read raised) while t and the
    gradients were put back and nothing said so; a retry stepped /a twice. Now the parameters and
    their states are as they were, and the retry steps once."""
    da = pytest.importorskip("dask.array")
    from polygrad import optimizer_hooks as H

    a = pg.Variable(da.from_array(np.array([1.0, -1.0]), chunks=1), name="a")
    b = pg.Variable(da.from_array(np.array([2.0, -2.0]), chunks=1), name="b")
    opt = _SetItemRule(fail="b" if where == "rule" else None).setup(pg.Link(a=a, b=b))
    opt.add_hook(H.WeightDecay(1.0))
    good = da.from_array(np.array([1.0, 1.0]), chunks=1)
    bad = good.map_blocks(_failing_chunk, dtype=float)
    a.grad, b.grad = (bad if where == "own chunk" else good), (bad if where == "other chunk" else good)
    grads = (a.grad, b.grad)
    with pytest.raises((OSError, RuntimeError)) as info:
        opt.update()
    assert not getattr(info.value, "__notes__", ())
    assert opt.t == 0 and (a.grad, b.grad) == grads and (a.version, b.version) == (0, 0)
    np.testing.assert_array_equal(np.asarray(a.data), [1.0, -1.0])
    np.testing.assert_array_equal(np.asarray(b.data), [2.0, -2.0])
    assert [np.asarray(opt._state_of(p)["m"]).tolist() for p in (a, b)] == [[0.0, 0.0]] * 2
    opt.fail = None
    a.grad, b.grad = good, good
    opt.update()  # once: grad + 1.0 * data; m is that; each steps by 0.5 * sign(m)
    assert opt.t == 1 and [opt._state_of(p)["t"] for p in (a, b)] == [1, 1]
    np.testing.assert_array_equal(np.asarray(a.data), [0.5, -1.0])
    np.testing.assert_array_equal(np.asarray(b.data), [1.5, -1.5])
    np.testing.assert_array_equal(np.asarray(opt._state_of(a)["m"]), [2.0, 0.0])


def test_equal_dask_parameters_and_states_stay_apart_after_an_update():
    """dask's persist gives one Array object for inputs of the same key (equal values computed the same
    way): after an update two parameters of equal values, and their states, were ONE object, so a rule's
    x[...] = v stepped both (each got the other's step), and a failure in /a's rule changed /b's state
    too, which the undo did not put back."""
    da = pytest.importorskip("dask.array")
    a = pg.Variable(da.from_array(np.array([1.0, -1.0]), chunks=1), name="a")
    b = pg.Variable(da.from_array(np.array([1.0, -1.0]), chunks=1), name="b")
    opt = _SetItemRule().setup(pg.Link(a=a, b=b))
    for _ in range(2):
        a.grad = b.grad = da.from_array(np.array([1.0, 1.0]), chunks=1)
        opt.update()
    sa, sb = opt._state_of(a), opt._state_of(b)
    assert a.data is not b.data and sa["m"] is not sb["m"]
    assert np.asarray(a.data).tolist() == np.asarray(b.data).tolist() == [0.0, -2.0]
    opt.fail = "a"
    a.grad = b.grad = da.from_array(np.array([1.0, 1.0]), chunks=1)
    with pytest.raises(RuntimeError, match="rule failed at a"):
        opt.update()
    for p, s in ((a, sa), (b, sb)):
        assert np.asarray(p.data).tolist() == [0.0, -2.0] and np.asarray(s["m"]).tolist() == [2.0, 2.0]


def test_an_update_one_rule_that_only_rebinds_on_numpy_is_undone():
    """docs/training.md's SignSGD rebinds param.data and its state, so its old arrays are intact: a
    failure at /b left /a stepped (its state too, t put back to 0) with a note that it was "written in
    place", and /b kept WeightDecay's gradient, so a retry applied it twice. Now /a is as it was, every
    gradient is put back, and the retry steps once."""
    from polygrad import optimizer_hooks as H

    class SignSGD(pg.optimizers.GradientMethod):
        state_names = ("steps",)
        fail = True

        def update_one(self, param, state):
            if param.name == "b" and self.fail:
                raise RuntimeError("rule failed at b")
            state["steps"] = state["steps"] + 1
            param.data = param.data - 0.5 * param.xp.sign(param.grad)

    a, b = pg.Variable(np.array([1.0, -1.0]), name="a"), pg.Variable(np.array([2.0, -2.0]), name="b")
    a0 = a.data
    opt = SignSGD().setup(pg.Link(a=a, b=b))
    opt.add_hook(H.WeightDecay(1.0))
    a.grad, b.grad = np.array([1.0, 1.0]), np.array([-3.0, 3.0])
    with pytest.raises(RuntimeError, match="rule failed at b") as info:
        opt.update()
    notes = " ".join(info.value.__notes__)
    assert "half applied" not in notes and "'/a'" not in notes and "'/b' failed" in notes
    assert a.data is a0 and a.version == 0 and opt.t == 0
    assert opt._state_of(a)["t"] == 0 and opt._state_of(a)["steps"].tolist() == [0.0, 0.0]
    assert a.grad.tolist() == [1.0, 1.0] and b.grad.tolist() == [-3.0, 3.0]
    opt.fail = False
    opt.update()  # WeightDecay once: b's gradient is -3 + 2 = -1 and 3 - 2 = 1
    assert a.data.tolist() == [0.5, -1.0] and b.data.tolist() == [2.5, -2.5] and opt.t == 1


def test_an_update_one_rule_half_applied_on_numpy_names_the_arrays_it_kept():
    """A rule that rebinds /a's data but adds into its state in place cannot be undone for /a: the
    note said update_one "wrote ... in place" without saying what; it names the kept arrays now,
    /c (rebinding only, earlier) is put back, and /a counts its update."""

    class Rule(pg.optimizers.GradientMethod):
        state_names = ("m",)

        def update_one(self, param, state):
            if param.name == "b":
                raise RuntimeError("rule failed at b")
            if param.name == "a":
                state["m"] += param.grad
            else:
                state["m"] = state["m"] + param.grad
            param.data = param.data - param.grad

    a, c, b = (pg.Variable(np.array([1.0]), name=n) for n in "acb")
    opt = Rule().setup(pg.Chain(l1=pg.Link(a=a, c=c), l2=pg.Link(b=b)))
    for p in (a, b, c):
        p.grad = np.array([1.0])
    with pytest.raises(RuntimeError, match="rule failed at b") as info:
        opt.update()
    notes = " ".join(info.value.__notes__)
    assert "half applied" in notes and "['/l1/a']" in notes and "'/l1/a' kept its state 'm'" in notes
    assert "'/l2/b' failed" in notes and "'/l1/c'" not in notes and "t stays 0" in notes
    assert [float(p.data[0]) for p in (a, c, b)] == [0.0, 1.0, 1.0] and (a.version, c.version) == (1, 0)
    assert [opt._state_of(p)["t"] for p in (a, c, b)] == [1, 0, 0]

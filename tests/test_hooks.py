"""Function hooks: phases, registration scopes, TimerHook, PrintHook, and thread-local modes."""

from __future__ import annotations

import io
import threading
import time

import numpy as np
import pytest

import polygrad as pg
import polygrad.functions as F
import polygrad.links as L
from polygrad.function_hooks import PrintHook, TimerHook
from conftest import arr


class Recorder(pg.FunctionHook):
    """Logs (phase, label, in_data, out_grad) for every call."""

    name = "recorder"

    def __init__(self):
        self.log = []

    def forward_preprocess(self, function, in_data):
        self.log.append(("forward_preprocess", function, in_data, None))

    def forward_postprocess(self, function, in_data):
        self.log.append(("forward_postprocess", function, in_data, None))

    def backward_preprocess(self, function, in_data, out_grad):
        self.log.append(("backward_preprocess", function, in_data, out_grad))

    def backward_postprocess(self, function, in_data, out_grad):
        self.log.append(("backward_postprocess", function, in_data, out_grad))

    def phases(self):
        return [(p, f.label) for p, f, _, _ in self.log]


class Square(pg.Function):
    def forward(self, inputs):
        return inputs[0] * inputs[0],

    def backward(self, inputs, grad_outputs):
        return 2 * inputs[0] * grad_outputs[0],


# ---------------------------------------------------------------------------
# phases
# ---------------------------------------------------------------------------
def test_builtin_ops_call_hook_phases_in_order(xp):
    """With `with hook:`, built-in ops call forward pre/post, then backward pre/post in reverse order."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    with Recorder() as hook:
        y = pg.exp(x)
        z = pg.sum(y)
        z.backward()
    assert hook.phases() == [
        ("forward_preprocess", "exp"), ("forward_postprocess", "exp"),
        ("forward_preprocess", "sum"), ("forward_postprocess", "sum"),
        ("backward_preprocess", "sum"), ("backward_postprocess", "sum"),
        ("backward_preprocess", "exp"), ("backward_postprocess", "exp"),
    ]


def test_user_function_calls_hook_phases_in_order(xp):
    """A user Function calls the same four phases, with itself as the function argument."""
    x = pg.Variable(arr(xp, [3.0]))
    f = Square()
    with Recorder() as hook:
        y = f(x)
        y.backward()
    assert [p for p, _ in hook.phases()] == [
        "forward_preprocess", "forward_postprocess", "backward_preprocess", "backward_postprocess",
    ]
    assert all(fn is f for _, fn, _, _ in hook.log)


def test_forward_hooks_get_input_arrays(xp):
    """forward_preprocess receives the input data arrays of the function."""
    a = arr(xp, [1.0, 2.0])
    b = arr(xp, [3.0, 4.0])
    with Recorder() as hook:
        pg.Variable(a) * pg.Variable(b)
    _, fn, in_data, _ = hook.log[0]
    assert fn.label == "multiply"
    assert len(in_data) == 2
    assert in_data[0] is a and in_data[1] is b


def test_backward_hooks_get_one_in_data_entry_per_input_and_out_grad(xp):
    """backward hooks receive in_data with one entry per input and out_grad with one per output."""
    a = pg.Variable(arr(xp, [1.0, 2.0]))
    b = pg.Variable(arr(xp, [3.0, 4.0]))
    y = a * b
    with Recorder() as hook:
        pg.sum(y * 2.0).backward()
    backward_calls = [e for e in hook.log if e[0].startswith("backward")]
    assert len(backward_calls) == 6
    for phase, fn, in_data, out_grad in backward_calls:
        n_in = {"multiply": 2, "sum": 1}[fn.label]
        assert len(in_data) == n_in, (fn.label, in_data)
        assert len(out_grad) == 1


def test_backward_hook_in_data_are_the_inputs(xp):
    """For multiply (which keeps its inputs), backward in_data are the two input arrays."""
    a_data = arr(xp, [1.0, 2.0])
    b_data = arr(xp, [3.0, 4.0])
    y = pg.Variable(a_data) * pg.Variable(b_data)
    with Recorder() as hook:
        y.backward(arr(xp, [1.0, 1.0]))
    _, fn, in_data, out_grad = hook.log[0]
    assert fn.label == "multiply"
    assert in_data[0] is a_data and in_data[1] is b_data
    np.testing.assert_allclose(np.asarray(pg.to_backend(out_grad[0], "numpy")), [1.0, 1.0])


def test_user_function_backward_hook_in_data_and_out_grad(xp):
    """A user Function's backward hooks get its kept inputs and the output gradients."""
    x_data = arr(xp, [3.0])
    y = Square()(pg.Variable(x_data))
    with Recorder() as hook:
        y.backward()
    _, _, in_data, out_grad = hook.log[0]
    assert in_data == (x_data,) or (len(in_data) == 1 and in_data[0] is x_data)
    assert len(out_grad) == 1


def test_forward_hooks_called_without_graph(xp):
    """Forward hooks run even when no graph is built (inputs not requiring grad)."""
    x = pg.Variable(arr(xp, [1.0]), requires_grad=False)
    with Recorder() as hook:
        pg.exp(x)
    assert hook.phases() == [("forward_preprocess", "exp"), ("forward_postprocess", "exp")]


def test_hook_not_called_after_with_block(xp):
    """After the with block, the hook is no longer called."""
    x = pg.Variable(arr(xp, [1.0]))
    hook = Recorder()
    with hook:
        pg.exp(x)
    n = len(hook.log)
    pg.exp(x).backward()
    assert len(hook.log) == n


def test_two_global_hooks_both_called(xp):
    """Two hooks with different names registered with `with` are both called."""
    x = pg.Variable(arr(xp, [1.0]))
    h1 = Recorder()
    h2 = Recorder()
    h2.name = "recorder2"
    with h1, h2:
        pg.exp(x)
    assert len(h1.log) == 2 and len(h2.log) == 2


def test_same_hook_name_twice_is_key_error(xp):
    """Registering two hooks of the same name in one context raises KeyError."""
    with Recorder():
        with pytest.raises(KeyError):
            with Recorder():
                pass


def test_global_hook_is_thread_local(xp):
    """A hook registered with `with` in one thread is not called for functions in another thread."""
    hook = Recorder()
    entered, done = threading.Event(), threading.Event()

    def worker():
        with hook:
            entered.set()
            done.wait(5)

    t = threading.Thread(target=worker)
    t.start()
    assert entered.wait(5)
    try:
        pg.exp(pg.Variable(arr(xp, [1.0]))).backward()
        assert hook.log == []
        assert pg.core.active_hooks() == ()
    finally:
        done.set()
        t.join()


def test_global_hook_registered_here_not_seen_in_new_thread(xp):
    """Functions run in another thread do not call a hook registered in this thread."""
    hook = Recorder()
    with hook:
        t = threading.Thread(target=lambda: pg.exp(pg.Variable(pg.asarray([1.0], backend="numpy"))))
        t.start()
        t.join()
    assert hook.log == []


def test_leaving_a_hook_in_a_thread_that_did_not_enter_it_raises():
    """__exit__ in a thread where the hook is not active did nothing, called deleted() all the
    same, and left the hook firing in the thread that entered it, silently."""
    import pytest

    class Counting(Recorder):
        deleted_calls = 0

        def deleted(self, function=None):
            self.deleted_calls += 1

    hook = Counting()
    hook.__enter__()
    errors = []
    t = threading.Thread(target=lambda: errors.append(pytest.raises(RuntimeError, hook.__exit__, None, None, None)))
    t.start()
    t.join()
    assert errors and "not active here" in str(errors[0].value)
    assert hook.deleted_calls == 0
    hook.__exit__(None, None, None)
    assert hook.deleted_calls == 1
    pg.exp(pg.Variable(pg.asarray([1.0], backend="numpy")))
    assert hook.log == []


def test_same_hook_instance_in_two_threads_at_once():
    """One hook object used as `with hook:` in two threads at the same time enters and exits cleanly in both."""
    hook = Recorder()
    a_in, b_in, b_may_exit = threading.Event(), threading.Event(), threading.Event()
    errors = []

    def a():
        try:
            with hook:
                a_in.set()
                b_in.wait(5)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(("a", exc))

    def b():
        try:
            a_in.wait(5)
            with hook:
                b_in.set()
                b_may_exit.wait(5)
        except Exception as exc:  # noqa: BLE001
            errors.append(("b", exc))

    ta, tb = threading.Thread(target=a), threading.Thread(target=b)
    ta.start()
    tb.start()
    ta.join(10)
    b_may_exit.set()
    tb.join(10)
    assert errors == []


def test_add_hook_on_one_function_only(xp):
    """add_hook registers on one function: other functions in the graph do not call it."""
    hook = Recorder()
    f = Square()
    f.add_hook(hook)
    x = pg.Variable(arr(xp, [2.0]))
    y = pg.exp(f(x))
    y.backward()
    assert {fn for _, fn, _, _ in hook.log} == {f}
    assert len(hook.log) == 4


def test_added_and_deleted_callbacks(xp):
    """A hook's added/deleted callbacks run on with-block entry/exit and add_hook/delete_hook."""
    events = []

    class Watch(pg.FunctionHook):
        name = "watch"

        def added(self, function=None):
            events.append(("added", function))

        def deleted(self, function=None):
            events.append(("deleted", function))

    w = Watch()
    with w:
        pass
    f = Square()
    f.add_hook(w)
    f.delete_hook("watch")
    assert events == [("added", None), ("deleted", None), ("added", f), ("deleted", f)]


# ---------------------------------------------------------------------------
# TimerHook
# ---------------------------------------------------------------------------
def test_timer_hook_call_history(xp):
    """TimerHook.call_history holds (function, seconds) for every forward and backward step."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    with TimerHook() as m:
        y = pg.sum(pg.exp(x))
        y.backward()
    labels = [f.label for f, _ in m.call_history]
    assert labels == ["exp", "sum", "sum", "exp"]
    assert all(isinstance(t, float) and t >= 0.0 for _, t in m.call_history)


def test_hook_records_name_the_function_and_keep_no_node(xp):
    """TimerHook and MemoryHook stored the node itself in call_history (and with it every array it
    saved). A record's function is its name now, a str as in Chainer's call_history, that also has
    the node's label and backend; one object per kind of function, not one per step."""
    from polygrad.function_hooks import MemoryHook

    x = pg.Variable(arr(xp, [1.0, 2.0]))
    with TimerHook() as m, MemoryHook() as mem:
        y = pg.sum(pg.exp(x))
        y.backward()
    backend = y.creator.backend
    for history in (m.call_history, mem.call_history):
        names = [r[0] for r in history]
        assert names == ["exp", "sum", "sum", "exp"] and all(isinstance(f, str) for f in names)
        assert [f.label for f in names] == names and all(f.backend is backend for f in names)
        assert names[0] is names[3] and not any(isinstance(f, pg.core.node.Node) for f in names)


def test_timer_hook_total_time_is_sum(xp):
    """total_time() is the sum of the call_history times."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    with TimerHook() as m:
        pg.sum(x * x).backward()
    assert m.total_time() == pytest.approx(sum(t for _, t in m.call_history))
    assert m.total_time() > 0.0


def test_timer_hook_summary(xp):
    """summary() groups by label with calls, total, mean and share."""
    x = pg.Variable(arr(xp, [1.0, 2.0]))
    with TimerHook() as m:
        y = pg.exp(x)
        z = pg.exp(y)
        pg.sum(z).backward()
    s = m.summary()
    assert s["exp"]["calls"] == 4
    assert s["sum"]["calls"] == 2
    assert s["exp"]["mean"] == pytest.approx(s["exp"]["total"] / 4)
    assert sum(r["share"] for r in s.values()) == pytest.approx(1.0)


def test_timer_hook_print_report(xp):
    """print_report writes a table with a header and one row per function label."""
    x = pg.Variable(arr(xp, [1.0]))
    with TimerHook() as m:
        pg.exp(x).backward()
    buf = io.StringIO()
    m.print_report(file=buf)
    lines = buf.getvalue().splitlines()
    assert lines[0].split() == ["function", "calls", "total", "mean", "self", "share"]
    assert len(lines) == 2
    assert lines[1].split()[0] == "exp" and lines[1].split()[1] == "2"


def test_timer_hook_measures_user_functions(xp):
    """TimerHook records user Functions by their label."""
    with TimerHook() as m:
        Square()(pg.Variable(arr(xp, [1.0]))).backward()
    assert [f.label for f, _ in m.call_history] == ["Square", "Square"]


def test_timer_hook_seed_example_model3_not_measured():
    """The Chainer seed: model1 and model2 run inside the with block are measured; model3 after it is not."""

    class Model(pg.Chain):
        def __call__(self, x1):
            return F.exp(self.l(x1))

    model1 = Model(l=L.Linear(10, 10))
    model2 = Model(l=L.Linear(10, 10))
    x = pg.Variable(np.zeros((1, 10), "f"))
    out = io.StringIO()
    with pg.function_hooks.TimerHook() as m:
        _ = model1(x)
        y = model2(x)
        print("Total time : " + str(m.total_time()), file=out)
    n = len(m.call_history)
    model3 = Model(l=L.Linear(10, 10))
    z = model3(y)
    assert out.getvalue().startswith("Total time : ")
    assert len(m.call_history) == n
    labels = [f.label for f, _ in m.call_history]
    assert labels.count("exp") == 2
    assert z.shape == (1, 10)
    assert m.total_time() > 0.0


# ---------------------------------------------------------------------------
# PrintHook
# ---------------------------------------------------------------------------
def test_print_hook_writes_forward_and_backward_to_file(xp):
    """PrintHook(file=...) prints each function's label, input shapes and, in backward, output gradients."""
    buf = io.StringIO()
    x = pg.Variable(arr(xp, [[1.0, 2.0, 3.0]]))
    with PrintHook(file=buf):
        y = pg.exp(x)
        z = pg.sum(y)
        z.backward()
    text = buf.getvalue()
    assert text.count("exp") == 2
    assert text.count("sum") == 2
    assert "(1, 3)" in text
    assert "output gradient" in text


def test_print_hook_seed_example_linear_sum():
    """The Chainer seed: Linear, F.sum and backward under PrintHook print forward and backward steps."""
    buf = io.StringIO()
    l = L.Linear(10, 10)
    x = pg.Variable(np.zeros((1, 10), "f"))
    with PrintHook(file=buf):
        y = l(x)
        z = F.sum(y)
        z.backward()
    text = buf.getvalue()
    assert "linear" in text
    assert text.count("sum") >= 2
    assert "output gradient" in text
    assert l.W.grad is not None


def test_print_hook_end_argument(xp):
    """PrintHook(end=...) ends every printed record with that text."""
    buf = io.StringIO()
    with PrintHook(end="<END>\n", file=buf):
        pg.exp(pg.Variable(arr(xp, [1.0])))
    text = buf.getvalue()
    assert text.endswith("<END>\n")
    assert text.count("<END>") == 1


def test_print_hook_flush_argument(xp):
    """PrintHook flushes the file after each record when flush=True, and never when flush=False."""

    class CountingIO(io.StringIO):
        flushes = 0

        def flush(self):
            self.flushes += 1
            super().flush()

    on, off = CountingIO(), CountingIO()
    with PrintHook(file=on, flush=True):
        pg.exp(pg.Variable(arr(xp, [1.0])))
    with PrintHook(file=off, flush=False):
        pg.exp(pg.Variable(arr(xp, [1.0])))
    assert on.flushes >= 1
    assert off.flushes == 0


def test_print_hook_defaults_to_stdout(xp, capsys):
    """Without file=, PrintHook prints to stdout."""
    with PrintHook():
        pg.exp(pg.Variable(arr(xp, [1.0])))
    assert "exp" in capsys.readouterr().out


def test_print_hook_does_not_print_values():
    """PrintHook prints shapes and dtypes, not the values."""
    buf = io.StringIO()
    with PrintHook(file=buf):
        pg.exp(pg.Variable(np.array([123.456])))
    assert "123.456" not in buf.getvalue()
    assert "float64" in buf.getvalue()


# ---------------------------------------------------------------------------
# modes are thread-local
# ---------------------------------------------------------------------------
def test_no_backprop_mode_is_thread_local():
    """no_backprop_mode in one thread does not stop another thread from building graphs."""
    entered, done = threading.Event(), threading.Event()

    def worker():
        with pg.no_backprop_mode():
            entered.set()
            done.wait(5)

    t = threading.Thread(target=worker)
    t.start()
    assert entered.wait(5)
    try:
        assert pg.is_backprop_enabled()
        y = pg.exp(pg.Variable(np.array([1.0])))
        assert y.creator is not None
    finally:
        done.set()
        t.join()


def test_no_backprop_mode_here_not_seen_in_new_thread():
    """A thread started inside no_backprop_mode builds graphs normally."""
    seen = []
    with pg.no_backprop_mode():
        t = threading.Thread(target=lambda: seen.append(pg.exp(pg.Variable(np.array([1.0]))).creator is not None))
        t.start()
        t.join()
    assert seen == [True]


def test_threads_compute_gradients_independently():
    """Two threads doing forward/backward concurrently each get their own correct gradients."""
    results = {}

    def worker(k):
        x = pg.Variable(np.array([float(k)]))
        for _ in range(50):
            x.cleargrad()
            (x * x * k).backward()
        results[k] = float(x.grad[0])

    threads = [threading.Thread(target=worker, args=(k,)) for k in (1, 2, 3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {1: 2.0, 2: 8.0, 3: 18.0}


def test_memory_hook_reports_growth_per_function_with_tracemalloc():
    """MemoryHook records each function's memory growth from the backend (numpy: tracemalloc)."""
    import tracemalloc

    from polygrad.function_hooks import MemoryHook

    x = pg.Variable(np.ones(250_000))
    tracemalloc.start()
    try:
        with MemoryHook() as hook:
            y = pg.exp(x)
            pg.sum(y).backward()
    finally:
        tracemalloc.stop()
    forward = [d for f, phase, d in hook.call_history if f.label == "exp" and phase == "forward"]
    assert forward and forward[0] >= 250_000 * 8
    buf = io.StringIO()
    hook.print_report(file=buf)
    assert "exp" in buf.getvalue() and "MiB" in buf.getvalue()


def test_memory_hook_says_not_reported_without_stats():
    """Without memory statistics from the backend the report says 'not reported'."""
    from polygrad.function_hooks import MemoryHook

    x = pg.Variable(np.ones(3))
    with MemoryHook() as hook:
        pg.exp(x)
    buf = io.StringIO()
    hook.print_report(file=buf)
    assert "not reported" in buf.getvalue()


def test_a_hook_on_an_intermediate_fires_after_the_variable_is_gone():
    """The engine found an intermediate's hooks through the weak reference to it: after the usual
    h = h * h rebinding, a clipping hook on the old h did nothing (x.grad 200, 400 where PyTorch
    gives 10, 10)."""
    x = pg.Variable(np.array([1.0, 2.0]))
    h = x * 10
    h.register_hook(lambda g: np.clip(g, -1, 1))
    h = h * h
    pg.sum(h).backward()
    np.testing.assert_array_equal(x.grad, [10.0, 10.0])
    x2 = pg.Variable(np.array([1.0, 2.0]))
    h2 = x2 * 10
    handle = h2.register_hook(lambda g: g * 0)
    handle.remove()
    h2 = h2 * h2
    g, = pg.grad(pg.sum(h2), [x2])
    np.testing.assert_array_equal(g.data, [200.0, 400.0])  # a removed hook stays removed


def test_a_hook_that_writes_gradients_during_an_accumulating_backward_does_not_hang():
    """Under create_graph the sum old .grad + new runs as an op, under the accumulation lock; a
    FunctionHook that cleared another gradient there waited for that lock forever."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import numpy as np, polygrad as pg
        x = pg.Variable(np.array([1.0, 2.0]))
        other = pg.Variable(np.array([0.0]))
        pg.sum(x * x).backward(create_graph=True)
        class H(pg.FunctionHook):
            name = "h"
            def forward_postprocess(self, function, in_data):
                other.zerograd()
                other.grad = np.ones(1)
        with H():
            pg.sum(x * x).backward(create_graph=True)
        print(x.grad.tolist())
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[4.0, 8.0]"


class _Sleep(pg.Function):
    """Identity whose forward sleeps 50 ms."""

    def forward(self, inputs):
        time.sleep(0.05)
        return inputs[0] * 1.0,

    def backward(self, inputs, grad_outputs):
        return grad_outputs[0],


class _SleepInBackward(pg.Function):
    """Identity whose backward applies _Sleep to the gradient (a step nested in the backward step
    under create_graph)."""

    def forward(self, inputs):
        return inputs[0] * 1.0,

    def backward(self, inputs, grad_outputs):
        return _Sleep()(grad_outputs[0]),


def test_timer_hook_counts_a_nested_step_once():
    """Under create_graph a backward step runs the forward steps of its rule: total_time added
    both, so a 50 ms step nested in another counted 100 ms (Chainer adds only outermost steps),
    and the shares of summary() were shares of that double count."""
    x = pg.Variable(np.array([1.0, 2.0]))
    y = pg.sum(_SleepInBackward()(x))
    start = time.perf_counter()
    with TimerHook() as m:
        gx, = pg.grad([y], [x], create_graph=True)
    wall = time.perf_counter() - start
    assert [f.label for f, _ in m.call_history][-2:] == ["_Sleep", "_SleepInBackward"]
    assert 0.05 <= m.total_time() <= wall
    s = m.summary()
    assert s["_SleepInBackward"]["total"] >= 0.05 > s["_SleepInBackward"]["self"]
    assert s["_Sleep"]["self"] == s["_Sleep"]["total"] >= 0.05
    assert sum(r["share"] for r in s.values()) == pytest.approx(1.0)
    buf = io.StringIO()
    m.print_report(file=buf)
    assert buf.getvalue().splitlines()[0].split() == ["function", "calls", "total", "mean", "self", "share"]


class _Fail(pg.Function):
    def forward(self, inputs):
        raise ValueError("fails")


def test_timer_hook_after_a_step_that_raised():
    """A function that raises never ends its step: the steps after it are still timed and
    totalled, and a failed step nested in another is dropped when the outer one ends."""
    class Swallow(pg.Function):
        def forward(self, inputs):
            return inputs[0] * 1.0,

        def backward(self, inputs, grad_outputs):
            try:
                _Fail()(grad_outputs[0])
            except ValueError:
                pass
            return _Sleep()(grad_outputs[0]),

    x = pg.Variable(np.array([1.0, 2.0]))
    with TimerHook() as m:
        with pytest.raises(ValueError):
            _Fail()(x)
        y = pg.sum(Swallow()(x))
        gx, = pg.grad([y], [x], create_graph=True)
    labels = [f.label for f, _ in m.call_history]
    assert labels[-2:] == ["_Sleep", "Swallow"]
    assert 0.05 <= m.total_time() < 0.1


def test_memory_hook_counts_a_nested_step_once():
    """total_used_bytes added the growth of a forward step run inside a create_graph backward
    step twice (once in each step)."""
    import tracemalloc

    from polygrad.function_hooks import MemoryHook

    x = pg.Variable(np.ones(250_000))
    y = pg.sum(pg.exp(x))
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        with MemoryHook() as hook:
            gx, = pg.grad([y], [x], create_graph=True)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert 250_000 * 8 <= hook.total_used_bytes() <= grown + 100_000


def test_timer_hook_totals_follow_call_history():
    """The nesting was kept in a list beside call_history: after call_history.clear() (or a
    filtered copy assigned to it) total_time() dropped outermost steps and summary() raised
    IndexError. Each record knows whether it ran inside another step now."""
    x = pg.Variable(np.array([1.0, 2.0]))
    y = pg.sum(_SleepInBackward()(x))
    with TimerHook() as m:
        pg.sum(pg.exp(x))
        m.call_history.clear()
        gx, = pg.grad([y], [x], create_graph=True)
        pg.sum(pg.exp(x))
    assert 0.05 <= m.total_time() == pytest.approx(sum(t for r in m.call_history for t in (r[1],) if not r.nested))
    m.call_history = [r for r in m.call_history if r[0].label != "exp"]
    assert m.total_time() >= 0.05 and "_Sleep" in m.summary()
    m.call_history.append((m.call_history[0][0], 0.5))  # a plain tuple counts as an outermost step
    assert m.total_time() >= 0.55


def test_a_step_that_raised_keeps_nothing_alive():
    """A step that raised at the outermost level stayed open and gathered every later record
    (with its node and the arrays the node kept): 200 MiB after 200 forwards. It is dropped
    when the next step begins, its frame gone."""
    import gc
    import weakref

    x = pg.Variable(np.ones(1000))
    with TimerHook() as m:
        with pytest.raises(ValueError):
            _Fail()(x)
        y = pg.exp(x)
        node = weakref.ref(y.creator)
        pg.exp(x)
        del y
    m.call_history.clear()
    gc.collect()
    assert node() is None



def test_timer_hook_with_a_wrapped_preprocess_keeps_nested_steps():
    """A hook whose preprocess went through a wrapper (a decorator) took the wrapper's frame for
    the step's, so the steps nested in it were dropped as failed: 5 of 8 records."""
    import functools

    def wrapped(method):
        @functools.wraps(method)
        def inner(*args, **kwargs):
            return method(*args, **kwargs)
        return inner

    class Wrapped(TimerHook):
        forward_preprocess = wrapped(TimerHook.forward_preprocess)
        backward_preprocess = wrapped(TimerHook.backward_preprocess)

    x = pg.Variable(np.array([1.0, 2.0]))
    y = pg.sum(pg.sin(x) * x)
    counts = []
    for hook in (TimerHook(), Wrapped()):
        with hook:
            pg.grad([y], [x], create_graph=True)
        counts.append([f.label for f, _ in hook.call_history])
    assert counts[0] == counts[1] and len(counts[0]) > 4


# ---------------------------------------------------------------------------
# Variable hooks: after the variable leaves its graph; hooks that write into their argument
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("cut", ["detach_", "unchain", "unchain_backward", "set_creator"])
@pytest.mark.parametrize("hooked_before", [True, False])
def test_a_hook_registered_after_the_variable_left_its_graph_does_not_fire_there(cut, hooked_before):
    """After h.detach_() (or unchain...), a hook registered on h fired in y's graph when one had
    been registered before the cut (both were kept in one list the old node held): x.grad
    [800, 1600] for [8, 16]. Hooks registered before the cut still fire there, as PyTorch's.
    After detach_ (PyTorch's), retain_grad no longer writes the old graph's gradient into h."""
    x = pg.Variable(np.array([1.0, 2.0]))
    h = x * 2
    fired = []
    if hooked_before:
        h.register_hook(lambda g: fired.append("before"))
    y = pg.sum(h * h)
    (h.set_creator(None) if cut == "set_creator" else getattr(h, cut)())
    if cut == "detach_":  # h no longer requires grad: a hook is refused (PyTorch's)
        with pytest.raises(RuntimeError, match="does not require grad"):
            h.register_hook(lambda g: fired.append("after") or g * 100)
    else:
        h.register_hook(lambda g: fired.append("after") or g * 100)
    y.backward(retain_grad=True)
    if cut == "unchain_backward":  # (it cut the graph behind h too)
        assert x.grad is None
    else:
        np.testing.assert_array_equal(x.grad, [8.0, 16.0])
    assert fired == (["before"] if hooked_before else [])
    if cut == "detach_":
        assert h.grad is None  # retain_grad wrote the old graph's gradient into the detached h


def test_hooks_registered_before_unchain_fire_in_the_graphs_built_on_it():
    """Truncated backprop: after h.unchain_backward() h is a root that still requires grad, and a
    hook registered on it before fires when the next graph built on it runs backward (as it did
    before the cut was made stricter); one removed with its handle fires nowhere."""
    x = pg.Variable(np.array([1.0, 2.0]))
    h = x * 2
    fired = []
    h.register_hook(lambda g: fired.append("kept"))
    gone = h.register_hook(lambda g: fired.append("removed"))
    y = pg.sum(h * h)
    h.unchain_backward()
    gone.remove()
    pg.sum(h * 3).backward()
    assert fired == ["kept"]
    np.testing.assert_array_equal(h.grad, [3.0, 3.0])
    y.backward()  # the old graph: the hook registered before, not the removed one
    assert fired == ["kept", "kept"]


def test_a_hook_that_writes_into_its_gradient_changes_that_gradient_only():
    """`g *= 10` in a hook on x corrupted w's gradient (they shared add's array) and the caller's
    seed; a broadcast gradient raised numpy's read-only error. Each hook gets an array of its own,
    and a hook returning None after writing into it has changed its variable's gradient."""
    def times_ten(g):
        g *= 10

    x, w = pg.Variable(np.zeros(2)), pg.Variable(np.zeros(2))
    x.register_hook(times_ten)
    seed = np.ones(2)
    (x + w).backward(seed)
    np.testing.assert_array_equal(x.grad, [10.0, 10.0])
    np.testing.assert_array_equal(w.grad, [1.0, 1.0])
    np.testing.assert_array_equal(seed, [1.0, 1.0])
    x2 = pg.Variable(np.zeros(2))
    x2.register_hook(times_ten)
    pg.sum(x2).backward()  # the gradient reaching x2 is a read-only broadcast of the seed
    np.testing.assert_array_equal(x2.grad, [10.0, 10.0])
    kept = []
    x3 = pg.Variable(np.zeros(2))
    x3.register_hook(kept.append)
    x3.register_hook(times_ten)
    (x3 * 1.0).backward(np.ones(2))
    np.testing.assert_array_equal(kept[0], [1.0, 1.0])  # what the first hook kept is not written into
    np.testing.assert_array_equal(x3.grad, [10.0, 10.0])


def test_a_hook_on_a_variable_without_gradient_is_refused():
    """It was accepted and never ran (PyTorch raises)."""
    c = pg.Variable(np.ones(2), requires_grad=False)
    with pytest.raises(RuntimeError, match="does not require grad: it gets no gradient"):
        c.register_hook(lambda g: g)


def test_after_unchain_the_old_graph_neither_retains_into_the_variable_nor_runs_later_hooks():
    """unchain left the old node naming h: the old graph's retain_grad overwrote the .grad the
    new one gave h ([4, 8] over [3, 3]); with every earlier hook removed, a hook registered
    after unchain fired in the old graph."""
    x = pg.Variable(np.array([1.0, 2.0]))
    h = x * 2
    handle = h.register_hook(lambda g: None)
    handle.remove()
    loss1 = pg.sum(h * h)
    h.unchain()
    fired = []
    h.register_hook(lambda g: fired.append("later"))
    pg.sum(h * 3).backward()
    assert fired == ["later"]
    loss1.backward(retain_grad=True)
    np.testing.assert_array_equal(h.grad, [3.0, 3.0])
    assert fired == ["later"]


class _CountBackward(pg.FunctionHook):
    name = "count"

    def __init__(self):
        self.forward, self.backward, self.labels, self.kinds = 0, 0, [], set()

    def forward_preprocess(self, function, in_data):
        self.forward += 1

    def backward_preprocess(self, function, in_data, out_grad):
        self.backward += 1
        self.labels.append(function.label)
        self.kinds.update(type(g).__name__ for g in out_grad if g is not None)


def test_a_hook_active_and_on_the_node_runs_once_per_step():
    """As Chainer merges them by name (the node's replacing the active one), a hook registered
    both with `with hook:` and on the node runs once per step: it ran twice (3 backward steps
    counted for 2)."""
    x = pg.Variable(np.array([1.0, 2.0]))
    c = _CountBackward()
    y = F.sum(pg.exp(x))
    y.creator.add_hook(c)
    with c:
        y.backward()
    assert c.backward == 2
    other = _CountBackward()  # same name on the node: it replaces the active one there
    y = F.sum(pg.exp(x))
    y.creator.add_hook(other)
    with c:
        y.backward()
    assert (c.backward, other.backward) == (3, 1)


def test_a_hook_active_and_on_a_user_function_runs_once_per_forward():
    c = _CountBackward()
    f = _Identity()
    f.add_hook(c)
    with c:
        f(pg.Variable(np.array([1.0])))
    assert c.forward == 1


class _Identity(pg.Function):
    def forward(self, inputs):
        return inputs[0] * 1,

    def backward(self, inputs, grad_outputs):
        return grad_outputs


def test_pg_grad_calls_no_hooks_around_a_node_whose_backward_does_not_run():
    """pg.grad(y, [h]) only captures h's gradient at h's creator (exp): its backward does not run,
    and hooks reported a step that never happened."""
    x = pg.Variable(np.array([1.0, 2.0]))
    h = pg.exp(x)
    y = F.sum(h * h)
    with _CountBackward() as c:
        pg.grad(y, [h])
    assert c.labels == ["sum", "multiply"]


@pytest.mark.filterwarnings("ignore:polygrad. backward.create_graph=True. made:UserWarning")  # (the cycle's)
def test_hooks_see_output_gradients_as_arrays_with_create_graph_too():
    """Chainer passes out_grad as arrays; with create_graph hooks got Variables."""
    x = pg.Variable(np.array([1.0, 2.0]))
    with _CountBackward() as c:
        F.sum(pg.exp(x)).backward(create_graph=True)
    assert c.kinds == {"ndarray"}


def test_a_variable_hook_that_returns_its_new_gradient_works_on_dask():
    """On dask (arrays not written in place) a hook changes a gradient by returning it, on leaf and intermediate."""
    da = pytest.importorskip("dask.array")
    x = pg.Variable(da.from_array(np.array([1.0, 2.0]), chunks=1))
    h = x * 1.0
    h.register_hook(lambda g: g * 10)
    x.register_hook(lambda g: g + 1)
    pg.sum(h * 2.0).backward()
    np.testing.assert_array_equal(pg.compute(x.grad)[0], [21.0, 21.0])


def test_a_hook_handle_removes_its_own_registration_only():
    """handle.remove() used list.remove, which compares with ==: it removed another hook equal to this one
    (two empty dataclass recorders), or none where the comparison raised (a hook holding an array, swallowed
    as ValueError): a removed zeroing hook still zeroed the gradient. The same function registered twice is
    two registrations, each removed by its own handle (PyTorch's)."""
    import dataclasses

    @dataclasses.dataclass
    class Record:
        calls: int = 0

        def __call__(self, g):
            self.calls += 1

    @dataclasses.dataclass
    class Mask:
        keep: np.ndarray

        def __call__(self, g):
            return g * self.keep

    x = pg.Variable(np.array([1.0, 2.0]))
    r1, r2 = Record(), Record()
    x.register_hook(r1)
    x.register_hook(r2).remove()
    pg.sum(x * 3.0).backward()
    assert (r1.calls, r2.calls) == (1, 0)
    x.cleargrad()
    x.register_hook(Mask(np.zeros(2))).remove()
    pg.sum(x * 3.0).backward()
    np.testing.assert_array_equal(x.grad, [3.0, 3.0])
    seen = []
    y = pg.Variable(np.array([1.0]))
    twice = seen.append
    first = y.register_hook(twice)
    y.register_hook(lambda g: seen.append("other"))
    y.register_hook(twice)
    first.remove()
    pg.sum(y).backward()
    assert [s if isinstance(s, str) else "twice" for s in seen] == ["other", "twice"]


def test_a_hook_on_the_variable_backward_starts_from_is_applied_once_per_pass_with_retain_grad():
    """y.backward(retain_grad=True) kept y's hooked gradient in y.grad, and the next y.backward() seeds with
    y.grad (Chainer's initial error): the hook scaled it a second time, x.grad [330, 330] for [60, 60]."""
    x = pg.Variable(np.array([1.0, 1.0]))
    y = pg.sum(x * 3.0)
    y.register_hook(lambda g: g * 10.0)
    y.backward(retain_grad=True, retain_graph=True)
    assert float(y.grad) == 1.0
    np.testing.assert_array_equal(x.grad, [30.0, 30.0])
    y.backward(retain_graph=True)
    np.testing.assert_array_equal(x.grad, [60.0, 60.0])


def test_with_create_graph_the_copy_a_variable_hook_sees_is_one_asarray_step():
    """The copy handed to a variable hook under create_graph was a recorded `g * 1`, a multiply step the user
    never called, while every other copy backward hands out is an asarray step (docs/hooks-and-profiling.md)."""
    import collections

    class Seen(pg.FunctionHook):
        def __init__(self):
            self.labels = collections.Counter()

        def forward_postprocess(self, function, in_data):
            self.labels[function.label] += 1

    def steps(hooked):
        x = pg.Variable(np.array([1.0, 2.0]))
        h = x * 2.0
        if hooked:
            h.register_hook(lambda g: None)
        with Seen() as seen:
            (gx,) = pg.grad([pg.sum(h * h)], [x], create_graph=True)
        np.testing.assert_array_equal(gx.data, [8.0, 16.0])
        return seen.labels

    assert steps(True) - steps(False) == collections.Counter({"asarray": 1})


def test_an_error_of_a_hook_registered_twice_names_the_function():
    """The second registration of one function is wrapped to be an object of its own; the errors named it
    functools.partial(<function ...>)."""
    calls = []

    def halve(g):  # (the first registration passes, the second, wrapped, fails)
        calls.append(g)
        return g[:1] if len(calls) == 2 else None

    x = pg.Variable(np.array([1.0, 2.0]))
    x.register_hook(halve)
    x.register_hook(halve)
    with pytest.raises(ValueError, match=r"the hook test_an_error_of_a_hook_registered_twice_names_the_function"
                                         r"\.<locals>\.halve registered on"):
        pg.sum(x * 2.0).backward()

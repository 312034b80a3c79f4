"""Adversarial: threads. Backward passes running in several threads into one shared
leaf accumulate exactly (finding S5); modes and hooks stay per thread; a compiled
function whose fused kernel runs numexpr gives each thread its own exact results;
compiled functions with updates lose none across threads."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import polygrad as pg


def _run_in_threads(n, work):
    start = threading.Barrier(n)
    errors = []

    def run():
        start.wait()
        try:
            work()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_concurrent_backward_into_one_leaf_loses_no_update():
    """4 threads x 50 backward passes into one large shared leaf: every contribution lands."""
    w = pg.Variable(np.zeros(100_000))

    def work():
        for _ in range(50):
            pg.sum(w * 1.0).backward()

    _run_in_threads(4, work)
    assert float(w.grad[0]) == 200.0 and float(w.grad[-1]) == 200.0


def test_concurrent_backward_through_a_shared_embedding_is_exact():
    """Threads training on one shared table accumulate every row's gradient."""
    table = pg.Variable(np.zeros((10, 4)))
    rows = np.array([1, 3, 3, 7])

    def work():
        for _ in range(25):
            pg.sum(table[rows] * 1.0).backward()

    _run_in_threads(4, work)
    np.testing.assert_allclose(table.grad[3], np.full(4, 200.0))
    np.testing.assert_allclose(table.grad[1], np.full(4, 100.0))
    np.testing.assert_allclose(table.grad[0], np.zeros(4))


def test_no_backprop_mode_in_one_thread_does_not_leak_into_another():
    """A thread inside no_backprop_mode does not stop graphs in another thread."""
    x = pg.Variable(np.ones(2))
    inside = threading.Event()
    done = threading.Event()
    seen = {}

    def quiet():
        with pg.no_backprop_mode():
            inside.set()
            done.wait(5)

    def loud():
        inside.wait(5)
        seen["creator"] = (x * 2).creator is not None
        done.set()

    t1, t2 = threading.Thread(target=quiet), threading.Thread(target=loud)
    t1.start(), t2.start()
    t1.join(), t2.join()
    assert seen["creator"]


def _compiled_sin_chain(steps):
    from polygrad import symbolic as T

    x = T.vector("x")
    y = x
    for _ in range(steps):
        y = y + pg.sin(y) * 0.01
    cost = pg.sum(y)
    return pg.function([x], [cost, T.grad(cost, x)])


def _concurrent_calls_agree(fn, inputs):
    """Each of 4 threads calls ``fn`` on its own input 30 times: every result equals the one
    computed alone, before the threads started."""
    want = [fn(v) for v in inputs]
    got = {}

    def work():
        k = threading.get_ident()
        for i in range(30):
            j = (i + len(got)) % len(inputs)
            got.setdefault(k, []).append((j, fn(inputs[j])))

    _run_in_threads(4, work)
    for results in got.values():
        for j, (c, g) in results:
            np.testing.assert_array_equal(c, want[j][0])
            np.testing.assert_array_equal(g, want[j][1])


def test_concurrent_calls_of_a_fused_function_on_tiny_arrays_agree():
    """A compiled function whose fused kernel runs numexpr on tiny arrays (numexpr's lock held
    for the kernel) gives every thread its own exact results."""
    pytest.importorskip("numexpr")
    fn = _compiled_sin_chain(12)
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(10) for _ in range(4)]
    _concurrent_calls_agree(fn, inputs)
    assert "fused" in fn.program_source()


def test_concurrent_calls_of_a_fused_function_on_large_arrays_agree(monkeypatch):
    """The same on arrays numexpr evaluates with its thread pool (the lock taken per step:
    two concurrent evaluations would share its state)."""
    pytest.importorskip("numexpr")
    from polygrad_numpy import fuse

    monkeypatch.setattr(fuse, "MIN_BYTES", 0)
    fn = _compiled_sin_chain(3)
    rng = np.random.default_rng(1)
    inputs = [rng.standard_normal(60_000) for _ in range(4)]
    _concurrent_calls_agree(fn, inputs)
    assert "fused" in fn.program_source()


def test_concurrent_calls_of_a_stateless_function_evict_each_program_once(monkeypatch):
    """Two threads calling a function without state (so without container locks) on new shapes
    past its program cache's size each evict a program: never the same one twice (a KeyError, or
    'dictionary changed size during iteration', from the cache's bookkeeping)."""
    import time

    import polygrad.compile.compiled as compiled
    from polygrad import symbolic as T

    class SlowFirstKey(dict):
        """A cache whose least recently used key is read a while before it is evicted."""

        def __iter__(self):
            keys = list(super().__iter__())
            time.sleep(0.05)  # (the other thread reads the same key meanwhile, unless the cache is locked)
            yield from keys

    monkeypatch.setattr(compiled, "MAX_PROGRAMS", 1)
    x = T.vector("x")
    fn = pg.function([x], x * 2 + 1)
    fn._programs = SlowFirstKey()
    fn(np.ones(1))
    sizes = iter([2, 3])

    def work():
        n = next(sizes)
        np.testing.assert_array_equal(fn(np.ones(n)), np.full(n, 3.0))

    _run_in_threads(2, work)
    assert len(fn._programs) == 1


def test_concurrent_calls_with_updates_lose_no_update_and_read_whole_calls():
    """Compiled functions updating shared variables from several threads: every update lands,
    and a function reading them sees the state between two calls, never half of one (each call
    reads, runs and writes under the locks of the containers it touches; without them two
    threads read the same old value and one increment was lost)."""
    import sys

    from polygrad import symbolic as T

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often: both races showed in every run without the locks
    try:
        a, b = pg.shared(np.zeros(2), name="a"), pg.shared(np.zeros(2), name="b")
        step = pg.function([], [], updates={a: a + 1, b: b + 1})
        x = T.vector("x")
        gap = pg.function([x], pg.sum(a - b) + x)
        gaps = []

        def work():
            for _ in range(300):
                step()
                gaps.append(float(gap(np.zeros(1))[0]))

        _run_in_threads(4, work)
    finally:
        sys.setswitchinterval(old)
    np.testing.assert_array_equal(a.get_value(), [1200.0, 1200.0])
    np.testing.assert_array_equal(b.get_value(), [1200.0, 1200.0])
    assert set(gaps) == {0.0}


def _draws_in_threads(n, draw):
    out = [None] * n
    start = threading.Barrier(n)

    def run(i):
        start.wait()
        out[i] = draw()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def test_threads_drawing_first_after_seed_share_one_stream():
    """The backend's generator was made lazily without a lock: threads drawing first after
    pg.seed each made their own from the same seed and drew the same dropout mask (75-93 of
    100 trials with 4 threads)."""
    import sys

    import polygrad.functions as F

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for trial in range(30):
            pg.seed(trial)
            masks = _draws_in_threads(4, lambda: np.asarray(F.dropout(pg.Variable(np.ones(64)), 0.5).array != 0).tobytes())
            assert len(set(masks)) == 4, f"trial {trial}: two threads drew the same mask"
    finally:
        sys.setswitchinterval(old)


def test_threads_sharing_the_dask_generator_draw_different_numbers():
    """dask's generator spawns the chunks' seeds without a lock: two threads drawing from the
    backend's one generator got identical numbers (about 40 of 100 trials)."""
    import sys

    pytest.importorskip("dask.array")
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for trial in range(30):
            pg.seed(trial)
            with pg.using_backend("dask"):
                gen = pg.get_backend().rng()
            draws = _draws_in_threads(4, lambda: tuple(np.asarray(gen.normal((4,), dtype=np.float64).compute())))
            assert len(set(draws)) == 4, f"trial {trial}: two threads drew the same numbers"
    finally:
        sys.setswitchinterval(old)


def test_set_value_during_calls_with_updates_is_not_lost():
    """set_value from another thread while a function with updates runs in a loop: the call in
    flight read the old value and wrote old + 1 over the set value (20 of 20 trials)."""
    import time

    for _ in range(5):
        w = pg.shared(np.zeros(100_000), name="w")
        step = pg.function([], [], updates={w: w + 1})
        stop = threading.Event()

        def loop():
            while not stop.is_set():
                step()

        t = threading.Thread(target=loop)
        t.start()
        time.sleep(0.01)
        w.set_value(np.full(100_000, -1e9))
        time.sleep(0.01)
        stop.set()
        t.join()
        assert w.get_value()[0] < -1e8, "the set value was overwritten by a call in flight"


def test_zerograd_racing_a_backward_is_never_undone():
    """zerograd wrote .grad without the accumulation lock: a backward that had read the old
    gradient wrote old + new after it, and the old gradient came back (about 1% of races)."""
    import sys

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        outcomes = set()
        for _ in range(1000):
            x = pg.Variable(np.ones(50_000))
            x.grad = np.full(50_000, 1000.0)
            y = pg.sum(x * 2.0)
            start = threading.Barrier(2)
            t1 = threading.Thread(target=lambda: (start.wait(), y.backward()))
            t2 = threading.Thread(target=lambda: (start.wait(), x.zerograd()))
            t1.start(), t2.start()
            t1.join(), t2.join()
            outcomes.add(float(x.grad[0]))
        assert outcomes <= {0.0, 2.0}, outcomes
    finally:
        sys.setswitchinterval(old)

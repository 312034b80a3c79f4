"""Adversarial: threads and process-wide state. Two threads that first save (or view) one
Variable at once share its in-place version counter; one Function instance is applied once,
also from two threads; building symbolic graphs leaves the warning filters as they were; the
type cache of the dispatch is never left with a stale or a missing entry by a registration."""

from __future__ import annotations

import threading
import time
import warnings

import numpy as np
import pytest

import polygrad as pg
import polygrad._registry as R
from polygrad import symbolic as T
from polygrad.compile import symbolic as S
from polygrad.core import dispatch, node, primitive, variable


def _in_threads(*works):
    """Run each of ``works`` in a thread of its own, started together; re-raise what one raised."""
    start = threading.Barrier(len(works))
    errors = []

    def run(work):
        start.wait()
        try:
            work()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(w,)) for w in works]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


@pytest.fixture
def slow_counters(monkeypatch):
    """Making a version counter takes a while: two threads that both find none make theirs at
    the same time (the window a check-then-set without a lock leaves, made wide)."""

    class SlowVersion(node.Version):
        def __init__(self):
            time.sleep(0.05)

    for module in (node, primitive, variable):
        monkeypatch.setattr(module, "Version", SlowVersion, raising=False)


# ---------------------------------------------------------------------------
# in-place version counters
# ---------------------------------------------------------------------------
def test_two_threads_saving_one_fresh_variable_both_see_a_later_inplace_write(slow_counters):
    """Two threads' first graphs over one Variable both refuse backward after it is written in place
    (each made a counter of its own: the graph holding the one not kept missed the write)."""
    x = pg.Variable(np.array([0.5, 1.0]), requires_grad=False)
    w = pg.Variable(np.array([2.0, 3.0]))
    ys = [None, None]

    def work(i):
        def run():
            ys[i] = pg.sum(x * w)  # mul saves x for w's gradient
        return run

    _in_threads(work(0), work(1))
    x += 1.0
    for y in ys:
        with pytest.raises(RuntimeError, match="modified by an in-place operation"):
            y.backward()


def test_views_taken_in_two_threads_follow_their_base(slow_counters):
    """Views of one intermediate taken in two threads at once both follow its in-place write."""
    b = pg.Variable(np.arange(4.0))
    h = b * 1.0
    views = [None, None]

    def work(i):
        def run():
            views[i] = h[0:2]
        return run

    _in_threads(work(0), work(1))
    h *= 2.0
    for v in views:
        b.cleargrad()
        pg.sum(v).backward(retain_graph=True)
        np.testing.assert_array_equal(b.grad, [2.0, 2.0, 0.0, 0.0])


def test_a_counter_made_on_first_use_is_one_for_two_threads(slow_counters):
    """A Variable without a counter yet (made on first use) gets one, the same in both threads."""
    x = pg.Variable(np.ones(2))
    x._vb = None  # as a Variable made without one has
    boxes = []
    _in_threads(lambda: boxes.append(x._vbox), lambda: boxes.append(x._vbox))
    assert boxes[0] is boxes[1] is x._vb


# ---------------------------------------------------------------------------
# a Function instance is applied once
# ---------------------------------------------------------------------------
def test_a_function_instance_applied_by_two_threads_at_once_is_refused_once():
    """While one thread applies a Function instance, applying it in another raises (both ran, and
    the node mixed their applications: a wrong or missing gradient)."""
    started, release = threading.Event(), threading.Event()
    calls = []

    class Square(pg.Function):
        def forward(self, inputs):
            calls.append(1)
            if len(calls) == 1:
                started.set()
                release.wait(10)
            (x,) = inputs
            return (x * x,)

        def backward(self, inputs, grad_outputs):
            return (2 * inputs[0] * grad_outputs[0],)

    f = Square()
    x, z = pg.Variable(np.array([3.0])), pg.Variable(np.array([5.0]))
    out = []
    t = threading.Thread(target=lambda: out.append(f(x)))
    t.start()
    try:
        assert started.wait(10)
        with pytest.raises(RuntimeError, match="Square instance is being applied"):
            f(z)
    finally:
        release.set()
        t.join()
    pg.sum(out[0]).backward()
    np.testing.assert_array_equal(x.grad, [6.0])
    with pytest.raises(RuntimeError, match="has already been applied"):
        f(z)


def test_a_function_whose_forward_failed_may_be_applied_again():
    """The claim of an application that failed is given back: the instance is applied afresh."""
    fail = [True]

    class Double(pg.Function):
        def forward(self, inputs):
            if fail.pop():
                raise ValueError("once")
            return (inputs[0] * 2,)

    f = Double()
    with pytest.raises(ValueError, match="once"):
        f(pg.Variable(np.ones(1)))
    fail.append(False)
    np.testing.assert_array_equal(f(pg.Variable(np.ones(1))).array, [2.0])


# ---------------------------------------------------------------------------
# warning filters
# ---------------------------------------------------------------------------
def test_building_symbolic_graphs_in_two_threads_leaves_the_warning_filters(monkeypatch):
    """Two threads inferring symbolic shapes at once leave warnings.filters as they found them
    (interleaved catch_warnings blocks installed "ignore RuntimeWarning" for the whole process)."""
    stand_ins = S._stand_ins
    delays = iter([0.2, 0.2])

    def slow(*args, **kwargs):
        time.sleep(next(delays, 0.0))  # inside the block; the second thread enters 0.1 s after the first
        return stand_ins(*args, **kwargs)

    monkeypatch.setattr(S, "_stand_ins", slow)
    x, y = T.vector("x"), T.vector("y")
    before = list(warnings.filters)

    def second():
        time.sleep(0.1)
        pg.log(y)

    _in_threads(lambda: pg.log(x), second)
    assert warnings.filters == before


def test_dask_reduction_of_unknown_sizes_changes_no_warning_filter(monkeypatch):
    """The dask backend's reductions over blocks of unknown size read a sample's dtype without
    touching the process-wide warning filters, and warn nothing (var with correction 1)."""
    da = pytest.importorskip("dask.array")
    namespace = pytest.importorskip("polygrad_dask.namespace")
    block_op = namespace._block_op
    seen = []

    def watching(*args, **kwargs):
        seen.append(list(warnings.filters))
        return block_op(*args, **kwargs)

    monkeypatch.setattr(namespace, "_block_op", watching)
    x = da.from_array(np.arange(6.0), chunks=3)
    x = x[x > 0.5]  # sizes not known
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        before = list(warnings.filters)
        got = namespace.var(x, correction=1)
        assert got.dtype == np.float64
        np.testing.assert_allclose(got.compute(), np.var(np.arange(1.0, 6.0), ddof=1))
    assert seen and all(f == before for f in seen)


# ---------------------------------------------------------------------------
# the type cache
# ---------------------------------------------------------------------------
def test_a_lookup_resolved_before_a_registration_is_not_cached(monkeypatch):
    """A type resolved while a plugin was registered (the cache cleared meanwhile) is not written
    into the fresh cache: it may be the old registry's backend, and would stay there."""
    real = dispatch._resolver

    def registering_meanwhile(t):
        backend = real(t)
        dispatch.clear_cache()  # what pg.register_plugin does, in another thread
        return backend

    dispatch.clear_cache()
    monkeypatch.setattr(dispatch, "_resolver", registering_meanwhile)
    try:
        assert dispatch.backend_of_type(np.ndarray) is pg.get_backend("numpy")
        assert np.ndarray not in dispatch._type_cache
    finally:
        monkeypatch.undo()
        dispatch.clear_cache()


def test_clearing_the_type_cache_never_leaves_a_pinned_type_out(monkeypatch):
    """The symbolic arrays' pinned backend stays in the cache at every step of a clear (a lookup
    meanwhile asked the plugin registry, which knows no symbolic array)."""
    pinned = list(dispatch._pinned)
    assert pinned
    steps = []

    class Watched(dict):
        def clear(self):
            super().clear()
            steps.append(all(t in self for t in pinned))

        def __delitem__(self, key):
            super().__delitem__(key)
            steps.append(all(t in self for t in pinned))

    cache = Watched(dispatch._type_cache)
    cache[np.ndarray] = pg.get_backend("numpy")
    monkeypatch.setattr(dispatch, "_type_cache", cache)
    dispatch.clear_cache()
    assert steps and all(steps)
    assert np.ndarray not in cache and all(t in cache for t in pinned)


def test_two_backend_objects_of_one_name_are_one_backend(monkeypatch):
    """Operands whose types resolve to two Backend objects of one name (the registry rebuilt
    between the lookups of an op's operands) are of one backend, not "'numpy' and 'numpy'"."""

    class Sub(np.ndarray):
        pass

    numpy = pg.get_backend("numpy")
    rebuilt = R.Backend(numpy.info, numpy._hook, numpy.plugin, numpy.origin)
    monkeypatch.setitem(dispatch._type_cache, Sub, rebuilt)
    a = np.arange(3.0).view(Sub)
    x = pg.Variable(np.ones(3))
    np.testing.assert_array_equal((x * a).array, [0.0, 1.0, 2.0])
    assert pg.get_array_namespace(np.ones(2), a) is numpy.xp

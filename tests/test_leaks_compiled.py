"""Adversarial: what compiled functions and shared variables keep alive. Each is freed by
reference counting when its last reference goes, with the cyclic collector off (a cycle lives
until a full collection, which large arrays do not hasten)."""

from __future__ import annotations

import copy
import pickle
import weakref

import numpy as np
import pytest

import polygrad as pg
from polygrad import In
from polygrad import symbolic as T


def test_a_dropped_compiled_function_frees_its_default_values(no_cyclic_gc):
    """fn.value and fn.container held fn back: a dropped function kept its In(value=) defaults."""
    x, d = T.vector("x"), T.vector("d")
    fn = pg.function([x, In(d, value=np.ones(3))], pg.sum(x * d))
    fn(np.ones(3))
    default = weakref.ref(fn.value[d])
    fn.container[d]  # (the lookups have been used)
    del fn
    assert default() is None


def test_a_program_replaced_by_a_retrace_is_freed(no_cyclic_gc):
    """A generated program kept itself in its own globals: every retrace left one behind."""
    x = T.vector("x")
    fn = pg.function([x], pg.mean(x[x > 0]))
    fn(np.array([1.0, -1.0, 2.0]))
    first = weakref.ref(next(iter(fn._programs.values())).fn)
    fn(np.array([1.0, 2.0, 3.0]))  # another count of positives: traced again
    assert first() is None


def test_a_dropped_shared_variable_frees_its_value(no_cyclic_gc):
    """A shared variable and its container held each other: a dropped one kept its value."""
    s = pg.shared(np.ones(3), name="s")
    value = weakref.ref(s.get_value(borrow=True))
    del s
    assert value() is None


def test_a_graph_that_outlives_its_shared_variable_still_reads_and_updates_it():
    """The container holds its shared variable weakly: a graph built on the variable (which
    holds its symbol) still compiles with the value and the default update after the variable
    is dropped."""
    x = T.vector("x")
    s = pg.shared(np.zeros(2), name="s")
    s.default_update = s + 1
    y = x * s
    del s
    fn = pg.function([x], y)
    np.testing.assert_array_equal(fn(np.ones(2)), [0.0, 0.0])
    np.testing.assert_array_equal(fn(np.ones(2)), [1.0, 1.0])
    np.testing.assert_array_equal(fn["s"], [2.0, 2.0])


def test_a_container_that_outlives_its_shared_variable_and_symbol_still_works():
    """In(v, value=w.container) after w and every graph of it are gone: values still fit w's dtype and shape."""
    w = pg.shared(np.ones(2), name="w")
    box = w.container
    del w
    v = T.vector("v")
    fn = pg.function([In(v, value=box, implicit=False)], v * 2)
    np.testing.assert_array_equal(fn(np.array([3.0, 4.0])), [6.0, 8.0])
    np.testing.assert_array_equal(box.value, [3.0, 4.0])
    with pytest.raises(ValueError, match="shape"):
        box.value = np.ones(3)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(fn))(), [6.0, 8.0])
    assert copy.deepcopy(box).variable.name == "w"


def test_a_shared_variable_copied_or_pickled_keeps_its_default_update():
    s = pg.shared(np.ones(2), name="s")
    s.default_update = s * 2
    for other in (copy.deepcopy(s), pickle.loads(pickle.dumps(s))):
        assert other.container.variable is other
        fn = pg.function([], other * 1)
        fn()
        np.testing.assert_array_equal(other.get_value(), [2.0, 2.0])

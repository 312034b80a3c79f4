"""A node keeps no value that is an exact, cheap image of another it keeps (issue 15): ``-x * x``
keeps ``x`` only and its backward computes ``-x`` again (``Op.remat``, ``core.primitive.Recomputing``).
The gradients are the same in every case a graph can meet: in-place changes and ``.data`` swaps
before and after, a second backward, second order, hooks, copies, both backends."""

from __future__ import annotations

import copy
import gc
import pickle
import weakref

import numpy as np
import pytest

import polygrad as pg
from polygrad import symbolic as T


def _leaf(backend_name: str = "numpy", values=(1.0, 2.0, 3.0)) -> pg.Variable:
    with pg.using_backend(backend_name):
        return pg.Variable(pg.asarray(np.array(values)))


def _np(a) -> np.ndarray:
    return np.asarray(a.compute() if hasattr(a, "compute") else a)


@pytest.mark.parametrize("backend_name", ["numpy", "dask"])
@pytest.mark.parametrize("form", ["-x * x", "x * -x", "-h * h"])
def test_the_negation_is_freed_with_the_users_last_reference(backend_name, form):
    """The product kept ``-x`` until its backward: one full-size array more at the peak of
    ``exp(-x * x)`` than hand-written code, which frees ``-x`` once the product is made."""
    x = _leaf(backend_name)
    h = pg.tanh(x) if form == "-h * h" else x
    n = -h
    ref = weakref.ref(n.data)
    y = pg.sum(n * h if form != "x * -x" else h * n)
    del n
    gc.collect()
    assert ref() is None
    y.backward()
    v = _np(x.data)
    expected = -2 * v if form != "-h * h" else -2 * np.tanh(v) * (1 - np.tanh(v) ** 2)
    np.testing.assert_allclose(_np(x.grad), expected, rtol=1e-12)


def test_a_write_to_x_between_the_negation_and_the_product_is_seen():
    """``-x`` computed again from an ``x`` written in place since would be the new ``-x``: the
    node then keeps ``-x`` as before (its gradient is the one of what was computed)."""
    x = _leaf()
    n = -x
    with pg.no_backprop_mode():
        x += 1.0
    pg.sum(n * x).backward()
    np.testing.assert_array_equal(x.grad, np.array([-1.0, -2.0, -3.0]) - np.array([2.0, 3.0, 4.0]))


def test_a_data_swap_between_the_negation_and_the_product_is_seen():
    x = _leaf()
    n = -x
    x.data = np.array([10.0, 20.0, 30.0])
    pg.sum(n * x).backward()
    np.testing.assert_array_equal(x.grad, np.array([-11.0, -22.0, -33.0]))


def test_a_write_to_the_negation_after_the_product_changes_nothing():
    """Backward no longer reads ``-x``: writing it in place afterwards is no error, and the
    gradient is the one of the product as computed."""
    x = _leaf()
    n = -x
    y = pg.sum(n * x)
    n += 1.0
    y.backward()
    np.testing.assert_array_equal(x.grad, np.array([-2.0, -4.0, -6.0]))


def test_a_write_to_x_after_the_product_is_still_refused():
    x = _leaf()
    h = x * 1.0
    y = pg.sum(-h * h)
    h += 1.0
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.backward()


def test_a_write_to_x_after_the_product_under_the_copy_policy_keeps_the_old_values():
    x = _leaf()
    with pg.inplace_policy("copy"):
        h = x * 1.0
        y = pg.sum(-h * h)
        h += 1.0
        y.backward()
    np.testing.assert_array_equal(x.grad, np.array([-2.0, -4.0, -6.0]))


def test_second_order_and_a_second_backward():
    x = _leaf()
    gx, = pg.grad(pg.sum(-x * x * x), [x], create_graph=True)
    np.testing.assert_array_equal(gx.data, -3 * x.data ** 2)
    g2, = pg.grad(pg.sum(gx), [x])
    np.testing.assert_array_equal(g2.data, -6 * x.data)
    y = pg.sum(-x * x)
    y.backward(retain_graph=True)
    first = x.grad.copy()
    x.cleargrad()
    y.backward()
    np.testing.assert_array_equal(first, x.grad)


def test_hooks_see_the_negation_and_a_copy_of_the_graph_runs():
    seen = []

    class Probe(pg.FunctionHook):
        name = "probe"

        def backward_preprocess(self, function, in_data, grad_outputs):
            if function.label == "multiply":
                seen.append(tuple(np.asarray(a) for a in in_data))

    x = _leaf()
    y = pg.sum(-x * x)
    with Probe():
        y.backward()
    np.testing.assert_array_equal(seen[0][0], -x.data)
    np.testing.assert_array_equal(seen[0][1], x.data)
    x2 = _leaf()
    y2 = copy.deepcopy(pg.sum(-x2 * x2))
    y2.backward()
    assert y2.creator is not None


def test_compiled_gradient_of_a_negation_product():
    x = T.vector("x")
    cost = pg.sum(pg.exp(-x * x))
    f = pg.function([x], pg.grad(cost, [x])[0])
    v = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(f(v), -2 * v * np.exp(-v * v), rtol=1e-12)


def test_a_pickled_graph_with_a_negation_runs_backward():
    """A negation's node notes a weak reference to its input, which does not pickle."""
    x = _leaf()
    n = -x
    y = pg.sum(n * x)
    x2, y2, n2 = pickle.loads(pickle.dumps((x, y, n)))
    y2.backward()
    np.testing.assert_array_equal(x2.grad, -2 * x2.data)
    z = pg.sum(n2 * x2)  # (the copied negation is no source: the product keeps it)
    x2.cleargrad()
    z.backward()
    np.testing.assert_array_equal(x2.grad, -2 * x2.data)


def _nograd_iadd(n):
    with pg.no_backprop_mode():
        n += 10.0


def _nograd_view_write(n):
    with pg.no_backprop_mode():
        v = n[0:2]
        v += 10.0


def _copy_policy_write(n):
    with pg.inplace_policy("copy"), pg.no_backprop_mode():
        n *= 3.0


def _data_swap(n):
    n.data = np.array([5.0, 5.0, 5.0])


@pytest.mark.parametrize("write", [_nograd_iadd, _nograd_view_write, _copy_policy_write, _data_swap])
def test_a_write_to_the_negation_before_the_product_is_seen(write):
    """-x changed (outside recording, or its array replaced) before the product: the product keeps
    the -x it multiplied, as before (computing it again from x gave -2x)."""
    x = _leaf()
    n = -x
    write(n)
    written = np.asarray(n.data).copy()
    pg.sum(n * x).backward()
    np.testing.assert_array_equal(x.grad, written - x.data)


def test_the_negated_input_must_be_the_same_place_of_the_graph():
    """x.detach() shares x's array and counter but is another place of the graph: under
    create_graph, -x computed again from it lost the second derivative through -x."""
    v = np.array([0.3, -0.7, 1.2])
    x = pg.Variable(v.copy())
    gx, = pg.grad(pg.sum(pg.logaddexp(-x, x.detach())), [x], create_graph=True)
    g2, = pg.grad(pg.sum(gx), [x])
    s = 1 / (1 + np.exp(2 * v))
    np.testing.assert_allclose(g2.data, s * (1 - s), rtol=1e-12)
    x = pg.Variable(v.copy())
    w = x.detach()
    w.requires_grad = True
    gx, = pg.grad(pg.sum(-w * x), [x], create_graph=True)
    g2w, = pg.grad(pg.sum(gx), [w])
    np.testing.assert_array_equal(g2w.data, -np.ones(3))

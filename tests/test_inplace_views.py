"""In-place writes through views keep gradients right: the base's graph sees the
write (PyTorch's CopySlices), views follow their base, hooks stay with the value
they were registered on, and pg.inplace_policy("copy") keeps saved arrays
(findings S4, S16, P38, V19; issue 12's copy-on-write)."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import polygrad as pg
from conftest import arr, to_np
from polygrad.core.variable import _unrecorded


def _grad(x):
    return np.asarray([float(v) for v in pg.reshape(pg.asarray(x.grad), (-1,)).data])


def test_write_through_a_slice_reaches_the_base_graph(xp):
    """h = x * 1; v = h[0:2]; v *= 3: x.grad is [3, 3, 1, 1], not [1, 1, 1, 1] (S16)."""
    x = pg.Variable(arr(xp, [1.0, 1.0, 1.0, 1.0]))
    h = x * 1.0
    v = h[0:2]
    v *= 3
    pg.sum(h).backward()
    np.testing.assert_allclose(_grad(x), [3.0, 3.0, 1.0, 1.0])


def test_add_through_a_slice_gives_the_added_variable_its_gradient(xp):
    """v += y through a slice of h: y gets d/dy of the loss through h (was None)."""
    x = pg.Variable(arr(xp, [1.0, 1.0, 1.0, 1.0]))
    y = pg.Variable(arr(xp, [1.0, 1.0]))
    h = x * 1.0
    v = h[0:2]
    v += y
    pg.sum(h * h).backward()
    np.testing.assert_allclose(_grad(x), [4.0, 4.0, 2.0, 2.0])
    np.testing.assert_allclose(_grad(y), [4.0, 4.0])


@pytest.mark.parametrize("make_view, expected", [
    (lambda h: pg.reshape(h, (2, 2)), [3.0, 3.0, 3.0, 3.0]),
    (lambda h: pg.flip(h, axis=0), [3.0, 3.0, 3.0, 3.0]),
    (lambda h: pg.expand_dims(h, axis=0), [3.0, 3.0, 3.0, 3.0]),
    (lambda h: pg.unstack(pg.reshape(h, (2, 2)))[1], [1.0, 1.0, 3.0, 3.0]),
    (lambda h: pg.reshape(h, (2, 2)).T[0, :], [3.0, 1.0, 3.0, 1.0]),
])
def test_write_through_any_view_reaches_the_base_graph(xp, make_view, expected):
    """Reshape, flip, expand_dims, unstack and a view of a view: each write reaches the base."""
    x = pg.Variable(arr(xp, [1.0, 1.0, 1.0, 1.0]))
    h = x * 1.0
    v = make_view(h)
    v *= 3
    pg.sum(h).backward()
    np.testing.assert_allclose(_grad(x), expected)


def test_write_through_real_of_a_complex_base():
    """real(z) += w: z's real part changes, its imaginary part stays; w gets its gradient through z."""
    z0 = pg.Variable(np.array([1.0 + 2.0j, 3.0 - 1.0j]))
    w = pg.Variable(np.array([10.0, 20.0]))
    z = z0 * 1.0
    r = pg.real(z)
    r += w
    np.testing.assert_allclose(z.data, [11.0 + 2.0j, 23.0 - 1.0j])
    pg.sum(pg.imag(z) + pg.real(z) * 2).backward()
    np.testing.assert_allclose(w.grad, [2.0, 2.0])


def test_write_through_real_of_a_real_array_is_seen_by_the_check():
    """r = real(h); r += 100 changes h: backward of a graph that saved h refuses (S4), never a wrong gradient."""
    x = pg.Variable(np.array([1.0, 2.0, 3.0]))
    h = x * 2
    r = pg.real(h)
    y = pg.sum(h * h)
    r += 100.0
    np.testing.assert_allclose(h.data, [102.0, 104.0, 106.0])
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.backward()


def test_indexing_with_an_array_is_a_copy():
    """v = h[idx]; v *= 3 leaves h (as numpy and PyTorch): h's gradient is unchanged, h's savers still work."""
    x = pg.Variable(np.array([1.0, 1.0, 1.0]))
    h = x * 2
    y = pg.sum(h * h)
    v = h[np.array([0, 1])]
    v *= 3
    np.testing.assert_allclose(h.data, [2.0, 2.0, 2.0])
    y.backward()
    np.testing.assert_allclose(x.grad, [8.0, 8.0, 8.0])


@pytest.mark.parametrize("make", [lambda h: +h, lambda h: pg.conj(h), lambda h: pg.astype(h, "float32", copy=False)],
                         ids=["positive", "conj", "astype_other_dtype_copy_false"])
def test_rows_that_made_a_new_array_do_not_follow_their_input(make):
    """+h, conj(h) and astype(h, float32, copy=False) of float64 h are new arrays on numpy; declared views
    for every call, they shared h's counter and followed its later writes (s read [2, 3, 4])."""
    x = pg.Variable(np.array([1.0, 2.0, 3.0]))
    h = x * 1.0
    s = make(h)
    with pg.no_backprop_mode():
        h += 1.0
    np.testing.assert_array_equal(np.asarray(s.data), [1.0, 2.0, 3.0])
    pg.sum(s * 2).backward()
    np.testing.assert_allclose(x.grad, [2.0, 2.0, 2.0])


def test_astype_to_its_own_dtype_without_a_copy_is_the_array_and_follows_it():
    x = pg.Variable(np.array([1.0, 2.0, 3.0]))
    h = x * 1.0
    s = pg.astype(h, "float64", copy=False)
    assert s.data is h.data and s._vbox is h._vbox
    with pg.no_backprop_mode():
        h += 1.0
    np.testing.assert_array_equal(s.data, [2.0, 3.0, 4.0])


def test_a_summed_gradient_is_no_view_of_its_sibling():
    """Under create_graph the gradient of a broadcast input (a sum_to of the upstream gradient) was
    declared a view of it: gx *= 10 changed gb from 6 to 60 (PyTorch's and Chainer's are new arrays)."""
    x, b = pg.Variable(np.ones((2, 3))), pg.Variable(np.ones(3))
    gx, gb = pg.grad([pg.sum((x + b) * 3.0)], [x, b], create_graph=True)
    gx *= 10.0
    np.testing.assert_array_equal(gb.data, [6.0, 6.0, 6.0])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_astype_is_a_copy_that_a_write_into_its_base_leaves(xp, dtype):
    """astype (copy=True, the default) makes a new array; declared a view for every call, it followed
    h's later writes (s read [2, 3, 4]) and took its gradient through h's new history."""
    x = pg.Variable(arr(xp, np.array([1.0, 2.0, 3.0])))
    h = x * 1.0
    s = pg.astype(h, getattr(xp, dtype))
    with pg.no_backprop_mode():
        h += 1.0
    np.testing.assert_array_equal(to_np(s), [1.0, 2.0, 3.0])
    pg.sum(s * 2).backward()
    np.testing.assert_allclose(_grad(x), [2.0, 2.0, 2.0])


@pytest.mark.parametrize("key", ["array", "list", "mask"])
def test_indexing_with_an_array_is_a_copy_that_a_write_into_its_base_leaves(xp, backend_name, key):
    """s = h[idx] (an index array, a list, a raw mask) is a copy, as in numpy and PyTorch: h[2] = 100 and
    h += 1 leave s [3, 1] and its gradient on x[2] and x[0]; it followed h ([101, 2], x.grad [2, 0, 0, ...])."""
    if key == "list" and backend_name != "numpy":
        pytest.skip("the standard has no list keys")
    x = pg.Variable(arr(xp, np.arange(1.0, 7.0)))
    h = x + 0
    keys = {"array": xp.asarray([2, 0]), "list": [2, 0],
            "mask": xp.asarray([True, False, True, False, False, False])}
    s = h[keys[key]]
    h[2] = 100.0
    h += 1
    s2 = pg.sum(s * 2)
    np.testing.assert_allclose(to_np(s), [3.0, 1.0] if key != "mask" else [1.0, 3.0])
    s2.backward()
    np.testing.assert_allclose(_grad(x), [2.0, 0.0, 2.0, 0.0, 0.0, 0.0])


def test_a_copy_by_an_index_array_written_back_into_its_base_keeps_its_own_version(xp):
    """h[idx] = h[idx] * v: the copy h[idx] that multiply saved was not changed, so backward runs
    (numpy, PyTorch); sharing h's counter raised "modified by an in-place operation"."""
    x = pg.Variable(arr(xp, [1.0, 2.0, 3.0]))
    v = pg.Variable(arr(xp, [5.0, 7.0]))
    h = x * 1
    idx = xp.asarray([2, 0])
    s = h[idx]
    h[idx] = s * v
    pg.sum(h).backward()
    np.testing.assert_allclose(_grad(x), [7.0, 1.0, 5.0])
    np.testing.assert_allclose(_grad(v), [3.0, 1.0])


def test_a_view_follows_its_base_written_in_place(xp):
    """v = h[0:2]; h *= 3; then sum(v): v's values and gradient come from the new h."""
    x = pg.Variable(arr(xp, [1.0, 1.0, 1.0, 1.0]))
    h = x * 1.0
    v = h[0:2]
    h *= 3
    np.testing.assert_allclose(np.asarray([float(e) for e in v.data]), [3.0, 3.0])
    pg.sum(v).backward()
    np.testing.assert_allclose(_grad(x), [3.0, 3.0, 0.0, 0.0])


def test_write_through_a_view_of_a_leaf_requiring_grad_is_refused():
    """A view of a parameter written in place: the leaf's in-place error, as PyTorch."""
    w = pg.Variable(np.ones(3))
    v = w[0:2]
    with pytest.raises(RuntimeError, match="leaf that requires grad"):
        v *= 2


def test_write_through_a_view_on_a_backend_without_writes():
    """On dask (arrays are never written) the base is rebuilt functionally: same values, same gradient."""
    da = pytest.importorskip("dask.array")
    x = pg.Variable(da.from_array(np.ones(4), chunks=2))
    h = x * 1.0
    v = h[0:2]
    v *= 3
    (values,) = pg.compute(h)
    np.testing.assert_allclose(values, [3.0, 3.0, 1.0, 1.0])
    pg.sum(h).backward()
    np.testing.assert_allclose(pg.compute(x.grad)[0], [3.0, 3.0, 1.0, 1.0])


def test_hook_registered_before_an_inplace_change_fires_once():
    """h.register_hook(x100); h += 1: the hook fires once, on the old value (P38: was x10000)."""
    x = pg.Variable(np.ones(2))
    h = x * 2
    h.register_hook(lambda g: g * 100)
    h += 1
    pg.sum(h).backward()
    np.testing.assert_allclose(x.grad, [200.0, 200.0])


def test_hook_registered_after_an_inplace_change_sees_the_new_value():
    """A hook registered after h *= 3 sees d loss / d (new h)."""
    seen = []
    x = pg.Variable(np.ones(2))
    h = x * 2
    h *= 3
    h.register_hook(seen.append)
    pg.sum(h * 5).backward()
    np.testing.assert_allclose(seen[0], [5.0, 5.0])


def test_retain_grad_reports_the_gradient_of_the_value_after_the_change():
    """h = x * 2; h *= 3; retain_grad: h.grad is d sum(h) / d h = 1, not 3 (V19)."""
    x = pg.Variable(np.ones(2))
    h = x * 2
    h *= 3
    pg.sum(h).backward(retain_grad=True)
    np.testing.assert_allclose(h.grad, [1.0, 1.0])


def test_copy_policy_keeps_saved_arrays():
    """Under inplace_policy('copy') a write into an array multiply saved is right, not refused."""
    x = pg.Variable(np.array([1.0, 2.0]))
    h = x * 2
    y = pg.sum(h * h)
    with pg.inplace_policy("copy"):
        h += 1
    y.backward()
    np.testing.assert_allclose(x.grad, [8.0, 16.0])
    np.testing.assert_allclose(h.data, [3.0, 5.0])


def test_copy_policy_with_item_assignment_of_a_saved_array():
    """scale[mask] = 1 on an array a division saved (sklearn's normalize idiom) under 'copy'."""
    x = pg.Variable(np.array([3.0, 0.0, 4.0]))
    scale = x * 1.0
    y = pg.sum(x / (scale + 1.0))
    with pg.inplace_policy("copy"):
        scale[scale == 0] = 1.0
        z = pg.sum(x / scale)
    (y + z).backward()
    # d/dx [x/(x+1) + x/scale'] with scale' = x where x != 0 (ratio 1: gradient 0), 1 at x == 0
    np.testing.assert_allclose(x.grad, [1 / 16, 1.0 + 1.0, 1 / 25])


def test_copy_policy_is_scoped_and_checked():
    """The policy ends with its block; an unknown policy is refused."""
    with pg.inplace_policy("copy"):
        pass
    x = pg.Variable(np.array([1.0]))
    h = x * 2
    y = pg.sum(h * h)
    h += 1
    with pytest.raises(RuntimeError, match="in-place"):
        y.backward()
    with pytest.raises(ValueError, match="one of"):
        pg.inplace_policy("always")


@pytest.mark.parametrize("key", [np.int64(1), np.int32(1), np.uint8(1), (np.intp(1), slice(None)), (Ellipsis, np.int64(1))],
                         ids=["int64", "int32", "uint8", "tuple", "ellipsis"])
def test_write_through_a_numpy_integer_key_reaches_the_base_graph(key):
    """A numpy integer key is indexed as an int (numpy gives a view), so a write through it is a
    write through a view: h's graph sees it. It was taken for a copy: x.grad stayed 1 where h had
    been multiplied by 10, and a saved h changed without the version error."""
    x = pg.Variable(np.array([[1.0, 2.0], [3.0, 4.0]]))
    h = x * 1.0
    v = h[key]
    v *= 10.0
    pg.sum(h).backward()
    expected = np.ones((2, 2))
    expected[(1, slice(None)) if not isinstance(key, tuple) or key[0] is not Ellipsis else (slice(None), 1)] = 10.0
    np.testing.assert_array_equal(x.grad, expected)
    x.cleargrad()
    h = x * 1.0
    y = pg.sum(h * h)
    h[np.int64(0)] *= 100.0
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.backward()


def test_unrecorded_views_under_the_copy_policy():
    """Under pg.inplace_policy("copy") writes rebind, as on a backend without in-place writes: a
    view made outside recording still writes its base, and follows it (the write used to stay
    in the view's new array)."""
    c = pg.Variable(np.ones(4), requires_grad=False)
    with pg.inplace_policy("copy"):
        cv = c[0:2]
        cv *= 3.0
        np.testing.assert_array_equal(c.data, [3.0, 3.0, 1.0, 1.0])
        c += 1.0
        np.testing.assert_array_equal(cv.data, [4.0, 4.0])


@pytest.mark.parametrize("policy", ["check", "copy"])
def test_a_value_with_a_graph_written_into_a_view_of_a_constant_reaches_the_constant(xp, policy):
    """c is a constant; v = c[0:1]; v += 3 x0. On backends that write in place the write went
    into the shared memory only, and c kept no graph: x.grad [1, 1] where [19, 1] is right.
    `c[0:1] += 3 x0` (Python stores the view back into c) lost the path on dask and under the
    copy policy: the view was taken again without a graph after the write."""
    with pg.inplace_policy(policy):
        for through_view in (True, False):
            x = pg.Variable(arr(xp, [1.0, 2.0]))
            c = pg.Variable(arr(xp, [0.0, 0.0]), requires_grad=False)
            if through_view:
                v = c[0:1]
                v += x[0:1] * 3.0
            else:
                c[0:1] += x[0:1] * 3.0
            (pg.sum(c * c) + pg.sum(x)).backward()
            np.testing.assert_allclose(_grad(x), [19.0, 1.0], err_msg=f"through a view: {through_view}")


def test_a_base_made_without_recording_gets_the_graph_of_a_write_through_its_view():
    """A base computed under no_backprop_mode, written through a view with a value that has a
    graph: the base's part of the gradient was dropped ([2, 2] where [4, 4] is right)."""
    x = pg.Variable(pg.asarray([1.0, 2.0]))
    m = pg.sum(x)
    with pg.no_backprop_mode():
        base = x * 1.0
    v = pg.expand_dims(base, axis=0)
    v[...] = m
    (g,) = pg.grad([base, v], [x], grad_outputs=[pg.asarray([1.0, 1.0]), pg.asarray([[1.0, 1.0]])])
    np.testing.assert_allclose(g.array, [4.0, 4.0])


@pytest.mark.parametrize("policy", ["check", "copy"])
@pytest.mark.parametrize("write", ["setitem", "imul", "fill"])
def test_a_write_through_a_view_made_under_no_backprop_reaches_the_bases_graph(xp, policy, write):
    """A constant written through a view made under no_backprop_mode, with recording on, went into
    the shared memory only on a backend that writes in place: h kept its graph, and sum(h * h) gave
    x.grad [14, 4] for h = [7, 2] where h[0] is now a constant ([0, 4], as on dask and under the
    copy policy). The same through a view of such a view."""
    with pg.inplace_policy(policy):
        for chain in (1, 2):
            x = pg.Variable(arr(xp, [3.0, 2.0]))
            h = x * 1.0
            with pg.no_backprop_mode():
                v = h[0:1]
                if chain == 2:
                    v = pg.reshape(v, (1,))
            if write == "setitem":
                v[...] = 7.0
            elif write == "imul":
                v *= pg.Variable(arr(xp, [7.0 / 3.0]), requires_grad=False)
            else:
                v.fill_(7.0)
            np.testing.assert_allclose(np.asarray(pg.to_backend(h.data, "numpy")), [7.0, 2.0])
            pg.sum(h * h).backward()
            np.testing.assert_allclose(np.asarray(pg.to_backend(x.grad, "numpy")), [0.0, 4.0])


def test_a_write_through_a_view_made_under_no_backprop_of_a_parameter_is_refused(xp):
    """As on dask and under the copy policy (and in PyTorch): the parameter's gradient would be lost."""
    w = pg.Variable(arr(xp, [1.0, 2.0]))
    with pg.no_backprop_mode():
        v = w[0:1]
    with pytest.raises(RuntimeError, match="leaf that requires grad"):
        v += 1.0
    with pg.no_backprop_mode():
        v += 1.0  # not recorded: allowed
    np.testing.assert_allclose(np.asarray(pg.to_backend(w.data, "numpy")), [2.0, 2.0])


class _TripleInPlace(pg.Function):
    def forward(self, inputs):
        x, = inputs
        x *= 3
        self.mark_dirty(x)
        self.retain_inputs(())
        return x,

    def backward(self, inputs, grad_outputs):
        return tuple(g * 3 for g in grad_outputs)


@pytest.mark.parametrize("policy", ["check", "copy"])
def test_a_function_that_marks_a_view_dirty_rebases_its_base_and_views_follow(xp, policy):
    """A user Function's in-place write (mark_dirty) is an in-place operation like h *= 3: through a
    view, the base's graph gets it (h.grad missed the 3: [6, 12, 6] for [18, 36, 6]); on a base,
    its earlier views follow ([0, 12, 18] for [0, 36, 54]); the returned view stays a view."""
    with pg.inplace_policy(policy):
        x = pg.Variable(arr(xp, [1.0, 2.0, 3.0]))
        h = x * 1
        _TripleInPlace()(h[0:2])
        pg.sum(h * h).backward()
        np.testing.assert_allclose(np.asarray(pg.to_backend(x.grad, "numpy")), [18.0, 36.0, 6.0])

        x = pg.Variable(arr(xp, [1.0, 2.0, 3.0]))
        h = x * 1
        w = h[1:3]
        _TripleInPlace()(h)
        pg.sum(w * w).backward()
        np.testing.assert_allclose(np.asarray(pg.to_backend(x.grad, "numpy")), [0.0, 36.0, 54.0])

        x = pg.Variable(arr(xp, [1.0, 2.0, 3.0]))
        h = x * 1
        v = _TripleInPlace()(h[0:2])
        v += 1
        pg.sum(h * h).backward()
        np.testing.assert_allclose(np.asarray(pg.to_backend(h.data, "numpy")), [4.0, 7.0, 3.0])
        np.testing.assert_allclose(np.asarray(pg.to_backend(x.grad, "numpy")), [24.0, 42.0, 6.0])


class _TripleBoth(pg.Function):
    def forward(self, inputs):
        a, b = inputs
        a *= 3
        b *= 3
        self.mark_dirty(a, b)
        self.retain_inputs(())
        return a, b

    def backward(self, inputs, grad_outputs):
        return tuple(None if g is None else g * 3 for g in grad_outputs)


def test_a_function_that_marks_two_views_of_one_base_dirty_writes_both_into_it(xp):
    """Both views write into the base in turn (the second was taken for a view of the first: an
    AttributeError, then a write into a stand-in of the old base: h.grad [18, 12, 6])."""
    for loss in ("views", "base"):
        x = pg.Variable(arr(xp, [1.0, 2.0, 3.0]))
        h = x * 1
        a, b = _TripleBoth()(h[0:1], h[1:2])
        (pg.sum(a * a + b * b) if loss == "views" else pg.sum(h * h)).backward()
        want = [18.0, 36.0, 0.0] if loss == "views" else [18.0, 36.0, 6.0]
        np.testing.assert_allclose(np.asarray(pg.to_backend(x.grad, "numpy")), want)


class _TripleUnreturned(_TripleInPlace):
    def forward(self, inputs):
        super().forward(inputs)
        return inputs[0] * 1,


def test_an_input_marked_dirty_but_not_returned_is_refused(xp):
    """As PyTorch: its Variable would keep the graph of its old values ([6, 12, 6] for [18, 36, 6])."""
    h = pg.Variable(arr(xp, [1.0, 2.0])) * 1
    with pytest.raises(ValueError, match="changed in place but did not return"):
        _TripleUnreturned()(h)


def _view_chains(h):
    """Views of views of h whose middle Variables are dropped at once: y = h.T[0] and deeper."""
    t = h.T
    siblings = (t[0, ...], t[1, ...])  # two views of one dropped middle
    return [h.T[0, ...], h.reshape(6)[1:4][0:2], siblings]


def test_a_view_of_a_view_follows_its_base_when_the_middle_is_gone(xp):
    """h *= 2 after y = h.T[0]: y shows the new values and its gradient runs through the write,
    as when the middle (h.T) is kept (y kept its old graph: w.grad [4, 16] for [8, 32])."""
    w0 = np.arange(1.0, 7.0).reshape(2, 3)
    for which in range(3):
        w = pg.Variable(arr(xp, w0))
        h = w * 1.0
        y = _view_chains(h)[which]
        h *= 2.0
        ys = y if isinstance(y, tuple) else (y,)
        loss = sum(pg.sum(v * v) for v in ys)
        loss.backward()
        h2 = 2.0 * w0
        want = {0: h2.T[0], 1: h2.reshape(6)[1:4][0:2], 2: h2.T[0:2]}[which]
        got = np.concatenate([np.asarray(pg.to_backend(v.detach(), "numpy").data).reshape(-1) for v in ys])
        np.testing.assert_allclose(got, want.reshape(-1))
        grad = np.zeros(6)
        grad[{0: [0, 3], 1: [1, 2], 2: [0, 3, 1, 4]}[which]] = 4.0 * want.reshape(-1)  # d/dw of y*y, y = 2 w
        np.testing.assert_allclose(np.asarray(pg.to_backend(w.grad, "numpy")).reshape(-1), grad)


def test_a_view_of_a_view_follows_its_base_on_a_backend_without_writes():
    """On dask y = h.T[0] kept its old values after h *= 2 ([1, 4] for [2, 8]) and its old graph."""
    da = pytest.importorskip("dask.array")
    w = pg.Variable(da.from_array(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), chunks=1))
    h = w * 1.0
    y = h.T[0]
    h *= 2.0
    pg.sum(y * y).backward()
    values, grad = pg.compute(y, w.grad)
    np.testing.assert_allclose(values, [2.0, 8.0])
    np.testing.assert_allclose(grad, [[8.0, 0.0, 0.0], [32.0, 0.0, 0.0]])


def _write_into_a_reshape(x):
    y = x.T.reshape(6)  # numpy's reshape copies here (x.T is not contiguous)
    y *= 0.0
    return x


def test_a_write_into_a_reshape_reaches_the_base_in_every_mode(xp):
    """reshape is a view on every backend: a write into x.T.reshape(6) zeroes x whether x has a
    graph or not (without one, numpy's copy took the write and x kept its values)."""
    w = pg.Variable(arr(xp, np.arange(1.0, 7.0).reshape(2, 3)))
    with pg.no_backprop_mode():
        infer = _write_into_a_reshape(w * 1.0)
    for x in (_write_into_a_reshape(w * 1.0), infer, _write_into_a_reshape(w.detach() * 1.0)):
        np.testing.assert_array_equal(np.asarray(pg.to_backend(x.detach(), "numpy").data), np.zeros((2, 3)))


def test_a_write_into_a_reshape_reaches_the_base_on_a_backend_without_writes():
    """The same on dask, where every write rebinds (it did there already)."""
    da = pytest.importorskip("dask.array")
    w = pg.Variable(da.from_array(np.arange(1.0, 7.0).reshape(2, 3), chunks=1))
    with pg.no_backprop_mode():
        infer = _write_into_a_reshape(w * 1.0)
    for x in (_write_into_a_reshape(w * 1.0), infer, _write_into_a_reshape(w.detach() * 1.0)):
        np.testing.assert_array_equal(pg.compute(x.detach())[0], np.zeros((2, 3)))


def test_a_function_that_marks_a_reshape_dirty_writes_into_the_base_without_a_graph():
    """A user Function's in-place write into x.T.reshape(6) (numpy's copy) reaches x without a
    graph too (it stayed in the copy: x kept its values)."""
    x = pg.Variable(np.arange(1.0, 7.0).reshape(2, 3), requires_grad=False)
    _TripleInPlace()(x.T.reshape(6))
    np.testing.assert_array_equal(x.data, 3.0 * np.arange(1.0, 7.0).reshape(2, 3))


_CUT_SETUPS = [("numpy", "check"), ("numpy", "copy"), ("dask", "check")]


def _values(v):
    return np.asarray(pg.to_backend(v.detach(), "numpy").data if v.backend.name != "dask" else pg.compute(v.detach())[0])


@pytest.mark.parametrize("backend,policy", _CUT_SETUPS)
@pytest.mark.parametrize("cut", ["unchain", "unchain_backward", "detach_"])
def test_a_view_taken_before_its_base_left_the_graph_stays_its_view(cut, backend, policy):
    """After h.unchain() (unchain_backward, detach_) v = h[0:1], taken before, was a view no more: h += 1 did not
    reach it on dask, and v *= 2 reached h only where the memory is shared (numpy), behind its graph's back."""
    if backend == "dask":
        pytest.importorskip("dask.array")
    with pg.using_backend(backend):
        x = pg.Variable(pg.asarray([3.0, 2.0]))
    h = x * 2
    v = h[0:1]
    getattr(h, cut)()
    with pg.inplace_policy(policy), pg.no_backprop_mode():
        h += 1
        np.testing.assert_array_equal(_values(v), [7.0])
        v *= 2
    np.testing.assert_array_equal(_values(h), [14.0, 5.0])


@pytest.mark.parametrize("backend,policy", _CUT_SETUPS)
def test_a_write_through_a_view_taken_before_unchain_is_refused_as_one_to_its_base(backend, policy):
    """h is a root that requires grad after unchain, so h *= x is refused: v *= x[0:1] went through silently, x.grad
    None (numpy, where it reached h by memory sharing) or lost (dask, the copy policy: h stayed [6, 4])."""
    if backend == "dask":
        pytest.importorskip("dask.array")
    for cut in ("unchain", "unchain_backward"):
        with pg.using_backend(backend):
            x = pg.Variable(pg.asarray([3.0, 2.0]))
        h = x * 2
        v = h[0:1]
        getattr(h, cut)()
        with pg.inplace_policy(policy), pytest.raises(RuntimeError, match="is a leaf that requires grad"):
            v *= x[0:1]
        pg.sum(v * 3).backward()  # v is a view of the root h now
        np.testing.assert_array_equal(_values(h.grad_var), [3.0, 0.0])


@pytest.mark.parametrize("backend,policy", _CUT_SETUPS)
def test_a_write_through_a_view_taken_before_detach_gives_its_base_a_graph(backend, policy):
    """As a write into a view of a constant: h = [18, 4] and x.grad = [6, 0] on every backend (x.grad was None)."""
    if backend == "dask":
        pytest.importorskip("dask.array")
    with pg.using_backend(backend):
        x = pg.Variable(pg.asarray([3.0, 2.0]))
        c = pg.asarray([1.0, 10.0])
    h = x * 2
    v = h[0:1]
    h.detach_()
    with pg.inplace_policy(policy):
        v *= x[0:1]
    pg.sum(h * c).backward()
    np.testing.assert_array_equal(_values(h), [18.0, 4.0])
    np.testing.assert_array_equal(_values(x.grad_var), [6.0, 0.0])


def test_a_view_keeps_its_hooks_when_its_base_is_unchained():
    """Its hooks fire in the old graph and in the ones built on it, as its base's do."""
    x = pg.Variable(np.array([3.0, 2.0]))
    h = x * 2
    v = h[0:1]
    seen = []
    v.register_hook(lambda g: seen.append(np.asarray(g).tolist()))
    y = pg.sum(v * v)
    h.unchain()
    y.backward()
    np.testing.assert_array_equal(x.grad, [24.0, 0.0])
    pg.sum(v * 3).backward()
    assert seen == [[12.0], [3.0]]


_ROUND_TRIPS = {"deepcopy": copy.deepcopy, "pickle": lambda o: pickle.loads(pickle.dumps(o))}


@pytest.mark.parametrize("how", sorted(_ROUND_TRIPS))
def test_a_copied_view_made_outside_recording_stays_a_view_of_the_copied_base(how):
    """A model snapshot holding a row r = W[0:1] (taken under no_backprop_mode): after deepcopy or pickle, W2 += 1
    did not reach r2 ([1.] for [2.]) and r2 *= 10 did not reach W2 ([2., 3.] for [20., 3.])."""
    W = pg.Variable(np.array([1.0, 2.0]))
    with pg.no_backprop_mode():
        r = W[0:1]
    W2, r2 = _ROUND_TRIPS[how]((W, r))
    with pg.no_backprop_mode():
        W2 += 1
        np.testing.assert_array_equal(r2.data, [2.0])
        r2 *= 10
    np.testing.assert_array_equal(W2.data, [20.0, 3.0])
    np.testing.assert_array_equal(W.data, [1.0, 2.0])  # the original is its own
    np.testing.assert_array_equal(r.data, [1.0])
    (r3,) = _ROUND_TRIPS[how]((r,))  # alone, it takes its base along
    with pg.no_backprop_mode():
        r3 *= 5
    np.testing.assert_array_equal(_unrecorded(r3)[1].data, [5.0, 2.0])  # (its base)


@pytest.mark.parametrize("how", sorted(_ROUND_TRIPS))
def test_a_copied_recorded_view_follows_its_copied_base(how):
    """A recorded view after deepcopy or pickle kept its old values after a write to the base ([2.] for [6.]), and a
    write through it then went to a stand-in of the base's old value ([6., 12.] for [12., 12.])."""
    x = pg.Variable(np.array([1.0, 2.0]))
    h = x * 2
    v = h[0:1]
    x2, h2, v2 = _ROUND_TRIPS[how]((x, h, v))
    h2 *= 3
    np.testing.assert_array_equal(v2.data, [6.0])
    v2 *= 2
    np.testing.assert_array_equal(h2.data, [12.0, 12.0])
    pg.sum(h2).backward()
    np.testing.assert_array_equal(x2.grad, [12.0, 6.0])
    assert x.grad is None


@pytest.mark.parametrize("mode", ["FAST_RUN", "FAST_COMPILE"])
def test_a_compiled_write_through_a_view_of_an_intermediate_keeps_the_gradient_path(mode):
    """In a symbolic graph the view, taken again after the write, became a detached symbol: the
    compiled gradient lost its path through it (x.grad [0 0 0 0] for [6 16 10 0], and h[1] *= 3
    gave [2 6 6 8] for [2 12 6 8])."""
    from polygrad import symbolic as T

    def through_view(x):
        h = x * 1.0
        v = h[1:3]
        v += x[0:2]
        return pg.sum(v * v)

    def item(x):
        h = x * 1.0
        h[1] *= 3.0
        return pg.sum(h * x)

    a = np.array([1.0, 2.0, 3.0, 4.0])
    for f in (through_view, item):
        xe = pg.Variable(a.copy())
        f(xe).backward()
        xs = T.vector("x")
        cost = f(xs)
        got = pg.function([xs], [cost, pg.grad([cost], [xs])[0]], mode=mode)(a)
        np.testing.assert_allclose(got[1], xe.grad, rtol=1e-12)

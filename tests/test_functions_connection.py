"""polygrad.functions' connections (linear, embed_id, convolution_2d) and their
links (Convolution2D, EmbedID): forward values against hand-written numpy,
gradients by check_grads in float64 (order 2), and the errors bad input gets,
on numpy and array_api_strict."""

from __future__ import annotations

import numpy as np
import pytest

import polygrad as pg
import polygrad.functions as F
import polygrad.links as L
from polygrad.testing import check_grads

from conftest import arr, ints, normal
from conftest import to_np, assert_values_close as assert_close

X = np.array([[0.5, -1.0, 2.0, 0.1], [-0.3, 0.8, -1.5, 1.2], [1.1, 0.7, -0.4, -2.2]])


# ---------------------------------------------------------------------------
# linear
# ---------------------------------------------------------------------------

W = np.array([[0.1, -0.2, 0.3, 0.4], [0.5, 0.6, -0.7, 0.8]])
B = np.array([0.25, -0.5])


def test_linear_forward(xp):
    """linear(x, W, b) is x @ W.T + b with W of shape (out, in)."""
    y = F.linear(arr(xp, X), pg.Variable(arr(xp, W)), pg.Variable(arr(xp, B)))
    assert_close(y, X @ W.T + B)


def test_linear_without_bias(xp):
    """linear(x, W) is x @ W.T."""
    assert_close(F.linear(arr(xp, X), arr(xp, W)), X @ W.T)


def test_linear_flattens_inputs_of_more_than_two_dims(xp):
    """An (N, 2, 2) input is flattened to (N, 4) before the product."""
    x3 = X.reshape(3, 2, 2)
    assert_close(F.linear(pg.Variable(arr(xp, x3)), arr(xp, W), arr(xp, B)), X @ W.T + B)


def test_linear_of_a_vector(xp):
    """linear of a 1-D input x is x @ W.T + b, of shape (out,)."""
    assert_close(F.linear(arr(xp, X[0]), arr(xp, W), arr(xp, B)), X[0] @ W.T + B)


def test_linear_gradients(xp):
    """Gradients of linear in x, W and b agree with central differences."""
    check_grads(F.linear, [arr(xp, X), arr(xp, W), arr(xp, B)], order=2)


def test_linear_gradient_of_flattened_input_has_input_shape(xp):
    """The gradient of a 3-D input of linear has the 3-D shape."""
    x = pg.Variable(arr(xp, X.reshape(3, 2, 2)))
    pg.sum(F.linear(x, arr(xp, W))).backward()
    assert x.grad.shape == (3, 2, 2)
    assert_close(x.grad, np.broadcast_to(W.sum(axis=0), (3, 4)).reshape(3, 2, 2))


@pytest.mark.parametrize("call, arg, given", [
    (lambda x, W, b: F.linear(x, W, to_np(b).tolist()), "b", "list"),
    (lambda x, W, b: F.linear(x, W, 1.0), "b", "float"),
    (lambda x, W, b: F.linear(to_np(x).tolist(), W, b), "x", "list"),
    (lambda x, W, b: F.linear(x, to_np(W).tolist()), "W", "list"),
], ids=["b_list", "b_float", "x_list", "W_list"])
def test_linear_refuses_arguments_that_are_not_arrays(xp, call, arg, given):
    """A list b was "'list' object has no attribute 'shape'" and a list x "... no attribute 'ndim'":
    now convolution_2d's refusal, naming the function, the argument and its type."""
    with pytest.raises(TypeError, match=rf"functions\.linear: {arg} \({given}\): no backend claims .*pg\.asarray"):
        call(arr(xp, X), arr(xp, W), arr(xp, B))


# ---------------------------------------------------------------------------
# embed_id
# ---------------------------------------------------------------------------
EW = normal((5, 3), seed=4)
IDS = np.array([[0, 3, 3], [4, 0, 3]])


def test_embed_id_forward(xp):
    """embed_id(x, W) is W[x], of shape x.shape + (D,)."""
    assert_close(F.embed_id(ints(xp, IDS), arr(xp, EW)), EW[IDS])


def test_embed_id_ignore_label_gives_zero_rows(xp):
    """Ids equal to ignore_label (even -1) give zero rows and no gradient."""
    ids = np.array([1, -1, 2, -1])
    W = pg.Variable(arr(xp, EW))
    y = F.embed_id(ints(xp, ids), W, ignore_label=-1)
    want = EW[np.where(ids == -1, 0, ids)]
    want[ids == -1] = 0.0
    assert_close(y, want)
    pg.sum(y).backward()
    g = np.zeros_like(EW)
    g[[1, 2]] = 1.0
    assert_close(W.grad, g)


def test_embed_id_gradient_adds_repeated_ids(xp):
    """The gradient of W is the scatter-add of the output gradient at the ids."""
    W = pg.Variable(arr(xp, EW))
    gy = normal(IDS.shape + (3,), seed=5)
    F.embed_id(ints(xp, IDS), W).backward(arr(xp, gy))
    want = np.zeros_like(EW)
    np.add.at(want, IDS, gy)
    assert_close(W.grad, want, rtol=1e-12)


def test_embed_id_gradients(xp):
    """Gradients in W agree with central differences, to second order."""
    ids = ints(xp, IDS)
    check_grads(lambda w: F.embed_id(ids, w) * F.embed_id(ids, w), [arr(xp, EW)], order=2)


def test_compiled_embed_id_matches_eager_and_checks_ids_at_each_call():
    """pg.function of embed_id (ids a symbolic vector, W shared): the rows and W's gradient of
    eager embed_id (repeated ids add up, ignored ids give zero rows and no gradient), and an id
    out of range is refused at the call that passes it."""
    from polygrad import symbolic as T

    ids = T.vector("ids", dtype="int64")
    W = pg.shared(EW.copy())
    y = F.embed_id(ids, W, ignore_label=-1)
    f = pg.function([ids], [y, T.grad(pg.sum(y * y), W)])
    for values in ([1, 2, 1], [0, -1, 3, 0]):
        got_y, got_g = f(np.array(values))
        v = pg.Variable(EW.copy())
        want = F.embed_id(np.array(values), v, ignore_label=-1)
        pg.sum(want * want).backward()
        assert np.array_equal(got_y, to_np(want))
        assert np.allclose(got_g, to_np(v.grad), rtol=1e-14, atol=0)
    with pytest.raises(ValueError, match=r"embed_id: ids x must be in \[0, 5\) or equal ignore_label=-1, got -2"):
        f(np.array([1, -2]))


def test_compiled_embed_id_needs_a_known_shape_beyond_one_dimension():
    """Ids of two dimensions of unknown sizes: a ValueError naming embed_id, not a TypeError about
    namespaces; of a declared shape, the rows of W."""
    from polygrad import symbolic as T

    with pytest.raises(ValueError, match=r"embed_id \(ids of more than one dimension\) needs inputs of known shape"):
        F.embed_id(T.matrix("ids", dtype="int64"), pg.shared(EW.copy()))
    ids = T.tensor("int64", IDS.shape, "ids")
    assert np.array_equal(pg.function([ids], F.embed_id(ids, pg.shared(EW.copy())))(IDS), EW[IDS])


def test_embed_id_rejects_float_ids(xp):
    """Float ids raise ValueError naming embed_id."""
    with pytest.raises(ValueError, match="embed_id"):
        F.embed_id(arr(xp, [0.0, 1.0]), arr(xp, EW))


# ---------------------------------------------------------------------------
# convolution_2d
# ---------------------------------------------------------------------------


def np_conv2d(x, W, b, stride, pad):
    sy, sx = stride
    ph, pw = pad
    n, c, h, w = x.shape
    o, _, kh, kw = W.shape
    xpad = np.zeros((n, c, h + 2 * ph, w + 2 * pw))
    xpad[:, :, ph:ph + h, pw:pw + w] = x
    oh, ow = (h + 2 * ph - kh) // sy + 1, (w + 2 * pw - kw) // sx + 1
    y = np.zeros((n, o, oh, ow))
    for i in range(oh):
        for j in range(ow):
            patch = xpad[:, :, i * sy:i * sy + kh, j * sx:j * sx + kw]
            y[:, :, i, j] = np.einsum("nchw,ochw->no", patch, W)
    return y if b is None else y + b.reshape(1, -1, 1, 1)


@pytest.mark.parametrize("stride, pad", [(1, 0), (2, 1), ((1, 2), (0, 1))], ids=["s1p0", "s2p1", "s12p01"])
def test_convolution_2d_forward(xp, stride, pad):
    """convolution_2d matches a loop over windows (cross-correlation, zero padding)."""
    x, W, b = normal((2, 3, 5, 6), 11), normal((4, 3, 3, 2), 12), normal((4,), 13)
    pair = lambda v: (v, v) if isinstance(v, int) else v  # noqa: E731
    y = F.convolution_2d(arr(xp, x), arr(xp, W), arr(xp, b), stride=stride, pad=pad)
    assert_close(y, np_conv2d(x, W, b, pair(stride), pair(pad)), rtol=1e-10)


def test_convolution_2d_without_bias(xp):
    """b=None adds nothing."""
    x, W = normal((1, 2, 4, 4), 14), normal((3, 2, 2, 2), 15)
    assert_close(F.convolution_2d(arr(xp, x), arr(xp, W)), np_conv2d(x, W, None, (1, 1), (0, 0)), rtol=1e-10)


def test_convolution_2d_gradients(xp):
    """Gradients in x, W and b agree with central differences, to second order."""
    x, W, b = normal((2, 2, 4, 3), 16), normal((2, 2, 2, 2), 17), normal((2,), 18)
    check_grads(lambda a, w, c: F.convolution_2d(a, w, c, stride=(2, 1), pad=1), [arr(xp, x), arr(xp, W), arr(xp, b)],
                order=2)


def test_convolution_2d_rejects_channel_mismatch(xp):
    """x with 3 channels and W for 2 raise ValueError naming both shapes."""
    with pytest.raises(ValueError, match=r"convolution_2d.*\(1, 3, 4, 4\).*\(2, 2, 3, 3\)"):
        F.convolution_2d(arr(xp, np.zeros((1, 3, 4, 4))), arr(xp, np.zeros((2, 2, 3, 3))))


def test_convolution_2d_refuses_a_filter_with_an_empty_kernel(xp):
    """W of shape (2, 3, 0, 3) passed the shape check and failed with "polygrad.functions.stack
    needs at least one array", naming neither convolution_2d nor W."""
    with pytest.raises(ValueError, match=r"convolution_2d: W of shape \(2, 3, 0, 3\) has an empty 0x3 kernel"):
        F.convolution_2d(arr(xp, np.ones((1, 3, 4, 4))), xp.ones((2, 3, 0, 3), dtype=xp.float64))


@pytest.mark.parametrize("call, arg, given", [
    (lambda x, W: F.convolution_2d(x, W, 1.0), "b", "float"),
    (lambda x, W: F.convolution_2d(x, W, [1.0, 2.0]), "b", "list"),
    (lambda x, W: F.convolution_2d(to_np(x).tolist(), W), "x", "list"),
    (lambda x, W: F.convolution_2d(x, to_np(W).tolist()), "W", "list"),
], ids=["b_float", "b_list", "x_list", "W_list"])
def test_convolution_2d_refuses_arguments_that_are_not_arrays(xp, call, arg, given):
    """A bias of 1.0 or [1.0, 2.0] was "expects b of shape (2,) ..., got None" (the shape of no
    array); x as a nested list an AttributeError. Now a TypeError naming the function, the
    argument and its type, in the op dispatch's words (as F.relu([..]) says)."""
    x, W = arr(xp, np.ones((1, 3, 4, 4))), arr(xp, np.ones((2, 3, 3, 3)))
    with pytest.raises(TypeError, match=rf"convolution_2d: {arg} \({given}\): no backend claims .*pg.asarray"):
        call(x, W)


# ---------------------------------------------------------------------------
# Links
# ---------------------------------------------------------------------------


def test_convolution2d_link(xp, backend_name):
    """L.Convolution2D holds W (out, in, kh, kw) and b, and computes convolution_2d."""
    pg.seed(0)
    link = L.Convolution2D(2, 3, 3, stride=1, pad=1, dtype="float64", backend=backend_name)
    assert link.W.shape == (3, 2, 3, 3) and link.b.shape == (3,)
    assert [name for name, _ in link.namedparams()] == ["/W", "/b"]
    x = normal((1, 2, 4, 4), 27)
    y = link(arr(xp, x))
    assert_close(y, np_conv2d(x, to_np(link.W), to_np(link.b), (1, 1), (1, 1)), rtol=1e-10)


def test_convolution2d_link_infers_in_channels_and_is_seeded(xp, backend_name):
    """Convolution2D(out, ksize) infers in_channels at the first call; pg.seed fixes W."""
    pg.seed(5)
    a = L.Convolution2D(4, 3, dtype="float64", backend=backend_name)
    assert a.W.data is None
    a(arr(xp, np.zeros((1, 2, 5, 5))))
    pg.seed(5)
    b = L.Convolution2D(2, 4, 3, dtype="float64", backend=backend_name)
    assert a.W.shape == (4, 2, 3, 3)
    assert_close(a.W, to_np(b.W))


def test_embedid_link(xp, backend_name):
    """L.EmbedID holds W (in_size, out_size) and looks ids up."""
    link = L.EmbedID(5, 3, dtype="float64", backend=backend_name, ignore_label=-1)
    y = link(ints(xp, [[1, -1]]))
    assert y.shape == (1, 2, 3)
    assert_close(y[0, 0, :], to_np(link.W)[1])
    assert_close(y[0, 1, :], np.zeros(3))


def test_convolution_2d_rejects_a_filter_larger_than_the_input(xp):
    """A 3x3 filter on a 2x2 input without padding raises ValueError naming convolution_2d."""
    with pytest.raises(ValueError, match="convolution_2d: a 3x3 filter does not fit an input of 2x2"):
        F.convolution_2d(arr(xp, np.zeros((1, 1, 2, 2))), arr(xp, np.zeros((1, 1, 3, 3))))


def test_linear_and_convolution_check_their_arguments_shapes():
    """A one-row W broadcast against a longer b gave a (2, 3) output silently (Chainer: b.shape[0]
    == W.shape[0]); x with the wrong number of features and a conv bias of the wrong length
    failed inside matmul or reshape without naming the function's argument."""
    x = pg.Variable(np.ones((2, 5), "float32"))
    with pytest.raises(ValueError, match=r"linear: expects b of shape \(1,\) for W of shape \(1, 5\), got \(3,\)"):
        F.linear(x, pg.Variable(np.ones((1, 5), "float32")), pg.Variable(np.arange(3, dtype="float32")))
    with pytest.raises(ValueError, match=r"linear: x of shape \(2, 5\) has 5 features, W of shape \(4, 3\) takes 3"):
        F.linear(x, pg.Variable(np.ones((4, 3), "float32")))
    with pytest.raises(ValueError, match=r"linear: expects W of shape \(out, in\), got \(5,\)"):
        F.linear(x, pg.Variable(np.ones(5, "float32")))
    with pytest.raises(ValueError, match=r"convolution_2d: expects b of shape \(2,\) for W of shape \(2, 3, 3, 3\), got \(3,\)"):
        F.convolution_2d(pg.Variable(np.ones((1, 3, 5, 5), "float32")), pg.Variable(np.ones((2, 3, 3, 3), "float32")),
                         pg.Variable(np.ones(3, "float32")))
    assert F.linear(pg.Variable(np.ones((2, 3, 2), "float32")), pg.Variable(np.ones((4, 6), "float32"))).shape == (2, 4)


def test_linear_flattens_a_symbolic_input_of_unknown_batch():
    """x (None, 3, 1) was flattened by reshape(x, (None, -1)), which failed at the call."""
    from polygrad import symbolic as T

    x = T.tensor("float64", (None, 3, 1), "x")
    W = pg.shared(np.arange(6.0).reshape(2, 3), name="W")
    f = pg.function([x], F.linear(x, W))
    xs = np.arange(12.0).reshape(4, 3, 1)
    np.testing.assert_array_equal(f(xs), xs.reshape(4, 3) @ np.arange(6.0).reshape(2, 3).T)


def test_linear_of_an_empty_batch_of_more_than_two_dimensions():
    """x of shape (0, 3, 2) was flattened with -1, which has no size for an empty batch: numpy's
    reshape error, though every size is known."""
    x, W = pg.Variable(np.zeros((0, 3, 2))), pg.Variable(np.ones((4, 6)))
    y = F.linear(x, W)
    assert y.shape == (0, 4)
    pg.sum(y).backward()
    assert x.grad.shape == (0, 3, 2)
    np.testing.assert_array_equal(W.grad, np.zeros((4, 6)))

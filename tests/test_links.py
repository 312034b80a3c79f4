"""Links: pg.Link, pg.Chain (parameter registration, paths, grads) and L.Linear."""

from __future__ import annotations

import numpy as np
import pytest

import polygrad as pg
import polygrad.functions as F
import polygrad.links as L

from conftest import arr
from conftest import to_np


class Scale(pg.Link):
    """A one-parameter link: y = a * x."""

    def __init__(self, value=2.0):
        super().__init__()
        with self.init_scope():
            self.a = pg.Variable(pg.asarray([value], dtype="float64"))
        self.not_a_param = pg.Variable(pg.asarray([0.0], dtype="float64"))

    def forward(self, x):
        return self.a * x


class MLP(pg.Chain):
    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.l1 = L.Linear(3, 4)
            self.l2 = L.Linear(4, 2)

    def forward(self, x):
        return self.l2(F.relu(self.l1(x)))


# ---------------------------------------------------------------------------
# Link
# ---------------------------------------------------------------------------


def test_init_scope_registers_variables_only_inside(xp):
    """Variables assigned inside init_scope are parameters; those assigned outside are not."""
    link = Scale()
    assert [name for name, _ in link.namedparams()] == ["/a"]
    assert list(link.params()) == [link.a]


def test_init_scope_names_parameters(xp):
    """A parameter registered as ``a`` gets the name 'a'."""
    assert Scale().a.name == "a"


def test_link_keyword_parameters(xp):
    """pg.Link(w=Variable) registers w."""
    w = pg.Variable(arr(xp, [1.0]))
    link = pg.Link(w=w)
    assert list(link.namedparams()) == [("/w", w)]


def test_link_call_runs_forward(xp):
    """Calling a Link runs its forward."""
    assert to_np(Scale(3.0)(arr(xp, [2.0]))).tolist() == [6.0]


def test_link_without_forward_raises():
    """Calling a Link without forward raises NotImplementedError naming the class."""
    with pytest.raises(NotImplementedError, match="Link"):
        pg.Link()(1.0)


def test_deleting_parameter_unregisters_it(xp):
    """del link.a removes a from params()."""
    link = Scale()
    del link.a
    assert list(link.params()) == []


def test_cleargrads_sets_grads_to_none(xp):
    """After backward, cleargrads() resets every parameter's grad to None."""
    model = MLP()
    pg.sum(model(arr(xp, [[1.0, 2.0, 3.0]], "float32"))).backward()
    assert all(p.grad is not None for p in model.params())
    model.cleargrads()
    assert all(p.grad is None for p in model.params())


def test_zerograds_sets_grads_to_zero(xp):
    """zerograds() sets every parameter's grad to zeros of its shape."""
    model = MLP()
    model.zerograds()
    for p in model.params():
        assert to_np(p.grad).shape == p.shape
        assert not to_np(p.grad).any()


def test_zerograds_before_lazy_initialization_zeros_the_grad_once_initialized(xp):
    """zerograds() skipped a parameter not initialized yet, which then had grad None after its
    first call (Chainer's Parameter remembers the zeros); cleargrads() forgets them again."""
    x = arr(xp, [[1.0, 2.0, 3.0]], "float32")
    lin, norm = L.Linear(None, 2), L.LayerNormalization()
    for link in (lin, norm):
        link.zerograds()
        link(x)
        for p in link.params():
            assert to_np(p.grad).shape == p.shape and not to_np(p.grad).any()
    loaded = L.Linear(None, 2)
    loaded.zerograds()
    loaded.copyparams(L.Linear(3, 2))
    assert to_np(loaded.W.grad).shape == (2, 3)
    cleared = L.Linear(None, 2)
    cleared.zerograds()
    cleared.cleargrads()
    cleared(x)
    assert cleared.W.grad is None


# ---------------------------------------------------------------------------
# Chain
# ---------------------------------------------------------------------------


def test_chain_namedparams_paths(xp):
    """A Chain's parameters are named by path: '/l1/W', '/l1/b', '/l2/W', '/l2/b'."""
    names = sorted(name for name, _ in MLP().namedparams())
    assert names == ["/l1/W", "/l1/b", "/l2/W", "/l2/b"]


def test_nested_chain_paths(xp):
    """A Chain inside a Chain gives paths like '/block/l1/W'."""
    outer = pg.Chain(block=MLP(), head=L.Linear(2, 1))
    names = sorted(name for name, _ in outer.namedparams())
    assert names == ["/block/l1/W", "/block/l1/b", "/block/l2/W", "/block/l2/b", "/head/W", "/head/b"]


def test_chain_keyword_links(xp):
    """pg.Chain(l1=..., l2=...) registers the links as children."""
    l1, l2 = L.Linear(3, 4), L.Linear(4, 2)
    chain = pg.Chain(l1=l1, l2=l2)
    assert list(chain.children()) == [l1, l2]
    assert [n for n, _ in chain.namedparams()] == ["/l1/W", "/l1/b", "/l2/W", "/l2/b"]
    assert l1.name == "l1"


def test_chain_params_are_the_childrens_params(xp):
    """params() of a Chain yields its children's parameters (the same Variable objects)."""
    model = MLP()
    assert list(model.params()) == [model.l1.W, model.l1.b, model.l2.W, model.l2.b]


def test_chain_links_lists_self_and_descendants(xp):
    """links() yields the chain and every link below it; skipself leaves the chain out."""
    model = MLP()
    assert list(model.links()) == [model, model.l1, model.l2]
    assert list(model.links(skipself=True)) == [model.l1, model.l2]


def test_link_assigned_outside_init_scope_is_not_a_child(xp):
    """A Link assigned outside init_scope is not registered as a child."""
    chain = pg.Chain()
    chain.extra = L.Linear(2, 2)
    assert list(chain.params()) == []


def test_count_params(xp):
    """count_params() counts every element of every initialized parameter."""
    assert MLP().count_params() == 3 * 4 + 4 + 4 * 2 + 2


# ---------------------------------------------------------------------------
# Linear
# ---------------------------------------------------------------------------


def test_linear_shapes_and_default_dtype(xp):
    """Linear(3, 4) has W (4, 3) and b (4,), float32, b zero."""
    layer = L.Linear(3, 4)
    assert layer.W.shape == (4, 3) and layer.b.shape == (4,)
    assert layer.W.dtype == xp.float32 and layer.b.dtype == xp.float32
    assert not to_np(layer.b).any()


def test_linear_parameters_live_on_current_backend(xp, backend_name):
    """Linear's parameters are arrays of the current backend."""
    layer = L.Linear(3, 4)
    assert layer.W.backend.name == backend_name
    assert layer.b.backend.name == backend_name


def test_linear_dtype_argument(xp):
    """dtype='float64' makes float64 parameters."""
    layer = L.Linear(3, 4, dtype="float64")
    assert layer.W.dtype == xp.float64 and layer.b.dtype == xp.float64


def test_linear_nobias(xp):
    """nobias=True: no b, W is the only parameter."""
    layer = L.Linear(3, 4, nobias=True)
    assert layer.b is None
    assert [n for n, _ in layer.namedparams()] == ["/W"]


def test_linear_initial_values(xp):
    """initialW and initial_bias set the parameters."""
    w = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
    layer = L.Linear(2, 3, initialW=w, initial_bias=[0.5, 0.5, 0.5], dtype="float64")
    y = layer(arr(xp, [[1.0, 1.0]]))
    assert to_np(y).tolist() == [[3.5, 7.5, 11.5]]


def test_linear_forward_is_x_WT_plus_b(xp):
    """Linear(x) is x @ W.T + b."""
    layer = L.Linear(3, 2, dtype="float64")
    layer.b.data = arr(xp, [1.0, -1.0])
    x = np.array([[1.0, 2.0, 3.0], [0.0, -1.0, 0.5]])
    want = x @ to_np(layer.W).T + np.array([1.0, -1.0])
    np.testing.assert_allclose(to_np(layer(arr(xp, x))), want, rtol=1e-12)


def test_linear_weight_scale(xp):
    """W is drawn with variance 1/in_size."""
    pg.seed(0)
    w = to_np(L.Linear(400, 50).W)
    assert abs(w.mean()) < 0.01
    assert abs(w.std() - np.sqrt(1 / 400)) < 0.005


def test_lazy_linear_initializes_at_first_call(xp):
    """Linear(out) has W.data None until the first call infers in_size from the input."""
    layer = L.Linear(4)
    assert layer.W.data is None
    assert [n for n, _ in layer.namedparams(include_uninit=False)] == ["/b"]
    y = layer(arr(xp, [[1.0, 2.0, 3.0]] * 2, "float32"))
    assert layer.W.shape == (4, 3)
    assert y.shape == (2, 4)
    assert [n for n, _ in layer.namedparams(include_uninit=False)] == ["/W", "/b"]


def test_lazy_linear_none_in_size(xp):
    """Linear(None, out) is the lazy form too, and flattens inputs of more than 2 dims."""
    layer = L.Linear(None, 5)
    layer(arr(xp, np.zeros((2, 3, 2)), "float32"))
    assert layer.W.shape == (5, 6)


def test_linear_gradients_reach_parameters(xp):
    """backward through Linear fills W.grad = gy.T @ x and b.grad = sum(gy)."""
    layer = L.Linear(3, 2, dtype="float64")
    x = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    pg.sum(layer(arr(xp, x))).backward()
    np.testing.assert_allclose(to_np(layer.W.grad), np.ones((2, 2)).T @ x)
    np.testing.assert_allclose(to_np(layer.b.grad), [2.0, 2.0])


def test_seed_makes_initialization_reproducible(xp):
    """pg.seed(0) before building gives the same weights; no reseed gives different ones."""
    pg.seed(0)
    a = to_np(L.Linear(3, 4).W)
    b = to_np(L.Linear(3, 4).W)
    pg.seed(0)
    c = to_np(L.Linear(3, 4).W)
    np.testing.assert_array_equal(a, c)
    assert not np.array_equal(a, b)


def test_seed_makes_lazy_initialization_reproducible(xp):
    """pg.seed(0) also fixes weights drawn at a lazy Linear's first call."""
    x = arr(xp, [[1.0, 2.0]], "float32")
    pg.seed(0)
    layer = L.Linear(3)
    layer(x)
    pg.seed(0)
    again = L.Linear(3)
    again(x)
    np.testing.assert_array_equal(to_np(layer.W), to_np(again.W))


@pytest.mark.parametrize("make, error, message", [
    (lambda: L.Convolution2D(3, 4, 0), ValueError, "Convolution2D: ksize must be an int of at least 1, got 0"),
    (lambda: L.Convolution2D(3, 4, -1), ValueError, "Convolution2D: ksize must be an int of at least 1, got -1"),
    (lambda: L.Convolution2D(3, 4, (3, 3, 3)), ValueError,
     r"Convolution2D: ksize must be an int or a pair of ints, got \(3, 3, 3\)"),
    (lambda: L.Convolution2D(3, 4, 3, stride=0), ValueError, "Convolution2D: stride must be an int of at least 1"),
    (lambda: L.Convolution2D(3, 4, 3, pad=-1), ValueError, "Convolution2D: pad must be an int of at least 0"),
    (lambda: L.Convolution2D(0, 4, 3), ValueError, "Convolution2D: in_channels must be an int of at least 1, got 0"),
    (lambda: L.Convolution2D(3, -4, 3), ValueError, "Convolution2D: out_channels must be an int of at least 0"),
    (lambda: L.Convolution2D(3.0, 4, 3), TypeError, "Convolution2D: in_channels must be an int, got 3.0"),
    (lambda: L.Linear(0, 2), ValueError, "Linear: in_size must be an int of at least 1, got 0"),
    (lambda: L.Linear(3, -2), ValueError, "Linear: out_size must be an int of at least 0, got -2"),
    (lambda: L.Linear(True), TypeError, "Linear: out_size must be an int, got the bool True"),
    (lambda: L.EmbedID(-1, 2), ValueError, "EmbedID: in_size must be an int of at least 0, got -1"),
    (lambda: L.EmbedID(5, 2.5), TypeError, "EmbedID: out_size must be an int, got 2.5"),
], ids=["ksize_0", "ksize_negative", "ksize_triple", "stride_0", "pad_negative", "in_channels_0",
        "out_channels_negative", "in_channels_float", "linear_in_0", "linear_out_negative", "linear_bool",
        "embed_negative", "embed_float"])
def test_connection_links_check_their_sizes_at_construction(make, error, message):
    """A ksize or in_channels of 0 was a bare ZeroDivisionError (W's fan-in), a negative size
    numpy's "negative dimensions are not allowed", and ksize=(3, 3, 3) built a 5-D W that failed
    only at the first call; now an error naming polygrad.links.<link>, the argument and the value."""
    with pytest.raises(error, match=f"polygrad.links.{message}"):
        make()


def test_connection_links_take_numpy_integer_sizes():
    """ksize=np.int64(3) was "'numpy.int64' object is not iterable" (F.convolution_2d takes it);
    ksize, stride and pad are kept as pairs of ints."""
    conv = L.Convolution2D(np.int32(2), np.int64(4), np.int64(3), stride=np.int16(2), pad=(np.int8(1), 0))
    assert conv.W.shape == (4, 2, 3, 3)
    assert (conv.ksize, conv.stride, conv.pad) == ((3, 3), (2, 2), (1, 0))
    assert conv(np.zeros((1, 2, 5, 5), "float32")).shape == (1, 4, 3, 2)
    assert L.Linear(np.int64(3), np.int64(2)).W.shape == (2, 3)
    assert L.EmbedID(np.int64(5), np.int32(2)).W.shape == (5, 2)


@pytest.mark.parametrize("link, shape, what, where", [
    (lambda: L.Convolution2D(None, 4, 3), (2, None, 5, 5), "in_channels", r"on axis 1 \(channels\)"),
    (lambda: L.Convolution2D(4, 3), (2, None, 5, 5), "in_channels", r"on axis 1 \(channels\)"),
    (lambda: L.Linear(None, 3), (2, None), "in_size", "past the batch axis"),
    (lambda: L.Linear(3), (2, 4, None), "in_size", "past the batch axis"),
], ids=["conv", "conv_short_form", "linear", "linear_flattened"])
def test_lazy_link_on_a_symbolic_input_of_unknown_size_names_what_it_cannot_infer(link, shape, what, where):
    """A lazy link on a symbolic input whose channels or features are not declared failed drawing
    W with "unsupported operand type(s) for *: 'NoneType' and 'int'"; W stays uninitialized."""
    from polygrad import symbolic as T

    layer = link()
    name = type(layer).__name__
    shape_text = str(shape).replace("(", r"\(").replace(")", r"\)")
    with pytest.raises(ValueError, match=rf"polygrad.links.{name}: {what} cannot be inferred from x of shape "
                                         rf"{shape_text}, whose size {where} is not known; give {what}"):
        layer(T.tensor("float32", shape, "x"))
    assert layer.W.data is None


@pytest.mark.parametrize("link, x, message", [
    (lambda: L.Linear(None, 3), np.zeros((2, 0), "float32"), r"Linear: x of shape \(2, 0\) gives in_size 0"),
    (lambda: L.Convolution2D(None, 3, 2), np.zeros((1, 0, 3, 3), "float32"),
     r"Convolution2D: x of shape \(1, 0, 3, 3\) gives in_channels 0"),
], ids=["linear", "conv"])
def test_lazy_link_refuses_an_input_size_of_zero(link, x, message):
    """An input of no features or channels drew W with std sqrt(1 / 0): a bare ZeroDivisionError."""
    with pytest.raises(ValueError, match=message):
        link()(x)


def test_lazy_link_refuses_x_that_is_not_an_array():
    """A nested list was "'list' object has no attribute 'shape'" where the link read x's size."""
    with pytest.raises(TypeError, match=r"polygrad.links.Convolution2D: x \(list\): no backend claims"):
        L.Convolution2D(None, 2, 1)(np.zeros((1, 1, 2, 2)).tolist())


# ---------------------------------------------------------------------------
# Moving between backends
# ---------------------------------------------------------------------------


def test_to_backend_moves_parameters_and_training_works():
    """A numpy model moved with to_backend('array_api_strict') trains there: loss falls."""
    import array_api_strict as sx

    with pg.using_backend("numpy"):
        pg.seed(0)
        model = MLP()
        model(np.zeros((1, 3), dtype=np.float32))
    w_before = to_np(model.l1.W)
    assert model.to_backend("array_api_strict") is model
    for p in model.params():
        assert p.backend.name == "array_api_strict"
    np.testing.assert_array_equal(to_np(model.l1.W), w_before)

    rng = np.random.default_rng(0)
    x = sx.asarray(rng.standard_normal((8, 3)).astype(np.float32).tolist(), dtype=sx.float32)
    t = sx.asarray([0, 1] * 4, dtype=sx.int64)
    losses = []
    for _ in range(5):
        model.cleargrads()
        loss = F.softmax_cross_entropy(model(x), t)
        loss.backward()
        for p in model.params():
            assert p.grad is not None and type(p.grad) is type(x)
            p.data = p.data - 0.5 * p.grad
        losses.append(float(to_np(loss)))
    assert losses[-1] < losses[0]


def test_to_backend_moves_existing_grads(xp):
    """Gradients already computed move along with the parameters."""
    model = MLP()
    pg.sum(model(arr(xp, [[1.0, 2.0, 3.0]], "float32"))).backward()
    target = "numpy" if model.l1.W.backend.name == "array_api_strict" else "array_api_strict"
    model.to_backend(target)
    for p in model.params():
        assert pg.get_backend(target).array_types and isinstance(p.grad, pg.get_backend(target).array_types)


# ---------------------------------------------------------------------------
# Moving and copying children's persistent values (findings C2)
# ---------------------------------------------------------------------------


class Net(pg.Chain):
    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.l = L.Linear(3, 3)
            self.bn = L.BatchNormalization(3)

    def forward(self, x):
        return self.bn(self.l(x))


def _other(name):
    return "array_api_strict" if name == "numpy" else "numpy"


def test_chain_to_backend_moves_a_childs_running_statistics(xp, backend_name):
    """Chain.to_backend moves BatchNormalization's avg_mean and avg_var too; test mode then runs there."""
    net = Net()
    net(arr(xp, np.ones((4, 3)), "float32"))
    target = _other(backend_name)
    net.to_backend(target)
    types = pg.get_backend(target).array_types
    assert isinstance(net.bn.gamma.data, types)
    assert isinstance(net.bn.avg_mean, types) and isinstance(net.bn.avg_var, types)
    with pg.using_backend(target) as b, pg.test_mode():
        y = net(b.xp.ones((4, 3), dtype=b.xp.float32))
    assert isinstance(y.data, types)


def test_chain_to_backend_calls_a_childs_own_to_backend(xp, backend_name):
    """A child that overrides to_backend is moved its way (the Chain calls the child's method)."""
    moved = []

    class Custom(pg.Link):
        def to_backend(self, name):
            moved.append(name)
            return super().to_backend(name)

    pg.Chain(block=pg.Chain(c=Custom())).to_backend(_other(backend_name))
    assert moved == [_other(backend_name)]


def test_to_backend_makes_uninitialized_parameters_there(xp, backend_name):
    """Linear(None, 2, nobias=True) moved before its first call draws W on the new backend."""
    layer = L.Linear(None, 2, nobias=True)
    target = _other(backend_name)
    layer.to_backend(target)
    layer(pg.to_backend(xp.ones((1, 3), dtype=xp.float32), target))  # the current backend is still the old one
    assert isinstance(layer.W.data, pg.get_backend(target).array_types)


def test_copyparams_copies_parameters_and_running_statistics(xp):
    """copyparams (Chainer's) copies parameter values and persistent arrays; no array is shared afterwards."""
    src, dst = Net(), Net()
    src(arr(xp, [[1.0, 2.0, 3.0], [0.0, 5.0, 1.0]], "float32"))
    dst.copyparams(src)
    for (name, p), (_, q) in zip(dst.namedparams(), src.namedparams()):
        np.testing.assert_array_equal(to_np(p), to_np(q), err_msg=name)
        assert p.data is not q.data
    np.testing.assert_array_equal(to_np(dst.bn.avg_mean), to_np(src.bn.avg_mean))
    assert dst.bn.avg_mean is not src.bn.avg_mean


def test_batch_normalization_rebinds_its_running_statistics_and_every_consumer_reads_them(xp, backend_name,
                                                                                          tmp_path):
    """Running statistics are rebound at each training call, not updated in place (a standard
    array may be immutable): the old array is left alone, and saving, copying, copyparams,
    moving and test mode all read the values of the last call."""
    import copy

    from polygrad import serializers

    bn = L.BatchNormalization(2)
    held = bn.avg_mean
    for batch in ([[1.0, 2.0], [3.0, 6.0]], [[5.0, 0.0], [7.0, 2.0]]):
        bn(arr(xp, batch, "float32"))
    mean, var = to_np(bn.avg_mean), to_np(bn.avg_var)
    np.testing.assert_allclose(mean, [0.09 * 2 + 0.1 * 6, 0.09 * 4 + 0.1 * 1], rtol=1e-6)
    np.testing.assert_array_equal(to_np(held), [0.0, 0.0])
    serializers.save_npz(tmp_path / "bn.npz", bn)
    with np.load(tmp_path / "bn.npz") as f:
        np.testing.assert_array_equal(f["avg_mean"], mean)
    twin = L.BatchNormalization(2)
    twin.copyparams(bn)
    for other in (twin, copy.deepcopy(bn), bn.to_backend(_other(backend_name))):
        np.testing.assert_array_equal(to_np(other.avg_mean), mean)
        np.testing.assert_array_equal(to_np(other.avg_var), var)
    with pg.test_mode():
        y = twin(arr(xp, [[0.0, 0.0]], "float32"))
    np.testing.assert_allclose(to_np(y), [-mean / np.sqrt(var + 2e-5)], rtol=1e-5)


def test_copyparams_across_backends_keeps_the_targets_backend_and_dtype(backend_name):
    """Copying from a float64 link on another backend gives values on this link's backend, in its dtype."""
    with pg.using_backend(_other(backend_name)):
        src = L.Linear(2, 2, dtype="float64")
    with pg.using_backend(backend_name) as b:
        dst = L.Linear(2, 2)
        dst.copyparams(src)
        assert dst.W.dtype == b.xp.float32 and isinstance(dst.W.data, b.array_types)
    np.testing.assert_allclose(to_np(dst.W), to_np(src.W).astype(np.float32))


def test_copyparams_into_a_lazy_link_follows_its_backend_and_dtype(xp, backend_name):
    """Linear(None, 2, backend=other, dtype="float64") copying a float32 Linear(3, 2) gets W on its
    own backend in its own dtype, beside b, and runs (W had the source's backend and dtype)."""
    other = _other(backend_name)
    src = L.Linear(3, 2)
    dst = L.Linear(None, 2, dtype="float64", backend=other)
    dst.copyparams(src)
    b = pg.get_backend(other)
    assert isinstance(dst.W.data, b.array_types) and dst.W.dtype == b.xp.float64
    assert dst(pg.to_backend(xp.ones((1, 3), dtype=xp.float64), other)).shape == (1, 2)
    np.testing.assert_array_equal(to_np(dst.W), to_np(src.W).astype(np.float64))


def test_copyparams_refuses_another_structure(xp):
    """Copying from a link without the same children raises naming what is missing."""
    with pytest.raises(ValueError, match="no child link 'bn'"):
        Net().copyparams(pg.Chain(l=L.Linear(3, 3)))


@pytest.mark.parametrize("case", ["shape", "child", "persistent"])
def test_copyparams_that_fails_changes_nothing(xp, case):
    """copyparams checks everything before it copies: a mismatch in the last child raises and the
    earlier ones keep their values (link 'a' was overwritten before 'b' raised)."""
    pg.seed(0)
    src = pg.Chain(a=L.Linear(3, 4), b=L.Linear(4, 2), c=L.BatchNormalization(2))
    src.c.avg_mean = src.c.avg_mean + 1
    pg.seed(1)
    dst = pg.Chain(a=L.Linear(3, 4), b=L.Linear(4, 2), c=L.BatchNormalization(2))
    if case == "shape":
        dst.c = L.BatchNormalization(3)
    elif case == "child":
        dst.add_link("d", L.Linear(2, 2))
    else:
        del src.c.avg_var
    before = {name: to_np(p) for name, p in dst.namedparams()}
    mean_before = to_np(dst.c.avg_mean)
    with pytest.raises(ValueError, match="copyparams"):
        dst.copyparams(src)
    for name, p in dst.namedparams():
        np.testing.assert_array_equal(to_np(p), before[name], err_msg=name)
    np.testing.assert_array_equal(to_np(dst.c.avg_mean), mean_before)


def test_chain_add_link_registers_a_child(xp):
    """Chain.add_link(name, link) is assigning it inside init_scope (Chainer's)."""
    chain = pg.Chain()
    chain.add_link("l1", L.Linear(2, 3))
    assert [n for n, _ in chain.namedparams()] == ["/l1/W", "/l1/b"]
    with pytest.raises(TypeError, match="needs a Link"):
        chain.add_link("f", F.relu)


# ---------------------------------------------------------------------------
# Initial values and addgrads, as Chainer 7.8.1 has them
# ---------------------------------------------------------------------------
def test_a_scalar_initial_value_fills_the_parameter():
    """A number as initialW or initial_bias is Chainer's constant initializer: it fills the
    parameter's shape. It made a 0-d parameter: Linear(3, 2, initial_bias=0.7) had 7
    parameters, its forward broadcast silently and its backward failed."""
    lin = L.Linear(3, 2, initialW=0.5, initial_bias=0.7)
    assert lin.W.shape == (2, 3) and lin.b.shape == (2,) and lin.count_params() == 8
    x = pg.Variable(np.ones((4, 3), "float32"))
    F.sum(lin(x) * pg.Variable(np.array([[1, 0]] * 4, "float32"))).backward()
    np.testing.assert_allclose(lin(x).data, np.full((4, 2), 2.2, "float32"), rtol=1e-6)
    np.testing.assert_array_equal(lin.b.grad, [4.0, 0.0])
    conv = L.Convolution2D(1, 2, 2, initialW=1.0, initial_bias=0.3)
    assert conv.W.shape == (2, 1, 2, 2) and conv.b.shape == (2,)
    assert L.EmbedID(3, 2, initialW=1.5).W.shape == (3, 2)
    lazy = L.Linear(None, 2, initialW=0.5)
    assert lazy(x).shape == (4, 2) and lazy.W.shape == (2, 3)


def test_an_initial_array_is_broadcast_and_copied():
    """An array broadcasts into the parameter's shape (Chainer fills with it); one that does not
    fit is refused naming the link and the argument. The caller's array is never the parameter
    (an update would write into it)."""
    row = np.ones((1, 3), "float32")
    lin = L.Linear(3, 2, initialW=row)
    assert lin.W.shape == (2, 3)
    full = np.arange(6, dtype="float32").reshape(2, 3)
    lin = L.Linear(3, 2, initialW=full)
    lin.W.data[0, 0] = 42.0
    assert full[0, 0] == 0.0
    with pytest.raises(ValueError, match=r"Linear: initialW.*\(3, 2\).*\(2, 3\)"):
        L.Linear(3, 2, initialW=np.ones((3, 2), "float32"))
    with pytest.raises(ValueError, match=r"Convolution2D: initial_bias.*\(3,\).*\(2,\)"):
        L.Convolution2D(1, 2, 2, initial_bias=np.ones(3, "float32"))
    with pytest.raises(TypeError, match="EmbedID: initialW takes a number or an array"):
        L.EmbedID(3, 2, initialW=lambda shape: None)


def test_addgrads_adds_another_links_gradients():
    """Chainer's Link.addgrads (summing the gradients of copies of a model) was missing."""
    x = pg.Variable(np.ones((3, 2), "float32"))
    a, b = L.Linear(2, 2), L.Linear(2, 2)
    F.sum(a(x)).backward()
    F.sum(b(x) * 2).backward()
    before = a.W.grad.copy(), a.b.grad.copy()
    a.addgrads(b)
    np.testing.assert_allclose(a.W.grad, before[0] + b.W.grad)
    np.testing.assert_allclose(a.b.grad, before[1] + b.b.grad)
    fresh = L.Linear(2, 2)
    fresh.addgrads(b)
    np.testing.assert_allclose(fresh.W.grad, b.W.grad)
    assert fresh.W.grad is not b.W.grad
    kept = a.W.grad.copy()
    with pytest.raises(ValueError, match=r"addgrads: /W of Linear has an array of float32 \(3, 2\), here it is "
                       r"float32 \(2, 2\)"):
        a.addgrads(L.Linear(2, 3))
    with pytest.raises(ValueError, match=r"missing \['/b'\]"):
        a.addgrads(L.Linear(2, 2, nobias=True))
    np.testing.assert_array_equal(a.W.grad, kept)


def test_addgrads_into_a_link_registered_twice_adds_each_names_gradient():
    """A child registered under two names (a tied layer) gets the other model's gradient under
    each name, as in Chainer (p.addgrad per name): the all-or-nothing sums were made per name
    from the old gradient, and the last name's replaced the first's."""
    mine, other = pg.Chain(), pg.Chain()
    shared = L.Linear(2, 2)
    with mine.init_scope():
        mine.a, mine.b = shared, shared
    with other.init_scope():
        other.a, other.b = L.Linear(2, 2), L.Linear(2, 2)
    for _, p in mine.namedparams():
        p.grad = np.ones(p.shape, np.float32)
    for _, q in other.namedparams():
        q.grad = np.full(q.shape, 10.0, np.float32)
    mine.addgrads(other)
    np.testing.assert_array_equal(shared.W.grad, np.full((2, 2), 21.0, np.float32))


def test_addgrads_checks_dtype_kinds_before_adding_and_keeps_its_dtypes():
    """A gradient of another kind (complex into real) was refused only when its turn came, after
    the parameters before it had theirs added, by an error that named neither addgrads nor dtypes."""

    class Pair(pg.Link):
        def __init__(self, dtype):
            super().__init__(a=pg.Variable(np.zeros(2, "float32")), b=pg.Variable(np.zeros(2, dtype)))

    mine, theirs = Pair("float32"), Pair("complex64")
    mine.zerograds()
    theirs.a.grad, theirs.b.grad = np.ones(2, "float32"), np.ones(2, "complex64")
    with pytest.raises(ValueError, match=r"addgrads: /b of Pair has a gradient of complex64 \(2,\), here it is "
                       r"float32 \(2,\)"):
        mine.addgrads(theirs)
    np.testing.assert_array_equal(mine.a.grad, [0.0, 0.0])
    wide = Pair("float64")
    wide.a.grad, wide.b.grad = np.ones(2, "float32"), np.full(2, 0.5, "float64")
    mine.addgrads(wide)  # another precision: added into this gradient, which keeps its dtype
    assert mine.a.grad.dtype == np.float32 and mine.b.grad.dtype == np.float32
    np.testing.assert_array_equal(mine.b.grad, [0.5, 0.5])


# ---------------------------------------------------------------------------
# The Link object API against Chainer 7.8.1's (silent differences found by a hunt)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("src, dst", [("float64", "int64"), ("complex128", "float64"), ("int64", "bool")])
def test_copyparams_refuses_a_dtype_of_a_higher_kind(src, dst):
    """copyparams truncated floats into an integer parameter ([1.7, -2.5] -> [1, -2]), dropped
    imaginary parts and made bools of integers; Chainer and load_npz refuse such copies."""
    source = pg.Link(w=pg.Variable(np.array([1.7, -2.5]).astype(src), requires_grad=False))
    target = pg.Link(w=pg.Variable(np.zeros(2, dtype=dst), requires_grad=False))
    with pytest.raises(TypeError, match="copyparams: parameter '/w' holds .* cannot take without changing"):
        target.copyparams(source)
    np.testing.assert_array_equal(target.w.data, np.zeros(2, dtype=dst))


def test_link_keywords_take_variables_only():
    """pg.Link(W=(3, 2), b=3), Chainer's shapes, made plain attributes and no parameter (an optimizer
    then updated nothing)."""
    with pytest.raises(TypeError, match=r"Link\(W=...\) takes a Variable"):
        pg.Link(W=(3, 2), b=3)


def test_copyparams_from_a_link_not_initialized_yet_is_refused():
    """The target kept its own values, so the two links differed after copyparams."""
    source, target = L.Linear(None, 2), L.Linear(3, 2)
    before = target.W.data.copy()
    with pytest.raises(ValueError, match="parameter 'W' of Linear is not initialized yet"):
        target.copyparams(source)
    np.testing.assert_array_equal(target.W.data, before)


def test_copyparams_copies_persistent_lists_and_dicts():
    """A list persistent value was shared by the two links after copyparams."""
    a, b = pg.Link(), pg.Link()
    a.add_persistent("history", [1, 2])
    b.add_persistent("history", [])
    b.copyparams(a)
    b.history.append(3)
    assert a.history == [1, 2] and b.history == [1, 2, 3]


def test_names_of_one_kind_are_not_taken_by_another():
    """add_persistent over a child link's name broke the chain for good; a link assigned over a
    parameter's name made params() list the link itself; Chainer refuses each."""
    chain = pg.Chain(l1=L.Linear(2, 2))
    with pytest.raises(AttributeError, match="already has an attribute of that name"):
        chain.add_persistent("l1", 0)
    assert isinstance(chain.l1, L.Linear)
    with chain.init_scope():
        chain.w = pg.Variable(np.ones(2))
        with pytest.raises(AttributeError, match="cannot register link 'w'"):
            chain.w = L.Linear(2, 2)
        with pytest.raises(AttributeError, match="cannot register parameter 'l1'"):
            chain.l1 = pg.Variable(np.ones(2))
    assert all(isinstance(p, pg.Variable) for p in chain.params())
    assert len(list(chain.params())) == 3


@pytest.mark.parametrize("make, bad, good", [
    (lambda: L.Convolution2D(None, 4, 3), np.zeros((5, 8, 8), np.float32), np.zeros((2, 5, 8, 8), np.float32)),
    (lambda: L.Linear(None, 4), np.zeros((6,), np.float32), np.zeros((2, 6), np.float32)),
])
def test_a_failing_first_call_leaves_a_lazy_layer_uninitialized(make, bad, good):
    """A 3-D input to Convolution2D(None, ...) drew W for the image height and the call failed;
    every later call of the right shape then failed too (Chainer leaves W uninitialized)."""
    layer = make()
    with pytest.raises(Exception):
        layer(bad)
    assert layer.W.data is None
    assert layer(good).shape[0] == 2


def test_a_failing_first_call_leaves_layer_normalization_uninitialized():
    """LayerNormalization(size=None) kept gamma and beta of a refused first input's shape (a 1-D x
    gave (), "gamma of shape () does not match", a gamma never passed), and every later (N, D)
    input failed; a 1-D x is now refused naming the link and x, and a first call that fails after
    drawing them (here x on another backend) leaves both uninitialized, as Linear leaves W."""
    layer = L.LayerNormalization()
    with pytest.raises(ValueError, match=r"links.LayerNormalization: size=None .* x of shape \(5,\) has none"):
        layer(np.ones(5, np.float32))
    assert layer.gamma.data is None and layer.beta.data is None
    assert layer(np.ones((2, 5), np.float32)).shape == (2, 5) and layer.gamma.shape == (5,)
    strict = L.LayerNormalization(backend="array_api_strict")
    with pytest.raises(TypeError, match="two backends"):
        strict(np.ones((2, 4), np.float32))
    assert strict.gamma.data is None and strict.beta.data is None
    assert strict(pg.asarray([[1.0, 2.0, 4.0]], backend="array_api_strict")).shape == (1, 3)


def test_normalization_links_take_numpy_integer_sizes():
    """size=np.int64(3) (from np.prod, say) was "'numpy.int64' object is not iterable"; L.Linear took
    it. Sizes go through the same check (polygrad.links._size), an int or a sequence of them."""
    for cls in (L.BatchNormalization, L.LayerNormalization):
        assert cls(np.int64(3)).gamma.shape == (3,)
        assert cls((np.int32(2), 3)).beta.shape == (2, 3)


@pytest.mark.parametrize("cls", [L.BatchNormalization, L.LayerNormalization])
@pytest.mark.parametrize("size, error, message", [
    (-3, ValueError, "size must be an int of at least 0, got -3"),
    (3.0, TypeError, "size must be an int or a sequence of ints, got 3.0"),
    ((3, 2.0), TypeError, "size must be an int, got 2.0"),
    (True, TypeError, "size must be an int, got the bool True"),
    ("3", TypeError, "size must be an int or a sequence of ints, got '3'"),
])
def test_normalization_links_refuse_bad_sizes_naming_the_link(cls, size, error, message):
    """A float or negative size failed with "'float' object is not iterable" or numpy's "negative
    dimensions are not allowed", naming neither the link nor size."""
    with pytest.raises(error, match=rf"polygrad.links.{cls.__name__}: {message}"):
        cls(size)


def test_batchnormalization_refuses_size_none_naming_the_link():
    """BatchNormalization(None), Chainer's size taken at the first call, was "'NoneType' object is not
    iterable" (docs/migration.md said an AttributeError); now a TypeError naming the link and size."""
    with pytest.raises(TypeError, match=r"polygrad.links.BatchNormalization: size=None .* not supported"):
        L.BatchNormalization(None)


def test_sequential_insert_out_of_range_is_refused():
    """list.insert clamps: s.insert(10, f) on a Sequential of one layer appended f, and a large
    negative index prepended it, where Chainer's Sequential raises IndexError."""
    import polygrad.functions as F

    s = pg.Sequential(F.relu)
    for index in (10, 2, -2):
        with pytest.raises(IndexError, match=rf"Sequential.insert: index {index} is out of range for 1 layers"):
            s.insert(index, F.tanh)
    assert len(s) == 1
    s.insert(1, F.tanh)
    s.insert(-2, F.sigmoid)
    assert [layer.__name__ for layer in s] == ["sigmoid", "relu", "tanh"]


@pytest.mark.parametrize("dtype", ["int32", "bool"])
def test_batch_normalization_refuses_a_dtype_that_cannot_hold_running_averages(dtype):
    """BatchNormalization(3, dtype=int32) made int32 running averages: every update (0.9 * 0 + 0.1 * 1)
    was cast to 0, silently and for good; Chainer's BN accepts floating inputs only."""
    with pytest.raises(TypeError, match=f"BatchNormalization: dtype must be a real floating dtype.*got {dtype}"):
        L.BatchNormalization(3, dtype=dtype)


def test_a_parameter_that_is_no_leaf_is_refused_where_it_is_registered():
    """`self.w = pg.Variable(a) * 0.5` in init_scope was registered, and pg.optimizers never updated it (no
    gradient is kept for an intermediate: a zero one was filled in) until a second step raised about backward
    twice, naming neither the parameter nor the cause. Refused, naming the link, the attribute and the op."""

    class Scale(pg.Link):
        def __init__(self):
            super().__init__()
            with self.init_scope():
                self.w = pg.Variable(np.array([1.0, 2.0])) * 0.5

    with pytest.raises(ValueError, match=r"parameter 'w' of Scale is not a leaf \(it was computed by multiply\)"):
        Scale()
    with pytest.raises(ValueError, match=r"parameter 'W' of Link is not a leaf \(it was computed by add\)"):
        pg.Link(W=pg.Variable(np.array([1.0])) + 1)
    link = pg.Link(W=pg.Variable(np.array([1.0])))
    with pytest.raises(ValueError, match=r"parameter 'W' of Link is not a leaf"):
        link.W = link.W * 2  # outside init_scope, replacing a parameter
    assert link.W.is_leaf
    with pg.no_backprop_mode():  # the hint's way
        pg.Link(W=pg.Variable(np.array([1.0])) * 0.5)


def test_copyparams_shape_error_names_the_parameter_by_its_path(xp):
    """copyparams' shape error said only "shape (5, 2) does not match (4, 2)", though it had the name."""
    dst = pg.Chain(l1=L.Linear(2, 3), l2=L.Linear(2, 4))
    src = pg.Chain(l1=L.Linear(2, 3), l2=L.Linear(2, 5))
    with pytest.raises(ValueError, match=r"copyparams: parameter '/l2/W' of the other link has shape \(5, 2\), "
                                         r"this link's \(4, 2\)"):
        dst.copyparams(src)


def test_to_backend_and_addgrads_errors_name_the_parameter():
    """to_backend and addgrads failing to move one array named neither the parameter nor the link path."""
    m = pg.Chain(l1=L.Linear(2, 3), l2=L.Linear(2, 3, dtype="float16"))
    with pytest.raises(TypeError, match=r"to_backend\('array_api_strict'\): moving parameter '/l2/W' failed"):
        m.to_backend("array_api_strict")
    mine = pg.Chain(l1=L.Linear(2, 3), l2=L.Linear(2, 3)).to_backend("array_api_strict")
    for p in m.params():
        p.grad = np.ones(p.shape, p.data.dtype)
    with pytest.raises(TypeError, match=r"addgrads: adding Chain's gradient of /l2/W failed"):
        mine.addgrads(m)


class _CountingBN(L.BatchNormalization):
    """A class-level _persistent list beside the add_persistent of BatchNormalization."""

    _persistent = ["n_batches"]

    def __init__(self, size):
        super().__init__(size)
        self.n_batches = 0

    def forward(self, x):
        self.n_batches += 1
        return super().forward(x)


def test_a_class_level_persistent_list_is_kept_beside_add_persistent(xp, backend_name, tmp_path):
    """add_persistent made a list of the link's own that hid the class's: n_batches was no longer
    saved, loaded, moved or copied (a resumed run restarted it at 0)."""
    from polygrad import serializers

    bn = _CountingBN(2)
    for _ in range(3):
        bn(arr(xp, [[1.0, 2.0], [3.0, 4.0]], "float32"))
    serializers.save_npz(tmp_path / "bn.npz", bn)
    with np.load(tmp_path / "bn.npz") as f:
        assert sorted(f.files) == ["avg_mean", "avg_var", "beta", "gamma", "n_batches"]
    resumed = _CountingBN(2)
    serializers.load_npz(tmp_path / "bn.npz", resumed)
    assert resumed.n_batches == 3
    twin = _CountingBN(2)
    twin.copyparams(bn)
    assert twin.n_batches == 3
    del twin.n_batches  # forgets it for this link only
    assert "n_batches" not in twin._persistent and _CountingBN._persistent == ["n_batches"]
    assert "n_batches" in _CountingBN(2)._persistent
    bn.n_batches = pg.asarray(xp.asarray([1, 2]))  # a Variable assigned to it is kept as its array
    assert not isinstance(bn.n_batches, pg.Variable)
    bn.to_backend(_other(backend_name))
    assert isinstance(bn.n_batches, pg.get_backend(_other(backend_name)).array_types)


def test_copyparams_into_a_lazy_layer_refuses_another_out_size():
    """Linear(None, 5).copyparams(Linear(4, 3)) took W of shape (3, 4): a layer of 3 features."""
    dst = pg.Chain(a=L.Linear(2, 2), l=L.Linear(None, 5, nobias=True))
    before = dst.a.W.data.copy()
    with pytest.raises(ValueError, match=r"copyparams: parameter '/l/W': an array of shape \(3, 4\) does not fit "
                                         r"W of Linear, of shape \(5, None\)"):
        dst.copyparams(pg.Chain(a=L.Linear(2, 2), l=L.Linear(4, 3, nobias=True)))
    assert dst.l.W.data is None
    np.testing.assert_array_equal(dst.a.W.data, before)
    dst.copyparams(pg.Chain(a=L.Linear(2, 2), l=L.Linear(4, 5, nobias=True)))
    assert dst.l.W.shape == (5, 4)

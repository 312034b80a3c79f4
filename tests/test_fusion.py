"""Fused elementwise kernels (``polygrad_fuse_elementwise``) agree with the same program run
node by node: every fusable row, forward and backward, float32 and float64, broadcasting and
scalar constants, on numpy (numexpr) and dask (one blockwise layer)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import polygrad as pg
import polygrad.functions as F
from polygrad import symbolic as T
from polygrad.compile import fusion
from polygrad.core.op import REGISTRY

pytest.importorskip("numexpr")
da = pytest.importorskip("dask.array")

NUMPY_SHAPE, DASK_SHAPE, DASK_CHUNKS = (16, 256), (6, 50), (4, 20)


@pytest.fixture(autouse=True)
def fuse_small_arrays(monkeypatch):
    """The numpy plugin fuses arrays of any size here (it declines small ones: MIN_BYTES)."""
    from polygrad_numpy import fuse

    monkeypatch.setattr(fuse, "MIN_BYTES", 0)

DOMAINS = {"positive": (0.5, 2.0), "unit": (-0.9, 0.9), "acosh": (1.1, 3.0), "tan": (-1.2, 1.2)}
UNARY_DOMAIN = {"log": "positive", "log10": "positive", "log1p": "positive", "log2": "positive", "sqrt": "positive",
                "acos": "unit", "asin": "unit", "atanh": "unit", "acosh": "acosh", "tan": "tan"}
BINARY_FLOAT = ["add", "subtract", "multiply", "divide", "pow", "atan2", "hypot", "logaddexp", "maximum", "minimum",
                "copysign", "nextafter", "remainder", "floor_divide"]
COMPARE = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]
PREDICATES = ["isfinite", "isinf", "isnan", "signbit"]
LOGICAL = ["logical_and", "logical_or", "logical_xor"]
INTEGER = ["bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift"]
SPECIAL = ["clip", "where", "astype", "logical_not", "bitwise_invert"]
UNARY_FLOAT = sorted(set(fusion.elementwise_rows()) - set(BINARY_FLOAT + COMPARE + PREDICATES + LOGICAL + INTEGER + SPECIAL))


def fn_of(name):
    return getattr(pg, name, None) or getattr(F, name)


def sample(rng, shape, dtype, domain=None, nonzero=False):
    lo, hi = DOMAINS.get(domain, (-2.0, 2.0))
    x = rng.uniform(lo, hi, shape)
    if nonzero:
        x = np.where(np.abs(x) < 0.25, 0.5, x)
    return x.astype(dtype)


def case(name, dtype, shape, rng):
    """(inputs, values, output expressions) exercising row ``name`` inside a fusable group."""
    if name in INTEGER or name == "bitwise_invert":
        idt = {"float32": "int32", "float64": "int64"}[dtype]
        x, y = T.tensor(idt, (None, None), "x"), T.tensor(idt, (None,), "y")
        xv = rng.integers(0, 64, shape).astype(idt)
        yv = rng.integers(0, 5, shape[-1:]).astype(idt)
        if name == "bitwise_invert":
            return [x], [xv], [pg.bitwise_invert(x) * 3 + 1]
        return [x, y], [xv, yv], [fn_of(name)(x, y) * 3 + 1]
    x, y = T.tensor(dtype, (None, None), "x"), T.tensor(dtype, (None,), "y")
    if name in LOGICAL or name == "logical_not":
        xv, yv = sample(rng, shape, dtype), sample(rng, shape[-1:], dtype)
        if name == "logical_not":
            return [x], [xv], [pg.where(pg.logical_not(x > 0), x, 0.5) * 2]
        return [x, y], [xv, yv], [pg.where(fn_of(name)(x > 0, y < 0.5), x, 0.5) * 2]
    if name in PREDICATES:
        xv = sample(rng, shape, dtype)
        xv.flat[::7] = np.inf
        xv.flat[::11] = np.nan
        xv.flat[::13] = -0.0
        return [x], [xv], [pg.where(fn_of(name)(x * 2), 1.5, x) + 1]
    if name in COMPARE:
        xv, yv = sample(rng, shape, dtype), sample(rng, shape[-1:], dtype)
        xv[:, :7] = yv[:7]  # some ties
        return [x, y], [xv, yv], [pg.where(fn_of(name)(x, y), x, y) * 2, pg.where(fn_of(name)(x, 0.25), x * 3, 1.0)]
    if name in BINARY_FLOAT:
        xv = sample(rng, shape, dtype, "positive" if name == "pow" else None)
        yv = sample(rng, shape[-1:], dtype, nonzero=name in ("divide", "remainder", "floor_divide"))
        r = fn_of(name)(x, y)
        outs = [r * 2 + 1]
        if name not in ("floor_divide", "nextafter", "copysign"):
            c = pg.sum(r * x)
            outs += T.grad(c, [x, y])
        return [x, y], [xv, yv], outs
    if name == "clip":
        xv = sample(rng, shape, dtype)
        r = pg.clip(x * 2, -0.5, 0.75)
        return [x], [xv], [r + 1, T.grad(pg.sum(r * r), x)]
    if name == "where":
        xv, yv = sample(rng, shape, dtype), sample(rng, shape[-1:], dtype)
        r = pg.where(x > y, x * 2, y)
        return [x, y], [xv, yv], [r - 1, *T.grad(pg.sum(r * x), [x, y])]
    if name == "astype":
        xv = sample(rng, shape, dtype)
        mask = pg.astype(x > 0, getattr(np, dtype))
        return [x], [xv], [mask * x + 1]
    xv = sample(rng, shape, dtype, UNARY_DOMAIN.get(name))
    r = fn_of(name)(x)
    outs = [r * 2 + 1]
    if REGISTRY[name].differentiable:
        outs.append(T.grad(pg.sum(r * x), x))
    return [x], [xv], outs


def run_both(inputs, values, outs, monkeypatch):
    fused = pg.function(inputs, outs)
    got = fused(*values)
    monkeypatch.setattr(fusion, "ENABLED", False)
    plain = pg.function(inputs, outs)
    want = plain(*values)
    monkeypatch.setattr(fusion, "ENABLED", True)
    return fused, got, want


def assert_agree(got, want, dtype):
    eps = np.finfo(dtype).eps
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        if np.issubdtype(w.dtype, np.floating):
            finite = np.abs(w[np.isfinite(w)])
            scale = max(1.0, float(finite.max())) if finite.size else 1.0
            np.testing.assert_allclose(g, w, rtol=16 * eps, atol=16 * eps * scale)
        else:
            np.testing.assert_array_equal(g, w)


ROWS = sorted(fusion.elementwise_rows())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ROWS)
def test_numpy_fused_row_agrees(name, dtype, monkeypatch):
    """Each fusable row inside a fused group on numpy gives the unfused program's values and dtypes."""
    inputs, values, outs = case(name, dtype, NUMPY_SHAPE, np.random.default_rng(0))
    fn, got, want = run_both(inputs, values, outs, monkeypatch)
    assert "fused" in fn.program_source()
    assert_agree(got, want, dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ROWS)
def test_dask_fused_row_agrees(name, dtype, monkeypatch):
    """Each fusable row inside a fused blockwise layer on dask gives the unfused program's values."""
    inputs, values, outs = case(name, dtype, DASK_SHAPE, np.random.default_rng(1))
    values = [da.from_array(v, chunks=DASK_CHUNKS[-v.ndim:]) for v in values]
    fn, got, want = run_both(inputs, values, outs, monkeypatch)
    assert "fused" in fn.program_source()
    assert_agree(got, want, dtype)


def test_elementwise_case_is_one_fused_kernel():
    """sum(tanh(x) x + exp(-x x)) with its gradient: one fused kernel and the sum, exact to rounding."""
    x = T.vector("x")
    cost = pg.sum(pg.tanh(x) * x + pg.exp(-x * x))
    fn = pg.function([x], [cost, T.grad(cost, x)])
    x0 = np.random.default_rng(0).standard_normal(100_000)
    c, g = fn(x0)
    kernels = [op.name for op, *_ in next(iter(fn._programs.values())).instrs]
    assert len(kernels) == 2 and kernels[0].startswith("fused") and kernels[1] == "sum"
    t, e = np.tanh(x0), np.exp(-x0 * x0)
    np.testing.assert_allclose(g, x0 * (1 - t * t) + t - 2 * x0 * e, rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(c, np.sum(t * x0 + e), rtol=1e-12)


def test_relu_backward_is_one_pass():
    """The mask of ReLU's backward (compare, cast) is fused with the multiply by the gradient."""
    x = T.matrix("x", dtype="float32")
    W = pg.shared(np.random.default_rng(0).standard_normal((256, 256)).astype(np.float32))
    cost = pg.sum((F.relu(x @ W) @ W) ** 2)  # the gradient reaching relu depends on its output
    fn = pg.function([x], T.grad(cost, W))
    fn(np.random.default_rng(1).standard_normal((256, 256)).astype(np.float32))
    assert "fused greater, astype, multiply" in fn.program_source()
    assert "# relu" in fn.program_source()


def test_scalar_constants_are_weak():
    """A Python float times a float32 array stays float32 in the fused kernel, as NumPy types it."""
    x = T.tensor("float32", (None,), "x")
    fn = pg.function([x], (x * 0.1 + 0.3) / 0.7)
    xv = np.linspace(-1, 1, 40_000, dtype=np.float32)
    r = fn(xv)
    assert "fused" in fn.program_source() and r.dtype == np.float32
    np.testing.assert_array_equal(r, (xv * np.float32(0.1) + np.float32(0.3)) / np.float32(0.7))


def test_broadcasting_inside_a_group():
    """A bias of shape (n,) and a column of shape (m, 1) broadcast inside one fused kernel."""
    x, b, c = T.matrix("x"), T.vector("b"), T.matrix("c")
    fn = pg.function([x, b, c], pg.maximum(x + b, 0.0) * c - b)
    rng = np.random.default_rng(0)
    xv, bv, cv = rng.standard_normal((300, 200)), rng.standard_normal(200), rng.standard_normal((300, 1))
    r = fn(xv, bv, cv)
    assert "fused" in fn.program_source()
    np.testing.assert_array_equal(r, np.maximum(xv + bv, 0.0) * cv - bv)


def test_nan_and_signed_zero_follow_numpy():
    """maximum, minimum and relu keep NumPy's NaN propagation and its choice on ties of signed zeros."""
    x, y = T.vectors("xy")
    fn = pg.function([x, y], [pg.maximum(x, y) * 1.5, pg.minimum(x, y) * 1.5, F.relu(x) * 1.5])
    xv = np.tile([np.nan, 1.0, -0.0, 0.0, -1.0, np.inf], 8000)
    yv = np.tile([1.0, np.nan, 0.0, -0.0, -np.inf, 2.0], 8000)
    got = fn(xv, yv)
    assert "fused" in fn.program_source()
    want = [np.maximum(xv, yv) * 1.5, np.minimum(xv, yv) * 1.5, np.maximum(xv, 0.0) * 1.5]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(np.signbit(g), np.signbit(w))


def test_cache_sized_arrays_are_not_fused_on_numpy(monkeypatch):
    """Between the tiny size and the numpy plugin's threshold a group is declined (NumPy's
    vectorized loops beat numexpr there) and runs node by node."""
    from polygrad_numpy import fuse

    monkeypatch.setattr(fuse, "MIN_BYTES", 4 * 2**20)
    x = T.vector("x")
    fn = pg.function([x], pg.tanh(x) * 2 + 1)
    xv = np.linspace(-1, 1, 4096)
    assert xv.nbytes > fuse.TINY_BYTES
    np.testing.assert_allclose(fn(xv), np.tanh(xv) * 2 + 1)
    assert "fused" not in fn.program_source()


def tiny_kernel(fn):
    """The fused kernel of a compiled function's only program."""
    (program,) = fn._programs.values()
    kernels = [impl for op, impl, *_ in program.instrs if op.name.startswith("fused")]
    assert len(kernels) == 1, fn.program_source()
    return kernels[0]


def test_tiny_arrays_are_fused_into_few_numexpr_calls(monkeypatch):
    """On arrays of a few hundred bytes every call is overhead: a whole expression, transcendental
    functions included, is one numexpr call."""
    from polygrad_numpy import fuse

    monkeypatch.setattr(fuse, "MIN_BYTES", 4 * 2**20)
    x = T.vector("x")
    fn = pg.function([x], pg.tanh(x) * 2 + 1)
    xv = np.linspace(-1, 1, 10)
    np.testing.assert_allclose(fn(xv), np.tanh(xv) * 2 + 1, rtol=0, atol=16 * np.finfo(float).eps)
    assert "fused tanh, multiply, add" in fn.program_source()
    assert tiny_kernel(fn).steps == 1


def test_tiny_chain_computes_each_shared_value_once(monkeypatch):
    """A value read by several expressions gets an array; one read twice inside one expression
    is inlined (numexpr computes it once): the backward of ``y + sin(y) * 0.01`` takes several
    steps per numexpr call, the forward one per step (each ``y`` is read by the backward too)."""
    from polygrad_numpy import fuse

    monkeypatch.setattr(fuse, "MIN_BYTES", 4 * 2**20)
    x = T.vector("x")
    y = x
    for _ in range(12):
        y = y + pg.sin(y) * 0.01
    cost = pg.sum(y)
    fn = pg.function([x], [cost, T.grad(cost, x)])
    xv = np.random.default_rng(0).standard_normal(10)
    c, g = fn(xv)
    monkeypatch.setattr(fusion, "ENABLED", False)
    c0, g0 = pg.function([x], [cost, T.grad(cost, x)])(xv)
    assert_agree([c, g], [c0, g0], "float64")
    steps = tiny_kernel(fn).steps
    assert 12 < steps <= 12 + 6, steps  # 12 forward steps, the 12 backward steps in few calls
    lines = tiny_kernel(fn).source.splitlines()
    assert sum("sin(" in line for line in lines) == 12 and sum("cos(" in line for line in lines) <= 6


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ROWS)
def test_numpy_tiny_fused_row_agrees(name, dtype, monkeypatch):
    """Each fusable row on tiny arrays (numexpr for every expression, transcendental functions
    included) gives the unfused program's values and dtypes."""
    from polygrad_numpy import fuse

    monkeypatch.setattr(fuse, "MIN_BYTES", 4 * 2**20)
    inputs, values, outs = case(name, dtype, (3, 8), np.random.default_rng(2))
    fn, got, want = run_both(inputs, values, outs, monkeypatch)
    assert_agree(got, want, dtype)


def test_random_rows_are_never_fused():
    """Dropout's mask stays its own kernel, however elementwise its neighbours."""
    pg.seed(0)
    x = T.vector("x")
    fn = pg.function([x], F.dropout(x * 2 + 1, 0.5) * 3 + 1)
    r = fn(np.ones(50_000))
    assert "# dropout_mask" in fn.program_source()
    assert set(np.unique(r)) <= {1.0, 19.0}


def test_fused_results_never_alias_arguments():
    """The outputs of a fused program are new arrays; the caller's arrays are left as they were."""
    x = T.vector("x")
    fn = pg.function([x], [x * 1.0 + 0.0, (x * 2) * 3 + x])
    xv = np.linspace(-1, 1, 50_000)
    keep = xv.copy()
    a, b = fn(xv)
    assert a is not xv and not np.shares_memory(a, xv) and not np.shares_memory(b, xv)
    np.testing.assert_array_equal(xv, keep)
    np.testing.assert_array_equal(b, xv * 2 * 3 + xv)


def test_dask_outputs_of_different_shapes_are_declined():
    """On dask a group whose outputs differ in shape runs unfused, with the same values."""
    x, y = T.vector("x"), T.matrix("y")
    h = pg.tanh(x) * 2
    fn = pg.function([x, y], [h + 1, h * y])
    xv, yv = np.linspace(-1, 1, 40), np.ones((3, 40))
    a, b = fn(da.from_array(xv, chunks=20), da.from_array(yv, chunks=(3, 20)))
    np.testing.assert_allclose(a, np.tanh(xv) * 2 + 1)
    np.testing.assert_allclose(b, np.tanh(xv) * 2 * yv)


def test_fusion_off_runs_node_by_node(monkeypatch):
    """With fusion off (POLYGRAD_FUSION=0 or polygrad.compile.fusion.ENABLED) no kernel is fused."""
    monkeypatch.setattr(fusion, "ENABLED", False)
    x = T.vector("x")
    fn = pg.function([x], pg.tanh(x) * 2 + 1)
    fn(np.linspace(-1, 1, 50_000))
    assert "fused" not in fn.program_source()


class _Hook:
    """A relay whose polygrad_fuse_elementwise raises."""

    def __init__(self):
        self.calls = 0

    def polygrad_fuse_elementwise(self, **kwargs):
        self.calls += 1
        raise RuntimeError("boom")


def test_a_fuse_hook_that_raises_warns_once_and_declines():
    """A plugin whose fuse hook raises is reported with a PluginWarning; its groups run unfused."""
    from polygrad._registry import Backend
    from polygrad.hookspecs import BackendInfo, PluginWarning

    hook = _Hook()
    backend = Backend(BackendInfo(name="broken", module="numpy"), hook, origin="plugin 'broken'")
    with pytest.warns(PluginWarning, match="polygrad_fuse_elementwise raised RuntimeError: boom"):
        assert backend.fuse_elementwise((), (), ()) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert backend.fuse_elementwise((), (), ()) is None
    assert hook.calls == 1


def test_relu_mask_on_small_arrays_needs_no_float_mask(monkeypatch):
    """Below the threshold the numpy plugin still fuses ReLU's backward mask into the multiply
    (NumPy casts the boolean inside the ufunc), with the same values."""
    from polygrad_numpy import fuse

    monkeypatch.setattr(fuse, "MIN_BYTES", 4 * 2**20)
    x = T.matrix("x", dtype="float32")
    W = pg.shared(np.random.default_rng(0).standard_normal((128, 128)).astype(np.float32))
    cost = pg.sum((F.relu(x @ W) @ W) ** 2)
    xv = np.random.default_rng(1).standard_normal((128, 128)).astype(np.float32)
    fn, got, want = run_both([x], [xv], [T.grad(cost, W)], monkeypatch)
    assert "fused greater, astype, multiply" in fn.program_source()
    assert_agree(got, want, "float32")


def test_sgd_update_writes_into_the_dead_gradient(monkeypatch):
    """W - lr * g with g a dead intermediate: the numpy plugin writes the update into g's array
    (donated by the program), never into W, the shared value."""
    from polygrad_numpy import fuse

    monkeypatch.setattr(fuse, "MIN_BYTES", 4 * 2**20)
    W = pg.shared(np.random.default_rng(0).standard_normal((256, 256)))
    x = T.matrix("x")
    cost = pg.sum((x @ W) ** 2)
    before = W.get_value()
    step = pg.function([x], cost, updates=[(W, W - 0.01 * T.grad(cost, W))])
    xv = np.random.default_rng(1).standard_normal((256, 256))
    step(xv)
    assert "fused multiply, subtract" in step.program_source()
    np.testing.assert_allclose(W.get_value(), before - 0.01 * (xv.T @ (2 * (xv @ before))), rtol=1e-12)


def test_donated_inputs_are_only_the_programs_own():
    """The program donates only intermediates it made and reads nowhere else: never an argument."""
    captured = []
    from polygrad._registry import Backend

    real = Backend.fuse_elementwise

    def spy(self, nodes, inputs, outputs):
        captured.append(inputs)
        return real(self, nodes, inputs, outputs)

    x, y = T.matrices("xy")
    h = x @ y  # an intermediate read only by the group
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Backend, "fuse_elementwise", spy)
        fn = pg.function([x, y], (h * 2 + x) * 3)
        fn(np.ones((4, 4)), np.ones((4, 4)))
    (inputs,) = captured
    assert sorted(d for _, _, d in inputs) == [False, True]  # x is the caller's, h the program's


def test_groups_that_read_each_other_are_not_fused_into_a_cycle():
    """In a Hessian-vector product two convex groups can each read the other: as single
    instructions they made a cycle, and the whole program ran unfused with a warning."""
    x = T.vector("x")
    cost = pg.linalg.vector_norm(pg.tanh(x))
    g = T.grad(cost, x)
    hv = T.grad(pg.sum(g * pg.shared(np.array([1.0, 0.5, -0.3]))), x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f = pg.function([x], [cost, g, hv])
        got = f(np.array([0.5, 0.7, 1.1]))
    want = pg.function([x], [cost, g, hv], mode="FAST_COMPILE")(np.array([0.5, 0.7, 1.1]))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    if fusion.ENABLED:
        assert next(iter(f._programs.values())).n_fused >= 1


@pytest.mark.parametrize("expr", ["m1 * m2", "m1 + m2", "m1 - m2", "m1 * m1", "(m1 + m2) * x", "sum(m1 * m2)"])
def test_two_bool_casts_read_by_one_operation_keep_the_number_dtype(expr, monkeypatch):
    """The small-array fusion of the numpy plugin drops a cast of a boolean to a number read by
    add, subtract or multiply (NumPy's ufunc casts it); it dropped both operands' casts too, so
    m1 * m2 of two 0/1 masks came back bool, m1 + m2 was True where eager gives 2.0, and
    m1 - m2 raised. Each operation keeps an operand of the number dtype."""
    from polygrad_numpy import fuse

    monkeypatch.setattr(fuse, "MIN_BYTES", 4 * 2**20)
    x = T.vector("x")
    m1, m2 = pg.astype(x > 0, "float64"), pg.astype(x < 0.5, "float64")
    out = eval(expr, {"m1": m1, "m2": m2, "x": x, "sum": pg.sum})
    fn = pg.function([x], out)
    xv = np.linspace(-1, 1, 20001)  # above the tiny size, below the threshold: the small-array path
    got = fn(xv)
    assert "fused" in fn.program_source() or expr == "m1 * m1"  # (with its cast kept, too short to fuse)
    e1, e2 = (xv > 0).astype(np.float64), (xv < 0.5).astype(np.float64)
    want = eval(expr, {"m1": e1, "m2": e2, "x": xv, "sum": np.sum})
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, want)


def _bitwise(got, want):
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(np.signbit(g), np.signbit(w))


@pytest.mark.filterwarnings("ignore:overflow encountered")
@pytest.mark.parametrize("where", ["numpy", "dask"])
def test_division_by_a_constant_is_numpys_division(where, monkeypatch):
    """numexpr makes x / c of a literal c into x * (1 / c): x / 1e-310 + 1 was inf, -inf and NaN
    where eager gives 2, 1, -1 ..., and x / 10 - 1 was 1 ulp off in one element of 37."""
    x = T.vector("x")
    xv = np.tile([1e-310, 0.0, -1e-310, 3e-311, 0.3, 1.7, -2.9, 7.1e-3], 512)
    values = [xv if where == "numpy" else da.from_array(xv, chunks=1024)]
    fn, got, want = run_both([x], values, [x / 1e-310 + 1, x / 10 - 1, T.grad(pg.sum(x / 10 * x), x)], monkeypatch)
    assert "fused" in fn.program_source()
    _bitwise(got, want)


@pytest.mark.filterwarnings("ignore:invalid value encountered", "ignore:divide by zero")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_constant_powers_are_numpys_in_every_float_dtype(dtype, monkeypatch):
    """NumPy's x ** 0.5 is sqrt (sqrt(-0.0) is -0.0, sqrt(-inf) NaN), x ** 2 a square and x ** -1 a
    reciprocal; a float32 exponent reached numexpr as a variable, so its pow gave 0 and inf there."""
    x = T.vector("x", dtype=dtype)
    xv = np.tile(np.array([-np.inf, -0.0, 0.0, 4.0, -1.0, np.inf, np.nan, 8.0], dtype=dtype), 256)
    outs = [x ** 0.5 * 3, x ** 2 * 3, x ** -1 * 3, T.grad(pg.sum(x ** 1.5), x)]
    fn, got, want = run_both([x], [xv], outs, monkeypatch)
    assert "fused" in fn.program_source()
    _bitwise(got, want)


@pytest.mark.filterwarnings("ignore:invalid value encountered")
def test_a_power_by_an_array_exponent_is_numpys():
    """NumPy's x ** p with a 0-d array p of 0.5 is sqrt as well: a symbolic scalar or shared
    exponent reached numexpr's pow, which gave inf and 0.0 for -inf and -0.0 (NaN and -0.0 eager)."""
    x, p = T.vector("x"), T.scalar("p")
    xv = np.tile([-np.inf, -0.0, 4.0, 2.5], 256)
    w = pg.shared(np.array(0.5), name="w")
    fn = pg.function([x, p], [x ** p * 2.0, x ** w * 2.0])
    for got in fn(xv, 0.5):
        _bitwise([got], [np.sqrt(xv) * 2.0])


def _compiled_and_eager(make, inputs, values):
    """``make`` of the symbolic ``inputs``, compiled and called on ``values``, and ``make`` run eagerly
    on Variables of the same arrays: (the function, its results, eager's)."""
    fn = pg.function(inputs, make(*inputs))
    got = fn(*values)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = [v.data for v in make(*[pg.Variable(v) for v in values])]
    return fn, got, want


def _on(where, values, chunks=3):
    return values if where == "numpy" else [da.from_array(v, chunks=chunks if v.ndim else ()) for v in values]


@pytest.mark.filterwarnings("ignore:invalid value encountered", "ignore:divide by zero", "ignore:overflow encountered")
@pytest.mark.parametrize("where", ["numpy", "dask"])
def test_a_power_by_a_python_number_is_what_the_operator_computes(where):
    """The pow row's kernel is ``**``, which NumPy computes as sqrt for x ** 0.5 and as square for
    b ** 2; a fused group called np.power: a float16 x ** 0.5 * 2 (a call step) gave inf and +0.0 at
    -inf and -0.0 (eager NaN and -0.0), a boolean b ** 2 int64 (eager int8), and numexpr's pow (x ** 1.5)
    was 1 ulp off NumPy's in 5% of these elements."""
    x, h, b = T.vector("x"), T.vector("h", dtype="float16"), T.vector("b", dtype="bool")
    special = [-np.inf, -0.0, 0.0, 4.0, 2.5, np.inf, -2.0, 0.25]
    xv = np.concatenate([special, np.random.default_rng(0).uniform(0, 10, 1000)])
    values = [xv, xv.astype(np.float16), np.arange(xv.size) % 3 == 0]

    def make(x, h, b):  # (the astypes to float: call steps joined by numexpr steps on numpy, too)
        return [h ** 0.5 * 2, h ** 2 * 2, h ** 2.0 + 1, h ** -1 - 1, pg.astype(h ** 0.5, "float32") * 2 + 1,
                b ** 2 * 3, pg.astype(b ** 2, "float64") * x + 1, x ** 1.5 * 2, x ** 2.0 + 1, x ** 3 - 1,
                x ** 0.5 * 2, x ** -1 * 2, 2.5 * x ** 1.5 * h]

    fn, got, want = _compiled_and_eager(make, [x, h, b], _on(where, values, 256))
    assert "fused" in fn.program_source()
    _bitwise(got, want)


@pytest.mark.filterwarnings("ignore:invalid value encountered", "ignore:divide by zero")
@pytest.mark.parametrize("value", [-np.inf, -0.0, 0.0, 4.0, np.nan])
@pytest.mark.parametrize("where", ["numpy", "dask"])
def test_a_0d_power_is_what_eager_computes(where, value, monkeypatch):
    """A 0-d x * 2 is a NumPy scalar eagerly, whose ** 0.5 is C's pow (the standard's +inf at -inf,
    +0.0 at -0.0); a fused group wrote sqrt: NaN and -0.0. 0-d values in a fused kernel are now
    of eager's type, as eager's kernels make them (np.True_ ** 2 is int64; dask casts its blocks to
    the int8 a boolean array's ** 2 gives)."""
    from polygrad_numpy import fuse

    monkeypatch.setattr(fuse, "MIN_BYTES", 4 * 2**20)  # the default: tiny groups only
    s = T.scalar("s")

    def make(s):
        return [(s * 2) ** 0.5, (s * 3) ** 0.5 * 2, (s * 2 + 1) ** 0.5 * 3, (s * 2) ** 2 + 1, (s * 2) ** -1 - 1,
                (s > 0) ** 2 * 3]

    _, got, want = _compiled_and_eager(make, [s], _on(where, [np.array(value)]))
    _bitwise(got, want)


def test_a_dask_fused_group_computes_what_eager_dask_does():
    """The dask block kernel ran the numpy backend's kernels, where eager dask runs its own:
    clip(floor(x), 0, 2) gave -0.0 at -0.0 (eager dask +0.0), and clip(x != y, -1.0, 1.0) all True
    (eager dask keeps False; clip of a bool is refused now, as the standard's clip takes numbers: the
    comparison is cast first). A kernel that is not one NumPy function per block runs as eager dask
    runs it, between fused layers of the other nodes."""
    x, y = T.tensor("float64", (None, 1), "x"), T.tensor("int64", (1, None), "y")
    xv = np.array([[-0.0], [-0.5], [1.5], [0.5], [np.inf], [-3.0]])
    yv = np.array([[1, 0, 1, 3]])

    def make(x, y):
        h = pg.clip(x * 2 + 1, 0, 2) * 3 - 1  # a layer, clip, a layer
        return [pg.clip(pg.floor(x), 0, 2), pg.clip(pg.astype(x != y, "float64"), -1.0, 1.0), h,
                pg.where(x > 0, h * 2, x) + y]

    fn, got, want = _compiled_and_eager(make, [x, y], _on("dask", [xv, yv], 2))
    assert "fused" in fn.program_source()
    _bitwise(got, want)

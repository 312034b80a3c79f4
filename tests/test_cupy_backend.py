"""The cupy backend (plugins/polygrad-cupy): it says precisely why it cannot
run (cupy missing, or no CUDA device), and where a GPU is usable its
gradients equal numpy's. GPU tests skip with the plugin's own reason."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import types

import numpy as np
import pytest

import polygrad as pg

if "cupy" not in pg.backends():
    pytest.skip("the polygrad-cupy plugin is not installed", allow_module_level=True)

import polygrad_cupy  # noqa: E402

USABLE, REASON = polygrad_cupy.usable()
gpu = pytest.mark.skipif(not USABLE, reason=REASON)


class CUDARuntimeError(RuntimeError):
    """Stands in for cupy_backends.cuda.api.runtime.CUDARuntimeError."""


def _fake_cupy(get_device_count):
    cupy = types.ModuleType("cupy")
    cupy.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=get_device_count))
    return cupy


@pytest.fixture
def cupy_found(monkeypatch):
    """Make `importlib.util.find_spec('cupy')` succeed, as if cupy were installed."""
    real = importlib.util.find_spec
    monkeypatch.setattr(polygrad_cupy.importlib.util, "find_spec",
                        lambda name, *a: object() if name == "cupy" else real(name, *a))


@pytest.fixture
def fresh_cupy_backend(monkeypatch):
    """The cupy Backend with its cached usability forgotten (restored afterwards)."""
    b = pg.get_backend("cupy")
    monkeypatch.setattr(b, "_usable", None)
    monkeypatch.setattr(b, "_xp", None)
    return b


def test_reason_when_cupy_is_not_installed(monkeypatch):
    """Without cupy the reason says so and how to install it, and nothing is imported."""
    real = importlib.util.find_spec
    monkeypatch.setattr(polygrad_cupy.importlib.util, "find_spec", lambda name, *a: None if name == "cupy" else real(name, *a))
    monkeypatch.delitem(sys.modules, "cupy", raising=False)
    ok, reason = polygrad_cupy.polygrad_check_usable()
    assert not ok
    assert "no usable GPU" in reason and "cupy is not installed" in reason and "pip install" in reason
    assert "cupy" not in sys.modules


def test_reason_when_cupy_has_no_device(monkeypatch, cupy_found):
    """With cupy installed but no CUDA driver/device, getDeviceCount's error is the reason."""

    def no_device():
        raise CUDARuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected")

    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy(no_device))
    ok, reason = polygrad_cupy.polygrad_check_usable()
    assert not ok
    assert "no usable GPU" in reason and "CUDARuntimeError" in reason and "cudaErrorNoDevice" in reason


def test_reason_when_cupy_sees_zero_devices(monkeypatch, cupy_found):
    """getDeviceCount() == 0 is not usable either."""
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy(lambda: 0))
    assert polygrad_cupy.usable() == (False, "no usable GPU: cupy is installed but CUDA reports 0 devices")


def test_reason_when_cupy_cannot_be_imported(monkeypatch, cupy_found):
    """A cupy that fails to import (wrong wheel, missing CUDA libraries) is a reason, not a crash."""
    monkeypatch.setitem(sys.modules, "cupy", None)  # `import cupy` raises ImportError
    ok, reason = polygrad_cupy.usable()
    assert not ok and "cannot be imported" in reason


def test_usable_with_a_device(monkeypatch, cupy_found):
    """One device: usable."""
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy(lambda: 1))
    assert polygrad_cupy.usable() == (True, "")


def test_set_backend_without_gpu_is_a_clear_error(monkeypatch, cupy_found, fresh_cupy_backend):
    """pg.set_backend('cupy') with no device raises RuntimeError saying there is no usable GPU."""

    def no_device():
        raise CUDARuntimeError("cudaErrorInsufficientDriver: CUDA driver version is insufficient")

    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy(no_device))
    with pytest.raises(RuntimeError, match=r"backend 'cupy' is not usable here: no usable GPU.*InsufficientDriver"):
        pg.set_backend("cupy")
    row = pg.backends()["cupy"]
    assert not row.usable and row.device == "gpu" and "no usable GPU" in row.reason
    assert pg.get_backend().name != "cupy"  # the default stays a usable backend


def test_backends_lists_cupy_with_its_reason():
    """pg.backends() lists cupy; when not usable here, with the plugin's reason."""
    row = pg.backends()["cupy"]
    assert row.device == "gpu"
    assert row.usable == USABLE and row.reason == REASON


def test_listing_backends_does_not_import_cupy_when_missing():
    """Where cupy is not installed, pg.backends() reports it without trying to import it."""
    if importlib.util.find_spec("cupy") is not None:
        pytest.skip("cupy is installed here")
    code = "import sys, polygrad as pg; r = pg.backends()['cupy']; print(r.usable, 'cupy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["False", "False"], out.stderr


# ---------------------------------------------------------------------------
# On a GPU
# ---------------------------------------------------------------------------


@gpu
def test_gpu_gradients_equal_numpy():
    """An MLP-ish loss on the GPU: loss and gradients equal the numpy backend's."""
    import cupy

    import polygrad.functions as F

    rng = np.random.default_rng(0)
    data = [rng.normal(size=s) for s in [(8, 5), (4, 5), (4,), (3, 4)]]
    t = rng.integers(0, 3, size=8)
    idx = np.array([0, 3, 0, 7])

    def run(arrays, labels, index):
        vs = [pg.Variable(a) for a in arrays]
        h = F.relu(F.linear(vs[0], vs[1], vs[2]))
        loss = F.softmax_cross_entropy(F.linear(h, vs[3]), labels) + pg.sum(vs[0][index] * 0.5)
        loss.backward()
        return loss, [v.grad for v in vs]

    loss_n, grads_n = run(data, t, idx)
    loss_g, grads_g = run([cupy.asarray(a) for a in data], cupy.asarray(t), cupy.asarray(idx))
    assert all(isinstance(g, cupy.ndarray) for g in grads_g)
    np.testing.assert_allclose(float(loss_g.data), float(loss_n.data), rtol=1e-10)
    for gg, gn in zip(grads_g, grads_n):
        np.testing.assert_allclose(cupy.asnumpy(gg), gn, rtol=1e-8, atol=1e-10)


@gpu
def test_gpu_arrays_move_to_numpy_and_back():
    """pg.to_backend, x.numpy(), to_cpu() and to_gpu() move data (and gradient) between the GPU and numpy."""
    import cupy

    a = cupy.asarray([[1.5, -2.0]], dtype=cupy.float32)
    back = pg.to_backend(a, "numpy")
    assert isinstance(back, np.ndarray) and back.dtype == np.float32 and back.tolist() == [[1.5, -2.0]]
    assert isinstance(pg.to_backend(back, "cupy"), cupy.ndarray)
    x = pg.Variable(a)
    pg.sum(x * x).backward()
    assert x.detach().numpy().tolist() == [[1.5, -2.0]]
    x.to_cpu()
    assert isinstance(x.data, np.ndarray) and isinstance(x.grad, np.ndarray) and x.grad.tolist() == [[3.0, -4.0]]
    x.to_gpu()
    assert isinstance(x.data, cupy.ndarray) and isinstance(x.grad, cupy.ndarray)


@gpu
def test_gpu_memory_stats_and_synchronize():
    """memory_stats() reports the default pool's used/total bytes; synchronize() returns."""
    import cupy

    b = pg.get_backend("cupy")
    x = cupy.ones((1024, 1024), dtype=cupy.float32)
    b.synchronize()
    stats = b.memory_stats()
    assert stats["used"] >= x.nbytes and stats["total"] >= stats["used"]


@gpu
def test_gpu_conformance_suite_passes():
    """The conformance suite passes on cupy."""
    out = subprocess.run([sys.executable, "-m", "polygrad_conformance", "cupy", "-q", "-p", "no:randomly"],
                         capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout[-5000:]


# ---------------------------------------------------------------------------
# Fusion: one ElementwiseKernel per group (its CUDA C is built and checked without a GPU)
# ---------------------------------------------------------------------------
def _nodes(*specs):
    from polygrad.compile.fusion import FusedNode

    return tuple(FusedNode(op, args, params, shape, np.dtype(dtype), None) for op, args, params, shape, dtype in specs)


def test_solve_kernel_broadcasts_the_batch_dimensions():
    """The plugin's linalg.solve kernel (cupy's own needs equal batch shapes) broadcasts them as the
    standard asks; it is written with the standard, so it is checked here on numpy arrays."""
    rng = np.random.default_rng(0)
    a = rng.normal(size=(2, 1, 3, 3)) + 3 * np.eye(3)
    b = rng.normal(size=(4, 3, 2))
    got = polygrad_cupy.solve(a, b)
    assert got.shape == (2, 4, 3, 2)
    np.testing.assert_allclose(got, np.linalg.solve(np.broadcast_to(a, (2, 4, 3, 3)), np.broadcast_to(b, (2, 4, 3, 2))))
    np.testing.assert_allclose(polygrad_cupy.solve(a[0, 0], b[0, :, 0]), np.linalg.solve(a[0, 0], b[0, :, 0]))
    with pytest.raises(ValueError, match="do not broadcast"):
        polygrad_cupy.solve(rng.normal(size=(2, 3, 3)), rng.normal(size=(5, 3, 2)))


def test_fused_source_of_relu_backward():
    """g * astype(ans > 0): one line per node, the scalar typed as the compare's operand, one output."""
    from polygrad_cupy.fuse import source

    nodes = _nodes(("greater", (("input", 0), ("scalar", 0)), {}, (4,), "bool"),
                   ("astype", (("node", 0),), {"dtype": np.float32}, (4,), "float32"),
                   ("multiply", (("input", 1), ("node", 1)), {}, (4,), "float32"))
    in_params, out_params, body = source(nodes, (((4,), np.dtype("float32"), False),) * 2, (2,))
    assert (in_params, out_params) == ("float32 i0, float32 i1", "float32 o0")
    assert body.splitlines() == ["bool n0 = i0 > ((float)0.0);", "float n1 = ((float)n0);", "float n2 = i1 * n1;",
                                 "o0 = n2;"]


def test_fused_source_of_sigmoid_is_the_rows_precise_form():
    """The fused line follows the row's kernel: exp(x) / (1 + exp(x)) for x < 0 (0.5 tanh(x / 2) +
    0.5 cancelled there: sigmoid(-20) was 0 in float32)."""
    from polygrad_cupy.fuse import source

    nodes = _nodes(("sigmoid", (("input", 0),), {}, (4,), "float32"))
    _, _, body = source(nodes, (((4,), np.dtype("float32"), False),), (0,))
    assert body.splitlines()[0] == ("float n0 = ((i0) >= (float)0) ? (float)1 / ((float)1 + exp(-(i0))) "
                                    ": exp(i0) / ((float)1 + exp(i0));")


def test_fused_source_follows_numpy_promotion():
    """int32 + int64 casts to int64; an int divided by an int gives double; NaN and inf scalars are spelled in C."""
    from polygrad_cupy.fuse import source

    nodes = _nodes(("add", (("input", 0), ("input", 1)), {}, (3,), "int64"),
                   ("divide", (("node", 0), ("input", 1)), {}, (3,), "float64"),
                   ("maximum", (("node", 1), ("scalar", float("inf"))), {}, (3,), "float64"))
    inputs = (((3,), np.dtype("int32"), False), ((3,), np.dtype("int64"), False))
    _, _, body = source(nodes, inputs, (2,))
    lines = body.splitlines()
    assert lines[0] == "long long n0 = ((long long)i0) + i1;"
    assert lines[1] == "double n1 = ((double)n0) / ((double)i1);"
    assert "0x7ff0000000000000" in lines[2]


def test_fused_source_declines_what_it_cannot_write():
    """An op without a CUDA line here, a float16 array, or outputs of two shapes: declined (None)."""
    from polygrad_cupy.fuse import source

    assert source(_nodes(("floor", (("input", 0),), {}, (3,), "float64")), (((3,), np.dtype("float64"), False),), (0,)) is None
    assert source(_nodes(("exp", (("input", 0),), {}, (3,), "float16")), (((3,), np.dtype("float16"), False),), (0,)) is None
    two = _nodes(("exp", (("input", 0),), {}, (3, 1), "float64"), ("add", (("node", 0), ("input", 1)), {}, (3, 4), "float64"))
    assert source(two, (((3, 1), np.dtype("float64"), False), ((3, 4), np.dtype("float64"), False)), (0, 1)) is None


@gpu
def test_fused_kernel_agrees_with_unfused_on_gpu(monkeypatch):
    """On a GPU the fused elementwise case equals the program run node by node."""
    from polygrad import symbolic as T
    from polygrad.compile import fusion

    with pg.using_backend("cupy"):
        import cupy

        x = T.vector("x")
        cost = pg.sum(pg.tanh(x) * x + pg.exp(-x * x))
        outs = [cost, T.grad(cost, x)]
        xv = cupy.linspace(-2, 2, 100_000)
        fused = pg.function([x], outs)
        got = fused(xv)
        assert "fused" in fused.program_source()
        monkeypatch.setattr(fusion, "ENABLED", False)
        want = pg.function([x], outs)(xv)
    for g, w in zip(got, want):
        np.testing.assert_allclose(cupy.asnumpy(g), cupy.asnumpy(w), rtol=1e-13, atol=1e-13)

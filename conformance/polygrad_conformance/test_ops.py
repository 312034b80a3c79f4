"""Every op: forward against the backend's own namespace, both kernel paths,
and gradients checked numerically (first and second order)."""

from __future__ import annotations

import pytest

import polygrad as pg
from polygrad.core.dispatch import backend_of_type
from polygrad.ops import REGISTRY
from polygrad.testing import check_grads
from polygrad_conformance._util import assert_same
from polygrad_conformance.cases import CASES, Case, by_op
from polygrad_conformance.plugin import state_of


def _marks(c: Case) -> list:
    return [pytest.mark.requires(*c.requires)] if c.requires else []


def _params(cases: list[Case]) -> list:
    return [pytest.param(c, id=c.id, marks=_marks(c)) for c in cases]


GRAD_CASES = [c for c in CASES if c.grad_order >= 1]
GRAD2_CASES = [c for c in CASES if c.grad_order >= 2]


def _call(c: Case, xp, args: list, requires_grad: bool):
    diff = set(c.differentiable_args())
    ins = [pg.Variable(a, requires_grad=requires_grad) if i in diff else a for i, a in enumerate(args)]
    return c.fn(xp, *ins)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "kernel_case" in metafunc.fixturenames:
        state = state_of(metafunc.config)
        kernels = state.backend.kernels if state is not None and state.backend is not None else {}
        metafunc.parametrize("kernel_case", _params([c for c in CASES if c.op in kernels]))


# ---------------------------------------------------------------------------
# Coverage: the table must name every op
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("op_name", sorted(REGISTRY))
def test_every_op_has_a_case(op_name):
    """Each row of polygrad.ops.REGISTRY has a case (and a gradient case when it is differentiable)."""
    cases = by_op().get(op_name)
    assert cases, f"op {op_name!r} has no conformance case: add one to polygrad_conformance/cases.py"
    if REGISTRY[op_name].differentiable and REGISTRY[op_name].deterministic:
        assert any(c.grad_order >= 1 for c in cases), f"differentiable op {op_name!r} has no gradient case (order >= 1)"


def test_backend_kernels_name_known_ops(pg_backend):
    """Every kernel the backend declares (polygrad_kernels) is for an op that exists."""
    unknown = sorted(set(pg_backend.kernels) - set(REGISTRY))
    assert not unknown, f"backend {pg_backend.name!r} declares kernels for unknown ops: {unknown}"


class _Capture(pg.FunctionHook):
    name = "conformance-capture"

    def __init__(self, op_name):
        self.op_name, self.calls = op_name, []

    def forward_preprocess(self, function, in_data):
        op = getattr(function, "op", None)
        if op is not None and op.name == self.op_name:
            self.calls.append((op, tuple(in_data), dict(function.params or {})))


# ---------------------------------------------------------------------------
# Forward
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("case", _params(CASES))
def test_forward(case, pg_backend, xp, float_dtype, tol):
    """The polygrad op computes what the backend's own namespace computes (values, shape, dtype)."""
    args = case.make(xp, float_dtype)
    with _Capture(case.op) as capture:
        out = _call(case, xp, args, requires_grad=False)
    assert case.composed or capture.calls, f"{case.id}: the op {case.op!r} was never applied"
    expected = case.ref(xp, *args)
    outs, refs = (tuple(out), tuple(expected)) if isinstance(out, (tuple, list)) else ((out,), (expected,))
    assert len(outs) == len(refs), f"{case.id}: {len(outs)} outputs, the namespace gives {len(refs)}"
    for k, (o, e) in enumerate(zip(outs, refs)):
        what = case.id if len(outs) == 1 else f"{case.id} output {k}"
        assert isinstance(o, pg.Variable), f"{what} is a {type(o).__name__}, not a Variable"
        if case.values:
            assert_same(o, e, backend=pg_backend, rtol=tol.rtol, atol=tol.atol, what=what)
        else:
            assert_same(o, e, backend=pg_backend, rtol=0, atol=0, what=what, values=False)


@pytest.mark.requires("numpy")
@pytest.mark.parametrize("case", _params(CASES))
def test_forward_agrees_with_numpy(case, pg_backend, xp, float_dtype, tol):
    """The same case on the numpy backend gives the same values (catches a namespace whose
    own function is wrong, which the reference alone cannot)."""
    import numpy as np

    if not case.values:
        pytest.skip(f"{case.id} has no reproducible values to compare")
    if set(pg.get_backend("numpy").array_types) & set(pg_backend.array_types):
        pytest.skip("this backend shares its array types with numpy")
    args = case.make(xp, float_dtype)
    out = _call(case, xp, args, requires_grad=False)
    np_xp = pg.get_backend("numpy").xp
    with pg.using_backend("numpy"):
        np_args = [pg.to_backend(a, "numpy") for a in args]
        theirs = _call(case, np_xp, np_args, requires_grad=False)
    outs, refs = (tuple(out), tuple(theirs)) if isinstance(out, (tuple, list)) else ((out,), (theirs,))
    for k, (o, t) in enumerate(zip(outs, refs)):
        mine = np.asarray(pg.to_backend(o.data, "numpy"))
        want = np.asarray(t.data)
        assert mine.shape == want.shape, f"{case.id} output {k}: shape {mine.shape}, numpy gives {want.shape}"
        assert np.allclose(mine, want, rtol=max(tol.rtol, 1e-5), atol=max(tol.atol, 1e-6), equal_nan=True), (
            f"{case.id} output {k} differs from the numpy backend's:\n{mine}\nnumpy:\n{want}"
        )


@pytest.mark.parametrize("case", _params(CASES))
def test_forward_records_graph(case, xp, float_dtype):
    """With inputs requiring grad, a differentiable op records a creator; a non-differentiable one does not."""
    args = case.make(xp, float_dtype)
    out = _call(case, xp, args, requires_grad=True)
    outs = tuple(out) if isinstance(out, (tuple, list)) else (out,)
    op_ok = case.composed or REGISTRY[case.op].differentiable
    differentiable = op_ok and bool(case.differentiable_args()) and (case.order >= 1 or not case.composed)
    recorded = [o.creator is not None for o in outs]
    if differentiable:
        assert any(recorded) and all(o.requires_grad for o, r in zip(outs, recorded) if r), f"{case.id}: no graph recorded"
    else:
        assert not any(recorded) and not any(o.requires_grad for o in outs), f"{case.id}: a graph was recorded"


def test_kernel_paths(kernel_case, pg_backend, xp, float_dtype, tol):
    """Where the backend overrides an op's kernel (polygrad_kernels), the override and the
    generic kernel give the same result on the op's real arguments."""
    c = kernel_case
    args = c.make(xp, float_dtype)
    with _Capture(c.op) as capture:
        _call(c, xp, args, requires_grad=False)
    assert capture.calls, f"{c.id}: op {c.op!r} was not applied"
    for op, in_data, params in capture.calls:
        try:
            generic = op.fwd(xp, *in_data, **params) if op.uses_xp else op.fwd(*in_data, **params)
        except Exception as exc:  # the override may do more than the generic kernel can on this backend
            pytest.skip(f"the generic kernel cannot run {c.id} here ({type(exc).__name__}: {exc}); "
                        "test_forward checks the override against the reference")
        override = pg_backend.kernels[op.name](*in_data, **params)
        pairs = zip(override, generic) if isinstance(generic, (tuple, list)) else [(override, generic)]
        for o, g in pairs:
            assert_same(o, g, backend=pg_backend, rtol=tol.rtol, atol=tol.atol, what=f"{c.id} override vs generic",
                        values=c.values)


# ---------------------------------------------------------------------------
# Gradients
# ---------------------------------------------------------------------------


def _check(case: Case, xp, dtype, tol, order: int) -> None:
    args = case.make(xp, dtype)
    diff = case.differentiable_args()

    def f(*vs):
        full = list(args)
        for i, v in zip(diff, vs):
            full[i] = v
        return case.fn(xp, *full)

    f.__name__ = case.id
    check_grads(f, [args[i] for i in diff], order=order, eps=tol.eps, atol=tol.grad_atol, rtol=tol.grad_rtol)


@pytest.mark.parametrize("case", _params(GRAD_CASES))
def test_grad(case, xp, float_dtype, tol):
    """The vjp agrees with central differences (random-direction dot-product test)."""
    _check(case, xp, float_dtype, tol, order=1)


@pytest.mark.parametrize("case", _params(GRAD2_CASES))
def test_grad2(case, xp, float_dtype, tol):
    """The vjp's own derivative (create_graph=True) agrees with central differences."""
    _check(case, xp, float_dtype, tol, order=2)


@pytest.mark.parametrize("case", _params(GRAD_CASES))
def test_backward_grads_belong_to_backend(case, pg_backend, xp, float_dtype):
    """After backward, every input's .grad is an array of the backend with the input's shape and dtype."""
    args = case.make(xp, float_dtype)
    diff = set(case.differentiable_args())
    ins = [pg.Variable(a) if i in diff else a for i, a in enumerate(args)]
    y = case.fn(xp, *ins)
    pg.sum(y if isinstance(y, pg.Variable) else y[0]).backward()
    got = [i for i in sorted(diff) if ins[i].grad is not None]
    assert got, f"{case.id}: no input got a gradient"
    for i in got:  # an input the op has no rule for (copysign's sign source) gets None
        g = ins[i].grad
        assert backend_of_type(type(g)) is pg_backend, f"{case.id}: grad of input {i} is a {type(g).__name__}"
        assert tuple(g.shape) == tuple(args[i].shape), f"{case.id}: grad of input {i} has shape {tuple(g.shape)}"
        assert g.dtype == args[i].dtype, f"{case.id}: grad of input {i} has dtype {g.dtype}, input {args[i].dtype}"

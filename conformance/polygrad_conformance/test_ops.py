"""Every op: forward against the backend's own namespace, both kernel paths,
gradients checked numerically (first and second order), and result and
gradient dtypes at every floating dtype the backend declares.

Each test takes its cases through the name of its argument: ``case`` (every
case), ``grad_case`` (a gradient to check), ``grad2_case`` (a second
derivative too), ``vjp_case`` (the vjp checked in the output gradient),
``kernel_case`` (an op whose kernel the backend overrides), ``traced_case``
(every case that runs a kernel the backend overrides, forward or backward),
and ``dtype_case`` / ``grad_dtype_case`` (a case and a floating dtype the
namespace declares, ids ``<case>-<dtype>``); see :func:`cases_for`. The
table's in-depth cases run with ``--polygrad-depth``.
polygrad's own tests run these same functions, on every case, in-process
(``tests/test_op_cases.py``).
"""

from __future__ import annotations

import contextlib
import functools

import pytest

import polygrad as pg
from polygrad.core.dispatch import backend_of_type
from polygrad.ops import REGISTRY
from polygrad.testing import check_grads
from polygrad_conformance._util import assert_same
from polygrad_conformance.cases import CASES, C, Case, F, by_op
from polygrad_conformance.gradcheck import check_vjp, check_vjp_of_vjp, involves_complex
from polygrad_conformance.plugin import float_dtype_names, state_of, tolerance_for

CASE_ARGUMENTS = ("case", "grad_case", "grad2_case", "vjp_case", "kernel_case", "traced_case")
DTYPE_ARGUMENTS = ("dtype_case", "grad_dtype_case")


def cases_for(argument: str, backend, depth: bool = False) -> list[Case]:
    """The cases a test taking ``argument`` runs on ``backend`` (a ``polygrad.Backend``, or None);
    the in-depth ones too with ``depth``."""
    cases = [c for c in CASES if depth or not c.depth]
    if argument in ("kernel_case", "traced_case"):
        kernels = backend.kernels if backend is not None else {}
        if argument == "traced_case":  # backward may run any kernel: every gradient case, where there are kernels
            return [c for c in cases if kernels and (c.grad_order >= 1 or c.op in kernels)]
        return [c for c in cases if c.op in kernels]
    if argument == "grad_case":
        return [c for c in cases if c.grad_order >= 1]
    if argument == "grad2_case":
        return [c for c in cases if c.grad_order >= 2]
    if argument == "vjp_case":
        return [c for c in cases if c.grad_order >= 1 and c.grad_of_vjp]
    return cases


def _params(cases: list[Case]) -> list:
    return [pytest.param(c, id=c.id, marks=[pytest.mark.requires(*c.requires)] if c.requires else []) for c in cases]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    state = state_of(metafunc.config)
    backend, depth = (state.backend, state.depth) if state is not None else (None, False)
    for argument in CASE_ARGUMENTS:
        if argument in metafunc.fixturenames:
            metafunc.parametrize(argument, _params(cases_for(argument, backend, depth)))
    for argument in DTYPE_ARGUMENTS:
        if argument in metafunc.fixturenames:
            cases = cases_for("grad_case" if argument == "grad_dtype_case" else "case", backend, depth)
            metafunc.parametrize(argument, [
                pytest.param((c, name), id=f"{c.id}-{name}", marks=[pytest.mark.requires(*c.requires)] if c.requires else [])
                for c in cases for name in float_dtype_names(metafunc.config)
            ])


def _call(c: Case, xp, args: list, requires_grad: bool):
    diff = set(c.differentiable_args())
    ins = [pg.Variable(a, requires_grad=requires_grad) if i in diff else a for i, a in enumerate(args)]
    return c.fn(xp, *ins)


def _outputs(y) -> tuple:
    return tuple(y) if isinstance(y, (tuple, list)) else (y,)


def _assert_outputs(case: Case, out, expected, backend, dtype) -> None:
    """``out`` (Variables) has ``expected``'s outputs: owner, shape, dtype and (where the case has them)
    values, within the tolerances of ``dtype`` (the inputs') and the case's."""
    tol = case.tolerance(tolerance_for(backend.xp, dtype), dtype, backend.xp)
    outs, refs = _outputs(out), _outputs(expected)
    assert len(outs) == len(refs), f"{case.id}: {len(outs)} outputs, the namespace gives {len(refs)}"
    for k, (o, e) in enumerate(zip(outs, refs)):
        what = case.id if len(outs) == 1 else f"{case.id} output {k}"
        assert isinstance(o, pg.Variable), f"{what} is a {type(o).__name__}, not a Variable"
        if case.values:
            assert_same(o, e, backend=backend, rtol=tol.rtol, atol=tol.atol, what=what, signed_zeros=case.signed_zeros)
        else:
            assert_same(o, e, backend=backend, rtol=0, atol=0, what=what, values=False)


# ---------------------------------------------------------------------------
# The table itself: every op has a case, and each case names what it covers
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("op_name", sorted(REGISTRY))
def test_every_op_has_a_case(op_name):
    """Each row of polygrad.ops.REGISTRY has a core case (and a gradient case when it is differentiable)."""
    cases = [c for c in by_op().get(op_name, []) if not c.depth]
    assert cases, f"op {op_name!r} has no conformance case: add one to polygrad_conformance/cases.py"
    if REGISTRY[op_name].differentiable and REGISTRY[op_name].deterministic:
        assert any(c.grad_order >= 1 for c in cases), f"differentiable op {op_name!r} has no gradient case (order >= 1)"


def test_case_ids_are_unique():
    """No two cases share an id (an id names one case in reports and known-failure files)."""
    ids = [c.id for c in CASES]
    assert sorted({i for i in ids if ids.count(i) > 1}) == []


def test_composed_cases_name_public_functions():
    """A case whose op is no row of the table names a public function (a typo would hide a row's cases)."""
    import polygrad.functions
    import polygrad.ops

    unknown = sorted({c.op for c in CASES if c.composed} - {n for m in (pg, polygrad.functions, polygrad.ops) for n in dir(m)})
    assert unknown == []


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


def test_forward(case, pg_backend, xp, float_dtype):
    """The polygrad op computes what the backend's own namespace computes (values, shape, dtype),
    from inputs that require grad or not."""
    args = case.make(xp, float_dtype)
    expected = case.ref(xp, *args)
    with _Capture(case.op) as capture:
        out = _call(case, xp, args, requires_grad=False)
    assert case.composed or capture.calls, f"{case.id}: the op {case.op!r} was never applied"
    _assert_outputs(case, out, expected, pg_backend, float_dtype)
    _assert_outputs(case, _call(case, xp, args, requires_grad=True), expected, pg_backend, float_dtype)


@pytest.mark.requires("numpy")
def test_forward_agrees_with_numpy(case, pg_backend, xp, float_dtype, tol):
    """The same case on the numpy backend gives the same values (catches a namespace whose
    own function is wrong, which the reference alone cannot); outputs defined up to the
    signs of vectors (``Case.up_to_sign``) by magnitude."""
    if not case.values:
        pytest.skip(f"{case.id} has no reproducible values to compare")
    if _numpy_beside(pg_backend) is None:
        pytest.skip("this backend shares its array types with numpy")
    args = case.make(xp, float_dtype)
    out = _call(case, xp, args, requires_grad=False)
    np_xp = pg.get_backend("numpy").xp
    with pg.using_backend("numpy"):
        np_args = [pg.to_backend(a, "numpy") for a in args]
        theirs = _call(case, np_xp, np_args, requires_grad=False)
    _assert_agrees_with_numpy(case, case.id, out, theirs)


def _numpy_beside(backend):
    """The numpy backend, to compare ``backend``'s values with: None where it is not usable or
    ``backend`` shares its array types (numpy itself, a copy of its plugin)."""
    row = pg.backends().get("numpy")
    if row is None or not row.usable:
        return None
    np_backend = pg.get_backend("numpy")
    return None if set(np_backend.array_types) & set(backend.array_types) else np_backend


def _assert_agrees_with_numpy(case: Case, what: str, out, theirs) -> None:
    """Each output of ``out`` (Variables of the backend under test) has the values of the same
    output of ``theirs`` (the numpy backend's, from the same inputs): floating outputs within
    the tolerances of their own dtype (float64's for float64, not float32's: a float64 function
    1e-6 off, millions of ulp, passed), others exactly; outputs defined up to the signs of
    vectors (``Case.up_to_sign``) by magnitude."""
    import numpy as np

    np_xp = pg.get_backend("numpy").xp
    for k, (o, t) in enumerate(zip(_outputs(out), _outputs(theirs))):
        mine = np.asarray(pg.to_backend(o.data, "numpy"))
        want = np.asarray(t.data)
        if case.up_to_sign:  # each library may flip a vector's sign: compare magnitudes
            mine, want = np.abs(mine), np.abs(want)
        where = f"{what} output {k}"
        assert mine.shape == want.shape, f"{where}: shape {mine.shape}, numpy gives {want.shape}"
        inexact = [np.real(a).dtype for a in (mine, want) if np.issubdtype(a.dtype, np.inexact)]
        if inexact:  # the tolerances of the less precise (a float32 default against numpy's float64)
            real = max(inexact, key=lambda d: np.finfo(d).eps)
            t = case.tolerance(tolerance_for(np_xp, real), real, np_xp)
            ok = np.allclose(mine, want, rtol=t.rtol, atol=t.atol, equal_nan=True)
            why = f"rtol={t.rtol}, atol={t.atol} of {real}"
        else:
            ok, why = np.array_equal(mine, want), "exactly"
        assert ok, f"{where} differs from the numpy backend's ({why}):\n{mine}\nnumpy:\n{want}"
        if case.signed_zeros and np.issubdtype(want.dtype, np.floating):
            zeros = want == 0
            assert np.array_equal(np.signbit(mine[zeros]), np.signbit(want[zeros])), (
                f"{where}: the signs of its zeros differ from the numpy backend's:\n{mine}\nnumpy:\n{want}")


def test_forward_records_graph(case, xp, float_dtype):
    """With inputs requiring grad, a differentiable op records a creator; a non-differentiable one does not."""
    args = case.make(xp, float_dtype)
    outs = _outputs(_call(case, xp, args, requires_grad=True))
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
            t = c.tolerance(tol, float_dtype, xp)
            assert_same(o, g, backend=pg_backend, rtol=t.rtol, atol=t.atol, what=f"{c.id} override vs generic",
                        values=c.values, signed_zeros=c.signed_zeros)


# ---------------------------------------------------------------------------
# Gradients
# ---------------------------------------------------------------------------


def _differentiated(case: Case, xp, args: list):
    """``case.fn`` as a function of its differentiable arguments only."""
    diff = case.differentiable_args()

    def f(*vs):
        full = list(args)
        for i, v in zip(diff, vs):
            full[i] = v
        return case.fn(xp, *full)

    f.__name__ = case.id
    return f, [args[i] for i in diff]


def _check(case: Case, xp, dtype, tol, order: int) -> None:
    """The dot-product test: polygrad.testing.check_grads, or its complex form where an input or output is complex."""
    f, inputs = _differentiated(case, xp, case.make(xp, dtype))
    t = case.tolerance(tol, dtype, xp)
    if dtype != getattr(xp, "float64", None) or not state_of_backend_has_float64(xp):
        # narrower than float64: host sums and Richardson extrapolation (see gradcheck.py)
        check_vjp(f, inputs, order=order, eps=t.eps, atol=t.grad_atol, rtol=t.grad_rtol, extrapolate=True)
        return
    check = check_vjp if case.is_complex or involves_complex(f, inputs) else check_grads
    check(f, inputs, order=order, eps=t.eps, atol=t.grad_atol, rtol=t.grad_rtol)


def state_of_backend_has_float64(xp) -> bool:
    """Whether ``xp`` declares float64 (jax's 32-bit mode has ``jnp.float64``, which gives float32)."""
    return "float64" in xp.__array_namespace_info__().dtypes(kind="real floating")


def test_grad(grad_case, xp, float_dtype, tol):
    """The vjp agrees with central differences (random-direction dot-product test)."""
    _check(grad_case, xp, float_dtype, tol, order=1)


def test_grad2(grad2_case, xp, float_dtype, tol):
    """The vjp's own derivative (create_graph=True) agrees with central differences."""
    _check(grad2_case, xp, float_dtype, tol, order=2)


def test_vjp_of_vjp(vjp_case, xp, float_dtype, tol):
    """The vjp built with create_graph is differentiable in the output gradient (for a linear op:
    its derivative there is the op itself)."""
    f, inputs = _differentiated(vjp_case, xp, vjp_case.make(xp, float_dtype))
    t = vjp_case.tolerance(tol, float_dtype, xp)
    check_vjp_of_vjp(f, inputs, eps=t.eps, atol=t.grad_atol, rtol=t.grad_rtol)


def _backward_from_every_output(case: Case, xp, args: list) -> list:
    """The case's inputs (Variables where differentiable), after backward from every output with ones."""
    diff = case.differentiable_args()
    ins = [pg.Variable(a) if i in diff else a for i, a in enumerate(args)]
    ys = [y for y in _outputs(case.fn(xp, *ins)) if y.requires_grad]
    pg.backward(ys, [xp.ones_like(y.data) for y in ys])
    return ins


def _grads_to_second_order(case: Case, xp, args: list, second: bool) -> tuple:
    """``(inputs, first, second)``: the differentiable inputs, pg.grad of every output (ones as
    output gradients; with create_graph where ``second``) and, where ``second``, the gradients of
    those first gradients that have a graph (None where nothing was differentiated twice)."""
    f, inputs = _differentiated(case, xp, args)
    xs = [pg.Variable(a) for a in inputs]
    ys = [y for y in _outputs(f(*xs)) if y.requires_grad]
    firsts = pg.grad(ys, xs, grad_outputs=[xp.ones_like(y.data) for y in ys], create_graph=second, allow_unused=True)
    graphed = [g for g in firsts if g is not None and g.requires_grad]
    if not (second and graphed):
        return inputs, firsts, None
    seconds = pg.grad(graphed, xs, grad_outputs=[xp.ones_like(g.data) for g in graphed], allow_unused=True)
    return inputs, firsts, seconds


def test_backward_grads_belong_to_backend(grad_case, pg_backend, xp, float_dtype):
    """After backward from every output, each float input has a .grad (but those the case says
    get none): an array of the backend with the input's shape and dtype."""
    case = grad_case
    args = case.make(xp, float_dtype)
    ins = _backward_from_every_output(case, xp, args)
    for i in case.differentiable_args():
        g = ins[i].grad
        if i in case.no_grad:
            assert g is None, f"{case.id}: input {i} has no gradient by design, yet got one"
            continue
        assert g is not None, f"{case.id}: input {i} got no gradient"
        assert backend_of_type(type(g)) is pg_backend, f"{case.id}: grad of input {i} is a {type(g).__name__}"
        assert tuple(g.shape) == tuple(args[i].shape), f"{case.id}: grad of input {i} has shape {tuple(g.shape)}"
        assert g.dtype == args[i].dtype, f"{case.id}: grad of input {i} has dtype {g.dtype}, input {args[i].dtype}"


@pytest.mark.requires("lazy")
def test_forward_and_backward_compute_nothing(case, pg_backend, xp, float_dtype):
    """On a lazy backend each op's forward, and its backward from every output, run inside the
    plugin's ``polygrad_forbid_compute`` guard: an op (or a kernel the plugin gives) that computes
    fails here, naming its case. Inputs are made outside the guard."""
    guard = pg_backend.forbid_compute()
    assert guard is not None, f"lazy backend {pg_backend.name!r} must implement polygrad_forbid_compute"
    args = case.make(xp, float_dtype)
    try:
        with guard:
            if case.grad_order >= 1:
                _backward_from_every_output(case, xp, args)
            else:
                _call(case, xp, args, requires_grad=False)
    except Exception as exc:
        raise AssertionError(f"{case.id}: computed on lazy backend {pg_backend.name!r} inside forbid_compute "
                             f"({'forward and backward' if case.grad_order >= 1 else 'forward'}): "
                             f"{type(exc).__name__}: {exc}") from exc


# ---------------------------------------------------------------------------
# Every floating dtype the backend declares: result and gradient dtypes
# ---------------------------------------------------------------------------


def _declared(xp, name: str):
    return xp.__array_namespace_info__().dtypes(kind="real floating")[name]


def test_forward_dtype(dtype_case, pg_backend, xp, float_dtype):
    """At every real floating dtype the namespace declares (complex inputs at the matching
    complex dtype), the op gives what the namespace gives: dtype, shape and values (a kernel
    returning float64 for float32 input fails here); its floating outputs have the dtypes the
    numpy backend gives (a namespace function returning float64 fails here); and at a dtype
    other than the one of the main checks (float32 beside float64) its values are the numpy
    backend's too (a namespace function wrong in float32 only fails here)."""
    case, name = dtype_case
    dtype = _declared(xp, name)
    args = case.make(xp, dtype)
    try:
        expected = case.ref(xp, *args)
    except Exception as exc:
        pytest.skip(f"the namespace itself cannot compute {case.id} at {name} ({type(exc).__name__}: {exc})")
    out = _call(case, xp, args, requires_grad=True)
    _assert_outputs(case, out, expected, pg_backend, dtype)
    floating_inputs = any(isinstance(s, F) for s in case.args)  # defaults may differ where there are none
    values = case.values and dtype != float_dtype and any(isinstance(s, (F, C)) for s in case.args)
    theirs = _on_numpy(case, name, pg_backend) if floating_inputs or values else None
    if theirs is None:
        return
    if floating_inputs:
        _assert_numpy_dtypes(case, name, out, theirs, pg_backend)
    if values:
        _assert_agrees_with_numpy(case, f"{case.id} at {name}", out, theirs)


def _on_numpy(case: Case, name: str, backend):
    """The case's outputs on the numpy backend at the dtype named ``name``: None where there is
    none to compare with (see ``_numpy_beside``; float16, bfloat16) or numpy cannot compute it."""
    np_backend = _numpy_beside(backend)
    if np_backend is None:
        return None
    np_xp = np_backend.xp
    np_dtypes = np_xp.__array_namespace_info__().dtypes()
    if name not in np_dtypes:
        return None
    with pg.using_backend("numpy"):
        np_args = case.make(np_xp, np_dtypes[name])
        try:
            return _call(case, np_xp, np_args, requires_grad=False)
        except Exception:
            return None


def _assert_numpy_dtypes(case: Case, name: str, out, theirs, backend) -> None:
    """The floating outputs have the dtypes the numpy backend gives at the same input dtype
    (a namespace function that widens or narrows, which the reference alone cannot see)."""
    from polygrad_conformance.plugin import dtype_name

    np_xp = pg.get_backend("numpy").xp
    for k, (o, t) in enumerate(zip(_outputs(out), _outputs(theirs))):
        if not np_xp.isdtype(t.dtype, ("real floating", "complex floating")):
            continue
        mine, want = dtype_name(backend.xp, o.dtype), dtype_name(np_xp, t.dtype)
        assert mine == want, (
            f"{case.id} at {name}: output {k} has dtype {mine}; the numpy backend gives {want} "
            "(the namespace's own function changes the precision)"
        )


def _assert_grad_like(case: Case, what: str, g, a, backend) -> None:
    g = g.data if isinstance(g, pg.Variable) else g
    owner = backend_of_type(type(g))
    assert owner is backend, f"{case.id}: {what} is an array of backend {owner.name!r}, the input of {backend.name!r}"
    assert tuple(g.shape) == tuple(a.shape), f"{case.id}: {what} has shape {tuple(g.shape)}, the input {tuple(a.shape)}"
    assert g.dtype == a.dtype, f"{case.id}: {what} has dtype {g.dtype}, the input {a.dtype}"


def test_grad_dtype(grad_dtype_case, pg_backend, xp, float_dtype):
    """At every real floating dtype the namespace declares, gradients keep the shape, dtype and
    backend of their input: x.grad after backward, and (for cases with a second derivative)
    the gradients of pg.grad(..., create_graph=True) and their own gradients. At a dtype other
    than the one of the main checks (float32 beside float64) the first derivatives' values are
    checked too."""
    case, name = grad_dtype_case
    dtype = _declared(xp, name)
    if dtype != float_dtype:
        # the values too: where the backend has float64, the gradient checks ran there only (a rule
        # wrong only in float32 passed)
        _check(case, xp, dtype, tolerance_for(xp, dtype), order=1)
    args = case.make(xp, dtype)
    ins = _backward_from_every_output(case, xp, args)
    for i in case.differentiable_args():
        if i not in case.no_grad and ins[i].grad is not None:
            _assert_grad_like(case, f"the gradient of input {i} at {name}", ins[i].grad, args[i], pg_backend)
    if case.grad_order < 2:
        return
    inputs, firsts, seconds = _grads_to_second_order(case, xp, args, second=True)
    for order, gs in (("pg.grad(create_graph=True)", firsts), ("the second derivative", seconds or ())):
        for k, (g, a) in enumerate(zip(gs, inputs)):
            if g is not None:
                _assert_grad_like(case, f"{order} of input {k} at {name}", g, a, pg_backend)


# ---------------------------------------------------------------------------
# Kernels, on every call forward and backward make
# ---------------------------------------------------------------------------


def _describe(args: tuple, params: dict) -> str:
    def one(a):
        if hasattr(a, "shape") and hasattr(a, "dtype"):
            return f"<array {tuple(a.shape)} {a.dtype}>"
        if isinstance(a, (tuple, list)):
            return type(a)((one(b) for b in a)) if not hasattr(a, "_fields") else repr(a)
        return repr(a)

    return ", ".join([str(one(a)) for a in args] + [f"{k}={one(v)}" for k, v in params.items()])


def _differs(backend, got, want) -> str:
    """Why ``got`` (an override's result) is not ``want`` (the generic kernel's), or ''."""
    xp = backend.xp
    got_t = tuple(got) if isinstance(got, (tuple, list)) else (got,)
    want_t = tuple(want) if isinstance(want, (tuple, list)) else (want,)
    if len(got_t) != len(want_t):
        return f"{len(got_t)} outputs, the generic kernel gives {len(want_t)}"
    for k, (o, w) in enumerate(zip(got_t, want_t)):
        if not hasattr(w, "shape"):
            if o != w:
                return f"output {k} is {o!r}, the generic kernel gives {w!r}"
            continue
        floating = xp.isdtype(w.dtype, ("real floating", "complex floating"))
        t = tolerance_for(xp, xp.real(w).dtype if xp.isdtype(w.dtype, "complex floating") else w.dtype) if floating else None
        try:
            assert_same(o, w, backend=backend, rtol=t.rtol if t else 0, atol=t.atol if t else 0, what=f"output {k}")
        except AssertionError as exc:
            return str(exc)
    return ""


@contextlib.contextmanager
def _comparing_kernels(backend, mismatches: list):
    """Inside, every kernel the backend overrides also runs the generic kernel on the same
    arguments, and each difference is appended to ``mismatches``."""
    from polygrad.core.op import NamespaceKernel

    installed = []
    for name, kernel in backend.kernels.items():
        op = REGISTRY.get(name)
        if op is None or not op.deterministic or name in ("empty", "empty_like"):
            continue
        if type(op.fwd) is NamespaceKernel:
            generic = op.fwd.resolve(backend.xp)
        else:
            generic = functools.partial(op.fwd, backend.xp) if op.uses_xp else op.fwd

        def compare(*args, _kernel=kernel, _generic=generic, _name=name, **params):
            try:
                want = _generic(*args, **params)
            except Exception:  # the override may do more than the generic kernel can here
                return _kernel(*args, **params)
            got = _kernel(*args, **params)
            why = _differs(backend, got, want)
            if why:
                mismatches.append(f"kernel {_name!r} for {_name}({_describe(args, params)}): {why}")
            return got

        installed.append((op, op._impl.get(backend)))
        op._impl[backend] = compare
    try:
        yield
    finally:
        for op, previous in installed:
            if previous is None:
                op._impl.pop(backend, None)
            else:
                op._impl[backend] = previous


def test_kernels_match_generic(traced_case, pg_backend, xp, float_dtype):
    """Each kernel of polygrad_kernels computes what the generic kernel computes on every call the
    case makes: forward, backward and (for cases with a second derivative) double backward, so on
    every shape the gradient checks use (a sum_to kernel wrong for one broadcast fails here)."""
    case = traced_case
    mismatches: list[str] = []
    args = case.make(xp, float_dtype)
    with _comparing_kernels(pg_backend, mismatches):
        if case.grad_order < 1:
            _call(case, xp, args, requires_grad=False)
        else:
            _grads_to_second_order(case, xp, args, second=case.grad_order >= 2)
    assert not mismatches, f"{case.id}: " + "\n".join(dict.fromkeys(mismatches))

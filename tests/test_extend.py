"""polygrad.extend: the one module op, hook and backend authors import from."""

from __future__ import annotations

import numpy as np

import polygrad as pg
import polygrad.extend as E
from polygrad.core.op import REGISTRY
from polygrad.testing import check_grads


def test_every_name_of_extend_is_importable_and_public():
    """Each name in extend.__all__ exists, and none is a private module's private name."""
    for name in E.__all__:
        assert hasattr(E, name), name
        assert not name.startswith("_")


def test_an_op_written_with_extend_alone_is_differentiable():
    """A row declared with extend's Op, defvjp and apply passes the gradient check."""
    cube = E.defvjp(E.Op("extend_test_cube", lambda xp, x: x * x * x), lambda o, g, ans, x: g * 3 * x * x, saves="x")
    try:
        check_grads(lambda x: E.apply(cube, (x,)), [np.array([0.5, -1.0, 2.0])], order=2)
    finally:
        REGISTRY.pop("extend_test_cube")


def test_a_built_in_row_name_is_refused_and_another_place_warns():
    """Rules run rows by name (``o.sin`` in cos's rule), so a user row named "sin" silently
    changed the gradient of pg.cos: a built-in row's name is refused. A user row declared again
    elsewhere replaces the first with a warning that names both places (not silently)."""
    import pytest

    with pytest.raises(ValueError, match="'sin' is the name of a built-in op row"):
        E.Op("sin", lambda xp, x: 2 * x)
    assert REGISTRY["sin"] is E.row("sin") and E.row("sin").name == "sin"
    x = pg.Variable(np.array([0.5]))
    pg.cos(x).backward()
    np.testing.assert_allclose(x.grad, -np.sin([0.5]))
    first = E.Op("extend_test_once")
    try:
        with pytest.warns(UserWarning, match=r"op row 'extend_test_once' declared at .* replaces the one declared "
                                             r"at .*test_extend.py:\d+"):
            exec("Op('extend_test_once')", {"__name__": "another_module", "Op": E.Op})
        assert E.row("extend_test_once") is not first
    finally:
        REGISTRY.pop("extend_test_once")


def test_a_module_declaring_its_rows_again_replaces_them():
    """A reload (or a notebook cell run again) declares the same rows and public functions from
    the same module: they replace the old ones, and the rules that call them by name (raw
    arrays and create_graph) run the new ones."""
    import sys
    import types
    import warnings

    source = (  # (the same code each time, as a reload of an unchanged module; K is set from outside)
        "import polygrad.extend as E\n"
        "ROW = E.defvjp(E.Op('extend_test_scaled', lambda xp, x: x * K), lambda o, g, ans, x: g * K)\n"
        "@E.public(standard=False)\n"
        "def extend_test_scaled(x):\n"
        "    return E.apply(ROW, (x,))\n"
    )
    module = types.ModuleType("extend_test_reloaded")
    sys.modules[module.__name__] = module
    try:
        for k in (2.0, 3.0):  # declared, then declared again as a reload would
            module.K = k
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                exec(source, module.__dict__)
            x = pg.Variable(np.array([1.0, 2.0]))
            y = module.extend_test_scaled(x)
            np.testing.assert_allclose(y.array, [k, 2 * k])
            (g,) = pg.grad(pg.sum(y), [x], create_graph=True)
            np.testing.assert_allclose(g.array, [k, k])
            assert E.row("extend_test_scaled") is module.ROW
            assert pg.get_backend("numpy").raw_ops.extend_test_scaled(np.ones(1)) == k
    finally:
        del sys.modules[module.__name__]
        REGISTRY.pop("extend_test_scaled", None)
        from polygrad.ops._export import EXPORTS
        from polygrad.core.op import GRAPH_OPS

        EXPORTS[:] = [e for e in EXPORTS if e.name != "extend_test_scaled"]
        vars(GRAPH_OPS).pop("extend_test_scaled", None)


def test_a_public_name_is_registered_once():
    """``public`` refuses a second function of a registered name: rules call the differentiable
    namespace by name under create_graph, so a user's ``@public def sin`` made the gradient of
    pg.cos with create_graph=True -0.5 where -sin(0.5) is right."""
    import pytest

    def sin(x):
        return x

    with pytest.raises(ValueError, match="'sin' is the name of a built-in public function"):
        E.public(sin)

    def matmul(a, b):
        return a

    with pytest.raises(ValueError, match="'linalg_matmul' is the name of a built-in"):  # (listed by linalg too)
        E.public(matmul, ext="linalg")
    x = pg.Variable(np.array([0.5]))
    (g,) = pg.grad(pg.sum(pg.cos(x)), [x], create_graph=True)
    np.testing.assert_allclose(g.array, -np.sin([0.5]))


def test_a_plugin_needs_only_extend():
    """hookimpl and BackendInfo come from extend, the same objects as the contract's."""
    import polygrad.hookspecs as H

    assert E.hookimpl is H.hookimpl is pg.hookimpl
    assert E.BackendInfo is H.BackendInfo


def test_row_finds_a_kernel_for_any_backend():
    """row(name).kernel(backend) is the kernel apply runs there; an unknown name is a KeyError
    that names some rows."""
    import pytest

    numpy_backend = pg.get_backend("numpy")
    np.testing.assert_allclose(E.row("exp").kernel(numpy_backend)(np.array([0.0, 1.0])), [1.0, np.e])
    assert E.row("exp") is REGISTRY["exp"]
    with pytest.raises(KeyError, match="no op row named 'expp'; there are"):
        E.row("expp")


def test_elementwise_rows_are_declared_on_the_row():
    """Fusion takes the rows that say they are element-wise: the element-wise chapter and nn's
    pointwise rows; no reduction, view, linear algebra or random row says so."""
    from polygrad.compile.fusion import elementwise_rows

    rows = elementwise_rows()
    assert {"add", "exp", "where", "astype", "relu", "sigmoid", "softplus", "erf"} <= rows
    assert not rows & {"sum", "matmul", "reshape", "getitem", "softmax", "log_softmax", "linear", "dropout_mask"}
    assert all(REGISTRY[n].elementwise for n in rows)
    assert E.FusedNode._fields == ("op", "args", "params", "shape", "dtype", "kernel")


def test_two_modules_declaring_a_row_through_one_helper_are_two_places():
    """A helper that declares a row for its caller: two user modules calling it are two places,
    and the second replaces the first's row with a warning, not silently (its compiled functions,
    pickles and create_graph rules then run the other kernel). The same code run again (a
    reload, `exec` into the module's namespace, a helper chain) replaces it quietly."""
    import warnings

    import pytest

    helper = {"__name__": "extend_test_factory", "E": E}
    exec("def make(k):\n    return E.Op('extend_test_factory_row', lambda xp, x: x * k)\n", helper)
    first = {"__name__": "extend_test_first", "make": helper["make"]}
    try:
        exec("ROW = make(2.0)", first)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            exec("ROW = make(2.0)", first)  # the same code again: quietly
        with pytest.warns(UserWarning, match="replaces the one declared at"):
            exec("\n\nROW = make(10.0)", {"__name__": "extend_test_second", "make": helper["make"]})
    finally:
        REGISTRY.pop("extend_test_factory_row", None)


def test_two_declarations_on_one_line_or_two_sources_run_with_exec_are_two_places():
    """The place was (file, line) alone: two rows declared on one line, or two different
    sources run with exec (both "<string>", line 1), replaced each other quietly; and a kept
    `public(ext=...)` decorator took the place of the public() call, not of its use. Each
    warns now, pointing at the user's line."""
    import warnings

    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            a, b = E.Op("extend_test_line", lambda xp, x: x), E.Op("extend_test_line", lambda xp, x: x)  # noqa: F841
            exec("E.Op('extend_test_exec', lambda xp, x: x * 2)", {"E": E})
            exec("E.Op('extend_test_exec', lambda xp, x: x * 10)", {"E": E})
            keep = E.public(ext="linalg", standard=False)
            exec("def extend_test_dec(x):\n    return x\nkeep(extend_test_dec)", {"keep": keep})
            exec("\n\ndef extend_test_dec(x):\n    return x\nkeep(extend_test_dec)", {"keep": keep})
        messages = [str(w.message) for w in caught]
        assert any("'extend_test_line'" in m for m in messages), messages
        assert any("'extend_test_exec'" in m for m in messages), messages
        assert any("'linalg_extend_test_dec'" in m for m in messages), messages
        assert {w.filename for w in caught} <= {__file__, "<string>"}, [w.filename for w in caught]
    finally:
        from polygrad.core.op import GRAPH_OPS
        from polygrad.ops._export import EXPORTS

        for name in ("extend_test_line", "extend_test_exec"):
            REGISTRY.pop(name, None)
        EXPORTS[:] = [e for e in EXPORTS if e.name != "extend_test_dec"]
        vars(GRAPH_OPS).pop("linalg_extend_test_dec", None)


def test_declaring_from_code_with_an_unhashable_constant():
    """The place of a declaration hashes each frame's code object: one a bytecode tool gave an
    unhashable constant made Op() raise a TypeError."""
    def declare():
        return E.Op("extend_test_unhashable")

    declare.__code__ = declare.__code__.replace(co_consts=declare.__code__.co_consts + ([1],))
    try:
        assert declare().name == "extend_test_unhashable"
    finally:
        REGISTRY.pop("extend_test_unhashable", None)


def _declared(name, fwd, *rules, saves=""):
    """A row of a test, with its rules (removed by :func:`_forget`)."""
    return E.defvjp(E.Op(name, fwd), *rules, saves=saves)


def _forget(*names):
    for name in names:
        REGISTRY.pop(name, None)


def test_a_rule_of_the_wrong_shape_for_an_intermediate_is_refused_naming_the_row():
    """A rule that returned shape (1,) for an input of shape (3,) was refused only at a leaf: for
    an intermediate the next rule, or the sum with another gradient, broadcast it, and backward
    gave a wrong gradient silently (2 exp(x) for 2 w exp(x)); it is refused where the rule ran,
    naming the row and the input (a Python number as well: it was "'float' object has no
    attribute 'dtype'")."""
    import pytest

    bad = _declared("extend_test_shape", lambda xp, x: 2 * x, lambda o, g, ans, x: 2 * g[:1])
    number = _declared("extend_test_number", lambda xp, x: 2 * x, lambda o, g, ans, x: 2.0)
    w = pg.asarray(np.array([1.0, 2.0, 3.0]))
    try:
        for graph in (lambda x: E.apply(bad, (pg.exp(x),)), lambda x: E.apply(bad, (x * 1.0,)) + x * 1.0,
                      lambda x: E.apply(bad, (x,))):
            x = pg.Variable(np.array([0.5, 1.0, 2.0]))
            with pytest.raises(ValueError, match=r"extend_test_shape's vjp rule returned for input 0 is float64 "
                                                 r"\(1,\) on 'numpy', expected float64 \(3,\)"):
                pg.sum(graph(x) * w).backward()
            assert x.grad is None
        x = pg.Variable(np.array([0.5, 1.0, 2.0]))
        with pytest.raises(ValueError, match=r"extend_test_shape's vjp rule returned for input 0 is float64 \(1,\)"):
            pg.grad(pg.sum(E.apply(bad, (pg.exp(x),)) * w), [x], create_graph=True)
        with pytest.raises(ValueError, match=r"extend_test_number's vjp rule returned for input 0 is float64 \(\)"):
            pg.sum(E.apply(number, (pg.exp(x),)) * w).backward()
    finally:
        _forget("extend_test_shape", "extend_test_number")


def test_a_rule_of_another_precision_is_cast_and_of_the_right_shape_passes():
    """The gate of a third-party rule lets a right gradient through, and casts one of another
    precision to the input's dtype (as a leaf's gradient is)."""
    f32 = _declared("extend_test_f32", lambda xp, x: 3 * x, lambda o, g, ans, x: o.astype(3 * g, np.float32))
    try:
        x = pg.Variable(np.array([1.0, 2.0]))
        pg.sum(E.apply(f32, (pg.exp(x),))).backward()
        assert x.grad.dtype == np.float64
        np.testing.assert_allclose(x.grad, 3 * np.exp([1.0, 2.0]), rtol=1e-6)
    finally:
        _forget("extend_test_f32")


def test_every_built_in_row_passes_the_checks_of_a_third_party_row():
    """Third-party rows' kernel results and rule results are checked at every call (against the
    inputs' shapes, dtypes and backend); built-in rows are not, to keep the per-op path cheap, so
    here every op case runs with every row checked, forward and backward to second order: a
    built-in rule of the wrong shape (silently broadcast by the next rule) fails here."""
    from polygrad.core.op import _RAW_OPS
    from polygrad_conformance import plugin
    from polygrad_conformance.test_ops import _grads_to_second_order, cases_for

    backend = pg.get_backend("numpy")
    state = plugin.State(name=backend.name, backend=backend)
    rows = list(REGISTRY.values())
    before = [(op, op.checked, op.records) for op in rows]

    def forget_kernels():
        for op in rows:
            op._impl.clear()
        for raw in list(_RAW_OPS):
            for name in [n for n in vars(raw) if n in REGISTRY]:
                delattr(raw, name)

    cases = [c for c in cases_for("grad_case", backend, depth=True)
             if all(plugin.capability(state, cap)[0] for cap in c.requires)]
    assert len(cases) > 300
    try:
        for op in rows:
            op.checked = op.records = True
        forget_kernels()
        with pg.using_backend("numpy") as b:
            for case in cases:
                try:
                    _grads_to_second_order(case, b.xp, case.make(b.xp, b.xp.float64), second=case.grad_order >= 2)
                except Exception as exc:
                    raise AssertionError(f"{case.id}: {type(exc).__name__}: {exc}") from exc
    finally:
        for op, checked, records in before:
            op.checked, op.records = checked, records
        forget_kernels()


def test_a_rule_returning_another_backends_array_is_refused():
    """A rule that returned a numpy array for a dask input (np.asarray(g)), or a dask one for a
    numpy input, was accepted: the leaf's .grad was of another backend than its data."""
    import pytest

    da = pytest.importorskip("dask.array")
    to_np = _declared("extend_test_to_np", lambda xp, a: 2 * a, lambda o, g, ans, a: np.asarray(g) * 2.0)
    to_da = _declared("extend_test_to_da", lambda xp, a: 2 * a, lambda o, g, ans, a: da.from_array(np.asarray(g)) * 2)
    try:
        x = pg.Variable(da.from_array(np.array([1.0, 2.0, 3.0]), chunks=2))
        with pytest.raises(TypeError, match=r"extend_test_to_np's vjp rule returned for input 0 is float64 \(3,\) on "
                                            r"'numpy', expected float64 \(3,\) on 'dask'"):
            pg.sum(E.apply(to_np, (x,))).backward()
        x = pg.Variable(np.array([1.0, 2.0, 3.0]))
        with pytest.raises(TypeError, match=r"extend_test_to_da's vjp rule returned for input 0 .* on 'dask', "
                                            r"expected float64 \(3,\) on 'numpy'"):
            pg.sum(E.apply(to_da, (x,))).backward()
        assert x.grad is None
    finally:
        _forget("extend_test_to_np", "extend_test_to_da")


def test_a_missing_rule_is_an_error_and_none_means_no_gradient():
    """A row never given to defvjp, or given fewer rules than it has inputs, was differentiable
    with a zero gradient, silently; it is a NotImplementedError naming the row and the input (as
    in HIPS autograd). An explicit None still means "no gradient"."""
    import pytest

    bare = E.Op("extend_test_bare", lambda xp, x: 2 * x)
    few = _declared("extend_test_few", lambda xp, a, b: a * b, lambda o, g, ans, a, b: g * b, saves="xy")
    each = _declared("extend_test_each", lambda xp, a, b: a * b, lambda o, g, ans, a, b: g * b, saves=("y",))
    opted = _declared("extend_test_opted", lambda xp, a, b: a * b, lambda o, g, ans, a, b: g * b, None, saves="xy")
    try:
        x = pg.Variable(np.array([1.0, 2.0]))
        with pytest.raises(NotImplementedError, match="vjp of extend_test_bare with respect to input 0 is not "
                                                      r"defined: the row has no vjp rules \(defvjp was not called"):
            pg.sum(E.apply(bare, (x,))).backward()
        a, b = pg.Variable(np.array([1.0, 2.0])), pg.Variable(np.array([3.0, 4.0]))
        with pytest.raises(NotImplementedError, match="vjp of extend_test_few with respect to input 1 is not "
                                                      "defined: the row has a rule for input 0 only"):
            pg.sum(E.apply(few, (a, b))).backward()
        assert a.grad is None and b.grad is None
        pg.sum(E.apply(few, (a, np.array([3.0, 4.0])))).backward()  # b needs no gradient: its rule is not asked
        np.testing.assert_allclose(a.grad, [3.0, 4.0])
        with pytest.raises(NotImplementedError, match="vjp of extend_test_each with respect to input 1"):
            pg.sum(E.apply(each, (a, b))).backward()  # (apply raised IndexError: saves has one entry per rule)
        a, b = pg.Variable(np.array([1.0, 2.0])), pg.Variable(np.array([3.0, 4.0]))
        pg.sum(E.apply(opted, (a, b))).backward()
        np.testing.assert_allclose(a.grad, [3.0, 4.0])
        assert b.grad is None
    finally:
        _forget("extend_test_bare", "extend_test_few", "extend_test_each", "extend_test_opted")


def test_a_kernel_result_not_of_the_inputs_backend_is_refused_naming_the_row():
    """A kernel that returned a list, a Python number, or a numpy array for dask inputs made a
    Variable of it: the error came later, from the next op or repr, naming no row."""
    import pytest

    da = pytest.importorskip("dask.array")
    rows = [E.Op("extend_test_list", lambda xp, a: [1.0, 2.0]), E.Op("extend_test_float", lambda xp, a: 2.0),
            E.Op("extend_test_np", lambda xp, a: np.asarray(a) * 2),
            E.Op("extend_test_multi", lambda xp, a: [a, a], multi=True)]
    try:
        for op, data, what in zip(rows, (np.ones(2), np.ones(2), da.ones(2, chunks=1), np.ones(2)),
                                  ("a list for inputs on backend 'numpy'", "a float for inputs on backend 'numpy'",
                                   r"a 'numpy' array \(numpy.ndarray\) for inputs on backend 'dask'",
                                   r"\(declared multi=True\) returned a list, not a tuple")):
            with pytest.raises(TypeError, match=f"polygrad: {op.name} failed .*the forward kernel of {op.name} "
                                                f"(returned )?{what}"):
                E.apply(op, (pg.Variable(data),))
        y = E.apply(E.Op("extend_test_fine", lambda xp, a: xp.sum(a)), (np.ones(2),))  # (a NumPy scalar: numpy's)
        assert float(y.array) == 2.0
    finally:
        _forget(*(op.name for op in rows), "extend_test_fine")


def test_a_row_declared_again_warns_that_what_holds_the_old_one_keeps_it():
    """The warning said compiled functions "now run the new one", but a function compiled before
    keeps the kernels it was compiled with (and its pickle finds the new row by name): it says
    so, and that compiling again runs the new one."""
    import pickle

    import pytest

    from polygrad import symbolic as T

    cube = _declared("extend_test_again", lambda xp, x: x * x * x, lambda o, g, ans, x: g * 3 * x * x, saves="x")
    v = np.array([0.5, 1.0, 2.0])
    try:
        x = T.vector("x")
        f = pg.function([x], [pg.sum(E.apply(cube, (x,)))])
        with pytest.warns(UserWarning, match=r"rules \(o.extend_test_again\) and pickles find rows by name and run the "
                                             r"new one; graphs already recorded or built, functions compiled before "
                                             r"and code holding the old row keep running the old one \(and their "
                                             r"pickles the new one\): build and compile them again"):
            exec("E.defvjp(E.Op('extend_test_again', lambda xp, x: x * x), lambda o, g, ans, x: 2 * g * x, saves='x')",
                 {"E": E})
        np.testing.assert_allclose(f(v)[0], np.sum(v ** 3))
        np.testing.assert_allclose(pickle.loads(pickle.dumps(f))(v)[0], np.sum(v ** 2))
        g = pg.function([x], [pg.sum(E.apply(E.row("extend_test_again"), (x,)))])
        np.testing.assert_allclose(g(v)[0], np.sum(v ** 2))
    finally:
        _forget("extend_test_again")

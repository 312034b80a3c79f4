"""Debug mode: NaN/Inf checks naming the function and where it was called."""

from __future__ import annotations

import numpy as np
import pytest

import polygrad as pg

pytestmark = pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning")


def test_debug_forward_nan_names_function_and_user_line():
    """A NaN produced in forward raises FloatingPointError naming the op and this file."""
    x = pg.Variable(np.array([-1.0, 4.0]))
    with pg.debug_mode():
        with pytest.raises(FloatingPointError, match=r"sqrt.*test_debug\.py:\d+"):
            pg.sqrt(x)


def test_debug_backward_inf_names_function():
    """An Inf produced in backward raises naming the function whose backward made it."""
    x = pg.Variable(np.array([0.0, 4.0]))
    with pg.debug_mode():
        y = pg.sum(pg.sqrt(x))  # finite forward, infinite derivative at 0
        with pytest.raises(FloatingPointError, match=r"backward result.*sqrt"):
            y.backward()


def test_no_check_outside_debug_mode():
    """Without debug mode a NaN passes silently, as in numpy."""
    x = pg.Variable(np.array([-1.0]))
    with np.errstate(invalid="ignore"):
        y = pg.sqrt(x)
    assert np.isnan(y.data[0])


def test_set_debug_turns_on_and_off():
    """pg.set_debug(True) turns checking on in this thread until set_debug(False)."""
    x = pg.Variable(np.array([-1.0]))
    pg.set_debug(True)
    try:
        assert pg.is_debug()
        with pytest.raises(FloatingPointError):
            pg.log(x)
    finally:
        pg.set_debug(False)
    assert not pg.is_debug()
    with np.errstate(invalid="ignore"):
        pg.log(x)


def test_debug_version_error_shows_both_sites():
    """In debug mode a version error says where the saving op and the in-place op were called."""
    w = pg.Variable(np.array([1.0, 2.0]))
    with pg.debug_mode():
        x = w * 1.0
        y = pg.sin(x)
        x += 1.0
        with pytest.raises(RuntimeError, match=r"sin was called at .*test_debug\.py:\d+.*in-place \+= at .*test_debug\.py:\d+"):
            pg.sum(y).backward()


@pytest.mark.parametrize("make", ["two uses of a leaf", "two uses of an intermediate", "two backward passes"])
def test_debug_mode_catches_gradients_that_overflow_when_summed(make):
    """Each rule's result was checked, their sums were not: 1e308 + 1e308 reached x.grad as inf
    without an error (found by an adversarial pass)."""
    x = pg.Variable(np.array([0.0]))
    with pg.debug_mode(), np.errstate(over="ignore"), pytest.raises(FloatingPointError, match="their sum overflowed"):
        if make == "two uses of a leaf":
            pg.sum(pg.sin(x) * 1e308 + pg.sin(x) * 1e308).backward()
        elif make == "two uses of an intermediate":
            s = pg.sin(x)
            pg.sum(s * 1e308 + s * 1e308).backward()
        else:
            pg.sum(pg.sin(x) * 1e308).backward()
            pg.sum(pg.sin(x) * 1e308).backward()


def test_using_config_debug_is_debug_mode_whole():
    """using_config('debug', True) set the flag only: forward outputs went unchecked (log(0) passed)
    and call sites were '<unknown>'; False inside debug_mode left the forward checks on."""
    with pg.using_config("debug", True):
        assert pg.is_debug()
        with pytest.raises(FloatingPointError, match="output 0 of log .* called at .*test_debug.py"):
            pg.log(pg.Variable(np.array([0.0])))
    with pg.debug_mode():
        with pg.using_config("debug", False):
            assert not pg.is_debug()
            pg.log(pg.Variable(np.array([0.0])))  # no check
        with pytest.raises(FloatingPointError):
            pg.log(pg.Variable(np.array([0.0])))


@pytest.mark.parametrize("on", ["a leaf", "an intermediate"])
def test_debug_mode_names_a_gradient_hook_that_returns_nan(on):
    """A leaf's hook returning NaN went unchecked (x.grad = [nan, nan] without an error); an
    intermediate's was blamed on gradients whose 'sum overflowed'. Nothing is written to .grad."""
    x = pg.Variable(np.array([1.0, 2.0]), name="x")
    with pg.debug_mode():
        h = x if on == "a leaf" else x * 1.0
        h.register_hook(lambda g: g * np.nan)
        with pytest.raises(FloatingPointError, match=r"the hook .*<lambda> registered on variable.* turned its "
                                                     r"finite gradient into one that contains NaN or Inf"):
            pg.sum(h * 3).backward()
    assert x.grad is None


def test_debug_mode_leaves_a_hook_alone_that_passes_on_what_overflowed():
    """A gradient already infinite when it reaches a hook is the sum's fault, not the hook's."""
    x = pg.Variable(np.array([0.0]))
    with pg.debug_mode(), np.errstate(over="ignore"):
        s = pg.sin(x)
        s.register_hook(lambda g: g)
        with pytest.raises(FloatingPointError, match="their sum overflowed"):
            pg.sum(s * 1e308 + s * 1e308).backward()


def test_debug_mode_traces_compiled_functions_and_checks_every_row():
    """pg.set_debug(True) broke pg.function: the forward check asked a symbolic array for its
    namespace (TypeError). Now tracing works, and in debug mode the compiled program checks each
    row's result as eager ops are checked; outside debug mode it runs unchecked."""
    from polygrad import symbolic as T

    x = T.vector("x")
    pg.set_debug(True)
    try:
        f = pg.function([x], pg.sum(pg.log(x)))
        assert float(f(np.ones(3))) == 0.0
        with pytest.raises(FloatingPointError, match=r"output 0 of log \(row 0 of a compiled function's program\)"):
            f(-np.ones(3))
    finally:
        pg.set_debug(False)
    assert np.isnan(f(-np.ones(3)))


def _node_by_node(backend, nodes, inputs, outputs):
    """A fused kernel for any group, with or without numexpr, whatever the sizes: its rows in turn."""

    def kernel(*arrays):
        done = []
        for n in nodes:
            args = [arrays[v] if k == "input" else done[v] if k == "node" else v for k, v in n.args]
            done.append(n.kernel(*args, **n.params))
        return tuple(done[j] for j in outputs)

    return kernel


def test_debug_mode_checks_each_row_of_a_fused_group(monkeypatch):
    """A compiled function's checked program was generated from the fused program: where(x > 0,
    log(x), 0) masked log's NaN inside one kernel, and debug mode let it through, where eager
    raises. It checks each row, as eager checks each op, and the normal program stays fused."""
    from polygrad import symbolic as T
    from polygrad._registry import Backend
    from polygrad.compile import fusion

    monkeypatch.setattr(fusion, "ENABLED", True)
    monkeypatch.setattr(Backend, "fuse_elementwise", _node_by_node)
    x = T.vector("x")
    f = pg.function([x], pg.sum(pg.where(x > 0, pg.log(x), 0.0)))
    f(np.array([1.0, 2.0]))  # compiled outside debug mode
    assert "fused greater, log, where" in f.program_source()
    bad = np.array([-1.0, 2.0])
    with pg.debug_mode():
        with pytest.raises(FloatingPointError, match=r"output 0 of log \(row \d+ of a compiled function's program\)"):
            f(bad)
        with pytest.raises(FloatingPointError, match=r"output 0 of log contains NaN or Inf; log was called at"):
            pg.sum(pg.where(pg.Variable(bad) > 0, pg.log(pg.Variable(bad)), 0.0))  # as eager
    assert float(f(bad)) == np.log(2.0)


def test_a_first_compiled_call_in_debug_mode_is_checked_as_eager_code():
    """The trace of a first call hides the user's hooks but keeps debug mode's: a NaN is named
    with the line of user code that made it, as in eager code."""
    from polygrad import symbolic as T

    x = T.vector("x")
    f = pg.function([x], pg.sum(pg.log(x)))  # (this line: the call site)
    with pg.debug_mode(), pytest.raises(FloatingPointError, match=r"output 0 of log .* called at .*test_debug\.py"):
        f(-np.ones(2))


def test_a_user_file_beside_the_package_is_a_call_site():
    """A file in a sibling folder whose name starts with the package's (polygrad_demo/) was taken
    for polygrad's own: debug messages named a frame further out."""
    from polygrad.core import debug

    beside = debug._PACKAGE.rstrip("/\\") + "_demo/train.py"
    scope: dict = {"user_site": debug.user_site}
    exec(compile("site = user_site()", beside, "exec"), scope)
    assert scope["site"].startswith(beside + ":1 ")

"""The op table (``polygrad_conformance.cases``, the one table of op cases), its
core and its in-depth cases, run in-process on numpy and array_api_strict by the
conformance suite's own tests: forward values against each backend's namespace
and against numpy, the graph recorded, kernel overrides, gradients to second
order (complex ones by the complex dot-product test), the vjp in its output
gradient, and the gradients backward leaves.

A case that needs what a backend lacks is skipped with the reason; the known
failures of the array_api_strict namespace (the strict example plugin's
``conformance-xfails.txt``) are strict xfails here, as they are in
``polygrad-conformance strict``. Every row of the op table having a case is
checked by the conformance suite itself (``test_every_op_has_a_case``).
"""

from __future__ import annotations

import pytest

import polygrad as pg
from polygrad_conformance import plugin, xfails
from polygrad_conformance.test_ops import (  # noqa: F401  (collected here, on this file's backends)
    CASE_ARGUMENTS,
    cases_for,
    test_backward_grads_belong_to_backend,
    test_forward,
    test_forward_agrees_with_numpy,
    test_forward_records_graph,
    test_grad,
    test_grad2,
    test_kernel_paths,
    test_vjp_of_vjp,
)

from conftest import BACKENDS


def _known_failures(name: str) -> list:
    """The known failures of backend ``name``'s namespace: its plugin's file (the strict
    example's for array_api_strict, whose namespace it shares)."""
    if name == "array_api_strict":
        import polygrad_strict as owner
    else:
        owner = pg.get_backend(name).plugin
    path = xfails.locate(owner)
    return xfails.load(path) if path is not None else []


def _marks(backend, test: str, case) -> list:
    state = plugin.State(name=backend.name, backend=backend)
    marks = [pytest.mark.skip(reason=why) for ok, why in (plugin.capability(state, cap) for cap in case.requires) if not ok]
    short = f"test_ops.py::{test}[{case.id}]"
    marks += [pytest.mark.xfail(strict=True, reason=e.reason) for e in _known_failures(backend.name) if e.matches(short)]
    return marks


def _cases(test: str, argument: str, backend) -> list:
    """Every case for ``argument``; test_grad only takes those without a second derivative, as
    test_grad2 checks the first derivative (the same check, same seed) before the second."""
    cases = cases_for(argument, backend, depth=True)
    return [c for c in cases if c.grad_order < 2] if test == "test_grad" else cases


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    argument = next((a for a in CASE_ARGUMENTS if a in metafunc.fixturenames), None)
    if argument is not None:
        backends = [pg.get_backend(name) for name in BACKENDS]
        metafunc.parametrize(("pg_backend", argument), [
            pytest.param(b.name, c, id=f"{b.name}-{c.id}", marks=_marks(b, metafunc.function.__name__, c))
            for b in backends for c in _cases(metafunc.function.__name__, argument, b)
        ], indirect=["pg_backend"])


@pytest.fixture
def pg_backend(request):
    """The backend named by the test's parameter (looked up now: plugins registered since may have replaced it)."""
    return pg.get_backend(request.param)


@pytest.fixture
def xp(pg_backend):
    """The backend's namespace, the backend made current (creation cases create there)."""
    with pg.using_backend(pg_backend.name) as b:
        yield b.xp


@pytest.fixture
def float_dtype(xp):
    return xp.float64


@pytest.fixture
def tol():
    return plugin.TOLERANCES["float64"]

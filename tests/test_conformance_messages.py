"""The conformance suite's own failures and skips say what is wrong, in words a plugin author
can act on (from a report by a third party who wrote a lazy backend from the docs alone).
The suite's test functions are called here directly, on stand-ins for a faulty backend."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

import polygrad as pg

pytest.importorskip("polygrad_conformance")
import polygrad_conformance.test_lazy as lazy_tests  # noqa: E402  (modules, not functions: nothing collected twice)
import polygrad_conformance.test_random as random_tests  # noqa: E402


class _ForbidsNothing:
    """A lazy backend whose polygrad_forbid_compute guard lets everything compute."""

    name = "forbidsnothing"

    def forbid_compute(self):
        return contextlib.nullcontext()


def test_a_guard_that_forbids_nothing_fails_naming_the_guard():
    """Not pytest's bare "DID NOT RAISE": the message names the hook and what was computed."""
    import array_api_compat.numpy as xp

    with pytest.raises(pytest.fail.Exception) as info:
        lazy_tests.test_forbid_compute_really_forbids(_ForbidsNothing(), xp, xp.float64)
    message = str(info.value)
    assert "DID NOT RAISE" not in message
    assert message.startswith("the guard of polygrad_forbid_compute (backend 'forbidsnothing') did not raise on "
                              "pg.compute(xp.asarray([1.0, 2.0]) * 2.0)")


def test_materialize_returning_the_lazy_type_says_what_it_must_return(monkeypatch):
    """A polygrad_materialize that hands back the lazy library's own arrays (computed or not)
    fails saying that it must return concrete arrays of an eager library such as numpy."""
    pytest.importorskip("dask.array")
    backend = pg.get_backend("dask")
    monkeypatch.setattr(backend, "materialize", lambda arrays: tuple(arrays))
    with pytest.raises(AssertionError, match=r"of backend 'dask' itself: polygrad_materialize must return "
                                             r"concrete arrays of an eager library"):
        with pg.using_backend("dask"):
            lazy_tests.test_forward_and_backward_compute_nothing(backend, backend.xp, backend.xp.float64)


def test_the_shared_generator_skip_in_compiled_mode_is_a_sentence():
    """The reason was the garbled "the shared generator is no op: nothing to compile"."""
    with pytest.raises(pytest.skip.Exception) as info:
        random_tests.test_draws_differ_and_pg_seed_repeats_them(None, np, np.float64, "rng_normal", "compiled")
    assert str(info.value.msg).startswith("the shared generator is called directly, not through an op of polygrad")


def test_host_sums_of_complex_values_work_on_a_library_without_tolist():
    """The float32 gradient checks sum on the host through ``_util.tolist``: on a library without
    ``.tolist()`` (array_api_strict) a 0-d complex value is that number, not ``bool(x)`` (True), so the
    check of a complex case passes there (it failed with "analytic 4.0 != numeric 0.0", element counts)."""
    import array_api_strict as xp

    from polygrad.ops import fft as FFT
    from polygrad_conformance._util import tolist
    from polygrad_conformance.gradcheck import check_vjp

    assert tolist(xp.asarray([[1.5 - 2.0j, 0.5j]], dtype=xp.complex64)) == [[1.5 - 2.0j, 0.5j]]
    assert tolist(xp.asarray(-0.5, dtype=xp.float32)) == -0.5 and tolist(xp.asarray(3)) == 3
    z = xp.asarray([1.0 + 0.5j, -0.5 + 0.25j, 2.0 - 1.0j], dtype=xp.complex64)
    check_vjp(lambda v: FFT.fft(v), [z], rtol=5e-3, atol=1e-3, extrapolate=True)


@pytest.mark.parametrize("argv, env, runs, status", [
    (["numpy", "-x"], None, ["--polygrad-backend", "numpy", "-x"], None),
    (["-k", "grad"], "dask", ["-k", "grad"], None),              # POLYGRAD_BACKEND names it, as on the pytest route
    (["--polygrad-backend", "dask", "-x"], None, ["--polygrad-backend", "dask", "-x"], None),
    (["--polygrad-backend=dask"], None, ["--polygrad-backend=dask"], None),
    ([], None, None, 2),                                         # neither: the usage, on stderr
    (["-k", "grad"], None, None, 2),
    (["-h"], "dask", None, 0),
])
def test_the_command_takes_the_backend_as_the_pytest_route_does(monkeypatch, capsys, argv, env, runs, status):
    """``POLYGRAD_BACKEND=numpy polygrad-conformance -k x`` printed the usage and exited 2 (so did
    ``--polygrad-backend numpy`` first), though the guide lists both, and ``pytest --pyargs`` takes both."""
    from polygrad_conformance import cli

    ran = []
    monkeypatch.setattr(pytest, "main", lambda args: ran.append(args) or 0)
    if env is None:
        monkeypatch.delenv("POLYGRAD_BACKEND", raising=False)
    else:
        monkeypatch.setenv("POLYGRAD_BACKEND", env)
    got = cli.main(argv)
    if runs is None:
        assert (got, ran) == (status, [])
        out, err = capsys.readouterr()
        assert (out if status == 0 else err).startswith("usage: polygrad-conformance [BACKEND]")
    else:
        assert got == 0 and ran[0][ran[0].index("polygrad_conformance") + 1:] == runs

"""Runs an Array API client function on numpy arrays and on Variables, and says what happened.

A case is one call of a client library's public function (scipy, scikit-learn,
array-api-extra, marray) on small float64 inputs. :func:`run_case` calls it

* on the numpy inputs: the reference, the client's own result;
* on Variables of the same data (on the numpy or the strict backend), unchanged;

compares the two results leaf by leaf (shape, dtype kind and values, NaN
equal to NaN), and differentiates ``L = sum_k sum(w_k * out_k)`` (fixed
random weights ``w_k``, one per float output; real and imaginary parts for
complex ones) with ``pg.grad`` with respect to the float inputs, once under
the default ``pg.inplace_policy("check")`` and once under ``"copy"``, and
compares with central finite differences of the same ``L`` computed by the
client on numpy arrays. The outcome is one word (:data:`OUTCOMES`) and a detail
line.
"""

from __future__ import annotations

import dataclasses
import importlib
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

#: What can happen to a case. The first five are good ones; the test asserts each case's.
OUTCOMES = {
    "grad": "right values; gradients match finite differences, under the default inplace policy and under 'copy'",
    "copy": "right values; under the default policy backward refuses with the in-place error, "
            "under pg.inplace_policy('copy') gradients match finite differences",
    "numpy": "right values, but the client computed them with numpy (float(), or np.asarray of inputs that "
             "need no gradient): the result is not a Variable, or pg.grad refuses it clearly as not depending "
             "on the inputs",
    "value": "right values; the output carries no gradient (integer or bool results, or a case that asks for none)",
    "refused": "the call or its gradient raised a clear polygrad error (np.asarray of a Variable that requires "
               "grad is one: what numpy computes from it would have no gradient)",
    # failures
    "client": "the client raised an error that it also raises on plain array_api_strict arrays (its own limitation)",
    "error": "an unexpected error, one the client does not raise on plain array_api_strict arrays",
    "misshaped": "the result has another structure or shape than the client's result on numpy",
    "wrong-value": "the values differ from the client's result on numpy",
    "wrong-grad": "the gradient differs from finite differences (silently)",
    "reference-failed": "the client failed on plain numpy inputs: the case itself is wrong",
}
#: Outcomes a case may expect, and what else satisfies that expectation: any good outcome at
#: least as good (a client release that computes with the namespace where it used numpy, or
#: stops writing into saved arrays, passes; polygrad getting worse does not), and for a client
#: that converts to numpy, a refusal at the call. The failures (wrong values or gradients, a wrong
#: shape, an unexpected error) satisfy nothing.
ACCEPT = {
    "grad": {"grad"},
    "copy": {"copy", "grad"},
    "numpy": {"numpy", "refused", "copy", "grad"},
    "value": {"value"},
    "refused": {"refused", "numpy", "copy", "grad"},
    "client": {"client", "refused", "numpy", "value", "copy", "grad"},
}

_INPLACE = "modified by an in-place operation"
_DISCONNECTED = ("is not used to compute the outputs", "there is nothing to differentiate")


class Lazy:
    """A module imported on first attribute access, so that case tables can be read (for
    test ids) without importing the client library (scipy must see SCIPY_ARRAY_API first)."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self._name), attr)


@dataclass
class Case:
    """One client call. ``fn(*args)`` is called with numpy arrays, then with Variables.

    ``expect``: the outcome that is right for this case (one of :data:`ACCEPT`), or a
    dict backend -> outcome. ``diff``: positions of the inputs to differentiate (default:
    every float array; ``()`` for none). ``xfail``: "polygrad: <why>" or "client: <why>"
    for a case that does not give the right outcome yet (its test is an
    xfail(strict=True), so that it shows when fixed). ``client``: why the client library
    cannot do it, for an expected ``"client"`` outcome. ``backends``: where to run it.
    """

    name: str
    fn: Callable
    args: tuple
    expect: Any = "grad"
    diff: tuple | None = None
    xfail: str | None = None
    client: str | None = None
    backends: tuple = ("numpy", "strict")
    rtol: float = 1e-5
    setup: Callable | None = field(default=None, repr=False)

    def expected(self, backend: str) -> str:
        return self.expect.get(backend, "grad") if isinstance(self.expect, dict) else self.expect


# ---------------------------------------------------------------------------
# inputs
# ---------------------------------------------------------------------------
def normal(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=shape)


def uniform(*shape: int, low: float = 0.1, high: float = 0.9, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(low, high, size=shape)


def positive(*shape: int, seed: int = 0) -> np.ndarray:
    return uniform(*shape, low=0.5, high=2.0, seed=seed)


# ---------------------------------------------------------------------------
# results as leaves
# ---------------------------------------------------------------------------
def leaves(obj: Any, path: str = "out") -> list[tuple[str, Any]]:
    """The arrays and numbers of a result, with a path each (tuples, namedtuples, lists,
    dicts and masked arrays are opened; None and strings are leaves)."""
    import polygrad as pg

    if isinstance(obj, (pg.Variable, np.ndarray, np.generic, int, float, complex, bool, str)) or obj is None:
        return [(path, obj)]
    if hasattr(obj, "mask") and hasattr(obj, "data") and type(obj).__name__ == "MArray":
        # marray leaves the data under the mask unspecified (sort puts inf there): compare and
        # differentiate the data where it is not masked
        data, mask = obj.data, obj.mask
        xp = data.__array_namespace__() if hasattr(data, "__array_namespace__") else np
        return leaves(xp.where(mask, xp.zeros_like(data), data), path + ".data") + leaves(mask, path + ".mask")
    if isinstance(obj, dict):
        return [kv for k in sorted(obj) for kv in leaves(obj[k], f"{path}[{k!r}]")]
    if isinstance(obj, (tuple, list)):
        return [kv for i, v in enumerate(obj) for kv in leaves(v, f"{path}[{i}]")]
    if hasattr(obj, "__array_namespace__"):  # an array of another library (array_api_strict)
        return [(path, obj)]
    if dataclasses.is_dataclass(obj):  # result objects
        return [kv for f in dataclasses.fields(obj) for kv in leaves(getattr(obj, f.name), f"{path}.{f.name}")]
    if type(obj).__module__.startswith("scipy.") and hasattr(obj, "__dict__"):  # DirectionalStats
        return [kv for k in sorted(vars(obj)) for kv in leaves(vars(obj)[k], f"{path}.{k}")]
    raise TypeError(f"cannot compare a result of type {type(obj).__name__} at {path}")


def to_numpy(v: Any) -> Any:
    import polygrad as pg

    if isinstance(v, pg.Variable):
        v = v.data
    if v is None or isinstance(v, str):
        return v
    return np.asarray(v)


def compare(got: Any, ref: Any) -> tuple[str, str] | None:
    """None if ``got`` (from Variables) equals ``ref`` (from numpy), else (outcome, detail)."""
    g, r = leaves(got), leaves(ref)
    if [p for p, _ in g] != [p for p, _ in r]:
        return "misshaped", f"result structure {[p for p, _ in g]} != client's on numpy {[p for p, _ in r]}"
    for (path, a), (_, b) in zip(g, r):
        a, b = to_numpy(a), to_numpy(b)
        if a is None or b is None or isinstance(a, str) or isinstance(b, str):
            if a is not b and a != b:
                return "wrong-value", f"{path}: {a!r} != {b!r}"
            continue
        if a.shape != b.shape:
            return "misshaped", f"{path}: shape {a.shape} != client's on numpy {b.shape}"
        if a.dtype.kind != b.dtype.kind and not (a.dtype.kind in "biu" and b.dtype.kind in "biu"):
            return "wrong-value", f"{path}: dtype {a.dtype} != client's on numpy {b.dtype}"
        if a.dtype.kind in "fc":
            scale = float(np.nanmax(np.abs(b), initial=1.0)) if b.size else 1.0
            ok = np.allclose(a, b, rtol=1e-9, atol=1e-12 * scale, equal_nan=True)
        else:
            ok = np.array_equal(a, b)
        if not ok:
            return "wrong-value", f"{path}: {np.array2string(a, precision=6)} != {np.array2string(b, precision=6)}"
    return None


# ---------------------------------------------------------------------------
# the scalar that is differentiated
# ---------------------------------------------------------------------------
def float_paths(result: Any) -> list[str]:
    """The paths of the float or complex leaves of ``result`` (a result on Variables)."""
    out = []
    for path, v in leaves(result):
        if isinstance(v, (float, complex)) and not isinstance(v, bool):
            out.append(path)
        elif v is not None and not isinstance(v, (str, int, bool)) and to_numpy(v).dtype.kind in "fc":
            out.append(path)
    return out


def weights(path: str, shape: tuple) -> np.ndarray:
    seed = sum(path.encode()) + 7 * len(shape)
    return np.random.default_rng(seed).uniform(0.5, 1.5, size=shape)


def reduce_np(result: Any, paths: list[str]) -> float:
    """L of the client's result on numpy."""
    total = 0.0
    found = dict(leaves(result))
    for p in paths:
        a = to_numpy(found[p])
        w = weights(p, a.shape)
        total += float(np.sum(w * a.real)) + (float(np.sum(w[::-1] * a.imag)) if a.dtype.kind == "c" else 0.0)
    return total


def reduce_pg(result: Any, paths: list[str], backend: str) -> Any:
    """L of the result on Variables: the same sum, with polygrad's ops (leaves that are not
    Variables count as constants, so a client that leaves polygrad shows as a wrong gradient)."""
    import polygrad as pg

    total = None
    found = dict(leaves(result))
    for p in paths:
        v = found[p]
        if not isinstance(v, pg.Variable):
            v = pg.asarray(to_numpy(v), backend=backend)
        xp = v.__array_namespace__()
        w = weights(p, tuple(v.shape))
        if xp.isdtype(v.dtype, "complex floating"):
            term = xp.sum(xp.asarray(w) * xp.real(v)) + xp.sum(xp.asarray(w[::-1].copy()) * xp.imag(v))
        else:
            term = xp.sum(xp.asarray(w) * v)
        total = term if total is None else total + term
    return total


# ---------------------------------------------------------------------------
# running a case
# ---------------------------------------------------------------------------
def _copy(args: tuple) -> list:
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def _variables(args: tuple, backend: str) -> list:
    import polygrad as pg

    out = []
    for a in args:
        if isinstance(a, np.ndarray):
            data = pg.asarray(a.copy(), backend=backend).data
            out.append(pg.Variable(data))  # float: requires grad; int and bool: not (by dtype)
        else:
            out.append(a)
    return out


def _describe(e: BaseException) -> str:
    return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:400]


def _clear(e: BaseException) -> bool:
    """A clear refusal: a polygrad error, which says what went wrong, or numpy's refusal to
    apply a ufunc to a Variable (Variables opt out of ufuncs with __array_ufunc__ = None)."""
    msg = str(e)
    if isinstance(e, TypeError) and "operand 'Variable' does not support ufuncs" in msg:
        return True
    return msg.startswith("polygrad") and isinstance(e, (RuntimeError, TypeError, ValueError, NotImplementedError))


def _on_strict(case: Case) -> str | None:
    """The error the client raises on plain array_api_strict arrays (None if it works there)."""
    import array_api_strict as xps

    try:
        case.fn(*[xps.asarray(a) if isinstance(a, np.ndarray) else a for a in _copy(case.args)])
    except Exception as e:  # noqa: BLE001 - any failure of the client is what we ask about
        return _describe(e)
    return None


def _failed_call(case: Case, e: BaseException) -> tuple[str, str]:
    if _clear(e):  # polygrad's own refusal, whatever the client would do elsewhere
        return "refused", _describe(e)
    there = _on_strict(case)
    if there is not None:
        return "client", f"{_describe(e)} (on plain array_api_strict arrays too: {there})"
    return "error", _describe(e)


def _fd(case: Case, diff: list[int], paths: list[str], eps: float = 1e-6) -> list[np.ndarray]:
    """Central differences of L (computed by the client on numpy) for each input in ``diff``."""
    out = []
    for i in diff:
        x = np.asarray(case.args[i], dtype=float)
        g = np.zeros_like(x)
        for j in np.ndindex(*x.shape):
            h = eps * max(1.0, abs(x[j]))
            vals = []
            for s in (+1, -1):
                args = _copy(case.args)
                xj = x.copy()
                xj[j] += s * h
                args[i] = xj
                vals.append(reduce_np(case.fn(*args), paths))
            g[j] = (vals[0] - vals[1]) / (2 * h)
        out.append(g)
    return out


def _grad(case: Case, backend: str, policy: str, diff: list[int], ref: Any) -> tuple[str, Any]:
    """("ok", grads) or (outcome, detail): forward and backward under ``policy``."""
    import polygrad as pg

    args = _variables(case.args, backend)
    try:
        with pg.inplace_policy(policy):
            out = case.fn(*args)
            bad = compare(out, ref)
            if bad is not None:
                return bad[0], f"under inplace_policy({policy!r}): {bad[1]}"
            paths = float_paths(out)
            loss = reduce_pg(out, paths, backend)
            grads = pg.grad(loss, [args[i] for i in diff])
    except Exception as e:  # noqa: BLE001
        msg = str(e)
        if _INPLACE in msg:
            return "inplace", _describe(e)
        if any(m in msg for m in _DISCONNECTED):
            return "disconnected", _describe(e)
        kind = "refused" if _clear(e) else "error"  # the call itself worked: polygrad's, not the client's
        return kind, f"forward and gradient under inplace_policy({policy!r}): {_describe(e)}"
    return "ok", [to_numpy(g) for g in grads]


def _grads_match(got: list, fd: list, rtol: float) -> str | None:
    for i, (g, f) in enumerate(zip(got, fd)):
        scale = max(1.0, float(np.max(np.abs(f), initial=0.0)))
        if g.shape != f.shape or not np.allclose(g, f, rtol=rtol, atol=1e-6 * scale):
            return f"input {i}: pg.grad {np.array2string(g, precision=6)} != finite differences " \
                   f"{np.array2string(f, precision=6)}"
    return None


def run_case(case: Case, backend: str) -> tuple[str, str]:
    """The outcome of ``case`` on ``backend`` and a line of detail."""
    import polygrad as pg

    try:
        ref = case.fn(*_copy(case.args))
    except Exception as e:  # noqa: BLE001
        return "reference-failed", _describe(e)
    args = _variables(case.args, backend)
    try:
        out = case.fn(*args)
    except Exception as e:  # noqa: BLE001
        return _failed_call(case, e)
    bad = compare(out, ref)
    if bad is not None:
        return bad
    paths = float_paths(out)
    diff = [i for i, a in enumerate(case.args) if isinstance(a, np.ndarray) and a.dtype.kind == "f"] \
        if case.diff is None else list(case.diff)
    if not diff or not paths:
        return "value", f"outputs {[type(v).__name__ for _, v in leaves(out)]}, no gradient asked"
    found = dict(leaves(out))
    if not any(isinstance(found[p], pg.Variable) for p in paths):
        return "numpy", f"the result is {', '.join(sorted({type(found[p]).__name__ for p in paths}))}, not Variables"
    try:
        fd = _fd(case, diff, paths)
    except Exception as e:  # noqa: BLE001
        return "reference-failed", f"finite differences: {_describe(e)}"
    check, got = _grad(case, backend, "check", diff, ref)
    if check == "disconnected":
        return "numpy", f"the result is a Variable that does not depend on the inputs; pg.grad says {got}"
    if check not in ("ok", "inplace"):
        return check, got
    if check == "ok":
        bad_check = _grads_match(got, fd, case.rtol)
        if bad_check is not None:
            return "wrong-grad", f"under inplace_policy('check'): {bad_check}"
    copy, got_copy = _grad(case, backend, "copy", diff, ref)
    if copy != "ok":
        return (copy if copy not in ("inplace", "disconnected") else "error"), f"under 'copy': {got_copy}"
    bad_copy = _grads_match(got_copy, fd, case.rtol)
    if bad_copy is not None:
        return "wrong-grad", f"under inplace_policy('copy'): {bad_copy}"
    if check == "inplace":
        return "copy", f"under 'check': {got}"
    return "grad", ""


def run_all(cases: list[Case], backends: tuple = ("numpy", "strict")) -> dict:
    """{backend: {case name: {"outcome", "detail", "seconds"}}} for the cases that run there."""
    results: dict = {}
    for backend in backends:
        row = results.setdefault(backend, {})
        for case in cases:
            if backend not in case.backends:
                continue
            t0 = time.perf_counter()
            try:
                outcome, detail = run_case(case, backend)
            except Exception as e:  # noqa: BLE001 - a harness failure is reported, not raised
                outcome, detail = "error", f"harness: {_describe(e)}"
            row[case.name] = {"outcome": outcome, "detail": detail, "seconds": round(time.perf_counter() - t0, 3)}
    return results


__all__ = ["ACCEPT", "OUTCOMES", "Case", "Lazy", "leaves", "normal", "positive", "run_all", "run_case", "uniform"]

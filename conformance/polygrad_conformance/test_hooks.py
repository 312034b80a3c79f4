"""Function hooks fire in the same order with the same arguments on every
backend; Variable hooks see and may replace gradients."""

from __future__ import annotations

import pytest

import polygrad as pg
from polygrad.core.dispatch import backend_of_type
from polygrad_conformance._util import tolist


def _shapes(arrays):
    return tuple(None if a is None else tuple(a.shape) if hasattr(a, "shape") else type(a).__name__ for a in arrays)


class Recorder(pg.FunctionHook):
    name = "conformance-recorder"

    def __init__(self):
        self.trace, self.arrays = [], []

    def _rec(self, phase, function, in_data, out_grad=()):
        self.trace.append((phase, function.label, _shapes(in_data), _shapes(out_grad)))
        self.arrays.extend(a for a in (*in_data, *out_grad) if a is not None and hasattr(a, "shape"))

    def forward_preprocess(self, function, in_data):
        self._rec("forward_preprocess", function, in_data)

    def forward_postprocess(self, function, in_data):
        self._rec("forward_postprocess", function, in_data)

    def backward_preprocess(self, function, in_data, out_grad):
        self._rec("backward_preprocess", function, in_data, out_grad)

    def backward_postprocess(self, function, in_data, out_grad):
        self._rec("backward_postprocess", function, in_data, out_grad)


def _program(xp, dtype):
    x = pg.Variable(xp.asarray([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]], dtype=dtype))
    w = pg.Variable(xp.asarray([1.0, -1.0, 2.0], dtype=dtype))
    rec = Recorder()
    with rec:
        z = pg.sum(pg.exp(x) * w)
        z.backward()
    return rec


EXPECTED = [  # (phase, function, shapes of in_data) -- and of out_grad for backward
    ("forward_preprocess", "exp", ((2, 3),)),
    ("forward_postprocess", "exp", ((2, 3),)),
    ("forward_preprocess", "multiply", ((2, 3), (3,))),
    ("forward_postprocess", "multiply", ((2, 3), (3,))),
    ("forward_preprocess", "sum", ((2, 3),)),
    ("forward_postprocess", "sum", ((2, 3),)),
    ("backward_preprocess", "sum", ((),)),
    ("backward_postprocess", "sum", ((),)),
    ("backward_preprocess", "multiply", ((2, 3),)),
    ("backward_postprocess", "multiply", ((2, 3),)),
    ("backward_preprocess", "exp", ((2, 3),)),
    ("backward_postprocess", "exp", ((2, 3),)),
]


def test_function_hook_order_and_arguments(pg_backend, xp, float_dtype):
    """Forward and backward hooks bracket each step, in graph order, with arrays of the backend."""
    rec = _program(xp, float_dtype)
    got = [(p, f, i if p.startswith("forward") else g) for p, f, i, g in rec.trace]
    assert got == EXPECTED
    owners = {backend_of_type(type(a)).name for a in rec.arrays}
    assert owners == {pg_backend.name}, owners


@pytest.mark.requires("numpy")
def test_function_hook_trace_equals_numpy(xp, float_dtype):
    """The full trace (including which inputs backward kept) is the numpy backend's."""
    ours = _program(xp, float_dtype).trace
    np_xp = pg.get_backend("numpy").xp
    with pg.using_backend("numpy"):
        theirs = _program(np_xp, np_xp.float64 if float_dtype == xp.float64 else np_xp.float32).trace
    assert ours == theirs


def test_local_function_hook_sees_only_its_node(xp, float_dtype):
    """function.add_hook(hook) calls the hook for that node's backward only."""
    x = pg.Variable(xp.asarray([1.0, 2.0], dtype=float_dtype))
    y = pg.exp(x)
    z = pg.sum(y * y)
    rec = Recorder()
    y.creator.add_hook(rec)
    z.backward()
    assert [(p, f) for p, f, _, _ in rec.trace] == [("backward_preprocess", "exp"), ("backward_postprocess", "exp")]


def test_variable_hook_replaces_gradient(pg_backend, xp, float_dtype):
    """x.register_hook(fn) sees x's gradient (an array of the backend) and its result replaces it."""
    x = pg.Variable(xp.asarray([1.0, 2.0], dtype=float_dtype))
    seen = []

    def hook(g):
        seen.append(g)
        return g * 3.0

    x.register_hook(hook)
    pg.sum(x * x).backward()
    assert len(seen) == 1 and backend_of_type(type(seen[0])) is pg_backend
    assert tolist(x.grad) == [6.0, 12.0]

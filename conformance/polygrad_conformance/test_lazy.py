"""Laziness: a lazy backend computes nothing in forward or backward, and
pg.compute materializes loss and gradients together, on request."""

from __future__ import annotations

import pytest

import polygrad as pg
import polygrad.functions as F
from polygrad.core.dispatch import backend_of_type
from polygrad_conformance._util import index_dtype, tolist


def _mlp_loss(xp, dtype):
    gen = pg.get_backend().random_generator(0)
    x = pg.Variable(gen.normal((6, 4), dtype=dtype), requires_grad=False)
    w1 = pg.Variable(gen.normal((3, 4), dtype=dtype))
    b1 = pg.Variable(gen.normal((3,), dtype=dtype))
    w2 = pg.Variable(gen.normal((2, 3), dtype=dtype))
    t = xp.asarray([0, 1, 1, 0, 1, 0], dtype=index_dtype(xp))
    h = F.tanh(F.linear(x, w1, b1))
    loss = F.softmax_cross_entropy(F.linear(h, w2), t) + pg.mean(h[1:4, :] * h[1:4, :])
    return loss, [w1, b1, w2]


@pytest.mark.requires("lazy")
def test_forbid_compute_really_forbids(pg_backend, xp, float_dtype):
    """The backend's polygrad_forbid_compute guard exists and makes computing raise."""
    guard = pg_backend.forbid_compute()
    assert guard is not None, f"lazy backend {pg_backend.name!r} must implement polygrad_forbid_compute"
    a = xp.asarray([1.0, 2.0], dtype=float_dtype) * 2.0
    try:
        with guard:
            pg.compute(a)
    except Exception:
        return
    pytest.fail(f"the guard of polygrad_forbid_compute (backend {pg_backend.name!r}) did not raise on "
                f"pg.compute(xp.asarray([1.0, 2.0]) * 2.0) inside it: it must make every computation raise, or the "
                f"suite's laziness tests prove nothing", pytrace=False)


@pytest.mark.requires("lazy")
def test_forward_and_backward_compute_nothing(pg_backend, xp, float_dtype):
    """Forward, backward, a second-order graph and reprs run inside forbid_compute;
    pg.compute then returns concrete values for loss and gradients together."""
    guard = pg_backend.forbid_compute()
    assert guard is not None, f"lazy backend {pg_backend.name!r} must implement polygrad_forbid_compute"
    with guard:
        loss, params = _mlp_loss(xp, float_dtype)
        loss.backward()
        grads = [p.grad for p in params]
        (g2,) = pg.grad(pg.sum(pg.tanh(params[0]) ** 3), [params[0]], create_graph=True)
        (gg,) = pg.grad(pg.sum(g2), [params[0]])
        repr(loss), repr(params[0])
    assert all(backend_of_type(type(g)) is pg_backend for g in grads)
    out = pg.compute(loss, *grads, gg)
    for a in out:
        assert backend_of_type(type(a)) is not pg_backend, (
            f"pg.compute returned a {type(a).__name__} of backend {pg_backend.name!r} itself: polygrad_materialize "
            f"must return concrete arrays of an eager library (numpy, say), not the lazy library's own type, even "
            f"computed"
        )
    assert tolist(out[1]) == tolist(grads[0])  # the same values when asked one by one


@pytest.mark.requires("lazy")
def test_compute_materializes_in_one_call(pg_backend, xp, float_dtype, monkeypatch):
    """pg.compute(loss, *grads) asks the backend to materialize once, with every array."""
    calls = []
    real = pg_backend.materialize

    def counting(arrays):
        calls.append(len(arrays))
        return real(arrays)

    monkeypatch.setattr(pg_backend, "materialize", counting)
    loss, params = _mlp_loss(xp, float_dtype)
    loss.backward()
    pg.compute(loss, *[p.grad for p in params])
    assert calls == [4]


@pytest.mark.requires("eager")
def test_compute_is_identity_on_an_eager_backend(pg_backend, xp, float_dtype):
    """On an eager backend pg.compute returns the arrays themselves."""
    a = xp.asarray([1.0, 2.0], dtype=float_dtype)
    assert pg.compute(a)[0] is a


@pytest.mark.requires("lazy")
def test_labels_are_checked_where_the_loss_is_computed(pg_backend, xp, float_dtype):
    """With polygrad_check_lazily (optional; without it labels are checked in debug mode
    only), an out-of-range label raises when the loss is computed, where it gave a finite,
    wrong loss; building the loss still computes nothing, and good labels give the loss."""
    if pg_backend.check_lazily(xp.asarray([1.0], dtype=float_dtype), lambda chunk: None) is None:
        pytest.skip(f"lazy backend {pg_backend.name!r} does not implement polygrad_check_lazily: "
                    f"its labels and ids are checked in debug mode only")
    x = pg.Variable(xp.zeros((2, 3), dtype=float_dtype))
    with pg_backend.forbid_compute():
        bad = F.softmax_cross_entropy(x, xp.asarray([0, 5], dtype=index_dtype(xp)))
        good = F.softmax_cross_entropy(x, xp.asarray([0, 2], dtype=index_dtype(xp)))
    with pytest.raises(ValueError, match=r"labels t must be in \[0, 3\)"):
        pg.compute(bad)
    assert abs(float(tolist(pg.compute(good)[0])) - 1.0986122886681098) < 1e-6

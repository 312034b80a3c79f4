"""polygrad.functions.dropout: identity in test mode, the mask's values and rate,
reproducible from pg.seed, its gradient, and bad ratios, on numpy and
array_api_strict."""

from __future__ import annotations

import numpy as np
import pytest

import polygrad as pg
import polygrad.functions as F
from polygrad.testing import check_grads

from conftest import arr, normal
from conftest import to_np, assert_values_close as assert_close

XS = np.array([[0.5, -1.0, 2.0], [-0.3, 0.8, -1.5], [1.1, 0.7, -0.4], [0.2, -2.2, 1.3]])


def test_dropout_is_identity_in_test_mode(xp):
    """In test mode dropout returns its input Variable; a raw array comes back as a Variable."""
    x = pg.Variable(arr(xp, XS))
    with pg.test_mode():
        assert F.dropout(x, 0.9) is x
        y = F.dropout(arr(xp, XS))
    assert isinstance(y, pg.Variable) and not y.requires_grad
    assert_close(y, XS)


def test_dropout_zeros_and_scales(xp):
    """In train mode each element is 0 or x / (1 - ratio), about ratio of them 0."""
    x = np.ones((50, 40))
    y = to_np(F.dropout(arr(xp, x), ratio=0.25))
    assert set(np.unique(y)) <= {0.0, 1 / 0.75}
    assert abs((y == 0).mean() - 0.25) < 0.05


def test_dropout_is_reproducible_from_seed(xp):
    """pg.seed(n) before dropout gives the same mask; the next draw differs."""
    x = arr(xp, np.ones((8, 8)))
    pg.seed(3)
    a = to_np(F.dropout(x))
    b = to_np(F.dropout(x))
    pg.seed(3)
    c = to_np(F.dropout(x))
    assert (a == c).all()
    assert not (a == b).all()


def test_dropout_gradient_is_the_mask(xp):
    """The gradient is the mask that scaled the output (and passes second order)."""
    x = pg.Variable(arr(xp, np.full((6, 5), 2.0)))
    pg.seed(1)
    y = F.dropout(x, 0.5)
    pg.sum(y).backward()
    assert_close(x.grad, to_np(y) / 2.0)

    def f(v):
        pg.seed(1)
        return F.dropout(v, 0.5)

    check_grads(f, [arr(xp, normal((3, 4)))], order=2)


def test_dropout_rejects_bad_ratio(xp):
    """ratio outside [0, 1) raises ValueError."""
    with pytest.raises(ValueError, match="dropout.*ratio"):
        F.dropout(arr(xp, XS), 1.0)

"""Random numbers (polygrad_random_generator): reproducible from a seed, of the
requested shape and dtype, with sane statistics."""

from __future__ import annotations

import pytest

import polygrad as pg
from polygrad.core.dispatch import backend_of_type
from polygrad_conformance._util import assert_same, tolist


@pytest.mark.parametrize("kind", ["normal", "uniform"])
def test_same_seed_same_numbers(pg_backend, xp, float_dtype, kind):
    """Two generators with the same seed draw the same arrays, call after call."""
    a, b = pg_backend.random_generator(42), pg_backend.random_generator(42)
    for shape in [(3, 4), (5,)]:
        x, y = getattr(a, kind)(shape, dtype=float_dtype), getattr(b, kind)(shape, dtype=float_dtype)
        assert_same(x, y, backend=pg_backend, rtol=0, atol=0, what=f"{kind}{shape}")


def test_different_seeds_differ(pg_backend, float_dtype, xp):
    """Seeds 0 and 1 give different numbers."""
    x = pg_backend.random_generator(0).normal((20,), dtype=float_dtype)
    y = pg_backend.random_generator(1).normal((20,), dtype=float_dtype)
    assert not bool(xp.all(x == y))


@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
def test_shape_dtype_and_owner(pg_backend, xp, info, dtype_name):
    """Random arrays have the requested shape and dtype and belong to the backend."""
    if dtype_name == "float64" and not info.float64:
        pytest.skip(f"backend {pg_backend.name!r} declares float64=False in its BackendInfo")
    dtype = getattr(xp, dtype_name)
    gen = pg_backend.random_generator(0)
    for x in (gen.normal((2, 3), dtype=dtype), gen.uniform((2, 3), dtype=dtype)):
        assert backend_of_type(type(x)) is pg_backend
        assert tuple(x.shape) == (2, 3) and x.dtype == dtype


def test_uniform_range_and_normal_moments(pg_backend, xp, float_dtype):
    """uniform(low, high) stays in [low, high); normal(mean, std) has about that mean and std."""
    gen = pg_backend.random_generator(7)
    u = gen.uniform((2000,), dtype=float_dtype, low=-2.0, high=3.0)
    assert bool(xp.all(u >= -2.0)) and bool(xp.all(u < 3.0))
    n = gen.normal((4000,), dtype=float_dtype, mean=1.5, std=2.0)
    mean = float(xp.mean(n))
    std = float(xp.sqrt(xp.mean((n - mean) ** 2)))
    assert abs(mean - 1.5) < 0.15 and abs(std - 2.0) < 0.15, (mean, std)


def test_pg_seed_makes_the_shared_generator_repeatable(pg_backend, float_dtype):
    """pg.seed(s) resets the backend's shared generator (initializers, dropout)."""
    pg.seed(3)
    first = tolist(pg_backend.rng().normal((4,), dtype=float_dtype))
    pg.seed(3)
    again = tolist(pg_backend.rng().normal((4,), dtype=float_dtype))
    pg.seed(None)
    assert first == again

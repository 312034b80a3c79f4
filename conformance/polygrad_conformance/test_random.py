"""Random numbers (polygrad_random_generator): reproducible from a seed, of the
requested shape and dtype, with sane statistics; a stream that moves on at
every draw (initializers, dropout masks and the stochastic functions, eagerly
and in compiled functions), which pg.seed restarts."""

from __future__ import annotations

import pytest

import polygrad as pg
import polygrad.functions as F
from polygrad.core.dispatch import backend_of_type
from polygrad_conformance._util import assert_same, tolist
from polygrad_conformance.plugin import dtype_name, float_dtype_names


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "dtype_name" in metafunc.fixturenames:
        metafunc.parametrize("dtype_name", float_dtype_names(metafunc.config))


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


def test_shape_dtype_and_owner(pg_backend, xp, dtype_name):
    """Random arrays have the requested shape and dtype and belong to the backend, at every
    real floating dtype the namespace declares."""
    dtype = xp.__array_namespace_info__().dtypes(kind="real floating")[dtype_name]
    gen = pg_backend.random_generator(0)
    for x in (gen.normal((2, 3), dtype=dtype), gen.uniform((2, 3), dtype=dtype)):
        assert backend_of_type(type(x)) is pg_backend
        assert tuple(x.shape) == (2, 3) and x.dtype == dtype


def test_uniform_range_and_normal_moments(pg_backend, xp, float_dtype):
    """uniform(low, high) stays in [low, high); normal(mean, std) has about that mean and std."""
    gen = pg_backend.random_generator(7)
    u = gen.uniform((2000,), dtype=float_dtype, low=-2.0, high=3.0)
    assert bool(xp.all(u >= -2.0)) and bool(xp.all(u < 3.0))
    # ... and fills it: a generator that ignored low and high stayed in [0, 1) and passed
    low, high, mean = float(xp.min(u)), float(xp.max(u)), float(xp.mean(u))
    assert low < -1.9 and high > 2.9 and abs(mean - 0.5) < 0.15, (low, high, mean)
    n = gen.normal((4000,), dtype=float_dtype, mean=1.5, std=2.0)
    mean = float(xp.mean(n))
    std = float(xp.sqrt(xp.mean((n - mean) ** 2)))
    assert abs(mean - 1.5) < 0.15 and abs(std - 2.0) < 0.15, (mean, std)
    # the normal's shape, not only its moments (a uniform of that mean and std has no tails):
    # 4.55% beyond two standard deviations, 68.3% within one
    z = xp.abs(n - 1.5) / 2.0
    tails, body = float(xp.mean(xp.astype(z > 2.0, float_dtype))), float(xp.mean(xp.astype(z < 1.0, float_dtype)))
    assert 0.03 < tails < 0.065 and 0.64 < body < 0.72, (tails, body)


def test_uniform_never_reaches_high(pg_backend, xp, dtype_name):
    """uniform(low, high) stays below ``high`` at every real floating dtype, also where the dtype
    rounds a draw up to it: in a range one step of the dtype wide every draw is ``low`` (a
    float64 draw cast to float16 reaches 1.0 about once in 4,000 draws of [0, 1), and scaling a
    [0, 1) draw into [low, high) rounds up to high too; Bernoulli(1.0) then drew 0). polygrad keeps
    the draws of every plugin's generator below high; this proves it of this backend's."""
    dtype = xp.__array_namespace_info__().dtypes(kind="real floating")[dtype_name]
    gen = pg_backend.random_generator(13)
    low = xp.asarray(1.0, dtype=dtype)
    high = float(xp.nextafter(low, xp.asarray(2.0, dtype=dtype)))
    u = gen.uniform((4096,), dtype=dtype, low=1.0, high=high)
    above = int(xp.sum(xp.astype(u != low, xp.int32)))
    assert above == 0, f"{above} of 4096 draws of uniform(low=1.0, high={high!r}) in {dtype_name} are not 1.0"
    u = gen.uniform((4096,), dtype=dtype)
    assert float(xp.max(u)) < 1.0 and float(xp.min(u)) >= 0.0


def test_a_large_draw_does_not_repeat_itself(pg_backend, xp, float_dtype):
    """A draw of 2**17 numbers repeats values only about as often as chance makes two floats equal
    (float32: about 130 here; a generator of short period, or one that repeats its blocks, repeats
    a large part of them). Its chunking is the plugin's: a lazy plugin that drew every chunk of a
    large draw from one seed is caught only where the draw spans chunks, so a chunked library's
    own tests should draw across chunks too."""
    n = 2**17
    draw = pg_backend.random_generator(11).normal((n,), dtype=float_dtype)
    s = xp.sort(draw)
    repeats = int(xp.sum(xp.astype(s[1:] == s[:-1], xp.int32)))
    assert repeats < n // 10, f"{repeats} of {n} values repeat the one before them once sorted"


def test_pg_seed_makes_the_shared_generator_repeatable(pg_backend, float_dtype):
    """pg.seed(s) resets the backend's shared generator (initializers, dropout)."""
    pg.seed(3)
    first = tolist(pg_backend.rng().normal((4,), dtype=float_dtype))
    pg.seed(3)
    again = tolist(pg_backend.rng().normal((4,), dtype=float_dtype))
    pg.seed(None)
    assert first == again


# ---------------------------------------------------------------------------
# Streams: successive draws differ, and pg.seed repeats them
# ---------------------------------------------------------------------------


def _draw_pair(pg_backend, float_dtype, kind):
    gen = pg_backend.random_generator(5)
    return [tolist(getattr(gen, kind)((16,), dtype=float_dtype)) for _ in range(2)]


@pytest.mark.parametrize("kind", ["normal", "uniform"])
def test_successive_draws_differ(pg_backend, float_dtype, kind):
    """One generator gives new numbers at every call: a generator that repeats its draws
    gives two layers the same weights and every dropout the same mask."""
    first, second = _draw_pair(pg_backend, float_dtype, kind)
    assert first != second, (
        f"two successive {kind}((16,)) draws of one generator (seed 5) are equal: {first}; the generator "
        "must advance its state at every call"
    )


def _vector(xp, dtype, n, value):
    return xp.full((n,), value, dtype=dtype)


def _probs(xp, dtype):
    return xp.full((32, 4), 0.25, dtype=dtype)


# What draws random numbers, each called on the backend's arrays: (inputs, function).
DRAWS = {
    "rng_normal": None,  # the backend's shared generator itself (pg.seed resets it)
    "rng_uniform": None,
    "dropout": (lambda xp, dt: [_vector(xp, dt, 64, 1.0)], lambda x: F.dropout(x, 0.5)),
    "bernoulli": (lambda xp, dt: [_vector(xp, dt, 64, 0.5)], lambda p: F.bernoulli(p)),
    "categorical": (lambda xp, dt: [_probs(xp, dt)], lambda p: F.categorical(p)),
    "multinomial": (lambda xp, dt: [_probs(xp, dt)], lambda p: F.multinomial(p)),
    "normal": (lambda xp, dt: [_vector(xp, dt, 32, 0.0), _vector(xp, dt, 32, 1.0)], lambda m, s: F.normal(m, s)),
}


def _sampler(pg_backend, xp, float_dtype, draw, mode):
    """A function of no arguments that draws once, the way ``mode`` says (eager or compiled)."""
    if draw.startswith("rng_"):
        kind = draw[4:]
        return lambda: getattr(pg_backend.rng(), kind)((32,), dtype=float_dtype)
    make, fn = DRAWS[draw]
    args = make(xp, float_dtype)
    if mode == "eager":
        return lambda: fn(*[pg.Variable(a, requires_grad=False) for a in args])
    from polygrad import symbolic as T

    name = dtype_name(xp, float_dtype)
    syms = [T.tensor(name, tuple(a.shape), f"in{i}") for i, a in enumerate(args)]
    compiled = pg.function(syms, fn(*syms))
    return lambda: compiled(*args)


@pytest.mark.parametrize("mode", ["eager", "compiled"])
@pytest.mark.parametrize("draw", list(DRAWS))
def test_draws_differ_and_pg_seed_repeats_them(pg_backend, xp, float_dtype, draw, mode):
    """Two successive draws differ; after pg.seed(s) the same two draws come again (the
    shared generator, dropout masks, F.bernoulli, F.categorical, F.multinomial, F.normal),
    eagerly and inside a compiled function (pg.function draws at every call)."""
    if mode == "compiled" and draw.startswith("rng_"):
        pytest.skip("the shared generator is called directly, not through an op of polygrad, so a compiled "
                    "function has nothing of it to record (the eager case checks it)")
    pg.seed(11)
    try:
        sample = _sampler(pg_backend, xp, float_dtype, draw, mode)
        first = [tolist(sample()) for _ in range(2)]
        pg.seed(11)
        sample = _sampler(pg_backend, xp, float_dtype, draw, mode)
        again = [tolist(sample()) for _ in range(2)]
    finally:
        pg.seed(None)
    how = "eagerly" if mode == "eager" else "in a compiled function"
    assert first[0] != first[1], f"{draw}, {how}: two successive draws are equal ({first[0]}): the random stream repeats"
    assert again == first, f"{draw}, {how}: pg.seed(11) does not repeat the draws:\nfirst {first}\nagain {again}"


def test_layers_get_different_weights(pg_backend):
    """Two Linear layers made one after the other get different weights; pg.seed repeats them."""
    import polygrad.links as L

    pg.seed(4)
    try:
        with pg.using_backend(pg_backend.name):
            w1, w2 = tolist(L.Linear(3, 4).W), tolist(L.Linear(3, 4).W)
            pg.seed(4)
            again = tolist(L.Linear(3, 4).W)
    finally:
        pg.seed(None)
    assert w1 != w2, "two Linear(3, 4) layers got identical weights: the random stream repeats"
    assert again == w1, "pg.seed(4) does not repeat the first layer's weights"

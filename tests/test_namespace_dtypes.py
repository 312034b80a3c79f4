"""polygrad asks a backend only for dtypes its namespace declares: on jax's
default 32-bit mode (no int64, no float64; a third-party style plugin,
tests/plugins/jax_backend) draws come in the default indexing and floating
dtypes, and axes are handed over as the standard asks. jax's "requested dtype
... truncated" warning is an error here, so a request for int64 fails."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import polygrad as pg
from registry_state import registry_state  # noqa: F401 (a fixture)

jnp = pytest.importorskip("jax.numpy", reason="jax is not installed (pip install 'jax[cpu]', a test extra)")


@pytest.fixture
def jax32(registry_state, monkeypatch):
    import jax

    from plugins import jax_backend

    if jax.config.read("jax_enable_x64"):
        pytest.skip("jax runs in 64-bit mode here (JAX_ENABLE_X64): int64 exists")
    pg.register_plugin(jax_backend, name="jax-plugin")
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="Explicitly requested dtype")
        yield pg.get_backend(jax_backend.NAME)


def test_categorical_draws_in_the_default_indexing_dtype(jax32):
    """Categorical(probs).sample() on a 32-bit namespace is int32 (its default indexing dtype), not a request for int64."""
    probs = jnp.asarray([[0.2, 0.8], [1.0, 0.0]], dtype=jnp.float32)
    k = pg.distributions.Categorical(probs).sample()
    assert k.dtype == jnp.int32 and k.shape == (2,) and int(k[1]) == 0


def test_normal_of_python_floats_draws_in_the_default_float_dtype(jax32):
    """Normal(0.0, 1.0).sample() on a namespace without float64 draws float32."""
    with pg.using_backend(jax32.name):
        z = pg.distributions.Normal(0.0, 1.0).sample()
    assert z.dtype == jnp.float32


def test_permute_dims_hands_the_namespace_nonnegative_axes(jax32):
    """pg.permute_dims(x, (-1, 0, 1)) works on jax, which takes only a permutation of 0..ndim-1, and its gradient too."""
    x = pg.Variable(jnp.arange(24.0, dtype=jnp.float32).reshape(2, 3, 4))
    y = pg.permute_dims(x, (-1, 0, 1))
    assert y.shape == (4, 2, 3)
    np.testing.assert_array_equal(np.asarray(y.data), np.transpose(np.arange(24.0).reshape(2, 3, 4), (2, 0, 1)))
    pg.sum(y * y).backward()
    np.testing.assert_allclose(np.asarray(x.grad), 2 * np.arange(24.0).reshape(2, 3, 4))


def test_double_refuses_a_dtype_the_namespace_does_not_declare(jax32):
    """x.double() on a namespace without float64 (jax in 32-bit mode, which would quietly make
    float32 of it) is an error naming the dtype; x.float() works there."""
    x = pg.Variable(jnp.ones(3, dtype=jnp.float32))
    with pytest.raises(TypeError, match="asks for float64, which the namespace .* does not have"):
        x.double()
    assert x.float().dtype == jnp.float32
    assert pg.Variable(np.ones(3, dtype=np.float32)).double().dtype == np.float64


def test_a_name_of_the_library_for_a_dtype_the_namespace_does_not_declare_is_refused_as_its_own_name(jax32):
    """On jax in 32-bit mode, "float64" was refused but "f8" (and "double") went to jnp.asarray, which
    made float32 of it with a warning only: both spellings are refused alike; "f4" works."""
    with pg.using_backend(jax32.name):
        for name in ("float64", "f8", "double"):
            with pytest.raises(TypeError, match=f"polygrad: zeros asks for {name}, which the namespace"):
                pg.zeros((2,), dtype=name)
        assert pg.zeros((2,), dtype="f4").dtype == jnp.float32
        assert pg.zeros((2,), dtype="bfloat16").dtype == jnp.bfloat16


def test_a_python_type_as_dtype_is_the_default_dtype_of_its_kind(jax32):
    """dtype=float and dtype=int on jax in 32-bit mode are float32 and int32, as jax reads them."""
    with pg.using_backend(jax32.name):
        assert pg.full((2,), 0.5, dtype=float).dtype == jnp.float32
        assert pg.arange(3, dtype=int).dtype == jnp.int32

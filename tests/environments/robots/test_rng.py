"""``jaxagents.core.threefry`` (fused threefry) gives jax.random's numbers, and ``wrap_angle`` mod's values."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxagents.core import threefry as rng
from jaxagents_environments.robots.arena import wrap_angle


def test_split_and_uniform_are_jax_random_bit_for_bit():
    for key in (jax.random.key(3), jax.random.PRNGKey(3)):
        data = jax.random.key_data if jnp.issubdtype(key.dtype, jax.dtypes.prng_key) else (lambda k: k)
        np.testing.assert_array_equal(data(rng.split(key, 5)), data(jax.random.split(key, 5)))
        for shape in ((1,), (7,), (3, 4)):
            np.testing.assert_array_equal(rng.uniform(key, shape), jax.random.uniform(key, shape))
    keys = jax.random.split(jax.random.key(1), 6)  # batched, under jit
    got = jax.jit(jax.vmap(lambda k: rng.uniform(rng.split(k)[1], (2, 9))))(keys)
    want = jax.vmap(lambda k: jax.random.uniform(jax.random.split(k)[1], (2, 9)))(keys)
    np.testing.assert_array_equal(got, want)


def test_wrap_angle_matches_mod():
    """Bit-identical for the headings of a tick (|theta + pi| < 4 pi), close and in range beyond."""
    mod = jax.jit(lambda t: jnp.mod(t + jnp.pi, 2 * jnp.pi) - jnp.pi)
    near = np.concatenate([np.random.default_rng(0).uniform(-9.4, 9.4, 100_000),
                           np.pi + np.arange(-20, 20) * 1e-7, -np.pi + np.arange(-20, 20) * 1e-7, [0.0, -0.0]])
    near = jnp.asarray(near, jnp.float32)
    np.testing.assert_array_equal(jax.jit(wrap_angle)(near), mod(near))
    far = jnp.asarray(np.random.default_rng(1).uniform(-100, 100, 10_000), jnp.float32)
    got = np.asarray(jax.jit(wrap_angle)(far))
    assert np.all((got >= -np.pi) & (got < np.pi))
    np.testing.assert_allclose(np.angle(np.exp(1j * (got - np.asarray(mod(far))))), 0, atol=1e-5)

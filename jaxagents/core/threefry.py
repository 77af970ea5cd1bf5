"""Threefry draws that XLA:CPU fuses: bit-identical to ``jax.random.split`` / ``uniform``.

Why: on CPU, JAX lowers every threefry hash as a *rolled* loop (a ``while`` of 5 trips,
each several kernels plus copies of the rotation constants), so one ``jax.random.split``
or ``uniform`` costs about a hundred kernel launches. In a batch of 1 to 64 environments
that latency, not arithmetic, is what a reset costs. Written here with plain ``jnp``
integer ops, unrolled (the 20 rounds of Threefry-2x32, Salmon et al. 2011, as in
``jax._src.random.threefry2x32``), the hash becomes one elementwise fusion.

The numbers are exactly those of ``jax.random`` with ``jax_threefry_partitionable``
(JAX's default): the counter of element ``k`` of a draw is ``(k >> 32, k & 0xffffffff)``,
``split`` keeps both output words, ``uniform`` uses their xor's top 23 bits as the
mantissa. With other settings (partitionable off, a non-threefry key) the functions fall
back to ``jax.random`` itself, so a caller never sees a different stream.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def _rotl(x, d: int):
    return (x << np.uint32(d)) | (x >> np.uint32(32 - d))


def threefry2x32(k1, k2, x1, x2):
    """The Threefry-2x32 hash (20 rounds) of counters ``(x1, x2)`` under key ``(k1, k2)``,
    all ``u32`` arrays broadcasting together; returns the two output words."""
    ks = (k1, k2, k1 ^ k2 ^ np.uint32(0x1BD11BDA))
    x1, x2 = x1 + ks[0], x2 + ks[1]
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            x1 = x1 + x2
            x2 = _rotl(x2, r) ^ x1
        x1 = x1 + ks[(i + 1) % 3]
        x2 = x2 + ks[(i + 2) % 3] + np.uint32(i + 1)
    return x1, x2


def _fusable(key) -> bool:
    if not jax.config.jax_threefry_partitionable:
        return False
    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        return jax.random.key_impl(key) == jax.random.key_impl(jax.random.key(0))
    return key.shape[-1:] == (2,) and key.dtype == jnp.uint32  # a raw threefry PRNGKey


def _words(key):
    data = jax.random.key_data(key) if jnp.issubdtype(key.dtype, jax.dtypes.prng_key) else key
    return data[0], data[1]


def _counters(shape):
    size = math.prod(shape)
    if size >= 2 ** 32:  # the high word would be non-zero: leave it to jax.random
        raise ValueError("draw too large")
    return np.zeros(shape, np.uint32), np.arange(size, dtype=np.uint32).reshape(shape)


def split(key, num: int = 2):
    """``jax.random.split(key, num)`` for one (unbatched) key, fused."""
    if not _fusable(key):
        return jax.random.split(key, num)
    k1, k2 = _words(key)
    hi, lo = _counters((num,))
    b1, b2 = threefry2x32(k1, k2, jnp.asarray(hi), jnp.asarray(lo))
    data = _once(jnp.stack([b1, b2], -1))
    return jax.random.wrap_key_data(data, impl=jax.random.key_impl(key)) \
        if jnp.issubdtype(key.dtype, jax.dtypes.prng_key) else data


def uniform(key, shape: tuple):
    """``jax.random.uniform(key, shape)`` (``f32``, in [0, 1)) for one key, fused."""
    shape = tuple(shape)
    if not _fusable(key):
        return jax.random.uniform(key, shape)
    k1, k2 = _words(key)
    hi, lo = _counters(shape)
    b1, b2 = threefry2x32(k1, k2, jnp.asarray(hi), jnp.asarray(lo))
    bits = (b1 ^ b2) >> np.uint32(9) | np.uint32(0x3F800000)  # 23 mantissa bits, exponent of 1.0
    return _once(jnp.maximum(0.0, jax.lax.bitcast_convert_type(bits, jnp.float32) - 1.0))


def _once(x):
    """Materialise ``x``: without the barrier XLA fuses the ~100 integer operations of the
    hash into *every* consumer of the numbers (several per reset), computing them again
    in each."""
    return jax.lax.optimization_barrier(x)

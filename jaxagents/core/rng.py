"""Per-agent random numbers for steps over 10^5-10^6 agents.

A mean-field step needs one uniform number per agent (a noisy move, an infection, a
tremble), and a random rollout one action per agent. With JAX's default threefry PRNG
that draw is most of the cost of a step on CPU (about 5-8 ms for 10^6 numbers on two
cores, more than the rest of the step), so the mean-field environments take ``rng`` as
a constructor argument and ``random_actions`` (the benchmark's sampler) takes it as an
argument:

* ``"threefry"``: ``jax.random.uniform(key, (n,))`` — JAX's counter-based PRNG.
* ``"hash"`` (default): one threefry draw per step gives two 32-bit seeds; agent
  ``i``'s number is ``lowbias32(lowbias32(i ^ s0) + s1)`` (Wellons' 32-bit integer
  hash, a bijection with full avalanche), keeping its top 24 bits. Two keyed rounds so
  that the numbers of one step are not a permutation of the previous step's. About a
  tenth of the cost on CPU; statistically tested in ``tests/environments/meanfield/test_properties.py``
  (uniformity, independence across agents and steps). On GPU/TPU the difference is
  small and either choice is fine.

Both are pure functions of the key, so trajectories are reproducible.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

RNGS = ("hash", "threefry")


def check_rng(rng: str) -> str:
    """Return ``rng`` when it is one of ``RNGS`` (``"hash"``, ``"threefry"``); raise ``ValueError`` otherwise."""
    if rng not in RNGS:
        raise ValueError(f"rng must be one of {RNGS}, got {rng!r}")
    return rng


def _lowbias32(x: jax.Array) -> jax.Array:
    """Chris Wellons' ``lowbias32`` integer hash (uint32 -> uint32, a bijection)."""
    x = x ^ (x >> 16)
    x = x * jnp.uint32(0x7FEB352D)
    x = x ^ (x >> 15)
    x = x * jnp.uint32(0x846CA68B)
    return x ^ (x >> 16)


def fmix32(x: jax.Array) -> jax.Array:
    """MurmurHash3's 32-bit finaliser (uint32 -> uint32, a bijection with full
    avalanche); the games and the market hash their state with it."""
    x = x ^ (x >> 16)
    x = x * jnp.uint32(0x85EBCA6B)
    x = x ^ (x >> 13)
    x = x * jnp.uint32(0xC2B2AE35)
    return x ^ (x >> 16)


def uniforms(key: jax.Array, shape: tuple, rng: str = "hash") -> jax.Array:
    """``f32[shape]`` uniform numbers in ``[0, 1)`` (see the module docstring). With
    ``"hash"`` the counter is the flat index, so at most 2^32 numbers per key."""
    shape = tuple(shape)
    if rng == "threefry":
        return jax.random.uniform(key, shape)
    check_rng(rng)
    size = int(np.prod(shape, dtype=np.int64))
    if size > 2**32:
        raise ValueError(f"rng='hash' draws at most 2^32 numbers per key, got shape {shape}")
    seeds = jax.random.bits(key, (2,), jnp.uint32)
    x = _lowbias32(jax.lax.iota(jnp.uint32, size).reshape(shape) ^ seeds[0])
    x = _lowbias32(x + seeds[1])
    # 24 bits: every value exactly representable in f32, so u < 1 always
    return (x >> 8).astype(jnp.float32) * jnp.float32(2.0**-24)


def agent_uniforms(key: jax.Array, n: int, rng: str = "hash") -> jax.Array:
    """``f32[n]`` uniform numbers in ``[0, 1)``, one per agent."""
    return uniforms(key, (n,), rng)


PACKED_PERMUTATION_MAX = 2**24  # above: too few random bits per round, jax.random.permutation


def permutation(key: jax.Array, n: int) -> jax.Array:
    """A uniformly random permutation of ``arange(n)``, ``i32[n]`` (the minibatch
    shuffle of every PPO-family update).

    The algorithm of ``jax.random.permutation(key, n)`` -- rounds of a stable sort by
    fresh random keys, enough rounds that some pair tying in every round is improbable
    (chance ~1/n) -- with each round's key and the position packed into one ``uint32``:
    the position in the low ``b = ceil(log2 n)`` bits breaks ties as a stable sort
    does, and ``32 - b`` bits are random, so ``ceil(3 b / (32 - b))`` rounds (JAX's
    rule, ``ceil(3 log2(n) / 32)``, with fewer bits per round). A sort of one integer
    array takes XLA's CPU backend a fast path that key-value sorts through a comparator
    do not: at n = 4096 two packed rounds cost ~0.3 ms against ~1.4 ms (~5% of an IPPO
    update on Overcooked, 4 epochs). The permutations differ from
    ``jax.random.permutation``'s for the same key. ``n > PACKED_PERMUTATION_MAX`` falls
    back to it."""
    n = int(n)
    if n > PACKED_PERMUTATION_MAX:
        return jax.random.permutation(key, n)
    if n <= 1:
        return jnp.arange(n, dtype=jnp.int32)
    b = int(np.ceil(np.log2(n)))
    rounds = int(np.ceil(3 * b / (32 - b)))
    position = jax.lax.iota(jnp.uint32, n)
    perm = jnp.arange(n, dtype=jnp.int32)
    for k in jax.random.split(key, rounds):
        random = jax.random.bits(k, (n,), jnp.uint32) >> b << b
        order = (jax.lax.sort(random | position) & jnp.uint32((1 << b) - 1)).astype(jnp.int32)
        perm = perm[order]
    return perm

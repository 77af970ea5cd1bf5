"""Observations of EconGym's society, and the exact wealth groups they need.

Every role sees what it sees in EconGym (``env/set_observation.py``, commit d81cd5d),
with money measured in ``money_unit`` (GDP per household at reset) and hourly wages in
``money_unit / h_max``, ages in centuries, so that the entries are of order one for a
network (EconGym passes raw dollars and normalises inside its agents); every entry is
clipped to ``[-OBS_CLIP, OBS_CLIP]``.

The public part (first in the households', the fiscal authority's and the central
bank's observations): the mean wealth and mean productivity of the richest 10% of
households and of the poorest half, each firm's wage and price, and the bank's lending
and deposit rates. EconGym finds the groups with a Python sort of all households
every step (90% of its step at 10^4 households); ``top_sums`` finds the same groups
without sorting, in 32 counting passes over the households.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

OBS_CLIP = 1e6
PUBLIC = ("top10_wealth", "top10_productivity", "bottom50_wealth", "bottom50_productivity")
"""Public features before the firms' wages and prices and the two bank rates."""


def _keys(x, alive):
    """``i32`` keys that order like the float32 values (dead slots lowest)."""
    bits = jax.lax.bitcast_convert_type(x.astype(jnp.float32), jnp.int32)
    key = jnp.where(bits < 0, bits ^ jnp.int32(0x7FFFFFFF), bits)
    return jnp.where(alive, key, jnp.int32(-2**31))


def _kth_largest_keys(key, ks):
    """The ``k``-th largest of ``key`` for each ``k`` of the tuple ``ks`` (each ``k >=
    1``), built bit by bit: 32 passes, each counting every threshold (counted in
    float32, which XLA's CPU backend reduces fastest; exact below 2^24 slots)."""
    ts = [jnp.int32(-2**31) for _ in ks]
    kf = [k.astype(jnp.float32) for k in ks]
    for bit in range(31, -1, -1):
        cands = [t ^ jnp.int32(-2**31) if bit == 31 else t + jnp.int32(1 << bit) for t in ts]
        counts = [jnp.sum((key >= c).astype(jnp.float32)) for c in cands]
        ts = [jnp.where(n >= k, c, t) for n, k, c, t in zip(counts, kf, cands, ts)]
    return ts


def top_sums(values, x, alive, ks):
    """Sums of ``values`` (``f32[V, C]``) over the ``k`` largest alive entries of ``x``
    ``f32[C]``, for each ``k`` of the tuple ``ks``, ties at the threshold going to the
    lower slot index (Python's stable sort, as EconGym). Exact, without sorting.
    Returns a list of ``f32[V]``."""
    key = _keys(x, alive)
    c = x.shape[0]
    out = []
    for k, t in zip(ks, _kth_largest_keys(key, ks)):
        above, tied = key > t, key == t
        room = k - jnp.sum(above.astype(jnp.int32))
        # usually every tied entry fits; else the `room` lowest slots of them
        cut = jax.lax.cond(jnp.sum(tied.astype(jnp.int32)) <= room, lambda t_, r_: jnp.int32(c),
                           lambda t_, r_: jnp.searchsorted(jnp.cumsum(t_.astype(jnp.int32)), r_, side="right").astype(
                               jnp.int32), tied, room)
        take = above | (tied & (jnp.arange(c) < cut))
        out.append(jnp.sum(jnp.where(take, values, 0.0), axis=-1))
    return out


def top_groups(x, alive, ks):
    """Masks ``bool[K, C]`` of the ``k`` largest alive entries of ``x`` for each ``k`` in
    ``ks``, ties to the lower slot index (what ``top_sums`` sums over; for tests)."""
    key = _keys(x, alive)

    def one(k):
        (t,) = _kth_largest_keys(key, (k,))
        above, tied = key > t, (key == t) & alive
        return above | (tied & (jnp.cumsum(tied.astype(jnp.int32)) <= k - jnp.sum(above)))

    return jax.vmap(one)(jnp.asarray(ks, jnp.int32))


def public_features(wealth, e, alive, wage, price, rates):
    """EconGym's global observation in raw units: ``f32[4 + 2M + 2]`` (module docstring)."""
    n = jnp.sum(alive)
    top_n = jnp.maximum(1, (0.1 * n).astype(jnp.int32))
    half = jnp.maximum(1, (0.5 * n).astype(jnp.int32))
    values = jnp.stack([wealth, e])
    top, richer_half = top_sums(values, wealth, alive, (top_n, half))
    everyone = jnp.sum(jnp.where(alive, values, 0.0), axis=-1)
    bottom = (everyone - richer_half) / jnp.maximum(n - half, 1)
    top = top / top_n
    return jnp.concatenate([jnp.stack([top[0], top[1], bottom[0], bottom[1]]), wage, price, rates])


def clip(x):
    return jnp.clip(jnp.nan_to_num(x, nan=0.0), -OBS_CLIP, OBS_CLIP).astype(jnp.float32)

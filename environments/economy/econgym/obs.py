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
every step (90% of its step at 10^4 households); ``top_groups`` finds the same groups
without sorting, in 32 passes over the households.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

OBS_CLIP = 1e6
PUBLIC = ("top10_wealth", "top10_productivity", "bottom50_wealth", "bottom50_productivity")
"""Public features before the firms' wages and prices and the two bank rates."""


def _sortable(x):
    """``uint32`` keys that order like the float32 values (``-0.0 < +0.0``)."""
    bits = jax.lax.bitcast_convert_type(x.astype(jnp.float32), jnp.int32)
    flipped = jnp.where(bits < 0, ~bits, bits | jnp.int32(-2**31))
    return jax.lax.bitcast_convert_type(flipped, jnp.uint32)


def top_groups(x, alive, ks):
    """Masks of the ``k`` largest alive entries of ``x`` for each ``k`` in ``ks`` (``i32[K]``).

    Ties at the threshold go to the lower slot index (Python's stable sort, as
    EconGym). Exact: the ``k``-th largest key is built bit by bit, 32 passes over ``x``
    for all ``K`` at once. Returns ``bool[K, C]``.
    """
    u = jnp.where(alive, _sortable(x), jnp.uint32(0))
    k = ks.astype(jnp.int32)

    def bit(i, t):
        cand = t | (jnp.uint32(1) << (31 - i).astype(jnp.uint32))
        count = jnp.sum((u[None, :] >= cand[:, None]) & alive[None, :], axis=1)
        return jnp.where(count >= k, cand, t)

    t = jax.lax.fori_loop(0, 32, bit, jnp.zeros(k.shape, jnp.uint32))
    above = (u[None, :] > t[:, None]) & alive[None, :]
    tied = (u[None, :] == t[:, None]) & alive[None, :]
    room = k - jnp.sum(above, axis=1)
    return above | (tied & (jnp.cumsum(tied, axis=1) <= room[:, None]))


def public_features(wealth, e, alive, wage, price, rates):
    """EconGym's global observation in raw units: ``f32[4 + 2M + 2]`` (module docstring)."""
    n = jnp.sum(alive)
    top_n = jnp.maximum(1, (0.1 * n).astype(jnp.int32))
    half = jnp.maximum(1, (0.5 * n).astype(jnp.int32))
    groups = top_groups(wealth, alive, jnp.stack([top_n, half]))
    top, bottom = groups[0], alive & ~groups[1]

    def mean(v, m):
        return jnp.sum(jnp.where(m, v, 0.0)) / jnp.maximum(jnp.sum(m), 1)

    stats = jnp.stack([mean(wealth, top), mean(e, top), mean(wealth, bottom), mean(e, bottom)])
    return jnp.concatenate([stats, wage, price, rates])


def clip(x):
    return jnp.clip(jnp.nan_to_num(x, nan=0.0), -OBS_CLIP, OBS_CLIP).astype(jnp.float32)

"""Observations of ``gtb``: a citizen's egocentric view of the map plus its own
inventory, skills, the tax schedule and the order book; the planner's view of the
whole economy's distribution.

Citizen (``f32[C]``, flattened): the ``(2w+1) x (2w+1)`` window around the citizen
(``w = view_radius``, 5 as in the AI Economist) with ``VIEW_CHANNELS`` channels --
stone and wood units, stone and wood source tiles, water or outside the map, own
houses, others' houses, other citizens -- then ``SCALARS`` and, per resource and price
level, the citizen's own open bids and asks and everybody else's.
Planner (``f32[G]``): tax phase, first/last day of a period, rates in force, the rate
cap, the sorted incomes of the last period and the sorted total coin (per period and
x0.01, like the AI Economist's scaling), mean inventories, the whole book's depth,
equality and productivity. Its size grows with ``N`` but not with the map.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

VIEW_CHANNELS = ("stone", "wood", "stone_source", "wood_source", "water_or_outside", "own_house", "other_house",
                 "other_citizen")
SCALARS = ("coin", "stone", "wood", "escrow_coin", "escrow_stone", "escrow_wood", "labour", "build_payment",
           "bonus_prob", "row", "col", "time", "tax_phase", "first_day", "tax_day", "marginal_rate", "last_income")
COIN_SCALE = 0.01  # the AI Economist's inventory scale


def citizen_dim(view_radius: int, num_brackets: int, num_resources: int, num_levels: int) -> int:
    side = 2 * view_radius + 1
    return len(VIEW_CHANNELS) * side * side + len(SCALARS) + num_brackets + 4 * num_resources * num_levels


def planner_dim(num_citizens: int, num_brackets: int, num_resources: int, num_levels: int) -> int:
    return 5 + num_brackets + 2 * num_citizens + 2 * num_resources + 2 * num_resources * num_levels + 2


def order_counts(book, num_resources: int, num_levels: int) -> jax.Array:
    """``f32[N, 2, R, P]`` each citizen's open orders per (side, resource, price level)."""
    R, P = num_resources, num_levels
    key = jnp.where(book.open, (book.side * R + book.resource) * P + book.level, 2 * R * P)
    counts = jax.nn.one_hot(key, 2 * R * P, dtype=jnp.float32).sum(-2)
    return counts.reshape(-1, 2, R, P)


def _maps(env, state) -> jax.Array:
    """``f32[C, H + 2w, W + 2w]`` the view channels, padded with ``w`` tiles of outside."""
    h, w, pad = env.height, env.width, env.view_radius
    occupied = jnp.zeros((h * w,), jnp.float32).at[state.loc[:, 0] * w + state.loc[:, 1]].set(1.0).reshape(h, w)
    chans = jnp.stack([state.resources[0], state.resources[1], env.sources[0], env.sources[1], env.water,
                       jnp.zeros((h, w), bool), state.house >= 0, occupied > 0]).astype(jnp.float32)
    padded = jnp.pad(chans, ((0, 0), (pad, pad), (pad, pad)))
    return padded.at[4].set(jnp.pad(env.water.astype(jnp.float32), pad, constant_values=1.0))


def citizen_obs(env, state, params) -> jax.Array:
    """``f32[N, C]`` (see the module docstring)."""
    N, R, P, pad = env.N, env.R, env.P, env.view_radius
    side = 2 * pad + 1
    maps = _maps(env, state)
    house_padded = jnp.pad(state.house, pad, constant_values=-1)

    def window(loc, i):
        v = jax.lax.dynamic_slice(maps, (0, loc[0], loc[1]), (maps.shape[0], side, side))
        own = jax.lax.dynamic_slice(house_padded, (loc[0], loc[1]), (side, side)) == i
        v = v.at[5].set(own.astype(jnp.float32)).at[6].add(-own.astype(jnp.float32))
        return v.at[7, pad, pad].set(0.0)  # the citizen itself is not an "other citizen"

    views = jax.vmap(window)(state.loc, jnp.arange(N)).reshape(N, -1)
    total = state.coin + state.escrow_coin
    income = total - state.last_coin
    b = jnp.sum(income[:, None] >= params.bracket_cutoffs[1:], -1)
    marginal = jnp.where(income < 0, 0.0, state.rates[b])
    pos = state.t % params.tax_period
    bcast = lambda x: jnp.broadcast_to(jnp.asarray(x, jnp.float32), (N,))
    scalars = jnp.stack([
        state.coin * COIN_SCALE, state.goods[:, 0] * 0.1, state.goods[:, 1] * 0.1, state.escrow_coin * COIN_SCALE,
        state.escrow_goods[:, 0] * 0.1, state.escrow_goods[:, 1] * 0.1, state.labour * 0.001,
        state.build_payment / jnp.maximum(params.payment, 1e-6), state.bonus_prob,
        state.loc[:, 0] / env.height, state.loc[:, 1] / env.width, bcast(state.t / params.horizon),
        bcast(pos / params.tax_period), bcast(pos == 0), bcast(pos == params.tax_period - 1), marginal,
        state.last_income / params.tax_period,
    ], -1)
    own = order_counts(state.book, R, P)
    others = jnp.sum(own, 0, keepdims=True) - own
    rates = jnp.broadcast_to(state.rates, (N, env.B))
    return jnp.concatenate([views, scalars, rates, own.reshape(N, -1), others.reshape(N, -1)], -1)


def planner_obs(env, state, params) -> jax.Array:
    """``f32[G]`` (see the module docstring)."""
    pos = state.t % params.tax_period
    total = state.coin + state.escrow_coin
    depth = jnp.sum(order_counts(state.book, env.R, env.P), 0).reshape(-1)
    from jaxagents_environments.economy.metrics import gini

    head = jnp.stack([pos / params.tax_period, pos == 0, pos == params.tax_period - 1, params.rate_max,
                      state.t / params.horizon]).astype(jnp.float32)
    return jnp.concatenate([
        head, state.rates, jnp.sort(state.last_income) / params.tax_period, jnp.sort(total) * COIN_SCALE,
        jnp.mean(state.goods, 0) * 0.1, jnp.mean(state.escrow_goods, 0) * 0.1, depth,
        jnp.stack([1.0 - gini(total), jnp.mean(total) * COIN_SCALE]),
    ]).astype(jnp.float32)

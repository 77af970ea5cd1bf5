"""Observations of the market (all ``f32``; coin / 100, goods / 10, labour / 100,
prices / the top price level).

Public features (the same for every citizen, and part of the government's view),
``B + 2 + 4 R + 2 R P``: tax rates ``[B]``; the fraction of the tax period elapsed;
``t / horizon``; the best bid and best ask price per resource ``[R]`` each (0 where that
side of the book is empty); the depth of the book, open orders per (side, resource,
price level) over ``N`` ``[2 R P]``; last step's volume per resource over ``N`` ``[R]``
and its mean price ``[R]``.

Citizen (own features, then the public ones), ``7 + 5 R`` own: coin in inventory,
coin in escrow, labour, craft skill, open orders / k, income so far this period, the
marginal tax rate at that income; goods in inventory ``[R]``, in escrow ``[R]``, gather
skills ``[R]``, own open bids ``[R]`` and asks ``[R]`` per resource over ``k``.

Government (public features, then): mean and standard deviation of total coin, 1 -
Gini (equality), mean income so far this period, the treasury over ``N``, and the
share of citizens whose period income lies in each bracket ``[B]``.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from jaxagents_environments.economy.market import auction, rules

COIN, GOODS, LABOUR = 100.0, 10.0, 100.0


@dataclasses.dataclass(frozen=True)
class Dims:
    """Observation sizes for ``R`` resources, ``P`` price levels, ``B`` brackets."""

    R: int
    P: int
    B: int

    @property
    def public(self) -> int:
        return self.B + 2 + 4 * self.R + 2 * self.R * self.P

    @property
    def citizen(self) -> int:
        return 7 + 5 * self.R + self.public

    @property
    def government(self) -> int:
        return self.public + 5 + self.B


def public_features(env, state, params) -> jax.Array:
    """``f32[public]`` (see the module docstring)."""
    R, P, N = env.R, env.P, env.N
    top = params.prices[-1].astype(jnp.float32)
    depth = auction.depth(state.book, R, P)
    best_bid, best_ask = auction.best_levels(depth)
    price = lambda lvl, ok: jnp.where(ok, params.prices[jnp.clip(lvl, 0, P - 1)] / top, 0.0)
    return jnp.concatenate([
        state.tax_rates,
        jnp.stack([(state.t % params.tax_period) / params.tax_period, state.t / params.horizon]),
        price(best_bid, best_bid >= 0), price(best_ask, best_ask < P),
        depth.reshape(-1) / N, state.volume / N, state.mean_price / top,
    ]).astype(jnp.float32)


def citizen_obs(env, state, params, public) -> jax.Array:
    """``f32[N, citizen]``."""
    R, k = env.R, env.k
    book = state.book
    kind = jnp.where(book.open, book.side * R + book.resource, -1)  # (side, resource) of each slot
    per_kind = jnp.sum(kind[..., None] == jnp.arange(2 * R), -2, dtype=jnp.int32)  # [N, 2R]
    bids, asks = per_kind[:, :R], per_kind[:, R:]
    income = (state.coin + state.escrow_coin - state.period_start_coin).astype(jnp.float32)
    own = jnp.concatenate([
        jnp.stack([state.coin / COIN, state.escrow_coin / COIN, state.labour / LABOUR, state.craft_skill,
                   jnp.sum(book.open, -1) / k, income / COIN,
                   rules.marginal_rate(income, params.bracket_cutoffs, state.tax_rates)], -1),
        state.goods / GOODS, state.escrow_goods / GOODS, state.gather_skill, bids / k, asks / k,
    ], -1).astype(jnp.float32)
    return jnp.concatenate([own, jnp.broadcast_to(public, (env.N, public.shape[0]))], -1)


def government_obs(env, state, params, public=None) -> jax.Array:
    """``f32[government]``."""
    public = public_features(env, state, params) if public is None else public
    c = (state.coin + state.escrow_coin).astype(jnp.float32)
    income = c - state.period_start_coin
    bracket = jnp.sum(income[:, None] >= params.bracket_cutoffs[1:], -1)
    shares = jnp.bincount(bracket, length=env.B) / env.N
    return jnp.concatenate([
        public,
        jnp.stack([jnp.mean(c) / COIN, jnp.std(c) / COIN, state.equality, jnp.mean(income) / COIN,
                   state.treasury / (COIN * env.N)]),
        shares,
    ]).astype(jnp.float32)


def observe(env, state, params) -> dict:
    """``{"citizen": f32[N, citizen], "government": f32[1, government]}``."""
    public = public_features(env, state, params)
    return {
        "citizen": citizen_obs(env, state, params, public),
        "government": government_obs(env, state, params, public)[None],
    }

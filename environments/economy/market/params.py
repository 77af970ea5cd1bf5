"""The market's params (sweepable, vmappable) and state."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxagents_environments.economy.market.auction import OrderBook


@struct.dataclass
class MarketParams:
    """Sweepable settings (vmap over them for a population of economies).

    Attributes:
        prices: ``i32[P]`` coin per unit at each price level, >= 1, strictly increasing.
        bracket_cutoffs: ``f32[B]`` lower bracket edges, 0 first, strictly increasing.
        tax_period: ``i32`` steps per tax period (>= 1).
        horizon: ``i32`` steps per episode (>= 1), then truncation.
        order_duration: ``i32`` matching rounds an order stays open (>= 1).
        starting_coin: ``i32`` coin per citizen at reset (>= 0).
        coin_per_craft: ``f32`` coin per craft per unit of craft skill (>= 0).
        craft_units: ``i32`` units of each of two resources per craft (>= 1).
        gather_labour: ``f32`` labour a gather action adds to the citizen's total
            (finite, >= 0).
        craft_labour: ``f32`` labour a craft action adds (finite, >= 0).
        order_labour: ``f32`` labour placing an order (bid or ask) adds (finite, >= 0).
        labour_weight: ``f32`` utility cost per unit of labour (>= 0).
        eta: ``f32`` isoelastic curvature, ``0 <= eta < 1``.
        skill_mean: ``f32`` mean of the normal draw of every gather skill and craft
            skill at reset (finite, >= 0).
        skill_sd: ``f32`` standard deviation of that draw (finite, >= 0).
        max_skill: ``f32`` the skills are clipped to ``[0, max_skill]`` (finite, > 0).
    """

    prices: jax.Array
    bracket_cutoffs: jax.Array
    tax_period: jax.Array
    horizon: jax.Array
    order_duration: jax.Array
    starting_coin: jax.Array
    coin_per_craft: jax.Array
    craft_units: jax.Array
    gather_labour: jax.Array
    craft_labour: jax.Array
    order_labour: jax.Array
    labour_weight: jax.Array
    eta: jax.Array
    skill_mean: jax.Array
    skill_sd: jax.Array
    max_skill: jax.Array


@struct.dataclass
class MarketState:
    """``N`` citizens, ``R`` resources, ``k`` order slots, ``B`` brackets.

    Attributes:
        coin: ``i32[N]`` coin in inventory (escrow excluded).
        goods: ``i32[N, R]`` resources in inventory (escrow excluded).
        escrow_coin: ``i32[N]`` coin locked in open bids (the sum of their prices).
        escrow_goods: ``i32[N, R]`` units locked in open asks.
        labour: ``f32[N]`` labour so far this episode.
        gather_skill: ``f32[N, R]``; craft_skill: ``f32[N]``.
        book: the open orders (``OrderBook``, ``i32[N, k]`` fields).
        tax_rates: ``f32[B]`` rates of the current period.
        period_start_coin: ``i32[N]`` total coin at the start of the period.
        treasury: ``i32[]`` undistributed revenue (< N after a tax day).
        utility: ``f32[N]``; swf: ``f32[]`` the government's objective;
        equality: ``f32[]`` 1 - Gini of total coin.
        volume: ``i32[R]`` units traded last step; mean_price: ``f32[R]`` their mean price.
        t: ``i32[]`` steps taken.
    """

    coin: jax.Array
    goods: jax.Array
    escrow_coin: jax.Array
    escrow_goods: jax.Array
    labour: jax.Array
    gather_skill: jax.Array
    craft_skill: jax.Array
    book: OrderBook
    tax_rates: jax.Array
    period_start_coin: jax.Array
    treasury: jax.Array
    utility: jax.Array
    swf: jax.Array
    equality: jax.Array
    volume: jax.Array
    mean_price: jax.Array
    t: jax.Array


def check_int(name, value, lo, hi=None):
    """Raise ``ValueError`` unless ``value`` is an int in ``[lo, hi]`` (a constructor size)."""
    ok = isinstance(value, (int, np.integer)) and not isinstance(value, bool)
    if not ok or value < lo or (hi is not None and value > hi):
        rng = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
        raise ValueError(f"{name} must be an int {rng}, got {value!r}")


def default_params(prices, brackets, horizon, tax_period, order_duration) -> MarketParams:
    """The defaults (EconoJax's economy); sizes and the listed values come from the constructor."""
    f, i = (lambda x: jnp.asarray(x, jnp.float32)), (lambda x: jnp.asarray(x, jnp.int32))
    return MarketParams(
        prices=i(prices), bracket_cutoffs=f(brackets), tax_period=i(tax_period),
        horizon=i(horizon), order_duration=i(order_duration), starting_coin=i(15),
        coin_per_craft=f(20.0), craft_units=i(2), gather_labour=f(1.0), craft_labour=f(1.0),
        order_labour=f(0.05), labour_weight=f(1.0), eta=f(0.27), skill_mean=f(1.0), skill_sd=f(1.0),
        max_skill=f(5.0),
    )


def check_params(env, params: MarketParams) -> None:
    """Raise ``ValueError`` naming the field and its allowed range (host numpy values)."""
    p = params
    prices, cut = np.asarray(p.prices), np.asarray(p.bracket_cutoffs)
    if prices.shape != (env.P,):
        raise ValueError(f"params.prices must have shape ({env.P},) (the constructor's price count), "
                         f"got {prices.shape}")
    if not np.issubdtype(prices.dtype, np.integer) or np.any(prices < 1) or np.any(np.diff(prices) <= 0):
        raise ValueError(f"params.prices must be integers >= 1, strictly increasing, got {prices.tolist()}")
    check_cutoffs(cut, env.B)
    ranges = {
        "tax_period": (1, None), "horizon": (1, None), "order_duration": (1, None), "starting_coin": (0, 10**6),
        "coin_per_craft": (0, 10**6), "craft_units": (1, None), "gather_labour": (0, None),
        "craft_labour": (0, None), "order_labour": (0, None), "labour_weight": (0, None),
        "skill_mean": (0, None), "skill_sd": (0, None),
    }
    check_ranges(p, ranges)
    if np.asarray(p.order_duration) > env.max_order_duration:
        raise ValueError(f"params.order_duration must be <= {env.max_order_duration} for {env.N} citizens, "
                         f"{env.R} resources and {env.P} prices (the auction's 32-bit sort key), "
                         f"got {p.order_duration}")
    eta, max_skill = np.asarray(p.eta), np.asarray(p.max_skill)
    if eta.shape != () or not 0 <= eta < 1:
        raise ValueError(f"params.eta must be in [0, 1), got {eta}")
    if max_skill.shape != () or not (np.isfinite(max_skill) and max_skill > 0):
        raise ValueError(f"params.max_skill must be finite and > 0, got {max_skill}")



def check_cutoffs(cut, count: int) -> None:
    """``params.bracket_cutoffs``: shape ``(count,)``, finite, 0 first, strictly increasing."""
    if cut.shape != (count,):
        raise ValueError(f"params.bracket_cutoffs must have shape ({count},) (the constructor's bracket count), "
                         f"got {cut.shape}")
    if not np.all(np.isfinite(cut)) or cut[0] != 0 or np.any(np.diff(cut) <= 0):
        raise ValueError(f"params.bracket_cutoffs must be finite, start at 0 and strictly increase, got {cut.tolist()}")


def check_ranges(p, ranges: dict) -> None:
    """Every ``params.<name>`` in ``ranges`` (``{name: (lo, hi or None)}``) is a finite
    scalar in ``[lo, hi]``."""
    for name, (lo, hi) in ranges.items():
        v = np.asarray(getattr(p, name))
        if v.shape != () or not np.isfinite(v) or v < lo or (hi is not None and v > hi):
            rng = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
            raise ValueError(f"params.{name} must be a finite scalar {rng}, got {v}")

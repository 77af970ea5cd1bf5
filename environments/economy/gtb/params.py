"""The gather-trade-build economy's params (sweepable, vmappable) and state."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxagents_environments.economy.market.auction import OrderBook
from jaxagents_environments.economy.market.params import check_cutoffs, check_ranges

# The AI Economist's `us-federal` bracket spacing: the 2018 single-filer cutoffs in
# dollars, divided by its `usd_scaling` of 1,000 (coin per tax period).
US_FEDERAL_CUTOFFS = (0.0, 9.7, 39.475, 84.2, 160.725, 204.1, 510.3)
US_FEDERAL_RATES_2018 = (0.10, 0.12, 0.22, 0.24, 0.32, 0.35, 0.37)


@struct.dataclass
class GTBParams:
    """Sweepable settings (defaults: the AI Economist's `simple_wood_and_stone` tutorial).

    Attributes:
        horizon: ``i32`` steps per episode (1,000), then truncation.
        tax_period: ``i32`` steps per tax period (100).
        order_duration: ``i32`` an order placed at step ``t`` takes part in the matching
            of steps ``t .. t + order_duration`` and then expires (50).
        starting_coin: ``f32`` coin per citizen at reset (10).
        move_labour: ``f32`` labour per successful move to a neighbouring tile (1);
            finite, >= 0.
        collect_labour: ``f32`` labour per resource unit gathered from the tile a
            citizen stands on, the bonus second unit free (1); finite, >= 0.
        build_labour: ``f32`` labour per house built (10); finite, >= 0.
        order_labour: ``f32`` labour per order (bid or ask) placed (0.25); finite, >= 0.
        payment: ``f32`` coin per house at skill multiplier 1 (10).
        regen_prob: ``f32`` chance per step that an empty source tile regrows (0.01).
        eta: ``f32`` isoelastic curvature of coin, ``0 <= eta < 1`` (0.23).
        energy_cost: ``f32`` utility cost per unit of labour at full weight (0.21).
        energy_weight: ``f32`` in [0, 1], the warm-up factor on ``energy_cost`` (1; the
            two-level curriculum raises it from 0, see ``energy_warmup``).
        rate_max: ``f32`` in [0, 1], the largest tax rate in force (1; tax annealing
            raises it from 0, see ``annealed_rate_max``); 0 disables taxes.
        bracket_cutoffs: ``f32[B]`` lower bracket edges in coin per period, 0 first.
        schedule: ``i32[B]`` who sets each bracket's rate (default all ``-1``): ``-1``
            the planner; ``k >= 0`` a fixed level ``k`` (rate ``k / (L - 1)``, still capped
            by ``rate_max``) for the whole episode, the planner's action ignored; ``-2``
            a level drawn uniformly at reset and fixed for the episode (citizens that
            learn under random schedules can then be scored on any schedule).
    """

    horizon: jax.Array
    tax_period: jax.Array
    order_duration: jax.Array
    starting_coin: jax.Array
    move_labour: jax.Array
    collect_labour: jax.Array
    build_labour: jax.Array
    order_labour: jax.Array
    payment: jax.Array
    regen_prob: jax.Array
    eta: jax.Array
    energy_cost: jax.Array
    energy_weight: jax.Array
    rate_max: jax.Array
    bracket_cutoffs: jax.Array
    schedule: jax.Array


@struct.dataclass
class GTBState:
    """``N`` citizens, a ``H x W`` map, ``B`` brackets, ``k = 2 * max_orders`` order slots.

    Attributes:
        loc: ``i32[N, 2]`` (row, col).
        coin: ``f32[N]`` coin in inventory (escrow excluded).
        goods: ``i32[N, 2]`` stone and wood in inventory (escrow excluded).
        escrow_coin: ``f32[N]`` coin locked in open bids; escrow_goods: ``i32[N, 2]``.
        labour: ``f32[N]`` labour so far this episode.
        build_payment: ``f32[N]`` coin per house (payment x skill multiplier).
        bonus_prob: ``f32[N]`` chance of a second unit when gathering.
        resources: ``bool[2, H, W]`` a unit of stone / wood lies on the tile.
        house: ``i32[H, W]`` owner of the house on the tile, -1 for none.
        book: open orders (``market.auction.OrderBook``, ``i32[N, k]`` fields; the
            arrival rank is the citizen's index).
        rates: ``f32[B]`` marginal rates in force this period.
        rate_index: ``i32[B]`` the level in force per bracket (0..L-1).
        schedule: ``i32[B]`` ``params.schedule`` with random levels drawn: ``-1`` where
            the planner sets the rate, else the episode's fixed level.
        last_coin: ``f32[N]`` total coin after the last tax day (or reset).
        last_income: ``f32[N]`` income of the last taxed period.
        utility: ``f32[N]``; swf: ``f32[]`` equality x productivity of total coin.
        t: ``i32[]`` steps taken.
        mask: ``bool[N, n_actions]`` the citizens' legal actions in this state
            (``rules.citizen_mask``), computed once when the state is made: the
            timestep shows it and the next step enforces it.
    """

    loc: jax.Array
    coin: jax.Array
    goods: jax.Array
    escrow_coin: jax.Array
    escrow_goods: jax.Array
    labour: jax.Array
    build_payment: jax.Array
    bonus_prob: jax.Array
    resources: jax.Array
    house: jax.Array
    book: OrderBook
    rates: jax.Array
    rate_index: jax.Array
    schedule: jax.Array
    last_coin: jax.Array
    last_income: jax.Array
    utility: jax.Array
    swf: jax.Array
    t: jax.Array
    mask: jax.Array


def default_params(horizon: int = 1000, tax_period: int = 100, brackets=US_FEDERAL_CUTOFFS) -> GTBParams:
    """The AI Economist's defaults (see ``GTBParams``); ``horizon``, ``tax_period`` and the
    bracket cutoffs are the env's constructor arguments."""
    f, i = (lambda x: jnp.asarray(x, jnp.float32)), (lambda x: jnp.asarray(x, jnp.int32))
    return GTBParams(
        horizon=i(horizon), tax_period=i(tax_period), order_duration=i(50), starting_coin=f(10.0),
        move_labour=f(1.0), collect_labour=f(1.0), build_labour=f(10.0), order_labour=f(0.25),
        payment=f(10.0), regen_prob=f(0.01), eta=f(0.23), energy_cost=f(0.21),
        energy_weight=f(1.0), rate_max=f(1.0), bracket_cutoffs=f(brackets),
        schedule=jnp.full((len(brackets),), -1, jnp.int32),
    )


def check_params(env, p: GTBParams) -> None:
    """Raise ``ValueError`` naming the field and its allowed range (host numpy values)."""
    check_cutoffs(np.asarray(p.bracket_cutoffs), env.B)
    ranges = {
        "horizon": (1, None), "tax_period": (1, None), "order_duration": (0, env.max_order_duration),
        "starting_coin": (0, 1e6), "move_labour": (0, None), "collect_labour": (0, None),
        "build_labour": (0, None), "order_labour": (0, None), "payment": (0, 1e6),
        "regen_prob": (0, 1), "eta": (0, 0.999), "energy_cost": (0, None),
        "energy_weight": (0, 1), "rate_max": (0, 1),
    }
    check_ranges(p, ranges)
    schedule = np.asarray(p.schedule)
    if schedule.shape != (env.B,) or np.any(schedule < -2) or np.any(schedule >= env.L):
        raise ValueError(f"params.schedule must be i32[{env.B}] with values -2 (random), -1 (the planner) or "
                         f"levels 0..{env.L - 1}, got {schedule.tolist()}")


def energy_warmup(episodes_done, constant):
    """The AI Economist's labour-cost warm-up (`decay`): ``1 - exp(-episodes / constant)``
    (1 when ``constant <= 0``). Set ``params.energy_weight`` to it between episodes."""
    episodes_done = jnp.asarray(episodes_done, jnp.float32)
    return jnp.where(constant <= 0, 1.0, 1.0 - jnp.exp(-episodes_done / jnp.maximum(constant, 1e-9)))


def annealed_rate_max(episodes_done, warmup, slope, final_max=1.0):
    """The AI Economist's tax annealing: ``clip(slope * (episodes - warmup), 0, 1) * final_max``
    (its phase-2 schedule is ``warmup=-100, slope=0.001``). Set ``params.rate_max`` to it."""
    frac = jnp.clip(slope * (jnp.asarray(episodes_done, jnp.float32) - warmup), 0.0, 1.0)
    return frac * final_max

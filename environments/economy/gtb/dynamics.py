"""One step of the gather-trade-build economy, as a pure function of the state, the
actions, the params and the step's random draws.

The step runs the AI Economist's components in its order (Build, ContinuousDoubleAuction,
Gather, PeriodicBracketTax, then the map's regrowth), so a step here and a step of its
`layout_from_file/simple_wood_and_stone` scenario agree exactly when they see the same
random draws (``Draws``; the parity test feeds the reference's own):

1. **Build.** A citizen that builds pays one stone and one wood, puts a house it owns on
   its tile, earns its ``build_payment`` and ``build_labour``.
2. **Orders.** Bids escrow their price in coin, asks one unit; ``order_labour`` each.
   The book is then matched by ``market.auction.match`` with the citizen's index as
   its arrival rank and ``same_step_price="ask"``: bids by price then age (then index),
   asks likewise, the j-th bid paired with the j-th ask while they cross, at the older
   order's price (the ask's when both are of this step) -- the pairs and prices of the
   AI Economist's matching loop, which takes the best bid against the best ask the
   bidder does not own. Its skip of the bidder's own asks never changes anything here
   because our masks keep a citizen's bids below its own asks. Orders older than
   ``order_duration`` steps then expire and release their escrow.
3. **Move and gather.** Citizens are visited in a random order (``Draws.priority``);
   a move succeeds unless an earlier citizen took the same tile this step (the masks
   already exclude tiles that are occupied at the start, water, others' houses and the
   map's edge, so the visit order matters only for two citizens heading for one tile:
   the AI Economist's sequential rule, computed in one scatter-min). Every citizen then
   gathers the unit on its tile, if any: one unit, two with chance ``bonus_prob``
   (``Draws.bonus``), ``collect_labour``; moving costs ``move_labour``.
4. **Taxes.** On the first step of a period the planner's levels take effect (``0``
   keeps a bracket's rate, ``k`` sets level ``k - 1``, i.e. rate ``(k-1)/(L-1)``,
   capped by ``params.rate_max``). On its last step every citizen's income (total coin
   now minus after the last tax day) is taxed by brackets, at most the coin in its
   inventory, and the revenue is shared equally (floats, as in the AI Economist).
5. **Regrowth.** Each empty source tile regrows its unit with chance ``regen_prob``
   (``Draws.regen``), also under a citizen standing on it (who gathers it next step).

Illegal citizen actions (masked ones) become no-ops and are counted; the AI Economist
trusts its masks instead. No loop over citizens: every rule is a gather, scatter or sort.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from jaxagents_environments.economy.gtb import rules
from jaxagents_environments.economy.gtb.params import GTBParams, GTBState
from jaxagents_environments.economy.market.auction import ASK, BID, EMPTY, OrderBook, feistel_ranks, match
from jaxagents_environments.economy.market.rules import bracket_tax, isoelastic_utility
from jaxagents_environments.economy.metrics import gini


@struct.dataclass
class Draws:
    """The random numbers of one step.

    Attributes:
        priority: ``i32[N]`` distinct; the visiting order of moves (smaller first).
        bonus: ``f32[N]`` uniforms; a citizen gathers two units when ``bonus < bonus_prob``.
        regen: ``f32[S]`` uniforms, one per source tile (``env.source_tiles``, in
            row-major order of stone's tiles then wood's); an empty source tile regrows
            when ``regen < regen_prob``. (Drawing only these, not a whole map per
            resource as the AI Economist does, keeps a step's random numbers at
            ``2N + S``.)
    """

    priority: jax.Array
    bonus: jax.Array
    regen: jax.Array

    @classmethod
    def sample(cls, key, num_citizens: int, num_sources: int) -> "Draws":
        # one call for all 4 + N + S words: a key split per step and per economy costs
        # more than the words themselves at 4 citizens (about 15% of a step)
        bits = jax.random.bits(key, (4 + num_citizens + num_sources,), jnp.uint32)
        unit = _unit_floats(bits[4:])
        return cls(priority=feistel_ranks(bits[:4], num_citizens), bonus=unit[:num_citizens],
                   regen=unit[num_citizens:])


def _unit_floats(bits: jax.Array) -> jax.Array:
    """Uniform ``f32`` in ``[0, 1)`` from ``u32`` words (their top 23 bits as the mantissa,
    as ``jax.random.uniform`` does)."""
    one = jax.lax.bitcast_convert_type(jnp.float32(1.0), jnp.uint32)
    return jax.lax.bitcast_convert_type((bits >> 9) | one, jnp.float32) - 1.0


def equality_productivity(total: jax.Array) -> dict:
    """The planner's objective of total coin ``f32[N]``: mean coin x (1 - Gini)."""
    productivity, equality = jnp.mean(total), 1.0 - gini(total)
    return dict(productivity=productivity, equality=equality, swf=productivity * equality)


def utility(total, labour, params: GTBParams):
    """Isoelastic utility of total coin minus the (warmed-up) labour cost, ``f32[N]``."""
    return isoelastic_utility(total, labour, params.eta, params.energy_weight * params.energy_cost)


def marginal_rates(rates, income, cutoffs):
    """``f32[N]``: the rate of the bracket ``income`` falls in (0 for negative income)."""
    b = jnp.sum(income[:, None] >= cutoffs[1:], -1)
    return jnp.where(income < 0, 0.0, rates[b])


def step(env, state: GTBState, actions: dict, params: GTBParams, draws: Draws):
    """``(new_state, info)`` after one step (see the module docstring). ``env`` supplies
    the static sizes (``N, R, P, B, L, k``, ``layout``, the map's ``sources``, ``water``)."""
    N, R, P, lay = env.N, env.R, env.P, env.layout
    H, W = env.height, env.width
    t = state.t
    idx = jnp.arange(N)

    a = actions["citizen"]
    a_c = jnp.clip(a, 0, lay.n - 1)
    # the mask of this state was computed when it was made (and shown to the agents)
    legal = (a == a_c) & jnp.take_along_axis(state.mask, a_c[:, None], 1)[:, 0]
    a = jnp.where(legal, a_c, rules.NOOP)
    r0, c0 = state.loc[:, 0], state.loc[:, 1]

    # (1) build
    build = a == rules.BUILD
    goods = state.goods - build[:, None].astype(jnp.int32)
    house = state.house.at[jnp.where(build, r0, H), c0].set(idx, mode="drop")
    coin = state.coin + jnp.where(build, state.build_payment, 0.0)
    labour = state.labour + build * params.build_labour

    # (2) place orders (one per citizen at most), match, settle, expire
    placing, oq, oside, olevel = lay.decode_order(a)
    book = state.book
    slot = jnp.argmax(~book.open, -1)
    put = (jnp.arange(book.level.shape[1]) == slot[:, None]) & placing[:, None]
    put_val = lambda new, old: jnp.where(put, jnp.broadcast_to(jnp.asarray(new, jnp.int32), (N,))[:, None], old)
    book = OrderBook(level=put_val(olevel, book.level), resource=put_val(oq, book.resource),
                     side=put_val(oside, book.side), time=put_val(t, book.time), rank=put_val(idx, book.rank))
    bid_coin = jnp.where(placing & (oside == BID), olevel, 0).astype(jnp.float32)
    ask_units = jax.nn.one_hot(oq, R, dtype=jnp.int32) * (placing & (oside == ASK))[:, None]
    coin = coin - bid_coin
    goods = goods - ask_units
    escrow_coin, escrow_goods = state.escrow_coin + bid_coin, state.escrow_goods + ask_units
    labour = labour + placing * params.order_labour

    fill = match(book, R, P, env.rank_span, same_step_price="ask")
    traded = fill >= 0
    expired = book.open & ~traded & (t - book.time >= params.order_duration)
    closed = traded | expired
    is_bid = book.side == BID
    res = jax.nn.one_hot(book.resource, R, dtype=jnp.int32)  # [N, k, R]
    own_price = jnp.maximum(book.level, 0).astype(jnp.float32)
    fill_price = jnp.maximum(fill, 0).astype(jnp.float32)
    released_coin = jnp.sum(jnp.where(closed & is_bid, own_price, 0.0), -1)
    released_goods = jnp.sum(res * (closed & ~is_bid)[..., None], -2)
    bought = res * (traded & is_bid)[..., None]
    coin = coin + released_coin + jnp.sum(jnp.where(traded, jnp.where(is_bid, -fill_price, fill_price), 0.0), -1)
    goods = goods + jnp.sum(bought, -2) + jnp.sum(res * (expired & ~is_bid)[..., None], -2)
    escrow_coin, escrow_goods = escrow_coin - released_coin, escrow_goods - released_goods
    book = book.replace(level=jnp.where(closed, EMPTY, book.level))
    volume = jnp.sum(bought, (0, 1))

    # (3) move (the first visitor of a contested tile wins), then gather where standing
    moving, dr, dc = lay.decode_move(a)
    tr, tc = r0 + dr * moving, c0 + dc * moving
    cell = tr * W + tc
    first = jnp.full((H * W,), jnp.iinfo(jnp.int32).max, jnp.int32).at[jnp.where(moving, cell, H * W)].min(
        draws.priority, mode="drop")
    moved = moving & (first[cell] == draws.priority)
    r1, c1 = jnp.where(moved, tr, r0), jnp.where(moved, tc, c0)
    here = state.resources[:, r1, c1].T  # [N, R]; tiles are distinct, so no two gather one unit
    units = here.astype(jnp.int32) * (1 + (draws.bonus < state.bonus_prob)[:, None].astype(jnp.int32))
    goods = goods + units
    gathering = jnp.any(here, -1)
    resources = state.resources.at[:, r1, c1].set(False)
    labour = labour + moved * params.move_labour + jnp.sum(here, -1) * params.collect_labour

    # (4) taxes: new rates on a period's first step, the tax on its last
    period_pos = t % params.tax_period
    p_act = actions["planner"][0]  # [B]
    level = jnp.clip(p_act - 1, 0, env.L - 1)
    rate_index = jnp.where((period_pos == 0) & (p_act > 0) & (state.schedule < 0), level, state.rate_index)
    rates = jnp.minimum(rate_index / (env.L - 1), params.rate_max).astype(jnp.float32)
    total = coin + escrow_coin
    income = total - state.last_coin
    tax_day = period_pos == params.tax_period - 1
    owed = bracket_tax(jnp.maximum(income, 0.0), params.bracket_cutoffs, rates)
    tax = jnp.where(tax_day, jnp.minimum(coin, owed), 0.0)
    revenue = jnp.sum(tax)
    lump_sum = revenue / N
    coin = coin - tax + jnp.where(tax_day, lump_sum, 0.0)
    total = coin + escrow_coin
    last_coin = jnp.where(tax_day, total, state.last_coin)
    last_income = jnp.where(tax_day, income, state.last_income)

    # (5) regrowth of empty source tiles
    q, sr, sc = env.source_tiles
    resources = resources.at[q, sr, sc].set(resources[q, sr, sc] | (draws.regen < params.regen_prob))

    new_utility = utility(total, labour, params)
    welfare = equality_productivity(total)
    new = GTBState(
        loc=jnp.stack([r1, c1], -1), coin=coin, goods=goods, escrow_coin=escrow_coin, escrow_goods=escrow_goods,
        labour=labour, build_payment=state.build_payment, bonus_prob=state.bonus_prob, resources=resources,
        house=house, book=book, rates=rates, rate_index=rate_index, schedule=state.schedule, last_coin=last_coin, last_income=last_income,
        utility=new_utility, swf=welfare["swf"], t=t + 1, mask=state.mask,
    )
    new = new.replace(mask=rules.citizen_mask(lay, new, env.sources, env.water, env.max_orders))
    info = dict(
        num_illegal=jnp.sum(~legal, dtype=jnp.int32), illegal_action=jnp.any(~legal) | jnp.any((p_act < 0) | (p_act > env.L)),
        builds=jnp.sum(build, dtype=jnp.int32), gathered=jnp.sum(units, 0), gatherers=jnp.sum(gathering, dtype=jnp.int32),
        trades=volume, tax_revenue=jnp.where(tax_day, revenue, 0.0), lump_sum=jnp.where(tax_day, lump_sum, 0.0),
        **welfare,
    )
    return new, info, new_utility - state.utility, welfare["swf"] - state.swf

"""Gather, craft, trade and tax: the AI Economist's Gather-Trade-Build economy,
flattened (no map) like EconoJax, vectorised over any number of citizens.

Roles: ``citizen`` (N, ``Discrete(2 + R + 2 R P)``) and ``government`` (1,
``MultiDiscrete([L] * B)``: one rate level per tax bracket).

Actions. ``citizen``: ``0`` no-op; ``1 + q`` gather resource ``q``; ``1 + R`` craft;
``2 + R + (2 q + s) P + j`` place an order on resource ``q``, a bid (``s = 0``) or an
ask (``s = 1``), at price level ``j`` (price ``params.prices[j]``). ``government``: per
tax bracket ``b`` a level ``a_b`` in ``0 .. L-1``, the rate ``a_b / (L - 1)``.

Observations (``f32``; coin / 100, goods / 10, labour / 100, prices / the top price
level). Public part, ``B + 2 + 4 R + 2 R P``: tax rates ``[B]``, the fraction of the tax
period elapsed, ``t / horizon``, best bid and best ask price per resource ``[R]`` each
(0 where that side of the book is empty), open orders per (side, resource, price level)
over ``N`` ``[2 R P]``, last step's volume per resource over ``N`` ``[R]`` and its mean
price ``[R]``. ``citizen``, ``7 + 5 R`` own entries then the public part: coin in
inventory, coin in escrow, labour, craft skill, open orders / ``k``, income so far this
period, its marginal tax rate; goods in inventory ``[R]``, in escrow ``[R]``, gather
skills ``[R]``, own open bids ``[R]`` and asks ``[R]`` over ``k``. ``government``: the
public part, then mean and standard deviation of total coin, equality ``1 - Gini``, mean
income so far this period, the treasury over ``N``, and the share of citizens whose
period income lies in each bracket ``[B]``.

Citizens. Citizen ``i`` has coin (``i32``), goods ``i32[R]``, accumulated labour, gather
skills ``g_iq`` and a craft skill ``s_i`` drawn at reset as
``clip(skill_mean + skill_sd * N(0, 1), 0, max_skill)``. Each step it does one thing
(action ids in ``rules.ActionLayout``):

* no-op;
* gather resource ``q``: ``floor(g_iq + U[0, 1))`` units (mean ``g_iq``), labour
  ``gather_labour``;
* craft: ``craft_units`` (2) of each of two resources -> ``floor(coin_per_craft * s_i)``
  coin, labour ``craft_labour`` (the two largest inventories are used, ties to the
  lower index);
* place a unit order (bid or ask) on one resource at one of ``P`` price levels
  ``params.prices``, labour ``order_labour``. A bid moves its price from coin into
  escrow, an ask one unit of the resource. Orders rest in the citizen's ``k`` slots.

Step order: (1) the government's rates take effect if this step starts a tax period;
(2) illegal citizen actions (masked, or out of range) become no-ops and are counted in
``info["num_illegal"]``; (3) gather / craft / place orders; (4) the books are matched,
resource by resource (``auction.py`` documents the exact rule: price-time priority,
rank pairing of unit orders, trade at the earlier order's price); a buyer gets the
unit and the difference between its bid and the trade price back, the seller gets
the price; (5) orders that have been matched in ``order_duration`` rounds without
trading expire and their escrow returns; (6) after every ``tax_period``-th step the
period's income is taxed; (7) utilities and rewards.

Taxes. Income of a period ``z_i`` = total coin (inventory + escrow) now minus at the
start of the period (after the last tax day). Tax ``T(z) = floor(sum_b tau_b
clip(z - c_b, 0, c_{b+1} - c_b))`` (nothing on negative income; ``T(z) <= z``), collected
in full even when the coin is locked in open bids: the inventory may then go negative
(a debt the released escrow repays; bids are masked meanwhile), while total coin never
goes below zero. Revenue plus the treasury is rebated equally in
whole coins; the remainder ``mod N`` stays in the treasury for the next period, so
coin is conserved exactly. The government's action sets the rates ``tau_b =
a_b / (L - 1)`` on the first step of each period (only then is it ``active``); a
period cut off by the horizon is not taxed.

Rewards. Citizen utility ``u_i = (c_i^(1 - eta) - 1) / (1 - eta) - labour_weight *
labour_i`` with ``c_i`` the total coin; reward = change in utility. Government:
``swf = (1 - Gini(c)) * mean(c)`` (equality x productivity); reward = its change.
Episodes are truncated after ``horizon`` steps and never terminate; stepping past the
end keeps working. Out-of-range government levels are clipped and flagged in
``info["illegal_action"]``.

``info`` (scalars unless noted): ``illegal_action`` (bool), ``num_illegal``,
``coin_crafted``, ``gathered`` / ``consumed`` (``i32[R]``), ``tax_revenue``, ``rebate``
(per citizen, on tax days), ``productivity``, ``equality``, ``swf``. Last step's
volume and mean trade price per resource are in the state and the observations.

Conservation (tested): trading and escrow conserve coin and goods; the only sources
are crafting (``info["coin_crafted"]``) and gathering (``info["gathered"]``), the only
sink crafting's inputs (``info["consumed"]``); taxes equal rebates plus the change of
the treasury.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxagents_environments.economy.market import obs as obs_lib
from jaxagents_environments.economy.market import params as params_lib
from jaxagents_environments.economy.market import rules
from jaxagents_environments.economy.market.auction import ASK, BID, EMPTY, OrderBook, arrival_ranks, key_bits, match, rank_bits
from jaxagents_environments.economy.market.params import MarketParams, MarketState, check_int
from jaxagents_environments.economy.metrics import gini
from jaxagents.core import Box, Discrete, Env, MultiDiscrete, Role

# EconoJax's Dutch brackets scaled down by 100 (lower edges, coin per tax period).
DEFAULT_BRACKETS = (0.0, 380.98, 755.188)
DEFAULT_PRICES = (1, 3, 5, 7, 9)


class Market(Env):
    """The market economy (see the module docstring).

    Args:
        num_citizens: ``N >= 2``.
        num_resources: ``R >= 2`` (crafting needs two).
        max_orders: ``k >= 1`` open orders per citizen (slots).
        prices: default price levels (``P = len(prices)``, 1..64 levels).
        brackets: default lower bracket edges (``B = len(brackets)``).
        rate_levels: ``L >= 2`` rate choices per bracket (0%, ..., 100%).
        horizon, tax_period, order_duration: defaults of those params.
    """

    def __init__(self, num_citizens: int = 100, num_resources: int = 2, max_orders: int = 5,
                 prices=DEFAULT_PRICES, brackets=DEFAULT_BRACKETS, rate_levels: int = 21,
                 horizon: int = 1000, tax_period: int = 100, order_duration: int = 30):
        check_int("num_citizens", num_citizens, 2, 2**24)
        check_int("num_resources", num_resources, 2, 64)
        check_int("max_orders", max_orders, 1, 256)
        check_int("rate_levels", rate_levels, 2, 1001)
        for name, v in (("horizon", horizon), ("tax_period", tax_period), ("order_duration", order_duration)):
            check_int(name, v, 1)
        prices, brackets = np.asarray(prices), np.asarray(brackets, np.float64)
        if prices.ndim != 1 or not 1 <= prices.size <= 64:
            raise ValueError(f"prices must be a 1-D sequence of 1 to 64 levels, got shape {prices.shape}")
        if brackets.ndim != 1 or brackets.size < 1:
            raise ValueError(f"brackets must be a non-empty 1-D sequence of lower edges, got shape {brackets.shape}")
        self.N, self.R, self.k = num_citizens, num_resources, max_orders
        self.P, self.B, self.L = int(prices.size), int(brackets.size), rate_levels
        self.layout = rules.ActionLayout(self.R, self.P)
        self.rank_span = 2 ** rank_bits(num_citizens)
        # the packed sort key of auction.match holds order_duration * rank_span sequence numbers
        self.max_order_duration = 2 ** key_bits(self.R, self.P) // self.rank_span
        if self.max_order_duration < 1:
            raise ValueError(f"num_citizens={num_citizens} with {self.R} resources and {self.P} prices overflows "
                             f"the auction's 32-bit sort key; use fewer citizens, resources or price levels")
        self._defaults = dict(prices=prices, brackets=brackets, horizon=horizon, tax_period=tax_period,
                              order_duration=order_duration)
        self.validate_params(self.default_params())  # bad prices/brackets fail here, by name
        self.dims = obs_lib.Dims(self.R, self.P, self.B)
        self.roles = {
            "citizen": Role(num_citizens, Box(-np.inf, np.inf, (self.dims.citizen,)), Discrete(self.layout.n)),
            "government": Role(1, Box(-np.inf, np.inf, (self.dims.government,)),
                               MultiDiscrete([rate_levels] * self.B)),
        }
        self.global_obs_shape = (self.dims.government,)

    # ---------------------------------------------------------------- params
    def default_params(self) -> MarketParams:
        return params_lib.default_params(**self._defaults)

    def check_params(self, params: MarketParams) -> None:
        params_lib.check_params(self, params)

    # ---------------------------------------------------------------- helpers
    @staticmethod
    def total_coin(state: MarketState) -> jax.Array:
        """``i32[N]``: inventory plus escrow."""
        return state.coin + state.escrow_coin

    def action_mask(self, state: MarketState, params: MarketParams) -> jax.Array:
        """``bool[N, n_actions]`` legal citizen actions (see ``rules.citizen_mask``)."""
        return rules.citizen_mask(self.layout, state.coin, state.goods, state.book, params.prices, params.craft_units)

    @staticmethod
    def welfare(total) -> dict:
        """Productivity (mean coin), equality (1 - Gini) and their product, the
        government's objective ``swf``, of total coin ``[..., N]``."""
        c = total.astype(jnp.float32)
        productivity, equality = jnp.mean(c, -1), 1.0 - gini(c)
        return dict(productivity=productivity, equality=equality, swf=productivity * equality)

    # ---------------------------------------------------------------- reset / step
    def reset_env(self, key, params):
        k1, k2 = jax.random.split(key)
        lo, hi = 0.0, params.max_skill
        gather_skill = jnp.clip(params.skill_mean + params.skill_sd * jax.random.normal(k1, (self.N, self.R)), lo, hi)
        craft_skill = jnp.clip(params.skill_mean + params.skill_sd * jax.random.normal(k2, (self.N,)), lo, hi)
        coin = jnp.full((self.N,), params.starting_coin, jnp.int32)
        labour = jnp.zeros((self.N,), jnp.float32)
        state = MarketState(
            coin=coin, goods=jnp.zeros((self.N, self.R), jnp.int32), escrow_coin=jnp.zeros((self.N,), jnp.int32),
            escrow_goods=jnp.zeros((self.N, self.R), jnp.int32), labour=labour,
            gather_skill=gather_skill, craft_skill=craft_skill, book=OrderBook.empty(self.N, self.k),
            tax_rates=jnp.zeros((self.B,), jnp.float32), period_start_coin=coin,
            treasury=jnp.zeros((), jnp.int32),
            utility=rules.isoelastic_utility(coin, labour, params.eta, params.labour_weight),
            swf=jnp.zeros((), jnp.float32), equality=jnp.zeros((), jnp.float32),
            volume=jnp.zeros((self.R,), jnp.int32), mean_price=jnp.zeros((self.R,), jnp.float32),
            t=jnp.zeros((), jnp.int32),
        )
        welfare = self.welfare(coin)
        state = state.replace(swf=welfare["swf"], equality=welfare["equality"])
        zi, zr = jnp.zeros((), jnp.int32), jnp.zeros((self.R,), jnp.int32)
        info = dict(illegal_action=jnp.zeros((), bool), num_illegal=zi, coin_crafted=zi, gathered=zr, consumed=zr,
                    tax_revenue=zi, rebate=zi, **welfare)
        return state, self._timestep(state, params, None, info)

    def step_env(self, key, state, actions, params):
        R, P, lay = self.R, self.P, self.layout
        k_rank, k_gather = jax.random.split(key)
        t = state.t

        # (1) the government's rates, on the first step of a period
        g = actions["government"][0]
        g_clipped = jnp.clip(g, 0, self.L - 1)
        rates = jnp.where(t % params.tax_period == 0, g_clipped / (self.L - 1), state.tax_rates).astype(jnp.float32)

        # (2) illegal citizen actions become no-ops
        a = actions["citizen"]
        a_c = jnp.clip(a, 0, lay.n - 1)
        legal = (a == a_c) & jnp.take_along_axis(self.action_mask(state, params), a_c[:, None], 1)[:, 0]
        a = jnp.where(legal, a_c, rules.NOOP)

        # (3) gather, craft, place orders
        coin, goods, book = state.coin, state.goods, state.book
        gathering = (a >= 1) & (a <= R)
        gq = jax.nn.one_hot(a - 1, R, dtype=jnp.int32)  # all-zero unless gathering
        u = jax.random.uniform(k_gather, (self.N,))
        gathered = jnp.floor(state.gather_skill + u[:, None]).astype(jnp.int32) * gq
        crafting = a == lay.craft
        _, use = rules.craft_inputs(goods, params.craft_units)
        consumed = (use & crafting[:, None]).astype(jnp.int32) * params.craft_units
        crafted = jnp.floor(params.coin_per_craft * state.craft_skill).astype(jnp.int32) * crafting
        placing = a >= lay.order0
        oq, oside, olevel = lay.decode_order(a)
        slot = jnp.argmax(~book.open, -1)
        put = (jnp.arange(self.k) == slot[:, None]) & placing[:, None]
        arrival = arrival_ranks(k_rank, self.N)
        put_val = lambda new, old: jnp.where(put, jnp.asarray(new, jnp.int32)[..., None], old)
        book = OrderBook(level=put_val(olevel, book.level), resource=put_val(oq, book.resource),
                         side=put_val(oside, book.side), time=put_val(jnp.broadcast_to(t, (self.N,)), book.time),
                         rank=put_val(arrival, book.rank))
        bid_coin = jnp.where(placing & (oside == BID), params.prices[olevel], 0)
        ask_units = jax.nn.one_hot(oq, R, dtype=jnp.int32) * (placing & (oside == ASK))[:, None]
        coin = coin + crafted - bid_coin
        goods = goods + gathered - consumed - ask_units
        escrow_coin, escrow_goods = state.escrow_coin + bid_coin, state.escrow_goods + ask_units
        labour = state.labour + (gathering * params.gather_labour + crafting * params.craft_labour
                                 + placing * params.order_labour)

        # (4) match: a bid releases its escrow, the buyer gets the unit and (bid - price)
        # back, the seller the price; (5) expired orders release their escrow
        fill = match(book, R, P, self.rank_span)
        traded = fill >= 0
        expired = book.open & ~traded & (t - book.time >= params.order_duration - 1)
        closed = traded | expired
        is_bid = book.side == BID
        res = jax.nn.one_hot(book.resource, R, dtype=jnp.int32)  # [N, k, R]
        own_price = params.prices[jnp.maximum(book.level, 0)]
        fill_price = params.prices[jnp.maximum(fill, 0)]
        released_coin = jnp.sum(jnp.where(closed & is_bid, own_price, 0), -1)
        released_goods = jnp.sum(res * (closed & ~is_bid)[..., None], -2)
        bought = res * (traded & is_bid)[..., None]
        coin = coin + released_coin + jnp.sum(jnp.where(traded, jnp.where(is_bid, -fill_price, fill_price), 0), -1)
        goods = goods + jnp.sum(bought, -2) + jnp.sum(res * (expired & ~is_bid)[..., None], -2)
        escrow_coin, escrow_goods = escrow_coin - released_coin, escrow_goods - released_goods
        book = book.replace(level=jnp.where(closed, EMPTY, book.level))
        volume = jnp.sum(bought, (0, 1))
        price_sum = jnp.sum(bought * fill_price[..., None], (0, 1))
        mean_price = jnp.where(volume > 0, price_sum / jnp.maximum(volume, 1), 0.0).astype(jnp.float32)

        # (6) taxes and rebates at the end of a period
        total = coin + escrow_coin
        income = total - state.period_start_coin
        tax_day = (t + 1) % params.tax_period == 0
        owed = rules.bracket_tax(jnp.maximum(income, 0).astype(jnp.float32), params.bracket_cutoffs, rates)
        tax = jnp.where(tax_day, jnp.minimum(jnp.floor(owed).astype(jnp.int32), jnp.maximum(income, 0)), 0)
        pool = jnp.sum(tax) + state.treasury
        rebate = jnp.where(tax_day, pool // self.N, 0)
        coin = coin - tax + rebate
        total = total - tax + rebate
        period_start = jnp.where(tax_day, total, state.period_start_coin)

        # (7) utilities and rewards
        utility = rules.isoelastic_utility(total, labour, params.eta, params.labour_weight)
        welfare = self.welfare(total)
        swf = welfare["swf"]
        new = MarketState(
            coin=coin, goods=goods, escrow_coin=escrow_coin, escrow_goods=escrow_goods, labour=labour,
            gather_skill=state.gather_skill, craft_skill=state.craft_skill,
            book=book, tax_rates=rates, period_start_coin=period_start, treasury=pool - rebate * self.N,
            utility=utility, swf=swf, equality=welfare["equality"], volume=volume, mean_price=mean_price, t=t + 1,
        )
        num_illegal = jnp.sum(~legal, dtype=jnp.int32)
        info = dict(
            illegal_action=(num_illegal > 0) | jnp.any(g != g_clipped), num_illegal=num_illegal,
            coin_crafted=jnp.sum(crafted), gathered=jnp.sum(gathered, 0), consumed=jnp.sum(consumed, 0),
            tax_revenue=jnp.sum(tax), rebate=rebate.astype(jnp.int32), **welfare,
        )
        reward = {"citizen": utility - state.utility, "government": (swf - state.swf)[None]}
        return new, self._timestep(new, params, reward, info)

    # ---------------------------------------------------------------- observations
    def _timestep(self, state, params, reward, info):
        obs = obs_lib.observe(self, state, params)
        return self.make_timestep(
            obs, reward=reward, truncated=state.t >= params.horizon,
            action_mask={"citizen": self.action_mask(state, params), "government": jnp.ones((1, 1), bool)},
            active={"citizen": jnp.ones((self.N,), bool),
                    "government": (state.t % params.tax_period == 0)[None]},
            info=info,
        )

    def global_obs(self, state, params=None):
        """The government's observation (aggregates of the whole economy), ``f32[G]``."""
        params = self.default_params() if params is None else params
        return obs_lib.government_obs(self, state, params)

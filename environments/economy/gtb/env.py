"""Gather, trade and build on a map: the AI Economist's `simple_wood_and_stone`
economy (Zheng et al. 2020/2022), vectorised over citizens and economies.

Roles: ``citizen`` (N, ``Discrete(50)`` with the default 11 price levels) and
``planner`` (1, ``MultiDiscrete([L + 1] * B)``: per tax bracket ``0`` keeps the rate,
``k`` sets level ``k - 1`` of ``L`` levels ``0, 1/(L-1), ..., 1``; 21 levels = steps of
5%). The rules and their order are in ``dynamics``; action ids in ``rules``;
observations in ``obs``.

Actions. ``citizen`` (``P = max_bid_ask + 1`` price levels, 11): ``0`` no-op, ``1``
build a house, then per resource in the order stone, wood, ``P`` bids at prices
``0 .. P-1`` and ``P`` asks at prices ``0 .. P-1``, then ``2 + 4P .. 5 + 4P`` move left,
right, up, down (the AI Economist's ids; ``timestep.action_mask`` rules out what the
citizen cannot do). ``planner``: one entry per tax bracket, ``0`` keeps the bracket's
rate, ``k`` sets level ``k - 1`` (rate ``(k - 1) / (L - 1)``).

Observations (``f32``). ``citizen``, ``8 (2w+1)^2 + 17 + B + 4 R P``
(``w = view_radius``, ``R = 2``, ``B`` brackets): the ``(2w+1) x (2w+1)`` window around
it, channel by channel (stone units, wood units, stone sources, wood sources, water or
outside the map, own houses, others' houses, other citizens); then coin, stone, wood,
escrowed coin, stone and wood (coin x 0.01, goods x 0.1), labour x 0.001, its build
payment over ``params.payment``, its bonus-gather chance, its row and column over the
map's height and width, ``t / horizon``, the position in the tax period (fraction, first
day, last day), its marginal tax rate and last period's income per step; the rates in
force ``[B]``; its own open orders and everybody else's, per (bid/ask, resource, price
level). ``planner``, ``5 + B + 2 N + 2 R + 2 R P + 2``: the position in the tax period
(fraction, first day, last day), the rate cap, ``t / horizon``, the rates in force, last
period's incomes sorted (per step), total coin sorted (x 0.01), mean inventories and
mean escrowed goods per resource (x 0.1), the whole book's depth per (side, resource,
price level), equality ``1 - Gini`` and mean total coin (x 0.01).

Reset. Every tile of a source holds its unit; houses and orders are gone; every citizen
has ``starting_coin`` and nothing else. ``placement="ranked"`` (the AI Economist's
``fixed_four_skill_and_loc``): a random permutation gives each citizen a skill rank;
rank ``i`` starts at ``layouts.ranked_corners`` ``[i]`` with the expected ``i``-th
smallest build multiplier (``layouts.expected_ranked_multipliers``) times
``payment``. ``placement="random"``: distinct random land tiles and a multiplier
``min(M, (M - 1) X + 1)``, ``X`` Lomax(4). Either way the bonus-gather chance is
``min(2, Y) / 2``, ``Y`` Lomax(3), drawn per citizen.

Rewards. A citizen's is the change of its utility ``(c^(1-eta) - 1)/(1-eta) -
energy_weight * energy_cost * labour`` with ``c`` its total coin (inventory + escrow);
the planner's is the change of equality x productivity ``(1 - Gini(c)) * mean(c)``.
Episodes are truncated after ``horizon`` steps. The citizen's mask is enforced; the
planner acts on the first step of each period (``active``), and levels above
``params.rate_max`` are capped to it (the AI Economist masks them instead).
``params.schedule`` can take brackets from the planner: fixed levels, or levels drawn
at reset (the planner is inactive when it sets no bracket).

``info``: ``num_illegal``, ``illegal_action``, ``builds``, ``gathered`` (``i32[2]``),
``gatherers``, ``trades`` (``i32[2]`` units traded per resource), ``tax_revenue``,
``lump_sum``, ``productivity``, ``equality``, ``swf``.

Differences from the AI Economist, on purpose: illegal actions are no-ops here (it
trusts the masks); citizens may not cross their own orders (it skips them when
matching); coin is float32 (float64 there); the planner's Gini uses one formula at every
``N`` (it switches to an unnormalised one at ``N >= 30``); the ranked build multipliers
are exact expectations (it averages 10^5 draws); the labour warm-up and tax annealing,
which it keeps as counters across episodes, are params here (``params.energy_weight``,
``params.rate_max``; ``params.energy_warmup``, ``params.annealed_rate_max``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxagents.core import Box, Discrete, Env, MultiDiscrete, Role
from jaxagents_environments.economy.gtb import dynamics, layouts, obs as obs_lib, rules
from jaxagents_environments.economy.gtb import params as params_lib
from jaxagents_environments.economy.gtb.dynamics import Draws
from jaxagents_environments.economy.gtb.params import GTBParams, GTBState
from jaxagents_environments.economy.market.auction import OrderBook, key_bits, rank_bits
from jaxagents_environments.economy.market.params import check_int


class GTB(Env):
    """The gather-trade-build economy on a map (see the module docstring).

    Args:
        num_citizens: ``N >= 2``.
        layout: ``"quadrant_25x25"`` (the AI Economist's map), ``"generated"`` (that map
            tiled so each copy holds about 4 citizens), an ASCII map, or a
            ``layouts.Layout``; ``None`` picks the quadrant map up to 16 citizens and
            a generated one above.
        placement: ``"ranked"`` or ``"random"`` (see the module docstring); ``None``
            picks ranked up to 16 citizens.
        view_radius: a citizen sees ``(2w+1)^2`` tiles around it (5).
        max_bid_ask: highest price; prices are ``0..max_bid_ask`` (10).
        max_orders: open orders per citizen and resource (5).
        rate_levels: ``L`` rate levels per bracket (21: steps of 5%).
        max_skill_multiplier: the largest build-payment multiplier (3).
        horizon, tax_period, brackets: defaults of those params.
    """

    def __init__(self, num_citizens: int = 4, layout=None, placement: str | None = None, view_radius: int = 5,
                 max_bid_ask: int = 10, max_orders: int = 5, rate_levels: int = 21, max_skill_multiplier: float = 3.0,
                 horizon: int = 1000, tax_period: int = 100, brackets=params_lib.US_FEDERAL_CUTOFFS):
        check_int("num_citizens", num_citizens, 2, 2**20)
        check_int("view_radius", view_radius, 0, 64)
        check_int("max_bid_ask", max_bid_ask, 1, 1000)
        check_int("max_orders", max_orders, 1, 256)
        check_int("rate_levels", rate_levels, 2, 1001)
        for name, v in (("horizon", horizon), ("tax_period", tax_period)):
            check_int(name, v, 1)
        if not (isinstance(max_skill_multiplier, (int, float)) and 1.0 <= max_skill_multiplier <= 1000.0):
            raise ValueError(f"max_skill_multiplier must be a number in [1, 1000], got {max_skill_multiplier!r}")
        placement = ("ranked" if num_citizens <= 16 else "random") if placement is None else placement
        if placement not in ("ranked", "random"):
            raise ValueError(f"placement must be 'ranked' or 'random', got {placement!r}")
        layout = ("quadrant_25x25" if num_citizens <= 16 else "generated") if layout is None else layout
        self.map = layouts.resolve(layout, num_citizens)
        self.height, self.width = self.map.height, self.map.width
        if self.map.open_cells < num_citizens:
            raise ValueError(f"layout has {self.map.open_cells} land tiles for num_citizens={num_citizens}; "
                             f"use a larger map or layout='generated'")
        if placement == "ranked":
            corners = layouts.ranked_corners(num_citizens, self.height, self.width)
            if np.any(self.map.water[corners[:, 0], corners[:, 1]]) or len({tuple(x) for x in corners}) < num_citizens:
                raise ValueError("placement='ranked' puts citizens on water or on one tile in this layout; "
                                 "use placement='random'")
            self._ranked_locs = jnp.asarray(corners)
            self._ranked_mult = jnp.asarray(layouts.expected_ranked_multipliers(num_citizens, max_skill_multiplier),
                                            jnp.float32)
        brackets = np.asarray(brackets, np.float64)
        self.N, self.R, self.P, self.B, self.L = num_citizens, 2, max_bid_ask + 1, int(brackets.size), rate_levels
        self.placement, self.view_radius, self.max_orders = placement, view_radius, max_orders
        self.max_skill_multiplier = float(max_skill_multiplier)
        self.layout = rules.ActionLayout(self.R, self.P)
        self.sources, self.water = jnp.asarray(self.map.sources), jnp.asarray(self.map.water)
        # (resource, row, col) of every source tile, stone's then wood's, row-major: ``i32[S]`` each
        self.source_tiles = tuple(jnp.asarray(x, jnp.int32) for x in np.nonzero(self.map.sources))
        self.rank_span = 2 ** rank_bits(num_citizens)
        # the auction's packed key holds (order_duration + 1) * rank_span arrival numbers
        self.max_order_duration = 2 ** key_bits(self.R, self.P) // self.rank_span - 1
        self._defaults = dict(horizon=horizon, tax_period=tax_period, brackets=tuple(brackets))
        self.validate_params(self.default_params())
        cdim = obs_lib.citizen_dim(view_radius, self.B, self.R, self.P)
        pdim = obs_lib.planner_dim(num_citizens, self.B, self.R, self.P)
        self.roles = {
            "citizen": Role(num_citizens, Box(-np.inf, np.inf, (cdim,)), Discrete(self.layout.n)),
            "planner": Role(1, Box(-np.inf, np.inf, (pdim,)), MultiDiscrete([rate_levels + 1] * self.B)),
        }
        self.global_obs_shape = (pdim,)

    # ---------------------------------------------------------------- params
    def default_params(self) -> GTBParams:
        return params_lib.default_params(**self._defaults)

    def check_params(self, params: GTBParams) -> None:
        params_lib.check_params(self, params)

    # ---------------------------------------------------------------- reset
    def initial_state(self, params: GTBParams, loc, build_payment, bonus_prob, schedule=None) -> GTBState:
        """The state at reset with given starting tiles ``i32[N, 2]``, build payments
        ``f32[N]``, bonus chances ``f32[N]`` and fixed levels ``i32[B]`` (default
        ``params.schedule`` with ``-2`` read as the planner's; what ``reset`` draws;
        parity tests inject the reference's)."""
        N, B = self.N, self.B
        schedule = jnp.maximum(params.schedule, -1) if schedule is None else jnp.asarray(schedule, jnp.int32)
        fixed = schedule >= 0
        coin = jnp.full((N,), params.starting_coin, jnp.float32)
        labour = jnp.zeros((N,), jnp.float32)
        state = GTBState(
            loc=jnp.asarray(loc, jnp.int32), coin=coin, goods=jnp.zeros((N, self.R), jnp.int32),
            escrow_coin=jnp.zeros((N,), jnp.float32), escrow_goods=jnp.zeros((N, self.R), jnp.int32), labour=labour,
            build_payment=jnp.asarray(build_payment, jnp.float32), bonus_prob=jnp.asarray(bonus_prob, jnp.float32),
            resources=self.sources, house=jnp.full((self.height, self.width), -1, jnp.int32),
            book=OrderBook.empty(N, self.R * self.max_orders),
            rates=jnp.where(fixed, jnp.minimum(schedule / (self.L - 1), params.rate_max), 0.0).astype(jnp.float32),
            rate_index=jnp.where(fixed, schedule, 0), schedule=schedule, last_coin=coin, last_income=jnp.zeros((N,), jnp.float32),
            utility=dynamics.utility(coin, labour, params), swf=dynamics.equality_productivity(coin)["swf"],
            t=jnp.zeros((), jnp.int32), mask=jnp.zeros((N, self.layout.n), bool),
        )
        return state.replace(mask=self.action_mask(state))

    def reset_env(self, key, params):
        k_perm, k_loc, k_mult, k_bonus, k_sched = jax.random.split(key, 5)
        lomax = lambda k, a: jax.random.uniform(k, (self.N,), minval=1e-12) ** (-1.0 / a) - 1.0
        m = self.max_skill_multiplier
        if self.placement == "ranked":
            rank = jax.random.permutation(k_perm, self.N)  # citizen -> skill rank
            loc, mult = self._ranked_locs[rank], self._ranked_mult[rank]
        else:
            score = jnp.where(self.water.reshape(-1), -1.0, jax.random.uniform(k_loc, (self.height * self.width,)))
            cells = jax.lax.top_k(score, self.N)[1]
            loc = jnp.stack([cells // self.width, cells % self.width], -1)
            mult = jnp.minimum(m, (m - 1.0) * lomax(k_mult, 4.0) + 1.0)
        bonus = jnp.minimum(2.0, lomax(k_bonus, 3.0)) / 2.0
        drawn = jax.random.randint(k_sched, (self.B,), 0, self.L)
        state = self.initial_state(params, loc, mult * params.payment, bonus,
                                   jnp.where(params.schedule == -2, drawn, params.schedule))
        zi = jnp.zeros((), jnp.int32)
        zf = jnp.zeros((), jnp.float32)
        info = dict(num_illegal=zi, illegal_action=jnp.zeros((), bool), builds=zi,
                    gathered=jnp.zeros((self.R,), jnp.int32), gatherers=zi, trades=jnp.zeros((self.R,), jnp.int32),
                    tax_revenue=zf, lump_sum=zf, **dynamics.equality_productivity(state.coin + state.escrow_coin))
        return state, self._timestep(state, params, None, info)

    # ---------------------------------------------------------------- step
    def step_with_draws(self, state: GTBState, actions: dict, params: GTBParams, draws: Draws):
        """``step`` with given random draws (``dynamics.Draws``) instead of a key."""
        new, info, r_citizen, r_planner = dynamics.step(self, state, actions, params, draws)
        reward = {"citizen": r_citizen, "planner": r_planner[None]}
        return new, self._timestep(new, params, reward, info)

    def step_env(self, key, state, actions, params):
        return self.step_with_draws(state, actions, params, Draws.sample(key, self.N, len(self.source_tiles[0])))

    # ---------------------------------------------------------------- views
    def action_mask(self, state: GTBState, params: GTBParams | None = None) -> jax.Array:
        """``bool[N, n_actions]`` legal citizen actions (``rules.citizen_mask``), computed
        from the state's fields. Steps keep it in ``state.mask`` (computed once per step);
        after editing a state by hand, refresh it: ``s.replace(mask=env.action_mask(s))``."""
        return rules.citizen_mask(self.layout, state, self.sources, self.water, self.max_orders)

    def _timestep(self, state, params, reward, info):
        obs = {"citizen": obs_lib.citizen_obs(self, state, params), "planner": obs_lib.planner_obs(self, state, params)[None]}
        return self.make_timestep(
            obs, reward=reward, truncated=state.t >= params.horizon,
            action_mask={"citizen": state.mask, "planner": jnp.ones((1, 1), bool)},
            active={"citizen": jnp.ones((self.N,), bool), "planner": ((state.t % params.tax_period == 0) & jnp.any(state.schedule < 0))[None]},
            info=info,
        )

    def global_obs(self, state, params=None):
        """The planner's observation, ``f32[G]``."""
        params = self.default_params() if params is None else params
        return obs_lib.planner_obs(self, state, params)

    def render(self, state, params=None, tile: int = 12) -> np.ndarray:
        """RGB ``uint8[H*tile, W*tile, 3]`` of one unbatched state (``render.render_state``)."""
        from jaxagents_environments.economy.gtb.render import render_state

        return render_state(self, state, tile)

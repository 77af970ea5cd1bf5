"""EconGym's economic society (NeurIPS 2025; code ``Miracle1207/EconGym``, commit
d81cd5d) in JAX: its 11 role types, composed by a static ``SocietyConfig``.

Households (``ramsey`` infinitely lived, or ``olg`` overlapping generations, either
with a risky asset), governments (``fiscal``, ``pension``, ``central_bank``, one or
several), a bank (``non_profit`` or ``commercial``) and firms (``perfect``,
``monopoly``, ``oligopoly``, ``monopolistic_competition``). One step is one year; money
is in US dollars and the economy starts from households drawn from the 2022 Survey of
Consumer Finances, as EconGym's does.

Actions of the roles present (every action ``Box(-1, 1)``, mapped linearly onto the
range EconGym clips to unless noted; out-of-range entries are clipped and non-finite
ones set to 0, flagged in ``info["illegal_action"]``):

* ``household`` (``C`` slots), ``[save, work]``: savings share in ``save_range``
  (default ``[-0.5, 1]``), hours ``[0, h_max]``; ``+ [invest]`` (share of wealth in the
  risky asset, ``[0, 1]``) with a risky asset; ``+ [employer, split_1 .. split_M]``
  with several firms (employer ``floor(u M)`` for ``u`` in ``[0, 1]``, spending split in
  proportion to ``split_j`` in ``[0, 1]``). Overlapping generations: only ``alive``
  slots are ``active``.
* ``fiscal``, ``[tau, xi, tau_a, xi_a, G/Y]`` onto ``[0, fiscal_max]``, ``+ M`` spending
  weights in ``[0, 1]`` with several firms.
* ``pension``, ``[retirement age, contribution rate]`` onto ``pension_range``
  (``[60, 70]``, ``[5%, 20%]``); the age is rounded to whole years.
* ``central_bank``, ``[policy rate, reserve ratio]`` onto ``policy_range``.
* ``bank`` (commercial only), ``[lending rate, deposit rate]`` onto ``lending_range``
  and ``deposit_range``, then, with a central bank, into ``[i + 1%, i + 3%]`` and ``[i -
  1%, i]`` around the policy rate ``i`` the bank last saw.
* ``firm`` (``M``, unless perfect competition), ``[price, wage]``: ``p = p_last
  exp(price_step a)`` and ``W = W_mpl exp(wage_step a)`` around the marginal product of
  labour, both within ``price_bounds``. (EconGym's firms set raw price and wage in
  ``[1e-4, 100]``; a relative action keeps a policy's output scale-free.)

Observations (``f32``, what EconGym's roles see; money in ``money_unit``, GDP per
household at reset, hourly wages in ``money_unit / h_max``, every entry clipped to
``[-1e6, 1e6]``; ``M`` firms, ``n`` households alive). The public part, ``4 + 2M + 2``
entries, opens the household's, fiscal authority's and central bank's observations:
the mean wealth and mean productivity of the richest 10% of households, the same for
the poorest half, each firm's wage ``[M]`` and price ``[M]``, and the bank's lending and
deposit rates. Then, per role:

* ``household``: public, then its own productivity ``e`` and wealth, ``+ [age / 100]``
  with overlapping generations;
* ``fiscal``: public, then government debt over ``n`` money units;
* ``central_bank``: public, then last year's inflation and real growth rate;
* ``pension`` (7): pension accounts in total, ``n / num_households``, the share of the
  living at or above the retirement age, retirement age / 100, contribution rate,
  government debt and GDP (those three money amounts over ``n`` money units);
* ``bank`` (6): the policy rate and reserve ratio it last saw, its lending and deposit
  rates, its loans (firm capital plus government debt) and deposits over ``n`` money
  units;
* ``firm`` (5 each): capital over ``n / M`` money units, TFP, the lending rate, its
  price and its hourly wage.

A step, in EconGym's order (``households.py``, ``demography.py``, ``market.py`` and
``government.py`` hold the blocks and their equations):

1. The acting governments, bank and firms set their instruments; every household's
   productivity moves (superstar process).
2. Firms produce with last year's capital; under perfect competition the wage is the
   marginal product, and a non-profit bank's rates are the marginal product of
   capital (perfect competition) or the policy rate it last saw.
3. Households earn wages, interest on last year's savings and last year's risky gain
   (plus UBI), pay income tax (``tax_schedule``: the fiscal authority's HSV schedule,
   the US federal brackets, or the Saez government's brackets, ``saez.py``) and asset
   tax, pay or receive pensions (overlapping generations), buy goods (a firm sells
   ``min(demand, output)``, every buyer getting the same share of its order) and carry
   the rest as wealth, split between deposits and the risky asset.
4. Overlapping generations: everyone ages a year, every year, the first included;
   from the second year on, deaths by age, estates (taxed above the exemption) go to
   the newborn, and ``floor(N birth_rate)`` households are born at
   ``initial_working_age``.
5. The government's debt grows by interest at the policy rate the bank saw last
   year, its spending (a share of output, plus UBI) less all taxes; the pension fund
   by its return less net pensions.
6. The bank settles last year's book and lends next year's capital, ``p (Y - C - G) +
   (1 - delta) K``, scaled down to what its deposits net of reserves allow.

Rewards (EconGym's): households their utility (alive at the start of the step, 0
otherwise); ``fiscal``/``pension`` their objective (``config.objectives``, default
``gdp``); ``central_bank`` the inflation-and-growth score; a commercial bank and
deciding firms ``scaled_reward(profit)``. Episodes terminate, as EconGym's, when a
household's wealth falls below ``at_min``, an overlapping-generations population falls
to 5, the pension fund (with a pension authority) or the next capital goes negative, or
a value is not finite; they are truncated after ``params.horizon`` years.

Deliberate differences from EconGym's code are listed in the docstrings of the
blocks; here, additionally: a perfectly competitive wage is always the marginal
product; the first year's inflation is measured from the price level at reset (not 1);
the central bank observes the real growth rate (EconGym's reads a missing attribute
and always sees 5%); the commercial bank observes its real loans and deposits; Ginis
are over the households alive at the start of the step.
"""

from __future__ import annotations

import functools
import os

import jax
import jax.numpy as jnp
import numpy as np

from jaxagents.core import Box, Env, Role
from jaxagents.core.rng import check_rng
from jaxagents_environments.economy.econgym import households as hh
from jaxagents_environments.economy.econgym import market as mk
from jaxagents_environments.economy.econgym import obs as ob
from jaxagents_environments.economy.econgym import saez
from jaxagents_environments.economy.econgym.params import DEFAULTS, SocietyConfig, SocietyParams, SocietyState, check_params
from jaxagents_environments.economy.econgym.step import INFO_KEYS, society_step

DATA = os.path.join(os.path.dirname(__file__), "data", "scf2022.npz")


@functools.lru_cache(maxsize=1)
def _scf_table():
    with np.load(DATA) as d:
        return {k: np.asarray(d[k]) for k in d.files}


class Society(Env):
    """EconGym's society (module docstring); ``Society(**SocietyConfig fields)``.

    Args:
        households: ``ramsey`` (infinitely lived), ``olg`` (overlapping generations:
            age, retirement, mortality, births, pensions), or either with a risky
            asset, ``ramsey_risk_invest`` / ``olg_risk_invest``.
        governments: a non-empty tuple of distinct types among ``fiscal``,
            ``pension``, ``central_bank``; the first is the main government. An absent
            type keeps its instruments at their ``params`` values.
        bank: ``non_profit`` (rates set by the market) or ``commercial`` (a role that
            chooses its lending and deposit rates).
        market: ``perfect`` (1 firm, wage at the marginal product), ``monopoly`` (1
            firm), ``oligopoly`` or ``monopolistic_competition`` (``num_firms``
            firms); all but ``perfect`` add the ``firm`` role, setting price and wage.
        num_households: households at reset, 1 .. 10^8.
        num_firms: ``M``: 1 for ``perfect`` and ``monopoly``, 2 .. 1000 otherwise.
        capacity: household slots ``C`` (``num_households`` .. 10^8); default
            ``num_households``, or ``ceil(1.25 N)`` for overlapping generations.
        objectives: ``{"fiscal"|"pension": objective}``, each one of ``gdp``
            (default), ``gini``, ``social_welfare``, ``mean_welfare``, ``gdp_gini``,
            ``pension_gap``; only for governments of this economy.
        tax_schedule: the households' income tax: ``hsv`` (the fiscal authority's HSV
            schedule), ``us_federal`` (2022 US federal brackets), ``saez`` (the Saez
            government's brackets) or ``none``.
        horizon: the default params' episode length in years (EconGym's
            ``episode_length``, 300), an int >= 1.
        rng: how the households' yearly draws (productivity, deaths) are made,
            ``"hash"`` (default, a tenth of the cost on CPU) or ``"threefry"``
            (``jaxagents.core.rng``).
        params: ``{field: value}`` overrides of the default params (validated here).
        inequality: compute the wealth and income Ginis every year (``info``; two
            sorts of the households a year), as they are whenever an objective needs
            them.

    All are static; ``SocietyConfig`` validates the first nine.
    """

    def __init__(self, households="ramsey", governments=("fiscal",), bank="non_profit", market="perfect",
                 num_households=100, num_firms=1, capacity=None, objectives=(), tax_schedule="hsv", horizon=300,
                 rng="hash", params=None, inequality=False):
        self.rng = check_rng(rng)
        self._overrides = dict(params or {})
        unknown = sorted(set(self._overrides) - set(DEFAULTS) - {"horizon"})
        if unknown:
            raise ValueError(f"params has unknown fields {unknown}; fields: {sorted(DEFAULTS)}")
        if not isinstance(horizon, (int, np.integer)) or horizon < 1:
            raise ValueError(f"horizon must be an int >= 1 (years per episode), got {horizon!r}")
        self.horizon = int(horizon)
        if isinstance(objectives, dict):
            objectives = tuple(objectives.items())
        if isinstance(governments, list):
            governments = tuple(governments)
        self.config = cfg = SocietyConfig(households, governments, bank, market, num_households, num_firms,
                                          capacity, tuple(objectives), tax_schedule)
        m = cfg.num_firms
        n_pub = len(ob.PUBLIC) + 2 * m + 2
        hh_act = 2 + int(cfg.risk_invest) + (1 + m if m > 1 else 0)
        specs = {"household": (cfg.capacity, n_pub + 2 + int(cfg.olg), hh_act, not cfg.olg)}
        for g in cfg.governments:
            specs[g] = {"fiscal": (1, n_pub + 1, 5 + (m if m > 1 else 0), True),
                        "pension": (1, 7, 2, True), "central_bank": (1, n_pub + 2, 2, True)}[g]
        if cfg.bank == "commercial":
            specs["bank"] = (1, 6, 2, True)
        if cfg.firms_decide:
            specs["firm"] = (m, 5, 2, True)
        self.roles = {
            r: Role(n, Box(-ob.OBS_CLIP, ob.OBS_CLIP, (d_obs,), jnp.float32), Box(-1.0, 1.0, (d_act,), jnp.float32),
                    always_legal=True, always_active=always)
            for r, (n, d_obs, d_act, always) in specs.items()
        }
        # the before-tax Ginis only feed a gini objective; the after-tax ones are the
        # year's metrics (EconGym computes those two every step)
        self._gini_reward = any(cfg.objective(g) in ("gini", "gdp_gini")
                                for g in ("fiscal", "pension") if g in cfg.governments)
        self._gini = bool(inequality) or self._gini_reward
        check_params(self.default_params())

    # ------------------------------------------------------------------ params
    def default_params(self) -> SocietyParams:
        return SocietyParams.make(**{"horizon": self.horizon, **self._overrides})

    def check_params(self, params: SocietyParams) -> None:
        check_params(params)

    # ------------------------------------------------------------------ helpers
    def _by_firm(self, x, employer):
        if self.config.num_firms == 1:
            return jnp.sum(x)[None]
        return jax.ops.segment_sum(x, employer, self.config.num_firms)

    def _employer(self, u):
        m = self.config.num_firms
        if m == 1:
            return jnp.zeros(u.shape[:1], jnp.int32), jnp.ones(u.shape[:1] + (1,), jnp.float32)
        idx = jnp.clip((jnp.clip(u[:, -m - 1], 0.0, 1.0) * m).astype(jnp.int32), 0, m - 1)
        raw = u[:, -m:]
        return idx, raw / (jnp.sum(raw, axis=1, keepdims=True) + 1e-8)

    def _public(self, state, p):
        """The public features in observation units (module ``obs``): ``f32[4 + 2M + 2]``."""
        unit, m = state.money_unit, self.config.num_firms
        public = ob.public_features(state.assets, state.e, state.alive, state.wage, state.price, state.bank_rates)
        scale = jnp.concatenate([jnp.stack([unit, 1.0, unit, 1.0]), jnp.full((m,), unit / p.h_max),
                                 jnp.ones((m + 2,))])
        return public / scale

    def _observe(self, state, p):
        cfg = self.config
        unit = state.money_unit
        hour_unit = unit / p.h_max
        n = jnp.sum(state.alive)
        wealth = state.assets
        m = cfg.num_firms
        public = self._public(state, p)
        own = [state.e, wealth / unit] + ([state.age / 100.0] if cfg.olg else [])
        obs = {"household": ob.clip(jnp.concatenate([jnp.broadcast_to(public, (cfg.capacity, public.shape[0])),
                                                     jnp.stack(own, axis=1)], axis=1))}
        total_unit = unit * jnp.maximum(n, 1)
        if "fiscal" in self.roles:
            obs["fiscal"] = ob.clip(jnp.concatenate([public, (state.gov_debt / total_unit)[None]]))[None]
        if "central_bank" in self.roles:
            obs["central_bank"] = ob.clip(jnp.concatenate([public, jnp.stack([state.inflation, state.growth])]))[None]
        if "pension" in self.roles:
            old = jnp.sum(state.alive & (state.age >= jnp.round(state.policy[5])))
            obs["pension"] = ob.clip(jnp.stack([
                jnp.sum(jnp.where(state.alive, state.pension_account, 0.0)) / total_unit,
                n / cfg.num_households, old / jnp.maximum(n, 1), state.policy[5] / 100.0, state.policy[6],
                state.gov_debt / total_unit, state.gdp / total_unit,
            ]))[None]
        if "bank" in self.roles:
            deposits = jnp.sum(jnp.where(state.alive, wealth, 0.0))
            loans = jnp.sum(state.capital) + state.gov_debt
            obs["bank"] = ob.clip(jnp.stack([state.bank_view[0], state.bank_view[1], state.bank_rates[0],
                                             state.bank_rates[1], loans / total_unit, deposits / total_unit]))[None]
        if "firm" in self.roles:
            per_firm = total_unit / m
            obs["firm"] = ob.clip(jnp.stack([state.capital / per_firm, state.tfp,
                                             jnp.full((m,), state.bank_rates[0]), state.price,
                                             state.wage / hour_unit], axis=1))
        return obs

    def global_obs(self, state, params=None):
        """The public features (module ``obs``) and the policy in force: ``f32[4 + 2M + 2 + 9]``."""
        p = self.default_params() if params is None else params
        return ob.clip(jnp.concatenate([self._public(state, p), state.policy]))

    def _active(self, alive):
        return {r: (alive if r == "household" else jnp.ones((role.num_agents,), bool))
                for r, role in self.roles.items()}

    # ------------------------------------------------------------------ reset
    def initial_households(self, key, params: SocietyParams):
        """Households drawn from the SCF 2022 table with its weights (EconGym's
        ``sample_real_data``): ``dict`` of ``f32[N]`` ``assets``, ``educ``, ``income``,
        ``age``, ``lf`` (labour-force flag), ``risky_share``."""
        table = _scf_table()
        cdf = jnp.asarray(np.cumsum(table["weight"]) / np.sum(table["weight"]), jnp.float32)
        rows = jnp.clip(jnp.searchsorted(cdf, jax.random.uniform(key, (self.config.num_households,))),
                        0, cdf.shape[0] - 1)
        out = {k: jnp.asarray(v, jnp.float32)[rows] for k, v in table.items() if k != "weight"}
        out["assets"] = out.pop("asset")
        return out

    def reset_env(self, key, params: SocietyParams):
        k_rows, k_star, k_e, k_z = jax.random.split(key, 4)
        return self.reset_from(k_e, params, self.initial_households(k_rows, params),
                               jax.random.uniform(k_star, (self.config.num_households,)),
                               1.0 + jax.random.uniform(k_z, (self.config.num_firms,)))

    def reset_from(self, key, params, start, star_draw, tfp_factor):
        """The state and first timestep from given households (``initial_households``'
        dict), superstar draws ``star_draw`` ``f32[N]`` (``< e_p`` starts as a
        superstar) and ``tfp_factor`` ``f32[M]`` (TFP is ``params.tfp x`` it); ``key``
        drives the productivity step of the reset. The parity tests start from
        EconGym's recorded draws through this."""
        cfg, p = self.config, params
        c, n, m = cfg.capacity, cfg.num_households, cfg.num_firms

        def slots(x, fill=0.0):
            return jnp.concatenate([x.astype(jnp.float32), jnp.full((c - n,), fill, jnp.float32)])

        alive = jnp.arange(c) < n
        star = star_draw < p.e_p
        e_normal = slots(jnp.where(star, 0.0, start["educ"]))
        e_star = slots(jnp.where(star, 1.0, 0.0))
        e_normal, e_star = hh.productivity_step(key, e_normal, e_star, alive, p.rho_e, p.sigma_e, p.e_p, p.e_q,
                                                p.super_e, self.rng)
        assets = slots(start["assets"])
        gdp = p.real_gdp / p.real_population * n
        tfp = p.tfp * tfp_factor.astype(jnp.float32)
        capital = jnp.full((m,), (jnp.sum(assets) - gdp * p.real_debt_rate) / m)
        price = jnp.ones((m,), jnp.float32)
        hours_total = p.real_total_hours / p.real_population * n
        wage = price * tfp * (1.0 - p.alpha) * (capital / hours_total) ** p.alpha
        zero_c, zero = jnp.zeros((c,), jnp.float32), jnp.zeros((), jnp.float32)
        policy = jnp.concatenate([p.init_fiscal, jnp.stack([jnp.round(p.retire_age), p.contribution_rate,
                                                             p.policy_rate, p.reserve_ratio])])
        state = SocietyState(
            alive=alive, e_normal=e_normal, e_star=e_star, e=e_normal + e_star, assets=assets, savings=zero_c,
            stock=zero_c, risky_income=zero_c, age=slots(start["age"]), working_years=zero_c,
            pension_account=zero_c, income=slots(start["income"]), post_income=slots(start["income"]),
            consumption=zero_c, hours=slots(start["lf"] * p.h_max), pension=zero_c,
            tfp=tfp, capital=capital, price=price, wage=wage, output=jnp.zeros((m,)), labour=jnp.zeros((m,)),
            gov_debt=p.real_debt_rate * gdp, gdp=gdp, policy=policy, gov_split=jnp.full((m,), 1.0 / m, jnp.float32),
            bank_rates=jnp.stack([p.init_rate, p.init_rate]), bank_view=jnp.stack([p.init_rate, p.reserve_ratio]),
            bank_account=jnp.sum(assets), bank_profit=zero, pension_fund=jnp.asarray(1e-8, jnp.float32), estate_tax=zero,
            order=jnp.arange(c, dtype=jnp.int32),
            stock_price=jnp.ones((), jnp.float32), price_index=mk.price_index(price, wage, p.epsilon),
            inflation=zero, growth=zero, money_unit=gdp / n, t=jnp.zeros((), jnp.int32),
            saez=saez.init(p.saez_brackets.shape[0]),
        )
        info = {k: jnp.zeros((), bool if k == "illegal_action" else jnp.float32) for k in INFO_KEYS}
        info.update(gdp=gdp, gov_debt=state.gov_debt, households=jnp.asarray(n, jnp.float32),
                    price_index=state.price_index, wealth_gini=-jnp.ones(()), income_gini=-jnp.ones(()))
        return state, self.make_timestep(self._observe(state, p), active=self._active(alive), info=info)

    # ------------------------------------------------------------------ step
    def step_env(self, key, state: SocietyState, actions, params: SocietyParams):
        return society_step(self, key, state, actions, params)

"""Taxation: a Stackelberg labour/tax game between N workers and one planner.

(Over 400 lines because the planner's and the workers' halves of one step share the
period bookkeeping; the labour model, the schedules and the metrics already live in
``labour.py``, ``brackets.py`` and ``metrics.py``.)

Roles: ``worker`` (N agents) and ``planner`` (1). The planner is the leader: it moves
first in every *period* and sets the tax rates; then the workers choose their hours for
``K = params.period_length`` steps under those rates. One period is ``K + 1`` env
steps::

    step  0        1 .. K          K+1        K+2 .. 2K+1   ...
          planner  workers         planner    workers
          (workers inactive)       (workers inactive)

``active`` marks whose action a step uses. An episode is ``params.num_periods`` periods
and is then *truncated* (an economy has no natural end: bootstrap).

Workers. Skill (hourly wage) ``v_i`` is drawn at reset (``skills.py``: GB2 fitted to US
incomes, Pareto or uniform, chosen by ``params.skills.dist``). A worker's action is its
hours ``l_i``: ``Discrete(num_hour_levels)`` on the grid ``linspace(0, max_hours, n)``
(``{0, 10, ..., 100}`` by default) or, with ``continuous_hours=True``, a
``Box(0, max_hours, (1,))``. Pre-tax income ``z_i = v_i l_i``; tax ``T(z)`` is
piecewise linear over the bracket cutoffs ``params.cutoffs`` (``brackets.py``: flat,
three (default) or the US federal 2024 brackets); the revenue is rebated lump-sum,
``R = sum_i T(z_i) / N``; post-tax income ``zt_i = z_i - T(z_i) + R``. The reward is
the utility (``labour.py``, chosen by ``params.utility``), in units of
``params.income_unit`` ($1,000): quasi-linear ``zt - c l^delta`` (``c = 0.0005``,
``delta = 3.5``: labour elasticity 0.4) or isoelastic
``((zt)^(1-eta) - 1)/(1-eta) - kappa l`` (``eta = 0.23``, ``kappa = 0.21``). With
the spec's quasi-linear constants a worker's optimum is below 100 hours only when
``v (1 - tau) < 175`` $/h, so most GB2 workers choose the top of the range.

Planner. Acts on steps ``0, K+1, 2(K+1), ...`` (``active`` only then). With
``planner_action="delta"`` (default) its action is ``MultiDiscrete([D] * B)``: per
bracket an index into ``params.rate_deltas`` (``-20, -10, 0, +10, +20`` points); with
``"rates"`` it is ``Box(0, 1, (B,))``, the new rates themselves. Rates stay in
``[0, 1]`` and start at ``params.initial_rates`` (50%). Its reward is the period's
mean social welfare, paid on the last worker step of the period (the transition after
which it is active again; sum rewards between its active steps to credit an action).
Social welfare per worker step (``params.swf``, in income units, per worker so that it
does not grow with N):

* ``"equality_times_productivity"``: ``(1 - Gini(zt)) * mean(zt) / unit``;
* ``"utilitarian"``: ``mean_i u_i``;
* ``"inverse_income"``: ``mean_i u_i / max(z_i/unit, 1)``.

Observations.
``worker``: ``f32[2 + B]`` = ``[log(v * reference_hours / unit), R_last/unit, rates]``
(skill, the last worker step's rebate, the rates in force). ``planner``:
``f32[2B + 5]`` = ``[rates (B), log1p(c_1.. / unit) (B-1), stats of the last completed
period (5; zeros before the first), period / num_periods]``; the stats are per-step
means over the period of: mean income/unit, mean hours/max_hours, Gini of post-tax
income, revenue/GDP and welfare. ``global_obs`` is the planner's observation plus the
phase within the period.

Out-of-range actions (only active agents' count): hour indices are clipped to the
grid, continuous hours to ``[0, max_hours]`` (NaN -> 0), delta indices clipped,
continuous rates clipped to ``[0, 1]`` (NaN keeps the old rate); all flagged in
``info["illegal_action"]``. Inactive agents' actions are ignored.

``info`` (scalars, dollars unless said): ``gdp`` (sum z), ``tax_revenue``, ``rebate``
(per worker), ``mean_hours``, ``gini`` (post-tax income), ``equality_times_productivity``
(per worker), ``mean_utility`` and ``welfare`` (income units), ``tax_rates`` (``f32[B]``,
in force this step), ``worker_step``, ``period_end``, ``illegal_action``. On planner
steps nobody works, so the economic entries are 0 (mask with ``worker_step``).

Scale. One step is a few fused passes over the workers, ``O(N B)`` with no sort: the
Gini is exact for ``num_workers <= 256`` (all pairs) and otherwise
``metrics.gini_binned`` (one scatter-add, 32 bins per octave; error < 0.011 x the
largest bin's share, ~1e-5 in practice), see ``gini_bins``. Per worker: 12 bytes of state (skill, skill feature, last hours) and
``4 (2 + B) + 4 + num_hour_levels + 1`` bytes of time step (observation, reward, mask,
active): 52 bytes with the default three brackets, 68 with the US federal set.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxagents_environments.economy import brackets as schedule
from jaxagents_environments.economy import metrics
from jaxagents_environments.economy.labour import UTILITIES, worker_utility
from jaxagents_environments.economy.skills import (
    SKILL_DISTRIBUTIONS, SkillParams, check_skill_params, check_skills, default_skill_params, sample_skills,
)
from jaxagents.core import Box, Discrete, Env, MultiDiscrete, Role
from jaxagents.core.columns import agent_rows
from jaxagents.core.validate import check_choice, check_int, check_positive_int

SWFS = ("equality_times_productivity", "utilitarian", "inverse_income")
PLANNER_ACTIONS = ("delta", "rates")
DEFAULT_RATE_DELTAS = (-0.2, -0.1, 0.0, 0.1, 0.2)
EXACT_GINI_MAX_WORKERS = 256  # above this the pairwise Gini costs more than the histogram
STAT_NAMES = ("mean_income", "mean_hours_fraction", "gini", "average_tax_rate", "welfare")
_WELFARE = STAT_NAMES.index("welfare")


@struct.dataclass
class TaxationParams:
    """Everything a user may sweep or randomise (vmap over it for many economies).

    ``B`` is the number of tax brackets and ``D`` the number of rate deltas, both fixed
    by the constructor (``brackets``, ``rate_deltas``).

    Attributes:
        skills: ``SkillParams`` (``skills.py``), the distribution of the workers' hourly
            wages drawn at reset: ``dist`` picks GB2 (0), Pareto (1) or uniform (2);
            a draw is a potential income ($) clipped to ``[income_min, income_max]``
            and divided by ``reference_hours``. ``dist`` in [0, 2]; the other fields
            finite and > 0, with ``uniform_high > uniform_low`` and
            ``income_max > income_min``.
        cutoffs: ``f32[B]`` lower edge of each tax bracket in dollars of a worker's
            pre-tax income per step; finite, the first 0, strictly increasing (the
            top bracket is open-ended).
        initial_rates: ``f32[B]`` marginal tax rate of each bracket at reset, each in
            [0, 1].
        rate_deltas: ``f32[D]`` the change of a bracket's rate that each index of the
            planner's ``"delta"`` action makes (the new rate is clipped to [0, 1]);
            each in [-1, 1]. Unused with ``planner_action="rates"``.
        period_length: ``i32`` worker steps per tax period, ``K`` (a period is
            ``K + 1`` env steps with the planner's); >= 1.
        num_periods: ``i32`` tax periods per episode, after which it is truncated;
            >= 1.
        utility: ``i32`` the workers' utility, an index in [0, 1] into ``UTILITIES``:
            0 quasi-linear, 1 isoelastic.
        labour_cost: ``f32`` quasi-linear utility's cost of labour ``c``, in dollars
            per ``hours ** labour_exponent``; finite, >= 0.
        labour_exponent: ``f32`` quasi-linear utility's exponent of hours ``delta``
            (labour elasticity ``1 / (delta - 1)``); finite, > 1.
        eta: ``f32`` isoelastic utility's curvature of post-tax income (log at 1);
            finite, >= 0.
        kappa: ``f32`` isoelastic utility's cost per hour worked, in income units;
            finite, >= 0.
        swf: ``i32`` the planner's social welfare, an index in [0, 2] into ``SWFS``:
            0 equality times productivity, 1 utilitarian, 2 inverse-income weighted.
        income_unit: ``f32`` dollars per income unit, the scale of utilities, welfare
            and the money entries of the observations; finite, > 0.
    """

    skills: SkillParams
    cutoffs: jax.Array
    initial_rates: jax.Array
    rate_deltas: jax.Array
    period_length: jax.Array
    num_periods: jax.Array
    utility: jax.Array
    labour_cost: jax.Array
    labour_exponent: jax.Array
    eta: jax.Array
    kappa: jax.Array
    swf: jax.Array
    income_unit: jax.Array


@struct.dataclass
class TaxationState:
    """``skills``/``skill_obs``/``hours``: ``f32[N]`` wage ($/h), its observation
    feature and the hours of the last worker step; ``rates``: ``f32[B]`` in force;
    ``rebate``: ``f32[]`` last worker step's rebate ($); ``t``: ``i32[]`` steps taken;
    ``period_sums``/``last_stats``: ``f32[5]`` per-step stats (``STAT_NAMES``) summed
    over the current period / averaged over the last completed one."""

    skills: jax.Array
    skill_obs: jax.Array
    hours: jax.Array
    rates: jax.Array
    rebate: jax.Array
    t: jax.Array
    period_sums: jax.Array
    last_stats: jax.Array


def _index(name: str, value: str, options: tuple) -> int:
    return options.index(check_choice(name, value, options))


class Taxation(Env):
    """The taxation game (see the module docstring).

    Args:
        num_workers: N >= 1.
        brackets: ``"flat"``, ``"three"`` (default), ``"us_federal"`` or a sequence of
            lower cutoffs starting at 0 (fixes B; the values are ``params.cutoffs``).
            The worker observation carries the B rates, so B sets its size.
        continuous_hours: ``Box(0, max_hours, (1,))`` hours instead of a grid.
        num_hour_levels: size of the hours grid (>= 2), discrete hours only.
        max_hours: top of the hours range (> 0).
        planner_action: ``"delta"`` or ``"rates"``.
        rate_deltas: default ``params.rate_deltas`` (their count D is static).
        skill_dist, utility, swf, period_length, num_periods, initial_rate: defaults of
            the corresponding params.
        gini_bins: ``None`` (exact Gini up to 256 workers, else 32 bins per octave),
            ``0`` (always exact; sorts every step above 256 workers) or a power of two
            (bins per octave).
    """

    def __init__(
        self,
        num_workers: int = 1000,
        brackets: str | tuple = "three",
        continuous_hours: bool = False,
        num_hour_levels: int = 11,
        max_hours: float = 100.0,
        planner_action: str = "delta",
        rate_deltas: tuple = DEFAULT_RATE_DELTAS,
        skill_dist: str = "gb2",
        utility: str = "quasi_linear",
        swf: str = "equality_times_productivity",
        period_length: int = 25,
        num_periods: int = 4,
        initial_rate: float = 0.5,
        gini_bins: int | None = None,
    ):
        self.num_workers = check_positive_int("num_workers", num_workers)
        self.cutoffs = schedule.cutoffs_of(brackets)
        self.num_brackets = b = len(self.cutoffs)
        self.continuous_hours = bool(continuous_hours)
        self.num_hour_levels = check_int("num_hour_levels", num_hour_levels, low=2)
        if not (isinstance(max_hours, (int, float)) and np.isfinite(max_hours) and max_hours > 0):
            raise ValueError(f"max_hours must be a finite number > 0, got {max_hours!r}")
        self.max_hours = float(max_hours)
        self.planner_action = PLANNER_ACTIONS[_index("planner_action", planner_action, PLANNER_ACTIONS)]
        deltas = np.asarray(rate_deltas, np.float32)
        if deltas.ndim != 1 or deltas.size < 1 or not np.all(np.isfinite(deltas)) or np.any(np.abs(deltas) > 1):
            raise ValueError(f"rate_deltas must be a non-empty sequence of numbers in [-1, 1], got {rate_deltas!r}")
        self._deltas = deltas
        self._defaults = dict(
            skill_dist=skill_dist, utility=_index("utility", utility, UTILITIES), swf=_index("swf", swf, SWFS),
            period_length=check_positive_int("period_length", period_length),
            num_periods=check_positive_int("num_periods", num_periods), initial_rate=float(initial_rate),
        )
        _index("skill_dist", skill_dist, SKILL_DISTRIBUTIONS)
        schedule.check_rates(initial_rate, "initial_rate")
        if gini_bins is None:
            gini_bins = 0 if self.num_workers <= EXACT_GINI_MAX_WORKERS else 32
        if gini_bins == 0:
            self._gini = lambda x, total: metrics.gini(x)  # noqa: E731
        else:
            self._gini = functools.partial(metrics.gini_binned, bins_per_octave=gini_bins, octaves=16)
            self._gini(jnp.ones((2,)), total=2.0)  # validates gini_bins now, not at trace time
        self.gini_bins = gini_bins
        self.hour_levels = np.linspace(0.0, self.max_hours, self.num_hour_levels).astype(np.float32)

        inf = np.inf
        worker_obs = Box(np.r_[-inf, 0.0, np.zeros(b)], np.r_[inf, inf, np.ones(b)], (2 + b,), jnp.float32)
        n_stats = len(STAT_NAMES)
        lo = np.r_[np.zeros(b), np.zeros(b - 1), 0, 0, 0, 0, -inf, 0]
        hi = np.r_[np.ones(b), np.full(b - 1, inf), inf, 1, 1, 1, inf, 1]
        planner_obs = Box(lo, hi, (2 * b - 1 + n_stats + 1,), jnp.float32)
        self._planner_low, self._planner_high = lo.astype(np.float32), hi.astype(np.float32)
        hours_space = (Box(0.0, self.max_hours, (1,), jnp.float32) if self.continuous_hours
                       else Discrete(self.num_hour_levels))
        planner_space = (MultiDiscrete([len(deltas)] * b) if self.planner_action == "delta"
                         else Box(0.0, 1.0, (b,), jnp.float32))
        self.roles = {
            "worker": Role(self.num_workers, worker_obs, hours_space, always_legal=True),
            "planner": Role(1, planner_obs, planner_space, always_legal=True),
        }
        self.num_stats = n_stats
        self.global_obs_shape = (planner_obs.shape[0] + 1,)

    # ------------------------------------------------------------------ params
    def default_params(self) -> TaxationParams:
        d, f = self._defaults, (lambda v: jnp.asarray(v, jnp.float32))  # noqa: E731
        return TaxationParams(
            skills=default_skill_params(d["skill_dist"]),
            cutoffs=f(self.cutoffs),
            initial_rates=jnp.full((self.num_brackets,), d["initial_rate"], jnp.float32),
            rate_deltas=f(self._deltas),
            period_length=jnp.asarray(d["period_length"], jnp.int32),
            num_periods=jnp.asarray(d["num_periods"], jnp.int32),
            utility=jnp.asarray(d["utility"], jnp.int32),
            labour_cost=f(0.0005), labour_exponent=f(3.5), eta=f(0.23), kappa=f(0.21),
            swf=jnp.asarray(d["swf"], jnp.int32),
            income_unit=f(1000.0),
        )

    def check_params(self, params: TaxationParams) -> None:
        b, p = self.num_brackets, params
        for field, n in (("cutoffs", b), ("initial_rates", b), ("rate_deltas", len(self._deltas))):
            shape = np.shape(getattr(p, field))
            if len(shape) < 1 or shape[-1] != n:
                raise ValueError(f"params.{field} must have {n} entries (last axis), got shape {shape}")
        schedule.check_cutoffs(p.cutoffs, "params.cutoffs")
        schedule.check_rates(p.initial_rates, "params.initial_rates")
        if not np.all(np.isfinite(p.rate_deltas) & (np.abs(p.rate_deltas) <= 1)):
            raise ValueError(f"params.rate_deltas must be in [-1, 1], got {np.asarray(p.rate_deltas).tolist()}")
        check_skill_params(p.skills)

        def need(ok, field, allowed):
            if not np.all(ok):
                raise ValueError(f"params.{field} must be {allowed}, got {np.asarray(getattr(p, field)).tolist()}")

        need(p.period_length >= 1, "period_length", ">= 1")
        need(p.num_periods >= 1, "num_periods", ">= 1")
        need((p.utility >= 0) & (p.utility < len(UTILITIES)), "utility", f"an index into {UTILITIES}")
        need((p.swf >= 0) & (p.swf < len(SWFS)), "swf", f"an index into {SWFS}")
        need(np.isfinite(p.labour_cost) & (p.labour_cost >= 0), "labour_cost", "finite and >= 0")
        need(np.isfinite(p.labour_exponent) & (p.labour_exponent > 1), "labour_exponent", "finite and > 1")
        need(np.isfinite(p.eta) & (p.eta >= 0), "eta", "finite and >= 0")
        need(np.isfinite(p.kappa) & (p.kappa >= 0), "kappa", "finite and >= 0")
        need(np.isfinite(p.income_unit) & (p.income_unit > 0), "income_unit", "finite and > 0")

    # ------------------------------------------------------------------ reset
    def reset_env(self, key, params):
        return self._start(sample_skills(key, self.num_workers, params.skills), params)

    def reset_from_skills(self, skills, params: TaxationParams | None = None):
        """Start an economy with given skills ``f32[N]`` ($/hour, > 0; checked on the
        host when concrete). Returns ``(state, timestep)`` like ``reset``."""
        params = self._params(params)
        if np.shape(skills) != (self.num_workers,):
            raise ValueError(f"skills must have shape ({self.num_workers},), got {np.shape(skills)}")
        if not isinstance(skills, jax.core.Tracer):
            check_skills(skills)
        return self._start(jnp.asarray(skills, jnp.float32), params)

    def _start(self, skills, params):
        ref = params.skills.reference_hours
        state = TaxationState(
            skills=skills,
            skill_obs=jnp.log(skills * ref / params.income_unit),
            hours=jnp.zeros_like(skills),
            rates=jnp.asarray(params.initial_rates, jnp.float32),
            rebate=jnp.zeros((), jnp.float32),
            t=jnp.zeros((), jnp.int32),
            period_sums=jnp.zeros((self.num_stats,), jnp.float32),
            last_stats=jnp.zeros((self.num_stats,), jnp.float32),
        )
        zero, no = jnp.zeros((), jnp.float32), jnp.zeros((), bool)
        info = dict(gdp=zero, tax_revenue=zero, rebate=zero, mean_hours=zero, gini=zero,
                    equality_times_productivity=zero, mean_utility=zero, welfare=zero,
                    tax_rates=state.rates, worker_step=no, period_end=no, illegal_action=no)
        return state, self._timestep(state, params, info=info)

    # ------------------------------------------------------------------ step
    def _planner_rates(self, action, rates, params):
        """New rates from the planner's action, and whether it was out of range."""
        if self.planner_action == "delta":
            d = params.rate_deltas.shape[-1]
            idx = jnp.clip(action, 0, d - 1)
            new = jnp.clip(rates + params.rate_deltas[idx], 0.0, 1.0)
            return new, jnp.any(idx != action)
        bad = jnp.isnan(action)
        new = jnp.where(bad, rates, jnp.clip(action, 0.0, 1.0))
        return new, jnp.any(bad | (action < 0) | (action > 1))

    def _worker_hours(self, action, work, params):
        """Hours ``f32[N]`` (0 when nobody works), the out-of-range flags and, for the
        hours grid, a function giving ``hours ** labour_exponent`` by table lookup."""
        if self.continuous_hours:
            a = action[:, 0]
            bad = jnp.isnan(a) | (a < 0) | (a > self.max_hours)
            hours = jnp.clip(jnp.where(jnp.isnan(a), 0.0, a), 0.0, self.max_hours)
            return jnp.where(work, hours, 0.0), bad, None
        n = self.num_hour_levels
        idx = jnp.clip(action, 0, n - 1)

        def labour_power():
            # A select chain over the grid (a gather costs ~20x more on CPU), from the raw
            # action so that no extra [N] array is materialised for the utility's branch.
            table = jnp.asarray(self.hour_levels) ** params.labour_exponent
            i = jnp.clip(action, 0, n - 1)
            out = jnp.zeros(i.shape, jnp.float32)
            for k in range(1, n):
                out = jnp.where(i == k, table[k], out)
            return jnp.where(work, out, 0.0)

        hours = idx.astype(jnp.float32) * (self.max_hours / (n - 1))
        return jnp.where(work, hours, 0.0), idx != action, labour_power

    def step_env(self, key, state, actions, params):
        n = self.num_workers
        phase = state.t % (params.period_length + 1)
        planner_turn = phase == 0
        work = ~planner_turn

        new_rates, planner_bad = self._planner_rates(actions["planner"][0], state.rates, params)
        rates = jnp.where(planner_turn, new_rates, state.rates)

        hours, worker_bad, labour_power = self._worker_hours(actions["worker"], work, params)
        z = state.skills * hours
        tax = schedule.tax(z, rates, params.cutoffs)
        gdp, revenue = jnp.sum(z), jnp.sum(tax)
        rebate = revenue / n
        post = z - tax + rebate
        u = worker_utility(post, hours, params, labour_power)
        unit = params.income_unit

        gini = jnp.clip(self._gini(post, total=gdp), 0.0, 1.0)  # sum(post) == sum(z)
        mean_post = gdp / n  # sum(post) == sum(z): the rebate returns every dollar
        mean_u = jnp.mean(u)
        ep = (1.0 - gini) * mean_post
        welfare = jax.lax.switch(params.swf, [  # a real branch: the inverse-income pass only when used
            lambda: ep / unit, lambda: mean_u, lambda: jnp.mean(u / jnp.maximum(z / unit, 1.0))])
        stats = jnp.stack([gdp / n / unit, jnp.mean(hours) / self.max_hours, gini,
                           revenue / jnp.maximum(gdp, 1e-6), welfare])
        stats = jnp.where(work, stats, 0.0)

        sums = state.period_sums + stats
        period_end = work & (phase == params.period_length)
        k = params.period_length.astype(jnp.float32)
        state = state.replace(
            hours=jnp.where(work, hours, state.hours),
            rates=rates,
            rebate=jnp.where(work, rebate, state.rebate),
            t=state.t + 1,
            period_sums=jnp.where(period_end, 0.0, sums),
            last_stats=jnp.where(period_end, sums / k, state.last_stats),
        )
        reward = {
            "worker": jnp.where(work, u, 0.0),
            "planner": jnp.where(period_end, sums[_WELFARE] / k, 0.0)[None],
        }
        illegal = (planner_turn & planner_bad) | (work & jnp.any(worker_bad))
        info = dict(gdp=gdp, tax_revenue=revenue, rebate=rebate, mean_hours=jnp.mean(hours), gini=gini,
                    equality_times_productivity=ep, mean_utility=mean_u, welfare=welfare, tax_rates=rates,
                    worker_step=work, period_end=period_end, illegal_action=illegal)
        info = {k_: (v if k_ in ("tax_rates", "worker_step", "period_end", "illegal_action")
                     else jnp.where(work, v, 0.0)) for k_, v in info.items()}
        truncated = state.t >= params.num_periods * (params.period_length + 1)
        return state, self._timestep(state, params, reward, truncated, info)

    # ------------------------------------------------------------------ observations
    def _timestep(self, state, params, reward=None, truncated=False, info=None):
        phase = state.t % (params.period_length + 1)
        planner_turn = phase == 0
        obs = {"worker": self._worker_obs(state, params), "planner": self._planner_obs(state, params)[None]}
        active = {"worker": jnp.broadcast_to(~planner_turn, (self.num_workers,)), "planner": planner_turn[None]}
        return self.make_timestep(obs, reward, truncated=truncated, active=active, info=info)

    def _worker_obs(self, state, params):
        # [skill feature, rebate / unit, rates]: agent_rows, not a concatenate (2x cheaper at 10^6 workers)
        return agent_rows(2 + self.num_brackets, {1: state.rebate / params.income_unit, 2: state.rates},
                          columns=[(0, state.skill_obs)])

    def _planner_obs(self, state, params):
        period = state.t // (params.period_length + 1)
        progress = jnp.minimum(period / params.num_periods, 1.0).astype(jnp.float32)
        cut = jnp.log1p(params.cutoffs[1:] / params.income_unit)
        obs = jnp.concatenate([state.rates, cut, state.last_stats, progress[None]]).astype(jnp.float32)
        # period means of bounded stats can leave [0, 1] by a rounding error
        return jnp.clip(obs, self._planner_low, self._planner_high)

    def global_obs(self, state, params=None):
        """The planner's observation plus the phase within the period: ``f32[2B + 6]``."""
        params = self.default_params() if params is None else params
        phase = (state.t % (params.period_length + 1)) / (params.period_length + 1)
        return jnp.concatenate([self._planner_obs(state, params), phase.astype(jnp.float32)[None]])

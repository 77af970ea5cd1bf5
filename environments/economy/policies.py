"""Scripted baselines for the taxation game: planners and best-responding workers.

Planners (tax schedules):

* ``flat_rates`` and ``us_federal_rates`` — fixed schedules.
* ``saez_rates`` — the Saez (2001) optimal schedule from an income sample::

      tau(z) = (1 - G(z)) / (1 - G(z) + a(z) e)

  with ``e`` the labour elasticity (0.4 by default, or ``estimate_elasticity``),
  ``a(z) = z f(z) / (1 - F(z))`` the local Pareto parameter and ``G(z)`` the average
  normalised welfare weight of incomes ``>= z`` (weights ``g_i = w_i / mean(w)``,
  ``w_i = 1/max(z_i, 1)`` for inverse-income welfare, 1 for utilitarian). Estimators,
  on the empirical distribution of the sample (``F(z)`` = share of incomes ``< z``):
  ``a(z) = [F(z e^h) - F(z e^-h)] / (2 h (1 - F(z)))`` (the density by a symmetric
  window of ``+-h`` in log income, ``h = bandwidth``). The rate of a finite bracket is
  ``tau(z)`` averaged over ``points_per_bracket`` evenly spaced points (midpoints of
  equal sub-intervals) of the bracket. The top bracket ``[c, inf)`` uses
  ``a = zbar / (zbar - c)`` (``zbar`` = mean income above ``c``) and the average weight
  of top earners *weighted by their income above c*,
  ``G = sum g_i (z_i - c) / sum (z_i - c)`` — the weight that the derivation of the
  top-rate formula produces (the revenue of a top-rate change is ``sum (z_i - c)``); it
  differs from the plain average only when weights vary inside the top bracket, and
  for the one-bracket (flat) set it gives the optimal linear tax
  ``(1 - gbar)/(1 - gbar + e)``. Where no income lies at or above ``z`` the rate is 0.
  All of it is jit-able (one sort, binary searches).
* ``estimate_elasticity`` — OLS slope of ``log z`` on ``log(1 - tau)`` (pooled, or
  within-worker over periods, which removes the skill confounder).

Workers: ``best_response_hours`` (continuous hours, closed form) and
``best_response_levels`` (an hours grid, exact argmax), both against a given schedule
and a lump-sum rebate taken as given (each worker is negligible). Within a bracket the
post-tax income is linear in hours and the utility concave, so the optimum over the
bracket's hours interval is the stationary point clipped to it:

* quasi-linear: ``l = (v (1 - tau_b) / (c delta))^(1/(delta - 1))``;
* isoelastic: ``zt = unit ((1 - tau_b) v / (kappa unit))^(1/eta)``, then
  ``l = (zt - A_b) / ((1 - tau_b) v)`` with ``A_b = tau_b c_b - T(c_b) + R``.

The best of these ``B`` points, the bracket edges and ``max_hours`` is the global
optimum, for any (also non-monotone) rates.

Env-level helpers return actions for ``Taxation``: ``best_response_actions`` (workers),
``planner_actions_towards`` (planner moves toward target rates), ``saez_planner_actions``
and ``scripted_actions`` (both roles).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxagents_environments.economy import brackets as schedule
from jaxagents_environments.economy.labour import worker_utility
from jaxagents_environments.economy.taxation import Taxation, TaxationParams
from jaxagents.core.validate import check_positive_int

WELFARE_WEIGHTS = ("inverse_income", "utilitarian")


# --------------------------------------------------------------------------- fixed schedules
def flat_rates(rate: float, num_brackets: int) -> jax.Array:
    """The same ``rate`` in every bracket: ``f32[num_brackets]``."""
    schedule.check_rates(rate, "rate")
    return jnp.full((num_brackets,), rate, jnp.float32)


def us_federal_rates() -> jax.Array:
    """The 2024 US federal rates of the ``"us_federal"`` bracket set: ``f32[7]``."""
    return jnp.asarray(schedule.US_FEDERAL_2024_RATES, jnp.float32)


# --------------------------------------------------------------------------- Saez
def saez_rates(incomes, cutoffs, elasticity=0.4, welfare: str = "inverse_income",
               points_per_bracket: int = 16, bandwidth: float = 0.1):
    """Saez bracket rates ``f32[B]`` for an income sample ``incomes`` (``[N]``, dollars).

    ``elasticity`` may be traced (e.g. estimated inside a rollout). See the module
    docstring for the estimators.
    """
    if welfare not in WELFARE_WEIGHTS:
        raise ValueError(f"welfare must be one of {WELFARE_WEIGHTS}, got {welfare!r}")
    points_per_bracket = check_positive_int("points_per_bracket", points_per_bracket)
    if not bandwidth > 0:
        raise ValueError(f"bandwidth must be > 0, got {bandwidth!r}")
    if not isinstance(elasticity, jax.core.Tracer) and not np.all(np.asarray(elasticity) > 0):
        raise ValueError(f"elasticity must be > 0, got {elasticity!r}")
    z = jnp.sort(jnp.asarray(incomes, jnp.float32).reshape(-1))
    n = z.shape[0]
    c = jnp.asarray(cutoffs, jnp.float32)
    e = jnp.asarray(elasticity, jnp.float32)
    w = 1.0 / jnp.maximum(z, 1.0) if welfare == "inverse_income" else jnp.ones_like(z)
    g = w / jnp.mean(w)
    g_at_or_above = jnp.concatenate([jnp.cumsum(g[::-1])[::-1], jnp.zeros(1)])  # [N+1]

    def below(x):  # number of incomes < x
        return jnp.searchsorted(z, x, side="left")

    def rate_at(x):
        k = below(x)
        n_ge = n - k
        share_ge = n_ge / n
        big_g = jnp.where(n_ge > 0, g_at_or_above[k] / jnp.maximum(n_ge, 1), 0.0)
        window = (below(x * jnp.exp(bandwidth)) - below(x * jnp.exp(-bandwidth))) / n
        a = window / (2.0 * bandwidth * jnp.maximum(share_ge, 1.0 / n))
        num = jnp.maximum(1.0 - big_g, 0.0)
        den = num + a * e
        tau = jnp.where(den > 0, num / jnp.where(den > 0, den, 1.0), 0.0)
        return jnp.where(n_ge > 0, jnp.clip(tau, 0.0, 1.0), 0.0)

    m = points_per_bracket
    frac = (jnp.arange(m, dtype=jnp.float32) + 0.5) / m
    lo, hi = c[:-1], c[1:]
    points = lo[:, None] + frac[None, :] * (hi - lo)[:, None]  # [B-1, m]
    finite = jnp.mean(rate_at(points), axis=-1)

    top = c[-1]
    above = z > top
    excess = jnp.where(above, z - top, 0.0)
    total_excess = jnp.sum(excess)
    n_above = jnp.sum(above)
    zbar = jnp.sum(jnp.where(above, z, 0.0)) / jnp.maximum(n_above, 1)
    a_top = zbar / jnp.maximum(zbar - top, 1e-12)
    g_top = jnp.sum(g * excess) / jnp.where(total_excess > 0, total_excess, 1.0)
    num = jnp.maximum(1.0 - g_top, 0.0)
    den = num + a_top * e
    top_rate = jnp.where((total_excess > 0) & (den > 0), num / jnp.where(den > 0, den, 1.0), 0.0)
    return jnp.concatenate([finite, jnp.clip(top_rate, 0.0, 1.0)[None]])


def estimate_elasticity(incomes, marginal_rates, mask=None, within: bool = False, fallback=0.4):
    """OLS slope of ``log z`` on ``log(1 - tau)``, over entries with ``z > 0``,
    ``tau < 1`` (and ``mask``); clipped at 0.

    ``within=True`` takes ``[T, N]`` arrays (periods x workers) and demeans both
    variables per worker first (fixed effects: a worker's skill drops out, which a
    cross-section confounds with its rate). With no variation in rates the slope is
    undefined and ``fallback`` is returned.
    """
    z = jnp.asarray(incomes, jnp.float32)
    tau = jnp.asarray(marginal_rates, jnp.float32)
    valid = (z > 0) & (tau < 1)
    if mask is not None:
        valid = valid & jnp.asarray(mask, bool)
    v = valid.astype(jnp.float32)
    y = jnp.log(jnp.where(valid, z, 1.0))
    x = jnp.log(jnp.where(valid, 1.0 - tau, 1.0))
    axis = 0 if within else None
    count = jnp.maximum(jnp.sum(v, axis=axis, keepdims=True), 1.0)
    x = (x - jnp.sum(x * v, axis=axis, keepdims=True) / count) * v
    y = (y - jnp.sum(y * v, axis=axis, keepdims=True) / count) * v
    sxx, sxy = jnp.sum(x * x), jnp.sum(x * y)
    ok = sxx > 1e-8 * jnp.maximum(jnp.sum(v), 1.0)
    return jnp.where(ok, jnp.maximum(sxy / jnp.where(ok, sxx, 1.0), 0.0), fallback)


# --------------------------------------------------------------------------- workers
def best_response_hours(skills, rates, cutoffs, params: TaxationParams, max_hours: float = 100.0, rebate=0.0):
    """Utility-maximising continuous hours in ``[0, max_hours]`` for each skill
    (``[N]``, $/hour, > 0) against ``rates``/``cutoffs`` and a given ``rebate`` ($)."""
    v = jnp.asarray(skills, jnp.float32)[None, :]  # [1, N]
    r = jnp.asarray(rates, jnp.float32)[:, None]  # [B, 1]
    c = jnp.asarray(cutoffs, jnp.float32)
    upper = jnp.concatenate([c[1:], jnp.full((1,), jnp.inf)])[:, None]
    lo = jnp.minimum(c[:, None] / v, max_hours)
    hi = jnp.minimum(upper / v, max_hours)
    net = (1.0 - r) * v  # net-of-tax wage in each bracket, [B, N]
    unit = params.income_unit

    def quasi_linear(_):
        ratio = net / (params.labour_cost * params.labour_exponent)
        return ratio ** (1.0 / (params.labour_exponent - 1.0))

    def iso(_):
        inv_eta = jnp.where(params.eta > 0, 1.0 / jnp.maximum(params.eta, 1e-30), 1e30)
        x = (net / (params.kappa * unit)) ** inv_eta
        intercept = (r[:, 0] * c - schedule.tax_at_cutoffs(rates, cutoffs))[:, None] + rebate
        return (unit * x - intercept) / jnp.where(net > 0, net, 1.0)

    stationary = jax.lax.switch(params.utility, [quasi_linear, iso], None)
    stationary = jnp.where(net > 0, stationary, 0.0)  # a 100% bracket: work as little as it allows
    candidates = jnp.concatenate([
        jnp.clip(jnp.nan_to_num(stationary, nan=0.0), lo, hi), lo, jnp.full_like(v, max_hours)], axis=0)
    u = _candidate_utility(candidates, v, rates, cutoffs, params, rebate)
    return jnp.take_along_axis(candidates, jnp.argmax(u, axis=0)[None], axis=0)[0]


def _candidate_utility(hours, skills, rates, cutoffs, params, rebate):
    """Utility of ``hours`` ``[K, N]`` for skills ``[1, N]`` (one schedule for all)."""
    z = skills * hours
    post = z - schedule.tax(z, rates, cutoffs) + rebate
    return worker_utility(post, hours, params)


def best_response_levels(skills, rates, cutoffs, params: TaxationParams, hour_levels, rebate=0.0):
    """Index of the utility-maximising entry of ``hour_levels`` for each skill (``[N]``)."""
    levels = jnp.asarray(hour_levels, jnp.float32)[:, None]  # [L, 1]
    v = jnp.asarray(skills, jnp.float32)[None, :]
    u = _candidate_utility(jnp.broadcast_to(levels, (levels.shape[0], v.shape[1])), v, rates, cutoffs, params, rebate)
    return jnp.argmax(u, axis=0).astype(jnp.int32)


def equilibrium(skills, rates, cutoffs, params: TaxationParams, max_hours: float = 100.0, iterations: int = 30):
    """Continuous-hours equilibrium: best responses and the rebate they fund, by
    fixed-point iteration on the rebate (one step suffices for quasi-linear utility).
    Returns ``(hours f32[N], rebate f32[])``."""
    v = jnp.asarray(skills, jnp.float32)

    def body(_, rebate):
        hours = best_response_hours(v, rates, cutoffs, params, max_hours, rebate)
        return jnp.mean(schedule.tax(v * hours, rates, cutoffs))

    rebate = jax.lax.fori_loop(0, iterations, body, jnp.zeros((), jnp.float32))
    return best_response_hours(v, rates, cutoffs, params, max_hours, rebate), rebate


def saez_fixed_point(skills, cutoffs, params: TaxationParams, elasticity=0.4, max_hours: float = 100.0,
                     iterations: int = 20, damping: float = 0.5, welfare: str = "inverse_income"):
    """Saez rates against the incomes they induce: iterate rates -> equilibrium
    incomes -> ``saez_rates``, with damping. Returns ``f32[B]``."""
    v = jnp.asarray(skills, jnp.float32)
    c = jnp.asarray(cutoffs, jnp.float32)

    def body(_, rates):
        hours, _ = equilibrium(v, rates, c, params, max_hours, iterations=10)
        new = saez_rates(v * hours, c, elasticity, welfare)
        return damping * rates + (1.0 - damping) * new

    return jax.lax.fori_loop(0, iterations, body, jnp.zeros(c.shape, jnp.float32))


# --------------------------------------------------------------------------- env actions
def best_response_actions(env: Taxation, state, params: TaxationParams) -> jax.Array:
    """Workers' actions that best-respond to the rates in ``state`` and the last
    rebate: grid indices ``i32[N]`` or continuous hours ``f32[N, 1]``."""
    if env.continuous_hours:
        hours = best_response_hours(state.skills, state.rates, params.cutoffs, params, env.max_hours, state.rebate)
        return hours[:, None]
    return best_response_levels(state.skills, state.rates, params.cutoffs, params, env.hour_levels, state.rebate)


def planner_actions_towards(env: Taxation, state, params: TaxationParams, target_rates) -> jax.Array:
    """The planner action that moves the rates toward ``target_rates``: the target
    itself for ``planner_action="rates"``, else per bracket the delta landing closest."""
    target = jnp.asarray(target_rates, jnp.float32)
    if env.planner_action == "rates":
        return jnp.clip(target, 0.0, 1.0)[None]
    landed = jnp.clip(state.rates[:, None] + params.rate_deltas[None, :], 0.0, 1.0)  # [B, D]
    return jnp.argmin(jnp.abs(landed - target[:, None]), axis=-1).astype(jnp.int32)[None]


def saez_planner_actions(env: Taxation, state, params: TaxationParams, elasticity=0.4,
                         welfare: str = "inverse_income") -> jax.Array:
    """Planner action toward the Saez rates of the last worker step's incomes. Before
    anyone has worked (the first planner step of an episode: all hours 0) it uses the
    incomes of workers best-responding to the rates in force instead, not an all-zero
    income sample (whose Saez schedule would be 0% everywhere)."""
    worked = jnp.any(state.hours > 0)
    hours = jax.lax.cond(
        worked, lambda: state.hours,
        lambda: best_response_hours(state.skills, state.rates, params.cutoffs, params, env.max_hours, state.rebate))
    target = saez_rates(state.skills * hours, params.cutoffs, elasticity, welfare)
    return planner_actions_towards(env, state, params, target)


def scripted_actions(env: Taxation, state, params: TaxationParams, planner="saez", elasticity=0.4) -> dict:
    """Actions for both roles: best-responding workers and a scripted planner.

    ``planner``: ``"saez"`` (recomputed from the last incomes at every planner step),
    or target rates ``f32[B]`` (e.g. ``us_federal_rates()``, ``flat_rates(0.2, B)``).
    """
    if isinstance(planner, str):
        if planner != "saez":
            raise ValueError(f"planner must be 'saez' or an array of target rates, got {planner!r}")
        plan = saez_planner_actions(env, state, params, elasticity)
    else:
        plan = planner_actions_towards(env, state, params, planner)
    return {"worker": best_response_actions(env, state, params), "planner": plan}

"""Governments of EconGym's society: the fiscal authority's debt, the pension fund, and
the rewards of the fiscal authority, the pension authority and the central bank.

Rewards follow EconGym's ``Government.get_reward`` (commit d81cd5d): objectives ``gdp``
(``sigmoid(log(GDP/GDP_last) / 0.05)``), ``gini`` (``sigmoid((dG_wealth + dG_income) /
(2 x 0.167))`` with ``dG`` the fall of a Gini from before to after tax),
``social_welfare`` (sum of household rewards), ``mean_welfare`` (their mean),
``gdp_gini`` (the mean of the first two) and ``pension_gap`` (``sigmoid(2 (log(1 +
max(fund / N, 0)) - log 10^6))``); the central bank's is an asymmetric loss around 2%
inflation and 5% growth.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxagents_environments.economy.metrics import sort_floats

TINY = 1e-8
GDP_SCALE, GINI_SCALE = 0.05, 0.167


def debt_step(debt, rate, spending, revenue):
    """``B' = (1 + i) B + spending - revenue`` (nominal)."""
    return (1.0 + rate) * debt + spending - revenue


def pension_fund_step(fund, growth_rate, pension):
    """``F' = (1 + g) F - sum(pension)`` (contributions are negative pensions)."""
    return (1.0 + growth_rate) * fund - jnp.sum(pension)


def econgym_gini(x, alive):
    """EconGym's Gini over the ``alive`` entries of ``x`` ``f32[C]``: values shifted by
    ``1e-7``, divided by their maximum, ``(2 sum_i i x_(i) - (n + 1) sum x)/(n sum x)``
    over the sorted values (not clipped: negative wealth can push it past 1). One sort."""
    v = x + 1e-7
    n = jnp.sum(alive)
    top = jnp.max(jnp.where(alive, v, -jnp.inf))
    v = v / top
    xs = sort_floats(jnp.where(alive, v, jnp.inf))
    valid = jnp.arange(x.shape[0]) < n
    xs = jnp.where(valid, xs, 0.0)
    rank = jnp.arange(1, x.shape[0] + 1, dtype=xs.dtype)
    total = jnp.sum(xs)
    nf = n.astype(xs.dtype)
    return (2.0 * jnp.dot(rank, xs) - (nf + 1.0) * total) / (nf * total)


def objective_reward(objective: str, gdp, last_gdp, ginis, household_rewards, alive, fund):
    """The reward of a fiscal or pension authority for ``objective`` (module docstring).

    ``ginis``: ``(wealth before, wealth after, income before, income after)`` or
    ``None`` where no objective needs them; ``household_rewards`` ``f32[C]``.
    """
    def gdp_reward():
        return jax.nn.sigmoid((jnp.log(gdp + TINY) - jnp.log(last_gdp + TINY)) / GDP_SCALE)

    def gini_reward():
        w0, w1, i0, i1 = ginis
        return jax.nn.sigmoid(((w0 - w1) + (i0 - i1)) / (2.0 * GINI_SCALE))

    if objective == "gdp":
        return gdp_reward()
    if objective == "gini":
        return gini_reward()
    if objective == "gdp_gini":
        return 0.5 * (gdp_reward() + gini_reward())
    if objective == "social_welfare":
        return jnp.sum(jnp.where(alive, household_rewards, 0.0))
    if objective == "mean_welfare":
        return jnp.sum(jnp.where(alive, household_rewards, 0.0)) / jnp.maximum(jnp.sum(alive), 1)
    if objective == "pension_gap":
        per_household = jnp.maximum(fund / jnp.maximum(jnp.sum(alive), 1), 0.0)
        return jax.nn.sigmoid(2.0 * (jnp.log1p(per_household) - jnp.log(1e6)))
    raise ValueError(f"objective must be one of gdp, gini, gdp_gini, social_welfare, mean_welfare, "
                     f"pension_gap, got {objective!r}")


def central_bank_reward(inflation, growth, target_inflation=0.02, target_growth=0.05,
                        weight_inflation=120.0, weight_low=80.0, weight_high=20.0, smoothness=0.01):
    """``exp(-(120 (pi - 2%)^2 + 80 below^2 + 20 above^2))`` where ``below``/``above`` are
    softplus-smoothed shortfall/excess of growth from 5% (EconGym's defaults)."""
    gap = growth - target_growth
    below = jax.nn.softplus(-gap / smoothness) * smoothness
    above = jax.nn.softplus(gap / smoothness) * smoothness
    loss = weight_inflation * (inflation - target_inflation) ** 2 + weight_low * below**2 + weight_high * above**2
    return jnp.exp(-loss)

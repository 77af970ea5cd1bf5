"""Observations of the macro economy: every role sees the public macro data (the
global features) followed by its own private features. Money amounts are divided by a
nominal scale (last step's nominal GDP, per household or per firm), so observations do
not drift with the price level; every entry is clipped to ``[-OBS_CLIP, OBS_CLIP]``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxagents_environments.economy.macro.dynamics import safe_ratio

OBS_CLIP = 1e6

GLOBAL_FEATURES = (
    "inflation", "growth", "policy_rate", "reserve_ratio", "deposit_rate", "lending_rate",
    "tau", "xi", "tau_a", "xi_a", "gov_spending_share",
    "log_price_index", "gov_debt_to_gdp", "capital_to_output", "inventory_to_output",
    "spent_fraction", "mean_labour", "gini_income", "gini_wealth", "bank_equity_to_gdp",
    "time_fraction",
)
"""Public features, first in every role's observation (``gini_*`` are -1 when not
computed: see ``MacroEconomy``)."""
HOUSEHOLD_FEATURES = (
    "productivity", "superstar", "assets", "income", "consumption_value", "labour", "full_time_wage",
)
"""``e_i / mean(e)``, superstar flag, assets / S, last pre-tax income / S, last
consumption x price index / S, last hours share, employer's wage x h_max / S, with
S = last nominal GDP per household."""
FIRM_FEATURES = (
    "tfp", "relative_price", "capital_to_output", "inventory_to_output", "leverage",
    "employment_share", "fill", "profit", "full_time_wage",
)
"""``Z_j``, ``p_j / P``, ``K_j / Y_j``, ``inventory_j / Y_j``, ``loans_j / (p_j K_j)``,
``L_j / sum L``, last fill fraction, last profit / (nominal GDP / M), ``W_j h_max / S``."""
BANK_FEATURES = ("deposits_to_gdp", "loans_to_gdp", "reserves_to_deposits", "profit_to_gdp")
GOVERNMENT_FEATURES = ("revenue_to_gdp", "spending_to_gdp", "primary_deficit_to_gdp")
CENTRAL_BANK_FEATURES = ()

GLOBAL_INDEX = {name: i for i, name in enumerate(GLOBAL_FEATURES)}


def _clip(x):
    return jnp.clip(x, -OBS_CLIP, OBS_CLIP).astype(jnp.float32)


def bank_book(state):
    """``(deposits, loans)``: the bank's gross deposits (positive household assets and
    firm deposits) and gross loans (household debt and positive firm loans)."""
    a, l = state.assets, state.loans
    deposits = jnp.sum(jnp.maximum(a, 0.0)) + jnp.sum(jnp.maximum(-l, 0.0))
    loans = jnp.sum(jnp.maximum(-a, 0.0)) + jnp.sum(jnp.maximum(l, 0.0))
    return deposits, loans


def global_features(state, params) -> jax.Array:
    """``f32[len(GLOBAL_FEATURES)]``."""
    ngdp = state.nominal_gdp
    f = jnp.stack([
        state.inflation,
        state.growth,
        *state.policy,
        *state.fiscal,
        jnp.log(state.price_index),
        safe_ratio(state.gov_debt, ngdp),
        safe_ratio(jnp.sum(state.capital), state.real_gdp),
        safe_ratio(jnp.sum(state.inventory), state.real_gdp),
        state.spent_fraction,
        jnp.mean(state.labour),
        state.gini_income,
        state.gini_wealth,
        safe_ratio(state.bank_equity, ngdp),
        state.t / params.horizon,
    ])
    return _clip(f)


def firm_features(state, params, num_households: int) -> jax.Array:
    """``f32[M, len(FIRM_FEATURES)]``."""
    m = state.price.shape[0]
    per_hh = state.nominal_gdp / num_households
    f = jnp.stack([
        state.tfp,
        safe_ratio(state.price, state.price_index),
        safe_ratio(state.capital, state.output),
        safe_ratio(state.inventory, state.output),
        safe_ratio(state.loans, state.price * state.capital),
        safe_ratio(state.employment, jnp.sum(state.employment)),
        state.fill,
        safe_ratio(state.profit, state.nominal_gdp / m),
        safe_ratio(state.wage * params.h_max, per_hh),
    ], axis=-1)
    return _clip(f)


def bank_features(state) -> jax.Array:
    """``f32[len(BANK_FEATURES)]``."""
    deposits, loans = bank_book(state)
    ngdp = state.nominal_gdp
    return _clip(jnp.stack([
        safe_ratio(deposits, ngdp), safe_ratio(loans, ngdp),
        safe_ratio(state.reserves, deposits), safe_ratio(state.bank_profit, ngdp),
    ]))


def government_features(state) -> jax.Array:
    """``f32[len(GOVERNMENT_FEATURES)]``."""
    ngdp = state.nominal_gdp
    return _clip(jnp.stack([
        safe_ratio(state.tax_revenue, ngdp), safe_ratio(state.gov_spending, ngdp),
        safe_ratio(state.gov_spending - state.tax_revenue, ngdp),
    ]))


def observations(state, params, employer, num_households: int, num_firms: int) -> dict:
    """``{role: f32[n_role, dim]}`` for the five roles."""
    n = num_households
    g = global_features(state, params)
    per_hh = state.nominal_gdp / n
    wage_full = safe_ratio(state.wage * params.h_max, per_hh)  # [M]
    wage_i = jnp.broadcast_to(wage_full[0], (n,)) if num_firms == 1 else wage_full[employer]
    e = state.productivity
    own = jnp.stack([
        safe_ratio(e, jnp.mean(e)),
        state.star.astype(jnp.float32),
        safe_ratio(state.assets, per_hh),
        safe_ratio(state.income, per_hh),
        safe_ratio(state.consumption * state.price_index, per_hh),
        state.labour,
        wage_i,
    ], axis=-1)
    household = jnp.concatenate([jnp.broadcast_to(g, (n, g.shape[0])), _clip(own)], axis=-1)
    firm = jnp.concatenate(
        [jnp.broadcast_to(g, (num_firms, g.shape[0])), firm_features(state, params, n)], axis=-1
    )
    return {
        "household": household,
        "firm": firm,
        "bank": jnp.concatenate([g, bank_features(state)])[None],
        "government": jnp.concatenate([g, government_features(state)])[None],
        "central_bank": g[None],
    }


def global_observation(state, params, num_households: int) -> jax.Array:
    """Centralised-critic input: the global features, every firm's features, the
    bank's and the government's: ``f32[21 + 9 M + 4 + 3]``."""
    return jnp.concatenate([
        global_features(state, params),
        firm_features(state, params, num_households).ravel(),
        bank_features(state),
        government_features(state),
    ])

"""Scripted households, firms, bank and government for the macro economy, and the
economy a central bank alone learns in (``CentralBankEconomy``).

The rules read only the agents' own observations (``obs.py``), are pure and
vectorised over agents, and are the same whatever the central bank does, so that
central-bank policies can be compared on equal terms. They are simple behavioural
rules with adaptive expectations, chosen so that the economy stays bounded for a
century (no runaway inflation or debt deflation) under a Taylor rule or a constant
rate, and so that the policy rate matters:

* **Expected inflation** ``pi_e = w pi_last + (1 - w) pi*`` (``expectation_weight``
  ``w``; ``pi*`` the env's ``inflation_target``), the real rate ``r - pi_e``.
* **Household** ``[save, work]``: savings share ``s = s0 + s_r (r_d - pi_e - r_n) +
  s_a (a* - a / y)`` with ``a / y`` its assets over its income (both in the
  observation): households save more when the real deposit rate is above the neutral
  ``r_n`` and when they are below their target wealth ``a*`` times income (a buffer
  stock; also the real-balance effect that lets demand recover after a fall in
  prices), clipped to the env's range. Hours are fixed at ``hours`` of ``h_max``.
* **Firm** ``[price, invest]``: ``log p' - log p = pi_e + k_d (1 - fill) - k_i
  (inventory / Y - v*) - k_p log(p / P)``: firms index prices to expected inflation,
  raise them when demand went unserved (``fill < 1``) or stocks are below the target
  ``v*``, cut them with stock above it, and stay near the price level ``P``.
  Investment spending per value of output ``delta K / Y + k_k (K*/Y - K/Y)`` with the
  user-cost target ``K*/Y = alpha / (r_l - pi_e + delta + premium)`` (clipped to
  ``[1, 6]``): a higher real lending rate lowers the capital firms want.
* **Bank** ``[lend, deposit]``: fixed spreads (``bank_action``; default the lowest
  lending spread, the one the env's reset assumes, and half the deposit spread).
* **Government** ``[tau, xi, tau_a, xi_a, g]``: the env's ``init_fiscal`` forever.

Calibration (defaults): at the Taylor rule's steady state (``i = 4%``, ``pi = 2%``)
the savings share is about -5% (households spend a little out of wealth, which the
government deficit and the bank's dividends replenish), firms want the initial ``K/Y
= 3``, and households' wealth is near the initial 4.3 times income. Reactions are
deliberately damped (``k_d = k_i = 0.05``, ``s_r = 0.5``, ``w = 0.25``): stronger
ones (e.g. ``s_r = 5`` with ``w = 0.5``) make the economy swing between the price
bounds whatever the central bank does. The policy rate reaches demand through the
real deposit rate (savings), the real lending rate (investment) and interest income;
inflation through demand (fill and inventories). With ``N = 1000`` households the
idiosyncratic productivity shocks leave output growth a standard deviation of about
1.7% that no policy can remove.

The coefficients live in ``ScriptedEconomy`` (a flax struct, so they may be traced).
``scripted_policies(rules)`` returns them in the ``ScriptedRoles`` form
``{role: fn(key, state, timestep, params) -> action}``.
"""

from __future__ import annotations

import jax.numpy as jnp
from flax import struct

from jaxagents_environments.economy.macro.env import MacroEconomy
from jaxagents_environments.economy.macro.obs import FIRM_FEATURES, GLOBAL_FEATURES, GLOBAL_INDEX, HOUSEHOLD_FEATURES
from jaxagents.core.wrappers.scripted import ScriptedRoles

_G = len(GLOBAL_FEATURES)
_H = {k: _G + i for i, k in enumerate(HOUSEHOLD_FEATURES)}
_F = {k: _G + i for i, k in enumerate(FIRM_FEATURES)}


@struct.dataclass
class ScriptedEconomy:
    """Coefficients of the scripted roles (module docstring). Floats or ``f32[]``."""

    expectation_weight: float = 0.25
    save_base: float = -0.05
    save_rate: float = 0.5
    neutral_real_rate: float = 0.015
    save_wealth: float = 0.1
    wealth_target: float = 4.3
    hours: float = 1.0 / 3.0
    price_demand: float = 0.05
    price_inventory: float = 0.05
    inventory_target: float = 0.1
    price_level: float = 0.2
    invest_gap: float = 0.1
    risk_premium: float = 0.03
    bank_action: tuple = (-1.0, 0.0)


def _to_unit(x, lo, hi):
    """Inverse of the env's linear action map: value in ``[lo, hi]`` -> ``[-1, 1]``."""
    return jnp.clip(2.0 * (x - lo) / (hi - lo) - 1.0, -1.0, 1.0)


def expected_inflation(obs, params, rules: ScriptedEconomy):
    w = rules.expectation_weight
    return w * obs[..., GLOBAL_INDEX["inflation"]] + (1.0 - w) * params.inflation_target


def household_action(obs, params, rules: ScriptedEconomy = ScriptedEconomy()):
    """``obs f32[N, d]`` -> ``f32[N, 2]``."""
    pi_e = expected_inflation(obs, params, rules)
    real = obs[:, GLOBAL_INDEX["deposit_rate"]] - pi_e
    income = obs[:, _H["income"]]
    wealth = jnp.where(income > 1e-6, obs[:, _H["assets"]] / jnp.maximum(income, 1e-6), rules.wealth_target)
    save = rules.save_base + rules.save_rate * (real - rules.neutral_real_rate) + rules.save_wealth * (rules.wealth_target - wealth)
    a_save = _to_unit(save, params.save_min, 1.0)
    a_work = jnp.full_like(a_save, 2.0 * rules.hours - 1.0)
    return jnp.stack([a_save, a_work], axis=-1)


def firm_action(obs, params, rules: ScriptedEconomy = ScriptedEconomy()):
    """``obs f32[M, d]`` -> ``f32[M, 2]``."""
    pi_e = expected_inflation(obs, params, rules)
    fill = obs[:, _F["fill"]]
    stock = obs[:, _F["inventory_to_output"]]
    rel = jnp.maximum(obs[:, _F["relative_price"]], 1e-6)
    dlogp = pi_e + rules.price_demand * (1.0 - fill) - rules.price_inventory * (stock - rules.inventory_target) - rules.price_level * jnp.log(rel)
    a_price = jnp.clip(dlogp / params.price_step, -1.0, 1.0)
    ky = obs[:, _F["capital_to_output"]]
    user_cost = jnp.maximum(obs[:, GLOBAL_INDEX["lending_rate"]] - pi_e + params.delta + rules.risk_premium, 0.01)
    target = jnp.clip(params.alpha / user_cost, 1.0, 6.0)
    invest = params.delta * ky + rules.invest_gap * (target - ky)
    a_invest = _to_unit(invest, 0.0, params.invest_max)
    return jnp.stack([a_price, a_invest], axis=-1)


def bank_action(obs, params, rules: ScriptedEconomy = ScriptedEconomy()):
    """``f32[1, 2]``: fixed spreads."""
    return jnp.broadcast_to(jnp.asarray(rules.bank_action, jnp.float32), (obs.shape[0], 2))


def government_action(obs, params, rules: ScriptedEconomy = ScriptedEconomy()):
    """``f32[1, 5]``: the initial fiscal policy, held."""
    hi = jnp.stack([params.tau_max, params.xi_max, params.tau_a_max, params.xi_a_max, params.spending_max])
    u = jnp.where(hi > 0, 2.0 * params.init_fiscal / jnp.where(hi > 0, hi, 1.0) - 1.0, -1.0)
    return jnp.broadcast_to(u, (obs.shape[0], 5)).astype(jnp.float32)


_RULES = {"household": household_action, "firm": firm_action, "bank": bank_action, "government": government_action}


def scripted_policies(rules: ScriptedEconomy = ScriptedEconomy(), roles=tuple(_RULES)) -> dict:
    """``{role: fn(key, state, timestep, params)}`` for ``ScriptedRoles`` (each reads
    its own role's last observation)."""

    def policy(role):
        fn = _RULES[role]
        return lambda key, state, ts, params: fn(ts.obs[role], params, rules).astype(jnp.float32)

    return {r: policy(r) for r in roles}


class CentralBankEconomy(ScriptedRoles):
    """``MacroEconomy(num_households, num_firms)`` with households, firms, the bank
    and the government scripted (``scripted_policies``): one role, ``central_bank``.

    Observation ``f32[21]`` (one agent): the macro economy's public entries, in
    ``obs.GLOBAL_FEATURES`` order (inflation, real growth, policy rate, reserve ratio,
    deposit and lending rates, the five fiscal instruments, log price index, debt /
    GDP, capital / output, inventory / output, spending served, mean hours share, the
    two Ginis, bank equity / GDP, ``t / horizon``; ``MacroEconomy``'s module docstring).

    Actions ``Box(-1, 1, (2,))``, ``[rate, reserve]``: the policy rate mapped onto
    ``[params.policy_rate_min, params.policy_rate_max]`` and the reserve ratio onto
    ``[0, params.reserve_ratio_max]``.

    Args:
        num_households, num_firms: as ``MacroEconomy``.
        rules: the scripted roles' coefficients (default ``ScriptedEconomy()``).
    """

    def __init__(self, num_households: int = 100, num_firms: int = 1, rules: ScriptedEconomy | None = None):
        self.rules = ScriptedEconomy() if rules is None else rules
        super().__init__(MacroEconomy(num_households, num_firms), scripted_policies(self.rules))

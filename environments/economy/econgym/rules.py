"""EconGym's rule-based agents (``agents/rule_based/*.py``, commit d81cd5d) as ``ScriptedRoles``
policies of ``Society``: each reads its role's observation and returns its ``[-1, 1]``
action.

* Households: savings share ``N(mu(age), sigma(age))`` by age band (EconGym's Chinese
  table: under 35 ``(0.30, 0.10)``, 35-44 ``(0.27, 0.10)``, 45-54 ``(0.28, 0.09)``, 55-64
  ``(0.32, 0.08)``, 65+ ``(0.34, 0.08)``; ``N(0.5, 0.1)`` for infinitely lived households),
  clipped to ``[0, 1]``; with ``advance_consumption`` the share is cut by ``1 - a``, ``a ~
  N(0.5, 0.15)`` under 35, ``N(0.4, 0.12)`` to 54, ``N(0.2, 0.08)`` above (``N(0.5, 0.15)``
  without ages); hours ``N(0.5, 0.2)`` of ``h_max``; risky share by age band (``N(0.5,
  0.12)``, ``N(0.4, 0.12)``, ``N(0.35, 0.10)``, ``N(0.25, 0.08)``, ``N(0.15, 0.08)``;
  ``N(0.3, 0.1)`` without ages); with several firms the employer is drawn with
  probability proportional to the wage and spending is split by ``softmax(-price)``.
* Fiscal authority: EconGym's calibrated schedule forever, ``(tau, xi, tau_a, xi_a,
  G/Y) = (0.263, 0.049, 0, 0, 0.189)``, spending split equally.
* Pension authority (EconGym's "IMF" rule): with ``d`` = debt / GDP, retirement age
  ``int(clip(age + 0.2 max(d - 0.6, 0), 55, 75))`` and contribution rate ``clip(rate +
  0.1 max(d - 0.6, 0), 0.05, 0.3)`` (then the env's ranges).
* Central bank (Taylor rule): ``i = max(r* + pi + 1.5 (pi - pi*) + 0.5 (g - g*), 0)``
  with ``r* = pi* = 2%``, ``g* = 5%``, reserve ratio 8%. EconGym adds ``N(0, 0.002)`` noise
  and reads a growth rate that is always 5%; this rule is deterministic and reads the
  economy's growth.
* Commercial bank: lending ``i + 8% + 2% rr``, deposit ``i - 1% + 2% rr`` (EconGym's rule
  with its loan and deposit terms, which read 0 there), ``i`` and ``rr`` the policy it
  last saw.
* Firms: EconGym's price targets -- ``2 Z`` (monopoly), ``1.35 Z`` (oligopoly, the middle of
  its ``U(1.2, 1.5)``), ``1.2 Z`` (monopolistic competition, middle of ``U(1.1, 1.3)``),
  approached within the year's ``price_step`` -- and the marginal product as wage
  (EconGym's rule wages, ``0.5-0.85 Z`` dollars an hour, are far below any marginal
  product of its economy and are not a markdown one can express relative to it).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxagents.core.wrappers.scripted import ScriptedRoles
from jaxagents_environments.economy.econgym import obs as ob

AGE_BANDS = (35.0, 45.0, 55.0, 65.0)
SAVE_MEAN, SAVE_STD = (0.30, 0.27, 0.28, 0.32, 0.34), (0.10, 0.10, 0.09, 0.08, 0.08)
RISK_MEAN, RISK_STD = (0.50, 0.40, 0.35, 0.25, 0.15), (0.12, 0.12, 0.10, 0.08, 0.08)
ADVANCE_MEAN, ADVANCE_STD = (0.5, 0.5, 0.4, 0.4, 0.2), (0.15, 0.15, 0.12, 0.12, 0.08)
FIRM_MARKUP = {"monopoly": 2.0, "oligopoly": 1.35, "monopolistic_competition": 1.2}


def _unit(x, lo, hi):
    """The ``[-1, 1]`` action that maps onto ``x`` in ``[lo, hi]`` (clipped)."""
    return jnp.clip(2.0 * (x - lo) / (hi - lo) - 1.0, -1.0, 1.0)


def _by_age(table, age):
    return jnp.asarray(table, jnp.float32)[jnp.sum(age[..., None] >= jnp.asarray(AGE_BANDS), axis=-1)]


def household_rule(env, key, obs, params, advance_consumption=False):
    """Households' actions ``f32[C, A]`` from their observations ``f32[C, D]``."""
    cfg = env.config
    m = cfg.num_firms
    c = obs.shape[0]
    k_save, k_adv, k_work, k_risk, k_firm = jax.random.split(key, 5)
    normal = lambda k: jax.random.normal(k, (c,))  # noqa: E731
    if cfg.olg:
        age = obs[:, -1] * 100.0
        save = _by_age(SAVE_MEAN, age) + _by_age(SAVE_STD, age) * normal(k_save)
        adv = _by_age(ADVANCE_MEAN, age) + _by_age(ADVANCE_STD, age) * normal(k_adv)
        risk = _by_age(RISK_MEAN, age) + _by_age(RISK_STD, age) * normal(k_risk)
    else:
        save = 0.5 + 0.1 * normal(k_save)
        adv = 0.5 + 0.15 * normal(k_adv)
        risk = 0.3 + 0.1 * normal(k_risk)
    save = jnp.clip(save, 0.0, 1.0)
    if advance_consumption:
        save = jnp.clip(save * (1.0 - adv), 0.0, 1.0)
    cols = [_unit(save, params.save_range[0], params.save_range[1]),
            _unit(jnp.clip(0.5 + 0.2 * normal(k_work), 0.0, 1.0), 0.0, 1.0)]
    if cfg.risk_invest:
        cols.append(_unit(jnp.clip(risk, 0.0, 1.0), 0.0, 1.0))
    if m > 1:
        n_pub = len(ob.PUBLIC)
        wage, price = obs[:, n_pub:n_pub + m], obs[:, n_pub + m:n_pub + 2 * m]
        firm = jax.random.categorical(k_firm, jnp.log(jnp.maximum(wage, 1e-12)))
        cols.append(_unit((firm.astype(jnp.float32) + 0.5) / m, 0.0, 1.0))
        share = jax.nn.softmax(-price, axis=-1)
        cols += [_unit(share[:, j], 0.0, 1.0) for j in range(m)]
    return jnp.stack(cols, axis=1)


def fiscal_rule(env, key, obs, params):
    """EconGym's calibrated schedule, ``params.init_fiscal``, and an equal spending split."""
    m = env.config.num_firms
    a = _unit(params.init_fiscal, 0.0, params.fiscal_max)
    if m > 1:
        a = jnp.concatenate([a, jnp.zeros((m,))])  # equal weights
    return a[None].astype(jnp.float32)


def pension_rule(env, key, obs, params):
    """EconGym's "IMF" rule on the debt ratio (module docstring)."""
    o = obs[0]
    debt_ratio = o[5] / jnp.maximum(o[6], 1e-12)
    excess = jnp.maximum(debt_ratio - 0.6, 0.0)
    age = jnp.floor(jnp.clip(o[3] * 100.0 + 0.2 * excess, 55.0, 75.0))
    rate = jnp.clip(o[4] + 0.1 * excess, 0.05, 0.3)
    r = params.pension_range
    return jnp.stack([_unit(age, r[0], r[1]), _unit(rate, r[2], r[3])])[None]


def taylor_rule(env, key, obs, params, r_star=0.02, pi_star=0.02, g_star=0.05, phi_pi=1.5, phi_g=0.5,
                reserve_ratio=0.08):
    """``i = max(r* + pi + phi_pi (pi - pi*) + phi_g (g - g*), 0)``, reserve ratio fixed."""
    pi, g = obs[0, -2], obs[0, -1]
    rate = jnp.maximum(r_star + pi + phi_pi * (pi - pi_star) + phi_g * (g - g_star), 0.0)
    r = params.policy_range
    return jnp.stack([_unit(rate, r[0], r[1]), _unit(jnp.float32(reserve_ratio), r[2], r[3])])[None]


def bank_rule(env, key, obs, params):
    """EconGym's commercial bank: fixed spreads over the policy rate it last saw."""
    base, rr = obs[0, 0], obs[0, 1]
    lending = base + 0.08 + 0.02 * rr
    deposit = base - 0.01 + 0.02 * rr
    return jnp.stack([_unit(lending, params.lending_range[0], params.lending_range[1]),
                      _unit(deposit, params.deposit_range[0], params.deposit_range[1])])[None]


def firm_rule(env, key, obs, params):
    """Price towards EconGym's multiple of TFP (within ``price_step``), wage at the
    marginal product."""
    z, price = obs[:, 1], obs[:, 3]
    target = FIRM_MARKUP[env.config.market] * z
    a_price = jnp.clip(jnp.log(target / jnp.maximum(price, 1e-12)) / jnp.maximum(params.price_step, 1e-6), -1.0, 1.0)
    return jnp.stack([a_price, jnp.zeros_like(a_price)], axis=1)


RULES = {"household": household_rule, "fiscal": fiscal_rule, "pension": pension_rule,
         "central_bank": taylor_rule, "bank": bank_rule, "firm": firm_rule}


def rule_policies(env, roles=None, advance_consumption=False) -> dict:
    """``{role: fn(key, state, timestep, params)}`` for ``ScriptedRoles``: EconGym's rule
    for each of ``roles`` (default every role of ``env``)."""
    roles = tuple(env.roles) if roles is None else tuple(roles)
    unknown = [r for r in roles if r not in env.roles]
    if unknown:
        raise ValueError(f"roles {unknown} are not roles of this economy; roles: {sorted(env.roles)}")

    def policy(role):
        rule = RULES[role]
        extra = {"advance_consumption": advance_consumption} if role == "household" else {}
        return lambda key, state, ts, params: rule(env, key, ts.obs[role], params, **extra).astype(jnp.float32)

    return {r: policy(r) for r in roles}


def with_rules(env, roles, advance_consumption=False) -> ScriptedRoles:
    """``env`` with ``roles`` acting by EconGym's rules (the others left to learners)."""
    return ScriptedRoles(env, rule_policies(env, roles, advance_consumption))

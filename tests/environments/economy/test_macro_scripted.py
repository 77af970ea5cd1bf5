"""The scripted macro roles (``environments/economy/macro/scripted.py``): each rule
against its formula on hand-made observations, and a century of ``CentralBankEconomy``
under the Taylor rule (legal actions only, identities hold, everything finite)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxagents_environments.economy.macro import dynamics as dyn
from jaxagents_environments.economy.macro.obs import FIRM_FEATURES, GLOBAL_FEATURES, GLOBAL_INDEX, HOUSEHOLD_FEATURES
from jaxagents_environments.economy.macro.scripted import (
    CentralBankEconomy, ScriptedEconomy, firm_action, government_action, household_action,
)
from jaxagents_environments.economy.macro.params import MacroParams
from jaxagents_environments.economy.macro.taylor import taylor_action

P = MacroParams.make()
R = ScriptedEconomy()
G = len(GLOBAL_FEATURES)


def obs(n, features, **values):
    o = np.zeros((n, G + len(features)), np.float32)
    for k, v in values.items():
        idx = G + features.index(k) if k in features else GLOBAL_INDEX[k]  # own features first
        o[:, idx] = v
    return jnp.asarray(o)


def test_household_rule():
    o = obs(3, HOUSEHOLD_FEATURES, inflation=0.02, deposit_rate=[0.02, 0.035, 0.05], assets=4.3, income=1.0)
    a = np.asarray(household_action(o, P))
    save = P.save_min + dyn.unit_interval(a[:, 0]) * (1 - P.save_min)
    real = np.array([0.02, 0.035, 0.05]) - 0.02  # pi_e = pi* when inflation is on target
    want = R.save_base + R.save_rate * (real - R.neutral_real_rate)  # wealth at its target
    np.testing.assert_allclose(save, want, atol=1e-6)
    np.testing.assert_allclose(dyn.unit_interval(a[:, 1]), 1 / 3, atol=1e-6)
    poorer = np.asarray(household_action(obs(1, HOUSEHOLD_FEATURES, inflation=0.02, deposit_rate=0.035, assets=2.0, income=1.0), P))
    assert poorer[0, 0] > a[1, 0]  # below the wealth target: save more


def test_firm_rule():
    o = obs(2, FIRM_FEATURES, inflation=0.02, lending_rate=0.05, fill=[1.0, 0.8], inventory_to_output=0.1,
            relative_price=1.0, capital_to_output=3.0)
    a = np.asarray(firm_action(o, P))
    dlogp = P.price_step * a[:, 0]
    np.testing.assert_allclose(dlogp, [0.02, 0.02 + R.price_demand * 0.2], atol=1e-6)  # index + excess demand
    stocked = firm_action(obs(1, FIRM_FEATURES, inflation=0.02, fill=1.0, inventory_to_output=0.5, relative_price=1.0), P)
    np.testing.assert_allclose(P.price_step * stocked[0, 0], 0.02 - R.price_inventory * (0.5 - R.inventory_target), atol=1e-6)
    # user cost 0.05 - 0.02 + 0.06 + 0.03 = 0.12 -> K*/Y = 0.36 / 0.12 = 3 = K/Y: replacement investment
    np.testing.assert_allclose(dyn.unit_interval(a[:, 1]) * P.invest_max, P.delta * 3.0, atol=1e-5)


def test_government_holds_the_initial_fiscal_policy():
    a = government_action(jnp.zeros((1, G + 3)), P)
    hi = np.array([P.tau_max, P.xi_max, P.tau_a_max, P.xi_a_max, P.spending_max])
    np.testing.assert_allclose(dyn.unit_interval(a[0]) * hi, P.init_fiscal, atol=1e-6)


def test_a_century_under_the_taylor_rule_stays_legal_and_consistent():
    env = CentralBankEconomy(num_households=50)
    assert list(env.roles) == ["central_bank"]
    params = env.default_params()

    @jax.jit
    def run(key):
        state, ts = env.reset(key, params)

        def body(carry, k):
            state, ts = carry
            state, ts = env.step(k, state, {"central_bank": taylor_action(ts.obs["central_bank"], params)}, params)
            return (state, ts), ts.info

        return jax.lax.scan(body, (state, ts), jax.random.split(key, 100))[1]

    info = jax.device_get(run(jax.random.key(0)))
    assert not np.any(info["illegal_action"])  # every scripted action inside [-1, 1]
    for k, v in info.items():
        assert np.all(np.isfinite(v)), k
    for k in ("residual/money", "residual/bank", "residual/central_bank", "residual/goods"):
        assert np.max(np.abs(info[k])) < 1e-3, k
    assert np.all(np.abs(info["inflation"]) < 0.08)  # well inside the price bounds (+-10.5% a year)
    assert abs(float(np.mean(info["inflation"])) - 0.02) < 0.03

"""Replay EconGym's recorded trajectories (``data/econgym_reference.npz``) in our
``Society``: build our state from EconGym's, turn its actions into ours, feed its two
random draws (household productivity, firm TFP) and step. Used by
``test_econgym_parity.py``; the recording's README says how it was made.
"""

from __future__ import annotations

import contextlib
import os

import jax.numpy as jnp
import numpy as np

from jaxagents_environments.economy.econgym import Society, SocietyParams, SocietyState, saez
from jaxagents_environments.economy.econgym import households as hh
from jaxagents_environments.economy.econgym import market as mk

DATA = os.path.join(os.path.dirname(__file__), "data", "econgym_reference.npz")

# scenario -> our config (EconGym's household / government / bank / market types)
SCENARIOS = {
    "ramsey_tax": dict(households="ramsey", governments=("fiscal",), bank="non_profit", market="perfect"),
    "ramsey_tax_monopoly": dict(households="ramsey", governments=("fiscal",), bank="non_profit", market="monopoly"),
    "ramsey_tax_oligopoly": dict(households="ramsey", governments=("fiscal",), bank="commercial",
                                 market="oligopoly", num_firms=2),
    "ramsey_risk_invest": dict(households="ramsey_risk_invest", governments=("fiscal",), bank="non_profit",
                               market="perfect"),
    "dbl_government": dict(households="ramsey", governments=("central_bank", "fiscal"), bank="non_profit",
                           market="perfect"),
    "ramsey_cb_commercial": dict(households="ramsey", governments=("central_bank",), bank="commercial",
                                 market="perfect"),
    "olg_pension": dict(households="olg", governments=("pension",), bank="non_profit", market="perfect"),
    "olg_tax_monopolistic": dict(households="olg", governments=("fiscal",), bank="non_profit",
                                 market="monopolistic_competition", num_firms=5),
}
GOV_NAMES = {"fiscal": "tax", "pension": "pension", "central_bank": "central_bank"}
PRICE_STEP = 1.0  # wide enough that EconGym's recorded price moves are actions in [-1, 1]


class Record:
    """One scenario of the recording: ``rec.get("0/pre/households.at")``."""

    def __init__(self, data, scenario):
        self.d, self.sc = data, scenario
        self.cfg = SCENARIOS[scenario]
        govs = self.cfg["governments"]
        self.main = GOV_NAMES[govs[0]]
        self.steps = int(self.get("config/env_core.episode_length"))

    def get(self, key):
        return np.asarray(self.d[f"{self.sc}/{key}"])

    def has(self, key):
        return f"{self.sc}/{key}" in self.d.files

    def gov(self, t, stage, name, which=None):
        return self.get(f"{t}/{stage}/government.{which or self.main}.{name}")


def load():
    return np.load(DATA)


def make_env(rec: Record) -> tuple[Society, SocietyParams]:
    n = int(rec.get("config/households.households_n"))
    env = Society(num_households=n, capacity=n, horizon=rec.steps, **rec.cfg)
    g = f"government.{rec.main}"
    tax = "government.tax" if "fiscal" in rec.cfg["governments"] else g  # households are taxed by it
    fiscal = [float(rec.get(f"config/{tax}.{k}")) for k in ("tau", "xi", "tau_a", "xi_a")]
    fiscal.append(float(rec.get(f"config/{g}.Gt_prob")))
    params = SocietyParams.make(
        alpha=float(rec.get("config/market.alpha")), tfp=float(rec.get("config/market.Z")),
        epsilon=float(rec.get("config/market.epsilon")), sigma_z=float(rec.get("config/market.sigma_z")),
        consumption_tax=float(rec.get("config/env_core.consumption_tax_rate")),
        estate_tax=float(rec.get("config/env_core.estate_tax_rate")),
        estate_exemption=float(rec.get("config/env_core.estate_tax_exemption")),
        init_fiscal=fiscal, retire_age=float(rec.get(f"config/{g}.retire_age")),
        contribution_rate=float(rec.get(f"config/{g}.contribution_rate")),
        policy_rate=float(rec.get(f"config/{g}.base_interest_rate")),
        reserve_ratio=float(rec.get(f"config/{g}.reserve_ratio")),
        init_rate=float(rec.get("config/bank.base_interest_rate")),
        depreciation=float(rec.get("config/bank.depreciation_rate")), price_step=PRICE_STEP,
        horizon=rec.steps,
    )
    return env, params


def initial_state(env: Society, params, rec: Record) -> SocietyState:
    """Our state from EconGym's state after ``reset()`` (first-year inflation measured from
    1, as EconGym does)."""
    def h(name):
        return jnp.asarray(rec.get(f"0/pre/households.{name}"), jnp.float32).reshape(-1)

    n = env.config.capacity
    m = env.config.num_firms
    e_array = jnp.asarray(rec.get("0/pre/households.e_array"), jnp.float32)
    zeros = jnp.zeros((n,), jnp.float32)
    gdp = float(rec.gov(0, "pre", "GDP"))
    policy = [float(v) for v in np.asarray(params.init_fiscal)] + [
        float(params.retire_age), float(params.contribution_rate), float(params.policy_rate),
        float(params.reserve_ratio)]
    return SocietyState(
        alive=jnp.ones((n,), bool), e_normal=e_array[:, 0], e_star=e_array[:, 1], e=h("e"), assets=h("at"),
        savings=h("savings"), stock=h("stock_holdings"), risky_income=zeros + h("risky_income"), age=h("age"),
        working_years=zeros, pension_account=zeros, income=h("income"), post_income=h("income"), consumption=zeros,
        hours=h("ht"), pension=zeros,
        tfp=jnp.asarray(rec.get("0/pre/market.Zt"), jnp.float32).reshape(m),
        capital=jnp.asarray(rec.get("0/pre/market.Kt_next"), jnp.float32).reshape(m),
        price=jnp.asarray(rec.get("0/pre/market.price"), jnp.float32).reshape(m),
        wage=jnp.asarray(rec.get("0/pre/market.WageRate"), jnp.float32).reshape(m),
        output=jnp.zeros((m,)), labour=jnp.zeros((m,)),
        gov_debt=jnp.float32(rec.gov(0, "pre", "Bt_next")), gdp=jnp.float32(gdp),
        policy=jnp.asarray(policy, jnp.float32), gov_split=jnp.full((m,), 1.0 / m, jnp.float32),
        bank_rates=jnp.asarray([rec.get("0/pre/bank.lending_rate"), rec.get("0/pre/bank.deposit_rate")], jnp.float32),
        bank_view=jnp.asarray([rec.get("0/pre/bank.base_interest_rate"), params.reserve_ratio], jnp.float32),
        bank_account=jnp.float32(rec.get("0/pre/bank.current_account")), bank_profit=jnp.float32(0.0),
        pension_fund=jnp.float32(rec.gov(0, "pre", "pension_fund")), estate_tax=jnp.float32(0.0),
        order=jnp.arange(n, dtype=jnp.int32),
        stock_price=jnp.float32(rec.get("0/pre/households.stock_price")),
        price_index=jnp.float32(rec.get("0/pre/society.last_price_index")), inflation=jnp.float32(0.0),
        growth=jnp.float32(0.0), money_unit=jnp.float32(gdp / n), t=jnp.int32(0),
        saez=saez.init(params.saez_brackets.shape[0]),
    )


def _unit(v, lo, hi):
    """The action in ``[-1, 1]`` that maps onto ``v`` in ``[lo, hi]``."""
    return 2.0 * (np.asarray(v, np.float64) - lo) / (hi - lo) - 1.0


def actions(env: Society, params, rec: Record, t: int, state) -> dict:
    """EconGym's clipped actions of year ``t`` as our ``[-1, 1]`` actions."""
    cfg, m = env.config, env.config.num_firms
    out = {}
    a = rec.get(f"{t}/act/households.clipped")
    cols = [_unit(a[:, 0], *np.asarray(params.save_range)), _unit(a[:, 1], 0.0, 1.0)]
    if cfg.risk_invest:
        cols.append(_unit(a[:, 2], 0.0, 1.0))
    if m > 1:
        cols += [_unit(a[:, -m - 1], 0.0, 1.0)] + [_unit(a[:, -m + j], 0.0, 1.0) for j in range(m)]
    out["household"] = np.stack(cols, axis=1)
    for g in cfg.governments:
        name = GOV_NAMES[g]
        a = rec.get(f"{t}/act/government.{name}.clipped")
        if g == "fiscal":
            v = np.array(a[:5], np.float64)
            if rec.sc == "dbl_government":  # EconGym's economy spends the main (central bank) government's share
                v[4] = float(rec.get("config/government.central_bank.Gt_prob"))
            u = [_unit(v[k], 0.0, float(params.fiscal_max[k])) for k in range(5)]
            out[g] = np.concatenate([u, _unit(a[5:], 0.0, 1.0)])[None]
        elif g == "pension":
            r = np.asarray(params.pension_range)
            out[g] = np.array([[_unit(a[0], r[0], r[1]), _unit(a[1], r[2], r[3])]])
        else:
            r = np.asarray(params.policy_range)
            out[g] = np.array([[_unit(a[0], r[0], r[1]), _unit(a[1], r[2], r[3])]])
    if "bank" in env.roles:
        a = rec.get(f"{t}/act/bank.clipped")
        out["bank"] = np.array([[_unit(a[0], *np.asarray(params.lending_range)),
                                 _unit(a[1], *np.asarray(params.deposit_range))]])
    if "firm" in env.roles:
        a = rec.get(f"{t}/act/market.clipped").reshape(m, 2)
        mpl = rec.get(f"{t}/post/market.MarketClear_WageRate").reshape(m)
        price = np.log(a[:, 0] / np.asarray(state.price, np.float64)) / float(params.price_step)
        wage = np.log(a[:, 1] / mpl) / float(params.wage_step)
        out["firm"] = np.stack([price, wage], axis=1)
    return {k: jnp.asarray(v, jnp.float32) for k, v in out.items()}


@contextlib.contextmanager
def recorded_draws(monkeypatch, rec: Record, t: int):
    """Make our step use EconGym's productivity and TFP draws of year ``t``."""
    e_array = jnp.asarray(rec.get(f"{t}/mid/households.e_array"), jnp.float32)
    tfp = jnp.asarray(rec.get(f"{t}/post/market.Zt"), jnp.float32).reshape(-1)
    with monkeypatch.context() as mp:
        mp.setattr(hh, "productivity_step", lambda *a, **k: (e_array[:, 0], e_array[:, 1]))
        mp.setattr(mk, "tfp_step", lambda *a, **k: tfp)
        yield

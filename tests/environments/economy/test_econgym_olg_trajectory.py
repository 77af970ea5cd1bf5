"""A whole overlapping-generations trajectory of EconGym's own step loop, replayed.

``data/econgym_olg_trajectory.npz`` (``econgym_reference/record_olg_trajectory.py``)
holds two economies of twelve years of EconGym's society (commit d81cd5d) with 40 OLG
households and a pension authority, without and with births, recorded with EconGym's
own random draws. Our ``Society`` steps through the same years from EconGym's reset
state, fed EconGym's actions and draws (productivity, TFP and who dies), and every year
its population, ages, retirement flags, pensions,
pension accounts, working years, incomes, consumption and wealth must match
EconGym's, household by household, as must output, wages, capital, rates, the pension
fund, GDP and the rewards. Blocks compared one at a time cannot see a rule that shifts
a whole trajectory (households that did not age in the first year retire a year late);
this replay does.
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxagents_environments.economy.econgym import demography

from . import econgym_replay as R

pytestmark = pytest.mark.slow  # eager replays of 12 years, ~20 s each on one free core

DATA = os.path.join(os.path.dirname(__file__), "data", "econgym_olg_trajectory.npz")
for _name in ("olg_trajectory", "olg_births"):
    R.SCENARIOS.setdefault(_name, dict(households="olg", governments=("pension",), bank="non_profit",
                                       market="perfect"))
CAPACITY = 64  # room for the births of 12 years


def _close(name, ours, theirs, rtol=1e-4, atol=0.0):
    ours = np.asarray(ours, np.float64).reshape(-1)
    theirs = np.asarray(theirs, np.float64).reshape(-1)
    assert ours.shape == theirs.shape, f"{name}: shape {ours.shape} vs EconGym's {theirs.shape}"
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol, err_msg=name)


@pytest.fixture(scope="module")
def data():
    return np.load(DATA)


def _rows(state):
    """Our slots in EconGym's row order: the alive ones by ``order``."""
    alive = np.asarray(state.alive)
    slots = np.flatnonzero(alive)
    return slots[np.argsort(np.asarray(state.order)[slots], kind="stable")]


def _deaths(monkeypatch, rec, t, state):
    """Make our demography draw EconGym's deaths of year ``t`` (its row ``i`` is our
    ``i``-th slot in row order)."""
    c = state.alive.shape[0]
    dying = np.zeros(c, bool)
    if rec.has(f"{t}/demog/die_idx"):
        dying[_rows(state)[rec.get(f"{t}/demog/die_idx").astype(int)]] = True
    u = jnp.stack([jnp.where(jnp.asarray(dying), 0.0, 1.0), jnp.full((c,), 0.5)]).astype(jnp.float32)
    monkeypatch.setattr(demography, "uniforms", lambda *a, **k: u)


def _draws(monkeypatch, rec, t, state):
    """EconGym's productivity (rows onto our slots) and TFP draws of year ``t``."""
    e_array = np.zeros((state.alive.shape[0], 2), np.float32)
    e_array[_rows(state)] = rec.get(f"{t}/mid/households.e_array")
    e_array = jnp.asarray(e_array)
    tfp = jnp.asarray(rec.get(f"{t}/post/market.Zt"), jnp.float32).reshape(-1)
    monkeypatch.setattr(R.hh, "productivity_step", lambda *a, **k: (e_array[:, 0], e_array[:, 1]))
    monkeypatch.setattr(R.mk, "tfp_step", lambda *a, **k: tfp)


def _start(rec):
    """Our economy and state from EconGym's reset, with ``CAPACITY`` household slots."""
    env, p = R.make_env(rec)
    p = p.replace(birth_rate=jnp.float32(rec.get("config/households.OLG.birth_rate")))
    state = R.initial_state(env, p, rec)
    n = int(rec.get("config/households.households_n"))
    env = R.Society(num_households=n, capacity=CAPACITY, horizon=rec.steps, **rec.cfg)

    def pad(x):
        x = np.asarray(x)
        if x.shape[:1] != (n,):
            return x
        out = np.zeros((CAPACITY,) + x.shape[1:], x.dtype)
        out[:n] = x
        return jnp.asarray(out)

    hh_fields = ("alive", "e_normal", "e_star", "e", "assets", "savings", "stock", "risky_income", "age",
                 "working_years", "pension_account", "income", "post_income", "consumption", "hours", "pension")
    state = state.replace(**{k: pad(getattr(state, k)) for k in hh_fields},
                          order=jnp.arange(CAPACITY, dtype=jnp.int32))
    return env, p, state


@pytest.mark.parametrize("scenario", ["olg_trajectory", "olg_births"])
def test_olg_trajectory_matches_econgym_year_by_year(monkeypatch, data, scenario):
    rec = R.Record(data, scenario)
    env, p, state = _start(rec)
    deaths = retired = births = 0
    for t in range(rec.steps):
        acts = R.actions(env, p, rec, t, state)
        u = np.zeros((env.config.capacity, acts["household"].shape[1]), np.float32)
        u[_rows(state)] = np.asarray(acts["household"])
        acts["household"] = jnp.asarray(u)
        with monkeypatch.context() as mp:
            _deaths(mp, rec, t, state)
            _draws(mp, rec, t, state)
            state, ts = env.step(jax.random.key(t), state, acts, p)
        alive = np.asarray(state.alive)
        rows = _rows(state)

        def post(k):
            return rec.get(f"{t}/post/{k}")

        def hh(x):
            return np.asarray(x)[rows]

        n = int(post("households.households_n"))
        assert int(alive.sum()) == n, f"year {t}: {alive.sum()} households alive, EconGym {n}"
        # ages are whole years: exact
        np.testing.assert_array_equal(hh(state.age), post("households.age").reshape(-1), err_msg=f"year {t}: age")
        retire_age = float(post("government.pension.retire_age"))
        np.testing.assert_array_equal(hh(state.age) >= retire_age, post("households.is_old").reshape(-1) > 0,
                                      err_msg=f"year {t}: retired")
        wealth = float(np.max(np.abs(post("households.at_next"))))
        income = float(np.max(np.abs(post("households.income"))))
        checks = {
            "working_years": (hh(state.working_years), post("households.working_years"), 0.0),
            "pension": (hh(state.pension), post("households.pension"), 1e-6 * income),
            "pension_account": (hh(state.pension_account), post("households.accumulated_pension_account"),
                                1e-6 * income),
            "income": (hh(state.income), post("households.income"), 0.0),
            "post_income": (hh(state.post_income), post("households.post_income"), 0.0),
            "consumption": (hh(state.consumption), post("households.consumption"), 0.0),
            "hours": (hh(state.hours), post("households.ht"), 0.0),
            "wealth": (hh(state.assets), post("households.at_next"), 1e-6 * wealth),
            "savings": (hh(state.savings), post("households.savings"), 1e-6 * wealth),
            "output": (state.output, post("market.Yt_j"), 0.0), "labour": (state.labour, post("market.firm_labor_j"), 0.0),
            "wage": (state.wage, post("market.WageRate"), 0.0),
            "capital_next": (state.capital, post("market.Kt_next"), 0.0),
            "lending_rate": (state.bank_rates[0], post("bank.lending_rate"), 0.0),
            "gdp": (state.gdp, post("government.pension.GDP"), 0.0),
            "pension_fund": (state.pension_fund, post("government.pension.pension_fund"), 0.0),
            "debt": (state.gov_debt, post("government.pension.Bt_next"), 0.0),
            "bank_account": (state.bank_account, post("bank.current_account"), 0.0),
            "bank_profit": (state.bank_profit, post("bank.profit"), 0.0),
            "price_index": (state.price_index, post("society.price_index"), 0.0),
            "pension_reward": (ts.reward["pension"], post("government.pension.reward"), 0.0),
        }
        if os.environ.get("DEBUG_TRAJ"):
            for name, (ours, theirs, atol) in checks.items():
                o, th = np.asarray(ours, np.float64).reshape(-1), np.asarray(theirs, np.float64).reshape(-1)
                err = np.max(np.abs(o - th) / (np.abs(th) + atol + 1e-30)) if o.shape == th.shape else -1
                print(f"year {t} {name:16s} {err:.2e}")
            continue
        for name, (ours, theirs, atol) in checks.items():
            _close(f"year {t}: {name}", ours, theirs, atol=atol)
        # households' rewards are for those alive at the start of the year (EconGym's
        # reward array still has the rows of this year's dead)
        deaths += int(rec.get(f"{t}/demog/die_total")) if rec.has(f"{t}/demog/die_total") else 0
        births += int(rec.get(f"{t}/demog/born_n")) if rec.has(f"{t}/demog/born_n") else 0
        retired += int(np.sum(post("households.is_old")))
        assert not bool(ts.terminated), f"year {t}: terminated, EconGym did not"
    assert deaths >= 3 and retired > 0, "the recording must exercise deaths and retirement"
    assert (births > 0) == (scenario == "olg_births")

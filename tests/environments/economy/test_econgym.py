"""EconGym's society (``econgym``): configuration errors, the blocks against their closed
forms, and rollouts whose identities must hold every year (money owed by the
government, the pension fund, the population, the goods market). Replays against
EconGym's own code: ``test_econgym_parity.py``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jaxagents
from jaxagents_environments.economy.econgym import Society, SocietyParams, demography, government as gov
from jaxagents_environments.economy.econgym import households as hh
from jaxagents_environments.economy.econgym import market as mk
from jaxagents_environments.economy.econgym import obs as ob


@pytest.mark.parametrize("kwargs, match", [
    (dict(households="dynasty"), "households must be one of"),
    (dict(governments=()), "governments must be a non-empty tuple"),
    (dict(governments=("fiscal", "fiscal")), "governments must be a non-empty tuple"),
    (dict(market="perfect", num_firms=2), "num_firms must be 1 for market='perfect'"),
    (dict(market="oligopoly", num_firms=1), r"num_firms must be an int in \[2, 1000\]"),
    (dict(num_households=0), "num_households must be an int"),
    (dict(num_households=10, capacity=5), "capacity must be an int in"),
    (dict(objectives={"central_bank": "gdp"}), "objectives keys must be governments"),
    (dict(objectives={"fiscal": "happiness"}), "objectives\\['fiscal'\\] must be one of"),
    (dict(bank="shadow"), "bank must be one of"),
    (dict(tax_schedule="saez_2000"), "tax_schedule must be one of"),
    (dict(horizon=0), "horizon must be an int >= 1"),
])
def test_bad_config_is_one_clear_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Society(**kwargs)


@pytest.mark.parametrize("field, value, match", [
    ("alpha", 1.5, r"params.alpha must be finite and in"),
    ("save_range", [0.5, -0.5], r"params.save_range must be \[low, high\]"),
    ("init_fiscal", [11.0, 0.0, 0.0, 0.0, 0.1], r"params.init_fiscal must be finite and in"),
    ("pension_range", [70.0, 60.0, 0.05, 0.2], "params.pension_range must be"),
    ("saez_brackets", [1.0, 2.0, 3.0], "params.saez_brackets must be >= 2 rising cutoffs from 0"),
    ("saez_brackets", [0.0, 5.0, 5.0], "params.saez_brackets must be >= 2 rising cutoffs from 0"),
    ("saez_period", 0, r"params.saez_period must be finite and in"),
])
def test_bad_params_are_refused(field, value, match):
    env = Society(num_households=4)
    with pytest.raises(ValueError, match=match):
        env.validate_params(SocietyParams.make(**{field: value}))


def test_roles_follow_the_config():
    env = Society(households="olg_risk_invest", governments=("pension", "fiscal", "central_bank"), bank="commercial",
                  market="monopolistic_competition", num_households=8, num_firms=3)
    assert set(env.roles) == {"household", "pension", "fiscal", "central_bank", "bank", "firm"}
    assert env.roles["household"].num_agents == 10  # ceil(1.25 N) slots for a changing population
    assert env.roles["household"].action_space.shape == (2 + 1 + 1 + 3,)
    assert env.roles["fiscal"].action_space.shape == (5 + 3,)
    assert not env.roles["household"].always_active
    plain = Society(num_households=8)
    assert set(plain.roles) == {"household", "fiscal"} and plain.roles["household"].always_active
    assert "econgym" in jaxagents.list_envs()


def test_hsv_and_us_federal_taxes_closed_forms():
    x = jnp.asarray([0.0, 5e4, 2e6], jnp.float32)
    np.testing.assert_allclose(hh.hsv_tax(x, 0.263, 0.049),
                               np.maximum(x, 1e-8) - 0.737 / 0.951 * np.maximum(x, 1e-8) ** 0.951, rtol=1e-5)
    np.testing.assert_allclose(hh.hsv_tax(x[1:], 0.2, 1.0), x[1:] - 0.8 * np.log(x[1:]), rtol=1e-6)
    # 50,000: 37,050 taxable = 10% of 10,275 + 12% of 26,775, less the 559.98 credit
    np.testing.assert_allclose(hh.us_federal_tax(jnp.asarray([5e4, 1e4])), [1027.5 + 3213.0 - 559.98, 0.0], rtol=1e-6)


def test_ces_goods_and_scaled_rewards():
    goods = jnp.asarray([[1.0, 4.0], [2.0, 2.0]])
    np.testing.assert_allclose(hh.ces(goods, 0.5), [1.0 / (1.0 / 1.0 + 1.0 / 4.0), 1.0], rtol=1e-5)  # rho = -1
    np.testing.assert_allclose(hh.ces(goods, 1.0), [2.0, 2.0], rtol=1e-5)
    bought, sold = hh.buy_goods(jnp.asarray([10.0, 30.0]), jnp.ones((2, 1)), jnp.asarray([2.0]), jnp.asarray([10.0]),
                                jnp.ones((2,), bool))
    np.testing.assert_allclose(sold, [10.0], rtol=1e-6)  # demand 20 goods, 10 for sale: each gets half its order
    np.testing.assert_allclose(bought[:, 0], [2.5, 7.5], rtol=1e-6)
    assert float(mk.scaled_reward(jnp.float32(0.0))) == pytest.approx(0.5, abs=1e-6)
    assert float(gov.central_bank_reward(0.02, 0.05)) == pytest.approx(np.exp(-(100 * np.log(2) ** 2) * 1e-4), rel=1e-5)


def test_mortality_estates_and_annuities():
    ages = jnp.asarray([0.5, 3, 20, 64, 65, 90], jnp.float32)
    np.testing.assert_allclose(demography.death_probability(ages),
                               [0.0056, 28e-5, 79.5e-5, 992.1e-5, 1978.7e-5, 14389.6e-5], rtol=1e-6)
    inherited, tax = demography.estate(jnp.asarray([5.0, 20.0]), 10.0, 0.4)
    np.testing.assert_allclose(inherited, [5.0, 16.0]) and np.testing.assert_allclose(tax, [0.0, 4.0])
    np.testing.assert_allclose(hh.annuity_factor(jnp.asarray([40.0, 65.0, 70.0, 75.0])), [233, 101, 56, 56])


@pytest.mark.parametrize("estates", ["econgym", "conserving"])
def test_estates_econgyms_rules_and_ours(monkeypatch, estates):
    """Slot 3 dies (forced by the draw). EconGym's rule taxes the start-of-year wealth
    of its first row (slot 1, ``order`` 0), whoever died, and without births the
    bequest leaves no trace in anyone's wealth; ours taxes the deceased's own wealth
    and gives the rest to the survivors."""
    p = SocietyParams.make(estate_tax=0.5, estate_exemption=0.0, birth_rate=0.0)
    monkeypatch.setattr(demography, "uniforms", lambda *a, **k: jnp.asarray([[1.0, 1.0, 1.0, 0.0]] * 2))
    h = {"alive": jnp.ones(4, bool), "age": jnp.full(4, 30.0), "assets": jnp.asarray([100.0, 200.0, 300.0, 400.0]),
         "stock": jnp.zeros(4), "e_normal": jnp.ones(4), "e_star": jnp.zeros(4),
         "order": jnp.asarray([2, 0, 1, 3], jnp.int32)}
    start = jnp.asarray([10.0, 20.0, 30.0, 40.0])
    step = jax.jit(demography.step, static_argnames=("rng", "estates"))  # one compile beats ~200 eager ops
    out, flows = step(jax.random.key(0), h, p, jnp.float32(1.0), rng="hash", estates=estates, start_assets=start)
    np.testing.assert_array_equal(out["alive"], [True, True, True, False])
    np.testing.assert_array_equal(out["age"], [31.0, 31.0, 31.0, 31.0])
    if estates == "econgym":
        assert float(flows["estate_tax"]) == 10.0 and float(flows["inherited"]) == 10.0
        np.testing.assert_allclose(out["assets"][:3], [100.0, 200.0, 300.0])
        assert float(flows["bank_inherited"]) == pytest.approx(10.0 * 3 / 4)
    else:
        assert float(flows["estate_tax"]) == 200.0 and float(flows["inherited"]) == 200.0
        np.testing.assert_allclose(out["assets"][:3], np.asarray([100.0, 200.0, 300.0]) + 200.0 / 3, rtol=1e-6)


_top_groups = jax.jit(ob.top_groups)
_top_sums = jax.jit(lambda v, x, a, ks: jnp.stack(ob.top_sums(v, x, a, (ks[0], ks[1]))))


@settings(max_examples=10, deadline=None)
@given(st.lists(st.floats(-1e7, 1e7, width=32), min_size=1, max_size=40), st.integers(0, 2**31 - 1))
def test_top_groups_are_the_stable_sort_of_econgym(values, seed):
    x = np.asarray(values, np.float32)
    rng = np.random.default_rng(seed)
    x = np.where(rng.random(x.shape) < 0.3, x[rng.integers(0, x.size, x.shape)], x)  # ties
    alive = rng.random(x.shape) < 0.8
    alive[0] = True
    x, alive = np.pad(x, (0, 40 - x.size)), np.pad(alive, (0, 40 - x.size))  # one shape: one compile
    n = int(alive.sum())
    ks = np.array([max(1, int(0.1 * n)), max(1, int(0.5 * n))])
    got = np.asarray(_top_groups(jnp.asarray(x), jnp.asarray(alive), jnp.asarray(ks)))
    values = np.stack([x, np.arange(x.size, dtype=np.float32)])
    sums = np.asarray(_top_sums(jnp.asarray(values), jnp.asarray(x), jnp.asarray(alive), jnp.asarray(ks)))
    idx = np.flatnonzero(alive)
    order = sorted(range(n), key=lambda i: x[idx][i], reverse=True)  # what EconGym does
    for row, k in zip(got, ks):
        want = np.zeros(x.shape, bool)
        want[idx[order[:k]]] = True
        np.testing.assert_array_equal(row, want)
    for row, k in zip(sums, ks):  # the sums the observation uses: wealth and (here) slot indices
        pick = idx[order[:k]]
        np.testing.assert_allclose(row, [x[pick].astype(np.float64).sum(), pick.sum()], rtol=1e-5, atol=1e-3)


def test_gini_is_econgyms_formula():
    x = np.array([3.0, -1.0, 10.0, 0.0, 7.0], np.float32)
    alive = np.array([True, True, True, False, True])
    v = np.sort(x[alive] + 1e-7)
    v = v / v.max()
    n = v.size
    want = (2 * np.dot(np.arange(1, n + 1), v) - (n + 1) * v.sum()) / (n * v.sum())
    assert float(gov.econgym_gini(jnp.asarray(x), jnp.asarray(alive))) == pytest.approx(want, rel=1e-5)


@pytest.fixture(scope="module")
def olg_rollout():
    """A jitted 30-year rollout of an economy with every government, a commercial bank and
    an oligopoly, random actions, overlapping generations (births fill freed slots)."""
    env = Society(households="olg", governments=("fiscal", "pension", "central_bank"), bank="commercial",
                  market="oligopoly", num_households=200, num_firms=2, horizon=30)
    params = env.default_params().replace(birth_rate=jnp.float32(0.03))
    state0, ts0 = env.reset(jax.random.key(0), params)

    def body(carry, key):
        state, ts = carry
        k_a, k_s = jax.random.split(key)
        acts = {r: 0.3 * jax.random.normal(k, (role.num_agents,) + role.action_space.shape)
                for k, (r, role) in zip(jax.random.split(k_a, len(env.roles)), env.roles.items())}
        nxt, ts2 = env.step(k_s, state, acts, params)
        return (nxt, ts2), (state, nxt, ts2)

    _, (before, after, steps) = jax.jit(lambda k: jax.lax.scan(body, (state0, ts0), jax.random.split(k, 30)))(
        jax.random.key(1))
    return env, params, jax.device_get(before), jax.device_get(after), jax.device_get(steps)


@pytest.mark.slow
def test_identities_hold_every_year(olg_rollout):
    env, p, before, after, ts = olg_rollout
    # up to the first termination (random actions may end the episode; no reset here)
    end = int(np.argmax(ts.terminated)) + 1 if np.any(ts.terminated) else len(ts.terminated)
    assert end >= 10, f"the random economy ended after {end} years"
    before, after, ts = jax.tree.map(lambda x: x[:end], (before, after, ts))
    info = ts.info
    # government debt: B' = (1 + i_seen) B + spending - revenue
    debt = (1 + before.bank_view[:, 0]) * before.gov_debt + info["gov_spending"] - info["tax_revenue"]
    np.testing.assert_allclose(after.gov_debt, debt, rtol=1e-5, atol=1e-6 * np.abs(before.gov_debt).max())
    # pension fund: F' = (1 + g) F - net pensions
    fund = (1 + float(p.pension_growth_rate)) * before.pension_fund - info["pension_paid"]
    np.testing.assert_allclose(after.pension_fund, fund, rtol=1e-5, atol=1e-5 * np.abs(info["pension_paid"]).max())
    # population: n' = n - deaths + births, within capacity; newborns from the second year
    n0, n1 = before.alive.sum(1), after.alive.sum(1)
    np.testing.assert_array_equal(n1, n0 - info["deaths"] + info["births"])
    assert info["births"][0] == 0 and info["births"][1:].sum() > 0 and info["deaths"][1:].sum() > 0
    np.testing.assert_array_equal(ts.active["household"], after.alive)
    # goods: what firms did not sell to households or the government is invested (value)
    np.testing.assert_allclose(info["investment"], info["gdp"] - info["gov_spending"] - info["consumption_value"],
                               rtol=1e-4, atol=1e-5 * info["gdp"].max())
    assert np.all(np.isfinite(ts.obs["household"])) and np.all(np.abs(ts.obs["household"]) <= ob.OBS_CLIP)
    # the dead are inactive and earn nothing
    assert np.all(ts.reward["household"][~before.alive] == 0)


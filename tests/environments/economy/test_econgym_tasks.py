"""EconGym's research tasks (``econgym_task``): every task builds, its learners see only
their roles, every other role acts by EconGym's rule, and a few years run with finite
outcomes; the rules themselves against their equations."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxagents
from jaxagents.cli import main as cli_main
from jaxagents_environments.economy.econgym import Society, rules, saez
from jaxagents_environments.economy.econgym.tasks import ECONGYM_TASKS, METRICS, OUR_VARIANTS, TASKS, EconGymTask


def test_the_catalogue_covers_econgyms_task_files():
    econgym_files = {  # EconGym's cfg/*.yaml at d81cd5d, without base_config
        "KS_model", "QE", "age_consumption", "asset_allocation", "consumption_tax", "dbl_government",
        "delayed_retirement", "estate_tax", "inflation_control", "market_type", "monopolistic_competition",
        "monopoly", "negative_interest", "oligopoly", "optimal_monetary", "optimal_tax",
        "over_leveraged_consumption", "pension_across_countries", "pension_gap", "personal_pension",
        "population_aging", "real_society", "technology", "tre_government", "universal_basic_income",
        "wealth_tax", "work_hard", "work_life_well_being"}
    assert set(ECONGYM_TASKS) == econgym_files
    assert set(TASKS) == econgym_files | set(OUR_VARIANTS)
    assert all(t.metric in METRICS for t in TASKS.values()) and all(t.learn for t in OUR_VARIANTS.values())
    with pytest.raises(ValueError, match="has no learning role in EconGym"):
        EconGymTask("QE", num_households=8)


# eager, ~3 s a task: every eighth under -m slow, all under -m heavy
@pytest.mark.parametrize("task", [pytest.param(t, marks=pytest.mark.slow if i % 8 == 0 else pytest.mark.heavy)
                                  for i, t in enumerate(sorted(TASKS))])
def test_every_task_runs_a_few_years(task):
    learn = TASKS[task].learn or None
    if learn is None:  # EconGym learns nothing here: let its first government learn
        learn = (Society(**TASKS[task].society).config.governments[0],)
    env = jaxagents.make("econgym_task", task=task, num_households=12, horizon=4, learn=learn)
    assert set(env.roles) == set(learn)
    params = env.default_params()
    state, ts = env.reset(jax.random.key(0), params)
    for t in range(2):
        acts = ({r: jnp.zeros((role.num_agents,) + role.action_space.shape) for r, role in env.roles.items()}
                if t == 0 else env.rule_actions(jax.random.key(9), state, ts, params))
        state, ts = env.step(jax.random.key(t + 1), state, acts, params)
        assert all(np.all(np.isfinite(v)) for v in ts.obs.values()), f"{task}: non-finite observation"
        assert np.isfinite(float(ts.info[METRICS[TASKS[task].metric][0]]))


@pytest.mark.slow  # one compiled 12-year rollout
def test_saez_government_taxes_the_society():
    """In a society with the Saez government: the rates are redrawn every
    ``saez_period`` years until the buffer is full and then follow Saez's formula;
    the income tax revenue is the bracket tax on the incomes."""
    env = Society(tax_schedule="saez", num_households=150, params={"saez_period": 3})
    p = env.default_params()
    policies = rules.rule_policies(env)

    def year(carry, key):
        state, ts = carry
        acts = {r: f(jax.random.fold_in(key, i), state, ts, p) for i, (r, f) in enumerate(policies.items())}
        nxt, ts = env.step(key, state, acts, p)
        income_tax = jnp.sum(saez.bracket_tax(nxt.income, nxt.saez.rates, p.saez_brackets))
        return (nxt, ts), (nxt.saez.rates, jnp.sum(nxt.saez.valid), income_tax, ts.info["tax_revenue"], ts.done)

    run = jax.jit(lambda k: jax.lax.scan(year, env.reset(k, p), jax.random.split(k, 12))[1])
    rates, filled, income_tax, revenue, done = jax.device_get(run(jax.random.key(3)))
    assert not done.any()
    np.testing.assert_array_equal(filled, np.minimum(150 * np.arange(1, 13), saez.BUFFER))
    changes = [t for t in range(1, 12) if not np.array_equal(rates[t], rates[t - 1])]
    assert changes == [3, 6, 9]  # every third year; years 0 and 3 random (buffer not full), 6 and 9 Saez's
    assert np.all((rates >= 0) & (rates <= 1))
    # the fiscal rule's asset tax is 0 and there is no consumption tax: revenue is the income tax
    np.testing.assert_allclose(revenue, income_tax, rtol=1e-5)


def test_every_task_config_loads_and_names_its_task():
    import glob
    import os

    from jaxagents import runner

    folder = os.path.join(os.path.dirname(__file__), "..", "..", "..", "baselines", "configs", "econ")
    paths = sorted(glob.glob(os.path.join(folder, "*.yaml")))
    assert {os.path.basename(p)[:-5] for p in paths} == {t for t, spec in TASKS.items() if spec.learn}
    for path in paths:
        cfg = runner.load_config(path)
        task = os.path.basename(path)[:-5]
        assert cfg["env"]["id"] == "econgym_task" and cfg["env"]["kwargs"]["task"] == task
        assert cfg["name"] == f"econgym_{task}" and cfg["learner"] == "ippo"
    assert runner.build(runner.load_config(paths[0])).num_updates == 100


def test_bad_tasks_and_learners_are_refused():
    with pytest.raises(ValueError, match="learn must name at least one role"):
        EconGymTask("optimal_tax", learn=())
    with pytest.raises(ValueError, match=r"learn roles \['firm'\] are not roles of task 'optimal_tax'"):
        EconGymTask("optimal_tax", learn=("firm",))
    with pytest.raises(ValueError, match="task must be one of"):
        EconGymTask("happiness")


def test_list_tasks_prints_the_catalogue(capsys):
    assert cli_main(["list-tasks", "econgym_task"]) == 0
    out = capsys.readouterr().out
    assert f"{len(TASKS)} tasks" in out and all(name in out for name in TASKS)
    assert cli_main(["list-tasks", "kuhn_poker"]) == 2


def test_rules_follow_econgyms_equations():
    env = Society(households="olg", governments=("pension", "central_bank"), bank="commercial", num_households=8)
    p = env.default_params()
    # Taylor rule: i = max(r* + pi + 1.5 (pi - 2%) + 0.5 (g - 5%), 0) = 2% + 4% + 3% + 0.5% = 9.5%
    cb_obs = jnp.zeros((1, env.roles["central_bank"].observation_space.shape[0])).at[0, -2:].set(
        jnp.asarray([0.04, 0.06]))
    a = rules.taylor_rule(env, None, cb_obs, p)
    lo, hi = np.asarray(p.policy_range[:2])
    assert lo + (float(a[0, 0]) + 1) / 2 * (hi - lo) == pytest.approx(0.095, abs=1e-6)
    # IMF pension rule: debt ratio 1.2 -> age + 0.12 (truncated: unchanged), rate + 0.06
    pension_obs = jnp.asarray([[0.0, 1.0, 0.2, 0.65, 0.08, 1.2, 1.0]])
    a = rules.pension_rule(env, None, pension_obs, p)
    r = np.asarray(p.pension_range)
    assert r[0] + (float(a[0, 0]) + 1) / 2 * (r[1] - r[0]) == pytest.approx(65.0, abs=1e-4)
    assert r[2] + (float(a[0, 1]) + 1) / 2 * (r[3] - r[2]) == pytest.approx(0.14, abs=1e-6)
    # commercial bank: lending i + 8% + 2% rr, deposit i - 1% + 2% rr
    a = rules.bank_rule(env, None, jnp.asarray([[0.03, 0.1, 0, 0, 0, 0]]), p)
    lend = p.lending_range[0] + (a[0, 0] + 1) / 2 * (p.lending_range[1] - p.lending_range[0])
    dep = p.deposit_range[0] + (a[0, 1] + 1) / 2 * (p.deposit_range[1] - p.deposit_range[0])
    assert float(lend) == pytest.approx(0.112, abs=1e-6) and float(dep) == pytest.approx(0.022, abs=1e-6)
    # households: saving by age band (mean over many draws), hours around half of h_max
    obs = jnp.zeros((1000, env.roles["household"].observation_space.shape[0])).at[:, -1].set(0.30)  # age 30
    a = rules.household_rule(env, jax.random.key(0), obs, p)
    save = p.save_range[0] + (a[:, 0] + 1) / 2 * (p.save_range[1] - p.save_range[0])
    assert float(jnp.mean(save)) == pytest.approx(0.30, abs=0.02)
    assert float(jnp.mean((a[:, 1] + 1) / 2)) == pytest.approx(0.5, abs=0.03)


@pytest.mark.slow  # two economies stepped eagerly (~17 s)
def test_inequality_computes_the_years_ginis_as_econgyms_step_does():
    """``inequality=True`` reports the year's wealth and income Ginis on a task whose metric
    is not a Gini (for speed comparisons: EconGym's step always computes them; their
    formula: ``test_econgym.py::test_gini_is_econgyms_formula``); without it, -1; nothing
    else changes."""

    def year(**kw):
        env = EconGymTask("optimal_tax", num_households=16, horizon=3, households="rule", **kw)
        params = env.default_params()
        state, _ = env.reset(jax.random.key(0), params)
        acts = {r: jnp.zeros((role.num_agents,) + role.action_space.shape) for r, role in env.roles.items()}
        return env.step(jax.random.key(1), state, acts, params)[1].info

    off, on = year(), year(inequality=True)
    assert float(off["wealth_gini"]) == -1.0 and float(off["income_gini"]) == -1.0
    assert 0.0 < float(on["wealth_gini"]) < 1.0 and 0.0 < float(on["income_gini"]) < 1.0
    for k in off:
        if k not in ("wealth_gini", "income_gini"):
            np.testing.assert_array_equal(np.asarray(on[k]), np.asarray(off[k]), err_msg=k)

"""The optimal tax schedule against best-responding workers (``taxation_optimum``): the
best response against a brute-force search through the environment itself, the
welfare against the env's own welfare, the gradient against finite differences, and
the optimum against Saez, the best flat rate and US federal under the same evaluation.
Small economies (2 x 64 workers) so the whole file runs in seconds."""

from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxagents_environments.economy import brackets, policies
from jaxagents_environments.economy import taxation_optimum as topt
from jaxagents_environments.economy.taxation import Taxation

N, E = 64, 2
SCHEDULES = [np.array(r, np.float32) for r in ([0.3, 0.55, 0.7], [0.6, 0.2, 0.9], [0.0, 0.0, 0.0], [0.95, 0.5, 1.0])]


@pytest.fixture(scope="module")
def eco():
    # the learned planner's economy (ippo_taxation.yaml): hours respond to rates
    env = Taxation(num_workers=N, brackets="three", gini_bins=0)
    params = env.default_params().replace(labour_cost=jnp.float32(0.01), income_unit=jnp.float32(1e5))
    keys = jax.random.split(jax.random.key(3), E)
    skills = jax.vmap(lambda k: env.reset(k, params)[0].skills)(keys)

    def play(rates, hour_idx):
        """One planner step that keeps ``rates``, then one worker step with ``hour_idx``."""
        state, _ = env.reset_from_skills(skills[0], params.replace(initial_rates=rates))
        keep = jnp.full((1, 3), 2, jnp.int32)  # rate delta 0
        state, _ = env.step(jax.random.key(0), state, {"worker": jnp.zeros(N, jnp.int32), "planner": keep},
                            params)
        return env.step(jax.random.key(1), state, {"worker": hour_idx, "planner": keep}, params)

    lv = env.hour_levels
    return SimpleNamespace(
        env=env, params=params, skills=skills, cut=params.cutoffs, levels=lv,
        play=jax.jit(play),
        all_levels=jax.jit(jax.vmap(lambda r, k: play(r, jnp.full(N, k, jnp.int32))[1], in_axes=(None, 0))),
        exact=jax.jit(lambda r: topt.exact_hours(skills[0], r, params.cutoffs, params, lv)),
        welfare=jax.jit(lambda r: topt.welfare(r, skills, params.cutoffs, params, lv)),
        temp=0.3 * topt.step_pay(skills, params, lv),
    )


@pytest.mark.parametrize("rates", SCHEDULES, ids=lambda r: "/".join(f"{x:g}" for x in r))
def test_best_response_is_the_brute_force_argmax_of_env_rewards(eco, rates):
    ts = eco.all_levels(jnp.asarray(rates), jnp.arange(len(eco.levels)))  # every worker plays level k
    # the rebate depends on what everyone plays; it adds the same to every option of a
    # quasi-linear worker, so take it out before comparing options
    u = np.asarray(ts.reward["worker"]) - np.asarray(ts.info["rebate"])[:, None] / 1e5  # [L, N]
    brute = eco.levels[np.argmax(u, axis=0)]
    np.testing.assert_array_equal(np.asarray(eco.exact(jnp.asarray(rates))), brute)
    soft = topt.soft_hours(eco.skills[0], jnp.asarray(rates), eco.cut, eco.params, eco.levels, 1e-6)
    np.testing.assert_allclose(np.asarray(soft), brute, atol=1e-3)  # the relaxation's cold limit


@pytest.mark.parametrize("rates", SCHEDULES[:2], ids=["increasing", "non-monotone"])
def test_welfare_is_what_the_env_pays_best_responding_workers(eco, rates):
    hours = np.asarray(eco.exact(jnp.asarray(rates)))
    idx = jnp.asarray(np.rint(hours / 10).astype(np.int32))
    _, ts = eco.play(jnp.asarray(rates), idx)
    ours = topt.evaluate(jnp.asarray(rates), eco.skills[:1], eco.cut, eco.params, eco.levels)
    assert float(ours["welfare"]) == pytest.approx(float(ts.info["welfare"]), rel=1e-5)
    assert float(ours["gini"]) == pytest.approx(float(ts.info["gini"]), abs=1e-6)
    assert float(ours["utilitarian"]) == pytest.approx(float(ts.info["mean_utility"]), rel=1e-5)


def test_relaxed_welfare_gradient_matches_finite_differences(eco):
    f = jax.jit(lambda r: topt.welfare(r, eco.skills, eco.cut, eco.params, eco.levels, temperature=eco.temp))
    r0 = jnp.asarray([0.35, 0.55, 0.7])
    g = np.asarray(jax.jit(jax.grad(f))(r0))
    h = 1e-3
    fd = np.array([(float(f(r0.at[b].add(h))) - float(f(r0.at[b].add(-h)))) / (2 * h) for b in range(3)])
    assert np.abs(g).max() > 1e-3  # not a flat spot
    np.testing.assert_allclose(g, fd, rtol=2e-2, atol=2e-3)
    d = np.array([0.6, -0.3, 0.74], np.float32)  # and along a direction mixing the brackets
    fd_d = (float(f(r0 + h * d)) - float(f(r0 - h * d))) / (2 * h)
    assert float(g @ d) == pytest.approx(fd_d, rel=2e-2, abs=2e-3)


@pytest.mark.slow  # (10-20 s: the default suite keeps its 10 minutes)
def test_optimum_beats_saez_best_flat_and_us_federal(eco):
    p, lv, skills = eco.params, eco.levels, eco.skills
    run = topt.optimise(jax.random.key(0), skills, eco.cut, p, lv, restarts=3, steps=80)
    k = int(jnp.argmax(run.welfare))
    rates, best = topt.polish(run.rates[k], skills, eco.cut, p, lv, step_sizes=(0.01,))
    best = float(best)
    assert best >= float(run.welfare[k]) >= float(eco.welfare(run.init[k]))
    assert best == pytest.approx(float(eco.welfare(rates)), abs=1e-6)  # reported value is the exact one
    flat_grid = jnp.linspace(0.0, 1.0, 101)[:, None]
    best_flat = float(jnp.max(topt.search(flat_grid, skills, jnp.zeros(1), p, lv)))
    saez = jax.vmap(lambda s: policies.saez_fixed_point(s, eco.cut, p, iterations=10))(skills).mean(0)
    us_cut = brackets.cutoffs_of("us_federal")
    us = float(jax.jit(lambda r: topt.welfare(r, skills, us_cut, p, lv))(policies.us_federal_rates()))
    assert best >= best_flat - 1e-6  # a flat tax is a three-bracket schedule
    assert best > float(eco.welfare(saez))
    assert best > us

"""Scripted baselines: Saez rates against an independent loop implementation, closed-form
best responses against brute-force search, elasticity estimates against known values."""

from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats

from jaxagents_environments.economy import brackets, policies, skills
from jaxagents_environments.economy.taxation import Taxation

US = np.array(brackets.BRACKET_SETS["us_federal"])
THREE = np.array(brackets.BRACKET_SETS["three"])


def saez_reference(incomes, cutoffs, e, welfare, m=16, h=0.1):
    """The Saez schedule of the policies docstring, written as explicit loops in float64."""
    z = [float(v) for v in incomes]
    n = len(z)
    w = [1.0 / max(v, 1.0) if welfare == "inverse_income" else 1.0 for v in z]
    mean_w = sum(w) / n
    g = [wi / mean_w for wi in w]

    def share_below(x):
        return sum(1 for v in z if v < x) / n

    rates = []
    for b in range(len(cutoffs) - 1):
        taus = []
        for k in range(m):
            x = cutoffs[b] + (k + 0.5) / m * (cutoffs[b + 1] - cutoffs[b])
            at_or_above = [gi for v, gi in zip(z, g) if v >= x]
            if not at_or_above:
                taus.append(0.0)
                continue
            survival = len(at_or_above) / n
            a = (share_below(x * np.exp(h)) - share_below(x * np.exp(-h))) / (2 * h * survival)
            big_g = sum(at_or_above) / len(at_or_above)
            num = max(1.0 - big_g, 0.0)
            taus.append(min(max(num / (num + a * e), 0.0), 1.0) if num + a * e > 0 else 0.0)
        rates.append(sum(taus) / m)
    top = cutoffs[-1]
    above = [(v, gi) for v, gi in zip(z, g) if v > top]
    if not above:
        rates.append(0.0)
    else:
        zbar = sum(v for v, _ in above) / len(above)
        a = zbar / (zbar - top)
        big_g = sum(gi * (v - top) for v, gi in above) / sum(v - top for v, _ in above)
        num = max(1.0 - big_g, 0.0)
        rates.append(min(num / (num + a * e), 1.0))
    return np.array(rates)


@pytest.fixture(scope="module")
def income_sample():
    """Incomes of 500 GB2 skills (the US fit) working between 0 and 100 hours (a fixed sample)."""
    rng = np.random.default_rng(0)
    v = 72_402.78 * scipy.stats.betaprime(0.48652, 1.14104).rvs(500, random_state=rng) ** (1 / 2.0721) / 40
    hours = rng.uniform(0, 100, 500)
    hours[:20] = 0.0  # some non-workers
    return (v * hours).astype(np.float32)


saez = jax.jit(policies.saez_rates, static_argnames=("welfare", "points_per_bracket", "bandwidth"))


@jax.jit
def saez_both(incomes, cutoffs, e):
    """Both welfare weightings in one program (one compile per shape)."""
    return {w: policies.saez_rates(incomes, cutoffs, e, w) for w in policies.WELFARE_WEIGHTS}


@pytest.mark.parametrize("cutoffs", [US, THREE, np.array([0.0])], ids=["us_federal", "three", "flat"])
def test_saez_rates_match_independent_loops(income_sample, cutoffs):
    for e in (0.4, 0.25):
        got = saez_both(income_sample, cutoffs.astype(np.float32), e)
        for welfare in policies.WELFARE_WEIGHTS:
            want = saez_reference(income_sample, cutoffs, e, welfare)
            np.testing.assert_allclose(np.asarray(got[welfare]), want, atol=2e-4)
        # equal weights: G = 1 everywhere, nothing to redistribute
        np.testing.assert_allclose(np.asarray(got["utilitarian"]), 0.0, atol=1e-6)
        assert np.all(np.asarray(got["inverse_income"]) > 0.05)


def test_saez_closed_forms():
    rng = np.random.default_rng(3)
    n, e = 20_000, 0.4
    # Pareto(alpha) incomes above the top cutoff: a = zbar/(zbar - c) -> alpha
    alpha = 3.0
    z = (100_000.0 * (1 - rng.random(n)) ** (-1 / alpha)).astype(np.float32)
    cut = np.array([0.0, 100_000.0], np.float32)
    top = float(saez(z, cut, e, "inverse_income")[-1])
    w = 1 / z.astype(np.float64)
    g = w / w.mean()
    gbar = np.sum(g * (z - 1e5)) / np.sum(z - 1e5)
    assert top == pytest.approx((1 - gbar) / (1 - gbar + alpha * e), abs=0.01)
    # one bracket: the optimal linear tax (1 - gbar) / (1 - gbar + e), gbar income-weighted
    z = rng.lognormal(10, 1, n).astype(np.float32)
    g = (1 / z.astype(np.float64)) / np.mean(1 / z.astype(np.float64))
    gbar = np.sum(g * z) / np.sum(z)
    assert float(saez(z, np.zeros(1, np.float32), e, "inverse_income")[0]) == pytest.approx(
        (1 - gbar) / (1 - gbar + e), rel=1e-4)
    # nobody above a cutoff: zero rate
    z = np.minimum(z, np.float32(1e6))
    assert float(saez(z, np.array([0.0, 2e6], np.float32), e, "inverse_income")[-1]) == 0.0


@pytest.fixture(scope="module")
def best_hours():
    return jax.jit(policies.best_response_hours, static_argnames=("max_hours",))


def test_elasticity_estimates(best_hours):
    params = Taxation(num_workers=8, brackets="flat").default_params()
    v = np.linspace(5, 200, 40).astype(np.float32)  # interior: nobody reaches 100 hours
    flat = np.zeros(1, np.float32)
    incomes, marginal = [], []
    for rate in (0.2, 0.45):
        hours = np.asarray(best_hours(v, np.array([rate], np.float32), flat, params, 100.0, 0.0))
        assert 0 < hours.min() and hours.max() < 100
        incomes.append(v * hours)
        marginal.append(np.full_like(v, rate))
    # quasi-linear utility with delta = 3.5: elasticity 1/(delta - 1) = 0.4 exactly
    within = float(policies.estimate_elasticity(np.stack(incomes), np.stack(marginal), within=True))
    assert within == pytest.approx(0.4, abs=1e-3)
    rng = np.random.default_rng(0)
    tau = rng.uniform(0, 0.8, 5000)
    z = np.exp(9.0 + 0.7 * np.log(1 - tau) + 0.05 * rng.normal(size=5000))
    assert float(policies.estimate_elasticity(z, tau)) == pytest.approx(0.7, abs=0.02)
    assert float(policies.estimate_elasticity(z, np.full(5000, 0.3), fallback=0.4)) == pytest.approx(0.4)


@pytest.mark.parametrize("utility", ["quasi_linear", "isoelastic"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_closed_form_best_response_beats_brute_force(ref, best_hours, utility, seed):
    rng = np.random.default_rng(seed)
    env = Taxation(num_workers=8, brackets="us_federal", utility=utility)
    params = env.default_params()
    v = np.exp(rng.uniform(np.log(5), np.log(20_000), 40)).astype(np.float32)
    rates = rng.uniform(0, 1, 7).astype(np.float32)  # non-monotone schedules too
    if seed == 2:
        rates[3] = 1.0  # a 100% bracket
    rebate = np.float32(rng.uniform(0, 30_000))
    hours = np.asarray(best_hours(v, rates, US.astype(np.float32), params, 100.0, rebate), np.float64)
    assert np.all((hours >= 0) & (hours <= 100))

    def utility_of(h):
        z = v.astype(np.float64)[:, None] * h
        post = z - ref.tax(z, rates.astype(np.float64), US) + float(rebate)
        return ref.utility(post, np.broadcast_to(h, z.shape), utility)

    grid = np.linspace(0, 100, 100_001)[None, :]
    best_grid = utility_of(grid).max(axis=1)
    ours = utility_of(hours[:, None])[:, 0]
    assert np.all(ours >= best_grid - 1e-4 - 1e-6 * np.abs(best_grid)), np.max(best_grid - ours)
    # and it is the optimum, not just as good as a grid point: near a grid maximiser's value
    assert np.all(ours <= best_grid + 0.05)


def test_best_response_levels_are_the_grid_argmax(ref):
    rng = np.random.default_rng(5)
    env = Taxation(num_workers=8, brackets="us_federal", utility="isoelastic")
    params = env.default_params()
    v = np.exp(rng.uniform(np.log(5), np.log(20_000), 64)).astype(np.float32)
    rates = rng.uniform(0, 1, 7).astype(np.float32)
    idx = np.asarray(policies.best_response_levels(v, rates, US, params, env.hour_levels, 5000.0))
    h = env.hour_levels.astype(np.float64)[None, :]
    z = v.astype(np.float64)[:, None] * h
    u = ref.utility(z - ref.tax(z, rates.astype(np.float64), US) + 5000.0,
                          np.broadcast_to(h, z.shape), "isoelastic")
    np.testing.assert_allclose(u[np.arange(64), idx], u.max(axis=1), rtol=1e-6, atol=1e-6)


@pytest.fixture(scope="module")
def equilibrium():
    return jax.jit(policies.equilibrium)


def test_equilibrium_rebate_is_a_fixed_point(ref, equilibrium):
    params = Taxation(num_workers=8, brackets="three", utility="isoelastic").default_params()
    v = np.exp(np.random.default_rng(1).uniform(np.log(5), np.log(20_000), 500)).astype(np.float32)
    rates = np.array([0.3, 0.4, 0.5], np.float32)
    hours, rebate = equilibrium(v, rates, THREE, params)
    implied = ref.tax(v * np.asarray(hours, np.float64), rates, THREE).mean()
    assert float(rebate) == pytest.approx(implied, rel=1e-3)
    assert 0 < float(rebate) < implied * 1.01 and np.ptp(np.asarray(hours)) > 10  # income effects at work


@pytest.mark.slow
def test_saez_fixed_point_is_a_fixed_point(equilibrium):
    params = Taxation(num_workers=8, brackets="three").default_params()
    v = np.exp(np.random.default_rng(1).uniform(np.log(5), np.log(20_000), 500)).astype(np.float32)
    fixed = np.asarray(jax.jit(policies.saez_fixed_point)(v, THREE, params))
    h, _ = equilibrium(v, fixed, THREE, params)
    again = np.asarray(saez(v * np.asarray(h), THREE.astype(np.float32), 0.4, "inverse_income"))
    np.testing.assert_allclose(again, fixed, atol=0.02)


def test_planner_actions_towards_targets():
    env = Taxation(num_workers=4, brackets="us_federal")
    params = env.default_params()
    state = SimpleNamespace(rates=jnp.full(7, 0.5))  # all the planner helpers read
    target = np.array([0.1, 0.44, 0.5, 0.62, 0.9, 1.0, 0.0])
    np.testing.assert_array_equal(policies.planner_actions_towards(env, state, params, target), [[0, 1, 2, 3, 4, 4, 0]])
    rates_env = Taxation(num_workers=4, brackets="us_federal", planner_action="rates")
    np.testing.assert_allclose(policies.planner_actions_towards(rates_env, state, params, target), [target], atol=1e-7)
    np.testing.assert_allclose(policies.us_federal_rates(), [0.10, 0.12, 0.22, 0.24, 0.32, 0.35, 0.37])
    np.testing.assert_allclose(policies.flat_rates(0.25, 3), 0.25)
    with pytest.raises(ValueError, match="rate"):
        policies.flat_rates(1.5, 3)
    with pytest.raises(ValueError, match="elasticity"):
        policies.saez_rates(np.ones(4), US, elasticity=0.0)
    with pytest.raises(ValueError, match="welfare"):
        policies.saez_rates(np.ones(4), US, welfare="rawlsian")
    with pytest.raises(ValueError, match="planner"):
        policies.scripted_actions(env, state, params, planner="federal")
    assert skills.SKILL_DISTRIBUTIONS == ("gb2", "pareto", "uniform")


def test_scripted_rollouts_reach_their_schedules():
    env = Taxation(num_workers=64, brackets="us_federal", period_length=2, num_periods=4)
    params = env.default_params()

    @jax.jit
    def rollout(key, target):
        state, _ = env.reset(key, params)

        def body(state, k):
            us = policies.scripted_actions(env, state, params, planner=target)
            saez_plan = policies.scripted_actions(env, state, params, planner="saez")["planner"]
            state, ts = env.step(k, state, us, params)
            return state, (ts.reward["worker"], saez_plan)

        return jax.lax.scan(body, state, jax.random.split(key, 12))

    state, (rewards, saez_plans) = rollout(jax.random.key(0), policies.us_federal_rates())
    np.testing.assert_allclose(np.asarray(state.rates), policies.us_federal_rates(), atol=0.05)
    assert np.all(np.isfinite(np.asarray(rewards)))
    assert np.all((np.asarray(saez_plans) >= 0) & (np.asarray(saez_plans) < 5))
    # before anyone has worked, Saez plans from best-response incomes, not from zeros
    # (which would cut every rate: delta index 0, -20 points, in every bracket)
    assert np.any(np.asarray(saez_plans)[0] > 0)
    # the workers best-respond: their hours are the grid argmax given the last rebate
    idx = policies.best_response_levels(state.skills, state.rates, US, params, env.hour_levels, state.rebate)
    np.testing.assert_allclose(np.asarray(state.hours), env.hour_levels[np.asarray(idx)])

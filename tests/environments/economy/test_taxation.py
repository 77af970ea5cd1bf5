"""The taxation game: tax schedule, rebates, timing, rewards, validation, many economies.

References are written independently of the module: the tax with the spec's clip form
in float64 loops, utilities in numpy, skill distributions from scipy.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from jaxagents_environments.economy import brackets, skills
from jaxagents_environments.economy.taxation import SWFS, Taxation

N = 16
US = np.array(brackets.BRACKET_SETS["us_federal"])
B = len(US)
HOLD = 2  # index of the 0.0 delta in the default rate deltas


@pytest.fixture(scope="module")
def env():
    # the binned Gini (what economies above 256 workers use); the exact one is checked below
    return Taxation(num_workers=N, brackets="us_federal", period_length=3, num_periods=4, gini_bins=32)


@pytest.fixture(scope="module")
def step(env):
    return jax.jit(env.step)


@pytest.fixture(scope="module")
def reset(env):
    return jax.jit(env.reset)


@pytest.fixture(scope="module")
def reset_from(env):
    return jax.jit(env.reset_from_skills)


@pytest.fixture(scope="module")
def one_worker_step(env, step, reset_from):
    """From given skills and rates: a planner step that holds the rates, then one
    worker step with the given hour indices (the module's compiled reset and step)."""

    def run(skills_, rates, hours_idx, params):
        params = params.replace(initial_rates=jnp.asarray(rates, jnp.float32))
        state, _ = reset_from(jnp.asarray(skills_, jnp.float32), params)
        hold = {"worker": jnp.zeros(N, jnp.int32), "planner": jnp.full((1, B), HOLD, jnp.int32)}
        state, _ = step(jax.random.key(0), state, hold, params)
        return step(jax.random.key(1), state, {**hold, "worker": jnp.asarray(hours_idx, jnp.int32)}, params)

    return run


# --------------------------------------------------------------------------- the schedule
@settings(max_examples=40, deadline=None)
@given(
    widths=hnp.arrays(np.float64, B - 1, elements=st.floats(1.0, 1e5)),
    rates=hnp.arrays(np.float64, B, elements=st.floats(0, 1)),
    incomes=hnp.arrays(np.float64, 32, elements=st.floats(0, 1e6)),
)
def test_tax_and_marginal_rate_match_the_spec(ref, widths, rates, incomes):
    cutoffs = np.concatenate([[0.0], np.cumsum(widths)])
    z = incomes.astype(np.float32)
    got = np.asarray(_tax(z, rates.astype(np.float32), cutoffs.astype(np.float32)))
    np.testing.assert_allclose(got, ref.tax(z, rates, cutoffs), rtol=1e-5, atol=0.05)
    idx = np.array([np.sum(cutoffs[1:] <= v) for v in z.astype(np.float64)])
    got_idx = np.asarray(_bracket(z, cutoffs.astype(np.float32)))
    # float32 cutoffs may round differently exactly at a boundary: compare off-boundary incomes
    away = np.min(np.abs(z[:, None] - cutoffs[None, :]), axis=1) > 1e-2 * np.maximum(z, 1)
    np.testing.assert_array_equal(got_idx[away], idx[away])
    marginal = np.asarray(_marginal(z, rates.astype(np.float32), cutoffs.astype(np.float32)))
    np.testing.assert_allclose(marginal[away], rates[idx][away], atol=1e-6)


_tax = jax.jit(brackets.tax)
_bracket = jax.jit(brackets.bracket_index)
_marginal = jax.jit(brackets.marginal_rate)


def test_tax_at_cutoffs_and_named_sets(ref):
    rates = np.array(brackets.US_FEDERAL_2024_RATES)
    np.testing.assert_allclose(brackets.tax_at_cutoffs(rates, US), ref.tax(US, rates, US), rtol=1e-6)
    # 2024 single filer owes 1160 + 4266 + 11742.5 = 17168.5 on 100,525
    assert float(brackets.tax(jnp.float32(100_525.0), rates, US)) == pytest.approx(17_168.5, rel=1e-6)
    assert brackets.cutoffs_of("three").tolist() == [0.0, 90_000.0, 159_100.0]
    with pytest.raises(ValueError, match="strictly increasing"):
        brackets.cutoffs_of((0.0, 5.0, 3.0))
    with pytest.raises(ValueError, match="must be 0"):
        brackets.cutoffs_of((10.0, 20.0))


# --------------------------------------------------------------------------- rebates and rewards
@settings(max_examples=25, deadline=None)
@given(
    skill=hnp.arrays(np.float64, N, elements=st.floats(1.0, 20_000.0)),
    rates=hnp.arrays(np.float64, B, elements=st.floats(0, 1)),
    hours_idx=hnp.arrays(np.int32, N, elements=st.integers(0, 10)),
)
def test_taxes_equal_rebates_and_rewards_match_reference(ref, env, one_worker_step, skill, rates, hours_idx):
    params = env.default_params()
    state, ts = one_worker_step(skill.astype(np.float32), rates.astype(np.float32), hours_idx, params)
    info = jax.device_get(ts.info)
    rates32 = rates.astype(np.float32).astype(np.float64)
    hours = hours_idx * 10.0
    z = skill.astype(np.float32).astype(np.float64) * hours
    tax = ref.tax(z, rates32, US)
    rebate = tax.sum() / N
    post = z - tax + rebate
    # every dollar of tax comes back: N * rebate == revenue, sum(post-tax) == GDP
    assert float(info["tax_revenue"]) == pytest.approx(N * float(info["rebate"]), rel=1e-6, abs=1e-3)
    assert float(info["tax_revenue"]) == pytest.approx(tax.sum(), rel=1e-5, abs=0.05)
    assert float(info["gdp"]) == pytest.approx(z.sum(), rel=1e-6)
    reward = np.asarray(ts.reward["worker"], np.float64)
    recovered_post = 1000.0 * (reward + 0.0005 / 1000.0 * hours**3.5)
    assert recovered_post.sum() == pytest.approx(z.sum(), rel=1e-4, abs=1.0)
    np.testing.assert_allclose(reward, ref.utility(post, hours, "quasi_linear"), rtol=1e-4, atol=2e-3)
    np.testing.assert_allclose(np.asarray(state.hours), hours)
    assert float(info["gini"]) == pytest.approx(gini_pairs(post), abs=3e-3)


def test_isoelastic_utility_and_welfare_functions(ref, env, one_worker_step):
    rng = np.random.default_rng(0)
    skill = rng.uniform(5, 3000, N).astype(np.float32)
    rates = rng.uniform(0, 1, B).astype(np.float32)
    hours_idx = rng.integers(0, 11, N).astype(np.int32)
    hours = hours_idx * 10.0
    z = skill.astype(np.float64) * hours
    tax = ref.tax(z, rates.astype(np.float64), US)
    post = z - tax + tax.sum() / N
    base = env.default_params()
    for util in ("quasi_linear", "isoelastic"):
        u = ref.utility(post, hours, util)
        for swf in SWFS:
            params = base.replace(utility=jnp.int32(["quasi_linear", "isoelastic"].index(util)),
                                  swf=jnp.int32(SWFS.index(swf)))
            _, ts = one_worker_step(skill, rates, hours_idx, params)
            np.testing.assert_allclose(np.asarray(ts.reward["worker"]), u, rtol=1e-4, atol=2e-3)
            assert float(ts.info["gini"]) == pytest.approx(gini_pairs(post), abs=3e-3)
            expected = {
                "equality_times_productivity": (1 - float(ts.info["gini"])) * post.mean() / 1000,
                "utilitarian": u.mean(),
                "inverse_income": np.mean(u / np.maximum(z / 1000.0, 1.0)),
            }[swf]
            assert float(ts.info["welfare"]) == pytest.approx(expected, rel=1e-4, abs=1e-4), (util, swf)


# --------------------------------------------------------------------------- timing
def test_two_timescales_rewards_and_truncation(env, step, reset):
    params = env.default_params()
    k, periods = 3, 4
    state, ts = reset(jax.random.key(0), params)
    rng = np.random.default_rng(1)
    history = []
    for t in range(periods * (k + 1)):
        assert bool(ts.active["planner"][0]) == (t % (k + 1) == 0)
        assert np.all(ts.active["worker"] == (t % (k + 1) != 0))
        acts = {"worker": jnp.asarray(rng.integers(0, 11, N), jnp.int32),
                "planner": jnp.asarray(rng.integers(0, 5, (1, B)), jnp.int32)}
        state, ts = step(jax.random.key(t), state, acts, params)
        history.append(jax.device_get(ts))
    welfare = np.array([h.info["welfare"] for h in history])
    worker_step = np.array([h.info["worker_step"] for h in history])
    period_end = np.array([h.info["period_end"] for h in history])
    planner_reward = np.array([h.reward["planner"][0] for h in history])
    assert worker_step.tolist() == [t % (k + 1) != 0 for t in range(len(history))]
    assert period_end.tolist() == [t % (k + 1) == k for t in range(len(history))]
    for p in range(periods):
        steps = slice(p * (k + 1) + 1, (p + 1) * (k + 1))
        assert planner_reward[(p + 1) * (k + 1) - 1] == pytest.approx(welfare[steps].mean(), rel=1e-5)
        # the planner then observes the period's mean statistics (gini at index 2B-1+2)
        gini = np.mean([h.info["gini"] for h in history[steps]])
        assert history[(p + 1) * (k + 1) - 1].obs["planner"][0, 2 * B - 1 + 2] == pytest.approx(gini, rel=1e-5)
    assert np.all(planner_reward[~period_end] == 0)
    for h in history:  # nobody works on planner steps
        if not h.info["worker_step"]:
            assert np.all(h.reward["worker"] == 0) and h.info["gdp"] == 0
    truncated = [bool(h.truncated) for h in history]
    assert truncated == [False] * (len(history) - 1) + [True]
    assert not any(bool(h.terminated) for h in history)


def test_planner_delta_actions_clip_and_flag(env, step, reset):
    params = env.default_params()
    state, _ = reset(jax.random.key(0), params)
    work = {"worker": jnp.zeros(N, jnp.int32), "planner": jnp.full((1, B), HOLD, jnp.int32)}
    plan = {**work, "planner": jnp.array([[0, 1, 2, 3, 4, 4, 7]], jnp.int32)}
    state, ts = step(jax.random.key(0), state, plan, params)
    np.testing.assert_allclose(np.asarray(state.rates), [0.3, 0.4, 0.5, 0.6, 0.7, 0.7, 0.7], atol=1e-6)
    assert bool(ts.info["illegal_action"])  # index 7 clipped to +20 points
    for _ in range(3):  # the planner's actions are ignored on worker steps, and not flagged
        state, ts = step(jax.random.key(0), state, plan, params)
        assert not bool(ts.info["illegal_action"])
    np.testing.assert_allclose(np.asarray(state.rates), [0.3, 0.4, 0.5, 0.6, 0.7, 0.7, 0.7], atol=1e-6)
    up = {**work, "planner": jnp.full((1, B), 4, jnp.int32)}
    state, _ = step(jax.random.key(0), state, up, params)  # t = 4: a planner step
    np.testing.assert_allclose(np.asarray(state.rates), [0.5, 0.6, 0.7, 0.8, 0.9, 0.9, 0.9], atol=1e-6)
    for _ in range(12):  # three more planner steps (stepping past the end is allowed)
        state, _ = step(jax.random.key(0), state, up, params)
    np.testing.assert_allclose(np.asarray(state.rates), 1.0)  # capped at 100%


def test_out_of_range_hours_are_clipped_and_flagged(env, one_worker_step):
    params = env.default_params()
    skill = np.full(N, 100.0, np.float32)
    rates = np.zeros(B, np.float32)
    idx = np.array([15, -3] + [5] * (N - 2), np.int32)
    state, ts = one_worker_step(skill, rates, idx, params)
    np.testing.assert_allclose(np.asarray(state.hours)[:3], [100.0, 0.0, 50.0])
    assert bool(ts.info["illegal_action"])
    _, ts = one_worker_step(skill, rates, np.clip(idx, 0, 10), params)
    assert not bool(ts.info["illegal_action"])


def test_continuous_hours_and_rate_actions(ref):
    env = Taxation(num_workers=4, brackets="three", continuous_hours=True, planner_action="rates",
                   period_length=2, num_periods=2)
    assert env.roles["worker"].action_space.shape == (1,) and env.roles["planner"].action_space.shape == (3,)
    params = env.default_params()
    worker = jnp.array([[150.0], [jnp.nan], [-5.0], [37.5]])

    @jax.jit
    def run(params):
        state, _ = env.reset_from_skills(jnp.array([10.0, 20.0, 30.0, 40.0]), params)
        plan = {"worker": worker, "planner": jnp.array([[0.3, 1.5, jnp.nan]])}
        state, ts1 = env.step(jax.random.key(0), state, plan, params)
        rates = state.rates
        state, ts = env.step(jax.random.key(1), state, {"worker": worker, "planner": jnp.zeros((1, 3))}, params)
        return rates, ts1.info["illegal_action"], state, ts

    rates, flagged, state, ts = run(params)
    np.testing.assert_allclose(np.asarray(rates), [0.3, 1.0, 0.5])
    assert bool(flagged)
    np.testing.assert_allclose(np.asarray(state.rates), [0.3, 1.0, 0.5])  # the planner is inactive now
    np.testing.assert_allclose(np.asarray(state.hours), [100.0, 0.0, 0.0, 37.5])
    assert bool(ts.info["illegal_action"]) and np.all(np.isfinite(np.asarray(ts.reward["worker"])))
    z = np.array([10.0, 20.0, 30.0, 40.0]) * np.array([100.0, 0.0, 0.0, 37.5])
    tax = ref.tax(z, np.array([0.3, 1.0, 0.5]), brackets.cutoffs_of("three").astype(np.float64))
    post = z - tax + tax.mean()
    np.testing.assert_allclose(np.asarray(ts.reward["worker"]),
                               ref.utility(post, [100.0, 0, 0, 37.5], "quasi_linear"), rtol=1e-5)
    assert env.gini_bins == 0 and float(ts.info["gini"]) == pytest.approx(gini_pairs(post), abs=1e-6)


def test_observations(env, reset_from):
    params = env.default_params()
    skill = np.linspace(5, 500, N).astype(np.float32)
    state, ts = reset_from(skill, params)
    obs = np.asarray(ts.obs["worker"])
    np.testing.assert_allclose(obs[:, 0], np.log(skill * 40 / 1000), rtol=1e-6)
    np.testing.assert_allclose(obs[:, 1], 0.0)
    np.testing.assert_allclose(obs[:, 2:], 0.5)
    planner = np.asarray(ts.obs["planner"][0])
    assert planner.shape == env.roles["planner"].observation_space.shape == (2 * B + 5,)
    np.testing.assert_allclose(planner[:B], 0.5)
    np.testing.assert_allclose(planner[B:2 * B - 1], np.log1p(US[1:] / 1000), rtol=1e-6)
    assert env.global_obs(state, params).shape == env.global_obs_shape


def test_exact_gini_up_to_256_workers():
    assert Taxation(num_workers=256).gini_bins == 0 and Taxation(num_workers=257).gini_bins == 32


def gini_pairs(x):
    x = np.asarray(x, np.float64)
    if x.sum() <= 0:
        return 0.0
    return np.abs(x[:, None] - x[None, :]).sum() / (2 * len(x) * (len(x) - 1) * x.mean())


# --------------------------------------------------------------------------- skills
def test_skill_distributions_match_scipy():
    draw = jax.jit(lambda key, p: skills.sample_incomes(key, 20_000, p))
    p = skills.default_skill_params("gb2")
    y = np.asarray(draw(jax.random.key(0), p), np.float64)
    assert y.min() >= 100.0 and y.max() <= 1e7
    gb2 = scipy.stats.betaprime(0.48652, 1.14104)
    assert scipy.stats.kstest((y / 72_402.78) ** 2.0721, gb2.cdf).pvalue > 1e-3
    # the clip puts F(income_min) of the mass exactly at income_min
    assert np.mean(y <= 100.0 * 1.0001) == pytest.approx(gb2.cdf((100 / 72_402.78) ** 2.0721), abs=3e-3)
    y = np.asarray(draw(jax.random.key(1), skills.default_skill_params("pareto")), np.float64)
    assert scipy.stats.kstest(y, scipy.stats.pareto(b=2.0, scale=30_000.0).cdf).pvalue > 1e-3
    y = np.asarray(draw(jax.random.key(2), skills.default_skill_params("uniform")), np.float64)
    assert scipy.stats.kstest(y, scipy.stats.uniform(10_000.0, 100_000.0).cdf).pvalue > 1e-3
    assert skills.gb2_mean(72_402.78, 2.0721, 0.48652, 1.14104) == pytest.approx(
        72_402.78 * gb2.mean() ** 0 * scipy.stats.betaprime(0.48652, 1.14104).expect(lambda r: r ** (1 / 2.0721)),
        rel=1e-4)


# --------------------------------------------------------------------------- validation
@pytest.mark.parametrize("field, value, match", [
    ("initial_rates", -0.1, "initial_rates"),
    ("initial_rates", 1.2, "initial_rates"),
    ("cutoffs", US[[0, 2, 1, 3, 4, 5, 6]], "strictly increasing"),
    ("cutoffs", US + 50.0, r"cutoffs\[0\] must be 0"),
    ("period_length", 0, "period_length"),
    ("num_periods", 0, "num_periods"),
    ("utility", 2, "utility"),
    ("swf", 3, "swf"),
    ("labour_exponent", 1.0, "labour_exponent"),
    ("income_unit", 0.0, "income_unit"),
    ("rate_deltas", np.array([0, 0, 0, 0, 1.5]), "rate_deltas"),
    ("cutoffs", US[:3], "7 entries"),
])
def test_invalid_params_raise_before_compiling(env, field, value, match):
    params = env.default_params()
    old = getattr(params, field)
    bad = params.replace(**{field: jnp.broadcast_to(jnp.asarray(value, old.dtype), np.shape(value) or old.shape)})
    with pytest.raises(ValueError, match=match):
        env.validate_params(bad)
    with pytest.raises(ValueError, match=match):
        env.reset(jax.random.key(0), bad)  # eager calls check concrete params first


@pytest.mark.parametrize("field, value", [("uniform_low", 0.0), ("gb2_sigma", -1.0), ("income_min", 0.0),
                                          ("income_max", 50.0), ("dist", 3)])
def test_invalid_skill_params(env, field, value):
    params = env.default_params()
    old = getattr(params.skills, field)
    bad = params.replace(skills=params.skills.replace(**{field: jnp.asarray(value, old.dtype)}))
    with pytest.raises(ValueError, match=f"params.skills.{field}"):
        env.validate_params(bad)


def test_non_positive_skills_are_rejected(env):
    for bad in (np.r_[np.ones(N - 1), 0.0], np.r_[np.ones(N - 1), -3.0], np.r_[np.ones(N - 1), np.nan]):
        with pytest.raises(ValueError, match="skills must be finite and > 0"):
            env.reset_from_skills(bad)
    with pytest.raises(ValueError, match="shape"):
        env.reset_from_skills(np.ones(N + 1))


@pytest.mark.parametrize("kwargs, match", [
    (dict(num_workers=0), "num_workers"),
    (dict(brackets="nope"), "brackets"),
    (dict(brackets=(0.0, 5.0, 3.0)), "strictly increasing"),
    (dict(num_hour_levels=1), "num_hour_levels"),
    (dict(planner_action="set"), "planner_action"),
    (dict(utility="log"), "utility"),
    (dict(swf="rawlsian"), "swf"),
    (dict(skill_dist="normal"), "skill_dist"),
    (dict(rate_deltas=(2.0,)), "rate_deltas"),
    (dict(initial_rate=1.5), "initial_rate"),
    (dict(gini_bins=100), "power of two"),
    (dict(period_length=0), "period_length"),
    (dict(max_hours=-1.0), "max_hours"),
])
def test_constructor_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Taxation(**kwargs)


# --------------------------------------------------------------------------- many economies
def test_many_small_economies_vmap_over_params(env, step, reset):
    """Economies with different rates, utilities, welfare functions and skill
    distributions side by side: each equals the same economy run alone."""
    base = env.default_params()
    e, steps = 3, 6
    batched = jax.tree_util.tree_map(lambda x: jnp.stack([x] * e), base)
    batched = batched.replace(
        initial_rates=jnp.stack([jnp.linspace(0.1, 0.9, B), jnp.full(B, 0.5), jnp.linspace(0.9, 0.0, B)]),
        utility=jnp.array([0, 1, 0], jnp.int32),
        swf=jnp.array([0, 1, 2], jnp.int32),
        skills=batched.skills.replace(dist=jnp.array([0, 1, 2], jnp.int32)),
    )
    env.validate_params(batched)  # host checks accept batch axes
    keys = jax.random.split(jax.random.key(0), e)
    rng = np.random.default_rng(0)
    actions = {"worker": jnp.asarray(rng.integers(0, 11, (e, steps, N)), jnp.int32),
               "planner": jnp.asarray(rng.integers(0, 5, (e, steps, 1, B)), jnp.int32)}
    step_keys = jax.random.split(jax.random.key(1), steps)

    def rollout(key, params, acts):
        state, _ = env.reset(key, params)

        def body(state, xs):
            k, a = xs
            state, ts = env.step(k, state, a, params)
            return state, (ts.reward, ts.info["welfare"], state.rates)

        return jax.lax.scan(body, state, (step_keys, acts))[1]

    together = jax.device_get(jax.jit(jax.vmap(rollout))(keys, batched, actions))
    for i in range(e):
        params_i = jax.tree_util.tree_map(lambda x: x[i], batched)
        state, _ = reset(keys[i], params_i)
        for t in range(steps):
            state, ts = step(step_keys[t], state, jax.tree_util.tree_map(lambda x: x[i, t], actions), params_i)
            mine = jax.tree_util.tree_map(lambda x: x[i, t], together)
            alone = jax.device_get((ts.reward, ts.info["welfare"], state.rates))
            jax.tree_util.tree_map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5), mine, alone)
    # different economies really differ
    assert not np.allclose(together[2][0, -1], together[2][2, -1])

"""Invariants of every mean-field environment: mass conservation in both views (property
tests over params and policies), clear errors for bad params and arguments, and the
statistics of the per-agent random numbers."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxagents_environments.meanfield import CrowdModelling, Epidemic, Opinion
from jaxagents.core.rng import agent_uniforms

N, STEPS = 200, 6

ENVS = {
    "crowd_four_rooms": lambda: CrowdModelling(num_agents=N, dims=2, layout="four_rooms", horizon=STEPS),
    "epidemic_seir": lambda: Epidemic(num_agents=N, model="seir", horizon=STEPS),
    "opinion_network": lambda: Opinion(num_agents=N, num_levels=3, num_types=2, graph="regular", degree=4,
                                       horizon=STEPS),
}


def _perturb(env, p, u):
    """Valid params of ``env`` from numbers ``u`` in [0, 1): every rate and weight moves."""
    if isinstance(env, CrowdModelling):
        init = jnp.where(jnp.asarray(~env.forbidden), u[0] + jnp.arange(env.num_states) % 3, 0.0)
        return p.replace(noise=u[0], crowd_aversion=2 * u[1], move_cost=u[2], congestion=u[3] > 0.5,
                         init_dist=jnp.asarray(init / init.sum(), jnp.float32))
    if isinstance(env, Epidemic):
        init = jnp.asarray([1.0, u[4], u[5], u[6]]) + 0.01
        return p.replace(beta=3 * u[0], sigma=u[1], gamma=u[2], omega=u[3], dt=0.1 + u[7],
                         contact=jnp.sort(jnp.asarray(u[:5])), init_dist=init / init.sum())
    types = jnp.asarray([u[0], 1 - u[0]]) * 0.98 + 0.01
    init = jnp.stack([jnp.asarray(u[:3]), jnp.asarray(u[3:6])]) + 0.01
    return p.replace(type_probs=types, init_probs=init / init.sum(1, keepdims=True), noise=u[6],
                     rewire_prob=u[7], preference=2 * jnp.asarray(u[1:3]))


@functools.lru_cache(maxsize=None)
def _program(name):
    """Compiled once per env: a rollout in both views under a random policy table."""
    env = ENVS[name]()

    @jax.jit
    def run(key, u, logits):
        params = _perturb(env, env.default_params(), u)
        policy = jax.nn.softmax(logits, -1)
        k0, k1 = jax.random.split(key)
        state, _ = env.reset(k0, params)
        dstate = env.dist_reset(params)

        def body(carry, k):
            state, dstate = carry
            ka, ks = jax.random.split(k)
            state, ts = env.step(ks, state, env.tabular_actions(ka, state, policy), params)
            dstate, _ = env.dist_step(dstate, policy, params)
            counts = jnp.bincount(env.agent_states(state), length=env.num_states)
            return (state, dstate), (state.hist, counts, ts.info["histogram"], dstate.mu)

        return jax.lax.scan(body, (state, dstate), jax.random.split(k1, STEPS))[1]

    return env, run


@pytest.mark.parametrize("name", sorted(ENVS))
@settings(max_examples=10, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**31 - 1), u=st.lists(st.floats(0.0, 0.999), min_size=8, max_size=8),
       logit_scale=st.floats(0.0, 5.0))
def test_population_mass_is_conserved_every_step(name, seed, u, logit_scale):
    env, run = _program(name)
    logits = logit_scale * jax.random.normal(jax.random.key(seed), (env.num_states, env.num_actions))
    hist, counts, info_hist, mu = jax.device_get(run(jax.random.key(seed), jnp.asarray(u, jnp.float32), logits))
    assert np.all(counts.sum(-1) == N), "agents appeared or vanished"
    np.testing.assert_allclose(hist.sum(-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(hist, counts / N, rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(info_hist, hist)
    assert np.all(mu >= 0)
    np.testing.assert_allclose(mu.sum(-1), 1.0, atol=1e-5)
    if isinstance(env, Opinion):  # types never change: the per-type mass is conserved too
        per_type = counts.reshape(STEPS, env.T, env.K).sum(-1)
        assert np.all(per_type == per_type[0])
    if isinstance(env, CrowdModelling):  # nobody stands on a wall
        assert np.all(counts[:, env.forbidden] == 0)


# ------------------------------------------------------------------------- bad input
BAD_PARAMS = [
    ("epidemic", lambda p: p.replace(beta=jnp.float32(-0.1)), "beta"),
    ("epidemic", lambda p: p.replace(gamma=jnp.float32(np.nan)), "gamma"),
    ("epidemic", lambda p: p.replace(dt=jnp.float32(0.0)), "dt"),
    ("epidemic", lambda p: p.replace(contact=p.contact.at[-1].set(1.5)), "contact"),
    ("epidemic", lambda p: p.replace(init_dist=jnp.asarray([0.5, 0.4, 0.0])), "sum to 1"),
    ("epidemic", lambda p: p.replace(init_dist=jnp.asarray([1.2, -0.2, 0.0])), "non-negative"),
    ("epidemic", lambda p: p.replace(infection_cost=jnp.float32(-1.0)), "infection_cost"),
    ("crowd", lambda p: p.replace(noise=jnp.float32(1.5)), "noise"),
    ("crowd", lambda p: p.replace(move_cost=jnp.float32(-1.0)), "move_cost"),
    ("crowd", lambda p: p.replace(init_dist=p.init_dist * 2), "sum to 1"),
    ("crowd", lambda p: p.replace(init_dist=p.init_dist[:-1]), "init_dist"),
    ("crowd", lambda p: p.replace(congestion=jnp.float32(1.0)), "congestion"),
    ("crowd_walls", lambda p: p.replace(init_dist=jnp.full_like(p.init_dist, 1.0 / p.init_dist.size)), "forbidden"),
    ("opinion", lambda p: p.replace(init_probs=p.init_probs.at[0, 0].set(0.9)), "sum to 1"),
    ("opinion", lambda p: p.replace(type_probs=jnp.asarray([0.7, 0.7])), "type_probs"),
    ("opinion", lambda p: p.replace(preference=jnp.asarray([0.5, 3.0])), "preference"),
    ("opinion", lambda p: p.replace(threshold=jnp.asarray([0.5, -0.1])), "threshold"),
    ("opinion", lambda p: p.replace(switch_cost=jnp.float32(-0.1)), "switch_cost"),
    ("opinion", lambda p: p.replace(noise=jnp.float32(2.0)), "noise"),
]
SMALL = {
    "epidemic": lambda: Epidemic(num_agents=8),
    "crowd": lambda: CrowdModelling(num_agents=8),
    "crowd_walls": lambda: CrowdModelling(num_agents=8, dims=2, layout="four_rooms"),
    "opinion": lambda: Opinion(num_agents=8, num_types=2, num_levels=3),
}


@pytest.mark.parametrize("env_name,bad,match", BAD_PARAMS, ids=[f"{e}-{m}" for e, _, m in BAD_PARAMS])
def test_bad_params_raise_clear_errors(env_name, bad, match):
    env = SMALL[env_name]()
    params = bad(env.default_params())
    with pytest.raises(ValueError, match=match):
        env.validate_params(params)
    with pytest.raises(ValueError, match=match):  # eager calls check too, in both views
        env.reset(jax.random.key(0), params)
    with pytest.raises(ValueError, match=match):
        env.dist_reset(params)


def test_histograms_that_are_not_distributions_are_rejected():
    env = Epidemic(num_agents=8)
    with pytest.raises(ValueError, match="sum to 1"):
        env.dist_state(jnp.asarray([0.5, 0.2, 0.2]))
    with pytest.raises(ValueError, match="non-negative"):
        env.dist_state(jnp.asarray([1.1, -0.1, 0.0]))
    with pytest.raises(ValueError, match="length 3"):
        env.dist_state(jnp.asarray([0.5, 0.5]))
    assert float(env.dist_state(jnp.asarray([0.5, 0.25, 0.25])).mu.sum()) == 1.0


@pytest.mark.parametrize("make,match", [
    (lambda: Epidemic(num_agents=0), "num_agents"),
    (lambda: Epidemic(model="sis"), "model"),
    (lambda: Epidemic(num_levels=1), "num_levels"),
    (lambda: Epidemic(horizon=0), "horizon"),
    (lambda: CrowdModelling(dims=3), "dims"),
    (lambda: CrowdModelling(size=1), "size"),
    (lambda: CrowdModelling(layout="four_rooms"), "dims=2"),
    (lambda: CrowdModelling(dims=2, layout="maze"), "layout"),
    (lambda: CrowdModelling(dims=2, size=4, layout=["....", "...."]), "layout"),
    (lambda: Opinion(num_levels=1), "num_levels"),
    (lambda: Opinion(graph="small_world"), "graph"),
    (lambda: Opinion(num_agents=10, graph="random", degree=10), "degree"),
    (lambda: Opinion(num_agents=9, graph="regular", degree=3), "even"),
    (lambda: Opinion(graph="ring", degree=3), "even"),
    (lambda: Opinion(rng="mt19937"), "rng"),
], ids=lambda x: x if isinstance(x, str) else "")
def test_bad_constructor_arguments_name_the_argument(make, match):
    with pytest.raises(ValueError, match=match):
        make()


# ------------------------------------------------------------------------- random numbers
def test_hash_uniforms_are_uniform_and_independent():
    n = 200_000
    draws = np.asarray(jax.jit(jax.vmap(lambda k: agent_uniforms(k, n, "hash")))(
        jax.random.split(jax.random.key(0), 3)))
    u, v, w = draws
    assert 0.0 <= draws.min() and draws.max() < 1.0
    # chi-square over 64 bins, each replicate: 63 dof, mean 63, sd ~11
    for x in draws:
        counts = np.bincount((x * 64).astype(int), minlength=64)
        chi2 = ((counts - n / 64) ** 2 / (n / 64)).sum()
        assert chi2 < 63 + 5 * 11.2
    # no correlation between steps (same agent, different keys) nor between neighbours
    for a, b in [(u, v), (v, w), (u[:-1], u[1:])]:
        assert abs(np.corrcoef(a, b)[0, 1]) < 5 / np.sqrt(n)
    # pairs of consecutive steps fill the unit square evenly (joint uniformity)
    joint = np.bincount((u * 8).astype(int) * 8 + (v * 8).astype(int), minlength=64)
    assert ((joint - n / 64) ** 2 / (n / 64)).sum() < 63 + 5 * 11.2
    # deterministic given the key, different across keys
    again = np.asarray(agent_uniforms(jax.random.split(jax.random.key(0), 3)[0], n, "hash"))
    np.testing.assert_array_equal(again, u)

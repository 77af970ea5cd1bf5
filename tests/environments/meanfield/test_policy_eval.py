"""policy_eval: agent-view policies tabulated along their own flow, evaluated exactly."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxagents_environments.meanfield import CrowdModelling, Epidemic, solvers
from jaxagents_environments.meanfield.policy_eval import action_probs, policy_exploitability, policy_table


def table_logits_fn(env, table):
    """A 'network' that reads the cell (one-hot) and the time from the observation and
    returns log table[t, s]: it reproduces the tabular policy ``table[H, S, A]``."""
    S, H = env.size, env.horizon

    def fn(obs):
        s = jnp.argmax(obs[:, :S], -1)
        t = jnp.round(obs[:, S] * H).astype(jnp.int32)
        return jnp.log(jnp.maximum(table[t, s], 1e-30))

    return fn


@pytest.fixture(scope="module")
def crowd():
    env = CrowdModelling(num_agents=100)
    params = env.default_params()
    fp = jax.jit(solvers.fictitious_play, static_argnums=(0, 2))(env, params, 5)
    return env, params, fp


def test_observation_table_matches_agent_view(crowd):
    env, params, _ = crowd

    @jax.jit
    def run():
        s0, ts0 = env.reset(jax.random.key(0), params)
        s1, ts1 = env.step(jax.random.key(1), s0, {"agent": jnp.zeros(env.n, jnp.int32)}, params)
        return [(ts.obs["agent"], env.observation_table(s.hist, s.t, params)[s.pos]) for s, ts in ((s0, ts0), (s1, ts1))]

    for obs, table in run():
        np.testing.assert_allclose(np.asarray(obs), np.asarray(table))


def test_tabular_policy_round_trip(crowd):
    env, params, fp = crowd
    pi_table = fp.policy
    fn = table_logits_fn(env, pi_table)

    @jax.jit
    def run():
        ref = (solvers.forward(env, params, pi_table)[0], solvers.exploitability(env, params, pi_table))
        return policy_table(env, params, fn), policy_exploitability(env, params, fn), ref

    (pi, mu), ex, (mu_ref, ex_ref) = run()
    np.testing.assert_allclose(np.asarray(pi), np.asarray(pi_table), atol=1e-5)
    np.testing.assert_allclose(np.asarray(mu), np.asarray(mu_ref), atol=1e-5)
    assert float(ex_ref) > 0.01
    np.testing.assert_allclose(float(ex), float(ex_ref), rtol=1e-4, atol=1e-5)


def test_policy_depending_on_density_follows_its_own_flow(crowd):
    """A policy that moves away from the denser neighbour: each step's table must be
    the policy applied to the flow it generates itself (reference: a Python loop)."""
    env, params, _ = crowd
    init = np.arange(1, env.num_states + 1, dtype=np.float32) ** 2
    params = params.replace(init_dist=jnp.asarray(init / init.sum()), noise=jnp.asarray(0.5))  # not a fixed point

    def fn(obs):  # obs[:, -3:] = density at the cells reached by actions 0, 1, 2
        return -20.0 * obs[:, -3:]

    @jax.jit
    def run():
        d, ref_pi, ref_mu = env.dist_reset(params), [], []
        for t in range(env.horizon):
            ref_mu.append(d.mu)
            ref_pi.append(jax.nn.softmax(fn(env.observation_table(d.mu, t, params)), -1))
            d, _ = env.dist_step(d, ref_pi[-1], params)
        return policy_table(env, params, fn), jnp.stack(ref_pi), jnp.stack(ref_mu + [d.mu])

    (pi, mu), ref_pi, ref_mu = run()
    assert pi.shape == (env.horizon, env.num_states, 3)
    assert float(jnp.abs(pi[1:] - pi[:1]).max()) > 0.01  # the policy does change with the flow
    np.testing.assert_allclose(np.asarray(pi), np.asarray(ref_pi), atol=1e-6)
    np.testing.assert_allclose(np.asarray(mu), np.asarray(ref_mu), atol=1e-6)


def test_greedy_and_masking():
    legal = jnp.array([[True, False, True], [True, True, True]])
    logits = jnp.array([[0.0, 5.0, 1.0], [2.0, 2.0, 1.0]])
    np.testing.assert_allclose(action_probs(logits, legal, "greedy"), [[0, 0, 1], [1, 0, 0]])
    p = action_probs(logits, legal)
    assert float(p[0, 1]) == 0.0 and np.allclose(p.sum(-1), 1.0)
    with pytest.raises(ValueError, match="mode"):
        action_probs(logits, legal, "argmax")


def test_env_without_observation_table():
    env = Epidemic(num_agents=10)
    with pytest.raises(ValueError, match="observation_table"):
        policy_table(env, None, lambda o: o)

"""The agent view converges to the distributional view as the population grows.

Every agent follows the same random time-dependent policy table ``pi[H, S, A]``; the
empirical histogram of ``N`` agents must stay within ``C / sqrt(N)`` (sup over time and
states) of the distributional flow ``solvers.forward`` of the same policy, for every
``N`` with one constant ``C``: a bias, or dynamics that differ between the two views,
would not shrink with ``N``. Interacting populations (epidemic, opinion) are simulated
at two sizes; crowd agents do not interact through the dynamics, so the first ``n``
agents of one large population are an ``n``-agent system and one run gives all sizes.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxagents_environments.meanfield import CrowdModelling, Epidemic, Opinion
from jaxagents_environments.meanfield import solvers

REPLICATES = 4


def random_policy(env, seed=0):
    """A random time-dependent policy, every action with probability >= 0.05."""
    x = np.random.default_rng(seed).gamma(1.0, size=(env.horizon, env.num_states, env.num_actions)) + 0.05
    return jnp.asarray(x / x.sum(-1, keepdims=True), jnp.float32)


def agent_histograms(env, params, policy, key, subsets=None):
    """``f32[R, H+1, S]`` empirical histograms of ``REPLICATES`` independent runs
    (``subsets``: sizes of leading sub-populations, ``f32[R, len, H+1, S]``)."""

    def one(key):
        k0, k1 = jax.random.split(key)
        state, _ = env.reset(k0, params)

        def body(state, xs):
            pi, k = xs
            ka, ks = jax.random.split(k)
            state, _ = env.step(ks, state, env.tabular_actions(ka, state, pi), params)
            return state, env.agent_states(state)

        _, idx = jax.lax.scan(body, state, (policy, jax.random.split(k1, env.horizon)))
        idx = jnp.concatenate([env.agent_states(state)[None], idx])  # [H+1, N]
        if subsets is None:
            return jax.vmap(lambda i: jnp.bincount(i, length=env.num_states) / env.n)(idx)
        return jnp.stack([jax.vmap(lambda i: jnp.bincount(i[:n], length=env.num_states) / n)(idx) for n in subsets])

    return np.asarray(jax.jit(jax.vmap(one))(jax.random.split(key, REPLICATES)))


def sup_errors(hists, mu):
    """Per replicate: ``max_{t,s} |hist - mu|``."""
    return np.abs(hists - np.asarray(mu)).max(axis=(-1, -2))


def check_scaling(errors_by_n: dict, c: float):
    """Every replicate within ``c / sqrt(N)``; the mean error shrinks between the sizes."""
    for n, err in errors_by_n.items():
        assert err.max() <= c / np.sqrt(n), f"N={n}: sup error {err.max():.4g} > {c}/sqrt(N) = {c / np.sqrt(n):.4g}"
    sizes = sorted(errors_by_n)
    small, large = errors_by_n[sizes[0]].mean(), errors_by_n[sizes[-1]].mean()
    expected = np.sqrt(sizes[-1] / sizes[0])
    assert small / large > expected / 3, f"error shrank by {small / large:.2f} only (1/sqrt(N) predicts {expected:.1f})"


# the default suite checks the epidemic (interacting agents); the crowds and the opinions
# run with the slow checks (10-15 s each: the default suite keeps its 10 minutes)
@pytest.mark.slow
@pytest.mark.parametrize("kwargs", [dict(dims=1), dict(dims=2, layout="four_rooms")], ids=["1d", "four_rooms"])
def test_crowd_agents_converge_to_distribution(kwargs):
    sizes = (250, 4000, 64000)
    env = CrowdModelling(num_agents=sizes[-1], horizon=8, **kwargs)
    params = env.default_params().replace(noise=jnp.float32(0.6))
    if kwargs.get("layout"):  # start in one room corner so that walls and noise matter
        init = np.zeros(env.num_states, np.float32)
        init[1 * env.size + 1] = 0.5
        init[2 * env.size + 3] = 0.5
        params = params.replace(init_dist=jnp.asarray(init))
    policy = random_policy(env)
    mu = solvers.forward(env, params, policy)[0]
    hists = agent_histograms(env, params, policy, jax.random.key(0), subsets=sizes)
    check_scaling({n: sup_errors(hists[:, i], mu) for i, n in enumerate(sizes)}, c=2.5)


def _interacting(make, params_fn, sizes, c, seed):
    errors = {}
    for n in sizes:
        env = make(n)
        params = params_fn(env)
        policy = random_policy(env, seed)
        mu = solvers.forward(env, params, policy)[0]
        errors[n] = sup_errors(agent_histograms(env, params, policy, jax.random.key(n)), mu)
    check_scaling(errors, c)


def test_epidemic_agents_converge_to_distribution():
    def params(env):  # a fast epidemic so that the 12 steps see it grow
        init = np.array([0.9, 0.0, 0.1, 0.0], np.float32)
        return env.default_params().replace(beta=jnp.float32(1.5), sigma=jnp.float32(0.5), omega=jnp.float32(0.05),
                                            init_dist=jnp.asarray(init))

    _interacting(lambda n: Epidemic(num_agents=n, model="seir", horizon=12), params, (1000, 64000), c=6.0, seed=1)


@pytest.mark.slow  # (as the crowds, above)
def test_opinion_agents_converge_to_distribution():
    def params(env):
        p = env.default_params()
        return p.replace(type_probs=jnp.asarray([0.3, 0.7]), noise=jnp.float32(0.2),
                         init_probs=jnp.asarray([[0.6, 0.3, 0.1], [0.1, 0.2, 0.7]]))

    _interacting(lambda n: Opinion(num_agents=n, num_levels=3, num_types=2, horizon=8), params, (1000, 64000),
                 c=3.0, seed=2)

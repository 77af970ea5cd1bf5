"""Opinion and adoption dynamics: the classical results of the scripted policies, the
networks, the payoff, and the annealed distributional view of a network."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxagents_environments.meanfield import Opinion
from jaxagents_environments.meanfield import graphs
from jaxagents_environments.meanfield import opinion_policies as op

rollout_dist = jax.jit(op.rollout_dist, static_argnums=(0, 1, 3))
rollout_agents = jax.jit(op.rollout_agents, static_argnums=(0, 1, 4))


def _granovetter(env, shift_second=False):
    """Granovetter's riot: thresholds 0, 1, 2, ... (percent of the crowd), nobody
    active at first; moving the threshold-1 person to 2 stops the cascade at the
    instigator. Thresholds sit half a step below each share so that the rounding of
    finite type shares cannot matter."""
    T = env.T
    th = np.maximum((np.arange(T) - 0.5) / T, 0.0)
    if shift_second:
        th[1] = 1.5 / T
    init = np.tile([1.0, 0.0], (T, 1))
    return env.default_params().replace(threshold=jnp.asarray(th, jnp.float32), init_probs=jnp.asarray(init, jnp.float32))


def test_granovetter_cascade_in_both_views():
    T, steps = 100, 105
    env = Opinion(num_agents=4000, num_types=T, horizon=steps)
    policy = op.threshold(env)
    for shift, expected in [(False, np.minimum(np.arange(steps + 1), T) / T), (True, np.minimum(np.arange(steps + 1), 1) / T)]:
        params = _granovetter(env, shift)
        mus = np.asarray(rollout_dist(env, policy, params, steps)).reshape(steps + 1, T, 2)[..., 1].sum(-1)
        np.testing.assert_allclose(mus, expected, atol=1e-5)
        _, hist = rollout_agents(env, policy, jax.random.key(0), params, steps)
        adopted = np.asarray(hist).reshape(steps + 1, T, 2)[..., 1].sum(-1)
        np.testing.assert_allclose(adopted, expected, atol=2e-3)  # type shares within a few agents of 40


def test_degroot_preserves_the_mean_and_reaches_consensus():
    env = Opinion(num_agents=20_000, num_levels=21, horizon=40)
    init = np.random.default_rng(0).random(21) ** 2
    params = env.default_params().replace(init_probs=jnp.asarray(init / init.sum(), jnp.float32)[None])
    mus = np.asarray(rollout_dist(env, op.degroot(env, 0.5), params, 40))
    levels = np.arange(21)
    means = mus @ levels
    np.testing.assert_allclose(means, means[0], atol=1e-4)
    lo = int(np.floor(means[0]))
    assert mus[-1, lo:lo + 2].sum() > 0.999  # consensus on the two levels around the mean
    var = mus @ levels**2 - means**2
    assert var[10] < 0.5 * var[0]
    # agents on an undirected ring (symmetric weights): the mean is a martingale
    ring = Opinion(num_agents=20_000, num_levels=21, graph="ring", degree=4, horizon=40)
    _, hist = rollout_agents(ring, op.degroot(ring, 0.5), jax.random.key(1), params.replace(rewire_prob=jnp.float32(0.0)), 40)
    hist = np.asarray(hist)
    assert abs((hist[-1] - hist[0]) @ levels) < 0.1
    assert (hist[-1] @ levels**2 - (hist[-1] @ levels) ** 2) < 0.2 * var[0]


def _clusters(mu, tol=1e-3):
    occupied = mu > tol
    return int(occupied[0] + np.sum(occupied[1:] & ~occupied[:-1]))


def test_bounded_confidence_consensus_or_clusters():
    """Hegselmann-Krause from uniform opinions: wide confidence -> one cluster; narrow
    confidence -> several clusters (about 1 / (2 confidence) of them)."""
    env = Opinion(num_agents=20_000, num_levels=41, horizon=60)
    params = env.default_params()
    wide = np.asarray(rollout_dist(env, op.bounded_confidence(env, 0.3), params, 60))[-1]
    narrow = np.asarray(rollout_dist(env, op.bounded_confidence(env, 0.05), params, 60))[-1]
    assert _clusters(wide) == 1
    assert 4 <= _clusters(narrow) <= 12
    np.testing.assert_allclose(narrow @ np.arange(41), 20.0, atol=1e-3)  # symmetric start, symmetric rule


def test_graphs():
    n, d = 2000, 6
    key = jax.random.key(0)

    @jax.jit
    def draw(key):
        return (graphs.random_graph(key, n, d), graphs.regular_graph(key, n, d), graphs.ring_graph(key, n, d, 0.0),
                graphs.ring_graph(key, n, d, 0.25))

    rnd, reg, lattice, rewired = (np.asarray(g) for g in draw(key))
    assert rnd.shape == (n, d) and not np.any(rnd == np.arange(n)[:, None])
    assert np.all(np.bincount(reg.reshape(-1), minlength=n) == d)  # everybody heard by d listeners
    adj = np.zeros((n, n), int)
    np.add.at(adj, (np.repeat(np.arange(n), d), reg.reshape(-1)), 1)
    np.testing.assert_array_equal(adj, adj.T)  # undirected
    np.testing.assert_array_equal(lattice[5], [2, 3, 4, 6, 7, 8])
    frac = np.mean(rewired != lattice)
    assert abs(frac - 0.25) < 0.02  # (a rewired link hits the lattice neighbour with prob. 1/(n-1))


def test_payoff_against_a_direct_computation():
    K, n = 4, 60
    env = Opinion(num_agents=n, num_levels=K, num_types=2, graph="random", degree=5, horizon=3)
    params = env.default_params().replace(type_probs=jnp.asarray([0.4, 0.6]), preference=jnp.asarray([0.5, 2.7]),
                                          conformity=jnp.float32(1.3), preference_weight=jnp.float32(0.7),
                                          switch_cost=jnp.float32(0.4), noise=jnp.float32(0.0))
    state, _ = jax.jit(env.reset)(jax.random.key(0), params)
    acts = jax.random.randint(jax.random.key(1), (n,), 0, K)
    new, ts = jax.jit(env.step)(jax.random.key(2), state, {"agent": acts}, params)
    o, nb, kind, a = (np.asarray(x) for x in (state.opinion, state.nbrs, state.kind, acts))
    pref = np.asarray(params.preference)[kind]
    expect = (1.3 * (1 - np.abs(a[:, None] - o[nb]).mean(1) / (K - 1)) + 0.7 * (1 - np.abs(a - pref) / (K - 1))
              - 0.4 * np.abs(a - o) / (K - 1))
    np.testing.assert_allclose(np.asarray(ts.reward["agent"]), expect, rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(new.opinion), a)  # no noise: the action is the new opinion
    heard = np.stack([(o[nb] == k).mean(1) for k in range(K)], 1)
    np.testing.assert_allclose(np.asarray(state.signal), heard, rtol=1e-6)


def test_annealed_network_view_is_exact_for_the_first_step():
    """From independent initial opinions, one threshold step on a random graph moves the
    population exactly as the annealed distributional step (Binomial neighbour counts)."""
    n = 50_000
    env = Opinion(num_agents=n, num_types=3, graph="random", degree=5, horizon=1)
    params = env.default_params().replace(threshold=jnp.asarray([0.2, 0.4, 0.7]),
                                          init_probs=jnp.asarray([[0.7, 0.3], [0.6, 0.4], [0.7, 0.3]]))
    policy = op.threshold(env)
    mu1 = np.asarray(rollout_dist(env, policy, params, 1))[1]
    hists = np.stack([np.asarray(rollout_agents(env, policy, jax.random.key(s), params, 1)[1])[1] for s in range(2)])
    assert np.abs(hists - mu1).max() < 4.0 / np.sqrt(n)
    # the complete-graph rule would predict something else: the test can tell them apart
    complete = Opinion(num_agents=n, num_types=3, horizon=1)
    assert np.abs(np.asarray(rollout_dist(complete, op.threshold(complete), params, 1))[1] - mu1).max() > 0.05

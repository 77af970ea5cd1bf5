"""experiments/leduc_exact_dynamics.py on Kuhn poker's small tree: reach
probabilities, the self-play gradient against finite differences of each player's
objective, and the tabular dynamics lowering exploitability."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxagents.evaluation import exploitability as X
from jaxagents_environments.games.kuhn import KuhnPoker

@pytest.fixture(scope="module")
def dyn(experiment_script):
    return experiment_script("leduc_exact_dynamics")


@pytest.fixture(scope="module")
def tree():
    return KuhnPoker().game_tree()


def test_reach_sums_to_one_over_terminals(dyn, tree):
    logits = jax.random.normal(jax.random.key(0), tree.legal.shape)
    reach = np.asarray(X.node_reach(tree, dyn.probs_of(tree, logits)))
    terminal = np.asarray(tree.player) < 0
    assert reach.sum(where=terminal) == pytest.approx(1.0, abs=1e-5)
    assert np.all(reach >= 0)


@pytest.mark.slow  # (10-25 s: the default suite keeps its 10 minutes)
def test_gradient_matches_finite_differences(dyn, tree):
    """Each information state's row is the derivative of its *owner's* objective (value
    plus tau times the reach-weighted entropy), the other player's policy fixed."""
    logits = jax.random.normal(jax.random.key(1), tree.legal.shape, jnp.float32)
    tau = 0.3
    g = np.asarray(dyn.selfplay_gradient(tree, logits, tau))
    owner = np.asarray(tree.infostate_player)
    eps = 1e-2
    # every (state, action) perturbed at once: objective of player p at logits +- eps e_k
    objective = jax.jit(jax.vmap(lambda x, p: dyn.player_objective(tree, x, p, tau), (0, None)))
    basis = jnp.eye(logits.size, dtype=logits.dtype).reshape(-1, *logits.shape) * eps
    for p in (0, 1):
        fd = (np.asarray(objective(logits + basis, jnp.int32(p))) - np.asarray(objective(logits - basis, jnp.int32(p)))) / (2 * eps)
        fd = fd.reshape(logits.shape)
        rows = (owner == p)[:, None] & np.asarray(tree.legal)
        np.testing.assert_allclose(g[rows], fd[rows], atol=2e-3)
    assert np.abs(g).max() > 1e-2  # not trivially zero


def test_tabular_dynamics_lower_exploitability(dyn, tree):
    curve, theta = dyn.tabular(tree, tau=0.05, lr=5.0, iters=300, points=3)
    assert curve[0][1] == pytest.approx(float(X.exploitability(tree, X.uniform_policy(tree))), abs=1e-5)
    assert curve[-1][1] < 0.5 * curve[0][1]


def _own_reach_brute_force(tree, sigma):
    """Each information state's owner's own reach (the product of the owner's earlier
    action probabilities on the path), by walking every node's ancestors on the host."""
    par, pa, pl, inf = (np.asarray(x) for x in (tree.parent, tree.parent_action, tree.player, tree.infostate))
    out = np.zeros(tree.num_infostates)
    for n in np.flatnonzero(pl >= 0):
        m, r = n, 1.0
        while par[m] >= 0:
            if pl[par[m]] == pl[n]:
                r *= sigma[inf[par[m]], pa[m]]
            m = par[m]
        out[inf[n]] = r  # the same for every node of the information state (perfect recall)
    return out


def test_average_weights(dyn, tree):
    """``--average own``: the owner's own reach (``exploitability.own_reach``, against a
    walk up every node's ancestors); ``visit``: the information state's total reach
    probability, chance and both players."""
    for seed in range(3):
        sigma = np.asarray(dyn.probs_of(tree, 3 * jax.random.normal(jax.random.key(seed), tree.legal.shape)))
        np.testing.assert_allclose(dyn.infostate_weight(tree, jnp.asarray(sigma), "own"), _own_reach_brute_force(tree, sigma),
                                   rtol=1e-5)
    sigma = dyn.probs_of(tree, jax.random.normal(jax.random.key(7), tree.legal.shape))
    visit = np.asarray(dyn.infostate_weight(tree, sigma, "visit"))
    reach, inf = np.asarray(X.node_reach(tree, sigma)), np.asarray(tree.infostate)
    np.testing.assert_allclose(visit, [reach[inf == s].sum() for s in range(tree.num_infostates)], rtol=1e-5)


def test_average_of_a_fixed_policy_is_that_policy(dyn, tree):
    """With a step that does not move, the running average is the iterate itself."""
    logits = jax.random.normal(jax.random.key(2), tree.legal.shape)
    curve, _ = dyn.follow(tree, lambda x: x, lambda x: dyn.probs_of(tree, x), logits, 4, 2, average="own", schedule="linear")
    for _, iterate, average in curve[1:]:
        assert average == pytest.approx(iterate, abs=1e-5)


def test_magnet_refreshed_every_step_is_no_regulariser(dyn, tree):
    """``--magnet-every 1``: the magnet is always the current policy, where the KL's
    gradient vanishes, so the steps are those of the unregularised (tau 0) dynamics;
    a magnet kept for longer does pull (the curve differs)."""
    plain, th_plain = dyn.tabular(tree, tau=0.0, lr=5.0, iters=20, points=4)
    every, th_every = dyn.tabular(tree, tau=0.3, lr=5.0, iters=20, points=4, magnet_every=1)
    np.testing.assert_allclose(th_every, th_plain, atol=1e-4)
    np.testing.assert_allclose([e for _, e in every], [e for _, e in plain], atol=1e-5)
    _, th_slow = dyn.tabular(tree, tau=0.3, lr=5.0, iters=20, points=4, magnet_every=10)
    assert np.abs(np.asarray(th_slow) - np.asarray(th_plain)).max() > 1e-2

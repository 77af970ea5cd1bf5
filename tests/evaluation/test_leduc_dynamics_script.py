"""baselines/experiments/leduc_exact_dynamics.py on Kuhn poker's small tree: reach
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

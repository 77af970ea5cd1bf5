import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxagents
from jaxagents_environments.games.matrix import GAMES

# The published payoffs, written out independently of the module's table:
# (row action, column action) -> (row payoff, column payoff)
PUBLISHED = {
    "prisoners_dilemma": {(0, 0): (3, 3), (0, 1): (0, 5), (1, 0): (5, 0), (1, 1): (1, 1)},
    "stag_hunt": {(0, 0): (4, 4), (0, 1): (0, 3), (1, 0): (3, 0), (1, 1): (3, 3)},
    "chicken": {(0, 0): (0, 0), (0, 1): (-1, 1), (1, 0): (1, -1), (1, 1): (-10, -10)},
    "matching_pennies": {(0, 0): (1, -1), (0, 1): (-1, 1), (1, 0): (-1, 1), (1, 1): (1, -1)},
    "coordination": {(0, 0): (1, 1), (0, 1): (0, 0), (1, 0): (0, 0), (1, 1): (1, 1)},
}


@pytest.mark.parametrize("game", sorted(GAMES))
def test_payoffs_match_published_tables(game):
    env = jaxagents.make(game, horizon=1)
    step = jax.jit(env.step)
    state, _ = env.reset(jax.random.key(0))
    for (a, b), (ra, rb) in PUBLISHED[game].items():
        _, ts = step(jax.random.key(0), state, {"row": jnp.array([a]), "column": jnp.array([b])})
        assert (float(ts.reward["row"][0]), float(ts.reward["column"][0])) == (ra, rb)
        assert bool(ts.terminated) and not bool(ts.truncated)


def test_matching_pennies_is_zero_sum_and_pd_has_dominant_defection():
    mp = GAMES["matching_pennies"]
    np.testing.assert_array_equal(mp[0] + mp[1], 0)
    pd = GAMES["prisoners_dilemma"]
    assert np.all(pd[0][1] > pd[0][0]) and np.all(pd[1][:, 1] > pd[1][:, 0])


def test_memory_one_observation_and_horizon():
    env = jaxagents.make("prisoners_dilemma", horizon=3)
    state, ts = env.reset(jax.random.key(0))
    np.testing.assert_array_equal(ts.obs["row"][0], [0, 0, 1, 0, 0, 1, 0])
    seq = [(0, 1), (1, 1), (1, 0)]
    for t, (a, b) in enumerate(seq, 1):
        state, ts = env.step(jax.random.key(t), state, {"row": jnp.array([a]), "column": jnp.array([b])})
        own, opp = np.eye(3)[a], np.eye(3)[b]
        np.testing.assert_allclose(ts.obs["row"][0], np.concatenate([own, opp, [t / 3]]), rtol=1e-6)
        np.testing.assert_allclose(ts.obs["column"][0], np.concatenate([opp, own, [t / 3]]), rtol=1e-6)
        assert bool(ts.terminated) == (t == 3)


def test_out_of_range_actions_are_clipped_and_flagged():
    env = jaxagents.make("stag_hunt")
    state, _ = env.reset(jax.random.key(0))
    _, ts = env.step(jax.random.key(0), state, {"row": jnp.array([7]), "column": jnp.array([-3])})
    # clipped to (hare=1, stag=0): row 3, column 0
    assert float(ts.reward["row"][0]) == 3 and float(ts.reward["column"][0]) == 0
    assert bool(ts.info["illegal_action"])


def test_custom_payoff_with_three_actions():
    rps = np.zeros((2, 3, 3), np.float32)
    for a, b in itertools.product(range(3), range(3)):
        rps[0, a, b] = [0, -1, 1][(b - a) % 3]
    rps[1] = -rps[0]
    env = jaxagents.make("prisoners_dilemma", payoff=rps)
    assert env.roles["row"].action_space.n == 3 and env.roles["row"].observation_space.shape == (9,)
    state, _ = env.reset(jax.random.key(0))
    _, ts = env.step(jax.random.key(0), state, {"row": jnp.array([0]), "column": jnp.array([2])})
    assert float(ts.reward["row"][0]) == 1.0  # rock beats scissors

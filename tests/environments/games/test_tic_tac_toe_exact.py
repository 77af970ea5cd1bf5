"""Tic-tac-toe's capabilities: the minimax scripted player and the exact outcome
probabilities of a policy against it, on the env's own observations."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxagents
from jaxagents_environments.games.tic_tac_toe_exact import board_observation, outcomes_vs_minimax, positions
from jaxagents_environments.games.tic_tac_toe_minimax import minimax_q


def test_positions_table():
    pos = positions()
    assert pos["board"].shape == (5478, 9) and not pos["board"][0].any()  # row 0: the empty board
    assert np.allclose(pos["minimax"].sum(1)[~pos["over"]], 1.0) and not pos["minimax"][pos["over"]].any()


def test_board_observation_is_the_env_observation():
    env = jaxagents.make("tic_tac_toe")
    state, ts = env.reset(jax.random.key(0))
    for a in (4, 0, 8):
        state, ts = env.step(jax.random.key(1), state, {"first": jnp.array([a]), "second": jnp.array([a])})
    for seat, role in enumerate(("first", "second")):
        np.testing.assert_array_equal(ts.obs[role][0], board_observation(state.board, seat))


def perfect(seat):
    """Minimax move values as logits, read from ``seat``'s own observation."""
    own, opp = (1, 2) if seat == 0 else (2, 1)

    def fn(obs):
        marks = obs.reshape(-1, 9, 2)
        board = (marks[..., 0] * own + marks[..., 1] * opp).astype(jnp.int32)
        q = minimax_q(board)
        return jnp.where(jnp.isfinite(q), q, -1e9)

    return fn


@pytest.mark.slow  # (10-20 s: the default suite keeps its 10 minutes)
def test_perfect_play_never_loses_and_a_bad_policy_does():
    m = jax.jit(lambda: outcomes_vs_minimax({"first": perfect(0), "second": perfect(1)}))()
    for seat in (0, 1):
        assert float(m[f"minimax/greedy/loss/seat{seat}"]) == 0.0 and float(m[f"minimax/greedy/win/seat{seat}"]) == 0.0
        # the sampled policy (softmax of the values) can blunder, but never beats minimax
        assert 0.0 < float(m[f"minimax/exact/loss/seat{seat}"]) < 1.0 and float(m[f"minimax/exact/win/seat{seat}"]) == 0.0
    first_cell = lambda o: -jnp.arange(9.0) * jnp.ones((o.shape[0], 1))  # noqa: E731
    m = jax.jit(lambda: outcomes_vs_minimax({"first": first_cell, "second": first_cell}))()
    assert float(m["minimax/greedy/loss/seat0"]) == 1.0  # X: 0, 1, 2 in a row is always blocked, then lost


def test_minimax_scripted_policy_plays_optimal_moves():
    env = jaxagents.make("tic_tac_toe")
    state, _ = env.reset(jax.random.key(0))
    minimax = env.scripted_policies()["minimax"]
    a = jax.jit(minimax)(state, jax.random.key(3))
    q = np.asarray(minimax_q(state.board))
    assert q[int(a["first"][0])] == q.max() and a["first"].shape == a["second"].shape == (1,)

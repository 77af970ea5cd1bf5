"""Tic-tac-toe against OpenSpiel's ``tic_tac_toe`` (and pgx's), plus the minimax solver."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxagents
from jaxagents_environments.games.tic_tac_toe import TicTacToe
from jaxagents_environments.games.tic_tac_toe_minimax import board_index, minimax_action, minimax_q, solve

GAMES = 300


@pytest.fixture(scope="module")
def env():
    return TicTacToe()


@pytest.fixture(scope="module")
def playouts(env):
    """GAMES random legal games of 9 steps each, recorded from our env (jit + vmap)."""

    def play(key):
        state, ts = env.reset(key)

        def body(carry, k):
            state, ts = carry
            acts = jaxagents.random_actions(env, k, ts)
            state, nts = env.step(k, state, acts)
            mover = jnp.where(ts.active["first"][0], acts["first"][0], acts["second"][0])
            return (state, nts), (ts, mover, nts)

        _, out = jax.lax.scan(body, (state, ts), jax.random.split(key, 9))
        return out

    return jax.device_get(jax.jit(jax.vmap(play))(jax.random.split(jax.random.key(0), GAMES)))


def test_random_playouts_match_openspiel(playouts):
    pyspiel = pytest.importorskip("pyspiel")
    game = pyspiel.load_game("tic_tac_toe")
    before, moves, after = playouts
    for g in range(GAMES):
        s = game.new_initial_state()
        for t in range(9):
            if s.is_terminal():
                # our env stays finished and pays nothing more
                assert after.terminated[g, t] and after.reward["first"][g, t] == 0
                continue
            player = s.current_player()
            assert before.active["first"][g, t] == (player == 0)
            assert before.active["second"][g, t] == (player == 1)
            legal = np.zeros(9, bool)
            legal[s.legal_actions()] = True
            np.testing.assert_array_equal(before.action_mask["first"][g, t, 0], legal)
            # OpenSpiel's observation: planes (empty, nought, cross); ours: (own, opponent)
            planes = np.asarray(s.observation_tensor(0)).reshape(3, 9)
            ours = before.obs["first"][g, t, 0].reshape(9, 2)
            np.testing.assert_array_equal(ours[:, 0], planes[2])
            np.testing.assert_array_equal(ours[:, 1], planes[1])
            s.apply_action(int(moves[g, t]))
            returns = s.returns() if s.is_terminal() else [0.0, 0.0]
            assert after.reward["first"][g, t, 0] == returns[0]
            assert after.reward["second"][g, t, 0] == returns[1]
            assert after.terminated[g, t] == s.is_terminal()
        assert s.is_terminal()


def test_random_playouts_match_pgx(playouts):
    pgx = pytest.importorskip("pgx")
    penv = pgx.make("tic_tac_toe")
    before, moves, after = playouts
    init, step = jax.jit(penv.init), jax.jit(penv.step)
    for g in range(0, GAMES, 10):
        st = init(jax.random.key(g))
        # pgx randomises who moves first; map its current_player to our seats
        first = int(st.current_player)
        for t in range(9):
            if bool(st.terminated):
                break
            np.testing.assert_array_equal(np.asarray(st.legal_action_mask), before.action_mask["first"][g, t, 0])
            st = step(st, int(moves[g, t]))
            rewards = np.asarray(st.rewards)
            assert rewards[first] == after.reward["first"][g, t, 0]
            assert rewards[1 - first] == after.reward["second"][g, t, 0]
            assert bool(st.terminated) == bool(after.terminated[g, t])


def test_illegal_move_loses(env):
    state, _ = env.reset(jax.random.key(0))
    state, ts = env.step(jax.random.key(0), state, {"first": jnp.array([4]), "second": jnp.array([0])})
    state, ts = env.step(jax.random.key(0), state, {"first": jnp.array([0]), "second": jnp.array([4])})
    assert bool(ts.terminated) and bool(ts.info["illegal_action"])
    assert float(ts.reward["second"][0]) == -1 and float(ts.reward["first"][0]) == 1
    state, ts = env.reset(jax.random.key(0))
    _, ts = env.step(jax.random.key(0), state, {"first": jnp.array([9]), "second": jnp.array([0])})
    assert float(ts.reward["first"][0]) == -1 and bool(ts.terminated)


def test_solver_counts_and_values():
    value, q, reachable = solve()
    assert reachable == 5478
    assert value[0] == 0  # perfect play draws
    # X in a corner, O on an edge next to it: X wins
    board = np.zeros(9, np.int64)
    board[[0, 1]] = [1, 2]
    assert value[int(board @ 3 ** np.arange(9))] == 1


def test_solver_agrees_with_openspiel_alpha_beta():
    pyspiel = pytest.importorskip("pyspiel")
    from open_spiel.python.algorithms import minimax

    game = pyspiel.load_game("tic_tac_toe")
    rng = np.random.default_rng(0)
    for _ in range(25):
        s = game.new_initial_state()
        for _ in range(rng.integers(0, 6)):
            s.apply_action(int(rng.choice(s.legal_actions())))
        if s.is_terminal():
            continue
        board = np.zeros(9, np.int32)
        planes = np.asarray(s.observation_tensor(0)).reshape(3, 9)
        board[planes[2] == 1], board[planes[1] == 1] = 1, 2
        v, _ = minimax.alpha_beta_search(game, state=s, maximizing_player_id=s.current_player())
        assert np.max(np.asarray(minimax_q(jnp.asarray(board)))) == v


def test_minimax_never_loses_to_random(env):
    """Minimax as either seat against a random player: no losses over many games."""

    def play(key, minimax_seat):
        state, ts = env.reset(key)

        def body(carry, k):
            state, ts = carry
            k1, k2 = jax.random.split(k)
            rnd = jaxagents.random_actions(env, k1, ts)
            best = minimax_action(state.board, k2)[None]
            acts = {"first": jnp.where(minimax_seat == 0, best, rnd["first"]),
                    "second": jnp.where(minimax_seat == 1, best, rnd["second"])}
            state, ts = env.step(k, state, acts)
            return (state, ts), jnp.where(minimax_seat == 0, ts.reward["first"][0], ts.reward["second"][0])

        _, r = jax.lax.scan(body, (state, ts), jax.random.split(key, 9))
        return r.sum()

    keys = jax.random.split(jax.random.key(1), 400)
    seats = jnp.arange(400) % 2
    returns = np.asarray(jax.jit(jax.vmap(play))(keys, seats))
    assert returns.min() >= 0
    assert returns.mean() > 0.7  # and it usually wins


def test_minimax_against_itself_always_draws(env):
    def play(key):
        state, ts = env.reset(key)

        def body(carry, k):
            state, ts = carry
            best = minimax_action(state.board, k)[None]
            state, ts = env.step(k, state, {"first": best, "second": best})
            return (state, ts), (ts.reward["first"][0], ts.terminated)

        _, (r, term) = jax.lax.scan(body, (state, ts), jax.random.split(key, 9))
        return r.sum(), term[-1]

    r, term = jax.jit(jax.vmap(play))(jax.random.split(jax.random.key(2), 64))
    assert np.all(np.asarray(r) == 0) and np.all(np.asarray(term))
    assert int(board_index(jnp.array([1, 2, 0, 0, 0, 0, 0, 0, 1]))) == 1 + 2 * 3 + 3**8

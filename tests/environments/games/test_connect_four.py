"""Connect Four against pgx's ``connect_four`` and OpenSpiel's ``connect_four``, move for
move, plus illegal moves, the mirror symmetry and the ``win_block`` scripted player.

Random games are recorded from our env in chunks of ``CHUNK`` games by one compiled
program (``jit(vmap(scan))``), and replayed in pgx by one compiled program too, so the
default suite compiles each once; ``pytest -m slow`` replays over 10,000 games.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxagents
from jaxagents_environments.games.connect_four import ConnectFour, has_four, win_block_action

CHUNK = 300  # games per compiled call
SLOW_CHUNKS = 34  # 10,200 games in the slow checks
WILD = 0.2  # in "wild" games, the chance per move of a uniformly drawn column (legal or full)
# a drawn game (the board is full with no four), found by random play in OpenSpiel
DRAW = [5, 5, 5, 0, 5, 4, 4, 6, 6, 3, 5, 1, 3, 5, 2, 1, 2, 3, 0, 4, 1, 4, 3, 0, 2, 2, 2, 1, 0, 0, 0,
        2, 1, 6, 1, 3, 4, 4, 3, 6, 6, 6]


def make_recorder(env, games):
    """``record(key, wild f32[games]) -> (moves, after, boards)``: ``games`` random games of
    ``num_rows * num_cols`` steps each; the mover plays a random legal column, or with
    probability ``wild[g]`` a uniformly drawn column (possibly full: an illegal move)."""
    steps = env.num_rows * env.num_cols

    def play(key, wild):
        state, ts = env.reset(key)

        def body(carry, k):
            state, ts = carry
            k1, k2, k3 = jax.random.split(k, 3)
            acts = jaxagents.random_actions(env, k1, ts)
            move = jnp.where(ts.active["first"][0], acts["first"][0], acts["second"][0])
            any_col = jax.random.randint(k2, (), 0, env.num_cols, jnp.int32)
            move = jnp.where(jax.random.uniform(k3) < wild, any_col, move)
            state, nts = env.step(k, state, {"first": move[None], "second": move[None]})
            return (state, nts), (move, nts, state.board)

        return jax.lax.scan(body, (state, ts), jax.random.split(key, steps))[1]

    vplay = jax.vmap(play)
    return jax.jit(lambda key, wild: vplay(jax.random.split(key, games), wild))


def record(recorder, seed, wild):
    return jax.device_get(recorder(jax.random.key(seed), jnp.full(CHUNK, wild, jnp.float32)))


@pytest.fixture(scope="module")
def env():
    return ConnectFour()


@pytest.fixture(scope="module")
def recorder(env):
    return make_recorder(env, CHUNK)


@pytest.fixture(scope="module")
def legal_games(recorder):
    return record(recorder, 0, 0.0)


@pytest.fixture(scope="module")
def wild_games(recorder):
    return record(recorder, 1, WILD)


# --------------------------------------------------------------------------- pgx


@pytest.fixture(scope="module")
def pgx_replay():
    """``replay(keys, moves[G, T]) -> (first seat, per-step outputs)`` in pgx, compiled once."""
    pgx = pytest.importorskip("pgx")
    penv = pgx.make("connect_four")

    def one(key, moves):
        s = penv.init(key)

        def body(s, a):
            s = penv.step(s, a)
            return s, (s.rewards, s.terminated, s.legal_action_mask, s._x.board, s.current_player, s.observation)

        return s.current_player, jax.lax.scan(body, s, moves)[1]

    return jax.jit(jax.vmap(one))


def check_against_pgx(replay, games, seed):
    moves, after, boards = games
    G, T = moves.shape
    # pgx draws who moves first; its first mover plays colour 0 (board value 0)
    first, (rewards, terminated, mask, board, current, obs) = jax.device_get(
        replay(jax.random.split(jax.random.key(seed), G), jnp.asarray(moves)))
    seat = np.stack([first, 1 - first], -1)[:, None, :]  # [G, 1, 2]: pgx ids of first, second
    ours = np.stack([after.reward["first"][..., 0], after.reward["second"][..., 0]], -1)
    np.testing.assert_array_equal(ours, np.take_along_axis(rewards, np.broadcast_to(seat, ours.shape), -1))
    np.testing.assert_array_equal(after.terminated, terminated)
    np.testing.assert_array_equal(after.action_mask["first"][:, :, 0], mask)
    np.testing.assert_array_equal(after.action_mask["second"][:, :, 0], mask)
    # boards: pgx -1 empty, 0 first mover, 1 second; both row 0 at the top. After an
    # illegal move pgx's board is not meaningful (it drops the disc anyway), ours unchanged.
    illegal = after.info["illegal_action"]
    ok = ~np.cumsum(illegal, 1).astype(bool)
    np.testing.assert_array_equal(boards[ok], board.reshape(G, T, 6, 7)[ok] + 1)
    # observation of the player to move (pgx's current player) while the game goes on
    live = ~after.terminated
    to_move_first = current == first[:, None]
    assert np.array_equal(after.active["first"][..., 0][live], to_move_first[live])
    ours_obs = np.where(to_move_first[..., None, None, None], after.obs["first"][:, :, 0], after.obs["second"][:, :, 0])
    np.testing.assert_array_equal(ours_obs[live], obs[live].astype(np.float32))
    return illegal.any(1).sum(), after.terminated[:, -1].sum()


def test_random_legal_games_match_pgx(pgx_replay, legal_games):
    illegal, ended = check_against_pgx(pgx_replay, legal_games, 7)
    assert illegal == 0 and ended == CHUNK


def test_games_with_illegal_moves_match_pgx(pgx_replay, wild_games):
    illegal, ended = check_against_pgx(pgx_replay, wild_games, 8)
    assert illegal > CHUNK // 10 and ended == CHUNK  # the illegal path is exercised


@pytest.mark.slow
def test_ten_thousand_games_match_pgx(pgx_replay, recorder):
    illegal = 0
    for c in range(SLOW_CHUNKS):
        n, _ = check_against_pgx(pgx_replay, record(recorder, 100 + c, 0.0 if c % 2 else WILD), 100 + c)
        illegal += n
    assert illegal > 0


# --------------------------------------------------------------------------- OpenSpiel


def openspiel_trajectories(game, moves, rows, cols):
    """OpenSpiel's per-step outputs after each of ``moves[G, T]`` (legal moves only):
    returns, terminated, legal mask, board in our convention (row 0 at the top), player
    to move."""
    G, T = moves.shape
    rewards = np.zeros((G, T, 2), np.float32)
    terminated = np.zeros((G, T), bool)
    mask = np.ones((G, T, cols), bool)
    board = np.zeros((G, T, rows, cols), np.int32)
    current = np.full((G, T), -1)
    for g in range(G):
        s = game.new_initial_state()
        for t in range(T):
            if s.is_terminal():
                terminated[g, t:], board[g, t:] = True, board[g, t - 1]
                break
            s.apply_action(int(moves[g, t]))
            planes = np.asarray(s.observation_tensor(0)).reshape(3, rows, cols)[:, ::-1]  # (x, o, empty), bottom row first
            board[g, t] = planes[0] + 2 * planes[1]
            if s.is_terminal():
                rewards[g, t], terminated[g, t] = s.returns(), True
            else:
                mask[g, t] = False
                mask[g, t, s.legal_actions()] = True
                current[g, t] = s.current_player()
    return rewards, terminated, mask, board, current


def check_against_openspiel(games, rows=6, cols=7):
    pyspiel = pytest.importorskip("pyspiel")
    game = pyspiel.load_game("connect_four", {"rows": rows, "columns": cols})
    moves, after, boards = games
    rewards, terminated, mask, board, current = openspiel_trajectories(game, moves, rows, cols)
    assert not after.info["illegal_action"].any()
    np.testing.assert_array_equal(after.reward["first"][..., 0], rewards[..., 0])
    np.testing.assert_array_equal(after.reward["second"][..., 0], rewards[..., 1])
    np.testing.assert_array_equal(after.terminated, terminated)
    np.testing.assert_array_equal(after.action_mask["first"][:, :, 0], mask)
    np.testing.assert_array_equal(boards, board)
    live = ~terminated
    np.testing.assert_array_equal(after.active["first"][..., 0][live], current[live] == 0)
    np.testing.assert_array_equal(after.active["second"][..., 0][live], current[live] == 1)
    # our observation planes are the board from each player's side
    np.testing.assert_array_equal(after.obs["first"][:, :, 0, ..., 0], board == 1)
    np.testing.assert_array_equal(after.obs["second"][:, :, 0, ..., 0], board == 2)
    return rewards


def test_random_legal_games_match_openspiel(legal_games):
    rewards = check_against_openspiel(legal_games)
    # both seats win some games
    assert (rewards[..., 0] == 1).any() and (rewards[..., 1] == 1).any()


# one more board by default, the other with the slow checks (6-12 s each: the default suite keeps its 10 minutes)
@pytest.mark.parametrize("rows, cols", [pytest.param(4, 9, marks=pytest.mark.slow), (8, 4)])
def test_other_board_sizes_match_openspiel(rows, cols):
    env = ConnectFour(num_rows=rows, num_cols=cols)
    assert env.roles["first"].action_space.n == cols
    assert env.roles["first"].observation_space.shape == (rows, cols, 2)
    check_against_openspiel(record(make_recorder(env, CHUNK), 3, 0.0), rows, cols)


@pytest.mark.slow
def test_ten_thousand_games_match_openspiel(recorder):
    for c in range(SLOW_CHUNKS):
        check_against_openspiel(record(recorder, 200 + c, 0.0))


def test_a_drawn_game_matches_openspiel(env):
    pyspiel = pytest.importorskip("pyspiel")
    s = pyspiel.load_game("connect_four").new_initial_state()
    state, ts = env.reset(jax.random.key(0))
    step = jax.jit(env.step)
    for t, a in enumerate(DRAW):
        assert not bool(ts.terminated)
        a = jnp.array([a])
        state, ts = step(jax.random.key(t), state, {"first": a, "second": a})
        s.apply_action(DRAW[t])
    assert s.is_terminal() and s.returns() == [0.0, 0.0]
    assert bool(ts.terminated) and float(ts.reward["first"][0]) == 0 and float(ts.reward["second"][0]) == 0
    assert np.all(np.asarray(state.board) != 0) and not bool(ts.info["illegal_action"])


# --------------------------------------------------------------------------- rules


def play(env, moves):
    state, ts = env.reset(jax.random.key(0))
    for a in moves:
        a = jnp.array([a])
        state, ts = env.step(jax.random.key(0), state, {"first": a, "second": a})
    return state, ts


@pytest.mark.parametrize("moves, winner", [
    ([0, 0, 1, 1, 2, 2, 3], "first"),  # horizontal, bottom row
    ([6, 0, 5, 0, 4, 0, 6, 0], "second"),  # vertical, column 0
    ([0, 1, 1, 2, 2, 3, 2, 3, 3, 6, 3], "first"),  # rising to the right, (5,0)..(2,3)
    ([6, 5, 5, 4, 4, 3, 4, 3, 3, 0, 3], "first"),  # rising to the left, (5,6)..(2,3)
])
def test_each_direction_wins(env, moves, winner):
    state, ts = play(env, moves[:-1])
    assert not bool(ts.terminated)
    state, ts = play(env, moves)
    loser = "second" if winner == "first" else "first"
    assert bool(ts.terminated) and not bool(ts.info["illegal_action"])
    assert float(ts.reward[winner][0]) == 1 and float(ts.reward[loser][0]) == -1
    assert bool(has_four(state.board == (1 if winner == "first" else 2)))


def test_illegal_moves_lose(env):
    # a full column: six alternating discs in column 0, then first plays it again
    state, ts = play(env, [0] * 6)
    assert not bool(ts.terminated) and not bool(ts.action_mask["first"][0, 0])
    board = np.asarray(state.board)
    state, ts = play(env, [0] * 7)
    assert bool(ts.terminated) and bool(ts.info["illegal_action"])
    assert float(ts.reward["first"][0]) == -1 and float(ts.reward["second"][0]) == 1
    np.testing.assert_array_equal(np.asarray(state.board), board)  # the board is unchanged
    # out of range, either side, either seat
    for moves, loser in [([-1], "first"), ([7], "first"), ([3, 7], "second"), ([3, -5], "second")]:
        state, ts = play(env, moves)
        winner = "second" if loser == "first" else "first"
        assert bool(ts.terminated) and bool(ts.info["illegal_action"])
        assert float(ts.reward[loser][0]) == -1 and float(ts.reward[winner][0]) == 1
        assert int(np.count_nonzero(np.asarray(state.board))) == len(moves) - 1


def test_a_finished_game_stays_finished(env):
    state, ts = play(env, [0, 0, 1, 1, 2, 2, 3])
    for a in [4, 9]:
        a = jnp.array([a])
        new, ts2 = env.step(jax.random.key(1), state, {"first": a, "second": a})
        np.testing.assert_array_equal(np.asarray(new.board), np.asarray(state.board))
        assert bool(ts2.terminated) and not bool(ts2.info["illegal_action"])
        assert float(ts2.reward["first"][0]) == 0 and float(ts2.reward["second"][0]) == 0
        assert bool(np.all(ts2.action_mask["first"])) and not bool(ts2.active["first"][0] | ts2.active["second"][0])


def test_sizes_are_validated():
    for kw in [{"num_rows": 3}, {"num_cols": 2}, {"num_rows": 6.0}, {"num_cols": True}, {"num_rows": "6"}]:
        name = next(iter(kw))
        with pytest.raises(ValueError, match=f"^{name} must be an integer >= 4, got"):
            jaxagents.make("connect_four", **kw)
    assert jaxagents.make("connect_four", num_rows=np.int64(5)).num_rows == 5


def test_global_obs_and_render(env):
    state, _ = play(env, [3, 4])
    g = np.asarray(env.global_obs(state))
    assert g.shape == (6 * 7 * 2 + 1,) and g[-1] == 0 and g.sum() == 2
    img = env.render(state)
    assert img.shape == (96, 112, 3) and img.dtype == np.uint8
    assert tuple(img[5 * 16 + 8, 3 * 16 + 8]) == (210, 30, 30) and tuple(img[5 * 16 + 8, 4 * 16 + 8]) == (240, 200, 20)


# --------------------------------------------------------------------------- mirror symmetry


@pytest.fixture(scope="module")
def replay_moves(env):
    """``replay(moves i32[42]) -> (boards, rewards, terminated, illegal)`` for one game."""

    def replay(moves):
        state, _ = env.reset(jax.random.key(0))

        def body(state, a):
            state, ts = env.step(jax.random.key(0), state, {"first": a[None], "second": a[None]})
            reward = jnp.concatenate([ts.reward["first"], ts.reward["second"]])
            return state, (state.board, reward, ts.terminated, ts.info["illegal_action"])

        return jax.lax.scan(body, state, moves)[1]

    return jax.jit(replay)


@settings(max_examples=150, deadline=None)
@given(moves=st.lists(st.integers(0, 6), min_size=1, max_size=42))
def test_mirroring_the_columns_mirrors_the_game(replay_moves, moves):
    """Playing column ``6 - c`` for every ``c`` gives the mirrored boards and the same
    rewards, terminations and illegal moves (moves into full columns included); and
    every board obeys gravity with alternating discs."""
    moves = np.array(moves + [0] * (42 - len(moves)), np.int32)
    boards, rewards, term, illegal = jax.device_get(replay_moves(jnp.asarray(moves)))
    m_boards, m_rewards, m_term, m_illegal = jax.device_get(replay_moves(jnp.asarray(6 - moves)))
    np.testing.assert_array_equal(m_boards, boards[..., ::-1])
    np.testing.assert_array_equal(m_rewards, rewards)
    np.testing.assert_array_equal(m_term, term)
    np.testing.assert_array_equal(m_illegal, illegal)
    filled = boards != 0
    assert np.all(filled[:, :-1] <= filled[:, 1:])  # no disc above an empty cell
    ones, twos = (boards == 1).sum((1, 2)), (boards == 2).sum((1, 2))
    assert np.all((ones - twos >= 0) & (ones - twos <= 1))
    assert np.all(rewards.sum(-1) == 0)


# --------------------------------------------------------------------------- win_block


def _board(rows):
    """A board from text rows, top first: '.' empty, 'X' first, 'O' second."""
    return jnp.array([[".XO".index(ch) for ch in row] for row in rows], jnp.int32)


def test_win_block_wins_then_blocks():
    pick = jax.jit(win_block_action)
    keys = jax.random.split(jax.random.key(0), 20)
    # X to move (player 0) can win in column 3; O threatens column 6 as well
    win = _board(["......."] * 3 + ["......O", "......O", "XXX...O"])
    assert {int(pick(win, jnp.int32(0), k)) for k in keys} == {3}
    # O to move cannot win: it must block column 3
    assert {int(pick(_board(["......."] * 5 + ["XXX.OO."]), jnp.int32(1), k)) for k in keys} == {3}
    # nothing to win or block: any legal column, never the full one
    full0 = _board(["X......", "O......", "X......", "O......", "X......", "O......"])
    picks = {int(pick(full0, jnp.int32(0), k)) for k in jax.random.split(jax.random.key(1), 200)}
    assert picks == set(range(1, 7))


def test_win_block_beats_random_play(env):
    policy = env.scripted_policies()["win_block"]

    def play_one(key, seat):
        state, ts = env.reset(key)

        def body(carry, k):
            state, ts = carry
            k1, k2 = jax.random.split(k)
            rnd = jaxagents.random_actions(env, k1, ts)
            best = policy(state, k2)
            acts = {r: jnp.where(seat == i, best[r], rnd[r]) for i, r in enumerate(("first", "second"))}
            state, ts = env.step(k, state, acts)
            return (state, ts), jnp.where(seat == 0, ts.reward["first"][0], ts.reward["second"][0])

        return jax.lax.scan(body, (state, ts), jax.random.split(key, 42))[1].sum()

    n = 400
    returns = np.asarray(jax.jit(jax.vmap(play_one))(jax.random.split(jax.random.key(5), n), jnp.arange(n) % 2))
    assert returns.mean() > 0.8, returns.mean()  # it wins nearly every game, in either seat
    assert returns[0::2].mean() > 0.8 and returns[1::2].mean() > 0.8


# The correspondence with TextArena's ConnectFour (its board rows top first, X our ``first``)
# is checked on 1,002 recorded TextArena games by tests/environments/text/test_connect_four.py.

"""A language policy against scripted opponents (``jaxagents.lm.matches``,
``jaxagents_environments.text.opponents``).

Default: Connect Four's depth-limited search chooses what a plain recursive minimax
chooses, takes wins and blocks threats; ``match_stats`` counts results, invalid moves
and reply lengths of a hand-made record. Slow: whole matches in one compiled call --
tic-tac-toe against exact minimax (every opponent move optimal, the model never wins),
Connect Four against the search, negotiation against a scripted trader."""

from __future__ import annotations

import functools
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxagents
from jaxagents.lm.episode import Opponent, TextTables, Turns, play
from jaxagents.lm.generate import Sampling
from jaxagents.lm.matches import make_match_evaluator, match_stats
from jaxagents.lm.model import init_params
from jaxagents.lm.tokenizer import Tokenizer
from jaxagents_environments.text.opponents import WIN, connect_four_values, opponents

from .conftest import tiny_config

TOKENIZER = os.path.join(os.path.dirname(__file__), "..", "data", "lm", "qwen2")
CFG = tiny_config("llama", vocab_size=512)


def _drop(board, col, mark):
    board = board.copy()
    row = int(np.sum(board[:, col] == 0)) - 1
    board[row, col] = mark
    return board


LINES = [[(r + k * dr, c + k * dc) for k in range(4)] for r in range(6) for c in range(7)
         for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1))
         if all(0 <= r + k * dr < 6 and 0 <= c + k * dc < 7 for k in range(4))]


def _four(board, mark):
    return any(all(board[y, x] == mark for y, x in line) for line in LINES)


def _score(board, me):
    """The search's leaf score, written again: windows a player could still fill."""
    points = (0, 1, 5, 50, 0)
    total = 3.0 * np.sum(board[:, 3] == me)
    for line in LINES:
        cells = [board[y, x] for y, x in line]
        own, other = sum(c == me for c in cells), sum(c not in (0, me) for c in cells)
        total += (points[own] if other == 0 else 0) - (points[other] if own == 0 else 0)
    return total


def _negamax(board, mark, me, depth, t=0):
    """Plain recursive minimax with the search's scores (the reference)."""
    if depth == 0:
        return _score(board, me)
    values = []
    for col in range(board.shape[1]):
        if board[0, col] != 0:
            continue
        nxt = _drop(board, col, mark)
        if _four(nxt, mark):
            values.append((WIN - t) * (1 if mark == me else -1))
        elif np.all(nxt[0] != 0):
            values.append(0.0)
        else:
            values.append(_negamax(nxt, 3 - mark, me, depth - 1, t + 1))
    return max(values) if mark == me else min(values)


def test_connect_four_search_is_minimax_and_takes_wins_and_blocks():
    rng = np.random.default_rng(0)
    search = jax.jit(lambda b, m: connect_four_values(b, m, 3))
    best = jax.jit(lambda b, m: jnp.argmax(connect_four_values(b, m)))
    for _ in range(3):
        board, mark = np.zeros((6, 7), np.int32), 1
        for _ in range(int(rng.integers(4, 12))):
            legal = [c for c in range(7) if board[0, c] == 0]
            nxt = _drop(board, int(rng.choice(legal)), mark)
            if _four(nxt, mark):
                break
            board, mark = nxt, 3 - mark
        got = np.asarray(search(jnp.asarray(board), jnp.asarray(mark)))
        for col in range(7):
            nxt = _drop(board, col, mark) if board[0, col] == 0 else None
            if nxt is None:
                assert got[col] == -np.inf
                continue
            want = WIN if _four(nxt, mark) else _negamax(nxt, 3 - mark, mark, 2, 1)
            np.testing.assert_allclose(got[col], want, rtol=1e-6, atol=1e-4)
    # three in a row on the bottom: it wins at once; facing three: it blocks
    board = np.zeros((6, 7), np.int32)
    board[5, :3] = 1
    board[4, :2] = 2
    assert int(best(jnp.asarray(board), jnp.asarray(1))) == 3
    board[4, :2] = 0
    board[4, 4] = 2
    assert int(best(jnp.asarray(board), jnp.asarray(2))) == 3


def test_match_stats_counts_results_invalid_moves_and_lengths():
    k, b, n = 3, 4, 5
    active = jnp.array([[1, 1, 1, 1], [1, 1, 1, 1], [1, 0, 1, 1]], bool)
    player = jnp.array([[0, 0, 1, 1], [1, 1, 0, 0], [0, 0, 1, 1]])
    done = jnp.array([[0, 0, 0, 0], [0, 1, 0, 0], [1, 1, 1, 0]], bool)
    reward = jnp.zeros((k, b, 2)).at[2, 0].set([1.0, -1.0]).at[1, 1].set([-1.0, 1.0])
    invalid = jnp.zeros((k, b), bool).at[0, 0].set(True)
    mask = jnp.zeros((k, b, n), bool).at[..., :2].set(True).at[0, 0, :].set(True)
    z = jnp.zeros((k, b), jnp.int32)
    turns = Turns(active=active, player=player, prompt=jnp.zeros((k, b, 1), jnp.int32), prompt_length=z,
                  tokens=jnp.zeros((k, b, n), jnp.int32), logprobs=jnp.zeros((k, b, n)), mask=mask, move=z,
                  invalid=invalid, reward=reward, done=done, overflow=jnp.zeros((k, b), bool), allowed=jnp.zeros((k, b, 0), bool))
    out = jax.jit(match_stats)(turns, jnp.array([0, 0, 1, 0]))
    # game 0: model (seat 0) +1; game 1: seat 0 gets -1; game 2: over, 0; game 3 not over
    np.testing.assert_allclose([out["win"], out["draw"], out["loss"], out["unfinished"]], [0.25, 0.25, 0.25, 0.25])
    np.testing.assert_allclose(out["win_by_seat"], [1 / 3, 0.0])
    np.testing.assert_allclose(out["draw_by_seat"], [0.0, 1.0])
    # the model's replies: game 0 turns 0, 2; game 1 turn 0; game 2 turns 0, 2; game 3 turn 1
    np.testing.assert_allclose(out["invalid_rate"], 1 / 6)
    np.testing.assert_allclose(out["mean_response_tokens"], (5 + 2 + 2 + 2 + 2 + 2) / 6)
    with pytest.raises(ValueError, match="num_games"):
        make_match_evaluator(CFG, None, None, None, num_games=3, sampling=Sampling(4), max_turns=2, prompt_len=8)


# ---------------------------------------------------------------------------- slow: whole matches
@functools.lru_cache(maxsize=None)
def game(env_id):
    tok = Tokenizer.from_folder(TOKENIZER)
    env = jaxagents.make(env_id)
    return tok, env, TextTables.build(env, tok)


@pytest.mark.heavy
def test_tic_tac_toe_model_never_beats_minimax_whose_moves_are_optimal():
    from jaxagents_environments.games.tic_tac_toe_minimax import minimax_q

    tok, env, tables = game("text_tic_tac_toe")
    opp = Opponent.build(env, tok, *opponents(env)["minimax"])
    params = init_params(CFG, jax.random.PRNGKey(0), scale=0.3)
    games, seat = 8, jnp.arange(8) % 2
    run = jax.jit(lambda p, k: play(p, CFG, env, tables, k, games, sampling=Sampling(4, temperature=1.0), max_turns=9,
                                    prompt_len=1024, constrained=True, opponent=opp, opponent_seat=1 - seat)[0])
    turns = jax.tree_util.tree_map(np.asarray, run(params, jax.random.PRNGKey(0)))
    out = match_stats(turns, seat)
    assert out["win"] == 0 and out["unfinished"] == 0
    np.testing.assert_allclose(out["win"] + out["draw"] + out["loss"], 1.0)
    for b in range(games):
        board = np.zeros(9, np.int32)
        for t in range(9):
            if not turns.active[t, b]:
                break
            p, cell = int(turns.player[t, b]), int(turns.move[t, b])
            if p != int(seat[b]):  # the opponent's move is optimal
                q = np.asarray(minimax_q(jnp.asarray(board)))
                assert q[cell] == q.max(), (b, t, board, cell)
                n = int(turns.mask[t, b].sum())
                assert tok.decode(list(turns.tokens[t, b, :n])) == f"[{cell}]"
            board[cell] = 1 + (t % 2)  # TextArena's player 0 moves first; the game's first mark
    # the same through the evaluator, greedy
    ev = make_match_evaluator(CFG, env, tables, opp, num_games=4, sampling=Sampling(4, temperature=0.0), max_turns=9,
                              prompt_len=1024, constrained=True)
    res = jax.jit(ev)(params, jax.random.PRNGKey(1))
    assert res["win"] == 0 and res["invalid_rate"] == 0 and res["mean_response_tokens"] == 3.0  # "[", digit, "]"


@pytest.mark.heavy
def test_connect_four_search_beats_an_untrained_model():
    tok, env, tables = game("text_connect_four")
    opp = Opponent.build(env, tok, *opponents(env)["search"])
    params = init_params(CFG, jax.random.PRNGKey(0), scale=0.3)
    ev = make_match_evaluator(CFG, env, tables, opp, num_games=4, sampling=Sampling(8, temperature=1.0), max_turns=42,
                              prompt_len=4096, constrained=True)
    res = jax.jit(ev)(params, jax.random.PRNGKey(0))
    assert res["unfinished"] == 0 and res["loss"] >= 0.75, res


@pytest.mark.heavy
def test_negotiation_against_a_scripted_trader():
    tok, env, tables = game("text_negotiation")
    policy, strings = opponents(env)["deny"]
    opp = Opponent.build(env, tok, policy, strings)
    params = init_params(CFG, jax.random.PRNGKey(0), scale=0.3)
    games, seat = 4, jnp.arange(4) % 2
    run = jax.jit(lambda p, k: play(p, CFG, env, tables, k, games, sampling=Sampling(8), max_turns=6,
                                    prompt_len=2048, opponent=opp, opponent_seat=1 - seat)[0])
    turns = jax.tree_util.tree_map(np.asarray, run(params, jax.random.PRNGKey(0)))
    theirs = turns.active & (turns.player != np.asarray(seat)[None])
    assert theirs.any()
    for t, b in zip(*np.nonzero(theirs)):
        n = int(turns.mask[t, b].sum())
        assert tok.decode(list(turns.tokens[t, b, :n])) == "[Deny]"
        assert not turns.invalid[t, b]
    out = match_stats(turns, seat)
    mine = turns.active & ~theirs
    np.testing.assert_allclose(out["invalid_rate"], turns.invalid[mine].mean(), rtol=1e-6)
    np.testing.assert_allclose(out["mean_response_tokens"], turns.mask[mine].sum(-1).mean(), rtol=1e-6)

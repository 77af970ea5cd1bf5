"""Exact evaluation of tic-tac-toe policies against the minimax player.

Every position reachable from the empty board (5,478 of them) is tabulated once on
the host, with the move each cell leads to and the minimax player's move
distribution (uniform over its optimal moves). The probability of each outcome of a
policy against minimax is then computed without sampling: the probability mass of
every position is pushed forward one move at a time (nine plies, one
``segment_sum`` each), the learner moving by its policy -- greedy (argmax over the
legal moves) or sampled (softmax over them) -- and the mass of finished games is
collected. A greedy loss rate of exactly 0 means the greedy policy never loses,
whatever minimax's tie-breaks.

``TicTacToe.exact_evaluation`` offers this to any learner (see the capabilities in
``jaxagents.core.env``).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxagents_environments.games.tic_tac_toe_minimax import LINES, NUM_BOARDS, POW3, solve

ROLES = ("first", "second")


@functools.lru_cache(maxsize=1)
def positions() -> dict:
    """Every position reachable from the empty board (``R`` = 5,478), as host arrays:
    ``board i32[R, 9]`` (0 empty, 1 X, 2 O), ``mover i32[R]`` (0 X, 1 O), ``winner
    i32[R]`` (0 none, 1 X, 2 O), ``over bool[R]``, ``legal bool[R, 9]``, ``child
    i32[R, 9]`` (row of the position after each move; ``R`` -- a dummy row -- where
    illegal or over) and ``minimax f32[R, 9]`` (the minimax player's move
    distribution: uniform over its optimal moves, zero where the game is over).
    Row 0 is the empty board."""
    value, q, _ = solve()
    idx = np.flatnonzero(~np.isnan(value))
    R = idx.size
    board = (idx[:, None] // POW3[None, :]) % 3
    row = np.full(NUM_BOARDS, R, np.int64)
    row[idx] = np.arange(R)
    lines = board[:, np.asarray(LINES)]  # [R, 8, 3]
    full_line = (lines[..., 0] != 0) & (lines[..., 0] == lines[..., 1]) & (lines[..., 1] == lines[..., 2])
    winner = np.max(np.where(full_line, lines[..., 0], 0), axis=1)
    over = (winner > 0) | np.all(board != 0, axis=1)
    mover = (np.sum(board != 0, axis=1) % 2).astype(np.int32)
    legal = (board == 0) & ~over[:, None]
    child = np.where(legal, row[np.where(legal, idx[:, None] + (mover[:, None] + 1) * POW3[None, :], 0)], R)
    qv = q[idx]
    best = legal & (qv >= np.max(qv, axis=1, keepdims=True) - 1e-6)
    minimax = best / np.maximum(best.sum(1, keepdims=True), 1)
    return dict(board=board.astype(np.int32), mover=mover, winner=winner.astype(np.int32), over=over,
                child=child.astype(np.int32), legal=legal, minimax=minimax.astype(np.float32))


def board_observation(board: jax.Array, seat: int) -> jax.Array:
    """The env's observation ``f32[..., 3, 3, 2]`` of ``seat`` (0 X, 1 O) on ``board
    i32[..., 9]``: the seat's own marks in channel 0, the opponent's in channel 1."""
    own, opp = (1, 2) if seat == 0 else (2, 1)
    marks = jnp.stack([board == own, board == opp], -1).astype(jnp.float32)
    return marks.reshape(*board.shape[:-1], 3, 3, 2)


def outcomes_vs_minimax(policies: dict, weights: jax.Array | None = None) -> dict:
    """Exact outcome probabilities of a policy against minimax.

    Args:
        policies: ``{"first": logits_fn, "second": logits_fn}``, each ``obs f32[S, 3,
            3, 2] -> logits f32[S, 9]`` in the env's observation format.
        weights: ``f32[K]``, or None: with weights, each ``logits_fn`` returns ``[K, S,
            9]``, the members of a mixed strategy drawn once per game with these
            probabilities (normalised here); minimax is fixed, so each outcome's
            probability is the members' weighted mean.

    Returns ``{"minimax/greedy/loss/seat{k}", "minimax/greedy/win/seat{k}",
    "minimax/exact/loss/seat{k}", "minimax/exact/win/seat{k}"}`` for the learner in
    seat ``k`` (0 plays X, first). Jit-able; one network pass over the positions per
    seat.
    """
    pos = positions()
    board = jnp.asarray(pos["board"])
    logits = {role: policies[role](board_observation(board, seat)) for seat, role in enumerate(ROLES)}
    if weights is None:
        return _outcomes(logits)
    w = jnp.asarray(weights, jnp.float32)
    per_member = jax.vmap(_outcomes)(logits)  # {metric: [K]}
    return {k: jnp.sum(w * v) / jnp.sum(w) for k, v in per_member.items()}


def _outcomes(logits: dict) -> dict:
    """``outcomes_vs_minimax`` of one policy given its logits ``{role: f32[R, 9]}`` over
    every position."""
    pos = positions()
    board, mover, child = (jnp.asarray(pos[k]) for k in ("board", "mover", "child"))
    legal, minimax, winner = jnp.asarray(pos["legal"]), jnp.asarray(pos["minimax"]), jnp.asarray(pos["winner"])
    over = jnp.asarray(pos["over"])
    R = board.shape[0]
    start = jnp.zeros(R, jnp.float32).at[0].set(1.0)
    out = {}
    for seat, role in enumerate(ROLES):
        logits_r = jnp.where(legal, logits[role], -jnp.inf)
        sampled = jnp.where(legal, jax.nn.softmax(logits_r, -1), 0.0)
        greedy = jax.nn.one_hot(jnp.argmax(logits_r, -1), 9) * jnp.any(legal, -1, keepdims=True)
        for name, pi in (("greedy", greedy), ("exact", sampled)):
            move = jnp.where((mover == seat)[:, None], pi, minimax)
            mass, lost, won = start, 0.0, 0.0
            for _ in range(10):  # a game lasts at most nine moves
                lost = lost + jnp.sum(jnp.where(over & (winner == 2 - seat), mass, 0.0))
                won = won + jnp.sum(jnp.where(over & (winner == 1 + seat), mass, 0.0))
                flow = jnp.where(over[:, None], 0.0, mass[:, None] * move)
                mass = jax.ops.segment_sum(flow.reshape(-1), child.reshape(-1), R + 1)[:R]
            out[f"minimax/{name}/loss/seat{seat}"] = lost
            out[f"minimax/{name}/win/seat{seat}"] = won
    return out

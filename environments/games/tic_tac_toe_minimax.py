"""Exact minimax solution of tic-tac-toe, usable inside jit.

The solver enumerates every position reachable from the empty board (5,478 of
them) once, on the host, and stores for each board (indexed in base 3, cell ``i``
contributing ``mark * 3**i``) the game-theoretic value of every move for the
player to move: +1 win, 0 draw, -1 loss, under perfect play by both sides.
Unreachable boards and illegal moves hold ``nan`` / ``-inf``.

``minimax_action(board, key)`` picks uniformly among the optimal moves; it is a
table lookup, so a minimax opponent costs nothing inside a compiled rollout.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

NUM_BOARDS = 3**9
LINES = [(0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6)]
POW3 = 3 ** np.arange(9)


def _winner(board: tuple) -> int:
    for a, b, c in LINES:
        if board[a] != 0 and board[a] == board[b] == board[c]:
            return board[a]
    return 0


@functools.lru_cache(maxsize=1)
def solve() -> tuple[np.ndarray, np.ndarray, int]:
    """Returns ``(value, q, num_reachable)``.

    ``value``: ``f32[3**9]`` value of the position for the player to move (nan when
    unreachable; for finished positions the outcome for the player who would move).
    ``q``: ``f32[3**9, 9]`` value of each move for the player to move (-inf when
    illegal or the game is over).
    """
    value = np.full(NUM_BOARDS, np.nan, np.float32)
    q = np.full((NUM_BOARDS, 9), -np.inf, np.float32)

    def search(board: tuple, mark: int) -> float:
        idx = int(np.dot(board, POW3))
        if not np.isnan(value[idx]):
            return float(value[idx])
        w = _winner(board)
        if w:
            v = 1.0 if w == mark else -1.0
        elif 0 not in board:
            v = 0.0
        else:
            best = -np.inf
            for cell in range(9):
                if board[cell] == 0:
                    child = board[:cell] + (mark,) + board[cell + 1 :]
                    qv = -search(child, 3 - mark)
                    q[idx, cell] = qv
                    best = max(best, qv)
            v = best
        value[idx] = v
        return v

    search((0,) * 9, 1)
    return value, q, int(np.sum(~np.isnan(value)))


def board_index(board: jax.Array) -> jax.Array:
    """Base-3 index of ``i32[..., 9]`` boards (0 empty, 1 X, 2 O)."""
    return jnp.sum(board * jnp.asarray(POW3, board.dtype), axis=-1)


@functools.lru_cache(maxsize=1)
def _q_table() -> np.ndarray:
    # cache the host table, not a jax array: one created while tracing would be a
    # tracer and leak out of that trace
    return solve()[1]


def minimax_q(board: jax.Array) -> jax.Array:
    """``f32[..., 9]`` exact move values for the player to move (-inf = illegal)."""
    return jnp.asarray(_q_table())[board_index(board)]


def minimax_action(board: jax.Array, key: jax.Array) -> jax.Array:
    """An optimal move for the player to move on an unfinished ``i32[9]`` board,
    uniformly among ties (works under jit and vmap)."""
    qv = minimax_q(board)
    best = qv >= jnp.max(qv) - 1e-6
    return jax.random.categorical(key, jnp.where(best, 0.0, -jnp.inf)).astype(jnp.int32)

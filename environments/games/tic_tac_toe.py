"""Tic-tac-toe.

Rules. A 3x3 board, cells numbered 0..8 row by row. The ``first`` player (X) moves
first, then the players alternate. A move marks an empty cell. Three marks in a
row, column or diagonal win (+1 to the winner, -1 to the loser); a full board with
no line is a draw (0, 0). Rewards come only at the end.

Roles: ``first`` and ``second``, one agent each, ``Discrete(9)`` actions. Only the
player to move is ``active``; the other player's action is ignored.

Observation, for each player from its own point of view, ``f32[3, 3, 2]``: channel 0
marks the player's own pieces, channel 1 the opponent's.

Action mask: the empty cells (for both players, so random legal play of the
inactive player is well defined); all True once the game is over.

Capabilities (``jaxagents.core.env``): ``scripted_policies()`` offers ``minimax``
(an optimal move, uniformly among ties: ``tic_tac_toe_minimax``) and
``exact_evaluation()`` the exact outcome probabilities of a policy against it
(``tic_tac_toe_exact``).

Illegal moves (an occupied cell, or an action outside 0..8) lose the game for the
player who made them: -1 to them, +1 to the opponent, ``terminated``, with
``info["illegal_action"]`` True. Stepping a finished game without a reset changes
nothing and gives zero rewards.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from jaxagents.core import Box, Discrete, Env, Role
from jaxagents_environments.games.placement import end_of_move, timestep

LINES = jnp.array(
    [[0, 1, 2], [3, 4, 5], [6, 7, 8], [0, 3, 6], [1, 4, 7], [2, 5, 8], [0, 4, 8], [2, 4, 6]], jnp.int32
)
ROLES = ("first", "second")


@struct.dataclass
class TicTacToeState:
    """``board``: ``i32[9]`` 0 empty, 1 first (X), 2 second (O);
    ``player``: ``i32[]`` 0 if ``first`` is to move else 1; ``done``: ``bool[]``."""

    board: jax.Array
    player: jax.Array
    done: jax.Array


def winner_mark(board: jax.Array) -> jax.Array:
    """``i32[]``: 1 or 2 if that mark has a line, else 0 (works under vmap)."""
    cells = board[LINES]  # [8, 3]
    line = (cells[:, 0] != 0) & (cells[:, 0] == cells[:, 1]) & (cells[:, 1] == cells[:, 2])
    return jnp.max(jnp.where(line, cells[:, 0], 0))


class TicTacToe(Env):
    """Tic-tac-toe with two roles (see the module docstring)."""

    def __init__(self):
        obs = Box(0.0, 1.0, (3, 3, 2), jnp.float32)
        self.roles = {r: Role(1, obs, Discrete(9)) for r in ROLES}

    def _timestep(self, state, reward, illegal):
        board = state.board
        marks = jnp.stack([board == 1, board == 2], -1).astype(jnp.float32).reshape(3, 3, 2)
        return timestep(self, state, marks, board == 0, reward, illegal)

    def reset_env(self, key, params):
        state = TicTacToeState(board=jnp.zeros(9, jnp.int32), player=jnp.zeros((), jnp.int32), done=jnp.zeros((), bool))
        return state, self._timestep(state, jnp.zeros(2, jnp.float32), jnp.zeros((), bool))

    def step_env(self, key, state, actions, params):
        action = jnp.where(state.player == 0, actions["first"][0], actions["second"][0])
        in_range = (action >= 0) & (action < 9)
        cell = jnp.clip(action, 0, 8)
        legal = in_range & (state.board[cell] == 0)
        playing = ~state.done
        place = playing & legal
        board = jnp.where(place, state.board.at[cell].set(state.player + 1), state.board)
        won = winner_mark(board) == state.player + 1
        full = jnp.all(board != 0)
        reward, done, player, illegal = end_of_move(state.done, state.player, legal, place & won, full)
        new = TicTacToeState(board=board, player=player, done=done)
        return new, self._timestep(new, reward, illegal)

    # ---------------------------------------------------------------- capabilities
    def scripted_policies(self):
        from jaxagents_environments.games.tic_tac_toe_minimax import minimax_action

        def minimax(state, key):  # the player to move plays an optimal move; the other's is ignored
            a = minimax_action(state.board, key)[None]
            return {"first": a, "second": a}

        return {"minimax": minimax}

    def exact_evaluation(self, params=None):
        from jaxagents_environments.games.tic_tac_toe_exact import outcomes_vs_minimax

        return outcomes_vs_minimax

    def global_obs(self, state, params=None):
        """The board from X's point of view plus a to-move flag: ``f32[19]``."""
        marks = jnp.stack([state.board == 1, state.board == 2], -1).astype(jnp.float32).reshape(-1)
        return jnp.concatenate([marks, state.player.astype(jnp.float32)[None]])

    def render(self, state, params=None):
        """A 96x96 RGB picture: X in red, O in blue, grid in grey."""
        import numpy as np

        board = np.asarray(state.board).reshape(3, 3)
        img = np.full((96, 96, 3), 255, np.uint8)
        img[31:33, :] = img[63:65, :] = 160
        img[:, 31:33] = img[:, 63:65] = 160
        idx = np.arange(24)
        for r in range(3):
            for c in range(3):
                y, x = r * 32 + 4, c * 32 + 4
                if board[r, c] == 1:
                    img[y + idx, x + idx] = (200, 30, 30)
                    img[y + idx, x + 23 - idx] = (200, 30, 30)
                elif board[r, c] == 2:
                    yy, xx = np.mgrid[0:24, 0:24]
                    ring = np.abs(np.hypot(yy - 11.5, xx - 11.5) - 10) < 1.2
                    img[y : y + 24, x : x + 24][ring] = (30, 60, 200)
        return img

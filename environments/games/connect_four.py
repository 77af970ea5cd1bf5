"""Connect Four.

Rules. A vertical board of ``num_rows`` x ``num_cols`` cells (6 x 7 by default; both
static constructor arguments, each at least 4). The ``first`` player moves first, then
the players alternate. A move names a column; the mover's disc drops to the lowest
empty cell of that column. Four of a player's discs in a row -- horizontally,
vertically or along either diagonal -- win (+1 to the winner, -1 to the loser); a full
board with no such line is a draw (0, 0). Rewards come only at the end. These are the
rules of pgx's ``connect_four`` and OpenSpiel's ``connect_four`` (``x_in_row=4``), which
the tests replay move for move.

Roles: ``first`` and ``second``, one agent each, ``Discrete(num_cols)`` actions (the
column). Only the player to move is ``active``; the other player's action is ignored.

Board (``ConnectFourState.board``), ``i32[num_rows, num_cols]``: 0 empty, 1 ``first``,
2 ``second``; **row 0 is the top row** and discs fall towards row ``num_rows - 1``;
columns 0..``num_cols - 1`` left to right, the action ids. This is the orientation of
pgx (its 42-cell board, row by row from the top) and of TextArena 0.7.4's
``ConnectFour`` (``game_state["board"][row][col]``, row 0 printed first, discs placed
from the last row up). OpenSpiel numbers rows from the bottom: its row ``r`` is our row
``num_rows - 1 - r``. A TextArena-style text view is therefore, row by row from row 0::

    " ".join({0: ".", 1: "X", 2: "O"}[v] for v in board[r])

under a header ``"0 1 2 3 4 5 6"`` and a line of dashes: TextArena's player 0 plays
``X`` and moves first, so ``first`` is TextArena's player 0 (``X``) and ``second`` its
player 1 (``O``), and an action ``c`` is TextArena's ``"[col c]"``. (TextArena may
allow a player some invalid moves before it ends the game; here an illegal move loses
at once, see below.)

Observation, for each player from its own point of view, ``f32[num_rows, num_cols, 2]``
in the board's orientation: channel 0 marks the player's own discs, channel 1 the
opponent's (pgx's observation of the player to move).

Action mask: the columns that are not full (for both players, so random legal play of
the inactive player is well defined); all True once the game is over.

Capabilities (``jaxagents.core.env``): ``scripted_policies()`` offers ``win_block``, a
one-ply player: it completes a four of its own if it can, otherwise blocks a column
where the opponent would complete one, otherwise plays uniformly at random among the
legal columns (ties are broken uniformly too). No exact evaluation (the game has about
4.5 x 10^12 positions).

Illegal moves (a full column, or an action outside 0..num_cols-1) lose the game for the
player who made them: -1 to them, +1 to the opponent, ``terminated``, with
``info["illegal_action"]`` True; the board is unchanged. Stepping a finished game
without a reset changes nothing and gives zero rewards.

The win check is vectorised: for each of the four directions, the four shifted slices of
the mover's disc plane are and-ed (no gathers, no loop over cells), so a step is a few
dozen element-wise operations on the board.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxagents.core import Box, Discrete, Env, Role
from jaxagents_environments.games.placement import end_of_move, timestep

ROLES = ("first", "second")
IN_A_ROW = 4


@struct.dataclass
class ConnectFourState:
    """``board``: ``i32[num_rows, num_cols]``, 0 empty, 1 ``first`` (TextArena's X),
    2 ``second`` (O); row 0 is the top row, discs fall towards row ``num_rows - 1``.
    ``player``: ``i32[]`` 0 if ``first`` is to move else 1. ``done``: ``bool[]``."""

    board: jax.Array
    player: jax.Array
    done: jax.Array


def has_four(discs: jax.Array) -> jax.Array:
    """``bool[...]``: whether the disc plane ``bool[..., R, C]`` holds four in a row
    (horizontal, vertical or either diagonal). Leading axes are batch axes."""
    R, C = discs.shape[-2:]
    k = IN_A_ROW - 1
    m = discs
    horizontal = m[..., :, 0 : C - k] & m[..., :, 1 : C - k + 1] & m[..., :, 2 : C - k + 2] & m[..., :, 3:]
    vertical = m[..., 0 : R - k, :] & m[..., 1 : R - k + 1, :] & m[..., 2 : R - k + 2, :] & m[..., 3:, :]
    # down-right: cells (r + i, c + i); down-left: cells (r + i, c + 3 - i)
    down_right = (m[..., 0 : R - k, 0 : C - k] & m[..., 1 : R - k + 1, 1 : C - k + 1]
                  & m[..., 2 : R - k + 2, 2 : C - k + 2] & m[..., 3:, 3:])
    down_left = (m[..., 0 : R - k, 3:] & m[..., 1 : R - k + 1, 2 : C - k + 2]
                 & m[..., 2 : R - k + 2, 1 : C - k + 1] & m[..., 3:, 0 : C - k])
    return (jnp.any(horizontal, (-2, -1)) | jnp.any(vertical, (-2, -1))
            | jnp.any(down_right, (-2, -1)) | jnp.any(down_left, (-2, -1)))


def landing_cells(board: jax.Array) -> jax.Array:
    """``bool[R, C]``: the cell a disc dropped in each column would occupy (the lowest
    empty cell; none in a full column)."""
    empty = board == 0
    below_filled = jnp.concatenate([~empty[1:], jnp.ones_like(empty[:1])], axis=0)
    return empty & below_filled


def win_block_action(board: jax.Array, player: jax.Array, key: jax.Array) -> jax.Array:
    """``i32[]``: the ``win_block`` player's column for ``player`` (0 ``first``, 1
    ``second``) on ``board``: a winning column if there is one, else a column where the
    opponent would win next, else any legal column (uniformly among the candidates)."""
    C = board.shape[1]
    legal = board[0] == 0
    drop = landing_cells(board)[None] & jnp.eye(C, dtype=bool)[:, None, :]  # [C, R, C]: a disc in column c
    wins = has_four((board == player + 1)[None] | drop) & legal
    blocks = has_four((board == 2 - player)[None] | drop) & legal
    choice = jnp.where(jnp.any(wins), wins, jnp.where(jnp.any(blocks), blocks, legal))
    choice = choice | ~jnp.any(choice)  # a full board: any column (the game is over)
    return jax.random.categorical(key, jnp.where(choice, 0.0, -jnp.inf)).astype(jnp.int32)


def _check_size(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < IN_A_ROW:
        raise ValueError(f"{name} must be an integer >= {IN_A_ROW}, got {value!r}")
    return int(value)


class ConnectFour(Env):
    """Connect Four with two roles (see the module docstring).

    Args:
        num_rows: board height, an integer >= 4 (static).
        num_cols: board width and number of actions, an integer >= 4 (static).
    """

    def __init__(self, num_rows: int = 6, num_cols: int = 7):
        self.num_rows = _check_size("num_rows", num_rows)
        self.num_cols = _check_size("num_cols", num_cols)
        obs = Box(0.0, 1.0, (self.num_rows, self.num_cols, 2), jnp.float32)
        self.roles = {r: Role(1, obs, Discrete(self.num_cols)) for r in ROLES}

    @property
    def name(self) -> str:
        """``ConnectFour`` with its size when it is not 6 x 7."""
        size = "" if (self.num_rows, self.num_cols) == (6, 7) else f"({self.num_rows}x{self.num_cols})"
        return f"ConnectFour{size}"

    def _timestep(self, state, reward, illegal):
        board = state.board
        discs = jnp.stack([board == 1, board == 2], -1).astype(jnp.float32)
        return timestep(self, state, discs, board[0] == 0, reward, illegal)

    def reset_env(self, key, params):
        state = ConnectFourState(
            board=jnp.zeros((self.num_rows, self.num_cols), jnp.int32),
            player=jnp.zeros((), jnp.int32),
            done=jnp.zeros((), bool),
        )
        return state, self._timestep(state, jnp.zeros(2, jnp.float32), jnp.zeros((), bool))

    def step_env(self, key, state, actions, params):
        action = jnp.where(state.player == 0, actions["first"][0], actions["second"][0])
        in_range = (action >= 0) & (action < self.num_cols)
        column = jnp.arange(self.num_cols) == action  # all False when out of range
        cell = landing_cells(state.board) & column[None, :]  # one cell, or none for a full column
        legal = in_range & jnp.any(state.board[0] == 0, where=column)
        playing = ~state.done
        place = playing & legal
        mark = state.player + 1
        board = jnp.where(place & cell, mark, state.board)
        won = has_four(board == mark)
        full = jnp.all(board[0] != 0)
        reward, done, player, illegal = end_of_move(state.done, state.player, legal, place & won, full)
        new = ConnectFourState(board=board, player=player, done=done)
        return new, self._timestep(new, reward, illegal)

    # ---------------------------------------------------------------- capabilities
    def scripted_policies(self):
        """``win_block``: win if it can, block if it must, else a random legal column."""

        def win_block(state, key):  # the player to move plays; the other's action is ignored
            a = win_block_action(state.board, state.player, key)[None]
            return {"first": a, "second": a}

        return {"win_block": win_block}

    def global_obs(self, state, params=None):
        """The board from ``first``'s point of view plus a to-move flag:
        ``f32[num_rows * num_cols * 2 + 1]``."""
        discs = jnp.stack([state.board == 1, state.board == 2], -1).astype(jnp.float32).reshape(-1)
        return jnp.concatenate([discs, state.player.astype(jnp.float32)[None]])

    def render(self, state, params=None):
        """An RGB picture, 16 pixels a cell: ``first`` red, ``second`` yellow, on blue."""
        board = np.asarray(state.board)
        R, C = board.shape
        img = np.zeros((R * 16, C * 16, 3), np.uint8)
        img[:] = (30, 70, 180)
        yy, xx = np.mgrid[0:16, 0:16]
        disc = np.hypot(yy - 7.5, xx - 7.5) < 6.5
        colours = {0: (255, 255, 255), 1: (210, 30, 30), 2: (240, 200, 20)}
        for r in range(R):
            for c in range(C):
                img[r * 16 : (r + 1) * 16, c * 16 : (c + 1) * 16][disc] = colours[int(board[r, c])]
        return img

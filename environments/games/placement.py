"""The end of a move in a two-player placement game (tic-tac-toe, Connect Four), shared
by those games: the rules of who is paid and who moves next are the same, only the
board and its lines differ."""

from __future__ import annotations

import jax.numpy as jnp


def end_of_move(done, player, legal, won, full):
    """What a move does to a game whose state has ``done`` ``bool[]`` and ``player``
    ``i32[]`` (0 or 1, the mover).

    ``legal``: the move could be made; ``won``: the mover has a line after it; ``full``:
    the board is full after it. An illegal move loses at once (-1 to the mover, +1 to
    the other); a winning move pays +1 / -1; a full board without a line ends in a draw;
    otherwise the other player moves. A finished game changes nothing.

    Returns ``(reward f32[2] by player, done bool[], player i32[], illegal bool[])``.
    """
    playing = ~done
    place = playing & legal
    illegal = playing & ~legal
    # +1 for the mover on a win, -1 on an illegal move, zero-sum for the other player
    mover_reward = jnp.where(illegal, -1.0, jnp.where(place & won, 1.0, 0.0))
    sign = jnp.where(player == 0, 1.0, -1.0)
    reward = jnp.stack([mover_reward * sign, -mover_reward * sign]).astype(jnp.float32)
    new_done = done | illegal | (place & (won | full))
    return reward, new_done, jnp.where(place & ~new_done, 1 - player, player), illegal

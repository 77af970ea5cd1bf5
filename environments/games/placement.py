"""What two-player placement games (tic-tac-toe, Connect Four) share: the end of a move
(who is paid, who moves next) and the time step built from the board; only the board
and its lines differ."""

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


def timestep(env, state, planes, legal, reward, illegal):
    """The time step of roles ``first`` and ``second`` from ``planes`` ``f32[..., 2]`` (the
    first player's marks, then the second's: each role sees its own first) and ``legal``
    ``bool[A]`` (all True once the game is over); only the mover is active."""
    legal = legal | state.done
    is_first = state.player == 0
    return env.make_timestep(
        obs={"first": planes[None], "second": planes[..., ::-1][None]},
        reward={"first": reward[0:1], "second": reward[1:2]},
        terminated=state.done,
        action_mask={"first": legal[None], "second": legal[None]},
        active={"first": (is_first & ~state.done)[None], "second": (~is_first & ~state.done)[None]},
        info={"illegal_action": illegal},
    )

"""Scripted opponents of the text games, for evaluating a language policy against them.

Each is a jit-able ``policy(key, state) -> i32[]``: the index of the reply to make in
one game's ``TextState`` among its reply strings -- the move code (the game's canonical
move strings, ``Opponent.build``'s default) for tic-tac-toe and Connect Four, an index
into ``NEGOTIATION_REPLIES`` for negotiation. ``opponents(env)`` gives a game's by name,
each as ``(policy, strings)`` (``strings`` None: the canonical ones), for
``jaxagents.lm.episode.Opponent.build(env, tokenizer, policy, strings)``:

* tic-tac-toe: ``minimax`` -- exact minimax (``games.tic_tac_toe_minimax``: a table of
  every position's move values), uniformly among the optimal moves. It never loses.
* Connect Four: ``search`` -- depth-4 minimax (every sequence of four moves, which
  chooses what alpha-beta would at that depth: pruning changes no value), a win scored
  ``1000 - moves to it`` so that it wins soon and loses late, other leaves by counting
  the four-cell windows each player could still fill (1, 5 and 50 points for one, two
  and three discs; the opponent's count subtracted) plus 3 per disc in the centre
  column; ties broken uniformly. Exact minimax is out of reach at 6 x 7 inside a
  compiled program; at depth 4 it takes every immediate win, blocks every immediate
  threat and sees two-move combinations. ``random``: a uniform legal column.
* negotiation: ``accept`` (always ``[Accept]``), ``deny`` (always ``[Deny]``) and
  ``value`` (``[Accept]`` a pending offer that raises its inventory's value at its own
  prices, else ``[Deny]``); none makes offers.
"""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np

from jaxagents_environments.games.connect_four import has_four


def tic_tac_toe_minimax(env):
    """Exact minimax at a ``TextTicTacToe`` (uniform among the optimal moves)."""
    from jaxagents_environments.games.tic_tac_toe_minimax import minimax_action

    return lambda key, state: minimax_action(state.game.board, key)


# ------------------------------------------------------------------ Connect Four
WINDOW_POINTS = (0.0, 1.0, 5.0, 50.0, 0.0)
CENTRE_POINTS = 3.0
WIN = 1000.0


def _windows(rows: int, cols: int) -> np.ndarray:
    """``i32[W, 4]``: the flat cells of every line of four."""
    out = []
    for r in range(rows):
        for c in range(cols):
            for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
                cells = [(r + k * dr, c + k * dc) for k in range(4)]
                if all(0 <= y < rows and 0 <= x < cols for y, x in cells):
                    out.append([y * cols + x for y, x in cells])
    return np.asarray(out, np.int32)


def connect_four_score(board: jax.Array, mark: jax.Array) -> jax.Array:
    """``f32[...]``: the heuristic value of boards ``i32[..., R, C]`` for ``mark`` (1 or 2)."""
    rows, cols = board.shape[-2:]
    flat = board.reshape(*board.shape[:-2], rows * cols)
    cells = flat[..., jnp.asarray(_windows(rows, cols))]  # [..., W, 4]
    own = jnp.sum(cells == mark[..., None, None], -1)
    other = jnp.sum((cells != 0) & (cells != mark[..., None, None]), -1)
    points = jnp.asarray(WINDOW_POINTS)
    score = jnp.sum(jnp.where(other == 0, points[own], 0.0) - jnp.where(own == 0, points[other], 0.0), -1)
    centre = jnp.sum(board[..., :, cols // 2] == mark[..., None], -1)
    return score + CENTRE_POINTS * centre


def connect_four_values(board: jax.Array, mark: jax.Array, depth: int = 4) -> jax.Array:
    """``f32[C]``: the depth-``depth`` minimax value of each column for ``mark`` (1 or 2)
    to move on ``board`` ``i32[R, C]`` (-inf for a full column)."""
    rows, cols = board.shape
    seqs = jnp.asarray(np.array(list(itertools.product(range(cols), repeat=depth)), np.int32))  # [N, d]
    n = seqs.shape[0]
    boards = jnp.broadcast_to(board, (n, rows, cols))
    live = jnp.ones(n, bool)
    illegal, ended, end_value = [], [], []
    for t in range(depth):
        m = jnp.where(t % 2 == 0, mark, 3 - mark)
        col = seqs[:, t]
        column = jnp.take_along_axis(boards, col[:, None, None], axis=2)[:, :, 0]  # [N, R]
        legal = column[:, 0] == 0
        row = jnp.sum(column == 0, axis=1) - 1  # the lowest empty cell
        place = live & legal
        boards = jnp.where(place[:, None, None] & (jnp.arange(rows)[None, :, None] == row[:, None, None])
                           & (jnp.arange(cols)[None, None, :] == col[:, None, None]), m, boards)
        won = place & has_four(boards == m)
        full = place & ~won & jnp.all(boards[:, 0] != 0, axis=1)
        sign = 1.0 if t % 2 == 0 else -1.0
        illegal.append(live & ~legal)
        ended.append(won | full)
        end_value.append(jnp.where(won, sign * (WIN - t), 0.0))
        live = place & ~won & ~full
    value = connect_four_score(boards, jnp.broadcast_to(mark, (n,)))
    # back up: at level t the children are the moves t (max for mark, min for the other)
    for t in range(depth - 1, -1, -1):
        step = cols ** (depth - t - 1)  # leaves per child at this level
        first = jnp.arange(0, n, step)
        v = jnp.where(ended[t][first], end_value[t][first], value)
        maximise = t % 2 == 0
        v = jnp.where(illegal[t][first], -jnp.inf if maximise else jnp.inf, v)
        if t == 0:
            return jnp.where(illegal[0][first], -jnp.inf, v)
        v = v.reshape(-1, cols)
        best = jnp.max(v, 1) if maximise else jnp.min(v, 1)
        # a node whose every move is illegal is a full board: decided earlier, never used
        value = jnp.where(jnp.isfinite(best), best, 0.0)


def connect_four_search(env, depth: int = 4):
    """Depth-``depth`` minimax at a ``TextConnectFour`` (see the module docstring)."""
    def policy(key, state):
        values = connect_four_values(state.game.board, state.game.player + 1, depth)
        best = values >= jnp.max(values) - 1e-6
        return jax.random.categorical(key, jnp.where(best, 0.0, -jnp.inf)).astype(jnp.int32)

    return policy


def connect_four_random(env):
    """A uniform legal column at a ``TextConnectFour``."""
    return lambda key, state: jax.random.categorical(
        key, jnp.where(state.game.board[0] == 0, 0.0, -jnp.inf)).astype(jnp.int32)


# ------------------------------------------------------------------ negotiation
NEGOTIATION_REPLIES = ("[Accept]", "[Deny]")


def negotiation_policies(env) -> dict:
    """``accept``, ``deny`` and ``value`` at a ``TextSimpleNegotiation`` (indices into
    ``NEGOTIATION_REPLIES``)."""
    accept, deny = 0, 1

    def value(key, state):
        e, p = state.extra, state.player
        # the acceptor gets what the proposer offered and gives what it asked for
        gain = jnp.sum(e.values[p] * (e.give - e.take))
        can_pay = jnp.all(e.resources[p] >= e.take)
        return jnp.where(e.pending & can_pay & (gain > 0), accept, deny).astype(jnp.int32)

    return {"accept": lambda key, state: jnp.int32(accept), "deny": lambda key, state: jnp.int32(deny), "value": value}


def opponents(env) -> dict:
    """A text game's scripted opponents by name (see the module docstring)."""
    from jaxagents_environments.text.connect_four import TextConnectFour
    from jaxagents_environments.text.negotiation import TextSimpleNegotiation
    from jaxagents_environments.text.tic_tac_toe import TextTicTacToe

    if isinstance(env, TextTicTacToe):
        return {"minimax": (tic_tac_toe_minimax(env), None)}
    if isinstance(env, TextConnectFour):
        return {"search": (connect_four_search(env), None), "random": (connect_four_random(env), None)}
    if isinstance(env, TextSimpleNegotiation):
        return {k: (v, NEGOTIATION_REPLIES) for k, v in negotiation_policies(env).items()}
    raise ValueError(f"no scripted opponents for {type(env).__name__}; games with them: tic-tac-toe, Connect Four, "
                     "negotiation")

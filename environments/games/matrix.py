"""Repeated two-player matrix games.

Rules. Each step both players pick an action at once; the row player gets
``payoff[0, a_row, a_col]`` and the column player ``payoff[1, a_row, a_col]``.
The episode lasts ``horizon`` steps and then *terminates* (the horizon is part of
the game and is visible in the observation).

Roles: ``row`` and ``column``, one agent each, ``Discrete(A)`` actions.

Observation (memory-1, from the observer's point of view), ``f32[2 * (A + 1) + 1]``:
one-hot of the observer's previous action (slot ``A`` = "no previous step"), one-hot
of the opponent's previous action (same layout), and ``t / horizon``.

Out-of-range actions are clipped to ``[0, A-1]`` (documented, deterministic) and
flagged in ``info["illegal_action"]``; matrix games have no other illegal actions.

Standard payoffs (action 0 first):

=================  ======================  =====================================
game               actions                 row payoffs (column's by symmetry)
=================  ======================  =====================================
prisoners_dilemma  cooperate, defect       R=3, S=0, T=5, P=1
stag_hunt          stag, hare              4,4 / 0,3 / 3,0 / 3,3
chicken            swerve, straight        0,0 / -1,1 / 1,-1 / -10,-10
matching_pennies   heads, tails            row +1 on a match, -1 otherwise
coordination       a, b                    1 if both pick the same action, else 0
=================  ======================  =====================================
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxagents.core import Box, Discrete, Env, Role
from jaxagents.core.validate import check_positive_int

GAMES: dict[str, np.ndarray] = {
    # payoff[player, row_action, column_action]
    "prisoners_dilemma": np.array([[[3, 0], [5, 1]], [[3, 5], [0, 1]]], np.float32),
    "stag_hunt": np.array([[[4, 0], [3, 3]], [[4, 3], [0, 3]]], np.float32),
    "chicken": np.array([[[0, -1], [1, -10]], [[0, 1], [-1, -10]]], np.float32),
    "matching_pennies": np.array([[[1, -1], [-1, 1]], [[-1, 1], [1, -1]]], np.float32),
    "coordination": np.array([[[1, 0], [0, 1]], [[1, 0], [0, 1]]], np.float32),
}

ROLES = ("row", "column")


@struct.dataclass
class MatrixParams:
    """Params of a repeated two-player matrix game.

    Attributes:
        payoff: ``f32[2, A, A]``: ``payoff[0, i, j]`` is the row player's reward and
            ``payoff[1, i, j]`` the column player's when row plays ``i`` and column
            ``j`` (``A`` actions each).
        horizon: ``i32[]`` steps per episode, after which it terminates (>= 1).
    """

    payoff: jax.Array
    horizon: jax.Array


@struct.dataclass
class MatrixState:
    """``last_actions``: ``i32[2]`` previous (row, column) actions, ``A`` before the
    first step; ``t``: ``i32[]`` steps taken."""

    last_actions: jax.Array
    t: jax.Array


class MatrixGame(Env):
    """A repeated matrix game (see the module docstring).

    Args:
        game: one of ``GAMES`` (ignored when ``payoff`` is given).
        payoff: optional custom payoff array of shape ``(2, A, A)``.
        horizon: default steps per episode (a param: sweepable and vmappable).
    """

    def __init__(self, game: str = "prisoners_dilemma", payoff=None, horizon: int = 10):
        if payoff is None:
            if game not in GAMES:
                raise ValueError(f"game must be one of {sorted(GAMES)}, got {game!r}")
            payoff = GAMES[game]
        payoff = np.asarray(payoff, np.float32)
        if payoff.ndim != 3 or payoff.shape[0] != 2 or payoff.shape[1] != payoff.shape[2] or payoff.shape[1] < 1:
            raise ValueError(f"payoff must have shape (2, A, A) with A >= 1, got {payoff.shape}")
        if not np.isfinite(payoff).all():
            raise ValueError("payoff must be finite")
        horizon = check_positive_int("horizon", horizon)
        self.game = game
        self._payoff = payoff
        self._horizon = int(horizon)
        self.num_actions = payoff.shape[1]
        dim = 2 * (self.num_actions + 1) + 1
        obs_space = Box(0.0, 1.0, (dim,), jnp.float32)
        self.roles = {r: Role(1, obs_space, Discrete(self.num_actions), always_legal=True, always_active=True) for r in ROLES}

    def default_params(self) -> MatrixParams:
        return MatrixParams(payoff=jnp.asarray(self._payoff), horizon=jnp.asarray(self._horizon, jnp.int32))

    def check_params(self, params: MatrixParams) -> None:
        a = self.num_actions
        if params.payoff.shape != (2, a, a):
            raise ValueError(f"params.payoff must have shape (2, {a}, {a}), got {params.payoff.shape}")
        if not np.isfinite(params.payoff).all():
            raise ValueError("params.payoff must be finite")
        if np.any(params.horizon < 1):
            raise ValueError(f"params.horizon must be >= 1, got {params.horizon}")

    def _obs(self, state: MatrixState, params: MatrixParams) -> dict:
        a = self.num_actions
        own = jax.nn.one_hot(state.last_actions, a + 1)  # [2, A+1]
        frac = (state.t / params.horizon).astype(jnp.float32)[None]
        return {
            "row": jnp.concatenate([own[0], own[1], frac])[None],
            "column": jnp.concatenate([own[1], own[0], frac])[None],
        }

    def reset_env(self, key, params):
        state = MatrixState(last_actions=jnp.full((2,), self.num_actions, jnp.int32), t=jnp.zeros((), jnp.int32))
        return state, self.make_timestep(self._obs(state, params), info={"illegal_action": jnp.zeros((), bool)})

    def step_env(self, key, state, actions, params):
        raw = jnp.stack([actions["row"][0], actions["column"][0]])
        acts = jnp.clip(raw, 0, self.num_actions - 1)
        r = params.payoff[:, acts[0], acts[1]]  # [2]
        state = MatrixState(last_actions=acts, t=state.t + 1)
        return state, self.make_timestep(
            self._obs(state, params),
            reward={"row": r[0:1], "column": r[1:2]},
            terminated=state.t >= params.horizon,
            info={"illegal_action": jnp.any(raw != acts)},
        )

    def global_obs(self, state, params=None):
        """Both players' previous actions (one-hot) and the time fraction: ``f32[2A+3]``."""
        params = self.default_params() if params is None else params
        return self._obs(state, params)["row"][0]

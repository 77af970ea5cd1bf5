"""Crowd modelling: OpenSpiel's mean-field "beach bar" game on a ring (1-D) or a torus (2-D).

Rules (OpenSpiel ``python_mfg_crowd_modelling`` / ``mfg_crowd_modelling`` for 1-D and
``mfg_crowd_modelling_2d`` for 2-D; Perrin et al. 2020, section 4.2). Each agent sits on
a cell of a ring of ``size`` cells (1-D) or of a ``size x size`` torus (2-D). At every
step it picks a move, then a random move ("noise") is applied, with wrap-around:

* 1-D actions ``0, 1, 2`` move by ``-1, 0, +1`` (action 1 is neutral);
* 2-D actions ``0..4`` move by ``(dx, dy) = (0,-1), (-1,0), (0,0), (1,0), (0,1)``
  (down, left, neutral, right, up; action 2 is neutral);
* noise: with ``noise = params.noise`` (OpenSpiel's ``noise_intensity``, default 1),
  the random move is the neutral move with probability ``1 - noise + noise / L`` and
  each other legal move with probability ``noise / L``, ``L`` = number of legal moves
  at the cell reached by the agent's own move (1-D: uniform over the 3 moves).

Cells marked ``#`` in a 2-D ``layout`` are forbidden: a move into one is illegal
(masked in ``action_mask``; OpenSpiel's legal actions) and never drawn as noise.
Taken anyway, an illegal or out-of-range action acts as the neutral action (no move,
no move cost) and is counted in ``info["illegal_action"]`` (fraction of agents).

Reward of an agent at cell ``x`` at time ``t`` choosing move ``a``, with ``mu_t`` the
population histogram (OpenSpiel's constants are the defaults):

    r = position_reward[x] - crowd_aversion * log(mu_t[x] + 1e-25)
        - [t < H - 1] * move_cost * (|dx| + |dy|) * (mu_{t+1}[x_{t+1}] if congestion else 1)

``position_reward`` defaults to ``1 - |x - c| / (size // 2)`` in 1-D and
``(1 - 2 |x - c| / size) + (1 - 2 |y - c| / size)`` in 2-D with ``c = size // 2``;
``move_cost = 1 / size``; ``crowd_aversion = 1``. OpenSpiel charges the move cost of
``a_t`` at the next decision node (its reward depends on the last action); charging
it at step ``t`` and not charging the last step's move gives the same return for every
trajectory, and a reward that depends only on the current state and action.

Differences from OpenSpiel, on purpose: the 2-D game uses the actual initial
distribution at ``t = 0`` (OpenSpiel's 2-D state starts with a uniform distribution
whatever ``initial_distribution`` says, which only adds a constant to every value);
the default initial distribution is uniform over the *free* cells (OpenSpiel's is
uniform over all cells, and its initial chance outcome for ``(x, y)`` puts the agent on
``(y, x)``). Note also that
OpenSpiel's python MFG algorithms cache values by ``(x, t)``, ignoring the last action,
so their best responses do not see the move cost (see ``tests/.../test_crowd.py``).

Cell index: ``x`` in 1-D; ``x * size + y`` in 2-D (OpenSpiel's ``distribution_support``
order), with ``x`` the column and ``y`` the row of ``layout``.

Roles: ``"agent"`` (``num_agents``), ``Discrete(3)`` (1-D) or ``Discrete(5)`` (2-D).
Observation ``f32[D]``: the position, ``t / H``, and the population density ``mu_t`` at
the cell each action leads to (``A`` values). The position is one-hot (1-D: ``size``;
2-D: one-hot ``x`` and one-hot ``y``, OpenSpiel's encoding), so ``D = size + 4`` (1-D)
or ``2 size + 6`` (2-D); with ``onehot=False`` it is ``x / (size-1)`` (and
``y / (size-1)``): ``D = 5`` or ``8``, for 10^6 agents, where writing the observations
is most of a step. The episode terminates after ``horizon`` steps.
"""

from __future__ import annotations

from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxagents.core import Box, Discrete, Role
from jaxagents.core.columns import agent_rows
from jaxagents_environments.meanfield.base import (
    ROLE, MeanFieldEnv, check_distribution, check_int_arg, check_range, check_shape, histogram, lookup,
)

EPS = 1e-25  # OpenSpiel's epsilon inside log(mu)
MOVES = {
    1: np.array([[-1, 0], [0, 0], [1, 0]], np.int32),
    2: np.array([[0, -1], [-1, 0], [0, 0], [1, 0], [0, 1]], np.int32),
}
NEUTRAL = {1: 1, 2: 2}

LAYOUTS = {
    # Sutton, Precup & Singh's four rooms (1999), walls included: 13 x 13.
    "four_rooms": (
        "#############",
        "#     #     #",
        "#     #     #",
        "#           #",
        "#     #     #",
        "#     #     #",
        "## ####     #",
        "#     ### ###",
        "#     #     #",
        "#     #     #",
        "#           #",
        "#     #     #",
        "#############",
    ),
}


@struct.dataclass
class CrowdParams:
    """Everything a sweep may vary (shapes fixed by the constructor; ``S`` cells).

    Attributes:
        position_reward: ``f32[S]`` reward for standing on each cell.
        crowd_aversion: ``f32[]`` >= 0, coefficient of ``-log(mu[x])``.
        move_cost: ``f32[]`` >= 0, cost per unit of ``|dx| + |dy|``.
        noise: ``f32[]`` in ``[0, 1]``, OpenSpiel's ``noise_intensity``.
        congestion: ``bool[]``, scale the move cost by the arrival density.
        init_dist: ``f32[S]`` initial distribution (sums to 1, zero on walls).
    """

    position_reward: jax.Array
    crowd_aversion: jax.Array
    move_cost: jax.Array
    noise: jax.Array
    congestion: jax.Array
    init_dist: jax.Array


@struct.dataclass
class CrowdState:
    """``pos``: ``i32[N]`` cell of every agent; ``hist``: ``f32[S]`` its histogram;
    ``t``: ``i32[]`` steps taken."""

    pos: jax.Array
    hist: jax.Array
    t: jax.Array


def _parse_layout(layout, size: int) -> np.ndarray:
    """``bool[S]`` forbidden cells in cell order ``x * size + y``."""
    if layout is None or layout == "empty":
        return np.zeros(size * size, bool)
    if isinstance(layout, str):
        if layout not in LAYOUTS:
            raise ValueError(f"layout must be 'empty', one of {sorted(LAYOUTS)} or a list of rows, got {layout!r}")
        layout = LAYOUTS[layout]
    rows = list(layout)
    if len(rows) != size or any(len(r) != size for r in rows):
        raise ValueError(f"layout must be {size} rows of {size} characters (size={size}), got {len(rows)} rows")
    grid = np.array([[c == "#" for c in r] for r in rows], bool)  # [y, x]
    return grid.T.reshape(-1)  # cell x * size + y


class CrowdModelling(MeanFieldEnv):
    """OpenSpiel's crowd-modelling mean-field game (see the module docstring).

    Args:
        num_agents: ``N`` >= 1.
        size: cells per side, >= 2 (default: the layout's size, else OpenSpiel's 10).
        dims: 1 (ring) or 2 (torus).
        horizon: steps per episode, >= 1 (OpenSpiel default 10).
        layout: 2-D only: ``"empty"`` (default), ``"four_rooms"`` or ``size`` strings
            of ``size`` characters with ``#`` for forbidden cells.
        rng: per-agent random numbers, ``"hash"`` or ``"threefry"`` (see ``jaxagents/core/rng.py``).
        onehot: one-hot positions in the observation (default) or normalised coordinates.
    """

    def __init__(self, num_agents: int = 1000, size: int | None = None, dims: int = 1, horizon: int = 10,
                 layout: str | Sequence[str] | None = None, rng: str = "hash", onehot: bool = True):
        self._setup(num_agents, horizon, rng)
        if dims not in (1, 2):
            raise ValueError(f"dims must be 1 or 2, got {dims!r}")
        if layout is not None and dims == 1:
            raise ValueError("layout is only available with dims=2")
        if size is None:  # a layout fixes its size; otherwise OpenSpiel's 10
            rows = LAYOUTS.get(layout, ()) if isinstance(layout, str) else (layout or ())
            size = len(rows) or 10
        self.size = check_int_arg("size", size, 2)
        self.dims = dims
        S = self.size**dims
        moves = MOVES[dims]
        self.neutral = NEUTRAL[dims]
        self.num_states, self.num_actions = S, len(moves)
        A = self.num_actions
        forbidden = _parse_layout(layout, self.size) if dims == 2 else np.zeros(S, bool)
        if forbidden.all():
            raise ValueError("layout must have at least one free cell")
        self.forbidden = forbidden

        # static tables, cell order x * size + y (1-D: y = 0)
        cells = np.arange(S)
        x, y = (cells // self.size, cells % self.size) if dims == 2 else (cells, np.zeros(S, int))
        dx, dy = moves[:, 0], moves[:, 1]
        nx, ny = (x[:, None] + dx) % self.size, (y[:, None] + dy) % self.size
        dest = nx * self.size + ny if dims == 2 else nx
        legal = ~forbidden[dest]
        legal[:, self.neutral] = True  # never an empty row (a walled-in or forbidden cell stays put)
        self.legal_table = legal
        self._dest = dest.astype(np.int32)  # [S, A]
        self._eff_dest = np.where(legal, dest, cells[:, None]).astype(np.int32)
        move_len = (np.abs(dx) + np.abs(dy)).astype(np.float32)
        self._move_len = move_len  # [A]
        self._move_len_eff = np.where(legal, move_len[None, :], 0.0).astype(np.float32)  # [S, A]
        self._n_legal = legal.sum(1).astype(np.int32)
        order = np.argsort(~legal, axis=1, kind="stable")  # legal actions first, in action order
        self._legal_list = np.where(np.take_along_axis(legal, order, 1), order, self.neutral).astype(np.int32)
        noise_base = np.zeros((S, S), np.float32)  # uniform over legal moves from each cell
        np.add.at(noise_base, (np.repeat(cells, A), dest.reshape(-1)), (legal / legal.sum(1, keepdims=True)).reshape(-1))
        self._noise_base = noise_base
        self._xy = (x.astype(np.int32), y.astype(np.int32))

        self.onehot = bool(onehot)
        obs_dim = (self.size * dims if self.onehot else dims) + 1 + A
        # every move is legal without forbidden cells (moves wrap around the torus)
        self.roles = {ROLE: Role(self.n, Box(0.0, 1.0, (obs_dim,), jnp.float32), Discrete(A),
                                 always_legal=not forbidden.any(), always_active=True)}
        self.state_names = tuple(str(c) for c in range(S))

    # ------------------------------------------------------------------ params
    def default_params(self) -> CrowdParams:
        c = self.size // 2
        x, y = self._xy
        if self.dims == 1:
            pos = 1.0 - np.abs(x - c) / c
        else:
            pos = (1.0 - 2.0 / self.size * np.abs(x - c)) + (1.0 - 2.0 / self.size * np.abs(y - c))
        free = (~self.forbidden).astype(np.float32)
        return CrowdParams(
            position_reward=jnp.asarray(pos, jnp.float32),
            crowd_aversion=jnp.asarray(1.0, jnp.float32),
            move_cost=jnp.asarray(1.0 / self.size, jnp.float32),
            noise=jnp.asarray(1.0, jnp.float32),
            congestion=jnp.asarray(False),
            init_dist=jnp.asarray(free / free.sum(), jnp.float32),
        )

    def check_params(self, params: CrowdParams) -> None:
        S = self.num_states
        check_shape("position_reward", params.position_reward, (S,))
        check_range("position_reward", params.position_reward, None)
        for name in ("crowd_aversion", "move_cost", "noise", "congestion"):
            check_shape(name, getattr(params, name), ())
        check_range("crowd_aversion", params.crowd_aversion, 0.0)
        check_range("move_cost", params.move_cost, 0.0)
        check_range("noise", params.noise, 0.0, 1.0)
        if np.asarray(params.congestion).dtype != bool:
            raise ValueError(f"params.congestion must be a bool, got dtype {np.asarray(params.congestion).dtype}")
        check_distribution("params.init_dist", params.init_dist, S)
        if np.any(np.asarray(params.init_dist)[self.forbidden] > 0):
            raise ValueError("params.init_dist must be 0 on forbidden cells ('#' in the layout)")

    # ------------------------------------------------------------------ model
    def initial_distribution(self, params):
        return params.init_dist

    def _noise_matrix(self, params):
        S = self.num_states
        return (1.0 - params.noise) * jnp.eye(S, dtype=jnp.float32) + params.noise * jnp.asarray(self._noise_base)

    def transition(self, nu, t, params):
        return self._noise_matrix(params)[jnp.asarray(self._eff_dest)]  # [S, A, S]

    def reward(self, nu, mu_next, t, params):
        mu = nu.sum(1)
        base = params.position_reward - params.crowd_aversion * jnp.log(mu + EPS)
        arrival = jnp.where(params.congestion, self.transition(nu, t, params) @ mu_next, 1.0)  # [S, A]
        move = params.move_cost * jnp.asarray(self._move_len_eff) * arrival
        return base[:, None] - jnp.where(t < self.horizon - 1, move, 0.0)

    def agent_states(self, state):
        return state.pos

    # ------------------------------------------------------------------ agent view
    # Moves are index arithmetic and small tables are select chains (``lookup``): on
    # XLA:CPU, gathers feeding reductions are the slow path at 10^6 agents. Only a
    # layout with walls needs gathers (legality of the ``A`` neighbouring cells).
    def _move(self, pos, a):
        """``i32[N]`` cell reached from ``pos`` by the move of action ``a`` (walls ignored)."""
        mv = MOVES[self.dims]
        if self.dims == 1:
            return (pos + lookup(jnp.asarray(mv[:, 0]), a)) % self.size
        x, y = pos // self.size, pos % self.size
        x = (x + lookup(jnp.asarray(mv[:, 0]), a)) % self.size
        y = (y + lookup(jnp.asarray(mv[:, 1]), a)) % self.size
        return x * self.size + y

    def _free(self, cell):
        """``bool[N]``: ``cell`` is not a wall (None when there are no walls)."""
        return None if not self.forbidden.any() else ~jnp.asarray(self.forbidden)[cell]

    def _neighbours(self, pos):
        """Per action, the cell it leads to (walls: stay) and whether it is legal."""
        out = []
        for a in range(self.num_actions):
            cell = self._move(pos, jnp.full_like(pos, a))
            free = self._free(cell)
            out.append((cell, None) if free is None else (jnp.where(free, cell, pos), free))
        return out

    def _obs(self, pos, hist, t, neighbours):
        # [position (one-hot per coordinate, or normalised coordinates), time, the
        # histogram at each move's destination]
        coords = [pos] if self.dims == 1 else [pos // self.size, pos % self.size]
        w = self.size * self.dims if self.onehot else self.dims
        if self.onehot:
            onehots = [(i * self.size, c, self.size) for i, c in enumerate(coords)]
            columns = []
        else:
            onehots = []
            columns = [(i, c.astype(jnp.float32) / (self.size - 1)) for i, c in enumerate(coords)]
        tt = (jnp.minimum(t, self.horizon) / self.horizon).astype(jnp.float32)
        columns += [(w + 1 + k, lookup(hist, cell)) for k, (cell, _) in enumerate(neighbours)]
        return agent_rows(w + 1 + len(neighbours), {w: tt}, onehots=onehots, columns=columns)

    def observation_table(self, mu, t, params=None):
        """``f32[S, D]``: the observation an agent in each cell ``s`` sees when the
        population histogram is ``mu`` (``f32[S]``) at time ``t`` -- the agent view's
        own observation code, for evaluating agent-view policies on the distributional
        view (``policy_eval.py``). Legal actions per cell: ``legal_table``."""
        cells = jnp.arange(self.num_states, dtype=jnp.int32)
        return self._obs(cells, jnp.asarray(mu, jnp.float32), jnp.asarray(t, jnp.int32), self._neighbours(cells))

    def _mask(self, neighbours):
        if not self.forbidden.any():
            return jnp.ones((self.n, self.num_actions), bool)
        return jnp.stack([jnp.ones((self.n,), bool) if free is None else free for _, free in neighbours], 1)

    def _timestep(self, pos, hist, t, **kw):
        nb = self._neighbours(pos)
        return self.make_timestep({ROLE: self._obs(pos, hist, t, nb)}, action_mask={ROLE: self._mask(nb)}, **kw)

    def _info(self, hist, illegal, mean_reward):
        return {"histogram": hist, "illegal_action": jnp.asarray(illegal, jnp.float32),
                "mean_reward": jnp.asarray(mean_reward, jnp.float32)}

    def reset_env(self, key, params):
        u = self.uniforms(key)
        cdf = jnp.cumsum(params.init_dist)
        pos = jnp.clip(jnp.searchsorted(cdf / cdf[-1], u, side="right", method="scan_unrolled"), 0, self.num_states - 1).astype(jnp.int32)
        hist = histogram(pos, self.num_states)
        t = jnp.zeros((), jnp.int32)
        return CrowdState(pos=pos, hist=hist, t=t), self._timestep(pos, hist, t, info=self._info(hist, 0.0, 0.0))

    def step_env(self, key, state, actions, params):
        A, neutral = self.num_actions, self.neutral
        a, pos = actions[ROLE], state.pos
        a_c = jnp.clip(a, 0, A - 1)
        target = self._move(pos, a_c)
        free = self._free(target)
        ok = (a == a_c) if free is None else (a == a_c) & free
        a_eff = jnp.where(ok, a_c, neutral)
        mid = jnp.where(ok, target, pos)
        # noise: with probability `noise` the k-th legal move at `mid` (k uniform), else neutral
        u = self.uniforms(key)
        walls = self.forbidden.any()
        n_legal = jnp.asarray(self._n_legal)[mid] if walls else A
        k = jnp.minimum((u / jnp.maximum(params.noise, 1e-30) * n_legal).astype(jnp.int32), n_legal - 1)
        kth = jnp.asarray(self._legal_list.reshape(-1))[mid * A + k] if walls else k
        new_pos = self._move(mid, jnp.where(u < params.noise, kth, neutral))
        new_hist = histogram(new_pos, self.num_states)

        arrival = jnp.where(params.congestion, lookup(new_hist, new_pos), 1.0)
        move = params.move_cost * lookup(jnp.asarray(self._move_len), a_eff) * arrival
        reward = (lookup(params.position_reward - params.crowd_aversion * jnp.log(state.hist + EPS), pos)
                  - jnp.where(state.t < self.horizon - 1, move, 0.0))
        # keep the gathers (walls, large tables) out of the fusions that reduce the reward
        # (the mean below, a harness's sum): that is XLA:CPU's slow path (~25% of a step)
        reward = jax.lax.optimization_barrier(reward)
        t = state.t + 1
        return CrowdState(pos=new_pos, hist=new_hist, t=t), self._timestep(
            new_pos, new_hist, t, reward={ROLE: reward}, terminated=t >= self.horizon,
            info=self._info(new_hist, 1.0 - jnp.mean(ok), jnp.mean(reward)),
        )

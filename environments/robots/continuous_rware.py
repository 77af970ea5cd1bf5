"""Continuous RWARE: robots fetch requested shelves, deliver them to the right strip and
return them to free shelf cells (JaxRobotarium's ``rware``, a robot warehouse on the arena).

Layout. ``num_shelves`` shelf cells (even, 6) in two rows at ``y = +-0.25`` m, evenly
spaced in ``x`` from -1.1 to 0.6 m (cells are 0.25 m squares); shelf ``s`` starts in cell
``s``. The delivery strip is ``x > 1.6 - params.zone_width`` (0.5 m). ``num_robots``
robots (3) start on random cells of the bottom strip ``y < -0.45``. ``num_requests``
distinct shelves (default ``num_robots``) are requested at any time.

Actions. Discrete: the arena's five waypoint moves, where action 0 (stay) also *toggles*:
pick up or put down a shelf (out-of-range actions act as 0). Continuous: ``Box(-1, 1,
(3,))``, the arena's normalised ``(v, w)`` plus a toggle that fires when the third value is
``> 0`` (NaN: no toggle). With ``params.block_when_loaded`` (default on), a loaded robot's
discrete move is cancelled (it stays, without toggling) when the straight line to its
waypoint crosses a cell holding a shelf (sampled at 5 points, as the reference does), the
continuous counterpart of RWARE's aisles; continuous commands are not blocked.

After each step, from the state at its start:

* *delivery*: a robot carrying a requested shelf inside the strip delivers it (no toggle
  needed): ``params.delivery_reward`` (+1, team); it keeps carrying the shelf. Each
  vacated request is replaced by a random shelf that is neither requested nor just
  delivered (if there are too few such shelves, by one just delivered), so requests stay
  distinct;
* *return*: a loaded robot that toggles within ``params.pickup_radius`` (0.2 m) of an empty
  cell puts its shelf into the nearest such cell;
* *pick-up*: an empty robot that toggles within ``pickup_radius`` of a cell holding a shelf
  takes it from the nearest such cell.

Two robots claiming the same cell: the lower index wins, the other does nothing. Shelves
are conserved: each is in exactly one cell or carried by exactly one robot. No
termination: episodes are truncated after ``params.max_steps`` steps.

Observation (role ``robot``) ``f32[6 + 4 (N-1) + 4 C]``: own pose ``(x, y, cos, sin)``,
carrying flag and carrying-a-requested-shelf flag; for each other robot (order ``i+1,
i+2, ...``) the offset to it and its two flags; for each cell the offset to it, an
occupied flag and a holds-a-requested-shelf flag. ``global_obs`` (``f32[6 N + 4 C]``):
every pose and pair of flags, every cell's position and flags. ``info``: ``delivered``
(requested shelves delivered so far) and ``carrying`` (loaded robots), ``i32[]``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxagents.core import Box, Role
from jaxagents_environments.robots.arena import X_MAX, X_MIN, Y_MAX, Y_MIN, ArenaParams
from jaxagents_environments.robots.controller import STAY, waypoints
from jaxagents_environments.robots.material_transport import fill_rect
from jaxagents_environments.robots.scenario import RobotScenario, _check_int, others, pose_features

CELL_HALF = 0.125  # shelf cells are 0.25 m squares
MAX_SHELVES = 14  # two rows of at most 7 cells 0.28 m apart between x = -1.1 and 0.6


@struct.dataclass
class RwareParams:
    """Params of ``ContinuousRware``.

    Attributes:
        arena: the arena's ``ArenaParams`` (``arena.py``: time step, controller gains,
            robot radii and speed limits, waypoint distance, safety filter).
        max_steps: ``i32[]`` steps before the episode is truncated (>= 1; the
            constructor's ``max_steps``, default 100).
        pickup_radius: ``f32[]`` a toggle picks up or puts down a shelf at a cell this
            close (m, > 0).
        zone_width: ``f32[]`` width of the delivery strip at the right edge (m, in (0,
            0.85]).
        delivery_reward: ``f32[]`` team reward of each requested shelf delivered.
        block_when_loaded: ``bool[]`` a loaded robot's discrete move is cancelled when
            its path crosses a cell holding a shelf.
    """

    arena: ArenaParams
    max_steps: jax.Array
    pickup_radius: jax.Array
    zone_width: jax.Array
    delivery_reward: jax.Array
    block_when_loaded: jax.Array


@struct.dataclass
class RwareState:
    """Attributes: pose ``f32[N, 3]``; carry ``i32[N]`` shelf carried (-1: none); cell
    ``i32[C]`` shelf stored in each cell (-1: empty); request ``i32[Q]`` distinct requested
    shelves; toggle ``bool[N]`` who toggled in the last step; delivered ``i32[]``; t ``i32[]``."""

    pose: jax.Array
    carry: jax.Array
    cell: jax.Array
    request: jax.Array
    toggle: jax.Array
    delivered: jax.Array
    t: jax.Array


def _claims(mask, d2):
    """``bool[N, C]`` candidate (robot, cell) pairs -> the pairs that happen: each robot
    takes its nearest candidate, and a cell claimed by several robots goes to the first."""
    c = mask.shape[1]
    best = jnp.argmin(jnp.where(mask, d2, jnp.inf), -1)
    claim = mask.any(-1, keepdims=True) & (np.arange(c) == best[:, None])
    return claim & (jnp.cumsum(claim, 0) == 1)


class ContinuousRware(RobotScenario):
    """Robot warehouse on the arena, one role ``robot`` (see the module docstring).

    Args:
        num_robots: robot count (>= 1).
        num_shelves: shelf cells and shelves (even, 2..14).
        num_requests: requested shelves at a time (1..num_shelves; default ``num_robots``,
            capped at ``num_shelves``).
        **kwargs: the common arena options of ``RobotScenario``.
    """

    def __init__(self, num_robots: int = 3, num_shelves: int = 6, num_requests: int | None = None, **kwargs):
        self.num_shelves = _check_int("num_shelves", num_shelves, 2, MAX_SHELVES)
        if self.num_shelves % 2:
            raise ValueError(f"num_shelves must be even (two rows of cells), got {num_shelves}")
        _check_int("num_robots", num_robots, 1)
        q = min(num_robots, self.num_shelves) if num_requests is None else num_requests
        self.num_requests = _check_int("num_requests", q, 1, self.num_shelves)
        bottom = (X_MIN, X_MAX, Y_MIN, -0.45)  # below the shelves
        super().__init__({"robot": num_robots}, robot_region=bottom, size_args={"robot": "num_robots"}, **kwargs)
        cols = self.num_shelves // 2
        xs = np.linspace(X_MIN + 0.5, X_MAX - 1.0, cols) if cols > 1 else np.array([X_MIN + 0.5])
        self.cells = np.concatenate([np.stack([xs, np.full(cols, 0.25)], -1), np.stack([xs, np.full(cols, -0.25)], -1)])
        self.cells = self.cells.astype(np.float32)  # [C, 2]
        if self.action_mode == "continuous":  # (v, w, toggle)
            act = Box(-1.0, 1.0, (3,), jnp.float32)
            self.roles = {k: Role(r.num_agents, r.observation_space, act, always_legal=True, always_active=True)
                          for k, r in self.roles.items()}

    def obs_dim(self, role):
        return 6 + 4 * (self.num_robots - 1) + 4 * self.num_shelves

    @property
    def global_obs_dim(self):
        return 6 * self.num_robots + 4 * self.num_shelves

    def default_params(self):
        f = lambda x: jnp.asarray(x, jnp.float32)
        return RwareParams(arena=self.default_arena_params(), max_steps=jnp.asarray(self._max_steps, jnp.int32),
                           pickup_radius=f(0.2), zone_width=f(0.5), delivery_reward=f(1.0),
                           block_when_loaded=jnp.asarray(True))

    def check_task_params(self, params):
        r = np.asarray(params.pickup_radius)
        if not np.all(np.isfinite(r)) or np.any(r <= 0):
            raise ValueError(f"params.pickup_radius must be finite and > 0, got {r}")
        w = np.asarray(params.zone_width)
        if not np.all(np.isfinite(w)) or np.any(w <= 0) or np.any(w > 0.85):
            raise ValueError(f"params.zone_width must be in (0, 0.85] m (the strip must not reach the shelves), "
                             f"got {w}")
        if not np.all(np.isfinite(params.delivery_reward)):
            raise ValueError(f"params.delivery_reward must be finite, got {params.delivery_reward}")

    def reset_task(self, key, params):
        kp, kr = jax.random.split(key)
        request = jax.random.permutation(kr, self.num_shelves)[: self.num_requests].astype(jnp.int32)
        n = self.num_robots
        return RwareState(pose=self.spawn_robots(kp, params), carry=jnp.full((n,), -1, jnp.int32),
                          cell=jnp.arange(self.num_shelves, dtype=jnp.int32), request=request,
                          toggle=jnp.zeros((n,), bool), delivered=jnp.zeros((), jnp.int32), t=jnp.zeros((), jnp.int32))

    def step_env(self, key, state, actions, params):
        # the toggle is part of the action: record it in the state for update_task
        a = jnp.concatenate([actions[k] for k in self.roles], 0)
        if self.action_mode == "discrete":
            a = jnp.where((a >= 0) & (a < 5), a, STAY)
            toggle = a == STAY
            # loaded robots cannot drive through stored shelves
            target = waypoints(a, state.pose, params.arena)
            path = state.pose[:, None, :2] + np.linspace(0, 1, 5)[None, :, None] * (target - state.pose[:, :2])[:, None]
            gap = jnp.abs(path[:, :, None] - jnp.asarray(self.cells)[None, None])  # [N, 5, C, 2]
            hit = (gap[..., 0] < CELL_HALF) & (gap[..., 1] < CELL_HALF) & (state.cell >= 0)
            blocked = params.block_when_loaded & (state.carry >= 0) & jnp.any(hit, (1, 2))
            move = jnp.where(blocked, STAY, a)
        else:
            toggle = jnp.nan_to_num(a[:, 2]) > 0
            move = a[:, :2]
        state = state.replace(toggle=toggle)
        return super().step_env(key, state, self.split_roles(move), params)

    def update_task(self, key, prev, state, params):
        xy, carry, cell, request = state.pose[:, :2], state.carry, state.cell, state.request
        # delivery
        wanted = (carry[:, None] == request[None]) & (carry[:, None] >= 0)  # [N, Q]
        deliver = wanted & (xy[:, 0] > X_MAX - params.zone_width)[:, None]
        vacated = jnp.any(deliver, 0)  # [Q]
        shelves = np.arange(self.num_shelves)
        is_req = request[:, None] == shelves  # [Q, S]
        just = jnp.any(is_req & vacated[:, None], 0)
        tier = jnp.where(just, 1.0, jnp.where(jnp.any(is_req, 0), 2.0, 0.0))
        order = jnp.argsort(tier + jax.random.uniform(key, (self.num_shelves,)))  # free shelves first, at random
        new_request = jnp.where(vacated, order[jnp.cumsum(vacated) - 1], request).astype(jnp.int32)
        # returns and pick-ups (from the state at the start of the step)
        d2 = jnp.sum((xy[:, None] - jnp.asarray(self.cells)[None]) ** 2, -1)  # [N, C]
        near = d2 < params.pickup_radius**2
        put = _claims(near & (cell < 0)[None] & (state.toggle & (carry >= 0))[:, None], d2)
        take = _claims(near & (cell >= 0)[None] & (state.toggle & (carry < 0))[:, None], d2)
        cell = jnp.where(jnp.any(put, 0), jnp.max(jnp.where(put, carry[:, None], -1), 0), cell)
        cell = jnp.where(jnp.any(take, 0), -1, cell)
        got = jnp.max(jnp.where(take, state.cell[None], -1), 1)
        carry = jnp.where(jnp.any(take, 1), got, jnp.where(jnp.any(put, 1), -1, carry))
        n_delivered = jnp.sum(vacated)
        delivered = state.delivered + n_delivered.astype(jnp.int32)
        state = state.replace(carry=carry, cell=cell, request=new_request, delivered=delivered)
        info = {"delivered": delivered, "carrying": jnp.sum(carry >= 0).astype(jnp.int32)}
        reward = jnp.full((self.num_robots,), params.delivery_reward * n_delivered)
        return state, reward, jnp.zeros((), bool), info

    # ------------------------------------------------------------------ observations
    def _flags(self, state):
        """``f32[N, 2]`` robots (carrying, carrying a requested shelf) and ``f32[C, 2]``
        cells (occupied, holding a requested shelf)."""
        req = lambda s: jnp.any((s[:, None] == state.request[None]) & (s[:, None] >= 0), -1)
        robots = jnp.stack([state.carry >= 0, req(state.carry)], -1).astype(jnp.float32)
        cells = jnp.stack([state.cell >= 0, req(state.cell)], -1).astype(jnp.float32)
        return robots, cells

    def observe(self, state, params):
        n, xy = self.num_robots, state.pose[:, :2]
        robots, cells = self._flags(state)
        mates = jnp.concatenate([others(xy) - xy[:, None], others(robots)], -1)  # [N, N-1, 4]
        offset = jnp.asarray(self.cells)[None] - xy[:, None]  # [N, C, 2]
        cell_obs = jnp.concatenate([offset, jnp.broadcast_to(cells, (n,) + cells.shape)], -1)
        obs = jnp.concatenate([pose_features(state.pose), robots, mates.reshape(n, -1), cell_obs.reshape(n, -1)], -1)
        return {"robot": obs}

    def global_obs(self, state, params=None):
        robots, cells = self._flags(state)
        return jnp.concatenate([jnp.concatenate([pose_features(state.pose), robots], -1).reshape(-1),
                                jnp.concatenate([jnp.asarray(self.cells), cells], -1).reshape(-1)])

    # ------------------------------------------------------------------ picture
    def _shelf_colour(self, shelf, request):
        return (235, 150, 30) if shelf in request else (60, 90, 200)

    def draw_task(self, canvas, state, params):
        w = float(params.zone_width)
        fill_rect(canvas, X_MAX - w, Y_MIN, X_MAX, Y_MAX, (185, 225, 185))
        request = set(np.asarray(state.request).tolist())
        for (x, y), s in zip(self.cells, np.asarray(state.cell)):
            fill_rect(canvas, x - CELL_HALF, y - CELL_HALF, x + CELL_HALF, y + CELL_HALF, (200, 200, 200))
            if s >= 0:
                h = 0.075
                fill_rect(canvas, x - h, y - h, x + h, y + h, self._shelf_colour(int(s), request))

    def draw_overlay(self, canvas, state, params):
        request = set(np.asarray(state.request).tolist())
        for (x, y, _), s in zip(np.asarray(state.pose), np.asarray(state.carry)):
            if s >= 0:  # the carried shelf, on top of its robot
                h = 0.03
                fill_rect(canvas, x - h, y - h, x + h, y + h, self._shelf_colour(int(s), request))

"""Foraging: level-based foraging on robots (MARBLER / JaxRobotarium's ``foraging``).

Rules. ``num_robots`` robots with levels drawn uniformly from ``1..params.max_level``
and ``num_resources`` resources start on distinct random cells. A resource's level is
the sum of the levels of ``params.team_size`` robots chosen at random at reset, so every
resource can be foraged and needs (in general) several robots. After each step, a
resource that is still there is foraged when the robots within ``params.forage_radius``
(0.3 m) of it have levels summing to at least its level; several resources can be
foraged at once, and a robot counts for every resource it is near. Team reward per step:
``forage_reward`` (1) times the levels foraged in this step, plus ``time_penalty``
(-0.01) when resources remain after it. The episode terminates when every resource is
foraged, and is truncated after ``params.max_steps`` steps.

Against JaxRobotarium: its time penalty tests ``foraged < 0`` on an array whose foraged
entries were just set to 0, so it never fires (and would fire only once everything is
foraged); here it is charged every step while resources remain, and the episode ends when
all are foraged (theirs runs on). Resource levels there sum all robots but the first
``k``; here a random team of ``team_size``.

Observation (role ``robot``) ``f32[5 + 3 (N-1) + 4 R]``: own pose ``(x, y, cos, sin)``
and level; for each other robot (in the order ``i+1, i+2, ...``) the offset to it and
its level; for each resource the offset to it, its level and 1 if still there (0 once
foraged). ``global_obs``: every pose and level, each resource's position, level and
presence (``f32[5 N + 4 R]``). ``info``: ``foraged`` (resources foraged so far,
``i32[]``) and ``success`` (``bool[]``).

Actions (the ``action_mode`` constructor argument): ``"discrete"`` (default),
``Discrete(5)``: 0 stay, 1 move +y, 2 move -y, 3 move +x, 4 move -x, each a waypoint
``params.arena.step_dist`` (0.2 m) from where the robot is, kept 0.1 m inside the arena
(out-of-range ids act as stay); ``"continuous"``, ``Box(-1, 1, (2,))``: forward and
turning speed ``(v, w)`` as fractions of the robot's limits ``(max_speed, 2 max_speed /
axle length)`` (clipped to [-1, 1], NaN acts as 0; ``controller.py``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxagents_environments.robots.arena import ArenaParams
from jaxagents_environments.robots.scenario import RobotScenario, _check_int, others, pose_features


@struct.dataclass
class ForagingParams:
    """Params of ``Foraging``.

    Attributes:
        arena: the arena's ``ArenaParams`` (``arena.py``: time step, controller gains,
            robot radii and speed limits, waypoint distance, safety filter).
        max_steps: ``i32[]`` steps before the episode is truncated (>= 1; the
            constructor's ``max_steps``, default 100).
        forage_radius: ``f32[]`` robots this close to a resource count toward foraging
            it (m, > 0).
        max_level: ``i32[]`` robot levels are drawn from 1 .. max_level (>= 1).
        team_size: ``i32[]`` robots whose levels make a resource's level (1 .. N).
        forage_reward: ``f32[]`` team reward per level foraged.
        time_penalty: ``f32[]`` team reward of each step after which resources remain.
    """

    arena: ArenaParams
    max_steps: jax.Array
    forage_radius: jax.Array
    max_level: jax.Array
    team_size: jax.Array
    forage_reward: jax.Array
    time_penalty: jax.Array


@struct.dataclass
class ForagingState:
    """Attributes: pose ``f32[N, 3]``; level ``i32[N]`` robot levels; resource ``f32[R, 2]``
    positions; resource_level ``i32[R]``; present ``bool[R]`` not yet foraged; t ``i32[]``."""

    pose: jax.Array
    level: jax.Array
    resource: jax.Array
    resource_level: jax.Array
    present: jax.Array
    t: jax.Array


class Foraging(RobotScenario):
    """Level-based foraging with one role ``robot`` (see the module docstring).

    Args:
        num_robots: robot count (>= 1).
        num_resources: resource count (>= 1).
        **kwargs: the common arena options of ``RobotScenario``.
    """

    def __init__(self, num_robots: int = 4, num_resources: int = 2, **kwargs):
        self.num_resources = _check_int("num_resources", num_resources, 1)
        super().__init__({"robot": num_robots}, spawn_extra=self.num_resources, size_args={"robot": "num_robots"},
                         **kwargs)

    def obs_dim(self, role):
        return 5 + 3 * (self.num_robots - 1) + 4 * self.num_resources

    @property
    def global_obs_dim(self):
        return 5 * self.num_robots + 4 * self.num_resources

    def default_params(self):
        f = lambda x: jnp.asarray(x, jnp.float32)
        return ForagingParams(arena=self.default_arena_params(), max_steps=jnp.asarray(self._max_steps, jnp.int32),
                              forage_radius=f(0.3), max_level=jnp.asarray(2, jnp.int32),
                              team_size=jnp.asarray(min(2, self.num_robots), jnp.int32),
                              forage_reward=f(1.0), time_penalty=f(-0.01))

    def check_task_params(self, params):
        if not np.all(np.isfinite(params.forage_radius)) or np.any(params.forage_radius <= 0):
            raise ValueError(f"params.forage_radius must be finite and > 0, got {params.forage_radius}")
        if np.any(params.max_level < 1):
            raise ValueError(f"params.max_level must be >= 1, got {params.max_level}")
        if np.any((params.team_size < 1) | (params.team_size > self.num_robots)):
            raise ValueError(f"params.team_size must be in [1, {self.num_robots}] (num_robots), got {params.team_size}")
        for name in ("forage_reward", "time_penalty"):
            if not np.all(np.isfinite(getattr(params, name))):
                raise ValueError(f"params.{name} must be finite, got {getattr(params, name)}")

    def reset_task(self, key, params):
        kp, ku = jax.random.split(key)
        pose, resource = self.spawn_robots(kp, params, extra=self.num_resources)
        n, r = self.num_robots, self.num_resources
        u = jax.random.uniform(ku, (n + r * n,))  # one draw (each costs a threefry expansion)
        level = jnp.minimum(1 + jnp.floor(u[:n] * params.max_level).astype(jnp.int32), params.max_level)
        # each resource: the levels of a random team of team_size robots
        rank = jnp.argsort(jnp.argsort(u[n:].reshape(r, n), -1), -1)
        resource_level = jnp.sum(jnp.where(rank < params.team_size, level[None], 0), -1)
        return ForagingState(pose=pose, level=level.astype(jnp.int32), resource=resource,
                             resource_level=resource_level.astype(jnp.int32),
                             present=jnp.ones((self.num_resources,), bool), t=jnp.zeros((), jnp.int32))

    def update_task(self, key, prev, state, params):
        d2 = jnp.sum((state.resource[:, None] - state.pose[None, :, :2]) ** 2, -1)  # [R, N]
        near = d2 < params.forage_radius**2
        power = jnp.sum(jnp.where(near, state.level[None], 0), -1)
        foraged = state.present & (power >= state.resource_level)
        present = state.present & ~foraged
        remain = jnp.any(present)
        gained = jnp.sum(jnp.where(foraged, state.resource_level, 0)).astype(jnp.float32)
        team = params.forage_reward * gained + params.time_penalty * remain
        state = state.replace(present=present)
        info = {"foraged": jnp.sum(~present).astype(jnp.int32), "success": ~remain}
        return state, jnp.full((self.num_robots,), team), ~remain, info

    def observe(self, state, params):
        xy = state.pose[:, :2]
        level = state.level.astype(jnp.float32)
        mates = jnp.concatenate([others(xy) - xy[:, None], others(level)[..., None]], -1)  # [N, N-1, 3]
        res = jnp.concatenate([state.resource[None] - xy[:, None],
                               jnp.broadcast_to(state.resource_level.astype(jnp.float32), (self.num_robots, self.num_resources))[..., None],
                               jnp.broadcast_to(state.present.astype(jnp.float32), (self.num_robots, self.num_resources))[..., None]], -1)
        n = self.num_robots
        obs = jnp.concatenate([pose_features(state.pose), level[:, None], mates.reshape(n, -1), res.reshape(n, -1)], -1)
        return {"robot": obs}

    def global_obs(self, state, params=None):
        robots = jnp.concatenate([pose_features(state.pose), state.level[:, None].astype(jnp.float32)], -1)
        res = jnp.concatenate([state.resource, state.resource_level[:, None].astype(jnp.float32),
                               state.present[:, None].astype(jnp.float32)], -1)
        return jnp.concatenate([robots.reshape(-1), res.reshape(-1)])

    def draw_task(self, canvas, state, params):
        for xy, lvl, here in zip(np.asarray(state.resource), np.asarray(state.resource_level), np.asarray(state.present)):
            colour = (60, 160, 60) if here else (200, 200, 200)
            canvas.ring(xy[0], xy[1], float(params.forage_radius), 1, colour)
            canvas.disk(xy[0], xy[1], 0.03 + 0.01 * int(lvl), colour)
            canvas.pips(xy[0], xy[1] + 0.09, int(lvl), (30, 30, 30))

    def draw_overlay(self, canvas, state, params):
        for (x, y, _), lvl in zip(np.asarray(state.pose), np.asarray(state.level)):
            canvas.pips(x, y + 0.09, int(lvl), (30, 30, 30))

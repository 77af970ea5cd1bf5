"""Warehouse: two classes of robots shuttle goods by colour (MARBLER / JaxRobotarium's
``warehouse``).

Rules. ``num_green`` green robots (role ``green``) and ``num_red`` red robots (role
``red``) start on random cells between the two strips of width ``params.zone_width``
(0.5 m) at the left and right edges. Each strip is split at ``y = 0`` into a green and a
red half, crosswise: on the right (loading) strip green goods lie in the lower half and
red goods in the upper half; on the left (unloading) strip green goods go to the upper
half and red goods to the lower half. After each step an empty robot inside the loading
half of its colour loads one unit (``params.load_reward``, +1) and a loaded robot inside
the unloading half of its colour delivers it (``params.delivery_reward``, +3); a robot
holds one unit at most, and the supply never runs out. Team reward: the sum over
robots. No termination: episodes are truncated after ``params.max_steps`` steps.

Observation ``f32[7 + 5 (N-1)]`` (same layout for both roles): own pose ``(x, y, cos,
sin)``, class ``(green, red)`` one-hot and load flag; for each other robot (order ``i+1,
i+2, ...`` over the team, green robots first) the offset to it, its class and load flag.
``global_obs`` (``f32[7 N]``): every pose, class and load flag. ``info``: ``loads`` and
``deliveries`` (counts so far, ``i32[]``).

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

from jaxagents_environments.robots.arena import X_MAX, X_MIN, Y_MAX, Y_MIN, ArenaParams
from jaxagents_environments.robots.material_transport import fill_rect
from jaxagents_environments.robots.scenario import RobotScenario, others, pose_features

GREEN, RED = (50, 165, 70), (215, 55, 45)


@struct.dataclass
class WarehouseParams:
    """Params of ``Warehouse``.

    Attributes:
        arena: the arena's ``ArenaParams`` (``arena.py``: time step, controller gains,
            robot radii and speed limits, waypoint distance, safety filter).
        max_steps: ``i32[]`` steps before the episode is truncated (>= 1; the
            constructor's ``max_steps``, default 100).
        zone_width: ``f32[]`` width of the loading and unloading strips (m, in (0, 1.6)).
        load_reward: ``f32[]`` reward of each unit loaded.
        delivery_reward: ``f32[]`` reward of each unit delivered.
    """

    arena: ArenaParams
    max_steps: jax.Array
    zone_width: jax.Array
    load_reward: jax.Array
    delivery_reward: jax.Array


@struct.dataclass
class WarehouseState:
    """Attributes: pose ``f32[N, 3]`` (green robots, then red); payload ``bool[N]`` carrying a
    unit; loads, deliveries ``i32[]`` counts so far; t ``i32[]``."""

    pose: jax.Array
    payload: jax.Array
    loads: jax.Array
    deliveries: jax.Array
    t: jax.Array


class Warehouse(RobotScenario):
    """Warehouse with roles ``green`` and ``red`` (see the module docstring).

    Args:
        num_green, num_red: robots of each class (>= 1).
        **kwargs: the common arena options of ``RobotScenario``.
    """

    def __init__(self, num_green: int = 2, num_red: int = 2, **kwargs):
        middle = (X_MIN + 0.5, X_MAX - 0.5, Y_MIN, Y_MAX)  # outside the default strips
        super().__init__({"green": num_green, "red": num_red}, robot_region=middle,
                         size_args={"green": "num_green", "red": "num_red"}, **kwargs)
        self.num_green = self.role_sizes["green"]
        self._green = np.arange(self.num_robots) < self.num_green  # static class of each robot

    def obs_dim(self, role):
        return 7 + 5 * (self.num_robots - 1)

    @property
    def global_obs_dim(self):
        return 7 * self.num_robots

    def default_params(self):
        f = lambda x: jnp.asarray(x, jnp.float32)
        return WarehouseParams(arena=self.default_arena_params(), max_steps=jnp.asarray(self._max_steps, jnp.int32),
                               zone_width=f(0.5), load_reward=f(1.0), delivery_reward=f(3.0))

    def check_task_params(self, params):
        w = np.asarray(params.zone_width)
        if not np.all(np.isfinite(w)) or np.any(w <= 0) or np.any(w >= X_MAX):
            raise ValueError(f"params.zone_width must be in (0, {X_MAX}) m (the strips must not overlap), got {w}")
        for name in ("load_reward", "delivery_reward"):
            if not np.all(np.isfinite(getattr(params, name))):
                raise ValueError(f"params.{name} must be finite, got {getattr(params, name)}")

    def reset_task(self, key, params):
        zero = jnp.zeros((), jnp.int32)
        return WarehouseState(pose=self.spawn_robots(key, params), payload=jnp.zeros((self.num_robots,), bool),
                              loads=zero, deliveries=zero, t=zero)

    def update_task(self, key, prev, state, params):
        x, y = state.pose[:, 0], state.pose[:, 1]
        green = jnp.asarray(self._green)
        lower, upper = y < 0, y > 0
        load = ~state.payload & (x > X_MAX - params.zone_width) & jnp.where(green, lower, upper)
        deliver = state.payload & (x < X_MIN + params.zone_width) & jnp.where(green, upper, lower)
        n_load, n_deliver = jnp.sum(load), jnp.sum(deliver)
        team = params.load_reward * n_load + params.delivery_reward * n_deliver
        state = state.replace(payload=(state.payload & ~deliver) | load, loads=state.loads + n_load.astype(jnp.int32),
                              deliveries=state.deliveries + n_deliver.astype(jnp.int32))
        info = {"loads": state.loads, "deliveries": state.deliveries}
        return state, jnp.full((self.num_robots,), team), jnp.zeros((), bool), info

    def _robot_features(self, state):
        """``f32[N, 3]``: class one-hot (green, red) and load flag."""
        g = jnp.asarray(self._green, jnp.float32)
        return jnp.stack([g, 1 - g, state.payload.astype(jnp.float32)], -1)

    def observe(self, state, params):
        n, xy = self.num_robots, state.pose[:, :2]
        feats = self._robot_features(state)
        mates = jnp.concatenate([others(xy) - xy[:, None], others(feats)], -1)  # [N, N-1, 5]
        return self.split_roles(jnp.concatenate([pose_features(state.pose), feats, mates.reshape(n, -1)], -1))

    def global_obs(self, state, params=None):
        return jnp.concatenate([pose_features(state.pose), self._robot_features(state)], -1).reshape(-1)

    # ------------------------------------------------------------------ picture
    def draw_task(self, canvas, state, params):
        w = float(params.zone_width)
        light = lambda c: tuple(int(0.45 * v + 0.55 * 255) for v in c)
        fill_rect(canvas, X_MAX - w, Y_MIN, X_MAX, 0.0, light(GREEN))  # loading: green below, red above
        fill_rect(canvas, X_MAX - w, 0.0, X_MAX, Y_MAX, light(RED))
        fill_rect(canvas, X_MIN, 0.0, X_MIN + w, Y_MAX, light(GREEN))  # unloading: crosswise
        fill_rect(canvas, X_MIN, Y_MIN, X_MIN + w, 0.0, light(RED))

    def draw_overlay(self, canvas, state, params):
        for (x, y, _), p in zip(np.asarray(state.pose), np.asarray(state.payload)):
            if p:
                canvas.disk(x, y, 0.022, (60, 60, 60))

    def robot_colours(self, state, params):
        return np.where(self._green[:, None], np.array(GREEN, np.uint8), np.array(RED, np.uint8))

"""Navigation: every robot drives to its own goal.

Rules. ``num_robots`` robots start on random cells of the arena (barriers satisfied),
each with a goal on a random cell of an independent draw (goals are at least half a
cell apart and 0.1 m farther from the walls than robots must stay; a goal may lie where
another robot starts). Each step robot ``i`` receives
``-|p_i - g_i|`` (its distance to its goal after the step, metres; per-agent rewards).
The episode terminates when every robot is within ``params.goal_radius`` (0.1 m) of its
goal, and is truncated after ``params.max_steps`` steps.

Observation (role ``robot``, ``num_robots`` agents) ``f32[6]``: own pose
``(x, y, cos th, sin th)`` and the offset to the goal ``g - p``. ``global_obs``: every
robot's observation, concatenated (``f32[6 N]``). ``info``: the arena's (see
``arena_sim.py``) plus ``on_goal`` (robots within the goal radius, ``i32[]``) and
``success`` (``bool[]``).

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

from jaxagents_environments.robots.arena import (
    X_MAX, X_MIN, Y_MAX, Y_MIN, ArenaParams, make_grid, pose_draws, poses_from_uniforms, position_draws,
    positions_from_uniforms,
)
from jaxagents.core import threefry as rng
from jaxagents_environments.robots.scenario import RobotScenario, pose_features


@struct.dataclass
class NavigationParams:
    """Params of ``Navigation``.

    Attributes:
        arena: the arena's ``ArenaParams`` (``arena.py``: time step, controller gains,
            robot radii and speed limits, waypoint distance, safety filter).
        max_steps: ``i32[]`` steps before the episode is truncated (>= 1; the
            constructor's ``max_steps``, default 100).
        goal_radius: ``f32[]`` a robot within this distance of its goal is on it (m, > 0).
    """

    arena: ArenaParams
    max_steps: jax.Array
    goal_radius: jax.Array


@struct.dataclass
class NavigationState:
    """Attributes: pose ``f32[N, 3]``; goal ``f32[N, 2]``; t ``i32[]`` steps taken."""

    pose: jax.Array
    goal: jax.Array
    t: jax.Array


class Navigation(RobotScenario):
    """Navigation with one role ``robot`` (see the module docstring).

    Args:
        num_robots: robot count (>= 1).
        **kwargs: the common arena options of ``RobotScenario`` (``action_mode``,
            ``safety``, ``zero_order_hold``, ``ticks_per_step``, ``filter_iters``, ``max_steps``).
    """

    def __init__(self, num_robots: int = 4, **kwargs):
        super().__init__({"robot": num_robots}, size_args={"robot": "num_robots"}, **kwargs)
        # goals keep 0.1 m more from the walls than robots need (reachable by waypoints)
        inner = (X_MIN + 0.1, X_MAX - 0.1, Y_MIN + 0.1, Y_MAX - 0.1)
        self.goal_grid = make_grid(self.num_robots, 0.3, inner, name="num_robots (goals)")

    def obs_dim(self, role):
        return 6

    @property
    def global_obs_dim(self):
        return 6 * self.num_robots

    def default_params(self):
        return NavigationParams(arena=self.default_arena_params(), max_steps=jnp.asarray(self._max_steps, jnp.int32),
                                goal_radius=jnp.asarray(0.1, jnp.float32))

    def check_task_params(self, params):
        if not np.all(np.isfinite(params.goal_radius)) or np.any(params.goal_radius <= 0):
            raise ValueError(f"params.goal_radius must be finite and > 0, got {params.goal_radius}")

    def reset_task(self, key, params):
        n = self.num_robots
        jitter = 0.25 * self.goal_grid.spacing  # goals stay >= half a cell apart
        # the draws of spawn_robots(kp) and spawn_positions(kg), (kp, kg) = split(key), in one
        # threefry pass: each key's first numbers do not depend on how many are drawn
        sizes = (pose_draws(self.robot_grid, n), position_draws(self.goal_grid, n))
        # (rng: the same numbers as jax.random's, fused into one kernel instead of two rolled loops)
        u = jax.vmap(lambda k: rng.uniform(k, (max(sizes),)))(rng.split(key))
        return NavigationState(pose=poses_from_uniforms(u[0, :sizes[0]], self.robot_grid, n, params.arena),
                               goal=positions_from_uniforms(u[1, :sizes[1]], self.goal_grid, n, jitter),
                               t=jnp.zeros((), jnp.int32))

    def update_task(self, key, prev, state, params):
        dist = jnp.sqrt(jnp.sum((state.pose[:, :2] - state.goal) ** 2, -1))
        on_goal = dist < params.goal_radius
        success = jnp.all(on_goal)
        info = {"on_goal": jnp.sum(on_goal).astype(jnp.int32), "success": success}
        return state, -dist, success, info

    def observe(self, state, params):
        return {"robot": jnp.concatenate([pose_features(state.pose), state.goal - state.pose[:, :2]], -1)}

    def global_obs(self, state, params=None):
        params = self.default_params() if params is None else params
        return self.observe(state, params)["robot"].reshape(-1)

    def draw_task(self, canvas, state, params):
        from jaxagents_environments.robots.render import goal_colours

        colours = goal_colours(self.num_robots)
        for i, g in enumerate(np.asarray(state.goal)):
            canvas.ring(g[0], g[1], float(params.goal_radius), 2, colours[i])
            canvas.disk(g[0], g[1], 0.02, colours[i])

    def robot_colours(self, state, params):
        from jaxagents_environments.robots.render import goal_colours

        return goal_colours(self.num_robots)

"""Arctic transport: drones scout the terrain, ground robots cross it to the goal line
(MARBLER / JaxRobotarium's ``arctic_transport``).

Terrain. The arena is tiled by ``grid_rows x grid_cols`` tiles (8 x 12: 0.27 m wide,
0.25 m high), row 0 at the top. Tile codes: 0 ground, 1 ice, 2 water, 3 goal. The top row
is the goal, the bottom row is ground (the start), and every other tile is drawn at reset
from ``params.terrain_probs`` over (ground, ice, water) (uniform by default). The *goal
line* is the lower edge of the goal row, ``y = 1 - 2 / grid_rows``.

Robots. ``num_drones`` drones (role ``drone``, 2) and ``num_ground`` ground robots (role
``ground``, 2) start on random cells of the start row. Every robot is a Robotarium robot
(the drones are flying only in name: they have bodies and barriers). Each ground robot
has a type, ``params.ground_type`` (1 ice or 2 water; by default alternating, ice
first). During a step robot ``i``'s speed limit is ``params.arena.max_speed[i]`` times
``params.terrain_factor[class_i, tile]`` for the tile under its centre at the start of
the step, where class 0 is a drone and 1, 2 the ground types. Default factors (the
reference's 3 : 2 : 1 step lengths): drones 2/3 everywhere; a ground robot 1 on its own
terrain, 2/3 on ground and goal tiles, 1/3 on the other kind. Discrete moves set
waypoints ``params.arena.step_dist = 0.4`` m away so the limits bind (as in
``material_transport.py``): about 0.2, 0.13 and 0.07 m per 1 s step.

Rewards (team, per step, after the step): ``distance_penalty`` (-0.05) times the sum of
the ground robots' distances below the goal line (m), ``reach_reward`` (1) per ground
robot crossing the goal line for the first time in the episode, and ``time_penalty``
(-0.1) unless every ground robot is above the goal line. The episode terminates when every
ground robot is above the goal line at once, and is truncated after ``params.max_steps``
steps. With ``reach_reward = 0`` the reward is JaxRobotarium's.

Observation ``f32[11 + 5 (N-1) + 36 D]`` (same layout for both roles; ``D`` drones): own
pose ``(x, y, cos, sin)``, class one-hot (drone, ice, water), the tile under the robot
one-hot (ground, ice, water, goal); for each other robot (order ``i+1, i+2, ...``,
drones first) the offset to it and its class; for each drone the 3 x 3 tiles around the
drone's tile, one-hot (all zeros outside the arena), row by row from the top-left (what
the drones see, shared with the team). ``global_obs`` (``f32[7 N + 4 R C]``): every pose
and class, and the whole terrain one-hot. ``info``: ``reached`` (ground robots above the
goal line now, ``i32[]``) and ``success`` (``bool[]``).

Actions (the ``action_mode`` constructor argument): ``"discrete"`` (default),
``Discrete(5)``: 0 stay, 1 move +y, 2 move -y, 3 move +x, 4 move -x, each a waypoint
``params.arena.step_dist`` (0.4 m) from where the robot is, kept 0.1 m inside the arena
(out-of-range ids act as stay); ``"continuous"``, ``Box(-1, 1, (2,))``: forward and
turning speed ``(v, w)`` as fractions of the robot's limits ``(max_speed, 2 max_speed /
axle length)`` (clipped to [-1, 1], NaN acts as 0; ``controller.py``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxagents_environments.robots.arena import ARENA_HEIGHT, ARENA_WIDTH, X_MAX, X_MIN, Y_MAX, Y_MIN, ArenaParams
from jaxagents_environments.robots.material_transport import fill_rect
from jaxagents_environments.robots.scenario import RobotScenario, _check_int, others, pose_features

GROUND, ICE, WATER, GOAL = range(4)
TERRAIN_COLOURS = ((205, 190, 160), (200, 235, 245), (90, 140, 215), (150, 210, 140))
CLASS_COLOURS = ((70, 70, 70), (60, 200, 230), (30, 60, 190))  # drone, ice robot, water robot


@struct.dataclass
class ArcticParams:
    """Params of ``ArcticTransport``.

    Attributes:
        arena: the arena's ``ArenaParams`` (``arena.py``: time step, controller gains,
            robot radii and speed limits, waypoint distance, safety filter; ``arena.max_speed`` is the speed at a
            terrain factor of 1).
        max_steps: ``i32[]`` steps before the episode is truncated (>= 1; the
            constructor's ``max_steps``, default 100).
        ground_type: ``i32[num_ground]`` 1 (ice) or 2 (water) per ground robot.
        terrain_factor: ``f32[3, 4]`` speed factor of (drone, ice robot, water robot) on
            (ground, ice, water, goal) tiles (> 0).
        terrain_probs: ``f32[3]`` probabilities of ground, ice and water tiles (>= 0,
            positive sum; normalised).
        distance_penalty: ``f32[]`` team reward per metre of the ground robots'
            distances below the goal line (-0.05).
        reach_reward: ``f32[]`` team reward per ground robot crossing the goal line for
            the first time (1).
        time_penalty: ``f32[]`` team reward of each step that ends with a ground robot
            below the goal line (-0.1).
    """

    arena: ArenaParams
    max_steps: jax.Array
    ground_type: jax.Array
    terrain_factor: jax.Array
    terrain_probs: jax.Array
    distance_penalty: jax.Array
    reach_reward: jax.Array
    time_penalty: jax.Array


@struct.dataclass
class ArcticState:
    """Attributes: pose ``f32[N, 3]`` (drones, then ground robots); terrain ``i32[R, C]``
    tile codes; reached ``bool[num_ground]`` ground robots that have crossed the goal line
    this episode; t ``i32[]``."""

    pose: jax.Array
    terrain: jax.Array
    reached: jax.Array
    t: jax.Array


class ArcticTransport(RobotScenario):
    """Arctic transport with roles ``drone`` and ``ground`` (see the module docstring).

    Args:
        num_drones, num_ground: robots of each role (>= 1).
        grid_rows: tile rows, an int in [3, 100] (at least the goal row, one terrain
            row and the start row).
        grid_cols: tile columns across the arena, an int in [1, 100].
        **kwargs: the common arena options of ``RobotScenario``.
    """

    def __init__(self, num_drones: int = 2, num_ground: int = 2, grid_rows: int = 8, grid_cols: int = 12, **kwargs):
        self.grid_rows = _check_int("grid_rows", grid_rows, 3, 100)
        self.grid_cols = _check_int("grid_cols", grid_cols, 1, 100)
        self.tile_h, self.tile_w = ARENA_HEIGHT / self.grid_rows, ARENA_WIDTH / self.grid_cols
        self.goal_line = Y_MAX - self.tile_h
        start_row = (X_MIN, X_MAX, Y_MIN, Y_MIN + self.tile_h)
        super().__init__({"drone": num_drones, "ground": num_ground}, robot_region=start_row,
                         size_args={"drone": "num_drones", "ground": "num_ground"}, **kwargs)
        self.num_drones, self.num_ground = self.role_sizes["drone"], self.role_sizes["ground"]

    def obs_dim(self, role):
        return 11 + 5 * (self.num_robots - 1) + 36 * self.role_sizes["drone"]

    @property
    def global_obs_dim(self):
        return 7 * self.num_robots + 4 * self.grid_rows * self.grid_cols

    def default_params(self):
        f = lambda x: jnp.asarray(x, jnp.float32)
        third = 1.0 / 3.0
        factor = [[2 * third] * 4, [2 * third, 1.0, third, 2 * third], [2 * third, third, 1.0, 2 * third]]
        return ArcticParams(
            arena=self.default_arena_params().replace(step_dist=f(0.4)),
            max_steps=jnp.asarray(self._max_steps, jnp.int32),
            ground_type=jnp.asarray(1 + np.arange(self.num_ground) % 2, jnp.int32), terrain_factor=f(factor),
            terrain_probs=f([1.0, 1.0, 1.0]) / 3, distance_penalty=f(-0.05), reach_reward=f(1.0), time_penalty=f(-0.1))

    def check_task_params(self, params):
        gt = np.asarray(params.ground_type)
        if gt.shape != (self.num_ground,) or not np.isin(gt, (ICE, WATER)).all():
            raise ValueError(f"params.ground_type must have shape ({self.num_ground},) with values 1 (ice) or "
                             f"2 (water), got {gt!r}")
        tf = np.asarray(params.terrain_factor)
        if tf.shape != (3, 4) or not np.all(np.isfinite(tf)) or np.any(tf <= 0):
            raise ValueError(f"params.terrain_factor must be finite, > 0 and of shape (3, 4) (drone/ice/water robot "
                             f"x ground/ice/water/goal tile), got {tf!r}")
        tp = np.asarray(params.terrain_probs)
        if tp.shape != (3,) or not np.all(np.isfinite(tp)) or np.any(tp < 0) or tp.sum() <= 0:
            raise ValueError(f"params.terrain_probs must be 3 finite weights >= 0 with a positive sum, got {tp!r}")
        for name in ("distance_penalty", "reach_reward", "time_penalty"):
            if not np.all(np.isfinite(getattr(params, name))):
                raise ValueError(f"params.{name} must be finite, got {getattr(params, name)}")

    # ------------------------------------------------------------------ terrain
    def tile_of(self, xy):
        """``f32[..., 2]`` positions -> ``(row, col)`` ``i32[...]`` of the tile under them
        (clipped to the grid)."""
        row = jnp.clip(jnp.floor((Y_MAX - xy[..., 1]) / self.tile_h), 0, self.grid_rows - 1).astype(jnp.int32)
        col = jnp.clip(jnp.floor((xy[..., 0] - X_MIN) / self.tile_w), 0, self.grid_cols - 1).astype(jnp.int32)
        return row, col

    def robot_class(self, params):
        """``i32[N]``: 0 for drones, the ground type for ground robots."""
        return jnp.concatenate([jnp.zeros((self.num_drones,), jnp.int32), params.ground_type.astype(jnp.int32)])

    def reset_task(self, key, params):
        kp, kt = jax.random.split(key)
        probs = params.terrain_probs / jnp.sum(params.terrain_probs)
        inner = jax.random.choice(kt, 3, (self.grid_rows - 2, self.grid_cols), p=probs).astype(jnp.int32)
        terrain = jnp.concatenate([jnp.full((1, self.grid_cols), GOAL, jnp.int32), inner,
                                   jnp.full((1, self.grid_cols), GROUND, jnp.int32)])
        return ArcticState(pose=self.spawn_robots(kp, params), terrain=terrain,
                           reached=jnp.zeros((self.num_ground,), bool), t=jnp.zeros((), jnp.int32))

    def step_env(self, key, state, actions, params):
        # the speed limits of this step come from the tiles under the robots now
        row, col = self.tile_of(state.pose[:, :2])
        factor = params.terrain_factor[self.robot_class(params), state.terrain[row, col]]
        arena = params.arena.replace(max_speed=params.arena.max_speed * factor)
        return super().step_env(key, state, actions, params.replace(arena=arena))

    def update_task(self, key, prev, state, params):
        y = state.pose[self.num_drones:, 1]
        above = y > self.goal_line
        below = jnp.sum(jnp.maximum(self.goal_line - y, 0.0))
        first = above & ~state.reached
        success = jnp.all(above)
        team = (params.distance_penalty * below + params.reach_reward * jnp.sum(first)
                + params.time_penalty * ~success)
        info = {"reached": jnp.sum(above).astype(jnp.int32), "success": success}
        return state.replace(reached=state.reached | above), jnp.full((self.num_robots,), team), success, info

    # ------------------------------------------------------------------ observations
    def _one_hot(self, codes, k=4):
        return (codes[..., None] == jnp.arange(k)).astype(jnp.float32)

    def observe(self, state, params):
        n, xy = self.num_robots, state.pose[:, :2]
        cls = self._one_hot(self.robot_class(params), 3)
        row, col = self.tile_of(xy)
        here = self._one_hot(state.terrain[row, col])
        mates = jnp.concatenate([others(xy) - xy[:, None], others(cls)], -1)  # [N, N-1, 5]
        # each drone's 3 x 3 view, -1 (all-zero one-hot) outside the grid
        padded = jnp.pad(state.terrain, 1, constant_values=-1)
        d = np.arange(3)
        view = padded[row[: self.num_drones, None, None] + d[None, :, None],
                      col[: self.num_drones, None, None] + d[None, None, :]]  # [D, 3, 3]
        views = jnp.broadcast_to(self._one_hot(view).reshape(-1), (n, 36 * self.num_drones))
        obs = jnp.concatenate([pose_features(state.pose), cls, here, mates.reshape(n, -1), views], -1)
        return self.split_roles(obs)

    def global_obs(self, state, params=None):
        params = self.default_params() if params is None else params
        robots = jnp.concatenate([pose_features(state.pose), self._one_hot(self.robot_class(params), 3)], -1)
        return jnp.concatenate([robots.reshape(-1), self._one_hot(state.terrain).reshape(-1)])

    # ------------------------------------------------------------------ picture
    def draw_task(self, canvas, state, params):
        for (r, c), code in np.ndenumerate(np.asarray(state.terrain)):
            x0, y1 = X_MIN + c * self.tile_w, Y_MAX - r * self.tile_h
            fill_rect(canvas, x0, y1 - self.tile_h, x0 + self.tile_w, y1, TERRAIN_COLOURS[int(code)])
        canvas.line(X_MIN, self.goal_line, X_MAX, self.goal_line, max(1, int(canvas.scale // 75)), (40, 120, 40))

    def robot_colours(self, state, params):
        return np.array([CLASS_COLOURS[int(k)] for k in np.asarray(self.robot_class(params))], np.uint8)

"""Discovery: sensing robots reveal landmarks, tagging robots tag them (JaxRobotarium's
``discovery``, heterogeneous capabilities).

Rules. ``num_sensing`` sensing robots (role ``sensor``, radius ``params.sense_radius``,
0.45 m each) and ``num_tagging`` tagging robots (role ``tagger``, ``params.tag_radius``,
0.25 m each) start in the left third of the arena; ``num_landmarks`` landmarks (6) lie on
random cells of the whole arena, at least 0.25 m apart. After each step a landmark is
*sensed* once a sensor is within its radius of it, and then *tagged* once a tagger is
within its radius of it (sensing happens first, so both can happen in one step). With
``params.tag_requires_sensing=False`` unsensed landmarks can be tagged too (JaxRobotarium's
rule; taggers then search blind, since only sensed landmarks are observed). Team reward
per step: ``sense_reward`` (1) per newly sensed landmark, ``tag_reward`` (5) per newly
tagged one, plus ``time_penalty`` (-0.05) while untagged landmarks remain after the step.
The episode terminates when all are tagged, and is truncated after ``params.max_steps``.

Observation ``f32[6 + 4 (N-1) + 4 L]`` (same layout for both roles): own pose
``(x, y, cos, sin)`` and capabilities ``(sense radius, tag radius)`` (0 for what the robot
cannot do); for each other robot (order ``i+1, i+2, ...`` over the whole team, sensors
first) the offset to it and its heading; for each landmark the offset to it if sensed
(else 0), then ``sensed`` and ``tagged`` flags. ``global_obs`` (``f32[6 N + 4 L]``): every
pose and capability pair, every landmark's true position and flags. ``info``: ``sensed``,
``tagged`` (counts so far, ``i32[]``) and ``success`` (``bool[]``).

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

from jaxagents_environments.robots.arena import ARENA_WIDTH, X_MIN, Y_MAX, Y_MIN, ArenaParams, make_grid, spawn_positions
from jaxagents_environments.robots.scenario import RobotScenario, _check_int, others, pose_features


@struct.dataclass
class DiscoveryParams:
    """Params of ``Discovery``.

    Attributes:
        arena: the arena's ``ArenaParams`` (``arena.py``: time step, controller gains,
            robot radii and speed limits, waypoint distance, safety filter).
        max_steps: ``i32[]`` steps before the episode is truncated (>= 1; the
            constructor's ``max_steps``, default 100).
        sense_radius: ``f32[num_sensing]`` each sensor's sensing radius (m, > 0).
        tag_radius: ``f32[num_tagging]`` each tagger's tagging radius (m, > 0).
        sense_reward: ``f32[]`` team reward per newly sensed landmark.
        tag_reward: ``f32[]`` team reward per newly tagged landmark.
        time_penalty: ``f32[]`` team reward of each step after which untagged landmarks
            remain.
        tag_requires_sensing: ``bool[]`` only sensed landmarks can be tagged (False:
            JaxRobotarium's rule, any landmark).
    """

    arena: ArenaParams
    max_steps: jax.Array
    sense_radius: jax.Array
    tag_radius: jax.Array
    sense_reward: jax.Array
    tag_reward: jax.Array
    time_penalty: jax.Array
    tag_requires_sensing: jax.Array


@struct.dataclass
class DiscoveryState:
    """Attributes: pose ``f32[N, 3]`` (sensors, then taggers); landmark ``f32[L, 2]``;
    sensed, tagged ``bool[L]``; t ``i32[]``."""

    pose: jax.Array
    landmark: jax.Array
    sensed: jax.Array
    tagged: jax.Array
    t: jax.Array


class Discovery(RobotScenario):
    """Discovery with roles ``sensor`` and ``tagger`` (see the module docstring).

    Args:
        num_sensing, num_tagging: robots of each kind (>= 1).
        num_landmarks: landmark count (>= 1).
        **kwargs: the common arena options of ``RobotScenario``.
    """

    def __init__(self, num_sensing: int = 2, num_tagging: int = 2, num_landmarks: int = 6, **kwargs):
        self.num_landmarks = _check_int("num_landmarks", num_landmarks, 1)
        left = (X_MIN, X_MIN + ARENA_WIDTH / 3, Y_MIN, Y_MAX)
        super().__init__({"sensor": num_sensing, "tagger": num_tagging}, robot_region=left,
                         size_args={"sensor": "num_sensing", "tagger": "num_tagging"}, **kwargs)
        self.num_sensing, self.num_tagging = self.role_sizes["sensor"], self.role_sizes["tagger"]
        self.landmark_grid = make_grid(self.num_landmarks, 0.5, name="num_landmarks")

    def obs_dim(self, role):
        return 6 + 4 * (sum(self.role_sizes.values()) - 1) + 4 * self.num_landmarks

    @property
    def global_obs_dim(self):
        return 6 * self.num_robots + 4 * self.num_landmarks

    def default_params(self):
        f = lambda x: jnp.asarray(x, jnp.float32)
        return DiscoveryParams(
            arena=self.default_arena_params(), max_steps=jnp.asarray(self._max_steps, jnp.int32),
            sense_radius=jnp.full((self.num_sensing,), 0.45, jnp.float32),
            tag_radius=jnp.full((self.num_tagging,), 0.25, jnp.float32),
            sense_reward=f(1.0), tag_reward=f(5.0), time_penalty=f(-0.05), tag_requires_sensing=jnp.asarray(True))

    def check_task_params(self, params):
        for name, n in (("sense_radius", self.num_sensing), ("tag_radius", self.num_tagging)):
            v = np.asarray(getattr(params, name))
            if v.shape != (n,):
                raise ValueError(f"params.{name} must have shape ({n},) (one per robot of that kind), got {v.shape}")
            if not np.all(np.isfinite(v)) or np.any(v <= 0):
                raise ValueError(f"params.{name} must be finite and > 0, got {v}")
        for name in ("sense_reward", "tag_reward", "time_penalty"):
            if not np.all(np.isfinite(getattr(params, name))):
                raise ValueError(f"params.{name} must be finite, got {getattr(params, name)}")

    def capabilities(self, params) -> jax.Array:
        """``f32[N, 2]``: (sense radius, tag radius) of each robot, 0 where it has none."""
        zs, zt = jnp.zeros((self.num_sensing,)), jnp.zeros((self.num_tagging,))
        return jnp.stack([jnp.concatenate([params.sense_radius, zt]), jnp.concatenate([zs, params.tag_radius])], -1)

    def reset_task(self, key, params):
        kp, kl = jax.random.split(key)
        landmark = spawn_positions(kl, self.landmark_grid, self.num_landmarks, 0.25 * self.landmark_grid.spacing)
        no = jnp.zeros((self.num_landmarks,), bool)
        return DiscoveryState(pose=self.spawn_robots(kp, params), landmark=landmark, sensed=no, tagged=no,
                              t=jnp.zeros((), jnp.int32))

    def update_task(self, key, prev, state, params):
        cap = self.capabilities(params)
        d2 = jnp.sum((state.landmark[:, None] - state.pose[None, :, :2]) ** 2, -1)  # [L, N]
        sensed = state.sensed | jnp.any(d2 < cap[None, :, 0] ** 2, -1)
        reach = jnp.any(d2 < cap[None, :, 1] ** 2, -1)
        tagged = state.tagged | (reach & (sensed | ~params.tag_requires_sensing))
        new_sensed = jnp.sum(sensed & ~state.sensed)
        new_tagged = jnp.sum(tagged & ~state.tagged)
        remain = ~jnp.all(tagged)
        team = params.sense_reward * new_sensed + params.tag_reward * new_tagged + params.time_penalty * remain
        info = {"sensed": jnp.sum(sensed).astype(jnp.int32), "tagged": jnp.sum(tagged).astype(jnp.int32),
                "success": ~remain}
        return state.replace(sensed=sensed, tagged=tagged), jnp.full((self.num_robots,), team), ~remain, info

    def observe(self, state, params):
        n, xy = self.num_robots, state.pose[:, :2]
        feats = pose_features(state.pose)
        mates = jnp.concatenate([others(xy) - xy[:, None], others(feats[:, 2:])], -1)  # [N, N-1, 4]
        seen = state.sensed[None, :, None]
        offset = jnp.where(seen, state.landmark[None] - xy[:, None], 0.0)  # [N, L, 2]
        flags = jnp.broadcast_to(jnp.stack([state.sensed, state.tagged], -1).astype(jnp.float32),
                                 (n, self.num_landmarks, 2))
        obs = jnp.concatenate([feats, self.capabilities(params), mates.reshape(n, -1),
                               jnp.concatenate([offset, flags], -1).reshape(n, -1)], -1)
        return self.split_roles(obs)

    def global_obs(self, state, params=None):
        params = self.default_params() if params is None else params
        robots = jnp.concatenate([pose_features(state.pose), self.capabilities(params)], -1)
        marks = jnp.concatenate([state.landmark, state.sensed[:, None], state.tagged[:, None]], -1)
        return jnp.concatenate([robots.reshape(-1), marks.reshape(-1).astype(jnp.float32)])

    def draw_task(self, canvas, state, params):
        from jaxagents_environments.robots.render import ROLE_COLOURS

        cap = np.asarray(self.capabilities(params))
        for (x, y, _), (rs, rt) in zip(np.asarray(state.pose), cap):  # reach, in the role's colour
            canvas.ring(x, y, float(max(rs, rt)), 1, ROLE_COLOURS[0] if rs > 0 else ROLE_COLOURS[1])
        for xy, s, t in zip(np.asarray(state.landmark), np.asarray(state.sensed), np.asarray(state.tagged)):
            colour = (150, 150, 150) if t else ((235, 170, 30) if s else (40, 40, 40))
            canvas.disk(xy[0], xy[1], 0.035, colour)

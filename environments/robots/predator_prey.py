"""Predator-prey: robot predators chase a heuristic prey (JaxRobotarium's ``predator_prey``).

Rules. ``num_predators`` robots (3) and one prey start on distinct random cells. The
prey is a virtual point (not a robot: no body, no barrier), faster than the robots: each
step it moves to the candidate that maximises its distance to the nearest predator,
looking at the predators where they are at the start of the step (it moves while they
do). Candidates: staying, and 8 directions times 4 step lengths evenly spaced in
``[0.05, params.prey_step]`` (0.3 m; robots cover at most 0.2 m per 1 s step), clipped to
``params.prey_margin`` (0.1 m) inside the arena; ties go to the first candidate (staying).
After the step the team receives ``params.tag_reward`` (10) when any predator is within
``params.tag_radius`` (0.2 m) of the prey. Episodes are truncated after
``params.max_steps`` steps (no termination: a tag does not end the chase).

Observation (role ``predator``) ``f32[6 + 4 (N-1)]``: own pose ``(x, y, cos, sin)``, the
offset to the prey, and for each other predator (order ``i+1, i+2, ...``) the offset to it
and its heading ``(cos, sin)``. ``global_obs``: all poses and the prey (``f32[4 N + 2]``).
``info``: ``tagged`` (``bool[]``, this step).

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
from jaxagents_environments.robots.scenario import RobotScenario, others, pose_features

_ANGLES = np.linspace(0, 2 * np.pi, 8, endpoint=False)
_DIRECTIONS = np.stack([np.cos(_ANGLES), np.sin(_ANGLES)], -1).astype(np.float32)  # [8, 2]


@struct.dataclass
class PredatorPreyParams:
    """Params of ``PredatorPrey``.

    Attributes:
        arena: the arena's ``ArenaParams`` (``arena.py``: time step, controller gains,
            robot radii and speed limits, waypoint distance, safety filter).
        max_steps: ``i32[]`` steps before the episode is truncated (>= 1; the
            constructor's ``max_steps``, default 100).
        tag_radius: ``f32[]`` the prey is tagged when a predator is this close (m, > 0).
        tag_reward: ``f32[]`` team reward of a step that ends with the prey tagged.
        prey_step: ``f32[]`` the prey's longest move per step (m, >= 0.05).
        prey_margin: ``f32[]`` the prey stays this far inside the arena (m, >= 0).
    """

    arena: ArenaParams
    max_steps: jax.Array
    tag_radius: jax.Array
    tag_reward: jax.Array
    prey_step: jax.Array
    prey_margin: jax.Array


@struct.dataclass
class PredatorPreyState:
    """Attributes: pose ``f32[N, 3]``; prey ``f32[2]``; t ``i32[]``."""

    pose: jax.Array
    prey: jax.Array
    t: jax.Array


def prey_move(prey: jax.Array, predators: jax.Array, p: PredatorPreyParams) -> jax.Array:
    """The prey's next position ``f32[2]`` given the predators' ``f32[N, 2]``."""
    lengths = 0.05 + (p.prey_step - 0.05) * jnp.arange(4) / 3.0
    moves = (_DIRECTIONS[:, None] * lengths[None, :, None]).reshape(-1, 2)
    cand = jnp.concatenate([prey[None], prey + moves], 0)  # staying first
    m = p.prey_margin
    cand = jnp.clip(cand, jnp.array([X_MIN, Y_MIN]) + m, jnp.array([X_MAX, Y_MAX]) - m)
    nearest = jnp.min(jnp.sum((cand[:, None] - predators[None]) ** 2, -1), -1)
    return cand[jnp.argmax(nearest)]


class PredatorPrey(RobotScenario):
    """Predator-prey with one role ``predator`` (see the module docstring).

    Args:
        num_predators: robot count (>= 1).
        **kwargs: the common arena options of ``RobotScenario``.
    """

    def __init__(self, num_predators: int = 3, **kwargs):
        super().__init__({"predator": num_predators}, spawn_extra=1, size_args={"predator": "num_predators"}, **kwargs)

    def obs_dim(self, role):
        return 6 + 4 * (self.num_robots - 1)

    @property
    def global_obs_dim(self):
        return 4 * self.num_robots + 2

    def default_params(self):
        f = lambda x: jnp.asarray(x, jnp.float32)
        return PredatorPreyParams(arena=self.default_arena_params(), max_steps=jnp.asarray(self._max_steps, jnp.int32),
                                  tag_radius=f(0.2), tag_reward=f(10.0), prey_step=f(0.3), prey_margin=f(0.1))

    def check_task_params(self, params):
        if not np.all(np.isfinite(params.tag_radius)) or np.any(params.tag_radius <= 0):
            raise ValueError(f"params.tag_radius must be finite and > 0, got {params.tag_radius}")
        if not np.all(np.isfinite(params.tag_reward)):
            raise ValueError(f"params.tag_reward must be finite, got {params.tag_reward}")
        if not np.all(np.isfinite(params.prey_step)) or np.any(params.prey_step < 0.05):
            raise ValueError(f"params.prey_step must be >= 0.05 m, got {params.prey_step}")
        if np.any(params.prey_margin < 0) or np.any(params.prey_margin >= 1.0):
            raise ValueError(f"params.prey_margin must be in [0, 1) m, got {params.prey_margin}")

    def reset_task(self, key, params):
        pose, prey = self.spawn_robots(key, params, extra=1)
        return PredatorPreyState(pose=pose, prey=prey[0], t=jnp.zeros((), jnp.int32))

    def update_task(self, key, prev, state, params):
        prey = prey_move(prev.prey, prev.pose[:, :2], params)
        d2 = jnp.sum((state.pose[:, :2] - prey) ** 2, -1)
        tagged = jnp.any(d2 < params.tag_radius**2)
        reward = jnp.full((self.num_robots,), params.tag_reward * tagged)
        return state.replace(prey=prey), reward, jnp.zeros((), bool), {"tagged": tagged}

    def observe(self, state, params):
        xy = state.pose[:, :2]
        feats = pose_features(state.pose)
        mates = jnp.concatenate([others(xy) - xy[:, None], others(feats[:, 2:])], -1)  # [N, N-1, 4]
        obs = jnp.concatenate([feats, state.prey[None] - xy, mates.reshape(self.num_robots, -1)], -1)
        return {"predator": obs}

    def global_obs(self, state, params=None):
        return jnp.concatenate([pose_features(state.pose).reshape(-1), state.prey])

    def draw_task(self, canvas, state, params):
        prey = np.asarray(state.prey)
        near = np.any(np.sum((np.asarray(state.pose)[:, :2] - prey) ** 2, -1) < float(params.tag_radius) ** 2)
        canvas.ring(prey[0], prey[1], float(params.tag_radius), 1, (150, 150, 150))
        canvas.disk(prey[0], prey[1], 0.05, (220, 40, 40) if near else (40, 170, 60))

"""From actions to nominal commands: discrete waypoints and the position controller.

Discrete actions (``Discrete(5)``): 0 stay, 1 +y, 2 -y, 3 +x, 4 -x. A move sets a
waypoint ``step_dist`` (0.2 m) from where the robot is at the start of the step,
clipped to stay ``waypoint_margin`` (0.1 m) inside the arena; "stay" sets the robot's own
position. Out-of-range actions act as "stay". The waypoint holds for the whole step.

Position controller (per tick, or once per step with zero-order hold)::

    e = g - p,  phi = atan2(e_y, e_x)
    v = k_v |e| cos(phi - theta),  w = k_w |e| sin(phi - theta)      (k_v = 0.8, k_w = 3)

Continuous actions (``Box(-1, 1, (2,))``): ``(v, w)`` as fractions of the robot's own
limits ``(max_speed_i, 2 max_speed_i / L)``; values outside [-1, 1] are clipped, NaN acts
as 0. The wheel-speed limits then apply (both at +1 is more than the wheels can do: the
faster wheel saturates).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxagents_environments.robots.arena import AXLE_LENGTH, X_MAX, X_MIN, Y_MAX, Y_MIN, ArenaParams

STAY, UP, DOWN, RIGHT, LEFT = range(5)
ACTION_NAMES = ("stay", "+y", "-y", "+x", "-x")
# unit move of each discrete action (stay, +y, -y, +x, -x)
MOVES = np.array([[0, 0], [0, 1], [0, -1], [1, 0], [-1, 0]], np.float32)


def waypoints(actions: jax.Array, pose: jax.Array, p: ArenaParams) -> jax.Array:
    """``i32[N]`` discrete actions -> ``f32[N, 2]`` waypoints (see the module docstring)."""
    a = jnp.where((actions >= 0) & (actions < 5), actions, STAY)
    g = pose[:, :2] + jnp.asarray(MOVES)[a] * p.step_dist
    m = p.waypoint_margin
    lo = jnp.array([X_MIN, Y_MIN]) + m
    hi = jnp.array([X_MAX, Y_MAX]) - m
    # "stay" keeps the robot's own position even in the margin (no pull toward the centre)
    return jnp.where((a == STAY)[:, None], pose[:, :2], jnp.clip(g, lo, hi))


def position_controller(pose: jax.Array, goal: jax.Array, p: ArenaParams) -> jax.Array:
    """Nominal ``f32[N, 2]`` ``(v, w)`` driving each robot toward its ``goal`` ``f32[N, 2]``."""
    # |e| cos(phi - th) = e . (cos th, sin th) and |e| sin(phi - th) = e x (cos th, sin th):
    # the formula without atan2 and sqrt, and the heading's cos / sin are the ones the
    # Euler tick needs anyway (equal to float32 rounding; 0 at the goal, as atan2(0, 0) = 0 gives)
    ex, ey = goal[:, 0] - pose[:, 0], goal[:, 1] - pose[:, 1]
    c, s = jnp.cos(pose[:, 2]), jnp.sin(pose[:, 2])
    return jnp.stack([p.k_v * (ex * c + ey * s), p.k_w * (ey * c - ex * s)], -1)


def continuous_command(actions: jax.Array, p: ArenaParams) -> jax.Array:
    """``f32[N, 2]`` normalised ``(v, w)`` actions -> ``(v, w)`` in m/s and rad/s."""
    a = jnp.clip(jnp.nan_to_num(actions, nan=0.0), -1.0, 1.0)
    return a * jnp.stack([p.max_speed, 2 * p.max_speed / AXLE_LENGTH], -1)

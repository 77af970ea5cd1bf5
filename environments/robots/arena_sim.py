"""One environment step of the arena: ``ticks`` simulator ticks in a ``lax.scan``.

Per tick: nominal command (the position controller toward the step's waypoints, or the
continuous action), actuation noise and wheel-speed limits, the safety filter, one Euler
tick. Two ways to filter (a constructor choice, because a traced switch would compute both
under ``vmap``):

* per tick (``hold=False``, faithful): controller and QP at every tick, the QP's
  multipliers warm-started from the previous tick;
* zero-order hold (``hold=True``, what JaxRobotarium trains with): controller and QP
  once per step, the command held for all ticks. The held command still goes through the
  cheap guard (wheel limits, body and wall barriers) at every tick, so robots never
  collide or leave the arena; the pair barrier of the projected points can be violated
  within a step (the residual does not measure that; ``min_distance`` does).

``info`` of a step (all scalars): ``min_distance`` smallest centre distance over ticks and
pairs, ``collisions`` (tick, pair) events closer than ``r_i + r_j + 0.025``, ``boundary``
(tick, robot) events of a body crossing the arena's edge, ``filter_iters`` QP iterations
run this step (0 without the filter), ``filter_residual`` the largest pair-constraint
violation left by the QP (m/s), ``filter_intervention`` the mean change of the projected
points' velocity made by the filter (m/s).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from environments.robots.arena import WHEEL_RADIUS, ArenaParams, integrate, pair_metrics, wheel_limits
from environments.robots.controller import position_controller
from environments.robots.safety import guard, safety_filter, to_z

INFO_KEYS = ("min_distance", "collisions", "boundary", "filter_iters", "filter_residual", "filter_intervention")


def simulate(key, pose, target, p: ArenaParams, *, waypoint: bool, safety: bool, hold: bool, ticks: int, iters: int):
    """Advance ``pose`` (``f32[N, 3]``) by ``ticks`` ticks.

    Args:
        target: ``f32[N, 2]`` waypoints (``waypoint=True``) or ``(v, w)`` commands.
        safety, hold, ticks, iters: static choices (see the module docstring).

    Returns:
        ``(pose, info)`` with ``info`` the scalars of ``INFO_KEYS``.
    """
    n = pose.shape[0]
    l = p.projection_distance

    # all the step's noise in one draw (each draw is a threefry expansion to compile)
    noise = jax.random.normal(key, (ticks, n, 2)) * (p.actuation_noise * p.max_speed / WHEEL_RADIUS)[:, None]

    def nominal(pose_t, noise_t):
        vw = position_controller(pose_t, target, p) if waypoint else target
        return wheel_limits(vw, p.max_speed, noise_t)

    def change(vw, vw_hat):
        return jnp.mean(jnp.sqrt(jnp.sum((to_z(vw, l) - to_z(vw_hat, l)) ** 2, -1)))

    zero = jnp.zeros((), jnp.float32)
    if hold:
        held = nominal(pose, noise[0])
        residual, intervention = zero, zero
        if safety:
            safe, _, residual = safety_filter(held, pose, p, iters)
            intervention = change(safe, held)
            held = safe

        def tick(pose_t, _):
            vw = guard(held, pose_t, p) if safety else held
            pose_t = integrate(pose_t, vw, p.dt)
            return pose_t, pair_metrics(pose_t, p.radius)

        pose, (min_d, coll, out) = jax.lax.scan(tick, pose, None, length=ticks)
        residual = jnp.broadcast_to(residual, (1,))
        intervention = jnp.broadcast_to(intervention, (1,))
    else:

        def tick(carry, noise_t):
            pose_t, lam = carry
            vw_hat = nominal(pose_t, noise_t)
            res, inter = zero, zero
            vw = vw_hat
            if safety:
                vw, lam, res = safety_filter(vw_hat, pose_t, p, iters, lam)
                inter = change(vw, vw_hat)
            pose_t = integrate(pose_t, vw, p.dt)
            return (pose_t, lam), (pair_metrics(pose_t, p.radius), res, inter)

        lam0 = jnp.zeros((n, n) if safety else (), jnp.float32)  # warm start of the QP's multipliers
        (pose, _), ((min_d, coll, out), residual, intervention) = jax.lax.scan(tick, (pose, lam0), noise)
    info = {
        "min_distance": jnp.min(min_d),
        "collisions": jnp.sum(coll).astype(jnp.int32),
        "boundary": jnp.sum(out).astype(jnp.int32),
        "filter_iters": jnp.asarray((iters if hold else iters * ticks) if safety else 0, jnp.int32),
        "filter_residual": jnp.max(residual).astype(jnp.float32),
        "filter_intervention": jnp.mean(intervention).astype(jnp.float32),
    }
    return pose, info

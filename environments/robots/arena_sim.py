"""One environment step of the arena: ``ticks`` simulator ticks in a ``lax.scan``.

Per tick: nominal command (the position controller toward the step's waypoints, or the
continuous action), actuation noise and wheel-speed limits, the safety filter, one Euler
tick. Two ways to filter (a constructor choice, because a traced switch would compute both
under ``vmap``):

* per tick (``hold=False``, faithful): controller and QP at every tick, the QP's
  multipliers warm-started from the previous tick;
* zero-order hold (``hold=True``, what JaxRobotarium trains with): controller and QP
  once per step, the command held for all ticks. With the ``"guarded"`` filter the held
  command still goes through the cheap guard (wheel limits, body and wall barriers) at
  every tick, so robots never collide or leave the arena; the pair barrier of the
  projected points can be violated within a step (the residual does not measure that;
  ``min_distance`` does).

Two filters (``barrier``, see ``safety.py``): ``"guarded"`` (ours: pair barrier, fixed
iteration count, exact body and wall guard) and ``"robust"`` (JaxRobotarium's robust
barrier: disturbance hull, no guard, solved to a tolerance ``tol``).

Work done only where its result is used:

* actuation noise is drawn only when ``params.arena.actuation_noise > 0`` (a ``lax.cond``
  on the unbatched param: a real branch under ``vmap``; batched params make it a select),
  and with zero-order hold only the first tick's noise, the only one used. The values are
  those of the full draw (threefry is partitionable: element ``[0]`` of a ``(ticks, N, 2)``
  draw equals the ``(N, 2)`` draw);
* the collision and boundary bookkeeping (``pair_metrics``, ``O(N^2)``) runs once, on
  the pose at the end of the step (``metrics="step"``, the default; JaxRobotarium checks
  once per step too), or at every tick (``metrics="tick"``, for evaluation: the events of
  every tick are counted).

Without the filter (``_simulate_free``) the ticks run on the pose's rows (x, y and the
heading's cosine and sine, turned by each tick's angle: a rotation, no trigonometry per
tick) in one carry: one fused kernel per tick, held or per tick (at 1 to 64 environments
kernel launches, not arithmetic, are the cost). This changes float32 rounding only (a step
lands within 3e-6 m of the tick-by-tick ``integrate``; tested against it and a float64
reference). The filtered paths keep ``integrate``.

``info`` of a step (all scalars): ``min_distance`` smallest centre distance over pairs
(and over ticks with ``metrics="tick"``), ``collisions`` pairs closer than
``r_i + r_j + 0.025`` (summed over ticks with ``"tick"``), ``boundary`` robots whose body
crosses the arena's edge (summed over ticks with ``"tick"``), ``filter_iters`` QP
iterations run this step (0 without the filter), ``filter_residual`` the largest
pair-constraint violation left by the QP (m/s), ``filter_intervention`` the mean change of
the projected points' velocity made by the filter (m/s).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxagents_environments.robots.arena import (
    WHEEL_RADIUS, ArenaParams, integrate, pair_metrics, rotate, turn, wheel_limits, wheel_limits_split,
    wrap_angle,
)
from jaxagents_environments.robots.controller import position_controller
from jaxagents_environments.robots.safety import guard, robust_filter, safety_filter, to_z

INFO_KEYS = ("min_distance", "collisions", "boundary", "filter_iters", "filter_residual", "filter_intervention")
METRICS = ("step", "tick")
BARRIERS = ("guarded", "robust")


def _noise(key, p: ArenaParams, shape):
    """Wheel-speed noise ``f32[*shape]`` (rad/s), zeros without a draw when the scale is 0."""
    scale = (p.actuation_noise * p.max_speed / WHEEL_RADIUS)[:, None]
    return jax.lax.cond(p.actuation_noise > 0, lambda: jax.random.normal(key, shape) * scale,
                        lambda: jnp.zeros(shape, jnp.float32))


def _simulate_free(key, pose, target, p: ArenaParams, *, waypoint: bool, hold: bool, ticks: int, per_tick: bool):
    """``simulate`` without the safety filter: ``(pose, per-tick metrics or None)``.

    The heading is carried as ``(cos th, sin th)`` and turned each tick by the tick's
    angle ``a = dt w`` (``rotate``), so no tick evaluates trigonometric functions of the
    heading. Held: with ``metrics="step"`` the ticks' sum in closed form (the command is
    constant, so the headings of the ticks are ``th + k a`` and the Euler steps add up
    to a geometric sum of rotations: no loop; 15x closer to a float64 reference than the
    tick loop, whose rounding accumulates); with ``metrics="tick"`` (the poses of every
    tick are needed) ``(cos a, sin a)`` once per step and the rows
    ``(x, y, th, cos, sin)`` of one ``f32[5, N]`` carry, ``th`` wrapped every tick. Per tick:
    ``(cos a, sin a)`` from the polynomials of ``turn``, the rows ``(x, y, cos, sin)``,
    and ``th`` recovered at the end of the step as ``atan2`` of the turned pair. Loops
    run one fused kernel per tick (at 1 to 64 environments kernel launches, not
    arithmetic, are the cost). Against the tick-by-tick ``integrate`` of ``cos`` / ``sin``
    of the wrapped heading this changes float32 rounding only: one step lands within
    3e-6 m and 5e-5 rad of it (the heading's error is the controller's sensitivity near a
    waypoint), no farther from a float64 reference than it is
    (``tests/environments/robots/test_free_ticks.py``). Per tick, wheel-speed noise is
    drawn and added only when ``actuation_noise > 0`` (two branches of a ``lax.cond``; the
    noise-free one has no noise operand at all).
    """
    n = pose.shape[0]
    x, y, th = pose[:, 0], pose[:, 1], pose[:, 2]
    c, s = jnp.cos(th), jnp.sin(th)

    def command(x, y, c, s, noise):
        if waypoint:  # position_controller's arithmetic on separate arrays
            ex, ey = target[:, 0] - x, target[:, 1] - y
            v, w = p.k_v * (ex * c + ey * s), p.k_w * (ey * c - ex * s)
        else:
            v, w = target[:, 0], target[:, 1]
        if noise is None:
            return wheel_limits_split(v, w, p.max_speed)
        return wheel_limits_split(v, w, p.max_speed, noise[..., 0], noise[..., 1])

    def metrics(z):
        return pair_metrics(jnp.stack([z[0], z[1], z[2]], -1), p.radius) if per_tick else None

    if hold:
        v, w = command(x, y, c, s, _noise(key, p, (n, 2)))
        dv, a = p.dt * v, p.dt * w
        if not per_tick:
            # the ticks' sum in closed form: sum_k cos(th + k a) over k < T is
            # cos(th + (T - 1) a / 2) sin(T a / 2) / sin(a / 2) (T when a = 0), same for sin
            half = 0.5 * a
            sh = jnp.sin(half)
            straight = jnp.abs(sh) < 1e-30
            d = jnp.where(straight, float(ticks), jnp.sin(ticks * half) / jnp.where(straight, 1.0, sh))
            mid = th + (ticks - 1) * half
            step = dv * d
            return jnp.stack([x + step * jnp.cos(mid), y + step * jnp.sin(mid), wrap_angle(th + ticks * a)], -1), None
        ca, sa = jnp.cos(a), jnp.sin(a)

        def tick(z, _):
            x, y, th, c, s = z[0], z[1], z[2], z[3], z[4]
            z = jnp.stack([x + dv * c, y + dv * s, wrap_angle(th + a), *rotate(c, s, ca, sa)])
            return z, metrics(z)

        z, ticked = jax.lax.scan(tick, jnp.stack([x, y, th, c, s]), None, length=ticks)
        return jnp.stack([z[0], z[1], z[2]], -1), ticked

    # per tick: the rows (x, y, cos, sin), the heading itself recovered once at the end
    # (atan2 of the turned pair; the wrapped sum of the ticks' angles differs by rounding),
    # each new row as z * scale + add with constant row masks: broadcasts, no concatenation,
    # so XLA vectorises the one fusion of a tick. Measured at 1 / 64 / 1,024 envs (3 and 4
    # robots): stacking the rows was up to 1.7x slower, five separate carries 2x slower at
    # 1 env, a fifth row for the heading (wrapped every tick) 1.1x-1.8x slower except with 4
    # robots at 1,024 envs
    rows = np.eye(4, dtype=np.float32)[:, :, None]  # rows[r]: f32[4, 1], 1 on row r
    turning = rows[2] + rows[3]

    def run(noise):
        def tick(z, noise_t):
            x, y, c, s = z[0], z[1], z[2], z[3]
            v, w = command(x, y, c, s, noise_t)
            dv, a = p.dt * v, p.dt * w
            ca, sa = turn(a)
            z = z * (1 + turning * (ca - 1)) + (rows[0] * (dv * c) + rows[1] * (dv * s) + rows[2] * (-s * sa)
                                                + rows[3] * (c * sa))
            return z, (pair_metrics(z[:2].T, p.radius) if per_tick else None)  # (centres only)

        return jax.lax.scan(tick, jnp.stack([x, y, c, s]), noise, length=ticks)

    def noisy():
        scale = (p.actuation_noise * p.max_speed / WHEEL_RADIUS)[:, None]
        return run(jax.random.normal(key, (ticks, n, 2)) * scale)

    z, ticked = jax.lax.cond(p.actuation_noise > 0, noisy, lambda: run(None))
    return jnp.stack([z[0], z[1], wrap_angle(jnp.arctan2(z[3], z[2]))], -1), ticked


def simulate(key, pose, target, p: ArenaParams, *, waypoint: bool, safety: bool, hold: bool, ticks: int,
             iters: int, metrics: str = "step", barrier: str = "guarded", tol: float = 1e-4):
    """Advance ``pose`` (``f32[N, 3]``) by ``ticks`` ticks.

    Args:
        target: ``f32[N, 2]`` waypoints (``waypoint=True``) or ``(v, w)`` commands.
        safety, hold, ticks, iters, metrics, barrier: static choices (see the module
            docstring); ``iters`` is the robust filter's iteration cap.
        tol: the robust filter's tolerance on the pair constraints (m/s).

    Returns:
        ``(pose, info)`` with ``info`` the scalars of ``INFO_KEYS``.
    """
    n = pose.shape[0]
    l = p.projection_distance
    robust = barrier == "robust"
    per_tick = metrics == "tick"

    def nominal(pose_t, noise_t):
        vw = position_controller(pose_t, target, p) if waypoint else target
        return wheel_limits(vw, p.max_speed, noise_t)

    def change(vw, vw_hat):
        return jnp.mean(jnp.sqrt(jnp.sum((to_z(vw, l) - to_z(vw_hat, l)) ** 2, -1)))

    def filtered(vw_hat, pose_t, lam):
        if robust:
            return robust_filter(vw_hat, pose_t, p, iters, tol, lam)
        vw, lam, res = safety_filter(vw_hat, pose_t, p, iters, lam)
        return vw, lam, res, jnp.asarray(iters, jnp.int32)

    used = jnp.zeros((), jnp.int32)
    residual = intervention = jnp.zeros((1,), jnp.float32)
    if not safety:
        pose, ticked = _simulate_free(key, pose, target, p, waypoint=waypoint, hold=hold, ticks=ticks,
                                      per_tick=per_tick)
    elif hold:  # the filtered paths from here on
        held = nominal(pose, _noise(key, p, (n, 2)))
        safe, _, residual, used = filtered(held, pose, None)
        intervention = change(safe, held)
        held = safe
        use_guard = not robust

        def tick(pose_t, _):
            vw = guard(held, pose_t, p) if use_guard else held
            pose_t = integrate(pose_t, vw, p.dt)
            return pose_t, (pair_metrics(pose_t, p.radius) if per_tick else None)

        pose, ticked = jax.lax.scan(tick, pose, None, length=ticks)
        residual = jnp.broadcast_to(residual, (1,))
        intervention = jnp.broadcast_to(intervention, (1,))
    else:

        def tick(carry, noise_t):
            pose_t, lam, used_t = carry
            vw_hat = nominal(pose_t, noise_t)
            vw, lam, res, it = filtered(vw_hat, pose_t, lam)
            used_t = used_t + it
            inter = change(vw, vw_hat)
            pose_t = integrate(pose_t, vw, p.dt)
            return (pose_t, lam, used_t), ((pair_metrics(pose_t, p.radius) if per_tick else None), res, inter)

        lam0 = jnp.zeros((n, n), jnp.float32)  # warm start of the QP's multipliers
        (pose, _, used), (ticked, residual, intervention) = jax.lax.scan(
            tick, (pose, lam0, used), _noise(key, p, (ticks, n, 2)))
    if per_tick:
        min_d, coll, out = ticked
        min_d, coll, out = jnp.min(min_d), jnp.sum(coll), jnp.sum(out)
    else:
        min_d, coll, out = pair_metrics(pose, p.radius)
    info = {
        "min_distance": min_d,
        "collisions": coll.astype(jnp.int32),
        "boundary": out.astype(jnp.int32),
        "filter_iters": used.astype(jnp.int32),
        "filter_residual": jnp.max(residual).astype(jnp.float32),
        "filter_intervention": jnp.mean(intervention).astype(jnp.float32),
    }
    return pose, info

"""The safety filter: a control-barrier-function QP over all robot pairs, plus an exact
body and wall guard. Vectorised over robots (dense ``N x N`` arrays), no robot cap.

Variables. Each robot's command ``(v, w)`` is written ``z = (v, l w)`` with ``l`` the
projection distance: the projected point ``p = (x, y) + l (cos th, sin th)`` then moves
with ``dp/dt = R(th) z`` (``R`` a rotation), so ``|z - z_hat|`` is the change of the
projected point's velocity, the objective of the Robotarium's barrier certificates.

The QP, per tick::

    min  sum_i |z_i - z_hat_i|^2
    s.t. 2 (p_i - p_j) . (dp_i - dp_j) >= -gamma h_ij^3,  h_ij = |p_i - p_j|^2 - R_ij^2   (pairs)
         z_i in X_i                                                                   (per robot)

``R_ij = safety_radius + r_i + r_j - 0.11`` (0.2 m for standard robots), ``gamma = 150``.
``X_i`` is a hexagon: the wheel-speed limits ``|v -+ (L/2) w| <= max_speed_i`` (a diamond
in ``z``) cut by an interval ``v in [lo_i, hi_i]`` from the *guard*:

* body: ``h = |c_i - c_j|^2 - (r_i + r_j + body_margin)^2`` on the centres ``c``; robot
  ``i`` alone must satisfy ``2 (c_i - c_j) . e_i v_i >= -body_gain h / 2`` (half the
  budget each, so the pair's condition holds whatever the other robot does);
* walls: ``h = x_i - (x_min + r_i + wall_margin)`` (and the three others),
  ``dh/dt = v_i cos th_i >= -wall_gain h``.

The centres move in straight lines during an Euler tick, so ``h(t + dt) >= h + dt dh/dt
>= (1 - dt gain) h``: with ``dt * gain <= 1`` the guard is *exact in discrete time* and
for any iteration count. Since every output lies in ``X_i``, robots can never collide
(centres closer than ``r_i + r_j + 0.025``) or leave the arena, starting from a valid
state. The guard binds only when the pair barrier is not enough (two robots reversing
into each other: the points ahead of them are farther apart than their centres).

Solver. The dual of the QP, ``max_{lam >= 0} min_{z in X} ...``, has the closed-form
inner solution ``z(lam) = Proj_X(z_hat + A^T lam)`` (a hexagon projection per robot). We
run a fixed number of accelerated projected-gradient (FISTA) steps on ``lam``, one
multiplier per pair held in a symmetric ``N x N`` array, rows normalised to unit norm and
a diagonal step ``2 / (n_i + n_j)`` from the Gershgorin bound (``n_i``: the rows of robot
``i`` that can be active); the output is the primal point of the last step. Pairs whose
barrier cannot bind for any ``z in X`` are masked out exactly. The multipliers are
warm-started across the ticks of a step. What is left of the pair constraints after the
last iteration (in m/s of approach speed of the two projected points beyond what the
barrier allows) is reported as the residual; commands that already satisfy every
constraint come out unchanged (the multipliers stay 0). When the multipliers reach an
exact fixed point (``lam_{k+1} == lam_k == y_k``: in 91-97 % of the ticks of random
navigation, the nominal command needing no multiplier) every further step would repeat
the last one, so the loop stops there with the same result; a batch under ``vmap`` runs
the fixed count (some problem is almost always still moving). Cost per iteration: three
kernels on CPU (row sums, projection, ``N x N`` update); x and y are packed as the real
and imaginary parts of complex arrays (one reduction, one carried array) rather than a
trailing axis of length 2, which XLA on CPU is slow at reducing over or concatenating along.

The robust option (``robust_filter``, a scenario's ``barrier="robust"``): JaxRobotarium's
formulation. Same objective and wheel-speed diamond, no guard, and pair rows that must
hold for every wheel-speed disturbance in the box ``[-d, d]^2`` (d = 5 rad/s) of both
robots, which tightens each row's bound (``robust_rows``); gamma 150, barrier distance 0.2
m between projected points 0.05 m ahead. The same dual iterations, run until the largest
row violation is at most ``tol`` (1e-4 m/s by default) or ``max_iters``; the iterations
used are reported.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from jaxagents_environments.robots.arena import (
    AXLE_LENGTH, ROBOT_RADIUS, WHEEL_RADIUS, X_MAX, X_MIN, Y_MAX, Y_MIN, ArenaParams,
)

_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_BIG = 1e3
ROBUST_DISTURBANCE = 5.0  # rad/s: JaxRobotarium's disturbance hull, the box [-d, d]^2 on the wheel speeds
ROBUST_TOL = 1e-4  # m/s: default tolerance of the robust filter on its (normalised) pair rows


def to_z(vw, l):
    return jnp.stack([vw[..., 0], l * vw[..., 1]], -1)


def from_z(z, l):
    return jnp.stack([z[..., 0], z[..., 1] / l], -1)


def _one_sided(a, budget):
    """``a v >= budget`` (``budget <= 0``) as bounds on ``v``: a lower bound where
    ``a > 0``, an upper bound where ``a < 0``, none where ``a == 0``."""
    bound = budget / jnp.where(a == 0, 1.0, a)
    return jnp.where(a > 0, bound, -_BIG), jnp.where(a < 0, bound, _BIG)


def speed_bounds(pose: jax.Array, p: ArenaParams):
    """The guard: bounds ``(lo, hi)`` (``f32[N]``, ``lo <= 0 <= hi``) on each robot's
    linear speed from the body barrier of every pair and the four walls."""
    r = p.radius
    x, y, th = pose[:, 0], pose[:, 1], pose[:, 2]
    cs, sn = jnp.cos(th), jnp.sin(th)
    dx, dy = x[:, None] - x[None], y[:, None] - y[None]  # c_i - c_j
    dist = r[:, None] + r[None] + p.body_margin
    h = jnp.maximum(dx * dx + dy * dy - dist**2, 0.0)
    # walls: h >= 0 inside, dh/dt = a v >= -gain h with a = +-cos, +-sin
    m = r + p.wall_margin
    walls = jnp.stack([x - (X_MIN + m), (X_MAX - m) - x, y - (Y_MIN + m), (Y_MAX - m) - y], -1)
    # one [N, N + 4] array of rows (pairs, then walls): a single pass of bounds and reductions
    # (the coefficient of v_i in pair (i, j) is 0 on the diagonal, which therefore binds nothing)
    a = jnp.concatenate([2 * (dx * cs[:, None] + dy * sn[:, None]), jnp.stack([cs, -cs, sn, -sn], -1)], -1)
    budget = jnp.concatenate([-0.5 * p.body_gain * h, -p.wall_gain * jnp.maximum(walls, 0.0)], -1)
    lower, upper = _one_sided(a, budget)
    return jnp.minimum(jnp.max(lower, -1), 0.0), jnp.maximum(jnp.min(upper, -1), 0.0)


def _project(z0, z1, c, k, lo, hi):
    """``project_hexagon`` on separate components (``f32[N]`` each; ``lo``, ``hi`` already
    clipped to ``[-c, 0]``, ``[0, c]``): ``(q0, q1)``. The hexagon is symmetric in ``z1``, so
    ``(z0, |z1|)`` is projected onto the upper half of its boundary (two diamond edges, two
    band edges, each a clip along the edge) and the sign restored: elementwise work on
    ``[N]`` arrays, no trailing axis of 6 edges."""
    # commands clipped by ``wheel_limits`` can sit an ulp outside the diamond: accept them
    tol = c * (1 + 1e-6)
    inside = (jnp.abs(z0 + k * z1) <= tol) & (jnp.abs(z0 - k * z1) <= tol) & (z0 >= lo) & (z0 <= hi)
    a1 = jnp.abs(z1)
    inv_k, inv_n = 1.0 / k, 1.0 / (1.0 + k * k)
    q0a = jnp.clip(z0 - (z0 + k * a1 - c) * inv_n, 0.0, hi)  # edge z0 + k z1 = c, z0 in [0, hi]
    q0b = jnp.clip(z0 + (k * a1 - z0 - c) * inv_n, lo, 0.0)  # edge -z0 + k z1 = c, z0 in [lo, 0]
    cands = ((q0a, (c - q0a) * inv_k), (q0b, (c + q0b) * inv_k),
             (hi, jnp.minimum(a1, (c - hi) * inv_k)), (lo, jnp.minimum(a1, (c + lo) * inv_k)))  # z0 = hi, z0 = lo
    q0, q1 = cands[0]
    d = (z0 - q0) ** 2 + (a1 - q1) ** 2
    for c0, c1 in cands[1:]:  # the nearest; the first on ties (the projection is unique)
        dc = (z0 - c0) ** 2 + (a1 - c1) ** 2
        nearer = dc < d
        q0, q1, d = jnp.where(nearer, c0, q0), jnp.where(nearer, c1, q1), jnp.where(nearer, dc, d)
    return jnp.where(inside, z0, q0), jnp.where(inside, z1, jnp.where(z1 < 0, -q1, q1))


def project_hexagon(z, c, k, lo, hi):
    """Euclidean projection of ``z`` (``f32[N, 2]``) onto
    ``{|z0 + k z1| <= c, |z0 - k z1| <= c, lo <= z0 <= hi}`` (per robot ``c, lo, hi``).

    Points inside are returned unchanged (bit for bit; the wheel limits with a relative
    tolerance of 1e-6); others go to the nearest point of the boundary.
    """
    q0, q1 = _project(z[:, 0], z[:, 1], c, k, jnp.clip(lo, -c, 0.0), jnp.clip(hi, 0.0, c))
    return jnp.stack([q0, q1], -1)


def pair_rows(pose: jax.Array, p: ArenaParams):
    """The pair barrier rows, normalised: ``(ux, uy)`` ``f32[N, N]`` the unit vector from
    ``p_j`` to ``p_i``, the bound ``b`` ``f32[N, N]`` and the mask of the rows that can
    be active (``i != j`` and ``b > -(|z_i|max + |z_j|max) / sqrt 2``, what the row's value
    can reach for commands inside the wheel limits). Row ``(i, j)`` reads
    ``(u_ij . dp_i + u_ji . dp_j) / sqrt 2 >= b_ij``."""
    n = pose.shape[0]
    l = p.projection_distance
    th = pose[:, 2]
    px, py = pose[:, 0] + l * jnp.cos(th), pose[:, 1] + l * jnp.sin(th)
    dx, dy = px[:, None] - px[None], py[:, None] - py[None]
    dist = jnp.sqrt(dx * dx + dy * dy + 1e-12)
    rad = p.safety_radius + p.radius[:, None] + p.radius[None] - 2 * ROBOT_RADIUS
    h = dist**2 - rad**2
    b = -p.barrier_gain * h**3 * (_INV_SQRT2 / (2 * dist))
    # the largest |z| in robot i's diamond: c_i at (+-c_i, 0), or c_i / k at (0, +-c_i / k)
    zmax = p.max_speed * jnp.maximum(1.0, 2 * l / AXLE_LENGTH)
    mask = ~np.eye(n, dtype=bool) & (b > -(zmax[:, None] + zmax[None]) * _INV_SQRT2)
    return dx / dist, dy / dist, b, mask


def guard(vw: jax.Array, pose: jax.Array, p: ArenaParams) -> jax.Array:
    """The body/wall guard on ``(v, w)`` commands that are already inside the wheel limits
    (what zero-order hold applies at every tick to the held command): the linear speed
    clipped to the guard's interval, the turn rate kept. That is the projection onto the
    hexagon: clipping ``v`` toward 0 keeps a point inside the diamond, so the nearest
    point of the band ``lo <= v <= hi`` is the nearest point of their intersection."""
    lo, hi = speed_bounds(pose, p)
    v = vw[:, 0]
    return jnp.stack([jnp.clip(v, lo, hi), vw[:, 1]], -1)


def _momentum(iters: int) -> np.ndarray:
    """FISTA's extrapolation weights ``beta_k = (t_k - 1) / t_{k+1}``, ``t_0 = 1``,
    ``k = 0..iters`` (float32, as the loop would compute them): the same for every problem,
    so a constant rather than a scalar recurrence in the loop."""
    t, out = np.float32(1), []
    for _ in range(iters + 1):
        t_next = np.float32(0.5) * (np.float32(1) + np.sqrt(np.float32(1) + np.float32(4) * t * t))
        out.append((t - np.float32(1)) / t_next)
        t = t_next
    return np.asarray(out, np.float32)


def _primal(q, y):
    """``z(y) = Proj_X(z_hat + A^T y)`` as ``c64[N]`` (``z0 + i z1``). ``q``: the problem's
    constants (``_dual_qp``)."""
    zh0, zh1, cs, sn, wx, wy, _, _, _, c, k, lo, hi = q
    f = jnp.sum(jax.lax.complex(y * wx, y * wy), -1)  # sum_j y_ij u_ij / sqrt 2, x + i y: one reduction
    fx, fy = jnp.real(f), jnp.imag(f)
    return jax.lax.complex(*_project(zh0 + (cs * fx + sn * fy), zh1 + (cs * fy - sn * fx), c, k, lo, hi))


def _gap(q, z):
    """``b - (row values at z)``, ``f32[N, N]``: positive where a pair row is violated."""
    _, _, cs, sn, wx, wy, b, _, _, _, _, _, _ = q
    z0, z1 = jnp.real(z), jnp.imag(z)
    vx, vy = cs * z0 - sn * z1, sn * z0 + cs * z1  # R(th) z: dp_i
    return b - (wx * (vx[:, None] - vx[None]) + wy * (vy[:, None] - vy[None]))  # (u_ij . (dp_i - dp_j)) / sqrt 2


def _violation(q, g):
    return jnp.max(jnp.where(q[7], jnp.maximum(g, 0.0), 0.0))


def _trip(q, beta_next, state, measure: bool = True, detect: bool = True):
    """One dual step. ``state = (ly, z, z_prev, viol_prev, fixed)`` holds ``lam_k + i y_k``
    (``c64[N, N]``) and ``z_k = z(y_k)``; the step makes ``lam_{k+1}`` from the gap at
    ``z_k``, extrapolates ``y_{k+1}`` and evaluates ``z_{k+1}``, and keeps ``z_k`` (what the
    loop returns when it stops) with its violation (``measure``). ``z_{k+1}`` is only
    carried: XLA would otherwise fuse the projection into the ``[N, N]`` update and
    recompute it for every pair. ``fixed`` (``detect``): ``lam_{k+1} == lam_k == y_k``, after
    which every further step repeats this one exactly."""
    mask, step = q[7], q[8]
    ly, z, _, viol, fixed = state
    lam, y = jnp.real(ly), jnp.imag(ly)
    g = _gap(q, z)
    new = jnp.where(mask, jnp.maximum(y + step * g, 0.0), 0.0)
    if measure:
        viol = _violation(q, g)
    if detect:
        fixed = jnp.all((new == lam) & (y == lam))
    y = new + beta_next * (new - lam)
    return jax.lax.complex(new, y), _primal(q, y), z, viol, fixed


@functools.lru_cache(maxsize=None)
def _fixed_loop(iters: int):
    """``iters`` dual steps, stopping early at an exact fixed point (the result is the
    same). Under ``vmap`` the problems step together while any is not at its fixed point,
    without per-problem selects: a problem at its fixed point is left unchanged by a step."""
    beta = _momentum(iters)

    @jax.custom_batching.custom_vmap
    def run(q, state):
        def body(c):
            return c[0] + 1, _trip(q, jnp.asarray(beta)[c[0] + 1], c[1], measure=False)

        return jax.lax.while_loop(lambda c: (c[0] < iters) & ~c[1][4], body, (jnp.zeros((), jnp.int32), state))

    @run.def_vmap
    def _(axis_size, in_batched, q, state):
        q, state = jax.tree_util.tree_map(lambda x, bt: x if bt else jnp.broadcast_to(x, (axis_size,) + jnp.shape(x)),
                                          (q, state), tuple(in_batched))
        # a single problem (vmap over one environment) keeps its early stop; a batch of them
        # runs the ``iters`` steps (some problem is almost always still moving) without the
        # per-step test
        single = axis_size == 1
        trip = jax.vmap(functools.partial(_trip, measure=False, detect=single), (0, None, 0))

        def body(c):
            return c[0] + 1, trip(q, jnp.asarray(beta)[c[0] + 1], c[1])

        def more(c):
            return (c[0] < iters) & ~jnp.all(c[1][4]) if single else c[0] < iters

        out = jax.lax.while_loop(more, body, (jnp.zeros((), jnp.int32), state))
        return out, (False, (True,) * 5)

    return run


def _dual_qp(z_hat, cs, sn, ux, uy, b, mask, c, k, lo, hi, lam, iters: int, tol=None):
    """Accelerated projected gradient on the dual of the QP (module docstring): ``iters``
    steps (stopping early once the multipliers are at an exact fixed point, which gives the
    same result), or with ``tol`` until the largest pair-row violation is at most ``tol``
    (m/s) with ``iters`` the cap. Returns ``(z, lam, residual, steps)``.

    Layout: ``lam`` and the extrapolated ``y`` travel as one ``c64[N, N]`` and the primal
    point as one ``c64[N]`` (real and imaginary parts are only packed, never mixed), so a
    step is three kernels on CPU: the row sums, the projection, the ``[N, N]`` update."""
    lo, hi = jnp.clip(lo, -c, 0.0), jnp.clip(hi, 0.0, c)
    rows = jnp.sum(mask, -1).astype(jnp.float32)
    step = jnp.where(mask, 2.0 / jnp.maximum(rows[:, None] + rows[None], 1.0), 0.0)
    q = (z_hat[:, 0], z_hat[:, 1], cs, sn, ux * _INV_SQRT2, uy * _INV_SQRT2, b, mask, step, c, jnp.asarray(k, jnp.float32),
         lo, hi)
    zh = jax.lax.complex(z_hat[:, 0], z_hat[:, 1])
    ly = jax.lax.complex(lam, lam)
    if tol is None:
        state = (ly, _primal(q, lam), zh, jnp.zeros((), jnp.float32), jnp.zeros((), bool))
        _, (ly, _, z, _, _) = _fixed_loop(iters)(q, state)
        residual = _violation(q, _gap(q, z))
        done = jnp.asarray(iters, jnp.int32)  # the result of ``iters`` steps
    else:
        # the nominal command first: when it satisfies every row, no step is taken
        beta = jnp.asarray(_momentum(iters))
        state = (ly, _primal(q, lam), zh, _violation(q, _gap(q, zh)), jnp.zeros((), bool))
        done, (ly, _, z, residual, _) = jax.lax.while_loop(
            lambda c: (c[0] < iters) & (c[1][3] > tol), lambda c: (c[0] + 1, _trip(q, beta[c[0] + 1], c[1])),
            (jnp.zeros((), jnp.int32), state))
    # the output is the last evaluated primal point z_k, the multipliers lam_{k+1} and what z_k leaves of the rows
    return jnp.stack([jnp.real(z), jnp.imag(z)], -1), jnp.real(ly), residual.astype(jnp.float32), done


def safety_filter(vw_hat: jax.Array, pose: jax.Array, p: ArenaParams, iters: int, lam0: jax.Array | None = None):
    """Minimally change nominal commands so the pair barriers and the guard hold.

    Args:
        vw_hat: ``f32[N, 2]`` nominal ``(v, w)``.
        pose: ``f32[N, 3]``.
        p: arena params.
        iters: number of dual iterations (static).
        lam0: ``f32[N, N]`` warm-start multipliers (symmetric), or None for zeros.

    Returns:
        ``(vw, lam, residual)``: safe commands ``f32[N, 2]`` (always inside the wheel limits
        and the guard), multipliers ``f32[N, N]`` and the largest remaining pair-barrier
        violation ``f32[]`` (m/s, 0 when every pair constraint holds).
    """
    n = pose.shape[0]
    l = p.projection_distance
    cs, sn = jnp.cos(pose[:, 2]), jnp.sin(pose[:, 2])
    lo, hi = speed_bounds(pose, p)
    ux, uy, b, mask = pair_rows(pose, p)
    z_hat = to_z(vw_hat, l)
    lam = jnp.zeros((n, n), jnp.float32) if lam0 is None else jnp.where(mask, lam0, 0.0)
    z, lam, residual, _ = _dual_qp(z_hat, cs, sn, ux, uy, b, mask, p.max_speed, AXLE_LENGTH / (2 * l), lo, hi, lam,
                                   iters)
    # untouched commands come back bit for bit (z -> (v, w) would round l * w / l)
    vw = jnp.where(jnp.all(z == z_hat, -1, keepdims=True), vw_hat, from_z(z, l))
    return vw, lam, residual


def robust_rows(pose: jax.Array, p: ArenaParams, disturbance: float = ROBUST_DISTURBANCE):
    """``pair_rows`` with JaxRobotarium's robust bound: each pair row must hold for every
    wheel-speed disturbance in the box ``[-d, d]^2`` (rad/s) of both robots, which adds
    ``d r (m_i + m_j) / sqrt 2`` to the normalised bound, ``m_i = max(|u . e_i|, (2 l / L)
    |u . e_i^perp|)`` (``u`` the unit vector between the projected points, ``e_i`` robot
    ``i``'s heading): the largest the row's coefficients on the wheel speeds can be moved
    by the hull's vertices."""
    n = pose.shape[0]
    l = p.projection_distance
    ux, uy, b, _ = pair_rows(pose, p)
    cs, sn = jnp.cos(pose[:, 2]), jnp.sin(pose[:, 2])
    along = ux * cs[:, None] + uy * sn[:, None]  # u_ij . e_i
    across = uy * cs[:, None] - ux * sn[:, None]  # u_ij . e_i^perp
    m = jnp.maximum(jnp.abs(along), (2 * l / AXLE_LENGTH) * jnp.abs(across))
    b = b + disturbance * WHEEL_RADIUS * (m + m.T) * _INV_SQRT2
    zmax = p.max_speed * jnp.maximum(1.0, 2 * l / AXLE_LENGTH)
    mask = ~np.eye(n, dtype=bool) & (b > -(zmax[:, None] + zmax[None]) * _INV_SQRT2)
    return ux, uy, b, mask


def robust_filter(vw_hat: jax.Array, pose: jax.Array, p: ArenaParams, max_iters: int, tol: float = ROBUST_TOL,
                  lam0: jax.Array | None = None):
    """JaxRobotarium's robust barrier QP: ``min |z - z_hat|^2`` over the wheel-speed
    diamond subject to the robust pair rows (``robust_rows``), solved by the dual method of
    ``safety_filter`` until the largest row violation is at most ``tol`` m/s (or
    ``max_iters`` iterations). No body or wall guard (JaxRobotarium has none).

    Returns:
        ``(vw, lam, residual, iterations)``: commands inside the wheel limits, multipliers,
        the largest remaining violation of the robust rows (m/s) and the iterations run.
    """
    n = pose.shape[0]
    l = p.projection_distance
    cs, sn = jnp.cos(pose[:, 2]), jnp.sin(pose[:, 2])
    ux, uy, b, mask = robust_rows(pose, p)
    z_hat = to_z(vw_hat, l)
    c = p.max_speed
    lam = jnp.zeros((n, n), jnp.float32) if lam0 is None else jnp.where(mask, lam0, 0.0)
    z, lam, residual, used = _dual_qp(z_hat, cs, sn, ux, uy, b, mask, c, AXLE_LENGTH / (2 * l), -c, c, lam,
                                      max_iters, tol)
    vw = jnp.where(jnp.all(z == z_hat, -1, keepdims=True), vw_hat, from_z(z, l))
    return vw, lam, residual, used

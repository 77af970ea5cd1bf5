"""The Robotarium arena: constants, dynamic params, unicycle kinematics, start positions.

Table and robots (Georgia Tech Robotarium, GRITSbot; as in MARBLER and JaxRobotarium):

* arena ``x in [-1.6, 1.6]``, ``y in [-1.0, 1.0]`` metres; one simulator tick is
  ``dt = 0.033`` s;
* robot body radius 0.055 m; two robots *collide* when their centres are closer than
  ``r_i + r_j + 0.025`` (0.135 m for two standard robots); a robot is *out* when its body
  crosses the arena's edge;
* differential drive with wheel radius ``r = 0.016`` m and axle length ``L = 0.105`` m;
  wheel speeds are limited to ``max_speed_i / r`` (12.5 rad/s for 0.2 m/s).

Kinematics, per tick (explicit Euler, positions move along the heading at the start of
the tick)::

    phi_l, phi_r = (2 v -+ L w) / (2 r)        clipped to +-max_speed_i / r
    v, w = r (phi_l + phi_r) / 2, r (phi_r - phi_l) / L
    x += dt v cos(theta); y += dt v sin(theta); theta = wrap(theta + dt w)

Heterogeneous robots: ``ArenaParams.radius`` and ``ArenaParams.max_speed`` hold one value
per robot. Actuation noise (``actuation_noise``, a fraction of each robot's wheel-speed
limit) is Gaussian noise on the commanded wheel speeds, added *before* the wheel limits
and the safety filter, so a filtered team stays safe under noise.

Sizes that fix array shapes (robot count, ticks per step) are constructor arguments of
the scenarios; everything here that a user may sweep is an ``ArenaParams`` field.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxagents.core import threefry as rng  # jax.random's numbers, fused (one kernel per draw)

# ---------------------------------------------------------------- constants (spec table)
X_MIN, X_MAX, Y_MIN, Y_MAX = -1.6, 1.6, -1.0, 1.0
ARENA_WIDTH, ARENA_HEIGHT = X_MAX - X_MIN, Y_MAX - Y_MIN
DT = 0.033
ROBOT_RADIUS = 0.055  # body radius (diameter 0.11 m)
COLLISION_MARGIN = 0.025  # collision distance r_i + r_j + 0.025 = 0.135 m for standard robots
WHEEL_RADIUS = 0.016
AXLE_LENGTH = 0.105
MAX_SPEED = 0.2  # m/s; wheel-speed limit MAX_SPEED / WHEEL_RADIUS = 12.5 rad/s
MAX_TURN_RATE = 2 * MAX_SPEED / AXLE_LENGTH  # rad/s, both wheels at the limit in opposite directions
MAX_TICK_TURN = 1.0  # rad: the largest turn of one tick (dt * 2 max_speed / L) that ``turn`` is float32-exact for
SAFETY_RADIUS = 0.2  # barrier distance between the projected points of two standard robots
PROJECTION_DISTANCE = 0.05
BARRIER_GAIN = 150.0


@struct.dataclass
class ArenaParams:
    """Sweepable arena settings. ``N`` is the robot count.

    Attributes:
        radius: ``f32[N]`` body radius of each robot (m, > 0).
        max_speed: ``f32[N]`` linear speed limit of each robot (m/s, > 0); its wheel-speed
            limit is ``max_speed / WHEEL_RADIUS``.
        actuation_noise: ``f32[]`` std of the noise on commanded wheel speeds, as a
            fraction of each robot's wheel-speed limit (>= 0).
        dt: ``f32[]`` tick length (s).
        k_v, k_w: ``f32[]`` gains of the waypoint controller.
        step_dist: ``f32[]`` waypoint distance of a discrete move (m).
        waypoint_margin: ``f32[]`` waypoints stay this far inside the arena (m).
        safety_radius: ``f32[]`` barrier distance between projected points of two
            standard robots; for robots ``i, j`` it is ``safety_radius + r_i + r_j - 0.11``.
        projection_distance: ``f32[]`` the barrier point sits this far ahead of the centre.
        barrier_gain: ``f32[]`` gamma of the pair barrier ``dh/dt >= -gamma h^3``.
        body_margin: ``f32[]`` the body guard keeps centres ``r_i + r_j + body_margin``
            apart (must exceed ``COLLISION_MARGIN``).
        body_gain, wall_gain: ``f32[]`` linear class-K gains of the body and wall guards,
            ``dt * gain <= 1`` (what makes the guard exact in discrete time).
        wall_margin: ``f32[]`` the guard keeps each body this far inside the arena (m).
    """

    radius: jax.Array
    max_speed: jax.Array
    actuation_noise: jax.Array
    dt: jax.Array
    k_v: jax.Array
    k_w: jax.Array
    step_dist: jax.Array
    waypoint_margin: jax.Array
    safety_radius: jax.Array
    projection_distance: jax.Array
    barrier_gain: jax.Array
    body_margin: jax.Array
    body_gain: jax.Array
    wall_gain: jax.Array
    wall_margin: jax.Array


def default_arena_params(num_robots: int) -> ArenaParams:
    f = lambda x: jnp.asarray(x, jnp.float32)
    return ArenaParams(
        radius=jnp.full((num_robots,), ROBOT_RADIUS, jnp.float32),
        max_speed=jnp.full((num_robots,), MAX_SPEED, jnp.float32),
        actuation_noise=f(0.0),
        dt=f(DT),
        k_v=f(0.8),
        k_w=f(3.0),
        step_dist=f(0.2),
        waypoint_margin=f(0.1),
        safety_radius=f(SAFETY_RADIUS),
        projection_distance=f(PROJECTION_DISTANCE),
        barrier_gain=f(BARRIER_GAIN),
        body_margin=f(0.03),
        body_gain=f(10.0),
        wall_gain=f(10.0),
        wall_margin=f(0.005),
    )


def spawn_distance(p: ArenaParams, xp=jnp):
    """The centre spacing that start positions need: the barrier distance of the widest
    pair, the body-guard distance, and room for the wall margin on both sides. ``xp``:
    ``jnp`` (traced params) or ``np`` (host checks, which must not stage operations)."""
    r = xp.max(xp.asarray(p.radius))
    pair = p.safety_radius + 2 * r - 2 * ROBOT_RADIUS
    return xp.maximum(xp.maximum(pair, 2 * r + p.body_margin), 2 * (r + p.wall_margin))


def check_arena_params(p: ArenaParams, num_robots: int, spacing: float) -> None:
    """Raise ``ValueError`` naming the field and the allowed range (host numpy values).

    ``spacing`` is the scenario's start-grid spacing: robots wider than it cannot be
    placed without breaking the barriers at reset.
    """
    for name in ("radius", "max_speed"):
        v = np.asarray(getattr(p, name))
        if v.shape != (num_robots,):
            raise ValueError(f"params.arena.{name} must have shape ({num_robots},) (one per robot), got {v.shape}")
        if not np.all(np.isfinite(v)) or np.any(v <= 0):
            raise ValueError(f"params.arena.{name} must be finite and > 0 for every robot, got {v}")
    if np.any(2 * p.radius >= min(ARENA_WIDTH, ARENA_HEIGHT)):
        raise ValueError(f"params.arena.radius: a robot of radius {np.max(p.radius)} m cannot fit the "
                         f"{ARENA_WIDTH} x {ARENA_HEIGHT} m arena")
    positive = ("dt", "k_v", "k_w", "step_dist", "safety_radius", "projection_distance", "barrier_gain",
                "body_gain", "wall_gain")
    for name in positive:
        v = np.asarray(getattr(p, name))
        if not np.all(np.isfinite(v)) or np.any(v <= 0):
            raise ValueError(f"params.arena.{name} must be finite and > 0, got {v}")
    for name in ("actuation_noise", "wall_margin", "waypoint_margin"):
        v = np.asarray(getattr(p, name))
        if not np.all(np.isfinite(v)) or np.any(v < 0):
            raise ValueError(f"params.arena.{name} must be finite and >= 0, got {v}")
    if np.any(p.body_margin <= COLLISION_MARGIN):
        raise ValueError(f"params.arena.body_margin must be > the collision margin {COLLISION_MARGIN}, "
                         f"got {p.body_margin}")
    for name in ("body_gain", "wall_gain"):
        if np.any(p.dt * getattr(p, name) > 1):
            raise ValueError(f"params.arena.{name} must be <= 1 / dt = {1 / float(np.max(p.dt)):.3g} "
                             f"(the guard is exact in discrete time only then), got {getattr(p, name)}")
    turn_max = np.max(np.asarray(p.dt) * 2 * np.asarray(p.max_speed) / AXLE_LENGTH)
    if turn_max > MAX_TICK_TURN:
        raise ValueError(f"params.arena.dt / max_speed: a tick may turn a robot by {turn_max:.3g} rad "
                         f"(dt * 2 max_speed / {AXLE_LENGTH}); at most {MAX_TICK_TURN} is allowed "
                         f"(the per-tick rotation's polynomials are float32-exact there)")
    if np.any(2 * p.waypoint_margin >= min(ARENA_WIDTH, ARENA_HEIGHT)):
        raise ValueError(f"params.arena.waypoint_margin must be < {min(ARENA_WIDTH, ARENA_HEIGHT) / 2}, "
                         f"got {p.waypoint_margin}")
    need = float(spawn_distance(p, np))
    if need > spacing + 1e-6:
        raise ValueError(
            f"params.arena.radius / safety_radius: robots of radius up to {float(np.max(p.radius)):.3g} m need "
            f"start positions {need:.3g} m apart, but this environment's start grid has {spacing:.3g} m "
            f"({num_robots} robots): use smaller robots or fewer of them"
        )


# ---------------------------------------------------------------- kinematics
def wheel_limits(vw: jax.Array, max_speed: jax.Array, noise: jax.Array | None = None) -> jax.Array:
    """``(v, w)`` -> wheel speeds (+ noise) -> clipped to ``+-max_speed / r`` -> ``(v, w)``.

    Args:
        vw: ``f32[N, 2]`` commanded linear (m/s) and angular (rad/s) speeds.
        max_speed: ``f32[N]`` per-robot linear speed limits.
        noise: optional ``f32[N, 2]`` noise on the (left, right) wheel speeds, rad/s.
    """
    v, w = vw[..., 0], vw[..., 1]
    phi = jnp.stack([(2 * v - AXLE_LENGTH * w), (2 * v + AXLE_LENGTH * w)], -1) / (2 * WHEEL_RADIUS)
    if noise is not None:
        phi = phi + noise
    lim = (max_speed / WHEEL_RADIUS)[..., None]
    phi = jnp.clip(phi, -lim, lim)
    return jnp.stack([WHEEL_RADIUS * (phi[..., 0] + phi[..., 1]) / 2,
                      WHEEL_RADIUS * (phi[..., 1] - phi[..., 0]) / AXLE_LENGTH], -1)


_TWO_PI = np.float32(2 * np.pi)


def wrap_angle(theta):
    """Angles (``f32[...]``) into ``[-pi, pi)``: the values of ``mod(theta + pi, 2 pi) - pi``.

    Written with ``floor`` and two corrections because XLA:CPU lowers ``mod`` (``rem``) to
    a scalar ``fmodf`` call per element (alone on ``f32[64, 4]``: 0.96 against 0.13 us;
    inside a whole step the difference is within the noise of a shared machine). For the
    headings of a tick (``|theta + pi|`` < 4 pi) the result is bit-identical: ``t - 2 pi``
    is exact there (Sterbenz), as ``fmod`` is, and ``t + 2 pi`` is the sum ``mod`` rounds
    too; the corrections catch ``floor`` of a quotient rounded across an integer.
    """
    t = theta + jnp.pi
    r = t - jnp.floor(t * np.float32(1 / (2 * np.pi))) * _TWO_PI
    r = jnp.where(r < 0, r + _TWO_PI, r)
    r = jnp.where(r >= _TWO_PI, r - _TWO_PI, r)
    return r - jnp.pi


def integrate(pose: jax.Array, vw: jax.Array, dt) -> jax.Array:
    """One explicit Euler tick of unicycle motion. ``pose``: ``f32[N, 3]`` (x, y, theta)."""
    return jnp.stack(integrate_split(pose[:, 0], pose[:, 1], pose[:, 2], vw[:, 0], vw[:, 1], dt), -1)


def integrate_split(x, y, th, v, w, dt):
    """``integrate`` on separate ``f32[N]`` arrays, returning ``(x, y, th)``."""
    return x + dt * v * jnp.cos(th), y + dt * v * jnp.sin(th), wrap_angle(th + dt * w)


def turn(a):
    """``(cos a, sin a)`` of a tick's turn ``a = dt w`` (``|a| <= MAX_TICK_TURN``) as
    Taylor polynomials in Horner form: only multiplies and adds, so a tick of the
    rotation recurrence (``rotate``) fuses into one cheap kernel. Truncation error
    ``a^12 / 12!`` and ``a^13 / 13!``: below 2.1e-9 at 1 rad, below 1e-19 at the default
    limit 0.126 rad (0.033 s at 3.8 rad/s), far under float32's rounding."""
    a2 = a * a
    c = 1 + a2 * (-1 / 2 + a2 * (1 / 24 + a2 * (-1 / 720 + a2 * (1 / 40320 + a2 * (-1 / 3628800)))))
    s = a * (1 + a2 * (-1 / 6 + a2 * (1 / 120 + a2 * (-1 / 5040 + a2 * (1 / 362880 + a2 * (-1 / 39916800))))))
    return c, s


def rotate(c, s, ca, sa):
    """The heading ``(cos th, sin th)`` turned by the angle whose ``(cos, sin)`` is ``(ca, sa)``."""
    return c * ca - s * sa, s * ca + c * sa


def wheel_limits_split(v, w, max_speed, noise_l=None, noise_r=None):
    """``wheel_limits`` on separate ``f32[N]`` arrays ``v``, ``w`` (the same arithmetic)."""
    phi_l = (2 * v - AXLE_LENGTH * w) / (2 * WHEEL_RADIUS)
    phi_r = (2 * v + AXLE_LENGTH * w) / (2 * WHEEL_RADIUS)
    if noise_l is not None:
        phi_l, phi_r = phi_l + noise_l, phi_r + noise_r
    lim = max_speed / WHEEL_RADIUS
    phi_l, phi_r = jnp.clip(phi_l, -lim, lim), jnp.clip(phi_r, -lim, lim)
    return WHEEL_RADIUS * (phi_l + phi_r) / 2, WHEEL_RADIUS * (phi_r - phi_l) / AXLE_LENGTH


# ---------------------------------------------------------------- pairwise metrics
def pair_metrics(pose: jax.Array, radius: jax.Array):
    """Collision and boundary counts of one configuration.

    Returns ``(min_distance f32[], collisions i32[], outside i32[])``: the smallest centre
    distance over pairs (the arena diagonal when there is one robot), the number of pairs
    closer than ``r_i + r_j + COLLISION_MARGIN`` and the number of robots whose body
    crosses the arena's edge.
    """
    n = pose.shape[0]
    x, y = pose[:, 0], pose[:, 1]
    d2 = (x[:, None] - x[None]) ** 2 + (y[:, None] - y[None]) ** 2  # (no reduction over a length-2 axis: slow on CPU)
    off = ~np.eye(n, dtype=bool)
    dist = jnp.sqrt(jnp.where(off, d2, 1.0))
    far = math.hypot(ARENA_WIDTH, ARENA_HEIGHT)
    min_d = jnp.min(jnp.where(off, dist, far)) if n > 1 else jnp.asarray(far, jnp.float32)
    limit = radius[:, None] + radius[None] + COLLISION_MARGIN
    collisions = jnp.sum(jnp.triu(off & (dist < limit))).astype(jnp.int32)
    r = radius
    outside = (x - r < X_MIN) | (x + r > X_MAX) | (y - r < Y_MIN) | (y + r > Y_MAX)
    return min_d.astype(jnp.float32), collisions, jnp.sum(outside).astype(jnp.int32)


# ---------------------------------------------------------------- start positions
@struct.dataclass
class SpawnGrid:
    """Candidate start cells, built once on the host (static).

    Attributes:
        cells: ``f32[C, 2]`` cell centres, ``spacing`` apart, tiling a region of the arena.
        spacing: cell size (m), a Python float.
    """

    cells: np.ndarray = struct.field(pytree_node=False)
    spacing: float = struct.field(pytree_node=False)


def make_grid(count: int, spacing: float, region=(X_MIN, X_MAX, Y_MIN, Y_MAX), name: str = "num_robots") -> SpawnGrid:
    """A grid of at least ``count`` cells in ``region`` (x0, x1, y0, y1), as coarse as
    ``spacing`` allows: the spacing shrinks (never below the standard robots' need) until
    ``count`` cells fit. Raises ``ValueError`` naming ``name`` when they cannot."""
    x0, x1, y0, y1 = region
    w, h = x1 - x0, y1 - y0
    floor = float(spawn_distance(jax.tree_util.tree_map(np.asarray, default_arena_params(1)), np))
    s = spacing
    while True:
        nx, ny = int(w // s), int(h // s)
        if nx * ny >= count:
            break
        s *= 0.97
        if s < floor:
            most = int(w // floor) * int(h // floor)
            raise ValueError(f"{name}: {count} robots/objects cannot fit the arena region "
                             f"{w:.2f} x {h:.2f} m (at most {most} at {floor:.3f} m spacing)")
    xs = x0 + (w - nx * s) / 2 + (np.arange(nx) + 0.5) * s
    ys = y0 + (h - ny * s) / 2 + (np.arange(ny) + 0.5) * s
    cells = np.stack(np.meshgrid(xs, ys, indexing="ij"), -1).reshape(-1, 2).astype(np.float32)
    return SpawnGrid(cells=cells, spacing=float(s))


def _cells(u, grid: SpawnGrid, n: int, jitter):
    """``n`` distinct cells of ``grid`` jittered by at most ``jitter`` per axis, from
    ``C + 2 n`` uniform numbers ``u`` (one random draw: each draw costs a threefry
    expansion in the compiled program)."""
    c = grid.cells.shape[0]
    # the n smallest of C uniforms, in increasing order, ties to the lower index: what
    # argsort(u)[:n] gives, at a fraction of a sort's cost on CPU (most under vmap)
    idx = jax.lax.top_k(-u[:c], n)[1]
    off = (2 * u[c : c + 2 * n].reshape(n, 2) - 1) * jitter
    return jnp.asarray(grid.cells)[idx] + off


def spawn_positions(key, grid: SpawnGrid, n: int, jitter) -> jax.Array:
    """``n`` distinct random cells of ``grid`` plus a uniform jitter of at most ``jitter``
    per axis (traced). Returns ``f32[n, 2]``."""
    return positions_from_uniforms(rng.uniform(key, (position_draws(grid, n),)), grid, n, jitter)


def position_draws(grid: SpawnGrid, n: int) -> int:
    """How many uniform numbers ``positions_from_uniforms`` reads."""
    return grid.cells.shape[0] + 2 * n


positions_from_uniforms = _cells  # ``spawn_positions`` from its uniform numbers


def spawn_poses(key, grid: SpawnGrid, n: int, p: ArenaParams, extra: int = 0):
    """Start poses ``f32[n, 3]`` that satisfy every barrier: cells of ``grid``, jittered
    by what the spacing leaves, headings uniform when the spacing also covers the
    projected points (``+2 * projection_distance``), otherwise one shared random heading
    (then projected points are as far apart as the centres).

    With ``extra > 0`` also returns ``f32[extra, 2]`` positions on further distinct cells
    (objects that must not start under a robot): ``(poses, positions)``.
    """
    return poses_from_uniforms(rng.uniform(key, (pose_draws(grid, n, extra),)), grid, n, p, extra)


def pose_draws(grid: SpawnGrid, n: int, extra: int = 0) -> int:
    """How many uniform numbers ``poses_from_uniforms`` reads."""
    return grid.cells.shape[0] + 2 * (n + extra) + n + 1


def poses_from_uniforms(u, grid: SpawnGrid, n: int, p: ArenaParams, extra: int = 0):
    """``spawn_poses`` from its uniform numbers ``u`` (``f32[pose_draws(...)]``), for
    callers that draw several things at once (one threefry pass instead of several)."""
    m = n + extra
    c = grid.cells.shape[0]
    need = spawn_distance(p)
    s = grid.spacing
    free = s - need - 2 * p.projection_distance
    spread = free >= 0
    jitter = 0.45 * jnp.where(spread, free, jnp.maximum(s - need, 0.0))
    xy = _cells(u, grid, m, jitter)
    heading = (2 * u[c + 2 * m :] - 1) * jnp.pi
    theta = jnp.where(spread, heading[:n], heading[n])  # own headings, or one shared
    poses = jnp.concatenate([xy[:n], theta[:, None]], -1)
    return (poses, xy[n:]) if extra else poses

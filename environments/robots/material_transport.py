"""Material transport: heterogeneous robots move material from two zones to a drop-off
strip (MARBLER / JaxRobotarium's ``material_transport``).

Rules. ``num_robots`` robots start on random cells of the left quarter of the arena. Two
zones hold material, in whole units: zone 1, a disk of radius ``params.zone_radius``
(0.35 m) at the centre, and zone 2, the right strip ``x > 1.6 - params.strip_width``
(0.5 m); their loads are drawn at reset as ``round(N(zone_mean, zone_std))`` clipped at 0
(75 +- 10 and 15 +- 4 units). Robots are heterogeneous: robot ``i`` drives at most
``params.arena.max_speed[i]`` and carries at most ``params.capacity[i]`` units (default:
the first ``ceil(N/2)`` robots fast and small, 0.2 m/s and 5 units; the others slow and
large, 0.2/3 m/s and 15 units, the reference's 3:1 speed and 1:3 capacity ratios).
Discrete moves set waypoints ``params.arena.step_dist = 0.4`` m away (not 0.2), so every
robot's speed limit binds (``k_v * 0.4 = 0.32 m/s``): fast robots cover about 0.2 m per
1 s step, slow ones a third of that.

After each step, in this order:

* *unload*: a robot carrying material inside the left strip ``x < -1.6 + strip_width``
  unloads all of it (it counts as delivered);
* *load*: an empty robot inside a zone that still holds material loads
  ``min(capacity_i, what is left)``; robots loading from the same zone in the same step
  are served in robot order (so the last ones may get nothing, and then have not loaded).
  The zones and the strip never overlap (``zone_radius + strip_width <= 1.6``), so a
  robot that unloads does not load in the same step.

Team reward per step: ``load_reward`` (0.25) per robot that loaded, ``unload_reward``
(0.75) per robot that unloaded, plus ``time_penalty`` (-0.1) while material remains (in a
zone or carried) after the step. The episode terminates when every unit is delivered,
and is truncated after ``params.max_steps`` steps. Units are conserved: zone loads +
carried + delivered = the initial loads. Against JaxRobotarium: its payload is a flag
(the amount taken from a zone is not tracked, so nothing is conserved), its loads are
not whole units, and its episodes never end.

Observation (role ``robot``) ``f32[7 + 5 (N-1) + 2]``: own pose ``(x, y, cos, sin)``,
speed limit (m/s), capacity and payload (units); for each other robot (order ``i+1,
i+2, ...``) the offset to it, its speed limit, capacity and payload; the loads left in
zone 1 and zone 2. ``global_obs`` (``f32[7 N + 2]``): every robot's pose, speed limit,
capacity and payload, and the two zone loads. ``info``: ``remaining`` (units in the
zones), ``carried``, ``delivered`` (``i32[]``) and ``success`` (``bool[]``).

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

from jaxagents_environments.robots.arena import ARENA_WIDTH, MAX_SPEED, X_MAX, X_MIN, Y_MAX, Y_MIN, ArenaParams
from jaxagents_environments.robots.scenario import RobotScenario, _check_int, others, pose_features


@struct.dataclass
class TransportParams:
    """Params of ``MaterialTransport``.

    Attributes:
        arena: the arena's ``ArenaParams`` (``arena.py``: time step, controller gains,
            robot radii and speed limits, waypoint distance, safety filter; ``arena.max_speed`` is each robot's
            speed).
        max_steps: ``i32[]`` steps before the episode is truncated (>= 1; the
            constructor's ``max_steps``, default 100).
        capacity: ``i32[N]`` units each robot can carry (>= 1).
        zone_mean: ``f32[2]`` mean initial load of zones 1 and 2 (units, >= 0).
        zone_std: ``f32[2]`` standard deviation of those loads (units, >= 0).
        zone_radius: ``f32[]`` radius of zone 1, the central disk (m, > 0).
        strip_width: ``f32[]`` width of the drop-off strip and of zone 2 (m, > 0,
            ``strip_width + zone_radius <= 1.6``).
        load_reward: ``f32[]`` team reward per robot that loaded in a step.
        unload_reward: ``f32[]`` team reward per robot that unloaded in a step.
        time_penalty: ``f32[]`` team reward of each step after which material remains.
    """

    arena: ArenaParams
    max_steps: jax.Array
    capacity: jax.Array
    zone_mean: jax.Array
    zone_std: jax.Array
    zone_radius: jax.Array
    strip_width: jax.Array
    load_reward: jax.Array
    unload_reward: jax.Array
    time_penalty: jax.Array


@struct.dataclass
class TransportState:
    """Attributes: pose ``f32[N, 3]``; load ``i32[2]`` units left in zones 1 and 2;
    payload ``i32[N]`` units carried; delivered ``i32[]`` units unloaded so far; t ``i32[]``."""

    pose: jax.Array
    load: jax.Array
    payload: jax.Array
    delivered: jax.Array
    t: jax.Array


def fill_rect(canvas, x0, y0, x1, y1, colour):
    """Fill the axis-aligned rectangle ``[x0, x1] x [y0, y1]`` (arena metres) of a
    ``render.Canvas`` (shared by the transport, warehouse and RWARE pictures)."""
    s = canvas.scale
    h, w = canvas.img.shape[:2]
    b = max(1, int(s // 75))  # keep the arena's border (as ``Canvas`` draws it)
    c0, c1 = max(int(round((x0 - X_MIN) * s)), b), min(int(round((x1 - X_MIN) * s)), w - b)
    r0, r1 = max(int(round((Y_MAX - y1) * s)), b), min(int(round((Y_MAX - y0) * s)), h - b)
    canvas.img[r0:r1, c0:c1] = colour


class MaterialTransport(RobotScenario):
    """Material transport with one role ``robot`` (see the module docstring).

    Args:
        num_robots: robot count (>= 1).
        **kwargs: the common arena options of ``RobotScenario``.
    """

    def __init__(self, num_robots: int = 4, **kwargs):
        _check_int("num_robots", num_robots, 1)
        left = (X_MIN, X_MIN + ARENA_WIDTH / 4, Y_MIN, Y_MAX)
        super().__init__({"robot": num_robots}, robot_region=left, size_args={"robot": "num_robots"}, **kwargs)

    def obs_dim(self, role):
        return 7 + 5 * (self.num_robots - 1) + 2

    @property
    def global_obs_dim(self):
        return 7 * self.num_robots + 2

    def default_params(self):
        f = lambda x: jnp.asarray(x, jnp.float32)
        n = self.num_robots
        fast = np.arange(n) < (n + 1) // 2
        arena = self.default_arena_params().replace(
            max_speed=f(np.where(fast, MAX_SPEED, MAX_SPEED / 3)), step_dist=f(0.4))
        return TransportParams(
            arena=arena, max_steps=jnp.asarray(self._max_steps, jnp.int32),
            capacity=jnp.asarray(np.where(fast, 5, 15), jnp.int32),
            zone_mean=f([75.0, 15.0]), zone_std=f([10.0, 4.0]), zone_radius=f(0.35), strip_width=f(0.5),
            load_reward=f(0.25), unload_reward=f(0.75), time_penalty=f(-0.1))

    def check_task_params(self, params):
        cap = np.asarray(params.capacity)
        if cap.shape != (self.num_robots,) or not np.issubdtype(cap.dtype, np.integer) or np.any(cap < 1):
            raise ValueError(f"params.capacity must be integers >= 1 of shape ({self.num_robots},) (one per robot), "
                             f"got {cap!r}")
        for name in ("zone_mean", "zone_std"):
            v = np.asarray(getattr(params, name))
            if v.shape != (2,) or not np.all(np.isfinite(v)) or np.any(v < 0):
                raise ValueError(f"params.{name} must be finite, >= 0 and of shape (2,) (zones 1 and 2), got {v!r}")
        r, w = np.asarray(params.zone_radius), np.asarray(params.strip_width)
        if not np.all(np.isfinite(r)) or np.any(r <= 0) or not np.all(np.isfinite(w)) or np.any(w <= 0):
            raise ValueError(f"params.zone_radius and params.strip_width must be finite and > 0, got {r}, {w}")
        if np.any(r + w > X_MAX):
            raise ValueError(f"params.zone_radius + params.strip_width must be <= {X_MAX} m (the drop-off strip "
                             f"must not overlap zone 1), got {r} + {w}")
        for name in ("load_reward", "unload_reward", "time_penalty"):
            if not np.all(np.isfinite(getattr(params, name))):
                raise ValueError(f"params.{name} must be finite, got {getattr(params, name)}")

    def reset_task(self, key, params):
        kp, kl = jax.random.split(key)
        load = jnp.round(params.zone_mean + params.zone_std * jax.random.normal(kl, (2,)))
        return TransportState(pose=self.spawn_robots(kp, params), load=jnp.maximum(load, 0).astype(jnp.int32),
                              payload=jnp.zeros((self.num_robots,), jnp.int32), delivered=jnp.zeros((), jnp.int32),
                              t=jnp.zeros((), jnp.int32))

    def zones(self, pose, params):
        """``bool[3, N]``: robots inside zone 1, zone 2 and the drop-off strip."""
        x, y = pose[:, 0], pose[:, 1]
        return jnp.stack([x * x + y * y < params.zone_radius**2, x > X_MAX - params.strip_width,
                          x < X_MIN + params.strip_width])

    def update_task(self, key, prev, state, params):
        in1, in2, drop = self.zones(state.pose, params)
        unload = (state.payload > 0) & drop
        delivered = state.delivered + jnp.sum(jnp.where(unload, state.payload, 0))
        payload = jnp.where(unload, 0, state.payload)
        # loading: per zone, empty robots inside it are served in robot order
        want = jnp.stack([in1, in2]) & (payload == 0)  # [2, N] (disjoint zones)
        cap = jnp.where(want, params.capacity, 0)
        before = jnp.cumsum(cap, -1) - cap
        amount = jnp.clip(state.load[:, None] - before, 0, cap)  # [2, N]
        got = jnp.sum(amount, 0)
        load = state.load - jnp.sum(amount, -1)
        payload = payload + got
        remain = (jnp.sum(load) + jnp.sum(payload)) > 0
        team = (params.load_reward * jnp.sum(got > 0) + params.unload_reward * jnp.sum(unload)
                + params.time_penalty * remain)
        state = state.replace(load=load, payload=payload, delivered=delivered)
        info = {"remaining": jnp.sum(load).astype(jnp.int32), "carried": jnp.sum(payload).astype(jnp.int32),
                "delivered": delivered.astype(jnp.int32), "success": ~remain}
        return state, jnp.full((self.num_robots,), team), ~remain, info

    def _robot_features(self, state, params):
        """``f32[N, 3]``: speed limit, capacity, payload."""
        return jnp.stack([params.arena.max_speed, params.capacity.astype(jnp.float32),
                          state.payload.astype(jnp.float32)], -1)

    def observe(self, state, params):
        n, xy = self.num_robots, state.pose[:, :2]
        feats = self._robot_features(state, params)
        mates = jnp.concatenate([others(xy) - xy[:, None], others(feats)], -1)  # [N, N-1, 5]
        load = jnp.broadcast_to(state.load.astype(jnp.float32), (n, 2))
        return {"robot": jnp.concatenate([pose_features(state.pose), feats, mates.reshape(n, -1), load], -1)}

    def global_obs(self, state, params=None):
        params = self.default_params() if params is None else params
        robots = jnp.concatenate([pose_features(state.pose), self._robot_features(state, params)], -1)
        return jnp.concatenate([robots.reshape(-1), state.load.astype(jnp.float32)])

    # ------------------------------------------------------------------ picture
    def draw_task(self, canvas, state, params):
        w, r = float(params.strip_width), float(params.zone_radius)
        load = np.asarray(state.load)
        fill_rect(canvas, X_MIN, Y_MIN, X_MIN + w, Y_MAX, (215, 195, 235))  # drop-off strip
        fill_rect(canvas, X_MAX - w, Y_MIN, X_MAX, Y_MAX, (190, 210, 240) if load[1] else (215, 215, 215))
        canvas.disk(0.0, 0.0, r, (250, 215, 160) if load[0] else (215, 215, 215))
        canvas.ring(0.0, 0.0, r, 2, (230, 140, 30))
        # what is left in each zone: a bar, full at the zone's mean load
        mean = np.maximum(np.asarray(params.zone_mean), 1.0)
        for k, (x, y) in enumerate(((0.0, -r - 0.06), (X_MAX - w / 2, Y_MIN + 0.1))):
            frac = min(load[k] / mean[k], 1.5)
            if frac > 0:
                canvas.line(x - 0.15, y, x - 0.15 + 0.3 * frac, y, max(2, int(canvas.scale // 30)), (90, 60, 20))

    def draw_overlay(self, canvas, state, params):
        for (x, y, _), p in zip(np.asarray(state.pose), np.asarray(state.payload)):
            if p > 0:  # carried material: a brown dot on the robot
                canvas.disk(x, y, 0.022, (120, 80, 30))

    def robot_colours(self, state, params):
        speed = np.asarray(params.arena.max_speed)
        fast = speed >= np.max(speed) - 1e-6
        return np.where(fast[:, None], np.array([40, 90, 220], np.uint8), np.array([215, 130, 40], np.uint8))

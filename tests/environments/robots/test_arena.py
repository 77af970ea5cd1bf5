"""Arena kinematics against closed-form unicycle motion, the position controller, start
positions, and the errors of invalid sizes and params."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxagents_environments.robots import Discovery, Foraging, Navigation, PredatorPrey
from jaxagents_environments.robots import arena
from jaxagents_environments.robots.arena import AXLE_LENGTH, DT, WHEEL_RADIUS, default_arena_params, integrate, wheel_limits
from jaxagents_environments.robots.controller import continuous_command, position_controller, waypoints

P1 = default_arena_params(1)


def _run(pose, vw, ticks):
    """Euler ticks with a fixed command (host loop over a jitted tick: exact same op)."""
    tick = jax.jit(lambda q: integrate(q, vw, DT))
    out = [pose]
    for _ in range(ticks):
        out.append(tick(out[-1]))
    return np.stack([np.asarray(q) for q in out])


def test_straight_line_is_exact():
    pose = jnp.array([[-1.0, -0.5, 0.6]])
    traj = _run(pose, jnp.array([[0.15, 0.0]]), 40)
    t = np.arange(41) * DT
    np.testing.assert_allclose(traj[:, 0, 0], -1.0 + 0.15 * t * np.cos(0.6), atol=2e-6)
    np.testing.assert_allclose(traj[:, 0, 1], -0.5 + 0.15 * t * np.sin(0.6), atol=2e-6)
    np.testing.assert_allclose(traj[:, 0, 2], 0.6, atol=1e-6)


def test_constant_curvature_circle():
    """Euler positions lie exactly on the discrete closed form (a geometric series of
    chords) and within O(v dt) of the continuous circle x0 + v/w (sin(th0 + w t) - sin th0)."""
    v, w, th0 = 0.12, 1.3, -2.5
    ticks = int(2 * np.pi / w / DT) + 5  # a full turn: the heading wraps through +-pi
    traj = _run(jnp.array([[0.2, 0.1, th0]]), jnp.array([[v, w]]), ticks)[:, 0]
    n = np.arange(ticks + 1)
    z = np.exp(1j * th0) * (1 - np.exp(1j * n * w * DT)) / (1 - np.exp(1j * w * DT))
    np.testing.assert_allclose(traj[:, 0], 0.2 + DT * v * z.real, atol=3e-5)
    np.testing.assert_allclose(traj[:, 1], 0.1 + DT * v * z.imag, atol=3e-5)
    heading = np.angle(np.exp(1j * (th0 + n * w * DT)))
    np.testing.assert_allclose(np.angle(np.exp(1j * (traj[:, 2] - heading))), 0, atol=3e-5)
    assert np.all(np.abs(traj[:, 2]) <= np.pi)
    t = n * DT
    cx = 0.2 + v / w * (np.sin(th0 + w * t) - np.sin(th0))
    cy = 0.1 - v / w * (np.cos(th0 + w * t) - np.cos(th0))
    err = np.hypot(traj[:, 0] - cx, traj[:, 1] - cy)
    assert err.max() < v * DT  # first-order method: one tick's travel over a full turn
    assert err.max() > 1e-4  # and it is Euler, not the exact flow


@settings(max_examples=60, deadline=None)
@given(st.floats(-1.0, 1.0), st.floats(-10.0, 10.0), st.floats(0.05, 0.4))
def test_wheel_limits_closed_form(v, w, vmax):
    out = np.asarray(wheel_limits(jnp.array([[v, w]], jnp.float32), jnp.array([vmax], jnp.float32)))[0]
    lim = vmax / WHEEL_RADIUS
    phi = np.clip([(2 * v - AXLE_LENGTH * w) / (2 * WHEEL_RADIUS), (2 * v + AXLE_LENGTH * w) / (2 * WHEEL_RADIUS)], -lim, lim)
    want = [WHEEL_RADIUS * (phi[0] + phi[1]) / 2, WHEEL_RADIUS * (phi[1] - phi[0]) / AXLE_LENGTH]
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
    if abs(phi[0]) < lim and abs(phi[1]) < lim:
        np.testing.assert_allclose(out, [v, w], rtol=1e-5, atol=1e-6)  # within limits: unchanged
    again = np.asarray(wheel_limits(jnp.asarray(out)[None], jnp.array([vmax], jnp.float32)))[0]
    np.testing.assert_allclose(again, out, rtol=1e-5, atol=1e-6)  # idempotent


def test_default_wheel_limit_is_12_5_rad_s():
    out = np.asarray(wheel_limits(jnp.array([[1.0, 0.0], [0.0, 100.0]]), jnp.array([0.2, 0.2])))
    np.testing.assert_allclose(out[0], [0.2, 0.0], rtol=1e-6)  # both wheels at 12.5 rad/s
    np.testing.assert_allclose(out[1], [0.0, 2 * 0.016 * 12.5 / 0.105], rtol=1e-5)


def test_position_controller_formula_and_convergence():
    rng = np.random.default_rng(0)
    pose = rng.uniform([-1, -0.8, -np.pi], [1, 0.8, np.pi], (16, 3)).astype(np.float32)
    goal = rng.uniform(-0.8, 0.8, (16, 2)).astype(np.float32)
    out = np.asarray(position_controller(jnp.asarray(pose), jnp.asarray(goal), P1))
    e = goal - pose[:, :2]
    phi = np.arctan2(e[:, 1], e[:, 0])
    dist = np.hypot(e[:, 0], e[:, 1])
    np.testing.assert_allclose(out[:, 0], 0.8 * dist * np.cos(phi - pose[:, 2]), atol=1e-6)
    np.testing.assert_allclose(out[:, 1], 3.0 * dist * np.sin(phi - pose[:, 2]), atol=1e-5)
    # closed loop: d|e|/dt = -k_v |e| cos^2(phi - theta) <= 0, so the distance to the
    # waypoint never grows (up to the Euler step), from any heading
    p = default_arena_params(1)

    def tick(q, _):
        q = integrate(q, wheel_limits(position_controller(q, jnp.array([[0.2, 0.0]]), p), p.max_speed), DT)
        return q, jnp.hypot(q[0, 0] - 0.2, q[0, 1])

    for heading in (0.0, 2.0, -3.0):
        _, dist = jax.jit(lambda q: jax.lax.scan(tick, q, None, length=300))(jnp.array([[0.0, 0.0, heading]]))
        dist = np.asarray(dist)
        assert np.all(np.diff(dist) <= 1e-6) and dist[-1] < 0.1


def test_discrete_waypoints_and_continuous_commands():
    p = default_arena_params(3)
    pose = jnp.array([[0.0, 0.0, 0.0], [1.55, 0.0, 0.0], [0.0, -0.95, 1.0]])
    g = np.asarray(waypoints(jnp.array([1, 3, 2]), pose, p))
    np.testing.assert_allclose(g, [[0.0, 0.2], [1.5, 0.0], [0.0, -0.9]], atol=1e-6)  # 0.1 m margin
    g = np.asarray(waypoints(jnp.array([0, 7, -1]), pose, p))  # stay; out of range acts as stay
    np.testing.assert_allclose(g, np.asarray(pose)[:, :2], atol=0)
    vw = np.asarray(continuous_command(jnp.array([[1.0, -1.0], [5.0, jnp.nan], [-0.5, 0.25]]), p))
    wmax = 2 * 0.2 / AXLE_LENGTH
    np.testing.assert_allclose(vw, [[0.2, -wmax], [0.2, 0.0], [-0.1, 0.25 * wmax]], rtol=1e-6)


def _check_start(pose, p, min_pair):
    pose = np.asarray(pose)
    xy, th = pose[:, :2], pose[:, 2]
    r = np.asarray(p.radius)
    pts = xy + 0.05 * np.stack([np.cos(th), np.sin(th)], -1)
    n = len(pose)
    iu = np.triu_indices(n, 1)
    d_pts = np.linalg.norm(pts[:, None] - pts[None], axis=-1)[iu]
    d_c = np.linalg.norm(xy[:, None] - xy[None], axis=-1)[iu]
    assert np.all(d_pts >= min_pair - 1e-5), d_pts.min()
    assert np.all(d_c >= (r[:, None] + r[None] + 0.03)[iu] - 1e-5)
    assert np.all(xy[:, 0] - r >= -1.6 + 0.005 - 1e-6) and np.all(xy[:, 0] + r <= 1.6 - 0.005 + 1e-6)
    assert np.all(xy[:, 1] - r >= -1.0 + 0.005 - 1e-6) and np.all(xy[:, 1] + r <= 1.0 - 0.005 + 1e-6)


@pytest.mark.parametrize("n", [4, 64])
def test_start_poses_satisfy_every_barrier(n):
    p = default_arena_params(n)
    grid = arena.make_grid(n, 0.3)
    poses = jax.jit(jax.vmap(lambda k: arena.spawn_poses(k, grid, n, p)))(jax.random.split(jax.random.key(n), 20))
    for pose in poses:
        _check_start(pose, p, 0.2)
    # 64 robots need a finer grid: then every robot starts with the same heading
    if grid.spacing < 0.3:
        assert np.all(np.ptp(np.asarray(poses)[:, :, 2], axis=1) < 1e-6)


def test_heterogeneous_start_poses():
    env = Navigation(num_robots=6)
    p = env.default_params()
    radius = jnp.array([0.04, 0.07, 0.055, 0.09, 0.05, 0.06])
    p = p.replace(arena=p.arena.replace(radius=radius))
    env.validate_params(p)
    states, _ = jax.jit(jax.vmap(lambda k: env.reset(k, p)))(jax.random.split(jax.random.key(0), 10))
    for pose in np.asarray(states.pose):
        _check_start(pose, p.arena, 0.2 + 2 * 0.09 - 0.11)


def _with(env, **arena_fields):
    p = env.default_params()
    return p.replace(arena=dataclasses.replace(p.arena, **arena_fields))


def test_invalid_params_raise_clear_errors():
    env = Navigation(num_robots=4)
    bad = {
        "radius": jnp.array([0.055, 0.0, 0.055, 0.055]),
        "max_speed": jnp.array([0.2, 0.2, -0.1, 0.2]),
        "dt": jnp.asarray(0.0),
        "actuation_noise": jnp.asarray(-0.1),
        "body_margin": jnp.asarray(0.02),
        "body_gain": jnp.asarray(100.0),
        "wall_gain": jnp.asarray(31.0),
    }
    for field, value in bad.items():
        with pytest.raises(ValueError, match=f"params.arena.{field}"):
            env.validate_params(_with(env, **{field: value}))
    with pytest.raises(ValueError, match=r"params.arena.radius.*shape"):
        env.validate_params(_with(env, radius=jnp.full((3,), 0.055)))
    with pytest.raises(ValueError, match=r"radius.*cannot fit the"):
        env.validate_params(_with(env, radius=jnp.array([0.055, 1.2, 0.055, 0.055])))
    # wider robots than the start grid can hold
    with pytest.raises(ValueError, match=r"radius / safety_radius.*start positions"):
        env.validate_params(_with(env, radius=jnp.full((4,), 0.3)))
    with pytest.raises(ValueError, match="params.goal_radius"):
        env.validate_params(env.default_params().replace(goal_radius=jnp.asarray(0.0)))
    with pytest.raises(ValueError, match="params.max_steps"):
        env.validate_params(env.default_params().replace(max_steps=jnp.asarray(0)))
    # eager reset checks concrete params too
    with pytest.raises(ValueError, match="params.arena.radius"):
        env.reset(jax.random.key(0), _with(env, radius=jnp.full((4,), -1.0)))


def test_invalid_sizes_raise_clear_errors():
    with pytest.raises(ValueError, match="num_robots: 500 robots.*cannot fit the arena"):
        Navigation(num_robots=500)
    with pytest.raises(ValueError, match="num_robots must be"):
        Navigation(num_robots=0)
    with pytest.raises(ValueError, match="num_robots and objects"):
        Foraging(num_robots=150, num_resources=20)
    with pytest.raises(ValueError, match="num_resources"):
        Foraging(num_resources=0)
    with pytest.raises(ValueError, match="num_landmarks"):
        Discovery(num_landmarks=500)
    with pytest.raises(ValueError, match="num_sensing \\+ num_tagging"):
        Discovery(num_sensing=30, num_tagging=30)  # they start in the left third
    with pytest.raises(ValueError, match="ticks_per_step"):
        PredatorPrey(ticks_per_step=0)
    with pytest.raises(ValueError, match="filter_iters"):
        PredatorPrey(filter_iters=0)
    with pytest.raises(ValueError, match="action_mode"):
        PredatorPrey(action_mode="joystick")
    with pytest.raises(ValueError, match="safety"):
        PredatorPrey(safety="maybe")
    with pytest.raises(ValueError, match="max_steps"):
        PredatorPrey(max_steps=0)

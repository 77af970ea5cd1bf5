"""The safety filter: unchanged safe commands, the exact hexagon projection, agreement
with a reference QP solver (scipy SLSQP on the constraints written from the spec), the
reported residual, the discrete-time exactness of the guard, and random rollouts with
4 to 50 robots that must never collide nor leave the arena (10^5 steps under ``-m slow``).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxagents
from jaxagents_environments.robots import Navigation
from jaxagents_environments.robots.arena import AXLE_LENGTH, DT, default_arena_params, integrate, make_grid, spawn_poses
from jaxagents_environments.robots.arena_sim import simulate
from jaxagents_environments.robots.safety import guard, pair_rows, project_hexagon, safety_filter, speed_bounds

GAMMA, R, L = 150.0, 0.2, 0.05
K = AXLE_LENGTH / (2 * L)


# ----------------------------------------------------------------------------- spec in numpy
def _points(pose):
    return pose[:, :2] + L * np.stack([np.cos(pose[:, 2]), np.sin(pose[:, 2])], -1)


def _point_velocity(pose, vw):
    e = np.stack([np.cos(pose[:, 2]), np.sin(pose[:, 2])], -1)
    perp = np.stack([-e[:, 1], e[:, 0]], -1)
    return vw[:, :1] * e + L * vw[:, 1:] * perp


def _pair_violation(pose, vw):
    """Largest ``(-gamma h^3 - dh/dt) / (2 sqrt2 |p_i - p_j|)`` over pairs (>= 0)."""
    p, dp = _points(pose), _point_velocity(pose, vw)
    worst = 0.0
    for i in range(len(pose)):
        for j in range(i + 1, len(pose)):
            d = p[i] - p[j]
            h = d @ d - R**2
            hdot = 2 * d @ (dp[i] - dp[j])
            worst = max(worst, (-GAMMA * h**3 - hdot) / (2 * math.sqrt(2) * math.sqrt(d @ d)))
    return worst


def _guard_rows(pose, radius=0.055, body_gain=10.0, wall_gain=10.0):
    """Linear constraints ``a . v >= b`` on each robot's own speed (body half budgets, walls)."""
    rows = []  # (robot, a, b)
    e = np.stack([np.cos(pose[:, 2]), np.sin(pose[:, 2])], -1)
    for i in range(len(pose)):
        for j in range(len(pose)):
            if i != j:
                d = pose[i, :2] - pose[j, :2]
                h = max(d @ d - (2 * radius + 0.03) ** 2, 0.0)
                rows.append((i, 2 * d @ e[i], -0.5 * body_gain * h))
        m = radius + 0.005
        x, y = pose[i, :2]
        for a, h in ((e[i, 0], x + 1.6 - m), (-e[i, 0], 1.6 - m - x), (e[i, 1], y + 1.0 - m), (-e[i, 1], 1.0 - m - y)):
            rows.append((i, a, -wall_gain * max(h, 0.0)))
    return rows


def _reference_qp(pose, vw_hat, vmax=0.2):
    """The filter's QP solved by SLSQP in (v, l w) coordinates; every constraint is
    linear, ``A z >= b``, written from the spec's formulas."""
    from scipy.optimize import minimize

    n = len(pose)
    z_hat = np.stack([vw_hat[:, 0], L * vw_hat[:, 1]], -1).reshape(-1)
    e = np.stack([np.cos(pose[:, 2]), np.sin(pose[:, 2])], -1)
    perp = np.stack([-e[:, 1], e[:, 0]], -1)
    p = _points(pose)
    rows, bounds = [], []
    for i in range(n):
        for j in range(i + 1, n):
            d = p[i] - p[j]
            a = np.zeros(2 * n)  # 2 d . (dp_i - dp_j), dp = z0 e + z1 perp
            a[2 * i: 2 * i + 2] = 2 * np.array([d @ e[i], d @ perp[i]])
            a[2 * j: 2 * j + 2] = -2 * np.array([d @ e[j], d @ perp[j]])
            rows.append(a)
            bounds.append(-GAMMA * (d @ d - R**2) ** 3)
        for s0, s1 in ((1, K), (1, -K), (-1, K), (-1, -K)):  # wheel limits |z0 +- K z1| <= vmax
            a = np.zeros(2 * n)
            a[2 * i: 2 * i + 2] = [-s0, -s1]
            rows.append(a)
            bounds.append(-vmax)
    for i, coef, b in _guard_rows(pose):
        a = np.zeros(2 * n)
        a[2 * i] = coef
        rows.append(a)
        bounds.append(b)
    A, b = np.array(rows), np.array(bounds)
    res = minimize(lambda z: np.sum((z - z_hat) ** 2), np.zeros(2 * n), jac=lambda z: 2 * (z - z_hat), method="SLSQP",
                   constraints=[{"type": "ineq", "fun": lambda z: A @ z - b, "jac": lambda z: A}],
                   options={"ftol": 1e-14, "maxiter": 1000})
    assert res.success, res.message
    z = res.x.reshape(n, 2)
    return np.stack([z[:, 0], z[:, 1] / L], -1)


def _cluster(rng, n, spread=0.45):
    """Valid poses (every barrier satisfied) packed in a small square, so constraints bind."""
    while True:
        pose = np.concatenate([rng.uniform(-spread, spread, (n, 2)), rng.uniform(-np.pi, np.pi, (n, 1))], -1)
        p, c = _points(pose), pose[:, :2]
        iu = np.triu_indices(n, 1)
        if (np.linalg.norm(p[:, None] - p[None], axis=-1)[iu].min() > R + 0.005
                and np.linalg.norm(c[:, None] - c[None], axis=-1)[iu].min() > 0.145):
            return pose.astype(np.float32)


_filter = jax.jit(safety_filter, static_argnames="iters")
_guard = jax.jit(guard)
_integrate = jax.jit(integrate)


# ----------------------------------------------------------------------------- tests
def test_safe_commands_come_out_unchanged():
    rng = np.random.default_rng(0)
    p = default_arena_params(4)
    pose = np.array([[-1.2, -0.6, 0.3], [-1.2, 0.6, 2.0], [1.2, -0.6, -1.0], [1.2, 0.6, 3.0]], np.float32)
    for _ in range(5):
        vw = np.stack([rng.uniform(-0.05, 0.05, 4), rng.uniform(-0.5, 0.5, 4)], -1).astype(np.float32)
        out, lam, res = _filter(jnp.asarray(vw), jnp.asarray(pose), p, iters=400)
        np.testing.assert_array_equal(np.asarray(out), vw)
        assert float(res) == 0.0 and not np.any(np.asarray(lam))
        np.testing.assert_array_equal(np.asarray(_guard(jnp.asarray(vw), jnp.asarray(pose), p)), vw)


_project = jax.jit(project_hexagon, static_argnames="k")


@settings(max_examples=40, deadline=None)
@given(st.floats(-0.5, 0.5), st.floats(-0.5, 0.5), st.floats(0.05, 0.3), st.floats(-0.3, 0.0), st.floats(0.0, 0.3))
def test_hexagon_projection_is_the_nearest_point(z0, z1, c, lo, hi):
    z = jnp.array([[z0, z1]], jnp.float32)
    out = np.asarray(_project(z, jnp.array([c]), K, jnp.array([lo]), jnp.array([hi])))[0]
    lo_, hi_ = max(lo, -c), min(hi, c)
    inside = lambda q: (abs(q[0] + K * q[1]) <= c * (1 + 1e-5) + 1e-7 and abs(q[0] - K * q[1]) <= c * (1 + 1e-5) + 1e-7
                        and lo_ - 1e-7 <= q[0] <= hi_ + 1e-7)
    assert inside(out)
    # brute force: the nearest of a dense sample of the set
    g0, g1 = np.meshgrid(np.linspace(lo_, hi_, 301), np.linspace(-c / K, c / K, 301))
    ok = (np.abs(g0 + K * g1) <= c) & (np.abs(g0 - K * g1) <= c)
    best = np.min(np.hypot(g0[ok] - z0, g1[ok] - z1))
    assert np.hypot(out[0] - z0, out[1] - z1) <= best + 1e-6
    # a point strictly inside the set (no tolerance) is returned unchanged
    q = np.float32([z0, z1])
    # (bounds rounded to float32, as the jitted function sees them)
    if abs(q[0] + K * q[1]) <= c and abs(q[0] - K * q[1]) <= c and np.float32(lo_) <= q[0] <= np.float32(hi_):
        np.testing.assert_array_equal(out, q)


def test_filter_matches_a_reference_qp_and_reports_its_residual():
    rng = np.random.default_rng(1)
    worst_gap, changed = 0.0, 0
    n = 4
    p = default_arena_params(n)
    for trial in range(6):
        pose = _cluster(rng, n, spread=0.25)
        # drive toward the cluster's centre (forward or in reverse), turning at random
        to_centre = pose[:, :2].mean(0) - pose[:, :2]
        ahead = np.sign(np.sum(to_centre * np.stack([np.cos(pose[:, 2]), np.sin(pose[:, 2])], -1), -1))
        vw = np.stack([0.2 * ahead, rng.uniform(-3, 3, n)], -1).astype(np.float32)
        vw = np.asarray(_guard(jnp.asarray(vw), jnp.asarray(pose), p))  # inside the limits
        out, _, res = _filter(jnp.asarray(vw), jnp.asarray(pose), p, iters=400)
        out = np.asarray(out, np.float64)
        ref = _reference_qp(pose.astype(np.float64), vw.astype(np.float64))
        gap = np.max(np.abs(np.stack([out[:, 0] - ref[:, 0], L * (out[:, 1] - ref[:, 1])])))
        worst_gap = max(worst_gap, gap)
        changed += np.max(np.abs(out - vw)) > 1e-2
        assert gap < 2e-3, (trial, out, ref)
        assert float(res) < 1e-4
        # the reported residual is the violation recomputed from the spec's formulas,
        # also when the iterations are too few to converge
        few, _, res_few = _filter(jnp.asarray(vw), jnp.asarray(pose), p, iters=2)
        assert float(res_few) == pytest.approx(_pair_violation(pose.astype(np.float64), np.asarray(few, np.float64)), abs=2e-5)
        assert float(res) == pytest.approx(_pair_violation(pose.astype(np.float64), out), abs=2e-5)
    assert changed >= 4  # the constraints bind: the filter had work to do
    print(f"largest gap to SLSQP over 6 problems ({changed} changed by the filter): {worst_gap:.2e} m/s")


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**31 - 1), st.booleans())
def test_guard_is_exact_in_discrete_time(seed, near_wall):
    """Whatever the command, one tick after the guard (or the filter with 2 iterations)
    every body barrier keeps ``h' >= (1 - dt gain) h`` and every body stays inside."""
    rng = np.random.default_rng(seed)
    p = default_arena_params(4)
    pose = _cluster(rng, 4, spread=0.25)
    if near_wall:  # shift the cluster until a body touches the right (or top) wall
        axis, limit = (0, 1.6) if seed % 2 else (1, 1.0)
        pose[:, axis] += limit - 0.055 - 0.005 - pose[:, axis].max() - rng.uniform(0, 1e-3)
    vw = np.stack([rng.uniform(-1, 1, 4), rng.uniform(-10, 10, 4)], -1).astype(np.float32)
    a = pose.astype(np.float64)
    iu = np.triu_indices(4, 1)
    h0 = (np.linalg.norm(a[:, None, :2] - a[None, :, :2], axis=-1) ** 2 - 0.14**2)[iu]
    for out in (_guard(jnp.asarray(vw), jnp.asarray(pose), p), _filter(jnp.asarray(vw), jnp.asarray(pose), p, iters=2)[0]):
        b = np.asarray(_integrate(jnp.asarray(pose), out, DT), np.float64)
        h1 = (np.linalg.norm(b[:, None, :2] - b[None, :, :2], axis=-1) ** 2 - 0.14**2)[iu]
        assert np.all(h1 >= (1 - DT * 10.0) * h0 - 1e-6)
        assert np.all(np.abs(b[:, 0]) + 0.055 <= 1.6 - 0.005 + 1e-6)
        assert np.all(np.abs(b[:, 1]) + 0.055 <= 1.0 - 0.005 + 1e-6)


def _reference_dual(vw_hat, pose, p, iters, lam0):
    """The dual iterations of the module docstring in float64, step by step: ``iters``
    FISTA steps from ``lam0``, the hexagon projection as the nearest of its six edges (or
    the point itself when inside). Pair rows and guard bounds from the module (their
    own tests are above); returns ``(vw, lam, residual)``."""
    ux, uy, b, mask = (np.asarray(a) for a in pair_rows(jnp.asarray(pose), p))
    ux, uy, b = (a.astype(np.float64) for a in (ux, uy, b))
    lo, hi = (np.asarray(a, np.float64) for a in speed_bounds(jnp.asarray(pose), p))
    c = 0.2
    lo, hi = np.clip(lo, -c, 0.0), np.clip(hi, 0.0, c)
    cs, sn = np.cos(pose[:, 2].astype(np.float64)), np.sin(pose[:, 2].astype(np.float64))
    z_hat = np.stack([vw_hat[:, 0], L * vw_hat[:, 1]], -1).astype(np.float64)

    def project(z, i):
        tol = c * (1 + 1e-6)
        if abs(z[0] + K * z[1]) <= tol and abs(z[0] - K * z[1]) <= tol and lo[i] <= z[0] <= hi[i]:
            return z
        top = lambda v: (c - abs(v)) / K
        vx = [hi[i], 0.0, lo[i], lo[i], 0.0, hi[i]]
        vy = [top(hi[i]), c / K, top(lo[i]), -top(lo[i]), -c / K, -top(hi[i])]
        best, best_d = None, np.inf
        for e in range(6):
            a, d = np.array([vx[e], vy[e]]), np.array([vx[(e + 1) % 6] - vx[e], vy[(e + 1) % 6] - vy[e]])
            q = a + np.clip((z - a) @ d / max(d @ d, 1e-30), 0.0, 1.0) * d
            if np.sum((z - q) ** 2) < best_d:
                best, best_d = q, np.sum((z - q) ** 2)
        return best

    def primal(y):
        fx, fy = np.sum(y * ux, 1) / math.sqrt(2), np.sum(y * uy, 1) / math.sqrt(2)
        move = np.stack([cs * fx + sn * fy, cs * fy - sn * fx], -1)
        return np.stack([project(z, i) for i, z in enumerate(z_hat + move)])

    def gap(z):
        vx, vy = cs * z[:, 0] - sn * z[:, 1], sn * z[:, 0] + cs * z[:, 1]
        s = ux * vx[:, None] + uy * vy[:, None]
        return b - (s + s.T) / math.sqrt(2)

    rows = mask.sum(1)
    step = np.where(mask, 2.0 / np.maximum(rows[:, None] + rows[None], 1.0), 0.0)
    lam = prev = np.where(mask, lam0, 0.0).astype(np.float64)
    t = 1.0
    for _ in range(iters):
        t_next = 0.5 * (1 + math.sqrt(1 + 4 * t * t))
        y = lam + (t - 1) / t_next * (lam - prev)
        z = primal(y)
        g = gap(z)
        prev, lam, t = lam, np.where(mask, np.maximum(y + step * g, 0.0), 0.0), t_next
    return np.stack([z[:, 0], z[:, 1] / L], -1), lam, np.max(np.where(mask, np.maximum(g, 0.0), 0.0))


def _random_problems(rng, n, count):
    """Poses from packed (the pair rows bind) to spread out, commands inside the wheel
    limits or not, warm starts zero or random."""
    out = []
    for m in range(count):
        pose = _cluster(rng, n, spread=0.25) if m % 2 == 0 else np.concatenate(
            [rng.uniform(-1.4, 1.4, (n, 1)), rng.uniform(-0.8, 0.8, (n, 1)), rng.uniform(-np.pi, np.pi, (n, 1))], -1)
        vw = np.stack([rng.uniform(-0.25, 0.25, n), rng.uniform(-4, 4, n)], -1)
        lam0 = np.abs(rng.normal(0, 0.05, (n, n))) * (m % 3 == 0)
        out.append((vw.astype(np.float32), pose.astype(np.float32), (lam0 + lam0.T).astype(np.float32)))
    return out


# three robots by default, four with the slow checks (10-15 s each: the default suite keeps its 10 minutes)
@pytest.mark.parametrize("n", [3, pytest.param(4, marks=pytest.mark.slow)])
def test_filter_runs_the_dual_iterations_of_the_spec(n):
    """The filter's 20 steps (complex-packed, pipelined, stopping at an exact fixed point)
    against the same 20 steps in float64: the same commands to 2e-5 m/s and the same
    residual; alone (early stop) and in a batch (the fixed count) the same output."""
    rng = np.random.default_rng(n)
    p = default_arena_params(n)
    probs = _random_problems(rng, n, 12)
    batched = jax.jit(jax.vmap(lambda v, q, l0: safety_filter(v, q, p, 20, l0)))(
        *(jnp.asarray(np.stack(a)) for a in zip(*probs)))
    moved = 0
    for m, (vw, pose, lam0) in enumerate(probs):
        out, lam, res = (np.asarray(a) for a in _filter(jnp.asarray(vw), jnp.asarray(pose), p, iters=20,
                                                          lam0=jnp.asarray(lam0)))
        ref, ref_lam, ref_res = _reference_dual(vw, pose, p, 20, lam0)
        np.testing.assert_allclose(out[:, 0], ref[:, 0], atol=2e-5, err_msg=f"problem {m}: v")
        np.testing.assert_allclose(L * out[:, 1], L * ref[:, 1], atol=2e-5, err_msg=f"problem {m}: l w")
        assert abs(float(res) - ref_res) < 2e-5, (m, float(res), ref_res)
        np.testing.assert_allclose(lam, ref_lam, atol=1e-3 * max(1.0, np.abs(ref_lam).max()), err_msg=f"problem {m}")
        for got, single in zip(batched, (out, lam, res)):
            # the batched and the single program may round differently (float32): jax 0.7's
            # differ by 1.8e-6 on a value of 1.28 where 0.10's agree to 1e-6
            np.testing.assert_allclose(np.asarray(got)[m], single, rtol=1e-5, atol=1e-6,
                                       err_msg=f"problem {m}: batch")
        moved += ref_res > 0 or np.any(ref_lam > 0)
    assert moved >= 4  # the pair rows bind in several problems: the iterations had work to do


# ----------------------------------------------------------------------------- random rollouts
def _rollout_fn(env, num_envs, steps):
    """One compiled program: ``num_envs`` random-policy episodes of ``steps`` steps (no
    reset: the arena runs on past the time limit), returning per-step safety metrics and
    the end-of-step poses."""
    params = env.default_params()

    @jax.jit
    def run(key):
        k0, k1 = jax.random.split(key)
        state, ts = jax.vmap(lambda k: env.reset(k, params))(jax.random.split(k0, num_envs))

        def body(carry, k):
            state, ts = carry
            ka, ks = jax.random.split(k)
            acts = jax.vmap(lambda kk, t: jaxagents.random_actions(env, kk, t))(jax.random.split(ka, num_envs), ts)
            state, ts = jax.vmap(lambda kk, s, a: env.step(kk, s, a, params))(jax.random.split(ks, num_envs), state, acts)
            keep = {k: ts.info[k] for k in ("min_distance", "collisions", "boundary", "filter_residual")}
            return (state, ts), (keep, state.pose)

        return jax.lax.scan(body, (state, ts), jax.random.split(k1, steps))[1]

    return run


def _check_safe(info, poses, radius=0.055):
    info = jax.device_get(info)
    poses = np.asarray(poses)
    assert int(info["collisions"].sum()) == 0 and int(info["boundary"].sum()) == 0
    assert float(info["min_distance"].min()) >= 0.135
    xy = poses[..., :2]
    n = xy.shape[-2]
    d = np.linalg.norm(xy[..., :, None, :] - xy[..., None, :, :], axis=-1) + np.eye(n) * 9
    assert d.min() >= 0.135  # end-of-step poses, checked independently of info
    assert np.all(np.abs(xy[..., 0]) + radius <= 1.6) and np.all(np.abs(xy[..., 1]) + radius <= 1.0)
    return float(info["filter_residual"].max()), float(info["min_distance"].min())


# (num_robots, action_mode, zero_order_hold, num_envs, steps): the default suite runs
# 50 robots filtered per tick and 8 robots with zero-order hold (the held command only
# goes through the guard at each tick), 1,370 env steps in all; ``-m slow`` runs 10^5
# env steps (3 million ticks) over 4 to 50 robots, both filtering modes and action modes.
# 50 robots every tick (25 s here) run with the slow checks, in the longer SLOW cases below
CASES = [(8, "continuous", True, 32, 40)]
SLOW = [(4, "continuous", False, 256, 160), (16, "discrete", False, 128, 160), (50, "continuous", False, 64, 160),
        (50, "discrete", True, 64, 160), (16, "continuous", True, 128, 160)]  # 102,400 env steps


@pytest.mark.parametrize("n,mode,hold,num_envs,steps", CASES)
def test_random_policies_never_collide_nor_leave_the_arena(n, mode, hold, num_envs, steps):
    env = Navigation(num_robots=n, action_mode=mode, zero_order_hold=hold, metrics="tick")  # every tick counted
    info, poses = _rollout_fn(env, num_envs, steps)(jax.random.key(n))
    residual, closest = _check_safe(info, poses)
    print(f"{n} robots, {mode}, hold={hold}: {num_envs * steps} env steps, closest {closest:.4f} m, "
          f"largest QP residual {residual:.2e} m/s")


def test_without_the_filter_random_robots_do_collide():
    """The same robots and commands without the filter collide and leave the arena (so
    the checks above can fail)."""
    p = default_arena_params(50)
    grid = make_grid(50, 0.3)

    @jax.jit
    def run(key):
        pose = spawn_poses(key, grid, 50, p)

        def body(pose, k):
            vw = jax.random.uniform(k, (50, 2), minval=-1, maxval=1) * jnp.array([0.2, 3.8])
            pose, info = simulate(k, pose, vw, p, waypoint=False, safety=False, hold=True, ticks=30, iters=1)
            return pose, info

        return jax.lax.scan(body, pose, jax.random.split(key, 30))[1]

    info = run(jax.random.key(0))
    assert int(np.sum(info["collisions"])) > 0 and int(np.sum(info["boundary"])) > 0
    assert int(np.sum(info["filter_iters"])) == 0 and float(np.max(info["filter_residual"])) == 0


@pytest.mark.heavy
@pytest.mark.parametrize("n,mode,hold,num_envs,steps", SLOW)
def test_random_policies_never_collide_long(n, mode, hold, num_envs, steps):
    env = Navigation(num_robots=n, action_mode=mode, zero_order_hold=hold, metrics="tick")  # every tick counted
    key = jax.random.key(100 + n)
    # a long run: worth XLA's optimisations (the suite's conftest turns them off)
    run = _rollout_fn(env, num_envs, steps).lower(key).compile(compiler_options={"xla_backend_optimization_level": 3})
    residual, closest = _check_safe(*run(key))
    print(f"{n} robots, {mode}, hold={hold}: {num_envs * steps} env steps, closest {closest:.4f} m, "
          f"largest QP residual {residual:.2e} m/s")


@pytest.mark.slow
def test_robust_barrier_per_tick_never_collides():
    """The robust option (JaxRobotarium's rows, no guard), recomputed every tick: no
    collision at any tick, every filtering within its tolerance (the 10^5-step report is
    experiments/robots_filter_report.py)."""
    env = Navigation(num_robots=4, barrier="robust", metrics="tick", filter_iters=200)
    info, poses = _rollout_fn(env, 64, 100)(jax.random.key(5))
    assert int(np.sum(info["collisions"])) == 0 and float(np.min(info["min_distance"])) >= 0.135
    assert float(np.max(info["filter_residual"])) <= 1e-4

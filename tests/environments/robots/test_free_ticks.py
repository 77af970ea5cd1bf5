"""The unfiltered ticks (``arena_sim._simulate_free``): the heading's cosine and sine are
turned by each tick's angle (``turn`` / ``rotate``) instead of evaluated from the wrapped
heading, and a held command's ticks are summed in closed form. That changes float32 rounding only: one step (30 ticks) lands within 3e-6 m and
5e-5 rad of the tick-by-tick ``integrate`` of before, and is as close to a float64
reference of the same Euler ticks as that one is."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxagents_environments.robots import Navigation
from jaxagents_environments.robots.arena import (
    AXLE_LENGTH, MAX_TICK_TURN, WHEEL_RADIUS, check_arena_params, default_arena_params, integrate, turn, wheel_limits,
)
from jaxagents_environments.robots.arena_sim import simulate
from jaxagents_environments.robots.controller import position_controller, waypoints

N, B, TICKS = 4, 128, 30
XY_TOL, TH_TOL = 3e-6, 5e-5  # one step, float32 against float32 / float64 (heading on the circle)


def _states(seed=0):
    p = default_arena_params(N)
    k1, k2, k3 = jax.random.split(jax.random.key(seed), 3)
    xy = jax.random.uniform(k1, (B, N, 2), minval=jnp.array([-1.4, -0.8]), maxval=jnp.array([1.4, 0.8]))
    pose = jnp.concatenate([xy, jax.random.uniform(k2, (B, N, 1), minval=-np.pi, maxval=np.pi)], -1)
    target = jax.vmap(lambda a, q: waypoints(a, q, p))(jax.random.randint(k3, (B, N), 0, 5), pose)
    return p, pose, target


def _before(pose, target, p, hold, noise):
    """The unfiltered ticks as they were: controller, wheel limits and ``integrate`` per tick."""
    held = wheel_limits(position_controller(pose, target, p), p.max_speed, noise[0])

    def tick(pose, noise_t):
        vw = held if hold else wheel_limits(position_controller(pose, target, p), p.max_speed, noise_t)
        return integrate(pose, vw, p.dt), None

    return jax.lax.scan(tick, pose, noise)[0]


def _float64(pose, target, p, hold):
    pose, g = np.asarray(pose, np.float64), np.asarray(target, np.float64)
    x, y, th = pose[..., 0], pose[..., 1], pose[..., 2]
    lim = float(p.max_speed[0]) / WHEEL_RADIUS

    def command():
        ex, ey = g[..., 0] - x, g[..., 1] - y
        v = float(p.k_v) * (ex * np.cos(th) + ey * np.sin(th))
        w = float(p.k_w) * (ey * np.cos(th) - ex * np.sin(th))
        pl = np.clip((2 * v - AXLE_LENGTH * w) / (2 * WHEEL_RADIUS), -lim, lim)
        pr = np.clip((2 * v + AXLE_LENGTH * w) / (2 * WHEEL_RADIUS), -lim, lim)
        return WHEEL_RADIUS * (pl + pr) / 2, WHEEL_RADIUS * (pr - pl) / AXLE_LENGTH

    v, w = command()
    dt = float(p.dt)
    for _ in range(TICKS):
        if not hold:
            v, w = command()
        x, y, th = x + dt * v * np.cos(th), y + dt * v * np.sin(th), np.mod(th + dt * w + np.pi, 2 * np.pi) - np.pi
    return np.stack([x, y, th], -1)


def _errors(a, b):
    d = np.asarray(a, np.float64) - np.asarray(b, np.float64)
    return np.abs(d[..., :2]), np.abs(np.angle(np.exp(1j * d[..., 2])))


@pytest.mark.parametrize("hold,metrics", [(True, "step"), (True, "tick"), (False, "step")])
def test_rotated_heading_matches_the_tick_by_tick_integration(hold, metrics):
    # held with metrics="step": the closed-form sum of the ticks; with "tick": the tick loop
    p, pose, target = _states()
    keys = jax.random.split(jax.random.key(1), B)
    step = jax.jit(jax.vmap(lambda k, q, g: simulate(k, q, g, p, waypoint=True, safety=False, hold=hold,
                                                     ticks=TICKS, iters=20, metrics=metrics)[0]))
    new = step(keys, pose, target)
    zeros = jnp.zeros((TICKS, N, 2), jnp.float32)
    old = jax.jit(jax.vmap(lambda q, g: _before(q, g, p, hold, zeros)))(pose, target)
    ref = _float64(pose, target, p, hold)
    dxy, dth = _errors(new, old)
    assert dxy.max() < XY_TOL and dth.max() < TH_TOL, (dxy.max(), dth.max())
    (nxy, nth), (oxy, oth) = _errors(new, ref), _errors(old, ref)
    assert nxy.max() < XY_TOL and nth.max() < TH_TOL, (nxy.max(), nth.max())
    # no less accurate than before, on average over the robots
    assert nxy.mean() <= 1.2 * oxy.mean() + 1e-8 and nth.mean() <= 1.2 * oth.mean() + 1e-8


@pytest.mark.parametrize("hold", [True, False])
def test_noise_is_the_same_draw(hold):
    p, pose, target = _states(2)
    p = p.replace(actuation_noise=jnp.asarray(0.1, jnp.float32))
    scale = (p.actuation_noise * p.max_speed / WHEEL_RADIUS)[:, None]
    keys = jax.random.split(jax.random.key(3), B)
    new = jax.jit(jax.vmap(lambda k, q, g: simulate(k, q, g, p, waypoint=True, safety=False, hold=hold,
                                                    ticks=TICKS, iters=20)[0]))(keys, pose, target)
    old = jax.jit(jax.vmap(lambda k, q, g: _before(q, g, p, hold, jax.random.normal(k, (TICKS, N, 2)) * scale)))(
        keys, pose, target)
    dxy, dth = _errors(new, old)
    assert dxy.max() < XY_TOL and dth.max() < TH_TOL, (dxy.max(), dth.max())
    quiet = jax.jit(jax.vmap(lambda k, q, g: simulate(k, q, g, p.replace(actuation_noise=jnp.zeros(())),
                                                      waypoint=True, safety=False, hold=hold, ticks=TICKS,
                                                      iters=20)[0]))(keys, pose, target)
    assert np.abs(np.asarray(quiet) - np.asarray(new)).max() > 1e-4  # the noise is applied


def test_turn_polynomials_and_their_limit():
    a = np.linspace(-MAX_TICK_TURN, MAX_TICK_TURN, 2001).astype(np.float32)
    c, s = jax.jit(turn)(jnp.asarray(a))
    np.testing.assert_allclose(np.asarray(c), np.cos(a.astype(np.float64)), atol=2e-7)
    np.testing.assert_allclose(np.asarray(s), np.sin(a.astype(np.float64)), atol=2e-7)
    env = Navigation(num_robots=N)
    p = env.default_params()
    check_arena_params(jax.tree_util.tree_map(np.asarray, p.arena), N, env.robot_grid.spacing)
    fast = p.arena.replace(max_speed=jnp.full((N,), 2.0, jnp.float32))  # 0.033 s * 38 rad/s > 1 rad per tick
    with pytest.raises(ValueError, match="params.arena.dt / max_speed"):
        check_arena_params(jax.tree_util.tree_map(np.asarray, fast), N, env.robot_grid.spacing)

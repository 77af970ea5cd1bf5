"""Material transport, warehouse, arctic transport and continuous RWARE.

Per scenario: every reward term and the termination on hand-built states (the rules are
called directly), the rules against a plain-Python reference on random states, and one
compiled program of full steps (``B`` environments x ``T`` steps) that serves both the
random rollouts checked for invariants (conservation, rewards recomputed from the states,
no NaN) and scripted situations (speeds, toggles, blocking). The programs run without the
safety filter, which triples their compile time and is the arena's business
(``test_safety.py``; the conformance suite runs these scenarios with it)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxagents.core import Box, Discrete
from jaxagents_environments.robots.arctic_transport import GOAL, GROUND, ICE, WATER, ArcticState, ArcticTransport
from jaxagents_environments.robots.continuous_rware import ContinuousRware, RwareState
from jaxagents_environments.robots.material_transport import MaterialTransport, TransportState
from jaxagents_environments.robots.warehouse import Warehouse, WarehouseState

KEY = jax.random.key(0)
T0 = jnp.zeros((), jnp.int32)
B, T = 4, 20  # environments and steps of every compiled rollout


def _pose(*rows):
    return jnp.asarray(rows, jnp.float32)


def _rules(env):
    return jax.jit(env.update_task), jax.jit(env.observe)


class Program:
    """One compiled program per environment: ``T`` steps of ``B`` environments from
    given states with given actions and (traced) params; returns the states and time
    steps after every step. Random actions are drawn on the host."""

    def __init__(self, env, seed=0):
        self.env = env
        self.params = env.default_params()
        reset = jax.jit(jax.vmap(lambda k: env.reset_task(k, self.params)))
        self.start = reset(jax.random.split(jax.random.key(seed), B))

        def run(key, state, acts, params):
            def body(s, xs):
                k, a = xs
                s, ts = jax.vmap(lambda kk, ss, aa: env.step(kk, ss, aa, params))(jax.random.split(k, B), s, a)
                return s, (s, ts)

            return jax.lax.scan(body, state, (jax.random.split(key, T), acts))[1]

        self._run = jax.jit(run)

    def run(self, state, acts, params=None, key=KEY):
        return jax.device_get(self._run(key, state, acts, self.params if params is None else params))

    def random_actions(self, seed):
        rng = np.random.default_rng(seed)
        out = {}
        for name, role in self.env.roles.items():
            space = role.action_space
            if isinstance(space, Discrete):
                out[name] = jnp.asarray(rng.integers(0, space.n, (T, B, role.num_agents)), jnp.int32)
            else:
                out[name] = jnp.asarray(rng.uniform(-1, 1, (T, B, role.num_agents) + space.shape), jnp.float32)
        return out

    def constant_actions(self, value):
        return {k: jnp.full((T, B, r.num_agents) + r.action_space.shape, value, r.action_space.dtype)
                for k, r in self.env.roles.items()}


def _tile(state):
    """One hand-built state -> a batch of ``B`` copies."""
    return jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (B,) + jnp.shape(x)), state)


def _finite(traj):
    states, ts = traj
    for leaf in jax.tree_util.tree_leaves((ts.obs, ts.reward, ts.info, states.pose)):
        leaf = np.asarray(leaf)
        if np.issubdtype(leaf.dtype, np.floating):
            assert np.all(np.isfinite(leaf))
    assert not np.any(ts.terminated & ts.truncated)


def _team(ts, role):
    r = np.asarray(ts.reward[role])
    assert np.all(r == r[..., :1])  # team reward
    return r[..., 0]


# ============================================================================ material transport
@pytest.fixture(scope="module")
def mt():
    return Program(MaterialTransport(num_robots=4, safety=False), seed=1)


@pytest.fixture(scope="module")
def wh():
    return Program(Warehouse(num_green=2, num_red=2, safety=False), seed=2)


@pytest.fixture(scope="module")
def arc():
    return Program(ArcticTransport(num_drones=2, num_ground=2, safety=False), seed=3)


@pytest.fixture(scope="module")
def rw():
    return Program(ContinuousRware(num_robots=3, num_shelves=6, safety=False), seed=4)


def test_material_transport_rewards_and_termination():
    env = MaterialTransport(num_robots=4)
    params = env.default_params()
    np.testing.assert_array_equal(params.capacity, [5, 5, 15, 15])
    np.testing.assert_allclose(params.arena.max_speed, [0.2, 0.2, 0.2 / 3, 0.2 / 3], rtol=1e-6)
    update, observe = _rules(env)
    prev = TransportState(pose=_pose([-1, 0, 0], [-1, 0.5, 0], [-1, -0.5, 0], [-0.9, 0, 0]), load=jnp.array([7, 0]),
                          payload=jnp.array([0, 5, 0, 0]), delivered=jnp.asarray(3), t=T0)
    # robot 0 (capacity 5) and robot 2 (15) in zone 1, which has 7 left; robot 1 unloads 5 in the
    # strip; robot 3 sits in zone 2, which is empty
    state = prev.replace(pose=_pose([0.1, 0.0, 0], [-1.3, 0.5, 0], [0.0, -0.2, 0], [1.4, 0.0, 0]))
    state, reward, done, info = update(KEY, prev, state, params)
    np.testing.assert_array_equal(state.payload, [5, 0, 2, 0])  # served in robot order: 5, then the 2 left
    np.testing.assert_array_equal(state.load, [0, 0])
    assert int(state.delivered) == 8 and int(info["carried"]) == 7 and int(info["remaining"]) == 0
    np.testing.assert_allclose(reward, 2 * 0.25 + 0.75 - 0.1, rtol=1e-6)  # 2 loads, 1 unload, material remains
    assert not bool(done)
    # an empty robot in a loading zone with nothing left does not load; a loaded one in a zone keeps its load
    again, reward, done, _ = update(KEY, state, state, params)
    np.testing.assert_array_equal(again.payload, [5, 0, 2, 0])
    np.testing.assert_allclose(reward, -0.1, rtol=1e-6)
    # both carriers reach the strip: everything delivered, no time penalty, terminated
    last = state.replace(pose=_pose([-1.2, 0.3, 0], [-1.3, 0.5, 0], [-1.4, -0.3, 0], [1.4, 0.0, 0]))
    last, reward, done, info = update(KEY, state, last, params)
    np.testing.assert_allclose(reward, 2 * 0.75, rtol=1e-6)
    assert bool(done) and bool(info["success"]) and int(last.delivered) == 15
    obs = np.asarray(observe(last, params)["robot"])
    assert obs.shape == (4, env.obs_dim("robot")) == (4, 7 + 5 * 3 + 2)
    # robot 2: speed, capacity, payload; then robot 3 (offset, speed, capacity, payload); zone loads last
    np.testing.assert_allclose(obs[2, 4:12], [0.2 / 3, 15, 0, 2.8, 0.3, 0.2 / 3, 15, 0], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(obs[2, -2:], [0, 0])
    assert env.global_obs(last, params).shape == env.global_obs_shape == (7 * 4 + 2,)


def _mt_reference(xy, payload, load, cap, r, w):
    """The rules of one step, robot by robot."""
    payload, load = payload.copy(), load.copy()
    loads = unloads = delivered = 0
    for i, (x, y) in enumerate(xy):
        if payload[i] > 0 and x < -1.6 + w:
            delivered, payload[i], unloads = delivered + payload[i], 0, unloads + 1
    for i, (x, y) in enumerate(xy):
        zone = 0 if x * x + y * y < r * r else (1 if x > 1.6 - w else None)
        if payload[i] == 0 and zone is not None and load[zone] > 0:
            amount = min(cap[i], load[zone])
            load[zone] -= amount
            payload[i], loads = amount, loads + 1
    remain = load.sum() + payload.sum() > 0
    return payload, load, delivered, 0.25 * loads + 0.75 * unloads - 0.1 * remain, not remain


@functools.cache
def _mt_rules():
    env = MaterialTransport(num_robots=6)
    return env, jax.jit(env.update_task)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_material_transport_matches_a_reference(seed):
    env, update = _mt_rules()
    rng = np.random.default_rng(seed)
    cap = rng.integers(1, 12, 6)
    params = env.default_params().replace(capacity=jnp.asarray(cap, jnp.int32),
                                          zone_radius=jnp.asarray(rng.uniform(0.2, 0.6), jnp.float32))
    # robots in the zones, the strip or elsewhere
    xy = np.stack([rng.choice([-1.45, -0.5, 0.0, 0.15, 1.3, 1.5], 6) + rng.uniform(-0.1, 0.1, 6),
                   rng.uniform(-0.9, 0.9, 6) * rng.choice([0.0, 0.2, 1.0], 6)], -1).astype(np.float32)
    payload = np.where(rng.random(6) < 0.4, rng.integers(1, 10, 6), 0)
    load = rng.integers(0, 25, 2)
    state = TransportState(pose=jnp.asarray(np.concatenate([xy, np.zeros((6, 1), np.float32)], -1)),
                           load=jnp.asarray(load, jnp.int32), payload=jnp.asarray(payload, jnp.int32),
                           delivered=T0, t=T0)
    new, reward, done, info = update(KEY, state, state, params)
    ref = _mt_reference(xy, payload, load, cap, float(params.zone_radius), 0.5)
    np.testing.assert_array_equal(new.payload, ref[0])
    np.testing.assert_array_equal(new.load, ref[1])
    assert int(new.delivered) == ref[2] and bool(done) == ref[4]
    np.testing.assert_allclose(reward, ref[3], rtol=1e-6, atol=1e-6)
    # conservation: what left the zones is carried or delivered
    assert int(new.load.sum() + new.payload.sum() + new.delivered) == load.sum() + payload.sum()


def test_material_transport_rollouts_conserve_material(mt):
    states = mt.start
    total = np.asarray(states.load.sum(-1))
    assert np.all(total > 40)  # 75 +- 10 and 15 +- 4 units
    states = states.replace(pose=states.pose.at[:, 0].set(jnp.array([0.0, 0.0, 0.0])))  # robot 0 in zone 1
    traj = mt.run(states, mt.random_actions(0))
    _finite(traj)
    s, ts = traj
    np.testing.assert_array_equal(s.load.sum(-1) + s.payload.sum(-1) + s.delivered, np.broadcast_to(total, (T, B)))
    assert np.all(s.payload[0, :, 0] == 5)  # robot 0 loaded at the first step
    # the reward recomputed from the states (a robot never loads and unloads in one step)
    before = np.concatenate([np.asarray(states.payload)[None], s.payload[:-1]])
    loads = np.sum((before == 0) & (s.payload > 0), -1)
    unloads = np.sum((before > 0) & (s.payload == 0), -1)
    remain = s.load.sum(-1) + s.payload.sum(-1) > 0
    np.testing.assert_allclose(_team(ts, "robot"), 0.25 * loads + 0.75 * unloads - 0.1 * remain, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(ts.terminated, ~remain)
    np.testing.assert_array_equal(ts.info["delivered"], s.delivered)


def test_material_transport_fast_robots_are_three_times_faster(mt):
    pose = _pose([-1.0, -0.6, 0], [-1.0, -0.2, 0], [-1.0, 0.2, 0], [-1.0, 0.6, 0])
    state = TransportState(pose=pose, load=jnp.array([10, 10]), payload=jnp.zeros(4, jnp.int32),
                           delivered=T0, t=T0)
    s, _ = mt.run(_tile(state), mt.constant_actions(3))  # +x
    moved = s.pose[0, 0, :, 0] + 1.0
    np.testing.assert_allclose(moved[:2], 0.195, atol=0.01)  # 0.2 m/s, waypoint 0.4 m ahead
    np.testing.assert_allclose(moved[2:], 0.2 / 3, atol=0.005)
    np.testing.assert_allclose(s.pose[0, 0, :, 1], pose[:, 1], atol=1e-5)


# ============================================================================ warehouse
def test_warehouse_loads_and_deliveries_by_colour():
    env = Warehouse(num_green=2, num_red=2)
    assert list(env.roles) == ["green", "red"]
    params = env.default_params()
    update, observe = _rules(env)
    prev = WarehouseState(pose=_pose([0, 0, 0], [0, 0.5, 0], [0.5, 0, 0], [0.5, 0.5, 0]),
                          payload=jnp.array([False, True, False, True]), loads=jnp.asarray(4),
                          deliveries=jnp.asarray(2), t=T0)
    # green 0 at the right, lower half: loads; green 1 (loaded) at the left, upper half: delivers;
    # red 2 at the right, lower half: green goods, nothing; red 3 (loaded) at the left, upper half: nothing
    state = prev.replace(pose=_pose([1.4, -0.5, 0], [-1.4, 0.5, 0], [1.4, -0.2, 0], [-1.3, 0.8, 0]))
    state, reward, done, info = update(KEY, prev, state, params)
    np.testing.assert_array_equal(state.payload, [True, False, False, True])
    np.testing.assert_allclose(reward, 1 + 3)
    assert int(info["loads"]) == 5 and int(info["deliveries"]) == 3 and not bool(done)
    # the red robots at their own halves: red 2 loads at the right top, red 3 delivers at the left bottom
    last = state.replace(pose=_pose([1.4, -0.5, 0], [-1.4, 0.5, 0], [1.4, 0.3, 0], [-1.3, -0.8, 0]))
    last, reward, _, info = update(KEY, state, last, params)
    np.testing.assert_array_equal(last.payload, [True, False, True, False])
    np.testing.assert_allclose(reward, 1 + 3)  # green 0 is already loaded: no second load
    obs = observe(last, params)
    assert obs["green"].shape == obs["red"].shape == (2, 7 + 5 * 3)
    np.testing.assert_allclose(obs["red"][0, 4:12], [0, 1, 1, -2.7, -1.1, 0, 1, 0], atol=1e-6)  # red 2 sees red 3
    assert env.global_obs(last, params).shape == env.global_obs_shape == (28,)


def test_warehouse_rollouts(wh):
    prog = wh
    states = prog.start
    pose0 = np.asarray(states.pose)
    assert np.all(np.abs(pose0[..., 0]) < 1.1)  # start between the strips
    # green 0 in its loading half, red 2 (loaded) in its unloading half
    states = states.replace(pose=states.pose.at[:, 0].set(jnp.array([1.4, -0.6, 0.0])).at[:, 2].set(
        jnp.array([-1.4, -0.6, 0.0])), payload=states.payload.at[:, 2].set(True))
    traj = prog.run(states, prog.random_actions(1))
    _finite(traj)
    s, ts = traj
    assert np.all(s.payload[0, :, 0]) and not np.any(s.payload[0, :, 2])
    reward = _team(ts, "green")
    np.testing.assert_array_equal(reward, _team(ts, "red"))
    loads, deliveries = np.asarray(s.loads), np.asarray(s.deliveries)
    np.testing.assert_allclose(reward, np.diff(np.concatenate([np.zeros((1, B)), loads]), axis=0)
                               + 3 * np.diff(np.concatenate([np.zeros((1, B)), deliveries]), axis=0))
    np.testing.assert_array_equal(loads - deliveries + 1, s.payload.sum(-1))  # one unit was there at the start
    assert not ts.terminated.any()


# ============================================================================ arctic transport
def _terrain(rows=8, cols=12, seed=0):
    inner = np.random.default_rng(seed).integers(0, 3, (rows - 2, cols))
    return jnp.asarray(np.concatenate([np.full((1, cols), GOAL), inner, np.zeros((1, cols))]), jnp.int32)


def test_arctic_reward_terms_and_termination():
    env = ArcticTransport(num_drones=2, num_ground=2)
    params = env.default_params()
    assert env.goal_line == pytest.approx(0.75)
    update, _ = _rules(env)
    prev = ArcticState(pose=_pose([-1, -0.9, 0], [0, -0.9, 0], [-0.5, -0.9, 0], [0.5, -0.9, 0]),
                       terrain=_terrain(), reached=jnp.zeros(2, bool), t=T0)
    # ground robot 2 crosses the goal line, ground robot 3 is 0.5 m below it; drones do not count
    state = prev.replace(pose=_pose([-1, 0.9, 0], [0, -0.9, 0], [-0.5, 0.8, 0], [0.5, 0.25, 0]))
    state, reward, done, info = update(KEY, prev, state, params)
    np.testing.assert_allclose(reward, -0.05 * 0.5 + 1.0 - 0.1, rtol=1e-5)
    assert not bool(done) and int(info["reached"]) == 1
    # robot 2 drops back below: it pays distance again but its arrival bonus is spent
    back = state.replace(pose=_pose([-1, 0.9, 0], [0, -0.9, 0], [-0.5, 0.65, 0], [0.5, 0.25, 0]))
    back, reward, _, _ = update(KEY, state, back, params)
    np.testing.assert_allclose(reward, -0.05 * 0.6 - 0.1, rtol=1e-5)
    # both above: robot 3's first arrival, no time penalty, terminated
    last = back.replace(pose=_pose([-1, -0.9, 0], [0, -0.9, 0], [-0.5, 0.8, 0], [0.5, 0.9, 0]))
    last, reward, done, info = update(KEY, back, last, params)
    np.testing.assert_allclose(reward, 1.0, rtol=1e-6)
    assert bool(done) and bool(info["success"]) and np.all(last.reached)


def test_arctic_observations_show_terrain_and_drone_views():
    env = ArcticTransport(num_drones=2, num_ground=2)
    params = env.default_params()
    _, observe = _rules(env)
    terrain = _terrain(seed=3)
    # drone 0 in the top-left tile (its view sticks out of the grid), drone 1 inside
    pose = _pose([-1.55, 0.95, 0], [0.1, -0.1, 0], [-0.5, -0.9, 0], [0.5, -0.9, 0])
    state = ArcticState(pose=pose, terrain=terrain, reached=jnp.zeros(2, bool), t=T0)
    obs = observe(state, params)
    assert obs["drone"].shape == obs["ground"].shape == (2, 11 + 5 * 3 + 72)
    o = np.asarray(obs["ground"][0])  # ground robot 2 (ice)
    np.testing.assert_array_equal(o[4:7], [0, 1, 0])
    np.testing.assert_array_equal(o[7:11], [1, 0, 0, 0])  # on the start row (ground)
    padded = np.pad(np.asarray(terrain), 1, constant_values=-1)
    for d, (r, c) in enumerate([(0, 0), (4, 6)]):  # tiles of the drones: rows of 0.25 m, columns of 0.267 m
        want = (padded[r : r + 3, c : c + 3][..., None] == np.arange(4)).astype(np.float32).reshape(-1)
        np.testing.assert_array_equal(o[26 + 36 * d : 62 + 36 * d], want)
    np.testing.assert_array_equal(o[26:30], 0)  # outside the grid: all zeros
    g = np.asarray(env.global_obs(state, params))
    assert g.shape == env.global_obs_shape == (7 * 4 + 4 * 96,)
    np.testing.assert_array_equal(g[28:].reshape(8, 12, 4).argmax(-1), terrain)


def test_arctic_terrain_sets_the_speed_and_rollouts_are_consistent(arc):
    prog = arc
    # columns of ice (0-3), water (4-7) and ground (8-11) over all terrain rows
    terrain = np.zeros((8, 12), np.int32)
    terrain[1:7, :4], terrain[1:7, 4:8], terrain[0] = ICE, WATER, GOAL
    # drone 0 on ice, drone 1 on water, the ice robot on ice, the water robot on ice; all go +y
    pose = _pose([-1.3, -0.5, np.pi / 2], [0.0, -0.5, np.pi / 2], [-0.8, -0.5, np.pi / 2], [-1.3, 0.1, np.pi / 2])
    state = ArcticState(pose=pose, terrain=jnp.asarray(terrain), reached=jnp.zeros(2, bool), t=T0)
    s, _ = prog.run(_tile(state), prog.constant_actions(1))
    moved = s.pose[0, 0, :, 1] - pose[:, 1]
    np.testing.assert_allclose(moved, [0.133, 0.133, 0.195, 0.2 / 3], atol=0.006)  # factors 2/3, 2/3, 1, 1/3
    # random rollouts: reward recomputed from the states
    states = prog.start
    assert np.all(np.asarray(states.pose)[..., 1] < -0.75)  # the start row
    np.testing.assert_array_equal(np.asarray(states.terrain)[:, -1], GROUND)
    traj = prog.run(states, prog.random_actions(2))
    _finite(traj)
    s, ts = traj
    y = s.pose[..., 2:, 1]
    above = y > 0.75
    before = np.concatenate([np.zeros((1, B, 2), bool), s.reached[:-1]])
    want = -0.05 * np.maximum(0.75 - y, 0).sum(-1) + (above & ~before).sum(-1) - 0.1 * ~above.all(-1)
    np.testing.assert_allclose(_team(ts, "drone"), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(s.reached, np.logical_or.accumulate(above, 0))


# ============================================================================ continuous RWARE
def _rware_state(env, pose, carry, cell, request, toggle):
    return RwareState(pose=_pose(*pose), carry=jnp.asarray(carry, jnp.int32), cell=jnp.asarray(cell, jnp.int32),
                      request=jnp.asarray(request, jnp.int32), toggle=jnp.asarray(toggle, bool),
                      delivered=T0, t=T0)


def test_rware_deliver_return_pick_up_and_requests():
    env = ContinuousRware(num_robots=4, num_shelves=6, num_requests=3)
    params = env.default_params()
    np.testing.assert_allclose(env.cells[[0, 2, 3]], [[-1.1, 0.25], [0.6, 0.25], [-1.1, -0.25]], atol=1e-6)
    update, observe = _rules(env)
    # robot 0 carries requested shelf 4 in the strip; robot 1 (empty) toggles next to cell 1
    # (shelf 1); robot 2 carries shelf 2 and toggles next to its empty cell; robot 3 toggles
    # next to cell 1 too, but robot 1 comes first
    cx1, cx2 = env.cells[1], env.cells[2]
    state = _rware_state(env, [[1.4, 0, 0], [cx1[0], 0.1, 0], [cx2[0] + 0.1, 0.3, 0], [cx1[0] + 0.15, 0.3, 0]],
                         carry=[4, -1, 2, -1], cell=[0, 1, -1, 3, -1, 5], request=[0, 4, 5],
                         toggle=[False, True, True, True])
    new, reward, done, info = update(KEY, state, state, params)
    np.testing.assert_array_equal(new.carry, [4, 1, -1, -1])
    np.testing.assert_array_equal(new.cell, [0, -1, 2, 3, -1, 5])
    np.testing.assert_allclose(reward, 1.0)
    assert int(new.delivered) == 1 and int(info["carrying"]) == 2 and not bool(done)
    assert new.request[0] == 0 and new.request[2] == 5 and int(new.request[1]) in (1, 2, 3)
    # delivered shelf 4 is no longer requested: delivering it again pays nothing
    idle = new.replace(toggle=jnp.zeros(4, bool))
    again, reward, _, _ = update(KEY, idle, idle, params)
    np.testing.assert_allclose(reward, 0.0)
    np.testing.assert_array_equal(again.request, new.request)
    obs = np.asarray(observe(new, params)["robot"])
    assert obs.shape == (4, 6 + 4 * 3 + 4 * 6)
    np.testing.assert_array_equal(obs[0, 4:6], [1, 0])  # carrying, not requested any more
    np.testing.assert_allclose(obs[0, 18:22], [env.cells[0][0] - 1.4, 0.25, 1, 1], atol=1e-6)  # cell 0: requested shelf
    assert env.global_obs(new, params).shape == env.global_obs_shape == (6 * 4 + 4 * 6,)


def _rware_reference(xy, carry, cell, request, toggle, cells, radius, width):
    carry, cell = carry.copy(), cell.copy()
    vacated = [q for q, s in enumerate(request) if any(c == s and x > 1.6 - width for c, (x, _) in zip(carry, xy))]
    start_carry, start_cell = carry.copy(), cell.copy()
    d2 = ((xy[:, None] - cells[None]) ** 2).sum(-1)
    claimed = set()
    for i in range(len(xy)):
        if not toggle[i]:
            continue
        loaded = start_carry[i] >= 0
        cand = [c for c in range(len(cells)) if d2[i, c] < radius**2 and (start_cell[c] < 0) == loaded]
        if not cand:
            continue
        c = min(cand, key=lambda c: (d2[i, c], c))
        if c in claimed:
            continue
        claimed.add(c)
        if loaded:
            cell[c], carry[i] = start_carry[i], -1
        else:
            carry[i], cell[c] = start_cell[c], -1
    return carry, cell, vacated


@functools.cache
def _rware_rules():
    env = ContinuousRware(num_robots=5, num_shelves=8, num_requests=3)
    return env, jax.jit(env.update_task)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_rware_rules_match_a_reference(seed):
    env, update = _rware_rules()
    params = env.default_params()
    rng = np.random.default_rng(seed)
    n, s_, q = 5, 8, 3
    perm = rng.permutation(s_)
    k = rng.integers(0, n + 1)
    carry = np.full(n, -1)
    carry[rng.choice(n, k, replace=False)] = perm[:k]
    cell = np.full(s_, -1)
    cell[rng.choice(s_, s_ - k, replace=False)] = perm[k:]
    request = rng.choice(s_, q, replace=False)
    near = env.cells[rng.integers(0, s_, n)] + rng.uniform(-0.25, 0.25, (n, 2))
    strip = np.stack([rng.uniform(1.0, 1.5, n), rng.uniform(-0.9, 0.9, n)], -1)
    xy = np.where(rng.random((n, 1)) < 0.3, strip, near).astype(np.float32)
    toggle = rng.random(n) < 0.7
    state = _rware_state(env, np.concatenate([xy, np.zeros((n, 1))], -1), carry, cell, request, toggle)
    new, reward, _, info = update(jax.random.key(seed), state, state, params)
    want_carry, want_cell, vacated = _rware_reference(xy, carry, cell, request, toggle, env.cells, 0.2, 0.5)
    np.testing.assert_array_equal(new.carry, want_carry)
    np.testing.assert_array_equal(new.cell, want_cell)
    np.testing.assert_allclose(reward, len(vacated))
    assert int(new.delivered) == len(vacated)
    got = np.asarray(new.request)
    assert len(set(got.tolist())) == q  # distinct
    kept = [p for p in range(q) if p not in vacated]
    np.testing.assert_array_equal(got[kept], request[kept])
    for p in vacated:  # fresh shelves (there are always enough here: 8 - 3 >= 3)
        assert got[p] not in request
    # shelves conserved: every shelf exactly once, in a cell or carried
    placed = np.concatenate([np.asarray(new.cell), np.asarray(new.carry)])
    np.testing.assert_array_equal(np.sort(placed[placed >= 0]), np.arange(s_))


def test_rware_steps_toggle_block_and_conserve(rw):
    prog, env = rw, rw.env
    c = env.cells
    # robot 0 (empty) stays next to cell 0: picks shelf 0 up; robot 1 carries shelf 2 and moves
    # +y toward cell 5, which holds a shelf: blocked while loaded; robot 2 (empty) drives +x
    state = _rware_state(env, [[c[0][0], c[0][1] - 0.15, 0], [c[5][0], c[5][1] - 0.3, np.pi / 2], [1.3, -0.7, 0]],
                         carry=[-1, 2, -1], cell=[0, 1, -1, 3, 4, 5], request=[2, 3, 5], toggle=[False] * 3)
    acts = {"robot": jnp.broadcast_to(jnp.array([0, 1, 3], jnp.int32), (T, B, 3))}
    free = prog.params.replace(block_when_loaded=jnp.asarray(False))
    (s, ts), (s_free, _) = prog.run(_tile(state), acts), prog.run(_tile(state), acts, free)
    assert s.carry[0, 0, 0] == 0 and s.cell[0, 0, 0] == -1  # the stay action picked shelf 0 up
    np.testing.assert_allclose(s.pose[:, 0, 1, :2], np.broadcast_to(state.pose[1, :2], (T, 2)), atol=1e-3)  # blocked
    assert s_free.pose[1, 0, 1, 1] > state.pose[1, 1] + 0.15  # not blocked without the rule
    # robot 2 (empty) drives through the strip: nothing to deliver; robot 1 never reaches it
    assert np.all(s.delivered == 0) and np.all(_team(ts, "robot") == 0)
    # random rollouts: shelves conserved, requests distinct, reward = deliveries
    states = prog.start
    assert np.all(np.asarray(states.pose)[..., 1] < -0.45)
    # robot 0 starts in the strip carrying a requested shelf (taken out of its cell); the
    # others start below y = -0.45
    shelf = np.asarray(states.request)[:, 0]
    states = states.replace(pose=states.pose.at[:, 0].set(jnp.array([1.45, -0.2, 0.0])),  # clear of the others
                            carry=states.carry.at[:, 0].set(shelf),
                            cell=jnp.where(states.cell == shelf[:, None], -1, states.cell))
    traj = prog.run(states, prog.random_actions(3))
    _finite(traj)
    s, ts = traj
    assert np.all(s.delivered[0] == 1)  # robot 0 delivered at the first step
    placed = np.concatenate([s.cell, s.carry], -1)
    assert np.all((placed >= 0).sum(-1) == 6)  # every shelf exactly once
    np.testing.assert_array_equal(np.sort(np.where(placed >= 0, placed, 99), -1)[..., :6],
                                  np.broadcast_to(np.arange(6), (T, B, 6)))
    assert all(len(set(r)) == 3 for r in s.request.reshape(-1, 3).tolist())
    np.testing.assert_allclose(_team(ts, "robot"), np.diff(np.concatenate([np.zeros((1, B)), s.delivered]), axis=0))


def test_rware_continuous_toggle():
    env = ContinuousRware(num_robots=2, num_shelves=2, action_mode="continuous", ticks_per_step=5, safety=False)
    space = env.roles["robot"].action_space
    assert isinstance(space, Box) and space.shape == (3,)
    c = env.cells
    state = _rware_state(env, [[c[0][0] - 0.1, c[0][1] - 0.1, 0], [c[1][0] + 0.1, c[1][1] + 0.1, 0]], carry=[-1, -1],
                         cell=[0, 1], request=[1], toggle=[False, False])
    step = jax.jit(env.step)
    acts = jnp.array([[0.0, 0.0, 0.7], [0.0, 0.0, -0.7]])
    new, ts = step(KEY, state, {"robot": acts})
    np.testing.assert_array_equal(new.carry, [0, -1])  # only the positive toggle picks up
    acts = jnp.array([[0.0, 0.0, jnp.nan], [0.0, 0.0, 1.0]])
    new, ts = step(KEY, new, {"robot": acts})
    np.testing.assert_array_equal(new.carry, [0, 1])  # NaN: no toggle (robot 0 keeps its shelf)
    assert np.all(np.isfinite(np.asarray(ts.obs["robot"])))


# ============================================================================ all four
@pytest.mark.parametrize("name", ["mt", "wh", "arc", "rw"])
def test_action_spaces_and_renders(name, request):
    prog = request.getfixturevalue(name)
    env = prog.env
    for role in env.roles.values():
        assert isinstance(role.action_space, Discrete) and role.action_space.n == 5
    img = env.render(_first(prog.start))
    assert img.shape == (300, 480, 3) and img.dtype == np.uint8
    assert len(np.unique(img.reshape(-1, 3), axis=0)) >= 6  # background, border, robots, zones/objects


def _first(states):
    return jax.tree_util.tree_map(lambda x: x[0], states)


def test_render_draws_the_objects_where_they_are(arc, rw):
    def px(img, x, y, scale=150):
        return img[int((1.0 - y) * scale), int((x + 1.6) * scale)]

    env, state = arc.env, _first(arc.start)
    img, terrain = env.render(state), np.asarray(state.terrain)
    from jaxagents_environments.robots.arctic_transport import TERRAIN_COLOURS

    for r, c in [(0, 0), (2, 5), (5, 11), (6, 3)]:  # tile centres (robots are in the bottom row)
        np.testing.assert_array_equal(px(img, -1.6 + (c + 0.5) * env.tile_w, 1.0 - (r + 0.5) * env.tile_h),
                                      TERRAIN_COLOURS[terrain[r, c]])
    env, state = rw.env, _first(rw.start)
    img = env.render(state)
    req = set(np.asarray(state.request).tolist())
    for s, (x, y) in enumerate(env.cells):  # shelf s in cell s: orange when requested, else blue
        np.testing.assert_array_equal(px(img, x, y), (235, 150, 30) if s in req else (60, 90, 200))
    np.testing.assert_array_equal(px(img, 1.4, 0.5), (185, 225, 185))  # the delivery strip


def test_invalid_sizes_and_params():
    with pytest.raises(ValueError, match="num_shelves must be even"):
        ContinuousRware(num_shelves=5)
    with pytest.raises(ValueError, match="num_shelves"):
        ContinuousRware(num_shelves=16)
    with pytest.raises(ValueError, match="num_requests"):
        ContinuousRware(num_shelves=4, num_requests=5)
    with pytest.raises(ValueError, match="grid_rows"):
        ArcticTransport(grid_rows=2)
    with pytest.raises(ValueError, match="num_drones \\+ num_ground"):
        ArcticTransport(num_drones=10, num_ground=10)  # the start row holds 12
    env = MaterialTransport(num_robots=2)
    p = env.default_params()
    for bad, match in [(p.replace(capacity=jnp.array([5, 0])), "params.capacity"),
                       (p.replace(capacity=jnp.array([5.0, 1.0])), "params.capacity"),
                       (p.replace(zone_mean=jnp.array([-1.0, 3.0])), "params.zone_mean"),
                       (p.replace(zone_radius=jnp.asarray(1.2)), "zone_radius \\+ params.strip_width")]:
        with pytest.raises(ValueError, match=match):
            env.validate_params(bad)
    env = ArcticTransport()
    p = env.default_params()
    for bad, match in [(p.replace(ground_type=jnp.array([1, 3])), "params.ground_type"),
                       (p.replace(terrain_factor=jnp.zeros((3, 4))), "params.terrain_factor"),
                       (p.replace(terrain_probs=jnp.zeros(3)), "params.terrain_probs")]:
        with pytest.raises(ValueError, match=match):
            env.validate_params(bad)
    with pytest.raises(ValueError, match="params.zone_width"):
        Warehouse().validate_params(Warehouse().default_params().replace(zone_width=jnp.asarray(1.6)))
    with pytest.raises(ValueError, match="params.zone_width"):
        ContinuousRware().validate_params(ContinuousRware().default_params().replace(zone_width=jnp.asarray(0.9)))
    with pytest.raises(ValueError, match="params.pickup_radius"):
        ContinuousRware().validate_params(ContinuousRware().default_params().replace(pickup_radius=jnp.asarray(0.0)))

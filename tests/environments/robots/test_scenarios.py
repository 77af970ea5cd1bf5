"""Scenario rules on hand-built states (the rules are called directly, no simulation),
observations against their documented layout, and one scripted navigation episode that
must succeed with the safety filter on."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxagents.core import Box, Discrete
from jaxagents_environments.robots import Discovery, Foraging, Navigation, PredatorPrey
from jaxagents_environments.robots.discovery import DiscoveryState
from jaxagents_environments.robots.foraging import ForagingState
from jaxagents_environments.robots.navigation import NavigationState
from jaxagents_environments.robots.predator_prey import PredatorPreyState, prey_move

KEY = jax.random.key(0)


def _pose(*rows):
    return jnp.asarray(rows, jnp.float32)


T0 = jnp.zeros((), jnp.int32)


def _rules(env):
    """The scenario's rule and observation hooks, compiled (one small program each)."""
    return jax.jit(env.update_task), jax.jit(env.observe)


# ----------------------------------------------------------------------------- navigation
def test_navigation_reward_success_and_observation():
    env = Navigation(num_robots=2)
    params = env.default_params()
    update, observe = _rules(env)
    goal = jnp.array([[0.5, 0.5], [-1.0, 0.2]])
    prev = NavigationState(pose=_pose([0, 0, 0], [1, 0, 0]), goal=goal, t=T0)
    state = prev.replace(pose=_pose([0.5, 0.45, 1.0], [-0.7, -0.2, -2.0]))
    _, reward, done, info = update(KEY, prev, state, params)
    np.testing.assert_allclose(reward, [-0.05, -0.5], rtol=1e-5)
    assert not bool(done) and int(info["on_goal"]) == 1 and not bool(info["success"])
    state = state.replace(pose=_pose([0.5, 0.45, 1.0], [-1.0, 0.29, 0.0]))
    _, reward, done, info = update(KEY, prev, state, params)
    assert bool(done) and bool(info["success"])
    obs = np.asarray(observe(state, params)["robot"])
    np.testing.assert_allclose(obs[0], [0.5, 0.45, np.cos(1.0), np.sin(1.0), 0.0, 0.05], atol=1e-6)
    assert env.global_obs(state, params).shape == env.global_obs_shape == (12,)


def _greedy(pose, goal):
    """Discrete moves toward the goal along the axis of the larger error; stay when close."""
    e = np.asarray(goal) - np.asarray(pose)[:, :2]
    axis_y = np.abs(e[:, 1]) > np.abs(e[:, 0])
    a = np.where(axis_y, np.where(e[:, 1] > 0, 1, 2), np.where(e[:, 0] > 0, 3, 4))
    return np.where(np.hypot(e[:, 0], e[:, 1]) < 0.04, 0, a).astype(np.int32)


def test_scripted_navigation_succeeds_with_the_filter_on():
    env = Navigation(num_robots=4, ticks_per_step=30)
    params = env.default_params()
    step = jax.jit(env.step)
    state, ts = jax.jit(env.reset)(jax.random.key(3))
    start = np.hypot(*(np.asarray(state.pose)[:, :2] - np.asarray(state.goal)).T)
    for t in range(100):
        state, ts = step(jax.random.key(t), state, {"robot": jnp.asarray(_greedy(state.pose, state.goal))})
        dist = np.hypot(*(np.asarray(state.pose)[:, :2] - np.asarray(state.goal)).T)
        np.testing.assert_allclose(ts.reward["robot"], -dist, rtol=1e-5, atol=1e-6)
        assert int(ts.info["collisions"]) == 0
        if bool(ts.terminated):
            break
    assert bool(ts.terminated) and not bool(ts.truncated) and np.all(dist < 0.1)
    assert t < 4 * start.max() / 0.1  # at least 0.1 m of progress per step, give or take


# ----------------------------------------------------------------------------- foraging
def test_foraging_levels_rewards_penalty_and_termination():
    env = Foraging(num_robots=3, num_resources=2)
    params = env.default_params()
    update, observe = _rules(env)
    prev = ForagingState(pose=_pose([0, 0, 0], [1, 0, 0], [2, 0, 0]), level=jnp.array([1, 2, 1]),
                         resource=jnp.array([[0.0, 0.0], [1.0, 0.5]]), resource_level=jnp.array([3, 2]),
                         present=jnp.array([True, True]), t=T0)
    # robots 0 and 1 (levels 1 + 2) within 0.3 m of resource 0; robot 2 (level 1) near resource 1
    state = prev.replace(pose=_pose([0.2, 0.0, 0.0], [0.0, -0.25, 1.0], [1.1, 0.5, 0.0]))
    state, reward, done, info = update(KEY, prev, state, params)
    np.testing.assert_allclose(reward, 3 - 0.01, rtol=1e-6)  # 3 levels, and a resource remains
    assert list(np.asarray(state.present)) == [False, True] and not bool(done) and int(info["foraged"]) == 1
    # the same robots again: resource 0 is gone, resource 1 still needs level 2
    _, reward, done, _ = update(KEY, state, state, params)
    np.testing.assert_allclose(reward, -0.01, rtol=1e-6)  # the time penalty fires every step
    # robot 1 joins robot 2 at resource 1: everything foraged, no penalty, terminated
    last = state.replace(pose=_pose([0.2, 0.0, 0.0], [0.95, 0.3, 1.0], [1.1, 0.5, 0.0]))
    last, reward, done, info = update(KEY, state, last, params)
    np.testing.assert_allclose(reward, 2.0, rtol=1e-6)
    assert bool(done) and bool(info["success"])
    obs = np.asarray(observe(last, params)["robot"])
    assert obs.shape == (3, env.obs_dim("robot")) == (3, 5 + 3 * 2 + 4 * 2)
    # robot 0 sees robot 1 then robot 2 (offset, level), then the resources (offset, level, present)
    np.testing.assert_allclose(obs[0, 4:], [1, 0.75, 0.3, 2, 0.9, 0.5, 1, -0.2, 0.0, 3, 0, 0.8, 0.5, 2, 0], atol=1e-6)


def test_foraging_resource_levels_are_sums_of_random_teams():
    env = Foraging(num_robots=4, num_resources=3)
    params = env.default_params().replace(max_level=jnp.asarray(3), team_size=jnp.asarray(2))
    states = jax.jit(jax.vmap(lambda k: env.reset_task(k, params)))(jax.random.split(KEY, 64))
    level, res = np.asarray(states.level), np.asarray(states.resource_level)
    assert level.min() == 1 and level.max() == 3
    for lv, rl in zip(level, res):
        sums = {sum(c) for c in itertools.combinations(lv.tolist(), 2)}
        assert set(rl.tolist()) <= sums


# ----------------------------------------------------------------------------- predator-prey
def test_prey_moves_to_the_safest_candidate_and_tags_pay():
    env = PredatorPrey(num_predators=3)
    params = env.default_params()
    update, observe = _rules(env)
    move = jax.jit(prey_move)
    rng = np.random.default_rng(0)
    for _ in range(20):
        preds = rng.uniform([-1.5, -0.9], [1.5, 0.9], (3, 2)).astype(np.float32)
        prey = rng.uniform([-1.5, -0.9], [1.5, 0.9], 2).astype(np.float32)
        got = np.asarray(move(jnp.asarray(prey), jnp.asarray(preds), params))
        cands = [prey] + [prey + s * np.array([np.cos(a), np.sin(a)]) for a in np.arange(8) * np.pi / 4
                          for s in (0.05, 0.05 + 0.25 / 3, 0.05 + 0.5 / 3, 0.3)]
        cands = np.clip(np.array(cands), [-1.5, -0.9], [1.5, 0.9])
        best = max(np.min(np.linalg.norm(c - preds, axis=1)) for c in cands)
        assert np.min(np.linalg.norm(got - preds, axis=1)) == pytest.approx(best, abs=1e-5)
        assert np.all(np.abs(got) <= [1.5, 0.9])
    prev = PredatorPreyState(pose=_pose([1.0, 0.6, 0], [-1, 0, 0], [0, -0.5, 0]), prey=jnp.array([1.45, 0.85]), t=T0)
    state = prev.replace(pose=_pose([1.4, 0.85, 0], [-1, 0, 0], [0, -0.5, 0]))
    state, reward, done, info = update(KEY, prev, state, params)
    assert bool(info["tagged"]) and not bool(done)  # cornered: within 0.2 m after its move
    np.testing.assert_allclose(reward, 10.0)
    obs = np.asarray(observe(state, params)["predator"])
    assert obs.shape == (3, 6 + 4 * 2)
    np.testing.assert_allclose(np.asarray(state.prey), [1.5, 0.9], atol=1e-6)  # into the corner
    np.testing.assert_allclose(obs[0, 4:6], [0.1, 0.05], atol=1e-6)
    np.testing.assert_allclose(obs[0, 6:10], [-2.4, -0.85, 1.0, 0.0], atol=1e-6)


# ----------------------------------------------------------------------------- discovery
def test_discovery_sense_then_tag_rewards_and_roles():
    env = Discovery(num_sensing=1, num_tagging=1, num_landmarks=2)
    assert set(env.roles) == {"sensor", "tagger"}
    params = env.default_params()
    update, observe = _rules(env)
    no = jnp.zeros((2,), bool)
    prev = DiscoveryState(pose=_pose([-1, 0, 0], [-1, 0.5, 0]), landmark=jnp.array([[0.0, 0.0], [1.0, 0.0]]),
                          sensed=no, tagged=no, t=T0)
    # the sensor (0.45 m) reaches landmark 0; the tagger (0.25 m) reaches both
    state = prev.replace(pose=_pose([0.0, 0.4, 0.0], [0.5, 0.0, 0.0]))
    params_far = params.replace(tag_radius=jnp.array([0.55]))
    new, reward, done, info = update(KEY, prev, state, params_far)
    assert list(np.asarray(new.sensed)) == [True, False] and list(np.asarray(new.tagged)) == [True, False]
    np.testing.assert_allclose(reward, 1 + 5 - 0.05, rtol=1e-6)
    blind = params_far.replace(tag_requires_sensing=jnp.asarray(False))  # JaxRobotarium's rule
    new2, reward, done, _ = update(KEY, prev, state, blind)
    assert list(np.asarray(new2.tagged)) == [True, True] and bool(done)
    np.testing.assert_allclose(reward, 1 + 10)
    obs = observe(new, params)
    assert obs["sensor"].shape == obs["tagger"].shape == (1, 6 + 4 + 8)
    o = np.asarray(obs["sensor"][0])
    np.testing.assert_allclose(o[4:6], [0.45, 0.0])  # capabilities
    np.testing.assert_allclose(o[10:], [0.0, -0.4, 1, 1, 0.0, 0.0, 0, 0], atol=1e-6)  # landmark 1 hidden
    with pytest.raises(ValueError, match=r"params.sense_radius.*shape"):
        env.validate_params(params.replace(sense_radius=jnp.array([0.4, 0.4])))
    with pytest.raises(ValueError, match="params.tag_radius"):
        env.validate_params(params.replace(tag_radius=jnp.array([0.0])))


# ----------------------------------------------------------------------------- spaces
@pytest.mark.parametrize("cls", [Navigation, Foraging, PredatorPrey, Discovery])
def test_action_spaces(cls):
    assert all(isinstance(r.action_space, Discrete) and r.action_space.n == 5 for r in cls().roles.values())
    for role in cls(action_mode="continuous").roles.values():  # (v, w), not JaxRobotarium's Box(0, 1, (5,))
        assert isinstance(role.action_space, Box) and role.action_space.shape == (2,)
        np.testing.assert_array_equal(role.action_space.low, -1)
        np.testing.assert_array_equal(role.action_space.high, 1)

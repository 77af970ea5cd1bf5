"""Env-param schedules (``jaxagents.learners.skeleton.curriculum``, ``PPOConfig.env_schedule``):
the config form is checked, the ramp is exact, and PPO's rollouts really run under the
scheduled params (a one-step game whose reward is the scheduled param)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct

from jaxagents import Box, Discrete, Env, Role
from jaxagents.learners.policy_gradient.ppo import make_train
from jaxagents.learners.policy_gradient.ppo_config import PPOConfig
from jaxagents.learners.skeleton import curriculum


@struct.dataclass
class BonusParams:
    bonus: jax.Array
    horizon: jax.Array


class _Bonus(Env):
    """One step per episode; the reward is ``params.bonus`` whatever the action."""

    def __init__(self):
        self.roles = {"player": Role(1, Box(0, 1, (1,)), Discrete(2))}

    def default_params(self):
        return BonusParams(bonus=jnp.float32(0.0), horizon=jnp.int32(1))

    def check_params(self, params):
        if not 0 <= float(params.bonus) <= 10:
            raise ValueError(f"params.bonus must be in [0, 10], got {float(params.bonus)}")

    def reset_env(self, key, params):
        return (), self.make_timestep({"player": jnp.zeros((1, 1))})

    def step_env(self, key, state, actions, params):
        reward = {"player": jnp.full((1,), params.bonus)}
        return (), self.make_timestep({"player": jnp.zeros((1, 1))}, reward=reward, terminated=True)


def test_ramp_values():
    sched = curriculum.parse({"bonus": {"from": 1.0, "to": 3.0, "start": 2, "end": 6}})
    p = _Bonus().default_params()
    got = [float(curriculum.params_at(p, sched, u).bonus) for u in range(9)]
    np.testing.assert_allclose(got, [1, 1, 1, 1.5, 2, 2.5, 3, 3, 3])
    step = curriculum.parse({"bonus": {"from": 0.0, "to": 5.0, "start": 3, "end": 3}})  # a switch at update 3
    assert [float(curriculum.params_at(p, step, u).bonus) for u in range(5)] == [0, 0, 0, 5, 5]
    assert curriculum.params_at(p, (), 7) is p
    # traced update index (inside the learner's jitted update)
    assert float(jax.jit(lambda u: curriculum.params_at(p, sched, u).bonus)(4)) == 2.0


@pytest.mark.parametrize("schedule, msg", [
    ([1, 2], "env_schedule must be a mapping"),
    ({"bonus": {"from": 0.0, "to": 1.0}}, r"env_schedule\['bonus'\] must have exactly the keys"),
    ({"bonus": {"from": 0.0, "to": float("nan"), "start": 0, "end": 1}}, "must be finite"),
    ({"bonus": {"from": 0.0, "to": 1.0, "start": 5, "end": 2}}, "0 <= start <= end"),
    ({"bonus": {"from": 0.0, "to": 1.0, "start": -1, "end": 2}}, "0 <= start <= end"),
])
def test_bad_schedules_are_named(schedule, msg):
    with pytest.raises(ValueError, match=msg):
        PPOConfig(env_schedule=schedule)


def test_schedule_checked_against_the_env():
    env = _Bonus()
    cfg = PPOConfig(num_envs=4, num_steps=1, total_timesteps=4, num_minibatches=1)
    with pytest.raises(ValueError, match=r"env_schedule\['bonsu'\]: not a scalar float param of .*; those are \['bonus'\]"):
        make_train(cfg.replace(env_schedule=curriculum.parse({"bonsu": {"from": 0.0, "to": 1.0, "start": 0, "end": 1}})), env)
    with pytest.raises(ValueError, match="horizon"):  # an integer field is not scheduled
        make_train(cfg.replace(env_schedule=curriculum.parse({"horizon": {"from": 1.0, "to": 2.0, "start": 0, "end": 1}})), env)
    with pytest.raises(ValueError, match=r"params.bonus must be in \[0, 10\], got 20.0"):  # each end is valid params
        make_train(cfg.replace(env_schedule=curriculum.parse({"bonus": {"from": 0.0, "to": 20.0, "start": 0, "end": 1}})), env)


@pytest.mark.slow  # ~20 s (PPO compiled twice): the default suite's 10 minutes; the ramp itself is checked above
def test_ppo_rollouts_run_under_the_scheduled_params():
    env = _Bonus()
    cfg = PPOConfig(num_envs=4, num_steps=2, total_timesteps=4 * 2 * 6, update_epochs=1, num_minibatches=1,
                    env_schedule={"bonus": {"from": 1.0, "to": 6.0, "start": 0, "end": 5}})
    train = make_train(cfg, env)
    _, metrics = jax.jit(train)(jax.random.key(0))
    np.testing.assert_allclose(np.asarray(metrics["env/bonus"]), [1, 2, 3, 4, 5, 6])
    np.testing.assert_allclose(np.asarray(metrics["episode_return/player"]), [1, 2, 3, 4, 5, 6])
    ev = train.evaluate(train.update(train.init(jax.random.key(1)))[0], jax.random.key(2), num_envs=4, num_steps=2)
    assert float(ev["eval/episode_return/player"]) == 2.0  # evaluation runs where training has got to

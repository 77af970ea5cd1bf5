"""Every robots baseline config parses into a valid PPOConfig and environment (nothing is
compiled: the runs themselves are in docs/results_robots.md)."""

from pathlib import Path

import pytest
from jaxagents_environments.robots.scenario import RobotScenario

from jaxagents import runner
from jaxagents.core import Discrete
from jaxagents.learners.policy_gradient import ppo

CONFIGS = Path(__file__).resolve().parents[2] / "baselines" / "configs"
SCENARIOS = ("navigation", "foraging", "predator_prey", "discovery", "material_transport", "warehouse",
             "arctic_transport", "continuous_rware")
PATHS = [CONFIGS / f"{l}_robots_{s}.yaml" for l in ("ippo", "mappo") for s in SCENARIOS]


def test_every_scenario_has_both_configs():
    assert sorted(p.name for p in CONFIGS.glob("*_robots_*.yaml")) == sorted(p.name for p in PATHS)


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_robot_config_parses(path):
    learner, _, scenario = path.stem.partition("_robots_")
    config = runner.load_config(str(path))
    assert config["learner"] == learner and config["env"]["id"] == f"robots_{scenario}"
    assert config["name"] == path.stem
    env, params = runner.make_env(config["env"])
    assert isinstance(env, RobotScenario)
    # the documented setting: discrete waypoints, safety filter with zero-order hold
    assert env.action_mode == "discrete" and env.safety and env.zero_order_hold
    assert all(isinstance(r.action_space, Discrete) and r.action_space.n == 5 for r in env.roles.values())
    section = dict(config["train"], central_critic=learner == "mappo")
    cfg = ppo.PPOConfig(**section)
    assert cfg.num_updates >= 10 and cfg.central_critic == (learner == "mappo")
    train = ppo.make_train(cfg, env, env_params=params)  # builds the learner; compiles nothing
    assert train.num_updates == cfg.num_updates

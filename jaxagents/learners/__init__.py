"""Learners: ``make_train(config, env) -> Learner``, pure and jit-able.

* ``interface``: the ``Learner`` every learner returns (``init``, ``update``,
  ``evaluate``, the hyper-parameters a population may vary, a default fitness).
* ``ppo``: IPPO and MAPPO (feed-forward or recurrent); other learners extend it
  through ``ppo.Extension``.
* ``selfplay``: one shared policy over all roles, RAE / per-role normalisation /
  GAE / GRPO / GiGPO, opponent pools, evaluation through the environment's
  capabilities.
"""

from jaxagents.learners.interface import Fitness, HParamSpec, Learner
from jaxagents.learners.ppo import Extension, PPOConfig, TrainState, make_train
from jaxagents.learners.update import HParams

__all__ = ["Learner", "HParamSpec", "Fitness", "Extension", "PPOConfig", "TrainState", "HParams", "make_train"]

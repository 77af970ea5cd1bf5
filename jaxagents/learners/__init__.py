"""Learners: ``make_train(config, env) -> train(key)``, pure and jit-able.

* ``ppo``: IPPO and MAPPO (feed-forward or recurrent).
* ``selfplay``: one shared policy over all roles, RAE / per-role normalisation /
  GAE / GRPO / GiGPO, opponent pools, evaluation during training.
"""

from jaxagents.learners.ppo import PPOConfig, TrainState, make_train
from jaxagents.learners.update import HParams

__all__ = ["PPOConfig", "TrainState", "HParams", "make_train"]

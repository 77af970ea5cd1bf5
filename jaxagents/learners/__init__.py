"""Learners: ``make_train(config, env) -> Learner``, pure and jit-able.

* ``interface``: the ``Learner`` every learner returns (``init``, ``update``,
  ``evaluate``, the hyper-parameters a population may vary, a default fitness).
* ``ppo``: IPPO and MAPPO (feed-forward or recurrent); other learners extend it
  through ``ppo.Extension``.
* ``selfplay``: one shared policy over all roles, RAE / per-role normalisation /
  GAE / GRPO / GiGPO, opponent pools and leagues (``league``: prioritised fictitious
  self-play), evaluation through the environment's capabilities.
* ``fcp``: fictitious co-play (self-play partners with snapshots, then a best
  response to the frozen pool).
* ``pqn`` (PQN, PQN-VDN) and ``qlearn`` (IQL, VDN, QMIX with ``mixers`` and flashbax
  ``replay``): value-based learners on shared ``qnets`` and ``qlambda``.
"""

from jaxagents.learners.interface import Fitness, HParamSpec, Learner
from jaxagents.learners.ppo import Extension, PPOConfig, TrainState, make_train
from jaxagents.learners.update import HParams

__all__ = ["Learner", "HParamSpec", "Fitness", "Extension", "PPOConfig", "TrainState", "HParams", "make_train"]

"""Learners: ``make_train(config, env) -> Learner``, pure and jit-able.

The folders mirror the design; each may import only those above it in this list:

* ``skeleton``: the ``Learner`` contract and what every learner shares (one rollout,
  episode metrics, the data-parallel helpers, the traced optimiser, curricula);
* ``partners``: partner and opponent parts behind one interface (``partners.part``:
  snapshot pool, league, main exploiter, parameter and distilled averages), each its
  own state, update and evaluation;
* ``policy_gradient``: PPO (IPPO/MAPPO), the advantage estimators, self-play and
  fictitious co-play;
* ``value_based``: PQN, PQN-VDN, IQL, VDN and QMIX.

A new learner goes in its family's folder; a new partner mechanism in ``partners``.
"""

from jaxagents.learners.policy_gradient.ppo import (
    Extension,
    PPOConfig,
    TrainState,
    make_train,
)
from jaxagents.learners.policy_gradient.update import HParams
from jaxagents.learners.skeleton.interface import Fitness, HParamSpec, Learner

__all__ = ["Learner", "HParamSpec", "Fitness", "Extension", "PPOConfig", "TrainState", "HParams", "make_train"]

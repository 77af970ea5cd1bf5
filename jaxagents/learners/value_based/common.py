"""What the value-based learners (``pqn``; ``qlearn``'s IQL, VDN and QMIX) build the
same way: the greedy evaluation and the ``Learner`` around their own ``init`` and
``update``. A learner module keeps only what makes it that learner: its config,
traced hyper-parameters, train state, targets and update."""

from __future__ import annotations

import jax.numpy as jnp

from jaxagents.core.wrappers import VecEnv
from jaxagents.learners.skeleton.interface import Fitness, Learner, hparam_space
from jaxagents.learners.skeleton.metrics import episode_metrics
from jaxagents.learners.skeleton.rollout import evaluate_episodes
from jaxagents.learners.value_based.qnets import QAgents, collect


def evaluate_greedy(qagents: QAgents, env, env_params, params: dict, key, num_envs: int, num_steps: int) -> dict:
    """``num_steps`` steps of ``num_envs`` fresh environments under the greedy
    policies of ``params`` (``{role: params}``; epsilon 0, illegal actions never
    chosen): ``{"eval/episode_return/<role>": f32[], "eval/episodes": i32[]}`` of the
    episodes that finished (``rollout.evaluate_episodes``)."""
    vec = VecEnv(env, num_envs)
    play = lambda carry, k: collect(qagents, vec, env_params, params, carry, k, num_steps, 0.0,  # noqa: E731
                                    bootstrap_truncated=False)[1]
    return evaluate_episodes(qagents, vec, env_params, key, play)


def update_metrics(metrics: dict, traj: dict, eps, update, steps_per_update: int, data_axis: str | None = None) -> dict:
    """An update's metrics: the learning ``metrics`` (``{name: f32[]}``), then, of the
    rollout ``traj`` (``{role: qnets.QTransition [T, E, n, ...]}``), the finished
    episodes' returns (``episode_metrics``, summed over ``data_axis``), its
    ``epsilon``, and ``update`` (``i32[]``, updates done counting this one) with the
    ``env_steps`` they took."""
    metrics = {**metrics, **episode_metrics(traj, None, data_axis)}
    metrics["epsilon"] = jnp.asarray(eps, jnp.float32)
    metrics["update"] = update
    metrics["env_steps"] = update * steps_per_update
    return metrics


def make_learner(config, env, env_params, qagents: QAgents, hparams_cls, ranges: dict, *, init, update, evaluate,
                 data_axis: str | None = None, data_shards: int = 1) -> Learner:
    """The ``Learner`` of a value-based learner: the traced hyper-parameters
    ``hparams_cls`` at ``config``'s values, where a population may move them
    (``ranges``, ``{name: (low, high, scale)}``, widened to hold ``config``'s value),
    and the default fitness, the mean over roles of the update's mean episode return
    (NaN where no episode finished)."""
    return Learner(
        init=init,
        update=update,
        evaluate=evaluate,
        default_hparams=hparams_cls.from_config(config),
        hparam_space=hparam_space(ranges, config),
        fitness=Fitness(tuple(f"episode_return/{r}" for r in qagents.roles), valid="episodes"),
        config=config,
        env=env,
        env_params=env_params,
        num_updates=config.num_updates,
        agents=qagents,
        data_axis=data_axis,
        data_shards=data_shards,
    )

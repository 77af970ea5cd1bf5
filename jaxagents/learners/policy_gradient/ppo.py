"""IPPO and MAPPO, PureJaxRL-style: ``make_train(config, env)`` returns a pure
``train(key, hparams=None)`` that runs the whole training -- rollout, advantages,
epochs x minibatches -- as one jit-compilable program.

* IPPO: one actor-critic per role, parameters shared by the role's agents.
* MAPPO: the same actors with a centralised critic (``central_critic=True``) that
  reads ``env.global_obs(state)`` and the agent's one-hot id.

Feed-forward or recurrent (``network.recurrent``); steps of inactive agents are
excluded from every loss; ``shaped_reward`` names an ``info`` entry added to the
reward with a coefficient annealed linearly from 1 to 0 over
``shaped_reward_horizon`` env steps (Overcooked's standard recipe);
``agents_per_update`` trains each role on a random subset of its agent slots (the
rollout and the advantages still use all of them) for populations of 10^4-10^6
agents sharing one network. ``role_lr_scale`` multiplies a role's learning rate and
``role_start_update`` freezes a role until that update (both ``{role: value}``): a
leader that adapts slower than its followers, or followers trained first against a
random leader (the taxation planner's curriculum); ``role_gamma`` gives a role its
own discount (myopic followers whose actions only change their current reward).

``make_train`` returns a ``Learner`` (``jaxagents.learners.skeleton.interface``):
``init(key, hparams)``, ``update(state, hparams)`` (one update, so a runner can
checkpoint between segments), ``evaluate(state, key)``; ``learner(key)`` is exactly
``init`` followed by ``num_updates`` updates. Other learners extend this one through
an ``Extension`` (self-play's opponent pool, parameter average and evaluation).

Data parallelism (the Anakin pattern): ``make_train(..., data_axis="data",
data_shards=D)`` builds a learner whose ``update`` runs inside a ``shard_map`` over
the mesh axis ``data_axis`` of D devices (``jaxagents.population`` does it: a
``Population`` with a ``make_mesh(data=D)`` mesh). ``init`` builds all ``num_envs``
environments; ``TrainState.env`` is split over the axis on its environment axis and
each device steps its ``num_envs / D``; everything else in the train state is
replicated. Every random draw of an environment is keyed by its global index
(``rollout`` module docstring), so trajectories do not depend on D; every
cross-sample statistic is reduced over the axis: gradients and loss metrics
(``update`` module docstring), batch/role normalisation and the RAE table
(``estimators.compute``), episode metrics. The result equals one device's run to
float rounding (summation order), so D=1 with a data axis is the reference for any
D. Shard-local, documented exceptions: with ``num_minibatches > 1`` each device
shuffles its own samples, and GRPO/GiGPO groups are formed from each device's own
episodes (a group never spans devices). Without ``data_axis`` (the default) the
program is the single-device one, unchanged.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import jax
import jax.numpy as jnp
from flax import struct

from jaxagents.core.wrappers import VecEnv
from jaxagents.learners.policy_gradient import estimators
from jaxagents.learners.policy_gradient.ppo_config import PPOConfig
from jaxagents.learners.policy_gradient.update import (
    Batch,
    HParams,
    hparam_space,
    ppo_epochs,
    subsample_agents,
)
from jaxagents.learners.skeleton import curriculum
from jaxagents.learners.skeleton.agents import Agents
from jaxagents.learners.skeleton.data_parallel import check_data_shards, local_env_ids
from jaxagents.learners.skeleton.interface import Fitness, Learner
from jaxagents.learners.skeleton.metrics import episode_metrics, slot_name_set
from jaxagents.learners.skeleton.optim import make_optimizer
from jaxagents.learners.skeleton.rollout import (
    EnvCarry,
    check_shaped_reward,
    collect,
    evaluate_episodes,
    init_carry,
    shaped_reward,
)


@struct.dataclass
class TrainState:
    """Everything a run needs to continue: checkpoint this and resume bit-identically."""

    params: dict
    opt_state: dict
    env: EnvCarry
    key: jax.Array
    update: jax.Array  # updates done so far
    baseline: jax.Array  # RAE table f32[1, P] (unused by other estimators)
    extra: Any = None  # learner-specific state (self-play: the opponent pool)


def role_index(env) -> tuple[dict, int]:
    """IPPO: slot -> role index, one index per role."""
    return {r: jnp.full((role.num_agents,), i, jnp.int32) for i, (r, role) in enumerate(env.roles.items())}, len(env.roles)


@dataclasses.dataclass(frozen=True)
class Extension:
    """How another learner extends PPO (self-play does): every field optional.

    Attributes:
        agents: the networks to train (default ``Agents(env, config.network)``).
        role_ids: ``({role: i32[n]}, P)``: each slot's row of the RAE / per-role
            tables and the number of rows (default: one row per role).
        slot_names: ``{role: [name per slot]}``: episode returns are reported per
            name (self-play names merged slots after their original roles).
        init_extra: ``(params, key) -> extra``, the learner's own part of the train
            state (``TrainState.extra``).
        opponents: ``(state, key, env_ids) -> (opp_params, learner) | None``, who
            plays the slots the learner does not control in this update's rollout
            (see ``rollout.collect``); ``env_ids`` is None, or with a data axis the
            global indices ``i32[E / D]`` of this device's environments (draw each
            environment's opponent from ``fold_in(key, env_id)``).
        after_update: ``(state, traj) -> (state, metrics)``, after the gradient
            steps: update ``extra``, evaluate.
        evaluate: ``(state, key) -> metrics``, replaces the default evaluation
            (fresh-episode returns).
        fitness: the learner's default fitness (default: mean episode return).
        magnet: ``state -> {role: params}``, the policies the roles' regularisers pull
            towards in this update: ``ent_coef * ((1 - w) H(pi) - w KL(pi || magnet))``
            replaces the entropy bonus ``ent_coef * H(pi)`` (``update.role_loss``),
            ``w = magnet_weight``; default: the entropy bonus.
    """

    agents: Agents | None = None
    role_ids: tuple[dict, int] | None = None
    slot_names: dict | None = None
    init_extra: Callable[[dict, jax.Array], Any] | None = None
    opponents: Callable[[TrainState, jax.Array], Any] | None = None
    after_update: Callable[[TrainState, dict], tuple[TrainState, dict]] | None = None
    evaluate: Callable[[TrainState, jax.Array], dict] | None = None
    fitness: Fitness | None = None
    magnet: Callable[[TrainState], dict] | None = None
    magnet_weight: float = 1.0


def _check_minibatches(cfg: PPOConfig, env, data_shards: int = 1) -> None:
    """Each role's batch (steps x envs x agent slots trained) must split evenly --
    each device's batch with ``data_shards`` devices."""
    envs = cfg.num_envs // data_shards
    per_device = "" if data_shards == 1 else f" / data_shards={data_shards}"
    if cfg.network.recurrent:
        if envs % cfg.num_minibatches:  # whole environments per minibatch
            raise ValueError(f"recurrent training splits each device's environments into minibatches: num_envs={cfg.num_envs}"
                             f"{per_device} = {envs} must be divisible by num_minibatches={cfg.num_minibatches}")
        return
    for r, role in env.roles.items():
        n = role.num_agents if cfg.agents_per_update is None else min(role.num_agents, cfg.agents_per_update)
        size = cfg.num_steps * envs * n
        if size % cfg.num_minibatches:
            raise ValueError(
                f"num_minibatches={cfg.num_minibatches} must divide role {r!r}'s batch of "
                f"num_steps * num_envs{per_device} * agents = {cfg.num_steps} * {envs} * {n} = {size} samples"
            )


def make_train(config: PPOConfig, env, *, env_params=None, callback: Callable | None = None,
               extension: Extension | None = None, data_axis: str | None = None, data_shards: int = 1) -> Learner:
    """Build the learner (``jaxagents.learners.skeleton.interface.Learner``).

    Args:
        config: ``PPOConfig``.
        env: a jaxagents ``Env`` (unbatched; batching and auto-reset are added here).
        env_params: environment params (default ``env.default_params()``), validated now.
        callback: optional host function ``callback(update_index, metrics)`` called
            once per update through ``jax.debug.callback`` (progress bars, log sinks).
        extension: how another learner extends this one (``Extension``).
        data_axis, data_shards: split the environments over ``data_shards`` devices
            of the mesh axis ``data_axis`` (see the module docstring); ``update`` must
            then run inside a ``shard_map`` over that axis. Default: one device.

    ``learner.train(key)`` returns metrics stacked over updates: ``{name: f32[num_updates]}``.
    """
    # ---- the config, unpacked once: below, only these names are used
    cfg = config
    ext = extension or Extension()
    env_params = env.default_params() if env_params is None else env_params
    env.validate_params(env_params)
    env_schedule = cfg.env_schedule
    curriculum.check(env_schedule, env, env_params)
    central, recurrent = cfg.central_critic, cfg.network.recurrent
    bootstrap = cfg.bootstrap_truncated
    if bootstrap is None:  # documented default: where V(final obs) is computable
        bootstrap = cfg.advantage == "gae" and not central and not recurrent
    if bootstrap and (central or recurrent):
        raise ValueError("bootstrap_truncated=True needs a feed-forward decentralised critic (IPPO, recurrent=False)")
    for name in ("role_lr_scale", "role_start_update", "role_gamma"):
        unknown = sorted(set(dict(getattr(cfg, name))) - set(env.roles))
        if unknown:
            raise ValueError(f"{name}: unknown roles {unknown}; the environment's roles are {sorted(env.roles)}")
    data_shards = check_data_shards(cfg.num_envs, data_axis, data_shards)
    _check_minibatches(cfg, env, data_shards)
    local_envs = cfg.num_envs // data_shards
    num_steps, num_updates, advantage = cfg.num_steps, cfg.num_updates, cfg.advantage
    role_gamma, role_lr_scale, role_start = dict(cfg.role_gamma), dict(cfg.role_lr_scale), dict(cfg.role_start_update)
    estimator = dict(role_gamma=role_gamma, rae_alpha=cfg.rae_alpha, gigpo_omega=cfg.gigpo_omega,
                     normalize=cfg.normalize if cfg.normalize in ("batch", "role") else None)
    epochs = dict(update_epochs=cfg.update_epochs, num_minibatches=cfg.num_minibatches, optimizer=cfg.optimizer,
                  clip_per_stream=cfg.clip_per_stream, normalize_minibatch=cfg.normalize == "minibatch",
                  value_loss=estimators.uses_critic(advantage), axis_name=data_axis)

    vec = VecEnv(env, cfg.num_envs, reset_budget=cfg.reset_budget, final_obs=bootstrap)
    vec_init, init_ids = vec, None
    if data_axis is not None:  # init builds every environment; a device steps its own
        budget = None if cfg.reset_budget is None else min(cfg.reset_budget, local_envs)
        vec = VecEnv(env, local_envs, reset_budget=budget, final_obs=bootstrap)
        init_ids = jnp.arange(cfg.num_envs)
    agents = ext.agents or Agents(env, cfg.network, central_critic=central)
    # A role promising ``always_active`` with no opponent seats, under an estimator that
    # weighs every turn, has all-ones sample weights: they stay out of the minibatches
    # (None) and the loss is a plain mean; ``always_legal`` roles' masks are None from
    # the rollout on (~3% of a one-member IPPO update on Overcooked, both together).
    unweighted = {r: s.always_active and ext.opponents is None and estimators.weights_every_turn(cfg.advantage)
                  for r, s in agents.roles.items()}
    role_ids, num_role_ids = ext.role_ids or role_index(env)
    steps_per_update = cfg.num_envs * num_steps
    if cfg.shaped_reward is not None:
        check_shaped_reward(env, env_params, cfg.shaped_reward)

    def shaped(update):
        return shaped_reward(cfg.shaped_reward, cfg.shaped_reward_horizon, steps_per_update, update)

    def init(key, hparams: HParams | None = None) -> TrainState:
        hp = HParams.from_config(cfg) if hparams is None else hparams
        k_params, k_env, key = jax.random.split(key, 3)
        params = agents.init(k_params)
        tx = make_optimizer(hp, 1.0, cfg.optimizer, cfg.clip_per_stream)
        opt_state = {r: tx.init(p) for r, p in params.items()}
        carry = init_carry(agents, vec_init, k_env, curriculum.params_at(env_params, env_schedule, 0), init_ids)
        extra = ext.init_extra(params, key) if ext.init_extra else None
        return TrainState(params, opt_state, carry, key, jnp.zeros((), jnp.int32), jnp.zeros((1, num_role_ids)), extra)

    def update(state: TrainState, hparams: HParams | None = None):
        hp = HParams.from_config(cfg) if hparams is None else hparams
        key, k_roll, k_opp, k_upd = jax.random.split(state.key, 4)
        env_ids = local_env_ids(data_axis, data_shards, local_envs)  # with a data axis: this device's environments
        opponents = ext.opponents(state, k_opp, env_ids) if ext.opponents else None
        h0 = state.env.hidden
        rollout_params = curriculum.params_at(env_params, env_schedule, state.update)  # env_params without a schedule
        carry, traj, last_value = collect(
            agents, vec, rollout_params, state.params, state.env, k_roll, num_steps,
            reward_fn=shaped(state.update), bootstrap_truncated=bootstrap, opponents=opponents,
            start_hash=advantage in ("grpo", "gigpo"), env_ids=env_ids,
        )
        adv, baseline = estimators.compute(
            advantage, traj, last_value, role_ids, state.baseline, gamma=hp.gamma, gae_lambda=hp.gae_lambda,
            axis_name=data_axis, **estimator
        )
        batches = {
            r: Batch(tr.obs, tr.critic_in, tr.action, tr.log_prob, tr.value, tr.mask, tr.reset,
                     adv[r].advantage, adv[r].target, None if unweighted[r] else adv[r].weight.astype(jnp.float32))
            for r, tr in traj.items()
        }
        if cfg.agents_per_update is not None:  # large populations: train on a random subset of each role's slots
            k_sub = jax.random.split(jax.random.fold_in(k_upd, 1), len(batches))
            h0 = dict(h0)
            for k_r, r in zip(k_sub, list(batches)):
                batches[r], h0[r] = subsample_agents(batches[r], h0[r], k_r, cfg.agents_per_update)
        progress = state.update / num_updates
        lr_scale = 1.0 - progress if cfg.anneal_lr else 1.0
        if role_lr_scale or role_start:  # per-role step sizes (e.g. a slower leader) and frozen starts
            lr_scale = {r: lr_scale * role_lr_scale.get(r, 1.0) * (state.update >= role_start.get(r, 0)) for r in agents.roles}
        if cfg.ent_coef_final is not None:  # linear entropy annealing (towards Nash in zero-sum self-play)
            hp = hp.replace(ent_coef=hp.ent_coef * (1.0 - progress) + cfg.ent_coef_final * progress)
        magnets = ext.magnet(state) if ext.magnet else None
        params, opt_state, metrics = ppo_epochs(agents, state.params, state.opt_state, batches, h0, k_upd, hp, lr_scale,
                                                magnets=magnets, magnet_weight=ext.magnet_weight, **epochs)
        metrics.update(episode_metrics(traj, ext.slot_names, data_axis))
        for name, _ in env_schedule:  # the curriculum's values this update collected under
            metrics[f"env/{name}"] = getattr(rollout_params, name)
        metrics["update"] = state.update + 1
        metrics["env_steps"] = (state.update + 1) * steps_per_update
        new = state.replace(params=params, opt_state=opt_state, env=carry, key=key, update=state.update + 1, baseline=baseline)
        if ext.after_update:
            new, extra_metrics = ext.after_update(new, traj)
            metrics.update(extra_metrics)
        if callback is not None:
            jax.debug.callback(callback, new.update, metrics)
        return new, metrics

    def evaluate(state: TrainState, key, num_envs: int = 64, num_steps: int | None = None):
        """Mean return per role of the episodes that finish in ``num_steps`` steps
        (default ``config.num_steps``) of ``num_envs`` fresh environments under the
        sampled policies ``state.params``."""
        vec_eval = VecEnv(env, num_envs, final_obs=bootstrap)
        eval_params = curriculum.params_at(env_params, env_schedule, state.update)  # where training has got to
        play = lambda carry, k: collect(agents, vec_eval, eval_params, state.params, carry, k,  # noqa: E731
                                        num_steps or cfg.num_steps, start_hash=False)[1]
        return evaluate_episodes(agents, vec_eval, eval_params, key, play, ext.slot_names)

    returns = sorted({f"episode_return/{n}" for n in slot_name_set(env, ext.slot_names)})
    return Learner(
        init=init,
        update=update,
        evaluate=ext.evaluate or evaluate,
        default_hparams=HParams.from_config(cfg),
        hparam_space=hparam_space(cfg),
        fitness=ext.fitness or Fitness(tuple(returns), valid="episodes"),
        config=cfg,
        env=env,
        env_params=env_params,
        num_updates=num_updates,
        agents=agents,
        data_axis=data_axis,
        data_shards=data_shards,
    )



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

Besides ``train``, the returned function exposes ``train.init(key, hparams)`` and
``train.update(state, hparams)`` (one update) so a runner can checkpoint between
segments: ``train(key)`` is exactly ``init`` followed by ``num_updates`` updates.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import jax
import jax.numpy as jnp
from flax import struct

from jaxagents.core.wrappers import VecEnv
from jaxagents.learners import estimators
from jaxagents.learners.agents import Agents
from jaxagents.learners.rollout import EnvCarry, collect, init_carry
from jaxagents.learners.update import OPTIMIZERS, Batch, HParams, make_optimizer, ppo_epochs, subsample_agents
from jaxagents.nn import NetworkConfig


@dataclasses.dataclass(frozen=True)
class PPOConfig:
    """PPO settings (defaults: PureJaxRL / JaxMARL's IPPO).

    ``total_timesteps`` counts environment steps (one step of all agents of one
    environment); ``num_updates = total_timesteps // (num_envs * num_steps)``.
    """

    num_envs: int = 16
    num_steps: int = 128
    total_timesteps: int = 1_000_000
    update_epochs: int = 4
    num_minibatches: int = 4
    lr: float = 2.5e-4
    anneal_lr: bool = True
    optimizer: str = "adam"
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_eps: float = 0.2
    ent_coef: float = 0.01
    ent_coef_final: float | None = None
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    clip_per_stream: bool = False  # clip actor and critic gradients separately (JaxMARL MAPPO)
    network: NetworkConfig = NetworkConfig()
    central_critic: bool = False
    advantage: str = "gae"
    normalize: str = "minibatch"
    rae_alpha: float = 0.95
    gigpo_omega: float = 1.0
    shaped_reward: str | None = None
    shaped_reward_horizon: float = 0.0
    bootstrap_truncated: bool | None = None
    reset_budget: int | None = None
    agents_per_update: int | None = None
    role_lr_scale: Any = None
    role_start_update: Any = None
    role_gamma: Any = None

    def __post_init__(self):
        # per-role settings: {role: value}, kept as sorted pairs so the config stays hashable
        for name, kind in (("role_lr_scale", float), ("role_start_update", int), ("role_gamma", float)):
            v = getattr(self, name)
            if v is None:
                v = {}
            if not isinstance(v, (dict, tuple)):
                raise ValueError(f"{name} must be a mapping {{role: {kind.__name__}}}, got {v!r}")
            v = dict(v)
            for role, x in v.items():
                ok = isinstance(x, (int, float)) and not isinstance(x, bool) and x >= 0
                if not ok or (kind is int and not isinstance(x, int)):
                    raise ValueError(f"{name}[{role!r}] must be a {kind.__name__} >= 0, got {x!r}")
            if name == "role_gamma" and any(x > 1 for x in v.values()):
                raise ValueError(f"role_gamma values must be in [0, 1], got {v!r}")
            object.__setattr__(self, name, tuple(sorted(v.items())))
        if isinstance(self.network, dict):
            object.__setattr__(self, "network", NetworkConfig(**self.network))
        for name in ("num_envs", "num_steps", "total_timesteps", "update_epochs", "num_minibatches"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        if self.total_timesteps < self.num_envs * self.num_steps:
            raise ValueError(
                f"total_timesteps={self.total_timesteps} is less than one update "
                f"(num_envs * num_steps = {self.num_envs * self.num_steps})"
            )
        for name in ("lr", "max_grad_norm", "clip_eps"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)!r}")
        for name in ("gamma", "gae_lambda", "rae_alpha"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)!r}")
        if self.agents_per_update is not None and (
            not isinstance(self.agents_per_update, int) or isinstance(self.agents_per_update, bool) or self.agents_per_update < 1
        ):
            raise ValueError(f"agents_per_update must be None or a positive int, got {self.agents_per_update!r}")
        if self.advantage not in estimators.ESTIMATORS:
            raise ValueError(f"advantage must be one of {estimators.ESTIMATORS}, got {self.advantage!r}")
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {self.optimizer!r}")
        if self.normalize not in estimators.NORMALIZATIONS:
            raise ValueError(f"normalize must be one of {estimators.NORMALIZATIONS}, got {self.normalize!r}")
        if self.network.recurrent and self.num_envs % self.num_minibatches:
            raise ValueError(
                f"recurrent training splits environments into minibatches: num_envs={self.num_envs} "
                f"must be divisible by num_minibatches={self.num_minibatches}"
            )

    @property
    def num_updates(self) -> int:
        return self.total_timesteps // (self.num_envs * self.num_steps)

    def replace(self, **kw) -> "PPOConfig":
        return dataclasses.replace(self, **kw)


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


def episode_metrics(traj: dict, slot_names: dict | None = None) -> dict:
    """Mean return of the episodes that finished in this rollout, per role -- or per
    name in ``slot_names[role]`` (one name per agent slot; self-play names the merged
    slots after the original roles, whose returns would otherwise average to 0)."""
    m = {}
    for role, tr in traj.items():
        done = (tr.terminated | tr.truncated)[..., 0]  # [T, E]
        n = jnp.sum(done)
        names = (slot_names or {}).get(role)
        groups = {role: slice(None)} if names is None else {k: [i for i, x in enumerate(names) if x == k] for k in dict.fromkeys(names)}
        for name, idx in groups.items():
            ret = tr.episode_return[..., idx].mean(-1)
            m[f"episode_return/{name}"] = jnp.sum(jnp.where(done, ret, 0.0)) / jnp.maximum(n, 1)
        m["episodes"] = n
    return m


def make_train(config: PPOConfig, env, *, env_params=None, callback: Callable | None = None, _hooks=None):
    """Build ``train(key, hparams=None) -> (TrainState, metrics)``.

    Args:
        config: ``PPOConfig``.
        env: a jaxagents ``Env`` (unbatched; batching and auto-reset are added here).
        env_params: environment params (default ``env.default_params()``), validated now.
        callback: optional host function ``callback(update_index, metrics)`` called
            once per update through ``jax.debug.callback`` (progress bars, log sinks).

    ``metrics`` come back stacked over updates: ``{name: f32[num_updates]}``.
    """
    cfg = config
    env_params = env.default_params() if env_params is None else env_params
    env.validate_params(env_params)
    central = cfg.central_critic
    bootstrap = cfg.bootstrap_truncated
    if bootstrap is None:  # documented default: where V(final obs) is computable
        bootstrap = cfg.advantage == "gae" and not central and not cfg.network.recurrent
    if bootstrap and (central or cfg.network.recurrent):
        raise ValueError("bootstrap_truncated=True needs a feed-forward decentralised critic (IPPO, recurrent=False)")
    hooks = _hooks or {}
    for name in ("role_lr_scale", "role_start_update", "role_gamma"):
        unknown = sorted(set(dict(getattr(cfg, name))) - set(env.roles))
        if unknown:
            raise ValueError(f"{name}: unknown roles {unknown}; the environment's roles are {sorted(env.roles)}")
    vec = VecEnv(env, cfg.num_envs, reset_budget=cfg.reset_budget, final_obs=bootstrap)
    agents = hooks.get("agents") or Agents(env, cfg.network, central_critic=central)
    role_ids, num_role_ids = hooks.get("role_ids") or role_index(env)
    value_loss = estimators.uses_critic(cfg.advantage)
    steps_per_update = cfg.num_envs * cfg.num_steps

    def shaped(update):
        if cfg.shaped_reward is None:
            return None
        horizon = max(cfg.shaped_reward_horizon, 1.0)
        coef = jnp.maximum(1.0 - update * steps_per_update / horizon, 0.0) if cfg.shaped_reward_horizon > 0 else 1.0

        def fn(ts, role):
            x = ts.info[cfg.shaped_reward]
            return coef * (x[role] if isinstance(x, dict) else x)

        return fn

    def init(key, hparams: HParams | None = None) -> TrainState:
        hp = HParams.from_config(cfg) if hparams is None else hparams
        k_params, k_env, key = jax.random.split(key, 3)
        params = agents.init(k_params)
        tx = make_optimizer(hp, 1.0, cfg.optimizer, cfg.clip_per_stream)
        opt_state = {r: tx.init(p) for r, p in params.items()}
        carry = init_carry(agents, vec, k_env, env_params)
        extra = hooks["init_extra"](params, key) if "init_extra" in hooks else None
        return TrainState(params, opt_state, carry, key, jnp.zeros((), jnp.int32), jnp.zeros((1, num_role_ids)), extra)

    def update(state: TrainState, hparams: HParams | None = None):
        hp = HParams.from_config(cfg) if hparams is None else hparams
        key, k_roll, k_opp, k_upd = jax.random.split(state.key, 4)
        opponents = hooks["opponents"](state, k_opp) if "opponents" in hooks else None
        h0 = state.env.hidden
        carry, traj, last_value = collect(
            agents, vec, env_params, state.params, state.env, k_roll, cfg.num_steps,
            reward_fn=shaped(state.update), bootstrap_truncated=bootstrap, opponents=opponents,
            start_hash=cfg.advantage in ("grpo", "gigpo"),
        )
        adv, baseline = estimators.compute(cfg, hp, traj, last_value, role_ids, state.baseline)
        batches = {
            r: Batch(tr.obs, tr.critic_in, tr.action, tr.log_prob, tr.value, tr.mask, tr.reset, *adv[r][:2], adv[r][2].astype(jnp.float32))
            for r, tr in traj.items()
        }
        if cfg.agents_per_update is not None:  # large populations: train on a random subset of each role's slots
            k_sub = jax.random.split(jax.random.fold_in(k_upd, 1), len(batches))
            h0 = dict(h0)
            for k_r, r in zip(k_sub, list(batches)):
                batches[r], h0[r] = subsample_agents(batches[r], h0[r], k_r, cfg.agents_per_update)
        progress = state.update / cfg.num_updates
        lr_scale = 1.0 - progress if cfg.anneal_lr else 1.0
        if cfg.role_lr_scale or cfg.role_start_update:  # per-role step sizes (e.g. a slower leader) and frozen starts
            scale, start = dict(cfg.role_lr_scale), dict(cfg.role_start_update)
            lr_scale = {r: lr_scale * scale.get(r, 1.0) * (state.update >= start.get(r, 0)) for r in agents.roles}
        if cfg.ent_coef_final is not None:  # linear entropy annealing (towards Nash in zero-sum self-play)
            hp = hp.replace(ent_coef=hp.ent_coef * (1.0 - progress) + cfg.ent_coef_final * progress)
        params, opt_state, metrics = ppo_epochs(agents, state.params, state.opt_state, batches, h0, k_upd, hp, lr_scale, cfg, value_loss)
        metrics.update(episode_metrics(traj, hooks.get("slot_names")))
        metrics["update"] = state.update + 1
        metrics["env_steps"] = (state.update + 1) * steps_per_update
        new = state.replace(params=params, opt_state=opt_state, env=carry, key=key, update=state.update + 1, baseline=baseline)
        if "after_update" in hooks:
            new, extra_metrics = hooks["after_update"](new, traj)
            metrics.update(extra_metrics)
        if callback is not None:
            jax.debug.callback(callback, new.update, metrics)
        return new, metrics

    def train(key, hparams: HParams | None = None):
        state = init(key, hparams)
        return jax.lax.scan(lambda s, _: update(s, hparams), state, None, cfg.num_updates)

    def evaluate(params, key, num_envs: int = 64, num_steps: int | None = None, extra=None):
        """Mean return per role of the episodes that finish in ``num_steps`` steps
        (default ``cfg.num_steps``) of ``num_envs`` fresh environments under the
        sampled policies ``params``. ``extra`` (``TrainState.extra``) is accepted so
        that every learner's ``evaluate`` takes the same arguments; PPO has none."""
        k0, k1 = jax.random.split(key)
        vec_eval = VecEnv(env, num_envs, final_obs=bootstrap)
        carry = init_carry(agents, vec_eval, k0, env_params)
        _, traj, _ = collect(agents, vec_eval, env_params, params, carry, k1, num_steps or cfg.num_steps, start_hash=False)
        return {f"eval/{k}": v for k, v in episode_metrics(traj, hooks.get("slot_names")).items()}

    train.init = init
    train.update = update
    train.evaluate = evaluate
    train.num_updates = cfg.num_updates
    train.agents = agents
    train.config = cfg
    train.env = env
    train.env_params = env_params
    return train

"""PQN (Gallici et al. 2024), with VDN for teams, PureJaxRL-style: ``make_train(config,
env)`` returns a ``Learner`` whose ``update`` is one iteration of

1. a rollout of ``num_envs x num_steps`` epsilon-greedy steps (epsilon annealed
   linearly from ``eps_start`` to ``eps_end`` over the first ``eps_decay`` of the
   env steps), recording ``max_a Q(obs)`` under the rollout's parameters;
2. Q(lambda) targets computed backwards over the rollout (``qlambda.q_lambda``);
3. ``update_epochs`` passes of ``num_minibatches`` regression steps of Q(s, a) on
   those targets (Adam after global-norm clipping, learning rate optionally
   annealed linearly to 0).

No replay buffer and no target network: the targets are fixed for the update and
recomputed from fresh data each time; LayerNorm in the Q-network
(``qnets.QNetworkConfig.layer_norm``) is what keeps this stable.

* Independent (``vdn=False``): every agent regresses its own Q_i(o_i, a_i) on the
  Q(lambda) return of its own reward.
* VDN (``vdn=True``, cooperative environments): the team's Q_tot(s, a) =
  sum over the active agents of Q_i(o_i, a_i) regresses the Q(lambda) return of the
  *team reward* (the mean of all agents' rewards: the shared reward itself where
  rewards are shared, as in Overcooked), bootstrapped on sum_i max Q_i (the greedy
  joint action of an additive Q_tot is every agent's own greedy action).

Parameters are shared by the agents of a role (one Q-network per role,
``qnets.QAgents``); feed-forward (MLP, or CNN for grid observations) or recurrent
(``network.recurrent``: whole sequences are replayed from the rollout's initial
memory). Illegal actions are never chosen (greedy or exploratory) nor used in the
max; steps where an agent is inactive are excluded from the targets and the loss
(turn-level returns, ``qlambda`` docstring). ``shaped_reward`` names an ``info``
entry added to the reward with a coefficient annealed linearly from 1 to 0 over
``shaped_reward_horizon`` env steps (as in ``ppo``).

Traced hyper-parameters (``PQNHParams``, vmappable, PBT-able): ``lr``,
``max_grad_norm``, ``gamma``, ``q_lambda``, ``eps_end``. The default fitness is the
mean return of the episodes finished in the update's rollout, NaN where none did.
Data parallelism (``data_axis``, ``data_shards``; the Anakin pattern of
``update.py``): each device steps ``num_envs / data_shards`` of the environments (their
random draws keyed by global environment index, so the trajectories are those of one
device), computes its share of every weighted mean (its sum over the weight summed
over devices), and the gradients and loss metrics are ``psum``med before the
optimiser, so the parameters stay replicated. A minibatch is ``1 / num_minibatches``
of every device's samples (each device shuffles its own).
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import jax
import jax.numpy as jnp
import optax
from flax import struct

from jaxagents.core.rng import permutation
from jaxagents.core.validate import check_bool, check_float, check_positive_int
from jaxagents.core.wrappers import VecEnv
from jaxagents.learners.skeleton.config import CommonConfig
from jaxagents.learners.skeleton.data_parallel import check_data_shards, local_env_ids
from jaxagents.learners.skeleton.interface import ConfigHParams, Learner
from jaxagents.learners.skeleton.optim import make_optimizer
from jaxagents.learners.skeleton.rollout import (
    EnvCarry,
    check_shaped_reward,
    init_carry,
    shaped_reward,
)
from jaxagents.learners.value_based.common import evaluate_greedy, make_learner, update_metrics
from jaxagents.learners.value_based.qlambda import q_lambda
from jaxagents.learners.value_based.qnets import (
    QAgents,
    QNetworkConfig,
    collect,
    epsilon_schedule,
)


@dataclasses.dataclass(frozen=True)
class PQNConfig(CommonConfig):
    """PQN settings. Defaults: JaxMARL's ``pqn_vdn_cnn_overcooked`` where they are not
    specific to Overcooked (64 envs x 16 steps, 4 epochs x 16 minibatches, lr 7.5e-5
    annealed, lambda 0.5, epsilon 1 -> 0.2 over 20% of the steps, gradient clip 10; see
    ``baselines/configs/pqn_vdn_overcooked_cramped_room.yaml`` for the full mapping).

    ``total_timesteps`` counts environment steps; ``num_updates = total_timesteps //
    (num_envs * num_steps)``. ``eps_decay`` is the fraction of ``total_timesteps``
    over which epsilon goes from ``eps_start`` to ``eps_end``. ``eval_envs`` and
    ``eval_steps`` (None: ``num_steps``) size ``evaluate``'s greedy rollout.
    """

    num_envs: int = 64
    num_steps: int = 16
    total_timesteps: int = 5_000_000
    update_epochs: int = 4
    num_minibatches: int = 16
    lr: float = 7.5e-5
    anneal_lr: bool = True
    max_grad_norm: float = 10.0
    gamma: float = 0.99
    q_lambda: float = 0.5
    eps_start: float = 1.0
    eps_end: float = 0.2
    eps_decay: float = 0.2
    vdn: bool = False
    network: QNetworkConfig = QNetworkConfig()
    shaped_reward: str | None = None
    shaped_reward_horizon: float = 0.0
    bootstrap_truncated: bool = True
    reset_budget: int | None = None
    eval_envs: int = 16
    eval_steps: int | None = None

    def __post_init__(self):
        self.check_common()
        if isinstance(self.network, dict):
            object.__setattr__(self, "network", QNetworkConfig(**self.network))
        if not isinstance(self.network, QNetworkConfig):
            raise ValueError(f"network must be a QNetworkConfig or a mapping of its fields, got {self.network!r}")
        for name in ("update_epochs", "num_minibatches", "eval_envs"):
            object.__setattr__(self, name, check_positive_int(name, getattr(self, name)))
        for name in ("reset_budget", "eval_steps"):
            object.__setattr__(self, name, check_positive_int(name, getattr(self, name), none_ok=True))
        bounds = {
            "q_lambda": dict(low=0.0, high=1.0),
            "eps_start": dict(low=0.0, high=1.0), "eps_end": dict(low=0.0, high=1.0), "eps_decay": dict(low=0.0, high=1.0),
            "shaped_reward_horizon": dict(low=0.0),
        }
        for name, b in bounds.items():
            object.__setattr__(self, name, check_float(name, getattr(self, name), **b))
        for name in ("vdn", "bootstrap_truncated"):
            object.__setattr__(self, name, check_bool(name, getattr(self, name)))
        if self.shaped_reward is not None and not isinstance(self.shaped_reward, str):
            raise ValueError(f"shaped_reward must be null or the name of an info entry, got {self.shaped_reward!r}")
        samples = self.num_envs if self.network.recurrent else self.num_envs * self.num_steps
        if samples % self.num_minibatches:
            what = "num_envs" if self.network.recurrent else "num_envs * num_steps"
            raise ValueError(f"num_minibatches={self.num_minibatches} must divide {what} = {samples} "
                             f"(minibatches are whole {'environments' if self.network.recurrent else 'environment steps'})")


@struct.dataclass
class PQNHParams(ConfigHParams):
    """PQN's traced hyper-parameters (scalars: ``vmap`` over them trains a population)."""

    lr: jax.Array
    max_grad_norm: jax.Array
    gamma: jax.Array
    q_lambda: jax.Array
    eps_end: jax.Array


# where a population may move them: (low, high, scale); a config value outside widens the range
HPARAM_RANGES = {
    "lr": (1e-6, 1e-2, "log"),
    "max_grad_norm": (0.1, 100.0, "log"),
    "gamma": (0.8, 0.9999, "linear"),
    "q_lambda": (0.0, 1.0, "linear"),
    "eps_end": (0.0, 0.5, "linear"),
}


@struct.dataclass
class TrainState:
    """Everything a run needs to continue: checkpoint this and resume bit-identically."""

    params: dict  # {role: Q-network params}
    opt_state: dict  # {role: optax state}
    env: EnvCarry
    key: jax.Array
    update: jax.Array  # updates done so far, i32[]


def make_train(config: PQNConfig, env, *, env_params=None, callback: Callable | None = None,
               data_axis: str | None = None, data_shards: int = 1) -> Learner:
    """Build the learner (``jaxagents.learners.skeleton.interface.Learner``).

    Args:
        config: ``PQNConfig``.
        env: a jaxagents ``Env`` (unbatched; batching and auto-reset are added here),
            every role with ``Discrete`` actions.
        env_params: environment params (default ``env.default_params()``), validated now.
        callback: optional host function ``callback(update_index, metrics)`` called
            once per update through ``jax.debug.callback``.
        data_axis, data_shards: split the environments over ``data_shards`` devices
            along the mesh axis ``data_axis`` (the update must then run under
            ``shard_map`` over it, as ``Population(..., mesh=make_mesh(data=D))``
            does); see the module docstring.

    ``learner.train(key)`` returns metrics stacked over updates: ``{name: f32[num_updates]}``.
    """
    # ---- the config, unpacked once
    cfg = config
    env_params = env.default_params() if env_params is None else env_params
    env.validate_params(env_params)
    data_shards = check_data_shards(cfg.num_envs, data_axis, data_shards)
    local_envs = cfg.num_envs // data_shards
    local_samples = local_envs if cfg.network.recurrent else local_envs * cfg.num_steps
    if data_shards > 1 and local_samples % cfg.num_minibatches:
        what = "num_envs / data_shards" if cfg.network.recurrent else "num_envs / data_shards * num_steps"
        raise ValueError(f"num_minibatches={cfg.num_minibatches} must divide each device's {what} = {local_samples}")
    if cfg.shaped_reward is not None:
        check_shaped_reward(env, env_params, cfg.shaped_reward)
    qagents = QAgents(env, cfg.network)
    roles = list(qagents.roles)
    recurrent, vdn = cfg.network.recurrent, cfg.vdn
    num_envs, num_steps, num_updates = cfg.num_envs, cfg.num_steps, cfg.num_updates
    steps_per_update = num_envs * num_steps
    eps_steps = cfg.eps_decay * cfg.total_timesteps
    vec = VecEnv(env, num_envs, reset_budget=cfg.reset_budget, final_obs=cfg.bootstrap_truncated)
    vec_init, init_ids = vec, None
    if data_axis is not None:  # init builds every environment; a device steps its own
        budget = None if cfg.reset_budget is None else min(cfg.reset_budget, local_envs)
        vec = VecEnv(env, local_envs, reset_budget=budget, final_obs=cfg.bootstrap_truncated)
        init_ids = jnp.arange(num_envs)
    # a weighted mean's denominator: the weight summed over every device's samples
    total = (lambda x: x) if data_axis is None else (lambda x: jax.lax.psum(x, data_axis))  # noqa: E731

    def shaped(update):
        return shaped_reward(cfg.shaped_reward, cfg.shaped_reward_horizon, steps_per_update, update)

    def init(key, hparams: PQNHParams | None = None) -> TrainState:
        hp = PQNHParams.from_config(cfg) if hparams is None else hparams
        k_params, k_env, key = jax.random.split(key, 3)
        params = qagents.init(k_params)
        tx = make_optimizer(hp, 1.0)
        opt_state = {r: tx.init(p) for r, p in params.items()}
        carry = init_carry(qagents, vec_init, k_env, env_params, init_ids)
        return TrainState(params, opt_state, carry, key, jnp.zeros((), jnp.int32))

    def targets(traj, last_q_max, last_active, hp):
        """Q(lambda) targets and sample weights: independent ``{role: [T, E, n]}``,
        VDN one team target ``[T, E]``."""
        ql = lambda r, q, term, trunc, last, fq, act: q_lambda(  # noqa: E731
            r, q, term, trunc, last, hp.gamma, hp.q_lambda, final_q_max=fq, active=act)
        if not vdn:
            return {r: ql(tr.reward, tr.q_max, tr.terminated, tr.truncated, last_q_max[r], tr.final_q_max, tr.active)
                    for r, tr in traj.items()}
        # the team: every role's agents side by side, [T, E, N]
        cat = lambda f: jnp.concatenate([f(traj[r]) for r in roles], axis=-1)  # noqa: E731
        active = cat(lambda t: t.active)
        team_q = jnp.sum(jnp.where(active, cat(lambda t: t.q_max), 0.0), -1)
        last = jnp.sum(jnp.concatenate([jnp.where(last_active[r], last_q_max[r], 0.0) for r in roles], -1), -1)
        first = traj[roles[0]]
        return ql(jnp.mean(cat(lambda t: t.reward), -1), team_q, first.terminated[..., 0], first.truncated[..., 0],
                  last, jnp.sum(cat(lambda t: t.final_q_max), -1), jnp.any(active, -1))

    def loss_fn(params, mb, h0):
        """Mean squared TD error on one minibatch ``{role: [T', B, n, ...]}``, targets
        ``[T', B]`` (VDN) or ``{role: [T', B, n]}``."""
        q_taken = {}
        for r in roles:
            _, q = qagents.apply(params[r], r, h0[r], mb["obs"][r], mb["reset"][r])
            q_taken[r] = jnp.take_along_axis(q, mb["action"][r][..., None], axis=-1)[..., 0]
        if vdn:
            q_tot = sum(jnp.sum(jnp.where(mb["active"][r], q_taken[r], 0.0), -1) for r in roles)
            w = jnp.any(jnp.concatenate([mb["active"][r] for r in roles], -1), -1).astype(jnp.float32)
            err = q_tot - mb["target"]
            weight = jnp.maximum(total(jnp.sum(w)), 1.0)
            loss = jnp.sum(w * err**2) / weight
            return loss, {"loss": loss, "q_taken": jnp.sum(w * q_tot) / weight}
        loss, m = 0.0, {}
        for r in roles:
            w = mb["active"][r].astype(jnp.float32)
            err = q_taken[r] - mb["target"][r]
            weight = jnp.maximum(total(jnp.sum(w)), 1.0)
            role_loss = jnp.sum(w * err**2) / weight
            loss = loss + role_loss
            m[f"loss/{r}"] = role_loss
            m[f"q_taken/{r}"] = jnp.sum(w * q_taken[r]) / weight
        return loss, m

    def update(state: TrainState, hparams: PQNHParams | None = None):
        hp = PQNHParams.from_config(cfg) if hparams is None else hparams
        key, k_roll, k_epochs = jax.random.split(state.key, 3)
        env_ids = local_env_ids(data_axis, data_shards, local_envs)  # with a data axis: this device's environments
        eps = epsilon_schedule(state.update * steps_per_update, cfg.eps_start, hp.eps_end, eps_steps)
        h0 = state.env.hidden  # memory at the start of the rollout: recurrent updates replay from it
        carry, traj, last_q_max = collect(qagents, vec, env_params, state.params, state.env, k_roll, num_steps, eps,
                                          reward_fn=shaped(state.update), bootstrap_truncated=cfg.bootstrap_truncated,
                                          env_ids=env_ids)
        target = targets(traj, last_q_max, carry.ts.active, hp)
        batch = {
            "obs": {r: traj[r].obs for r in roles},
            "action": {r: traj[r].action for r in roles},
            "reset": {r: traj[r].reset for r in roles},
            "active": {r: traj[r].active for r in roles},
            "target": target,
        }
        lr_scale = 1.0 - state.update / num_updates if cfg.anneal_lr else 1.0
        tx = make_optimizer(hp, lr_scale)

        def minibatch_step(c, mb):
            params, opt_state = c
            mb, h = mb
            if not recurrent:  # [B, n, ...] -> [T=1, B, n, ...]; no memory
                mb = jax.tree.map(lambda x: x[None], mb)
                h = {r: jnp.zeros((1,)) for r in roles}
            grads, m = jax.grad(loss_fn, has_aux=True)(params, mb, h)
            if data_axis is not None:  # the devices' shares -> the full minibatch's gradient and metrics
                grads, m = jax.lax.psum((grads, m), data_axis)
            new_p, new_s = {}, {}
            for r in roles:  # each role its own clip (one role's large gradients must not shrink another's)
                m[f"grad_norm/{r}"] = optax.global_norm(grads[r])
                upd, new_s[r] = tx.update(grads[r], opt_state[r], params[r])
                new_p[r] = optax.apply_updates(params[r], upd)
            return (new_p, new_s), m

        def epoch(c, k):
            m = cfg.num_minibatches
            if recurrent:  # whole sequences: shuffle environments, [M, T, E/M, ...]
                perm = permutation(k, local_envs)
                split = lambda x: jnp.moveaxis(jnp.take(x, perm, axis=1).reshape(x.shape[0], m, -1, *x.shape[2:]), 1, 0)  # noqa: E731
                hsplit = lambda x: jnp.take(x, perm, axis=0).reshape(m, -1, *x.shape[1:])  # noqa: E731
                mbs = (jax.tree.map(split, batch), jax.tree.map(hsplit, h0))
            else:  # environment steps (all agents of a step together): [M, T*E/M, ...]
                perm = permutation(k, num_steps * local_envs)
                split = lambda x: jnp.take(x.reshape(num_steps * local_envs, *x.shape[2:]), perm, axis=0).reshape(m, -1, *x.shape[2:])  # noqa: E731
                mbs = (jax.tree.map(split, batch), None)
            return jax.lax.scan(minibatch_step, c, mbs)

        (params, opt_state), metrics = jax.lax.scan(epoch, (state.params, state.opt_state),
                                                    jax.random.split(k_epochs, cfg.update_epochs))
        metrics = update_metrics(jax.tree.map(jnp.mean, metrics), traj, eps, state.update + 1, steps_per_update, data_axis)
        new = state.replace(params=params, opt_state=opt_state, env=carry, key=key, update=state.update + 1)
        if callback is not None:
            jax.debug.callback(callback, new.update, metrics)
        return new, metrics

    def evaluate(state: TrainState, key, num_envs: int | None = None, num_steps: int | None = None):
        """Mean return per role of the episodes that finish in ``num_steps`` steps
        (default ``eval_steps``) of ``num_envs`` (default ``eval_envs``) fresh
        environments under the greedy policies of ``state.params``."""
        return evaluate_greedy(qagents, env, env_params, state.params, key, num_envs or cfg.eval_envs,
                               num_steps or cfg.eval_steps or cfg.num_steps)

    return make_learner(cfg, env, env_params, qagents, PQNHParams, HPARAM_RANGES, init=init, update=update,
                        evaluate=evaluate, data_axis=data_axis, data_shards=data_shards)

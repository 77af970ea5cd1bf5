"""IQL, VDN and QMIX, PureJaxRL-style: ``make_train(config, env)`` returns a
``Learner`` whose ``update`` is one jit-compilable step of off-policy Q-learning
with a trajectory replay buffer and a target network.

One update:

1. **Collect** ``num_steps`` steps of ``num_envs`` environments with
   epsilon-greedy actions of the online Q-networks (``qnets.QAgents``: one network
   per role, shared by the role's agents, recurrent or not); epsilon decays
   linearly from ``eps_start`` to ``eps_end`` over the first ``eps_decay`` of the
   run's env steps. Illegal actions are never chosen, greedily or at random.
   The rollout is PQN's (``qnets.collect``); ``evaluate`` plays it greedily.
2. **Store** the rollout in the replay buffer (``replay.Replay``, flashbax).
3. Once ``learning_starts`` env steps were collected, **``num_gradient_steps``
   gradient steps**, each on ``batch_size`` sequences of ``sample_length + 1``
   consecutive steps sampled from the buffer. A recurrent network unrolls over the
   sequence from a zero memory, which is reset again wherever an episode starts
   (no burn-in). One-step TD targets come from the **target network**: its max over
   the next step's *legal* actions (``double_q=False``) or its value of the online
   network's legal argmax (``double_q=True``, the default).
4. Every ``target_update_interval`` updates the target network becomes a copy of
   the online one (a hard update).

The three learners differ in what is regressed (``mixer``):

* ``"none"`` (IQL): each agent's ``Q_i(o_i, a_i)`` on its own reward,
  ``r_i + gamma * max Q_i^target(o_i', .)``: independent learners on a non-stationary
  problem (the other agents are part of the environment).
* ``"vdn"``: ``Q_tot = sum_i Q_i`` on the team reward.
* ``"qmix"``: ``Q_tot = QMix(Q_1..Q_N; global_obs)``, monotonic in every ``Q_i``
  (``mixers.QMix``), on the team reward; the hypernetworks read ``env.global_obs``.

In VDN and QMIX every agent of every role is one member of the team; the per-agent
networks are still per role (parameter sharing within a role).

**Team reward** (VDN, QMIX): the mean over all agents of their rewards
(``team_reward="mean"``), or their sum (``"sum"``, what JaxMARL's Q-learning
wrapper uses by default, e.g. for MPE). The mean is the default because in the
cooperative games these learners are for, every agent usually receives the *same*
team reward (SMAX, Overcooked, the matrix games): the mean is then exactly that
reward, where the sum would count it once per agent, scaling every target by the
team size. Episode returns are reported per role (the mean over its agents), as
the PPO learners do, whatever the choice.

**Inactive agents** (dead units, not-your-turn): a step where an agent is inactive
contributes nothing -- IQL drops it from the loss; VDN/QMIX feed the mixers a Q of
0 for it, in the chosen values and in the targets alike; a step where no agent is
active is dropped. An agent inactive at the next step has no future value in the
target (it is treated as absorbed: dead). So these learners are for simultaneous-move
games; in turn-based ones an agent's next decision is not at ``t + 1``.

**Episode ends.** ``terminated`` stops bootstrapping. A ``truncated`` step (time
limit) is dropped from the loss: after the auto-reset the next stored observation
belongs to the next episode, and bootstrapping from the observation the episode was
cut at would need it (and, for QMIX, its global state) in the buffer too.

Traced hyper-parameters (``HParams``, a population may vary them): ``lr``,
``gamma``, ``eps_end``, ``max_grad_norm``. The train state -- parameters, target
parameters, optimiser state, environments, replay buffer, key, update count -- is
one pytree: a checkpoint of it resumes bit-identically. One device only
(``data_shards`` must be 1).
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import jax
import jax.numpy as jnp
from flax import struct

from jaxagents.core.validate import (
    check_bool,
    check_choice,
    check_float,
    check_int,
    check_positive_int,
)
from jaxagents.core.wrappers import VecEnv
from jaxagents.learners.skeleton.config import CommonConfig
from jaxagents.learners.skeleton.interface import ConfigHParams, Learner
from jaxagents.learners.skeleton.optim import make_optimizer
from jaxagents.learners.skeleton.rollout import EnvCarry, init_carry
from jaxagents.learners.value_based.common import evaluate_greedy, make_learner, update_metrics
from jaxagents.learners.value_based.mixers import MIXERS, make_mixer
from jaxagents.learners.value_based.qnets import (
    QAgents,
    QNetworkConfig,
    collect,
    epsilon_schedule,
    greedy,
    masked_max,
)
from jaxagents.learners.value_based.replay import Replay, ReplayState, Step

TEAM_REWARDS = ("mean", "sum")


@dataclasses.dataclass(frozen=True)
class QConfig(CommonConfig):
    """Settings of IQL / VDN / QMIX. Defaults: JaxMARL's SMAX settings (the file
    ``baselines/QLearning/config/alg/ql_rnn_smax.yaml`` at c793d09, shared there by
    its IQL, VDN and QMIX) where a CPU can afford them: 16 envs x 128 steps, 8
    gradient steps per update on batches of 32 sequences, epsilon 1.0 -> 0.05 over the
    first 10% of the run, a hard target update every 10 updates, learning from 10,000
    steps, gamma 0.99, grad-norm clip 10, no lr decay. Scaled down: 1e6 steps (1e7),
    a GRU of 64 (512), a mixer embedding of 32 (64) with hypernetworks of 64 (256), a
    buffer of 100,000 steps (5,000 chunks of 128 steps), sequences of 32 steps (whole
    128-step chunks). Otherwise different: lr 5e-4 with Adam (5e-5 with RAdam, over
    10x the steps), no reward scale (JaxMARL multiplies SMAX rewards by 10), and the
    mixer's own small initialisation (``mixers.QMix.init_scale``; JaxMARL's is 0.001).

    Attributes:
        mixer: ``"none"`` (IQL), ``"vdn"`` or ``"qmix"``; fixed by the learner's
            name in a run config (``learner: iql | vdn | qmix``).
        total_timesteps: env steps of the run (one step of one environment);
            ``num_updates = total_timesteps // (num_envs * num_steps)``.
        buffer_size: steps kept in the replay buffer (all environments together).
        batch_size: sequences per gradient step.
        sample_length: transitions per sampled sequence (``sample_length + 1``
            steps are read: the last one only as the next observation).
        learning_starts: env steps collected before the first gradient step.
        target_update_interval: updates between hard target-network updates.
        eps_decay: fraction of ``total_timesteps`` over which epsilon decays.
        anneal_lr: decay the learning rate linearly to 0 over the run.
        mixer_embed, mixer_hyper_hidden: QMIX's mixing width and hypernetwork hidden
            width (``0``: linear hypernetworks).
        network: ``qnets.QNetworkConfig`` of every role's Q-network.
    """

    mixer: str = "qmix"
    num_envs: int = 16
    num_steps: int = 128
    total_timesteps: int = 1_000_000
    buffer_size: int = 100_000
    batch_size: int = 32
    sample_length: int = 32
    num_gradient_steps: int = 8
    learning_starts: int = 10_000
    target_update_interval: int = 10
    double_q: bool = True
    lr: float = 5e-4
    anneal_lr: bool = False
    max_grad_norm: float = 10.0
    gamma: float = 0.99
    eps_start: float = 1.0
    eps_end: float = 0.05
    eps_decay: float = 0.1
    team_reward: str = "mean"
    mixer_embed: int = 32
    mixer_hyper_hidden: int = 64
    network: QNetworkConfig = QNetworkConfig(hidden=(64,), recurrent=True, gru_size=64, layer_norm=False)

    def __post_init__(self):
        self.check_common()
        set_ = lambda name, v: object.__setattr__(self, name, v)  # noqa: E731
        check_choice("mixer", self.mixer, MIXERS)
        check_choice("team_reward", self.team_reward, TEAM_REWARDS)
        if isinstance(self.network, dict):
            set_("network", QNetworkConfig(**self.network))
        if not isinstance(self.network, QNetworkConfig):
            raise ValueError(f"network must be a QNetworkConfig or a mapping of its fields, got {self.network!r}")
        for name in ("buffer_size", "batch_size", "sample_length", "num_gradient_steps", "target_update_interval",
                     "mixer_embed"):
            set_(name, check_positive_int(name, getattr(self, name)))
        set_("learning_starts", check_int("learning_starts", self.learning_starts, low=0))
        set_("mixer_hyper_hidden", check_int("mixer_hyper_hidden", self.mixer_hyper_hidden, low=0))
        for name in ("eps_start", "eps_end", "eps_decay"):
            set_(name, check_float(name, getattr(self, name), low=0.0, high=1.0))
        set_("double_q", check_bool("double_q", self.double_q))


@struct.dataclass
class HParams(ConfigHParams):
    """The traced hyper-parameters (scalars; ``vmap`` over them trains a population)."""

    lr: jax.Array
    gamma: jax.Array
    eps_end: jax.Array
    max_grad_norm: jax.Array


# where a population may move them: (low, high, scale); a config value outside widens the range.
# lr up to 3e-2: the small Q-networks of matrix and card games train well with Adam at 1e-2
# (the default of the tests' stag hunt), so a population should be able to explore above it
HPARAM_RANGES = {"lr": (1e-5, 3e-2, "log"), "gamma": (0.8, 0.9999, "linear"), "eps_end": (0.0, 0.3, "linear"),
                 "max_grad_norm": (0.1, 100.0, "log")}


@struct.dataclass
class TrainState:
    """Everything a run needs to continue: checkpoint this and resume bit-identically.

    Attributes:
        params: ``{role: params}``, the online Q-networks (the policies: what
            evaluation and cross-play tools read, as for every learner).
        mixer: the online mixer's params (``{}`` for IQL and VDN).
        target, target_mixer: the target networks, same structures.
        opt_state: the optimiser's state, over ``{"agents": params, "mixer": mixer}``.
        env: ``rollout.EnvCarry`` (environments, recurrent memory, running returns).
        buffer: ``replay.ReplayState`` (flashbax's buffer state).
        key: the run's PRNG key.
        update: ``i32[]`` updates done.
    """

    params: dict
    mixer: dict
    target: dict
    target_mixer: dict
    opt_state: object
    env: EnvCarry
    buffer: ReplayState
    key: jax.Array
    update: jax.Array


# ----------------------------------------------------------------------- the TD pieces


def next_values(q_online: jax.Array, q_target: jax.Array, mask: jax.Array, double_q: bool) -> jax.Array:
    """Each agent's bootstrap value at the next step, ``f32[...]`` from
    ``q_* f32[..., A]`` and the next step's legal actions ``mask bool[..., A]``:
    the target network's max over legal actions, or (``double_q``) its value of the
    online network's legal argmax. Illegal actions never enter either."""
    if double_q:
        best = greedy(q_online, mask)
        return jnp.take_along_axis(q_target, best[..., None], axis=-1)[..., 0]
    return masked_max(q_target, mask)


def td_loss(q_taken, q_next, reward, terminated, weight, gamma):
    """Mean squared one-step TD error over the samples with ``weight`` > 0:
    ``target = reward + gamma * (1 - terminated) * q_next`` (no gradient through the
    target). All inputs share their shape. Returns ``(loss, td_error)``."""
    target = jax.lax.stop_gradient(reward + gamma * (1.0 - terminated.astype(jnp.float32)) * q_next)
    td = q_taken - target
    w = weight.astype(jnp.float32)
    return jnp.sum(w * td**2) / jnp.maximum(jnp.sum(w), 1.0), td


# ----------------------------------------------------------------------- the learner


def make_train(config: QConfig, env, env_params=None, callback: Callable | None = None, data_axis: str | None = None,
               data_shards: int = 1) -> Learner:
    """Build the learner (``jaxagents.learners.skeleton.interface.Learner``).

    Args:
        config: ``QConfig``.
        env: a jaxagents ``Env`` with ``Discrete`` actions (batching and auto-reset are
            added here); QMIX also needs ``env.global_obs``.
        env_params: environment params (default ``env.default_params()``), validated now.
        callback: optional host function ``callback(update_index, metrics)`` called
            once per update through ``jax.debug.callback``.
        data_axis, data_shards: accepted for the interface; only one device
            (``data_shards=1``) is supported.

    Metrics of an update (``f32[]`` each): ``loss``, ``q_taken`` (mean Q of the taken
    actions: per agent for IQL, ``Q_tot`` for VDN/QMIX), ``td_abs`` (the mean absolute TD error),
    all three 0 before learning starts (``learning`` 0/1); ``epsilon``;
    ``episode_return/<role>`` and ``episodes`` of the rollout (as the PPO learners);
    ``update``, ``env_steps``.
    """
    # ---- the config, unpacked once
    cfg = config
    env_params = env.default_params() if env_params is None else env_params
    env.validate_params(env_params)
    if check_positive_int("data_shards", data_shards) > 1:
        raise ValueError(f"data_shards={data_shards}: the Q-learners run on one device (their replay buffer is not split over a data axis); use data_shards=1")
    qagents = QAgents(env, cfg.network)
    roles = list(qagents.roles)
    num_envs, num_steps, num_updates = cfg.num_envs, cfg.num_steps, cfg.num_updates
    steps_per_update = num_envs * num_steps
    mixer = make_mixer(cfg.mixer, cfg.mixer_embed, cfg.mixer_hyper_hidden)
    central = cfg.mixer == "qmix"
    global_shape = None
    if central:
        try:
            global_shape = jax.eval_shape(lambda k: env.global_obs(env.reset(k, env_params)[0], env_params), jax.random.key(0)).shape
        except NotImplementedError:
            raise ValueError(f"mixer='qmix' needs env.global_obs (the hypernetworks' input); {env.name} has none") from None
    vec = VecEnv(env, num_envs)
    replay = Replay(num_envs, cfg.buffer_size, cfg.batch_size, cfg.sample_length + 1, num_steps)
    # gradient steps need learning_starts env steps and a full sequence in every buffer row
    first_learning_update = max(-(-cfg.learning_starts // steps_per_update), -(-(cfg.sample_length + 1) // num_steps))
    eps_steps = cfg.eps_decay * cfg.total_timesteps
    num_agents = sum(role.num_agents for role in qagents.roles.values())

    # QMIX's mixer input, recorded before every step
    global_obs = None if not central else (
        lambda s: jax.vmap(env.global_obs, in_axes=(0, None))(s, env_params).astype(jnp.float32))

    # ---- the loss on sampled sequences Step [L + 1, B, ...]
    def q_values(agent_params, seq: Step):
        """``{role: q f32[L + 1, B, n, A]}``, each network unrolled from a zero memory."""
        out = {}
        for role in roles:
            obs = seq.obs[role]
            reset = jnp.broadcast_to(seq.reset[:, :, None], obs.shape[:3])
            h0 = jnp.zeros((*obs.shape[1:3], qagents.hidden_size), jnp.float32)
            out[role] = qagents.apply(agent_params[role], role, h0, obs, reset)[1]
        return out

    def loss_fn(params, target, seq: Step, hp: HParams):
        q_on, q_tg = q_values(params["agents"], seq), q_values(target["agents"], seq)
        cat = lambda d: jnp.concatenate([d[r] for r in roles], axis=-1)  # noqa: E731  {role: [..., n]} -> [..., N]
        act_now = cat({r: seq.active[r][:-1] for r in roles})  # [L, B, N]
        act_next = cat({r: seq.active[r][1:] for r in roles})
        chosen = cat({r: jnp.take_along_axis(q_on[r][:-1], seq.action[r][:-1, ..., None], -1)[..., 0] for r in roles})
        boot = cat({r: next_values(jax.lax.stop_gradient(q_on[r][1:]), q_tg[r][1:], seq.mask[r][1:], cfg.double_q)
                    for r in roles})
        chosen = jnp.where(act_now, chosen, 0.0)  # inactive agents: no Q now ...
        boot = jnp.where(act_next, boot, 0.0)  # ... and no future value
        reward = cat({r: seq.reward[r][:-1] for r in roles})
        terminated, kept = seq.terminated[:-1], ~seq.truncated[:-1]  # [L, B]
        if mixer is None:  # IQL: every active agent-step is a sample, on its own reward
            weight = act_now & kept[..., None]
            loss, td = td_loss(chosen, boot, reward, terminated[..., None], weight, hp.gamma)
            q_mean = jnp.sum(jnp.where(weight, chosen, 0.0)) / jnp.maximum(jnp.sum(weight), 1)
        else:
            g_now = None if seq.global_obs is None else seq.global_obs[:-1]
            g_next = None if seq.global_obs is None else seq.global_obs[1:]
            q_tot = mixer.apply(params["mixer"], chosen, g_now)
            q_tot_next = mixer.apply(target["mixer"], boot, g_next)
            team = jnp.mean(reward, -1) if cfg.team_reward == "mean" else jnp.sum(reward, -1)
            weight = jnp.any(act_now, -1) & kept
            loss, td = td_loss(q_tot, q_tot_next, team, terminated, weight, hp.gamma)
            q_mean = jnp.sum(jnp.where(weight, q_tot, 0.0)) / jnp.maximum(jnp.sum(weight), 1)
        return loss, {"loss": loss, "q_taken": q_mean, "td_abs": jnp.sum(jnp.abs(td) * weight) / jnp.maximum(jnp.sum(weight), 1)}

    def gradient_steps(params, opt_state, target, buffer, key, hp: HParams, lr_scale):
        tx = make_optimizer(hp, lr_scale)

        def one(carry, k):
            p, o = carry
            seq = replay.sample(buffer, k)
            grads, metrics = jax.grad(loss_fn, has_aux=True)(p, target, seq, hp)
            updates, o = tx.update(grads, o, p)
            p = jax.tree.map(lambda a, b: a + b, p, updates)
            return (p, o), metrics

        (params, opt_state), metrics = jax.lax.scan(one, (params, opt_state), jax.random.split(key, cfg.num_gradient_steps))
        return params, opt_state, jax.tree.map(jnp.mean, metrics)

    # ---- init, update, evaluate
    def init(key, hparams: HParams | None = None) -> TrainState:
        hp = HParams.from_config(cfg) if hparams is None else hparams
        k_agents, k_mixer, k_env, key = jax.random.split(key, 4)
        params, mix = qagents.init(k_agents), {}
        if mixer is not None:
            mix = mixer.init(k_mixer, jnp.zeros((1, num_agents)), None if global_shape is None else jnp.zeros((1, *global_shape)))
        opt_state = make_optimizer(hp, 1.0).init({"agents": params, "mixer": mix})
        carry = init_carry(qagents, vec, k_env, env_params)
        # an empty buffer shaped after one step of the rollout (flashbax reads only shapes and dtypes)
        one = jax.eval_shape(lambda: Step.of_rollout(collect(qagents, vec, env_params, params, carry, k_env, 1, 0.0,
                                                             bootstrap_truncated=False, global_obs=global_obs)[1]))
        example = jax.tree.map(lambda x: jnp.zeros(x.shape[2:], x.dtype), one)
        return TrainState(params, mix, params, mix, opt_state, carry, replay.init(example), key, jnp.zeros((), jnp.int32))

    def update(state: TrainState, hparams: HParams | None = None):
        hp = HParams.from_config(cfg) if hparams is None else hparams
        key, k_roll, k_learn = jax.random.split(state.key, 3)
        eps = epsilon_schedule(state.update * steps_per_update, cfg.eps_start, hp.eps_end, eps_steps)
        carry, traj, _ = collect(qagents, vec, env_params, state.params, state.env, k_roll, num_steps, eps,
                                 bootstrap_truncated=False, global_obs=global_obs)
        buffer = replay.add(state.buffer, Step.of_rollout(traj))
        lr_scale = 1.0 - state.update / num_updates if cfg.anneal_lr else 1.0
        # a branch on the update count (shared by a population's members: it stays a branch under vmap)
        learn = state.update + 1 >= first_learning_update
        zeros = {"loss": jnp.zeros(()), "q_taken": jnp.zeros(()), "td_abs": jnp.zeros(())}
        online = {"agents": state.params, "mixer": state.mixer}
        target = {"agents": state.target, "mixer": state.target_mixer}
        online, opt_state, metrics = jax.lax.cond(
            learn, lambda: gradient_steps(online, state.opt_state, target, buffer, k_learn, hp, lr_scale),
            lambda: (online, state.opt_state, zeros))
        refresh = (state.update + 1) % cfg.target_update_interval == 0
        target = jax.tree.map(lambda t, p: jnp.where(refresh, p, t), target, online)
        metrics = update_metrics(metrics, traj, eps, state.update + 1, steps_per_update)
        metrics["learning"] = learn.astype(jnp.float32)
        new = TrainState(online["agents"], online["mixer"], target["agents"], target["mixer"], opt_state, carry, buffer, key,
                         state.update + 1)
        if callback is not None:
            jax.debug.callback(callback, new.update, metrics)
        return new, metrics

    def evaluate(state: TrainState, key, num_envs: int = 64, num_steps: int | None = None):
        """Mean return per role of the episodes that finish in ``num_steps`` steps
        (default ``config.num_steps``) of ``num_envs`` fresh environments under the
        greedy (epsilon 0) policies of ``state.params``."""
        return evaluate_greedy(qagents, env, env_params, state.params, key, num_envs, num_steps or cfg.num_steps)

    return make_learner(cfg, env, env_params, qagents, HParams, HPARAM_RANGES, init=init, update=update,
                        evaluate=evaluate)

"""Trajectory collection shared by every learner: a ``lax.scan`` over time of
batched policy steps and ``VecEnv`` steps.

Arrays in a trajectory are time-major, ``[T, E, n, ...]`` (time, environment,
agent of the role). ``Transition`` holds one role's samples; a trajectory is
``{role: Transition}``.

``env_ids`` (data-parallel learners): the global indices of the environments this
device runs. Every random draw of an environment -- its resets and steps
(``VecEnv``), its agents' actions, its opponents' actions -- then comes from a key
folded with its global index, so a batch split over D devices produces the same
trajectories as one device running it whole. Without ``env_ids`` (the default) the
streams are those of one key split over the batch, as always.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from jaxagents.advantages import hash_rows
from jaxagents.core.branch import branch
from jaxagents.core.wrappers.autoreset import fold_in_each
from jaxagents.learners.skeleton.agents import with_time_axis
from jaxagents.learners.skeleton.metrics import episode_metrics


@struct.dataclass
class EnvCarry:
    """What the rollout carries from one step (and one update) to the next.

    Attributes:
        env_state: the ``VecEnv`` state.
        ts: the last batched ``TimeStep``.
        first: ``bool[E]`` ``ts`` is the first observation of an episode.
        hidden: ``{role: (h_actor, h_critic)}`` recurrent memory, ``[E, n, H]`` each.
        episode_return: ``{role: f32[E, n]}`` return so far in the running episode.
        start_hash: ``uint32[E]`` hash of the running episode's first observations
            (episodes with equal hashes started from the same state: GRPO groups).
    """

    env_state: object
    ts: object
    first: jax.Array
    hidden: dict
    episode_return: dict
    start_hash: jax.Array


@struct.dataclass
class Transition:
    """One role's samples, ``[T, E, n, ...]``.

    ``active`` is whose action was used (turn-based games) and ``learner`` which slots
    the learning policy controlled (opponent pools); losses use ``active & learner``.
    ``critic_in`` is None when the critic reads the agent's own observation (IPPO:
    ``obs`` is not stored twice) and ``start_hash`` is None unless ``collect`` was asked
    to track it (``start_hash=True``: GRPO/GiGPO groups); ``mask`` is None for a role
    declared ``Role(always_legal=True)``.
    ``terminated``/``truncated`` describe the step's transition (broadcast to agents).
    ``episode_return`` is the finished episode's return at the step that ended it
    (else 0). ``final_value`` is V of the observation a truncated episode was cut at.
    """

    obs: jax.Array
    critic_in: jax.Array
    action: jax.Array
    log_prob: jax.Array
    value: jax.Array
    mask: jax.Array | None
    reset: jax.Array
    reward: jax.Array
    terminated: jax.Array
    truncated: jax.Array
    active: jax.Array
    learner: jax.Array
    final_value: jax.Array
    episode_return: jax.Array
    start_hash: jax.Array | None


def _obs_hash(ts) -> jax.Array:
    rows = jnp.concatenate([jnp.asarray(o, jnp.float32).reshape(o.shape[0], -1) for o in ts.obs.values()], axis=1)
    return hash_rows(rows * 1024.0)  # keep fractional features distinct after rounding


def init_carry(agents, vec, key, env_params, env_ids=None) -> EnvCarry:
    """The rollout's starting ``EnvCarry``: ``vec.reset(key, env_params, env_ids)``, every
    env at an episode's first step, zero recurrent memory and returns, and the start
    observations' hash."""
    env_state, ts = vec.reset(key, env_params, env_ids)
    n = vec.num_envs
    return EnvCarry(
        env_state=env_state,
        ts=ts,
        first=jnp.ones((n,), bool),
        hidden=agents.initial_hidden(n),
        episode_return={r: jnp.zeros((n, role.num_agents), jnp.float32) for r, role in agents.roles.items()},
        start_hash=_obs_hash(ts),
    )


def evaluate_episodes(agents, vec, env_params, key, play, slot_names: dict | None = None) -> dict:
    """Every learner's ``evaluate``: play fresh episodes and report how they went.

    ``vec``'s environments start fresh (reset with the first half of ``key``), the
    learner's own rollout ``play(carry, key) -> {role: trajectory [T, E, n, ...]}``
    runs from there with the second half (PPO samples its policies, the Q-learners act
    greedily), and the episodes that finished give ``{"eval/<name>": f32[]}``
    (``metrics.episode_metrics``: the mean return per role or slot name, and
    ``eval/episodes``)."""
    k0, k1 = jax.random.split(key)
    traj = play(init_carry(agents, vec, k0, env_params), k1)
    return {f"eval/{k}": v for k, v in episode_metrics(traj, slot_names).items()}


def _global_obs(agents, vec, env_state, env_params):
    if not agents.central_critic:
        return None
    return jax.vmap(vec.env.global_obs, in_axes=(0, None))(env_state, env_params)


def collect(
    agents,
    vec,
    env_params,
    params: dict,
    carry: EnvCarry,
    key: jax.Array,
    num_steps: int,
    *,
    reward_fn=None,
    bootstrap_truncated: bool = False,
    opponents=None,
    start_hash: bool = True,
    env_ids: jax.Array | None = None,
):
    """Run ``num_steps`` batched steps.

    Args:
        agents: ``jaxagents.learners.skeleton.agents.Agents``.
        vec: a ``VecEnv`` (with ``final_obs=True`` when ``bootstrap_truncated``).
        params: ``{role: params}`` of the learning policies.
        reward_fn: optional ``(timestep, role) -> f32[E, n]`` added to the reward
            (e.g. annealed shaped rewards).
        bootstrap_truncated: compute V(final observation) for truncated episodes
            (feed-forward, decentralised critics only).
        opponents: optional ``(opp_params, learner)``: ``opp_params`` is
            ``{role: params with a leading [E] axis}`` (one opponent per environment)
            and ``learner`` is ``{role: bool[E, n]}``, the slots the learning policy
            plays; the other slots act with the environment's opponent.
        start_hash: hash each new episode's first observation (``Transition.start_hash``,
            GRPO/GiGPO groups). It costs a sequential hash over the observation every
            step, so learners that do not group episodes turn it off (then
            ``carry.start_hash`` is left as it is and ``Transition.start_hash`` is None).
        env_ids: ``i32[E]`` global environment indices: per-environment random
            streams (see the module docstring); None: one key split over the batch.

    Returns ``(carry, {role: Transition}, last_value {role: f32[E, n]})``.
    """

    def step(c: EnvCarry, k):
        k_env, *k_roles = jax.random.split(k, 1 + len(agents.roles))
        gobs = _global_obs(agents, vec, c.env_state, env_params)
        actions, out, hidden = {}, {}, {}
        for kr, (role, spec) in zip(k_roles, agents.roles.items()):
            obs = c.ts.obs[role]
            cin = agents.critic_input(role, obs, gobs)
            reset = jnp.broadcast_to(c.first[:, None], obs.shape[:2])
            mask = None if spec.always_legal else c.ts.action_mask[role]  # None: every action legal, nothing to apply or store
            k_own, k_opp = jax.random.split(kr)
            if env_ids is not None:
                k_own = fold_in_each(k_own, env_ids)
            hidden[role], action, logp, value, _ = agents.act(params[role], role, c.hidden[role], obs, cin, reset, mask, k_own,
                                                              per_env_keys=env_ids is not None)
            learner = jnp.ones(obs.shape[:2], bool)
            if opponents is not None:
                opp_params, learner = opponents[0][role], opponents[1][role]

                def one_env(p, h, o, ci, r, m, ke):
                    expand = lambda x: x[None]
                    _, a, _, _, _ = agents.act(p, role, jax.tree.map(expand, h), o[None], with_time_axis(ci), r[None], jax.tree.map(expand, m), ke)
                    return a[0]

                k_envs = jax.random.split(k_opp, obs.shape[0]) if env_ids is None else fold_in_each(k_opp, env_ids)
                opp_action = jax.vmap(one_env)(opp_params, c.hidden[role], obs, cin, reset, mask, k_envs)
                action = jnp.where(learner.reshape(learner.shape + (1,) * (action.ndim - 2)), action, opp_action)
            actions[role] = action
            out[role] = (obs, cin if agents.central_critic else None, action, logp, value, mask, reset, learner)
        env_state, ts = vec.step(k_env, c.env_state, actions, env_params, env_ids)

        done = ts.done
        trans, ep_ret = {}, {}
        for role in agents.roles:
            obs, cin, action, logp, value, mask, reset, learner = out[role]
            reward = ts.reward[role]
            if reward_fn is not None:
                reward = reward + reward_fn(ts, role)
            ret = c.episode_return[role] + ts.reward[role]
            ep_ret[role] = jnp.where(done[:, None], 0.0, ret)
            n = obs.shape[1]
            bcast = lambda x: jnp.broadcast_to(x[:, None], (x.shape[0], n))
            if bootstrap_truncated:
                # only steps where some environment hits its time limit pay for V(final
                # obs); ``branch`` keeps that a branch when a population vmaps members
                final_value = branch(
                    jnp.any(ts.truncated),
                    lambda p, o, role=role: _value(agents, p, role, o),
                    lambda p, o: jnp.zeros(o.shape[:2], jnp.float32),
                    params[role], ts.info["final_obs"][role],
                )
            else:
                final_value = jnp.zeros(obs.shape[:2], jnp.float32)
            trans[role] = Transition(
                obs=obs,
                critic_in=cin,
                action=action,
                log_prob=logp,
                value=value,
                mask=mask,
                reset=reset,
                reward=reward,
                terminated=bcast(ts.terminated),
                truncated=bcast(ts.truncated),
                active=c.ts.active[role],
                learner=learner,
                final_value=final_value,
                episode_return=jnp.where(done[:, None], ret, 0.0),
                start_hash=bcast(c.start_hash) if start_hash else None,
            )
        new_hash = jnp.where(done, _obs_hash(ts), c.start_hash) if start_hash else c.start_hash
        new = EnvCarry(env_state, ts, done, hidden, ep_ret, new_hash)
        return new, trans

    carry, traj = jax.lax.scan(step, carry, jax.random.split(key, num_steps))

    gobs = _global_obs(agents, vec, carry.env_state, env_params)
    last_value = {}
    for role in agents.roles:
        obs = carry.ts.obs[role]
        reset = jnp.broadcast_to(carry.first[:, None], obs.shape[:2])
        _, _, v = agents.apply(params[role], role, carry.hidden[role], obs[None], with_time_axis(agents.critic_input(role, obs, gobs)), reset[None])
        last_value[role] = v[0]
    return carry, traj, last_value


def _value(agents, params, role, obs):
    """V(obs) for a feed-forward decentralised critic, ``obs[E, n, ...]`` -> ``[E, n]``."""
    h = agents.modules[role].initial_state(obs.shape[:2])
    _, _, v = agents.apply(params, role, h, obs[None], obs[None], jnp.zeros((1, *obs.shape[:2]), bool))
    return v[0]


def shaped_reward(name: str | None, horizon: float, steps_per_update: int, update):
    """``collect``'s ``reward_fn`` for a shaped reward: the environment's
    ``info[name]`` (a ``{role: [E, n]}`` dict or one array for every role) times a
    coefficient annealed linearly from 1 to 0 over ``horizon`` env steps, evaluated at
    ``update`` (``i32[]``, updates done) updates of ``steps_per_update`` env steps
    each; constant 1 when ``horizon`` is 0. None without a ``name``."""
    if name is None:
        return None
    coef = jnp.maximum(1.0 - update * steps_per_update / max(horizon, 1.0), 0.0) if horizon > 0 else 1.0

    def fn(ts, role):
        x = ts.info[name]
        return coef * (x[role] if isinstance(x, dict) else x)

    return fn


def check_shaped_reward(env, env_params, name: str) -> None:
    """``shaped_reward`` must name an entry of the env's ``info`` (the same keys
    after reset and step, by the env contract; checked on an abstract reset:
    nothing is compiled)."""
    info = jax.eval_shape(lambda k: env.reset(k, env_params)[1].info, jax.random.key(0))
    if name not in info:
        raise ValueError(f"shaped_reward={name!r} names no info entry of {env.name}; its info has {sorted(info)}")

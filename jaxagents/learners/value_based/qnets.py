"""Value-based pieces shared by the Q-learners (PQN here; IQL, VDN and QMIX import
them too): per-role Q-networks, exploration, and an epsilon-greedy rollout.

API (stable; the value-based learners import it)::

    QNetworkConfig(torso="mlp", hidden=(128, 128), activation="relu", layer_norm=True,
                   recurrent=False, gru_size=128, cnn_channels=(32, 32, 32), cnn_kernels=None)
    qagents = QAgents(env, network)                  # one Q-network per role
    params = qagents.init(key)                       # {role: params}
    hidden = qagents.initial_hidden(num_envs)        # {role: f32[E, n, H]}
    hidden, q = qagents.apply(params[role], role, hidden[role], obs, reset)
                                                     # obs[T, E, n, *obs], reset bool[T, E, n]
                                                     # -> q f32[T, E, n, A]
    hidden, action, 0, max_q, q = qagents.act(params[role], role, hidden[role], obs, None, reset, mask, key)
                                                     # greedy, Agents.act's contract (cross-play)
    epsilon_schedule(step, start, end, duration)     # f32[], linear, then flat at ``end``
    greedy(q, mask)                    -> i32[...]   # q[..., A], mask bool[..., A]
    masked_max(q, mask)                -> f32[...]
    uniform_legal(key, mask)           -> i32[...]
    epsilon_greedy(key, q, mask, eps)  -> i32[...]
    carry, traj, last_q = collect(qagents, vec, env_params, params, carry, key, num_steps, eps)
                                                     # traj {role: QTransition [T, E, n, ...]}

Conventions, stated once:

* **Parameter sharing.** A role's agents share one set of weights (like
  ``agents.Agents`` for the actor-critics); roles with different spaces get their own
  network. Only ``Discrete`` action spaces have Q-values.
* **Time-major.** Networks take ``[T, B..., *obs]`` and return ``[T, B..., A]``; a
  feed-forward update passes a flat sample batch as ``T = 1``. ``reset[t]`` clears a
  recurrent memory before step ``t`` (the observation at ``t`` starts an episode).
* **Masks.** ``mask`` is ``bool[..., A]`` (True = legal) or None (all legal). Illegal
  actions are excluded from the greedy choice, from the maximum, and from the
  exploratory draw (uniform over the *legal* actions). A row with no legal action
  (an inactive agent in a finished game; such samples are excluded from losses) falls
  back to all actions, so every output stays finite and in range.
* **Transitions** follow ``rollout.Transition``: ``terminated``/``truncated[t]``
  describe the step taken at ``t``; after an auto-reset ``obs[t + 1]`` already belongs
  to the next episode, so a truncated step's bootstrap is ``final_q_max[t]``, the
  maximum Q-value of the observation the episode was cut at.

LayerNorm (``layer_norm=True``, the default) normalises every layer's pre-activations
(convolutions and dense layers), so the linear head reads features of bounded norm:
what makes TD learning without a target network stable in PQN (Gallici et al. 2024).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxagents.core.branch import branch
from jaxagents.core.spaces import Discrete
from jaxagents.core.validate import check_bool, check_choice, check_positive_int
from jaxagents.core.wrappers.autoreset import fold_in_each
from jaxagents.learners.skeleton.rollout import EnvCarry
from jaxagents.nn import GRU
from jaxagents.nn.init import orthogonal
from jaxagents.nn.torsos import ACTIVATIONS, ConvSame, activation

# ------------------------------------------------------------------ networks


@dataclasses.dataclass(frozen=True)
class QNetworkConfig:
    """Architecture of one role's Q-network.

    Attributes:
        torso: ``"mlp"`` (vectors) or ``"cnn"`` (grids ``[H, W, C]``: 'SAME'
            convolutions, ``ConvSame``, then the dense layers).
        hidden: dense widths. Every layer (convolution or dense) is followed by
            a LayerNorm (``layer_norm``), then the activation: PQN's order.
        activation: ``relu`` | ``tanh`` | ``gelu`` | ``silu``.
        layer_norm: LayerNorm in every layer (PQN's stabiliser).
        recurrent: a GRU after the dense layers (memory across an episode).
        gru_size: the GRU's width.
        cnn_channels: convolution channels (``torso="cnn"``).
        cnn_kernels: their (odd) kernel sizes, one per channel entry (None: 3 x 3 each).
    """

    torso: str = "mlp"
    hidden: Sequence[int] = (128, 128)
    activation: str = "relu"
    layer_norm: bool = True
    recurrent: bool = False
    gru_size: int = 128
    cnn_channels: Sequence[int] = (32, 32, 32)
    cnn_kernels: Sequence[int] | None = None

    def __post_init__(self):
        if self.cnn_kernels is None:
            object.__setattr__(self, "cnn_kernels", (3,) * len(tuple(self.cnn_channels)))
        check_choice("network.torso", self.torso, ("mlp", "cnn"))
        check_choice("network.activation", self.activation, sorted(ACTIVATIONS))
        for name in ("hidden", "cnn_channels", "cnn_kernels"):
            v = getattr(self, name)
            if isinstance(v, (str, bytes)) or not isinstance(v, Sequence) or (name == "hidden" and not v):
                raise ValueError(f"network.{name} must be a list of positive widths, got {v!r}")
            object.__setattr__(self, name, tuple(check_positive_int(f"network.{name}[{i}]", h) for i, h in enumerate(v)))
        if len(self.cnn_kernels) != len(self.cnn_channels) or any(k % 2 == 0 for k in self.cnn_kernels):
            raise ValueError(f"network.cnn_kernels must be odd sizes, one per entry of cnn_channels={list(self.cnn_channels)}, "
                             f"got {list(self.cnn_kernels)}")
        object.__setattr__(self, "layer_norm", check_bool("network.layer_norm", self.layer_norm))
        object.__setattr__(self, "recurrent", check_bool("network.recurrent", self.recurrent))
        object.__setattr__(self, "gru_size", check_positive_int("network.gru_size", self.gru_size))


class QNetwork(nn.Module):
    """``(hidden[B..., H], obs[T, B..., *obs], reset[T, B...]) -> (hidden',
    q[T, B..., num_actions])``; ``hidden`` is ignored (and returned as is) by a
    feed-forward network."""

    cfg: QNetworkConfig
    num_actions: int
    obs_ndim: int = 1

    @nn.compact
    def __call__(self, hidden, obs, reset):
        cfg = self.cfg
        x = jnp.asarray(obs, jnp.float32)
        lead = x.shape[: x.ndim - self.obs_ndim]  # (T, B...)
        act = activation(cfg.activation)
        norm = nn.LayerNorm if cfg.layer_norm else (lambda: lambda y: y)
        if cfg.torso == "cnn" and self.obs_ndim == 3:
            x = x.reshape(-1, *x.shape[-3:])
            for c, k in zip(cfg.cnn_channels, cfg.cnn_kernels):
                x = act(norm()(ConvSame(c, k)(x)))
        x = x.reshape(-1, x.size // max(math.prod(lead), 1))  # dense layers on [samples, features]
        for width in cfg.hidden:
            x = act(norm()(nn.Dense(width, kernel_init=orthogonal(np.sqrt(2)), bias_init=nn.initializers.zeros)(x)))
        x = x.reshape(*lead, -1)
        if cfg.recurrent:
            flat = x.reshape(lead[0], -1, x.shape[-1])
            h, flat = GRU(cfg.gru_size)(hidden.reshape(-1, hidden.shape[-1]), flat, reset.reshape(lead[0], -1))
            hidden = h.reshape(hidden.shape)
            x = flat.reshape(*lead, -1)
        head = nn.Dense(self.num_actions, kernel_init=orthogonal(1.0), bias_init=nn.initializers.zeros)
        q = head(x.reshape(-1, x.shape[-1])).reshape(*lead, self.num_actions)
        return hidden, q


class QAgents:
    """Q-networks for every role of ``env``, one per role, shared by its agents.

    Args:
        env: the (unbatched) environment; every role needs a ``Discrete`` action space.
        network: ``QNetworkConfig`` (or a dict of its fields), the same for all roles
            (each role has its own weights).
    """

    def __init__(self, env, network: QNetworkConfig):
        if isinstance(network, dict):
            network = QNetworkConfig(**network)
        self.roles = dict(env.roles)
        self.network = network
        self.num_actions = {}
        self.modules = {}
        for name, role in self.roles.items():
            if not isinstance(role.action_space, Discrete):
                raise ValueError(f"Q-learning needs Discrete actions; role {name!r} has {role.action_space!r}")
            self.num_actions[name] = int(role.action_space.n)
            self.modules[name] = QNetwork(network, self.num_actions[name], obs_ndim=len(role.observation_space.shape))

    @property
    def hidden_size(self) -> int:
        """Width of the recurrent memory (1, unused, for feed-forward networks)."""
        return self.network.gru_size if self.network.recurrent else 1

    def init(self, key: jax.Array) -> dict:
        """``{role: params}`` for every role."""
        params = {}
        for k, (name, role) in zip(jax.random.split(key, len(self.roles)), self.roles.items()):
            n = role.num_agents
            obs = jnp.zeros((1, n, *role.observation_space.shape), jnp.float32)
            params[name] = self.modules[name].init(k, jnp.zeros((n, self.hidden_size)), obs, jnp.zeros((1, n), bool))
        return params

    def initial_hidden(self, num_envs: int) -> dict:
        """``{role: f32[num_envs, n, H]}`` zero memories."""
        return {r: jnp.zeros((num_envs, role.num_agents, self.hidden_size), jnp.float32) for r, role in self.roles.items()}

    def apply(self, params, role: str, hidden, obs, reset):
        """``obs[T, E, n, *obs]``, ``reset bool[T, E, n]``, ``hidden f32[E, n, H]``
        -> ``(hidden', q f32[T, E, n, A])``."""
        return self.modules[role].apply(params, hidden, obs, reset)

    # the actor-critics' ``Agents.act`` contract, so that tools written for the PPO
    # family (cross-play, ``jaxagents.evaluation``) play the greedy policy
    central_critic = False

    def act(self, params, role, hidden, obs, critic_in, reset, mask, key, per_env_keys: bool = False):
        """Greedy step of ``role``'s agents, ``obs[E, n, ...]`` -> ``(hidden, action
        i32[E, n], log_prob f32[E, n] (0: deterministic), value f32[E, n] (max legal
        Q), q f32[E, n, A])``; ``critic_in``, ``key`` and ``per_env_keys`` are unused."""
        hidden, q = self.apply(params, role, hidden, obs[None], reset[None])
        q = q[0]
        return hidden, greedy(q, mask), jnp.zeros(q.shape[:-1]), masked_max(q, mask), q


# ------------------------------------------------------------------ exploration


def epsilon_schedule(step, start, end, duration):
    """Linear from ``start`` (at ``step = 0``) to ``end`` (at ``step = duration``),
    then ``end``; any argument may be traced. ``duration <= 0`` means ``end``
    throughout."""
    step = jnp.asarray(step, jnp.float32)
    duration = jnp.asarray(duration, jnp.float32)
    frac = jnp.where(duration > 0, jnp.clip(step / jnp.maximum(duration, 1e-9), 0.0, 1.0), 1.0)
    return start + (end - start) * frac


def _legal(mask, q_shape):
    """The mask broadcast to ``q``, with all-illegal rows made all-legal."""
    if mask is None:
        return jnp.ones(q_shape, bool)
    mask = jnp.broadcast_to(jnp.asarray(mask, bool), q_shape)
    return mask | ~jnp.any(mask, axis=-1, keepdims=True)


def masked_max(q, mask=None):
    """``max_a q[..., a]`` over the legal actions: ``f32[...]``."""
    return jnp.max(jnp.where(_legal(mask, q.shape), q, -jnp.inf), axis=-1)


def greedy(q, mask=None):
    """``argmax_a q[..., a]`` over the legal actions (ties: the lowest index): ``i32[...]``."""
    return jnp.argmax(jnp.where(_legal(mask, q.shape), q, -jnp.inf), axis=-1).astype(jnp.int32)


def uniform_legal(key, mask):
    """One action per row of ``mask bool[..., A]``, uniform over its legal actions: ``i32[...]``."""
    legal = _legal(mask, jnp.shape(mask))
    return jax.random.categorical(key, jnp.where(legal, 0.0, -jnp.inf), axis=-1).astype(jnp.int32)


def epsilon_greedy(key, q, mask, eps):
    """With probability ``eps`` (a scalar, or broadcastable to ``q.shape[:-1]``) a
    uniformly random legal action, else the greedy legal one: ``i32[...]``.
    ``mask=None``: every action is legal."""
    k_explore, k_action = jax.random.split(key)
    legal = _legal(mask, q.shape)
    explore = jax.random.uniform(k_explore, q.shape[:-1]) < eps
    return jnp.where(explore, uniform_legal(k_action, legal), greedy(q, legal))


# ------------------------------------------------------------------ rollout


@struct.dataclass
class QTransition:
    """One role's samples, ``[T, E, n, ...]``.

    Attributes:
        obs: ``[T, E, n, *obs]`` observation the action was chosen from.
        action: ``i32[T, E, n]``.
        mask: ``bool[T, E, n, A]`` legal actions at ``obs`` (``mask[t + 1]`` is the
            next observation's, except across an episode end).
        reset: ``bool[T, E, n]`` ``obs`` starts an episode (clears a recurrent memory).
        reward: ``f32[T, E, n]`` (shaped reward included, see ``collect``).
        terminated, truncated: ``bool[T, E, n]`` the step at ``t`` ended the episode.
        active: ``bool[T, E, n]`` the agent's action at ``t`` was used.
        q_max: ``f32[T, E, n]`` max over legal actions of Q(``obs``) under the
            rollout's parameters.
        final_q_max: ``f32[T, E, n]`` max Q of the observation a truncated episode
            was cut at (over all actions: the auto-reset keeps no mask for it); 0
            elsewhere.
        episode_return: ``f32[T, E, n]`` the finished episode's return at the step
            that ended it (else 0), unshaped.
        global_obs: ``f32[T, E, *G]`` the environment's global state before the
            step (QMIX's mixer input; the same array in every role), or None
            unless ``collect`` was given ``global_obs``.
    """

    obs: jax.Array
    action: jax.Array
    mask: jax.Array
    reset: jax.Array
    reward: jax.Array
    terminated: jax.Array
    truncated: jax.Array
    active: jax.Array
    q_max: jax.Array
    final_q_max: jax.Array
    episode_return: jax.Array
    global_obs: jax.Array | None = None


def collect(qagents: QAgents, vec, env_params, params: dict, carry: EnvCarry, key: jax.Array, num_steps: int, eps,
            *, reward_fn=None, bootstrap_truncated: bool = True, env_ids: jax.Array | None = None, global_obs=None):
    """``num_steps`` epsilon-greedy steps of the batched environments.

    Args:
        qagents: ``QAgents``; ``params`` its ``{role: params}``.
        vec: a ``VecEnv`` (``final_obs=True`` when ``bootstrap_truncated``).
        carry: ``rollout.EnvCarry`` (``rollout.init_carry(qagents, vec, key,
            env_params)``); its ``hidden`` is ``{role: f32[E, n, H]}``.
        eps: exploration rate, a scalar (may be traced).
        reward_fn: optional ``(timestep, role) -> f32[E, n]`` added to the reward
            (annealed shaped rewards); ``episode_return`` stays unshaped.
        bootstrap_truncated: compute ``final_q_max`` from ``info["final_obs"]``
            (with the memory after the step, so recurrent networks bootstrap
            correctly too); False leaves it 0.
        env_ids: ``i32[E]`` global indices of these environments (data-parallel
            learners): the exploration draws and the environments' own keys are
            folded per environment, so a device holding a slice of the environments
            draws what one device holding all of them would (``rollout.collect``'s
            convention). None: one key per batch (the single-device draws).
        global_obs: optional ``env_state -> f32[E, *G]``, recorded before every
            step as ``QTransition.global_obs`` (the replay of QMIX stores it).

    Returns ``(carry, {role: QTransition}, last_q_max {role: f32[E, n]})``:
    ``last_q_max`` is the max over legal actions of Q of the observation after the
    window (with the carried memory).
    """

    def step(c: EnvCarry, k):
        k_env, *k_roles = jax.random.split(k, 1 + len(qagents.roles))
        actions, out, hidden = {}, {}, {}
        for kr, role in zip(k_roles, qagents.roles):
            obs, mask = c.ts.obs[role], c.ts.action_mask[role]
            reset = jnp.broadcast_to(c.first[:, None], obs.shape[:2])
            hidden[role], q = qagents.apply(params[role], role, c.hidden[role], obs[None], reset[None])
            if env_ids is None:
                action = epsilon_greedy(kr, q[0], mask, eps)
            else:
                action = jax.vmap(epsilon_greedy, (0, 0, 0, None))(fold_in_each(kr, env_ids), q[0], mask, eps)
            actions[role] = action.astype(qagents.roles[role].action_space.dtype)
            out[role] = (obs, action, mask, reset, masked_max(q[0], mask))
        g = None if global_obs is None else global_obs(c.env_state)
        env_state, ts = vec.step(k_env, c.env_state, actions, env_params, env_ids)
        done = ts.done
        trans, ep_ret = {}, {}
        for role in qagents.roles:
            obs, action, mask, reset, q_max = out[role]
            n = obs.shape[1]
            bcast = lambda x: jnp.broadcast_to(x[:, None], (x.shape[0], n))  # noqa: E731
            reward = ts.reward[role] if reward_fn is None else ts.reward[role] + reward_fn(ts, role)
            ret = c.episode_return[role] + ts.reward[role]
            ep_ret[role] = jnp.where(done[:, None], 0.0, ret)
            if bootstrap_truncated:  # skipped on the many steps where no episode is cut (a branch even under a population's vmap)
                final_q_max = branch(
                    jnp.any(ts.truncated),
                    lambda p, h, o, role=role: jnp.max(qagents.apply(p, role, h, o[None], jnp.zeros((1, *o.shape[:2]), bool))[1][0],
                                                       axis=-1),
                    lambda p, h, o: jnp.zeros(o.shape[:2], jnp.float32),
                    params[role], hidden[role], ts.info["final_obs"][role],
                )
                final_q_max = jnp.where(bcast(ts.truncated), final_q_max, 0.0)
            else:
                final_q_max = jnp.zeros(obs.shape[:2], jnp.float32)
            trans[role] = QTransition(
                obs=obs, action=action, mask=jnp.asarray(mask, bool), reset=reset, reward=reward,
                terminated=bcast(ts.terminated), truncated=bcast(ts.truncated), active=c.ts.active[role],
                q_max=q_max, final_q_max=final_q_max, episode_return=jnp.where(done[:, None], ret, 0.0), global_obs=g,
            )
        return c.replace(env_state=env_state, ts=ts, first=done, hidden=hidden, episode_return=ep_ret), trans

    carry, traj = jax.lax.scan(step, carry, jax.random.split(key, num_steps))
    last_q_max = {}
    for role in qagents.roles:
        obs = carry.ts.obs[role]
        reset = jnp.broadcast_to(carry.first[:, None], obs.shape[:2])
        _, q = qagents.apply(params[role], role, carry.hidden[role], obs[None], reset[None])
        last_q_max[role] = masked_max(q[0], carry.ts.action_mask[role])
    return carry, traj, last_q_max

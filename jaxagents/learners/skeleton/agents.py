"""The learning agents: one actor-critic per role, parameters shared by the role's
agents (IPPO), with a decentralised or centralised (MAPPO) critic.

Everything here is shape bookkeeping around ``jaxagents.nn.ActorCritic`` so the
learners can say ``agents.init(key)``, ``agents.act(...)``, ``agents.apply(...)`` and
``agents.logits_fn(params, role)`` for any environment: roles with different observation/action spaces, grid or vector
observations, discrete, multi-discrete or continuous actions.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxagents.core.spaces import Discrete
from jaxagents.nn import ActorCritic, NetworkConfig, distribution


class Agents:
    """Policies for every role of ``env``.

    Args:
        env: the (unbatched) environment; its ``roles`` fix the networks.
        network: the architecture, shared by all roles (each role has its own weights).
        central_critic: MAPPO's critic input, ``env.global_obs(state)`` plus the
            agent's one-hot index within its role, instead of the agent's observation.
    """

    def __init__(self, env, network: NetworkConfig, central_critic: bool = False):
        self.roles = dict(env.roles)
        self.network = network
        self.central_critic = bool(central_critic)
        if self.central_critic:
            try:
                shape = tuple(env.global_obs_shape)
            except AttributeError:
                try:  # derive it: trace reset + global_obs abstractly (no compile, no FLOPs)
                    shape = jax.eval_shape(lambda k: env.global_obs(env.reset(k)[0]), jax.random.key(0)).shape
                except NotImplementedError:
                    raise ValueError(
                        f"central_critic=True (MAPPO) needs env.global_obs; {type(env).__name__} has none"
                    ) from None
            self.global_obs_shape = shape
        self.modules = {}
        for name, role in self.roles.items():
            obs_ndim = len(role.observation_space.shape)
            self.modules[name] = ActorCritic(
                network,
                role.action_space,
                obs_ndim=obs_ndim,
                critic_obs_ndim=1 if self.central_critic else obs_ndim,
            )

    # ------------------------------------------------------------------ params
    def init(self, key: jax.Array) -> dict:
        """``{role: params}`` for every role."""
        params = {}
        for k, (name, role) in zip(jax.random.split(key, len(self.roles)), self.roles.items()):
            # one step of one env's n agents: [T=1, n, ...] (the central critic's input
            # has an agent axis, so a recurrent critic's memory must have one too)
            n = role.num_agents
            obs = jnp.zeros((1, n, *role.observation_space.shape), jnp.float32)
            cin = self.critic_input(name, obs, jnp.zeros((1, *self.global_obs_shape)) if self.central_critic else None)
            h = self.modules[name].initial_state((n,))
            params[name] = self.modules[name].init(k, h, obs, cin, jnp.zeros((1, n), bool))
        return params

    def initial_hidden(self, num_envs: int) -> dict:
        """``{role: (h_actor, h_critic)}``, each ``f32[num_envs, n, H]``."""
        return {
            name: self.modules[name].initial_state((num_envs, role.num_agents)) for name, role in self.roles.items()
        }

    # ------------------------------------------------------------------ inputs
    def critic_input(self, role: str, obs: jax.Array, global_obs: jax.Array | None) -> jax.Array | None:
        """IPPO: ``None``, the critic reads the agent's own ``obs`` (and the network
        computes both streams' first layers as one product). MAPPO: ``global_obs[..., G]``
        broadcast to the role's agents, with the agent's one-hot id appended: ``[..., n,
        G + n]``."""
        if not self.central_critic:
            return None
        n = self.roles[role].num_agents
        g = jnp.asarray(global_obs, jnp.float32).reshape(*global_obs.shape[: global_obs.ndim - len(self.global_obs_shape)], -1)
        g = jnp.broadcast_to(g[..., None, :], (*g.shape[:-1], n, g.shape[-1]))
        ids = jnp.broadcast_to(jnp.eye(n, dtype=jnp.float32), (*g.shape[:-2], n, n))
        return jnp.concatenate([g, ids], axis=-1)

    # ------------------------------------------------------------------ policy
    def apply(self, params, role, hidden, obs, critic_in, reset):
        """``obs[T, E, n, ...]`` -> ``(hidden, actor_out[T, E, n, A], value[T, E, n])``."""
        return self.modules[role].apply(params, hidden, obs, critic_in, reset)

    def distribution(self, params, role, actor_out, mask):
        """The action distribution of ``role`` from ``actor_out`` (``[..., A]``, from ``apply``):
        masked categorical for ``Discrete`` (``mask`` ``bool[..., A]``; ignored otherwise),
        independent categoricals for ``MultiDiscrete``, a Gaussian with the learned
        ``log_std`` of ``params`` for ``Box`` (see ``jaxagents.nn.distribution``)."""
        space = self.roles[role].action_space
        log_std = params["params"].get("log_std") if not isinstance(space, Discrete) else None
        return distribution(space, actor_out, log_std, mask if isinstance(space, Discrete) else None)

    def act(self, params, role, hidden, obs, critic_in, reset, mask, key, per_env_keys: bool = False):
        """One step for all envs and agents of ``role``: ``obs[E, n, ...]`` ->
        ``(hidden, action[E, n, ...], log_prob[E, n], value[E, n], actor_out)``.
        ``key``: one key for the batch, or with ``per_env_keys`` a key per environment
        (``[E]``), so each environment's actions depend on its own key only (data-
        parallel rollouts draw the same actions however the batch is split)."""
        hidden, out, value = self.apply(params, role, hidden, obs[None], with_time_axis(critic_in), reset[None])
        dist = self.distribution(params, role, out[0], mask)
        if per_env_keys:
            sample = lambda o, m, k: self.distribution(params, role, o, m).sample(seed=k)  # noqa: E731
            action = jax.vmap(sample)(out[0], mask, key)
        else:
            action = dist.sample(seed=key)
        return hidden, action, dist.log_prob(action), value[0], out[0]

    def act_all(self, params, hidden, obs, masks, key):
        """Sampled actions of every role at one step, without a critic (evaluation of
        trained policies): ``params``/``hidden``/``obs``/``masks`` are ``{role: ...}``
        with ``obs[E, n, ...]``; returns ``(hidden, {role: action[E, n, ...]})``."""
        new_hidden, actions = {}, {}
        for k, role in zip(jax.random.split(key, len(self.roles)), self.roles):
            reset = jnp.zeros(obs[role].shape[:2], bool)
            new_hidden[role], actions[role], _, _, _ = self.act(params[role], role, hidden[role], obs[role], None,
                                                                reset, masks[role], k)
        return new_hidden, actions

    def logits_fn(self, params, role):
        """A feed-forward policy as ``obs[S, D] -> actor_out[S, A]`` (for exact
        evaluation over information states)."""

        def fn(obs):
            obs = jnp.asarray(obs, jnp.float32)[None, :, None]
            cin = obs if not self.central_critic else jnp.zeros((*obs.shape[:-1], int(np.prod(self.global_obs_shape)) + 1))
            h = self.modules[role].initial_state(obs.shape[1:2] + (1,))
            _, out, _ = self.apply(params, role, h, obs, cin, jnp.zeros(obs.shape[:3], bool))
            return out[0, :, 0]

        return fn


def with_time_axis(x: jax.Array | None) -> jax.Array | None:
    """``x[None]``: a unit time axis; ``None`` (IPPO's critic input) stays ``None``."""
    return None if x is None else x[None]

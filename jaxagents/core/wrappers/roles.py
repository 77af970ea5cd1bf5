"""Reshaping wrappers for learners: flat observations, and roles merged into one
policy group with a role id (self-play with one shared network)."""

from __future__ import annotations

import dataclasses
import math

import jax.numpy as jnp
import numpy as np

from jaxagents.core.spaces import Box, Discrete
from jaxagents.core.types import Role
from jaxagents.core.wrappers.base import Wrapper


def _flat_box(space) -> Box:
    if not isinstance(space, Box):
        raise TypeError(f"can only flatten Box observation spaces, got {space!r}")
    size = math.prod(space.shape)
    return Box(space.low.reshape(size), space.high.reshape(size), (size,), space.dtype)


class FlattenObservation(Wrapper):
    """Observations ``[n, *shape]`` become ``[n, prod(shape)]`` (row-major)."""

    def __init__(self, env):
        super().__init__(env)
        self.roles = {
            k: dataclasses.replace(r, observation_space=_flat_box(r.observation_space)) for k, r in env.roles.items()
        }

    @staticmethod
    def flatten(obs):
        """One role's observations ``[n, *shape]`` -> ``[n, prod(shape)]``."""
        return obs.reshape(obs.shape[0], -1)

    def _flat(self, ts):
        return ts.replace(obs={k: self.flatten(v) for k, v in ts.obs.items()})

    def inner_policies(self, policies):
        return {r: (lambda obs, fn=fn: fn(self.flatten(obs))) for r, fn in policies.items()}

    def reset_env(self, key, params):
        """The wrapped env's ``reset``, observations flattened to ``[n, prod(shape)]``."""
        state, ts = self.env.reset(key, params)
        return state, self._flat(ts)

    def step_env(self, key, state, actions, params):
        """The wrapped env's ``step``, observations flattened to ``[n, prod(shape)]``."""
        state, ts = self.env.step(key, state, actions, params)
        return state, self._flat(ts)


class MergeRoles(Wrapper):
    """Concatenate roles along the agent axis so one policy can act for all of them.

    Args:
        env: an environment whose merged roles have 1-D ``Box`` observations (wrap in
            ``FlattenObservation`` first) and ``Discrete`` actions.
        groups: ``{new_role: [old_role, ...]}``; roles not named stay as they are.
            Default: every role into one role called ``"agents"``.
        role_id: append a one-hot of the agent's original role (within its group) to
            its observation, so a shared network can condition on it.

    Observations are zero-padded to the largest size in the group and cast to
    float32; action sets are padded to the largest ``n`` with the padding actions
    masked illegal (a padded action that is taken anyway reaches the inner env as an
    out-of-range action, with that env's documented effect). Agent order within a
    group follows the order of ``groups[new_role]``. ``role_slices[new_role][old]``
    gives each original role's slice of the merged agent axis.
    """

    def __init__(self, env, groups: dict[str, list[str]] | None = None, role_id: bool = True):
        super().__init__(env)
        if groups is None:
            groups = {"agents": list(env.roles)}
        named = [r for g in groups.values() for r in g]
        unknown = sorted(set(named) - set(env.roles))
        if unknown:
            raise ValueError(f"MergeRoles: groups name unknown roles {unknown}; roles are {sorted(env.roles)}")
        if len(named) != len(set(named)):
            raise ValueError("MergeRoles: a role appears in more than one group")
        clash = sorted(set(groups) & (set(env.roles) - set(named)))
        if clash:
            raise ValueError(f"MergeRoles: new role names {clash} clash with roles that are not merged")
        self.groups = {g: list(rs) for g, rs in groups.items()}
        self.role_id = bool(role_id)
        self.role_slices: dict[str, dict[str, slice]] = {}
        self._obs_dim: dict[str, int] = {}
        self._n_actions: dict[str, int] = {}
        roles = {k: r for k, r in env.roles.items() if k not in named}
        for g, members in self.groups.items():
            obs_dims, n_acts, start = [], [], 0
            self.role_slices[g] = {}
            for m in members:
                r = env.roles[m]
                if not isinstance(r.observation_space, Box) or len(r.observation_space.shape) != 1:
                    raise TypeError(
                        f"MergeRoles: role {m!r} needs a 1-D Box observation space "
                        f"(wrap the env in FlattenObservation), got {r.observation_space!r}"
                    )
                if not isinstance(r.action_space, Discrete):
                    raise TypeError(f"MergeRoles: role {m!r} needs a Discrete action space, got {r.action_space!r}")
                obs_dims.append(r.observation_space.shape[0])
                n_acts.append(r.action_space.n)
                self.role_slices[g][m] = slice(start, start + r.num_agents)
                start += r.num_agents
            dim = max(obs_dims) + (len(members) if self.role_id else 0)
            low = np.full(dim, -np.inf)
            high = np.full(dim, np.inf)
            self._obs_dim[g], self._n_actions[g] = max(obs_dims), max(n_acts)
            roles[g] = Role(start, Box(low, high, (dim,), jnp.float32), Discrete(max(n_acts)),
                            always_active=all(env.roles[m].always_active for m in members))
        self.roles = roles

    def encode_obs(self, group: str, member: str, obs):
        """Observations ``[S, d]`` of the original role ``member`` -> the group's
        format ``f32[S, D]``: cast to float32, zero-padded to the group's largest
        size, then (with ``role_id``) the one-hot of ``member`` within the group."""
        members = self.groups[group]
        o = jnp.asarray(obs).astype(jnp.float32)
        o = jnp.pad(o, ((0, 0), (0, self._obs_dim[group] - o.shape[1])))
        if self.role_id:
            onehot = jnp.zeros((o.shape[0], len(members)), jnp.float32).at[:, members.index(member)].set(1.0)
            o = jnp.concatenate([o, onehot], axis=1)
        return o

    def _merge(self, ts):
        obs, mask, reward, active = {}, {}, {}, {}
        named = set()
        for g, members in self.groups.items():
            named.update(members)
            obs[g] = jnp.concatenate([self.encode_obs(g, m, ts.obs[m]) for m in members], 0)
            mask[g] = jnp.concatenate(
                [jnp.pad(ts.action_mask[m], ((0, 0), (0, self._n_actions[g] - ts.action_mask[m].shape[1]))) for m in members], 0
            )
            reward[g] = jnp.concatenate([ts.reward[m] for m in members], 0)
            active[g] = jnp.concatenate([ts.active[m] for m in members], 0)
        for k in ts.obs:
            if k not in named:
                obs[k], mask[k], reward[k], active[k] = ts.obs[k], ts.action_mask[k], ts.reward[k], ts.active[k]
        return ts.replace(obs=obs, action_mask=mask, reward=reward, active=active)

    def outer_actions(self, actions):
        """The wrapped env's ``{role: action[n]}`` -> merged groups (concatenated in
        ``groups`` order, the layout of ``role_slices``)."""
        out = {k: v for k, v in actions.items() if k in self.roles}
        for g, members in self.groups.items():
            out[g] = jnp.concatenate([jnp.asarray(actions[m], jnp.int32) for m in members], 0)
        return out

    def inner_policies(self, policies):
        """``{group: logits_fn}`` on merged observations -> ``{member: logits_fn}`` on
        each original role's observations, restricted to that role's actions."""
        out = {k: v for k, v in policies.items() if k not in self.groups}
        for g, members in self.groups.items():
            if g not in policies:
                continue
            for m in members:
                n = self.env.roles[m].action_space.n
                out[m] = lambda obs, g=g, m=m, n=n: policies[g](self.encode_obs(g, m, obs))[..., :n]
        return out

    def _split(self, actions):
        out = {k: v for k, v in actions.items() if k not in self.groups}
        for g, members in self.groups.items():
            for m in members:
                out[m] = actions[g][self.role_slices[g][m]]
        return out

    def reset_env(self, key, params):
        """The wrapped env's ``reset`` with each group's ``obs``, ``action_mask``, ``reward`` and
        ``active`` concatenated along the agent axis (observations encoded by ``encode_obs``,
        masks padded with illegal actions)."""
        state, ts = self.env.reset(key, params)
        return state, self._merge(ts)

    def step_env(self, key, state, actions, params):
        """Split each group's ``actions`` ``[n_group]`` back into its original roles (slices of
        ``role_slices``), step the wrapped env and merge the time step as ``reset_env`` does."""
        state, ts = self.env.step(key, state, self._split(actions), params)
        return state, self._merge(ts)

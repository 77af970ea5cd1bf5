"""``to_jaxmarl``: a jaxagents ``Env`` through JaxMARL's per-agent dict API, so JaxMARL
code and wrappers accept our environments. ``jaxmarl`` stays optional: when it is not
installed the view still works, with jaxagents spaces and no ``MultiAgentEnv`` base.

A ``JaxMARLView`` (a subclass of JaxMARL's ``MultiAgentEnv`` when jaxmarl is installed)
with ``agents``, ``num_agents``, ``observation_space(agent)``/``action_space(agent)``,
``reset(key) -> (obs, state)``, ``step_env`` (no auto-reset), ``step`` with JaxMARL's
auto-reset semantics, ``get_obs(state)`` and ``get_avail_actions(state)``. Its state,
``JaxMARLViewState(env_state, timestep)``, keeps the last ``TimeStep`` because our
observations and masks are not functions of the env state alone. Every agent's done
equals ``dones["__all__"]`` (our contract has no per-agent done, so a round trip
does not reproduce SMAX's dead-unit dones), and ``infos`` adds ``"terminated"`` and
``"truncated"`` to the ``TimeStep.info``. ``to_jaxmarl(from_jaxmarl(x))`` keeps
``x``'s agent names and, from the same keys and actions, ``x.step``'s observations,
rewards, ``__all__`` dones and masks.
"""

from __future__ import annotations

import functools
from typing import Any, Mapping

import jax
import jax.numpy as jnp
from flax import struct

from jaxagents.compat.jaxmarl.convert import _jaxmarl_base, space_to_jaxmarl
from jaxagents.core.env import Env
from jaxagents.core.types import TimeStep

__all__ = ["to_jaxmarl", "JaxMARLViewState"]


@struct.dataclass
class JaxMARLViewState:
    """State of a ``to_jaxmarl`` view: our env's state and its last ``TimeStep`` (the
    observations and masks that JaxMARL's ``get_obs``/``get_avail_actions`` return)."""

    env_state: Any
    timestep: TimeStep


class _ViewMixin:
    """JaxMARL's dict API over a jaxagents ``Env``; combined with ``MultiAgentEnv``
    when jaxmarl is installed (see ``_view_class``)."""

    def __init__(self, env: Env, params=None):
        if not isinstance(env, Env):
            raise TypeError(f"to_jaxmarl needs a jaxagents Env, got {type(env).__name__}")
        self.env = env
        self.params = env.validate_params(params)
        # Keep the original JaxMARL names when this is (a wrapper of) a from_jaxmarl adapter.
        known = getattr(env, "role_agents", None)
        if isinstance(known, Mapping) and {k: len(v) for k, v in known.items()} == {
            k: r.num_agents for k, r in env.roles.items()
        }:
            self.role_agents = {k: list(known[k]) for k in env.roles}
        else:
            self.role_agents = {k: [f"{k}_{i}" for i in range(r.num_agents)] for k, r in env.roles.items()}
        self.agents = [a for members in self.role_agents.values() for a in members]
        if len(set(self.agents)) != len(self.agents):
            raise ValueError(f"to_jaxmarl: agent names collide: {self.agents}")
        self.num_agents = len(self.agents)
        self.observation_spaces = {}
        self.action_spaces = {}
        for k, members in self.role_agents.items():
            for a in members:
                self.observation_spaces[a] = space_to_jaxmarl(env.roles[k].observation_space)
                self.action_spaces[a] = space_to_jaxmarl(env.roles[k].action_space)

    # per-role arrays <-> per-agent dicts
    def _split(self, per_role: Mapping) -> dict:
        return {a: per_role[k][i] for k, members in self.role_agents.items() for i, a in enumerate(members)}

    def _join(self, per_agent: Mapping) -> dict:
        return {k: jnp.stack([jnp.asarray(per_agent[a]) for a in members]) for k, members in self.role_agents.items()}

    @functools.partial(jax.jit, static_argnums=0)
    def reset(self, key):
        """Returns ``({agent: obs}, JaxMARLViewState)``."""
        env_state, ts = self.env.reset(key, self.params)
        return self._split(ts.obs), JaxMARLViewState(env_state, ts)

    @functools.partial(jax.jit, static_argnums=0)
    def step_env(self, key, state, actions):
        """One step without auto-reset: ``(obs, state, rewards, dones, infos)``, dicts keyed
        by agent; ``dones`` adds ``"__all__"``, every agent's done equals it; ``infos`` is
        the ``TimeStep.info`` plus ``"terminated"``/``"truncated"`` (``bool[]``)."""
        env_state, ts = self.env.step(key, state.env_state, self._join(actions), self.params)
        done = ts.done
        dones = {a: done for a in self.agents}
        dones["__all__"] = done
        infos = {**ts.info, "terminated": ts.terminated, "truncated": ts.truncated}
        return self._split(ts.obs), JaxMARLViewState(env_state, ts), self._split(ts.reward), dones, infos

    @functools.partial(jax.jit, static_argnums=0)
    def step(self, key, state, actions, reset_state=None):
        """JaxMARL's ``step``: ``step_env``, then a reset (to ``reset_state`` if given) when
        ``dones["__all__"]``; the key is split into step and reset keys as JaxMARL does."""
        key, key_reset = jax.random.split(key)
        obs, new, rewards, dones, infos = self.step_env(key, state, actions)

        def reset(_):
            if reset_state is None:
                return self.reset(key_reset)
            return self.get_obs(reset_state), reset_state

        # cond, not select: an unbatched env only pays for a reset when an episode ends
        # (under vmap it becomes the select JaxMARL uses).
        obs, new = jax.lax.cond(dones["__all__"], reset, lambda _: (obs, new), None)
        return obs, new, rewards, dones, infos

    def get_obs(self, state):
        """``{agent: obs}`` of ``state``."""
        return self._split(state.timestep.obs)

    @functools.partial(jax.jit, static_argnums=0)
    def get_avail_actions(self, state):
        """``{agent: bool[n_actions]}`` legal actions in ``state``."""
        return self._split(state.timestep.action_mask)

    def observation_space(self, agent: str):
        return self.observation_spaces[agent]

    def action_space(self, agent: str):
        return self.action_spaces[agent]

    @property
    def agent_classes(self) -> dict:
        """``{role: [agent names]}``."""
        return {k: list(v) for k, v in self.role_agents.items()}

    @property
    def name(self) -> str:
        return self.env.name

    def __repr__(self):
        return f"JaxMARLView({self.env!r})"


@functools.lru_cache(maxsize=None)
def _view_class() -> type:
    MultiAgentEnv, _ = _jaxmarl_base()
    bases = (_ViewMixin,) if MultiAgentEnv is None else (_ViewMixin, MultiAgentEnv)
    cls = type("JaxMARLView", bases, {"__module__": __name__, "__doc__": _ViewMixin.__doc__})
    return cls


def __getattr__(name):
    # The class exists once jaxmarl's presence is known; also lets pickle find it.
    if name == "JaxMARLView":
        return _view_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def to_jaxmarl(env: Env, params=None):
    """Expose a jaxagents ``Env`` with JaxMARL's per-agent dict API.

    Args:
        env: any jaxagents ``Env`` (wrappers included).
        params: env params used by every call (default ``env.default_params()``).

    Returns:
        a ``JaxMARLView``, a JaxMARL ``MultiAgentEnv`` when jaxmarl is installed.
        Agents are named ``f"{role}_{i}"`` (or keep their JaxMARL names when ``env``
        came from ``from_jaxmarl``); spaces are JaxMARL spaces when jaxmarl is
        installed, jaxagents ones otherwise.
    """
    return _view_class()(env, params)

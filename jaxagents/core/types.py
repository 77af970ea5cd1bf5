"""The data that crosses the environment/learner boundary: ``Role`` and ``TimeStep``."""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from jaxagents.core.spaces import Discrete, Space
from jaxagents.core.validate import check_positive_int

PyTree = Any
RoleDict = dict  # {role_name: array with a leading axis of that role's agent count}


@dataclasses.dataclass(frozen=True)
class Role:
    """A group of agents that share observation and action spaces (and usually a policy).

    Attributes:
        num_agents: how many agents play this role (the leading axis of every
            per-role array).
        observation_space: one agent's observation space.
        action_space: one agent's action space.
        always_legal: a static promise that every action of every agent of this
            role is legal at every step (its ``action_mask`` is all True). Consumers
            may then skip reading the mask: with 10^6 agents the mask is ~10 MB per
            step, and ``random_actions`` reads it every step otherwise. The
            conformance suite checks the promise on rollouts.
        always_active: a static promise that every agent of this role acts at every
            step (its ``active`` is all True: no turns, no agents sitting out).
            The PPO family then trains the role without sample weights (a plain
            mean; with ``always_legal`` also without masks), ~3% of a one-member
            IPPO update on Overcooked. Checked like ``always_legal``.
    """

    num_agents: int
    observation_space: Space
    action_space: Space
    always_legal: bool = False
    always_active: bool = False

    def __post_init__(self):
        object.__setattr__(self, "num_agents", check_positive_int("Role: num_agents", self.num_agents))
        for name in ("observation_space", "action_space"):
            if not isinstance(getattr(self, name), Space):
                raise TypeError(f"Role: {name} must be a jaxagents Space, got {getattr(self, name)!r}")
        for name in ("always_legal", "always_active"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"Role: {name} must be a bool, got {getattr(self, name)!r}")

    @property
    def num_actions(self) -> int | None:
        """Discrete action count, or None for non-discrete action spaces."""
        return self.action_space.n if isinstance(self.action_space, Discrete) else None

    @property
    def mask_shape(self) -> tuple[int, ...]:
        """Shape of this role's ``action_mask``: ``(n_agents, n_actions)``, or
        ``(n_agents, 1)`` for non-discrete action spaces (always True)."""
        return (self.num_agents, self.num_actions or 1)


@struct.dataclass
class TimeStep:
    """What an environment returns from ``reset`` and ``step``.

    Every dict is keyed by role name; its values carry a leading axis equal to the
    role's agent count ``n``.

    Attributes:
        obs: ``{role: [n, *obs_shape]}`` observations.
        reward: ``{role: f32[n]}`` rewards of the transition that produced this step
            (zeros after ``reset``).
        terminated: ``bool[]`` the task is over; do not bootstrap from ``obs``.
        truncated: ``bool[]`` a time limit cut the episode; bootstrap.
        action_mask: ``{role: bool[n, n_actions]}`` legal actions for the *next*
            step (all True where an env has no illegal actions).
        active: ``{role: bool[n]}`` whose action the next step uses (turn-based games);
            learners drop inactive agents' samples from every loss.
        info: ``{str: array}`` jit-safe metrics; same keys after reset and step.
    """

    obs: RoleDict
    reward: RoleDict
    terminated: jax.Array
    truncated: jax.Array
    action_mask: RoleDict
    active: RoleDict
    info: dict

    @property
    def done(self) -> jax.Array:
        """Episode ended, either way (``terminated | truncated``)."""
        return jnp.logical_or(self.terminated, self.truncated)

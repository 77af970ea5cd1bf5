"""The environment contract: spaces, roles, time steps, the Env base class, the
registry and wrappers. Imports no environment and no algorithm."""

from jaxagents.core.env import EmptyParams, Env, random_actions
from jaxagents.core.registry import list_envs, make, register, spec
from jaxagents.core.spaces import Box, Discrete, MultiDiscrete, Space
from jaxagents.core.types import Role, TimeStep

__all__ = [
    "Box", "Discrete", "MultiDiscrete", "Space", "Role", "TimeStep", "Env", "EmptyParams",
    "random_actions", "make", "register", "list_envs", "spec",
]

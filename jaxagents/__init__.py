"""jaxagents: JAX-native multi-agent reinforcement learning.

Quick use::

    import jax, jaxagents
    env = jaxagents.make("tic_tac_toe")
    state, ts = env.reset(jax.random.key(0))
"""

from jaxagents.core import (
    Box,
    Discrete,
    EmptyParams,
    Env,
    MultiDiscrete,
    Role,
    Space,
    TimeStep,
    list_envs,
    make,
    random_actions,
    register,
    spec,
)
from jaxagents.core.wrappers import AutoReset, EpisodeStats, FlattenObservation, MergeRoles, ScriptedRoles, VecEnv

__version__ = "0.1.0"

__all__ = [
    "Box", "Discrete", "MultiDiscrete", "Space", "Role", "TimeStep", "Env", "EmptyParams",
    "random_actions", "make", "register", "list_envs", "spec",
    "AutoReset", "VecEnv", "EpisodeStats", "FlattenObservation", "MergeRoles", "ScriptedRoles",
]

"""Wrappers: auto-reset (per environment and batched), episode statistics, the
observation/role reshaping that learners need, and scripted roles."""

from jaxagents.core.wrappers.autoreset import AutoReset, VecEnv
from jaxagents.core.wrappers.base import Wrapper
from jaxagents.core.wrappers.roles import FlattenObservation, MergeRoles
from jaxagents.core.wrappers.scripted import ScriptedRoles, ScriptedState
from jaxagents.core.wrappers.stats import EpisodeStats, EpisodeStatsState

__all__ = [
    "AutoReset",
    "VecEnv",
    "Wrapper",
    "FlattenObservation",
    "MergeRoles",
    "ScriptedRoles",
    "ScriptedState",
    "EpisodeStats",
    "EpisodeStatsState",
]

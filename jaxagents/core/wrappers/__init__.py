"""Wrappers: auto-reset (per environment and batched), episode statistics, and the
observation/role reshaping that learners need."""

from jaxagents.core.wrappers.autoreset import AutoReset, VecEnv
from jaxagents.core.wrappers.base import Wrapper
from jaxagents.core.wrappers.roles import FlattenObservation, MergeRoles
from jaxagents.core.wrappers.stats import EpisodeStats, EpisodeStatsState

__all__ = [
    "AutoReset",
    "VecEnv",
    "Wrapper",
    "FlattenObservation",
    "MergeRoles",
    "EpisodeStats",
    "EpisodeStatsState",
]

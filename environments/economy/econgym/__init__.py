"""EconGym's economic society in JAX: 11 role types composed by config (``env.py``)."""

from jaxagents_environments.economy.econgym.env import Society
from jaxagents_environments.economy.econgym.params import (
    BANK_TYPES, GOVERNMENT_TYPES, HOUSEHOLD_TYPES, MARKET_TYPES, OBJECTIVES, SocietyConfig, SocietyParams,
    SocietyState,
)

__all__ = ["Society", "SocietyConfig", "SocietyParams", "SocietyState", "HOUSEHOLD_TYPES", "GOVERNMENT_TYPES",
           "BANK_TYPES", "MARKET_TYPES", "OBJECTIVES"]

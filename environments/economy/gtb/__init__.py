"""Gather-trade-build on a map (the AI Economist's `simple_wood_and_stone`): see ``env``."""

from jaxagents_environments.economy.gtb.dynamics import Draws
from jaxagents_environments.economy.gtb.env import GTB
from jaxagents_environments.economy.gtb.params import GTBParams, GTBState

__all__ = ["GTB", "GTBParams", "GTBState", "Draws"]

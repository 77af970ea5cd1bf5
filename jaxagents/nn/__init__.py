"""Networks: torsos (MLP, CNN, GRU), actor-critic, masked action distributions."""

from jaxagents.nn.policy import MASKED_LOGIT, ActorCritic, NetworkConfig, action_dim, distribution
from jaxagents.nn.torsos import CNN, GRU, MLP

__all__ = ["ActorCritic", "NetworkConfig", "MLP", "CNN", "GRU", "distribution", "action_dim", "MASKED_LOGIT"]

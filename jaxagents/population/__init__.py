"""Populations of any learner: stacked members with their own keys and traced
hyper-parameters (``core``), population-based training inside the compiled program
(``pbt``), members sharded over a device mesh (``mesh``)."""

from jaxagents.population.core import Population, PopulationState
from jaxagents.population.mesh import make_mesh
from jaxagents.population.pbt import PBTConfig, exploit_explore

__all__ = ["Population", "PopulationState", "PBTConfig", "make_mesh", "exploit_explore"]

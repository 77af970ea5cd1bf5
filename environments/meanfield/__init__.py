"""Mean-field social simulation: large populations in two views (agents and histograms).

* ``Opinion`` (``opinion.py``): adoption / opinion dynamics with social influence over
  the population or a fixed-degree network (``graphs.py``); DeGroot, Hegselmann-Krause
  and Granovetter policies in ``opinion_policies.py``.
* ``Epidemic`` (``epidemic.py``): SIR/SEIR where agents choose their contact level.
* ``CrowdModelling`` (``crowd.py``): OpenSpiel's 1-D and 2-D crowd-modelling game.
* ``solvers.py``: exploitability, fictitious play, online mirror descent, the social
  optimum and the price of anarchy, over the distributional view.
* ``policy_eval.py``: an agent-view policy (a network) as the distributional view's
  tabular policy along its own flow, and its exact exploitability.

``base.py`` describes the two views and the tabular model every environment provides.
"""

from jaxagents_environments.meanfield.base import ROLE, DistState, MeanFieldEnv, check_distribution, normalize_policy
from jaxagents_environments.meanfield.crowd import CrowdModelling, CrowdParams, CrowdState
from jaxagents_environments.meanfield.epidemic import Epidemic, EpidemicParams, EpidemicState
from jaxagents_environments.meanfield.opinion import Opinion, OpinionParams, OpinionState
from jaxagents_environments.meanfield.policy_eval import policy_exploitability, policy_table

__all__ = [
    "ROLE", "DistState", "MeanFieldEnv", "check_distribution", "normalize_policy",
    "CrowdModelling", "CrowdParams", "CrowdState", "Epidemic", "EpidemicParams", "EpidemicState",
    "Opinion", "OpinionParams", "OpinionState", "policy_table", "policy_exploitability",
]

"""Evaluation tools: exact exploitability of small two-player games (more to come:
rollouts, cross-play, renders).

``jaxagents.evaluation.exploitability`` is the *module* (its function of the same
name is deliberately not re-exported here, so that the module is never shadowed):

    from jaxagents.evaluation.exploitability import exploitability, kuhn_tree
"""

from jaxagents.evaluation import exploitability
from jaxagents.evaluation.exploitability import (
    GameTree,
    best_response,
    build_game_tree,
    kuhn_tree,
    leduc_tree,
    nash_conv,
    normalize_policy,
    policy_from_fn,
    policy_value,
    uniform_policy,
)

__all__ = [
    "exploitability", "GameTree", "build_game_tree", "kuhn_tree", "leduc_tree", "normalize_policy",
    "uniform_policy", "policy_from_fn", "policy_value", "best_response", "nash_conv",
]

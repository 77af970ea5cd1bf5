"""Evaluation tools that know no particular game: exact exploitability of small
two-player games from a game tree the game builds (``env.game_tree()``); cross-play
matrices of K policies (``jaxagents.evaluation.crossplay``) and rliable's interquartile
means and stratified bootstrap intervals (``jaxagents.evaluation.intervals``).

``jaxagents.evaluation.exploitability`` is the *module* (its function of the same
name is deliberately not re-exported here, so that the module is never shadowed):

    from jaxagents.evaluation.exploitability import exploitability
    tree = jaxagents.make("kuhn_poker").game_tree()
"""

from jaxagents.evaluation import exploitability
from jaxagents.evaluation.exploitability import (
    best_response,
    evaluator,
    nash_conv,
    normalize_policy,
    policy_from_fn,
    policy_value,
    uniform_policy,
)
from jaxagents.evaluation.game_tree import GameTree, build_game_tree

__all__ = [
    "exploitability", "GameTree", "build_game_tree", "evaluator", "normalize_policy",
    "uniform_policy", "policy_from_fn", "policy_value", "best_response", "nash_conv",
]

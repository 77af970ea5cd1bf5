"""The evaluations a language self-play run reports for each of its games.

``game_evaluations(policy, envs, env_params, config)`` returns ``{name: fn(params, key)
-> {metric: f32[]}}``: for every game of the run, the measures its text view offers
(exact exploitability where the game has a game tree, results against scripted players
where it has them); the learner reports them under ``eval/{name}/...``.
"""

from __future__ import annotations


def game_evaluations(policy, envs, env_params, config) -> dict:
    """``{name: fn(params, key) -> metrics}`` for the games ``envs`` played by ``policy``
    (a ``LanguagePolicy``) with ``config``'s prompt and sampling settings."""
    return {}

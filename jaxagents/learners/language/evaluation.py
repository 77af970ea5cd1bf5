"""The evaluations a language self-play run reports for each of its games.

``game_evaluations(policy, envs, env_params, config)`` returns ``{name: fn(params, key)
-> {metric: f32[]}}``: for every game of the run, the measures its text view offers
through its capabilities, reported by the learner under ``eval/{name}/...``:

* ``exact_game()`` (text Kuhn poker, text Leduc hold'em) with constrained replies: the
  exact exploitability and NashConv of the model's move distribution at the run's
  temperature (``jaxagents.lm.evaluate.make_exact_evaluator``: every information state
  rendered to its prompt, the legal moves' probabilities read off one forward pass),
  and of its greedy policy (``greedy_exploitability``), plus each seat's expected payoff
  in self-play.
"""

from __future__ import annotations

from jaxagents.lm.generate import Sampling


def game_evaluations(policy, envs, env_params, config) -> dict:
    """``{name: fn(params, key) -> metrics}`` for the games ``envs`` played by ``policy``
    (a ``LanguagePolicy``) with ``config``'s prompt and sampling settings; one name per
    game that offers an evaluation (its registered id's class name)."""
    from jaxagents.lm.evaluate import make_exact_evaluator

    out = {}
    for i, (env, tables) in enumerate(zip(envs, policy.tables)):
        name = type(env).__name__ if i == 0 else f"{type(env).__name__}{i}"
        if not (config.constrained and hasattr(env, "exact_game")):
            continue
        kw = dict(prompt=policy.prompt, prompt_len=config.prompt_len)
        sampled = make_exact_evaluator(policy.cfg, env, tables, **kw,
                                       sampling=Sampling(config.max_new_tokens, temperature=config.temperature))
        greedy = make_exact_evaluator(policy.cfg, env, tables, **kw,
                                      sampling=Sampling(config.max_new_tokens, temperature=0.0))

        def evaluate(params, key, sampled=sampled, greedy=greedy):
            m = sampled(params)
            return {"exploitability": m["exploitability"], "nash_conv": m["nash_conv"],
                    "value_seat0": m["value"][0], "greedy_exploitability": greedy(params)["exploitability"]}

        out[name] = evaluate
    return out

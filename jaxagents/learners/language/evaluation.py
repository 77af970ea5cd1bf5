"""The evaluations a language self-play run reports for each of its games.

``game_evaluations(policy, envs, env_params, config)`` returns ``{name: fn(params, key)
-> {metric: f32[]}}``: for every game of the run, the measures its text view offers
through its capabilities, reported by the learner under ``eval/{name}/...``:

* ``exact_game()`` (text Kuhn poker, text Leduc hold'em) with constrained replies: the
  exact exploitability and NashConv of the model's move distribution at the run's
  temperature (``jaxagents.lm.evaluate.make_exact_evaluator``: every information state
  rendered to its prompt, the legal moves' probabilities read off one forward pass),
  and of its greedy policy (``greedy_exploitability``), plus each seat's expected payoff
  in self-play;
* ``text_opponents()`` (Tic-Tac-Toe's minimax, Connect Four's search and random player,
  the negotiation's scripted negotiators): ``eval_games`` games of the greedy policy
  against each (half in each seat; ``jaxagents.lm.matches``): win, draw and loss rates
  (losses per seat too), invalid-move rate and mean response length, under
  ``eval/{game}/{opponent}/...``. ``eval_games: 0`` leaves matches out.
"""

from __future__ import annotations

from jaxagents.lm.generate import Sampling


def game_evaluations(policy, envs, env_params, config, tables=None, prefix: str = "") -> dict:
    """``{name: fn(params, key) -> metrics}`` for the games ``envs`` played by ``policy``
    (a ``LanguagePolicy``) with ``config``'s prompt and sampling settings; one name per
    game that offers an evaluation (``prefix`` and its class name, numbered after the
    first). ``tables``: the games' ``TextTables`` (default: the policy's first ones);
    matches last at most ``config.eval_turns`` turns (0: ``num_steps``) and prompts keep
    ``config.eval_prompt_len`` tokens (0: ``prompt_len``)."""
    from jaxagents.lm.episode import Opponent
    from jaxagents.lm.evaluate import make_exact_evaluator
    from jaxagents.lm.matches import make_match_evaluator

    out = {}
    max_turns = config.eval_turns or config.num_steps
    prompt_len = config.eval_prompt_len or config.prompt_len
    for i, (env, tables) in enumerate(zip(envs, policy.tables if tables is None else tables)):
        name = prefix + (type(env).__name__ if i == 0 else f"{type(env).__name__}{i}")
        constrained = config.constrained and tables.choices is not None
        if config.eval_games and hasattr(env, "text_opponents"):
            for opp_name, (policy_fn, strings) in env.text_opponents().items():
                opponent = Opponent.build(env, policy.tokenizer, policy_fn, strings)
                match = make_match_evaluator(policy.cfg, env, tables, opponent, num_games=config.eval_games,
                                             sampling=Sampling(config.max_new_tokens, temperature=0.0),
                                             max_turns=max_turns, prompt_len=prompt_len,
                                             prompt=policy.prompt, constrained=constrained)

                def evaluate_match(params, key, match=match):
                    m = match(params, key)
                    return {"win": m["win"], "draw": m["draw"], "loss": m["loss"], "unfinished": m["unfinished"],
                            "loss_seat0": m["loss_by_seat"][0], "loss_seat1": m["loss_by_seat"][1],
                            "invalid_rate": m["invalid_rate"], "response_tokens": m["mean_response_tokens"]}

                out[f"{name}/{opp_name}"] = evaluate_match
        if not (constrained and hasattr(env, "exact_game")):
            continue
        kw = dict(prompt=policy.prompt, prompt_len=prompt_len)
        sampled = make_exact_evaluator(policy.cfg, env, tables, **kw,
                                       sampling=Sampling(config.max_new_tokens, temperature=config.temperature))
        greedy = make_exact_evaluator(policy.cfg, env, tables, **kw, exact=sampled.exact, prompts=sampled.prompts,
                                      sampling=Sampling(config.max_new_tokens, temperature=0.0))  # built once

        def evaluate(params, key, sampled=sampled, greedy=greedy):
            m = sampled(params)
            return {"exploitability": m["exploitability"], "nash_conv": m["nash_conv"],
                    "value_seat0": m["value"][0], "greedy_exploitability": greedy(params)["exploitability"]}

        out[name] = evaluate
    return out

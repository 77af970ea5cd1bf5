"""A language policy against a scripted opponent: win, draw and loss rates, invalid moves
and response lengths, as a function of its weights.

``make_match_evaluator`` plays ``num_games`` games with ``play`` (generation inside
``jit``), the model in one seat and an ``Opponent`` (a game's scripted player, e.g.
``jaxagents_environments.text.opponents``) in the other: half the games with the model
as player 0, half as player 1. Its replies are free text parsed by the game's grammar
(``constrained=False``: an invalid reply is TextArena's warning, then the loss) or
one of the legal moves' strings (``constrained=True``). A game's result is the sign of
the model's total reward; a game not over after ``max_turns`` turns counts as
``unfinished`` (neither win, draw nor loss).

The invalid-move rate is over the model's replies; the mean response length counts
the tokens it generated per reply (the stop token included): SPIRAL's "thinking
collapse" shows as this length falling towards the bare move.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxagents.lm.config import ModelConfig
from jaxagents.lm.episode import Opponent, Prompt, TextTables, play
from jaxagents.lm.generate import Sampling


def match_stats(turns, model_seat: jax.Array) -> dict:
    """The results of games recorded by ``play`` with an opponent (``Turns`` ``[K, B]``;
    ``model_seat`` ``i32[B]`` the model's seat in each game).

    Returns ``f32[]`` rates: ``win``, ``draw``, ``loss``, ``unfinished`` (over games),
    ``win_by_seat``, ``draw_by_seat``, ``loss_by_seat`` ``f32[2]`` (over the games of
    the model in each seat), ``invalid_rate`` (over the model's replies),
    ``mean_response_tokens``, and ``games`` (their number)."""
    b = model_seat.shape[0]
    reward = jnp.sum(jnp.take_along_axis(turns.reward, model_seat[None, :, None], axis=2)[..., 0], axis=0)  # [B]
    over = jnp.any(turns.done & turns.active, axis=0)
    win, loss = over & (reward > 0), over & (reward < 0)
    draw = over & (reward == 0)
    mine = turns.active & (turns.player == model_seat[None, :])
    replies = jnp.maximum(jnp.sum(mine), 1)
    seat = jax.nn.one_hot(model_seat, 2)  # [B, 2]
    per_seat = lambda x: (x.astype(jnp.float32) @ seat) / jnp.maximum(seat.sum(0), 1)
    return {
        "win": win.mean(), "draw": draw.mean(), "loss": loss.mean(), "unfinished": (~over).mean(),
        "win_by_seat": per_seat(win), "draw_by_seat": per_seat(draw), "loss_by_seat": per_seat(loss),
        "invalid_rate": jnp.sum(turns.invalid & mine) / replies,
        "mean_response_tokens": jnp.sum(jnp.where(mine[..., None], turns.mask, False)) / replies,
        "games": jnp.asarray(b, jnp.float32),
    }


def make_match_evaluator(cfg: ModelConfig, env, tables: TextTables, opponent: Opponent, *, num_games: int,
                         sampling: Sampling, max_turns: int, prompt_len: int, prompt: Prompt = Prompt(),
                         constrained: bool = False, reuse_prefix: bool = True):
    """``fn(params, key) -> dict`` (jit-able): ``match_stats`` of ``num_games`` games of
    the model against ``opponent`` (an even number: half in each seat). ``sampling``
    with temperature 0 plays the greedy policy. The other arguments are ``play``'s."""
    if not isinstance(num_games, int) or num_games < 2 or num_games % 2:
        raise ValueError(f"num_games must be an even integer >= 2 (half the games in each seat), got {num_games!r}")
    model_seat = jnp.arange(num_games, dtype=jnp.int32) % 2

    def evaluate(params: dict, key: jax.Array) -> dict:
        turns, _ = play(params, cfg, env, tables, key, num_games, sampling=sampling, max_turns=max_turns,
                        prompt_len=prompt_len, prompt=prompt, constrained=constrained, reuse_prefix=reuse_prefix,
                        opponent=opponent, opponent_seat=1 - model_seat)
        return match_stats(turns, model_seat)

    return evaluate

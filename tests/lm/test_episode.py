"""Whole self-play episodes in one program (``jaxagents.lm.episode.play``) on the text games.

Every prompt the compiled loop builds is checked against the game replayed on the
host with the same moves (TextArena's observation string, the replies echoed as
generated); prefix caching across turns changes no token; constrained replies are
always legal; auto-reset keeps every game playing."""

from __future__ import annotations

import functools
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxagents
from jaxagents.lm.episode import Prompt, TextTables, play
from jaxagents.lm.generate import Sampling
from jaxagents.lm.model import init_params
from jaxagents.lm.tokenizer import Tokenizer

from .conftest import tiny_config

TOKENIZER = os.path.join(os.path.dirname(__file__), "..", "data", "lm", "qwen2")
GAMES = 3
TURNS = 6
# Connect Four needs more room: the test tokenizer spells "[col 3]" in 7 tokens (the
# reply budget is 6 elsewhere) and a board in about 90 (prompts of 1024 elsewhere)
REPLY_TOKENS = {"text_connect_four": 8}
PROMPT_LEN = {"text_connect_four": 2048}


@functools.lru_cache(maxsize=None)
def setup(env_id: str):
    tok = Tokenizer.from_folder(TOKENIZER)
    env = jaxagents.make(env_id)
    cfg = tiny_config("llama", vocab_size=512)
    params = init_params(cfg, jax.random.PRNGKey(0), scale=0.3)  # decisive logits: greedy has no near-ties
    return tok, env, TextTables.build(env, tok), cfg, params


@functools.lru_cache(maxsize=None)
def episode(env_id: str, reuse_prefix: bool = True, constrained: bool = False, auto_reset: bool = False,
            temperature: float = 0.0):
    tok, env, tables, cfg, params = setup(env_id)
    run = jax.jit(lambda p, k: play(p, cfg, env, tables, k, GAMES, sampling=Sampling(REPLY_TOKENS.get(env_id, 6), temperature=temperature),
                                    max_turns=TURNS, prompt_len=PROMPT_LEN.get(env_id, 1024), constrained=constrained, auto_reset=auto_reset,
                                    reuse_prefix=reuse_prefix)[0])
    return jax.tree_util.tree_map(np.asarray, run(params, jax.random.PRNGKey(7)))


def _replay_texts(env_id, turns):
    """The observation text of every turn, replayed on the host with the loop's moves and
    its replies' text, using the loop's keys (``play``'s key schedule)."""
    from jaxagents_environments.text.base import echo_text

    tok, env, tables, _, _ = setup(env_id)
    key, reset_key = jax.random.split(jax.random.PRNGKey(7))
    turn_keys = jax.random.split(key, TURNS)
    reset, step = jax.jit(env.reset), jax.jit(env.step_move)
    out = {}
    for b in range(GAMES):
        state, ts = reset(jax.random.split(reset_key, GAMES)[b])
        replies = []
        for t in range(TURNS):
            if not turns.active[t, b]:
                break
            player = int(ts.info["player"])
            obs = np.asarray(ts.obs[list(env.roles)[player]][0])
            out[t, b] = env.render_observation(obs, replies)
            reply = [i for i, m in zip(turns.tokens[t, b], turns.mask[t, b]) if m and i != tok.eos_token_id]
            replies.append(echo_text(tok.decode(reply)))
            k_step = jax.random.split(turn_keys[t], 3)[1]
            move = jax.tree_util.tree_map(lambda m: jnp.asarray(m[t, b]), turns.move)
            state, ts = step(jax.random.split(k_step, GAMES)[b], state, move)
    return out


@pytest.mark.slow  # (10-20 s: the default suite keeps its 10 minutes)
@pytest.mark.parametrize("env_id,constrained", [
    ("text_kuhn_poker", False), ("text_tic_tac_toe", True),
    pytest.param("text_leduc_poker", True, marks=pytest.mark.heavy),
    pytest.param("text_negotiation", False, marks=pytest.mark.heavy),
    pytest.param("text_connect_four", True, marks=pytest.mark.slow)])
def test_every_prompt_is_the_games_observation(env_id, constrained):
    """Free text (mostly invalid replies from a random model: warnings, echoes, losses)
    and constrained moves (whole games)."""
    tok, env, _, _, _ = setup(env_id)
    turns = episode(env_id, constrained=constrained, temperature=1.0)
    texts = _replay_texts(env_id, turns)
    assert len(texts) >= GAMES + 2
    assert not (constrained and turns.invalid.any())
    for (t, b), text in texts.items():
        prompt = turns.prompt[t, b, : turns.prompt_length[t, b]]
        assert tok.decode(prompt) == text, (t, b)
        assert not turns.overflow[t, b]
        # the parsed move is the game's own parse of the reply's text
        reply = [i for i, m in zip(turns.tokens[t, b], turns.mask[t, b]) if m and i != tok.eos_token_id]
        move = jax.tree_util.tree_map(lambda m: np.asarray(m[t, b]), turns.move)
        want = jax.tree_util.tree_map(np.asarray, env.parse_text(tok.decode(reply)))
        assert jax.tree_util.tree_all(jax.tree_util.tree_map(np.array_equal, move, want)), (t, b)


@pytest.mark.heavy
def test_prefix_caching_changes_no_token():
    with_cache = episode("text_kuhn_poker")
    without = episode("text_kuhn_poker", reuse_prefix=False)
    for name in ("active", "player", "prompt", "prompt_length", "tokens", "mask", "move", "invalid", "reward", "done"):
        np.testing.assert_array_equal(getattr(with_cache, name), getattr(without, name), err_msg=name)
    np.testing.assert_allclose(with_cache.logprobs, without.logprobs, atol=1e-4)


@pytest.mark.slow  # (this module's compiles: the default suite keeps its 10 minutes)
def test_constrained_replies_are_legal_and_auto_reset_keeps_every_game_playing():
    turns = episode("text_tic_tac_toe", constrained=True, auto_reset=True, temperature=1.0)
    assert turns.active.all() and not turns.invalid.any()
    assert (turns.move >= 0).all() and (turns.move < 9).all()
    # tic-tac-toe ends after 5 to 9 moves; rewards only on a game's last turn, zero-sum
    assert not turns.done[:4].any()
    assert (turns.reward.sum(-1) == 0).all() and (np.abs(turns.reward).sum(-1)[~turns.done] == 0).all()
    assert set(np.unique(turns.player)) == {0, 1}


@pytest.mark.slow  # (this module's compiles: the default suite keeps its 10 minutes)
def test_chat_prompts_wrap_every_observation():
    tok = Tokenizer.from_folder(TOKENIZER)
    prompt = Prompt.chat(tok, system="Play well.")
    text = tok.decode(list(prompt.prefix)) + "OBS" + tok.decode(list(prompt.suffix))
    assert text == tok.apply_chat_template([{"role": "system", "content": "Play well."},
                                            {"role": "user", "content": "OBS"}], add_generation_prompt=True)

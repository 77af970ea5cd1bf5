"""``text_tic_tac_toe`` against TextArena 0.7.4's ``TicTacToe-v0``: 1,000 recorded random
games replayed in one compiled program (observation strings, legal strings, ends and
rewards identical at every step), the grammar against TextArena's regular expression
on the table and on random text, and whole-string tokenization with a GPT-2-style and a
Qwen2-style tokenizer."""

from __future__ import annotations

import importlib.util
import os
import re
import sys

import jax
import numpy as np
import pytest

from jaxagents.lm.grammar import NUMBER_CAP, encode_bytes, format_action_text
from jaxagents_environments.text.base import echo_text

_spec = importlib.util.spec_from_file_location("textarena_parity", os.path.join(os.path.dirname(__file__), "textarena_parity.py"))
parity = sys.modules.setdefault("textarena_parity", importlib.util.module_from_spec(_spec))
if not hasattr(parity, "load"):
    _spec.loader.exec_module(parity)

TEXTARENA_REGEX = re.compile(r"\[\s*(\d+)\s*\]")  # TicTacToe's, 0.7.4
STEPS = 40


env, data, replayed, tokenizers = parity.game_fixtures("text_tic_tac_toe", "tic_tac_toe", STEPS, with_deals=False, tokenizer_games=150)


def test_recording_is_of_this_table_and_version(env, data):
    assert data["textarena_version"] == "0.7.4" and data["env_id"] == "TicTacToe-v0"
    assert tuple(data["actions"]) == env.actions
    assert len(data["games"]) >= 1000


def test_replay_matches_textarena(env, replayed):
    n, diffs = parity.differences(env, replayed)
    assert n > 7000 and not diffs, f"{len(diffs)} differences in {n} steps:\n" + "\n".join(diffs)


def test_games_cover_the_rules(replayed):
    texts = [t for game in replayed.texts for t in game]
    for needle in ("is already occupied", "Must be between 0 and 8", "does not follow the correct format",
                   "placed their symbol (X)", "Reason: 123456.", "Reason: 42."):
        assert any(needle in t for t in texts), needle
    rewards = {tuple(r["rewards"]) for r in replayed.records}
    assert rewards == {(1, -1), (-1, 1), (0, 0)}


def test_capacity_is_never_reached(env, replayed):
    assert replayed.count.max() + 16 <= env.capacity


def test_grammar_is_textarenas(env):
    rng = np.random.default_rng(0)
    alphabet = list("[] 0123456789x\n\t-+.") + ["\u0664", "\u00a0", "\u3000", "\u2007", "\uff15", "\U0001d7ce"]
    texts = list(env.actions) + ["".join(rng.choice(alphabet, rng.integers(0, 14))) for _ in range(500)]
    texts += ["[  \u00a0 07\t]", "[999999999]", "[1000000000]", "[99999999999999]", "[\uff18]", "[0]x[1]"]
    for t in texts:
        m = TEXTARENA_REGEX.search(format_action_text(t))
        value = -1 if m is None else int(m.group(1))
        assert env.parse_text(t) == (value if value < 10**9 else NUMBER_CAP), t
    data, lengths = encode_bytes(texts, 64)
    parsed = jax.jit(jax.vmap(env.parse))(data, lengths)
    np.testing.assert_array_equal(np.asarray(parsed), [env.parse_text(t) for t in texts])
    echoed, echo_len, _, _ = jax.jit(jax.vmap(env.echo))(data, lengths)
    for t, e, n in zip(texts, np.asarray(echoed), np.asarray(echo_len)):
        assert bytes(e[:n]).decode() == echo_text(t), t


def _excused(env, kind):
    """GPT-2's exceptions: a reply ending in whitespace (``"Center: [ 4 ]\\n"``) and a
    number of 1000 or more in a warning (``[123456]``: a digit run cut into pieces)."""
    if kind != "gpt2":
        return lambda o: False
    ws = parity.uses(env, parity.excused_gpt2(env))
    groups = np.asarray(env._group)
    return lambda o: ws(o) or bool(np.isin(o[: env.capacity], groups).any())


# both tokenizer kinds under -m slow (the default suite checks Kuhn's, 10-25 s each)
@pytest.mark.slow
@pytest.mark.parametrize("kind", ["gpt2", "qwen2"])
def test_piece_boundaries_are_pretoken_splits(env, replayed, tokenizers, kind):
    parity.check_pretokens(env, replayed, tokenizers[kind], kind, _excused(env, kind), every=5)


# under -m slow (the default suite checks Kuhn's, 10-20 s)
@pytest.mark.slow
@pytest.mark.parametrize("every", [pytest.param(1, marks=pytest.mark.heavy), 3])
@pytest.mark.parametrize("kind", ["gpt2", "qwen2"])
def test_tokenize_equals_whole_string_encoding(env, replayed, tokenizers, kind, every):
    """Every third recorded observation (``-m slow``), every one with ``-m heavy``."""
    exact = parity.check_tokenize(env, replayed, tokenizers[kind], _excused(env, kind), every=every)
    assert exact > 0.8 * sum(replayed.steps) / every

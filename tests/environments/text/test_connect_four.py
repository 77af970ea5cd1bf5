"""``text_connect_four`` against TextArena 0.7.4's ``ConnectFour-v0``: 1,000 recorded random
games and two scripted draws replayed in one compiled program (observation strings,
legal strings, ends and rewards identical at every step), the grammar against
TextArena's regular expression on the table and on random text, and whole-string
tokenization with a GPT-2-style and a Qwen2-style tokenizer."""

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

TEXTARENA_REGEX = re.compile(r".*\[(?:col\s*)?(\d+)\].*", re.IGNORECASE)  # ConnectFour's, 0.7.4
STEPS = 56


env, data, replayed, tokenizers = parity.game_fixtures("text_connect_four", "connect_four", STEPS, with_deals=False, tokenizer_games=60)


@pytest.mark.slow  # (this module's compiles: the default suite keeps its 10 minutes)
def test_recording_is_of_this_table_and_version(env, data):
    assert data["textarena_version"] == "0.7.4" and data["env_id"] == "ConnectFour-v0"
    assert tuple(data["actions"]) == env.actions
    assert len(data["games"]) >= 1000


@pytest.mark.slow  # (this module's compiles: text Kuhn poker, tic-tac-toe and negotiation replay theirs by default)
def test_replay_matches_textarena(env, replayed):
    n, diffs = parity.differences(env, replayed)
    assert n > 18000 and not diffs, f"{len(diffs)} differences in {n} steps:\n" + "\n".join(diffs)


@pytest.mark.slow  # (this module's compiles: the default suite keeps its 10 minutes)
def test_games_cover_the_rules(replayed):
    texts = [t for game in replayed.texts for t in game]
    for needle in ("Invalid action format. Expected format: '[col x]'.", "Column 7 is out of bounds.",
                   "Column 123456 is out of bounds.", "Column 42 is out of bounds.", "is full.",
                   "dropped their disk (O) into column 6.", "Reason: Player 1, Invalid action."):
        assert any(needle in t for t in texts), needle
    rewards = {tuple(r["rewards"]) for r in replayed.records}
    assert rewards == {(1, -1), (-1, 1), (0, 0)}


@pytest.mark.slow  # (this module's compiles: the default suite keeps its 10 minutes)
def test_capacity_is_never_reached(env, replayed):
    assert replayed.count.max() + 16 <= env.capacity


@pytest.mark.slow  # (this module's compiles: the default suite keeps its 10 minutes)
def test_grammar_is_textarenas(env):
    rng = np.random.default_rng(0)
    pick = lambda xs: xs[rng.integers(len(xs))]
    noise = ["[", "]", "col", "x", " ", "\n", "\r", "\t", "3", "12", "-", ".", "\ufffd", "\u00a0"]
    words = ["", "", "col", "COL", "cOl", "co", "cols", "c\u212al"]
    spaces = ["", "", " ", "  ", "\n", "\t", "\u00a0", "\u3000", " x"]
    numbers = ["3", "0", "6", "7", "12", "\u0665", "\uff15", "03", "", "-1", "2.5"]

    def candidate():  # "[", a word, whitespace, digits, "]", each sometimes off
        return "[" + pick(words) + pick(spaces) + pick(numbers) + pick(["]", "]", "]", " ]", ""])

    texts = list(env.actions) + ["".join(candidate() if rng.random() < 0.5 else pick(noise)
                                         for _ in range(rng.integers(0, 7))) for _ in range(1500)]
    texts += ["[col 999999999]", "[col 1000000000]", "[99999999999999]", "[col\u00a0\u0663]", "a\n[col 2] [4]\n[col 5]",
              "[col 1][col 2]", "[col 1]\r[col 2]", "x\n\n[3]", "[col 3", "[co\u212a 3]"]
    for t in texts:
        m = TEXTARENA_REGEX.search(format_action_text(t))
        value = -1 if m is None else int(m.group(1))
        assert env.parse_text(t) == (value if value < 10**9 else NUMBER_CAP), t
    assert sum(env.parse_text(t) >= 0 for t in texts) > 300
    data, lengths = encode_bytes(texts, 64)
    parsed = jax.jit(jax.vmap(env.parse))(data, lengths)
    np.testing.assert_array_equal(np.asarray(parsed), [env.parse_text(t) for t in texts])
    echoed, echo_len, _, _ = jax.jit(jax.vmap(env.echo))(data, lengths)
    for t, e, n in zip(texts, np.asarray(echoed), np.asarray(echo_len)):
        assert bytes(e[:n]).decode() == echo_text(t), t


def _excused(env, kind):
    """GPT-2's exceptions: a reply ending in whitespace (``" [col 1] "``) and a number of
    1000 or more in a warning (``[col 123456]``: a digit run cut into pieces)."""
    if kind != "gpt2":
        return lambda o: False
    ws = parity.uses(env, parity.excused_gpt2(env))
    groups = np.asarray(env._group)
    return lambda o: ws(o) or bool(np.isin(o[: env.capacity], groups).any())


# one tokenizer kind each in the default suite (the other under -m slow)
@pytest.mark.slow  # (this module's compiles: the default suite keeps its 10 minutes)
@pytest.mark.parametrize("kind", [pytest.param("gpt2", marks=pytest.mark.heavy), "qwen2"])
def test_piece_boundaries_are_pretoken_splits(env, replayed, tokenizers, kind):
    parity.check_pretokens(env, replayed, tokenizers[kind], kind, _excused(env, kind), every=15)


@pytest.mark.slow  # (this module's compiles: the default suite keeps its 10 minutes)
@pytest.mark.parametrize("every", [pytest.param(1, marks=pytest.mark.heavy), 7])
@pytest.mark.parametrize("kind", ["gpt2", pytest.param("qwen2", marks=pytest.mark.slow)])
def test_tokenize_equals_whole_string_encoding(env, replayed, tokenizers, kind, every):
    """Every seventh recorded observation by default, all of them with ``-m slow``."""
    exact = parity.check_tokenize(env, replayed, tokenizers[kind], _excused(env, kind), max_len=4096, chunk=512,
                                  every=every)
    assert exact > 0.8 * sum(replayed.steps) / every

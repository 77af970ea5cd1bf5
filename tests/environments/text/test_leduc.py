"""``text_leduc_poker`` against TextArena 0.7.4's ``LeducHoldemEnv(max_rounds=5)`` (its
registration is commented out in 0.7.4; the recorder builds it with the default
wrappers): 1,000 recorded random games, and 200 more with ``starting_bank=6`` where
players go bust, replayed in one compiled program each (observation strings, legal
strings, ends and rewards identical at every step); the grammar against TextArena's
regular expression; whole-string tokenization with a GPT-2-style and a Qwen2-style
tokenizer."""

from __future__ import annotations

import importlib.util
import os
import re
import sys

import jax
import numpy as np
import pytest

from jaxagents.lm.grammar import encode_bytes, format_action_text
from jaxagents_environments.text.base import echo_text
from jaxagents_environments.text.leduc import MOVES, NOT_A_MOVE, SET_ORDERS, TextLeducPoker

_spec = importlib.util.spec_from_file_location("textarena_parity", os.path.join(os.path.dirname(__file__), "textarena_parity.py"))
parity = sys.modules.setdefault("textarena_parity", importlib.util.module_from_spec(_spec))
if not hasattr(parity, "load"):
    _spec.loader.exec_module(parity)

TEXTARENA_REGEX = re.compile(r"\[(check|call|bet|raise|fold)]", re.IGNORECASE)  # LeducHoldem's, 0.7.4
STEPS = 48


env, data, replayed, tokenizers = parity.game_fixtures("text_leduc_poker", "leduc_poker", STEPS, with_deals=True, tokenizer_games=100)


def test_recording_is_of_this_table_and_version(env, data):
    assert data["textarena_version"] == "0.7.4" and data["env_id"] == "LeducHoldem-v0"
    assert tuple(data["actions"]) == env.actions
    assert len(data["games"]) >= 1000
    # the legal moves are listed in the order of the recording's hash seed
    assert data["hash_seed"] == "0" and tuple(map(tuple, data["set_orders"])) == SET_ORDERS == env.set_orders


# the recording's replay (its compile, 10-30 s) and the checks that read it run with the
# slow ones: the default suite keeps its 10 minutes (text Kuhn poker, tic-tac-toe and
# negotiation replay theirs by default; text_leduc_poker is traced by tests/test_conformance.py)
@pytest.mark.slow
def test_replay_matches_textarena(env, replayed):
    n, diffs = parity.differences(env, replayed)
    assert n > 19000 and not diffs, f"{len(diffs)} differences in {n} steps:\n" + "\n".join(diffs)


@pytest.mark.slow  # (10-25 s: the default suite keeps its 10 minutes)
def test_replay_with_busts_matches_textarena():
    data = parity.load("leduc_poker_bank6")
    assert data["env_kwargs"] == {"starting_bank": 6}
    env = TextLeducPoker(starting_bank=6)
    rep = parity.replay(env, data, parity.make_replayer(env, STEPS, with_deals=True), STEPS)
    n, diffs = parity.differences(env, rep)
    assert n > 1500 and not diffs, f"{len(diffs)} differences in {n} steps:\n" + "\n".join(diffs)
    # games that end before the fifth hand without an invalid move: someone went bust
    busts = sum(t[-1].count("### New hand") < 5 for t in rep.texts)
    assert busts > 50


@pytest.mark.slow  # the replay, as above
def test_games_cover_the_rules(replayed):
    texts = [t for game in replayed.texts for t in game]
    for needle in ("Exact tie.", "folds.Current banks", "Showdown - Player 1 wins.", "raises 4.", "calls 12.",
                   "Illegal now. Allowed: {'fold', 'call'}", "Supply exactly one legal action token."):
        assert any(needle in t for t in texts), needle
    # TextArena's carried-over check: a hand's first check reveals the flop at once
    assert any("private card: J\n[GAME] Valid actions: '[bet]', '[check]'\n[Player 0] [check]\n[GAME] Flop" in t
               or re.search(r"New hand[^\n]*\n(\[GAME\] Valid[^\n]*\n)?\[Player \d\] [^\n]*\n\[GAME\] Flop", t)
               for t in texts)
    assert {tuple(r["rewards"]) for r in replayed.records} == {(1, -1), (-1, 1), (0, 0)}


@pytest.mark.slow  # the replay, as above
def test_capacity_is_never_reached(env, replayed):
    assert replayed.count.max() + 8 <= env.capacity


def test_grammar_is_textarenas(env):
    rng = np.random.default_rng(0)
    alphabet = list("[]cChHeEkKbBtTaAlLfFoOdDrRiIsS ,.\n") + ["\u017f", "\u212a", "\u0130", "\u0131"]
    texts = list(env.actions) + ["".join(rng.choice(alphabet, rng.integers(0, 16))) for _ in range(400)]
    texts += ["[RAISE] [fold]", "[r\u0131se]", "[ra\u0130se]", "[raise]]", "x[Fold]"]
    for t in texts:
        m = TEXTARENA_REGEX.search(format_action_text(t))
        want = -1 if m is None else (MOVES.index(m.group(1).lower()) if m.group(1).lower() in MOVES else NOT_A_MOVE)
        assert env.parse_text(t) == want, t
    data, lengths = encode_bytes(texts, 64)
    parsed = jax.jit(jax.vmap(env.parse))(data, lengths)
    np.testing.assert_array_equal(np.asarray(parsed), [env.parse_text(t) for t in texts])
    echoed, echo_len, _, _ = jax.jit(jax.vmap(env.echo))(data, lengths)
    for t, e, n in zip(texts, np.asarray(echoed), np.asarray(echo_len)):
        assert bytes(e[:n]).decode() == echo_text(t), t


def test_set_orders_are_checked():
    with pytest.raises(ValueError, match="set_orders"):
        TextLeducPoker(set_orders=(("bet", "check"), ("fold", "call"), ("fold", "call")))
    env = TextLeducPoker(set_orders=(("check", "bet"), ("call", "raise", "fold"), ("call", "fold")))
    assert " Valid actions: '[check]', '[bet]'" in env.piece_table.pieces


# both tokenizer kinds under -m slow (the default suite checks Kuhn's, 10-25 s each)
@pytest.mark.slow
@pytest.mark.parametrize("kind", ["gpt2", "qwen2"])
def test_piece_boundaries_are_pretoken_splits(env, replayed, tokenizers, kind):
    excused = parity.uses(env, parity.excused_gpt2(env)) if kind == "gpt2" else (lambda o: False)
    parity.check_pretokens(env, replayed, tokenizers[kind], kind, excused, every=10)


# under -m slow (the default suite checks Kuhn's, 10-25 s)
@pytest.mark.slow
@pytest.mark.parametrize("every", [pytest.param(1, marks=pytest.mark.heavy), 5])
@pytest.mark.parametrize("kind", ["gpt2", "qwen2"])
def test_tokenize_equals_whole_string_encoding(env, replayed, tokenizers, kind, every):
    """Every fifth recorded observation (``-m slow``), every one with ``-m heavy``."""
    excused = parity.uses(env, parity.excused_gpt2(env)) if kind == "gpt2" else (lambda o: False)
    exact = parity.check_tokenize(env, replayed, tokenizers[kind], excused, every=every)
    assert exact > 0.8 * sum(replayed.steps) / every

"""``text_kuhn_poker`` against TextArena 0.7.4's ``KuhnPoker-v0``: 1,000 recorded random
games replayed in one compiled program (observation strings, legal strings, ends and
rewards identical at every step), the grammar against TextArena's regular expression,
whole-string tokenization with a GPT-2-style and a Qwen2-style tokenizer, and the
invalid-move rule."""

from __future__ import annotations

import importlib.util
import os
import re
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxagents.lm.grammar import encode_bytes, format_action_text
from jaxagents.lm.text import TokenTable
from jaxagents_environments.text.base import echo_text
from jaxagents_environments.text.kuhn import BET, CALL, CHECK, FOLD, NOT_A_MOVE, TextKuhnPoker

_spec = importlib.util.spec_from_file_location("textarena_parity", os.path.join(os.path.dirname(__file__), "textarena_parity.py"))
parity = sys.modules.setdefault("textarena_parity", importlib.util.module_from_spec(_spec))
if not hasattr(parity, "load"):
    _spec.loader.exec_module(parity)

TEXTARENA_REGEX = re.compile(r"\[(Check|Bet|Fold|Call)\]", re.IGNORECASE)  # KuhnPoker's, 0.7.4
STEPS = 40


env, data, replayed, tokenizers = parity.game_fixtures("text_kuhn_poker", "kuhn_poker", STEPS, with_deals=True, tokenizer_games=200)


def test_recording_is_of_this_table_and_version(env, data):
    assert data["textarena_version"] == "0.7.4" and data["env_id"] == "KuhnPoker-v0"
    assert tuple(data["actions"]) == env.actions
    assert len(data["games"]) >= 1000


def test_replay_matches_textarena(env, replayed):
    n, diffs = parity.differences(env, replayed)
    assert n > 7000 and not diffs, f"{len(diffs)} differences in {n} steps:\n" + "\n".join(diffs)


def test_games_cover_the_rules(replayed):
    """The recording exercises folds, showdowns, warnings and losses by invalid moves."""
    texts = [t for game in replayed.texts for t in game]
    for needle in ("has folded", "Showdown:", "attempted an invalid move", "Action must be [fold], [call]",
                   "Starting round 3 out of 3"):
        assert any(needle in t for t in texts), needle
    rewards = np.array([r["rewards"] for r in replayed.records])
    assert set(map(tuple, rewards)) == {(1, -1), (-1, 1)}
    # some games end by a second invalid move in a row
    assert any(rec["steps"][-1][2][rec["steps"][-1][3]] == "0" for rec in replayed.records)


def test_capacity_is_never_reached(env, replayed):
    assert replayed.count.max() + 8 <= env.capacity


def test_grammar_is_textarenas(env):
    """Every table string and many random ones: the host parse is TextArena's regular
    expression (after the bracket rule), the jit parse over bytes agrees, and so does
    the jit echo."""
    rng = np.random.default_rng(0)
    alphabet = list("[]cChHeEkKbBtTaAlLfFoOdD ,.\n") + ["\u212a", "\u00e9", "\u0130", "x"]
    texts = list(env.actions) + ["".join(rng.choice(alphabet, rng.integers(0, 16))) for _ in range(400)]
    texts += ["I [CALL] you", "[cAlL][bet]", "[[bet]]", "[bet]]", "]bet[", "[fold] [Player 1]"]
    texts += ["[\u0130]", "[chec\u212a] [bet]"]
    moves = {"check": CHECK, "bet": BET, "call": CALL, "fold": FOLD}
    for t in texts:
        m = TEXTARENA_REGEX.search(format_action_text(t).strip())
        assert env.parse_text(t) == (-1 if m is None else moves.get(m.group(1).lower(), NOT_A_MOVE)), t
    data, lengths = encode_bytes(texts, 64)
    parsed = jax.jit(jax.vmap(env.parse))(data, lengths)
    np.testing.assert_array_equal(np.asarray(parsed), [env.parse_text(t) for t in texts])
    echoed, echo_len, _, _ = jax.jit(jax.vmap(env.echo))(data, lengths)
    for t, e, n in zip(texts, np.asarray(echoed), np.asarray(echo_len)):
        assert bytes(e[:n]).decode() == echo_text(t), t


# one tokenizer kind each in the default suite (the other under -m slow)
@pytest.mark.parametrize("kind", [pytest.param("gpt2", marks=pytest.mark.slow), "qwen2"])
def test_piece_boundaries_are_pretoken_splits(env, replayed, tokenizers, kind):
    """Every piece boundary of every recorded observation is a split point of the
    pre-tokenizer and every piece pre-tokenizes alone as inside the whole text, so any
    BPE vocabulary over GPT-2's or Qwen2's pre-tokenizer tokenizes piece by piece
    exactly. The exception (GPT-2 only): a reply that ends in whitespace (the table's
    ``" [bet] "``), whose trailing run GPT-2 splits before the next message's newline."""
    excused = parity.uses(env, parity.excused_gpt2(env)) if kind == "gpt2" else (lambda o: False)
    parity.check_pretokens(env, replayed, tokenizers[kind], kind, excused)


@pytest.mark.parametrize("every", [pytest.param(1, marks=pytest.mark.heavy), 2])
@pytest.mark.parametrize("kind", ["gpt2", pytest.param("qwen2", marks=pytest.mark.slow)])
def test_tokenize_equals_whole_string_encoding(env, replayed, tokenizers, kind, every):
    """``tokenize(pieces) == encode(render(pieces))`` on every other recorded observation
    (all with ``-m slow``), inside ``jit``; where GPT-2's pre-tokenizer makes that
    impossible (above) the tokens still decode to the text."""
    excused = parity.uses(env, parity.excused_gpt2(env)) if kind == "gpt2" else (lambda o: False)
    exact = parity.check_tokenize(env, replayed, tokenizers[kind], excused, every=every)
    assert exact > 0.9 * sum(replayed.steps) / every


@pytest.fixture(scope="module")
def jitted():
    """Compiled reset-from-deal and step of the envs with error allowances 0, 1, 2."""
    out = {}
    for a in (0, 1, 2):
        e = TextKuhnPoker(error_allowance=a)
        out[a] = (e, jax.jit(e.reset_with_deals), jax.jit(e.step))
    return out


def _play(jitted, allowance, actions):
    """Play action indices from a fixed deal; returns the time steps after each."""
    env, reset, step = jitted[allowance]
    state, ts = reset(jnp.array([[2, 0], [1, 2], [0, 1]]))
    out = [ts]
    for a in actions:
        state, ts = step(jax.random.key(0), state, {"player_0": jnp.array([a]), "player_1": jnp.array([a])})
        out.append(ts)
    return state, out


@pytest.mark.slow  # (10-25 s: the default suite keeps its 10 minutes)
def test_error_allowance(jitted):
    env = jitted[1][0]
    bad, good = env.actions.index("hello"), env.actions.index("[check]")
    # TextArena's default: one warning, then the loss
    state, ts = _play(jitted, 1, [bad, bad])
    assert not ts[1].terminated and ts[1].info["invalid_move"] and int(ts[1].info["player"]) == 1
    assert ts[2].terminated and ts[2].reward["player_1"][0] == -1 and ts[2].reward["player_0"][0] == 1
    # a valid move resets the count
    state, ts = _play(jitted, 1, [bad, good, bad, good])
    assert not any(t.terminated for t in ts)
    # no allowance: the first invalid move loses; two: the third in a row
    state, ts = _play(jitted, 0, [bad])
    assert ts[1].terminated and ts[1].reward["player_1"][0] == -1
    env = jitted[2][0]
    state, ts = _play(jitted, 2, [bad, bad, bad])
    assert [bool(t.terminated) for t in ts] == [False, False, False, True]
    text = env.render_observation(ts[2].obs["player_1"][0])
    assert text.count("Player 1 attempted an invalid move") == 2
    with pytest.raises(ValueError, match="error_allowance"):
        TextKuhnPoker(error_allowance=-1)


@pytest.mark.slow  # (10-20 s: the default suite keeps its 10 minutes; step_move runs by default in test_chips_payoff_is_kuhn_pokers)
def test_step_move_is_step_with_the_parsed_reply(jitted):
    """The language-model path: parse the reply's bytes, step with the move; the same
    game as the action index, with the utterance kept outside (-1 in the observation)."""
    env, reset, step = jitted[1]
    replies = ["I will [bet]", "Let me [Fold] now.", "[check]", "[bet]", "[call]"]
    state_a, _ = reset(jnp.array([[2, 0], [1, 2], [0, 1]]))
    state_m = state_a
    step_m = jax.jit(lambda k, s, d, n: env.step_move(k, s, env.parse(d, n)))
    for r in replies:
        data, n = encode_bytes([r], 32)
        a = env.actions.index(r)
        state_a, ts_a = step(jax.random.key(0), state_a, {"player_0": jnp.array([a]), "player_1": jnp.array([a])})
        state_m, ts_m = step_m(jax.random.key(0), state_m, data[0], n[0])
        p = "player_0"
        np.testing.assert_array_equal(ts_a.obs[p][0][: env.capacity], ts_m.obs[p][0][: env.capacity])
        assert env.render_observation(ts_m.obs[p][0], [echo_text(x) for x in replies]) == env.render_observation(ts_a.obs[p][0])
        assert int(ts_m.info["utterance"]) == int(ts_a.info["utterance"])
        np.testing.assert_array_equal(ts_a.reward[p], ts_m.reward[p])


@pytest.mark.slow  # (10-20 s: the default suite keeps its 10 minutes)
def test_language_model_loop(env, tokenizers):
    """What a language-model loop does, inside one ``jit`` per step: generated tokens
    to bytes (``text_bytes``), the move (``parse``), the step (``step_move``), the echo's
    slot tokens (``slot_tokens``) and the next observation's tokens (``tokenize``): the
    tokens decode to TextArena's text, rendered with the replies' echoes."""
    from jaxagents.lm.generate import TokenBytes, text_bytes
    from jaxagents.lm.text import byte_tokens, slot_tokens, tokenize
    from jaxagents.lm.tokenizer import Tokenizer

    tok = tokenizers["qwen2"]
    table = TokenTable.build(env.piece_table, tok, max_len=1024)
    ours = Tokenizer(tok)
    tb, byte_ids = TokenBytes.of(ours), ours.byte_token_ids()
    width = 24

    @jax.jit
    def turn(state, slots, slot_len, gen, gen_len):
        data, n = text_bytes(gen[None], (jnp.arange(gen.shape[0]) < gen_len)[None], tb)
        data, n = data[0], n[0]
        state, ts = env.step_move(jax.random.key(0), state, env.parse(data, n))
        echo, echo_len, wrapped, stripped = env.echo(data, n)
        own, own_len = slot_tokens(gen, gen_len, table, wrapped, width=width)
        spelled, spelled_len = byte_tokens(echo, echo_len, byte_ids)
        spelled, spelled_len = slot_tokens(spelled[:width - 4], spelled_len, table, False, width=width)
        toks = jnp.where(stripped, spelled, own)
        lens = jnp.where(stripped, spelled_len, own_len)
        u = ts.info["utterance"]
        slots, slot_len = slots.at[u].set(toks), slot_len.at[u].set(lens)
        p = jnp.maximum(ts.info["player"], 0)
        obs = jnp.where(p == 1, ts.obs["player_1"][0], ts.obs["player_0"][0])
        ids, count = tokenize(obs[: env.capacity], slots, slot_len, table)
        return state, slots, slot_len, obs, ids, count

    state, _ = env.reset_with_deals(jnp.array([[2, 0], [1, 2], [0, 1]]))
    slots = jnp.zeros((env.num_slots, 2, width), jnp.int32)
    slot_len = jnp.zeros((env.num_slots, 2), jnp.int32)
    replies = ["I will [bet]", "call", "[Player 0] [check]", "hmm", "[bet]", "fold"]
    echoes = []
    for r in replies:
        gen = tok.encode(r).ids
        state, slots, slot_len, obs, ids, count = turn(state, slots, slot_len, jnp.array(gen + [0] * (16 - len(gen))), len(gen))
        echoes.append(echo_text(r))
        assert tok.decode(np.asarray(ids)[: int(count)].tolist()) == env.render_observation(obs, echoes)


def test_chips_payoff_is_kuhn_pokers():
    """``payoff="chips"``: every line of play pays Kuhn poker's payoff for its hand (ante 1,
    bet 1), to both players, at the hand's end; the text is TextArena's."""
    game = TextKuhnPoker(max_rounds=2, payoff="chips")
    reset, step = jax.jit(game.reset_with_deals), jax.jit(game.step_move)
    # (first mover's line, who has the higher card: the first mover?) -> first mover's payoff
    lines = {(CHECK, CHECK): 1, (BET, FOLD): 1, (BET, CALL): 2, (CHECK, BET, FOLD): -1, (CHECK, BET, CALL): 2}
    key = jax.random.PRNGKey(0)
    for moves, pay in lines.items():
        for first_high in (True, False):
            # hand 1 starts with TextArena's player 1; give it the K or the J
            deals = jnp.array([[0, 2] if first_high else [2, 0], [1, 0]], jnp.int32)
            state, ts = reset(deals)
            total = np.zeros(2)
            for m in moves:
                state, ts = step(key, state, jnp.asarray(m, jnp.int32))
                total += np.asarray([ts.reward[r][0] for r in game.roles])
            showdown = FOLD not in moves
            expected = pay if (first_high or not showdown) else -pay
            assert total[1] == expected and total[0] == -expected, (moves, first_high, total)
            assert not bool(ts.terminated)  # a second hand follows
    with pytest.raises(ValueError, match="payoff"):
        TextKuhnPoker(payoff="pot")

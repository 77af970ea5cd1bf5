"""``jaxagents.lm.text`` without any game: tokenization by gather against plain
concatenation, slot tokens from generated tokens, bytes of tokens, UTF-8 decoding,
the bracket rule and tag removal against Python, and the grammars against ``re``."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxagents.lm.grammar import BracketedNumberGrammar, GreedyBracketedNumberGrammar, LiteralGrammar, NUMBER_CAP, decode_utf8, encode_bytes, format_action, format_action_text, strip_substrings

from jaxagents.lm.generate import TokenBytes, text_bytes
from jaxagents.lm.text import PieceTable, TokenTable, byte_tokens, encode_fn, slot_tokens, token_count, tokenize
from jaxagents.lm.tokenizer import Tokenizer


class CharTokenizer:
    """One token per character (id = code point), enough to check the bookkeeping."""

    def encode(self, s):
        return [ord(c) for c in s]


TABLE = PieceTable(("Hello", ", ", "world", "", "!\n", "[GAME]"), num_slots=3, slot_variants=((" ", ""), (" ", "\n")))


def test_piece_table_render_and_slot_ids():
    ids = np.array([0, 1, 2, -1, TABLE.slot_id(1, 1), 5, TABLE.slot_id(0), -1])
    assert TABLE.render(ids, ["a", "bb", "c"]) == "Hello, world bb\n[GAME] a"
    assert TABLE.num_ids == 6 + 2 * 3
    with pytest.raises(ValueError, match="utterance slot 1"):
        TABLE.render(ids)


def test_tokenize_is_concatenation():
    tok = CharTokenizer()
    table = TokenTable.build(TABLE, tok, max_len=64)
    rng = np.random.default_rng(0)
    utts = ["yes", "", "a longer reply"]
    st, sl = TokenTable.encode_slots(TABLE, tok, utts)
    fn = jax.jit(jax.vmap(lambda p: tokenize(p, st, sl, table)))
    cases = rng.integers(-1, TABLE.num_ids, size=(200, 12))
    ids, lengths = fn(cases)
    for row, out, n in zip(cases, np.asarray(ids), np.asarray(lengths)):
        want = tok.encode(TABLE.render(row, utts))
        assert out[:n].tolist() == want[:64] and np.all(out[n:] == 0)
        assert int(token_count(row, sl, table)) == len(want)


def test_tokenize_cuts_at_max_len():
    table = TokenTable.build(TABLE, CharTokenizer(), max_len=8)
    st, sl = TokenTable.encode_slots(TABLE, CharTokenizer(), [])
    ids, n = jax.jit(tokenize)(jnp.array([0, 1, 2]), st, sl, table)
    assert int(n) == 8 and "".join(map(chr, np.asarray(ids))) == "Hello, w"


def test_slot_tokens_spell_the_slot():
    tok = CharTokenizer()
    table = TokenTable.build(TABLE, tok)
    gen = jnp.array([ord(c) for c in "bet"] + [0, 0])
    fn = jax.jit(slot_tokens)
    toks, lens = fn(gen, 3, table, wrapped=True)
    got = ["".join(map(chr, np.asarray(t)[:n])) for t, n in zip(toks, lens)]
    assert got == [" [bet]", " [bet]\n"]
    toks, lens = fn(gen, 3, table, wrapped=False)
    assert "".join(map(chr, np.asarray(toks[1])[: int(lens[1])])) == " bet\n"


def test_encode_fn_accepts_tokenizer_objects():
    class Encoding:
        def __init__(self, ids):
            self.ids = ids

    class HF:
        def encode(self, s, add_special_tokens=True):
            return Encoding([1] * add_special_tokens + [len(s)])

    assert encode_fn(HF())("abc") == [3]
    assert encode_fn(lambda s: [7, len(s)])("ab") == [7, 2]
    with pytest.raises(TypeError):
        encode_fn(3)


@pytest.mark.slow  # (10-25 s: the default suite keeps its 10 minutes)
def test_token_bytes_and_byte_tokens_round_trip():
    import tokenizers

    tok = tokenizers.Tokenizer(tokenizers.models.BPE())
    tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = tokenizers.decoders.ByteLevel()
    trainer = tokenizers.trainers.BpeTrainer(vocab_size=300, initial_alphabet=tokenizers.pre_tokenizers.ByteLevel.alphabet(),
                                             show_progress=False)
    tok.train_from_iterator(["I will [bet] now", "[check] é \u212a"] * 20, trainer)
    ours = Tokenizer(tok)
    table, byte_ids = TokenBytes.of(ours), ours.byte_token_ids()
    for text in ["I will [bet]", "[chec\u212a] é!", ""]:
        ids = tok.encode(text).ids
        data, n = text_bytes(jnp.array([ids + [0] * 3]), jnp.array([[True] * len(ids) + [False] * 3]), table)
        data, n = data[0], n[0]
        assert bytes(np.asarray(data)[: int(n)]) == text.encode()
        one_by_one, m = byte_tokens(data, n, byte_ids)
        assert tok.decode(np.asarray(one_by_one)[: int(m)].tolist()) == text


def _random_bytes(rng, n):
    pool = [b"[", b"]", b" ", b"a", b"K", b"\xe2\x84\xaa", b"\xc5\xbf", b"\xd9\xa4", b"\xc0\xb0", b"\xed\xa0\x80",
            b"\xf0\x9f\x98\x80", b"\xe2", b"\x84", b"\xff", b"\xf4\x90\x80\x80", b"[Player 0]", b"[GAME]", b"4"]
    return [b"".join(rng.choice(pool, rng.integers(0, 8))) for _ in range(n)]


def test_decode_utf8_is_pythons():
    rng = np.random.default_rng(1)
    samples = _random_bytes(rng, 300)
    data = np.zeros((len(samples), 80), np.uint8)
    for i, s in enumerate(samples):
        data[i, : len(s)] = np.frombuffer(s, np.uint8)
    lengths = np.array([len(s) for s in samples], np.int32)
    cp, width = jax.device_get(jax.jit(jax.vmap(decode_utf8))(data, lengths))
    for s, c, w in zip(samples, cp, width):
        chars, j = [], 0
        while j < len(s):
            chars.append(chr(c[j]) if c[j] >= 0 else "\ufffd")
            j += w[j]
        # the valid characters and where they are: Python's replacement decoding, up to
        # how many U+FFFD stand for one invalid run
        assert [x for x in chars if x != "\ufffd"] == [x for x in s.decode("utf-8", "replace") if x != "\ufffd"]
        assert c[len(s)] == -2


def test_format_and_strip_are_pythons():
    rng = np.random.default_rng(2)
    samples = _random_bytes(rng, 300) + [b"[Pl[GAME]ayer 0]", b"[Player 0][Player 1][GAME]", b""]
    data = np.zeros((len(samples), 80), np.uint8)
    for i, s in enumerate(samples):
        data[i, : len(s)] = np.frombuffer(s, np.uint8)
    lengths = np.array([len(s) for s in samples], np.int32)
    tags = ("[Player 0]", "[Player 1]", "[GAME]")

    def both(d, n):
        f, fn, wrapped = format_action(d, n)
        s, sn, stripped = strip_substrings(d, n, tags)
        return f, fn, wrapped, s, sn, stripped

    f, fn, wrapped, s, sn, stripped = jax.device_get(jax.jit(jax.vmap(both))(data, lengths))
    for i, raw in enumerate(samples):
        text = raw.decode("latin-1")  # bytes as characters: the rules only look at ASCII
        assert bytes(f[i][: fn[i]]).decode("latin-1") == format_action_text(text)
        assert bool(wrapped[i]) == (format_action_text(text) != text)
        want = text
        for t in tags:
            want = want.replace(t, "")
        assert bytes(s[i][: sn[i]]).decode("latin-1") == want and bool(stripped[i]) == (want != text)
    with pytest.raises(ValueError, match="overlaps itself"):
        strip_substrings(jnp.zeros(8, jnp.uint8), 0, ("abab",))


def test_literal_grammar_first_match():
    g = LiteralGrammar(["ab", "abc", "[x]"], ignore_case=True)
    cases = ["xxabc", "[X] ab", "AB", "aXb", "", "ABC[x]", "a\u212ab"]
    data, n = encode_bytes(cases, 16)
    which, start, lowers = jax.jit(jax.vmap(g.match))(data, n)
    for c, w, s, low in zip(cases, np.asarray(which), np.asarray(start), np.asarray(lowers)):
        m = re.search("(ab)|(abc)|(\\[x\\])", c, re.IGNORECASE)
        assert w == (-1 if m is None else m.lastindex - 1) == g.search(c)
        assert s == (-1 if m is None else len(c[: m.start()].encode()))
        assert low == (m is not None and m.group().lower() == g.patterns[w].lower())
    # what folds in a match but lowercases to another character
    g = LiteralGrammar(["[raise]", "[check]"])
    cases = ["[RAISE]", "[rai\u017fe]", "[r\u0131se]", "[chec\u212a]", "[CHECK]"]
    data, n = encode_bytes(cases, 16)
    which, _, lowers = jax.jit(jax.vmap(g.match))(data, n)
    assert np.asarray(which).tolist() == [0, 0, -1, 1, 1] and np.asarray(lowers).tolist() == [True, False, False, True, True]
    assert g.search_match("x[rai\u017fe]") == (0, "[rai\u017fe]")
    assert LiteralGrammar(["k"]).search("\u212a") == 0 and LiteralGrammar(["k"], ignore_case=False).search("K") == -1


def test_bracketed_number_grammar_values():
    g = BracketedNumberGrammar()
    cases = {"[4]": 4, "4": -1, "[ 007 ]": 7, "[\u0664\u0662]": 42, "[999999999]": 999999999,
             "[1000000000]": NUMBER_CAP, "[4 5]": -1, "x[ 12\u3000]y[3]": 12, "[-1]": -1, "[0]": 0}
    data, n = encode_bytes(list(cases), 32)
    values, _ = jax.jit(jax.vmap(g.match))(data, n)
    assert np.asarray(values).tolist() == list(cases.values()) == [g.search(c) for c in cases]


def test_greedy_bracketed_number_grammar_values():
    """The last candidate on the first line that has one; the word is optional."""
    g = GreedyBracketedNumberGrammar("col")
    cases = {"[col 4]": 4, "[4]": 4, "[COL\t\u0664\u0662]": 42, "[col 1] or [col 5]": 5, "[col 6]\n[col 0]": 6,
             "no\n[2] [col 3]\n[1]": 3, "[col\n4]": 4, "[ 4 ]": -1, "[col 4 ]": -1, "[col]": -1, "[col -1]": -1,
             "[col 1000000000]": NUMBER_CAP, "[co 4]": -1, "[col 1][2]": 2, "[col 3\ufffd]": -1, "": -1}
    data, n = encode_bytes(list(cases), 32)
    values, starts = jax.jit(jax.vmap(g.match))(data, n)
    assert np.asarray(values).tolist() == list(cases.values()) == [g.search(c) for c in cases]
    assert np.asarray(starts)[:6].tolist() == [0, 0, 0, 11, 0, 7]
    strict = GreedyBracketedNumberGrammar("row", ignore_case=False)
    data, n = encode_bytes(["[ROW 3]", "[row 3] [ROW 4]", "[row 3]"], 32)
    assert np.asarray(jax.jit(jax.vmap(strict.match))(data, n)[0]).tolist() == [-1, 3, 3]
    with pytest.raises(ValueError):
        GreedyBracketedNumberGrammar("")

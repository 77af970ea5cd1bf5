"""Replies read inside ``jit``: UTF-8 bytes, TextArena's bracket rule, and move grammars.

Replies are bytes (``u8[Lb]`` plus a length), decoded as UTF-8 the way
Python decodes them with ``errors="replace"`` (an invalid byte is a character that
matches nothing). ``format_action`` applies TextArena's ``ActionFormattingWrapper`` rule
(a reply with neither ``[`` nor ``]`` is wrapped in brackets); ``LiteralGrammar`` is the
first match of a finite set of literal patterns, optionally case-insensitive with
Python's Unicode case folding (the KELVIN SIGN matches ``k``, LATIN SMALL LETTER LONG S
matches ``s``); ``BracketedNumberGrammar`` is the first match of ``\\[\\s*(\\d+)\\s*\\]``
with Python's Unicode ``\\s`` and ``\\d`` and the value of ``int`` (exact up to
999,999,999; larger values saturate at ``NUMBER_CAP``); ``GreedyBracketedNumberGrammar``
is ``re.search`` of ``.*\\[(?:word\\s*)?(\\d+)\\].*`` (the last match on the first line
that has one: Connect Four's ``[col 3]``). Each grammar has a host
``search(text)`` that runs Python's ``re`` and a jit ``match`` over bytes that the tests
check against it; ``strip_substrings`` removes role tags from an echoed reply
(TextArena's ``str.replace`` of each tag, in order).
"""

from __future__ import annotations

import functools
import re
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

__all__ = [
    "encode_bytes",
    "decode_utf8",
    "format_action",
    "format_action_text",
    "strip_substrings",
    "LiteralGrammar",
    "BracketedNumberGrammar",
    "GreedyBracketedNumberGrammar",
    "NUMBER_CAP",
    "unicode_classes",
    "run_end",
    "digit_run_values",
    "match_sequences",
    "class_codepoints",
]

NUMBER_CAP = 2**31 - 1  # BracketedNumberGrammar's value for numbers above 999,999,999
_END = -2  # code point of a position past the text (matches nothing)
_BAD = -1  # code point of an invalid byte or a continuation byte (matches nothing)


# ============================================================================ bytes
def encode_bytes(texts: Sequence[str], width: int) -> tuple[np.ndarray, np.ndarray]:
    """Host side: UTF-8 bytes of ``texts`` as ``(u8[N, width], i32[N])``."""
    out = np.zeros((len(texts), width), np.uint8)
    lens = np.zeros(len(texts), np.int32)
    for i, t in enumerate(texts):
        b = t.encode("utf-8")
        if len(b) > width:
            raise ValueError(f"{t!r} is {len(b)} bytes, more than width={width}")
        out[i, : len(b)] = np.frombuffer(b, np.uint8)
        lens[i] = len(b)
    return out, lens


def decode_utf8(data, length) -> tuple[jax.Array, jax.Array]:
    """Decode UTF-8 at every byte position, inside ``jit``.

    Args:
        data: ``u8[L]`` bytes; ``length``: ``i32[]`` how many are used.

    Returns:
        ``(cp i32[L + 1], width i32[L + 1])``: at each position the code point of the
        character that starts there and its byte count; -1 and width 1 for a byte that
        starts no valid character (an invalid byte, a continuation byte, an overlong
        form, a surrogate: Python's decoder replaces those with U+FFFD); -2 from
        ``length`` on (the extra last position, so walks may run one past the end).
    """
    b = jnp.asarray(data).astype(jnp.int32)
    size = b.shape[0]
    b = jnp.concatenate([b, jnp.zeros(4, jnp.int32)])
    inside = jnp.arange(size + 4) < length
    b = jnp.where(inside, b, -1)
    b0, b1, b2, b3 = b[: size + 1], b[1 : size + 2], b[2 : size + 3], b[3 : size + 4]
    cont = lambda x: (x >= 0x80) & (x <= 0xBF)
    ascii_ = (b0 >= 0) & (b0 < 0x80)
    two = (b0 >= 0xC2) & (b0 <= 0xDF) & cont(b1)
    lo1 = jnp.where(b0 == 0xE0, 0xA0, jnp.where(b0 == 0xF0, 0x90, 0x80))
    hi1 = jnp.where(b0 == 0xED, 0x9F, jnp.where(b0 == 0xF4, 0x8F, 0xBF))
    first_ok = (b1 >= lo1) & (b1 <= hi1)
    three = (b0 >= 0xE0) & (b0 <= 0xEF) & first_ok & cont(b2)
    four = (b0 >= 0xF0) & (b0 <= 0xF4) & first_ok & cont(b2) & cont(b3)
    cp = jnp.select(
        [ascii_, two, three, four],
        [b0, ((b0 & 0x1F) << 6) | (b1 & 0x3F), ((b0 & 0x0F) << 12) | ((b1 & 0x3F) << 6) | (b2 & 0x3F),
         ((b0 & 0x07) << 18) | ((b1 & 0x3F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F)],
        _BAD,
    )
    width = jnp.select([two, three, four], [2, 3, 4], 1)
    past = jnp.arange(size + 1) >= length
    return jnp.where(past, _END, cp).astype(jnp.int32), width.astype(jnp.int32)


def format_action(data, length):
    """TextArena's ``ActionFormattingWrapper`` rule on bytes, inside ``jit``: a reply
    with neither ``[`` nor ``]`` becomes ``"[" + reply + "]"``.

    Args:
        data: ``u8[L]``; ``length``: ``i32[]``.

    Returns:
        ``(u8[L + 2], i32[], bool[])``: the formatted bytes (zeros after the length),
        their length, and whether brackets were added.
    """
    b = jnp.asarray(data, jnp.uint8)
    size = b.shape[0]
    idx = jnp.arange(size + 2)
    used = idx[:size] < length
    wrapped = ~jnp.any(used & ((b == ord("[")) | (b == ord("]"))))
    padded = jnp.concatenate([b, jnp.zeros(2, jnp.uint8)])
    shifted = jnp.where(idx == 0, ord("["), jnp.where(idx == length + 1, ord("]"), padded[jnp.clip(idx - 1, 0, size + 1)]))
    shifted = jnp.where(idx <= length + 1, shifted, 0).astype(jnp.uint8)
    plain = jnp.where(idx < length, padded, 0).astype(jnp.uint8)
    return jnp.where(wrapped, shifted, plain), (length + 2 * wrapped).astype(jnp.int32), wrapped


def format_action_text(text: str) -> str:
    """Host side: the same rule on a string."""
    return text if ("[" in text or "]" in text) else f"[{text}]"


def _overlaps_itself(s: bytes) -> bool:
    return any(s[-k:] == s[:k] for k in range(1, len(s)))


def strip_substrings(data, length, subs: Sequence[str]):
    """Remove every occurrence of each string of ``subs``, one string after the other
    (Python's ``text.replace(s, "")`` for each ``s`` in order), inside ``jit``.

    Args:
        data: ``u8[L]``; ``length``: ``i32[]``.
        subs: static strings, none of which may overlap itself (a role tag such as
            ``"[Player 0]"``; checked).

    Returns:
        ``(u8[L], i32[], bool[])``: the bytes, their length, and whether anything was
        removed.
    """
    b = jnp.asarray(data, jnp.uint8)
    size = b.shape[0]
    length = jnp.asarray(length, jnp.int32)
    removed = jnp.zeros((), bool)
    idx = jnp.arange(size)
    for s in subs:
        sb = s.encode("utf-8")
        if _overlaps_itself(sb):
            raise ValueError(f"strip_substrings: {s!r} overlaps itself; only non-overlapping patterns are supported")
        m = len(sb)
        if m == 0 or m > size:
            continue
        padded = jnp.concatenate([b, jnp.zeros(m, jnp.uint8)])
        hit = idx + m <= length
        for t, c in enumerate(sb):
            hit = hit & (padded[idx + t] == c)
        # occurrences cannot overlap, so every hit is removed
        cover = jnp.zeros(size + m, bool)
        for t in range(m):
            cover = cover.at[idx + t].max(hit)
        keep = ~cover[:size] & (idx < length)
        dest = jnp.where(keep, jnp.cumsum(keep) - 1, size)
        b = jnp.zeros(size + 1, jnp.uint8).at[dest].set(b)[:size]
        removed = removed | jnp.any(hit)
        length = jnp.sum(keep).astype(jnp.int32)
    return b, length, removed


# ============================================================================ grammars
@functools.lru_cache(maxsize=1)
def _all_chars() -> str:
    """Every Unicode code point except the surrogates, as one string."""
    return "".join(map(chr, range(0xD800))) + "".join(map(chr, range(0xE000, 0x110000)))


def class_codepoints(pattern: str, flags: int = 0) -> list[int]:
    """Host side: the code points Python's ``re`` matches with a one-character
    ``pattern`` (``r"\\s"``, ``"[A-Za-z]"`` with ``re.IGNORECASE``, ...), sorted."""
    return sorted({ord(c) for c in re.findall(pattern, _all_chars(), flags)})


@functools.lru_cache(maxsize=None)
def _folds(char: str) -> tuple[int, ...]:
    return tuple(class_codepoints(re.escape(char), re.IGNORECASE))


def _lookup(sorted_cps: jax.Array, cp: jax.Array):
    i = jnp.clip(jnp.searchsorted(sorted_cps, cp), 0, sorted_cps.shape[0] - 1)
    return i, sorted_cps[i] == cp


@functools.lru_cache(maxsize=1)
def _unicode_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    ws = np.array(class_codepoints(r"\s"), np.int32)
    digits = class_codepoints(r"\d")
    return ws, np.array(digits, np.int32), np.array([int(chr(c)) for c in digits], np.int32)


def unicode_classes(cp) -> tuple[jax.Array, jax.Array]:
    """Python's ``\\s`` and ``\\d`` on decoded code points (``decode_utf8``), inside
    ``jit``: ``(is_space bool[N], digit i32[N])``, the digit's value or -1."""
    ws, digits, values = _unicode_tables()
    _, is_ws = _lookup(jnp.asarray(ws), cp)
    di, is_digit = _lookup(jnp.asarray(digits), cp)
    return is_ws, jnp.where(is_digit, jnp.asarray(values)[di], -1)


def run_end(inside, width) -> jax.Array:
    """``i32[N]``: from each position, where a run of characters of a class ends: the
    first position reached by walking character by character (``width``) whose
    character is not ``inside`` (the position itself when its character is not).
    ``inside`` and ``width`` are ``decode_utf8``'s ``[N]`` arrays; the last position
    (past the text) must not be inside. Pointer doubling, ``log2 N`` gathers."""
    size = inside.shape[0] - 1
    idx = jnp.arange(size + 1, dtype=jnp.int32)
    step = jnp.where(inside, jnp.minimum(idx + width, size), idx)
    for _ in range(max(1, int(np.ceil(np.log2(size + 1))) + 1)):
        step = step[step]
    return step


def digit_run_values(digit, width) -> tuple[jax.Array, jax.Array]:
    """The numbers written by runs of decimal digits, inside ``jit``.

    Args:
        digit: ``i32[N]`` from ``unicode_classes`` (-1: not a digit).
        width: ``i32[N]`` from ``decode_utf8``.

    Returns:
        ``(value i32[N], end i32[N])``: at each position that starts a run of digits
        (a digit not preceded by one) the run's ``int`` value (exact up to 999,999,999,
        ``NUMBER_CAP`` above) and where the run ends; -1 and the position elsewhere.
    """
    size = digit.shape[0] - 1
    idx = jnp.arange(size + 1, dtype=jnp.int32)
    is_d = digit >= 0
    # the bytes of each digit character, to know whether a position follows a digit
    covered = jnp.zeros(size + 5, bool)
    for k in range(4):
        covered = covered.at[idx + k].max(is_d & (k < width))
    starts = is_d & ~jnp.concatenate([jnp.zeros(1, bool), covered[:size]])
    end = run_end(is_d, width)
    count = jnp.concatenate([jnp.zeros(1, jnp.int32), jnp.cumsum(is_d, dtype=jnp.int32)])  # digits before each position
    exponent = count[end] - count[idx] - 1  # digits after this one in its run
    pow10 = jnp.asarray([10**i for i in range(9)], jnp.int32)
    term = jnp.where(is_d & (exponent <= 8), jnp.maximum(digit, 0) * pow10[jnp.clip(exponent, 0, 8)], 0)
    big = is_d & (digit > 0) & (exponent >= 9)
    csum = jnp.concatenate([jnp.zeros(1, jnp.int32), jnp.cumsum(term, dtype=jnp.int32)])  # wraps; differences stay exact
    cbig = jnp.concatenate([jnp.zeros(1, jnp.int32), jnp.cumsum(big, dtype=jnp.int32)])
    value = jnp.where(cbig[end] - cbig[idx] > 0, NUMBER_CAP, csum[end] - csum[idx])
    return jnp.where(starts, value, -1), jnp.where(starts, end, idx)


def match_sequences(cp, width, table, lengths) -> tuple[jax.Array, jax.Array]:
    """Where sequences of character sets match, inside ``jit``.

    Args:
        cp, width: ``decode_utf8``'s ``[N]`` arrays.
        table: ``i32[K, M, S]`` (static, numpy): the code points character ``t`` of
            sequence ``k`` accepts (-3 pads).
        lengths: ``i32[K]`` (static) each sequence's length.

    Returns:
        ``(ok bool[K, N], end i32[K, N])``: whether sequence ``k`` matches starting at
        each position, and the position after the match.
    """
    size = cp.shape[0] - 1
    table = jnp.asarray(table)
    plen = jnp.asarray(lengths)
    k = table.shape[0]
    pos = jnp.broadcast_to(jnp.arange(size + 1, dtype=jnp.int32), (k, size + 1))
    ok = jnp.ones((k, size + 1), bool)
    for t in range(table.shape[1]):  # static: the longest sequence
        active = (t < plen)[:, None]
        ok = ok & (jnp.any(cp[pos][..., None] == table[:, t][:, None, :], axis=-1) | ~active)
        pos = jnp.where(active, jnp.minimum(pos + width[pos], size), pos)
    return ok, pos


class LiteralGrammar:
    """The first match of a finite set of literal patterns, as Python's
    ``re.search("(p_0|p_1|...)", text)``: the leftmost start, and among patterns that
    match there, the first in order.

    Args:
        patterns: the literal strings (any characters).
        ignore_case: Python's ``re.IGNORECASE``: a pattern character matches every
            character ``re`` folds to it (``k`` matches ``K``, ``k`` and the KELVIN SIGN).

    Games that take ``match.group().lower()`` as the move (TextArena's do) need to know
    whether the matched text lowercases back to the pattern: the KELVIN SIGN does
    (``"\u212a".lower() == "k"``), LATIN SMALL LETTER LONG S (it matches ``s``) and the
    dotted and dotless I (they match ``i``) do not. ``match`` and ``search_match`` say.
    """

    def __init__(self, patterns: Sequence[str], ignore_case: bool = True):
        self.patterns = tuple(patterns)
        self.ignore_case = bool(ignore_case)
        if not self.patterns or any(len(p) == 0 for p in self.patterns):
            raise ValueError("LiteralGrammar needs non-empty patterns")
        self.regex = re.compile("|".join(f"({re.escape(p)})" for p in self.patterns), re.IGNORECASE if ignore_case else 0)
        alts = [[(_folds(c) if ignore_case else (ord(c),)) for c in p] for p in self.patterns]
        k, m = len(alts), max(len(p) for p in alts)
        s = max(len(a) for p in alts for a in p)
        table = np.full((k, m, s), -3, np.int32)  # -3: matches no code point
        lowers = np.zeros((k, m, s), bool)  # the alternative lowercases to the pattern's lowercase
        for i, p in enumerate(alts):
            for t, a in enumerate(p):
                table[i, t, : len(a)] = a
                lowers[i, t, : len(a)] = [chr(x).lower() == self.patterns[i][t].lower() for x in a]
        self._table, self._lowers = table, lowers
        self._lengths = np.array([len(p) for p in alts], np.int32)

    def search(self, text: str) -> int:
        """Host side, with Python's ``re``: the index of the pattern that gives the first
        match in ``text``, or -1."""
        return self.search_match(text)[0]

    def search_match(self, text: str) -> tuple[int, str]:
        """Host side: ``(pattern index, matched text)`` of the first match, or ``(-1, "")``."""
        m = self.regex.search(text)
        return (-1, "") if m is None else (m.lastindex - 1, m.group())

    def match_all(self, cp, width) -> tuple[jax.Array, jax.Array, jax.Array]:
        """Inside ``jit``, every match on decoded text (``decode_utf8``'s ``cp``,
        ``width``, ``[N]``): ``(ok bool[K, N], end i32[K, N], lowers bool[K, N])`` for
        pattern ``k`` starting at each position: whether it matches there, where the
        match ends, and whether the matched text lowercases to the pattern's."""
        ok, end = match_sequences(cp, width, self._table, self._lengths)
        canon, _ = match_sequences(cp, width, np.where(self._lowers, self._table, -3), self._lengths)
        return ok, end, canon

    def match(self, data, length) -> tuple[jax.Array, jax.Array, jax.Array]:
        """Inside ``jit``: ``(pattern index i32[], start byte i32[], lowers bool[])`` of
        the first match in ``data`` (``u8[L]``, ``length`` used): -1, -1 when nothing
        matches; ``lowers``: the matched text's ``str.lower()`` is the pattern's."""
        cp, width = decode_utf8(data, length)
        ok, _, canon = self.match_all(cp, width)
        anywhere = jnp.any(ok, axis=0)
        found = jnp.any(anywhere)
        start = jnp.argmax(anywhere).astype(jnp.int32)
        which = jnp.argmax(ok[:, start]).astype(jnp.int32)
        return jnp.where(found, which, -1), jnp.where(found, start, -1), found & canon[which, start]


class BracketedNumberGrammar:
    """The first match of ``\\[\\s*(\\d+)\\s*\\]`` (Python's Unicode ``\\s`` and ``\\d``)
    and ``int`` of the digits (any script's decimal digits, leading zeros allowed)."""

    REGEX = re.compile(r"\[\s*(\d+)\s*\]")

    def search(self, text: str) -> int:
        """Host side, with Python's ``re``: ``int`` of the first match's digits (above
        999,999,999: ``NUMBER_CAP``, as ``match``), or -1 when nothing matches."""
        m = self.REGEX.search(text)
        if m is None:
            return -1
        value = int(m.group(1))
        return value if value <= 999_999_999 else NUMBER_CAP

    def match(self, data, length) -> tuple[jax.Array, jax.Array]:
        """Inside ``jit``: ``(value i32[], start byte i32[])`` of the first match, -1 and
        -1 when nothing matches. The value is exact up to 999,999,999 and
        ``NUMBER_CAP`` above."""
        cp, width = decode_utf8(data, length)
        size = cp.shape[0] - 1
        idx = jnp.arange(size + 1, dtype=jnp.int32)
        is_ws, digit = unicode_classes(cp)
        values, _ = digit_run_values(digit, width)
        skip_ws = run_end(is_ws, width)
        p1 = skip_ws[jnp.minimum(idx + 1, size)]  # after "[" (one byte), skip whitespace
        p2 = run_end(digit >= 0, width)[p1]
        p3 = skip_ws[p2]
        ok = (cp == ord("[")) & (digit[p1] >= 0) & (cp[p3] == ord("]"))
        found = jnp.any(ok)
        start = jnp.argmax(ok).astype(jnp.int32)
        # p1 starts the run (after "[" and whitespace, never after a digit)
        return jnp.where(found, values[p1[start]], -1).astype(jnp.int32), jnp.where(found, start, -1)


class GreedyBracketedNumberGrammar:
    """Python's ``re.search`` of ``.*\\[(?:word\\s*)?(\\d+)\\].*`` (``re.IGNORECASE`` by
    default) and ``int`` of the group's digits.

    What that pattern finds: ``.`` stops at ``"\\n"`` and the leading ``.*`` is greedy,
    so the match is the *last* candidate on the *first* line that holds one (a
    candidate: ``[``, optionally ``word`` and whitespace, decimal digits, ``]``; the
    whitespace after ``word`` may cross lines, the ``[`` is on the line). ``\\s`` and
    ``\\d`` are Python's Unicode classes, ``word`` is matched with Python's case folding.

    Args:
        word: the optional word after ``[`` (TextArena's Connect Four: ``"col"``); it
            may not start with a decimal digit.
        ignore_case: ``re.IGNORECASE``.
    """

    def __init__(self, word: str = "col", ignore_case: bool = True):
        if not word or re.match(r"\d", word):
            raise ValueError(f"word must be non-empty and not start with a digit, got {word!r}")
        self.word = word
        self.regex = re.compile(r".*\[(?:" + re.escape(word) + r"\s*)?(\d+)\].*", re.IGNORECASE if ignore_case else 0)
        alts = [(_folds(c) if ignore_case else (ord(c),)) for c in word]
        table = np.full((1, len(alts), max(len(a) for a in alts)), -3, np.int32)
        for t, a in enumerate(alts):
            table[0, t, : len(a)] = a
        self._table, self._lengths = table, np.array([len(alts)], np.int32)

    def search(self, text: str) -> int:
        """Host side, with Python's ``re``: ``int`` of the match's digits (above
        999,999,999: ``NUMBER_CAP``, as ``match``), or -1 when nothing matches."""
        m = self.regex.search(text)
        if m is None:
            return -1
        value = int(m.group(1))
        return value if value <= 999_999_999 else NUMBER_CAP

    def match(self, data, length) -> tuple[jax.Array, jax.Array]:
        """Inside ``jit``: ``(value i32[], start byte i32[])`` of the match (the start is
        its ``[``), -1 and -1 when nothing matches. The value is exact up to
        999,999,999 and ``NUMBER_CAP`` above."""
        cp, width = decode_utf8(data, length)
        size = cp.shape[0] - 1
        idx = jnp.arange(size + 1, dtype=jnp.int32)
        is_ws, digit = unicode_classes(cp)
        values, _ = digit_run_values(digit, width)
        digits_end = run_end(digit >= 0, width)
        after = jnp.minimum(idx + 1, size)  # after "[" (one byte)
        # with the word: word, whitespace, digits, "]" (the regex tries this first)
        word_ok, word_end = match_sequences(cp, width, self._table, self._lengths)
        q = run_end(is_ws, width)[word_end[0][after]]
        with_word = word_ok[0][after] & (digit[q] >= 0) & (cp[digits_end[q]] == ord("]"))
        bare = (digit[after] >= 0) & (cp[digits_end[after]] == ord("]"))
        ok = (cp == ord("[")) & (with_word | bare)
        first = jnp.where(with_word, q, after)  # the digit run's start (never after a digit)
        line = jnp.cumsum(cp == ord("\n"), dtype=jnp.int32)  # newlines up to each position
        top = jnp.min(jnp.where(ok, line, size + 1))
        found = jnp.any(ok)
        start = jnp.max(jnp.where(ok & (line == top), idx, -1)).astype(jnp.int32)
        value = values[first[jnp.maximum(start, 0)]]
        return jnp.where(found, value, -1).astype(jnp.int32), jnp.where(found, start, -1)

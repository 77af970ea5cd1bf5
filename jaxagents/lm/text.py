"""Game text inside ``jit``: piece tables, tokenization, and move grammars over bytes.

Nothing here knows a particular game. A text game (``jaxagents_environments.text``)
describes its observations with this module's pieces and parses replies with its
grammars; a language-model loop tokenizes the observations and parses the generated
bytes with the same functions, all inside one compiled program.

**Pieces.** A game's observation text is the concatenation of a sequence of *pieces*:
``PieceTable.pieces`` is a finite, static tuple of strings (prompt fragments, messages,
card names, numbers, board rows, ...) and an observation is ``i32[P]`` piece ids, -1
for padding. Ids at or above ``T = num_pieces`` are *utterance slots*: id
``T + v * U + u`` (``U = num_slots``) stands for the text of utterance ``u`` of the
episode (a player's reply, which the game echoes) in *variant* ``v``: the slot's text is
``prefix_v + utterance + suffix_v`` (``slot_variants``; a game puts the separators that
surround an utterance there, see "Tokenization"). The utterance's text is not in the
table: the environment resolves it from its action-string table, a language-model loop
from what it generated. ``PieceTable.render`` joins pieces on the host.

**Tokenization.** ``TokenTable.build(table, tokenizer)`` encodes every piece once on the
host; ``tokenize`` then concatenates piece tokens inside ``jit`` (a cumulative sum of
lengths and one gather, no loop over pieces). Concatenating the pieces' tokens gives the
tokens of the whole string, ``tokenize(pieces) == tokenizer.encode(render(pieces))``,
when every piece boundary is a split point of the tokenizer's pre-tokenizer *and* each
piece pre-tokenizes alone as it does inside the whole string (byte-level BPE merges
never cross pre-tokens). A game's piece table is designed so that this holds for GPT-2's
byte-level regex and for Qwen2's (which splits digits one by one, lets one punctuation
character start a word, ``"[bet"``, and glues newlines to a preceding run of
punctuation, ``"]\\n"``); the text games' tests check it on every recorded observation
with a tokenizer of each kind. Where a boundary cannot be made a split point, the
game's docstring says so; the rule for utterance slots is:

* a slot's tokens are whatever the caller supplies for ``prefix_v + text + suffix_v``
  (``utterance_tokens[u, v]``). ``TokenTable.encode_slots`` encodes them whole (the
  environment's own utterances: exact wherever the boundaries are split points);
  ``slot_tokens`` builds them inside ``jit`` from a model's generated tokens as
  ``prefix + generated + suffix`` (with the bracket rule's ``[`` and ``]`` when it
  applies): the same text, token for token what the model produced, but not
  necessarily ``encode`` of the whole string (``encode(" [bet]")`` merges the space
  with the bracket; the generated tokens do not). Reinforcement learning on a model's
  own tokens is what one wants there; the decoded text is identical either way.

**Grammars.** Replies are bytes (``u8[Lb]`` plus a length), decoded as UTF-8 the way
Python decodes them with ``errors="replace"`` (an invalid byte is a character that
matches nothing). ``format_action`` applies TextArena's ``ActionFormattingWrapper`` rule
(a reply with neither ``[`` nor ``]`` is wrapped in brackets); ``LiteralGrammar`` is the
first match of a finite set of literal patterns, optionally case-insensitive with
Python's Unicode case folding (the KELVIN SIGN matches ``k``, LATIN SMALL LETTER LONG S
matches ``s``); ``BracketedNumberGrammar`` is the first match of ``\\[\\s*(\\d+)\\s*\\]``
with Python's Unicode ``\\s`` and ``\\d`` and the value of ``int`` (exact up to
999,999,999; larger values saturate at ``NUMBER_CAP``). Each grammar has a host
``search(text)`` that runs Python's ``re`` and a jit ``match`` over bytes that the tests
check against it; ``strip_substrings`` removes role tags from an echoed reply
(TextArena's ``str.replace`` of each tag, in order).

**Bytes of tokens.** ``token_bytes`` gives each token's bytes for a byte-level BPE
vocabulary and ``detokenize`` turns generated ids into the bytes the grammars read;
``byte_token_ids`` and ``byte_tokens`` go the other way one byte per token (for text
that is neither a piece nor generated, such as an echo with a role tag removed).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from typing import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

__all__ = [
    "PieceTable",
    "TokenTable",
    "tokenize",
    "token_count",
    "slot_tokens",
    "encode_fn",
    "token_bytes",
    "byte_token_ids",
    "byte_tokens",
    "detokenize",
    "encode_bytes",
    "decode_utf8",
    "format_action",
    "format_action_text",
    "strip_substrings",
    "LiteralGrammar",
    "BracketedNumberGrammar",
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


# ============================================================================ pieces
@dataclasses.dataclass(frozen=True)
class PieceTable:
    """A finite, static table of strings and the utterance slots an observation may use.

    Attributes:
        pieces: the piece strings; piece id ``i < T`` renders as ``pieces[i]``.
        num_slots: ``U``, the number of utterances an episode can hold.
        slot_variants: ``((prefix, suffix), ...)``: slot id ``T + v * U + u`` renders
            as ``prefix_v + utterance_u + suffix_v``.
    """

    pieces: tuple[str, ...]
    num_slots: int
    slot_variants: tuple[tuple[str, str], ...] = (("", ""),)

    @property
    def num_pieces(self) -> int:
        """``T``: the number of static pieces (the first slot id)."""
        return len(self.pieces)

    @property
    def num_ids(self) -> int:
        """Every valid id is below this: ``T + V * U``."""
        return self.num_pieces + len(self.slot_variants) * self.num_slots

    def slot_id(self, u: int, variant: int = 0) -> int:
        """The id of utterance ``u`` in variant ``variant``."""
        return self.num_pieces + variant * self.num_slots + u

    def strings(self, piece_ids, utterances: Sequence[str] | None = None) -> list[str]:
        """The string of every id in ``piece_ids`` (host side; -1 padding skipped).
        ``utterances[u]`` is utterance ``u``'s text (required when a slot is used)."""
        t, n = self.num_pieces, self.num_slots
        out = []
        for i in np.asarray(piece_ids).reshape(-1).tolist():
            if i < 0:
                continue
            if i < t:
                out.append(self.pieces[i])
                continue
            v, u = divmod(i - t, n)
            if v >= len(self.slot_variants) or utterances is None or u >= len(utterances) or utterances[u] is None:
                raise ValueError(f"piece id {i} is utterance slot {u} (variant {v}), which has no text here")
            prefix, suffix = self.slot_variants[v]
            out.append(prefix + utterances[u] + suffix)
        return out

    def render(self, piece_ids, utterances: Sequence[str] | None = None) -> str:
        """The text of ``piece_ids`` (``i32[P]``, -1 padding): the pieces joined, slots
        filled from ``utterances`` (host side)."""
        return "".join(self.strings(piece_ids, utterances))


# ============================================================================ tokens
def encode_fn(tokenizer) -> Callable[[str], list[int]]:
    """A function ``str -> list[int]`` from a tokenizer: a callable, or an object whose
    ``encode`` returns a list of ids or an object with ``.ids`` (``tokenizers.Tokenizer``).
    Special tokens are not added (``add_special_tokens=False`` where ``encode`` takes
    it): a piece is a fragment of a prompt, not a document."""
    if not hasattr(tokenizer, "encode"):
        if callable(tokenizer):
            return lambda s: [int(i) for i in tokenizer(s)]
        raise TypeError(f"tokenizer must have encode(str) or be callable, got {type(tokenizer).__name__}")

    def encode(s: str) -> list[int]:
        try:
            out = tokenizer.encode(s, add_special_tokens=False)
        except TypeError:
            out = tokenizer.encode(s)
        return [int(i) for i in getattr(out, "ids", out)]

    return encode


def _pad(rows: list[list[int]], width: int | None = None, fill: int = 0) -> tuple[np.ndarray, np.ndarray]:
    width = max([len(r) for r in rows] + [1]) if width is None else width
    out = np.full((len(rows), width), fill, np.int32)
    for i, r in enumerate(rows):
        if len(r) > width:
            raise ValueError(f"{len(r)} tokens do not fit in {width}")
        out[i, : len(r)] = r
    return out, np.array([len(r) for r in rows], np.int32)


@struct.dataclass
class TokenTable:
    """Every piece's tokens for one tokenizer, built on the host (``TokenTable.build``)
    and passed into ``jit`` as a pytree.

    Attributes:
        piece_tokens: ``i32[T, Lp]`` each piece's ids, padded with ``pad_id``.
        piece_lengths: ``i32[T]``.
        prefix_tokens, suffix_tokens: ``i32[V, Lx]`` each slot variant's separators
            encoded alone (for ``slot_tokens``), with ``prefix_lengths``,
            ``suffix_lengths`` ``i32[V]``.
        bracket_tokens: ``i32[2, Lx]`` ``"["`` and ``"]"`` encoded alone, with
            ``bracket_lengths`` ``i32[2]`` (the bracket rule in ``slot_tokens``).
        num_pieces, num_slots, pad_id, max_len: static ints (``max_len``: the default
            output length of ``tokenize``).
    """

    piece_tokens: jax.Array
    piece_lengths: jax.Array
    prefix_tokens: jax.Array
    prefix_lengths: jax.Array
    suffix_tokens: jax.Array
    suffix_lengths: jax.Array
    bracket_tokens: jax.Array
    bracket_lengths: jax.Array
    num_pieces: int = struct.field(pytree_node=False)
    num_slots: int = struct.field(pytree_node=False)
    pad_id: int = struct.field(pytree_node=False, default=0)
    max_len: int = struct.field(pytree_node=False, default=4096)

    @classmethod
    def build(cls, table: PieceTable, tokenizer, max_len: int = 4096, pad_id: int = 0) -> "TokenTable":
        """Encode every piece of ``table`` with ``tokenizer`` (see ``encode_fn``).

        Args:
            table: the game's ``PieceTable``.
            tokenizer: anything ``encode_fn`` accepts.
            max_len: the default length of ``tokenize``'s output.
            pad_id: the id written after the end of a token sequence.
        """
        enc = encode_fn(tokenizer)
        toks, lens = _pad([enc(p) for p in table.pieces], fill=pad_id)
        pre, pre_len = _pad([enc(p) for p, _ in table.slot_variants], fill=pad_id)
        suf, suf_len = _pad([enc(s) for _, s in table.slot_variants], fill=pad_id)
        br, br_len = _pad([enc("["), enc("]")], fill=pad_id)
        j = jnp.asarray
        return cls(j(toks), j(lens), j(pre), j(pre_len), j(suf), j(suf_len), j(br), j(br_len),
                   num_pieces=table.num_pieces, num_slots=table.num_slots, pad_id=int(pad_id), max_len=int(max_len))

    @staticmethod
    def encode_slots(table: PieceTable, tokenizer, texts: Sequence[str], num_slots: int | None = None,
                     width: int | None = None, pad_id: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Host side: the whole-string tokens of every slot variant of ``texts``:
        ``(i32[U, V, Lu], i32[U, V])`` with ``encode(prefix_v + texts[u] + suffix_v)``
        (rows past ``len(texts)`` empty; ``U = num_slots`` or ``table.num_slots``)."""
        enc = encode_fn(tokenizer)
        n = table.num_slots if num_slots is None else num_slots
        rows = [[enc(p + t + s) for p, s in table.slot_variants] for t in texts]
        rows += [[[] for _ in table.slot_variants] for _ in range(n - len(texts))]
        flat, lens = _pad([r for row in rows for r in row], width, pad_id)
        v = len(table.slot_variants)
        return flat.reshape(n, v, -1), lens.reshape(n, v)


def _lengths(piece_ids, utterance_lengths, table: TokenTable):
    """Per position: (token count, is slot, slot u, slot variant v, clipped piece id)."""
    ids = jnp.asarray(piece_ids, jnp.int32)
    t, n = table.num_pieces, table.num_slots
    is_slot = ids >= t
    rel = jnp.maximum(ids - t, 0)
    v, u = rel // n, rel % n
    pid = jnp.clip(ids, 0, t - 1)
    v = jnp.clip(v, 0, utterance_lengths.shape[1] - 1)
    length = jnp.where(is_slot, utterance_lengths[u, v], table.piece_lengths[pid])
    return jnp.where(ids >= 0, length, 0), is_slot, u, v, pid


def token_count(piece_ids, utterance_lengths, table: TokenTable) -> jax.Array:
    """``i32[]``: how many tokens ``tokenize`` would produce without truncation."""
    return jnp.sum(_lengths(piece_ids, jnp.asarray(utterance_lengths), table)[0])


def tokenize(piece_ids, utterance_tokens, utterance_lengths, table: TokenTable, max_len: int | None = None):
    """The tokens of an observation, inside ``jit``.

    Args:
        piece_ids: ``i32[P]`` piece ids and slot ids, -1 padding (anywhere).
        utterance_tokens: ``i32[U, V, Lu]`` the tokens of each slot variant's whole
            text (``TokenTable.encode_slots`` or ``slot_tokens``).
        utterance_lengths: ``i32[U, V]``.
        table: the game's ``TokenTable``.
        max_len: the output length (static); ``table.max_len`` when None.

    Returns:
        ``(ids i32[max_len], length i32[])``: the concatenated tokens, ``table.pad_id``
        after ``length``. A text longer than ``max_len`` tokens is cut to ``max_len``
        (``token_count`` gives the full count).
    """
    max_len = table.max_len if max_len is None else int(max_len)
    utterance_tokens = jnp.asarray(utterance_tokens, jnp.int32)
    utterance_lengths = jnp.asarray(utterance_lengths, jnp.int32)
    length, is_slot, u, v, pid = _lengths(piece_ids, utterance_lengths, table)
    ends = jnp.cumsum(length)
    starts = ends - length
    k = jnp.arange(max_len, dtype=jnp.int32)
    # the position whose token span holds output token k (empty spans are skipped)
    p = jnp.clip(jnp.searchsorted(ends, k, side="right"), 0, length.shape[0] - 1)
    j = k - starts[p]
    from_piece = table.piece_tokens[pid[p], jnp.clip(j, 0, table.piece_tokens.shape[1] - 1)]
    from_slot = utterance_tokens[u[p], v[p], jnp.clip(j, 0, utterance_tokens.shape[2] - 1)]
    total = ends[-1]
    out = jnp.where(k < total, jnp.where(is_slot[p], from_slot, from_piece), table.pad_id)
    return out.astype(jnp.int32), jnp.minimum(total, max_len).astype(jnp.int32)


def slot_tokens(generated, generated_length, table: TokenTable, wrapped=False, width: int | None = None):
    """A slot's tokens from a model's generated tokens, inside ``jit``.

    Args:
        generated: ``i32[Lg]`` the reply's tokens (as generated, no separators).
        generated_length: ``i32[]``.
        table: the game's ``TokenTable``.
        wrapped: ``bool[]`` the bracket rule wrapped the reply (``format_action``):
            ``[`` and ``]`` tokens go around it, so the slot's text is the echoed text.
        width: the output width (static); ``Lg + 2 * (bracket and separator room)``
            when None.

    Returns:
        ``(i32[V, width], i32[V])``: for each slot variant ``v``, ``prefix_v +
        ("[" if wrapped) + generated + ("]" if wrapped) + suffix_v`` as tokens (the
        same text as the slot's; the tokens of the reply kept as generated). When the
        echo is not the reply with brackets (TextArena removed a role tag from it), pass
        the echo's tokens as ``generated`` instead (``byte_tokens`` of its bytes).
    """
    generated = jnp.asarray(generated, jnp.int32)
    lx = max(table.prefix_tokens.shape[1], table.suffix_tokens.shape[1], table.bracket_tokens.shape[1])
    width = generated.shape[0] + 4 * lx if width is None else int(width)
    wrapped = jnp.asarray(wrapped, bool)
    gl = jnp.asarray(generated_length, jnp.int32)
    ob = jnp.where(wrapped, table.bracket_lengths[0], 0)
    cb = jnp.where(wrapped, table.bracket_lengths[1], 0)

    def one(pre, pre_len, suf, suf_len):
        # five segments: prefix, "[", generated, "]", suffix
        lens = jnp.stack([pre_len, ob, gl, cb, suf_len])
        ends = jnp.cumsum(lens)
        starts = ends - lens
        k = jnp.arange(width, dtype=jnp.int32)
        seg = jnp.clip(jnp.searchsorted(ends, k, side="right"), 0, 4)
        j = k - starts[seg]
        pick = lambda a: a[jnp.clip(j, 0, a.shape[0] - 1)]
        tok = jnp.select(
            [seg == 0, seg == 1, seg == 2, seg == 3],
            [pick(pre), pick(table.bracket_tokens[0]), pick(generated), pick(table.bracket_tokens[1])],
            pick(suf),
        )
        return jnp.where(k < ends[-1], tok, table.pad_id), jnp.minimum(ends[-1], width)

    return jax.vmap(one)(table.prefix_tokens, table.prefix_lengths, table.suffix_tokens, table.suffix_lengths)


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte-level alphabet: byte -> the printable character standing for it."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\u00a1"), ord("\u00ac") + 1)) + list(range(ord("\u00ae"), ord("\u00ff") + 1))
    chars, n = keep[:], 0
    for b in range(256):
        if b not in keep:
            keep.append(b)
            chars.append(256 + n)
            n += 1
    return dict(zip(keep, map(chr, chars)))


def token_bytes(vocab: dict[str, int], width: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Host side: each token's bytes for a byte-level BPE vocabulary (GPT-2's alphabet,
    as in Qwen, Llama 3 and GPT-2 ``tokenizer.json`` files): ``(u8[N, width],
    i32[N])`` indexed by id (``N = max id + 1``). Tokens outside the alphabet (added
    special tokens) get length 0."""
    inverse = {c: b for b, c in _bytes_to_unicode().items()}
    rows = {}
    for tok, i in vocab.items():
        if all(c in inverse for c in tok):
            rows[int(i)] = bytes(inverse[c] for c in tok)
    n = max(vocab.values()) + 1
    width = max([len(b) for b in rows.values()] + [1]) if width is None else width
    out = np.zeros((n, width), np.uint8)
    lens = np.zeros(n, np.int32)
    for i, b in rows.items():
        out[i, : len(b)] = np.frombuffer(b, np.uint8)
        lens[i] = len(b)
    return out, lens


def byte_token_ids(vocab: dict[str, int]) -> np.ndarray:
    """Host side: ``i32[256]`` the id of each single-byte token of a byte-level BPE
    vocabulary (every such vocabulary has all 256): with ``byte_tokens`` any bytes can
    be tokenized inside ``jit``, one token per byte (the exact text, though not the
    tokenizer's own split), e.g. an echoed reply that is not the generated text."""
    chars = _bytes_to_unicode()
    missing = [b for b in range(256) if chars[b] not in vocab]
    if missing:
        raise ValueError(f"the vocabulary has no single-byte token for bytes {missing[:8]}: not a byte-level BPE")
    return np.array([vocab[chars[b]] for b in range(256)], np.int32)


def byte_tokens(data, length, byte_ids) -> tuple[jax.Array, jax.Array]:
    """Inside ``jit``: ``(i32[L], i32[])`` one token per byte of ``data`` (``u8[L]``,
    ``length`` used; 0 after), from ``byte_token_ids``."""
    data = jnp.asarray(data)
    ids = jnp.asarray(byte_ids)[data.astype(jnp.int32)]
    return jnp.where(jnp.arange(data.shape[0]) < length, ids, 0).astype(jnp.int32), jnp.asarray(length, jnp.int32)


def detokenize(ids, length, table_bytes, table_lengths, max_bytes: int):
    """The bytes of token ids, inside ``jit``: ``(u8[max_bytes], i32[])`` from ``ids``
    ``i32[L]`` (the first ``length`` used) and ``token_bytes``'s table (cut at
    ``max_bytes``)."""
    ids = jnp.asarray(ids, jnp.int32)
    n = table_lengths.shape[0]
    valid = jnp.arange(ids.shape[0]) < length
    safe = jnp.clip(ids, 0, n - 1)
    lens = jnp.where(valid & (ids >= 0) & (ids < n), jnp.asarray(table_lengths)[safe], 0)
    ends = jnp.cumsum(lens)
    starts = ends - lens
    k = jnp.arange(max_bytes, dtype=jnp.int32)
    p = jnp.clip(jnp.searchsorted(ends, k, side="right"), 0, ids.shape[0] - 1)
    tb = jnp.asarray(table_bytes)
    b = tb[safe[p], jnp.clip(k - starts[p], 0, tb.shape[1] - 1)]
    total = jnp.minimum(ends[-1], max_bytes)
    return jnp.where(k < total, b, 0).astype(jnp.uint8), total.astype(jnp.int32)


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

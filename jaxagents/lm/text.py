"""Game text inside ``jit``: piece tables, tokenization, and move grammars over bytes.

Nothing here knows a particular game. A text game (``jaxagents_environments.text``)
describes its observations with this module's pieces and parses replies with the
grammars of ``jaxagents.lm.grammar``; a language-model loop tokenizes the observations and parses the generated
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

**Bytes.** A reply is read as bytes: ``Tokenizer.token_bytes`` spells each token and
``jaxagents.lm.generate.text_bytes`` joins a generated sequence; ``byte_tokens`` goes
back, one single-byte token per byte (``Tokenizer.byte_token_ids``), for an echo that
is not the generated text. The grammars that read replies are ``jaxagents.lm.grammar``.
"""

from __future__ import annotations

import dataclasses
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
    "byte_tokens",
]



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


def byte_tokens(data, length, byte_ids) -> tuple[jax.Array, jax.Array]:
    """Inside ``jit``: ``(i32[L], i32[])`` one token per byte of ``data`` (``u8[L]``,
    ``length`` used; 0 after), from ``Tokenizer.byte_token_ids``."""
    data = jnp.asarray(data)
    ids = jnp.asarray(byte_ids)[data.astype(jnp.int32)]
    return jnp.where(jnp.arange(data.shape[0]) < length, ids, 0).astype(jnp.int32), jnp.asarray(length, jnp.int32)

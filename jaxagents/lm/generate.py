"""Generation as a pure function: prompt in, sampled tokens, their log-probabilities and
masks out, all inside ``jit`` (a ``lax.while_loop`` over tokens with a KV cache), so a
whole multi-turn episode -- prompt, generate, parse, step, next turn -- can run in one
compiled program over a batch of games.

Shapes: ``B`` sequences, ``N = sampling.max_new_tokens`` new tokens, ``V`` vocabulary.

Sampling (``Sampling``, static): temperature (0 is greedy), top-k (0 is off), top-p
(1 is off), applied in that order to the logits; a sequence stops after a stop token
(kept in the output), after a token whose bytes complete a stop string (the token kept;
needs the tokenizer's ``token_bytes``), when its constrained choice is complete, or at
the budget. ``logprobs`` are the log-probabilities of the drawn tokens under the
distribution they were drawn from (after temperature, top-k/top-p and the constraint;
greedy decoding reports the untempered distribution's), which is what a policy
gradient on sampled tokens needs.

Constrained decoding (``Choices``): the output is forced to be one of ``M`` strings,
given as token sequences (``Choices.build`` encodes them with the tokenizer), with a
per-sequence mask of the strings allowed now (a legal-move grammar). At each step only
the next tokens of strings still consistent with the output so far are allowed; the
sequence ends when a string is complete, and ``Generation.choice`` says which. The
strings must be prefix-free as token sequences (checked when building).
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxagents.lm.config import ModelConfig
from jaxagents.lm.model import KVCache, forward, init_cache


@dataclasses.dataclass(frozen=True)
class Sampling:
    """How tokens are drawn (static, hashable; see the module docstring).

    Attributes:
        max_new_tokens: the budget N (>= 1).
        temperature: >= 0; 0 decodes greedily.
        top_k: keep the k most likely tokens (0: all).
        top_p: keep the smallest set of most likely tokens whose probability reaches
            ``top_p`` (1: all), in (0, 1].
        stop_token_ids: ids that end a sequence (e.g. the tokenizer's EOS).
        stop_strings: texts that end a sequence once generated (needs token bytes).
    """

    max_new_tokens: int = 32
    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    stop_token_ids: tuple = ()
    stop_strings: tuple = ()

    def __post_init__(self):
        if not isinstance(self.max_new_tokens, int) or self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be a positive integer, got {self.max_new_tokens!r}")
        if not self.temperature >= 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature!r}")
        if not isinstance(self.top_k, int) or self.top_k < 0:
            raise ValueError(f"top_k must be an integer >= 0 (0: off), got {self.top_k!r}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p!r}")
        object.__setattr__(self, "stop_token_ids", tuple(int(t) for t in self.stop_token_ids))
        object.__setattr__(self, "stop_strings", tuple(str(s) for s in self.stop_strings))
        if any(not s for s in self.stop_strings):
            raise ValueError("stop_strings must be non-empty strings")


@struct.dataclass
class TokenBytes:
    """Every token's bytes (``Tokenizer.token_bytes``): ``bytes u8[V, W]``, ``length i32[V]``."""

    bytes: jax.Array
    length: jax.Array

    @classmethod
    def of(cls, tokenizer) -> "TokenBytes":
        """The table of a ``jaxagents.lm.tokenizer.Tokenizer``, on the device."""
        table, length = tokenizer.token_bytes()
        return cls(jnp.asarray(table), jnp.asarray(length))


@struct.dataclass
class Choices:
    """Strings the output is constrained to: ``ids i32[M, C]`` (padded), ``length i32[M]``."""

    ids: jax.Array
    length: jax.Array

    @classmethod
    def build(cls, tokenizer, strings: Sequence[str]) -> "Choices":
        """Encode ``strings`` (no special tokens); refuses an empty set, an empty string, and
        strings whose token sequences are prefixes of one another."""
        if not strings:
            raise ValueError("choices must name at least one string")
        seqs = [tokenizer.encode(s) for s in strings]
        for s, q in zip(strings, seqs):
            if not q:
                raise ValueError(f"choice {s!r} encodes to no tokens")
        for i, a in enumerate(seqs):
            for j, b in enumerate(seqs):
                if i != j and len(a) <= len(b) and b[: len(a)] == a:
                    raise ValueError(f"choices must be prefix-free as tokens: {strings[i]!r} is a prefix of {strings[j]!r}")
        width = max(len(q) for q in seqs)
        ids = np.zeros((len(seqs), width), np.int32)
        for i, q in enumerate(seqs):
            ids[i, : len(q)] = q
        return cls(jnp.asarray(ids), jnp.asarray([len(q) for q in seqs], jnp.int32))


@struct.dataclass
class Generation:
    """What ``generate`` returns.

    Attributes:
        tokens: ``i32[B, N]`` generated ids (0 after a sequence ended).
        logprobs: ``f32[B, N]`` log-probability of each drawn token (0 where masked).
        mask: ``bool[B, N]`` the token was generated (True up to and including the
            token that stopped the sequence).
        length: ``i32[B]`` generated tokens per sequence.
        choice: ``i32[B]`` the completed choice (constrained decoding), else -1.
        cache: the KV cache after the prompt and the generated tokens (the last token of a
            sequence stopped by the budget is not in it).
    """

    tokens: jax.Array
    logprobs: jax.Array
    mask: jax.Array
    length: jax.Array
    choice: jax.Array
    cache: KVCache


def _filter(logits: jax.Array, sampling: Sampling) -> jax.Array:
    """Temperature, then top-k, then top-p on ``f32[B, V]`` (removed tokens at -inf)."""
    if sampling.temperature > 0:
        logits = logits / sampling.temperature
    if sampling.top_k:
        kth = jax.lax.top_k(logits, min(sampling.top_k, logits.shape[-1]))[0][:, -1:]
        logits = jnp.where(logits < kth, -jnp.inf, logits)
    if sampling.top_p < 1:
        order = jnp.argsort(-logits, axis=-1)
        ordered = jnp.take_along_axis(logits, order, axis=-1)
        probs = jax.nn.softmax(ordered, axis=-1)
        before = jnp.cumsum(probs, axis=-1) - probs  # mass of the strictly more likely tokens
        keep_sorted = before < sampling.top_p
        keep = jnp.zeros_like(keep_sorted).at[jnp.arange(logits.shape[0])[:, None], order].set(keep_sorted)
        logits = jnp.where(keep, logits, -jnp.inf)
    return logits


def _stop_string_hit(tail, new, new_len, stops):
    """Whether a stop string ends inside the newly generated bytes.

    ``tail u8[B, K]`` the K bytes generated before (right-aligned, zero-filled at the
    start), ``new u8[B, W]`` with ``new_len i32[B]`` valid; ``stops`` a list of byte
    strings no longer than K + 1. Returns ``(hit bool[B], tail u8[B, K])``.
    """
    bsz, k = tail.shape
    window = jnp.concatenate([tail, new], axis=1)  # [B, K + W]; new bytes at K .. K + n - 1
    hit = jnp.zeros((bsz,), bool)
    for s in stops:
        pattern = jnp.asarray(np.frombuffer(s, np.uint8))
        ends = k + jnp.arange(new.shape[1])  # candidate end positions of the new bytes
        starts = ends - len(s) + 1
        idx = starts[:, None] + jnp.arange(len(s))[None, :]  # [W, len]
        match = (window[:, idx] == pattern).all(-1) & (jnp.arange(new.shape[1])[None, :] < new_len[:, None])
        hit = hit | match.any(-1)
    # the new tail: the last K bytes of the window's valid part
    start = new_len[:, None] + jnp.arange(k)[None, :]
    return hit, jnp.take_along_axis(window, start, axis=1)


def prefill(params: dict, cfg: ModelConfig, prompt: jax.Array, prompt_length: jax.Array, cache: KVCache,
            chunk: int = 128) -> tuple[jax.Array, KVCache]:
    """Read prompts into a cache ``chunk`` tokens at a time, up to the longest (a
    ``while_loop``): ``(logits at each row's last prompt token f32[B, V], cache)``.
    ``prompt`` ``i32[B, T]`` left-aligned with ``prompt_length`` ``i32[B]`` valid."""
    bsz, t = prompt.shape
    padded = jnp.pad(prompt, ((0, 0), (0, -t % chunk)))

    def body(carry):
        i, cache, logits = carry
        start = i * chunk
        piece = jax.lax.dynamic_slice_in_dim(padded, start, chunk, axis=1)
        valid = jnp.clip(prompt_length - start, 0, chunk)
        out, cache = forward(params, cfg, piece, cache, valid, last_only=True)
        ends_here = (prompt_length > start) & (prompt_length <= start + chunk)
        return i + 1, cache, jnp.where(ends_here[:, None], out, logits)

    logits = jnp.zeros((bsz, cfg.vocab_size), jnp.float32)
    steps = (jnp.max(prompt_length) + chunk - 1) // chunk
    _, cache, logits = jax.lax.while_loop(lambda c: c[0] < steps, body, (jnp.zeros((), jnp.int32), cache, logits))
    return logits, cache


def generate(params: dict, cfg: ModelConfig, prompt: jax.Array, prompt_length: jax.Array, key: jax.Array,
             sampling: Sampling = Sampling(), cache_size: int | None = None, token_bytes: TokenBytes | None = None,
             choices: Choices | None = None, allowed: jax.Array | None = None,
             prefill_chunk: int | None = 128, cache: KVCache | None = None) -> Generation:
    """Continue each prompt (jit-able; ``cfg`` and ``sampling`` are static).

    Args:
        params: the model's weights.
        cfg: its config.
        prompt: ``i32[B, T]`` prompts, left-aligned (valid tokens first).
        prompt_length: ``i32[B]`` valid prompt tokens, each >= 1.
        key: PRNG key of the sampling.
        sampling: see ``Sampling``.
        cache_size: slots of the KV cache (default ``T + N``); must be >= ``T + N``.
        token_bytes: the tokenizer's ``TokenBytes``, needed for ``stop_strings``.
        choices: constrain the output to one of these strings (see the module docstring).
        allowed: ``bool[B, M]`` the choices allowed per sequence (default: all); a row
            must allow at least one.
        prefill_chunk: read the prompts ``prefill_chunk`` tokens at a time, and only as
            far as the longest one (a ``while_loop``): the attention scores of a chunk
            are ``[B, H, chunk, cache_size]``, so a wide batch of long prompts fits in
            memory, and padding past the longest prompt costs nothing. None reads the
            whole width at once (fastest for short prompts).
        cache: continue from this cache instead of an empty one: each row's prompt
            goes to the slots after ``cache.length`` (the row's earlier tokens are its
            context, already computed: prefix caching across the turns of a game).
            ``cache_size`` is then the cache's; a row's slots past it are dropped, so the
            caller keeps ``cache.length + prompt_length + N`` within it.

    Returns:
        a ``Generation``.
    """
    bsz, t = prompt.shape
    n = sampling.max_new_tokens
    cache_size = (t + n if cache_size is None else cache_size) if cache is None else cache.size
    if cache is None and cache_size < t + n:
        raise ValueError(f"cache_size must be >= prompt width + max_new_tokens = {t + n}, got {cache_size}")
    if sampling.stop_strings and token_bytes is None:
        raise ValueError("stop_strings need token_bytes (TokenBytes.of(tokenizer))")
    stops = [s.encode("utf-8") for s in sampling.stop_strings]
    tail_width = max([len(s) for s in stops], default=1) - 1 or 1
    stop_ids = jnp.asarray(sampling.stop_token_ids or (-1,), jnp.int32)
    num_choices = 0 if choices is None else choices.ids.shape[0]
    if choices is not None:
        allowed = jnp.ones((bsz, num_choices), bool) if allowed is None else jnp.asarray(allowed, bool)

    if cache is None:
        cache = init_cache(cfg, bsz, cache_size, params["embed"].dtype)
    prompt_length = jnp.asarray(prompt_length, jnp.int32)
    if prefill_chunk is None or prefill_chunk >= t:
        logits, cache = forward(params, cfg, prompt, cache, prompt_length, last_only=True)
    else:
        logits, cache = prefill(params, cfg, prompt, prompt_length, cache, int(prefill_chunk))

    def body(carry):
        j, cache, logits, key, done, out, tail, alive, choice = carry
        key, sub = jax.random.split(key)
        if choices is not None:
            # the next token of every string still alive, and not yet complete
            open_ = alive & (j < choices.length)[None, :]  # [B, M]
            nxt = choices.ids[:, jnp.minimum(j, choices.ids.shape[1] - 1)]  # [M]
            ok = jnp.zeros(logits.shape, jnp.int32).at[jnp.arange(bsz)[:, None], jnp.broadcast_to(nxt, open_.shape)].max(
                open_.astype(jnp.int32)) > 0
            logits = jnp.where(ok, logits, -jnp.inf)
        filtered = _filter(logits, sampling)
        logp = jax.nn.log_softmax(filtered if sampling.temperature > 0 else logits, axis=-1)
        if sampling.temperature > 0:
            token = jax.random.categorical(sub, filtered, axis=-1).astype(jnp.int32)
        else:
            token = jnp.argmax(filtered, axis=-1).astype(jnp.int32)
        live = ~done
        lp = jnp.take_along_axis(logp, token[:, None], axis=-1)[:, 0]
        tokens, logprobs, mask = out
        tokens = tokens.at[:, j].set(jnp.where(live, token, 0))
        logprobs = logprobs.at[:, j].set(jnp.where(live, lp, 0.0))
        mask = mask.at[:, j].set(live)

        stop = jnp.isin(token, stop_ids)
        if stops:
            hit, tail = _stop_string_hit(tail, token_bytes.bytes[token], jnp.where(live, token_bytes.length[token], 0), stops)
            stop = stop | hit
        if choices is not None:
            alive = alive & (nxt[None, :] == token[:, None]) & open_
            complete = alive & (choices.length[None, :] == j + 1)
            choice = jnp.where(live & complete.any(-1), jnp.argmax(complete, axis=-1), choice)
            stop = stop | complete.any(-1)
        done = done | stop | (j + 1 >= n)
        # feed the drawn token of sequences still going (one that just stopped is not fed)
        logits, cache = forward(params, cfg, token[:, None], cache, (live & ~done).astype(jnp.int32), last_only=True)
        return j + 1, cache, logits, key, done, (tokens, logprobs, mask), tail, alive, choice

    def cond(carry):
        return (carry[0] < n) & ~carry[4].all()

    out = (jnp.zeros((bsz, n), jnp.int32), jnp.zeros((bsz, n), jnp.float32), jnp.zeros((bsz, n), bool))
    alive = allowed if choices is not None else jnp.zeros((bsz, 0), bool)
    carry = (jnp.zeros((), jnp.int32), cache, logits, key, jnp.zeros((bsz,), bool), out,
             jnp.zeros((bsz, tail_width), jnp.uint8), alive, jnp.full((bsz,), -1, jnp.int32))
    carry = jax.lax.while_loop(cond, body, carry)
    _, cache, _, _, _, (tokens, logprobs, mask), _, _, choice = carry
    return Generation(tokens, logprobs, mask, mask.sum(-1).astype(jnp.int32), choice, cache)


def text_bytes(tokens: jax.Array, mask: jax.Array, token_bytes: TokenBytes) -> tuple[jax.Array, jax.Array]:
    """The bytes of generated text, inside ``jit``: ``(u8[B, N * W], i32[B])`` for
    ``tokens i32[B, N]`` with ``mask bool[B, N]`` (masked tokens contribute nothing),
    left-aligned and zero-padded."""
    bsz, n = tokens.shape
    width = token_bytes.bytes.shape[1]
    spelled = token_bytes.bytes[tokens]  # [B, N, W]
    count = jnp.where(mask, token_bytes.length[tokens], 0)  # [B, N]
    start = jnp.cumsum(count, axis=1) - count
    dest = start[:, :, None] + jnp.arange(width)[None, None, :]
    valid = jnp.arange(width)[None, None, :] < count[:, :, None]
    dest = jnp.where(valid, dest, n * width)  # out of range: dropped
    out = jnp.zeros((bsz, n * width), jnp.uint8)
    out = out.at[jnp.arange(bsz)[:, None, None], dest].set(spelled, mode="drop")
    return out, count.sum(-1).astype(jnp.int32)

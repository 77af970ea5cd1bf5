"""Whole self-play episodes of a text game, generation included, as one compiled program.

``play`` runs ``B`` games side by side under one ``lax.scan`` over turns. Every turn,
in every game still going: the observation of the player to act (piece ids) becomes
prompt tokens inside ``jit`` (``jaxagents.lm.text.tokenize``), the shared model
generates a reply (``jaxagents.lm.generate``), the reply's bytes are parsed by the
game's grammar, and the game steps with the parsed move; the reply's tokens are kept
so that later observations, which echo it, are tokenized from them. No Python loop
runs over games, turns or tokens.

Prefix caching: each seat of each game keeps the KV cache of its last prompt and reply,
with their tokens. A seat's next prompt begins with its previous one (TextArena's
observations only grow), so only the tokens after the longest common prefix are read
again -- a turn reads the few new messages, not the whole history. Every seat's cache
starts with the first prompt of that seat in game 0, read once: the system prompt that
all games share is not read again for each game. The cached keys of a prefix depend only
on its tokens and positions, so this changes no result (tested).

A text game is any environment with the text capability (``jaxagents_environments.text``
documents it): ``piece_table``, ``capacity``, ``num_moves``, ``actions`` and
``action_moves`` (its action strings and their move codes), ``parse(bytes, length)``,
``echo(bytes, length)``, ``legal_actions(state)`` and ``step_move(key, state, move,
params)``, with ``timestep.obs[role]`` holding the piece ids of each player's
observation first and ``timestep.info["player"]`` the player to act.

Replies are free text parsed by the game's grammar, or (``constrained=True``) one of
the game's canonical move strings, drawn with ``Choices`` among the moves legal now:
then every move's probability is exact, and the reply is never invalid.

Shapes: ``B`` games, ``K = max_turns``, ``L = prompt_len`` prompt tokens, ``N =
sampling.max_new_tokens``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxagents.lm.config import ModelConfig
from jaxagents.lm.generate import Choices, Sampling, TokenBytes, generate, prefill, text_bytes
from jaxagents.lm.model import KVCache, init_cache
from jaxagents.lm.text import TokenTable, slot_tokens, tokenize


@dataclasses.dataclass(frozen=True)
class Prompt:
    """Tokens around every observation: ``prefix + observation + suffix`` (a chat
    template's turn markers, say). Host-built; ``Prompt.chat(tokenizer)`` renders the
    tokenizer's template around a user message."""

    prefix: tuple = ()
    suffix: tuple = ()

    @classmethod
    def chat(cls, tokenizer, system: str | None = None) -> "Prompt":
        """The tokenizer's chat template around one user message (with the assistant's
        generation prompt), the observation being that message; the template's own
        text is encoded on each side of it."""
        marker = "\u2063OBSERVATION\u2063"
        messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": marker}]
        text = tokenizer.apply_chat_template(messages, add_generation_prompt=True)
        before, after = text.split(marker)
        return cls(tuple(tokenizer.encode(before)), tuple(tokenizer.encode(after)))


@struct.dataclass
class Turns:
    """What ``play`` records, every field with leading axes ``[K, B]``.

    Attributes:
        active: ``bool`` the game was going at this turn (everything else is padding
            where it is False).
        player: ``i32`` the seat that replied.
        prompt: ``i32[L]`` the prompt tokens; ``prompt_length`` ``i32``.
        tokens, logprobs, mask: ``[N]`` the reply (``jaxagents.lm.generate.Generation``).
        move: the parsed move (``i32`` code, or the game's structured move, e.g. an offer);
            ``invalid``: ``bool`` it was not a valid move.
        reward: ``f32[2]`` the step's rewards by seat; ``done``: ``bool`` the game ended.
        overflow: ``bool`` the prompt was longer than ``L`` tokens and was cut.
        allowed: ``bool[M]`` the moves legal at the turn (constrained replies: the
            choices the reply was drawn among; ``[0]`` for free replies), so that a
            learner can score the reply under the distribution it was drawn from.
    """

    active: jax.Array
    player: jax.Array
    prompt: jax.Array
    prompt_length: jax.Array
    tokens: jax.Array
    logprobs: jax.Array
    mask: jax.Array
    move: jax.Array
    invalid: jax.Array
    reward: jax.Array
    done: jax.Array
    overflow: jax.Array
    allowed: jax.Array


@dataclasses.dataclass(frozen=True)
class TextTables:
    """The host-built tables ``play`` needs for one game and one tokenizer (a pytree of
    arrays plus static facts; build with ``TextTables.build``)."""

    tokens: TokenTable
    token_bytes: TokenBytes
    byte_tokens: Any  # i32[256]: the single-byte token of each byte (Tokenizer.byte_token_ids)
    choices: Choices | None  # the canonical move strings (None: structured moves, free replies only)
    canonical: Any  # i32[num_moves]: the action index of each move's canonical string, or None
    stop_ids: tuple

    @classmethod
    def build(cls, env, tokenizer, stop_ids=None) -> "TextTables":
        """Tables of ``env`` (a text game) for ``tokenizer`` (a ``jaxagents.lm.tokenizer.Tokenizer``);
        ``stop_ids`` (default: the tokenizer's EOS) are not part of a reply's text."""
        table, length = tokenizer.token_bytes()
        choices, canonical = None, None
        if not isinstance(env.action_moves, (dict, tuple, list)) and not hasattr(env.action_moves, "replace"):
            # a game whose moves are codes (not structured, like a negotiation's offers):
            # its canonical move strings, for constrained replies
            moves = np.asarray(env.action_moves)
            canonical = []
            for m in range(env.num_moves):
                hits = np.flatnonzero(moves == m)
                if not len(hits):
                    raise ValueError(f"move {m} of {type(env).__name__} has no action string")
                canonical.append(int(hits[0]))
            choices = Choices.build(tokenizer, [env.actions[i] for i in canonical])
            canonical = jnp.asarray(canonical, jnp.int32)
        stop = (tokenizer.eos_token_id,) if stop_ids is None and tokenizer.eos_token_id is not None else tuple(stop_ids or ())
        return cls(TokenTable.build(env.piece_table, tokenizer), TokenBytes(jnp.asarray(table), jnp.asarray(length)),
                   jnp.asarray(tokenizer.byte_token_ids()), choices, canonical, stop)


@dataclasses.dataclass(frozen=True)
class Opponent:
    """A scripted player for ``play``'s ``opponent``: in the seat it plays, its reply
    replaces the model's, and later observations echo it.

    Attributes:
        policy: ``(key, state) -> i32[]`` the index into ``strings`` of the reply to
            make in one game's state (jit-able; ``play`` vmaps it over games).
        strings: the replies it can make (host side).
        tokens: ``i32[R, W]`` each reply's tokens; ``length``: ``i32[R]``.
        moves: each reply's move as the game parses it (``i32[R]`` codes, or the game's
            structured moves stacked over the replies).

    Build with ``Opponent.build(env, tokenizer, policy, strings)``.
    """

    policy: Any
    strings: tuple
    tokens: Any
    length: Any
    moves: Any

    @classmethod
    def build(cls, env, tokenizer, policy, strings=None) -> "Opponent":
        """``policy`` replying ``strings`` (default: the game's canonical move strings,
        indexed by move code) under ``tokenizer``."""
        if strings is None:
            codes = np.asarray(env.action_moves)
            strings = [env.actions[int(np.flatnonzero(codes == m)[0])] for m in range(env.num_moves)]
        strings = tuple(strings)
        if not strings:
            raise ValueError("an opponent needs at least one reply string")
        seqs = [tokenizer.encode(a) for a in strings]
        ids = np.zeros((len(seqs), max(1, max(len(q) for q in seqs))), np.int32)
        for i, q in enumerate(seqs):
            ids[i, : len(q)] = q
        parsed = [env.parse_text(a) for a in strings]
        moves = jax.tree_util.tree_map(lambda *m: jnp.asarray(np.stack([np.asarray(x) for x in m])), *parsed)
        return cls(policy, strings, jnp.asarray(ids), jnp.asarray([len(q) for q in seqs], jnp.int32), moves)


def _concat(parts: list[tuple[jax.Array, jax.Array]], width: int) -> tuple[jax.Array, jax.Array]:
    """Concatenate ``(tokens i32[W_i], length)`` pieces into ``i32[width]`` (cut), inside ``jit``."""
    lens = jnp.stack([jnp.asarray(n, jnp.int32) for _, n in parts])
    ends = jnp.cumsum(lens)
    starts = ends - lens
    k = jnp.arange(width, dtype=jnp.int32)
    seg = jnp.clip(jnp.searchsorted(ends, k, side="right"), 0, len(parts) - 1)
    out = jnp.zeros(width, jnp.int32)
    for i, (toks, _) in enumerate(parts):
        j = jnp.clip(k - starts[i], 0, toks.shape[0] - 1)
        out = jnp.where(seg == i, toks[j], out)
    return jnp.where(k < ends[-1], out, 0), jnp.minimum(ends[-1], width)


def slot_width(tables: TextTables, max_new_tokens: int) -> int:
    """The width of an utterance slot's tokens for replies of ``max_new_tokens`` tokens
    (the reply plus room for the brackets and the slot's separators)."""
    return max_new_tokens + 4 * int(max(tables.tokens.prefix_tokens.shape[1], tables.tokens.suffix_tokens.shape[1],
                                        tables.tokens.bracket_tokens.shape[1], 1))


def prompt_tokens(env, tables: TextTables, prompt: Prompt, pieces: jax.Array, utt: jax.Array, utt_len: jax.Array,
                  prompt_len: int) -> tuple[jax.Array, jax.Array, jax.Array]:
    """One prompt, inside ``jit``: ``prompt.prefix + observation + prompt.suffix`` as
    ``(ids i32[prompt_len], length i32[], overflow bool[])`` from an observation's piece
    ids ``pieces i32[P]`` and the utterance slots' tokens ``utt i32[U, V, W]``,
    ``utt_len i32[U, V]`` (``echo_slots``); ``overflow``: the prompt was cut."""
    pre = jnp.asarray(prompt.prefix or (0,), jnp.int32)
    suf = jnp.asarray(prompt.suffix or (0,), jnp.int32)
    body, body_len = tokenize(pieces[: env.capacity], utt, utt_len, tables.tokens, max_len=prompt_len)
    overflow = body_len + len(prompt.prefix) + len(prompt.suffix) > prompt_len
    ids, length = _concat([(pre, len(prompt.prefix)), (body, body_len), (suf, len(prompt.suffix))], prompt_len)
    return ids, length, overflow | (body_len >= prompt_len)


def echo_slots(env, tables: TextTables, tokens: jax.Array, mask: jax.Array, width: int):
    """What later observations echo of replies, inside ``jit``: the slot tokens
    ``(i32[B, V, width], i32[B, V])`` of replies ``tokens i32[B, N]`` (``mask bool[B, N]``
    the generated ones), with the bytes ``(u8[B, ...], i32[B])`` of their text.

    The slot holds the reply's own tokens, bracketed by the game's rule; where the echo
    is not the reply (role tags removed), its bytes as single-byte tokens."""
    n = tokens.shape[1]
    stop_ids = jnp.asarray(tables.stop_ids or (-1,), jnp.int32)
    reply = mask & ~jnp.isin(tokens, stop_ids)  # the reply's text: generated tokens but the stop token
    data, nbytes = text_bytes(tokens, reply, tables.token_bytes)
    echoed, echo_len, wrapped, stripped = jax.vmap(env.echo)(data, nbytes)
    compact = jnp.where(reply, tokens, 0)
    order = jnp.argsort(~reply, axis=1, stable=True)
    compact = jnp.take_along_axis(compact, order, axis=1)
    num = reply.sum(-1).astype(jnp.int32)
    slots, slot_len = jax.vmap(lambda g, m, w: slot_tokens(g, m, tables.tokens, w, width))(compact, num, wrapped)
    as_bytes = tables.byte_tokens[echoed[:, :n]]  # (cut to N bytes: a fallback, rarely needed)
    byte_len = jnp.minimum(echo_len, n)
    byte_slots, byte_slot_len = jax.vmap(lambda g, m: slot_tokens(g, m, tables.tokens, False, width))(
        jnp.maximum(as_bytes, 0), byte_len)
    slots = jnp.where(stripped[:, None, None], byte_slots, slots)
    slot_len = jnp.where(stripped[:, None], byte_slot_len, slot_len)
    return slots, slot_len, data, nbytes


def play(params: dict, cfg: ModelConfig, env, tables: TextTables, key: jax.Array, num_games: int, *,
         sampling: Sampling, max_turns: int, prompt_len: int, prompt: Prompt = Prompt(), constrained: bool = False,
         auto_reset: bool = False, reuse_prefix: bool = True, env_params=None, opponent: Opponent | None = None,
         opponent_seat: jax.Array | None = None, deal_groups: int = 1) -> tuple[Turns, Any]:
    """Play ``num_games`` games of ``env`` to the end (or ``max_turns`` turns), the model
    in every seat (jit-able with ``cfg``, ``env``, ``sampling`` and the sizes static).

    With ``auto_reset`` a game that ends is dealt again at once (a fresh key), so every
    game plays every one of the ``K`` turns and ``Turns`` is a stream of episodes
    (``done`` marks each one's last turn), as a fixed-length rollout of a learner is.
    ``reuse_prefix=False`` reads every prompt whole (the check of prefix caching).
    With ``opponent`` (an ``Opponent``), the seat ``opponent_seat`` (``i32[B]``, 0 or 1
    per game) is played by it: its turns record its reply's tokens (``logprobs``
    0) and its move; the model plays the other seat.
    ``deal_groups=G``: games ``b`` and ``b'`` with ``b // G == b' // G`` are dealt from
    the same key (the same cards, the same first player): GRPO's groups of ``G``
    games from one deal (``num_games`` must be a multiple of ``G``; first deals only).

    Returns:
        ``(turns, final_state)``: the ``Turns`` record ``[K, B, ...]`` and the games'
        states after the last turn.
    """
    if constrained and tables.choices is None:
        raise ValueError(f"constrained=True needs a game whose moves are codes with canonical strings; "
                         f"{type(env).__name__}'s replies are free text (constrained=False)")
    n = sampling.max_new_tokens
    if opponent is not None:
        if opponent_seat is None:
            raise ValueError("opponent needs opponent_seat (i32[num_games], the seat it plays in each game)")
        if opponent.tokens.shape[1] > n:
            raise ValueError(f"opponent: its replies need {opponent.tokens.shape[1]} tokens; "
                             f"sampling.max_new_tokens is {n}")
        opponent_seat = jnp.broadcast_to(jnp.asarray(opponent_seat, jnp.int32), (num_games,))
    width = slot_width(tables, n)
    num_slots, num_variants = env.num_slots, len(env.piece_table.slot_variants)
    dtype = params["embed"].dtype
    seats = init_cache(cfg, 2 * num_games, prompt_len + n, dtype)  # row 2 b + seat
    size = seats.size
    seat_tokens = jnp.zeros((2 * num_games, size), jnp.int32)  # the tokens whose keys each seat's cache holds
    env_params = env.default_params() if env_params is None else env_params

    if not isinstance(deal_groups, int) or deal_groups < 1 or num_games % deal_groups:
        raise ValueError(f"deal_groups must be a positive integer dividing num_games={num_games}, got {deal_groups!r}")
    key, reset_key = jax.random.split(key)
    deal_keys = jnp.repeat(jax.random.split(reset_key, num_games // deal_groups), deal_groups, axis=0)
    state, ts = jax.vmap(lambda k: env.reset(k, env_params))(deal_keys)
    obs = jnp.stack([ts.obs[r][:, 0] for r in env.roles], axis=1)  # [B, 2, P + U]
    utt = jnp.zeros((num_games, num_slots, num_variants, width), jnp.int32)
    utt_len = jnp.zeros((num_games, num_slots, num_variants), jnp.int32)

    def prompt_of(o, player, utt, utt_len):
        return prompt_tokens(env, tables, prompt, o[player], utt, utt_len, prompt_len)

    if reuse_prefix:  # every seat starts from game 0's first prompt of that seat, read once
        first, first_len, _ = jax.vmap(lambda s: prompt_of(obs[0], s, utt[0], utt_len[0]))(jnp.arange(2))
        _, warm = prefill(params, cfg, first, first_len, init_cache(cfg, 2, prompt_len + n, dtype))
        seats = KVCache(jnp.tile(warm.k, (1, num_games, 1, 1, 1)), jnp.tile(warm.v, (1, num_games, 1, 1, 1)),
                        jnp.tile(warm.length, num_games))
        seat_tokens = jnp.tile(jnp.pad(first, ((0, 0), (0, size - prompt_len))), (num_games, 1))

    def turn(carry, k):
        state, obs, player, done, utt, utt_len, seats, seat_tokens = carry
        k_gen, k_step, k_reset = jax.random.split(k, 3)
        seat = jnp.maximum(player, 0)
        ids, length, overflow = jax.vmap(prompt_of)(obs, seat, utt, utt_len)
        # the acting seat's cache, reused up to the longest common prefix (the last prompt
        # token is always read again: its logits start the reply)
        row = 2 * jnp.arange(num_games) + seat
        cached = seat_tokens[row, :prompt_len]
        usable = jnp.minimum(seats.length[row], length - 1)
        same = (cached == ids) & (jnp.arange(prompt_len)[None, :] < usable[:, None])
        common = jnp.cumprod(same, axis=1).sum(1).astype(jnp.int32) * reuse_prefix
        rest = jnp.take_along_axis(ids, jnp.clip(common[:, None] + jnp.arange(prompt_len)[None, :], 0, prompt_len - 1),
                                   axis=1)
        cache = KVCache(seats.k[:, row], seats.v[:, row], common)
        if constrained:
            legal = jax.vmap(env.legal_actions)(state)[:, tables.canonical]  # [B, num_moves]
            gen = generate(params, cfg, rest, length - common, k_gen, sampling, choices=tables.choices, allowed=legal,
                           cache=cache)
        else:
            legal = jnp.zeros((num_games, 0), bool)
            gen = generate(params, cfg, rest, length - common, k_gen, sampling, cache=cache)
        seats = KVCache(seats.k.at[:, row].set(gen.cache.k), seats.v.at[:, row].set(gen.cache.v),
                        seats.length.at[row].set(gen.cache.length))
        pos = jnp.arange(size)[None, :]
        reply_at = jnp.take_along_axis(gen.tokens, jnp.clip(pos - length[:, None], 0, n - 1), axis=1)
        prompt_at = jnp.take_along_axis(ids, jnp.clip(pos, 0, prompt_len - 1), axis=1)
        seat_tokens = seat_tokens.at[row].set(jnp.where(pos < length[:, None], prompt_at, reply_at))
        tokens, mask, logprobs = gen.tokens, gen.mask, gen.logprobs
        if opponent is not None:  # the scripted seat's reply is its action string
            act = jax.vmap(opponent.policy)(jax.random.split(jax.random.fold_in(k_step, 1), num_games), state)
            scripted = seat == opponent_seat
            said = jnp.pad(opponent.tokens[act], ((0, 0), (0, n - opponent.tokens.shape[1])))
            tokens = jnp.where(scripted[:, None], said, tokens)
            mask = jnp.where(scripted[:, None], jnp.arange(n)[None, :] < opponent.length[act][:, None], mask)
            logprobs = jnp.where(scripted[:, None], 0.0, logprobs)
        slots, slot_len, data, nbytes = echo_slots(env, tables, tokens, mask, width)
        if constrained:
            move = gen.choice  # a move code (always legal)
        else:
            move = jax.vmap(env.parse)(data, nbytes)
        if opponent is not None:
            move = jax.tree_util.tree_map(
                lambda table, m: jnp.where(scripted.reshape((-1,) + (1,) * (m.ndim - 1)), table[act], m),
                opponent.moves, move)

        new_state, ts = jax.vmap(lambda k, s, m: env.step_move(k, s, m, env_params))(
            jax.random.split(k_step, num_games), state, move)
        u = ts.info["utterance"]
        live = ~done
        write = live & (u >= 0)
        bidx = jnp.arange(num_games)
        uu = jnp.clip(u, 0, num_slots - 1)
        utt = utt.at[bidx, uu].set(jnp.where(write[:, None, None], slots, utt[bidx, uu]))
        utt_len = utt_len.at[bidx, uu].set(jnp.where(write[:, None], slot_len, utt_len[bidx, uu]))
        new_obs = jnp.stack([ts.obs[r][:, 0] for r in env.roles], axis=1)
        reward = jnp.stack([ts.reward[r][:, 0] for r in env.roles], axis=1)
        new_done = done | ts.terminated
        record = Turns(active=live, player=seat, prompt=ids, prompt_length=length, tokens=tokens,
                       logprobs=logprobs, mask=mask & live[:, None], move=move,
                       invalid=ts.info["invalid_move"] & live, reward=reward * live[:, None], done=new_done,
                       overflow=overflow & live, allowed=legal & live[:, None])
        keep = lambda new, old: jnp.where(live.reshape(live.shape + (1,) * (new.ndim - 1)), new, old)
        state = jax.tree_util.tree_map(keep, new_state, state)
        obs = keep(new_obs, obs)
        player = jnp.where(live, ts.info["player"], player)
        if auto_reset:  # a finished game is dealt again, its echoed replies forgotten
            fresh, ts0 = jax.vmap(lambda k: env.reset(k, env_params))(jax.random.split(k_reset, num_games))
            ended = new_done
            pick = lambda new, old: jnp.where(ended.reshape(ended.shape + (1,) * (new.ndim - 1)), new, old)
            state = jax.tree_util.tree_map(pick, fresh, state)
            obs = pick(jnp.stack([ts0.obs[r][:, 0] for r in env.roles], axis=1), obs)
            player = jnp.where(ended, ts0.info["player"], player)
            utt, utt_len = pick(jnp.zeros_like(utt), utt), pick(jnp.zeros_like(utt_len), utt_len)
            new_done = jnp.zeros_like(new_done)
        return (state, obs, player, new_done, utt, utt_len, seats, seat_tokens), record

    carry = (state, obs, ts.info["player"], jnp.zeros(num_games, bool), utt, utt_len, seats, seat_tokens)
    (state, *_), turns = jax.lax.scan(turn, carry, jax.random.split(key, max_turns))
    return turns, state

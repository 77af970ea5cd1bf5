"""The language policy of a self-play run: the model, its tokenizer, each game's tables,
and the log-probabilities of recorded replies under the distribution they were drawn
from.

``LanguagePolicy.build(spec, envs)`` reads a checkpoint folder (``spec.path``) or makes
a decoder from scratch with a tokenizer trained on the games' own text: every static
piece of their observations, their action strings and the utterance slots' wrappers
(``corpus``).

Scoring a reply (``reply_logprobs``): a turn's prompt and reply are one sequence; the
logits at the prompt's last token and at every reply token but the last predict the
reply's tokens. They go through the same steps as ``jaxagents.lm.generate``'s sampling:
for constrained replies the tokens outside the strings still possible are removed (the
legal moves whose tokens match the reply so far), then the temperature divides the
logits. So at the parameters that generated a batch, the scores equal the logprobs
generation recorded (tested): the ratio of a PPO step starts at 1 and REINFORCE's
gradient is that of the sampled distribution.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp

from jaxagents.learners.language.config import ModelSpec
from jaxagents.lm import lora
from jaxagents.lm.config import ModelConfig
from jaxagents.lm.episode import Prompt, TextTables, Turns
from jaxagents.lm.generate import Choices
from jaxagents.lm.model import init_params, logits_at
from jaxagents.lm.tokenizer import Tokenizer

EOS = "<|endoftext|>"


def corpus(envs) -> list[str]:
    """The text a from-scratch tokenizer is trained on: each game's static pieces, its
    action strings and its utterance slots' wrappers (host side)."""
    texts = []
    for env in envs:
        table = env.piece_table
        texts += list(table.pieces) + [str(a) for a in env.actions]
        texts += [p + s for p, s in table.slot_variants]
    return [t for t in texts if t]


@dataclasses.dataclass(frozen=True, eq=False)
class LanguagePolicy:
    """The model and what playing needs (host-built; ``cfg`` is static).

    Attributes:
        cfg: the decoder's ``ModelConfig``.
        tokenizer: its ``Tokenizer``.
        tables: one ``TextTables`` per game (``envs`` order).
        prompt: the ``Prompt`` around every observation (a chat template's markers, or none).
        spec: the ``ModelSpec`` it was built from.
        weights: the checkpoint's weights (None: a model from scratch, drawn at ``init``).
    """

    cfg: ModelConfig
    tokenizer: Any
    tables: tuple
    prompt: Prompt
    spec: ModelSpec
    weights: Any = None

    @classmethod
    def build(cls, spec: ModelSpec, envs) -> "LanguagePolicy":
        """Read or make the model for ``envs`` (text games, see ``jaxagents.lm.episode``)."""
        if spec.path is not None:
            from jaxagents.lm.load import load_params

            cfg, weights = load_params(spec.path, dtype=spec.dtype)
            tokenizer = Tokenizer.from_folder(spec.path)
        else:
            tokenizer = Tokenizer.train(corpus(envs), spec.vocab_size, EOS)
            cfg = ModelConfig(family=spec.family, vocab_size=tokenizer.vocab_size, hidden_size=spec.hidden_size,
                              num_layers=spec.num_layers, num_heads=spec.num_heads, num_kv_heads=spec.num_kv_heads,
                              head_dim=spec.head_dim, intermediate_size=spec.intermediate_size,
                              max_position=spec.max_position, tie_embeddings=True,
                              eos_token_ids=(tokenizer.eos_token_id,))
            weights = None
        prompt = Prompt.chat(tokenizer, spec.system) if spec.chat else Prompt()
        tables = tuple(TextTables.build(env, tokenizer) for env in envs)
        return cls(cfg, tokenizer, tables, prompt, spec, weights)

    @property
    def dtype(self):
        """The weights' dtype."""
        return jnp.bfloat16 if self.spec.dtype == "bfloat16" else jnp.float32

    def init(self, key: jax.Array) -> tuple[dict, dict | None]:
        """``(trainable, frozen)``: every weight and None, or (with LoRA) the adapters and
        the frozen weights. A model from scratch draws its weights from ``key``."""
        k_model, k_lora = jax.random.split(key)
        weights = self.weights if self.weights is not None else init_params(self.cfg, k_model, self.dtype)
        if self.spec.lora_rank:
            return lora.init(weights, k_lora, self.spec.lora_rank, self.spec.lora_targets), weights
        return weights, None

    def params(self, trainable: dict, frozen: dict | None) -> dict:
        """The decoder's weights: ``trainable`` itself, or the adapters merged into ``frozen``."""
        return trainable if frozen is None else lora.merge(frozen, trainable, self.spec.lora_alpha)


# --------------------------------------------------------------------------- scoring


def sequences(turns: Turns) -> tuple[jax.Array, jax.Array]:
    """Every turn's prompt and reply as one sequence: ``(tokens i32[S, L + N],
    positions i32[S, N])`` for ``S = K * B`` turns, ``positions[s, j]`` the index whose
    logits predict reply token ``j`` (the prompt's last token for ``j = 0``)."""
    prompt = turns.prompt.reshape(-1, turns.prompt.shape[-1])
    reply = turns.tokens.reshape(-1, turns.tokens.shape[-1])
    length = turns.prompt_length.reshape(-1)
    l, n = prompt.shape[1], reply.shape[1]
    pos = jnp.arange(l + n)[None, :]
    from_reply = jnp.take_along_axis(reply, jnp.clip(pos - length[:, None], 0, n - 1), axis=1)
    from_prompt = jnp.take_along_axis(prompt, jnp.clip(pos, 0, l - 1), axis=1)
    tokens = jnp.where(pos < length[:, None], from_prompt, jnp.where(pos < length[:, None] + n, from_reply, 0))
    positions = length[:, None] - 1 + jnp.arange(n)[None, :]
    return tokens, positions


def choice_columns(choices: Choices, reply: jax.Array, allowed: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Constrained decoding's candidates at each reply position, as ``generate`` forms
    them: ``(ids i32[S, N, M], open bool[S, N, M])``, the next token of each of the ``M``
    strings and whether that string is still possible there (allowed, matching the reply
    so far, not complete). A token reached by several strings is marked open once only
    (its first string), so a softmax over the open columns counts each token once."""
    s, n = reply.shape
    m, c = choices.ids.shape
    j = jnp.arange(n)
    nxt = choices.ids[:, jnp.minimum(j, c - 1)].T  # [N, M]
    # string m matches the reply at positions < j: a running product over j
    hit = reply[:, :, None] == nxt[None, :, :]  # [S, N, M]
    before = jnp.cumprod(jnp.concatenate([jnp.ones((s, 1, m), bool), hit[:, :-1]], axis=1).astype(jnp.int32), axis=1) > 0
    open_ = allowed[:, None, :] & before & (j[None, :, None] < choices.length[None, None, :])
    same = nxt[:, :, None] == nxt[:, None, :]  # [N, M, M'] strings m, m' share the next token
    earlier = jnp.tril(jnp.ones((m, m), bool), -1)  # m' < m
    dup = (open_[:, :, None, :] & same[None] & earlier[None, None]).any(-1)
    ids = jnp.broadcast_to(nxt[None], (s, n, m))
    return ids, open_ & ~dup


def reply_logprobs(params: dict, cfg: ModelConfig, turns: Turns, temperature: float,
                   choices: Choices | None) -> tuple[jax.Array, jax.Array]:
    """``(logprobs f32[S, N], entropy f32[S, N])`` of every turn's reply tokens under the
    sampling distribution (constraint, then temperature), ``S = K * B`` turns flattened
    as ``turns``' ``[K, B]``; 0 where a reply has no token. Differentiable in ``params``."""
    tokens, positions = sequences(turns)
    logits = logits_at(params, cfg, tokens, positions) / temperature  # [S, N, V]
    reply = turns.tokens.reshape(-1, turns.tokens.shape[-1])
    mask = turns.mask.reshape(reply.shape)
    if choices is None:
        logp = jax.nn.log_softmax(logits, axis=-1)
        chosen = jnp.take_along_axis(logp, reply[..., None], axis=-1)[..., 0]
        entropy = -jnp.sum(jnp.exp(logp) * logp, axis=-1)
    else:
        ids, open_ = choice_columns(choices, reply, turns.allowed.reshape(reply.shape[0], -1))
        cand = jnp.take_along_axis(logits, ids, axis=-1)  # [S, N, M]
        # finite everywhere (closed columns at a large negative value, not -inf), so that
        # no 0 * inf reaches the gradient; a position with no open column is masked out
        cand = jnp.where(open_, cand, -1e30)
        logp = jnp.where(open_, jax.nn.log_softmax(cand, axis=-1), 0.0)
        picked = open_ & (ids == reply[..., None])
        chosen = jnp.sum(jnp.where(picked, logp, 0.0), axis=-1)
        entropy = -jnp.sum(jnp.where(open_, jnp.exp(logp) * logp, 0.0), axis=-1)
    return jnp.where(mask, chosen, 0.0), jnp.where(mask, entropy, 0.0)


def mixture_logprobs(logprobs: jax.Array) -> jax.Array:
    """``f32[S, N]``: the reply tokens' log-probabilities under the uniform mixture of
    ``K`` models, given each model's own, ``logprobs`` ``f32[K, S, N]`` (0 past a reply's
    end, as ``reply_logprobs`` returns them).

    The mixture draws a model, then the whole reply from it; its probability of token
    ``t`` given the reply so far weighs each model by its probability of that prefix:
    ``log p(y_t | y_<t) = lse_k c_k[t] - lse_k c_k[t-1]``, ``c_k`` model ``k``'s cumulative
    log-probability. A reply's tokens therefore sum to the log of the models' mean
    probability of the whole reply -- the strategies' average, not the parameters'."""
    mixed = jax.nn.logsumexp(jnp.cumsum(logprobs, axis=-1), axis=0) - jnp.log(logprobs.shape[0])
    return mixed - jnp.pad(mixed[:, :-1], ((0, 0), (1, 0)))

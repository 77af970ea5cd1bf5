"""One decoder-only transformer for every family, as pure functions over a pytree.

The weights are a plain pytree (``params``, below) and the decoder is
``forward(params, cfg, tokens, cache)``: no module object holds state, so the same
function runs under ``jit``, ``vmap`` (over seeds or populations of models),
``shard_map`` and ``lax.scan`` (a whole episode of generation). Family differences
are data in ``ModelConfig`` (see ``jaxagents.lm.config``).

The layers are stacked (every leaf of ``params["layers"]`` has a leading ``L`` axis)
and run under one ``lax.scan``: compile time does not grow with depth.

Params layout (``D`` hidden, ``V`` vocabulary, ``L`` layers, ``H`` query heads, ``K``
key/value heads, ``E`` head width, ``F`` MLP width)::

    embed       [V, D]
    pos_embed   [P, D]                     GPT-2 only (learned positions)
    layers:
      attn_norm {scale [L, D], bias [L, D] (GPT-2)}
      q         {kernel [L, D, H*E], bias [L, H*E] (when cfg.qkv_bias)}
      k, v      {kernel [L, D, K*E], bias [L, K*E] (when cfg.qkv_bias)}
      o         {kernel [L, H*E, D], bias [L, D] (when cfg.o_bias)}
      q_norm, k_norm {scale [L, E]}        Qwen3 only
      mlp_norm  {scale [L, D], bias [L, D] (GPT-2)}
      gate      {kernel [L, D, F]}         not GPT-2 (SwiGLU: down(silu(gate x) * up x))
      up        {kernel [L, D, F], bias [L, F] (when cfg.mlp_bias)}
      down      {kernel [L, F, D], bias [L, D] (when cfg.mlp_bias)}
    final_norm  {scale [D], bias [D] (GPT-2)}
    lm_head     {kernel [D, V]}            untied models only

The key/value cache (``KVCache``) holds every sequence's keys and values by *slot*:
sequence ``b``'s slots ``0 .. length[b] - 1`` are filled, and a token's slot is its
position (RoPE angle, GPT-2 position row). ``forward`` writes a chunk of ``T`` tokens
of sequence ``b`` at slots ``length[b] .. length[b] + T - 1`` and advances ``length[b]``
by the number of valid tokens: chunks are left-aligned (valid tokens first, then
padding), padding slots are overwritten by the next chunk, and a query attends to the
slots up to its own, so padding is never seen. Writes past the cache's size are
dropped (the caller bounds lengths; ``jaxagents.lm.generate`` does).

Numerics follow the reference implementation: norms, softmax and the RoPE angles in
float32, matrix products in the params' dtype (float32 or bfloat16), logits float32.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxagents.lm.config import ModelConfig


@struct.dataclass
class KVCache:
    """Keys and values by layer and slot (see the module docstring).

    Attributes:
        k, v: ``[L, B, S, K, E]`` in the compute dtype.
        length: ``i32[B]`` filled slots per sequence.
    """

    k: jax.Array
    v: jax.Array
    length: jax.Array

    @property
    def size(self) -> int:
        """S, the slots per sequence."""
        return self.k.shape[2]


KEY_BLOCK = 128  # slots of the cache read at a time by the attention of a long cache


def init_cache(cfg: ModelConfig, batch: int, size: int, dtype=jnp.float32) -> KVCache:
    """An empty cache of ``size`` slots for ``batch`` sequences (more than ``KEY_BLOCK``
    slots: rounded up to a multiple of it, so that it is read in whole blocks)."""
    if size > KEY_BLOCK:
        size = -(-size // KEY_BLOCK) * KEY_BLOCK
    shape = (cfg.num_layers, batch, size, cfg.num_kv_heads, cfg.head_dim)
    return KVCache(jnp.zeros(shape, dtype), jnp.zeros(shape, dtype), jnp.zeros((batch,), jnp.int32))


# ---------------------------------------------------------------------- pieces
def _norm(cfg: ModelConfig, p: dict, x: jax.Array) -> jax.Array:
    """RMSNorm or LayerNorm over the last axis, computed in float32."""
    dtype = x.dtype
    x = x.astype(jnp.float32)
    if cfg.norm == "layer":
        x = x - x.mean(-1, keepdims=True)
        x = x * jax.lax.rsqrt((x * x).mean(-1, keepdims=True) + cfg.norm_eps)
        return (x * p["scale"].astype(jnp.float32) + p["bias"].astype(jnp.float32)).astype(dtype)
    x = x * jax.lax.rsqrt((x * x).mean(-1, keepdims=True) + cfg.norm_eps)
    return p["scale"] * x.astype(dtype)


def _dense(p: dict, x: jax.Array) -> jax.Array:
    y = x @ p["kernel"]
    return y + p["bias"] if "bias" in p else y


def _rope(x: jax.Array, pos: jax.Array, inv_freq: jax.Array) -> jax.Array:
    """Rotate ``x[B, T, N, E]`` by the angles ``pos[B, T] * inv_freq`` (halves rotated
    against each other, the reference implementation's layout)."""
    angles = pos.astype(jnp.float32)[..., None] * inv_freq  # [B, T, E/2]
    cos = jnp.cos(angles)[:, :, None, :].astype(x.dtype)
    sin = jnp.sin(angles)[:, :, None, :].astype(x.dtype)
    x1, x2 = jnp.split(x, 2, axis=-1)
    return jnp.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


def _merge(state, scores, values):
    """One step of a running softmax: fold ``scores[B, K, G, T, S']`` (-inf where hidden)
    and their ``values[B, S', K, E]`` into ``(top, total, acc)``."""
    top, total, acc = state
    new_top = jnp.maximum(top, scores.max(-1))  # finite: every query sees its own slot
    weights = jnp.exp(scores - new_top[..., None])
    fade = jnp.exp(top - new_top)
    acc = acc * fade[..., None] + jnp.einsum("bkgts,bske->bkgte", weights.astype(values.dtype), values,
                                             preferred_element_type=jnp.float32)
    return new_top, total * fade + weights.sum(-1), acc


def _attention(q, k_new, v_new, k_all, v_all, layer, filled):
    """Causal attention of a chunk: ``[B, T, K, G, E]``.

    Args:
        q: ``[B, T, K, G, E]`` the chunk's queries (query head ``k * G + g`` uses key
            head ``k``: grouped-query attention).
        k_new, v_new: ``[B, T, K, E]`` the chunk's own keys and values (token ``i`` sees
            tokens ``j <= i`` of the chunk).
        k_all, v_all: the whole cache ``[L, B, S, K, E]`` before this chunk; ``layer`` its
            row; ``filled`` ``i32[B]`` the slots before the chunk, all visible.

    The cache is read ``KEY_BLOCK`` slots at a time and only as far as the most filled
    row (a ``while_loop`` with a running softmax): the empty part of a cache sized for
    the longest game costs nothing, and the cache is only read here -- the chunk's keys
    are written once, after every layer (``forward``), not copied per layer.
    """
    bsz, t, kv, g, e = q.shape
    size = k_all.shape[2]
    scale = 1.0 / np.sqrt(e)
    own = jnp.einsum("btkge,bske->bkgts", q, k_new, preferred_element_type=jnp.float32) * scale
    own = jnp.where(jnp.tril(jnp.ones((t, t), bool)), own, -jnp.inf)
    top = own.max(-1)
    weights = jnp.exp(own - top[..., None])
    state = (top, weights.sum(-1), jnp.einsum("bkgts,bske->bkgte", weights.astype(v_new.dtype), v_new,
                                               preferred_element_type=jnp.float32))

    def block(state, start, width):
        kb = jax.lax.dynamic_slice(k_all, (layer, 0, start, 0, 0), (1, bsz, width, kv, e))[0]
        vb = jax.lax.dynamic_slice(v_all, (layer, 0, start, 0, 0), (1, bsz, width, kv, e))[0]
        scores = jnp.einsum("btkge,bske->bkgts", q, kb, preferred_element_type=jnp.float32) * scale
        seen = (start + jnp.arange(width))[None, :] < filled[:, None]  # [B, S']
        return _merge(state, jnp.where(seen[:, None, None, None, :], scores, -jnp.inf), vb)

    if size <= KEY_BLOCK or size % KEY_BLOCK:
        state = block(state, 0, size)
    else:
        blocks = (jnp.max(filled) + KEY_BLOCK - 1) // KEY_BLOCK
        state = jax.lax.while_loop(lambda c: c[0] < blocks,
                                   lambda c: (c[0] + 1, block(c[1], c[0] * KEY_BLOCK, KEY_BLOCK)),
                                   (jnp.zeros((), jnp.int32), state))[1]
    _, total, acc = state
    return jnp.transpose(acc / total[..., None], (0, 3, 1, 2, 4)).astype(v_new.dtype)


def _layer(cfg: ModelConfig, inv_freq, slots, cache: KVCache, x, layer):
    """One block on ``x[B, T, D]``; returns the chunk's keys and values ``[B, T, K, E]``."""
    p, index = layer
    bsz, t, _ = x.shape
    h, kv, e = cfg.num_heads, cfg.num_kv_heads, cfg.head_dim

    y = _norm(cfg, p["attn_norm"], x)
    q = _dense(p["q"], y).reshape(bsz, t, h, e)
    k = _dense(p["k"], y).reshape(bsz, t, kv, e)
    v = _dense(p["v"], y).reshape(bsz, t, kv, e)
    if cfg.qk_norm:
        q = _norm(cfg, p["q_norm"], q)
        k = _norm(cfg, p["k_norm"], k)
    if cfg.uses_rope:
        q = _rope(q, slots, inv_freq)
        k = _rope(k, slots, inv_freq)
    k, v = k.astype(cache.k.dtype), v.astype(cache.v.dtype)
    att = _attention(q.reshape(bsz, t, kv, h // kv, e), k, v, cache.k, cache.v, index, cache.length)
    x = x + _dense(p["o"], att.reshape(bsz, t, h * e))

    y = _norm(cfg, p["mlp_norm"], x)
    if cfg.family == "gpt2":
        y = jax.nn.gelu(_dense(p["up"], y), approximate=True)
    else:
        y = jax.nn.silu(_dense(p["gate"], y)) * _dense(p["up"], y)
    x = x + _dense(p["down"], y)
    return x, (k, v)


# ---------------------------------------------------------------------- forward
@functools.partial(jax.jit, static_argnames=("cfg", "last_only"))
def forward(params: dict, cfg: ModelConfig, tokens: jax.Array, cache: KVCache, num_valid: jax.Array | None = None,
            last_only: bool = False) -> tuple[jax.Array, KVCache]:
    """Run a chunk of tokens through the decoder and extend the cache.

    Args:
        params: the weights (layout in the module docstring).
        cfg: the model's config (static).
        tokens: ``i32[B, T]``, each row's valid tokens first (see ``num_valid``).
        cache: the ``KVCache`` (``init_cache`` for a fresh start); row ``b``'s tokens go
            to slots ``cache.length[b] ..``.
        num_valid: ``i32[B]`` valid tokens per row (default: all ``T``).
        last_only: return only the logits at each row's last valid token.

    Returns:
        ``(logits, cache)``: ``f32[B, T, V]`` (or ``f32[B, V]`` with ``last_only``; a row
        with no valid token gives its first position's logits) and the cache with
        ``length + num_valid``.
    """
    bsz, t = tokens.shape
    num_valid = jnp.full((bsz,), t, jnp.int32) if num_valid is None else jnp.asarray(num_valid, jnp.int32)
    slots = cache.length[:, None] + jnp.arange(t, dtype=jnp.int32)[None, :]  # [B, T]
    dtype = params["embed"].dtype
    x = params["embed"][tokens]
    if cfg.family == "gpt2":
        x = x + params["pos_embed"][jnp.clip(slots, 0, cfg.max_position - 1)]
    inv_freq = jnp.asarray(cfg.rope_inv_freq())
    layer = functools.partial(_layer, cfg, inv_freq, slots, cache)
    x, (k, v) = jax.lax.scan(layer, x.astype(dtype), (params["layers"], jnp.arange(cfg.num_layers)))
    # the chunk's keys and values, every layer at once ([L, B, T, K, E]); slots past the end dropped
    rows = jnp.arange(bsz)[:, None]
    cache = KVCache(cache.k.at[:, rows, slots].set(k, mode="drop"), cache.v.at[:, rows, slots].set(v, mode="drop"),
                    cache.length + num_valid)
    if last_only:
        x = x[jnp.arange(bsz), jnp.maximum(num_valid - 1, 0)][:, None]
    x = _norm(cfg, params["final_norm"], x)
    head = params["embed"].T if cfg.tie_embeddings else params["lm_head"]["kernel"]
    logits = jnp.einsum("btd,dv->btv", x, head, preferred_element_type=jnp.float32)
    logits = logits[:, 0] if last_only else logits
    return logits, cache


def logits_of(params: dict, cfg: ModelConfig, tokens: jax.Array) -> jax.Array:
    """``f32[B, T, V]``: the logits of whole sequences ``tokens[B, T]`` (no padding), as a
    training step or a parity check needs them; a fresh cache of exactly ``T`` slots."""
    cache = init_cache(cfg, tokens.shape[0], tokens.shape[1], params["embed"].dtype)
    return forward(params, cfg, tokens, cache)[0]


def logits_at(params: dict, cfg: ModelConfig, tokens: jax.Array, positions: jax.Array) -> jax.Array:
    """``f32[B, P, V]``: the logits at ``positions i32[B, P]`` of whole sequences
    ``tokens i32[B, T]`` (each position's logits predict the token after it), as a
    training step needs them: differentiable (no ``while_loop``: the sequences attend
    to themselves only, through a one-slot cache that is never read), and the output
    head runs only at the positions asked for (``P << T``: a reply after a long prompt).
    Padding after a sequence's end changes nothing before it (attention is causal)."""
    bsz, t = tokens.shape
    cache = init_cache(cfg, bsz, 1, params["embed"].dtype)  # size 1: one block, fully hidden (filled = 0)
    slots = jnp.broadcast_to(jnp.arange(t, dtype=jnp.int32)[None, :], (bsz, t))
    x = params["embed"][tokens]
    if cfg.family == "gpt2":
        x = x + params["pos_embed"][jnp.clip(slots, 0, cfg.max_position - 1)]
    inv_freq = jnp.asarray(cfg.rope_inv_freq())
    layer = functools.partial(_layer, cfg, inv_freq, slots, cache)
    x, _ = jax.lax.scan(layer, x.astype(params["embed"].dtype), (params["layers"], jnp.arange(cfg.num_layers)))
    x = jnp.take_along_axis(x, jnp.clip(positions, 0, t - 1)[:, :, None], axis=1)
    x = _norm(cfg, params["final_norm"], x)
    head = params["embed"].T if cfg.tie_embeddings else params["lm_head"]["kernel"]
    return jnp.einsum("bpd,dv->bpv", x, head, preferred_element_type=jnp.float32)


# ---------------------------------------------------------------------- new weights
def init_params(cfg: ModelConfig, key: jax.Array, dtype=jnp.float32, scale: float = 0.02) -> dict:
    """Random weights in the layout above (normal(0, ``scale``) matrices, unit norms,
    zero biases): a model trained from scratch, or a benchmark of a model's shape."""
    d, f, h, kv, e, n = cfg.hidden_size, cfg.intermediate_size, cfg.num_heads, cfg.num_kv_heads, cfg.head_dim, cfg.num_layers
    keys = iter(jax.random.split(key, 16))

    def mat(*shape):
        return (scale * jax.random.normal(next(keys), shape, jnp.float32)).astype(dtype)

    def dense(din, dout, bias):
        p = {"kernel": mat(n, din, dout)}
        if bias:
            p["bias"] = jnp.zeros((n, dout), dtype)
        return p

    def norm(width, layers=True):
        shape = (n, width) if layers else (width,)
        p = {"scale": jnp.ones(shape, dtype)}
        if cfg.norm == "layer":
            p["bias"] = jnp.zeros(shape, dtype)
        return p

    layers = {
        "attn_norm": norm(d), "mlp_norm": norm(d),
        "q": dense(d, h * e, cfg.qkv_bias), "k": dense(d, kv * e, cfg.qkv_bias), "v": dense(d, kv * e, cfg.qkv_bias),
        "o": dense(h * e, d, cfg.o_bias),
        "up": dense(d, f, cfg.mlp_bias), "down": dense(f, d, cfg.mlp_bias),
    }
    if cfg.family != "gpt2":
        layers["gate"] = dense(d, f, cfg.mlp_bias)
    if cfg.qk_norm:
        layers["q_norm"], layers["k_norm"] = norm(e), norm(e)
    params = {"embed": mat(cfg.vocab_size, d), "layers": layers, "final_norm": norm(d, layers=False)}
    if cfg.family == "gpt2":
        params["pos_embed"] = mat(cfg.max_position, d)
    if not cfg.tie_embeddings:
        params["lm_head"] = {"kernel": mat(d, cfg.vocab_size)}
    return params

"""A decoder's static configuration, read from a Hugging Face ``config.json``.

One decoder (``jaxagents.lm.model``) serves every family; what differs between
families is data, held here:

=======  =========  ==========  ==========  ========  ========  ===========
family   norm       positions   MLP         biases    q/k norm  embeddings
=======  =========  ==========  ==========  ========  ========  ===========
llama    RMSNorm    RoPE        SwiGLU      optional  no        tied or not
qwen2    RMSNorm    RoPE        SwiGLU      q, k, v   no        tied or not
qwen3    RMSNorm    RoPE        SwiGLU      optional  per head  tied or not
gpt2     LayerNorm  learned     GELU(tanh)  all       no        tied
=======  =========  ==========  ==========  ========  ========  ===========

``ModelConfig`` is a frozen, hashable dataclass: it is a static argument of every
compiled function (shapes and branches depend on it), never traced.

RoPE. The rotary frequencies are ``inv_freq[i] = theta ** (-2 i / head_dim)`` for
``i < head_dim / 2``, rescaled by the checkpoint's scaling rule: ``default`` (none),
``linear`` (all frequencies divided by ``factor``) or ``llama3`` (Llama 3.1's
wavelength-dependent rule: wavelengths shorter than ``original_max / high_freq_factor``
kept, longer than ``original_max / low_freq_factor`` divided by ``factor``, a linear
blend between). Both the older spelling (``rope_theta`` + ``rope_scaling``) and the
newer one (``rope_parameters``) of ``config.json`` are read.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from typing import Any

import numpy as np

FAMILIES = ("llama", "qwen2", "qwen3", "gpt2")
# architectures / model_type strings of config.json, by family
_MODEL_TYPES = {
    "llama": "llama",
    "qwen2": "qwen2",
    "qwen3": "qwen3",
    "gpt2": "gpt2",
}
ROPE_TYPES = ("default", "linear", "llama3")


class ConfigError(ValueError):
    """A ``config.json`` this decoder cannot represent (one line naming the field)."""


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """Static shape and family facts of a decoder (hashable; see the module docstring).

    Attributes:
        family: one of ``FAMILIES``.
        vocab_size: V, rows of the embedding and of the output head.
        hidden_size: D.
        num_layers: L.
        num_heads: H query heads.
        num_kv_heads: K key/value heads (H a multiple of K: grouped-query attention).
        head_dim: per-head width (``hidden_size // num_heads`` unless the checkpoint says).
        intermediate_size: the MLP's inner width.
        norm_eps: epsilon of the RMS/Layer norms.
        max_position: the longest sequence the checkpoint supports (GPT-2's learned
            positions are a hard limit; RoPE models may run longer at their own risk).
        tie_embeddings: the output head is the embedding's transpose.
        qkv_bias, o_bias, mlp_bias: which projections carry biases.
        qk_norm: RMSNorm per head on queries and keys before RoPE (Qwen3).
        rope_theta: RoPE base (unused by GPT-2).
        rope_scaling: ``(rope_type, ((name, value), ...))`` sorted, hashable.
        bos_token_id, eos_token_ids: from config.json (eos may be several ids).
    """

    family: str
    vocab_size: int
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    norm_eps: float = 1e-6
    max_position: int = 2048
    tie_embeddings: bool = False
    qkv_bias: bool = False
    o_bias: bool = False
    mlp_bias: bool = False
    qk_norm: bool = False
    rope_theta: float = 10000.0
    rope_scaling: tuple = ("default", ())
    bos_token_id: int | None = None
    eos_token_ids: tuple = ()

    def __post_init__(self):
        if self.family not in FAMILIES:
            raise ConfigError(f"family must be one of {', '.join(FAMILIES)}, got {self.family!r}")
        for name in ("vocab_size", "hidden_size", "num_layers", "num_heads", "num_kv_heads", "head_dim",
                     "intermediate_size", "max_position"):
            value = getattr(self, name)
            if not isinstance(value, (int, np.integer)) or value < 1:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
        if self.num_heads % self.num_kv_heads:
            raise ConfigError(
                f"num_heads ({self.num_heads}) must be a multiple of num_kv_heads ({self.num_kv_heads})")
        if self.rope_scaling[0] not in ROPE_TYPES:
            raise ConfigError(f"rope_scaling type must be one of {', '.join(ROPE_TYPES)}, got {self.rope_scaling[0]!r}")

    # ------------------------------------------------------------------ derived facts
    @property
    def norm(self) -> str:
        """``"layer"`` (GPT-2) or ``"rms"``."""
        return "layer" if self.family == "gpt2" else "rms"

    @property
    def uses_rope(self) -> bool:
        """Positions enter as rotary angles (every family but GPT-2's learned positions)."""
        return self.family != "gpt2"

    def rope_inv_freq(self) -> np.ndarray:
        """``f32[head_dim // 2]``: the rotary frequencies after the checkpoint's scaling."""
        dim = self.head_dim
        inv = 1.0 / (self.rope_theta ** (np.arange(0, dim, 2, dtype=np.float64) / dim))
        kind, items = self.rope_scaling
        opts = dict(items)
        if kind == "linear":
            inv = inv / opts["factor"]
        elif kind == "llama3":
            factor, low, high = opts["factor"], opts["low_freq_factor"], opts["high_freq_factor"]
            original = opts["original_max_position_embeddings"]
            wavelen = 2 * math.pi / inv
            smooth = (original / wavelen - low) / (high - low)
            blended = (1 - smooth) * inv / factor + smooth * inv
            inv = np.where(wavelen > original / low, inv / factor, np.where(wavelen < original / high, inv, blended))
        return inv.astype(np.float32)

    def num_params(self) -> int:
        """Parameter count (tied embeddings counted once)."""
        d, f, h, k, hd = self.hidden_size, self.intermediate_size, self.num_heads, self.num_kv_heads, self.head_dim
        attn = d * hd * (h + 2 * k) + h * hd * d
        mlp = (3 if self.family != "gpt2" else 2) * d * f
        head = 0 if self.tie_embeddings else self.vocab_size * d
        pos = self.max_position * d if self.family == "gpt2" else 0
        return self.vocab_size * d + head + pos + self.num_layers * (attn + mlp)

    # ------------------------------------------------------------------ reading
    @classmethod
    def from_hf(cls, raw: dict[str, Any]) -> "ModelConfig":
        """The config of a Hugging Face ``config.json`` mapping.

        Raises:
            ConfigError: an unknown architecture, a missing field, or a RoPE scaling
                rule this decoder does not implement (one line naming it).
        """
        model_type = raw.get("model_type")
        if model_type not in _MODEL_TYPES:
            arch = raw.get("architectures")
            raise ConfigError(
                f"config.json: model_type {model_type!r} (architectures {arch}) is not supported; "
                f"supported: {', '.join(sorted(_MODEL_TYPES))}")
        family = _MODEL_TYPES[model_type]

        def need(*names, default=None):
            for name in names:
                if raw.get(name) is not None:
                    return raw[name]
            if default is not None:
                return default
            raise ConfigError(f"config.json: missing field {names[0]!r} for model_type {model_type!r}")

        eos = raw.get("eos_token_id")
        eos = () if eos is None else tuple(int(e) for e in (eos if isinstance(eos, list) else [eos]))
        bos = raw.get("bos_token_id")
        if family == "gpt2":
            d = int(need("n_embd", "hidden_size"))
            heads = int(need("n_head", "num_attention_heads"))
            return cls(
                family=family, vocab_size=int(need("vocab_size")), hidden_size=d, num_layers=int(need("n_layer")),
                num_heads=heads, num_kv_heads=heads, head_dim=d // heads,
                intermediate_size=int(raw.get("n_inner") or 4 * d), norm_eps=float(need("layer_norm_epsilon")),
                max_position=int(need("n_positions")), tie_embeddings=True, qkv_bias=True, o_bias=True,
                mlp_bias=True, bos_token_id=bos, eos_token_ids=eos,
            )
        if raw.get("hidden_act", "silu") != "silu":
            raise ConfigError(f"config.json: hidden_act must be 'silu' for model_type {model_type!r}, "
                              f"got {raw['hidden_act']!r}")
        windowed = [t for t in raw.get("layer_types") or [] if t != "full_attention"]
        if raw.get("use_sliding_window") or windowed:
            raise ConfigError("config.json: sliding-window attention (use_sliding_window / layer_types) is not "
                              "supported; every layer must be full_attention")
        d = int(need("hidden_size"))
        heads = int(need("num_attention_heads"))
        theta, scaling = _rope(raw)
        attention_bias = bool(raw.get("attention_bias", False))
        return cls(
            family=family, vocab_size=int(need("vocab_size")), hidden_size=d, num_layers=int(need("num_hidden_layers")),
            num_heads=heads, num_kv_heads=int(raw.get("num_key_value_heads") or heads),
            head_dim=int(raw.get("head_dim") or d // heads), intermediate_size=int(need("intermediate_size")),
            norm_eps=float(need("rms_norm_eps")), max_position=int(need("max_position_embeddings")),
            tie_embeddings=bool(raw.get("tie_word_embeddings", False)),
            qkv_bias=True if family == "qwen2" else attention_bias,
            o_bias=attention_bias if family != "qwen2" else False,
            mlp_bias=bool(raw.get("mlp_bias", False)), qk_norm=family == "qwen3",
            rope_theta=theta, rope_scaling=scaling, bos_token_id=bos, eos_token_ids=eos,
        )

    @classmethod
    def from_folder(cls, path: str | os.PathLike) -> "ModelConfig":
        """``from_hf`` of ``path/config.json`` (one-line error when it is missing)."""
        file = os.path.join(os.fspath(path), "config.json")
        if not os.path.isfile(file):
            raise FileNotFoundError(f"model folder {os.fspath(path)!r} has no config.json")
        with open(file) as f:
            return cls.from_hf(json.load(f))


def _rope(raw: dict) -> tuple[float, tuple]:
    """``(theta, (rope_type, sorted options))`` from either spelling of config.json."""
    params = raw.get("rope_parameters")
    if isinstance(params, dict) and params:
        theta = params.get("rope_theta", raw.get("rope_theta", 10000.0))
        scaling = {k: v for k, v in params.items() if k != "rope_theta"}
    else:
        theta = raw.get("rope_theta", 10000.0)
        scaling = dict(raw.get("rope_scaling") or {})
    kind = scaling.pop("rope_type", None) or scaling.pop("type", None) or "default"
    scaling.pop("type", None)
    if kind not in ROPE_TYPES:
        raise ConfigError(f"config.json: rope scaling type {kind!r} is not supported; supported: {', '.join(ROPE_TYPES)}")
    need = {"linear": ("factor",),
            "llama3": ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings")}
    for name in need.get(kind, ()):
        if name not in scaling:
            raise ConfigError(f"config.json: rope scaling {kind!r} needs {name!r}")
    keep = {k: float(v) for k, v in scaling.items() if k in need.get(kind, ())}
    return float(theta), (kind, tuple(sorted(keep.items())))

"""Weights from a local Hugging Face checkpoint folder, into ``jaxagents.lm.model``'s pytree.

A folder is ``config.json`` plus either ``model.safetensors`` or shards named by
``model.safetensors.index.json``. Tensors are read with ``safetensors`` into numpy
(no torch, no network), transposed from the reference layout (``[out, in]`` linear
weights; GPT-2's ``Conv1D`` is already ``[in, out]``), stacked over layers and placed
on the device (or on a sharding, see ``jaxagents.lm.sharding``).

Every problem is one line naming what is wrong: a missing folder or file, a model type
the decoder does not implement (``jaxagents.lm.config``), a missing tensor, a shape
that disagrees with ``config.json``, a dtype that is not float32, bfloat16 or float16.
"""

from __future__ import annotations

import json
import os
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxagents.lm.config import ModelConfig

DTYPES = {"float32": jnp.float32, "bfloat16": jnp.bfloat16}
_READABLE = ("float32", "bfloat16", "float16")


class CheckpointError(ValueError):
    """A checkpoint folder whose weights cannot be loaded (one line naming the tensor)."""


def _files(path: str) -> list[str]:
    index = os.path.join(path, "model.safetensors.index.json")
    if os.path.isfile(index):
        with open(index) as f:
            shards = sorted(set(json.load(f)["weight_map"].values()))
        missing = [s for s in shards if not os.path.isfile(os.path.join(path, s))]
        if missing:
            raise FileNotFoundError(f"model folder {path!r}: shard {missing[0]!r} named by model.safetensors.index.json is missing")
        return [os.path.join(path, s) for s in shards]
    single = os.path.join(path, "model.safetensors")
    if os.path.isfile(single):
        return [single]
    raise FileNotFoundError(f"model folder {path!r} has neither model.safetensors nor model.safetensors.index.json")


class _Tensors:
    """Every tensor of a checkpoint by name, read lazily (one ``safe_open`` per file)."""

    def __init__(self, files: list[str]):
        from safetensors import safe_open

        self._handles = [safe_open(f, framework="numpy") for f in files]
        self._where = {}
        for handle in self._handles:
            for name in handle.keys():
                self._where[name] = handle
        # GPT-2 checkpoints are saved with and without the "transformer." prefix
        self._prefix = "transformer." if any(n.startswith("transformer.") for n in self._where) else ""

    def has(self, name: str) -> bool:
        return self._prefix + name in self._where or name in self._where

    def get(self, name: str, shape: tuple) -> np.ndarray:
        key = self._prefix + name if self._prefix + name in self._where else name
        if key not in self._where:
            raise CheckpointError(f"checkpoint has no tensor {name!r}")
        array = self._where[key].get_tensor(key)
        if array.dtype.name not in _READABLE:
            raise CheckpointError(f"tensor {key!r} has dtype {array.dtype.name}; readable: {', '.join(_READABLE)}")
        if tuple(array.shape) != tuple(shape):
            raise CheckpointError(f"tensor {key!r} has shape {tuple(array.shape)}, config.json implies {tuple(shape)}")
        return array

    def dtype(self) -> str:
        """The dtype of the embedding (the checkpoint's storage dtype)."""
        for name in ("model.embed_tokens.weight", "wte.weight", "transformer.wte.weight"):
            if name in self._where:
                code = self._where[name].get_slice(name).get_dtype()  # "F32", "BF16", "F16", ...
                return {"F32": "float32", "BF16": "bfloat16", "F16": "float16"}.get(code, code)
        return "float32"


def _layout(cfg: ModelConfig) -> tuple[dict, Callable[[int], dict]]:
    """``(top, per_layer)``: our param paths mapped to ``(hf_name, hf_shape, transpose)``."""
    d, f, h, kv, e, v = cfg.hidden_size, cfg.intermediate_size, cfg.num_heads, cfg.num_kv_heads, cfg.head_dim, cfg.vocab_size
    if cfg.family == "gpt2":
        top = {("embed",): ("wte.weight", (v, d), False), ("pos_embed",): ("wpe.weight", (cfg.max_position, d), False),
               ("final_norm", "scale"): ("ln_f.weight", (d,), False), ("final_norm", "bias"): ("ln_f.bias", (d,), False)}

        def layer(i):
            p = f"h.{i}."
            return {
                ("attn_norm", "scale"): (p + "ln_1.weight", (d,), False), ("attn_norm", "bias"): (p + "ln_1.bias", (d,), False),
                ("qkv", "kernel"): (p + "attn.c_attn.weight", (d, 3 * d), False), ("qkv", "bias"): (p + "attn.c_attn.bias", (3 * d,), False),
                ("o", "kernel"): (p + "attn.c_proj.weight", (d, d), False), ("o", "bias"): (p + "attn.c_proj.bias", (d,), False),
                ("mlp_norm", "scale"): (p + "ln_2.weight", (d,), False), ("mlp_norm", "bias"): (p + "ln_2.bias", (d,), False),
                ("up", "kernel"): (p + "mlp.c_fc.weight", (d, f), False), ("up", "bias"): (p + "mlp.c_fc.bias", (f,), False),
                ("down", "kernel"): (p + "mlp.c_proj.weight", (f, d), False), ("down", "bias"): (p + "mlp.c_proj.bias", (d,), False),
            }
        return top, layer

    top = {("embed",): ("model.embed_tokens.weight", (v, d), False), ("final_norm", "scale"): ("model.norm.weight", (d,), False)}
    if not cfg.tie_embeddings:
        top[("lm_head", "kernel")] = ("lm_head.weight", (v, d), True)

    def layer(i):
        p = f"model.layers.{i}."
        out = {
            ("attn_norm", "scale"): (p + "input_layernorm.weight", (d,), False),
            ("mlp_norm", "scale"): (p + "post_attention_layernorm.weight", (d,), False),
        }
        for ours, name, dout, din, bias in (("q", "q_proj", h * e, d, cfg.qkv_bias), ("k", "k_proj", kv * e, d, cfg.qkv_bias),
                                            ("v", "v_proj", kv * e, d, cfg.qkv_bias), ("o", "o_proj", d, h * e, cfg.o_bias)):
            out[(ours, "kernel")] = (p + f"self_attn.{name}.weight", (dout, din), True)
            if bias:
                out[(ours, "bias")] = (p + f"self_attn.{name}.bias", (dout,), False)
        for ours, name, dout, din in (("gate", "gate_proj", f, d), ("up", "up_proj", f, d), ("down", "down_proj", d, f)):
            out[(ours, "kernel")] = (p + f"mlp.{name}.weight", (dout, din), True)
            if cfg.mlp_bias:
                out[(ours, "bias")] = (p + f"mlp.{name}.bias", (dout,), False)
        if cfg.qk_norm:
            out[("q_norm", "scale")] = (p + "self_attn.q_norm.weight", (e,), False)
            out[("k_norm", "scale")] = (p + "self_attn.k_norm.weight", (e,), False)
        return out
    return top, layer


def _set(tree: dict, path: tuple, value) -> None:
    for key in path[:-1]:
        tree = tree.setdefault(key, {})
    tree[path[-1]] = value


def load_params(path: str | os.PathLike, cfg: ModelConfig | None = None, dtype: str | None = None,
                place: Callable[[tuple, np.ndarray], jax.Array] | None = None) -> tuple[ModelConfig, dict]:
    """Read a checkpoint folder's weights.

    Args:
        path: the folder (``config.json`` + safetensors).
        cfg: its config (read from the folder when None).
        dtype: ``"float32"`` or ``"bfloat16"``; None keeps the checkpoint's (float16 is
            read as float32).
        place: ``(param_path, array) -> jax.Array`` that puts each stacked array on its
            devices (``jaxagents.lm.sharding``); default ``jnp.asarray``.

    Returns:
        ``(cfg, params)``, params in ``jaxagents.lm.model``'s layout.
    """
    path = os.fspath(path)
    if not os.path.isdir(path):
        raise FileNotFoundError(f"model folder {path!r} does not exist")
    cfg = ModelConfig.from_folder(path) if cfg is None else cfg
    tensors = _Tensors(_files(path))
    if dtype is None:
        dtype = tensors.dtype()
        dtype = "float32" if dtype == "float16" else dtype
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)} (or None for the checkpoint's), got {dtype!r}")
    np_dtype = np.dtype(DTYPES[dtype])
    place = place or (lambda _path, a: jnp.asarray(a))
    top, per_layer = _layout(cfg)

    def read(name, shape, transpose):
        a = tensors.get(name, shape)
        return (a.T if transpose else a).astype(np_dtype)

    params: dict = {}
    for ours, spec in top.items():
        _set(params, ours, place(ours, read(*spec)))
    layer_specs = [per_layer(i) for i in range(cfg.num_layers)]
    for ours in layer_specs[0]:
        stacked = np.stack([read(*specs[ours]) for specs in layer_specs])
        if ours[0] == "qkv":  # GPT-2's fused projection: q, k, v side by side on the output axis
            for j, name in enumerate("qkv"):
                part = np.split(stacked, 3, axis=-1)[j]
                _set(params, ("layers", name, ours[1]), place(("layers", name, ours[1]), part))
            continue
        _set(params, ("layers",) + ours, place(("layers",) + ours, stacked))
    return cfg, params

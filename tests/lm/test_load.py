"""Checkpoints of every family against the reference implementation's own outputs.

``tests/data/lm/`` holds tiny random checkpoints written by ``transformers`` (one folder
per case: config.json, safetensors -- sharded and bfloat16 in one case --, tokenizer
files) and, in ``reference.npz``, the reference's logits, 32-token greedy continuations,
tokenizer encodings and chat rendering; ``tests/data/lm/README.md`` gives the command
and versions that wrote them. Here our loader reads the same folders.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxagents.lm.config import ConfigError, ModelConfig
from jaxagents.lm.generate import Sampling, generate
from jaxagents.lm.load import CheckpointError, load_params
from jaxagents.lm.model import logits_of
from jaxagents.lm.tokenizer import Tokenizer

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "lm")
CASES = sorted(d for d in os.listdir(DATA) if os.path.isfile(os.path.join(DATA, d, "reference.npz")))


@functools.lru_cache(maxsize=None)
def case(name: str):
    folder = os.path.join(DATA, name)
    cfg, params = load_params(folder, dtype="float32")
    return folder, cfg, params, np.load(os.path.join(folder, "reference.npz"))


def test_every_family_has_a_case():
    families = {ModelConfig.from_folder(os.path.join(DATA, c)).family for c in CASES}
    assert families == {"llama", "qwen2", "qwen3", "gpt2"} and len(CASES) >= 6


@pytest.mark.parametrize("name", CASES)
def test_logits_and_greedy_continuations_match_the_reference(name):
    folder, cfg, params, ref = case(name)
    ids = jnp.asarray(ref["input_ids"])
    logits = np.asarray(logits_of(params, cfg, ids))
    np.testing.assert_allclose(logits, ref["logits"], atol=1e-4, rtol=0)
    out = generate(params, cfg, ids, jnp.full(ids.shape[0], ids.shape[1]), jax.random.PRNGKey(0),
                   Sampling(32, temperature=0.0))
    np.testing.assert_array_equal(out.tokens, ref["greedy_ids"])
    if "rope_inv_freq" in ref.files:
        np.testing.assert_allclose(cfg.rope_inv_freq(), ref["rope_inv_freq"], rtol=1e-6)
    # config.json in the older spelling (rope_theta + rope_scaling) reads the same
    old = os.path.join(folder, "config_v4.json")
    if os.path.isfile(old):
        with open(old) as f:
            assert ModelConfig.from_hf(json.load(f)) == cfg


@pytest.mark.parametrize("name", CASES)
def test_tokenizer_encodes_decodes_and_renders_chats_as_the_reference(name):
    folder, _, _, ref = case(name)
    tok = Tokenizer.from_folder(folder)
    for i, text in enumerate(ref["prompt_texts"]):
        n = int(ref["encoding_no_special_lengths"][i])
        assert tok.encode(str(text)) == list(ref["encodings_no_special"][i, :n])
        m = int(ref["encoding_lengths"][i])
        assert tok.encode(str(text), add_special_tokens=True) == list(ref["encodings"][i, :m])
        assert tok.decode(ref["encodings_no_special"][i, :n]) == str(ref["decoded_texts"][i])
    for text, ident in zip(ref["special_tokens"], ref["special_token_ids"]):
        assert tok.token_to_id(str(text)) == int(ident)
    if "chat_text" in ref.files:
        messages = json.loads(str(ref["chat_messages"]))
        assert tok.apply_chat_template(messages, add_generation_prompt=True) == str(ref["chat_text"])
    # the bytes of every token spell the tokenizer's own decoding
    table, length = tok.token_bytes()
    ids = list(ref["encodings_no_special"][0, : int(ref["encoding_no_special_lengths"][0])])
    assert b"".join(bytes(table[i, : length[i]]) for i in ids).decode() == tok.decode(ids)


def test_bfloat16_checkpoint_loads_in_its_own_dtype():
    folder = os.path.join(DATA, "qwen2_sharded_bf16")
    with open(os.path.join(folder, "model.safetensors.index.json")) as f:
        assert len(set(json.load(f)["weight_map"].values())) >= 2
    cfg, params = load_params(folder)  # dtype None: the checkpoint's
    assert {x.dtype for x in jax.tree_util.tree_leaves(params)} == {jnp.dtype(jnp.bfloat16)}
    ref = np.load(os.path.join(folder, "reference.npz"))
    logits = np.asarray(logits_of(params, cfg, jnp.asarray(ref["input_ids"])))
    # bfloat16 arithmetic (8 bits of mantissa): the same next-token choice almost
    # everywhere, logits within a few per cent of their range
    assert (logits.argmax(-1) == ref["logits"].argmax(-1)).mean() > 0.9
    assert np.abs(logits - ref["logits"]).max() < 0.05 * np.abs(ref["logits"]).max()


def _copy(tmp_path, name="qwen2"):
    dst = tmp_path / name
    shutil.copytree(os.path.join(DATA, name), dst)
    return dst


def _edit_config(folder, **changes):
    with open(folder / "config.json") as f:
        raw = json.load(f)
    raw.update(changes)
    with open(folder / "config.json", "w") as f:
        json.dump(raw, f)


def test_bad_folders_are_one_line_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_params(tmp_path / "nowhere")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match="config.json"):
        load_params(empty)
    with pytest.raises(FileNotFoundError, match="tokenizer.json"):
        Tokenizer.from_folder(empty)

    folder = _copy(tmp_path)
    os.remove(folder / "model.safetensors")
    with pytest.raises(FileNotFoundError, match="model.safetensors"):
        load_params(folder)

    sharded = _copy(tmp_path, "qwen2_sharded_bf16")
    os.remove(sharded / "model-00002-of-00003.safetensors")
    with pytest.raises(FileNotFoundError, match="model-00002-of-00003"):
        load_params(sharded)

    folder = _copy(tmp_path, "qwen3")
    _edit_config(folder, model_type="mamba", architectures=["MambaForCausalLM"])
    with pytest.raises(ConfigError, match="model_type 'mamba'.*supported: gpt2, llama"):
        load_params(folder)
    _edit_config(folder, model_type="qwen3", intermediate_size=256)
    with pytest.raises(CheckpointError, match=r"mlp.gate_proj.weight' has shape \(128, 64\), config.json implies \(256, 64\)"):
        load_params(folder)
    _edit_config(folder, intermediate_size=128, rope_parameters={"rope_type": "yarn", "rope_theta": 1e6, "factor": 4.0})
    with pytest.raises(ConfigError, match="rope scaling type 'yarn'"):
        load_params(folder)
    _edit_config(folder, rope_parameters={"rope_type": "default", "rope_theta": 1e6}, use_sliding_window=True)
    with pytest.raises(ConfigError, match="sliding"):
        load_params(folder)
    _edit_config(folder, use_sliding_window=False)
    with pytest.raises(ValueError, match="dtype must be one of float32, bfloat16"):
        load_params(folder, dtype="float64")


def test_missing_tensors_and_unreadable_dtypes_are_one_line_errors(tmp_path):
    from safetensors.numpy import load_file, save_file

    folder = _copy(tmp_path)
    tensors = load_file(folder / "model.safetensors")
    name = "model.layers.1.self_attn.k_proj.bias"
    save_file({k: v for k, v in tensors.items() if k != name}, folder / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(CheckpointError, match="no tensor 'model.layers.1.self_attn.k_proj.bias'"):
        load_params(folder)
    tensors[name] = tensors[name].astype(np.int8)
    save_file(tensors, folder / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(CheckpointError, match="dtype int8; readable: float32, bfloat16, float16"):
        load_params(folder)


SHARDED_CHECK = """
import sys, jax, jax.numpy as jnp, numpy as np
from jaxagents.lm.load import load_params
from jaxagents.lm.model import logits_of
from jaxagents.lm.generate import generate, Sampling
from jaxagents.lm.sharding import placer, shard_params
from jaxagents.population.mesh import make_mesh
folder = sys.argv[1]
mesh = make_mesh(pop=1, data=4)
cfg, params = load_params(folder, dtype="float32", place=placer(mesh))
ref = np.load(folder + "/reference.npz")
embed = params["embed"]
assert len(embed.sharding.device_set) == 4 and embed.addressable_shards[0].data.shape[0] * 4 == embed.shape[0] or \
    embed.addressable_shards[0].data.shape[1] * 4 == embed.shape[1], embed.sharding
ids = jnp.asarray(ref["input_ids"])
logits = jax.jit(logits_of, static_argnums=1)(params, cfg, ids)
np.testing.assert_allclose(np.asarray(logits), ref["logits"], atol=1e-4)
out = generate(params, cfg, ids, jnp.full(ids.shape[0], ids.shape[1]), jax.random.PRNGKey(0), Sampling(32, temperature=0.0))
np.testing.assert_array_equal(np.asarray(out.tokens), ref["greedy_ids"])
# weights already in memory, placed afterwards: the same shards and outputs
again = shard_params(jax.device_get(params), mesh)
assert again["embed"].sharding == embed.sharding
np.testing.assert_allclose(np.asarray(jax.jit(logits_of, static_argnums=1)(again, cfg, ids)), ref["logits"], atol=1e-4)
print("ok")
"""


@pytest.mark.slow
def test_weights_sharded_over_four_devices_give_the_reference_outputs():
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=4", "JAX_PLATFORMS": "cpu"}
    run = subprocess.run([sys.executable, "-c", SHARDED_CHECK, os.path.join(DATA, "llama_untied_linear")], env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.strip().endswith("ok"), run.stderr[-3000:]

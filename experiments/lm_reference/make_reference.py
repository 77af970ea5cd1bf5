"""Reference data for the JAX decoder (``jaxagents/lm/``): tiny random Hugging Face
checkpoints and what ``transformers`` computes with them.

Each case is a folder written by ``save_pretrained`` (config.json, safetensors weights,
generation_config.json, tokenizer.json, tokenizer_config.json, a chat template where the
family has one) plus ``reference.npz``: the prompt ids, the full forward logits in
float32, every layer's hidden states, the rotary inverse frequencies, 32 greedy tokens
from ``model.generate`` and the tokenizer's ids for a few strings. See
``tests/data/lm/README.md`` for the keys and the versions the data was recorded with.

Run in the reference virtual environment (torch, transformers, safetensors, tokenizers)::

    experiments_tmp/lmref/bin/python experiments/lm_reference/make_reference.py
    experiments_tmp/lmref/bin/python experiments/lm_reference/make_reference.py --check-only
    experiments_tmp/lmref/bin/python experiments/lm_reference/make_reference.py \\
        --bench-model --bench-out experiments_tmp/qwen05b_random

Nothing is downloaded: the models are built from configs and the tokenizer is trained
here on generated game text.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import os
import platform
import random
import shutil
import tempfile
import time

import numpy as np

CASES = ("llama_tied", "llama_untied_linear", "qwen2", "qwen3", "gpt2", "qwen2_sharded_bf16")
DEFAULT_OUT = os.path.join("tests", "data", "lm")
DEFAULT_BENCH_OUT = os.path.join("experiments_tmp", "qwen05b_random")

MODEL_VOCAB = 512          # rows of the embedding / lm_head in every tiny model
BPE_VOCAB = 493            # 256 byte symbols + merges (the trainer's vocab_size)
SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|begin_of_text|>",
                  "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>")
# tokenizer: 493 + 7 special tokens = 500 ids; the models have 512 rows (the last 12 are
# never produced by the tokenizer, as in Qwen checkpoints whose embedding is padded)
PROMPT_LEN = 12
NEW_TOKENS = 32
SEED = 1234

# Split rule of the pre-tokenizer (the Qwen2 / cl100k-style pattern: single digits,
# letters with one leading non-letter, punctuation runs, newline runs, spaces)
SPLIT_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
                 r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

CHATML_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
LLAMA3_TEMPLATE = (
    "{{- bos_token }}"
    "{%- for message in messages %}"
    "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + message['content'] | trim"
    " + '<|eot_id|>' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}"
)

CHAT_MESSAGES = [
    {"role": "system", "content": "You are a careful player. Answer with one action in brackets."},
    {"role": "user", "content": "[GAME] You are Player 1 in a 3 round game of Kuhn Poker.\n"
                                "Your card: K\nYour available actions are: [check], [bet]"},
]

# two prompts for the forward pass and the greedy continuation (cut to PROMPT_LEN ids)
INPUT_TEXTS = (
    "[GAME] You are Player 0 in a 3 round game of Kuhn Poker. Your card: J",
    "Current Board:\n X | O | 3\n---+---+---\n 4 | X | 6\nAvailable Moves: [3], [4], [6]",
)

# strings whose ids test the tokenizer loading: spaces, digits, newlines, punctuation,
# special tokens inside text, bytes outside the training text (accents, emoji, CJK)
TOKENIZER_TEXTS = (
    "[GAME] You are Player 0 in a 3 round game of Kuhn Poker.",
    "[bet]",
    "Current Board:\n O | X | 2\n---+---+---\n 3 | 4 | 5",
    "  two leading spaces,   three inside, trailing  ",
    "Player 1 has 12345 chips; pot=007.",
    "<|im_start|>user\nhello<|im_end|>\n",
    "naïve café — 🃏 牌 (ünïcödé)",
    "\n\n\tTab and newlines\r\n",
    "",
)

# the family of each case: model class, special tokens, chat template, post-processor
FAMILIES = {
    "llama": {"bos": "<|begin_of_text|>", "eos": "<|eot_id|>", "pad": None,
              "template": LLAMA3_TEMPLATE, "prepend_bos": True},
    "qwen": {"bos": None, "eos": "<|im_end|>", "pad": "<|endoftext|>",
             "template": CHATML_TEMPLATE, "prepend_bos": False},
    "gpt2": {"bos": "<|endoftext|>", "eos": "<|endoftext|>", "pad": None,
             "template": None, "prepend_bos": False},
}


# ----------------------------------------------------------------------------- corpus
def game_corpus(seed: int = 0) -> list[str]:
    """A few kilobytes of text shaped like the game prompts the agents read."""
    rng = random.Random(seed)
    cards = ["J", "Q", "K"]
    lines = []
    for _ in range(60):
        player = rng.randint(0, 1)
        rounds = rng.choice([3, 5, 7])
        lines.append(f"[GAME] You are Player {player} in a {rounds} round game of Kuhn Poker.")
        lines.append("Game Rules:\n- Kuhn Poker uses a 3-card deck with J, Q, K (J lowest, K highest)\n"
                     "- Each player antes 1 chip and receives 1 card each round\n"
                     f"- Game continues for {rounds} rounds\n"
                     "- The player with the most chips after all rounds wins")
        lines.append(f"[GAME] Starting round {rng.randint(1, rounds)} out of {rounds} rounds.")
        lines.append(f"Your card: {rng.choice(cards)}")
        acts = rng.choice([["[check]", "[bet]"], ["[fold]", "[call]"]])
        lines.append(f"[GAME] Your available actions are: {', '.join(acts)}")
        lines.append(f"[Player {1 - player}] {rng.choice(acts)}")
        lines.append(f"[GAME] Player {rng.randint(0, 1)} wins the round with a {rng.choice(cards)} "
                     f"and gains {rng.randint(1, 4)} chips. Current chips: {rng.randint(0, 20)}")
    for _ in range(60):
        cells = [str(i) for i in range(9)]
        for i in rng.sample(range(9), rng.randint(0, 7)):
            cells[i] = rng.choice("XO")
        rows = [" " + " | ".join(cells[3 * r:3 * r + 3]) for r in range(3)]
        lines.append("[GAME] You are Player {} in Tic Tac Toe. Your symbol is '{}'.".format(
            rng.randint(0, 1), rng.choice("XO")))
        lines.append("Current Board:\n" + "\n---+---+---\n".join(rows))
        free = [c for c in cells if c.isdigit()]
        lines.append("Available Moves: " + ", ".join(f"'[{c}]'" for c in free))
        lines.append(f"[Player {rng.randint(0, 1)}] I will mark cell [{rng.choice(free or ['4'])}]")
    for _ in range(40):
        a, b = rng.randint(0, 999), rng.randint(0, 99)
        lines.append(f"Round {rng.randint(1, 9)}: the pot is {a} and the bet is {b}. "
                     f"Player {rng.randint(0, 3)} has {a + b} chips left.")
        lines.append(rng.choice([
            "You win the game!", "The game is a draw.", "Invalid move. Please try again.",
            "Think step by step, then answer with your action in brackets.",
            "The opponent raised. What do you do?",
        ]))
    return lines


# ----------------------------------------------------------------------------- tokenizer
def train_tokenizer():
    """One byte-level BPE (``tokenizers.Tokenizer``) trained on ``game_corpus``; the
    special tokens are added after the trained ids."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(SPLIT_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=BPE_VOCAB, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=[])
    tok.train_from_iterator(game_corpus(), trainer=trainer)
    trained = tok.get_vocab_size()
    if trained != BPE_VOCAB:
        raise SystemExit(f"the tokenizer trained to {trained} ids, expected {BPE_VOCAB}: enlarge the corpus")
    tok.add_special_tokens(list(SPECIAL_TOKENS))
    return tok


def family_tokenizer(base, family: str):
    """``transformers.PreTrainedTokenizerFast`` around a copy of ``base`` with the
    family's post-processor (llama: prepend ``<|begin_of_text|>``), special tokens and
    chat template."""
    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast

    spec = FAMILIES[family]
    tok = copy.deepcopy(base)
    byte_level = processors.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    if spec["prepend_bos"]:
        bos = spec["bos"]
        tok.post_processor = processors.Sequence([byte_level, processors.TemplateProcessing(
            single=f"{bos}:0 $A:0", pair=f"{bos}:0 $A:0 {bos}:1 $B:1",
            special_tokens=[(bos, tok.token_to_id(bos))])])
    else:
        tok.post_processor = byte_level
    kwargs = {"tokenizer_object": tok, "model_max_length": 128, "clean_up_tokenization_spaces": False}
    for name in ("bos", "eos", "pad"):
        if spec[name] is not None:
            kwargs[name + "_token"] = spec[name]
    if spec["template"] is not None:
        kwargs["chat_template"] = spec["template"]
    return PreTrainedTokenizerFast(**kwargs)


# ----------------------------------------------------------------------------- models
def tiny_config(case: str, tokenizer):
    """The ``transformers`` config of a case (random-init, tiny)."""
    from transformers import GPT2Config, LlamaConfig, Qwen2Config, Qwen3Config

    ids = {"bos_token_id": tokenizer.bos_token_id, "eos_token_id": tokenizer.eos_token_id,
           "pad_token_id": tokenizer.pad_token_id}
    common = dict(vocab_size=MODEL_VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  max_position_embeddings=128, hidden_act="silu", **ids)
    if case == "llama_tied":
        return LlamaConfig(**common, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                           rms_norm_eps=1e-5, tie_word_embeddings=True,
                           rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                                            "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                            "original_max_position_embeddings": 64})
    if case == "llama_untied_linear":
        return LlamaConfig(**common, num_attention_heads=4, num_key_value_heads=1, head_dim=16,
                           rms_norm_eps=1e-6, tie_word_embeddings=False,
                           rope_parameters={"rope_type": "linear", "rope_theta": 10000.0, "factor": 2.0})
    if case in ("qwen2", "qwen2_sharded_bf16"):
        return Qwen2Config(**common, num_attention_heads=4, num_key_value_heads=2, rms_norm_eps=1e-6,
                           tie_word_embeddings=True, use_sliding_window=False,
                           rope_parameters={"rope_type": "default", "rope_theta": 1000000.0})
    if case == "qwen3":
        return Qwen3Config(**common, num_attention_heads=4, num_key_value_heads=2, head_dim=32,
                           rms_norm_eps=1e-6, tie_word_embeddings=False, attention_bias=False,
                           use_sliding_window=False,
                           rope_parameters={"rope_type": "default", "rope_theta": 1000000.0})
    if case == "gpt2":
        # n_inner left at None: GPT-2 checkpoints store null and mean 4 * n_embd
        return GPT2Config(vocab_size=MODEL_VOCAB, n_positions=128, n_embd=64, n_layer=2, n_head=4,
                          n_inner=None, activation_function="gelu_new", layer_norm_epsilon=1e-5,
                          tie_word_embeddings=True, **ids)
    raise ValueError(case)


def bench_config(tokenizer, layers: int, vocab: int):
    """Qwen2.5-0.5B's shapes (hidden 896, 14 heads, 2 kv heads, intermediate 4864,
    vocab 151936, tied; 24 layers), random weights."""
    from transformers import Qwen2Config

    return Qwen2Config(vocab_size=vocab, hidden_size=896, intermediate_size=4864, num_hidden_layers=layers,
                       num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=32768,
                       rms_norm_eps=1e-6, tie_word_embeddings=True, use_sliding_window=False,
                       hidden_act="silu", rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
                       bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                       pad_token_id=tokenizer.pad_token_id)


def randomize(model, seed: int) -> None:
    """Give every parameter a non-trivial random value (seeded): weights ~ N(0, gain^2 /
    fan_in) (gain 1.5 for queries and keys -- GPT-2's fused c_attn: all three -- so
    attention is peaked and the rotary positions matter), embeddings ~ N(0, 1)
    (positions ~ N(0, 0.25)), every norm's scale ~ U(0.5, 1.5), every bias ~ N(0, 0.3^2),
    an untied lm_head ~ N(0, 1) (logits spread over several units, as when tied, which
    keeps greedy choices away from near-ties)."""
    import torch
    from transformers.pytorch_utils import Conv1D

    gen = torch.Generator().manual_seed(seed)
    fan_in = {}
    for mname, module in model.named_modules():
        if isinstance(module, torch.nn.Linear):
            fan_in[mname + ".weight"] = module.in_features
        elif isinstance(module, Conv1D):
            fan_in[mname + ".weight"] = module.weight.shape[0]
    with torch.no_grad():
        for name, p in model.named_parameters():  # a tied lm_head is listed once (the embedding)
            if name == "lm_head.weight":
                fan_in.pop(name, None)
            if name.endswith("bias"):
                value = 0.3 * torch.randn(p.shape, generator=gen)
            elif p.ndim == 1:
                value = 0.5 + torch.rand(p.shape, generator=gen)
            elif name in fan_in:
                gain = 1.5 if any(k in name for k in ("q_proj", "k_proj", "c_attn")) else 1.0
                value = torch.randn(p.shape, generator=gen) * (gain / math.sqrt(fan_in[name]))
            elif name.endswith("wpe.weight"):
                value = 0.5 * torch.randn(p.shape, generator=gen)
            else:  # token embeddings and an untied lm_head (logits of a few units, as when tied)
                value = torch.randn(p.shape, generator=gen)
            p.copy_(value.to(p.dtype))


def build_model(config, seed: int):
    import torch
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, attn_implementation="eager", dtype=torch.float32)
    randomize(model, seed)
    if config.tie_word_embeddings:
        assert model.get_output_embeddings().weight is model.get_input_embeddings().weight
    return model.eval()


# ----------------------------------------------------------------------------- recording
def versions() -> dict:
    import jinja2
    import safetensors
    import tokenizers
    import torch
    import transformers

    return {"python": platform.python_version(), "torch": torch.__version__,
            "transformers": transformers.__version__, "safetensors": safetensors.__version__,
            "tokenizers": tokenizers.__version__, "jinja2": jinja2.__version__, "numpy": np.__version__}


def prompt_ids(tokenizer, length: int = PROMPT_LEN) -> np.ndarray:
    rows = []
    for text in INPUT_TEXTS:
        ids = tokenizer(text)["input_ids"]
        if len(ids) < length:
            raise SystemExit(f"prompt {text!r} has only {len(ids)} ids")
        rows.append(ids[:length])
    return np.asarray(rows, dtype=np.int32)


def padded(rows: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    width = max(1, max(len(r) for r in rows))
    out = np.full((len(rows), width), -1, dtype=np.int32)
    for i, r in enumerate(rows):
        out[i, :len(r)] = r
    return out, np.asarray([len(r) for r in rows], dtype=np.int32)


def decoder_parts(model):
    """(decoder layers, final norm) of a causal LM."""
    if hasattr(model, "transformer"):  # GPT-2
        return model.transformer.h, model.transformer.ln_f
    return model.model.layers, model.model.norm


def forward(model, input_ids: np.ndarray):
    """Full-sequence logits [B, T, V], the residual stream [L + 1, B, T, H] (the input of
    the first layer, then each layer's output, no final norm) and the final norm's output
    [B, T, H] (what the lm_head multiplies), all float32 numpy."""
    import torch

    layers, norm = decoder_parts(model)
    stream, final = [], []

    def take_input(module, args, kwargs):
        stream.append((args[0] if args else kwargs["hidden_states"]).detach().clone())

    def take_output(module, args, out):
        stream.append((out[0] if isinstance(out, tuple) else out).detach().clone())

    def take_final(module, args, out):
        final.append(out.detach().clone())

    handles = [layers[0].register_forward_pre_hook(take_input, with_kwargs=True)]
    handles += [layer.register_forward_hook(take_output) for layer in layers]
    handles.append(norm.register_forward_hook(take_final))
    ids = torch.as_tensor(input_ids, dtype=torch.long)
    try:
        with torch.no_grad():
            out = model(input_ids=ids, attention_mask=torch.ones_like(ids), output_hidden_states=True,
                        use_cache=False)
    finally:
        for h in handles:
            h.remove()
    if len(stream) != len(layers) + 1 or len(final) != 1:
        raise SystemExit(f"hooks saw {len(stream)} layer states and {len(final)} final norms")
    # transformers' own hidden_states: the same first entry, and the final norm's output last
    assert torch.equal(out.hidden_states[0], stream[0]) and torch.equal(out.hidden_states[-1], final[0])
    hidden = np.stack([h.float().numpy() for h in stream])
    return out.logits.float().numpy(), hidden, final[0].float().numpy()


def greedy(model, input_ids: np.ndarray, new_tokens: int = NEW_TOKENS):
    """``model.generate(do_sample=False)`` with no end-of-sequence id, so exactly
    ``new_tokens`` come out; with the top-1 minus top-2 logit margin of every step."""
    import torch

    ids = torch.as_tensor(input_ids, dtype=torch.long)
    gen_config = copy.deepcopy(model.generation_config)
    gen_config.eos_token_id = None          # never stop early (and no min-length masking)
    gen_config.do_sample = False
    gen_config.max_new_tokens = new_tokens
    gen_config.min_new_tokens = None
    gen_config.pad_token_id = 0 if gen_config.pad_token_id is None else gen_config.pad_token_id
    gen_config.return_dict_in_generate = True
    gen_config.output_logits = True
    with torch.no_grad():
        out = model.generate(ids, attention_mask=torch.ones_like(ids), generation_config=gen_config)
    new = out.sequences[:, ids.shape[1]:].numpy().astype(np.int32)
    if new.shape != (ids.shape[0], new_tokens):
        raise SystemExit(f"generate returned {new.shape[1]} new tokens, expected {new_tokens}")
    logits = torch.stack(out.logits, dim=1).float()            # [B, new, V]
    top2 = torch.topk(logits, 2, dim=-1).values
    if not np.array_equal(logits.argmax(-1).numpy(), new):
        raise SystemExit("generate's tokens are not the argmax of its logits")
    return new, (top2[..., 0] - top2[..., 1]).numpy().astype(np.float32)


def greedy_without_cache(model, input_ids: np.ndarray, new_tokens: int = NEW_TOKENS) -> np.ndarray:
    """The same continuation by re-running the full forward pass each step (no KV cache)."""
    seq = np.asarray(input_ids)
    for _ in range(new_tokens):
        logits = forward(model, seq)[0]
        seq = np.concatenate([seq, logits[:, -1].argmax(-1)[:, None].astype(np.int32)], axis=1)
    return seq[:, input_ids.shape[1]:]


def rope_inv_freq(model):
    rotary = getattr(getattr(model, "model", None), "rotary_emb", None)
    if rotary is None:
        return None, None
    return rotary.inv_freq.float().numpy().astype(np.float32), float(rotary.attention_scaling)


def tokenizer_record(tokenizer, family: str) -> dict:
    with_special = [tokenizer(t)["input_ids"] for t in TOKENIZER_TEXTS]
    without = [tokenizer(t, add_special_tokens=False)["input_ids"] for t in TOKENIZER_TEXTS]
    enc, lengths = padded(with_special)
    enc_plain, lengths_plain = padded(without)
    rec = {
        "prompt_texts": np.asarray(TOKENIZER_TEXTS),
        "encodings": enc, "encoding_lengths": lengths,
        "encodings_no_special": enc_plain, "encoding_no_special_lengths": lengths_plain,
        "decoded_texts": np.asarray([tokenizer.decode(ids) for ids in without]),
        "special_tokens": np.asarray(SPECIAL_TOKENS),
        "special_token_ids": np.asarray([tokenizer.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS],
                                        dtype=np.int32),
        "tokenizer_size": np.int32(len(tokenizer)),
    }
    if FAMILIES[family]["template"] is not None:
        chat = tokenizer.apply_chat_template(CHAT_MESSAGES, tokenize=False, add_generation_prompt=True)
        rec["chat_messages"] = np.asarray(json.dumps(CHAT_MESSAGES))
        rec["chat_text"] = np.asarray(chat)
        rec["chat_ids"] = np.asarray(tokenizer(chat, add_special_tokens=False)["input_ids"], dtype=np.int32)
    return rec


def legacy_config(config_json: dict) -> dict:
    """The same config in the layout transformers 4.x wrote (and most Hub checkpoints
    still have): ``rope_theta`` at the top level, the scaling rule (without
    ``rope_theta``) in ``rope_scaling`` (null for plain RoPE), ``torch_dtype`` for
    ``dtype``, and no ``layer_types``."""
    old = {}
    for key, value in config_json.items():
        if key == "rope_parameters":
            rope = dict(value)
            old["rope_theta"] = rope.pop("rope_theta")
            old["rope_scaling"] = None if rope.get("rope_type", "default") == "default" else rope
        elif key == "dtype":
            old["torch_dtype"] = value
        elif key != "layer_types":
            old[key] = value
    return dict(sorted(old.items()))


def family_of(case: str) -> str:
    return "llama" if case.startswith("llama") else "gpt2" if case == "gpt2" else "qwen"


def write_case(case: str, out_dir: str, base_tokenizer) -> dict:
    """Write one case's checkpoint folder and ``reference.npz``; return a summary."""
    import torch

    family = family_of(case)
    folder = os.path.join(out_dir, case)
    if os.path.isdir(folder):
        shutil.rmtree(folder)
    os.makedirs(folder)
    tokenizer = family_tokenizer(base_tokenizer, family)
    config = tiny_config(case, tokenizer)
    # the sharded case has the qwen2 case's weights (same seed), rounded to bfloat16
    seed = SEED + CASES.index("qwen2" if case == "qwen2_sharded_bf16" else case)
    model = build_model(config, seed)
    dtype = "float32"
    if case == "qwen2_sharded_bf16":
        dtype = "bfloat16"
        stored = copy.deepcopy(model).to(torch.bfloat16)
        stored.save_pretrained(folder, max_shard_size="100KB")
        with torch.no_grad():  # the reference: the stored bf16 weights run in float32
            for p in model.parameters():  # (parameters only: the rotary buffer stays float32)
                p.copy_(p.to(torch.bfloat16).to(torch.float32))
    else:
        model.save_pretrained(folder)
    # llama_untied_linear keeps transformers' default chat_template.jinja file; the
    # others put the template in tokenizer_config.json (the older layout)
    tokenizer.save_pretrained(folder, save_jinja_files=(case == "llama_untied_linear"))
    with open(os.path.join(folder, "config.json")) as f:
        config_json = json.load(f)
    with open(os.path.join(folder, "config_v4.json"), "w") as f:
        json.dump(legacy_config(config_json), f, indent=2)
        f.write("\n")

    input_ids = prompt_ids(tokenizer)
    logits, hidden, final = forward(model, input_ids)
    new, margin = greedy(model, input_ids)
    inv_freq, attention_scaling = rope_inv_freq(model)
    rec = {
        "case": np.asarray(case), "model_class": np.asarray(type(model).__name__),
        "dtype": np.asarray(dtype), "seed": np.int64(seed),
        "versions": np.asarray(json.dumps(versions(), sort_keys=True)),
        "input_ids": input_ids,
        "input_texts": np.asarray([tokenizer.decode(r) for r in input_ids]),
        "logits": logits.astype(np.float32), "hidden_states": hidden.astype(np.float32),
        "final_hidden": final.astype(np.float32),
        "greedy_ids": new, "greedy_margin": margin,
    }
    if inv_freq is not None:
        rec["rope_inv_freq"] = inv_freq
        rec["rope_attention_scaling"] = np.float32(attention_scaling)
    rec.update(tokenizer_record(tokenizer, family))
    np.savez_compressed(os.path.join(folder, "reference.npz"), **rec)
    return {"case": case, "folder": folder, "min_margin": float(margin.min()),
            "files": sorted(os.listdir(folder))}


# ----------------------------------------------------------------------------- checks
def expected_inv_freq(config_json: dict) -> np.ndarray:
    """The rotary inverse frequencies from config.json alone, in float64 (an
    independent restatement of transformers' default / linear / llama3 rules)."""
    rope = dict(config_json.get("rope_parameters") or config_json.get("rope_scaling") or {})
    theta = rope.get("rope_theta", config_json.get("rope_theta", 10000.0))
    kind = rope.get("rope_type", rope.get("type", "default"))
    head_dim = config_json.get("head_dim") or config_json["hidden_size"] // config_json["num_attention_heads"]
    inv = 1.0 / theta ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    if kind == "default":
        return inv
    if kind == "linear":
        return inv / rope["factor"]
    if kind == "llama3":
        factor, low, high = rope["factor"], rope["low_freq_factor"], rope["high_freq_factor"]
        old = rope["original_max_position_embeddings"]
        wavelen = 2 * np.pi / inv
        smooth = (old / wavelen - low) / (high - low)
        mid = (1 - smooth) * inv / factor + smooth * inv
        return np.where(wavelen < old / high, inv, np.where(wavelen > old / low, inv / factor, mid))
    raise ValueError(kind)


def check_case(case: str, out_dir: str, verbose: bool = True) -> dict:
    """Reload the folder with ``AutoModelForCausalLM`` / ``AutoTokenizer`` /
    ``tokenizers`` and compare with ``reference.npz``."""
    import torch
    from tokenizers import Tokenizer
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = os.path.join(out_dir, case)
    ref = dict(np.load(os.path.join(folder, "reference.npz")))
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, attn_implementation="eager",
                                                 local_files_only=True).eval()
    logits, hidden, final = forward(model, ref["input_ids"])
    report = {"case": case, "logits_maxdiff": float(np.abs(logits - ref["logits"]).max()),
              "hidden_maxdiff": max(float(np.abs(hidden - ref["hidden_states"]).max()),
                                    float(np.abs(final - ref["final_hidden"]).max())),
              "logits_std": float(ref["logits"].std())}
    assert report["logits_maxdiff"] < 1e-5 and report["hidden_maxdiff"] < 1e-5, report
    new, _ = greedy(model, ref["input_ids"])
    assert np.array_equal(new, ref["greedy_ids"]), "reloaded generate differs"
    assert np.array_equal(greedy_without_cache(model, ref["input_ids"]), ref["greedy_ids"]), \
        "generate differs from argmax of full forward passes"
    sdpa = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, attn_implementation="sdpa",
                                                local_files_only=True).eval()
    report["sdpa_maxdiff"] = float(np.abs(forward(sdpa, ref["input_ids"])[0] - ref["logits"]).max())

    config_json = json.load(open(os.path.join(folder, "config.json")))
    if "rope_inv_freq" in ref:
        want = expected_inv_freq(config_json)
        report["inv_freq_maxrel"] = float(np.abs(ref["rope_inv_freq"] / want - 1).max())
        assert report["inv_freq_maxrel"] < 1e-6, report
        # how much the logits move if the scaling rule were ignored (default RoPE)
        rope = config_json.get("rope_parameters") or {}
        if rope.get("rope_type", "default") != "default":
            plain = copy.deepcopy(model)
            theta = rope["rope_theta"]
            dim = len(want) * 2
            plain.model.rotary_emb.inv_freq.copy_(
                torch.as_tensor(1.0 / theta ** (np.arange(0, dim, 2) / dim), dtype=torch.float32))
            report["unscaled_rope_logits_maxdiff"] = float(
                np.abs(forward(plain, ref["input_ids"])[0] - ref["logits"]).max())

    # config_v4.json (the transformers-4 layout) gives the same model
    with tempfile.TemporaryDirectory() as tmp:
        for name in os.listdir(folder):
            if name.endswith((".safetensors", ".safetensors.index.json")):
                os.symlink(os.path.abspath(os.path.join(folder, name)), os.path.join(tmp, name))
        shutil.copy(os.path.join(folder, "config_v4.json"), os.path.join(tmp, "config.json"))
        legacy = AutoModelForCausalLM.from_pretrained(tmp, dtype=torch.float32, attn_implementation="eager",
                                                      local_files_only=True).eval()
        report["v4_config_logits_maxdiff"] = float(
            np.abs(forward(legacy, ref["input_ids"])[0] - ref["logits"]).max())
        assert report["v4_config_logits_maxdiff"] == 0.0, report
        assert getattr(legacy.config, "rope_parameters", None) == getattr(model.config, "rope_parameters", None)

    tok = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    raw = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    for i, text in enumerate(ref["prompt_texts"]):
        want = ref["encodings"][i, :ref["encoding_lengths"][i]].tolist()
        plain = ref["encodings_no_special"][i, :ref["encoding_no_special_lengths"][i]].tolist()
        assert tok(str(text))["input_ids"] == want, (case, text)
        assert raw.encode(str(text)).ids == want, (case, text, "tokenizers")
        assert raw.encode(str(text), add_special_tokens=False).ids == plain, (case, text)
    if "chat_text" in ref:
        rendered = tok.apply_chat_template(json.loads(str(ref["chat_messages"])), tokenize=False,
                                           add_generation_prompt=True)
        assert rendered == str(ref["chat_text"]), (case, rendered)
    if verbose:
        print(json.dumps(report))
    return report


# ----------------------------------------------------------------------------- bench model
def write_bench(out: str, layers: int, vocab: int, base_tokenizer) -> None:
    """A Qwen2.5-0.5B-shaped random checkpoint (bfloat16 safetensors, as the released
    model) with a short reference (logits of the two prompts, 32 greedy tokens, run in
    float32 from the stored bfloat16 weights)."""
    import torch

    t0 = time.time()
    tokenizer = family_tokenizer(base_tokenizer, "qwen")
    config = bench_config(tokenizer, layers, vocab)
    model = build_model(config, SEED + 100)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"built {n_params / 1e6:.1f}M parameters in {time.time() - t0:.1f}s", flush=True)
    if os.path.isdir(out):
        shutil.rmtree(out)
    os.makedirs(out)
    model.to(torch.bfloat16).save_pretrained(out)
    # back to float32: the parameters are exactly the stored bf16 values; the rotary
    # buffer, rounded by .to(bfloat16), is computed again from the config
    model.to(torch.float32)
    rotary = model.model.rotary_emb
    with torch.no_grad():
        inv_freq, _ = rotary.compute_default_rope_parameters(model.config)
        rotary.inv_freq.copy_(inv_freq)
        rotary.original_inv_freq.copy_(inv_freq)
    tokenizer.save_pretrained(out, save_jinja_files=False)
    print(f"saved in {time.time() - t0:.1f}s", flush=True)
    input_ids = prompt_ids(tokenizer)
    logits = forward(model, input_ids)[0]
    new, margin = greedy(model, input_ids)
    np.savez(os.path.join(out, "reference.npz"), case=np.asarray("bench_qwen2"), dtype=np.asarray("bfloat16"),
             versions=np.asarray(json.dumps(versions(), sort_keys=True)), input_ids=input_ids,
             logits_last=logits[:, -1].astype(np.float32), greedy_ids=new, greedy_margin=margin)
    del model
    from transformers import AutoModelForCausalLM

    reloaded = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32, attn_implementation="eager",
                                                    local_files_only=True).eval()
    diff = float(np.abs(forward(reloaded, input_ids)[0][:, -1] - logits[:, -1]).max())
    assert diff == 0.0, f"reloaded bench checkpoint gives other logits (max diff {diff})"
    print(f"bench checkpoint ({layers} layers, vocab {vocab}) in {out}, reload checked: "
          f"{time.time() - t0:.1f}s", flush=True)


# ----------------------------------------------------------------------------- main
def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=DEFAULT_OUT, help="output folder (one sub-folder per case)")
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=CASES)
    parser.add_argument("--no-check", action="store_true", help="skip reloading and comparing")
    parser.add_argument("--check-only", action="store_true", help="only reload and compare existing folders")
    parser.add_argument("--bench-model", action="store_true",
                        help="write the Qwen2.5-0.5B-shaped random checkpoint instead of the cases")
    parser.add_argument("--bench-out", default=DEFAULT_BENCH_OUT)
    parser.add_argument("--bench-layers", type=int, default=24, help="fewer for a quick try of the code path")
    parser.add_argument("--bench-vocab", type=int, default=151936)
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(max(1, os.cpu_count() or 1))
    print(json.dumps(versions()), flush=True)
    if args.bench_model:
        write_bench(args.bench_out, args.bench_layers, args.bench_vocab, train_tokenizer())
        return
    if not args.check_only:
        base = train_tokenizer()
        os.makedirs(args.out, exist_ok=True)
        for case in args.cases:
            print(json.dumps(write_case(case, args.out, base)), flush=True)
    if not args.no_check:
        for case in args.cases:
            check_case(case, args.out)


if __name__ == "__main__":
    main()

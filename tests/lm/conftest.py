"""Fixtures of the language-model tests: a small byte-level BPE tokenizer trained on game
text, and a tiny random decoder of each family (compiled functions are cached per config)."""

from __future__ import annotations

import pytest

from jaxagents.lm.config import ModelConfig

GAME_TEXT = [
    "[GAME] You are Player 0 in a 3 round game of Kuhn Poker.",
    "Your available actions are: '[check]', '[bet]'",
    "[Player 1] [bet]", "[Player 0] [fold]", "[call] [check] [bet] [fold]",
    "Current Board:\n\n 0 | 1 | 2 \n---+---+---\n 3 | 4 | 5 \n---+---+---\n 6 | 7 | 8 ",
    "Available Moves: '[0]', '[1]', '[2]', '[3]', '[4]', '[5]', '[6]', '[7]', '[8]'",
    "Player 1 placed their symbol (X) in cell 4. Showdown: Player 0's K beats Player 1's J.",
] * 20


def train_tokenizer(vocab_size: int = 300, pre: str = "bytelevel"):
    """A ``tokenizers.Tokenizer`` (byte-level BPE) trained on ``GAME_TEXT``."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    if pre == "bytelevel":
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    else:  # Qwen2's split rule, then bytes
        qwen = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
                r"|\s+(?!\S)|\s+")
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(qwen), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(GAME_TEXT, trainer)
    return tok


@pytest.fixture(scope="session")
def tokenizer():
    from jaxagents.lm.tokenizer import Tokenizer

    return Tokenizer(train_tokenizer(), {"eos_token": "<|endoftext|>"})


def tiny_config(family: str, vocab_size: int = 300) -> ModelConfig:
    extra = {"gpt2": dict(tie_embeddings=True, qkv_bias=True, o_bias=True, mlp_bias=True),
             "qwen2": dict(qkv_bias=True, tie_embeddings=True), "qwen3": dict(qk_norm=True),
             "llama": dict(rope_scaling=("linear", (("factor", 2.0),)))}[family]
    return ModelConfig(family=family, vocab_size=vocab_size, hidden_size=32, num_layers=2, num_heads=4,
                       num_kv_heads=4 if family == "gpt2" else 2, head_dim=8, intermediate_size=64, max_position=128,
                       **extra)

"""A checkpoint folder's tokenizer: ``tokenizer.json`` (via ``tokenizers``), its special
tokens and chat template (``tokenizer_config.json``), and the per-token bytes that let
compiled code read generated text (stop strings, move parsing) without leaving ``jit``.

Token bytes. A byte-level BPE (GPT-2, Llama 3, Qwen) spells every byte as one printable
character; ``token_bytes`` undoes that mapping, so the bytes of a generated sequence
are the concatenation of its tokens' bytes, exactly. Other tokenizers (SentencePiece
with byte fallback) get each token's own decoding, which is exact for byte-fallback
tokens and for pieces whose leading space the decoder keeps.
"""

from __future__ import annotations

import json
import os
from typing import Sequence

import numpy as np


def _byte_to_unicode() -> dict[int, str]:
    """The byte-level BPE's printable spelling of each byte (GPT-2's table)."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    chars = list(keep)
    extra = 0
    for b in range(256):
        if b not in keep:
            keep.append(b)
            chars.append(256 + extra)
            extra += 1
    return {b: chr(c) for b, c in zip(keep, chars)}


def _token_text(entry) -> str | None:
    if isinstance(entry, str):
        return entry
    if isinstance(entry, dict):
        return entry.get("content")
    return None


class Tokenizer:
    """A Hugging Face tokenizer read from a folder (``Tokenizer.from_folder``).

    Attributes:
        vocab_size: the number of ids (including added tokens).
        eos_token_id, bos_token_id, pad_token_id: ids or None.
        chat_template: the Jinja template string, or None.
    """

    def __init__(self, backend, config: dict | None = None):
        self._tok = backend
        config = config or {}
        self.config = config
        self.vocab_size = backend.get_vocab_size(with_added_tokens=True)
        self.chat_template = config.get("chat_template")
        self.special = {}
        for name in ("eos_token", "bos_token", "pad_token", "unk_token"):
            text = _token_text(config.get(name))
            self.special[name] = text
        self.eos_token_id = self.token_to_id(self.special["eos_token"])
        self.bos_token_id = self.token_to_id(self.special["bos_token"])
        self.pad_token_id = self.token_to_id(self.special["pad_token"])

    @classmethod
    def from_folder(cls, path: str | os.PathLike) -> "Tokenizer":
        """Read ``tokenizer.json`` and (when present) ``tokenizer_config.json`` and
        ``chat_template.jinja`` from ``path``."""
        from tokenizers import Tokenizer as Backend

        path = os.fspath(path)
        file = os.path.join(path, "tokenizer.json")
        if not os.path.isfile(file):
            raise FileNotFoundError(f"model folder {path!r} has no tokenizer.json")
        config = {}
        cfg_file = os.path.join(path, "tokenizer_config.json")
        if os.path.isfile(cfg_file):
            with open(cfg_file) as f:
                config = json.load(f)
        jinja = os.path.join(path, "chat_template.jinja")
        if config.get("chat_template") is None and os.path.isfile(jinja):
            with open(jinja) as f:
                config["chat_template"] = f.read()
        return cls(Backend.from_file(file), config)

    @classmethod
    def train(cls, texts: Sequence[str], vocab_size: int, eos_token: str = "<|endoftext|>") -> "Tokenizer":
        """A byte-level BPE (GPT-2's pre-tokenizer and byte alphabet) trained on ``texts``
        with ``vocab_size`` ids, ``eos_token`` its one special token: the small tokenizer
        of a model trained from scratch on the games' own text. Deterministic: the same
        texts give the same tokenizer, so a resumed run rebuilds it exactly."""
        from tokenizers import Tokenizer as Backend
        from tokenizers import decoders, models, pre_tokenizers, trainers

        if not isinstance(vocab_size, int) or vocab_size < 257:
            raise ValueError(f"vocab_size must be an integer >= 257 (256 bytes + {eos_token}), got {vocab_size!r}")
        backend = Backend(models.BPE())
        backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        backend.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[eos_token], show_progress=False,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
        backend.train_from_iterator(list(texts), trainer)
        return cls(backend, {"eos_token": eos_token})

    # ------------------------------------------------------------------ text <-> ids
    def token_to_id(self, token: str | None) -> int | None:
        """The id of a token's text (None for None or an unknown token)."""
        return None if token is None else self._tok.token_to_id(token)

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        """The ids of ``text`` (no BOS/EOS unless ``add_special_tokens``)."""
        return self._tok.encode(text, add_special_tokens=add_special_tokens).ids

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = False) -> str:
        """The text of ``ids`` (special tokens spelled out unless ``skip_special_tokens``)."""
        return self._tok.decode([int(i) for i in ids], skip_special_tokens=skip_special_tokens)

    # ------------------------------------------------------------------ chat
    def apply_chat_template(self, messages: list[dict], add_generation_prompt: bool = True) -> str:
        """The chat template rendered over ``messages`` (``[{"role", "content"}]``), as
        the reference tokenizer renders it (trimmed blocks, a sandboxed environment)."""
        if not self.chat_template:
            raise ValueError("this tokenizer has no chat template (tokenizer_config.json: chat_template)")
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        def raise_exception(message):
            raise ValueError(f"chat template: {message}")

        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
        env.globals["raise_exception"] = raise_exception
        template = env.from_string(self.chat_template)
        specials = {k: v for k, v in self.special.items() if v is not None}
        return template.render(messages=messages, add_generation_prompt=add_generation_prompt, **specials)

    # ------------------------------------------------------------------ bytes
    def token_bytes(self) -> tuple[np.ndarray, np.ndarray]:
        """``(u8[V, W], i32[V])``: every token's bytes, zero-padded to the longest, and
        their counts (see the module docstring). Special tokens spell their text."""
        vocab = self._tok.get_vocab(with_added_tokens=True)
        added = {t.content for t in self._tok.get_added_tokens_decoder().values()}
        model = json.loads(self._tok.to_str()).get("model", {})
        byte_level = self._is_byte_level()
        table = {c: b for b, c in _byte_to_unicode().items()}
        spelled: list[bytes] = [b""] * self.vocab_size
        for token, idx in vocab.items():
            if idx >= self.vocab_size:
                continue
            if token in added:
                spelled[idx] = token.encode("utf-8")
            elif byte_level and all(c in table for c in token):
                spelled[idx] = bytes(table[c] for c in token)
            elif model.get("byte_fallback") and len(token) == 6 and token.startswith("<0x") and token.endswith(">"):
                spelled[idx] = bytes([int(token[3:5], 16)])
            else:
                spelled[idx] = token.replace("\u2581", " ").encode("utf-8")
        width = max(1, max(len(s) for s in spelled))
        out = np.zeros((self.vocab_size, width), np.uint8)
        for i, s in enumerate(spelled):
            out[i, : len(s)] = np.frombuffer(s, np.uint8)
        return out, np.array([len(s) for s in spelled], np.int32)

    def byte_token_ids(self) -> np.ndarray:
        """``i32[256]``: the single-byte token of every byte (lowest id first). A byte-level
        BPE has all 256, so any bytes can be written as tokens, one per byte
        (``jaxagents.lm.text.byte_tokens``): the exact text, not the tokenizer's split."""
        table, length = self.token_bytes()
        out = np.full(256, -1, np.int32)
        for i in np.flatnonzero(length == 1)[::-1]:
            out[table[i, 0]] = i
        if (out < 0).any():
            raise ValueError(f"the vocabulary has no single-byte token for bytes {np.flatnonzero(out < 0)[:8].tolist()}: "
                             "not a byte-level BPE")
        return out

    def _is_byte_level(self) -> bool:
        spec = json.loads(self._tok.to_str())
        decoder = spec.get("decoder") or {}
        kinds = [decoder.get("type")] + [d.get("type") for d in decoder.get("decoders", []) or []]
        return "ByteLevel" in kinds

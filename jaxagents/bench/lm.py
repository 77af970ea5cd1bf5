"""Throughput of language-model policies: generated tokens per second, and game steps per
second of self-play on a text game with generation inside the compiled program.

The protocol is the environments' one (``jaxagents.bench.protocol``): the program is
compiled ahead of time (``compile_s``), run once to warm up, then timed ``repeats``
times, each run ended by ``block_until_ready``; best and median are reported. Every
output is consumed (token ids, log-probabilities and masks are reduced into the
returned sums), so the compiler cannot drop any of the work.

Models are named by shape (``MODEL_SHAPES``: random weights of that shape, what a
throughput figure needs) or by a checkpoint folder.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import jax
import jax.numpy as jnp

from jaxagents.bench.protocol import time_program
from jaxagents.lm.config import ModelConfig
from jaxagents.lm.generate import Sampling, generate
from jaxagents.lm.model import init_params

MODEL_SHAPES = {
    # 2 layers of width 128: the size trained from scratch on 2 CPU cores
    "tiny": dict(family="llama", vocab_size=512, hidden_size=128, num_layers=2, num_heads=4, num_kv_heads=2,
                 head_dim=32, intermediate_size=512, max_position=4096, tie_embeddings=True, rope_theta=10000.0),
    # Qwen2.5-0.5B's shapes (494M parameters)
    "qwen2.5-0.5b": dict(family="qwen2", vocab_size=151936, hidden_size=896, num_layers=24, num_heads=14,
                         num_kv_heads=2, head_dim=64, intermediate_size=4864, max_position=32768, tie_embeddings=True,
                         qkv_bias=True, rope_theta=1000000.0, norm_eps=1e-6),
}


def model_of(name: str, dtype: str = "float32", seed: int = 0) -> tuple[ModelConfig, dict]:
    """``(cfg, params)``: a named shape with random weights, or a checkpoint folder."""
    if name in MODEL_SHAPES:
        cfg = ModelConfig(**MODEL_SHAPES[name])
        return cfg, init_params(cfg, jax.random.PRNGKey(seed), dtype=jnp.dtype(dtype))
    import os

    if not os.path.isdir(name):
        raise ValueError(f"model must be one of {', '.join(MODEL_SHAPES)} or a checkpoint folder, got {name!r}")
    from jaxagents.lm.load import load_params

    return load_params(name, dtype=dtype)


@dataclasses.dataclass
class LMBenchRow:
    """One measured size: ``batch`` sequences (or games), the work of one run (``tokens``,
    ``game_steps``), compile time and the timed runs."""

    what: str
    model: str
    batch: int
    tokens: int
    game_steps: int
    compile_s: float
    times_s: list

    @property
    def best_s(self) -> float:
        """The fastest timed run, seconds."""
        return min(self.times_s)

    @property
    def median_s(self) -> float:
        """The median timed run, seconds."""
        return sorted(self.times_s)[len(self.times_s) // 2]

    def as_dict(self) -> dict:
        """The row with its rates (best and median) for JSON."""
        out = dataclasses.asdict(self)
        out.update(tokens_per_s=self.tokens / self.best_s, tokens_per_s_median=self.tokens / self.median_s,
                   game_steps_per_s=self.game_steps / self.best_s,
                   game_steps_per_s_median=self.game_steps / self.median_s)
        return out


def benchmark_generation(model: str = "tiny", batch_sizes=(1, 64, 1024), prompt_len: int = 64, new_tokens: int = 32,
                         repeats: int = 3, dtype: str = "float32",
                         progress: Callable[[LMBenchRow], None] | None = None) -> list[LMBenchRow]:
    """Tokens per second of ``generate``: ``batch`` random prompts of ``prompt_len``
    tokens, ``new_tokens`` sampled (temperature 1, no stop token, so every sequence
    generates exactly ``new_tokens``)."""
    cfg, params = model_of(model, dtype)
    sampling = Sampling(max_new_tokens=new_tokens, temperature=1.0)

    def run(params, prompt, key):
        out = generate(params, cfg, prompt, jnp.full(prompt.shape[0], prompt.shape[1]), key, sampling)
        return out.tokens.sum(), out.logprobs.sum(), out.mask.sum()

    rows = []
    for b in batch_sizes:
        prompt = jax.random.randint(jax.random.PRNGKey(b), (b, prompt_len), 0, cfg.vocab_size)
        compile_s, times, out = time_program(run, (params, prompt, jax.random.PRNGKey(0)), repeats)
        assert int(out[2]) == b * new_tokens
        rows.append(LMBenchRow("generate", model, b, b * new_tokens, 0, compile_s, times))
        if progress:
            progress(rows[-1])
    return rows


def benchmark_selfplay(env_id: str = "text_kuhn_poker", model: str = "tiny", num_games=(1, 64, 1024),
                       max_turns: int = 8, new_tokens: int = 16, prompt_len: int = 1024, tokenizer: str | None = None,
                       constrained: bool = False, repeats: int = 3, dtype: str = "float32",
                       progress: Callable[[LMBenchRow], None] | None = None) -> list[LMBenchRow]:
    """Game steps per second of self-play on a registered text game: ``num_games`` games,
    ``max_turns`` turns each (``jaxagents.lm.episode.play``: prompt, generation of
    ``new_tokens`` tokens, parsing and the game's step, in one program), a finished game
    dealt again at once (``auto_reset``), so every game steps every turn. The tokenizer is ``tokenizer`` (a checkpoint folder) or
    the model folder's."""
    import os

    from jaxagents.core.registry import make
    from jaxagents.lm.episode import TextTables, play
    from jaxagents.lm.tokenizer import Tokenizer

    cfg, params = model_of(model, dtype)
    folder = tokenizer or (model if os.path.isdir(model) else None)
    if folder is None:
        raise ValueError("a model named by shape needs a tokenizer: --tokenizer FOLDER (a folder with tokenizer.json)")
    tok = Tokenizer.from_folder(folder)
    if tok.vocab_size > cfg.vocab_size:
        raise ValueError(f"the tokenizer has {tok.vocab_size} ids, more than the model's vocab_size {cfg.vocab_size}")
    env = make(env_id)
    tables = TextTables.build(env, tok)
    # no stop token: every reply is new_tokens long on both sides of a comparison
    sampling = Sampling(max_new_tokens=new_tokens, temperature=1.0)
    rows = []
    for b in num_games:
        def run(params, key, b=b):
            turns, _ = play(params, cfg, env, tables, key, b, sampling=sampling, max_turns=max_turns,
                            prompt_len=prompt_len, constrained=constrained, auto_reset=True)
            return (turns.active.sum(), turns.tokens.sum(), turns.logprobs.sum(), turns.reward.sum(),
                    turns.prompt.sum(), turns.invalid.sum())

        compile_s, times, out = time_program(run, (params, jax.random.PRNGKey(0)), repeats)
        steps = int(out[0])
        rows.append(LMBenchRow(f"selfplay {env_id}", model, b, steps * new_tokens, steps, compile_s, times))
        if progress:
            progress(rows[-1])
    return rows


def benchmark_learner(env_id: str = "text_kuhn_poker", model: str = "tiny", num_games=(16, 64), max_turns: int = 3,
                      new_tokens: int = 4, prompt_len: int = 320, constrained: bool = True, repeats: int = 3,
                      dtype: str = "float32", env_kwargs: dict | None = None, learner_kwargs: dict | None = None,
                      progress: Callable[[LMBenchRow], None] | None = None) -> list[LMBenchRow]:
    """One update of the language self-play learner (``lm_selfplay``), rollout included,
    as the one compiled call it is: ``num_games`` games of ``env_id`` played to the end
    (at most ``max_turns`` turns), the advantages, the gradient step. ``model``: ``tiny``
    (the learner's default from-scratch decoder, with its games' tokenizer) or a
    checkpoint folder. Rows count the reply tokens generated (``tokens``) and the turns
    played (``game_steps``) per update; the in-training evaluation is not run.
    ``learner_kwargs``: further ``LanguageSelfPlayConfig`` fields (a KL magnet,
    ``grad_chunks``, ...); an unknown or invalid one is a one-line ``ValueError`` before
    anything compiles."""
    from jaxagents.core.registry import make
    from jaxagents.learners.language.config import LanguageSelfPlayConfig, ModelSpec
    from jaxagents.learners.language.selfplay import make_train

    env = make(env_id, **dict(env_kwargs or {}))
    spec = ModelSpec(dtype=dtype) if model == "tiny" else ModelSpec(path=model, dtype=dtype)
    rows = []
    fields = {f.name for f in dataclasses.fields(LanguageSelfPlayConfig)}
    unknown = sorted(set(learner_kwargs or {}) - fields)
    if unknown:
        raise ValueError(f"learner_kwargs: {unknown} are not fields of LanguageSelfPlayConfig")
    configs = [LanguageSelfPlayConfig(**{**dict(num_envs=b, num_steps=max_turns, total_timesteps=b * max_turns * 10**6,
                                                prompt_len=prompt_len, max_new_tokens=new_tokens,
                                                constrained=constrained, model=spec, eval_every=10**6),
                                         **dict(learner_kwargs or {})})
               for b in num_games]  # every size checked before the first compiles
    for b, cfg in zip(num_games, configs):
        learner = make_train(cfg, env, evaluations={})
        state = learner.init(jax.random.PRNGKey(0))

        def run(state, learner=learner):
            new, m = learner.update(state)  # every output consumed: the new weights' sum, the batch's counts
            return (m["selfplay/tokens"], m["env_steps"], m["loss"],
                    sum(jnp.sum(x.astype(jnp.float32)) for x in jax.tree.leaves(new.params)))

        compile_s, times, out = time_program(run, (state,), repeats)
        rows.append(LMBenchRow(f"learner {env_id}", model, b, int(out[0]), int(out[1]), compile_s, times))
        if progress:
            progress(rows[-1])
    return rows

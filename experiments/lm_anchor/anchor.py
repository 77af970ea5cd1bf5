"""The anchors' path, measured: ``transformers``' ``generate`` in a Python loop, and
TextArena's Python games driven by it -- what SPIRAL, MARS and their kin run (with a
separate inference server on a GPU; here the same model class on the same CPU).

Runs in its own virtual environment (torch, transformers and textarena 0.7.4; not the
project's), e.g.::

    python3 -m venv experiments_tmp/lmref
    experiments_tmp/lmref/bin/pip install torch transformers textarena==0.7.4
    experiments_tmp/lmref/bin/python experiments/lm_anchor/anchor.py generate --model tiny --batch 1 64 1024
    experiments_tmp/lmref/bin/python experiments/lm_anchor/anchor.py selfplay --game KuhnPoker-v0 --games 1 64 1024

Both modes print one JSON line per size. The model is the same shape as
``jaxagents.bench.lm.MODEL_SHAPES[...]`` with random weights; sampling is temperature
1 with no top-k/top-p and no early stop (``min_new_tokens = max_new_tokens``), so
both sides generate exactly the same number of tokens. In self-play every game's
prompt is its TextArena observation string (the default wrappers), encoded with the
tokenizer of ``tests/data/lm/qwen2`` and left-padded into one batch per turn; a reply
whose move does not parse is handled by TextArena itself (error allowance, then a
loss); a finished game is reset at once so that the batch stays full. Every generated
token is decoded and every reply is stepped: nothing is left unconsumed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

SHAPES = {
    "tiny": dict(model_type="llama", vocab_size=512, hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, head_dim=32, intermediate_size=512, max_position_embeddings=4096,
                 tie_word_embeddings=True, rope_theta=10000.0),
    "qwen2.5-0.5b": dict(model_type="qwen2", vocab_size=151936, hidden_size=896, num_hidden_layers=24,
                         num_attention_heads=14, num_key_value_heads=2, intermediate_size=4864,
                         max_position_embeddings=32768, tie_word_embeddings=True, rope_theta=1000000.0),
}
TOKENIZER = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data", "lm", "qwen2")


def build_model(shape: str, threads: int):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    spec = dict(SHAPES[shape])
    config = AutoConfig.for_model(spec.pop("model_type"), **spec)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    return model.eval()


def sample_kwargs(new_tokens: int) -> dict:
    return dict(do_sample=True, temperature=1.0, top_k=0, top_p=1.0, max_new_tokens=new_tokens,
                min_new_tokens=new_tokens, eos_token_id=None, pad_token_id=0)


def versions() -> dict:
    import importlib.metadata as md

    out = {"python": platform.python_version()}
    for dist in ("torch", "transformers", "textarena", "tokenizers"):
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            pass
    return out


def bench_generate(args) -> None:
    import torch

    model = build_model(args.model, args.threads)
    for batch in args.batch:
        prompt = torch.randint(0, SHAPES[args.model]["vocab_size"], (batch, args.prompt_len))
        with torch.no_grad():
            model.generate(prompt, attention_mask=torch.ones_like(prompt), **sample_kwargs(args.new_tokens))  # warm-up
            times = []
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                out = model.generate(prompt, attention_mask=torch.ones_like(prompt), **sample_kwargs(args.new_tokens))
                int(out[:, args.prompt_len:].sum())  # consumed
                times.append(time.perf_counter() - t0)
        tokens = batch * args.new_tokens
        print(json.dumps({"what": "generate", "library": "transformers", "model": args.model, "batch": batch,
                          "tokens": tokens, "times_s": times, "tokens_per_s": tokens / min(times),
                          "versions": versions(), "threads": args.threads}), flush=True)


def bench_selfplay(args) -> None:
    import random

    import textarena as ta
    import torch
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(os.path.join(TOKENIZER, "tokenizer.json"))
    model = build_model(args.model, args.threads)
    random.seed(0)

    def play(num_games: int, turns: int) -> tuple[int, int, float]:
        envs = [ta.make(args.game) for _ in range(num_games)]
        for env in envs:
            env.reset(num_players=2)
        steps = tokens = 0
        t0 = time.perf_counter()
        for _ in range(turns):
            prompts = [tok.encode(env.get_observation()[1]).ids[-args.max_prompt:] for env in envs]
            width = max(len(p) for p in prompts)
            ids = torch.zeros((num_games, width), dtype=torch.long)
            mask = torch.zeros_like(ids)
            for i, p in enumerate(prompts):  # left padding
                ids[i, width - len(p):] = torch.tensor(p)
                mask[i, width - len(p):] = 1
            with torch.no_grad():
                out = model.generate(ids, attention_mask=mask, **sample_kwargs(args.new_tokens))
            replies = tok.decode_batch(out[:, width:].tolist())
            tokens += num_games * args.new_tokens
            for env, reply in zip(envs, replies):
                done, _ = env.step(reply)
                steps += 1
                if done:
                    env.close()
                    env.reset(num_players=2)
        return steps, tokens, time.perf_counter() - t0

    for games in args.games:
        play(games, 1)  # warm-up
        runs = [play(games, args.turns) for _ in range(args.repeats)]
        steps, tokens = runs[0][0], runs[0][1]
        times = [r[2] for r in runs]
        print(json.dumps({"what": "selfplay", "library": "textarena+transformers", "game": args.game,
                          "model": args.model, "games": games, "turns": args.turns, "game_steps": steps,
                          "tokens": tokens, "times_s": times, "game_steps_per_s": steps / min(times),
                          "tokens_per_s": tokens / min(times), "versions": versions(), "threads": args.threads}),
              flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    g = sub.add_parser("generate", help="tokens/s of generate on random prompts")
    g.add_argument("--batch", type=int, nargs="+", default=[1, 64, 1024])
    g.add_argument("--prompt-len", type=int, default=64)
    s = sub.add_parser("selfplay", help="game-steps/s of TextArena games played by generate")
    s.add_argument("--game", default="KuhnPoker-v0")
    s.add_argument("--games", type=int, nargs="+", default=[1, 64, 1024])
    s.add_argument("--turns", type=int, default=8, help="turns of every game in the batch per timed run")
    s.add_argument("--max-prompt", type=int, default=1024, help="prompt tokens kept (the last ones)")
    for p in (g, s):
        p.add_argument("--model", default="tiny", choices=sorted(SHAPES))
        p.add_argument("--new-tokens", type=int, default=16)
        p.add_argument("--repeats", type=int, default=3)
        p.add_argument("--threads", type=int, default=2, help="torch threads (the machine's cores)")
    args = parser.parse_args()
    (bench_generate if args.mode == "generate" else bench_selfplay)(args)


if __name__ == "__main__":
    main()

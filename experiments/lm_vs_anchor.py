"""Language-model self-play and generation, ours against the anchors' path, in one run.

For each size, ours (``jaxagents.bench.lm``: one compiled program) then the anchors'
(``experiments/lm_anchor/anchor.py`` in its own virtual environment: TextArena's Python
games and ``transformers``' ``generate`` in a loop), alternating, the same model shape,
the same tokenizer, the same reply length (no stop token, so every reply is exactly
``--new-tokens`` long on both sides) and the same number of turns per game::

    python experiments/lm_vs_anchor.py --anchor-python experiments_tmp/lmref/bin/python \\
        --out docs/figures/lm_vs_anchor.json selfplay --game text_kuhn_poker --games 1 64 1024

Every row of the JSON records both sides, their rates and the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

ANCHOR = os.path.join(os.path.dirname(__file__), "lm_anchor", "anchor.py")
TEXTARENA_IDS = {"text_kuhn_poker": "KuhnPoker-v0", "text_tic_tac_toe": "TicTacToe-v0"}


def anchor(python: str, args: list[str]) -> list[dict]:
    out = subprocess.run([python, ANCHOR, *args], capture_output=True, text=True, timeout=3600)
    if out.returncode:
        raise SystemExit(f"the anchor failed: {out.stderr[-2000:]}")
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--anchor-python", required=True, help="python of the venv with torch, transformers, textarena")
    parser.add_argument("--out", required=True, help="JSON file to write (must not exist)")
    parser.add_argument("--model", default="tiny")
    parser.add_argument("--tokenizer", default=os.path.join("tests", "data", "lm", "qwen2"))
    parser.add_argument("--new-tokens", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--anchor-repeats", type=int, default=1)
    sub = parser.add_subparsers(dest="mode", required=True)
    s = sub.add_parser("selfplay")
    s.add_argument("--game", default="text_kuhn_poker", choices=sorted(TEXTARENA_IDS))
    s.add_argument("--games", type=int, nargs="+", default=[1, 64, 1024])
    s.add_argument("--turns", type=int, default=4)
    g = sub.add_parser("generate")
    g.add_argument("--batch", type=int, nargs="+", default=[1, 64, 1024])
    g.add_argument("--prompt-len", type=int, default=64)
    from jaxagents.outputs import check_outputs

    args = check_outputs(parser.parse_args())

    from jaxagents.bench import lm
    from jaxagents.bench.protocol import machine_info
    from jaxagents.tracking import atomic_write

    if os.path.exists(args.out):
        raise SystemExit(f"--out {args.out} exists; choose a new file")
    rows = []
    sizes = args.games if args.mode == "selfplay" else args.batch
    for size in sizes:
        if args.mode == "selfplay":
            ours = lm.benchmark_selfplay(args.game, args.model, (size,), max_turns=args.turns, new_tokens=args.new_tokens,
                                         tokenizer=args.tokenizer, repeats=args.repeats)[0].as_dict()
            theirs = anchor(args.anchor_python, ["selfplay", "--game", TEXTARENA_IDS[args.game], "--games", str(size),
                                                 "--turns", str(args.turns), "--model", args.model,
                                                 "--new-tokens", str(args.new_tokens),
                                                 "--repeats", str(args.anchor_repeats)])[0]
            key = "game_steps_per_s"
        else:
            ours = lm.benchmark_generation(args.model, (size,), prompt_len=args.prompt_len, new_tokens=args.new_tokens,
                                           repeats=args.repeats)[0].as_dict()
            theirs = anchor(args.anchor_python, ["generate", "--batch", str(size), "--prompt-len", str(args.prompt_len),
                                                 "--model", args.model, "--new-tokens", str(args.new_tokens),
                                                 "--repeats", str(args.anchor_repeats)])[0]
            key = "tokens_per_s"
        row = {"size": size, "ours": ours, "theirs": theirs, "measure": key, "ratio": ours[key] / theirs[key]}
        rows.append(row)
        print(f"{args.mode} {size}: ours {ours[key]:,.1f} {key}, theirs {theirs[key]:,.1f}, ratio {row['ratio']:.1f}x",
              file=sys.stderr, flush=True)
    atomic_write(args.out, json.dumps({"command": " ".join(sys.argv), "machine": machine_info(), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()

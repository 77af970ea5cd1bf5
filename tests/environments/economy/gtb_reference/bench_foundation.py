"""Throughput of the AI Economist's Foundation (ai-economist 1.7.1) on the 4-agent
gather-trade-build scenario, as a baseline for ``gtb``.

What is timed: only ``env.step`` (one Python env, one core, no vectorisation). Choosing
the actions -- uniform over the legal flat actions in Foundation's own masks, drawn from
a separate numpy Generator -- and the resets at episode ends (1,000 steps) happen
outside the timed region. The planner acts only at period starts (random legal rates),
as in ``record_foundation.py``'s ``random4`` episode, whose scenario config this reuses.

Run (reference venv from setup_venv.sh; no jax, no jaxagents):

    /tmp/aie/bin/python tests/environments/economy/gtb_reference/bench_foundation.py \
        --steps 5000 --warmup 200

Prints one JSON line: {"env_steps_per_s": ..., "steps": ..., "agents": 4, ...}.
``--max-seconds`` stops the timed loop early (the reported steps are those completed).
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from record_foundation import env_config  # noqa: E402  (same scenario as the data)

from ai_economist import foundation  # noqa: E402

assert "jax" not in sys.modules and "jaxagents" not in sys.modules


def draw_actions(obs, n_agents, planner_idx, rng):
    acts = {}
    for i in range(n_agents):
        legal = np.flatnonzero(obs[str(i)]["action_mask"])
        acts[str(i)] = int(rng.choice(legal))
    pmask = np.asarray(obs[planner_idx]["action_mask"]).reshape(-1, 22)
    acts[planner_idx] = [int(rng.choice(np.flatnonzero(m))) for m in pmask]
    return acts


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=5000, help="timed steps")
    parser.add_argument("--warmup", type=int, default=200, help="untimed steps first")
    parser.add_argument("--max-seconds", type=float, default=None)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    n_agents = 4
    env = foundation.make_env_instance(**env_config(n_agents, 1000, False, True))
    planner = env.world.planner.idx
    rng = np.random.default_rng(args.seed)
    np.random.seed(args.seed)
    obs = env.reset()

    timed, done_steps, total = 0.0, 0, args.warmup + args.steps
    for k in range(total):
        acts = draw_actions(obs, n_agents, planner, rng)
        start = time.perf_counter()
        obs, _, done, _ = env.step(acts)
        elapsed = time.perf_counter() - start
        if k >= args.warmup:
            timed += elapsed
            done_steps += 1
            if args.max_seconds is not None and timed >= args.max_seconds:
                break
        if done["__all__"]:
            obs = env.reset()
    print(json.dumps({"env_steps_per_s": done_steps / timed, "steps": done_steps,
                      "agents": n_agents, "timed": "env.step only",
                      "warmup": args.warmup}))


if __name__ == "__main__":
    main()

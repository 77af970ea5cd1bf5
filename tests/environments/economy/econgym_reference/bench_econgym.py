"""Throughput of EconGym's own society (numpy, one process, one core) on two of its
tasks, as the baseline for ``jaxagents bench econgym``.

``optimal_tax`` (Ramsey households, fiscal authority, non-profit bank, perfect
competition) and ``delayed_retirement`` (overlapping generations, pension authority),
each with EconGym's task file merged onto its base config as ``record_econgym.py`` does,
``households_n`` overridden. Timed: ``env.step`` and the ``reset`` at an episode's end,
as a training loop runs them; the random actions (``record_econgym.ActionDrawer``) are
drawn outside the timed region.

Run in the reference venv (``setup_venv.sh``):

    /tmp/econgym_venv/bin/python tests/environments/economy/econgym_reference/bench_econgym.py \
        --econgym /tmp/econgym_venv/econgym --task optimal_tax --households 1000 10000 --seconds 20

Prints one JSON line per size: ``{"task", "households", "env_steps_per_s",
"household_steps_per_s", "steps", "resets"}``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--econgym", required=True, help="EconGym's source tree (setup_venv.sh puts it in VENV/econgym)")
    ap.add_argument("--task", default="optimal_tax", choices=["optimal_tax", "delayed_retirement"])
    ap.add_argument("--households", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--seconds", type=float, default=20.0, help="timed seconds per size (after 3 warm-up steps)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--bc", action="store_true",
                    help="households act by EconGym's behaviour-cloned network (needs torch), timed with the step")
    args = ap.parse_args()
    os.chdir(args.econgym)
    sys.path.insert(0, os.path.abspath("."))
    from record_econgym import ActionDrawer, _overlay, build_config  # noqa: E402
    from env.env_core import EconomicSociety  # noqa: E402

    for n in args.households:
        np.random.seed(args.seed)
        cfg = build_config(dict(task=args.task, overlay=_overlay(hh={"households_n": n}), name=args.task))
        cfg.Environment.env_core.episode_length = 300
        env = EconomicSociety(cfg.Environment)
        obs = env.reset()
        draw = ActionDrawer(args.seed)
        if args.bc:  # EconGym's bc_agent.get_action: its network on the private obs, N(mu, 0.01 sigma)
            import torch
            from agents.behavior_cloning.bc_agent import bc_agent
            from agents.rl.models import mlp_net
            kind = env.households.type
            d = 3 if "OLG" in kind else 2
            net = mlp_net(state_dim=d, num_actions=3 if "invest" in kind else 2)
            paths = {"ramsey": "ramsey_bc_net.pt", "OLG": "OLG_bc_net.pt"}
            net.load_state_dict(torch.load("agents/behavior_cloning/trained_models/" + paths[kind], weights_only=True))
            assert bc_agent is not None  # the class whose get_action this reproduces
        steps = resets = 0
        elapsed = 0.0
        t = 0
        while elapsed < args.seconds or steps < 3:
            acts = {"households": draw.households(env, t), "government": draw.government(env, t),
                    "bank": draw.bank(env, t)}
            acts["market"] = draw.market(env, t, acts["households"])
            start = time.perf_counter()
            if args.bc:
                with torch.no_grad():
                    _, (mu, sigma) = net(torch.tensor(obs["households"][:, -d:], dtype=torch.float32))
                    acts["households"] = torch.distributions.Normal(mu, 0.01 * sigma).sample().numpy()
            obs, _, done = env.step(acts, t)
            t += 1
            if done:
                obs = env.reset()
                resets += 1
                t = 0
            if steps >= 3:  # warm-up
                elapsed += time.perf_counter() - start
            steps += 1
        timed = steps - 3
        rate = timed / elapsed
        print(json.dumps({"task": args.task, "households": n, "bc": args.bc, "env_steps_per_s": rate,
                          "household_steps_per_s": rate * n, "steps": timed, "resets": resets}), flush=True)


if __name__ == "__main__":
    main()

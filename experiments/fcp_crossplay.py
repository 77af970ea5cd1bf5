"""FCP against self-play with held-out partners (docs/results_fcp_section.md).

Reads one experiment of ``python -m jaxagents_baselines.fcp ... --run-dir EXP``
(``EXP/partners``: the stage-1 population; ``EXP/fcp``: the FCP agent), plays the
cross-play of every final policy (``jaxagents.evaluation.crossplay``, team return,
every seat assignment, common random numbers) and reports:

* ``fcp`` with each held-out partner (the last ``train.holdout`` partners);
* each self-play agent (a pool partner's final parameters: a self-play run with the
  FCP agent's env steps) with each held-out partner;
* self-play with itself (the diagonal) and the FCP agent with its training partners.

Intervals: stratified bootstrap (``evaluation.intervals``) over the agents of an arm
(rows; the FCP arm has one per FCP run) with the held-out partners x evaluation
seeds as the tasks.

    python experiments/fcp_crossplay.py EXP [--episodes 16] [--seeds 2]
        [--steps 400] [--fcp fcp,fcp3] [--out docs/figures/fcp_coordination_ring.png] [--json OUT.json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os

import jax
import numpy as np

from jaxagents.outputs import check_outputs  # output paths checked before computing


def main(argv=None) -> int:
    from jaxagents import runner
    from jaxagents.evaluation import crossplay as cp
    from jaxagents.evaluation import intervals
    from jaxagents.runs import load_policies

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("exp", nargs=1, help="the experiment directory (EXP/partners, EXP/fcp)")
    p.add_argument("--fcp", default="fcp", help="the FCP run(s) inside EXP, comma-separated (e.g. fcp,fcp3: more FCP seeds)")
    p.add_argument("--episodes", type=int, default=16)
    p.add_argument("--seeds", type=int, default=2)
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--out", default=None, help="heatmap path (default EXP/crossplay.png)")
    p.add_argument("--json", default=None)
    args = check_outputs(p.parse_args(argv))

    dirs = []
    for e in args.exp:
        runs = args.fcp.split(",")
        holdouts = {runner.read_run_config(os.path.join(e, r))["train"]["holdout"] for r in runs}
        if len(holdouts) != 1:
            raise SystemExit(f"the FCP runs {runs} hold out different partners: {sorted(holdouts)}")
        (holdout,) = holdouts
        dirs += [os.path.join(e, "partners")] + [os.path.join(e, r) for r in runs]
    pol = load_policies(dirs)
    M = sum(1 for n in pol.names if n.startswith("partners"))
    kinds, short = [], []  # partners run: the last `holdout` members are held out
    sp_i = ho_i = f_i = 0
    for i, n in enumerate(pol.names):
        if n.startswith("partners"):
            held = i >= M - holdout
            kinds.append("heldout" if held else "selfplay")
            short.append(f"held-out {ho_i}" if held else f"self-play {sp_i}")
            ho_i, sp_i = ho_i + held, sp_i + (not held)
        else:
            kinds.append("fcp")
            short.append(f"FCP {f_i}")
            f_i += 1
    res = cp.crossplay(pol.agents, pol.env, pol.params, jax.random.key(0), env_params=pol.env_params,
                       episodes=args.episodes, num_steps=args.steps, seeds=args.seeds, team=True, names=short)
    kinds = np.array(kinds)
    S = res.per_seed()  # [seeds, K, K], mean over seats
    held = np.flatnonzero(kinds == "heldout")
    out = {"names": short, "matrix": res.matrix.tolist(), "finished_min": float(res.finished.min())}
    for arm in ("fcp", "selfplay"):
        rows = np.flatnonzero(kinds == arm)
        table = S[:, rows][:, :, held].transpose(1, 0, 2).reshape(len(rows), -1)  # [agents, seeds x held-out]
        summ = intervals.summary(table)
        out[arm] = {"with_heldout": {k: dataclasses.asdict(v) for k, v in summ.items()},
                    "per_agent": table.mean(1).tolist()}
    sp = np.flatnonzero(kinds == "selfplay")
    out["selfplay"]["with_itself"] = float(np.mean([S[:, i, i].mean() for i in sp]))
    off = [S[:, i, j].mean() for i in sp for j in sp if i != j]
    out["selfplay"]["with_other_selfplay"] = float(np.mean(off)) if off else None
    out["fcp"]["with_training_partners"] = float(S[:, kinds == "fcp"][:, :, sp].mean())
    path = args.out or os.path.join(args.exp[0], "crossplay.png")
    env_cfg = runner.read_run_config(os.path.join(args.exp[0], "partners"))["env"]
    where = env_cfg.get("kwargs", {}).get("layout", env_cfg["id"])
    cp.heatmap(res, path, title=f"{where} cross-play: team return")
    out["heatmap"] = path
    text = json.dumps(out, indent=2)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

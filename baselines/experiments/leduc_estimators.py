"""Exact exploitability curves of Leduc self-play runs: one panel, one line per run
(mean over its seeds, with each seed faint), and a table of the final values.

    python baselines/experiments/leduc_estimators.py RUN_DIR [RUN_DIR ...] --labels a,b,... --out FIG.png

Each RUN_DIR is a `jaxagents train` run of a self-play config with exact evaluation
(`eval/exploitability` in metrics.jsonl, `@seeds` holding each seed's value). Prints,
per run, each seed's exploitability at the last evaluation, the mean of the last
`--last` evaluations, and the mean with a 95% bootstrap interval over seeds
(jaxagents.evaluation.intervals).
"""

from __future__ import annotations

import argparse
import json
import os

import numpy as np

from jaxagents.evaluation.intervals import stratified_bootstrap_ci


def curves(run_dir: str):
    """(env_steps [K], exploitability [K, seeds]) at the run's evaluations."""
    steps, values = [], []
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        for line in f:
            row = json.loads(line)
            v = row.get("eval/exploitability@seeds")
            if v is not None and all(x is not None for x in v):
                steps.append(row["env_steps"])
                values.append(v)
    return np.asarray(steps), np.asarray(values, float)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("runs", nargs="+")
    p.add_argument("--labels", default=None)
    p.add_argument("--last", type=int, default=4, help="evaluations averaged for the 'late' figure")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    labels = args.labels.split(",") if args.labels else [os.path.basename(r.rstrip("/")) for r in args.runs]
    if len(labels) != len(args.runs):
        raise SystemExit(f"--labels: {len(labels)} labels for {len(args.runs)} runs")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4))
    print(f"{'run':<28} {'final per seed':<28} {'late mean':>10} {'final mean [95% CI]':>26}")
    for label, run in zip(labels, args.runs):
        steps, v = curves(run)
        line, = ax.plot(steps / 1e6, v.mean(1), label=label)
        for s in range(v.shape[1]):
            ax.plot(steps / 1e6, v[:, s], color=line.get_color(), alpha=0.25, lw=0.8)
        ci = stratified_bootstrap_ci(v[-1][:, None], np.mean)
        per_seed = ", ".join(f"{x:.3f}" for x in v[-1])
        print(f"{label:<28} {per_seed:<28} {v[-args.last:].mean():>10.3f} {ci.point:>10.3f} [{ci.low:.3f}, {ci.high:.3f}]")
    ax.set_xlabel("env steps (millions)")
    ax.set_ylabel("exact exploitability (eval/exploitability)")
    ax.set_yscale("log")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    if args.out:
        fig.savefig(args.out, dpi=120)
        print("figure:", args.out)


if __name__ == "__main__":
    main()

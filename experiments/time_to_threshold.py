"""Env steps and wall-clock time for learners to reach a return threshold (issue 18's
"time to a return threshold on cramped_room for PQN-VDN, our IPPO and JaxMARL's IPPO").

Each curve is a sequence of per-update (env steps, mean return) points. The *window
mean* at env step ``s`` is the mean return over the updates in ``(s - window, s]``,
weighted by the episodes each update finished when the source records them (updates
in which no episode finished are skipped); a curve reaches the threshold at the first
``s`` whose window mean is >= the threshold. Time to threshold is that many env steps
divided by the learner's training throughput (env-steps/s), given per curve with
``--rate`` (compile excluded: measure it with ``train_throughput.py`` or
``ippo_throughput.py`` back to back on an idle machine; the wall clock of long
training runs on a shared machine is mostly waiting for a core).

Sources:

* ``--run LABEL=RUN_DIR[:METRIC]``: a ``jaxagents train`` run directory; ``METRIC``
  defaults to the first ``episode_return/...`` of ``metrics.jsonl`` (seed mean),
  weighted by ``episodes``.
* ``--curve LABEL=JSON``: ``{"env_step": [...], "return": [...]}`` (optionally
  ``"episodes": [...]``), e.g. JaxMARL's ``returned_episode_returns`` per update.

    python experiments/time_to_threshold.py --threshold 200 --window 100000 \\
        --run "IPPO (ours)=runs/ippo_cramped" --curve "IPPO (JaxMARL)=jaxmarl_ippo.json" \\
        --rate "IPPO (ours)=20345" --rate "IPPO (JaxMARL)=20652" --out ttt.png --json ttt.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

from jaxagents.outputs import check_outputs  # output paths checked before computing
from jaxagents.evaluation.curves import first_reach, window_mean


def _split(spec: str, what: str) -> tuple[str, str]:
    if "=" not in spec:
        raise SystemExit(f"{what} must be LABEL=VALUE, got {spec!r}")
    label, value = spec.split("=", 1)
    if not label or not value:
        raise SystemExit(f"{what} must be LABEL=VALUE, got {spec!r}")
    return label, value


def read_run(path: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
    """``(env_steps, return, episodes, metric)`` of a run directory's ``metrics.jsonl``."""
    from jaxagents.tracking import read_rows

    metric = None
    if ":" in os.path.basename(path):
        path, metric = path.rsplit(":", 1)
    file = os.path.join(path, "metrics.jsonl")
    if not os.path.isfile(file):
        raise SystemExit(f"--run: no metrics.jsonl in {path!r}")
    rows = read_rows(file)
    if metric is None:
        names = sorted({k for r in rows for k in r if k.startswith("episode_return/") and "@" not in k})
        if not names:
            raise SystemExit(f"--run: {file} has no episode_return/... metric")
        metric = names[0]
    steps = np.array([r["env_steps"] for r in rows], float)
    ret = np.array([r.get(metric, np.nan) for r in rows], float)
    eps = np.array([r.get("episodes", 1.0) for r in rows], float)
    return steps, ret, eps, metric


def read_curve(path: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    with open(path) as f:
        d = json.load(f)
    steps, ret = np.asarray(d["env_step"], float), np.asarray(d["return"], float)
    eps = np.asarray(d.get("episodes", np.ones_like(ret)), float)
    if steps.shape != ret.shape or eps.shape != ret.shape:
        raise SystemExit(f"--curve {path}: env_step, return (and episodes) must have one entry per update")
    return steps, ret, eps


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--run", action="append", default=[], help="LABEL=RUN_DIR[:METRIC]")
    p.add_argument("--curve", action="append", default=[], help="LABEL=JSON")
    p.add_argument("--rate", action="append", default=[], help="LABEL=ENV_STEPS_PER_S (training, compile excluded)")
    p.add_argument("--threshold", type=float, required=True)
    p.add_argument("--window", type=float, default=100_000, help="env steps (default 100,000)")
    p.add_argument("--out", help="figure path (.png)")
    p.add_argument("--json", help="write the table as JSON here")
    args = check_outputs(p.parse_args(argv))
    if args.window <= 0:
        p.error("--window must be > 0 env steps")
    curves = {}
    for spec in args.run:
        label, path = _split(spec, "--run")
        s, r, e, _ = read_run(path)
        curves[label] = (s, r, e)
    for spec in args.curve:
        label, path = _split(spec, "--curve")
        curves[label] = read_curve(path)
    if not curves:
        p.error("give at least one --run or --curve")
    rates = {}
    for spec in args.rate:
        label, value = _split(spec, "--rate")
        if label not in curves:
            p.error(f"--rate {label!r}: no curve with that label (labels: {sorted(curves)})")
        rates[label] = float(value)
        if not rates[label] > 0:
            p.error(f"--rate {label!r} must be > 0 env-steps/s, got {value}")

    table = {}
    for label, (s, r, e) in curves.items():
        wm = window_mean(s, r, e, args.window)
        reach = first_reach(s, wm, args.threshold, args.window)
        rate = rates.get(label)
        table[label] = {
            "env_steps_to_threshold": reach,
            "env_steps_per_s": rate,
            "seconds_to_threshold": reach / rate if rate and np.isfinite(reach) else None,
            "final_window_mean": float(wm[np.isfinite(wm)][-1]) if np.isfinite(wm).any() else None,
            "env_steps_total": float(s[-1]),
        }
    print(f"threshold {args.threshold:g}, window {args.window:,.0f} env steps")
    print(f"{'learner':<28} {'env steps':>12} {'env-steps/s':>12} {'time (s)':>9} {'final':>8}")
    for label, t in table.items():
        steps = "never" if not np.isfinite(t["env_steps_to_threshold"]) else f"{t['env_steps_to_threshold']:,.0f}"
        rate = "-" if t["env_steps_per_s"] is None else f"{t['env_steps_per_s']:,.0f}"
        sec = "-" if t["seconds_to_threshold"] is None else f"{t['seconds_to_threshold']:.0f}"
        fin = "-" if t["final_window_mean"] is None else f"{t['final_window_mean']:.1f}"
        print(f"{label:<28} {steps:>12} {rate:>12} {sec:>9} {fin:>8}")
    if args.json:
        from jaxagents.tracking import atomic_write

        atomic_write(args.json, json.dumps({"threshold": args.threshold, "window": args.window, "table": table}, indent=1))
    if args.out:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6.4, 4))
        for label, (s, r, e) in curves.items():
            ax.plot(s / 1e6, window_mean(s, r, e, args.window), label=label)
        ax.axhline(args.threshold, color="grey", ls="--", lw=0.8)
        ax.set_xlabel("env steps (M)")
        ax.set_ylabel(f"return, mean over {args.window / 1e3:g}k env steps")
        ax.legend()
        fig.tight_layout()
        tmp = args.out + ".tmp.png"
        fig.savefig(tmp, dpi=110)
        os.replace(tmp, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""PBT against the same population without PBT: runs both arms through the runner
and draws the comparison (docs/results_population.md).

The two arms of one experiment are the same config with ``population.pbt`` as
written (PBT) or ``population.pbt=null`` (no PBT): the same members drawn from the same
``population.ranges`` with the same seeds, the same env steps per member. Seeds are
vmapped in one run (``num_seeds=S``); every curve is the mean over seeds with the
min-max range over seeds shaded.

    # run both arms (extra overrides after --: the reduced budget, see the doc)
    python experiments/pbt_compare.py run CONFIG RUN_PREFIX [--seeds 3] [--parallel] [-- key=value ...]
    # draw docs/figures/pbt_<name>.png and print the table (JSON)
    python experiments/pbt_compare.py plot NAME RUN_PREFIX [--metric leduc|overcooked]
        [--threshold T ...] [--window W] [--out docs/figures/pbt_NAME.png]

``run`` writes ``RUN_PREFIX_pbt`` and ``RUN_PREFIX_nopbt`` (``jaxagents train ...
--run-dir``). ``plot`` reads them (also while they are still running: the rows
written so far, both arms cut to the env steps both have reached):

* ``leduc``: the best member's exact exploitability (``-fitness`` of the best member,
  measured every ``eval_every`` updates) vs env steps per member;
* ``overcooked``: the best member's mean sparse episode return (its fitness: the
  members' ``episode_return``) over a trailing window of ``W`` updates, vs env steps per
  member; and the env steps at which that curve first reaches each ``T``, per seed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import warnings

import numpy as np

from jaxagents.outputs import check_outputs  # output paths checked before computing

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, ".."))


def run(args, extra):
    exe = os.path.join(os.path.dirname(sys.executable), "jaxagents")
    procs = []
    for arm, over in (("pbt", []), ("nopbt", ["population.pbt=null"])):
        cmd = [exe, "train", args.config, f"num_seeds={args.seeds}", *extra, *over,
               "--run-dir", f"{args.prefix}_{arm}", "--quiet"]
        print(" ".join(cmd), flush=True)
        if args.dry_run:
            continue
        if args.parallel:  # both arms at once (they share the machine alike)
            procs.append(subprocess.Popen(cmd))
        else:
            subprocess.run(cmd, check=True)
    if any(p.wait() for p in procs):
        sys.exit("an arm failed")


def read_members(run_dir):
    rows = []
    with open(os.path.join(run_dir, "population.jsonl")) as f:
        for line in f:
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:  # a half-written last line of a running run
                break
    steps = np.array([r["env_steps"] for r in rows], float)
    fit = np.array([[[np.nan if x is None else x for x in s] for s in r["fitness"]] for r in rows], float)  # [U, S, P]
    return steps, fit


def best_curve(fit, kind, window, reduce=np.nanmax):
    """[U, S] the best member's value (``reduce=np.nanmedian``: the median member's):
    exploitability (leduc) at measured updates, or the trailing-window mean return
    (overcooked)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if kind == "leduc":
            return -reduce(fit, axis=-1)  # fitness = -exploitability, NaN between evaluations
        U = fit.shape[0]
        out = np.full(fit.shape[:2], np.nan)
        for i in range(U):
            w = fit[max(0, i - window + 1): i + 1]
            out[i] = reduce(np.nanmean(w, axis=0), axis=-1)
        return out


def first_reach(steps, curve, threshold):
    """Env steps at which each seed's curve first reaches ``threshold`` (None: never)."""
    out = []
    for s in range(curve.shape[1]):
        hit = np.nonzero(curve[:, s] >= threshold)[0]
        out.append(float(steps[hit[0]]) if len(hit) else None)
    return out


def plot(args):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    arms = {}
    for arm in ("pbt", "nopbt"):
        steps, fit = read_members(f"{args.prefix}_{arm}")
        arms[arm] = (steps, best_curve(fit, args.metric, args.window), best_curve(fit, args.metric, args.window, np.nanmedian))
    last = min(arms[a][0][-1] for a in arms)  # both arms to the same env steps
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    table = {"env_steps_per_member": last}
    for arm, color, label in (("pbt", "C0", "PBT"), ("nopbt", "C1", "no PBT (same draws)")):
        steps, curve, median = arms[arm]
        keep = (steps <= last) & np.all(np.isfinite(curve), axis=1)
        x, y, m = steps[keep], curve[keep], median[keep]
        ax.plot(x, y.mean(1), color=color, label=f"{label}: best member")
        ax.fill_between(x, y.min(1), y.max(1), color=color, alpha=0.25)
        ax.plot(x, m.mean(1), color=color, ls="--", lw=1, label=f"{label}: median member")
        entry = {"final_per_seed": y[-1].tolist(), "final_mean": float(y[-1].mean()),
                 "final_min": float(y[-1].min()), "final_max": float(y[-1].max()),
                 "median_member_final_per_seed": m[-1].tolist(), "median_member_final_mean": float(m[-1].mean())}
        if args.metric == "leduc":
            entry["best_over_run_per_seed"] = y.min(0).tolist()
        for t in args.threshold or ():
            entry[f"steps_to_{t:g}_per_seed"] = first_reach(x, y, t)
        table[arm] = entry
    for t in (args.threshold or ()) if args.metric == "overcooked" else ():
        ax.axhline(t, color="grey", lw=0.8, ls="--")
    ax.set_xlabel("env steps per member")
    if args.metric == "leduc":
        ax.set_ylabel("best member's exploitability")
        ax.set_yscale("log")
    else:
        ax.set_ylabel(f"best member's sparse return ({args.window}-update mean)")
    ax.set_title(f"{args.name}: mean over seeds, best member's min-max over seeds shaded", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    out = args.out or os.path.join(ROOT, "docs", "figures", f"pbt_{args.name}.png")
    fig.savefig(out, dpi=110)
    table["figure"] = os.path.relpath(out, ROOT)
    print(json.dumps(table, indent=1))


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("config")
    r.add_argument("prefix")
    r.add_argument("--seeds", type=int, default=3)
    r.add_argument("--dry-run", action="store_true")
    r.add_argument("--parallel", action="store_true", help="run the two arms as two processes at once")
    q = sub.add_parser("plot")
    q.add_argument("name")
    q.add_argument("prefix")
    q.add_argument("--metric", choices=("leduc", "overcooked"), default="leduc")
    q.add_argument("--threshold", type=float, nargs="+", default=None, help="one or more return thresholds")
    q.add_argument("--window", type=int, default=10)
    q.add_argument("--out", default=None)
    args = check_outputs(p.parse_args(argv))
    run(args, extra) if args.cmd == "run" else plot(args)


if __name__ == "__main__":
    main()

"""What is a self-play run's *history* worth as one agent? Exact exploitability of its
checkpoints as mixed strategies.

For every checkpoint of each run (``checkpoint_every`` sets how many there are;
``keep_checkpoints`` must keep them all), this script evaluates, per seed, with the
game's exact evaluation (``env.exact_evaluation``: Kuhn poker, Leduc hold'em):

* the iterate (the trained parameters) and, where the run keeps one, the parameter
  average (``train.average_decay``);
* for each ``--last`` fraction ``f``: the mixed strategy that draws one of the last
  ``f`` of the checkpoints' iterates (and, separately, parameter averages) uniformly
  once per game and plays it throughout -- the time average of the policies that
  fictitious play and CFR keep, computed exactly (Kuhn's theorem:
  ``jaxagents.evaluation.exploitability.mixture_policy``), not a network fitted to it.

    jaxagents train baselines/configs/selfplay_leduc_sgd.yaml checkpoint_every=100 keep_checkpoints=100 \\
        --run-dir runs/leduc
    python experiments/checkpoint_mixture.py runs/leduc --last 0.5 0.25 --out mixture.json

Prints one table per run; ``--out`` writes every number as JSON.
"""

from __future__ import annotations

import argparse
import json
import sys

import jax
import jax.numpy as jnp
import numpy as np

from jaxagents import runs
from jaxagents.outputs import check_outputs  # output paths checked before computing
from jaxagents.learners.policy_gradient import selfplay
from jaxagents.tracking import atomic_write


def analyse(run_dir: str, fractions: list[float]) -> dict:
    """``{"updates", "iterate", "average" (or None), "mixtures": {f: {"iterate", "average"}}}``,
    exploitabilities per checkpoint ``[T, seeds]`` and per seed."""
    config, learner, states = runs.checkpoints(run_dir)
    if config.get("learner") != "selfplay":
        raise ValueError(f"{run_dir}: checkpoint_mixture reads self-play runs, this one is {config.get('learner')!r}")
    if config.get("population") is not None:
        raise ValueError(f"{run_dir}: checkpoint_mixture reads runs of one member (num_seeds), not populations")
    exact = learner.env.exact_evaluation(learner.env_params)  # self-play's merged view of the game
    if exact is None:
        raise ValueError(f"{run_dir}: the game ({config['env']}) has no exact evaluation")
    agents, role = learner.agents, selfplay.ROLE

    @jax.jit
    def single(params):  # [seeds] exploitability of one params tree per seed
        return jax.vmap(lambda p: exact({role: agents.logits_fn(p, role)})["exploitability"])(params)

    @jax.jit
    def mixture(stacked):  # stacked: [K, seeds, ...] -> [seeds]
        def one(members):
            fn = lambda obs: jax.vmap(lambda p: agents.logits_fn(p, role)(obs))(members)
            return exact({role: fn}, jnp.ones(jax.tree.leaves(members)[0].shape[0]))["exploitability"]
        return jax.vmap(one, in_axes=1)(stacked)

    updates, iterates, averages, expl_it, expl_av = [], [], [], [], []
    for update, state in states:
        updates.append(update)
        iterates.append(state.params[role])
        expl_it.append(np.asarray(single(state.params[role])))
        if state.extra.average is not None:
            averages.append(state.extra.average)
            expl_av.append(np.asarray(single(state.extra.average)))
    T = len(updates)
    out = {"run": run_dir, "updates": updates, "iterate": np.stack(expl_it).tolist(),
           "average": np.stack(expl_av).tolist() if averages else None, "mixtures": {}}
    for f in fractions:
        lo = T - max(1, int(round(f * T)))
        row = {"from_update": updates[lo], "members": T - lo}
        for name, trees in (("iterate", iterates), ("average", averages)):
            if trees:
                stacked = jax.tree.map(lambda *xs: jnp.stack(xs), *trees[lo:])
                row[name] = np.asarray(mixture(stacked)).tolist()
        out["mixtures"][str(f)] = row
    return out


def report(r: dict) -> str:
    lines = [f"run {r['run']}: {len(r['updates'])} checkpoints, updates {r['updates'][0]}..{r['updates'][-1]}"]
    fmt = lambda xs: f"{np.mean(xs):.4f}  (" + ", ".join(f"{x:.3f}" for x in xs) + ")"
    lines.append(f"  iterate at the end            {fmt(r['iterate'][-1])}")
    if r["average"] is not None:
        lines.append(f"  parameter average at the end  {fmt(r['average'][-1])}")
    for f, row in r["mixtures"].items():
        what = f"last {float(f):.0%} ({row['members']} checkpoints from update {row['from_update']})"
        lines.append(f"  mixture of the {what}: iterates {fmt(row['iterate'])}")
        if "average" in row:
            lines.append(f"  {'':<{len('mixture of the ' + what)}}  averages {fmt(row['average'])}")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", help="self-play run directories")
    p.add_argument("--last", type=float, nargs="+", default=[0.5, 0.25],
                   help="fractions of the checkpoints (the newest) to mix, each in (0, 1]")
    p.add_argument("--out", default=None, help="write the numbers as JSON here")
    args = check_outputs(p.parse_args(argv))
    bad = [f for f in args.last if not 0.0 < f <= 1.0]
    if bad:
        p.error(f"--last must be fractions in (0, 1], got {bad}")
    results = []
    for run in args.runs:
        try:
            results.append(analyse(run, args.last))
        except (ValueError, FileNotFoundError) as e:
            sys.exit(f"checkpoint_mixture: {e}")
        print(report(results[-1]), flush=True)
    if args.out:
        atomic_write(args.out, json.dumps(results, indent=1))


if __name__ == "__main__":
    main()

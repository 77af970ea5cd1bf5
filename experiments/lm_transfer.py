"""Held-out transfer of a language self-play run (MARS's comparison): the evaluations of
the games it trained on and of its ``held_out`` games, untrained (update 0, the same
weights before any step) against trained (the last evaluated update), per seed and as
the mean with a 95% bootstrap interval over seeds.

Usage (after ``jaxagents train lm_selfplay_transfer num_seeds=3 --run-dir RUN``)::

    python experiments/lm_transfer.py RUN [--json OUT.json]

Rows: Kuhn's and Leduc's exact exploitability (sampled and greedy policy; lower is
better), and the greedy policy's win, draw and loss rates in the matches (Tic-Tac-Toe
against minimax, Connect Four against its search and random players).
"""

from __future__ import annotations

import argparse
import json
import os

import numpy as np

from jaxagents.evaluation.intervals import stratified_bootstrap_ci
from jaxagents.outputs import check_outputs
from jaxagents.tracking import atomic_write, read_rows

SUFFIXES = ("/exploitability", "/greedy_exploitability", "/win", "/draw", "/loss", "/invalid_rate")


def evaluated(rows: list[dict]) -> list[dict]:
    """The rows that carry evaluations (every ``eval_every`` updates, and update 0)."""
    return [r for r in rows if any(k.startswith("eval/") and k.endswith("@seeds") and r[k] is not None
                                   and np.all(np.isfinite(np.asarray(r[k], float))) for k in r)]


def summary(rows: list[dict]) -> dict:
    """``{metric: {"untrained": cell, "trained": cell, "update": n}}`` with a cell
    ``{seeds, mean, low, high}`` for the first and last evaluated rows."""
    ev = evaluated(rows)
    if len(ev) < 2:
        raise ValueError(f"need the update-0 evaluation and a later one, found {len(ev)} evaluated row(s)")
    first, last = ev[0], ev[-1]
    out = {}
    for key in sorted(k for k in last if k.startswith("eval/") and k.endswith("@seeds")
                      and k[:-len("@seeds")].endswith(SUFFIXES)):
        cells = {}
        for name, row in (("untrained", first), ("trained", last)):
            seeds = np.asarray(row[key], np.float64)
            ci = stratified_bootstrap_ci(seeds, np.mean)
            cells[name] = {"seeds": seeds.tolist(), "mean": float(seeds.mean()), "low": ci.low, "high": ci.high}
        out[key[:-len("@seeds")]] = {**cells, "update": int(last["update"])}
    return out


def table(result: dict) -> str:
    cell = lambda c: f"{c['mean']:.3f} [{c['low']:.3f}, {c['high']:.3f}]"  # noqa: E731
    lines = [f"{'metric':<58}{'untrained':>26}{'trained':>26}"]
    for key, r in result.items():
        lines.append(f"{key:<58}{cell(r['untrained']):>26}{cell(r['trained']):>26}")
    return "\n".join(lines)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", help="the run directory of a language self-play run with held_out games")
    ap.add_argument("--json", help="write the summary here (atomically)")
    args = check_outputs(ap.parse_args(argv))
    path = os.path.join(args.run, "metrics.jsonl")
    if not os.path.isfile(path):
        ap.error(f"{args.run}: no metrics.jsonl (not a run directory written by `jaxagents train`)")
    try:
        result = summary(read_rows(path))
    except ValueError as e:
        ap.error(f"{args.run}: {e}")
    print(table(result))
    if args.json:
        atomic_write(args.json, json.dumps({"run": os.path.abspath(args.run), "metrics": result}, indent=1))


if __name__ == "__main__":
    main()

"""Compare self-play runs (advantage estimators, leagues) on one game: curves of the
game's exact evaluation over env steps, one line per run (the mean over its seeds,
each seed faint), and a table of the final values with 95% bootstrap intervals over
seeds (jaxagents.evaluation.intervals).

    python experiments/estimators.py RUN_DIR [RUN_DIR ...] --game leduc \\
        --labels a,b,... --out FIG.png
    python experiments/estimators.py RUN_DIR [RUN_DIR ...] --game tic_tac_toe \\
        --labels a,b,... --out FIG.png [--selfplay]

Each RUN_DIR is a `jaxagents train` run of a self-play config (metrics.jsonl, with
`@seeds` holding each seed's value). The game picks the panels:

* ``leduc`` / ``kuhn``: exact exploitability (``eval/exploitability``), log scale, and
  that of the parameter average (``eval/average/exploitability``) when a run keeps one;
* ``text_kuhn``: a language policy's (``lm_selfplay``) exact exploitability, sampled and
  greedy (``eval/TextKuhnPoker/...``);
* ``tic_tac_toe``: the exact probability of losing to minimax per seat, greedy and
  sampled policy (``eval/minimax/{greedy,exact}/loss/seat{0,1}``; seat 0 plays X,
  first), the self-play episode return per seat (``episode_return/{first,second}``)
  and the batch's policy entropy.

"Final" is the last evaluation for ``eval/`` metrics and the mean of the last
``--window`` updates for the per-update training metrics (returns, entropy).

``--selfplay`` (tic-tac-toe) restores every checkpoint a run kept and computes, per
seed and exactly (every reachable position, no sampling), the policy against
itself: the outcome probabilities (so each seat's value in self-play), each seat's
policy entropy averaged over the moves it makes, and the per-sample advantage of each
seat without a baseline (mean and root mean square over that seat's moves: with
end-of-game rewards a move's undiscounted return is its game's outcome). A per-seat
constant baseline (RAE) removes ``mean^2 / rms^2`` of the advantages' second moment.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os

import numpy as np

from jaxagents.outputs import check_outputs  # output paths checked before computing
from jaxagents.evaluation.curves import final_intervals, series, smooth
from jaxagents.tracking import read_rows


@dataclasses.dataclass(frozen=True)
class Panel:
    keys: tuple  # one metric per seat (or one)
    title: str
    log: bool = False


SEATS = ("X (seat 0)", "O (seat 1)")
GAMES = {
    "leduc": [Panel(("eval/exploitability",), "exact exploitability", log=True),
              Panel(("eval/average/exploitability",), "parameter average: exact exploitability", log=True)],
    "kuhn": [Panel(("eval/exploitability",), "exact exploitability", log=True),
             Panel(("eval/average/exploitability",), "parameter average: exact exploitability", log=True)],
    "text_kuhn": [Panel(("eval/TextKuhnPoker/exploitability",), "language policy: exact exploitability", log=True),
                  Panel(("eval/TextKuhnPoker/greedy_exploitability",), "its greedy policy: exact exploitability",
                        log=True)],
    "tic_tac_toe": [
        Panel(("eval/minimax/greedy/loss/seat0", "eval/minimax/greedy/loss/seat1"), "greedy policy: P(loss to minimax)"),
        Panel(("eval/minimax/exact/loss/seat0", "eval/minimax/exact/loss/seat1"), "sampled policy: P(loss to minimax)"),
        Panel(("episode_return/first", "episode_return/second"), "self-play return per seat (training)"),
        Panel(("entropy/agents",), "policy entropy (training batch)"),
    ],
}


# --------------------------------------------------------------------------- exact self-play (tic-tac-toe)


def selfplay_exact(policies: dict) -> dict:
    """The shared policy against itself on tic-tac-toe, exactly: ``policies`` as in
    ``outcomes_vs_minimax`` (``{"first": logits_fn, "second": logits_fn}``).
    Returns ``x_win``, ``draw``, ``o_win`` and per seat ``s``: ``entropy/seat{s}``
    (mean policy entropy over the moves seat ``s`` makes), ``moves/seat{s}``
    (expected moves per game), ``adv_mean/seat{s}`` and ``adv_rms/seat{s}`` (the
    outcome of the game per move of seat ``s``: the no-baseline advantage)."""
    import jax
    import jax.numpy as jnp
    from jaxagents_environments.games.tic_tac_toe_exact import (
        ROLES,
        board_observation,
        positions,
    )

    pos = positions()
    board, mover, child = (jnp.asarray(pos[k]) for k in ("board", "mover", "child"))
    legal, winner, over = jnp.asarray(pos["legal"]), jnp.asarray(pos["winner"]), jnp.asarray(pos["over"])
    R = board.shape[0]
    move, ent = jnp.zeros((R, 9)), jnp.zeros(R)
    for seat, role in enumerate(ROLES):
        logits = jnp.where(legal, policies[role](board_observation(board, seat)), -jnp.inf)
        p = jnp.where(legal, jax.nn.softmax(logits, -1), 0.0)
        h = -jnp.sum(jnp.where(p > 0, p * jnp.log(jnp.where(p > 0, p, 1.0)), 0.0), -1)
        mine = ((mover == seat) & ~over)[:, None]
        move = jnp.where(mine, p, move)
        ent = jnp.where(mine[:, 0], h, ent)
    x_outcome = jnp.where(winner == 1, 1.0, jnp.where(winner == 2, -1.0, 0.0))
    mass = jnp.zeros(R).at[0].set(1.0)
    cnt = jnp.zeros((2, R))  # mass-weighted number of moves each seat made on the way
    acc = {k: 0.0 for k in ("x_win", "draw", "o_win")}
    n, s1, s2, hs = jnp.zeros(2), jnp.zeros(2), jnp.zeros(2), jnp.zeros(2)
    for _ in range(10):  # nine moves at most
        end = over.astype(jnp.float32)
        acc["x_win"] += jnp.sum(end * mass * (winner == 1))
        acc["o_win"] += jnp.sum(end * mass * (winner == 2))
        acc["draw"] += jnp.sum(end * mass * (winner == 0))
        for s in range(2):
            r = x_outcome * (1.0 if s == 0 else -1.0)
            n = n.at[s].add(jnp.sum(end * cnt[s]))
            s1 = s1.at[s].add(jnp.sum(end * cnt[s] * r))
            s2 = s2.at[s].add(jnp.sum(end * cnt[s] * r * r))
            hs = hs.at[s].add(jnp.sum(jnp.where(over | (mover != s), 0.0, mass * ent)))
        live = jnp.where(over, 0.0, 1.0)
        flow = (live * mass)[:, None] * move
        new_cnt = [(live * (cnt[s] + mass * (mover == s)))[:, None] * move for s in range(2)]
        mass = jax.ops.segment_sum(flow.reshape(-1), child.reshape(-1), R + 1)[:R]
        cnt = jnp.stack([jax.ops.segment_sum(c.reshape(-1), child.reshape(-1), R + 1)[:R] for c in new_cnt])
    out = dict(acc)
    for s in range(2):
        out[f"moves/seat{s}"] = n[s]
        out[f"entropy/seat{s}"] = hs[s] / n[s]
        out[f"adv_mean/seat{s}"] = s1[s] / n[s]
        out[f"adv_rms/seat{s}"] = jnp.sqrt(s2[s] / n[s])
    return out


def selfplay_checkpoints(run_dir: str) -> dict:
    """``{update: {metric: [seeds]}}`` of ``selfplay_exact`` at the run's initial
    parameters and every checkpoint it kept; ``baseline/seat{s}``: the RAE table."""
    import jax

    from jaxagents.build import build
    from jaxagents.checkpoint import Checkpointer
    from jaxagents.learners.policy_gradient.selfplay import ROLE
    from jaxagents.runner import init_states, read_run_config

    config = read_run_config(run_dir)
    if config["env"]["id"] != "tic_tac_toe":
        raise SystemExit(f"--selfplay is for tic-tac-toe runs; {run_dir} is {config['env']['id']}")
    learner = build(config)
    like = init_states(learner, jax.random.split(jax.random.key(config["seed"]), config["num_seeds"]))
    merged, agents = learner.env, learner.agents
    flat = merged.env

    @jax.jit
    @jax.vmap
    def measure(state):
        games = flat.inner_policies(merged.inner_policies({ROLE: agents.logits_fn(state.params[ROLE], ROLE)}))
        out = selfplay_exact(games)
        for s in range(2):
            out[f"baseline/seat{s}"] = state.baseline[0, s]
        return out

    def listed(m):
        return {k: np.asarray(v, float).tolist() for k, v in m.items()}

    result = {0: listed(measure(like))}
    ckpt = Checkpointer(os.path.join(run_dir, "checkpoints"), max_to_keep=None, create=False)
    try:
        for step in sorted(ckpt.all_steps()):
            state, _, _ = ckpt.restore(like, step)
            result[int(step)] = listed(measure(state))
    finally:
        ckpt.close()
    return result


# --------------------------------------------------------------------------- main


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("runs", nargs="+")
    p.add_argument("--game", choices=sorted(GAMES), default="leduc")
    p.add_argument("--labels", default=None, help="comma-separated, one per run")
    p.add_argument("--last", type=int, default=4, help="evaluations averaged for the 'late mean' column")
    p.add_argument("--window", type=int, default=25, help="updates averaged for training metrics' final value and curves")
    p.add_argument("--selfplay", action="store_true", help="tic-tac-toe: exact self-play analysis of every checkpoint")
    p.add_argument("--out", default=None, help="figure (PNG); with --selfplay also FIG's stem + .json")
    args = check_outputs(p.parse_args(argv))
    labels = args.labels.split(",") if args.labels else [os.path.basename(r.rstrip("/")) for r in args.runs]
    if len(labels) != len(args.runs):
        raise SystemExit(f"--labels: {len(labels)} labels for {len(args.runs)} runs")
    if args.selfplay and args.game != "tic_tac_toe":
        raise SystemExit("--selfplay needs --game tic_tac_toe")
    runs = {label: read_rows(os.path.join(r, "metrics.jsonl")) for label, r in zip(labels, args.runs)}
    # panels no run has data for (e.g. the parameter average of runs without one) are left out
    panels = [pn for pn in GAMES[args.game] if any(len(series(rows, k)[1]) for rows in runs.values() for k in pn.keys)]
    if not panels:
        raise SystemExit(f"no {args.game} metric in these runs ({', '.join(k for pn in GAMES[args.game] for k in pn.keys)})")
    exact = {label: selfplay_checkpoints(r) for label, r in zip(labels, args.runs)} if args.selfplay else {}

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    extra = 2 if exact else 0
    n = len(panels) + extra
    cols = min(n, 3)
    fig, axes = plt.subplots((n + cols - 1) // cols, cols, figsize=(4.6 * cols, 3.4 * ((n + cols - 1) // cols)), squeeze=False)
    axes = axes.reshape(-1)
    colors = {}
    for ax, panel in zip(axes, panels):
        for label, rows in runs.items():
            for i, key in enumerate(panel.keys):
                steps, v = series(rows, key)
                if not len(v):
                    continue
                if not key.startswith("eval/"):
                    v = smooth(v, args.window)
                style = "-" if i == 0 else "--"
                kw = dict(color=colors[label]) if label in colors else {}
                name = label if len(panel.keys) == 1 else f"{label}, {SEATS[i].split()[0]}"
                line, = ax.plot(steps / 1e6, v.mean(1), style, label=name if i == 0 or ax is axes[0] else None, **kw)
                colors.setdefault(label, line.get_color())
                for s in range(v.shape[1]):
                    ax.plot(steps / 1e6, v[:, s], style, color=colors[label], alpha=0.2, lw=0.7)
        ax.set_title(panel.title + ("" if len(panel.keys) == 1 else "  (solid X, dashed O)"), fontsize=9)
        ax.set_xlabel("env steps (millions)")
        if panel.log:
            ax.set_yscale("log")
        ax.grid(alpha=0.3)
    if exact:
        ax_h, ax_d = axes[len(panels)], axes[len(panels) + 1]
        for label, res in exact.items():
            steps_per_update = _steps_per_update(runs[label])
            ups = sorted(res)
            x = np.asarray(ups) * steps_per_update / 1e6
            for s, style in ((0, "-o"), (1, "--s")):
                h = np.asarray([res[u][f"entropy/seat{s}"] for u in ups])
                ax_h.plot(x, h.mean(1), style, color=colors.get(label), ms=3)
            d = np.asarray([res[u]["draw"] for u in ups])
            ax_d.plot(x, d.mean(1), "-o", color=colors.get(label), ms=3, label=label)
            for s in range(d.shape[1]):
                ax_d.plot(x, d[:, s], color=colors.get(label), alpha=0.2, lw=0.7)
        ax_h.set_title("exact self-play: entropy per move, per seat  (solid X, dashed O)", fontsize=9)
        ax_d.set_title("exact self-play: P(draw)", fontsize=9)
        for ax in (ax_h, ax_d):
            ax.set_xlabel("env steps (millions)")
            ax.grid(alpha=0.3)
    for ax in axes[n:]:
        ax.axis("off")
    axes[0].legend(fontsize=7)
    fig.tight_layout()

    keys = [k for panel in panels for k in panel.keys]
    print(f"{'run':<30} {'metric':<34} {'final per seed':<26} {'late':>8} {'final mean [95% CI]':>28}")
    for row in final_intervals(runs, keys, args.window):
        steps, v = series(runs[row["run"]], row["metric"])
        late = v[-args.last:].mean() if row["metric"].startswith("eval/") else v[-args.window:].mean()
        per_seed = ", ".join(f"{x:.3f}" for x in row["seeds"])
        print(f"{row['run']:<30} {row['metric']:<34} {per_seed:<26} {late:>8.3f} "
              f"{row['mean']:>10.3f} [{row['low']:.3f}, {row['high']:.3f}]")
    if exact:
        print("\nexact self-play at the last checkpoint (mean over seeds; per seed in brackets)")
        cols_ = ["x_win", "draw", "o_win", "entropy/seat0", "entropy/seat1", "adv_mean/seat0", "adv_mean/seat1",
                 "adv_rms/seat0", "adv_rms/seat1", "baseline/seat0", "baseline/seat1"]
        for label, res in exact.items():
            last = res[max(res)]
            print(f"{label} (update {max(res)}):")
            for c in cols_:
                vals = np.asarray(last[c])
                print(f"    {c:<16} {vals.mean():>8.4f}  [{', '.join(f'{x:.4f}' for x in vals)}]")
    if args.out:
        fig.savefig(args.out, dpi=120)
        print("figure:", args.out)
        if exact:
            path = os.path.splitext(args.out)[0] + ".json"
            with open(path, "w") as f:
                json.dump({label: {str(k): v for k, v in res.items()} for label, res in exact.items()}, f, indent=1)
            print("exact self-play:", path)


def _steps_per_update(rows: list[dict]) -> float:
    for row in rows:
        if row.get("update", 0) > 0:
            return row["env_steps"] / row["update"]
    raise SystemExit("no update in metrics.jsonl")


if __name__ == "__main__":
    main()

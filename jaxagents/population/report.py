"""What a population run writes: its metrics rows, its lineage and schedules, the
members table, and the two pictures.

A population's update metrics are ``[S, U, P]`` (seeds, updates, members). The run's
``metrics.jsonl`` gets one row per update with the *population* view -- each
metric's mean over the members, and the fitness's best and median
(``fitness/best``, ``fitness/median``) -- so everything that reads metrics (curves,
divergence checks, TensorBoard) works unchanged. ``population.jsonl`` gets one row
per update with the *members*: ``fitness`` (NaN as null where not measured),
``parent`` (at a ready point: each member's parent, the lineage), ``ready`` and
``hparams`` ``{name: [...]}`` (the schedules), each a list over seeds of lists over
members. ``lineage.png`` draws who copied whom at each ready point over the
learning-rate (first explored hyper-parameter) schedules; ``hparams.png`` draws every
schedule.
"""

from __future__ import annotations

import json
import math
import os
import warnings

import numpy as np

from jaxagents import tracking
from jaxagents.learners.skeleton.interface import MEMBERS_FILE

POPULATION_FILE = MEMBERS_FILE


def _nan_to_none(x):
    return None if x is None or (isinstance(x, float) and not math.isfinite(x)) else x


def metrics_rows(metrics: dict, num_seeds: int) -> tuple[list[dict], list[dict]]:
    """``{name: [S, U, P]}`` -> ``(metrics rows, population rows)`` (see the module
    docstring)."""
    arrays = {k: np.asarray(v) for k, v in metrics.items()}
    S = num_seeds
    agg = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices: not measured
        for k, a in arrays.items():
            a = a.reshape(S, -1, a.shape[-1]).astype(np.float64)
            if k in ("update", "env_steps"):
                agg[k] = a[..., 0]
            elif k == "fitness":
                agg["fitness/best"] = np.nanmax(a, -1)
                agg["fitness/median"] = np.nanmedian(a, -1)
            elif k.startswith(("pbt/", "hparams/")):
                continue
            elif tracking.is_loss(k):
                agg[k] = np.mean(a, -1)  # a non-finite member loss must show
            else:
                agg[k] = np.nanmean(a, -1)
    rows = tracking.rows_from_metrics(agg, S)
    members = []
    if "fitness" not in arrays:  # an evaluation (the run's update-0 row), not an update: no member rows
        return rows, members
    U = agg["update"].shape[1]
    flat = {k: a.reshape(S, U, a.shape[-1]) for k, a in arrays.items()}
    for i in range(U):
        row = {"update": int(agg["update"][0, i]), "env_steps": int(agg["env_steps"][0, i])}
        row["fitness"] = [[_nan_to_none(float(x)) for x in s] for s in flat["fitness"][:, i]]
        row["ready"] = bool(flat["pbt/ready"][0, i, 0])
        row["parent"] = flat["pbt/parent"][:, i].astype(int).tolist()
        row["hparams"] = {k.split("/", 1)[1]: flat[k][:, i].astype(float).tolist() for k in flat if k.startswith("hparams/")}
        members.append(row)
    return rows, members


def read(run_dir: str) -> list[dict]:
    """The rows of a run's ``population.jsonl`` (``[]`` when the run has none)."""
    path = os.path.join(run_dir, POPULATION_FILE)
    return tracking.read_rows(path) if os.path.exists(path) else []


def members_table(rows: list[dict], seed: int = 0) -> tuple[list[dict], int]:
    """Each member's last measured fitness and last hyper-parameters (seed
    ``seed``), and the best member."""
    if not rows:
        return [], 0
    P = len(rows[-1]["fitness"][seed])
    last = [None] * P
    for r in rows:
        for i, f in enumerate(r["fitness"][seed]):
            if f is not None:
                last[i] = f
    copies = [sum(1 for r in rows if r["ready"] and r["parent"][seed][i] != i) for i in range(P)]
    table = [{"member": i, "fitness": last[i], "replaced": copies[i],
              **{k: v[seed][i] for k, v in rows[-1]["hparams"].items()}} for i in range(P)]
    finite = [(f, i) for i, f in enumerate(last) if f is not None]
    best = max(finite)[1] if finite else 0
    return table, best


def format_members(table: list[dict], best: int) -> str:
    """``members_table``'s table as plain text: one line per member (last fitness, times
    replaced, hyper-parameters), the best marked; ``""`` for an empty table."""
    if not table:
        return ""
    names = [k for k in table[0] if k not in ("member", "fitness", "replaced")]
    head = f"{'member':>6} {'fitness':>10} {'replaced':>8} " + " ".join(f"{n:>12}" for n in names)
    lines = [head, "-" * len(head)]
    for r in table:
        f = f"{r['fitness']:>10.4f}" if r["fitness"] is not None else f"{'-':>10}"
        mark = " <- best" if r["member"] == best else ""
        lines.append(f"{r['member']:>6} {f} {r['replaced']:>8} " + " ".join(f"{r[n]:>12.4g}" for n in names) + mark)
    return "\n".join(lines)


def plot(rows: list[dict], run_dir: str, seed: int = 0) -> list[str]:
    """``hparams.png`` (every schedule) and, when PBT ran, ``lineage.png``. Returns
    the paths written."""
    if not rows or not rows[0]["hparams"]:
        return []
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = np.asarray([r["env_steps"] for r in rows])
    names = list(rows[0]["hparams"])
    P = len(rows[0]["fitness"][seed])
    colors = plt.get_cmap("tab10" if P <= 10 else "viridis")(np.linspace(0, 1, max(P, 2)) if P > 10 else np.arange(P))
    out = []
    fig, axes = plt.subplots(1, len(names), figsize=(5.0 * len(names), 3.6), squeeze=False)
    for ax, name in zip(axes[0], names):
        v = np.asarray([r["hparams"][name][seed] for r in rows])  # [U, P]
        for i in range(P):
            ax.plot(x, v[:, i], color=colors[i], lw=1.2)
        if np.all(v > 0) and v.max() / max(v.min(), 1e-30) > 10:
            ax.set_yscale("log")
        ax.set_title(name)
        ax.set_xlabel("env steps")
    fig.suptitle("hyper-parameter schedules (one line per member)")
    fig.tight_layout()
    path = os.path.join(run_dir, "hparams.png")
    _save(fig, path)
    out.append(path)
    ready = [j for j, r in enumerate(rows) if r["ready"]]
    if ready:
        name = names[0]
        v = np.asarray([r["hparams"][name][seed] for r in rows])
        fig, ax = plt.subplots(figsize=(8, 4.5))
        for i in range(P):
            ax.plot(x, v[:, i], color=colors[i], lw=1.0, alpha=0.8)
        for j in ready:
            parents = rows[j]["parent"][seed]
            before = v[j - 1] if j > 0 else v[j]
            for i, p in enumerate(parents):
                if p != i:  # member i copied member p: an arrow from p's value to i's new one
                    ax.annotate("", xy=(x[j], v[j, i]), xytext=(x[j], before[p]),
                                arrowprops=dict(arrowstyle="->", color=colors[p], lw=1.0))
        if np.all(v > 0) and v.max() / max(v.min(), 1e-30) > 10:
            ax.set_yscale("log")
        ax.set_xlabel("env steps")
        ax.set_ylabel(name)
        ax.set_title(f"PBT lineage ({len(ready)} ready points)\narrow: parent -> the member that copied it", fontsize=10)
        fig.tight_layout()
        path = os.path.join(run_dir, "lineage.png")
        _save(fig, path)
        out.append(path)
    return out


def _save(fig, path: str) -> None:
    import io

    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    tracking.atomic_write(path, buf.getvalue())


def write_summary(run_dir: str, table: list[dict], best: int) -> None:
    """Write ``members.json`` (``{"best": best, "members": table}``) into ``run_dir``, atomically."""
    tracking.atomic_write(os.path.join(run_dir, "members.json"), json.dumps({"best": best, "members": table}, indent=2))

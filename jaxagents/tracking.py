"""Where metrics go: a progress bar and log sinks (JSONL always; TensorBoard and
Weights & Biases when those packages are installed and asked for), and the
learning-curve plot written at the end of a run.

Metrics leave the compiled program as arrays. The progress bar is driven by a host
callback once per update (never per environment step); the sinks receive whole
rows ``{"update": u, "env_steps": s, name: value, ...}`` at checkpoint boundaries,
from the arrays the program returned, so what is logged is exactly what was
computed, in order, even when several seeds run in one program.
"""

from __future__ import annotations

import json
import math
import os
from typing import Iterable

import numpy as np


class JsonlSink:
    """One JSON object per update in ``path`` (appended; ``truncate_after`` drops
    rows past a checkpoint when a killed run resumes)."""

    def __init__(self, path: str):
        self.path = path

    def truncate_after(self, update: int) -> None:
        if not os.path.exists(self.path):
            return
        with open(self.path) as f:
            rows = [r for r in (json.loads(line) for line in f if line.strip()) if r["update"] <= update]
        with open(self.path, "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")

    def write(self, rows: Iterable[dict]) -> None:
        with open(self.path, "a") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")

    def close(self) -> None:
        pass


class TensorBoardSink:
    """Scalars to TensorBoard event files (needs ``tensorboardX`` or ``torch``)."""

    def __init__(self, logdir: str):
        try:
            from tensorboardX import SummaryWriter
        except ImportError:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError:
                raise ImportError("log.tensorboard=true needs `pip install tensorboardX`") from None
        self.writer = SummaryWriter(logdir)

    def write(self, rows):
        for r in rows:
            for k, v in r.items():
                if k not in ("update", "env_steps") and isinstance(v, (int, float)) and math.isfinite(v):
                    self.writer.add_scalar(k, v, r["env_steps"])
        self.writer.flush()

    def close(self):
        self.writer.close()


class WandbSink:
    """Rows to a Weights & Biases run (needs ``wandb``; ``project`` required)."""

    def __init__(self, project: str, config: dict, run_dir: str):
        try:
            import wandb
        except ImportError:
            raise ImportError("log.wandb_project needs `pip install wandb`") from None
        self.run = wandb.init(project=project, config=config, dir=run_dir)

    def write(self, rows):
        for r in rows:
            self.run.log({k: v for k, v in r.items() if v is not None}, step=r["env_steps"])

    def close(self):
        self.run.finish()


def make_sinks(log_cfg: dict, run_dir: str, config: dict) -> list:
    sinks = [JsonlSink(os.path.join(run_dir, "metrics.jsonl"))]
    if log_cfg.get("tensorboard"):
        sinks.append(TensorBoardSink(os.path.join(run_dir, "tensorboard")))
    if log_cfg.get("wandb_project"):
        sinks.append(WandbSink(log_cfg["wandb_project"], config, run_dir))
    return sinks


def rows_from_metrics(metrics: dict, num_seeds: int) -> list[dict]:
    """``{name: [S, U]}`` arrays -> one row per update: the mean over seeds (NaN
    entries, e.g. evaluations not due, are dropped) plus per-seed values when
    ``num_seeds > 1``."""
    arrays = {k: np.asarray(v, np.float64).reshape(num_seeds, -1) for k, v in metrics.items()}
    steps = arrays["update"].shape[1]
    rows = []
    for i in range(steps):
        row = {"update": int(arrays["update"][0, i]), "env_steps": int(arrays["env_steps"][0, i])}
        for k, a in arrays.items():
            if k in ("update", "env_steps"):
                continue
            col = a[:, i]
            if np.all(np.isnan(col)):
                continue
            row[k] = float(np.nanmean(col))
            if num_seeds > 1:
                row[f"{k}@seeds"] = [float(x) for x in col]
        rows.append(row)
    return rows


def read_rows(path: str) -> list[dict]:
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def plot_curves(rows: list[dict], path: str, title: str = "") -> str | None:
    """Learning curves (episode returns, evaluation metrics) against env steps, one
    panel per group; the band is the min-max over seeds. Returns the path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = [k for k in rows[0] if not k.endswith("@seeds") and k not in ("update", "env_steps")] if rows else []
    keys = sorted({k for r in rows for k in r if not k.endswith("@seeds") and k not in ("update", "env_steps")})
    panels = [("episode return", [k for k in keys if k.startswith("episode_return/")])]
    evals = [k for k in keys if k.startswith("eval/") and ("return" in k or "exploitability" in k or "loss/" in k)]
    if evals:
        panels.append(("evaluation", evals))
    panels = [p for p in panels if p[1]]
    if not panels:
        return None
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4), squeeze=False)
    for ax, (name, ks) in zip(axes[0], panels):
        for k in ks:
            pts = [(r["env_steps"], r[k], r.get(f"{k}@seeds")) for r in rows if k in r]
            x = np.array([p[0] for p in pts])
            y = np.array([p[1] for p in pts])
            (line,) = ax.plot(x, y, label=k)
            if pts and pts[0][2] is not None:
                s = np.array([p[2] for p in pts])
                ax.fill_between(x, s.min(1), s.max(1), alpha=0.2, color=line.get_color())
        ax.set_xlabel("environment steps")
        ax.set_title(name)
        ax.legend(fontsize=7)
        if any("exploitability" in k for k in ks):
            ax.set_yscale("log")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path

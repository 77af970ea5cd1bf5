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

import contextlib
import json
import math
import os
import tempfile
from typing import Iterable

import numpy as np


def atomic_write(path: str, data: str | bytes) -> None:
    """Write ``path`` through a temporary file in the same directory and a rename, so
    that a reader (or a run killed meanwhile) sees the old file or the new one, never
    half of one."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


class JsonlSink:
    """One JSON object per update in ``path`` (appended; ``truncate_after`` drops
    rows past a checkpoint when a killed run resumes)."""

    def __init__(self, path: str):
        self.path = path

    def truncate_after(self, update: int) -> None:
        """Keep the rows up to ``update`` (all of them dropped: ``-1``); a half-written
        line (a run killed while writing it) is dropped too."""
        if not os.path.exists(self.path):
            return
        rows = [r for r in read_rows(self.path) if r["update"] <= update]
        atomic_write(self.path, "".join(json.dumps(r) + "\n" for r in rows))

    def write(self, rows: Iterable[dict]) -> None:
        """Append ``rows``, one JSON line each."""
        with open(self.path, "a") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")

    def close(self) -> None:
        """Nothing to close: every ``write`` opens and closes the file."""


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
        """Each row's finite numbers as scalars at step ``env_steps`` (``update`` and
        ``env_steps`` themselves left out), then flush."""
        for r in rows:
            for k, v in r.items():
                if k not in ("update", "env_steps") and isinstance(v, (int, float)) and math.isfinite(v):
                    self.writer.add_scalar(k, v, r["env_steps"])
        self.writer.flush()

    def close(self):
        """Close the event writer."""
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
        """Log each row's numbers to the wandb run at step ``env_steps``."""
        for r in rows:
            self.run.log({k: v for k, v in r.items() if isinstance(v, (int, float))}, step=r["env_steps"])

    def close(self):
        """Finish the wandb run."""
        self.run.finish()


def check_sinks(log_cfg: dict) -> None:
    """Raise ``ImportError`` now, before a run directory exists, when a sink that
    ``log_cfg`` asks for cannot be made (its package is not installed)."""
    if log_cfg.get("tensorboard"):
        import importlib.util

        if not any(importlib.util.find_spec(m) for m in ("tensorboardX", "torch")):
            raise ImportError("log.tensorboard=true needs `pip install tensorboardX`")
    if log_cfg.get("wandb_project"):
        import importlib.util

        if importlib.util.find_spec("wandb") is None:
            raise ImportError("log.wandb_project needs `pip install wandb`")


def make_sinks(log_cfg: dict, run_dir: str, config: dict) -> list:
    """The metric sinks ``log_cfg`` asks for: always ``metrics.jsonl`` in ``run_dir``,
    plus TensorBoard (``log.tensorboard``) and wandb (``log.wandb_project``, logged
    with ``config``)."""
    sinks = [JsonlSink(os.path.join(run_dir, "metrics.jsonl"))]
    if log_cfg.get("tensorboard"):
        sinks.append(TensorBoardSink(os.path.join(run_dir, "tensorboard")))
    if log_cfg.get("wandb_project"):
        sinks.append(WandbSink(log_cfg["wandb_project"], config, run_dir))
    return sinks


def is_loss(name: str) -> bool:
    """A training quantity computed at every update (losses, gradient norms), whose
    non-finite value means divergence -- unlike evaluations (``eval/...``), which are
    NaN on the updates they are not due, and episode returns, NaN when no episode
    ended."""
    return not name.startswith("eval/") and ("loss" in name or "grad_norm" in name)


def _finite_or_none(x: float) -> float | None:
    return x if math.isfinite(x) else None


def rows_from_metrics(metrics: dict, num_seeds: int) -> list[dict]:
    """``{name: [S, U]}`` arrays -> one row per update: the mean over seeds plus
    per-seed values when ``num_seeds > 1``.

    NaN entries of evaluations and returns mean "not measured this update" and are
    left out. A loss (``is_loss``) is never left out: a non-finite one is written as
    ``null`` and its name listed in the row's ``"nonfinite"`` (the evidence of a
    diverged run)."""
    arrays = {k: np.asarray(v, np.float64).reshape(num_seeds, -1) for k, v in metrics.items()}
    steps = arrays["update"].shape[1]
    rows = []
    for i in range(steps):
        row = {"update": int(arrays["update"][0, i]), "env_steps": int(arrays["env_steps"][0, i])}
        bad = []
        for k, a in arrays.items():
            if k in ("update", "env_steps"):
                continue
            col = a[:, i]
            if is_loss(k):
                if not np.all(np.isfinite(col)):
                    bad.append(k)
                row[k] = _finite_or_none(float(np.mean(col)))
                if num_seeds > 1:
                    row[f"{k}@seeds"] = [_finite_or_none(float(x)) for x in col]
                continue
            if np.all(np.isnan(col)):
                continue
            row[k] = _finite_or_none(float(np.nanmean(col)))
            if num_seeds > 1:
                row[f"{k}@seeds"] = [_finite_or_none(float(x)) for x in col]
        if bad:
            row["nonfinite"] = bad
        rows.append(row)
    return rows


def read_rows(path: str) -> list[dict]:
    """The rows of a ``metrics.jsonl``; a line that does not parse (the half-written
    last line of a killed run) is skipped."""
    rows = []
    with open(path) as f:
        for line in f:
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if isinstance(row, dict) and "update" in row:
                rows.append(row)
    return rows


def panel_of(name: str) -> str | None:
    """Which panel of ``curve.png`` a metric goes in (one per kind of measure), or
    None for metrics not plotted (losses, diagnostics)."""
    if name.startswith("episode_return/"):
        return "episode return (training)"
    if name in ("fitness/best", "fitness/median"):
        return "population fitness"
    if not name.startswith("eval/"):
        return None
    if "exploitability" in name:
        return "exploitability"
    parts = name.split("/")
    if any(p in ("loss", "win", "draw") for p in parts):
        return "win / loss rate (evaluation)"
    if any("return" in p for p in parts):
        return "return (evaluation)"
    return "other evaluations"


_PANEL_ORDER = ("population fitness", "exploitability", "win / loss rate (evaluation)", "return (evaluation)", "episode return (training)", "other evaluations")


def _series(rows: list[dict], key: str):
    """``(x, mean, low, high)`` of ``key`` over the rows that have a finite value;
    ``low``/``high`` are the min and max over seeds (None with one seed)."""
    x, y, lo, hi = [], [], [], []
    for r in rows:
        v = r.get(key)
        if v is None or not math.isfinite(v):
            continue
        x.append(r["env_steps"])
        y.append(v)
        seeds = [s for s in (r.get(f"{key}@seeds") or []) if s is not None and math.isfinite(s)]
        lo.append(min(seeds) if seeds else v)
        hi.append(max(seeds) if seeds else v)
    has_band = any(f"{key}@seeds" in r for r in rows)
    x, y = np.asarray(x), np.asarray(y)
    return x, y, (np.asarray(lo) if has_band else None), (np.asarray(hi) if has_band else None)


def plot_curves(rows: list[dict], path: str, title: str = "") -> str | None:
    """Learning curves against environment steps, one panel per kind of measure
    (exploitability, win/loss rates, evaluation returns, training returns; see
    ``panel_of``), from the first row on (an evaluation at update 0, when the run
    logged one, is the start of training). With several seeds each curve is the mean
    over seeds with a min-max band. A panel is on a log scale only when every value
    in it is positive and they span more than a factor of 10. Returns the path, or
    None when there is nothing to plot. The file is replaced atomically."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = sorted({k for r in rows for k in r if not k.endswith("@seeds")} - {"update", "env_steps", "nonfinite"})
    groups: dict[str, list[str]] = {}
    for k in keys:
        panel = panel_of(k)
        if panel is not None:
            groups.setdefault(panel, []).append(k)
    panels = [(p, groups[p]) for p in _PANEL_ORDER if p in groups]
    panels = [(p, ks, [_series(rows, k) for k in ks]) for p, ks in panels]
    panels = [(p, ks, ss) for p, ks, ss in panels if any(len(s[0]) for s in ss)]
    if not panels:
        return None
    cols = min(len(panels), 3)
    nrows = -(-len(panels) // cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(5.5 * cols, 3.8 * nrows), squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    several = any(s[2] is not None for _, _, ss in panels for s in ss)
    for ax, (name, ks, series) in zip(axes.flat, panels):
        values = []
        for k, (x, y, lo, hi) in zip(ks, series):
            if not len(x):
                continue
            label = k.removeprefix("eval/").removeprefix("episode_return/")
            (line,) = ax.plot(x, y, label=label, marker="o" if len(x) < 30 else None, ms=3)
            values.append(y)
            if lo is not None:
                ax.fill_between(x, lo, hi, alpha=0.2, color=line.get_color(), linewidth=0)
                values += [lo, hi]
        allv = np.concatenate(values) if values else np.zeros(0)
        if len(allv) and np.all(allv > 0) and allv.max() > 10 * allv.min():
            ax.set_yscale("log")
        ax.set_xlabel("environment steps")
        ax.set_title(name)
        ax.grid(alpha=0.3)
        if len(ks) > 1:
            ax.legend(fontsize=7)
    fig.suptitle(title + ("  (mean over seeds, band: min-max)" if several else ""))
    fig.tight_layout()
    import io

    buf = io.BytesIO()
    fig.savefig(buf, dpi=100, format="png")
    plt.close(fig)
    atomic_write(path, buf.getvalue())
    return path

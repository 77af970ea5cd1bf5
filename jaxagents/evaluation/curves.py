"""Learning curves from a run's metric rows: a metric's per-seed series, each seed's
final value with a bootstrap interval over seeds, moving averages, and the env step at
which a curve first reaches a threshold.

The rows are those of a run's ``metrics.jsonl`` (read them with
``jaxagents.tracking.read_rows``): one dict per update with ``env_steps``, each metric's
seed mean under its name and, for a run of several seeds, each seed's value under
``name@seeds``. Nothing here reads files.
"""

from __future__ import annotations

import math

import numpy as np

from jaxagents.evaluation.intervals import stratified_bootstrap_ci


def series(rows: list[dict], key: str) -> tuple[np.ndarray, np.ndarray]:
    """``(env_steps [K], values [K, seeds])`` of metric ``key`` over the ``K`` rows
    where every seed has a finite value (``key@seeds``, or ``key`` alone as one seed).
    No such row: two empty arrays, shapes ``[0]`` and ``[0, 0]``."""
    steps, values = [], []
    for row in rows:
        v = row.get(key + "@seeds")
        if v is None and key in row:
            v = [row[key]]
        if v is not None and all(x is not None and np.isfinite(x) for x in v):
            steps.append(row["env_steps"])
            values.append(v)
    if not values:
        return np.zeros(0), np.zeros((0, 0))
    return np.asarray(steps, float), np.asarray(values, float)


def final(key: str, values: np.ndarray, window: int) -> np.ndarray:
    """Each seed's final value of ``values [K, seeds]``: the last row for an evaluation
    metric (``eval/...``, measured every few updates), the mean of the last ``window``
    rows for a per-update training metric (noisier). Shape ``[seeds]``."""
    if key.startswith("eval/"):
        return values[-1]
    return values[-window:].mean(0)


def smooth(x: np.ndarray, window: int) -> np.ndarray:
    """Trailing moving average of ``x [K, ...]`` along axis 0 over ``window`` rows (the
    first rows average what there is). Same shape as ``x``."""
    c = np.cumsum(np.concatenate([np.zeros((1, *x.shape[1:])), x]), 0)
    n = np.arange(1, len(x) + 1)
    lo = np.maximum(n - window, 0)
    return (c[n] - c[lo]) / (n - lo).reshape(-1, *([1] * (x.ndim - 1)))


def final_intervals(runs: dict[str, list[dict]], keys, window: int = 25, confidence: float = 0.95) -> list[dict]:
    """One row per (run, metric) present: ``run``, ``metric``, each seed's ``final``
    value (``seeds``), their ``mean`` and the stratified bootstrap interval of the mean
    over seeds (``low``, ``high``). ``runs``: ``{label: metric rows}``."""
    out = []
    for label, rows in runs.items():
        for key in keys:
            _, v = series(rows, key)
            if not len(v):
                continue
            f = final(key, v, window)
            ci = stratified_bootstrap_ci(f[:, None], np.mean, confidence=confidence)
            out.append(dict(run=label, metric=key, seeds=f.tolist(), mean=ci.point, low=ci.low, high=ci.high))
    return out


def window_mean(steps: np.ndarray, ret: np.ndarray, episodes: np.ndarray, window: float) -> np.ndarray:
    """Per update (all ``[K]``, ``steps`` increasing): the mean of ``ret`` over the
    updates in ``(steps - window, steps]``, each weighted by the episodes it finished;
    updates that finished none (or whose return is not finite) do not count. NaN where
    the window holds no episode."""
    ok = (episodes > 0) & np.isfinite(ret)
    w = np.where(ok, episodes, 0.0)
    cw = np.concatenate([[0.0], np.cumsum(w)])
    cr = np.concatenate([[0.0], np.cumsum(np.where(ok, ret, 0.0) * w)])
    start = np.searchsorted(steps, steps - window, side="right")
    end = np.arange(1, len(steps) + 1)
    tot = cw[end] - cw[start]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(tot > 0, (cr[end] - cr[start]) / tot, np.nan)


def first_reach(steps: np.ndarray, wm: np.ndarray, threshold: float, window: float) -> float:
    """The first env step whose window mean ``wm`` is at least ``threshold``, counting
    only steps with a full window behind them (``steps >= window``); NaN if none."""
    ok = (steps >= window) & (wm >= threshold)
    return float(steps[np.argmax(ok)]) if ok.any() else math.nan

"""Aggregate scores over runs with rliable's definitions (Agarwal et al. 2021), in
numpy (the ``rliable`` package needs ``arch``, which breaks with this pandas).

* ``iqm``: the interquartile mean -- the mean of the middle 50% of the scores after
  sorting, dropping ``floor(n / 4)`` from each end (``scipy.stats.trim_mean(x, 0.25)``).
  More robust to outlier runs than the mean, less wasteful than the median.
* ``stratified_bootstrap_ci``: a percentile bootstrap confidence interval of any such
  statistic of a ``[runs, tasks]`` score table, resampling runs with replacement
  within each task (the strata) so every replicate keeps every task; the interval is
  the ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles of the
  replicates' statistic.

Cross-play (``jaxagents.evaluation.crossplay``) uses them with evaluation seeds as the
runs and the matrix cells as the tasks.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np

from jaxagents.core.validate import check_float, check_int, check_positive_int


def iqm(scores, axis: int | None = None):
    """The interquartile mean of ``scores`` (all of them with ``axis=None``, else along
    ``axis``): sort, drop ``floor(n * 0.25)`` from each end, average the rest."""
    x = np.asarray(scores, np.float64)
    if axis is None:
        x, axis = x.reshape(-1), 0
    x = np.sort(np.moveaxis(x, axis, -1), axis=-1)
    n = x.shape[-1]
    if n == 0:
        raise ValueError("iqm of no scores")
    cut = int(n * 0.25)
    return x[..., cut : n - cut].mean(axis=-1)


def _mean(scores, axis=None):
    return np.mean(scores, axis=axis)


@dataclasses.dataclass(frozen=True)
class Interval:
    """A statistic's point estimate on the data and its bootstrap interval."""

    point: float
    low: float
    high: float

    def __str__(self) -> str:
        return f"{self.point:.4g} [{self.low:.4g}, {self.high:.4g}]"


def stratified_bootstrap_ci(scores, statistic: Callable = iqm, *, reps: int = 2000, confidence: float = 0.95,
                            seed: int = 0) -> Interval:
    """Percentile bootstrap interval of ``statistic`` over a ``[runs, tasks]`` table
    (a 1-D array is one task). ``statistic(x, axis=-1)`` reduces the last axis of
    ``x[reps, runs * tasks]`` (``iqm``, ``np.mean``, ``np.median`` all do). Each
    replicate draws ``runs`` rows with replacement independently in every column."""
    x = np.asarray(scores, np.float64)
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2 or x.shape[0] == 0 or x.shape[1] == 0:
        raise ValueError(f"scores must be a non-empty [runs, tasks] table, got shape {np.shape(scores)}")
    if not np.all(np.isfinite(x)):
        raise ValueError("scores must be finite (drop cells without finished episodes first)")
    reps = check_positive_int("reps", reps)
    confidence = check_float("confidence", confidence, low=0.0, high=1.0, low_open=True, high_open=True)
    seed = check_int("seed", seed, low=0)
    runs, tasks = x.shape
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, runs, size=(reps, runs, tasks))  # per replicate, per task: which runs
    sample = x[rows, np.arange(tasks)[None, None, :]].reshape(reps, runs * tasks)
    stats = np.asarray(statistic(sample, axis=-1), np.float64)
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(stats, [alpha, 1.0 - alpha])
    point = float(np.asarray(statistic(x.reshape(1, -1), axis=-1)).reshape(()))
    return Interval(point, float(low), float(high))


def summary(scores, *, reps: int = 2000, confidence: float = 0.95, seed: int = 0) -> dict:
    """``{"mean": Interval, "iqm": Interval}`` of a ``[runs, tasks]`` table."""
    return {name: stratified_bootstrap_ci(scores, fn, reps=reps, confidence=confidence, seed=seed)
            for name, fn in (("mean", _mean), ("iqm", iqm))}

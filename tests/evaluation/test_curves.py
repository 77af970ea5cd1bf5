"""jaxagents.evaluation.curves: per-seed series, final values and their intervals,
moving averages, the episode-weighted window mean and the first step at a threshold."""

import math

import numpy as np
import pytest

from jaxagents.evaluation import curves


def synthetic_rows():
    rows = [{"update": 0, "env_steps": 0, "eval/x@seeds": [3.0, 4.0, 5.0], "eval/x": 4.0}]
    for u in range(1, 11):
        row = {"update": u, "env_steps": 100 * u, "ret@seeds": [u, 2 * u, 3 * u], "ret": 2.0 * u}
        if u % 5 == 0:  # evaluations every 5 updates; NaN-free
            row["eval/x@seeds"] = [1.0 / u, 2.0 / u, 3.0 / u]
        rows.append(row)
    rows.append({"update": 11, "env_steps": 1100, "eval/x@seeds": [None, 1.0, 1.0]})  # incomplete: skipped
    return rows


def test_series_final_and_intervals():
    rows = synthetic_rows()
    steps, v = curves.series(rows, "eval/x")
    np.testing.assert_array_equal(steps, [0, 500, 1000])
    np.testing.assert_allclose(v[-1], [0.1, 0.2, 0.3])
    # eval metrics: the last evaluation; training metrics: the mean of the last `window` updates
    np.testing.assert_allclose(curves.final("eval/x", v, 3), [0.1, 0.2, 0.3])
    _, r = curves.series(rows, "ret")
    np.testing.assert_allclose(curves.final("ret", r, 2), [9.5, 19.0, 28.5])
    assert curves.series(rows, "missing")[1].shape == (0, 0)
    table = curves.final_intervals({"a": rows}, ["eval/x", "ret", "missing"], window=2)
    assert [t["metric"] for t in table] == ["eval/x", "ret"]
    t = table[0]
    assert t["mean"] == pytest.approx(0.2) and 0.1 <= t["low"] <= t["mean"] <= t["high"] <= 0.3


def test_smooth():
    x = np.arange(1.0, 6.0)[:, None]
    np.testing.assert_allclose(curves.smooth(x, 2)[:, 0], [1.0, 1.5, 2.5, 3.5, 4.5])


def test_window_mean_weights_episodes_and_skips_empty_updates():
    steps = np.array([10.0, 20, 30, 40])
    ret = np.array([100.0, np.nan, 0.0, 300.0])
    eps = np.array([1.0, 0, 3, 1])
    wm = curves.window_mean(steps, ret, eps, window=20)
    # (s-20, s]: {10}, {10, 20}, {20, 30}, {30, 40}
    np.testing.assert_allclose(wm, [100.0, 100.0, 0.0, 75.0])
    assert curves.first_reach(steps, wm, 100.0, 20) == 20.0  # 10 reaches it too, but before a full window
    assert curves.first_reach(steps, wm, 50.0, 40) == 40.0
    assert math.isnan(curves.first_reach(steps, wm, 101.0, 20))

"""experiments/econgym_tasks.py's episode scores: the task's reduction over the years
played, and the geometric GDP growth that a collapse and rebound cannot inflate."""

import numpy as np
import pytest


@pytest.fixture(scope="module")
def script(experiment_script):
    return experiment_script("econgym_tasks")


def test_scores_reduce_over_the_years_played_only(script):
    values = np.array([[0.1, 0.5], [0.3, 0.02], [0.5, 9.0]], np.float32)  # [T=3, E=2]
    played = np.array([[True, True], [True, True], [True, False]])  # the second ended in its second year
    mean, _ = script.episode_scores(values, played, "mean")
    last, _ = script.episode_scores(values, played, "last")
    gap, _ = script.episode_scores(values, played, "abs_gap")
    np.testing.assert_allclose(mean, [0.3, 0.26], rtol=1e-6)
    np.testing.assert_allclose(last, [0.5, 0.02], rtol=1e-6)
    np.testing.assert_allclose(gap, [(0.08 + 0.28 + 0.48) / 3, (0.48 + 0.0) / 2], rtol=1e-5)


def test_geometric_growth_is_the_end_to_start_ratio(script):
    gdp = np.array([100.0, 0.1, 100.0, 110.0])  # a collapse to 0.1% and back, then +10%
    growth = (gdp[1:] / gdp[:-1] - 1.0)[:, None].astype(np.float32)
    played = np.ones_like(growth, bool)
    arithmetic, geometric = script.episode_scores(growth, played, "mean")
    assert arithmetic[0] > 300  # the ratio's spike: (-0.999 + 999 + 0.1) / 3
    # float32 logs of 0.001 and 1000 cancel to about 1e-4 of the answer
    np.testing.assert_allclose(geometric, [(110.0 / 100.0) ** (1 / 3) - 1], rtol=1e-3)

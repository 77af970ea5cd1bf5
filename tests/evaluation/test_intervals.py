"""IQM and stratified bootstrap intervals against scipy and closed forms."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import stats

from jaxagents.evaluation.intervals import iqm, stratified_bootstrap_ci, summary


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7, 8, 10, 33])
def test_iqm_is_scipy_trim_mean(n):
    x = np.random.default_rng(n).normal(size=n) ** 3
    np.testing.assert_allclose(iqm(x), stats.trim_mean(x, 0.25), rtol=1e-12)


def test_iqm_closed_form_and_axis():
    # 8 scores: drop the 2 lowest and the 2 highest, average 3, 4, 5, 6
    assert iqm([100, 1, 2, 3, 4, 5, 6, -50]) == pytest.approx((2 + 3 + 4 + 5) / 4)
    x = np.random.default_rng(0).normal(size=(3, 12))
    np.testing.assert_allclose(iqm(x, axis=1), stats.trim_mean(x, 0.25, axis=1))
    np.testing.assert_allclose(iqm(x), stats.trim_mean(x.reshape(-1), 0.25))


@settings(max_examples=40, deadline=None)
@given(arrays(np.float64, st.integers(1, 40), elements=st.floats(-1e6, 1e6)))
def test_iqm_properties(x):
    np.testing.assert_allclose(iqm(x), stats.trim_mean(x, 0.25), rtol=1e-9, atol=1e-6)
    assert x.min() - 1e-6 <= iqm(x) <= x.max() + 1e-6
    np.testing.assert_allclose(iqm(2.0 * x + 3.0), 2.0 * iqm(x) + 3.0, rtol=1e-9, atol=1e-5)  # affine equivariant
    np.testing.assert_allclose(iqm(np.random.default_rng(0).permutation(x)), iqm(x))  # order free


@settings(max_examples=25, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(2, 8), st.integers(1, 3)), elements=st.floats(-100, 100)),
       st.integers(0, 2**31 - 1))
def test_bootstrap_interval_brackets_within_range(x, seed):
    ci = stratified_bootstrap_ci(x, np.mean, reps=200, seed=seed)
    assert ci.low <= ci.high
    assert x.min() - 1e-9 <= ci.low and ci.high <= x.max() + 1e-9
    assert ci.point == pytest.approx(x.mean())


def test_bootstrap_constant_scores_give_a_point():
    ci = stratified_bootstrap_ci(np.full((5, 3), 2.5), iqm, reps=100)
    assert (ci.point, ci.low, ci.high) == (2.5, 2.5, 2.5)


def test_stratified_resampling_keeps_every_task():
    # task 0 always scores 0, task 1 always 10: any replicate of the mean is 5 exactly when
    # runs are resampled within each task (an unstratified bootstrap would spread)
    x = np.stack([np.zeros(6), np.full(6, 10.0)], axis=1)
    ci = stratified_bootstrap_ci(x, np.mean, reps=500)
    assert ci.low == ci.high == 5.0


def test_bootstrap_covers_the_true_mean_and_shrinks():
    rng = np.random.default_rng(0)
    widths, covered = {}, []
    for n in (10, 160):
        w = []
        for rep in range(40):
            ci = stratified_bootstrap_ci(rng.normal(1.0, 1.0, size=(n, 1)), np.mean, reps=400, seed=rep)
            covered.append(ci.low <= 1.0 <= ci.high)
            w.append(ci.high - ci.low)
        widths[n] = np.mean(w)
    assert np.mean(covered) >= 0.85  # nominal 0.95; percentile intervals are a bit narrow at n=10
    # width ~ 2 * 1.96 / sqrt(n): 16x the runs, a quarter of the width
    assert widths[160] == pytest.approx(widths[10] / 4, rel=0.25)
    assert widths[160] == pytest.approx(2 * 1.96 / np.sqrt(160), rel=0.15)


def test_summary_and_errors():
    s = summary(np.arange(12.0).reshape(4, 3), reps=50)
    assert set(s) == {"mean", "iqm"} and s["mean"].point == pytest.approx(5.5)
    with pytest.raises(ValueError, match="finite"):
        stratified_bootstrap_ci([[1.0], [np.nan]])
    with pytest.raises(ValueError, match="confidence"):
        stratified_bootstrap_ci([[1.0], [2.0]], confidence=1.0)
    with pytest.raises(ValueError, match="runs, tasks"):
        stratified_bootstrap_ci(np.zeros((2, 2, 2)))

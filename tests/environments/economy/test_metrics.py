"""Metrics against closed forms and O(N^2) / explicit-loop references."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxagents_environments.economy import metrics

gini = jax.jit(metrics.gini)
gini_binned = jax.jit(metrics.gini_binned, static_argnames=("bins_per_octave", "octaves"))


def gini_pairs(x):
    """The definition: mean absolute difference over ordered pairs, normalised."""
    x = np.asarray(x, np.float64)
    n = len(x)
    if n < 2 or x.sum() == 0:
        return 0.0
    return np.abs(x[:, None] - x[None, :]).sum() / (2 * n * (n - 1) * x.mean())


@pytest.mark.parametrize("n", [2, 3, 10, 257, 1000])
def test_gini_extremes(n):
    one_owns_all = np.zeros(n, np.float32)
    one_owns_all[n // 2] = 7.0
    assert float(gini(one_owns_all)) == pytest.approx(1.0, abs=1e-6) and float(gini(one_owns_all)) <= 1.0
    assert float(gini_binned(one_owns_all)) == pytest.approx(1.0, abs=1e-6)
    assert float(gini(np.full(n, 3.5, np.float32))) == pytest.approx(0.0, abs=1e-6)
    assert float(gini_binned(np.full(n, 3.5, np.float32))) == pytest.approx(0.0, abs=1e-6)
    assert float(gini(np.zeros(n, np.float32))) == 0.0  # nobody owns anything: equal


sort_floats = jax.jit(metrics.sort_floats)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(width=32, allow_nan=False), min_size=1, max_size=40),
       st.integers(1, 3))
def test_sort_floats_is_jnp_sort_bit_for_bit(values, rows):
    """The int32-key sort gives numpy's order, value for value and bit for bit: negatives,
    both zeros, subnormals and infinities included (one shape per row count)."""
    x = np.tile(np.asarray(values, np.float32), (rows, 1))
    x[1:] = -x[1:]  # rows of the opposite sign
    got = np.asarray(sort_floats(x))
    want = np.sort(x, axis=-1)
    np.testing.assert_array_equal(got, want)
    nonzero = want != 0  # -0.0 and 0.0 compare equal: their order is free, so compare the rest's bits
    np.testing.assert_array_equal(got.view(np.int32)[nonzero], want.view(np.int32)[nonzero])


def test_gini_of_one_agent_is_zero():
    assert float(metrics.gini(jnp.array([5.0]))) == 0.0
    assert float(metrics.gini_binned(jnp.array([5.0]))) == 0.0


# holdings are 0 or at least 1e-6: binning float32 values near the smallest normal
# number (1e-38) loses them, and no income is that small
HOLDING = st.one_of(st.just(0.0), st.floats(1e-6, 100))


@settings(max_examples=40, deadline=None)
@given(n=st.sampled_from([2, 7, 50]), k=st.integers(0, 50), lo=HOLDING, hi=HOLDING)
def test_gini_two_point_distribution(n, k, lo, hi):
    """k agents hold lo, n - k hold hi: G = k (n - k) |hi - lo| / (n (n - 1) mu)."""
    k = min(k, n)
    x = np.array([lo] * k + [hi] * (n - k), np.float32)
    mu = x.astype(np.float64).mean()
    expected = 0.0 if mu == 0 else k * (n - k) * abs(float(x[-1]) - float(x[0])) / (n * (n - 1) * mu)
    assert float(gini(x)) == pytest.approx(expected, abs=1e-5)
    assert float(gini_binned(x)) == pytest.approx(expected, abs=1e-5)  # bins hold equal values: exact


@settings(max_examples=30, deadline=None)
@given(st.sampled_from([2, 9, 60]).flatmap(lambda n: st.lists(st.floats(0, 1e6, width=32), min_size=n, max_size=n)))
def test_gini_matches_pairwise_definition(values):
    assert float(gini(np.array(values, np.float32))) == pytest.approx(gini_pairs(values), abs=2e-5)


@pytest.mark.parametrize("n", [50, 300])  # the pairwise and the sorted implementation
def test_gini_keeps_batch_axes(n):
    x = np.random.default_rng(0).lognormal(0, 1, (3, 4, n)).astype(np.float32)
    g = np.asarray(gini(x))
    assert g.shape == (3, 4)
    np.testing.assert_allclose(g, [[gini_pairs(r) for r in row] for row in x], atol=1e-5)
    np.testing.assert_allclose(np.asarray(gini_binned(x)), g, atol=5e-3)


@pytest.mark.parametrize("dist", ["lognormal", "pareto", "with_zeros"])
def test_binned_gini_within_its_error_bound(dist):
    rng = np.random.default_rng(1)
    n = 20_000
    x = {"lognormal": rng.lognormal(0, 1.5, n), "pareto": rng.pareto(1.5, n) + 1,
         "with_zeros": np.where(rng.random(n) < 0.3, 0.0, rng.lognormal(0, 1, n))}[dist].astype(np.float32)
    exact = float(gini(x))
    for per_octave in (16, 32, 128):
        binned = float(gini_binned(x, bins_per_octave=per_octave))
        rho = 2.0 ** (1.0 / per_octave)
        # a lower bound, within (rho - 1)/2 * largest bin share (<= 1), up to float32 noise
        assert binned <= exact + 1e-5 and exact - binned <= (rho - 1) / 2 + 1e-5, (per_octave, exact, binned)
    assert abs(float(gini_binned(x, total=float(x.astype(np.float64).sum()))) - exact) < 3e-3


def test_binned_gini_rejects_bad_bins():
    with pytest.raises(ValueError, match="power of two"):
        metrics.gini_binned(jnp.ones(4), bins_per_octave=100)
    with pytest.raises(ValueError, match="octaves"):
        metrics.gini_binned(jnp.ones(4), octaves=0)


def test_atkinson_closed_forms():
    x = np.array([1.0, 2.0, 4.0, 9.0], np.float32)
    mu = x.mean()
    assert float(metrics.atkinson(x, 0.0)) == pytest.approx(0.0, abs=1e-6)
    geo = np.exp(np.log(x).mean())
    assert float(metrics.atkinson(x, 1.0)) == pytest.approx(1 - geo / mu, abs=1e-6)
    harmonic = 1 / np.mean(1 / x)
    assert float(metrics.atkinson(x, 2.0)) == pytest.approx(1 - harmonic / mu, abs=1e-6)
    half = np.mean(np.sqrt(x / mu)) ** 2
    assert float(metrics.atkinson(x, 0.5)) == pytest.approx(1 - half, abs=1e-6)
    assert float(metrics.atkinson(np.full(5, 3.0), 1.5)) == pytest.approx(0.0, abs=1e-6)
    # a zero income: the geometric and harmonic means vanish
    assert float(metrics.atkinson(np.array([0.0, 1.0, 2.0]), 1.0)) == pytest.approx(1.0)
    assert float(metrics.atkinson(np.array([0.0, 1.0, 2.0]), 3.0)) == pytest.approx(1.0)
    assert float(metrics.atkinson(np.zeros(3), 1.0)) == 0.0


def test_atkinson_traced_epsilon_and_batch():
    x = np.random.default_rng(2).lognormal(0, 1, (3, 40)).astype(np.float32)
    eps = jnp.array([0.5, 1.0, 2.0])
    batched = jax.jit(metrics.atkinson)(x, eps)
    for i, e in enumerate([0.5, 1.0, 2.0]):
        assert float(batched[i]) == pytest.approx(float(metrics.atkinson(x[i], e)), abs=1e-6)


def test_welfare_gdp_and_revenue():
    u = np.array([[1.0, -2.0, 3.0], [0.5, 0.5, 0.5]], np.float32)
    z = np.array([[0.5, 4.0, 10.0], [2.0, 0.0, 1.0]], np.float32)
    np.testing.assert_allclose(metrics.utilitarian_welfare(u), [2.0, 1.5])
    np.testing.assert_allclose(metrics.inverse_income_welfare(u, z), [1.0 - 0.5 + 0.3, 0.25 + 0.5 + 0.5], rtol=1e-6)
    np.testing.assert_allclose(metrics.gdp(z), [14.5, 3.0])
    x = np.array([5.0, 5.0, 5.0, 5.0], np.float32)
    assert float(metrics.equality_times_productivity(x)) == pytest.approx(5.0)
    assert float(metrics.equality_times_productivity(np.array([0, 0, 0, 8.0]))) == pytest.approx(0.0, abs=1e-6)
    # two agents 1 and 3: G = 2/4 = 0.5, mean 2
    assert float(metrics.equality_times_productivity(np.array([1.0, 3.0]))) == pytest.approx(1.0)
    cutoffs, rates = np.array([0.0, 10.0, 20.0]), np.array([0.1, 0.2, 0.5])
    incomes = np.array([5.0, 15.0, 30.0], np.float32)
    # 0.5 | 1 + 1 | 1 + 2 + 5
    assert float(metrics.tax_revenue(incomes, rates, cutoffs)) == pytest.approx(10.5)

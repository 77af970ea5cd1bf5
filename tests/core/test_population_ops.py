"""The pieces that make 10^6-agent steps cheap: ``agent_rows``, ``core.histogram``,
the hash RNG and ``Role(always_legal=True)`` in ``random_actions`` and the bench."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxagents
from jaxagents import random_actions
from jaxagents.core import Box, Discrete, Role
from jaxagents.core.columns import agent_rows
from jaxagents.core.histogram import COMPARE_MAX_BINS, counts, counts_and_sums
from jaxagents.core.rng import PACKED_PERMUTATION_MAX, permutation, uniforms


# --------------------------------------------------------------------------- agent_rows
def test_agent_rows_equals_the_concatenation():
    n, k = 6, 3
    idx = jnp.array([0, 2, 1, 5, -1, 2])  # 5 and -1 are out of range: all-zero code
    v = jnp.linspace(-1.0, 1.0, n)
    sig = jnp.array([0.25, 0.5, 0.25])
    tt = jnp.float32(0.7)
    got = jax.jit(lambda idx, v, sig, tt: agent_rows(2 * k + 2, {k: sig, 2 * k + 1: tt},
                                                     onehots=[(0, idx, k)], columns=[(2 * k, v)]))(idx, v, sig, tt)
    want = np.concatenate([np.eye(k)[np.clip(idx, 0, k - 1)] * ((idx >= 0) & (idx < k))[:, None],
                           np.broadcast_to(sig, (n, k)), np.asarray(v)[:, None], np.full((n, 1), 0.7)], 1)
    np.testing.assert_array_equal(np.asarray(got), want.astype(np.float32))
    # under vmap (VecEnv batches every env) the same rows per member
    batched = jax.vmap(lambda i: agent_rows(k + 1, {k: tt}, onehots=[(0, i, k)]))(jnp.stack([idx, idx[::-1]]))
    np.testing.assert_array_equal(np.asarray(batched[1, :, :k]), np.asarray(got[::-1, :k]))


@pytest.mark.parametrize("kwargs, match", [
    (dict(onehots=[(2, jnp.zeros(3, int), 3)]), "outside"),
    (dict(onehots=[(0, jnp.zeros(3, int), 3)], columns=[(1, jnp.zeros(3))]), "overlapping"),
    (dict(shared={0: jnp.zeros(2)}, columns=[(1, jnp.zeros(3))]), "overlapping"),
    (dict(shared={0: 1.0}), "at least one per-agent entry"),
])
def test_agent_rows_rejects_bad_layouts(kwargs, match):
    with pytest.raises(ValueError, match=match):
        agent_rows(4, **kwargs)


# --------------------------------------------------------------------------- histogram
@settings(max_examples=10, deadline=None)
@given(st.integers(1, COMPARE_MAX_BINS + 4), st.lists(st.integers(-2, 9), min_size=1, max_size=40))
def test_counts_and_sums_equal_bincount(num_bins, values):
    idx = np.asarray(values, np.int32)
    w = np.arange(len(values), dtype=np.float32) * 0.5
    inside = (idx >= 0) & (idx < num_bins)
    want_c = np.bincount(idx[inside], minlength=num_bins)[:num_bins]
    want_s = np.bincount(idx[inside], weights=w[inside], minlength=num_bins)[:num_bins]
    np.testing.assert_array_equal(np.asarray(counts(jnp.asarray(idx), num_bins)), want_c)
    c, s = counts_and_sums(jnp.asarray(idx), jnp.asarray(w), num_bins)
    np.testing.assert_array_equal(np.asarray(c), want_c)
    np.testing.assert_allclose(np.asarray(s), want_s, rtol=1e-6)


@pytest.mark.parametrize("num_bins", [3, 11])  # the compare path and the scatter path
def test_histograms_under_nested_vmap(num_bins):
    idx = jax.random.randint(jax.random.key(0), (2, 3, 50), 0, num_bins)
    w = jax.random.uniform(jax.random.key(1), (2, 3, 50))
    got = jax.jit(jax.vmap(jax.vmap(lambda i: counts(i, num_bins))))(idx)
    c, s = jax.jit(jax.vmap(jax.vmap(lambda i, v: counts_and_sums(i, v, num_bins))))(idx, w)
    for a in range(2):
        for b in range(3):
            i = np.asarray(idx[a, b])
            np.testing.assert_array_equal(np.asarray(got[a, b]), np.bincount(i, minlength=num_bins))
            np.testing.assert_array_equal(np.asarray(c[a, b]), np.bincount(i, minlength=num_bins))
            np.testing.assert_allclose(np.asarray(s[a, b]), np.bincount(i, np.asarray(w[a, b]), num_bins), rtol=1e-5)
    # an unbatched argument next to a batched one
    c1, _ = jax.vmap(lambda v: counts_and_sums(idx[0, 0], v, num_bins))(w[0])
    np.testing.assert_array_equal(np.asarray(c1[2]), np.bincount(np.asarray(idx[0, 0]), minlength=num_bins))


# --------------------------------------------------------------------------- rng
def test_hash_uniforms_any_shape_and_errors():
    u = np.asarray(uniforms(jax.random.key(0), (3, 1000), "hash"))
    assert u.shape == (3, 1000) and u.min() >= 0 and u.max() < 1
    assert abs(u.mean() - 0.5) < 0.02 and len(np.unique(u)) > 2990
    # the flat index is the counter: row-major reshape of the 1-D draw
    np.testing.assert_array_equal(u.reshape(-1), np.asarray(uniforms(jax.random.key(0), (3000,), "hash")))
    with pytest.raises(ValueError, match="rng must be one of"):
        uniforms(jax.random.key(0), (3,), "mt19937")


# --------------------------------------------------------------------------- always_legal
def test_role_promises_must_be_bool():
    with pytest.raises(TypeError, match="always_legal must be a bool"):
        Role(2, Box(0.0, 1.0, (1,)), Discrete(3), always_legal=1)
    with pytest.raises(TypeError, match="always_active must be a bool"):
        Role(2, Box(0.0, 1.0, (1,)), Discrete(3), always_active="yes")


@pytest.mark.parametrize("rng", ["threefry", "hash"])
def test_random_actions_always_legal_roles_skip_the_mask(rng):
    env = jaxagents.make("mf_epidemic", num_agents=3000)
    assert env.roles["agent"].always_legal
    _, ts = env.reset(jax.random.key(0))
    # the mask is not read: the sampler works without it, and uniformly over the actions
    bare = ts.replace(action_mask={})
    a = np.asarray(jax.jit(lambda k: random_actions(env, k, bare, rng=rng)["agent"])(jax.random.key(1)))
    n = env.roles["agent"].num_actions
    np.testing.assert_allclose(np.bincount(a, minlength=n) / a.size, 1 / n, atol=0.02)
    if rng == "threefry":  # the same draw as the masked path (which reads an all-True mask)
        masked = Role(3000, env.roles["agent"].observation_space, Discrete(n))
        shim = type("E", (), {"roles": {"agent": masked}})()
        b = np.asarray(random_actions(shim, jax.random.key(1), ts)["agent"])
        np.testing.assert_array_equal(a, b)


def test_bench_action_rng_is_recorded_and_checked():
    from jaxagents import bench

    res = bench.benchmark("mf_epidemic", num_envs=(2,), steps=3, repeats=1, env_kwargs={"num_agents": 64},
                          action_rng="hash")
    assert res.rows[0].action_rng == "hash" and "(hash)" in res.footer()
    with pytest.raises(ValueError, match="rng must be one of"):
        bench.benchmark("mf_epidemic", num_envs=(1,), steps=1, repeats=1, action_rng="fast")


# --------------------------------------------------------------------------- permutation
# compiled once per size (as the PPO update runs it): op-by-op dispatch compiled each op
# for each size, twice the time
_permutation = jax.jit(permutation, static_argnums=1)


@settings(max_examples=25, deadline=None)
@given(n=st.sampled_from([0, 1, 2, 3, 7, 64, 100, 1000, 4096, 5000, 70000]), seed=st.integers(0, 2**31 - 1))
def test_permutation_is_a_permutation(n, seed):
    perm = np.asarray(_permutation(jax.random.key(seed), n))
    assert perm.dtype == np.int32 and perm.shape == (n,)
    np.testing.assert_array_equal(np.sort(perm), np.arange(n))


def test_permutation_is_uniform():
    """All 24 orders of 4 items equally often (chi-square over 24,000 keys), every
    item equally often at every position of 100 (chi-square of a 100 x 100 table
    over 20,000 keys, the two-round regime's bits: n = 100 leaves 25 random bits),
    and reproducible per key."""
    from scipy import stats

    perms = np.asarray(jax.jit(jax.vmap(lambda k: permutation(k, 4)))(jax.random.split(jax.random.key(0), 24000)))
    codes = perms @ np.array([64, 16, 4, 1])
    _, freq = np.unique(codes, return_counts=True)
    assert len(freq) == 24 and stats.chisquare(freq).pvalue > 1e-3
    perms = np.asarray(jax.jit(jax.vmap(lambda k: permutation(k, 100)))(jax.random.split(jax.random.key(1), 20000)))
    table = np.zeros((100, 100))
    np.add.at(table, (perms, np.broadcast_to(np.arange(100), perms.shape)), 1)
    chi2 = ((table - 200.0) ** 2 / 200.0).sum()
    assert stats.chi2.sf(chi2, 99 * 99) > 1e-3
    np.testing.assert_array_equal(perms[0], np.asarray(permutation(jax.random.split(jax.random.key(1), 20000)[0], 100)))
    assert PACKED_PERMUTATION_MAX == 2**24

"""Advantage estimators against hand-computed cases and a loop reference."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxagents import advantages as A


def ref_gae(r, v, done_term, done_trunc, last, final, g, lam):
    """Textbook GAE, one trajectory, loops (independent of the scan)."""
    T = len(r)
    adv = np.zeros(T)
    nxt_adv, nxt_v = 0.0, last
    for t in reversed(range(T)):
        if done_term[t]:
            delta = r[t] - v[t]
            adv[t] = delta
        elif done_trunc[t]:
            delta = r[t] + g * final[t] - v[t]
            adv[t] = delta
        else:
            delta = r[t] + g * nxt_v - v[t]
            adv[t] = delta + g * lam * nxt_adv
        nxt_adv, nxt_v = adv[t], v[t]
    return adv


def test_gae_hand_computed():
    r = jnp.array([1.0, 2.0, 3.0])
    v = jnp.array([0.5, 1.0, 1.5])
    z = jnp.zeros(3, bool)
    adv, tgt = A.gae(r, v, z, z, 2.0, 0.9, 0.8)
    d2 = 3 + 0.9 * 2 - 1.5
    d1 = 2 + 0.9 * 1.5 - 1.0
    d0 = 1 + 0.9 * 1.0 - 0.5
    a2 = d2
    a1 = d1 + 0.72 * a2
    a0 = d0 + 0.72 * a1
    np.testing.assert_allclose(adv, [a0, a1, a2], rtol=1e-6)
    np.testing.assert_allclose(tgt, np.array([a0, a1, a2]) + np.array(v), rtol=1e-6)


def test_gae_termination_stops_truncation_bootstraps():
    r = jnp.array([1.0, 1.0, 1.0, 1.0])
    v = jnp.array([0.1, 0.2, 0.3, 0.4])
    term = jnp.array([False, True, False, False])
    trunc = jnp.array([False, False, False, True])
    final = jnp.array([0.0, 9.0, 0.0, 5.0])  # final[1] must be ignored: terminated
    adv, _ = A.gae(r, v, term, trunc, 7.0, 0.9, 0.5, final_values=final)
    # t=1 terminated: no bootstrap; t=3 truncated: bootstrap from final[3]=5, not last=7
    np.testing.assert_allclose(adv[1], 1.0 - 0.2, rtol=1e-6)
    np.testing.assert_allclose(adv[3], 1.0 + 0.9 * 5.0 - 0.4, rtol=1e-6)
    np.testing.assert_allclose(adv, ref_gae(np.ones(4), np.array(v), np.array(term), np.array(trunc), 7.0, np.array(final), 0.9, 0.5), rtol=1e-5)


_gae_jit = jax.jit(lambda *a, final_values: A.gae(*a, final_values=final_values))


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**31 - 1), st.floats(0.5, 1.0), st.floats(0.0, 1.0))
def test_gae_matches_loop_reference(seed, gamma, lam):
    rng = np.random.default_rng(seed)
    T, B = 12, 3
    r = rng.normal(size=(T, B))
    v = rng.normal(size=(T, B))
    term = rng.random((T, B)) < 0.15
    trunc = (rng.random((T, B)) < 0.1) & ~term
    final = rng.normal(size=(T, B))
    last = rng.normal(size=B)
    adv, _ = _gae_jit(r, v, term, trunc, last, gamma, lam, final_values=final)
    for b in range(B):
        ref = ref_gae(r[:, b], v[:, b], term[:, b], trunc[:, b], last[b], final[:, b], gamma, lam)
        np.testing.assert_allclose(np.asarray(adv)[:, b], ref, rtol=1e-4, atol=1e-4)


def test_gae_over_own_turns():
    # the agent acts at t=0 and t=2; rewards received in between belong to turn 0
    r = jnp.array([1.0, 2.0, 3.0])
    v = jnp.array([0.5, 99.0, 1.5])  # v[1] is another agent's turn: never used
    active = jnp.array([True, False, True])
    z = jnp.zeros(3, bool)
    adv, tgt = A.gae(r, v, z, z, 2.0, 0.9, 0.8, active=active)
    a2 = 3 + 0.9 * 2.0 - 1.5
    a0 = (1 + 2) + 0.9 * 1.5 - 0.5 + 0.9 * 0.8 * a2
    np.testing.assert_allclose(adv, [a0, 0.0, a2], rtol=1e-6)
    assert float(tgt[1]) == 0.0


def test_turn_returns_kuhn_like():
    # two seats alternate; the game ends at t=2 paying +1 / -1, then a new game
    r0 = jnp.array([0.0, 0.0, 1.0, 0.0])
    act0 = jnp.array([True, False, True, False])
    r1 = jnp.array([0.0, 0.0, -1.0, 0.0])
    act1 = jnp.array([False, True, False, True])
    term = jnp.array([False, False, True, False])
    z = jnp.zeros(4, bool)
    g0, c0 = A.turn_returns(r0, term, z, 0.5, active=act0)
    g1, c1 = A.turn_returns(r1, term, z, 0.5, active=act1)
    # seat 0's turns: t=0 then t=2 (gets +1 at t=2): G2 = 1, G0 = 0 + 0.5 * 1
    np.testing.assert_allclose(g0, [0.5, 0.0, 1.0, 0.0])
    # seat 1 acted at t=1 and the game ended at t=2 before its next turn: G1 = -1
    np.testing.assert_allclose(g1, [0.0, -1.0, 0.0, 0.0])
    np.testing.assert_array_equal(c1, [True, True, True, False])  # t=3's game is unfinished


def test_rae_pre_update_baseline_and_batch_mean():
    b = jnp.array([[0.5, -0.5]])
    adv = A.rae_advantages(jnp.array([1.0, -1.0, 1.0]), jnp.zeros(3, int), jnp.array([0, 1, 0]), b)
    np.testing.assert_allclose(adv, [0.5, -0.5, 0.5])
    new = A.rae_update(b, jnp.array([1.0, 0.0, 9.0]), jnp.zeros(3, int), jnp.array([0, 0, 1]), jnp.array([True, True, False]), 0.9)
    # role 0: mean of (1, 0) = 0.5 -> 0.9 * 0.5 + 0.1 * 0.5; role 1 had no real episode: unchanged
    np.testing.assert_allclose(new, [[0.5, -0.5]])
    new = A.rae_update(b, jnp.array([1.0, 1.0]), jnp.zeros(2, int), jnp.array([0, 1]), jnp.array([True, True]), 0.9)
    np.testing.assert_allclose(new, [[0.9 * 0.5 + 0.1, 0.9 * -0.5 + 0.1]], rtol=1e-6)


def test_rae_identical_across_devices():
    # two "devices" with different batches must end with the same table
    R = jnp.array([[1.0, 3.0], [5.0, 7.0]])
    upd = jax.vmap(lambda r: A.rae_update(jnp.zeros((1, 1)), r, jnp.zeros(2, int), jnp.zeros(2, int), jnp.ones(2, bool), 0.5, axis_name="d"), axis_name="d")
    out = upd(R)
    np.testing.assert_allclose(out[0], out[1])
    np.testing.assert_allclose(out[0], [[0.5 * 4.0]])


def test_normalize_per_role_uses_own_statistics():
    adv = jnp.array([1.0, 2.0, 3.0, 100.0, 200.0, 999.0])
    roles = jnp.array([0, 0, 0, 1, 1, 1])
    mask = jnp.array([True, True, True, True, True, False])
    out = np.asarray(A.normalize_per_role(adv, roles, 2, mask))
    np.testing.assert_allclose(out[:3], (np.array([1, 2, 3]) - 2) / np.std([1, 2, 3]), rtol=1e-5)
    np.testing.assert_allclose(out[3:5], [-1.0, 1.0], rtol=1e-5)
    assert out[5] == 0.0


def test_grpo_edge_cases():
    R = jnp.array([1.0, 3.0, 5.0, 2.0, 2.0])
    g = jnp.array([0, 0, 1, 2, 2])
    out = np.asarray(A.grpo(R, g, 3))
    np.testing.assert_allclose(out[:2], [-1.0, 1.0], rtol=1e-5)  # mean 2, std 1
    assert out[2] == 5.0  # single-episode group: mean 0, std 1
    np.testing.assert_allclose(out[3:], [0.0, 0.0])  # zero std: divide by 1
    np.testing.assert_allclose(A.grpo(R, g, 3, scale=False)[:2], [-1.0, 1.0])


def test_gigpo_anchor_groups():
    ep_adv = jnp.array([0.5, 0.5, -0.5, -0.5])
    step_ret = jnp.array([1.0, 2.0, 3.0, 7.0])
    group = jnp.array([0, 0, 0, 0])
    # steps 0 and 2 are the same state; steps 1 and 3 are singletons
    h = A.hash_rows(jnp.array([[1, 0], [2, 0], [1, 0], [3, 0]]))
    out = np.asarray(A.gigpo(ep_adv, step_ret, group, h, jnp.ones(4, bool), omega=2.0))
    np.testing.assert_allclose(out, [0.5 + 2 * -1.0, 0.5 + 0.0, -0.5 + 2 * 1.0, -0.5 + 0.0], rtol=1e-5)


def test_hash_rows():
    h = np.asarray(A.hash_rows(jnp.array([[1, 2, 3], [1, 2, 3], [3, 2, 1], [0, 0, 0]])))
    assert h[0] == h[1] and len(set(h[1:].tolist())) == 3

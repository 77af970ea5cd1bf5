"""Q(lambda) targets: a hand-computed case with termination and truncation, the
lambda = 0 / lambda = 1 limits, an independent forward-view reference (the
lambda-weighted mixture of n-step returns) on random data, and turn-based
(inactive) steps."""

import numpy as np
import pytest

from jaxagents.learners.value_based.qlambda import q_lambda


def test_hand_computed_termination_and_truncation():
    # column 0: terminated after t=1, truncated after t=3 (cut at an obs worth 60)
    # column 1: no episode end; gamma = lambda = 0.5
    r = np.array([[1, 1], [2, 1], [3, 1], [4, 1]], np.float32)
    q = np.array([[10, 2], [20, 2], [30, 2], [40, 2]], np.float32)
    term = np.array([[0, 0], [1, 0], [0, 0], [0, 0]], bool)
    trunc = np.array([[0, 0], [0, 0], [0, 0], [1, 0]], bool)
    final = np.array([[0, 0], [0, 0], [0, 0], [60, 0]], np.float32)
    g = q_lambda(r, q, term, trunc, np.array([50, 4], np.float32), 0.5, 0.5, final_q_max=final)
    # t=3: 4 + .5*60 = 34 (truncation bootstraps from the cut observation, not q[t+1] or 50)
    # t=2: 3 + .5*(.5*40 + .5*34) = 21.5; t=1: 2 (termination); t=0: 1 + .5*(.5*20 + .5*2) = 6.5
    # column 1: 3, 1 + .5*(.5*2 + .5*3) = 2.25, 1 + .5*(1 + 1.125) = 2.0625, 2.015625
    np.testing.assert_allclose(np.asarray(g), [[6.5, 2.015625], [2, 2.0625], [21.5, 2.25], [34, 3]], rtol=1e-6)
    # termination wins when both flags are set; without final_q_max truncation bootstraps from 0
    both = q_lambda(r, q, term | trunc, trunc, np.array([50, 4]), 0.5, 0.5, final_q_max=final)
    assert float(both[3, 0]) == 4.0
    assert float(q_lambda(r, q, term, trunc, np.array([50, 4]), 0.5, 0.5)[3, 0]) == 4.0


def _episode(rng, T, B):
    r = rng.normal(size=(T, B)).astype(np.float32)
    q = rng.normal(size=(T, B)).astype(np.float32)
    term = rng.random((T, B)) < 0.2
    trunc = rng.random((T, B)) < 0.2
    final = rng.normal(size=(T, B)).astype(np.float32)
    last = rng.normal(size=B).astype(np.float32)
    return r, q, term, trunc, final, last


def _forward_view(r, q, term, trunc, final, last, gamma, lam):
    """Reference: G = sum_n (1-lam) lam^(n-1) G^(n) + lam^(N-1) G^(N), with the n-step
    returns G^(n) stopping at an episode end (bootstrapping there only on truncation)."""
    T, B = r.shape
    out = np.zeros((T, B))
    for b in range(B):
        for t in range(T):
            N = T - t
            nstep, ret, disc, end = [], 0.0, 1.0, None
            for n in range(1, N + 1):
                k = t + n - 1
                if end is None:
                    ret += disc * r[k, b]
                    disc *= gamma
                    if term[k, b]:
                        end = ret
                    elif trunc[k, b]:
                        end = ret + disc * final[k, b]
                if end is not None:
                    nstep.append(end)
                else:
                    nstep.append(ret + disc * (q[k + 1, b] if k + 1 < T else last[b]))
            w = [(1 - lam) * lam ** (n - 1) for n in range(1, N)] + [lam ** (N - 1)]
            out[t, b] = sum(wi * gi for wi, gi in zip(w, nstep))
    return out


@pytest.mark.parametrize("lam", [0.0, 0.3, 1.0])
def test_forward_view_reference(lam):
    rng = np.random.default_rng(0)
    r, q, term, trunc, final, last = _episode(rng, 9, 5)
    g = q_lambda(r, q, term, trunc, last, 0.9, lam, final_q_max=final)
    np.testing.assert_allclose(np.asarray(g), _forward_view(r, q, term, trunc & ~term, final, last, 0.9, lam), rtol=1e-5, atol=1e-5)


def test_lambda_zero_is_one_step_td_and_one_is_the_discounted_return():
    rng = np.random.default_rng(1)
    r, q, term, trunc, final, last = _episode(rng, 7, 4)
    trunc = trunc & ~term
    next_q = np.concatenate([q[1:], last[None]])
    td = r + 0.9 * np.where(term, 0.0, np.where(trunc, final, next_q))
    np.testing.assert_allclose(np.asarray(q_lambda(r, q, term, trunc, last, 0.9, 0.0, final_q_max=final)), td, rtol=1e-6)
    mc, g = np.zeros_like(r), last.copy()  # the return to the episode's end, bootstrapped only where cut
    for t in reversed(range(7)):
        g = r[t] + 0.9 * np.where(term[t], 0.0, np.where(trunc[t], final[t], g))
        mc[t] = g
    np.testing.assert_allclose(np.asarray(q_lambda(r, q, term, trunc, last, 0.9, 1.0, final_q_max=final)), mc, rtol=1e-5)


def test_turns_skip_inactive_steps():
    # the agent acts at t=0 and t=2; rewards between its turns are summed undiscounted,
    # discounting and bootstrapping count its own turns only; inactive targets are 0
    r = np.array([1, 2, 3, 4], np.float32)[:, None]
    q = np.array([10, -99, 30, -99], np.float32)[:, None]
    active = np.array([1, 0, 1, 0], bool)[:, None]
    no = np.zeros((4, 1), bool)
    td = q_lambda(r, q, no, no, np.array([50.0]), 0.5, 0.0, active=active)
    np.testing.assert_allclose(np.asarray(td)[:, 0], [3 + 0.5 * 30, 0, 7 + 0.5 * 50, 0])
    mc = q_lambda(r, q, no, no, np.array([50.0]), 0.5, 1.0, active=active)
    np.testing.assert_allclose(np.asarray(mc)[:, 0], [3 + 0.5 * 32, 0, 32, 0])

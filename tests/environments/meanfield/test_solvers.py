"""Equilibrium solvers: exploitability is a sound certificate and both solvers drive it
down on the crowd game; everything is jit-able and vmaps over params (a sweep)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxagents_environments.meanfield import CrowdModelling, Opinion
from jaxagents_environments.meanfield import solvers

ITERS = 30


@pytest.fixture(scope="module")
def crowd():
    env = CrowdModelling(num_agents=16)
    params = env.default_params()
    fp = jax.jit(solvers.fictitious_play, static_argnums=(0, 2))(env, params, ITERS)
    md = jax.jit(solvers.mirror_descent, static_argnums=(0, 2))(env, params, ITERS, 1.0)
    return env, params, fp, md


@pytest.mark.parametrize("solver", ["fp", "md"])
def test_exploitability_decreases_on_the_crowd_game(crowd, solver):
    env, params, fp, md = crowd
    expl = np.asarray((fp if solver == "fp" else md).exploitability)
    assert expl[0] == pytest.approx(2.78668, abs=1e-3)  # uniform policy, exact value (see test_crowd.py)
    assert np.all(expl >= -1e-4)
    assert expl[-1] < 0.05 * expl[0]
    assert expl[ITERS // 3:].max() < expl[:5].min()  # a trend, not a lucky last iterate
    running_min = np.minimum.accumulate(expl)
    assert running_min[-1] < running_min[ITERS // 2] < running_min[5]


def test_equilibrium_flow_spreads_the_crowd(crowd):
    """The crowd-aversion term pushes the equilibrium towards a flatter distribution than
    the positional reward alone would (everybody at the centre)."""
    env, params, fp, md = crowd
    for res in (fp, md):
        mu = np.asarray(res.mu)
        np.testing.assert_allclose(mu.sum(-1), 1.0, atol=1e-5)
        assert abs(int(mu[-1].argmax()) - env.size // 2) <= 1  # the crowd gathers at the centre
        assert mu[-1].max() < 0.35 and mu[-1].min() > 0.02  # but spreads out


def test_exploitability_is_a_sound_certificate(crowd):
    env, params, fp, _ = crowd
    keys = jax.random.split(jax.random.key(0), 8)
    shape = (env.horizon, env.num_states, env.num_actions)
    policies = jax.vmap(lambda k: jax.nn.softmax(3 * jax.random.normal(k, shape)))(keys)
    ev = jax.jit(jax.vmap(solvers.evaluate, in_axes=(None, None, 0)), static_argnums=0)(env, params, policies)
    assert np.all(np.asarray(ev.exploitability) > 0)
    # the value of the best response to a flow, played by one agent against that flow, is
    # the best-response value; and its Q-values are maximised by it
    np.testing.assert_allclose(np.asarray(ev.br_value), np.einsum("ns,ns->n", ev.mu[:, 0], ev.v_br[:, 0]), rtol=1e-5)
    greedy_q = jnp.sum(ev.br_policy * ev.q_br, -1)
    np.testing.assert_allclose(np.asarray(greedy_q), np.asarray(ev.v_br[:, :-1]), rtol=1e-5)


def test_dominant_strategy_game_is_solved_exactly():
    """No social term: the equilibrium is to move to one's preferred level now."""
    env = Opinion(num_agents=8, num_levels=5, num_types=2, horizon=4)
    params = env.default_params().replace(conformity=jnp.float32(0.0), switch_cost=jnp.float32(0.05),
                                          preference=jnp.asarray([1.0, 3.0]), type_probs=jnp.asarray([0.5, 0.5]))
    res = jax.jit(solvers.mirror_descent, static_argnums=(0, 2))(env, params, 40, 2.0)
    assert float(res.exploitability[-1]) < 1e-3
    pi = np.asarray(res.policy).reshape(4, 2, 5, 5)
    assert np.all(pi[:, 0, :, 1] > 0.95) and np.all(pi[:, 1, :, 3] > 0.95)


def test_solvers_vmap_over_params(crowd):
    """A sweep: one compiled program, one equilibrium per crowd-aversion coefficient
    (mirror descent: smooth in the params, so the batched run equals the single one)."""
    env, params, _, md = crowd
    aversions = jnp.asarray([0.5, 1.0, 2.0])
    sweep = jax.jit(jax.vmap(lambda c: solvers.mirror_descent(env, params.replace(crowd_aversion=c), ITERS, 1.0)))(aversions)
    np.testing.assert_allclose(np.asarray(sweep.exploitability[1]), np.asarray(md.exploitability), rtol=1e-3, atol=1e-4)
    peaks = np.asarray(sweep.mu[:, -1].max(-1))
    assert peaks[0] > peaks[1] > peaks[2]  # more aversion, flatter crowd

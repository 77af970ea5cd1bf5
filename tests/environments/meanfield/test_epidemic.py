"""Epidemic with behaviour: the SIR final-size relation, a one-step game solved by brute
force, and the equilibrium against the social optimum (price of anarchy)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxagents_environments.meanfield import Epidemic
from jaxagents_environments.meanfield import solvers

evaluate = jax.jit(solvers.evaluate, static_argnums=0)  # welfare = .value, the flow = .mu


def test_full_contact_flow_matches_the_sir_final_size_relation():
    """With everyone at full contact the distributional view is the SIR ODE discretised
    with exact exponential transition probabilities; its final susceptible fraction
    solves ``S_inf = S_0 exp(-R0 (1 - S_inf))`` (Kermack-McKendrick) up to O(dt)."""
    dt, steps = 0.05, 5000  # 250 time units
    env = Epidemic(num_agents=8, horizon=steps)
    s0, i0, beta, gamma = 0.999, 0.001, 0.3, 0.1
    params = env.default_params().replace(dt=jnp.float32(dt), beta=jnp.float32(beta), gamma=jnp.float32(gamma),
                                          init_dist=jnp.asarray([s0, i0, 0.0]))
    policy = jnp.zeros((steps, 3, env.num_actions)).at[..., -1].set(1.0)
    mu = np.asarray(jax.jit(solvers.forward, static_argnums=0)(env, params, policy)[0])
    s_inf = 0.5
    for _ in range(500):
        s_inf = s0 * np.exp(-beta / gamma * (1.0 - s_inf))
    assert mu[-1, 1] < 1e-6  # the epidemic is over
    assert mu[-1, 0] == pytest.approx(s_inf, abs=1.5e-3)
    np.testing.assert_allclose(mu.sum(-1), 1.0, atol=1e-4)


# ------------------------------------------------------------------ one-step game
CONTACT = np.array([0.0, 1.0])
BETA, KAPPA, DELTA, INIT = 2.0, 10.0, 0.6, np.array([0.7, 0.3, 0.0])


def _welfare(p_s, q_i):
    """Population reward of the one-step game, ``p_s``/``q_i`` = P(full contact) of S/I (numpy)."""
    pressure = INIT[1] * q_i  # contact-weighted infected fraction
    infect = 1.0 - np.exp(-BETA * pressure)  # for a susceptible at full contact
    s_cost = p_s * KAPPA * infect + (1 - p_s) * DELTA
    i_cost = (1 - q_i) * DELTA
    return -(INIT[0] * s_cost + INIT[1] * i_cost)


@pytest.fixture(scope="module")
def one_step():
    env = Epidemic(num_agents=8, num_levels=2, horizon=1)
    params = env.default_params().replace(beta=jnp.float32(BETA), infection_cost=jnp.float32(KAPPA),
                                          distancing_cost=jnp.float32(DELTA), contact=jnp.asarray(CONTACT, jnp.float32),
                                          init_dist=jnp.asarray(INIT, jnp.float32))
    return env, params


def test_one_step_equilibrium_matches_brute_force(one_step):
    env, params = one_step
    # infected agents risk nothing: full contact; susceptibles best-respond to that
    pressure = INIT[1] * 1.0
    s_full = KAPPA * (1 - np.exp(-BETA * pressure)) < DELTA
    eq = jax.jit(solvers.mirror_descent, static_argnums=(0, 2))(env, params, 200, 1.0)
    pi = np.asarray(eq.policy)[0]
    assert pi[1, 1] > 0.99  # infected: full contact
    assert pi[0, 1] == pytest.approx(float(s_full), abs=0.01)
    assert float(eq.exploitability[-1]) < 1e-3
    assert float(evaluate(env, params, eq.policy).value) == pytest.approx(_welfare(float(s_full), 1.0), abs=1e-3)


def test_one_step_social_optimum_matches_brute_force(one_step):
    env, params = one_step
    grid = np.linspace(0.0, 1.0, 401)
    w = _welfare(grid[:, None], grid[None, :])
    best = w.max()
    so = jax.jit(solvers.social_optimum, static_argnums=(0, 2))(env, params, 400, 0.1)
    assert float(so.welfare) == pytest.approx(best, abs=2e-3)
    i, j = np.unravel_index(w.argmax(), w.shape)
    pi = np.asarray(so.policy)[0]
    assert pi[0, 1] == pytest.approx(grid[i], abs=0.05) and pi[1, 1] == pytest.approx(grid[j], abs=0.05)


# ------------------------------------------------------------------ price of anarchy
@pytest.fixture(scope="module")
def default_game():
    env = Epidemic(num_agents=8, horizon=60)
    params = env.default_params().replace(beta=jnp.float32(0.5))
    eq = jax.jit(solvers.fictitious_play, static_argnums=(0, 2))(env, params, 60)
    so = jax.jit(solvers.social_optimum, static_argnums=(0, 2))(env, params, 300, 0.1)
    return env, params, eq, so


def test_equilibrium_is_selfish_and_the_planner_isolates_the_infected(default_game):
    env, params, eq, so = default_game
    expl = np.asarray(eq.exploitability)
    assert expl[-1] < 0.05 * expl[0]
    contact = np.asarray(params.contact)
    eq_contact = np.asarray(eq.policy) @ contact  # [H, K] mean contact per state
    so_contact = np.asarray(so.policy) @ contact
    # infected agents gain nothing from distancing: (almost) full contact at equilibrium
    assert eq_contact[:, env.I].min() > 0.9
    # susceptibles do distance at the peak of the epidemic
    assert eq_contact[:, env.S].min() < 0.9
    # the planner counts the infections the infected cause: it isolates them
    assert so_contact[:, env.I].mean() < 0.1
    eq_flow, so_flow = evaluate(env, params, eq.policy).mu, evaluate(env, params, so.policy).mu
    assert float(so_flow[:, env.I].max()) < 0.5 * float(eq_flow[:, env.I].max())


def test_price_of_anarchy(default_game):
    env, params, eq, so = default_game
    w_eq = float(evaluate(env, params, eq.policy).value)
    w_so = float(evaluate(env, params, so.policy).value)
    assert w_so > w_eq  # the optimum found beats the equilibrium
    assert float(so.welfare) == pytest.approx(w_so, rel=1e-4)
    poa = float(jax.jit(solvers.price_of_anarchy, static_argnums=0)(env, params, eq.policy, so.policy))
    assert poa == pytest.approx(w_eq / w_so, rel=1e-4)
    assert poa > 2.0
    # without an infection cost full contact is both the equilibrium and the optimum (welfare 0)
    free = params.replace(infection_cost=jnp.float32(0.0))
    full = evaluate(env, free, jnp.zeros_like(eq.policy).at[..., -1].set(1.0))
    assert float(full.exploitability) == pytest.approx(0.0, abs=1e-6)
    assert float(full.value) == pytest.approx(0.0, abs=1e-6)

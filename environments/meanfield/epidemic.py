"""Epidemic with behaviour: SIR / SEIR where every agent chooses its contact level.

Rules. Health states ``S, I, R`` (``model="sir"``) or ``S, E, I, R`` (``"seir"``).
Each step every agent picks a contact level ``a`` in ``0..L-1``, with contact
intensity ``c_a = params.contact[a]`` in ``[0, 1]`` (1 = normal life). The infection
hazard of a susceptible agent is its own contact times the *contact-weighted* infected
fraction — what infected agents do matters as much as how many there are:

    lambda_i = beta * c_{a_i} * I_c,      I_c = (1/N) sum_{j infected} c_{a_j}

and over one step of length ``dt`` (exponential waiting times):

    S -> E (SEIR) or I (SIR)  with prob. 1 - exp(-lambda_i dt)
    E -> I                    with prob. 1 - exp(-sigma dt)
    I -> R                    with prob. 1 - exp(-gamma dt)
    R -> S                    with prob. 1 - exp(-omega dt)   (waning immunity; 0 = none)

Reward (a cost): ``- infection_cost * [infected this step] - distancing_cost * (1 - c_a)^2``.
In the distributional view the infection term is its expectation
``- infection_cost * (1 - exp(-lambda dt))`` for susceptible agents.

An infected agent gains nothing from distancing, so at the mean-field equilibrium it
keeps full contact; a planner (mean-field control) also counts the infections it
causes. ``solvers.social_optimum`` and ``solvers.price_of_anarchy`` measure the gap.

Out-of-range actions are clipped to ``[0, L-1]`` and counted in
``info["illegal_action"]``. There is no other illegal action (mask all True).

Observation (role ``"agent"``, ``num_agents`` agents) ``f32[2 K + 1]``, every entry in
``[0, 1]`` (``K`` health states, in the order ``S, I, R``, or ``S, E, I, R`` for SEIR):
entries ``0 .. K-1`` are the one-hot of the agent's own health state, ``K .. 2K-1`` the
population histogram ``mu_t`` (the fraction of all agents in each state) and the last
``t / H`` (``H = horizon``). The episode terminates after ``horizon`` steps.

Actions ``Discrete(L)`` (``L = num_levels``): action ``a`` is contact level ``a``, of
intensity ``params.contact[a]`` (default ``linspace(0, 1, L)``: 0 isolates completely,
``L - 1`` is normal life).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxagents.core import Box, Discrete, Role
from jaxagents.core.columns import agent_rows
from jaxagents_environments.meanfield.base import (
    ROLE, MeanFieldEnv, check_distribution, check_int_arg, check_range, check_shape, histogram, lookup,
    sample_from_rows,
)

MODELS = {"sir": ("S", "I", "R"), "seir": ("S", "E", "I", "R")}


@struct.dataclass
class EpidemicParams:
    """Rates are per unit time, all >= 0; ``dt`` > 0.

    Attributes:
        beta: ``f32[]`` transmission rate (>= 0): a susceptible agent's infection hazard
            is ``beta`` times its contact times the contact-weighted infected fraction.
        sigma: ``f32[]`` incubation rate, E -> I (>= 0; SEIR only, unused by SIR).
        gamma: ``f32[]`` recovery rate, I -> R (>= 0).
        omega: ``f32[]`` waning-immunity rate, R -> S (>= 0; 0: immunity is permanent).
        dt: ``f32[]`` step length.
        contact: ``f32[L]`` contact intensity of each action, in ``[0, 1]``.
        infection_cost: ``f32[]`` cost of being infected in a step (>= 0).
        distancing_cost: ``f32[]`` weight of the distancing cost ``(1 - c_a)^2`` (>= 0).
        init_dist: ``f32[K]`` initial distribution over health states (sums to 1).
    """

    beta: jax.Array
    sigma: jax.Array
    gamma: jax.Array
    omega: jax.Array
    dt: jax.Array
    contact: jax.Array
    infection_cost: jax.Array
    distancing_cost: jax.Array
    init_dist: jax.Array


@struct.dataclass
class EpidemicState:
    """``health``: ``i32[N]`` state index of every agent (order of ``state_names``);
    ``hist``: ``f32[K]`` its histogram; ``t``: ``i32[]``."""

    health: jax.Array
    hist: jax.Array
    t: jax.Array


class Epidemic(MeanFieldEnv):
    """SIR/SEIR with chosen contact levels (see the module docstring).

    Args:
        num_agents: ``N`` >= 1.
        model: ``"sir"`` or ``"seir"``.
        num_levels: number of contact levels ``L`` >= 2 (default contacts
            ``linspace(0, 1, L)``).
        horizon: steps per episode, >= 1.
        rng: per-agent random numbers, ``"hash"`` or ``"threefry"``.
    """

    def __init__(self, num_agents: int = 1000, model: str = "sir", num_levels: int = 5, horizon: int = 100,
                 rng: str = "hash"):
        self._setup(num_agents, horizon, rng)
        if model not in MODELS:
            raise ValueError(f"model must be one of {sorted(MODELS)}, got {model!r}")
        self.model = model
        self.state_names = MODELS[model]
        self.num_states = K = len(self.state_names)
        self.num_actions = check_int_arg("num_levels", num_levels, 2)
        self.legal_table = np.ones((K, self.num_actions), bool)
        idx = {name: i for i, name in enumerate(self.state_names)}
        self.S, self.I, self.R = idx["S"], idx["I"], idx["R"]
        self.E = idx.get("E", self.I)  # where infection leads
        self.roles = {ROLE: Role(self.n, Box(0.0, 1.0, (2 * K + 1,), jnp.float32), Discrete(self.num_actions), always_legal=True,
                                 always_active=True)}

    # ------------------------------------------------------------------ params
    def default_params(self) -> EpidemicParams:
        init = np.zeros(self.num_states, np.float32)
        init[self.S], init[self.I] = 0.99, 0.01
        f = lambda v: jnp.asarray(v, jnp.float32)
        return EpidemicParams(beta=f(0.3), sigma=f(0.2), gamma=f(0.1), omega=f(0.0), dt=f(1.0),
                              contact=f(np.linspace(0.0, 1.0, self.num_actions)),
                              infection_cost=f(50.0), distancing_cost=f(1.0), init_dist=f(init))

    def check_params(self, params: EpidemicParams) -> None:
        for name in ("beta", "sigma", "gamma", "omega", "dt", "infection_cost", "distancing_cost"):
            check_shape(name, getattr(params, name), ())
            check_range(name, getattr(params, name), 0.0)
        if np.asarray(params.dt) <= 0:
            raise ValueError(f"params.dt must be > 0, got {np.asarray(params.dt)}")
        check_shape("contact", params.contact, (self.num_actions,))
        check_range("contact", params.contact, 0.0, 1.0)
        check_distribution("params.init_dist", params.init_dist, self.num_states)

    # ------------------------------------------------------------------ model
    def initial_distribution(self, params):
        return params.init_dist

    def _pressure(self, nu, params):
        """Contact-weighted infected fraction ``I_c`` from ``nu[K, L]``."""
        return nu[self.I] @ params.contact

    def _probs(self, pressure, params):
        """``(p_inf f32[L], p_ei, p_ir, p_rs)`` one-step transition probabilities."""
        p_inf = 1.0 - jnp.exp(-params.beta * params.contact * pressure * params.dt)
        rate = lambda r: 1.0 - jnp.exp(-r * params.dt)
        return p_inf, rate(params.sigma), rate(params.gamma), rate(params.omega)

    def transition(self, nu, t, params):
        K, L = self.num_states, self.num_actions
        p_inf, p_ei, p_ir, p_rs = self._probs(self._pressure(nu, params), params)
        eye = jnp.eye(K, dtype=jnp.float32)

        def leave(src, dst, p):  # [L, K]: stay with 1 - p, move to dst with p
            p = jnp.broadcast_to(p, (L,))[:, None]
            return (1.0 - p) * eye[src] + p * eye[dst]

        rows = {self.S: leave(self.S, self.E, p_inf), self.I: leave(self.I, self.R, p_ir),
                self.R: leave(self.R, self.S, p_rs)}
        if self.model == "seir":
            rows[self.E] = leave(self.E, self.I, p_ei)
        return jnp.stack([rows[k] for k in range(K)])

    def reward(self, nu, mu_next, t, params):
        p_inf = self._probs(self._pressure(nu, params), params)[0]
        distancing = params.distancing_cost * (1.0 - params.contact) ** 2  # [L]
        susceptible = (jnp.arange(self.num_states) == self.S)[:, None]
        return -jnp.where(susceptible, params.infection_cost * p_inf, 0.0) - distancing[None, :]

    def agent_states(self, state):
        return state.health

    # ------------------------------------------------------------------ agent view
    def _obs(self, health, hist, t):
        K = self.num_states
        summary = jnp.append(hist, jnp.minimum(t, self.horizon) / self.horizon).astype(jnp.float32)
        return agent_rows(2 * K + 1, {K: summary}, onehots=[(0, health, K)])

    def _info(self, hist, pressure, illegal, mean_reward):
        f = lambda v: jnp.asarray(v, jnp.float32)
        return {"histogram": hist, "infection_pressure": f(pressure), "illegal_action": f(illegal),
                "mean_reward": f(mean_reward)}

    def reset_env(self, key, params):
        u = self.uniforms(key)
        health = sample_from_rows(u, params.init_dist[None], jnp.zeros((self.n,), jnp.int32))
        hist = histogram(health, self.num_states)
        t = jnp.zeros((), jnp.int32)
        return EpidemicState(health, hist, t), self.make_timestep(
            {ROLE: self._obs(health, hist, t)}, info=self._info(hist, 0.0, 0.0, 0.0))

    def step_env(self, key, state, actions, params):
        a = actions[ROLE]
        a_c = jnp.clip(a, 0, self.num_actions - 1)
        h = state.health
        c = lookup(params.contact, a_c)
        infected = h == self.I
        pressure = jnp.sum(jnp.where(infected, c, 0.0)) / self.n
        _, p_ei, p_ir, p_rs = self._probs(pressure, params)
        p_inf = 1.0 - jnp.exp(-params.beta * c * pressure * params.dt)  # per agent
        p_leave = jnp.select([h == self.S, h == self.I, h == self.R], [p_inf, p_ir, p_rs], p_ei)
        u = self.uniforms(key)
        move = u < p_leave
        nxt = jnp.select([h == self.S, h == self.I, h == self.R], [self.E, self.R, self.S], self.I)
        new_h = jnp.where(move, nxt, h).astype(jnp.int32)
        new_infection = move & (h == self.S)
        reward = -params.infection_cost * new_infection - params.distancing_cost * (1.0 - c) ** 2
        hist = histogram(new_h, self.num_states)
        t = state.t + 1
        return EpidemicState(new_h, hist, t), self.make_timestep(
            {ROLE: self._obs(new_h, hist, t)}, reward={ROLE: reward}, terminated=t >= self.horizon,
            info=self._info(hist, pressure, jnp.mean(a != a_c), jnp.mean(reward)))

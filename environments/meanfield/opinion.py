"""Adoption and opinion dynamics with social influence, population-wide or on a network.

Rules. Every agent holds an opinion level ``o`` in ``0..K-1`` (``K = 2``: binary
adoption, 1 = adopted) and has a fixed *type* ``tau`` in ``0..T-1`` that sets its private
preferred level ``preference[tau]`` (a real number in ``[0, K-1]``) and its adoption
threshold ``threshold[tau]`` in ``[0, 1]`` (read by the Granovetter policy and
observed). Types are assigned in exact proportions ``type_probs`` (up to a few
agents) along a Weyl sequence (``frac(i * 0.618... + u)``, well mixed along the agent
index); initial opinions are drawn per agent from ``init_probs[tau]``. On a graph a new
network is drawn at every reset (from the reset key).

Each step every agent picks its next opinion ``a`` (the action, ``Discrete(K)``). With
probability ``noise`` (a tremble) the new opinion is instead drawn uniformly, else it
is ``a``. The social signal ``m_i`` is the opinion histogram ``f32[K]`` of the whole
population (``graph="complete"``) or of the agent's ``d`` neighbours (``"random"``,
``"regular"``, ``"ring"``; see ``graphs.py``), before the step. The payoff trades
conformity, the private preference and switching (all distances in units of the
opinion range ``K - 1``):

    r_i = conformity * (1 - E_{l ~ m_i} |a - l| / (K-1))
          + preference_weight * (1 - |a - preference[tau]| / (K-1))
          - switch_cost * |a - o_i| / (K-1)

Classical dynamics are scripted policies in ``opinion_policies.py``: DeGroot
averaging, Hegselmann-Krause bounded confidence and Granovetter threshold cascades.

Distributional view: the individual state is ``s = tau * K + o`` (``S = T K``). On a
network it is the annealed (well-mixed) approximation: neighbours' opinions are
treated as independent draws from the population, exact in expectation for the
payoff and for the first step from independent initial opinions.

Out-of-range actions are clipped to ``[0, K-1]`` and counted in
``info["illegal_action"]``; the mask is all True.

Observation (role ``"agent"``, ``num_agents`` agents) ``f32[2K + 3]``, every entry in
``[0, 1]``: entries ``0 .. K-1`` are the one-hot of the agent's own opinion, ``K ..
2K-1`` the social signal ``m_i`` (the fraction of the population, or of its neighbours on
a graph, holding each level), then ``preference[tau] / (K-1)``, ``threshold[tau]`` and
``t / H`` (``H = horizon``). The episode terminates after ``horizon`` steps.

Actions ``Discrete(K)``: the opinion level the agent takes next (``K = 2``: 0 not
adopted, 1 adopted); with probability ``params.noise`` a uniform level replaces it.
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
from jaxagents_environments.meanfield.graphs import check_graph, make_graph

GOLDEN = 0x9E3779B9  # 2^32 / golden ratio: the Weyl sequence frac(i * 0.618...) in 32-bit fixed point


@struct.dataclass
class OpinionParams:
    """Everything a sweep may vary (``T`` types, ``K`` levels).

    Attributes:
        type_probs: ``f32[T]`` population shares of the types (sums to 1).
        init_probs: ``f32[T, K]`` initial opinion distribution of each type (rows sum to 1).
        preference: ``f32[T]`` preferred level of each type, in ``[0, K-1]``.
        threshold: ``f32[T]`` adoption threshold of each type, in ``[0, 1]``.
        conformity: ``f32[]`` payoff weight of agreeing with the social signal (>= 0).
        preference_weight: ``f32[]`` payoff weight of closeness to the own type's
            preferred level (>= 0).
        switch_cost: ``f32[]`` cost per unit of opinion change, as a fraction of the
            range ``K - 1`` (>= 0).
        noise: ``f32[]`` tremble probability, in ``[0, 1]``.
        rewire_prob: ``f32[]`` Watts-Strogatz rewiring probability (``graph="ring"``), in ``[0, 1]``.
    """

    type_probs: jax.Array
    init_probs: jax.Array
    preference: jax.Array
    threshold: jax.Array
    conformity: jax.Array
    preference_weight: jax.Array
    switch_cost: jax.Array
    noise: jax.Array
    rewire_prob: jax.Array


@struct.dataclass
class OpinionState:
    """``opinion``, ``kind``: ``i32[N]`` level and type of every agent; ``nbrs``:
    ``i32[N, d]`` neighbour lists (an unused ``i32[1, 1]`` on the complete graph); ``hist``:
    ``f32[T K]`` histogram of ``kind * K + opinion``; ``signal``: the opinion histogram
    each agent hears, ``f32[N, K]`` on a graph (one gather per step, kept for the
    observation, the next payoff and the scripted policies) or ``f32[1, K]`` (the
    population's); ``t``: ``i32[]``."""

    opinion: jax.Array
    kind: jax.Array
    nbrs: jax.Array
    hist: jax.Array
    signal: jax.Array
    t: jax.Array


class Opinion(MeanFieldEnv):
    """Opinion/adoption dynamics (see the module docstring).

    Args:
        num_agents: ``N`` >= 2.
        num_levels: ``K`` >= 2 opinion levels.
        num_types: ``T`` >= 1 agent types.
        graph: ``"complete"`` (population-wide influence), ``"random"``, ``"regular"`` or ``"ring"``.
        degree: neighbours per agent on a graph, in ``[1, N-1]``.
        horizon: steps per episode, >= 1.
        rng: per-agent random numbers, ``"hash"`` or ``"threefry"``.
    """

    def __init__(self, num_agents: int = 1000, num_levels: int = 2, num_types: int = 1, graph: str = "complete",
                 degree: int = 8, horizon: int = 50, rng: str = "hash"):
        self._setup(num_agents, horizon, rng)
        check_int_arg("num_agents", num_agents, 2)
        self.K = check_int_arg("num_levels", num_levels, 2)
        self.T = check_int_arg("num_types", num_types, 1)
        check_graph(graph, self.n, degree)
        self.graph, self.degree = graph, (0 if graph == "complete" else int(degree))
        self.num_states, self.num_actions = self.T * self.K, self.K
        self.legal_table = np.ones((self.num_states, self.K), bool)
        self.state_names = tuple(f"type{tau}:{o}" if self.T > 1 else str(o) for tau in range(self.T) for o in range(self.K))
        self.roles = {ROLE: Role(self.n, Box(0.0, 1.0, (2 * self.K + 3,), jnp.float32), Discrete(self.K), always_legal=True,
                                 always_active=True)}
        levels = np.arange(self.K)
        self._dist = np.abs(levels[:, None] - levels[None, :]).astype(np.float32) / (self.K - 1)  # [K, K]

    # ------------------------------------------------------------------ params
    def default_params(self) -> OpinionParams:
        T, K = self.T, self.K
        f = lambda v: jnp.asarray(v, jnp.float32)
        return OpinionParams(
            type_probs=f(np.full(T, 1.0 / T)), init_probs=f(np.full((T, K), 1.0 / K)),
            preference=f(np.full(T, (K - 1) / 2)), threshold=f(np.full(T, 0.5)),
            conformity=f(1.0), preference_weight=f(0.5), switch_cost=f(0.1), noise=f(0.0), rewire_prob=f(0.1),
        )

    def check_params(self, params: OpinionParams) -> None:
        T, K = self.T, self.K
        check_distribution("params.type_probs", params.type_probs, T)
        check_shape("init_probs", params.init_probs, (T, K))
        check_distribution("params.init_probs", params.init_probs, K)
        check_shape("preference", params.preference, (T,))
        check_range("preference", params.preference, 0.0, K - 1.0)
        check_shape("threshold", params.threshold, (T,))
        check_range("threshold", params.threshold, 0.0, 1.0)
        for name in ("conformity", "preference_weight", "switch_cost"):
            check_shape(name, getattr(params, name), ())
            check_range(name, getattr(params, name), 0.0)
        for name in ("noise", "rewire_prob"):
            check_shape(name, getattr(params, name), ())
            check_range(name, getattr(params, name), 0.0, 1.0)

    # ------------------------------------------------------------------ model
    def initial_distribution(self, params):
        return (params.type_probs[:, None] * params.init_probs).reshape(-1)

    def marginal(self, mu: jax.Array) -> jax.Array:
        """``f32[K]`` opinion histogram from the joint ``mu[T K]``."""
        return mu.reshape(self.T, self.K).sum(0)

    def transition(self, nu, t, params):
        T, K = self.T, self.K
        move = (1.0 - params.noise) * jnp.eye(K) + params.noise / K  # [a, o']
        # the type never changes and the current opinion does not matter: [tau, o, a, tau', o']
        P = jnp.eye(T)[:, None, None, :, None] * move[None, None, :, None, :]
        return jnp.broadcast_to(P, (T, K, K, T, K)).reshape(T * K, K, T * K)

    def reward(self, nu, mu_next, t, params):
        T, K = self.T, self.K
        m = self.marginal(nu.sum(1))
        dist = jnp.asarray(self._dist)
        agree = params.conformity * (1.0 - dist @ m)  # [a]
        a = jnp.arange(K, dtype=jnp.float32)
        pref = params.preference_weight * (1.0 - jnp.abs(a[None, :] - params.preference[:, None]) / (K - 1))  # [T, a]
        switch = params.switch_cost * dist  # [o, a]
        return (agree[None, None, :] + pref[:, None, :] - switch[None]).reshape(T * K, K)

    def agent_states(self, state):
        return state.kind * self.K + state.opinion

    # ------------------------------------------------------------------ agent view
    def _signal(self, opinion, nbrs, hist) -> jax.Array:
        """``f32[N, K]`` (graph) or ``f32[1, K]`` (complete): the opinion histogram heard."""
        if self.graph == "complete":
            return self.marginal(hist)[None]
        # the only gathers of a step, one per neighbour slot: on XLA:CPU, d gathers of [N]
        # are about twice as fast as one gather of [N, d]
        heard = [opinion[nbrs[:, j]] for j in range(self.degree)]
        return jnp.stack([sum((h == k).astype(jnp.float32) for h in heard) / self.degree for k in range(self.K)], 1)

    def _obs(self, state, params):
        K = self.K
        # [opinion one-hot (K), signal (K), preference, threshold, time]; the signal is
        # [1, K] (population-wide) or [N, K] (network), and with one agent type the
        # preference and threshold are the same for everyone
        tt = (jnp.minimum(state.t, self.horizon) / self.horizon).astype(jnp.float32)
        pref, thr = params.preference / (K - 1), params.threshold
        shared, columns = {2 * K + 2: tt}, []
        if state.signal.shape[0] == 1:
            shared[K] = state.signal[0]
        else:
            columns += [(K + k, state.signal[:, k]) for k in range(K)]
        if pref.shape[0] == 1:
            shared.update({2 * K: pref[0], 2 * K + 1: thr[0]})
        else:
            columns += [(2 * K, lookup(pref, state.kind)), (2 * K + 1, lookup(thr, state.kind))]
        return agent_rows(2 * K + 3, shared, onehots=[(0, state.opinion, K)], columns=columns)

    def _info(self, state, illegal, mean_reward):
        m = self.marginal(state.hist)
        f = lambda v: jnp.asarray(v, jnp.float32)
        return {"histogram": state.hist, "mean_opinion": f(m @ jnp.arange(self.K)), "illegal_action": f(illegal),
                "mean_reward": f(mean_reward)}

    def reset_env(self, key, params):
        k_graph, k_init, k_type = jax.random.split(key, 3)
        # types in exact proportions along a Weyl sequence with a random start (integer
        # arithmetic: in f32, i * 0.618 loses the fractional part for large i)
        weyl = jnp.arange(self.n, dtype=jnp.uint32) * jnp.uint32(GOLDEN) + jax.random.bits(k_type, (), jnp.uint32)
        w = (weyl >> 8).astype(jnp.float32) * jnp.float32(2.0**-24)
        cdf = jnp.cumsum(params.type_probs)
        kind = jnp.clip(jnp.searchsorted(cdf / cdf[-1], w, side="right", method="scan_unrolled"), 0, self.T - 1).astype(jnp.int32)
        opinion = sample_from_rows(self.uniforms(k_init), params.init_probs, kind)
        nbrs = make_graph(self.graph, k_graph, self.n, self.degree, params.rewire_prob)
        hist = histogram(kind * self.K + opinion, self.num_states)
        t = jnp.zeros((), jnp.int32)
        state = OpinionState(opinion=opinion, kind=kind, nbrs=nbrs, hist=hist, signal=self._signal(opinion, nbrs, hist), t=t)
        return state, self.make_timestep({ROLE: self._obs(state, params)}, info=self._info(state, 0.0, 0.0))

    def _agreement(self, state, a):
        """``f32[N]`` ``1 - E_{l ~ m_i} |a_i - l| / (K-1)`` from the signal heard."""
        agree = 1.0 - jnp.asarray(self._dist)  # [a, l]
        if self.graph == "complete":
            return lookup(agree @ state.signal[0], a)
        return sum(state.signal[:, l] * lookup(agree[:, l], a) for l in range(self.K))

    def step_env(self, key, state, actions, params):
        K = self.K
        a = actions[ROLE]
        a_c = jnp.clip(a, 0, K - 1)
        pref = 1.0 - jnp.abs(a_c - lookup(params.preference, state.kind)) / (K - 1)
        switch = jnp.abs(a_c - state.opinion).astype(jnp.float32) / (K - 1)
        reward = (params.conformity * self._agreement(state, a_c) + params.preference_weight * pref
                  - params.switch_cost * switch)
        def tremble(_):
            u = self.uniforms(key)
            random_level = jnp.minimum((u / jnp.maximum(params.noise, 1e-30) * K).astype(jnp.int32), K - 1)
            return jnp.where(u < params.noise, random_level, a_c)

        # no random numbers at all without noise (a real branch unless params are batched)
        opinion = jax.lax.cond(params.noise > 0, tremble, lambda _: a_c, None)
        t = state.t + 1
        hist = histogram(state.kind * K + opinion, self.num_states)
        new = state.replace(opinion=opinion, hist=hist, signal=self._signal(opinion, state.nbrs, hist), t=t)
        return new, self.make_timestep(
            {ROLE: self._obs(new, params)}, reward={ROLE: reward}, terminated=t >= self.horizon,
            info=self._info(new, jnp.mean(a != a_c), jnp.mean(reward)),
        )

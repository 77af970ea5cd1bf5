"""Classical opinion dynamics as scripted policies of ``Opinion``.

Each policy comes in the two views of the environment:

* ``policy.agent(key, state, params) -> {"agent": i32[N]}`` reads each agent's own
  opinion and what it hears (its neighbours on a graph, the whole population on the
  complete graph);
* ``policy.table(mu, params) -> f32[S, K]`` is the same rule applied to the histogram
  ``mu``, for the distributional view (on a graph: the annealed approximation, where
  neighbours are independent draws from ``mu``).

DeGroot and Hegselmann-Krause move opinions towards a real-valued target; the action is
the target *stochastically rounded* to a level (``floor`` or ``ceil`` with the
probabilities that keep the expected level equal to the target), so the discrete
population follows the continuous rule in expectation.

* ``degroot(env, weight)``: target ``(1 - weight) o_i + weight * mean(heard opinions)``
  (DeGroot 1974). On the complete graph the population mean is preserved and opinions
  reach consensus on the two levels around it.
* ``bounded_confidence(env, confidence)``: target = mean of the opinions heard, own
  included, that lie within ``confidence * (K - 1)`` of the agent's own
  (Hegselmann & Krause 2002): consensus for wide confidence, clusters for narrow.
* ``threshold(env)`` (``K = 2``): adopt (1) once the adopted fraction heard reaches the
  agent's ``threshold[type]``; adopters stay adopted (Granovetter 1978).

``rollout_agents`` / ``rollout_dist`` run a policy for some steps (``lax.scan``) and
return the histograms, e.g. for a cascade over a million agents.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import jax
import jax.numpy as jnp
from jax.scipy.stats import binom

from jaxagents_environments.meanfield.base import ROLE, lookup
from jaxagents_environments.meanfield.opinion import Opinion

TOL = 1e-5  # "within confidence" slack, so that f32 rounding of confidence*(K-1) cannot flip a level


@dataclasses.dataclass(frozen=True)
class ScriptedPolicy:
    """A rule in both views (module docstring)."""

    name: str
    agent: Callable
    table: Callable


def _round_probs(target: jax.Array, K: int) -> jax.Array:
    """``f32[S, K]``: stochastic rounding of ``target[S]`` (clipped to ``[0, K-1]``)."""
    target = jnp.clip(target, 0.0, K - 1.0)
    lo = jnp.floor(target)
    frac = target - lo
    lo = lo.astype(jnp.int32)
    hi = jnp.minimum(lo + 1, K - 1)
    return jax.nn.one_hot(lo, K) * (1.0 - frac)[:, None] + jax.nn.one_hot(hi, K) * frac[:, None]


def _round(u: jax.Array, target: jax.Array, K: int) -> jax.Array:
    """``i32[N]``: ``floor(target) + [u < frac(target)]``."""
    target = jnp.clip(target, 0.0, K - 1.0)
    lo = jnp.floor(target)
    return jnp.minimum(lo.astype(jnp.int32) + (u < target - lo), K - 1)


def _levels(env: Opinion) -> jax.Array:
    return jnp.arange(env.K, dtype=jnp.float32)


def degroot(env: Opinion, weight=0.5) -> ScriptedPolicy:
    """DeGroot averaging with ``weight`` (in ``[0, 1]``) on the opinions heard."""

    def agent(key, state, params):
        o = state.opinion.astype(jnp.float32)
        heard = state.signal @ _levels(env)  # [N] or [1]: mean opinion heard
        return {ROLE: _round(env.uniforms(key), (1.0 - weight) * o + weight * heard, env.K)}

    def table(mu, params):
        own = jnp.tile(_levels(env), env.T)
        return _round_probs((1.0 - weight) * own + weight * (env.marginal(mu) @ _levels(env)), env.K)

    return ScriptedPolicy("degroot", agent, table)


def _hk_targets(env: Opinion, m: jax.Array, confidence) -> jax.Array:
    """``f32[K]`` bounded-confidence target of each level given the opinion histogram ``m``."""
    lv = _levels(env)
    close = (jnp.abs(lv[:, None] - lv[None, :]) <= confidence * (env.K - 1) + TOL).astype(jnp.float32)
    w = close * m[None, :] + 1e-12 * jnp.eye(env.K)  # own level always counts (no 0/0 at empty levels)
    return (w @ lv) / w.sum(1)


def bounded_confidence(env: Opinion, confidence=0.2) -> ScriptedPolicy:
    """Hegselmann-Krause with ``confidence`` (a fraction of the opinion range)."""

    def agent(key, state, params):
        if env.graph == "complete":
            target = lookup(_hk_targets(env, env.marginal(state.hist), confidence), state.opinion)
        else:  # own opinion plus the neighbours within confidence, counted from the signal
            o = state.opinion.astype(jnp.float32)
            num, den = o, jnp.ones_like(o)
            for l in range(env.K):
                w = env.degree * state.signal[:, l] * (jnp.abs(l - o) <= confidence * (env.K - 1) + TOL)
                num, den = num + w * l, den + w
            target = num / den
        return {ROLE: _round(env.uniforms(key), target, env.K)}

    def table(mu, params):
        return _round_probs(jnp.tile(_hk_targets(env, env.marginal(mu), confidence), env.T), env.K)

    return ScriptedPolicy("bounded_confidence", agent, table)


def threshold(env: Opinion) -> ScriptedPolicy:
    """Granovetter's threshold rule (binary opinions; see module docstring)."""
    if env.K != 2:
        raise ValueError(f"threshold needs binary opinions (num_levels=2), got num_levels={env.K}")

    def agent(key, state, params):
        frac = state.signal[:, 1]  # adopted fraction heard, [N] or [1]
        adopt = (state.opinion == 1) | (frac >= lookup(params.threshold, state.kind))
        return {ROLE: adopt.astype(jnp.int32)}

    def table(mu, params):
        frac = env.marginal(mu)[1]
        if env.graph == "complete":
            p = (frac >= params.threshold).astype(jnp.float32)
        else:  # annealed: the number of adopted neighbours is Binomial(d, frac)
            k = jnp.arange(env.degree + 1)
            pmf = binom.pmf(k, env.degree, frac)
            heard = k.astype(jnp.float32) / env.degree
            p = jnp.sum(pmf[None, :] * (heard[None, :] >= params.threshold[:, None]), 1)
        adopt = jnp.stack([p, jnp.ones_like(p)], 1)  # [T, o]: P(adopt | type, opinion)
        return jnp.stack([1.0 - adopt, adopt], -1).reshape(env.num_states, 2)

    return ScriptedPolicy("threshold", agent, table)


def rollout_agents(env: Opinion, policy: ScriptedPolicy, key: jax.Array, params, steps: int):
    """Run ``policy`` in the agent view from a reset: ``(final_state, hist f32[steps+1, S])``."""
    k_reset, k_run = jax.random.split(key)
    state, _ = env.reset(k_reset, params)

    def body(state, k):
        k_act, k_step = jax.random.split(k)
        state, _ = env.step(k_step, state, policy.agent(k_act, state, params), params)
        return state, state.hist

    final, hists = jax.lax.scan(body, state, jax.random.split(k_run, steps))
    return final, jnp.concatenate([state.hist[None], hists])


def rollout_dist(env: Opinion, policy: ScriptedPolicy, params, steps: int) -> jax.Array:
    """Run ``policy`` in the distributional view: ``mu f32[steps+1, S]``."""
    d0 = env.dist_reset(params)

    def body(d, _):
        d, _ = env.dist_step(d, policy.table(d.mu, params), params)
        return d, d.mu

    _, mus = jax.lax.scan(body, d0, None, length=steps)
    return jnp.concatenate([d0.mu[None], mus])

"""Exact evaluation of agent-view policies (learned networks) on the distributional view.

A policy trained on the agent view maps an agent's observation -- its own state plus a
population summary -- to action logits. Played by the whole (infinite) population it
is a tabular, time-dependent policy ``pi[H, S, A]`` of the distributional view, found
by following the policy's *own* mean-field flow:

    mu_0 = initial_distribution
    for t = 0..H-1:  obs[s] = env.observation_table(mu_t, t)   (what an agent in s sees)
                     pi[t]  = probs(logits_fn(obs))            (masked to legal actions)
                     mu_{t+1} = dist_step(mu_t, pi[t])

``solvers.exploitability(env, params, pi)`` is then the exact exploitability of the
learned population policy (``policy_exploitability`` does both). Everything is a
``lax.scan``: jit-able with ``env`` static, usable inside a training program.

``probs``: ``"stochastic"`` (default) is the policy's own action distribution,
``softmax(logits)`` over the legal actions -- what the agents play during training;
``"greedy"`` is one-hot on the first legal maximiser of the logits.

The environment must provide ``observation_table(mu, t, params) -> f32[S, D]``
(``CrowdModelling`` does).
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp

from jaxagents_environments.meanfield import solvers
from jaxagents_environments.meanfield.base import DistState, MeanFieldEnv

MODES = ("stochastic", "greedy")


def action_probs(logits: jax.Array, legal: jax.Array, mode: str = "stochastic") -> jax.Array:
    """``f32[S, A]`` probabilities from ``logits[S, A]``, zero on illegal actions."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    masked = jnp.where(legal, logits, -jnp.inf)
    if mode == "greedy":
        return jax.nn.one_hot(jnp.argmax(masked, -1), logits.shape[-1], dtype=jnp.float32)
    return jax.nn.softmax(masked, axis=-1)


def policy_table(env: MeanFieldEnv, params, logits_fn: Callable, mode: str = "stochastic"):
    """Tabulate ``logits_fn`` (``obs f32[S, D] -> logits f32[S, A]``, e.g.
    ``Agents.logits_fn(net_params, "agent")``) along its own flow.

    Returns ``(pi f32[H, S, A], mu f32[H+1, S])``."""
    if not hasattr(env, "observation_table"):
        raise ValueError(f"{type(env).__name__} has no observation_table(mu, t, params); policy_eval needs one")
    params = env.default_params() if params is None else params
    legal = env.legal

    def body(mu, t):
        probs = action_probs(logits_fn(env.observation_table(mu, t, params)), legal, mode)
        nxt, _ = env.dist_step(DistState(mu=mu, t=t), probs, params)
        return nxt.mu, (probs, mu)

    mu_h, (pi, mu) = jax.lax.scan(body, env.initial_distribution(params), jnp.arange(env.horizon, dtype=jnp.int32))
    return pi, jnp.concatenate([mu, mu_h[None]])


def policy_exploitability(env: MeanFieldEnv, params, logits_fn: Callable, mode: str = "stochastic") -> jax.Array:
    """``f32[]`` exact exploitability of the population playing ``logits_fn``."""
    params = env.default_params() if params is None else params
    pi, _ = policy_table(env, params, logits_fn, mode)
    return solvers.exploitability(env, params, pi)

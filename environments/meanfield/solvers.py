"""Equilibrium solvers over the distributional view: exact evaluation, best response,
exploitability, fictitious play, online mirror descent, and the social optimum.

Everything is finite-horizon and tabular: a policy is ``pi[H, S, A]`` (time-dependent,
rows normalised over legal actions), its mean-field flow is
``mu[0] = initial_distribution``, ``nu[t] = mu[t, :, None] * pi[t]``,
``mu[t+1] = sum_{s,a} nu[t, s, a] P_t[s, a, :]`` with ``P_t = env.transition(nu[t], t)``,
and the rewards along the flow are ``R[t] = env.reward(nu[t], mu[t+1], t)``.

Against a fixed flow, a single (infinitesimal) agent faces an MDP; backward induction
gives the policy's values ``Q^pi, V^pi`` and the best response's ``Q^*, V^*``:

    Q_t(s, a) = R_t(s, a) + sum_s' P_t(s, a, s') V_{t+1}(s'),   V_H = 0.

``exploitability(pi) = sum_s mu_0(s) (V^*_0(s) - V^pi_0(s))`` >= 0, zero exactly at a
mean-field Nash equilibrium (OpenSpiel's ``NashConv`` for MFGs).

* ``fictitious_play``: OpenSpiel's ``FictitiousPlay`` (Perrin et al. 2020): start
  uniform; at iteration ``k`` compute the greedy best response ``b`` to the current
  flow and average *flows*: ``pi <- [(1-w) mu^pi pi + w mu^b b] / [(1-w) mu^pi + w mu^b]``
  with ``w = 1/(k+1)`` (uniform where both flows are zero).
* ``mirror_descent``: online mirror descent (Perolat et al. 2022; OpenSpiel's
  ``MirrorDescent``): ``y <- y + lr * Q^{pi}``, ``pi = softmax(y)`` over legal actions.
* ``social_optimum``: mean-field control: maximise the population's average return
  ``J(pi) = sum_t sum_{s,a} nu[t] R[t]`` by gradient ascent on softmax logits through
  the differentiable flow (Adam); ``price_of_anarchy`` compares it with an equilibrium.

All loops over iterations are ``lax.scan``s; every function is jit-able with the env
static and ``params`` traced (``jax.jit(fictitious_play, static_argnums=(0, 2))``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax
from flax import struct

from jaxagents_environments.meanfield.base import MeanFieldEnv, normalize_policy


@struct.dataclass
class Evaluation:
    """A policy evaluated against its own flow.

    Attributes:
        mu: ``f32[H+1, S]`` the flow; ``reward``: ``f32[H, S, A]`` rewards along it.
        q, v: ``f32[H, S, A]``, ``f32[H+1, S]`` the policy's values.
        q_br, v_br: the best response's values against the same flow.
        br_policy: ``f32[H, S, A]`` greedy best response (one-hot, first maximiser).
        value, br_value: ``f32[]`` ``sum mu_0 v[0]`` and ``sum mu_0 v_br[0]``.
        exploitability: ``f32[]`` ``br_value - value``.
    """

    mu: jax.Array
    reward: jax.Array
    q: jax.Array
    v: jax.Array
    q_br: jax.Array
    v_br: jax.Array
    br_policy: jax.Array
    value: jax.Array
    br_value: jax.Array
    exploitability: jax.Array


def uniform_policy(env: MeanFieldEnv) -> jax.Array:
    """``f32[H, S, A]`` uniform over the legal actions."""
    legal = env.legal.astype(jnp.float32)
    return jnp.broadcast_to(legal / legal.sum(-1, keepdims=True), (env.horizon, *legal.shape))


def forward(env: MeanFieldEnv, params, policy: jax.Array):
    """The flow of ``policy[H, S, A]``: ``(mu f32[H+1, S], nu f32[H, S, A], R f32[H, S, A])``."""
    pi = normalize_policy(policy, env.legal)

    def body(mu, xs):
        p, t = xs
        nu = mu[:, None] * p
        mu_next = jnp.einsum("sa,sat->t", nu, env.transition(nu, t, params))
        return mu_next, (mu, nu, env.reward(nu, mu_next, t, params))

    mu_h, (mu, nu, r) = jax.lax.scan(body, env.initial_distribution(params), (pi, jnp.arange(env.horizon)))
    return jnp.concatenate([mu, mu_h[None]]), nu, r


def _greedy(q: jax.Array, legal: jax.Array) -> jax.Array:
    masked = jnp.where(legal, q, -jnp.inf)
    return jax.nn.one_hot(jnp.argmax(masked, -1), q.shape[-1], dtype=q.dtype)


def evaluate(env: MeanFieldEnv, params, policy: jax.Array) -> Evaluation:
    """Flow, values, best response and exploitability of ``policy[H, S, A]``."""
    legal = env.legal
    pi = normalize_policy(policy, legal)
    mu, nu, r = forward(env, params, pi)
    S = env.num_states

    def body(carry, xs):
        v_next, vbr_next = carry
        nu_t, r_t, p_t, t = xs
        P = env.transition(nu_t, t, params)
        q = r_t + P @ v_next
        q_br = r_t + P @ vbr_next
        v = jnp.sum(p_t * q, -1)
        v_br = jnp.max(jnp.where(legal, q_br, -jnp.inf), -1)
        return (v, v_br), (q, v, q_br, v_br)

    zero = jnp.zeros((S,), jnp.float32)
    _, (q, v, q_br, v_br) = jax.lax.scan(body, (zero, zero), (nu, r, pi, jnp.arange(env.horizon)), reverse=True)
    v = jnp.concatenate([v, zero[None]])
    v_br = jnp.concatenate([v_br, zero[None]])
    value, br_value = mu[0] @ v[0], mu[0] @ v_br[0]
    return Evaluation(mu=mu, reward=r, q=q, v=v, q_br=q_br, v_br=v_br, br_policy=_greedy(q_br, legal),
                      value=value, br_value=br_value, exploitability=br_value - value)


def exploitability(env: MeanFieldEnv, params, policy: jax.Array) -> jax.Array:
    """``f32[]`` exploitability (mean-field NashConv) of ``policy[H, S, A]``."""
    return evaluate(env, params, policy).exploitability


@struct.dataclass
class SolverResult:
    """``policy`` ``f32[H, S, A]`` after the last iteration, its flow ``mu``
    ``f32[H+1, S]``, and ``exploitability`` ``f32[iters + 1]``: entry ``k`` is the
    exploitability of the policy after ``k`` iterations (entry 0: uniform)."""

    policy: jax.Array
    mu: jax.Array
    exploitability: jax.Array


def fictitious_play(env: MeanFieldEnv, params, num_iters: int) -> SolverResult:
    """Fictitious play (module docstring), ``num_iters`` iterations."""
    legal = env.legal
    uniform = uniform_policy(env)

    def body(pi, k):
        ev = evaluate(env, params, pi)
        br = ev.br_policy
        mu_br = forward(env, params, br)[0][:-1, :, None]
        mu_pi = ev.mu[:-1, :, None]
        w = 1.0 / (k + 1.0)
        num = (1.0 - w) * mu_pi * pi + w * mu_br * br
        den = (1.0 - w) * mu_pi + w * mu_br
        new = jnp.where(den > 0, num / jnp.where(den > 0, den, 1.0), uniform)
        return normalize_policy(new, legal), ev.exploitability

    pi, expl = jax.lax.scan(body, uniform, jnp.arange(1, num_iters + 1, dtype=jnp.float32))
    final = evaluate(env, params, pi)
    return SolverResult(policy=pi, mu=final.mu, exploitability=jnp.append(expl, final.exploitability))


def _softmax_legal(y: jax.Array, legal: jax.Array) -> jax.Array:
    return jax.nn.softmax(jnp.where(legal, y, -jnp.inf), axis=-1)


def mirror_descent(env: MeanFieldEnv, params, num_iters: int, lr: float | jax.Array = 1.0) -> SolverResult:
    """Online mirror descent (module docstring), ``num_iters`` iterations of step ``lr``."""
    legal = env.legal

    def body(y, _):
        pi = _softmax_legal(y, legal)
        ev = evaluate(env, params, pi)
        return y + lr * ev.q, ev.exploitability

    y0 = jnp.zeros((env.horizon, env.num_states, env.num_actions), jnp.float32)
    y, expl = jax.lax.scan(body, y0, None, length=num_iters)
    pi = _softmax_legal(y, legal)
    final = evaluate(env, params, pi)
    return SolverResult(policy=pi, mu=final.mu, exploitability=jnp.append(expl, final.exploitability))


def social_welfare(env: MeanFieldEnv, params, policy: jax.Array) -> jax.Array:
    """``f32[]`` the population's average return ``J(pi) = sum_t sum nu[t] R[t]`` when
    everyone plays ``policy`` (equals ``evaluate(...).value``)."""
    _, nu, r = forward(env, params, policy)
    return jnp.sum(nu * r)


@struct.dataclass
class OptimumResult:
    """``policy`` ``f32[H, S, A]``, its ``welfare`` ``f32[]`` and the welfare after
    every gradient step ``curve`` ``f32[num_steps]``."""

    policy: jax.Array
    welfare: jax.Array
    curve: jax.Array


def social_optimum(env: MeanFieldEnv, params, num_steps: int = 500, lr: float = 0.1,
                   init_policy: jax.Array | None = None) -> OptimumResult:
    """Mean-field control: maximise ``social_welfare`` over ``pi[H, S, A]``.

    Adam on softmax logits, started at ``init_policy`` (default uniform; start at an
    equilibrium to make sure the optimum found is at least as good as it). The best
    policy seen is returned (the objective is not concave: a local optimum)."""
    legal = env.legal
    start = uniform_policy(env) if init_policy is None else normalize_policy(init_policy, legal)
    theta0 = jnp.log(jnp.maximum(start, 1e-6))
    opt = optax.adam(lr)

    def objective(theta):
        return social_welfare(env, params, _softmax_legal(theta, legal))

    def body(carry, _):
        theta, state, best_theta, best = carry
        j, g = jax.value_and_grad(objective)(theta)
        better = j > best
        best_theta = jnp.where(better, theta, best_theta)
        best = jnp.where(better, j, best)
        updates, state = opt.update(jax.tree_util.tree_map(jnp.negative, g), state)
        return (optax.apply_updates(theta, updates), state, best_theta, best), j

    init = (theta0, opt.init(theta0), theta0, objective(theta0))
    (theta, _, best_theta, best), curve = jax.lax.scan(body, init, None, length=num_steps)
    last = objective(theta)
    best_theta = jnp.where(last > best, theta, best_theta)
    pi = _softmax_legal(best_theta, legal)
    return OptimumResult(policy=pi, welfare=jnp.maximum(best, last), curve=curve)


def price_of_anarchy(env: MeanFieldEnv, params, equilibrium: jax.Array, optimum: jax.Array) -> jax.Array:
    """``cost(equilibrium) / cost(optimum)`` with ``cost = -social_welfare``, for games
    whose rewards are costs (welfare < 0, as in the epidemic). >= 1 when ``optimum`` is
    at least as good as ``equilibrium``."""
    return social_welfare(env, params, equilibrium) / social_welfare(env, params, optimum)

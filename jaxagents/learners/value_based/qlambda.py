"""Q(lambda) targets over a rollout: the regression targets of PQN.

``targets[t]`` is Peng's Q(lambda) return of the step taken at ``t``, computed
backwards over the window::

    G[t] = r[t] + gamma * ((1 - lam) * max_a Q(s[t+1], a) + lam * G[t+1])

mixing, at every step ahead, the one-step bootstrap on the greedy value of the next
observation with the longer return. ``lam = 0`` is the one-step Q-learning target
``r[t] + gamma * max_a Q(s[t+1], a)``; ``lam = 1`` the discounted return to the end of
the episode (Monte-Carlo where it ends inside the window), bootstrapped only where
the window or a time limit cuts it.

Conventions (those of ``jaxagents.advantages``, stated once there; arrays are
time-major ``[T, *B]`` with ``B`` any batch: environments, agents):

* ``terminated[t]`` / ``truncated[t]`` describe the transition taken at ``t``: the
  episode ended *after* action ``t``. Termination stops bootstrapping: ``G[t] =
  r[t]``. Truncation (a time limit) bootstraps from ``final_q_max[t]``, the greedy
  value of the observation the episode was cut at: ``G[t] = r[t] + gamma *
  final_q_max[t]`` (with auto-reset ``q_max[t + 1]`` already belongs to the next
  episode, so it is never used across an episode end).
* ``q_max[t]`` is ``max_a Q(obs[t], a)`` over the legal actions at ``obs[t]`` (the
  observation the action at ``t`` was taken from); ``last_q_max`` the same for the
  observation after the window.
* ``active[t]`` says whether the slot's action at ``t`` was used (turn-based games).
  An agent's *turn* collects every reward from its own action up to (excluding) its
  next action, undiscounted, the bootstrap is the value at its next turn, and
  discounting counts its own turns only. Targets at inactive steps are 0 and must be
  masked out of losses. ``active=None``: every step is a turn.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def q_lambda(
    rewards: jax.Array,
    q_max: jax.Array,
    terminated: jax.Array,
    truncated: jax.Array,
    last_q_max: jax.Array,
    gamma,
    lam,
    *,
    final_q_max: jax.Array | None = None,
    active: jax.Array | None = None,
) -> jax.Array:
    """Q(lambda) targets (see the module docstring for the conventions).

    Args:
        rewards, q_max, terminated, truncated: ``[T, *B]``.
        last_q_max: ``[*B]`` greedy value of the observation after the window.
        gamma, lam: discount and lambda (floats or traced scalars).
        final_q_max: ``[T, *B]`` greedy value of the observation a truncated episode
            was cut at (read only where ``truncated``). None bootstraps truncation
            from 0, i.e. treats it as termination -- documented, not silent: pass it.
        active: ``bool[T, *B]`` or None (every step is a turn).

    Returns:
        ``targets f32[T, *B]``, 0 at inactive steps.
    """
    rewards = jnp.asarray(rewards, jnp.float32)
    q_max = jnp.asarray(q_max, jnp.float32)
    terminated = jnp.asarray(terminated, bool)
    truncated = jnp.asarray(truncated, bool) & ~terminated
    final_q_max = jnp.zeros_like(rewards) if final_q_max is None else jnp.asarray(final_q_max, jnp.float32)
    active = jnp.ones(rewards.shape, bool) if active is None else jnp.asarray(active, bool)
    last = jnp.broadcast_to(jnp.asarray(last_q_max, jnp.float32), rewards.shape[1:])
    init = (
        last,  # greedy value at the next turn
        last,  # lambda-return of the next turn (past the window: its bootstrap)
        jnp.zeros(rewards.shape[1:], jnp.float32),  # reward collected since the next turn (reverse time)
        jnp.zeros(rewards.shape[1:], bool),  # the episode ends before the next turn
    )

    def body(carry, x):
        next_v, next_g, acc, ended = carry
        r, v, term, trunc, fv, act = x
        done = term | trunc
        # an episode end: what follows belongs to the next episode, so drop it
        acc = jnp.where(done, r + gamma * jnp.where(trunc, fv, 0.0), r + acc)
        ended = done | ended
        cont = 1.0 - ended.astype(jnp.float32)
        g = acc + gamma * cont * ((1.0 - lam) * next_v + lam * next_g)
        carry = (
            jnp.where(act, v, next_v),
            jnp.where(act, g, next_g),
            jnp.where(act, 0.0, acc),
            jnp.where(act, False, ended),
        )
        return carry, jnp.where(act, g, 0.0)

    _, targets = jax.lax.scan(body, init, (rewards, q_max, terminated, truncated, final_q_max, active), reverse=True)
    return targets

"""Advantage estimators: pure functions, jit- and vmap-friendly.

Two shapes of input occur:

* **time-major** arrays ``[T, *B]`` for the estimators that follow time (GAE,
  turn-level returns): ``B`` is any batch of agent slots (envs x agents), and the
  episode boundaries come from the ``terminated``/``truncated`` flags of the step
  that ended the episode;
* **flat batches** ``[N]`` with integer ids for the estimators that pool samples
  (role-conditioned baselines, per-role normalisation, GRPO, GiGPO).

Conventions shared by every function:

* ``terminated[t]`` / ``truncated[t]`` describe the transition taken at ``t``: the
  episode ended *after* action ``t``. Termination stops bootstrapping; truncation
  (a time limit) bootstraps from ``final_values[t]``, the value of the observation
  the episode was cut at (with auto-reset, ``values[t + 1]`` already belongs to the
  next episode, so it cannot be used).
* ``active[t]`` says whether the slot's action at ``t`` was used (turn-based games).
  An agent's *turn* collects every reward from its own action up to (excluding) its
  next action, undiscounted, and discounting counts the agent's own turns only
  (MARS's turn-level return): steps where the agent is not active are skipped, not
  zero-filled. Outputs at inactive steps are 0 and must be masked out of losses.
  With ``active=None`` every step is a turn and ``gae`` is the textbook GAE.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

# ------------------------------------------------------------------ time-major


def _turn_scan(rewards, values, terminated, truncated, last_value, final_values, gamma, lam, active):
    """Reverse scan shared by ``gae`` and ``turn_returns``.

    Returns ``(advantages, complete)``: ``complete[t]`` is True when the episode of
    step ``t`` ended inside the window (its return is fully observed)."""
    rewards = jnp.asarray(rewards, jnp.float32)
    values = jnp.asarray(values, jnp.float32)
    terminated = jnp.asarray(terminated, bool)
    truncated = jnp.asarray(truncated, bool) & ~terminated
    if active is None:
        active = jnp.ones(rewards.shape, bool)
    if final_values is None:
        final_values = jnp.zeros_like(rewards)
    batch = rewards.shape[1:]
    init = (
        jnp.broadcast_to(jnp.asarray(last_value, jnp.float32), batch),  # value of the next turn
        jnp.zeros(batch, jnp.float32),  # advantage of the next turn
        jnp.zeros(batch, jnp.float32),  # reward collected since the next turn (reverse time)
        jnp.zeros(batch, bool),  # the episode ends before the next turn
        jnp.zeros(batch, bool),  # an episode end lies ahead inside the window
    )

    def body(carry, x):
        next_v, next_adv, acc, ended, seen_end = carry
        r, v, term, trunc, fv, act = x
        done = term | trunc
        acc = jnp.where(done, r + gamma * jnp.where(trunc, fv, 0.0), r + acc)
        ended = done | ended
        seen_end = done | seen_end
        cont = 1.0 - ended.astype(jnp.float32)
        delta = acc + gamma * cont * next_v - v
        adv = delta + gamma * lam * cont * next_adv
        carry = (
            jnp.where(act, v, next_v),
            jnp.where(act, adv, next_adv),
            jnp.where(act, 0.0, acc),
            jnp.where(act, False, ended),
            seen_end,
        )
        return carry, (jnp.where(act, adv, 0.0), seen_end)

    xs = (rewards, values, terminated, truncated, jnp.asarray(final_values, jnp.float32), jnp.asarray(active, bool))
    _, (adv, complete) = jax.lax.scan(body, init, xs, reverse=True)
    return adv, complete


def gae(
    rewards: jax.Array,
    values: jax.Array,
    terminated: jax.Array,
    truncated: jax.Array,
    last_value: jax.Array,
    gamma: float,
    lam: float,
    *,
    final_values: jax.Array | None = None,
    active: jax.Array | None = None,
) -> tuple[jax.Array, jax.Array]:
    """Generalised advantage estimation over an agent's own turns.

    Args:
        rewards, values, terminated, truncated: ``[T, *B]``; ``values[t]`` is V of the
            observation the action at ``t`` was taken from.
        last_value: ``[*B]`` V of the observation after the window.
        gamma, lam: discount and GAE lambda (floats or traced scalars).
        final_values: ``[T, *B]`` V of the observation a truncated episode was cut
            at (only read where ``truncated``). None bootstraps truncation from 0,
            i.e. treats it as termination -- documented, not silent: pass it.
        active: ``bool[T, *B]`` or None (every step is a turn).

    Returns:
        ``(advantages, targets)``, both ``f32[T, *B]``; ``targets = advantages +
        values`` (value-function targets); both are 0 at inactive steps.
    """
    adv, _ = _turn_scan(rewards, values, terminated, truncated, last_value, final_values, gamma, lam, active)
    targets = adv + jnp.asarray(values, jnp.float32)
    if active is not None:
        targets = jnp.where(active, targets, 0.0)
    return adv, targets


def turn_returns(
    rewards: jax.Array,
    terminated: jax.Array,
    truncated: jax.Array,
    gamma: float,
    *,
    active: jax.Array | None = None,
) -> tuple[jax.Array, jax.Array]:
    """Turn-level return-to-go (MARS): ``G_k = R_k + gamma * G_{k+1}`` over the
    agent's own turns, critic-free (no bootstrapping at truncation or at the end of
    the window).

    Returns ``(returns, complete)``, ``[T, *B]``: ``complete`` marks the steps whose
    episode ended inside the window, i.e. whose return is exact rather than cut by
    the window; estimators that need full episode returns (RAE, GRPO) mask the rest.
    """
    zeros = jnp.zeros(jnp.shape(rewards), jnp.float32)
    ret, complete = _turn_scan(rewards, zeros, terminated, truncated, 0.0, None, gamma, 1.0, active)
    return ret, complete


# ------------------------------------------------------------------ flat batches


def _segment_stats(x, ids, num_segments, mask, axis_name=None):
    """Masked per-segment count, mean and (population) std; reduced over a device
    axis when ``axis_name`` is given so every device sees the same statistics."""
    w = jnp.asarray(mask, jnp.float32)
    x = jnp.asarray(x, jnp.float32)
    count = jax.ops.segment_sum(w, ids, num_segments)
    s1 = jax.ops.segment_sum(w * x, ids, num_segments)
    s2 = jax.ops.segment_sum(w * x * x, ids, num_segments)
    if axis_name is not None:
        count, s1, s2 = jax.lax.psum((count, s1, s2), axis_name)
    mean = s1 / jnp.maximum(count, 1.0)
    var = jnp.maximum(s2 / jnp.maximum(count, 1.0) - mean * mean, 0.0)
    return count, mean, jnp.sqrt(var)


def rae_advantages(returns: jax.Array, game_ids: jax.Array, role_ids: jax.Array, baseline: jax.Array) -> jax.Array:
    """Role-conditioned advantage (SPIRAL): ``A = R - b[g, p]``.

    Args:
        returns: ``f32[N]`` the return of the sample's episode for its role (with
            end-of-game rewards, the undiscounted turn return-to-go equals it).
        game_ids, role_ids: ``int[N]``.
        baseline: ``f32[G, P]`` the EMA table *before* this batch's update.
    """
    return jnp.asarray(returns, jnp.float32) - baseline[game_ids, role_ids]


def rae_update(
    baseline: jax.Array,
    episode_returns: jax.Array,
    game_ids: jax.Array,
    role_ids: jax.Array,
    mask: jax.Array,
    alpha: float = 0.95,
    axis_name: str | None = None,
) -> jax.Array:
    """One EMA step of the RAE baselines from a batch of finished episodes.

    Batch rule (our explicit choice): every ``(g, p)`` cell with at least one
    finished episode in the batch moves once, towards the batch mean,
    ``b <- alpha * b + (1 - alpha) * mean(R)``; cells without episodes keep their
    value. SPIRAL's per-episode sequential update depends on an arbitrary episode
    order inside a batch; the batch mean does not, and with ``axis_name`` the mean is
    taken over all devices so the table stays identical everywhere.

    Args:
        baseline: ``f32[G, P]``.
        episode_returns: ``f32[N]`` one entry per (episode, role) -- e.g. the
            returns at the steps where episodes ended -- with ``mask`` selecting the
            real ones.
        game_ids, role_ids: ``int[N]``.
    """
    num_games, num_roles = baseline.shape
    ids = jnp.asarray(game_ids) * num_roles + jnp.asarray(role_ids)
    count, mean, _ = _segment_stats(episode_returns, ids, num_games * num_roles, mask, axis_name)
    flat = baseline.reshape(-1)
    new = jnp.where(count > 0, alpha * flat + (1.0 - alpha) * mean, flat)
    return new.reshape(baseline.shape)


def normalize_per_role(
    advantages: jax.Array,
    role_ids: jax.Array,
    num_roles: int,
    mask: jax.Array | None = None,
    eps: float = 1e-8,
    axis_name: str | None = None,
) -> jax.Array:
    """Per-role normalisation (MARS, Dr.MAS): ``(A - mean_p) / (std_p + eps)`` with
    the statistics of role ``p``'s (masked) samples only. Masked samples come back
    as 0. A global normalisation is ``role_ids = 0, num_roles = 1``."""
    if mask is None:
        mask = jnp.ones(jnp.shape(advantages), bool)
    _, mean, std = _segment_stats(advantages, role_ids, num_roles, mask, axis_name)
    out = (jnp.asarray(advantages, jnp.float32) - mean[role_ids]) / (std[role_ids] + eps)
    return jnp.where(mask, out, 0.0)


def grpo(
    returns: jax.Array,
    group_ids: jax.Array,
    num_groups: int,
    mask: jax.Array | None = None,
    scale: bool = True,
    eps: float = 1e-6,
    episodes: tuple[jax.Array, jax.Array, jax.Array] | None = None,
) -> jax.Array:
    """Group-relative advantage (GRPO): ``(R - mean_group) / std_group``.

    Episodes that share a start state (same reset key) form a group. ``scale=False``
    drops the division (Dr. GRPO). Edge cases: a zero-std group divides by 1; a
    single-episode group uses mean 0 and std 1 (its advantage is its return -- there
    is nothing to compare it with, and 0 would silently drop the sample).

    ``episodes=(returns_e[M], group_ids_e[M], mask_e[M])``: take the group statistics
    from these episodes instead of from ``returns`` itself -- a rollout's samples
    (every step's return-to-go) normalised by the returns of the episodes that
    finished in it.
    """
    if mask is None:
        mask = jnp.ones(jnp.shape(returns), bool)
    ref = (returns, group_ids, mask) if episodes is None else episodes
    count, mean, std = _segment_stats(ref[0], ref[1], num_groups, ref[2])
    single = count <= 1
    mean = jnp.where(single, 0.0, mean)
    std = jnp.where(single | (std < eps) | (not scale), 1.0, std)
    out = (jnp.asarray(returns, jnp.float32) - mean[group_ids]) / std[group_ids]
    return jnp.where(mask, out, 0.0)


def hash_rows(x: jax.Array) -> jax.Array:
    """A 32-bit hash of each row of ``x`` (``[N, ...]`` with discrete values), for
    grouping identical states (GiGPO's anchor states). Collisions are possible but
    rare (FNV-1a over the row's int32 values)."""
    rows = jnp.asarray(x).reshape(x.shape[0], -1)
    rows = jnp.round(rows).astype(jnp.int32).view(jnp.uint32) if jnp.issubdtype(rows.dtype, jnp.floating) else rows.astype(jnp.uint32)

    def mix(h, col):
        return (h ^ col) * jnp.uint32(16777619), None

    h0 = jnp.full(rows.shape[0], 2166136261, jnp.uint32)
    h, _ = jax.lax.scan(mix, h0, rows.T)
    return h


def gigpo(
    episode_advantages: jax.Array,
    step_returns: jax.Array,
    group_ids: jax.Array,
    state_hash: jax.Array,
    mask: jax.Array,
    omega: float = 1.0,
    scale: bool = True,
    eps: float = 1e-6,
) -> jax.Array:
    """Group-in-group advantage (GiGPO): ``A = A^E + omega * A^S`` per step.

    Args:
        episode_advantages: ``f32[N]`` the group-relative episode advantage
            ``A^E`` of each step's episode (``grpo`` over episodes, gathered to steps).
        step_returns: ``f32[N]`` discounted return-to-go of each step
            (``turn_returns``).
        group_ids: ``int[N]`` the episode group (shared start state) of each step.
        state_hash: ``uint32[N]`` hash of the step's discrete state (``hash_rows``).
        mask: ``bool[N]`` real (active) steps.

    Steps with the same (group, state) form an anchor group; ``A^S`` normalises the
    step returns within it. A single-step anchor group gives ``A^S = 0``.
    """
    n = jnp.shape(step_returns)[0]
    # one 32-bit key per (group, state): a second FNV round over the pair
    key = (jnp.asarray(state_hash, jnp.uint32) ^ (jnp.asarray(group_ids).astype(jnp.uint32) * jnp.uint32(0x9E3779B1))) * jnp.uint32(16777619)
    # masked steps get a key of their own so they never join a real anchor group
    sentinel = jnp.array(jnp.iinfo(jnp.uint32).max, jnp.uint32)
    key = jnp.where(mask, key, sentinel)
    _, anchor = jnp.unique(key, size=n, return_inverse=True, fill_value=sentinel)
    anchor = anchor.reshape(-1)
    count, mean, std = _segment_stats(step_returns, anchor, n, mask)
    std = jnp.where((std < eps) | (not scale), 1.0, std)
    a_s = (jnp.asarray(step_returns, jnp.float32) - mean[anchor]) / std[anchor]
    a_s = jnp.where(count[anchor] <= 1, 0.0, a_s)
    out = jnp.asarray(episode_advantages, jnp.float32) + omega * a_s
    return jnp.where(mask, out, 0.0)

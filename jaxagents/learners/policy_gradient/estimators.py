"""From a trajectory to per-sample advantages: the config's choice among the
estimators of ``jaxagents.advantages``, applied per role with the sample masks.

``advantage``:
  * ``gae``: critic-based GAE over each agent's own turns (truncation bootstraps).
  * ``rae``: critic-free, ``R - b[g, p]`` with the EMA table carried in the train
    state (SPIRAL). ``R`` is the undiscounted turn return-to-go, equal to the
    episode return in games that pay at the end.
  * ``returns``: critic-free turn-level return-to-go (REINFORCE; with
    ``normalize="role"`` this is MARS's per-role normalised return).
  * ``grpo``: critic-free, ``(R - mean) / std`` over the batch's finished episodes
    that started from the same state (equal start-observation hashes) and role.
  * ``gigpo``: ``grpo`` plus ``omega`` times the step-level advantage over anchor
    states (same start group and same observation hash).

Critic-free estimators use only samples whose episode ended inside the rollout
(their return is exact); the rest get weight 0.

With ``axis_name`` (a data-parallel learner's device axis) the batch statistics are
global: ``batch``/``role`` normalisation and the RAE table update ``psum`` their
counts and sums over the axis, so every device computes the same statistics and the
same table. GRPO/GiGPO groups stay on each device: a group is formed from the
device's own finished episodes (groups by start-state hash would need a gather of
every device's hashes), so with several devices the groups are smaller than on one.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from jaxagents import advantages as A

ESTIMATORS = ("gae", "rae", "returns", "grpo", "gigpo")
NORMALIZATIONS = ("none", "minibatch", "batch", "role")


def uses_critic(advantage: str) -> bool:
    """Whether the ``advantage`` estimator needs a value function (only ``"gae"``)."""
    return advantage == "gae"


def weights_every_turn(advantage: str) -> bool:
    """Whether the sample weight is ``active & learner`` alone; critic-free
    estimators also drop the samples of episodes unfinished in the rollout."""
    return uses_critic(advantage)


def _compact_ids(*ids: jax.Array) -> list[jax.Array]:
    """Hash ids (any integers) -> dense ids in ``[0, total size)``, consistent across
    the given arrays (equal hashes get equal ids)."""
    keys = jnp.concatenate([i.reshape(-1) for i in ids])
    fill = jnp.array(jnp.iinfo(keys.dtype).max, keys.dtype)
    _, inv = jnp.unique(keys, size=keys.shape[0], return_inverse=True, fill_value=fill)
    inv, out, start = inv.reshape(-1), [], 0
    for i in ids:
        out.append(inv[start : start + i.size].reshape(i.shape))
        start += i.size
    return out


@struct.dataclass
class RoleAdvantages:
    """One role's training signal, arrays ``[T, E, n]``: the ``advantage``, the
    critic's ``target`` (the return for critic-free estimators), the sample
    ``weight`` (0 where the sample must not be trained on) and ``role_id`` (the slot's
    row of the RAE / per-role tables)."""

    advantage: jax.Array
    target: jax.Array
    weight: jax.Array
    role_id: jax.Array


def compute(
    advantage: str,
    traj: dict,
    last_value: dict,
    role_ids: dict,
    baseline: jax.Array,
    *,
    gamma: jax.Array,
    gae_lambda: jax.Array,
    role_gamma: dict | None = None,
    rae_alpha: float = 0.95,
    gigpo_omega: float = 1.0,
    normalize: str | None = None,
    axis_name=None,
) -> tuple[dict, jax.Array]:
    """Advantages of every role's samples.

    Args:
        advantage: one of ``ESTIMATORS``.
        traj: ``{role: Transition}``, arrays ``[T, E, n, ...]``.
        last_value: ``{role: f32[E, n]}``, the critic's value after the rollout.
        role_ids: ``{role: i32[n]}``, each slot's index into the ``baseline``
            table's role axis (``[1, P]``).
        baseline: the RAE table carried in the train state (``f32[1, P]``).
        gamma, gae_lambda: traced hyper-parameters; ``role_gamma`` ``{role: float}``
            overrides ``gamma`` for a role.
        rae_alpha, gigpo_omega: the RAE EMA rate and GiGPO's step weight.
        normalize: ``"batch"`` (one mean/std over every role's samples), ``"role"``
            (per role id) or None.
        axis_name: a device axis to reduce batch statistics over.

    Returns ``({role: RoleAdvantages}, new_baseline)``.
    """
    out = {}
    ep_entries = []  # (returns, role ids, mask) of finished episodes, for the RAE table
    role_gamma = dict(role_gamma or {})
    for role, tr in traj.items():
        learn = tr.active & tr.learner
        rid = jnp.broadcast_to(role_ids[role], tr.reward.shape)
        gamma_r = role_gamma.get(role, gamma)  # a role's own discount overrides the traced one
        if advantage == "gae":
            adv, target = A.gae(
                tr.reward, tr.value, tr.terminated, tr.truncated, last_value[role], gamma_r, gae_lambda,
                final_values=tr.final_value, active=tr.active,
            )
            weight = learn
        else:
            ret, complete = A.turn_returns(tr.reward, tr.terminated, tr.truncated, 1.0 if advantage in ("rae", "grpo") else gamma_r, active=tr.active)
            weight = learn & complete
            target = ret
            done = (tr.terminated | tr.truncated) & tr.learner
            if advantage == "returns":
                adv = ret
            elif advantage == "rae":
                adv = A.rae_advantages(ret, jnp.zeros_like(rid), rid, baseline)
                ep_entries.append((tr.episode_return.reshape(-1), rid.reshape(-1), done.reshape(-1)))
            else:  # grpo / gigpo: groups are (start state, role)
                group = (tr.start_hash * jnp.uint32(31) + rid.astype(jnp.uint32)).reshape(-1)
                r_ep = ret if advantage == "grpo" else A.turn_returns(tr.reward, tr.terminated, tr.truncated, 1.0, active=tr.active)[0]
                ids_s, ids_e = _compact_ids(group, group)
                episodes = (tr.episode_return.reshape(-1), ids_e, done.reshape(-1))
                adv = A.grpo(r_ep.reshape(-1), ids_s, group.shape[0] * 2, episodes=episodes).reshape(ret.shape)
                if advantage == "gigpo":
                    obs_hash = A.hash_rows(tr.obs.reshape(-1, *tr.obs.shape[3:]) * 1024.0)
                    adv = A.gigpo(adv.reshape(-1), ret.reshape(-1), group, obs_hash, weight.reshape(-1), gigpo_omega).reshape(ret.shape)
        out[role] = RoleAdvantages(adv, target, weight, rid)

    new_baseline = baseline
    if advantage == "rae":
        r, p, m = (jnp.concatenate(x) for x in zip(*ep_entries))
        new_baseline = A.rae_update(baseline, r, jnp.zeros_like(p), p, m, rae_alpha, axis_name)

    if normalize in ("batch", "role"):
        adv_all = jnp.concatenate([v.advantage.reshape(-1) for v in out.values()])
        w_all = jnp.concatenate([v.weight.reshape(-1) for v in out.values()])
        if normalize == "role":
            ids, num = jnp.concatenate([v.role_id.reshape(-1) for v in out.values()]), baseline.shape[1]
        else:
            ids, num = jnp.zeros(adv_all.shape, jnp.int32), 1
        normed = A.normalize_per_role(adv_all, ids, num, w_all, axis_name=axis_name)
        start = 0
        for role, v in out.items():
            out[role] = v.replace(advantage=normed[start : start + v.advantage.size].reshape(v.advantage.shape))
            start += v.advantage.size
    return out, new_baseline

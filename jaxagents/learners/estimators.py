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
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxagents import advantages as A

ESTIMATORS = ("gae", "rae", "returns", "grpo", "gigpo")
NORMALIZATIONS = ("none", "minibatch", "batch", "role")


def uses_critic(advantage: str) -> bool:
    return advantage == "gae"


def _group_stats(sample_keys, sample_vals, sample_w, ep_keys, ep_vals, ep_w):
    """Mean/std/count of ``ep_vals`` per key, gathered for every sample key."""
    keys = jnp.concatenate([ep_keys, sample_keys])
    size = keys.shape[0]
    _, inv = jnp.unique(keys, size=size, return_inverse=True, fill_value=jnp.array(jnp.iinfo(keys.dtype).max, keys.dtype))
    inv = inv.reshape(-1)
    count, mean, std = A._segment_stats(ep_vals, inv[: ep_keys.shape[0]], size, ep_w)
    s = inv[ep_keys.shape[0]:]
    return count[s], mean[s], std[s]


def compute(cfg, hp, traj: dict, last_value: dict, role_ids: dict, baseline: jax.Array, axis_name=None):
    """Returns ``({role: (advantage, target, weight)}, new_baseline)``, arrays
    ``[T, E, n]``; ``role_ids[role]`` is ``int[n]``, each slot's index into the
    ``baseline`` table's role axis (``[1, P]``)."""
    out = {}
    ep_entries = []  # (returns, role ids, mask) of finished episodes, for the RAE table
    role_gamma = dict(getattr(cfg, "role_gamma", ()) or ())
    for role, tr in traj.items():
        learn = tr.active & tr.learner
        rid = jnp.broadcast_to(role_ids[role], tr.reward.shape)
        gamma_r = role_gamma.get(role, hp.gamma)  # a role's own discount overrides the traced one
        if cfg.advantage == "gae":
            adv, target = A.gae(
                tr.reward, tr.value, tr.terminated, tr.truncated, last_value[role], gamma_r, hp.gae_lambda,
                final_values=tr.final_value, active=tr.active,
            )
            weight = learn
        else:
            gamma = 1.0 if cfg.advantage in ("rae", "grpo") else gamma_r
            ret, complete = A.turn_returns(tr.reward, tr.terminated, tr.truncated, gamma, active=tr.active)
            weight = learn & complete
            target = ret
            done = (tr.terminated | tr.truncated) & tr.learner
            if cfg.advantage == "returns":
                adv = ret
            elif cfg.advantage == "rae":
                adv = A.rae_advantages(ret, jnp.zeros_like(rid), rid, baseline)
                ep_entries.append((tr.episode_return.reshape(-1), rid.reshape(-1), done.reshape(-1)))
            else:  # grpo / gigpo
                group = (tr.start_hash * jnp.uint32(31) + rid.astype(jnp.uint32)).reshape(-1)
                r_ep = ret if cfg.advantage == "grpo" else A.turn_returns(tr.reward, tr.terminated, tr.truncated, 1.0, active=tr.active)[0]
                count, mean, std = _group_stats(group, None, None, group, tr.episode_return.reshape(-1), done.reshape(-1))
                single = count <= 1
                mean = jnp.where(single, 0.0, mean)
                std = jnp.where(single | (std < 1e-6), 1.0, std)
                adv = ((r_ep.reshape(-1) - mean) / std).reshape(ret.shape)
                if cfg.advantage == "gigpo":
                    obs_hash = A.hash_rows(tr.obs.reshape(-1, *tr.obs.shape[3:]) * 1024.0)
                    adv = A.gigpo(adv.reshape(-1), ret.reshape(-1), group, obs_hash, weight.reshape(-1), cfg.gigpo_omega).reshape(ret.shape)
        out[role] = [adv, target, weight, rid]

    new_baseline = baseline
    if cfg.advantage == "rae":
        r, p, m = (jnp.concatenate(x) for x in zip(*ep_entries))
        new_baseline = A.rae_update(baseline, r, jnp.zeros_like(p), p, m, cfg.rae_alpha, axis_name)

    if cfg.normalize in ("batch", "role"):
        flat = {k: [v[0].reshape(-1), v[3].reshape(-1), v[2].reshape(-1)] for k, v in out.items()}
        adv_all = jnp.concatenate([f[0] for f in flat.values()])
        ids = jnp.concatenate([f[1] for f in flat.values()]) if cfg.normalize == "role" else jnp.zeros(adv_all.shape, jnp.int32)
        w_all = jnp.concatenate([f[2] for f in flat.values()])
        num = baseline.shape[1] if cfg.normalize == "role" else 1
        normed = A.normalize_per_role(adv_all, ids, num, w_all, axis_name=axis_name)
        start = 0
        for role, v in out.items():
            size = v[0].size
            v[0] = normed[start : start + size].reshape(v[0].shape)
            start += size
    return {k: (v[0], v[1], v[2]) for k, v in out.items()}, new_baseline

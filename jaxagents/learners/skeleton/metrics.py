"""Episode metrics every learner reports: the mean return of the episodes that
finished in a rollout, per role or per named agent slot, summed over the data axis
when the environments are split over devices."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def episode_metrics(traj: dict, slot_names: dict | None = None, axis_name=None) -> dict:
    """Mean return of the episodes that finished in this rollout, per role -- or per
    name in ``slot_names[role]`` (one name per agent slot; self-play names the merged
    slots after the original roles, whose returns would otherwise average to 0).
    With ``axis_name`` the sums and counts are summed over the data axis with ``psum``."""
    total = (lambda x: x) if axis_name is None else (lambda x: jax.lax.psum(x, axis_name))  # noqa: E731
    m = {}
    for role, tr in traj.items():
        done = (tr.terminated | tr.truncated)[..., 0]  # [T, E]
        n = total(jnp.sum(done))
        names = (slot_names or {}).get(role)
        groups = {role: slice(None)} if names is None else {k: [i for i, x in enumerate(names) if x == k] for k in dict.fromkeys(names)}
        for name, idx in groups.items():
            ret = tr.episode_return[..., idx].mean(-1)
            m[f"episode_return/{name}"] = total(jnp.sum(jnp.where(done, ret, 0.0))) / jnp.maximum(n, 1)
        m["episodes"] = n
    return m


def slot_name_set(env, slot_names: dict | None) -> list[str]:
    """The names ``episode_metrics`` reports returns under."""
    out = []
    for role in env.roles:
        out.extend((slot_names or {}).get(role) or [role])
    return list(dict.fromkeys(out))

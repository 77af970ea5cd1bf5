"""Environment params that change with the update index (curricula).

A schedule maps scalar float fields of the environment's params to linear ramps over
updates. Config form (``PPOConfig.env_schedule``, YAML ``train.env_schedule``)::

    env_schedule:
      rate_max:      {from: 0.0, to: 1.0, start: 200, end: 400}
      energy_weight: {from: 0.0, to: 1.0, start: 0, end: 100}

``params.<name>`` is ``from`` for updates ``< start``, ``to`` for updates ``>= end`` and
linear between; update ``u`` collects its rollout under the params of ``u`` (the first
update is 0). The AI Economist's two-level curriculum in ``gtb`` is such a schedule:
the labour cost warms up in phase 1, the tax cap anneals in phase 2
(``baselines/configs/ippo_gtb_planner.yaml``). Schedules live in the learner's config,
not the environment, because they follow training progress, which an environment
does not see.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

KEYS = ("from", "to", "start", "end")


def parse(schedule) -> tuple:
    """Check the config form; return it as sorted hashable pairs
    ``((name, (from, to, start, end)), ...)``. Raises ``ValueError`` naming the entry."""
    if schedule is None:
        return ()
    if isinstance(schedule, tuple):
        schedule = dict(schedule)
    if not isinstance(schedule, dict):
        raise ValueError(f"env_schedule must be a mapping {{param: {{from, to, start, end}}}}, got {schedule!r}")
    out = []
    for name, ramp in schedule.items():
        if isinstance(ramp, tuple) and len(ramp) == 4:
            ramp = dict(zip(KEYS, ramp))
        if not isinstance(ramp, dict) or sorted(ramp) != sorted(KEYS):
            raise ValueError(f"env_schedule[{name!r}] must have exactly the keys {list(KEYS)}, got {ramp!r}")
        lo, hi = (float(ramp[k]) for k in ("from", "to"))
        if not (np.isfinite(lo) and np.isfinite(hi)):
            raise ValueError(f"env_schedule[{name!r}]: from and to must be finite numbers, got {lo} and {hi}")
        start, end = ramp["start"], ramp["end"]
        if not all(isinstance(u, int) and not isinstance(u, bool) and u >= 0 for u in (start, end)) or end < start:
            raise ValueError(f"env_schedule[{name!r}]: start and end must be update indices with 0 <= start <= end, "
                             f"got start={start!r}, end={end!r}")
        out.append((str(name), (lo, hi, start, end)))
    return tuple(sorted(out))


def check(schedule: tuple, env, env_params) -> None:
    """Every scheduled name is a scalar float field of ``env_params`` and both ends of
    its ramp are valid params (``env.validate_params``)."""
    for name, (lo, hi, _, _) in schedule:
        value = getattr(env_params, name, None)
        if value is None or np.ndim(value) != 0 or not jnp.issubdtype(jnp.asarray(value).dtype, jnp.floating):
            floats = sorted(k for k, v in vars(env_params).items()
                            if np.ndim(v) == 0 and jnp.issubdtype(jnp.asarray(v).dtype, jnp.floating))
            raise ValueError(f"env_schedule[{name!r}]: not a scalar float param of {env.name}; those are {floats}")
        for end in (lo, hi):
            env.validate_params(env_params.replace(**{name: jnp.asarray(end, jnp.asarray(value).dtype)}))


def params_at(env_params, schedule: tuple, update):
    """``env_params`` with every scheduled field at update ``update`` (an ``i32[]``,
    traced or not)."""
    if not schedule:
        return env_params
    u = jnp.asarray(update, jnp.float32)
    new = {}
    for name, (lo, hi, start, end) in schedule:
        frac = jnp.clip((u - start) / max(end - start, 1), 0.0, 1.0) if end > start else (u >= start).astype(jnp.float32)
        new[name] = (lo + (hi - lo) * frac).astype(jnp.asarray(getattr(env_params, name)).dtype)
    return env_params.replace(**new)

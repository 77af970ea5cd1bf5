"""Reference rollouts of the arena, recorded from the implementation before the fast step
(``COMMIT``, 2f74512: noise drawn every step, collision and boundary bookkeeping every tick).

``python tests/environments/robots/arena_golden.py`` re-records ``data/golden.npz`` and refuses
unless the code it imports is that commit's (``tests/reference_data.py`` says how): recorded
from today's code the comparison would be a self-comparison. ``test_fast_step.py`` compares
against it and checks that the file names the same commit.
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np

from jaxagents import make

PATH = os.path.join(os.path.dirname(__file__), "data", "golden.npz")
COMMIT = "2f74512c0e2240c6005ecebfe5a96307e2ae0b21"
ENVS, STEPS = 4, 6

# name -> (registered id, constructor kwargs, actuation noise); every scenario's reset, and
# the four filter x control modes of navigation with and without noise
CASES = {
    "nav_safe_tick": ("robots_navigation", {}, 0.0),
    "nav_safe_hold_noise": ("robots_navigation", {"zero_order_hold": True}, 0.1),
    "nav_free_tick_noise": ("robots_navigation", {"safety": False}, 0.1),
    "nav_free_hold": ("robots_navigation", {"safety": False, "zero_order_hold": True, "num_robots": 3}, 0.0),
    "nav_safe_hold_cont": ("robots_navigation", {"zero_order_hold": True, "action_mode": "continuous"}, 0.0),
    "foraging": ("robots_foraging", {"zero_order_hold": True}, 0.0),
    "predator_prey": ("robots_predator_prey", {"zero_order_hold": True}, 0.0),
    "discovery": ("robots_discovery", {"zero_order_hold": True}, 0.0),
    "material_transport": ("robots_material_transport", {"zero_order_hold": True}, 0.0),
    "warehouse": ("robots_warehouse", {"zero_order_hold": True}, 0.0),
    "arctic_transport": ("robots_arctic_transport", {"zero_order_hold": True}, 0.0),
    "continuous_rware": ("robots_continuous_rware", {"zero_order_hold": True}, 0.0),
}
# the per-tick info of the reference (what ``metrics="tick"`` must reproduce)
TICK_INFO = ("min_distance", "collisions", "boundary")


def rollout(case: str, **extra):
    """``{field: array}`` of ``ENVS`` environments over ``STEPS`` steps (reset included)."""
    env_id, kwargs, noise = CASES[case]
    env = make(env_id, **kwargs, **extra)
    p = env.default_params()
    p = p.replace(arena=p.arena.replace(actuation_noise=jnp.asarray(noise, jnp.float32)))
    keys = jax.random.split(jax.random.key(7), ENVS)
    state, ts = jax.jit(jax.vmap(env.reset_env, (0, None)))(keys, p)
    out = {"reset_pose": state.pose, "reset_obs": ts.obs}
    cont = env.action_mode == "continuous"

    def act(k):
        return {name: (jax.random.uniform(k, (ENVS, r.num_agents, 2), minval=-1, maxval=1) if cont
                       else jax.random.randint(k, (ENVS, r.num_agents), 0, 5))
                for name, r in env.roles.items()}

    step = jax.jit(jax.vmap(env.step_env, (0, 0, 0, None)))
    poses, infos, rewards = [], [], []
    for t in range(STEPS):
        k = jax.random.fold_in(jax.random.key(11), t)
        state, ts = step(jax.random.split(k, ENVS), state, act(jax.random.fold_in(k, 1)), p)
        poses.append(state.pose)
        infos.append(ts.info)
        rewards.append(ts.reward)
    out["pose"] = jnp.stack(poses)
    for key in infos[0]:
        out[f"info/{key}"] = jnp.stack([i[key] for i in infos])
    for role in rewards[0]:
        out[f"reward/{role}"] = jnp.stack([r[role] for r in rewards])
    out["last_obs"] = ts.obs
    flat = {}
    for k, v in out.items():
        if isinstance(v, dict):
            flat.update({f"{k}/{r}": np.asarray(x) for r, x in v.items()})
        else:
            flat[k] = np.asarray(v)
    return flat


def _reference_data():
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "reference_data", os.path.join(os.path.dirname(__file__), "..", "..", "reference_data.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def record(path: str = PATH) -> None:
    ref = _reference_data()
    root = ref.require_checkout(COMMIT)
    data = {}
    for case in CASES:
        data.update({f"{case}:{k}": v for k, v in rollout(case).items()})
    ref.require_modules_from(root)
    ref.save(path, data, COMMIT)


def load(path: str = PATH) -> dict:
    data = _reference_data().arrays(path)
    cases = {}
    for k, v in data.items():
        case, field = k.split(":", 1)
        cases.setdefault(case, {})[field] = v
    return cases


if __name__ == "__main__":
    # as the suite runs (tests/conftest.py): CPU, XLA's backend optimisations off
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_backend_optimization_level=0").strip()
    record()
    print(f"wrote {PATH}")

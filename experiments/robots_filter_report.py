"""Safety filters under random policies: constraint residuals and collisions over 10^5
env-steps, for our guarded filter and the robust (JaxRobotarium) barrier option, and
collisions of JaxRobotarium's own filter on the same workload.

Workload: ``robots_navigation`` with ``--robots`` robots, uniform random discrete actions,
``--num-envs`` environments for ``--steps`` env-steps each (auto-reset on ``done``), 30
ticks per step, with the filter recomputed every tick (``tick``) or once per step and
held (``hold``). Ours counts collisions at every tick (``metrics="tick"``): (tick, pair)
events closer than 0.135 m; JaxRobotarium's info counts the pairs in collision at the
end of each step (its own check), and the smallest end-of-step distance is taken from its
poses. Residual: the largest violation of the filter's own pair rows left by its QP
(m/s; for the robust option, of the robust rows), per filtering; iterations: per filtering.

    PYTHONPATH=experiments_tmp/jaxrobotarium_osqp python experiments/robots_filter_report.py \\
        --robots 4 --num-envs 1024 --steps 98 --controls hold tick --json experiments_tmp/robots_filter_report.json

JaxRobotarium is optional (``--filters guarded robust`` measures only ours); to include it,
put its code on the import path as ``robots_vs_jaxrobotarium.py`` describes, e.g.
``PYTHONPATH=experiments_tmp/jaxrobotarium_osqp`` for the filter JaxRobotarium pins
(335fde9, ``jaxopt.OSQP``).
"""

from __future__ import annotations

import argparse
import json
import os
import time

import jax
import jax.numpy as jnp
import numpy as np
from jaxagents_environments.robots import Navigation
from jaxagents_environments.robots.arena import COLLISION_MARGIN, ROBOT_RADIUS

from jaxagents.outputs import check_outputs  # output paths checked before computing


def parse():
    a = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    a.add_argument("--robots", type=int, default=4)
    a.add_argument("--num-envs", type=int, default=1024)
    a.add_argument("--steps", type=int, default=98, help="env-steps per environment (98 x 1,024 > 10^5)")
    a.add_argument("--controls", nargs="+", default=["hold", "tick"], choices=["hold", "tick"])
    a.add_argument("--filters", nargs="+", default=["guarded", "robust", "jaxrobotarium"],
                   choices=["guarded", "robust", "jaxrobotarium"])
    a.add_argument("--filter-iters", type=int, default=None,
                   help="iterations (guarded) / iteration cap (robust); default 20 / 200")
    a.add_argument("--filter-tol", type=float, default=1e-4)
    a.add_argument("--json", default=None)
    return check_outputs(a.parse_args())


def ours(a, barrier, control):
    iters = a.filter_iters or (20 if barrier == "guarded" else 200)
    env = Navigation(num_robots=a.robots, zero_order_hold=control == "hold", barrier=barrier, metrics="tick",
                     filter_iters=iters, filter_tol=a.filter_tol)
    p = env.default_params()
    n, ne, ticks = a.robots, a.num_envs, env.ticks_per_step
    calls = 1 if control == "hold" else ticks

    def one(k, s, act):
        k1, k2 = jax.random.split(k)
        s1, ts = env.step_env(k1, s, {"robot": act}, p)
        s0, _ = env.reset_env(k2, p)
        done = ts.terminated | ts.truncated
        return jax.tree_util.tree_map(lambda x, y: jnp.where(done, x, y), s0, s1), ts.info

    batch = jax.vmap(one)

    @jax.jit
    def run(key, s):
        def body(s, k):
            ka, ks = jax.random.split(k)
            s, info = batch(jax.random.split(ks, ne), s, jax.random.randint(ka, (ne, n), 0, 5))
            return s, (info["filter_residual"], info["collisions"], info["boundary"], info["min_distance"],
                       info["filter_iters"])

        return jax.lax.scan(body, s, jax.random.split(key, a.steps))[1]

    s = jax.vmap(env.reset_env, (0, None))(jax.random.split(jax.random.key(0), ne), p)[0]
    run.lower(jax.random.key(1), s).compile()
    t = time.perf_counter()
    res, coll, out, mind, it = jax.block_until_ready(run(jax.random.key(1), s))
    wall = time.perf_counter() - t
    res, it = np.asarray(res), np.asarray(it) / calls
    return {
        "filter": barrier, "control": control, "env_steps": ne * a.steps, "filter_iters": iters,
        "filter_tol": a.filter_tol if barrier == "robust" else None,
        "collisions": int(np.sum(coll)), "boundary": int(np.sum(out)), "min_distance": float(np.min(mind)),
        "residual_max": float(res.max()), "residual_p99": float(np.quantile(res, 0.99)),
        "residual_mean": float(res.mean()), "steps_with_residual_over_1e-3": float(np.mean(res > 1e-3)),
        "iters_mean": float(it.mean()), "iters_max": float(it.max()),
        "steps_at_cap": float(np.mean(it >= iters)) if control == "hold" else None,
        "env_steps_per_s": ne * a.steps / wall,
    }


def theirs(a, control):
    from robots_vs_jaxrobotarium import (
        import_theirs,  # this script's folder is on sys.path
    )

    Theirs = import_theirs()
    env = Theirs(a.robots, max_steps=100, controller={"controller": "clf_uni_position", "barrier_fn": "robust_barriers"},
                 update_frequency=30, eval=control == "tick")
    agents, n, ne = list(env.agents), a.robots, a.num_envs
    step = jax.vmap(env.step)
    far = 10.0

    @jax.jit
    def run(key, s):
        def body(s, k):
            ka, ks = jax.random.split(k)
            act = jax.random.randint(ka, (ne, n), 0, 5)
            _, s, _, _, info = step(jax.random.split(ks, ne), s, {g: act[:, i] for i, g in enumerate(agents)})
            xy = s.p_pos[:, :n, :2]
            d = jnp.sqrt(jnp.sum((xy[:, :, None] - xy[:, None]) ** 2, -1)) + far * jnp.eye(n)
            # the pose after the step (before a reset replaces it) is what their info checked;
            # the smallest distance here is of the state carried on (reset states included)
            return s, (info["collision"][:, 0], info["boundary"][:, 0], jnp.min(d, (1, 2)))

        return jax.lax.scan(body, s, jax.random.split(key, a.steps))[1]

    s = jax.vmap(env.reset)(jax.random.split(jax.random.key(0), ne))[1]
    run.lower(jax.random.key(1), s).compile()
    t = time.perf_counter()
    coll, out, mind = jax.block_until_ready(run(jax.random.key(1), s))
    wall = time.perf_counter() - t
    return {"filter": "jaxrobotarium", "control": control, "env_steps": ne * a.steps,
            "collisions": int(np.sum(coll)), "boundary": int(np.sum(out)), "min_distance": float(np.min(mind)),
            "env_steps_per_s": ne * a.steps / wall}


def main():
    a = parse()
    rows = []
    print(f"collision distance {2 * ROBOT_RADIUS + COLLISION_MARGIN:.3f} m; load {os.getloadavg()[0]:.2f}")
    for control in a.controls:
        for f in a.filters:
            row = theirs(a, control) if f == "jaxrobotarium" else ours(a, f, control)
            rows.append(row)
            print(json.dumps(row), flush=True)
    print(f"load {os.getloadavg()[0]:.2f} at end")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()

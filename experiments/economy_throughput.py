"""Taxation throughput: one economy of N workers, and many economies with their own params.

DESIGN.md's protocol (``jaxagents.bench``: a jitted ``lax.scan`` of the batched step
with auto-reset, random legal actions, compile timed apart, one warm-up, best and
median of the timed runs) for

* one economy with N in {10^3, 10^4, 10^5, 10^6} workers (``--sizes``);
* ``--economies`` economies of ``--small-n`` workers each, (a) sharing one params
  struct (``VecEnv``) and (b) each with its *own* params: a ``vmap`` over the params
  too, every economy with a different labour cost, skill distribution scale and
  initial rates (a sweep in one program). ``VecEnv`` shares params across the batch, so
  (b) runs ``vmap(AutoReset)``, which computes a reset (fresh skill draws) on every
  step and selects it where an episode ended; (a) is measured both ways so that the
  cost of per-economy params and the cost of that reset path can be told apart.

Agent-steps count the N workers and the planner. Memory per agent is the bytes of
the batched state plus time step divided by the agents.

    python experiments/economy_throughput.py --sizes 1000 10000 100000 1000000 \
        --economies 1024 --small-n 100 --steps 104 [--action-rng hash] [--out throughput.json]
"""

import argparse
import json

import jax
import jax.numpy as jnp
import numpy as np

import jaxagents
from jaxagents import bench
from jaxagents.outputs import check_outputs  # output paths checked before computing
from jaxagents.core import random_actions


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000, 1_000_000])
    p.add_argument("--economies", type=int, default=1024)
    p.add_argument("--small-n", type=int, default=100)
    p.add_argument("--steps", type=int, default=104, help="one default episode is 104 steps")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--action-rng", default="threefry", choices=("threefry", "hash"),
                   help="how the harness draws the random actions (jaxagents.core.rng)")
    p.add_argument("--out", default=None)
    return check_outputs(p.parse_args())


def nbytes(tree) -> int:
    return sum(x.nbytes for x in jax.tree.leaves(tree) if hasattr(x, "nbytes"))


def per_economy_params(env, num: int, key):
    """``num`` different params structs stacked: labour cost x U(0.5, 2), initial
    rates U(0.1, 0.6) per bracket, income unit fixed."""
    base = env.default_params()
    k1, k2 = jax.random.split(key)
    params = jax.tree.map(lambda x: jnp.broadcast_to(x, (num, *jnp.shape(x))), base)
    return params.replace(
        labour_cost=base.labour_cost * jax.random.uniform(k1, (num,), minval=0.5, maxval=2.0),
        initial_rates=jax.random.uniform(k2, (num, env.num_brackets), minval=0.1, maxval=0.6),
    )


def vmapped_params_program(env, num: int, steps: int, key, action_rng: str = "threefry"):
    """Like ``bench``'s ``autoreset`` program but with ``vmap`` over (key, state,
    actions, params)."""
    wrapped = jaxagents.AutoReset(env)
    params = per_economy_params(env, num, jax.random.fold_in(key, 1))
    for i in range(min(num, 4)):  # host validation of a few members (all are in range by construction)
        env.validate_params(jax.tree.map(lambda x: x[i], params))
    state, ts = jax.jit(jax.vmap(wrapped.reset))(jax.random.split(key, num), params)
    ts = bench.carried_timestep(env, ts)  # as bench's programs carry it (no always-legal masks)

    def run(key, state, ts, params):
        def body(carry, _):
            key, state, ts, ret = carry
            key, k_act, k_step = jax.random.split(key, 3)
            actions = random_actions(env, k_act, ts, batch_shape=(num,), rng=action_rng)
            state, ts = jax.vmap(wrapped.step)(jax.random.split(k_step, num), state, actions, params)
            ts = bench.carried_timestep(env, ts)
            return (key, state, ts, ret + sum(jnp.sum(r) for r in ts.reward.values())), None

        return jax.lax.scan(body, (key, state, ts, jnp.zeros(())), None, length=steps)[0]

    return run, (key, state, ts, params)


def main():
    a = parse()
    rows = []
    for n in a.sizes:
        env = jaxagents.make("taxation", num_workers=n)
        res = bench.benchmark(env, num_envs=1, steps=a.steps, repeats=a.repeats, action_rng=a.action_rng)
        r = res.rows[0]
        state, ts = env.reset(jax.random.key(0))
        rows.append({"setting": f"1 economy x {n:,} workers", "agents": n + 1, "env_steps_per_s": r.best_env_steps_per_s,
                     "agent_steps_per_s": r.best_agent_steps_per_s, "median_agent_steps_per_s": r.median_agent_steps_per_s,
                     "compile_s": r.compile_s, "bytes_per_agent": (nbytes(state) + nbytes(ts)) / (n + 1)})
        print(rows[-1], flush=True)
    env = jaxagents.make("taxation", num_workers=a.small_n)
    res = bench.benchmark(env, num_envs=a.economies, steps=a.steps, repeats=a.repeats, mode=("vec", "autoreset"),
                          action_rng=a.action_rng)
    for r in res.rows:
        how = "VecEnv" if r.mode == "vec" else "vmap(AutoReset)"
        rows.append({"setting": f"{a.economies:,} economies x {a.small_n} workers, shared params, {how}", "agents": a.small_n + 1,
                     "env_steps_per_s": r.best_env_steps_per_s, "agent_steps_per_s": r.best_agent_steps_per_s,
                     "median_agent_steps_per_s": r.median_agent_steps_per_s, "compile_s": r.compile_s})
        print(rows[-1], flush=True)
    run, args = vmapped_params_program(env, a.economies, a.steps, jax.random.key(0), a.action_rng)
    compile_s, times, _ = bench._measure(run, args, a.repeats)
    env_steps = a.economies * a.steps
    rows.append({"setting": f"{a.economies:,} economies x {a.small_n} workers, own params each, vmap(AutoReset)",
                 "agents": a.small_n + 1, "env_steps_per_s": env_steps / min(times),
                 "agent_steps_per_s": env_steps * (a.small_n + 1) / min(times),
                 "median_agent_steps_per_s": env_steps * (a.small_n + 1) / float(np.median(times)), "compile_s": compile_s})
    print(rows[-1], flush=True)
    out = {"rows": rows, "machine": bench.machine_info(), "steps": a.steps, "action_rng": a.action_rng}
    if a.out:
        with open(a.out, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()

"""Does the public auto-reset path cost more than stepping and resetting inline?

Issue 36 reported ``jaxagents bench --mode autoreset`` about 1.5x slower than the inline
step-then-select of ``robots_vs_jaxrobotarium.py`` at 64 and 1,024 environments. That
script also had its own harness (fused key splits, a cheap action draw), so this one
puts both step functions in *the same* harness, the bench protocol's
(``jaxagents.bench.protocol._scan_rollout``: random legal actions from
``random_actions``, every output carried), and times them interleaved:

* ``public``: ``vmap(AutoReset(env).step)`` with ``jax.random.split`` keys, what
  ``jaxagents bench --mode autoreset`` runs (a reset computed for every environment at
  every step: under ``vmap`` the wrapper's ``cond`` is a select);
* ``inline``: ``vmap`` of ``step_env``, ``reset_env`` and ``where(done, ...)`` over the
  state and observations, with ``jaxagents.core.threefry`` keys (the script's).

Each program is compiled once; then the two run alternately ``--repeats`` times and the
best run of each counts (the machine's noise is large; a best of interleaved runs is
the steadiest figure it gives)::

    python experiments/autoreset_vs_inline.py --env robots_navigation \\
        --kwargs num_robots=4 safety=False zero_order_hold=True --num-envs 1 64 1024
"""

from __future__ import annotations

import argparse
import ast
import time

import jax
import jax.numpy as jnp

import jaxagents
from jaxagents.bench.ours import _reward_sum, carried_timestep
from jaxagents.bench.protocol import _scan_rollout
from jaxagents.core import random_actions, threefry


def _where(done, new, old):
    return jax.tree.map(lambda x, y: jnp.where(done, x, y), new, old)


def program(env, params, kind: str, num_envs: int, steps: int):
    """``(compiled, args)``: the bench protocol's scan over ``kind``'s batched step."""
    if kind == "inline":
        def one(k, s, a):
            k_step, k_reset = threefry.split(k)
            s1, ts1 = env.step_env(k_step, s, a, params)
            s0, ts0 = env.reset_env(k_reset, params)
            done = ts1.done
            return _where(done, s0, s1), ts1.replace(obs=_where(done, ts0.obs, ts1.obs),
                                                     action_mask=_where(done, ts0.action_mask, ts1.action_mask))

        batched, split = jax.vmap(one), threefry.split
    else:
        wrapped = jax.vmap(jaxagents.AutoReset(env).step, in_axes=(0, 0, 0, None))
        batched, split = (lambda k, s, a: wrapped(k, s, a, params)), jax.random.split

    def sample(key, state, ts):
        return random_actions(env, key, ts, batch_shape=(num_envs,))

    def step(key, state, ts, actions, _):
        state, ts = batched(split(key, num_envs), state, actions)
        return state, carried_timestep(env, ts), _reward_sum(ts.reward), jnp.sum(ts.done, dtype=jnp.int32)

    state, ts = jax.vmap(env.reset_env, (0, None))(jax.random.split(jax.random.key(0), num_envs), params)
    args = (jax.random.key(1), state, carried_timestep(env, ts), params)
    compiled = jax.jit(_scan_rollout(sample, step, steps)).lower(*args).compile()
    jax.block_until_ready(compiled(*args))  # warm-up
    return compiled, args


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--env", default="robots_navigation", help="a registered id")
    p.add_argument("--kwargs", nargs="*", default=[], metavar="KEY=VALUE", help="constructor arguments")
    p.add_argument("--num-envs", type=int, nargs="+", default=[1, 64, 1024])
    p.add_argument("--steps", type=int, default=500)
    p.add_argument("--repeats", type=int, default=9)
    args = p.parse_args(argv)
    kwargs = {}
    for item in args.kwargs:
        key, _, value = item.partition("=")
        try:
            kwargs[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            kwargs[key] = value
    env = jaxagents.make(args.env, **kwargs)
    params = env.default_params()
    print(f"{args.env} {kwargs}; jax {jax.__version__}; {args.steps} steps, best of {args.repeats} interleaved runs")
    for n in args.num_envs:
        progs = {kind: program(env, params, kind, n, args.steps) for kind in ("public", "inline")}
        best = dict.fromkeys(progs, float("inf"))
        for _ in range(args.repeats):
            for kind, (compiled, call_args) in progs.items():
                t0 = time.perf_counter()
                jax.block_until_ready(compiled(*call_args))
                best[kind] = min(best[kind], time.perf_counter() - t0)
        rate = {kind: n * args.steps / t for kind, t in best.items()}
        print(f"num_envs={n:>5}: public autoreset {rate['public']:>11,.0f}  inline {rate['inline']:>11,.0f} env-steps/s"
              f"  inline / public {rate['inline'] / rate['public']:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

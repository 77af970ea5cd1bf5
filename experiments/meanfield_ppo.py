"""Mean-field PPO on crowd modelling: exploitability of the learned population policy.

One PPO policy (IPPO, role "agent", critic on the agent's own observation) is shared by
the ``N`` agents of ``mf_crowd`` (OpenSpiel's 1-D crowd modelling, its constants) and
trained on the agent view (``baselines/configs/ippo_mf_crowd.yaml`` holds the same
recipe for ``jaxagents train``). Every ``--eval-every`` updates, inside the compiled
program, the network is tabulated along its own mean-field flow
(``jaxagents_environments.meanfield.policy_eval``) and its exact exploitability computed on the
distributional view (``solvers.exploitability``; the N -> infinity game). Fictitious
play and online mirror descent from ``solvers.py`` give the reference curves
(exploitability per iteration).

    python experiments/meanfield_ppo.py --num-agents 10000 --updates 500 \
        --eval-every 10 --out results.json [--plot curve.png] [train.lr=3e-3 ...]

The PPO recipe is read from ``--config`` (default ``ippo_mf_crowd.yaml``) with
``key=value`` overrides; ``--num-agents`` and ``--updates`` replace its ``N`` and budget.

    python experiments/meanfield_ppo.py --replot curve.png run1.json run2.json

For 10^5-10^6 agents add ``train.agents_per_update=10000``: each update then trains on
10^4 randomly chosen agents (x 10 steps) while the rollout moves all N.

Prints one line per evaluation and the solvers' exploitability; ``--out`` writes all
of it as JSON. Env steps count steps of one environment (all its N agents at once);
agent steps = env steps x N.
"""

import argparse
import json
import os
import time

import jax
import jax.numpy as jnp
import numpy as np
from jaxagents_environments.meanfield import solvers
from jaxagents_environments.meanfield.policy_eval import policy_exploitability

from jaxagents import runner
from jaxagents.outputs import check_outputs  # output paths checked before computing
from jaxagents.learners.policy_gradient import ppo

CONFIGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "baselines", "configs")


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", default=os.path.join(CONFIGS, "ippo_mf_crowd.yaml"))
    p.add_argument("--num-agents", type=int, default=10_000)
    p.add_argument("--updates", type=int, default=500, help="PPO updates (one episode of num_envs envs each)")
    p.add_argument("--eval-every", type=int, default=10)
    p.add_argument("--solver-iters", type=int, default=200)
    p.add_argument("--out", default=None)
    p.add_argument("--plot", default=None)
    p.add_argument("overrides", nargs="*", help="config overrides, e.g. train.lr=3e-3 seed=1")
    return check_outputs(p.parse_args())


def main():
    a = parse()
    if a.updates % a.eval_every:
        raise ValueError(f"--updates ({a.updates}) must be a multiple of --eval-every ({a.eval_every})")
    config = runner.load_config(a.config, a.overrides)
    config["env"].setdefault("kwargs", {})["num_agents"] = a.num_agents
    env, params = runner.make_env(config["env"])
    E = config["train"].get("num_envs", 1)  # the budget is --updates, whatever the config's total_timesteps
    cfg = ppo.PPOConfig(**{**config["train"], "total_timesteps": a.updates * E * config["train"]["num_steps"]})
    train = ppo.make_train(cfg, env, env_params=params)
    steps_per_update = E * cfg.num_steps

    def exploit(state):
        fn = train.agents.logits_fn(state.params["agent"], "agent")
        return policy_exploitability(env, params, fn), policy_exploitability(env, params, fn, "greedy")

    def segment(state, _):  # eval_every updates, then the exact evaluation
        state, m = jax.lax.scan(lambda s, _: train.update(s), state, None, a.eval_every)
        return state, (exploit(state), jax.tree.map(jnp.mean, m))

    @jax.jit
    def program(key):
        state = train.init(key)
        _, (ex, m) = jax.lax.scan(segment, state, None, a.updates // a.eval_every)
        return exploit(state), ex, m

    t0, c0 = time.perf_counter(), time.process_time()
    key = jax.random.key(config["seed"])
    compiled = program.lower(key).compile()
    t1, c1 = time.perf_counter(), time.process_time()
    ex0, (ex, ex_greedy), m = jax.block_until_ready(compiled(key))
    t2, c2 = time.perf_counter(), time.process_time()

    steps = [0] + [int(u * steps_per_update) for u in range(a.eval_every, a.updates + 1, a.eval_every)]
    ppo_ex = [float(ex0[0])] + np.asarray(ex).tolist()
    ppo_greedy = [float(ex0[1])] + np.asarray(ex_greedy).tolist()
    ret = np.asarray(m["episode_return/agent"]).tolist()
    for s, e, g, r in zip(steps, ppo_ex, ppo_greedy, [float("nan")] + ret):
        print(f"env_steps {s:7d}  agent_steps {s * a.num_agents:.3g}  exploitability {e:.4f}  greedy {g:.4f}  return {r:.3f}")

    fp = jax.jit(solvers.fictitious_play, static_argnums=(0, 2))(env, params, a.solver_iters)
    omd = jax.jit(solvers.mirror_descent, static_argnums=(0, 2))(env, params, a.solver_iters)
    fp_ex, omd_ex = np.asarray(fp.exploitability).tolist(), np.asarray(omd.exploitability).tolist()
    for k in sorted({0, 1, 10, 50, a.solver_iters} & set(range(a.solver_iters + 1))):
        print(f"iteration {k:4d}  fictitious play {fp_ex[k]:.4f}  mirror descent {omd_ex[k]:.4f}")
    print(f"compile {t1 - t0:.1f} s wall; train {t2 - t1:.1f} s wall, {c2 - c1:.1f} s process CPU")

    out = dict(args=vars(a), config=config, env_steps=steps, agent_steps=[s * a.num_agents for s in steps], ppo_exploitability=ppo_ex,
               ppo_greedy_exploitability=ppo_greedy, episode_return=ret, fictitious_play=fp_ex, mirror_descent=omd_ex,
               compile_s=t1 - t0, train_wall_s=t2 - t1, train_cpu_s=c2 - c1)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(out, f, indent=1)
    if a.plot:
        plot([out], a.plot)


def plot(runs, path):
    """Left: PPO exploitability vs env steps, one line per run (greedy: first run only).
    Right: the solvers per iteration (from the first run)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (l, r) = plt.subplots(1, 2, figsize=(9.5, 3.6))
    for i, o in enumerate(runs):
        n = o["args"]["num_agents"]
        k = o["config"]["train"].get("agents_per_update")
        sub = f", {k:,} agents/update" if k and k < n else ""
        line, = l.plot(o["env_steps"], o["ppo_exploitability"], label=f"PPO N=$10^{{{round(np.log10(n))}}}$, seed {o['config']['seed']}{sub}")
        if i == 0:
            l.plot(o["env_steps"], o["ppo_greedy_exploitability"], ls=":", color=line.get_color(), lw=0.8, label="  its greedy policy")
    o = runs[0]
    for name, key, color in (("fictitious play", "fictitious_play", "tab:gray"), ("mirror descent", "mirror_descent", "k")):
        r.plot(o[key], label=name, color=color)
        for k, ls in ((50, "--"), (len(o[key]) - 1, ":")):
            l.axhline(o[key][k], color=color, ls=ls, lw=0.8, label=f"{name}, {k} it.")
    l.set_xscale("symlog", linthresh=10)
    l.set(yscale="log", xlim=(0, max(max(o["env_steps"]) for o in runs)), ylim=(3e-4, 10),
          xlabel="env steps (all N agents step; 10 per update)", ylabel="exploitability", title="PPO, one policy shared by N agents")
    r.set(yscale="log", xlabel="iteration", title="solvers (distributional view)")
    l.legend(fontsize=6, ncol=2, loc="lower left"), r.legend(fontsize=7)
    fig.suptitle("crowd modelling 1-D (mf_crowd), exact exploitability", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    import sys

    if sys.argv[1:2] == ["--replot"]:  # --replot OUT.png RUN.json [RUN.json ...]: one figure from saved runs
        plot([json.load(open(f)) for f in sys.argv[3:]], sys.argv[2])
    else:
        main()

"""IPPO and MAPPO baselines on the eight Robotarium-arena scenarios, against a random policy.

Runs ``baselines/configs/{ippo,mappo}_robots_<scenario>.yaml`` one after the other through
``jaxagents.runner.run`` (the code path of ``jaxagents train``), measures each run's
process CPU time, measures the mean episode return of uniformly random actions on the
same environment (same constructor options and params), and draws one learning-curve
panel per scenario plus a markdown table.

    python experiments/robots_baselines.py                       # all 16 runs
    python experiments/robots_baselines.py --scenarios navigation warehouse \
        --learners ippo --runs-dir experiments_tmp/robots_runs [train.lr=3e-4 ...]

Runs whose ``<runs-dir>/<learner>_robots_<scenario>/results.json`` exists are reused
(``--force`` reruns them), so an interrupted sweep continues and ``--plot-only`` redraws.
Outputs: ``--figure`` (default docs/figures/robots_baselines.png) and ``--table``
(default ``<runs-dir>/robots_baselines.md``).

Returns: the curve of a run is the mean over its roles of ``episode_return/<role>`` (each
the mean over the role's agents of the undiscounted return of the episodes that finished
during an update's rollout; updates in which none finished are skipped). The team
scenarios give every robot the same reward, so their roles agree; navigation's reward is
per robot. The random reference is the same quantity for ``jaxagents.random_actions``
over ``--random-envs`` environments x ``--random-steps`` steps (auto-reset).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxagents
from jaxagents import runner, tracking
from jaxagents.outputs import check_outputs  # output paths checked before computing
from jaxagents.core.wrappers import VecEnv

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
SCENARIOS = ("navigation", "foraging", "predator_prey", "discovery", "material_transport", "warehouse",
             "arctic_transport", "continuous_rware")
LEARNERS = ("ippo", "mappo")


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scenarios", nargs="+", default=list(SCENARIOS), choices=SCENARIOS)
    p.add_argument("--learners", nargs="+", default=list(LEARNERS), choices=LEARNERS)
    p.add_argument("--runs-dir", default=os.path.join(ROOT, "experiments_tmp", "robots_runs"))
    p.add_argument("--figure", default=os.path.join(ROOT, "docs", "figures", "robots_baselines.png"))
    p.add_argument("--table", default=None, help="markdown table path (default <runs-dir>/robots_baselines.md)")
    p.add_argument("--random-envs", type=int, default=64)
    p.add_argument("--random-steps", type=int, default=300)
    p.add_argument("--force", action="store_true", help="rerun runs that already have results")
    p.add_argument("--plot-only", action="store_true", help="train nothing; draw what the runs dir holds")
    p.add_argument("overrides", nargs="*", help="config overrides for every run, e.g. train.lr=3e-4")
    return check_outputs(p.parse_args())


def config_path(learner: str, scenario: str) -> str:
    return os.path.join(ROOT, "baselines", "configs", f"{learner}_robots_{scenario}.yaml")


def train_one(learner, scenario, a) -> dict | None:
    """Run one config (or reuse its results); returns results plus ``cpu_s``."""
    run_dir = os.path.join(a.runs_dir, f"{learner}_robots_{scenario}")
    done = os.path.isfile(os.path.join(run_dir, "results.json"))
    if a.plot_only or (done and not a.force):
        if not done:
            return None
        with open(os.path.join(run_dir, "results.json")) as f:
            return json.load(f)
    if os.path.isdir(run_dir):  # --force or an interrupted run: start afresh, not from old checkpoints
        shutil.rmtree(run_dir)
    config = runner.load_config(config_path(learner, scenario), a.overrides)
    config["log"]["progress"] = False
    load = os.getloadavg()[0]
    c0 = time.process_time()
    res = runner.run(config, run_dir=run_dir, quiet=True)
    res["cpu_s"] = time.process_time() - c0  # compile included
    res["load_1min"] = [load, os.getloadavg()[0]]
    with open(os.path.join(run_dir, "results.json"), "w") as f:
        json.dump(res, f, indent=2)
    print(f"{learner:5} {scenario:20} {res['env_steps']:,} env steps, {res['cpu_s']:.0f} CPU-s "
          f"({res['wall_s']:.0f} s wall, compile {res['compile_s']:.0f} s), load {load:.1f}->{os.getloadavg()[0]:.1f}",
          flush=True)
    return res


def curve(run_dir: str) -> tuple[np.ndarray, np.ndarray]:
    """``(env_steps, return)`` of the updates in which episodes finished."""
    rows = tracking.read_rows(os.path.join(run_dir, "metrics.jsonl"))
    xs, ys = [], []
    for r in rows:
        rets = [v for k, v in r.items() if k.startswith("episode_return/") and not k.endswith("@seeds")]
        if rets and r.get("episodes", 0) > 0:
            xs.append(r["env_steps"])
            ys.append(float(np.mean(rets)))
    return np.asarray(xs), np.asarray(ys)


def random_return(scenario: str, a) -> float:
    """Mean episode return (mean over roles of the per-role mean over agents) of
    uniformly random actions, on the IPPO config's environment."""
    config = runner.load_config(config_path("ippo", scenario), a.overrides)
    env, params = runner.make_env(config["env"])
    vec = VecEnv(env, a.random_envs)

    @jax.jit
    def rollout(key):
        k0, k1 = jax.random.split(key)
        state, ts = vec.reset(k0, params)
        ret0 = {r: jnp.zeros((a.random_envs, role.num_agents)) for r, role in env.roles.items()}

        def body(carry, k):
            state, ts, ret = carry
            ka, ks = jax.random.split(k)
            acts = jaxagents.random_actions(env, ka, ts, (a.random_envs,))
            state, ts = vec.step(ks, state, acts, params)
            ret = {r: ret[r] + ts.reward[r] for r in ret}
            done = ts.terminated | ts.truncated
            finished = jnp.stack([ret[r].mean(-1) for r in ret]).mean(0)  # [E]
            ret = {r: jnp.where(done[:, None], 0.0, v) for r, v in ret.items()}
            return (state, ts, ret), (jnp.sum(jnp.where(done, finished, 0.0)), jnp.sum(done))

        _, (total, count) = jax.lax.scan(body, (state, ts, ret0), jax.random.split(k1, a.random_steps))
        return total.sum() / jnp.maximum(count.sum(), 1), count.sum()

    mean, count = rollout(jax.random.key(123))
    if int(count) == 0:
        raise ValueError(f"{scenario}: no random episode finished in --random-steps={a.random_steps} steps")
    return float(mean)


def window_means(y: np.ndarray) -> tuple[float, float]:
    k = max(1, int(round(0.1 * len(y))))
    return float(np.mean(y[:k])), float(np.mean(y[-k:]))


def main():
    a = parse()
    os.makedirs(a.runs_dir, exist_ok=True)
    results = {}
    for s in a.scenarios:  # sequential: one training run at a time
        for l in a.learners:
            results[(l, s)] = train_one(l, s, a)

    cache = os.path.join(a.runs_dir, "random.json")
    randoms = json.load(open(cache)) if os.path.isfile(cache) else {}
    for s in a.scenarios:
        if s not in randoms or (a.force and not a.plot_only):
            randoms[s] = random_return(s, a)
    with open(cache, "w") as f:
        json.dump(randoms, f, indent=2)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = min(4, len(a.scenarios))
    rows_n = -(-len(a.scenarios) // cols)
    fig, axes = plt.subplots(rows_n, cols, figsize=(3.2 * cols, 2.6 * rows_n), squeeze=False)
    lines = ["| scenario | learner | first 10 % | last 10 % | random | env steps | CPU s |", "|---|---|---|---|---|---|---|"]
    for ax, s in zip(axes.flat, a.scenarios):
        for l, colour in zip(a.learners, ("tab:blue", "tab:orange")):
            res = results[(l, s)]
            if res is None:
                continue
            x, y = curve(res["run_dir"])
            if len(y) == 0:
                continue
            ax.plot(x / 1e6, y, color=colour, lw=1.2, label=l.upper())
            first, last = window_means(y)
            cpu = f"{res['cpu_s']:.0f}" if res.get("cpu_s") else "n/a"
            lines.append(f"| {s} | {l.upper()} | {first:.2f} | {last:.2f} | {randoms[s]:.2f} | {res['env_steps']:,} | {cpu} |")
        ax.axhline(randoms[s], color="grey", ls="--", lw=1, label="random")
        ax.set_title(s.replace("_", " "), fontsize=9)
        ax.tick_params(labelsize=7)
        ax.set_xlabel("env steps (M)", fontsize=7)
    for ax in list(axes.flat)[len(a.scenarios):]:
        ax.axis("off")
    axes.flat[0].set_ylabel("episode return", fontsize=8)
    axes.flat[0].legend(fontsize=7)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(a.figure)), exist_ok=True)
    fig.savefig(a.figure, dpi=90)
    table = "\n".join(lines)
    with open(a.table or os.path.join(a.runs_dir, "robots_baselines.md"), "w") as f:
        f.write(table + "\n")
    print(table)
    print(f"figure: {a.figure}")


if __name__ == "__main__":
    sys.exit(main())

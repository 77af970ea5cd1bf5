"""EconGym's research tasks at a small budget: the learned roles against EconGym's rules.

For each task (``baselines/configs/econ/<task>.yaml``,
``environments/economy/econgym/tasks.py``): train its learning roles with IPPO (every other
role follows EconGym's rule), then play ``--episodes`` fresh economies with the learned
policies and the same economies with EconGym's rule in the learners' place
(``EconGymTask.rule_actions``: same reset keys, same shocks; in the economy of
``EconGymTask.rule_env()``, which for ``optimal_tax`` and ``consumption_tax`` has EconGym's
Saez government), and score both with the task's metric (``tasks.METRICS``: mean GDP growth,
mean household utility, the end-of-episode Gini or pension fund, the mean distance of
inflation from 2%). Learned policies act by sampling, as in training.

    python experiments/econgym_tasks.py --out docs/figures/econgym_tasks.json
    python experiments/econgym_tasks.py --tasks optimal_tax,pension_gap --seeds 2
    python experiments/econgym_tasks.py --markdown docs/figures/econgym_tasks.json  # the results table
    python experiments/econgym_tasks.py --tasks monopoly --out R.json --update  # redo one task's entry

Other ``key=value`` arguments override every task's config (e.g. ``train.total_timesteps=80000``).
Writes nothing before the arguments are checked; the JSON is written atomically.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from jaxagents_environments.economy.econgym.tasks import METRICS, TASKS

from jaxagents.build import build_learner
from jaxagents.outputs import check_outputs
from jaxagents.config import apply_overrides, read_yaml
from jaxagents.tracking import atomic_write

CONFIGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "baselines", "configs", "econ")


def parse():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", default=None,
                    help="comma-separated task names (default: every task with a learning role)")
    ap.add_argument("--seeds", type=int, default=1, help="training seeds per task (default 1)")
    ap.add_argument("--episodes", type=int, default=16, help="evaluation economies per seed (default 16)")
    ap.add_argument("--out", default=None, help="write the results as JSON")
    ap.add_argument("--update", action="store_true",
                    help="--out exists: replace the entries of --tasks in it and keep the others")
    ap.add_argument("--markdown", default=None, metavar="JSON", help="print the results table of a JSON and exit")
    ap.add_argument("overrides", nargs="*", help="key=value config overrides for every task")
    a = ap.parse_args()
    learning = [t for t, spec in TASKS.items() if spec.learn]
    a.tasks = learning if a.tasks is None else [t.strip() for t in a.tasks.split(",") if t.strip()]
    unknown = sorted(set(a.tasks) - set(learning))
    if unknown:
        raise SystemExit(f"--tasks: unknown or without a learning role {unknown}; tasks: {sorted(learning)}")
    if a.seeds < 1 or a.episodes < 1:
        raise SystemExit("--seeds and --episodes must be >= 1")
    if a.update and not (a.out and os.path.isfile(a.out)):
        raise SystemExit("--update needs --out to name an existing results JSON")
    check_outputs(a)
    return a


def train(config):
    learner = build_learner(config)
    seeds = jax.random.split(jax.random.key(int(config["seed"])), int(config["num_seeds"]))
    states = jax.jit(jax.vmap(learner.init))(seeds)
    run = jax.jit(lambda s: jax.lax.scan(lambda s, _: jax.vmap(learner.update)(s), s, None, learner.num_updates))
    states, metrics = run(states)
    return learner, states, jax.device_get(metrics)


def make_scorer(learner, metric: str, episodes: int):
    """``score(policy, key) -> (learned, rule)``: the task metric of ``episodes``
    economies played by the learned policies and by the rules, from the same keys."""
    env, agents = learner.env, learner.agents
    rule_env = env.rule_env()  # the learners' economy, or the baseline's (e.g. with the Saez government)
    params = learner.env_params
    horizon = int(params.horizon)
    key_name, how, _ = METRICS[metric]

    def play(policy, key, use_rules):
        env_ = rule_env if use_rules else env
        k_reset, k_run = jax.random.split(key)
        state, ts = jax.vmap(env_.reset, (0, None))(jax.random.split(k_reset, episodes), params)
        hidden = agents.initial_hidden(episodes)

        def body(carry, k):
            state, ts, alive = carry
            k_act, k_env = jax.random.split(k)
            if use_rules:
                actions = jax.vmap(env_.rule_actions, (0, 0, 0, None))(jax.random.split(k_act, episodes), state, ts,
                                                                     params)
            else:
                _, actions = agents.act_all(policy, hidden, ts.obs, ts.action_mask, k_act)
            state, ts = jax.vmap(env_.step, (0, 0, 0, None))(jax.random.split(k_env, episodes), state, actions, params)
            value = ts.info[key_name]
            alive = alive & ~ts.done
            return (state, ts, alive), (value, alive)

        alive0 = jnp.ones((episodes,), bool)
        _, (values, alive) = jax.lax.scan(body, (state, ts, alive0), jax.random.split(k_run, horizon))
        # years played: up to and including the one that ended the episode
        played = jnp.concatenate([jnp.ones((1, episodes), bool), alive[:-1]], axis=0)
        if how == "last":
            last = jnp.sum(played, axis=0) - 1
            per_episode = values[last, jnp.arange(episodes)]
        else:
            v = jnp.abs(values - 0.02) if how == "abs_gap" else values
            per_episode = jnp.sum(jnp.where(played, v, 0.0), axis=0) / jnp.sum(played, axis=0)
        return jnp.mean(per_episode), jnp.mean(jnp.sum(played, axis=0))

    def score(policy, key):
        return play(policy, key, False), play(policy, key, True)

    return score


def markdown(path: str) -> None:
    """The results page's task table from a JSON this script wrote."""
    with open(path) as f:
        results = json.load(f)
    print("| task | learns | metric | learned | rule | better | years (learned / rule) |")
    print("|---|---|---|---:|---:|---|---|")
    for task, r in results["tasks"].items():
        print(f"| `{task}` | {', '.join(r['learn'])} | {r['metric']} | {np.mean(r['learned']):.4g} | "
              f"{np.mean(r['rule']):.4g} | {'learned' if r['learned_beats_rule'] else '**rule**'} | "
              f"{r['years_learned']:.0f} / {r['years_rule']:.0f} |")


def main():
    a = parse()
    if a.markdown:
        markdown(a.markdown)
        return
    log = lambda *s: print(*s, flush=True)  # noqa: E731
    results = dict(command=" ".join(sys.argv), overrides=a.overrides, seeds=a.seeds, episodes=a.episodes, tasks={})
    if a.update:
        with open(a.out) as f:
            old = json.load(f)
        if (old["seeds"], old["episodes"], old["overrides"]) != (a.seeds, a.episodes, a.overrides):
            raise SystemExit(f"--update: {a.out} has seeds/episodes/overrides {old['seeds']}/{old['episodes']}/"
                             f"{old['overrides']}; run with the same")
        results = dict(old, updates=old.get("updates", []) + [" ".join(sys.argv)])
    for task in a.tasks:
        t0 = time.perf_counter()
        config = apply_overrides(read_yaml(os.path.join(CONFIGS, f"{task}.yaml")), a.overrides)
        config["num_seeds"] = a.seeds
        learner, states, metrics = train(config)
        metric = TASKS[task].metric
        scorer = jax.jit(jax.vmap(make_scorer(learner, metric, a.episodes)))
        keys = jax.random.split(jax.random.key(777), a.seeds)
        (learned, years_l), (rule, years_r) = jax.device_get(scorer(states.params, keys))
        returns = {k[len("episode_return/"):]: np.asarray(v).mean(1)[[0, -1]].tolist()
                   for k, v in metrics.items() if k.startswith("episode_return/")}
        lower_better = metric in ("wealth_gini", "income_gini", "inflation_gap")
        better = np.mean(learned) < np.mean(rule) if lower_better else np.mean(learned) > np.mean(rule)
        results["tasks"][task] = dict(
            metric=metric, learned=np.asarray(learned).tolist(), rule=np.asarray(rule).tolist(),
            years_learned=float(np.mean(years_l)), years_rule=float(np.mean(years_r)),
            learned_beats_rule=bool(better), returns_first_last=returns, learn=list(TASKS[task].learn),
            households=int(config["env"]["kwargs"]["num_households"]), updates=int(learner.num_updates),
            seconds=time.perf_counter() - t0,
        )
        log(f"{task:28s} {metric:13s} learned {np.mean(learned):11.4g}  rule {np.mean(rule):11.4g}  "
            f"{'learned' if better else 'rule'} better  years {np.mean(years_l):.0f}/{np.mean(years_r):.0f}  "
            f"({time.perf_counter() - t0:.0f} s)")
    results["minutes"] = sum(r["seconds"] for r in results["tasks"].values()) / 60  # training and scoring
    results["machine"] = f"{jax.devices()[0].device_kind}, jax {jax.__version__}"
    if a.out:
        atomic_write(a.out, json.dumps(results, indent=1))
    log(f"total {results['minutes']:.1f} min")


if __name__ == "__main__":
    main()

"""EconGym's research tasks at a small budget: the learned roles against EconGym's rules.

For each task (``baselines/configs/econ/<task>.yaml``,
``environments/economy/econgym/tasks.py``): train its learning roles with IPPO (every other
role follows EconGym's rule), then play ``--episodes`` fresh economies with the learned
policies and the same economies with EconGym's rule in the learners' place
(``EconGymTask.rule_actions``: same reset keys, same shocks; in the economy of
``EconGymTask.rule_env()``, which for ``optimal_tax`` and ``consumption_tax_ours`` has EconGym's
Saez government), and score both with the task's metric (``tasks.METRICS``: mean GDP growth,
mean household utility, the end-of-episode Gini or pension fund, the mean distance of
inflation from 2%). Learned policies act by sampling, as in training. Beside the mean GDP
growth, the geometric mean growth ``(GDP_T / GDP_0)^(1/T) - 1``: a policy that crashes the
economy and lets it rebound inflates the task's arithmetic mean of yearly ratios, not it.

    python experiments/econgym_tasks.py --seeds 3 --out docs/figures/econgym_tasks_episode.json "env.kwargs.horizon=null"
    python experiments/econgym_tasks.py --tasks optimal_tax,pension_gap --seeds 2
    python experiments/econgym_tasks.py --markdown docs/figures/econgym_tasks_episode.json  # the results table
    python experiments/econgym_tasks.py --tasks monopoly --out R.json --update  # redo one task's entry

Other ``key=value`` arguments override every task's config (e.g. ``train.total_timesteps=80000``).
Writes nothing before the arguments are checked; the JSON is written atomically after every
task, so a run stopped part-way keeps the tasks it finished (``--update --tasks`` adds the rest).
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

# metrics where less is better (the others: more is better)
LOWER_BETTER = ("wealth_gini", "income_gini", "inflation_gap")

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


def episode_scores(values, played, how: str):
    """``(score f32[E], geometric f32[E])`` of ``E`` episodes from a metric's yearly
    values ``f32[T, E]`` and the years played ``bool[T, E]``: the task's score (``how``:
    the last year's value, the mean, or the mean distance from 2%) and, reading the
    values as growth rates, their geometric mean ``exp(mean log(1 + g)) - 1 = (GDP_T /
    GDP_0)^(1/T) - 1``, which a collapse followed by a rebound cannot inflate (the
    arithmetic mean of yearly ratios it can: 0.001 of GDP and back is a growth of 999)."""
    years = jnp.sum(played, axis=0)
    if how == "last":
        score = values[years - 1, jnp.arange(values.shape[1])]
    else:
        v = jnp.abs(values - 0.02) if how == "abs_gap" else values
        score = jnp.sum(jnp.where(played, v, 0.0), axis=0) / years
    log_growth = jnp.log(jnp.maximum(1.0 + values, 1e-30))
    return score, jnp.expm1(jnp.sum(jnp.where(played, log_growth, 0.0), axis=0) / years)


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
        per_episode, geometric = episode_scores(values, played, how)
        return jnp.mean(per_episode), jnp.mean(jnp.sum(played, axis=0)), jnp.mean(geometric)

    def score(policy, key):
        return play(policy, key, False), play(policy, key, True)

    return score


def markdown(path: str) -> None:
    """The results page's task table from a JSON this script wrote."""
    with open(path) as f:
        results = json.load(f)
    seeds = results["seeds"]
    print(f"| task | learns | households | years played (learned / rule) | metric | learned | rule | "
          f"learned better (of {seeds} seeds) | geometric GDP growth, learned / rule |")
    print("|---|---|---|---|---|---:|---:|---:|---|")
    for task, r in results["tasks"].items():
        learned, rule = np.asarray(r["learned"]), np.asarray(r["rule"])
        wins = int(np.sum(learned < rule if r["metric"] in LOWER_BETTER else learned > rule))
        span = (lambda v: f"{np.mean(v):.4g}" + (f" [{v.min():.4g}, {v.max():.4g}]" if len(v) > 1 else ""))
        years = f"{r['years_learned']:.0f} / {r['years_rule']:.0f}" + (f" of {r['horizon']}" if "horizon" in r else "")
        print(f"| `{task}` | {', '.join(r['learn'])} | {r['households']:,} {r.get('households_policy', '')} | "
              f"{years} | {r['metric']} | {span(learned)} | {span(rule)} | "
              f"{'**' if wins * 2 <= len(learned) else ''}{wins}{'**' if wins * 2 <= len(learned) else ''} | "
              + (f"{span(np.asarray(r['geometric_learned']))} / {span(np.asarray(r['geometric_rule']))} |"
                 if "geometric_learned" in r else "|"))


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
        (learned, years_l, geo_l), (rule, years_r, geo_r) = jax.device_get(scorer(states.params, keys))
        returns = {k[len("episode_return/"):]: np.asarray(v).mean(1)[[0, -1]].tolist()
                   for k, v in metrics.items() if k.startswith("episode_return/")}
        better = np.mean(learned) < np.mean(rule) if metric in LOWER_BETTER else np.mean(learned) > np.mean(rule)
        results["tasks"][task] = dict(
            metric=metric, learned=np.asarray(learned).tolist(), rule=np.asarray(rule).tolist(),
            years_learned=float(np.mean(years_l)), years_rule=float(np.mean(years_r)),
            learned_beats_rule=bool(better), returns_first_last=returns, learn=list(TASKS[task].learn),
            **(dict(geometric_learned=np.asarray(geo_l).tolist(), geometric_rule=np.asarray(geo_r).tolist())
               if metric == "gdp_growth" else {}),
            households=int(config["env"]["kwargs"]["num_households"]), updates=int(learner.num_updates),
            horizon=int(learner.env_params.horizon),
            # what the households that do not learn did: EconGym's behaviour-cloned networks or its rule
            households_policy="learn" if "household" in TASKS[task].learn else learner.env.households_policy,
            seconds=time.perf_counter() - t0,
        )
        log(f"{task:28s} {metric:13s} learned {np.mean(learned):11.4g}  rule {np.mean(rule):11.4g}  "
            f"{'learned' if better else 'rule'} better  years {np.mean(years_l):.0f}/{np.mean(years_r):.0f}  "
            f"({time.perf_counter() - t0:.0f} s)")
        results["minutes"] = sum(r["seconds"] for r in results["tasks"].values()) / 60  # training and scoring
        results["machine"] = f"{jax.devices()[0].device_kind}, jax {jax.__version__}"
        if a.out:  # after every task: a run stopped part-way keeps what it finished (--update adds the rest)
            atomic_write(a.out, json.dumps(results, indent=1))
    log(f"total {results['minutes']:.1f} min")


if __name__ == "__main__":
    main()

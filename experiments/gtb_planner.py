"""The AI Economist's two-level planner on ``gtb`` against fixed tax schedules.

Every arm trains the citizens (one shared network) with the same curriculum
(``baselines/configs/ippo_gtb_planner.yaml``: phase 1 a free market with the labour cost
warming up, phase 2 the tax cap annealing from 0 to 100%) and the same seeds; only who
sets the seven bracket rates differs (``GTBParams.schedule``):

* **learned**: the planner learns from the start of phase 2 (the config as it is);
* **free market**: every rate 0;
* **US federal**: the 2018 rates (10/12/22/24/32/35/37%) at the nearest 5% level;
* **Saez**: per bracket the Saez rate (``policies.saez_rates``, inverse-income weights)
  of the incomes it induces, with the labour elasticity estimated from the run (the
  OLS slope of log income on log(1 - marginal rate) over the periods played by
  citizens trained under random schedules), iterated to a fixed point;
* **best flat** and **best 7-bracket**: found by search over the planner's own action
  space (21 levels per bracket): a grid of the 21 flat rates and a cross-entropy search
  over the 21^7 schedules, each candidate scored with citizens trained under random
  schedules (``schedule = -2``: a fresh random schedule per episode, so they have
  adapted to every schedule and see the rates in their observations).

The search and Saez use the random-schedule citizens; the schedules they find are then
trained as arms of their own, so every reported figure has citizens adapted to that
very schedule. Score: equality x productivity of total coin at the end of an episode
(the planner's objective, ``(1 - Gini) * mean coin``), on fresh maps (64 episodes per
seed), as a mean over seeds with a 95% t-interval.

    python experiments/gtb_planner.py --out docs/figures/gtb_planner.json \
        --plot docs/figures/gtb_planner.png
    python experiments/gtb_planner.py --replot docs/figures/gtb_planner.json docs/figures/gtb_planner.png

Other ``key=value`` arguments override the config (e.g. ``train.total_timesteps=64000``).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from jaxagents_environments.economy import policies
from jaxagents_environments.economy.gtb.dynamics import marginal_rates
from jaxagents_environments.economy.gtb.params import US_FEDERAL_RATES_2018

from jaxagents.build import build_learner, make_env
from jaxagents.outputs import check_outputs  # output paths checked before computing
from jaxagents.config import apply_overrides, read_yaml
from jaxagents.learners.skeleton import curriculum
from jaxagents.tracking import atomic_write

CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "baselines", "configs", "ippo_gtb_planner.yaml")
ARMS = ("free market", "US federal", "Saez", "best flat", "best 7-bracket", "learned planner")
SEARCHED = ("Saez", "best flat", "best 7-bracket")  # the arms that need the schedule search
T_95 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57}  # two-sided 95% t quantiles by degrees of freedom


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", default=CONFIG)
    p.add_argument("--eval-episodes", type=int, default=64, help="fresh episodes per arm and seed")
    p.add_argument("--search-episodes", type=int, default=16, help="episodes per candidate and seed in the search")
    p.add_argument("--search-rounds", type=int, default=4, help="cross-entropy rounds for the 7-bracket search")
    p.add_argument("--search-size", type=int, default=48, help="candidates per round")
    p.add_argument("--saez-iterations", type=int, default=4)
    p.add_argument("--arms", default=None,
                   help="comma-separated subset of the arms to train (default all: " + ", ".join(ARMS) + ")")
    p.add_argument("--flat", type=int, nargs="*", default=[], metavar="LEVEL",
                   help="extra arms with a flat rate of LEVEL x 5%% (0..20)")
    p.add_argument("--out", default=None)
    p.add_argument("--plot", default=None)
    p.add_argument("overrides", nargs="*")
    return check_outputs(p.parse_args())


# ----------------------------------------------------------------------------- training
def arm_config(base: dict, schedule) -> dict:
    """The base config with ``env.params.schedule`` set; a fixed schedule also keeps the
    planner from learning (it is never active then)."""
    config = copy.deepcopy(base)
    config["env"].setdefault("params", {})["schedule"] = [int(x) for x in schedule]
    if min(schedule) != -1:
        config["train"]["role_start_update"] = {"planner": 10**9}  # never active, never trained
    return config


def train(config: dict, log=print):
    """Train ``config`` for its seeds (vmapped); returns the learner, the final states
    and the per-update metrics ``{name: f32[U, S]}``."""
    learner = build_learner(config)
    seeds = jax.random.split(jax.random.key(int(config["seed"])), int(config["num_seeds"]))
    states = jax.jit(jax.vmap(learner.init))(seeds)
    chunk = next(c for c in (10, 5, 4, 2, 1) if learner.num_updates % c == 0)

    @jax.jit
    def run_chunk(states):
        return jax.lax.scan(lambda s, _: jax.vmap(learner.update)(s), states, None, chunk)

    out, t0 = [], time.perf_counter()
    for _ in range(learner.num_updates // chunk):
        states, metrics = run_chunk(states)
        out.append(jax.device_get(metrics))
        m = out[-1]
        log(f"  update {int(m['update'][-1, 0]):4d}  citizen return {np.mean(m['episode_return/citizen'][-1]):8.2f}  "
            f"planner return {np.mean(m['episode_return/planner'][-1]):7.2f}  ({time.perf_counter() - t0:.0f}s)")
    metrics = {k: np.concatenate([m[k] for m in out]) for k in out[0]}
    return learner, states, metrics


# ----------------------------------------------------------------------------- evaluation
def make_scorer(learner, episodes: int):
    """``score(policy_params, env_params, key)``: ``episodes`` fresh episodes of one seed's
    policies; returns the final ``swf``, ``productivity`` and ``equality`` (means over
    episodes) and every tax period's pre-tax incomes and marginal rates ``f32[E, P, N]``."""
    env, agents = learner.env, learner.agents
    horizon = int(learner.env_params.horizon)
    period = int(learner.env_params.tax_period)

    def score(policy, env_params, key):
        k_reset, k_run = jax.random.split(key)
        state, ts = jax.vmap(env.reset, (0, None))(jax.random.split(k_reset, episodes), env_params)
        hidden = agents.initial_hidden(episodes)

        def body(carry, k):
            state, ts = carry
            k_act, k_env = jax.random.split(k)
            _, actions = agents.act_all(policy, hidden, ts.obs, ts.action_mask, k_act)
            state, ts = jax.vmap(env.step, (0, 0, 0, None))(jax.random.split(k_env, episodes), state, actions, env_params)
            rates = jax.vmap(marginal_rates, (0, 0, None))(state.rates, state.last_income, env_params.bracket_cutoffs)
            return (state, ts), (state.last_income, rates)

        (state, ts), (income, rates) = jax.lax.scan(body, (state, ts), jax.random.split(k_run, horizon))
        days = np.arange(1, horizon + 1) % period == 0  # static: the steps after tax days
        info = ts.info
        return dict(swf=jnp.mean(info["swf"]), productivity=jnp.mean(info["productivity"]),
                    equality=jnp.mean(info["equality"]),
                    income=jnp.swapaxes(income[days], 0, 1), rate=jnp.swapaxes(rates[days], 0, 1))

    return score


def with_schedule(learner, schedule):
    """The env params at the end of the curriculum (full labour cost, the tax cap fully
    annealed) with a schedule ``i32[B]``."""
    final = curriculum.params_at(learner.env_params, learner.config.env_schedule, learner.num_updates)
    return final.replace(schedule=jnp.asarray(schedule, jnp.int32))


def interval(values) -> dict:
    v = np.asarray(values, np.float64)
    half = T_95.get(v.size - 1, 1.96) * v.std(ddof=1) / np.sqrt(v.size) if v.size > 1 else float("nan")
    return dict(mean=float(v.mean()), ci95=float(half), per_seed=[float(x) for x in v])


def levels_of(rates, L: int) -> list[int]:
    return [int(x) for x in np.clip(np.rint(np.asarray(rates) * (L - 1)), 0, L - 1)]


# ----------------------------------------------------------------------------- the experiment
def search(base: dict, a, seed_keys, log) -> dict:
    """Train citizens under random schedules, then find the best flat rate (grid), the
    best 7-bracket schedule (cross-entropy search) and the Saez schedule (elasticity
    estimated from the random-schedule play, rates at the incomes they induce), all
    scored with those citizens."""
    log("random schedules (citizens adapt to any schedule)")
    learner, states, _ = train(arm_config(base, [-2] * make_env(base["env"])[0].B), log)
    L, B = learner.env.L, learner.env.B
    score = make_scorer(learner, a.search_episodes)
    # scores of many schedules at once: [C, B] levels -> mean swf over seeds, per seed
    batch_score = jax.jit(jax.vmap(jax.vmap(lambda p, sch, k: score(p, with_schedule(learner, sch), k)["swf"],
                                            (0, None, 0)), (None, 0, None)))
    policies_ = states.params

    def evaluate_many(schedules):
        return np.asarray(batch_score(policies_, jnp.asarray(schedules, jnp.int32), seed_keys))  # [C, S]

    flat = np.repeat(np.arange(L)[:, None], B, 1)
    flat_scores = evaluate_many(flat).mean(1)
    best_flat = [int(flat_scores.argmax())] * B
    log(f"flat grid (random-schedule citizens): best level {best_flat[0]} ({best_flat[0] / (L - 1):.0%}), "
        f"swf {flat_scores.max():.2f}")

    # cross-entropy search over 7-bracket schedules, started around the best flat rate
    rng = np.random.default_rng(0)
    probs = np.full((B, L), 0.5 / L) + 0.5 * np.eye(L)[best_flat]
    best, best_score, history = list(best_flat), float(flat_scores.max()), []
    for r in range(a.search_rounds):
        cands = np.stack([[rng.choice(L, p=probs[b] / probs[b].sum()) for b in range(B)] for _ in range(a.search_size)])
        s = evaluate_many(cands).mean(1)
        elite = cands[np.argsort(s)[-max(2, a.search_size // 6):]]
        probs = 0.3 * probs + 0.7 * (np.stack([np.bincount(elite[:, b], minlength=L) for b in range(B)]) / len(elite))
        probs = 0.95 * probs + 0.05 / L  # keep every level reachable
        if s.max() > best_score:
            best, best_score = [int(x) for x in cands[s.argmax()]], float(s.max())
        history.append(dict(round=r, best=float(s.max()), mean=float(s.mean())))
        log(f"  search round {r}: best {s.max():.2f}, mean {s.mean():.2f}; best so far {best} ({best_score:.2f})")

    # Saez: elasticity from the random-schedule play, rates at the incomes they induce
    full = jax.jit(jax.vmap(lambda p, sch, k: score(p, with_schedule(learner, sch), k), (0, None, 0)))
    played = full(policies_, jnp.full((B,), -2, jnp.int32), seed_keys)
    z, tau = np.asarray(played["income"]).reshape(-1), np.asarray(played["rate"]).reshape(-1)
    elasticity = float(policies.estimate_elasticity(z, tau, fallback=0.4))
    saez = [0] * B
    for i in range(a.saez_iterations):
        induced = np.asarray(full(policies_, jnp.asarray(saez, jnp.int32), seed_keys)["income"]).reshape(-1)
        target = np.asarray(policies.saez_rates(induced, np.asarray(learner.env_params.bracket_cutoffs),
                                                max(elasticity, 1e-3)))
        saez = levels_of(target, L) if i == 0 else levels_of(0.5 * np.asarray(saez) / (L - 1) + 0.5 * target, L)
        log(f"  Saez iteration {i}: elasticity {elasticity:.3f}, levels {saez}")
    return dict(flat_scores=[float(x) for x in flat_scores], rounds=history, best=best, best_flat=best_flat,
                best_score=best_score, elasticity=elasticity, saez=saez,
                random_schedule_citizens_on=dict(best_flat=float(flat_scores.max()), best_7_bracket=best_score))



def main():
    a = parse()
    chosen = ARMS if a.arms is None else tuple(x.strip() for x in a.arms.split(",") if x.strip())
    unknown = sorted(set(chosen) - set(ARMS))
    if unknown:
        raise SystemExit(f"--arms: unknown {unknown}; the arms are {list(ARMS)}")
    if any(not 0 <= level <= 20 for level in a.flat):
        raise SystemExit(f"--flat: levels must be in 0..20 (rates 0..100% in steps of 5%), got {a.flat}")
    base = apply_overrides(read_yaml(a.config), a.overrides)
    log = lambda *s: print(*s, flush=True)  # noqa: E731
    results = dict(config=os.path.relpath(a.config), overrides=a.overrides, command=" ".join(sys.argv), arms={})
    t_start = time.perf_counter()

    S = int(base["num_seeds"])
    seed_keys = jax.random.split(jax.random.key(12345), S)
    env, _ = make_env(base["env"])
    B, L = env.B, env.L
    found = {}
    if set(chosen) & set(SEARCHED):  # 1. citizens under random schedules: the search's and Saez's model
        found = search(base, a, seed_keys, log)
        results["search"] = found

    # 2. every arm trained with its own citizens
    arms = {
        "free market": [0] * B,
        "US federal": levels_of(US_FEDERAL_RATES_2018, L),
        "Saez": found.get("saez"),
        "best flat": found.get("best_flat"),
        "best 7-bracket": found.get("best"),
        "learned planner": [-1] * B,
    }
    order = [n for n in ARMS if n in chosen]
    for level in a.flat:  # extra flat arms, e.g. to check a searched rate with longer training
        arms[f"flat {level / (L - 1):.0%}"] = [level] * B
        order.append(f"flat {level / (L - 1):.0%}")
    for name, schedule in ((n, arms[n]) for n in order):
        log(f"{name}: schedule {schedule}")
        learner, states, metrics = train(arm_config(base, schedule), log)
        scorer = jax.jit(jax.vmap(make_scorer(learner, a.eval_episodes), (0, None, 0)))
        final = scorer(states.params, with_schedule(learner, schedule), seed_keys)
        rates = np.asarray(final["rate"])
        results["arms"][name] = dict(
            schedule=schedule,
            swf=interval(final["swf"]), productivity=interval(final["productivity"]),
            equality=interval(final["equality"]),
            mean_marginal_rate=float(rates.mean()),
            curve=dict(update=metrics["update"][:, 0].tolist(),
                       citizen=metrics["episode_return/citizen"].mean(1).tolist(),
                       planner=metrics["episode_return/planner"].mean(1).tolist()),
        )
        r = results["arms"][name]["swf"]
        log(f"  -> swf {r['mean']:.2f} +- {r['ci95']:.2f} (seeds {np.round(r['per_seed'], 2).tolist()})")
    results["minutes"] = (time.perf_counter() - t_start) / 60
    results["machine"] = f"{jax.devices()[0].device_kind}, jax {jax.__version__}"
    log(f"total {results['minutes']:.1f} min")
    if a.out:
        atomic_write(a.out, json.dumps(results, indent=1))
    if a.plot:
        plot(results, a.plot)
    table(results)


def table(results: dict) -> None:
    print(f"{'arm':18s} {'schedule (levels x 5%)':28s} {'swf':>16s} {'productivity':>14s} {'equality':>10s}")
    for name, r in results["arms"].items():
        sch = "planner" if min(r["schedule"]) < 0 else str(r["schedule"])
        print(f"{name:18s} {sch:28s} {r['swf']['mean']:8.2f} ± {r['swf']['ci95']:5.2f} "
              f"{r['productivity']['mean']:14.2f} {r['equality']['mean']:10.3f}")


def plot(results: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    names = list(results["arms"])
    means = [results["arms"][n]["swf"]["mean"] for n in names]
    errs = [results["arms"][n]["swf"]["ci95"] for n in names]
    axes[0].barh(names, means, xerr=errs, color=["C0" if n != "learned planner" else "C3" for n in names])
    axes[0].set_xlabel("equality x productivity at episode end (95% CI over seeds)")
    for n in names:
        c = results["arms"][n]["curve"]
        axes[1].plot(c["update"], c["citizen"], label=n)
    axes[1].set_xlabel("update")
    axes[1].set_ylabel("citizens' episode return")
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    tmp = path + ".tmp.png"
    fig.savefig(tmp, dpi=110)
    os.replace(tmp, path)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--replot":
        saved = json.load(open(sys.argv[2]))
        plot(saved, sys.argv[3])
        table(saved)
    else:
        main()

"""A learned tax planner against Saez, the US federal schedule and flat taxes.

IPPO trains the planner and 1,000 workers of ``taxation`` together
(``baselines/configs/ippo_taxation.yaml``, run through the same code path as
``jaxagents train``). The trained run is then evaluated on fresh economies (new skill
draws, the same draws for every arm):

* **learned planner + learned workers**: both trained policies, sampled, as trained;
* **learned planner + best-response workers**: the learned planner against workers
  that maximise their utility exactly (``policies.best_response_levels``);
* fixed schedules with best-response workers: **Saez** (``policies.saez_fixed_point``
  on the three brackets: rates against the incomes they induce, elasticity 0.4,
  inverse-income weights), the **US federal** 2024 schedule (its own seven brackets),
  the **flat** tax at the spec's examples (0%, 20%, 40%) and the **best flat** rate for
  the planner's objective (a 1-point grid search: an upper bound for any flat tax).

Every arm is scored on the last tax period of a 10-period episode, per worker step and
in the config's income unit ($100k): equality x productivity (the planner's
objective), utilitarian and inverse-income welfare, the Gini of post-tax income, mean
hours, GDP per worker and revenue / GDP. Fixed schedules are constant, so their episode
return (the planner's return: the sum over periods of the period's mean welfare) is
``num_periods x`` their per-step welfare; those returns are drawn as reference lines on
the planner's learning curve.

    python experiments/taxation_planner.py --run-dir runs/taxation \
        --out docs/figures/taxation_planner.json --plot docs/figures/taxation_planner.png
    python experiments/taxation_planner.py --run-dir runs/taxation --eval-only ...

``--eval-only`` evaluates an existing run directory without training, ``--replot
RESULT.json OUT.png`` redraws the figure from a saved ``--out``; other
``key=value`` arguments override the config (e.g. ``num_seeds=1 train.lr=1e-3``).
"""

import argparse
import json
import os

import jax
import jax.numpy as jnp
import numpy as np
from jaxagents_environments.economy import brackets as schedule
from jaxagents_environments.economy import metrics, policies
from jaxagents_environments.economy.labour import worker_utility

from jaxagents import runner, runs
from jaxagents.outputs import check_outputs  # output paths checked before computing

CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "baselines", "configs", "ippo_taxation.yaml")


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", default=CONFIG)
    p.add_argument("--run-dir", default="runs/taxation")
    p.add_argument("--eval-only", action="store_true", help="evaluate --run-dir without training")
    p.add_argument("--eval-economies", type=int, default=16, help="fresh economies per arm (and per seed)")
    p.add_argument("--out", default=None)
    p.add_argument("--plot", default=None)
    p.add_argument("overrides", nargs="*")
    return check_outputs(p.parse_args())


def outcome(skills, hours, rates, cutoffs, params):
    """Per-worker-step scores of one economy's step: ``skills``/``hours`` ``[N]``.
    Money in ``params.income_unit``; the rebate is the revenue shared equally."""
    unit = params.income_unit
    z = skills * hours
    tax = schedule.tax(z, rates, cutoffs)
    post = z - tax + jnp.mean(tax)
    u = worker_utility(post, hours, params)
    return {
        "equality_x_productivity": metrics.equality_times_productivity(post) / unit,
        "utilitarian": jnp.mean(u),
        "inverse_income": jnp.mean(u / jnp.maximum(z / unit, 1.0)),
        "gini": metrics.gini(post),
        "mean_hours": jnp.mean(hours),
        "gdp_per_worker": jnp.mean(z) / unit,
        "revenue_share": jnp.sum(tax) / jnp.maximum(jnp.sum(z), 1e-9),
    }


def fixed_schedule(skills, rates, cutoffs, env, params):
    """A fixed schedule against best-responding workers on the env's hours grid."""
    levels = policies.best_response_levels(skills, rates, cutoffs, params, env.hour_levels)
    return outcome(skills, jnp.asarray(env.hour_levels)[levels], rates, cutoffs, params)


def learned_episode(train, role_params, key, params, best_response_workers: bool):
    """One episode of the trained policies in a fresh economy; returns the scores of
    every worker step of the last period (averaged) and the final rates."""
    env, agents = train.env, train.agents
    k_reset, k_run = jax.random.split(key)
    state, ts = env.reset(k_reset, params)
    horizon = int(params.num_periods) * (int(params.period_length) + 1)
    last_start = horizon - int(params.period_length)  # first worker step of the last period

    def act(role, ts, key):
        obs = ts.obs[role][None]
        h = agents.modules[role].initial_state(obs.shape[:2])
        _, a, _, _, _ = agents.act(role_params[role], role, h, obs, obs, jnp.zeros(obs.shape[:2], bool), ts.action_mask[role][None], key)
        return a[0]

    def step(carry, t):
        state, ts, key = carry
        key, k_w, k_p, k_env = jax.random.split(key, 4)
        workers = policies.best_response_actions(env, state, params) if best_response_workers else act("worker", ts, k_w)
        actions = {"worker": workers, "planner": act("planner", ts, k_p)}
        state, ts = env.step(k_env, state, actions, params)
        score = outcome(state.skills, state.hours, state.rates, params.cutoffs, params)
        w = ((t >= last_start) & ts.info["worker_step"]).astype(jnp.float32)
        return (state, ts, key), (jax.tree.map(lambda x: x * w, score), w)

    (state, _, _), (scores, w) = jax.lax.scan(step, (state, ts, k_run), jnp.arange(horizon))
    out = jax.tree.map(lambda x: jnp.sum(x) / jnp.sum(w), scores)
    out["rates"] = state.rates
    return out


def main():
    a = parse()
    if a.eval_only:
        config, train, state, _ = runs.restore(a.run_dir)
    else:
        config = runner.load_config(a.config, a.overrides)
        runner.run(config, a.run_dir)
        config, train, state, _ = runs.restore(a.run_dir)
    env, params = train.env, train.env_params
    E = a.eval_economies
    keys = jax.random.split(jax.random.key(12345), E)  # the same economies for every arm and seed
    skills = jax.vmap(lambda k: env.reset(jax.random.split(k)[0], params)[0].skills)(keys)  # [E, N]
    cut3 = params.cutoffs
    mean = lambda d: {k: float(np.mean(np.asarray(v))) for k, v in d.items()}  # noqa: E731

    arms = {}
    for best_response in (False, True):
        name = "learned planner + " + ("best-response workers" if best_response else "learned workers")
        fn = jax.jit(jax.vmap(jax.vmap(
            lambda p, k: learned_episode(train, p, k, params, best_response), in_axes=(None, 0)), in_axes=(0, None)))
        res = fn(state.params, keys)  # [S, E]
        arms[name] = {**mean({k: v for k, v in res.items() if k != "rates"}),
                      "rates": np.asarray(res["rates"]).mean(1).round(3).tolist(),
                      "per_seed_eqp": np.asarray(res["equality_x_productivity"]).mean(1).tolist()}

    fixed = jax.jit(jax.vmap(lambda s, r, c: fixed_schedule(s, r, c, env, params), in_axes=(0, None, None)))
    saez = jax.vmap(lambda s: policies.saez_fixed_point(s, cut3, params, elasticity=0.4))(skills).mean(0)
    us_cut = jnp.asarray(schedule.cutoffs_of("us_federal"))
    candidates = {
        "Saez (three brackets)": (saez, cut3),
        "US federal 2024": (policies.us_federal_rates(), us_cut),
        "flat 0%": (jnp.zeros(1), jnp.zeros(1)),
        "flat 20%": (jnp.full(1, 0.2), jnp.zeros(1)),
        "flat 40%": (jnp.full(1, 0.4), jnp.zeros(1)),
    }
    grid = np.round(np.arange(0.0, 1.0001, 0.01), 2)
    eqp = [float(jnp.mean(fixed(skills, jnp.full(1, r), jnp.zeros(1))["equality_x_productivity"])) for r in grid]
    best = float(grid[int(np.argmax(eqp))])
    candidates[f"best flat ({best:.0%})"] = (jnp.full(1, best), jnp.zeros(1))
    for name, (rates, cut) in candidates.items():
        arms[name] = {**mean(fixed(skills, rates, cut)), "rates": np.asarray(rates).round(3).tolist()}

    rows = runner.tracking.read_rows(os.path.join(a.run_dir, "metrics.jsonl"))
    curve = {"env_steps": [r["env_steps"] for r in rows],
             "planner_return": [r.get("episode_return/planner@seeds", [r["episode_return/planner"]]) for r in rows]}
    periods = int(params.num_periods)
    result = {"config": config, "arms": arms, "curve": curve, "num_periods": periods,
              "flat_grid": {"rates": grid.tolist(), "equality_x_productivity": eqp}}

    cols = ("equality_x_productivity", "utilitarian", "inverse_income", "gini", "mean_hours", "gdp_per_worker", "revenue_share")
    print(f"{'arm':<44}" + "".join(f"{c[:12]:>13}" for c in cols) + "  rates")
    for name, r in arms.items():
        print(f"{name:<44}" + "".join(f"{r[c]:>13.4f}" for c in cols) + f"  {r['rates']}")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(result, f, indent=1)
    if a.plot:
        plot(result, a.plot)


def plot(result, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    x = np.asarray(result["curve"]["env_steps"])
    y = np.asarray(result["curve"]["planner_return"])  # [U, S]
    for s in range(y.shape[1]):
        ax1.plot(x, y[:, s], lw=0.8, alpha=0.6, color="C0", label="learned planner (per seed)" if s == 0 else None)
    colours = iter(f"C{i}" for i in range(1, 10))
    for name, r in result["arms"].items():
        if not name.startswith("learned"):
            ax1.axhline(result["num_periods"] * r["equality_x_productivity"], ls="--", lw=1, color=next(colours), label=name)
    train = result["config"]["train"]
    start = dict(train.get("role_start_update") or {}).get("planner")
    if start:
        ax1.axvline(start * train["num_envs"] * train["num_steps"], color="k", lw=0.8, ls=":", label="planner starts learning")
    ax1.set_xlabel("env steps")
    ax1.set_ylabel("planner episode return (sum of period welfare)")
    ax1.set_title("Planner return (dashed: fixed schedules, best-response workers)", fontsize=9)
    ax1.legend(fontsize=7)
    names = list(result["arms"])
    eqp = [result["arms"][n]["equality_x_productivity"] for n in names]
    ax2.barh(range(len(names)), eqp, color=["C0" if n.startswith("learned") else "C7" for n in names])
    ax2.set_yticks(range(len(names)), names, fontsize=7)
    ax2.invert_yaxis()
    ax2.set_xlabel("equality x productivity per worker step ($100k), last period")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    import sys

    if sys.argv[1:2] == ["--replot"]:  # --replot RESULT.json OUT.png: redraw from a saved result
        plot(json.load(open(sys.argv[2])), sys.argv[3])
    else:
        main()

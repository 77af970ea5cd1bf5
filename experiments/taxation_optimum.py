"""``taxation``'s true optimum: the best bracket schedule against best-responding workers.

Workers' best responses are exact and cheap (``policies.best_response_levels``: a max
over the 11-level hours grid), so the planner's welfare is a function of the rates
alone. ``taxation_optimum.optimise`` climbs it by ``jax.grad`` through a softmax
relaxation of the best response (temperature annealed; every reported number uses the
exact best response), Adam on the logits of the rates, 16 random restarts plus the best
flat rate and Saez as starts, then ``polish`` (a coordinate search on the exact
objective). A 5-point grid over the three rates (21^3 schedules) and 2,048 uniform
random schedules (random only, for seven brackets), each polished from its best point,
check that the gradient run did not stop in a local optimum; the reported optimum is
the best of the three (``method`` in the JSON says which). The JSON also holds the
exact welfare of every restart's iterates and, in setting A, each rate swept with the
other two held at the optimum.

Setting A (the table that matters): the learned planner's economy
(``baselines/configs/ippo_taxation.yaml``: 1,000 GB2 workers, three brackets,
quasi-linear utility with ``labour_cost`` 0.01, equality x productivity in $100k) and
the 16 evaluation economies of ``taxation_planner.py`` (same key, same skills). Arms,
all scored with best-responding workers unless said: Saez (fixed point, as in
``taxation_planner.py``), the best flat rate (1-point grid), US federal 2024 (its own
seven brackets), the learned planner's final rates per seed (read from
``--planner-json``, the output of ``taxation_planner.py``) held fixed, the learned
planner with learned workers (the figure in that JSON, not recomputed), the optimum on
the three brackets and, for reference, the optimum on the US federal brackets. Every
fixed schedule is also scored on 16 held-out economies (another key) to show that the
optimum is not fitted to the sample.

Setting B: the environment's own defaults (``Taxation(num_workers=1000)``:
``labour_cost`` 0.0005, $1k units); no learned planner exists there.

    python experiments/taxation_optimum.py --out docs/figures/taxation_optimum.json \
        --plot docs/figures/taxation_optimum.png

Refuses to overwrite ``--out``/``--plot`` unless ``--force``; ``--replot RESULT.json OUT.png``
redraws the figure from a saved result.
"""

import argparse
import json
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from jaxagents_environments.economy import brackets as schedule
from jaxagents_environments.economy import policies
from jaxagents_environments.economy import taxation_optimum as topt
from jaxagents_environments.economy.taxation import Taxation

from jaxagents import runner
from jaxagents.build import make_env

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIG = os.path.join(HERE, "..", "baselines", "configs", "ippo_taxation.yaml")
PLANNER_JSON = os.path.join(HERE, "..", "docs", "figures", "taxation_planner.json")
EVAL_KEY, HELD_OUT_KEY = 12345, 54321


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", default=CONFIG)
    p.add_argument("--planner-json", default=PLANNER_JSON, help="taxation_planner.py's --out (learned rates)")
    p.add_argument("--economies", type=int, default=16)
    p.add_argument("--restarts", type=int, default=16)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--out", default=None)
    p.add_argument("--plot", default=None)
    p.add_argument("--force", action="store_true", help="overwrite --out/--plot")
    return p.parse_args()


def check_outputs(a):
    for path in (a.out, a.plot):
        if path is None:
            continue
        if os.path.exists(path) and not a.force:
            sys.exit(f"{path} exists; pass --force to overwrite it")
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
            sys.exit(f"cannot write {path}: {folder} is not a writable folder")


def economies(env, params, key, n):
    keys = jax.random.split(jax.random.key(key), n)
    return jax.vmap(lambda k: env.reset(jax.random.split(k)[0], params)[0].skills)(keys)  # [E, N]


def as_floats(d):
    return {k: float(v) for k, v in d.items()}


def solve(name, skills, cutoffs, params, levels, restarts, steps, starts, grid_step):
    """The gradient optimum (best restart, polished) and the search check: 2,048 uniform
    random schedules and, if ``grid_step``, a grid over the rates; each search's best
    point polished. The optimum is the best of all of them (``method`` says which)."""
    t0 = time.time()
    run = topt.optimise(jax.random.key(0), skills, cutoffs, params, levels, restarts=restarts, steps=steps,
                        init_rates=starts)
    k = int(jnp.argmax(run.welfare))
    rates, w = topt.polish(run.rates[k], skills, cutoffs, params, levels)
    out = {"gradient": {"best_before_polish": float(run.welfare[k]), "welfare": float(w),
                        "rates": np.asarray(rates).tolist(), "restart_welfare": np.asarray(run.welfare).tolist(),
                        "restart_rates": np.asarray(run.rates).round(4).tolist(), "seconds": time.time() - t0},
           "exact_curve": np.asarray(run.exact).tolist()}
    print(f"[{name}] gradient: {float(run.welfare[k]):.5f} -> polished {float(w):.5f} at "
          f"{np.round(np.asarray(rates), 4).tolist()} ({time.time() - t0:.0f} s); restarts "
          f"{np.round(np.asarray(run.welfare), 4).tolist()}", flush=True)
    b = int(np.shape(cutoffs)[-1])
    searches = {"random_2048": np.asarray(jax.random.uniform(jax.random.key(7), (2048, b)))}
    if grid_step:
        g = np.round(np.arange(0.0, 1.0001, grid_step), 3)
        searches[f"grid_{grid_step:g}"] = np.stack(np.meshgrid(*([g] * b), indexing="ij"), -1).reshape(-1, b)
    for label, cand in searches.items():
        t0 = time.time()
        ws = np.asarray(topt.search(cand, skills, cutoffs, params, levels, batch_size=128))
        best = cand[int(np.argmax(ws))]
        pr, pw = topt.polish(best, skills, cutoffs, params, levels)
        out[label] = {"size": len(cand), "best": float(ws.max()), "best_rates": best.tolist(),
                      "welfare": float(pw), "rates": np.asarray(pr).tolist(), "seconds": time.time() - t0}
        print(f"[{name}] {label}: best {ws.max():.5f} at {np.round(best, 3).tolist()} -> polished {float(pw):.5f} "
              f"at {np.round(np.asarray(pr), 4).tolist()}", flush=True)
    method = max((m for m in out if m != "exact_curve"), key=lambda m: out[m]["welfare"])
    out.update(method=method, welfare=out[method]["welfare"], rates=out[method]["rates"])
    return out


def setting(label, env, params, a, learned=None):
    """All arms of one setting; returns the result dict."""
    levels, cut3 = env.hour_levels, params.cutoffs
    us_cut = jnp.asarray(schedule.cutoffs_of("us_federal"))
    skills = economies(env, params, EVAL_KEY, a.economies)
    held = economies(env, params, HELD_OUT_KEY, a.economies)
    ev = jax.jit(lambda r, c, s: topt.evaluate(r, s, c, params, levels))

    flat_grid = np.round(np.arange(0.0, 1.0001, 0.01), 2)
    flat_w = np.asarray(topt.search(flat_grid[:, None], skills, jnp.zeros(1), params, levels))
    best_flat = float(flat_grid[int(np.argmax(flat_w))])
    saez = jax.vmap(lambda s: policies.saez_fixed_point(s, cut3, params, elasticity=0.4))(skills).mean(0)

    opt3 = solve(f"{label} three brackets", skills, cut3, params, levels, a.restarts, a.steps,
                 jnp.stack([jnp.full(3, best_flat), saez]), 0.05)
    opt_us = solve(f"{label} US brackets", skills, us_cut, params, levels, max(a.restarts // 2, 4), a.steps,
                   jnp.stack([jnp.full(7, best_flat), policies.us_federal_rates()]), None)

    schedules = {  # name -> (rates, cutoffs); all against best-responding workers
        "Saez (three brackets)": (saez, cut3),
        f"best flat ({best_flat:.0%})": (jnp.full(1, best_flat), jnp.zeros(1)),
        "US federal 2024": (policies.us_federal_rates(), us_cut),
    }
    if learned is not None:
        for s, r in enumerate(learned["rates"]):
            schedules[f"learned planner, seed {s} (fixed)"] = (jnp.asarray(r, jnp.float32), cut3)
    schedules["optimum, US federal brackets"] = (jnp.asarray(opt_us["rates"]), us_cut)
    schedules["optimum, three brackets"] = (jnp.asarray(opt3["rates"]), cut3)

    arms = {}
    for name, (rates, cut) in schedules.items():
        arms[name] = {**as_floats(ev(rates, cut, skills)), "held_out": as_floats(ev(rates, cut, held)),
                      "rates": np.asarray(rates).round(4).tolist()}
    if learned is not None:
        seeds = [n for n in arms if n.startswith("learned planner, seed")]
        mean = {k: float(np.mean([arms[n][k] for n in seeds])) for k in arms[seeds[0]] if k not in ("rates", "held_out")}
        mean["held_out"] = {k: float(np.mean([arms[n]["held_out"][k] for n in seeds])) for k in arms[seeds[0]]["held_out"]}
        arms["learned planner, mean of seeds (fixed)"] = {**mean, "rates": [arms[n]["rates"] for n in seeds]}
        arms["learned planner + learned workers"] = {"welfare": learned["learned_workers"],
                                                    "rates": learned["rates"], "from": "taxation_planner.json"}
        arms["learned planner + best-response workers (in episode)"] = {
            "welfare": learned["br_episode"], "rates": learned["br_episode_rates"], "from": "taxation_planner.json"}
    # the landscape around the optimum: each bracket's rate swept, the others held there
    sweep = np.round(np.arange(0.0, 1.0001, 0.005), 3)
    opt_rates = np.asarray(opt3["rates"], np.float32)
    slices = []
    for b in range(3):
        cand = np.repeat(opt_rates[None], len(sweep), 0)
        cand[:, b] = sweep
        slices.append(np.asarray(topt.search(cand, skills, cut3, params, levels, batch_size=128)).tolist())
    arms = {n: arms[n] for n in sorted(arms, key=lambda n: n.startswith("optimum"))}  # optima last
    best = arms["optimum, three brackets"]["welfare"]
    for r in arms.values():
        r["gap_to_optimum"] = r["welfare"] / best - 1.0
    return {"arms": arms, "optimum_three": opt3, "optimum_us": opt_us,
            "slices": {"rates": sweep.tolist(), "welfare": slices},
            "flat_grid": {"rates": flat_grid.tolist(), "welfare": flat_w.tolist()},
            "swf": "equality_times_productivity", "income_unit": float(params.income_unit),
            "labour_cost": float(params.labour_cost), "num_workers": env.num_workers, "economies": a.economies}


def table(label, res):
    print(f"\n{label}")
    print(f"{'arm':<56}{'welfare':>9}{'vs opt':>8}{'held-out':>10}{'gini':>7}{'hours':>7}  rates")
    for name, r in res["arms"].items():
        held = r.get("held_out", {}).get("welfare")
        held = f"{held:>10.4f}" if held is not None else f"{'':>10}"
        gini = f"{r['gini']:>7.3f}" if "gini" in r else f"{'':>7}"
        hours = f"{r['mean_hours']:>7.1f}" if "mean_hours" in r else f"{'':>7}"
        rates = np.round(r["rates"], 3).tolist() if not isinstance(r["rates"][0], list) else "per seed"
        print(f"{name:<56}{r['welfare']:>9.4f}{r['gap_to_optimum']:>+8.1%}{held}{gini}{hours}  {rates}")


def main():
    a = parse()
    check_outputs(a)
    t0 = time.time()
    config = runner.load_config(a.config)
    env, params = make_env(config["env"])
    p = json.load(open(a.planner_json))["arms"]
    learned = {"rates": p["learned planner + learned workers"]["rates"],
               "learned_workers": p["learned planner + learned workers"]["equality_x_productivity"],
               "br_episode": p["learned planner + best-response workers"]["equality_x_productivity"],
               "br_episode_rates": p["learned planner + best-response workers"]["rates"]}
    result = {"experiment": setting("A: the learned planner's economy (ippo_taxation.yaml)", env, params, a, learned)}
    env_b = Taxation(num_workers=1000)
    result["env_defaults"] = setting("B: the environment's defaults", env_b, env_b.default_params(), a, None)
    result["seconds"] = time.time() - t0
    table("A: the learned planner's economy (ippo_taxation.yaml; equality x productivity, $100k per worker step)",
          result["experiment"])
    table("B: Taxation(num_workers=1000) defaults (equality x productivity, $1k per worker step)",
          result["env_defaults"])
    print(f"\n{result['seconds']:.0f} s")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(result, f, indent=1)
    if a.plot:
        plot(result, a.plot)


def plot(result, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    res = result["experiment"]
    fig, (ax1, ax3, ax2) = plt.subplots(1, 3, figsize=(15, 4.6))
    curve = np.asarray(res["optimum_three"]["exact_curve"])  # [steps, restarts]
    ax1.plot(curve, lw=0.6, alpha=0.6, color="C0")
    ax1.plot([], [], lw=0.8, color="C0", label="gradient restarts (exact welfare of each iterate)")
    lines = {"optimum, three brackets": "k", "Saez (three brackets)": "C1", "US federal 2024": "C2",
             "learned planner, mean of seeds (fixed)": "C3", "learned planner + learned workers": "C4"}
    lines.update({n: "C5" for n in res["arms"] if n.startswith("best flat")})
    for name, colour in lines.items():
        ax1.axhline(res["arms"][name]["welfare"], color=colour, ls="--", lw=1, label=name)
    ax1.axhline(res["optimum_three"]["gradient"]["welfare"], color="k", ls=":", lw=1,
                label="gradient alone (best restart, polished)")
    ax1.set_ylim(0.45, 0.72)
    ax1.set_xlabel("Adam step (temperature annealed)")
    ax1.set_ylabel("equality x productivity ($100k per worker step)")
    ax1.set_title("Gradient ascent through the relaxed best response", fontsize=9)
    ax1.legend(fontsize=6.5, loc="lower right")
    sl = res["slices"]
    for b, w in enumerate(sl["welfare"]):
        ax3.plot(sl["rates"], w, lw=1, label=f"bracket {b + 1} rate swept")
    for b, r in enumerate(res["arms"]["optimum, three brackets"]["rates"]):
        ax3.axvline(r, color=f"C{b}", ls=":", lw=0.8)
    ax3.set_ylim(0.6, 0.70)
    ax3.set_xlabel("rate (the other two held at the optimum)")
    ax3.set_title("Exact welfare around the optimum (dotted): steps where\na band of workers drops a grid level", fontsize=9)
    ax3.legend(fontsize=7)
    names = [n for n in res["arms"] if not n.startswith("learned planner, seed")]
    vals = [res["arms"][n]["welfare"] for n in names]
    ax2.barh(range(len(names)), vals, color=["k" if n.startswith("optimum") else "C0" if n.startswith("learned")
                                            else "C7" for n in names])
    ax2.set_yticks(range(len(names)), [n.replace(" + ", "\n+ ").replace(", ", ",\n") for n in names], fontsize=7)
    ax2.invert_yaxis()
    ax2.set_xlim(0.3, 0.72)
    ax2.set_xlabel("equality x productivity ($100k per worker step)")
    ax2.set_title("Best-response workers unless named", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--replot"]:
        plot(json.load(open(sys.argv[2])), sys.argv[3])
    else:
        main()

"""A learned central bank against the Taylor rule in the macro economy.

The central bank is trained with IPPO (``baselines/configs/ippo_macro_central_bank.yaml``)
in ``CentralBankEconomy``: the macro economy with households, firms, the bank and the
government scripted (``environments/economy/macro/scripted.py``), so every policy
faces the same economy. ``--seeds`` seeds train at once (``vmap``); every
``--eval-every`` updates the deterministic policy (the Gaussian's mean) is evaluated
inside the compiled program on fixed evaluation episodes. At the end the learned
policies, the Taylor rule (``taylor.py``) and constant rates from -2% to 10% (4% is
the Taylor rule's rate at target; the floor to beat) are evaluated on the *same*
``--eval-episodes`` episodes (same keys: same productivity and TFP shocks) and
compared on the central bank's return, mean |inflation - 2%|, the standard deviation
of output growth and the mean policy rate.

    python experiments/macro_central_bank.py --seeds 3 --out results.json \
        --plot docs/figures/macro_central_bank.png [train.total_timesteps=... ...]

``key=value`` overrides apply to the config (e.g. ``env.kwargs.num_households=200``).
Registers the id ``macro_central_bank`` in-process when the registry lacks it.
"""

import argparse
import json
import os
import time

import jax
import jax.numpy as jnp
import numpy as np
from jaxagents_environments.economy.macro.taylor import taylor_action

from jaxagents import runner
from jaxagents.outputs import check_outputs  # output paths checked before computing
from jaxagents.learners.policy_gradient import ppo

CONFIGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "baselines", "configs")
CONSTANTS = (-0.02, 0.0, 0.02, 0.04, 0.06, 0.08, 0.10)


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", default=os.path.join(CONFIGS, "ippo_macro_central_bank.yaml"))
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--eval-every", type=int, default=20, help="updates between evaluations")
    p.add_argument("--eval-episodes", type=int, default=64)
    p.add_argument("--out", default=None)
    p.add_argument("--plot", default=None)
    p.add_argument("overrides", nargs="*")
    return check_outputs(p.parse_args())


def rollout(env, params, policy, key):
    """One episode under ``policy(obs f32[1, d]) -> f32[1, 2]``: per-step central-bank
    reward, inflation, growth and policy rate, each ``f32[horizon]``."""
    state, ts = env.reset(key, params)

    def body(carry, k):
        state, ts = carry
        state, ts = env.step(k, state, {"central_bank": policy(ts.obs["central_bank"])}, params)
        i = ts.info
        return (state, ts), (ts.reward["central_bank"][0], i["inflation"], i["growth"], i["policy_rate"])

    horizon = int(params.horizon)
    return jax.lax.scan(body, (state, ts), jax.random.split(key, horizon))[1]


def summary(traj, target):
    """Per-episode statistics ``{name: f32[episodes]}`` of ``traj`` ``[episodes, T]`` each."""
    reward, infl, growth, rate = traj
    return {
        "return": reward.sum(-1),
        "inflation": infl.mean(-1),
        "abs_inflation_gap": jnp.abs(infl - target).mean(-1),
        "growth_std": growth.std(-1),
        "policy_rate": rate.mean(-1),
    }


def main():
    a = parse()
    config = runner.load_config(a.config, a.overrides)
    env, params = runner.make_env(config["env"])
    cfg = ppo.PPOConfig(**config["train"])
    if cfg.num_updates % a.eval_every:
        raise ValueError(f"num_updates={cfg.num_updates} must be a multiple of --eval-every={a.eval_every}")
    train = ppo.make_train(cfg, env, env_params=params)
    agents, target = train.agents, params.inflation_target
    eval_keys = jax.random.split(jax.random.key(10_000 + config["seed"]), a.eval_episodes)

    def evaluate(policy):
        return summary(jax.vmap(lambda k: rollout(env, params, policy, k))(eval_keys), target)

    def greedy(net):
        def policy(obs):
            h = agents.modules["central_bank"].initial_state((1, 1))
            o = obs[None, None]  # [T=1, E=1, n=1, d]
            _, out, _ = agents.apply(net, "central_bank", h, o, o, jnp.zeros((1, 1, 1), bool))
            return out[0, 0]

        return policy

    def segment(state, _):
        state, m = jax.lax.scan(lambda s, _: train.update(s), state, None, a.eval_every)
        ev = evaluate(greedy(state.params["central_bank"]))
        return state, (m["episode_return/central_bank"], jax.tree.map(jnp.mean, ev))

    @jax.jit
    def program(keys):
        def one(key):
            state = train.init(key)
            ev0 = jax.tree.map(jnp.mean, evaluate(greedy(state.params["central_bank"])))
            state, (ret, ev) = jax.lax.scan(segment, state, None, cfg.num_updates // a.eval_every)
            final = evaluate(greedy(state.params["central_bank"]))
            return ret.reshape(-1), ev0, ev, final, state.params["central_bank"]

        return jax.vmap(one)(keys)

    load = os.getloadavg()
    keys = jax.random.split(jax.random.key(config["seed"]), a.seeds)
    t0, c0 = time.perf_counter(), time.process_time()
    compiled = program.lower(keys).compile()
    t1, c1 = time.perf_counter(), time.process_time()
    ret, ev0, ev, final, nets = jax.block_until_ready(compiled(keys))
    t2, c2 = time.perf_counter(), time.process_time()

    # baselines on the same evaluation episodes, one compiled program: the Taylor rule
    # (flag 1) and the constant rates (reserve ratio held at the Taylor rule's 8%)
    lo, hi = params.policy_rate_min, params.policy_rate_max
    consts = jnp.array([[2 * (c - lo) / (hi - lo) - 1, 2 * 0.08 / params.reserve_ratio_max - 1] for c in (0.0,) + CONSTANTS])
    flags = jnp.array([1.0] + [0.0] * len(CONSTANTS))
    fixed = lambda flag, act: lambda o: jnp.where(flag > 0, taylor_action(o, params), act[None])
    base = jax.jit(jax.vmap(lambda f, c: evaluate(fixed(f, c))))(flags, consts)
    names = ["taylor"] + [f"constant {c:.0%}" for c in CONSTANTS]
    baselines = {n: {k: v[i] for k, v in base.items()} for i, n in enumerate(names)}
    best_const = max((k for k in baselines if k.startswith("constant")), key=lambda k: float(baselines[k]["return"].mean()))
    t3 = time.perf_counter()

    table = {}
    for s in range(a.seeds):
        table[f"learned seed {s}"] = {k: np.asarray(v[s]) for k, v in final.items()}
    for k in baselines:
        table[k] = {m: np.asarray(v) for m, v in baselines[k].items()}
    learned_returns = np.array([float(np.mean(final["return"][s])) for s in range(a.seeds)])
    taylor = np.asarray(baselines["taylor"]["return"])
    diffs = [np.asarray(final["return"][s]) - taylor for s in range(a.seeds)]  # paired, same episodes
    print(f"load average at start {load[0]:.2f}; compile {t1 - t0:.1f} s; train+eval {t2 - t1:.1f} s wall, "
          f"{c2 - c1:.1f} s process CPU; baselines {t3 - t2:.1f} s")
    print(f"{'policy':<18} {'return':>14} {'pi':>8} {'|pi-2%|':>9} {'sd(g)':>8} {'rate':>7}")
    rows = {}
    for name, m in table.items():
        r = m["return"]
        rows[name] = {k: float(np.mean(v)) for k, v in m.items()} | {"return_se": float(np.std(r) / np.sqrt(r.size))}
        print(f"{name:<18} {np.mean(r):7.2f} ± {np.std(r) / np.sqrt(r.size):4.2f} {np.mean(m['inflation']):8.4f} {np.mean(m['abs_inflation_gap']):9.4f} "
              f"{np.mean(m['growth_std']):8.4f} {np.mean(m['policy_rate']):7.4f}")
    print(f"learned over seeds: return {learned_returns.mean():.2f} ± {learned_returns.std(ddof=1) if a.seeds > 1 else 0:.2f} (sd over seeds); "
          f"paired difference to Taylor per seed: " + ", ".join(f"{d.mean():+.2f} ± {d.std() / np.sqrt(d.size):.2f}" for d in diffs))

    steps_per_update = cfg.num_envs * cfg.num_steps
    out = dict(
        args=vars(a), config=config, load_average=load, compile_s=t1 - t0, train_wall_s=t2 - t1, train_cpu_s=c2 - c1,
        env_steps=[int(u * steps_per_update) for u in range(1, cfg.num_updates + 1)],
        train_return=np.asarray(ret).tolist(),
        eval_env_steps=[0] + [int(u * steps_per_update) for u in range(a.eval_every, cfg.num_updates + 1, a.eval_every)],
        eval_return=np.concatenate([np.asarray(ev0["return"])[:, None], np.asarray(ev["return"])], 1).tolist(),
        table=rows, best_constant=best_const,
        baseline_returns={k: float(np.mean(v["return"])) for k, v in baselines.items()},
        paired_diff_to_taylor=[[float(d.mean()), float(d.std() / np.sqrt(d.size))] for d in diffs],
    )
    # one sample episode (the first evaluation episode, same shocks): learned seed 0 and the Taylor rule
    net0 = jax.tree.map(lambda x: x[0], nets)
    samples = jax.jit(lambda: [rollout(env, params, p, eval_keys[0]) for p in (greedy(net0), fixed(1.0, consts[0]))])()
    out["sample"] = {k: [np.asarray(x).tolist() for x in tr] for k, tr in zip(("learned (seed 0)", "taylor"), samples)}
    if a.out:
        with open(a.out, "w") as f:
            json.dump(out, f, indent=1)
    if a.plot:
        plot(out, a.plot)


def plot(o, path):
    """Left: evaluation return of the deterministic policy vs env steps (one line per
    seed) with the Taylor rule and the constant rates. Right: one sample episode."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (l, r) = plt.subplots(1, 2, figsize=(10, 3.6))
    for s, y in enumerate(o["eval_return"]):
        l.plot(o["eval_env_steps"], y, lw=1, label="learned (IPPO)" if s == 0 else None, color="tab:blue", alpha=0.8)
    b = o["baseline_returns"]
    l.axhline(b["taylor"], color="k", ls="--", label=f"Taylor rule {b['taylor']:.1f}")
    l.axhline(b["constant 4%"], color="tab:gray", ls=":", label=f"constant 4% {b['constant 4%']:.1f}")
    if o["best_constant"] != "constant 4%":
        l.axhline(b[o["best_constant"]], color="tab:orange", ls=":", label=f"best {o['best_constant']} {b[o['best_constant']]:.1f}")
    l.set(xlabel="env steps (one env: all agents)", ylabel="central-bank return (100 years)", title="evaluation (deterministic policy)")
    l.legend(fontsize=7)
    for (name, tr), color in zip(o["sample"].items(), ("tab:blue", "k")):
        t = np.arange(1, len(tr[0]) + 1)
        r.plot(t, 100 * np.asarray(tr[3]), color=color, lw=1.2, label=f"{name}: policy rate")
        r.plot(t, 100 * np.asarray(tr[1]), color=color, lw=0.8, ls=":", label=f"{name}: inflation")
    r.axhline(2.0, color="tab:red", lw=0.6)
    r.set(xlabel="year", ylabel="%", title="sample episode (same shocks)")
    r.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()

"""Side by side with JaxMARL's Q-learning baselines: VDN and QMIX on MPE simple_spread and
SMAX 3m, PQN-VDN on Overcooked cramped_room (issue 18).

One process runs one side of one task (``--side ours`` or ``--side jaxmarl``) and writes
a JSON; ``--report`` merges the JSONs into a table and a curve figure. Both sides train
``--seeds`` seeds in one program (JaxMARL's scripts ``vmap`` their ``train`` over
``split(PRNGKey(SEED), NUM_SEEDS)``; ours ``vmap``s ``learner.init`` / ``learner.update``
over ``split(key(seed), seeds)``) with the same env-step budget, and both measure the
same thing at the same points: the *greedy* return of fresh episodes every
``--test-interval`` of the updates (JaxMARL's ``TEST_INTERVAL``, ``TEST_NUM_ENVS`` x
``TEST_NUM_STEPS``; ours ``learner.evaluate`` with the same sizes, plus one before
training as JaxMARL does). The evaluations are inside each side's timed program.

Returns are per agent per episode. JaxMARL's ``MPELogWrapper`` logs every MPE return
multiplied by the number of agents (3); it is divided back here (``mpe_scale``), so
both columns are the mean agent's own episode return. Overcooked's is the sparse
delivery return (20 per soup) on both sides. SMAX's (``HeuristicEnemySMAX``, 3m) is the
unscaled env return (enemy health removed, up to 1, plus 1 for a won battle) on both
sides, and the greedy tests also report the **win rate** (JaxMARL's
``test_returned_won_episode``: the episode's last reward >= 1). On our side the win rate
is the mean return of the same greedy episodes (same key) under an env whose reward is
that indicator (``reward_map``), and JaxMARL's SMAX reward scale (``REW_SCALE`` 10) is
applied in training by the same wrapper.

Timing: each side's whole program (init, ``scan`` of updates with the periodic greedy
tests) is AOT-compiled first (``jit(...).lower(...).compile()``, reported as
``compile_s``), then run once and timed (``run_s``, wall clock, and process CPU time);
env-steps/s = seeds x total env steps / run_s, compile excluded.

JaxMARL's scripts are not in the pip package and are hydra + wandb programs: pass a
folder holding importable copies of ``baselines/QLearning/{vdn_rnn,qmix_rnn,
pqn_vdn_cnn_overcooked}.py`` (FLAIROx/JaxMARL c793d09) with the hydra / wandb /
omegaconf imports and the ``single_run`` / ``tune`` / ``main`` tail removed, and, in
``vdn_rnn`` / ``qmix_rnn``, the update step returning its metrics instead of ``None``
(docs/results_qlearning.md, section 6, lists the edits), plus ``config/`` with their
``config.yaml`` and ``alg/{ql_rnn_mpe,ql_rnn_smax,pqn_vdn_cnn_overcooked}.yaml``. This driver builds
their config dict the way their hydra ``main`` does (``config.yaml`` merged with the
alg file), then applies the overrides listed in ``TASKS``.

    python experiments/jaxmarl_qlearning.py --task vdn_mpe --side ours --steps 499200 --json vdn_ours.json
    python experiments/jaxmarl_qlearning.py --task vdn_mpe --side jaxmarl --jaxmarl-ref /tmp/jaxmarl_q \\
        --steps 499200 --json vdn_jaxmarl.json
    python experiments/jaxmarl_qlearning.py --report vdn_*.json qmix_*.json pqn_*.json \\
        --figure docs/figures/jaxmarl_qlearning.png --json summary.json

``--jaxmarl-conv im2col`` (PQN only) swaps flax's ``nn.Conv`` in their CNN for the same
'SAME' convolution computed as shifted slices and one matmul (flax's default
initialisers kept): XLA's CPU backend runs ``nn.Conv``'s gradient inside loops about
20x slower (docs/results_qlearning.md, 4.1), which would otherwise make a CPU learning
curve of their PQN impractical. It changes speed, not the function computed.
"""

import argparse
import glob
import json
import math
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from jaxagents.outputs import check_outputs  # output paths checked before computing

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIGS = os.path.join(HERE, "..", "baselines", "configs")

# SMAX 3m against JaxMARL's ql_rnn_smax.yaml: its values on both sides except the GRU width (64 for 512, a
# CPU budget) and the optimiser (our Adam, their RAdam); whole 128-step rollouts are their samples (127
# transitions), so ours samples 127-transition sequences; their buffer (5,000 rollouts of 128 steps) never
# fills in these budgets, ours is sized to the run (``buffer_steps``). Their SMAX rewards are x10
# (REW_SCALE): ours get the same through a reward-scaling wrapper in training (evaluated unscaled).
# Their first gradient step waits for LEARNING_STARTS (10,000 steps) *and* for 32 rollouts per env in
# the buffer (flashbax's min_length_time_axis = BUFFER_BATCH_SIZE), i.e. the 32nd update, 65,536 steps:
# ours starts there too.
SMAX_OURS = ["train.lr=5.0e-5", "train.sample_length=127", "train.learning_starts=65536"]
SMAX = dict(alg="ql_rnn_smax", reward_scale=10.0, win=True, mpe_scale=1.0, test_steps=128, test_envs=128,
            buffer_steps=5000 // 16 * 16 * 128, jaxmarl_overrides={"MAP_NAME": "3m", "HIDDEN_SIZE": 64})

# task -> (our config, our overrides, JaxMARL module, JaxMARL alg yaml, JaxMARL overrides, return scale of theirs)
TASKS = {
    "vdn_mpe": dict(ours="vdn_mpe_simple_spread", module="vdn_rnn", alg="ql_rnn_mpe",
                    # JaxMARL's CTRolloutManager team reward is the sum of the agents' rewards
                    ours_overrides=["train.team_reward=sum"], mpe_scale=3.0, test_steps=30, test_envs=128),
    "qmix_mpe": dict(ours="qmix_mpe_simple_spread", module="qmix_rnn", alg="ql_rnn_mpe",
                     ours_overrides=["train.team_reward=sum"], mpe_scale=3.0, test_steps=30, test_envs=128),
    "vdn_smax": dict(ours="vdn_smax_3m", module="vdn_rnn", ours_overrides=list(SMAX_OURS), **SMAX),
    "qmix_smax": dict(ours="qmix_smax_3m", module="qmix_rnn", **SMAX,
                      ours_overrides=SMAX_OURS + ["train.mixer_embed=64", "train.mixer_hyper_hidden=256"]),
    "pqn_overcooked": dict(ours="pqn_vdn_overcooked_cramped_room", module="pqn_vdn_cnn_overcooked",
                           alg="pqn_vdn_cnn_overcooked", ours_overrides=[], mpe_scale=1.0, test_steps=400,
                           test_envs=32, jaxmarl_overrides={"ENV_KWARGS": {"layout": "cramped_room"}}),
}

def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--task", choices=sorted(TASKS))
    p.add_argument("--side", choices=("ours", "jaxmarl"))
    p.add_argument("--jaxmarl-ref", default=None, help="folder with the adapted JaxMARL scripts and config/")
    p.add_argument("--steps", type=int, default=None, help="env steps per seed (default: the config's)")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--test-interval", type=float, default=0.05, help="fraction of the updates between greedy tests")
    p.add_argument("--test-envs", type=int, default=None, help="greedy test episodes (default: per task)")
    p.add_argument("--jaxmarl-conv", choices=("flax", "im2col"), default="flax")
    p.add_argument("--lapack-init", action="store_true",
                   help="keep flax's orthogonal initialiser in JaxMARL's networks (a LAPACK QR, which deadlocked under "
                   "vmap over seeds on this 2-core machine); by default it is swapped for jaxagents.nn.init.orthogonal, "
                   "the same distribution computed in XLA")
    p.add_argument("--jaxmarl-adam", action="store_true",
                   help="diagnostic: their optax.radam swapped for optax.adam (eps 1e-5, as ours), to measure what "
                   "RAdam's warm-up costs in a short run")
    p.add_argument("--override", action="append", default=[], metavar="KEY=VALUE", help="extra override for our config")
    p.add_argument("--json", default=None)
    p.add_argument("--report", nargs="*", default=None, help="merge these per-side JSONs (globs allowed)")
    p.add_argument("--figure", default=None)
    return p

args = None  # parsed in main() (a test sets it to parser().parse_args([...]))


# ------------------------------------------------------------------------------------ ours


def reward_map(env, fn):
    """``env`` with every role's reward replaced by ``fn(reward)`` (a jaxagents ``Wrapper``):
    JaxMARL's SMAX reward scale in training, and SMAX's win indicator in the greedy tests."""
    from jaxagents.core.wrappers.base import Wrapper

    class RewardMap(Wrapper):
        def step_env(self, key, state, actions, params):
            state, ts = self.env.step(key, state, actions, params)
            return state, ts.replace(reward={r: fn(v) for r, v in ts.reward.items()})

    return RewardMap(env)


def smax_won(reward):
    """1 on the step that wins a SMAX battle: its reward carries the won-battle bonus of 1 on top
    of the enemy health removed that step (< 1), JaxMARL's ``SMAXLogWrapper`` test ``reward >= 1``."""
    return (reward >= 1.0).astype(jnp.float32)


def build_ours(task):
    """``(learner, test_learners)``: the learner that trains and ``{metric: learner}`` whose
    ``evaluate`` gives each greedy-test metric (the same params; they differ in the env's reward)."""
    import importlib

    from jaxagents import runner
    from jaxagents.config import LEARNER_MODULES

    t = TASKS[task]
    overrides = list(t["ours_overrides"]) + list(args.override)
    if args.steps:
        overrides.append(f"train.total_timesteps={args.steps}")
        if task == "pqn_overcooked":  # JaxMARL anneals shaping over half of its 5e6 steps
            overrides.append(f"train.shaped_reward_horizon={args.steps // 2}")
        if "buffer_steps" in t:  # JaxMARL's buffer, or the whole run where that is smaller (the same then)
            run_steps = args.steps // (16 * 128) * (16 * 128)  # whole updates of 16 envs x 128 steps
            overrides.append(f"train.buffer_size={min(t['buffer_steps'], run_steps)}")
    cfg = runner.load_config(os.path.join(CONFIGS, t["ours"] + ".yaml"), overrides)
    learner = runner.build(cfg)
    tests = {"return": learner}
    if "reward_scale" in t or t.get("win"):
        make_train = importlib.import_module(LEARNER_MODULES[cfg["learner"]][0]).make_train
        scale = t.get("reward_scale", 1.0)
        if scale != 1.0:
            learner = make_train(learner.config, reward_map(learner.env, lambda r: r * scale), learner.env_params)
        if t.get("win"):
            tests["win"] = make_train(learner.config, reward_map(tests["return"].env, smax_won), learner.env_params)
    return learner, tests, overrides


def run_ours(task):
    t = TASKS[task]
    learner, test_learners, overrides = build_ours(task)
    c = learner.config
    steps_per_update = c.num_envs * c.num_steps
    U = learner.num_updates
    interval = int(U * args.test_interval)
    blocks, rest = divmod(U, interval)
    test_envs = args.test_envs or t["test_envs"]

    def evaluate(state, key):
        """{metric: mean over roles}; every metric's learner plays the same episodes (same key)."""
        out = {}
        for name, tl in test_learners.items():
            ev = tl.evaluate(state, key, test_envs, t["test_steps"])
            out[name] = jnp.mean(jnp.stack([v for k, v in ev.items() if k.startswith("eval/episode_return/")]))
        return out

    def train_return(m):
        rets = jnp.stack([v for k, v in m.items() if k.startswith("episode_return/")])  # [roles, updates]
        n = m["episodes"]
        return jnp.where(jnp.sum(n) > 0, jnp.sum(rets.mean(0) * n) / jnp.maximum(jnp.sum(n), 1), jnp.nan)

    def program(key):
        k_init, k_eval, k_rest = jax.random.split(key, 3)
        state = learner.init(k_init)
        first = evaluate(state, jax.random.fold_in(k_eval, 0))

        def block(s, i):
            s, m = jax.lax.scan(lambda s, _: learner.update(s), s, None, interval)
            return s, (evaluate(s, jax.random.fold_in(k_eval, i + 1)), train_return(m))

        state, (tests, train_rets) = jax.lax.scan(block, state, jnp.arange(blocks))
        if rest:
            state, _ = jax.lax.scan(lambda s, _: learner.update(s), state, None, rest)
        return jax.tree.map(lambda a, b: jnp.concatenate([a[None], b]), first, tests), train_rets

    keys = jax.random.split(jax.random.key(args.seed), args.seeds)
    t0 = time.perf_counter()
    compiled = jax.jit(jax.vmap(program)).lower(keys).compile()
    compile_s = time.perf_counter() - t0
    w, cpu = time.perf_counter(), time.process_time()
    tests, train_rets = jax.block_until_ready(compiled(keys))
    run_s, cpu_s = time.perf_counter() - w, time.process_time() - cpu
    env_steps = [0] + [(i + 1) * interval * steps_per_update for i in range(blocks)]
    # the training return is the trained env's: JaxMARL's reward scale divided back
    train_rets = np.asarray(train_rets) / t.get("reward_scale", 1.0)
    extra = {"test_win": np.asarray(tests["win"]).T.tolist()} if "win" in tests else {}
    return dict(task=task, side="ours", config=t["ours"], overrides=overrides, seeds=args.seeds,
                total_env_steps=U * steps_per_update, num_updates=U, test_envs=test_envs, test_steps=t["test_steps"],
                env_steps=env_steps, test_return=np.asarray(tests["return"]).T.tolist(),  # [points][seeds]
                train_return=[None] + train_rets.T.tolist(), **extra,
                compile_s=compile_s, run_s=run_s, cpu_s=cpu_s,
                env_steps_per_s=args.seeds * U * steps_per_update / run_s)


# --------------------------------------------------------------------------------- JaxMARL


def _number(v):
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            return v
    return v


def jaxmarl_config(task):
    """Their hydra main's config: config.yaml merged with the alg file, then our overrides."""
    import yaml

    t = TASKS[task]
    base = yaml.safe_load(open(os.path.join(args.jaxmarl_ref, "config", "config.yaml")))
    alg = yaml.safe_load(open(os.path.join(args.jaxmarl_ref, "config", "alg", t["alg"] + ".yaml")))
    config = {k: _number(v) for k, v in {**base, "alg": alg, **alg}.items()}  # as `{**config, **config["alg"]}`
    config.update(t.get("jaxmarl_overrides", {}))
    config.update(NUM_SEEDS=args.seeds, SEED=args.seed, WANDB_MODE="disabled", TEST_DURING_TRAINING=True,
                  TEST_INTERVAL=args.test_interval, TEST_NUM_ENVS=args.test_envs or t["test_envs"],
                  TEST_NUM_STEPS=t["test_steps"], SAVE_PATH=None)
    if args.steps:
        config["TOTAL_TIMESTEPS"] = args.steps
        if "REW_SHAPING_HORIZON" in config:
            config["REW_SHAPING_HORIZON"] = args.steps // 2  # 2.5e6 of 5e6 in their file
    config["TOTAL_TIMESTEPS"] = int(config["TOTAL_TIMESTEPS"])
    return config


def im2col_conv():
    """flax ``nn.Conv(features, kernel_size)`` ('SAME', stride 1, flax's default
    initialisers) computed as one matmul over the shifted slices of the padded input."""
    import flax.linen as nn

    class Conv(nn.Module):
        features: int
        kernel_size: tuple = (3, 3)

        @nn.compact
        def __call__(self, x):
            n, h, w, c = x.shape
            k = self.kernel_size[0]
            r = k // 2
            kernel = self.param("kernel", nn.initializers.lecun_normal(), (k, k, c, self.features))
            bias = self.param("bias", nn.initializers.zeros_init(), (self.features,))
            xp = jnp.pad(x, ((0, 0), (r, r), (r, r), (0, 0)))
            patches = jnp.concatenate([xp[:, i:i + h, j:j + w, :] for i in range(k) for j in range(k)], axis=-1)
            y = patches.reshape(-1, k * k * c) @ kernel.reshape(k * k * c, self.features) + bias
            return y.reshape(n, h, w, self.features)

    return Conv


def run_jaxmarl(task):
    t = TASKS[task]
    if not args.lapack_init:  # before their module binds flax's orthogonal at import
        import flax.linen.initializers as inits

        from jaxagents.nn.init import orthogonal

        inits.orthogonal = lambda scale=1.0, *a, **k: orthogonal(scale)
    import _reference  # experiments/_reference.py (a sibling: this runs as a script)

    ref = _reference.load(args.jaxmarl_ref, t["module"])
    if args.jaxmarl_conv == "im2col":
        import types

        import flax.linen as nn

        ref.nn = types.SimpleNamespace(**{k: getattr(nn, k) for k in dir(nn) if not k.startswith("__")})
        ref.nn.Conv = im2col_conv()
    if args.jaxmarl_adam:
        import types

        import optax

        ref.optax = types.SimpleNamespace(**{k: getattr(optax, k) for k in dir(optax) if not k.startswith("__")})
        ref.optax.radam = lambda learning_rate: optax.adam(learning_rate, eps=1e-5)
    config = jaxmarl_config(task)
    env, _ = ref.env_from_config(dict(config, ENV_KWARGS=dict(config["ENV_KWARGS"])))
    train = ref.make_train(config, env)
    U = int(config["NUM_UPDATES"])
    steps_per_update = config["NUM_ENVS"] * config["NUM_STEPS"]
    interval = int(U * config["TEST_INTERVAL"])
    keys = jax.random.split(jax.random.PRNGKey(config["SEED"]), config["NUM_SEEDS"])
    t0 = time.perf_counter()
    compiled = jax.jit(jax.vmap(train)).lower(keys).compile()
    compile_s = time.perf_counter() - t0
    w, cpu = time.perf_counter(), time.process_time()
    out = jax.block_until_ready(compiled(keys))
    run_s, cpu_s = time.perf_counter() - w, time.process_time() - cpu
    m = out["metrics"]
    test = np.asarray(m["test_returned_episode_returns"]) / t["mpe_scale"]  # [seeds, updates]
    n_updates = np.asarray(m["update_steps"])[0]
    # the test state is refreshed where n_updates % interval == 0; before that, the test at init
    first_before = test[:, 0] if interval > 1 else None
    points = [i for i in range(U) if n_updates[i] % interval == 0]
    env_steps = [int(n_updates[i]) * steps_per_update for i in points]
    tests = [test[:, i].tolist() for i in points]
    extra = {}
    if t.get("win"):
        won = np.asarray(m["test_returned_won_episode"])
        extra["test_win"] = ([won[:, 0].tolist()] if first_before is not None else []) + [won[:, i].tolist() for i in points]
    if first_before is not None:
        env_steps, tests = [0] + env_steps, [first_before.tolist()] + tests
    return dict(task=task, side="jaxmarl" + ("_adam" if args.jaxmarl_adam else ""), module=t["module"], conv=args.jaxmarl_conv if task.startswith("pqn") else None,
                config={k: v for k, v in config.items() if k != "alg" and not isinstance(v, dict)},
                seeds=config["NUM_SEEDS"], total_env_steps=U * steps_per_update, num_updates=U,
                test_envs=config["TEST_NUM_ENVS"], test_steps=config["TEST_NUM_STEPS"],
                env_steps=env_steps, test_return=tests, compile_s=compile_s, run_s=run_s, cpu_s=cpu_s,
                env_steps_per_s=config["NUM_SEEDS"] * U * steps_per_update / run_s, **extra)


# ---------------------------------------------------------------------------------- report


def interval(values):
    """Mean and a 95% t-interval half-width over seeds."""
    v = np.asarray(values, float)
    tq = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57}.get(len(v) - 1, 1.96)
    half = tq * v.std(ddof=1) / math.sqrt(len(v)) if len(v) > 1 else float("nan")
    return float(v.mean()), float(half)


def report(paths, figure, out):
    runs = [json.load(open(f)) for pat in paths for f in sorted(glob.glob(pat))]
    tasks = sorted({r["task"] for r in runs})
    rows = []
    for task in tasks:
        sides = [r for r in runs if r["task"] == task]
        for r in sides:
            mean, half = interval(r["test_return"][-1])
            curve = np.asarray(r["test_return"], float)  # [points, seeds]
            auc, auc_half = interval(curve[1:].mean(0))  # mean over the test points after init, per seed
            win = {}
            if "test_win" in r:
                w_mean, w_half = interval(r["test_win"][-1])
                w_auc, w_auc_half = interval(np.asarray(r["test_win"], float)[1:].mean(0))
                win = dict(final_win=w_mean, win_ci95=w_half, win_curve_mean=w_auc, win_curve_mean_ci95=w_auc_half)
            rows.append(dict(task=task, side=r["side"], conv=r.get("conv"), seeds=r["seeds"], **win,
                             env_steps=r["env_steps"][-1], final_return=mean, ci95=half,
                             curve_mean=auc, curve_mean_ci95=auc_half, cpu_s=r["cpu_s"],
                             env_steps_per_cpu_s=r["seeds"] * r["total_env_steps"] / r["cpu_s"],
                             env_steps_per_s=r["env_steps_per_s"], run_s=r["run_s"], compile_s=r["compile_s"]))
    for row in rows:
        print(f"{row['task']:15s} {row['side']:8s} {str(row['conv'] or ''):7s} {row['env_steps']:>9d} steps  "
              f"return {row['final_return']:8.2f} +- {row['ci95']:.2f}  curve mean {row['curve_mean']:8.2f} "
              f"+- {row['curve_mean_ci95']:.2f}  {row['env_steps_per_s']:8.0f} env-steps/s "
              f"({row['env_steps_per_cpu_s']:.0f} per CPU-s)  "
              f"run {row['run_s']:.0f} s  compile {row['compile_s']:.0f} s"
              + (f"  win {row['final_win']:.3f} +- {row['win_ci95']:.3f} (curve mean {row['win_curve_mean']:.3f} "
                 f"+- {row['win_curve_mean_ci95']:.3f})" if "final_win" in row else ""))
    if out:
        json.dump(dict(rows=rows, runs=runs), open(out, "w"), indent=1)
    if figure:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        # a column per task; the greedy return in the first row, SMAX's greedy win rate in a second
        metrics = ["test_return"] + (["test_win"] if any("test_win" in r for r in runs) else [])
        fig, axes = plt.subplots(len(metrics), len(tasks), figsize=(5 * len(tasks), 3.6 * len(metrics)), squeeze=False)
        for (row, metric), (col, task) in [(m, t) for m in enumerate(metrics) for t in enumerate(tasks)]:
            ax = axes[row, col]
            if not all(metric in r for r in runs if r["task"] == task):
                ax.axis("off")
                continue
            for r in [r for r in runs if r["task"] == task]:
                x = np.asarray(r["env_steps"]) / 1e6
                y = np.asarray(r[metric], float)
                mu = y.mean(1)
                label = "jaxagents" if r["side"] == "ours" else "JaxMARL" + (f" ({r['conv']} conv)" if r.get("conv") else "")
                label += " (RAdam -> Adam)" if r["side"] == "jaxmarl_adam" else ""
                color = {"ours": "C1", "jaxmarl": "C0"}.get(r["side"], "C2")
                ax.plot(x, mu, color=color, label=f"{label}, {r['seeds']} seeds (mean, band: min-max)")
                ax.fill_between(x, y.min(1), y.max(1), color=color, alpha=0.2)
            ax.set_title(task)
            ax.set_xlabel("env steps (M)")
            ax.set_ylabel("greedy win rate" if metric == "test_win" else "greedy return per agent")
            ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(figure, dpi=120)
        print("wrote", figure)


def main(argv=None) -> int:
    global args
    p = parser()
    args = check_outputs(p.parse_args(argv))
    if args.report is not None:
        report(args.report, args.figure, args.json)
        return 0
    if not args.task or not args.side:
        p.error("--task and --side (or --report)")
    if args.side == "jaxmarl" and not args.jaxmarl_ref:
        p.error("--side jaxmarl needs --jaxmarl-ref")
    res = run_ours(args.task) if args.side == "ours" else run_jaxmarl(args.task)
    res.update(jax=jax.__version__, date=time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
               load_avg=os.getloadavg(), affinity=sorted(os.sched_getaffinity(0)))
    print(json.dumps({k: v for k, v in res.items() if k not in ("test_return", "train_return", "config", "env_steps")}))
    print("final test return per seed:", res["test_return"][-1])
    if args.json:
        from jaxagents.tracking import atomic_write

        atomic_write(args.json, json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

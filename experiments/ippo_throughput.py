"""Training throughput: jaxagents IPPO vs JaxMARL's ippo_ff_overcooked, same machine.

Both train on Overcooked cramped_room with JaxMARL's recipe (16 envs x 128 steps,
4 epochs x 4 minibatches, MLP 64-64 tanh actor and critic): ours from
baselines/configs/ippo_overcooked_cramped_room.yaml, theirs from JaxMARL's own
``make_train`` (baselines/IPPO/ippo_ff_overcooked.py with its config
baselines/IPPO/config/ippo_ff_overcooked.yaml). JaxMARL's script is not part of the
pip package: pass a copy of it, edited only so that it imports as a module (drop the
wandb/hydra ``main``; ``env.action_space()`` -> ``env.action_space(env.agents[0])`` for
jaxmarl 0.2) and given a ``make_config(layout, **overrides)`` helper returning its
CONFIG with ``ENV_KWARGS={"layout": overcooked_layouts[layout]}`` and the overrides.

Protocol (compile excluded): each implementation's whole training program,
``jit(train)``, is compiled for U0 and U0 + U updates; the compiled programs are then
called alternately (ours/theirs, small/large) REPS times. The time of one update is
(large - small) / U, which cancels the one-off initialisation. Wall-clock and process
CPU time are both reported (CPU time is far less sensitive to other load).

    python experiments/ippo_throughput.py --jaxmarl-ref DIR [--updates 20] [--reps 5] [--vmap P] [--split-epochs]

``--vmap P``: both programs under ``jax.vmap`` over P seeds, as JaxMARL's ``main`` runs
its ``make_train`` (``NUM_SEEDS = P``) and as ``Population`` runs P members; env-steps/s
are summed over the seeds. Even ``--vmap 1`` differs from the bare program: XLA compiles
the one-seed batch differently (faster for both, by unequal amounts).
``--split-epochs``: also builds the programs with one PPO epoch instead of four and
reports one epoch's cost, ``(t(4) - t(1)) / 3``, and the rest of an update (rollout,
advantages, the minibatch shuffle's set-up), ``t(1) - epoch``.

DIR holds the adapted ``ippo_ff_overcooked.py``. Prints JSON: env-steps/s (best and
median over reps) for both and ours/theirs ratios.
"""

import argparse
import json
import os
import sys
import time

import _reference  # experiments/_reference.py: a reference module loaded by path
import jax
import numpy as np

from jaxagents.outputs import check_outputs  # output paths checked before computing

args = None  # the parsed command line, set by main()

STEPS = 16 * 128  # env steps per update (NUM_ENVS x NUM_STEPS)
CONFIG = os.path.join(os.path.dirname(__file__), "..", "baselines", "configs", "ippo_overcooked_cramped_room.yaml")


EPOCHS = 4  # both recipes' update epochs


def compiled(train, key):
    if args.vmap:  # P seeds, batched as JaxMARL's main and Population do
        train, key = jax.vmap(train), jax.random.split(key, args.vmap)
    return jax.jit(train).lower(key).compile(), key


def build_ours(u, epochs=EPOCHS):
    from jaxagents import runner

    train = runner.build(runner.load_config(CONFIG, [f"train.total_timesteps={u * STEPS}", f"train.update_epochs={epochs}"]))
    assert train.num_updates == u
    return compiled(train.train, jax.random.key(1))


def build_jaxmarl(u, epochs=EPOCHS):
    if args.vmap:  # flax's orthogonal init is a LAPACK QR, batched under vmap: the same init computed in XLA
        import flax.linen.initializers as inits

        from jaxagents.nn.init import orthogonal

        inits.orthogonal = lambda scale=1.0, *a, **k: orthogonal(scale)
    ref = _reference.load(args.jaxmarl_ref, "ippo_ff_overcooked")

    config = ref.make_config("cramped_room", TOTAL_TIMESTEPS=u * STEPS, UPDATE_EPOCHS=epochs)
    train = ref.make_train(config)
    assert config["NUM_UPDATES"] == u
    return compiled(train, jax.random.PRNGKey(1))


def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--jaxmarl-ref", required=True, help="folder with the adapted ippo_ff_overcooked.py")
    p.add_argument("--updates", type=int, default=20, help="U: extra updates of the large program")
    p.add_argument("--base-updates", type=int, default=2, help="U0: updates of the small program")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--which", default="ours,jaxmarl")
    p.add_argument("--vmap", type=int, default=0, metavar="P",
                   help="each program under jax.vmap over P seeds (JaxMARL's main with NUM_SEEDS=P; Population); 0: bare")
    p.add_argument("--split-epochs", action="store_true", help="also time 1-epoch programs: one epoch's cost and the rest")
    return check_outputs(p.parse_args())


def main(argv=None):
    global args
    args = parse(argv)
    which, U0, U = args.which.split(","), args.base_updates, args.updates
    epoch_counts = (EPOCHS, 1) if args.split_epochs else (EPOCHS,)
    fns = {}
    for name in which:
        for e in epoch_counts:
            for u in (U0, U0 + U):
                t = time.perf_counter()
                key = (name, u) if e == EPOCHS else (f"{name}_1epoch", u)
                fns[key] = {"ours": build_ours, "jaxmarl": build_jaxmarl}[name](u, e)
                jax.block_until_ready(fns[key][0](fns[key][1]))  # warm-up
                print(f"{key[0]} U={u}: compile + warm-up {time.perf_counter() - t:.1f}s", file=sys.stderr, flush=True)
    times = {k: [] for k in fns}
    loads = []
    for r in range(args.reps):
        for k, (f, key) in fns.items():
            t, c = time.perf_counter(), time.process_time()
            jax.block_until_ready(f(key))
            times[k].append((time.perf_counter() - t, time.process_time() - c))
        loads.append(os.getloadavg()[0])
        print(f"rep {r}: " + " ".join(f"{k[0]}/{k[1]} {v[-1][0]:.2f}s" for k, v in times.items()) + f" load {loads[-1]:.1f}", file=sys.stderr, flush=True)
    res = {"updates": U, "base_updates": U0, "reps": args.reps, "load_1min_per_rep": loads, "cpus": os.cpu_count(), "vmap": args.vmap}
    seeds = max(args.vmap, 1)
    for name in sorted({k[0] for k in fns}):
        small, big = np.array(times[name, U0]), np.array(times[name, U0 + U])
        for i, kind in enumerate(("wall", "cpu")):
            best = (big[:, i].min() - small[:, i].min()) / U
            med = (np.median(big[:, i]) - np.median(small[:, i])) / U
            res[f"{name}_{kind}"] = {"ms_per_update_best": 1e3 * best, "ms_per_update_median": 1e3 * med,
                                     "env_steps_per_s_best": seeds * STEPS / best, "env_steps_per_s_median": seeds * STEPS / med}
    if len(which) == 2:
        for kind in ("wall", "cpu"):
            for stat in ("best", "median"):
                a, b = res[f"ours_{kind}"], res[f"jaxmarl_{kind}"]
                res[f"ratio_{kind}_{stat}"] = a[f"env_steps_per_s_{stat}"] / b[f"env_steps_per_s_{stat}"]
    if args.split_epochs:
        for name in which:
            for i, kind in enumerate(("wall", "cpu")):
                for stat in ("best", "median"):
                    full, one = res[f"{name}_{kind}"][f"ms_per_update_{stat}"], res[f"{name}_1epoch_{kind}"][f"ms_per_update_{stat}"]
                    epoch = (full - one) / (EPOCHS - 1)
                    res[f"{name}_{kind}"][f"ms_per_epoch_{stat}"] = epoch
                    res[f"{name}_{kind}"][f"ms_rest_{stat}"] = one - epoch
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()

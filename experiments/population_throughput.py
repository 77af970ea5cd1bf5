"""Population throughput: P IPPO members in one program (``Population``, with and
without PBT) vs JaxMARL's ippo_ff_overcooked with ``NUM_SEEDS = P``, same process.

Every member trains on Overcooked cramped_room with JaxMARL's recipe (16 envs x 128
steps, 4 epochs x 4 minibatches, 64-64 tanh actor and critic): ours from
baselines/configs/ippo_overcooked_cramped_room.yaml wrapped in
``Population(learner, P, ranges={lr, ent_coef})`` (members' learning rate and entropy
coefficient drawn from the ranges of baselines/configs/ippo_pbt_overcooked_coordination_ring.yaml),
once without PBT and once with a PBT ready point after *every* update
(``PBTConfig(interval=1)``: the worst case; the configs use 20-50); theirs from
JaxMARL's own ``make_train`` vmapped over P seeds as its ``main`` does
(``jax.vmap(make_train(config))(split(key, NUM_SEEDS))``, here under one ``jax.jit``).
JaxMARL's script is not part of the pip package: pass a copy of
``baselines/IPPO/ippo_ff_overcooked.py`` (see ``experiments/ippo_throughput.py``
and docs/results_population.md for the edits: imports as a module, no wandb/hydra, a
``make_config(layout, **overrides)`` helper).

Protocol (compile excluded), per population size P: each implementation's whole
program (init + ``scan`` of updates) is AOT-compiled for U0 and U0 + U updates; the
programs are called alternately (ours / ours+PBT / JaxMARL, small / large) REPS
times. One update of all P members takes (large - small) / U, which cancels the
one-off initialisation; summed env-steps/s = P * 16 * 128 / that. Wall-clock and
process CPU time are both reported (CPU time is far less sensitive to other load).

The PBT step alone: ``jit(Population._ready)`` (rank, exploit -- copy the train state
of every replaced member --, explore) called on a population state of P members,
timed over ``--ready-calls`` calls, as a fraction of one update's time.

    python experiments/population_throughput.py --jaxmarl-ref DIR \\
        [--sizes 1,4,16,64] [--updates 2] [--base-updates 1] [--reps 3] [--json OUT]

Prints (and writes, after every size) JSON.
"""

import argparse
import json
import os
import sys
import time

import _reference  # experiments/_reference.py: a reference module loaded by path
import jax
import jax.numpy as jnp
import numpy as np

from jaxagents.outputs import check_outputs  # output paths checked before computing

args = None  # the parsed command line, set by main()

STEPS = 16 * 128  # env steps per member per update (NUM_ENVS x NUM_STEPS)
HERE = os.path.dirname(os.path.abspath(__file__))
CONFIG = os.path.join(HERE, "..", "baselines", "configs", "ippo_overcooked_cramped_room.yaml")
RANGES = {"lr": (1.0e-4, 2.0e-3), "ent_coef": (1.0e-3, 5.0e-2)}


def learner_for(u):
    from jaxagents import runner

    learner = runner.build(runner.load_config(CONFIG, [f"train.total_timesteps={u * STEPS}", *args.override]))
    assert learner.num_updates == u
    return learner


def population(size, u, pbt):
    from jaxagents.population import PBTConfig, Population

    cfg = PBTConfig(interval=1, fraction=0.25, hparams=("lr", "ent_coef")) if pbt else None
    return Population(learner_for(u), size, pbt=cfg, ranges=RANGES)


def build_ours(size, u, pbt=False):
    pop = population(size, u, pbt)
    return jax.jit(pop.train).lower(jax.random.key(0)).compile(), jax.random.key(1)


def build_learner(size, u):
    """The bare learner vmapped over P seeds, as JaxMARL's ``main`` does (no
    ``Population``: the config's hyper-parameters for every member)."""
    learner = learner_for(u)
    keys = jax.random.split(jax.random.key(1), size)
    return jax.jit(jax.vmap(learner.train)).lower(keys).compile(), keys


def build_jaxmarl(size, u):
    if not args.lapack_init:  # before the module binds flax's orthogonal at import
        import flax.linen.initializers as inits

        from jaxagents.nn.init import orthogonal

        inits.orthogonal = lambda scale=1.0, *a, **k: orthogonal(scale)
    ref = _reference.load(args.jaxmarl_ref, "ippo_ff_overcooked")

    config = ref.make_config("cramped_room", TOTAL_TIMESTEPS=u * STEPS, NUM_SEEDS=size)
    train = ref.make_train(config)
    assert config["NUM_UPDATES"] == u
    keys = jax.random.split(jax.random.PRNGKey(1), size)
    return jax.jit(jax.vmap(train)).lower(keys).compile(), keys


def time_ready(size, calls):
    """Seconds (wall, CPU) per call of jit(Population._ready) on P members."""
    pop = population(size, 1, pbt=True)
    state = jax.jit(pop.init)(jax.random.key(0))
    state = state.replace(fitness_sum=jax.random.normal(jax.random.key(2), (size,)), fitness_count=jnp.ones((size,)))
    ready = jax.jit(pop._ready).lower(state).compile()
    jax.block_until_ready(ready(state))
    out = []
    for _ in range(calls):
        t, c = time.perf_counter(), time.process_time()
        jax.block_until_ready(ready(state))
        out.append((time.perf_counter() - t, time.process_time() - c))
    return np.array(out)


def summarise(times, U0, U, size):
    res = {}
    for name in sorted({k[0] for k in times}):
        small, big = np.array(times[name, U0]), np.array(times[name, U0 + U])
        for i, kind in enumerate(("wall", "cpu")):
            best = (big[:, i].min() - small[:, i].min()) / U
            med = (np.median(big[:, i]) - np.median(small[:, i])) / U
            res[f"{name}_{kind}"] = {"s_per_update_best": best, "s_per_update_median": med,
                                     "env_steps_per_s_best": size * STEPS / best, "env_steps_per_s_median": size * STEPS / med}
    for name in ("ours", "ours_pbt", "learner"):
        if f"{name}_wall" in res and "jaxmarl_wall" in res:
            for kind in ("wall", "cpu"):
                for stat in ("best", "median"):
                    a, b = res[f"{name}_{kind}"], res[f"jaxmarl_{kind}"]
                    res[f"ratio_{name}_{kind}_{stat}"] = a[f"env_steps_per_s_{stat}"] / b[f"env_steps_per_s_{stat}"]
    if "ours_wall" in res and "ours_pbt_wall" in res:
        for kind in ("wall", "cpu"):
            a, b = res[f"ours_pbt_{kind}"], res[f"ours_{kind}"]
            res[f"pbt_every_update_overhead_{kind}_median"] = a["s_per_update_median"] / b["s_per_update_median"] - 1
            res[f"pbt_every_update_overhead_{kind}_best"] = a["s_per_update_best"] / b["s_per_update_best"] - 1
    return res




def ready_only(size, update_calls, ready_calls):
    """One ``jit(Population.update)`` call (no PBT) vs one ``jit(Population._ready)``
    call on the same P-member state, called alternately: (wall, cpu) seconds each."""
    pop = population(size, 1, pbt=True)
    plain = population(size, 1, pbt=False)
    state = jax.jit(pop.init)(jax.random.key(0))
    state = state.replace(fitness_sum=jax.random.normal(jax.random.key(2), (size,)), fitness_count=jnp.ones((size,)))
    t = time.perf_counter()
    update = jax.jit(plain.update).lower(state).compile()
    ready = jax.jit(pop._ready).lower(state).compile()
    jax.block_until_ready((update(state), ready(state)))
    print(f"P={size} ready-only: compile + warm-up {time.perf_counter() - t:.1f}s", file=sys.stderr, flush=True)
    out = {"update": [], "ready": []}
    for i in range(max(update_calls, ready_calls)):
        for name, f in (("update", update), ("ready", ready)):
            if len(out[name]) < (update_calls if name == "update" else ready_calls):
                t, c = time.perf_counter(), time.process_time()
                jax.block_until_ready(f(state))
                out[name].append((time.perf_counter() - t, time.process_time() - c))
    return {k: np.array(v) for k, v in out.items()}


def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--jaxmarl-ref", required=True, help="folder with the adapted ippo_ff_overcooked.py")
    p.add_argument("--sizes", default="1,4,16,64")
    p.add_argument("--updates", type=int, default=2, help="U: extra updates of the large program")
    p.add_argument("--base-updates", type=int, default=1, help="U0: updates of the small program")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--reps-large", type=int, default=None, help="reps for P >= 64 (default: --reps)")
    p.add_argument("--ready-calls", type=int, default=10)
    p.add_argument("--which", default="ours,ours_pbt,jaxmarl",
                   help="comma-separated: ours (Population), ours_pbt (Population with PBT every update), "
                   "learner (the bare learner under jax.vmap over seeds, no Population), jaxmarl")
    p.add_argument("--lapack-init", action="store_true",
                   help="keep JaxMARL's flax orthogonal init (a batched LAPACK QR under its vmap over seeds, which "
                   "deadlocked on 2 CPU cores at NUM_SEEDS >= 4); by default it is swapped for jaxagents.nn.init.orthogonal, "
                   "the same distribution computed in XLA. Initialisation is outside the timed difference either way")
    p.add_argument("--json", default=None)
    p.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                   help="a config override for our learner, e.g. train.bootstrap_truncated=false (JaxMARL's semantics: "
                   "a truncated episode is treated as terminated, no V(final obs)); repeatable")
    p.add_argument("--ready-only", action="store_true",
                   help="only time jit(Population.update) (no PBT, --reps calls) against jit(Population._ready) (--ready-calls calls)")
    return check_outputs(p.parse_args())


def main(argv=None):
    global args
    args = parse(argv)
    which, U0, U = args.which.split(","), args.base_updates, args.updates
    results = {"updates": U, "base_updates": U0, "cpus": os.cpu_count(), "jax": jax.__version__, "overrides": args.override,
               "backend": jax.default_backend(), "device": jax.devices()[0].device_kind, "sizes": {}}
    if args.ready_only:  # only the PBT step's cost against an update (no JaxMARL)
        for size in [int(s) for s in args.sizes.split(",")]:
            t = ready_only(size, args.reps, args.ready_calls)
            res = {"load_1min": os.getloadavg()[0]}
            for i, kind in enumerate(("wall", "cpu")):
                u, r = np.median(t["update"][:, i]), np.median(t["ready"][:, i])
                res[kind] = {"update_s_median": float(u), "ready_s_median": float(r), "ready_fraction_of_update": float(r / u),
                             "update_s_best": float(t["update"][:, i].min()), "ready_s_best": float(t["ready"][:, i].min()),
                             "env_steps_per_s_median": size * STEPS / float(u)}
            res["raw_seconds"] = {k: v.tolist() for k, v in t.items()}
            results["sizes"][str(size)] = res
            print(json.dumps({str(size): res}), flush=True)
            if args.json:
                with open(args.json, "w") as f:
                    json.dump(results, f, indent=1)
        return
    try:
        import importlib.metadata as md

        results["jaxmarl"] = md.version("jaxmarl")
    except Exception:  # noqa: BLE001
        pass
    for size in [int(s) for s in args.sizes.split(",")]:
        reps = args.reps_large if (args.reps_large and size >= 64) else args.reps
        fns, compile_s = {}, {}
        for name in which:
            if name == "ours_pbt" and size < 2:
                continue  # PBT needs two members
            for u in (U0, U0 + U):
                t = time.perf_counter()
                if name == "jaxmarl":
                    fns[name, u] = build_jaxmarl(size, u)
                elif name == "learner":
                    fns[name, u] = build_learner(size, u)
                else:
                    fns[name, u] = build_ours(size, u, pbt=name == "ours_pbt")
                jax.block_until_ready(fns[name, u][0](fns[name, u][1]))  # warm-up
                compile_s[f"{name}/U={u}"] = time.perf_counter() - t
                print(f"P={size} {name} U={u}: compile + warm-up {time.perf_counter() - t:.1f}s", file=sys.stderr, flush=True)
        times = {k: [] for k in fns}
        loads = [os.getloadavg()[0]]
        for r in range(reps):
            for k, (f, key) in fns.items():
                t, c = time.perf_counter(), time.process_time()
                jax.block_until_ready(f(key))
                times[k].append((time.perf_counter() - t, time.process_time() - c))
            loads.append(os.getloadavg()[0])
            print(f"P={size} rep {r}: " + " ".join(f"{k[0]}/{k[1]} {v[-1][0]:.2f}s" for k, v in times.items())
                  + f" load {loads[-1]:.1f}", file=sys.stderr, flush=True)
            res = summarise(times, U0, U, size)  # after every rep: a run stopped early keeps what it measured
            res["reps"], res["load_1min"], res["compile_and_warmup_s"] = r + 1, loads, compile_s
            res["raw_seconds"] = {f"{k[0]}/U={k[1]}": v for k, v in times.items()}
            results["sizes"][str(size)] = res
            if args.json:
                with open(args.json, "w") as f:
                    json.dump(results, f, indent=1)
        if size >= 2 and "ours" in which:
            ready = time_ready(size, args.ready_calls)
            res["pbt_ready_step"] = {"wall_s_median": float(np.median(ready[:, 0])), "cpu_s_median": float(np.median(ready[:, 1])),
                                     "wall_s_best": float(ready[:, 0].min()), "cpu_s_best": float(ready[:, 1].min())}
            for kind in ("wall", "cpu"):
                res[f"pbt_ready_fraction_of_update_{kind}"] = (res["pbt_ready_step"][f"{kind}_s_median"]
                                                              / res[f"ours_{kind}"]["s_per_update_median"])
        results["sizes"][str(size)] = res
        print(json.dumps({str(size): {k: v for k, v in res.items() if k != "raw_seconds"}}, indent=1), flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(results, f, indent=1)
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()

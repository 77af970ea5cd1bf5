"""Training throughput of one baseline config: time per update of its compiled program.

The config's training program (``runner.build``, every override applied) is compiled
for ``--updates`` updates (self-play: evaluated at the last update only), called once
to warm up, then ``--reps`` times; the
time of one update is the call's time divided by the updates. Initialisation is
inside the call, so use enough updates for it not to matter (the default 40 is fine
for self-play and small PPO configs). Prints wall-clock and process CPU time per
update (best and median) and env-steps/s.

    python experiments/train_throughput.py baselines/configs/selfplay_kuhn.yaml \
        [--updates 40] [--reps 5] [key=value ...]
"""

import argparse
import json
import time

import jax
import numpy as np

from jaxagents import runner
from jaxagents.outputs import check_outputs  # output paths checked before computing


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("config", help="a YAML config (baselines/configs/...)")
    p.add_argument("overrides", nargs="*", help="key=value overrides, as for `jaxagents train`")
    p.add_argument("--updates", type=int, default=40)
    p.add_argument("--reps", type=int, default=5)
    args = check_outputs(p.parse_args(argv))
    if args.updates < 1 or args.reps < 1:
        p.error("--updates and --reps must be >= 1")

    base = runner.load_config(args.config, args.overrides)
    ppo = base["train"].get("ppo", base["train"])
    steps = int(ppo["num_envs"]) * int(ppo["num_steps"])
    extra = [f"{'train.ppo' if 'ppo' in base['train'] else 'train'}.total_timesteps={steps * args.updates}"]
    if base.get("learner") == "selfplay":
        extra.append(f"train.eval_every={args.updates + 1}")
    train = runner.build(runner.load_config(args.config, [*args.overrides, *extra]))
    assert train.num_updates == args.updates, (train.num_updates, args.updates)
    key = jax.random.key(0)
    t0 = time.perf_counter()
    f = jax.jit(train).lower(key).compile()
    compile_s = time.perf_counter() - t0
    jax.block_until_ready(f(key))
    wall, cpu = [], []
    for _ in range(args.reps):
        t, c = time.perf_counter(), time.process_time()
        jax.block_until_ready(f(key))
        wall.append((time.perf_counter() - t) / args.updates)
        cpu.append((time.process_time() - c) / args.updates)
    out = {
        "config": args.config,
        "overrides": args.overrides,
        "env_steps_per_update": steps,
        "compile_s": round(compile_s, 1),
        "ms_per_update_wall": {"best": 1e3 * min(wall), "median": 1e3 * float(np.median(wall))},
        "ms_per_update_cpu": {"best": 1e3 * min(cpu), "median": 1e3 * float(np.median(cpu))},
        "env_steps_per_s_wall": {"best": steps / min(wall), "median": steps / float(np.median(wall))},
        "jax": jax.__version__,
        "devices": str(jax.devices()),
    }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

"""Run by tests/population/test_mesh.py: one PBT population over 4 CPU devices, either
in one process (``single``) or in two processes of two devices each joined by
``jax.distributed`` on 127.0.0.1 with gloo collectives (``multi PORT ID``). Prints one
JSON line with a digest of every member's parameters and the PBT decisions.

Optional flags after the positional arguments (defaults: the test's tiny setting) make
larger runs for by-hand comparisons: ``--updates N --num-envs N --num-steps N
--epochs N --minibatches N --interval N --env ID --horizon N`` (``stag_hunt`` gets ``horizon=4``;
``overcooked`` gets ``layout=cramped_room``), ``--no-mesh`` (``single`` only: the
population on one device, ``mesh=None``) and ``--dump PATH`` (process 0 writes an
``.npz`` of every member's parameters after each update, the fitness and the PBT
decisions, for locating where two runs part) and ``--hlo PREFIX`` (each process writes
its compiled update, ``PREFIX.pN.compiled.txt``, and the StableHLO before partitioning)."""

import argparse
import hashlib
import json

parser = argparse.ArgumentParser()
parser.add_argument("mode", choices=("single", "multi"))
parser.add_argument("port", nargs="?")
parser.add_argument("pid", nargs="?", type=int)
parser.add_argument("--updates", type=int, default=4)
parser.add_argument("--num-envs", type=int, default=8)
parser.add_argument("--num-steps", type=int, default=8)
parser.add_argument("--epochs", type=int, default=1)
parser.add_argument("--minibatches", type=int, default=1)
parser.add_argument("--interval", type=int, default=2)
parser.add_argument("--env", default="stag_hunt")
parser.add_argument("--horizon", type=int, default=None)
parser.add_argument("--no-mesh", action="store_true")
parser.add_argument("--dump", default=None)
parser.add_argument("--hlo", default=None)
args = parser.parse_args()
mode = args.mode
if mode == "multi":
    from jaxagents.population import distributed

    distributed.initialize(f"127.0.0.1:{args.port}", 2, args.pid, timeout_s=60)

import jax  # noqa: E402
import numpy as np  # noqa: E402

import jaxagents  # noqa: E402
from jaxagents.learners import PPOConfig, make_train  # noqa: E402
from jaxagents.population import PBTConfig, Population, make_mesh  # noqa: E402
from jaxagents.population.distributed import gather  # noqa: E402

assert len(jax.devices()) == 4 and len(jax.local_devices()) == (2 if mode == "multi" else 4)
assert not (args.no_mesh and mode == "multi")
env_kwargs = {"stag_hunt": {"horizon": 4}, "overcooked": {"layout": "cramped_room"}}.get(args.env, {})
if args.horizon is not None:
    env_kwargs["horizon"] = args.horizon
learner = make_train(PPOConfig(num_envs=args.num_envs, num_steps=args.num_steps,
                               total_timesteps=args.num_envs * args.num_steps * args.updates,
                               update_epochs=args.epochs, num_minibatches=args.minibatches),
                     jaxagents.make(args.env, **env_kwargs))
pop = Population(learner, 8, PBTConfig(interval=args.interval, fraction=0.25), ranges={"lr": (1e-4, 1e-2)},
                 mesh=None if args.no_mesh else make_mesh())
state = pop.compile_init()(jax.random.key(0))
local = {len(x.addressable_shards) for x in jax.tree.leaves(state.members.params)}
update = jax.jit(pop.update, out_shardings=(pop.state_sharding(), None))
if args.hlo:  # this process's compiled update (after SPMD partitioning) and the program before it
    lowered = update.lower(state)
    with open(f"{args.hlo}.p{jax.process_index()}.compiled.txt", "w") as f:
        f.write(lowered.compile().as_text())
    with open(f"{args.hlo}.p{jax.process_index()}.stablehlo.txt", "w") as f:
        f.write(lowered.as_text())
parents = []
trace = {f"init_leaf{i}": x for i, x in enumerate(jax.tree.leaves(gather(state.members.params)))} if args.dump else {}
for u in range(args.updates):
    state, m = update(state)
    parents.append(gather(m["pbt/parent"]).tolist())
    if args.dump:
        for i, x in enumerate(jax.tree.leaves(gather(state.members.params))):
            trace[f"u{u}_leaf{i}"] = x
        trace[f"u{u}_fitness"] = gather(m["fitness"])
        trace[f"u{u}_lr"] = gather(state.hparams.lr)
params = gather(state.members.params)
digest = hashlib.sha256(b"".join(np.ascontiguousarray(x).tobytes() for x in jax.tree.leaves(params))).hexdigest()
if args.dump and jax.process_index() == 0:
    names = [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(params)[0]]
    np.savez(args.dump, parents=np.asarray(parents), leaf_names=np.asarray(names), **trace)
print(json.dumps({"process": jax.process_index(), "local_shards": sorted(local), "digest": digest, "parents": parents,
                  "lr": gather(state.hparams.lr).tolist()}))

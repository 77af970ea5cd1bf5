"""Run by tests/population/test_mesh.py: one PBT population over 4 CPU devices, either
in one process (``single``) or in two processes of two devices each joined by
``jax.distributed`` on 127.0.0.1 with gloo collectives (``multi PORT ID``). Prints one
JSON line with a digest of every member's parameters and the PBT decisions."""

import hashlib
import json
import sys

mode = sys.argv[1]
if mode == "multi":
    from jaxagents.population import distributed

    distributed.initialize(f"127.0.0.1:{sys.argv[2]}", 2, int(sys.argv[3]), timeout_s=60)

import jax  # noqa: E402
import numpy as np  # noqa: E402

import jaxagents  # noqa: E402
from jaxagents.learners import PPOConfig, make_train  # noqa: E402
from jaxagents.population import PBTConfig, Population, make_mesh  # noqa: E402
from jaxagents.population.distributed import gather  # noqa: E402

assert len(jax.devices()) == 4 and len(jax.local_devices()) == (2 if mode == "multi" else 4)
learner = make_train(PPOConfig(num_envs=8, num_steps=8, total_timesteps=8 * 8 * 4, update_epochs=1, num_minibatches=1),
                     jaxagents.make("stag_hunt", horizon=4))
pop = Population(learner, 8, PBTConfig(interval=2, fraction=0.25), ranges={"lr": (1e-4, 1e-2)}, mesh=make_mesh())
state = pop.compile_init()(jax.random.key(0))
local = {len(x.addressable_shards) for x in jax.tree.leaves(state.members.params)}
update = jax.jit(pop.update, out_shardings=(pop.state_sharding(), None))
parents = []
for _ in range(4):
    state, m = update(state)
    parents.append(gather(m["pbt/parent"]).tolist())
params = gather(state.members.params)
digest = hashlib.sha256(b"".join(np.ascontiguousarray(x).tobytes() for x in jax.tree.leaves(params))).hexdigest()
print(json.dumps({"process": jax.process_index(), "local_shards": sorted(local), "digest": digest, "parents": parents,
                  "lr": gather(state.hparams.lr).tolist()}))

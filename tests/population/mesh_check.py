"""Run by tests/population/test_mesh.py in a subprocess with 4 fake CPU devices
(XLA_FLAGS must be set before JAX starts): the same PBT population on one device and
sharded over 4 devices. Prints one JSON line."""

import json
import sys

import jax
import numpy as np

import jaxagents
from jaxagents.learners import PPOConfig, make_train
from jaxagents.population import PBTConfig, Population, make_mesh


def run(mesh):
    learner = make_train(PPOConfig(num_envs=8, num_steps=8, total_timesteps=8 * 8 * 4, update_epochs=1, num_minibatches=1),
                         jaxagents.make("stag_hunt", horizon=4))
    pop = Population(learner, 8, PBTConfig(interval=2, fraction=0.25), ranges={"lr": (1e-4, 1e-2)}, mesh=mesh)
    state, metrics = jax.jit(pop.train)(jax.random.key(0))
    return state, jax.tree.map(np.asarray, metrics)


def main():
    assert len(jax.devices()) == 4, jax.devices()
    one, m1 = run(None)
    four, m4 = run(make_mesh())
    leaves = jax.tree.leaves(four.members.params)
    devices = {len(x.sharding.device_set) for x in leaves}
    diff = max(float(np.max(np.abs(np.asarray(a) - np.asarray(b)))) for a, b in zip(jax.tree.leaves(one.members.params), leaves))
    scale = max(float(np.max(np.abs(np.asarray(a)))) for a in leaves)
    out = {
        "devices_per_leaf": sorted(devices),
        "parents_equal": bool(np.array_equal(m1["pbt/parent"], m4["pbt/parent"])),
        "some_copied": bool((m1["pbt/parent"] != np.arange(8)).any()),
        "hparams_equal": bool(np.array_equal(m1["hparams/lr"], m4["hparams/lr"])),
        "fitness_equal": bool(np.array_equal(m1["fitness"], m4["fitness"], equal_nan=True)),
        "max_param_diff": diff,
        "param_scale": scale,
        "bit_identical": diff == 0.0,
    }
    print(json.dumps(out))


if __name__ == "__main__":
    sys.exit(main())

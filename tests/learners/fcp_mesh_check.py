"""FCP on a mesh of 2 fake CPU devices (run by test_fcp.py with XLA_FLAGS set):
stage 1's partners sharded over ``pop`` against one device, and stage 2's
environments split over ``data`` against the same learner on one device. Prints one JSON line."""

import json

import jax
import numpy as np

import jaxagents
from jaxagents.learners.policy_gradient import fcp
from jaxagents.population import Population, make_mesh

PPO = dict(num_envs=8, num_steps=10, total_timesteps=8 * 10 * 4, update_epochs=1, num_minibatches=1, lr=1e-2,
           network=dict(hidden=[16]))


def run(pop, updates):
    state = jax.jit(pop.init, out_shardings=pop.state_sharding())(jax.random.key(0))
    update = jax.jit(pop.update)
    rows = []
    for _ in range(updates):
        state, m = update(state)
        rows.append(m)
    return state, rows


def maxdiff(a, b):
    return max(float(np.max(np.abs(np.asarray(x, np.float64) - np.asarray(y, np.float64)))) for x, y in
               zip(jax.tree.leaves(a), jax.tree.leaves(b)))


env = jaxagents.make("coordination")
s1 = fcp.make_train(fcp.FCPConfig(ppo=PPO, snapshots=(0, 2, 4)), env)
one, _ = run(Population(s1, 2), 4)
two, _ = run(Population(s1, 2, mesh=make_mesh()), 4)
snaps = two.members.extra.params
devices = sorted({len(x.sharding.device_set) for x in jax.tree.leaves(snaps)})
partners = fcp.partners_from(one.members.extra.params, one.members.params, lead=1, holdout=1)
cfg = fcp.FCPConfig(ppo=PPO, partners="in-memory", holdout=1, eval_every=2, eval_steps=12)
# the reference of a data-parallel run is the same program on one device (per-environment keys)
a, ra = run(Population(fcp.make_train(cfg, env, partners=partners, data_axis="data", data_shards=1), 1,
                       mesh=make_mesh(1, data=1)), 4)
b, rb = run(Population(fcp.make_train(cfg, env, partners=partners, data_axis="data", data_shards=2), 1,
                       mesh=make_mesh(1, data=2)), 4)
print(json.dumps({
    "devices_per_leaf": devices,
    "snapshot_diff": maxdiff(one.members.extra.params, snaps),
    "data_param_diff": maxdiff(a.members.params, b.members.params),
    "data_return_diff": max(abs(float(x["episode_return/agents"][0]) - float(y["episode_return/agents"][0])) for x, y in zip(ra, rb)),
    "heldout_diff": abs(float(ra[-1]["eval/heldout/return"][0]) - float(rb[-1]["eval/heldout/return"][0])),
}))

"""Generates notebooks/populations.ipynb (run: python notebooks/src/populations.py)."""

import os

import nbformat as nbf

cells = []
md = lambda s: cells.append(nbf.v4.new_markdown_cell(s.strip()))  # noqa: E731
code = lambda s: cells.append(nbf.v4.new_code_cell(s.strip()))  # noqa: E731

md("""
# Populations: PBT inside the compiled program, lineage, and a population over devices

`jaxagents.population.Population` wraps any learner: P members with their own keys and
their own *traced* hyper-parameters, updated by one `vmap` -- and, over a device mesh,
by `shard_map` of that `vmap`. Population-based training (PBT) runs inside the same
compiled program: every `interval` updates the worst quarter copies the weights and
optimiser state of a random member of the best quarter and perturbs its
hyper-parameters. A new learning rate never recompiles anything.

This notebook fakes 4 CPU devices (the flag must be set before JAX starts), trains a
small PBT population of Kuhn poker self-play learners ranked by their *exact*
exploitability, draws the lineage and the learning-rate schedules, and then runs the
same population sharded over the 4 devices.
""")
code("""
import os
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=4")  # before JAX starts
import time
import jax
import jax.numpy as jnp
import numpy as np
import matplotlib.pyplot as plt
import jaxagents
from jaxagents.learners.policy_gradient.selfplay import SelfPlayConfig, make_train
from jaxagents.population import PBTConfig, Population, make_mesh

SMALL = os.environ.get("JAXAGENTS_SMALL") == "1"
UPDATES = 12 if SMALL else 120
print(jax.devices())
""")
md("""
The learner: self-play on Kuhn poker with role-conditioned advantages, Adam. Its
`hparam_space` says what a population may vary, with ranges and scales; its default
fitness is minus the exact exploitability, measured every `eval_every` updates (NaN in
between: PBT averages what was measured since the last ready point).
""")
code("""
env = jaxagents.make("kuhn_poker")
n = 64 if SMALL else 256
cfg = SelfPlayConfig(ppo=dict(num_envs=n, num_steps=16, total_timesteps=n * 16 * UPDATES, update_epochs=1,
                              num_minibatches=1, lr=1e-3, ent_coef=0.05, advantage="rae", normalize="none"),
                     eval_every=2 if SMALL else 5, eval_envs=32, eval_steps=8)
learner = make_train(cfg, env)
print("fitness:", learner.fitness.name)
print({k: (s.low, s.high, s.scale) for k, s in learner.hparam_space.items() if k in ("lr", "ent_coef")})
""")
md("""
Eight members, learning rates drawn log-uniformly from [1e-4, 1e-2] (inside the learner's range for Adam); the same members
with and without PBT (same keys, same draws), each one compiled program.
""")
code("""
ranges = {"lr": (1e-4, 1e-2)}
pbt = PBTConfig(interval=4 if SMALL else 10, fraction=0.25, hparams=("lr",))
runs = {}
for name, p in (("PBT", pbt), ("no PBT", None)):
    pop = Population(learner, 8, p, ranges=ranges)
    t = time.time()
    state, metrics = jax.block_until_ready(jax.jit(pop.train)(jax.random.key(0)))
    runs[name] = (pop, state, jax.tree.map(np.asarray, metrics))
    print(f"{name:7s} {time.time() - t:6.1f} s (compile included)")
""")
code("""
fig, ax = plt.subplots(figsize=(6, 3.5))
for name, (pop, state, m) in runs.items():
    f = -m["fitness"]  # exploitability per member, NaN where not evaluated
    keep = ~np.isnan(f).all(1)
    ax.plot(m["env_steps"][keep, 0], np.nanmin(f[keep], 1), label=f"{name}: best member")
    ax.plot(m["env_steps"][keep, 0], np.nanmedian(f[keep], 1), "--", label=f"{name}: median member")
ax.set_yscale("log"); ax.set_xlabel("env steps per member"); ax.set_ylabel("exact exploitability"); ax.legend()
""")
md("""
The lineage: at each ready point (`pbt/ready`) every member's parent (`pbt/parent`;
itself when it was kept) and its learning rate after explore (`hparams/lr`). The
runner writes the same record to `population.jsonl` and draws it as `lineage.png` and
`hparams.png`.
""")
code("""
pop, state, m = runs["PBT"]
steps, lr, parent, ready = m["env_steps"][:, 0], m["hparams/lr"], m["pbt/parent"], m["pbt/ready"][:, 0]
fig, ax = plt.subplots(figsize=(7, 3.8))
colors = plt.get_cmap("tab10")(np.arange(8))
for i in range(8):
    ax.plot(steps, lr[:, i], color=colors[i], lw=1.2)
for j in np.flatnonzero(ready):
    for i, p in enumerate(parent[j]):
        if p != i:
            ax.annotate("", xy=(steps[j], lr[j, i]), xytext=(steps[j], lr[j - 1, p] if j else lr[j, p]),
                        arrowprops=dict(arrowstyle="->", color=colors[p]))
ax.set_yscale("log"); ax.set_xlabel("env steps"); ax.set_ylabel("learning rate")
ax.set_title("learning-rate schedules; arrows: parent -> the member that copied it")
print("ready points:", int(ready.sum()), " copies:", int(sum((parent[j] != np.arange(8)).sum() for j in np.flatnonzero(ready))))
""")
md("""
## The same population over 4 devices

`make_mesh()` puts the members on a `pop` axis over every device present (here the 4
fake CPU devices; on a GPU node or a TPU pod, the real ones -- after
`jax.distributed.initialize` on every host, all hosts' devices). Each device updates
its 2 members; ranking and PBT's copies run on the global arrays. The PBT decisions
are the same as on one device; the parameters agree to float rounding (XLA compiles
2 vmapped members differently from 8, so some sums round differently).
""")
code("""
mesh = make_mesh()
sharded = Population(learner, 8, pbt, ranges=ranges, mesh=mesh)
state4, m4 = jax.block_until_ready(jax.jit(sharded.train)(jax.random.key(0)))
leaf = jax.tree.leaves(state4.members.params)[0]
print("a parameter leaf lives on", len(leaf.sharding.device_set), "devices:", leaf.sharding.spec)
print("same PBT decisions:", np.array_equal(np.asarray(m4["pbt/parent"]), m["pbt/parent"]))
diff = max(float(jnp.max(jnp.abs(a - b))) for a, b in zip(jax.tree.leaves(state4.members.params), jax.tree.leaves(state.members.params)))
print(f"largest parameter difference from the one-device run: {diff:.2e}")
""")

nb = nbf.v4.new_notebook()
nb["cells"] = cells
nb["metadata"] = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}}
out = os.path.join(os.path.dirname(__file__), "..", "populations.ipynb")
nbf.write(nb, out)
print("wrote", os.path.abspath(out))

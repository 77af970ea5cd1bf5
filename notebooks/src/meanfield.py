"""Writes notebooks/meanfield.ipynb (no outputs stored). Run: python notebooks/src/meanfield.py"""

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

cells = [
    new_markdown_cell("""# Mean-field social simulation: a million agents, two views

Every environment in `jaxagents_environments.meanfield` comes in two views of the same dynamics:

* the **agent view** — the usual `Env` API with one role `"agent"` of `N` agents, each observing its own
  state and a small summary of the population (10^6 agents fit in one environment on a laptop);
* the **distributional view** — the state is the histogram `mu` of individual states and the population plays
  a policy table `pi[S, A]`: the `N -> infinity` limit, where equilibria can be computed exactly.

This notebook runs a million-agent adoption cascade, watches opinion histograms evolve, and compares the
epidemic's mean-field equilibrium with the social optimum (the price of anarchy).
Set `JAXAGENTS_SMALL=1` for a quick run with 10^4 agents."""),
    new_code_cell("""import os, time
import jax
import jax.numpy as jnp
import numpy as np
import matplotlib.pyplot as plt

from jaxagents_environments.meanfield import Opinion, Epidemic, CrowdModelling, solvers
from jaxagents_environments.meanfield import opinion_policies as op

SMALL = os.environ.get("JAXAGENTS_SMALL") == "1"
N = 10**4 if SMALL else 10**6
print(f"{N:,} agents per environment on {jax.devices()[0].platform}")"""),
    new_markdown_cell("""## 1. An adoption cascade (Granovetter thresholds)

Binary adoption: an agent adopts once the adopted fraction it hears reaches its threshold (and stays adopted).
Thresholds are normally distributed with mean 0.25 (Granovetter's example), on a grid of 50 agent types;
thresholds at or below 0 are the instigators. Granovetter's result for a crowd where everybody sees everybody:
below a critical spread (about 0.12) the riot stalls after the instigators, above it a chain reaction
takes everybody along. We run the rule on the complete graph and on a random network where each agent listens
to 10 others, in both views (the distributional view of the network is the annealed approximation:
neighbour counts are Binomial)."""),
    new_code_cell("""T, STEPS = 50, 40

from math import erf

def cascade_params(env, sd):
    grid = np.arange(T) / T                               # thresholds 0, 0.02, ..., 0.98
    edges = np.append(grid + 0.5 / T, np.inf)             # type k: thresholds in (edge[k-1], edge[k]]
    cdf = np.array([0.5 * (1 + erf((e - 0.25) / (sd * np.sqrt(2)))) for e in edges])
    w = np.diff(np.concatenate([[0.0], cdf]))[:T]         # the lowest type takes everything below
    init = np.tile([1.0, 0.0], (T, 1))                    # nobody has adopted yet
    return env.default_params().replace(threshold=jnp.asarray(grid, jnp.float32),
                                        type_probs=jnp.asarray(w / w.sum(), jnp.float32),
                                        init_probs=jnp.asarray(init, jnp.float32))

results = {}
for graph in ["complete", "random"]:
    env = Opinion(num_agents=N, num_types=T, graph=graph, degree=10, horizon=STEPS)
    policy = op.threshold(env)
    agents = jax.jit(op.rollout_agents, static_argnums=(0, 1, 4))
    dist = jax.jit(op.rollout_dist, static_argnums=(0, 1, 3))
    for sd in (0.10, 0.14):
        params = cascade_params(env, sd)
        jax.block_until_ready(agents(env, policy, jax.random.key(0), params, STEPS))  # compile
        t0 = time.perf_counter()
        _, hist = jax.block_until_ready(agents(env, policy, jax.random.key(1), params, STEPS))
        seconds = time.perf_counter() - t0
        adopted = lambda h: np.asarray(h).reshape(-1, T, 2)[..., 1].sum(-1)
        results[graph, sd] = adopted(hist), adopted(dist(env, policy, params, STEPS))
        print(f"{graph:8s} sd={sd}: {STEPS} steps x {N:,} agents in {seconds:.2f}s "
              f"({STEPS * N / seconds:.3g} agent-steps/s), final adoption {results[graph, sd][0][-1]:.3f}")"""),
    new_code_cell("""fig, axes = plt.subplots(1, 2, figsize=(11, 3.5), sharey=True)
for ax, graph in zip(axes, ["complete", "random"]):
    for sd, color in [(0.10, "C0"), (0.14, "C3")]:
        agent_curve, dist_curve = results[graph, sd]
        ax.plot(agent_curve, color=color, label=f"agents, threshold sd {sd}")
        ax.plot(dist_curve, "--", color=color, alpha=0.7, label=f"distributional view")
    ax.set(title=f"{graph} graph", xlabel="step", ylabel="adopted fraction")
axes[0].legend(fontsize=8)
plt.tight_layout()"""),
    new_markdown_cell("""On the complete graph the narrow threshold distribution stalls after the instigators and the wider one sweeps
the population, as Granovetter found, and the agents follow the distributional view. On the network one adopting
neighbour out of 10 is already a heard fraction of 0.1, above many thresholds, so the cascade starts at the
narrower spread too. The annealed view predicts the cascades but not their timing: on a fixed graph adopters
cluster, a correlation the annealed approximation ignores.

## 2. The histogram over time: bounded confidence

41 opinion levels, uniform at first; every agent moves to the average of the opinions it hears within a
confidence bound (Hegselmann-Krause). In the distributional view (population-wide influence) wide confidence
gives consensus and narrow confidence a few clusters. The agents (left of each pair) live on a ring-shaped small
world and hear only 10 neighbours: with wide confidence they still reach consensus, more slowly; with narrow
confidence most neighbours are out of range and opinions freeze into many local groups."""),
    new_code_cell("""K, STEPS = 41, 30
fig, axes = plt.subplots(1, 4, figsize=(14, 3.2))
for i, confidence in enumerate([0.3, 0.08]):
    env = Opinion(num_agents=N, num_levels=K, graph="ring", degree=10, horizon=STEPS)
    params = env.default_params()
    policy = op.bounded_confidence(env, confidence)
    _, hist = jax.jit(op.rollout_agents, static_argnums=(0, 1, 4))(env, policy, jax.random.key(0), params, STEPS)
    mus = op.rollout_dist(env, policy, params, STEPS)
    for ax, h, view in [(axes[2 * i], hist, "agents, ring"), (axes[2 * i + 1], mus, "distributional")]:
        ax.imshow(np.asarray(h).T, aspect="auto", origin="lower", cmap="magma", vmax=0.15)
        ax.set(title=f"confidence {confidence}: {view}", xlabel="step", ylabel="opinion level")
plt.tight_layout()"""),
    new_markdown_cell("""## 3. Epidemic: equilibrium against the social optimum

SIR with behaviour: each agent picks a contact level `c` in {0, 0.25, ..., 1}; a susceptible's infection hazard
is `beta * c * I_c` with `I_c` the contact-weighted infected fraction; an infection costs 50, distancing costs
`(1 - c)^2` per step. The **mean-field equilibrium** (fictitious play: nobody gains by deviating alone) against the
**social optimum** (mean-field control: the policy that maximises the population's welfare, by gradient ascent
through the differentiable flow)."""),
    new_code_cell("""env = Epidemic(num_agents=N, horizon=100)
params = env.default_params()
eq = jax.jit(solvers.fictitious_play, static_argnums=(0, 2))(env, params, 100)
so = jax.jit(solvers.social_optimum, static_argnums=(0, 2))(env, params, 300 if SMALL else 1000, 0.1)
evaluate = jax.jit(solvers.evaluate, static_argnums=0)
ev_eq, ev_so = evaluate(env, params, eq.policy), evaluate(env, params, so.policy)
print(f"equilibrium: exploitability {float(ev_eq.exploitability):.3f}, welfare {float(ev_eq.value):.2f}")
print(f"optimum:     welfare {float(ev_so.value):.2f}")
print(f"price of anarchy = cost(equilibrium) / cost(optimum) = {float(ev_eq.value / ev_so.value):.1f}")"""),
    new_code_cell("""# the equilibrium policy played by N agents: the agent view follows the distributional flow
@jax.jit
def simulate(key):
    state, _ = env.reset(key, params)
    def body(state, xs):
        pi, k = xs
        ka, ks = jax.random.split(k)
        state, _ = env.step(ks, state, env.tabular_actions(ka, state, pi), params)
        return state, state.hist
    return jax.lax.scan(body, state, (eq.policy, jax.random.split(key, env.horizon)))[1]

agents_I = np.asarray(simulate(jax.random.key(0)))[:, env.I]
contact = np.asarray(params.contact)
fig, axes = plt.subplots(1, 2, figsize=(11, 3.5))
axes[0].plot(np.asarray(ev_eq.mu)[:, env.I], label="equilibrium (distributional)")
axes[0].plot(np.arange(1, env.horizon + 1), agents_I, ":", label=f"equilibrium, {N:,} agents")
axes[0].plot(np.asarray(ev_so.mu)[:, env.I], label="social optimum")
axes[0].set(xlabel="day", ylabel="infected fraction", title="epidemic curve")
for policy, name in [(eq.policy, "equilibrium"), (so.policy, "optimum")]:
    mean_contact = np.asarray(policy) @ contact
    axes[1].plot(mean_contact[:, env.S], label=f"{name}: susceptible")
    axes[1].plot(mean_contact[:, env.I], "--", label=f"{name}: infected")
axes[1].set(xlabel="day", ylabel="mean contact level", title="behaviour")
for ax in axes:
    ax.legend(fontsize=8)
plt.tight_layout()"""),
    new_markdown_cell("""Infected agents gain nothing from distancing, so at the equilibrium they keep full contact, and susceptibles
distance only around the peak. (The agents follow the distributional flow up to fluctuations of order
`1/sqrt(N)`, amplified by the epidemic's early growth: visible with 10^4 agents, small with 10^6.) The planner counts the infections the infected cause and isolates them, which
prevents the epidemic: the gap between the two welfares is the price of anarchy.

## 4. Crowd modelling: exploitability of the equilibrium solvers

OpenSpiel's 1-D crowd game (`tests/environments/meanfield/test_crowd.py` checks flows, values and the solvers'
iterates against OpenSpiel). Both solvers drive the exploitability towards 0."""),
    new_code_cell("""crowd = CrowdModelling(num_agents=N)
cp = crowd.default_params()
fp = jax.jit(solvers.fictitious_play, static_argnums=(0, 2))(crowd, cp, 50)
md = jax.jit(solvers.mirror_descent, static_argnums=(0, 2))(crowd, cp, 50, 1.0)
fig, axes = plt.subplots(1, 2, figsize=(11, 3.5))
axes[0].semilogy(np.asarray(fp.exploitability), label="fictitious play")
axes[0].semilogy(np.asarray(md.exploitability), label="online mirror descent (lr=1)")
axes[0].set(xlabel="iteration", ylabel="exploitability", title="crowd modelling")
axes[0].legend()
axes[1].imshow(np.asarray(md.mu).T, aspect="auto", origin="lower", cmap="viridis")
axes[1].set(xlabel="t", ylabel="position", title="equilibrium distribution (mirror descent)")
plt.tight_layout()"""),
]

nb = new_notebook(cells=cells, metadata={"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}})
path = Path(__file__).resolve().parents[1] / "meanfield.ipynb"
nbformat.write(nb, path)
print(f"wrote {path}")

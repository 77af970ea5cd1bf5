"""Finished runs read back as data: the partners of fictitious co-play's second stage
and the policies of a cross-play matrix.

This is the run-directory side of the library, next to ``runner`` (which writes runs
and restores their checkpoints): the learners and evaluators below it take partners and
policies as arrays and never open a file, so ``jaxagents.learners`` and
``jaxagents.evaluation`` import nothing from this level (``tests/test_packaging.py``).
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np

from jaxagents import runner
from jaxagents.evaluation.crossplay import Policies, num_policies
from jaxagents.learners.policy_gradient.fcp import Partners, partners_from


def load_partners(run_dir: str, holdout: int) -> Partners:
    """A stage-1 FCP run's partners (its newest checkpoint): every seed's members in
    order, the first ``M - holdout`` partners' snapshots flattened into the pool, the
    last ``holdout`` partners' final parameters held out."""
    config, learner, state, _ = runner.restore(run_dir)
    if config["learner"] != "fcp" or config["train"].get("partners") is not None:
        raise ValueError(f"partners={run_dir!r} must be a stage-1 fcp run (learner: fcp, train.partners: null), "
                         f"got learner {config['learner']!r} with partners={config['train'].get('partners')!r}")
    members = learner.member_states(state)  # [S(, P)]: the seeds (and members) are the partners
    return partners_from(members.extra.params, members.params, 1 if learner.members is None else 2, holdout, run_dir)


def check_same_environment(configs: dict) -> None:
    """One-line ``ValueError`` unless every run (``{run_dir: config}``) has the same
    environment (id, kwargs, params) and learner."""
    (first, cfg0), *rest = configs.items()
    for run, cfg in rest:
        for key in ("env", "learner"):
            if cfg[key] != cfg0[key]:
                raise ValueError(f"runs differ in {key}: {first} has {cfg0[key]!r}, {run} has {cfg[key]!r}; "
                                 f"cross-play needs one environment and one kind of policy")


def load_policies(run_dirs, members: str = "all") -> Policies:
    """The final policy of every seed of every run in ``run_dirs`` (the newest
    checkpoint, through ``runner.restore``); for a population run every member
    (``members="all"``) or each seed's best member (``"best"``). The environments
    are checked before any checkpoint is read."""
    if members not in ("all", "best"):
        raise ValueError(f"--members must be 'all' or 'best', got {members!r}")
    if not run_dirs:
        raise ValueError("cross-play needs at least one run directory")
    configs = {d: runner.read_run_config(d) for d in run_dirs}
    check_same_environment(configs)
    if members == "best" and all(c.get("population") is None for c in configs.values()):
        raise ValueError("--members best applies to population runs only; none of the runs is one: drop --members")
    params, names, first = [], [], None
    for d in run_dirs:
        _, learner, state, step = runner.restore(d)
        label = os.path.basename(os.path.normpath(d))
        p = learner.member_states(state).params  # [S, ...], a population's [S, P, ...]
        S = num_policies(p)
        if learner.members is None:
            params.append(p)
            names += [label] if S == 1 else [f"{label}/s{s}" for s in range(S)]
        elif members == "best":
            best = np.asarray(jax.jit(jax.vmap(learner.best))(state))
            params.append(jax.tree.map(lambda x: x[np.arange(S), best], p))
            names += [f"{label}/s{s}/m{best[s]}" for s in range(S)]
        else:
            P = learner.members
            params.append(jax.tree.map(lambda x: x.reshape(S * P, *x.shape[2:]), p))
            names += [f"{label}/s{s}/m{m}" for s in range(S) for m in range(P)]
        first = first or (learner, runner.read_run_config(d)["learner"])
    shapes = [jax.tree.map(lambda x: x.shape[1:], p) for p in params]
    if any(jax.tree.structure(s) != jax.tree.structure(shapes[0]) or s != shapes[0] for s in shapes):
        raise ValueError("the runs' networks differ (parameter shapes); cross-play needs policies of one architecture")
    stacked = jax.tree.map(lambda *x: jnp.concatenate([jnp.asarray(a) for a in x]), *params)
    learner, name = first
    return Policies(stacked, tuple(names), learner.agents, learner.env, learner.env_params, name)

"""Runs read back: a run's checkpoints restored (``restore``, ``checkpoints``), its
policy evaluated (``evaluate``: ``jaxagents eval``), and finished runs as data -- the
partners of fictitious co-play's second stage and the policies of a cross-play matrix.

This is the reading side of the run directories, next to ``runner`` (which writes
them); both stand on ``build`` (configs, learners, ``restore``) and neither imports the
other. The learners and evaluators below it take partners and policies as arrays and
never open a file, so ``jaxagents.learners`` and ``jaxagents.evaluation`` import nothing
from this level (``tests/test_packaging.py``).
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np

from jaxagents import build
from jaxagents.build import load_partners, restore  # noqa: F401  (runs.restore, runs.load_partners)
from jaxagents.checkpoint import Checkpointer
from jaxagents.core.validate import check_int
from jaxagents.evaluation.crossplay import Policies, num_policies


def _evaluate_states(learner, state, keys) -> dict:
    """The learner's evaluation of every seed's train state (leading axis: seeds)."""
    return jax.jit(jax.vmap(learner.evaluate))(state, keys)


def checkpoints(run_dir: str):
    """Every checkpoint of a run, oldest first: ``(config, learner, [(update, state),
    ...])``, each ``state`` as ``restore``'s (read only; for analyses over a run's
    history, e.g. ``experiments/checkpoint_mixture.py``). The states are
    restored lazily, one per iteration of the returned generator."""
    config = build.read_run_config(run_dir)
    directory = os.path.join(run_dir, "checkpoints")
    steps = sorted(int(p) for p in os.listdir(directory) if p.isdigit()) if os.path.isdir(directory) else []
    if not steps:
        raise ValueError(f"run {run_dir!r} has no checkpoint yet (one is written every checkpoint_every updates)")
    learner = build.build(config)
    like = build.init_states(learner, jax.random.split(jax.random.key(config["seed"]), config["num_seeds"]))

    def states():
        ckpt = Checkpointer(directory, max_to_keep=None, create=False)
        try:
            for step in steps:
                yield step, ckpt.restore(like, step)[0]
        finally:
            ckpt.close()

    return config, learner, states()


def _check_member(run_dir: str, config: dict, member) -> str:
    """``member`` checked against the run's config before anything is restored: only
    a population run takes one (``all``, ``best`` or an index below its size)."""
    population = config.get("population")
    if population is None:
        if member is not None:
            raise ValueError(f"--member {member} applies to a population run only; {run_dir!r} is a single run "
                             f"(no population: section): drop --member")
        return "all"
    if member is None or member in ("all", "best"):
        return member or "all"
    size = int(population["size"])
    text = str(member)
    if not text.isdigit() or int(text) >= size:
        raise ValueError(f"--member must be all, best or a member index 0..{size - 1} of {run_dir!r}, got {member!r}")
    return text


def evaluate(run_dir: str, seed: int = 1, quiet: bool = False, member: str | None = None) -> dict:
    """Evaluate the newest checkpoint of a run (the learner's ``evaluate``: scripted
    opponents and exploitability for self-play -- and for its parameter average, when
    the run keeps one --, fresh-episode returns for PPO). For a population,
    ``member`` is ``"all"`` (every member: the metrics per member, and their mean;
    the default), ``"best"`` (the member with the best fitness at the checkpoint) or a
    member index; a single run takes no ``member`` (refused before anything is read)."""
    member = _check_member(run_dir, build.read_run_config(run_dir), member)
    config, learner, state, step = restore(run_dir)
    S = config["num_seeds"]
    metrics = _evaluate_states(learner, state, jax.random.split(jax.random.key(seed), S))
    arrays = {k: np.asarray(v, np.float64).reshape(S, -1) for k, v in metrics.items()}  # [S, P]; P = 1: no members
    per_member = None
    if member == "all":
        out = {k: float(np.mean(a)) for k, a in arrays.items()}
        if learner.members is not None:
            per_member = {k: np.mean(a, 0).tolist() for k, a in arrays.items()}
    else:
        if member == "best":
            idx = np.asarray(jax.jit(jax.vmap(learner.best))(state))  # per seed
        else:
            idx = np.full(S, check_int("--member", int(member), low=0, high=learner.members - 1))
        out = {k: float(np.mean(a[np.arange(S), idx])) for k, a in arrays.items()}
        per_member = {"member": idx.tolist()}
    if not quiet:
        what = f", member {member}" if per_member is not None and member != "all" else ""
        print(f"run {run_dir}, checkpoint at update {step}, {S} seed(s){what}")
        for k, v in out.items():
            extra = ""
            if per_member is not None and member == "all":
                extra = "   members: " + " ".join(f"{x:.4g}" for x in per_member[k])
            print(f"{k:<40} {v:>10.4f}{extra}")
    result = {"update": step, **out}
    if per_member is not None:
        result["members"] = per_member
    return result


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
    checkpoint, through ``restore``); for a population run every member
    (``members="all"``) or each seed's best member (``"best"``). The environments
    are checked before any checkpoint is read."""
    if members not in ("all", "best"):
        raise ValueError(f"--members must be 'all' or 'best', got {members!r}")
    if not run_dirs:
        raise ValueError("cross-play needs at least one run directory")
    configs = {d: build.read_run_config(d) for d in run_dirs}
    check_same_environment(configs)
    if members == "best" and all(c.get("population") is None for c in configs.values()):
        raise ValueError("--members best applies to population runs only; none of the runs is one: drop --members")
    params, names, first = [], [], None
    for d in run_dirs:
        _, learner, state, step = restore(d)
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
        first = first or (learner, build.read_run_config(d)["learner"])
    shapes = [jax.tree.map(lambda x: x.shape[1:], p) for p in params]
    if any(jax.tree.structure(s) != jax.tree.structure(shapes[0]) or s != shapes[0] for s in shapes):
        raise ValueError("the runs' networks differ (parameter shapes); cross-play needs policies of one architecture")
    stacked = jax.tree.map(lambda *x: jnp.concatenate([jnp.asarray(a) for a in x]), *params)
    learner, name = first
    return Policies(stacked, tuple(names), learner.agents, learner.env, learner.env_params, name)

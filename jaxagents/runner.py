"""Runs: a config (YAML or dict) -> a run directory with the resolved config,
metrics, checkpoints, a learning-curve plot and a results table.

This is what ``jaxagents train`` / ``jaxagents eval`` and the scripts in
``baselines/`` call. Training goes in segments of ``checkpoint_every`` updates,
each one jit-compiled call of the learner's update ``scan``ned (and ``vmap``ped over
``num_seeds`` seeds); after each segment the full train state is checkpointed and
the segment's metrics are logged. A killed run restarted with ``resume`` restores
the last checkpoint and replays the same segments, so its results are
bit-identical to an uninterrupted run.

Config schema (every key optional; see ``DEFAULT``)::

    learner: selfplay | ippo | mappo
    env: {id: kuhn_poker, kwargs: {...}, params: {...}}   # id "jaxmarl:NAME" wraps JaxMARL
    seed: 0
    num_seeds: 1
    checkpoint_every: 50            # updates per segment (0: one segment)
    keep_checkpoints: 3
    log: {progress: true, tensorboard: false, wandb_project: null}
    train: {...}                    # PPOConfig / SelfPlayConfig fields
"""

from __future__ import annotations

import copy
import dataclasses
import datetime
import json
import os
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import yaml

from jaxagents import tracking
from jaxagents.checkpoint import Checkpointer

DEFAULT: dict[str, Any] = {
    "learner": "selfplay",
    "env": {"id": "kuhn_poker", "kwargs": {}, "params": {}},
    "seed": 0,
    "num_seeds": 1,
    "checkpoint_every": 50,
    "keep_checkpoints": 3,
    "log": {"progress": True, "tensorboard": False, "wandb_project": None},
    # the embedded default: Kuhn poker self-play with role-conditioned advantages
    "train": {
        "ppo": {
            "num_envs": 256,
            "num_steps": 16,
            "total_timesteps": 256 * 16 * 150,
            "update_epochs": 2,
            "num_minibatches": 2,
            "lr": 1e-3,
            "ent_coef": 0.1,
            "advantage": "rae",
            "normalize": "none",
        },
        "eval_every": 25,
    },
}

LEARNERS = ("selfplay", "ippo", "mappo")


# ----------------------------------------------------------------------- config


def deep_update(base: dict, new: dict) -> dict:
    out = copy.deepcopy(base)
    for k, v in new.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_update(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def apply_overrides(config: dict, overrides: list[str]) -> dict:
    """``["train.ppo.lr=1e-3", "env.kwargs.layout=cramped_room"]`` -> updated copy.
    Values are parsed as YAML (numbers, booleans, lists, null)."""
    config = copy.deepcopy(config)
    for item in overrides:
        if "=" not in item:
            raise ValueError(f"override {item!r} must look like key.path=value")
        path, raw = item.split("=", 1)
        keys = path.strip().split(".")
        if not all(keys):
            raise ValueError(f"override {item!r}: empty key in {path!r}")
        node = config
        for k in keys[:-1]:
            node = node.setdefault(k, {})
            if not isinstance(node, dict):
                raise ValueError(f"override {item!r}: {k!r} is not a section")
        node[keys[-1]] = yaml.safe_load(raw)
    return config


def load_config(path: str | None = None, overrides: list[str] = ()) -> dict:
    """The embedded default, updated by the YAML file at ``path`` and the overrides.
    The learner's ``train`` section starts empty when the file names another learner
    or environment (the default's Kuhn budget would not fit them)."""
    config = copy.deepcopy(DEFAULT)
    if path is not None:
        with open(path) as f:
            user = yaml.safe_load(f) or {}
        if not isinstance(user, dict):
            raise ValueError(f"{path}: a config must be a YAML mapping")
        if "train" in user or user.get("learner", "selfplay") != "selfplay" or "env" in user:
            config["train"] = {}
        config = deep_update(config, user)
    config = apply_overrides(config, list(overrides))
    validate_config(config)
    return config


def validate_config(config: dict) -> None:
    unknown = sorted(set(config) - set(DEFAULT) - {"name", "description"})
    if unknown:
        raise ValueError(f"unknown config keys {unknown}; allowed: {sorted(DEFAULT) + ['name', 'description']}")
    if config["learner"] not in LEARNERS:
        raise ValueError(f"learner must be one of {LEARNERS}, got {config['learner']!r}")
    for k in ("num_seeds",):
        if not isinstance(config[k], int) or config[k] < 1:
            raise ValueError(f"{k} must be a positive int, got {config[k]!r}")
    if not isinstance(config["checkpoint_every"], int) or config["checkpoint_every"] < 0:
        raise ValueError(f"checkpoint_every must be an int >= 0, got {config['checkpoint_every']!r}")
    if not isinstance(config["env"], dict) or "id" not in config["env"]:
        raise ValueError("env must be a mapping with an 'id'")


# ----------------------------------------------------------------------- building


def make_env(spec: dict):
    """``{id, kwargs, params}`` -> ``(env, env_params)``."""
    env_id, kwargs = spec["id"], dict(spec.get("kwargs") or {})
    if env_id.startswith("jaxmarl:"):
        from jaxagents.compat import from_jaxmarl, make_jaxmarl

        env = from_jaxmarl(make_jaxmarl(env_id, **kwargs))  # SMAX map and Overcooked layout names resolved
    else:
        import jaxagents

        env = jaxagents.make(env_id, **kwargs)
    params = env.default_params()
    overrides = dict(spec.get("params") or {})
    if overrides:
        fields = {f.name for f in dataclasses.fields(params)}
        bad = sorted(set(overrides) - fields)
        if bad:
            raise ValueError(f"env.params: unknown fields {bad}; {type(params).__name__} has {sorted(fields)}")
        params = params.replace(**{k: jnp.asarray(v, getattr(params, k).dtype) for k, v in overrides.items()})
    env.validate_params(params)
    return env, params


def build(config: dict, callback=None):
    """``config`` -> the learner's ``train`` function (with ``init``/``update``)."""
    from jaxagents.learners import ppo, selfplay

    env, env_params = make_env(config["env"])
    section = dict(config.get("train") or {})
    try:
        if config["learner"] == "selfplay":
            cfg = selfplay.SelfPlayConfig(**section)
            return selfplay.make_train(cfg, env, env_params=env_params, callback=callback)
        if config["learner"] == "mappo":
            section["central_critic"] = True
        cfg = ppo.PPOConfig(**section)
    except TypeError as e:  # unknown field names
        raise ValueError(f"train section: {e}") from None
    return ppo.make_train(cfg, env, env_params=env_params, callback=callback)


# ----------------------------------------------------------------------- running


class _Progress:
    """A progress bar over updates, created at the first update (so compile time
    does not distort its rate)."""

    def __init__(self, total: int, enabled: bool):
        self.bar, self.total, self.enabled = None, total, enabled

    def __call__(self, update, metrics):  # host callback, once per update
        if not self.enabled:
            return
        if self.bar is None:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=self.total, unit="upd", dynamic_ncols=True)
        u = int(np.max(np.asarray(update)))
        self.bar.n = max(self.bar.n, u)
        shown = {k.split("/", 1)[-1][:14]: float(np.nanmean(np.asarray(v))) for k, v in metrics.items() if k.startswith("episode_return/")}
        self.bar.set_postfix({k: f"{v:.3g}" for k, v in list(shown.items())[:3]}, refresh=False)
        self.bar.refresh()

    def close(self):
        if self.bar is not None:
            self.bar.close()


def default_run_dir(config: dict) -> str:
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    env_id = config["env"]["id"].replace(":", "-").replace("/", "-")
    return os.path.join("runs", f"{config['learner']}-{env_id}-{stamp}")


def _shared_update(state):
    """``state`` with its per-seed update counters ``i32[S]`` (all equal) as one scalar."""
    return state.replace(update=state.update[0])


def run(config: dict | None = None, run_dir: str | None = None, resume: bool = False, quiet: bool = False) -> dict:
    """Train (or resume) a run; returns the results dict also written to
    ``<run_dir>/results.json``."""
    if resume:
        if run_dir is None:
            raise ValueError("resume needs the run directory")
        with open(os.path.join(run_dir, "config.yaml")) as f:
            config = yaml.safe_load(f)
    config = deep_update(DEFAULT, {}) if config is None else config
    validate_config(config)
    run_dir = run_dir or default_run_dir(config)
    os.makedirs(run_dir, exist_ok=True)
    if not resume:
        with open(os.path.join(run_dir, "config.yaml"), "w") as f:
            yaml.safe_dump(config, f, sort_keys=False)

    S = config["num_seeds"]
    progress = _Progress(0, config["log"].get("progress", True) and not quiet)
    train = build(config, callback=progress)
    U = train.num_updates
    progress.total = U
    every = config["checkpoint_every"] or U
    keys = jax.random.split(jax.random.key(config["seed"]), S)

    t0 = time.perf_counter()
    state = jax.jit(jax.vmap(train.init))(keys)
    ckpt = Checkpointer(os.path.join(run_dir, "checkpoints"), max_to_keep=config.get("keep_checkpoints", 3))
    sinks = tracking.make_sinks(config["log"], run_dir, config)
    if resume and ckpt.latest_step() is not None:
        state, _, _ = ckpt.restore(state)
        sinks[0].truncate_after(int(ckpt.latest_step()))
    elif not resume:
        sinks[0].truncate_after(-1)

    compiled = {}  # segment length -> compiled program (at most two lengths)
    done = int(np.asarray(state.update)[0])
    compile_s, train_s = 0.0, 0.0
    while done < U:
        n = min(every, U - done)
        if n not in compiled:
            tc = time.perf_counter()
            body = lambda s, n=n: jax.lax.scan(lambda c, _: train.update(c), s, None, n)
            # Seeds advance in lockstep, so the update counter is vmapped as one shared
            # scalar: a `lax.cond` on it (evaluate every K updates) stays a branch
            # instead of becoming a select that evaluates on every update.
            axes = jax.tree.map(lambda _: 0, state).replace(update=None)
            compiled[n] = jax.jit(jax.vmap(body, in_axes=(axes,), out_axes=(axes, 0))).lower(_shared_update(state)).compile()
            compile_s += time.perf_counter() - tc
        fn = compiled[n]
        ts = time.perf_counter()
        state, metrics = fn(_shared_update(state))
        state = state.replace(update=jnp.broadcast_to(state.update, (S,)))
        jax.block_until_ready(metrics)
        train_s += time.perf_counter() - ts
        done = int(np.asarray(state.update)[0])
        rows = tracking.rows_from_metrics(metrics, S)
        for s in sinks:
            s.write(rows)
        ckpt.save(done, state, config, {"update": done, **{k: v for k, v in rows[-1].items() if not k.endswith("@seeds")}})
    progress.close()
    for s in sinks:
        s.close()
    ckpt.close()

    rows = tracking.read_rows(os.path.join(run_dir, "metrics.jsonl"))
    title = f"{config['learner']} on {config['env']['id']}"
    plot = tracking.plot_curves(rows, os.path.join(run_dir, "curve.png"), title)
    final = _final(rows)
    results = {
        "run_dir": run_dir,
        "learner": config["learner"],
        "env": config["env"]["id"],
        "num_seeds": S,
        "updates": done,
        "env_steps": rows[-1]["env_steps"] if rows else 0,
        "wall_s": time.perf_counter() - t0,
        "compile_s": compile_s,
        "train_s": train_s,
        "env_steps_per_s": (rows[-1]["env_steps"] * S / train_s) if rows and train_s > 0 and not resume else None,
        "final": final,
        "plot": plot,
    }
    with open(os.path.join(run_dir, "results.json"), "w") as f:
        json.dump(results, f, indent=2)
    if not quiet:
        print(format_results(results))
    return results


def _final(rows: list[dict]) -> dict:
    """Last value of every metric (evaluations are sparse: their last entry)."""
    out = {}
    for r in rows:
        for k, v in r.items():
            if not k.endswith("@seeds") and k not in ("update", "env_steps") and (
                k.startswith("episode_return/") or k.startswith("eval/")
            ):
                out[k] = v
    return out


def format_results(results: dict) -> str:
    lines = [
        f"run       {results['run_dir']}",
        f"learner   {results['learner']} on {results['env']} ({results['num_seeds']} seed(s))",
        f"updates   {results['updates']}   env steps {results['env_steps']:,}",
        f"time      {results['wall_s']:.1f} s total, {results['compile_s']:.1f} s compiling"
        + (f", {results['env_steps_per_s']:,.0f} env-steps/s training" if results.get("env_steps_per_s") else ""),
        "",
        f"{'metric':<40} {'final':>10}",
        f"{'-' * 40} {'-' * 10}",
    ]
    for k, v in results["final"].items():
        lines.append(f"{k:<40} {v:>10.4f}")
    if results.get("plot"):
        lines.append(f"\nlearning curves: {results['plot']}")
    return "\n".join(lines)


def restore(run_dir: str):
    """The latest checkpoint of a run: ``(config, train, state, update)``; ``state``
    is the train state of every seed (leading axis ``num_seeds``)."""
    with open(os.path.join(run_dir, "config.yaml")) as f:
        config = yaml.safe_load(f)
    train = build(config)
    like = jax.jit(jax.vmap(train.init))(jax.random.split(jax.random.key(config["seed"]), config["num_seeds"]))
    ckpt = Checkpointer(os.path.join(run_dir, "checkpoints"))
    state, _, _ = ckpt.restore(like)
    step = ckpt.latest_step()
    ckpt.close()
    return config, train, state, step


def evaluate(run_dir: str, seed: int = 1, quiet: bool = False) -> dict:
    """Evaluate the latest checkpoint of a run (the learner's ``evaluate``: scripted
    opponents and exploitability for self-play -- and for its parameter average, when
    the run keeps one --, fresh-episode returns for PPO)."""
    config, train, state, step = restore(run_dir)
    S = config["num_seeds"]
    keys = jax.random.split(jax.random.key(seed), S)
    metrics = jax.jit(jax.vmap(lambda p, e, k: train.evaluate(p, k, extra=e)))(state.params, state.extra, keys)
    out = {k: float(np.mean(np.asarray(v))) for k, v in metrics.items()}
    if not quiet:
        print(f"run {run_dir}, checkpoint at update {step}, {S} seed(s)")
        for k, v in out.items():
            print(f"{k:<40} {v:>10.4f}")
    return {"update": step, **out}

"""From a run config to what a run trains, and back from a run directory: the embedded
default config and the checked config of a run (``DEFAULT``, ``load_config``,
``prepare``, ``read_run_config``), the environment (``make_env``: registered ids and
``jaxmarl:`` ids, ``env.params`` overrides checked and cast), the learner
(``build_learner``; FCP's second stage gets its partners read from the stage-1 run with
``load_partners``), with a ``population:`` section the population of it (``build``),
the initial states (``init_states``) and a run's newest checkpoint (``restore``).

Both sides of a run directory stand on this module: ``jaxagents.runner`` writes runs,
``jaxagents.runs`` reads them, and neither imports the other."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxagents import config as configs
from jaxagents.checkpoint import Checkpointer
from jaxagents.core.validate import check_bool, check_float, check_int

# The embedded default, the first run a newcomer sees: Kuhn poker self-play with
# role-conditioned advantages, the recipe of baselines/configs/selfplay_kuhn.yaml
# (docs/results_selfplay.md) on a sixth of its budget: 1000 updates of 1024 envs x 16
# steps, plain SGD, entropy annealed 0.1 -> 0.05 and a parameter average over ~100
# updates. About 1-2 minutes on 2 CPU cores; exploitability 0.458 (uniform play) ->
# ~0.01-0.02. The full recipe (<= 0.01) is `jaxagents train baselines/configs/selfplay_kuhn.yaml`.
DEFAULT: dict[str, Any] = {
    "learner": "selfplay",
    "env": {"id": "kuhn_poker", "kwargs": {}, "params": {}},
    "seed": 0,
    "num_seeds": 1,
    "checkpoint_every": 250,
    "checkpoint_seconds": 20,  # and at least every 20 s: a 30 s preemption notice finds a checkpoint near
    "keep_checkpoints": 3,
    "log": {"progress": True, "tensorboard": False, "wandb_project": None},
    "population": None,  # a population: section (jaxagents.population.config) trains P members
    "train": {
        "ppo": {
            "num_envs": 1024,
            "num_steps": 16,
            "total_timesteps": 1024 * 16 * 1000,
            "update_epochs": 1,
            "num_minibatches": 1,
            "optimizer": "sgd",
            "lr": 0.8,
            "ent_coef": 0.1,
            "ent_coef_final": 0.05,
            "advantage": "rae",
            "normalize": "none",
        },
        "eval_every": 50,
        "eval_envs": 256,
        "eval_steps": 16,
        "average_decay": 0.99,
    },
}

def load_config(path: str | None = None, overrides: list[str] = ()) -> dict:
    """The embedded default, updated by the YAML file at ``path`` and the overrides,
    resolved and checked (``jaxagents.config.load``). The default's ``train``
    section applies only to its own learner and environment: a file with a ``train``
    section, or another learner or environment (``learner=ippo``), starts from the
    learner's own defaults."""
    return configs.load(path, list(overrides), DEFAULT)


def prepare(config: dict | None) -> dict:
    """A complete, checked config from a partial one (missing keys from ``DEFAULT``)."""
    return configs.validate(configs.resolve({} if config is None else config, DEFAULT), DEFAULT)


def validate_config(config: dict) -> dict:
    """A checked copy of a complete config (``jaxagents.config.validate``)."""
    return configs.validate(config, DEFAULT)


def read_run_config(run_dir: str) -> dict:
    """The checked config of an existing run directory."""
    path = os.path.join(run_dir, "config.yaml")
    if os.path.exists(run_dir) and not os.path.isdir(run_dir):
        raise ValueError(f"{run_dir!r} is a file, not a run directory (a folder written by `jaxagents train`)")
    if not os.path.isdir(run_dir):
        raise ValueError(f"{run_dir!r} is not a run directory (no such directory)")
    if not os.path.isfile(path):
        raise ValueError(f"{run_dir!r} is not a run directory (no config.yaml)")
    return prepare(configs.read_yaml(path))


def init_states(learner, keys):
    """Every seed's initial state, created where it lives (a population on a device
    mesh: each process builds only its own members)."""
    return jax.jit(jax.vmap(learner.init), out_shardings=learner.state_sharding(seed_axis=True))(keys)


def warn(message: str) -> None:
    """One line to stderr, ``jaxagents: message`` (a run's warnings and placement)."""
    print(f"jaxagents: {message}", file=sys.stderr)





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
        params = params.replace(**_env_param_values(params, overrides))
    env.validate_params(params)
    return env, params


def _env_param_values(params, overrides: dict) -> dict:
    """``env.params`` overrides checked against the fields of ``params`` (names, and
    the kind of each scalar: an integer field takes an integer, not ``2.5``) and cast
    to their dtypes."""
    import dataclasses

    fields = [f.name for f in dataclasses.fields(params)]
    out = {}
    for k, v in overrides.items():
        if k not in fields:
            raise configs.unknown_key("env.params", k, fields)
        ref = np.asarray(getattr(params, k))
        name = f"env.params.{k}"
        if ref.ndim == 0:
            if ref.dtype == bool:
                v = check_bool(name, v)
            elif np.issubdtype(ref.dtype, np.integer):
                v = check_int(name, int(v) if isinstance(v, float) and v.is_integer() else v)
            elif np.issubdtype(ref.dtype, np.floating):
                v = check_float(name, v)
        try:
            value = jnp.asarray(v, ref.dtype)
        except (TypeError, ValueError) as e:
            raise ValueError(f"{name} must be an array like {ref.tolist()!r} ({ref.dtype}), got {v!r}: {e}") from None
        if value.shape != ref.shape:
            raise ValueError(f"{name} must have shape {ref.shape} (like {ref.tolist()!r}), got shape {value.shape}")
        out[k] = value
    return out


def build(config: dict, callback=None):
    """``config`` -> what the run trains: the learner, or, with a ``population``
    section, a ``Population`` of it (itself a learner: the runner drives both through
    the ``Learner`` contract). ``callback(update, metrics)`` is called once per update."""
    if config.get("population") is None:
        return build_learner(config, callback)
    from jaxagents.population.config import PopulationConfig, build_population, learner_kwargs

    cfg = PopulationConfig(**config["population"])
    return build_population(cfg, build_learner(config, **learner_kwargs(cfg)), callback=callback)


def build_learner(config: dict, callback=None, **kwargs):
    """``config`` -> the learner (``init``/``update``/``evaluate``, ``num_updates``);
    ``kwargs`` go to ``make_train`` (a population's data axis)."""
    from jaxagents.config import LEARNER_MODULES, learner_config_class

    env, env_params = make_env(config["env"])
    module, _, fixed = LEARNER_MODULES[config["learner"]]
    section = {**dict(config.get("train") or {}), **fixed}
    try:
        cfg = learner_config_class(config["learner"])(**section)
    except (TypeError, ValueError) as e:  # the config's own checks (ranges, cross-field rules)
        raise ValueError(f"train section: {e}") from None
    make = importlib.import_module(module).make_train
    try:
        if config["learner"] == "fcp" and cfg.partners is not None:  # stage 2: the learner takes its partners as data
            kwargs = {**kwargs, "partners": load_partners(cfg.partners, cfg.holdout)}
        return make(cfg, env, env_params=env_params, callback=callback, **kwargs)
    except ValueError as e:  # checks that need the environment (minibatches, shaped_reward, data shards)
        raise ValueError(f"train section: {e}") from None


def restore(run_dir: str):
    """The newest checkpoint of a run that restores: ``(config, learner, state,
    update)``; ``state`` is the train state of every seed (leading axis
    ``num_seeds``). Nothing in the run directory is changed."""
    config = read_run_config(run_dir)
    directory = os.path.join(run_dir, "checkpoints")
    if not os.path.isdir(directory) or not any(p.isdigit() for p in os.listdir(directory)):
        raise ValueError(f"run {run_dir!r} has no checkpoint yet (one is written every checkpoint_every updates)")
    learner = build(config)
    like = init_states(learner, jax.random.split(jax.random.key(config["seed"]), config["num_seeds"]))
    ckpt = Checkpointer(directory, max_to_keep=None, create=False)
    try:
        state, step, skipped = ckpt.restore_newest(like, move_aside=False)
    finally:
        ckpt.close()
    for message in skipped:
        warn(message)
    return config, learner, state, step


def load_partners(run_dir: str, holdout: int):
    """A stage-1 FCP run's partners (its newest checkpoint): every seed's members in
    order, the first ``M - holdout`` partners' snapshots flattened into the pool, the
    last ``holdout`` partners' final parameters held out."""
    from jaxagents.learners.policy_gradient.fcp import partners_from

    config, learner, state, _ = restore(run_dir)
    if config["learner"] != "fcp" or config["train"].get("partners") is not None:
        raise ValueError(f"partners={run_dir!r} must be a stage-1 fcp run (learner: fcp, train.partners: null), "
                         f"got learner {config['learner']!r} with partners={config['train'].get('partners')!r}")
    members = learner.member_states(state)  # [S(, P)]: the seeds (and members) are the partners
    return partners_from(members.extra.params, members.params, 1 if learner.members is None else 2, holdout, run_dir)

"""From a checked run config to what a run trains: the environment (``make_env``:
registered ids and ``jaxmarl:`` ids, ``env.params`` overrides checked and cast), the
learner (``build_learner``; FCP's second stage gets its partners read from the stage-1
run) and, with a ``population:`` section, the population of it (``build``)."""

from __future__ import annotations

import importlib

import jax.numpy as jnp
import numpy as np

from jaxagents import config as configs
from jaxagents.core.validate import check_bool, check_float, check_int


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
            from jaxagents.runs import load_partners  # runs -> runner -> build: imported when needed

            kwargs = {**kwargs, "partners": load_partners(cfg.partners, cfg.holdout)}
        return make(cfg, env, env_params=env_params, callback=callback, **kwargs)
    except ValueError as e:  # checks that need the environment (minibatches, shaped_reward, data shards)
        raise ValueError(f"train section: {e}") from None

"""Run configs: reading YAML and ``key.path=value`` overrides, filling in the
defaults, and checking every section before anything is written to disk.

A config is a nested dict (see ``jaxagents.runner`` for the schema and the embedded
default). What is checked here, with one-line errors that name the key:

* numbers in every usual notation (``3e-4``, ``1E6``, ``.5``, ``1_000``, ``.inf``):
  YAML 1.1 reads ``3e-4`` as a string, this loader reads it as a float;
* unknown keys in any section (top level, ``env``, ``log``, ``train`` and its nested
  sections), with the allowed keys and the closest one;
* the ``population`` section (optional) against ``PopulationConfig`` and its nested
  ``pbt`` and ``mesh`` sections, then by ``PopulationConfig``'s own checks;
* value types: the ``train`` section is checked against the fields of the learner's
  config dataclass (``SelfPlayConfig``, ``PPOConfig`` and the nested
  ``NetworkConfig``), looked up from the dataclass itself, so a regrouped config keeps
  being checked; integers must be integers (``2.5`` is refused, ``1e6`` is
  ``1000000``), floats must be finite.

Ranges and cross-field rules of the ``train`` section are the learner config's own
checks, run when the learner is built.
"""

from __future__ import annotations

import collections.abc
import copy
import dataclasses
import difflib
import importlib
import re
import types
import typing
from typing import Any

import yaml

from jaxagents.core.validate import check_bool, check_choice, check_float, check_int, check_positive_int

# every learner: its module (which has ``make_train``), the config class of its
# ``train`` section, and the train fields the learner's name fixes; imported lazily
LEARNER_MODULES = {
    "selfplay": ("jaxagents.learners.policy_gradient.selfplay", "SelfPlayConfig", {}),
    "fcp": ("jaxagents.learners.policy_gradient.fcp", "FCPConfig", {}),
    "ippo": ("jaxagents.learners.policy_gradient.ppo", "PPOConfig", {}),
    "mappo": ("jaxagents.learners.policy_gradient.ppo", "PPOConfig", {"central_critic": True}),
    "pqn": ("jaxagents.learners.value_based.pqn", "PQNConfig", {}),
    "iql": ("jaxagents.learners.value_based.qlearn", "QConfig", {"mixer": "none"}),
    "vdn": ("jaxagents.learners.value_based.qlearn", "QConfig", {"mixer": "vdn"}),
    "qmix": ("jaxagents.learners.value_based.qlearn", "QConfig", {"mixer": "qmix"}),
    "lm_selfplay": ("jaxagents.learners.language.selfplay", "LanguageSelfPlayConfig", {}),
}
LEARNERS = tuple(LEARNER_MODULES)
OPTIONAL_KEYS = ("name", "description")


# ----------------------------------------------------------------------- YAML


class _Loader(yaml.SafeLoader):
    """YAML with YAML 1.2's numbers: ``3e-4`` and ``1E6`` are floats (YAML 1.1 wants
    a dot and a signed exponent, and reads them as strings), and so are ``inf``,
    ``-inf`` and ``nan`` spelled without YAML's leading dot."""


_FLOAT = re.compile(
    r"""^(?:[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?
    |[-+]?\.[0-9_]+(?:[eE][-+]?[0-9]+)?
    |[-+]?\.?(?:inf|Inf|INF|infinity|Infinity)
    |\.?(?:nan|NaN|NAN))$""",
    re.X,
)


def _construct_float(loader, node):
    text = loader.construct_scalar(node).replace("_", "").lower()
    try:
        return float(text.replace(".inf", "inf").replace(".nan", "nan"))
    except ValueError:  # YAML 1.1's sexagesimal floats (1:30.5)
        return yaml.SafeLoader.construct_yaml_float(loader, node)


_Loader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT, list("-+0123456789.iInN"))
_Loader.add_constructor("tag:yaml.org,2002:float", _construct_float)


def parse_yaml(text: str, where: str = "YAML") -> Any:
    """``text`` parsed with the number rules above; a syntax error is a one-line
    ``ValueError`` naming ``where`` and the line."""
    try:
        return yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise ValueError(f"{where}: not valid YAML{at}: {problem}") from None


def parse_value(raw: str) -> Any:
    """One override's value: a YAML scalar or flow collection (``3e-4`` -> 0.0003,
    ``true``, ``null``, ``[64, 64]``); anything unparsable stays a string."""
    try:
        return yaml.load(raw, Loader=_Loader)
    except yaml.YAMLError:
        return raw


def read_yaml(path: str) -> dict:
    """A config file: a YAML mapping."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise ValueError(f"cannot read config {path!r}: {e.strerror or e}") from None
    data = parse_yaml(text, path)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a config must be a YAML mapping of keys to values, got {type(data).__name__}")
    return data


# ----------------------------------------------------------------------- merging


def deep_update(base: dict, new: dict) -> dict:
    """``base`` updated by ``new``, section by section (copies, neither is changed)."""
    out = copy.deepcopy(base)
    for k, v in new.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_update(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def apply_overrides(config: dict, overrides: list[str]) -> dict:
    """``["train.ppo.lr=1e-3", "env.kwargs.layout=cramped_room"]`` -> updated copy.
    Values are parsed as YAML (numbers in any usual notation, booleans, lists, null)."""
    config = copy.deepcopy(config)
    for item in overrides:
        if "=" not in item:
            raise ValueError(f"override {item!r} must look like key.path=value")
        path, raw = item.split("=", 1)
        keys = path.strip().split(".")
        if not all(keys):
            raise ValueError(f"override {item!r}: empty key in {path!r}")
        node = config
        for i, k in enumerate(keys[:-1]):
            node = node.setdefault(k, {})
            if not isinstance(node, dict):
                raise ValueError(f"override {item!r}: {'.'.join(keys[:i + 1])} is a value, not a section")
        node[keys[-1]] = parse_value(raw)
    return config


def resolve(user: dict, default: dict, train_given: bool | None = None) -> dict:
    """A complete config: ``default`` updated by ``user``.

    The default's ``train`` section (a budget tuned for its learner and environment)
    is kept only when ``user`` runs the same learner on the same environment and does
    not bring a ``train`` section of its own (``train_given``; default: whether
    ``user`` has a ``train`` key); otherwise the learner's own defaults apply. The
    same goes for the default's ``env`` kwargs and params when ``user`` names another
    environment."""
    if not isinstance(user, dict):
        raise ValueError(f"a config must be a mapping, got {type(user).__name__}")
    train_given = "train" in user if train_given is None else train_given
    base = {k: v for k, v in copy.deepcopy(default).items() if k != "train"}
    learner = user.get("learner", default["learner"])
    env = user.get("env")
    env_id = env.get("id", default["env"]["id"]) if isinstance(env, dict) else default["env"]["id"]
    same_job = learner == default["learner"] and env_id == default["env"]["id"]
    if env_id != default["env"]["id"]:
        base["env"] = {"kwargs": {}, "params": {}}
    base["train"] = copy.deepcopy(default["train"]) if same_job and not train_given else {}
    return deep_update(base, user)


def load(path: str | None, overrides: list[str], default: dict) -> dict:
    """The config of ``jaxagents train [CONFIG] [overrides]``: ``default`` updated by
    the file and the overrides, resolved (``resolve``) and checked (``validate``)."""
    user = read_yaml(path) if path is not None else {}
    train_given = "train" in user
    user = apply_overrides(user, list(overrides))
    return validate(resolve(user, default, train_given), default)


# ----------------------------------------------------------------------- checking


def unknown_key(section: str, key: str, allowed) -> ValueError:
    """The error for ``key`` in ``section``: the allowed keys and the closest one."""
    allowed = sorted(allowed)
    name = f"{section}.{key}" if section else str(key)
    close = difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.6)
    hint = f" (did you mean {(section + '.') if section else ''}{close[0]}?)" if close else ""
    where = f"in {section}" if section else "at the top level"
    return ValueError(f"unknown config key {name}{hint}; allowed {where}: {', '.join(allowed)}")


def _check_keys(section: str, value: dict, allowed) -> None:
    for k in value:
        if k not in allowed:
            raise unknown_key(section, k, allowed)


def _mapping(name: str, value: Any) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError(f"{name} must be a mapping of keys to values, got {value!r} ({type(value).__name__})")
    return value


def _check_type(name: str, value: Any, tp: Any) -> Any:
    """``value`` checked against the annotation ``tp``, converted (``1e6`` -> int
    where an int is meant). Unknown annotations pass the value through."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            return _check_type(name, value, rest[0])
        return value
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        if isinstance(value, tp):
            return value
        return check_dataclass(name, _mapping(name, value), tp)
    if tp is bool:
        return check_bool(name, value)
    if tp is int:
        if isinstance(value, float) and value.is_integer():
            value = int(value)  # 1e6 in a YAML file or an override
        return check_int(name, value)
    if tp is float:
        return check_float(name, value)
    if tp is str:
        if not isinstance(value, str):
            raise ValueError(f"{name} must be a string, got {value!r} ({type(value).__name__})")
        return value
    if origin in (list, tuple, collections.abc.Sequence):
        if not isinstance(value, (list, tuple)):
            raise ValueError(f"{name} must be a list, got {value!r} ({type(value).__name__})")
        (item,) = typing.get_args(tp)[:1] or (Any,)
        return [_check_type(f"{name}[{i}]", v, item) for i, v in enumerate(value)]
    return value


def check_dataclass(section: str, values: dict, cls: type) -> dict:
    """``values`` (the keys given for ``cls``) checked against ``cls``'s fields: names
    (unknown ones rejected with the allowed list and a suggestion) and types (nested
    dataclass fields are sections, checked the same way)."""
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # an annotation that cannot be resolved here: names only
        hints = {}
    _check_keys(section, values, fields)
    return {k: _check_type(f"{section}.{k}", v, hints.get(k, Any)) for k, v in values.items()}


def learner_config_class(learner: str) -> type:
    """The settings class of ``learner`` (a key of ``LEARNER_MODULES``: ``PPOConfig`` for
    ``ippo`` and ``mappo``, ``QConfig`` for ``iql``/``vdn``/``qmix``...), imported on demand."""
    module, name, _ = LEARNER_MODULES[learner]
    return getattr(importlib.import_module(module), name)


def validate(config: dict, default: dict) -> dict:
    """A checked copy of a complete ``config`` (every section), with values converted
    to their plain types. Raises a one-line ``ValueError`` naming the key."""
    config = copy.deepcopy(_mapping("config", config))
    _check_keys("", config, list(default) + list(OPTIONAL_KEYS))
    missing = sorted(set(default) - set(config))
    if missing:
        raise ValueError(f"config is missing {missing} (runner.run and load_config fill them from the default)")
    config["learner"] = check_choice("learner", config["learner"], LEARNERS)
    config["seed"] = check_int("seed", config["seed"], low=0)
    config["num_seeds"] = check_positive_int("num_seeds", config["num_seeds"])
    config["checkpoint_every"] = check_int("checkpoint_every", config["checkpoint_every"], low=0)
    config["checkpoint_seconds"] = check_float("checkpoint_seconds", config["checkpoint_seconds"], low=0.0)
    config["keep_checkpoints"] = check_positive_int("keep_checkpoints", config["keep_checkpoints"])
    for k in OPTIONAL_KEYS:
        if k in config and config[k] is not None and not isinstance(config[k], str):
            raise ValueError(f"{k} must be a string, got {config[k]!r}")

    env = config["env"] = dict(_mapping("env", config["env"]))
    _check_keys("env", env, ("id", "kwargs", "params"))
    if not isinstance(env.get("id"), str) or not env["id"]:
        raise ValueError(f"env.id must be an environment id (see `jaxagents list`), got {env.get('id')!r}")
    env["kwargs"] = dict(_mapping("env.kwargs", env.get("kwargs")))
    env["params"] = dict(_mapping("env.params", env.get("params")))

    log = config["log"] = dict(_mapping("log", config["log"]))
    _check_keys("log", log, default["log"])
    for k in ("progress", "tensorboard"):
        if k in log:
            log[k] = check_bool(f"log.{k}", log[k])
    if log.get("wandb_project") is not None and not isinstance(log["wandb_project"], str):
        raise ValueError(f"log.wandb_project must be a project name or null, got {log['wandb_project']!r}")
    config["log"] = {**default["log"], **log}

    train = _mapping("train", config["train"])
    config["train"] = check_dataclass("train", train, learner_config_class(config["learner"]))

    if config.get("population") is not None:
        from jaxagents.population.config import PopulationConfig

        pop = check_dataclass("population", _mapping("population", config["population"]), PopulationConfig)
        PopulationConfig(**pop)  # its own ranges and cross-field rules, before anything is written
        config["population"] = _plain(pop)
    return config


def _plain(value):
    """Checked dataclass values back to plain YAML types (dicts, lists, numbers)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {k: _plain(v) for k, v in dataclasses.asdict(value).items()}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


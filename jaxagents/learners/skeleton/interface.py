"""The learner interface: what every learner returns, and all a population needs.

A learner is built once, on the host, from a config and an environment
(``ppo.make_train``, ``selfplay.make_train``, ...) and comes back as a ``Learner``:
three pure, jit-able functions plus the facts a population or a runner needs::

    learner = make_train(config, env)
    state = learner.init(key, hparams)              # TrainState (any pytree)
    state, metrics = learner.update(state, hparams) # one update; metrics {name: f32[]}
    metrics = learner.evaluate(state, key)          # {name: f32[]}, "eval/..." names
    state, metrics = learner.train(key, hparams)    # init, then a scan of num_updates updates

Conventions, stated once:

* ``hparams`` is the pytree of *traced* hyper-parameters (``learner.default_hparams``
  when None). Its leaves are scalars, so ``vmap`` over a stacked ``hparams`` trains a
  population with one hyper-parameter set per member, and changing a member's
  value (PBT's explore step) never recompiles. Everything static -- sizes, the
  estimator, the network -- is in ``learner.config``.
* ``learner.hparam_space`` describes each traced hyper-parameter a population may
  vary: its default (from the config), the valid range and the scale to sample and
  perturb it on (``HParamSpec``).
* ``learner.fitness(metrics)`` is the default fitness of one update's metrics: a
  scalar where higher is better, NaN where the update did not measure it (sparse
  evaluations). Populations rank members with it unless told otherwise.
* The train state is checkpointed whole: restoring it and calling ``update`` again
  continues bit-identically. ``state.update`` (``i32[]``) counts the updates done.

A new learner implements ``init``/``update``/``evaluate`` over its own train state
and returns ``Learner(...)``; nothing else in the library needs to know it.

What a run needs beyond training (``jaxagents.runner``), with a plain learner's
answers here; a ``jaxagents.population.Population`` -- P members of a learner -- gives
its own and is driven by the runner through exactly this contract:

* ``members``: None, or P when states, metrics and evaluations carry a member axis
  ``[P]`` (after the seed axis the runner adds);
* ``member_states(state)``: the learner train state(s) inside ``state`` (itself; a
  population's members, ``[P]``), whose ``params`` are the policies to check and save;
* ``best(state)``: the index of the best member (0: a learner is its own only member);
* ``state_sharding(seed_axis)``: where ``init``'s output lives (None: default placement);
  ``placement``: where the members run (None, or the dict a run prints and keeps);
* ``log_rows(metrics, num_seeds)``: a segment's metrics ``{name: [S, U(, P)]}`` as the
  rows of ``metrics.jsonl`` and of the members' file (``MEMBERS_FILE``; none here);
* ``summarize(run_dir)``: extra entries of a finished run's ``results.json`` (none here).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable

import jax
import jax.numpy as jnp

from jaxagents.core.validate import check_float

MEMBERS_FILE = "population.jsonl"  # a run's rows of its members (``log_rows``' second list)


@dataclasses.dataclass(frozen=True)
class HParamSpec:
    """One traced hyper-parameter: ``name`` (a field of the learner's hparams),
    ``default``, the valid range ``[low, high]`` and the ``scale`` ("log" or
    "linear") on which a population samples and perturbs it."""

    name: str
    default: float
    low: float
    high: float
    scale: str = "linear"

    def __post_init__(self):
        if self.scale not in ("log", "linear"):
            raise ValueError(f"HParamSpec {self.name}: scale must be 'log' or 'linear', got {self.scale!r}")
        low = check_float(f"{self.name} low", self.low, low=0.0, low_open=self.scale == "log")
        check_float(f"{self.name} high", self.high, low=low)

    def sample(self, key: jax.Array, shape: tuple = ()) -> jax.Array:
        """Uniform draws on the spec's scale (log-uniform for ``scale="log"``)."""
        if self.scale == "log":
            u = jax.random.uniform(key, shape, minval=math.log(self.low), maxval=math.log(self.high))
            return jnp.exp(u)
        return jax.random.uniform(key, shape, minval=self.low, maxval=self.high)

    def clip(self, value: jax.Array) -> jax.Array:
        """``value`` clipped to ``[low, high]``."""
        return jnp.clip(value, self.low, self.high)


def hparams_from_config(cls, config):
    """A learner's hparams dataclass ``cls`` with every field read as ``f32[]`` from
    ``config``'s field of the same name (the config's values: ``default_hparams``)."""
    return cls(**{name: jnp.asarray(getattr(config, name), jnp.float32) for name in cls.__dataclass_fields__})


class ConfigHParams:
    """Base of every learner's traced hyper-parameters: a ``flax.struct`` dataclass
    whose fields (``f32[]`` scalars) are named after config fields, so that
    ``from_config`` reads the defaults; the subclass lists only its fields."""

    @classmethod
    def from_config(cls, config):
        """The hyper-parameters at ``config``'s values, ``f32[]`` each."""
        return hparams_from_config(cls, config)


def hparam_space(ranges: dict, config) -> dict[str, HParamSpec]:
    """``{name: HParamSpec}`` from a learner's ``ranges`` ``{name: (low, high, scale)}``
    (where a population may move each traced hyper-parameter), the defaults read
    from ``config``'s field of the same name; a default outside its range widens it."""
    out = {}
    for name, (low, high, scale) in ranges.items():
        d = float(getattr(config, name))
        out[name] = HParamSpec(name, d, min(low, d), max(high, d), scale)
    return out


@dataclasses.dataclass(frozen=True)
class Fitness:
    """``sign * mean(metrics[name] for name in names)``: the default fitness of a
    learner's update metrics (higher is better; NaN where not measured). ``valid``
    names a count metric: where it is 0 (e.g. no episode finished in the update's
    rollout) the fitness is NaN, not the metric's placeholder value."""

    names: tuple[str, ...]
    sign: float = 1.0
    valid: str | None = None

    def __call__(self, metrics: dict) -> jax.Array:
        missing = [n for n in (*self.names, *([self.valid] if self.valid else [])) if n not in metrics]
        if missing:
            raise KeyError(f"fitness needs metrics {missing}; the learner reports {sorted(metrics)}")
        values = jnp.stack([jnp.asarray(metrics[n], jnp.float32) for n in self.names])
        out = self.sign * jnp.mean(values, axis=0)
        if self.valid is not None:
            out = jnp.where(jnp.asarray(metrics[self.valid]) > 0, out, jnp.nan)
        return out

    @property
    def name(self) -> str:
        """How the fitness is reported: the metric's name (``mean(a, b)`` for several), prefixed
        with ``-`` when ``sign < 0``."""
        stem = self.names[0] if len(self.names) == 1 else "mean(" + ", ".join(self.names) + ")"
        return stem if self.sign > 0 else f"-{stem}"


@dataclasses.dataclass(frozen=True, eq=False)
class Learner:
    """A built learner (see the module docstring for the conventions).

    Attributes:
        init: ``(key, hparams=None) -> state``.
        update: ``(state, hparams=None) -> (state, metrics)``, one update.
        evaluate: ``(state, key) -> metrics``, evaluation of the current policy.
        default_hparams: the config's values of the traced hyper-parameters.
        hparam_space: ``{name: HParamSpec}`` for every field of ``default_hparams``.
        fitness: the default fitness of an update's metrics.
        config: the learner's (static) config.
        env: the environment as the user passed it; ``env_params`` its params.
        num_updates: the updates of a full run (``train`` scans this many).
        agents: the learner's networks (``init(key) -> params``, ``logits_fn``...).
        data_axis, data_shards: a data-parallel learner's mesh axis and its number
            of devices: ``update`` then runs inside a ``shard_map`` over that axis,
            each device stepping ``1 / data_shards`` of the environments (the train
            state's ``env`` leaves, split on their environment axis); None and 1 for
            a one-device learner.
    """

    init: Callable[..., Any]
    update: Callable[..., tuple[Any, dict]]
    evaluate: Callable[[Any, jax.Array], dict]
    default_hparams: Any
    hparam_space: dict[str, HParamSpec]
    fitness: Fitness
    config: Any
    env: Any
    env_params: Any
    num_updates: int
    agents: Any = None
    data_axis: str | None = None
    data_shards: int = 1

    def __post_init__(self):
        fields = set(getattr(self.default_hparams, "__dataclass_fields__", {}))
        if fields and fields != set(self.hparam_space):
            raise ValueError(f"hparam_space {sorted(self.hparam_space)} must describe every hparam {sorted(fields)}")

    # ------------------------------------------------------------ what a run needs
    members = None  # no member axis: one learner (see the module docstring)
    placement = None

    def member_states(self, state):
        """The learner train state inside ``state``: ``state`` itself."""
        return state

    def best(self, state) -> jax.Array:
        """``i32[]`` 0: a learner is its own only member."""
        return jnp.zeros((), jnp.int32)

    def state_sharding(self, seed_axis: bool = False):
        """None: ``init``'s output is placed by ``jit`` (one device)."""
        return None

    def log_rows(self, metrics: dict, num_seeds: int) -> tuple[list[dict], list[dict]]:
        """``{name: [S, U]}`` -> ``(metrics.jsonl rows, [])`` (``tracking.rows_from_metrics``)."""
        from jaxagents import tracking

        return tracking.rows_from_metrics(metrics, num_seeds), []

    def summarize(self, run_dir: str) -> dict:
        """Nothing beyond the run's metrics: ``{}``."""
        return {}

    def train(self, key: jax.Array, hparams: Any = None):
        """The whole run as one program: ``init``, then a ``scan`` of ``update``.
        Returns ``(final state, metrics stacked over updates {name: f32[U]})``."""
        state = self.init(key, hparams)
        return jax.lax.scan(lambda s, _: self.update(s, hparams), state, None, self.num_updates)

    __call__ = train  # ``jax.jit(make_train(cfg, env))(key)``, PureJaxRL-style

    def sample_hparams(self, key: jax.Array, num: int, names: tuple[str, ...] | None = None):
        """``num`` hparam sets (leading axis ``num``): the ``names`` drawn from their
        ranges on their scales, every other field at its default."""
        names = tuple(self.hparam_space) if names is None else tuple(names)
        unknown = sorted(set(names) - set(self.hparam_space))
        if unknown:
            raise ValueError(f"unknown hyper-parameters {unknown}; this learner's are {sorted(self.hparam_space)}")
        keys = dict(zip(names, jax.random.split(key, max(len(names), 1))))
        values = {}
        for field in self.hparam_space:
            default = jnp.asarray(getattr(self.default_hparams, field), jnp.float32)
            values[field] = self.hparam_space[field].sample(keys[field], (num,)) if field in names else jnp.full((num,), default)
        return self.default_hparams.replace(**values)

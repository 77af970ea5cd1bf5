"""Population-based training's exploit and explore steps, as pure array code.

At a *ready point* every member has a fitness (``f32[P]``, NaN where it was never
measured). Members are ranked, NaN last; with ``k = max(1, floor(fraction * P))``:

* **exploit** (truncation selection): each of the ``k`` worst members copies the
  train state -- parameters, optimiser state, environments, everything but its random
  keys -- of a member drawn uniformly from the ``k`` best. A copied member keeps its
  own keys (every typed PRNG-key leaf of the state), folded with the generation
  (the update of the ready point): copying the key too would leave the child drawing
  the same environments and the same action noise as its parent from then on, and
  after a few ready points most of the population would share one random stream;
* **explore**: each copied member's hyper-parameters (those PBT varies) are its
  parent's, each multiplied by ``0.8`` or ``1.2`` (equally likely; ``perturb``), or,
  with probability ``resample_prob``, drawn afresh from the parameter's range on its
  scale; then clipped to the range.

Every decision comes from one key, so a population sharded over devices or hosts
takes the same decisions everywhere. With ``P < 2`` nothing happens. Because the
hyper-parameters are traced values, a new learning rate never recompiles.
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp

from jaxagents.core.validate import check_float, check_positive_int

EXPLORE = ("perturb",)


@dataclasses.dataclass(frozen=True)
class PBTConfig:
    """PBT settings.

    Attributes:
        interval: updates between ready points.
        fraction: the bottom fraction replaced, and the top fraction they copy from.
        hparams: the hyper-parameters PBT explores (names of the learner's
            ``hparam_space``); the others keep each member's value.
        perturb: the two factors an explored value is multiplied by.
        resample_prob: probability an explored value is redrawn from its range instead.
        fitness: a metric name to rank by (default: the learner's ``fitness``);
            ``fitness_sign=-1`` when lower is better (e.g. ``eval/exploitability``).
    """

    interval: int = 10
    fraction: float = 0.25
    hparams: tuple = ("lr",)
    perturb: tuple = (0.8, 1.2)
    resample_prob: float = 0.25
    fitness: str | None = None
    fitness_sign: float = 1.0

    def __post_init__(self):
        object.__setattr__(self, "interval", check_positive_int("pbt.interval", self.interval))
        object.__setattr__(self, "fraction", check_float("pbt.fraction", self.fraction, low=0.0, high=0.5, low_open=True))
        object.__setattr__(self, "resample_prob", check_float("pbt.resample_prob", self.resample_prob, low=0.0, high=1.0))
        if isinstance(self.hparams, str) or not all(isinstance(h, str) for h in self.hparams) or not self.hparams:
            raise ValueError(f"pbt.hparams must be a non-empty list of hyper-parameter names, got {self.hparams!r}")
        object.__setattr__(self, "hparams", tuple(self.hparams))
        pert = tuple(self.perturb)
        if len(pert) != 2:
            raise ValueError(f"pbt.perturb must be two factors, e.g. [0.8, 1.2], got {self.perturb!r}")
        object.__setattr__(self, "perturb", tuple(check_float("pbt.perturb", p, low=0.0, low_open=True) for p in pert))
        if self.fitness is not None and not isinstance(self.fitness, str):
            raise ValueError(f"pbt.fitness must be null or a metric name, got {self.fitness!r}")
        if self.fitness_sign not in (1, -1, 1.0, -1.0):
            raise ValueError(f"pbt.fitness_sign must be 1 or -1, got {self.fitness_sign!r}")

    def num_replaced(self, size: int) -> int:
        """How many members a ready point replaces in a population of ``size``:
        ``floor(fraction * size)``, at least 1; 0 for a population of one."""
        return max(1, int(math.floor(self.fraction * size))) if size >= 2 else 0


def ranks(fitness: jax.Array) -> jax.Array:
    """``i32[P]`` members from best to worst; NaN counts as the worst, ties keep
    member order (a stable sort)."""
    f = jnp.where(jnp.isnan(fitness), -jnp.inf, fitness)
    return jnp.argsort(-f, stable=True)


def select_parents(key: jax.Array, fitness: jax.Array, num: int) -> jax.Array:
    """``i32[P]``: each member's parent -- itself, or, for the ``num`` worst, a
    uniformly drawn member of the ``num`` best."""
    size = fitness.shape[0]
    if num == 0:
        return jnp.arange(size)
    order = ranks(fitness)
    top, bottom = order[:num], order[size - num :]
    donors = top[jax.random.randint(key, (num,), 0, num)]
    return jnp.arange(size).at[bottom].set(donors)


def explore(key: jax.Array, hparams, parents: jax.Array, space: dict, names: tuple, factors: tuple, resample_prob: float):
    """The children's hyper-parameters: each member takes its parent's values; a
    member with a new parent perturbs or resamples the ``names`` (see the module
    docstring). ``hparams`` has a leading ``[P]`` axis on every field."""
    size = parents.shape[0]
    copied = parents != jnp.arange(size)
    inherited = jax.tree.map(lambda x: x[parents], hparams)
    out = {}
    for name, k in zip(names, jax.random.split(key, len(names))):
        spec = space[name]
        k_f, k_r, k_new = jax.random.split(k, 3)
        value = getattr(inherited, name)
        factor = jnp.where(jax.random.bernoulli(k_f, 0.5, (size,)), factors[1], factors[0])
        new = jnp.where(jax.random.bernoulli(k_r, resample_prob, (size,)), spec.sample(k_new, (size,)), value * factor)
        out[name] = jnp.where(copied, spec.clip(new), value).astype(value.dtype)
    return inherited.replace(**out)


def _is_key(x) -> bool:
    return jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)


def copy_members(members, parents: jax.Array, generation: jax.Array):
    """Each member's leaves from its parent (``parents`` ``i32[P]``), except its
    typed PRNG keys: a member with a new parent keeps its own keys folded with
    ``generation``, one that keeps itself keeps them unchanged. Distinct keys
    therefore stay distinct through any number of ready points."""
    copied = parents != jnp.arange(parents.shape[0])

    def one(x):
        if not _is_key(x):
            return x[parents]
        flat = x.reshape(x.shape[0], -1)  # [P, k] keys per member
        fresh = jax.vmap(jax.vmap(jax.random.fold_in, in_axes=(0, None)), in_axes=(0, None))(flat, generation)
        mask = copied.reshape((-1,) + (1,) * (jax.random.key_data(flat).ndim - 1))
        data = jnp.where(mask, jax.random.key_data(fresh), jax.random.key_data(flat))
        return jax.random.wrap_key_data(data, impl=jax.random.key_impl(x)).reshape(x.shape)

    return jax.tree.map(one, members)


def exploit_explore(key: jax.Array, fitness: jax.Array, members, hparams, space: dict, cfg: PBTConfig,
                    generation: jax.Array | int = 0):
    """One ready point: ``(members, hparams, parents)`` after exploit and explore.
    ``members`` is any pytree with a leading ``[P]`` axis on every leaf (a stacked
    train state); a copied member gets its parent's leaves exactly, except its random
    keys (``copy_members``); ``generation`` (the update of the ready point) is folded
    into a copied member's keys."""
    k_sel, k_exp = jax.random.split(key)
    parents = select_parents(k_sel, fitness, cfg.num_replaced(fitness.shape[0]))
    members = copy_members(members, parents, jnp.asarray(generation, jnp.uint32))
    hparams = explore(k_exp, hparams, parents, space, cfg.hparams, cfg.perturb, cfg.resample_prob)
    return members, hparams, parents

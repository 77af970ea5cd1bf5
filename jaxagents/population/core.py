"""Populations of any learner: P members with stacked train states, each with its
own key and its own traced hyper-parameters, trained by one program.

``Population(learner, size, ...)`` wraps any ``jaxagents.learners.Learner`` and is
itself one: it satisfies the whole ``Learner`` contract (``jaxagents.learners.skeleton.
interface``), so the runner drives it as it drives its learner::

    pop = Population(learner, size=8, pbt=PBTConfig(interval=10), ranges={"lr": (1e-4, 1e-2)})
    state = pop.init(key)                  # members drawn from the ranges
    state, metrics = pop.update(state)     # every member one update; metrics [P]
    state, metrics = pop.train(key)        # init, then a scan of num_updates updates

Members are updated by ``vmap(learner.update)`` -- on one device, or, given a device
``mesh`` with a ``pop`` axis, by ``shard_map`` of that ``vmap`` over the devices, each
device updating its own members (``jaxagents.population.mesh``); a learner built
with a data axis (``make_train(..., data_axis="data", data_shards=D)``) also splits
each member's environments over the mesh's ``data`` axis of D devices. The members' update
counter is one shared scalar (they advance in lockstep), so a learner's ``lax.cond``
on it -- evaluate every K updates -- stays a branch instead of becoming a select.

With ``pbt`` set, every ``pbt.interval`` updates is a ready point (``pbt.py``): the
fitness of each member is its mean over the updates since the last ready point of
the values that were measured (``learner.fitness``, or ``pbt.fitness``; NaN-safe --
a member measured nowhere in the interval keeps its last fitness), then exploit and
explore. Each update's metrics carry the population's bookkeeping: ``fitness`` [P]
(NaN where not measured), ``pbt/ready`` and ``pbt/parent`` [P] (each member's
parent at a ready point, itself otherwise: the lineage), and ``hparams/NAME`` [P]
(the schedules of the hyper-parameters that vary: drawn per member or explored).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from jaxagents.core.validate import check_float, check_positive_int
from jaxagents.learners.skeleton.interface import Fitness, HParamSpec, Learner
from jaxagents.population import pbt as pbt_lib


@struct.dataclass
class PopulationState:
    """Everything a population run needs to continue (checkpoint it whole).

    Attributes:
        members: the learner's train state, a leading ``[P]`` axis on every leaf.
        hparams: the members' traced hyper-parameters, ``[P]`` per field.
        fitness: ``f32[P]`` at the last ready point (NaN before the first).
        fitness_sum, fitness_count: ``f32[P]`` measured fitness since that point.
        parents: ``i32[P]`` each member's parent at the last ready point.
        key: the population's own key (PBT decisions).
        update: ``i32[]`` updates done (every member's count).
    """

    members: Any
    hparams: Any
    fitness: jax.Array
    fitness_sum: jax.Array
    fitness_count: jax.Array
    parents: jax.Array
    key: jax.Array
    update: jax.Array


def _ranges(learner: Learner, ranges: dict | None) -> dict[str, HParamSpec]:
    """The learner's ``hparam_space`` with user ranges ``{name: (low, high)}`` (the
    scale stays the learner's). A user range must lie inside the learner's own,
    where the hyper-parameter is known to be usable; one reaching outside it is
    refused (one line naming both) rather than clipped, so that no member silently
    trains with other values than the config says."""
    space = dict(learner.hparam_space)
    for name, rng in (ranges or {}).items():
        if name not in space:
            raise ValueError(f"population ranges: unknown hyper-parameter {name!r}; the learner's are {sorted(space)}")
        if not isinstance(rng, (list, tuple)) or len(rng) != 2:
            raise ValueError(f"population ranges: {name} must be [low, high], got {rng!r}")
        low = check_float(f"population ranges: {name} low", rng[0])
        high = check_float(f"population ranges: {name} high", rng[1], low=low)
        own = space[name]
        if low < own.low or high > own.high:
            raise ValueError(f"population ranges: {name} [{low:g}, {high:g}] reaches outside the learner's range for it, "
                             f"[{own.low:g}, {own.high:g}]: give a range inside that one")
        space[name] = dataclasses.replace(space[name], low=low, high=high)
    return space


class Population:
    """``size`` members of ``learner`` (see the module docstring).

    Args:
        learner: any ``Learner``.
        size: P >= 1.
        pbt: ``PBTConfig`` or None (no PBT: independent members, e.g. a sweep).
        ranges: ``{name: (low, high)}``: the hyper-parameters drawn per member at
            ``init`` (uniformly on each one's scale) and the ranges PBT explores in;
            every other hyper-parameter keeps the config's value.
        mesh: a ``jax.sharding.Mesh`` with a ``pop`` axis that divides ``size``
            (``jaxagents.population.mesh.make_mesh``), or None for one device.
        chunk: members updated together by one ``vmap`` on a device (default: all
            of the device's members); the device's members are updated ``chunk`` at a
            time by ``lax.map`` (less memory).
        callback: optional host function ``callback(update, metrics)`` called once per
            update with the population's metrics (``[P]`` each), e.g. a progress bar.

    ``placement`` is set by ``build_population`` (a dict: the mesh used, members per
    device, devices present; ``jaxagents.population.config.placement``), None otherwise.
    """

    placement: dict | None = None

    def __init__(self, learner: Learner, size: int, pbt: pbt_lib.PBTConfig | None = None, ranges: dict | None = None,
                 mesh=None, chunk: int | None = None, callback=None):
        self.learner = learner
        self.callback = callback
        self.size = check_positive_int("population size", size)
        self.pbt = pbt
        self.space = _ranges(learner, ranges)
        self.sampled = tuple(ranges or ())
        if pbt is not None:
            unknown = sorted(set(pbt.hparams) - set(self.space))
            if unknown:
                raise ValueError(f"pbt.hparams: unknown hyper-parameters {unknown}; the learner's are {sorted(self.space)}")
        # the hyper-parameters that differ between members or over time: the schedules
        self.varied = tuple(dict.fromkeys((*self.sampled, *(pbt.hparams if pbt is not None else ()))))
        self.fitness_fn = learner.fitness if pbt is None or pbt.fitness is None else Fitness((pbt.fitness,), pbt.fitness_sign)
        self.mesh = mesh
        self.data_axis = getattr(learner, "data_axis", None)  # a data-parallel learner's mesh axis
        if mesh is not None:
            from jaxagents.population.mesh import check_mesh

            check_mesh(mesh, self.size, self.data_axis, getattr(learner, "data_shards", 1))
        elif self.data_axis is not None:
            raise ValueError(f"the learner splits its environments over mesh axis {self.data_axis!r}: give the population a mesh "
                             f"(make_mesh(data={learner.data_shards}))")
        self.num_updates = learner.num_updates
        local = self.size // (1 if mesh is None else mesh.shape["pop"])
        self.chunk = local if chunk is None else check_positive_int("population chunk", chunk)
        if local % self.chunk:
            raise ValueError(f"population chunk={self.chunk} must divide the members per device ({local})")

    # ------------------------------------------------------------------ init
    def initial_hparams(self, key: jax.Array):
        """``[P]`` hyper-parameters: the ``ranges`` drawn per member, the rest at the
        config's values."""
        values = {}
        keys = dict(zip(self.sampled, jax.random.split(key, max(len(self.sampled), 1))))
        for name in self.space:
            default = jnp.asarray(getattr(self.learner.default_hparams, name), jnp.float32)
            values[name] = self.space[name].sample(keys[name], (self.size,)) if name in keys else jnp.full((self.size,), default)
        return self.learner.default_hparams.replace(**values)

    def init(self, key: jax.Array, hparams=None) -> PopulationState:
        """Members from ``split(key)``: member ``i``'s train state is
        ``learner.init(member_keys[i], hparams[i])``. ``hparams``: ``[P]`` per field, or
        one set of scalars for every member (``default_hparams``: the config's values,
        as for a learner); None draws the ``ranges`` (``initial_hparams``)."""
        k_members, k_hp, k_pop = jax.random.split(key, 3)
        if hparams is None:
            hp = self.initial_hparams(k_hp)
        else:
            hp = jax.tree.map(lambda x: jnp.broadcast_to(x, (self.size,)) if jnp.ndim(x) == 0 else x, hparams)
        members = jax.vmap(self.learner.init)(jax.random.split(k_members, self.size), hp)
        nan = jnp.full((self.size,), jnp.nan, jnp.float32)
        zeros = jnp.zeros((self.size,), jnp.float32)
        return PopulationState(members, hp, nan, zeros, zeros, jnp.arange(self.size, dtype=jnp.int32), k_pop, jnp.zeros((), jnp.int32))

    # ------------------------------------------------------------------ update
    def _member_axes(self, members):
        return jax.tree.map(lambda _: 0, members).replace(update=None)

    def update_members(self, members, hparams, update):
        """Every member one ``learner.update``; ``update`` is the shared counter.
        Returns ``(members, metrics [P])``; sharded over ``pop`` with a mesh."""
        shared = members.replace(update=update)
        axes = self._member_axes(members)

        def batch(m, hp):
            return jax.vmap(self.learner.update, in_axes=(axes, 0), out_axes=(axes, 0))(m, hp)

        def local(m, hp):
            n = jax.tree.leaves(hp)[0].shape[0]
            if self.chunk == n:
                return batch(m, hp)
            split = lambda x: x.reshape(n // self.chunk, self.chunk, *x.shape[1:])  # noqa: E731
            merge = lambda x: x.reshape(n, *x.shape[2:])  # noqa: E731
            count = m.update  # shared by every chunk: closed over, not mapped
            stacked = jax.tree.map(split, m.replace(update=jnp.zeros((n,), count.dtype)))
            outs, metrics = jax.lax.map(lambda c: batch(c[0].replace(update=count), c[1]), (stacked, jax.tree.map(split, hp)))
            new_count = outs.update[0]
            outs = jax.tree.map(merge, outs.replace(update=jnp.zeros((n // self.chunk, self.chunk), count.dtype)))
            return outs.replace(update=new_count), jax.tree.map(merge, metrics)

        if self.mesh is None:
            new, metrics = local(shared, hparams)
        else:
            from jaxagents.population.mesh import shard_members

            new, metrics = shard_members(local, self.mesh, shared, hparams, axes, self.data_axis)
        return new.replace(update=jnp.broadcast_to(new.update, (self.size,))), metrics

    def update(self, state: PopulationState, hparams=None):
        """One update of every member, then (at a ready point) PBT.
        ``hparams`` is ignored: each member's own are in the state."""
        members, metrics = self.update_members(state.members, state.hparams, state.update)
        update = state.update + 1
        fit = jnp.asarray(self.fitness_fn(metrics), jnp.float32)
        seen = ~jnp.isnan(fit)
        total = state.fitness_sum + jnp.where(seen, fit, 0.0)
        count = state.fitness_count + seen
        state = state.replace(members=members, fitness_sum=total, fitness_count=count, update=update)
        ready = jnp.zeros((), bool)
        if self.pbt is not None and self.size >= 2:
            ready = update % self.pbt.interval == 0
            state = jax.lax.cond(ready, self._ready, lambda s: s.replace(parents=jnp.arange(self.size, dtype=jnp.int32)), state)
        metrics = dict(metrics)
        metrics["fitness"] = fit
        metrics["pbt/ready"] = jnp.broadcast_to(ready, (self.size,))
        metrics["pbt/parent"] = jnp.where(ready, state.parents, jnp.arange(self.size, dtype=jnp.int32))
        for name in self.varied:
            metrics[f"hparams/{name}"] = getattr(state.hparams, name)
        if self.callback is not None:
            jax.debug.callback(self.callback, update, metrics)
        return state, metrics

    def _ready(self, state: PopulationState) -> PopulationState:
        """Exploit and explore with the interval's mean fitness."""
        interval_mean = state.fitness_sum / jnp.maximum(state.fitness_count, 1.0)
        fitness = jnp.where(state.fitness_count > 0, interval_mean, state.fitness)
        key, k = jax.random.split(state.key)
        members, hparams, parents = pbt_lib.exploit_explore(k, fitness, state.members, state.hparams, self.space, self.pbt,
                                                            generation=state.update)
        zeros = jnp.zeros_like(fitness)
        return state.replace(members=members, hparams=hparams, parents=parents.astype(jnp.int32), fitness=fitness[parents],
                             fitness_sum=zeros, fitness_count=zeros, key=key)

    # ------------------------------------------------------------------ placement
    def state_sharding(self, seed_axis: bool = False):
        """Where each leaf of a ``PopulationState`` lives: with a mesh, every
        per-member leaf split over ``pop`` and the rest (key, counter) replicated;
        None without one. ``seed_axis``: the states of several seeds stacked in front
        (the runner's ``vmap`` over seeds). Use as ``jit(..., out_shardings=...)`` so
        each process creates only its own members."""
        if self.mesh is None:
            return None
        from jax.sharding import NamedSharding
        from jax.sharding import PartitionSpec as P

        shape = jax.eval_shape(self.init, jax.random.key(0))
        lead = (None,) if seed_axis else ()
        member = lambda tree: jax.tree.map(lambda _: NamedSharding(self.mesh, P(*lead, "pop")), tree)  # noqa: E731
        rep = NamedSharding(self.mesh, P())
        from jaxagents.population.mesh import member_specs

        specs = member_specs(shape.members, data_axis=self.data_axis, lead=lead)  # a member's env leaves also over data
        members = jax.tree.map(lambda s: NamedSharding(self.mesh, s), specs, is_leaf=lambda x: isinstance(x, P))
        return PopulationState(
            members=members, hparams=member(shape.hparams), fitness=member(shape.fitness),
            fitness_sum=member(shape.fitness_sum), fitness_count=member(shape.fitness_count),
            parents=member(shape.parents), key=rep, update=rep,
        )

    def compile_init(self):
        """``jit(init)`` placing the members on the mesh (or plain ``jit``)."""
        return jax.jit(self.init, out_shardings=self.state_sharding())

    # ------------------------------------------------------------------ the rest of the interface
    # The Learner contract's facts: the members' own (their hyper-parameters vary within
    # ``hparam_space``; each member's values live in the state); the population's fitness
    # is each member's, ``[P]``.
    fitness = Fitness(("fitness",))
    config = property(lambda self: self.learner.config, doc="The learner's (static) config.")
    env = property(lambda self: self.learner.env, doc="The environment the members train on (the learner's).")
    env_params = property(lambda self: self.learner.env_params, doc="The learner's environment params.")
    agents = property(lambda self: self.learner.agents, doc="The learner's networks (every member's architecture).")
    data_shards = property(lambda self: getattr(self.learner, "data_shards", 1),
                           doc="Devices each member's environments are split over (the learner's).")
    default_hparams = property(lambda self: self.learner.default_hparams,
                               doc="The learner's config values of the traced hyper-parameters.")
    hparam_space = property(lambda self: self.space, doc="``{name: HParamSpec}``: the learner's, narrowed by ``ranges``.")
    members = property(lambda self: self.size, doc="P: states, metrics and evaluations carry a ``[P]`` member axis.")
    sample_hparams = Learner.sample_hparams

    def member_states(self, state: PopulationState):
        """The members' train states, ``[P]`` on every leaf."""
        return state.members

    def log_rows(self, metrics: dict, num_seeds: int) -> tuple[list[dict], list[dict]]:
        """``{name: [S, U, P]}`` -> the population's view (``metrics.jsonl``) and the
        members' rows (``population.jsonl``): ``report.metrics_rows``."""
        from jaxagents.population import report

        return report.metrics_rows(metrics, num_seeds)

    def summarize(self, run_dir: str) -> dict:
        """``{"population": ...}`` for ``results.json``: the members table (seed 0), the
        best member, the schedule and lineage plots (written next to it, with the
        members' summary)."""
        from jaxagents.population import report

        rows = report.read(run_dir)
        table, best = report.members_table(rows)
        report.write_summary(run_dir, table, best)
        return {"population": {"size": self.size, "best": best, "members": table, "plots": report.plot(rows, run_dir),
                               "pbt": self.pbt is not None}}

    def evaluate(self, state: PopulationState, key: jax.Array) -> dict:
        """Every member's ``learner.evaluate`` (metrics ``[P]``)."""
        return jax.vmap(self.learner.evaluate)(state.members, jax.random.split(key, self.size))

    def train(self, key: jax.Array, hparams=None):
        """``init(key, hparams)``, then ``num_updates`` updates in one ``lax.scan``. Returns
        ``(state, metrics)``: the final ``PopulationState`` and every update's metrics,
        ``[num_updates, P]`` each."""
        state = self.init(key, hparams)
        return jax.lax.scan(lambda s, _: self.update(s), state, None, self.num_updates)

    __call__ = train

    def best(self, state: PopulationState) -> jax.Array:
        """``i32[]`` the member with the best fitness at the last ready point (NaN-safe);
        without PBT, the best mean fitness measured so far."""
        mean = state.fitness_sum / jnp.maximum(state.fitness_count, 1.0)
        f = jnp.where(jnp.isnan(state.fitness), jnp.where(state.fitness_count > 0, mean, jnp.nan), state.fitness)
        return pbt_lib.ranks(f)[0]

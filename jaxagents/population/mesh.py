"""The device mesh of a population: members over the ``pop`` axis, each member's
environments over the ``data`` axis.

``make_mesh(pop=None, data=1)`` builds a two-axis ``jax.sharding.Mesh`` ``("pop",
"data")`` of ``pop x data`` devices from the devices present (``jax.devices()``: every
local device, or every device of every process after ``jax.distributed.initialize``);
``pop`` defaults to as many as fit. The same config therefore runs on one CPU (a mesh
of one), one GPU, 8 GPUs or a pod: only the members and environments per device
change. ``pop`` must divide the population size; ``data`` must equal the learner's
``data_shards`` (``make_train(..., data_axis="data", data_shards=D)``). A device's
``data`` neighbours are adjacent in ``jax.devices()`` (same host first), since they
all-reduce every gradient step.

``shard_members`` runs a function of the stacked members (``vmap`` of the learner's
update) under ``jax.shard_map``. Over ``pop`` each device receives its ``P / pop``
members and updates them with no communication at all; the population-level steps
(ranking, PBT's exploit gathers) run on the global arrays under ``jit``, where XLA
inserts the transfers. A member's computation is the same program on every device,
so a population sharded over 4 devices matches the same population on one device
member by member (tested on CPU). Over ``data`` (the Anakin pattern) a member's
per-environment leaves -- its train state's ``env``, split on the environment axis
(``member_specs``) -- are divided among the devices and everything else is
replicated; the learner's update all-reduces gradients and batch statistics over
``data`` (``jaxagents.learners.policy_gradient.ppo``), so its parameters stay identical on every
device, and the result equals the one-device run to float rounding (tested).

On CPU, several devices can be faked for tests and prototyping by setting
``XLA_FLAGS=--xla_force_host_platform_device_count=N`` before JAX starts.
"""

from __future__ import annotations

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from jaxagents.core.validate import check_positive_int

POP = "pop"
DATA = "data"


def make_mesh(pop: int | None = None, devices=None, *, data: int = 1) -> Mesh:
    """A ``("pop", "data")`` mesh of ``pop x data`` devices (``pop`` default: as many as
    ``devices`` -- default ``jax.devices()`` -- hold)."""
    devices = list(jax.devices() if devices is None else devices)
    data = check_positive_int("mesh.data", data)
    n = len(devices) // data if pop is None else check_positive_int("mesh.pop", pop)
    if n < 1 or n * data > len(devices):
        raise ValueError(f"mesh pop={n} x data={data} needs {max(n, 1) * data} devices; {len(devices)} are present ({devices[0].platform})")
    return Mesh(np.asarray(devices[: n * data]).reshape(n, data), (POP, DATA))


def check_mesh(mesh: Mesh, size: int, data_axis: str | None = None, data_shards: int = 1) -> None:
    """The mesh fits a population of ``size`` members of a learner built with
    ``data_axis``/``data_shards`` (one-line errors)."""
    if POP not in mesh.axis_names:
        raise ValueError(f"a population mesh needs a {POP!r} axis, got axes {mesh.axis_names}")
    n = mesh.shape[POP]
    if size % n:
        raise ValueError(f"population size {size} must be a multiple of the mesh's pop axis ({n} devices)")
    if data_axis is None:
        extra = {a: s for a, s in mesh.shape.items() if a != POP and s > 1}
        if extra:
            raise ValueError(f"the mesh splits environments over {extra} devices but the learner was built without a data axis: "
                             f"make_train(..., data_axis={next(iter(extra))!r}, data_shards={next(iter(extra.values()))})")
        return
    if data_axis not in mesh.axis_names:
        raise ValueError(f"the learner splits its environments over axis {data_axis!r}; the mesh has axes {mesh.axis_names}")
    if mesh.shape[data_axis] != data_shards:
        raise ValueError(f"the learner was built with data_shards={data_shards}; the mesh's {data_axis!r} axis has "
                         f"{mesh.shape[data_axis]} devices (make_mesh(data={data_shards}))")


def member_specs(members, axes=None, data_axis: str | None = None, lead: tuple = ()):
    """``PartitionSpec``s of a stacked member tree: the member axis over ``pop`` where
    ``axes`` says 0 (default: every leaf), replicated where it says None; with
    ``data_axis``, the leaves of ``members.env`` (one row per environment after the
    member axis) also split over ``data_axis``. ``lead``: axes in front of the member
    axis (e.g. ``(None,)`` for stacked seeds)."""
    axes = jax.tree.map(lambda _: 0, members) if axes is None else axes
    stacked = P(*lead, POP)
    specs = jax.tree.map(lambda a: stacked if a == 0 else P(), axes, is_leaf=lambda x: x is None)
    if data_axis is not None:
        specs = specs.replace(env=jax.tree.map(lambda _: P(*lead, POP, data_axis), members.env))
    return specs


def member_sharding(mesh: Mesh, tree, axes=None, data_axis: str | None = None):
    """``NamedSharding``s for a stacked tree (``member_specs``)."""
    return jax.tree.map(lambda s: NamedSharding(mesh, s), member_specs(tree, axes, data_axis), is_leaf=lambda x: isinstance(x, P))


def shard_members(fn, mesh: Mesh, members, hparams, axes, data_axis: str | None = None):
    """``fn(members, hparams) -> (members, metrics)`` on each device's members.
    ``axes`` marks the members' leaves that are stacked (0) or shared (None); with
    ``data_axis`` each device also gets only its share of a member's environments."""
    spec = member_specs(members, axes, data_axis)
    hp_spec = jax.tree.map(lambda _: P(POP), hparams)
    # check_vma=False: the shared update counter enters replicated and the learner's inner
    # scans mix it with per-member values; every member is independent and a member's
    # replicated leaves are equal on every data device (all-reduced), so nothing needs the
    # varying-axes type check. Metrics: every leaf [members] over pop (a spec prefix).
    return jax.shard_map(fn, mesh=mesh, in_specs=(spec, hp_spec), out_specs=(spec, P(POP)), check_vma=False)(members, hparams)

"""The device mesh of a population: members sharded over the ``pop`` axis.

``make_mesh(pop=None)`` builds a one-axis ``jax.sharding.Mesh`` named ``pop`` over the
devices present (``jax.devices()``: every local device, or every device of every
process after ``jax.distributed.initialize``). The same config therefore runs on
one CPU (a mesh of one), one GPU, 8 GPUs or a pod: only the number of members per
device changes. ``pop`` must divide the population size.

``shard_members`` runs a function of the stacked members (``vmap`` of the learner's
update) under ``jax.shard_map``: each device receives its ``P / pop`` members and
updates them with no communication at all; the population-level steps (ranking,
PBT's exploit gathers) run on the global arrays under ``jit``, where XLA inserts the
transfers. A member's computation is the same program on every device, so a
population sharded over 4 devices matches the same population on one device member
by member (tested bit for bit on CPU).

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


def make_mesh(pop: int | None = None, devices=None) -> Mesh:
    """A ``pop`` mesh over ``pop`` devices (default: all of ``jax.devices()``)."""
    devices = list(jax.devices() if devices is None else devices)
    n = len(devices) if pop is None else check_positive_int("mesh.pop", pop)
    if n > len(devices):
        raise ValueError(f"mesh.pop={n} needs {n} devices; {len(devices)} are present ({devices[0].platform})")
    return Mesh(np.asarray(devices[:n]), (POP,))


def check_mesh(mesh: Mesh, size: int) -> None:
    if POP not in mesh.axis_names:
        raise ValueError(f"a population mesh needs a {POP!r} axis, got axes {mesh.axis_names}")
    n = mesh.shape[POP]
    if size % n:
        raise ValueError(f"population size {size} must be a multiple of the mesh's pop axis ({n} devices)")


def member_sharding(mesh: Mesh, tree, axes=None):
    """``NamedSharding``s for a stacked tree: the leading axis over ``pop`` where
    ``axes`` says 0 (default: every leaf), replicated where it says None."""
    axes = jax.tree.map(lambda _: 0, tree) if axes is None else axes
    return jax.tree.map(lambda a: NamedSharding(mesh, P(POP) if a == 0 else P()), axes, is_leaf=lambda x: x is None)


def shard_members(fn, mesh: Mesh, members, hparams, axes):
    """``fn(members, hparams) -> (members, metrics)`` on each device's members.
    ``axes`` marks the members' leaves that are stacked (0) or shared (None)."""
    spec = jax.tree.map(lambda a: P(POP) if a == 0 else P(), axes, is_leaf=lambda x: x is None)
    hp_spec = jax.tree.map(lambda _: P(POP), hparams)
    out_shapes = jax.eval_shape(fn, members, hparams)
    metrics_spec = jax.tree.map(lambda _: P(POP), out_shapes[1])
    # check_vma=False: the shared update counter enters replicated and the learner's inner
    # scans mix it with per-member values; every member is independent, so nothing
    # needs the varying-axes type check
    return jax.shard_map(fn, mesh=mesh, in_specs=(spec, hp_spec), out_specs=(spec, metrics_spec), check_vma=False)(members, hparams)

"""Where a language model's weights live on a mesh.

A model too large for one device is split over a mesh axis -- by default the
population mesh's ``data`` axis (``jaxagents.population.mesh``), whose devices
already split the games of one learner -- in the fully-sharded data-parallel way:
every weight matrix is cut along its largest axis that the axis size divides (the
layer axis of stacked weights is never cut, since ``lax.scan`` walks it), and small
or indivisible leaves are replicated. Under ``jit`` the compiler gathers each
layer's weights where they are used, so ``forward`` and ``generate`` run unchanged
and give the single-device results (to float rounding; tested over 4 CPU devices).

``load_params(path, place=placer(mesh))`` puts each weight on its shards as it is
read, so the whole model is never on one device.
"""

from __future__ import annotations

from typing import Callable

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from jaxagents.population.mesh import DATA

MIN_SHARDED_SIZE = 2**14  # leaves smaller than this (norm scales, biases) are replicated


def spec_for(path: tuple, shape: tuple, axis_size: int, axis: str = DATA) -> P:
    """The ``PartitionSpec`` of one weight (``path`` its keys in the params tree)."""
    stacked = bool(path) and path[0] == "layers"
    dims = [i for i in range(1 if stacked else 0, len(shape)) if shape[i] % axis_size == 0]
    if axis_size == 1 or not dims or int(np.prod(shape)) < MIN_SHARDED_SIZE:
        return P()
    cut = max(dims, key=lambda i: shape[i])
    spec = [None] * len(shape)
    spec[cut] = axis
    return P(*spec)


def _keys(path) -> tuple:
    return tuple(getattr(k, "key", getattr(k, "idx", k)) for k in path)


def param_sharding(params: dict, mesh: Mesh, axis: str = DATA) -> dict:
    """A tree of ``NamedSharding`` matching ``params`` (see the module docstring)."""
    if axis not in mesh.axis_names:
        raise ValueError(f"mesh has axes {mesh.axis_names}; the model is sharded over {axis!r}")
    size = mesh.shape[axis]
    return jax.tree_util.tree_map_with_path(
        lambda path, x: NamedSharding(mesh, spec_for(_keys(path), x.shape, size, axis)), params)


def shard_params(params: dict, mesh: Mesh, axis: str = DATA) -> dict:
    """``params`` placed on ``mesh`` by ``param_sharding``."""
    return jax.device_put(params, param_sharding(params, mesh, axis))


def placer(mesh: Mesh, axis: str = DATA) -> Callable[[tuple, np.ndarray], jax.Array]:
    """The ``place`` argument of ``jaxagents.lm.load.load_params`` for this mesh."""
    size = mesh.shape[axis]
    return lambda path, array: jax.device_put(array, NamedSharding(mesh, spec_for(path, array.shape, size, axis)))

"""Data parallelism inside one learner: its environments split over the devices of
a mesh axis (``data_axis``), each device stepping ``num_envs / data_shards`` of them
under ``shard_map`` (``jaxagents.population`` builds the mesh)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxagents.core.validate import check_positive_int


def check_data_shards(num_envs: int, data_axis: str | None, data_shards) -> int:
    """The number of devices one learner's environments are split over (one-line errors)."""
    data_shards = check_positive_int("data_shards", data_shards)
    if data_axis is not None and not isinstance(data_axis, str):
        raise ValueError(f"data_axis must be the name of a mesh axis (e.g. 'data') or None, got {data_axis!r}")
    if data_shards > 1 and data_axis is None:
        raise ValueError(f"data_shards={data_shards} needs data_axis, the mesh axis the environments are split over (e.g. 'data')")
    if num_envs % data_shards:
        raise ValueError(f"data_shards={data_shards} must divide num_envs={num_envs} (each device runs num_envs / data_shards environments)")
    return data_shards


def local_env_ids(data_axis: str | None, data_shards: int, local_envs: int) -> jax.Array | None:
    """Inside an update: the global indices ``i32[local_envs]`` of this device's
    environments on the data axis (None without one). Outside a ``shard_map`` over
    ``data_axis``: a one-line error saying how to run the learner."""
    if data_axis is None:
        return None
    try:
        shard = jax.lax.axis_index(data_axis)
    except NameError:
        raise ValueError(f"this learner splits its environments over the mesh axis {data_axis!r}: run its update under "
                         f"shard_map over that axis, e.g. Population(learner, P, mesh=make_mesh(data={data_shards}))") from None
    return shard * local_envs + jnp.arange(local_envs)

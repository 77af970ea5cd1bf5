"""A snapshot pool: a ring buffer of the learner's past parameters in the train state.

Fictitious self-play's opponents: every ``every`` updates the current parameters
overwrite the oldest slot. Who plays them, and how often, is the league's part
(``partners.league``); the pool only keeps them and, where the game has an exact
evaluation, is measured as one mixed strategy (each game draws one filled slot
uniformly and plays it throughout: the population as one agent, the quantity PSRO
reports for its meta-strategy), under ``eval/pool/``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from jaxagents.learners.partners.part import Context, Exact, Part


@struct.dataclass
class Pool:
    """``params``: the ring buffer, a params tree with a leading ``[pool_size]``
    axis; ``count``: filled slots; ``next``: the slot the next push overwrites."""

    params: dict
    count: jax.Array
    next: jax.Array


class SnapshotPool(Part):
    """The ``pool`` part: ``size`` slots, a push after every ``every``-th update. It
    starts with the initial parameters in every slot, slot 0 counted as filled."""

    field = "pool"

    def __init__(self, size: int, every: int):
        self.size, self.every = size, every

    def pushes(self, update: jax.Array) -> jax.Array:
        """``bool[]``: whether the update numbered ``update`` pushes a snapshot."""
        return update % self.every == 0

    def init(self, params, key):
        stacked = jax.tree.map(lambda x: jnp.broadcast_to(x, (self.size, *x.shape)), params)
        return Pool(stacked, jnp.ones((), jnp.int32), jnp.ones((), jnp.int32) % self.size)

    def after_update(self, pool: Pool, ctx: Context):
        push = self.pushes(ctx.update)
        params = jax.tree.map(lambda buf, p: jnp.where(push, buf.at[pool.next].set(p), buf), pool.params, ctx.params)
        count = jnp.where(push, jnp.minimum(pool.count + 1, self.size), pool.count)
        return Pool(params, count, jnp.where(push, (pool.next + 1) % self.size, pool.next)), {}

    def evaluate(self, pool: Pool, exact: Exact):
        filled = (jnp.arange(self.size) < pool.count).astype(jnp.float32)
        return exact(pool.params, "eval/pool/", weights=filled)

"""The citizen action layout and action masks of ``gtb`` (shared by the env, its
observations and its tests).

Action ids are the AI Economist's flattened single-action ids for its
`simple_wood_and_stone` components (Build, ContinuousDoubleAuction, Gather), so recorded
reference actions replay unchanged: ``0`` no-op, ``1`` build, then per resource in the
order stone, wood: ``P`` bids at price ``0..P-1`` and ``P`` asks at price ``0..P-1``
(``P = max_bid_ask + 1``), then the moves left, right, up, down.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxagents_environments.economy.market.auction import ASK, BID, OrderBook
from jaxagents_environments.economy.market.rules import own_extremes

NOOP, BUILD = 0, 1
# (d_row, d_col) of the moves left, right, up, down
MOVES = ((0, -1), (0, 1), (-1, 0), (1, 0))


class ActionLayout:
    """Citizen action ids for ``R`` resources and ``P`` price levels (see the module docstring)."""

    def __init__(self, num_resources: int, num_levels: int):
        self.R, self.P = num_resources, num_levels
        self.order0 = 2
        self.move0 = 2 + 2 * num_resources * num_levels
        self.n = self.move0 + len(MOVES)

    def order(self, resource: int, side: int, price: int) -> int:
        return self.order0 + (2 * resource + side) * self.P + price

    def move(self, direction: int) -> int:
        return self.move0 + direction

    def decode_order(self, a: jax.Array):
        """(is_order, resource, side, price level) of actions ``a``."""
        o = a - self.order0
        is_order = (o >= 0) & (a < self.move0)
        o = jnp.clip(o, 0, 2 * self.R * self.P - 1)
        return is_order, o // (2 * self.P), (o // self.P) % 2, o % self.P

    def decode_move(self, a: jax.Array):
        """(is_move, d_row, d_col) of actions ``a``."""
        d = a - self.move0
        is_move = d >= 0
        d = jnp.clip(d, 0, len(MOVES) - 1)
        moves = jnp.asarray(MOVES, jnp.int32)
        return is_move, moves[d, 0], moves[d, 1]


def open_orders(book: OrderBook, num_resources: int) -> jax.Array:
    """``i32[N, R]`` open orders (bids and asks) per citizen and resource."""
    res = jax.nn.one_hot(book.resource, num_resources, dtype=jnp.int32)
    return jnp.sum(res * book.open[..., None], axis=-2)


def occupancy(loc: jax.Array, height: int, width: int) -> jax.Array:
    """``bool[H, W]`` tiles with a citizen on them."""
    return jnp.zeros((height * width,), bool).at[loc[:, 0] * width + loc[:, 1]].set(True).reshape(height, width)


def move_targets(loc, height, width):
    """``i32[N, 4, 2]`` the tiles of the four moves (may lie outside the map) and
    ``bool[N, 4]`` inside it."""
    tgt = loc[:, None, :] + jnp.asarray(MOVES, jnp.int32)[None]
    inside = (tgt[..., 0] >= 0) & (tgt[..., 0] < height) & (tgt[..., 1] >= 0) & (tgt[..., 1] < width)
    return tgt, inside


def citizen_mask(layout: ActionLayout, state, sources, water, max_orders: int) -> jax.Array:
    """``bool[N, n]`` legal citizen actions (the same test ``step`` enforces).

    The AI Economist's masks, plus one rule of ours: an order may not cross the
    citizen's own open orders (a bid below its lowest ask on that resource, an ask above
    its highest bid), so no citizen ever trades with itself and its auction's self-skip
    never applies (see ``dynamics``).

    * build: one stone and one wood in inventory, on a tile with no resource unit, no
      source and no house;
    * bid at price ``p``: fewer than ``max_orders`` open orders on that resource and
      ``p <= coin`` (inventory); ask: the same count and one unit in inventory;
    * move: the tile is on the map, not water, not another citizen's house, and nobody
      stands on it at the start of the step.
    """
    R, P = layout.R, layout.P
    n = state.loc.shape[0]
    h, w = water.shape
    r, c = state.loc[:, 0], state.loc[:, 1]
    here_free = ~jnp.any(state.resources[:, r, c], 0) & ~jnp.any(sources[:, r, c], 0) & (state.house[r, c] < 0)
    can_build = jnp.all(state.goods >= 1, -1) & here_free
    room = open_orders(state.book, R) < max_orders  # [N, R]
    hi_bid, lo_ask = own_extremes(state.book, R, P)
    levels = jnp.arange(P)
    bid_ok = room[:, :, None] & (levels <= state.coin[:, None, None]) & (levels < lo_ask[:, :, None])
    ask_ok = room[:, :, None] & (state.goods[:, :, None] >= 1) & (levels > hi_bid[:, :, None])
    orders = jnp.stack([bid_ok, ask_ok], axis=2).reshape(n, 2 * R * P)  # [N, R, side, P]
    tgt, inside = move_targets(state.loc, h, w)
    tr, tc = jnp.clip(tgt[..., 0], 0, h - 1), jnp.clip(tgt[..., 1], 0, w - 1)
    owner = state.house[tr, tc]
    occupied = occupancy(state.loc, h, w)[tr, tc]
    can_move = inside & ~water[tr, tc] & ((owner < 0) | (owner == jnp.arange(n)[:, None])) & ~occupied
    return jnp.concatenate([jnp.ones((n, 1), bool), can_build[:, None], orders, can_move], axis=-1)


__all__ = ["ASK", "BID", "ActionLayout", "citizen_mask", "move_targets", "occupancy", "open_orders"]

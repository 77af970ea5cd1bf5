"""The market's citizen action layout, action masks and the small pure rules
(crafting recipe, bracket tax, isoelastic utility) shared by the env and its tests."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxagents_environments.economy.market.auction import ASK, BID, OrderBook

NOOP = 0


class ActionLayout:
    """Citizen action ids for ``R`` resources and ``P`` price levels.

    ``0`` no-op; ``1 + q`` gather resource ``q``; ``1 + R`` craft;
    ``2 + R + (2 q + side) P + j`` place an order on resource ``q``, side ``BID`` (0)
    or ``ASK`` (1), at price level ``j``. ``n = 2 + R + 2 R P`` actions in all.
    """

    def __init__(self, num_resources: int, num_levels: int):
        self.R, self.P = num_resources, num_levels
        self.craft = 1 + num_resources
        self.order0 = 2 + num_resources
        self.n = self.order0 + 2 * num_resources * num_levels

    def gather(self, q: int) -> int:
        return 1 + q

    def order(self, q: int, side: int, level: int) -> int:
        return self.order0 + (2 * q + side) * self.P + level

    def decode_order(self, a: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        """(resource, side, level) of order actions (garbage for other actions)."""
        o = jnp.maximum(a - self.order0, 0)
        return o // (2 * self.P), (o // self.P) % 2, o % self.P


def craft_inputs(goods: jax.Array, units) -> tuple[jax.Array, jax.Array]:
    """The crafting recipe: ``units`` of each of two different resources.

    Args:
        goods: ``i32[N, R]`` inventories.
        units: units needed of each of the two resources.

    Returns:
        ``can``: ``bool[N]``, at least two resources with ``>= units``;
        ``use``: ``bool[N, R]``, the two resources a craft consumes: the two largest
        inventories, ties to the lower index (both ``>= units`` whenever ``can``).
    """
    r = goods.shape[-1]
    idx = jnp.arange(r)
    g_q, g_r = goods[..., :, None], goods[..., None, :]
    beaten_by = (g_r > g_q) | ((g_r == g_q) & (idx[None, :] < idx[:, None]))  # [.., q, r]
    use = jnp.sum(beaten_by, -1) < 2
    can = jnp.sum(goods >= units, -1) >= 2
    return can, use


def own_extremes(book: OrderBook, num_resources: int, num_levels: int) -> tuple[jax.Array, jax.Array]:
    """Each citizen's highest open bid level and lowest open ask level per resource,
    ``i32[N, R]`` each (-1 / ``P`` where there is none)."""
    res = jax.nn.one_hot(book.resource, num_resources, dtype=bool) & book.open[..., None]  # [N, k, R]
    lvl = book.level[..., None]
    hi_bid = jnp.max(jnp.where(res & (book.side == BID)[..., None], lvl, -1), axis=-2)
    lo_ask = jnp.min(jnp.where(res & (book.side == ASK)[..., None], lvl, num_levels), axis=-2)
    return hi_bid, lo_ask


def citizen_mask(layout: ActionLayout, coin, goods, book: OrderBook, prices, craft_units) -> jax.Array:
    """``bool[N, n]`` legal citizen actions (the same test ``step`` enforces).

    No-op and gathering are always legal. Crafting needs the recipe
    (``craft_inputs``). An order needs a free slot (fewer than ``k`` open orders); a
    bid at price ``p`` needs ``coin >= p`` in inventory (not escrow) and ``p`` below
    the citizen's own lowest open ask on that resource; an ask needs one unit of the
    resource in inventory and a price above the citizen's own highest open bid on it
    (no self-trades).
    """
    R, P = layout.R, layout.P
    n = coin.shape[0]
    room = jnp.sum(book.open, -1) < book.level.shape[-1]
    hi_bid, lo_ask = own_extremes(book, R, P)
    levels = jnp.arange(P)
    bid_ok = (coin[:, None, None] >= prices) & (levels < lo_ask[:, :, None])  # [N, R, P]
    ask_ok = (goods[:, :, None] >= 1) & (levels > hi_bid[:, :, None])
    orders = jnp.stack([bid_ok, ask_ok], axis=2) & room[:, None, None, None]  # [N, R, 2, P]
    can_craft, _ = craft_inputs(goods, craft_units)
    return jnp.concatenate(
        [jnp.ones((n, 1 + R), bool), can_craft[:, None], orders.reshape(n, 2 * R * P)], axis=-1
    )


def bracket_tax(income, cutoffs, rates):
    """Piecewise-linear tax ``T(z) = sum_b rates[b] * clip(z - c_b, 0, c_{b+1} - c_b)``
    with ``c_B = inf``; ``income`` ``[..., N]``, ``cutoffs``/``rates`` ``[B]``."""
    upper = jnp.concatenate([cutoffs[1:], jnp.full((1,), jnp.inf, cutoffs.dtype)])
    z = income[..., None]
    return jnp.sum(rates * jnp.clip(z - cutoffs, 0.0, upper - cutoffs), -1)


def marginal_rate(income, cutoffs, rates):
    """Rate of the bracket ``income`` falls in (bracket 0 for income below 0)."""
    b = jnp.sum(income[..., None] >= cutoffs[1:], -1)
    return rates[b]


def isoelastic_utility(total_coin, labour, eta, labour_weight):
    """``(c^(1-eta) - 1) / (1 - eta) - labour_weight * labour`` with ``c`` the
    citizen's total coin (inventory + escrow), ``0 <= eta < 1``."""
    c = jnp.maximum(total_coin, 0).astype(jnp.float32)
    return (c ** (1.0 - eta) - 1.0) / (1.0 - eta) - labour_weight * labour

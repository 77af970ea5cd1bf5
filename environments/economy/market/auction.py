"""The order book and its matching rule: a double auction per resource, sort-based.

Orders. Every order is a *unit* order: a bid offers to buy one unit of one resource at
most at its price, an ask offers to sell one unit at least at its price. Prices are
one of ``P`` discrete levels (``level`` 0..P-1, the coin amounts are ``params.prices``,
strictly increasing, so comparing levels compares prices). Each citizen owns ``k``
order slots; an order records its resource, side, level, the step it was placed at
(``time``) and its *arrival rank* within that step (``rank``: a pseudo-random
permutation of the citizens drawn every step, ``arrival_ranks``). A citizen places at
most one order per step, so ``(time, rank)`` is unique: it is the order's place in the
arrival sequence, and "earlier" below means smaller ``(time, rank)`` lexicographically.

Matching rule (run once per step, on resting orders plus the step's new ones, every
resource independently):

1. **Price-time priority.** Bids are ranked by price, highest first, then by
   ``(time, rank)``, earliest first; asks by price, lowest first, then
   ``(time, rank)``.
2. **Rank pairing.** The j-th ranked bid is paired with the j-th ranked ask, for
   j = 1, 2, ...; the pair trades one unit when ``bid >= ask``. Because bids fall and
   asks rise along the ranking, the pairs that trade are a prefix j < J. The loop of
   the AI Economist's ``ContinuousDoubleAuction.match_orders`` (match the best bid
   with the best ask while they cross, remove both, repeat) produces exactly these
   pairs (its skip of a buyer's own asks never applies here, see below); ``J`` is
   also the volume of a call auction on the same book.
3. **Price: the earlier order's price.** A pair trades at the price of whichever of
   its two orders was placed earlier (the resting order's price when a new order
   takes liquidity; between two orders of the same step, the one with the smaller
   arrival rank; the AI Economist takes the ask's price for orders of the same age).
   An exact tie in ``(time, rank)`` cannot occur in the environment; for arbitrary
   books it is settled at the ask's price.
4. **Unit orders, no partial fills.** An order trades completely (one unit) or not at
   all. Orders at the same price are filled strictly in arrival order, so of two
   equal asks only the earlier one trades when one crossing bid arrives.

After matching, the best remaining bid is below the best remaining ask (if both
exist): the book is *uncrossed*. Orders are only ever added by citizens and removed by
trades or expiry, so a resting book is always uncrossed, and every trade involves at
least one order placed in the current step: a continuous double auction, discretised
in time. Within a step the new orders are not processed one at a time: the whole book
is uncrossed by rank pairing, and the step's arrival order only decides time priority
and prices. (One at a time can trade more: resting asks 1 and 3, new bids 2 then 4
would trade twice, 2 with 1 and 4 with 3; rank pairing trades 4 with 1, and 2 < 3
rests.) Self-trades cannot
happen in the environment because its action mask (enforced in ``step``) forbids an
order that would cross the citizen's own open orders; ``match`` itself does not look
at owners.

Implementation: every slot gets one ``uint32`` key, (side, resource, price priority) in
the high bits and the arrival sequence number ``(time - oldest time) * rank_span +
rank`` in the low bits (free slots last); one integer sort of the ``M = N k`` keys, a
``searchsorted`` for each order's position, an exclusive cumsum of the (side,
resource) segment sizes for its rank j in its segment, and a gather of the key of rank
j on the other side, which holds the partner's price and arrival. Both orders of a
pair compute the same outcome from the two keys, so nothing is scattered back.
``O(M log M)``; nothing quadratic, no loop over agents, orders, prices or resources.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from jaxagents.core.rng import fmix32

BID, ASK = 0, 1
EMPTY = -1  # level of a free slot


@struct.dataclass
class OrderBook:
    """Open orders, ``k`` slots per citizen; every field is ``i32[N, k]``.

    Attributes:
        level: price level 0..P-1, or ``EMPTY`` (-1) for a free slot.
        resource: resource index 0..R-1 (meaningless for free slots).
        side: ``BID`` (0) or ``ASK`` (1).
        time: step at which the order was placed.
        rank: arrival rank within that step.
    """

    level: jax.Array
    resource: jax.Array
    side: jax.Array
    time: jax.Array
    rank: jax.Array

    @classmethod
    def empty(cls, num_citizens: int, max_orders: int) -> "OrderBook":
        z = jnp.zeros((num_citizens, max_orders), jnp.int32)
        return cls(level=jnp.full_like(z, EMPTY), resource=z, side=z, time=z, rank=z)

    @property
    def open(self) -> jax.Array:
        """``bool[N, k]``: the slot holds an order."""
        return self.level >= 0


def key_bits(num_resources: int, num_levels: int) -> int:
    """Bits of the packed sort key left for an order's arrival sequence number
    (``32`` minus the bits of the (side, resource, price) bucket)."""
    return 32 - (2 * num_resources * num_levels).bit_length()


def match(book: OrderBook, num_resources: int, num_levels: int, rank_span: int,
          same_step_price: str = "arrival") -> jax.Array:
    """Match the book (see the module docstring); owners are ignored.

    Args:
        book: the open orders, fields of shape ``(..., k)`` (any leading shape; all
            slots form one book).
        num_resources: ``R``; resources of open orders lie in ``0..R-1``.
        num_levels: ``P``; levels of open orders lie in ``0..P-1``.
        rank_span: arrival ranks lie in ``0..rank_span-1``.
        same_step_price: the price of a pair whose two orders were placed in the same
            step: ``"arrival"`` (the earlier arrival's, rule 3) or ``"ask"`` (the ask's,
            as the AI Economist's auction does; ``gtb`` uses it). Pairs of different
            steps always trade at the older order's price.

    Precondition (the environment guarantees it): ``(time, rank)`` is unique among open
    orders and ``(max time - min time + 1) * rank_span <= 2 ** key_bits(R, P)``.

    Returns:
        ``i32`` of the book's shape: the price level at which each slot traded, or
        ``EMPTY`` (-1) where it did not trade (free slots included).
    """
    R, P = num_resources, num_levels
    shift = key_bits(R, P)
    level, res, side, time, rank = (jnp.ravel(x).astype(jnp.int32) for x in
                                    (book.level, book.resource, book.side, book.time, book.rank))
    is_open = level >= 0
    # One uint32 key per order: (side, resource, price priority) bucket in the high bits,
    # the arrival sequence number (time, rank) in the low bits; free slots sort last.
    # A single-operand integer sort is several times faster on CPU than a multi-key sort.
    t_min = jnp.min(jnp.where(is_open, time, jnp.iinfo(jnp.int32).max))
    seq = jnp.where(is_open, (time - t_min).astype(jnp.uint32) * jnp.uint32(rank_span) + rank.astype(jnp.uint32), 0)
    seg = side * R + res  # (side, resource) segment
    priority = jnp.where(side == BID, P - 1 - level, level)  # best price first
    bucket = jnp.where(is_open, seg * P + priority, 2 * R * P)
    key = (bucket.astype(jnp.uint32) << shift) | seq
    sorted_key = jnp.sort(key)
    pos = jnp.searchsorted(sorted_key, key).astype(jnp.int32)  # keys of open orders are unique

    # Rank j within the segment, and the order of rank j on the other side.
    seg_size = jnp.bincount(bucket, length=2 * R * P + 1)[:-1].reshape(2 * R, P).sum(1).astype(jnp.int32)
    seg_start = jnp.cumsum(seg_size) - seg_size
    seg = jnp.where(is_open, seg, 0)
    j = pos - seg_start[seg]
    other = (1 - side) * R + res
    other = jnp.where(is_open, other, 0)
    has_partner = is_open & (j < seg_size[other])
    partner = sorted_key[jnp.where(has_partner, seg_start[other] + j, 0)]
    p_priority = (partner >> shift).astype(jnp.int32) % P
    p_level = jnp.where(side == BID, p_priority, P - 1 - p_priority)
    p_seq = partner & jnp.uint32((1 << shift) - 1)

    bid_level = jnp.where(side == BID, level, p_level)
    ask_level = jnp.where(side == BID, p_level, level)
    trades = has_partner & (bid_level >= ask_level)
    # the earlier order's price; an exact tie (impossible in the env) takes the ask's
    if same_step_price == "ask":  # compare the steps only (rank_span is a power of two)
        seq, p_seq = seq // jnp.uint32(rank_span), p_seq // jnp.uint32(rank_span)
    elif same_step_price != "arrival":
        raise ValueError(f"same_step_price must be 'arrival' or 'ask', got {same_step_price!r}")
    fill = jnp.where(seq < p_seq, level, jnp.where(seq > p_seq, p_level, ask_level))
    return jnp.where(trades, fill, EMPTY).reshape(book.level.shape)


def rank_bits(num_citizens: int) -> int:
    """Bits of an arrival rank: ranks lie in ``0 .. 2**rank_bits(n) - 1``."""
    return max(1, (num_citizens - 1).bit_length())


def arrival_ranks(key: jax.Array, num_citizens: int) -> jax.Array:
    """``i32[N]`` distinct arrival ranks in ``0 .. 2**rank_bits(N) - 1``: a keyed
    pseudo-random permutation of the citizens (a 4-round unbalanced Feistel network on
    ``rank_bits`` bits with MurmurHash3's finaliser as round function, fresh round keys
    each step). Elementwise, so no sort: ``jax.random.permutation`` sorts random keys
    with a multi-operand sort, the slowest part of a step at 10^5 citizens."""
    return feistel_ranks(jax.random.bits(key, (4,), jnp.uint32), num_citizens)


def feistel_ranks(round_keys: jax.Array, num_citizens: int) -> jax.Array:
    """``arrival_ranks`` from its four ``u32`` round keys (for callers that draw all of a
    step's random words at once)."""
    m = rank_bits(num_citizens)
    hi, lo = m // 2, m - m // 2
    x = jnp.arange(num_citizens, dtype=jnp.uint32)
    for r in range(4):  # rounds, not agents
        left, right = x >> lo, x & jnp.uint32((1 << lo) - 1)
        f = fmix32(right ^ round_keys[r]) & jnp.uint32((1 << hi) - 1)
        x = (right << hi) | (left ^ f)
        hi, lo = lo, hi
    return x.astype(jnp.int32)


def depth(book: OrderBook, num_resources: int, num_levels: int) -> jax.Array:
    """``i32[2, R, P]``: open orders per (side, resource, price level)."""
    R, P = num_resources, num_levels
    key = jnp.where(book.open, (book.side * R + book.resource) * P + book.level, 2 * R * P)
    return jnp.bincount(jnp.ravel(key), length=2 * R * P + 1)[:-1].reshape(2, R, P).astype(jnp.int32)


def best_levels(depth_: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Best bid and best ask level per resource from ``depth`` (``i32[R]`` each; -1 /
    ``P`` where that side is empty)."""
    P = depth_.shape[-1]
    levels = jnp.arange(P, dtype=jnp.int32)
    best_bid = jnp.max(jnp.where(depth_[..., BID, :, :] > 0, levels, -1), -1)
    best_ask = jnp.min(jnp.where(depth_[..., ASK, :, :] > 0, levels, P), -1)
    return best_bid, best_ask

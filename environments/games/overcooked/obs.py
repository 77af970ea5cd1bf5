"""The 26-channel lossless grid observation of Overcooked (overcooked-ai's
``lossless_state_encoding``), one ``uint8[H, W, 26]`` per cook.

Each cook sees the kitchen from its own point of view: its own channels come first.

====  ==========================  =========================================================
ch    name                        value at a cell
====  ==========================  =========================================================
0     own_position                1 where this cook stands
1     other_position              1 where the other cook stands
2-5   own_orientation_{u,d,r,l}   1 at this cook's cell, in the channel of its facing
6-9   other_orientation_{u,d,r,l} same for the other cook
10    pot                         1 on pots (static)
11    counter                     1 on counters (static, also under loose items)
12    onion_pile                  1 on onion piles (static)
13    tomato_pile                 0 (no tomatoes in the classic game)
14    dish_pile                   1 on dish piles (static)
15    serve                       1 on serving windows (static)
16    onions_in_pot               onions (0-3) in a pot that has not started cooking
17    tomatoes_in_pot             0
18    onions_in_soup              onions of a cooking or ready pot, of a soup on a counter
                                  or held by a cook (at the cook's cell)
19    tomatoes_in_soup            0
20    cook_time_remaining         steps left for a cooking pot (0 once ready)
21    soup_done                   1 on ready pots and on soups (on counters or held)
22    dishes                      1 on empty dishes (on counters or held)
23    onions                      1 on loose onions (on counters or held)
24    tomatoes                    0
25    urgency                     all ones once fewer than 40 steps are left
====  ==========================  =========================================================

Differences from JaxMARL's Overcooked v1 encoding: none in values except channel 11,
which JaxMARL clears where an item lies on a counter (its map stores the item in
place of the counter); we keep overcooked-ai's static counter mask. JaxMARL also
declares its space as ``(W, H, 26)`` while producing ``(H, W, 26)``; ours is
``(H, W, 26)`` for both. overcooked-ai itself indexes ``[x, y]``, i.e. ``(W, H, 26)``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxagents_environments.games.overcooked.layouts import COUNTER, DISH_PILE, ONION_PILE, POT, SERVE, Layout

NUM_CHANNELS = 26
URGENCY_STEPS = 40  # urgency is on while horizon - t < URGENCY_STEPS
_NONE = 255  # "no channel" code

_DIRS = ("up", "down", "right", "left")
CHANNELS = (
    ("own_position", "other_position")
    + tuple(f"own_orientation_{d}" for d in _DIRS)
    + tuple(f"other_orientation_{d}" for d in _DIRS)
    + ("pot", "counter", "onion_pile", "tomato_pile", "dish_pile", "serve")
    + ("onions_in_pot", "tomatoes_in_pot", "onions_in_soup", "tomatoes_in_soup", "cook_time_remaining", "soup_done")
    + ("dishes", "onions", "tomatoes", "urgency")
)
assert len(CHANNELS) == NUM_CHANNELS

# Item codes shared with env.py: nothing, onion, empty dish, soup of 1/2/3 onions.
NOTHING, ONION, DISH = 0, 1, 2
SOUP_BASE = 2  # a soup of n onions is SOUP_BASE + n


def channel_high() -> np.ndarray:
    """Largest value of each channel, ``int[26]`` (the observation space's bound;
    the cook time is bounded by ``params.cook_time <= 255``)."""
    high = np.ones(NUM_CHANNELS, np.int64)
    high[[13, 17, 19, 24]] = 0
    high[[16, 18]] = 3
    high[20] = 255
    return high


def static_planes(layout: Layout) -> np.ndarray:
    """The static channels 10-15 (pot, counter, onion pile, tomato pile, dish pile,
    serve) as ``uint8[H*W, 26]`` (other channels zero), computed once per layout."""
    kind = layout.kind.reshape(-1)
    planes = np.zeros((kind.size, NUM_CHANNELS), np.uint8)
    for k, ch in ((POT, 10), (COUNTER, 11), (ONION_PILE, 12), (DISH_PILE, 14), (SERVE, 15)):
        planes[kind == k, ch] = 1
    return planes


def encode(state, static: np.ndarray, pot_onehot: np.ndarray, horizon, shape: tuple[int, int]) -> jax.Array:
    """Both cooks' observations, ``uint8[2, H, W, 26]`` (cook 0's first).

    Args:
        state: an ``OvercookedState`` (unbatched).
        static: ``static_planes(layout)``.
        pot_onehot: ``bool[P, H*W]``, row ``p`` marks pot ``p``'s cell.
        horizon: ``i32[]`` episode length (for the urgency channel).
        shape: ``(H, W)``.

    Built for XLA on CPU (about 1.6x faster than stacking 26 planes): the 16 channels
    both cooks share come from one elementwise pass comparing the channel index with
    per-cell channel codes; the 8 cook channels that are not zero (4 per viewer) are
    then scattered into the two copies.
    """
    u8 = jnp.uint8
    hw = static.shape[0]
    ch = jnp.arange(NUM_CHANNELS, dtype=u8)
    at = jnp.arange(hw, dtype=state.pos.dtype)[None, :] == state.pos[:, None]  # [2, HW]

    # Everything portable, where it is: loose items on counters plus what the cooks
    # hold at their cells (cooks stand on floor, items lie on counters: no overlap).
    obj = state.items + jnp.sum(jnp.where(at, state.held[:, None].astype(state.items.dtype), 0), 0)  # [HW]
    soup = obj > SOUP_BASE
    on_pots = lambda v: jnp.sum(jnp.where(pot_onehot, v[:, None], 0), 0)  # [P] -> [HW]
    idle = state.pot_timer < 0
    ready = on_pots(state.pot_timer == 0) > 0
    # At most one of: onion (23), dish (22), soup or ready pot (21) per cell.
    item_ch = jnp.where(obj == ONION, 23, jnp.where(obj == DISH, 22, jnp.where(soup | ready, 21, _NONE))).astype(u8)
    in_pot = on_pots(jnp.where(idle, state.pot_onions, 0)).astype(u8)  # channel 16
    in_soup = (on_pots(jnp.where(idle, 0, state.pot_onions)) + jnp.where(soup, obj - SOUP_BASE, 0)).astype(u8)  # 18
    cook_time = on_pots(jnp.where(idle, 0, state.pot_timer)).astype(u8)  # 20
    urgent = horizon - state.t < URGENCY_STEPS

    col = lambda x: x[:, None]
    shared = jnp.asarray(static) | ((ch == col(item_ch)) | ((ch == 25) & urgent)).astype(u8)
    shared = shared + jnp.where(
        ch == 16, col(in_pot), jnp.where(ch == 18, col(in_soup), jnp.where(ch == 20, col(cook_time), 0))
    ).astype(u8)  # [HW, 26]

    # Viewer v sees itself in channels 0 and 2 + its facing, the other cook in 1 and
    # 6 + its facing. Cooks never share a cell, so the 8 indices are distinct.
    p, d = state.pos, state.dir
    viewer = jnp.array([0, 0, 1, 1, 0, 0, 1, 1])
    cell = jnp.stack([p[0], p[0], p[1], p[1], p[1], p[1], p[0], p[0]])
    channel = jnp.stack([0, 2 + d[0], 0, 2 + d[1], 1, 6 + d[1], 1, 6 + d[0]])
    out = jnp.broadcast_to(shared, (2, hw, NUM_CHANNELS)).at[viewer, cell, channel].set(1, unique_indices=True)
    return out.reshape((2,) + tuple(shape) + (NUM_CHANNELS,))

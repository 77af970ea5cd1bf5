"""Host-side pictures of ``gtb`` states (numpy), GIFs through Overcooked's ``save_gif``.

Land is pale, water blue, stone sources grey and wood sources olive; a unit of stone
(dark grey) or wood (brown) on a tile is a dot; a house is a square in its owner's
colour; a citizen a disk in its colour with a white rim.
"""

from __future__ import annotations

import numpy as np

from jaxagents_environments.games.overcooked.render import save_gif  # noqa: F401  (re-exported)

_LAND, _WATER = (236, 230, 208), (80, 140, 210)
_SOURCE = ((170, 170, 170), (165, 180, 110))
_UNIT = ((70, 70, 70), (120, 80, 30))


def colours(n: int) -> np.ndarray:
    """``uint8[n, 3]`` distinct citizen colours (golden-ratio hues)."""
    h = (np.arange(n) * 0.618034) % 1.0
    k = lambda m: (m + h * 6) % 6
    f = lambda m: 1 - np.maximum(0, np.minimum(np.minimum(k(m), 4 - k(m)), 1))
    rgb = np.stack([f(5), f(3), f(1)], -1) * 0.75 + 0.1
    return (rgb * 255).astype(np.uint8)


def render_state(env, state, tile: int = 12) -> np.ndarray:
    """``uint8[H*tile, W*tile, 3]`` of one unbatched state."""
    if tile < 4:
        raise ValueError(f"tile must be >= 4 pixels, got {tile}")
    h, w = env.height, env.width
    water, sources = np.asarray(env.water), np.asarray(env.sources)
    res, house, loc = np.asarray(state.resources), np.asarray(state.house), np.asarray(state.loc)
    cols = colours(env.N)
    base = np.empty((h, w, 3), np.uint8)
    base[:] = _LAND
    base[water] = _WATER
    for q in range(2):
        base[sources[q]] = _SOURCE[q]
    owned = house >= 0
    base[owned] = cols[house[owned]]
    img = np.repeat(np.repeat(base, tile, 0), tile, 1)
    yy, xx = np.mgrid[:tile, :tile] - (tile - 1) / 2
    dot = yy**2 + xx**2 <= (tile / 5) ** 2
    disk, rim = yy**2 + xx**2 <= (tile / 2.4) ** 2, yy**2 + xx**2 <= (tile / 2) ** 2
    for q in range(2):
        for r, c in zip(*np.nonzero(res[q])):
            img[r * tile:(r + 1) * tile, c * tile:(c + 1) * tile][dot] = _UNIT[q]
    for i, (r, c) in enumerate(loc):
        cell = img[r * tile:(r + 1) * tile, c * tile:(c + 1) * tile]
        cell[rim] = (255, 255, 255)
        cell[disk] = cols[i]
    return img

"""Host-side pictures of Overcooked states and GIF export (numpy + Pillow).

Floor is light grey, counters brown, serving windows green; onion piles show onions,
dish piles a stack of dishes, pots a dark basin with their onions (yellow dots), a red
bar for the cooking time left and an orange soup once ready. Cook 0 is blue, cook 1
red; the white notch points where a cook faces and what it holds is drawn on it
(onion: yellow, dish: white, soup: white with an orange centre).
"""

from __future__ import annotations

import numpy as np

from jaxagents_environments.games.overcooked.layouts import COUNTER, DISH_PILE, FLOOR, ONION_PILE, POT, SERVE, Layout
from jaxagents_environments.games.overcooked.obs import DISH, NOTHING, ONION, SOUP_BASE

_TILE_COLOURS = {
    FLOOR: (225, 225, 225),
    COUNTER: (165, 120, 75),
    ONION_PILE: (165, 120, 75),
    DISH_PILE: (165, 120, 75),
    POT: (165, 120, 75),
    SERVE: (90, 170, 90),
}
_COOKS = ((40, 90, 220), (215, 55, 45))
_ONION, _DISH, _SOUP, _POT = (235, 200, 40), (250, 250, 250), (235, 125, 30), (60, 60, 60)
_DIR_STEPS = ((-1, 0), (1, 0), (0, 1), (0, -1))


def _disk(img, cy, cx, r, colour):
    h, w = img.shape[:2]
    yy, xx = np.ogrid[:h, :w]
    img[(yy - cy) ** 2 + (xx - cx) ** 2 <= r * r] = colour


def _rect(img, y0, x0, y1, x1, colour):
    img[max(y0, 0) : max(y1, 0), max(x0, 0) : max(x1, 0)] = colour


def _item(img, cy, cx, r, item):
    if item == ONION:
        _disk(img, cy, cx, r, _ONION)
    elif item == DISH:
        _disk(img, cy, cx, r, (150, 150, 150))
        _disk(img, cy, cx, r - max(1, r // 4), _DISH)
    elif item > SOUP_BASE:
        _disk(img, cy, cx, r, _DISH)
        _disk(img, cy, cx, max(1, (r * (item - SOUP_BASE)) // 4), _SOUP)


def render_state(layout: Layout, state, tile: int = 32) -> np.ndarray:
    """An RGB picture ``uint8[H*tile, W*tile, 3]`` of one unbatched ``OvercookedState``."""
    if tile < 8:
        raise ValueError(f"tile must be >= 8 pixels, got {tile}")
    s = {k: np.asarray(v) for k, v in vars(state).items()}
    h, w = layout.height, layout.width
    img = np.zeros((h * tile, w * tile, 3), np.uint8)
    kind = layout.kind
    pots = {int(c): p for p, c in enumerate(layout.cells(POT))}
    q = tile // 2
    for r in range(h):
        for c in range(w):
            cell = img[r * tile : (r + 1) * tile, c * tile : (c + 1) * tile]
            k = int(kind[r, c])
            cell[:] = _TILE_COLOURS[k]
            cell[:, -1] = cell[-1, :] = (120, 120, 120)  # grid lines
            if k == ONION_PILE:
                for dy, dx in ((-1, -1), (-1, 1), (1, 0)):
                    _disk(cell, q + dy * tile // 6, q + dx * tile // 6, tile // 7, _ONION)
            elif k == DISH_PILE:
                for dy in (tile // 6, 0, -tile // 6):
                    _disk(cell, q + dy, q, tile // 3, (150, 150, 150))
                    _disk(cell, q + dy, q, tile // 3 - 2, _DISH)
            elif k == SERVE:
                _rect(cell, tile // 4, tile // 4, 3 * tile // 4, 3 * tile // 4, (150, 215, 150))
            elif k == POT:
                p = pots[r * w + c]
                onions, timer = int(s["pot_onions"][p]), int(s["pot_timer"][p])
                _rect(cell, tile // 6, tile // 6, tile - tile // 6, tile - tile // 6, _POT)
                if timer == 0:
                    _disk(cell, q, q, tile // 4, _SOUP)
                for i in range(onions if timer != 0 else 0):
                    _disk(cell, q, tile // 4 + i * tile // 4, tile // 10 + 1, _ONION)
                if timer > 0:  # cooking: a bar of the steps left, 20 steps = full width
                    length = min(timer, 20) * (tile - tile // 3) // 20
                    _rect(cell, tile - tile // 6 - 3, tile // 6, tile - tile // 6, tile // 6 + length, (220, 40, 40))
            item = int(s["items"][r * w + c])
            if k == COUNTER and item != NOTHING:
                _item(cell, q, q, tile // 4, item)
    for i in range(2):
        pos, d = int(s["pos"][i]), int(s["dir"][i])
        r, c = divmod(pos, w)
        cell = img[r * tile : (r + 1) * tile, c * tile : (c + 1) * tile]
        _disk(cell, q, q, tile // 2 - 2, _COOKS[i])
        dy, dx = _DIR_STEPS[d]
        _disk(cell, q + dy * (tile // 3), q + dx * (tile // 3), max(2, tile // 10), (255, 255, 255))
        _item(cell, q, q, tile // 5, int(s["held"][i]))
    return img


def save_gif(frames, path, fps: float = 8.0) -> None:
    """Write RGB frames (``uint8[T, H, W, 3]`` or a list of ``uint8[H, W, 3]``) to an
    animated GIF at ``path`` (Pillow)."""
    from PIL import Image

    frames = [np.asarray(f, np.uint8) for f in frames]
    if not frames:
        raise ValueError("save_gif needs at least one frame")
    if any(f.ndim != 3 or f.shape[-1] != 3 or f.shape != frames[0].shape for f in frames):
        shapes = sorted({f.shape for f in frames})
        raise ValueError(f"frames must all be uint8[H, W, 3] of one size, got shapes {shapes}")
    if fps <= 0:
        raise ValueError(f"fps must be > 0, got {fps}")
    images = [Image.fromarray(f) for f in frames]
    images[0].save(path, save_all=True, append_images=images[1:], duration=int(round(1000 / fps)), loop=0)

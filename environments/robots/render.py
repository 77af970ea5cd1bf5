"""Host-side pictures of the arena (numpy rasterisation) and GIF export.

The arena is light grey with a dark border, ``scale`` pixels per metre (150: a 480 x 300
frame). Robots are disks of their body radius in their role's colour (navigation: the
colour of their goal) with a white line from the centre along the heading. Scenarios add
their objects under the robots (``draw_task``) and labels over them (``draw_overlay``)
with the ``Canvas`` primitives, all in arena metres.
"""

from __future__ import annotations

import colorsys

import numpy as np

from jaxagents_environments.games.overcooked.render import save_gif  # the shared GIF writer (Pillow)
from jaxagents_environments.robots.arena import ARENA_HEIGHT, ARENA_WIDTH, X_MIN, Y_MAX

__all__ = ["Canvas", "render_arena", "save_gif", "goal_colours", "ROLE_COLOURS"]

ROLE_COLOURS = ((40, 90, 220), (215, 55, 45), (40, 160, 80), (160, 80, 200))
BACKGROUND, BORDER = (232, 232, 232), (60, 60, 60)


def goal_colours(n: int) -> np.ndarray:
    """``uint8[n, 3]`` well separated hues (robot ``i`` and its goal share colour ``i``)."""
    return np.array([[int(255 * c) for c in colorsys.hsv_to_rgb(i / max(n, 1), 0.75, 0.85)] for i in range(n)],
                    np.uint8).reshape(n, 3)


class Canvas:
    """An RGB image of the arena with drawing primitives in metres."""

    def __init__(self, scale: float):
        if not scale > 0:
            raise ValueError(f"scale must be > 0 pixels per metre, got {scale}")
        self.scale = float(scale)
        h, w = int(round(ARENA_HEIGHT * scale)), int(round(ARENA_WIDTH * scale))
        self.img = np.empty((h, w, 3), np.uint8)
        self.img[:] = BACKGROUND
        b = max(1, int(scale // 75))
        self.img[:b], self.img[-b:], self.img[:, :b], self.img[:, -b:] = BORDER, BORDER, BORDER, BORDER

    def _px(self, x, y):
        return (float(x) - X_MIN) * self.scale, (Y_MAX - float(y)) * self.scale  # column, row

    def _window(self, cx, cy, reach):
        h, w = self.img.shape[:2]
        c0, c1 = max(int(cx - reach) - 1, 0), min(int(cx + reach) + 2, w)
        r0, r1 = max(int(cy - reach) - 1, 0), min(int(cy + reach) + 2, h)
        rows, cols = np.ogrid[r0:r1, c0:c1]
        return (slice(r0, r1), slice(c0, c1)), rows + 0.5, cols + 0.5

    def disk(self, x, y, radius, colour):
        cx, cy = self._px(x, y)
        rp = radius * self.scale
        win, rows, cols = self._window(cx, cy, rp)
        self.img[win][(rows - cy) ** 2 + (cols - cx) ** 2 <= rp * rp] = colour

    def ring(self, x, y, radius, width, colour):
        """A circle outline ``width`` pixels wide."""
        cx, cy = self._px(x, y)
        rp = radius * self.scale
        win, rows, cols = self._window(cx, cy, rp + width)
        d = np.sqrt((rows - cy) ** 2 + (cols - cx) ** 2)
        self.img[win][np.abs(d - rp) <= width / 2] = colour

    def line(self, x0, y0, x1, y1, width, colour):
        a, b = np.array(self._px(x0, y0)), np.array(self._px(x1, y1))
        reach = np.linalg.norm(b - a) / 2 + width
        mid = (a + b) / 2
        win, rows, cols = self._window(mid[0], mid[1], reach)
        ab = b - a
        t = np.clip(((cols - a[0]) * ab[0] + (rows - a[1]) * ab[1]) / max(ab @ ab, 1e-9), 0, 1)
        d2 = (cols - a[0] - t * ab[0]) ** 2 + (rows - a[1] - t * ab[1]) ** 2
        self.img[win][d2 <= (width / 2) ** 2] = colour

    def pips(self, x, y, count, colour):
        """``count`` small dots in a row centred on ``(x, y)`` (levels)."""
        gap = 0.03
        for k in range(count):
            self.disk(x + (k - (count - 1) / 2) * gap, y, 0.011, colour)


def render_arena(env, state, params, scale: float = 150.0) -> np.ndarray:
    """``uint8[H, W, 3]`` picture of one unbatched state of a ``RobotScenario``."""
    pose = np.asarray(state.pose)
    if pose.ndim != 2:
        raise ValueError(f"render takes one unbatched state (pose f32[N, 3]), got pose of shape {pose.shape}")
    canvas = Canvas(scale)
    env.draw_task(canvas, state, params)
    radius = np.asarray(params.arena.radius)
    colours = env.robot_colours(state, params)
    width = max(1, int(scale // 60))
    for (x, y, th), r, col in zip(pose, radius, colours):
        canvas.disk(x, y, r, (30, 30, 30))
        canvas.disk(x, y, r * 0.85, tuple(int(c) for c in col))
        canvas.line(x, y, x + r * np.cos(th), y + r * np.sin(th), width, (255, 255, 255))
    env.draw_overlay(canvas, state, params)
    return canvas.img

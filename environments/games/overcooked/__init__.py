"""Overcooked (Carroll et al. 2019) for jaxagents: two cooks, onion soup.

``Overcooked(layout="cramped_room")`` — the rules are in ``env.py``, the kitchens and
the ASCII layout format in ``layouts.py``, the 26-channel observation in ``obs.py``,
the RGB renderer and GIF export in ``render.py``.
"""

from jaxagents_environments.games.overcooked.env import ACTION_NAMES, Overcooked, OvercookedParams, OvercookedState
from jaxagents_environments.games.overcooked.layouts import CLASSIC_LAYOUTS, Layout, get_layout, parse_layout
from jaxagents_environments.games.overcooked.obs import CHANNELS
from jaxagents_environments.games.overcooked.render import render_state, save_gif

__all__ = [
    "Overcooked", "OvercookedParams", "OvercookedState", "ACTION_NAMES", "CHANNELS",
    "CLASSIC_LAYOUTS", "Layout", "get_layout", "parse_layout", "render_state", "save_gif",
]

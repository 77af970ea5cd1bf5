"""Overcooked kitchens: the five classic layouts and a parser for ASCII layouts.

A layout is a rectangle of characters, one row per line, using the characters of
overcooked-ai's ``.layout`` files:

====  =====================================================================
char  tile
====  =====================================================================
`` `` floor (the only tile cooks walk on)
``X``  counter (cooks can put any item down on an empty counter and pick it up)
``O``  onion pile (an endless supply of onions)
``D``  dish pile (an endless supply of empty dishes, i.e. plates)
``P``  pot (takes up to 3 onions and cooks them into a soup)
``S``  serving window (deliver a soup here)
``1``  floor, where cook 0 starts (with fixed starts)
``2``  floor, where cook 1 starts (with fixed starts)
====  =====================================================================

Rules for a valid layout (``parse_layout`` raises ``ValueError`` saying which one
failed): all rows have the same width (after the leading and trailing blank lines and
the common indentation are removed); only the characters above (tomato piles ``T``
are not supported); at least one pot, onion pile, dish pile and serving window; at
least two floor cells; start markers either both absent (the layout then needs
``params.random_start=True``) or ``1`` and ``2`` exactly once each. The grid edge
behaves like a wall: cooks cannot leave the grid, and interacting with the outside
does nothing.

The classic layouts (Carroll et al. 2019) are overcooked-ai's grids, start positions
included. ``counter_circuit`` is the onion-only ``counter_circuit_o_1order`` (the one
JaxMARL and the 2019 paper use). JaxMARL's copies have the same tiles but other
start cells for ``cramped_room``, ``asymmetric_advantages`` and ``counter_circuit``
(and swap the two cooks in ``forced_coordination``); JaxMARL also draws the start
orientation at random, we face both cooks up (north) as overcooked-ai does.
"""

from __future__ import annotations

import dataclasses
import difflib

import numpy as np

# Static tile kinds (``Layout.kind``).
FLOOR, COUNTER, ONION_PILE, DISH_PILE, POT, SERVE = range(6)
TILE_NAMES = ("floor", "counter", "onion_pile", "dish_pile", "pot", "serve")
CHAR_TO_KIND = {" ": FLOOR, "X": COUNTER, "O": ONION_PILE, "D": DISH_PILE, "P": POT, "S": SERVE, "1": FLOOR, "2": FLOOR}

CLASSIC_LAYOUTS: dict[str, str] = {
    "cramped_room": """
XXPXX
O  2O
X1  X
XDXSX
""",
    "asymmetric_advantages": """
XXXXXXXXX
O XSXOX S
X   P 1 X
X2  P   X
XXXDXDXXX
""",
    "coordination_ring": """
XXXPX
X 1 P
D2X X
O   X
XOSXX
""",
    "forced_coordination": """
XXXPX
O X1P
O2X X
D X X
XXXSX
""",
    "counter_circuit": """
XXXPPXXX
X  2   X
D XXXX S
X  1   X
XXXOOXXX
""",
}


@dataclasses.dataclass(frozen=True, eq=False)
class Layout:
    """A parsed kitchen.

    Attributes:
        name: the classic name, or ``"custom"``.
        rows: the grid, one string per row (start markers kept).
        kind: ``int8[H, W]`` tile kinds (``FLOOR`` ... ``SERVE``).
        start: ``(cell_0, cell_1)`` flat start cells (``row * W + col``) of cooks 0
            and 1, or ``None`` when the layout has no start markers.
    """

    name: str
    rows: tuple[str, ...]
    kind: np.ndarray
    start: tuple[int, int] | None

    @property
    def height(self) -> int:
        return self.kind.shape[0]

    @property
    def width(self) -> int:
        return self.kind.shape[1]

    def cells(self, kind: int) -> np.ndarray:
        """Flat indices (row-major) of the cells of one tile kind, ``int32[k]``."""
        return np.flatnonzero(self.kind.reshape(-1) == kind).astype(np.int32)

    def __repr__(self):
        return f"Layout({self.name!r}, {self.height}x{self.width})"


def _rows(text: str) -> list[str]:
    lines = text.split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    # Remove the common indentation only: spaces are floor, so rows are not stripped.
    indent = min((len(l) - len(l.lstrip(" ")) for l in lines if l.strip()), default=0)
    return [l[indent:] for l in lines]


def parse_layout(text: str, name: str = "custom") -> Layout:
    """Parse an ASCII layout (characters and rules in the module docstring).

    Raises:
        ValueError: naming the rule the layout breaks.
    """
    if not isinstance(text, str):
        raise TypeError(f"layout must be a string, got {type(text).__name__}")
    rows = _rows(text.replace("\r", ""))
    if not rows:
        raise ValueError("layout is empty")
    widths = sorted({len(r) for r in rows})
    if len(widths) > 1:
        detail = ", ".join(f"row {i}: {len(r)}" for i, r in enumerate(rows))
        raise ValueError(f"layout rows must all have the same width (ragged rows: {detail})")
    bad = sorted({c for r in rows for c in r} - set(CHAR_TO_KIND))
    if bad:
        hint = " (tomato piles are not supported)" if "T" in bad else ""
        raise ValueError(
            f"layout has unknown characters {bad}{hint}; allowed: ' ' floor, X counter, O onion pile, "
            "D dish pile, P pot, S serving window, 1 and 2 start cells"
        )
    kind = np.array([[CHAR_TO_KIND[c] for c in r] for r in rows], np.int8)
    flat = "".join(rows)
    needed = {POT: "pot 'P'", ONION_PILE: "onion pile 'O'", DISH_PILE: "dish pile 'D'", SERVE: "serving window 'S'"}
    for k, what in needed.items():
        if not np.any(kind == k):
            raise ValueError(f"layout needs at least one {what}")
    if np.sum(kind == FLOOR) < 2:
        raise ValueError(f"layout needs at least 2 floor cells for the two cooks, has {int(np.sum(kind == FLOOR))}")
    n1, n2 = flat.count("1"), flat.count("2")
    if n1 == n2 == 0:
        start = None
    elif n1 == n2 == 1:
        start = (flat.index("1"), flat.index("2"))
    else:
        raise ValueError(
            f"layout must mark exactly one '1' and one '2' start cell (or none, for random starts); "
            f"found {n1} '1' and {n2} '2'"
        )
    return Layout(name=name, rows=tuple(rows), kind=kind, start=start)


def get_layout(layout: str | Layout) -> Layout:
    """A classic layout by name, an ASCII layout (a string with a newline), or a
    ``Layout`` passed through."""
    if isinstance(layout, Layout):
        return layout
    if not isinstance(layout, str):
        raise TypeError(f"layout must be a layout name, an ASCII grid or a Layout, got {type(layout).__name__}")
    if "\n" in layout:
        return parse_layout(layout)
    if layout not in CLASSIC_LAYOUTS:
        close = difflib.get_close_matches(layout, list(CLASSIC_LAYOUTS), n=1, cutoff=0.3)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(
            f"layout must be one of {sorted(CLASSIC_LAYOUTS)} or an ASCII grid with one row per line, "
            f"got {layout!r}{hint}"
        )
    return parse_layout(CLASSIC_LAYOUTS[layout], name=layout)

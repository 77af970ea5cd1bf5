"""Maps of the gather-trade-build economy: ASCII layouts, the AI Economist's quadrant
map, maps generated for many citizens, and the ranked starting corners.

A layout is a grid of characters, one row per line (or rows separated by ``;``, as
the AI Economist's map files are): ``W`` a wood source tile, ``S`` a stone source
tile, ``@`` water (nobody walks there), anything else open land. Source tiles start
with one unit of their resource and regrow it after it is gathered (see
``dynamics.regrow``); they are *source blocks* that no house can be built on.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

STONE, WOOD = 0, 1  # resource indices: the AI Economist's alphabetical order (Coin, Stone, Wood)
RESOURCES = ("stone", "wood")

# The 25x25 map of the AI Economist's `layout_from_file/simple_wood_and_stone` scenario
# (`quadrant_25x25_20each_30clump`): four quadrants split by water with gaps, wood
# clumps in the top half, stone on the left. Transcribed as data.
QUADRANT_25X25 = """\
WWWWW  W    @ W          
WW W        @ W      W WW
 W          @         W W
SW S S      @            
            @   W      W 
 SS                      
 S                       
                         
                         
S      S    @            
            @            
            @            
@@@@@    @@@@@@@    @@@@@
 S          @            
S S         @            
   S        @            
SS                       
 SS                      
SS                       
  S                      
            @            
            @            
            @            
            @            
S           @            """

LAYOUTS = {"quadrant_25x25": QUADRANT_25X25}


@dataclasses.dataclass(frozen=True)
class Layout:
    """A parsed map (host numpy, static).

    Attributes:
        sources: ``bool[2, H, W]`` source tiles of stone (0) and wood (1).
        water: ``bool[H, W]``.
    """

    sources: np.ndarray
    water: np.ndarray

    @property
    def height(self) -> int:
        return int(self.water.shape[0])

    @property
    def width(self) -> int:
        return int(self.water.shape[1])

    @property
    def open_cells(self) -> int:
        """Tiles a citizen may stand on at reset (land, sources included)."""
        return int(np.sum(~self.water))


def parse(text: str) -> Layout:
    """Parse an ASCII map (see the module docstring); rows are right-padded with land."""
    if not isinstance(text, str):
        raise TypeError(f"layout must be a str (an ASCII map or one of {sorted(LAYOUTS)}), got {type(text).__name__}")
    rows = text.split(";") if ";" in text and "\n" not in text.strip("\n") else text.split("\n")
    rows = [r for r in rows if r != ""]
    if not rows:
        raise ValueError("layout is empty: give at least one row of 'W', 'S', '@' or ' '")
    w = max(len(r) for r in rows)
    grid = np.array([list(r.ljust(w)) for r in rows])
    bad = sorted(set(np.unique(grid)) - set("WS@ ."))
    if bad:
        raise ValueError(f"layout has unknown characters {bad}; allowed: 'W' wood, 'S' stone, '@' water, ' ' or '.' land")
    sources = np.stack([grid == "S", grid == "W"])
    return Layout(sources=sources, water=grid == "@")


def tiled(layout: Layout, reps_r: int, reps_c: int) -> Layout:
    """The layout repeated ``reps_r x reps_c`` times (same density of resources per area)."""
    return Layout(sources=np.tile(layout.sources, (1, reps_r, reps_c)), water=np.tile(layout.water, (reps_r, reps_c)))


def for_citizens(num_citizens: int, base: Layout | None = None, per_tile: int = 4) -> Layout:
    """A generated map for many citizens: the quadrant map tiled so that every copy holds
    about ``per_tile`` citizens (the AI Economist's density: 4 on 25x25). 1,000 citizens
    get a 16x16 tiling (400x400)."""
    base = parse(QUADRANT_25X25) if base is None else base
    copies = max(1, math.ceil(num_citizens / per_tile))
    reps = math.ceil(math.sqrt(copies))
    return tiled(base, reps, reps)


def resolve(layout, num_citizens: int) -> Layout:
    """``layout`` as given to the environment: a name in ``LAYOUTS``, ``"generated"``
    (``for_citizens``), an ASCII map, or a ``Layout``."""
    if isinstance(layout, Layout):
        return layout
    if layout == "generated":
        return for_citizens(num_citizens)
    if isinstance(layout, str) and layout in LAYOUTS:
        return parse(LAYOUTS[layout])
    if isinstance(layout, str) and ("\n" in layout or ";" in layout):
        return parse(layout)
    raise ValueError(f"layout must be one of {sorted(LAYOUTS) + ['generated']}, an ASCII map or a Layout, got {layout!r}")


def ranked_corners(num_citizens: int, height: int, width: int) -> np.ndarray:
    """``i32[N, 2]`` (row, col) starting tiles by skill rank (rank 0 the least skilled),
    as the AI Economist's ``fixed_four_skill_and_loc``: the ranks are split into four
    groups in order, starting at the top-right, bottom-left, top-left and bottom-right
    corners, each group filling a 4-wide block inwards row by row."""
    group = np.floor(np.arange(num_citizens) * (4 / num_citizens)).astype(int)
    corner = np.array([(0, width - 1), (height - 1, 0), (0, 0), (height - 1, width - 1)])
    step = np.array([(1, -1), (-1, 1), (1, 1), (-1, -1)])  # direction of rows, cols inwards
    pos = np.zeros(num_citizens, int)
    seen = np.zeros(4, int)
    for i, g in enumerate(group):  # host-side, once at construction
        pos[i] = seen[g]
        seen[g] += 1
    locs = corner[group] + step[group] * np.stack([pos // 4, pos % 4], -1)
    return locs.astype(np.int32)


def expected_ranked_multipliers(num_citizens: int, max_multiplier: float, shape: float = 4.0) -> np.ndarray:
    """``f64[N]`` the expected build-payment multipliers by rank, ascending: the mean of
    the k-th smallest of ``N`` draws of ``min(M, (M - 1) X + 1)`` with ``X`` Lomax
    (numpy's ``pareto``) of shape ``shape``. The AI Economist estimates these by Monte
    Carlo (1e5 draws); here by quadrature of the order statistics' densities, so they
    are exact to ~1e-6 and need no random state."""
    from scipy import special  # construction time only

    m = float(max_multiplier)
    # multiplier y in [1, M]; F(y) = 1 - (1 + (y - 1)/(M - 1))^-a below M, an atom at M.
    if m <= 1.0:
        return np.ones(num_citizens)
    y = np.linspace(1.0, m, 20001)
    cdf = 1.0 - (1.0 + (y - 1.0) / (m - 1.0)) ** (-shape)
    n = num_citizens
    ks = np.arange(1, n + 1)
    # E[Y_(k)] = 1 + int_1^M P(Y_(k) > y) dy, P(Y_(k) > y) = P(Binom(n, F(y)) < k)
    surv = special.betainc(ks[:, None], n - ks[:, None] + 1, cdf[None, :])  # P(Y_(k) <= y)
    integrand = 1.0 - surv
    dy = np.diff(y)
    return 1.0 + np.sum(0.5 * (integrand[:, 1:] + integrand[:, :-1]) * dy, axis=1)

"""Robotic warehouse (RWARE) on a grid, with the rules of ``rware`` 2.0.0.

(Just over 400 lines: movement conflicts, shelf pick-up and delivery are one step,
checked step for step against ``rware``; the move resolution already lives in
``grid_rware_moves.py``.)

Rules (Papoudakis et al. 2021; ``rware.warehouse.Warehouse``, checked step for step
against it in ``tests/environments/robots/test_grid_rware.py``). Robots move on a
warehouse floor of shelf blocks separated by corridors ("highways"); the goal cells
are on the bottom row. A queue of ``request_queue_size`` shelves is requested; a robot
that brings a requested shelf onto a goal delivers it, and a uniformly random shelf
not in the queue takes its place. Actions (the reference's ids): 0 noop, 1 forward,
2 turn left, 3 turn right, 4 toggle load; directions 0 up, 1 down, 2 left, 3 right.
Each step:

1. A forward move targets the next cell (clipped to the grid). A loaded robot whose
   target holds a shelf not carried by a robot there cancels its move.
2. Conflicts are resolved as in the reference (``grid_rware_moves.py``): per weakly
   connected component of the cell graph, the agents on a cycle move (not a 2-cycle:
   robots cannot swap), or else the agents on the longest chain into the free cell.
   The reference breaks ties between equally long chains by networkx's and CPython's
   set order; we give them to the lower agent index, or to a random order with
   ``params.random_tie_break``.
3. Turns rotate; toggle load picks up the shelf under an unloaded robot, or puts the
   carried shelf down if the robot is not on a highway. A carried shelf moves with
   its robot.
4. For each goal in order: a requested shelf on it is delivered and replaced in its
   queue slot (sequential, as in the reference, because a replacement may request the
   shelf on the next goal: a ``lax.scan`` over the goals, O(shelves) each).

Rewards (``params.reward_type``): 0 global (+1 to every robot per delivery), 1
individual (+1 to the deliverer; the default), 2 two-stage (+0.5 for the delivery and
+0.5 when that robot next puts a shelf down off the highway). The episode is
*truncated* after ``params.horizon`` steps (the reference's ``max_steps``) or after
``params.max_inactivity_steps`` steps without a delivery (0: never); it never
terminates (the reference reports both as ``done``). Out-of-range action ids act as
noop and are flagged in ``info["illegal_action"]``; there are no other invalid
actions, so ``action_mask`` is all True (the reference has no valid-action notion).

Reset: robots on distinct uniformly random cells (shelf cells included) facing
uniformly random directions; the queue is a uniformly random set of distinct shelves.

Layout: ``shelf_columns`` (odd) x ``shelf_rows`` blocks of two shelf columns of
``column_height`` cells, as in the reference (grid ``(column_height + 1) * shelf_rows + 2``
rows by ``3 * shelf_columns + 1`` columns, the middle bottom queue cleared), or a
``layout`` string (``x`` shelf, ``.`` corridor, ``g`` goal).

Observations (``obs_type``), both identical to the reference's (tested):

* ``"vector"`` (the reference's FLATTENED, ``f32[8 + 7 (2r+1)^2]``, 71 for ``r = 1``):
  own ``x, y`` (divided by ``W - 1, H - 1`` with ``params.normalised_coordinates``),
  carrying, direction one-hot, on-highway; then for each cell of the ``(2r+1)^2``
  window in row-major order: has-robot, the robot's direction one-hot (``1,0,0,0``
  when empty, as the reference writes it), has-shelf, shelf-requested.
* ``"image"`` (``f32[C, 2r+1, 2r+1]``): the window of the ``image_layers``
  (default the reference's shelves, requests, agents, goals, accessible), rotated to
  the robot's heading with ``image_directional``. The reference writes the
  ``agent_direction`` and ``agent_load`` layers transposed (``layer[x, y]``); we write
  them where the robots are.

Not modelled: communication bits (``msg_bits``; 0 in every registered reference id)
and the dict observations. ``global_obs``: ``f32[9, H, W]`` shelves, requests, robots,
loaded robots, robot direction one-hot (4), goals. ``info``: ``illegal_action``
``bool[n]``, ``deliveries`` ``i32[]`` this step, ``new_requests`` ``i32[goals]`` the shelf
requested in place of the one delivered at each goal (-1: no delivery there).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxagents.core import Box, Discrete, Env, Role
from jaxagents.core.validate import check_bool
from jaxagents_environments.robots.grid_rware_moves import resolve_moves
from jaxagents.core import threefry as rng  # jax.random's numbers as one fused kernel

NOOP, FORWARD, LEFT, RIGHT, TOGGLE_LOAD = range(5)
UP, DOWN, LEFT_DIR, RIGHT_DIR = range(4)
GLOBAL, INDIVIDUAL, TWO_STAGE = range(3)
DIR_STEPS = np.array([[0, -1], [0, 1], [-1, 0], [1, 0]], np.int32)  # (dx, dy) per direction
TURN_LEFT = np.array([LEFT_DIR, RIGHT_DIR, DOWN, UP], np.int32)
TURN_RIGHT = np.array([RIGHT_DIR, LEFT_DIR, UP, DOWN], np.int32)
IMAGE_LAYERS = ("shelves", "requests", "agents", "agent_direction", "agent_load", "goals", "accessible")
DEFAULT_IMAGE_LAYERS = ("shelves", "requests", "agents", "goals", "accessible")
REWARD_TYPES = {"global": GLOBAL, "individual": INDIVIDUAL, "two_stage": TWO_STAGE}


def make_layout(shelf_columns: int, column_height: int, shelf_rows: int) -> tuple[np.ndarray, list]:
    """The reference's parametric layout: ``(highway bool[H, W], goals [(x, y)])``."""
    h, w = (column_height + 1) * shelf_rows + 2, 3 * shelf_columns + 1
    y, x = np.indices((h, w))
    queue = (y > h - (column_height + 3)) & ((x == w // 2 - 1) | (x == w // 2))
    highway = (x % 3 == 0) | (y % (column_height + 1) == 0) | (y == h - 1) | queue
    return highway, [(w // 2 - 1, h - 1), (w // 2, h - 1)]


def parse_layout(layout: str) -> tuple[np.ndarray, list]:
    """A layout string (``x`` shelf, ``.`` corridor, ``g`` goal; spaces ignored)."""
    lines = layout.strip().replace(" ", "").split("\n")
    if any(len(line) != len(lines[0]) for line in lines) or not lines[0]:
        raise ValueError("layout must be a non-empty rectangle of 'x', '.' and 'g'")
    chars = np.array([list(line.lower()) for line in lines])
    if not np.isin(chars, ["x", ".", "g"]).all():
        raise ValueError(f"layout may only contain 'x', '.' and 'g', got {sorted(set(chars.ravel()) - set('x.g'))}")
    gy, gx = np.nonzero(chars == "g")
    if gy.size == 0:
        raise ValueError("layout needs at least one goal 'g'")
    return chars != "x", list(zip(gx.tolist(), gy.tolist()))


@struct.dataclass
class RWAREParams:
    """Sweepable settings of ``RobotWarehouse``.

    Attributes:
        horizon: ``i32`` steps before truncation (the reference's ``max_steps``);
            >= 0, 0 for no limit.
        max_inactivity_steps: ``i32`` steps in a row without a delivery before
            truncation; >= 0, 0 for no limit.
        reward_type: ``i32`` in [0, 2]: 0 global (every robot +1 per delivery),
            1 individual (+1 to the deliverer), 2 two-stage (+0.5 for the delivery,
            +0.5 when that robot next puts a shelf down off the highway).
        normalised_coordinates: ``bool`` the vector observation's own ``x, y`` divided
            by ``W - 1, H - 1`` (else in cells).
        random_tie_break: ``bool`` equally long chains of robots claiming one cell: a
            random one wins (else the one with the lowest agent index).
    """

    horizon: jax.Array
    max_inactivity_steps: jax.Array
    reward_type: jax.Array
    normalised_coordinates: jax.Array
    random_tie_break: jax.Array


@struct.dataclass
class RWAREState:
    """Cells are flat indices ``y * W + x``.

    Attributes:
        pos: ``i32[n]`` robot cells; ``dir``: ``i32[n]`` headings.
        carrying: ``i32[n]`` carried shelf, -1 for none.
        has_delivered: ``bool[n]`` delivered since last putting a shelf down (two-stage).
        shelf_pos: ``i32[S]`` shelf cells (shelves in row-major order of their start cells).
        queue: ``i32[R]`` requested shelves (distinct).
        t, inactive: ``i32[]`` steps taken, steps since the last delivery.
    """

    pos: jax.Array
    dir: jax.Array
    carrying: jax.Array
    has_delivered: jax.Array
    shelf_pos: jax.Array
    queue: jax.Array
    t: jax.Array
    inactive: jax.Array


class RobotWarehouse(Env):
    """RWARE (see the module docstring). Defaults: ``rware-tiny-2ag-v2``.

    Args:
        num_agents: robots (>= 1, at most the number of cells).
        shelf_columns: shelf blocks across the parametric layout, each two shelf
            columns wide with a corridor between blocks (grid ``3 * shelf_columns + 1``
            columns); an odd int >= 1. Unused with ``layout``.
        column_height: shelf cells per shelf column of a block, i.e. the block's height
            (grid ``(column_height + 1) * shelf_rows + 2`` rows); an int >= 1. Unused
            with ``layout``.
        shelf_rows: rows of shelf blocks, separated by a corridor row; an int >= 1.
            Unused with ``layout``.
        layout: a layout string instead (``x`` shelf, ``.`` corridor, ``g`` goal).
        request_queue_size: requested shelves (1 .. shelves - 1); ``None``: ``num_agents``.
        sensor_range: observation radius (>= 0).
        obs_type: ``"vector"`` or ``"image"``.
        image_layers: the channels of the ``"image"`` observation, in order: a
            non-empty tuple of names from ``IMAGE_LAYERS`` (``shelves``, ``requests``,
            ``agents``, ``agent_direction``, ``agent_load``, ``goals``,
            ``accessible``). Unused with ``"vector"``.
        image_directional: ``bool``, rotate the ``"image"`` window to the robot's
            heading (else the grid's top stays up). Unused with ``"vector"``.
        horizon, max_inactivity_steps, reward_type, normalised_coordinates, random_tie_break:
            param defaults (``reward_type``: ``"global"``, ``"individual"`` or ``"two_stage"``).
    """

    def __init__(
        self,
        num_agents: int = 2,
        shelf_columns: int = 3,
        column_height: int = 8,
        shelf_rows: int = 1,
        layout: str | None = None,
        request_queue_size: int | None = None,
        sensor_range: int = 1,
        obs_type: str = "vector",
        image_layers: tuple[str, ...] = DEFAULT_IMAGE_LAYERS,
        image_directional: bool = True,
        horizon: int = 500,
        max_inactivity_steps: int = 0,
        reward_type: str = "individual",
        normalised_coordinates: bool = False,
        random_tie_break: bool = False,
    ):
        def positive(name, v, lo=1):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
                raise ValueError(f"{name} must be an int >= {lo}, got {v!r}")
            return int(v)

        if layout is None:
            positive("shelf_columns", shelf_columns)
            positive("column_height", column_height)
            positive("shelf_rows", shelf_rows)
            if shelf_columns % 2 != 1:
                raise ValueError(f"shelf_columns must be odd (the reference's layout), got {shelf_columns}")
            highway, goals = make_layout(shelf_columns, column_height, shelf_rows)
        else:
            highway, goals = parse_layout(layout)
        self.height, self.width = h, w = highway.shape
        self.highway = highway
        self.goals = np.array([y * w + x for x, y in goals], np.int32)
        self.shelf_cells = np.flatnonzero(~highway).astype(np.int32)
        s = self.num_shelves = len(self.shelf_cells)
        self.n = n = positive("num_agents", num_agents)
        if n > h * w:
            raise ValueError(f"num_agents must be at most the {h * w} cells, got {n}")
        r = self.queue_size = positive("request_queue_size", n if request_queue_size is None else request_queue_size)
        if r > s - 1:
            raise ValueError(f"request_queue_size must be in [1, {s - 1}] (shelves - 1: a delivery needs a "
                             f"replacement), got {r}")
        self.sensor_range = positive("sensor_range", sensor_range, 0)
        if obs_type not in ("vector", "image"):
            raise ValueError(f"obs_type must be 'vector' or 'image', got {obs_type!r}")
        bad = [x for x in image_layers if x not in IMAGE_LAYERS]
        if bad or not image_layers:
            raise ValueError(f"image_layers must be a non-empty tuple of {IMAGE_LAYERS}, got {image_layers!r}")
        if reward_type not in REWARD_TYPES:
            raise ValueError(f"reward_type must be one of {sorted(REWARD_TYPES)}, got {reward_type!r}")
        self.obs_type, self.image_layers = obs_type, tuple(image_layers)
        self.image_directional = check_bool("image_directional", image_directional)
        self._defaults = (positive("horizon", horizon, 0), positive("max_inactivity_steps", max_inactivity_steps, 0),
                          REWARD_TYPES[reward_type], check_bool("normalised_coordinates", normalised_coordinates),
                          check_bool("random_tie_break", random_tie_break))

        # Static tables: the forward cell of every (cell, direction), the window
        # offsets into the padded grid and the rotations of the window.
        y, x = np.divmod(np.arange(h * w), w)
        fx = np.clip(x[:, None] + DIR_STEPS[:, 0], 0, w - 1)
        fy = np.clip(y[:, None] + DIR_STEPS[:, 1], 0, h - 1)
        self._forward = (fy * w + fx).astype(np.int32)  # [HW, 4]
        k = 2 * self.sensor_range + 1
        self._wp = w + 2 * self.sensor_range  # padded width
        wy, wx = np.divmod(np.arange(k * k), k)
        self._window = (wy * self._wp + wx).astype(np.int32)  # offsets from the window's corner
        grid = np.arange(k * k).reshape(k, k)
        # image rotation per heading, as np.rot90(obs, k, axes=(1, 2)): up 0, down 2, left 3, right 1
        self._rot = np.stack([np.rot90(grid, kk).reshape(-1) for kk in (0, 2, 3, 1)]).astype(np.int32)

        if obs_type == "vector":
            high = np.ones(8 + 7 * k * k, np.float32)
            high[:2] = max(h, w, 2) - 1  # coordinates (<= 1 when normalised)
            obs_space = Box(0.0, high, high.shape, jnp.float32)
        else:
            high = np.ones((len(self.image_layers), k, k), np.float32)
            for i, name in enumerate(self.image_layers):
                if name == "agent_direction":
                    high[i] = 4.0
            obs_space = Box(0.0, high, high.shape, jnp.float32)
        self.roles = {"robot": Role(n, obs_space, Discrete(5), always_legal=True, always_active=True)}
        self.global_obs_shape = (9, h, w)

    # ------------------------------------------------------------------ params
    def default_params(self) -> RWAREParams:
        horizon, inactivity, reward_type, normalised, random_tie = self._defaults
        return RWAREParams(
            horizon=jnp.asarray(horizon, jnp.int32), max_inactivity_steps=jnp.asarray(inactivity, jnp.int32),
            reward_type=jnp.asarray(reward_type, jnp.int32), normalised_coordinates=jnp.asarray(normalised),
            random_tie_break=jnp.asarray(random_tie),
        )

    def check_params(self, params: RWAREParams) -> None:
        if np.any(params.horizon < 0):
            raise ValueError(f"params.horizon must be >= 0 (0: no limit), got {params.horizon}")
        if np.any(params.max_inactivity_steps < 0):
            raise ValueError(f"params.max_inactivity_steps must be >= 0 (0: no limit), "
                             f"got {params.max_inactivity_steps}")
        if np.any((params.reward_type < 0) | (params.reward_type > 2)):
            raise ValueError(f"params.reward_type must be in [0, 2] (global, individual, two-stage), "
                             f"got {params.reward_type}")

    # ------------------------------------------------------------------ reset
    def reset_env(self, key, params):
        n, hw = self.n, self.height * self.width
        # One draw of uniforms for everything (a single threefry call compiles fast):
        # the first n of a random order of the cells / shelves are distinct and uniform.
        u = rng.uniform(key, (hw + n + self.num_shelves,))
        state = RWAREState(
            pos=jnp.argsort(u[:hw])[:n].astype(jnp.int32),
            dir=jnp.minimum((u[hw:hw + n] * 4).astype(jnp.int32), 3),
            carrying=jnp.full((n,), -1, jnp.int32),
            has_delivered=jnp.zeros((n,), bool),
            shelf_pos=jnp.asarray(self.shelf_cells),
            queue=jnp.argsort(u[hw + n:])[:self.queue_size].astype(jnp.int32),
            t=jnp.zeros((), jnp.int32),
            inactive=jnp.zeros((), jnp.int32),
        )
        info = {"illegal_action": jnp.zeros((n,), bool), "deliveries": jnp.zeros((), jnp.int32),
                "new_requests": jnp.full((len(self.goals),), -1, jnp.int32)}
        return state, self.make_timestep(self.observe(state, params), info=info)

    # ------------------------------------------------------------------ step
    def step_env(self, key, state, actions, params):
        n, hw, s = self.n, self.height * self.width, self.num_shelves
        # one draw: a random agent order for ties, one uniform per goal for new requests
        u = rng.uniform(key, (n + len(self.goals),))
        raw = actions["robot"]
        legal = (raw >= 0) & (raw < 5)
        act = jnp.where(legal, raw, NOOP)
        agent_at = jnp.full(hw, -1, jnp.int32).at[state.pos].set(jnp.arange(n, dtype=jnp.int32))
        shelf_at = jnp.full(hw, -1, jnp.int32).at[state.shelf_pos].set(jnp.arange(s, dtype=jnp.int32))
        loaded = state.carrying >= 0

        # 1. targets; a loaded robot cannot enter a standing shelf's cell
        target = jnp.where(act == FORWARD, jnp.asarray(self._forward)[state.pos, state.dir], state.pos)
        occupant = agent_at[target]
        carried_there = (occupant >= 0) & loaded[jnp.maximum(occupant, 0)]
        cancel = loaded & (target != state.pos) & (shelf_at[target] >= 0) & ~carried_there
        target = jnp.where(cancel, state.pos, target)
        # 2. conflicts
        rank = jnp.where(params.random_tie_break, jnp.argsort(u[:n]), n - 1 - jnp.arange(n))
        pos = jnp.where(resolve_moves(state.pos, target, rank.astype(jnp.int32), hw), target, state.pos)
        # 3. turns and loads
        d = state.dir
        d = jnp.where(act == LEFT, jnp.asarray(TURN_LEFT)[d], jnp.where(act == RIGHT, jnp.asarray(TURN_RIGHT)[d], d))
        toggle = act == TOGGLE_LOAD
        under = shelf_at[state.pos]
        pick = toggle & ~loaded & (under >= 0)
        drop = toggle & loaded & ~jnp.asarray(self.highway).reshape(-1)[state.pos]
        carrying = jnp.where(pick, under, jnp.where(drop, -1, state.carrying))
        reward = jnp.where(drop & state.has_delivered & (params.reward_type == TWO_STAGE), 0.5, 0.0)
        has_delivered = state.has_delivered & ~drop
        shelf_pos = state.shelf_pos.at[jnp.where(carrying >= 0, carrying, s)].set(pos, mode="drop")

        # 4. deliveries, goal by goal
        shelf_at = jnp.full(hw, -1, jnp.int32).at[shelf_pos].set(jnp.arange(s, dtype=jnp.int32))
        agent_at = jnp.full(hw, -1, jnp.int32).at[pos].set(jnp.arange(n, dtype=jnp.int32))

        def deliver(carry, xs):
            queue, reward, has_delivered = carry
            goal, uk = xs
            shelf = shelf_at[goal]
            slot = jnp.argmax(queue == shelf)
            hit = (shelf >= 0) & jnp.any(queue == shelf)
            # a uniformly random shelf not in the queue: the k-th of the S - R free ones
            free = jnp.ones(s, bool).at[queue].set(False)
            kth = jnp.minimum((uk * (s - self.queue_size)).astype(jnp.int32), s - self.queue_size - 1)
            new = jnp.argmax(jnp.cumsum(free, dtype=jnp.int32) > kth).astype(jnp.int32)
            queue = jnp.where(hit, queue.at[slot].set(new), queue)
            who = jnp.arange(n) == agent_at[goal]
            rtype = params.reward_type
            gain = jnp.where(rtype == GLOBAL, 1.0, jnp.where(rtype == INDIVIDUAL, who * 1.0, who * 0.5))
            reward = reward + jnp.where(hit, gain, 0.0)
            has_delivered = has_delivered | (hit & who & (params.reward_type == TWO_STAGE))
            return (queue, reward, has_delivered), (hit, jnp.where(hit, new, -1))

        goals = jnp.asarray(self.goals)
        (queue, reward, has_delivered), (hits, new_requests) = jax.lax.scan(
            deliver, (state.queue, reward, has_delivered), (goals, u[n:]))
        delivered = jnp.any(hits)
        t = state.t + 1
        inactive = jnp.where(delivered, 0, state.inactive + 1)
        state = RWAREState(pos=pos, dir=d, carrying=carrying, has_delivered=has_delivered, shelf_pos=shelf_pos,
                           queue=queue, t=t, inactive=inactive)
        truncated = ((params.horizon > 0) & (t >= params.horizon)) | (
            (params.max_inactivity_steps > 0) & (inactive >= params.max_inactivity_steps))
        info = {"illegal_action": ~legal, "deliveries": jnp.sum(hits, dtype=jnp.int32), "new_requests": new_requests}
        obs = self.observe(state, params)
        return state, self.make_timestep(obs, reward={"robot": reward}, truncated=truncated, info=info)

    # ------------------------------------------------------------------ observations
    def observe(self, state: RWAREState, params: RWAREParams) -> dict:
        obs = self.vector_obs(state, params) if self.obs_type == "vector" else self.image_obs(state)
        return {"robot": obs}

    def _grids(self, state: RWAREState):
        """Padded (by the sensor range) per-cell agent index and shelf index, -1 for none."""
        hw, r = self.height * self.width, self.sensor_range
        agent_at = jnp.full(hw, -1, jnp.int32).at[state.pos].set(jnp.arange(self.n, dtype=jnp.int32))
        shelf_at = jnp.full(hw, -1, jnp.int32).at[state.shelf_pos].set(jnp.arange(self.num_shelves, dtype=jnp.int32))
        pad = lambda g: jnp.pad(g.reshape(self.height, self.width), r, constant_values=-1).reshape(-1)
        return pad(agent_at), pad(shelf_at)

    def _windows(self, state: RWAREState) -> jax.Array:
        """``i32[n, (2r+1)^2]`` flat indices into the padded grid of each robot's window."""
        y, x = jnp.divmod(state.pos, self.width)
        return (y * self._wp + x)[:, None] + jnp.asarray(self._window)[None]

    def requested(self, state: RWAREState) -> jax.Array:
        """``bool[S]``: the shelf is in the request queue."""
        return jnp.zeros(self.num_shelves, bool).at[state.queue].set(True)

    def vector_obs(self, state: RWAREState, params: RWAREParams) -> jax.Array:
        """``f32[n, 8 + 7 (2r+1)^2]``: the reference's flattened observation."""
        agents, shelves = self._grids(state)
        win = self._windows(state)
        a, sh = agents[win], shelves[win]  # [n, k*k]
        y, x = jnp.divmod(state.pos, self.width)
        extent = jnp.maximum(jnp.array([self.width - 1, self.height - 1]), 1)
        scale = jnp.where(params.normalised_coordinates, 1.0 / extent, 1.0)
        own = jnp.concatenate([
            jnp.stack([x, y], -1) * scale, (state.carrying >= 0)[:, None],
            jax.nn.one_hot(state.dir, 4), jnp.asarray(self.highway).reshape(-1)[state.pos][:, None],
        ], -1)
        cell = jnp.concatenate([
            (a >= 0)[..., None], jax.nn.one_hot(jnp.where(a >= 0, state.dir[jnp.maximum(a, 0)], 0), 4),
            (sh >= 0)[..., None], ((sh >= 0) & self.requested(state)[jnp.maximum(sh, 0)])[..., None],
        ], -1)
        return jnp.concatenate([own, cell.reshape(self.n, -1)], -1).astype(jnp.float32)

    def image_obs(self, state: RWAREState) -> jax.Array:
        """``f32[n, C, 2r+1, 2r+1]``: the reference's image observation."""
        agents, shelves = self._grids(state)
        win = self._windows(state)
        if self.image_directional:
            win = jnp.take_along_axis(win, jnp.asarray(self._rot)[state.dir], 1)
        a, sh = agents[win], shelves[win]
        inside = jnp.pad(jnp.ones((self.height, self.width), bool), self.sensor_range).reshape(-1)[win]
        goal_grid = jnp.zeros(self.height * self.width, bool).at[self.goals].set(True)
        goal = jnp.pad(goal_grid.reshape(self.height, self.width), self.sensor_range).reshape(-1)[win]
        ai = jnp.maximum(a, 0)
        layers = {
            "shelves": sh >= 0,
            "requests": (sh >= 0) & self.requested(state)[jnp.maximum(sh, 0)],
            "agents": a >= 0,
            "agent_direction": jnp.where(a >= 0, state.dir[ai] + 1, 0),
            "agent_load": (a >= 0) & (state.carrying[ai] >= 0),
            "goals": goal,
            "accessible": inside & (a < 0),
        }
        k = 2 * self.sensor_range + 1
        out = jnp.stack([layers[name] for name in self.image_layers], 1).astype(jnp.float32)
        return out.reshape(self.n, len(self.image_layers), k, k)

    def global_obs(self, state: RWAREState, params: RWAREParams | None = None) -> jax.Array:
        """``f32[9, H, W]``: shelves, requests, robots, loaded robots, heading one-hot, goals."""
        hw = self.height * self.width
        shelves = jnp.zeros(hw).at[state.shelf_pos].set(1.0)
        requests = jnp.zeros(hw).at[state.shelf_pos[state.queue]].set(1.0)
        robots = jnp.zeros(hw).at[state.pos].set(1.0)
        loaded = jnp.zeros(hw).at[state.pos].set((state.carrying >= 0) * 1.0)
        heading = jnp.zeros((4, hw)).at[state.dir, state.pos].set(1.0)
        goals = jnp.zeros(hw).at[self.goals].set(1.0)
        planes = jnp.concatenate([jnp.stack([shelves, requests, robots, loaded]), heading, goals[None]])
        return planes.reshape(9, self.height, self.width).astype(jnp.float32)

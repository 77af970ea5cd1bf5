"""Level-based foraging (LBF) on a grid, with the rules of ``lbforaging`` 2.0.0.

(Just over 400 lines: the rules below are one step -- loading order, level sums,
food removal, the observation -- checked step for step against ``lbforaging``;
splitting them would separate what the parity tests check together.)

Rules (Papoudakis et al. 2021; ``lbforaging.foraging.ForagingEnv``, checked step for
step against it in ``tests/environments/robots/test_grid_lbf.py``). Players with levels
and foods with levels lie on a ``rows x cols`` grid. Actions (the reference's ids):
0 none, 1 north (row - 1), 2 south (row + 1), 3 west (col - 1), 4 east (col + 1),
5 load. Each step:

1. *Validity.* A move is valid when the cell it leads to is inside the grid and holds
   no food (other players do not make a move invalid); load is valid when a food lies
   in one of the 4 neighbouring cells; none is always valid. An invalid action, or an
   out-of-range id, acts as none (the reference raises on out-of-range ids) and is
   flagged in ``info["illegal_action"]``. ``action_mask`` is exactly this validity.
2. *Movement.* Every player claims a target cell (its own for none/load). A cell
   claimed by two or more players is entered by nobody; a mover whose target is
   claimed by it alone moves. This is one scatter-add of claims per cell. As in the
   reference, players may swap cells, and a player can step onto the cell of a player
   who failed to move away (two players then share a cell until one leaves).
3. *Loading.* The loading players adjacent to a food form its group; the food is
   collected when the sum of their levels is at least its level. Each member then
   gets ``level_i * food_level`` (divided by ``group_level * food_spawned`` when
   ``params.normalize_reward``, ``food_spawned`` being the sum of all food levels at
   reset, so an episode's normalised rewards sum to 1 over agents when all food is
   eaten). A group that fails gets ``-params.penalty`` each. The reference processes
   loaders in set order; the spawn spacing below makes every cell adjacent to at most
   one food, so groups are disjoint and the order cannot matter (we compute them at
   once).
4. *End.* The episode *terminates* when no food is left and is *truncated* after
   ``params.horizon`` steps (the reference reports both as ``done``).

``params.shared_reward`` gives every player the team total (the sum of the individual
rewards, EPyMARL's ``common_reward`` with sum scalarisation).

Reset. Player levels: the per-player ``[min, max]`` ranges are shuffled over the
players, then each level is drawn uniformly in its range. Players start on distinct
uniformly random cells. Food levels: the per-food ranges are shuffled, each level is
uniform in ``[min, max]``; with ``params.auto_food_level`` (the reference's
``max_food_level=None``) the maximum is the sum of the three lowest player levels,
and with ``params.force_coop`` the minimum equals the maximum (an empty range, which
makes the reference raise, gives the maximum). Foods are placed one
after the other on interior cells (not on the border) holding no player, with no other
food in their 3x3 neighbourhood nor within 2 cells along their row or column. The
reference rejection-samples with 1000 attempts in all; we draw uniformly among the
valid cells (the limit of rejection sampling), and a food with no valid cell left is
not spawned. The reference also keeps the previous episode's player positions while it
re-places players, so later players avoid earlier episodes' cells; we do not.

Observations (``obs_type``):

* ``"vector"`` (the reference's default, ``f32[3 F + 3 n]``, or ``3 F + 2 n`` without
  ``observe_agent_levels``): for each food slot ``(row, col, level)`` of the visible
  foods in row-major order, then ``(-1, -1, 0)``; then the observer, then the other
  visible players in index order, ``(row, col[, level])``, then ``(-1, -1[, 0])``.
  Coordinates are relative to the observer's window origin ``max(pos - sight, 0)``
  (absolute when ``sight`` covers the grid). Foods are visible inside the window
  ``[max(pos - sight, 0), min(pos + sight + 1, size))``; players whose relative
  coordinates lie in ``[0, 2 sight]`` (the reference's test, which near the top/left
  border sees players farther than ``sight``).
* ``"grid"`` (``f32[3, 2 sight + 1, 2 sight + 1]``): the window centred on the
  observer of three layers: player levels (1 without levels; the highest index wins
  on a shared cell), food levels, and accessibility (0 outside the grid and on
  players and foods).

Both match the reference exactly (tested). ``global_obs`` (``f32[3 F + 3 n + 1]``):
every food ``(row, col, level)`` (``(-1, -1, 0)`` once eaten) in food order, every
player ``(row, col, level)`` in player order, and ``t / horizon``.

Roles: ``player``, ``num_agents`` agents, ``Discrete(6)``. ``info``:
``illegal_action`` ``bool[n]``, ``food_collected`` ``i32[]`` foods eaten this step.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxagents.core import Box, Discrete, Env, Role
from jaxagents.core.validate import check_bool
from jaxagents.core import threefry as rng  # jax.random's numbers as one fused kernel

NONE, NORTH, SOUTH, WEST, EAST, LOAD = range(6)
ACTION_NAMES = ("none", "north", "south", "west", "east", "load")
# (row, col) step of each action; none and load stay.
ACTION_STEPS = np.array([[0, 0], [-1, 0], [1, 0], [0, -1], [0, 1], [0, 0]], np.int32)


@struct.dataclass
class LBFParams:
    """Sweepable settings. Level arrays are per player (``[n]``) or per food slot (``[F]``).

    Attributes:
        min_player_level: ``i32[n]`` lowest level of each player's range; at reset the
            ranges are shuffled over the players and each level is drawn uniformly in
            its range. In [1, ``Lp``], ``Lp`` the largest constructor
            ``max_player_level`` (the observation space's bound), and
            <= ``max_player_level``.
        max_player_level: ``i32[n]`` highest level of each player's range, in
            [1, ``Lp``]; with ``auto_food_level`` its three lowest entries must sum
            to at most the food level bound ``Lf`` (see ``min_food_level``).
        min_food_level: ``i32[F]`` lowest level of each food slot's range (shuffled over
            the foods at reset, then drawn uniformly). In [1, ``Lf``], ``Lf`` the
            largest food level the constructor's arguments allow (its
            ``min_food_level`` / ``max_food_level``, or with ``max_food_level=None``
            the sum of the three lowest ``max_player_level``), and
            <= ``max_food_level`` unless ``auto_food_level``.
        max_food_level: ``i32[F]`` highest level of each food slot's range, in
            [1, ``Lf``]; ignored when ``auto_food_level``.
        auto_food_level: ``bool`` food maximum = sum of the three lowest player levels.
        force_coop: ``bool`` every food gets its maximum level.
        normalize_reward: ``bool`` divide by ``group_level * food_spawned``.
        penalty: ``f32`` paid by each member of a group that fails to load (>= 0).
        shared_reward: ``bool`` every player gets the sum of all players' rewards.
        horizon: ``i32`` steps before truncation (the reference's ``max_episode_steps``).
    """

    min_player_level: jax.Array
    max_player_level: jax.Array
    min_food_level: jax.Array
    max_food_level: jax.Array
    auto_food_level: jax.Array
    force_coop: jax.Array
    normalize_reward: jax.Array
    penalty: jax.Array
    shared_reward: jax.Array
    horizon: jax.Array


@struct.dataclass
class LBFState:
    """Attributes:
        pos: ``i32[n, 2]`` player (row, col).
        level: ``i32[n]`` player levels.
        food_pos: ``i32[F, 2]`` food (row, col) (meaningless where ``food_level == 0``).
        food_level: ``i32[F]`` food levels, 0 once eaten or when never spawned.
        food_spawned: ``f32[]`` sum of the food levels at reset.
        t: ``i32[]`` steps taken.
    """

    pos: jax.Array
    level: jax.Array
    food_pos: jax.Array
    food_level: jax.Array
    food_spawned: jax.Array
    t: jax.Array


def _as_int(name, value, lo, hi=None):
    bad_type = isinstance(value, bool) or not isinstance(value, (int, np.integer))
    if bad_type or value < lo or (hi is not None and value > hi):
        rng = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
        raise ValueError(f"{name} must be an int {rng}, got {value!r}")
    return int(value)


def _per(name, value, count, lo):
    arr = np.broadcast_to(np.asarray(value), (count,)) if np.ndim(value) == 0 else np.asarray(value)
    if arr.shape != (count,) or not np.issubdtype(arr.dtype, np.integer) or np.any(arr < lo):
        raise ValueError(f"{name} must be an int >= {lo} or {count} of them, got {value!r}")
    return arr.astype(np.int32)


class LevelBasedForaging(Env):
    """Level-based foraging (see the module docstring). Defaults: ``Foraging-8x8-2p-2f-v3``.

    Args:
        num_agents: players (>= 1, at most the number of cells).
        field_size: ``int`` or ``(rows, cols)``, each >= 3 (foods need an interior).
        max_num_food: food slots ``F`` (>= 1).
        sight: observation radius (>= 1); ``None``: the grid size (full observability).
        obs_type: ``"vector"`` or ``"grid"``.
        observe_agent_levels: players' levels in the vector observation / level layer.
        min_player_level, max_player_level, min_food_level, max_food_level: defaults of
            the params (ints or per-player / per-food lists); ``max_food_level=None`` sets
            ``params.auto_food_level``. The observation space bounds levels by these
            maxima, so params may not exceed them.
        force_coop, normalize_reward, penalty, shared_reward, horizon: param defaults.
    """

    def __init__(
        self,
        num_agents: int = 2,
        field_size: int | tuple[int, int] = 8,
        max_num_food: int = 2,
        sight: int | None = None,
        obs_type: str = "vector",
        observe_agent_levels: bool = True,
        min_player_level=1,
        max_player_level=2,
        min_food_level=1,
        max_food_level=None,
        force_coop: bool = False,
        normalize_reward: bool = True,
        penalty: float = 0.0,
        shared_reward: bool = False,
        horizon: int = 50,
    ):
        size = (field_size, field_size) if np.ndim(field_size) == 0 else tuple(field_size)
        if len(size) != 2:
            raise ValueError(f"field_size must be an int or (rows, cols), got {field_size!r}")
        self.rows = _as_int("field_size rows", size[0], 3)
        self.cols = _as_int("field_size cols", size[1], 3)
        n = self.n = _as_int("num_agents", num_agents, 1, self.rows * self.cols)
        f = self.num_food = _as_int("max_num_food", max_num_food, 1)
        self.sight = _as_int("sight", max(self.rows, self.cols) if sight is None else sight, 1)
        if obs_type not in ("vector", "grid"):
            raise ValueError(f"obs_type must be 'vector' or 'grid', got {obs_type!r}")
        self.obs_type = obs_type
        self.observe_agent_levels = check_bool("observe_agent_levels", observe_agent_levels)
        self._horizon = _as_int("horizon", horizon, 1)
        self._min_pl = _per("min_player_level", min_player_level, n, 1)
        self._max_pl = _per("max_player_level", max_player_level, n, 1)
        if np.any(self._min_pl > self._max_pl):
            raise ValueError("min_player_level must be <= max_player_level for every player")
        self._min_fl = _per("min_food_level", min_food_level, f, 1)
        self._auto_food = max_food_level is None
        # The reference's default maximum: three lowest players' levels (bounded here by
        # their maxima, which is also the reference's observation-space bound).
        auto_max = int(np.sort(self._max_pl)[:3].sum())
        if self._auto_food:
            self._max_fl = np.full(f, auto_max, np.int32)
        else:
            self._max_fl = _per("max_food_level", max_food_level, f, 1)
        if not self._auto_food and np.any(self._min_fl > self._max_fl):
            raise ValueError("min_food_level must be <= max_food_level for every food")
        self.player_level_cap = int(self._max_pl.max())
        self.food_level_cap = int(max(self._max_fl.max(), self._min_fl.max()))
        if not np.isfinite(penalty) or penalty < 0:
            raise ValueError(f"penalty must be a finite float >= 0, got {penalty!r}")
        self._flags = (check_bool("force_coop", force_coop), check_bool("normalize_reward", normalize_reward),
                       float(penalty), check_bool("shared_reward", shared_reward))

        r, c = np.divmod(np.arange(self.rows * self.cols), self.cols)
        self._rc = np.stack([r, c], -1).astype(np.int32)
        self._interior = (r >= 1) & (r <= self.rows - 2) & (c >= 1) & (c <= self.cols - 2)

        coord_hi = float(max(self.rows, self.cols) - 1)
        if obs_type == "vector":
            k = 3 if self.observe_agent_levels else 2
            high = np.concatenate([np.tile([coord_hi, coord_hi, self.food_level_cap], f),
                                   np.tile([coord_hi, coord_hi, self.player_level_cap][:k], n)])
            low = np.concatenate([np.tile([-1.0, -1.0, 0.0], f), np.tile([-1.0, -1.0, 0.0][:k], n)])
            obs_space = Box(low, high, high.shape, jnp.float32)
        else:
            w = 2 * self.sight + 1
            high = np.stack([np.full((w, w), self.player_level_cap if self.observe_agent_levels else 1.0),
                             np.full((w, w), self.food_level_cap), np.ones((w, w))])
            obs_space = Box(0.0, high, high.shape, jnp.float32)
        self.roles = {"player": Role(n, obs_space, Discrete(6), always_active=True)}
        self.global_obs_shape = (3 * f + 3 * n + 1,)

    # ------------------------------------------------------------------ params
    def default_params(self) -> LBFParams:
        force_coop, normalize, penalty, shared = self._flags
        return LBFParams(
            min_player_level=jnp.asarray(self._min_pl), max_player_level=jnp.asarray(self._max_pl),
            min_food_level=jnp.asarray(self._min_fl), max_food_level=jnp.asarray(self._max_fl),
            auto_food_level=jnp.asarray(self._auto_food), force_coop=jnp.asarray(force_coop),
            normalize_reward=jnp.asarray(normalize), penalty=jnp.asarray(penalty, jnp.float32),
            shared_reward=jnp.asarray(shared), horizon=jnp.asarray(self._horizon, jnp.int32),
        )

    def check_params(self, params: LBFParams) -> None:
        n, f = self.n, self.num_food
        p = params
        pcap, fcap = self.player_level_cap, self.food_level_cap
        for name, count, cap in (("min_player_level", n, pcap), ("max_player_level", n, pcap),
                                 ("min_food_level", f, fcap), ("max_food_level", f, fcap)):
            v = getattr(p, name)
            if v.shape[-1:] != (count,):
                raise ValueError(f"params.{name} must have shape ({count},), got {v.shape}")
            if np.any(v < 1) or np.any(v > cap):
                raise ValueError(f"params.{name} must be in [1, {cap}] (the observation space's bound), got {v}")
        if np.any(p.min_player_level > p.max_player_level):
            raise ValueError("params.min_player_level must be <= params.max_player_level")
        if np.any((p.min_food_level > p.max_food_level) & ~np.asarray(p.auto_food_level)[..., None]):
            raise ValueError("params.min_food_level must be <= params.max_food_level")
        if np.any(p.auto_food_level & (np.sort(p.max_player_level, -1)[..., :3].sum(-1) > self.food_level_cap)):
            raise ValueError(f"params.max_player_level: with auto_food_level the three lowest maxima must sum to "
                             f"at most {self.food_level_cap} (the observation space's food level bound)")
        if not np.all(np.isfinite(p.penalty)) or np.any(p.penalty < 0):
            raise ValueError(f"params.penalty must be finite and >= 0, got {p.penalty}")
        if np.any(p.horizon < 1):
            raise ValueError(f"params.horizon must be >= 1, got {p.horizon}")

    # ------------------------------------------------------------------ reset
    def reset_env(self, key, params):
        n, f, hw = self.n, self.num_food, self.rows * self.cols
        # One draw of uniforms for everything (a single threefry call compiles fast).
        u = rng.uniform(key, (2 * n + hw + 3 * f,))
        u_perm, u_lvl, u_cell, u_fperm, u_flvl, u_fpos = jnp.split(u, np.cumsum([n, n, hw, f, f]))
        perm = jnp.argsort(u_perm)
        level = _uniform_int(u_lvl, params.min_player_level[perm], params.max_player_level[perm])
        cells = jnp.argsort(u_cell)[:n].astype(jnp.int32)  # n distinct uniform cells

        lowest3 = jnp.sum(jnp.sort(level)[:3])
        hi = jnp.where(params.auto_food_level, lowest3, params.max_food_level)
        lo = jnp.where(params.force_coop, hi, params.min_food_level)
        fperm = jnp.argsort(u_fperm)
        food_level = _uniform_int(u_flvl, lo[fperm], hi[fperm])

        occupied = jnp.zeros(hw, bool).at[cells].set(True)
        blocked0 = ~jnp.asarray(self._interior) | occupied
        rc = jnp.asarray(self._rc)

        def place(blocked, uk):  # one food: uniform among the cells still allowed
            free = ~blocked
            count = jnp.sum(free, dtype=jnp.int32)
            kth = jnp.minimum((uk * count).astype(jnp.int32), count - 1)
            cell = jnp.argmax(jnp.cumsum(free, dtype=jnp.int32) > kth).astype(jnp.int32)
            # a food forbids other foods in its 3x3 neighbourhood and its radius-2 cross
            d = jnp.abs(rc - rc[cell])
            forbids = jnp.all(d <= 1, -1) | (jnp.min(d, -1) == 0) & (jnp.max(d, -1) <= 2)
            ok = count > 0
            return jnp.where(ok, blocked | forbids, blocked), (cell, ok)

        _, (fcell, ok) = jax.lax.scan(place, blocked0, u_fpos)
        food_level = jnp.where(ok, food_level, 0)
        state = LBFState(
            pos=jnp.stack(jnp.divmod(cells, self.cols), -1),
            level=level,
            food_pos=jnp.stack(jnp.divmod(fcell, self.cols), -1),
            food_level=food_level,
            food_spawned=jnp.sum(food_level).astype(jnp.float32),
            t=jnp.zeros((), jnp.int32),
        )
        info = {"illegal_action": jnp.zeros((n,), bool), "food_collected": jnp.zeros((), jnp.int32)}
        mask = {"player": self.valid_actions(state)}
        return state, self.make_timestep(self.observe(state), action_mask=mask, info=info)

    # ------------------------------------------------------------------ step
    def step_env(self, key, state, actions, params):
        n, hw = self.n, self.rows * self.cols
        raw = actions["player"]
        valid = self.valid_actions(state)
        in_range = (raw >= 0) & (raw < 6)
        act = jnp.where(in_range, raw, NONE)
        legal = in_range & jnp.take_along_axis(valid, act[:, None], 1)[:, 0]
        act = jnp.where(legal, act, NONE)

        # Movement: a target claimed by one player only is entered.
        target = state.pos + jnp.asarray(ACTION_STEPS)[act]  # valid moves stay inside the grid
        tcell = target[:, 0] * self.cols + target[:, 1]
        claims = jnp.zeros(hw, jnp.int32).at[tcell].add(1)
        pos = jnp.where((claims[tcell] == 1)[:, None], target, state.pos)

        # Loading: groups of loaders adjacent to each food (disjoint by the spawn spacing).
        loading = act == LOAD
        alive = state.food_level > 0
        d = jnp.abs(pos[:, None, :] - state.food_pos[None, :, :]).sum(-1)  # [n, F]
        member = loading[:, None] & alive[None, :] & (d == 1)
        group_level = jnp.sum(jnp.where(member, state.level[:, None], 0), 0)  # [F]
        eaten = jnp.any(member, 0) & (group_level >= state.food_level)
        gain = (state.level[:, None] * state.food_level[None, :]).astype(jnp.float32)
        norm = jnp.maximum(group_level[None, :] * state.food_spawned, 1e-12)
        gain = jnp.where(params.normalize_reward, gain / norm, gain)
        reward = jnp.sum(jnp.where(member, jnp.where(eaten[None, :], gain, -params.penalty), 0.0), 1)
        reward = jnp.where(params.shared_reward, jnp.sum(reward), reward)

        state = state.replace(pos=pos, food_level=jnp.where(eaten, 0, state.food_level), t=state.t + 1)
        terminated = jnp.all(state.food_level == 0)
        truncated = (state.t >= params.horizon) & ~terminated
        info = {"illegal_action": ~legal, "food_collected": jnp.sum(eaten, dtype=jnp.int32)}
        return state, self.make_timestep(
            self.observe(state), reward={"player": reward}, terminated=terminated, truncated=truncated,
            action_mask={"player": self.valid_actions(state)}, info=info,
        )

    # ------------------------------------------------------------------ helpers
    def field(self, state: LBFState) -> jax.Array:
        """``i32[rows, cols]`` food level per cell (the reference's ``field``)."""
        cell = state.food_pos[:, 0] * self.cols + state.food_pos[:, 1]
        return jnp.zeros(self.rows * self.cols, jnp.int32).at[cell].add(state.food_level).reshape(self.rows, self.cols)

    def valid_actions(self, state: LBFState) -> jax.Array:
        """``bool[n, 6]``: the reference's ``_valid_actions``."""
        padded = jnp.pad(self.field(state), 1)  # out of the grid: no food, but not enterable
        r, c = state.pos[:, 0] + 1, state.pos[:, 1] + 1
        steps = jnp.asarray(ACTION_STEPS[1:5])
        nr, nc = r[:, None] + steps[:, 0], c[:, None] + steps[:, 1]  # [n, 4]
        inside = (nr >= 1) & (nr <= self.rows) & (nc >= 1) & (nc <= self.cols)
        food_next = padded[nr, nc] > 0
        moves = inside & ~food_next
        load = jnp.any(food_next, -1, keepdims=True)
        return jnp.concatenate([jnp.ones((self.n, 1), bool), moves, load], -1)

    def observe(self, state: LBFState) -> dict:
        obs = self.vector_obs(state) if self.obs_type == "vector" else self.grid_obs(state)
        return {"player": obs}

    def vector_obs(self, state: LBFState) -> jax.Array:
        """``f32[n, 3F + 3n]`` (or ``3F + 2n``): the reference's vector observation."""
        n, f, s = self.n, self.num_food, self.sight
        origin = jnp.maximum(state.pos - s, 0)  # [n, 2] observer's window origin
        end = jnp.minimum(state.pos + s + 1, jnp.array([self.rows, self.cols]))
        # Foods in the window, in row-major order of their cells.
        rel_f = state.food_pos[None] - origin[:, None]  # [n, F, 2]
        inside = (state.food_pos[None] >= origin[:, None]) & (state.food_pos[None] < end[:, None])
        vis_f = (state.food_level > 0)[None] & jnp.all(inside, -1)
        cell = state.food_pos[:, 0] * self.cols + state.food_pos[:, 1]
        slot_f = jnp.sum(vis_f[:, None, :] & (cell[None, None, :] < cell[None, :, None]), -1)  # [n, F]
        feat_f = jnp.concatenate([rel_f, jnp.broadcast_to(state.food_level[None, :, None], (n, f, 1))], -1)
        foods = _compact(feat_f, vis_f, slot_f, jnp.array([-1, -1, 0]))
        # Players whose relative coordinates are in [0, 2s]: self first, then by index.
        rel_p = state.pos[None] - origin[:, None]  # [n(observer), n, 2]
        vis_p = jnp.all((rel_p >= 0) & (rel_p <= 2 * s), -1)
        eye = jnp.eye(n, dtype=bool)
        others = vis_p & ~eye
        slot_p = jnp.where(eye, 0, jnp.cumsum(others, -1) - others + 1)
        k = 3 if self.observe_agent_levels else 2
        feat_p = jnp.concatenate([rel_p, jnp.broadcast_to(state.level[None, :, None], (n, n, 1))], -1)[..., :k]
        players = _compact(feat_p, vis_p, slot_p, jnp.array([-1, -1, 0])[:k])
        return jnp.concatenate([foods.reshape(n, -1), players.reshape(n, -1)], -1).astype(jnp.float32)

    def grid_obs(self, state: LBFState) -> jax.Array:
        """``f32[n, 3, 2s+1, 2s+1]``: the reference's grid observation."""
        s, hw = self.sight, self.rows * self.cols
        pcell = state.pos[:, 0] * self.cols + state.pos[:, 1]
        top = jnp.zeros(hw, jnp.int32).at[pcell].max(jnp.arange(1, self.n + 1))  # last player wins
        has_player = top > 0
        lvl = state.level if self.observe_agent_levels else jnp.ones_like(state.level)
        agents = jnp.where(has_player, lvl[jnp.maximum(top - 1, 0)], 0).reshape(self.rows, self.cols)
        foods = self.field(state)
        access = (~has_player).reshape(self.rows, self.cols) & (foods == 0)
        layers = jnp.pad(jnp.stack([agents, foods, access]).astype(jnp.float32), ((0, 0), (s, s), (s, s)))
        window = lambda p: jax.lax.dynamic_slice(layers, (0, p[0], p[1]), (3, 2 * s + 1, 2 * s + 1))
        return jax.vmap(window)(state.pos)

    def global_obs(self, state: LBFState, params: LBFParams | None = None) -> jax.Array:
        """``f32[3F + 3n + 1]``: foods, players and ``t / horizon`` (see the module docstring)."""
        params = self.default_params() if params is None else params
        alive = (state.food_level > 0)[:, None]
        foods = jnp.concatenate([state.food_pos, state.food_level[:, None]], -1)
        foods = jnp.where(alive, foods, jnp.array([-1, -1, 0]))
        players = jnp.concatenate([state.pos, state.level[:, None]], -1)
        frac = (state.t / params.horizon)[None]
        return jnp.concatenate([foods.reshape(-1), players.reshape(-1), frac]).astype(jnp.float32)


def _uniform_int(u, lo, hi):
    """Uniform integers in ``[lo, hi]`` elementwise from uniforms ``u`` in [0, 1)
    (``hi`` when ``hi < lo``)."""
    return jnp.minimum(lo + (u * (hi - lo + 1)).astype(jnp.int32), hi).astype(jnp.int32)


def _compact(feat, visible, slot, fill):
    """Write ``feat[i, j]`` into slot ``slot[i, j]`` of row ``i`` where visible; other
    slots hold ``fill``. ``feat``: ``[n, m, k]`` -> ``[n, m, k]``."""
    n, m, k = feat.shape
    out = jnp.broadcast_to(fill.astype(feat.dtype), (n, m + 1, k))
    rows = jnp.broadcast_to(jnp.arange(n)[:, None], (n, m))
    return out.at[rows, jnp.where(visible, slot, m)].set(feat)[:, :m]

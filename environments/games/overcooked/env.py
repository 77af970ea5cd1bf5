"""Overcooked (Carroll et al. 2019): two cooks, onion soup, a shared sparse reward.

Rules. Two cooks move on the floor of a kitchen (``layouts.py``). Each step both act
at once; actions (JaxMARL's and overcooked-ai's ids) are 0 up, 1 down, 2 right,
3 left, 4 stay, 5 interact. A move turns the cook to that direction and steps
forward if the cell ahead is free floor; a blocked move only turns the cook. If both
cooks would end on the same cell, or would swap cells, neither moves (both still
turn). Interact acts on the tile the cook faces, cook 0 first, then cook 1 on the
result:

* counter: put the held item down on an empty counter, or pick up the item on it;
* onion pile / dish pile: take an onion / an empty dish, hands empty;
* pot: holding an onion, add it if the pot has not started cooking and has < 3
  onions; holding a dish at a ready pot, take the soup (the dish becomes a soup);
  with empty hands and ``params.auto_cook=False``, start cooking a pot of 1-3 onions;
* serving window: deliver a held soup: ``params.delivery_reward`` (20) to both cooks
  for a 3-onion soup, 0 for a smaller one (the classic kitchens only order 3-onion
  soups, as in overcooked-ai).

Cooking. With ``auto_cook=True`` (default; the 2019 "old dynamics" of the original
paper and of JaxMARL) a pot starts cooking on the step its third onion goes in. With
``auto_cook=False`` (overcooked-ai >= 1.0) a cook starts it by interacting with empty
hands, with 1 to 3 onions. A pot that started cooking at step ``t`` is ready after
step ``t + cook_time - 1`` (``cook_time=20``: both references count the starting step).

Shaped rewards (``info["shaped_reward"]``, per cook; the standard baselines add them
with a weight annealed to 0): onion into a pot +3, useful dish pickup +3, soup pickup
from a pot +5. A dish pickup (from a dish pile) is useful, as in overcooked-ai's
``is_dish_pickup_useful``, when no empty dish lies on a counter and the cooks hold
fewer empty dishes than there are pots that are cooking, ready, or idle with 1-2
onions; the pots are taken as they were at the start of the step, the counters and
the other cook's hands as they are when the cook acts (after cook 0, for cook 1).

Episodes are truncated after ``params.horizon`` steps (400); they never terminate.
Stepping a finished episode changes nothing and pays nothing. Out-of-range actions
act as ``stay``.

Roles: ``cook``, 2 agents (one shared policy), ``Discrete(6)``.

Observation ``uint8[H, W, 26]`` (the kitchen's rows and columns; overcooked-ai's lossless
encoding, ``obs.py``), from the cook's own point of view, channel by channel: 0 the
cook's own cell, 1 the other cook's cell; 2-5 the own facing (up, down, right, left)
and 6-9 the other cook's, set at its cell; 10-15 the static tiles: pots, counters, onion
piles, tomato piles (always 0), dish piles, serving windows; 16 onions (0-3) in a pot
that has not started cooking; 17 tomatoes in a pot (0); 18 onions in a cooking or ready
pot's soup, or in a soup on a counter or held (at the holder's cell); 19 tomatoes in a
soup (0); 20 cooking steps left (0 once ready); 21 1 on ready pots and on soups; 22
empty dishes (on counters or held); 23 loose onions (on counters or held); 24 tomatoes
(0); 25 all ones once fewer than 40 steps are left. ``global_obs`` is cook 0's
observation (it is lossless).

Actions ``Discrete(6)``: 0 up, 1 down, 2 right, 3 left (turn that way, and step if the
cell ahead is free floor), 4 stay, 5 interact with the faced tile (see the rules above);
out-of-range ids act as stay.

``info``: ``shaped_reward`` ``f32[2]`` and the
per-cook event flags ``onion_in_pot``, ``useful_dish_pickup``, ``soup_pickup``,
``soup_delivery`` (``bool[2]``; sum them over an episode for counts).

Against JaxMARL's Overcooked v1 (tested step for step): same dynamics, sparse and
shaped rewards and observations, except (1) channel 11 of the observation (see
``obs.py``), (2) JaxMARL judges cook 1's dish pickup on the pots as cook 0 left them,
not as they were at the start of the step (it differs when cook 0 puts the first
onion into a pot or takes a soup in that step), (3) its plate-pickup reward never
fires before version 0.2 (its issue #167), (4) its start cells and random start
orientations (``layouts.py``). With ``auto_cook=False`` the dynamics, rewards and
encoding are those of overcooked-ai 1.1.0 (tested when it is installed).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxagents.core import Box, Discrete, Env, Role
from jaxagents_environments.games.overcooked import obs as obs_lib
from jaxagents_environments.games.overcooked.layouts import COUNTER, DISH_PILE, FLOOR, ONION_PILE, POT, SERVE, Layout, get_layout
from jaxagents_environments.games.overcooked.obs import DISH, NOTHING, ONION, SOUP_BASE

UP, DOWN, RIGHT, LEFT, STAY, INTERACT = range(6)
ACTION_NAMES = ("up", "down", "right", "left", "stay", "interact")
# (row, col) step of each direction, indexed like the move actions.
DIRECTION_STEPS = np.array([[-1, 0], [1, 0], [0, 1], [0, -1]])
MAX_ONIONS = 3
FULL_SOUP = SOUP_BASE + MAX_ONIONS
IDLE = -1  # pot_timer of a pot that has not started cooking


@struct.dataclass
class OvercookedParams:
    """Sweepable settings (scalars; vmap over them for a population).

    Attributes:
        horizon: ``i32`` steps per episode (>= 1), then truncation.
        cook_time: ``i32`` steps a soup cooks, in [1, 255].
        auto_cook: ``bool`` 3 onions start cooking by themselves (2019 dynamics);
            False: a cook starts a pot of 1-3 onions by interacting empty-handed.
        random_start: ``bool`` start the cooks on two random distinct floor cells,
            facing random directions, instead of the layout's start cells facing up.
        delivery_reward: ``f32`` sparse reward of a 3-onion soup, to both cooks.
        onion_in_pot_reward: ``f32`` shaped reward (``info["shaped_reward"]``) to the cook
            that puts an onion into a pot (3).
        dish_pickup_reward: ``f32`` shaped reward to a cook that takes a useful dish from a
            dish pile (3; "useful" as in the module docstring).
        soup_pickup_reward: ``f32`` shaped reward to a cook that takes a ready soup from
            a pot with a dish (5).
    """

    horizon: jax.Array
    cook_time: jax.Array
    auto_cook: jax.Array
    random_start: jax.Array
    delivery_reward: jax.Array
    onion_in_pot_reward: jax.Array
    dish_pickup_reward: jax.Array
    soup_pickup_reward: jax.Array


@struct.dataclass
class OvercookedState:
    """Cells are flat indices ``row * W + col``.

    Attributes:
        pos: ``i32[2]`` each cook's cell.
        dir: ``i32[2]`` each cook's facing (0 up, 1 down, 2 right, 3 left).
        held: ``i32[2]`` held item: 0 nothing, 1 onion, 2 empty dish, 2+n soup of n onions.
        items: ``i32[H*W]`` item lying on each counter (same codes; 0 elsewhere).
        pot_onions: ``i32[P]`` onions in each pot (pots in row-major order).
        pot_timer: ``i32[P]`` -1 not cooking, k > 0 cooking with k steps left, 0 ready.
        t: ``i32[]`` steps taken.
    """

    pos: jax.Array
    dir: jax.Array
    held: jax.Array
    items: jax.Array
    pot_onions: jax.Array
    pot_timer: jax.Array
    t: jax.Array


class Overcooked(Env):
    """Overcooked with one role ``cook`` of 2 agents (see the module docstring).

    Args:
        layout: a classic layout name (``cramped_room``, ``asymmetric_advantages``,
            ``coordination_ring``, ``forced_coordination``, ``counter_circuit``), an
            ASCII layout (see ``layouts.py``) or a ``Layout``.
        horizon: default ``params.horizon`` (>= 1).
    """

    def __init__(self, layout: str | Layout = "cramped_room", horizon: int = 400):
        self.layout = get_layout(layout)
        if isinstance(horizon, bool) or not isinstance(horizon, (int, np.integer)) or horizon < 1:
            raise ValueError(f"horizon must be an int >= 1, got {horizon!r}")
        self._horizon = int(horizon)
        lay = self.layout
        h, w = lay.height, lay.width
        self.shape = (h, w)
        kind = lay.kind.reshape(-1).astype(np.int32)

        # Static tables, built once: the step only gathers from them.
        rc = np.stack(np.divmod(np.arange(h * w), w), -1)  # [HW, 2] (row, col)
        ahead = rc[:, None, :] + DIRECTION_STEPS[None]  # [HW, 4, 2]
        inside = (ahead[..., 0] >= 0) & (ahead[..., 0] < h) & (ahead[..., 1] >= 0) & (ahead[..., 1] < w)
        ahead_cell = np.where(inside, ahead[..., 0] * w + ahead[..., 1], np.arange(h * w)[:, None])
        # Tables indexed by cell * 4 + direction. The faced cell (outside the grid: the
        # cook's own floor cell, so interacting there does nothing), its tile kind and
        # its pot index (0 where it is no pot): one gather per step.
        face = ahead_cell.reshape(-1)
        self.pot_cells = lay.cells(POT)  # flat cells of the pots, in the order of pot_onions/pot_timer
        pot_id = np.zeros(h * w, np.int32)
        pot_id[self.pot_cells] = np.arange(len(self.pot_cells))
        self._face_info = np.stack([face, kind[face], pot_id[face]], -1).astype(np.int32)  # [HW*4, 3]
        # Where a move ends: the cell ahead if it is floor, else where the cook is.
        self._dest = np.where(kind[face] == FLOOR, face, np.repeat(np.arange(h * w), 4)).astype(np.int32)
        self._kind = kind
        self._pot_onehot = self.pot_cells[:, None] == np.arange(h * w)[None, :]  # [P, HW]
        self._floor = lay.cells(FLOOR)
        self._start = np.asarray(lay.start if lay.start is not None else (0, 0), np.int32)
        self._static_obs = obs_lib.static_planes(lay)

        obs_shape = (h, w, obs_lib.NUM_CHANNELS)
        obs_space = Box(0, np.broadcast_to(obs_lib.channel_high(), obs_shape), obs_shape, jnp.uint8)
        self.roles = {"cook": Role(2, obs_space, Discrete(6), always_legal=True, always_active=True)}
        self.global_obs_shape = obs_shape

    # ------------------------------------------------------------------ params
    def default_params(self) -> OvercookedParams:
        return OvercookedParams(
            horizon=jnp.asarray(self._horizon, jnp.int32),
            cook_time=jnp.asarray(20, jnp.int32),
            auto_cook=jnp.asarray(True),
            random_start=jnp.asarray(self.layout.start is None),
            delivery_reward=jnp.asarray(20.0, jnp.float32),
            onion_in_pot_reward=jnp.asarray(3.0, jnp.float32),
            dish_pickup_reward=jnp.asarray(3.0, jnp.float32),
            soup_pickup_reward=jnp.asarray(5.0, jnp.float32),
        )

    def check_params(self, params: OvercookedParams) -> None:
        if np.any(params.horizon < 1):
            raise ValueError(f"params.horizon must be >= 1, got {params.horizon}")
        if np.any((params.cook_time < 1) | (params.cook_time > 255)):
            raise ValueError(f"params.cook_time must be in [1, 255], got {params.cook_time}")
        if self.layout.start is None and not np.all(params.random_start):
            raise ValueError("params.random_start must be True: this layout has no '1'/'2' start cells")
        for name in ("delivery_reward", "onion_in_pot_reward", "dish_pickup_reward", "soup_pickup_reward"):
            if not np.all(np.isfinite(getattr(params, name))):
                raise ValueError(f"params.{name} must be finite, got {getattr(params, name)}")

    # ------------------------------------------------------------------ reset
    def reset_env(self, key, params):
        # One draw of random bits (a single threefry call keeps reset cheap to compile);
        # the modulo bias, n_floor / 2**32, is negligible.
        bits = jax.random.bits(key, (4,), jnp.uint32)
        n_floor = len(self._floor)
        # Two distinct floor cells: draw i, then j among the other n-1 cells.
        i = (bits[0] % n_floor).astype(jnp.int32)
        j = (bits[1] % (n_floor - 1)).astype(jnp.int32)
        j = j + (j >= i)
        random_pos = jnp.asarray(self._floor)[jnp.stack([i, j])]
        random_dir = (bits[2:] % 4).astype(jnp.int32)
        rs = params.random_start
        state = OvercookedState(
            pos=jnp.where(rs, random_pos, jnp.asarray(self._start)),
            dir=jnp.where(rs, random_dir, UP).astype(jnp.int32),
            held=jnp.zeros((2,), jnp.int32),
            items=jnp.zeros((self._kind.size,), jnp.int32),
            pot_onions=jnp.zeros((len(self.pot_cells),), jnp.int32),
            pot_timer=jnp.full((len(self.pot_cells),), IDLE, jnp.int32),
            t=jnp.zeros((), jnp.int32),
        )
        return state, self._timestep(state, params, jnp.zeros((2,), jnp.float32), self._no_events())

    # ------------------------------------------------------------------ step
    def _interact(self, do, kind, x, onions, timer, held, useful_dish, params):
        """The interact rule on the faced cell, elementwise (all ``[2]``, one per cook).

        ``kind`` is that cell's tile kind, ``x`` the item on it, ``onions``/``timer``
        the state of the pot there (if any), ``useful_dish`` whether a dish taken now
        is useful. Returns the new ``(x, onions, timer, held)`` and the events.
        """
        empty = held == NOTHING
        counter = do & (kind == COUNTER)
        drop = counter & ~empty & (x == NOTHING)
        pick = counter & empty & (x != NOTHING)
        take_onion = do & (kind == ONION_PILE) & empty
        take_dish = do & (kind == DISH_PILE) & empty
        pot = do & (kind == POT)
        idle = timer == IDLE
        add_onion = pot & (held == ONION) & idle & (onions < MAX_ONIONS)
        take_soup = pot & (held == DISH) & (timer == 0)
        start = pot & empty & idle & (onions > 0) & ~params.auto_cook
        deliver = do & (kind == SERVE) & (held > SOUP_BASE)

        # Nested where, not jnp.select: select lowers to an argmax that compiles slowly.
        new_held = jnp.where(take_soup, SOUP_BASE + onions, held)
        new_held = jnp.where(take_dish, DISH, jnp.where(take_onion, ONION, new_held))
        new_held = jnp.where(drop | add_onion | deliver, NOTHING, jnp.where(pick, x, new_held))
        new_x = jnp.where(drop, held, jnp.where(pick, NOTHING, x))
        new_onions = jnp.where(add_onion, onions + 1, jnp.where(take_soup, 0, onions))
        new_timer = jnp.where(take_soup, IDLE, jnp.where(start, params.cook_time, timer))
        events = dict(
            onion_in_pot=add_onion,
            useful_dish_pickup=take_dish & useful_dish,
            soup_pickup=take_soup,
            soup_delivery=deliver,
            full_delivery=deliver & (held == FULL_SOUP),
            dish_to_counter=drop & (held == DISH),
            dish_from_counter=pick & (x == DISH),
        )
        return (new_x, new_onions, new_timer, new_held), events

    def step_env(self, key, state, actions, params):
        live = state.t < params.horizon
        a = actions["cook"]
        a = jnp.where((a >= 0) & (a < 6) & live, a, STAY)
        do = a == INTERACT
        move = a < 4

        # Interacts, before moving (an interacting cook does not move).
        faced = jnp.asarray(self._face_info)[state.pos * 4 + state.dir]  # [2, 3]
        face, kind, pid = faced[:, 0], faced[:, 1], faced[:, 2]
        x = state.items[face]
        pots = jnp.arange(len(self.pot_cells))
        at_pot = pots == pid[:, None]  # [2, P]
        onions = jnp.sum(jnp.where(at_pot, state.pot_onions, 0), -1)
        timer = jnp.sum(jnp.where(at_pot, state.pot_timer, 0), -1)
        # Dish-pickup usefulness: pot states at the start of the step (overcooked-ai).
        busy_pots = jnp.sum((state.pot_timer != IDLE) | ((state.pot_onions > 0) & (state.pot_onions < MAX_ONIONS)))
        counter_dishes = jnp.sum(state.items == DISH)
        # Cook 0 acts first, then cook 1 on the result. Pass 1 applies the rule to both
        # cooks on the kitchen as it was (final for cook 0); pass 2 applies it again on
        # what cook 0 left (its faced cell if shared, its hands, the counters), final
        # for cook 1. Both passes are vectorised over the two cooks.
        other_dish = (state.held[::-1] == DISH).astype(jnp.int32)
        useful = (counter_dishes == 0) & (other_dish < busy_pots)
        out_a, ev_a = self._interact(do, kind, x, onions, timer, state.held, useful, params)
        same = face[1] == face[0]
        x_b, onions_b, timer_b = (jnp.where(same, v[0], w) for v, w in zip(out_a[:3], (x, onions, timer)))
        counter_dishes_b = counter_dishes + ev_a["dish_to_counter"][0] - ev_a["dish_from_counter"][0]
        useful_b = (counter_dishes_b == 0) & ((out_a[3][0] == DISH).astype(jnp.int32) < busy_pots)
        out_b, ev_b = self._interact(do, kind, x_b, onions_b, timer_b, state.held, useful_b, params)
        first = jnp.array([True, False])
        new_x, new_onions, new_timer, held = (jnp.where(first, u, v) for u, v in zip(out_a, out_b))
        events = {k: jnp.where(first, ev_a[k], ev_b[k]) for k in ev_a}

        cells = jnp.arange(self._kind.size)
        items = jnp.where(cells == face[0], new_x[0], state.items)
        items = jnp.where(cells == face[1], new_x[1], items)
        hit = at_pot & (kind == POT)[:, None]  # [2, P]
        pot_onions = jnp.where(hit[1], new_onions[1], jnp.where(hit[0], new_onions[0], state.pot_onions))
        pot_timer = jnp.where(hit[1], new_timer[1], jnp.where(hit[0], new_timer[0], state.pot_timer))

        # Moves: both or neither when they would collide or swap.
        want = jnp.where(move, jnp.asarray(self._dest)[state.pos * 4 + jnp.minimum(a, 3)], state.pos)
        clash = (want[0] == want[1]) | ((want[0] == state.pos[1]) & (want[1] == state.pos[0]))
        pos = jnp.where(clash, state.pos, want)
        direction = jnp.where(move, a, state.dir)

        # Cooking: a full idle pot starts (auto-cook), then every cooking pot ticks.
        start = params.auto_cook & (pot_timer == IDLE) & (pot_onions == MAX_ONIONS) & live
        pot_timer = jnp.where(start, params.cook_time, pot_timer)
        pot_timer = jnp.where((pot_timer > 0) & live, pot_timer - 1, pot_timer)

        new = OvercookedState(
            pos=pos, dir=direction, held=held, items=items, pot_onions=pot_onions, pot_timer=pot_timer, t=state.t + live
        )
        reward = params.delivery_reward * jnp.sum(events["full_delivery"]).astype(jnp.float32)
        return new, self._timestep(new, params, jnp.stack([reward, reward]), events)

    # ------------------------------------------------------------------ outputs
    def _no_events(self):
        z = jnp.zeros((2,), bool)
        return dict(onion_in_pot=z, useful_dish_pickup=z, soup_pickup=z, soup_delivery=z)

    def _timestep(self, state, params, reward, events):
        shaped = (
            params.onion_in_pot_reward * events["onion_in_pot"]
            + params.dish_pickup_reward * events["useful_dish_pickup"]
            + params.soup_pickup_reward * events["soup_pickup"]
        ).astype(jnp.float32)
        info = {"shaped_reward": shaped, **{k: events[k] for k in self._no_events()}}
        return self.make_timestep(
            obs={"cook": self.observe(state, params)},
            reward={"cook": reward},
            truncated=state.t >= params.horizon,
            info=info,
        )

    def observe(self, state, params=None):
        """Both cooks' observations, ``uint8[2, H, W, 26]`` (see ``obs.py``)."""
        params = self.default_params() if params is None else params
        return obs_lib.encode(state, self._static_obs, self._pot_onehot, params.horizon, self.shape)

    def global_obs(self, state, params=None):
        """Cook 0's observation, ``uint8[H, W, 26]`` (lossless: it shows both cooks)."""
        return self.observe(state, params)[0]

    def render(self, state, params=None, tile: int = 32):
        """An RGB picture ``uint8[H*tile, W*tile, 3]`` of one (unbatched) state."""
        from jaxagents_environments.games.overcooked.render import render_state

        return render_state(self.layout, state, tile=tile)

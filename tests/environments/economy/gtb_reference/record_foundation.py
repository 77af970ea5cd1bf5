"""Record step-by-step trajectories of the AI Economist's own Foundation code
(``ai-economist`` 1.7.1, scenario ``layout_from_file/simple_wood_and_stone``) as
reference data for the ``gtb`` parity test.

What: three episodes (``random4``, ``scripted4``, ``notax8``) are played in Foundation
and everything a step-for-step comparison needs is written to one compressed npz:
the initial state after reset, the actions, every random number Foundation drew while
stepping, and the state, rewards and action masks after each step.

Why: ``gtb`` re-implements the rules in JAX. Feeding it the same initial state, the
same actions and the same draws must reproduce these arrays.

How the randomness is pinned: Foundation draws with numpy's global generator (seeded
per episode with ``np.random.seed``). During ``env.step`` this script wraps, without
altering what they return,
  * ``np.random.permutation`` -- called by ``World.get_random_order_agents`` once in
    Build and once in Gather each step (the processing order of the agents);
  * ``rand`` as imported by ``components/move.py`` -- one uniform per gathering event
    (the bonus-unit draw), in Gather's processing order;
  * ``np.random.rand(H, W)`` in the scenario step -- one map for Wood, then one for
    Stone (resource regrowth).
The agents' own choices come from a separate ``np.random.default_rng`` so they never
touch Foundation's stream.

This file runs only in the reference virtual environment; it imports neither jax nor
jaxagents. Regenerate the data (from the repository root) with:

    bash tests/environments/economy/gtb_reference/setup_venv.sh /tmp/aie
    /tmp/aie/bin/python tests/environments/economy/gtb_reference/record_foundation.py \
        --out tests/environments/economy/data/gtb_foundation.npz

Data layout (T steps, N mobile agents, H x W map; keys ``{episode}/{field}``)
-----------------------------------------------------------------------------
Axis conventions: inventory-like axes are (Coin, Wood, Stone); every per-resource axis
(maps, order books, the ``resource`` column of ``trades``) is (Wood, Stone). Locations
are (row, col). Step t's arrays describe the state *after* step t (0-based).

  config_json        str        the keyword arguments given to make_env_instance
  action_names       str[A]     flat mobile action a -> "component.sub:n" from
                                Foundation's single_action_map ("NO-OP" for 0). For the
                                order book sub-actions the price is n-1; Gather's
                                n = 1..4 are left (col-1), right (col+1), up (row-1),
                                down (row+1)
  map_wood_source, map_stone_source, map_water   int8[H,W]
  init_loc i32[N,2], init_build_payment f64[N], init_bonus_prob f64[N],
  init_inventory f64[N,3], init_resource f64[2,H,W], init_masks f32[N,A],
  init_planner_masks f32[B,22]
  actions            i32[T,N]   flat mobile actions
  planner_actions    i32[T,B]   per bracket: 0 keep, k -> rate index k-1
  build_order, gather_order   i32[T,N]   order[k] = agent processed k-th
  bonus_u            f64[T,N]   the uniform drawn for agent i's gather at step t
                                (bonus unit iff u < init_bonus_prob[i]); NaN if none
  regen_u            f64[T,2,H,W]  the regrowth uniforms (a source tile regrows iff
                                u < 0.01). Stored only on that resource's source
                                tiles, NaN elsewhere: Foundation draws a full map but
                                the other entries cannot affect anything, and keeping
                                them would multiply the file size by 15
  loc i32[T,N,2], inventory f64[T,N,3], escrow f64[T,N,3], labour f64[T,N],
  resource f64[T,2,H,W], house_owner i16[T,H,W] (-1 none),
  bid_hist, ask_hist f64[T,2,N,11]  open orders per (resource, agent, price)
  trades             i32[K,7]   (t, resource, buyer, seller, bid, ask, price)
  tax_rates          f64[T,B]   current marginal bracket rates
  tax_paid, income   f64[T,N]   nonzero only on tax days
  lump_sum           f64[T]
  rewards f64[T,N], planner_reward f64[T]
  masks f32[T,N,A], planner_masks f32[T,B,22]
B is 7 with taxes on. With ``disable_taxes`` Foundation gives the planner no tax
actions at all, so ``planner_actions`` is i32[T,0] and the planner masks have B = 0.
Top-level keys: ai_economist_version, numpy_version, command, recorder_sha256.
"""

import argparse
import hashlib
import importlib.metadata
import json
import shlex
import sys
from collections import deque
from pathlib import Path

import numpy as np
from ai_economist import foundation
from ai_economist.foundation.components import move as move_module

assert "jax" not in sys.modules and "jaxagents" not in sys.modules

SCENARIO = "layout_from_file/simple_wood_and_stone"
RESOURCES = ("Wood", "Stone")  # order of every per-resource axis in the data
INVENTORY = ("Coin", "Wood", "Stone")  # order of inventory / escrow axes
N_PRICES = 11  # max_bid_ask 10 -> price levels 0..10
MOVES = ((0, -1), (0, 1), (-1, 0), (1, 0))  # Gather sub-actions 1..4: left, right, up, down

EPISODES = {
    # name: (n_agents, steps, disable_taxes, fixed_four_skill_and_loc, policy, seed)
    "random4": (4, 1000, False, True, "random", 11),
    "scripted4": (4, 400, False, True, "scripted", 22),
    "notax8": (8, 300, True, False, "random", 33),
}


def env_config(n_agents, steps, disable_taxes, fixed_four):
    """Keyword arguments for foundation.make_env_instance (JSON-serialisable)."""
    return {
        "scenario_name": SCENARIO,
        "components": [
            ["Build", {"payment": 10, "payment_max_skill_multiplier": 3,
                       "skill_dist": "pareto", "build_labor": 10}],
            ["ContinuousDoubleAuction", {"max_bid_ask": 10, "order_labor": 0.25,
                                         "order_duration": 50, "max_num_orders": 5}],
            ["Gather", {"move_labor": 1, "collect_labor": 1, "skill_dist": "pareto"}],
            ["PeriodicBracketTax", {"disable_taxes": disable_taxes, "period": 100,
                                    "bracket_spacing": "us-federal", "usd_scaling": 1000,
                                    "rate_disc": 0.05, "tax_model": "model_wrapper"}],
        ],
        "n_agents": n_agents,
        "world_size": [25, 25],
        "episode_length": steps,
        "env_layout_file": "quadrant_25x25_20each_30clump.txt",
        "starting_agent_coin": 10,
        "fixed_four_skill_and_loc": fixed_four,
        "isoelastic_eta": 0.23,
        "energy_cost": 0.21,
        "energy_warmup_constant": 0,
        "planner_reward_type": "coin_eq_times_productivity",
        "flatten_observations": True,
        "flatten_masks": True,
    }


class DrawTap:
    """Records the values returned by Foundation's random calls while ``active``.

    The wrapped functions call the originals with the same arguments and return their
    results unchanged, so the generator stream is exactly what Foundation alone sees.
    ``phase`` names the component (or "scenario") currently stepping.
    """

    def __init__(self):
        self.active = False
        self.phase = None
        self.clear()
        real_perm, real_rand, real_bonus = np.random.permutation, np.random.rand, move_module.rand

        def permutation(*args, **kwargs):
            out = real_perm(*args, **kwargs)
            if self.active:
                self.perms.append((self.phase, np.array(out)))
            return out

        def rand(*args):
            out = real_rand(*args)
            if self.active:
                self.maps.append((self.phase, np.array(out, dtype=np.float64)))
            return out

        def bonus_rand(*args):
            out = real_bonus(*args)
            if self.active:
                self.bonus.append((self.phase, float(out)))
            return out

        np.random.permutation = permutation
        np.random.rand = rand
        move_module.rand = bonus_rand

    def clear(self):
        self.perms, self.maps, self.bonus = [], [], []


class Instrumented:
    """A Foundation env plus hooks that tag phases and count events (no rule changes)."""

    def __init__(self, config, tap):
        self.env = foundation.make_env_instance(**config)
        self.tap = tap
        env = self.env
        self.build = env.get_component("Build")
        self.cda = env.get_component("ContinuousDoubleAuction")
        self.gather = env.get_component("Gather")
        self.tax = env.get_component("PeriodicBracketTax")
        self.world = env.world
        self.n = env.n_agents
        self.h, self.w = env.world_size
        self.expired = 0
        self.regrown = []  # (resource index, r, c) tiles that went 0 -> 1 this step

        for comp in env.components:
            comp.component_step = self._tagged(comp.name, comp.component_step)
        real_scenario_step = env.scenario_step

        def scenario_step():
            before = np.stack([self.world.maps.get(r).copy() for r in RESOURCES])
            tap.phase = "scenario"
            real_scenario_step()
            after = np.stack([self.world.maps.get(r) for r in RESOURCES])
            self.regrown = [tuple(x) for x in np.argwhere((before == 0) & (after > 0))]

        env.scenario_step = scenario_step
        real_expire = self.cda.remove_expired_orders

        def remove_expired_orders():
            count = lambda: sum(len(self.cda.bids[c]) + len(self.cda.asks[c])
                                for c in self.cda.commodities)
            n_before = count()
            real_expire()
            self.expired += n_before - count()

        self.cda.remove_expired_orders = remove_expired_orders

        # Flat action layout, read from Foundation rather than assumed.
        agent = self.world.agents[0]
        self.n_actions = agent.action_spaces
        self.action_names = ["NO-OP"] + [
            "{}:{}".format(*agent.single_action_map[a]) for a in range(1, self.n_actions)
        ]
        self.index = {tuple(agent.single_action_map[a]): a for a in range(1, self.n_actions)}
        self.build_action = self.index[("Build", 1)]
        self.move_actions = [self.index[("Gather", k)] for k in (1, 2, 3, 4)]
        self.order_actions = {  # (side, resource) -> flat actions for prices 0..10
            (side, r): [self.index[("ContinuousDoubleAuction.{}_{}".format(side, r), p + 1)]
                        for p in range(N_PRICES)]
            for side in ("Buy", "Sell") for r in RESOURCES
        }
        maps = self.env._source_maps
        self.source = np.stack([maps[r] > 0 for r in RESOURCES])
        self.water = maps["Water"] > 0

    def _tagged(self, name, fn):
        def step():
            self.tap.phase = name
            return fn()
        return step

    # ---- state readers ------------------------------------------------------------
    def locs(self):
        return np.array([a.loc for a in self.world.agents], dtype=np.int32)

    def resource_maps(self):
        return np.stack([self.world.maps.get(r) for r in RESOURCES]).astype(np.float64)

    def hist(self, which):
        book = self.cda.bid_hists if which == "bid" else self.cda.ask_hists
        return np.array([[book[r][i] for i in range(self.n)] for r in RESOURCES], np.float64)

    def masks(self, obs):
        mobile = np.stack([obs[str(i)]["action_mask"] for i in range(self.n)]).astype(np.float32)
        planner = np.asarray(obs[self.world.planner.idx]["action_mask"], np.float32)
        n_brackets = len(self.planner_subactions())
        return mobile, planner[: n_brackets * 22].reshape(n_brackets, 22) if n_brackets else \
            np.zeros((0, 22), np.float32)

    def planner_subactions(self):
        p = self.world.planner
        return [m for m in p._action_names if m.startswith("PeriodicBracketTax.")]

    def own_order_limits(self, i):
        """(highest own bid, lowest own ask) per resource; -1 / 11 when none."""
        out = {}
        for r in RESOURCES:
            bids = np.nonzero(self.cda.bid_hists[r][i])[0]
            asks = np.nonzero(self.cda.ask_hists[r][i])[0]
            out[r] = (bids.max() if len(bids) else -1, asks.min() if len(asks) else N_PRICES)
        return out

    def legal(self, i, mask):
        """Foundation's mask for agent i, minus orders that cross the agent's own orders."""
        legal = mask > 0
        for r, (top_bid, low_ask) in self.own_order_limits(i).items():
            for p in range(N_PRICES):
                if p >= low_ask:
                    legal[self.order_actions[("Buy", r)][p]] = False
                if p <= top_bid:
                    legal[self.order_actions[("Sell", r)][p]] = False
        return legal


def first_move_towards(ie, i, legal, targets):
    """First move of a shortest path from agent i to any target tile (BFS over tiles
    that are not water and not someone else's house; fixed move order breaks ties).
    The first step must be legal now; None when no target is reachable."""
    start = tuple(ie.locs()[i])
    if not targets or start in targets:
        return None
    owner = ie.world.maps.get("House", owner=True)
    passable = ~ie.water & ((owner < 0) | (owner == i))
    first = {}
    queue = deque()
    for k, (dr, dc) in enumerate(MOVES):
        nxt = (start[0] + dr, start[1] + dc)
        if legal[ie.move_actions[k]] and nxt not in first:
            first[nxt] = ie.move_actions[k]
            queue.append(nxt)
    seen = set(first) | {start}
    while queue:
        cell = queue.popleft()
        if cell in targets:
            return first[cell]
        for dr, dc in MOVES:
            nxt = (cell[0] + dr, cell[1] + dc)
            if (0 <= nxt[0] < ie.h and 0 <= nxt[1] < ie.w and nxt not in seen
                    and passable[nxt]):
                seen.add(nxt)
                first[nxt] = first[cell]
                queue.append(nxt)
    return None


def resource_tiles(ie):
    """Tiles currently holding any resource."""
    rr, cc = np.nonzero(ie.resource_maps().sum(0) > 0)
    return set(zip(rr.tolist(), cc.tolist()))


# ---- policies ---------------------------------------------------------------------
def random_actions(ie, mobile_masks, rng):
    """Biased random legal actions: build (when legal) with probability 0.7, otherwise
    ~45% moves, ~35% orders (uniform over legal order actions), else NO-OP. Half of the
    moves head for the nearest resource (so that gathering is frequent), the rest are
    uniform over legal moves."""
    acts = np.zeros(ie.n, np.int32)
    orders = [a for v in ie.order_actions.values() for a in v]
    targets = resource_tiles(ie)
    for i in range(ie.n):
        legal = ie.legal(i, mobile_masks[i])
        if legal[ie.build_action] and rng.random() < 0.7:
            acts[i] = ie.build_action
            continue
        u = rng.random()
        moves = [a for a in ie.move_actions if legal[a]]
        trades = [a for a in orders if legal[a]]
        if u < 0.45 and moves:
            towards = first_move_towards(ie, i, legal, targets) if rng.random() < 0.5 else None
            acts[i] = towards if towards is not None else rng.choice(moves)
        elif 0.45 <= u < 0.80 and trades:
            acts[i] = rng.choice(trades)
    return acts


def random_planner(ie, planner_mask, rng):
    """At a period start: per bracket keep (15%) or a uniformly drawn legal rate."""
    acts = np.zeros(len(planner_mask), np.int32)
    for b, m in enumerate(planner_mask):
        choices = np.nonzero(m[1:])[0] + 1
        if len(choices) and rng.random() >= 0.15:
            acts[b] = rng.choice(choices)
    return acts


class Script:
    """A deterministic, readable household script for the ``scripted4`` episode.

    Each agent works around its start (targets within Manhattan distance 10), which in
    this layout gives one agent wood only, one stone only, one both and one neither,
    so trade is needed to build. Per step, first applicable rule:
      1. build if Foundation allows it;
      2. holding a surplus (>= 2 more of one resource than the other) with < 2 open
         asks on it: ask at ASK[r];
      3. short of a resource (fewer than the other, or none of both) with < 2 open bids
         on it and coin for it: bid at BID[r];
      4. holding both resources but unable to build here: walk to the nearest free tile;
      5. otherwise walk (BFS) to the nearest home tile holding the scarcer resource,
         else any resource; NO-OP if there is nothing to walk to.
    Fixed prices whose bids exceed asks make trades execute at the ask price when the
    ask was posted first (or in the same step) and at the bid price otherwise.
    """

    ASK = {"Wood": 3, "Stone": 4}
    BID = {"Wood": 6, "Stone": 7}
    HOME_RADIUS = 10

    def __init__(self, ie):
        self.ie = ie
        self.home = ie.locs().copy()

    def actions(self, masks):
        ie = self.ie
        acts = np.zeros(ie.n, np.int32)
        for i, agent in enumerate(ie.world.agents):
            legal = ie.legal(i, masks[i])
            inv = {r: agent.inventory[r] for r in RESOURCES}
            n_bids = {r: int(ie.cda.bid_hists[r][i].sum()) for r in RESOURCES}
            n_asks = {r: int(ie.cda.ask_hists[r][i].sum()) for r in RESOURCES}
            other = {"Wood": "Stone", "Stone": "Wood"}
            if legal[ie.build_action]:
                acts[i] = ie.build_action
                continue
            chosen = None
            for r in RESOURCES:
                a = ie.order_actions[("Sell", r)][self.ASK[r]]
                if inv[r] >= inv[other[r]] + 2 and n_asks[r] < 2 and legal[a]:
                    chosen = a
                    break
            if chosen is None:
                short = min(RESOURCES, key=lambda r: (inv[r], RESOURCES.index(r)))
                a = ie.order_actions[("Buy", short)][self.BID[short]]
                if inv[short] < inv[other[short]] or inv[short] == inv[other[short]] == 0:
                    if n_bids[short] < 2 and legal[a]:
                        chosen = a
            if chosen is None:
                if min(inv.values()) >= 1:
                    chosen = self.step_towards(i, legal, self.free_tiles())
                else:
                    short = min(RESOURCES, key=lambda r: (inv[r], RESOURCES.index(r)))
                    chosen = self.step_towards(i, legal, self.resource_tiles(i, [short]))
                    if chosen is None:
                        chosen = self.step_towards(i, legal, self.resource_tiles(i, RESOURCES))
            acts[i] = chosen or 0
        return acts

    def resource_tiles(self, i, names):
        maps = self.ie.resource_maps()
        rr, cc = np.nonzero(sum(maps[RESOURCES.index(r)] for r in names) > 0)
        near = np.abs(rr - self.home[i, 0]) + np.abs(cc - self.home[i, 1]) <= self.HOME_RADIUS
        return set(zip(rr[near].tolist(), cc[near].tolist()))

    def free_tiles(self):
        landmarks = self.ie.source.any(0) | self.ie.water | (
            self.ie.world.maps.get("House", owner=True) >= 0)
        rr, cc = np.nonzero(~landmarks & (self.ie.resource_maps().sum(0) == 0))
        return set(zip(rr.tolist(), cc.tolist()))

    def step_towards(self, i, legal, targets):
        return first_move_towards(self.ie, i, legal, targets)


SCRIPTED_RATE_INDICES = [2, 3, 4, 6, 8, 10, 12]  # rates 0.10, 0.15, 0.20, 0.30, ... 0.60


# ---- recording --------------------------------------------------------------------
def record_episode(name, spec, tap):
    n_agents, steps, disable_taxes, fixed_four, policy, seed = spec
    config = env_config(n_agents, steps, disable_taxes, fixed_four)
    ie = Instrumented(config, tap)
    env, world, n, h, w = ie.env, ie.world, ie.n, ie.h, ie.w
    rng = np.random.default_rng(seed)

    np.random.seed(seed)
    obs = env.reset()
    masks, pmasks = ie.masks(obs)
    script = Script(ie) if policy == "scripted" else None
    n_brackets = len(ie.planner_subactions())

    out = {
        "config_json": np.array(json.dumps(config, sort_keys=True)),
        "action_names": np.array(ie.action_names),
        "map_wood_source": ie.source[0].astype(np.int8),
        "map_stone_source": ie.source[1].astype(np.int8),
        "map_water": ie.water.astype(np.int8),
        "init_loc": ie.locs(),
        "init_build_payment": np.array([a.state["build_payment"] for a in world.agents]),
        "init_bonus_prob": np.array([a.state["bonus_gather_prob"] for a in world.agents]),
        "init_inventory": np.array([[a.inventory[k] for k in INVENTORY] for a in world.agents],
                                   np.float64),
        "init_resource": ie.resource_maps(),
        "init_masks": masks,
        "init_planner_masks": pmasks,
    }
    bonus_prob = out["init_bonus_prob"]
    log = {k: [] for k in ("actions", "planner_actions", "build_order", "gather_order",
                           "bonus_u", "regen_u", "loc", "inventory", "escrow", "labour",
                           "resource", "house_owner", "bid_hist", "ask_hist", "tax_rates",
                           "tax_paid", "income", "lump_sum", "rewards", "planner_reward",
                           "masks", "planner_masks")}
    trades = []
    counts = dict(steps=steps, trades=0, trades_at_ask_price=0, trades_at_bid_price=0,
                  builds=0, gathers=0, gathers_with_bonus=0, gathers_without_moving=0,
                  regrowths=0, regrowths_under_agent=0, orders_posted=0, expired_orders=0,
                  tax_days=0, tax_days_with_revenue=0, moves_blocked=0)

    for t in range(steps):
        if policy == "scripted":
            acts = script.actions(masks)
        else:
            acts = random_actions(ie, masks, rng)
        for i in range(n):
            assert masks[i, acts[i]] > 0, (name, t, i, acts[i])
        if n_brackets == 0:
            pacts = np.zeros(0, np.int32)
        elif policy == "scripted":
            pacts = np.zeros(n_brackets, np.int32)
            if t == 0:
                pacts[:] = np.array(SCRIPTED_RATE_INDICES) + 1
        else:
            pacts = random_planner(ie, pmasks, rng)
        for b in range(n_brackets):
            assert pmasks[b, pacts[b]] > 0
        action_dict = {str(i): int(acts[i]) for i in range(n)}
        if n_brackets:
            action_dict[world.planner.idx] = [int(x) for x in pacts]

        locs_before = ie.locs()
        tap.clear()
        tap.active = True
        obs, rew, _, _ = env.step(action_dict)
        tap.active = False

        # -- draws
        perms = {}
        for phase, p in tap.perms:
            assert phase not in perms and len(p) == n, (t, phase)
            perms[phase] = p
        assert set(perms) == {"Build", "Gather"}, perms.keys()
        gathers = ie.gather.gathers[-1]
        assert len(gathers) == len(tap.bonus) and all(ph == "Gather" for ph, _ in tap.bonus)
        bonus_u = np.full(n, np.nan)
        for g, (_, u) in zip(gathers, tap.bonus):
            assert np.isnan(bonus_u[g["agent"]]), "two gathers by one agent in a step"
            bonus_u[g["agent"]] = u
            assert g["n"] == 1 + (u < bonus_prob[g["agent"]])
        assert [ph for ph, _ in tap.maps] == ["scenario", "scenario"]
        regen = np.stack([m for _, m in tap.maps])
        assert regen.shape == (2, h, w)

        # -- state after the step
        locs = ie.locs()
        mobile_masks, planner_masks = ie.masks(obs)
        tax_info = ie.tax.taxes[-1]
        income = np.zeros(n)
        paid = np.zeros(n)
        lump = 0.0
        if tax_info:
            income = np.array([tax_info[str(i)]["income"] for i in range(n)])
            paid = np.array([tax_info[str(i)]["tax_paid"] for i in range(n)])
            lump = tax_info["0"]["lump_sum"]
        for tr in ie.cda.executed_trades[-1]:
            trades.append([t, RESOURCES.index(tr["commodity"]), tr["buyer"], tr["seller"],
                           tr["bid"], tr["ask"], tr["price"]])
            if tr["bid"] > tr["ask"]:
                counts["trades_at_ask_price" if tr["price"] == tr["ask"]
                       else "trades_at_bid_price"] += 1

        log["actions"].append(acts)
        log["planner_actions"].append(pacts)
        log["build_order"].append(perms["Build"])
        log["gather_order"].append(perms["Gather"])
        log["bonus_u"].append(bonus_u)
        log["regen_u"].append(np.where(ie.source, regen, np.nan))
        log["loc"].append(locs)
        log["inventory"].append([[a.inventory[k] for k in INVENTORY] for a in world.agents])
        log["escrow"].append([[a.escrow[k] for k in INVENTORY] for a in world.agents])
        log["labour"].append([a.endogenous["Labor"] for a in world.agents])
        log["resource"].append(ie.resource_maps())
        log["house_owner"].append(world.maps.get("House", owner=True).astype(np.int16))
        log["bid_hist"].append(ie.hist("bid"))
        log["ask_hist"].append(ie.hist("ask"))
        log["tax_rates"].append(np.array(ie.tax.curr_marginal_rates, np.float64))
        log["tax_paid"].append(paid)
        log["income"].append(income)
        log["lump_sum"].append(lump)
        log["rewards"].append([rew[str(i)] for i in range(n)])
        log["planner_reward"].append(rew[world.planner.idx])
        log["masks"].append(mobile_masks)
        log["planner_masks"].append(planner_masks)

        # -- coverage counts (reported, not stored)
        new_orders = sum(1 for a in acts if any(a in v for v in ie.order_actions.values()))
        counts["orders_posted"] += new_orders
        counts["builds"] += len(ie.build.builds[-1])
        counts["gathers"] += len(gathers)
        counts["gathers_with_bonus"] += sum(g["n"] == 2 for g in gathers)
        counts["gathers_without_moving"] += sum(
            tuple(locs_before[g["agent"]]) == tuple(g["loc"]) for g in gathers)
        counts["regrowths"] += len(ie.regrown)
        occupied = {tuple(x) for x in locs.tolist()}
        counts["regrowths_under_agent"] += sum((r, c) in occupied for _, r, c in ie.regrown)
        counts["moves_blocked"] += sum(
            a in ie.move_actions and tuple(locs[i]) == tuple(locs_before[i])
            for i, a in enumerate(acts))
        if tax_info:
            counts["tax_days"] += 1
            counts["tax_days_with_revenue"] += int(paid.sum() > 0)
        masks, pmasks = mobile_masks, planner_masks

    counts["trades"] = len(trades)
    counts["expired_orders"] = ie.expired
    counts["houses_at_end"] = int((world.maps.get("House", owner=True) >= 0).sum())

    dtypes = dict(actions=np.int32, planner_actions=np.int32, build_order=np.int32,
                  gather_order=np.int32, loc=np.int32, house_owner=np.int16,
                  masks=np.float32, planner_masks=np.float32)
    for k, v in log.items():
        out[k] = np.asarray(v, dtype=dtypes.get(k, np.float64))
    out["planner_actions"] = out["planner_actions"].reshape(steps, n_brackets)
    out["planner_masks"] = out["planner_masks"].reshape(steps, n_brackets, 22)
    out["trades"] = np.array(trades, np.int32).reshape(-1, 7)
    return out, counts


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="path of the .npz to write")
    args = parser.parse_args()

    source = Path(__file__).resolve()
    repo = source.parents[4]
    tap = DrawTap()
    arrays = {
        "ai_economist_version": np.array(importlib.metadata.version("ai-economist")),
        "numpy_version": np.array(np.__version__),
        "recorder_sha256": np.array(hashlib.sha256(source.read_bytes()).hexdigest()),
    }
    out_path = Path(args.out).resolve()
    try:
        out_rel = out_path.relative_to(repo)
    except ValueError:
        out_rel = out_path
    venv = shlex.quote(sys.prefix)
    arrays["command"] = np.array(
        "bash tests/environments/economy/gtb_reference/setup_venv.sh {0} && "
        "{0}/bin/python {1} --out {2}".format(
            venv, source.relative_to(repo), shlex.quote(str(out_rel))))
    summary = {}
    for name, spec in EPISODES.items():
        data, counts = record_episode(name, spec, tap)
        for k, v in data.items():
            arrays["{}/{}".format(name, k)] = v
        summary[name] = counts
    out_path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out_path, **arrays)
    print(json.dumps({"out": str(out_path), "bytes": out_path.stat().st_size,
                      "episodes": summary}, indent=1))


if __name__ == "__main__":
    main()

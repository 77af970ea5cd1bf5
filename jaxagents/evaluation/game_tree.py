"""Game trees as arrays: the host enumeration of a small two-player game with chance
only at the deal (``build_game_tree``), by stepping the environment itself, so the tree
cannot disagree with it -- the same information-state ids, observations and payoffs.

The result, a ``GameTree`` of flat arrays (nodes sorted by depth), is what the exact
evaluations of ``jaxagents.evaluation.exploitability`` run their vectorised passes over;
a game offers it as ``env.game_tree()``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct


@struct.dataclass
class GameTree:
    """A two-player game tree with chance only at the root (the deal), as arrays.

    ``N`` nodes sorted by depth, ``S`` information states, ``A`` actions, ``D`` the
    observation size. Node ``i`` of depth ``l`` lies in ``levels[l] <= i < levels[l+1]``,
    and every child of a depth-``l`` node has depth ``l + 1``.

    Attributes:
        parent: ``i32[N]`` parent node (-1 at the roots, one root per deal).
        parent_action: ``i32[N]`` action that led here (-1 at the roots).
        player: ``i32[N]`` player to act (0 or 1), -1 at terminals.
        infostate: ``i32[N]`` information-state id of the player to act, -1 at terminals.
        children: ``i32[N, A]`` child per action, -1 for illegal actions and terminals.
        payoff: ``f32[N, 2]`` net payoff of each player at terminals (0 elsewhere).
        chance: ``f32[N]`` probability of the node's deal.
        legal: ``bool[S, A]`` legal actions of each information state.
        infostate_player: ``i32[S]`` the player each information state belongs to.
        infostate_obs: ``f32[S, *obs_shape]`` that player's observation there (the env's format).
        levels: static tuple of depth boundaries (length ``depth + 2``).
        roles: static role names, in player order.
    """

    parent: jax.Array
    parent_action: jax.Array
    player: jax.Array
    infostate: jax.Array
    children: jax.Array
    payoff: jax.Array
    chance: jax.Array
    legal: jax.Array
    infostate_player: jax.Array
    infostate_obs: jax.Array
    levels: tuple = struct.field(pytree_node=False)
    roles: tuple = struct.field(pytree_node=False)

    @property
    def num_nodes(self) -> int:
        """``N``, the number of nodes."""
        return self.parent.shape[0]

    @property
    def num_infostates(self) -> int:
        """``S``, the number of information states."""
        return self.legal.shape[0]

    @property
    def num_actions(self) -> int:
        """``A``, the number of actions (the width of ``children`` and ``legal``)."""
        return self.legal.shape[1]


# ---------------------------------------------------------------------- enumeration
def build_game_tree(env, params=None, chunk: int = 1024) -> GameTree:
    """Enumerate ``env``'s game tree on the host by stepping the env itself.

    The env must have two roles of one agent with ``Discrete`` actions and provide
    ``all_deals() -> (deals, probs)``, a jit-able ``reset_from_deal(deal, params)``,
    ``num_infostates`` and ``info["infostate_id"]`` (``i32[2]`` by role, -1 for a
    player not to move). Chance must happen only in the deal. Children are expanded
    level by level with one compiled, vmapped ``step`` over chunks of ``chunk``
    nodes. Raises ``ValueError`` if an information-state id is inconsistent (two
    nodes with the same id but different observations, legal actions or players)
    or never reached.
    """
    roles = tuple(env.roles)
    if len(roles) != 2 or any(r.num_agents != 1 for r in env.roles.values()):
        raise ValueError("build_game_tree: the env must have two roles of one agent each")
    params = env.default_params() if params is None else params
    deals, probs = env.all_deals()
    num_actions = env.roles[roles[0]].action_space.n
    num_states = int(env.num_infostates)

    def step(state, action):
        acts = {r: action[None].astype(jnp.int32) for r in roles}
        return env.step(jax.random.key(0), state, acts, params)  # chance is all in the deal

    reset = jax.jit(jax.vmap(lambda d: env.reset_from_deal(d, params)))
    vstep = jax.jit(jax.vmap(step))

    def run_chunks(states, actions):
        """Step ``states[i]`` with ``actions[i]`` in fixed-size chunks (one compile)."""
        n = len(actions)
        outs = []
        for start in range(0, n, chunk):
            idx = np.arange(start, start + chunk).clip(max=n - 1)
            sub = jax.tree_util.tree_map(lambda x: x[idx], states)
            take = min(chunk, n - start)
            out = jax.device_get(vstep(sub, np.asarray(actions[idx], np.int32)))
            outs.append(jax.tree_util.tree_map(lambda x: x[:take], out))
        return jax.tree_util.tree_map(lambda *xs: np.concatenate(xs), *outs)

    states, ts = jax.device_get(reset(np.asarray(deals, np.int32)))
    n = len(deals)
    parent, parent_action = [np.full(n, -1)], [np.full(n, -1)]
    chance, payoff = [np.asarray(probs, np.float64)], [np.zeros((n, 2))]
    player, infostate, levels = [], [], [0]
    st_obs = np.zeros((num_states, *env.roles[roles[0]].observation_space.shape), np.float32)
    st_legal = np.zeros((num_states, num_actions), bool)
    st_player = np.full(num_states, -1, np.int64)
    offset = 0
    while n:
        levels.append(offset + n)
        active = np.stack([ts.active[r][:, 0] for r in roles], 1)  # [n, 2]
        live = ~ts.terminated & active.any(1)
        who = np.where(live, active.argmax(1), -1)
        ids = np.where(live, ts.info["infostate_id"][np.arange(n), who.clip(0)], -1)
        if np.any(live & (ids < 0)) or np.any(ids >= num_states):
            raise ValueError("build_game_tree: an acting player has no valid infostate_id")
        obs = np.stack([ts.obs[r][:, 0] for r in roles], 1)[np.arange(n), who.clip(0)]
        mask = np.stack([ts.action_mask[r][:, 0] for r in roles], 1)[np.arange(n), who.clip(0)]
        for i in np.nonzero(live)[0]:
            s = ids[i]
            if st_player[s] < 0:
                st_player[s], st_obs[s], st_legal[s] = who[i], obs[i], mask[i]
                continue
            same = np.array_equal(st_obs[s], obs[i]) and np.array_equal(st_legal[s], mask[i])
            if not same or st_player[s] != who[i]:
                raise ValueError(f"build_game_tree: information state {s} is inconsistent "
                                 "(different observations, legal actions or players)")
        player.append(who)
        infostate.append(ids)
        # expand every legal action of every live node
        par, act = np.nonzero(live[:, None] & mask)
        if len(par) == 0:
            break
        states, ts = run_chunks(jax.tree_util.tree_map(lambda x: x[par], states), act)
        rewards = np.stack([ts.reward[r][:, 0] for r in roles], 1)
        parent.append(offset + par)
        parent_action.append(act)
        chance.append(chance[-1][par])
        payoff.append(payoff[-1][par] + rewards)  # cumulative, in case a game pays early
        offset += n
        n = len(par)
        if len(levels) > 1000:
            raise ValueError("build_game_tree: the game does not end (depth > 1000)")
    if np.any(st_player < 0):
        raise ValueError(f"build_game_tree: information states never reached: {np.nonzero(st_player < 0)[0][:10]}")

    parent, parent_action = np.concatenate(parent), np.concatenate(parent_action)
    player, infostate = np.concatenate(player), np.concatenate(infostate)
    payoff = np.concatenate(payoff) * (player < 0)[:, None]
    children = np.full((len(parent), num_actions), -1, np.int64)
    has_parent = parent >= 0
    children[parent[has_parent], parent_action[has_parent]] = np.nonzero(has_parent)[0]
    i32 = lambda x: jnp.asarray(x, jnp.int32)
    return GameTree(
        parent=i32(parent),
        parent_action=i32(parent_action),
        player=i32(player),
        infostate=i32(infostate),
        children=i32(children),
        payoff=jnp.asarray(payoff, jnp.float32),
        chance=jnp.asarray(np.concatenate(chance), jnp.float32),
        legal=jnp.asarray(st_legal),
        infostate_player=i32(st_player),
        infostate_obs=jnp.asarray(st_obs),
        levels=tuple(int(x) for x in levels),
        roles=roles,
    )

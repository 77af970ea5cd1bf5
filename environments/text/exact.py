"""The card games' information states for exact evaluation of a language policy.

A text game's ``exact_game()`` capability returns a ``jaxagents.lm.evaluate.ExactGame``:
the game tree the evaluation scores and, for each information state, a deal and the
moves that lead there in the text game, so that the evaluator can render the prompt the
policy sees there. This module builds them:

* ``kuhn_exact_game``: Kuhn poker's tree, ``KuhnPoker().game_tree()`` -- the game
  TextArena's text describes (ante 1, bet 1; information-state ids and names as the
  vector game's, so a strategy table compares directly with Kuhn's equilibrium
  family). TextArena's own scoring moves one chip per round whatever was bet (its pot is
  always 2), which makes betting free: that game is not Kuhn poker, so the evaluation
  scores Kuhn poker's payoffs. The prompts are those of the text game's first round
  (its prompt names the number of rounds, so they are the env's).
* ``first_hand_tree``: the tree of a text game's first hand enumerated by stepping the
  text game itself (its deals given); an information state is the acting player's
  observation with the public moves so far. ``leduc_exact_game`` uses it: TextArena's
  Leduc hold'em bets differently from OpenSpiel's (a bet and two raises per round; a
  call pays the whole bet), so its tree is its own, scored in chips won in the hand.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxagents.evaluation.game_tree import GameTree
from jaxagents.lm.evaluate import ExactGame


def kuhn_exact_game(env) -> ExactGame:
    """``ExactGame`` of a ``TextKuhnPoker``: Kuhn poker's tree (one hand), each
    information state reached in the text game's first round."""
    from jaxagents_environments.games.kuhn import KuhnPoker
    from jaxagents_environments.text.kuhn import BET, CALL, CHECK, FOLD

    vec = KuhnPoker()
    tree = vec.game_tree()
    deals, _ = vec.all_deals()  # cards by seat (seat 0 acts first)
    parent = np.asarray(tree.parent)
    parent_action = np.asarray(tree.parent_action)
    infostate = np.asarray(tree.infostate)
    s = tree.num_infostates
    out_deals = np.zeros((s, env.max_rounds, 2), np.int32)
    history = np.full((s, 3), -1, np.int32)
    moves = np.zeros((s, tree.num_actions), np.int32)
    for i in range(s):
        node = int(np.argmax(infostate == i))
        path = []
        while parent[node] >= 0:
            path.append(int(parent_action[node]))
            node = int(parent[node])
        path.reverse()
        # TextArena's player 1 starts round 1: it is seat 0; cards by TextArena player
        out_deals[i] = [deals[node][1], deals[node][0]]
        for t, a in enumerate(path):
            facing = t > 0 and path[t - 1] == 1
            history[i, t] = ((FOLD, CALL) if facing else (CHECK, BET))[a]
        facing = bool(path) and path[-1] == 1
        moves[i] = (FOLD, CALL) if facing else (CHECK, BET)  # Kuhn's actions: 0 pass, 1 bet
    return ExactGame(tree, out_deals, history, moves, tuple(vec.infostate_names()), players=(1, 0))


def first_hand_tree(env, deals: np.ndarray, probs: np.ndarray, hand_over, payoff, name=None,
                    chunk: int = 512) -> ExactGame:
    """Enumerate the first hand of a text game on the host by stepping the game itself.

    Args:
        env: the text game (``reset_with_deals``, ``step_move``, ``legal_actions``).
        deals: ``[D, ...]`` every deal (``reset_with_deals``' argument); ``probs``
            ``f32[D]`` their probabilities.
        hand_over: ``state -> bool[]`` the first hand is over (a terminal of the tree).
        payoff: ``state -> f32[2]`` each player's payoff at such a state.
        name: ``(deal, player, moves) -> str`` an information state's name (default:
            its owner and moves).
        chunk: states stepped per compiled call.

    Returns the ``ExactGame`` whose tree's actions are the game's move codes and whose
    players are TextArena's. An information state is the acting player's observation
    with the moves so far (every move here is public).
    """
    num_moves = env.num_moves
    key = jax.random.PRNGKey(0)
    reset = jax.jit(jax.vmap(lambda d: env.reset_with_deals(d)[0]))
    canonical = np.asarray([np.flatnonzero(np.asarray(env.action_moves) == m)[0] for m in range(num_moves)])

    def look(state):
        legal = env.legal_actions(state)[canonical] & ~state.done
        end = hand_over(state) | state.done
        return state.player, env.observations(state)[state.player], legal, end, payoff(state)

    look = jax.jit(jax.vmap(look))
    step = jax.jit(jax.vmap(lambda st, m: env.step_move(key, st, m)[0]))

    def in_chunks(fn, *args):
        n = jax.tree_util.tree_leaves(args[0])[0].shape[0]
        outs = []
        for start in range(0, n, chunk):
            idx = np.arange(start, start + chunk).clip(max=n - 1)
            take = min(chunk, n - start)
            sub = [jax.tree_util.tree_map(lambda x: x[idx], a) for a in args]
            outs.append(jax.tree_util.tree_map(lambda x: np.asarray(x)[:take], jax.device_get(fn(*sub))))
        return jax.tree_util.tree_map(lambda *xs: np.concatenate(xs), *outs)

    deals = np.asarray(deals)
    states = in_chunks(reset, deals)
    n = len(deals)
    root = np.arange(n)
    hist = [()] * n
    parent, parent_action, chance = [np.full(n, -1)], [np.full(n, -1)], [np.asarray(probs, np.float64)]
    player, infostate, payoffs, levels = [], [], [], [0]
    ids: dict = {}
    st_legal, st_player, st_deal, st_hist = [], [], [], []
    offset = 0
    while n:
        levels.append(offset + n)
        who, obs, legal, end, pay = in_chunks(look, states)
        live = ~end
        level_ids = np.full(n, -1)
        for i in np.nonzero(live)[0]:
            k = (int(who[i]), obs[i].tobytes(), hist[i])
            if k not in ids:
                ids[k] = len(ids)
                st_legal.append(legal[i])
                st_player.append(int(who[i]))
                st_deal.append(deals[root[i]])
                st_hist.append(hist[i])
            level_ids[i] = ids[k]
        player.append(np.where(live, who, -1))
        infostate.append(level_ids)
        payoffs.append(np.where(end[:, None], pay, 0.0))
        par, mv = np.nonzero(live[:, None] & legal)
        if len(par) == 0:
            break
        states = in_chunks(step, jax.tree_util.tree_map(lambda x: x[par], states), mv.astype(np.int32))
        parent.append(offset + par)
        parent_action.append(mv)
        chance.append(chance[-1][par])
        root = root[par]
        hist = [hist[p] + (int(m),) for p, m in zip(par, mv)]
        offset += n
        n = len(par)

    parent, parent_action = np.concatenate(parent), np.concatenate(parent_action)
    player, infostate = np.concatenate(player), np.concatenate(infostate)
    children = np.full((len(parent), num_moves), -1, np.int64)
    has = parent >= 0
    children[parent[has], parent_action[has]] = np.nonzero(has)[0]
    legal = np.stack(st_legal)
    i32 = lambda x: jnp.asarray(x, jnp.int32)
    tree = GameTree(parent=i32(parent), parent_action=i32(parent_action), player=i32(player), infostate=i32(infostate),
                    children=i32(children), payoff=jnp.asarray(np.concatenate(payoffs), jnp.float32),
                    chance=jnp.asarray(np.concatenate(chance), jnp.float32), legal=jnp.asarray(legal),
                    infostate_player=i32(st_player), infostate_obs=jnp.zeros((len(st_player), 1), jnp.float32),
                    levels=tuple(int(x) for x in levels), roles=tuple(env.roles))
    depth = max(1, max(len(h) for h in st_hist))
    history = np.full((len(st_hist), depth), -1, np.int32)
    for i, h in enumerate(st_hist):
        history[i, : len(h)] = h
    moves = np.where(legal, np.arange(num_moves)[None, :], -1).astype(np.int32)
    name = name or (lambda deal, p, h: f"player {p}: {' '.join(map(str, h))}")
    names = tuple(name(d, p, h) for d, p, h in zip(st_deal, st_player, st_hist))
    return ExactGame(tree, np.stack(st_deal), history, moves, names)


def leduc_exact_game(env) -> ExactGame:
    """``ExactGame`` of a ``TextLeducPoker``: TextArena's Leduc hold'em, its first hand,
    scored in chips won (the tree enumerated by ``first_hand_tree``)."""
    from jaxagents_environments.text.leduc import CALL, CHECK, MOVES, RANKS

    # every deal of ranks (player 0's, player 1's, board): two cards of each rank
    deals, probs = [], []
    for a in range(3):
        for b in range(3):
            for c in range(3):
                left = [2, 2, 2]
                p = left[a] / 6
                left[a] -= 1
                p *= left[b] / 5
                left[b] -= 1
                p *= left[c] / 4
                if p > 0:
                    deals.append(np.tile([a, b, c], (env.max_rounds, 1)))
                    probs.append(p)
    bank = env.starting_bank

    def hand_over(state):
        return state.extra.hand > 0

    def payoff(state):  # chips won in the hand (the next hand's ante, if dealt, given back)
        return (state.extra.banks - bank + (state.extra.hand > 0)).astype(jnp.float32)

    def name(deal, p, h):
        cards, flop, prev_check = deal[0], False, False
        for m in h:  # the first round ends at a call or at a second check in a row
            flop = flop or m == CALL or (m == CHECK and prev_check)
            prev_check = m == CHECK
        board = RANKS[cards[2]] if flop else "-"
        return f"P{p} {RANKS[cards[p]]} board {board}: {' '.join(MOVES[m] for m in h) or '-'}"

    return first_hand_tree(env, np.stack(deals), np.asarray(probs), hand_over, payoff, name)

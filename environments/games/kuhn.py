"""Kuhn poker, as OpenSpiel's ``kuhn_poker``, optionally several hands per episode.

Rules (one hand). The deck is J < Q < K (cards 0, 1, 2). Both players ante 1 chip
and get one private card each; the third card is not used. Actions are Pass (0)
and Bet (1), both always legal. The first player acts, then the players alternate:

==============  ====================================================
history         outcome (net chips for the first player)
==============  ====================================================
pass pass       showdown, pot 2: +1 / -1
pass bet pass   the first player folds: -1
pass bet bet    showdown, pot 4: +2 / -2
bet pass        the second player folds: +1
bet bet         showdown, pot 4: +2 / -2
==============  ====================================================

At a showdown the higher card wins. The game is zero-sum and its payoffs are
identical to OpenSpiel's (checked exhaustively in the tests).

Several hands (``params.num_hands``, default 1). SPIRAL's text Kuhn poker plays 5
hands per episode with the first player alternating and scores the total chips:
in hand ``h`` (0-based), ``player_0`` is the first to act when ``h`` is even and
``player_1`` when it is odd. Each hand's chips are paid as the reward of the step
that ends the hand (so the episode return is the total chips); the next hand is
dealt in the same step and the episode terminates after the last hand. Every
hand's deal is drawn from a seed set at ``reset``, so an episode's cards depend
only on the reset key (duplicate-poker evaluation replays the same key with the
seats swapped).

Roles: ``player_0`` and ``player_1``, one agent each, ``Discrete(2)`` actions. Only
the player to move is ``active``; the other player's action is ignored.

Observation, for each player, ``f32[11]``: exactly OpenSpiel's
``information_state_tensor`` of the current hand, from the player's seat in that
hand: a one-hot of the seat (0 = acts first in this hand), a one-hot of the own
card (J, Q, K) and three betting slots of (pass, bet) bits. Hands are independent
and chips add up, so the current hand's information state is all a player needs.

Information-state ids (``env.infostate_id(state, player)``, also
``info["infostate_id"]``, ``i32[2]`` indexed by role): the 12 decision information
states of a hand (6 per seat) are numbered ``seat * 6 + card * 2 + k`` with
``k = 0`` for the seat's first decision (seat 0: "", seat 1: after a pass) and
``k = 1`` for its second (seat 0: after pass-bet, seat 1: after a bet); a player
that is not to move has id -1. ``env.infostate_names()`` gives OpenSpiel's strings
("0", "0pb", "1p", ...) in id order; ``jaxagents.evaluation.exploitability``
enumerates the game with the same ids. Note: ``info`` is the info of the step
that produced it, so under auto-reset the ``info`` of an episode's last step
describes the finished episode while ``obs`` already shows the next one.

Out-of-range actions (anything but 0 and 1) are played as Pass (check, or fold
when facing a bet) and flagged in ``info["illegal_action"]``; Kuhn poker has no
other illegal actions, so the action mask is all True. Stepping a finished game
without a reset changes nothing and pays zero.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxagents.core import Box, Discrete, Env, Role
from jaxagents.core.rng import fmix32
from jaxagents.core.validate import check_positive_int

PASS, BET = 0, 1
NUM_CARDS = 3
NUM_ACTIONS = 2
NUM_INFOSTATES = 12
OBS_SIZE = 11
ROLES = ("player_0", "player_1")

# Betting histories of one hand, by code. 0..3 are decision points, 4..8 terminal.
HISTORIES = ("", "p", "b", "pb", "pp", "pbp", "pbb", "bp", "bb")
FIRST_TERMINAL = 4
# NEXT[code, action] for the decision codes.
NEXT = np.array([[1, 2], [4, 3], [7, 8], [5, 6]], np.int32)
# Seat to act (-1 at terminals) and which of the seat's two decisions it is.
NODE_SEAT = np.array([0, 1, 1, 0, -1, -1, -1, -1, -1], np.int32)
NODE_K = np.array([0, 0, 1, 1, 0, 0, 0, 0, 0], np.int32)
# Terminal payoffs for seat 0: a showdown stake (times +-1 by the cards) or a fold result.
SHOWDOWN_STAKE = np.array([0, 0, 0, 0, 1, 0, 2, 0, 2], np.float32)
FOLD_PAYOFF = np.array([0, 0, 0, 0, 0, -1, 0, 1, 0], np.float32)


def _history_bits() -> np.ndarray:
    """``f32[9, 6]``: OpenSpiel's betting slots (pass bit, bet bit) x 3 per history."""
    bits = np.zeros((len(HISTORIES), 3, 2), np.float32)
    for code, h in enumerate(HISTORIES):
        for i, c in enumerate(h):
            bits[code, i, 0 if c == "p" else 1] = 1.0
    return bits.reshape(len(HISTORIES), 6)


HISTORY_BITS = _history_bits()


@struct.dataclass
class KuhnParams:
    """Sweepable settings of ``KuhnPoker``.

    Attributes:
        num_hands: ``i32[]`` hands per episode, >= 1; ``player_0`` acts first in the
            even hands (0-based) and ``player_1`` in the odd ones. Exact evaluation
            only at 1.
    """

    num_hands: jax.Array


@struct.dataclass
class KuhnState:
    """``cards``: ``i32[2]`` the current hand's cards by seat (seat 0 acts first);
    ``node``: ``i32[]`` betting-history code (index into ``HISTORIES``);
    ``hand``: ``i32[]`` index of the current hand; ``seed``: ``u32[]`` source of
    every hand's deal; ``done``: ``bool[]``."""

    cards: jax.Array
    node: jax.Array
    hand: jax.Array
    seed: jax.Array
    done: jax.Array


# Every deal of one hand (cards by seat), in OpenSpiel's chance order.
DEALS = np.array([(a, b) for a in range(NUM_CARDS) for b in range(NUM_CARDS) if a != b], np.int32)


def deal_cards(seed: jax.Array, hand: jax.Array) -> jax.Array:
    """``i32[2]``: the cards of hand ``hand`` (by seat) for an episode seed.

    A counter-based hash of ``(seed, hand)`` picks one of the 6 deals: with a uniform
    random seed every hand's deal is uniform (bias below 1e-9) and hands look
    independent. A hash rather than ``jax.random`` inside ``step`` because threefry
    doubles the compile time of this tiny step function.
    """
    x = fmix32(jnp.asarray(seed, jnp.uint32) + jnp.asarray(hand, jnp.uint32) * jnp.uint32(0x9E3779B9))
    return jnp.asarray(DEALS)[(x % jnp.uint32(len(DEALS))).astype(jnp.int32)]


class KuhnPoker(Env):
    """Kuhn poker with two roles (see the module docstring).

    Args:
        num_hands: default hands per episode (a param: sweepable and vmappable),
            a positive int; SPIRAL uses 5.
    """

    num_infostates = NUM_INFOSTATES
    num_actions = NUM_ACTIONS

    def __init__(self, num_hands: int = 1):
        num_hands = check_positive_int("num_hands", num_hands)
        self._num_hands = int(num_hands)
        obs = Box(0.0, 1.0, (OBS_SIZE,), jnp.float32)
        self.roles = {r: Role(1, obs, Discrete(NUM_ACTIONS)) for r in ROLES}

    def default_params(self) -> KuhnParams:
        return KuhnParams(num_hands=jnp.asarray(self._num_hands, jnp.int32))

    def check_params(self, params: KuhnParams) -> None:
        if np.any(params.num_hands < 1):
            raise ValueError(f"params.num_hands must be >= 1, got {params.num_hands}")

    # ------------------------------------------------------------------ info states
    def _seats(self, state: KuhnState) -> jax.Array:
        """``i32[2]``: each role's seat in the current hand (the first player alternates)."""
        return (jnp.arange(2, dtype=jnp.int32) + state.hand) % 2

    def infostate_id(self, state: KuhnState, player) -> jax.Array:
        """``i32[]``: the id of role ``player``'s (0 or 1) information state when it is
        to move, else -1 (see the module docstring for the numbering)."""
        seat = (jnp.asarray(player, jnp.int32) + state.hand) % 2
        to_move = (jnp.asarray(NODE_SEAT)[state.node] == seat) & ~state.done
        ident = seat * 6 + state.cards[seat] * 2 + jnp.asarray(NODE_K)[state.node]
        return jnp.where(to_move, ident, -1).astype(jnp.int32)

    @staticmethod
    def infostate_names() -> list[str]:
        """OpenSpiel's information-state strings, in id order."""
        names = []
        for seat, hists in ((0, ("", "pb")), (1, ("p", "b"))):
            names += [f"{card}{h}" for card in range(NUM_CARDS) for h in hists]
        return names

    # ------------------------------------------------------------------ deals
    @staticmethod
    def all_deals() -> tuple[np.ndarray, np.ndarray]:
        """Every deal of one hand and its probability: ``(i32[6, 2] cards by seat, f32[6])``,
        in OpenSpiel's chance order (the first player's card first)."""
        return DEALS.copy(), np.full(len(DEALS), 1.0 / len(DEALS), np.float32)

    def reset_from_deal(self, cards, params=None, seed=0):
        """Start an episode whose first hand has ``cards`` (``i32[2]`` by seat = by role);
        later hands are dealt from ``seed`` (jit-able; for tests and tree enumeration)."""
        params = self._params(params)
        state = KuhnState(
            cards=jnp.asarray(cards, jnp.int32),
            node=jnp.zeros((), jnp.int32),
            hand=jnp.zeros((), jnp.int32),
            seed=jnp.asarray(seed, jnp.uint32),
            done=jnp.zeros((), bool),
        )
        return state, self._timestep(state, jnp.zeros(2, jnp.float32), jnp.zeros((), bool))

    # ------------------------------------------------------------------ reset / step
    def reset_env(self, key, params):
        seed = jax.random.bits(key, (), jnp.uint32)
        return self.reset_from_deal(deal_cards(seed, jnp.zeros((), jnp.int32)), params, seed)

    def step_env(self, key, state, actions, params):
        seats = self._seats(state)
        seat = jnp.asarray(NODE_SEAT)[state.node]
        # the role in that seat: seats is a permutation of (0, 1)
        raw = jnp.where(seats[0] == seat, actions["player_0"][0], actions["player_1"][0])
        playing = ~state.done
        in_range = (raw == PASS) | (raw == BET)
        action = jnp.where(in_range, raw, PASS)
        nxt = jnp.asarray(NEXT)[jnp.clip(state.node, 0, 3), action]
        hand_over = nxt >= FIRST_TERMINAL
        win = jnp.where(state.cards[0] > state.cards[1], 1.0, -1.0)
        seat0 = jnp.where(
            jnp.asarray(SHOWDOWN_STAKE)[nxt] > 0, jnp.asarray(SHOWDOWN_STAKE)[nxt] * win, jnp.asarray(FOLD_PAYOFF)[nxt]
        )
        seat_reward = jnp.stack([seat0, -seat0]) * (hand_over & playing)
        reward = seat_reward[seats].astype(jnp.float32)  # by role

        last = state.hand + 1 >= params.num_hands
        # a finished hand that is not the last one: deal the next hand in the same step
        next_hand = hand_over & ~last
        hand = jnp.where(next_hand, state.hand + 1, state.hand)
        new = KuhnState(
            cards=jnp.where(next_hand, deal_cards(state.seed, hand), state.cards),
            node=jnp.where(next_hand, 0, nxt),
            hand=hand,
            seed=state.seed,
            done=hand_over & last,
        )
        # a finished game stays as it was
        new = jax.tree_util.tree_map(lambda n, o: jnp.where(playing, n, o), new, state)
        return new, self._timestep(new, reward, playing & ~in_range)

    # ------------------------------------------------------------------ observations
    def _timestep(self, state, reward, illegal):
        seats = self._seats(state)
        hist = jnp.asarray(HISTORY_BITS)[state.node]
        obs = jnp.concatenate(
            [
                jax.nn.one_hot(seats, 2, dtype=jnp.float32),
                jax.nn.one_hot(state.cards[seats], NUM_CARDS, dtype=jnp.float32),
                jnp.broadcast_to(hist, (2, 6)),
            ],
            axis=-1,
        )  # [2 roles, 11]
        active = (seats == jnp.asarray(NODE_SEAT)[state.node]) & ~state.done
        ids = jnp.stack([self.infostate_id(state, 0), self.infostate_id(state, 1)])
        return self.make_timestep(
            obs={r: obs[i : i + 1] for i, r in enumerate(ROLES)},
            reward={r: reward[i : i + 1] for i, r in enumerate(ROLES)},
            terminated=state.done,
            action_mask={r: jnp.ones((1, NUM_ACTIONS), bool) for r in ROLES},
            active={r: active[i : i + 1] for i, r in enumerate(ROLES)},
            info={"infostate_id": ids, "illegal_action": illegal, "hand": state.hand},
        )

    def global_obs(self, state, params=None):
        """Both cards (one-hot by seat), the history bits and the seat of ``player_0``: ``f32[13]``."""
        cards = jax.nn.one_hot(state.cards, NUM_CARDS, dtype=jnp.float32).reshape(-1)
        hist = jnp.asarray(HISTORY_BITS)[state.node]
        return jnp.concatenate([cards, hist, (state.hand % 2).astype(jnp.float32)[None]])

    def game_tree(self):
        """The single-hand game tree for exact exploitability (see
        ``jaxagents.evaluation.exploitability``); ids as ``infostate_id``. Cached."""
        return _game_tree()

    def exact_evaluation(self, params=None):
        """Exact exploitability (capability of ``jaxagents.core.env``), for one hand."""
        from jaxagents.evaluation.exploitability import evaluator

        params = self.default_params() if params is None else params
        if int(np.asarray(params.num_hands)) != 1:
            return None  # the tree is one hand's; a match of several hands has none
        return evaluator(self.game_tree())


@functools.lru_cache(maxsize=1)
def _game_tree():
    from jaxagents.evaluation.game_tree import build_game_tree

    return build_game_tree(KuhnPoker(), KuhnParams(num_hands=jnp.asarray(1, jnp.int32)))

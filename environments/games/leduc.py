"""Leduc hold'em, as OpenSpiel's ``leduc_poker`` (two players).

Rules. Six cards, J, Q, K in two suits, numbered 0..5 as in OpenSpiel (J1 J2 Q1 Q2
K1 K2, so the rank is ``card // 2``). Both players ante 1 chip and get one private
card. Two betting rounds; a public card is revealed between them. Player 0 acts
first in both rounds. Actions (OpenSpiel's ids):

* Fold (0): give up the pot. Legal only when facing a bet (OpenSpiel does not let a
  player fold when it could check).
* Call (1): match the opponent's contribution (a check when there is nothing to
  match). Always legal.
* Raise (2): match, then add 2 chips in round 1 or 4 in round 2. Legal while the
  round has had fewer than 2 raises.

A round ends when both players have checked, or a raise has been called. After
round 2 there is a showdown: a private card that pairs the public card wins; else
the higher private rank wins; equal ranks split the pot. A fold ends the game and
the other player wins the folder's contribution. Rewards are net chips (zero-sum),
paid at the end only, and equal OpenSpiel's returns (checked in the tests).

The betting of a round is one of 11 sequences (codes into ``SEQUENCES``): 6 decision
points ("", c, r, cr, rr, crr) and 5 ways to end the round (cc, rc, crc, rrc, crrc).
The whole game is a small table walk over these codes, which is what makes the
step cheap and branch-free.

Chance: the reset key deals the two private cards *and* the public card at once
(a uniform ordered triple of distinct cards, the same distribution as OpenSpiel's
sequential deal); the public card stays hidden until round 2. ``reset_from_deal``
starts from a given deal.

Roles: ``player_0`` and ``player_1``, one agent each, ``Discrete(3)`` actions. Only
the player to move is ``active``; the other player's action is ignored.

Observation, for each player, ``f32[30]``: exactly OpenSpiel's
``information_state_tensor``: one-hot of the observing player (2), own card (6),
public card (6, zeros in round 1), then the betting of both rounds as 2 x 4 slots
of (call bit, raise bit).

Information-state ids (``env.infostate_id(state, player)``, also
``info["infostate_id"]``, ``i32[2]`` by role; -1 for a player that is not to move),
936 in all: round 1: ``card * 6 + d`` (0..35); round 2: ``36 + ((card * 5 + p) * 5
+ e) * 6 + d`` with ``d`` the decision code (0..5) within the round, ``e`` the
round-1 ending (0..4), ``p`` the public card's index among the 5 cards other than
the own card. ``env.infostate_names()`` gives OpenSpiel's strings in id order.

Action mask: the legal actions at the current decision point (the same for both
players, so random legal play of the inactive player is well defined); all True
once the game is over. Illegal or out-of-range actions are played as Call, like
OpenSpiel's ``action_mapping=True``, and flagged in ``info["illegal_action"]``.
Stepping a finished game without a reset changes nothing and pays zero.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from flax import struct

from jaxagents.core import Box, Discrete, Env, Role

FOLD, CALL, RAISE = 0, 1, 2
NUM_CARDS = 6
NUM_ACTIONS = 3
NUM_INFOSTATES = 936
OBS_SIZE = 30
ANTE = 1
RAISE_SIZE = (2, 4)  # per round
STARTING_MONEY = 100  # only for OpenSpiel's information-state strings
ROLES = ("player_0", "player_1")

# One round's betting sequences: 0..5 decision points, 6..10 round over.
SEQUENCES = ("", "c", "r", "cr", "rr", "crr", "cc", "rc", "crc", "rrc", "crrc")
FIRST_END = 6
# NEXT[code, action] for decision codes; -1 = illegal; a fold ends the game (code kept).
NEXT = np.array(
    [[-1, 1, 2], [-1, 6, 3], [0, 7, 4], [0, 8, 5], [0, 9, -1], [0, 10, -1]], np.int32
)
LEGAL = NEXT >= 0
SEQ_PLAYER = np.array([0, 1, 1, 0, 0, 1], np.int32)  # who acts at each decision code


def _tables():
    """Betting-slot bits ``f32[11, 8]`` and raise units per player ``f32[11, 2]`` of
    every sequence (a player's contribution in a round is units x raise size)."""
    bits = np.zeros((len(SEQUENCES), 4, 2), np.float32)
    units = np.zeros((len(SEQUENCES), 2), np.float32)
    for code, seq in enumerate(SEQUENCES):
        stake, own = 0, [0, 0]
        for i, c in enumerate(seq):
            p = i % 2
            if c == "r":
                stake += 1
                bits[code, i, 1] = 1
            else:
                bits[code, i, 0] = 1
            own[p] = stake
        units[code] = own
    return bits.reshape(len(SEQUENCES), 8), units


SEQ_BITS, SEQ_UNITS = _tables()

# Every deal (player 0's card, player 1's card, public card), in OpenSpiel's chance order.
DEALS = np.array(
    [(a, b, c) for a in range(NUM_CARDS) for b in range(NUM_CARDS) for c in range(NUM_CARDS) if len({a, b, c}) == 3],
    np.int32,
)


@struct.dataclass
class LeducState:
    """``cards``: ``i32[3]`` (player 0's, player 1's, public); ``round``: ``i32[]`` 0 or 1;
    ``seq``: ``i32[2]`` betting-sequence code of each round (round 2's is 0 until it
    starts); ``done``: ``bool[]``."""

    cards: jax.Array
    round: jax.Array
    seq: jax.Array
    done: jax.Array


def contributions(seq: jax.Array) -> jax.Array:
    """``f32[2]``: each player's chips in the pot after round sequences ``seq`` (``i32[2]``)."""
    units = jnp.asarray(SEQ_UNITS)[seq]  # [round, player]
    return ANTE + units[0] * RAISE_SIZE[0] + units[1] * RAISE_SIZE[1]


def hand_strength(private: jax.Array, public: jax.Array) -> jax.Array:
    """A pair with the public card beats every high card; otherwise the private rank
    decides (both players share the public card)."""
    rank = private // 2
    return jnp.where(rank == public // 2, 10 + rank, rank)


class LeducPoker(Env):
    """Leduc hold'em with two roles (see the module docstring). No constructor
    arguments and no params: the rules are OpenSpiel's defaults."""

    num_infostates = NUM_INFOSTATES
    num_actions = NUM_ACTIONS

    def __init__(self):
        obs = Box(0.0, 1.0, (OBS_SIZE,), jnp.float32)
        self.roles = {r: Role(1, obs, Discrete(NUM_ACTIONS)) for r in ROLES}

    # ------------------------------------------------------------------ info states
    def _node(self, state: LeducState) -> jax.Array:
        return state.seq[state.round]

    def infostate_id(self, state: LeducState, player) -> jax.Array:
        """``i32[]``: the id of ``player``'s (0 or 1) information state when it is to
        move, else -1 (see the module docstring for the numbering)."""
        player = jnp.asarray(player, jnp.int32)
        node = self._node(state)
        to_move = (node < FIRST_END) & (jnp.asarray(SEQ_PLAYER)[jnp.clip(node, 0, 5)] == player) & ~state.done
        card, public = state.cards[player], state.cards[2]
        pub_index = public - (public > card)
        round2 = 36 + ((card * 5 + pub_index) * 5 + (state.seq[0] - FIRST_END)) * 6 + node
        ident = jnp.where(state.round == 0, card * 6 + node, round2)
        return jnp.where(to_move, ident, -1).astype(jnp.int32)

    @staticmethod
    def infostate_names() -> list[str]:
        """OpenSpiel's information-state strings, in id order."""

        def name(card, public, seq1, seq2):
            rnd = 0 if public is None else 1
            node = SEQUENCES.index((seq1, seq2)[rnd])
            player = int(SEQ_PLAYER[node])
            codes = np.array([SEQUENCES.index(seq1), SEQUENCES.index(seq2)])
            paid = ANTE + SEQ_UNITS[codes, :].T @ np.array(RAISE_SIZE, np.float32)
            acts = lambda s: " ".join("1" if c == "c" else "2" for c in s)
            out = f"[Observer: {player}][Private: {card}][Round {rnd + 1}][Player: {player}]"
            out += f"[Pot: {int(paid.sum())}][Money: {' '.join(str(int(STARTING_MONEY - x)) for x in paid)}]"
            if public is not None:
                out += f"[Public: {public}]"
            return out + f"[Round1: {acts(seq1)}][Round2: {acts(seq2)}]"

        names = [name(c, None, SEQUENCES[d], "") for c in range(NUM_CARDS) for d in range(FIRST_END)]
        for c in range(NUM_CARDS):
            for public in [p for p in range(NUM_CARDS) if p != c]:
                for e in range(FIRST_END, len(SEQUENCES)):
                    names += [name(c, public, SEQUENCES[e], SEQUENCES[d]) for d in range(FIRST_END)]
        return names

    # ------------------------------------------------------------------ deals
    @staticmethod
    def all_deals() -> tuple[np.ndarray, np.ndarray]:
        """Every deal and its probability: ``(i32[120, 3] (card 0, card 1, public), f32[120])``,
        in OpenSpiel's chance order."""
        return DEALS.copy(), np.full(len(DEALS), 1.0 / len(DEALS), np.float32)

    def reset_from_deal(self, cards, params=None):
        """Start a game with ``cards`` = ``i32[3]`` (player 0's, player 1's, public); jit-able."""
        params = self._params(params)
        state = LeducState(
            cards=jnp.asarray(cards, jnp.int32),
            round=jnp.zeros((), jnp.int32),
            seq=jnp.zeros(2, jnp.int32),
            done=jnp.zeros((), bool),
        )
        return state, self._timestep(state, jnp.zeros(2, jnp.float32), jnp.zeros((), bool))

    # ------------------------------------------------------------------ reset / step
    def reset_env(self, key, params):
        return self.reset_from_deal(jnp.asarray(DEALS)[jax.random.randint(key, (), 0, len(DEALS))], params)

    def step_env(self, key, state, actions, params):
        node = jnp.clip(self._node(state), 0, FIRST_END - 1)
        mover = jnp.asarray(SEQ_PLAYER)[node]
        raw = jnp.where(mover == 0, actions["player_0"][0], actions["player_1"][0])
        playing = ~state.done
        legal = (raw >= 0) & (raw < NUM_ACTIONS) & jnp.asarray(LEGAL)[node, jnp.clip(raw, 0, NUM_ACTIONS - 1)]
        action = jnp.where(legal, raw, CALL)
        fold = action == FOLD
        nxt = jnp.where(fold, node, jnp.asarray(NEXT)[node, action])
        seq = state.seq.at[state.round].set(nxt)
        round_over = ~fold & (nxt >= FIRST_END)
        showdown = round_over & (state.round == 1)
        done = fold | showdown

        paid = contributions(seq)
        strength = hand_strength(state.cards[:2], state.cards[2])
        win0 = jnp.sign(strength[0] - strength[1]).astype(jnp.float32)
        folder_loss = jnp.where(jnp.arange(2) == mover, -1.0, 1.0) * paid[mover]
        at_showdown = jnp.stack([win0, -win0]) * paid  # equal stakes at a showdown
        reward = jnp.where(fold, folder_loss, jnp.where(showdown, at_showdown, 0.0))
        reward = (reward * playing).astype(jnp.float32)

        new = LeducState(
            cards=state.cards,
            round=jnp.where(round_over & ~showdown, 1, state.round),
            seq=seq,
            done=done,
        )
        new = jax.tree_util.tree_map(lambda n, o: jnp.where(playing, n, o), new, state)
        return new, self._timestep(new, reward, playing & ~legal)

    # ------------------------------------------------------------------ observations
    def _timestep(self, state, reward, illegal):
        in_round2 = state.round == 1
        public = jax.nn.one_hot(state.cards[2], NUM_CARDS, dtype=jnp.float32) * in_round2
        betting = jnp.asarray(SEQ_BITS)[state.seq].reshape(-1)  # round 2's code is 0 (no bits) in round 1
        shared = jnp.concatenate([public, betting])
        obs = jnp.concatenate(
            [
                jnp.eye(2, dtype=jnp.float32),
                jax.nn.one_hot(state.cards[:2], NUM_CARDS, dtype=jnp.float32),
                jnp.broadcast_to(shared, (2, shared.shape[0])),
            ],
            axis=-1,
        )  # [2 players, 30]
        node = self._node(state)
        mover = jnp.asarray(SEQ_PLAYER)[jnp.clip(node, 0, FIRST_END - 1)]
        legal = jnp.asarray(LEGAL)[jnp.clip(node, 0, FIRST_END - 1)] | state.done
        active = (jnp.arange(2) == mover) & ~state.done
        ids = jnp.stack([self.infostate_id(state, 0), self.infostate_id(state, 1)])
        return self.make_timestep(
            obs={r: obs[i : i + 1] for i, r in enumerate(ROLES)},
            reward={r: reward[i : i + 1] for i, r in enumerate(ROLES)},
            terminated=state.done,
            action_mask={r: legal[None] for r in ROLES},
            active={r: active[i : i + 1] for i, r in enumerate(ROLES)},
            info={"infostate_id": ids, "illegal_action": illegal},
        )

    def global_obs(self, state, params=None):
        """Both private cards, the public card (once revealed) and the betting: ``f32[34]``."""
        in_round2 = state.round == 1
        cards = jax.nn.one_hot(state.cards[:2], NUM_CARDS, dtype=jnp.float32).reshape(-1)
        public = jax.nn.one_hot(state.cards[2], NUM_CARDS, dtype=jnp.float32) * in_round2
        betting = jnp.asarray(SEQ_BITS)[state.seq].reshape(-1)
        return jnp.concatenate([cards, public, betting])

    def game_tree(self):
        """The game tree for exact exploitability (see
        ``jaxagents.evaluation.exploitability``); ids as ``infostate_id``. Cached."""
        return _game_tree()

    def exact_evaluation(self, params=None):
        """Exact exploitability (capability of ``jaxagents.core.env``)."""
        from jaxagents.evaluation.exploitability import evaluator

        return evaluator(self.game_tree())


@functools.lru_cache(maxsize=1)
def _game_tree():
    from jaxagents.evaluation.game_tree import build_game_tree

    game = LeducPoker()
    return build_game_tree(game, game.default_params())

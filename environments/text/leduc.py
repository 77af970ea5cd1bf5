"""Leduc hold'em as TextArena 0.7.4's ``LeducHoldem`` text game, inside ``jit``.

TextArena 0.7.4 ships ``envs/LeducHoldem/env.py`` but its registrations are commented
out; the commented-out ``LeducHoldem-v0`` is ``LeducHoldemEnv(max_rounds=5)`` with the
default wrappers, which is what this environment plays (and what the recorded reference
games use).

TextArena's Leduc is not OpenSpiel's, so only the deck and the showdown are
``jaxagents_environments.games.leduc``'s (``DEALS``, ``hand_strength``: a pair with the
board card beats a high card, equal ranks split); the betting is TextArena's own and
kept here, as its code plays it:

* ``max_rounds`` hands (5), both players starting with ``starting_bank`` chips (100).
  Each hand both ante 1 (the pot starts at 2) and get a card of J J Q Q K K, and a
  board card is put aside (Python's ``random``; here a uniform deal per hand from the
  reset key, or given: ``reset_with_deals``). Player 1 starts the first hand and the
  starting player alternates; they also start the second betting round.
* With no bet on the table the moves are ``[check]`` and ``[bet]`` (the round's unit:
  2 pre-flop, 4 after); facing one, ``[call]``, ``[fold]`` and, after fewer than two
  raises, ``[raise]``. A bet puts in the unit and sets the bet to it; a raise puts in
  *one unit* and adds a unit to the bet; a call puts in *the whole bet* (whatever the
  caller had put in) and ends the betting round, as does a second check in a row. (A
  bet then counts no raise: a round can see a bet and two raises.)
* TextArena remembers "the previous move was a check" across hands: after a hand that
  ended check-check at the showdown, the first check of the next hand ends its first
  betting round at once (no announcement of the check). This is reproduced.
* At the showdown the pot goes to the better hand, or is split (the odd chip to
  player 1); a fold gives it to the other player. After ``max_rounds`` hands (or when
  a bank is below 2 chips at a new deal: that player loses) the larger bank wins
  (+1/-1), equal banks draw (0/0).
* TextArena lists the legal moves of a Python ``set``, whose order depends on the
  process's string-hash seed; ``set_orders`` gives the three sets' orders (default:
  the orders with ``PYTHONHASHSEED=0``, with which the reference games are recorded).

Move codes: 0 ``[check]``, 1 ``[bet]``, 2 ``[call]``, 3 ``[raise]``, 4 ``[fold]``, 5 a match
whose lowercase is no move name (TextArena lowercases the match: ``[raiſe]`` matches
case-insensitively but is ``"raiſe"``, an illegal move), -1 no match. ``info`` adds ``banks`` (``i32[2]``) and ``hand`` (1-based).

Pieces: whole messages, with each bank a piece of its own (``" 97; Player 1:"`` and
``" 103\\n"``); every boundary is a split point of GPT-2's and Qwen2's pre-tokenizers.

Observation (roles ``player_0`` and ``player_1``, one agent each) ``i32[P + U]``
(``P = 682``, ``U = 102`` with the default arguments): entries ``0 .. P-1`` are the ids
of the pieces (``piece_table``) that make up the player's TextArena observation so far,
in order, -1 after its end; the last ``U`` are one slot per reply of the episode, in
order, valid or not: the action index that was played, or -1 for a slot not reached yet
or a reply given as text (``step_move``). ``env.render_observation(obs)`` turns it back
into TextArena's string. Only the player to move is active.

Actions ``Discrete(A)``: action ``a`` is the reply string ``actions.LEDUC_POKER[a]`` (29
strings by default), played exactly as a language model's reply would be. Actions 0-4
are ``[check]``, ``[bet]``, ``[call]``, ``[raise]``, ``[fold]``; 5-17 and 19-20 other
spellings of those five moves (case variants, bare words, a move inside other text); 18
(``[raiſe]``) matches but is no move name; 21-28 match no move (never valid).
``legal_actions`` marks the strings that are valid moves in the current position.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxagents.core.validate import check_positive_int
from jaxagents.lm.grammar import LiteralGrammar, format_action_text
from jaxagents_environments.games.leduc import DEALS, hand_strength
from jaxagents_environments.text import actions as action_tables
from jaxagents_environments.text.base import GAME, PieceBuilder, TextGame

CHECK, BET, CALL, RAISE, FOLD = 0, 1, 2, 3, 4
NOT_A_MOVE = 5  # a match that lowercases to no move name (``[raiſe]``): invalid, as an illegal move
MOVES = ("check", "bet", "call", "raise", "fold")
RANKS = "JQK"
# the legal sets (no bet; facing a bet with raises left; facing a bet), as listed with
# PYTHONHASHSEED=0
SET_ORDERS = (("bet", "check"), ("fold", "call", "raise"), ("fold", "call"))
MAX_LOSS_PER_HAND = 25  # ante 1, pre-flop at most 2 + 6, after the flop at most 4 + 12


def prompt(player: int) -> str:
    """TextArena's Leduc hold'em prompt for ``player`` (its text, verbatim)."""
    return (
        f"You are Player {player} in Leduc Hold'em.\nRespond with one action token like '[check]', '[bet]', "
        "'[call]', '[raise]', or '[fold]' when it is your turn.\n"
        "Fixed bet sizes: 2 chips pre-flop, 4 chips post-flop (max 2 raises per round)."
    )


@struct.dataclass
class LeducText:
    """TextArena's Leduc state: ``deals`` ``i32[R, 3]`` each hand's cards (player 0's,
    player 1's, board; our Leduc's numbering, rank = card // 2); ``hand`` (0-based),
    ``street`` (0 pre-flop, 1 after), ``pot``, ``banks`` ``i32[2]``, ``bet`` (the bet
    to call), ``raises`` (this round), ``prev_check``, ``starting`` (this hand's
    first player)."""

    deals: jax.Array
    hand: jax.Array
    street: jax.Array
    pot: jax.Array
    banks: jax.Array
    bet: jax.Array
    raises: jax.Array
    prev_check: jax.Array
    starting: jax.Array


class TextLeducPoker(TextGame):
    """TextArena's Leduc hold'em (see the module docstring).

    Args:
        max_rounds: hands per game (TextArena's ``LeducHoldem-v0``: 5).
        starting_bank: each player's chips at the start (TextArena's default: 100).
        error_allowance: invalid moves in a row a player may make before the next
            one loses the game (TextArena's default: 1; 0: the first one loses).
        set_orders: how TextArena lists the three legal sets (see the module docstring).
        actions: the action-string table (default: ``actions.LEDUC_POKER``).
    """

    num_moves = 5

    def __init__(self, max_rounds: int = 5, starting_bank: int = 100, error_allowance: int = 1,
                 set_orders=SET_ORDERS, actions=None):
        self.max_rounds = r = check_positive_int("max_rounds", max_rounds)
        self.starting_bank = check_positive_int("starting_bank", starting_bank)
        if not isinstance(error_allowance, (int, np.integer)) or isinstance(error_allowance, bool) or error_allowance < 0:
            raise ValueError(f"error_allowance must be a non-negative int, got {error_allowance!r}")
        sets = ({"bet", "check"}, {"fold", "call", "raise"}, {"fold", "call"})
        if len(set_orders) != 3 or any(set(o) != s or len(o) != len(s) for o, s in zip(set_orders, sets)):
            raise ValueError(f"set_orders must order the sets {[sorted(s) for s in sets]}, got {set_orders!r}")
        self.set_orders = tuple(tuple(o) for o in set_orders)
        self.grammar = LiteralGrammar([f"[{m}]" for m in MOVES], ignore_case=True)

        b = PieceBuilder()
        self._build_common(b)
        self._prompt = b.many([" " + prompt(p) for p in range(2)])
        self._card = b.many([f" ### New hand - your private card: {c}" for c in RANKS])
        self._valid = b.many([" Valid actions: " + ", ".join(f"'[{a}]'" for a in o) for o in self.set_orders])
        self._checks = b.many([f" Player {p} checks." for p in range(2)])
        self._bets = np.array([[b(f" Player {p} bets {u}.") for u in (2, 4)] for p in range(2)], np.int32)
        self._raises = np.array([[b(f" Player {p} raises {u}.") for u in (2, 4)] for p in range(2)], np.int32)
        calls = np.full((2, 13), -1, np.int32)
        for p in range(2):
            for amount in (2, 4, 6, 8, 12):
                calls[p, amount] = b(f" Player {p} calls {amount}.")
        self._calls = calls
        self._flop = b.many([f" Flop card revealed: {c}" for c in RANKS])
        self._folds = b.many([f" Player {p} folds.Current banks: Player 0:" for p in range(2)])
        self._showdown = b.many([f" Showdown - Player {w} wins. Current banks: Player 0:" for w in range(2)])
        self._tie = b(" Exact tie.")
        self._bank_lo = min(self.starting_bank - MAX_LOSS_PER_HAND * r, 2 - MAX_LOSS_PER_HAND)
        self._bank_hi = self.starting_bank + MAX_LOSS_PER_HAND * r
        banks = range(self._bank_lo, self._bank_hi + 1)
        self._bank0 = b.many([f" {v}; Player 1:" for v in banks], final=False)
        self._bank1 = b.many([f" {v}\n" for v in banks])
        self._no_match = b(" Supply exactly one legal action token.")
        self._illegal = b.many([" Illegal now. Allowed: {" + ", ".join(repr(a) for a in o) + "}" for o in self.set_orders])

        a = int(error_allowance)
        invalid = 10 * r * a + a + 1  # at most 10 moves a hand (check, bet, raise, raise, call twice)
        # pieces per player and hand: cards and moves 4, ten moves of 6 (echo,
        # announcement, legal moves), the flop 4, the end 4; an invalid move 6
        capacity = 2 + 72 * r + 6 * invalid + 8
        self._setup(action_tables.LEDUC_POKER if actions is None else actions, b.build(10 * r + invalid), capacity, a)

    # ------------------------------------------------------------------ parsing
    def parse_text(self, reply: str) -> int:
        index, matched = self.grammar.search_match(format_action_text(reply))
        # TextArena takes the match lowercased as the move: a name it does not know
        # (a folded character that lowercases to something else) is an illegal move
        return index if index < 0 or matched.lower() == self.grammar.patterns[index] else NOT_A_MOVE

    def parse_bytes(self, data, length):
        index, _, lowers = self.grammar.match(data, length)
        return jnp.where((index >= 0) & ~lowers, NOT_A_MOVE, index)

    # ------------------------------------------------------------------ dynamics
    @staticmethod
    def _set_index(e: LeducText):
        return jnp.where(e.bet == 0, 0, jnp.where(e.raises < 2, 1, 2))

    def _legal_moves(self, state):
        s = self._set_index(state.extra)
        legal = jnp.stack([s == 0, s == 0, s > 0, s == 1, s > 0])
        return legal & ~state.done

    def _announce(self, state, cond, to_player):
        """TextArena's ``_announce_legal``: the legal moves, to one player."""
        body = jnp.asarray(self._valid)[self._set_index(state.extra)][None]
        return self._send(state, cond & (jnp.arange(2) == to_player), GAME, body)

    def _new_hand(self, state, cond):
        """TextArena's ``_deal_new_hand`` where ``cond``: the match's end, a bust, or
        the next hand's deal and messages. Returns ``(state, done, rewards)``."""
        e = state.extra
        end = cond & (e.hand + 1 >= self.max_rounds)
        low = e.banks < 2
        bust = cond & ~end & jnp.any(low)
        deal = cond & ~end & ~bust
        margin = jnp.sign(e.banks[0] - e.banks[1]).astype(jnp.float32)
        winner_by_bust = jnp.where(low[0], -1.0, 1.0)  # player 0 busted first, as TextArena checks
        outcome = jnp.where(end, margin, winner_by_bust)
        reward = jnp.where(end | bust, jnp.stack([outcome, -outcome]), 0.0)

        hand = jnp.where(deal, e.hand + 1, e.hand)
        starting = jnp.where(deal, 1 - e.starting, e.starting)
        e = e.replace(
            hand=hand,
            street=jnp.where(deal, 0, e.street),
            pot=jnp.where(deal, 2, e.pot),
            bet=jnp.where(deal, 0, e.bet),
            raises=jnp.where(deal, 0, e.raises),
            banks=jnp.where(deal, e.banks - 1, e.banks),
            starting=starting,
        )
        state = state.replace(extra=e, player=jnp.where(deal, starting, state.player))
        cards = e.deals[jnp.clip(hand, 0, self.max_rounds - 1), :2] // 2
        state = self._send(state, jnp.broadcast_to(deal, (2,)), GAME, jnp.asarray(self._card)[cards][:, None])
        state = self._announce(state, deal, starting)
        return state, end | bust, reward

    def _reset(self, key, params, deals=None):
        if deals is None:
            deals = jnp.asarray(DEALS)[jax.random.randint(key, (self.max_rounds,), 0, len(DEALS))]
        deals = jnp.asarray(deals, jnp.int32)
        bank = jnp.full(2, self.starting_bank, jnp.int32)
        extra = LeducText(deals=deals, hand=jnp.int32(-1), street=jnp.int32(0), pot=jnp.int32(0), banks=bank,
                          bet=jnp.int32(0), raises=jnp.int32(0), prev_check=jnp.zeros((), bool), starting=jnp.int32(0))
        state = self._new_state(None, extra, 0)
        state = self._send(state, jnp.ones(2, bool), GAME, jnp.asarray(self._prompt)[:, None])
        return self._new_hand(state, jnp.ones((), bool))[0]

    def reset_with_deals(self, deals, params=None):
        """Start a game whose hand ``h`` deals ``deals[h]`` (``i32[R, 3]``: the *ranks*
        of player 0's card, player 1's card and the board card, 0 = J, 1 = Q, 2 = K, as
        TextArena records them); jit-able."""
        params = self._params(params)
        ranks = jnp.asarray(deals, jnp.int32)
        state = self._reset(None, params, deals=ranks * 2)  # any card of the rank: only ranks matter
        return state, self._timestep(state, jnp.zeros(2, jnp.float32), -1, False, -1)

    def _apply(self, key, state, move, params):
        p = state.player
        e = state.extra
        unit = jnp.where(e.street == 0, 2, 4)
        check, bet, call, raise_, fold = (move == m for m in (CHECK, BET, CALL, RAISE, FOLD))
        second_check = check & e.prev_check
        first_check = check & ~e.prev_check
        paid = jnp.where(bet | raise_, unit, jnp.where(call, e.bet, 0))
        e = e.replace(
            prev_check=check,  # TextArena keeps it after a second check (reset only at the flop)
            bet=jnp.where(bet, unit, jnp.where(raise_, e.bet + unit, e.bet)),
            raises=jnp.where(bet, 0, jnp.where(raise_, e.raises + 1, e.raises)),
            banks=e.banks.at[p].add(-paid),
            pot=e.pot + paid,
        )
        state = state.replace(extra=e)
        u = (e.street == 1).astype(jnp.int32)
        said = jnp.select(
            [first_check, bet, raise_],
            [jnp.asarray(self._checks)[p], jnp.asarray(self._bets)[p, u], jnp.asarray(self._raises)[p, u]],
            jnp.asarray(self._calls)[p, jnp.clip(paid, 0, 12)],
        )
        state = self._send(state, jnp.broadcast_to(first_check | bet | raise_ | call, (2,)), GAME, said[None])

        # the betting goes on: the other player's legal moves
        goes_on = first_check | bet | raise_
        state = self._announce(state, goes_on, 1 - p)
        state = state.replace(player=jnp.where(goes_on, 1 - p, p))

        # a second check or a call: the flop, or the showdown
        next_round = second_check | call
        flop = next_round & (e.street == 0)
        showdown = next_round & (e.street == 1)
        e = state.extra
        e = e.replace(street=jnp.where(flop, 1, e.street), bet=jnp.where(flop, 0, e.bet),
                      raises=jnp.where(flop, 0, e.raises), prev_check=jnp.where(flop, False, e.prev_check))
        state = state.replace(extra=e, player=jnp.where(flop, e.starting, state.player))
        hand = jnp.clip(e.hand, 0, self.max_rounds - 1)
        cards = e.deals[hand]
        state = self._send(state, jnp.broadcast_to(flop, (2,)), GAME, jnp.asarray(self._flop)[cards[2] // 2][None])
        state = self._announce(state, flop, e.starting)

        strength = hand_strength(cards[:2], cards[2])
        tie = showdown & (strength[0] == strength[1])
        winner = jnp.where(fold, 1 - p, jnp.where(strength[0] > strength[1], 0, 1))
        award = fold | (showdown & ~tie)
        split = e.pot // 2
        banks = jnp.where(award, e.banks.at[winner].add(e.pot), jnp.where(tie, e.banks + jnp.stack([split, e.pot - split]), e.banks))
        state = state.replace(extra=e.replace(banks=banks))
        state = self._send(state, jnp.broadcast_to(tie, (2,)), GAME, jnp.int32(self._tie)[None])
        lo, hi = self._bank_lo, self._bank_hi
        head = jnp.where(fold, jnp.asarray(self._folds)[p], jnp.asarray(self._showdown)[winner])
        body = jnp.stack([head, jnp.asarray(self._bank0)[jnp.clip(banks[0], lo, hi) - lo],
                          jnp.asarray(self._bank1)[jnp.clip(banks[1], lo, hi) - lo]])
        state = self._send(state, jnp.broadcast_to(award, (2,)), GAME, body)
        return self._new_hand(state, award | tie)

    def _invalid_reason(self, state, move):
        return jnp.where(move < 0, self._no_match, jnp.asarray(self._illegal)[self._set_index(state.extra)])[None]

    def _extra_info(self, state):
        return {"banks": state.extra.banks, "hand": state.extra.hand + 1}

    def exact_game(self):
        """Exact evaluation of a language policy (capability; ``jaxagents.lm.evaluate``):
        the information states of this game's first hand, scored in chips
        (``jaxagents_environments.text.exact.leduc_exact_game``)."""
        from jaxagents_environments.text.exact import leduc_exact_game

        return leduc_exact_game(self)

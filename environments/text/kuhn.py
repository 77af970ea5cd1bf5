"""Kuhn poker as TextArena 0.7.4's ``KuhnPoker-v0`` text game, inside ``jit``.

The cards and the betting are ``jaxagents_environments.games.kuhn.KuhnPoker`` (its
betting tree, showdown and hand sequence, with ``num_hands = max_rounds``); what
TextArena adds is kept here: its chip count, its messages and its outcome.

TextArena's rules, as its code plays them:

* ``max_rounds`` rounds (``KuhnPoker-v0``: 3). Each round both players ante 1 chip and
  get one card of a freshly shuffled J, Q, K (Python's ``random``; here a uniform deal
  per round from the reset key, or given: ``reset_with_deals``). Player 1 starts round
  1 and the starting player alternates; in our ``KuhnPoker`` the first to act in hand
  ``h`` is role ``h % 2``, so TextArena's player ``t`` is our Kuhn's role ``1 - t``.
* Moves ``[check]``/``[bet]`` with no bet on the table, ``[fold]``/``[call]`` facing
  one; a reply's move is the first case-insensitive match of ``[check]``, ``[bet]``,
  ``[call]`` or ``[fold]`` after the bracket rule. A move that is not one of these two
  is invalid (``base``'s rule: one warning, then the loss).
* The round's winner (the other player on a fold, the higher card at a showdown)
  takes the pot, which TextArena keeps at 2 chips whatever was bet: each round moves
  exactly one chip. After the last round the player with more chips wins (+1/-1),
  equal chips draw (0/0); these are the only rewards. So betting costs nothing and
  folding never pays: TextArena's game is not Kuhn poker's. ``payoff="chips"`` keeps
  TextArena's text and pays Kuhn poker's payoffs instead -- each hand, the chips won
  or lost with an ante of 1 and a bet of 1 (+-1 or +-2) -- the game whose equilibria
  and exploitability ``exact_game`` measures, and the one a learner must train on to
  approach them.
* Messages: each player's card at the start of a round, with the available moves for
  the starting player; the other player gets the card message *twice* (TextArena
  sends the card message again where the starting player gets its moves); each
  valid move is announced, the opponent gets its available moves, and the end of a
  round is announced with the scores.

Roles ``player_0`` and ``player_1`` are TextArena's Player 0 and Player 1. Actions and
observations are ``base.TextGame``'s. Move codes: 0 ``[check]``, 1 ``[bet]``, 2
``[call]``, 3 ``[fold]``, 4 a match whose lowercase is no move name (TextArena takes
the match lowercased; the KELVIN SIGN in ``[chec\u212a]`` lowercases to ``k``, so that is
a check), -1 no match. ``info`` adds ``chips`` (``i32[2]``, TextArena's scores) and
``round`` (1-based).

Observations end where TextArena's last visible message is: after the last round
TextArena deals a phantom round (``### Starting round 4 out of 3``) that nobody sees;
it is not sent here.

Pieces: every message is one or two whole pieces (cards, chip counts and players are
part of the piece, so numbers never stand alone: GPT-2 merges digits with a leading
space); piece boundaries are split points of GPT-2's and Qwen2's pre-tokenizers.

Observation (roles ``player_0`` and ``player_1``, one agent each) ``i32[P + U]``
(``P = 151``, ``U = 20`` with the default arguments): entries ``0 .. P-1`` are the ids
of the pieces (``piece_table``) that make up the player's TextArena observation so far,
in order, -1 after its end; the last ``U`` are one slot per reply of the episode, in
order, valid or not: the action index that was played, or -1 for a slot not reached yet
or a reply given as text (``step_move``). ``env.render_observation(obs)`` turns it back
into TextArena's string. Only the player to move is active.

Actions ``Discrete(A)``: action ``a`` is the reply string ``actions.KUHN_POKER[a]`` (31
strings by default), played exactly as a language model's reply would be. Actions 0-3
are ``[check]``, ``[bet]``, ``[call]``, ``[fold]``; 4-20 other spellings of those four
moves (case variants, bare words, a move inside other text); 21-30 match no move (never
valid). ``legal_actions`` marks the strings that are valid moves in the current
position.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxagents.core.validate import check_positive_int
from jaxagents.lm.grammar import LiteralGrammar, format_action_text
from jaxagents_environments.games.kuhn import DEALS, KuhnParams, KuhnPoker
from jaxagents_environments.text import actions as action_tables
from jaxagents_environments.text.base import GAME, PieceBuilder, TextGame

CHECK, BET, CALL, FOLD = 0, 1, 2, 3
NOT_A_MOVE = 4  # a match that lowercases to no move name: invalid, as an illegal move
MOVES = ("check", "bet", "call", "fold")
CARDS = "JQK"


def prompt(player: int, max_rounds: int) -> str:
    """TextArena's Kuhn poker prompt for ``player`` (its text, verbatim)."""
    return (
        f"You are Player {player} in a {max_rounds} round game of Kuhn Poker.\n"
        "Game Rules:\n"
        "- Kuhn Poker uses a 3-card deck with J, Q, K (J lowest, K highest)\n"
        "- Each player antes 1 chip and receives 1 card each round "
        "(note that the cards are dealt without replacement, so you cannot have the same card as your opponent).\n"
        f"- Game continues for {max_rounds} rounds\n"
        "- The player with the most chips after all rounds wins\n\n"
        "Action Rules:\n"
        "- '[check]': Pass without betting (only if no bet is on the table)\n"
        "- '[bet]': Add 1 chip to the pot (only if no bet is on the table)\n"
        "- '[call]': Match an opponent's bet by adding 1 chip to the pot\n"
        "- '[fold]': Surrender your hand and let your opponent win the pot\n"
    )


@struct.dataclass
class KuhnText:
    """TextArena's bookkeeping: ``deals`` ``i32[R, 2]`` each round's cards by TextArena
    player; ``chips`` ``i32[2]`` TextArena's scores."""

    deals: jax.Array
    chips: jax.Array


class TextKuhnPoker(TextGame):
    """TextArena's Kuhn poker (see the module docstring).

    Args:
        max_rounds: rounds per game (``KuhnPoker-v0``: 3), a positive int.
        error_allowance: invalid moves in a row a player may make before the next
            one loses the game (TextArena's default: 1; 0: the first one loses).
        actions: the action-string table (default: ``actions.KUHN_POKER``).
        payoff: ``"textarena"`` (TextArena's outcome: +1/-1/0 for the game, at its end)
            or ``"chips"`` (Kuhn poker's payoff of every hand, at its end).
    """

    num_moves = 4
    PAYOFFS = ("textarena", "chips")

    def __init__(self, max_rounds: int = 3, error_allowance: int = 1, actions=None, payoff: str = "textarena"):
        self.max_rounds = n = check_positive_int("max_rounds", max_rounds)
        if payoff not in self.PAYOFFS:
            raise ValueError(f"payoff must be one of {self.PAYOFFS}, got {payoff!r}")
        self.payoff = payoff
        if not isinstance(error_allowance, (int, np.integer)) or isinstance(error_allowance, bool) or error_allowance < 0:
            raise ValueError(f"error_allowance must be a non-negative int, got {error_allowance!r}")
        self.kuhn = KuhnPoker(num_hands=n)
        self._kuhn_params = KuhnParams(num_hands=jnp.asarray(n, jnp.int32))
        self.grammar = LiteralGrammar([f"[{m}]" for m in MOVES], ignore_case=True)

        b = PieceBuilder()
        self._build_common(b)
        self._prompt = b.many([" " + prompt(p, n) for p in range(2)])
        self._start = np.array([[b(f" ### Starting round {r + 1} out of {n} rounds. Your card is: '{c}'") for c in CARDS]
                                for r in range(n)], np.int32)
        self._avail_check_bet = b(" Your available actions are: '[check]', '[bet]'")
        self._avail_fold_call = b(" Your available actions are: '[fold]', '[call]'")
        self._submitted = np.array([[b(f" Player {p}, submitted move: '[{m}]'.") for m in MOVES] for p in range(2)], np.int32)
        self._folded = b.many([f" Player {p} has folded." for p in range(2)])
        showdown = np.full((2, 3, 3), -1, np.int32)
        for w in range(2):
            for hi in range(3):
                for lo in range(hi):
                    showdown[w, hi, lo] = b(f" Showdown: Player {w}'s {CARDS[hi]} beats Player {1 - w}'s {CARDS[lo]}. "
                                            f"Player {w} wins pot of 2 chips.")
        self._showdown = showdown
        self._scores = b.many([f" Current scores: Player 0: '{c}'; Player 1: '{-c}'" for c in range(-n, n + 1)])
        self._no_match = b(" Action must be [Check], [Bet], [Call], or [Fold].")
        self._not_now = b.many([" Action must be [check], [bet].", " Action must be [fold], [call]."])

        a = int(error_allowance)
        invalid = 3 * n * a + a + 1  # at most `a` warned replies per valid move, then the losing run
        slots = 3 * n + invalid
        # pieces per player: prompt 2; a round's card messages 4 and end 3; a valid move
        # (echo, announcement, available moves) 6; an invalid one (echo, warning) 6
        capacity = 2 + 7 * n + 6 * 3 * n + 6 * invalid + 8
        self._setup(action_tables.KUHN_POKER if actions is None else actions, b.build(slots), capacity, a)

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
    def _seat_cards(self, deal, hand):
        """Our Kuhn's cards by seat from a deal by TextArena player: seat 0 (first to
        act) is TextArena player ``1 - hand % 2``."""
        first = 1 - hand % 2
        return jnp.stack([deal[first], deal[1 - first]])

    def _legal_moves(self, state):
        facing_bet = state.game.node >= 2
        legal = jnp.stack([~facing_bet, ~facing_bet, facing_bet, facing_bet])
        return legal & ~state.done

    def _round_start(self, state, hand):
        """The card messages of round ``hand`` (0-based) and its starting player."""
        deal = state.extra.deals[hand]
        start = jnp.asarray(self._start)[hand, deal]  # [2] by player
        first = 1 - hand % 2
        state = self._send(state, jnp.ones(2, bool), GAME, start[:, None])
        second = jnp.where(jnp.arange(2) == first, self._avail_check_bet, start)
        state = self._send(state, jnp.ones(2, bool), GAME, second[:, None])
        return state.replace(player=first.astype(jnp.int32))

    def _reset(self, key, params, deals=None):
        if deals is None:
            deals = jnp.asarray(DEALS)[jax.random.randint(key, (self.max_rounds,), 0, len(DEALS))]
        deals = jnp.asarray(deals, jnp.int32)
        game, _ = self.kuhn.reset_from_deal(self._seat_cards(deals[0], 0), self._kuhn_params)
        state = self._new_state(game, KuhnText(deals=deals, chips=jnp.full(2, -1, jnp.int32)), 1)
        state = self._send(state, jnp.ones(2, bool), GAME, jnp.asarray(self._prompt)[:, None])
        return self._round_start(state, jnp.zeros((), jnp.int32))

    def reset_with_deals(self, deals, params=None):
        """Start a game whose round ``r`` deals ``deals[r]`` (``i32[R, 2]``: the cards of
        TextArena's players 0 and 1, 0 = J, 1 = Q, 2 = K); jit-able. For replaying
        TextArena's games, whose deals come from Python's ``random``."""
        params = self._params(params)
        state = self._reset(None, params, deals=deals)
        return state, self._timestep(state, jnp.zeros(2, jnp.float32), -1, False, -1)

    def _apply(self, key, state, move, params):
        p = state.player
        game = state.game
        hand = game.hand
        kuhn_action = ((move == BET) | (move == CALL)).astype(jnp.int32)[None]
        new_game, ts = self.kuhn.step_env(key, game, {"player_0": kuhn_action, "player_1": kuhn_action}, self._kuhn_params)
        state = self._send(state, jnp.ones(2, bool), GAME, jnp.asarray(self._submitted)[p, jnp.clip(move, 0, 3)][None])
        hand_over = (new_game.hand != hand) | new_game.done
        # TextArena player t is our Kuhn's role 1 - t
        won = jnp.stack([ts.reward["player_1"][0], ts.reward["player_0"][0]]) > 0
        winner = jnp.argmax(won).astype(jnp.int32)
        deal = state.extra.deals[hand]

        # the round goes on: the opponent's available moves
        going = self._send(
            state.replace(game=new_game, player=1 - p),
            jnp.arange(2) == 1 - p,
            GAME,
            jnp.where(new_game.node >= 2, self._avail_fold_call, self._avail_check_bet)[None],
        )

        # the round is over: the pot (always 2 chips) to the winner, the announcement
        chips = state.extra.chips.at[winner].add(2)
        how = jnp.where(move == FOLD, jnp.asarray(self._folded)[p],
                        jnp.asarray(self._showdown)[winner, deal[winner], deal[1 - winner]])
        score = jnp.asarray(self._scores)[jnp.clip(chips[0] + self.max_rounds, 0, 2 * self.max_rounds)]
        over = self._send(state.replace(extra=state.extra.replace(chips=chips)), jnp.ones(2, bool), GAME, jnp.stack([how, score]))
        last = hand + 1 >= self.max_rounds
        nxt = jnp.minimum(hand + 1, self.max_rounds - 1)
        next_game = new_game.replace(cards=jnp.where(last, new_game.cards, self._seat_cards(state.extra.deals[nxt], nxt)))
        nxt_state = over.replace(game=next_game, extra=over.extra.replace(chips=chips - 1))
        nxt_state = self._round_start(nxt_state, nxt)
        final = over.replace(game=next_game)
        ended = jax.tree_util.tree_map(lambda a, b: jnp.where(last, a, b), final, nxt_state)

        out = jax.tree_util.tree_map(lambda a, b: jnp.where(hand_over, a, b), ended, going)
        done = hand_over & last
        margin = jnp.sign(chips[0] - chips[1]).astype(jnp.float32)
        if self.payoff == "chips":  # Kuhn poker's payoff of the hand (TextArena player t is role 1 - t)
            hand_payoff = jnp.stack([ts.reward["player_1"][0], ts.reward["player_0"][0]]).astype(jnp.float32)
            reward = jnp.where(hand_over, hand_payoff, 0.0)
        else:
            reward = jnp.where(done, jnp.stack([margin, -margin]), 0.0)
        return out, done, reward

    def _invalid_reason(self, state, move):
        reason = jnp.where(move < 0, self._no_match, jnp.asarray(self._not_now)[(state.game.node >= 2).astype(jnp.int32)])
        return reason[None]

    def _extra_info(self, state):
        return {"chips": state.extra.chips, "round": state.game.hand + 1}

    def exact_game(self):
        """Exact evaluation of a language policy (capability; ``jaxagents.lm.evaluate``):
        Kuhn poker's information states as prompts of this game's first round
        (``jaxagents_environments.text.exact.kuhn_exact_game``)."""
        from jaxagents_environments.text.exact import kuhn_exact_game

        return kuhn_exact_game(self)

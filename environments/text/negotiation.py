"""Simple negotiation as TextArena 0.7.4's ``SimpleNegotiation-v0`` text game, inside ``jit``.

TextArena's negotiation is not SPIRAL's two-resource game of
``jaxagents_environments.games.negotiation``: five resources, random holdings and
private values, offers of several resources written in free text. Its rules are kept
here, as its code plays them:

* Resources Wheat, Wood, Sheep, Brick, Ore. Each player starts with 5-25 of each and
  values them at the base value 5, 10, 15, 25, 40 plus or minus 20% (within 5-40):
  Python's ``random`` in TextArena, the reset key here, or given
  (``reset_with_start``).
* A reply is read for two things, in this order. ``[Accept]`` (case-insensitive,
  anywhere) with an offer pending executes it if the player holds what it asks for,
  else it is an invalid move; without ``[Accept]`` a pending offer is rejected (it
  stays pending). Then the first ``[Offer: ... -> ...]`` (optionally ``Offer`` without
  the colon, an ``I give``/``I offer``, trailing dots) is a new offer if it reads as
  quantity-resource pairs on each side of exactly one ``->`` (``Woods`` and ``Sheeps``
  allowed, repeated resources added up, quantities above 0) and the player holds what
  it offers; a malformed offer or one the player cannot pay is an invalid move. Any
  pending offer can be accepted by either player (the proposer accepting its own trades
  with itself).
* The game ends after 10 valid moves: the first move after the tenth (whatever it is,
  its effects included) decides, by the change in each player's inventory value at its
  own prices (larger wins +1/-1, equal draws 0/0). Invalid moves follow ``base``'s
  rule (one warning, then the loss); a reply can make two invalid moves (a failed
  accept and a bad offer), which counts twice.
* The observation (``GameMessagesObservationWrapper``) is the prompt and the game's
  announcements (rejections, accepted trades, offers, "no new trade offer"), each as
  ``"\\n " + message``; neither the replies nor the warnings are shown.

Moves: a reply parses to ``Offer`` (accepts, offer status, quantities given and asked
for, and the order the resources were written in, which the announcement keeps).
Quantities are exact up to 999,999,999 (``jaxagents.lm.text.NUMBER_CAP`` above: only an
asked-for quantity can be that large, in an offer nobody can accept, and its
announcement then shows the cap).

Pieces: the prompt is three pieces per player (each resource line whole); an offer's
announcement is pieces of a number and a resource name each; a number of 1,000 or
more is cut into groups of digits, exact for Qwen2's pre-tokenizer and not for GPT-2's
(as in tic-tac-toe).

Observation (roles ``player_0`` and ``player_1``, one agent each) ``i32[P + U]``
(``P = 968``, ``U = 23`` with the default arguments): entries ``0 .. P-1`` are the ids
of the pieces (``piece_table``) that make up the player's TextArena observation so far,
in order, -1 after its end; the last ``U`` are one slot per reply of the episode, in
order, valid or not: the action index that was played, or -1 for a slot not reached yet
or a reply given as text (``step_move``). TextArena's observation of this game shows
neither the replies nor the warnings, so the slots are recorded but not rendered.
``env.render_observation(obs)`` turns it back into TextArena's string. Only the player
to move is active.

Actions ``Discrete(A)``: action ``a`` is the reply string
``actions.SIMPLE_NEGOTIATION[a]`` (29 strings by default), played exactly as a language
model's reply would be. Action 0 is ``[Accept]`` (accept the pending offer), and 2, 3
and 15 accept in other words; 1, 4 and 28 (``[Deny]``, ``deny``, ...) neither accept nor
offer, which rejects a pending offer; 5-14 and 16-20 are offers ``[Offer: ... -> ...]``
of fixed quantities (14 and 17 also accept; 19 gives and 20 asks for more than anyone
holds); 21-24 are malformed offers; 25-27 (``[Offer]``, ``hello``, the empty reply) make
no move. ``legal_actions`` marks the strings that are valid moves in the current
position.
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxagents.lm.grammar import LiteralGrammar, NUMBER_CAP, class_codepoints, decode_utf8, digit_run_values, format_action_text, match_sequences, run_end, unicode_classes
from jaxagents.core.validate import check_positive_int
from jaxagents_environments.text import actions as action_tables
from jaxagents_environments.text.base import PieceBuilder, TextGame

RESOURCES = ("Wheat", "Wood", "Sheep", "Brick", "Ore")
BASE_VALUES = (5, 10, 15, 25, 40)
QUANTITIES = (5, 25)
NAMES = ("Wheat", "Wood", "Woods", "Sheep", "Sheeps", "Brick", "Ore")  # as written, after str.title()
NAME_RESOURCE = np.array([0, 1, 1, 2, 2, 3, 4], np.int32)
NONE, BAD_FORMAT, OFFER = 0, 1, 2
BIG = 999_999_999  # quantities above are NUMBER_CAP
OFFER_REGEX = re.compile(r"\[Offer:?\s*(?:I\s+(?:give|offer)\s+)?([^\[\]]+?)\s*\.*\]", re.IGNORECASE | re.DOTALL)
ACCEPT_REGEX = re.compile(r"\[Accept\]", re.IGNORECASE)


def value_range(base: int) -> tuple[int, int]:
    """TextArena's range of a player's value for a resource of base value ``base``."""
    spread = int(0.2 * base)
    return max(base - spread, 5), min(base + spread, 40)


def prompt_parts(player: int, quantities, values, max_turns: int) -> tuple[str, list[str], str]:
    """TextArena's prompt for ``player`` (its text, verbatim) as (opening, one line per
    resource, closing)."""
    opening = (f"You are Player {player} in the Negotiation Game.\nYou have some resources, and your task is to trade "
               "such that the total value of your resources increases.\nThe resources and associated values you "
               "currently have are:\n")
    lines = [f"\t+ {f'[{r}]':<8}  Qty: {q:<2}   Value: {v}\n" for r, q, v in zip(RESOURCES, quantities, values)]
    closing = ("At each turn, you can talk to your opponent and make a trade offer.\n"
               "Use the following special tokens for actions:\n"
               "  - '[Offer: 3 Sheep, 2 Ore -> 5 Brick, 2 Sheep]': [Offer: Offered Resources -> Requested Resources]\n"
               "  - '[Accept]': To accept an incoming offer.\n"
               "  - '[Deny]': To deny an incoming offer (default).\n"
               f"The game lasts for {max_turns} turns in total.")
    return opening, lines, closing


@struct.dataclass
class Offer:
    """A parsed reply: ``accept`` ``bool[]`` (``[Accept]`` written); ``status`` ``i32[]``
    (0 no offer, 1 a malformed offer, 2 an offer); ``give``, ``take`` ``i32[5]`` the
    quantities offered and asked for by resource; ``give_order``, ``take_order``
    ``i32[5]`` each resource's place in the written order (5 when absent)."""

    accept: jax.Array
    status: jax.Array
    give: jax.Array
    take: jax.Array
    give_order: jax.Array
    take_order: jax.Array


@struct.dataclass
class NegotiationText:
    """TextArena's negotiation state: ``resources``, ``initial``, ``values`` ``i32[2, 5]``;
    the pending offer (``pending``, ``proposer``, ``give``, ``take``); ``turn`` (valid
    moves so far)."""

    resources: jax.Array
    initial: jax.Array
    values: jax.Array
    pending: jax.Array
    proposer: jax.Array
    give: jax.Array
    take: jax.Array
    turn: jax.Array


def _read_sides(group: str):
    """TextArena's reading of an offer's text (the regular expression's group, stripped):
    ``[{resource: quantity} offered, requested]`` in written order, or None."""
    text = " ".join(group.split())
    text = re.sub(r"[.,!?]+$", "", text)
    text = re.sub(r"^(I\s+(?:give|offer)\s+)", "", text, flags=re.IGNORECASE)
    sides = re.split(r"\s*->\s*", text)
    if len(sides) != 2:
        return None
    out = []
    for side in sides:
        pairs = re.findall(r"(\d+)\s+([A-Za-z]+)", side.strip(), re.IGNORECASE)
        if not pairs:
            return None
        amounts = {}
        for digits, word in pairs:
            name = {"Sheeps": "Sheep", "Woods": "Wood"}.get(word.title(), word.title())
            if name not in RESOURCES or int(digits) <= 0:
                return None
            amounts[name] = amounts.get(name, 0) + int(digits)
        out.append(amounts)
    return out


def _side_arrays(amounts: dict) -> tuple[np.ndarray, np.ndarray]:
    qty = np.zeros(5, np.int32)
    order = np.full(5, 5, np.int32)
    for rank, (name, q) in enumerate(amounts.items()):
        r = RESOURCES.index(name)
        qty[r] = q if q <= BIG else NUMBER_CAP
        order[r] = rank
    return qty, order


class TextSimpleNegotiation(TextGame):
    """TextArena's simple negotiation (see the module docstring).

    Args:
        max_turns: valid moves before the deciding one (``SimpleNegotiation-v0``: 10).
        error_allowance: invalid moves in a row a player may make before the next
            one loses the game (TextArena's default: 1; 0: the first one loses).
        actions: the action-string table (default: ``actions.SIMPLE_NEGOTIATION``).
    """

    shows_warnings = False  # GameMessagesObservationWrapper hides them

    def __init__(self, max_turns: int = 10, error_allowance: int = 1, actions=None):
        self.max_turns = t = check_positive_int("max_turns", max_turns)
        if not isinstance(error_allowance, (int, np.integer)) or isinstance(error_allowance, bool) or error_allowance < 0:
            raise ValueError(f"error_allowance must be a non-negative int, got {error_allowance!r}")
        self._accept = LiteralGrammar(["[accept]"])
        self._offer_word = LiteralGrammar(["[offer"])
        # [A-Za-z] with IGNORECASE, and what str.title() makes of a word of them: the
        # first letter title-cased, the others lowercased
        letters = class_codepoints("[A-Za-z]", re.IGNORECASE)
        self._letters = np.array(letters, np.int32)
        m = max(len(n) for n in NAMES)
        table = np.full((len(NAMES), m, len(letters)), -3, np.int32)
        for k, name in enumerate(NAMES):
            for i, ch in enumerate(name):
                ok = [c for c in letters if (chr(c).title() if i == 0 else chr(c).lower()) == ch]
                table[k, i, : len(ok)] = ok
        self._name_table, self._name_lengths = table, np.array([len(n) for n in NAMES], np.int32)

        b = PieceBuilder(tags=("",))
        self._opening = b.many([" " + prompt_parts(p, [5] * 5, [5] * 5, t)[0] for p in range(2)], final=False)
        lines = np.full((5, QUANTITIES[1] + 1, 41), -1, np.int32)
        for r, base in enumerate(BASE_VALUES):
            lo, hi = value_range(base)
            for q in range(QUANTITIES[0], QUANTITIES[1] + 1):
                for v in range(lo, hi + 1):
                    qs, vs = [0] * 5, [0] * 5
                    qs[r], vs[r] = q, v
                    lines[r, q, v] = b(prompt_parts(0, qs, vs, t)[1][r], final=False)
        self._lines = lines
        self._closing = b(prompt_parts(0, [5] * 5, [5] * 5, t)[2])
        self._rejected = b.many([f" Player {p} rejected the trade offer." for p in range(2)])
        self._accepted = np.array([[b(f" Player {a} accepted the trade offer from Player {o}.") for o in range(2)]
                                   for a in range(2)], np.int32)
        self._no_offer = b.many([f" Player {p} made no new trade offer." for p in range(2)])
        self._offered = b.many([f" Player {p} made the following offer to Player {1 - p}: Offered items:" for p in range(2)],
                               final=False)
        self._requested = b(" -> Requested items:", final=False)
        self._name_mid = b.many([f" {r}," for r in RESOURCES], final=False)
        self._name_last = b.many([f" {r}" for r in RESOURCES])
        self._lead = b.many([f" {g}" for g in range(1000)], final=False)
        self._group = b.many([f"{g:03d}" for g in range(1000)], final=False)

        a = int(error_allowance)
        # at most `a` warned replies before each of the t + 1 moves, then a losing one
        steps = (t + 1) * (a + 1) + 1
        # pieces per player: the prompt 8; a move at most a response 2 and an offer 38
        capacity = 8 + 40 * steps + 40
        self._setup(action_tables.SIMPLE_NEGOTIATION if actions is None else actions, b.build(steps), capacity, a)

    # ------------------------------------------------------------------ parsing
    def parse_text(self, reply: str) -> Offer:
        text = format_action_text(reply)
        accept = ACCEPT_REGEX.search(text) is not None
        m = OFFER_REGEX.search(text)
        sides = None if m is None else _read_sides(m.group(1).strip())
        status = NONE if m is None else (BAD_FORMAT if sides is None else OFFER)
        give, give_order = _side_arrays(sides[0] if sides else {})
        take, take_order = _side_arrays(sides[1] if sides else {})
        return Offer(np.bool_(accept), np.int32(status), give, take, give_order, take_order)

    def parse_bytes(self, data, length) -> Offer:
        cp, width = decode_utf8(data, length)
        size = cp.shape[0] - 1
        idx = jnp.arange(size + 1, dtype=jnp.int32)
        accept = jnp.any(self._accept.match_all(cp, width)[0])

        # the first "[offer" whose text up to the next "]" is not empty and has no "["
        starts, after, _ = self._offer_word.match_all(cp, width)
        after = after[0]
        next_close = jax.lax.cummin(jnp.where(cp == ord("]"), idx, size), reverse=True)
        next_open = jax.lax.cummin(jnp.where(cp == ord("["), idx, size), reverse=True)
        close = next_close[after]
        usable = starts[0] & (close < size) & (next_open[after] > close) & (close > after)
        found = jnp.any(usable)
        first = jnp.argmax(usable)
        lo, hi = after[first], close[first]
        inside = (idx >= lo) & (idx < hi)
        arrows = inside & (cp == ord("-")) & (jnp.roll(cp, -1) == ord(">")) & (idx + 1 < hi)
        arrow = jnp.argmax(arrows)

        # quantity-resource pairs: a digit run, whitespace, a run of letters
        is_ws, digit = unicode_classes(cp)
        values, digits_end = digit_run_values(digit, width)
        word = run_end(is_ws, width)[digits_end]
        _, is_letter = _member(jnp.asarray(self._letters), cp)
        word_end = run_end(is_letter, width)[word]
        pair = inside & (values >= 0) & (word > digits_end) & (word_end > word)
        ok, end = match_sequences(cp, width, self._name_table, self._name_lengths)
        named = ok[:, word] & (end[:, word] == word_end[None, :])  # [names, N]
        resource = jnp.asarray(NAME_RESOURCE)[jnp.argmax(named, axis=0)]
        bad = pair & (~jnp.any(named, axis=0) | (values == 0))
        left, right = pair & (idx < arrow), pair & (idx > arrow)
        well_formed = (jnp.sum(arrows) == 1) & ~jnp.any(bad) & jnp.any(left) & jnp.any(right)
        status = jnp.where(found, jnp.where(well_formed, OFFER, BAD_FORMAT), NONE).astype(jnp.int32)

        def side(mask):
            hit = mask[None, :] & (resource[None, :] == jnp.arange(5)[:, None])  # [5, N]
            v = jnp.where(hit, values[None, :], 0)
            total = jnp.sum(v, axis=1)  # wraps above 2^31: checked in floats
            approx = jnp.sum(v.astype(jnp.float32), axis=1)
            total = jnp.where((approx > 2.0e9) | (total > BIG), NUMBER_CAP, total)
            where = jnp.min(jnp.where(hit, idx[None, :], size + 1), axis=1)
            present = where <= size
            rank = jnp.sum(present[None, :] & (where[None, :] < where[:, None]), axis=1)
            use = status == OFFER
            return jnp.where(use, total, 0).astype(jnp.int32), jnp.where(use & present, rank, 5).astype(jnp.int32)

        give, give_order = side(left)
        take, take_order = side(right)
        return Offer(accept, status, give, take, give_order, take_order)

    # ------------------------------------------------------------------ dynamics
    def legal_actions(self, state):
        """``bool[A]``: the action strings that make no invalid move now."""
        return jax.vmap(lambda m: self._invalid_events(state, m)[2])(
            jax.tree_util.tree_map(jnp.asarray, self.action_moves)) & ~state.done

    def _invalid_events(self, state, move: Offer):
        """Whether ``move`` by the player to act fails to accept, fails to offer, and
        is valid; also the inventories after its trade and whether it trades."""
        e, p = state.extra, state.player
        trades = e.pending & move.accept
        can_pay = jnp.all(e.resources[p] >= e.take)
        fail_accept = trades & ~can_pay
        traded = trades & can_pay
        # the proposer gives what it offered and gets what it asked for; the acceptor the reverse
        delta = e.take - e.give
        sign = jnp.where(jnp.arange(2) == e.proposer, 1, 0) - jnp.where(jnp.arange(2) == p, 1, 0)
        resources = jnp.where(traded, e.resources + sign[:, None] * delta[None, :], e.resources)
        fail_offer = (move.status == BAD_FORMAT) | ((move.status == OFFER) & ~jnp.all(resources[p] >= move.give))
        return fail_accept, fail_offer, ~fail_accept & ~fail_offer, resources, traded

    def _step(self, key, state, move, action, params):
        playing = ~state.done
        p = state.player
        u = state.num_utterances
        start = state
        state = state.replace(
            utterances=state.utterances.at[jnp.minimum(u, self.num_slots - 1)].set(action),
            num_utterances=jnp.minimum(u + 1, self.num_slots),
        )
        e = state.extra
        fail_accept, fail_offer, valid, resources, traded = self._invalid_events(state, move)
        everyone = jnp.ones(2, bool)

        # the pending offer: accepted (traded), or rejected without an [Accept]
        state = self._send(state, everyone & traded, 0, jnp.asarray(self._accepted)[p, e.proposer][None])
        state = self._send(state, everyone & e.pending & ~move.accept, 0, jnp.asarray(self._rejected)[p][None])
        state = state.replace(extra=e.replace(resources=resources, pending=e.pending & ~traded))
        state, warned_a, reward_a = self._invalid(state, fail_accept, jnp.zeros(0, jnp.int32))

        # the new offer, unless the game just ended
        alive = ~state.done
        offers = alive & (move.status == OFFER) & ~fail_offer
        e = state.extra
        state = state.replace(extra=e.replace(
            pending=e.pending | offers, proposer=jnp.where(offers, p, e.proposer),
            give=jnp.where(offers, move.give, e.give), take=jnp.where(offers, move.take, e.take)))
        state = self._send(state, everyone & alive & (move.status == NONE), 0, jnp.asarray(self._no_offer)[p][None])
        state = self._send(state, everyone & offers, 0, self._announcement(p, move))
        state, warned_b, reward_b = self._invalid(state, alive & fail_offer, jnp.zeros(0, jnp.int32))

        # the turn limit: this move was the deciding one
        e = state.extra
        ends = ~state.done & (e.turn >= self.max_turns)
        gain = jnp.sum((e.resources - e.initial) * e.values, axis=1)
        margin = jnp.sign(gain[0] - gain[1]).astype(jnp.float32)
        reward = reward_a + reward_b + jnp.where(ends, jnp.stack([margin, -margin]), 0.0)
        invalid = warned_a | warned_b
        state = state.replace(
            done=state.done | ends,
            errors=jnp.where(invalid, state.errors, 0),
            extra=e.replace(turn=jnp.where(invalid, e.turn, e.turn + 1)),
        )
        state = state.replace(player=jnp.where(invalid | state.done, p, 1 - p))
        state = jax.tree_util.tree_map(lambda n, o: jnp.where(playing, n, o), state, start)
        reward = (reward * playing).astype(jnp.float32)
        return state, self._timestep(state, reward, move, playing & ~valid, jnp.where(playing, u, -1))

    def _announcement(self, p, move):
        """``i32[37]``: "made the following offer" with its items in written order."""
        def items(qty, order):
            by_rank = jnp.argsort(order)  # resources in written order, absent ones last
            q, present = qty[by_rank], order[by_rank] < 5
            last = jnp.sum(present) - 1
            groups = jnp.stack([q // 1_000_000_000, (q // 1_000_000) % 1000, (q // 1000) % 1000, q % 1000], axis=1)
            k = jnp.arange(4)
            lead = jnp.argmax(groups > 0, axis=1)
            digits = jnp.where(k[None] < lead[:, None], -1,
                               jnp.where(k[None] == lead[:, None], jnp.asarray(self._lead)[groups], jnp.asarray(self._group)[groups]))
            name = jnp.where(jnp.arange(5) == last, jnp.asarray(self._name_last)[by_rank], jnp.asarray(self._name_mid)[by_rank])
            out = jnp.concatenate([digits, name[:, None]], axis=1)
            return jnp.where(present[:, None], out, -1).reshape(-1)

        return jnp.concatenate([jnp.asarray(self._offered)[p][None], items(move.give, move.give_order),
                                jnp.int32(self._requested)[None], items(move.take, move.take_order)])

    def _start(self, resources, values):
        resources = jnp.asarray(resources, jnp.int32)
        values = jnp.asarray(values, jnp.int32)
        extra = NegotiationText(resources=resources, initial=resources, values=values, pending=jnp.zeros((), bool),
                                proposer=jnp.int32(0), give=jnp.zeros(5, jnp.int32), take=jnp.zeros(5, jnp.int32),
                                turn=jnp.int32(0))
        state = self._new_state(None, extra, 0)
        q = jnp.clip(resources, QUANTITIES[0], QUANTITIES[1])
        lines = jnp.asarray(self._lines)[jnp.arange(5)[None, :], q, jnp.clip(values, 0, 40)]  # [2 players, 5]
        body = jnp.concatenate([jnp.asarray(self._opening)[:, None], lines,
                                jnp.full((2, 1), self._closing, jnp.int32)], axis=1)
        return self._send(state, jnp.ones(2, bool), 0, body)

    def _reset(self, key, params):
        kq, kv = jax.random.split(key)
        resources = jax.random.randint(kq, (2, 5), QUANTITIES[0], QUANTITIES[1] + 1)
        lo = jnp.asarray([value_range(b)[0] for b in BASE_VALUES])
        hi = jnp.asarray([value_range(b)[1] for b in BASE_VALUES])
        values = lo + jnp.floor(jax.random.uniform(kv, (2, 5)) * (hi - lo + 1)).astype(jnp.int32)
        return self._start(resources, jnp.minimum(values, hi))

    def reset_with_start(self, resources, values, params=None):
        """Start a game from given holdings and values (``i32[2, 5]`` each, by player and
        resource: Wheat, Wood, Sheep, Brick, Ore), as TextArena's ``random`` drew them;
        jit-able."""
        params = self._params(params)
        state = self._start(resources, values)
        return state, self._timestep(state, jnp.zeros(2, jnp.float32), self._no_move(), False, -1)

    def _no_move(self):
        z = jnp.zeros(5, jnp.int32)
        return Offer(jnp.zeros((), bool), jnp.int32(-1), z, z, z + 5, z + 5)

    def reset_env(self, key, params):
        state = self._reset(key, params)
        return state, self._timestep(state, jnp.zeros(2, jnp.float32), self._no_move(), False, -1)

    def _extra_info(self, state):
        e = state.extra
        return {"resources": e.resources, "gain": jnp.sum((e.resources - e.initial) * e.values, axis=1)}


def _member(sorted_cps, cp):
    i = jnp.clip(jnp.searchsorted(sorted_cps, cp), 0, sorted_cps.shape[0] - 1)
    return i, sorted_cps[i] == cp

"""Hanabi, as in the Hanabi Learning Environment (HLE) and OpenSpiel's ``hanabi``.

(Just over 400 lines: the rules of one move -- play, discard, reveal, draw, end of game --
are one step and read best in one place; the 658-feature observation is in
``hanabi_obs.py``.)

Rules. 2-5 players cooperate to build five fireworks, one per colour (R, Y, G, W, B),
each from rank 1 up to 5. The deck has 50 cards: per colour three 1s, two 2s, 3s and
4s, one 5. Each player holds 5 cards (2-3 players) or 4 (4-5 players) and sees every
hand but their own. There are 8 information tokens and 3 life tokens. Player 0 moves
first, then the turn passes round the table. On a turn a player does one of:

* **play** a card slot: the card goes on its firework if its rank is the next one
  (completing a 5 returns an information token, up to 8), otherwise it is discarded
  and a life token is lost;
* **discard** a card slot (only with fewer than 8 information tokens): regain a token;
* **reveal** a colour or a rank to another player (costs a token; the colour or rank
  must be in that player's hand): every card of that colour/rank in their hand is
  pointed at, and they learn that the others are not of it.

After a play or a discard the player draws the top card of the deck (if any) into the
*last* slot; the older cards slide left (HLE's hand order). The game ends when the last
life token is lost (score 0), when all five fireworks are complete (25), or one full
round after the deck runs out (every player, the one who drew the last card included,
has one more turn). Score = sum over colours of the highest card played (max 25).

Params: none (``EmptyParams``); the player count is a constructor argument because it
fixes every shape.

Roles: one role ``player`` with ``num_players`` agents (seat order = agent order),
because Hanabi agents are interchangeable and usually share one policy; a per-seat
role would only split the batch. ``Discrete(2H + 10 (P - 1))`` actions in HLE/OpenSpiel
order (``H`` hand size, ``P`` players)::

    0 .. H-1                    discard slot i
    H .. 2H-1                   play slot i
    2H + 5 (k-1) + c            reveal colour c (R, Y, G, W, B) to player +k, k = 1..P-1
    2H + 5 (P-1) + 5 (k-1) + r  reveal rank r+1 to player +k

(for 2 players: 20 actions = discard 0-4, play 0-4, colour x5, rank x5). ``action_names``
spells them as OpenSpiel does. Exactly one agent is ``active`` while the game runs; the
actions of the others are ignored.

Action mask: row ``p`` holds the moves that are legal for player ``p`` *were it their
turn* (so the mask of the active agent is OpenSpiel's ``legal_actions()`` and the rows
of the others are meaningful too); all True once the game is over.

Reward, the same for every player: the change in score, so a successful play gives +1
and the final life loss gives minus the score so far (HLE's convention; the return is
the final score). ``info``: ``illegal_action`` (bool) and ``score`` (f32).

Observation, per player from its own seat: HLE's canonical encoding, bit for bit equal
to OpenSpiel's ``observation_tensor(player)`` (658 features for 2 players, 956, 1041,
1280 for 3, 4, 5); see ``jaxagents_environments.games.hanabi_obs``.

Illegal moves (a masked action, or an action outside ``0 .. num_actions-1``) lose the
game: the life tokens drop to 0, the score to 0 (reward minus the score so far),
``terminated`` is set and ``info["illegal_action"]`` is True. Stepping a finished game
without a reset changes nothing and gives zero rewards.

Decks. ``reset`` deals as HLE does: every card, the initial hands included, is drawn
uniformly from the cards left in the deck (so the ``key`` of ``step`` is used for the
draws), which is the same distribution as a shuffled deck and avoids a 50-card shuffle
per reset. ``reset_from_deck(deck)`` fixes the order instead (``i32[50]`` card ids
``colour * 5 + rank - 1`` in dealing order: player 0's hand first, slot 0 first, then
player 1's, ..., then the draw pile from the top); the tests use it to deal OpenSpiel
the same cards (its chance outcomes are these ids).

Known defect avoided: JaxMARL's port ended the game one step after the last life was
lost (their issue #179); here that step is the terminal one.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxagents.core import Box, Discrete, Env, Role
from jaxagents_environments.games.hanabi_obs import encode_observations, initial_observations, initial_template, observation_size

COLORS = "RYGWB"
NUM_COLORS = 5
NUM_RANKS = 5
CARDS_PER_RANK = (3, 2, 2, 2, 1)
NUM_CARD_TYPES = NUM_COLORS * NUM_RANKS
DECK_SIZE = NUM_COLORS * sum(CARDS_PER_RANK)  # 50
MAX_INFO_TOKENS = 8
MAX_LIFE_TOKENS = 3
MAX_SCORE = NUM_COLORS * NUM_RANKS
# The standard deck as card ids (colour * 5 + rank index), sorted.
STANDARD_DECK = np.repeat(np.arange(NUM_CARD_TYPES), np.tile(CARDS_PER_RANK, NUM_COLORS)).astype(np.int32)
# Move types, in the order of HLE's last-action encoding.
PLAY, DISCARD, REVEAL_COLOR, REVEAL_RANK = 0, 1, 2, 3
ROLE = "player"
# Card knowledge bits (see HanabiState.knowledge) and the colour / rank each refers to.
_KNOWLEDGE_BITS = NUM_CARD_TYPES + NUM_COLORS + NUM_RANKS
_BITS = np.arange(_KNOWLEDGE_BITS)
_IS_PLAUSIBLE = _BITS < NUM_CARD_TYPES
_IS_COLOR_HINT = (_BITS >= NUM_CARD_TYPES) & (_BITS < NUM_CARD_TYPES + NUM_COLORS)
_IS_RANK_HINT = _BITS >= NUM_CARD_TYPES + NUM_COLORS
_BIT_COLOR = np.where(_IS_PLAUSIBLE, _BITS // NUM_RANKS, np.where(_IS_COLOR_HINT, _BITS - NUM_CARD_TYPES, -1))
_BIT_RANK = np.where(_IS_PLAUSIBLE, _BITS % NUM_RANKS, np.where(_IS_RANK_HINT, _BITS - NUM_CARD_TYPES - NUM_COLORS, -1))


@struct.dataclass
class HanabiState:
    """One game. ``P`` players, ``H`` cards per hand; cards are ids ``colour * 5 + rank``
    (rank 0..4), ``-1`` for an empty slot (hands shrink once the deck is empty).

    Attributes:
        deck: ``i32[50]`` a fixed dealing order (``reset_from_deck``), or all ``-1``:
            each card is then drawn uniformly from what is left, as HLE deals.
        deck_top: ``i32[]`` number of cards dealt so far (the deck holds ``50 - deck_top``).
        deck_below: ``i32[25]`` cards of type ``<= t`` still in the deck (the cumulative
            counts, kept up to date rather than summed at every draw).
        hands: ``i32[P, H]`` card ids, absolute seats.
        knowledge: ``bool[P, H, 35]`` HLE's card knowledge per slot, laid out as in the
            observation: 25 plausible cards (``colour * 5 + rank``: the colours still
            plausible times the ranks still plausible), then the one-hot of a revealed
            colour (5) and of a revealed rank (5); all False in an empty slot. Kept in
            the observation's layout because unpacking a compact form costs more (XLA
            cannot vectorise the index arithmetic) than updating this one.
        fireworks: ``i32[5]`` cards played per colour.
        info_tokens, life_tokens: ``i32[]``.
        discards: ``i32[25]`` discarded (or misplayed) cards per card id.
        current_player: ``i32[]`` seat to move.
        turns_left: ``i32[]`` moves still allowed once the deck is empty (starts at P).
        last_player, last_target: ``i32[]`` seat of the last mover and of the target
            of its reveal (-1 when there is none).
        last_move: ``bool[4 + 5 + 5 + 2H + 25 + 2]`` the observer-independent part of
            HLE's last-action encoding (move type, colour, rank, revealed slots, slot,
            card, scored, token regained).
        done: ``bool[]`` the game is over.
    """

    deck: jax.Array
    deck_top: jax.Array
    deck_below: jax.Array
    hands: jax.Array
    knowledge: jax.Array
    fireworks: jax.Array
    info_tokens: jax.Array
    life_tokens: jax.Array
    discards: jax.Array
    current_player: jax.Array
    turns_left: jax.Array
    last_player: jax.Array
    last_target: jax.Array
    last_move: jax.Array
    done: jax.Array


def _draw(deck, deck_top, deck_below, bits):
    """The next card: ``deck[deck_top]`` for a fixed deck, else uniform over the cards
    left (``deck_below``: cumulative counts), picked by the random ``bits`` (``u32[]``;
    the modulo bias is below 1e-8)."""
    left = jnp.maximum(DECK_SIZE - deck_top, 1).astype(jnp.uint32)
    sampled = jnp.sum(deck_below <= (bits % left).astype(jnp.int32))
    fixed = deck[jnp.minimum(deck_top, DECK_SIZE - 1)]
    return jnp.where(fixed >= 0, fixed, sampled).astype(jnp.int32)


def _card_color(cards):
    return jnp.where(cards >= 0, cards // NUM_RANKS, -1)


def _card_rank(cards):
    return jnp.where(cards >= 0, cards % NUM_RANKS, -1)


class Hanabi(Env):
    """Hanabi for ``num_players`` (2-5) players (see the module docstring).

    Args:
        num_players: number of players, 2..5; the hand size is 5 for 2-3 players and
            4 for 4-5 (HLE's default).
    """

    def __init__(self, num_players: int = 2):
        if isinstance(num_players, bool) or not isinstance(num_players, (int, np.integer)) or not 2 <= num_players <= 5:
            raise ValueError(f"num_players must be an integer in 2..5, got {num_players!r}")
        self.num_players = P = int(num_players)
        self.hand_size = H = 5 if P <= 3 else 4
        self.num_actions = 2 * H + 2 * (P - 1) * NUM_COLORS
        self.observation_size = observation_size(P, H)
        obs = Box(0.0, 1.0, (self.observation_size,), jnp.float32)
        self.roles = {ROLE: Role(P, obs, Discrete(self.num_actions))}
        # action id -> (move type, slot, target offset, colour or rank): a table lookup
        # (one small gather) instead of arithmetic that XLA would repeat for every
        # element of the larger updates it fuses into.
        moves = [(DISCARD, i, 0, 0) for i in range(H)] + [(PLAY, i, 0, 0) for i in range(H)]
        moves += [(REVEAL_COLOR, 0, k, c) for k in range(1, P) for c in range(NUM_COLORS)]
        moves += [(REVEAL_RANK, 0, k, r) for k in range(1, P) for r in range(NUM_RANKS)]
        self.moves = np.array(moves, np.int32)
        self._initial_template = initial_template(P, H)

    @property
    def name(self) -> str:
        return f"Hanabi({self.num_players}p)"

    @property
    def action_names(self) -> list[str]:
        """Action ids spelt as OpenSpiel's ``action_to_string`` does."""
        H, P = self.hand_size, self.num_players
        names = [f"(Discard {i})" for i in range(H)] + [f"(Play {i})" for i in range(H)]
        names += [f"(Reveal player +{k} color {c})" for k in range(1, P) for c in COLORS]
        names += [f"(Reveal player +{k} rank {r + 1})" for k in range(1, P) for r in range(NUM_RANKS)]
        return names

    # ------------------------------------------------------------------ reset
    def reset_env(self, key, params):
        return self._deal(jnp.full(DECK_SIZE, -1, jnp.int32), key)

    def reset_from_deck(self, deck, params=None):
        """Deal ``deck`` (``i32[50]`` card ids in dealing order, a permutation of
        ``STANDARD_DECK``) and return ``(state, timestep)``; every later draw follows it
        too. Jit- and vmap-able; a concrete deck is checked on the host (``ValueError``)."""
        if not isinstance(deck, jax.core.Tracer):
            d = np.asarray(deck)
            if d.shape != (DECK_SIZE,) or not np.array_equal(np.sort(d), STANDARD_DECK):
                raise ValueError("deck must be a permutation of STANDARD_DECK (50 card ids colour*5+rank)")
        return self._deal(jnp.asarray(deck, jnp.int32), jax.random.key(0))

    def _deal(self, deck, key):
        P, H = self.num_players, self.hand_size
        n = P * H
        # The first n cards of a uniform shuffle, from n uniform draws r_i in [0, 50 - i)
        # decoded as a Lehmer code (r_i = rank of card i among the cards not yet dealt):
        # n vectorised passes instead of a sort (a 50-card sort per env costs more than a
        # step on CPU) or n sequential draws.
        bits = jax.random.bits(key, (n,), jnp.uint32)
        pos = (bits % jnp.asarray(DECK_SIZE - np.arange(n), jnp.uint32)).astype(jnp.int32)
        later = jnp.arange(n)
        for i in range(n - 1, -1, -1):
            pos = jnp.where((later > i) & (pos >= pos[i]), pos + 1, pos)
        dealt = jnp.where(deck[:n] >= 0, deck[:n], jnp.asarray(STANDARD_DECK)[pos])
        below = jnp.asarray(np.cumsum(np.tile(CARDS_PER_RANK, NUM_COLORS)), jnp.int32) - jnp.sum(
            dealt[:, None] <= jnp.arange(NUM_CARD_TYPES), 0
        )
        state = HanabiState(
            deck=deck,
            deck_top=jnp.int32(n),
            deck_below=below,
            hands=dealt.reshape(P, H),
            knowledge=jnp.broadcast_to(jnp.asarray(_IS_PLAUSIBLE), (P, H, _KNOWLEDGE_BITS)),
            fireworks=jnp.zeros(NUM_COLORS, jnp.int32),
            info_tokens=jnp.int32(MAX_INFO_TOKENS),
            life_tokens=jnp.int32(MAX_LIFE_TOKENS),
            discards=jnp.zeros(NUM_CARD_TYPES, jnp.int32),
            current_player=jnp.int32(0),
            turns_left=jnp.int32(P),
            last_player=jnp.int32(-1),
            last_target=jnp.int32(-1),
            last_move=jnp.zeros(4 + 10 + 2 * H + NUM_CARD_TYPES + 2, bool),
            done=jnp.zeros((), bool),
        )
        # Everything but the others' cards is the same in every fresh observation.
        obs = initial_observations(state.hands, self._initial_template)
        return state, self._timestep(state, jnp.float32(0.0), jnp.zeros((), bool), obs)

    # ------------------------------------------------------------------ step
    def step_env(self, key, state, actions, params):
        P, H = self.num_players, self.hand_size
        seats = jnp.arange(P)
        slots = jnp.arange(H)
        colors = jnp.arange(NUM_COLORS)
        s = state
        playing = ~s.done
        cp = s.current_player
        action = actions[ROLE][cp]
        in_range = (action >= 0) & (action < self.num_actions)
        kind, slot, offset, value = jnp.asarray(self.moves)[jnp.clip(action, 0, self.num_actions - 1)]
        is_hint = kind >= REVEAL_COLOR
        for_color = kind == REVEAL_COLOR

        # --- legality (of the active player's move only)
        me = seats == cp
        at_slot = slots == slot
        card = jnp.sum(jnp.where(me[:, None] & at_slot, s.hands, 0))  # -1 if the slot is empty
        target = (cp + offset) % P
        is_target = seats == target
        attr = jnp.where(for_color, _card_color(s.hands), _card_rank(s.hands))  # [P, H]
        revealed = is_target[:, None] & (attr == value)  # [P, H] the target's pointed-at cards
        legal = jnp.where(
            is_hint,
            jnp.any(revealed) & (s.info_tokens > 0),
            (card >= 0) & ((kind == PLAY) | (s.info_tokens < MAX_INFO_TOKENS)),
        )
        legal = legal & in_range
        act = playing & legal
        illegal = playing & ~legal

        # --- play / discard
        c, r = card // NUM_RANKS, card % NUM_RANKS
        fw_c = jnp.sum(jnp.where(colors == c, s.fireworks, 0))
        removes = act & ~is_hint
        scored = removes & (kind == PLAY) & (fw_c == r)
        misplay = removes & (kind == PLAY) & ~scored
        fireworks = s.fireworks + (scored & (colors == c)).astype(jnp.int32)
        regain = (removes & (kind == DISCARD)) | (scored & (r == NUM_RANKS - 1) & (s.info_tokens < MAX_INFO_TOKENS))
        info_tokens = s.info_tokens + regain.astype(jnp.int32) - (act & is_hint).astype(jnp.int32)
        life_tokens = jnp.where(illegal, 0, s.life_tokens - misplay.astype(jnp.int32))
        discards = s.discards + ((removes & ~scored) & (jnp.arange(NUM_CARD_TYPES) == card)).astype(jnp.int32)
        score_before = jnp.sum(s.fireworks)
        score = jnp.where(life_tokens > 0, jnp.sum(fireworks), 0)

        # --- end of game (HLE counts the moves made while the deck is already empty)
        deck_empty = s.deck_top >= DECK_SIZE
        turns_left = s.turns_left - (act & deck_empty).astype(jnp.int32)
        done = s.done | illegal | (life_tokens <= 0) | (score >= MAX_SCORE) | (turns_left <= 0)

        # --- draw: a new card (if the game goes on and the deck has one) for the mover
        draw = removes & ~deck_empty & ~done
        new_card = jnp.where(draw, _draw(s.deck, s.deck_top, s.deck_below, jax.random.bits(key, (), jnp.uint32)), -1)

        # --- hands and card knowledge. Decisions per card ([P, H]) and per knowledge bit
        # ([35]) first: a reveal tells the target's cards (HLE's CardKnowledge: a
        # pointed-at card keeps only the plausible cards of the value and records the
        # value, the others drop the value); a play or discard shifts the mover's cards
        # right of the slot one slot left, and the new card enters the last slot.
        told = jnp.broadcast_to((act & is_hint & is_target)[:, None], (P, H))
        shift = (me & removes)[:, None] & (slots >= slot)  # [P, H]
        bit_is_value = jnp.where(for_color, _BIT_COLOR, _BIT_RANK) == value  # [35]
        hint_bit = jnp.where(for_color, _IS_COLOR_HINT, _IS_RANK_HINT) & bit_is_value
        fresh = jnp.asarray(_IS_PLAUSIBLE) & draw  # a new card: anything is plausible
        # Packed into small integer codes by a sum (a reduction, which XLA materialises),
        # so the [P, H, 35] update reads them instead of recomputing the decision chain
        # for each of its elements (about 3x less work in that update on CPU).
        weights = jnp.array([1, 2, 4])
        card_code = jnp.sum(jnp.stack([told, told & revealed, shift]) * weights[:, None, None], 0)
        bit_code = jnp.sum(jnp.stack([bit_is_value, hint_bit, fresh]) * weights[:, None], 0)
        told, hit, shift = (card_code & 1) > 0, (card_code & 2) > 0, (card_code & 4) > 0
        bit_is_value, hint_bit, fresh = (bit_code & 1) > 0, (bit_code & 2) > 0, (bit_code & 4) > 0

        k, hints = s.knowledge, ~_IS_PLAUSIBLE  # a reveal only adds hint bits
        learned = jnp.where(hit[..., None], (k & (hints | bit_is_value)) | hint_bit, k & (hints | ~bit_is_value))
        knowledge = jnp.where(told[..., None], learned, k)

        def slide(x, fill):  # each card of the shifted slots takes its right neighbour
            nxt = jnp.concatenate([x[:, 1:], jnp.broadcast_to(fill, x[:, :1].shape).astype(x.dtype)], 1)
            return jnp.where(shift.reshape(shift.shape + (1,) * (x.ndim - 2)), nxt, x)

        hands = slide(s.hands, new_card)
        knowledge = slide(knowledge, fresh)

        # --- last move, observer-independent part (see hanabi_obs)
        onehot = colors == value
        last_move = jnp.concatenate([
            jnp.arange(4) == kind,
            for_color & onehot,
            (kind == REVEAL_RANK) & onehot,
            jnp.any(revealed, 0) & is_hint,
            at_slot & ~is_hint,
            (jnp.arange(NUM_CARD_TYPES) == card) & ~is_hint,
            jnp.stack([scored, scored & regain]),
        ])

        new = HanabiState(
            deck=s.deck,
            deck_top=s.deck_top + draw.astype(jnp.int32),
            deck_below=s.deck_below - ((new_card >= 0) & (new_card <= jnp.arange(NUM_CARD_TYPES))),
            hands=hands,
            knowledge=knowledge,
            fireworks=fireworks,
            info_tokens=info_tokens,
            life_tokens=life_tokens,
            discards=discards,
            current_player=jnp.where(act & ~done, (cp + 1) % P, cp),
            turns_left=turns_left,
            last_player=jnp.where(act, cp, s.last_player),
            last_target=jnp.where(act, jnp.where(is_hint, target, -1), s.last_target),
            last_move=jnp.where(act, last_move, s.last_move),
            done=done,
        )
        reward = jnp.where(playing, score - score_before, 0).astype(jnp.float32)
        return new, self._timestep(new, reward, illegal)

    # ------------------------------------------------------------------ outputs
    def legal_moves(self, state) -> jax.Array:
        """``bool[P, num_actions]``: row ``p`` = the moves legal for player ``p`` were it
        their turn (ignores ``done``)."""
        P = self.num_players
        filled = state.hands >= 0
        values = jnp.arange(NUM_COLORS)
        can_hint = state.info_tokens > 0
        colors = jnp.any(_card_color(state.hands)[..., None] == values, 1) & can_hint  # [P, 5]
        ranks = jnp.any(_card_rank(state.hands)[..., None] == values, 1) & can_hint
        discard = filled & (state.info_tokens < MAX_INFO_TOKENS)

        def row(p):  # hints go to seats p+1, ..., p+P-1 (static rolls, as in hanabi_obs)
            others = lambda x: jnp.roll(x, -p - 1, 0)[: P - 1].reshape(-1)
            return [discard[p], filled[p], others(colors), others(ranks)]

        return jnp.concatenate([piece for p in range(P) for piece in row(p)]).reshape(P, -1)

    def score(self, state) -> jax.Array:
        """``i32[]`` the current score (0 once the last life is lost)."""
        return jnp.where(state.life_tokens > 0, jnp.sum(state.fireworks), 0)

    def _timestep(self, state, reward, illegal, obs=None):
        P = self.num_players
        if obs is None:
            obs = encode_observations(state, P, self.hand_size)
        mask = self.legal_moves(state) | state.done
        active = (jnp.arange(P) == state.current_player) & ~state.done
        return self.make_timestep(
            obs={ROLE: obs.astype(jnp.float32)},
            reward={ROLE: jnp.broadcast_to(reward, (P,))},
            terminated=state.done,
            action_mask={ROLE: mask},
            active={ROLE: active},
            info={"illegal_action": illegal, "score": self.score(state).astype(jnp.float32)},
        )

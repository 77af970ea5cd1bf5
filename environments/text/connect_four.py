"""Connect Four as TextArena 0.7.4's ``ConnectFour-v0`` text game, inside ``jit``.

The board, the turn order and the win and draw checks are
``jaxagents_environments.games.connect_four.ConnectFour`` (6 rows, 7 columns, row 0 the
top row, as TextArena prints it); what TextArena adds is kept here: its messages, its
symbols and its grammar.

TextArena's rules, as its code plays them:

* Player 0 moves first and is ``X``, player 1 is ``O`` (our ``first`` and ``second``
  roles: ``ConnectFour``'s board holds 1 for ``X`` and 2 for ``O``).
* A reply's move is ``re.search`` of ``.*\\[(?:col\\s*)?(\\d+)\\].*`` (case-insensitive)
  after the bracket rule: the *last* match on the *first* line that has one (``.``
  stops at a newline and the leading ``.*`` is greedy), so ``"[col 1] or [col 5]"`` is
  column 5, ``"[col 6]\\n[col 0]"`` column 6, ``"3"`` is ``[3]``, column 3; any script's
  decimal digits count; ``"[ 3 ]"`` and ``"[col 3 ]"`` match nothing. No match, a
  number above 6 or a full column is an invalid move (``base``'s rule: one warning,
  then the loss), with the reason in the warning (the number, as ``int`` prints it,
  for one above 6). The reason starts with the player again: ``"Reason: Player 1,
  Invalid action. Column 9 is out of bounds."``.
* A valid move is announced to both players (``Player 0 dropped their disk (X) into
  column 3.``), then the board is sent unless the move ended the game; an invalid
  move sends no board.
* Four in a row wins (+1/-1); a full board draws (0/0); nothing is sent at the end.

Move codes: the column the grammar read (0-6, 7 and more out of bounds, capped at
``jaxagents.lm.grammar.NUMBER_CAP``), -1 no match.

Pieces: the board is a header piece and six row pieces (3^7 variants each; the first
five end with their newline, which Qwen2's pre-tokenizer glues to a row ending in
punctuation); each message is one piece, except a warning's number, which is one
piece up to 999 and otherwise a first group and groups of three digits, a boundary
inside a digit run: exact for Qwen2's pre-tokenizer (one digit per pre-token) and not
for GPT-2's, which merges the run (such replies are rare; the text is exact either way,
and above 999,999,999 the number shown is ``NUMBER_CAP``).

Observation (roles ``player_0`` and ``player_1``, one agent each) ``i32[P + U]``
(``P = 1014``, ``U = 86`` with the default arguments): entries ``0 .. P-1`` are the ids
of the pieces (``piece_table``) that make up the player's TextArena observation so far,
in order, -1 after its end; the last ``U`` are one slot per reply of the episode, in
order, valid or not: the action index that was played, or -1 for a slot not reached yet
or a reply given as text (``step_move``). ``env.render_observation(obs)`` turns it back
into TextArena's string. Only the player to move is active.

Actions ``Discrete(A)``: action ``a`` is the reply string ``actions.CONNECT_FOUR[a]``
(42 strings by default), played exactly as a language model's reply would be. Actions
0-6 are ``[col 0]`` .. ``[col 6]``, a disc into that column; 7-23 are other spellings
the grammar also reads as a column 0-6 (``[3]``, ``4``, ``[COL 5]``,
``I drop it in [col 2].``, ...); 24-29 read a column out of bounds (7 and above) and
30-41 read no column at all (never valid). ``legal_actions`` marks the strings that are
valid moves in the current position.
"""

from __future__ import annotations

import itertools

import jax.numpy as jnp
import numpy as np

from jaxagents.lm.grammar import GreedyBracketedNumberGrammar, format_action_text
from jaxagents_environments.games.connect_four import ConnectFour
from jaxagents_environments.text import actions as action_tables
from jaxagents_environments.text.base import GAME, PieceBuilder, TextGame

ROWS, COLS = 6, 7  # ConnectFour-v0's board
SYMBOLS = ("X", "O")  # TextArena's: player 0 is X
CELLS = (".", "X", "O")  # ConnectFour's 0 (empty), 1 (first, X), 2 (second, O)


def prompt(player: int) -> str:
    """TextArena's Connect Four prompt for ``player`` (its text, verbatim)."""
    return (
        f"You are Player {player} in Connect Four.\nYour disc symbol: {SYMBOLS[player]}.\n"
        f"The game board has {ROWS} rows and {COLS} columns.\n"
        f"Players take turns dropping their disc into one of the columns (0 to {COLS - 1}).\n"
        "The first to connect (their own) four discs vertically, horizontally, or diagonally wins.\n"
        "On your turn, enter the column number in squared brackets to make your move.\n"
        "For example: '[col 4]' or '[col 1]'."
    )


def _row(contents) -> str:
    return " ".join(CELLS[c] for c in contents)


class TextConnectFour(TextGame):
    """TextArena's Connect Four (see the module docstring).

    Args:
        error_allowance: invalid moves in a row a player may make before the next
            one loses the game (TextArena's default: 1; 0: the first one loses).
        actions: the action-string table (default: ``actions.CONNECT_FOUR``).
    """

    num_moves = COLS

    def __init__(self, error_allowance: int = 1, actions=None):
        if not isinstance(error_allowance, (int, np.integer)) or isinstance(error_allowance, bool) or error_allowance < 0:
            raise ValueError(f"error_allowance must be a non-negative int, got {error_allowance!r}")
        self.game = ConnectFour(ROWS, COLS)
        self.grammar = GreedyBracketedNumberGrammar("col")

        b = PieceBuilder()
        self._build_common(b)
        self._prompt = b.many([" " + prompt(p) for p in range(2)])
        numbers = " ".join(str(c) for c in range(COLS))
        self._header = b(f" Board state:\n{numbers}\n{'-' * (2 * COLS - 1)}\n", final=False)
        contents = list(itertools.product(range(3), repeat=COLS))  # index: base-3 digits, column 0 first
        self._row_mid = b.many([_row(c) + "\n" for c in contents], final=False)
        self._row_last = b.many([_row(c) for c in contents])
        self._dropped = np.array([[b(f" Player {p} dropped their disk ({SYMBOLS[p]}) into column {c}.") for c in range(COLS)]
                                  for p in range(2)], np.int32)
        self._bad_format = b.many([f" Player {p}, Invalid action format. Expected format: '[col x]'." for p in range(2)])
        self._column = b.many([f" Player {p}, Invalid action. Column" for p in range(2)], final=False)
        self._out_of_bounds = b(" is out of bounds.")
        self._full = np.array([[b(f" Player {p}, Invalid action. Column {c} is full.") for c in range(COLS)]
                               for p in range(2)], np.int32)
        self._lead = b.many([f" {g}" for g in range(1000)], final=False)
        self._group = b.many([f"{g:03d}" for g in range(1000)], final=False)

        a = int(error_allowance)
        cells = ROWS * COLS
        invalid = cells * a + a + 1
        # pieces per player: prompt 2, board 8; a valid move (echo, drop, board) 12, an
        # invalid one (echo, warning of up to 9) 11
        capacity = 2 + 8 + cells * 12 + 11 * invalid + 16
        self._setup(action_tables.CONNECT_FOUR if actions is None else actions, b.build(cells + invalid), capacity, a)

    # ------------------------------------------------------------------ parsing
    def parse_text(self, reply: str) -> int:
        return self.grammar.search(format_action_text(reply))

    def parse_bytes(self, data, length):
        return self.grammar.match(data, length)[0]

    # ------------------------------------------------------------------ dynamics
    def _legal_moves(self, state):
        return (state.game.board[0] == 0) & ~state.done

    def _board(self, state):
        """``i32[7]``: the board message's body."""
        index = state.game.board @ (3 ** jnp.arange(COLS - 1, -1, -1, dtype=jnp.int32))
        rows = jnp.where(jnp.arange(ROWS) < ROWS - 1, jnp.asarray(self._row_mid)[index], jnp.asarray(self._row_last)[index])
        return jnp.concatenate([jnp.int32(self._header)[None], rows])

    def _reset(self, key, params):
        game, _ = self.game.reset_env(key, self.game.default_params())
        state = self._new_state(game, None, 0)
        state = self._send(state, jnp.ones(2, bool), GAME, jnp.asarray(self._prompt)[:, None])
        return self._send(state, jnp.ones(2, bool), GAME, self._board(state))

    def _apply(self, key, state, move, params):
        p = state.player
        col = jnp.clip(move, 0, COLS - 1).astype(jnp.int32)
        state = self._send(state, jnp.ones(2, bool), GAME, jnp.asarray(self._dropped)[p, col][None])
        game, ts = self.game.step_env(key, state.game, {"first": col[None], "second": col[None]}, self.game.default_params())
        reward = jnp.stack([ts.reward["first"][0], ts.reward["second"][0]])
        done = game.done
        state = state.replace(game=game, player=jnp.where(done, p, 1 - p))
        # the board, unless the move ended the game (an all -1 body sends nothing)
        state = self._send(state, jnp.ones(2, bool), GAME, jnp.where(done, -1, self._board(state)))
        return state, done, reward

    def _number(self, value):
        """``i32[4]``: the pieces of a positive ``int`` (a first group, then groups of 3)."""
        groups = jnp.stack([value // 1_000_000_000, (value // 1_000_000) % 1000, (value // 1000) % 1000, value % 1000])
        k = jnp.arange(4)
        first = jnp.argmax(groups > 0)
        return jnp.where(k < first, -1, jnp.where(k == first, jnp.asarray(self._lead)[groups], jnp.asarray(self._group)[groups]))

    def _invalid_reason(self, state, move):
        p = state.player
        none = jnp.full(6, -1, jnp.int32)
        no_match = none.at[0].set(jnp.asarray(self._bad_format)[p])
        out_of_bounds = jnp.concatenate([jnp.asarray(self._column)[p][None], self._number(jnp.maximum(move, 1)),
                                         jnp.int32(self._out_of_bounds)[None]])
        full = none.at[0].set(jnp.asarray(self._full)[p, jnp.clip(move, 0, COLS - 1)])
        return jnp.where(move < 0, no_match, jnp.where(move >= COLS, out_of_bounds, full))

"""Tic-tac-toe as TextArena 0.7.4's ``TicTacToe-v0`` text game, inside ``jit``.

The board, the turn order and the win and draw checks are
``jaxagents_environments.games.tic_tac_toe.TicTacToe``; what TextArena adds is kept
here: its messages, its symbols and its grammar.

TextArena's rules, as its code plays them:

* Player 0 moves first and is ``O``, player 1 is ``X`` (our ``first`` and ``second``
  roles; the symbols only appear in the text).
* A reply's move is the first match of ``\\[\\s*(\\d+)\\s*\\]`` after the bracket rule
  (so ``"4"`` is ``[4]``, ``"[ 04 ]"`` is cell 4, any script's decimal digits count);
  no match, a number above 8 or an occupied cell is an invalid move (``base``'s rule:
  one warning, then the loss), with the reason in the warning (the number, as ``int``
  prints it, for one above 8).
* After every reply, valid or not, both players are sent the board and the available
  moves (also after the last move, where nobody sees it).
* Three in a row wins (+1/-1); a full board draws (0/0).

Move codes: the number the grammar read (0-8 a cell, 9 and more out of range, capped
at ``jaxagents.lm.text.NUMBER_CAP``), -1 no match.

Pieces: the board is three row pieces (27 variants each, the first with the message's
header, the last with ``Available Moves:``) and one piece per available move. A number
in a warning is one piece up to 999; a larger one is a first group and groups of three
digits, a boundary inside a digit run: exact for Qwen2's pre-tokenizer (one digit per
pre-token) and not for GPT-2's, which merges the run (such replies are rare; the text
is exact either way, and above 999,999,999 the number shown is ``NUMBER_CAP``).

Observation (roles ``player_0`` and ``player_1``, one agent each) ``i32[P + U]``
(``P = 437``, ``U = 20`` with the default arguments): entries ``0 .. P-1`` are the ids
of the pieces (``piece_table``) that make up the player's TextArena observation so far,
in order, -1 after its end; the last ``U`` are one slot per reply of the episode, in
order, valid or not: the action index that was played, or -1 for a slot not reached yet
or a reply given as text (``step_move``). ``env.render_observation(obs)`` turns it back
into TextArena's string. Only the player to move is active.

Actions ``Discrete(A)``: action ``a`` is the reply string ``actions.TIC_TAC_TOE[a]`` (42
strings by default), played exactly as a language model's reply would be. Actions 0-8
are ``[0]`` .. ``[8]``, a mark in that cell (row by row from the top-left); 9-17 the
bare digits ``0`` .. ``8`` (the same cells, after the bracket rule); 18-25 other
spellings of cells 4 and 2; 26-31 numbers out of range (9 and above) and 32-41 replies
with no number in brackets (never valid). ``legal_actions`` marks the strings that are
valid moves in the current position.
"""

from __future__ import annotations

import itertools

import jax.numpy as jnp
import numpy as np

from jaxagents.lm.grammar import BracketedNumberGrammar, format_action_text
from jaxagents_environments.games.tic_tac_toe import TicTacToe
from jaxagents_environments.text import actions as action_tables
from jaxagents_environments.text.base import GAME, PieceBuilder, TextGame

SYMBOLS = ("O", "X")  # TextArena's: player 0 is O


def prompt(player: int) -> str:
    """TextArena's tic-tac-toe prompt for ``player`` (its text, verbatim)."""
    me, other = ("X", "O") if player == 1 else ("O", "X")
    return (
        f"You are Player {player} in Tic Tac Toe.\n"
        "Your goal is to win three in a row (horizontally, vertically, or diagonally) on the board.\n"
        "On your turn, you should select the square number (0-8) you want to put your mark in next.\n"
        "For example, '[4]' places your mark in the center cell of the board.\n\n"
        f"As Player {player}, you will be '{me}', while your opponent is '{other}'.\n"
    )


def _row(r: int, contents) -> str:
    return "|".join(f" {SYMBOLS[c - 1]} " if c else f" {r * 3 + k} " for k, c in enumerate(contents))


class TextTicTacToe(TextGame):
    """TextArena's tic-tac-toe (see the module docstring).

    Args:
        error_allowance: invalid moves in a row a player may make before the next
            one loses the game (TextArena's default: 1; 0: the first one loses).
        actions: the action-string table (default: ``actions.TIC_TAC_TOE``).
    """

    num_moves = 9

    def __init__(self, error_allowance: int = 1, actions=None):
        if not isinstance(error_allowance, (int, np.integer)) or isinstance(error_allowance, bool) or error_allowance < 0:
            raise ValueError(f"error_allowance must be a non-negative int, got {error_allowance!r}")
        self.game = TicTacToe()
        self.grammar = BracketedNumberGrammar()

        b = PieceBuilder()
        self._build_common(b)
        self._prompt = b.many([" " + prompt(p) for p in range(2)])
        sep = "\n---+---+---\n"
        rows = np.zeros((3, 27), np.int32)
        for i, contents in enumerate(itertools.product(range(3), repeat=3)):
            rows[0, i] = b(" Current Board:\n\n" + _row(0, contents) + sep)
            rows[1, i] = b(_row(1, contents) + sep)
            rows[2, i] = b(_row(2, contents) + "\n\nAvailable Moves:")
        self._rows = rows
        self._move_mid = b.many([f" '[{k}]'," for k in range(9)])
        self._move_last = b.many([f" '[{k}]'" for k in range(9)])
        self._no_moves = b(" ")
        self._placed = np.array([[b(f" Player {p} placed their symbol ({SYMBOLS[p]}) in cell {c}.") for c in range(9)]
                                 for p in range(2)], np.int32)
        self._bad_format = b(" The submitted move does not follow the correct format.")
        self._occupied = b.many([f" cell {c} is already occupied." for c in range(9)])
        self._out_of_range = b(". Must be between 0 and 8.")
        self._lead = b.many([f" {g}" for g in range(1000)], final=False)
        self._group = b.many([f"{g:03d}" for g in range(1000)], final=False)

        a = int(error_allowance)
        invalid = 9 * a + a + 1
        # pieces per player: prompt 2, board 13; a valid move (echo, placement, board)
        # 17, an invalid one (echo, warning of up to 8, board) 23
        capacity = 2 + 13 + 9 * 17 + 23 * invalid + 16
        self._setup(action_tables.TIC_TAC_TOE if actions is None else actions, b.build(9 + invalid), capacity, a)

    # ------------------------------------------------------------------ parsing
    def parse_text(self, reply: str) -> int:
        return self.grammar.search(format_action_text(reply))

    def parse_bytes(self, data, length):
        return self.grammar.match(data, length)[0]

    # ------------------------------------------------------------------ dynamics
    def _legal_moves(self, state):
        return (state.game.board == 0) & ~state.done

    def _board(self, state):
        """``i32[12]``: the board message's body."""
        cells = state.game.board.reshape(3, 3)
        index = cells[:, 0] * 9 + cells[:, 1] * 3 + cells[:, 2]
        rows = jnp.asarray(self._rows)[jnp.arange(3), index]
        empty = state.game.board == 0
        k = jnp.arange(9)
        last = jnp.max(jnp.where(empty, k, -1))
        moves = jnp.where(empty, jnp.where(k == last, jnp.asarray(self._move_last), jnp.asarray(self._move_mid)), -1)
        moves = moves.at[0].set(jnp.where(jnp.any(empty), moves[0], self._no_moves))
        return jnp.concatenate([rows, moves])

    def _send_board(self, state):
        return self._send(state, jnp.ones(2, bool), GAME, self._board(state))

    def _reset(self, key, params):
        game, _ = self.game.reset_env(key, self.game.default_params())
        state = self._new_state(game, None, 0)
        state = self._send(state, jnp.ones(2, bool), GAME, jnp.asarray(self._prompt)[:, None])
        return self._send_board(state)

    def _apply(self, key, state, move, params):
        p = state.player
        cell = jnp.clip(move, 0, 8).astype(jnp.int32)
        state = self._send(state, jnp.ones(2, bool), GAME, jnp.asarray(self._placed)[p, cell][None])
        game, ts = self.game.step_env(key, state.game, {"first": cell[None], "second": cell[None]}, self.game.default_params())
        reward = jnp.stack([ts.reward["first"][0], ts.reward["second"][0]])
        done = game.done
        return state.replace(game=game, player=jnp.where(done, p, 1 - p)), done, reward

    def _after_move(self, state, valid, params):
        return self._send_board(state)

    def _number(self, value):
        """``i32[4]``: the pieces of a positive ``int`` (a first group, then groups of 3)."""
        groups = jnp.stack([value // 1_000_000_000, (value // 1_000_000) % 1000, (value // 1000) % 1000, value % 1000])
        k = jnp.arange(4)
        first = jnp.argmax(groups > 0)
        return jnp.where(k < first, -1, jnp.where(k == first, jnp.asarray(self._lead)[groups], jnp.asarray(self._group)[groups]))

    def _invalid_reason(self, state, move):
        no_match = jnp.array([self._bad_format, -1, -1, -1, -1], jnp.int32)
        out_of_range = jnp.concatenate([self._number(jnp.maximum(move, 1)), jnp.int32(self._out_of_range)[None]])
        occupied = jnp.array([-1, -1, -1, -1, -1], jnp.int32).at[0].set(jnp.asarray(self._occupied)[jnp.clip(move, 0, 8)])
        return jnp.where(move < 0, no_match, jnp.where(move > 8, out_of_range, occupied))

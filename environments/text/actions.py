"""The action-string tables of the text games: what a ``Discrete`` action means.

Action ``a`` of a text game is the string ``TABLE[a]``, given to the game exactly as a
language model's reply would be (TextArena's bracket rule and regular expression decide
what it means). Each table holds the legal moves' canonical strings first, then case
variants, bare words (the bracket rule turns ``bet`` into ``[bet]``), replies that embed
a move in other text, and strings that are never a valid move; a few test the edges
of TextArena's grammar (Unicode case folding and digits, whitespace, role tags).

This module uses the standard library only: the TextArena recorder
(``experiments/textarena_reference/record.py``), which runs in TextArena's own
environment without jax, loads it by path and plays the same strings.
"""

# Kuhn poker. TextArena's grammar: the first case-insensitive match of [check], [bet],
# [call] or [fold] after the bracket rule.
KUHN_POKER = (
    "[check]", "[bet]", "[call]", "[fold]",
    "[Check]", "[BET]", "[Call]", "[FOLD]",
    "check", "bet", "call", "fold", "Bet",
    "I will [bet]",
    "I check. [check]",
    "Let me [Fold] now.",
    "[call] and then [fold]",          # the first match counts: call
    "My move:\n[call]",
    "[chec\u212a]",                    # KELVIN SIGN folds to k: a valid [check]
    "[Player 0] [bet]",                # the role tag is removed from the echoed text
    " [bet] ",                         # an utterance that ends with whitespace
    "[raise]", "hello", "", "[ bet ]", "bet!", "[check", "raise",
    "[GAME] check",                    # has brackets, so no bracket is added: no move
    "checkbet", "[b\u00e9t]",
)

# Tic-tac-toe. TextArena's grammar: the first match of \[\s*(\d+)\s*\] (Unicode
# whitespace and decimal digits) after the bracket rule; 0-8 are the cells.
TIC_TAC_TOE = (
    *(f"[{k}]" for k in range(9)),
    *(str(k) for k in range(9)),
    "[ 4 ]", "[04]", "[\u00a04]", "[\u0664]",   # no-break space; ARABIC-INDIC DIGIT FOUR
    "I pick [4]", "[4] or [5]", "Center: [ 4 ]\n",
    "[Player 1] [2]",
    "[10]", "[9]", "[99]", "12", "[123456]", "[00000000000042]",
    "[]", "", "hello", "[x]", "[-1]", "[4.0]", "4 5", "[+3]", "4]", "[4",
)

# Leduc hold'em. TextArena's grammar: the first case-insensitive match of [check],
# [call], [bet], [raise] or [fold] after the bracket rule.
LEDUC_POKER = (
    "[check]", "[bet]", "[call]", "[raise]", "[fold]",
    "[Check]", "[BET]", "[Call]", "[RAISE]", "[Fold]",
    "check", "bet", "call", "raise", "fold",
    "I [raise] you",
    "[call] then [fold]",              # the first match counts: call
    "Hmm.\n[bet]",
    # LATIN SMALL LETTER LONG S: matches [raise] case-insensitively, but lowercases to
    # "raiſe", no move name: invalid
    "[rai\u017fe]",
    "[Player 1] [check]",
    " [call] ",
    "[all-in]", "hello", "", "[ check ]", "raise!", "[fold", "[GAME] call", "checkbet",
)

# Simple negotiation. TextArena's grammar: [Accept] anywhere (case-insensitive) accepts
# a pending offer; the first [Offer: ... -> ...] is a new offer (quantity-resource pairs
# on each side of one "->"), after the bracket rule.
SIMPLE_NEGOTIATION = (
    "[Accept]", "[Deny]", "[accept]", "accept", "deny",
    "[Offer: 3 Wheat -> 2 Ore]",
    "[Offer: 2 Ore -> 5 Wheat]",
    "[Offer: 1 Wood, 1 Sheep -> 2 Brick]",
    "[Offer: 4 Brick -> 3 Sheep, 1 Wood]",
    "[Offer: I give 2 Sheep -> 1 Ore]",
    "[Offer 5 Wheat -> 1 Brick.]",
    "[Offer: 2 Woods -> 1 Sheeps]",
    "[offer: 3 wheat, 2 WHEAT -> 1 ore]",  # the same resource twice: 5 Wheat
    "Offer: 6 Wood -> 2 Brick",            # the bracket rule makes it an offer
    "[Accept] [Offer: 2 Ore -> 8 Wood]",
    "I accept. [Accept]",
    "Let's trade: [Offer: 1 Ore -> 6 Wheat]",
    "[Offer: 2 Sheep -> 1 Brick] [Accept]",
    "[Offer: 1\u00a0Wheat ->  2 Wood ...]",
    "[Offer: 30 Ore -> 1 Wheat]",          # more than anyone holds
    "[Offer: 1 Wheat -> 1000000 Ore]",     # a valid offer nobody can accept
    "[Offer: 3 Gold -> 1 Ore]", "[Offer: 3 Wheat]", "[Offer: 0 Wheat -> 1 Ore]",
    "[Offer: 1 Wheat -> 1 Ore -> 2 Wood]", "[Offer]", "hello", "", "[Deny] I want more",
)

# Connect Four. TextArena's grammar: re.search of .*\[(?:col\s*)?(\d+)\].* (case-insensitive)
# after the bracket rule: "." stops at a newline and the leading ".*" is greedy, so the
# move is the LAST match on the FIRST line that has one ("\s" may cross lines); 0-6 are
# the columns, a larger number is out of bounds, a full column is invalid too.
CONNECT_FOUR = (
    *(f"[col {c}]" for c in range(7)),
    "[3]", "4", "col 2", "[COL 5]", "[Col 1]", "[col6]", "[col   0]",
    "[col\t2]", "[col\n4]",               # "\s*" crosses the newline
    "[col 03]", "[col \u0665]",            # ARABIC-INDIC DIGIT FIVE
    "I drop it in [col 2].",
    "[col 1] or rather [col 5]",           # the last match on the line counts: 5
    "[col 6]\n[col 0]",                    # the first line with a match counts: 6
    "Let me think.\n[col 3]",
    "[Player 1] [col 4]",                  # the role tag is removed from the echoed text
    " [col 1] ",                           # an utterance that ends with whitespace
    "[col 7]", "[col 9]", "[8]", "[col 10]", "[col 123456]", "[col 00000000000042]",
    "[col -1]", "[col]", "", "hello", "[column 3]", "[col 3", "col 3]", "[ 3 ]", "[col 3 ]",
    "[c 3]", "[col x]", "[col 3.5]",
)

TABLES = {"kuhn_poker": KUHN_POKER, "tic_tac_toe": TIC_TAC_TOE, "leduc_poker": LEDUC_POKER,
          "simple_negotiation": SIMPLE_NEGOTIATION, "connect_four": CONNECT_FOUR}

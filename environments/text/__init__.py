"""Our games as TextArena's text games, inside ``jit``.

Each module is one TextArena game with exact parity of its text (observations, moves,
rewards and ends; ``tests/environments/text`` replays games recorded from TextArena
0.7.4): ``kuhn`` (``text_kuhn_poker``), ``tic_tac_toe`` (``text_tic_tac_toe``), ``leduc``
(``text_leduc_poker``), ``negotiation`` (``text_negotiation``), ``connect_four``
(``text_connect_four``). The dynamics are our
games' (``jaxagents_environments.games``) wherever TextArena plays the same rules
(Leduc's betting and the five-resource negotiation are TextArena's own); ``base``
holds what the text games share (TextArena's message log, its two-player rules, the
action space over an action-string table); ``actions`` the action-string tables;
``exact`` the card games' information states for exact evaluation of a language policy
(their ``exact_game()``); ``opponents`` the games' scripted opponents. The text
machinery that knows no game (pieces, tokenization, grammars over bytes) is
``jaxagents.lm.text``.
"""

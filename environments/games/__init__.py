"""Cooperative and competitive games.

* ``matrix.py``: repeated two-player matrix games (prisoner's dilemma, stag hunt,
  chicken, matching pennies, coordination), payoffs and horizon in params;
* ``tic_tac_toe.py`` with ``tic_tac_toe_minimax.py`` (the exact solver, usable in jit)
  and ``tic_tac_toe_exact.py`` (exact outcomes of a policy against minimax);
* ``connect_four.py``: Connect Four (any board of at least 4 x 4), with a one-ply
  ``win_block`` scripted player;
* ``kuhn.py``, ``leduc.py``: OpenSpiel's poker rules, information-state tensors and
  game trees for exact exploitability;
* ``negotiation.py``: SPIRAL's simple negotiation;
* ``hanabi.py`` with ``hanabi_obs.py`` (HLE's canonical observation);
* ``overcooked/``: layouts, dynamics, observations and rendering.

Game knowledge that learners use (scripted opponents, exact evaluation) is offered
through the environment capabilities of ``jaxagents.core.env``.
"""

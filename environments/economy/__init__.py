"""Economic agents: a million households per economy, many economies side by side.

* ``taxation`` — the Stackelberg labour/tax game (``worker`` x N, ``planner`` x 1), with
  ``skills`` (income distributions), ``brackets`` (piecewise-linear tax schedules),
  ``labour`` (worker utilities) and ``policies`` (Saez, US federal and flat planners;
  best-responding workers).
* ``macro`` — households, firms, a bank, a government and a central bank.
* ``market`` — gather, craft and trade through double auctions, with a periodic tax.
* ``gtb`` — the AI Economist's gather-trade-build on a map (move, gather, build houses,
  trade, periodic bracket tax), step for step against its own code.
* ``metrics`` — Gini, Atkinson, equality x productivity, welfare functions, GDP, revenue.

Import the module you need (``from jaxagents_environments.economy.taxation import Taxation``);
this package imports nothing so that one environment does not pay for the others.
"""

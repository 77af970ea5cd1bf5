"""The market economy: gather, craft, trade through a double auction per resource, and
a periodic bracket tax (the AI Economist's Gather-Trade-Build, flattened like EconoJax).

``Market(num_citizens=100)`` — the rules are in ``env.py``, the order book and the exact
matching rule in ``auction.py``, the action layout, masks, recipe, tax and utility in
``rules.py``, params and state in ``params.py``, the observations in ``obs.py``.
"""

from jaxagents_environments.economy.market.auction import ASK, BID, EMPTY, OrderBook, match
from jaxagents_environments.economy.market.env import Market
from jaxagents_environments.economy.market.params import MarketParams, MarketState
from jaxagents_environments.economy.market.rules import ActionLayout

__all__ = ["Market", "MarketParams", "MarketState", "OrderBook", "match", "ActionLayout", "BID", "ASK", "EMPTY"]

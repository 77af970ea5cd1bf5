"""The macro economy: households, firms, a bank, a government and a central bank.

``MacroEconomy(num_households=100, num_firms=1)`` — the model and its accounting
identities are in ``env.py``, its equations as pure functions in ``dynamics.py``, the
parameters and state in ``params.py``, the observations in ``obs.py`` and the
Taylor-rule central bank (a scripted baseline) in ``taylor.py``; scripted rules for the
other roles and ``CentralBankEconomy`` (only the central bank learns) in ``scripted.py``.
"""

from jaxagents_environments.economy.macro.dynamics import hsv_tax, production, ration
from jaxagents_environments.economy.macro.env import ACTION_DIMS, INFO_KEYS, PRICE_MAX, PRICE_MIN, ROLES, MacroEconomy
from jaxagents_environments.economy.macro.obs import (
    BANK_FEATURES, FIRM_FEATURES, GLOBAL_FEATURES, GOVERNMENT_FEATURES, HOUSEHOLD_FEATURES,
)
from jaxagents_environments.economy.macro.params import DEFAULTS, MacroParams, MacroState
from jaxagents_environments.economy.macro.scripted import CentralBankEconomy, ScriptedEconomy, scripted_policies
from jaxagents_environments.economy.macro.taylor import TaylorRule, taylor_action, taylor_rate

__all__ = [
    "MacroEconomy", "MacroParams", "MacroState", "DEFAULTS", "ROLES", "ACTION_DIMS", "INFO_KEYS",
    "PRICE_MIN", "PRICE_MAX", "GLOBAL_FEATURES", "HOUSEHOLD_FEATURES", "FIRM_FEATURES",
    "BANK_FEATURES", "GOVERNMENT_FEATURES", "hsv_tax", "production", "ration",
    "TaylorRule", "taylor_rate", "taylor_action", "CentralBankEconomy", "ScriptedEconomy", "scripted_policies",
]

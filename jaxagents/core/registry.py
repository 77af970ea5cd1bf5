"""Environment registry: ids map to ``"module:Class"`` strings, imported lazily.

``jaxagents.core`` never imports an environment module; a module is imported the
first time one of its ids is made.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import inspect
from typing import Any

from jaxagents.core.env import Env


@dataclasses.dataclass(frozen=True)
class EnvSpec:
    """A registered environment: its id, where its class lives, the constructor defaults
    ``make`` applies before the caller's keyword arguments, and a one-line description
    (``jaxagents list``)."""

    env_id: str
    entry_point: str | type  # "package.module:ClassName", or the class itself
    kwargs: dict  # defaults applied before the user's keyword arguments
    description: str = ""


_REGISTRY: dict[str, EnvSpec] = {}


def register(env_id: str, entry_point: str, *, description: str = "", overwrite: bool = False, **kwargs: Any) -> None:
    """Register ``env_id`` -> ``entry_point`` (``"module:Class"`` or a class).

    A string is imported lazily on the first ``make``; a class (e.g. one defined in a
    notebook) is kept as is. ``kwargs`` are defaults passed to the constructor;
    ``make`` may override them.
    """
    if not isinstance(env_id, str) or not env_id:
        raise ValueError(f"env_id must be a non-empty string, got {env_id!r}")
    if isinstance(entry_point, type):
        if not issubclass(entry_point, Env):
            raise TypeError(f"entry_point class must subclass jaxagents.Env, got {entry_point.__name__}")
    elif not isinstance(entry_point, str) or entry_point.count(":") != 1:
        raise ValueError(f"entry_point must be 'module:Class' or a class, got {entry_point!r}")
    if env_id in _REGISTRY and not overwrite:
        raise ValueError(f"environment id {env_id!r} is already registered (pass overwrite=True to replace it)")
    _REGISTRY[env_id] = EnvSpec(env_id, entry_point, dict(kwargs), description)


def list_envs() -> list[str]:
    """All registered ids, sorted."""
    return sorted(_REGISTRY)


def spec(env_id: str) -> EnvSpec:
    """The ``EnvSpec`` of ``env_id``. Raises ``TypeError`` when it is not a string and
    ``ValueError``, with the closest registered ids, when it is not registered."""
    if not isinstance(env_id, str):
        raise TypeError(
            f"env_id must be a string naming a registered environment (see `jaxagents list`), got {env_id!r}"
        )
    if env_id not in _REGISTRY:
        close = difflib.get_close_matches(env_id, list(_REGISTRY), n=3, cutoff=0.4)
        hint = f" Did you mean: {', '.join(close)}?" if close else ""
        raise ValueError(
            f"unknown environment id {env_id!r}.{hint} Registered ids: {', '.join(list_envs())}"
        )
    return _REGISTRY[env_id]


def load_entry_point(entry_point: str | type) -> type:
    """The environment class of an entry point: a class is returned as is; a
    ``"module:Class"`` string (``Class`` may be dotted) is imported."""
    if isinstance(entry_point, type):
        return entry_point
    module_name, _, attr = entry_point.partition(":")
    obj = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def make(env_id: str, **kwargs: Any) -> Env:
    """Construct a registered environment.

    Unknown ids fail with the closest registered ids; unknown keyword arguments fail
    naming the argument and the ones the environment accepts; invalid values fail in
    the environment's constructor, naming the argument and the valid range.
    """
    s = spec(env_id)
    cls = load_entry_point(s.entry_point)
    sig = inspect.signature(cls.__init__)
    accepts_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values())
    allowed = [n for n, p in sig.parameters.items() if n != "self" and p.kind is not inspect.Parameter.VAR_KEYWORD]
    if not accepts_any:
        for k in kwargs:
            if k not in allowed:
                close = difflib.get_close_matches(k, allowed, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise TypeError(
                    f"{env_id}: unknown keyword argument {k!r}{hint}; allowed: {', '.join(allowed) or 'none'}"
                )
    return cls(**{**s.kwargs, **kwargs})


def _register_builtin() -> None:
    g = "jaxagents_environments.games"
    matrix = f"{g}.matrix:MatrixGame"
    for game, text in [
        ("prisoners_dilemma", "Iterated prisoner's dilemma (T=5, R=3, P=1, S=0)"),
        ("stag_hunt", "Iterated stag hunt"),
        ("chicken", "Iterated chicken (hawk-dove)"),
        ("matching_pennies", "Iterated matching pennies (zero-sum)"),
        ("coordination", "Iterated pure coordination"),
    ]:
        register(game, matrix, game=game, description=text)
    register("tic_tac_toe", f"{g}.tic_tac_toe:TicTacToe", description="Tic-tac-toe, two roles, turn-based")
    register("connect_four", f"{g}.connect_four:ConnectFour", description="Connect Four (6x7 by default), two roles, turn-based")
    register("kuhn_poker", f"{g}.kuhn:KuhnPoker", description="Kuhn poker (OpenSpiel rules), optionally several hands")
    register("leduc_poker", f"{g}.leduc:LeducPoker", description="Leduc hold'em (OpenSpiel rules)")
    register("overcooked", f"{g}.overcooked:Overcooked", description="Overcooked (Carroll et al. 2019), five classic layouts or ASCII")
    register("hanabi", f"{g}.hanabi:Hanabi", description="Hanabi (HLE rules, canonical observation), 2-5 players")
    register("negotiation", f"{g}.negotiation:Negotiation", description="SPIRAL simple negotiation, discrete offers")
    t = "jaxagents_environments.text"
    register("text_connect_four", f"{t}.connect_four:TextConnectFour", description="Connect Four as TextArena's ConnectFour-v0 text game (6x7): observations as text pieces, replies from an action-string table")
    register("text_kuhn_poker", f"{t}.kuhn:TextKuhnPoker", description="Kuhn poker as TextArena's KuhnPoker-v0 text game (3 rounds): observations as text pieces, replies from an action-string table")
    register("text_leduc_poker", f"{t}.leduc:TextLeducPoker", description="Leduc hold'em as TextArena's LeducHoldem text game (5 hands, TextArena's betting): observations as text pieces, replies from an action-string table")
    register("text_negotiation", f"{t}.negotiation:TextSimpleNegotiation", description="TextArena's SimpleNegotiation-v0 text game (five resources, free-text offers): observations as text pieces, replies from an action-string table")
    register("text_tic_tac_toe", f"{t}.tic_tac_toe:TextTicTacToe", description="Tic-tac-toe as TextArena's TicTacToe-v0 text game: observations as text pieces, replies from an action-string table")
    e = "jaxagents_environments.economy"
    register("taxation", f"{e}.taxation:Taxation", description="Stackelberg labour/tax game: N workers choose hours, a planner sets bracket rates every K worker steps (GB2/Pareto/uniform skills, flat/three/US brackets, lump-sum rebate)")
    register("macro", f"{e}.macro:MacroEconomy", description="Macro economy (EconGym roles): households, firms, bank, government, central bank; stock-flow consistent")
    register("macro_central_bank", f"{e}.macro.scripted:CentralBankEconomy", description="Macro economy, central bank only: households, firms, bank and government follow scripted rules (ScriptedRoles)")
    register("econgym", f"{e}.econgym:Society", description="EconGym's society (NeurIPS 2025, step for step against its code): Ramsey or OLG households, fiscal/pension/central-bank governments, non-profit or commercial bank, perfect/monopoly/oligopoly/monopolistic-competition firms, by config; 10^6 households")
    register("econgym_task", f"{e}.econgym.tasks:EconGymTask", description="One of EconGym's 28 research tasks (`jaxagents list-tasks econgym_task`): its economy, the roles that learn, every other role by EconGym's rules")
    register("gtb", f"{e}.gtb:GTB", description="Gather-trade-build on a map (the AI Economist's simple_wood_and_stone, step-for-step against Foundation 1.7.1): move, gather, build houses, double auction, periodic bracket tax, 2 to 10^5 citizens")
    register("market", f"{e}.market:Market", description="Gather-craft-trade market (AI Economist GTB, flattened like EconoJax): unit-order double auction per resource, periodic bracket tax")
    r = "jaxagents_environments.robots"
    register("robots_navigation", f"{r}.navigation:Navigation", description="Robotarium arena: each robot drives to its own goal (CBF safety filter)")
    register("robots_foraging", f"{r}.foraging:Foraging", description="Robotarium arena: level-based foraging on robots")
    register("robots_predator_prey", f"{r}.predator_prey:PredatorPrey", description="Robotarium arena: predators chase a heuristic prey")
    register("robots_discovery", f"{r}.discovery:Discovery", description="Robotarium arena: sensing robots reveal landmarks, tagging robots tag them")
    register("robots_material_transport", f"{r}.material_transport:MaterialTransport", description="Robotarium arena: heterogeneous robots carry material from two zones to a drop-off strip")
    register("robots_warehouse", f"{r}.warehouse:Warehouse", description="Robotarium arena: two robot classes load and unload goods by colour")
    register("robots_arctic_transport", f"{r}.arctic_transport:ArcticTransport", description="Robotarium arena: drones scout ice/water tiles, ground robots cross to the goal line")
    register("robots_continuous_rware", f"{r}.continuous_rware:ContinuousRware", description="Robotarium arena: robots fetch requested shelves, deliver them and return them")
    register("lbf", f"{r}.grid_lbf:LevelBasedForaging", description="Level-based foraging on a grid (lbforaging 2.0.0 rules; default Foraging-8x8-2p-2f-v3)")
    register("rware", f"{r}.grid_rware:RobotWarehouse", description="Robotic warehouse on a grid (rware 2.0.0 rules; default rware-tiny-2ag-v2)")
    mf = "jaxagents_environments.meanfield"
    register("mf_opinion", f"{mf}:Opinion", description="Mean-field adoption/opinion dynamics, population-wide social influence (agent view; distributional view via .dist_*)")
    register("mf_opinion_network", f"{mf}:Opinion", num_levels=5, graph="random", degree=8, description="Mean-field opinion dynamics on a fixed-degree random graph, 5 opinion levels")
    register("mf_epidemic", f"{mf}:Epidemic", description="SIR epidemic where each agent chooses its contact level (mean-field game; equilibrium vs social optimum)")
    register("mf_crowd", f"{mf}:CrowdModelling", description="OpenSpiel's 1-D crowd-modelling mean-field game (ring of 10 cells)")
    register("mf_crowd_four_rooms", f"{mf}:CrowdModelling", dims=2, layout="four_rooms", description="OpenSpiel's 2-D crowd-modelling mean-field game, four-rooms layout")


_register_builtin()

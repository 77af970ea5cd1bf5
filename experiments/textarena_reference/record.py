"""Record random games of TextArena 0.7.4 as reference data for the text games' parity
tests (``tests/environments/text``).

What: for each game, ``--games`` games played by two random players who choose their
replies from the game's action-string table (``environments/text/actions.py``, loaded
by path: the same strings the jax environment's ``Discrete`` actions stand for). Per
step it stores the player to act, the exact observation string TextArena gives that
player, which strings of the table TextArena would accept as a valid move there, the
string played and whether the game ended; per game the final rewards and the hidden
randomness the jax environment needs to replay the game (the cards dealt in each
round, which TextArena draws with Python's ``random``).

How the legal strings are found: every string of the table is tried on a deep copy of
the unwrapped environment (after the bracket rule of ``ActionFormattingWrapper``), with
Python's ``random`` state saved and restored around the trial; a string is legal when
TextArena does not count it as an invalid move. TextArena is the oracle; this script
re-implements none of its rules.

Games: ``KuhnPoker-v0``, ``TicTacToe-v0`` and ``ConnectFour-v0`` through ``textarena.make`` (their default
wrappers: ``LLMObservationWrapper`` and ``ActionFormattingWrapper``). ``LeducHoldem-v0``'s
registration is commented out in 0.7.4: its class is constructed directly, with the
commented-out line's arguments (``max_rounds=5``) and the same two wrappers; a fifth as
many games again with ``starting_bank=6`` (``leduc_poker_bank6``), where players go bust.

``SimpleNegotiation-v0`` through ``textarena.make`` (its default wrappers:
``GameMessagesObservationWrapper``, which shows neither the replies nor the warnings,
and ``ActionFormattingWrapper``); its hidden randomness is each player's starting
quantities and values. Its file also holds ``parses``: TextArena's reading (its
patterns and ``_parse_offer``) of every table string and of 3,000 random offer-like
replies, ``[reply, [accepts, status, offered, requested]]``.

Hash seed: TextArena's Leduc prints its legal moves by iterating Python sets, whose
order depends on the process's string-hash seed; the script re-runs itself with
``PYTHONHASHSEED=0`` (and stores the orders it saw), so a recording is reproducible.

Scripted games: ``SCRIPTED`` lists games played from fixed table strings after the
random ones (Connect Four: two draws, which random play almost never reaches).

Players: with probability ``--p-legal`` a uniformly random legal string, otherwise a
uniformly random string TextArena would reject; choices come from their own
``random.Random`` so they never touch TextArena's stream. Game ``g`` of a run is reset
with seed ``--seed + g``.

Stored (one gzip-compressed JSON file per game, ``<out>/<game>.json.gz``)::

    textarena_version, env_id, env_kwargs, seed, p_legal, actions (the table),
    games: [{seed, deals: [[card of player 0, card of player 1] per round] (poker only),
             steps: [[player, obs_delta, legal_bits, action, done], ...],
             rewards: [reward of player 0, reward of player 1]}],
    hash_seed, set_orders (the orders of Leduc's legal-move sets in this process)

``obs_delta`` is the part of the observation that is new since the same player's
previous observation (TextArena's observations only grow, which this script checks):
the full string is the concatenation of that player's deltas. ``legal_bits`` is a
string of 0/1 over the table.

Run in TextArena's environment (Python 3.11, textarena==0.7.4), from the repository
root::

    /path/to/textarena-venv/bin/python experiments/textarena_reference/record.py \\
        --out tests/data/textarena --games 1000 --seed 0
"""

from __future__ import annotations

import argparse
import copy
import gzip
import importlib.util
import json
import os
import pathlib
import random
import sys
import time

GAMES = {
    "kuhn_poker": "KuhnPoker-v0",
    "tic_tac_toe": "TicTacToe-v0",
    "leduc_poker": "LeducHoldem-v0",
    "leduc_poker_bank6": "LeducHoldem-v0",  # starting_bank=6: players go bust
    "simple_negotiation": "SimpleNegotiation-v0",
    "connect_four": "ConnectFour-v0",
}
RESOURCES = ("Wheat", "Wood", "Sheep", "Brick", "Ore")
# keyword arguments beyond the id's, and the action table when not the game's own
VARIANTS = {"leduc_poker_bank6": ({"starting_bank": 6}, "leduc_poker")}
# games played from a fixed list of table strings after the random ones (seeds
# --seed + --games onwards): random play almost never fills a Connect Four board
# (about 1 game in 400 with legal moves only), so two games end in a draw by script,
# the second after an invalid reply just before the last disc
DRAW_COLUMNS = (3, 6, 1, 3, 1, 3, 6, 4, 5, 5, 3, 4, 3, 1, 1, 0, 4, 3, 0, 4, 6, 6, 2, 6, 1, 0, 5, 5, 2, 4, 5, 1, 5, 6, 0,
                0, 2, 2, 4, 2, 2, 0)
_DRAW = [f"[col {c}]" for c in DRAW_COLUMNS]
SCRIPTED = {"connect_four": (_DRAW, _DRAW[:-1] + ["hello", _DRAW[-1]])}
# LeducHoldem's registrations are commented out in textarena 0.7.4 (its env file is
# there): the commented-out LeducHoldem-v0 line's class, keyword arguments and wrappers
UNREGISTERED = {"LeducHoldem-v0": ("textarena.envs.LeducHoldem.env", "LeducHoldemEnv", {"max_rounds": 5})}


def load_tables() -> dict:
    """The action-string tables, from ``environments/text/actions.py`` (standard
    library only, so it loads without jax or jaxagents)."""
    path = pathlib.Path(__file__).resolve().parents[2] / "environments" / "text" / "actions.py"
    spec = importlib.util.spec_from_file_location("text_actions", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.TABLES


def make_env(game: str):
    """The wrapped TextArena environment of ``game``: ``textarena.make``, or for an id
    whose registration is commented out, its class with the same keyword arguments
    and the default wrappers (``LLMObservationWrapper``, ``ActionFormattingWrapper``)."""
    import importlib

    import textarena as ta

    env_id = GAMES[game]
    extra = VARIANTS.get(game, ({}, None))[0]
    if env_id not in UNREGISTERED:
        return ta.make(env_id, **extra)
    module, cls, kwargs = UNREGISTERED[env_id]
    env = getattr(importlib.import_module(module), cls)(**{**kwargs, **extra})
    for wrapper in (ta.wrappers.LLMObservationWrapper, ta.wrappers.ActionFormattingWrapper):
        env = wrapper(env)
    return env


def unwrapped(env):
    import textarena as ta

    while isinstance(env, ta.Wrapper):
        env = env.env
    return env


def is_accepted(env, action: str) -> bool:
    """Whether TextArena would take ``action`` from the player to act as a valid move:
    played on a deep copy of the unwrapped game; Python's ``random`` is restored."""
    saved = random.getstate()
    try:
        inner = copy.deepcopy(unwrapped(env))
        pid = inner.state.current_player_id
        errors = inner.state.error_count
        inner.step(env.action(action))  # env is ActionFormattingWrapper: its bracket rule
        state = inner.state
        return not (state.game_info[pid]["invalid_move"] or state.error_count > errors)
    finally:
        random.setstate(saved)


def hidden_inventory(env):
    """SimpleNegotiation's random start: ``[[quantity per resource] per player],
    [[value per resource] per player]``, or None."""
    gs = unwrapped(env).state.game_state
    if "player_resources" not in gs:
        return None
    return ([[gs["player_resources"][p][r] for r in RESOURCES] for p in range(2)],
            [[gs["player_values"][p][r] for r in RESOURCES] for p in range(2)])


def negotiation_parse(env, reply: str):
    """TextArena's own reading of a reply in SimpleNegotiation (its patterns and its
    ``_parse_offer``): ``[accepts, offer status (0 none, 1 bad format, 2 offer),
    [[resource, quantity], ...] offered, ... requested]``, items in TextArena's order."""
    inner = unwrapped(env)
    text = env.action(reply)
    accepts = inner.accept_pattern.search(text) is not None
    m = inner.offer_pattern.search(text)
    if m is None:
        return [accepts, 0, [], []]
    parsed = inner._parse_offer(m.group(1).strip())
    if not parsed:
        return [accepts, 1, [], []]
    return [accepts, 2, [[k, v] for k, v in parsed["offered_resources"].items()],
            [[k, v] for k, v in parsed["requested_resources"].items()]]


def probe_replies(n: int, seed: int) -> list[str]:
    """Random offer-like replies for checking a parser against TextArena's: ``n``
    structured offers with random perturbations, and ``n // 2`` random fragments."""
    rng = random.Random(seed)
    words = ["Wheat", "wood", "WOODS", "Sheeps", "sheep", "Brick", "ore", "wHeAt", "Ore", "Wood", "BRICK"] * 3 + [
        "Gold", "Ores", "Br1ck", "bricks", "Wheat.", "she\u017fp", "WOO\u212aD", "\u017fheep", "bric\u212a"]
    qty = ["1", "2", "3", "05", "10", "25", "7", "4"] * 3 + ["0", "999", "00", "\u0664", "1234567890123", "007"]
    ws = [" "] * 8 + ["  ", "", "\n", "\t", "\u00a0", " \u3000"]

    def side():
        items = [f"{rng.choice(qty)}{rng.choice(ws)}{rng.choice(words)}" for _ in range(rng.choice([0, 1, 1, 1, 2, 2, 3]))]
        return rng.choice([", ", " and ", ",", " ", "; "]).join(items)

    out = []
    for _ in range(n):
        text = (rng.choice(["[Offer:", "[offer", "[OFFER: I give", "[Offer: I offer", "[Offer :", "[Offer:I give", "Offer:", ""])
                + rng.choice(ws) + side() + rng.choice(["->", " -> ", " -> ", " -> ", "->->", " - > ", "", " ->  "]) + side()
                + rng.choice(["]", ".]", " ...]", "!]", "", " ] [Accept]", "?.]", " .]", "[x]"]))
        if rng.random() < 0.15:
            k = rng.randint(0, len(text))
            text = text[:k] + rng.choice(["[", "]", "->", "[Accept]", "x", " 3 Ore", "I give "]) + text[k:]
        out.append(rng.choice(["", "I propose ", "[Accept] "]) + text)
    bits = ["[Offer:", "[offer", "->", " -> ", ",", ".", "]", "[", "[Accept]", " ", "\n", "and", "I give", "7", "12"]
    for _ in range(n // 2):
        parts = [rng.choice(bits) if rng.random() < 0.6 else f"{rng.choice(qty)} {rng.choice(words)}"
                 for _ in range(rng.randint(1, 10))]
        out.append("".join(parts))
    return out


def hidden_deal(env):
    """``(round, cards)`` of the round being played (poker games), or None: Kuhn's
    ``[card of player 0, card of player 1]``, Leduc's ``[.., .., board card]`` (ranks)."""
    gs = unwrapped(env).state.game_state
    if "player_cards" not in gs or not gs["player_cards"]:
        return None
    cards = [gs["player_cards"][0], gs["player_cards"][1]]
    if "board_card" in gs:
        return gs["hands_dealt"], cards + [gs["board_card"]]
    return gs["current_round"], cards


def play(game: str, table: tuple, seed: int, p_legal: float, script=None) -> dict:
    """One recorded game: random replies, or the table strings ``script`` in order."""
    env = make_env(game)
    env.reset(num_players=2, seed=seed)
    start = hidden_inventory(env)
    chooser = random.Random(10_000_019 * seed + 7)
    max_rounds = getattr(unwrapped(env), "max_rounds", None)
    deals = {}

    def note_deal():
        d = hidden_deal(env)
        if d is not None and d[0] <= max_rounds:
            deals.setdefault(d[0], d[1])

    note_deal()
    seen = {0: "", 1: ""}
    steps = []
    done = False
    while not done:
        pid, obs = env.get_observation()
        if not obs.startswith(seen[pid]):
            raise AssertionError(f"seed {seed}: player {pid}'s observation does not extend the previous one")
        delta, seen[pid] = obs[len(seen[pid]):], obs
        legal = [is_accepted(env, s) for s in table]
        good = [a for a, ok in enumerate(legal) if ok]
        bad = [a for a, ok in enumerate(legal) if not ok]
        pool = good if (good and (not bad or chooser.random() < p_legal)) else bad
        action = chooser.choice(pool) if script is None else table.index(script[len(steps)])
        done, _ = env.step(table[action])
        note_deal()
        steps.append([pid, delta, "".join("1" if ok else "0" for ok in legal), action, bool(done)])
    rewards, _ = env.close()
    out = {"seed": seed, "steps": steps, "rewards": [rewards[0], rewards[1]]}
    if start is not None:
        out["resources"], out["values"] = start
    if max_rounds is not None and deals:
        width = len(next(iter(deals.values())))
        out["deals"] = [deals.get(r, [0, 1, 2][:width]) for r in range(1, max_rounds + 1)]  # unplayed rounds: any deal
    return out


def record(game: str, games: int, seed: int, p_legal: float) -> dict:
    import textarena

    table = load_tables()[VARIANTS.get(game, (None, game))[1]]
    extra = {}
    if game == "simple_negotiation":
        env = make_env(game)
        env.reset(num_players=2, seed=0)
        probes = list(table) + probe_replies(2000, seed)
        extra["parses"] = [[p, negotiation_parse(env, p)] for p in probes]
    return {
        "textarena_version": getattr(textarena, "__version__", None) or _dist_version("textarena"),
        "env_id": GAMES[game],
        "env_kwargs": VARIANTS.get(game, ({}, None))[0],
        "seed": seed,
        "p_legal": p_legal,
        "actions": list(table),
        "games": [play(game, table, seed + g, p_legal) for g in range(games)]
                 + [play(game, table, seed + games + k, p_legal, script) for k, script in enumerate(SCRIPTED.get(game, ()))],
        # TextArena's Leduc lists its legal moves from Python sets, whose order depends
        # on the hash seed (this script runs with PYTHONHASHSEED=0)
        "hash_seed": os.environ.get("PYTHONHASHSEED"),
        "set_orders": [list(x) for x in ({"check", "bet"}, {"call", "raise", "fold"}, {"call", "fold"})],
        **extra,
    }


def _dist_version(name: str) -> str:
    from importlib.metadata import version

    return version(name)


def main() -> None:
    if os.environ.get("PYTHONHASHSEED") != "0":
        # string hashes decide a set's order, which TextArena's Leduc prints: fix them
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, "PYTHONHASHSEED": "0"})
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="tests/data/textarena", help="output folder")
    parser.add_argument("--games", type=int, default=1000, help="games per game type (the variants: a fifth)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the first game")
    parser.add_argument("--p-legal", type=float, default=0.85, help="probability of a legal string per step")
    parser.add_argument("--only", nargs="*", choices=sorted(GAMES), help="record these games only")
    args = parser.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for game in args.only or GAMES:
        t0 = time.perf_counter()
        data = record(game, args.games // 5 if game in VARIANTS else args.games, args.seed, args.p_legal)
        path = out / f"{game}.json.gz"
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        with gzip.GzipFile(path, "wb", compresslevel=9, mtime=0) as f:  # mtime 0: the same bytes every run
            f.write(text)
        n = sum(len(g["steps"]) for g in data["games"])
        print(f"{game}: {len(data['games'])} games, {n} steps, {path.stat().st_size / 1e6:.2f} MB, "
              f"{time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()

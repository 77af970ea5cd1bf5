"""Grouping JaxMARL agents into jaxagents roles (for ``from_jaxmarl``).

An explicit ``roles={role: [agent, ...]}`` wins; else JaxMARL's ``agent_classes`` when it
partitions the agents into groups of identical spaces; else agents with identical
(observation, action) spaces form a role, in the agents' order, named after the agents'
names without their index (see ``_role_prefix``).
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Sequence


def _role_prefix(names: Sequence[str]) -> str:
    """A role name for a group of agents: their name without the index
    (``["agent_0", "agent_1"] -> "agent"``); for mixed names the common prefix up to
    a separator (``["red_tank_0", "red_scout_0"] -> "red"``), else up to three
    distinct names joined (``["ally_0", "enemy_0"] -> "ally_enemy"``), else ``"agent"``."""
    stems = [str(n).rstrip("0123456789").rstrip("_-. :/") for n in names]
    if len(set(stems)) == 1 and stems[0]:
        return stems[0]
    if not any(stems):  # names that are bare indices (STORM's 0, 1)
        return "agent"
    prefix = os.path.commonprefix(stems)
    cut = max(prefix.rfind(c) for c in "_-. :/")
    if cut > 0:
        return prefix[:cut]
    distinct = [s for i, s in enumerate(stems) if s and s not in stems[:i]]
    # e.g. SMAX allies and enemies share spaces: "ally_enemy" says who is in the role
    return "_".join(distinct) if 1 < len(distinct) <= 3 else "agent"


def _agent_classes(env) -> Mapping | None:
    # The base class raises NotImplementedError from a property; MPE defines a method.
    try:
        classes = env.agent_classes
        if callable(classes):
            classes = classes()
    except Exception:
        return None
    return classes if isinstance(classes, Mapping) else None


def _check_partition(groups: Mapping, agents: Sequence[str]) -> str | None:
    """Why ``groups`` is not a partition of ``agents`` into non-empty lists, or None."""
    named = []
    for name, members in groups.items():
        if not isinstance(name, str) or isinstance(members, str) or not isinstance(members, Sequence) or not members:
            return f"role {name!r} must be a string naming a non-empty list of agents, got {members!r}"
        named.extend(members)
    unknown = [a for a in named if a not in agents]
    missing = [a for a in agents if a not in named]
    dupes = sorted({a for a in named if named.count(a) > 1})
    if unknown or missing or dupes:
        return (
            (f"unknown agents {unknown}; " if unknown else "")
            + (f"agents in no role {missing}; " if missing else "")
            + (f"agents in several roles {dupes}; " if dupes else "")
            + f"the env's agents are {list(agents)}"
        )
    return None


def _group_roles(agents, spaces, roles, classes) -> dict[str, list[str]]:
    """``{role: [agent, ...]}`` from an explicit ``roles``, consistent ``agent_classes``,
    or identical spaces (in that order of preference)."""

    def homogeneous(members):
        return all(spaces[m] == spaces[members[0]] for m in members)

    if roles is not None:
        if not isinstance(roles, Mapping):
            raise TypeError(f"from_jaxmarl: roles must be a dict {{role: [agent names]}}, got {type(roles).__name__}")
        why = _check_partition(roles, agents)
        if why:
            raise ValueError(f"from_jaxmarl: roles must assign every agent to exactly one role: {why}")
        for name, members in roles.items():
            for m in members:
                if spaces[m] != spaces[members[0]]:
                    raise ValueError(
                        f"from_jaxmarl: role {name!r} mixes agents with different spaces: {members[0]!r} has "
                        f"(obs {spaces[members[0]][0]}, act {spaces[members[0]][1]}), {m!r} has "
                        f"(obs {spaces[m][0]}, act {spaces[m][1]})"
                    )
        return {name: list(members) for name, members in roles.items()}

    order = {a: i for i, a in enumerate(agents)}
    if classes is not None and _check_partition(classes, agents) is None:
        groups = [sorted(m, key=order.__getitem__) for m in classes.values()]
        if all(homogeneous(g) for g in groups):
            named = sorted(zip(classes.keys(), groups), key=lambda kv: order[kv[1][0]])
            return {str(k): g for k, g in named}

    by_space: dict[Any, list[str]] = {}
    for a in agents:  # dicts keep first-appearance order: roles follow the agents' order
        by_space.setdefault(spaces[a], []).append(a)
    groups = list(by_space.values())
    names = [_role_prefix(g) for g in groups]
    out, taken = {}, set()
    for name, g in zip(names, groups):
        if names.count(name) > 1:
            k = 0
            while f"{name}_{k}" in taken or f"{name}_{k}" in names:
                k += 1
            name = f"{name}_{k}"
        taken.add(name)
        out[name] = g
    return out

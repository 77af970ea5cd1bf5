"""The bundled baseline configs (``baselines/configs/*.yaml``, installed as package
data of ``jaxagents_baselines``): ``jaxagents train NAME`` runs one by name.

``fcp.py`` is the one script here: fictitious co-play's two stages (partners, then the
agent), each a ``jaxagents train`` run, into one experiment directory.
"""

from __future__ import annotations

import os

CONFIG_DIR = os.path.join(os.path.dirname(__file__), "configs")


def configs(learner: str | None = None) -> list[str]:
    """Names of the bundled configs, sorted (only ``learner``'s when given: names start
    with the learner, e.g. ``ippo_overcooked_cramped_room``)."""
    names = sorted(f[:-5] for f in os.listdir(CONFIG_DIR) if f.endswith(".yaml"))
    return [n for n in names if learner is None or n.startswith(learner + "_")]


def resolve(config: str) -> str:
    """A path to an existing file, or the name of a bundled config (with or without
    ``.yaml``) -> a path. Raises ``ValueError`` (one line, listing the bundled names)
    for anything else."""
    if os.path.isfile(config):
        return config
    path = os.path.join(CONFIG_DIR, config if config.endswith(".yaml") else config + ".yaml")
    if os.sep not in config and os.path.isfile(path):
        return path
    raise ValueError(f"CONFIG {config!r} is neither a file nor a bundled config; bundled: {', '.join(configs())}")

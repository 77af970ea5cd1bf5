"""The bundled baseline configs (``baselines/configs/*.yaml``, installed as package
data of ``jaxagents_baselines``): ``jaxagents train NAME`` runs one by name, and
``jaxagents train ENV_ID`` runs the config that trains a registered environment
(``for_env``: the one bundled config whose ``env.id`` is ENV_ID, or, where several
are, the one ``ENV_DEFAULTS`` names).

``fcp.py`` is the one script here: fictitious co-play's two stages (partners, then the
agent), each a ``jaxagents train`` run, into one experiment directory.
"""

from __future__ import annotations

import functools
import os

CONFIG_DIR = os.path.join(os.path.dirname(__file__), "configs")

# environments that several bundled configs train: the one `jaxagents train ENV_ID` runs
ENV_DEFAULTS = {
    "leduc_poker": "selfplay_leduc",
    "overcooked": "ippo_overcooked_cramped_room",
    "text_kuhn_poker": "lm_selfplay_kuhn",
    **{f"robots_{name}": f"ippo_robots_{name}" for name in (
        "arctic_transport", "continuous_rware", "discovery", "foraging", "material_transport", "navigation",
        "predator_prey", "warehouse")},
}
# ids whose policies are language models: trained by the LM configs, not by the learners above
TEXT_PREFIX = "text_"


def configs(learner: str | None = None) -> list[str]:
    """Names of the bundled configs, sorted (only ``learner``'s when given: names start
    with the learner, e.g. ``ippo_overcooked_cramped_room``)."""
    names = sorted(f[:-5] for f in os.listdir(CONFIG_DIR) if f.endswith(".yaml"))
    return [n for n in names if learner is None or n.startswith(learner + "_")]


@functools.lru_cache(maxsize=1)
def env_ids() -> dict[str, list[str]]:
    """``{env id: [bundled config names that train it]}`` (the ``env.id`` of each
    bundled config; ``jaxmarl:`` ids included), names sorted; read once per process
    (the bundled files do not change while it runs): do not modify the result."""
    import yaml

    out: dict[str, list[str]] = {}
    for name in configs():
        with open(os.path.join(CONFIG_DIR, name + ".yaml")) as f:
            env = (yaml.safe_load(f) or {}).get("env") or {}
        if isinstance(env, dict) and env.get("id"):
            out.setdefault(env["id"], []).append(name)
    return out


def for_env(env_id: str) -> str:
    """The name of the bundled config that ``jaxagents train ENV_ID`` runs: the one
    config for ``env_id``, or ``ENV_DEFAULTS[env_id]`` where there are several.
    Raises ``ValueError`` (one line) when no bundled config trains ``env_id``."""
    names = env_ids().get(env_id, [])
    if env_id in ENV_DEFAULTS and ENV_DEFAULTS[env_id] in names:
        return ENV_DEFAULTS[env_id]
    if len(names) == 1:
        return names[0]
    if names:  # several and no default: a bundled config was added without choosing
        raise ValueError(f"{env_id}: several bundled configs train it ({', '.join(names)}); name one of them")
    if env_id.startswith(TEXT_PREFIX):
        from jaxagents.core import registry

        twin = env_id[len(TEXT_PREFIX):]
        also = (f"; `jaxagents train {twin}` trains the same game on vector observations"
                if twin in registry.list_envs() else "")
        raise ValueError(f"{env_id} is a text game whose players are language models: no bundled config trains "
                         f"it yet (docs/lm.md){also}")
    raise ValueError(f"{env_id}: no bundled config trains it; write one (learner: ..., env: {{id: {env_id}}})")


def resolve(config: str) -> str:
    """A path to an existing file, the name of a bundled config (with or without
    ``.yaml``) or a registered environment id (its config: ``for_env``) -> a path.
    Raises ``ValueError`` (one line, listing the bundled names) for anything else."""
    if os.path.isfile(config):
        return config
    path = os.path.join(CONFIG_DIR, config if config.endswith(".yaml") else config + ".yaml")
    if os.sep not in config and os.path.isfile(path):
        return path
    from jaxagents.core import registry

    if config in registry.list_envs():
        return os.path.join(CONFIG_DIR, for_env(config) + ".yaml")
    raise ValueError(f"CONFIG {config!r} is neither a file, a bundled config nor a registered environment id "
                     f"(`jaxagents list`); bundled: {', '.join(configs())}")

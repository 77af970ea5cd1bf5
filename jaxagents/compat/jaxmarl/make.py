"""Resolving a JaxMARL id into a JaxMARL environment: the one place that does it, for
the runner's ``env: {id: "jaxmarl:NAME", kwargs: ...}`` and for the bench
(``"jaxmarl:NAME"``, ``benchmark_jaxmarl``, ``--compare-jaxmarl``).

``make_jaxmarl(id, **kwargs)`` accepts the id with or without the ``"jaxmarl:"`` prefix,
suggests close matches for an unknown id, and accepts names where JaxMARL wants
objects: an Overcooked layout name (``layout="cramped_room"``) and a SMAX map name
(``scenario="3m"``). ``import_jaxmarl`` imports jaxmarl with its import-time prints
silenced and a clear error when the optional dependency is missing.
"""

from __future__ import annotations

import contextlib
import difflib
import importlib
import io
import os
import sys

__all__ = ["JAXMARL_PREFIX", "import_jaxmarl", "make_jaxmarl"]

JAXMARL_PREFIX = "jaxmarl:"


@contextlib.contextmanager
def _quiet_stdout():
    """Silence stdout, at the file-descriptor level too.

    jaxmarl prints two lines about submoduled environments on import; keep our stdout
    (tables a user may pipe) clean. ``redirect_stdout`` alone is not enough: its mabrax
    module resets ``sys.stdout`` to ``sys.__stdout__`` while importing.
    """
    for s in (sys.stdout, sys.__stdout__):
        if s is not None:
            s.flush()
    try:
        fd = sys.__stdout__.fileno() if sys.__stdout__ is not None else None
        saved = os.dup(fd) if fd is not None else None
    except (OSError, ValueError, io.UnsupportedOperation):
        fd = saved = None
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        if saved is not None:
            os.dup2(devnull, fd)
        with contextlib.redirect_stdout(io.StringIO()):
            yield
    finally:
        if saved is not None:
            sys.__stdout__.flush()
            os.dup2(saved, fd)
            os.close(saved)
        os.close(devnull)


def import_jaxmarl():
    """The ``jaxmarl`` module, imported quietly.

    Raises:
        ImportError: jaxmarl is not installed (names the ``jaxagents[jaxmarl]`` extra).
    """
    try:
        with _quiet_stdout():
            return importlib.import_module("jaxmarl")
    except ImportError as e:
        raise ImportError(
            "JaxMARL environments need the optional 'jaxmarl' extra: pip install 'jaxagents[jaxmarl]' "
            f"({e})"
        ) from e


def _close(name: str, choices) -> str:
    close = difflib.get_close_matches(name, list(choices), n=3, cutoff=0.4)
    return f" Did you mean: {', '.join(close)}?" if close else ""


def make_jaxmarl(jaxmarl_id: str, **kwargs):
    """The JaxMARL environment ``jaxmarl.make(jaxmarl_id, **kwargs)``, names resolved.

    Args:
        jaxmarl_id: a ``jaxmarl.make`` id (``"MPE_simple_spread_v3"``, ``"overcooked"``,
            ``"HeuristicEnemySMAX"``, ...), with or without the ``"jaxmarl:"`` prefix.
        **kwargs: ``jaxmarl.make`` arguments. ``layout`` may name one of JaxMARL's
            ``overcooked_layouts`` for ``"overcooked"`` (whose v1 env wants the layout
            itself); ``scenario`` may be a SMAX map name (``"3m"``, via
            ``map_name_to_scenario``).

    Returns:
        the JaxMARL ``MultiAgentEnv`` (wrap it with ``from_jaxmarl`` for jaxagents).

    Raises:
        ImportError: jaxmarl is not installed.
        ValueError: unknown id, layout name or map name (with close matches).
    """
    if jaxmarl_id.startswith(JAXMARL_PREFIX):
        jaxmarl_id = jaxmarl_id[len(JAXMARL_PREFIX):]
    jaxmarl = import_jaxmarl()
    if jaxmarl_id not in jaxmarl.registered_envs:
        raise ValueError(f"unknown JaxMARL environment id {jaxmarl_id!r}.{_close(jaxmarl_id, jaxmarl.registered_envs)}")
    if jaxmarl_id == "overcooked" and isinstance(kwargs.get("layout"), str):
        from jaxmarl.environments.overcooked import overcooked_layouts

        name = kwargs["layout"]
        if name not in overcooked_layouts:
            raise ValueError(f"layout must be one of {', '.join(sorted(overcooked_layouts))}, got {name!r}")
        kwargs["layout"] = overcooked_layouts[name]
    if isinstance(kwargs.get("scenario"), str):  # SMAX maps by name, e.g. "3m"
        from jaxmarl.environments.smax import map_name_to_scenario, smax_env

        names = getattr(smax_env, "MAP_NAME_TO_SCENARIO", {})
        try:
            kwargs["scenario"] = map_name_to_scenario(kwargs["scenario"])
        except KeyError:
            raise ValueError(
                f"unknown SMAX map name {kwargs['scenario']!r}.{_close(kwargs['scenario'], names)} "
                f"Known: {', '.join(names)}"
            ) from None
    with _quiet_stdout():
        return jaxmarl.make(jaxmarl_id, **kwargs)

"""Adapters to and from other JAX multi-agent ecosystems.

``from_jaxmarl(env)`` wraps a JaxMARL ``MultiAgentEnv`` as a jaxagents ``Env``;
``to_jaxmarl(env)`` exposes a jaxagents ``Env`` with JaxMARL's per-agent dict API.
Importing this package does not import jaxmarl (it is an optional dependency).
"""

from jaxagents.compat.jaxmarl import (
    JaxMARLAdapter,
    JaxMARLState,
    JaxMARLViewState,
    from_jaxmarl,
    space_from_jaxmarl,
    space_to_jaxmarl,
    to_jaxmarl,
)

__all__ = [
    "from_jaxmarl",
    "to_jaxmarl",
    "JaxMARLAdapter",
    "JaxMARLState",
    "JaxMARLViewState",
    "space_from_jaxmarl",
    "space_to_jaxmarl",
]

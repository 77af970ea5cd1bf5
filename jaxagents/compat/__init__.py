"""Adapters to and from other JAX multi-agent ecosystems.

``from_jaxmarl(env)`` wraps a JaxMARL ``MultiAgentEnv`` as a jaxagents ``Env``;
``to_jaxmarl(env)`` exposes a jaxagents ``Env`` with JaxMARL's per-agent dict API;
``make_jaxmarl("jaxmarl:ID", **kwargs)`` builds the JaxMARL env an id names (layout and
map names resolved). Importing this package does not import jaxmarl (it is an optional
dependency). The code lives in ``jaxagents.compat.jaxmarl``.
"""

from jaxagents.compat.jaxmarl import (
    JaxMARLAdapter,
    JaxMARLState,
    JaxMARLViewState,
    from_jaxmarl,
    make_jaxmarl,
    space_from_jaxmarl,
    space_to_jaxmarl,
    to_jaxmarl,
)

__all__ = [
    "from_jaxmarl",
    "to_jaxmarl",
    "make_jaxmarl",
    "JaxMARLAdapter",
    "JaxMARLState",
    "JaxMARLViewState",
    "space_from_jaxmarl",
    "space_to_jaxmarl",
]

"""Adapters between JaxMARL and jaxagents, one module per direction.

* ``adapter``: ``from_jaxmarl(env)`` makes any JaxMARL ``MultiAgentEnv`` a jaxagents
  ``Env`` (``JaxMARLAdapter``); ``roles`` groups its agents into roles.
* ``view``: ``to_jaxmarl(env)`` exposes a jaxagents ``Env`` through JaxMARL's
  per-agent dict API (``JaxMARLView``).
* ``convert``: what both share (and the bench's JaxMARL backend reuses): space
  conversion in both directions and legal-action masks.
* ``make``: ``make_jaxmarl("jaxmarl:ID", **kwargs)`` resolves a JaxMARL id (Overcooked
  layout and SMAX map names included) for the runner and the bench.

``jaxmarl`` stays optional: it is imported only inside functions.
"""

from jaxagents.compat.jaxmarl.adapter import JaxMARLAdapter, JaxMARLState, from_jaxmarl
from jaxagents.compat.jaxmarl.convert import mask_function, role_masks, space_from_jaxmarl, space_to_jaxmarl
from jaxagents.compat.jaxmarl.make import JAXMARL_PREFIX, import_jaxmarl, make_jaxmarl
from jaxagents.compat.jaxmarl.view import JaxMARLViewState, to_jaxmarl

__all__ = [
    "from_jaxmarl",
    "to_jaxmarl",
    "make_jaxmarl",
    "import_jaxmarl",
    "JAXMARL_PREFIX",
    "JaxMARLAdapter",
    "JaxMARLState",
    "JaxMARLViewState",
    "space_from_jaxmarl",
    "space_to_jaxmarl",
    "mask_function",
    "role_masks",
]


def __getattr__(name):
    # JaxMARLView is built once jaxmarl's presence is known (see view._view_class).
    if name == "JaxMARLView":
        from jaxagents.compat.jaxmarl import view

        return view.JaxMARLView
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

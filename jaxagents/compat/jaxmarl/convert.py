"""What both JaxMARL adapters (and the bench's JaxMARL backend) share: jaxmarl's
optional imports, space conversion in both directions, and legal-action masks.

* ``space_from_jaxmarl`` / ``space_to_jaxmarl``: JaxMARL ``Discrete``, ``MultiDiscrete``
  and ``Box`` <-> ``jaxagents.core.spaces`` (matched by class name: no jaxmarl import).
* ``mask_function(env, state, num_actions)``: the env's legal-action function
  (Hanabi's ``get_legal_moves``, else ``get_avail_actions``) when it works on ``state``
  and fits the agents' action counts, else ``None`` (every action legal);
  ``role_masks`` stacks its per-agent masks into per-role arrays.
"""

from __future__ import annotations

import warnings
from typing import Callable, Mapping

import jax
import jax.numpy as jnp
import numpy as np

from jaxagents.core.spaces import Box, Discrete, MultiDiscrete, Space
from jaxagents.core.types import Role

__all__ = ["space_from_jaxmarl", "space_to_jaxmarl", "mask_function", "role_masks"]


# --------------------------------------------------------------------------- imports
def _jaxmarl_spaces():
    """``jaxmarl.environments.spaces`` or None when jaxmarl is not installed."""
    try:
        from jaxmarl.environments import spaces
    except ImportError:
        return None
    return spaces


def _jaxmarl_base():
    """``MultiAgentEnv`` and the wrapper base ``JaxMARLWrapper`` (None when missing)."""
    try:
        from jaxmarl.environments.multi_agent_env import MultiAgentEnv
    except ImportError:
        return None, None
    try:
        from jaxmarl.wrappers.baselines import JaxMARLWrapper
    except ImportError:  # older/newer layouts: the check below is a nicety only
        JaxMARLWrapper = None
    return MultiAgentEnv, JaxMARLWrapper


# --------------------------------------------------------------------------- spaces
def _as_shape(shape) -> tuple[int, ...]:
    # JaxMARL's Hanabi declares Box(shape=658): an int where a tuple is meant.
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(s) for s in shape)


def space_from_jaxmarl(space, actual: jax.ShapeDtypeStruct | None = None, what: str = "space") -> Space:
    """A jaxagents space equal to JaxMARL's ``space``.

    Args:
        space: a ``jaxmarl.environments.spaces`` ``Discrete``, ``MultiDiscrete`` or ``Box``
            (matched by class name, so no jaxmarl import is needed).
        actual: shape and dtype of the values the env really produces; when given
            they win over the declared ones (the declared bounds are kept where they
            broadcast to ``actual.shape``, else the bounds are infinite).
        what: used in error messages (e.g. ``"observation space of agent_0"``).

    Raises:
        TypeError: for spaces with no jaxagents counterpart (``Dict``, ``Tuple``).
    """
    kind = type(space).__name__
    if kind == "Discrete":
        n = int(space.n)
        dtype = getattr(space, "dtype", jnp.int32)
        if actual is not None:
            if actual.shape == () and jnp.issubdtype(actual.dtype, jnp.integer):
                return Discrete(n, actual.dtype)
            return Box(0, n - 1, actual.shape, actual.dtype)
        return Discrete(n, dtype)
    if kind == "MultiDiscrete":
        nvec = np.asarray(space.num_categories).reshape(-1).tolist()
        if actual is not None and (actual.shape != (len(nvec),) or not jnp.issubdtype(actual.dtype, jnp.integer)):
            return Box(-np.inf, np.inf, actual.shape, actual.dtype)
        return MultiDiscrete(nvec, actual.dtype if actual is not None else getattr(space, "dtype", jnp.int32))
    if kind == "Box":
        shape = _as_shape(space.shape)
        dtype = getattr(space, "dtype", jnp.float32)
        if actual is not None:
            shape, dtype = tuple(actual.shape), actual.dtype
        low, high = np.asarray(space.low, np.float64), np.asarray(space.high, np.float64)
        try:
            low, high = np.broadcast_to(low, shape), np.broadcast_to(high, shape)
        except ValueError:  # declared shape is wrong (e.g. transposed): keep shape, drop bounds
            low, high = -np.inf, np.inf
        return Box(low, high, shape, dtype)
    raise TypeError(
        f"{what}: JaxMARL space {space!r} ({kind}) has no jaxagents counterpart; "
        "supported: Discrete, MultiDiscrete, Box"
    )


def space_to_jaxmarl(space: Space):
    """The ``jaxmarl.environments.spaces`` equivalent of a jaxagents space, or ``space``
    itself when jaxmarl is not installed."""
    spaces = _jaxmarl_spaces()
    if spaces is None:
        return space
    if isinstance(space, Discrete):
        return spaces.Discrete(space.n, dtype=space.dtype)
    if isinstance(space, MultiDiscrete):
        return spaces.MultiDiscrete(list(space.nvec))
    if isinstance(space, Box):
        # Scalars when uniform: JaxMARL code often does float(space.low).
        lo = space.low.flat[0] if space.low.size and np.all(space.low == space.low.flat[0]) else space.low
        hi = space.high.flat[0] if space.high.size and np.all(space.high == space.high.flat[0]) else space.high
        return spaces.Box(lo, hi, space.shape, space.dtype)
    raise TypeError(f"no JaxMARL counterpart for {space!r}")


# --------------------------------------------------------------------------- masks
def mask_function(env, state, num_actions: Mapping[str, int | None], what: str = "from_jaxmarl") -> Callable | None:
    """The env's legal-action function ``state -> {agent: bool[n_actions]}``, or ``None``
    when every action is legal.

    Hanabi names it ``get_legal_moves``; other envs ``get_avail_actions`` (the base
    class's raises ``NotImplementedError``). A function is used when it runs on
    ``state`` (abstractly: only shapes are computed) and returns a mask of shape
    ``(n,)`` for every agent with ``n = num_actions[agent]`` discrete actions.

    Args:
        env: a JaxMARL ``MultiAgentEnv``.
        state: one (unbatched) state of ``env``, concrete or abstract.
        num_actions: ``{agent: n}``, ``None`` for an agent with continuous actions.
        what: names the caller in the warning about a mask function that fails.
    """
    if not any(num_actions.values()):
        return None
    for attr in ("get_legal_moves", "get_avail_actions"):
        fn = getattr(env, attr, None)
        if fn is None:
            continue
        try:
            masks = jax.eval_shape(fn, state)
        except NotImplementedError:
            continue
        except Exception as e:  # an env bug should not make the adapter unusable
            warnings.warn(f"{what}: {type(env).__name__}.{attr} failed ({e!r}); all actions treated as legal")
            continue
        if isinstance(masks, Mapping) and all(
            n is None or (a in masks and tuple(masks[a].shape) == (n,)) for a, n in num_actions.items()
        ):
            return fn
    return None


def role_masks(mask_fn: Callable | None, state, role_agents: Mapping[str, list], roles: Mapping[str, Role]):
    """``{role: bool[n_role, n_actions]}`` from ``mask_fn(state)`` (row ``i``: agent
    ``role_agents[role][i]``; all True for a role with continuous actions), or ``None``
    when ``mask_fn`` is ``None``."""
    if mask_fn is None:
        return None
    masks = mask_fn(state)
    out = {}
    for name, members in role_agents.items():
        role = roles[name]
        if role.num_actions is None:
            out[name] = jnp.ones(role.mask_shape, bool)
        else:
            out[name] = jnp.stack([masks[a] for a in members]).astype(bool)
    return out

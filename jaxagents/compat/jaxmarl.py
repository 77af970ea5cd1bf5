"""Adapters between JaxMARL and jaxagents.

``from_jaxmarl(env)`` makes any JaxMARL ``MultiAgentEnv`` a jaxagents ``Env``;
``to_jaxmarl(env)`` exposes a jaxagents ``Env`` through JaxMARL's per-agent dict API.
``jaxmarl`` stays optional: it is imported only inside these functions.

From JaxMARL (``JaxMARLAdapter``)
---------------------------------
* **Roles.** ``env.agent_classes`` when it partitions the agents into groups of
  identical spaces (MPE: ``"agents"``, ``"adversaries"``); otherwise agents with
  identical observation and action spaces (shape, dtype, bounds / ``n``) form a role,
  in the agents' order, named after the agents' names without their index
  (``agent_0..2`` -> ``"agent"``, HeuristicEnemySMAX's allies -> ``"ally"``; full
  SMAX 3m, where both teams share spaces -> one role ``"ally_enemy"``), suffixed
  ``_0``, ``_1``... when several groups would share a name.
  ``roles={"name": [agent, ...]}`` overrides this (e.g. one role per SMAX team).
  ``adapter.role_agents`` keeps ``{role: [agent names]}``; the ``i``-th row of every
  per-role array is agent ``role_agents[role][i]``.
* **Spaces.** JaxMARL spaces become ``jaxagents.core.spaces`` ones. Observation spaces
  take their shape and dtype from the observations ``reset`` really returns (and the
  bounds JaxMARL declares where they fit), because JaxMARL sometimes declares them
  wrongly (Overcooked declares ``f32[W, H, 26]`` and returns ``u8[H, W, 26]``; Hanabi
  declares an int shape).
* **Dynamics.** ``reset_env`` calls JaxMARL's ``reset(key)`` and ``step_env`` calls
  JaxMARL's ``step_env(key, state, actions)``, the step *without* its built-in
  auto-reset, with the key unchanged; so ``AutoReset(from_jaxmarl(x))`` reproduces
  ``x.step`` exactly (both split the key into step and reset keys the same way).
* **Time steps.** ``obs[role] = stack([obs[a] for a in role_agents[role]])``;
  ``reward[role]`` is ``f32[n]``. JaxMARL only reports ``dones["__all__"]``: when the
  env has an integer ``max_steps`` and its state a ``step`` counter (looked up on the
  state, or on ``state.state`` / ``state.env_state`` for JaxMARL's wrapper-style envs
  such as ``HeuristicEnemySMAX``), ``truncated = done & (step >= max_steps)`` and
  ``terminated = done & ~truncated``; otherwise ``terminated = done``. (JaxMARL envs
  count steps differently — some test the limit before incrementing, some after — so
  a real termination on the last one or two allowed steps is reported as a
  truncation.) A per-agent done that is True while ``__all__`` is False (a dead SMAX
  unit) makes that agent inactive: ``active[role][i] = False``.
* **Masks and turns.** ``action_mask`` comes from ``env.get_legal_moves(state)``
  (Hanabi) or ``env.get_avail_actions(state)`` where the env implements it (probed
  once at construction), and is all True otherwise. Hanabi is turn-based: only the
  player to move (``state.cur_player_idx``, a one-hot over seats mapped to agents
  through ``state.seat_order``) is ``active``.
* **Info.** JaxMARL's ``infos`` are flattened to ``{"key/sub_key": array}`` (e.g.
  Overcooked's ``"shaped_reward/agent_0"``); ``reset`` reports zeros with the same keys
  so the structure is stable.
* **global_obs(state).** ``env.get_world_state(state)`` where the env has it (SMAX);
  else, for envs whose observations include a ``"world_state"`` entry, that entry;
  else all agents' observations, flattened, cast to ``float32`` and concatenated in
  ``env.agents`` order. When that cannot be recomputed from the state (Hanabi's
  ``get_obs`` needs the previous state and action; a ``"world_state"`` entry is only
  returned by reset/step), the adapter keeps it in its state
  (``JaxMARLState(env_state, global_obs)``), which costs one copy of it per step; for
  every other env the adapter's state *is* the JaxMARL state.
* **Params.** JaxMARL envs have none: ``EmptyParams``.

To JaxMARL (``to_jaxmarl``)
---------------------------
A ``JaxMARLView`` (a subclass of JaxMARL's ``MultiAgentEnv`` when jaxmarl is installed)
with ``agents``, ``num_agents``, ``observation_space(agent)``/``action_space(agent)``,
``reset(key) -> (obs, state)``, ``step_env`` (no auto-reset), ``step`` with JaxMARL's
auto-reset semantics, ``get_obs(state)`` and ``get_avail_actions(state)``. Its state,
``JaxMARLViewState(env_state, timestep)``, keeps the last ``TimeStep`` because our
observations and masks are not functions of the env state alone. Every agent's done
equals ``dones["__all__"]`` (our contract has no per-agent done, so a round trip
does not reproduce SMAX's dead-unit dones), and ``infos`` adds ``"terminated"`` and
``"truncated"`` to the ``TimeStep.info``. ``to_jaxmarl(from_jaxmarl(x))`` keeps
``x``'s agent names and, from the same keys and actions, ``x.step``'s observations,
rewards, ``__all__`` dones and masks.
"""

from __future__ import annotations

import functools
import os
import warnings
from typing import Any, Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxagents.core.env import EmptyParams, Env
from jaxagents.core.spaces import Box, Discrete, MultiDiscrete, Space
from jaxagents.core.types import Role, TimeStep

__all__ = [
    "from_jaxmarl",
    "to_jaxmarl",
    "JaxMARLAdapter",
    "JaxMARLState",
    "JaxMARLViewState",
    "space_from_jaxmarl",
    "space_to_jaxmarl",
]



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


# --------------------------------------------------------------------------- roles
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


# --------------------------------------------------------------------------- state
@struct.dataclass
class JaxMARLState:
    """Adapter state for envs whose ``global_obs`` cannot be recomputed from their state.

    Attributes:
        env_state: the JaxMARL state.
        global_obs: ``f32[global_obs_dim]`` kept from the last reset/step.
    """

    env_state: Any
    global_obs: jax.Array


def _path_str(path) -> str:
    parts = []
    for p in path:
        for attr in ("key", "name", "idx"):
            if hasattr(p, attr):
                parts.append(str(getattr(p, attr)))
                break
        else:
            parts.append(str(p))
    return "/".join(parts)


def _flatten_info(info) -> dict:
    leaves, _ = jax.tree_util.tree_flatten_with_path(info)
    return {_path_str(path): leaf for path, leaf in leaves}


def _find_step_path(state) -> tuple[str, ...] | None:
    """Attribute path to an integer scalar step counter in a JaxMARL state (or None)."""
    for path in (("step",), ("state", "step"), ("env_state", "step")):
        node = state
        try:
            for attr in path:
                node = getattr(node, attr)
        except AttributeError:
            continue
        if hasattr(node, "shape") and tuple(node.shape) == () and jnp.issubdtype(node.dtype, jnp.integer):
            return path
    return None


def _is_jaxmarl_env(env) -> None:
    """Raise ``TypeError`` unless ``env`` is a JaxMARL ``MultiAgentEnv`` (or quacks like one)."""
    if isinstance(env, type):
        raise TypeError(f"from_jaxmarl needs a JaxMARL environment instance, got the class {env.__name__}")
    if isinstance(env, Env):
        raise TypeError(f"from_jaxmarl: {type(env).__name__} is already a jaxagents Env; use it directly")
    MultiAgentEnv, JaxMARLWrapper = _jaxmarl_base()
    if JaxMARLWrapper is not None and isinstance(env, JaxMARLWrapper):
        raise TypeError(
            f"from_jaxmarl: {type(env).__name__} is a JaxMARL wrapper (its step auto-resets and changes the state); "
            "pass the environment it wraps (wrapper._env) and use jaxagents wrappers instead"
        )
    if MultiAgentEnv is not None and isinstance(env, MultiAgentEnv):
        return
    needed = ("agents", "reset", "step_env", "observation_space", "action_space")
    missing = [n for n in needed if not hasattr(env, n)]
    if missing:
        raise TypeError(
            f"from_jaxmarl needs a JaxMARL MultiAgentEnv (with {', '.join(needed)}), "
            f"got {type(env).__name__} (missing: {', '.join(missing)})"
        )


# --------------------------------------------------------------------------- adapter
class JaxMARLAdapter(Env):
    """A JaxMARL ``MultiAgentEnv`` as a jaxagents ``Env`` (see the module docstring).

    Attributes:
        jaxmarl_env: the wrapped env.
        role_agents: ``{role: [agent names]}``; row ``i`` of every per-role array is
            agent ``role_agents[role][i]``.
        roles: ``{role: Role}``.
        global_obs_shape: shape of ``global_obs(state)``.

    State: the JaxMARL state itself, or ``JaxMARLState(env_state, global_obs)`` for
    envs whose global observation must be carried (Hanabi).
    """

    def __init__(self, env, roles: Mapping[str, Sequence[str]] | None = None):
        _is_jaxmarl_env(env)
        agents = list(env.agents)
        if not agents or len(set(agents)) != len(agents):
            raise TypeError(f"from_jaxmarl: env.agents must be a non-empty list of distinct names, got {env.agents!r}")
        self.jaxmarl_env = env
        self._agents = agents

        # One abstract reset tells us the real observation shapes/dtypes and the state
        # layout (a raw uint32 key, JaxMARL's convention; only shapes are computed).
        probe_key = jax.ShapeDtypeStruct((2,), jnp.uint32)
        obs0, state0 = jax.eval_shape(env.reset, probe_key)
        spaces = {}
        for a in agents:
            if a not in obs0 or not hasattr(obs0[a], "shape"):
                raise TypeError(f"from_jaxmarl: reset must return one array observation per agent; {a!r} has none")
            obs_space = space_from_jaxmarl(env.observation_space(a), obs0[a], f"observation space of {a!r}")
            act_space = space_from_jaxmarl(env.action_space(a), None, f"action space of {a!r}")
            spaces[a] = (obs_space, act_space)

        self.role_agents = _group_roles(agents, spaces, roles, _agent_classes(env))
        self.roles = {
            name: Role(len(members), spaces[members[0]][0], spaces[members[0]][1])
            for name, members in self.role_agents.items()
        }

        # Step probe: info structure (reset must report the same keys) and output keys.
        dummy = {a: jax.ShapeDtypeStruct(spaces[a][1].shape, spaces[a][1].dtype) for a in agents}
        _, _, rew, dones, info = jax.eval_shape(env.step_env, probe_key, state0, dummy)
        if "__all__" not in dones:
            raise TypeError(f"from_jaxmarl: {type(env).__name__}.step_env returned dones without '__all__'")
        self._info_spec = _flatten_info(info)
        self._reward_agents = {a for a in agents if a in rew}
        self._done_agents = [a for a in agents if a in dones]

        max_steps = getattr(env, "max_steps", None)
        self._step_path = _find_step_path(state0)
        self._max_steps = (
            int(max_steps)
            if isinstance(max_steps, (int, np.integer)) and not isinstance(max_steps, bool) and self._step_path
            else None
        )

        self._mask_fn = self._probe_masks(env, state0)
        self._turn = self._probe_turn(state0)
        self._global_mode, self.global_obs_shape = self._probe_global(env, obs0, state0)
        # Only these two modes make the adapter's state differ from the JaxMARL state.
        self._carry_global = self._global_mode in ("world_state", "concat")

    # ------------------------------------------------------------ construction probes
    def _discrete_roles_fit(self, masks) -> bool:
        for name, members in self.role_agents.items():
            role = self.roles[name]
            if role.num_actions is None:
                continue
            for a in members:
                if a not in masks or tuple(masks[a].shape) != (role.num_actions,):
                    return False
        return True

    def _probe_masks(self, env, state0):
        """The env's mask function if it works on a reset state, else None (all legal)."""
        if not any(r.num_actions for r in self.roles.values()):
            return None
        for attr in ("get_legal_moves", "get_avail_actions"):
            fn = getattr(env, attr, None)
            if fn is None:
                continue
            try:
                masks = jax.eval_shape(fn, state0)
            except NotImplementedError:
                continue
            except Exception as e:  # an env bug should not make the adapter unusable
                warnings.warn(f"from_jaxmarl: {type(env).__name__}.{attr} failed ({e!r}); all actions treated as legal")
                continue
            if isinstance(masks, Mapping) and self._discrete_roles_fit(masks):
                return fn
        return None

    def _probe_turn(self, state0):
        """None unless the state marks the player to move (Hanabi's one-hot
        ``cur_player_idx`` over seats); then whether seats map to agents via ``seat_order``."""
        cur = getattr(state0, "cur_player_idx", None)
        if cur is None or tuple(getattr(cur, "shape", ())) != (len(self._agents),):
            return None
        seat = getattr(state0, "seat_order", None)
        return bool(seat is not None and tuple(getattr(seat, "shape", ())) == (len(self._agents),))

    def _concat_obs(self, obs) -> jax.Array:
        return jnp.concatenate([jnp.ravel(obs[a]).astype(jnp.float32) for a in self._agents])

    def _probe_global(self, env, obs0, state0):
        """How ``global_obs`` is produced: ``(mode, shape)`` with mode one of
        ``"world_state_fn"``, ``"obs_fn"`` (recomputed from the state), or the carried
        ``"world_state"``/``"concat"``."""
        fn = getattr(env, "get_world_state", None)
        if fn is not None:
            try:
                return "world_state_fn", tuple(jax.eval_shape(fn, state0).shape)
            except Exception:
                pass
        if "world_state" in obs0 and "world_state" not in self._agents and hasattr(obs0["world_state"], "shape"):
            return "world_state", tuple(obs0["world_state"].shape)
        get_obs = getattr(env, "get_obs", None)
        if get_obs is not None:
            try:
                obs = jax.eval_shape(get_obs, state0)
                if all(a in obs for a in self._agents):
                    return "obs_fn", tuple(jax.eval_shape(self._concat_obs, obs).shape)
            except Exception:  # Hanabi: get_obs(new_state, old_state, action)
                pass
        return "concat", tuple(jax.eval_shape(self._concat_obs, obs0).shape)

    # ------------------------------------------------------------ helpers
    def _inner(self, state):
        return state.env_state if self._carry_global else state

    def _wrap(self, env_state, obs):
        if not self._carry_global:
            return env_state
        g = obs["world_state"] if self._global_mode == "world_state" else self._concat_obs(obs)
        return JaxMARLState(env_state, jnp.asarray(g, jnp.float32))

    def _stack(self, per_agent: Mapping, dtype=None) -> dict:
        out = {}
        for name, members in self.role_agents.items():
            x = jnp.stack([per_agent[a] for a in members])
            out[name] = x if dtype is None else x.astype(dtype)
        return out

    def _masks(self, state) -> dict | None:
        if self._mask_fn is None:
            return None
        masks = self._mask_fn(state)
        out = {}
        for name, members in self.role_agents.items():
            role = self.roles[name]
            if role.num_actions is None:
                out[name] = jnp.ones(role.mask_shape, bool)
            else:
                out[name] = jnp.stack([masks[a] for a in members]).astype(bool)
        return out

    def _active(self, state, dones=None) -> dict | None:
        """``{role: bool[n]}``: the player to move (turn-based) and agents not done alone."""
        if self._turn is None and (dones is None or not self._done_agents):
            return None
        index = {a: i for i, a in enumerate(self._agents)}
        if self._turn is not None:
            turn = state.cur_player_idx > 0  # one-hot over seats
            if self._turn:  # seat -> agent: agent i sits at argsort(seat_order)[i]
                turn = turn[jnp.argsort(state.seat_order)]
        else:
            turn = jnp.ones((len(self._agents),), bool)
        if dones is not None and self._done_agents:
            # Done alone (a dead unit) means: its actions are ignored until the episode ends.
            alone = jnp.stack([dones.get(a, jnp.zeros((), bool)) for a in self._agents]) & ~dones["__all__"]
            turn = turn & ~alone
        return {name: turn[np.array([index[a] for a in members])] for name, members in self.role_agents.items()}

    def _info(self, info=None) -> dict:
        if info is None:
            return {k: jnp.zeros(s.shape, s.dtype) for k, s in self._info_spec.items()}
        flat = _flatten_info(info)
        # Cast to the probed dtype (drops weak types), so reset and step infos agree exactly.
        return {k: jax.lax.convert_element_type(flat[k], s.dtype) for k, s in self._info_spec.items()}

    # ------------------------------------------------------------ Env API
    def default_params(self):
        return EmptyParams()

    def reset_env(self, key, params):
        """Returns ``(state, TimeStep)``; ``TimeStep.obs[role]`` has shape ``[n_role, *obs_shape]``."""
        obs, state = self.jaxmarl_env.reset(key)
        ts = self.make_timestep(
            obs=self._stack(obs),
            action_mask=self._masks(state),
            active=self._active(state),
            info=self._info(),
        )
        return self._wrap(state, obs), ts

    def step_env(self, key, state, actions, params):
        """``actions[role]``: ``[n_role, *action_shape]``, row ``i`` for ``role_agents[role][i]``."""
        per_agent = {a: actions[name][i] for name, members in self.role_agents.items() for i, a in enumerate(members)}
        obs, new, rewards, dones, info = self.jaxmarl_env.step_env(key, self._inner(state), per_agent)
        done = jnp.asarray(dones["__all__"], bool)
        if self._max_steps is not None:
            step = new
            for attr in self._step_path:
                step = getattr(step, attr)
            truncated = done & (step >= self._max_steps)
        else:
            truncated = jnp.zeros((), bool)
        zero = jnp.zeros((), jnp.float32)
        reward = {a: rewards[a] if a in self._reward_agents else zero for a in self._agents}
        ts = self.make_timestep(
            obs=self._stack(obs),
            reward=self._stack(reward, jnp.float32),
            terminated=done & ~truncated,
            truncated=truncated,
            action_mask=self._masks(new),
            active=self._active(new, dones),
            info=self._info(info),
        )
        return self._wrap(new, obs), ts

    def global_obs(self, state, params=None) -> jax.Array:
        """Centralised-critic input of shape ``global_obs_shape`` (see the module docstring)."""
        if self._carry_global:
            return state.global_obs
        if self._global_mode == "world_state_fn":
            return self.jaxmarl_env.get_world_state(state)
        return self._concat_obs(self.jaxmarl_env.get_obs(state))

    def render(self, state, params=None):
        raise NotImplementedError(
            f"{self.name} has no renderer; use JaxMARL's visualisers on adapter.jaxmarl_env with the JaxMARL state"
        )

    @property
    def name(self) -> str:
        return f"JaxMARL<{getattr(self.jaxmarl_env, 'name', type(self.jaxmarl_env).__name__)}>"


def from_jaxmarl(env, roles: Mapping[str, Sequence[str]] | None = None) -> JaxMARLAdapter:
    """Wrap a JaxMARL ``MultiAgentEnv`` instance as a jaxagents ``Env``.

    Args:
        env: e.g. ``jaxmarl.make("MPE_simple_spread_v3")``. JaxMARL's own wrappers
            (``LogWrapper``...) are rejected: pass the env they wrap.
        roles: optional ``{role: [agent names]}`` grouping every agent exactly once
            into roles of identical spaces; default: grouped by spaces (see the
            module docstring).

    Returns:
        a ``JaxMARLAdapter``; ``adapter.role_agents`` maps roles to agent names.

    Raises:
        TypeError: ``env`` is not a JaxMARL env, or has spaces with no jaxagents
            counterpart.
        ValueError: ``roles`` is not a partition of the agents into same-space groups.
    """
    return JaxMARLAdapter(env, roles)


# --------------------------------------------------------------------------- view
@struct.dataclass
class JaxMARLViewState:
    """State of a ``to_jaxmarl`` view: our env's state and its last ``TimeStep`` (the
    observations and masks that JaxMARL's ``get_obs``/``get_avail_actions`` return)."""

    env_state: Any
    timestep: TimeStep


class _ViewMixin:
    """JaxMARL's dict API over a jaxagents ``Env``; combined with ``MultiAgentEnv``
    when jaxmarl is installed (see ``_view_class``)."""

    def __init__(self, env: Env, params=None):
        if not isinstance(env, Env):
            raise TypeError(f"to_jaxmarl needs a jaxagents Env, got {type(env).__name__}")
        self.env = env
        self.params = env.validate_params(params)
        # Keep the original JaxMARL names when this is (a wrapper of) a from_jaxmarl adapter.
        known = getattr(env, "role_agents", None)
        if isinstance(known, Mapping) and {k: len(v) for k, v in known.items()} == {
            k: r.num_agents for k, r in env.roles.items()
        }:
            self.role_agents = {k: list(known[k]) for k in env.roles}
        else:
            self.role_agents = {k: [f"{k}_{i}" for i in range(r.num_agents)] for k, r in env.roles.items()}
        self.agents = [a for members in self.role_agents.values() for a in members]
        if len(set(self.agents)) != len(self.agents):
            raise ValueError(f"to_jaxmarl: agent names collide: {self.agents}")
        self.num_agents = len(self.agents)
        self.observation_spaces = {}
        self.action_spaces = {}
        for k, members in self.role_agents.items():
            for a in members:
                self.observation_spaces[a] = space_to_jaxmarl(env.roles[k].observation_space)
                self.action_spaces[a] = space_to_jaxmarl(env.roles[k].action_space)

    # per-role arrays <-> per-agent dicts
    def _split(self, per_role: Mapping) -> dict:
        return {a: per_role[k][i] for k, members in self.role_agents.items() for i, a in enumerate(members)}

    def _join(self, per_agent: Mapping) -> dict:
        return {k: jnp.stack([jnp.asarray(per_agent[a]) for a in members]) for k, members in self.role_agents.items()}

    @functools.partial(jax.jit, static_argnums=0)
    def reset(self, key):
        """Returns ``({agent: obs}, JaxMARLViewState)``."""
        env_state, ts = self.env.reset(key, self.params)
        return self._split(ts.obs), JaxMARLViewState(env_state, ts)

    @functools.partial(jax.jit, static_argnums=0)
    def step_env(self, key, state, actions):
        """One step without auto-reset: ``(obs, state, rewards, dones, infos)``, dicts keyed
        by agent; ``dones`` adds ``"__all__"``, every agent's done equals it; ``infos`` is
        the ``TimeStep.info`` plus ``"terminated"``/``"truncated"`` (``bool[]``)."""
        env_state, ts = self.env.step(key, state.env_state, self._join(actions), self.params)
        done = ts.done
        dones = {a: done for a in self.agents}
        dones["__all__"] = done
        infos = {**ts.info, "terminated": ts.terminated, "truncated": ts.truncated}
        return self._split(ts.obs), JaxMARLViewState(env_state, ts), self._split(ts.reward), dones, infos

    @functools.partial(jax.jit, static_argnums=0)
    def step(self, key, state, actions, reset_state=None):
        """JaxMARL's ``step``: ``step_env``, then a reset (to ``reset_state`` if given) when
        ``dones["__all__"]``; the key is split into step and reset keys as JaxMARL does."""
        key, key_reset = jax.random.split(key)
        obs, new, rewards, dones, infos = self.step_env(key, state, actions)

        def reset(_):
            if reset_state is None:
                return self.reset(key_reset)
            return self.get_obs(reset_state), reset_state

        # cond, not select: an unbatched env only pays for a reset when an episode ends
        # (under vmap it becomes the select JaxMARL uses).
        obs, new = jax.lax.cond(dones["__all__"], reset, lambda _: (obs, new), None)
        return obs, new, rewards, dones, infos

    def get_obs(self, state):
        """``{agent: obs}`` of ``state``."""
        return self._split(state.timestep.obs)

    @functools.partial(jax.jit, static_argnums=0)
    def get_avail_actions(self, state):
        """``{agent: bool[n_actions]}`` legal actions in ``state``."""
        return self._split(state.timestep.action_mask)

    def observation_space(self, agent: str):
        return self.observation_spaces[agent]

    def action_space(self, agent: str):
        return self.action_spaces[agent]

    @property
    def agent_classes(self) -> dict:
        """``{role: [agent names]}``."""
        return {k: list(v) for k, v in self.role_agents.items()}

    @property
    def name(self) -> str:
        return self.env.name

    def __repr__(self):
        return f"JaxMARLView({self.env!r})"


@functools.lru_cache(maxsize=None)
def _view_class() -> type:
    MultiAgentEnv, _ = _jaxmarl_base()
    bases = (_ViewMixin,) if MultiAgentEnv is None else (_ViewMixin, MultiAgentEnv)
    cls = type("JaxMARLView", bases, {"__module__": __name__, "__doc__": _ViewMixin.__doc__})
    return cls


def __getattr__(name):
    # The class exists once jaxmarl's presence is known; also lets pickle find it.
    if name == "JaxMARLView":
        return _view_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def to_jaxmarl(env: Env, params=None):
    """Expose a jaxagents ``Env`` with JaxMARL's per-agent dict API.

    Args:
        env: any jaxagents ``Env`` (wrappers included).
        params: env params used by every call (default ``env.default_params()``).

    Returns:
        a ``JaxMARLView``, a JaxMARL ``MultiAgentEnv`` when jaxmarl is installed.
        Agents are named ``f"{role}_{i}"`` (or keep their JaxMARL names when ``env``
        came from ``from_jaxmarl``); spaces are JaxMARL spaces when jaxmarl is
        installed, jaxagents ones otherwise.
    """
    return _view_class()(env, params)

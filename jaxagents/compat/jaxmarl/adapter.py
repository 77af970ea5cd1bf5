"""``from_jaxmarl``: any JaxMARL ``MultiAgentEnv`` as a jaxagents ``Env``
(``JaxMARLAdapter``). ``jaxmarl`` stays optional: this module imports it only inside
functions.

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
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxagents.compat.jaxmarl.convert import _jaxmarl_base, mask_function, role_masks, space_from_jaxmarl
from jaxagents.compat.jaxmarl.roles import _agent_classes, _group_roles
from jaxagents.core.env import EmptyParams, Env
from jaxagents.core.types import Role

__all__ = ["from_jaxmarl", "JaxMARLAdapter", "JaxMARLState"]


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

        self._mask_fn = mask_function(
            env, state0, {a: self.roles[k].num_actions for k, members in self.role_agents.items() for a in members}
        )
        self._turn = self._probe_turn(state0)
        self._global_mode, self.global_obs_shape = self._probe_global(env, obs0, state0)
        # Only these two modes make the adapter's state differ from the JaxMARL state.
        self._carry_global = self._global_mode in ("world_state", "concat")

    # ------------------------------------------------------------ construction probes
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
        return role_masks(self._mask_fn, state, self.role_agents, self.roles)

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
        """``EmptyParams()``: JaxMARL environments have no params."""
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
        """``JaxMARL<name>``, from the wrapped env's ``name`` (or its class name)."""
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

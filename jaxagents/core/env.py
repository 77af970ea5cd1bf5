"""The environment base class: roles, static config, dynamic params, pure reset/step.

Subclasses implement ``reset_env`` and ``step_env`` (and usually ``default_params``
and ``check_params``). The public ``reset``/``step`` add what every environment
needs and what a subclass must not forget:

* ``params=None`` means ``default_params()``;
* actions are checked against the roles (keys, shape, dtype) at trace time, which
  costs nothing at run time because shapes and dtypes are static;
* concrete (non-traced) params are validated on the host exactly as
  ``validate_params`` does (integer fields take integers: ``horizon=2.5`` is refused;
  then ``check_params``'s types and ranges); traced params cannot raise, so validate
  them with ``env.validate_params(params)`` before you jit (learners and the bench
  harness do);
* concrete continuous actions (``Box`` roles, eager calls) must be finite: a NaN or
  an infinity is refused with a ``ValueError`` naming the role and the index. Under
  ``jit``/``vmap`` actions are traced and **not checked** (a check would cost every
  compiled step, and traced values cannot raise): what a non-finite action does there
  is the environment's own business (in the robot arenas a NaN acts as a zero command), so
  a policy that may emit NaN should be checked by its learner (the runner stops on
  non-finite losses and parameters).

``step`` never resets: auto-reset is the job of the wrappers in
``jaxagents.core.wrappers``.

**Capabilities.** Game knowledge that learners and evaluators use without knowing
the game is offered through optional methods, empty by default, that wrappers
forward (translating state, observations and actions as they change them):

* ``scripted_policies()``: named players the game knows how to play (tic-tac-toe's
  minimax), ``{name: fn(state, key) -> {role: action[n, ...]}}`` on one unbatched
  state; every role gets an action and the caller uses the slots it wants.
* ``exact_evaluation(params)``: ``None`` or a jit-able ``fn(policies, weights=None)
  -> {metric: f32[]}`` that scores policies without sampling, where ``policies`` is
  ``{role: logits_fn}`` and ``logits_fn(obs[S, *obs_shape]) -> logits[S, A]`` is a
  role's policy on this env's observations (exact exploitability of the poker games,
  exact outcomes against minimax in tic-tac-toe). With ``weights`` ``f32[K]`` every
  ``logits_fn`` returns ``logits[K, S, A]``: a mixed strategy that draws member ``k``
  with probability ``weights[k]`` (normalised) once per game and plays it throughout,
  scored as that mixture (a population's or a run's snapshots as one agent).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxagents.core.rng import check_rng, uniforms
from jaxagents.core.spaces import Box, Discrete, MultiDiscrete
from jaxagents.core.types import Role, TimeStep

State = Any
Params = Any
ScriptedPolicy = Callable[[State, jax.Array], dict]  # (state, key) -> {role: action[n, ...]}
LogitsFn = Callable[[jax.Array], jax.Array]  # obs[S, *obs_shape] -> logits[S, A]
ExactEvaluator = Callable[..., dict]  # ({role: LogitsFn}, weights f32[K] | None) -> {metric: f32[]}


@struct.dataclass
class EmptyParams:
    """Params of an environment that has nothing to sweep."""


def _is_concrete(tree) -> bool:
    return not any(isinstance(x, jax.core.Tracer) for x in jax.tree_util.tree_leaves(tree))


def _check_integer_fields(params, default) -> None:
    """A field that is an integer in the default params takes integers only:
    ``params.replace(horizon=2.5)`` is refused (a cast would silently give 2)."""
    try:
        ref = dict(jax.tree_util.tree_flatten_with_path(default)[0])
        given = jax.tree_util.tree_flatten_with_path(params)[0]
    except Exception:  # params of another structure: the environment's own checks decide
        return
    for path, value in given:
        if path not in ref:
            continue
        want = np.dtype(jnp.result_type(ref[path]))  # the default may be traced (made inside a jit)
        got = np.asarray(value).dtype
        if np.issubdtype(want, np.integer) and not np.issubdtype(got, np.integer):
            name = "params" + jax.tree_util.keystr(path)
            raise ValueError(f"{name} must be an integer ({want}), got {np.asarray(value).tolist()!r} ({got})")


class Env:
    """Base class of every jaxagents environment.

    Attributes:
        roles: ``{role_name: Role}``, fixed at construction (static).
    """

    roles: dict[str, Role]

    # ---------------------------------------------------------------- to implement
    def default_params(self) -> Params:
        """The params ``reset``/``step`` use when given None: a ``struct.dataclass`` of the
        quantities one compiled program may vary (traced, so ``vmap`` over them sweeps
        them). ``EmptyParams()`` here; override when the environment has any."""
        return EmptyParams()

    def check_params(self, params: Params) -> None:
        """Raise ``ValueError`` naming the field and the allowed range if ``params``
        (host numpy values) are invalid. Override in subclasses."""

    def reset_env(self, key: jax.Array, params: Params) -> tuple[State, TimeStep]:
        """Start an episode (to implement; called by ``reset``).

        Args:
            key: a PRNG key.
            params: the environment's params, already defaulted (and checked when concrete).

        Returns:
            ``(state, timestep)``: any pytree of arrays, and a ``TimeStep`` with
            ``obs[role]`` ``[n, *obs_shape]``, zero rewards, ``terminated``/``truncated``
            False (``make_timestep`` fills the neutral fields).
        """
        raise NotImplementedError

    def step_env(self, key: jax.Array, state: State, actions: dict, params: Params) -> tuple[State, TimeStep]:
        """Advance one step (to implement; called by ``step``).

        Args:
            key: a PRNG key for this step's randomness.
            state: the state from ``reset_env`` or the previous ``step_env``.
            actions: ``{role: [n, *action_shape]}`` for every role, already checked and
                cast to the action space's dtype; inactive agents' rows are to be ignored.
            params: as in ``reset_env``.

        Returns:
            ``(state, timestep)``, the timestep carrying the rewards of this transition and
            whether it ended the episode. Must not reset: that is the wrappers' job.
        """
        raise NotImplementedError

    def global_obs(self, state: State, params: Params | None = None) -> jax.Array:
        """Centralised-critic input (optional); shape given by ``global_obs_shape``."""
        raise NotImplementedError(f"{type(self).__name__} has no global_obs")

    def render(self, state: State, params: Params | None = None) -> np.ndarray:
        """An RGB frame ``uint8[H, W, 3]`` of one (unbatched) state, host side (optional)."""
        raise NotImplementedError(f"{type(self).__name__} has no renderer")

    # ---------------------------------------------------------------- capabilities
    def scripted_policies(self) -> dict[str, ScriptedPolicy]:
        """Named scripted players of this game (see the module docstring); none by default."""
        return {}

    def exact_evaluation(self, params: Params | None = None) -> ExactEvaluator | None:
        """An exact, sampling-free evaluator of policies, or None (see the module docstring)."""
        return None

    # ---------------------------------------------------------------- public API
    def reset(self, key: jax.Array, params: Params | None = None) -> tuple[State, TimeStep]:
        """Start an episode: ``reset_env`` with ``params`` defaulted (None: ``default_params()``)
        and, when concrete, validated.

        Args:
            key: a PRNG key.
            params: the environment's params, or None.

        Returns:
            ``(state, timestep)``; ``timestep.obs[role]`` is ``[n, *obs_shape]`` and the
            rewards are zero. Batch with ``vmap`` (or the ``VecEnv`` wrapper).
        """
        params = self._params(params)
        return self.reset_env(key, params)

    def step(self, key: jax.Array, state: State, actions: Mapping[str, jax.Array], params: Params | None = None):
        """Advance one step: ``step_env`` after the checks every environment needs.

        Args:
            key: a PRNG key for this step.
            state: the current state.
            actions: ``{role: [n, *action_shape]}``, exactly the roles' keys; checked at
                trace time (shape, kind of dtype) and cast to the spaces' dtypes. In an
                eager call, continuous actions must also be finite.
            params: the environment's params, or None for ``default_params()``; concrete
                params are validated.

        Returns:
            ``(state, timestep)`` of the transition. Never resets: after ``terminated`` or
            ``truncated``, call ``reset`` (or use an auto-reset wrapper).

        Raises:
            ValueError, TypeError: actions or params that do not fit, naming the role or field.
        """
        params = self._params(params)
        actions = self.check_actions(actions)
        if _is_concrete((key, state)):  # an eager call (inside a trace, constants are not checked either)
            self._check_finite_actions(actions)
        return self.step_env(key, state, actions, params)

    # ---------------------------------------------------------------- helpers
    @property
    def name(self) -> str:
        """The environment's display name (used by ``repr`` and messages): its class name unless overridden."""
        return type(self).__name__

    @property
    def num_agents(self) -> int:
        """Total agent count over all roles."""
        return sum(r.num_agents for r in self.roles.values())

    def validate_params(self, params: Params | None = None) -> Params:
        """Host-side validation; returns the (defaulted) params. Raises ``ValueError``."""
        params = self.default_params() if params is None else params
        if not _is_concrete(params):
            raise ValueError("validate_params needs concrete params, not traced values: call it before jit")
        _check_integer_fields(params, self.default_params())
        self.check_params(jax.tree_util.tree_map(np.asarray, params))
        return params

    def _params(self, params):
        if params is None:
            return self.default_params()
        if _is_concrete(params):
            # Eager calls, and params closed over by a jitted function (checked once, at
            # trace time): the same checks as validate_params. Traced params (arguments
            # of jit or vmap) cannot raise and cost nothing here.
            _check_integer_fields(params, self.default_params())
            self.check_params(jax.tree_util.tree_map(np.asarray, params))
        return params

    def _check_finite_actions(self, actions: dict) -> None:
        """Concrete (eager) continuous actions must be finite: a NaN would act as some
        arbitrary action with nothing flagged. Traced actions are not checked (the
        compiled step must not pay for it, and cannot raise); callers check only
        eager calls (every input concrete), so a constant action inside a jitted
        function is left to the environment as well."""
        for name, a in actions.items():
            if isinstance(a, jax.core.Tracer) or not jnp.issubdtype(jnp.result_type(a), jnp.floating):
                continue
            values = np.asarray(a)
            if not np.all(np.isfinite(values)):
                bad = np.argwhere(~np.isfinite(values))[0]
                raise ValueError(f"actions[{name!r}] must be finite, got {values[tuple(bad)]} at index {tuple(int(i) for i in bad)} "
                                 f"(non-finite actions are refused outside jit; under jit they are not checked)")

    def check_actions(self, actions: Mapping[str, jax.Array]) -> dict:
        """Check ``actions`` against the roles and return them in the canonical dtype.

        Raises ``ValueError``/``TypeError`` naming the role, and what was expected, for
        a missing or unknown role key, a wrong shape or a wrong kind of dtype
        (floats for a discrete space, integers for a continuous one). Integer dtypes
        of another width are accepted and cast. Runs at trace time only.
        """
        if not isinstance(actions, Mapping):
            raise TypeError(f"actions must be a dict keyed by role {sorted(self.roles)}, got {type(actions).__name__}")
        unknown = sorted(set(actions) - set(self.roles))
        missing = sorted(set(self.roles) - set(actions))
        if unknown or missing:
            raise ValueError(
                f"actions keys must be exactly the roles {sorted(self.roles)}; "
                + (f"unknown: {unknown} " if unknown else "")
                + (f"missing: {missing}" if missing else "")
            )
        out = {}
        for name, role in self.roles.items():
            a = actions[name]
            space = role.action_space
            shape = tuple(np.shape(a))
            want = (role.num_agents,) + tuple(space.shape)
            if shape != want:
                raise ValueError(
                    f"actions[{name!r}] must have shape {want} (num_agents={role.num_agents}, "
                    f"action shape {space.shape}), got {shape}"
                )
            dtype = jnp.result_type(a)
            if isinstance(space, (Discrete, MultiDiscrete)) or jnp.issubdtype(space.dtype, jnp.integer):
                if not jnp.issubdtype(dtype, jnp.integer):
                    raise TypeError(f"actions[{name!r}] must be integers for {space!r}, got dtype {dtype}")
            elif isinstance(space, Box) and not jnp.issubdtype(dtype, jnp.floating):
                raise TypeError(f"actions[{name!r}] must be floating point for {space!r}, got dtype {dtype}")
            out[name] = jnp.asarray(a, dtype=space.dtype)
        return out

    def make_timestep(
        self,
        obs: dict,
        reward: dict | None = None,
        terminated=False,
        truncated=False,
        action_mask: dict | None = None,
        active: dict | None = None,
        info: dict | None = None,
    ) -> TimeStep:
        """Build a ``TimeStep``, filling omitted per-role fields with their neutral value
        (zero reward, all actions legal, every agent active)."""
        roles = self.roles
        if reward is None:
            reward = {k: jnp.zeros((r.num_agents,), jnp.float32) for k, r in roles.items()}
        if action_mask is None:
            action_mask = {k: jnp.ones(r.mask_shape, bool) for k, r in roles.items()}
        if active is None:
            active = {k: jnp.ones((r.num_agents,), bool) for k, r in roles.items()}
        return TimeStep(
            obs=obs,
            reward={k: jnp.asarray(v, jnp.float32) for k, v in reward.items()},
            terminated=jnp.asarray(terminated, bool),
            truncated=jnp.asarray(truncated, bool),
            action_mask=action_mask,
            active=active,
            info={} if info is None else info,
        )

    def __repr__(self):
        roles = ", ".join(
            f"{k}: {r.num_agents} x (obs {r.observation_space}, act {r.action_space})" for k, r in self.roles.items()
        )
        return f"{self.name}({roles})"


def random_actions(env: Env, key: jax.Array, timestep: TimeStep, batch_shape: tuple = (), rng: str = "threefry") -> dict:
    """Uniformly random *legal* actions for every role (masks respected for
    ``Discrete`` spaces; other spaces are sampled uniformly).

    One uniform number per agent picks the k-th legal action (a cumulative sum over the
    mask), rather than a Gumbel draw per action: with large action sets that is what
    dominates a random rollout. When every action of every agent is legal (checked at
    run time) the k-th action is ``floor(u * n)`` directly -- the same draw without the
    cumulative sum, which matters with 10^6 agents. A role declared
    ``Role(always_legal=True)`` skips the check: its mask is not read at all (it may
    be absent from ``timestep.action_mask``). An all-False mask row (no legal action)
    falls back to uniform over all actions.

    ``batch_shape`` is the leading shape of ``timestep`` (e.g. ``(num_envs,)``): one call
    for a whole batch rather than a ``vmap`` of single-env calls keeps the all-legal
    check a real branch (under ``vmap`` a ``lax.cond`` computes both sides).

    ``rng``: how the uniform numbers of ``Discrete`` roles are drawn, ``"threefry"``
    (``jax.random.uniform``) or ``"hash"`` (``jaxagents.core.rng``: one threefry draw,
    then an integer hash per agent; about a tenth of the cost on CPU). Other spaces
    always use ``Space.sample``.
    """
    check_rng(rng)
    keys = jax.random.split(key, len(env.roles))
    out = {}
    for k, (name, role) in zip(keys, env.roles.items()):
        space = role.action_space
        if isinstance(space, Discrete):
            n = space.n
            shape = (*batch_shape, role.num_agents)
            u = uniforms(k, shape, rng)
            all_legal = lambda u=u, n=n: jnp.minimum((u * n).astype(jnp.int32), n - 1).astype(space.dtype)
            if role.always_legal:
                out[name] = all_legal()
                continue
            mask = timestep.action_mask[name]

            def any_legal(mask=mask, u=u):
                legal = mask | ~jnp.any(mask, -1, keepdims=True)
                count = jnp.sum(legal, -1, dtype=jnp.int32)
                kth = jnp.minimum((u * count).astype(jnp.int32), count - 1)
                rank = jnp.cumsum(legal, -1, dtype=jnp.int32)
                return jnp.argmax(rank > kth[..., None], axis=-1).astype(space.dtype)

            out[name] = jax.lax.cond(jnp.all(mask), all_legal, any_legal)
        else:
            out[name] = space.sample(k, (*batch_shape, role.num_agents))
    return out

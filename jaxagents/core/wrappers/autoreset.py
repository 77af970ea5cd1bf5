"""Auto-reset, without making every step pay for a reset.

Two forms:

* ``AutoReset(env)`` — one environment. ``lax.cond`` on ``done`` runs the reset only
  when an episode ended. Under ``jax.vmap`` a batched ``cond`` becomes a ``select``
  that evaluates both branches, so a vmapped ``AutoReset`` still pays a reset every
  step (this is what JaxMARL's built-in auto-reset costs). Use it for single
  environments and inside code that is not vmapped over environments.
* ``VecEnv(env, num_envs)`` — the batch of environments, owned explicitly. After a
  vmapped ``step`` it counts the finished episodes and branches on that scalar: if
  none ended, nothing more happens (a ``while_loop`` that runs its body zero times
  and leaves the batch in place; a ``cond`` with a do-nothing branch would copy the
  whole batched state and observations every step); otherwise it resets only the
  finished ones by gathering up to ``reset_budget`` of their indices, resetting that
  many and scattering them back, or, when more than ``reset_budget`` finished at once
  (fixed horizons end together), resets the whole batch and selects. The reset cost
  per step is therefore proportional to the number of episodes that ended, not to
  ``num_envs``, and the reset keys are derived only for the envs that reset.
  ``VecEnv.step`` is not reverse-differentiable (``while_loop``); ``AutoReset`` is.
  On GPU the loop and the branch each cost a device synchronisation per step (XLA
  reads their predicates back to the host; ``jaxagents.core.branch.cheap_branches``),
  more than resetting every environment and selecting, so there a small ``VecEnv``
  does that (``select_resets``; the same keys, so the same results bit for bit).

Both return, on the step where an episode ends, the *final* ``reward``,
``terminated``, ``truncated`` and ``info`` together with the *first* ``obs``,
``action_mask`` and ``active`` of the next episode (the gymnax/JaxMARL convention).
With ``final_obs=True`` the observation that ended the episode is also kept in
``info["final_obs"]`` (needed to bootstrap truncated episodes; it costs a copy of
the observations in every step's output, hence opt-in).

Per-environment streams (``env_ids``): ``VecEnv.reset`` and ``VecEnv.step`` take an
optional ``i32[num_envs]`` of *global* environment indices; environment ``i`` then
uses ``fold_in(key, env_ids[i])`` instead of ``split(key, num_envs)[i]``. A batch
split over the devices of a ``data`` mesh axis (each device its ``num_envs / D``
environments, the same ``key`` everywhere) then draws exactly what one device
running every environment draws, whatever D is. Without ``env_ids`` nothing changes.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from jaxagents.core.branch import cheap_branches
from jaxagents.core.env import Env
from jaxagents.core.types import TimeStep
from jaxagents.core.validate import check_positive_int, is_int
from jaxagents.core.wrappers.base import Wrapper


def _merge(step_ts: TimeStep, reset_ts: TimeStep, final_obs: bool) -> TimeStep:
    """Next episode's first observation with the finished episode's last outcome."""
    info = dict(step_ts.info)
    if final_obs:
        info["final_obs"] = step_ts.obs
    return step_ts.replace(obs=reset_ts.obs, action_mask=reset_ts.action_mask, active=reset_ts.active, info=info)


def _with_final_obs(ts: TimeStep, final_obs: bool) -> TimeStep:
    if not final_obs:
        return ts
    return ts.replace(info={**ts.info, "final_obs": ts.obs})


def _split_half(keys: jax.Array, i: int) -> jax.Array:
    """``jax.vmap(jax.random.split)(keys)[:, i]``, computing only that half.

    With the default threefry keys in JAX's partitionable mode (the default since JAX
    0.5), ``split(k, n)[i] == fold_in(k, i)``: one threefry pass over the keys wanted
    instead of over all of them. Other key implementations fall back to splitting.
    """
    if _fold_in_is_split(keys):
        return jax.vmap(jax.random.fold_in, (0, None))(keys, i)
    return jax.vmap(jax.random.split)(keys)[:, i]


def _split_at(key: jax.Array, n: int, idx: jax.Array) -> jax.Array:
    """``jax.random.split(key, n)[idx]``, computing only those keys when it can."""
    if _fold_in_is_split(key):
        return jax.vmap(jax.random.fold_in, (None, 0))(key, idx.astype(jnp.uint32))
    return jax.random.split(key, n)[idx]


def fold_in_each(key: jax.Array, ids: jax.Array) -> jax.Array:
    """``[fold_in(key, i) for i in ids]``: per-environment keys from global indices."""
    return jax.vmap(jax.random.fold_in, (None, 0))(key, jnp.asarray(ids).astype(jnp.uint32))


def _fold_in_is_split(keys: jax.Array) -> bool:
    if not getattr(jax.config, "jax_threefry_partitionable", False):
        return False
    if jnp.issubdtype(keys.dtype, jax.dtypes.prng_key):
        impl = str(jax.random.key_impl(keys))
    else:  # raw uint32 keys use the default implementation
        impl = str(getattr(jax.config, "jax_default_prng_impl", ""))
    return impl == "threefry2x32"


class AutoReset(Wrapper):
    """Reset a single environment on the step its episode ends (see module docstring)."""

    def __init__(self, env: Env, final_obs: bool = False):
        super().__init__(env)
        self.final_obs = bool(final_obs)

    def reset_env(self, key, params):
        """The wrapped env's ``reset``; with ``final_obs`` the first observation is also put in
        ``info["final_obs"]``, so that the info structure is the same as ``step``'s."""
        state, ts = self.env.reset(key, params)
        return state, _with_final_obs(ts, self.final_obs)

    def step_env(self, key, state, actions, params):
        """Step the wrapped env with one half of ``key``; when the episode ends, reset it with
        the other half (``lax.cond``) and return the next episode's first ``obs``,
        ``action_mask`` and ``active`` with the finished step's ``reward``, ``terminated``,
        ``truncated`` and ``info`` (plus ``info["final_obs"]`` with ``final_obs``)."""
        k_step, k_reset = jax.random.split(key)
        state, ts = self.env.step(k_step, state, actions, params)
        ts = _with_final_obs(ts, self.final_obs)

        def reset(_):
            s0, ts0 = self.env.reset(k_reset, params)
            return s0, _merge(ts, ts0, False)

        return jax.lax.cond(ts.done, reset, lambda _: (state, ts), None)


def _batch_of_one(fn, batched: int):
    """``vmap(fn)`` for a batch of one: ``fn`` on the first ``batched`` arguments without
    their leading axis (of size 1), the result given it back. Measured on the 2-core CPU
    with one ``econgym`` economy of 10^4 households: ``vmap`` over one env made a step
    1.4x slower (1.31 against 0.95 ms); the one env's results are the same."""
    def run(*args):
        inner = [jax.tree_util.tree_map(lambda x: x[0], a) for a in args[:batched]]
        return jax.tree_util.tree_map(lambda x: x[None], fn(*inner, *args[batched:]))

    return run


# On GPU (``cheap_branches()`` False) a VecEnv of at most this many agents in all
# (num_envs x agents per env) resets by selection, a larger one still by the loop and
# branch below. Measured on an H100 (BENCHMARKS.md, "GPU"): with 16 Overcooked envs
# (32 agents; IPPO's rollout) a training update ran 1.5-1.9x faster by selection
# (together with ``branch`` selecting); with 16,384 envs (32,768 agents; the env
# benchmark) a step ran 2.3x faster by branching, where resetting the whole batch every
# step costs more than the synchronisation; one mean-field env of 10^6 agents is the
# same case. The threshold lies between the two measured points; where it falls exactly
# was not measured.
SELECT_RESETS_MAX_AGENTS = 2048


class VecEnv:
    """``num_envs`` copies of ``env`` stepped together, with batched auto-reset.

    Every array gains a leading ``num_envs`` axis: ``actions[role]`` has shape
    ``(num_envs, n_role, *action_shape)``, ``timestep.terminated`` shape ``(num_envs,)``.
    ``params`` are shared by the batch (vmap ``reset``/``step`` over params yourself for
    a population of differently-parametrised environments).

    Args:
        env: the environment (any ``Env``, wrappers included).
        num_envs: batch size, >= 1.
        reset_budget: how many finished episodes one step resets individually
            before falling back to resetting the whole batch; default
            ``ceil(num_envs / 8)`` (episodes that end at random times
            with a mean length above ~8 steps stay on the partial path).
        final_obs: keep the last observation of a finished episode in
            ``info["final_obs"]``.
        select_resets: reset every environment on every step and select the
            finished ones, with no loop or branch (the same keys, so the same
            results). ``None`` (default): on GPU (where
            ``jaxagents.core.branch.cheap_branches()`` is False) for batches of at
            most ``SELECT_RESETS_MAX_AGENTS`` agents in all.
    """

    def __init__(self, env: Env, num_envs: int, reset_budget: int | None = None, final_obs: bool = False,
                 select_resets: bool | None = None):
        if not isinstance(env, Env):
            raise TypeError(f"VecEnv wraps a jaxagents Env, got {type(env).__name__}")
        num_envs = check_positive_int("num_envs", num_envs)
        if reset_budget is None:
            reset_budget = max(1, math.ceil(num_envs / 8))
        if not is_int(reset_budget) or not 1 <= reset_budget <= num_envs:
            raise ValueError(f"reset_budget must be an int in [1, num_envs={num_envs}], got {reset_budget!r}")
        reset_budget = int(reset_budget)
        self.env = env
        self.num_envs = num_envs
        self.reset_budget = reset_budget
        if select_resets is not None and not isinstance(select_resets, bool):
            raise ValueError(f"select_resets must be True, False or None (by backend), got {select_resets!r}")
        self.select_resets = select_resets
        self.final_obs = bool(final_obs)
        self.roles = env.roles
        if num_envs == 1:  # a batch of one runs unbatched (vmap's batch-of-one programs are slower)
            self._vreset, self._vstep = _batch_of_one(env.reset, 1), _batch_of_one(env.step, 3)
        else:
            self._vreset = jax.vmap(env.reset, in_axes=(0, None))
            self._vstep = jax.vmap(env.step, in_axes=(0, 0, 0, None))

    def default_params(self):
        """The wrapped env's ``default_params()``, shared by the whole batch."""
        return self.env.default_params()

    def validate_params(self, params=None):
        """The wrapped env's ``validate_params``: the (defaulted) params, or ``ValueError``."""
        return self.env.validate_params(params)

    def _check_ids(self, env_ids):
        if env_ids is not None and jnp.shape(env_ids) != (self.num_envs,):
            raise ValueError(f"env_ids must have shape (num_envs={self.num_envs},), got {jnp.shape(env_ids)}")

    def reset(self, key, params=None, env_ids=None):
        """Reset all ``num_envs`` environments. Returns batched ``(state, timestep)``.
        ``env_ids``: global environment indices (per-environment streams, see the
        module docstring)."""
        params = self.env._params(params)
        self._check_ids(env_ids)
        keys = jax.random.split(key, self.num_envs) if env_ids is None else fold_in_each(key, env_ids)
        state, ts = self._vreset(keys, params)
        return state, _with_final_obs(ts, self.final_obs)

    def step(self, key, state, actions, params=None, env_ids=None):
        """Step every environment and reset those whose episode ended. ``env_ids``:
        global environment indices (per-environment streams, see the module docstring)."""
        params = self.env._params(params)
        self._check_ids(env_ids)
        for name, a in actions.items():
            if jnp.ndim(a) == 0 or jnp.shape(a)[0] != self.num_envs:
                raise ValueError(
                    f"actions[{name!r}] must have a leading num_envs={self.num_envs} axis, got shape {jnp.shape(a)}"
                )
        if not any(isinstance(x, jax.core.Tracer) for x in jax.tree_util.tree_leaves((key, state))):
            self.env._check_finite_actions(actions)  # eager calls only (see Env.step)
        n, budget = self.num_envs, self.reset_budget
        # Per-env keys as AutoReset splits them, so a VecEnv step equals
        # vmap(AutoReset(env).step) over split(key, num_envs), whatever reset_budget is.
        # Each derivation is a threefry pass over the batch, so only what is used is
        # derived: the step halves here (XLA drops them if the env ignores its key),
        # the reset halves inside the reset branches, only for the envs that reset.
        if env_ids is None:
            env_keys = lambda: jax.random.split(key, n)  # noqa: E731
            keys_at = lambda idx: _split_at(key, n, idx)  # noqa: E731
        else:
            env_keys = lambda: fold_in_each(key, env_ids)  # noqa: E731
            keys_at = lambda idx: fold_in_each(key, env_ids[idx])  # noqa: E731
        state, ts = self._vstep(_split_half(env_keys(), 0), state, actions, params)
        ts = _with_final_obs(ts, self.final_obs)
        done = ts.done

        def combine(combine_leaf, state, ts, s0, ts0):
            """Put the reset parts (state; first obs, mask, active) into the batch."""
            tm = jax.tree_util.tree_map
            return tm(combine_leaf, state, s0), ts.replace(
                obs=tm(combine_leaf, ts.obs, ts0.obs),
                action_mask=tm(combine_leaf, ts.action_mask, ts0.action_mask),
                active=tm(combine_leaf, ts.active, ts0.active),
            )

        def some(carry):
            # Indices of up to `budget` finished envs; padding indices point past the
            # end and are dropped by the scatter.
            (idx,) = jnp.nonzero(done, size=budget, fill_value=n)
            s0, ts0 = self._vreset(_split_half(keys_at(jnp.minimum(idx, n - 1)), 1), params)
            return combine(lambda x, y: x.at[idx].set(y, mode="drop"), *carry, s0, ts0)

        def everything(carry):
            s0, ts0 = self._vreset(_split_half(env_keys(), 1), params)
            return combine(lambda x, y: jnp.where(done.reshape((n,) + (1,) * (x.ndim - 1)), y, x), *carry, s0, ts0)

        select = self.select_resets
        if select is None:
            select = not cheap_branches() and n * self.env.num_agents <= SELECT_RESETS_MAX_AGENTS
        if select:  # GPU: a reset of the whole batch costs less than a device synchronisation
            return everything((state, ts))
        count = jnp.sum(done)
        if budget >= n:  # a partial reset would be the full reset
            reset = everything
        else:
            def reset(carry):
                return jax.lax.cond(count <= budget, some, everything, carry)

        # A loop that runs its body at most once, rather than a conditional with a
        # do-nothing branch: XLA copies a conditional's pass-through operands into its
        # outputs (the whole batched state and observations, every step), while a
        # loop updates its carry in place. On most steps of most games nothing ends.
        # (It makes VecEnv.step not reverse-differentiable; AutoReset is.)
        def body(carry):
            return jnp.zeros((), bool), reset(carry[1])

        return jax.lax.while_loop(lambda carry: carry[0], body, (count > 0, (state, ts)))[1]

    def __repr__(self):
        return (f"VecEnv({self.env!r}, num_envs={self.num_envs}, reset_budget={self.reset_budget}"
                + ("" if self.select_resets is None else f", select_resets={self.select_resets}") + ")")

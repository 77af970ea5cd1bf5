"""The jaxagents backend: ``benchmark`` measures a jaxagents ``Env`` (a registered id,
an instance, ``"jaxmarl:ID"`` through ``from_jaxmarl``) in one of ``MODES``, with
``random_actions`` drawing the legal actions inside the scan; ``"pgx:ID"`` is handed to
the pgx backend.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp

from jaxagents.bench.pgx import PGX_PREFIX, benchmark_pgx
from jaxagents.bench.protocol import DEFAULT_NUM_ENVS, _check_args, _measure_sizes, _scan_rollout, machine_info
from jaxagents.bench.results import BenchResult, BenchRow
from jaxagents.compat.jaxmarl import JAXMARL_PREFIX, from_jaxmarl, make_jaxmarl
from jaxagents.core.env import Env, random_actions
from jaxagents.core.registry import make
from jaxagents.core.rng import check_rng
from jaxagents.core.wrappers.autoreset import AutoReset, VecEnv


def _reward_sum(reward: dict) -> jax.Array:
    return sum(jnp.sum(v, dtype=jnp.float32) for v in reward.values())


def carried_timestep(env: Env, ts):
    """The time step as the scan carries it: without the masks of roles declared
    ``always_legal``. Those masks are constants (all True) that ``random_actions``
    does not read, so the env still builds them but XLA need not write ~N x n bytes
    per step into the carry; every other field (observations included) stays live."""
    static = [k for k, r in env.roles.items() if r.always_legal]
    if not static:
        return ts
    return ts.replace(action_mask={k: v for k, v in ts.action_mask.items() if k not in static})


def _jaxagents_program(env: Env, mode: str, num_envs: int, steps: int, key: jax.Array, params,
                       action_rng: str = "threefry", emit: bool = False):
    """``(run, args)`` for one of ``MODES``. ``args`` = (key, state, timestep, params),
    every leaf with a leading ``num_envs`` axis except key and params; the time step
    (observations, info) is carried (``emit``: see ``_scan_rollout``)."""
    k_reset, k_run = jax.random.split(key)
    # Sampling from the *unwrapped* contract: random_actions reads env.roles and the
    # timestep's action masks, shape {role: [num_envs, n_role, ...]}; one batched call
    # (not a vmap) so that its all-legal fast path stays a real branch.
    def sample(k, state, ts):
        return random_actions(env, k, ts, batch_shape=(num_envs,), rng=action_rng)

    if mode == "vec":
        venv = VecEnv(env, num_envs)
        reset = venv.reset

        def step(k, state, ts, actions, params):
            state, ts = venv.step(k, state, actions, params)
            return state, carried_timestep(env, ts), _reward_sum(ts.reward), jnp.sum(ts.done, dtype=jnp.int32)

    else:
        inner = AutoReset(env) if mode == "autoreset" else env
        vreset = jax.vmap(inner.reset, in_axes=(0, None))
        vstep = jax.vmap(inner.step, in_axes=(0, 0, 0, None))

        def reset(k, params):
            return vreset(jax.random.split(k, num_envs), params)

        def step(k, state, ts, actions, params):
            state, ts = vstep(jax.random.split(k, num_envs), state, actions, params)
            return state, carried_timestep(env, ts), _reward_sum(ts.reward), jnp.sum(ts.done, dtype=jnp.int32)

    state, ts = jax.jit(reset)(k_reset, params)
    return _scan_rollout(sample, step, steps, emit), (k_run, state, carried_timestep(env, ts), params)


def _resolve_env(env_or_id, env_kwargs) -> tuple[Env, str]:
    if isinstance(env_or_id, str) and env_or_id.startswith(JAXMARL_PREFIX):
        # "jaxmarl:ID": a JaxMARL env through our adapter (measures what from_jaxmarl costs)
        return from_jaxmarl(make_jaxmarl(env_or_id, **(env_kwargs or {}))), env_or_id
    if isinstance(env_or_id, str):
        env = make(env_or_id, **(env_kwargs or {}))
        label = env_or_id
        if env_kwargs:
            label += "(" + ",".join(f"{k}={v}" for k, v in env_kwargs.items()) + ")"
        return env, label
    if isinstance(env_or_id, Env):
        if env_kwargs:
            raise ValueError("env_kwargs only apply to a registered id, not to an Env instance")
        return env_or_id, env_or_id.name
    raise TypeError(f"env_or_id must be a jaxagents Env or a registered id string, got {type(env_or_id).__name__}")


def benchmark(
    env_or_id: Env | str,
    num_envs: int | Sequence[int] = DEFAULT_NUM_ENVS,
    steps: int = 1000,
    repeats: int = 3,
    mode: str | Sequence[str] = "vec",
    *,
    params: Any = None,
    env_kwargs: dict | None = None,
    seed: int = 0,
    progress: Callable[[BenchRow], None] | None = None,
    action_rng: str = "threefry",
) -> BenchResult:
    """Measure the throughput of a jaxagents environment with the protocol (``jaxagents.bench``).

    Args:
        env_or_id: an ``Env`` instance (yours, wrappers included), a registered id,
            ``"jaxmarl:ID"`` for JaxMARL's ``ID`` through ``from_jaxmarl``, or ``"pgx:ID"``
            for pgx's ``ID`` with its own step (``benchmark_pgx``; mode ``"vec"`` only).
        num_envs: batch sizes to measure (positive ints), each compiled separately.
        steps: ``T``, scan length per timed run (>= 1); ``num_envs * T`` env-steps a run.
        repeats: timed runs after the warm-up (>= 1; the protocol asks for >= 3).
        mode: ``"vec"`` (default), ``"autoreset"``, ``"bare"``, ``"all"`` or a sequence
            of modes; see ``MODES``.
        params: env params (default ``env.default_params()``), validated on the host
            before compiling and passed to the program as traced inputs.
        env_kwargs: constructor arguments when ``env_or_id`` is an id.
        seed: PRNG seed of the resets and actions.
        progress: called with each ``BenchRow`` as soon as it is measured.
        action_rng: how ``random_actions`` draws the actions: ``"threefry"`` (default)
            or ``"hash"`` (``jaxagents.core.rng``; with 10^5-10^6 agents per env the
            threefry draw costs about as much as a cheap env's step on CPU).

    Returns:
        ``BenchResult`` with one row per (mode, num_envs), modes outermost.
    """
    sizes, steps, repeats, modes = _check_args(num_envs, steps, repeats, mode)
    check_rng(action_rng)
    if isinstance(env_or_id, str) and env_or_id.startswith(PGX_PREFIX):
        if modes != ("vec",) or params is not None or env_kwargs or action_rng != "threefry":
            raise ValueError(f"{env_or_id}: pgx's own step and auto-reset are measured (benchmark_pgx); "
                             "mode, params, env_kwargs and action_rng do not apply")
        return benchmark_pgx(env_or_id, sizes, steps, repeats, seed=seed, progress=progress)
    env, label = _resolve_env(env_or_id, env_kwargs)
    # Traced params cannot raise inside the compiled program, so check them here.
    params = env.validate_params(params)
    key = jax.random.key(seed)
    rows = []
    for m in modes:
        rows += _measure_sizes(lambda n, m=m: _jaxagents_program(env, m, n, steps, key, params, action_rng),
                               sizes, steps, repeats, progress, library="jaxagents", env=label, mode=m,
                               num_agents=env.num_agents, action_rng=action_rng)
    return BenchResult(rows=rows, machine=machine_info())

"""The pgx backend: ``benchmark_pgx`` measures a pgx environment with its own step and
pgx's recommended auto-reset (``pgx.experimental.auto_reset``), random legal actions
drawn by the same sampler as ours. pgx is optional: imported on first use.
"""

from __future__ import annotations

import importlib
from types import SimpleNamespace
from typing import Callable, Sequence

import jax
import jax.numpy as jnp

from jaxagents.bench.protocol import DEFAULT_NUM_ENVS, _check_args, _measure_sizes, _scan_rollout, _version, machine_info
from jaxagents.bench.results import BenchResult, BenchRow
from jaxagents.core import spaces as ja_spaces
from jaxagents.core.env import random_actions
from jaxagents.core.types import Role

PGX_PREFIX = "pgx:"


def _import_pgx():
    try:
        return importlib.import_module("pgx")
    except ImportError as e:
        raise ImportError(f"pgx benchmarks need the optional 'pgx' package: pip install pgx ({e})") from e


def _make_pgx(pgx_id: str):
    pgx = _import_pgx()
    if pgx_id.startswith(PGX_PREFIX):
        pgx_id = pgx_id[len(PGX_PREFIX):]
    available = pgx.available_envs()
    if pgx_id not in available:
        import difflib

        close = difflib.get_close_matches(pgx_id, available, n=3, cutoff=0.4)
        hint = f" Did you mean: {', '.join(close)}?" if close else ""
        raise ValueError(f"unknown pgx environment id {pgx_id!r}.{hint} Available: {', '.join(available)}")
    return pgx.make(pgx_id), pgx_id


def _pgx_parts(env, num_envs: int):
    """``(sample, step)`` of the pgx program (see ``_scan_rollout``) for a batch of
    ``num_envs`` pgx states.

    pgx has no auto-reset in ``env.step``; ``pgx.experimental.auto_reset`` is the wrapper
    pgx's own examples train with (two ``lax.cond``, which become selects under vmap: a
    reset is computed every step, JaxMARL's cost model). Its step key is
    ``split(key)[0]`` and its reset key ``split(key)[1]``, as ours.

    Actions are drawn exactly as on our side: our ``random_actions`` on a shim with one
    single-agent role per player whose mask is ``state.legal_action_mask`` (one uniform
    per player picks the k-th legal action), and the current player's draw is taken
    (our turn-based games also draw for every role and use the active one's).
    """
    from pgx.experimental import auto_reset

    n_players, n_actions = int(env.num_players), int(env.num_actions)
    names = [f"player_{i}" for i in range(n_players)]
    shim = SimpleNamespace(roles={a: Role(1, ja_spaces.Box(0.0, 1.0, (1,)), ja_spaces.Discrete(n_actions))
                                  for a in names})

    def sample_one(k, s):
        masks = {a: s.legal_action_mask[None] for a in names}
        acts = random_actions(shim, k, SimpleNamespace(action_mask=masks))
        return jnp.stack([acts[a][0] for a in names])[jnp.clip(s.current_player, 0, n_players - 1)]

    sample_batch = jax.vmap(sample_one)
    vstep = jax.vmap(auto_reset(env.step, env.init))

    def sample(k, state, aux):
        return sample_batch(jax.random.split(k, num_envs), state)

    def step(k, state, aux, actions, params):
        state = vstep(state, actions, jax.random.split(k, num_envs))
        # auto_reset keeps the finished episode's rewards and flags on the new state
        done = state.terminated | state.truncated
        return state, aux, jnp.sum(state.rewards, dtype=jnp.float32), jnp.sum(done, dtype=jnp.int32)

    return sample, step


def _pgx_program(env, num_envs: int, steps: int, key: jax.Array):
    """``(run, args)`` for pgx's ``jax.vmap(auto_reset(env.step, env.init))`` with random
    legal actions (``_pgx_parts``); args = (key, state, None, None)."""
    k_reset, k_run = jax.random.split(key)
    state = jax.jit(jax.vmap(env.init))(jax.random.split(k_reset, num_envs))
    sample, step = _pgx_parts(env, num_envs)
    return _scan_rollout(sample, step, steps), (k_run, state, None, None)


def benchmark_pgx(
    pgx_id: str,
    num_envs: int | Sequence[int] = DEFAULT_NUM_ENVS,
    steps: int = 1000,
    repeats: int = 3,
    *,
    seed: int = 0,
    progress: Callable[[BenchRow], None] | None = None,
) -> BenchResult:
    """Measure a pgx environment with the same protocol, in this process.

    The timed program is ``jit`` of ``lax.scan`` over ``steps`` of
    ``jax.vmap(pgx.experimental.auto_reset(env.step, env.init))`` (pgx's recommended
    auto-reset: it computes a reset every step under vmap) with random legal actions
    drawn like ours (see ``_pgx_program``). pgx's observation is part of its state, so
    it is computed every step, as ours is. Rows have ``library="pgx"``,
    ``mode="pgx"`` and ``num_agents = env.num_players``.

    Args:
        pgx_id: a ``pgx.make`` id (``"kuhn_poker"``, ``"leduc_holdem"``,
            ``"tic_tac_toe"``, ...), with or without the ``"pgx:"`` prefix.
        num_envs, steps, repeats, seed, progress: as in ``benchmark``.

    Raises:
        ImportError: pgx is not installed (``pip install pgx``).
        ValueError: unknown id (with close matches) or bad sizes.
    """
    sizes, steps, repeats, _ = _check_args(num_envs, steps, repeats)
    env, label = _make_pgx(pgx_id)
    key = jax.random.key(seed)
    rows = _measure_sizes(lambda n: _pgx_program(env, n, steps, key), sizes, steps, repeats, progress,
                          library="pgx", env=label, mode="pgx", num_agents=int(env.num_players))
    machine = machine_info()
    machine["pgx"] = _version("pgx")
    return BenchResult(rows=rows, machine=machine)

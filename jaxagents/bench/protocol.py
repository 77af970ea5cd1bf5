"""The measuring protocol shared by every backend: argument checks, the timed program
(``_scan_rollout``), the timing itself (``_measure``) and the machine a figure was
measured on (``machine_info``).

For every ``num_envs`` a backend builds ``sample`` and ``step`` for the whole batch;
``_scan_rollout`` puts them in ``jit(lax.scan)`` over ``steps`` steps; ``_measure``
compiles it ahead of time (``compile_s`` = trace + lower + compile), runs it once to
warm up, then times ``repeats`` runs, each ended by ``block_until_ready``. Only the
compiled scan is timed: resets, host-side validation and input transfers happen before
the clock starts.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import os
import platform
import time
from typing import Callable

import jax
import jax.numpy as jnp

from jaxagents.bench.results import BenchRow
from jaxagents.core.validate import check_positive_int, is_int

MODES = ("vec", "autoreset", "bare")
"""What ``benchmark`` can measure:

* ``"vec"``: ``VecEnv`` batched auto-reset (resets only the finished episodes). The
  protocol's number.
* ``"autoreset"``: ``jax.vmap`` of the single-env ``AutoReset`` wrapper; under vmap its
  ``cond`` becomes a select, so every step pays a full reset (JaxMARL's cost model).
* ``"bare"``: ``jax.vmap(env.step)`` with no reset at all (finished episodes keep
  stepping): a lower bound on the cost, not a usable rollout.
"""

DEFAULT_NUM_ENVS = (1, 64, 1024, 4096)


# --------------------------------------------------------------------------- machine
def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith(("model name", "hardware", "cpu model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def machine_info() -> dict:
    """What a reported figure needs besides the numbers: platform, CPU, versions,
    JAX backend and device, time. ``XLA_FLAGS``/``JAX_PLATFORMS`` change what is
    measured, so they are recorded too."""
    devices = jax.devices()
    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor(),
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "jax": jax.__version__,
        "jaxlib": _version("jaxlib"),
        "jaxagents": _version("jaxagents"),
        "backend": jax.default_backend(),
        "device_kind": devices[0].device_kind,
        "device_count": len(devices),
        "xla_flags": os.environ.get("XLA_FLAGS"),
        "jax_platforms": os.environ.get("JAX_PLATFORMS"),
        "timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


# --------------------------------------------------------------------------- validation
def _check_num_envs(num_envs) -> tuple[int, ...]:
    if is_int(num_envs):
        num_envs = (num_envs,)
    try:
        values = tuple(num_envs)
    except TypeError:
        raise ValueError(f"num_envs must be a positive int or a sequence of them, got {num_envs!r}") from None
    if not values:
        raise ValueError("num_envs must not be empty")
    for n in values:
        if not is_int(n) or n < 1:
            raise ValueError(f"num_envs must contain positive ints only, got {n!r} in {values!r}")
    return tuple(int(n) for n in values)


def _check_modes(mode) -> tuple[str, ...]:
    modes = MODES if mode == "all" else ((mode,) if isinstance(mode, str) else tuple(mode))
    bad = [m for m in modes if m not in MODES]
    if bad or not modes:
        raise ValueError(f"mode must be one of {', '.join(MODES)} or 'all' (or a sequence of them), got {mode!r}")
    return modes


def _check_args(num_envs, steps, repeats, mode=None):
    """``(sizes, steps, repeats, modes)`` checked, for every backend (``modes`` is
    ``None`` when ``mode`` is: the other libraries have one mode of their own)."""
    return (
        _check_num_envs(num_envs),
        check_positive_int("steps", steps),
        check_positive_int("repeats", repeats),
        None if mode is None else _check_modes(mode),
    )


# --------------------------------------------------------------------------- the protocol
def _scan_rollout(sample: Callable, step: Callable, steps: int, emit: bool = False) -> Callable:
    """The timed program, shared by every backend.

    ``sample(key, state, aux) -> actions`` and ``step(key, state, aux, actions, params)
    -> (state, aux, reward_sum f32[], num_done i32[])`` act on the whole batch; ``aux``
    carries every output of a step that is not in the state (our ``TimeStep``:
    observations, masks, info; JaxMARL's observations and info; nothing for pgx, whose
    observation is part of its state).

    The returned ``run(key, state, aux, params)`` gives back the final carry plus the
    reward sum and the count of finished episodes. An output that reached neither the
    carry nor the sums would be dead code that XLA removes, so that one side of a
    comparison would not pay for it: every output stays live through the carry, and
    ``tests/test_bench.py`` checks it, comparing each backend's program with
    ``emit=True``, where every step's ``aux`` is also returned (so that nothing can be
    dropped), by their compiled flops.
    """

    def run(key, state, aux, params):
        def body(carry, _):
            key, state, aux, ret, eps = carry
            key, k_act, k_step = jax.random.split(key, 3)
            actions = sample(k_act, state, aux)
            state, aux, r, d = step(k_step, state, aux, actions, params)
            return (key, state, aux, ret + r, eps + d), (aux if emit else None)

        init = (key, state, aux, jnp.zeros((), jnp.float32), jnp.zeros((), jnp.int32))
        carry, every = jax.lax.scan(body, init, None, length=steps)
        return (carry, every) if emit else carry

    return run


def time_program(run: Callable, args: tuple, repeats: int) -> tuple[float, list[float], object]:
    """AOT-compile ``run``, run it once to warm up, time ``repeats`` runs (each ended by
    ``block_until_ready``): ``(compile_s, times_s, output of the last run)``."""
    t0 = time.perf_counter()
    compiled = jax.jit(run).lower(*args).compile()
    compile_s = time.perf_counter() - t0
    out = jax.block_until_ready(compiled(*args))  # warm-up: first-run allocations, caches
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = jax.block_until_ready(compiled(*args))
        times.append(time.perf_counter() - t0)
    return compile_s, times, out


def _measure(run: Callable, args: tuple, repeats: int) -> tuple[float, list[float], int]:
    """``time_program`` of an environment rollout: ``(compile_s, times_s, episodes_per_run)``."""
    compile_s, times, out = time_program(run, args, repeats)
    return compile_s, times, int(out[-1])


def _measure_sizes(program: Callable[[int], tuple], sizes, steps: int, repeats: int,
                   progress: Callable[[BenchRow], None] | None, **fields) -> list[BenchRow]:
    """One ``BenchRow`` per size: ``program(num_envs) -> (run, args)`` measured by
    ``_measure``; ``fields`` are the rest of the row (library, env, mode, num_agents,
    action_rng). ``progress`` sees each row as soon as it is measured."""
    rows = []
    for n in sizes:
        run, args = program(n)
        compile_s, times, episodes = _measure(run, args, repeats)
        rows.append(BenchRow.from_times(num_envs=n, steps=steps, compile_s=compile_s, times_s=times,
                                        episodes=episodes, **fields))
        if progress is not None:
            progress(rows[-1])
    return rows

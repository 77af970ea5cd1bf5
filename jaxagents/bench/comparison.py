"""Ours against another library, back to back in one process (the only valid
comparison): ``compare`` (JaxMARL) and ``compare_pgx`` measure ours then theirs at each
``num_envs``, so that both see the same machine state.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from jaxagents.bench.jaxmarl import benchmark_jaxmarl
from jaxagents.bench.ours import benchmark
from jaxagents.bench.pgx import _make_pgx, benchmark_pgx
from jaxagents.bench.protocol import DEFAULT_NUM_ENVS, _check_args
from jaxagents.bench.results import BenchResult, BenchRow, CompareResult
from jaxagents.compat.jaxmarl.make import import_jaxmarl
from jaxagents.core.env import Env


def _compare(measure_theirs: Callable[[int], BenchResult], check_theirs: Callable[[], Any], env_or_id, num_envs,
             steps, repeats, mode, params, env_kwargs, seed, progress) -> CompareResult:
    """Ours then theirs at each size, in this process; ``measure_theirs(n)`` measures
    the other library at one size, ``check_theirs()`` fails (library missing, unknown
    id) before anything is measured."""
    sizes, steps, repeats, modes = _check_args(num_envs, steps, repeats, mode)
    check_theirs()
    ours, theirs = [], []
    for n in sizes:
        ours.append(benchmark(env_or_id, (n,), steps, repeats, mode, params=params, env_kwargs=env_kwargs,
                              seed=seed, progress=progress))
        theirs.append(measure_theirs(n))
    ours_r, theirs_r = BenchResult.merge(ours), BenchResult.merge(theirs)
    # Modes outermost, like benchmark(): a stable sort on the mode alone keeps the
    # num_envs order the caller gave.
    order = {m: i for i, m in enumerate(modes)}
    ours_r.rows.sort(key=lambda r: order[r.mode])
    ours_r.machine = theirs_r.machine  # has the other library's version too
    return CompareResult(ours=ours_r, theirs=theirs_r)


def compare(
    env_or_id: Env | str,
    jaxmarl_id: str,
    num_envs: int | Sequence[int] = DEFAULT_NUM_ENVS,
    steps: int = 1000,
    repeats: int = 3,
    mode: str | Sequence[str] = "vec",
    *,
    jaxmarl_kwargs: dict | None = None,
    params: Any = None,
    env_kwargs: dict | None = None,
    seed: int = 0,
    progress: Callable[[BenchRow], None] | None = None,
) -> CompareResult:
    """Ours against JaxMARL's, back to back in this process for each ``num_envs``
    (ours first, then JaxMARL's, at the same size) so that both see the same machine
    state. Arguments as in ``benchmark`` / ``benchmark_jaxmarl`` (``jaxmarl_kwargs``
    are its ``make_kwargs``).

    Returns:
        ``CompareResult``; ``.ratios()`` / ``.ratio_table()`` give ours / JaxMARL's.
    """
    def theirs(n):
        return benchmark_jaxmarl(jaxmarl_id, (n,), steps, repeats, seed=seed, progress=progress,
                                 **(jaxmarl_kwargs or {}))

    return _compare(theirs, import_jaxmarl, env_or_id, num_envs, steps, repeats, mode, params, env_kwargs, seed,
                    progress)


def compare_pgx(
    env_or_id: Env | str,
    pgx_id: str,
    num_envs: int | Sequence[int] = DEFAULT_NUM_ENVS,
    steps: int = 1000,
    repeats: int = 3,
    mode: str | Sequence[str] = "vec",
    *,
    params: Any = None,
    env_kwargs: dict | None = None,
    seed: int = 0,
    progress: Callable[[BenchRow], None] | None = None,
) -> CompareResult:
    """Ours against pgx's, back to back in this process for each ``num_envs`` (ours
    first). Arguments as in ``benchmark`` / ``benchmark_pgx``; e.g.
    ``compare_pgx("leduc_poker", "leduc_holdem")``.

    Returns:
        ``CompareResult``; ``.ratios()`` / ``.ratio_table()`` give ours / pgx's.
    """
    def theirs(n):
        return benchmark_pgx(pgx_id, (n,), steps, repeats, seed=seed, progress=progress)

    return _compare(theirs, lambda: _make_pgx(pgx_id), env_or_id, num_envs, steps, repeats, mode, params, env_kwargs,
                    seed, progress)

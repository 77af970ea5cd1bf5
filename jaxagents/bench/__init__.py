"""Throughput harness: the measuring protocol of ``DESIGN.md`` as a library and a CLI.

The protocol, for every ``num_envs``:

1. build the rollout: ``jit`` of a ``lax.scan`` over ``steps`` batched steps, auto-reset
   included, with random *legal* actions sampled inside the scan;
2. compile it ahead of time (``jit(f).lower(...).compile()``) and report that time
   separately (``compile_s`` = trace + lower + compile);
3. run it once to warm up, then ``repeats`` (>= 3 for a reported figure) timed runs,
   each ended by ``block_until_ready``;
4. report the best and the median env-steps/s (``num_envs * steps / seconds``) and
   agent-steps/s (env-steps/s times the agents per environment).

Only the compiled scan is timed: the initial reset, host-side validation and the
transfer of inputs happen before the clock starts.

Three lines from Python::

    from jaxagents.bench import benchmark
    result = benchmark("prisoners_dilemma", num_envs=(1, 64, 1024, 4096), steps=1000)
    print(result.table())

``benchmark_jaxmarl`` / ``benchmark_pgx`` measure a JaxMARL / pgx environment with the
same protocol, and ``compare`` / ``compare_pgx`` run ours and theirs back to back in one
process (the only valid comparison).

Counting is the same for every library: one env-step is one call of the batched step for
one environment (auto-reset included), so env-steps/s = ``num_envs * steps / seconds``;
agent-steps/s multiplies by the agents *per environment* (``env.num_agents``, JaxMARL's
``num_agents``, pgx's ``num_players``). In turn-based games (Kuhn, Leduc, tic-tac-toe,
Hanabi) one agent acts per env-step, so acting agent-steps/s equal env-steps/s.

Modules: ``protocol`` (argument checks, the timed ``lax.scan`` program, the timing,
``machine_info``), ``results`` (``BenchRow``, ``BenchResult``, ``CompareResult``: tables,
JSON, plots), one per backend (``ours``: ``benchmark``; ``jaxmarl``:
``benchmark_jaxmarl``; ``pgx``: ``benchmark_pgx``) and ``compare`` (``compare``,
``compare_pgx``). Everything public is importable from ``jaxagents.bench``.
"""

from jaxagents.bench.comparison import compare, compare_pgx
from jaxagents.bench.jaxmarl import benchmark_jaxmarl
from jaxagents.bench.ours import benchmark, carried_timestep
from jaxagents.bench.pgx import PGX_PREFIX, _pgx_parts, benchmark_pgx  # noqa: F401
from jaxagents.bench.protocol import DEFAULT_NUM_ENVS, MODES, _measure, machine_info  # noqa: F401
from jaxagents.bench.results import BenchResult, BenchRow, CompareResult
from jaxagents.compat.jaxmarl.make import JAXMARL_PREFIX

# _measure (experiments/economy_throughput.py times its own program with it)
# and _pgx_parts (tests) stay reachable as bench._measure / bench._pgx_parts.

__all__ = [
    "MODES", "DEFAULT_NUM_ENVS", "BenchRow", "BenchResult", "CompareResult",
    "benchmark", "benchmark_jaxmarl", "benchmark_pgx", "compare", "compare_pgx", "machine_info",
    "carried_timestep", "JAXMARL_PREFIX", "PGX_PREFIX",
]

"""Ours against pgx, alternated in one process and compared by CPU time, for a shared
machine where ``jaxagents bench --compare-pgx`` (ours then pgx, each timed in a block)
swings with the other workers' load.

The programs are the bench's own (``jaxagents.bench.ours._jaxagents_program`` in the
``vec`` and ``autoreset`` modes, ``jaxagents.bench.pgx._pgx_program``: the same
protocol, random legal actions from the same sampler, every output carried). Each is
compiled once per size and warmed up; then they run in turn ``--rounds`` times, and
the best wall-clock and the best process CPU time (``time.process_time``, every XLA
thread) of each are compared::

    python experiments/pgx_alternate.py connect_four connect_four --num-envs 1 64 1024 4096
    python experiments/pgx_alternate.py tic_tac_toe tic_tac_toe --num-envs 1 64 1024 4096
"""

from __future__ import annotations

import argparse
import json
import time

import jax

import jaxagents
from jaxagents.bench.ours import _jaxagents_program
from jaxagents.bench.pgx import _make_pgx, _pgx_program

MODES = ("vec", "autoreset")


def _load() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def alternate(ours_id: str, pgx_id: str, sizes, steps: int, rounds: int, seed: int = 0) -> dict:
    """``{num_envs: {program: {"wall": [s], "cpu": [s]}}}`` for ``vec``, ``autoreset`` and
    ``pgx``, each program run ``rounds`` times in turn."""
    env = jaxagents.make(ours_id)
    penv, _ = _make_pgx(pgx_id)
    key = jax.random.key(seed)
    out = {}
    for n in sizes:
        programs = {}
        for mode in MODES:
            run, args = _jaxagents_program(env, mode, n, steps, key, env.default_params())
            programs[mode] = (jax.jit(run).lower(*args).compile(), args)
        run, args = _pgx_program(penv, n, steps, key)
        programs["pgx"] = (jax.jit(run).lower(*args).compile(), args)
        for compiled, args in programs.values():
            jax.block_until_ready(compiled(*args))  # warm-up
        times = {k: {"wall": [], "cpu": []} for k in programs}
        for _ in range(rounds):
            for k, (compiled, args) in programs.items():
                w0, c0 = time.perf_counter(), time.process_time()
                jax.block_until_ready(compiled(*args))
                times[k]["wall"].append(time.perf_counter() - w0)
                times[k]["cpu"].append(time.process_time() - c0)
        out[n] = times
        line = [f"num_envs={n}"]
        for k, t in times.items():
            line.append(f"{k} {n * steps / min(t['wall']):,.0f} env-steps/s wall, {n * steps / min(t['cpu']):,.0f} per CPU-s")
        for mode in MODES:
            line.append(f"{mode}/pgx: wall {min(times['pgx']['wall']) / min(times[mode]['wall']):.2f}, "
                        f"CPU {min(times['pgx']['cpu']) / min(times[mode]['cpu']):.2f}")
        print(" | ".join(line), flush=True)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("ours_id")
    p.add_argument("pgx_id")
    p.add_argument("--num-envs", type=int, nargs="+", default=[1, 64, 1024, 4096])
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--json", help="write every run's times here")
    from jaxagents.outputs import check_outputs

    args = check_outputs(p.parse_args())
    print(f"{args.ours_id} against pgx {args.pgx_id}; {time.strftime('%H:%M:%S', time.gmtime())} UTC, load {_load()}")
    out = alternate(args.ours_id, args.pgx_id, args.num_envs, args.steps, args.rounds)
    print(f"end {time.strftime('%H:%M:%S', time.gmtime())} UTC, load {_load()}")
    if args.json:
        from jaxagents.tracking import atomic_write

        atomic_write(args.json, json.dumps({str(k): v for k, v in out.items()}))


if __name__ == "__main__":
    main()

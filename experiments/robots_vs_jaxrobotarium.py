"""Side by side: ``robots_navigation`` against JaxRobotarium's navigation, one process,
one timing harness, the two sides measured alternately (ours, theirs, ours, theirs...).

Both sides are measured through the bench's own programs (``jaxagents.bench``), so that
the figure is the one a user gets:

* ours: what ``jaxagents bench robots_navigation --mode autoreset --env-kwarg ...``
  times (``jaxagents.bench.ours._jaxagents_program``): ``vmap`` of the public
  ``AutoReset(env).step`` (under ``vmap`` its ``cond`` is a select, so a reset is
  computed for every environment at every step), the env made by the registry from the
  same keyword arguments as the command line's;
* theirs: what ``jaxagents bench`` times for a JaxMARL environment
  (``jaxagents.bench.jaxmarl._jaxmarl_program``): ``vmap`` of JaxRobotarium's ``step``,
  which steps, computes a reset and selects on ``done`` every step.

One protocol for both (``jaxagents.bench.protocol._scan_rollout``): ``jit(lax.scan)``
over the steps, per step ``jax.random.split`` of the key, uniform random legal actions
from ``jaxagents.core.random_actions`` (4 or 3 robots, 5 discrete waypoint moves), and
**every output of a step carried** in the scan's carry (the state; our ``TimeStep`` with
observations and info; their observations and info; reward sum and finished-episode
count), so XLA drops nothing on either side. ``--check-live`` verifies this for every
(robots, mode) before timing, as ``tests/test_bench.py`` does: the timed program's
compiled flops against those of the same program that also returns every step's outputs.
Compile time is not timed; one warm-up run, then ``--repeats`` alternated runs.
``--clock cpu`` times a run by this process's CPU time (steadier on a shared machine).

Modes (both sides; 30 simulator ticks of 0.033 s per env-step):

* ``off-hold``: no safety filter, controller once per step, command held for the ticks
  (ours ``safety=False zero_order_hold=True``; JaxRobotarium ``eval=False``, no
  ``barrier_fn``);
* ``off-tick``: no filter, controller at every tick (JaxRobotarium ``eval=True``);
* ``on-hold``: filter once per step, held (ours: the guarded filter with the per-tick
  body/wall guard; JaxRobotarium: ``barrier_fn="robust_barriers"``, ``eval=False``);
* ``on-tick``: filter and controller at every tick (JaxRobotarium: ``eval=True``);
* ``robust-hold`` / ``robust-tick``: ours with ``barrier="robust"`` (their barrier's
  formulation, solved to 1e-4 m/s) against the same JaxRobotarium modes as ``on-*``.

JaxRobotarium's code is not part of this repository, and nothing here puts it on the
import path: run the script with ``PYTHONPATH`` naming a folder that holds
``jaxrobotarium/`` and ``rps_jax/``. Both are public::

    git clone https://github.com/GT-STAR-Lab/JaxRobotarium                # measured: 2c162be
    git clone https://github.com/shalin-jain/robotarium_python_simulator  # measured: master 693aa93
    mkdir -p experiments_tmp/jaxrobotarium && cp -r JaxRobotarium/jaxrobotarium \\
        robotarium_python_simulator/rps_jax experiments_tmp/jaxrobotarium/
    .venv/bin/pip install jaxopt   # their barrier's QP solver (not a jaxagents dependency)

    PYTHONPATH=experiments_tmp/jaxrobotarium python experiments/robots_vs_jaxrobotarium.py \\
        --robots 4 3 --num-envs 1 64 1024 --modes off-hold off-tick on-hold on-tick --repeats 5 \\
        --check-live --json experiments_tmp/robots_vs_jr.json

Which filter JaxRobotarium runs depends on ``rps_jax/utilities/barrier_certificates2.py``
(the script prints the solver it finds there):

* the commit JaxRobotarium pins as its submodule, 335fde9 (reachable from GitHub's code
  index, not from a clone of the repository's branches): ``jaxopt.OSQP(tol=1e-4,
  maxiter=100)``, the pair and wheel-speed rows as inequalities, float64 switched off.
  This is JaxRobotarium's filter. To measure it, copy the folder to
  ``experiments_tmp/jaxrobotarium_osqp``, replace that file by 335fde9's and pass
  ``PYTHONPATH=experiments_tmp/jaxrobotarium_osqp``;
* ``master``: ``jaxopt.BoxCDQP(tol=1e-6, maxiter=500)``, the constraint bounds passed as
  box bounds on the wheel speeds (the pair rows are not enforced);
* branch ``cbf`` (d17f6ea): ``jaxopt.BoxOSQP(tol=1e-6, maxiter=100)``, enforced; delete
  its ``jax.config.update("jax_enable_x64", True)`` line (float64 would apply to both
  sides).

Reported: best and median env-steps/s of each side and their ratio (ours / theirs), and
the ``jaxagents bench`` command that measures our side alone.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import statistics
import time

import jax

from jaxagents.bench.jaxmarl import _jaxmarl_program
from jaxagents.bench.ours import _jaxagents_program, _resolve_env
from jaxagents.bench.protocol import machine_info
from jaxagents.outputs import check_outputs  # output paths checked before computing

ENV_ID = "robots_navigation"
MODES = ("off-hold", "off-tick", "on-hold", "on-tick", "robust-hold", "robust-tick")
# scan length per timed run, by mode kind and number of environments (each run ~0.1-1 s)
STEPS = {"cheap": {1: 400, 64: 40, 1024: 6}, "tick": {1: 40, 64: 6, 1024: 2}}


def parse():
    a = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    a.add_argument("--robots", type=int, nargs="+", default=[4, 3])
    a.add_argument("--num-envs", type=int, nargs="+", default=[1, 64, 1024])
    a.add_argument("--modes", nargs="+", default=list(MODES[:4]), choices=MODES)
    a.add_argument("--repeats", type=int, default=5)
    a.add_argument("--steps-scale", type=float, default=1.0, help="multiply the scan lengths")
    a.add_argument("--seed", type=int, default=0)
    a.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                   help="wall-clock time of each run, or this process's CPU time (steadier on a shared "
                        "machine: other processes' load does not count; XLA's worker threads do)")
    a.add_argument("--check-live", action="store_true",
                   help="before timing, check for every (robots, mode) that neither side's timed program "
                        "drops an output (compiled flops against the program returning every step's outputs)")
    a.add_argument("--json", default=None, help="write every timing here")
    return check_outputs(a.parse_args())


# --------------------------------------------------------------------------- the two sides
def ours_kwargs(n, mode):
    """Constructor arguments of our env for ``mode`` (the ``--env-kwarg`` of the bench)."""
    kw = {"num_robots": n, "safety": not mode.startswith("off"), "zero_order_hold": mode.endswith("hold")}
    if mode.startswith("robust"):
        kw["barrier"] = "robust"
    return kw


def bench_command(n, mode, num_envs, steps):
    """The ``jaxagents bench`` command that times our side of one row alone."""
    kw = " ".join(f"--env-kwarg {k}={v}" for k, v in ours_kwargs(n, mode).items())
    return f"jaxagents bench {ENV_ID} --mode autoreset --num-envs {num_envs} --steps {steps} {kw}"


def ours_program(n, mode, num_envs, steps, seed=0, emit=False):
    """``(run, args)``: the program ``jaxagents bench --mode autoreset`` times."""
    env, _ = _resolve_env(ENV_ID, ours_kwargs(n, mode))
    params = env.validate_params(None)
    return _jaxagents_program(env, "autoreset", num_envs, steps, jax.random.key(seed), params, emit=emit)


def import_theirs():
    """JaxRobotarium's ``Navigation``, from the import path (``PYTHONPATH``)."""
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # it prints on import
            from jaxrobotarium.scenarios.navigation import Navigation as Theirs
    except ImportError as e:
        raise SystemExit(f"JaxRobotarium not importable ({e}); run with PYTHONPATH=<folder with jaxrobotarium/ "
                         "and rps_jax/>, e.g. PYTHONPATH=experiments_tmp/jaxrobotarium (module docstring)") from None
    return Theirs


def their_filter():
    """Where JaxRobotarium was imported from and the QP solver its barrier module builds."""
    import jaxrobotarium
    import rps_jax.utilities.barrier_certificates2 as bc

    src = open(bc.__file__).read()
    solver = re.findall(r"\b((?:Box)?(?:CD)?(?:OSQP|QP))\((tol=[^)]*)\)", src)
    x64 = bool(re.search(r"^\s*jax\.config\.update\(\s*[\"']jax_enable_x64[\"']\s*,\s*True", src, re.M))
    return {"jaxrobotarium": os.path.dirname(jaxrobotarium.__file__), "barrier_file": bc.__file__,
            "solver": ", ".join(f"{s}({args})" for s, args in solver) or "unknown", "enables_x64": x64}


def theirs_program(Theirs, n, mode, num_envs, steps, seed=0, emit=False):
    """``(run, args)``: the program ``jaxagents bench`` times for a JaxMARL env."""
    ctrl = {"controller": "clf_uni_position"}
    if not mode.startswith("off"):
        ctrl["barrier_fn"] = "robust_barriers"
    env = Theirs(n, max_steps=100, controller=ctrl, update_frequency=30, eval=mode.endswith("tick"))
    return _jaxmarl_program(env, num_envs, steps, jax.random.key(seed), emit)


# --------------------------------------------------------------------------- checks and timing
def flops(program):
    run, args = program
    return jax.jit(run).lower(*args).compile().cost_analysis()["flops"]


def check_live(Theirs, n, mode):
    """``{side: (timed flops, flops with every output returned)}`` at 2 envs, 2 steps;
    raises when the timed program computes less than 99% (an output was dropped)."""
    out = {}
    for side, prog in (("ours", lambda e: ours_program(n, mode, 2, 2, emit=e)),
                       ("theirs", lambda e: theirs_program(Theirs, n, mode, 2, 2, emit=e))):
        timed, full = flops(prog(False)), flops(prog(True))
        out[side] = (timed, full)
        if timed < 0.99 * full:
            raise SystemExit(f"{side}, {n} robots, {mode}: the timed program drops outputs "
                             f"({timed:,.0f} flops against {full:,.0f} with every output returned)")
    return out


def compiled(program, clock="wall"):
    """``(call, compile_s)``: ``call()`` runs the AOT-compiled program once and returns its time."""
    run, args = program
    t = time.perf_counter()
    f = jax.jit(run).lower(*args).compile()
    compile_s = time.perf_counter() - t
    now = time.perf_counter if clock == "wall" else time.process_time

    def call():
        t = now()
        jax.block_until_ready(f(*args))
        return now() - t

    call()  # warm-up
    return call, compile_s


def main():
    a = parse()
    Theirs = import_theirs()
    filt = their_filter()
    rows, live = [], {}
    print(f"jax {jax.__version__}, clock {a.clock}, load {os.getloadavg()[0]:.2f} at start")
    print(f"JaxRobotarium from {filt['jaxrobotarium']}; its filter: {filt['solver']}"
          + (" (enables float64!)" if filt["enables_x64"] else ""))
    if a.check_live:
        for n in a.robots:
            for mode in a.modes:
                live[f"{n} {mode}"] = c = check_live(Theirs, n, mode)
                print(f"live outputs, {n} robots, {mode}: " + ", ".join(
                    f"{s} {t:,.0f} / {f:,.0f} flops" for s, (t, f) in c.items()), flush=True)
    print("| robots | mode | envs | steps/run | ours best (median) | JaxRobotarium best (median) | ratio best (median) |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for n in a.robots:
        for mode in a.modes:
            for ne in a.num_envs:
                kind = "tick" if mode.endswith("tick") and not mode.startswith("off") else "cheap"
                steps = max(1, int(a.steps_scale * STEPS[kind].get(ne, max(1, 6144 // ne))))
                ours, c_ours = compiled(ours_program(n, mode, ne, steps, a.seed), a.clock)
                theirs, c_theirs = compiled(theirs_program(Theirs, n, mode, ne, steps, a.seed), a.clock)
                t_o, t_t = [], []
                for _ in range(a.repeats):  # interleaved
                    t_o.append(ours())
                    t_t.append(theirs())
                work = ne * steps
                o_b, o_m = work / min(t_o), work / statistics.median(t_o)
                t_b, t_m = work / min(t_t), work / statistics.median(t_t)
                rows.append(dict(robots=n, mode=mode, num_envs=ne, steps=steps, ours_s=t_o, theirs_s=t_t,
                                 ours_best=o_b, ours_median=o_m, theirs_best=t_b, theirs_median=t_m,
                                 compile_ours_s=c_ours, compile_theirs_s=c_theirs,
                                 ours_command=bench_command(n, mode, ne, steps)))
                print(f"| {n} | {mode} | {ne} | {steps} | {o_b:,.0f} ({o_m:,.0f}) | {t_b:,.0f} ({t_m:,.0f}) | "
                      f"**{o_b / t_b:.2f}x** ({o_m / t_m:.2f}x) |", flush=True)
    print(f"load {os.getloadavg()[0]:.2f} at end")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"machine": machine_info(), "clock": a.clock, "jaxrobotarium": filt,
                       "live_flops": live, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()

"""Side by side: ``robots_navigation`` against JaxRobotarium's navigation, one process,
one timing harness, the two sides measured alternately (ours, theirs, ours, theirs...).

What one env-step is, on both sides: 4 (or 3) robots, discrete actions (5 waypoint
moves of 0.2 m), 30 simulator ticks of 0.033 s, then a reset of the environment paid on
every step and a select on ``done`` (JaxRobotarium's ``step`` always resets; ours is
stepped and reset the same way: ``step_env``, ``reset_env``, ``where(done, ...)``).
Actions are uniform integers drawn inside the scan; rewards are summed so nothing is dead
code. The shared harness (the per-step key splits and action draws, the same for both
sides) uses ``jaxagents.core.threefry`` by default (``--harness fused``: the keys of
``jax.random.split`` bit for bit, one kernel instead of JAX's rolled loop, ~2 us less per
step at 1 env on either side); ``--harness jax`` keeps ``jax.random.split`` / ``randint``.
``--clock cpu`` times each run by this process's CPU time instead of the wall clock
(steadier on a shared machine). The timed program is ``jit(lax.scan(steps) of vmap(step + reset))``, compiled
ahead of time; compile time is not timed.

Modes (both sides):

* ``off-hold``: no safety filter, controller once per step, command held for the ticks
  (JaxRobotarium: ``eval=False``, no ``barrier_fn``);
* ``off-tick``: no filter, controller at every tick (JaxRobotarium: ``eval=True``);
* ``on-hold``: filter once per step, held (ours: the guarded filter with the per-tick
  body/wall guard; JaxRobotarium: ``barrier_fn="robust_barriers"``, ``eval=False``);
* ``on-tick``: filter and controller at every tick (JaxRobotarium: ``eval=True``);
* ``robust-hold`` / ``robust-tick``: ours with ``barrier="robust"`` (their barrier's
  formulation, solved to 1e-4 m/s) against the same JaxRobotarium modes as ``on-*``.

JaxRobotarium's code is not part of this repository. Get it (both public) and point
``--jaxrobotarium`` at a folder holding ``jaxrobotarium/`` and ``rps_jax/``::

    git clone https://github.com/GT-STAR-Lab/JaxRobotarium        # measured: 2c162be
    git clone https://github.com/shalin-jain/robotarium_python_simulator  # measured: master 693aa93
    mkdir -p experiments_tmp/jaxrobotarium && cp -r JaxRobotarium/jaxrobotarium \\
        robotarium_python_simulator/rps_jax experiments_tmp/jaxrobotarium/
    .venv/bin/pip install jaxopt   # their barrier's QP solver (not a jaxagents dependency)

    python experiments/robots_vs_jaxrobotarium.py --robots 3 4 --num-envs 1 64 1024 \\
        --modes off-hold off-tick on-hold on-tick --repeats 5 --json experiments_tmp/robots_vs_jr.json

The submodule commit JaxRobotarium pins (335fde9) is not public; its ``master`` solves the
barrier QP with ``jaxopt.BoxCDQP(tol=1e-6, maxiter=500)``, passing the constraint bounds as
box bounds on the wheel speeds (the pair rows are not enforced). Its branch ``cbf`` (d17f6ea)
solves it with ``jaxopt.BoxOSQP(tol=1e-6, maxiter=100)`` and enforces them; to measure that
one, copy the folder, replace ``rps_jax/utilities/barrier_certificates2.py`` by the
branch's and delete its ``jax.config.update("jax_enable_x64", True)`` line (float64 would
apply to both sides), then pass the copy as ``--jaxrobotarium``. Reported: best and
median env-steps/s of each side and their ratio (ours / theirs).
"""

from __future__ import annotations

import argparse
from jaxagents.cli import check_outputs  # output paths checked before computing
import json
import os
import statistics
import sys
import time

import jax
import jax.numpy as jnp

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)

from jaxagents_environments.robots import Navigation  # noqa: E402

MODES = ("off-hold", "off-tick", "on-hold", "on-tick", "robust-hold", "robust-tick")
# scan length per timed run, by mode kind and number of environments (each run ~0.1-1 s)
STEPS = {"cheap": {1: 400, 64: 40, 1024: 6}, "tick": {1: 40, 64: 6, 1024: 2}}


def parse():
    a = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    a.add_argument("--jaxrobotarium", default=os.path.join(ROOT, "experiments_tmp", "jaxrobotarium"),
                   help="folder with jaxrobotarium/ and rps_jax/ (default experiments_tmp/jaxrobotarium)")
    a.add_argument("--robots", type=int, nargs="+", default=[3, 4])
    a.add_argument("--num-envs", type=int, nargs="+", default=[1, 64, 1024])
    a.add_argument("--modes", nargs="+", default=list(MODES[:4]), choices=MODES)
    a.add_argument("--repeats", type=int, default=5)
    a.add_argument("--steps-scale", type=float, default=1.0, help="multiply the scan lengths")
    a.add_argument("--harness", choices=("fused", "jax"), default="fused",
                   help="the shared harness's key splits and action draws: jax.random's rolled threefry "
                        "('jax') or the same hash as one fused kernel ('fused', jaxagents.core.threefry)")
    a.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                   help="wall-clock time of each run, or this process's CPU time (steadier on a shared "
                        "machine: other processes' load does not count; XLA's worker threads do)")
    a.add_argument("--json", default=None, help="write every timing here")
    return check_outputs(a.parse_args())


def import_theirs(path):
    path = os.path.abspath(path)
    for sub in ("", "sim"):  # rps_jax beside jaxrobotarium/, or under sim/
        if os.path.isdir(os.path.join(path, sub, "rps_jax")):
            sys.path.insert(0, os.path.join(path, sub))
    sys.path.insert(0, path)
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):  # jaxmarl prints on import
        from jaxrobotarium.scenarios.navigation import Navigation as Theirs
    return Theirs


def harness(kind):
    """``(split, actions)`` of the shared harness: ``split(key, num)`` and
    ``actions(key, shape)`` (uniform integers in [0, 5)). Both sides get the same keys and
    actions; ``fused`` only makes them cheaper to compute (one kernel instead of JAX's
    rolled threefry loop, which costs ~2 us per step at 1 env on either side)."""
    if kind == "jax":
        return jax.random.split, lambda k, shape: jax.random.randint(k, shape, 0, 5)
    from jaxagents.core import threefry

    return threefry.split, lambda k, shape: jnp.minimum(jnp.floor(5 * threefry.uniform(k, shape)), 4).astype(jnp.int32)


def ours_program(n, mode, num_envs, steps, harness_kind="fused"):
    safety = not mode.startswith("off")
    env = Navigation(num_robots=n, safety=safety, zero_order_hold=mode.endswith("hold"),
                     barrier="robust" if mode.startswith("robust") else "guarded")
    p = env.default_params()

    from jaxagents.core import threefry

    split, draw = harness(harness_kind)

    def one(k, s, a):
        k_step, k_reset = threefry.split(k)  # our side's own split (jax.random's keys, one kernel)
        s1, ts = env.step_env(k_step, s, {"robot": a}, p)
        s0, _ = env.reset_env(k_reset, p)
        done = ts.terminated | ts.truncated
        return jax.tree_util.tree_map(lambda x, y: jnp.where(done, x, y), s0, s1), jnp.sum(ts.reward["robot"])

    batch = jax.vmap(one)

    def run(key, state):
        def body(s, k):
            ka, ks = split(k)
            s, r = batch(split(ks, num_envs), s, draw(ka, (num_envs, n)))
            return s, jnp.sum(r)

        return jax.lax.scan(body, state, jax.random.split(key, steps))

    state = jax.vmap(env.reset_env, (0, None))(jax.random.split(jax.random.key(0), num_envs), p)[0]
    return run, state


def theirs_program(Theirs, n, mode, num_envs, steps, harness_kind="fused"):
    ctrl = {"controller": "clf_uni_position"}
    if not mode.startswith("off"):
        ctrl["barrier_fn"] = "robust_barriers"
    env = Theirs(n, max_steps=100, controller=ctrl, update_frequency=30, eval=mode.endswith("tick"))
    agents = list(env.agents)
    step = jax.vmap(env.step)
    split, draw = harness(harness_kind)

    def run(key, state):
        def body(s, k):
            ka, ks = split(k)
            a = draw(ka, (num_envs, n))
            _, s, rew, _, _ = step(split(ks, num_envs), s, {g: a[:, i] for i, g in enumerate(agents)})
            return s, sum(jnp.sum(rew[g]) for g in agents)

        return jax.lax.scan(body, state, jax.random.split(key, steps))

    state = jax.vmap(env.reset)(jax.random.split(jax.random.key(0), num_envs))[1]
    return run, state


def compiled(run, state, clock="wall"):
    t = time.perf_counter()
    f = jax.jit(run).lower(jax.random.key(1), state).compile()
    compile_s = time.perf_counter() - t
    now = time.perf_counter if clock == "wall" else time.process_time

    def call():
        t = now()
        jax.block_until_ready(f(jax.random.key(1), state))
        return now() - t

    call()  # warm-up
    return call, compile_s


def main():
    a = parse()
    Theirs = import_theirs(a.jaxrobotarium)
    rows = []
    print(f"jax {jax.__version__}, harness {a.harness}, clock {a.clock}, load {os.getloadavg()[0]:.2f} at start")
    print("| robots | mode | envs | steps/run | ours best (median) | JaxRobotarium best (median) | ratio best (median) |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for n in a.robots:
        for mode in a.modes:
            for ne in a.num_envs:
                kind = "tick" if mode.endswith("tick") and not mode.startswith("off") else "cheap"
                table = STEPS[kind]
                steps = max(1, int(a.steps_scale * table.get(ne, max(1, 6144 // ne))))
                ours, c_ours = compiled(*ours_program(n, mode, ne, steps, a.harness), a.clock)
                theirs, c_theirs = compiled(*theirs_program(Theirs, n, mode, ne, steps, a.harness), a.clock)
                t_o, t_t = [], []
                for _ in range(a.repeats):  # interleaved
                    t_o.append(ours())
                    t_t.append(theirs())
                work = ne * steps
                o_b, o_m = work / min(t_o), work / statistics.median(t_o)
                t_b, t_m = work / min(t_t), work / statistics.median(t_t)
                rows.append(dict(robots=n, mode=mode, num_envs=ne, steps=steps, ours_s=t_o, theirs_s=t_t,
                                 ours_best=o_b, ours_median=o_m, theirs_best=t_b, theirs_median=t_m,
                                 compile_ours_s=c_ours, compile_theirs_s=c_theirs))
                print(f"| {n} | {mode} | {ne} | {steps} | {o_b:,.0f} ({o_m:,.0f}) | {t_b:,.0f} ({t_m:,.0f}) | "
                      f"**{o_b / t_b:.2f}x** ({o_m / t_m:.2f}x) |", flush=True)
    print(f"load {os.getloadavg()[0]:.2f} at end")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"jax": jax.__version__, "harness": a.harness, "clock": a.clock, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()

"""Runs: a config (YAML or dict) -> a run directory with the resolved config,
metrics, checkpoints, a learning-curve plot and a results table.

This is what ``jaxagents train`` and the scripts in ``baselines/`` call; a run's
checkpoints are read back by ``jaxagents.runs`` (``restore``, ``checkpoints``,
``evaluate``: ``jaxagents eval``). Training goes in segments of ``checkpoint_every`` updates,
each one jit-compiled call of the learner's update ``scan``ned (and ``vmap``ped over
``num_seeds`` seeds); after each segment the full train state is checkpointed and
the segment's metrics are logged. A killed run restarted with ``resume`` restores
the last checkpoint and replays the same segments, so its results are
bit-identical to an uninterrupted run.

(Over 400 lines because ``run`` is one ordered sequence -- check, lay out, restore,
segments, divergence, results -- with the helpers only it uses; configs, building,
run directories, the results table, checkpoints and reading runs back are ``config.py``,
``build.py``, ``rundir.py``, ``results.py``, ``checkpoint.py`` and ``runs.py``.)

Nothing is lost or overwritten:

* everything is checked before anything is written -- every config section
  (``jaxagents.config``), the environment, the learner's construction and whether
  the train state fits in memory; the run directory is taken first (``RunLock``: one
  run per directory) and removed again if the run stops before writing into it;
* a file that cannot be written (full disk, read-only directory) stops the run with
  one line naming it (``RunWriteError``); the checkpoints before it are intact;
* a new run refuses a directory that is not empty (``resume`` continues it,
  ``overwrite=True`` deletes the old run first);
* files are written atomically (a temporary file and a rename); a half-written last
  line of ``metrics.jsonl`` is dropped on resume; a checkpoint that does not restore
  is moved aside and the next older one is used (``Checkpointer.restore_newest``);
* SIGTERM (a preempted machine, a cancelled SLURM job) stops the run after the
  running segment, once its checkpoint is written, on every process together
  (``jaxagents.preemption``); it raises ``Preempted`` and ``--resume`` continues it
  bit-identically;
* a diverged run (non-finite losses or parameters) stops with ``TrainingDiverged``
  naming the update and the last good checkpoint; the diverged state is not
  checkpointed, and its metrics rows are kept (non-finite losses as ``null``, listed
  under ``"nonfinite"``);
* with several processes (multi-host) only process 0 lays out the directory and
  writes the config, metrics, plot and results; checkpoints are written by orbax,
  which coordinates the processes itself.

Config schema (every key optional; see ``DEFAULT``)::

    learner: selfplay | ippo | mappo
    env: {id: kuhn_poker, kwargs: {...}, params: {...}}   # id "jaxmarl:NAME" wraps JaxMARL
    seed: 0
    num_seeds: 1
    checkpoint_every: 50            # updates per segment (0: one segment)
    keep_checkpoints: 3
    log: {progress: true, tensorboard: false, wandb_project: null}
    train: {...}                    # PPOConfig / SelfPlayConfig fields
    population: {size: 8, pbt: {...}, ranges: {...}, mesh: {...}}   # optional: see
                                    # jaxagents.population.config (PBT, device mesh)

A population run trains ``population.size`` members of the learner (``num_seeds``
times over), checkpoints the whole population, logs the population's view of the
metrics (mean over members, best and median fitness) to ``metrics.jsonl`` and the
members' fitness, lineage and hyper-parameter schedules to ``population.jsonl``, and
draws ``hparams.png`` / ``lineage.png`` (``jaxagents.population.report``).
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxagents import config as configs
from jaxagents import tracking
from jaxagents.checkpoint import Checkpointer
from jaxagents.population.distributed import gather, wait_for_all
from jaxagents.preemption import Preempted, Preemption
from jaxagents.build import build, build_learner, make_env  # noqa: F401  (runner.build, runner.make_env)
from jaxagents.learners.skeleton.interface import MEMBERS_FILE
from jaxagents.results import Progress, final_metrics, format_results
from jaxagents.rundir import RunLock, check_new_run_dir, default_run_dir, lay_out
from jaxagents.rundir import primary as _primary

# The embedded default, the first run a newcomer sees: Kuhn poker self-play with
# role-conditioned advantages, the recipe of baselines/configs/selfplay_kuhn.yaml
# (docs/results_selfplay.md) on a sixth of its budget: 1000 updates of 1024 envs x 16
# steps, plain SGD, entropy annealed 0.1 -> 0.05 and a parameter average over ~100
# updates. About 1-2 minutes on 2 CPU cores; exploitability 0.458 (uniform play) ->
# ~0.01-0.02. The full recipe (<= 0.01) is `jaxagents train baselines/configs/selfplay_kuhn.yaml`.
DEFAULT: dict[str, Any] = {
    "learner": "selfplay",
    "env": {"id": "kuhn_poker", "kwargs": {}, "params": {}},
    "seed": 0,
    "num_seeds": 1,
    "checkpoint_every": 250,
    "keep_checkpoints": 3,
    "log": {"progress": True, "tensorboard": False, "wandb_project": None},
    "population": None,  # a population: section (jaxagents.population.config) trains P members
    "train": {
        "ppo": {
            "num_envs": 1024,
            "num_steps": 16,
            "total_timesteps": 1024 * 16 * 1000,
            "update_epochs": 1,
            "num_minibatches": 1,
            "optimizer": "sgd",
            "lr": 0.8,
            "ent_coef": 0.1,
            "ent_coef_final": 0.05,
            "advantage": "rae",
            "normalize": "none",
        },
        "eval_every": 50,
        "eval_envs": 256,
        "eval_steps": 16,
        "average_decay": 0.99,
    },
}

LEARNERS = configs.LEARNERS
deep_update = configs.deep_update
apply_overrides = configs.apply_overrides


class TrainingDiverged(RuntimeError):
    """Non-finite losses or parameters: the run stopped (its metrics are kept)."""


class RunWriteError(OSError):
    """A file of the run could not be written (a full disk, a directory made
    read-only): one line naming the file and what it holds; the run is resumable."""


def _write_failed(e: OSError, what: str, path: str, run_dir: str, restored: int | None) -> RunWriteError:
    from jaxagents.checkpoint import os_error

    cause = os_error(e) or e
    path = getattr(cause, "filename", None) or path
    reason = cause.strerror or str(cause)
    kept = f"checkpoints up to update {restored} are intact" if restored is not None else "no checkpoint was written yet"
    return RunWriteError(f"cannot write {what} ({path}): {reason}; the run stopped and {kept}: once the disk has room "
                         f"(or the directory is writable) continue it with `jaxagents train --resume {run_dir}`")


# ----------------------------------------------------------------------- config


def load_config(path: str | None = None, overrides: list[str] = ()) -> dict:
    """The embedded default, updated by the YAML file at ``path`` and the overrides,
    resolved and checked (``jaxagents.config.load``). The default's ``train``
    section applies only to its own learner and environment: a file with a ``train``
    section, or another learner or environment (``learner=ippo``), starts from the
    learner's own defaults."""
    return configs.load(path, list(overrides), DEFAULT)


def prepare(config: dict | None) -> dict:
    """A complete, checked config from a partial one (missing keys from ``DEFAULT``)."""
    return configs.validate(configs.resolve({} if config is None else config, DEFAULT), DEFAULT)


def validate_config(config: dict) -> dict:
    """A checked copy of a complete config (``jaxagents.config.validate``)."""
    return configs.validate(config, DEFAULT)


def read_run_config(run_dir: str) -> dict:
    """The checked config of an existing run directory."""
    path = os.path.join(run_dir, "config.yaml")
    if not os.path.isdir(run_dir):
        raise ValueError(f"{run_dir!r} is not a run directory (no such directory)")
    if not os.path.isfile(path):
        raise ValueError(f"{run_dir!r} is not a run directory (no config.yaml)")
    return prepare(configs.read_yaml(path))


def init_states(learner, keys):
    """Every seed's initial state, created where it lives (a population on a device
    mesh: each process builds only its own members)."""
    return jax.jit(jax.vmap(learner.init), out_shardings=learner.state_sharding(seed_axis=True))(keys)


def _available_memory() -> tuple[int | None, str]:
    """Bytes this process's devices can hold, and where: the accelerators' limits, or
    the host's available memory for the CPU backend (None where unknown)."""
    devices = jax.local_devices()
    limits = [(d.memory_stats() or {}).get("bytes_limit") for d in devices] if devices[0].platform != "cpu" else []
    if limits and all(limits):
        return sum(limits), f"{len(devices)} {devices[0].platform} device(s)"
    try:
        with open("/proc/meminfo") as f:
            info = {line.split(":")[0]: line.split()[1] for line in f}
        return int(info["MemAvailable"]) * 1024, "host memory available"
    except (OSError, KeyError, ValueError, IndexError):
        return None, "host memory"


def _check_memory(learner, keys, quiet: bool) -> None:
    """Refuse, before anything is written or compiled, a train state larger than the
    memory that is to hold it (e.g. ``num_envs`` = 2^27): its size is exact from the
    shapes (``jax.eval_shape``, nothing allocated). The update needs more (the rollout),
    which only the compiler knows, so a state over 1 GiB gets a line saying that the
    compile may take minutes and the update needs more than the state."""
    shapes = jax.eval_shape(jax.vmap(learner.init), keys)
    def nbytes(x):
        if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
            return int(np.prod(x.shape)) * 8  # threefry: two uint32 words a key
        return int(np.prod(x.shape)) * np.dtype(x.dtype).itemsize

    need = sum(nbytes(x) for x in jax.tree.leaves(shapes))
    have, where = _available_memory()
    gib = 2.0**30
    if have is not None and need > have:
        raise ValueError(
            f"the train state alone needs {need / gib:.1f} GiB, more than the {have / gib:.1f} GiB of {where} "
            f"(the update needs more still): lower num_envs (or num_seeds, population.size)")
    if need > gib and not quiet:
        warn(f"the train state takes {need / gib:.1f} GiB"
              + (f" of {have / gib:.1f} GiB of {where}" if have is not None else "")
              + "; the update needs more (the rollout), and compiling it may take minutes")


# ----------------------------------------------------------------------- running


def _shared_update(state):
    """``state`` with its per-seed update counters ``i32[S]`` (all equal) as one scalar."""
    return state.replace(update=state.update[0])


def _start_rows(learner, state0, config: dict, logged) -> list[dict]:
    """The row of update 0: the learner's evaluation of the initial state, restricted
    to the evaluations the run logs (``logged``: the names of its metrics), so that
    every evaluation curve starts at the untrained policy. Empty when the run logs no
    evaluation."""
    logged = {k for k in logged if k.startswith("eval/")}
    if not logged:
        return []
    S = config["num_seeds"]
    keys = jax.random.split(jax.random.fold_in(jax.random.key(config["seed"]), 0x5EED), S)
    evaluate = jax.jit(jax.vmap(learner.evaluate)).lower(state0, keys).compile()
    wait_for_all("compiled the evaluation")  # run it together (gloo's 30 s connect limit)
    metrics = {k: np.asarray(v)[:, None] for k, v in gather(evaluate(state0, keys)).items() if k in logged}
    if not metrics:
        return []
    zeros = np.zeros((S, 1))  # one row, as the learner's later rows (a population's: the members' mean)
    return learner.log_rows({"update": zeros, "env_steps": zeros, **metrics}, S)[0]


@jax.jit
def _all_finite(leaves) -> jax.Array:
    # one compiled reduction: over hosts, one collective that every process runs
    # (eager per-leaf reductions of sharded arrays hung over gloo)
    return jnp.all(jnp.stack([jnp.all(jnp.isfinite(x)) for x in leaves]))


def _divergence(rows: list[dict], params) -> str | None:
    """What diverged in a segment: the first update with a non-finite loss, or
    non-finite parameters at its end; None when everything is finite."""
    for r in rows:
        if r.get("nonfinite"):
            return f"non-finite {', '.join(r['nonfinite'])} at update {r['update']}"
    leaves = [x for x in jax.tree.leaves(params) if jnp.issubdtype(jnp.result_type(x), jnp.inexact)]
    if leaves and not bool(_all_finite(leaves)):
        return f"non-finite parameters after update {rows[-1]['update'] if rows else '?'}"
    return None


PLACEMENT_FILE = "placement.jsonl"


def _record_placement(learner, run_dir: str, quiet: bool, restored: int | None) -> None:
    """Say where the learner's members go (``learner.placement``, a population's) --
    printed at start, and one line per start (a resume may run on other devices)
    appended to ``placement.jsonl`` -- and warn when the size leaves devices idle
    (``population.config.placement``)."""
    info = learner.placement
    if info is None:
        return
    if not quiet:
        warn(info["line"])
    if info["warning"]:
        warn(info["warning"])  # a warning is printed even when quiet: it names a choice the user did not make
    row = {k: v for k, v in info.items() if k != "line"}
    row["started"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    try:
        with open(os.path.join(run_dir, PLACEMENT_FILE), "a") as f:
            f.write(json.dumps(row) + "\n")
    except OSError as e:
        raise _write_failed(e, "where the members run", os.path.join(run_dir, PLACEMENT_FILE), run_dir, restored) from None


def warn(message: str) -> None:
    """One line to stderr, ``jaxagents: message`` (a run's warnings and placement)."""
    print(f"jaxagents: {message}", file=sys.stderr)


def run(
    config: dict | None = None,
    run_dir: str | None = None,
    resume: bool = False,
    quiet: bool = False,
    overwrite: bool = False,
) -> dict:
    """Train (or resume) a run; returns the results dict also written to
    ``<run_dir>/results.json``.

    Args:
        config: a (possibly partial) config; missing keys come from ``DEFAULT``.
        run_dir: where to write the run (default ``runs/<learner>-<env>-<time>``);
            it must not hold anything unless ``resume`` or ``overwrite``.
        resume: continue the run in ``run_dir`` from its newest checkpoint that
            restores, with its own config.yaml (``config`` must be None).
        quiet: no progress bar, results table or warnings on stdout.
        overwrite: delete the run in ``run_dir`` first.

    Raises ``ValueError`` (one line) for a bad config or run directory, before
    anything is written, and ``TrainingDiverged`` when losses or parameters become
    non-finite.
    """
    primary = _primary()
    if resume:
        if run_dir is None:
            raise ValueError("resume needs the run directory")
        if config is not None or overwrite:
            raise ValueError("resume continues a run with its own config.yaml: pass no config and no overwrite")
        config = read_run_config(run_dir)
        if not os.access(run_dir, os.W_OK):
            raise ValueError(f"cannot resume {run_dir!r}: the directory is not writable")
    else:
        config = prepare(config)
        if run_dir is None:
            if jax.process_count() > 1:
                raise ValueError("a run over several processes needs an explicit run_dir, the same on every process")
            run_dir = default_run_dir(config)
        if primary:  # the others would find process 0's directory already laid out
            check_new_run_dir(run_dir, overwrite)
    lock = _lock(run_dir, resume, overwrite, primary)
    try:
        with Preemption() as preemption:  # SIGTERM: stop at the next checkpoint (jaxagents.preemption)
            return _run(config, run_dir, resume, quiet, overwrite, primary, preemption)
    finally:
        if lock is not None:
            lock.release()


def _lock(run_dir: str, resume: bool, overwrite: bool, primary: bool) -> RunLock | None:
    """Take the run directory for this run (process 0 for all processes), before
    anything is built or restored; the others learn whether process 0 got it.

    A new run checks the directory again once it holds the lock: a run that raced it
    there may have finished in between."""
    lock, error = None, None
    if primary:
        try:
            lock = RunLock.acquire(run_dir, create=not resume)
            if not resume:
                check_new_run_dir(run_dir, overwrite)
        except ValueError as e:
            if lock is not None:
                lock.release()
            lock, error = None, e
    if jax.process_count() > 1:  # every process calls this collective, whatever happened
        from jax.experimental import multihost_utils

        refused = bool(multihost_utils.broadcast_one_to_all(np.int32(error is not None)))
        if refused and error is None:
            error = ValueError(f"run directory {run_dir!r} refused by process 0 (its error says why)")
    if error is not None:
        raise error
    if lock is not None and lock.stale is not None:
        warn(lock.stale_message())
    return lock


def _run(config: dict, run_dir: str, resume: bool, quiet: bool, overwrite: bool, primary: bool,
         preemption: Preemption) -> dict:
    """``run`` once the run directory is this run's (``_lock``)."""
    S = config["num_seeds"]
    show = config["log"].get("progress", True) and not quiet
    progress = Progress(0, show and primary)
    # the learner's own checks run here, before anything is written. The per-update host
    # callback only with a progress bar (it syncs every update with the host), and then
    # on every process: all of them must compile the same program
    learner = build(config, callback=progress if show else None)
    if primary:
        tracking.check_sinks(config["log"])
    keys = jax.random.split(jax.random.key(config["seed"]), S)
    _check_memory(learner, keys, quiet or not primary)
    if not resume and primary:
        lay_out(run_dir, config, overwrite)
    U = learner.num_updates
    progress.total = U
    every = config["checkpoint_every"] or U

    t0 = time.perf_counter()
    state = init_states(learner, keys)
    ckpt = Checkpointer(os.path.join(run_dir, "checkpoints"), max_to_keep=config["keep_checkpoints"])
    metrics_path = os.path.join(run_dir, "metrics.jsonl")
    results_path = os.path.join(run_dir, "results.json")
    restored = None
    if resume and ckpt.all_steps():
        state, restored, skipped = ckpt.restore_newest(state, move_aside=primary)
        if jax.process_count() > 1:  # process 0 has moved broken checkpoints aside: all see the same steps
            from jax.experimental import multihost_utils

            multihost_utils.sync_global_devices("jaxagents: checkpoints restored")
            ckpt.reload()
        for message in skipped if primary else ():
            warn(message)
    done = int(np.asarray(state.update)[0])
    if primary:
        _record_placement(learner, run_dir, quiet, restored)
    if resume and done >= U and os.path.isfile(results_path):  # finished already: its figures stand
        ckpt.close()
        progress.close()
        with open(results_path) as f:
            results = json.load(f)
        if not quiet and primary:
            print(format_results(results))
        return results
    sinks, members_sink = [], None
    if primary:
        try:
            tracking.JsonlSink(metrics_path).truncate_after(done if restored is not None else -1)
            sinks = tracking.make_sinks(config["log"], run_dir, config)
            if learner.members is not None:  # the members' own rows (fitness, lineage, schedules)
                members_sink = tracking.JsonlSink(os.path.join(run_dir, MEMBERS_FILE))
                members_sink.truncate_after(done if restored is not None else -1)
        except OSError as e:
            ckpt.close()
            progress.close()
            raise _write_failed(e, "the run's logs (rows past the checkpoint are dropped)", metrics_path, run_dir,
                                restored) from None

    compiled = {}  # segment length -> compiled program (at most two lengths)
    compile_s, train_s, trained_steps = 0.0, 0.0, 0
    start_due = done == 0  # evaluate the initial state: the start of every evaluation curve
    diverged, stopped = None, False
    try:
        while done < U:
            n = min(every, U - done)
            if n not in compiled:
                tc = time.perf_counter()
                body = lambda s, n=n: jax.lax.scan(lambda c, _: learner.update(c), s, None, n)  # noqa: E731
                # Seeds advance in lockstep, so the update counter is vmapped as one shared
                # scalar: a `lax.cond` on it (evaluate every K updates) stays a branch
                # instead of becoming a select that evaluates on every update.
                axes = jax.tree.map(lambda _: 0, state).replace(update=None)
                compiled[n] = jax.jit(jax.vmap(body, in_axes=(axes,), out_axes=(axes, 0))).lower(_shared_update(state)).compile()
                wait_for_all(f"compiled a segment of {n} updates")  # start it together (gloo's 30 s connect limit)
                compile_s += time.perf_counter() - tc
            if start_due:
                start_due = False
                start = _start_rows(learner, state, config, compiled[n].out_info[1])
                for s in sinks:
                    s.write(start)
            ts = time.perf_counter()
            state, metrics = compiled[n](_shared_update(state))
            state = state.replace(update=jnp.broadcast_to(state.update, (S,)))
            metrics = gather(metrics)  # host arrays; from every process when sharded over hosts
            train_s += time.perf_counter() - ts
            done = int(np.asarray(state.update)[0])
            rows, member_rows = learner.log_rows(metrics, S)
            if rows and rows[-1]["update"]:
                trained_steps += n * rows[-1]["env_steps"] // rows[-1]["update"]
            try:
                for s in sinks:
                    s.write(rows)
                if members_sink is not None:
                    members_sink.write(member_rows)
            except OSError as e:  # resuming drops rows past the last checkpoint (and a half-written line)
                raise _write_failed(e, f"the metrics of updates up to {done}", metrics_path, run_dir, restored) from None
            diverged = _divergence(rows, learner.member_states(state).params)
            if diverged:
                break
            try:
                ckpt.save(done, state, config, {"update": done, **{k: v for k, v in rows[-1].items() if not k.endswith("@seeds")}})
            except OSError as e:
                raise _write_failed(e, f"the checkpoint of update {done}", os.path.join(run_dir, "checkpoints", str(done)),
                                    run_dir, restored) from None
            restored = done
            if done < U and preemption.stop_agreed(done):  # every process: a collective at each boundary
                stopped = True
                break
    finally:
        progress.close()
        for s in sinks:
            s.close()
        ckpt.close()
    if stopped:
        every_process = " with the same command on every process" if jax.process_count() > 1 else ""
        raise Preempted(f"stopped on SIGTERM after update {done} of {U}, its checkpoint written "
                        f"({os.path.join(run_dir, 'checkpoints', str(done))}): continue the run with "
                        f"`jaxagents train --resume {run_dir}`{every_process}")
    if diverged:
        last = (
            f"the last good checkpoint is {os.path.join(run_dir, 'checkpoints', str(restored))} (update {restored})"
            if restored is not None
            else "no checkpoint was written before it"
        )
        raise TrainingDiverged(
            f"training diverged: {diverged}; the diverged state was not checkpointed, {last}; "
            f"the metrics up to it are in {metrics_path} (non-finite losses as null, listed under \"nonfinite\")"
        )

    results = {
        "run_dir": run_dir,
        "learner": config["learner"],
        "env": config["env"]["id"],
        "num_seeds": S,
        "updates": done,
        "env_steps": 0,
        "wall_s": time.perf_counter() - t0,
        "compile_s": compile_s,
        "train_s": train_s,
        "env_steps_per_s": (trained_steps * S / train_s) if train_s > 0 and trained_steps else None,
        "start": {},
        "final": {},
        "plot": None,
    }
    if not primary:
        return results
    try:
        return _finish(results, config, learner, run_dir, quiet)
    except BrokenPipeError:
        raise
    except OSError as e:  # every update is checkpointed: --resume only writes these files again
        raise _write_failed(e, "the run's results (curve.png, results.json)", run_dir, run_dir, done) from None


def _finish(results: dict, config: dict, learner, run_dir: str, quiet: bool) -> dict:
    """The curve, the population's summaries and results.json of a finished run."""
    metrics_path = os.path.join(run_dir, "metrics.jsonl")
    results_path = os.path.join(run_dir, "results.json")
    rows = tracking.read_rows(metrics_path)
    title = f"{config['learner']} on {config['env']['id']}"
    results["plot"] = tracking.plot_curves(rows, os.path.join(run_dir, "curve.png"), title)
    results["env_steps"] = rows[-1]["env_steps"] if rows else 0
    results["start"] = {k: v for k, v in rows[0].items() if k.startswith("eval/") and not k.endswith("@seeds")} if rows and rows[0]["update"] == 0 else {}
    results["final"] = final_metrics(rows)
    results.update(learner.summarize(run_dir))  # a population's members table and plots
    tracking.atomic_write(results_path, json.dumps(results, indent=2))
    if not quiet:
        print(format_results(results))
    return results

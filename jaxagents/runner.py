"""Runs: a config (YAML or dict) -> a run directory with the resolved config,
metrics, checkpoints, a learning-curve plot and a results table.

This is what ``jaxagents train`` and the scripts in ``baselines/`` call; a run's
checkpoints are read back by ``jaxagents.runs`` (``restore``, ``checkpoints``,
``evaluate``: ``jaxagents eval``); both stand on ``jaxagents.build`` and neither imports
the other. ``run`` goes through named phases: check the arguments (``_arguments``),
compare the processes' launch facts (``peers.check_same_launch``), take the directory
(``_lock``), then under the signal and peer watches build and check, lay out, restore,
train (``jaxagents.training.Training``) and finish (``_finish``).

Training goes in compiled calls of the learner's update (``vmap``ped over ``num_seeds``
seeds), checkpointed every ``checkpoint_every`` updates and at least every
``checkpoint_seconds`` seconds (``jaxagents.segments``: one program for every call
length, so where a run is cut never changes a number). A killed run restarted with
``resume`` restores the last checkpoint and goes on bit-identically to an
uninterrupted run.

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
* SIGTERM (a preempted machine, a cancelled SLURM job) or Ctrl-C stops the run after
  the running call, once its checkpoint is written, on every process together
  (``jaxagents.preemption``); it raises ``Preempted`` and ``--resume`` continues it
  bit-identically; a second one ends the process at once, its last checkpoint intact;
* the run directory removed, replaced, emptied or made unwritable during the run stops
  it at the next write with ``RunDirGone``, never a recreated, partial directory;
* a process of a distributed run that dies or hangs stops every other one within
  ``JAXAGENTS_PEER_TIMEOUT`` seconds (``jaxagents.population.peers``);
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
    checkpoint_every: 250           # a checkpoint every N updates (0: at the end only)
    checkpoint_seconds: 20          # and at least every S seconds (0: by count only)
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
import time

import jax
import numpy as np

from jaxagents import config as configs
from jaxagents import tracking
from jaxagents.build import (  # noqa: F401  (runner.DEFAULT, runner.load_config... as before)
    DEFAULT, build, build_learner, init_states, load_config, make_env, prepare, read_run_config, validate_config, warn)
from jaxagents.population import peers
from jaxagents.preemption import Preempted, Preemption  # noqa: F401  (runner.Preempted)
from jaxagents.results import Progress, final_metrics, format_results
from jaxagents.rundir import RunDirGone, RunLock, Watch, check_new_run_dir, default_run_dir, lay_out  # noqa: F401
from jaxagents.rundir import primary as _primary
from jaxagents.training import (  # noqa: F401  (runner.TrainingDiverged, runner._divergence... as before)
    RunWriteError, Training, TrainingDiverged, _divergence, _write_failed)

LEARNERS = configs.LEARNERS
deep_update = configs.deep_update
apply_overrides = configs.apply_overrides


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
    anything is written, ``TrainingDiverged`` when losses or parameters become
    non-finite, ``Preempted`` after a SIGTERM or SIGINT (its checkpoint written),
    ``RunWriteError`` / ``RunDirGone`` when the run's files cannot be written.
    """
    primary = _primary()
    config, run_dir = _arguments(config, run_dir, resume, overwrite, primary)
    peers.check_same_launch(config, run_dir, resume)  # several processes: the same facts, or one line
    lock = _lock(run_dir, resume, overwrite, primary)
    hint = " with the same command on every process" if jax.process_count() > 1 else ""
    try:
        # SIGTERM / Ctrl-C: stop at the next checkpoint, a second one at once (jaxagents.preemption);
        # a peer lost: every survivor stops within JAXAGENTS_PEER_TIMEOUT (jaxagents.population.peers)
        with Preemption(run_dir=run_dir, resume_hint=hint) as guard, peers.watch(guard):
            return _run(config, run_dir, resume, quiet, overwrite, primary, guard)
    finally:
        if lock is not None:
            lock.release()


def _arguments(config, run_dir, resume: bool, overwrite: bool, primary: bool) -> tuple[dict, str]:
    """The checked config and run directory of ``run``, before anything is written."""
    if resume:
        if run_dir is None:
            raise ValueError("resume needs the run directory")
        if config is not None or overwrite:
            raise ValueError("resume continues a run with its own config.yaml: pass no config and no overwrite")
        config = read_run_config(run_dir)
        if not os.access(run_dir, os.W_OK):
            raise ValueError(f"cannot resume {run_dir!r}: the directory is not writable")
        return config, run_dir
    config = prepare(config)
    if run_dir is None:
        if jax.process_count() > 1:
            raise ValueError("a run over several processes needs an explicit run_dir, the same on every process")
        run_dir = default_run_dir(config)
    if primary:  # the others would find process 0's directory already laid out
        check_new_run_dir(run_dir, overwrite)
    return config, run_dir


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
         guard: Preemption) -> dict:
    """``run`` once the run directory is this run's (``_lock``), phase by phase: build
    and check, lay out, restore, train in calls and checkpoints, stop or finish."""
    t0 = time.perf_counter()
    show = config["log"].get("progress", True) and not quiet
    progress = Progress(0, show and primary)
    # the learner's own checks run here, before anything is written. The per-update host
    # callback only with a progress bar (it syncs every update with the host), and then
    # on every process: all of them must compile the same program
    learner = build(config, callback=progress if show else None)
    if primary:
        tracking.check_sinks(config["log"])
    keys = jax.random.split(jax.random.key(config["seed"]), config["num_seeds"])
    _check_memory(learner, keys, quiet or not primary)
    if not resume and primary:
        lay_out(run_dir, config, overwrite)
    t = Training(config, run_dir, learner, guard, Watch(run_dir), primary)
    progress.total = learner.num_updates
    try:
        state = t.restore(init_states(learner, keys), resume)
        if primary:
            _record_placement(learner, run_dir, quiet, t.restored)
        if resume and t.done >= learner.num_updates and os.path.isfile(t.results_path):
            return _already_finished(t.results_path, quiet or not primary)  # its figures stand
        t.open_logs()
        t.train(state)
        t.raise_if_stopped()
        if t.watch.problem():  # before the last files: a directory gone is not written again
            raise t.watch.error(t.watch.problem(), t.done, t.restored)
    finally:
        progress.close()
        t.close()
    results = t.results(t0)
    if not primary:
        return results
    try:
        return _finish(results, config, learner, run_dir, quiet)
    except BrokenPipeError:
        raise
    except OSError as e:  # every update is checkpointed: --resume only writes these files again
        raise _write_failed(e, "the run's results (curve.png, results.json)", run_dir, run_dir, t.done) from None


def _already_finished(results_path: str, quiet: bool) -> dict:
    """The results of a run resumed after it finished."""
    with open(results_path) as f:
        results = json.load(f)
    if not quiet:
        print(format_results(results))
    return results


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

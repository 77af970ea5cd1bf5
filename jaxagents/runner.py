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
from jaxagents import segments
from jaxagents.population import peers
from jaxagents.preemption import Preempted, Preemption, exit_status, jax_sync_point, signal_name
from jaxagents.build import build, build_learner, make_env  # noqa: F401  (runner.build, runner.make_env)
from jaxagents.learners.skeleton.interface import MEMBERS_FILE
from jaxagents.results import Progress, final_metrics, format_results
from jaxagents.rundir import RunDirGone, RunLock, Watch, check_new_run_dir, default_run_dir, lay_out  # noqa: F401
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
    "checkpoint_seconds": 20,  # and at least every 20 s: a 30 s preemption notice finds a checkpoint near
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
    t = _Training(config, run_dir, learner, guard, Watch(run_dir), primary)
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


class _Training:
    """The training phase of a run: its checkpoints, logs, calls and where it stopped
    (``run`` drives it: ``restore``, ``open_logs``, ``train``, ``raise_if_stopped``,
    ``results``)."""

    def __init__(self, config: dict, run_dir: str, learner, guard: Preemption, watch: Watch, primary: bool):
        self.config, self.run_dir, self.learner, self.guard, self.watch = config, run_dir, learner, guard, watch
        self.primary = primary
        self.S, self.U = config["num_seeds"], learner.num_updates
        self.clock = segments.Clock(self.U, config["checkpoint_every"], config["checkpoint_seconds"])
        self.ckpt = Checkpointer(os.path.join(run_dir, "checkpoints"), max_to_keep=config["keep_checkpoints"])
        self.metrics_path = os.path.join(run_dir, "metrics.jsonl")
        self.results_path = os.path.join(run_dir, "results.json")
        self.restored, self.done = None, 0
        self.sinks, self.members_sink = [], None
        self.stopped, self.diverged = 0, None
        self.compile_s = self.train_s = 0.0
        self.trained_steps = 0

    def restore(self, state, resume: bool):
        """The newest checkpoint that restores, on a resume (``state``: the initial one)."""
        if resume and self.ckpt.all_steps():
            state, self.restored, skipped = self.ckpt.restore_newest(state, move_aside=self.primary)
            if jax.process_count() > 1:  # process 0 has moved broken checkpoints aside: all see the same steps
                from jax.experimental import multihost_utils

                multihost_utils.sync_global_devices("jaxagents: checkpoints restored")
                self.ckpt.reload()
            for message in skipped if self.primary else ():
                warn(message)
            self.guard.checkpointed(self.restored)
        self.done = int(np.asarray(state.update)[0])
        return state

    def open_logs(self) -> None:
        """The metrics sinks (process 0), cut back to the restored checkpoint."""
        if not self.primary:
            return
        keep = self.done if self.restored is not None else -1
        try:
            tracking.JsonlSink(self.metrics_path).truncate_after(keep)
            self.sinks = tracking.make_sinks(self.config["log"], self.run_dir, self.config)
            if self.learner.members is not None:  # the members' own rows (fitness, lineage, schedules)
                self.members_sink = tracking.JsonlSink(os.path.join(self.run_dir, MEMBERS_FILE))
                self.members_sink.truncate_after(keep)
        except OSError as e:
            raise _write_failed(e, "the run's logs (rows past the checkpoint are dropped)", self.metrics_path,
                                self.run_dir, self.restored) from None

    def train(self, state) -> None:
        """Calls and checkpoints until the run ends, diverges or is stopped (``stopped``:
        the signal; ``diverged``: what). Every process takes the same decisions."""
        tc = time.perf_counter()
        program = segments.compile_program(self.learner, state, self.clock.max_length)
        wait_for_all("compiled the update")  # start it together (gloo's 30 s connect limit)
        self.compile_s = time.perf_counter() - tc
        if self.done == 0:  # evaluate the initial state: the start of every evaluation curve
            self.write(_start_rows(self.learner, state, self.config, program.out_info[1]), [])
        n = self.clock.fits(self.done, fresh=True)
        while self.done < self.U:
            state, metrics, seconds = segments.call(program, state, n)
            metrics = jax.tree.map(lambda x: x[:, :n], gather(metrics))  # host arrays, from every process
            self.clock.measured(n, seconds)
            self.train_s += seconds
            self.done += n
            rows, member_rows = self.learner.log_rows(metrics, self.S)
            if rows and rows[-1]["update"]:
                self.trained_steps += n * rows[-1]["env_steps"] // rows[-1]["update"]
            jax_stop = jax.process_count() > 1 and jax_sync_point(self.done)
            fault = self.watch.problem(checkpointed=self.restored is not None)
            d = segments.agree(segments.decide(self.clock, self.done, self.guard.requested_code, fault, jax_stop))
            if d.fault:
                raise self.watch.error(d.fault, self.done, self.restored)
            self.write(rows, member_rows)
            self.diverged = _divergence(rows, self.learner.member_states(state).params)
            if self.diverged:
                return
            if d.checkpoint or self.done >= self.U:
                self.save(state, rows[-1] if rows else {})
            if d.signal and self.done < self.U:
                self.stopped = d.signal
                return
            n = d.length

    def write(self, rows: list[dict], member_rows: list[dict]) -> None:
        """Metrics rows to the sinks (process 0; a resume drops rows past its checkpoint)."""
        try:
            with self.guard.writing:
                for s in self.sinks:
                    s.write(rows)
                if self.members_sink is not None:
                    self.members_sink.write(member_rows)
        except OSError as e:
            raise _write_failed(e, f"the metrics of updates up to {self.done}", self.metrics_path, self.run_dir,
                                self.restored) from None

    def save(self, state, row: dict) -> None:
        """The checkpoint of update ``done`` (every process: orbax coordinates them)."""
        metrics = {"update": self.done, **{k: v for k, v in row.items() if not k.endswith("@seeds")}}
        try:
            with self.guard.writing:
                self.ckpt.save(self.done, state, self.config, metrics)
        except OSError as e:
            raise _write_failed(e, f"the checkpoint of update {self.done}",
                                os.path.join(self.run_dir, "checkpoints", str(self.done)), self.run_dir,
                                self.restored) from None
        self.restored = self.done
        self.guard.checkpointed(self.done)
        self.clock.checkpointed()

    def close(self) -> None:
        """Close the sinks and the checkpointer."""
        for s in self.sinks:
            s.close()
        self.ckpt.close()
        self.watch.close()

    def raise_if_stopped(self) -> None:
        """``Preempted`` after a signal, ``TrainingDiverged`` after non-finite values."""
        if self.stopped:
            raise Preempted(f"stopped on {signal_name(self.stopped)} after update {self.done} of {self.U}, its "
                            f"checkpoint written ({os.path.join(self.run_dir, 'checkpoints', str(self.done))}): "
                            f"continue the run with `jaxagents train --resume {self.run_dir}`{self.guard.resume_hint}",
                            exit_status(self.stopped))
        if self.diverged:
            last = (f"the last good checkpoint is {os.path.join(self.run_dir, 'checkpoints', str(self.restored))} "
                    f"(update {self.restored})" if self.restored is not None else "no checkpoint was written before it")
            raise TrainingDiverged(
                f"training diverged: {self.diverged}; the diverged state was not checkpointed, {last}; "
                f"the metrics up to it are in {self.metrics_path} (non-finite losses as null, listed under \"nonfinite\")")

    def results(self, t0: float) -> dict:
        """The figures of a finished run (``_finish`` adds the curves' and metrics')."""
        return {
            "run_dir": self.run_dir, "learner": self.config["learner"], "env": self.config["env"]["id"],
            "num_seeds": self.S, "updates": self.done, "env_steps": 0, "wall_s": time.perf_counter() - t0,
            "compile_s": self.compile_s, "train_s": self.train_s,
            "env_steps_per_s": (self.trained_steps * self.S / self.train_s) if self.train_s > 0 and self.trained_steps else None,
            "start": {}, "final": {}, "plot": None,
        }


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

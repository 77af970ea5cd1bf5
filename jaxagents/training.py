"""The training phase of a run (``Training``, driven by ``jaxagents.runner.run``): from
the restored state to the last update, in compiled calls cut by ``jaxagents.segments``,
each followed by one decision every process shares (a signal, the run directory gone, a
checkpoint due, the next call's length), the metrics rows (process 0), the divergence
check and the checkpoint; and the errors a run ends with (``TrainingDiverged``,
``RunWriteError``)."""

from __future__ import annotations

import os
import time

import jax
import jax.numpy as jnp
import numpy as np

from jaxagents import segments, tracking
from jaxagents.build import warn
from jaxagents.checkpoint import Checkpointer
from jaxagents.learners.skeleton.interface import MEMBERS_FILE
from jaxagents.population.distributed import gather, wait_for_all
from jaxagents.preemption import Preempted, Preemption, exit_status, jax_sync_point, signal_name
from jaxagents.rundir import Watch


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


class Training:
    """The training phase of a run: its checkpoints, logs, calls and where it stopped
    (``run`` drives it: ``restore``, ``open_logs``, ``train``, ``raise_if_stopped``,
    ``results``)."""

    def __init__(self, config: dict, run_dir: str, learner, guard: Preemption, watch: Watch, primary: bool):
        self.config, self.run_dir, self.learner, self.guard, self.watch = config, run_dir, learner, guard, watch
        self.primary = primary
        self.S, self.U = config["num_seeds"], learner.num_updates
        self.clock = segments.Clock(self.U, config["checkpoint_every"], config["checkpoint_seconds"])
        # kept by the run, not by orbax: keep_checkpoints counts those of checkpoint_every (Clock.to_delete)
        self.ckpt = Checkpointer(os.path.join(run_dir, "checkpoints"), max_to_keep=None)
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
        self.clock.checkpointed()  # the time budget starts with training (not with the compile)
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
                error = self.watch.error(d.fault, self.done, self.restored)
                error.agreed = True  # every process raises it after the same update (peers.watch)
                raise error
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
            self.raise_if_gone()
            raise _write_failed(e, f"the metrics of updates up to {self.done}", self.metrics_path, self.run_dir,
                                self.restored) from None

    def save(self, state, row: dict) -> None:
        """The checkpoint of update ``done`` (every process: orbax coordinates them)."""
        metrics = {"update": self.done, **{k: v for k, v in row.items() if not k.endswith("@seeds")}}
        try:
            with self.guard.writing:
                self.ckpt.save(self.done, state, self.config, metrics)
        except OSError as e:
            self.raise_if_gone()
            raise _write_failed(e, f"the checkpoint of update {self.done}",
                                os.path.join(self.run_dir, "checkpoints", str(self.done)), self.run_dir,
                                self.restored) from None
        self.restored = self.done
        self.guard.checkpointed(self.done)
        with self.guard.writing:
            for step in self.clock.to_delete(self.ckpt.all_steps(), self.config["keep_checkpoints"]):
                self.ckpt.delete(step)
        self.clock.checkpointed()

    def raise_if_gone(self) -> None:
        """``RunDirGone`` when a write failed because the run directory went away meanwhile
        (this process alone: the others learn it from the peer watch)."""
        code = self.watch.problem(checkpointed=self.restored is not None)
        if code:
            raise self.watch.error(code, self.done, self.restored) from None

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

"""Stopping a run cleanly when the machine is taken back, or when the user presses Ctrl-C.

Cloud TPU, SLURM and Kubernetes stop a job by sending SIGTERM and, after a grace
period (SLURM's ``KillWait``, 30 s by default; about 30 s for a preempted Cloud TPU
VM), SIGKILL. ``Preemption`` turns the first SIGTERM (or SIGINT, Ctrl-C) into a request
to stop after the compiled call that is running: its updates are checkpointed and the
run raises ``Preempted`` (``jaxagents train`` exits with ``EXIT_PREEMPTED``, 75,
EX_TEMPFAIL: "try again", which ``--resume`` does, bit-identically; after Ctrl-C with
``EXIT_INTERRUPTED``, 130, as a shell does). The runner keeps each call under
``checkpoint_seconds`` (``jaxagents.segments``), so the first signal is honoured within
that time whatever the speed of an update.

A second signal stops the process at once, even inside a compiled call that Python
cannot interrupt: the signals are read by a thread (through ``signal.set_wakeup_fd``,
which the interpreter writes from its C-level handler), not by the main thread's Python
handler, which runs only once the call returns. The thread waits for a checkpoint
being written to be complete (``writing``), prints one line naming the last checkpoint
and the ``--resume`` command, and ends the process with the same status as the first
signal would have given.

Over several processes (``--distributed``) the signal may reach one process only, or
reach them at different moments: at every boundary the runner combines every
process's request (``requested_code``, in one small all-gather with its other
decisions), so that all of them stop after the same update and write that checkpoint
together. JAX's own preemption service, where it runs (a TPU pod learns of a
maintenance event through it), is asked at the same points (``jax_sync_point``).
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import time

EXIT_PREEMPTED = 75
EXIT_INTERRUPTED = 130
SIGNALS = {signal.SIGTERM: ("SIGTERM", EXIT_PREEMPTED), signal.SIGINT: ("Ctrl-C (SIGINT)", EXIT_INTERRUPTED)}
WRITE_WAIT_S = 3.0  # how long a second signal waits for a checkpoint being written (the 5 s promise)
# A second Ctrl-C ends the process at once in ``jaxagents train`` (which sets this); in a
# notebook or script that calls ``runner.run`` it raises KeyboardInterrupt in the main
# thread instead, once the running call returns (ending the process would end the kernel)
CTRL_C_EXITS = False
SUPERVISED_VAR = "JAXAGENTS_SUPERVISED"  # set in jaxagents.supervisor's child, the process that trains
_SUPERVISED = os.environ.get(SUPERVISED_VAR) == "1"
DUPLICATE_S = 1.0


class Preempted(RuntimeError):
    """The run stopped at an update boundary on SIGTERM or SIGINT, its checkpoint
    written; ``--resume`` continues it. ``status`` is the exit status it calls for."""

    def __init__(self, message: str, status: int = EXIT_PREEMPTED):
        super().__init__(message)
        self.status = status


def signal_name(code: int) -> str:
    """``"SIGTERM"`` or ``"Ctrl-C (SIGINT)"`` for a signal number (what a line says)."""
    return SIGNALS.get(code, (f"signal {code}", EXIT_PREEMPTED))[0]


def exit_status(code: int) -> int:
    """The exit status of a run stopped by signal ``code`` (75 SIGTERM, 130 SIGINT)."""
    return SIGNALS.get(code, (None, EXIT_PREEMPTED))[1]


class Preemption:
    """A SIGTERM / SIGINT watch for the duration of a ``with`` block (see the module
    docstring). Outside the main thread (where Python cannot take signals) it watches
    nothing. ``requested_code`` is the first signal's number (0: none).

    The runner tells it where the run stands (``run_dir``, ``checkpointed(update)``) so
    that a second signal can name the last checkpoint, and takes ``writing`` around each
    write so that the second signal does not cut a checkpoint in half."""

    def __init__(self, announce: bool = True, run_dir: str | None = None, resume_hint: str = ""):
        self.requested_code = 0
        self.announce = announce
        self.run_dir = run_dir
        self.resume_hint = resume_hint  # e.g. " with the same command on every process"
        self.last_checkpoint: int | None = None
        self.writing = threading.Lock()
        self._previous: dict = {}
        self._installed = False
        self._socks = None
        self._old_wakeup = -1
        self._count = 0
        self._last = (0, -1e9)  # the last signal and when it came
        self._interrupting = self._interrupt_sent = False

    @property
    def requested(self) -> bool:
        """Whether a first signal has asked the run to stop."""
        return self.requested_code != 0

    def checkpointed(self, update: int) -> None:
        """The checkpoint of ``update`` is on disk."""
        self.last_checkpoint = update

    def __enter__(self) -> "Preemption":
        if threading.current_thread() is not threading.main_thread():
            return self
        reader, writer = socket.socketpair()
        reader.setblocking(True)
        writer.setblocking(False)
        self._socks = (reader, writer)
        for signum in SIGNALS:
            self._previous[signum] = signal.signal(signum, self._python_handler)
        self._old_wakeup = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
        self._installed = True
        threading.Thread(target=self._watch, name="jaxagents-signals", daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        if not self._installed:
            return
        signal.set_wakeup_fd(self._old_wakeup)
        for signum, previous in self._previous.items():
            signal.signal(signum, previous if previous is not None else signal.SIG_DFL)
        self._installed = False
        reader, writer = self._socks
        writer.close()  # the watching thread's recv returns b"" and it ends
        try:
            reader.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _python_handler(self, signum, frame) -> None:
        """The Python-level handler, run in the main thread: nothing to do (the watching
        thread counts the signals; the handler makes them non-fatal and lets them reach
        the wakeup fd), except raising the KeyboardInterrupt a library caller's second
        Ctrl-C asked for."""
        if signum == signal.SIGINT and self._interrupting:
            self._interrupting = False
            raise KeyboardInterrupt

    def _watch(self) -> None:
        reader = self._socks[0]
        while True:
            try:
                data = reader.recv(64)
            except OSError:
                return
            if not data:
                return
            for signum in data:
                if signum in SIGNALS:
                    self.on_signal(signum)

    def on_signal(self, signum: int) -> None:
        """A SIGTERM or SIGINT arrived (called from the watching thread): the first is a
        request, the second ends the process now (``exit_now``). Under ``jaxagents train
        --distributed``'s supervisor, the same signal again within ``DUPLICATE_S`` is
        the same notice, delivered both directly and forwarded (``jaxagents.supervisor``)."""
        now = time.monotonic()
        duplicate = (_SUPERVISED and signum == self._last[0] and now - self._last[1] < DUPLICATE_S)
        self._last = (signum, now)
        if duplicate:
            return
        self._count += 1
        if self._count > 1:
            if signum == signal.SIGINT and not CTRL_C_EXITS:
                if not self._interrupt_sent:  # (interrupt_main's own SIGINT comes back here: once is enough)
                    import _thread

                    self._interrupt_sent = self._interrupting = True
                    _thread.interrupt_main()  # runs _python_handler in the main thread, which raises
                return
            self.exit_now(signum)
            return
        self.requested_code = signum
        if self.announce:
            again = "press Ctrl-C again" if signum == signal.SIGINT else "send SIGTERM again"
            print(f"jaxagents: {signal_name(signum)} received: the run stops after the running call, once its "
                  f"checkpoint is written ({again} to stop at once)", file=sys.stderr, flush=True)

    def exit_now(self, signum: int) -> None:
        """End the process with one line (the last checkpoint, the ``--resume`` command),
        after a checkpoint being written is complete (at most ``WRITE_WAIT_S``)."""
        got = self.writing.acquire(timeout=WRITE_WAIT_S)
        try:
            print(f"jaxagents train: stopped at once on a second {signal_name(signum)}; {self.where()}",
                  file=sys.stderr, flush=True)
        finally:
            os._exit(exit_status(self.requested_code or signum))
        if got:  # not reached: os._exit does not return
            self.writing.release()

    def where(self) -> str:
        """What is kept and how to go on: the last checkpoint and the resume command."""
        if self.run_dir is None:
            return "nothing of the run was written yet"
        on_disk = _newest_step(os.path.join(self.run_dir, "checkpoints"))  # a save may be complete on disk already
        if on_disk is not None and (self.last_checkpoint is None or on_disk > self.last_checkpoint):
            self.last_checkpoint = on_disk
        return resume_advice(self.run_dir, self.last_checkpoint, self.resume_hint)


def resume_advice(run_dir: str, last_checkpoint: int | None, resume_hint: str = "") -> str:
    """The last checkpoint of ``run_dir`` (``last_checkpoint``, else the newest on disk)
    and the command that continues the run."""
    if last_checkpoint is None:
        last_checkpoint = _newest_step(os.path.join(run_dir, "checkpoints"))
    kept = (f"the last checkpoint is {os.path.join(run_dir, 'checkpoints', str(last_checkpoint))} "
            f"(update {last_checkpoint}), the updates after it are lost"
            if last_checkpoint is not None else "no checkpoint was written yet")
    return f"{kept}: continue the run with `jaxagents train --resume {run_dir}`{resume_hint}"


def _newest_step(directory: str) -> int | None:
    """The newest finished checkpoint in ``directory`` (orbax gives a step its plain
    number only once it is complete), or None."""
    try:
        steps = [int(name) for name in os.listdir(directory) if name.isdigit()]
    except OSError:
        return None
    return max(steps) if steps else None


def jax_sync_point(update: int) -> bool:
    """JAX's preemption service's verdict at ``update`` (False where it does not run,
    e.g. disabled, or on a backend whose client has none). Every process must ask at
    the same, increasing updates."""
    from jax._src import distributed as jax_distributed  # where JAX keeps whether the service started

    if getattr(jax_distributed.global_state, "preemption_sync_manager", None) is None:
        return False
    from jax.experimental import multihost_utils

    return bool(multihost_utils.reached_preemption_sync_point(update))

"""The parent process of ``jaxagents train --distributed``: the one fault a process
cannot report about itself.

When process 0 of a distributed run dies, JAX's coordination service (which lives in
process 0) dies with it, and JAX's client in every other process aborts the process
within a second: status 134, a dozen lines of C++ log and a native stack trace, before
any Python thread can speak (``jaxagents.population.peers`` explains why jaxlib's hook
cannot be used instead). So ``--distributed`` runs the training in a child process and
stays as its parent, which only:

- passes the child's stdout through untouched and its stderr line by line, holding back
  native log lines (glog's ``E1206 12:00:00.123 ...`` form, stack frames, "Fatal Python
  error") for ``HOLD_S`` seconds: they reach the terminal unchanged unless the child
  dies meanwhile;
- when the child aborts on the loss of the coordinator, prints one line instead (the
  lost process 0, the last checkpoint, the ``--resume`` command), keeps JAX's own
  report in a file it names, and exits with ``EXIT_PEER_LOST`` (69), like a survivor
  that finds any other peer lost;
- when the child ends by another signal (killed), says so in one line, shows what was
  held, and exits 128 + the signal's number, as a shell reports it;
- otherwise exits with the child's own status (0, 1, 2, 69, 74, 75, 130: docs/pod.md).

Signals: the child runs in its own session, so the terminal's Ctrl-C and a signal to
the launcher's process group reach the parent alone, which forwards each SIGTERM /
SIGINT / SIGHUP it receives to the child once. A scheduler that signals every process
of a job (SLURM's cgroup) reaches the child twice, directly and forwarded, within
milliseconds: the child counts a signal that repeats the previous one within
``preemption.DUPLICATE_S`` (1 s) as the same notice. On Linux the child is
killed when the parent dies (``PR_SET_PDEATHSIG``), so a killed process never leaves a
headless trainer behind.

The parent imports nothing of JAX and touches no device.
"""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time

from jaxagents.preemption import SUPERVISED_VAR, resume_advice

EXIT_PEER_LOST = 69  # as jaxagents.population.peers (which imports JAX)
HOLD_S = 2.0  # a native line is shown this long after it came unless the child died
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
# glog lines (severity, MMDD, time, thread id, file:line]), absl's stack trace, faulthandler's report
NATIVE = re.compile(rb"^([IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ \S+:\d+\]|\*\*\* |\s+@ +0x|Fatal Python error|"
                    rb"Thread 0x|Current thread 0x|  File \"|Extension modules:|terminate called)")
# what JAX's client writes when the coordination service (process 0) is gone
COORDINATOR_GONE = (b"distributed service detected fatal errors", b"coordination service",
                    b"CoordinationService", b"coordination_service")


def supervised() -> bool:
    """Whether this process is the training child of a supervisor."""
    return os.environ.get(SUPERVISED_VAR) == "1"


def _die_with_parent() -> None:  # runs in the child between fork and exec
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the child may outlive a killed parent
        pass


class _Stderr:
    """The child's stderr on its way to ours, native lines held back (see the module
    docstring)."""

    def __init__(self, out):
        self.out = out  # a binary stream
        self.held: list[bytes] = []
        self.held_at = 0.0
        self.pending = b""  # the start of a line that may turn out to be native
        self.mid_line = False  # a line's start was written already (a progress bar's \r line)

    def feed(self, chunk: bytes) -> None:
        data, start = self.pending + chunk, 0
        self.pending = b""
        while (end := data.find(b"\n", start)) >= 0:
            self._line(data[start:end + 1])
            start = end + 1
        rest = data[start:]
        if rest and (self.mid_line or (not self.held and rest[:1] not in b"IWEFTCt*\t ")):
            self._write(rest)
            self.mid_line = True
        else:
            self.pending = rest

    def _line(self, line: bytes) -> None:
        if self.mid_line:  # the end of a line already begun
            self.mid_line = False
            self._write(line)
        elif self.held or NATIVE.match(line):
            if not self.held:
                self.held_at = time.monotonic()
            self.held.append(line)
        else:
            self._write(line)

    def tick(self) -> None:
        """Show what was held once the child has outlived it by ``HOLD_S``."""
        if self.held and time.monotonic() - self.held_at > HOLD_S:
            self.release()

    def release(self) -> None:
        held, self.held = self.held, []
        self._write(b"".join(held) + self.pending)
        self.pending = b""

    def _write(self, data: bytes) -> None:
        if data:
            try:
                self.out.write(data)
                self.out.flush()
            except (BrokenPipeError, ValueError):
                pass


def _where(run_dir: str | None) -> str:
    if run_dir is None:
        return "continue the run with `jaxagents train --resume RUN_DIR` with the same command on every process"
    return resume_advice(run_dir, None, " with the same command on every process")


def _keep(text: bytes) -> str:
    """JAX's own report, kept in a file: its path."""
    fd, path = tempfile.mkstemp(prefix="jaxagents-abort-", suffix=".log")
    with os.fdopen(fd, "wb") as f:
        f.write(text)
    return path


def run(argv: list[str], run_dir: str | None, process: str, command: tuple[str, ...] | None = None) -> int:
    """Run ``jaxagents ARGV`` as the supervised child and return this process's exit
    status (see the module docstring). ``run_dir``: the run's directory (for the last
    checkpoint), ``process``: this process as the launch names it (``process 1``);
    ``command``: what runs ARGV (default this Python's ``-m jaxagents.cli``)."""
    env = {**os.environ, SUPERVISED_VAR: "1"}
    command = (sys.executable, "-m", "jaxagents.cli") if command is None else command
    child = subprocess.Popen([*command, *argv], stderr=subprocess.PIPE, env=env,
                             start_new_session=True, preexec_fn=_die_with_parent)
    forwarding = threading.current_thread() is threading.main_thread()  # (Python's signals reach it alone)
    previous = {s: signal.signal(s, lambda signum, frame: child.send_signal(signum)) for s in FORWARDED if forwarding}
    stderr = _Stderr(sys.stderr.buffer)
    fd = child.stderr.fileno()
    try:
        while True:
            ready, _, _ = select.select([fd], [], [], 0.25)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                stderr.feed(chunk)
            stderr.tick()
        code = child.wait()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    report = b"".join(stderr.held) + stderr.pending
    if (code < 0 or code == 134) and any(k in report for k in COORDINATOR_GONE):
        where = _where(run_dir)
        kept = _keep(report)
        sys.stderr.write(f"jaxagents train: lost process 0 (the coordinator: killed, crashed or stopped by its own "
                         f"error, see its message); the run stopped on {process}; {where} (JAX's own report: "
                         f"{kept})\n")
        sys.stderr.flush()
        return EXIT_PEER_LOST
    stderr.release()
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:  # a real-time signal without a name
            name = f"signal {-code}"
        sys.stderr.write(f"jaxagents train: the training process of {process} was ended by {name}; "
                         f"{_where(run_dir)}\n")
        sys.stderr.flush()
        return 128 - code
    return code

"""The processes of a distributed run agree before they train and keep in touch while they do.

**Agreement** (``check_same_launch``). After the join every process publishes its launch
facts -- the process count and coordinator it was started with, the package version,
a digest of the package's code, the run directory, whether it resumes, and the resolved
config -- in JAX's coordination service, reads every other process's, and compares them
with process 0's. The first difference is refused on every process with one line
naming it (``jaxagents train`` exits 2), before anything is written: e.g. ``process 1
was started with JAXAGENTS_NUM_PROCESSES=3, process 0 with 2``.

**A lost peer** (``watch``). While a run trains, a thread of each process writes a
heartbeat into the coordination service every second and reads the others'. When a
process's heartbeat stops for ``JAXAGENTS_PEER_TIMEOUT`` seconds (default 20: killed,
crashed, hung, or stopped alone by its own error), or the coordinator stops answering
(process 0 is gone), every survivor stops with one line naming the lost process, the
last checkpoint and the ``--resume`` command, and exit status ``EXIT_PEER_LOST`` (69,
EX_UNAVAILABLE), whatever its main thread is doing: a collective waiting for a dead
peer never returns, and JAX alone would abort it with a C++ stack trace once its own
heartbeat timeout (raised above ours by ``distributed.initialize``) ran out.

When process 0 itself dies, the coordination service dies with it, and JAX's client
in every survivor aborts within a second (status 134, "the JAX distributed service
detected fatal errors"), before this thread can speak. jaxlib 0.10.2 takes a
``missed_heartbeat_callback`` to replace that abort, but cannot call a Python one (its
``absl::Status`` argument has no Python type: the process then ends with
``std::bad_cast``), so ``jaxagents train --distributed`` trains in a child process and
its parent reports that abort in one line (``jaxagents.supervisor``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import sys
import threading
import time

import jax

PEER_TIMEOUT_VAR = "JAXAGENTS_PEER_TIMEOUT"
DEFAULT_PEER_TIMEOUT_S = 20.0
EXIT_PEER_LOST = 69
BEAT_S = 1.0
LAUNCH: dict = {}  # what this process was started with (distributed.initialize fills it)
_ROUNDS = {"launch": 0, "watch": 0}


def peer_timeout() -> float:
    """``JAXAGENTS_PEER_TIMEOUT`` in seconds (default 20); one line naming it when malformed."""
    value = os.environ.get(PEER_TIMEOUT_VAR) or None
    try:
        seconds = DEFAULT_PEER_TIMEOUT_S if value is None else float(value.strip())
    except ValueError:
        seconds = math.nan
    if not 0 < seconds < math.inf:
        raise ValueError(f"{PEER_TIMEOUT_VAR}={value!r}: must be a number of seconds > 0")
    return seconds


def _client():
    from jax._src import distributed as jax_distributed  # the client JAX joined with

    return jax_distributed.global_state.client


def code_digest() -> str:
    """sha256 (16 hex digits) of the package's Python files: two checkouts that differ
    in any line differ here, whatever their version says."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    h = hashlib.sha256()
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__pycache__")))
        for name in sorted(f for f in files if f.endswith(".py")):
            path = os.path.join(folder, name)
            h.update(os.path.relpath(path, root).encode())
            with open(path, "rb") as f:
                h.update(f.read())
    return h.hexdigest()[:16]


def launch_facts(config: dict, run_dir: str, resume: bool) -> dict:
    """This process's launch facts (see the module docstring), as JSON-able values."""
    import jaxagents

    return {
        "JAXAGENTS_NUM_PROCESSES": LAUNCH.get("num_processes") or jax.process_count(),
        "JAXAGENTS_COORDINATOR": LAUNCH.get("coordinator"),
        "jaxagents version": jaxagents.__version__,
        "jax version": jax.__version__,
        "code": code_digest(),
        "--run-dir": run_dir,
        "--resume": bool(resume),
        "config": json.loads(json.dumps(config, sort_keys=True, default=str)),
    }


def first_difference(a, b, path: str = "") -> tuple[str, object, object] | None:
    """The first ``(key path, a's value, b's value)`` where two JSON values differ
    (dict keys in sorted order), or None when they are equal."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            inner = f"{path}.{k}" if path else str(k)
            if k not in a or k not in b:
                return inner, a.get(k, "(unset)"), b.get(k, "(unset)")
            found = first_difference(a[k], b[k], inner)
            if found:
                return found
        return None
    return None if a == b else (path, a, b)


def compare(facts: list[dict]) -> str | None:
    """One line naming the first process whose facts differ from process 0's, and
    where; None when all agree."""
    for i, other in enumerate(facts[1:], start=1):
        found = first_difference(facts[0], other)
        if found:
            key, mine, theirs = found
            what = key if not key.startswith("config.") else f"config key {key[len('config.'):]}"
            return (f"the processes were not started alike: process {i} has {what}={theirs!r}, process 0 has "
                    f"{mine!r}: start every process with the same command, settings and code")
    return None


def check_same_launch(config: dict, run_dir: str, resume: bool, timeout_s: float | None = None) -> None:
    """Refuse (one-line ``ValueError``, on every process) a run whose processes were
    started with different facts; nothing with one process."""
    if jax.process_count() == 1:
        return
    timeout_s = peer_timeout() if timeout_s is None else timeout_s
    client = _client()
    _ROUNDS["launch"] += 1
    prefix = f"jaxagents/launch/{_ROUNDS['launch']}"
    client.key_value_set(f"{prefix}/{jax.process_index()}", json.dumps(launch_facts(config, run_dir, resume)))
    facts = []
    for i in range(jax.process_count()):
        try:
            facts.append(json.loads(client.blocking_key_value_get(f"{prefix}/{i}", int(timeout_s * 1000))))
        except Exception:  # noqa: BLE001  (jax's runtime error: a deadline or a lost coordinator)
            raise ValueError(f"process {i} did not publish its launch facts within {timeout_s:g} s (it stopped "
                             f"before training, see its own message, or is hung); raise {PEER_TIMEOUT_VAR} "
                             "(seconds) if it starts much later") from None
    line = compare(facts)
    if line:
        raise ValueError(line)


class _Watch:
    """The heartbeat thread of one process (see the module docstring)."""

    def __init__(self, guard, timeout_s: float):
        self.guard, self.timeout_s = guard, timeout_s
        self.me, self.count = jax.process_index(), jax.process_count()
        _ROUNDS["watch"] += 1
        self.prefix = f"jaxagents/alive/{_ROUNDS['watch']}"
        self.stop = threading.Event()
        self.client = _client()
        self.thread = threading.Thread(target=self._run, name="jaxagents-peers", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        seen = {i: (None, time.monotonic()) for i in range(self.count) if i != self.me}
        beat, failing_since = 0, None
        while not self.stop.is_set():
            try:
                beat += 1
                self.client.key_value_set(f"{self.prefix}/{self.me}", str(beat), allow_overwrite=True)
                now = time.monotonic()
                for i, (value, since) in seen.items():
                    current = self._read(i)
                    if current == "done":
                        continue
                    if current != value:
                        seen[i] = (current, now)
                    elif now - since > self.timeout_s:
                        self.lost(i, f"no sign of life for {self.timeout_s:g} s: killed, crashed, hung, or stopped by "
                                     "its own error (see its message)")
                failing_since = None
            except Exception as e:  # noqa: BLE001  (the coordination service does not answer: process 0 is gone)
                failing_since = failing_since or time.monotonic()
                if time.monotonic() - failing_since > min(self.timeout_s, 10.0):
                    first = " ".join(str(e).split())[:120]
                    self.lost(0, f"the coordinator (process 0) stopped answering ({first})")
            self.stop.wait(BEAT_S)

    def _read(self, i: int) -> str | None:
        try:
            return self.client.key_value_try_get(f"{self.prefix}/{i}")
        except Exception as e:  # noqa: BLE001
            if "NOT_FOUND" in str(e) or "not found" in str(e).lower():
                return None  # not started beating yet
            raise

    def lost(self, process: int, why: str) -> None:
        """End this process with one line: the lost peer, the last checkpoint, how to go on."""
        if self.stop.is_set():
            return
        self.guard.writing.acquire(timeout=3.0)  # a checkpoint being written completes first
        name = f"process {process} of {self.count}"
        try:
            sys.stderr.write(f"jaxagents train: lost {name} ({why}); the run stopped on "
                             f"process {self.me}; {self.guard.where()}\n")
            sys.stderr.flush()
        finally:
            os._exit(EXIT_PEER_LOST)

    def finish(self, done: bool) -> None:
        """Stop beating; ``done``: say so, so that the peers do not count this process lost."""
        if done:
            with contextlib.suppress(Exception):
                self.client.key_value_set(f"{self.prefix}/{self.me}", "done", allow_overwrite=True)
        self.stop.set()




AGREED = ("Preempted", "TrainingDiverged")  # every process stops on these together (and on errors marked agreed)


@contextlib.contextmanager
def watch(guard):
    """Watch the other processes for the duration of a ``with`` block (nothing with one
    process). An error that every process meets together (a signal, divergence, a run
    directory gone found by the per-call decision: ``agreed``) or none ends the watch
    for good; any other error first waits up to
    the peer timeout for a lost peer to be found (a collective with a dead peer fails
    with gloo's words: the lost process is the cause to report), then goes on."""
    if jax.process_count() == 1:
        yield None
        return
    w = _Watch(guard, peer_timeout())
    try:
        yield w
    except BaseException as e:
        if type(e).__name__ in AGREED or getattr(e, "agreed", False):
            w.finish(done=True)
        else:
            deadline = time.monotonic() + w.timeout_s + 2 * BEAT_S
            while time.monotonic() < deadline and w.thread.is_alive():  # the thread exits the process if it finds one
                time.sleep(0.1)
            w.finish(done=False)
        raise
    else:
        w.finish(done=True)

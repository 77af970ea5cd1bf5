"""Several JAX processes -- the hosts of a TPU pod, the nodes of a GPU cluster, or
several processes on one machine -- running one population.

``initialize()`` calls ``jax.distributed.initialize`` once per process. Arguments,
in order of precedence: the call's own, then the environment variables

    JAXAGENTS_COORDINATOR      host:port of process 0 (e.g. 127.0.0.1:12345)
    JAXAGENTS_NUM_PROCESSES    how many processes
    JAXAGENTS_PROCESS_ID       this process's index, 0 .. num_processes - 1
    JAXAGENTS_INIT_TIMEOUT     seconds to wait for all processes to join (default 30)

and with none of the first three JAX's own cluster detection (Cloud TPU pods, SLURM,
Open MPI, Kubernetes), so on a pod ``initialize()`` takes no arguments. On CPU the
collectives go through gloo.

Every process checks its launch before it waits for the others, and each failure is
one line (``jaxagents train --distributed`` prints a ValueError as ``jaxagents train:
error: ...`` and exits with status 2):

- a malformed value, or only some of the three variables: a ValueError at once, e.g.
  ``JAXAGENTS_PROCESS_ID='2': must be an integer from 0 to 1 (JAXAGENTS_NUM_PROCESSES=2)``;
- none of them and no cluster detected: a ValueError naming the three variables;
- process 0 finds the coordinator's port taken on its own machine (where JAX starts
  the coordinator, whatever host JAXAGENTS_COORDINATOR names): a ValueError at once,
  where JAX alone would segfault;
- the processes have not all joined JAXAGENTS_INIT_TIMEOUT seconds after this one
  started waiting (an id used twice or missing, a process that failed one of the checks
  above, different coordinators or process counts, process 0 not running or started
  late): it prints ``jaxagents: error: process I of N waited T s for all processes to
  join: check ...`` on stderr and exits with status 2. A watchdog thread does this:
  JAX's own initialization_timeout ends the wait with an abort and a C++ stack trace.

After the join, one limit on CPU cannot be raised: the first collective over a set of
devices (a run's first cross-process step) has gloo connect those devices through the
coordinator, and every process must get there within 30 s of the first, else that one
fails with ``Gloo context initialization failed: DEADLINE_EXCEEDED: GetKeyValue() timed
out with key: cpu:gloo/... and duration: 29.99...s``. It is gloo's default context
timeout, which XLA neither sets nor exposes (jaxlib 0.10.2); later collectives over the
same devices, already connected, wait without it. After that failure the processes
wait at JAX's shutdown barrier (shutdown_timeout_seconds, 5 minutes) before they
abort, and one stuck in the collective ignores SIGTERM (JAX's preemption service
catches it): stop them with SIGKILL.

Once joined, ``jax.devices()`` lists every device of every process: a ``pop`` mesh over
them (``mesh.make_mesh()``) spreads the members over all hosts, each process builds
and updates only the members on its own devices (``jit`` with ``out_shardings``
creates each shard where it lives), and ``gather`` brings a sharded result to every
process. Only process 0 writes logs, tables and plots (``is_main``).
"""

from __future__ import annotations

import math
import os
import socket
import sys
import threading

import jax
import numpy as np

ENV_VARS = ("JAXAGENTS_COORDINATOR", "JAXAGENTS_NUM_PROCESSES", "JAXAGENTS_PROCESS_ID")
TIMEOUT_VAR = "JAXAGENTS_INIT_TIMEOUT"
DEFAULT_TIMEOUT_S = 30.0
_STARTED = False


def _setting(arg, arg_name: str, var: str, environ) -> tuple[object, str]:
    """A value and the name to blame for it: the argument if given, else the variable
    (an empty variable counts as unset)."""
    if arg is not None:
        return arg, arg_name
    return environ.get(var) or None, var


def _integer(name: str, value, low: int, high: int | None = None, context: str = "") -> int:
    try:
        number = int(str(value).strip())  # str() first: no silent 2.7 -> 2 or True -> 1
    except ValueError:
        number = None
    if number is None or number < low or (high is not None and number > high):
        allowed = f"an integer >= {low}" if high is None else f"an integer from {low} to {high}"
        raise ValueError(f"{name}={str(value)!r}: must be {allowed}{context}")
    return number


def _seconds(value, name: str, default: float) -> float:
    """A timeout in seconds (``default`` when unset), finite and > 0; else one line naming ``name``."""
    try:
        seconds = default if value is None else float(str(value).strip())
    except ValueError:
        seconds = math.nan
    if not 0 < seconds < math.inf:
        raise ValueError(f"{name}={str(value)!r}: must be a number of seconds > 0")
    return seconds


def _port(name: str, coordinator) -> int:
    host, _, port = str(coordinator).strip().rpartition(":")
    try:
        number = int(port)
    except ValueError:
        number = 0
    if not host.strip("[]") or not 1 <= number <= 65535:
        raise ValueError(f"{name}={str(coordinator)!r}: must be host:port with a port from 1 to 65535 "
                         "(e.g. 127.0.0.1:12345)")
    return number


def check_launch(coordinator=None, num_processes=None, process_id=None, timeout_s=None, environ=None):
    """``(coordinator, num_processes, process_id, timeout_s)`` from the arguments and the
    environment, checked; the first three are None when neither gives any of them (the
    cluster's own detection then applies). A ValueError names the faulty setting."""
    environ = os.environ if environ is None else environ
    coordinator, coordinator_name = _setting(coordinator, "coordinator", ENV_VARS[0], environ)
    num_processes, count_name = _setting(num_processes, "num_processes", ENV_VARS[1], environ)
    process_id, id_name = _setting(process_id, "process_id", ENV_VARS[2], environ)
    timeout = _seconds(*_setting(timeout_s, "timeout_s", TIMEOUT_VAR, environ), DEFAULT_TIMEOUT_S)
    given = [x is not None for x in (coordinator, num_processes, process_id)]
    if not any(given):
        return None, None, None, timeout
    if not all(given):
        missing = ", ".join(v for v, g in zip(ENV_VARS, given, strict=True) if not g)
        verb = "is" if sum(given) == 2 else "are"
        raise ValueError(f"--distributed: {missing} {verb} not set: give all of {', '.join(ENV_VARS)}, or none of "
                         "them on a cluster that JAX detects (SLURM, Open MPI, Cloud TPU, Kubernetes)")
    _port(coordinator_name, coordinator)
    count = _integer(count_name, num_processes, 1)
    index = _integer(id_name, process_id, 0, count - 1, f" ({count_name}={count})")
    return str(coordinator).strip(), count, index, timeout


def _check_port_free(coordinator: str) -> None:
    """Process 0 starts the coordinator on its own machine (JAX binds [::]:port there,
    or JAX_COORDINATOR_BIND_ADDRESS), and JAX segfaults when that port is taken: try it
    first."""
    bind = os.environ.get("JAX_COORDINATOR_BIND_ADDRESS") or "[::]:" + coordinator.rpartition(":")[2]
    host, _, port = bind.rpartition(":")
    host = host.strip("[]")
    try:
        sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    except OSError:  # no IPv6 here: gRPC then listens on IPv4 only
        host, sock = "0.0.0.0", socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    with sock:
        # as gRPC does: a port left in TIME_WAIT by an earlier run is free, one that
        # something listens on is not
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if sock.family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)  # [::] covers IPv4 too
        try:
            sock.bind((host, int(port)))
        except OSError as e:
            raise ValueError(f"JAXAGENTS_COORDINATOR={coordinator}: port {port} is already in use on this machine, "
                             f"where process 0 starts the coordinator ({e.strerror}): choose a free port for every "
                             "process, or stop what holds it (another process 0, or an earlier run?)") from None


class _Watchdog:
    """Ends the process with ``message`` unless ``done()`` is called within ``timeout_s``.
    A timer thread (JAX's wait releases the GIL), because JAX's own initialization_timeout
    ends the wait only by aborting the process with a C++ stack trace, seconds late."""

    def __init__(self, timeout_s: float, message: str):
        self._lock = threading.Lock()
        self._done = False
        self._message = message
        self._timer = threading.Timer(timeout_s, self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        with self._lock:  # held to the end: done() cannot slip in between the check and the exit
            if self._done:
                return
            try:
                sys.stderr.write(self._message + "\n")
                sys.stderr.flush()
            finally:
                os._exit(2)  # like the CLI's other errors; sys.exit would only end this thread

    def done(self) -> None:
        with self._lock:
            self._done = True
        self._timer.cancel()


def initialize(coordinator: str | None = None, num_processes: int | None = None, process_id: int | None = None,
               timeout_s: float | None = None) -> None:
    """Join the processes of a run (see the module docstring); a second call does nothing.
    ``timeout_s`` (default JAXAGENTS_INIT_TIMEOUT, else 30) bounds the wait for the others."""
    global _STARTED
    if _STARTED:
        return
    coordinator, num_processes, process_id, timeout_s = check_launch(coordinator, num_processes, process_id, timeout_s)
    if process_id == 0:
        _check_port_free(coordinator)
    if jax.config.jax_platforms in (None, "", "cpu") or os.environ.get("JAX_PLATFORMS", "") == "cpu":
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    if coordinator is None:
        who, fix = "this process", "check that the cluster started every process of the job"
    else:
        who = f"process {process_id} of {num_processes}"
        fix = (f"check that every process has JAXAGENTS_COORDINATOR={coordinator} and JAXAGENTS_NUM_PROCESSES="
               f"{num_processes}, that each JAXAGENTS_PROCESS_ID from 0 to {num_processes - 1} is used once (none "
               "twice, none missing) and that process 0 runs on the coordinator's host")
    watchdog = _Watchdog(timeout_s, f"jaxagents: error: {who} waited {timeout_s:g} s for all processes to join: "
                                    f"{fix}; or raise {TIMEOUT_VAR} (seconds) if some start later")
    try:
        # JAX's own timeout only as a backstop: the watchdog speaks first
        # JAX's heartbeat timeout above ours (peers.watch): a lost peer is our one line, not JAX's abort
        from jaxagents.population import peers

        heartbeat = max(100, math.ceil(3 * peers.peer_timeout()) + 10)
        peers.LAUNCH.update(coordinator=coordinator, num_processes=num_processes, process_id=process_id)
        jax.distributed.initialize(coordinator_address=coordinator, num_processes=num_processes,
                                   process_id=process_id, initialization_timeout=math.ceil(timeout_s) + 30,
                                   heartbeat_timeout_seconds=heartbeat)
    except ValueError as e:
        if coordinator is None:  # JAX found no cluster and names its own arguments, not ours
            raise ValueError(f"--distributed: no cluster detected (SLURM, Open MPI, Cloud TPU, Kubernetes) and "
                             f"{', '.join(ENV_VARS)} are not set: set all three on every process (jax: {e})") from None
        raise
    finally:
        watchdog.done()
    _STARTED = True


class ProcessesApart(RuntimeError):
    """The processes of a run did not reach the same point in time (one line)."""


GLOO_CONNECT = "Gloo context initialization failed"


def explain_gloo_timeout(text: str) -> str | None:
    """One line for gloo's failure to connect a device group in time (None for any
    other error): which limit it is, and what to do."""
    if GLOO_CONNECT not in text:
        return None
    first = " ".join(text.split("\n")[0].split())[:300]
    return (f"the processes reached a cross-process step more than 30 s apart ({first}): gloo's connect limit, fixed in "
            f"jaxlib; the run waits at a barrier after each compile ({SYNC_TIMEOUT_VAR}), so this means one process "
            "stalled between two steps (an overloaded host?); continue with --resume")


SYNC_TIMEOUT_VAR = "JAXAGENTS_SYNC_TIMEOUT"
DEFAULT_SYNC_TIMEOUT_S = 1800.0
_BARRIERS: dict[str, int] = {}


def wait_for_all(name: str, timeout_s: float | None = None) -> None:
    """Every process reaches ``name`` before any goes on; nothing with one process.

    The runner calls it after each compile, so that the processes start a program
    together: gloo gives the first collective over a group of devices 30 s to connect
    them (see the module docstring), and one host compiling a minute longer than another
    would otherwise fail the run there. This is the coordination service's barrier, not
    a device collective, so it has no such limit: it waits ``timeout_s`` (default
    JAXAGENTS_SYNC_TIMEOUT, else 30 minutes) and then fails with one line naming that
    variable."""
    if jax.process_count() == 1:
        return
    from jax._src import distributed as jax_distributed  # the client JAX joined with; no public barrier

    timeout_s = _seconds(*_setting(timeout_s, "timeout_s", SYNC_TIMEOUT_VAR, os.environ), DEFAULT_SYNC_TIMEOUT_S)
    count = _BARRIERS[name] = _BARRIERS.get(name, 0) + 1  # a barrier's id is used once: number the repeats
    try:
        jax_distributed.global_state.client.wait_at_barrier(f"jaxagents:{name}:{count}", int(timeout_s * 1000))
    except Exception as e:  # jax's runtime error: DEADLINE_EXCEEDED, or a process that died
        first = " ".join(str(e).split("\n")[0].split())[:300]
        raise ProcessesApart(f"process {jax.process_index()} of {jax.process_count()} waited for the others at {name!r} "
                           f"for up to {timeout_s:g} s and they did not all arrive ({first}): one may have stopped, or "
                           f"compile much more slowly; raise {SYNC_TIMEOUT_VAR} (seconds) for the latter") from None


def is_main() -> bool:
    """Whether this process writes the run's logs, tables and plots."""
    return jax.process_index() == 0


def gather(tree):
    """A (possibly sharded, possibly multi-process) pytree as host numpy arrays, the
    same on every process."""
    if jax.process_count() == 1:
        return jax.tree.map(lambda x: np.asarray(jax.random.key_data(x) if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key) else x), tree)
    from jax.experimental import multihost_utils

    def one(x):
        if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
            x = jax.random.key_data(x)
        return np.asarray(multihost_utils.process_allgather(x, tiled=True))

    return jax.tree.map(one, tree)

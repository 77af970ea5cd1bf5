"""Stopping a run cleanly when the machine is taken back.

Cloud TPU, SLURM and Kubernetes stop a job by sending SIGTERM and, after a grace
period (SLURM's ``KillWait``, 30 s by default; about 30 s for a preempted Cloud TPU
VM), SIGKILL. ``Preemption`` turns the first SIGTERM into a request to stop at the
next update boundary where the runner checkpoints (every ``checkpoint_every``
updates): the segment that is running finishes, its checkpoint is written, and
the run raises ``Preempted`` (``jaxagents train`` exits with status
``EXIT_PREEMPTED``, 75, EX_TEMPFAIL: "try again", which ``--resume`` does,
bit-identically). A second SIGTERM stops the process at once (the default action),
for a run that must not wait for its segment.

Over several processes (``--distributed``) the signal may reach one process only,
or reach them at different moments: at every boundary each process calls
``stop_agreed(update)``, which combines every process's request (one small
all-gather), so that all of them stop after the same update and write that
checkpoint together. JAX's own preemption service, where it runs (a TPU pod learns of
a maintenance event through it), is asked at the same points
(``multihost_utils.reached_preemption_sync_point``).

A segment cannot be cut short once it runs (it is one compiled call), so the
updates at risk are those of one segment: choose ``checkpoint_every`` so that a
segment takes less than the grace period. A SIGKILL before the boundary loses
only the updates since the last checkpoint, never the run.
"""

from __future__ import annotations

import os
import signal
import sys
import threading

import numpy as np

EXIT_PREEMPTED = 75


class Preempted(RuntimeError):
    """The run stopped at an update boundary on SIGTERM, its checkpoint written;
    ``--resume`` continues it."""


class Preemption:
    """A SIGTERM watch for the duration of a ``with`` block (see the module
    docstring). Outside the main thread (where Python cannot take signals) it
    watches nothing and ``stop_agreed`` only consults the other processes and JAX."""

    def __init__(self, announce: bool = True):
        self.requested = False
        self.announce = announce
        self._previous = None
        self._installed = False

    def __enter__(self) -> "Preemption":
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGTERM, self._on_signal)
            self._installed = True
        return self

    def __exit__(self, *exc) -> None:
        if self._installed:
            signal.signal(signal.SIGTERM, self._previous if self._previous is not None else signal.SIG_DFL)
            self._installed = False

    def _on_signal(self, signum, frame) -> None:
        if self.requested:  # the second one: stop now, as if no handler were installed
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        self.requested = True
        if self.announce:
            print("jaxagents: SIGTERM received: the run stops after the running segment, once its checkpoint is "
                  "written (send SIGTERM again to stop at once)", file=sys.stderr, flush=True)

    def stop_agreed(self, update: int) -> bool:
        """Whether every process stops after ``update`` (each process must call this
        at the same boundaries: it is a collective with several processes)."""
        import jax

        if jax.process_count() == 1:
            return self.requested
        from jax.experimental import multihost_utils

        flags = multihost_utils.process_allgather(np.int32(self.requested))
        return bool(np.any(flags)) or _jax_sync_point(update)


def _jax_sync_point(update: int) -> bool:
    """JAX's preemption service's verdict at ``update`` (False where it does not run,
    e.g. disabled, or on a backend whose client has none)."""
    from jax._src import distributed as jax_distributed  # where JAX keeps whether the service started

    if getattr(jax_distributed.global_state, "preemption_sync_manager", None) is None:
        return False
    from jax.experimental import multihost_utils

    return bool(multihost_utils.reached_preemption_sync_point(update))

"""Several JAX processes -- the hosts of a TPU pod, the nodes of a GPU cluster, or
several processes on one machine -- running one population.

``initialize()`` calls ``jax.distributed.initialize`` once per process. Arguments,
in order of precedence: the call's own, then the environment variables

    JAXAGENTS_COORDINATOR      host:port of process 0 (e.g. 127.0.0.1:12345)
    JAXAGENTS_NUM_PROCESSES    how many processes
    JAXAGENTS_PROCESS_ID       this process's index, 0 .. num_processes - 1

and with none of them JAX's own cluster detection (Cloud TPU pods, SLURM, ...), so on
a pod ``initialize()`` takes no arguments. On CPU the collectives go through gloo.

After it, ``jax.devices()`` lists every device of every process: a ``pop`` mesh over
them (``mesh.make_mesh()``) spreads the members over all hosts, each process builds
and updates only the members on its own devices (``jit`` with ``out_shardings``
creates each shard where it lives), and ``gather`` brings a sharded result to every
process. Only process 0 writes logs, tables and plots (``is_main``).
"""

from __future__ import annotations

import os

import jax
import numpy as np

ENV_VARS = ("JAXAGENTS_COORDINATOR", "JAXAGENTS_NUM_PROCESSES", "JAXAGENTS_PROCESS_ID")
_STARTED = False


def initialize(coordinator: str | None = None, num_processes: int | None = None, process_id: int | None = None,
               timeout_s: int = 120) -> None:
    """Join the processes of a run (see the module docstring); a second call does nothing."""
    global _STARTED
    if _STARTED:
        return
    coordinator = coordinator or os.environ.get("JAXAGENTS_COORDINATOR")
    if num_processes is None and os.environ.get("JAXAGENTS_NUM_PROCESSES"):
        num_processes = int(os.environ["JAXAGENTS_NUM_PROCESSES"])
    if process_id is None and os.environ.get("JAXAGENTS_PROCESS_ID"):
        process_id = int(os.environ["JAXAGENTS_PROCESS_ID"])
    given = [coordinator is not None, num_processes is not None, process_id is not None]
    if any(given) and not all(given):
        raise ValueError(
            "--distributed: give all of JAXAGENTS_COORDINATOR, JAXAGENTS_NUM_PROCESSES and JAXAGENTS_PROCESS_ID, "
            "or none (a TPU pod or SLURM detects them)"
        )
    if jax.config.jax_platforms in (None, "", "cpu") or os.environ.get("JAX_PLATFORMS", "") == "cpu":
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address=coordinator, num_processes=num_processes, process_id=process_id,
                               initialization_timeout=timeout_s)
    _STARTED = True


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

"""How a run's updates are cut into compiled calls and checkpoints, by count and by time.

A run checkpoints every ``checkpoint_every`` updates and, with ``checkpoint_seconds``
> 0, at least every ``checkpoint_seconds`` seconds, whatever the speed of an update: a
preemption notice (about 30 s on Cloud TPU, SLURM's ``KillWait``) then always leaves
time to finish the running call and write its checkpoint.

One program serves every call: ``compile_program`` compiles ``fori_loop(0, n,
update)`` with the number of updates ``n`` an argument (a ``while`` loop whose body
does not depend on ``n``), writing each update's metrics into a buffer of
``max_length`` rows. So the cut -- which depends on wall time -- never changes a
number: an interrupted and resumed run is bit-identical to an uninterrupted one.

``Clock`` chooses each call's length: a first call of one update measures the time
of an update, later calls take as many updates as fit in what is left of the
``checkpoint_seconds`` budget (with a margin), never crossing a multiple of
``checkpoint_every``. Over several processes their choices (and their stop requests,
and a run directory gone) are combined by ``agree`` in one all-gather, so that every
process runs the same calls and checkpoints the same updates.
"""

from __future__ import annotations

import dataclasses
import time

import jax
import jax.numpy as jnp
import numpy as np

MARGIN = 1.25  # an update's time is taken as 1.25 x the last measured (evaluations make some slower)


def shared_update(state):
    """``state`` with its per-seed update counters ``i32[S]`` (all equal) as one scalar."""
    return state.replace(update=state.update[0])


def compile_program(learner, state, max_length: int):
    """The compiled call ``(state with a shared update counter, n: i32) -> (state,
    metrics {name: [S, max_length, ...]})`` running ``n <= max_length`` updates of every
    seed (``vmap``; rows past ``n`` are zeros). Seeds advance in lockstep, so the update
    counter enters the ``vmap`` unbatched: a ``lax.cond`` on it (evaluate every K
    updates) stays a branch instead of a select that evaluates on every update."""
    one = jax.tree.map(lambda x: x[0], state).replace(update=state.update[0])
    shapes = jax.eval_shape(learner.update, one)[1]  # one seed's metrics of one update

    def run(s, n):
        buffer = jax.tree.map(lambda x: jnp.zeros((max_length, *x.shape), x.dtype), shapes)

        def step(i, carry):
            s, buffer = carry
            s, m = learner.update(s)
            return s, jax.tree.map(lambda b, x: jax.lax.dynamic_update_index_in_dim(b, x, i, 0), buffer, m)

        return jax.lax.fori_loop(0, n, step, (s, buffer))

    axes = jax.tree.map(lambda _: 0, state).replace(update=None)
    program = jax.jit(jax.vmap(run, in_axes=(axes, None), out_axes=(axes, 0)))
    return program.lower(shared_update(state), jnp.int32(max_length)).compile()


def call(program, state, n: int):
    """``n`` updates of ``state`` (counters ``i32[S]``) with ``program``: ``(state, metrics
    {name: [S, max_length, ...]}, seconds)``, the metrics still on the devices (rows
    past ``n`` are zeros: the caller slices them off on the host)."""
    t = time.perf_counter()
    S = state.update.shape[0]
    state, metrics = program(shared_update(state), jnp.int32(n))
    state = state.replace(update=jnp.broadcast_to(state.update, (S,)))
    jax.block_until_ready(state)
    return state, metrics, time.perf_counter() - t


class Clock:
    """Call lengths and checkpoint times (see the module docstring).

    Args:
        total: updates of the run.
        every: ``checkpoint_every`` (0: one segment).
        seconds: ``checkpoint_seconds`` (0: no time bound).
    """

    def __init__(self, total: int, every: int, seconds: float):
        self.total, self.every, self.seconds = total, every or total, float(seconds)
        self.per_update: float | None = None
        self.since = time.monotonic()  # the last checkpoint (or the start)

    @property
    def max_length(self) -> int:
        """The longest call: one segment of ``checkpoint_every`` updates."""
        return max(1, min(self.every, self.total))

    def boundary(self, done: int) -> int:
        """The next multiple of ``checkpoint_every`` after ``done`` (or the run's end)."""
        return min(self.total, (done // self.every + 1) * self.every)

    def on_count(self, update: int) -> bool:
        """Whether ``update`` is a checkpoint of ``checkpoint_every`` (or the run's end),
        not one written for the time bound alone."""
        return update % self.every == 0 or update >= self.total

    def to_delete(self, steps: list[int], keep: int) -> list[int]:
        """The checkpoints to remove once the newest of ``steps`` is written:
        ``keep_checkpoints`` counts the checkpoints of ``checkpoint_every``, so that a
        run keeps the same ones however it was cut; a checkpoint written for the time
        bound alone is kept only while it is the newest."""
        steps = sorted(steps)
        counted = [s for s in steps if self.on_count(s)]
        timed = [s for s in steps if not self.on_count(s) and s != steps[-1]]
        return sorted(counted[:-keep] + timed)

    def measured(self, n: int, seconds: float) -> None:
        """A call of ``n`` updates took ``seconds``."""
        if n > 0:
            self.per_update = seconds / n

    def checkpointed(self) -> None:
        """A checkpoint was just written: the time budget starts again."""
        self.since = time.monotonic()

    def fits(self, done: int, fresh: bool) -> int:
        """Updates the next call may run from ``done``: up to the next boundary and, with a
        time bound, within what is left of it (``fresh``: as if a checkpoint were written
        now). At least 1 when ``fresh``; 0 means "checkpoint first"."""
        room = self.boundary(done) - done
        if self.seconds <= 0:
            return room
        if self.per_update is None:
            return min(1, room)  # the first call measures an update
        left = self.seconds - (0.0 if fresh else time.monotonic() - self.since)
        n = int(left / (self.per_update * MARGIN)) if self.per_update > 0 else room
        return max(1 if fresh else 0, min(room, n))


@dataclasses.dataclass(frozen=True)
class Decision:
    """What every process does after a call: stop on a signal (its number, 0: no),
    stop because the run directory is gone (``fault``: a code of ``rundir.Watch``),
    checkpoint now, and the next call's length."""

    signal: int
    fault: int
    checkpoint: bool
    length: int


def decide(clock: Clock, done: int, signal: int, fault: int, jax_stop: bool = False) -> Decision:
    """This process's decision after a call ending at ``done`` (``agree`` combines
    them over processes)."""
    at_boundary = clock.on_count(done)
    n = clock.fits(done, fresh=False)
    checkpoint = at_boundary or n == 0 or bool(signal) or jax_stop
    if checkpoint:
        n = clock.fits(done, fresh=True)
    return Decision(signal or (15 if jax_stop else 0), fault, checkpoint, min(n, clock.total - done))


def agree(mine: Decision) -> Decision:
    """Every process's decision combined (one all-gather; nothing with one process):
    the first signal and fault, a checkpoint if any process wants one, the shortest
    next call."""
    if jax.process_count() == 1:
        return mine
    from jax.experimental import multihost_utils

    rows = np.asarray(multihost_utils.process_allgather(
        np.array([mine.signal, mine.fault, int(mine.checkpoint), mine.length], np.int32)))
    signals = [int(s) for s in rows[:, 0] if s]
    faults = [int(f) for f in rows[:, 1] if f]
    checkpoint = bool(rows[:, 2].any())
    length = int(rows[:, 3].min())
    return Decision(signals[0] if signals else 0, faults[0] if faults else 0, checkpoint, length)


"""``branch``: a ``lax.cond`` that stays a branch under ``vmap``.

Under ``vmap`` a ``lax.cond`` whose predicate is batched turns into a ``select``:
both sides are computed for every batch row. That is right in general and
wasteful where the expensive side is rarely needed and harmless to compute for
rows that do not need it -- e.g. the value of a truncated episode's final
observation, needed only on the steps where some environment hits its time limit,
and only read where it did. A population ``vmap``s its members' updates, so every
such ``cond`` inside a learner would run its expensive side on every step.

``branch(pred, expensive, cheap, *operands, reduce=jnp.any)`` keeps one
branch for the whole batch: a batched predicate is reduced over the batch axis
(``any``: take ``expensive`` when some row needs it -- it must then be correct, or
ignored, for the other rows; ``all``: take ``expensive`` only when every row
allows it), and the chosen side runs ``vmap``ped over the batched operands. Nested
``vmap``s reduce level by level. Without ``vmap`` it is ``lax.cond``.

Everything a side reads that may be batched must be passed as an operand (a side
may close over static values and unbatched arrays only).

On GPU a branch is not worth having: XLA's GPU runtime copies the predicate of every
``cond`` (and of every ``while_loop`` whose trip count it cannot see) back to the host
and waits for it before launching the chosen side, a device synchronisation each time.
Inside a rollout that is one or more stalls per environment step. Where
``cheap_branches()`` is False (the default backend is a GPU), ``branch`` computes both
sides and selects, row by row, which the docstring's contract already allows;
``select=True``/``False`` forces either form (tests compare the two).
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp


def cheap_branches() -> bool:
    """Whether a data-dependent ``cond`` or ``while_loop`` is cheap on the default backend.

    True on CPU (the host sequences the kernels and reads the predicate where it is) and
    TPU (the chip's scalar unit runs the control flow). False on GPU, where each one costs
    a device-to-host copy of the predicate and a wait (measured on an H100: without the two
    per rollout step an IPPO update on Overcooked took 11.5 ms instead of 21.3 ms;
    BENCHMARKS.md, "GPU").
    Decided when a function is traced, from ``jax.default_backend()``."""
    return jax.default_backend() != "gpu"


def branch(pred, expensive: Callable, cheap: Callable, *operands, reduce: Callable = jnp.any,
           select: bool | None = None):
    """``lax.cond(pred, expensive, cheap, *operands)``, one branch per batch under
    ``vmap`` (see the module docstring). Returns the chosen side's output.

    ``select``: compute both sides and pick with ``jnp.where`` row by row instead of
    branching; ``None`` (default) selects exactly where ``cheap_branches()`` is False."""
    pred = jnp.asarray(pred, bool)
    if select is None:
        select = not cheap_branches()
    if select:
        a, b = expensive(*operands), cheap(*operands)
        return jax.tree.map(lambda x, y: jnp.where(pred, x, y), a, b)
    return _branch(expensive, cheap, reduce)(pred, operands)


def _branch(expensive, cheap, reduce):
    @jax.custom_batching.custom_vmap
    def cond(pred, operands):
        return jax.lax.cond(pred, lambda ops: expensive(*ops), lambda ops: cheap(*ops), operands)

    @cond.def_vmap
    def rule(axis_size, in_batched, pred, operands):
        pred_batched, ops_batched = in_batched
        if pred_batched:
            pred = reduce(pred)
        axes = jax.tree.map(lambda b: 0 if b else None, ops_batched)
        lift = lambda fn: jax.vmap(lambda *ops: fn(*ops), in_axes=axes, axis_size=axis_size)  # noqa: E731
        out = _branch(lift(expensive), lift(cheap), reduce)(pred, operands)  # an outer vmap reduces again
        return out, jax.tree.map(lambda _: True, out)

    return cond

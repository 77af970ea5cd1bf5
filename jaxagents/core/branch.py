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
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp


def branch(pred, expensive: Callable, cheap: Callable, *operands, reduce: Callable = jnp.any):
    """``lax.cond(pred, expensive, cheap, *operands)``, one branch per ``vmap``ped
    batch (see the module docstring). Returns the chosen side's output."""
    return _branch(expensive, cheap, reduce)(jnp.asarray(pred, bool), operands)


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

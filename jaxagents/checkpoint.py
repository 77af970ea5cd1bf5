"""Checkpoints of any train state with orbax-checkpoint's ``CheckpointManager``
(the ``args=`` API): the full train state (parameters, optimiser state,
environment state, RNG key, update counter, learner extras), the resolved config
and the metrics so far, under ``<directory>/<step>/``.

Typed PRNG keys are stored as their raw key data and re-wrapped on restore, so a
restored state is bit-identical to the saved one and a resumed run continues
exactly where the saved one was.
"""

from __future__ import annotations

import os
from typing import Any

import jax
import numpy as np
import orbax.checkpoint as ocp


def _is_key(x) -> bool:
    return isinstance(x, jax.Array) and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)


def _to_saveable(tree):
    return jax.tree.map(lambda x: jax.random.key_data(x) if _is_key(x) else x, tree)


def _from_saveable(tree, like):
    return jax.tree.map(lambda x, ref: jax.random.wrap_key_data(x, impl=jax.random.key_impl(ref)) if _is_key(ref) else x, tree, like)


class Checkpointer:
    """Periodic saves of one run.

    Args:
        directory: where checkpoints live (created).
        max_to_keep: how many recent checkpoints to keep (None: all).

    Saves are synchronous: when ``save`` returns the checkpoint is on disk (a run
    killed right after can resume from it).
    """

    def __init__(self, directory: str | os.PathLike, max_to_keep: int | None = 3):
        if max_to_keep is not None and max_to_keep < 1:
            raise ValueError(f"max_to_keep must be >= 1 or None, got {max_to_keep}")
        self.directory = os.path.abspath(os.fspath(directory))
        self.manager = ocp.CheckpointManager(
            self.directory,
            options=ocp.CheckpointManagerOptions(max_to_keep=max_to_keep, enable_async_checkpointing=False, create=True),
            item_names=("state", "config", "metrics"),
        )

    def save(self, step: int, state: Any, config: dict, metrics: dict | None = None) -> None:
        """Save ``state`` (any pytree of arrays), ``config`` and ``metrics`` (JSON)."""
        self.manager.save(
            int(step),
            args=ocp.args.Composite(
                state=ocp.args.StandardSave(_to_saveable(state)),
                config=ocp.args.JsonSave(config),
                metrics=ocp.args.JsonSave(metrics or {}),
            ),
        )
        self.manager.wait_until_finished()

    def latest_step(self) -> int | None:
        return self.manager.latest_step()

    def all_steps(self) -> list[int]:
        return list(self.manager.all_steps())

    def restore(self, like: Any, step: int | None = None) -> tuple[Any, dict, dict]:
        """Restore ``(state, config, metrics)``; ``like`` is a state of the same
        structure (e.g. a fresh ``train.init(key)``) giving shapes, dtypes and which
        leaves are PRNG keys."""
        step = self.latest_step() if step is None else step
        if step is None:
            raise FileNotFoundError(f"no checkpoint in {self.directory}")
        target = jax.tree.map(
            lambda x: np.zeros(np.shape(x), np.asarray(x).dtype) if not hasattr(x, "dtype") or not _is_key(x) else x,
            _to_saveable(like),
        )
        out = self.manager.restore(
            step,
            args=ocp.args.Composite(
                state=ocp.args.StandardRestore(target),
                config=ocp.args.JsonRestore(),
                metrics=ocp.args.JsonRestore(),
            ),
        )
        return _from_saveable(out.state, like), out.config, out.metrics

    def close(self) -> None:
        self.manager.close()

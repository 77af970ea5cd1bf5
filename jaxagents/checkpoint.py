"""Checkpoints of any train state with orbax-checkpoint's ``CheckpointManager``
(the ``args=`` API): the full train state (parameters, optimiser state,
environment state, RNG key, update counter, learner extras), the resolved config
and the metrics so far, under ``<directory>/<step>/``.

Typed PRNG keys are stored as their raw key data and re-wrapped on restore, so a
restored state is bit-identical to the saved one and a resumed run continues
exactly where the saved one was.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import time
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

    def __init__(self, directory: str | os.PathLike, max_to_keep: int | None = 3, create: bool = True):
        if max_to_keep is not None and max_to_keep < 1:
            raise ValueError(f"keep_checkpoints (max_to_keep) must be >= 1 or None, got {max_to_keep}")
        self.directory = os.path.abspath(os.fspath(directory))
        if not create and not os.path.isdir(self.directory):
            raise FileNotFoundError(f"no checkpoint directory {self.directory}")
        self.max_to_keep = max_to_keep
        self.manager = self._manager(create)

    def _manager(self, create: bool = True):
        return ocp.CheckpointManager(
            self.directory,
            options=ocp.CheckpointManagerOptions(max_to_keep=self.max_to_keep, enable_async_checkpointing=False, create=create),
            item_names=("state", "config", "metrics"),
        )

    def save(self, step: int, state: Any, config: dict, metrics: dict | None = None) -> None:
        """Save ``state`` (any pytree of arrays), ``config`` and ``metrics`` (JSON).

        A save that fails for want of the file system (a full disk, a directory made
        read-only) raises ``OSError`` whose ``filename`` is the checkpoint's directory,
        without orbax's logged tracebacks; its half-written temporary directory is
        removed and the older checkpoints are untouched."""
        try:
            with _stderr_of_failures(settle_s=0.1, max_wait_s=1.0):
                self.manager.save(
                    int(step),
                    args=ocp.args.Composite(
                        state=ocp.args.StandardSave(_to_saveable(state)),
                        config=ocp.args.JsonSave(config),
                        metrics=ocp.args.JsonSave(metrics or {}),
                    ),
                )
                self.manager.wait_until_finished()
        except Exception as e:
            cause = os_error(e)
            if cause is None:
                raise
            for name in os.listdir(self.directory) if os.path.isdir(self.directory) else ():
                if name.startswith(f"{int(step)}.orbax-checkpoint-tmp"):  # never a checkpoint: free its space
                    shutil.rmtree(os.path.join(self.directory, name), ignore_errors=True)
            raise OSError(cause.errno, cause.strerror or str(cause), os.path.join(self.directory, str(int(step)))) from None

    def latest_step(self) -> int | None:
        """The newest saved step, or None when there is no checkpoint."""
        return self.manager.latest_step()

    def all_steps(self) -> list[int]:
        """Every saved step, as orbax lists them."""
        return list(self.manager.all_steps())

    def restore(self, like: Any, step: int | None = None) -> tuple[Any, dict, dict]:
        """Restore ``(state, config, metrics)``; ``like`` is a state of the same
        structure (e.g. a fresh ``train.init(key)``) giving shapes, dtypes and which
        leaves are PRNG keys."""
        step = self.latest_step() if step is None else step
        if step is None:
            raise FileNotFoundError(f"no checkpoint in {self.directory}")
        def spec(x):
            # a jax.Array restores with its own sharding: over several hosts each process
            # reads only its shards (and never fetches the others' values)
            if isinstance(x, jax.Array):
                return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=x.sharding)
            return np.zeros(np.shape(x), np.asarray(x).dtype)

        target = jax.tree.map(spec, _to_saveable(like))
        out = self.manager.restore(
            step,
            args=ocp.args.Composite(
                state=ocp.args.StandardRestore(target),
                config=ocp.args.JsonRestore(),
                metrics=ocp.args.JsonRestore(),
            ),
        )
        return _from_saveable(out.state, like), out.config, out.metrics

    def restore_newest(self, like: Any, move_aside: bool = True) -> tuple[Any, int, list[str]]:
        """The newest checkpoint that restores: ``(state, step, skipped)``.

        A checkpoint that does not restore (a truncated data file, a missing manifest,
        an empty ``_METADATA``: a run killed while saving, a full disk) is moved aside
        to ``<directory>.corrupt/<step>`` -- kept for inspection, out of the way of
        later saves, which would otherwise skip every step at or below it -- and the
        next older one is tried (``move_aside=False``: left where it is, for readers
        such as ``jaxagents eval``). ``skipped`` says what was moved and why. Raises
        ``FileNotFoundError`` when there is no checkpoint, ``ValueError`` naming every
        checkpoint and its error when none restores."""
        steps = sorted(self.all_steps(), reverse=True)
        if not steps:
            raise FileNotFoundError(f"no checkpoint in {self.directory}")
        failures = []
        for step in steps:
            try:
                with _stderr_of_failures():
                    state, _, _ = self.restore(like, step)
                    jax.block_until_ready(state)
            except Exception as e:  # orbax/tensorstore raise many kinds; each means "does not restore"
                failures.append((step, _bad_json(os.path.join(self.directory, str(step))) or _one_line(e)))
                continue
            if not move_aside:
                return state, step, [f"checkpoint {os.path.join(self.directory, str(s))} does not restore ({why}); skipped" for s, why in failures]
            skipped = [self._move_aside(s, why) for s, why in failures]
            if skipped:
                self.reload()
            return state, step, skipped
        detail = "; ".join(f"{os.path.join(self.directory, str(s))}: {why}" for s, why in failures)
        raise ValueError(f"no checkpoint of {self.directory} restores ({detail})")

    def delete(self, step: int) -> None:
        """Remove the checkpoint of ``step`` (every process calls this: orbax syncs them)."""
        self.manager.delete(int(step))

    def reload(self) -> None:
        """Read the directory again (after checkpoints were moved, e.g. by another
        process of a multi-host run)."""
        self.manager.close()
        self.manager = self._manager()

    def _move_aside(self, step: int, why: str) -> str:
        src = os.path.join(self.directory, str(step))
        dst_dir = self.directory + ".corrupt"
        os.makedirs(dst_dir, exist_ok=True)
        dst = os.path.join(dst_dir, str(step))
        if os.path.exists(dst):
            shutil.rmtree(dst)
        shutil.move(src, dst)
        return f"checkpoint {src} does not restore ({why}); moved to {dst}"

    def close(self) -> None:
        """Close the underlying orbax ``CheckpointManager``."""
        self.manager.close()


@contextlib.contextmanager
def _stderr_of_failures(settle_s: float = 0.3, max_wait_s: float = 3.0):
    """Hold back what is written to file descriptor 2 while a restore runs: when it
    fails, tensorstore's pending reads keep printing asyncio tracebacks ("Event loop
    is closed") for a moment after the error, which the caller reports in one line
    instead; when it succeeds, what was written is passed on."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no real fd 2 (some notebook kernels): nothing to hold back
        yield
        return
    with tempfile.TemporaryFile() as buf:
        os.dup2(buf.fileno(), 2)
        failed = False
        try:
            yield
        except BaseException:
            failed = True
            raise
        finally:
            if failed:  # wait until the late tracebacks have stopped coming
                size, still, t0 = -1, 0.0, time.monotonic()
                while still < settle_s and time.monotonic() - t0 < max_wait_s:
                    time.sleep(0.05)
                    now = os.fstat(buf.fileno()).st_size
                    still = still + 0.05 if now == size else 0.0
                    size = now
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            if not failed:
                buf.seek(0)
                text = buf.read()
                if text:
                    os.write(2, text)


def os_error(e: BaseException) -> OSError | None:
    """The ``OSError`` behind an exception (itself, or one in its chain of causes:
    orbax re-raises I/O errors as other types), or None. Tensorstore's errors carry
    the code in their text (``[os_error_code='28']``)."""
    import re

    seen, chain = set(), []
    while e is not None and id(e) not in seen:
        if isinstance(e, OSError) and e.errno is not None:
            return e
        seen.add(id(e))
        chain.append(e)
        e = e.__cause__ or e.__context__
    for e in chain:
        m = re.search(r"os_error_code='?(\d+)", str(e))
        if m:
            code = int(m.group(1))
            return OSError(code, os.strerror(code))
    return None


def _bad_json(step_dir: str) -> str | None:
    """The first JSON file of a checkpoint that does not parse, named (orbax's own
    error is a bare ``JSONDecodeError``)."""
    import json

    for root, _, files in sorted(os.walk(step_dir)):
        for name in sorted(files):
            if name in ("_METADATA", "_CHECKPOINT_METADATA", "metadata", "metrics", "_sharding"):
                path = os.path.join(root, name)
                try:
                    with open(path) as f:
                        json.load(f)
                except (OSError, ValueError) as e:
                    return f"{path} is not valid JSON ({'empty' if os.path.getsize(path) == 0 else e})"
    return None


def _one_line(e: BaseException, limit: int = 300) -> str:
    text = " ".join(str(e).split()) or type(e).__name__
    text = f"{type(e).__name__}: {text}"
    return text if len(text) <= limit else text[: limit - 3] + "..."

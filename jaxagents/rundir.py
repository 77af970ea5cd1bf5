"""Run directories: naming a new one, refusing to clobber an old one, laying one out.

A run directory holds ``config.yaml``, ``metrics.jsonl``, ``checkpoints/``,
``curve.png`` and ``results.json`` (populations add ``population.jsonl``,
``members.json``, ``hparams.png`` and ``lineage.png``). A new run never writes into
a directory that holds anything: ``--resume`` continues a run, ``--overwrite``
deletes one first (and only a run). With several processes only process 0 lays the
directory out (``primary``).
"""

from __future__ import annotations

import datetime
import os
import shutil

import jax
import yaml

from jaxagents import tracking

def default_run_dir(config: dict) -> str:
    """``runs/<learner>-<env>-<time>`` (``-2``, ``-3``... when that exists already)."""
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    env_id = config["env"]["id"].replace(":", "-").replace("/", "-")
    base = os.path.join("runs", f"{config['learner']}-{env_id}-{stamp}")
    path, i = base, 1
    while os.path.exists(path):
        i += 1
        path = f"{base}-{i}"
    return path


def is_run_dir(path: str) -> bool:
    return any(os.path.exists(os.path.join(path, f)) for f in ("config.yaml", "metrics.jsonl", "checkpoints"))


def writable_ancestor(path: str) -> str | None:
    """The nearest existing directory at or above ``path`` if it is not writable."""
    p = os.path.abspath(path)
    while not os.path.exists(p):
        p = os.path.dirname(p)
    return None if os.access(p, os.W_OK) else p


def check_new_run_dir(run_dir: str, overwrite: bool = False) -> None:
    """Raise unless a new run may be written to ``run_dir`` (nothing is written)."""
    if os.path.exists(run_dir) and not os.path.isdir(run_dir):
        raise ValueError(f"run directory {run_dir!r} is a file, not a directory: choose another --run-dir")
    if os.path.isdir(run_dir) and os.listdir(run_dir):
        if not overwrite:
            what = "holds a run" if is_run_dir(run_dir) else "is not empty"
            raise ValueError(
                f"run directory {run_dir!r} {what}: continue it with `jaxagents train --resume {run_dir}`, "
                f"choose another --run-dir, or pass --overwrite to delete it and start again"
            )
        if not is_run_dir(run_dir):
            raise ValueError(f"--overwrite deletes only a run directory (one with config.yaml); {run_dir!r} holds other files")
    bad = writable_ancestor(run_dir)
    if bad is not None:
        raise ValueError(f"cannot write run directory {run_dir!r}: {bad!r} is not writable")


def lay_out(run_dir: str, config: dict, overwrite: bool) -> None:
    """Create the run directory (emptied first with ``overwrite``) and its config.yaml."""
    try:
        if overwrite and os.path.isdir(run_dir):
            shutil.rmtree(run_dir)
        os.makedirs(run_dir, exist_ok=True)
        tracking.atomic_write(os.path.join(run_dir, "config.yaml"), yaml.safe_dump(config, sort_keys=False))
    except OSError as e:
        raise ValueError(f"cannot write run directory {run_dir!r}: {e.strerror or e}") from None


def primary() -> bool:
    """Whether this process writes the run's logs, tables and plots (process 0)."""
    return jax.process_index() == 0

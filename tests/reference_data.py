"""Recorded reference files (``tests/**/data/*.npz``): each stores the commit whose code
produced it, and the script that regenerates it refuses to run on any other code.

A reference recorded from today's code would compare the code with itself. So each
file names its source commit (key ``__commit__``), its script holds the same commit
(``COMMIT``), and ``require_checkout(COMMIT)`` stops the script unless the package it
imports -- ``jaxagents`` and the environments -- is a clean checkout of exactly that
commit. To regenerate, e.g. for another XLA build::

    git worktree add /tmp/ref COMMIT
    python3 -m venv /tmp/ref/.venv && /tmp/ref/.venv/bin/pip install -e /tmp/ref
    /tmp/ref/.venv/bin/python tests/<...>/<script>.py      # this checkout's script, that commit's code

(changing what a reference records means changing ``COMMIT`` on purpose, in the script
and the data together: the tests check that they agree).
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np

COMMIT_KEY = "__commit__"


def stored_commit(path: str) -> str | None:
    """The commit a reference file was recorded from (None: not recorded)."""
    with np.load(path) as f:
        return str(f[COMMIT_KEY]) if COMMIT_KEY in f.files else None


def arrays(path: str) -> dict:
    """The recorded arrays of a reference file, without its commit."""
    with np.load(path) as f:
        return {k: f[k] for k in f.files if k != COMMIT_KEY}


def _git(root: str, *args: str) -> str:
    return subprocess.run(["git", "-C", root, *args], capture_output=True, text=True, check=True).stdout.strip()


def require_checkout(commit: str) -> str:
    """The checkout the imported code comes from, if it is ``commit`` with no local
    changes; otherwise exit with one line saying how to regenerate."""
    import jaxagents

    root = os.path.dirname(os.path.dirname(os.path.abspath(jaxagents.__file__)))
    try:
        head = _git(root, "rev-parse", "HEAD")
        dirty = _git(root, "status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        head, dirty = None, ""
    if head is None or not head.startswith(commit) or dirty:
        what = "not a git checkout" if head is None else (f"at {head[:12]}" + (" with local changes" if dirty else ""))
        sys.exit(f"refusing to record: the imported jaxagents ({root}) is {what}; this reference comes from "
                 f"commit {commit[:12]}: run this script with that commit's package installed "
                 f"(see tests/reference_data.py)")
    return root


def require_modules_from(root: str) -> None:
    """Every loaded module of the project's packages comes from ``root`` (a package
    installed elsewhere, e.g. the environments of another checkout, would mix codes)."""
    mixed = sorted(
        name for name, m in list(sys.modules.items())
        if name.split(".")[0] in ("jaxagents", "jaxagents_environments", "environments")
        and getattr(m, "__file__", None) and not os.path.abspath(m.__file__).startswith(root + os.sep)
    )
    if mixed:
        sys.exit(f"refusing to record: modules {mixed[:3]} do not come from the checkout {root}")


def save(path: str, data: dict, commit: str, compressed: bool = True) -> None:
    """Write ``data`` and its source ``commit`` to ``path`` (through a temporary file)."""
    tmp = path + ".tmp.npz"
    (np.savez_compressed if compressed else np.savez)(tmp, **data, **{COMMIT_KEY: np.array(commit)})
    os.replace(tmp, path)

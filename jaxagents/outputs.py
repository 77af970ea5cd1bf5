"""Output paths checked before anything is computed: ``jaxagents bench``'s ``--json`` and
``--plot``, and every experiment script's output options (``check_outputs``), so a
typo in a path costs one line at once rather than a lost result at the end."""

from __future__ import annotations

import os
import sys


def _ancestors(path: str) -> list[str]:
    out, p = [], os.path.dirname(path)
    while p and p != os.path.dirname(p):
        out.append(p)
        p = os.path.dirname(p)
    return out


def check_writable(option: str, path: str | None) -> None:
    """A one-line ``ValueError`` naming ``option`` unless ``path`` can be written: its
    folder exists and is writable, and it is not a folder itself."""
    if path is None:
        return
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise ValueError(f"{option} {path}: is a folder, not a file")
    if os.path.isfile(folder) or any(os.path.isfile(a) for a in _ancestors(folder)):
        raise ValueError(f"{option} {path}: {next(a for a in [folder, *_ancestors(folder)] if os.path.isfile(a))} "
                       f"is a file, not a folder")
    if not os.path.isdir(folder):
        raise ValueError(f"{option} {path}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise ValueError(f"{option} {path}: not writable")


# argument names that experiment scripts use for files they write, and for folders
OUTPUT_FILES = ("out", "json", "plot", "figure", "fig", "table", "csv")
OUTPUT_DIRS = ("runs_dir", "out_dir")


def check_outputs(args, prog: str | None = None):
    """Check, before anything is computed, every output path of a script's parsed
    ``args`` (the options named in ``OUTPUT_FILES`` and ``OUTPUT_DIRS``): a file's
    folder exists and is writable and the file is not a folder; a folder is not a
    file and its nearest existing ancestor is writable. Exits with status 2 and one
    line naming the option otherwise; returns ``args``."""
    prog = prog or os.path.basename(sys.argv[0] or "script")
    try:
        for name in OUTPUT_FILES:
            value = getattr(args, name, None)
            if isinstance(value, str):
                check_writable("--" + name.replace("_", "-"), value)
        for name in OUTPUT_DIRS:
            value = getattr(args, name, None)
            if isinstance(value, str):
                option = "--" + name.replace("_", "-")
                if os.path.exists(value) and not os.path.isdir(value):
                    raise ValueError(f"{option} {value}: is a file, not a folder")
                p = os.path.abspath(value)
                while not os.path.exists(p):
                    p = os.path.dirname(p)
                if not os.path.isdir(p):
                    raise ValueError(f"{option} {value}: {p} is a file, not a folder")
                if not os.access(p, os.W_OK):
                    raise ValueError(f"{option} {value}: {p} is not writable")
    except ValueError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    return args

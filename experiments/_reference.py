"""Load a reference implementation's module from a file in a folder the user names
(``--jaxmarl-ref DIR``): by path, so no script edits ``sys.path``. The experiment
scripts import this file as a sibling (Python puts a script's own folder first on
the path)."""

from __future__ import annotations

import importlib.util
import os
import sys


def load(folder: str, module: str):
    """``folder/module.py`` imported as ``module`` (registered in ``sys.modules``, so a
    second call returns the same module). Exits with one line when the file is missing."""
    if module in sys.modules:
        return sys.modules[module]
    path = os.path.join(os.path.abspath(folder), module + ".py")
    if not os.path.isfile(path):
        raise SystemExit(f"reference module {module!r} not found: no {path}")
    spec = importlib.util.spec_from_file_location(module, path)
    sys.modules[module] = mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod

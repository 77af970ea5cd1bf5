"""Re-execute the notebooks in place, so that each is stored with its outputs (figures,
tables, printed results) and a reader sees them without running anything.

    python notebooks/execute.py                      # every notebook, at its full budget
    python notebooks/execute.py quickstart games     # some of them
    python notebooks/execute.py --small              # the test suite's budgets (JAXAGENTS_SMALL=1)

Each notebook runs top to bottom in a fresh kernel, in a scratch folder (the GIFs and
files it writes go there, not into the repository), on the CPU unless ``--device`` says
otherwise. A notebook is written back (atomically) only when every cell ran; a failing
cell leaves the stored notebook as it was and the command exits with status 1.
``--small`` outputs are for checking the command, not for committing: the stored
notebooks carry their full-budget outputs.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def notebooks() -> dict[str, Path]:
    return {p.stem: p for p in sorted(HERE.glob("*.ipynb"))}


def execute(path: Path, small: bool, device: str, timeout: int) -> float:
    """Run ``path`` and write it back with its outputs; returns the seconds it took."""
    import nbclient
    import nbformat

    nb = nbformat.read(path, as_version=4)
    env = {"JAXAGENTS_SMALL": "1" if small else "0", "JAX_PLATFORMS": device}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)  # the kernel inherits this process's environment
    t0 = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix=f"nb-{path.stem}-") as scratch:
            client = nbclient.NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=False,
                                             resources={"metadata": {"path": scratch}})
            client.execute()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    tmp = path.with_suffix(".ipynb.tmp")
    nbformat.write(nb, tmp)
    os.replace(tmp, path)
    return time.perf_counter() - t0


def main(argv=None) -> int:
    known = notebooks()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help=f"notebooks to run (default: all of {sorted(known)})")
    ap.add_argument("--small", action="store_true", help="the test suite's small budgets (JAXAGENTS_SMALL=1)")
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda", "tpu"), help="JAX_PLATFORMS (default cpu)")
    ap.add_argument("--timeout", type=int, default=3600, help="seconds a cell may take (default 3600)")
    a = ap.parse_args(argv)
    unknown = [n for n in a.names if n not in known]
    if unknown:
        ap.error(f"unknown notebooks {unknown}; notebooks: {sorted(known)}")
    if a.timeout < 1:
        ap.error("--timeout must be >= 1")
    failed = []
    for name in a.names or list(known):
        try:
            seconds = execute(known[name], a.small, a.device, a.timeout)
            print(f"{name:12s} ran in {seconds:6.0f} s, stored with its outputs", flush=True)
        except Exception as e:  # noqa: BLE001 -- report every notebook, then fail
            print(f"{name:12s} FAILED, left as it was: {type(e).__name__}: {str(e).splitlines()[-1] if str(e) else ''}",
                  flush=True)
            failed.append(name)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
